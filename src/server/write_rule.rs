//! The write decision, a pure function of what the hook found: the session (none, one it
//! cannot read, or its sealed record) and the write's targets, already resolved against
//! the repository root. No IO here: the clients' write hook (`client::hook`) gathers the
//! data, and the server's `check_write_target` asks the same rule for a session it holds
//! ([`decide_in_session`]), so a client without hooks is told what the hook would say.
//! It is the server's rule (its session record, its reserved paths, its messages), which
//! is why it lives here and the hook uses it.

use crate::server::session_record::{SessionRecord, WriteGate};
use crate::shell::{DESCRIPTIONS, Described, WriteKind};

/// The session in progress in the repository, as far as the hook can tell.
#[derive(Debug)]
pub(crate) enum Session {
    /// No `current.json`: nothing to enforce.
    None,
    /// A session exists but its checkpoint cannot be trusted or read: the reason, and the
    /// refusal's template in the session's locale when the pointer names one
    /// (`hook.session_unreadable`, `{reason}` to fill in).
    Unreadable {
        reason: String,
        refusal: Option<String>,
    },
    Active(Box<SessionRecord>),
}

/// What a tool call is about to write, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Targets {
    /// Not a write tool, or a shell command that plainly writes nothing.
    Nothing,
    /// A write tool whose input does not say what it writes: the reason.
    Unknown(String),
    Paths(Vec<Target>),
    /// What a shell command writes (`crate::shell`).
    Shell(ShellTargets),
}

/// A shell command's writes, resolved against the root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ShellTargets {
    /// Each file it writes, and how.
    pub paths: Vec<(Target, WriteKind)>,
    /// Writes whose files cannot be named, described.
    pub opaque: Vec<Described>,
    /// Writes of files the program chooses (a formatter over the project), described.
    pub broad: Vec<Described>,
    /// Why the command could not be read, if it could not.
    pub unparsed: Option<Described>,
}

/// The hook's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    Allow,
    Deny(String),
}

pub(crate) use crate::server::paths::Target;
use crate::server::paths::is_reserved;

/// The decision table, first match wins:
///
/// | case | decision |
/// |---|---|
/// | not a write tool | allow |
/// | no session, or a finished one | allow |
/// | a session whose checkpoint cannot be trusted | deny, with why |
/// | a write whose files cannot be told | deny |
/// | a file outside the root | deny, naming it |
/// | a file under `.git/` or `.code-intel/`, at any depth | deny, naming it |
/// | the current state allows no writes | deny, the contract's phase refusal |
/// | a file not explored | deny, the contract's file refusal, naming it |
/// | otherwise | allow |
///
/// A shell command ([`Targets::Shell`]) is judged by its own table, first match wins:
///
/// | case | decision |
/// |---|---|
/// | it plainly writes nothing | allow (as "not a write tool") |
/// | no session, or a finished one | allow |
/// | a session whose checkpoint cannot be trusted | deny, with why |
/// | a file under `.git/` or `.code-intel/`, at any depth | deny, naming it |
/// | a write whose files cannot be named (`git commit`, `> $OUT`, `xargs rm`) | deny, naming it |
/// | a command that cannot be read, where writes are not allowed | deny (fail closed) |
/// | a program that rewrites files it chooses (`cargo fmt`), where writes are not allowed | deny |
/// | a file in the repository, where writes are not allowed | deny, the phase refusal, naming it |
/// | a file not explored (a directory with no explored file under it) | deny, the file refusal |
/// | otherwise (files outside the repository; an unreadable command or a formatter during implementation, which the check of the tree judges) | allow |
///
/// In both states a file brought back to HEAD ([`WriteKind::FromHead`]), or a path HEAD
/// does not hold removed ([`WriteKind::RemoveNew`]), where the accepted tree holds nothing
/// uncommitted, is not counted as a write: it restores the tree the server accepted.
pub(crate) fn decide(session: &Session, targets: &Targets) -> Decision {
    if *targets == Targets::Nothing {
        return Decision::Allow;
    }
    let record = match session {
        Session::None => return Decision::Allow,
        Session::Active(record) if record.finished() => return Decision::Allow,
        Session::Unreadable { reason, refusal } => {
            let gate = WriteGate {
                texts: refusal
                    .iter()
                    .map(|t| (UNREADABLE.to_string(), t.clone()))
                    .collect(),
                ..WriteGate::default()
            };
            return Decision::Deny(gate.say(
                UNREADABLE,
                "code-intel cannot read the session in progress, so no file may be written until it can: {reason}",
                &[("reason", reason.clone())],
            ));
        }
        Session::Active(record) => record,
    };
    decide_in_session(record, targets)
}

