//! The planner ("meta") protocols: `plan_task`, `next_action` and `completion_assessment`,
//! and Multiverse's `plan_patch` (its reply type is Multiverse's: `Planner::ask`).
//! Requests carry the evidence ([`request`]), replies are enveloped, schema-checked and
//! typed ([`response`]), prompts are rendered from `templates/planner/` ([`render`]), and
//! the [`planner::Planner`] runs one call: render, ask a provider, extract, check, and ask
//! again with the error when the reply is invalid.
//!
//! Modules inside `runner` use the files directly (`protocol::request::…`), not these
//! re-exports, so the import graph has no cycle through this file.

pub(crate) mod planner;
pub mod render;
pub(crate) mod request;
pub mod response;

pub use planner::{Call, Exchange, Planner, PlannerError, PlannerOptions};
pub use request::{
    CompletionAssessmentRequest, Criterion, CriterionState, NextActionRequest, PlanTaskRequest,
    Protocol, RunEvidence, TestEvidence,
};
pub use response::{
    Action, CompletionAssessmentPayload, CriterionVerdict, Decision, InvalidReply,
    NextActionPayload, PlanTaskPayload, PlannedCriterion, Status, WorkerCall,
};
