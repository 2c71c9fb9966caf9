//! A chat turn's flow: the session of `contracts/multiverse_chat.yml` each user message
//! has, as pure functions. The chat submits what it found ([`ChatEvent`]: the control
//! word, the checked patch's counts, the planner's failure) and gets back the step (the
//! reply's message in the session's locale, and the side effects to perform:
//! [`ChatEffect`]) or a refusal. Nothing here does IO.
//!
//! No state of the flow is named here: which control word sets which execution state,
//! when a patch starts execution and every reply's wording are the contract's.

use serde_json::{Map, Value, json};

use super::control::Control;
use super::lifecycle::{LifecycleContractError, Refusal, load_builtin, terminal_outcome};
use super::model::ExecutionState;
use crate::contract::Contract;
use crate::contract::model::Outcome;
use crate::machine::response::{self, RenderedMessage};
use crate::machine::{self, Event, Input, Instance, StartError};

/// The chat turn contract, compiled into the binary.
pub const CHAT_TURN_CONTRACT: &str = include_str!("../../contracts/multiverse_chat.yml");

/// What the chat found, submitted as the payload `{event: NAME, ...}` of the turn's
/// current state.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatEvent {
    /// The user's message: the control word it is, if any, the execution state now, and
    /// for a status request the summary to show; for a message that repeats the one
    /// whose patch was applied last, that turn.
    Message {
        control: Option<Control>,
        execution: ExecutionState,
        status: Option<PlanStatus>,
        resent: Option<Resent>,
    },
    /// The planner's patch, checked whole against a copy of the plan: what it changes.
    Patch {
        created: usize,
        updated: usize,
        moved: usize,
        deleted: usize,
        questions: usize,
        execution: ExecutionState,
    },
    /// No reply of the planner could be applied.
    PlannerFailed { reason: String },
}

impl ChatEvent {
    /// The payload submitted to the turn's session.
    pub fn payload(&self) -> Value {
        match self {
            ChatEvent::Message {
                control,
                execution,
                status,
                resent,
            } => {
                let mut payload =
                    json!({"event": "message", "control": control, "execution": execution});
                if let Some(status) = status {
                    payload["status"] = json!(status);
                }
                if let Some(resent) = resent {
                    payload["resent"] = json!(resent);
                }
                payload
            }
            ChatEvent::Patch {
                created,
                updated,
                moved,
                deleted,
                questions,
                execution,
            } => json!({"event": "patch", "created": created, "updated": updated,
                        "moved": moved, "deleted": deleted, "questions": questions,
                        "execution": execution}),
            ChatEvent::PlannerFailed { reason } => {
                json!({"event": "planner_failed", "reason": reason})
            }
        }
    }
}

/// The earlier turn a message repeats: when it was received and what it was answered.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Resent {
    pub at: String,
    pub reply: String,
}

/// The plan's status, for a status request.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PlanStatus {
    /// The tasks by state (`2 SUCCEEDED, 1 RUNNING`), or `0`.
    pub tasks: String,
    pub open_backlog: usize,
}

/// A side effect the turn asks for (the contract's host actions, decoded).
#[derive(Debug, Clone, PartialEq)]
pub enum ChatEffect {
    /// `execution.set`.
    SetExecution(ExecutionState),
    /// `plan.apply`: the checked patch's plan and its questions, in one journal entry.
    ApplyPlan,
}

/// An accepted event.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatStep {
    pub to: String,
    pub instance: Instance,
    /// In order.
    pub effects: Vec<ChatEffect>,
    /// The contract's message for the step: the reply, or the progress shown.
    pub message: Option<RenderedMessage>,
    /// The turn ended, with this outcome.
    pub finished: Option<Outcome>,
}

/// The loaded chat turn contract.
#[derive(Debug)]
pub struct ChatFlow {
    contract: Contract,
}

impl ChatFlow {
    /// Loads the built-in contract for the chat host.
    pub fn load() -> Result<ChatFlow, LifecycleContractError> {
        load_builtin(
            "contracts/multiverse_chat.yml",
            CHAT_TURN_CONTRACT,
            super::registry::chat_registry(),
        )
        .map(|contract| ChatFlow { contract })
    }

    pub fn contract(&self) -> &Contract {
        &self.contract
    }

    /// A new turn in `locale` (the contract's default when it does not have it), with
    /// `params` overriding the contract's (`autopilot`).
    pub fn start(&self, locale: &str, params: &Map<String, Value>) -> Result<Instance, StartError> {
        let locale = if self.contract.locales.iter().any(|l| l == locale) {
            locale
        } else {
            self.contract.default_locale()
        };
        Instance::start(
            &self.contract,
            crate::contract::flags::defaults(&self.contract),
            None,
            Some(locale),
            params,
        )
    }

    pub fn submit(&self, instance: &Instance, event: &ChatEvent) -> Result<ChatStep, Refusal> {
        self.step(
            instance,
            &Event {
                input: Input::Submit {
                    payload: event.payload(),
                    tools_called: Vec::new(),
                },
                facts: Map::new(),
            },
        )
    }

