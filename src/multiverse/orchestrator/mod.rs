//! The orchestrator: the one writer of a workspace while it runs. It holds the state,
//! submits what happens to each task's lifecycle session (dependencies met or failed, a
//! pool slot, an attempt's end, a retry's time, a user's cancel or retry), performs the
//! effects the contract asks for (the node's status, a retry's time, a backlog item),
//! starts attempts through the executor in each pool's free slots, and commits every
//! change through the workspace's journal before it is acted on or published.
//!
//! It decides no transition and names no lifecycle state: a task is startable when its
//! session's state takes `start` (read from the contract, re-read whenever the task
//! changes), and
//! the dependencies of a task are re-evaluated only when one of them changes, so the work
//! per event is proportional to the tasks it touches, not the plan.
//!
//! Attempts end on waiter threads, which send the end back over a channel; everything
//! else happens on the thread that owns the orchestrator. Each tick also forwards the
//! lines a running attempt's agent-runner appended to its `events.jsonl` as `run` events
//! (no thread per attempt: one read per attempt and tick); an attempt's remaining lines
//! are forwarded when it ends, before its end, so a subscriber sees the run's last lines
//! before the task's new state.

mod stops;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::clock::Clock;
use super::events::EventHub;
use super::executor::{self, AttemptEnd, EventsTail, RunRequest, RunningAttempt};
use super::lifecycle::{Lifecycle, Submitted, TaskEffect, TaskEvent, Transition};
use super::model::{
    Attempt, BacklogItem, BacklogKind, ExecutionState, NodeStatus, Plan, TaskDesign, TaskId,
    TaskRuntime, WorkspaceState,
};
use super::pools::{Pools, ReadyTask, pick};
use super::store::{Change, ChatReply, StoreError, Workspace};
use crate::contract::model::Outcome;

/// The changes that turn `old` into `new`: each added or changed design, each removed
/// task, and the WBS when it changed.
fn plan_changes(old: &Plan, new: &Plan) -> Vec<Change> {
    let mut changes = Vec::new();
    for (id, design) in &new.tasks {
        if old.tasks.get(id) != Some(design) {
            changes.push(Change::TaskDesigned {
                design: design.clone(),
            });
        }
    }
    for id in old.tasks.keys() {
        if !new.tasks.contains_key(id) {
            changes.push(Change::TaskRemoved { task: id.clone() });
        }
    }
    if old.wbs != new.wbs {
        changes.push(Change::WbsSet {
            wbs: new.wbs.clone(),
        });
    }
    changes
}

fn runtime_set(id: &TaskId, runtime: TaskRuntime) -> Change {
    Change::RuntimeSet {
        task: id.clone(),
        runtime,
    }
}

/// How the orchestrator runs attempts.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `agent-runner`.
    pub program: PathBuf,
    /// After the task file, e.g. `--unsafe-local`.
    pub extra_args: Vec<String>,
    pub project_root: PathBuf,
    /// `<workspace>/runs`.
    pub runs_dir: PathBuf,
    /// The `runner:` block every task file starts from.
    pub runner_defaults: Value,
    pub pools: Pools,
    /// Overrides of the lifecycle contract's params for new tasks (the retry policy).
    pub lifecycle_params: Map<String, Value>,
    /// Between a stop's SIGTERM and its KILL.
    pub grace: Duration,
    /// The language of new tasks' messages and reasons (`en`, `ja`).
    pub locale: String,
}

/// Why an operation was refused. `key()` is stable.
#[derive(Debug)]
pub enum OrchestratorError {
    UnknownTask(String),
    DuplicateTask(TaskId),
    /// The plan would break an invariant (unknown dependency, cycle, ...).
    InvalidPlan(String),
    /// A task a user added is over a budget (the patches' own) or malformed.
    InvalidTask(String),
    UnknownBacklogItem(String),
    /// The task's lifecycle refused the operation (a finished task cancelled, ...).
    Refused {
        task: TaskId,
        key: String,
        message: String,
    },
    Store(StoreError),
    Lifecycle(String),
}

