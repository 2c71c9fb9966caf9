//! Which states can run under a given flag set and intent: an abstract interpretation of
//! the guards in which flags, intent and params are known and everything an agent or host
//! supplies later (payloads, counters, tasks, facts, results) is unknown.
//!
//! A state "runs" when some sequence of valid payloads reaches it. Unknown guards may go
//! either way, so the answer over-approximates only where guards combine unknown data in
//! ways three-valued logic cannot settle.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::contract::Contract;
use crate::contract::model::{Guard, StateId, Transition};
use crate::guard::ast::{BinaryOp, Expr, ExprKind};
use crate::guard::eval::{Context, eval_condition};

/// The roots whose values are unknown before a session runs.
pub(crate) const UNKNOWN_ROOTS: &[&str] = &[
    "state", "payload", "counters", "tasks", "facts", "vars", "result",
];

/// The data a guard can read statically: flags, intent and params.
pub(crate) fn static_roots(
    contract: &Contract,
    flags: &Map<String, Value>,
    intent: &str,
) -> Map<String, Value> {
    let mut roots = Map::new();
    roots.insert("flags".into(), Value::Object(flags.clone()));
    roots.insert("intent".into(), Value::String(intent.to_string()));
    roots.insert(
        "params".into(),
        Value::Object(
            contract
                .params
                .iter()
                .map(|(k, (_, v))| (k.clone(), v.clone()))
                .collect(),
        ),
    );
    roots
}

/// `Some(true)`/`Some(false)` when the guard is decided by static data, else `None`.
/// A guard that failed to parse or check is undecided.
pub(crate) fn decide(guard: &Guard, roots: &Map<String, Value>) -> Option<bool> {
    let expr = guard.expr.as_ref()?;
    eval_condition(
        expr,
        Context {
            roots,
            unknown: UNKNOWN_ROOTS,
        },
    )
    .ok()
    .flatten()
}

/// The transitions of a state that can fire under `roots`, in order.
///
/// Guards of one state often test the same unknown fact (`payload.passed && flags.quick`,
/// then `payload.passed`). Treating each occurrence as independently unknown would let
/// the second fire even when the first always catches it, so every unknown boolean leaf
/// ("atom") is a shared variable: a transition is possible when some assignment of the
/// atoms makes it the first match.
pub(crate) fn possible_transitions<'c>(
    contract: &'c Contract,
    state: StateId,
    roots: &Map<String, Value>,
) -> Vec<&'c Transition> {
    let s = contract.state(state);
    let ctx = Context {
        roots,
        unknown: UNKNOWN_ROOTS,
    };
    let mut atoms: Vec<String> = Vec::new();
    for t in &s.transitions {
        if let Some(expr) = t.guard.as_ref().and_then(|g| g.expr.as_ref()) {
            collect_atoms(expr, ctx, &mut atoms);
        }
        if atoms.len() > MAX_ATOMS {
            break;
        }
    }
    // Every assignment of the atoms is tried on every transition, so the work is bounded
    // too; past it, treating guards independently over-approximates, as analysis may.
    if atoms.len() > MAX_ATOMS || s.transitions.len() << atoms.len() > MAX_EVALUATIONS {
        return possible_transitions_independent(contract, state, roots);
    }
    let mut possible = vec![false; s.transitions.len() + 1];
    for bits in 0u32..(1 << atoms.len()) {
        let assignment = |key: &str| {
            atoms
                .iter()
                .position(|a| a == key)
                .map(|i| bits & (1 << i) != 0)
        };
        let mut fired = None;
        for (i, t) in s.transitions.iter().enumerate() {
            let value = t
                .guard
                .as_ref()
                .and_then(|g| g.expr.as_ref())
                .map_or(Some(false), |e| bool_eval(e, ctx, &assignment));
            match value {
                Some(true) => {
                    fired = Some(i);
                    break;
                }
                Some(false) => {}
                // Undecidable even with atoms fixed (a failed evaluation): either way.
                None => possible[i] = true,
            }
        }
        possible[fired.unwrap_or(s.transitions.len())] = true;
    }
    let mut out: Vec<&Transition> = s
        .transitions
        .iter()
        .enumerate()
        .filter(|(i, _)| possible[*i])
        .map(|(_, t)| t)
        .collect();
    if possible[s.transitions.len()] {
        out.extend(s.otherwise.iter());
    }
    out
}

