//! The session tools besides the start and the turn (`start`, `turn`):
//! `get_session_status` and `record_outcome`, what a finished session teaches the Map, and
//! the project context a session starts with.

use serde_json::{Map, Value, json};

use crate::git;
use crate::machine::Instance;
use crate::machine::response::phase_response;
use crate::server::agreement::session_evidence;
use crate::server::args::{ClaimedOutcome, OutcomeArgs};
use crate::server::host::{RESOLVE_STALE_ACTION, stale_branch_report};
use crate::server::reply::Reply;
use crate::server::semantic_tools::SUMMARIES_FILE;
use crate::server::session_record::SessionRecord;
use crate::source::Sources;
use crate::yaml;

use super::{Server, State, checkpoint_refusal, git_refusal, no_session, parse};

impl Server {
    pub(crate) fn status(&self, state: &mut State) -> Reply {
        if state.active.is_none() {
            match self.recoverable() {
                Err(e) => return checkpoint_refusal(&e),
                Ok(Some(record)) => return self.resume(state, record),
                Ok(None) => {
                    return no_session();
                }
            }
        }
        match state.active.as_ref() {
            Some(active) => self.status_reply(&active.record, None),
            None => no_session(),
        }
    }

    pub(super) fn status_reply(&self, record: &SessionRecord, message: Option<Value>) -> Reply {
        let phase = phase_response(&self.contract, &record.instance);
        let mut reply = Reply::ok(json!({"session_id": record.id}))
            .with_phase(&phase, record.compaction_count)
            .with("phase_summaries", summaries(&record.instance))
            .with(
                "tasks",
                json!(
                    record
                        .instance
                        .tasks
                        .iter()
                        .map(|t| t.to_value())
                        .collect::<Vec<_>>()
                ),
            )
            .with("explored_files", json!(record.host.explored))
            .with("tools_called", json!(record.tools_called))
            .with("request", record.request.clone());
        if let Some(outcome) = &record.outcome {
            reply = reply
                .with("session_complete", true)
                .with("outcome", outcome.clone());
        }
        if let Some(m) = message {
            reply = reply.with("message", m);
        }
        // Status is what an agent asks for after losing its context, and resume is a new
        // start: both carry the compaction protocol again.
        let reply = self.with_footer(reply, &record.instance);
        self.with_stale_branches(reply, record)
    }

    /// In a state whose submission resolves stale task branches (the contract runs
    /// [`RESOLVE_STALE_ACTION`] on leaving it), the answer shows those branches: the user
    /// chooses knowing each one's base, age and the commits it would keep or lose.
    pub(super) fn with_stale_branches(&self, reply: Reply, record: &SessionRecord) -> Reply {
        let Some(id) = self.contract.state_id(&record.instance.state) else {
            return reply;
        };
        let resolves = self
            .contract
            .state(id)
            .all_transitions()
            .any(|t| t.actions.iter().any(|a| a.name == RESOLVE_STALE_ACTION));
        if !resolves {
            return reply;
        }
        let own = record.host.branch.as_ref().map(|b| b.name.as_str());
        let report = stale_branch_report(&self.root, own)
            .unwrap_or_else(|e| json!({"error": e.to_string()}));
        reply.with("stale_branches", report)
    }

