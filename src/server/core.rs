//! The server's decisions, independent of MCP: one [`Server`] per repository answers
//! tool calls by name with JSON. It owns the active session (its record, its lock), gates
//! every tool through the contract, records what the agent called and saw, runs the
//! session driver for `start_session` and `submit_phase`, and checkpoints every change.
//! `service` adapts it to rmcp; tests may call it directly.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::Path;
use std::rc::Rc;
use std::sync::{Mutex, PoisonError};

use serde_json::{Map, Value, json};

use super::args::{
    AddExploredArgs, EmptyArgs, Outcome, OutcomeArgs, StartArgs, SubmitArgs, WriteTargetArgs,
};
use super::checkpoint::{CheckpointError, Checkpoints, SealKey, new_session_id};
use super::code_tools::{CodeTools, ToolError, paths_in};
use super::git;
use super::host::{CodeIntelHost, check_explorable, seen_paths};
use super::index_cache::{ChangeSource, IndexCache};
use super::log::{Log, now};
use super::record::{HostState, RECORD_VERSION, SessionRecord, WriteGate};
use super::reply::Reply;
use super::session_lock::{Holder, LockError, SessionLock};
use super::tools::{self, ToolKind};
use crate::codeintel::root::Root;
use crate::contract::Contract;
use crate::contract::raw::StateKind;
use crate::machine::response::{message, phase_response, role_message};
use crate::machine::tools::{ToolGate, gate};
use crate::machine::{Accepted, Instance};
use crate::session::{CheckpointStore, Driver, Stop, Turn};
use crate::source::Sources;
use crate::yaml;

/// The server for one repository.
pub struct Server {
    root: Root,
    code: CodeTools,
    contract: Contract,
    checkpoints: Checkpoints,
    log: Log,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    active: Option<Active>,
    /// The MCP client's name, for the lock holder.
    client: String,
}

/// The session this server runs, and the lock that makes it the only one.
struct Active {
    record: SessionRecord,
    /// Released when the session ends or the server stops.
    lock: Option<SessionLock>,
}

impl Server {
    /// A server for the repository at `root` running `contract` (a code-intel contract).
    pub fn new(root: &Path, contract: Contract, key: SealKey) -> Result<Server, String> {
        let root = Root::open(root).map_err(|e| e.to_string())?;
        if contract.registry.host != "code-intel" {
            return Err(format!(
                "the contract `{}` is for the host `{}`, not code-intel",
                contract.name, contract.registry.host
            ));
        }
        ensure_gitignore(root.path()).map_err(|e| {
            format!(
                "cannot write {}: {e}",
                root.path().join(GITIGNORE).display()
            )
        })?;
        let checkpoints = Checkpoints::new(root.path(), key);
        let log = Log::new(root.path());
        let code = CodeTools {
            root: root.clone(),
            index: IndexCache::start(root.clone(), ChangeSource::from_env()),
        };
        Ok(Server {
            root,
            code,
            contract,
            checkpoints,
            log,
            state: Mutex::new(State::default()),
        })
    }

    pub fn contract(&self) -> &Contract {
        &self.contract
    }

    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// While the symbol index is first built: files tagged so far and files to tag.
    pub fn index_building(&self) -> Option<(usize, usize)> {
        self.code.index.building()
    }

    /// Remembers the client's name (from MCP `initialize`).
    pub fn set_client(&self, name: &str) {
        self.lock_state().client = name.to_string();
    }

    fn lock_state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Answers one tool call.
    pub fn call(&self, tool: &str, args: Map<String, Value>) -> Reply {
        let Some(spec) = tools::find(tool) else {
            return Reply::error("unknown_tool", format!("there is no tool `{tool}`"));
        };
        let mut state = self.lock_state();
        match spec.kind {
            ToolKind::StartSession => self.start_session(&mut state, args),
            ToolKind::Status => self.status(&mut state),
            ToolKind::Submit => self.submit(&mut state, args),
            ToolKind::RecordOutcome => self.record_outcome(&mut state, args),
            ToolKind::Code | ToolKind::Control => {
                if let Err(refusal) = self.gate(&state, tool) {
                    return refusal;
                }
                let reply = match spec.kind {
                    ToolKind::Code => {
                        // Code tools read the repository only: run them without holding
                        // the session, so parallel calls do not queue behind each other.
                        drop(state);
                        let reply = self.code_tool(tool, args);
                        state = self.lock_state();
                        reply
                    }
                    _ => self.control_tool(&mut state, tool, args),
                };
                if !reply.is_error {
                    self.note_success(&mut state, tool, &reply.body);
                }
                reply
            }
        }
    }

