//! `shadowed-transition`
//!
//! ## What it does
//! Flags a transition that can never fire because an earlier transition of the same state
//! always matches: its guard holds under every flag set and intent whatever the payload,
//! or it repeats an earlier guard word for word. A shadowed `otherwise` is flagged too.
//!
//! ## Why is this bad?
//! Transitions are tried in order and the first match wins, so a shadowed transition is
//! dead code that reads as if it mattered.
//!
//! ## Example
//! ```yaml
//! transitions:
//!   - {when: "flags.fast || !flags.fast", to: A}
//!   - {when: payload.ok, to: B}    # never taken
//! ```

use serde_json::{Map, Value};

use crate::analysis::reach::{decide, static_roots};
use crate::contract::Contract;
use crate::contract::model::Guard;
use crate::contract::raw::FlagType;
use crate::diagnostic::Diagnostic;

/// Above this many flag combinations the rule only checks the defaults.
const MAX_COMBINATIONS: usize = 4096;

/// Every combination of flag values and intents, or just the defaults when there are too many.
fn flag_sets(contract: &Contract) -> Vec<(Map<String, Value>, String)> {
    let mut sets: Vec<Map<String, Value>> = vec![Map::new()];
    let mut total = contract.intents.len().max(1);
    for f in &contract.flags {
        let values: Vec<Value> = match f.kind {
            FlagType::Bool => vec![Value::Bool(false), Value::Bool(true)],
            FlagType::Enum => f.values.iter().map(|v| Value::String(v.clone())).collect(),
        };
        total = total.saturating_mul(values.len().max(1));
        if total > MAX_COMBINATIONS {
            let defaults = crate::machine::flags::defaults(contract);
            return vec![(defaults, contract.default_intent.clone())];
        }
        sets = sets
            .into_iter()
            .flat_map(|s| {
                values.iter().map(move |v| {
                    let mut s = s.clone();
                    s.insert(f.name.clone(), v.clone());
                    s
                })
            })
            .collect();
    }
    sets.into_iter()
        .flat_map(|s| contract.intents.iter().map(move |i| (s.clone(), i.clone())))
        .collect()
}

fn always_true(contract: &Contract, guard: &Guard, sets: &[(Map<String, Value>, String)]) -> bool {
    guard.expr.is_some()
        && sets.iter().all(|(flags, intent)| {
            decide(guard, &static_roots(contract, flags, intent)) == Some(true)
        })
}

fn normalized(source: &str) -> String {
    source.split_whitespace().collect()
}

pub fn check(contract: &Contract) -> Vec<Diagnostic> {
    let sets = flag_sets(contract);
    let mut out = Vec::new();
    for state in &contract.states {
        let mut shadowing: Option<&Guard> = None;
        for (i, t) in state.transitions.iter().enumerate() {
            let Some(guard) = &t.guard else { continue };
            if let Some(earlier) = shadowing {
                out.push(shadowed(guard.span, &earlier.source, "always matches"));
                continue;
            }
            let duplicate = state.transitions[..i]
                .iter()
                .filter_map(|e| e.guard.as_ref())
                .find(|e| e.expr.is_some() && normalized(&e.source) == normalized(&guard.source));
            if let Some(earlier) = duplicate {
                out.push(shadowed(guard.span, &earlier.source, "has the same guard"));
                continue;
            }
            if always_true(contract, guard, &sets) {
                shadowing = Some(guard);
            }
        }
        if let (Some(earlier), Some(fallback)) = (shadowing, &state.otherwise) {
            out.push(shadowed(fallback.span, &earlier.source, "always matches"));
        }
    }
    out
}

fn shadowed(span: crate::source::Span, earlier: &str, why: &str) -> Diagnostic {
    Diagnostic::new(
        "shadowed-transition",
        format!("this transition never fires: the earlier guard `{earlier}` {why}"),
        Some(span),
    )
    .with_help("reorder the transitions, narrow the earlier guard, or remove this one")
}
