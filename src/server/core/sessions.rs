//! The session tools: `start_session` (new, resumed or cleaned sessions, the lock),
//! `get_session_status`, `submit_phase` through the session driver, and `record_outcome`.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::{Map, Value, json};

use crate::contract::Contract;
use crate::machine::response::{phase_response, role_message};
use crate::machine::{Accepted, Instance};
use crate::server::agreement::session_evidence;
use crate::server::args::{Outcome, OutcomeArgs, StartArgs, SubmitArgs};
use crate::server::checkpoint::{
    CheckpointError, MAX_REQUEST_BYTES, json_text_len, new_session_id,
};
use crate::server::git;
use crate::server::host::{
    CodeIntelHost, QUALITY_PROMPT, RESOLVE_STALE_ACTION, stale_branch_report,
};
use crate::server::log::now;
use crate::server::record::{HostState, RECORD_VERSION, SessionRecord};
use crate::server::recorder::{Recorded, Recorder};
use crate::server::reply::Reply;
use crate::server::session_lock::{Holder, LockError, SessionLock};
use crate::server::worktree;
use crate::session::{Driver, Stop, Turn};
use crate::source::Sources;
use crate::yaml;

use super::{
    Active, RecordStore, Server, State, active_record, checkpoint_key, checkpoint_refusal,
    git_refusal, no_session, parse, write_gate,
};

/// A start refused for its flags, intent, locale or params: the error's stable key, the
/// contract's wording around the engine's details.
fn bad_start(key: &str, e: &dyn std::fmt::Display) -> Reply {
    Reply::say(key, "session.bad_start", e.to_string())
}

