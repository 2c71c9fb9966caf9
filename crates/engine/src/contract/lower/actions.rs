//! Action calls: resolving an action name against the host's registry, and type-checking
//! its arguments, its `when` and its failure-outcome messages.
//!
//! Built-in task actions resolve to [`Performer::Engine`] here, so the step function never
//! dispatches on a name.

use std::collections::BTreeMap;

use super::lowerer::Lowerer;
use crate::contract::model::{ActionCall, Guard, LimitValue, MessageRef, Performer, RetryRule};
use crate::contract::raw::{Limit, RawActionCall, RawMessageRef, RawRetry, ValueType};
use crate::contract::registry::{ActionSpec, BuiltinAction};
use crate::guard::check::TypeEnv;

impl Lowerer<'_> {
    /// A list of action calls at `p` (`…/actions`, `…/run`); calls that do not resolve
    /// are reported and left out.
    pub(super) fn actions(
        &mut self,
        calls: &[RawActionCall],
        p: &str,
        env: &TypeEnv,
    ) -> Vec<ActionCall> {
        calls
            .iter()
            .enumerate()
            .filter_map(|(i, a)| self.action(a, &format!("{p}/{i}"), env))
            .collect()
    }

    /// Lowers the action call at `p`; `None` when the host has no such action.
    pub(super) fn action(
        &mut self,
        call: &RawActionCall,
        p: &str,
        env: &TypeEnv,
    ) -> Option<ActionCall> {
        let (name, args, when, bind, errors) = match call {
            RawActionCall::Name(n) => (n.clone(), BTreeMap::new(), None, None, BTreeMap::new()),
            RawActionCall::Full(a) => (
                a.action.clone(),
                a.args.clone(),
                a.when.clone(),
                a.bind.clone(),
                a.errors.clone(),
            ),
        };
        let (timeout, retry) = match call {
            RawActionCall::Name(_) => (None, None),
            RawActionCall::Full(a) => (a.timeout.as_ref(), a.retry.as_ref()),
        };
        // A bare name is the whole item; in the long form the name is under `action`.
        let name_ptr = if matches!(call, RawActionCall::Name(_)) {
            p.to_string()
        } else {
            format!("{p}/action")
        };
        let Some(spec) = self.registry.action(&name).cloned() else {
            let names: Vec<&str> = self.registry.actions.iter().map(|a| a.name).collect();
            self.report(
                "unknown-action",
                format!("`{name}` is not an action of host `{}`", self.registry.host),
                &name_ptr,
                Some(format!("known actions: {}", names.join(", "))),
            );
            return None;
        };
        let typed_args = self.action_args(&spec, &args, p, env);
        let when = when.map(|w| self.condition(&w, &format!("{p}/when"), env));
        let errors = self.action_errors(&spec, &errors, p, env);
        // The result is bound under the action's last dotted segment unless `bind` says
        // otherwise: `ns.fetch` is read as `result.fetch`.
        let bind = bind.unwrap_or_else(|| name.rsplit('.').next().unwrap_or(&name).to_string());
        let performer = BuiltinAction::from_name(&name).map_or(Performer::Host, Performer::Engine);
        let timeout = timeout.map(|t| self.amount(t, &format!("{p}/timeout"), "timeout"));
        let retry = retry.map(|r| self.retry_rule(&spec, r, p));
        if performer != Performer::Host && (timeout.is_some() || retry.is_some()) {
            self.report(
                "unknown-action",
                format!("`{name}` is applied by the engine; it has no timeout or retry"),
                p,
                Some("only host actions take `timeout` and `retry`".into()),
            );
        }
        Some(ActionCall {
            name,
            performer,
            args: typed_args,
            when,
            bind,
            errors,
            timeout,
            retry,
            span: self.value_span(p),
        })
    }

    /// A count written as a number or as an int param (`params.NAME`), at `p`.
    fn amount(&mut self, limit: &Limit, p: &str, what: &str) -> LimitValue {
        match limit {
            Limit::Fixed(n) => LimitValue::Fixed(*n),
            Limit::Param(raw) => {
                let name = raw.strip_prefix("params.").unwrap_or(raw).to_string();
                if !matches!(self.params.get(&name), Some((ValueType::Int, _))) {
                    self.report(
                        "guard-unknown-path",
                        format!("the {what} names `params.{name}`, which is not an int param"),
                        p,
                        Some("declare it under `params:` with `type: int`".into()),
                    );
                }
                LimitValue::Param(name)
            }
        }
    }

    /// A retry policy: its count, and outcomes the action can report.
    fn retry_rule(&mut self, spec: &ActionSpec, retry: &RawRetry, p: &str) -> RetryRule {
        let max = self.amount(&retry.max, &format!("{p}/retry/max"), "retry count");
        for (i, outcome) in retry.on.iter().enumerate() {
            if !spec.outcomes.iter().any(|(o, _)| o == outcome) {
                let names: Vec<&str> = spec.outcomes.iter().map(|(o, _)| *o).collect();
                self.report(
                    "unknown-action",
                    format!(
                        "action `{}` has no failure outcome `{outcome}` to retry on",
                        spec.name
                    ),
                    &format!("{p}/retry/on/{i}"),
                    Some(format!(
                        "its outcomes: {}",
                        if names.is_empty() {
                            "none".to_string()
                        } else {
                            names.join(", ")
                        }
                    )),
                );
            }
        }
        RetryRule {
            max,
            on: retry.on.clone(),
        }
    }

    /// Checks each argument (`with:`) against the action's argument types, and that every
    /// required one is given.
    fn action_args(
        &mut self,
        spec: &ActionSpec,
        args: &BTreeMap<String, String>,
        p: &str,
        env: &TypeEnv,
    ) -> Vec<(String, Guard)> {
        let name = spec.name;
        let mut typed_args = Vec::new();
        for (arg, expr) in args {
            let ap = format!("{p}/with/{arg}");
            match spec.arg_ty(arg) {
                Some(ty) => typed_args.push((
                    arg.clone(),
                    self.typed(expr, &ap, env, &ty, "the argument's type"),
                )),
                None => {
                    let names: Vec<&str> = spec.args.iter().map(|(n, ..)| *n).collect();
                    self.report_key(
                        "unknown-action",
                        format!("action `{name}` has no argument `{arg}`"),
                        &ap,
                        Some(if names.is_empty() {
                            "it takes no arguments".into()
                        } else {
                            format!("its arguments: {}", names.join(", "))
                        }),
                    );
                }
            }
        }
        for (arg, _, required) in &spec.args {
            if *required && !args.contains_key(*arg) {
                self.report(
                    "unknown-action",
                    format!("action `{name}` needs argument `{arg}`"),
                    p,
                    Some(format!("add `with: {{{arg}: <expression>}}`")),
                );
            }
        }
        typed_args
    }

    /// The messages for the action's failure outcomes (`errors:`); each must name an
    /// outcome the action can report.
    fn action_errors(
        &mut self,
        spec: &ActionSpec,
        errors: &BTreeMap<String, RawMessageRef>,
        p: &str,
        env: &TypeEnv,
    ) -> BTreeMap<String, MessageRef> {
        let name = spec.name;
        let mut error_refs = BTreeMap::new();
        for (outcome, m) in errors {
            let ep = format!("{p}/errors/{outcome}");
            if !spec.outcomes.iter().any(|(o, _)| o == outcome) {
                let names: Vec<&str> = spec.outcomes.iter().map(|(o, _)| *o).collect();
                self.report_key(
                    "unknown-action",
                    format!("action `{name}` has no failure outcome `{outcome}`"),
                    &ep,
                    Some(format!(
                        "its outcomes: {}",
                        if names.is_empty() {
                            "none".to_string()
                        } else {
                            names.join(", ")
                        }
                    )),
                );
                continue;
            }
            error_refs.insert(outcome.clone(), self.message_ref(m, &ep, env));
        }
        error_refs
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{HEADER, found, lower_yaml};
    use crate::contract::model::Performer;
    use crate::contract::registry::BuiltinAction;

    /// An engine state `A` that runs `run` (a YAML flow sequence) and moves on to `B`.
    fn running(run: &str) -> String {
        format!(
            "{HEADER}initial: A\nstates:\n  A:\n    kind: engine\n    run: {run}\n    otherwise: {{to: B}}\n  B: {{kind: terminal}}\n"
        )
    }

    #[test]
    fn run_actions_resolve_and_bind_their_results() {
        let text = running("[prd.load, {action: note.write, bind: plan, with: {state: \"'x'\"}}]");
        let (contract, diagnostics) = lower_yaml(&text);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let contract = contract.unwrap();
        let run = &contract.state(contract.initial).run;
        assert_eq!(run[0].bind, "load");
        assert_eq!(run[0].performer, Performer::Host);
        assert_eq!(run[1].bind, "plan");
        assert_eq!(run[1].args[0].0, "state");
        assert_eq!(run[1].span.start.line, 9);
    }

    #[test]
    fn a_built_in_task_action_cannot_be_run() {
        let text = running("[tasks.require_all_complete]");
        let (contract, diagnostics) = lower_yaml(&text);
        assert_eq!(found(&diagnostics), ["9:11 unknown-action"]);
        assert!(diagnostics[0].message.contains("applied by the engine"));
        // It is still resolved, to the engine.
        let contract = contract.unwrap();
        assert_eq!(
            contract.state(contract.initial).run[0].performer,
            Performer::Engine(BuiltinAction::RequireAllTasksComplete)
        );
    }

    #[test]
    fn unknown_actions_arguments_and_outcomes_are_reported_where_named() {
        let text = running(concat!(
            "[prd.lod, {action: nope}, {action: meta.plan_task, with: {brief: \"'x'\"}},",
            " {action: sandbox.release, errors: {failed: m}}]"
        ));
        let (contract, diagnostics) = lower_yaml(&text);
        assert_eq!(
            found(&diagnostics),
            [
                "9:11 unknown-action",
                "9:29 unknown-action",
                "9:68 unknown-action",
                "9:119 unknown-action",
            ]
        );
        assert_eq!(diagnostics[3].help.as_deref(), Some("its outcomes: none"));
        // Calls of unknown actions are dropped; a bad argument or outcome is left out.
        let contract = contract.unwrap();
        let run = &contract.state(contract.initial).run;
        assert_eq!(run.len(), 2);
        assert!(run[0].args.is_empty() && run[1].errors.is_empty());
    }

    #[test]
    fn an_argument_of_the_wrong_type_and_a_missing_one_are_reported() {
        let text = format!(
            "{HEADER}{}",
            concat!(
                "initial: A\n",
                "states:\n",
                "  A:\n",
                "    kind: engine\n",
                "    otherwise:\n",
                "      to: A\n",
                "      actions:\n",
                "        - {action: tasks.complete, with: {task_id: \"1\"}}\n",
            )
        );
        let (_, diagnostics) = lower_yaml(&text);
        assert_eq!(
            found(&diagnostics),
            ["12:53 guard-type-error", "12:11 unknown-action"]
        );
        assert!(diagnostics[0].message.contains("the argument's type"));
        assert!(
            diagnostics[1]
                .message
                .contains("needs argument `checklist`")
        );
    }
}
