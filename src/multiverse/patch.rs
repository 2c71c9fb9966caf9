//! The `plan_patch` a chat planner answers with, and its application: typed, strict
//! (`deny_unknown_fields`) serde types whose JSON Schema is generated
//! (`schemas/multiverse/plan_patch.schema.json`, a test keeps it fresh), and [`apply`], a
//! pure function that returns the new plan and a summary, or every reason the patch cannot
//! be applied. Never half of it: the original committed its creates before it looked at
//! the rest (digest §10.2, V17/B15), created phantom WBS nodes for unknown parents (M14)
//! and checked no cycle (M13).
//!
//! ## Semantics
//!
//! 1. Every `create`'s `temp_id` gets a new id (`<id_prefix><n>`, the smallest `n` from 1
//!    not in use), and every created design exists from the start, so dependencies and
//!    parents may name a `temp_id` created further down (forward references).
//! 2. The operations then apply in order to a working copy. A `create` places its task;
//!    `update`, `move` and `delete` name a task that exists at that point (an existing id,
//!    or the `temp_id` of an earlier `create`). An operation that fails is recorded and
//!    skipped, and the rest still run, so one answer names every problem.
//! 3. Dependencies on a task the patch deletes: an edge that was in the plan before is
//!    removed and reported in the summary (`removed_dependencies`: the chat's reply shows
//!    what was lost, nothing disappears silently); an edge this patch itself sets is an
//!    error, since the planner contradicted itself.
//! 4. The result must pass [`Plan::check`] (so no dependency cycle, every task placed
//!    once); a failure names the operations involved.
//!
//! Running tasks: a running task cannot be deleted (nor a subtree holding one). It can be
//! moved (the WBS is presentation) and its title, facets and priority updated; what its
//! running attempt was started from (description, acceptance criteria, dependencies,
//! implementation hints, pool) cannot change under it, since the attempt would be judged
//! against criteria it never saw.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::model::{DEFAULT_POOL, Plan, SuggestedImpl, TaskDesign, TaskId};
use super::plan::{PlanFinding, chain};

/// The only envelope version there is.
pub const PLAN_PATCH_VERSION: u64 = 1;

/// Limits the schema states and [`apply`] enforces (a patch built in Rust skips the
/// schema): what a planner may send in one patch.
pub const MAX_OPERATIONS: usize = 200;
pub const MAX_TITLE_CHARS: usize = 200;
/// Descriptions and the understanding.
pub const MAX_TEXT_CHARS: usize = 20_000;
/// One acceptance criterion, question, constraint, file path or facet.
pub const MAX_ITEM_CHARS: usize = 2_000;
/// Acceptance criteria, dependencies, file paths, constraints, a conflict's tasks.
pub const MAX_ITEMS: usize = 100;
pub const MAX_QUESTIONS: usize = 20;
pub const MAX_CONFLICTS: usize = 100;
/// A temporary id's length (a task id's).
pub const MAX_TEMP_ID_CHARS: usize = 64;
/// The most tasks a plan may hold after a patch.
pub const MAX_PLAN_TASKS: usize = 10_000;

/// A planner's change to the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanPatch {
    /// What the planner understood the user to want, in a sentence or two; the chat's
    /// reply starts with it.
    #[schemars(length(max = MAX_TEXT_CHARS))]
    pub understanding: String,
    /// The changes, applied in order, all or none.
    #[serde(default)]
    #[schemars(length(max = MAX_OPERATIONS))]
    pub operations: Vec<Operation>,
    /// What the planner needs a human to answer; each opens a question in the backlog.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = MAX_QUESTIONS))]
    pub questions: Vec<Question>,
    /// Files the planner expects tasks to clash on (run them apart, or review).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = MAX_CONFLICTS))]
    pub conflicts: Vec<Conflict>,
}

/// One change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Operation {
    /// A new task.
    Create(Create),
    /// Change some fields of a task; absent fields stay as they are.
    Update(Update),
    /// Place a task elsewhere in the WBS.
    Move(Move),
    /// Remove a task (soft: its runs and history stay).
    Delete(Delete),
}

impl Operation {
    /// `create`, `update`, `move` or `delete`.
    pub fn name(&self) -> &'static str {
        match self {
            Operation::Create(_) => "create",
            Operation::Update(_) => "update",
            Operation::Move(_) => "move",
            Operation::Delete(_) => "delete",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Create {
    /// This patch's name for the task (e.g. `tmp-1`): other operations, questions and
    /// conflicts of the patch refer to it by it; the task gets a real id.
    #[schemars(length(min = 1, max = MAX_TEMP_ID_CHARS))]
    pub temp_id: String,
    #[schemars(length(min = 1, max = MAX_TITLE_CHARS))]
    pub title: String,
    #[serde(default)]
    #[schemars(length(max = MAX_TEXT_CHARS))]
    pub description: String,
    /// Checks someone could verify when the task is done.
    #[serde(default)]
    #[schemars(length(max = MAX_ITEMS))]
    pub acceptance_criteria: Vec<String>,
    /// Tasks that must be done first: existing ids or this patch's `temp_id`s.
    #[serde(default)]
    #[schemars(length(max = MAX_ITEMS))]
    pub dependencies: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_impl: Option<ImplHints>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub milestone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The pool it runs in (`default` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// Higher runs first (0 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// The WBS parent: an existing id or a `temp_id`; absent: the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// Where among the parent's children; absent: at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<Position>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Update {
    /// An existing id, or the `temp_id` of an earlier `create`.
    pub task_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = MAX_TITLE_CHARS))]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = MAX_TEXT_CHARS))]
    pub description: Option<String>,
    /// Replaces the criteria whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = MAX_ITEMS))]
    pub acceptance_criteria: Option<Vec<String>>,
    /// Replaces the dependencies whole (`[]` clears them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = MAX_ITEMS))]
    pub dependencies: Option<Vec<String>>,
    /// Replaces the hints whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_impl: Option<ImplHints>,
    /// `""` clears it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub milestone: Option<String>,
    /// `""` clears it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Move {
    /// An existing id, or the `temp_id` of an earlier `create`.
    pub task_id: String,
    /// The new parent: an existing id or a `temp_id`; absent: the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// Where among the new parent's children; absent: at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<Position>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Delete {
    /// An existing id, or the `temp_id` of an earlier `create`.
    pub task_id: String,
    /// Delete the whole subtree; otherwise the task's children take its place in its
    /// parent, in order.
    #[serde(default)]
    pub cascade: bool,
}

