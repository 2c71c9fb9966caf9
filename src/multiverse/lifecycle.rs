//! A task's lifecycle for the scheduler: the session of `contracts/multiverse_task.yml`
//! each task has, as pure functions. The scheduler submits what happened ([`TaskEvent`])
//! and gets back either the new instance with the side effects to perform
//! ([`TaskEffect`]: the node's status, a retry's time, a backlog item), or a refusal with
//! its stable key and the instance unchanged. Nothing here does IO or reads a clock: the
//! caller journals the new instance and performs the effects, in order, and discards the
//! step when one fails (the engine's rule for host actions, docs/contract-format.md §11).
//!
//! No lifecycle state is named here: which events a task takes, what counts as an
//! attempt, when it fails for good and which finished tasks may be retried are the
//! contract's, so this file only translates events into payloads and effects into data.

use std::fmt;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::executor::AttemptEnd;
use super::model::{BacklogKind, NodeStatus, TaskId};
use crate::contract::model::{Outcome, StateKind};
use crate::contract::{self, Contract};
use crate::diagnostic::{Diagnostic, render};
use crate::machine::response::RenderedMessage;
use crate::machine::{self, Effect, Event, Input, Instance, StartError};
use crate::source::Sources;

/// The lifecycle contract, compiled into the binary so a workspace cannot run another.
pub const TASK_LIFECYCLE_CONTRACT: &str = include_str!("../../contracts/multiverse_task.yml");

/// What happened to a task, as the scheduler saw it. Each becomes the payload
/// `{event: NAME, ...}` of the task's current state; the contract refuses the ones that
/// state does not take.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskEvent {
    /// The dependencies are all done (`ready`), or some failed for good (`failed`, with
    /// the reason to show).
    Deps {
        ready: bool,
        failed: Vec<TaskId>,
        reason: Option<String>,
    },
    /// A pool slot took the task and its agent-runner attempt was launched.
    Start,
    /// The attempt ended: agent-runner's exit code and its result JSON's status.
    Exited {
        exit_code: i32,
        status: Option<String>,
        summary: Option<String>,
    },
    /// The time a retry was scheduled for has come.
    RetryDue,
    /// Found running at startup with its process gone.
    Interrupted,
    /// A user's retry, or its backlog item resolved.
    Retry,
}

impl TaskEvent {
    /// The event's name in payloads.
    pub fn name(&self) -> &'static str {
        match self {
            TaskEvent::Deps { .. } => "deps",
            TaskEvent::Start => "start",
            TaskEvent::Exited { .. } => "exited",
            TaskEvent::RetryDue => "retry_due",
            TaskEvent::Interrupted => "interrupted",
            TaskEvent::Retry => "retry",
        }
    }

    /// The payload submitted to the task's session.
    pub fn payload(&self) -> Value {
        let mut payload = Map::new();
        payload.insert("event".into(), json!(self.name()));
        match self {
            TaskEvent::Deps {
                ready,
                failed,
                reason,
            } => {
                payload.insert("ready".into(), json!(ready));
                let failed: Vec<&str> = failed.iter().map(TaskId::as_str).collect();
                payload.insert("failed".into(), json!(failed));
                if let Some(reason) = reason {
                    payload.insert("reason".into(), json!(reason));
                }
            }
            TaskEvent::Exited {
                exit_code,
                status,
                summary,
            } => {
                payload.insert("exit_code".into(), json!(exit_code));
                if let Some(status) = status {
                    payload.insert("status".into(), json!(status));
                }
                if let Some(summary) = summary {
                    payload.insert("summary".into(), json!(summary));
                }
            }
            TaskEvent::Start | TaskEvent::RetryDue | TaskEvent::Interrupted | TaskEvent::Retry => {}
        }
        Value::Object(payload)
    }
}

impl From<&AttemptEnd> for TaskEvent {
    /// The end of an attempt as the executor read it. A process killed by a signal has
    /// no exit code: -1, which the contract counts as a failed attempt (a stop the user
    /// asked for is a cancel, submitted as one, not an exit). A question is the summary
    /// a blocked task shows.
    fn from(end: &AttemptEnd) -> TaskEvent {
        TaskEvent::Exited {
            exit_code: end.exit_code.unwrap_or(-1),
            status: end.status.clone(),
            summary: Some(end.question.clone().unwrap_or_else(|| end.summary.clone())),
        }
    }
}

