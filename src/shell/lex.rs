//! Lexing: the text split the way a POSIX shell splits it (quotes, escapes, `$(...)`,
//! backticks, heredocs, `;`/`&&`/`||`/`|`, subshells) into simple commands, each with its
//! words, its redirections and the frame (the top level, a subshell, a substitution) it
//! runs in. What the commands write is `super::analyse`'s.

use super::writes::Described;

/// How deep `$(...)`, backticks and subshells may nest.
const MAX_NESTING: usize = 64;

/// Why a command cannot be read: a quote or bracket that is not closed.
fn not_closed(what: &str) -> Described {
    Described::new("hook.unreadable.not_closed", what)
}

/// One word of a command.
#[derive(Debug, Clone, Default)]
pub(super) struct Word {
    /// The text with quotes removed and expansions left out.
    pub(super) text: String,
    /// No expansion, glob or `~` in it: the text is what the shell passes.
    pub(super) literal: bool,
    /// Where it is in the source, for `bash -c '...'`.
    pub(super) span: (usize, usize),
    /// As written in the source, for messages.
    pub(super) shown: String,
}

/// A redirection's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Redir {
    /// `>`, `>>`, `>|`, `&>`, `&>>`, `<>`.
    Write,
    /// `>&WORD`: a file unless WORD is a descriptor or `-`.
    WriteOrDup,
    /// `<`, `<&`, `<<<`: input.
    Read,
    /// `<<`, `<<-`: a heredoc, whose word is the delimiter.
    Heredoc { strip_tabs: bool },
}

/// A simple command: its words and redirections (each with its target word, `None` when
/// the text ends before one).
#[derive(Debug, Clone, Default)]
pub(super) struct Command {
    pub(super) words: Vec<Word>,
    pub(super) redirects: Vec<(Redir, Option<Word>)>,
    /// The frame it runs in (0: the top level).
    pub(super) frame: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    Top,
    /// `$(`, `<(`, `>(`: ends at `)`, back inside the outer word.
    Substitution,
    /// `` ` ``.
    Backtick,
    /// `(` at a command's start.
    Subshell,
}

struct Context {
    frame: Frame,
    /// This frame's number, the index of its parent in [`Lexer::parents`].
    id: usize,
    in_double: bool,
    command: Command,
    word: Option<Word>,
    pending: Option<Redir>,
}

impl Context {
    fn new(frame: Frame, id: usize) -> Context {
        Context {
            frame,
            id,
            in_double: false,
            command: Command::default(),
            word: None,
            pending: None,
        }
    }

    fn word(&mut self, at: usize) -> &mut Word {
        self.word.get_or_insert_with(|| Word {
            text: String::new(),
            literal: true,
            span: (at, at),
            shown: String::new(),
        })
    }
}

struct Lexer<'a> {
    src: &'a [u8],
    stack: Vec<Context>,
    commands: Vec<Command>,
    heredocs: Vec<(String, bool)>,
    /// The parent of each frame ever opened (the top level is its own).
    parents: Vec<usize>,
    /// Bytes of the word in progress, moved into the word's text at each boundary
    /// ([`Lexer::flush`]) so UTF-8 sequences stay whole.
    buf: Vec<u8>,
}

impl Lexer<'_> {
    fn top(&mut self) -> &mut Context {
        // The stack is never empty: the top frame is never popped.
        let last = self.stack.len() - 1;
        &mut self.stack[last]
    }

    fn end_word(&mut self, at: usize) {
        let src = self.src;
        let context = self.top();
        let Some(mut word) = context.word.take() else {
            return;
        };
        word.span.1 = at;
        word.shown =
            String::from_utf8_lossy(src.get(word.span.0..at).unwrap_or_default()).into_owned();
        match context.pending.take() {
            Some(Redir::Heredoc { strip_tabs }) => {
                self.heredocs.push((word.text.clone(), strip_tabs));
                let context = self.top();
                context
                    .command
                    .redirects
                    .push((Redir::Heredoc { strip_tabs }, Some(word)));
            }
            Some(redir) => context.command.redirects.push((redir, Some(word))),
            None => context.command.words.push(word),
        }
    }

    fn end_command(&mut self, at: usize) {
        self.end_word(at);
        let context = self.top();
        if let Some(redir) = context.pending.take() {
            context.command.redirects.push((redir, None));
        }
        let mut command = std::mem::take(&mut context.command);
        command.frame = context.id;
        if !command.words.is_empty() || !command.redirects.is_empty() {
            self.commands.push(command);
        }
    }

    fn push(&mut self, frame: Frame) -> Result<(), Described> {
        if self.stack.len() >= MAX_NESTING {
            return Err(Described::new(
                "hook.unreadable.too_deep",
                MAX_NESTING.to_string(),
            ));
        }
        let id = self.parents.len();
        let parent = self.top().id;
        self.parents.push(parent);
        self.stack.push(Context::new(frame, id));
        Ok(())
    }

    /// Ends the innermost frame; its words continue the outer word when it was a
    /// substitution.
    fn pop(&mut self, at: usize) {
        self.end_command(at);
        if self.stack.len() > 1 {
            let frame = self.top().frame;
            self.stack.pop();
            if matches!(frame, Frame::Substitution | Frame::Backtick) {
                self.top().word(at).literal = false;
            }
        }
    }

    /// After a newline: skips the bodies of the heredocs opened on the line.
    fn skip_heredocs(&mut self, mut i: usize) -> usize {
        for (delimiter, strip_tabs) in std::mem::take(&mut self.heredocs) {
            while i < self.src.len() {
                let end = self.src[i..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(self.src.len(), |p| i + p);
                let mut line = &self.src[i..end];
                if strip_tabs {
                    while let [b'\t', rest @ ..] = line {
                        line = rest;
                    }
                }
                i = (end + 1).min(self.src.len());
                if line == delimiter.as_bytes() {
                    break;
                }
            }
        }
        i
    }
}

