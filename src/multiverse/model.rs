//! The data a Multiverse workspace holds: the plan (tasks, each a WBS node, with their
//! dependencies), what the orchestrator knows of each task at run time (its lifecycle
//! session, attempts, the node's status), the backlog and the execution state. Plain
//! serialisable values with no IO: the workspace store writes them, the plan patch and
//! the scheduler change them, and every change is a journal entry first.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::machine::Instance;

/// The longest task id.
pub const MAX_TASK_ID_CHARS: usize = 64;

/// A task's id: 1 to 64 of `A-Z a-z 0-9 . _ -`, not starting with `.` or `-`. It names
/// files (`runs/<id>/`) and containers, so nothing else is allowed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TaskId(String);

/// Why a string is not a [`TaskId`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskIdError {
    Empty,
    TooLong { chars: usize },
    BadChar { id: String, found: char },
    BadStart { id: String },
}

impl fmt::Display for TaskIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskIdError::Empty => write!(f, "a task id cannot be empty"),
            TaskIdError::TooLong { chars } => write!(
                f,
                "a task id has at most {MAX_TASK_ID_CHARS} characters, this one {chars}"
            ),
            TaskIdError::BadChar { id, found } => write!(
                f,
                "task id {id:?} has {found:?}; only letters, digits, '.', '_' and '-' are allowed"
            ),
            TaskIdError::BadStart { id } => {
                write!(f, "task id {id:?} cannot start with '.' or '-'")
            }
        }
    }
}

impl std::error::Error for TaskIdError {}

impl TaskId {
    pub fn parse(text: &str) -> Result<TaskId, TaskIdError> {
        if text.is_empty() {
            return Err(TaskIdError::Empty);
        }
        let chars = text.chars().count();
        if chars > MAX_TASK_ID_CHARS {
            return Err(TaskIdError::TooLong { chars });
        }
        if let Some(found) = text
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        {
            return Err(TaskIdError::BadChar {
                id: text.to_string(),
                found,
            });
        }
        if text.starts_with(['.', '-']) {
            return Err(TaskIdError::BadStart {
                id: text.to_string(),
            });
        }
        Ok(TaskId(text.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for TaskId {
    type Error = TaskIdError;
    fn try_from(text: String) -> Result<TaskId, TaskIdError> {
        TaskId::parse(&text)
    }
}

impl From<TaskId> for String {
    fn from(id: TaskId) -> String {
        id.0
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The pool a task runs in when its design names none.
pub const DEFAULT_POOL: &str = "default";

/// What a task is meant to do, as a plan wrote it (a chat's `plan_patch`, `task add`).
/// Read by the run: it becomes the task file `agent-runner` is given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskDesign {
    pub id: TaskId,
    pub title: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub acceptance_criteria: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_impl: Option<SuggestedImpl>,
    /// Tasks that must be done (node `implemented` or `verified`) before this one starts.
    #[serde(default)]
    pub dependencies: Vec<TaskId>,
    /// Grouping facets (milestone → phase → task in the IDE's WBS view).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub milestone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The pool whose concurrency limit it runs under.
    #[serde(default = "default_pool")]
    pub pool: String,
    /// Higher runs first; FIFO by enqueue time within a priority.
    #[serde(default)]
    pub priority: i32,
    #[serde(default)]
    pub runner: RunnerSettings,
    /// RFC 3339.
    pub created_at: String,
    pub updated_at: String,
    /// `user`, `chat:<session>`, ...
    pub created_by: String,
}

fn default_pool() -> String {
    DEFAULT_POOL.to_string()
}

/// The implementation hints a planner gave.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuggestedImpl {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    #[serde(default)]
    pub file_paths: Vec<String>,
    #[serde(default)]
    pub constraints: Vec<String>,
}

/// How `agent-runner` runs the task; unset fields take the workspace's defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunnerSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_loops: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_kind: Option<String>,
    /// The task's test command (`task.test.command`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_command: Option<String>,
}

/// The work breakdown: every task is a node, under the root or under another task, in
/// order. Invariants (kept by the plan patch, checked by `Plan::check`): every task is in
/// exactly one place, every parent exists, no node is its own ancestor.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Wbs {
    /// The root's children, in order.
    #[serde(default)]
    pub roots: Vec<TaskId>,
    /// Each task's children, in order; a task without children has no entry.
    #[serde(default)]
    pub children: BTreeMap<TaskId, Vec<TaskId>>,
}

/// The plan: task designs and the WBS that places them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    #[serde(default)]
    pub tasks: BTreeMap<TaskId, TaskDesign>,
    #[serde(default)]
    pub wbs: Wbs,
}

/// The status of a task's node: what the work is known to have achieved, which
/// dependents read (original: `NodeRuntimeStatus`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    #[default]
    Planned,
    InProgress,
    Implemented,
    Verified,
    Blocked,
    Obsolete,
}

