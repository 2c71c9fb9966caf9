//! The scenario file as written: serde and schemars types that mirror the YAML.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

/// A scenario file: the contract it tests and its scenarios.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawScenarioFile {
    /// `builtin` (the default) or a contract file, relative to this file.
    #[serde(default)]
    pub contract: Option<String>,
    pub scenarios: Vec<RawScenario>,
    /// Free text about the file.
    #[serde(default)]
    pub about: Option<String>,
}

/// One session, started and driven step by step.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    pub name: String,
    /// Flags as a user types them (`--quick -ni`).
    #[serde(default)]
    pub flags: String,
    /// The intent; default: the contract's default intent.
    #[serde(default)]
    pub intent: Option<String>,
    #[serde(default)]
    pub locale: Option<String>,
    /// Session parameters (`params.NAME` in guards), e.g. the user's `request`.
    #[serde(default)]
    pub params: Map<String, Value>,
    /// Host facts (`facts.NAME` in guards) for every step.
    #[serde(default)]
    pub facts: Map<String, Value>,
    /// Results of host actions for every step, by action name: a value (read as
    /// `result.BIND`), `{fail: OUTCOME}` for a failure, or `{sequence: [...]}` for one
    /// such result per call, in order (the last repeats). Actions not listed succeed with
    /// `null`.
    #[serde(default)]
    pub results: Map<String, Value>,
    pub steps: Vec<RawStep>,
}

/// One step: a submission (or none, to check the session as it is) and what must hold.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawStep {
    /// The payload to submit in the current (external) state.
    #[serde(default)]
    pub submit: Option<Value>,
    /// The tools the host saw called in this state before the submission.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Facts for this step, over the scenario's.
    #[serde(default)]
    pub facts: Map<String, Value>,
    /// Action results for this step, over the scenario's.
    #[serde(default)]
    pub results: Map<String, Value>,
    pub expect: RawExpect,
    /// Free text about the step.
    #[serde(default)]
    pub about: Option<String>,
}

/// What must hold after a step; every key given is checked.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawExpect {
    /// The state the session is in.
    #[serde(default)]
    pub state: Option<String>,
    /// The message key the step produced.
    #[serde(default)]
    pub message: Option<String>,
    /// The step was refused with this message key.
    #[serde(default)]
    pub rejected: Option<String>,
    /// The session finished with this outcome.
    #[serde(default)]
    pub finished: Option<String>,
    /// A host action failed with this outcome.
    #[serde(default)]
    pub action_failed: Option<String>,
    /// This counter's limit redirected the step.
    #[serde(default)]
    pub limit: Option<String>,
    /// The session did not start, with this error key (`flags.conflict`, ...); only on
    /// the first step.
    #[serde(default)]
    pub start_error: Option<String>,
    /// Session counters that must have these values (`{verify_failures: 2}`).
    #[serde(default)]
    pub counters: Map<String, Value>,
    /// Session variables that must have these values.
    #[serde(default)]
    pub vars: Map<String, Value>,
}
