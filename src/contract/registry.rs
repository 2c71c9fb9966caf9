//! Host registries: the actions, tools, facts and host-owned messages a contract may name.
//!
//! The engine only *emits* actions; a host executes them. Each host (the code-intel MCP
//! server, AgentRunner) publishes what it implements here, so `lint` can check a
//! contract's names and argument types before anything runs. Built-in task actions are
//! executed by the engine itself and exist for every host.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::guard::types::Ty;

/// Who carries out an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Executor {
    /// The engine applies it to the session state as part of the pure step.
    Engine,
    /// The host performs the side effect after the step; failures undo the transition.
    Host,
}

#[derive(Debug, Clone)]
pub struct ActionSpec {
    pub name: &'static str,
    pub executor: Executor,
    pub summary: &'static str,
    /// Arguments: name, JSON Schema of the value, required.
    pub args: Vec<(&'static str, Value, bool)>,
    /// Failure outcomes the action can report, with the placeholders its message gets.
    pub outcomes: Vec<(&'static str, Vec<&'static str>)>,
    /// The JSON Schema of its result, for actions run by engine states.
    pub result: Option<Value>,
    /// What the action does to the pending-task supply, for the cycle analysis.
    pub tasks: TaskEffect,
}

/// How an action changes the number of pending tasks. A loop whose every turn consumes a
/// pending task and that never refills the supply is bounded by the task count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskEffect {
    #[default]
    None,
    /// Completes one pending task or refuses the step.
    Consumes,
    /// Replaces the task list, which may add pending tasks.
    Refills,
}

impl ActionSpec {
    pub fn result_ty(&self) -> Ty {
        self.result
            .as_ref()
            .map_or(Ty::Any, |s| Ty::from_schema(s, &BTreeMap::new()))
    }

    pub fn arg_ty(&self, name: &str) -> Option<Ty> {
        self.args
            .iter()
            .find(|(n, ..)| *n == name)
            .map(|(_, s, _)| Ty::from_schema(s, &BTreeMap::new()))
    }
}

/// A message key a host uses on its own (tool errors, session messages), with its placeholders.
#[derive(Debug, Clone)]
pub struct HostMessage {
    pub key: &'static str,
    pub args: Vec<&'static str>,
}

#[derive(Debug, Clone)]
pub struct Registry {
    pub host: &'static str,
    pub actions: Vec<ActionSpec>,
    pub tools: Vec<&'static str>,
    /// Facts the host observes and passes with each event, with their JSON Schema type.
    pub facts: Vec<(&'static str, Value)>,
    pub messages: Vec<HostMessage>,
}

impl Registry {
    /// The registry for a contract's `host`, if one exists.
    pub fn for_host(host: &str) -> Option<Registry> {
        match host {
            "code-intel" => Some(code_intel()),
            "agent-runner" => Some(agent_runner()),
            _ => None,
        }
    }

    pub const HOSTS: &'static [&'static str] = &["code-intel", "agent-runner"];

    pub fn action(&self, name: &str) -> Option<&ActionSpec> {
        self.actions.iter().find(|a| a.name == name)
    }

    pub fn facts_ty(&self) -> Ty {
        Ty::object(
            self.facts
                .iter()
                .map(|(n, s)| ((*n).to_string(), Ty::from_schema(s, &BTreeMap::new()))),
        )
    }
}

fn string() -> Value {
    json!({"type": "string"})
}

fn string_list() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

/// Outcomes of `tasks.complete`, which checks the v1.16 checklist structure purely;
/// file-level evidence checks need the file system and belong to the host.
const CHECKLIST_OUTCOMES: &[(&str, &[&str])] = &[
    ("no_tasks", &[]),
    ("unknown_task", &["task_id"]),
    ("already_completed", &["task_id"]),
    ("wrong_order", &["expected_task", "task_id"]),
    ("checklist_required", &["task_id"]),
    ("checklist_items_mismatch", &["task_id"]),
    ("checklist_item_pending", &["item"]),
    ("checklist_evidence_required", &["item"]),
    ("checklist_evidence_format_invalid", &["evidence"]),
    ("checklist_reason_required", &["item"]),
];

fn outcomes(list: &[(&'static str, &[&'static str])]) -> Vec<(&'static str, Vec<&'static str>)> {
    list.iter().map(|(n, a)| (*n, a.to_vec())).collect()
}

