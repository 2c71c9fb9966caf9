//! The resolved contract: names are indices, guards are parsed and type-checked, payload
//! schemas are compiled. Built only by `contract::lower`; never serialised.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

// The YAML's enumerations, used in the resolved model as they are written: other
// modules name them here, and only `contract` sees `raw`.
pub use super::raw::{CounterScope, Outcome, StateKind};
pub use super::raw::{FlagType, ValueType};
use super::registry::{BuiltinAction, Registry};
use crate::guard::Expr;
use crate::source::{Span, TextSpan};

/// Index of a state in [`Contract::states`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StateId(pub usize);

/// Index of a counter in [`Contract::counters`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CounterId(pub usize);

/// A text in every locale of the contract.
#[derive(Debug, Clone, Default)]
pub struct Localized {
    pub texts: BTreeMap<String, String>,
    /// Where each locale's text is written: the overlay's place for a text an overlay
    /// gave, even when it replaced one locale of a mapping the base file holds.
    pub spans: BTreeMap<String, TextSpan>,
}

impl Localized {
    /// The text for `locale`, falling back to the contract's default locale.
    pub fn get<'a>(&'a self, locale: &str, default_locale: &str) -> &'a str {
        self.texts
            .get(locale)
            .or_else(|| self.texts.get(default_locale))
            .map_or("", String::as_str)
    }
}

#[derive(Debug)]
pub struct Contract {
    pub name: String,
    pub host: String,
    pub registry: Registry,
    pub locales: Vec<String>,
    /// The tool that submits payloads (`call:`), if the contract names one.
    pub call: Option<String>,
    pub instruction_footer: Option<Localized>,
    pub initial: StateId,
    /// Whether `initial` names a state; when not, lowering reported it and `initial` is
    /// a placeholder, so reachability is not measured from it.
    pub initial_known: bool,
    pub flags: Vec<Flag>,
    pub conflicts: Vec<(usize, usize)>,
    pub intents: Vec<String>,
    pub default_intent: String,
    pub params: BTreeMap<String, (ValueType, Value)>,
    pub vars: BTreeMap<String, ValueType>,
    pub counters: Vec<Counter>,
    /// Host actions run once on every exit path (`finally:`).
    pub finally: Vec<ActionCall>,
    /// Where a cancelled session goes (`on_cancel:`).
    pub on_cancel: Option<CancelRule>,
    pub states: Vec<State>,
    pub state_index: HashMap<String, StateId>,
    pub messages: BTreeMap<String, Message>,
    /// Engine role (`payload_invalid`, ...) to message key.
    pub engine_messages: BTreeMap<String, String>,
    /// Where `engine_messages` is written (or the file start): the location of findings
    /// about messages the engine or host uses without a place in the file.
    pub engine_messages_span: Span,
    /// Top-level payload property to the message used when the schema rejects it.
    pub field_messages: BTreeMap<String, String>,
    pub matrix_columns: Vec<MatrixColumn>,
    /// Compiled instruction templates, named by state id.
    pub templates: minijinja::Environment<'static>,
}

impl Contract {
    pub fn state(&self, id: StateId) -> &State {
        &self.states[id.0]
    }

    pub fn state_id(&self, name: &str) -> Option<StateId> {
        self.state_index.get(name).copied()
    }

    pub fn counter(&self, id: CounterId) -> &Counter {
        &self.counters[id.0]
    }

    pub fn default_locale(&self) -> &str {
        self.locales.first().map_or("en", String::as_str)
    }

    pub fn flag(&self, name: &str) -> Option<&Flag> {
        self.flags.iter().find(|f| f.name == name)
    }

    /// States ordered by step, then by id: the order of diagrams and tables.
    pub fn states_in_flow_order(&self) -> Vec<StateId> {
        let mut ids: Vec<StateId> = (0..self.states.len()).map(StateId).collect();
        ids.sort_by_key(|id| {
            let s = self.state(*id);
            (
                s.step.unwrap_or(u32::MAX),
                s.kind == StateKind::Terminal,
                s.id.clone(),
            )
        });
        ids
    }
}

#[derive(Debug, Clone)]
pub struct Flag {
    pub name: String,
    pub kind: FlagType,
    pub long: String,
    pub short: Option<String>,
    pub aliases: Vec<String>,
    pub values: Vec<String>,
    pub abbreviations: BTreeMap<String, String>,
    pub default: Value,
    pub help: Localized,
}

#[derive(Debug, Clone)]
pub enum LimitValue {
    Fixed(u32),
    Param(String),
}

#[derive(Debug, Clone)]
pub struct Counter {
    pub name: String,
    pub scope: CounterScope,
    pub limit: LimitValue,
    pub on_limit: Vec<Redirect>,
    pub span: Span,
    /// Where the limit in force is written (an overlay's place when it changed it).
    pub limit_span: Span,
}