impl NodeStatus {
    /// Whether a dependent may start on it.
    pub fn is_done(self) -> bool {
        matches!(self, NodeStatus::Implemented | NodeStatus::Verified)
    }
}

/// One run of a task through `agent-runner`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attempt {
    /// 1, 2, ...
    pub number: u32,
    /// RFC 3339.
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// The `agent-runner` process while it runs (for recovery after a crash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The result JSON's `status` (`complete`, `failed`, ...), or `interrupted` for an
    /// attempt whose process was gone after a crash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// One line: why it ended as it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Its directory under the workspace (`runs/<task>/<number>/`).
    pub run_dir: String,
    #[serde(default)]
    pub files_changed: Vec<String>,
}

/// What the orchestrator knows of a task at run time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskRuntime {
    /// The task's session of the lifecycle contract (`contracts/multiverse_task.yml`);
    /// its state is the task's status.
    pub lifecycle: Instance,
    #[serde(default)]
    pub node: NodeStatus,
    #[serde(default)]
    pub attempts: Vec<Attempt>,
    /// Unix milliseconds; set while the task waits to be retried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_retry_at_ms: Option<u64>,
    /// Why it cannot start (a dependency that failed for good, an open question).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_reason: Option<String>,
    /// Orders ready tasks FIFO within a priority: the journal sequence number at which it
    /// last became ready.
    #[serde(default)]
    pub enqueued_seq: u64,
}

impl TaskRuntime {
    /// The last attempt in brief (its number, status, exit code and one-line summary), so
    /// a view can say why a task ended as it did without fetching its attempts.
    pub fn last_attempt(&self) -> Option<serde_json::Value> {
        self.attempts.last().map(|a| {
            serde_json::json!({"number": a.number, "status": a.status, "exit_code": a.exit_code,
                               "summary": a.summary})
        })
    }
}

/// What a backlog item asks of a human.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BacklogKind {
    /// A task failed its last attempt.
    Failure,
    /// A planner (a chat's `questions`, a task's `ask_human`) needs an answer.
    Question,
    Blocker,
}

/// Something the orchestrator cannot decide alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BacklogItem {
    pub id: String,
    pub kind: BacklogKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskId>,
    pub title: String,
    #[serde(default)]
    pub description: String,
    /// RFC 3339.
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<String>,
    #[serde(default)]
    pub metadata: Value,
}

/// Whether the scheduler starts tasks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ExecutionState {
    /// Nothing is scheduled; nothing runs.
    #[default]
    Idle,
    /// Ready tasks start as their pools allow.
    Running,
    /// Nothing new starts; what runs goes on.
    Paused,
}

/// Everything a workspace's state files hold; equal to the journal folded from the
/// start, which is how a damaged state is rebuilt.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceState {
    pub plan: Plan,
    #[serde(default)]
    pub runtime: BTreeMap<TaskId, TaskRuntime>,
    #[serde(default)]
    pub backlog: BTreeMap<String, BacklogItem>,
    #[serde(default)]
    pub execution: ExecutionState,
    /// The sequence number of the last journal entry folded in.
    #[serde(default)]
    pub seq: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_are_safe_file_and_container_names() {
        for good in ["t1", "task-2", "A.b_c", "x".repeat(64).as_str()] {
            assert!(TaskId::parse(good).is_ok(), "{good}");
        }
        assert_eq!(TaskId::parse(""), Err(TaskIdError::Empty));
        assert!(matches!(
            TaskId::parse(&"x".repeat(65)),
            Err(TaskIdError::TooLong { chars: 65 })
        ));
        for bad in ["../x", "a/b", "a b", "é", "a\nb"] {
            assert!(
                matches!(TaskId::parse(bad), Err(TaskIdError::BadChar { .. })),
                "{bad}"
            );
        }
        for bad in [".hidden", "-flag"] {
            assert!(
                matches!(TaskId::parse(bad), Err(TaskIdError::BadStart { .. })),
                "{bad}"
            );
        }
        let err = serde_json::from_str::<TaskId>("\"a/b\"").unwrap_err();
        assert!(err.to_string().contains("only letters"), "{err}");
    }

    #[test]
    fn only_implemented_and_verified_nodes_are_done() {
        assert!(NodeStatus::Implemented.is_done());
        assert!(NodeStatus::Verified.is_done());
        for s in [
            NodeStatus::Planned,
            NodeStatus::InProgress,
            NodeStatus::Blocked,
            NodeStatus::Obsolete,
        ] {
            assert!(!s.is_done());
        }
    }
}
