//! `dead-end-state`
//!
//! ## What it does
//! Flags a non-terminal state without an `otherwise` fallback.
//!
//! ## Why is this bad?
//! When no guard matches, the machine has nowhere to go. The original server had exactly
//! this bug: its user-escalation state could not be left. Every non-terminal state must
//! say explicitly what happens when nothing else matches.
//!
//! ## Example
//! ```yaml
//! CHECK:
//!   transitions:
//!     - {when: payload.ok, to: DONE}
//!   # no otherwise: a payload with ok=false is stuck
//! ```
//! Use instead: add `otherwise: {to: RETRY}`.

use crate::contract::Contract;
use crate::contract::model::StateKind;
use crate::diagnostic::Diagnostic;

pub(crate) fn check(contract: &Contract) -> Vec<Diagnostic> {
    contract
        .states
        .iter()
        .filter(|s| s.kind != StateKind::Terminal && s.otherwise.is_none() && !s.fallback_dropped)
        .map(|s| {
            Diagnostic::new(
                "dead-end-state",
                format!("state `{}` has no `otherwise` fallback", s.id),
                Some(s.span),
            )
            .with_help("add `otherwise: {to: STATE}` for when no guarded transition matches")
        })
        .collect()
}
