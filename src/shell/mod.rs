//! What a shell command plainly writes, for the hook on Claude Code's `Bash` tool and
//! Codex's shell tool (which Codex also names `Bash` in hook input). Pure: text in, data
//! out, and host-neutral (it uses no other module), so the clients' hook scans with it and
//! the server's write rule (`server::write_rule`) judges and words what it found.
//!
//! This is an earlier, friendlier refusal, not the guarantee: the server compares the
//! working tree at every submission whatever wrote to it (`server::worktree`). The scanner
//! reads the command the way a POSIX shell splits it (quotes, escapes, `$(...)`,
//! backticks, heredocs, `;`/`&&`/`||`/`|`, subshells, `cd`) and reports:
//!
//! - the files written by output redirections (`>`, `>>`, `>|`, `&>`, `<>`, `>&FILE`;
//!   `/dev/null`, `/dev/stdout`, `/dev/stderr`, `/dev/tty` and `/dev/fd/N` are not files),
//!   `tee`, `sed -i`, `perl -i`, `mv`, `cp`/`install`/`ln`/`rsync` (their destination),
//!   `rm`, `rmdir`, `touch`, `mkdir`, `truncate`, `chmod`/`chown`/`chgrp`, `shred`,
//!   `unlink`, `dd of=`, `curl -o`, `wget -O`, `find -fprint`, and `git checkout -- FILES`
//!   / `git restore FILES`;
//! - writes whose files it cannot name: a target with `$VAR`, a glob or `~`, `git` with
//!   any subcommand that is not read-only (commit, switch, reset, stash, config, add, ...),
//!   `find -delete`, `patch`, `tar -x`, `unzip`, a writer run by `xargs` or `find -exec`;
//! - writes of files the program chooses (`cargo fmt`, `black`, `ruff format`, `prettier
//!   --write`, `gofmt -w`, `eslint --fix`, `go generate`, ...; not their `--check` forms);
//! - a command it cannot read (an unterminated quote, longer than [`MAX_COMMAND_BYTES`],
//!   nested `bash -c` deeper than [`MAX_DEPTH`]).
//!
//! Everything else passes: `cat`, `grep`, `ls`, `git status`/`diff`/`log`, builds and test
//! runs (their output is theirs to write), and scripts (`python -c`, `node -e`), which no
//! scanner can judge. One pass over the text, so the cost is linear in its length.

/// Longer commands are not scanned: judged as unreadable instead.
pub const MAX_COMMAND_BYTES: usize = 256 * 1024;
/// How deep `bash -c '...'` and `eval` are followed.
pub const MAX_DEPTH: usize = 3;
/// How deep `$(...)`, backticks and subshells may nest.
const MAX_NESTING: usize = 64;

/// What a command writes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// Files (or, for `mkdir`, directories) the command writes, as written in it:
    /// relative to the client's working directory, or absolute.
    pub writes: Vec<Write>,
    /// Writes whose files cannot be named, each described.
    pub opaque: Vec<Described>,
    /// Writes of files the program chooses itself (a formatter or a fixer over the
    /// project, a code generator), each described: refused where no write is allowed,
    /// left to the check of the tree during implementation.
    pub broad: Vec<Described>,
    /// Why the command could not be read, if it could not.
    pub unparsed: Option<Described>,
}

impl Scan {
    /// Whether the command writes nothing the scanner can see, and was read whole.
    pub fn is_read_only(&self) -> bool {
        self.writes.is_empty()
            && self.opaque.is_empty()
            && self.broad.is_empty()
            && self.unparsed.is_none()
    }
}

/// A write the scanner describes rather than names: which kind (the key of the contract's
/// message that words it, [`DESCRIPTIONS`]) and the words of the command it is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Described {
    pub key: &'static str,
    pub what: String,
}

impl Described {
    fn new(key: &'static str, what: impl Into<String>) -> Described {
        Described {
            key,
            what: what.into(),
        }
    }

    /// The English wording (`{what}` to fill in), for a checkpoint written without the
    /// contract's.
    pub fn english(&self) -> &'static str {
        DESCRIPTIONS
            .iter()
            .find(|(k, _)| *k == self.key)
            .map_or("{what}", |(_, text)| text)
    }
}

impl std::fmt::Display for Described {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.english().replace("{what}", &self.what))
    }
}

/// Every kind of described write, with its English wording: the contract's messages of
/// these keys word them in the session's locale.
pub const DESCRIPTIONS: [(&str, &str); 14] = [
    (
        "hook.writes.run_by_other",
        "`{what}` run by another command, on files it chooses",
    ),
    (
        "hook.writes.from_input",
        "`{what}` writes files its input names",
    ),
    (
        "hook.writes.archive",
        "`{what}` writes the files of the archive",
    ),
    (
        "hook.writes.find_delete",
        "`{what}` removes the files it finds",
    ),
    (
        "hook.writes.other_repository",
        "`{what}` with --git-dir or --work-tree reaches another repository",
    ),
    (
        "hook.writes.git",
        "`{what}` changes the repository or the working tree (branches, commits, the index and the configuration are the server's)",
    ),
    (
        "hook.writes.unnamed",
        "`{what}`: the hook cannot tell which file that is",
    ),
    (
        "hook.writes.after_cd",
        "`{what}` after a `cd` the hook cannot follow",
    ),
    (
        "hook.writes.formatter",
        "`{what}` rewrites the files it chooses",
    ),
    // Why a command could not be read.
    (
        "hook.unreadable.too_long",
        "the command takes {what} bytes, more than the hook reads",
    ),
    (
        "hook.unreadable.too_deep",
        "the command nests deeper than {what} levels",
    ),
    (
        "hook.unreadable.shells_too_deep",
        "shells nested deeper than {what} levels are not read",
    ),
    ("hook.unreadable.no_target", "`{what}` has no target"),
    ("hook.unreadable.not_closed", "`{what}` is not closed"),
];