impl OrchestratorError {
    pub fn key(&self) -> &'static str {
        match self {
            OrchestratorError::UnknownTask(_) => "unknown_task",
            OrchestratorError::DuplicateTask(_) => "duplicate_task",
            OrchestratorError::InvalidPlan(_) => "invalid_plan",
            OrchestratorError::InvalidTask(_) => "invalid_task",
            OrchestratorError::UnknownBacklogItem(_) => "unknown_backlog_item",
            OrchestratorError::Refused { .. } => "refused",
            OrchestratorError::Store(e) => e.key(),
            OrchestratorError::Lifecycle(_) => "lifecycle_error",
        }
    }
}

impl std::fmt::Display for OrchestratorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OrchestratorError::UnknownTask(id) => write!(f, "no task {id:?} in this workspace"),
            OrchestratorError::DuplicateTask(id) => write!(f, "a task {id} exists already"),
            OrchestratorError::InvalidPlan(why) => write!(f, "the plan would be invalid: {why}"),
            OrchestratorError::InvalidTask(why) => write!(f, "the task is refused: {why}"),
            OrchestratorError::UnknownBacklogItem(id) => write!(f, "no backlog item {id:?}"),
            OrchestratorError::Refused { task, message, .. } => write!(f, "task {task}: {message}"),
            OrchestratorError::Store(e) => e.fmt(f),
            OrchestratorError::Lifecycle(e) => write!(f, "the task lifecycle: {e}"),
        }
    }
}

impl std::error::Error for OrchestratorError {}

impl From<StoreError> for OrchestratorError {
    fn from(e: StoreError) -> OrchestratorError {
        OrchestratorError::Store(e)
    }
}

/// Bytes of a running attempt's events file read per tick: a burst is forwarded over a
/// few ticks rather than all at once into the subscribers' buffers.
const RUN_EVENTS_PER_TICK: usize = 256 * 1024;

/// An attempt in flight.
struct InFlight {
    attempt: RunningAttempt,
    /// Its number (1 for the first attempt of the task).
    number: u32,
    /// Where forwarding its `events.jsonl` got to.
    tail: EventsTail,
    /// When a stop (SIGTERM) was sent: KILL follows after the grace.
    stopping_since: Option<Instant>,
    /// The stop is the orchestrator's own shutdown, not a user's cancel: the attempt
    /// ends `interrupted` and its task is queued again, as after a crash.
    interrupting: bool,
}

/// Who stopped an attempt before it ended by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StoppedBy {
    Nobody,
    /// A user's cancel (or Stop): the contract's cancel.
    User,
    /// The orchestrator's graceful shutdown: `interrupted`, queued again.
    Shutdown,
}

/// The orchestrator of one workspace.
pub struct Orchestrator {
    store: Workspace,
    lifecycle: Lifecycle,
    settings: Settings,
    clock: Arc<dyn Clock>,
    events: Arc<EventHub>,
    running: BTreeMap<TaskId, InFlight>,
    /// Tasks whose session would accept `start` now.
    startable: BTreeSet<TaskId>,
    /// Each task's dependents (rebuilt when the plan changes).
    dependents: HashMap<TaskId, Vec<TaskId>>,
    ended_tx: Sender<(TaskId, AttemptEnd)>,
    ended_rx: Receiver<(TaskId, AttemptEnd)>,
    /// Shutting down ([`Orchestrator::interrupt_all`]): nothing new starts.
    draining: bool,
}

impl Orchestrator {
    pub fn new(
        store: Workspace,
        settings: Settings,
        clock: Arc<dyn Clock>,
        events: Arc<EventHub>,
    ) -> Result<Orchestrator, OrchestratorError> {
        let lifecycle =
            Lifecycle::load().map_err(|e| OrchestratorError::Lifecycle(e.to_string()))?;
        let (ended_tx, ended_rx) = channel();
        let mut orchestrator = Orchestrator {
            store,
            lifecycle,
            settings,
            clock,
            events,
            running: BTreeMap::new(),
            startable: BTreeSet::new(),
            dependents: HashMap::new(),
            ended_tx,
            ended_rx,
            draining: false,
        };
        orchestrator.index_dependents();
        Ok(orchestrator)
    }