/// Actions every host has: the engine applies them to the task list.
pub fn builtin_actions() -> Vec<ActionSpec> {
    vec![
        ActionSpec {
            name: "tasks.register",
            executor: Executor::Engine,
            summary: "replace the task list with the submitted complete list (idempotent); per-task counters are kept for ids that already existed",
            args: vec![(
                "tasks",
                json!({"type": "array", "items": {"type": "object"}}),
                true,
            )],
            tasks: TaskEffect::Refills,
            outcomes: outcomes(&[
                ("empty_tasks", &[]),
                ("duplicate_task_ids", &[]),
                ("no_pending_tasks", &[]),
                ("checklist_required", &["task_id"]),
            ]),
            result: None,
        },
        ActionSpec {
            name: "tasks.complete",
            executor: Executor::Engine,
            summary: "mark the first pending task completed after checking the reported checklist against the registered one",
            args: vec![
                ("task_id", string(), true),
                (
                    "checklist",
                    json!({"type": "array", "items": {"type": "object"}}),
                    true,
                ),
            ],
            outcomes: outcomes(CHECKLIST_OUTCOMES),
            result: None,
            tasks: TaskEffect::Consumes,
        },
        ActionSpec {
            name: "tasks.require_all_complete",
            executor: Executor::Engine,
            summary: "refuse unless tasks exist and none is pending",
            args: vec![],
            outcomes: outcomes(&[
                ("no_tasks_registered", &[]),
                ("incomplete_tasks", &["count"]),
            ]),
            result: None,
            tasks: TaskEffect::None,
        },
    ]
}

fn host_action(
    name: &'static str,
    summary: &'static str,
    args: Vec<(&'static str, Value, bool)>,
    outs: &[(&'static str, &[&'static str])],
) -> ActionSpec {
    ActionSpec {
        name,
        executor: Executor::Host,
        summary,
        args,
        outcomes: outcomes(outs),
        result: None,
        tasks: TaskEffect::None,
    }
}

