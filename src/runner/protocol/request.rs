//! What the planner is asked, per protocol: typed requests that carry the evidence it
//! decides on. The original's planner saw only counts (AR-B7); here `next_action` and
//! `completion_assessment` see the criteria, every run's exit code, summary, output tail
//! and diff stat, and the last test result.
//!
//! The host fills these; the planner renders them into the prompt and hands them, as
//! JSON, to the provider (the mock decides on them, not on prompt text: AR-B5).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The planner protocols: the three of a task, and Multiverse's `plan_patch` (a chat turn
/// that changes a plan), whose reply type and schema live with Multiverse and reach the
/// planner through [`crate::runner::Planner::ask`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    PlanTask,
    NextAction,
    CompletionAssessment,
    PlanPatch,
}

impl Protocol {
    /// The protocols of a task, whose reply types and schemas are the runner's own.
    pub const ALL: [Protocol; 3] = [
        Protocol::PlanTask,
        Protocol::NextAction,
        Protocol::CompletionAssessment,
    ];

    /// The name used in the response envelope's `type`, in file names and in logs.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::PlanTask => "plan_task",
            Protocol::NextAction => "next_action",
            Protocol::CompletionAssessment => "completion_assessment",
            Protocol::PlanPatch => "plan_patch",
        }
    }

    pub fn from_name(name: &str) -> Option<Protocol> {
        Protocol::ALL
            .into_iter()
            .chain([Protocol::PlanPatch])
            .find(|p| p.name() == name)
    }
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// An acceptance criterion as the task holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Criterion {
    /// `AC-1`, `AC-2`, ...
    pub id: String,
    pub description: String,
    /// A critical criterion must pass for the task to be complete.
    #[serde(default)]
    pub critical: bool,
}

/// A criterion with what is known about it so far (from the last assessment, if any).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CriterionState {
    #[serde(flatten)]
    pub criterion: Criterion,
    /// `passed`, `failed` or `unknown` (nothing assessed yet).
    #[serde(default = "unknown")]
    pub status: String,
    /// The last assessment's comment on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

fn unknown() -> String {
    "unknown".to_owned()
}

/// One worker run, as the planner sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunEvidence {
    pub id: String,
    /// The worker's exit code (124 when it timed out, 130 when cancelled).
    pub exit_code: i32,
    pub duration_ms: u64,
    /// What the worker said it did (its final message), or why it failed.
    pub summary: String,
    /// The end of the worker's output; the planner truncates it further by characters.
    #[serde(default)]
    pub stdout_tail: String,
    /// `git diff --stat` of the work tree after the run.
    #[serde(default)]
    pub diff_stat: String,
    #[serde(default)]
    pub files_changed: Vec<String>,
}

/// The task's test command and how it went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TestEvidence {
    pub command: String,
    pub exit_code: i32,
    /// The end of its combined output.
    #[serde(default)]
    pub output_tail: String,
}

impl TestEvidence {
    pub fn passed(&self) -> bool {
        self.exit_code == 0
    }
}

/// `plan_task`: turn the PRD into acceptance criteria.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanTaskRequest {
    pub task_id: String,
    pub title: String,
    pub prd: String,
    /// The task's `suggested_impl` block as given (language, file paths, constraints).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_impl: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_command: Option<String>,
}

/// `next_action`: decide what happens next, from the criteria and the runs so far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NextActionRequest {
    pub title: String,
    pub prd: String,
    pub acceptance_criteria: Vec<CriterionState>,
    /// The most recent runs, oldest first.
    #[serde(default)]
    pub runs: Vec<RunEvidence>,
    pub loops_used: u32,
    pub max_loops: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_test: Option<TestEvidence>,
}

/// `completion_assessment`: judge every criterion against all the evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CompletionAssessmentRequest {
    pub title: String,
    pub prd: String,
    pub acceptance_criteria: Vec<Criterion>,
    /// Every run of the task, oldest first.
    #[serde(default)]
    pub runs: Vec<RunEvidence>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<TestEvidence>,
}
