//! The server's decisions, independent of MCP: one [`Server`] per repository answers
//! tool calls by name with JSON. It owns the active session (its record, its lock), gates
//! every tool through the contract, records what the agent called and saw, runs the
//! session driver for `start_session` and `submit_phase`, and checkpoints every change.
//! `service` adapts it to rmcp; tests may call it directly. A call goes to the handler
//! its tool's declaration names (`server::tools`) in `dispatch`; the session tools are in
//! `start` (`start_session`), `turn` (`submit_phase`) and `sessions` (the others), the
//! control tools in `control`.

mod control;
mod dispatch;
mod error;
mod sessions;
mod start;
mod turn;

pub(crate) use error::ServerError;

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::Path;
use std::rc::Rc;
use std::sync::{Mutex, PoisonError};

use serde_json::{Map, Value, json};

use super::checkpoint::{
    CheckpointError, Checkpoints, SEEN_PATHS_BUDGET, SealKey, json_text_len, paths_len,
};
use super::code_tools::CodeTools;
use super::index_cache::{ChangeSource, IndexCache};
use super::log::{Log, now};
use super::reply::Reply;
use super::session_lock::SessionLock;
use super::session_record::{HostState, SessionRecord, WriteGate};
use crate::codeintel::root::Root;
use crate::config::Config;
use crate::contract::Contract;
use crate::environment::Environment;
use crate::git;
use crate::machine::Instance;
use crate::machine::response::{footer, message, phase_response};
use crate::machine::tools::{ToolGate, gate};
use crate::server::semantic_tools::SemanticTools;
use crate::server::write_rule::HOOK_MESSAGES;
use crate::session::CheckpointStore;

/// The server for one repository.
pub struct Server {
    root: Root,
    code: CodeTools,
    contract: Contract,
    checkpoints: Checkpoints,
    log: Log,
    state: Mutex<State>,
    /// `locale` from `.code-intel/config.yml`: sessions use it unless `start_session` names one.
    default_locale: Option<String>,
}