    /// Refuses a tool the current phase does not allow (no refusal outside a session).
    fn gate(&self, state: &State, tool: &str) -> Result<(), Reply> {
        let Some(active) = state.active.as_ref().filter(|a| !a.record.finished()) else {
            return Ok(());
        };
        let instance = &active.record.instance;
        let refused = match gate(&self.contract, instance, tool) {
            ToolGate::Allowed => return Ok(()),
            ToolGate::Unknown => {
                return Err(Reply::error(
                    "unknown_tool",
                    format!("`{tool}` is not a tool of this server"),
                ));
            }
            ToolGate::UnknownState { state } => self.render(
                "tool_errors.gate.not_allowed",
                &[
                    ("tool", json!(tool)),
                    ("phase", json!(state)),
                    ("allowed", json!([])),
                ],
                instance,
            ),
            ToolGate::NotAllowedHere { phase, allowed, .. } => self.render(
                "tool_errors.gate.not_allowed",
                &[
                    ("tool", json!(tool)),
                    ("phase", json!(phase)),
                    ("allowed", json!(allowed)),
                ],
                instance,
            ),
        };
        let phase = phase_response(&self.contract, instance);
        Err(Reply::refused(&refused)
            .with(
                "hint",
                self.render("hints.phase_blocked_hint", &[], instance).text,
            )
            .with_phase(&phase, active.record.compaction_count))
    }

    fn render(
        &self,
        key: &str,
        args: &[(&str, Value)],
        instance: &Instance,
    ) -> crate::machine::response::RenderedMessage {
        let args: Map<String, Value> = args
            .iter()
            .map(|(k, v)| ((*k).to_string(), v.clone()))
            .collect();
        message(&self.contract, key, &args, &instance.locale)
    }

    /// After a gated tool succeeded: it counts as called in this phase, and the paths
    /// its answer showed count as seen. Saved at once, so a restart keeps the evidence.
    fn note_success(&self, state: &mut State, tool: &str, body: &Value) {
        let Some(active) = state.active.as_mut().filter(|a| !a.record.finished()) else {
            return;
        };
        let record = &mut active.record;
        record.note_tool_call(tool);
        let mut seen = BTreeSet::new();
        paths_in(body, &mut seen);
        if tool == "search_files"
            && let Some(items) = body.get("items").and_then(Value::as_array)
        {
            seen.extend(items.iter().filter_map(Value::as_str).map(str::to_string));
        }
        record.host.seen_paths.extend(seen);
        record.updated_at = now();
        if let Err(e) = self.checkpoints.save(record) {
            tracing::error!("checkpoint after {tool} failed: {e}");
        }
    }

    fn code_tool(&self, tool: &str, args: Map<String, Value>) -> Reply {
        match self.code.call(tool, args) {
            Ok(Some(body)) => Reply::ok(body),
            Ok(None) => Reply::error("unknown_tool", format!("`{tool}` is not a code tool")),
            Err(ToolError::Arguments(message)) => Reply::error("invalid_arguments", message),
            Err(ToolError::Tool(e)) => Reply::error(e.key(), e.to_string()),
        }
    }

    fn control_tool(&self, state: &mut State, tool: &str, args: Map<String, Value>) -> Reply {
        match tool {
            "check_write_target" => self.check_write_target(state, args),
            "add_explored_files" => self.add_explored_files(state, args),
            "review_changes" => self.review_changes(state, args),
            "cleanup_stale_branches" => self.cleanup_stale_branches(state, args),
            other => Reply::error("unknown_tool", format!("`{other}` is not a control tool")),
        }
    }

    // --- sessions -----------------------------------------------------------------

