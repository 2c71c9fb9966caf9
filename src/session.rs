//! The session driver every host shares: step → perform the host's effects in order →
//! commit the new instance (or keep the old one when an effect fails) → run engine states
//! → checkpoint. The driver does no IO itself; a host does it through [`Host`] and
//! [`CheckpointStore`], so the MCP server and AgentRunner never re-implement the loop.

use serde_json::{Map, Value};

use crate::contract::Contract;
use crate::contract::flags::{self, FlagError};
use crate::contract::raw::{Outcome, StateKind};
use crate::machine::response::{RenderedMessage, message, role_message};
use crate::machine::{
    Accepted, Effect, Event, Input, Instance, Rejection, StartError, run_effects, step,
    unknown_state,
};

/// What a host does for the driver: perform actions, and report what it observes.
pub trait Host {
    /// Performs one action. Returns its result (read as `result.BIND` by an engine
    /// state's guards; `Value::Null` for actions without one) or the failure outcome.
    fn perform(&mut self, effect: &Effect) -> Result<Value, ActionFailure>;

    /// The facts the host observes now (`facts.NAME` in guards), asked before each
    /// step so guards see the world as it is.
    fn facts(&mut self) -> Map<String, Value>;
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
    /// The store could not save a committed step. The instance moved (its effects have
    /// happened) but is not durable; a host should stop the session.
    CheckpointFailed(std::io::Error),
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

/// Why a step did not commit, and the instance the session keeps.
struct Halted {
    stop: Stop,
    instance: Instance,
}

/// The result of one call to the driver.
#[derive(Debug)]
pub struct Turn {
    /// The last committed instance.
    pub instance: Instance,
    /// Every accepted step, in order.
    pub steps: Vec<Accepted>,
    pub stop: Stop,
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
        let mut steps = Vec::new();
        match self.commit_step(host, store, &instance, input) {
            Ok(t) => {
                let next = t.instance.clone();
                steps.push(t);
                let mut turn = self.advance(host, store, next);
                steps.append(&mut turn.steps);
                turn.steps = steps;
                turn
            }
            Err(halted) => Turn {
                instance: halted.instance,
                steps,
                stop: halted.stop,
            },
        }
    }

    /// Runs engine states (their `run` actions, then the step on their results) until the
    /// session waits for an agent or finishes. Also what a host calls after restoring a
    /// checkpoint that stopped in an engine state.
    pub(crate) fn advance(
        &self,
        host: &mut impl Host,
        store: &mut impl CheckpointStore,
        mut instance: Instance,
    ) -> Turn {
        let mut steps = Vec::new();
        loop {
            let Some(state) = self.contract.state_id(&instance.state) else {
                // A checkpoint of a contract that has since dropped the state.
                let stop = Stop::Refused(Box::new(unknown_state(self.contract, &instance)));
                return Turn {
                    instance,
                    steps,
                    stop,
                };
            };
            let kind = self.contract.state(state).kind;
            let stop = match kind {
                StateKind::External => Some(Stop::Waiting),
                StateKind::Terminal => Some(Stop::Finished(self.contract.state(state).outcome)),
                StateKind::Engine if steps.len() >= self.max_engine_steps => {
                    Some(Stop::EngineLoop {
                        limit: self.max_engine_steps,
                    })
                }
                StateKind::Engine => None,
            };
            if let Some(stop) = stop {
                return Turn {
                    instance,
                    steps,
                    stop,
                };
            }
            let results = match self.run_state_actions(host, &instance) {
                Ok(results) => results,
                Err(stop) => {
                    return Turn {
                        instance,
                        steps,
                        stop,
                    };
                }
            };
            match self.commit_step(host, store, &instance, Input::Results { results }) {
                Ok(t) => {
                    instance = t.instance.clone();
                    steps.push(t);
                }
                Err(halted) => {
                    return Turn {
                        instance: halted.instance,
                        steps,
                        stop: halted.stop,
                    };
                }
            }
        }
    }

    /// Performs an engine state's `run` actions and collects their results by `bind`.
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
            let result = host
                .perform(effect)
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
        let halt = |stop: Stop, instance: Instance| Box::new(Halted { stop, instance });
        let event = Event {
            input,
            facts: host.facts(),
        };
        let t = step(self.contract, instance, &event)
            .map_err(|r| halt(Stop::Refused(Box::new(r)), instance.clone()))?;
        for effect in &t.effects {
            if let Err(failure) = host.perform(effect) {
                let stop = self.action_failed(instance, effect, failure);
                return Err(halt(stop, instance.clone()));
            }
        }
        if let Err(e) = store.save(&t.instance) {
            return Err(halt(Stop::CheckpointFailed(e), t.instance));
        }
        Ok(t)
    }

    /// The contract's message for a failed action: the one it maps the outcome to, with
    /// the outcome's values and the values the contract gives (which win), else the
    /// `action_failed` role's.
    fn action_failed(&self, instance: &Instance, effect: &Effect, failure: ActionFailure) -> Stop {
        let locale = instance.locale.as_str();
        let message = match effect.on_failure.get(&failure.outcome) {
            Some(request) => {
                let mut args = failure.args.clone();
                args.extend(request.args.clone());
                message(self.contract, &request.key, &args, locale)
            }
            None => role_message(
                self.contract,
                "action_failed",
                &[
                    ("action", Value::String(effect.action.clone())),
                    ("details", Value::String(failure.outcome.clone())),
                ],
                locale,
            ),
        };
        Stop::ActionFailed(Box::new(FailedAction {
            action: effect.action.clone(),
            failure,
            message,
        }))
    }
}