/// A side effect the lifecycle asks for, for the scheduler to perform (the contract's
/// host actions, decoded).
#[derive(Debug, Clone, PartialEq)]
pub enum TaskEffect {
    /// `node.set`: the task's node status, and the reason a blocked node shows.
    SetNode {
        status: NodeStatus,
        reason: Option<String>,
    },
    /// `retry.schedule`: retry the task after `delay` (from the session's backoff
    /// params); `attempt` is the attempt that just ended without success, from 1.
    ScheduleRetry { attempt: u32, delay: Duration },
    /// `backlog.add`: a backlog item about the task for a person.
    AddBacklog {
        kind: BacklogKind,
        reason: Option<String>,
    },
}

/// An accepted event.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    pub from: String,
    pub to: String,
    /// The task's session after the event: what the caller journals once every effect
    /// has been performed.
    pub instance: Instance,
    /// In order; the contract's `finally` actions last when the task finished.
    pub effects: Vec<TaskEffect>,
    /// The contract's message for the step (why it failed for good, ...), if any.
    pub message: Option<RenderedMessage>,
    /// The task finished, with this outcome.
    pub finished: Option<Outcome>,
    /// A counter's limit decided the step (`attempts`, `questions`).
    pub limit: Option<String>,
    /// A finished task was retried: `instance` is a new session of the lifecycle.
    pub restarted: bool,
}

/// A refused event: the instance is unchanged.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The stable error code (`event_not_accepted`, `task_finished`, ...).
    pub key: String,
    pub message: RenderedMessage,
}

impl Refusal {
    /// The engine's rejection, keyed by its error code (else its message key).
    pub(crate) fn of(rejection: machine::Rejection) -> Refusal {
        Refusal {
            key: rejection
                .message
                .error
                .clone()
                .unwrap_or_else(|| rejection.message.key.clone()),
            message: rejection.message,
        }
    }

    /// A refusal for a defect between a contract and its host (`scope`: `lifecycle`,
    /// `chat`), such as an effect it cannot decode: fail closed, the instance unchanged.
    pub(crate) fn internal(scope: &str, details: impl Into<String>) -> Refusal {
        Refusal {
            key: "internal_error".into(),
            message: RenderedMessage {
                key: format!("{scope}.internal_error"),
                error: Some("internal_error".into()),
                text: details.into(),
                user_intervention: false,
            },
        }
    }
}

/// The outcome of a session in a terminal state of `contract`; `None` while it goes on.
pub(crate) fn terminal_outcome(contract: &Contract, instance: &Instance) -> Option<Outcome> {
    let state = contract.state(contract.state_id(&instance.state)?);
    (state.kind == StateKind::Terminal)
        .then_some(state.outcome)
        .flatten()
}

/// What a submitted event did.
#[derive(Debug, Clone, PartialEq)]
pub enum Submitted {
    Accepted(Box<Transition>),
    Rejected(Refusal),
}

impl Submitted {
    pub fn accepted(&self) -> Option<&Transition> {
        match self {
            Submitted::Accepted(t) => Some(t),
            Submitted::Rejected(_) => None,
        }
    }

    pub fn rejected(&self) -> Option<&Refusal> {
        match self {
            Submitted::Rejected(r) => Some(r),
            Submitted::Accepted(_) => None,
        }
    }
}

/// A built-in contract (the task lifecycle, the chat turn) does not load (a build
/// defect; tests keep it from shipping).
#[derive(Debug)]
pub struct LifecycleContractError {
    /// The contract's file, as `contracts/NAME.yml`.
    pub file: &'static str,
    pub sources: Sources,
    pub findings: Vec<Diagnostic>,
}

