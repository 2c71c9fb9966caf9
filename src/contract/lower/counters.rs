//! Counters: their limits and `on_limit` redirects, and resolving the counter names that
//! transitions increment and reset.
//!
//! Counters are lowered in two passes. The first builds them without redirects, because
//! the type environment lists the counters and a redirect's guard needs that environment;
//! the second lowers the redirects once the environment exists.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Lowerer;
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
                }
            })
            .collect();
        for c in &counters {
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
