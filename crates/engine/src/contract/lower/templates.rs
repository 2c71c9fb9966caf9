//! Instruction templates: the instruction footer and each state's instruction, compiled
//! once per locale into the contract's `minijinja` environment.
//!
//! Templates are named `NAME.LOCALE` for a state and `__footer.LOCALE` for the footer;
//! `machine::response` renders them by those names.

use super::lowerer::Lowerer;
use crate::contract::model::Localized;
use crate::contract::raw::{RawContract, RawState, StateKind};
use crate::contract::template_roots::{MAX_TAG_CHARS, oversized_tag};

/// An empty template environment. Undefined values are chainable, so an instruction may
/// read `vars.x.y` before `x` is set: it renders as nothing instead of failing.
pub(super) fn environment() -> minijinja::Environment<'static> {
    let mut templates = minijinja::Environment::new();
    templates.set_undefined_behavior(minijinja::UndefinedBehavior::Chainable);
    templates
}

impl Lowerer<'_> {
    pub(super) fn instruction_footer(
        &mut self,
        raw: &RawContract,
        templates: &mut minijinja::Environment<'static>,
    ) -> Option<Localized> {
        let footer = raw
            .instruction_footer
            .as_ref()
            .map(|t| self.localized(t, "/instruction_footer", "`instruction_footer`"));
        if let Some(footer) = &footer {
            for locale in footer.texts.keys() {
                let place = Place {
                    name: format!("__footer.{locale}"),
                    what: format!("instruction_footer ({locale})"),
                    pointer: "/instruction_footer".to_string(),
                };
                self.compile(templates, footer, locale, place);
            }
        }
        footer
    }

    /// Compiles the instruction of state `name`, and returns it when it has one. An
    /// external state needs one: it is what the agent is told to do.
    pub(super) fn instruction(
        &mut self,
        name: &str,
        s: &RawState,
        templates: &mut minijinja::Environment<'static>,
    ) -> Option<Localized> {
        let p = format!("/states/{name}");
        let Some(text) = &s.instruction else {
            if s.kind == StateKind::External {
                self.report_key(
                    "missing-locale-text",
                    format!("external state `{name}` has no instruction"),
                    &p,
                    Some("agents need `instruction:` to know what to do".into()),
                );
            }
            return None;
        };
        let localized = self.localized(
            text,
            &format!("{p}/instruction"),
            &format!("the instruction of `{name}`"),
        );
        for locale in localized.texts.keys() {
            let place = Place {
                name: format!("{name}.{locale}"),
                what: format!("instruction of `{name}` ({locale})"),
                pointer: format!("{p}/instruction"),
            };
            self.compile(templates, &localized, locale, place);
        }
        Some(localized)
    }

    /// Adds the text of `locale` to `templates` as `place.name`, or reports why it cannot
    /// be: a tag too large to compile safely, or a syntax error. Either is reported at
    /// the locale's own text, which an overlay that replaced one locale of the base's
    /// mapping wrote (the mapping itself keeps the base's place).
    fn compile(
        &mut self,
        templates: &mut minijinja::Environment<'static>,
        text: &Localized,
        locale: &str,
        place: Place,
    ) {
        let Some(body) = text.texts.get(locale) else {
            return;
        };
        let at =
            |offset: usize, len: usize| text.spans.get(locale).map(|p| p.at(body, offset, len));
        if let Some((offset, len)) = oversized_tag(body) {
            let span = at(offset, len).unwrap_or_else(|| self.value_span(&place.pointer));
            self.push(
                "template-syntax-error",
                format!(
                    "{}: a tag of {len} characters; a template tag may hold at most {MAX_TAG_CHARS}",
                    place.what
                ),
                span,
                Some("split the expression: compute its parts with `{% set %}` first".into()),
            );
            return;
        }
        if let Err(e) = templates.add_template_owned(place.name, body.clone()) {
            // minijinja counts bytes; spans count characters.
            let chars = |end: usize| body.get(..end).map_or(0, |s| s.chars().count());
            let span = match e.range() {
                Some(range) => {
                    let start = chars(range.start);
                    at(start, chars(range.end).saturating_sub(start))
                }
                None => text.spans.get(locale).map(|p| p.span),
            };
            let span = span.unwrap_or_else(|| self.value_span(&place.pointer));
            self.push(
                "template-syntax-error",
                format!("{}: {}", place.what, template_error(&e)),
                span,
                None,
            );
        }
    }
}