/// Why a command cannot be read: a quote or bracket that is not closed.
fn not_closed(what: &str) -> Described {
    Described::new("hook.unreadable.not_closed", what)
}

/// One path a command writes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Write {
    pub path: String,
    pub kind: WriteKind,
}

/// How a command writes a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum WriteKind {
    File,
    /// A directory it creates (`mkdir`): allowed where an explored file lies under it.
    Dir,
    /// Brought back to its content in HEAD (`git checkout [HEAD] -- FILES`, `git restore
    /// FILES`): allowed where the session's accepted tree has nothing uncommitted there,
    /// so that nothing git cannot bring back is lost.
    FromHead,
    /// Removed (`rm`, `rmdir`, `unlink`): a write of the path, unless the hook finds it
    /// new ([`WriteKind::RemoveNew`]).
    Remove,
    /// A removal of a path HEAD does not hold, which the hook set from a [`WriteKind::Remove`]
    /// after looking at HEAD: with nothing of the accepted tree there, it is what appeared
    /// since the server last accepted the tree (a test run's cache), and removing it brings
    /// the tree back, as the server's refusals ask.
    RemoveNew,
}

/// Scans one command line (or script).
pub fn scan(command: &str) -> Scan {
    let mut out = Scan::default();
    if command.len() > MAX_COMMAND_BYTES {
        out.unparsed = Some(Described::new(
            "hook.unreadable.too_long",
            command.len().to_string(),
        ));
        return out;
    }
    let mut cwd = Some(String::new());
    scan_into(command, 0, &mut cwd, &mut out);
    let mut seen = std::collections::BTreeSet::new();
    out.writes.retain(|w| seen.insert(w.clone()));
    let mut seen = std::collections::BTreeSet::new();
    out.opaque.retain(|o| seen.insert(o.clone()));
    out
}

fn scan_into(src: &str, depth: usize, cwd: &mut Option<String>, out: &mut Scan) {
    let (commands, parents, error) = lex(src);
    if let Some(error) = error {
        out.unparsed.get_or_insert(error);
    }
    // Each frame (the top level, a subshell, a substitution) has its own working
    // directory, taken from its parent's when its first command runs: a `cd` inside
    // `( ... )` does not move the commands after it.
    let mut cwds: Vec<Option<Option<String>>> = vec![None; parents.len()];
    cwds[0] = Some(cwd.clone());
    for command in &commands {
        let mut chain = vec![command.frame];
        while let Some(&frame) = chain.last() {
            if cwds[frame].is_some() || frame == 0 {
                break;
            }
            chain.push(parents[frame]);
        }
        while let Some(frame) = chain.pop() {
            if cwds[frame].is_none() {
                cwds[frame] = cwds[parents[frame]].clone();
            }
        }
        let mut here = cwds[command.frame].clone().unwrap_or(None);
        analyse(src, command, depth, &mut here, out, false);
        cwds[command.frame] = Some(here);
    }
    if let Some(top) = cwds[0].take() {
        *cwd = top;
    }
}

// ---------------------------------------------------------------------------------------
// Lexing: words, redirections and simple commands.