/// Splits `src` into simple commands (those inside substitutions included); the error,
/// if the text is not a complete command.
pub(super) fn lex(src: &str) -> (Vec<Command>, Vec<usize>, Option<Described>) {
    let mut lx = Lexer {
        src: src.as_bytes(),
        stack: vec![Context::new(Frame::Top, 0)],
        commands: Vec::new(),
        heredocs: Vec::new(),
        parents: vec![0],
        buf: Vec::new(),
    };
    let error = lex_into(&mut lx).err();
    let error = error.or_else(|| {
        let context = lx.stack.last()?;
        if context.in_double {
            Some(not_closed("\""))
        } else if lx.stack.len() > 1 {
            Some(not_closed("$( ( `"))
        } else {
            None
        }
    });
    while lx.stack.len() > 1 {
        lx.pop(src.len());
    }
    lx.end_command(src.len());
    (lx.commands, lx.parents, error)
}

/// Reads the whole text into `lx`, one step at a time: inside double quotes, or outside
/// any quote.
fn lex_into(lx: &mut Lexer<'_>) -> Result<(), Described> {
    let mut i = 0;
    while i < lx.src.len() {
        i = if lx.top().in_double {
            lx.double_quoted(i)?
        } else {
            lx.unquoted(i)?
        };
    }
    lx.flush(i);
    Ok(())
}

