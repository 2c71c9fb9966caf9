//! Starting a session: `start_session` with the server's own flags (`--resume`,
//! `--clean`, `--rebuild`), the unfinished session offered or resumed first, the session
//! lock, and the driver's first turn; and the lock, cleaning and rebuilding it relies on.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::{Map, Value, json};

use crate::contract::Contract;
use crate::git;
use crate::machine::Instance;
use crate::server::args::StartArgs;
use crate::server::checkpoint::{
    CheckpointError, MAX_REQUEST_BYTES, json_text_len, new_session_id,
};
use crate::server::host::QUALITY_PROMPT;
use crate::server::log::now;
use crate::server::reply::Reply;
use crate::server::session_lock::{Holder, LockError, SessionLock};
use crate::server::session_record::{HostState, RECORD_VERSION, SessionRecord};
use crate::server::worktree;
use crate::session::{Stop, Turn};

use super::{
    Active, Server, State, active_record, checkpoint_key, checkpoint_refusal, git_refusal,
    no_session, parse,
};

/// A start refused for its flags, intent, locale or params: the error's stable key, the
/// contract's wording around the engine's details.
fn bad_start(key: &str, e: &dyn std::fmt::Display) -> Reply {
    Reply::say(key, "session.bad_start", e.to_string())
}

impl Server {
    /// `start_session`: a new session, or the unfinished one resumed or offered, after a
    /// clean or a rebuild when asked for.
    pub(crate) fn start_session(&self, state: &mut State, args: Map<String, Value>) -> Reply {
        self.start(state, args).unwrap_or_else(|answer| answer)
    }

    /// The stages of a start, in order. An `Err` is the answer given before a session
    /// starts: a refusal, or what a clean or a rebuild alone did.
    fn start(&self, state: &mut State, args: Map<String, Value>) -> Result<Reply, Reply> {
        let (a, rebuild) = self.start_args(args)?;
        let cleaned = self.clean_or_rebuild_first(state, &a, rebuild)?;
        // Cleaned: nothing is left to resume or to offer.
        if !a.clean {
            self.unfinished_first(state, &a)?;
        }
        // Task branches and the baseline of changes need a repository with a checked-out
        // branch: a detached HEAD, an unborn branch, a bare or missing repository is
        // refused now, with what to do, rather than at the first commit.
        git::open(self.root.path())
            .and_then(|repo| repo.baseline())
            .map_err(|e| git_refusal(&e))?;
        let id = new_session_id().map_err(|e| checkpoint_refusal(&e))?;
        let lock = self.take_lock(state, &id)?;
        // `--rebuild` with a request: once the session holds the lock, before it starts, so
        // its first tools answer from the rebuilt indexes.
        let rebuilt = if rebuild {
            self.rebuild_indexes()?
        } else {
            Value::Null
        };
        let reply = self.begin(state, a, &id, lock)?;
        let mut reply = if cleaned.is_null() {
            reply
        } else {
            reply.with("cleaned", cleaned)
        };
        if !rebuilt.is_null() {
            reply = reply.with("rebuilt", rebuilt);
        }
        Ok(reply
            .with("session_id", id)
            .with("project_context", self.project_context()))
    }