/// A place among siblings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Position {
    /// At this index (0 first); past the end means at the end.
    Index(usize),
    /// Just before this sibling.
    Before(String),
    /// Just after this sibling.
    After(String),
    /// Last.
    End,
}

/// Implementation hints (the design's `suggested_impl`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImplHints {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// Files it will likely touch, relative to the project.
    #[serde(default)]
    #[schemars(length(max = MAX_ITEMS))]
    pub file_paths: Vec<String>,
    #[serde(default)]
    #[schemars(length(max = MAX_ITEMS))]
    pub constraints: Vec<String>,
}

/// A question for the human: a string, or an object naming the tasks it holds up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Question {
    Text(#[schemars(length(min = 1, max = MAX_ITEM_CHARS))] String),
    Detailed(DetailedQuestion),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DetailedQuestion {
    #[schemars(length(min = 1, max = MAX_ITEM_CHARS))]
    pub question: String,
    /// The tasks that wait for the answer (ids or `temp_id`s).
    #[serde(default)]
    #[schemars(length(max = MAX_ITEMS))]
    pub tasks: Vec<String>,
    /// Answers the planner suggests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = MAX_ITEMS))]
    pub options: Vec<String>,
}

/// A file the planner expects tasks to clash on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Conflict {
    /// Relative to the project.
    #[schemars(length(min = 1, max = MAX_ITEM_CHARS))]
    pub file: String,
    /// The tasks involved (ids or `temp_id`s).
    #[serde(default)]
    #[schemars(length(max = MAX_ITEMS))]
    pub tasks: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What [`apply`] needs besides the plan and the patch.
#[derive(Debug, Clone)]
pub struct PatchContext {
    /// Tasks with an attempt running now.
    pub running: BTreeSet<TaskId>,
    /// RFC 3339: the created and updated designs' timestamp.
    pub now: String,
    /// Written to created designs' `created_by` (e.g. `chat:<session>`).
    pub author: String,
    /// New ids are `<id_prefix><n>`. The caller makes it unique per patch (the journal's
    /// sequence number, say `p42-`) so an id is never reused, not even one a deleted task
    /// had (its runs stay on disk under that id).
    pub id_prefix: String,
}

/// One id a created task got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Created {
    pub temp_id: String,
    pub id: TaskId,
}

/// A dependency edge the patch removed because it deleted the task depended on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RemovedDependency {
    pub task: TaskId,
    pub dependency: TaskId,
}

/// A question as the backlog will hold it: its task references resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedQuestion {
    pub question: String,
    pub tasks: Vec<TaskId>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

/// A conflict with its task references resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedConflict {
    pub file: String,
    pub tasks: Vec<TaskId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What a patch did: the chat's reply and the journal entry show it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PatchSummary {
    pub understanding: String,
    /// In operation order.
    pub created: Vec<Created>,
    pub updated: Vec<TaskId>,
    pub moved: Vec<TaskId>,
    /// In operation order, a cascade's subtree depth first.
    pub deleted: Vec<TaskId>,
    pub removed_dependencies: Vec<RemovedDependency>,
    pub questions: Vec<PlannedQuestion>,
    pub conflicts: Vec<PlannedConflict>,
}

/// Where in the patch a problem is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "in", rename_all = "snake_case")]
pub enum Location {
    /// The patch as a whole.
    Patch,
    Operation { index: usize, op: &'static str },
    /// Several operations together (the ones that set the edges of a cycle).
    Operations { indices: Vec<usize> },
    Question { index: usize },
    Conflict { index: usize },
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Patch => f.write_str("the patch"),
            Location::Operation { index, op } => write!(f, "operation {index} ({op})"),
            Location::Operations { indices } => {
                let list: Vec<String> = indices.iter().map(usize::to_string).collect();
                write!(f, "operations {}", list.join(", "))
            }
            Location::Question { index } => write!(f, "question {index}"),
            Location::Conflict { index } => write!(f, "conflict {index}"),
        }
    }
}

/// Why (part of) a patch cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "key", rename_all = "kebab-case")]
pub enum PatchProblem {
    TooManyOperations {
        count: usize,
        max: usize,
    },
    TooManyTasks {
        count: usize,
        max: usize,
    },
    /// A text field over its length limit.
    TooLong {
        field: String,
        chars: usize,
        max: usize,
    },
    /// A list over its length limit.
    TooManyItems {
        field: String,
        count: usize,
        max: usize,
    },
    /// A title, question or file that is empty or blank.
    Blank {
        field: String,
    },
    BadTempId {
        temp_id: String,
    },
    DuplicateTempId {
        temp_id: String,
        first: usize,
    },
    /// A `temp_id` that is also an existing task's id, so references would be ambiguous.
    TempIdClash {
        temp_id: String,
    },
    /// `<id_prefix><n>` is no valid task id.
    BadIdPrefix {
        prefix: String,
    },
    /// Names no task of the plan and no `temp_id` of the patch.
    UnknownTask {
        reference: String,
    },
    /// Names a task an earlier operation deleted.
    TaskDeleted {
        id: TaskId,
        by: usize,
    },
    /// Names a `temp_id` whose `create` comes later.
    NotCreatedYet {
        temp_id: String,
        create: usize,
    },
    UnknownParent {
        reference: String,
    },
    UnknownDependency {
        reference: String,
    },
    DuplicateDependency {
        task: TaskId,
        dependency: TaskId,
    },
    /// A dependency this patch sets on a task this patch deletes.
    DependencyOnDeleted {
        task: TaskId,
        dependency: TaskId,
        deleted_by: usize,
    },
    /// Placing `task` under `parent` would make it its own ancestor.
    OwnAncestor {
        task: TaskId,
        parent: TaskId,
    },
    /// A position's `before`/`after` names no child of the parent.
    NotASibling {
        anchor: String,
        parent: Option<TaskId>,
    },
    RunningTaskDeleted {
        ids: Vec<TaskId>,
    },
    /// An update of what a running attempt was started from.
    RunningTaskChanged {
        id: TaskId,
        fields: Vec<&'static str>,
    },
    EmptyUpdate {
        id: TaskId,
    },
    BadPool {
        pool: String,
    },
    /// A conflict's file that is absolute or leaves the project.
    BadPath {
        file: String,
    },
    DependencyCycle {
        ids: Vec<TaskId>,
    },
    /// The plan was already broken before the patch (the store never saves one; this
    /// fails closed if it did).
    PlanInvalid {
        finding: PlanFinding,
    },
    /// The patched plan breaks an invariant no operation's check caught (a bug here;
    /// refused rather than saved).
    ResultInvalid {
        finding: PlanFinding,
    },
}