/// Above this many distinct unknown atoms in one state, atoms are treated independently.
const MAX_ATOMS: usize = 12;
/// Above this many transitions times assignments of the atoms, likewise.
const MAX_EVALUATIONS: usize = 1 << 20;

fn possible_transitions_independent<'c>(
    contract: &'c Contract,
    state: StateId,
    roots: &Map<String, Value>,
) -> Vec<&'c Transition> {
    let s = contract.state(state);
    let mut out = Vec::new();
    for t in &s.transitions {
        match t.guard.as_ref().map_or(Some(true), |g| decide(g, roots)) {
            Some(false) => {}
            Some(true) => {
                out.push(t);
                return out;
            }
            None => out.push(t),
        }
    }
    out.extend(s.otherwise.iter());
    out
}

fn atom_key(expr: &Expr) -> String {
    format!("{:?}", expr.kind)
}

/// The maximal non-boolean-operator subexpressions whose value is unknown.
fn collect_atoms(expr: &Expr, ctx: Context<'_>, out: &mut Vec<String>) {
    match &expr.kind {
        ExprKind::Not(inner) => collect_atoms(inner, ctx, out),
        ExprKind::Binary(BinaryOp::And | BinaryOp::Or, l, r) => {
            collect_atoms(l, ctx, out);
            collect_atoms(r, ctx, out);
        }
        // Past the limit the caller gives up on atoms; stop collecting.
        _ if out.len() > MAX_ATOMS => {}
        _ => {
            if eval_condition(expr, ctx).ok().flatten().is_none() {
                let key = atom_key(expr);
                if !out.contains(&key) {
                    out.push(key);
                }
            }
        }
    }
}

/// Evaluates the boolean structure of `expr`, taking unknown atoms from `assignment`.
fn bool_eval(
    expr: &Expr,
    ctx: Context<'_>,
    assignment: &dyn Fn(&str) -> Option<bool>,
) -> Option<bool> {
    match &expr.kind {
        ExprKind::Not(inner) => bool_eval(inner, ctx, assignment).map(|b| !b),
        ExprKind::Binary(BinaryOp::And, l, r) => {
            Some(bool_eval(l, ctx, assignment)? && bool_eval(r, ctx, assignment)?)
        }
        ExprKind::Binary(BinaryOp::Or, l, r) => {
            Some(bool_eval(l, ctx, assignment)? || bool_eval(r, ctx, assignment)?)
        }
        _ => match eval_condition(expr, ctx) {
            Ok(Some(b)) => Some(b),
            Ok(None) => assignment(&atom_key(expr)),
            Err(_) => None,
        },
    }
}

/// The states a transition can lead to: its target and the redirects of counter limits
/// it may reach.
pub(crate) fn targets(
    contract: &Contract,
    t: &Transition,
    roots: &Map<String, Value>,
) -> Vec<StateId> {
    let mut out = vec![t.to];
    let counters = t
        .increment
        .iter()
        .copied()
        .chain(t.increment_tasks.iter().map(|(c, _)| *c));
    for c in counters {
        for r in &contract.counter(c).on_limit {
            let possible = r.guard.as_ref().map_or(Some(true), |g| decide(g, roots));
            if possible != Some(false) {
                out.push(r.to);
            }
            if possible == Some(true) {
                break;
            }
        }
    }
    out
}

/// Every state reachable from the initial state under `flags` and `intent`.
pub fn reachable(
    contract: &Contract,
    flags: &Map<String, Value>,
    intent: &str,
) -> BTreeSet<StateId> {
    let roots = static_roots(contract, flags, intent);
    let mut seen = BTreeSet::new();
    let mut work = vec![contract.initial];
    while let Some(s) = work.pop() {
        if !seen.insert(s) {
            continue;
        }
        for t in possible_transitions(contract, s, &roots) {
            work.extend(targets(contract, t, &roots));
        }
    }
    seen
}
