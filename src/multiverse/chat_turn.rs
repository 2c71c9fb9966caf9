//! One chat turn against the orchestrator, driven by the chat turn contract
//! (`contracts/multiverse_chat.yml`, through [`ChatFlow`]): the user's message is kept;
//! what it is (a control word: stop, pause, resume, status) is submitted to the turn's
//! session, which answers with the reply and the execution state to set; anything else
//! goes to the planner as a `plan_patch` request whose reply is checked by parsing it and
//! applying it to a copy of the plan, so a patch that cannot be applied goes back to the
//! planner with every reason. The checked patch is submitted with what it changes; the
//! contract asks for it to be applied (the plan and its questions' backlog items in one
//! journal entry) and, when it created tasks, for execution to start (autopilot). The
//! reply is the contract's message in the turn's locale, with a line per change.

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::chat::{self, ChatMessage, ChatRole, TaskLine};
use super::chat_flow::{ChatEffect, ChatEvent, ChatFlow, ChatStep, PlanStatus, Resent};
use super::chat_log::{ChatLog, ChatLogError};
use super::control::{Control, control_word};
use super::lifecycle::{LifecycleContractError, Refusal};
use super::model::{ExecutionState, Plan, TaskId};
use super::orchestrator::{Orchestrator, OrchestratorError};
use super::patch::{PatchContext, PatchSummary, PlanPatch, apply, plan_patch_schema};
use super::store::ChatReply;
use crate::contract::model::Outcome;
use crate::machine::Instance;
use crate::runner::Cancel;
use crate::runner::protocol::planner::Planner;
use crate::runner::protocol::response::InvalidReply;

/// What a chat turn did.
#[derive(Debug, Clone, Serialize)]
pub struct TurnOutcome {
    pub session: String,
    /// The assistant's reply, as kept in the session.
    pub reply: String,
    /// The turn's last state in the chat turn contract.
    pub state: String,
    /// The locale of the reply.
    pub locale: String,
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
    /// The built-in chat turn contract does not load (a build defect).
    Contract(LifecycleContractError),
    /// The chat turn contract refused what the chat submitted (a defect between the
    /// contract and this host): nothing more is done.
    Refused(Refusal),
}

impl TurnError {
    pub fn key(&self) -> &'static str {
        match self {
            TurnError::Log(e) => e.key(),
            TurnError::Orchestrator(e) => e.key(),
            TurnError::Contract(_) => "chat.contract_invalid",
            TurnError::Refused(_) => "chat.refused",
        }
    }
}

impl std::fmt::Display for TurnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TurnError::Log(e) => e.fmt(f),
            TurnError::Orchestrator(e) => e.fmt(f),
            TurnError::Contract(e) => e.fmt(f),
            TurnError::Refused(r) => write!(
                f,
                "the chat turn contract refused the step ({}): {}",
                r.key, r.message.text
            ),
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

/// What a workspace sets for its chat turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnSettings<'a> {
    /// The workspace's language (`en`, `ja`).
    pub locale: &'a str,
    /// Start execution after a patch that created tasks (the contract's
    /// `params.autopilot`).
    pub autopilot: bool,
}

impl Default for TurnSettings<'_> {
    fn default() -> Self {
        TurnSettings {
            locale: "en",
            autopilot: true,
        }
    }
}

/// The locale of a reply: Japanese for a message written in it, else the workspace's.
pub fn message_locale<'a>(message: &str, workspace: &'a str) -> &'a str {
    let japanese = message.chars().any(|c| {
        matches!(c, '\u{3040}'..='\u{30ff}' | '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}' | '\u{ff66}'..='\u{ff9f}')
    });
    if japanese { "ja" } else { workspace }
}

/// The checked patch, waiting for the contract to ask for it to be applied.
struct Checked {
    plan: Plan,
    summary: PatchSummary,
}