    fn start_session(&self, state: &mut State, args: Map<String, Value>) -> Reply {
        let mut a: StartArgs = match parse(args) {
            Ok(a) => a,
            Err(reply) => return reply,
        };
        // `/code --resume` and `/code --clean` arrive as flags typed by the user; they are
        // the server's options, not the contract's (unless the contract declares them).
        if let Some(text) = a.flags.take() {
            let (flags, resume, clean) = session_options(&self.contract, &text);
            a.flags = Some(flags);
            a.resume |= resume;
            a.clean |= clean;
        }
        let mut cleaned = Value::Null;
        if a.clean {
            match self.clean(state) {
                Ok(c) => cleaned = c,
                Err(reply) => return reply,
            }
        } else if let Some(active) = state.active.as_ref().filter(|a| !a.record.finished()) {
            if a.resume {
                return self.status_reply(&active.record, None);
            }
            return Reply::error(
                "session.active",
                format!(
                    "session {} is active (phase {}); continue it (get_session_status), or start over with clean: true",
                    active.record.id, active.record.instance.state
                ),
            );
        } else {
            match self.recoverable() {
                Err(e) => {
                    return Reply::error(e.key(), e.to_string()).with(
                        "hint",
                        "start_session with clean: true discards the unreadable session",
                    );
                }
                Ok(Some(record)) if a.resume => return self.resume(state, record),
                Ok(Some(record)) => {
                    return Reply::ok(json!({
                        "started": false,
                        "recoverable_session": recoverable(&record),
                        "message": self.render("session.checkpoint_recovery", &[], &record.instance).text,
                    }));
                }
                Ok(None) if a.resume => {
                    return Reply::error(
                        "session.nothing_to_resume",
                        "there is no unfinished session to resume",
                    );
                }
                Ok(None) => {}
            }
        }
        // Task branches and the baseline of changes need a repository with a checked-out
        // branch: a detached HEAD, an unborn branch, a bare or missing repository is
        // refused now, with what to do, rather than at the first commit.
        if let Err(e) = git::open(self.root.path()).and_then(|repo| repo.baseline()) {
            return Reply::error(e.key(), e.to_string());
        }
        let id = match new_session_id() {
            Ok(id) => id,
            Err(e) => return Reply::error(e.key(), e.to_string()),
        };
        let lock = match self.take_lock(state, &id) {
            Ok(lock) => lock,
            Err(reply) => return reply,
        };
        let mut params = Map::new();
        params.insert("request".into(), Value::String(a.query.clone()));
        let flag_text = a.flags.clone().unwrap_or_default();
        let placeholder = match Instance::start(
            &self.contract,
            Default::default(),
            a.intent.as_deref(),
            a.locale.as_deref(),
            &params,
        ) {
            Ok(i) => i,
            Err(e) => return Reply::error(e.key(), e.to_string()),
        };
        let created = now();
        let mut record = SessionRecord {
            version: RECORD_VERSION,
            id: id.clone(),
            created_at: created,
            updated_at: created,
            request: a.query,
            flag_text: flag_text.clone(),
            instance: placeholder,
            compaction_count: 0,
            tools_called: Vec::new(),
            tool_history: Default::default(),
            host: HostState {
                start: git::open(self.root.path())
                    .and_then(|repo| repo.baseline())
                    .ok(),
                ..HostState::default()
            },
            outcome: None,
            write_gate: Default::default(),
        };
        let shared = Rc::new(RefCell::new(record.host.clone()));
        let driver = Driver::new(&self.contract);
        let turn = {
            let mut host = CodeIntelHost {
                root: &self.root,
                session_id: &id,
                state: shared.clone(),
                key: self.checkpoints.key(),
            };
            let mut store = RecordStore::new(
                &self.contract,
                &self.checkpoints,
                &mut record,
                shared.clone(),
            );
            let started = driver.start(
                &mut host,
                &mut store,
                &flag_text,
                a.intent.as_deref(),
                a.locale.as_deref(),
                &params,
            );
            match started {
                Ok(turn) => turn,
                Err(e) => {
                    let key = match &e {
                        crate::session::StartFailure::Flags(f) => f.key(),
                        crate::session::StartFailure::Start(s) => s.key(),
                    };
                    return Reply::error(key, e.to_string());
                }
            }
        };
        if let Err(e) = self.checkpoints.set_current(Some(&id)) {
            return Reply::error(e.key(), e.to_string());
        }
        self.log.session(&record.id, "started", &json!({"request": record.request, "flags": record.flag_text, "intent": record.instance.intent}));
        state.active = Some(Active {
            record,
            lock: Some(lock),
        });
        let reply = self.finish_turn(state, turn, shared, None);
        let reply = if cleaned.is_null() {
            reply
        } else {
            reply.with("cleaned", cleaned)
        };
        reply
            .with("session_id", id)
            .with("project_context", self.project_context())
    }

