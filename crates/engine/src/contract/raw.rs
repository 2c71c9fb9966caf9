//! The contract file exactly as written: serde and schemars types that mirror the YAML.
//!
//! Only these types derive `Deserialize` and `JsonSchema`; `schemas/contract.schema.json`
//! is generated from them. Nothing here is resolved or checked beyond shape: see
//! `contract::lower` for names, guards and schemas.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// A phase contract: the whole flow of a state machine as data.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawContract {
    /// Editor hint; ignored by the loader.
    // Accepted and documented in the schema (an editor hint, help for the contract's
    // reader); the engine never reads it.
    #[allow(dead_code)]
    #[serde(rename = "$schema", default)]
    pub schema: Option<String>,
    /// A dotted identifier of this flow, for example `code-intel.phase-flow`.
    pub contract: String,
    /// The format version; only `1` exists.
    #[schemars(range(max = u32::MAX))]
    pub version: u32,
    /// Which host runs this contract; selects the registry of actions, tools and facts.
    pub host: String,
    /// The locales every message and instruction must be written in; the first is the default.
    pub locales: Vec<String>,
    /// The host tool an agent calls to submit a payload for an external state; shown as
    /// `call` in phase responses. Contracts made only of engine states need none.
    #[serde(default)]
    pub call: Option<String>,
    /// Text appended to every rendered instruction (a minijinja template), per locale.
    #[serde(default)]
    pub instruction_footer: Option<Text>,
    /// The state a new session starts in.
    pub initial: String,
    /// Command-line style options that change the flow.
    #[serde(default)]
    pub flags: BTreeMap<String, RawFlag>,
    /// Flags that may not be combined, as pairs of flag names.
    #[serde(default)]
    pub conflicts: Vec<[String; 2]>,
    /// What the user wants; guards read it as `intent`.
    #[serde(default)]
    pub intents: Option<RawIntents>,
    /// Typed constants a session may override at start; guards read them as `params.NAME`.
    #[serde(default)]
    pub params: BTreeMap<String, RawParam>,
    /// Session variables that transitions set and guards and instructions read as `vars.NAME`.
    #[serde(default)]
    pub vars: BTreeMap<String, RawVar>,
    /// Loop counters, per session or per task, with their limits.
    #[serde(default)]
    pub counters: BTreeMap<String, RawCounter>,
    /// Shared JSON Schema definitions; a payload schema refers to them as `#/$defs/NAME`.
    #[serde(default)]
    pub payload_defs: BTreeMap<String, Value>,
    /// Messages that roles of the engine itself use (schema mismatch, missing tools, ...).
    #[serde(default)]
    pub engine_messages: BTreeMap<String, String>,
    /// For payload schema failures at a top-level property, a more specific message
    /// (`FIELD.required` when it is missing, `FIELD` for any other problem).
    #[serde(default)]
    pub field_messages: BTreeMap<String, String>,
    /// Host actions run once on every exit path of a session, after it reaches a
    /// terminal state (or when the host abandons it): releasing what the flow acquired,
    /// writing a report. They run in order; one failing does not stop the others.
    #[serde(default)]
    pub finally: Vec<RawActionCall>,
    /// Where a cancelled session goes (the user interrupted the host): a terminal state,
    /// normally with outcome `cancelled`. The `finally` actions still run.
    #[serde(default)]
    pub on_cancel: Option<RawCancel>,
    /// The states of the machine.
    pub states: BTreeMap<String, RawState>,
    /// Every text shown to an agent, keyed by a stable dotted key.
    #[serde(default)]
    pub messages: BTreeMap<String, RawMessage>,
    /// Columns of `code-intel matrix`: named flag sets.
    #[serde(default)]
    pub matrix: Option<RawMatrix>,
}

