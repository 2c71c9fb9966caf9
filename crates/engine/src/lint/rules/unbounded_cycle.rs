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

use std::collections::{BTreeSet, HashMap};

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
    // Each work item is the edges inside one component still to examine. A component whose
    // bounded edges are removed is split again; the others are never looked at again, so
    // the work is linear in the edges for each level of nested loops.
    let mut work = vec![edges(contract)];
    let mut unbounded = Vec::new();
    while let Some(group) = work.pop() {
        for (component, inside) in components(group) {
            let reset: BTreeSet<CounterId> = inside
                .iter()
                .flat_map(|e| e.resets.iter().copied())
                .collect();
            let bounding: BTreeSet<CounterId> = inside
                .iter()
                .flat_map(|e| e.increments.iter().copied())
                .filter(|c| bounds(contract, *c) && !reset.contains(c))
                .collect();
            let registers = inside.iter().any(|e| e.registers_tasks);
            let before = inside.len();
            let rest: Vec<Edge> = inside
                .into_iter()
                .filter(|e| {
                    // An edge incrementing an unknown counter is taken as bounded:
                    // lowering reported the name, and the loop is not unbounded by intent.
                    !(e.counter_dropped
                        || e.increments.iter().any(|c| bounding.contains(c))
                        || (e.consumes_task && !registers))
                })
                .collect();
            if rest.len() < before {
                work.push(rest);
            } else {
                unbounded.push(component);
            }
        }
    }
    unbounded.sort_unstable();
    unbounded
        .into_iter()
        .map(|component| {
            let names: Vec<String> = component
                .iter()
                .map(|i| format!("`{}`", contract.states[*i].id))
                .collect();
            let first = &contract.states[component[0]];
            Diagnostic::new("unbounded-cycle", format!("the cycle through {} has no bound", names.join(", ")), Some(first.span))
                .with_help("increment a counter with a `limit` and an unconditional `on_limit` redirect on one of its transitions")
        })
        .collect()
}

/// The strongly connected components of the graph `edges` make that contain an edge
/// (a cycle), each as its states in index order and the edges inside it.
fn components(edges: Vec<Edge>) -> Vec<(Vec<usize>, Vec<Edge>)> {
    // Number the states these edges touch from 0, so the work is in the edges' size.
    let mut local: HashMap<usize, usize> = HashMap::new();
    let mut states = Vec::new();
    let mut id = |state: usize| {
        *local.entry(state).or_insert_with(|| {
            states.push(state);
            states.len() - 1
        })
    };
    let pairs: Vec<(usize, usize)> = edges.iter().map(|e| (id(e.from.0), id(e.to.0))).collect();
    let found = sccs(states.len(), &pairs);
    let mut component_of = vec![0; states.len()];
    for (c, members) in found.iter().enumerate() {
        for &m in members {
            component_of[m] = c;
        }
    }
    let mut inside: Vec<Vec<Edge>> = vec![Vec::new(); found.len()];
    for (edge, (a, b)) in edges.into_iter().zip(pairs) {
        if component_of[a] == component_of[b] {
            inside[component_of[a]].push(edge);
        }
    }
    found
        .into_iter()
        .zip(inside)
        .filter(|(_, inside)| !inside.is_empty())
        .map(|(members, inside)| {
            let mut members: Vec<usize> = members.into_iter().map(|m| states[m]).collect();
            members.sort_unstable();
            (members, inside)
        })
        .collect()
}