    /// The unfinished session named by the pointer, if any, verified.
    fn recoverable(&self) -> Result<Option<SessionRecord>, CheckpointError> {
        let Some(id) = self.checkpoints.current()? else {
            return Ok(None);
        };
        Ok(self.checkpoints.load(&id)?.filter(|r| !r.finished()))
    }

    fn resume(&self, state: &mut State, record: SessionRecord) -> Reply {
        let lock = match self.take_lock(state, &record.id) {
            Ok(lock) => lock,
            Err(reply) => return reply,
        };
        self.log.session(
            &record.id,
            "resumed",
            &json!({"state": record.instance.state}),
        );
        let id = record.id.clone();
        let shared = Rc::new(RefCell::new(record.host.clone()));
        state.active = Some(Active {
            record,
            lock: Some(lock),
        });
        // An engine state whose action failed before the restart runs again now.
        let turn = {
            let Some(active) = state.active.as_mut() else {
                return Reply::error("session.none", "no session");
            };
            let instance = active.record.instance.clone();
            let session_id = active.record.id.clone();
            let mut host = CodeIntelHost {
                root: &self.root,
                session_id: &session_id,
                state: shared.clone(),
                key: self.checkpoints.key(),
            };
            let mut store = RecordStore::new(
                &self.contract,
                &self.checkpoints,
                &mut active.record,
                shared.clone(),
            );
            Driver::new(&self.contract).advance(&mut host, &mut store, instance)
        };
        let reply = self.finish_turn(state, turn, shared, None);
        if reply.is_error {
            return reply.with("session_id", id);
        }
        let Some(active) = state.active.as_ref() else {
            return reply;
        };
        self.status_reply(&active.record, reply.body.get("message").cloned())
            .with("resumed", true)
            .with("project_context", self.project_context())
    }

    fn take_lock(&self, state: &mut State, id: &str) -> Result<SessionLock, Reply> {
        // A finished session of this server still holds the lock: hand it over.
        if let Some(mut previous) = state.active.take()
            && let Some(lock) = previous.lock.take()
        {
            let holder = self.holder(state, id);
            if lock.update(&holder).is_ok() {
                return Ok(lock);
            }
        }
        let holder = self.holder(state, id);
        SessionLock::acquire(self.root.path(), &holder).map_err(|e| match e {
            LockError::Held(ref h) => Reply::error("session.locked", e.to_string())
                .with("holder", serde_json::to_value(h).unwrap_or(Value::Null)),
            LockError::Io { .. } => Reply::error("session.lock_failed", e.to_string()),
        })
    }

    fn holder(&self, state: &State, id: &str) -> Holder {
        Holder {
            pid: std::process::id(),
            client: if state.client.is_empty() {
                "unknown client".into()
            } else {
                state.client.clone()
            },
            session: id.to_string(),
            since: now(),
        }
    }

    /// `clean: true`: every checkpoint of this repository goes, and the session pointer.
    /// `clean: true`: every task branch (unmerged work is listed, uncommitted work is
    /// carried to the base, never overwritten) and every checkpoint of this repository
    /// go, and the session pointer. Returns what was removed.
    fn clean(&self, state: &mut State) -> Result<Value, Reply> {
        // Cleaning another server's live session would pull the floor from under it.
        let lock = self.take_lock(state, "cleaning")?;
        let branches = match git::open(self.root.path()) {
            Ok(repo) => {
                let outcome = repo.resolve_stale(git::StaleChoice::Delete).map_err(|e| {
                    Reply::error(e.key(), e.to_string()).with("files", e.files().to_vec())
                })?;
                json!({
                    "deleted": outcome.deleted.iter().map(|d| json!({"name": d.name, "unmerged_commits": d.unmerged_commits})).collect::<Vec<_>>(),
                    "kept": outcome.kept.iter().map(|k| json!({"name": k.name, "reason": k.reason})).collect::<Vec<_>>(),
                })
            }
            // Not a usable repository: there are no task branches to delete.
            Err(_) => Value::Null,
        };
        let sessions = self.checkpoints.all_ids();
        for id in &sessions {
            if let Err(e) = self.checkpoints.remove(id) {
                return Err(Reply::error(e.key(), e.to_string()));
            }
        }
        self.checkpoints
            .set_current(None)
            .map_err(|e| Reply::error(e.key(), e.to_string()))?;
        let cleaned = json!({"task_branches": branches, "sessions": sessions});
        self.log.session("-", "cleaned", &cleaned);
        drop(lock);
        Ok(cleaned)
    }