/// The decision for an unfinished session's record: the rule the hook and the server's
/// `check_write_target` share.
pub(crate) fn decide_in_session(record: &SessionRecord, targets: &Targets) -> Decision {
    let paths = match targets {
        Targets::Shell(shell) => return decide_shell(record, shell),
        Targets::Unknown(reason) => {
            return Decision::Deny(record.write_gate.say(
                "hook.unknown_targets",
                "code-intel refuses this write: {reason}; write each file with a patch that names it",
                &[("reason", reason.clone())],
            ));
        }
        Targets::Paths(paths) => paths,
        Targets::Nothing => return Decision::Allow,
    };
    let (mut inside, mut outside): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    for target in paths {
        match target {
            Target::Inside(rel) => inside.push(rel),
            Target::Outside(given) => outside.push(given),
        }
    }
    let gate = &record.write_gate;
    if !outside.is_empty() {
        return Decision::Deny(gate.say(
            "hook.outside_root",
            "{files} is outside the repository; code-intel allows writes inside it only",
            &[("files", outside.join(", "))],
        ));
    }
    let state: Vec<&str> = inside
        .iter()
        .copied()
        .filter(|rel| is_reserved(rel))
        .collect();
    if !state.is_empty() {
        return Decision::Deny(protected_refusal(gate, &state));
    }
    if !gate.writes_allowed {
        return Decision::Deny(non_empty(
            &gate.phase_refusal,
            "Writing files is not allowed in the current phase.",
        ));
    }
    let unexplored: Vec<&str> = inside
        .into_iter()
        .filter(|rel| !record.host.explored.contains(*rel))
        .collect();
    if !unexplored.is_empty() {
        return Decision::Deny(format!(
            "{}: {}",
            unexplored.join(", "),
            non_empty(
                &gate.file_refusal,
                "This file is outside the explored files."
            )
        ));
    }
    Decision::Allow
}

fn protected_refusal(gate: &WriteGate, paths: &[&str]) -> String {
    gate.say(
        "hook.reserved",
        "{files}: .git/ (git's own files and hooks), .code-intel/ (code-intel's session state) and the clients' hook settings and personal memory (.claude/settings*.json, .codex/config.toml, .codex/hooks.json, CLAUDE.local.md: only the user changes them) are never written by an agent",
        &[("files", paths.join(", "))],
    )
}

