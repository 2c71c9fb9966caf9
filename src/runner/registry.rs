//! AgentRunner's registry: the planner, sandbox, worker, test and note actions its task
//! contract runs. `contract::load` checks `contracts/agent_runner_task.yml` against this.

use serde_json::{Value, json};

use crate::contract::registry::{ActionSpec, Registry, host_action, result_action};

fn string() -> Value {
    json!({"type": "string"})
}

fn string_list() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

/// The failures of a planner call a contract may retry: a reply that does not follow
/// the protocol (fed back to the planner on the next attempt), or a provider that did
/// not answer.
const PLANNER_OUTCOMES: &[(&str, &[&str])] = &[
    ("invalid_response", &["details"]),
    ("provider_error", &["details"]),
];

/// A result action with failure outcomes.
fn planner_action(name: &'static str, summary: &'static str, result: Value) -> ActionSpec {
    let mut spec = result_action(name, summary, vec![], result);
    spec.outcomes = PLANNER_OUTCOMES
        .iter()
        .map(|(n, a)| (*n, a.to_vec()))
        .collect();
    spec
}

fn ok_result(extra: Value) -> Value {
    let mut properties = json!({"ok": {"type": "boolean"}, "error": {"type": "string"}});
    if let (Some(p), Some(e)) = (properties.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    json!({"type": "object", "required": ["ok"], "properties": properties})
}

/// Everything the AgentRunner host implements.
pub(crate) fn registry() -> Registry {
    let actions = vec![
        result_action(
            "prd.load",
            "read the task's PRD from its text or file",
            vec![],
            ok_result(json!({})),
        ),
        result_action(
            "preflight.check",
            "check what the worker needs before any planner spend: docker and the image (or the local CLI), the CLI's credentials",
            vec![],
            ok_result(json!({})),
        ),
        result_action(
            "sandbox.start",
            "start the task's sandbox (a named, labelled container with the repository mounted)",
            vec![],
            ok_result(json!({})),
        )
        .acquiring("sandbox"),
        host_action(
            "sandbox.release",
            "stop and remove the task's sandbox; safe when it never started",
            vec![],
            &[],
        )
        .releasing("sandbox"),
        planner_action(
            "meta.plan_task",
            "ask the planner for acceptance criteria",
            ok_result(json!({"acceptance_criteria": string_list()})),
        ),
        planner_action(
            "meta.next_action",
            "ask the planner what to do next, showing it the last runs and tests",
            ok_result(json!({
                "action": {"type": "string", "enum": ["run_worker", "mark_complete", "ask_human", "abort"]},
                "question": string()
            })),
        ),
        host_action(
            "worker.run",
            "run the worker CLI agent in the sandbox with the planner's instructions, recording exit code, summary and files changed",
            vec![],
            &[("sandbox_error", &["details"])],
        ),
        result_action(
            "tests.run",
            "run the task's test command in a fresh sandbox, the worker's frozen",
            vec![],
            ok_result(json!({
                "ran": {"type": "boolean"},
                "passed": {"type": "boolean"},
                "exit_code": {"type": "integer"}
            })),
        ),
        planner_action(
            "meta.completion_assessment",
            "ask the planner whether every acceptance criterion is met, showing it the criteria, runs and test result",
            ok_result(json!({"all_criteria_satisfied": {"type": "boolean"}})),
        ),
        host_action(
            "note.write",
            "write the Task Note and the result",
            vec![("state", string(), true)],
            &[],
        ),
    ];
    Registry::new("agent-runner", actions, vec![], vec![], vec![], vec![])
}