#[derive(Default)]
pub(crate) struct State {
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
    /// `env` says where semantic search finds its model and whether to watch for file
    /// events (`CODE_INTEL_WATCH`); nothing else of the process environment is read.
    pub fn new(
        root: &Path,
        contract: Contract,
        key: SealKey,
        env: &Environment,
    ) -> Result<Server, ServerError> {
        let config = Config::load(root).map_err(ServerError::Config)?;
        let root = Root::open(root)
            .and_then(|r| r.excluding(&config.index.exclude))
            .map_err(ServerError::Root)?;
        if contract.registry.host != "code-intel" {
            return Err(ServerError::WrongHost {
                contract: contract.name.clone(),
                host: contract.registry.host.to_string(),
            });
        }
        // Before anything is written: a linked `.code-intel/` would take every write of
        // the server outside the repository.
        crate::codeintel::state_dir::check(root.path()).map_err(ServerError::StateDir)?;
        crate::codeintel::gitignore::ensure_gitignore(root.path())
            .map_err(ServerError::Gitignore)?;
        let checkpoints = Checkpoints::new(root.path(), key);
        // Writes of a server killed midway leave their temp files behind; nothing else
        // would ever remove them.
        let stale = checkpoints.remove_stale_temps();
        if !stale.is_empty() {
            tracing::info!(
                "removed {} temp file(s) of interrupted checkpoint writes: {}",
                stale.len(),
                stale.join(", ")
            );
        }
        let log = Log::new(root.path());
        let code = CodeTools {
            root: root.clone(),
            index: IndexCache::start(root.clone(), ChangeSource::from_env(env)),
            semantic: SemanticTools::start(root.clone(), env),
        };
        Ok(Server {
            root,
            code,
            contract,
            checkpoints,
            log,
            state: Mutex::new(State::default()),
            default_locale: config.locale,
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

    /// Answers one tool call, its texts in the session's locale ([`Server::locale`]).
    pub fn call(&self, tool: &str, args: Map<String, Value>) -> Reply {
        // A new session's locale, when the call names one the contract has: the user
        // asked for it, so even a refusal to start is in it.
        let asked = args
            .get("locale")
            .and_then(Value::as_str)
            .filter(|_| tool == "start_session")
            .filter(|l| self.contract.locales.iter().any(|d| d == l))
            .map(str::to_string);
        let reply = self.answer(tool, args);
        // A paged answer that left items out says so, and how to get the rest.
        let truncated = !reply.is_error && cut(&reply.body, 0);
        if !reply.pending() && !truncated {
            return reply;
        }
        let locale = asked.unwrap_or_else(|| self.locale());
        if truncated {
            let warning = message(&self.contract, TRUNCATION_WARNING, &Map::new(), &locale);
            return reply.with("warning", warning.text);
        }
        reply.localize(&self.contract, &locale)
    }

    /// The locale of the server's own texts: the active (or last) session's; without one
    /// in memory, the unfinished session's on disk; else `locale` of
    /// `.code-intel/config.yml` (when the contract has it); else the contract's first.
    pub fn locale(&self) -> String {
        if let Some(active) = self.lock_state().active.as_ref() {
            return active.record.instance.locale.clone();
        }
        self.locale_without_session()
    }

    /// [`Server::locale`] when no session is in memory.
    fn locale_without_session(&self) -> String {
        if let Ok(Some(record)) = self.recoverable() {
            return record.instance.locale;
        }
        self.default_locale
            .clone()
            .filter(|l| self.contract.locales.iter().any(|d| d == l))
            .unwrap_or_else(|| self.contract.default_locale().to_string())
    }

    /// Message `key` in the server's locale, for a text outside a tool's reply (a
    /// progress notification, the answer to a call that failed); `fallback` when the
    /// contract lacks it. Never waits for a call in progress (it runs on the async
    /// runtime): while one holds the session, the locale without it is used.
    pub fn text(&self, key: &str, args: &[(&str, Value)], fallback: String) -> String {
        if !self.contract.messages.contains_key(key) {
            return fallback;
        }
        let locale = match self.state.try_lock() {
            Ok(state) => state
                .active
                .as_ref()
                .map(|a| a.record.instance.locale.clone()),
            Err(std::sync::TryLockError::Poisoned(state)) => state
                .into_inner()
                .active
                .as_ref()
                .map(|a| a.record.instance.locale.clone()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
        .unwrap_or_else(|| self.locale_without_session());
        let args: Map<String, Value> = args
            .iter()
            .map(|(k, v)| ((*k).to_string(), v.clone()))
            .collect();
        message(&self.contract, key, &args, &locale).text
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

    /// Appends the contract's footer (the compaction protocol) to the reply's
    /// `instruction`. Sent once per session rather than with every instruction: in the
    /// first response, in every `get_session_status` and resume, and with the phase
    /// summaries when a compaction is detected.
    fn with_footer(&self, mut reply: Reply, instance: &Instance) -> Reply {
        let Some(footer) = footer(&self.contract, instance) else {
            return reply;
        };
        if let Some(Value::String(text)) = reply.body.get_mut("instruction") {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&footer);
        }
        reply
    }
}

/// The checkpoint store the driver saves through: every committed step updates the
/// session record (instance, host state, tools called reset) and writes it.
struct RecordStore<'a> {
    contract: &'a Contract,
    root: &'a Path,
    checkpoints: &'a Checkpoints,
    record: &'a mut SessionRecord,
    shared: Rc<RefCell<HostState>>,
}

impl<'a> RecordStore<'a> {
    fn new(
        contract: &'a Contract,
        root: &'a Path,
        checkpoints: &'a Checkpoints,
        record: &'a mut SessionRecord,
        shared: Rc<RefCell<HostState>>,
    ) -> RecordStore<'a> {
        RecordStore {
            contract,
            root,
            checkpoints,
            record,
            shared,
        }
    }
}

impl CheckpointStore for RecordStore<'_> {
    /// The step goes into a copy of the record; the record becomes the copy (as written,
    /// reduced if it had to be) only once it is on disk.
    fn save(&mut self, instance: &Instance) -> std::io::Result<()> {
        // The tree as the step leaves it, its actions included (a task branch, files
        // discarded at commit), is what the next submission outside implementation must
        // find (`server::worktree`): saved with the step, so no kill can part them.
        match super::worktree::snapshot(self.root) {
            Ok(tree) => self.shared.borrow_mut().accepted_tree = Some(tree),
            Err(e) => tracing::error!("cannot read the working tree for a step: {e}"),
        }
        let mut next = self.record.clone();
        if instance.steps_taken != next.instance.steps_taken {
            // A step was taken: the tools called so far were evidence for it.
            next.tools_called.clear();
        }
        next.instance = instance.clone();
        next.host = self.shared.borrow().clone();
        next.updated_at = now();
        next.write_gate = write_gate(self.contract, instance);
        *self.record = self
            .checkpoints
            .save_owned(next)
            .map_err(std::io::Error::other)?;
        Ok(())
    }
}

/// The stable key of a checkpoint failure the driver reports ([`RecordStore`] wraps the
/// [`CheckpointError`]).
fn checkpoint_key(e: &std::io::Error) -> &'static str {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<CheckpointError>())
        .map_or("checkpoint.io", CheckpointError::key)
}

/// The refusal of a call whose checkpoint could not be written: its stable key
/// (`checkpoint.too_large`, `checkpoint.io`, ...) and the reason; nothing changed.
fn unsaved(what: &str, e: &CheckpointError) -> Reply {
    Reply::say(
        e.key(),
        "checkpoint.call_not_saved",
        format!(
            "`{what}` is refused, because the session could not be saved: {e}; nothing changed"
        ),
    )
    .args(&[("tool", json!(what)), ("details", json!(e.to_string()))])
    .with("saved", false)
}

/// Adds the paths a call showed to the seen paths, within [`SEEN_PATHS_BUDGET`]: when
/// they do not fit, the paths earlier calls showed that were not explored are forgotten
/// first (any tool shows them again), then this call's paths beyond the budget are left
/// out. Explored files stay seen.
fn add_seen(host: &mut HostState, seen: BTreeSet<String>) {
    let new: Vec<String> = seen
        .into_iter()
        .filter(|p| !host.seen_paths.contains(p))
        .collect();
    if new.is_empty() {
        return;
    }
    let added = paths_len(&new);
    if paths_len(&host.seen_paths) + added > SEEN_PATHS_BUDGET {
        let explored = &host.explored;
        host.seen_paths.retain(|p| explored.contains(p));
    }
    let mut used = paths_len(&host.seen_paths);
    for path in new {
        let len = json_text_len(&path);
        if used + len > SEEN_PATHS_BUDGET {
            continue;
        }
        used += len;
        host.seen_paths.insert(path);
    }
}

/// The active session's record, while it runs.
fn active_record(state: &State) -> Option<&SessionRecord> {
    state
        .active
        .as_ref()
        .map(|a| &a.record)
        .filter(|r| !r.finished())
}

/// The write rule of the instance's state (see [`WriteGate`]).
pub(crate) fn write_gate(contract: &Contract, instance: &Instance) -> WriteGate {
    let response = phase_response(contract, instance);
    // Writes go where the write check may be called: the engine's tool gate decides.
    let writes_allowed = gate(contract, instance, WRITE_CHECK_TOOL) == ToolGate::Allowed;
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
        // Templates: the hook fills in the files and reasons it finds.
        texts: HOOK_MESSAGES
            .iter()
            .filter(|key| contract.messages.contains_key(**key))
            .map(|key| {
                let text = message(contract, key, &Map::new(), &instance.locale).text;
                ((*key).to_string(), text)
            })
            .collect(),
    }
}