/// A text per locale, or one text for all locales.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum Text {
    PerLocale(BTreeMap<String, String>),
    Single(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FlagType {
    Bool,
    Enum,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFlag {
    #[serde(rename = "type")]
    pub kind: FlagType,
    /// The long option without dashes; defaults to the flag name with `_` replaced by `-`.
    #[serde(default)]
    pub long: Option<String>,
    /// The short option without the dash (may be several letters, like `ni`).
    #[serde(default)]
    pub short: Option<String>,
    /// Other accepted long spellings.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// The values of an enum flag.
    #[serde(default)]
    pub values: Vec<String>,
    /// Abbreviations of enum values (`f` for `full`).
    #[serde(default)]
    pub abbreviations: BTreeMap<String, String>,
    /// The default: `false` for bool flags, one of `values` for enum flags.
    #[serde(default)]
    pub default: Option<Value>,
    pub help: Text,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawIntents {
    pub values: Vec<String>,
    pub default: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ValueType {
    Bool,
    Int,
    Number,
    String,
    #[serde(rename = "list")]
    StringList,
}

impl ValueType {
    /// Whether `value` has this type.
    pub fn accepts(self, value: &Value) -> bool {
        match self {
            ValueType::Bool => value.is_boolean(),
            ValueType::Int => value.is_i64() || value.is_u64(),
            ValueType::Number => value.is_number(),
            ValueType::String => value.is_string(),
            ValueType::StringList => value
                .as_array()
                .is_some_and(|a| a.iter().all(Value::is_string)),
        }
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawParam {
    #[serde(rename = "type")]
    pub kind: ValueType,
    pub default: Value,
    // Accepted and documented in the schema (an editor hint, help for the contract's
    // reader); the engine never reads it.
    #[allow(dead_code)]
    #[serde(default)]
    pub help: Option<Text>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawVar {
    #[serde(rename = "type")]
    pub kind: ValueType,
    // Accepted and documented in the schema (an editor hint, help for the contract's
    // reader); the engine never reads it.
    #[allow(dead_code)]
    #[serde(default)]
    pub help: Option<Text>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CounterScope {
    Session,
    Task,
}

/// An integer, or the name of an integer param (`params.max_loops`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum Limit {
    Fixed(#[schemars(range(max = u32::MAX))] u32),
    Param(String),
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCounter {
    pub scope: CounterScope,
    /// When an increment makes the counter reach this value, `on_limit` decides where to go.
    pub limit: Limit,
    /// Ordered redirects taken when the limit is reached; the first whose guard holds wins.
    /// When none matches, the transition proceeds as written.
    #[serde(default)]
    pub on_limit: Vec<RawRedirect>,
    // Accepted and documented in the schema (an editor hint, help for the contract's
    // reader); the engine never reads it.
    #[allow(dead_code)]
    #[serde(default)]
    pub help: Option<Text>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRedirect {
    #[serde(default)]
    pub when: Option<String>,
    pub to: String,
    #[serde(default)]
    pub message: Option<RawMessageRef>,
    #[serde(default)]
    pub actions: Vec<RawActionCall>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StateKind {
    /// Waits for a payload submitted by an agent.
    #[default]
    External,
    /// The host runs the state's actions and the engine transitions on their results.
    Engine,
    /// The machine stops here.
    Terminal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Success,
    Failure,
    Aborted,
    // The flow ran out of its budget (a loop limit) before it could decide. (Plain
    // comments: documented variants would turn the schema's enum into a `oneOf`.)
    Incomplete,
    // The session was cancelled from outside (`on_cancel`).
    Cancelled,
    // The flow stopped on a question only a person can answer.
    #[serde(rename = "needs_human")]
    NeedsHuman,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failure => "failure",
            Outcome::Aborted => "aborted",
            Outcome::Incomplete => "incomplete",
            Outcome::Cancelled => "cancelled",
            Outcome::NeedsHuman => "needs_human",
        }
    }
}

/// The cancel path: the terminal state a cancelled session moves to.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCancel {
    pub to: String,
    #[serde(default)]
    pub message: Option<RawMessageRef>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawState {
    #[serde(default)]
    pub kind: StateKind,
    /// The step number in the documented flow (rows of the phase matrix).
    #[serde(default)]
    #[schemars(range(max = u32::MAX))]
    pub step: Option<u32>,
    /// The phase name shown to agents; defaults to the state id. Sub-steps share a phase.
    #[serde(default)]
    pub phase: Option<String>,
    /// The sub-step label (`plan`, `implement`, `complete`).
    #[serde(default)]
    pub substep: Option<String>,
    /// The row label in the phase matrix; defaults to the phase.
    #[serde(default)]
    pub label: Option<String>,
    /// What the agent must do: a minijinja template over the session, per locale.
    #[serde(default)]
    pub instruction: Option<Text>,
    /// The JSON Schema a submitted payload must satisfy (external states).
    #[serde(default)]
    pub payload: Option<Value>,
    /// Tools that must have been called in this state and listed in `tools_used`.
    #[serde(default)]
    pub required_tools: Vec<String>,
    /// The minimum number of distinct tools called in this state.
    #[serde(default)]
    #[schemars(range(max = u32::MAX))]
    pub min_distinct_tools: u32,
    /// Tools the agent may call while in this state; anything else is refused.
    #[serde(default)]
    pub allowed_tools: Vec<String>,
    /// Payload fields kept in the checkpoint (the rest is dropped).
    #[serde(default)]
    pub persist: Vec<String>,
    /// For payload schema failures at a top-level property of this state, a more specific
    /// message than the contract-wide `field_messages`. A key `FIELD.required` applies when
    /// the field is missing, `FIELD` to any other problem with it.
    #[serde(default)]
    pub field_messages: BTreeMap<String, String>,
    /// Semantic checks run after the schema, in order; the first failing one rejects.
    #[serde(default)]
    pub checks: Vec<RawCheck>,
    /// Actions the host runs when an engine state is entered.
    #[serde(default)]
    pub run: Vec<RawActionCall>,
    /// Ordered guarded transitions; the first whose guard holds is taken.
    #[serde(default)]
    pub transitions: Vec<RawTransition>,
    /// The transition taken when no guarded transition matches (it has no `when`).
    #[serde(default)]
    pub otherwise: Option<Box<RawTransition>>,
    /// For terminal states: how the session ended.
    #[serde(default)]
    pub outcome: Option<Outcome>,
    // Accepted and documented in the schema (an editor hint, help for the contract's
    // reader); the engine never reads it.
    #[allow(dead_code)]
    #[serde(default)]
    pub help: Option<String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCheck {
    /// A guard that must hold.
    pub require: String,
    /// The message shown when it does not.
    pub message: RawMessageRef,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTransition {
    /// The guard; required in `transitions`, forbidden in `otherwise`.
    #[serde(default)]
    pub when: Option<String>,
    pub to: String,
    #[serde(default)]
    pub actions: Vec<RawActionCall>,
    /// Session counters to increment by one.
    #[serde(default)]
    pub increment: Vec<String>,
    /// A task counter to increment for the task ids a list expression yields.
    #[serde(default)]
    pub increment_tasks: BTreeMap<String, String>,
    /// Counters to set back to zero (task counters: for every task).
    #[serde(default)]
    pub reset: Vec<String>,
    /// Session variables to set from guard-language expressions.
    #[serde(default)]
    pub set: BTreeMap<String, String>,
    #[serde(default)]
    pub message: Option<RawMessageRef>,
}

/// A message key, optionally with guard-language expressions for its placeholders.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum RawMessageRef {
    Key(String),
    WithArgs(RawMessageWithArgs),
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMessageWithArgs {
    pub key: String,
    /// Placeholder values as guard-language expressions.
    #[serde(default)]
    pub args: BTreeMap<String, String>,
}

/// An action: a name from the host registry, or a mapping with arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum RawActionCall {
    Name(String),
    Full(RawAction),
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAction {
    pub action: String,
    /// Arguments as guard-language expressions.
    #[serde(default, rename = "with")]
    pub args: BTreeMap<String, String>,
    /// Run the action only when this guard holds.
    #[serde(default)]
    pub when: Option<String>,
    /// The name the result is bound to in engine states (`result.NAME`); defaults to the
    /// last segment of the action name.
    #[serde(default)]
    pub bind: Option<String>,
    /// The message for each failure outcome the action can report.
    #[serde(default)]
    pub errors: BTreeMap<String, RawMessageRef>,
    /// Seconds the host gives the action before it stops it (an integer, or an int param
    /// as `params.NAME`). The host enforces it; the engine hands it over with the action.
    #[serde(default)]
    pub timeout: Option<Limit>,
    /// Perform the action again when it fails with one of these outcomes.
    #[serde(default)]
    pub retry: Option<RawRetry>,
}

/// A retry policy: up to `max` more attempts after a failure whose outcome is in `on`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRetry {
    /// Attempts after the first (an integer, or an int param as `params.NAME`).
    pub max: Limit,
    /// The failure outcomes worth another attempt (names from the action's registry entry).
    pub on: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub(crate) struct RawMessage {
    /// The error code put into responses (`payload_mismatch`); absent for successes.
    #[serde(default)]
    pub error: Option<String>,
    /// The agent must stop and ask the user.
    #[serde(default)]
    pub user_intervention: bool,
    /// The text per locale, with `{placeholder}`s.
    #[serde(flatten)]
    pub text: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMatrix {
    pub columns: Vec<RawMatrixColumn>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMatrixColumn {
    /// The JSON key of the column.
    pub key: String,
    /// The heading in the markdown table.
    pub label: String,
    /// The flags, as a user would type them (`--fast`, `-ni`).
    #[serde(default)]
    pub flags: String,
    /// The intent; defaults to the contract's default intent.
    #[serde(default)]
    pub intent: Option<String>,
}
