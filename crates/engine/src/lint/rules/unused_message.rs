//! `unused-message`
//!
//! ## What it does
//! Flags a message that nothing uses: no transition, check, action outcome, counter limit,
//! engine role, field message or host tool refers to its key.
//!
//! ## Why is this bad?
//! Unused messages rot: they are translated and maintained for nothing, and they hide
//! the messages that matter. Most of the original's catalogue was never read.
//!
//! ## Example
//! ```yaml
//! messages:
//!   failures.PLAN.old_rule: {en: "...", ja: "..."}   # nothing refers to it
//! ```

use std::collections::BTreeSet;

use crate::contract::Contract;
use crate::diagnostic::Diagnostic;
use crate::lint::usage::Usage;

pub(crate) fn check(contract: &Contract, usages: &[Usage]) -> Vec<Diagnostic> {
    let used: BTreeSet<&str> = usages.iter().map(|u| u.key.as_str()).collect();
    contract
        .messages
        .values()
        .filter(|m| !used.contains(m.key.as_str()))
        .map(|m| {
            Diagnostic::new(
                "unused-message",
                format!("message `{}` is never used", m.key),
                Some(m.span),
            )
            .with_help("refer to it from a transition, check or action, or remove it")
        })
        .collect()
}
