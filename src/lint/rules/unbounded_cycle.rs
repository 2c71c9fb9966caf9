//! `unbounded-cycle`
//!
//! ## What it does
//! Flags a cycle of transitions that nothing bounds. A cycle is bounded when it increments
//! a counter that has a limit with an unconditional `on_limit` redirect and that no edge of
//! the cycle resets, or when each turn consumes a pending task (an action whose registry
//! entry says so, like `tasks.complete`) and nothing in the cycle refills them
//! (`tasks.register`).
//! Bounded edges are removed and the check repeats on what remains, so nested loops
//! each need their own bound.
//!
//! ## Why is this bad?
//! An agent that loses its context cannot notice it is looping; only the server can stop
//! it. The original's verify → plan loop was unbounded under `--no-intervention` and
//! `--quick`.
//!
//! ## Example
//! ```yaml
//! VERIFY:
//!   transitions:
//!     - {when: "!payload.passed", to: PLAN}   # no counter: may repeat forever
//! ```
//! Use instead: `increment: [verify_failures]` with `limit` and `on_limit` on the counter.

use std::collections::BTreeSet;

use crate::analysis::graph::{Edge, edges, sccs};
use crate::contract::Contract;
use crate::contract::model::CounterId;
use crate::diagnostic::Diagnostic;

/// Whether reaching `counter`'s limit always leaves the loop.
fn bounds(contract: &Contract, counter: CounterId) -> bool {
    contract
        .counter(counter)
        .on_limit
        .iter()
        .any(|r| r.guard.is_none())
}

pub(crate) fn check(contract: &Contract) -> Vec<Diagnostic> {
    let mut remaining: Vec<Edge> = edges(contract);
    let n = contract.states.len();
    let mut out = Vec::new();
    loop {
        let pairs: Vec<(usize, usize)> = remaining.iter().map(|e| (e.from.0, e.to.0)).collect();
        let mut removed_any = false;
        let mut unbounded = Vec::new();
        for component in sccs(n, &pairs) {
            let members: BTreeSet<usize> = component.iter().copied().collect();
            let inside = |e: &Edge| members.contains(&e.from.0) && members.contains(&e.to.0);
            if !remaining.iter().any(inside) {
                continue;
            }
            let reset: BTreeSet<CounterId> = remaining
                .iter()
                .filter(|e| inside(e))
                .flat_map(|e| e.resets.iter().copied())
                .collect();
            let bounding: BTreeSet<CounterId> = remaining
                .iter()
                .filter(|e| inside(e))
                .flat_map(|e| e.increments.iter().copied())
                .filter(|c| bounds(contract, *c) && !reset.contains(c))
                .collect();
            let registers = remaining.iter().any(|e| inside(e) && e.registers_tasks);
            let before = remaining.len();
            remaining.retain(|e| {
                // An edge incrementing an unknown counter is taken as bounded: lowering
                // reported the name, and the loop is not unbounded by intent.
                !(inside(e)
                    && (e.counter_dropped
                        || e.increments.iter().any(|c| bounding.contains(c))
                        || (e.consumes_task && !registers)))
            });
            if remaining.len() < before {
                removed_any = true;
            } else {
                unbounded.push(component);
            }
        }
        if !removed_any {
            for component in unbounded {
                let names: Vec<&str> = component
                    .iter()
                    .map(|i| contract.states[*i].id.as_str())
                    .collect();
                let first = &contract.states[component[0]];
                out.push(
                    Diagnostic::new("unbounded-cycle", format!("the cycle through {} has no bound", names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")), Some(first.span))
                        .with_help("increment a counter with a `limit` and an unconditional `on_limit` redirect on one of its transitions"),
                );
            }
            return out;
        }
    }
}