/// The described writes in the session's locale, joined.
fn described(gate: &WriteGate, writes: &[Described]) -> String {
    writes
        .iter()
        .map(|d| gate.say(d.key, d.english(), &[("what", d.what.clone())]))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The key of the refusal for a session whose checkpoint cannot be read.
pub(crate) const UNREADABLE: &str = "hook.session_unreadable";

/// The `hook.*` messages the write gate carries (see [`WriteGate::texts`]).
pub(crate) const HOOK_MESSAGES: [&str; 9 + DESCRIPTIONS.len()] = [
    UNREADABLE,
    "hook.shell_refused",
    "hook.unknown_targets",
    "hook.outside_root",
    "hook.reserved",
    "hook.shell_opaque",
    "hook.shell_unreadable",
    "hook.shell_broad",
    "hook.shell_writes",
    DESCRIPTIONS[0].0,
    DESCRIPTIONS[1].0,
    DESCRIPTIONS[2].0,
    DESCRIPTIONS[3].0,
    DESCRIPTIONS[4].0,
    DESCRIPTIONS[5].0,
    DESCRIPTIONS[6].0,
    DESCRIPTIONS[7].0,
    DESCRIPTIONS[8].0,
    DESCRIPTIONS[9].0,
    DESCRIPTIONS[10].0,
    DESCRIPTIONS[11].0,
    DESCRIPTIONS[12].0,
    DESCRIPTIONS[13].0,
];

/// The shell command table (see [`decide`]).
fn decide_shell(record: &SessionRecord, shell: &ShellTargets) -> Decision {
    const PREFIX: &str = "code-intel refuses this shell command";
    let gate = &record.write_gate;
    // A file brought back to HEAD's content, or a new path removed, where the accepted tree
    // holds nothing uncommitted, is being restored, as the server's refusals ask: never
    // refused.
    let restores = |rel: &str, kind: WriteKind| {
        matches!(kind, WriteKind::FromHead | WriteKind::RemoveNew)
            && record.host.accepted_tree.as_ref().is_some_and(|accepted| {
                let prefix = rel.trim_end_matches('/');
                !accepted.keys().any(|k| {
                    prefix.is_empty()
                        || k == prefix
                        || k.strip_prefix(prefix).is_some_and(|r| r.starts_with('/'))
                })
            })
    };
    let inside: Vec<(&str, WriteKind)> = shell
        .paths
        .iter()
        .filter_map(|(t, kind)| match t {
            Target::Inside(rel) => Some((rel.as_str(), *kind)),
            Target::Outside(_) => None,
        })
        .collect();
    let state: Vec<&str> = inside
        .iter()
        .map(|(rel, _)| *rel)
        .filter(|rel| is_reserved(rel))
        .collect();
    if !state.is_empty() {
        return Decision::Deny(gate.say(
            "hook.shell_refused",
            &format!("{PREFIX}: {{reason}}"),
            &[("reason", protected_refusal(gate, &state))],
        ));
    }
    if !shell.opaque.is_empty() {
        return Decision::Deny(gate.say(
            "hook.shell_opaque",
            &format!("{PREFIX}: {{writes}}. Inspect with read-only commands; write files with the edit tools, in the implementation phase, once they are explored; branches and commits are made by the server."),
            &[("writes", described(gate, &shell.opaque))],
        ));
    }
    if !gate.writes_allowed {
        let phase = non_empty(
            &gate.phase_refusal,
            "Writing files is not allowed in the current phase.",
        );
        if let Some(reason) = &shell.unparsed {
            return Decision::Deny(gate.say(
                "hook.shell_unreadable",
                &format!("{PREFIX}: it cannot be read ({{reason}}). {{refusal}}"),
                &[
                    ("reason", described(gate, std::slice::from_ref(reason))),
                    ("refusal", phase),
                ],
            ));
        }
        if !shell.broad.is_empty() {
            return Decision::Deny(gate.say(
                "hook.shell_broad",
                &format!("{PREFIX}: {{writes}}. {{refusal}}"),
                &[
                    ("writes", described(gate, &shell.broad)),
                    ("refusal", phase),
                ],
            ));
        }
        let files: Vec<&str> = inside
            .iter()
            .filter(|(rel, kind)| !restores(rel, *kind))
            .map(|(rel, _)| *rel)
            .collect();
        if !files.is_empty() {
            return Decision::Deny(gate.say(
                "hook.shell_writes",
                &format!("{PREFIX}: it writes {{files}}. {{refusal}}"),
                &[("files", files.join(", ")), ("refusal", phase)],
            ));
        }
        return Decision::Allow;
    }
    let explored = &record.host.explored;
    let unexplored: Vec<&str> = inside
        .iter()
        .filter(|(rel, kind)| !covered(explored, rel, *kind) && !restores(rel, *kind))
        .map(|(rel, _)| *rel)
        .collect();
    if !unexplored.is_empty() {
        let refusal = format!(
            "{}: {}",
            unexplored.join(", "),
            non_empty(
                &gate.file_refusal,
                "This file is outside the explored files."
            )
        );
        return Decision::Deny(gate.say(
            "hook.shell_refused",
            &format!("{PREFIX}: {{reason}}"),
            &[("reason", refusal)],
        ));
    }
    Decision::Allow
}

/// Whether a write of `rel` is of an explored file, or, for a directory it creates, of a
/// directory holding one.
fn covered(explored: &std::collections::BTreeSet<String>, rel: &str, kind: WriteKind) -> bool {
    let prefix = rel.trim_end_matches('/');
    explored.contains(rel)
        || (kind == WriteKind::Dir
            && explored
                .iter()
                .any(|e| e.strip_prefix(prefix).is_some_and(|r| r.starts_with('/'))))
}

fn non_empty(text: &str, fallback: &str) -> String {
    if text.trim().is_empty() {
        fallback.to_string()
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::session_record::{HostState, RECORD_VERSION};
    use WriteKind::{Dir as D, File as F, FromHead as H, Remove as R, RemoveNew as N};

    fn record(writes_allowed: bool, explored: &[&str], outcome: Option<&str>) -> Session {
        let instance: crate::machine::Instance = serde_json::from_value(serde_json::json!({
            "contract": "c", "state": "S", "flags": {}, "intent": "i", "locale": "en",
            "params": {}, "counters": {}, "tasks": [], "vars": {}, "summaries": [],
            "steps_taken": 0
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        Session::Active(Box::new(SessionRecord {
            version: RECORD_VERSION,
            id: "0".repeat(32),
            created_at: 0,
            updated_at: 0,
            request: String::new(),
            flag_text: String::new(),
            instance,
            compaction_count: 0,
            tools_called: Vec::new(),
            tool_history: Default::default(),
            host: HostState {
                explored: explored.iter().map(|s| s.to_string()).collect(),
                accepted_tree: Some(
                    [("user/notes.txt".to_string(), Some("abc".to_string()))]
                        .into_iter()
                        .collect(),
                ),
                ..HostState::default()
            },
            outcome: outcome.map(str::to_string),
            write_gate: WriteGate {
                writes_allowed,
                phase_refusal: "no writes here".into(),
                file_refusal: "not explored".into(),
                ..WriteGate::default()
            },
        }))
    }

    fn paths(items: &[Target]) -> Targets {
        Targets::Paths(items.to_vec())
    }

    fn inside(p: &str) -> Target {
        Target::Inside(p.into())
    }

    fn denied(d: Decision) -> String {
        match d {
            Decision::Deny(reason) => reason,
            Decision::Allow => panic!("allowed"),
        }
    }

    #[test]
    fn the_table() {
        let open = record(true, &["a.rs"], None);
        assert_eq!(decide(&open, &Targets::Nothing), Decision::Allow);
        assert_eq!(
            decide(&Session::None, &paths(&[inside("x")])),
            Decision::Allow
        );
        assert_eq!(
            decide(&record(false, &[], Some("success")), &paths(&[inside("x")])),
            Decision::Allow
        );
        assert!(
            denied(decide(
                &Session::Unreadable {
                    reason: "tampered".into(),
                    refusal: None,
                },
                &paths(&[inside("a.rs")])
            ))
            .contains("tampered")
        );
        assert!(
            denied(decide(&open, &Targets::Unknown("no markers".into()))).contains("no markers")
        );
        assert!(
            denied(decide(
                &open,
                &paths(&[inside("a.rs"), Target::Outside("../x".into())])
            ))
            .contains("../x")
        );
        assert!(
            denied(decide(
                &open,
                &paths(&[inside(".code-intel/sessions/current.json")])
            ))
            .contains(".code-intel/sessions/current.json")
        );
        assert_eq!(
            denied(decide(
                &record(false, &["a.rs"], None),
                &paths(&[inside("a.rs")])
            )),
            "no writes here"
        );
        assert_eq!(decide(&open, &paths(&[inside("a.rs")])), Decision::Allow);
        assert_eq!(
            denied(decide(&open, &paths(&[inside("a.rs"), inside("b.rs")]))),
            "b.rs: not explored"
        );
        for reserved in [".git/config", ".git/hooks/pre-commit", "sub/.git/HEAD"] {
            let explored = record(true, &[reserved], None);
            assert!(
                denied(decide(&explored, &paths(&[inside(reserved)]))).contains(reserved),
                "{reserved} is never written, even when explored"
            );
        }
        assert_eq!(
            denied(decide(&open, &paths(&[inside(".github/x.yml")]))),
            ".github/x.yml: not explored"
        );
    }

    fn shell(paths: &[(&str, WriteKind)], opaque: &[&str], unparsed: Option<&str>) -> Targets {
        Targets::Shell(ShellTargets {
            paths: paths
                .iter()
                .map(|(p, dir)| {
                    let target = match p.strip_prefix('!') {
                        Some(outside) => Target::Outside(outside.into()),
                        None => inside(p),
                    };
                    (target, *dir)
                })
                .collect(),
            opaque: opaque
                .iter()
                .map(|s| Described {
                    key: "hook.writes.git",
                    what: s.to_string(),
                })
                .collect(),
            broad: Vec::new(),
            unparsed: unparsed.map(|what| Described {
                key: "hook.unreadable.not_closed",
                what: what.to_string(),
            }),
        })
    }

    #[test]
    fn the_shell_table() {
        let open = record(true, &["a.rs", "src/new/mod.rs"], None);
        let closed = record(false, &["a.rs"], None);
        // No session, a finished one: anything goes; an unreadable one: refused.
        assert_eq!(
            decide(
                &Session::None,
                &shell(&[("a.rs", F)], &["git commit"], None)
            ),
            Decision::Allow
        );
        assert!(
            denied(decide(
                &Session::Unreadable {
                    reason: "tampered".into(),
                    refusal: None,
                },
                &shell(&[("a.rs", F)], &[], None)
            ))
            .contains("tampered")
        );
        // Protected directories, in any state.
        assert!(
            denied(decide(
                &open,
                &shell(&[(".git/hooks/pre-commit", F)], &[], None)
            ))
            .contains(".git/hooks/pre-commit")
        );
        assert!(
            denied(decide(&open, &shell(&[(".code-intel/x", F)], &[], None)))
                .contains(".code-intel/x")
        );
        // Opaque writes, in any state.
        assert!(denied(decide(&open, &shell(&[], &["`git commit`"], None))).contains("git commit"));
        // Where writes are not allowed: unreadable commands and files of the repository.
        assert!(
            denied(decide(&closed, &shell(&[], &[], Some("a quote is open"))))
                .contains("a quote is open")
        );
        let refusal = denied(decide(&closed, &shell(&[("a.rs", F)], &[], None)));
        assert!(
            refusal.contains("a.rs") && refusal.contains("no writes here"),
            "{refusal}"
        );
        assert_eq!(
            decide(&closed, &shell(&[("!/tmp/log", F)], &[], None)),
            Decision::Allow
        );
        // Implementation: explored files, directories holding one, unreadable commands.
        assert_eq!(
            decide(
                &open,
                &shell(&[("a.rs", F), ("src/new", D), ("!/tmp/x", F)], &[], None)
            ),
            Decision::Allow
        );
        assert_eq!(
            decide(&open, &shell(&[], &[], Some("too long"))),
            Decision::Allow
        );
        // A formatter over the project: refused before implementation, judged by the
        // check of the tree during it.
        let formatter = Targets::Shell(ShellTargets {
            broad: vec![Described {
                key: "hook.writes.formatter",
                what: "cargo fmt".into(),
            }],
            ..ShellTargets::default()
        });
        assert!(denied(decide(&closed, &formatter)).contains("cargo fmt"));
        assert_eq!(decide(&open, &formatter), Decision::Allow);
        assert!(
            denied(decide(&open, &shell(&[("b.rs", F)], &[], None))).contains("b.rs: not explored")
        );
        assert!(
            denied(decide(&open, &shell(&[("src/other", D)], &[], None))).contains("src/other")
        );
        // Restoring from HEAD what holds nothing uncommitted in the accepted tree, in any
        // state; never the user's uncommitted work, nor everything at once.
        assert_eq!(
            decide(&closed, &shell(&[("a.rs", H), ("src/x", H)], &[], None)),
            Decision::Allow
        );
        assert_eq!(
            decide(&open, &shell(&[("b.rs", H)], &[], None)),
            Decision::Allow
        );
        for path in ["user/notes.txt", "user", ""] {
            assert!(
                denied(decide(&closed, &shell(&[(path, H)], &[], None))).contains("no writes here")
            );
        }
        // Removing what HEAD does not hold (the hook found it new): the same rule. A
        // removal of anything else is a write.
        assert_eq!(
            decide(
                &closed,
                &shell(&[("__pycache__", N), ("src/.cache/x", N)], &[], None)
            ),
            Decision::Allow
        );
        for path in ["user/notes.txt", "user", ""] {
            assert!(
                denied(decide(&closed, &shell(&[(path, N)], &[], None))).contains("no writes here")
            );
        }
        assert!(
            denied(decide(&closed, &shell(&[("a.rs", R)], &[], None))).contains("no writes here")
        );
        assert!(
            denied(decide(&open, &shell(&[("b.rs", R)], &[], None))).contains("b.rs: not explored")
        );
        assert_eq!(
            decide(&open, &shell(&[("a.rs", R)], &[], None)),
            Decision::Allow
        );
        let Session::Active(mut legacy) = record(false, &[], None) else {
            unreachable!()
        };
        legacy.host.accepted_tree = None;
        assert!(
            decide(&Session::Active(legacy), &shell(&[("a.rs", H)], &[], None)) != Decision::Allow
        );
    }
}