/// Loads a built-in contract of the multiverse hosts against `registry`.
pub(crate) fn load_builtin(
    file: &'static str,
    text: &str,
    registry: crate::contract::Registry,
) -> Result<Contract, LifecycleContractError> {
    let mut sources = Sources::default();
    let id = sources.add(file, text);
    contract::load(&mut sources, id, &[registry])
        .ok()
        .map_err(|findings| LifecycleContractError {
            file,
            sources,
            findings,
        })
}

impl fmt::Display for LifecycleContractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the built-in contract {} does not load:\n{}",
            self.file,
            render::human(&self.sources, &self.findings)
        )
    }
}

impl std::error::Error for LifecycleContractError {}

/// Why a task's session could not start.
#[derive(Debug, Clone, PartialEq)]
pub enum LifecycleStartError {
    /// The engine refused the params (unknown, wrong type).
    Engine(StartError),
    /// A retry-policy param out of its range.
    Policy(PolicyError),
}

impl LifecycleStartError {
    /// A stable key.
    pub fn key(&self) -> &'static str {
        match self {
            LifecycleStartError::Engine(e) => e.key(),
            LifecycleStartError::Policy(_) => "lifecycle.bad_policy",
        }
    }
}

impl fmt::Display for LifecycleStartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LifecycleStartError::Engine(e) => e.fmt(f),
            LifecycleStartError::Policy(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for LifecycleStartError {}

/// A retry-policy param that is missing or out of range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    pub param: &'static str,
    pub expected: &'static str,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the lifecycle param `{}` must be {}",
            self.param, self.expected
        )
    }
}

impl std::error::Error for PolicyError {}

/// The retry policy as data: the contract's params of one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub max_attempts: u32,
    pub backoff_base_sec: u64,
    pub backoff_factor: u64,
    pub backoff_cap_sec: u64,
}

impl RetryPolicy {
    /// The policy of a session (its params, the contract's defaults unless overridden).
    pub fn from_params(params: &Map<String, Value>) -> Result<RetryPolicy, PolicyError> {
        let int = |param: &'static str, min: u64, expected: &'static str| {
            params
                .get(param)
                .and_then(Value::as_u64)
                .filter(|v| *v >= min)
                .ok_or(PolicyError { param, expected })
        };
        let max_attempts = int("max_attempts", 1, "an integer of at least 1")?;
        Ok(RetryPolicy {
            max_attempts: u32::try_from(max_attempts).map_err(|_| PolicyError {
                param: "max_attempts",
                expected: "an integer of at least 1 that fits 32 bits",
            })?,
            backoff_base_sec: int("backoff_base_sec", 0, "an integer of at least 0")?,
            backoff_factor: int("backoff_factor", 1, "an integer of at least 1")?,
            backoff_cap_sec: int("backoff_cap_sec", 0, "an integer of at least 0")?,
        })
    }
}

/// How long to wait before retrying after `attempt` (from 1) ended without success:
/// base·factor^(attempt−1) seconds, at most the cap. Saturating, so a huge attempt number
/// gives the cap, never an overflow.
pub fn backoff(attempt: u32, policy: &RetryPolicy) -> Duration {
    let exponent = attempt.saturating_sub(1);
    let mut secs = policy.backoff_base_sec;
    for _ in 0..exponent {
        if secs >= policy.backoff_cap_sec {
            break;
        }
        secs = secs.saturating_mul(policy.backoff_factor);
    }
    Duration::from_secs(secs.min(policy.backoff_cap_sec))
}

/// The loaded lifecycle contract.
#[derive(Debug)]
pub struct Lifecycle {
    contract: Contract,
}

impl Lifecycle {
    /// Loads the built-in contract for the multiverse host.
    pub fn load() -> Result<Lifecycle, LifecycleContractError> {
        load_builtin(
            "contracts/multiverse_task.yml",
            TASK_LIFECYCLE_CONTRACT,
            super::registry::registry(),
        )
        .map(|contract| Lifecycle { contract })
    }

    pub fn contract(&self) -> &Contract {
        &self.contract
    }

