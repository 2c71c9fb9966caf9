//! `invalid-cancel-target`
//!
//! ## What it does
//! Flags an `on_cancel` that leads to a state that is not terminal, or to a terminal
//! state whose outcome is not `cancelled`.
//!
//! ## Why is this bad?
//! A cancel is neither a success nor a failure: a host maps the outcome to what its
//! caller sees (an exit code, a retry decision). The original orchestrator treated a
//! user's stop as a failure and retried the task. A cancel that lands in a working state
//! would keep the session running after the user asked it to stop.
//!
//! ## Example
//! ```yaml
//! on_cancel: {to: FAILED}
//! states:
//!   FAILED: {kind: terminal, outcome: failure}
//! ```
//! Use instead: a `CANCELLED: {kind: terminal, outcome: cancelled}` state.

use crate::contract::Contract;
use crate::contract::model::{Outcome, StateKind};
use crate::diagnostic::Diagnostic;

pub(crate) fn check(contract: &Contract) -> Vec<Diagnostic> {
    let Some(rule) = &contract.on_cancel else {
        return Vec::new();
    };
    let target = contract.state(rule.to);
    let problem = match (target.kind, target.outcome) {
        (StateKind::Terminal, Some(Outcome::Cancelled)) => return Vec::new(),
        (StateKind::Terminal, Some(other)) => format!("its outcome is `{}`", other.as_str()),
        (StateKind::Terminal, None) => "it has no outcome".to_string(),
        _ => "it is not terminal".to_string(),
    };
    vec![
        Diagnostic::new(
            "invalid-cancel-target",
            format!("`on_cancel` leads to `{}`, but {problem}", target.id),
            Some(rule.span),
        )
        .with_help("cancel into a terminal state with `outcome: cancelled`"),
    ]
}