impl Lexer<'_> {
    /// Moves the bytes gathered in `buf` into the text of the word in progress (one
    /// starting at `at` if there is none).
    fn flush(&mut self, at: usize) {
        if !self.buf.is_empty() {
            let text = String::from_utf8_lossy(&self.buf).into_owned();
            self.buf.clear();
            self.top().word(at).text.push_str(&text);
        }
    }

    /// One step inside double quotes, at byte `i`. Returns where to go on.
    fn double_quoted(&mut self, i: usize) -> Result<usize, Described> {
        let src = self.src;
        let b = src[i];
        match b {
            b'"' => {
                self.flush(i);
                self.top().in_double = false;
                Ok(i + 1)
            }
            b'\\' if i + 1 < src.len() && b"\"\\$`\n".contains(&src[i + 1]) => {
                if src[i + 1] != b'\n' {
                    self.buf.push(src[i + 1]);
                }
                Ok(i + 2)
            }
            b'$' | b'`' => {
                self.flush(i);
                dollar_or_backtick(self, i)
            }
            _ => {
                self.buf.push(b);
                Ok(i + 1)
            }
        }
    }

    /// One step outside any quote, at byte `i`. Returns where to go on.
    fn unquoted(&mut self, i: usize) -> Result<usize, Described> {
        let src = self.src;
        let b = src[i];
        match b {
            b' ' | b'\t' | b'\r' => {
                self.flush(i);
                self.end_word(i);
                Ok(i + 1)
            }
            b'\n' => {
                self.flush(i);
                self.end_command(i);
                Ok(self.skip_heredocs(i + 1))
            }
            b'#' if self.top().word.is_none() && self.buf.is_empty() => {
                let mut i = i;
                while i < src.len() && src[i] != b'\n' {
                    i += 1;
                }
                Ok(i)
            }
            b';' | b'|' => {
                self.flush(i);
                self.end_command(i);
                Ok(i + 1)
            }
            b'&' if src.get(i + 1) == Some(&b'>') => {
                self.flush(i);
                self.end_word(i);
                let append = src.get(i + 2) == Some(&b'>');
                self.top().pending = Some(Redir::Write);
                Ok(i + if append { 3 } else { 2 })
            }
            b'&' => {
                self.flush(i);
                self.end_command(i);
                Ok(i + 1)
            }
            b'(' => {
                self.flush(i);
                self.end_command(i);
                self.push(Frame::Subshell)?;
                Ok(i + 1)
            }
            b')' => {
                self.flush(i);
                if self.stack.len() > 1 && self.top().frame != Frame::Backtick {
                    self.pop(i);
                } else {
                    self.end_command(i);
                }
                Ok(i + 1)
            }
            b'`' | b'$' => {
                self.flush(i);
                dollar_or_backtick(self, i)
            }
            b'\'' => {
                let end = src[i + 1..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .ok_or_else(|| not_closed("'"))?;
                self.buf.extend_from_slice(&src[i + 1..i + 1 + end]);
                self.top().word(i);
                Ok(i + end + 2)
            }
            b'"' => {
                self.flush(i);
                self.top().word(i);
                self.top().in_double = true;
                Ok(i + 1)
            }
            b'\\' => {
                match src.get(i + 1) {
                    Some(b'\n') => {}
                    Some(&c) => {
                        self.top().word(i);
                        self.buf.push(c);
                    }
                    None => {}
                }
                Ok(i + 2)
            }
            b'>' | b'<' => self.redirection(i),
            b'*' | b'?' | b'[' => {
                self.top().word(i).literal = false;
                self.buf.push(b);
                Ok(i + 1)
            }
            b'~' if self.top().word.is_none() && self.buf.is_empty() => {
                self.top().word(i).literal = false;
                self.buf.push(b);
                Ok(i + 1)
            }
            _ => {
                self.top().word(i);
                self.buf.push(b);
                Ok(i + 1)
            }
        }
    }

    /// At a `>` or `<` (byte `i`) outside quotes: a redirection, or a process
    /// substitution. Returns where to go on.
    fn redirection(&mut self, i: usize) -> Result<usize, Described> {
        let src = self.src;
        let b = src[i];
        // A word of digits just before is the descriptor, not an argument.
        let fd = !self.buf.is_empty()
            && self.buf.iter().all(u8::is_ascii_digit)
            && self
                .top()
                .word
                .as_ref()
                .is_some_and(|w| w.literal && w.text.is_empty());
        if fd {
            self.buf.clear();
            self.top().word = None;
        } else {
            self.flush(i);
            self.end_word(i);
        }
        let next = src.get(i + 1).copied();
        let (redir, len) = match (b, next, src.get(i + 2).copied()) {
            (b'>', Some(b'('), _) | (b'<', Some(b'('), _) => {
                // Process substitution: a command whose output is a word.
                self.top().word(i).literal = false;
                self.push(Frame::Substitution)?;
                return Ok(i + 2);
            }
            (b'>', Some(b'>'), _) | (b'>', Some(b'|'), _) => (Redir::Write, 2),
            (b'>', Some(b'&'), _) => (Redir::WriteOrDup, 2),
            (b'>', _, _) => (Redir::Write, 1),
            (b'<', Some(b'<'), Some(b'<')) => (Redir::Read, 3),
            (b'<', Some(b'<'), Some(b'-')) => (Redir::Heredoc { strip_tabs: true }, 3),
            (b'<', Some(b'<'), _) => (Redir::Heredoc { strip_tabs: false }, 2),
            (b'<', Some(b'>'), _) => (Redir::Write, 2),
            _ => (Redir::Read, if next == Some(b'&') { 2 } else { 1 }),
        };
        let context = self.top();
        if let Some(previous) = context.pending.replace(redir) {
            context.command.redirects.push((previous, None));
        }
        Ok(i + len)
    }
}

/// At a `$` or a backtick: an expansion (not literal), or the start or end of a nested
/// command. Returns where to go on.
fn dollar_or_backtick(lx: &mut Lexer<'_>, i: usize) -> Result<usize, Described> {
    let src = lx.src;
    if src[i] == b'`' {
        if lx.top().frame == Frame::Backtick {
            lx.pop(i);
        } else {
            lx.top().word(i).literal = false;
            lx.push(Frame::Backtick)?;
        }
        return Ok(i + 1);
    }
    lx.top().word(i).literal = false;
    match src.get(i + 1) {
        Some(b'(') if src.get(i + 2) == Some(&b'(') => {
            // Arithmetic: skip to the closing `))`.
            let end = src[i + 3..]
                .windows(2)
                .position(|w| w == b"))")
                .ok_or_else(|| not_closed("$(("))?;
            Ok(i + 3 + end + 2)
        }
        Some(b'(') => {
            lx.push(Frame::Substitution)?;
            Ok(i + 2)
        }
        Some(b'{') => {
            let end = src[i + 2..]
                .iter()
                .position(|&c| c == b'}')
                .ok_or_else(|| not_closed("${"))?;
            Ok(i + 2 + end + 1)
        }
        Some(b'\'') => {
            // ANSI-C quoting: its text, escapes left as they are.
            let mut j = i + 2;
            while j < src.len() && src[j] != b'\'' {
                j += if src[j] == b'\\' { 2 } else { 1 };
            }
            if j >= src.len() {
                return Err(not_closed("$'"));
            }
            Ok(j + 1)
        }
        Some(c) if c.is_ascii_alphanumeric() || *c == b'_' => {
            let mut j = i + 1;
            while j < src.len() && (src[j].is_ascii_alphanumeric() || src[j] == b'_') {
                j += 1;
            }
            Ok(j)
        }
        Some(b'@' | b'*' | b'#' | b'?' | b'-' | b'$' | b'!') => Ok(i + 2),
        _ => Ok(i + 1),
    }
}