    fn status(&self, state: &mut State) -> Reply {
        if state.active.is_none() {
            match self.recoverable() {
                Err(e) => return Reply::error(e.key(), e.to_string()),
                Ok(Some(record)) => return self.resume(state, record),
                Ok(None) => {
                    return Reply::error(
                        "session.no_active_session",
                        "No active session. Call start_session first.",
                    );
                }
            }
        }
        match state.active.as_ref() {
            Some(active) => self.status_reply(&active.record, None),
            None => Reply::error(
                "session.no_active_session",
                "No active session. Call start_session first.",
            ),
        }
    }

    fn status_reply(&self, record: &SessionRecord, message: Option<Value>) -> Reply {
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
        reply
    }

    fn submit(&self, state: &mut State, args: Map<String, Value>) -> Reply {
        let a: SubmitArgs = match parse(args) {
            Ok(a) => a,
            Err(reply) => return reply,
        };
        let Some(active) = state.active.as_mut() else {
            return Reply::error(
                "session.no_active_session",
                "No active session. Call start_session first.",
            );
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
                .with_phase(
                    &phase_response(&self.contract, &active.record.instance),
                    active.record.compaction_count,
                );
            }
        };
        let mismatch = received_count.filter(|c| *c != active.record.compaction_count);
        let tools_called = active.record.tools_called.clone();
        let instance = active.record.instance.clone();
        let shared = Rc::new(RefCell::new(active.record.host.clone()));
        let session_id = active.record.id.clone();
        let turn = {
            let mut host = CodeIntelHost {
                root: &self.root,
                session_id: &session_id,
                state: shared.clone(),
                key: self.checkpoints.key(),
            };
            let mut store = RecordStore::new(
                &self.contract,
                &self.checkpoints,
                &mut active.record,
                shared.clone(),
            );
            Driver::new(&self.contract).submit(
                &mut host,
                &mut store,
                instance,
                Value::Object(payload),
                tools_called,
            )
        };
        self.finish_turn(state, turn, shared, mismatch)
    }

    /// Adopts a driver turn into the active session and answers with it.
    fn finish_turn(
        &self,
        state: &mut State,
        turn: Turn,
        shared: Rc<RefCell<HostState>>,
        compaction_mismatch: Option<u64>,
    ) -> Reply {
        let Some(active) = state.active.as_mut() else {
            return Reply::error("session.no_active_session", "No active session.");
        };
        let record = &mut active.record;
        record.instance = turn.instance.clone();
        record.host = shared.borrow().clone();
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
        if let Some(count) = compaction_mismatch
            && !turn.steps.is_empty()
        {
            record.compaction_count = count;
            summaries_due = true;
        }
        let reply = match turn.stop {
            Stop::Waiting => {
                let mut reply = Reply::ok(json!({})).with_phase(&phase, record.compaction_count);
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
                    .with_phase(&phase, record.compaction_count);
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
                    .with_phase(&phase, record.compaction_count)
            }
            Stop::CheckpointFailed(e) => Reply::error(
                "checkpoint.write_failed",
                format!("the session moved on but could not be saved: {e}"),
            )
            .with_phase(&phase, record.compaction_count),
            Stop::WrongContract { expected, found } => Reply::error(
                "session.wrong_contract",
                format!(
                    "the session was started under the contract `{found}`, this server runs `{expected}`; start a new session with clean: true"
                ),
            ),
            Stop::EngineLoop { limit } => Reply::error(
                "session.engine_loop",
                format!(
                    "the contract's engine states ran {limit} steps without waiting for an agent"
                ),
            ),
        };
        let reply = if summaries_due {
            reply.with("phase_summaries", summaries(&record.instance))
        } else {
            reply
        };
        if record.finished() {
            // The session is over: its checkpoint and pointer go, the lock is released.
            let _ = self.checkpoints.remove(&record.id);
            let _ = self.checkpoints.set_current(None);
            active.lock = None;
        } else if !turn.steps.is_empty() {
            // The store saved each step; save once more for what finishing changed
            // (compaction count, host state of a failed effect).
            if let Err(e) = self.checkpoints.save(record) {
                return Reply::error(e.key(), e.to_string());
            }
        }
        reply
    }

    fn record_outcome(&self, state: &mut State, args: Map<String, Value>) -> Reply {
        let a: OutcomeArgs = match parse(args) {
            Ok(a) => a,
            Err(reply) => return reply,
        };
        let Some(active) = state.active.as_mut() else {
            return Reply::error(
                "session.no_active_session",
                "No active session. Call start_session first.",
            );
        };
        let record = &mut active.record;
        let outcome = a.outcome.as_str();
        self.log
            .outcome(&record.id, outcome, a.notes.as_deref(), &record.request);
        let mut branch_deleted = None;
        if a.outcome != Outcome::Success
            && let Some(branch) = record.host.branch.take()
        {
            // A failed task's branch goes; uncommitted work is carried to the base, never
            // overwritten (the deletion refuses instead).
            match git::open(self.root.path()).and_then(|repo| repo.delete_task_branch(&branch)) {
                Ok(_) => branch_deleted = Some(branch.name.clone()),
                Err(e) => {
                    record.host.branch = Some(branch);
                    return Reply::error(e.key(), e.to_string()).with("files", e.files().to_vec());
                }
            }
        }
        if a.outcome != Outcome::Success && !record.finished() {
            record.outcome = Some(outcome.to_string());
            let _ = self.checkpoints.remove(&record.id);
            let _ = self.checkpoints.set_current(None);
            active.lock = None;
        }
        Reply::ok(
            json!({"recorded": outcome, "session_id": active.record.id, "branch_deleted": branch_deleted}),
        )
    }

    // --- control tools ------------------------------------------------------------

    fn check_write_target(&self, state: &mut State, args: Map<String, Value>) -> Reply {
        let a: WriteTargetArgs = match parse(args) {
            Ok(a) => a,
            Err(reply) => return reply,
        };
        let Some(active) = state.active.as_ref() else {
            return Reply::ok(json!({"allowed": true, "reason": "no active session"}));
        };
        let record = &active.record;
        match super::host::relative_path(&self.root, &a.file_path) {
            Err(e) => Reply::error("path.outside_root", e.to_string()),
            Ok(rel) if rel.starts_with(".code-intel/") => {
                let m = self.render(
                    "tool_errors.check_write_target.write_blocked",
                    &[],
                    &record.instance,
                );
                Reply::refused(&m).with("file_path", rel)
            }
            Ok(rel) if record.host.explored.contains(&rel) => {
                Reply::ok(json!({"allowed": true, "file_path": rel}))
            }
            Ok(rel) => {
                let m = self.render(
                    "tool_errors.check_write_target.write_blocked",
                    &[],
                    &record.instance,
                );
                Reply::refused(&m).with("file_path", rel)
            }
        }
    }

    fn add_explored_files(&self, state: &mut State, args: Map<String, Value>) -> Reply {
        let a: AddExploredArgs = match parse(args) {
            Ok(a) => a,
            Err(reply) => return reply,
        };
        let Some(active) = state.active.as_mut() else {
            return Reply::error(
                "session.no_active_session",
                "No active session. Call start_session first.",
            );
        };
        let record = &mut active.record;
        if a.files.is_empty() {
            let m = self.render(
                "tool_errors.add_explored_files.no_files",
                &[],
                &record.instance,
            );
            return Reply::refused(&m);
        }
        let seen = seen_paths(
            &self.root,
            &record.id,
            self.checkpoints.key(),
            &record.host.seen_paths,
        );
        match check_explorable(&self.root, &seen, &a.files) {
            Ok(accepted) => {
                record.host.explored.extend(accepted.iter().cloned());
                Reply::ok(json!({"added": accepted, "explored_files": record.host.explored}))
            }
            Err(failure) => {
                let key = if failure.outcome == "unseen" {
                    "tool_errors.add_explored_files.unseen"
                } else {
                    "tool_errors.add_explored_files.outside_root"
                };
                let files = failure.args.get("files").cloned().unwrap_or(Value::Null);
                let m = self.render(key, &[("files", files.clone())], &record.instance);
                Reply::refused(&m).with("files", files)
            }
        }
    }

    /// Every change of the session against its baseline (the task branch's base, or
    /// HEAD at the start), with diffs, and which changed files were never explored.
    fn review_changes(&self, state: &mut State, args: Map<String, Value>) -> Reply {
        if let Err(reply) = parse::<EmptyArgs>(args) {
            return reply;
        }
        let Some(active) = state.active.as_ref() else {
            return Reply::error(
                "session.no_active_session",
                "No active session. Call start_session first.",
            );
        };
        let host = &active.record.host;
        let Some(baseline) = host.baseline() else {
            let m = self.render(
                "tool_errors.review_changes.task_branch_not_enabled",
                &[],
                &active.record.instance,
            );
            return Reply::refused(&m);
        };
        let changes = match git::open(self.root.path()).and_then(|repo| repo.changes(baseline)) {
            Ok(c) => c,
            Err(e) => return Reply::error(e.key(), e.to_string()),
        };
        let changes: Vec<_> = changes
            .into_iter()
            .filter(|c| !c.path.starts_with(".code-intel/"))
            .collect();
        let unexplored: Vec<&str> = changes
            .iter()
            .map(|c| c.path.as_str())
            .filter(|p| !host.explored.contains(*p))
            .collect();
        let listed: Vec<Value> = changes
            .iter()
            .map(|c| {
                let (status, from) = match &c.status {
                    git::ChangeStatus::Added => ("added", None),
                    git::ChangeStatus::Modified => ("modified", None),
                    git::ChangeStatus::Deleted => ("deleted", None),
                    git::ChangeStatus::Renamed { from } => ("renamed", Some(from.clone())),
                    git::ChangeStatus::TypeChange => ("type_changed", None),
                };
                json!({
                    "path": c.path,
                    "status": status,
                    "renamed_from": from,
                    "binary": c.binary,
                    "size_bytes": c.size_bytes,
                    "diff": c.diff,
                    "diff_truncated": c.diff_truncated,
                })
            })
            .collect();
        Reply::ok(json!({
            "task_branch": host.branch.as_ref().map(|b| b.name.clone()),
            "base_branch": baseline.base_branch,
            "base_commit": baseline.base_commit,
            "changes": listed,
            "unexplored": unexplored,
        }))
    }

    /// Outside a session: deletes every task branch and every saved session.
    fn cleanup_stale_branches(&self, state: &mut State, args: Map<String, Value>) -> Reply {
        if let Err(reply) = parse::<EmptyArgs>(args) {
            return reply;
        }
        if state.active.as_ref().is_some_and(|a| !a.record.finished()) {
            return Reply::error(
                "session.active",
                "a session is active: finish it or record its outcome before cleaning up",
            );
        }
        let lock = match self.take_lock(state, "cleaning") {
            Ok(lock) => lock,
            Err(reply) => return reply,
        };
        let outcome = match git::open(self.root.path())
            .and_then(|repo| repo.resolve_stale(git::StaleChoice::Delete))
        {
            Ok(o) => o,
            Err(e) => {
                return Reply::error(e.key(), e.to_string()).with("files", e.files().to_vec());
            }
        };
        let removed = self.checkpoints.all_ids();
        for id in &removed {
            let _ = self.checkpoints.remove(id);
        }
        let _ = self.checkpoints.set_current(None);
        drop(lock);
        Reply::ok(json!({
            "deleted_branches": outcome.deleted.iter().map(|d| json!({"name": d.name, "unmerged_commits": d.unmerged_commits})).collect::<Vec<_>>(),
            "kept_branches": outcome.kept.iter().map(|k| json!({"name": k.name, "reason": k.reason})).collect::<Vec<_>>(),
            "removed_sessions": removed,
        }))
    }

    /// The project context for the document research, from `.code-intel/context.yml`:
    /// its `project_rules`, `doc_research` (prompts, document globs) and
    /// `document_search`, or why it could not be read. `null` when there is no file.
    fn project_context(&self) -> Value {
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

/// The checkpoint store the driver saves through: every committed step updates the
/// session record (instance, host state, tools called reset) and writes it.
struct RecordStore<'a> {
    contract: &'a Contract,
    checkpoints: &'a Checkpoints,
    record: &'a mut SessionRecord,
    shared: Rc<RefCell<HostState>>,
}

