//! What each simple command writes: its output redirections, then the command itself,
//! judged by its name from the tables below (wrappers that run the rest of their words,
//! writers and where their files are, formatters that rewrite the files they choose,
//! shells and `eval` read one level deeper, `find` and [`git`](super::git)).

use super::args::{
    is_assignment, join, not_a_file, operands, option_values, skip_wrapper_options, write,
};
use super::git::git;
use super::lex::{Command, Redir, Word, lex};
use super::writes::{Described, Scan, WriteKind};

/// How deep `bash -c '...'` and `eval` are followed.
pub const MAX_DEPTH: usize = 3;

/// What the text `src` (a command line, or a script `depth` shells deep) writes, into
/// `out`, from the directory `cwd`, which its `cd`s move.
pub(super) fn scan_into(src: &str, depth: usize, cwd: &mut Option<String>, out: &mut Scan) {
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

/// What one simple command writes, into `out`; a `cd` moves `cwd` (`None`: a directory
/// the scanner cannot follow). `run_by_other`: another command runs it with arguments it
/// supplies (`xargs`, `find -exec`), so the files it writes cannot be named.
pub(super) fn analyse(
    src: &str,
    command: &Command,
    depth: usize,
    cwd: &mut Option<String>,
    out: &mut Scan,
    run_by_other: bool,
) {
    redirections(command, cwd, out);
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
    let writer = Writer { name, run_by_other };
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
        "tee" => writer.operands(out, cwd, &operands(args, &[]), WriteKind::File),
        "rm" | "rmdir" | "unlink" => {
            writer.operands(out, cwd, &operands(args, &[]), WriteKind::Remove)
        }
        "touch" => writer.operands(
            out,
            cwd,
            &operands(args, &["-d", "-t", "-r"]),
            WriteKind::File,
        ),
        "shred" => writer.operands(
            out,
            cwd,
            &operands(args, &["-n", "-s", "--size"]),
            WriteKind::File,
        ),
        "mkdir" => writer.operands(out, cwd, &operands(args, &["-m", "--mode"]), WriteKind::Dir),
        "truncate" => writer.operands(
            out,
            cwd,
            &operands(args, &["-s", "--size", "-r", "--reference"]),
            WriteKind::File,
        ),
        "chmod" | "chown" | "chgrp" => {
            let ops = operands(args, &["--reference"]);
            writer.operands(out, cwd, ops.get(1..).unwrap_or_default(), WriteKind::File);
        }
        "mv" => {
            let ops = operands(args, &["-t", "--target-directory", "-S", "--suffix"]);
            writer.operands(out, cwd, &ops, WriteKind::File);
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
        "cp" | "install" | "ln" | "rsync" => copies(&writer, args, cwd, out),
        "sed" | "perl" => {
            if let Some(files) = edited_in_place(name, args) {
                writer.operands(out, cwd, &files, WriteKind::File);
            }
        }
        "dd" => dd(args, cwd, out),
        "curl" | "wget" => downloads(name, args, cwd, out),
        "patch" | "unzip" => out
            .opaque
            .push(Described::new("hook.writes.from_input", name)),
        "sponge" => writer.operands(out, cwd, &operands(args, &[]), WriteKind::File),
        "awk" | "gawk" => {
            if let Some(files) = awk_in_place(args) {
                writer.operands(out, cwd, &files, WriteKind::File);
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
        "tar" if extracts(args) => out
            .opaque
            .push(Described::new("hook.writes.archive", "tar -x")),
        "find" => find(src, args, depth, cwd, out),
        "git" => git(args, cwd, out),
        "bash" | "sh" | "zsh" | "dash" | "ksh" | "eval" => {
            if let Some(script) = shell_script(src, name, args) {
                nested(&script, depth, cwd, out);
            }
        }
        _ => {}
    }
}

/// The files a command's output redirections write (`/dev/null` and the like are none);
/// a redirection with no target makes the command unreadable.
fn redirections(command: &Command, cwd: &Option<String>, out: &mut Scan) {
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
}

/// The command that writes its operands, as [`analyse`] judges it.
struct Writer<'a> {
    name: &'a str,
    /// Run by another command with arguments it supplies (`xargs`, `find -exec`).
    run_by_other: bool,
}

impl Writer<'_> {
    /// A writer whose arguments another command supplies writes files nobody can name.
    fn opaque(&self, out: &mut Scan) {
        out.opaque
            .push(Described::new("hook.writes.run_by_other", self.name));
    }

    /// A write of each of `ops`, or the one opaque write when another command runs it.
    fn operands(&self, out: &mut Scan, cwd: &Option<String>, ops: &[&Word], kind: WriteKind) {
        if self.run_by_other {
            self.opaque(out);
            return;
        }
        for w in ops {
            write(out, cwd, w, kind, &format!("{} {}", self.name, w.shown));
        }
    }
}

/// `cp`, `install`, `ln` and `rsync` write their destination: the `-t` directory, the
/// name `ln -s TARGET` makes here, or the last operand (not a remote `host:path`).
fn copies(writer: &Writer<'_>, args: &[Word], cwd: &Option<String>, out: &mut Scan) {
    let name = writer.name;
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
    if writer.run_by_other {
        writer.opaque(out);
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

/// The files `sed` or `perl` (`name`) edits in place, `None` when it edits nothing in
/// place.
fn edited_in_place<'a>(name: &str, args: &'a [Word]) -> Option<Vec<&'a Word>> {
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
    if !in_place {
        return None;
    }
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
                || (a.text.starts_with(o) && a.text.len() > o.len() && !o.starts_with("--"))
                || a.text.starts_with(&format!("{o}="))
        }) || (name == "perl"
            && a.text.starts_with('-')
            && !a.text.starts_with("--")
            && a.text.contains('e'))
    });
    // Without a script option, the first operand is the script.
    Some(if has_script {
        ops
    } else {
        ops.get(1..).unwrap_or_default().to_vec()
    })
}

