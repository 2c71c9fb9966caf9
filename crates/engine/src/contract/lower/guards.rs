//! Guard-language text in the contract: conditions, expressions and typed expressions are
//! parsed and checked against a type environment, and their errors are pointed at the
//! column inside the YAML scalar where they occur.
//!
//! A guard that does not parse or check is kept with its source text and no expression,
//! so the contract can still be built and every other problem reported.

use super::lowerer::Lowerer;
use crate::contract::model::Guard;
use crate::diagnostic::Diagnostic;
use crate::guard::check::{CheckError, CheckErrorKind, TypeEnv, check, check_condition};
use crate::guard::types::Ty;
use crate::guard::{self, Expr};

impl Lowerer<'_> {
    /// Parses and checks a condition written at `pointer`.
    pub(super) fn condition(&mut self, text: &str, pointer: &str, env: &TypeEnv) -> Guard {
        self.guard_with(text, pointer, |expr| check_condition(expr, env))
    }

    /// Parses and checks an expression of any type.
    pub(super) fn expression(&mut self, text: &str, pointer: &str, env: &TypeEnv) -> Guard {
        self.guard_with(text, pointer, |expr| check(expr, env).map(|_| ()))
    }

    /// Parses and checks an expression that must have type `want`; `what` names the place
    /// that wants it, for the message.
    pub(super) fn typed(
        &mut self,
        text: &str,
        pointer: &str,
        env: &TypeEnv,
        want: &Ty,
        what: &str,
    ) -> Guard {
        self.guard_with(text, pointer, |expr| {
            let ty = check(expr, env)?;
            if fits(&ty, want) {
                Ok(())
            } else {
                Err(vec![CheckError {
                    kind: CheckErrorKind::Type,
                    message: format!("this is {ty}, but {what} is {want}"),
                    range: expr.range,
                    help: None,
                }])
            }
        })
    }

    fn guard_with(
        &mut self,
        text: &str,
        pointer: &str,
        check_fn: impl FnOnce(&Expr) -> Result<(), Vec<CheckError>>,
    ) -> Guard {
        let node = self.root.locate(pointer).1;
        let span = node.span;
        let unchecked = Guard {
            source: text.to_string(),
            expr: None,
            span,
        };
        let expr = match guard::parse(text) {
            Ok(expr) => expr,
            Err(e) => {
                let at = node.inner_span(e.range.start, e.range.end - e.range.start);
                self.diagnostics.push(
                    Diagnostic::new("guard-syntax-error", e.message, Some(at))
                        .with_note(format!("in guard `{text}`")),
                );
                return unchecked;
            }
        };
        if let Err(errors) = check_fn(&expr) {
            for e in errors {
                let code = match e.kind {
                    CheckErrorKind::UnknownPath => "guard-unknown-path",
                    CheckErrorKind::Type => "guard-type-error",
                };
                let at = node.inner_span(e.range.start, e.range.end - e.range.start);
                let mut d = Diagnostic::new(code, e.message, Some(at));
                d.help = e.help;
                self.diagnostics.push(d);
            }
            return unchecked;
        }
        Guard {
            expr: Some(expr),
            ..unchecked
        }
    }
}

/// Whether a value of type `have` can be used where `want` is expected.
fn fits(have: &Ty, want: &Ty) -> bool {
    match (have.strip_optional(), want.strip_optional()) {
        (Ty::Any, _) | (_, Ty::Any) | (Ty::Null, _) => true,
        (Ty::List(a), Ty::List(b)) => fits(a, b),
        (Ty::Str(_), Ty::Str(None)) => true,
        (Ty::Str(Some(a)), Ty::Str(Some(b))) => a.iter().all(|v| b.contains(v)),
        // A free string is accepted where an enumeration is wanted: its value is not
        // known before run time.
        (Ty::Str(None), Ty::Str(Some(_))) => true,
        (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{HEADER, found, lower_yaml};
    use super::fits;
    use crate::guard::types::Ty;

    /// An engine state `A` whose one transition has guard `when` (written as YAML).
    fn guarded(when: &str) -> String {
        format!(
            "{HEADER}flags: {{mode: {{type: enum, values: [fast, slow], help: h}}}}\nparams: {{max: {{type: int, default: 2}}}}\ninitial: A\nstates:\n  A:\n    kind: engine\n    transitions:\n      - {{when: {when}, to: A}}\n    otherwise: {{to: A}}\n"
        )
    }

    #[test]
    fn guards_read_flags_intent_and_params() {
        let text = guarded("\"flags.mode == 'fast' && intent == 'DEFAULT' && params.max > 1\"");
        let (contract, diagnostics) = lower_yaml(&text);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let contract = contract.unwrap();
        let guard = contract.state(contract.initial).transitions[0]
            .guard
            .clone()
            .unwrap();
        assert!(guard.expr.is_some());
        assert_eq!(guard.span.start.line, 12);
    }

    #[test]
    fn guard_errors_point_inside_the_scalar() {
        // Columns count from the first character inside the quotes (col 17): the syntax
        // error is at the end of the text, the type error at `'quick'`.
        assert_eq!(
            found(&lower_yaml(&guarded("\"params.max >\"")).1),
            ["12:29 guard-syntax-error"]
        );
        assert_eq!(
            found(&lower_yaml(&guarded("\"params.nope > 1\"")).1),
            ["12:17 guard-unknown-path"]
        );
        assert_eq!(
            found(&lower_yaml(&guarded("\"flags.mode == 'quick'\"")).1),
            ["12:31 guard-type-error"]
        );
        // A condition must be a boolean.
        assert_eq!(
            found(&lower_yaml(&guarded("\"params.max\"")).1),
            ["12:17 guard-type-error"]
        );
    }

    #[test]
    fn an_unchecked_guard_keeps_its_text() {
        let (contract, _) = lower_yaml(&guarded("\"params.max >\""));
        let contract = contract.unwrap();
        let guard = contract.state(contract.initial).transitions[0]
            .guard
            .clone()
            .unwrap();
        assert_eq!(guard.source, "params.max >");
        assert!(guard.expr.is_none());
    }

    #[test]
    fn fits_accepts_narrower_strings_and_null() {
        let fast = Ty::Str(Some(vec!["fast".into()]));
        let both = Ty::Str(Some(vec!["fast".into(), "slow".into()]));
        assert!(fits(&fast, &both));
        assert!(!fits(&both, &fast));
        assert!(fits(&Ty::string(), &fast));
        assert!(fits(&Ty::Null, &Ty::Number));
        assert!(!fits(&Ty::Number, &Ty::string()));
        assert!(fits(&Ty::list(fast), &Ty::list(Ty::string())));
        assert!(!fits(&Ty::list(Ty::Number), &Ty::list(Ty::string())));
    }
}