impl<'a> RecordStore<'a> {
    fn new(
        contract: &'a Contract,
        checkpoints: &'a Checkpoints,
        record: &'a mut SessionRecord,
        shared: Rc<RefCell<HostState>>,
    ) -> RecordStore<'a> {
        RecordStore {
            contract,
            checkpoints,
            record,
            shared,
        }
    }
}

impl CheckpointStore for RecordStore<'_> {
    fn save(&mut self, instance: &Instance) -> std::io::Result<()> {
        if instance.steps_taken != self.record.instance.steps_taken {
            // A step was taken: the tools called so far were evidence for it.
            self.record.tools_called.clear();
        }
        self.record.instance = instance.clone();
        self.record.host = self.shared.borrow().clone();
        self.record.updated_at = now();
        self.record.write_gate = write_gate(self.contract, instance);
        match self.checkpoints.save(self.record) {
            Ok(Some(reduced)) => {
                *self.record = reduced;
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(e) => Err(std::io::Error::other(e.to_string())),
        }
    }
}

/// Splits the server's own options (`--resume`, `--clean`) off a flag string, unless the
/// contract declares a flag by that name: (the contract's flags, resume, clean).
fn session_options(contract: &Contract, text: &str) -> (String, bool, bool) {
    let declared = |long: &str| {
        contract
            .flags
            .iter()
            .any(|f| f.long == long || f.aliases.iter().any(|a| a == long))
    };
    let (mut resume, mut clean) = (false, false);
    let mut kept = Vec::new();
    for word in text.split_whitespace() {
        match word {
            "--resume" if !declared("resume") => resume = true,
            "--clean" if !declared("clean") => clean = true,
            other => kept.push(other),
        }
    }
    (kept.join(" "), resume, clean)
}

