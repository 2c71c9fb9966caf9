//! The `plan_patch` a chat planner answers with, and its application: typed, strict
//! (`deny_unknown_fields`) serde types whose JSON Schema is generated
//! (`schemas/multiverse/plan_patch.schema.json`, a test keeps it fresh), and [`apply`], a
//! pure function that returns the new plan and a summary, or every reason the patch cannot
//! be applied. Never half of it: the original committed its creates before it looked at
//! the rest (digest §10.2, AR-B15), created phantom WBS nodes for unknown parents (AR-M14)
//! and checked no cycle (AR-M13).
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

mod apply;
mod problem;
mod sizes;
mod types;
mod work;

pub use apply::apply;
pub use problem::{Location, PatchError, PatchErrors, PatchProblem};
pub(crate) use sizes::task_design as task_design_problems;
pub use types::{
    Conflict, Create, Created, Delete, DetailedQuestion, ImplHints, InvalidPatchReply,
    MAX_CONFLICTS, MAX_ITEM_CHARS, MAX_ITEMS, MAX_OPERATIONS, MAX_PLAN_TASKS, MAX_QUESTIONS,
    MAX_TEMP_ID_CHARS, MAX_TEXT_CHARS, MAX_TITLE_CHARS, Move, Operation, PLAN_PATCH_VERSION,
    PatchContext, PatchSummary, PlanPatch, PlannedConflict, PlannedQuestion, Position, Question,
    RemovedDependency, Update, generated_plan_patch_schema, plan_patch_schema,
};