    pub fn state(&self) -> &WorkspaceState {
        self.store.state()
    }

    pub fn events(&self) -> &Arc<EventHub> {
        &self.events
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// A QUESTION backlog item numbered `number` (a chat patch's question): the tasks it
    /// names do not start until it is resolved.
    fn question_item(&self, number: usize, question: &str, tasks: &[TaskId]) -> BacklogItem {
        BacklogItem {
            id: format!("b{number}-question"),
            kind: BacklogKind::Question,
            task: tasks.first().cloned(),
            title: format!(
                "question: {}",
                question.chars().take(120).collect::<String>()
            ),
            description: question.to_string(),
            created_at: self.clock.rfc3339(),
            resolved_at: None,
            resolution: None,
            metadata: json!({"holds": tasks}),
        }
    }

    /// Tasks an open question holds back.
    fn held(&self) -> BTreeSet<TaskId> {
        let mut held = BTreeSet::new();
        for item in self.state().backlog.values() {
            if item.kind != BacklogKind::Question || item.resolved_at.is_some() {
                continue;
            }
            for id in item.metadata["holds"].as_array().into_iter().flatten() {
                if let Some(id) = id.as_str().and_then(|s| TaskId::parse(s).ok()) {
                    held.insert(id);
                }
            }
        }
        held
    }

    pub fn lifecycle(&self) -> &Lifecycle {
        &self.lifecycle
    }

    /// Tasks with an attempt in flight.
    pub fn running(&self) -> Vec<TaskId> {
        self.running.keys().cloned().collect()
    }

    fn index_dependents(&mut self) {
        let mut index: HashMap<TaskId, Vec<TaskId>> = HashMap::new();
        for design in self.store.state().plan.tasks.values() {
            for dep in &design.dependencies {
                index
                    .entry(dep.clone())
                    .or_default()
                    .push(design.id.clone());
            }
        }
        self.dependents = index;
    }

    fn runtime(&self, id: &TaskId) -> Result<&TaskRuntime, OrchestratorError> {
        self.state()
            .runtime
            .get(id)
            .ok_or_else(|| OrchestratorError::UnknownTask(id.to_string()))
    }

    /// Adds a task to the plan (at the WBS root, or under `parent`).
    pub fn add_task(
        &mut self,
        design: TaskDesign,
        parent: Option<&TaskId>,
    ) -> Result<TaskId, OrchestratorError> {
        let id = design.id.clone();
        if self.state().plan.tasks.contains_key(&id) {
            return Err(OrchestratorError::DuplicateTask(id));
        }
        let problems = crate::multiverse::patch::task_design_problems(&design);
        if !problems.is_empty() {
            let said: Vec<String> = problems.iter().map(ToString::to_string).collect();
            return Err(OrchestratorError::InvalidTask(said.join("; ")));
        }
        self.settings
            .pools
            .check(&design.pool)
            .map_err(|e| OrchestratorError::InvalidPlan(e.to_string()))?;
        let mut plan = self.state().plan.clone();
        plan.tasks.insert(id.clone(), design);
        match parent {
            Some(parent) => plan
                .wbs
                .children
                .entry(parent.clone())
                .or_default()
                .push(id.clone()),
            None => plan.wbs.roots.push(id.clone()),
        }
        if let Some(finding) = plan.check().into_iter().next() {
            return Err(OrchestratorError::InvalidPlan(finding.to_string()));
        }
        let runtime = self.new_runtime()?;
        let mut changes = plan_changes(&self.state().plan, &plan);
        changes.push(runtime_set(&id, runtime));
        self.store.apply(changes)?;
        self.index_dependents();
        self.events
            .publish("task", json!({"task": id, "added": true}));
        self.refresh(std::slice::from_ref(&id))?;
        Ok(id)
    }

    fn new_runtime(&self) -> Result<TaskRuntime, OrchestratorError> {
        let lifecycle = self
            .lifecycle
            .start(&self.settings.lifecycle_params, &self.settings.locale)
            .map_err(|e| OrchestratorError::Lifecycle(e.to_string()))?;
        Ok(TaskRuntime {
            lifecycle,
            node: NodeStatus::Planned,
            attempts: Vec::new(),
            next_retry_at_ms: None,
            blocked_reason: None,
            enqueued_seq: 0,
        })
    }

    /// Replaces the plan (a chat's applied patch): new tasks get a session, deleted ones
    /// lose theirs (a running one must not be deleted: the patch refuses that first).
    pub fn replace_plan(&mut self, plan: Plan) -> Result<(), OrchestratorError> {
        self.apply_patch(plan, &[], None).map(|_| ())
    }

    /// A checked patch's result: the plan replaced and a QUESTION backlog item opened for
    /// each question (holding the tasks it names), in one journal entry, so a crash leaves
    /// either all of it or none; a chat turn's reply goes in the same entry. Returns the
    /// items' ids.
    pub fn apply_patch(
        &mut self,
        plan: Plan,
        questions: &[(String, Vec<TaskId>)],
        chat: Option<ChatReply>,
    ) -> Result<Vec<String>, OrchestratorError> {
        if let Some(finding) = plan.check().into_iter().next() {
            return Err(OrchestratorError::InvalidPlan(finding.to_string()));
        }
        let mut edits = plan_changes(&self.state().plan, &plan);
        let mut added = Vec::new();
        for id in plan.tasks.keys() {
            if !self.state().runtime.contains_key(id) {
                edits.push(runtime_set(id, self.new_runtime()?));
                added.push(id.clone());
            }
        }
        for id in self.state().runtime.keys() {
            if !plan.tasks.contains_key(id) {
                if self.running.contains_key(id) {
                    return Err(OrchestratorError::InvalidPlan(format!(
                        "task {id} is running and cannot be deleted"
                    )));
                }
                edits.push(Change::RuntimeRemoved { task: id.clone() });
            }
        }
        let first = self.state().backlog.len() + 1;
        let items: Vec<BacklogItem> = questions
            .iter()
            .enumerate()
            .map(|(i, (question, tasks))| self.question_item(first + i, question, tasks))
            .collect();
        edits.extend(
            items
                .iter()
                .map(|item| Change::BacklogSet { item: item.clone() }),
        );
        match chat {
            Some(chat) => self.store.apply_chat(edits, chat)?,
            None => self.store.apply(edits)?,
        };
        self.startable
            .retain(|id| self.store.state().plan.tasks.contains_key(id));
        self.index_dependents();
        let all: Vec<TaskId> = self.state().plan.tasks.keys().cloned().collect();
        self.events
            .publish("plan", json!({"tasks": all.len(), "added": added}));
        for item in &items {
            self.events
                .publish("backlog", json!({"item": item, "added": true}));
        }
        self.refresh(&all)?;
        Ok(items.into_iter().map(|item| item.id).collect())
    }

    /// A user's retry (of a failed or cancelled task: a new session, fresh attempts; of a
    /// task blocked on a question: it goes on).
    pub fn retry(&mut self, id: &TaskId) -> Result<(), OrchestratorError> {
        self.submit(id, &TaskEvent::Retry)?;
        self.refresh(std::slice::from_ref(id))
    }

    /// Resolves a backlog item; with `retry`, its task is retried (a question's answer
    /// is added to the task's description, so the next attempt sees it).
    pub fn resolve_backlog(
        &mut self,
        item_id: &str,
        note: &str,
        retry: bool,
    ) -> Result<(), OrchestratorError> {
        let mut item = self
            .state()
            .backlog
            .get(item_id)
            .cloned()
            .ok_or_else(|| OrchestratorError::UnknownBacklogItem(item_id.to_string()))?;
        item.resolved_at = Some(self.clock.rfc3339());
        item.resolution = Some(note.to_string());
        let mut edits = Vec::new();
        if item.kind == BacklogKind::Question
            && !note.trim().is_empty()
            && let Some(task) = &item.task
            && let Some(design) = self.state().plan.tasks.get(task)
        {
            let mut design = design.clone();
            design.description = format!(
                "{}\n\nQuestion: {}\nAnswer: {}",
                design.description.trim_end(),
                item.description.trim(),
                note.trim()
            );
            design.updated_at = self.clock.rfc3339();
            edits.push(Change::TaskDesigned { design });
        }
        edits.push(Change::BacklogSet { item: item.clone() });
        self.store.apply(edits)?;
        self.events
            .publish("backlog", json!({"item": item, "resolved": true}));
        if retry
            && let Some(task) = &item.task
            && let Some(rt) = self.state().runtime.get(task)
            && self.lifecycle.takes(&rt.lifecycle, "retry")
        {
            self.retry(task)?;
        }
        Ok(())
    }

    /// Start, pause, resume or stop execution. Stop cancels what runs.
    pub fn set_execution(&mut self, state: ExecutionState) -> Result<(), OrchestratorError> {
        if self.state().execution != state {
            self.store
                .apply(vec![Change::ExecutionSet { execution: state }])?;
            self.events.publish("execution", json!({"state": state}));
        }
        if state == ExecutionState::Idle {
            let running: Vec<TaskId> = self.running.keys().cloned().collect();
            for id in running {
                self.cancel(&id)?;
            }
        }
        Ok(())
    }

    /// Submits `event` to the task's session and applies what it does.
    fn submit(&mut self, id: &TaskId, event: &TaskEvent) -> Result<(), OrchestratorError> {
        let submitted = self.lifecycle.submit(&self.runtime(id)?.lifecycle, event);
        self.apply(id, submitted)
    }

    /// Applies an accepted transition (its effects into the runtime, committed with it);
    /// a refusal is returned as an error and changes nothing.
    fn apply(&mut self, id: &TaskId, submitted: Submitted) -> Result<(), OrchestratorError> {
        self.apply_with(id, submitted, |_| {})
    }

    /// [`Self::apply`], with `record` also changing the runtime in the same journal entry
    /// (an attempt's start or end goes with the transition it causes: one sync, not two).
    fn apply_with(
        &mut self,
        id: &TaskId,
        submitted: Submitted,
        record: impl FnOnce(&mut TaskRuntime),
    ) -> Result<(), OrchestratorError> {
        let transition = match submitted {
            Submitted::Accepted(t) => t,
            Submitted::Rejected(refusal) => {
                return Err(OrchestratorError::Refused {
                    task: id.clone(),
                    key: refusal.key,
                    message: refusal.message.text,
                });
            }
        };
        let node_before = self.runtime(id)?.node;
        let mut rt = self.runtime(id)?.clone();
        record(&mut rt);
        let mut edits = Vec::new();
        self.perform(id, &transition, &mut rt, &mut edits);
        rt.lifecycle = transition.instance.clone();
        let startable = self.lifecycle.takes(&rt.lifecycle, "start");
        if startable && !self.startable.contains(id) {
            // FIFO among the ready: the order in which tasks became startable.
            rt.enqueued_seq = self.state().seq + 1;
        }
        let node_after = rt.node;
        // What a view of the task needs to redraw it without asking again.
        let shown = json!({"reason": rt.blocked_reason, "next_retry_at_ms": rt.next_retry_at_ms,
                           "attempts": rt.attempts.len(), "last_attempt": rt.last_attempt()});
        edits.insert(0, runtime_set(id, rt));
        self.store.apply(edits)?;
        if startable {
            self.startable.insert(id.clone());
        } else {
            self.startable.remove(id);
        }
        let message = transition.message.as_ref().map(|m| m.text.clone());
        self.events.publish(
            "task",
            json!({"task": id, "from": transition.from, "to": transition.to,
                   "message": message, "node": node_after, "reason": shown["reason"],
                   "next_retry_at_ms": shown["next_retry_at_ms"], "attempts": shown["attempts"],
                   "last_attempt": shown["last_attempt"]}),
        );
        if transition.finished == Some(Outcome::Success) {
            self.close_failures(id)?;
        }
        if node_after != node_before || transition.finished.is_some() {
            let dependents = self.dependents.get(id).cloned().unwrap_or_default();
            self.refresh(&dependents)?;
        }
        Ok(())
    }

    /// A task that succeeded leaves no open FAILURE item behind (a retry after it, by the
    /// user or a later attempt, fixed what it reported).
    fn close_failures(&mut self, id: &TaskId) -> Result<(), OrchestratorError> {
        let now = self.clock.rfc3339();
        let changes: Vec<Change> = self
            .state()
            .backlog
            .values()
            .filter(|b| {
                b.kind == BacklogKind::Failure
                    && b.resolved_at.is_none()
                    && b.task.as_ref() == Some(id)
            })
            .map(|b| {
                let mut item = b.clone();
                item.resolved_at = Some(now.clone());
                item.resolution = Some("the task succeeded on a later attempt".into());
                Change::BacklogSet { item }
            })
            .collect();
        if !changes.is_empty() {
            self.store.apply(changes)?;
            self.events
                .publish("backlog", json!({"task": id, "resolved": true}));
        }
        Ok(())
    }

    /// The contract's effects, into the runtime and the edits.
    fn perform(
        &self,
        id: &TaskId,
        transition: &Transition,
        rt: &mut TaskRuntime,
        edits: &mut Vec<Change>,
    ) {
        if transition.restarted {
            rt.next_retry_at_ms = None;
            rt.blocked_reason = None;
        }
        for effect in &transition.effects {
            match effect {
                TaskEffect::SetNode { status, reason } => {
                    rt.node = *status;
                    rt.blocked_reason = reason.clone();
                }
                TaskEffect::ScheduleRetry { delay, .. } => {
                    let at =
                        self.clock.now_ms() + u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
                    rt.next_retry_at_ms = Some(at);
                }
                TaskEffect::AddBacklog { kind, reason } => {
                    let title = self
                        .state()
                        .plan
                        .tasks
                        .get(id)
                        .map_or_else(|| id.to_string(), |d| d.title.clone());
                    let number = self.state().backlog.len() + edits.len() + 1;
                    let item = BacklogItem {
                        id: format!("b{number}-{id}"),
                        kind: *kind,
                        task: Some(id.clone()),
                        title: match kind {
                            BacklogKind::Failure => format!("task failed: {title}"),
                            BacklogKind::Question => format!("question from task: {title}"),
                            BacklogKind::Blocker => format!("task blocked: {title}"),
                        },
                        description: reason.clone().unwrap_or_default(),
                        created_at: self.clock.rfc3339(),
                        resolved_at: None,
                        resolution: None,
                        metadata: json!({"attempts": rt.attempts.len()}),
                    };
                    self.events
                        .publish("backlog", json!({"item": item, "added": true}));
                    edits.push(Change::BacklogSet { item });
                }
            }
        }
        // A retry time only means something while the task waits for it.
        if !transition
            .effects
            .iter()
            .any(|e| matches!(e, TaskEffect::ScheduleRetry { .. }))
        {
            rt.next_retry_at_ms = None;
        }
    }

    /// Re-evaluates the dependencies of `ids`: all done → `deps ready`; one failed or
    /// cancelled for good → `deps failed` with the reason; otherwise nothing yet. The
    /// contract refuses the event in states that do not wait for it.
    fn refresh(&mut self, ids: &[TaskId]) -> Result<(), OrchestratorError> {
        for id in ids {
            let Some(design) = self.state().plan.tasks.get(id) else {
                continue;
            };
            let Some(rt) = self.state().runtime.get(id) else {
                continue;
            };
            if !self.lifecycle.takes(&rt.lifecycle, "deps") {
                continue;
            }
            let mut ready = true;
            let mut failed = Vec::new();
            for dep in &design.dependencies {
                match self.state().runtime.get(dep) {
                    Some(d) if d.node.is_done() => {}
                    Some(d) => {
                        ready = false;
                        if matches!(
                            self.lifecycle.finished(&d.lifecycle),
                            Some(Outcome::Failure | Outcome::Cancelled)
                        ) {
                            failed.push(dep.clone());
                        }
                    }
                    None => {
                        ready = false;
                        failed.push(dep.clone());
                    }
                }
            }
            let event = if ready {
                TaskEvent::Deps {
                    ready: true,
                    failed: Vec::new(),
                    reason: None,
                }
            } else if !failed.is_empty() {
                let names: Vec<&str> = failed.iter().map(TaskId::as_str).collect();
                TaskEvent::Deps {
                    ready: false,
                    reason: Some(self.lifecycle.dependency_failed(&rt.lifecycle, &names)),
                    failed,
                }
            } else {
                continue;
            };
            let submitted = self.lifecycle.submit(&rt.lifecycle, &event);
            // A state that does not wait for dependencies refuses: nothing to do.
            if submitted.accepted().is_some() {
                self.apply(id, submitted)?;
            }
        }
        Ok(())
    }

    /// Time-driven work: retries that are due, stops past their grace, then new starts.
    /// Returns when it next needs to run (the earliest retry or grace deadline).
    pub fn tick(&mut self) -> Result<Option<Duration>, OrchestratorError> {
        self.forward_run_events();
        self.collect_ended()?;
        let now = self.clock.now_ms();
        let due: Vec<TaskId> = self
            .state()
            .runtime
            .iter()
            .filter(|(_, rt)| rt.next_retry_at_ms.is_some_and(|at| at <= now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            match self.submit(&id, &TaskEvent::RetryDue) {
                Ok(()) | Err(OrchestratorError::Refused { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let grace = self.settings.grace;
        for flight in self.running.values_mut() {
            if flight
                .stopping_since
                .is_some_and(|since| since.elapsed() >= grace)
            {
                flight.attempt.kill();
            }
        }
        self.schedule()?;
        let next_retry = self
            .state()
            .runtime
            .values()
            .filter_map(|rt| rt.next_retry_at_ms)
            .min()
            .map(|at| Duration::from_millis(at.saturating_sub(self.clock.now_ms())));
        let next_kill = self
            .running
            .values()
            .filter_map(|f| f.stopping_since)
            .map(|since| grace.saturating_sub(since.elapsed()))
            .min();
        Ok([next_retry, next_kill].into_iter().flatten().min())
    }

    /// Starts what the pools have room for, while execution runs.
    fn schedule(&mut self) -> Result<(), OrchestratorError> {
        if self.state().execution != ExecutionState::Running || self.draining {
            return Ok(());
        }
        let held = self.held();
        let mut ready = Vec::new();
        for id in &self.startable {
            if self.running.contains_key(id) || held.contains(id) {
                continue;
            }
            let (Some(design), Some(rt)) = (
                self.state().plan.tasks.get(id),
                self.state().runtime.get(id),
            ) else {
                continue;
            };
            ready.push(ReadyTask {
                id: id.clone(),
                pool: design.pool.clone(),
                priority: design.priority,
                enqueued_seq: rt.enqueued_seq,
            });
        }
        let mut in_use: BTreeMap<String, usize> = BTreeMap::new();
        for id in self.running.keys() {
            if let Some(design) = self.state().plan.tasks.get(id) {
                *in_use.entry(design.pool.clone()).or_default() += 1;
            }
        }
        for id in pick(&self.settings.pools, &ready, &in_use) {
            self.launch(&id)?;
        }
        Ok(())
    }

    /// Starts an attempt: `start` is submitted and the attempt journalled before the
    /// process exists (a crash in between is an interrupted attempt, never a process
    /// nobody knows of), then its pid is recorded.
    fn launch(&mut self, id: &TaskId) -> Result<(), OrchestratorError> {
        let design = self
            .state()
            .plan
            .tasks
            .get(id)
            .cloned()
            .ok_or_else(|| OrchestratorError::UnknownTask(id.to_string()))?;
        let number = u32::try_from(self.runtime(id)?.attempts.len() + 1).unwrap_or(u32::MAX);
        let run_dir = self
            .settings
            .runs_dir
            .join(id.as_str())
            .join(number.to_string());
        let attempt = Attempt {
            number,
            started_at: self.clock.rfc3339(),
            finished_at: None,
            pid: None,
            exit_code: None,
            status: None,
            summary: None,
            run_dir: run_dir.display().to_string(),
            files_changed: Vec::new(),
        };
        let submitted = self
            .lifecycle
            .submit(&self.runtime(id)?.lifecycle, &TaskEvent::Start);
        self.apply_with(id, submitted, |rt| rt.attempts.push(attempt))?;
        let mut rt = self.runtime(id)?.clone();
        let request = RunRequest {
            program: self.settings.program.clone(),
            extra_args: self.settings.extra_args.clone(),
            project_root: self.settings.project_root.clone(),
            run_dir,
            runner_defaults: self.settings.runner_defaults.clone(),
        };
        match executor::launch(&design, &request) {
            Ok(attempt) => {
                if let Some(last) = rt.attempts.last_mut() {
                    last.pid = Some(attempt.pid());
                }
                self.store.apply(vec![runtime_set(id, rt)])?;
                self.events.publish(
                    "attempt",
                    json!({"task": id, "attempt": number, "started": true, "pid": attempt.pid(),
                           "at_ms": self.clock.now_ms()}),
                );
                let waiter = attempt.clone();
                let tx = self.ended_tx.clone();
                let task = id.clone();
                std::thread::Builder::new()
                    .name(format!("attempt-{id}"))
                    .spawn(move || {
                        let end = waiter.wait();
                        let _ = tx.send((task, end));
                    })
                    .map_err(|e| {
                        OrchestratorError::Lifecycle(format!("cannot watch the attempt: {e}"))
                    })?;
                let tail = EventsTail::new(attempt.events_path());
                self.running.insert(
                    id.clone(),
                    InFlight {
                        attempt,
                        number,
                        tail,
                        stopping_since: None,
                        interrupting: false,
                    },
                );
                Ok(())
            }
            Err(e) => {
                // Counted as an attempt that failed: the contract's retry policy decides.
                let end = AttemptEnd {
                    exit_code: None,
                    status: None,
                    summary: format!("could not start the attempt: {e}"),
                    question: None,
                    files_changed: Vec::new(),
                    duration: Duration::ZERO,
                    note: None,
                };
                self.finish(id, end, StoppedBy::Nobody)
            }
        }
    }

    /// Forwards what each running attempt appended to its events file since the last
    /// tick.
    fn forward_run_events(&mut self) {
        for (id, flight) in &mut self.running {
            let lines = flight.tail.read(RUN_EVENTS_PER_TICK);
            self.events.publish_run(id.as_str(), flight.number, lines);
        }
    }

    /// Takes the ends the waiter threads sent.
    fn collect_ended(&mut self) -> Result<(), OrchestratorError> {
        while let Ok((id, end)) = self.ended_rx.try_recv() {
            self.ended(&id, end)?;
        }
        Ok(())
    }

    /// Waits up to `timeout` for an attempt to end, and handles it.
    pub fn wait_for_end(&mut self, timeout: Duration) -> Result<bool, OrchestratorError> {
        match self.ended_rx.recv_timeout(timeout) {
            Ok((id, end)) => {
                self.ended(&id, end)?;
                Ok(true)
            }
            Err(_) => Ok(false),
        }
    }

    /// Nothing runs, nothing can start and no retry is pending: the plan is as done as
    /// it gets without a person.
    pub fn is_settled(&self) -> bool {
        self.running.is_empty()
            && (self.startable.is_empty() || self.state().execution != ExecutionState::Running)
            && self
                .state()
                .runtime
                .values()
                .all(|rt| rt.next_retry_at_ms.is_none())
    }

    /// Tasks by how they ended: succeeded, and the others that are finished or stuck.
    pub fn outcome_counts(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for rt in self.state().runtime.values() {
            *counts.entry(rt.lifecycle.state.clone()).or_default() += 1;
        }
        counts
    }

    /// Whether every task finished with success.
    pub fn all_succeeded(&self) -> bool {
        self.state()
            .runtime
            .values()
            .all(|rt| self.lifecycle.finished(&rt.lifecycle) == Some(Outcome::Success))
    }

    /// Gives the store back (tests, shutdown).
    pub fn into_store(self) -> Workspace {
        self.store
    }

    pub fn store(&self) -> &Workspace {
        &self.store
    }
}
