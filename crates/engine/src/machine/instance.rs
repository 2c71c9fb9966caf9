//! The state of one running session: everything the interpreter reads and writes.
//! Serialisable, so hosts can checkpoint it; it refers to states by name so a checkpoint
//! stays readable when the contract is edited.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::contract::Contract;
use crate::contract::flags::FlagSet;
use crate::contract::model::{CounterScope, ValueType};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChecklistItem {
    pub item: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl ChecklistItem {
    /// The item as guards see it: built by hand, as [`Task::to_value`] is, so it cannot
    /// fail (the serde form is the same: absent options are left out).
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("item".into(), Value::String(self.item.clone()));
        map.insert("status".into(), Value::String(self.status.clone()));
        if let Some(evidence) = &self.evidence {
            map.insert("evidence".into(), Value::String(evidence.clone()));
        }
        if let Some(reason) = &self.reason {
            map.insert("reason".into(), Value::String(reason.clone()));
        }
        Value::Object(map)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub id: String,
    pub description: String,
    /// `pending` or `completed`.
    pub status: String,
    #[serde(default)]
    pub checklist: Vec<ChecklistItem>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revert_reason: Option<String>,
    /// Per-task counters (`failure_count`), kept across re-planning for the same id.
    #[serde(default)]
    pub counters: BTreeMap<String, u32>,
}

impl Task {
    pub(crate) fn is_pending(&self) -> bool {
        self.status == "pending"
    }

    /// The task as guards and templates see it: counters appear as fields.
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("id".into(), Value::String(self.id.clone()));
        map.insert(
            "description".into(),
            Value::String(self.description.clone()),
        );
        map.insert("status".into(), Value::String(self.status.clone()));
        map.insert(
            "checklist".into(),
            Value::Array(self.checklist.iter().map(ChecklistItem::to_value).collect()),
        );
        map.insert(
            "revert_reason".into(),
            self.revert_reason
                .clone()
                .map_or(Value::Null, Value::String),
        );
        for (k, v) in &self.counters {
            map.insert(k.clone(), Value::from(*v));
        }
        Value::Object(map)
    }
}

/// A saved phase summary: what the agent said when it finished a step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// `step_NN_STATE`, or `step_NN_STATE_TASKID` for per-task steps (a state id and a task id), so one
    /// task's summary never overwrites another's.
    pub key: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Instance {
    /// The contract this instance runs (`RawContract::contract`).
    pub contract: String,
    /// The current state's id.
    pub state: String,
    pub flags: FlagSet,
    pub intent: String,
    pub locale: String,
    pub params: Map<String, Value>,
    /// Session-scoped counters.
    pub counters: BTreeMap<String, u32>,
    pub tasks: Vec<Task>,
    pub vars: Map<String, Value>,
    pub summaries: Vec<Summary>,
    /// Accepted transitions so far.
    pub steps_taken: u64,
}

/// Why a session could not start. `Display` gives the message for the user.
#[derive(Debug, Clone, PartialEq)]
pub enum StartError {
    UnknownIntent {
        intent: String,
        known: Vec<String>,
    },
    UnknownLocale {
        locale: String,
        known: Vec<String>,
    },
    ParamType {
        name: String,
        expected: ValueType,
        got: Value,
    },
    UnknownParam {
        name: String,
        known: Vec<String>,
    },
}

