//! `unreachable-state`
//!
//! ## What it does
//! Flags a state that no path from the initial state reaches, counting every guarded
//! transition, fallback and counter-limit redirect as possible.
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

use std::collections::BTreeSet;

use crate::analysis::graph::edges;
use crate::contract::Contract;
use crate::contract::model::StateId;
use crate::diagnostic::Diagnostic;

pub(crate) fn check(contract: &Contract) -> Vec<Diagnostic> {
    // An unknown `initial` is already an error; there is no start to measure from.
    if !contract.initial_known {
        return Vec::new();
    }
    let all = edges(contract);
    let mut seen = BTreeSet::new();
    let mut work = vec![contract.initial];
    while let Some(s) = work.pop() {
        if seen.insert(s) {
            work.extend(all.iter().filter(|e| e.from == s).map(|e| e.to));
        }
    }
    (0..contract.states.len())
        .map(StateId)
        .filter(|id| !seen.contains(id))
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