fn engine_state_action(
    name: &'static str,
    summary: &'static str,
    args: Vec<(&'static str, Value, bool)>,
    result: Value,
) -> ActionSpec {
    ActionSpec {
        name,
        executor: Executor::Host,
        summary,
        args,
        outcomes: vec![],
        result: Some(result),
        tasks: TaskEffect::None,
    }
}

fn code_intel() -> Registry {
    let mut actions = builtin_actions();
    actions.extend([
        host_action(
            "git.resolve_stale_branches",
            "delete all stale llm_task_* branches, merge the current one and delete the rest, or continue on the current branch",
            vec![("choice", json!({"type": "string", "enum": ["delete", "merge", "continue"]}), true)],
            &[("failed", &["choice", "errors"])],
        ),
        host_action("git.ensure_task_branch", "create the session's task branch unless one is active (idempotent)", vec![], &[("failed", &["details"])]),
        host_action(
            "checklist.verify_evidence",
            "check that every `done` item's evidence names an existing file and line range with a real implementation",
            vec![("task_id", string(), true), ("checklist", json!({"type": "array"}), true)],
            &[("file_not_found", &["file_path"]), ("line_out_of_range", &["line", "total"]), ("empty_impl", &["evidence"])],
        ),
        host_action(
            "git.commit",
            "commit the task branch's changes, reverting only the files reviewed as `discard`",
            vec![("message", string(), true), ("reviewed_files", json!({"type": "array"}), false)],
            &[("no_branch", &[]), ("failed", &["details"])],
        ),
        host_action(
            "git.prepare_commit",
            "stage the reviewed changes and remember the message; the commit happens after quality review",
            vec![("message", string(), true), ("reviewed_files", json!({"type": "array"}), false)],
            &[("no_branch", &[]), ("failed", &["details"])],
        ),
        host_action("git.commit_prepared", "commit what `git.prepare_commit` staged", vec![], &[("failed", &["details"])]),
        host_action("git.discard_prepared", "forget a prepared commit so planning can start again", vec![], &[]),
        host_action(
            "git.merge",
            "merge the task branch into its base branch and delete it; refuses while a prepared commit is not yet committed",
            vec![],
            &[("no_branch", &[]), ("uncommitted", &[]), ("failed", &["details"])],
        ),
    ]);
    let tool_errors = [
        ("tool_errors.review_changes.phase_blocked", vec!["phase"]),
        ("tool_errors.review_changes.task_branch_not_enabled", vec![]),
        (
            "tool_errors.review_changes.branch_manager_not_found",
            vec![],
        ),
        ("tool_errors.check_write_target.write_blocked", vec![]),
        (
            "tool_errors.check_write_target.write_phase_blocked",
            vec!["phase"],
        ),
        (
            "tool_errors.add_explored_files.phase_mismatch",
            vec!["phase"],
        ),
        ("tool_errors.add_explored_files.no_files", vec![]),
        ("tool_errors.query.no_pattern", vec![]),
        ("tool_errors.query.no_symbol", vec![]),
        ("tool_errors.query.no_file_path", vec![]),
        ("tool_errors.query.chromadb_not_available", vec![]),
        ("tool_errors.query.unknown_tool", vec!["tool"]),
        ("tool_errors.query.semantic_search_failed", vec!["error"]),
        (
            "tool_errors.start_session.branch_setup_failed",
            vec!["error"],
        ),
        (
            "tool_errors.start_session.branch_setup_exception",
            vec!["error"],
        ),
        ("session.checkpoint_recovery", vec![]),
        ("session.no_active_session", vec![]),
        ("session.no_active_session_short", vec![]),
        ("session.checkpoint_restore_failed", vec![]),
        ("session.invalid_data", vec!["error"]),
        ("hints.phase_blocked_hint", vec![]),
        ("query_frame_hints.target_feature_missing", vec![]),
        ("query_frame_hints.observed_issue_missing", vec![]),
        ("query_frame_hints.trigger_condition_missing", vec![]),
        ("query_frame_hints.desired_action_missing", vec![]),
        ("warnings.truncation_warning", vec![]),
    ];
    Registry {
        host: "code-intel",
        actions,
        tools: vec![
            "start_session",
            "submit_phase",
            "get_session_status",
            "search_text",
            "search_files",
            "find_definitions",
            "find_references",
            "get_symbols",
            "analyze_structure",
            "get_function_at_line",
            "query",
            "semantic_search",
            "fetch_chunk_detail",
            "analyze_impact",
            "check_write_target",
            "add_explored_files",
            "review_changes",
            "cleanup_stale_branches",
            "sync_index",
            "update_context",
        ],
        facts: vec![
            ("stale_branches_exist", json!({"type": "boolean"})),
            ("quality_review_prompt_exists", json!({"type": "boolean"})),
            ("task_branch_active", json!({"type": "boolean"})),
            ("task_branch", json!({"type": ["string", "null"]})),
            ("base_branch", json!({"type": ["string", "null"]})),
        ],
        messages: tool_errors
            .into_iter()
            .map(|(key, args)| HostMessage { key, args })
            .collect(),
    }
}

fn agent_runner() -> Registry {
    let mut actions = builtin_actions();
    actions.extend([
        engine_state_action(
            "prd.load",
            "read the task's PRD from its text or path",
            vec![],
            json!({"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}, "error": {"type": "string"}}}),
        ),
        engine_state_action(
            "meta.plan_task",
            "ask the planner LLM for acceptance criteria",
            vec![("prd", string(), false)],
            json!({"type": "object", "required": ["ok"], "properties": {
                "ok": {"type": "boolean"},
                "acceptance_criteria": string_list(),
                "error": {"type": "string"}
            }}),
        ),
        engine_state_action(
            "meta.next_action",
            "ask the planner LLM what to do next",
            vec![],
            json!({"type": "object", "required": ["ok"], "properties": {
                "ok": {"type": "boolean"},
                "action": {"type": "string", "enum": ["run_worker", "mark_complete", "ask_human", "abort"]},
                "error": {"type": "string"}
            }}),
        ),
        engine_state_action(
            "worker.run",
            "run the worker CLI agent in the sandbox with the planner's instructions",
            vec![],
            json!({"type": "object", "required": ["ok"], "properties": {
                "ok": {"type": "boolean"},
                "exit_code": {"type": "integer"},
                "summary": {"type": "string"}
            }}),
        ),
        engine_state_action(
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
    ]);
    Registry {
        host: "agent-runner",
        actions,
        tools: vec![],
        facts: vec![],
        messages: vec![],
    }
}