    /// The call's arguments, with the project's locale when they name none, and whether
    /// to rebuild the indexes. Refused: a request too long to keep, `--rebuild` with
    /// `--resume`, and (before a clean or a rebuild discards anything) flags, an intent or
    /// a locale the contract does not take.
    fn start_args(&self, args: Map<String, Value>) -> Result<(StartArgs, bool), Reply> {
        let mut a: StartArgs = parse(args)?;
        // The project's locale (config.yml) when the call names none.
        if a.locale.is_none() {
            a.locale.clone_from(&self.default_locale);
        }
        // The request is checkpointed (twice: as the request and as `params.request`),
        // and quotes are checked against it.
        let request_bytes = json_text_len(&a.query);
        if request_bytes > MAX_REQUEST_BYTES {
            return Err(Reply::error(
                "session.request_too_long",
                format!(
                    "the request takes {request_bytes} bytes as JSON; at most {MAX_REQUEST_BYTES} are kept with a session: summarise it, or put the details in a file and refer to it"
                ),
            )
            .args(&[
                ("bytes", json!(request_bytes)),
                ("limit", json!(MAX_REQUEST_BYTES)),
            ]));
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
            return Err(Reply::error(
                "session.rebuild_with_resume",
                "--rebuild cannot go with --resume, which continues the session as it was: run /code --rebuild first, then /code --resume",
            ));
        }
        // A clean discards the saved session and a rebuild the indexes: everything else the
        // call asks for is checked first, so a mistyped flag, intent or locale does neither.
        if a.clean || rebuild {
            let flag_text = a.flags.clone().unwrap_or_default();
            let request = Map::from_iter([("request".to_string(), Value::String(a.query.clone()))]);
            crate::contract::flags::parse(&self.contract, &flag_text)
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
                })?;
        }
        Ok((a, rebuild))
    }

    /// `--clean` and `--rebuild` before the session starts, and what was cleaned (`null`
    /// for nothing). With no request there is nothing to start: the answer is what they
    /// did.
    fn clean_or_rebuild_first(
        &self,
        state: &mut State,
        a: &StartArgs,
        rebuild: bool,
    ) -> Result<Value, Reply> {
        let mut cleaned = Value::Null;
        if a.clean {
            cleaned = self.clean(state)?;
            // `/code --clean` with no request: clean up, and start nothing.
            if a.query.trim().is_empty() && !rebuild {
                return Err(Reply::ok(json!({"started": false, "cleaned": cleaned})));
            }
        }
        // `/code --rebuild` with no request: rebuild the indexes, and start nothing. Under
        // the session lock, as a clean: not under another client's running session.
        if rebuild && a.query.trim().is_empty() {
            let lock = self.take_lock(state, "rebuilding")?;
            let rebuilt = self.rebuild_indexes();
            drop(lock);
            let rebuilt = rebuilt?;
            let reply = Reply::ok(json!({"started": false, "rebuilt": rebuilt}));
            return Err(if cleaned.is_null() {
                reply
            } else {
                reply.with("cleaned", cleaned)
            });
        }
        Ok(cleaned)
    }

    /// An unfinished session comes before a new one: this server's active one is shown
    /// again with `--resume` and refused without; a saved one is resumed with `--resume`
    /// and offered without. `--resume` with nothing to resume is refused. `Ok` when there
    /// is none.
    fn unfinished_first(&self, state: &mut State, a: &StartArgs) -> Result<(), Reply> {
        if let Some(active) = state.active.as_ref().filter(|a| !a.record.finished()) {
            if a.resume {
                return Err(self.status_reply(&active.record, None));
            }
            return Err(Reply::error(
                "session.active",
                format!(
                    "session {} is active (phase {}); continue it (get_session_status), or start over with clean: true",
                    active.record.id, active.record.instance.state
                ),
            )
            .args(&[
                ("session_id", json!(active.record.id)),
                ("phase", json!(active.record.instance.state)),
            ]));
        }
        match self.recoverable() {
            Err(e) => Err(checkpoint_refusal(&e).with(
                "hint",
                "start_session with clean: true discards the unreadable session",
            )),
            Ok(Some(record)) if a.resume => Err(self.resume(state, record)),
            Ok(Some(record)) => Err(Reply::ok(json!({
                "started": false,
                "recoverable_session": recoverable(&record),
                "message": self.render("session.checkpoint_recovery", &[], &record.instance).text,
            }))),
            Ok(None) if a.resume => Err(Reply::error(
                "session.nothing_to_resume",
                "there is no unfinished session to resume",
            )),
            Ok(None) => Ok(()),
        }
    }

    /// The session's record and its first turn, under `lock`: the session becomes the
    /// active one only once that turn is saved. Its first answer carries the compaction
    /// protocol.
    fn begin(
        &self,
        state: &mut State,
        a: StartArgs,
        id: &str,
        lock: SessionLock,
    ) -> Result<Reply, Reply> {
        let mut params = Map::new();
        params.insert("request".into(), Value::String(a.query.clone()));
        let flag_text = a.flags.clone().unwrap_or_default();
        let placeholder = Instance::start(
            &self.contract,
            Default::default(),
            a.intent.as_deref(),
            a.locale.as_deref(),
            &params,
        )
        .map_err(|e| bad_start(e.key(), &e))?;
        let created = now();
        let mut record = SessionRecord {
            version: RECORD_VERSION,
            id: id.to_string(),
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
        let start = FirstTurn {
            flag_text: &flag_text,
            intent: a.intent.as_deref(),
            locale: a.locale.as_deref(),
            params: &params,
        };
        let turn = self.first_turn(&mut record, &shared, &start)?;
        if let Stop::CheckpointFailed(e) = &turn.stop {
            // Not durable, so not started: no checkpoint of a step before the one that
            // failed, no pointer to it (the write hook would enforce a session that does
            // not run), and the lock goes.
            let _ = self.checkpoints.remove(&record.id);
            let _ = self.checkpoints.set_current(None);
            drop(lock);
            return Err(Reply::say(
                checkpoint_key(e),
                "session.not_started_unsaved",
                format!("the session could not be saved, so it was not started: {e}"),
            )
            .with("saved", false));
        }
        self.log.session(&record.id, "started", &json!({"request": record.request, "flags": record.flag_text, "intent": record.instance.intent}));
        state.active = Some(Active {
            record,
            lock: Some(lock),
        });
        let reply = self.finish_turn(state, turn, shared, None, branch_before);
        // The first response of a session carries the compaction protocol.
        Ok(match active_record(state) {
            Some(record) => self.with_footer(reply, &record.instance),
            None => reply,
        })
    }

    /// The driver's first turn of `record`, logged: the flags parsed, the intent, locale
    /// and params checked, and the engine states run up to the first an agent runs.
    fn first_turn(
        &self,
        record: &mut SessionRecord,
        shared: &Rc<RefCell<HostState>>,
        start: &FirstTurn<'_>,
    ) -> Result<Turn, Reply> {
        let (started, recorded) = self.drive(record, shared, |driver, host, store| {
            driver.start(
                host,
                store,
                start.flag_text,
                start.intent,
                start.locale,
                start.params,
            )
        });
        match started {
            Ok(turn) => {
                self.log.turn(
                    &record.id,
                    &json!({"start": {"flags": start.flag_text, "intent": start.intent, "locale": start.locale, "params": start.params}}),
                    &recorded,
                    &turn,
                );
                Ok(turn)
            }
            Err(e) => {
                let key = match &e {
                    crate::session::StartFailure::Flags(f) => f.key(),
                    crate::session::StartFailure::Start(s) => s.key(),
                };
                Err(bad_start(key, &e))
            }
        }
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
        // An unreadable tree is logged, as in `save`, and the session starts as if it
        // were clean.
        let tree = worktree::snapshot(self.root.path()).unwrap_or_else(|e| {
            tracing::error!("cannot read the working tree at the session's start: {e}");
            Default::default()
        });
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
                .with("holder", h.to_value()),
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
}

/// What a session starts with: the flag text, intent, locale and params of the call.
struct FirstTurn<'a> {
    flag_text: &'a str,
    intent: Option<&'a str>,
    locale: Option<&'a str>,
    params: &'a Map<String, Value>,
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

fn recoverable(record: &SessionRecord) -> Value {
    json!({
        "session_id": record.id,
        "phase": record.instance.state,
        "request": record.request,
        "flags": record.flag_text,
        "updated_at": record.updated_at,
    })
}
