//! Where each message key is used and which placeholder values each use provides.

use std::collections::BTreeSet;

use crate::contract::Contract;
use crate::contract::model::{ActionCall, MessageRef};
use crate::contract::roles::{FIELD_MESSAGE_ARGS, role_args};
use crate::source::Span;

#[derive(Debug, Clone)]
pub(crate) struct Usage {
    pub key: String,
    /// The placeholders this use fills in.
    pub provided: BTreeSet<String>,
    /// Where the use is written; `None` for uses by the host's own code.
    pub span: Option<Span>,
    /// Who uses it, for messages: "engine role `payload_invalid`", "the host".
    pub user: String,
}

fn from_ref(r: &MessageRef, extra: &[&str], user: String) -> Usage {
    let mut provided: BTreeSet<String> = r.args.iter().map(|(n, _)| n.clone()).collect();
    provided.extend(extra.iter().map(|s| (*s).to_string()));
    Usage {
        key: r.key.clone(),
        provided,
        span: Some(r.span),
        user,
    }
}

fn action_usages(contract: &Contract, call: &ActionCall, out: &mut Vec<Usage>) {
    let outcomes = contract
        .registry
        .action(&call.name)
        .map(|s| s.outcomes.clone())
        .unwrap_or_default();
    for (outcome, r) in &call.errors {
        let args: Vec<&str> = outcomes
            .iter()
            .find(|(o, _)| o == outcome)
            .map(|(_, a)| a.clone())
            .unwrap_or_default();
        out.push(from_ref(
            r,
            &args,
            format!("outcome `{outcome}` of action `{}`", call.name),
        ));
    }
}

/// Every use of every message key.
pub(crate) fn collect(contract: &Contract) -> Vec<Usage> {
    let mut out = Vec::new();
    for (role, key) in &contract.engine_messages {
        let provided = role_args(role)
            .unwrap_or(&[])
            .iter()
            .map(|s| (*s).to_string())
            .collect();
        out.push(Usage {
            key: key.clone(),
            provided,
            span: None,
            user: format!("engine role `{role}`"),
        });
    }
    for (field, key) in &contract.field_messages {
        out.push(Usage {
            key: key.clone(),
            provided: FIELD_MESSAGE_ARGS
                .iter()
                .map(|s| (*s).to_string())
                .collect(),
            span: None,
            user: format!("field message for `{field}`"),
        });
    }
    for m in &contract.registry.messages {
        out.push(Usage {
            key: m.key.to_string(),
            provided: m.args.iter().map(|s| (*s).to_string()).collect(),
            span: None,
            user: format!("host `{}`", contract.host),
        });
    }
    if let Some(cancel) = &contract.on_cancel
        && let Some(m) = &cancel.message
    {
        out.push(from_ref(m, &[], "the cancel path".to_string()));
    }
    for a in &contract.finally {
        action_usages(contract, a, &mut out);
    }
    for counter in &contract.counters {
        for r in &counter.on_limit {
            if let Some(m) = &r.message {
                out.push(from_ref(
                    m,
                    &[],
                    format!("limit of counter `{}`", counter.name),
                ));
            }
            for a in &r.actions {
                action_usages(contract, a, &mut out);
            }
        }
    }
    for state in &contract.states {
        for (field, key) in &state.field_messages {
            out.push(Usage {
                key: key.clone(),
                provided: FIELD_MESSAGE_ARGS
                    .iter()
                    .map(|s| (*s).to_string())
                    .collect(),
                span: Some(state.span),
                user: format!("field message for `{field}` of `{}`", state.id),
            });
        }
        for c in &state.checks {
            out.push(from_ref(
                &c.message,
                &[],
                format!("a check of `{}`", state.id),
            ));
        }
        for a in &state.run {
            action_usages(contract, a, &mut out);
        }
        for t in state.all_transitions() {
            if let Some(m) = &t.message {
                out.push(from_ref(m, &[], format!("a transition of `{}`", state.id)));
            }
            for a in &t.actions {
                action_usages(contract, a, &mut out);
            }
        }
    }
    out
}