/// Which template is compiled: its name in the environment, how findings name it, and
/// where it is written when its text has no place of its own.
struct Place {
    name: String,
    what: String,
    pointer: String,
}

/// A template error without minijinja's template name, which is ours, not the user's.
fn template_error(e: &minijinja::Error) -> String {
    match e.line() {
        Some(line) => format!(
            "{} (template line {line})",
            e.detail().unwrap_or("syntax error")
        ),
        None => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{HEADER, found, lower_yaml};

    #[test]
    fn instructions_and_the_footer_become_templates_per_locale() {
        let text = format!(
            "{HEADER}{}",
            concat!(
                "instruction_footer: \"Reply briefly.\"\n",
                "initial: ASK\n",
                "states:\n",
                "  ASK: {payload: {type: object}, instruction: \"Say {{ vars.x.y }}.\", otherwise: {to: END}}\n",
                "  END: {kind: terminal}\n",
            )
        );
        let (contract, diagnostics) = lower_yaml(&text);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let contract = contract.unwrap();
        assert!(contract.state(contract.initial).has_instruction);
        let footer = contract.templates.get_template("__footer.en").unwrap();
        assert_eq!(footer.render(()).unwrap(), "Reply briefly.");
        // An undefined chain renders as nothing.
        let ask = contract.templates.get_template("ASK.en").unwrap();
        assert_eq!(ask.render(()).unwrap(), "Say .");
    }

    #[test]
    fn template_syntax_errors_and_a_missing_instruction_are_reported() {
        let text = format!(
            "{HEADER}{}",
            concat!(
                "instruction_footer: \"{% if %}\"\n",
                "initial: ASK\n",
                "states:\n",
                "  ASK: {payload: {type: object}, otherwise: {to: SAY}}\n",
                "  SAY: {payload: {type: object}, instruction: \"{{ x\", otherwise: {to: END}}\n",
                "  END: {kind: terminal}\n",
            )
        );
        let (contract, diagnostics) = lower_yaml(&text);
        assert_eq!(
            found(&diagnostics),
            [
                // Where minijinja stopped: at `%}` and at the end of the text.
                "5:28 template-syntax-error",
                "8:3 missing-locale-text",
                "9:51 template-syntax-error",
            ]
        );
        assert!(diagnostics[0].message.contains("template line 1"));
        let contract = contract.unwrap();
        assert!(!contract.state(contract.initial).has_instruction);
    }

    #[test]
    fn a_tag_too_large_to_compile_safely_is_refused_where_it_starts() {
        // Ten thousand links used to overflow the stack while compiling and abort.
        let chain = format!("{{{{ tasks{} }}}}", ".a".repeat(10_000));
        for expr in [chain, format!("{{{{ 1{} }}}}", "+1".repeat(10_000))] {
            let text = format!(
                "{HEADER}initial: ASK\nstates:\n  ASK: {{payload: {{type: object}}, instruction: \"Say {expr}\", otherwise: {{to: END}}}}\n  END: {{kind: terminal}}\n"
            );
            let (contract, diagnostics) = lower_yaml(&text);
            assert_eq!(found(&diagnostics), ["7:52 template-syntax-error"]);
            assert!(
                diagnostics[0]
                    .message
                    .ends_with("characters; a template tag may hold at most 1000"),
                "{}",
                diagnostics[0].message
            );
            assert!(contract.unwrap().templates.get_template("ASK.en").is_err());
        }
    }
}
