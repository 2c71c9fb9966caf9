//! Instruction templates: the instruction footer and each state's instruction, compiled
//! once per locale into the contract's `minijinja` environment.
//!
//! Templates are named `NAME.LOCALE` for a state and `__footer.LOCALE` for the footer;
//! `machine::response` renders them by those names.

use super::Lowerer;
use crate::contract::model::Localized;
use crate::contract::raw::{RawContract, RawState, StateKind};

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
                    self.report(
                        "template-syntax-error",
                        format!("instruction_footer ({locale}): {}", template_error(&e)),
                        "/instruction_footer",
                        None,
                    );
                }
            }
        }
        footer
    }

    /// Compiles the instruction of state `name`, and tells whether it has one. An external
    /// state needs one: it is what the agent is told to do.
    pub(super) fn instruction(
        &mut self,
        name: &str,
        s: &RawState,
        templates: &mut minijinja::Environment<'static>,
    ) -> bool {
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
            return false;
        };
        let localized = self.localized(
            text,
            &format!("{p}/instruction"),
            &format!("the instruction of `{name}`"),
        );
        for (locale, body) in &localized.texts {
            if let Err(e) = templates.add_template_owned(format!("{name}.{locale}"), body.clone()) {
                self.report(
                    "template-syntax-error",
                    format!("instruction of `{name}` ({locale}): {}", template_error(&e)),
                    &format!("{p}/instruction"),
                    None,
                );
            }
        }
        true
    }
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
