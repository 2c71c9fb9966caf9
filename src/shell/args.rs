//! Reading a command's words: its operands and option values, what a wrapper runs,
//! assignments, the paths that are no file, paths joined to the working directory, and
//! the write of a word ([`write`]).

use super::lex::Word;
use super::writes::{Described, Scan, Write, WriteKind};

/// The arguments that are not options, skipping the values of the options in
/// `with_value` (as `-t DIR`, `-tDIR` or `--target-directory=DIR`).
pub(super) fn operands<'a>(args: &'a [Word], with_value: &[&str]) -> Vec<&'a Word> {
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
pub(super) fn option_values<'a>(args: &'a [Word], names: &[&str]) -> Vec<&'a Word> {
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

/// The words after a wrapper's own options (and, for `env`, its assignments; for
/// `timeout`, its duration): the command it runs.
pub(super) fn skip_wrapper_options<'a>(name: &str, args: &'a [Word]) -> &'a [Word] {
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

/// Whether `word` is a variable assignment (`NAME=value`).
pub(super) fn is_assignment(word: &str) -> bool {
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
pub(super) fn not_a_file(path: &str) -> bool {
    matches!(
        path,
        "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/stdin" | "/dev/tty"
    ) || path.starts_with("/dev/fd/")
}

/// `path` from the directory `cwd` (both as written; absolute paths stay as they are).
pub(super) fn join(cwd: &str, path: &str) -> String {
    if path.starts_with('/') || cwd.is_empty() {
        path.to_string()
    } else {
        format!("{}/{path}", cwd.trim_end_matches('/'))
    }
}

/// Records a write of `word` (relative to `cwd`), or an opaque write when the path
/// cannot be told.
pub(super) fn write(
    out: &mut Scan,
    cwd: &Option<String>,
    word: &Word,
    kind: WriteKind,
    what: &str,
) {
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
