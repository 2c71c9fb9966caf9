//! Why a patch is refused: each problem a stable key and the ids it is about, with where
//! in the patch it is (an operation by its index, a question, a conflict, the patch), and
//! the text the chat shows.

use serde::Serialize;

use super::types::MAX_TEMP_ID_CHARS;
use crate::multiverse::model::TaskId;
use crate::multiverse::plan::{PlanFinding, chain};

/// Where in the patch a problem is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "in", rename_all = "snake_case")]
pub enum Location {
    /// The patch as a whole.
    Patch,
    Operation {
        index: usize,
        op: &'static str,
    },
    /// Several operations together (the ones that set the edges of a cycle).
    Operations {
        indices: Vec<usize>,
    },
    Question {
        index: usize,
    },
    Conflict {
        index: usize,
    },
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
                write!(
                    f,
                    "temp_id {temp_id:?} is already created by operation {first}"
                )
            }
            PatchProblem::TempIdClash { temp_id } => {
                write!(f, "temp_id {temp_id:?} is an existing task's id")
            }
            PatchProblem::BadIdPrefix { prefix } => {
                write!(f, "{prefix:?} followed by a number is no valid task id")
            }
            PatchProblem::UnknownTask { reference } => {
                write!(
                    f,
                    "{reference:?} names no task and no temp_id of this patch"
                )
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
                write!(
                    f,
                    "task {task} would list the dependency {dependency} twice"
                )
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
