//! Semantic lint rules over a resolved contract: one rule per file in [`rules`].
//!
//! Rules that need name resolution run during lowering (`contract::lower`); the rules here
//! look at the whole flow: reachability, cycles, shadowing and the message catalogue.

pub mod rules;
pub mod usage;

use crate::contract::{self, Contract, Loaded, Registry};
use crate::diagnostic::{self, Diagnostic};
use crate::source::{FileId, Sources};

/// Loads a contract ([`contract::load`]) and runs the whole-flow rules on it: what `lint`,
/// diagrams and hosts use before trusting a contract.
pub fn load_and_lint(sources: &mut Sources, file: FileId, hosts: &[Registry]) -> Loaded {
    let mut loaded = contract::load(sources, file, hosts);
    add_findings(&mut loaded);
    loaded
}

/// [`contract::load_layered`] followed by the whole-flow rules.
pub(crate) fn load_layered_and_lint(
    sources: &mut Sources,
    project: Option<(String, String)>,
    hosts: &[Registry],
) -> Loaded {
    let mut loaded = contract::load_layered(sources, project, hosts);
    add_findings(&mut loaded);
    loaded
}

/// Adds the whole-flow findings to what loading found, in file and position order.
pub(crate) fn add_findings(loaded: &mut Loaded) {
    if let Some(c) = &loaded.contract {
        loaded.diagnostics.extend(check(c));
        diagnostic::sort(&mut loaded.diagnostics);
    }
}

/// Runs every rule and returns the findings in rule order.
pub fn check(contract: &Contract) -> Vec<Diagnostic> {
    let usages = usage::collect(contract);
    let mut out = Vec::new();
    out.extend(rules::unreachable_state::check(contract));
    out.extend(rules::dead_end_state::check(contract));
    out.extend(rules::unbounded_cycle::check(contract));
    out.extend(rules::shadowed_transition::check(contract));
    out.extend(rules::undefined_message::check(contract, &usages));
    out.extend(rules::unused_message::check(contract, &usages));
    out.extend(rules::placeholder_mismatch::check(contract, &usages));
    out.extend(rules::missing_locale_text::check(contract));
    out.extend(matrix_columns(contract));
    out
}

/// `invalid-flag-reference` for matrix columns: their flags must parse and their intent
/// must exist, so `code-intel matrix` cannot fail on a contract that lints clean.
fn matrix_columns(contract: &Contract) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for c in &contract.matrix_columns {
        if let Err(e) = crate::contract::flags::parse(contract, &c.flags) {
            out.push(Diagnostic::new(
                "invalid-flag-reference",
                format!("matrix column `{}`: {e}", c.key),
                Some(c.span),
            ));
        }
        if let Some(intent) = &c.intent
            && !contract.intents.contains(intent)
        {
            out.push(
                Diagnostic::new(
                    "invalid-flag-reference",
                    format!("matrix column `{}` names unknown intent `{intent}`", c.key),
                    Some(c.span),
                )
                .with_help(format!("intents: {}", contract.intents.join(", "))),
            );
        }
    }
    out
}
