//! What the server keeps about one session: the engine instance and everything the server
//! itself enforces (explored files, tools called in this phase, paths the agent has seen,
//! the task branch, the compaction count). A checkpoint stores exactly this, so a
//! restarted server resumes with the same enforcement, not a weaker one.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::git::{PreparedCommit, TaskBranch};
use crate::machine::Instance;

/// The checkpoint format's version; a checkpoint of another version is refused.
pub(crate) const RECORD_VERSION: u32 = 1;

/// One session as the server keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub version: u32,
    /// Unguessable: 128 random bits, hex.
    pub id: String,
    /// Seconds since the epoch.
    pub created_at: u64,
    pub updated_at: u64,
    /// The user's request as the session received it.
    pub request: String,
    /// The flags as the user typed them.
    pub flag_text: String,
    pub instance: Instance,
    /// The compaction protocol's counter (see the contract's instruction footer).
    pub compaction_count: u64,
    /// Tools that succeeded since the session entered its current state, in call order
    /// without repeats; passed to the engine as `tools_called` and reset on every step.
    pub tools_called: Vec<String>,
    /// Per state, the tools called there, for the decision log and status.
    pub tool_history: BTreeMap<String, Vec<String>>,
    /// Data the host actions keep between calls (task branch, prepared commit),
    /// owned by [`super::host`].
    pub host: HostState,
    /// How the session ended, once it has.
    pub outcome: Option<String>,
    /// What the write hooks enforce now, decided from the contract on every save.
    #[serde(default)]
    pub write_gate: WriteGate,
}

/// The write rule of the session's current state, precomputed so that a hook process
/// (one per client write, `code-intel hook`) decides from the sealed checkpoint alone,
/// without loading the contract.
///
/// A state allows writes when the contract lets the agent call `check_write_target` in
/// it: the tool that asks "may I write this file?" only makes sense where writing can be
/// allowed. Then only explored (or added) files may be written, never `.code-intel/`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteGate {
    pub state: String,
    pub phase: String,
    pub writes_allowed: bool,
    /// The contract's message for a write in a state that allows none.
    pub phase_refusal: String,
    /// The contract's message for a write to a file that is not explored.
    pub file_refusal: String,
    /// The hook's other refusals (`hook.*` messages) in the session's locale, their
    /// placeholders (`{files}`, `{reason}`, ...) left for the hook to fill in.
    #[serde(default)]
    pub texts: BTreeMap<String, String>,
}

impl WriteGate {
    /// The refusal `key` with `args` filled in; `fallback` (English) for a checkpoint
    /// written without it.
    pub fn say(&self, key: &str, fallback: &str, args: &[(&str, String)]) -> String {
        let template = self
            .texts
            .get(key)
            .filter(|t| !t.trim().is_empty())
            .map_or(fallback, String::as_str);
        let args: serde_json::Map<String, serde_json::Value> = args
            .iter()
            .map(|(k, v)| ((*k).to_string(), serde_json::Value::String(v.clone())))
            .collect();
        crate::machine::response::fill(template, &args)
    }
}

/// What the server's host actions read and change: the enforcement data.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostState {
    /// Paths (root-relative) that appeared in the output of a code-intel tool call of
    /// this session: with the files the client's own read tools opened (recorded apart
    /// by the hook, `server::reads`), what an agent may claim to have explored.
    #[serde(default)]
    pub seen_paths: BTreeSet<String>,
    /// Files the agent explored (accepted `explored_files`) or added with
    /// `add_explored_files`: the files it may write.
    #[serde(default)]
    pub explored: BTreeSet<String>,
    /// Files that were dirty when the task branch was created and were carried onto it.
    #[serde(default)]
    pub carried: Vec<String>,
    /// The session's task branch, once created (or adopted by `continue`).
    #[serde(default)]
    pub branch: Option<TaskBranch>,
    /// The branch and commit HEAD was at when the session started: what changes are
    /// measured against when there is no task branch (`--quick`).
    #[serde(default)]
    pub start: Option<TaskBranch>,
    /// A commit prepared by `git.prepare_commit`, waiting for `git.commit_prepared`.
    #[serde(default)]
    pub prepared: Option<PreparedCommit>,
    /// The user's uncommitted work when the session started: each changed path with the
    /// sha256 of its content then (`None`: deleted). The agent did not write these, so
    /// while unchanged they need no exploration, and they are never discarded.
    #[serde(default)]
    pub start_dirty: BTreeMap<String, Option<String>>,
    /// Whether the quality-review prompt existed when the session started: read then, so
    /// deleting it later cannot switch the review off.
    #[serde(default)]
    pub quality_prompt: bool,
    /// The working tree as the server last accepted it: each path that differs from HEAD
    /// with the sha256 of its content (`None`: deleted), `.code-intel/` left out.
    /// Set at the start (the user's uncommitted work) and with every step the server
    /// saves (what the step's own actions changed: a task branch adopted, files
    /// discarded at commit). A submission in a state that allows no writes finds the tree
    /// exactly so, or is refused (`server::worktree`). `None` in a checkpoint written
    /// before this field existed: the next submission takes it without a check.
    #[serde(default)]
    pub accepted_tree: Option<BTreeMap<String, Option<String>>>,
}

impl HostState {
    /// Whether `path` (root-relative) is the user's work from before the session,
    /// untouched since: the same content (or still deleted) as at the start.
    pub fn untouched_user_change(&self, root: &std::path::Path, path: &str) -> bool {
        match self.start_dirty.get(path) {
            None => false,
            Some(recorded) => content_hash(&root.join(path)) == *recorded,
        }
    }

    /// The user's uncommitted work from before the session that is still untouched:
    /// not the task's change, so left alone by review, commit and merge
    /// ([`crate::git::Repo::leaving`]).
    /// Only on a task branch, whose commit and merge are the task's: without one (a
    /// session that only verifies) the user's work is what is reviewed.
    pub fn left_alone(&self, root: &std::path::Path) -> Vec<String> {
        if self.branch.is_none() {
            return Vec::new();
        }
        self.untouched_user_work(root)
    }

    /// The paths of the user's work from before the session that are still as they were.
    pub fn untouched_user_work(&self, root: &std::path::Path) -> Vec<String> {
        self.start_dirty
            .keys()
            .filter(|p| self.untouched_user_change(root, p))
            .cloned()
            .collect()
    }

    /// What the session's changes are measured against: its task branch's base, else
    /// where HEAD was at the start.
    pub fn baseline(&self) -> Option<&TaskBranch> {
        self.branch.as_ref().or(self.start.as_ref())
    }
}

impl SessionRecord {
    /// Records a successful tool call in the current state.
    pub fn note_tool_call(&mut self, tool: &str) {
        if !self.tools_called.iter().any(|t| t == tool) {
            self.tools_called.push(tool.to_string());
        }
        let history = self
            .tool_history
            .entry(self.instance.state.clone())
            .or_default();
        if !history.iter().any(|t| t == tool) {
            history.push(tool.to_string());
        }
    }

    /// Whether the session is over (its instance is in a terminal state).
    pub fn finished(&self) -> bool {
        self.outcome.is_some()
    }
}

/// The sha256 (hex) of a file's content, `None` when it cannot be read (deleted).
pub(crate) fn content_hash(path: &std::path::Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    Some(bytes_hash(&bytes))
}

/// The sha256 (hex) of `bytes`: what [`content_hash`] gives for a file holding them.
pub(crate) fn bytes_hash(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