/// Whether a list of the answer left items out (`truncated: true` on it or on one of its
/// sections, as size budgets mark them).
fn cut(body: &Value, depth: usize) -> bool {
    match body {
        Value::Object(map) => {
            map.get("truncated") == Some(&Value::Bool(true))
                || (depth < 4 && map.values().any(|v| cut(v, depth + 1)))
        }
        _ => false,
    }
}

/// The message added to a code tool's answer that left items out (`truncated: true`).
const TRUNCATION_WARNING: &str = "warnings.truncation_warning";

/// The tool whose presence in a state's allowed tools grants writes there.
pub(crate) const WRITE_CHECK_TOOL: &str = "check_write_target";

/// Which session and step the server is at: a tool call is evidence for this step only.
fn step_of(state: &State) -> Option<(String, u64)> {
    state
        .active
        .as_ref()
        .map(|a| (a.record.id.clone(), a.record.instance.steps_taken))
}

/// The refusal of a session tool when there is no session.
pub(super) fn no_session() -> Reply {
    Reply::error(
        "session.no_active_session",
        "No active session. Call start_session first.",
    )
}

/// Parses tool arguments, or the refusal naming what was wrong.
fn parse<T: serde::de::DeserializeOwned>(args: Map<String, Value>) -> Result<T, Reply> {
    serde_json::from_value(Value::Object(args)).map_err(|e| {
        Reply::error("invalid_arguments", format!("invalid arguments: {e}"))
            .args(&[("details", json!(e.to_string()))])
    })
}

/// The refusal of a checkpoint that cannot be read or written: its stable key and the
/// contract's message of that key.
fn checkpoint_refusal(e: &CheckpointError) -> Reply {
    Reply::error(e.key(), e.to_string()).args(&e.args())
}

