//! Counters: their limits and `on_limit` redirects, and resolving the counter names that
//! transitions increment and reset.
//!
//! Counters are lowered in two passes. The first builds them without redirects, because
//! the type environment lists the counters and a redirect's guard needs that environment;
//! the second lowers the redirects once the environment exists.

use std::collections::BTreeMap;

use serde_json::Value;

use super::lowerer::Lowerer;
use crate::contract::model::{Counter, CounterId, LimitValue};
use crate::contract::raw::{CounterScope, Limit, RawContract, ValueType};
use crate::guard::check::TypeEnv;

impl Lowerer<'_> {
    /// The counters with their limits but no redirects yet.
    pub(super) fn counters(
        &mut self,
        raw: &RawContract,
        params: &BTreeMap<String, (ValueType, Value)>,
    ) -> Vec<Counter> {
        let counters: Vec<Counter> = raw
            .counters
            .iter()
            .map(|(name, c)| {
                let limit = match &c.limit {
                    Limit::Fixed(n) => LimitValue::Fixed(*n),
                    Limit::Param(p) => {
                        LimitValue::Param(p.strip_prefix("params.").unwrap_or(p).to_string())
                    }
                };
                Counter {
                    name: name.clone(),
                    scope: c.scope,
                    limit,
                    on_limit: Vec::new(),
                    span: self.key_span(&format!("/counters/{name}")),
                    limit_span: self.value_span(&format!("/counters/{name}/limit")),
                }
            })
            .collect();
        for c in &counters {
            if let LimitValue::Param(p) = &c.limit
                && let Some((ValueType::Int, default)) = params.get(p)
                && default.as_u64().is_none_or(|n| u32::try_from(n).is_err())
            {
                self.report(
                    "schema-violation",
                    format!(
                        "param `{p}` is the limit of counter `{}`, but its default {default} is not a count",
                        c.name
                    ),
                    &format!("/params/{p}/default"),
                    Some(format!("a limit is a whole number from 0 to {}", u32::MAX)),
                );
            }
            if let LimitValue::Param(p) = &c.limit
                && !matches!(params.get(p), Some((ValueType::Int, _)))
            {
                let ptr = format!("/counters/{}/limit", c.name);
                self.report(
                    "guard-unknown-path",
                    format!("counter limit names `params.{p}`, which is not an int param"),
                    &ptr,
                    Some("declare it under `params:` with `type: int`".into()),
                );
            }
        }
        counters
    }

    /// Lowers each counter's `on_limit` redirects into `counters` (in the order of `raw`).
    pub(super) fn counter_redirects(
        &mut self,
        raw: &RawContract,
        counters: &mut [Counter],
        env: &TypeEnv,
    ) {
        for (i, (name, c)) in raw.counters.iter().enumerate() {
            let redirects = c
                .on_limit
                .iter()
                .enumerate()
                .filter_map(|(j, r)| {
                    self.redirect(r, &format!("/counters/{name}/on_limit/{j}"), env)
                })
                .collect();
            counters[i].on_limit = redirects;
        }
    }

    /// Resolves a counter name at `pointer`. With `scope`, the counter must have that
    /// scope: `increment` takes session counters, `increment_tasks` task counters.
    pub(super) fn counter_id(
        &mut self,
        name: &str,
        pointer: &str,
        scope: Option<CounterScope>,
        counters: &[Counter],
    ) -> Option<CounterId> {
        let Some(id) = self.counter_index.get(name).copied() else {
            let names: Vec<&str> = counters.iter().map(|c| c.name.as_str()).collect();
            self.report_key(
                "unknown-counter",
                format!("counter `{name}` is not declared"),
                pointer,
                Some(format!("declared counters: {}", names.join(", "))),
            );
            return None;
        };
        if let Some(scope) = scope
            && counters[id.0].scope != scope
        {
            let (want, key) = match scope {
                CounterScope::Session => ("session", "increment_tasks"),
                CounterScope::Task => ("task", "increment"),
            };
            self.report_key(
                "unknown-counter",
                format!("counter `{name}` is not a {want} counter"),
                pointer,
                Some(format!("use `{key}` for it")),
            );
            return None;
        }
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{HEADER, check, found, lower_yaml};
    use crate::contract::model::LimitValue;

    #[test]
    fn counter_limits_and_redirects_are_resolved() {
        let text = format!(
            "{HEADER}{}",
            concat!(
                "params: {max: {type: int, default: 3}}\n",
                "counters:\n",
                "  tries: {scope: session, limit: params.max, on_limit: [{when: \"counters.tries > 1\", to: B}]}\n",
                "  edits: {scope: task, limit: 2}\n",
                "initial: A\n",
                "states:\n",
                "  A: {kind: engine, otherwise: {to: B, increment: [tries], increment_tasks: {edits: \"[]\"}, reset: [edits]}}\n",
                "  B: {kind: terminal}\n",
            )
        );
        let (contract, diagnostics) = lower_yaml(&text);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let contract = contract.unwrap();
        // Counters are indexed in name order.
        let [edits, tries] = &contract.counters[..] else {
            panic!("two counters")
        };
        assert!(matches!(&tries.limit, LimitValue::Param(p) if p == "max"));
        assert!(matches!(edits.limit, LimitValue::Fixed(2)));
        assert_eq!(tries.on_limit.len(), 1);
        assert_eq!(tries.on_limit[0].to.0, 1);
        assert!(tries.on_limit[0].guard.as_ref().unwrap().expr.is_some());
        assert_eq!(tries.span.start.line, 7);
        let t = contract.state(contract.initial).otherwise.as_ref().unwrap();
        assert_eq!(t.increment.iter().map(|c| c.0).collect::<Vec<_>>(), [1]);
        assert_eq!(t.increment_tasks[0].0.0, 0);
        assert_eq!(t.reset.iter().map(|c| c.0).collect::<Vec<_>>(), [0]);
    }

    #[test]
    fn a_limit_must_name_an_int_param() {
        let text = format!(
            "{HEADER}{}",
            concat!(
                "params: {name: {type: string, default: x}}\n",
                "counters:\n",
                "  a: {scope: session, limit: params.name}\n",
                "  b: {scope: session, limit: params.nope}\n",
                "initial: A\n",
                "states: {A: {kind: terminal}}\n",
            )
        );
        assert_eq!(
            check(&text),
            ["7:30 guard-unknown-path", "8:30 guard-unknown-path"]
        );
    }

    #[test]
    fn a_param_limit_defaults_to_a_count() {
        let text = format!(
            "{HEADER}{}",
            concat!(
                "params:\n",
                "  low: {type: int, default: -1}\n",
                "  high: {type: int, default: 4294967296}\n",
                "  fine: {type: int, default: 4294967295}\n",
                "counters:\n",
                "  a: {scope: session, limit: params.low}\n",
                "  b: {scope: session, limit: params.high}\n",
                "  c: {scope: session, limit: params.fine}\n",
                "initial: A\n",
                "states: {A: {kind: terminal}}\n",
            )
        );
        let (_, diagnostics) = lower_yaml(&text);
        assert_eq!(
            found(&diagnostics),
            ["6:29 schema-violation", "7:30 schema-violation"]
        );
        assert!(diagnostics[1].message.contains("default 4294967296"));
        assert!(
            diagnostics[1]
                .help
                .as_deref()
                .unwrap()
                .contains("4294967295")
        );
    }

    #[test]
    fn unknown_counters_and_counters_of_the_wrong_scope_are_reported_at_their_names() {
        let text = format!(
            "{HEADER}{}",
            concat!(
                "counters:\n",
                "  s: {scope: session, limit: 3}\n",
                "  t: {scope: task, limit: 3}\n",
                "initial: A\n",
                "states:\n",
                "  A:\n",
                "    kind: engine\n",
                "    otherwise:\n",
                "      to: A\n",
                "      increment: [retries, t]\n",
                "      reset: [tries, s, t]\n",
                "      increment_tasks: {s: \"[]\"}\n",
            )
        );
        let (contract, diagnostics) = lower_yaml(&text);
        assert_eq!(
            found(&diagnostics),
            [
                "14:19 unknown-counter",
                "14:28 unknown-counter",
                "15:15 unknown-counter",
                "16:25 unknown-counter",
            ]
        );
        assert!(diagnostics[0].help.as_deref() == Some("declared counters: s, t"));
        assert!(diagnostics[1].message.contains("not a session counter"));
        assert!(diagnostics[3].message.contains("not a task counter"));
        // `reset` takes counters of either scope.
        let contract = contract.unwrap();
        let t = contract.state(contract.initial).otherwise.as_ref().unwrap();
        assert_eq!(t.reset.len(), 2);
        assert!(t.increment.is_empty() && t.increment_tasks.is_empty());
    }

    #[test]
    fn a_redirect_to_an_unknown_state_is_dropped() {
        let text = format!(
            "{HEADER}{}",
            concat!(
                "counters:\n",
                "  s: {scope: session, limit: 3, on_limit: [{to: NOWHERE}]}\n",
                "initial: A\n",
                "states: {A: {kind: terminal}}\n",
            )
        );
        let (contract, diagnostics) = lower_yaml(&text);
        assert_eq!(found(&diagnostics), ["6:49 unknown-transition-target"]);
        assert!(contract.unwrap().counters[0].on_limit.is_empty());
    }
}
