//! AgentRunner's registry: the planner, worker and note actions its task contract runs.
//! `contract::load` checks `contracts/agent_runner_task.yml` against this.

use serde_json::{Value, json};

use crate::contract::registry::{Registry, host_action, result_action};

fn string() -> Value {
    json!({"type": "string"})
}

fn string_list() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

/// Everything the AgentRunner host implements.
pub fn registry() -> Registry {
    let actions = vec![
        result_action(
            "prd.load",
            "read the task's PRD from its text or path",
            vec![],
            json!({"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}, "error": {"type": "string"}}}),
        ),
        result_action(
            "meta.plan_task",
            "ask the planner LLM for acceptance criteria",
            vec![("prd", string(), false)],
            json!({"type": "object", "required": ["ok"], "properties": {
                "ok": {"type": "boolean"},
                "acceptance_criteria": string_list(),
                "error": {"type": "string"}
            }}),
        ),
        result_action(
            "meta.next_action",
            "ask the planner LLM what to do next",
            vec![],
            json!({"type": "object", "required": ["ok"], "properties": {
                "ok": {"type": "boolean"},
                "action": {"type": "string", "enum": ["run_worker", "mark_complete", "ask_human", "abort"]},
                "error": {"type": "string"}
            }}),
        ),
        result_action(
            "worker.run",
            "run the worker CLI agent in the sandbox with the planner's instructions",
            vec![],
            json!({"type": "object", "required": ["ok"], "properties": {
                "ok": {"type": "boolean"},
                "exit_code": {"type": "integer"},
                "summary": {"type": "string"}
            }}),
        ),
        result_action(
            "meta.completion_assessment",
            "ask the planner LLM whether every acceptance criterion is met",
            vec![],
            json!({"type": "object", "required": ["ok"], "properties": {
                "ok": {"type": "boolean"},
                "all_criteria_satisfied": {"type": "boolean"},
                "error": {"type": "string"}
            }}),
        ),
        host_action("note.write", "write the task note", vec![], &[]),
    ];
    Registry::new("agent-runner", actions, vec![], vec![], vec![], vec![])
}
