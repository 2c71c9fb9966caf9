//! `shadowed-transition`
//!
//! ## What it does
//! Flags a transition that can never fire because an earlier transition of the same state
//! always matches: its guard holds under every flag set and intent whatever the payload,
//! or it repeats an earlier guard word for word. A shadowed `otherwise` is flagged too.
//! A guard is tried under every combination of the flags and intent it reads, up to 256
//! combinations (8 boolean flags); a guard that reads more is not judged.
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

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};

use crate::analysis::reach::{decide, static_roots};
use crate::contract::Contract;
use crate::contract::model::{Flag, FlagType, Guard};
use crate::diagnostic::Diagnostic;
use crate::guard::ast::{Expr, ExprKind};

/// The most combinations of flag values and intents one guard is evaluated under. A guard
/// that reads more flags than that (2⁸ for booleans) is not judged: the rule only warns,
/// and the enumeration would grow exponentially with the flags it reads.
const MAX_COMBINATIONS: usize = 256;

/// One combination of the flags (and the intent) a guard reads; other flags cannot change
/// its value, so they stay at their defaults.
struct Assignment {
    flags: Vec<(String, Value)>,
    intent: Option<String>,
}

/// What the rule looks up once for every guard.
struct Setting<'c> {
    contract: &'c Contract,
    flags: HashMap<&'c str, &'c Flag>,
    /// The static roots with every flag at its default and the default intent; a guard is
    /// evaluated with the flags it reads changed in place and then restored.
    roots: Map<String, Value>,
}

/// Every combination of values of the flags (and the intent) a guard reads, or `None`
/// when there are more than [`MAX_COMBINATIONS`].
fn assignments(setting: &Setting<'_>, guard: &Expr) -> Option<Vec<Assignment>> {
    let mut read_flags = BTreeSet::new();
    let mut reads_intent = false;
    visit(guard, &mut |segments| match segments {
        [root, name, ..] if root == "flags" => {
            read_flags.insert(name.clone());
        }
        [root, ..] if root == "intent" => reads_intent = true,
        _ => {}
    });
    let mut sets: Vec<Vec<(String, Value)>> = vec![Vec::new()];
    for f in read_flags
        .iter()
        .filter_map(|name| setting.flags.get(name.as_str()))
    {
        let values: Vec<Value> = match f.kind {
            FlagType::Bool => vec![Value::Bool(false), Value::Bool(true)],
            FlagType::Enum => f.values.iter().map(|v| Value::String(v.clone())).collect(),
        };
        if sets.len().saturating_mul(values.len()) > MAX_COMBINATIONS {
            return None;
        }
        sets = sets
            .into_iter()
            .flat_map(|s| {
                values.iter().map(move |v| {
                    let mut s = s.clone();
                    s.push((f.name.clone(), v.clone()));
                    s
                })
            })
            .collect();
    }
    let intents: Vec<Option<String>> = if reads_intent {
        setting.contract.intents.iter().cloned().map(Some).collect()
    } else {
        vec![None]
    };
    if sets.len().saturating_mul(intents.len()) > MAX_COMBINATIONS {
        return None;
    }
    Some(
        sets.into_iter()
            .flat_map(|flags| {
                intents.iter().map(move |intent| Assignment {
                    flags: flags.clone(),
                    intent: intent.clone(),
                })
            })
            .collect(),
    )
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

/// Sets the flags and intent of an assignment in `roots`, or (`restore`) puts the
/// defaults back.
fn apply(setting: &mut Setting<'_>, a: &Assignment, restore: bool) {
    if let Some(Value::Object(flags)) = setting.roots.get_mut("flags") {
        for (name, value) in &a.flags {
            let value = match (restore, setting.flags.get(name.as_str())) {
                (true, Some(f)) => f.default.clone(),
                _ => value.clone(),
            };
            flags.insert(name.clone(), value);
        }
    }
    if let Some(intent) = &a.intent {
        let intent = if restore {
            &setting.contract.default_intent
        } else {
            intent
        };
        setting
            .roots
            .insert("intent".into(), Value::String(intent.clone()));
    }
}

fn always_true(setting: &mut Setting<'_>, guard: &Guard) -> bool {
    let Some(expr) = &guard.expr else {
        return false;
    };
    let Some(assignments) = assignments(setting, expr) else {
        return false;
    };
    assignments.iter().all(|a| {
        apply(setting, a, false);
        let holds = decide(guard, &setting.roots) == Some(true);
        apply(setting, a, true);
        holds
    })
}

fn normalized(source: &str) -> String {
    source.split_whitespace().collect()
}

pub(crate) fn check(contract: &Contract) -> Vec<Diagnostic> {
    let mut setting = Setting {
        contract,
        flags: contract
            .flags
            .iter()
            .map(|f| (f.name.as_str(), f))
            .collect(),
        roots: static_roots(
            contract,
            &crate::contract::flags::defaults(contract),
            &contract.default_intent,
        ),
    };
    let mut out = Vec::new();
    for state in &contract.states {
        let mut shadowing: Option<&Guard> = None;
        // The first guard of this state with each text, whitespace aside.
        let mut earlier: HashMap<String, &Guard> = HashMap::new();
        for t in &state.transitions {
            let Some(guard) = &t.guard else { continue };
            if let Some(earlier) = shadowing {
                out.push(shadowed(guard.span, &earlier.source, "always matches"));
                continue;
            }
            let text = normalized(&guard.source);
            if let Some(first) = earlier.get(&text) {
                out.push(shadowed(guard.span, &first.source, "has the same guard"));
                continue;
            }
            if guard.expr.is_some() {
                earlier.insert(text, guard);
            }
            if always_true(&mut setting, guard) {
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