/// The project context file `code-intel init` writes.
const CONTEXT_FILE: &str = ".code-intel/context.yml";

/// The write rule of the instance's state (see [`WriteGate`]).
pub fn write_gate(contract: &Contract, instance: &Instance) -> WriteGate {
    let response = phase_response(contract, instance);
    let writes_allowed = contract.state_id(&instance.state).is_some_and(|id| {
        let state = contract.state(id);
        state.kind == StateKind::External
            && state
                .allowed_tools
                .iter()
                .chain(&state.required_tools)
                .any(|t| t == WRITE_CHECK_TOOL)
    });
    let args = |pairs: &[(&str, Value)]| -> Map<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), v.clone()))
            .collect()
    };
    WriteGate {
        state: instance.state.clone(),
        phase: response.phase.clone(),
        writes_allowed,
        phase_refusal: message(
            contract,
            "tool_errors.check_write_target.write_phase_blocked",
            &args(&[("phase", Value::String(response.phase))]),
            &instance.locale,
        )
        .text,
        file_refusal: message(
            contract,
            "tool_errors.check_write_target.write_blocked",
            &Map::new(),
            &instance.locale,
        )
        .text,
    }
}

/// The tool whose presence in a state's allowed tools grants writes there.
pub const WRITE_CHECK_TOOL: &str = "check_write_target";