    /// A new task's session, at the contract's initial state, its messages in `locale`
    /// (the contract's default when it does not have it). `params` override the
    /// contract's (the retry policy: `max_attempts`, `backoff_*`, ...).
    pub fn start(
        &self,
        params: &Map<String, Value>,
        locale: &str,
    ) -> Result<Instance, LifecycleStartError> {
        let locale = if self.contract.locales.iter().any(|l| l == locale) {
            locale
        } else {
            self.contract.default_locale()
        };
        let instance = Instance::start(
            &self.contract,
            contract::flags::defaults(&self.contract),
            None,
            Some(locale),
            params,
        )
        .map_err(LifecycleStartError::Engine)?;
        RetryPolicy::from_params(&instance.params).map_err(LifecycleStartError::Policy)?;
        Ok(instance)
    }

    /// The reason a task blocked by failed `dependencies` shows, in the task's locale.
    pub fn dependency_failed(&self, instance: &Instance, dependencies: &[&str]) -> String {
        let (key, _) = super::registry::DEPENDENCY_FAILED;
        let mut args = Map::new();
        args.insert("dependencies".into(), Value::from(dependencies.join(", ")));
        machine::response::message(&self.contract, key, &args, &instance.locale).text
    }

    /// The outcome of a finished task; `None` while it goes on.
    pub fn finished(&self, instance: &Instance) -> Option<Outcome> {
        terminal_outcome(&self.contract, instance)
    }

    /// Whether the task's current state takes events named `event` (`start` for a task
    /// the scheduler may launch, `retry` for one a user may retry), read from the state's
    /// payload schema, so the scheduler can pick tasks without naming states. The
    /// contract's checks may still refuse a particular event.
    pub fn takes(&self, instance: &Instance, event: &str) -> bool {
        if event == "retry" && self.retryable(instance) {
            return true;
        }
        let Some(state) = self.contract.state_id(&instance.state) else {
            return false;
        };
        let Some(schema) = self.contract.state(state).payload_schema.as_ref() else {
            return false;
        };
        let field = &schema["properties"]["event"];
        field["const"].as_str() == Some(event)
            || field["enum"]
                .as_array()
                .is_some_and(|names| names.iter().any(|n| n.as_str() == Some(event)))
    }

    /// A finished task whose outcome the session's `retryable_outcomes` lists.
    fn retryable(&self, instance: &Instance) -> bool {
        self.finished(instance).is_some_and(|outcome| {
            instance
                .params
                .get("retryable_outcomes")
                .and_then(Value::as_array)
                .is_some_and(|list| list.iter().any(|o| o.as_str() == Some(outcome.as_str())))
        })
    }

    /// Submits an event. A `Retry` of a finished task whose outcome the contract lists in
    /// `retryable_outcomes` starts a new session (fresh attempts); any other event of a
    /// finished task is refused by the engine.
    pub fn submit(&self, instance: &Instance, event: &TaskEvent) -> Submitted {
        if *event == TaskEvent::Retry
            && let Some(restarted) = self.restart(instance)
        {
            return restarted;
        }
        self.submit_payload(instance, event.payload())
    }

    /// Submits a payload as it came (an API request, a test): the engine checks it
    /// against the state's schema.
    pub fn submit_payload(&self, instance: &Instance, payload: Value) -> Submitted {
        let event = Event {
            input: Input::Submit {
                payload,
                tools_called: Vec::new(),
            },
            facts: Map::new(),
        };
        self.step(instance, &event)
    }

    /// The user's cancel: the contract's cancel path, never a retry. Refused for a
    /// finished task.
    pub fn cancel(&self, instance: &Instance) -> Submitted {
        let event = Event {
            input: Input::Cancel,
            facts: Map::new(),
        };
        self.step(instance, &event)
    }

    /// The retry of a finished task, when its outcome allows one.
    fn restart(&self, instance: &Instance) -> Option<Submitted> {
        if !self.retryable(instance) {
            return None;
        }
        let submitted = match Instance::start(
            &self.contract,
            instance.flags.clone(),
            Some(&instance.intent),
            Some(&instance.locale),
            &instance.params,
        ) {
            Ok(fresh) => Submitted::Accepted(Box::new(Transition {
                from: instance.state.clone(),
                to: fresh.state.clone(),
                instance: fresh,
                effects: Vec::new(),
                message: None,
                finished: None,
                limit: None,
                restarted: true,
            })),
            // The params were accepted when the session started; a contract that no
            // longer takes them is refused, not guessed around.
            Err(e) => Submitted::Rejected(internal(format!("the retried task cannot start: {e}"))),
        };
        Some(submitted)
    }

