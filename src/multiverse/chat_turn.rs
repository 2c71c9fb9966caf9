//! One chat turn against the orchestrator: the user's message is kept; a control word
//! (stop, pause, resume, status) is handled without the planner; anything else goes to
//! the planner as a `plan_patch` request whose reply is checked by parsing it and applying
//! it to a copy of the plan, so a patch that cannot be applied goes back to the planner
//! with every reason. An applied patch becomes the plan in one journal entry; its
//! questions open QUESTION backlog items that hold the tasks they name; when it created
//! tasks, execution starts (autopilot). The reply summarises what changed.

use serde::Serialize;

use super::chat::{self, ChatMessage, ChatRole, TaskLine};
use super::chat_log::{ChatLog, ChatLogError};
use super::control::{Control, control_word};
use super::model::{ExecutionState, TaskId};
use super::orchestrator::{Orchestrator, OrchestratorError};
use super::patch::{PatchContext, PatchSummary, PlanPatch, apply, plan_patch_schema};
use crate::runner::Cancel;
use crate::runner::protocol::planner::Planner;
use crate::runner::protocol::response::InvalidReply;

/// What a chat turn did.
#[derive(Debug, Clone, Serialize)]
pub struct TurnOutcome {
    pub session: String,
    /// The assistant's reply, as kept in the session.
    pub reply: String,
    /// The control word handled instead of the planner.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control: Option<Control>,
    /// What the applied patch changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<PatchSummary>,
    /// The backlog items opened for the patch's questions.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<String>,
    /// Execution was started because the patch created tasks.
    pub autopilot: bool,
    /// Why nothing changed (the planner failed or its patches could not be applied).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Why a turn could not be handled at all.
#[derive(Debug)]
pub enum TurnError {
    Log(ChatLogError),
    Orchestrator(OrchestratorError),
}

impl TurnError {
    pub fn key(&self) -> &'static str {
        match self {
            TurnError::Log(e) => e.key(),
            TurnError::Orchestrator(e) => e.key(),
        }
    }
}

