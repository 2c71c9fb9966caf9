//! The effective contract, as `code-intel show` prints it: after overlays, under a set of
//! flags, an intent and a locale, per state the instruction as rendered, the tools, the
//! payload expected, the transitions that can fire, and per counter the limit in force —
//! each value with the place it comes from (the built-in file or an overlay's line).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::reach::{self, decide, static_roots};
use crate::contract::Contract;
use crate::contract::model::{LimitValue, StateKind, Transition};
use crate::machine::response::instruction;
use crate::machine::{Instance, StartError};
use crate::source::Span;

/// The contract as a session under `flags`, `intent` and `locale` sees it.
#[derive(Debug, Clone)]
pub struct Effective {
    pub intent: String,
    pub locale: String,
    pub flags: Map<String, Value>,
    pub states: Vec<EffectiveState>,
    pub counters: Vec<EffectiveCounter>,
}

#[derive(Debug, Clone)]
pub struct EffectiveState {
    pub id: String,
    pub kind: StateKind,
    pub step: Option<u32>,
    /// Whether some run under these flags and intent reaches the state.
    pub runs: bool,
    /// The instruction rendered for a session that has just entered the state (no
    /// payloads or tasks yet); `None` when the state has none.
    pub instruction: Option<String>,
    pub instruction_origin: Option<Span>,
    pub allowed_tools: Vec<String>,
    pub allowed_tools_origin: Option<Span>,
    pub required_tools: Vec<String>,
    pub required_tools_origin: Option<Span>,
    pub min_distinct_tools: u32,
    pub expected_payload: Value,
    pub payload_origin: Option<Span>,
    pub transitions: Vec<EffectiveTransition>,
    pub origin: Span,
}

#[derive(Debug, Clone)]
pub struct EffectiveTransition {
    /// The guard as written; `None` for `otherwise`.
    pub guard: Option<String>,
    pub to: String,
    /// `Some(false)` when the flags, intent and params already rule it out, `Some(true)`
    /// when they already decide it fires, `None` when it depends on the session.
    pub decided: Option<bool>,
    pub origin: Span,
}

#[derive(Debug, Clone)]
pub struct EffectiveCounter {
    pub name: String,
    /// The limit in force: a number, or a param's name and its value.
    pub limit: String,
    pub limit_origin: Span,
    /// `STATE` targets of the limit's redirects, in order.
    pub redirects: Vec<String>,
}

/// The effective contract under already parsed `flags` (see `contract::flags::parse`).
pub fn compute(
    contract: &Contract,
    flags: &Map<String, Value>,
    intent: Option<&str>,
    locale: Option<&str>,
) -> Result<Effective, StartError> {
    let instance = Instance::start(contract, flags.clone(), intent, locale, &Map::new())?;
    let roots = static_roots(contract, flags, &instance.intent);
    let reachable: BTreeSet<_> = reach::reachable(contract, flags, &instance.intent);
    let transition = |t: &Transition| EffectiveTransition {
        guard: t.guard.as_ref().map(|g| g.source.clone()),
        to: contract.state(t.to).id.clone(),
        decided: match &t.guard {
            Some(g) => decide(g, &roots),
            None => None,
        },
        origin: t.span,
    };
    let states = contract
        .states
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut entered = instance.clone();
            entered.state = s.id.clone();
            EffectiveState {
                id: s.id.clone(),
                kind: s.kind,
                step: s.step,
                runs: reachable.contains(&crate::contract::model::StateId(i)),
                instruction: s.has_instruction.then(|| instruction(contract, &entered)),
                instruction_origin: s.instruction_span,
                allowed_tools: s.allowed_tools.clone(),
                allowed_tools_origin: s.allowed_tools_span,
                required_tools: s.required_tools.clone(),
                required_tools_origin: s.required_tools_span,
                min_distinct_tools: s.min_distinct_tools,
                expected_payload: s.expected_payload.clone(),
                payload_origin: s.payload_span,
                transitions: s
                    .transitions
                    .iter()
                    .chain(s.otherwise.iter())
                    .map(transition)
                    .collect(),
                origin: s.span,
            }
        })
        .collect();
    let counters = contract
        .counters
        .iter()
        .map(|c| EffectiveCounter {
            name: c.name.clone(),
            limit: match &c.limit {
                LimitValue::Fixed(n) => n.to_string(),
                LimitValue::Param(p) => {
                    let value = contract
                        .params
                        .get(p)
                        .map_or(Value::Null, |(_, v)| v.clone());
                    format!("params.{p} = {value}")
                }
            },
            limit_origin: c.limit_span,
            redirects: c
                .on_limit
                .iter()
                .map(|r| contract.state(r.to).id.clone())
                .collect(),
        })
        .collect();
    Ok(Effective {
        intent: instance.intent.clone(),
        locale: instance.locale.clone(),
        flags: flags.clone(),
        states,
        counters,
    })
}
