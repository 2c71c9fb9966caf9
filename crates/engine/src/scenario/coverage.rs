//! Which rules of a contract the scenarios exercised: every transition of every state
//! (each guarded one and the `otherwise`), and every `on_limit` redirect of every counter.

use std::collections::BTreeSet;

use super::run::Taken;
use crate::contract::Contract;
use crate::source::Span;

/// A rule of the contract and where it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub taken: Taken,
    /// `STATE -> TARGET [when GUARD]` or `limit COUNTER -> TARGET`.
    pub label: String,
    pub span: Span,
}

/// The rules the scenarios exercised and those they did not.
#[derive(Debug, Clone)]
pub struct Coverage {
    pub rules: Vec<Rule>,
    pub covered: Vec<bool>,
}

impl Coverage {
    /// Every rule of `contract`, marked by whether `taken` holds it.
    pub fn of(contract: &Contract, taken: &BTreeSet<Taken>) -> Coverage {
        let mut rules = Vec::new();
        for state in &contract.states {
            let rule_of = |index: Option<usize>, t: &crate::contract::model::Transition| {
                let target = &contract.state(t.to).id;
                let label = match &t.guard {
                    Some(g) => format!("{} -> {target} when {}", state.id, g.source),
                    None => format!("{} -> {target} (otherwise)", state.id),
                };
                Rule {
                    taken: Taken::Transition {
                        state: state.id.clone(),
                        index,
                    },
                    label,
                    span: t.span,
                }
            };
            for (i, t) in state.transitions.iter().enumerate() {
                rules.push(rule_of(Some(i), t));
            }
            if let Some(t) = &state.otherwise {
                rules.push(rule_of(None, t));
            }
        }
        for counter in &contract.counters {
            for (i, r) in counter.on_limit.iter().enumerate() {
                rules.push(Rule {
                    taken: Taken::Redirect {
                        counter: counter.name.clone(),
                        index: i,
                    },
                    label: format!("limit of {} -> {}", counter.name, contract.state(r.to).id),
                    span: counter.span,
                });
            }
        }
        let covered = rules.iter().map(|r| taken.contains(&r.taken)).collect();
        Coverage { rules, covered }
    }

    pub fn percent(&self) -> f64 {
        if self.rules.is_empty() {
            return 100.0;
        }
        let hit = self.covered.iter().filter(|c| **c).count();
        100.0 * hit as f64 / self.rules.len() as f64
    }

    /// The rules no scenario exercised.
    pub fn missed(&self) -> impl Iterator<Item = &Rule> {
        self.rules
            .iter()
            .zip(&self.covered)
            .filter(|(_, c)| !**c)
            .map(|(r, _)| r)
    }
}