/// The refusal of a git operation: its stable key, and the contract's message of that key
/// with the failure's own values as placeholders (`{details}` is the whole English text,
/// for a contract that words a failure generically).
fn git_refusal(e: &git::GitError) -> Reply {
    use git::GitError as G;
    let path = |p: &std::path::Path| json!(p.display().to_string());
    let mut args: Vec<(&str, Value)> = vec![("details", json!(e.to_string()))];
    match e {
        G::NotARepository { path: p } | G::BareRepository { path: p } => {
            args.push(("path", path(p)));
        }
        G::NotRepositoryRoot { root, workdir } => {
            args.push(("path", path(root)));
            args.push(("workdir", path(workdir)));
        }
        G::UnbornBranch { branch } => args.push(("branch", json!(branch))),
        G::DetachedHead { commit } => args.push(("commit", json!(commit))),
        G::OperationInProgress { state } => args.push(("operation", json!(state))),
        G::InvalidSessionId { session_id } => args.push(("session_id", json!(session_id))),
        G::UnsupportedBaseName { base } | G::BaseBranchMissing { base } => {
            args.push(("branch", json!(base)));
        }
        G::OnOtherTaskBranch { current } | G::NoTaskBranchCheckedOut { current } => {
            args.push(("branch", json!(current)));
        }
        G::TaskBranchExists { name } => args.push(("branch", json!(name))),
        G::NotOnTaskBranch { expected, current } => {
            args.push(("branch", json!(expected)));
            args.push(("current", json!(current)));
        }
        G::CheckedOutElsewhere { branch, worktree } => {
            args.push(("branch", json!(branch)));
            args.push(("path", path(worktree)));
        }
        G::Uncommitted { paths: files }
        | G::MergeConflict { files }
        | G::WouldOverwrite { files }
        | G::UnknownReviewedPaths { paths: files } => args.push(("files", json!(files))),
        G::ContradictoryReview { path: p } => args.push(("files", json!([p]))),
        G::PreparedStale { prepared_on, head } => {
            args.push(("commit", json!(prepared_on)));
            args.push(("head", json!(head)));
        }
        G::Git { operation, message } => {
            args.push(("operation", json!(operation)));
            args.push(("error", json!(message)));
        }
        G::Io {
            operation,
            path: p,
            source,
        } => {
            args.push(("operation", json!(operation)));
            args.push(("path", path(p)));
            args.push(("error", json!(source.to_string())));
        }
    }
    Reply::error(e.key(), e.to_string()).args(&args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(prefix: &str, n: usize) -> BTreeSet<String> {
        (0..n).map(|i| format!("{prefix}/file_{i:05}.py")).collect()
    }

    #[test]
    fn an_answer_is_cut_when_any_of_its_lists_is() {
        use serde_json::json;
        assert!(cut(&json!({"items": [], "truncated": true}), 0));
        assert!(cut(
            &json!({"target": "a.py", "callers": {"items": [], "truncated": true}}),
            0
        ));
        assert!(!cut(
            &json!({"callers": {"truncated": false}, "tests": {"truncated": false}}),
            0
        ));
        // A flag inside an item's text or a list is not a page of the answer.
        assert!(!cut(&json!({"items": [{"text": "truncated: true"}]}), 0));
    }

    #[test]
    fn seen_paths_stay_within_their_budget_newest_first() {
        let mut host = HostState::default();
        host.explored.insert("old/file_00000.py".into());
        // Each path takes 20 bytes as JSON; 2000 of them are about 40 KiB.
        add_seen(&mut host, paths("old", 2000));
        assert_eq!(host.seen_paths.len(), 2000);
        // Another 2000 do not fit with them: the earlier ones go, except the explored.
        add_seen(&mut host, paths("new", 2000));
        assert!(paths_len(&host.seen_paths) <= SEEN_PATHS_BUDGET);
        assert!(host.seen_paths.contains("new/file_01999.py"));
        assert!(host.seen_paths.contains("old/file_00000.py"));
        assert!(!host.seen_paths.contains("old/file_00001.py"));
        // One answer larger than the whole budget keeps what fits.
        add_seen(&mut host, paths("huge", 5000));
        assert!(paths_len(&host.seen_paths) <= SEEN_PATHS_BUDGET);
        assert!(host.seen_paths.contains("huge/file_00000.py"));
        assert!(!host.seen_paths.contains("huge/file_04999.py"));
        assert!(host.seen_paths.contains("old/file_00000.py"));
        // Paths already seen cost nothing.
        let before = host.seen_paths.clone();
        add_seen(&mut host, before.clone());
        assert_eq!(host.seen_paths, before);
    }
}
