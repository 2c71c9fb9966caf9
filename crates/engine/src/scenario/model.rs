//! A scenario file, resolved: scenarios with their steps and expectations, each with the
//! place it is written.

use serde_json::{Map, Value};

use crate::source::Span;

/// One scenario, ready to run.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub flags: String,
    pub intent: Option<String>,
    pub locale: Option<String>,
    pub params: Map<String, Value>,
    pub facts: Map<String, Value>,
    /// Results of host actions for every step, by action name; a step's own win.
    pub results: Map<String, Value>,
    pub steps: Vec<Step>,
    /// Where the scenario's `name` is written.
    pub span: Span,
}

/// One step: an optional submission, then what must hold.
#[derive(Debug, Clone)]
pub struct Step {
    /// The payload to submit; `None` checks the session as it is (after the start, say).
    pub submit: Option<Value>,
    /// The tools the host saw called in the state before this submission.
    pub tools: Vec<String>,
    /// Facts for this step, over the scenario's.
    pub facts: Map<String, Value>,
    /// Action results for this step, over the scenario's.
    pub results: Map<String, Value>,
    pub expect: Expect,
    pub span: Span,
}

/// What must hold after a step. Every field that is set is checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Expect {
    pub state: Option<String>,
    /// The key of the step's message: the last accepted step's, the refusal's or the
    /// failed action's.
    pub message: Option<String>,
    /// The step was refused with this message key (the session did not move).
    pub rejected: Option<String>,
    /// The session finished with this outcome (`success`, `failure`, `aborted`).
    pub finished: Option<String>,
    /// A host action failed with this outcome (the session did not move).
    pub action_failed: Option<String>,
    /// This counter's limit redirected the step.
    pub limit: Option<String>,
    /// The session did not start, with this error key.
    pub start_error: Option<String>,
    /// Counters that must have these values.
    pub counters: Map<String, Value>,
    /// Session variables that must have these values.
    pub vars: Map<String, Value>,
}

/// The contract a scenario file runs against, as the file names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContractRef {
    /// `contract: builtin` (or no `contract` key): the built-in code-intel flow.
    Builtin,
    /// A path relative to the scenario file.
    Path(String),
}

/// A loaded scenario file.
#[derive(Debug, Clone)]
pub struct ScenarioFile {
    pub contract: ContractRef,
    pub scenarios: Vec<Scenario>,
}
