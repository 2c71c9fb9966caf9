//! `git`: which subcommands only read (a table, [`GIT_READ`], and the read-only forms of
//! `branch`, `remote`, `stash`, `config`, `reflog` and `worktree`), and the files
//! `git checkout -- FILES` and `git restore FILES` bring back. Every other subcommand
//! writes what the hook cannot name (branches, commits, the index, the configuration).

use super::args::{join, operands, option_values, write};
use super::lex::Word;
use super::writes::{Described, Scan, WriteKind};

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

/// What `git ARGS` writes, into `out`, from the directory `cwd` (`-C` moves it).
pub(super) fn git(args: &[Word], cwd: &Option<String>, out: &mut Scan) {
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