/// One turn: the session, its flow and what it did so far.
struct Turn<'a> {
    orchestrator: &'a mut Orchestrator,
    flow: ChatFlow,
    outcome: TurnOutcome,
    /// The user's message and when it was received.
    message: String,
    at: String,
}

impl Turn<'_> {
    /// Submits `event`, publishes the step as chat progress and performs its effects. A
    /// checked patch the contract accepts gets its reply here, before it is applied, so
    /// the reply is journaled with the patch.
    fn submit(
        &mut self,
        instance: &crate::machine::Instance,
        event: &ChatEvent,
        checked: Option<&Checked>,
    ) -> Result<ChatStep, TurnError> {
        let step = self
            .flow
            .submit(instance, event)
            .map_err(TurnError::Refused)?;
        let mut chat = None;
        if let Some(checked) = checked
            && step.finished == Some(Outcome::Success)
        {
            self.outcome.reply = reply_text(&self.flow, &step, &checked.summary);
            self.outcome.patch = Some(checked.summary.clone());
            chat = Some(ChatReply {
                session: self.outcome.session.clone(),
                message: self.message.clone(),
                reply: self.outcome.reply.clone(),
                at: self.at.clone(),
                created_tasks: created_ids(&checked.summary),
            });
        }
        self.perform(&step, checked, chat)?;
        Ok(step)
    }

    fn perform(
        &mut self,
        step: &ChatStep,
        checked: Option<&Checked>,
        mut chat: Option<ChatReply>,
    ) -> Result<(), TurnError> {
        self.outcome.state = step.to.clone();
        self.orchestrator.events().publish(
            "chat",
            json!({"session": self.outcome.session, "state": step.to,
                   "message": step.message.as_ref().map(|m| &m.text),
                   "finished": step.finished.map(|o| o.as_str())}),
        );
        for effect in &step.effects {
            match effect {
                ChatEffect::SetExecution(state) => {
                    if checked.is_some() && *state == ExecutionState::Running {
                        self.outcome.autopilot = true;
                    }
                    self.orchestrator.set_execution(*state)?;
                }
                ChatEffect::ApplyPlan => {
                    let Some(checked) = checked else {
                        return Err(TurnError::Refused(internal(
                            "plan.apply without a checked patch",
                        )));
                    };
                    let questions: Vec<(String, Vec<TaskId>)> = checked
                        .summary
                        .questions
                        .iter()
                        .map(|q| (q.question.clone(), q.tasks.clone()))
                        .collect();
                    self.outcome.questions = self.orchestrator.apply_patch(
                        checked.plan.clone(),
                        &questions,
                        chat.take(),
                    )?;
                }
            }
        }
        Ok(())
    }
}

fn created_ids(summary: &PatchSummary) -> Vec<String> {
    summary.created.iter().map(|c| c.id.to_string()).collect()
}

fn internal(details: &str) -> Refusal {
    Refusal::internal("chat", details)
}

/// Runs one turn of `session` (a new one when `None`) to its end, the planner asked on
/// this thread: [`begin_turn`], [`PendingTurn::ask`], [`finish_turn`].
pub fn chat_turn(
    orchestrator: &mut Orchestrator,
    planner: &mut Planner,
    log: &ChatLog,
    session: Option<&str>,
    message: &str,
    settings: &TurnSettings<'_>,
    cancel: &Cancel,
) -> Result<TurnOutcome, TurnError> {
    match begin_turn(orchestrator, log, session, message, settings)? {
        Begun::Done(outcome) => Ok(*outcome),
        Begun::Planning(pending) => {
            let asked = pending.ask(planner, cancel);
            finish_turn(orchestrator, log, asked)
        }
    }
}

/// How a turn's first step went.
pub enum Begun {
    /// Answered without the planner (a control word).
    Done(Box<TurnOutcome>),
    /// The planner is to be asked.
    Planning(Box<PendingTurn>),
}

