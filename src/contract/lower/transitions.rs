//! Transitions and counter redirects: where they go, under which guard, and what they do
//! on the way (actions, counters, variables, a message).
//!
//! A transition or redirect whose target does not exist is dropped after everything else
//! in it has been checked, so one run reports all of its problems.

use super::Lowerer;
use super::env::value_ty;
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
        let actions = t
            .actions
            .iter()
            .enumerate()
            .filter_map(|(i, a)| self.action(a, &format!("{p}/actions/{i}"), env))
            .collect();
        let increment = t
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
        let increment_tasks = t
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
        let actions = r
            .actions
            .iter()
            .enumerate()
            .filter_map(|(i, a)| self.action(a, &format!("{p}/actions/{i}"), env))
            .collect();
        Some(Redirect {
            guard,
            to: to?,
            message,
            actions,
        })
    }
}
