//! The write decision, a pure function of what the hook found: the session (none, one it
//! cannot read, or its sealed record) and the write's targets, already resolved against
//! the repository root. No IO here; `super` gathers the data.

use crate::server::record::SessionRecord;

/// The session in progress in the repository, as far as the hook can tell.
#[derive(Debug)]
pub enum Session {
    /// No `current.json`: nothing to enforce.
    None,
    /// A session exists but its checkpoint cannot be trusted or read: the reason.
    Unreadable(String),
    Active(Box<SessionRecord>),
}

/// What a tool call is about to write, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Targets {
    /// Not a write tool.
    Nothing,
    /// A write tool whose input does not say what it writes: the reason.
    Unknown(String),
    Paths(Vec<Target>),
}

/// The hook's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny(String),
}

pub use crate::server::paths::Target;
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
pub fn decide(session: &Session, targets: &Targets) -> Decision {
    if *targets == Targets::Nothing {
        return Decision::Allow;
    }
    let record = match session {
        Session::None => return Decision::Allow,
        Session::Active(record) if record.finished() => return Decision::Allow,
        Session::Unreadable(reason) => {
            return Decision::Deny(format!(
                "code-intel cannot read the session in progress, so no file may be written until it can: {reason}"
            ));
        }
        Session::Active(record) => record,
    };
    decide_in_session(record, targets)
}

/// The decision for an unfinished session's record: the rule the hook and the server's
/// `check_write_target` share.
pub fn decide_in_session(record: &SessionRecord, targets: &Targets) -> Decision {
    let paths = match targets {
        Targets::Unknown(reason) => {
            return Decision::Deny(format!(
                "code-intel refuses this write: {reason}; write each file with a patch that names it"
            ));
        }
        Targets::Paths(paths) => paths,
        Targets::Nothing => return Decision::Allow,
    };
    let outside: Vec<&str> = paths
        .iter()
        .filter_map(|t| match t {
            Target::Outside(given) => Some(given.as_str()),
            Target::Inside(_) => None,
        })
        .collect();
    if !outside.is_empty() {
        return Decision::Deny(format!(
            "{} is outside the repository; code-intel allows writes inside it only",
            outside.join(", ")
        ));
    }
    let inside: Vec<&str> = paths
        .iter()
        .filter_map(|t| match t {
            Target::Inside(rel) => Some(rel.as_str()),
            Target::Outside(_) => None,
        })
        .collect();
    let reserved: Vec<&str> = inside
        .iter()
        .copied()
        .filter(|rel| is_reserved(rel))
        .collect();
    if !reserved.is_empty() {
        return Decision::Deny(format!(
            "{}: .git/ (git's own files and hooks) and .code-intel/ (code-intel's session state) are never written by an agent",
            reserved.join(", ")
        ));
    }
    let gate = &record.write_gate;
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
    use crate::server::record::{HostState, RECORD_VERSION, WriteGate};

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
                &Session::Unreadable("tampered".into()),
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
        for reserved in [".git/config", ".git/hooks/pre-commit", "sub/.git/HEAD"] {
            let explored = record(true, &[reserved], None);
            assert!(
                denied(decide(&explored, &paths(&[inside(reserved)]))).contains(reserved),
                "{reserved} is never written, even when explored"
            );
        }
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
    }
}
