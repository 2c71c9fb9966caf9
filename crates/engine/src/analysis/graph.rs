//! The transition graph of a contract, including the redirects counter limits can take.

use crate::contract::Contract;
use crate::contract::model::{CounterId, StateId, Transition};
use crate::contract::registry::TaskEffect;

#[derive(Debug, Clone)]
pub(crate) struct Edge {
    pub from: StateId,
    pub to: StateId,
    /// Counters (session and task) the edge increments.
    pub increments: Vec<CounterId>,
    pub resets: Vec<CounterId>,
    /// The edge completes a task: a loop through it is bounded by the number of tasks.
    pub consumes_task: bool,
    /// The edge registers a new task list, which refills what `consumes_task` used up.
    pub registers_tasks: bool,
    /// The transition increments a counter that lowering could not resolve.
    pub counter_dropped: bool,
}

/// Whether one of the transition's actions has this effect on the pending tasks.
fn has_task_effect(contract: &Contract, t: &Transition, effect: TaskEffect) -> bool {
    t.actions.iter().any(|a| {
        contract
            .registry
            .action(&a.name)
            .is_some_and(|spec| spec.tasks == effect)
    })
}

/// Every edge of the graph, in state order.
pub(crate) fn edges(contract: &Contract) -> Vec<Edge> {
    let mut out = Vec::new();
    for (i, state) in contract.states.iter().enumerate() {
        let from = StateId(i);
        for t in state.transitions.iter().chain(&state.otherwise) {
            let increments: Vec<CounterId> = t
                .increment
                .iter()
                .copied()
                .chain(t.increment_tasks.iter().map(|(c, _)| *c))
                .collect();
            let edge = Edge {
                from,
                to: t.to,
                increments: increments.clone(),
                resets: t.reset.clone(),
                consumes_task: has_task_effect(contract, t, TaskEffect::Consumes),
                registers_tasks: has_task_effect(contract, t, TaskEffect::Refills),
                counter_dropped: t.counter_dropped,
            };
            out.push(edge);
            for counter in &increments {
                for redirect in &contract.counter(*counter).on_limit {
                    out.push(Edge {
                        from,
                        to: redirect.to,
                        increments: increments.clone(),
                        resets: t.reset.clone(),
                        consumes_task: false,
                        registers_tasks: has_task_effect(contract, t, TaskEffect::Refills),
                        counter_dropped: t.counter_dropped,
                    });
                }
            }
        }
    }
    out
}

/// Strongly connected components (Tarjan), each as a list of states.
pub(crate) fn sccs(n: usize, edges: &[(usize, usize)]) -> Vec<Vec<usize>> {
    let mut adjacency = vec![Vec::new(); n];
    for &(a, b) in edges {
        adjacency[a].push(b);
    }
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut next = 0;
    let mut out = Vec::new();
    // Iterative Tarjan: (node, next child position).
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut child)) = work.last_mut() {
            if *child < adjacency[v].len() {
                let w = adjacency[v][*child];
                *child += 1;
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
            } else {
                work.pop();
                if let Some(&(parent, _)) = work.last() {
                    low[parent] = low[parent].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut component = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        component.push(w);
                        if w == v {
                            break;
                        }
                    }
                    component.sort_unstable();
                    out.push(component);
                }
            }
        }
    }
    out
}
