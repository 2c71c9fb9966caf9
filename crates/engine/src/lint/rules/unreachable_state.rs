//! `unreachable-state`
//!
//! ## What it does
//! Flags a state that no path from the initial state reaches, counting every guarded
//! transition, fallback and counter-limit redirect as possible, and the `on_cancel`
//! path from any state that is not terminal.
//!
//! ## Why is this bad?
//! An unreachable state is dead contract: its instruction, schema and messages are never
//! used, and it usually means a transition was mistyped or removed.
//!
//! ## Example
//! ```yaml
//! states:
//!   A: {kind: engine, otherwise: {to: DONE}}
//!   ORPHAN: {kind: engine, otherwise: {to: DONE}}   # nothing goes here
//!   DONE: {kind: terminal, outcome: success}
//! ```

use crate::analysis::graph::edges;
use crate::contract::Contract;
use crate::contract::model::{StateId, StateKind};
use crate::diagnostic::Diagnostic;

pub(crate) fn check(contract: &Contract) -> Vec<Diagnostic> {
    // An unknown `initial` is already an error; there is no start to measure from.
    if !contract.initial_known {
        return Vec::new();
    }
    let n = contract.states.len();
    let mut successors = vec![Vec::new(); n];
    for e in edges(contract) {
        if let Some(next) = successors.get_mut(e.from.0) {
            next.push(e.to.0);
        }
    }
    let mut seen = vec![false; n];
    let mut work = vec![contract.initial.0];
    // The cancel path leaves any state that is not terminal, so its target is reachable
    // as soon as such a state is.
    let cancel_to = contract.on_cancel.as_ref().map(|c| c.to.0);
    let mut cancel_reached = false;
    while let Some(s) = work.pop() {
        if let Some(seen) = seen.get_mut(s)
            && !*seen
        {
            *seen = true;
            work.extend(successors[s].iter().copied());
            if !cancel_reached && contract.states[s].kind != StateKind::Terminal {
                cancel_reached = true;
                work.extend(cancel_to);
            }
        }
    }
    (0..n)
        .filter(|i| !seen[*i])
        .map(StateId)
        .map(|id| {
            let s = contract.state(id);
            Diagnostic::new(
                "unreachable-state",
                format!(
                    "state `{}` is unreachable from `{}`",
                    s.id,
                    contract.state(contract.initial).id
                ),
                Some(s.span),
            )
            .with_help("add a transition to it, or remove it")
        })
        .collect()
}
