//! Tool gating and tool evidence, as pure functions: which tools an agent may call in the
//! current state, and whether a submission's `tools_used` report matches what the host saw
//! it call. The host only enforces the answers.

use std::collections::BTreeSet;

use serde_json::Value;

use super::instance::Instance;
use crate::contract::Contract;
use crate::contract::model::{State, StateKind};

/// Whether a tool call is allowed now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolGate {
    Allowed,
    /// Not a tool of the contract's host.
    Unknown,
    /// The instance's state is not in the contract (a checkpoint of an older contract):
    /// only session tools are allowed.
    UnknownState {
        state: String,
    },
    /// A tool of the host, but not one the current state allows.
    NotAllowedHere {
        state: String,
        phase: String,
        allowed: Vec<String>,
    },
}

/// Whether `tool` may be called in the instance's current state. The host's ungated
/// (session-control) tools always are. In an external state, so are the submit tool and
/// the state's `allowed_tools` and `required_tools`. States that do not wait for an agent
/// (engine, terminal) allow nothing else.
pub fn gate(contract: &Contract, instance: &Instance, tool: &str) -> ToolGate {
    let registry = &contract.registry;
    let is_call = contract.call.as_deref() == Some(tool);
    if registry.ungated_tools.contains(&tool) {
        return ToolGate::Allowed;
    }
    if !is_call && !registry.tools.contains(&tool) {
        return ToolGate::Unknown;
    }
    let Some(state) = contract
        .state_id(&instance.state)
        .map(|id| contract.state(id))
    else {
        return ToolGate::UnknownState {
            state: instance.state.clone(),
        };
    };
    let waits_for_agent = state.kind == StateKind::External;
    let listed = |list: &[String]| list.iter().any(|t| t == tool);
    if waits_for_agent && (is_call || listed(&state.allowed_tools) || listed(&state.required_tools))
    {
        return ToolGate::Allowed;
    }
    let mut allowed: Vec<String> = Vec::new();
    if waits_for_agent {
        allowed.extend(state.allowed_tools.iter().cloned());
        for t in &state.required_tools {
            if !allowed.contains(t) {
                allowed.push(t.clone());
            }
        }
    }
    ToolGate::NotAllowedHere {
        state: state.id.clone(),
        phase: state.phase.clone(),
        allowed,
    }
}

/// A mismatch between a state's tool requirements, what the host saw the agent call, and
/// what the agent reported in `tools_used`. Each maps to an engine message role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EvidenceProblem {
    /// Required tools the agent did not call (`required_tools_not_used`).
    NotUsed(Vec<String>),
    /// Required tools missing from `tools_used` (`required_tools_not_reported`).
    NotReported(Vec<String>),
    /// Tools reported in `tools_used` that the host never saw called
    /// (`tools_reported_not_called`): the report is evidence, not a claim.
    ReportedNotCalled(Vec<String>),
    /// Fewer distinct host tools called than the state asks (`min_distinct_tools`).
    TooFewTools { min: usize, count: usize },
}

/// Checks a submission's tool evidence, in the order the problems are reported.
pub(crate) fn check_evidence(
    contract: &Contract,
    state: &State,
    payload: &Value,
    tools_called: &[String],
) -> Result<(), EvidenceProblem> {
    // Only the host's own tools count: never the submit tool or session control, which
    // say nothing about the work.
    let registry = &contract.registry;
    let is_host_tool = |t: &str| {
        contract.call.as_deref() != Some(t)
            && !registry.ungated_tools.contains(&t)
            && registry.tools.contains(&t)
    };
    let called: BTreeSet<&str> = tools_called
        .iter()
        .map(String::as_str)
        .filter(|t| is_host_tool(t))
        .collect();
    let reported: BTreeSet<&str> = payload
        .get("tools_used")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let required_missing_from = |seen: &BTreeSet<&str>| -> Vec<String> {
        state
            .required_tools
            .iter()
            .filter(|t| !seen.contains(t.as_str()))
            .cloned()
            .collect()
    };
    let not_used = required_missing_from(&called);
    if !not_used.is_empty() {
        return Err(EvidenceProblem::NotUsed(not_used));
    }
    let not_reported = required_missing_from(&reported);
    if !not_reported.is_empty() {
        return Err(EvidenceProblem::NotReported(not_reported));
    }
    let claimed: Vec<String> = reported
        .iter()
        .filter(|t| is_host_tool(t) && !called.contains(*t))
        .map(|t| (*t).to_string())
        .collect();
    if !claimed.is_empty() {
        return Err(EvidenceProblem::ReportedNotCalled(claimed));
    }
    let min = state.min_distinct_tools as usize;
    if called.len() < min {
        return Err(EvidenceProblem::TooFewTools {
            min,
            count: called.len(),
        });
    }
    Ok(())
}
