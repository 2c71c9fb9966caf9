//! The session driver every host shares: step → perform the host's effects in order →
//! commit the new instance (or keep the old one when an effect fails) → run engine states
//! → checkpoint. The driver does no IO itself; a host does it through [`Host`] and
//! [`CheckpointStore`], so the MCP server and AgentRunner never re-implement the loop.
//!
//! The loop every host shares. A host implements `Host` (`perform(&Effect) -> Result<Value,
//! ActionFailure>`, `facts()`) and `CheckpointStore` (`save(&Instance)`); `Driver` does:
//! ask the facts → `step` → perform the step's effects in order → on the first failure keep
//! the old instance and stop with the contract's message for the outcome (its
//! `MessageRequest` filled with the outcome's values, else the `action_failed` role) →
//! otherwise save the new instance → run engine states (perform their `run` actions, step
//! on the results) until a state waits for an agent or is terminal. It returns a `Turn`:
//! the last committed instance, the accepted steps and why it stopped (`Stop::Waiting`,
//! `Finished`, `Refused`, `ActionFailed`, `CheckpointFailed`, `WrongContract`,
//! `EngineLoop`). A host resumes a stalled session (a restored checkpoint, an engine state
//! whose action failed) with `Driver::advance`. A failure message renders with the
//! outcome's values overridden by the contract's, except a contract value that is null
//! (`merge_message_args`), so the host's details are never blanked.
//!
//! An effect whose action has a `retry` policy is performed again while it fails with an
//! outcome the policy names, each attempt numbered (`Effect::attempt`); its `timeout` is
//! handed to the host, which enforces it. When a turn's step enters a terminal state the
//! driver performs the contract's `finally` actions (all of them, whatever fails; they are
//! in `Turn::finalizers`); `Driver::cancel` takes the contract's `on_cancel` path (then the
//! finalizers); `Driver::finalize` runs them for a session that ends anywhere else.
//! `Host::stepped` is told of each committed step, for progress while a long turn runs.

use serde_json::{Map, Value};

use crate::contract::Contract;
use crate::contract::flags::{self, FlagError};
use crate::contract::model::{Outcome, StateKind};
use crate::machine::response::{RenderedMessage, message, role_message};
use crate::machine::{
    Accepted, Effect, Event, Input, Instance, Rejection, StartError, finally_effects,
    merge_message_args, run_effects, step, unknown_state,
};

/// What a host does for the driver: perform actions, and report what it observes.
pub trait Host {
    /// Performs one action. Returns its result (read as `result.BIND` by an engine
    /// state's guards; `Value::Null` for actions without one) or the failure outcome.
    fn perform(&mut self, effect: &Effect) -> Result<Value, ActionFailure>;

    /// The facts the host observes now (`facts.NAME` in guards), asked before each
    /// step so guards see the world as it is.
    fn facts(&mut self) -> Map<String, Value>;

    /// Told of each step as soon as it is committed (its effects done, its checkpoint
    /// saved), for progress reports while a long turn runs. Does nothing by default.
    fn stepped(&mut self, _step: &Accepted) {}
}

/// A failed action: its outcome (a name from the action's registry entry, mapped to a
/// message by the contract) and the values the outcome's message may use.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionFailure {
    pub outcome: String,
    pub args: Map<String, Value>,
}

impl ActionFailure {
    pub fn new(outcome: impl Into<String>) -> ActionFailure {
        ActionFailure {
            outcome: outcome.into(),
            args: Map::new(),
        }
    }

    #[must_use]
    pub fn with(mut self, name: &str, value: impl Into<Value>) -> ActionFailure {
        self.args.insert(name.to_string(), value.into());
        self
    }
}

/// Where committed instances go. Called once per committed step, in order.
pub trait CheckpointStore {
    fn save(&mut self, instance: &Instance) -> std::io::Result<()>;
}

/// A store that keeps nothing, for hosts and tests that do not persist sessions.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoCheckpoints;

impl CheckpointStore for NoCheckpoints {
    fn save(&mut self, _: &Instance) -> std::io::Result<()> {
        Ok(())
    }
}

/// Why a session could not start.
#[derive(Debug)]
pub enum StartFailure {
    Flags(FlagError),
    Start(StartError),
}