impl PatchProblem {
    /// The stable key.
    pub fn key(&self) -> &'static str {
        match self {
            PatchProblem::TooManyOperations { .. } => "too-many-operations",
            PatchProblem::TooManyTasks { .. } => "too-many-tasks",
            PatchProblem::TooLong { .. } => "too-long",
            PatchProblem::TooManyItems { .. } => "too-many-items",
            PatchProblem::Blank { .. } => "blank",
            PatchProblem::BadTempId { .. } => "bad-temp-id",
            PatchProblem::DuplicateTempId { .. } => "duplicate-temp-id",
            PatchProblem::TempIdClash { .. } => "temp-id-clash",
            PatchProblem::BadIdPrefix { .. } => "bad-id-prefix",
            PatchProblem::UnknownTask { .. } => "unknown-task",
            PatchProblem::TaskDeleted { .. } => "task-deleted",
            PatchProblem::NotCreatedYet { .. } => "not-created-yet",
            PatchProblem::UnknownParent { .. } => "unknown-parent",
            PatchProblem::UnknownDependency { .. } => "unknown-dependency",
            PatchProblem::DuplicateDependency { .. } => "duplicate-dependency",
            PatchProblem::DependencyOnDeleted { .. } => "dependency-on-deleted",
            PatchProblem::OwnAncestor { .. } => "own-ancestor",
            PatchProblem::NotASibling { .. } => "not-a-sibling",
            PatchProblem::RunningTaskDeleted { .. } => "running-task-deleted",
            PatchProblem::RunningTaskChanged { .. } => "running-task-changed",
            PatchProblem::EmptyUpdate { .. } => "empty-update",
            PatchProblem::BadPool { .. } => "bad-pool",
            PatchProblem::BadPath { .. } => "bad-path",
            PatchProblem::DependencyCycle { .. } => "dependency-cycle",
            PatchProblem::PlanInvalid { .. } => "plan-invalid",
            PatchProblem::ResultInvalid { .. } => "result-invalid",
        }
    }
}

impl std::fmt::Display for PatchProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PatchProblem::TooManyOperations { count, max } => {
                write!(f, "{count} operations; a patch has at most {max}")
            }
            PatchProblem::TooManyTasks { count, max } => {
                write!(f, "the plan would hold {count} tasks; at most {max}")
            }
            PatchProblem::TooLong { field, chars, max } => {
                write!(f, "{field} has {chars} characters; at most {max}")
            }
            PatchProblem::TooManyItems { field, count, max } => {
                write!(f, "{field} has {count} items; at most {max}")
            }
            PatchProblem::Blank { field } => write!(f, "{field} is empty"),
            PatchProblem::BadTempId { temp_id } => write!(
                f,
                "temp_id {temp_id:?} must be 1 to {MAX_TEMP_ID_CHARS} characters, none of them a control character"
            ),
            PatchProblem::DuplicateTempId { temp_id, first } => {
                write!(f, "temp_id {temp_id:?} is already created by operation {first}")
            }
            PatchProblem::TempIdClash { temp_id } => {
                write!(f, "temp_id {temp_id:?} is an existing task's id")
            }
            PatchProblem::BadIdPrefix { prefix } => {
                write!(f, "{prefix:?} followed by a number is no valid task id")
            }
            PatchProblem::UnknownTask { reference } => {
                write!(f, "{reference:?} names no task and no temp_id of this patch")
            }
            PatchProblem::TaskDeleted { id, by } => {
                write!(f, "task {id} is deleted by operation {by}")
            }
            PatchProblem::NotCreatedYet { temp_id, create } => write!(
                f,
                "{temp_id:?} is created by operation {create}, later; only dependencies and parents may refer ahead"
            ),
            PatchProblem::UnknownParent { reference } => write!(
                f,
                "parent {reference:?} names no task and no temp_id of this patch"
            ),
            PatchProblem::UnknownDependency { reference } => write!(
                f,
                "dependency {reference:?} names no task and no temp_id of this patch"
            ),
            PatchProblem::DuplicateDependency { task, dependency } => {
                write!(f, "task {task} would list the dependency {dependency} twice")
            }
            PatchProblem::DependencyOnDeleted {
                task,
                dependency,
                deleted_by,
            } => write!(
                f,
                "task {task} is given the dependency {dependency}, which operation {deleted_by} deletes"
            ),
            PatchProblem::OwnAncestor { task, parent } => write!(
                f,
                "placing {task} under {parent} would make it its own ancestor"
            ),
            PatchProblem::NotASibling { anchor, parent } => match parent {
                Some(parent) => write!(f, "{anchor:?} is not a child of {parent}"),
                None => write!(f, "{anchor:?} is not at the root of the WBS"),
            },
            PatchProblem::RunningTaskDeleted { ids } => {
                let ids: Vec<&str> = ids.iter().map(TaskId::as_str).collect();
                write!(
                    f,
                    "cannot delete running task(s) {}: cancel them first",
                    ids.join(", ")
                )
            }
            PatchProblem::RunningTaskChanged { id, fields } => write!(
                f,
                "task {id} is running: its {} cannot change under the running attempt",
                fields.join(", ")
            ),
            PatchProblem::EmptyUpdate { id } => write!(f, "the update of {id} changes nothing"),
            PatchProblem::BadPool { pool } => write!(
                f,
                "pool {pool:?} must be 1 to 64 letters, digits, '.', '_' or '-'"
            ),
            PatchProblem::BadPath { file } => write!(
                f,
                "{file:?} must be a path relative to the project, without '..'"
            ),
            PatchProblem::DependencyCycle { ids } => {
                write!(f, "dependency cycle: {}", chain(ids))
            }
            PatchProblem::PlanInvalid { finding } => {
                write!(f, "the plan is broken before the patch: {finding}")
            }
            PatchProblem::ResultInvalid { finding } => {
                write!(f, "the patched plan would be broken: {finding}")
            }
        }
    }
}

/// One problem and where it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PatchError {
    pub at: Location,
    #[serde(flatten)]
    pub problem: PatchProblem,
}

impl std::fmt::Display for PatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.at, self.problem)
    }
}

/// Every reason a patch was refused; the plan is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct PatchErrors(pub Vec<PatchError>);