impl StartError {
    /// A stable key for hosts that map errors to their own messages.
    pub fn key(&self) -> &'static str {
        match self {
            StartError::UnknownIntent { .. } => "start.unknown_intent",
            StartError::UnknownLocale { .. } => "start.unknown_locale",
            StartError::ParamType { .. } => "start.param_type",
            StartError::UnknownParam { .. } => "start.unknown_param",
        }
    }
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::UnknownIntent { intent, known } => {
                write!(
                    f,
                    "unknown intent `{intent}`; use one of: {}",
                    known.join(", ")
                )
            }
            StartError::UnknownLocale { locale, known } => {
                write!(
                    f,
                    "unknown locale `{locale}`; use one of: {}",
                    known.join(", ")
                )
            }
            StartError::ParamType {
                name,
                expected,
                got,
            } => write!(f, "param `{name}` must be {expected:?}, got {got}"),
            StartError::UnknownParam { name, known } => {
                write!(f, "unknown param `{name}`")?;
                if !known.is_empty() {
                    write!(f, "; params: {}", known.join(", "))?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for StartError {}

impl Instance {
    /// A new session at the contract's initial state. `params` override declared defaults.
    pub fn start(
        contract: &Contract,
        flags: FlagSet,
        intent: Option<&str>,
        locale: Option<&str>,
        params: &Map<String, Value>,
    ) -> Result<Instance, StartError> {
        let intent = intent.unwrap_or(&contract.default_intent);
        if !contract.intents.iter().any(|i| i == intent) {
            return Err(StartError::UnknownIntent {
                intent: intent.to_string(),
                known: contract.intents.clone(),
            });
        }
        let locale = locale.unwrap_or(contract.default_locale());
        if !contract.locales.iter().any(|l| l == locale) {
            return Err(StartError::UnknownLocale {
                locale: locale.to_string(),
                known: contract.locales.clone(),
            });
        }
        let mut resolved = Map::new();
        for (name, (kind, default)) in &contract.params {
            let value = params.get(name).cloned().unwrap_or_else(|| default.clone());
            if !kind.accepts(&value) {
                return Err(StartError::ParamType {
                    name: name.clone(),
                    expected: *kind,
                    got: value,
                });
            }
            resolved.insert(name.clone(), value);
        }
        if let Some(unknown) = params.keys().find(|k| !contract.params.contains_key(*k)) {
            return Err(StartError::UnknownParam {
                name: unknown.clone(),
                known: contract.params.keys().cloned().collect(),
            });
        }
        Ok(Instance {
            contract: contract.name.clone(),
            state: contract.state(contract.initial).id.clone(),
            flags,
            intent: intent.to_string(),
            locale: locale.to_string(),
            params: resolved,
            counters: contract
                .counters
                .iter()
                .filter(|c| c.scope == CounterScope::Session)
                .map(|c| (c.name.clone(), 0))
                .collect(),
            tasks: Vec::new(),
            vars: Map::new(),
            summaries: Vec::new(),
            steps_taken: 0,
        })
    }

    /// The data guards read, except `payload`, `facts` and `result`, which come with events.
    pub(crate) fn guard_roots(&self) -> Map<String, Value> {
        let mut roots = Map::new();
        roots.insert("state".into(), Value::String(self.state.clone()));
        roots.insert("flags".into(), Value::Object(self.flags.clone()));
        roots.insert("intent".into(), Value::String(self.intent.clone()));
        roots.insert("params".into(), Value::Object(self.params.clone()));
        roots.insert(
            "counters".into(),
            Value::Object(
                self.counters
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::from(*v)))
                    .collect(),
            ),
        );
        roots.insert(
            "tasks".into(),
            Value::Array(self.tasks.iter().map(Task::to_value).collect()),
        );
        roots.insert("vars".into(), Value::Object(self.vars.clone()));
        roots
    }

    /// How many steps [`Instance::reduce_summaries`] has.
    pub const SUMMARY_REDUCTIONS: usize = 5;

    /// One step of making the instance smaller, for a host whose checkpoint of it is over
    /// its size limit; a host takes them in order until the checkpoint fits (the
    /// original's order): every phase summary cut to 400, 200, then 100 characters
    /// (steps 0 to 2); only the last 10 summaries (3); none (4). Steps past the last
    /// change nothing. Only the summaries are reduced: they remind the agent of earlier
    /// phases, while the tasks, counters and variables are what the flow runs on.
    pub fn reduce_summaries(&mut self, step: usize) {
        match step {
            0..=2 => {
                let max = [400, 200, 100][step];
                for s in &mut self.summaries {
                    if s.text.chars().count() > max {
                        s.text = s.text.chars().take(max).collect::<String>() + "...";
                    }
                }
            }
            3 => {
                let n = self.summaries.len();
                self.summaries.drain(..n.saturating_sub(10));
            }
            4 => self.summaries.clear(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_summaries(n: usize, len: usize) -> Instance {
        Instance {
            contract: "c".into(),
            state: "S".into(),
            flags: FlagSet::default(),
            intent: "I".into(),
            locale: "en".into(),
            params: Map::new(),
            counters: BTreeMap::new(),
            tasks: Vec::new(),
            vars: Map::new(),
            summaries: (0..n)
                .map(|i| Summary {
                    key: format!("step_{i}"),
                    text: "é".repeat(len),
                })
                .collect(),
            steps_taken: 0,
        }
    }

    #[test]
    fn summaries_are_reduced_cut_then_the_last_ten_then_none() {
        let mut instance = with_summaries(12, 500);
        let lengths = |i: &Instance| -> Vec<usize> {
            i.summaries.iter().map(|s| s.text.chars().count()).collect()
        };
        // Characters, not bytes, and a mark that the text was cut.
        instance.reduce_summaries(0);
        assert_eq!(lengths(&instance), vec![403; 12]);
        assert!(instance.summaries[0].text.ends_with("..."));
        instance.reduce_summaries(1);
        assert_eq!(lengths(&instance), vec![203; 12]);
        instance.reduce_summaries(2);
        assert_eq!(lengths(&instance), vec![103; 12]);
        instance.reduce_summaries(3);
        let keys: Vec<&str> = instance.summaries.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(keys.first(), Some(&"step_2"));
        assert_eq!(keys.len(), 10);
        let before = instance.clone();
        instance.reduce_summaries(Instance::SUMMARY_REDUCTIONS);
        assert_eq!(instance, before, "a step past the last changes nothing");
        instance.reduce_summaries(4);
        assert!(instance.summaries.is_empty());
        // A short summary is left as it is.
        let mut short = with_summaries(1, 50);
        short.reduce_summaries(0);
        assert_eq!(short, with_summaries(1, 50));
    }

    /// Guards see a checklist item as its serde form: the hand-built value must not drift.
    #[test]
    fn a_checklist_item_as_guards_see_it_is_its_serde_form() {
        for item in [
            ChecklistItem {
                item: "a".into(),
                status: "done".into(),
                evidence: Some("e".into()),
                reason: Some("r".into()),
            },
            ChecklistItem {
                item: "b".into(),
                status: "pending".into(),
                evidence: None,
                reason: None,
            },
        ] {
            assert_eq!(item.to_value(), serde_json::to_value(&item).unwrap());
        }
    }
}