impl Server {
    pub(super) fn start_session(&self, state: &mut State, args: Map<String, Value>) -> Reply {
        let mut a: StartArgs = match parse(args) {
            Ok(a) => a,
            Err(reply) => return reply,
        };
        // The project's locale (config.yml) when the call names none.
        if a.locale.is_none() {
            a.locale.clone_from(&self.default_locale);
        }
        // The request is checkpointed (twice: as the request and as `params.request`),
        // and quotes are checked against it.
        let request_bytes = json_text_len(&a.query);
        if request_bytes > MAX_REQUEST_BYTES {
            return Reply::error(
                "session.request_too_long",
                format!(
                    "the request takes {request_bytes} bytes as JSON; at most {MAX_REQUEST_BYTES} are kept with a session: summarise it, or put the details in a file and refer to it"
                ),
            )
            .args(&[
                ("bytes", json!(request_bytes)),
                ("limit", json!(MAX_REQUEST_BYTES)),
            ]);
        }
        // `/code --resume`, `--clean` and `--rebuild` arrive as flags typed by the user;
        // they are the server's options, not the contract's (unless the contract declares
        // them).
        let mut rebuild = false;
        if let Some(text) = a.flags.take() {
            let options = session_options(&self.contract, &text);
            a.flags = Some(options.flags);
            a.resume |= options.resume;
            a.clean |= options.clean;
            rebuild = options.rebuild;
        }
        // A resumed session goes on as it was; the indexes are rebuilt on their own first.
        if rebuild && a.resume {
            return Reply::error(
                "session.rebuild_with_resume",
                "--rebuild cannot go with --resume, which continues the session as it was: run /code --rebuild first, then /code --resume",
            );
        }
        // A clean discards the saved session and a rebuild the indexes: everything else the
        // call asks for is checked first, so a mistyped flag, intent or locale does neither.
        if a.clean || rebuild {
            let flag_text = a.flags.clone().unwrap_or_default();
            let request = Map::from_iter([("request".to_string(), Value::String(a.query.clone()))]);
            let checked = crate::contract::flags::parse(&self.contract, &flag_text)
                .map_err(|e| bad_start(e.key(), &e))
                .and_then(|flags| {
                    Instance::start(
                        &self.contract,
                        flags,
                        a.intent.as_deref(),
                        a.locale.as_deref(),
                        &request,
                    )
                    .map_err(|e| bad_start(e.key(), &e))
                });
            if let Err(reply) = checked {
                return reply;
            }
        }
        let mut cleaned = Value::Null;
        if a.clean {
            match self.clean(state) {
                Ok(c) => cleaned = c,
                Err(reply) => return reply,
            }
            // `/code --clean` with no request: clean up, and start nothing.
            if a.query.trim().is_empty() && !rebuild {
                return Reply::ok(json!({"started": false, "cleaned": cleaned}));
            }
        }
        // `/code --rebuild` with no request: rebuild the indexes, and start nothing. Under
        // the session lock, as a clean: not under another client's running session.
        if rebuild && a.query.trim().is_empty() {
            let lock = match self.take_lock(state, "rebuilding") {
                Ok(lock) => lock,
                Err(reply) => return reply,
            };
            let rebuilt = self.rebuild_indexes();
            drop(lock);
            let rebuilt = match rebuilt {
                Ok(r) => r,
                Err(reply) => return reply,
            };
            let reply = Reply::ok(json!({"started": false, "rebuilt": rebuilt}));
            return if cleaned.is_null() {
                reply
            } else {
                reply.with("cleaned", cleaned)
            };
        }
        if a.clean {
            // Cleaned: nothing is left to resume or to offer.
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
            )
            .args(&[
                ("session_id", json!(active.record.id)),
                ("phase", json!(active.record.instance.state)),
            ]);
        } else {
            match self.recoverable() {
                Err(e) => {
                    return checkpoint_refusal(&e).with(
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
            return git_refusal(&e);
        }
        let id = match new_session_id() {
            Ok(id) => id,
            Err(e) => return checkpoint_refusal(&e),
        };
        let lock = match self.take_lock(state, &id) {
            Ok(lock) => lock,
            Err(reply) => return reply,
        };
        // `--rebuild` with a request: once the session holds the lock, before it starts, so
        // its first tools answer from the rebuilt indexes.
        let mut rebuilt = Value::Null;
        if rebuild {
            match self.rebuild_indexes() {
                Ok(r) => rebuilt = r,
                Err(reply) => return reply,
            }
        }
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
            Err(e) => return bad_start(e.key(), &e),
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
            host: self.starting_point(),
            outcome: None,
            write_gate: Default::default(),
        };
        let shared = Rc::new(RefCell::new(record.host.clone()));
        let branch_before = record.host.branch.as_ref().map(|b| b.name.clone());
        let turn = {
            let (started, recorded) = self.drive(&mut record, &shared, |driver, host, store| {
                driver.start(
                    host,
                    store,
                    &flag_text,
                    a.intent.as_deref(),
                    a.locale.as_deref(),
                    &params,
                )
            });
            match started {
                Ok(turn) => {
                    self.log.turn(
                        &record.id,
                        &json!({"start": {"flags": flag_text, "intent": a.intent, "locale": a.locale, "params": params}}),
                        &recorded,
                        &turn,
                    );
                    turn
                }
                Err(e) => {
                    let key = match &e {
                        crate::session::StartFailure::Flags(f) => f.key(),
                        crate::session::StartFailure::Start(s) => s.key(),
                    };
                    return bad_start(key, &e);
                }
            }
        };
        if let Stop::CheckpointFailed(e) = &turn.stop {
            // Not durable, so not started: no checkpoint of a step before the one that
            // failed, no pointer to it (the write hook would enforce a session that does
            // not run), and the lock goes.
            let _ = self.checkpoints.remove(&record.id);
            let _ = self.checkpoints.set_current(None);
            drop(lock);
            return Reply::say(
                checkpoint_key(e),
                "session.not_started_unsaved",
                format!("the session could not be saved, so it was not started: {e}"),
            )
            .with("saved", false);
        }
        self.log.session(&record.id, "started", &json!({"request": record.request, "flags": record.flag_text, "intent": record.instance.intent}));
        state.active = Some(Active {
            record,
            lock: Some(lock),
        });
        let reply = self.finish_turn(state, turn, shared, None, branch_before);
        // The first response of a session carries the compaction protocol.
        let reply = match active_record(state) {
            Some(record) => self.with_footer(reply, &record.instance),
            None => reply,
        };
        let mut reply = if cleaned.is_null() {
            reply
        } else {
            reply.with("cleaned", cleaned)
        };
        if !rebuilt.is_null() {
            reply = reply.with("rebuilt", rebuilt);
        }
        reply
            .with("session_id", id)
            .with("project_context", self.project_context())
    }

    /// Where the session starts: HEAD, and the user's uncommitted work at that moment.
    fn starting_point(&self) -> HostState {
        let quality_prompt = self.root.path().join(QUALITY_PROMPT).is_file();
        let Ok(repo) = git::open(self.root.path()) else {
            return HostState {
                quality_prompt,
                ..HostState::default()
            };
        };
        let Ok(start) = repo.baseline() else {
            return HostState {
                quality_prompt,
                ..HostState::default()
            };
        };
        let mut state = HostState {
            start: Some(start),
            quality_prompt,
            ..HostState::default()
        };
        // Path by path, without rename detection, so a file the user moved is its old
        // path deleted and its new one added, both theirs.
        let tree = worktree::snapshot(self.root.path()).unwrap_or_default();
        state.start_dirty = tree.clone();
        state.accepted_tree = Some(tree);
        state
    }

    /// The unfinished session named by the pointer, if any, verified.
    pub(super) fn recoverable(&self) -> Result<Option<SessionRecord>, CheckpointError> {
        let Some(id) = self.checkpoints.current()? else {
            return Ok(None);
        };
        Ok(self.checkpoints.load(&id)?.filter(|r| !r.finished()))
    }

    pub(super) fn resume(&self, state: &mut State, record: SessionRecord) -> Reply {
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
        let branch_before = record.host.branch.as_ref().map(|b| b.name.clone());
        state.active = Some(Active {
            record,
            lock: Some(lock),
        });
        // An engine state whose action failed before the restart runs again now.
        let turn = {
            let Some(active) = state.active.as_mut() else {
                return no_session();
            };
            let instance = active.record.instance.clone();
            self.drive(&mut active.record, &shared, |driver, host, store| {
                driver.advance(host, store, instance)
            })
            .0
        };
        let reply = self.finish_turn(state, turn, shared, None, branch_before);
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

    pub(super) fn take_lock(&self, state: &mut State, id: &str) -> Result<SessionLock, Reply> {
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
            LockError::Held(Some(ref h)) => Reply::error("session.locked", e.to_string())
                .args(&[
                    ("session", json!(h.session)),
                    ("client", json!(h.client)),
                    ("pid", json!(h.pid)),
                ])
                .with("holder", serde_json::to_value(h).unwrap_or(Value::Null)),
            LockError::Held(None) => {
                Reply::say("session.locked", "session.locked_unnamed", e.to_string())
                    .with("holder", Value::Null)
            }
            LockError::Io { .. } => Reply::error("session.lock_failed", e.to_string()),
        })
    }