impl std::fmt::Display for StartFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartFailure::Flags(e) => e.fmt(f),
            StartFailure::Start(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for StartFailure {}

/// Why the driver stopped.
#[derive(Debug)]
pub enum Stop {
    /// The session waits for an agent's submission in an external state.
    Waiting,
    /// The session reached a terminal state.
    Finished(Option<Outcome>),
    /// The engine refused the step; the instance did not move.
    Refused(Box<Rejection>),
    /// A host action failed; the instance did not move.
    ActionFailed(Box<FailedAction>),
    /// The store could not save an accepted step. Its effects have happened, so the
    /// turn's instance is the new one, but it is not durable; a host should stop the
    /// session and report the error.
    CheckpointFailed(std::io::Error),
    /// The instance belongs to another contract (its `contract` name differs): a
    /// checkpoint restored into the wrong flow. Nothing ran.
    WrongContract { expected: String, found: String },
    /// Engine states ran `limit` steps without reaching a state that waits: the contract
    /// loops without a bound the engine can see (lint reports such cycles).
    EngineLoop { limit: usize },
}

/// A host action that failed, with what to tell the agent.
#[derive(Debug)]
pub struct FailedAction {
    pub action: String,
    pub failure: ActionFailure,
    /// The contract's message for the outcome, or the `action_failed` role's.
    pub message: RenderedMessage,
}

/// Why a step did not commit (or did, but could not be saved), and the instance the
/// session is in.
struct Halted {
    stop: Stop,
    instance: Instance,
    /// The accepted step, when its effects ran but its checkpoint failed.
    accepted: Option<Accepted>,
}

/// The result of one call to the driver.
#[derive(Debug)]
pub struct Turn {
    /// The instance the session is in: the last one whose step was accepted and whose
    /// effects all succeeded (durable, unless the stop is [`Stop::CheckpointFailed`]).
    pub instance: Instance,
    /// Every accepted step, in order.
    pub steps: Vec<Accepted>,
    pub stop: Stop,
    /// The contract's `finally` actions, when this turn ended the session.
    pub finalizers: Vec<Finalized>,
}

/// One `finally` action the driver ran, and how it went.
#[derive(Debug, Clone)]
pub struct Finalized {
    pub action: String,
    pub result: Result<Value, ActionFailure>,
}

/// Runs sessions of one contract for a host.
#[derive(Debug, Clone, Copy)]
pub struct Driver<'c> {
    contract: &'c Contract,
    /// The most engine steps one call may take before it reports [`Stop::EngineLoop`].
    pub max_engine_steps: usize,
}