    /// The daemon stopped while the planner was asked: the contract's cancel path.
    pub fn cancel(&self, instance: &Instance) -> Result<ChatStep, Refusal> {
        self.step(
            instance,
            &Event {
                input: Input::Cancel,
                facts: Map::new(),
            },
        )
    }

    /// A line of the reply the chat renders itself (`chat.line.*`, declared by the chat
    /// registry so lint makes the contract define it), in the turn's locale.
    pub fn line(&self, instance: &Instance, key: &str, args: &[(&str, Value)]) -> String {
        let args: Map<String, Value> = args
            .iter()
            .map(|(k, v)| ((*k).to_string(), v.clone()))
            .collect();
        response::message(&self.contract, key, &args, &instance.locale).text
    }

    fn step(&self, instance: &Instance, event: &Event) -> Result<ChatStep, Refusal> {
        let accepted = machine::step(&self.contract, instance, event).map_err(Refusal::of)?;
        let effects = accepted
            .effects
            .iter()
            .map(decode)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|details| Refusal::internal("chat", details))?;
        let finished = terminal_outcome(&self.contract, &accepted.instance);
        Ok(ChatStep {
            to: accepted.to,
            instance: accepted.instance,
            effects,
            message: accepted.message,
            finished,
        })
    }
}

/// The typed form of a host action of the chat contract.
fn decode(effect: &machine::Effect) -> Result<ChatEffect, String> {
    match effect.action.as_str() {
        "execution.set" => effect
            .args
            .get("state")
            .cloned()
            .ok_or_else(|| "execution.set: no `state`".to_string())
            .and_then(|v| serde_json::from_value(v).map_err(|e| format!("execution.set: {e}")))
            .map(ChatEffect::SetExecution),
        "plan.apply" => Ok(ChatEffect::ApplyPlan),
        other => Err(format!(
            "the chat turn asked for `{other}`, which this host does not perform"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow() -> ChatFlow {
        ChatFlow::load().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn each_control_word_sets_the_execution_state_the_contract_names() {
        let flow = flow();
        for (control, expected) in [
            (Control::Stop, Some(ExecutionState::Idle)),
            (Control::Pause, Some(ExecutionState::Paused)),
            (Control::Resume, Some(ExecutionState::Running)),
            (Control::Status, None),
        ] {
            let turn = flow.start("en", &Map::new()).unwrap();
            let step = flow
                .submit(
                    &turn,
                    &ChatEvent::Message {
                        control: Some(control),
                        execution: ExecutionState::Running,
                        status: Some(PlanStatus {
                            tasks: "1 SUCCEEDED".into(),
                            open_backlog: 0,
                        }),
                        resent: None,
                    },
                )
                .unwrap();
            assert_eq!(step.finished, Some(Outcome::Success), "{control:?}");
            let set: Vec<_> = step
                .effects
                .iter()
                .filter_map(|e| match e {
                    ChatEffect::SetExecution(s) => Some(*s),
                    ChatEffect::ApplyPlan => None,
                })
                .collect();
            assert_eq!(set, expected.into_iter().collect::<Vec<_>>(), "{control:?}");
        }
    }

    #[test]
    fn a_patch_that_created_tasks_applies_then_starts_and_replies_in_the_turns_locale() {
        let flow = flow();
        let turn = flow.start("ja", &Map::new()).unwrap();
        let planning = flow
            .submit(
                &turn,
                &ChatEvent::Message {
                    control: None,
                    execution: ExecutionState::Idle,
                    status: None,
                    resent: None,
                },
            )
            .unwrap();
        assert!(planning.finished.is_none());
        let step = flow
            .submit(
                &planning.instance,
                &ChatEvent::Patch {
                    created: 2,
                    updated: 0,
                    moved: 0,
                    deleted: 0,
                    questions: 0,
                    execution: ExecutionState::Idle,
                },
            )
            .unwrap();
        assert_eq!(
            step.effects,
            vec![
                ChatEffect::ApplyPlan,
                ChatEffect::SetExecution(ExecutionState::Running)
            ]
        );
        let text = step.message.unwrap().text;
        assert_eq!(text, "計画を更新し、実行を開始しました。");
        assert_eq!(
            flow.line(
                &step.instance,
                "chat.line.question",
                &[("question", json!("どちら?"))]
            ),
            "質問: どちら?"
        );
    }

    #[test]
    fn a_workspace_may_be_in_exactly_the_languages_the_chat_turn_speaks() {
        let flow = flow();
        assert_eq!(flow.contract().locales, crate::multiverse::app::LOCALES);
    }

    #[test]
    fn an_unknown_locale_falls_back_to_the_default_and_cancel_ends_the_turn() {
        let flow = flow();
        let turn = flow.start("fr", &Map::new()).unwrap();
        assert_eq!(turn.locale, "en");
        let step = flow.cancel(&turn).unwrap();
        assert_eq!(step.finished, Some(Outcome::Cancelled));
        assert!(step.effects.is_empty());
        assert!(flow.cancel(&step.instance).is_err(), "a finished turn");
    }
}