#[derive(Debug, Clone)]
pub struct Redirect {
    pub guard: Option<Guard>,
    pub to: StateId,
    pub message: Option<MessageRef>,
    pub actions: Vec<ActionCall>,
}

/// A parsed guard with its source, for error messages and diagrams. `expr` is `None` when
/// the text did not parse or check: such guards are reported by lint and never match.
#[derive(Debug, Clone)]
pub struct Guard {
    pub source: String,
    pub expr: Option<Expr>,
    pub span: Span,
}

#[derive(Debug)]
pub struct State {
    pub id: String,
    pub kind: StateKind,
    pub step: Option<u32>,
    pub phase: String,
    pub substep: Option<String>,
    pub label: String,
    pub has_instruction: bool,
    /// The instruction template's text and place per locale (compiled in `templates`).
    pub instruction: Option<Localized>,
    /// Where the instruction is written (the overlay's place when an overlay replaced
    /// it), for `code-intel show`.
    pub instruction_span: Option<Span>,
    /// Where the payload schema, the allowed tools and the required tools are written,
    /// when they are (for `code-intel show`).
    pub payload_span: Option<Span>,
    pub allowed_tools_span: Option<Span>,
    pub required_tools_span: Option<Span>,
    /// The payload schema as written (with shared definitions inlined) and its validator.
    pub payload_schema: Option<Value>,
    pub validator: Option<jsonschema::Validator>,
    /// The compact, human-readable description shown as `expected_payload`.
    pub expected_payload: Value,
    pub required_tools: Vec<String>,
    pub min_distinct_tools: u32,
    pub allowed_tools: Vec<String>,
    pub persist: Vec<String>,
    pub field_messages: BTreeMap<String, String>,
    pub checks: Vec<Check>,
    pub run: Vec<ActionCall>,
    pub transitions: Vec<Transition>,
    pub otherwise: Option<Transition>,
    /// The file has an `otherwise` lowering could not resolve (reported there); the
    /// state has a fallback as written, so it is not also a dead end.
    pub fallback_dropped: bool,
    pub outcome: Option<Outcome>,
    /// Where the state's key is written.
    pub span: Span,
}

impl State {
    /// The guarded transitions followed by the fallback.
    pub fn all_transitions(&self) -> impl Iterator<Item = &Transition> {
        self.transitions.iter().chain(self.otherwise.iter())
    }
}

#[derive(Debug, Clone)]
pub struct Check {
    pub guard: Guard,
    pub message: MessageRef,
}

#[derive(Debug, Clone)]
pub struct Transition {
    /// `None` for the `otherwise` fallback.
    pub guard: Option<Guard>,
    pub to: StateId,
    pub actions: Vec<ActionCall>,
    pub increment: Vec<CounterId>,
    pub increment_tasks: Vec<(CounterId, Guard)>,
    pub reset: Vec<CounterId>,
    pub set: Vec<(String, Guard)>,
    pub message: Option<MessageRef>,
    pub span: Span,
    /// The file increments a counter lowering could not resolve (reported there): the
    /// author meant a bound, so whole-flow rules do not call the loop unbounded too.
    pub counter_dropped: bool,
}

/// Who carries out an action call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Performer {
    /// The engine applies it to the session state as part of the pure step.
    Engine(BuiltinAction),
    /// The host performs it: after the step for a transition's actions (a failure keeps
    /// the old instance), before the step for an engine state's `run` (its result is the
    /// step's input).
    Host,
}

#[derive(Debug, Clone)]
pub struct ActionCall {
    pub name: String,
    pub performer: Performer,
    pub args: Vec<(String, Guard)>,
    pub when: Option<Guard>,
    pub bind: String,
    pub errors: BTreeMap<String, MessageRef>,
    /// Seconds the host gives the action.
    pub timeout: Option<LimitValue>,
    pub retry: Option<RetryRule>,
    pub span: Span,
}

/// Up to `max` more attempts after a failure whose outcome is in `on`.
#[derive(Debug, Clone)]
pub struct RetryRule {
    pub max: LimitValue,
    pub on: Vec<String>,
}

/// Where a cancelled session goes.
#[derive(Debug, Clone)]
pub struct CancelRule {
    pub to: StateId,
    pub message: Option<MessageRef>,
    pub span: Span,
}

#[derive(Debug, Clone)]
pub struct MessageRef {
    pub key: String,
    pub args: Vec<(String, Guard)>,
    pub span: Span,
}

#[derive(Debug, Clone)]
pub struct Message {
    pub key: String,
    pub error: Option<String>,
    pub user_intervention: bool,
    pub text: Localized,
    pub span: Span,
}

#[derive(Debug, Clone)]
pub struct MatrixColumn {
    pub key: String,
    pub label: String,
    pub flags: String,
    pub intent: Option<String>,
    pub span: Span,
}