    fn step(&self, instance: &Instance, event: &Event) -> Submitted {
        let accepted = match machine::step(&self.contract, instance, event) {
            Ok(accepted) => accepted,
            Err(rejection) => return Submitted::Rejected(Refusal::of(rejection)),
        };
        let finished = self.finished(&accepted.instance);
        let mut raw = accepted.effects;
        if finished.is_some() {
            raw.extend(machine::finally_effects(
                &self.contract,
                &accepted.instance,
                &Map::new(),
            ));
        }
        let policy = match RetryPolicy::from_params(&instance.params) {
            Ok(policy) => policy,
            Err(e) => return Submitted::Rejected(internal(e.to_string())),
        };
        let mut effects = Vec::with_capacity(raw.len());
        for effect in &raw {
            match decode(effect, &policy) {
                Ok(e) => effects.push(e),
                Err(details) => return Submitted::Rejected(internal(details)),
            }
        }
        Submitted::Accepted(Box::new(Transition {
            from: accepted.from,
            to: accepted.to,
            instance: accepted.instance,
            effects,
            message: accepted.message,
            finished,
            limit: accepted.limit_reached,
            restarted: false,
        }))
    }
}

fn internal(details: String) -> Refusal {
    Refusal::internal("lifecycle", details)
}

/// The typed form of a host action of the lifecycle contract.
fn decode(effect: &Effect, policy: &RetryPolicy) -> Result<TaskEffect, String> {
    let text = |name: &str| -> Result<Option<String>, String> {
        match effect.args.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!("{}: `{name}` is not text: {other}", effect.action)),
        }
    };
    let parse = |name: &str| -> Result<Value, String> {
        effect
            .args
            .get(name)
            .cloned()
            .ok_or_else(|| format!("{}: no `{name}`", effect.action))
    };
    match effect.action.as_str() {
        "node.set" => Ok(TaskEffect::SetNode {
            status: serde_json::from_value(parse("status")?)
                .map_err(|e| format!("node.set: {e}"))?,
            reason: text("reason")?,
        }),
        "retry.schedule" => {
            let before = parse("previous_failures")?
                .as_u64()
                .ok_or_else(|| "retry.schedule: `previous_failures` is not a count".to_string())?;
            let attempt = u32::try_from(before.saturating_add(1)).unwrap_or(u32::MAX);
            Ok(TaskEffect::ScheduleRetry {
                attempt,
                delay: backoff(attempt, policy),
            })
        }
        "backlog.add" => Ok(TaskEffect::AddBacklog {
            kind: serde_json::from_value(parse("kind")?)
                .map_err(|e| format!("backlog.add: {e}"))?,
            reason: text("reason")?,
        }),
        other => Err(format!(
            "the lifecycle asked for `{other}`, which this host does not perform"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        let lifecycle = Lifecycle::load().unwrap();
        let instance = lifecycle.start(&Map::new(), "en").unwrap();
        RetryPolicy::from_params(&instance.params).unwrap()
    }

    fn ok(submitted: Submitted) -> Transition {
        match submitted {
            Submitted::Accepted(t) => *t,
            Submitted::Rejected(r) => panic!("refused: {r:?}"),
        }
    }

    fn exited(code: i32, status: &str) -> TaskEvent {
        TaskEvent::Exited {
            exit_code: code,
            status: Some(status.into()),
            summary: Some(format!("ended {status}")),
        }
    }

    const READY: TaskEvent = TaskEvent::Deps {
        ready: true,
        failed: Vec::new(),
        reason: None,
    };

    #[test]
    fn the_policy_is_the_contracts_data() {
        assert_eq!(
            policy(),
            RetryPolicy {
                max_attempts: 3,
                backoff_base_sec: 5,
                backoff_factor: 2,
                backoff_cap_sec: 300
            }
        );
    }

    #[test]
    fn backoff_doubles_from_five_seconds_and_stops_at_the_cap() {
        let p = policy();
        let secs: Vec<u64> = (1..=9).map(|a| backoff(a, &p).as_secs()).collect();
        assert_eq!(secs, [5, 10, 20, 40, 80, 160, 300, 300, 300]);
        // Attempt 0 is read as the first; a huge one saturates to the cap.
        assert_eq!(backoff(0, &p), Duration::from_secs(5));
        assert_eq!(backoff(u32::MAX, &p), Duration::from_secs(300));
        let big = RetryPolicy {
            backoff_base_sec: u64::MAX / 2,
            backoff_factor: 1000,
            backoff_cap_sec: u64::MAX,
            ..p
        };
        assert_eq!(backoff(5, &big), Duration::from_secs(u64::MAX));
    }

    #[test]
    fn a_policy_out_of_range_is_refused_at_start() {
        let lifecycle = Lifecycle::load().unwrap();
        for (param, value) in [
            ("max_attempts", 0),
            ("backoff_factor", 0),
            ("backoff_base_sec", -1),
        ] {
            let mut params = Map::new();
            params.insert(param.into(), json!(value));
            let err = lifecycle.start(&params, "en").unwrap_err();
            assert_eq!(err.key(), "lifecycle.bad_policy", "{param}");
            assert!(err.to_string().contains(param), "{err}");
        }
        let mut params = Map::new();
        params.insert("max_attempt".into(), json!(2));
        assert_eq!(
            lifecycle.start(&params, "en").unwrap_err().key(),
            "start.unknown_param"
        );
    }

    #[test]
    fn two_failures_schedule_5_then_10_seconds_and_the_third_fails_with_a_backlog_item() {
        let lifecycle = Lifecycle::load().unwrap();
        let mut task = lifecycle.start(&Map::new(), "en").unwrap();
        task = ok(lifecycle.submit(&task, &READY)).instance;
        let mut delays = Vec::new();
        for _ in 0..2 {
            task = ok(lifecycle.submit(&task, &TaskEvent::Start)).instance;
            let t = ok(lifecycle.submit(&task, &exited(1, "failed")));
            for e in &t.effects {
                if let TaskEffect::ScheduleRetry { attempt, delay } = e {
                    delays.push((*attempt, delay.as_secs()));
                }
            }
            assert_eq!(t.finished, None);
            task = ok(lifecycle.submit(&t.instance, &TaskEvent::RetryDue)).instance;
        }
        assert_eq!(delays, [(1, 5), (2, 10)]);
        task = ok(lifecycle.submit(&task, &TaskEvent::Start)).instance;
        let last = ok(lifecycle.submit(&task, &exited(3, "incomplete")));
        assert_eq!(last.finished, Some(Outcome::Failure));
        assert_eq!(last.limit.as_deref(), Some("attempts"));
        assert_eq!(
            last.effects,
            [
                TaskEffect::SetNode {
                    status: NodeStatus::Planned,
                    reason: None
                },
                TaskEffect::AddBacklog {
                    kind: BacklogKind::Failure,
                    reason: Some("ended incomplete".into())
                }
            ]
        );
        assert_eq!(last.message.unwrap().error.as_deref(), Some("task_failed"));
    }

    #[test]
    fn a_refused_event_names_its_key_and_leaves_the_task_as_it_was() {
        let lifecycle = Lifecycle::load().unwrap();
        let task = lifecycle.start(&Map::new(), "en").unwrap();
        let refused = lifecycle.submit(&task, &TaskEvent::Start);
        assert_eq!(refused.rejected().unwrap().key, "event_not_accepted");
        let malformed = lifecycle.submit_payload(&task, json!({"event": "deps", "ready": "yes"}));
        assert_eq!(malformed.rejected().unwrap().key, "payload_invalid");
        // The instance is the caller's: nothing to roll back, and it still takes `deps`.
        assert!(lifecycle.submit(&task, &READY).accepted().is_some());
    }

    #[test]
    fn effects_the_host_does_not_know_are_refused_not_ignored() {
        let p = policy();
        let effect = Effect {
            action: "run.launch".into(),
            args: Map::new(),
            bind: "launch".into(),
            on_failure: Default::default(),
            timeout_secs: None,
            retry: None,
            attempt: 1,
        };
        assert!(decode(&effect, &p).unwrap_err().contains("run.launch"));
        let mut bad = effect.clone();
        bad.action = "node.set".into();
        bad.args.insert("status".into(), json!("done"));
        assert!(decode(&bad, &p).unwrap_err().starts_with("node.set"));
    }

    #[test]
    fn which_events_a_task_takes_comes_from_its_states_schema() {
        let lifecycle = Lifecycle::load().unwrap();
        let pending = lifecycle.start(&Map::new(), "en").unwrap();
        assert!(lifecycle.takes(&pending, "deps"));
        assert!(!lifecycle.takes(&pending, "start"));
        let ready = ok(lifecycle.submit(&pending, &READY)).instance;
        assert!(lifecycle.takes(&ready, "start") && !lifecycle.takes(&ready, "deps"));
        let running = ok(lifecycle.submit(&ready, &TaskEvent::Start)).instance;
        assert!(lifecycle.takes(&running, "exited") && lifecycle.takes(&running, "interrupted"));
        assert!(!lifecycle.takes(&running, "retry"));
        let done = ok(lifecycle.submit(&running, &exited(0, "complete"))).instance;
        assert!(!lifecycle.takes(&done, "retry"));
        let cancelled = ok(lifecycle.cancel(&running)).instance;
        assert!(lifecycle.takes(&cancelled, "retry"));
    }

    #[test]
    fn a_succeeded_task_is_not_retried_and_a_cancelled_one_restarts_fresh() {
        let lifecycle = Lifecycle::load().unwrap();
        let mut task = lifecycle.start(&Map::new(), "en").unwrap();
        task = ok(lifecycle.submit(&task, &READY)).instance;
        task = ok(lifecycle.submit(&task, &TaskEvent::Start)).instance;
        let done = ok(lifecycle.submit(&task, &exited(0, "complete")));
        assert_eq!(done.finished, Some(Outcome::Success));
        let again = lifecycle.submit(&done.instance, &TaskEvent::Retry);
        assert_eq!(again.rejected().unwrap().key, "task_finished");

        let cancelled = ok(lifecycle.cancel(&task));
        assert_eq!(cancelled.finished, Some(Outcome::Cancelled));
        assert!(lifecycle.cancel(&cancelled.instance).rejected().is_some());
        let retried = ok(lifecycle.submit(&cancelled.instance, &TaskEvent::Retry));
        assert!(retried.restarted);
        assert_eq!(
            retried.instance,
            lifecycle.start(&Map::new(), "en").unwrap()
        );
    }

    #[test]
    fn a_task_speaks_its_workspaces_language_and_an_unknown_one_falls_back_to_english() {
        let lifecycle = Lifecycle::load().unwrap();
        let ja = lifecycle.start(&Map::new(), "ja").unwrap();
        assert_eq!(ja.locale, "ja");
        assert_eq!(
            lifecycle.dependency_failed(&ja, &["t1", "t2"]),
            "ブロック: 依存タスク t1, t2 が失敗したかキャンセルされました"
        );
        let unknown = lifecycle.start(&Map::new(), "xx").unwrap();
        assert_eq!(unknown.locale, "en");
        assert_eq!(
            lifecycle.dependency_failed(&unknown, &["t1"]),
            "blocked: dependency t1 failed or was cancelled"
        );
        // Its transitions' messages too.
        let ready = lifecycle.submit(
            &ja,
            &TaskEvent::Deps {
                ready: true,
                failed: Vec::new(),
                reason: None,
            },
        );
        let text = ready
            .accepted()
            .unwrap()
            .message
            .as_ref()
            .unwrap()
            .text
            .clone();
        assert_eq!(text, "タスクは実行できる状態です。");
    }
}
