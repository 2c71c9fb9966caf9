//! Decision and outcome logs: JSON lines under `.code-intel/logs/`, one object per accepted
//! step, refusal, session event and recorded outcome, so a user can see afterwards why the
//! server decided what it did. Logging never fails a tool call: a log that cannot be
//! written is reported on stderr.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::machine::Accepted;
use crate::server::turn_recorder::Recorded;
use crate::session::{Stop, Turn};

pub(crate) const LOG_DIR: &str = ".code-intel/logs";

/// Seconds since the epoch.
pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The logs of one repository.
#[derive(Debug, Clone)]
pub(crate) struct Log {
    dir: PathBuf,
}

impl Log {
    pub(crate) fn new(root: &Path) -> Log {
        Log {
            dir: root.join(LOG_DIR),
        }
    }

    pub(crate) fn step(&self, session: &str, step: &Accepted) {
        self.append(
            "decisions.jsonl",
            &json!({
                "at": now(),
                "session": session,
                "event": "step",
                "from": step.from,
                "to": step.to,
                "limit_reached": step.limit_reached,
                "actions": step.effects.iter().map(|e| e.action.clone()).collect::<Vec<_>>(),
                "message": step.message.as_ref().map(|m| m.key.clone()),
            }),
        );
    }

    /// One driver turn, with everything a replay needs: the input (a start or a
    /// submission), the facts and action results the host gave, and where it ended.
    pub(crate) fn turn(&self, session: &str, input: &Value, recorded: &Recorded, turn: &Turn) {
        let stop = match &turn.stop {
            Stop::Waiting => json!({"waiting": true}),
            Stop::Finished(o) => json!({"finished": o.map(|o| format!("{o:?}").to_lowercase())}),
            Stop::Refused(r) => json!({"rejected": r.message.key}),
            Stop::ActionFailed(f) => {
                json!({"action_failed": f.failure.outcome, "action": f.action, "message": f.message.key})
            }
            Stop::CheckpointFailed(e) => json!({"checkpoint_failed": e.to_string()}),
            Stop::WrongContract { expected, found } => {
                json!({"wrong_contract": {"expected": expected, "found": found}})
            }
            Stop::EngineLoop { limit } => json!({"engine_loop": limit}),
        };
        self.append(
            "decisions.jsonl",
            &json!({
                "at": now(),
                "session": session,
                "event": "turn",
                "input": input,
                "facts": recorded.facts,
                "actions": recorded.actions,
                "state": turn.instance.state,
                "message": turn.steps.iter().rev().find_map(|s| s.message.as_ref().map(|m| m.key.clone())),
                "stop": stop,
            }),
        );
    }

    pub(crate) fn refusal(&self, session: &str, state: &str, key: &str) {
        self.append(
            "decisions.jsonl",
            &json!({"at": now(), "session": session, "event": "refused", "state": state, "message": key}),
        );
    }

    pub(crate) fn session(&self, session: &str, event: &str, details: &Value) {
        self.append(
            "decisions.jsonl",
            &json!({"at": now(), "session": session, "event": event, "details": details}),
        );
    }

    pub(crate) fn outcome(&self, session: &str, outcome: &str, notes: Option<&str>, request: &str) {
        self.append(
            "outcomes.jsonl",
            &json!({"at": now(), "session": session, "outcome": outcome, "notes": notes, "request": request}),
        );
    }

    fn append(&self, file: &str, entry: &Value) {
        let path = self.dir.join(file);
        let written = (|| {
            let mut f = crate::codeintel::state_dir::open_in_place(
                &path,
                std::fs::OpenOptions::new().create(true).append(true),
            )?;
            // One write per line, so concurrent appenders never interleave inside a line.
            f.write_all(format!("{entry}\n").as_bytes())
        })();
        if let Err(e) = written {
            tracing::warn!("cannot write {}: {e}", path.display());
        }
    }
}