    pub(super) fn holder(&self, state: &State, id: &str) -> Holder {
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
    pub(super) fn clean(&self, state: &mut State) -> Result<Value, Reply> {
        // Cleaning another server's live session would pull the floor from under it.
        let lock = self.take_lock(state, "cleaning")?;
        let branches = match git::open(self.root.path()) {
            Ok(repo) => {
                let outcome = repo
                    .resolve_stale(git::StaleChoice::Delete)
                    .map_err(|e| git_refusal(&e).with("files", e.files().to_vec()))?;
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
                return Err(checkpoint_refusal(&e));
            }
        }
        self.checkpoints
            .set_current(None)
            .map_err(|e| checkpoint_refusal(&e))?;
        let cleaned = json!({"task_branches": branches, "sessions": sessions});
        self.log.session("-", "cleaned", &cleaned);
        drop(lock);
        Ok(cleaned)
    }

    /// `--rebuild`: the symbol index built again from the source files (now), and the
    /// semantic index dropped and built again (in the background: its progress is the
    /// `sync` field here and in every semantic answer). A symbol index that cannot be
    /// rebuilt refuses the call, so no session starts on an index the user distrusts.
    fn rebuild_indexes(&self) -> Result<Value, Reply> {
        let symbols = self.code.index.rebuild().map_err(|e| {
            Reply::say(
                e.key(),
                "code_tools.rebuild_failed",
                format!("the symbol index could not be rebuilt: {e}"),
            )
        })?;
        let semantic = self
            .code
            .semantic
            .sync(crate::server::semantic_tools::SyncArgs { rebuild: true });
        let rebuilt = json!({
            "symbols": {
                "files": symbols.files,
                "tags": symbols.tags,
                "tagged": symbols.tagged,
                "elapsed_ms": symbols.elapsed_ms,
            },
            "semantic": semantic["sync"],
        });
        self.log.session("-", "rebuilt", &rebuilt);
        Ok(rebuilt)
    }

    pub(super) fn status(&self, state: &mut State) -> Reply {
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
    fn with_stale_branches(&self, reply: Reply, record: &SessionRecord) -> Reply {
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
        let report = stale_branch_report(&self.root, own).unwrap_or_else(|e| json!({"error": e}));
        reply.with("stale_branches", report)
    }

    pub(super) fn submit(&self, state: &mut State, args: Map<String, Value>) -> Reply {
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
    fn drive<T>(
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
        // A task branch created (or adopted) in this turn is announced, with the
        // uncommitted files it carried over: the user's work moved, and they should know.
        let new_branch = match (&branch_before, &record.host.branch) {
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
        };
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
            Stop::CheckpointFailed(e) => Reply::say(
                checkpoint_key(&e),
                "session.submission_unsaved",
                format!(
                    "the submission was not accepted, because the session could not be saved: {e}; the session stays where it was"
                ),
            )
            .with("saved", false)
            .with_phase(&phase, record.compaction_count),
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
        };
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
                    return Reply::say(
                        e.key(),
                        "session.unsaved",
                        format!("the session could not be saved: {e}; it stays where it was"),
                    )
                    .with("saved", false);
                }
            }
        }
        self.with_stale_branches(reply, &active.record)
    }

    pub(super) fn record_outcome(&self, state: &mut State, args: Map<String, Value>) -> Reply {
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
        if a.outcome != Outcome::Success
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
        } else if a.outcome != Outcome::Success
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
        if a.outcome == Outcome::Success && record.outcome.as_deref() == Some("success") {
            agreement = self.learn(record, a.related_symbols.clone(), a.notes.clone());
        }
        if a.outcome != Outcome::Success && !record.finished() {
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
    fn learn(&self, record: &SessionRecord, named: Vec<String>, notes: Option<String>) -> Value {
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

/// The server's own options in a flag string, and the contract's flags left.
#[derive(Debug, Default, PartialEq, Eq)]
struct SessionOptions {
    /// The rest of the flag string, for the contract.
    flags: String,
    /// `--resume` / `-r`: continue the unfinished session.
    resume: bool,
    /// `--clean` / `-c`: discard saved sessions and task branches first.
    clean: bool,
    /// `--rebuild`: build the symbol and semantic indexes again first.
    rebuild: bool,
}

/// Splits the server's own options (`--resume`, `--clean`, `--rebuild`) off a flag string,
/// unless the contract declares a flag by that name.
fn session_options(contract: &Contract, text: &str) -> SessionOptions {
    let declared = |long: &str| {
        contract
            .flags
            .iter()
            .any(|f| f.long == long || f.aliases.iter().any(|a| a == long))
    };
    let declared_short = |short: &str| {
        contract
            .flags
            .iter()
            .any(|f| f.short.as_deref() == Some(short))
    };
    let mut options = SessionOptions::default();
    let mut kept = Vec::new();
    for word in text.split_whitespace() {
        match word {
            "--resume" if !declared("resume") => options.resume = true,
            "-r" if !declared_short("r") => options.resume = true,
            "--clean" if !declared("clean") => options.clean = true,
            "-c" if !declared_short("c") => options.clean = true,
            "--rebuild" if !declared("rebuild") => options.rebuild = true,
            other => kept.push(other),
        }
    }
    options.flags = kept.join(" ");
    options
}

/// The outcome of a session that ended well (`Stop::Finished`'s, lower-cased).
const SUCCESS: &str = "success";

/// The project context file `code-intel init` writes.
const CONTEXT_FILE: &str = ".code-intel/context.yml";

use crate::server::semantic_tools::SUMMARIES_FILE;

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