    pub(crate) fn record_outcome(&self, state: &mut State, args: Map<String, Value>) -> Reply {
        let a: OutcomeArgs = match parse(args) {
            Ok(a) => a,
            Err(reply) => return reply,
        };
        let Some(active) = state.active.as_mut() else {
            return no_session();
        };
        let record = &mut active.record;
        let outcome = a.outcome.as_str();
        self.log
            .outcome(&record.id, outcome, a.notes.as_deref(), &record.request);
        let mut branch_deleted = None;
        let mut branch_kept = None;
        // A branch with commits no other branch has holds work (the agent's commit, and
        // the user's uncommitted files it carried): it is kept, and the user decides.
        if a.outcome != ClaimedOutcome::Success
            && let Some(branch) = record.host.branch.clone()
            && let Ok(unmerged) =
                git::open(self.root.path()).and_then(|repo| repo.unmerged_work(&branch))
            && unmerged > 0
        {
            branch_kept = Some(json!({
                "name": branch.name,
                "unmerged_commits": unmerged,
                "note": self.render("notes.branch_kept", &[], &record.instance).text,
            }));
        } else if a.outcome != ClaimedOutcome::Success
            && let Some(branch) = record.host.branch.take()
        {
            // A failed task's branch goes; uncommitted work is carried to the base, never
            // overwritten (the deletion refuses instead).
            match git::open(self.root.path()).and_then(|repo| repo.delete_task_branch(&branch)) {
                Ok(_) => branch_deleted = Some(branch.name.clone()),
                Err(e) => {
                    record.host.branch = Some(branch);
                    return git_refusal(&e).with("files", e.files().to_vec());
                }
            }
        }
        // A success teaches the Map: this request was answered by these symbols and files
        // (the ones named here first, then the session's own evidence). Only once the flow
        // itself ended in success: a claim of success in a session still running, or one
        // that failed, teaches nothing (a Map hit answers without searching further).
        let mut agreement = Value::Null;
        if a.outcome == ClaimedOutcome::Success && record.outcome.as_deref() == Some("success") {
            agreement = self.learn(record, a.related_symbols.clone(), a.notes.clone());
        }
        if a.outcome != ClaimedOutcome::Success && !record.finished() {
            // The session ends when its checkpoint and pointer are gone (the write hook
            // enforces what is on disk); if they cannot go, it has not ended.
            let ended = self
                .checkpoints
                .remove(&record.id)
                .and_then(|()| self.checkpoints.set_current(None));
            if let Err(e) = ended {
                // The session goes on: its checkpoint is written again, so that disk and
                // memory agree (on a deleted task branch too) as far as the disk allows.
                if let Ok(on_disk) = self.checkpoints.save_owned(record.clone()) {
                    *record = on_disk;
                }
                return Reply::say(
                    e.key(),
                    "session.outcome_unsaved",
                    format!(
                        "the outcome was not recorded, because the session could not be ended: {e}"
                    ),
                )
                .with("saved", false)
                .with("branch_deleted", branch_deleted);
            }
            record.outcome = Some(outcome.to_string());
            active.lock = None;
        }
        Reply::ok(
            json!({"recorded": outcome, "session_id": active.record.id, "branch_deleted": branch_deleted, "branch_kept": branch_kept, "agreement": agreement}),
        )
    }

    /// Records in the Map that `record`'s request was answered by `named` symbols and by
    /// the symbols and files of the session's own evidence ([`session_evidence`]). The
    /// answer says what was recorded, `null` when there was nothing to record, or the error
    /// (a Map that cannot be written does not undo a finished session).
    pub(super) fn learn(
        &self,
        record: &SessionRecord,
        named: Vec<String>,
        notes: Option<String>,
    ) -> Value {
        let evidence = session_evidence(&self.root, record);
        let mut symbols = named;
        for symbol in evidence.symbols {
            if !symbols.contains(&symbol) {
                symbols.push(symbol);
            }
        }
        if symbols.is_empty() && evidence.files.is_empty() {
            return Value::Null;
        }
        // The last summary says what the session did: what a later search is told.
        let notes = notes.or_else(|| record.instance.summaries.last().map(|s| s.text.clone()));
        let recorded = self.code.semantic.record_agreement(
            &record.request,
            symbols.clone(),
            evidence.files.clone(),
            notes,
        );
        let answer = match recorded {
            Ok(()) => json!({"query": record.request, "symbols": symbols, "files": evidence.files}),
            Err(e) => json!({"error": e.to_string()}),
        };
        self.log.session(&record.id, "agreement", &answer);
        answer
    }

    /// The project context for the document research, from `.code-intel/context.yml`:
    /// its `project_rules`, `doc_research` (prompts, document globs) and
    /// `document_search`, or why it could not be read. `null` when there is no file.
    pub(super) fn project_context(&self) -> Value {
        let path = self.root.path().join(CONTEXT_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Value::Null,
            Err(e) => return json!({"error": format!("{CONTEXT_FILE}: {e}")}),
        };
        let mut sources = Sources::default();
        let file = sources.add(CONTEXT_FILE, text.clone());
        match yaml::parse(file, &text) {
            Ok((node, _)) => {
                let value = node.to_json();
                let mut context = Map::new();
                for key in ["project_rules", "doc_research", "document_search"] {
                    context.insert(key.into(), value.get(key).cloned().unwrap_or(Value::Null));
                }
                context.insert("source".into(), Value::String(CONTEXT_FILE.into()));
                // What update_context saved in earlier sessions.
                let summaries = std::fs::read(self.root.path().join(SUMMARIES_FILE))
                    .ok()
                    .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
                if let Some(summaries) = summaries {
                    context.insert("summaries".into(), summaries);
                }
                Value::Object(context)
            }
            Err(d) => {
                let at = d
                    .span
                    .map(|s| format!("{}:{}", s.start.line, s.start.col))
                    .unwrap_or_default();
                json!({"error": format!("{CONTEXT_FILE}:{at}: {}", d.message)})
            }
        }
    }
}

/// The project context file `code-intel init` writes.
const CONTEXT_FILE: &str = ".code-intel/context.yml";

/// The phase summaries of the session, by key.
pub(super) fn summaries(instance: &Instance) -> Value {
    let map: Map<String, Value> = instance
        .summaries
        .iter()
        .map(|s| (s.key.clone(), Value::String(s.text.clone())))
        .collect();
    Value::Object(map)
}