impl std::fmt::Display for PatchErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the plan patch was not applied:")?;
        for error in &self.0 {
            write!(f, "\n- {error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for PatchErrors {}

/// Why a planner's reply is no `plan_patch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidPatchReply(pub String);

impl std::fmt::Display for InvalidPatchReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidPatchReply {}

impl PlanPatch {
    /// The patch in a planner's reply `{type: "plan_patch", version: 1, payload}`: the
    /// envelope first (a reply to another protocol is named as such), then the payload's
    /// strict types.
    pub fn from_reply(reply: &Value) -> Result<PlanPatch, InvalidPatchReply> {
        let Some(object) = reply.as_object() else {
            return Err(InvalidPatchReply("the reply is not a JSON object".into()));
        };
        match object.get("type") {
            Some(Value::String(kind)) if kind == "plan_patch" => {}
            Some(other) => {
                return Err(InvalidPatchReply(format!(
                    "the reply's type is {other}, not \"plan_patch\""
                )));
            }
            None => return Err(InvalidPatchReply("the reply has no type".into())),
        }
        if object.get("version").and_then(Value::as_u64) != Some(PLAN_PATCH_VERSION) {
            return Err(InvalidPatchReply(format!(
                "the reply's version must be {PLAN_PATCH_VERSION}"
            )));
        }
        let payload = object
            .get("payload")
            .ok_or_else(|| InvalidPatchReply("the reply has no payload".into()))?;
        serde_json::from_value(payload.clone())
            .map_err(|e| InvalidPatchReply(format!("the payload is no plan_patch: {e}")))
    }
}

/// The JSON Schema of a planner's `plan_patch` reply (envelope and payload);
/// `schemas/multiverse/plan_patch.schema.json` must equal it.
pub fn plan_patch_schema() -> Value {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let payload = generator.subschema_for::<PlanPatch>();
    let definitions: Map<String, Value> = generator.take_definitions(true).into_iter().collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "plan_patch reply",
        "description": "The planner's reply to a chat turn: one JSON object, this envelope around the patch.",
        "type": "object",
        "required": ["type", "version", "payload"],
        "additionalProperties": false,
        "properties": {
            "type": {"const": "plan_patch"},
            "version": {"const": PLAN_PATCH_VERSION},
            "payload": payload.to_value(),
        },
        "$defs": definitions,
    })
}

/// [`plan_patch_schema`] as the committed file's text.
pub fn generated_plan_patch_schema() -> Result<String, serde_json::Error> {
    let mut text = serde_json::to_string_pretty(&plan_patch_schema())?;
    text.push('\n');
    Ok(text)
}

/// Apply `patch` to `plan`: the new plan and what changed, or every reason it cannot be
/// applied (the plan is untouched either way: this is a pure function of its arguments).
pub fn apply(
    plan: &Plan,
    patch: &PlanPatch,
    ctx: &PatchContext,
) -> Result<(Plan, PatchSummary), PatchErrors> {
    let fail = |at: Location, problem: PatchProblem| Err(PatchErrors(vec![PatchError { at, problem }]));
    // Fail closed on a broken plan: every later check assumes the invariants.
    if let Some(finding) = plan.check().into_iter().next() {
        return fail(Location::Patch, PatchProblem::PlanInvalid { finding });
    }
    // Before any work: a patch too big is refused in constant time.
    if patch.operations.len() > MAX_OPERATIONS {
        return fail(
            Location::Patch,
            PatchProblem::TooManyOperations {
                count: patch.operations.len(),
                max: MAX_OPERATIONS,
            },
        );
    }
    let mut run = Run::new(plan, patch, ctx);
    run.check_sizes(patch);
    run.assign_ids(patch);
    run.insert_created(patch);
    for (index, operation) in patch.operations.iter().enumerate() {
        let at = Location::Operation {
            index,
            op: operation.name(),
        };
        let done = match operation {
            Operation::Create(create) => run.place_created(index, create),
            Operation::Update(update) => run.update(index, update),
            Operation::Move(r#move) => run.relocate(index, r#move),
            Operation::Delete(delete) => run.delete(index, delete),
        };
        if let Err(problem) = done {
            run.errors.push(PatchError { at, problem });
        }
    }
    run.settle_deleted_dependencies();
    run.resolve_questions(patch);
    run.resolve_conflicts(patch);
    if run.work.tasks.len() > MAX_PLAN_TASKS {
        run.errors.push(PatchError {
            at: Location::Patch,
            problem: PatchProblem::TooManyTasks {
                count: run.work.tasks.len(),
                max: MAX_PLAN_TASKS,
            },
        });
    }
    if !run.errors.is_empty() {
        return Err(PatchErrors(run.errors));
    }
    let deps_set_by = std::mem::take(&mut run.deps_set_by);
    let mut summary = std::mem::take(&mut run.summary);
    summary.understanding = patch.understanding.clone();
    let result = run.work.into_plan();
    let errors: Vec<PatchError> = result
        .check()
        .into_iter()
        .map(|finding| match finding {
            PlanFinding::DependencyCycle { ids } => {
                let mut indices: Vec<usize> =
                    ids.iter().filter_map(|id| deps_set_by.get(id).copied()).collect();
                indices.sort_unstable();
                indices.dedup();
                PatchError {
                    at: match indices.as_slice() {
                        [] => Location::Patch,
                        [index] => Location::Operation {
                            index: *index,
                            op: patch.operations[*index].name(),
                        },
                        _ => Location::Operations { indices },
                    },
                    problem: PatchProblem::DependencyCycle { ids },
                }
            }
            finding => PatchError {
                at: Location::Patch,
                problem: PatchProblem::ResultInvalid { finding },
            },
        })
        .collect();
    if !errors.is_empty() {
        return Err(PatchErrors(errors));
    }
    Ok((result, summary))
}

/// The WBS as the patch edits it: each node's parent (`None`: the root) and each parent's
/// children, so a move is a couple of list edits instead of a search.
struct Work {
    tasks: BTreeMap<TaskId, TaskDesign>,
    children: HashMap<Option<TaskId>, Vec<TaskId>>,
    parent: HashMap<TaskId, Option<TaskId>>,
}

impl Work {
    fn from_plan(plan: &Plan) -> Work {
        let mut children: HashMap<Option<TaskId>, Vec<TaskId>> = HashMap::new();
        let mut parent = HashMap::with_capacity(plan.tasks.len());
        for id in &plan.wbs.roots {
            parent.insert(id.clone(), None);
        }
        children.insert(None, plan.wbs.roots.clone());
        for (p, list) in &plan.wbs.children {
            for id in list {
                parent.insert(id.clone(), Some(p.clone()));
            }
            children.insert(Some(p.clone()), list.clone());
        }
        Work {
            tasks: plan.tasks.clone(),
            children,
            parent,
        }
    }

    fn into_plan(mut self) -> Plan {
        let roots = self.children.remove(&None).unwrap_or_default();
        let children = self
            .children
            .into_iter()
            .filter_map(|(p, list)| Some((p?, list)))
            .filter(|(_, list)| !list.is_empty())
            .collect();
        Plan {
            tasks: self.tasks,
            wbs: super::model::Wbs { roots, children },
        }
    }

    /// Take `id` out of its parent's children, returning where it was.
    fn detach(&mut self, id: &TaskId) -> Option<(Option<TaskId>, usize)> {
        let parent = self.parent.remove(id)?;
        let siblings = self.children.get_mut(&parent)?;
        let at = siblings.iter().position(|s| s == id)?;
        siblings.remove(at);
        Some((parent, at))
    }

    fn attach(&mut self, id: &TaskId, parent: Option<TaskId>, at: usize) {
        let siblings = self.children.entry(parent.clone()).or_default();
        let at = at.min(siblings.len());
        siblings.insert(at, id.clone());
        self.parent.insert(id.clone(), parent);
    }

    /// Whether `ancestor` is `id` or above it. Bounded by the node count, so even a
    /// broken WBS cannot loop.
    fn is_ancestor_or_self(&self, ancestor: &TaskId, id: &TaskId) -> bool {
        let mut at = Some(id);
        for _ in 0..=self.parent.len() {
            match at {
                Some(node) if node == ancestor => return true,
                Some(node) => at = self.parent.get(node).and_then(Option::as_ref),
                None => return false,
            }
        }
        false
    }

    /// `id` and everything under it, depth first.
    fn subtree(&self, id: &TaskId) -> Vec<TaskId> {
        let mut order = Vec::new();
        let mut seen = HashSet::new();
        let mut stack = vec![id.clone()];
        while let Some(node) = stack.pop() {
            if !seen.insert(node.clone()) {
                continue;
            }
            if let Some(children) = self.children.get(&Some(node.clone())) {
                stack.extend(children.iter().rev().cloned());
            }
            order.push(node);
        }
        order
    }
}

/// One application in progress.
struct Run<'a> {
    ctx: &'a PatchContext,
    /// Each operation's kind, for locations.
    names: Vec<&'static str>,
    work: Work,
    /// Ids the plan had before the patch.
    existing: &'a BTreeMap<TaskId, TaskDesign>,
    /// `temp_id` → (its create's index, the new id).
    temp: HashMap<String, (usize, TaskId)>,
    /// Deleted id → the operation that deleted it.
    deleted: HashMap<TaskId, usize>,
    /// Task → the last operation that set its dependencies.
    deps_set_by: HashMap<TaskId, usize>,
    summary: PatchSummary,
    errors: Vec<PatchError>,
}

