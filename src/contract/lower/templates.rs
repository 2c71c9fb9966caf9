//! Instruction templates: the instruction footer and each state's instruction, compiled
//! once per locale into the contract's `minijinja` environment.
//!
//! Templates are named `NAME.LOCALE` for a state and `__footer.LOCALE` for the footer;
//! `machine::response` renders them by those names.

use super::lowerer::Lowerer;
use crate::contract::model::Localized;
use crate::contract::raw::{RawContract, RawState, StateKind};
use crate::source::Span;

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
            for (locale, text) in &footer.texts {
                let name = format!("__footer.{locale}");
                if let Err(e) = templates.add_template_owned(name, text.clone()) {
                    let span = error_span(footer, locale, text, &e)
                        .unwrap_or_else(|| self.value_span("/instruction_footer"));
                    self.push(
                        "template-syntax-error",
                        format!("instruction_footer ({locale}): {}", template_error(&e)),
                        span,
                        None,
                    );
                }
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
        for (locale, body) in &localized.texts {
            if let Err(e) = templates.add_template_owned(format!("{name}.{locale}"), body.clone()) {
                // At the locale's own text: an overlay that replaced one locale of the
                // base's mapping wrote it, not the base (the mapping keeps the base's place).
                let span = error_span(&localized, locale, body, &e)
                    .unwrap_or_else(|| self.value_span(&format!("{p}/instruction")));
                self.push(
                    "template-syntax-error",
                    format!("instruction of `{name}` ({locale}): {}", template_error(&e)),
                    span,
                    None,
                );
            }
        }
        Some(localized)
    }
}

/// Where in the text of `locale` (`body`) minijinja found error `e`: at the place in
/// the file when the text's layout allows, else at the text.
fn error_span(text: &Localized, locale: &str, body: &str, e: &minijinja::Error) -> Option<Span> {
    let place = text.spans.get(locale)?;
    let Some(range) = e.range() else {
        return Some(place.span);
    };
    // minijinja counts bytes; spans count characters.
    let chars = |end: usize| body.get(..end).map_or(0, |s| s.chars().count());
    let start = chars(range.start);
    Some(place.at(body, start, chars(range.end).saturating_sub(start)))
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
}
