//! Texts: localized texts, the message catalogue, the engine's message roles and
//! references to messages.
//!
//! Lowering only checks what needs the declared locales and roles. Whether a referenced
//! key exists, whether every message has every locale, and whether placeholders agree are
//! whole-contract questions answered by `lint` (`undefined-message`, `missing-locale-text`,
//! `placeholder-mismatch`).

use std::collections::{BTreeMap, BTreeSet};

use super::lowerer::Lowerer;
use crate::contract::model::{Localized, Message, MessageRef};
use crate::contract::raw::{RawContract, RawMessageRef, RawMessageWithArgs, Text};
use crate::contract::roles::ENGINE_ROLES;
use crate::guard::check::TypeEnv;

impl Lowerer<'_> {
    /// A text for every declared locale. A single string serves them all; a per-locale
    /// map must have each of them.
    pub(super) fn localized(&mut self, text: &Text, pointer: &str, what: &str) -> Localized {
        let texts = match text {
            Text::Single(s) => self
                .locales
                .iter()
                .map(|l| (l.clone(), s.clone()))
                .collect(),
            Text::PerLocale(map) => {
                for locale in &self.locales.clone() {
                    if !map.contains_key(locale) {
                        self.report(
                            "missing-locale-text",
                            format!("{what} has no `{locale}` text"),
                            pointer,
                            Some(format!("add `{locale}:` next to the other locales")),
                        );
                    }
                }
                map.clone()
            }
        };
        // A text given once for every locale is written at the pointer itself; `locate`
        // stops at the deepest node that exists, so one lookup serves both shapes.
        let spans = texts
            .keys()
            .map(|l| (l.clone(), self.text_span(&format!("{pointer}/{l}"))))
            .collect();
        Localized { texts, spans }
    }

    /// The message catalogue. A text in an undeclared locale is reported at its locale
    /// key and kept.
    pub(super) fn messages(&mut self, raw: &RawContract) -> BTreeMap<String, Message> {
        let mut messages = BTreeMap::new();
        for (key, m) in &raw.messages {
            let p = format!("/messages/{key}");
            for locale in m.text.keys() {
                if !self.locales.contains(locale) {
                    self.report_key(
                        "schema-violation",
                        format!(
                            "message `{key}` has text for `{locale}`, which is not a declared locale"
                        ),
                        &format!("{p}/{locale}"),
                        Some(format!("declared locales: {}", self.locales.join(", "))),
                    );
                }
            }
            messages.insert(
                key.clone(),
                Message {
                    key: key.clone(),
                    error: m.error.clone(),
                    user_intervention: m.user_intervention,
                    text: Localized {
                        texts: m.text.clone(),
                        spans: m
                            .text
                            .keys()
                            .map(|l| (l.clone(), self.text_span(&format!("{p}/{l}"))))
                            .collect(),
                    },
                    span: self.key_span(&p),
                },
            );
        }
        messages
    }

    /// `engine_messages` maps the engine's roles to message keys; the keys are checked
    /// by `lint` with every other use of a message.
    pub(super) fn check_engine_message_roles(&mut self, raw: &RawContract) {
        for role in raw.engine_messages.keys() {
            if !ENGINE_ROLES.iter().any(|(r, _)| r == role) {
                let roles: Vec<&str> = ENGINE_ROLES.iter().map(|(r, _)| *r).collect();
                self.report_key(
                    "schema-violation",
                    format!("unknown engine message role `{role}`"),
                    &format!("/engine_messages/{role}"),
                    Some(format!("roles: {}", roles.join(", "))),
                );
            }
        }
    }

    /// A reference to a message, with its placeholder arguments checked as expressions.
    pub(super) fn message_ref(&mut self, m: &RawMessageRef, p: &str, env: &TypeEnv) -> MessageRef {
        let (key, args, key_ptr) = match m {
            RawMessageRef::Key(k) => (k.clone(), BTreeMap::new(), p.to_string()),
            RawMessageRef::WithArgs(RawMessageWithArgs { key, args }) => {
                (key.clone(), args.clone(), format!("{p}/key"))
            }
        };
        let args = args
            .iter()
            .map(|(name, expr)| {
                let ap = format!("{p}/args/{name}");
                (name.clone(), self.expression(expr, &ap, env))
            })
            .collect();
        MessageRef {
            key,
            args,
            span: self.value_span(&key_ptr),
        }
    }
}

/// Which keys a message text uses as `{placeholder}`.
pub(crate) fn placeholders(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        rest = &rest[start + 1..];
        if let Some(end) = rest.find('}') {
            let name = &rest[..end];
            if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                out.insert(name.to_string());
            }
            rest = &rest[end + 1..];
        } else {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{found, lower_yaml};
    use super::placeholders;

    /// A contract in English and Japanese with `rest` written from line 5 on.
    fn bilingual(rest: &str) -> String {
        format!(
            "contract: t\nversion: 1\nhost: agent-runner\nlocales: [en, ja]\n{rest}initial: A\nstates: {{A: {{kind: terminal}}}}\n"
        )
    }

    #[test]
    fn a_text_per_locale_needs_every_locale_and_one_string_serves_all() {
        let text = bilingual(concat!(
            "flags:\n",
            "  v: {type: bool, help: {en: \"Verbose.\"}}\n",
            "  q: {type: bool, help: \"Quiet.\"}\n",
        ));
        let (contract, diagnostics) = lower_yaml(&text);
        // Reported at the help text.
        assert_eq!(found(&diagnostics), ["6:25 missing-locale-text"]);
        assert!(diagnostics[0].message.contains("has no `ja` text"));
        let contract = contract.unwrap();
        assert_eq!(contract.flag("q").unwrap().help.texts["ja"], "Quiet.");
        assert!(!contract.flag("v").unwrap().help.texts.contains_key("ja"));
    }

    #[test]
    fn a_message_missing_a_locale_is_left_to_lint() {
        let text = bilingual("messages:\n  done: {en: \"Done.\"}\n");
        let (contract, diagnostics) = lower_yaml(&text);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let contract = contract.unwrap();
        assert_eq!(contract.messages["done"].span.start.line, 6);
        assert!(
            crate::lint::check(&contract)
                .iter()
                .any(|d| d.code == "missing-locale-text")
        );
    }

    #[test]
    fn a_message_in_an_undeclared_locale_is_reported_at_the_locale() {
        let text =
            bilingual("messages:\n  done: {en: \"Done.\", de: \"Fertig.\", error: failed}\n");
        let (contract, diagnostics) = lower_yaml(&text);
        assert_eq!(found(&diagnostics), ["6:23 schema-violation"]);
        let contract = contract.unwrap();
        let done = &contract.messages["done"];
        assert_eq!(done.text.texts["de"], "Fertig.");
        assert_eq!(done.error.as_deref(), Some("failed"));
    }

    #[test]
    fn unknown_engine_message_roles_are_reported_at_the_role() {
        let text = bilingual("engine_messages:\n  payload_invalid: m\n  payload_wrong: m\n");
        let (contract, diagnostics) = lower_yaml(&text);
        assert_eq!(found(&diagnostics), ["7:3 schema-violation"]);
        assert_eq!(contract.unwrap().engine_messages_span.start.line, 5);
    }

    #[test]
    fn placeholders_are_names_in_braces() {
        let found: Vec<String> = placeholders("{a} {b_2} {} {not one} {a} {open")
            .into_iter()
            .collect();
        assert_eq!(found, ["a", "b_2"]);
    }
}