/// `.code-intel/.gitignore`: the server's machine-local files (sessions, logs, the symbol
/// index) never show up as changes of a task, nor get committed. It ignores itself too:
/// untracked, it would be an unreviewed change that blocks merges (uncommitted) and slips
/// into task commits.
const GITIGNORE: &str = ".code-intel/.gitignore";
const GITIGNORE_TEXT: &str = "# Written by code-intel: machine-local state, never committed.\n.gitignore\nsessions/\nlogs/\nsymbols.*\n*.lock\n*.tmp*\n";

fn ensure_gitignore(root: &Path) -> std::io::Result<()> {
    let path = root.join(GITIGNORE);
    if path.exists() {
        return Ok(());
    }
    crate::codeintel::store::atomic_write(&path, GITIGNORE_TEXT.as_bytes())
}

fn summaries(instance: &Instance) -> Value {
    let map: Map<String, Value> = instance
        .summaries
        .iter()
        .map(|s| (s.key.clone(), Value::String(s.text.clone())))
        .collect();
    Value::Object(map)
}

fn recoverable(record: &SessionRecord) -> Value {
    json!({
        "session_id": record.id,
        "phase": record.instance.state,
        "request": record.request,
        "flags": record.flag_text,
        "updated_at": record.updated_at,
    })
}

/// Parses tool arguments, or the refusal naming what was wrong.
fn parse<T: serde::de::DeserializeOwned>(args: Map<String, Value>) -> Result<T, Reply> {
    serde_json::from_value(Value::Object(args))
        .map_err(|e| Reply::error("invalid_arguments", format!("invalid arguments: {e}")))
}
