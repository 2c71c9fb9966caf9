//! A turn of the session driver: `submit_phase` (with the check of the working tree
//! first), running the driver with this server's host and checkpoint store, and adopting
//! the turn it ends with into the active session (`finish_turn`).

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::{Map, Value, json};

use crate::machine::Accepted;
use crate::machine::response::{PhaseResponse, phase_response, role_message};
use crate::server::args::SubmitArgs;
use crate::server::host::{CodeIntelHost, RESOLVE_STALE_ACTION};
use crate::server::log::now;
use crate::server::reply::Reply;
use crate::server::session_record::{HostState, SessionRecord};
use crate::server::turn_recorder::{Recorded, Recorder};
use crate::server::worktree;
use crate::session::{Driver, Stop, Turn};

use super::sessions::summaries;
use super::{
    Active, RecordStore, Server, State, checkpoint_key, git_refusal, no_session, parse, write_gate,
};

/// The outcome of a session that ended well (`Stop::Finished`'s, lower-cased).
const SUCCESS: &str = "success";

impl Server {
    pub(crate) fn submit(&self, state: &mut State, args: Map<String, Value>) -> Reply {
        let a: SubmitArgs = match parse(args) {
            Ok(a) => a,
            Err(reply) => return reply,
        };
        let Some(active) = state.active.as_mut() else {
            return no_session();
        };
        if let Some(outcome) = &active.record.outcome {
            // Ended, possibly by record_outcome in a phase that is not final: no more steps.
            let m = role_message(
                &self.contract,
                "session_finished",
                &[("state", json!(outcome))],
                &active.record.instance.locale,
            );
            return Reply::refused(&m);
        }
        let mut payload = a.data;
        let received_count = match payload.remove("compaction_count") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) if n.as_u64().is_some() => n.as_u64(),
            Some(other) => {
                return Reply::error(
                    "session.invalid_compaction_count",
                    format!("compaction_count must be a non-negative integer, not {other}"),
                )
                .args(&[("value", json!(other.to_string()))])
                .with_phase(
                    &phase_response(&self.contract, &active.record.instance),
                    active.record.compaction_count,
                );
            }
        };
        let mismatch = received_count.filter(|c| *c != active.record.compaction_count);
        // Whatever wrote to the working tree (the client's editor, a shell command, a
        // script), the tree is checked before the step: the hooks only see some writes.
        if let Err(reply) = self.check_tree(&active.record) {
            return reply;
        }
        let tools_called = active.record.tools_called.clone();
        let instance = active.record.instance.clone();
        let shared = Rc::new(RefCell::new(active.record.host.clone()));
        let branch_before = active.record.host.branch.as_ref().map(|b| b.name.clone());
        let input = json!({"submit": payload, "tools": tools_called});
        let (turn, recorded) = self.drive(&mut active.record, &shared, |driver, host, store| {
            driver.submit(host, store, instance, Value::Object(payload), tools_called)
        });
        self.log.turn(&active.record.id, &input, &recorded, &turn);
        // What the user's choice about stale branches did: deleted (with the commits only
        // they had), merged, checked out, or the branch this session took over.
        let resolved = recorded
            .actions
            .iter()
            .find(|a| a["action"] == RESOLVE_STALE_ACTION)
            .and_then(|a| a.get("result"))
            .cloned();
        let reply = self.finish_turn(state, turn, shared, mismatch, branch_before);
        match resolved {
            Some(result) if !reply.is_error => reply.with("stale_branches_resolved", result),
            _ => reply,
        }
    }

    /// The check of the working tree at a submission (`server::worktree`), or the
    /// refusal naming the files: in a state that allows writes every changed file must be
    /// explored or added; in any other, the tree must be as the server last accepted it.
    fn check_tree(&self, record: &SessionRecord) -> Result<(), Reply> {
        let gate = write_gate(&self.contract, &record.instance);
        let verdict = worktree::check(self.root.path(), &record.host, gate.writes_allowed)
            .map_err(|e| git_refusal(&e))?;
        if verdict.is_clean() {
            return Ok(());
        }
        let instance = &record.instance;
        let phase = phase_response(&self.contract, instance);
        let reply = if !verdict.unexplored.is_empty() {
            let files = json!(verdict.unexplored);
            Reply::refused(&self.render(
                "worktree.unexplored_changes",
                &[("files", files.clone())],
                instance,
            ))
            .with("files", files)
        } else {
            let files: Vec<&str> = verdict.changed.iter().map(|r| r.path()).collect();
            let restore: Vec<String> = verdict.changed.iter().filter_map(|r| r.command()).collect();
            let by_hand: Vec<&str> = verdict
                .changed
                .iter()
                .filter(|r| r.command().is_none())
                .map(|r| r.path())
                .collect();
            let uncommitted = |instance| {
                self.render(
                    "worktree.uncommitted_changed",
                    &[("files", json!(by_hand))],
                    instance,
                )
            };
            let mut message = if restore.is_empty() {
                uncommitted(instance)
            } else {
                self.render(
                    "worktree.changed_without_writes",
                    &[
                        ("phase", json!(phase.phase)),
                        ("files", json!(files)),
                        ("restore", json!(restore.join("; "))),
                    ],
                    instance,
                )
            };
            if !by_hand.is_empty() && !restore.is_empty() {
                let extra = uncommitted(instance);
                message.text = format!("{} {}", message.text, extra.text);
                message.user_intervention |= extra.user_intervention;
            }
            Reply::refused(&message)
                .with("files", json!(files))
                .with("restore", json!(restore))
        };
        let key = reply
            .body
            .get("message_key")
            .and_then(Value::as_str)
            .unwrap_or_default();
        self.log.refusal(&record.id, &instance.state, key);
        Err(reply.with_phase(&phase, record.compaction_count))
    }

    /// Runs the session driver on `record` with this server's host and checkpoint store.
    /// The two share `shared` (the host state), so what an action records is saved with
    /// the step it belongs to.
    pub(super) fn drive<T>(
        &self,
        record: &mut SessionRecord,
        shared: &Rc<RefCell<HostState>>,
        run: impl FnOnce(&Driver<'_>, &mut Recorder<'_, CodeIntelHost<'_>>, &mut RecordStore<'_>) -> T,
    ) -> (T, Recorded) {
        let session_id = record.id.clone();
        let mut host = CodeIntelHost {
            root: &self.root,
            session_id: &session_id,
            state: Rc::clone(shared),
            key: self.checkpoints.key(),
        };
        let mut store = RecordStore::new(
            &self.contract,
            self.root.path(),
            &self.checkpoints,
            record,
            Rc::clone(shared),
        );
        let mut recorder = Recorder {
            inner: &mut host,
            recorded: Recorded::default(),
        };
        let out = run(&Driver::new(&self.contract), &mut recorder, &mut store);
        (out, recorder.recorded)
    }

    /// Adopts a driver turn into the active session and answers with it.
    pub(super) fn finish_turn(
        &self,
        state: &mut State,
        turn: Turn,
        shared: Rc<RefCell<HostState>>,
        compaction_mismatch: Option<u64>,
        branch_before: Option<String>,
    ) -> Reply {
        let Some(active) = state.active.as_mut() else {
            return no_session();
        };
        // The turn goes into a copy of the record, adopted once saved. The store adopted
        // every step it saved; a step it could not save leaves the record where it was.
        let saved = !matches!(turn.stop, Stop::CheckpointFailed(_));
        let mut next = active.record.clone();
        let record = &mut next;
        if saved {
            record.instance = turn.instance.clone();
            record.host = shared.borrow().clone();
        }
        let new_branch = self.new_branch(branch_before.as_deref(), record);
        for step in &turn.steps {
            self.log.step(&record.id, step);
        }
        let message = turn
            .steps
            .iter()
            .rev()
            .find_map(|s: &Accepted| s.message.as_ref())
            .map(|m| json!({"key": m.key, "text": m.text}));
        let phase = phase_response(&self.contract, &record.instance);
        let mut summaries_due = false;
        if let Some(count) = compaction_mismatch {
            // The agent lost context: it gets the summaries whether or not this
            // submission was accepted (a refusal is the likely answer right then).
            record.compaction_count = count;
            summaries_due = true;
        }
        let reply = self.stop_reply(turn.stop, record, &phase, message);
        let mut reply = if summaries_due {
            // The agent lost its context: the protocol comes again with the summaries.
            self.with_footer(
                reply.with("phase_summaries", summaries(&record.instance)),
                &record.instance,
            )
        } else {
            reply
        };
        if let Some(branch) = new_branch {
            reply = reply.with("task_branch", branch);
        }
        // A session that ended in success this turn teaches the Map what answered it.
        if next.outcome.as_deref() == Some(SUCCESS) && !active.record.finished() {
            reply = reply.with("agreement", self.learn(&next, Vec::new(), None));
        }
        if let Err(unsaved) = self.adopt(active, next, saved) {
            return unsaved;
        }
        self.with_stale_branches(reply, &active.record)
    }

    /// A task branch created (or adopted) in this turn is announced, with the uncommitted
    /// files it carried over: the user's work moved, and they should know.
    fn new_branch(&self, branch_before: Option<&str>, record: &SessionRecord) -> Option<Value> {
        match (branch_before, &record.host.branch) {
            (None, Some(b)) => Some(json!({
                "name": b.name,
                "base_branch": b.base_branch,
                "base_commit": b.base_commit,
                "carried_uncommitted_files": record.host.carried,
                "note": if record.host.carried.is_empty() {
                    self.render("notes.task_branch", &[], &record.instance).text
                } else {
                    self.render(
                        "notes.task_branch_carried",
                        &[("count", json!(record.host.carried.len()))],
                        &record.instance,
                    )
                    .text
                },
            })),
            _ => None,
        }
    }

    /// The answer for how the turn stopped: waiting for the agent, finished (recorded in
    /// `record`), refused, or failed.
    fn stop_reply(
        &self,
        stop: Stop,
        record: &mut SessionRecord,
        phase: &PhaseResponse,
        message: Option<Value>,
    ) -> Reply {
        match stop {
            Stop::Waiting => {
                let mut reply = Reply::ok(json!({})).with_phase(phase, record.compaction_count);
                if let Some(m) = message {
                    reply = reply.with("message", m);
                }
                reply
            }
            Stop::Finished(outcome) => {
                let outcome =
                    outcome.map_or("finished".to_string(), |o| format!("{o:?}").to_lowercase());
                record.outcome = Some(outcome.clone());
                self.log
                    .session(&record.id, "finished", &json!({"outcome": outcome}));
                let mut reply = Reply::ok(json!({"session_complete": true, "outcome": outcome}))
                    .with_phase(phase, record.compaction_count);
                if let Some(m) = message {
                    reply = reply.with("message", m);
                }
                reply
            }
            Stop::Refused(rejection) => {
                self.log
                    .refusal(&record.id, &record.instance.state, &rejection.message.key);
                Reply::refused(&rejection.message)
                    .with_phase(&rejection.response, record.compaction_count)
            }
            Stop::ActionFailed(failed) => {
                self.log
                    .refusal(&record.id, &record.instance.state, &failed.message.key);
                Reply::refused(&failed.message)
                    .with("action", failed.action.clone())
                    .with("details", Value::Object(failed.failure.args.clone()))
                    .with_phase(phase, record.compaction_count)
            }
            Stop::CheckpointFailed(e) => Reply::say(
                checkpoint_key(&e),
                "session.submission_unsaved",
                format!(
                    "the submission was not accepted, because the session could not be saved: {e}; the session stays where it was"
                ),
            )
            .with("saved", false)
            .with_phase(phase, record.compaction_count),
            Stop::WrongContract { expected, found } => Reply::error(
                "session.wrong_contract",
                format!(
                    "the session was started under the contract `{found}`, this server runs `{expected}`; start a new session with clean: true"
                ),
            )
            .args(&[("found", json!(found)), ("expected", json!(expected))]),
            Stop::EngineLoop { limit } => Reply::error(
                "session.engine_loop",
                format!(
                    "the contract's engine states ran {limit} steps without waiting for an agent"
                ),
            )
            .args(&[("limit", json!(limit))]),
        }
    }

    /// `next` becomes the active session's record. A finished session's checkpoint and
    /// pointer go and its lock is released; otherwise what finishing changed is saved
    /// first, and the refusal when it cannot be is the answer.
    fn adopt(
        &self,
        active: &mut Active,
        mut next: SessionRecord,
        saved: bool,
    ) -> Result<(), Reply> {
        if next.finished() {
            // The session is over: its checkpoint and pointer go, the lock is released.
            let removed = self
                .checkpoints
                .remove(&next.id)
                .and_then(|()| self.checkpoints.set_current(None));
            if let Err(e) = removed {
                // What cannot be removed is overwritten with the finished record, which
                // the write hook and a restart read as over too.
                tracing::warn!("the finished session's checkpoint stays: {e}");
                let _ = self.checkpoints.save(&next);
            }
            active.lock = None;
            active.record = next;
        } else if saved && next != active.record {
            // The store saved each step; what finishing changed (compaction count, host
            // state of a failed effect) is saved too before it counts.
            next.updated_at = now();
            match self.checkpoints.save_owned(next) {
                Ok(on_disk) => active.record = on_disk,
                Err(e) => {
                    return Err(Reply::say(
                        e.key(),
                        "session.unsaved",
                        format!("the session could not be saved: {e}; it stays where it was"),
                    )
                    .with("saved", false));
                }
            }
        }
        Ok(())
    }
}