/// A turn waiting for its planner: what the planner call needs, owned, so a daemon can
/// ask on another thread while its scheduler goes on.
pub struct PendingTurn {
    flow: ChatFlow,
    instance: Instance,
    outcome: TurnOutcome,
    request: Value,
    /// The plan when the turn began: replies are checked against it in the planner's
    /// retry loop, and applied to the plan as it is when the answer comes.
    plan: Plan,
    context: PatchContext,
    now: String,
    message: String,
}

/// A turn whose planner answered (or not).
pub struct AskedTurn {
    pending: PendingTurn,
    answer: Result<PlanPatch, String>,
    cancelled: bool,
}

/// The first step of a turn, on the orchestrator's thread: the message is kept and
/// submitted; a control word is answered at once. The reply is in the workspace's
/// locale, or in Japanese for a message written in it.
pub fn begin_turn(
    orchestrator: &mut Orchestrator,
    log: &ChatLog,
    session: Option<&str>,
    message: &str,
    settings: &TurnSettings<'_>,
) -> Result<Begun, TurnError> {
    let now = orchestrator.clock().rfc3339();
    let flow = ChatFlow::load().map_err(TurnError::Contract)?;
    let instance = flow
        .start(
            message_locale(message, settings.locale),
            &Map::from_iter([("autopilot".to_string(), Value::Bool(settings.autopilot))]),
        )
        .map_err(|e| TurnError::Refused(internal(&e.to_string())))?;
    let session = match session {
        Some(s) => s.to_string(),
        None => log.new_session(&crate::runner::time::now().compact()),
    };
    let history = log.read(&session)?;
    log.append(&session, &said(ChatRole::User, message, &now))?;
    let control = control_word(message);
    let status = (control == Some(Control::Status)).then(|| plan_status(orchestrator));
    let resent = resent(orchestrator, control, message);
    let execution = orchestrator.state().execution;
    let mut turn = Turn {
        orchestrator,
        flow,
        message: message.to_string(),
        at: now.clone(),
        outcome: TurnOutcome {
            session: session.clone(),
            reply: String::new(),
            state: instance.state.clone(),
            locale: instance.locale.clone(),
            control,
            patch: None,
            questions: Vec::new(),
            autopilot: false,
            error: None,
        },
    };
    let event = ChatEvent::Message {
        control,
        execution,
        status,
        resent,
    };
    let received = turn.submit(&instance, &event, None)?;
    if received.finished.is_some() {
        turn.outcome.reply = received.message.map(|m| m.text).unwrap_or_default();
        log.append(
            &session,
            &said(ChatRole::Assistant, &turn.outcome.reply, &now),
        )?;
        return Ok(Begun::Done(Box::new(turn.outcome)));
    }
    let orchestrator = &*turn.orchestrator;
    let request = chat::request(message, &task_lines(orchestrator), &history);
    let plan = orchestrator.state().plan.clone();
    let context = patch_context(orchestrator, &session);
    Ok(Begun::Planning(Box::new(PendingTurn {
        flow: turn.flow,
        instance: received.instance,
        outcome: turn.outcome,
        request,
        plan,
        context,
        now,
        message: turn.message,
    })))
}

/// The turn a message repeats: the newest one whose patch was applied, when the message
/// is the same (a control word is never a resend: it is answered again).
fn resent(orchestrator: &Orchestrator, control: Option<Control>, message: &str) -> Option<Resent> {
    if control.is_some() {
        return None;
    }
    let (_, last) = orchestrator.store().last_chat()?;
    (last.message.trim() == message.trim()).then(|| Resent {
        at: last.at.clone(),
        reply: last.reply.clone(),
    })
}