#[derive(Debug, Clone, Default)]
struct Word {
    /// The text with quotes removed and expansions left out.
    text: String,
    /// No expansion, glob or `~` in it: the text is what the shell passes.
    literal: bool,
    /// Where it is in the source, for `bash -c '...'`.
    span: (usize, usize),
    /// As written in the source, for messages.
    shown: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Redir {
    /// `>`, `>>`, `>|`, `&>`, `&>>`, `<>`.
    Write,
    /// `>&WORD`: a file unless WORD is a descriptor or `-`.
    WriteOrDup,
    /// `<`, `<&`, `<<<`: input.
    Read,
    /// `<<`, `<<-`: a heredoc, whose word is the delimiter.
    Heredoc { strip_tabs: bool },
}

#[derive(Debug, Clone, Default)]
struct Command {
    words: Vec<Word>,
    redirects: Vec<(Redir, Option<Word>)>,
    /// The frame it runs in (0: the top level).
    frame: usize,
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
fn lex(src: &str) -> (Vec<Command>, Vec<usize>, Option<Described>) {
    let mut lx = Lexer {
        src: src.as_bytes(),
        stack: vec![Context::new(Frame::Top, 0)],
        commands: Vec::new(),
        heredocs: Vec::new(),
        parents: vec![0],
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

fn lex_into(lx: &mut Lexer<'_>) -> Result<(), Described> {
    let src = lx.src;
    let mut i = 0;
    let mut buf: Vec<u8> = Vec::new();
    // Bytes of the word in progress are gathered in `buf` and moved into the word's
    // text at each boundary, so UTF-8 sequences stay whole.
    macro_rules! flush {
        () => {
            if !buf.is_empty() {
                let text = String::from_utf8_lossy(&buf).into_owned();
                buf.clear();
                lx.top().word(i).text.push_str(&text);
            }
        };
    }
    while i < src.len() {
        let b = src[i];
        let in_double = lx.top().in_double;
        if in_double {
            match b {
                b'"' => {
                    flush!();
                    lx.top().in_double = false;
                    i += 1;
                }
                b'\\' if i + 1 < src.len() && b"\"\\$`\n".contains(&src[i + 1]) => {
                    if src[i + 1] != b'\n' {
                        buf.push(src[i + 1]);
                    }
                    i += 2;
                }
                b'$' | b'`' => {
                    flush!();
                    i = dollar_or_backtick(lx, i)?;
                }
                _ => {
                    buf.push(b);
                    i += 1;
                }
            }
            continue;
        }
        match b {
            b' ' | b'\t' | b'\r' => {
                flush!();
                lx.end_word(i);
                i += 1;
            }
            b'\n' => {
                flush!();
                lx.end_command(i);
                i = lx.skip_heredocs(i + 1);
            }
            b'#' if lx.top().word.is_none() && buf.is_empty() => {
                while i < src.len() && src[i] != b'\n' {
                    i += 1;
                }
            }
            b';' | b'|' => {
                flush!();
                lx.end_command(i);
                i += 1;
            }
            b'&' if src.get(i + 1) == Some(&b'>') => {
                flush!();
                lx.end_word(i);
                let append = src.get(i + 2) == Some(&b'>');
                lx.top().pending = Some(Redir::Write);
                i += if append { 3 } else { 2 };
            }
            b'&' => {
                flush!();
                lx.end_command(i);
                i += 1;
            }
            b'(' => {
                flush!();
                lx.end_command(i);
                lx.push(Frame::Subshell)?;
                i += 1;
            }
            b')' => {
                flush!();
                if lx.stack.len() > 1 && lx.top().frame != Frame::Backtick {
                    lx.pop(i);
                } else {
                    lx.end_command(i);
                }
                i += 1;
            }
            b'`' | b'$' => {
                flush!();
                i = dollar_or_backtick(lx, i)?;
            }
            b'\'' => {
                let end = src[i + 1..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .ok_or_else(|| not_closed("'"))?;
                buf.extend_from_slice(&src[i + 1..i + 1 + end]);
                lx.top().word(i);
                i += end + 2;
            }
            b'"' => {
                flush!();
                lx.top().word(i);
                lx.top().in_double = true;
                i += 1;
            }
            b'\\' => {
                match src.get(i + 1) {
                    Some(b'\n') => {}
                    Some(&c) => {
                        lx.top().word(i);
                        buf.push(c);
                    }
                    None => {}
                }
                i += 2;
            }
            b'>' | b'<' => {
                // A word of digits just before is the descriptor, not an argument.
                let fd = !buf.is_empty()
                    && buf.iter().all(u8::is_ascii_digit)
                    && lx
                        .top()
                        .word
                        .as_ref()
                        .is_some_and(|w| w.literal && w.text.is_empty());
                if fd {
                    buf.clear();
                    lx.top().word = None;
                } else {
                    flush!();
                    lx.end_word(i);
                }
                let next = src.get(i + 1).copied();
                let (redir, len) = match (b, next, src.get(i + 2).copied()) {
                    (b'>', Some(b'('), _) | (b'<', Some(b'('), _) => {
                        // Process substitution: a command whose output is a word.
                        lx.top().word(i).literal = false;
                        lx.push(Frame::Substitution)?;
                        i += 2;
                        continue;
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
                let context = lx.top();
                if let Some(previous) = context.pending.replace(redir) {
                    context.command.redirects.push((previous, None));
                }
                i += len;
            }
            b'*' | b'?' | b'[' => {
                lx.top().word(i).literal = false;
                buf.push(b);
                i += 1;
            }
            b'~' if lx.top().word.is_none() && buf.is_empty() => {
                lx.top().word(i).literal = false;
                buf.push(b);
                i += 1;
            }
            _ => {
                lx.top().word(i);
                buf.push(b);
                i += 1;
            }
        }
    }
    flush!();
    Ok(())
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

// ---------------------------------------------------------------------------------------
// What each simple command writes.

/// Words that start a command without being it.
const KEYWORDS: &[&str] = &[
    "!", "{", "}", "then", "do", "else", "elif", "if", "while", "until", "fi", "done", "esac",
    "time",
];
/// Commands that run the rest of their words as a command (after their own options).
const WRAPPERS: &[&str] = &[
    "sudo", "doas", "env", "nice", "nohup", "command", "builtin", "exec", "stdbuf", "ionice",
    "chronic", "timeout", "unbuffer", "npx", "bunx", "pnpx",
];
/// Git subcommands that only read.
const GIT_READ: &[&str] = &[
    "status",
    "diff",
    "log",
    "show",
    "blame",
    "annotate",
    "grep",
    "ls-files",
    "ls-tree",
    "ls-remote",
    "rev-parse",
    "rev-list",
    "describe",
    "shortlog",
    "cat-file",
    "help",
    "version",
    "merge-base",
    "name-rev",
    "for-each-ref",
    "show-ref",
    "var",
    "check-ignore",
    "check-attr",
    "count-objects",
    "diff-tree",
    "diff-files",
    "diff-index",
    "range-diff",
    "whatchanged",
    "cherry",
    "show-branch",
    "--version",
    "--help",
    "-h",
];

fn analyse(
    src: &str,
    command: &Command,
    depth: usize,
    cwd: &mut Option<String>,
    out: &mut Scan,
    run_by_other: bool,
) {
    for (redir, target) in &command.redirects {
        let Some(target) = target else {
            out.unparsed
                .get_or_insert_with(|| Described::new("hook.unreadable.no_target", ">"));
            continue;
        };
        match redir {
            Redir::Read | Redir::Heredoc { .. } => {}
            Redir::WriteOrDup
                if target.text == "-" || target.text.bytes().all(|b| b.is_ascii_digit()) => {}
            Redir::Write | Redir::WriteOrDup => {
                if target.literal && not_a_file(&target.text) {
                    continue;
                }
                write(
                    out,
                    cwd,
                    target,
                    WriteKind::File,
                    &format!("> {}", target.shown),
                );
            }
        }
    }
    let words = &command.words;
    let mut start = 0;
    while start < words.len() {
        let w = &words[start].text;
        if KEYWORDS.contains(&w.as_str()) || is_assignment(w) {
            start += 1;
        } else {
            break;
        }
    }
    let Some(first) = words.get(start) else {
        return;
    };
    let name = first.text.rsplit('/').next().unwrap_or_default();
    let args = &words[start + 1..];
    if !first.literal {
        return;
    }
    if matches!(name, "for" | "case" | "select" | "function") {
        return;
    }
    if WRAPPERS.contains(&name) || name == "xargs" {
        let rest = skip_wrapper_options(name, args);
        let inner = Command {
            words: rest.to_vec(),
            ..Command::default()
        };
        analyse(
            src,
            &inner,
            depth,
            cwd,
            out,
            run_by_other || name == "xargs",
        );
        return;
    }
    // A writer whose arguments another command supplies writes files nobody can name.
    let opaque_if_other = |out: &mut Scan, what: &str| {
        out.opaque
            .push(Described::new("hook.writes.run_by_other", what));
    };
    let writes_operands = |out: &mut Scan, cwd: &Option<String>, ops: &[&Word], kind: WriteKind| {
        if run_by_other {
            opaque_if_other(out, name);
            return;
        }
        for w in ops {
            write(out, cwd, w, kind, &format!("{name} {}", w.shown));
        }
    };
    match name {
        "cd" | "pushd" => {
            let ops = operands(args, &[]);
            *cwd = match (ops.first(), cwd.as_ref()) {
                (Some(dir), Some(current)) if dir.literal && dir.text != "-" => {
                    Some(join(current, &dir.text))
                }
                _ => None,
            };
        }
        "popd" => *cwd = None,
        "tee" => writes_operands(out, cwd, &operands(args, &[]), WriteKind::File),
        "rm" | "rmdir" | "unlink" => {
            writes_operands(out, cwd, &operands(args, &[]), WriteKind::Remove)
        }
        "touch" => writes_operands(
            out,
            cwd,
            &operands(args, &["-d", "-t", "-r"]),
            WriteKind::File,
        ),
        "shred" => writes_operands(
            out,
            cwd,
            &operands(args, &["-n", "-s", "--size"]),
            WriteKind::File,
        ),
        "mkdir" => writes_operands(out, cwd, &operands(args, &["-m", "--mode"]), WriteKind::Dir),
        "truncate" => writes_operands(
            out,
            cwd,
            &operands(args, &["-s", "--size", "-r", "--reference"]),
            WriteKind::File,
        ),
        "chmod" | "chown" | "chgrp" => {
            let ops = operands(args, &["--reference"]);
            writes_operands(out, cwd, ops.get(1..).unwrap_or_default(), WriteKind::File);
        }
        "mv" => {
            let ops = operands(args, &["-t", "--target-directory", "-S", "--suffix"]);
            writes_operands(out, cwd, &ops, WriteKind::File);
            for target in option_values(args, &["-t", "--target-directory"]) {
                write(
                    out,
                    cwd,
                    target,
                    WriteKind::File,
                    &format!("mv -t {}", target.shown),
                );
            }
        }
        "cp" | "install" | "ln" | "rsync" => {
            let targets = option_values(args, &["-t", "--target-directory"]);
            let ops = operands(
                args,
                &[
                    "-t",
                    "--target-directory",
                    "-S",
                    "--suffix",
                    "-m",
                    "--mode",
                    "-o",
                    "-g",
                    "-e",
                ],
            );
            if run_by_other {
                opaque_if_other(out, name);
            } else if !targets.is_empty() {
                for target in targets {
                    write(
                        out,
                        cwd,
                        target,
                        WriteKind::File,
                        &format!("{name} -t {}", target.shown),
                    );
                }
            } else if name == "ln" && ops.len() == 1 {
                // `ln -s TARGET` links TARGET's name in the current directory.
                let base = ops[0]
                    .text
                    .rsplit('/')
                    .next()
                    .unwrap_or_default()
                    .to_string();
                let word = Word {
                    text: base,
                    literal: ops[0].literal,
                    span: ops[0].span,
                    shown: ops[0].shown.clone(),
                };
                write(out, cwd, &word, WriteKind::File, "ln");
            } else if let Some(last) = ops.last().filter(|_| ops.len() > 1)
                && !(name == "rsync" && last.text.contains(':'))
            {
                write(
                    out,
                    cwd,
                    last,
                    WriteKind::File,
                    &format!("{name} … {}", last.shown),
                );
            }
        }
        "sed" | "perl" => {
            // `-i`, `-i.bak`, `-pi`, `--in-place`: the letters of a short option cluster,
            // where perl's `-M`, `-m`, `-I`, `-V` and `-x` take the rest as their value.
            let in_place = args.iter().any(|a| {
                let t = &a.text;
                let cluster: String = t
                    .strip_prefix('-')
                    .filter(|rest| !rest.starts_with('-'))
                    .map(|rest| rest.chars().take_while(char::is_ascii_alphabetic).collect())
                    .unwrap_or_default();
                t.starts_with("--in-place")
                    || (cluster.contains('i')
                        && !(name == "perl" && cluster.starts_with(['M', 'm', 'I', 'V', 'x'])))
            });
            if in_place {
                let (with_value, script_option): (&[&str], &[&str]) = if name == "sed" {
                    (
                        &["-e", "--expression", "-f", "--file", "-l", "--line-length"],
                        &["-e", "--expression", "-f", "--file"],
                    )
                } else {
                    (&["-e", "-E", "-M", "-m", "-I"], &["-e", "-E"])
                };
                let ops = operands(args, with_value);
                let has_script = args.iter().any(|a| {
                    script_option.iter().any(|o| {
                        a.text == *o
                            || (a.text.starts_with(o)
                                && a.text.len() > o.len()
                                && !o.starts_with("--"))
                            || a.text.starts_with(&format!("{o}="))
                    }) || (name == "perl"
                        && a.text.starts_with('-')
                        && !a.text.starts_with("--")
                        && a.text.contains('e'))
                });
                let files = if has_script {
                    &ops[..]
                } else {
                    ops.get(1..).unwrap_or_default()
                };
                writes_operands(out, cwd, files, WriteKind::File);
            }
        }
        "dd" => {
            for a in args {
                if let Some(path) = a.text.strip_prefix("of=") {
                    let word = Word {
                        text: path.to_string(),
                        literal: a.literal,
                        span: a.span,
                        shown: a.shown.clone(),
                    };
                    write(out, cwd, &word, WriteKind::File, "dd of=");
                }
            }
        }
        "curl" | "wget" => {
            let flags: &[&str] = if name == "curl" {
                &["-o", "--output"]
            } else {
                &["-O", "--output-document"]
            };
            for target in option_values(args, flags) {
                if !(target.literal && not_a_file(&target.text)) {
                    write(
                        out,
                        cwd,
                        target,
                        WriteKind::File,
                        &format!("{name} {}", target.shown),
                    );
                }
            }
        }
        "patch" | "unzip" => out
            .opaque
            .push(Described::new("hook.writes.from_input", name)),
        "sponge" => writes_operands(out, cwd, &operands(args, &[]), WriteKind::File),
        "awk" | "gawk" => {
            // gawk's `-i inplace` rewrites the files it reads.
            let in_place = args
                .windows(2)
                .any(|w| w[0].text == "-i" && w[1].text == "inplace")
                || args.iter().any(|a| a.text == "--include=inplace");
            if in_place {
                let ops = operands(
                    args,
                    &["-i", "--include", "-f", "--file", "-v", "--assign", "-F"],
                );
                let has_program_file = args.iter().any(|a| a.text == "-f" || a.text == "--file");
                let files = if has_program_file {
                    &ops[..]
                } else {
                    ops.get(1..).unwrap_or_default()
                };
                writes_operands(out, cwd, files, WriteKind::File);
            }
        }
        _ if formats_in_place(name, args) => out.broad.push(Described::new(
            "hook.writes.formatter",
            command.words[start..]
                .iter()
                .take(3)
                .map(|w| w.shown.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        )),
        "tar" => {
            // `--extract`, `-x...`, or the old style `tar xzf` (a first word of letters).
            let letters = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_alphabetic());
            let extract = args.iter().enumerate().any(|(n, a)| {
                let t = a.text.as_str();
                t == "--extract"
                    || t == "--get"
                    || t.strip_prefix('-')
                        .is_some_and(|rest| letters(rest) && rest.contains('x'))
                    || (n == 0 && letters(t) && t.contains('x'))
            });
            if extract {
                out.opaque
                    .push(Described::new("hook.writes.archive", "tar -x"));
            }
        }
        "find" => find(src, args, depth, cwd, out),
        "git" => git(args, cwd, out),
        "bash" | "sh" | "zsh" | "dash" | "ksh" | "eval" => {
            let script = if name == "eval" {
                Some(
                    args.iter()
                        .map(|a| raw(src, a))
                        .collect::<Vec<_>>()
                        .join(" "),
                )
            } else {
                args.iter()
                    .position(|a| {
                        a.text.starts_with('-') && !a.text.starts_with("--") && a.text.contains('c')
                    })
                    .and_then(|p| args.get(p + 1))
                    .map(|a| raw(src, a))
            };
            if let Some(script) = script {
                if depth + 1 > MAX_DEPTH {
                    out.unparsed.get_or_insert_with(|| {
                        Described::new("hook.unreadable.shells_too_deep", MAX_DEPTH.to_string())
                    });
                } else {
                    let mut inner_cwd = cwd.clone();
                    scan_into(&script, depth + 1, &mut inner_cwd, out);
                }
            }
        }
        _ => {}
    }
}

/// Formatters and fixers that rewrite source files in place (unless asked only to check).
fn formats_in_place(name: &str, args: &[Word]) -> bool {
    let has = |flags: &[&str]| {
        args.iter().any(|a| {
            flags
                .iter()
                .any(|f| a.text == *f || a.text.starts_with(&format!("{f}=")))
        })
    };
    let sub = args
        .iter()
        .find(|a| !a.text.starts_with('-'))
        .map(|a| a.text.as_str());
    match name {
        "cargo" => match sub {
            Some("fmt") => !has(&["--check"]),
            Some("fix") => true,
            Some("clippy") => has(&["--fix"]),
            _ => false,
        },
        "rustfmt" => !has(&["--check"]) && args.iter().any(|a| !a.text.starts_with('-')),
        "black" | "isort" | "autoflake" | "pyupgrade" => {
            !has(&["--check", "--check-only", "--diff", "-c"])
                && args.iter().any(|a| !a.text.starts_with('-'))
        }
        "ruff" => match sub {
            Some("format") => !has(&["--check", "--diff"]),
            _ => has(&["--fix"]),
        },
        "prettier" => has(&["--write", "-w"]),
        "eslint" | "stylelint" => has(&["--fix"]),
        "gofmt" | "goimports" | "shfmt" => has(&["-w"]),
        "go" => matches!(sub, Some("fmt" | "generate" | "fix")),
        "autopep8" | "clang-format" => has(&["-i", "--in-place"]),
        "terraform" => sub == Some("fmt") && !has(&["-check"]),
        _ => false,
    }
}

/// A word as the inner shell of `bash -c WORD` sees it: the source text inside its
/// quotes when the whole word is one quoted string, else its text.
fn raw(src: &str, word: &Word) -> String {
    let text = src.get(word.span.0..word.span.1).unwrap_or_default();
    let quoted = |q: char| {
        text.len() >= 2
            && text.starts_with(q)
            && text.ends_with(q)
            && !text[1..text.len() - 1].contains(q)
    };
    if quoted('\'') || quoted('"') {
        text[1..text.len() - 1].to_string()
    } else {
        word.text.clone()
    }
}

fn find(src: &str, args: &[Word], depth: usize, cwd: &mut Option<String>, out: &mut Scan) {
    let mut i = 0;
    while i < args.len() {
        match args[i].text.as_str() {
            "-delete" => out
                .opaque
                .push(Described::new("hook.writes.find_delete", "find -delete")),
            "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                if let Some(file) = args.get(i + 1) {
                    write(out, cwd, file, WriteKind::File, "find -fprint");
                }
            }
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let end = args[i + 1..]
                    .iter()
                    .position(|a| a.text == ";" || a.text == "+")
                    .map_or(args.len(), |p| i + 1 + p);
                let inner = Command {
                    words: args[i + 1..end].to_vec(),
                    ..Command::default()
                };
                analyse(src, &inner, depth, cwd, out, true);
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
}

fn git(args: &[Word], cwd: &Option<String>, out: &mut Scan) {
    let mut i = 0;
    let mut dir = cwd.clone();
    // Global options before the subcommand.
    while let Some(a) = args.get(i) {
        match a.text.as_str() {
            "-C" => {
                dir = match (args.get(i + 1), dir.as_ref()) {
                    (Some(d), Some(current)) if d.literal => Some(join(current, &d.text)),
                    _ => None,
                };
                i += 2;
            }
            "-c" | "--namespace" | "--exec-path" => i += 2,
            t if t.starts_with("--git-dir") || t.starts_with("--work-tree") => {
                out.opaque
                    .push(Described::new("hook.writes.other_repository", "git"));
                return;
            }
            t if t.starts_with('-') => i += 1,
            _ => break,
        }
    }
    let Some(sub) = args.get(i) else {
        return;
    };
    let rest = &args[i + 1..];
    let has = |flags: &[&str]| rest.iter().any(|a| flags.contains(&a.text.as_str()));
    let read_only = GIT_READ.contains(&sub.text.as_str())
        || (sub.text == "branch"
            && (has(&["--list", "-l", "--show-current"])
                || (!has(&[
                    "-d",
                    "-D",
                    "-m",
                    "-M",
                    "-c",
                    "-C",
                    "--delete",
                    "--move",
                    "--copy",
                    "-f",
                    "--force",
                    "-u",
                    "--set-upstream-to",
                    "--unset-upstream",
                    "--edit-description",
                ]) && operands(
                    rest,
                    &[
                        "--contains",
                        "--merged",
                        "--no-merged",
                        "--points-at",
                        "--format",
                        "--sort",
                    ],
                )
                .is_empty())))
        || (sub.text == "remote"
            && rest.first().is_none_or(|a| {
                matches!(a.text.as_str(), "-v" | "--verbose" | "show" | "get-url")
            }))
        || (sub.text == "stash"
            && rest
                .first()
                .is_some_and(|a| matches!(a.text.as_str(), "list" | "show")))
        || (sub.text == "config"
            && has(&[
                "--get",
                "--get-all",
                "--get-regexp",
                "--list",
                "-l",
                "get",
                "list",
            ]))
        || (sub.text == "reflog" && rest.first().is_none_or(|a| a.text == "show"))
        || (sub.text == "worktree" && rest.first().is_some_and(|a| a.text == "list"));
    if read_only {
        return;
    }
    // `git checkout [TREE] -- FILES` and `git restore FILES` write the files they name;
    // from HEAD (or the index) they bring them back rather than change them.
    let separator = rest.iter().position(|a| a.text == "--");
    let from_head = |tree: &[&Word]| tree.is_empty() || (tree.len() == 1 && tree[0].text == "HEAD");
    let files: Option<(Vec<&Word>, bool)> = match (sub.text.as_str(), separator) {
        ("checkout", Some(p)) => {
            let tree = operands(&rest[..p], &[]);
            Some((rest[p + 1..].iter().collect(), from_head(&tree)))
        }
        ("restore", _) => {
            let sources: Vec<&Word> = option_values(rest, &["-s", "--source"]);
            let inline = rest
                .iter()
                .filter_map(|a| a.text.strip_prefix("--source="))
                .all(|s| s == "HEAD");
            let head = sources.iter().all(|s| s.text == "HEAD") && inline;
            Some((operands(rest, &["-s", "--source"]), head))
        }
        _ => None,
    };
    match files {
        Some((files, head)) if !files.is_empty() => {
            let kind = if head {
                WriteKind::FromHead
            } else {
                WriteKind::File
            };
            for f in files {
                write(out, &dir, f, kind, &format!("git {} {}", sub.text, f.shown));
            }
        }
        _ => out.opaque.push(Described::new(
            "hook.writes.git",
            format!("git {}", sub.text),
        )),
    }
}

/// Records a write of `word` (relative to `cwd`), or an opaque write when the path
/// cannot be told.
fn write(out: &mut Scan, cwd: &Option<String>, word: &Word, kind: WriteKind, what: &str) {
    if !word.literal || word.text.is_empty() {
        out.opaque.push(Described::new("hook.writes.unnamed", what));
        return;
    }
    match cwd {
        Some(cwd) => out.writes.push(Write {
            path: join(cwd, &word.text),
            kind,
        }),
        None => out
            .opaque
            .push(Described::new("hook.writes.after_cd", what)),
    }
}

/// The arguments that are not options, skipping the values of the options in
/// `with_value` (as `-t DIR`, `-tDIR` or `--target-directory=DIR`).
fn operands<'a>(args: &'a [Word], with_value: &[&str]) -> Vec<&'a Word> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut options = true;
    while i < args.len() {
        let a = &args[i];
        let t = a.text.as_str();
        if options && t == "--" {
            options = false;
        } else if options && t.starts_with('-') && t.len() > 1 {
            if with_value.contains(&t) {
                i += 1;
            }
        } else {
            out.push(a);
        }
        i += 1;
    }
    out
}

/// The values of the options in `names` (`-t DIR`, `--name=DIR`).
fn option_values<'a>(args: &'a [Word], names: &[&str]) -> Vec<&'a Word> {
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if a.text == "--" {
            break;
        }
        if names.contains(&a.text.as_str())
            && let Some(v) = args.get(i + 1)
        {
            out.push(v);
        }
    }
    out
}

fn skip_wrapper_options<'a>(name: &str, args: &'a [Word]) -> &'a [Word] {
    let mut i = 0;
    let mut positional_skipped = false;
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        if t == "--" {
            return &args[i + 1..];
        }
        if t.starts_with('-') && t.len() > 1 {
            // Options whose value is the next word.
            let takes_value = match name {
                "sudo" | "doas" => matches!(t, "-u" | "-g" | "-C" | "-D" | "-h" | "-p" | "-U"),
                "env" => matches!(t, "-u" | "-C" | "-S" | "--unset" | "--chdir"),
                "nice" => matches!(t, "-n" | "--adjustment"),
                "timeout" => matches!(t, "-s" | "-k" | "--signal" | "--kill-after"),
                "ionice" => matches!(t, "-c" | "-n" | "-p"),
                "stdbuf" => matches!(t, "-i" | "-o" | "-e"),
                "xargs" => matches!(
                    t,
                    "-I" | "-n" | "-P" | "-d" | "-L" | "-s" | "-a" | "-E" | "-e"
                ),
                _ => false,
            };
            i += if takes_value { 2 } else { 1 };
            continue;
        }
        if name == "env" && is_assignment(t) {
            i += 1;
            continue;
        }
        if name == "timeout" && !positional_skipped {
            // The duration.
            positional_skipped = true;
            i += 1;
            continue;
        }
        break;
    }
    args.get(i..).unwrap_or_default()
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// Paths that name no file of the repository: the null device and the standard streams.
fn not_a_file(path: &str) -> bool {
    matches!(
        path,
        "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/stdin" | "/dev/tty"
    ) || path.starts_with("/dev/fd/")
}

fn join(cwd: &str, path: &str) -> String {
    if path.starts_with('/') || cwd.is_empty() {
        path.to_string()
    } else {
        format!("{}/{path}", cwd.trim_end_matches('/'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (command, files written, opaque writes, unparsed)
    const TABLE: &[(&str, &[&str], usize, bool)] = &[
        // Read-only commands.
        ("cat src/a.py", &[], 0, false),
        ("grep -rn 'x > y' src | head -5", &[], 0, false),
        (
            "ls -la && git status && git diff HEAD -- src/a.py",
            &[],
            0,
            false,
        ),
        ("git log --oneline -5 2>/dev/null", &[], 0, false),
        ("cargo test > /dev/null 2>&1", &[], 0, false),
        ("echo hi >&2; echo 2>&1", &[], 0, false),
        ("make 2>/dev/null >/dev/null &>/dev/null", &[], 0, false),
        ("git branch", &[], 0, false),
        ("git branch -a --list", &[], 0, false),
        ("git config --get user.name", &[], 0, false),
        ("sed -n 1,10p src/a.py", &[], 0, false),
        ("python -c 'open(\"x\",\"w\")'", &[], 0, false),
        ("echo '> not a redirection' \"| nor a pipe\"", &[], 0, false),
        ("# echo hi > x\nls", &[], 0, false),
        ("cat <<'EOF'\nx > y\nrm z\nEOF\nls", &[], 0, false),
        ("cat <<-EOF | wc -l\n\tline > file\n\tEOF\n", &[], 0, false),
        ("echo $((1 > 2))", &[], 0, false),
        ("diff <(sort a) <(sort b)", &[], 0, false),
        ("FOO=1 BAR=2 env -u X printenv", &[], 0, false),
        // Redirections.
        ("echo hi > src/a.py", &["src/a.py"], 0, false),
        ("echo hi>>notes.txt", &["notes.txt"], 0, false),
        ("cmd &> out.log", &["out.log"], 0, false),
        ("cmd >| forced 2>err.txt", &["forced", "err.txt"], 0, false),
        ("cmd >&both.txt", &["both.txt"], 0, false),
        ("exec 3<> rw.txt", &["rw.txt"], 0, false),
        (
            "echo \"a b\" > 'with space.txt'",
            &["with space.txt"],
            0,
            false,
        ),
        ("echo x > $OUT", &[], 1, false),
        ("echo x > ~/x", &[], 1, false),
        ("echo x > *.py", &[], 1, false),
        ("(cd sub && echo x > y.txt)", &["sub/y.txt"], 0, false),
        ("(cd sub; touch a); touch b", &["sub/a", "b"], 0, false),
        (
            "cd d && (touch a; cd e; touch b) && touch c",
            &["d/a", "d/e/b", "d/c"],
            0,
            false,
        ),
        ("echo $(cd /tmp; pwd) > out", &["out"], 0, false),
        ("cd \"$DIR\" && echo x > y", &[], 1, false),
        ("echo $(echo inner > inner.txt)", &["inner.txt"], 0, false),
        ("echo \"`touch tick`\"", &["tick"], 0, false),
        // Writers.
        ("tee -a log.txt < in", &["log.txt"], 0, false),
        ("ls | tee out1 out2 >/dev/null", &["out1", "out2"], 0, false),
        (
            "sed -i 's/a/b/' src/a.py src/b.py",
            &["src/a.py", "src/b.py"],
            0,
            false,
        ),
        ("sed -i.bak -e 's/a/b/' f.txt", &["f.txt"], 0, false),
        ("sed --in-place=.orig 's/x/y/' g.txt", &["g.txt"], 0, false),
        ("perl -pi -e 's/a/b/' p.txt", &["p.txt"], 0, false),
        ("mv a.txt b.txt", &["a.txt", "b.txt"], 0, false),
        ("cp -r src/a.py /tmp/x dest/", &["dest/"], 0, false),
        ("cp -t dest a b", &["dest"], 0, false),
        (
            "rm -rf build/ src/old.py",
            &["build/", "src/old.py"],
            0,
            false,
        ),
        (
            "touch new.rs && mkdir -p src/new",
            &["new.rs", "src/new"],
            0,
            false,
        ),
        ("ln -s ../target link", &["link"], 0, false),
        ("truncate -s 0 big.log", &["big.log"], 0, false),
        ("chmod +x run.sh", &["run.sh"], 0, false),
        (
            "dd if=/dev/zero of=disk.img bs=1 count=1",
            &["disk.img"],
            0,
            false,
        ),
        ("curl -sS -o page.html https://x", &["page.html"], 0, false),
        ("sudo -u root rm x", &["x"], 0, false),
        ("timeout 5 touch t", &["t"], 0, false),
        ("find . -name '*.pyc' -delete", &[], 1, false),
        ("find . -name '*.tmp' -exec rm {} \\;", &[], 1, false),
        ("ls | xargs rm", &[], 1, false),
        ("bash -c 'echo x > nested.txt'", &["nested.txt"], 0, false),
        ("sh -c \"cd d && touch e\"", &["d/e"], 0, false),
        ("eval 'echo hi > ev.txt'", &["ev.txt"], 0, false),
        ("tar xzf a.tgz", &[], 1, false),
        ("cat a | sponge a", &["a"], 0, false),
        ("gawk -i inplace '{print}' f.txt", &["f.txt"], 0, false),
        ("awk '{print}' f.txt > /dev/null", &[], 0, false),
        // Git.
        (
            "git checkout -- src/a.py src/b.py",
            &["src/a.py", "src/b.py"],
            0,
            false,
        ),
        ("git checkout HEAD -- src/a.py", &["src/a.py"], 0, false),
        ("git restore --staged src/a.py", &["src/a.py"], 0, false),
        ("git -C sub restore f", &["sub/f"], 0, false),
        ("git checkout main", &[], 1, false),
        ("git commit -am wip", &[], 1, false),
        ("git -c core.x=y reset --hard", &[], 1, false),
        ("git config user.name x", &[], 1, false),
        ("git stash", &[], 1, false),
        ("git branch -D old", &[], 1, false),
        ("git add .", &[], 1, false),
        ("git --git-dir=/x/.git log", &[], 1, false),
        (
            "echo x > .git/hooks/pre-commit",
            &[".git/hooks/pre-commit"],
            0,
            false,
        ),
        // Unreadable.
        ("echo 'unterminated > x", &[], 0, true),
        ("echo \"open", &[], 0, true),
        ("echo $(ls", &[], 0, true),
        ("echo >", &[], 0, true),
    ];

    #[test]
    fn the_table() {
        for (command, files, opaque, unparsed) in TABLE {
            let scan = scan(command);
            let written: Vec<&str> = scan.writes.iter().map(|w| w.path.as_str()).collect();
            assert_eq!(&written, files, "files of {command:?}: {scan:?}");
            assert_eq!(
                scan.opaque.len(),
                *opaque,
                "opaque writes of {command:?}: {scan:?}"
            );
            assert_eq!(
                scan.unparsed.is_some(),
                *unparsed,
                "unparsed {command:?}: {scan:?}"
            );
        }
        assert!(
            scan("mkdir -p a/b")
                .writes
                .iter()
                .all(|w| w.kind == WriteKind::Dir)
        );
        let kinds = |c: &str| scan(c).writes.iter().map(|w| w.kind).collect::<Vec<_>>();
        assert_eq!(kinds("git checkout -- a b"), [WriteKind::FromHead; 2]);
        assert_eq!(
            kinds("rm -rf __pycache__ .pytest_cache"),
            [WriteKind::Remove; 2]
        );
        assert_eq!(kinds("unlink a"), [WriteKind::Remove]);
        assert_eq!(kinds("git checkout HEAD -- a"), [WriteKind::FromHead]);
        assert_eq!(kinds("git restore --source=HEAD a"), [WriteKind::FromHead]);
        assert_eq!(kinds("git checkout main -- a"), [WriteKind::File]);
        assert_eq!(kinds("git restore -s HEAD~1 a"), [WriteKind::File]);
        assert!(scan("cat x").is_read_only());
    }

    #[test]
    fn formatters_rewrite_what_they_choose() {
        for command in [
            "cargo fmt",
            "cargo fmt --all",
            "cargo clippy --fix --allow-dirty",
            "rustfmt src/main.rs",
            "black .",
            "ruff format src",
            "ruff check --fix",
            "prettier --write 'src/**/*.ts'",
            "gofmt -w .",
            "go generate ./...",
            "npx eslint --fix src",
        ] {
            let found = scan(command);
            assert_eq!(found.broad.len(), 1, "{command}: {found:?}");
            assert!(!found.is_read_only());
        }
        for command in [
            "cargo fmt --check",
            "cargo clippy --all-targets -- -D warnings",
            "cargo test",
            "rustfmt --check src/main.rs",
            "black --check .",
            "ruff check src",
            "prettier --check src",
            "gofmt -l .",
            "go test ./...",
        ] {
            assert!(
                scan(command).is_read_only(),
                "{command}: {:?}",
                scan(command)
            );
        }
    }

    #[test]
    fn depth_and_size_are_bounded() {
        assert!(scan("eval eval eval ls").is_read_only());
        let nested = "eval eval eval eval ls";
        assert!(scan(nested).unparsed.is_some(), "{:?}", scan(nested));
        let huge = "x".repeat(MAX_COMMAND_BYTES + 1);
        assert!(scan(&huge).unparsed.is_some());
        // Long but under the cap: linear, so this is quick.
        let long = "echo a > f; ".repeat(20_000);
        let started = std::time::Instant::now();
        let result = scan(&long);
        assert_eq!(result.writes.len(), 1);
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        let parens = "$(".repeat(10_000);
        assert!(scan(&parens).unparsed.is_some());
    }
}
