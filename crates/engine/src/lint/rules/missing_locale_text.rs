//! `missing-locale-text`
//!
//! ## What it does
//! Flags a message without text for one of the contract's `locales` (instructions and flag
//! help are checked while lowering, with the same code).
//!
//! ## Why is this bad?
//! The original's users write Japanese and its catalogue shipped English only; a contract
//! that declares a locale must speak it everywhere.
//!
//! ## Example
//! ```yaml
//! locales: [en, ja]
//! messages:
//!   success.DONE.ok: {en: "Done."}    # no ja
//! ```

use crate::contract::Contract;
use crate::diagnostic::Diagnostic;

pub(crate) fn check(contract: &Contract) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for m in contract.messages.values() {
        for locale in &contract.locales {
            if m.text.texts.get(locale).is_none_or(|t| t.trim().is_empty()) {
                out.push(
                    Diagnostic::new(
                        "missing-locale-text",
                        format!("message `{}` has no `{locale}` text", m.key),
                        Some(m.span),
                    )
                    .with_help(format!("add `{locale}: \"...\"`")),
                );
            }
        }
    }
    out
}