impl std::fmt::Display for TurnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TurnError::Log(e) => e.fmt(f),
            TurnError::Orchestrator(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for TurnError {}

impl From<ChatLogError> for TurnError {
    fn from(e: ChatLogError) -> TurnError {
        TurnError::Log(e)
    }
}

impl From<OrchestratorError> for TurnError {
    fn from(e: OrchestratorError) -> TurnError {
        TurnError::Orchestrator(e)
    }
}

/// Runs one turn of `session` (a new one when `None`).
pub fn chat_turn(
    orchestrator: &mut Orchestrator,
    planner: &mut Planner,
    log: &ChatLog,
    session: Option<&str>,
    message: &str,
    cancel: &Cancel,
) -> Result<TurnOutcome, TurnError> {
    let now = orchestrator.clock().rfc3339();
    let session = match session {
        Some(s) => s.to_string(),
        None => log.new_session(&crate::runner::time::now().compact()),
    };
    let history = log.read(&session)?;
    log.append(&session, &said(ChatRole::User, message, &now))?;
    let mut outcome = TurnOutcome {
        session: session.clone(),
        reply: String::new(),
        control: None,
        patch: None,
        questions: Vec::new(),
        autopilot: false,
        error: None,
    };
    if let Some(control) = control_word(message) {
        outcome.control = Some(control);
        outcome.reply = handle_control(orchestrator, control)?;
        orchestrator.events().publish(
            "chat",
            serde_json::json!({"session": session, "step": "control", "control": control}),
        );
        log.append(&session, &said(ChatRole::Assistant, &outcome.reply, &now))?;
        return Ok(outcome);
    }
    let events = orchestrator.events().clone();
    let progress = |step: &str| {
        events.publish(
            "chat",
            serde_json::json!({"session": session, "step": step}),
        );
    };
    progress("analyzing");
    let tasks = task_lines(orchestrator);
    let request = chat::request(message, &tasks, &history);
    let plan = orchestrator.state().plan.clone();
    let context = PatchContext {
        running: orchestrator.running().into_iter().collect(),
        now: now.clone(),
        author: format!("chat:{session}"),
        id_prefix: format!("t{}-", orchestrator.state().seq + 1),
    };
    progress("planning");
    let schema = plan_patch_schema();
    let call = chat::ask(planner, &request, &schema, cancel, |reply| {
        let patch = PlanPatch::from_reply_object(reply).map_err(|e| InvalidReply(e.0))?;
        let (next, summary) =
            apply(&plan, &patch, &context).map_err(|e| InvalidReply(e.to_string()))?;
        Ok((next, summary))
    });
    let (next, summary) = match call.result {
        Ok(applied) => applied,
        Err(e) => {
            progress("failed");
            outcome.error = Some(e.to_string());
            outcome.reply = format!("Nothing was changed: {e}");
            log.append(&session, &said(ChatRole::Assistant, &outcome.reply, &now))?;
            return Ok(outcome);
        }
    };
    progress("persisting");
    orchestrator.replace_plan(next)?;
    for question in &summary.questions {
        let id = orchestrator.open_question(&question.question, &question.tasks)?;
        outcome.questions.push(id);
    }
    let created: Vec<String> = summary.created.iter().map(|c| c.id.to_string()).collect();
    if !created.is_empty() && orchestrator.state().execution != ExecutionState::Running {
        orchestrator.set_execution(ExecutionState::Running)?;
        outcome.autopilot = true;
    }
    outcome.reply = reply_text(&summary, outcome.autopilot);
    outcome.patch = Some(summary);
    progress("completed");
    let mut kept = said(ChatRole::Assistant, &outcome.reply, &now);
    kept.created_tasks = created;
    log.append(&session, &kept)?;
    Ok(outcome)
}

fn said(role: ChatRole, content: &str, at: &str) -> ChatMessage {
    ChatMessage {
        role,
        content: content.to_string(),
        at: at.to_string(),
        created_tasks: Vec::new(),
    }
}

/// The plan as the planner sees it, in WBS order.
fn task_lines(orchestrator: &Orchestrator) -> Vec<TaskLine> {
    let state = orchestrator.state();
    let parents = state.plan.parents();
    state
        .plan
        .wbs_order()
        .into_iter()
        .filter_map(|id| {
            let design = state.plan.tasks.get(id)?;
            Some(TaskLine {
                id: id.to_string(),
                title: design.title.clone(),
                status: state
                    .runtime
                    .get(id)
                    .map_or_else(String::new, |rt| rt.lifecycle.state.clone()),
                parent: parents.get(id).cloned().flatten().map(|p| p.to_string()),
                dependencies: design
                    .dependencies
                    .iter()
                    .map(ToString::to_string)
                    .collect(),
                phase: design.phase.clone(),
                milestone: design.milestone.clone(),
            })
        })
        .collect()
}

fn handle_control(orchestrator: &mut Orchestrator, control: Control) -> Result<String, TurnError> {
    Ok(match control {
        Control::Stop => {
            orchestrator.set_execution(ExecutionState::Idle)?;
            "Stopped: running tasks are being cancelled, and nothing new starts.".to_string()
        }
        Control::Pause => {
            orchestrator.set_execution(ExecutionState::Paused)?;
            "Paused: nothing new starts; what runs goes on.".to_string()
        }
        Control::Resume => {
            orchestrator.set_execution(ExecutionState::Running)?;
            "Running: ready tasks start as their pools allow.".to_string()
        }
        Control::Status => status_text(orchestrator),
    })
}

/// One paragraph: the execution state and how many tasks are in each state.
pub fn status_text(orchestrator: &Orchestrator) -> String {
    let counts = orchestrator.outcome_counts();
    let parts: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
    let open = orchestrator
        .state()
        .backlog
        .values()
        .filter(|b| b.resolved_at.is_none())
        .count();
    format!(
        "Execution is {:?}; tasks: {}; {open} open backlog item(s).",
        orchestrator.state().execution,
        if parts.is_empty() {
            "none".to_string()
        } else {
            parts.join(", ")
        }
    )
}

/// The reply for an applied patch: the understanding, then what changed.
fn reply_text(summary: &PatchSummary, autopilot: bool) -> String {
    let mut text = summary.understanding.trim().to_string();
    let list = |ids: &[String]| ids.join(", ");
    let created: Vec<String> = summary.created.iter().map(|c| c.id.to_string()).collect();
    let ids = |v: &[TaskId]| v.iter().map(ToString::to_string).collect::<Vec<_>>();
    for (label, items) in [
        ("Created", created),
        ("Updated", ids(&summary.updated)),
        ("Moved", ids(&summary.moved)),
        ("Deleted", ids(&summary.deleted)),
    ] {
        if !items.is_empty() {
            text.push_str(&format!("\n\n{label} ({}): {}", items.len(), list(&items)));
        }
    }
    for removed in &summary.removed_dependencies {
        text.push_str(&format!(
            "\n\n{} no longer depends on {} (deleted).",
            removed.task, removed.dependency
        ));
    }
    for conflict in &summary.conflicts {
        let tasks: Vec<String> = conflict.tasks.iter().map(ToString::to_string).collect();
        text.push_str(&format!(
            "\n\nConflict: {} ({}){}",
            conflict.file,
            tasks.join(", "),
            conflict
                .reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        ));
    }
    for question in &summary.questions {
        text.push_str(&format!("\n\nQuestion: {}", question.question));
    }
    if autopilot {
        text.push_str("\n\nExecution started.");
    }
    text
}
