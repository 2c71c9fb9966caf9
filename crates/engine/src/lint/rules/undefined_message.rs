//! `undefined-message`
//!
//! ## What it does
//! Flags a message key that a transition, check, action outcome, counter limit, engine
//! role or the host uses but `messages` does not define. Every engine role must be mapped.
//!
//! ## Why is this bad?
//! The original server fell back to an `error: message_not_found` stub at run time, which
//! silently turned successful responses into errors. Here the gap is found before the
//! contract is used.
//!
//! ## Example
//! ```yaml
//! otherwise: {to: DONE, message: success.DONE.complet}   # typo
//! ```

use crate::contract::Contract;
use crate::contract::roles::ENGINE_ROLES;
use crate::diagnostic::Diagnostic;
use crate::lint::usage::Usage;

pub(crate) fn check(contract: &Contract, usages: &[Usage]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for u in usages {
        if contract.messages.contains_key(&u.key) {
            continue;
        }
        let span = u.span.or(Some(contract.engine_messages_span));
        let mut d = Diagnostic::new(
            "undefined-message",
            format!("message `{}` is not defined", u.key),
            span,
        )
        .with_help(format!(
            "add `{}:` with a text per locale under `messages:`",
            u.key
        ));
        if u.span.is_none() {
            d = d.with_note(format!("used by {}", u.user));
        }
        out.push(d);
    }
    for (role, _) in ENGINE_ROLES {
        if !contract.engine_messages.contains_key(*role) {
            out.push(
                Diagnostic::new(
                    "undefined-message",
                    format!("engine role `{role}` has no message"),
                    Some(contract.engine_messages_span),
                )
                .with_help(format!(
                    "add `{role}: <message key>` under `engine_messages:`"
                )),
            );
        }
    }
    out
}
