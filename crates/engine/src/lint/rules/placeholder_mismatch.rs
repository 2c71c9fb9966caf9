//! `placeholder-mismatch`
//!
//! ## What it does
//! Flags a message whose locales use different `{placeholders}`, and a use of a message
//! that does not provide every placeholder its text needs.
//!
//! ## Why is this bad?
//! A missing value shows up as a literal `{count}` in what the agent reads, and only in
//! one language, where nobody tests it.
//!
//! ## Example
//! ```yaml
//! failures.X.too_many:
//!   en: "failed {count} times"
//!   ja: "失敗しました"          # {count} missing
//! ```

use std::collections::{BTreeSet, HashMap};

use crate::contract::Contract;
use crate::contract::lower::placeholders;
use crate::diagnostic::Diagnostic;
use crate::lint::usage::Usage;

pub(crate) fn check(contract: &Contract, usages: &[Usage]) -> Vec<Diagnostic> {
    let mut uses: HashMap<&str, Vec<&Usage>> = HashMap::new();
    for u in usages {
        uses.entry(u.key.as_str()).or_default().push(u);
    }
    let mut out = Vec::new();
    for m in contract.messages.values() {
        let mut sets = m.text.texts.iter().map(|(l, t)| (l, placeholders(t)));
        let Some((first_locale, first)) = sets.next() else {
            continue;
        };
        for (locale, set) in sets {
            if set != first {
                out.push(
                    Diagnostic::new(
                        "placeholder-mismatch",
                        format!(
                            "message `{}` uses {} in `{first_locale}` but {} in `{locale}`",
                            m.key,
                            show(&first),
                            show(&set)
                        ),
                        Some(m.span),
                    )
                    .with_help("every locale must use the same placeholders"),
                );
            }
        }
        let needed: BTreeSet<String> = m
            .text
            .texts
            .values()
            .flat_map(|t| placeholders(t))
            .collect();
        for u in uses.get(m.key.as_str()).into_iter().flatten() {
            let missing: BTreeSet<&String> =
                needed.iter().filter(|p| !u.provided.contains(*p)).collect();
            if !missing.is_empty() {
                let names: Vec<String> = missing.iter().map(|p| format!("{{{p}}}")).collect();
                let mut d = Diagnostic::new(
                    "placeholder-mismatch",
                    format!(
                        "message `{}` needs {} but {} does not provide it",
                        m.key,
                        names.join(", "),
                        u.user
                    ),
                    u.span.or(Some(m.span)),
                )
                .with_help(if u.provided.is_empty() {
                    "nothing is provided here; add `args:` or remove the placeholder".to_string()
                } else {
                    format!(
                        "provided here: {}",
                        u.provided.iter().cloned().collect::<Vec<_>>().join(", ")
                    )
                });
                if u.span.is_none() {
                    d = d.with_note(format!("used by {}", u.user));
                }
                out.push(d);
            }
        }
    }
    out
}

fn show(set: &BTreeSet<String>) -> String {
    if set.is_empty() {
        "no placeholders".to_string()
    } else {
        set.iter()
            .map(|p| format!("{{{p}}}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
