//! The flow as a diagram (mermaid flowchart or graphviz dot), whole or as it is under a
//! flag set. Labels carry the guard text so the diagram explains each branch.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::reach::{possible_transitions, reachable, static_roots};
use crate::contract::Contract;
use crate::contract::model::{StateId, StateKind, Transition};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Mermaid,
    Dot,
}

struct DiagramEdge {
    from: StateId,
    to: StateId,
    label: String,
    limit: bool,
}

/// Renders the diagram; with `flags`, only what can run under them.
pub fn render(
    contract: &Contract,
    flags: Option<&Map<String, Value>>,
    intent: &str,
    format: Format,
) -> String {
    let (states, edges) = collect(contract, flags, intent);
    match format {
        Format::Mermaid => mermaid(contract, &states, &edges),
        Format::Dot => dot(contract, &states, &edges),
    }
}

fn transition_label(t: &Transition) -> String {
    let mut parts = Vec::new();
    if let Some(g) = &t.guard {
        parts.push(g.source.clone());
    } else {
        parts.push("otherwise".to_string());
    }
    let actions: Vec<&str> = t.actions.iter().map(|a| a.name.as_str()).collect();
    if !actions.is_empty() {
        parts.push(format!("do {}", actions.join(", ")));
    }
    parts.join(" / ")
}

fn collect(
    contract: &Contract,
    flags: Option<&Map<String, Value>>,
    intent: &str,
) -> (Vec<StateId>, Vec<DiagramEdge>) {
    let reach: BTreeSet<StateId> = match flags {
        Some(f) => reachable(contract, f, intent),
        None => (0..contract.states.len()).map(StateId).collect(),
    };
    let roots = flags.map(|f| static_roots(contract, f, intent));
    let mut edges = Vec::new();
    for id in contract.states_in_flow_order() {
        if !reach.contains(&id) {
            continue;
        }
        let state = contract.state(id);
        let transitions: Vec<&Transition> = match &roots {
            Some(r) => possible_transitions(contract, id, r),
            None => state.all_transitions().collect(),
        };
        for t in transitions {
            edges.push(DiagramEdge {
                from: id,
                to: t.to,
                label: transition_label(t),
                limit: false,
            });
            for c in t
                .increment
                .iter()
                .copied()
                .chain(t.increment_tasks.iter().map(|(c, _)| *c))
            {
                let counter = contract.counter(c);
                for r in &counter.on_limit {
                    if let Some(rt) = &roots
                        && r.guard.as_ref().and_then(|g| super::reach::decide(g, rt)) == Some(false)
                    {
                        continue;
                    }
                    let mut label = format!("{} reaches limit", counter.name);
                    if let Some(g) = &r.guard {
                        let _ = write!(label, " && {}", g.source);
                    }
                    edges.push(DiagramEdge {
                        from: id,
                        to: r.to,
                        label,
                        limit: true,
                    });
                }
            }
        }
    }
    let states = contract
        .states_in_flow_order()
        .into_iter()
        .filter(|s| reach.contains(s))
        .collect();
    (states, edges)
}

fn node_label(contract: &Contract, id: StateId) -> String {
    let s = contract.state(id);
    let mut label = match s.step {
        Some(step) => format!("{step}. {}", s.phase),
        None => s.phase.clone(),
    };
    if let Some(sub) = &s.substep {
        let _ = write!(label, " ({sub})");
    }
    if s.phase != s.id {
        let _ = write!(label, " [{}]", s.id);
    }
    label
}

/// Mermaid entity escapes, so guard text cannot break the diagram syntax.
fn mermaid_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '|' => out.push_str("#124;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '&' => out.push_str("#amp;"),
            '#' => out.push_str("#35;"),
            '[' => out.push_str("#91;"),
            ']' => out.push_str("#93;"),
            '{' => out.push_str("#123;"),
            '}' => out.push_str("#125;"),
            _ => out.push(c),
        }
    }
    out
}

fn node_id(contract: &Contract, id: StateId) -> String {
    let raw: String = contract
        .state(id)
        .id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("s_{raw}")
}

fn mermaid(contract: &Contract, states: &[StateId], edges: &[DiagramEdge]) -> String {
    let mut out = String::from("flowchart TD\n");
    for id in states {
        let s = contract.state(*id);
        let label = mermaid_escape(&node_label(contract, *id));
        let shape = match s.kind {
            StateKind::Terminal => format!("([\"{label}\"])"),
            StateKind::Engine => format!("[[\"{label}\"]]"),
            StateKind::External => format!("[\"{label}\"]"),
        };
        let _ = writeln!(out, "    {}{shape}", node_id(contract, *id));
    }
    let _ = writeln!(
        out,
        "    start((start)) --> {}",
        node_id(contract, contract.initial)
    );
    for e in edges {
        let arrow = if e.limit { "-.->" } else { "-->" };
        let _ = writeln!(
            out,
            "    {} {arrow}|\"{}\"| {}",
            node_id(contract, e.from),
            mermaid_escape(&e.label),
            node_id(contract, e.to)
        );
    }
    out
}

fn dot_escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

fn dot(contract: &Contract, states: &[StateId], edges: &[DiagramEdge]) -> String {
    let mut out = format!(
        "digraph \"{}\" {{\n    rankdir=TB;\n    node [shape=box, fontname=\"sans-serif\"];\n",
        dot_escape(&contract.name)
    );
    for id in states {
        let s = contract.state(*id);
        let shape = match s.kind {
            StateKind::Terminal => "doubleoctagon",
            StateKind::Engine => "box3d",
            StateKind::External => "box",
        };
        let _ = writeln!(
            out,
            "    \"{}\" [label=\"{}\", shape={shape}];",
            dot_escape(&s.id),
            dot_escape(&node_label(contract, *id))
        );
    }
    for e in edges {
        let style = if e.limit { ", style=dashed" } else { "" };
        let _ = writeln!(
            out,
            "    \"{}\" -> \"{}\" [label=\"{}\"{style}];",
            dot_escape(&contract.state(e.from).id),
            dot_escape(&contract.state(e.to).id),
            dot_escape(&e.label)
        );
    }
    out.push_str("}\n");
    out
}
