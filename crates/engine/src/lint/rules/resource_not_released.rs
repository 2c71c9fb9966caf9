//! `resource-not-released`
//!
//! ## What it does
//! Flags an action that acquires a resource (its registry entry says so: a sandbox
//! container, a lock) when no action in the contract's `finally` list releases it.
//!
//! ## Why is this bad?
//! `finally` is the only place that runs on every exit path: success, failure, a loop
//! limit, a failed action, a cancel. Releasing anywhere else misses some of them. The
//! original AgentRunner stopped its container in a deferred call that a kill skipped and
//! never removed it, so containers piled up.
//!
//! ## Example
//! ```yaml
//! PROVISION:
//!   kind: engine
//!   run: [{action: env.start}]   # its registry entry says it acquires `env`
//! # no `finally` action releases `env`
//! ```
//! Use instead: `finally: [env.stop]`, an action whose entry says it releases `env`.

use crate::contract::Contract;
use crate::contract::model::ActionCall;
use crate::diagnostic::Diagnostic;

pub(crate) fn check(contract: &Contract) -> Vec<Diagnostic> {
    let released: Vec<&str> = contract
        .finally
        .iter()
        .filter_map(|call| contract.registry.action(&call.name)?.releases)
        .collect();
    let mut out = Vec::new();
    for call in every_call(contract) {
        let Some(resource) = contract
            .registry
            .action(&call.name)
            .and_then(|spec| spec.acquires)
        else {
            continue;
        };
        if released.contains(&resource) {
            continue;
        }
        let releasers: Vec<&str> = contract
            .registry
            .actions
            .iter()
            .filter(|a| a.releases == Some(resource))
            .map(|a| a.name)
            .collect();
        let help = match releasers.as_slice() {
            [] => format!("host `{}` has no action that releases it", contract.host),
            names => format!("add `finally: [{}]`", names.join(", ")),
        };
        out.push(
            Diagnostic::new(
                "resource-not-released",
                format!(
                    "`{}` acquires the {resource}, but no `finally` action releases it",
                    call.name
                ),
                Some(call.span),
            )
            .with_help(help),
        );
    }
    out
}

/// Every action call of the flow: engine states' `run`, transitions' and limit redirects'
/// `actions`.
fn every_call(contract: &Contract) -> impl Iterator<Item = &ActionCall> {
    let states = contract.states.iter().flat_map(|s| {
        s.run
            .iter()
            .chain(s.all_transitions().flat_map(|t| t.actions.iter()))
    });
    let redirects = contract
        .counters
        .iter()
        .flat_map(|c| c.on_limit.iter().flat_map(|r| r.actions.iter()));
    states.chain(redirects)
}
