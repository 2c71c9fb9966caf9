//! Transitions and counter redirects: where they go, under which guard, and what they do
//! on the way (actions, counters, variables, a message).
//!
//! A transition or redirect whose target does not exist is dropped after everything else
//! in it has been checked, so one run reports all of its problems.

use super::env::value_ty;
use super::lowerer::Lowerer;
use crate::contract::model::{Counter, Guard, Redirect, Transition};
use crate::contract::raw::{CounterScope, RawRedirect, RawTransition};
use crate::guard::check::TypeEnv;
use crate::guard::types::Ty;

impl Lowerer<'_> {
    pub(super) fn transition(
        &mut self,
        t: &RawTransition,
        p: &str,
        env: &TypeEnv,
        counters: &[Counter],
    ) -> Option<Transition> {
        let guard = t
            .when
            .as_ref()
            .map(|w| self.condition(w, &format!("{p}/when"), env));
        let to = self.target(&t.to, &format!("{p}/to"));
        let actions = self.actions(&t.actions, &format!("{p}/actions"), env);
        let increment: Vec<_> = t
            .increment
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                self.counter_id(
                    c,
                    &format!("{p}/increment/{i}"),
                    Some(CounterScope::Session),
                    counters,
                )
            })
            .collect();
        let reset = t
            .reset
            .iter()
            .enumerate()
            .filter_map(|(i, c)| self.counter_id(c, &format!("{p}/reset/{i}"), None, counters))
            .collect();
        let increment_tasks: Vec<_> = t
            .increment_tasks
            .iter()
            .filter_map(|(c, ids)| {
                let cp = format!("{p}/increment_tasks/{c}");
                let id = self.counter_id(c, &cp, Some(CounterScope::Task), counters)?;
                let guard =
                    self.typed(ids, &cp, env, &Ty::list(Ty::string()), "a list of task ids");
                Some((id, guard))
            })
            .collect();
        let counter_dropped =
            increment.len() < t.increment.len() || increment_tasks.len() < t.increment_tasks.len();
        let set = self.set(t, p, env);
        let message = t
            .message
            .as_ref()
            .map(|m| self.message_ref(m, &format!("{p}/message"), env));
        Some(Transition {
            guard,
            to: to?,
            actions,
            increment,
            increment_tasks,
            reset,
            set,
            message,
            span: self.value_span(p),
            counter_dropped,
        })
    }

    /// The `set:` assignments: each variable must be declared, and its expression must
    /// have the variable's type or be null.
    fn set(&mut self, t: &RawTransition, p: &str, env: &TypeEnv) -> Vec<(String, Guard)> {
        t.set
            .iter()
            .filter_map(|(var, expr)| {
                let vp = format!("{p}/set/{var}");
                let Some(kind) = self.vars.get(var).copied() else {
                    self.report_key(
                        "guard-unknown-path",
                        format!("`vars.{var}` is not declared"),
                        &vp,
                        Some("declare it under `vars:`".into()),
                    );
                    return None;
                };
                let want = value_ty(kind).optional();
                Some((
                    var.clone(),
                    self.typed(expr, &vp, env, &want, "the variable's type"),
                ))
            })
            .collect()
    }

    /// A counter's `on_limit` redirect, lowered like a transition without counters or
    /// variables.
    pub(super) fn redirect(&mut self, r: &RawRedirect, p: &str, env: &TypeEnv) -> Option<Redirect> {
        let guard = r
            .when
            .as_ref()
            .map(|w| self.condition(w, &format!("{p}/when"), env));
        let to = self.target(&r.to, &format!("{p}/to"));
        let message = r
            .message
            .as_ref()
            .map(|m| self.message_ref(m, &format!("{p}/message"), env));
        let actions = self.actions(&r.actions, &format!("{p}/actions"), env);
        Some(Redirect {
            guard,
            to: to?,
            message,
            actions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{HEADER, found, lower_yaml};

    #[test]
    fn a_transition_needs_when_and_otherwise_takes_none() {
        let text = format!(
            "{HEADER}{}",
            concat!(
                "initial: A\n",
                "states:\n",
                "  A:\n",
                "    kind: engine\n",
                "    transitions:\n",
                "      - {to: B}\n",
                "    otherwise: {when: \"true\", to: B}\n",
                "  B: {kind: terminal, otherwise: {to: A}}\n",
            )
        );
        let (contract, diagnostics) = lower_yaml(&text);
        assert_eq!(
            found(&diagnostics),
            [
                "10:9 schema-violation",
                "11:23 schema-violation",
                "12:3 schema-violation",
            ]
        );
        assert!(diagnostics[2].message.contains("terminal state `B`"));
        // Both are still lowered: the problems are in their shape, not their meaning.
        let contract = contract.unwrap();
        let a = contract.state(contract.initial);
        assert_eq!(a.transitions.len(), 1);
        assert!(a.transitions[0].guard.is_none());
        assert!(a.otherwise.as_ref().unwrap().guard.is_some());
    }

    #[test]
    fn an_unknown_target_drops_the_transition_but_its_other_parts_are_checked() {
        let text = format!(
            "{HEADER}{}",
            concat!(
                "initial: A\n",
                "states:\n",
                "  A:\n",
                "    kind: engine\n",
                "    otherwise: {to: NOPE, increment: [nope]}\n",
            )
        );
        let (contract, diagnostics) = lower_yaml(&text);
        assert_eq!(
            found(&diagnostics),
            ["9:21 unknown-transition-target", "9:39 unknown-counter"]
        );
        assert_eq!(diagnostics[0].help.as_deref(), Some("known states: A"));
        let contract = contract.unwrap();
        let a = contract.state(contract.initial);
        assert!(a.otherwise.is_none());
        assert!(a.fallback_dropped);
    }

    #[test]
    fn set_needs_a_declared_variable_and_a_value_of_its_type() {
        let text = format!(
            "{HEADER}{}",
            concat!(
                "vars: {note: {type: string}, count: {type: int}}\n",
                "initial: A\n",
                "states:\n",
                "  A:\n",
                "    kind: engine\n",
                "    otherwise:\n",
                "      to: A\n",
                "      set: {note: \"'x'\", count: \"'many'\", gone: \"1\", other: \"null\"}\n",
            )
        );
        let (contract, diagnostics) = lower_yaml(&text);
        assert_eq!(
            found(&diagnostics),
            [
                "12:34 guard-type-error",
                "12:43 guard-unknown-path",
                "12:54 guard-unknown-path",
            ]
        );
        let contract = contract.unwrap();
        let set = &contract
            .state(contract.initial)
            .otherwise
            .as_ref()
            .unwrap()
            .set;
        let names: Vec<&str> = set.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["count", "note"]);
        // A value of the wrong type keeps its text but has no checked expression.
        assert!(set[0].1.expr.is_none() && set[1].1.expr.is_some());
    }
}