/// Gives the session of the newest applied chat turn its reply when the log lacks it: the
/// patch and its reply were journaled together, and a crash came before the log's append.
/// Run when a workspace is opened for writing.
pub(crate) fn recover_reply(
    orchestrator: &Orchestrator,
    log: &ChatLog,
) -> Result<bool, ChatLogError> {
    let Some((seq, last)) = orchestrator.store().last_chat() else {
        return Ok(false);
    };
    let history = log.read(&last.session)?;
    if history.iter().any(|m| m.patch_seq == Some(seq)) {
        return Ok(false);
    }
    let mut reply = said(ChatRole::Assistant, &last.reply, &last.at);
    reply.created_tasks = last.created_tasks.clone();
    reply.patch_seq = Some(seq);
    log.append(&last.session, &reply)?;
    tracing::info!(session = %last.session, seq, "gave a chat turn the reply a crash kept from its log");
    Ok(true)
}

/// What a patch is applied with: the tasks running now, the time, the author, and ids
/// unique to the journal's next entry.
fn patch_context(orchestrator: &Orchestrator, session: &str) -> PatchContext {
    PatchContext {
        running: orchestrator.running().into_iter().collect(),
        now: orchestrator.clock().rfc3339(),
        author: format!("chat:{session}"),
        id_prefix: format!("t{}-", orchestrator.state().seq + 1),
    }
}

impl PendingTurn {
    pub fn session(&self) -> &str {
        &self.outcome.session
    }

    /// The turn without asking: its planner could not be set up.
    pub fn fail(self, reason: &str) -> AskedTurn {
        AskedTurn {
            answer: Err(reason.to_string()),
            cancelled: false,
            pending: self,
        }
    }

    /// Asks the planner for a patch that applies to the plan the turn began with (a
    /// reply that does not goes back to the planner with every reason). Touches no
    /// workspace.
    pub fn ask(self, planner: &mut Planner, cancel: &Cancel) -> AskedTurn {
        let schema = plan_patch_schema();
        let call = chat::ask(planner, &self.request, &schema, cancel, |reply| {
            let patch = PlanPatch::from_reply_object(reply).map_err(|e| InvalidReply(e.0))?;
            apply(&self.plan, &patch, &self.context).map_err(|e| InvalidReply(e.to_string()))?;
            Ok(patch)
        });
        AskedTurn {
            cancelled: call.result.is_err() && cancel.is_cancelled(),
            answer: call.result.map_err(|e| e.to_string()),
            pending: self,
        }
    }
}

impl AskedTurn {
    pub fn session(&self) -> &str {
        &self.pending.outcome.session
    }
}

/// The last step of a turn, on the orchestrator's thread: the planner's patch is applied
/// again, to the plan as it is now (another turn or a command may have changed it while
/// the planner was asked), and submitted; the contract's answer is performed and kept.
pub fn finish_turn(
    orchestrator: &mut Orchestrator,
    log: &ChatLog,
    asked: AskedTurn,
) -> Result<TurnOutcome, TurnError> {
    let AskedTurn {
        pending,
        answer,
        cancelled,
    } = asked;
    let context = patch_context(orchestrator, &pending.outcome.session);
    let mut turn = Turn {
        orchestrator,
        flow: pending.flow,
        outcome: pending.outcome,
        message: pending.message,
        at: pending.now.clone(),
    };
    let applied = answer.and_then(|patch| {
        apply(&turn.orchestrator.state().plan, &patch, &context).map_err(|e| {
            format!(
                "the plan changed while the planner was asked, and its patch no longer applies: {e}"
            )
        })
    });
    let step = match applied {
        _ if cancelled => {
            let step = turn
                .flow
                .cancel(&pending.instance)
                .map_err(TurnError::Refused)?;
            turn.perform(&step, None, None)?;
            step
        }
        Err(reason) => {
            turn.outcome.error = Some(reason.clone());
            let event = ChatEvent::PlannerFailed { reason };
            turn.submit(&pending.instance, &event, None)?
        }
        Ok((plan, summary)) => {
            let event = ChatEvent::Patch {
                created: summary.created.len(),
                updated: summary.updated.len(),
                moved: summary.moved.len(),
                deleted: summary.deleted.len(),
                questions: summary.questions.len(),
                execution: turn.orchestrator.state().execution,
            };
            let checked = Checked { plan, summary };
            turn.submit(&pending.instance, &event, Some(&checked))?
        }
    };
    if turn.outcome.reply.is_empty() {
        turn.outcome.reply = step.message.map(|m| m.text).unwrap_or_default();
    }
    let mut kept = said(ChatRole::Assistant, &turn.outcome.reply, &pending.now);
    if let Some(patch) = &turn.outcome.patch {
        kept.created_tasks = created_ids(patch);
        kept.patch_seq = turn.orchestrator.store().last_chat().map(|(seq, _)| seq);
    }
    log.append(&turn.outcome.session, &kept)?;
    Ok(turn.outcome)
}