impl<'c> Driver<'c> {
    pub fn new(contract: &'c Contract) -> Driver<'c> {
        Driver {
            contract,
            // Every engine state once per counter turn is far more than a real flow takes.
            max_engine_steps: 10_000,
        }
    }

    /// Starts a session (flags as the user typed them) and runs it until it waits for an
    /// agent or finishes. The new instance is checkpointed before anything runs.
    pub fn start(
        &self,
        host: &mut impl Host,
        store: &mut impl CheckpointStore,
        flag_text: &str,
        intent: Option<&str>,
        locale: Option<&str>,
        params: &Map<String, Value>,
    ) -> Result<Turn, StartFailure> {
        let flag_set = flags::parse(self.contract, flag_text).map_err(StartFailure::Flags)?;
        let instance = Instance::start(self.contract, flag_set, intent, locale, params)
            .map_err(StartFailure::Start)?;
        if let Err(e) = store.save(&instance) {
            return Ok(Turn {
                instance,
                steps: Vec::new(),
                stop: Stop::CheckpointFailed(e),
                finalizers: Vec::new(),
            });
        }
        Ok(self.advance(host, store, instance))
    }

    /// Submits an agent's payload in an external state. `tools_called` are the tools the
    /// host saw succeed since the session entered this state.
    pub fn submit(
        &self,
        host: &mut impl Host,
        store: &mut impl CheckpointStore,
        instance: Instance,
        payload: Value,
        tools_called: Vec<String>,
    ) -> Turn {
        let input = Input::Submit {
            payload,
            tools_called,
        };
        self.input_turn(host, store, instance, input)
    }

    /// Cancels the session (a user interrupt): it moves to the contract's `on_cancel`
    /// state and the `finally` actions run. Refused (and nothing runs) when the contract
    /// has no cancel path or the session already ended.
    pub fn cancel(
        &self,
        host: &mut impl Host,
        store: &mut impl CheckpointStore,
        instance: Instance,
    ) -> Turn {
        self.input_turn(host, store, instance, Input::Cancel)
    }

    /// One step on an outside input (a submission, a cancel), then the engine states
    /// that follow it.
    fn input_turn(
        &self,
        host: &mut impl Host,
        store: &mut impl CheckpointStore,
        instance: Instance,
        input: Input,
    ) -> Turn {
        let mut steps = Vec::new();
        let (instance, stop) = match self.foreign(&instance) {
            Some(stop) => (instance, stop),
            None => match self.commit_step(host, store, &instance, input) {
                Ok(t) => {
                    let next = t.instance.clone();
                    steps.push(t);
                    self.run_engine_states(host, store, next, &mut steps)
                }
                Err(halted) => {
                    steps.extend(halted.accepted);
                    (halted.instance, halted.stop)
                }
            },
        };
        self.turn(host, instance, steps, stop)
    }

    /// Runs the contract's `finally` actions for a session that ends without reaching a
    /// terminal state (an action failed, the engine looped, the host gives up): every
    /// exit path releases what the flow acquired. The driver calls this itself when a
    /// turn enters a terminal state; a host calls it only for the other exits.
    pub fn finalize(&self, host: &mut impl Host, instance: &Instance) -> Vec<Finalized> {
        let facts = host.facts();
        finally_effects(self.contract, instance, &facts)
            .iter()
            .map(|effect| Finalized {
                action: effect.action.clone(),
                result: perform(host, effect),
            })
            .collect()
    }

    /// The turn's result; runs the finalizers when one of its steps entered a terminal
    /// state (a session restored already finished does not run them again).
    fn turn(
        &self,
        host: &mut impl Host,
        instance: Instance,
        steps: Vec<Accepted>,
        stop: Stop,
    ) -> Turn {
        let entered_terminal = matches!(stop, Stop::Finished(_))
            && steps.last().is_some_and(|s| s.to == instance.state);
        let finalizers = if entered_terminal {
            self.finalize(host, &instance)
        } else {
            Vec::new()
        };
        Turn {
            instance,
            steps,
            stop,
            finalizers,
        }
    }

    /// Runs engine states (their `run` actions, then the step on their results) until the
    /// session waits for an agent or finishes. Also what a host calls to resume: after
    /// restoring a checkpoint, or to retry an engine state whose action failed.
    pub fn advance(
        &self,
        host: &mut impl Host,
        store: &mut impl CheckpointStore,
        instance: Instance,
    ) -> Turn {
        let mut steps = Vec::new();
        let (instance, stop) = match self.foreign(&instance) {
            Some(stop) => (instance, stop),
            None => self.run_engine_states(host, store, instance, &mut steps),
        };
        self.turn(host, instance, steps, stop)
    }

    /// The loop of [`Self::advance`]: appends each accepted step to `steps` and returns
    /// the instance the session is in and why it stopped.
    fn run_engine_states(
        &self,
        host: &mut impl Host,
        store: &mut impl CheckpointStore,
        mut instance: Instance,
        steps: &mut Vec<Accepted>,
    ) -> (Instance, Stop) {
        let mut engine_steps = 0;
        loop {
            let Some(state) = self.contract.state_id(&instance.state) else {
                // A checkpoint of a contract that has since dropped the state.
                let stop = Stop::Refused(Box::new(unknown_state(self.contract, &instance)));
                return (instance, stop);
            };
            let state = self.contract.state(state);
            let stop = match state.kind {
                StateKind::External => Stop::Waiting,
                StateKind::Terminal => Stop::Finished(state.outcome),
                StateKind::Engine if engine_steps >= self.max_engine_steps => Stop::EngineLoop {
                    limit: self.max_engine_steps,
                },
                StateKind::Engine => {
                    let results = match self.run_state_actions(host, &instance) {
                        Ok(results) => results,
                        Err(stop) => return (instance, stop),
                    };
                    let input = Input::Results { results };
                    match self.commit_step(host, store, &instance, input) {
                        Ok(t) => {
                            instance = t.instance.clone();
                            steps.push(t);
                            engine_steps += 1;
                            continue;
                        }
                        Err(halted) => {
                            steps.extend(halted.accepted);
                            return (halted.instance, halted.stop);
                        }
                    }
                }
            };
            return (instance, stop);
        }
    }

    /// [`Stop::WrongContract`] when the instance was started under another contract.
    fn foreign(&self, instance: &Instance) -> Option<Stop> {
        (instance.contract != self.contract.name).then(|| Stop::WrongContract {
            expected: self.contract.name.clone(),
            found: instance.contract.clone(),
        })
    }

    /// Performs an engine state's `run` actions and collects their results by `bind`.
    /// The facts are asked here, before the actions run; the step on their results asks
    /// again, so its guards see the world after the actions.
    fn run_state_actions(
        &self,
        host: &mut impl Host,
        instance: &Instance,
    ) -> Result<Map<String, Value>, Stop> {
        let facts = host.facts();
        let effects =
            run_effects(self.contract, instance, &facts).map_err(|r| Stop::Refused(Box::new(r)))?;
        let mut results = Map::new();
        for effect in &effects {
            let result = perform(host, effect)
                .map_err(|failure| self.action_failed(instance, effect, failure))?;
            results.insert(effect.bind.clone(), result);
        }
        Ok(results)
    }

    /// One step: the engine decides, the host performs the transition's effects in order,
    /// and only when all succeed is the new instance committed and checkpointed. On any
    /// failure the old instance is returned with the reason.
    fn commit_step(
        &self,
        host: &mut impl Host,
        store: &mut impl CheckpointStore,
        instance: &Instance,
        input: Input,
    ) -> Result<Accepted, Box<Halted>> {
        let halt = |stop: Stop, instance: Instance| {
            Box::new(Halted {
                stop,
                instance,
                accepted: None,
            })
        };
        let event = Event {
            input,
            facts: host.facts(),
        };
        let t = step(self.contract, instance, &event)
            .map_err(|r| halt(Stop::Refused(Box::new(r)), instance.clone()))?;
        for effect in &t.effects {
            if let Err(failure) = perform(host, effect) {
                let stop = self.action_failed(instance, effect, failure);
                return Err(halt(stop, instance.clone()));
            }
        }
        if let Err(e) = store.save(&t.instance) {
            return Err(Box::new(Halted {
                stop: Stop::CheckpointFailed(e),
                instance: t.instance.clone(),
                accepted: Some(t),
            }));
        }
        host.stepped(&t);
        Ok(t)
    }

    /// The contract's message for a failed action: the one it maps the outcome to, with
    /// the outcome's values and the values the contract gives (`merge_message_args`),
    /// else the `action_failed` role's, whose `details` name the outcome and the host's
    /// own `details` when it gave some.
    fn action_failed(&self, instance: &Instance, effect: &Effect, failure: ActionFailure) -> Stop {
        let locale = instance.locale.as_str();
        let message = match effect.on_failure.get(&failure.outcome) {
            Some(request) => {
                let given = request.args.iter().map(|(k, v)| (k.clone(), v.clone()));
                let args = merge_message_args(&failure.args, given);
                message(self.contract, &request.key, &args, locale)
            }
            None => {
                let details = match failure.args.get("details").and_then(Value::as_str) {
                    Some(d) => format!("{}: {d}", failure.outcome),
                    None => failure.outcome.clone(),
                };
                role_message(
                    self.contract,
                    "action_failed",
                    &[
                        ("action", Value::String(effect.action.clone())),
                        ("details", Value::String(details)),
                    ],
                    locale,
                )
            }
        };
        Stop::ActionFailed(Box::new(FailedAction {
            action: effect.action.clone(),
            failure,
            message,
        }))
    }
}

/// Performs `effect`, and again while it fails with an outcome its retry policy names and
/// attempts are left; each attempt carries its number, so the host can tell a retry.
fn perform(host: &mut impl Host, effect: &Effect) -> Result<Value, ActionFailure> {
    let mut attempt = effect.clone();
    loop {
        match host.perform(&attempt) {
            Ok(value) => return Ok(value),
            Err(failure) => {
                let retries = effect
                    .retry
                    .as_ref()
                    .filter(|r| r.on.contains(&failure.outcome));
                match retries {
                    Some(policy) if attempt.attempt <= policy.max => attempt.attempt += 1,
                    _ => return Err(failure),
                }
            }
        }
    }
}