/// The files gawk's `-i inplace` rewrites (the files it reads), `None` without it.
fn awk_in_place(args: &[Word]) -> Option<Vec<&Word>> {
    let in_place = args
        .windows(2)
        .any(|w| w[0].text == "-i" && w[1].text == "inplace")
        || args.iter().any(|a| a.text == "--include=inplace");
    if !in_place {
        return None;
    }
    let ops = operands(
        args,
        &["-i", "--include", "-f", "--file", "-v", "--assign", "-F"],
    );
    let has_program_file = args.iter().any(|a| a.text == "-f" || a.text == "--file");
    // Without a program file, the first operand is the program.
    Some(if has_program_file {
        ops
    } else {
        ops.get(1..).unwrap_or_default().to_vec()
    })
}

/// `dd of=FILE` writes FILE.
fn dd(args: &[Word], cwd: &Option<String>, out: &mut Scan) {
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

/// `curl -o FILE` and `wget -O FILE` (`name`) write their output file.
fn downloads(name: &str, args: &[Word], cwd: &Option<String>, out: &mut Scan) {
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

/// Whether `tar` extracts: `--extract`, `-x...`, or the old style `tar xzf` (a first word
/// of letters).
fn extracts(args: &[Word]) -> bool {
    let letters = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_alphabetic());
    args.iter().enumerate().any(|(n, a)| {
        let t = a.text.as_str();
        t == "--extract"
            || t == "--get"
            || t.strip_prefix('-')
                .is_some_and(|rest| letters(rest) && rest.contains('x'))
            || (n == 0 && letters(t) && t.contains('x'))
    })
}

/// The script a shell runs (`bash -c SCRIPT`), or `eval`'s words joined: what is scanned
/// one level deeper. `None` for a shell that runs no script given here.
fn shell_script(src: &str, name: &str, args: &[Word]) -> Option<String> {
    if name == "eval" {
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
    }
}

/// A script run by a shell at `depth`, scanned one level deeper from a copy of `cwd` (a
/// `cd` inside does not move the outer shell); deeper than [`MAX_DEPTH`] it is unreadable.
fn nested(script: &str, depth: usize, cwd: &Option<String>, out: &mut Scan) {
    if depth + 1 > MAX_DEPTH {
        out.unparsed.get_or_insert_with(|| {
            Described::new("hook.unreadable.shells_too_deep", MAX_DEPTH.to_string())
        });
    } else {
        let mut inner_cwd = cwd.clone();
        scan_into(script, depth + 1, &mut inner_cwd, out);
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

/// `find`'s actions that write: `-delete`, `-fprint FILE` and the commands of `-exec`,
/// which are judged as run by another command.
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