impl<'a> Run<'a> {
    fn new(plan: &'a Plan, patch: &PlanPatch, ctx: &'a PatchContext) -> Run<'a> {
        Run {
            ctx,
            names: patch.operations.iter().map(Operation::name).collect(),
            work: Work::from_plan(plan),
            existing: &plan.tasks,
            temp: HashMap::new(),
            deleted: HashMap::new(),
            deps_set_by: HashMap::new(),
            summary: PatchSummary::default(),
            errors: Vec::new(),
        }
    }

    fn error(&mut self, at: Location, problem: PatchProblem) {
        self.errors.push(PatchError { at, problem });
    }

    /// Length limits of every text and list.
    fn check_sizes(&mut self, patch: &PlanPatch) {
        let mut problems: Vec<(Location, PatchProblem)> = Vec::new();
        let text = |at: &Location, field: &str, value: &str, max: usize, blank_ok: bool| {
            let chars = value.chars().count();
            let problem = if chars > max {
                PatchProblem::TooLong {
                    field: field.to_string(),
                    chars,
                    max,
                }
            } else if !blank_ok && value.trim().is_empty() {
                PatchProblem::Blank {
                    field: field.to_string(),
                }
            } else {
                return None;
            };
            Some((at.clone(), problem))
        };
        problems.extend(text(
            &Location::Patch,
            "understanding",
            &patch.understanding,
            MAX_TEXT_CHARS,
            true,
        ));
        let mut lists: Vec<(Location, &str, &[String])> = Vec::new();
        for (index, operation) in patch.operations.iter().enumerate() {
            let at = Location::Operation {
                index,
                op: operation.name(),
            };
            let (title, description, criteria, dependencies, hints, facets, pool) =
                match operation {
                    Operation::Create(c) => (
                        Some(&c.title),
                        Some(&c.description),
                        Some(&c.acceptance_criteria),
                        Some(&c.dependencies),
                        c.suggested_impl.as_ref(),
                        [c.milestone.as_ref(), c.phase.as_ref()],
                        c.pool.as_ref(),
                    ),
                    Operation::Update(u) => (
                        u.title.as_ref(),
                        u.description.as_ref(),
                        u.acceptance_criteria.as_ref(),
                        u.dependencies.as_ref(),
                        u.suggested_impl.as_ref(),
                        [u.milestone.as_ref(), u.phase.as_ref()],
                        u.pool.as_ref(),
                    ),
                    Operation::Move(_) | Operation::Delete(_) => {
                        (None, None, None, None, None, [None, None], None)
                    }
                };
            if let Some(title) = title {
                problems.extend(text(&at, "title", title, MAX_TITLE_CHARS, false));
            }
            if let Some(description) = description {
                problems.extend(text(&at, "description", description, MAX_TEXT_CHARS, true));
            }
            for (name, facet) in ["milestone", "phase"].into_iter().zip(facets) {
                if let Some(facet) = facet {
                    problems.extend(text(&at, name, facet, MAX_TITLE_CHARS, true));
                }
            }
            if let Some(criteria) = criteria {
                for criterion in criteria {
                    problems.extend(text(
                        &at,
                        "an acceptance criterion",
                        criterion,
                        MAX_ITEM_CHARS,
                        false,
                    ));
                }
                lists.push((at.clone(), "acceptance_criteria", criteria));
            }
            if let Some(dependencies) = dependencies {
                lists.push((at.clone(), "dependencies", dependencies));
            }
            if let Some(hints) = hints {
                if let Some(language) = &hints.language {
                    problems.extend(text(&at, "suggested_impl.language", language, MAX_TITLE_CHARS, true));
                }
                for item in hints.file_paths.iter().chain(&hints.constraints) {
                    problems.extend(text(&at, "suggested_impl", item, MAX_ITEM_CHARS, true));
                }
                lists.push((at.clone(), "suggested_impl.file_paths", &hints.file_paths));
                lists.push((at.clone(), "suggested_impl.constraints", &hints.constraints));
            }
            if let Some(pool) = pool
                && !is_name(pool)
            {
                problems.push((at.clone(), PatchProblem::BadPool { pool: pool.clone() }));
            }
        }
        if patch.questions.len() > MAX_QUESTIONS {
            problems.push((
                Location::Patch,
                PatchProblem::TooManyItems {
                    field: "questions".into(),
                    count: patch.questions.len(),
                    max: MAX_QUESTIONS,
                },
            ));
        }
        for (index, question) in patch.questions.iter().enumerate() {
            let at = Location::Question { index };
            match question {
                Question::Text(q) => problems.extend(text(&at, "question", q, MAX_ITEM_CHARS, false)),
                Question::Detailed(d) => {
                    problems.extend(text(&at, "question", &d.question, MAX_ITEM_CHARS, false));
                    for option in &d.options {
                        problems.extend(text(&at, "option", option, MAX_ITEM_CHARS, true));
                    }
                    lists.push((at.clone(), "tasks", &d.tasks));
                    lists.push((at.clone(), "options", &d.options));
                }
            }
        }
        if patch.conflicts.len() > MAX_CONFLICTS {
            problems.push((
                Location::Patch,
                PatchProblem::TooManyItems {
                    field: "conflicts".into(),
                    count: patch.conflicts.len(),
                    max: MAX_CONFLICTS,
                },
            ));
        }
        for (index, conflict) in patch.conflicts.iter().enumerate() {
            let at = Location::Conflict { index };
            problems.extend(text(&at, "file", &conflict.file, MAX_ITEM_CHARS, false));
            if let Some(reason) = &conflict.reason {
                problems.extend(text(&at, "reason", reason, MAX_ITEM_CHARS, true));
            }
            lists.push((at.clone(), "tasks", &conflict.tasks));
            if !is_relative_path(&conflict.file) {
                problems.push((
                    at.clone(),
                    PatchProblem::BadPath {
                        file: conflict.file.clone(),
                    },
                ));
            }
        }
        for (at, field, list) in lists {
            if list.len() > MAX_ITEMS {
                problems.push((
                    at,
                    PatchProblem::TooManyItems {
                        field: field.to_string(),
                        count: list.len(),
                        max: MAX_ITEMS,
                    },
                ));
            }
        }
        for (at, problem) in problems {
            self.error(at, problem);
        }
    }

    /// Map every valid, unique `temp_id` to a new id.
    fn assign_ids(&mut self, patch: &PlanPatch) {
        let mut n: u64 = 0;
        for (index, operation) in patch.operations.iter().enumerate() {
            let Operation::Create(create) = operation else {
                continue;
            };
            let at = Location::Operation {
                index,
                op: "create",
            };
            let temp_id = &create.temp_id;
            if temp_id.is_empty()
                || temp_id.chars().count() > MAX_TEMP_ID_CHARS
                || temp_id.chars().any(char::is_control)
            {
                self.error(
                    at,
                    PatchProblem::BadTempId {
                        temp_id: temp_id.clone(),
                    },
                );
                continue;
            }
            if let Some((first, _)) = self.temp.get(temp_id) {
                let first = *first;
                self.error(
                    at,
                    PatchProblem::DuplicateTempId {
                        temp_id: temp_id.clone(),
                        first,
                    },
                );
                continue;
            }
            if TaskId::parse(temp_id).is_ok_and(|id| self.existing.contains_key(&id)) {
                self.error(
                    at,
                    PatchProblem::TempIdClash {
                        temp_id: temp_id.clone(),
                    },
                );
                continue;
            }
            // The smallest free number: the plan holds at most MAX_PLAN_TASKS ids, so this
            // ends within that many steps.
            let id = loop {
                n += 1;
                match TaskId::parse(&format!("{}{n}", self.ctx.id_prefix)) {
                    Ok(id) if self.existing.contains_key(&id) => continue,
                    Ok(id) => break Some(id),
                    Err(_) => break None,
                }
            };
            let Some(id) = id else {
                self.error(
                    at,
                    PatchProblem::BadIdPrefix {
                        prefix: self.ctx.id_prefix.clone(),
                    },
                );
                return;
            };
            self.temp.insert(temp_id.clone(), (index, id.clone()));
            self.summary.created.push(Created {
                temp_id: temp_id.clone(),
                id,
            });
        }
    }

    /// Every created design exists (unplaced) before the first operation runs, so any
    /// operation's dependencies and parents may name it.
    fn insert_created(&mut self, patch: &PlanPatch) {
        for (index, operation) in patch.operations.iter().enumerate() {
            let Operation::Create(create) = operation else {
                continue;
            };
            let Some((first, id)) = self.temp.get(&create.temp_id).cloned() else {
                continue;
            };
            if first != index {
                continue;
            }
            let at = Location::Operation {
                index,
                op: "create",
            };
            let dependencies = match self.resolve_dependencies(&id, &create.dependencies) {
                Ok(dependencies) => dependencies,
                Err(problems) => {
                    for problem in problems {
                        self.error(at.clone(), problem);
                    }
                    Vec::new()
                }
            };
            self.deps_set_by.insert(id.clone(), index);
            let design = TaskDesign {
                id: id.clone(),
                title: create.title.trim().to_string(),
                description: create.description.clone(),
                acceptance_criteria: create.acceptance_criteria.clone(),
                suggested_impl: create.suggested_impl.clone().map(hints),
                dependencies,
                milestone: facet(create.milestone.as_ref()),
                phase: facet(create.phase.as_ref()),
                pool: create
                    .pool
                    .clone()
                    .unwrap_or_else(|| DEFAULT_POOL.to_string()),
                priority: create.priority.unwrap_or(0),
                runner: Default::default(),
                created_at: self.ctx.now.clone(),
                updated_at: self.ctx.now.clone(),
                created_by: self.ctx.author.clone(),
            };
            self.work.tasks.insert(id, design);
        }
    }

    /// A dependency list's references as ids: each must name a task of the plan or a
    /// `temp_id` (deletions are settled at the end), none twice.
    fn resolve_dependencies(
        &self,
        task: &TaskId,
        references: &[String],
    ) -> Result<Vec<TaskId>, Vec<PatchProblem>> {
        let mut problems = Vec::new();
        let mut ids: Vec<TaskId> = Vec::with_capacity(references.len());
        let mut seen = HashSet::new();
        for reference in references {
            let Some(id) = self.lookup(reference) else {
                problems.push(PatchProblem::UnknownDependency {
                    reference: reference.clone(),
                });
                continue;
            };
            if !seen.insert(id.clone()) {
                problems.push(PatchProblem::DuplicateDependency {
                    task: task.clone(),
                    dependency: id,
                });
                continue;
            }
            ids.push(id);
        }
        if problems.is_empty() {
            Ok(ids)
        } else {
            Err(problems)
        }
    }

    /// The id a reference names: a `temp_id` of the patch, else a task of the plan as it
    /// was or as the patch made it so far (deleted ones included: the caller decides).
    fn lookup(&self, reference: &str) -> Option<TaskId> {
        if let Some((_, id)) = self.temp.get(reference) {
            return Some(id.clone());
        }
        let id = TaskId::parse(reference).ok()?;
        (self.work.tasks.contains_key(&id) || self.deleted.contains_key(&id)).then_some(id)
    }

    /// The task an `update`, `move` or `delete` at `index` acts on: it exists now.
    fn target(&self, index: usize, reference: &str) -> Result<TaskId, PatchProblem> {
        if let Some((create, _)) = self.temp.get(reference)
            && *create > index
        {
            return Err(PatchProblem::NotCreatedYet {
                temp_id: reference.to_string(),
                create: *create,
            });
        }
        let id = self
            .lookup(reference)
            .ok_or_else(|| PatchProblem::UnknownTask {
                reference: reference.to_string(),
            })?;
        self.present(id)
    }

    /// `id` unless an earlier operation deleted it.
    fn present(&self, id: TaskId) -> Result<TaskId, PatchProblem> {
        match self.deleted.get(&id) {
            Some(by) => Err(PatchProblem::TaskDeleted { id, by: *by }),
            None => Ok(id),
        }
    }

    /// The parent a `create` or `move` names (`None`: the root).
    fn parent(&self, reference: Option<&String>) -> Result<Option<TaskId>, PatchProblem> {
        let Some(reference) = reference else {
            return Ok(None);
        };
        let id = self
            .lookup(reference)
            .ok_or_else(|| PatchProblem::UnknownParent {
                reference: reference.clone(),
            })?;
        self.present(id).map(Some)
    }

    /// Put `id` (not placed) under `parent` at `position`, or say why not; nothing
    /// changes on an error.
    fn place(
        &mut self,
        id: &TaskId,
        parent: Option<TaskId>,
        position: Option<&Position>,
    ) -> Result<(), PatchProblem> {
        if let Some(parent) = &parent
            && self.work.is_ancestor_or_self(id, parent)
        {
            return Err(PatchProblem::OwnAncestor {
                task: id.clone(),
                parent: parent.clone(),
            });
        }
        let siblings: &[TaskId] = self
            .work
            .children
            .get(&parent)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let anchor = |reference: &String| -> Result<usize, PatchProblem> {
            self.lookup(reference)
                .and_then(|a| siblings.iter().position(|s| *s == a))
                .ok_or_else(|| PatchProblem::NotASibling {
                    anchor: reference.clone(),
                    parent: parent.clone(),
                })
        };
        let at = match position {
            None | Some(Position::End) => siblings.len(),
            Some(Position::Index(i)) => (*i).min(siblings.len()),
            Some(Position::Before(reference)) => anchor(reference)?,
            Some(Position::After(reference)) => anchor(reference)? + 1,
        };
        self.work.attach(id, parent, at);
        Ok(())
    }

    fn place_created(&mut self, index: usize, create: &Create) -> Result<(), PatchProblem> {
        let Some((first, id)) = self.temp.get(&create.temp_id).cloned() else {
            return Ok(()); // its temp_id is already reported
        };
        if first != index {
            return Ok(());
        }
        let parent = self.parent(create.parent_id.as_ref())?;
        self.place(&id, parent, create.position.as_ref())
    }

    fn update(&mut self, index: usize, update: &Update) -> Result<(), PatchProblem> {
        let id = self.target(index, &update.task_id)?;
        let Update {
            task_id: _,
            title,
            description,
            acceptance_criteria,
            dependencies,
            suggested_impl,
            milestone,
            phase,
            pool,
            priority,
        } = update;
        if title.is_none()
            && description.is_none()
            && acceptance_criteria.is_none()
            && dependencies.is_none()
            && suggested_impl.is_none()
            && milestone.is_none()
            && phase.is_none()
            && pool.is_none()
            && priority.is_none()
        {
            return Err(PatchProblem::EmptyUpdate { id });
        }
        if self.ctx.running.contains(&id) {
            let fields: Vec<&'static str> = [
                ("description", description.is_some()),
                ("acceptance_criteria", acceptance_criteria.is_some()),
                ("dependencies", dependencies.is_some()),
                ("suggested_impl", suggested_impl.is_some()),
                ("pool", pool.is_some()),
            ]
            .into_iter()
            .filter_map(|(name, set)| set.then_some(name))
            .collect();
            if !fields.is_empty() {
                return Err(PatchProblem::RunningTaskChanged { id, fields });
            }
        }
        let resolved = match dependencies {
            Some(references) => match self.resolve_dependencies(&id, references) {
                Ok(ids) => Some(ids),
                Err(problems) => {
                    // Report all but the first through `errors`; the first is this
                    // operation's result.
                    let mut problems = problems.into_iter();
                    let first = problems.next();
                    for problem in problems {
                        self.error(
                            Location::Operation {
                                index,
                                op: "update",
                            },
                            problem,
                        );
                    }
                    return first.map_or(Ok(()), Err);
                }
            },
            None => None,
        };
        let Some(design) = self.work.tasks.get_mut(&id) else {
            return Err(PatchProblem::UnknownTask {
                reference: update.task_id.clone(),
            });
        };
        if let Some(title) = title {
            design.title = title.trim().to_string();
        }
        if let Some(description) = description {
            design.description = description.clone();
        }
        if let Some(criteria) = acceptance_criteria {
            design.acceptance_criteria = criteria.clone();
        }
        if let Some(ids) = resolved {
            design.dependencies = ids;
            self.deps_set_by.insert(id.clone(), index);
        }
        if let Some(h) = suggested_impl {
            design.suggested_impl = Some(hints(h.clone()));
        }
        if milestone.is_some() {
            design.milestone = facet(milestone.as_ref());
        }
        if phase.is_some() {
            design.phase = facet(phase.as_ref());
        }
        if let Some(pool) = pool {
            design.pool = pool.clone();
        }
        if let Some(priority) = priority {
            design.priority = *priority;
        }
        design.updated_at = self.ctx.now.clone();
        if !self.summary.updated.contains(&id) {
            self.summary.updated.push(id);
        }
        Ok(())
    }

    fn relocate(&mut self, index: usize, r#move: &Move) -> Result<(), PatchProblem> {
        let id = self.target(index, &r#move.task_id)?;
        let parent = self.parent(r#move.parent_id.as_ref())?;
        let Some((old_parent, old_at)) = self.work.detach(&id) else {
            // Only a created task can be unplaced here, and `target` refused those
            // whose create comes later.
            return Err(PatchProblem::UnknownTask {
                reference: r#move.task_id.clone(),
            });
        };
        if let Err(problem) = self.place(&id, parent, r#move.position.as_ref()) {
            self.work.attach(&id, old_parent, old_at);
            return Err(problem);
        }
        if !self.summary.moved.contains(&id) {
            self.summary.moved.push(id);
        }
        Ok(())
    }

    fn delete(&mut self, index: usize, delete: &Delete) -> Result<(), PatchProblem> {
        let id = self.target(index, &delete.task_id)?;
        let doomed = if delete.cascade {
            self.work.subtree(&id)
        } else {
            vec![id.clone()]
        };
        let running: Vec<TaskId> = doomed
            .iter()
            .filter(|d| self.ctx.running.contains(*d))
            .cloned()
            .collect();
        if !running.is_empty() {
            return Err(PatchProblem::RunningTaskDeleted { ids: running });
        }
        let Some((parent, at)) = self.work.detach(&id) else {
            return Err(PatchProblem::UnknownTask {
                reference: delete.task_id.clone(),
            });
        };
        let children = self
            .work
            .children
            .remove(&Some(id.clone()))
            .unwrap_or_default();
        if delete.cascade {
            for node in &doomed[1..] {
                self.work.parent.remove(node);
                self.work.children.remove(&Some(node.clone()));
            }
        } else {
            // The children take the deleted task's place, in order (the original's
            // "option A", QH-003).
            for (offset, child) in children.iter().enumerate() {
                self.work.attach(child, parent.clone(), at + offset);
            }
        }
        for node in doomed {
            self.work.tasks.remove(&node);
            self.deps_set_by.remove(&node);
            self.deleted.insert(node.clone(), index);
            self.summary.deleted.push(node);
        }
        Ok(())
    }

    /// Edges to deleted tasks: removed and reported when the plan had them, an error when
    /// this patch set them.
    fn settle_deleted_dependencies(&mut self) {
        if self.deleted.is_empty() {
            return;
        }
        let mut problems = Vec::new();
        for (id, design) in self.work.tasks.iter_mut() {
            if !design.dependencies.iter().any(|d| self.deleted.contains_key(d)) {
                continue;
            }
            if let Some(set_by) = self.deps_set_by.get(id) {
                for dependency in &design.dependencies {
                    if let Some(by) = self.deleted.get(dependency) {
                        problems.push((
                            *set_by,
                            PatchProblem::DependencyOnDeleted {
                                task: id.clone(),
                                dependency: dependency.clone(),
                                deleted_by: *by,
                            },
                        ));
                    }
                }
                continue;
            }
            let deleted = &self.deleted;
            let summary = &mut self.summary;
            design.dependencies.retain(|dependency| {
                let keep = !deleted.contains_key(dependency);
                if !keep {
                    summary.removed_dependencies.push(RemovedDependency {
                        task: id.clone(),
                        dependency: dependency.clone(),
                    });
                }
                keep
            });
            design.updated_at = self.ctx.now.clone();
        }
        problems.sort_by_key(|(index, _)| *index);
        for (index, problem) in problems {
            self.error(self.op_location(index), problem);
        }
    }

    fn op_location(&self, index: usize) -> Location {
        Location::Operation {
            index,
            op: self.names.get(index).copied().unwrap_or("operation"),
        }
    }

    /// Task references of questions and conflicts, as ids of the patched plan.
    fn resolve_references(&self, references: &[String]) -> Result<Vec<TaskId>, PatchProblem> {
        let mut ids = Vec::with_capacity(references.len());
        for reference in references {
            let id = self
                .lookup(reference)
                .ok_or_else(|| PatchProblem::UnknownTask {
                    reference: reference.clone(),
                })?;
            let id = self.present(id)?;
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        Ok(ids)
    }

    fn resolve_questions(&mut self, patch: &PlanPatch) {
        for (index, question) in patch.questions.iter().enumerate() {
            let (text, tasks, options): (&str, &[String], &[String]) = match question {
                Question::Text(text) => (text, &[], &[]),
                Question::Detailed(d) => (&d.question, &d.tasks, &d.options),
            };
            match self.resolve_references(tasks) {
                Ok(tasks) => self.summary.questions.push(PlannedQuestion {
                    question: text.trim().to_string(),
                    tasks,
                    options: options.to_vec(),
                }),
                Err(problem) => self.error(Location::Question { index }, problem),
            }
        }
    }

    fn resolve_conflicts(&mut self, patch: &PlanPatch) {
        for (index, conflict) in patch.conflicts.iter().enumerate() {
            match self.resolve_references(&conflict.tasks) {
                Ok(tasks) => self.summary.conflicts.push(PlannedConflict {
                    file: conflict.file.clone(),
                    tasks,
                    reason: conflict.reason.clone(),
                }),
                Err(problem) => self.error(Location::Conflict { index }, problem),
            }
        }
    }
}

fn hints(h: ImplHints) -> SuggestedImpl {
    SuggestedImpl {
        language: h.language,
        file_paths: h.file_paths,
        constraints: h.constraints,
    }
}

/// A facet's value: `""` (or blank) means none.
fn facet(value: Option<&String>) -> Option<String> {
    value
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// A pool name: 1 to 64 of `A-Z a-z 0-9 . _ -`.
fn is_name(text: &str) -> bool {
    (1..=64).contains(&text.len())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// A path inside the project: relative, no `..`, no NUL.
fn is_relative_path(file: &str) -> bool {
    let path = std::path::Path::new(file);
    !file.contains('\0')
        && !path.has_root()
        && !file.starts_with('\\')
        && path
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir))
}