fn said(role: ChatRole, content: &str, at: &str) -> ChatMessage {
    ChatMessage {
        role,
        content: content.to_string(),
        at: at.to_string(),
        created_tasks: Vec::new(),
        patch_seq: None,
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

/// The plan's status: the tasks by state and the open backlog items.
pub fn plan_status(orchestrator: &Orchestrator) -> PlanStatus {
    let counts = orchestrator.outcome_counts();
    let parts: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
    PlanStatus {
        tasks: if parts.is_empty() {
            "0".to_string()
        } else {
            parts.join(", ")
        },
        open_backlog: orchestrator
            .state()
            .backlog
            .values()
            .filter(|b| b.resolved_at.is_none())
            .count(),
    }
}

/// One paragraph: the execution state and how many tasks are in each state (the command
/// line's `status`; a chat's is the contract's message).
pub fn status_text(orchestrator: &Orchestrator) -> String {
    let status = plan_status(orchestrator);
    format!(
        "Execution is {:?}; tasks: {}; {} open backlog item(s).",
        orchestrator.state().execution,
        status.tasks,
        status.open_backlog
    )
}

/// The reply for an applied patch: the planner's understanding, the contract's message,
/// then a line per change (the contract's `chat.line.*`, in the turn's locale).
fn reply_text(flow: &ChatFlow, step: &ChatStep, summary: &PatchSummary) -> String {
    let line = |key: &str, args: &[(&str, Value)]| flow.line(&step.instance, key, args);
    let mut parts = Vec::new();
    let understanding = summary.understanding.trim();
    if !understanding.is_empty() {
        parts.push(understanding.to_string());
    }
    if let Some(message) = &step.message {
        parts.push(message.text.clone());
    }
    let created: Vec<String> = summary.created.iter().map(|c| c.id.to_string()).collect();
    let ids = |v: &[TaskId]| v.iter().map(ToString::to_string).collect::<Vec<_>>();
    for (key, items) in [
        ("chat.line.created", created),
        ("chat.line.updated", ids(&summary.updated)),
        ("chat.line.moved", ids(&summary.moved)),
        ("chat.line.deleted", ids(&summary.deleted)),
    ] {
        if !items.is_empty() {
            parts.push(line(
                key,
                &[
                    ("count", json!(items.len())),
                    ("tasks", json!(items.join(", "))),
                ],
            ));
        }
    }
    for removed in &summary.removed_dependencies {
        parts.push(line(
            "chat.line.dependency_removed",
            &[
                ("task", json!(removed.task)),
                ("dependency", json!(removed.dependency)),
            ],
        ));
    }
    for conflict in &summary.conflicts {
        let tasks: Vec<String> = ids(&conflict.tasks);
        let reason = conflict
            .reason
            .as_deref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default();
        parts.push(line(
            "chat.line.conflict",
            &[
                ("file", json!(conflict.file)),
                ("tasks", json!(tasks.join(", "))),
                ("reason", json!(reason)),
            ],
        ));
    }
    for question in &summary.questions {
        parts.push(line(
            "chat.line.question",
            &[("question", json!(question.question))],
        ));
    }
    parts.join("\n\n")
}
