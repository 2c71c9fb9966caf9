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

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::analysis::reach::{decide, static_roots};
use crate::contract::Contract;
use crate::contract::model::Guard;
use crate::contract::raw::FlagType;
use crate::diagnostic::Diagnostic;
use crate::guard::ast::{Expr, ExprKind};

/// Every combination of values of the flags (and the intent) a guard reads; other flags
/// cannot change its value, so they stay at their defaults. Enumerating only what is read
/// keeps the rule cheap: guards read a handful of flags at most.
fn flag_sets(contract: &Contract, guard: &Expr) -> Vec<(Map<String, Value>, String)> {
    let mut read_flags = BTreeSet::new();
    let mut reads_intent = false;
    visit(guard, &mut |segments| match segments {
        [root, name, ..] if root == "flags" => {
            read_flags.insert(name.clone());
        }
        [root, ..] if root == "intent" => reads_intent = true,
        _ => {}
    });
    let mut sets: Vec<Map<String, Value>> = vec![crate::contract::flags::defaults(contract)];
    for f in contract
        .flags
        .iter()
        .filter(|f| read_flags.contains(&f.name))
    {
        let values: Vec<Value> = match f.kind {
            FlagType::Bool => vec![Value::Bool(false), Value::Bool(true)],
            FlagType::Enum => f.values.iter().map(|v| Value::String(v.clone())).collect(),
        };
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
    let intents: Vec<String> = if reads_intent {
        contract.intents.clone()
    } else {
        vec![contract.default_intent.clone()]
    };
    sets.into_iter()
        .flat_map(|s| intents.iter().map(move |i| (s.clone(), i.clone())))
        .collect()
}

/// Calls `f` with the segments of every root path in `expr`.
fn visit(expr: &Expr, f: &mut dyn FnMut(&[String])) {
    match &expr.kind {
        ExprKind::Path(segments) => f(segments),
        ExprKind::Literal(_) | ExprKind::ItemPath(_) => {}
        ExprKind::List(items) | ExprKind::Call(_, items) => items.iter().for_each(|e| visit(e, f)),
        ExprKind::Not(inner) => visit(inner, f),
        ExprKind::Binary(_, l, r) => {
            visit(l, f);
            visit(r, f);
        }
    }
}

fn always_true(contract: &Contract, guard: &Guard) -> bool {
    let Some(expr) = &guard.expr else {
        return false;
    };
    flag_sets(contract, expr)
        .iter()
        .all(|(flags, intent)| decide(guard, &static_roots(contract, flags, intent)) == Some(true))
}

fn normalized(source: &str) -> String {
    source.split_whitespace().collect()
}

pub(crate) fn check(contract: &Contract) -> Vec<Diagnostic> {
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
            if always_true(contract, guard) {
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
