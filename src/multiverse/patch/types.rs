//! The `plan_patch` as a planner sends it: strict serde types (every object
//! `deny_unknown_fields`), the limits, the reply's envelope and the generated schema; and
//! what `apply` takes besides (`PatchContext`) and gives back (`PatchSummary`).

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::multiverse::model::TaskId;

/// The only envelope version there is.
pub const PLAN_PATCH_VERSION: u64 = 1;

/// Limits the schema states and `apply` enforces (a patch built in Rust skips the
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

/// What `apply` needs besides the plan and the patch.
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

impl PlanPatch {
    /// The patch in a planner's reply `{type: "plan_patch", version: 1, payload}`: the
    /// envelope first (a reply to another protocol is named as such), then the payload's
    /// strict types.
    pub fn from_reply(reply: &Value) -> Result<PlanPatch, InvalidPatchReply> {
        match reply.as_object() {
            Some(object) => PlanPatch::from_reply_object(object),
            None => Err(InvalidPatchReply("the reply is not a JSON object".into())),
        }
    }

    /// [`PlanPatch::from_reply`] for a reply already known to be an object (what the
    /// planner's `check` callback is given).
    pub fn from_reply_object(object: &Map<String, Value>) -> Result<PlanPatch, InvalidPatchReply> {
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

/// Why a planner's reply is no `plan_patch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidPatchReply(pub String);

impl std::fmt::Display for InvalidPatchReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidPatchReply {}
