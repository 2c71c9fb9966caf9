//! What a host offers a contract: the shape of a [`Registry`] (actions, tools, facts and
//! host-owned messages) and the engine's own built-in task actions.
//!
//! The engine only *emits* host actions; a host performs them. Each host publishes its
//! registry next to its own code (`server::registry`, `runner::registry`) and passes it
//! to `contract::load`, so names and argument types are checked before anything runs.
//! The built-in task actions ([`BuiltinAction`]) are applied by the engine itself and
//! exist for every host.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::guard::types::Ty;

#[derive(Debug, Clone)]
pub struct ActionSpec {
    pub name: &'static str,
    pub summary: &'static str,
    /// Arguments: name, JSON Schema of the value, required.
    pub args: Vec<(&'static str, Value, bool)>,
    /// Failure outcomes the action can report, with the placeholders its message gets.
    pub outcomes: Vec<(&'static str, Vec<&'static str>)>,
    /// The JSON Schema of its result, for actions an engine state runs (`run:`) and whose
    /// result its guards read as `result.BIND`.
    pub result: Option<Value>,
    /// What the action does to the pending-task supply, for the cycle analysis.
    pub tasks: TaskEffect,
    /// A resource the action acquires (a sandbox, a lock) that something must release.
    pub acquires: Option<&'static str>,
    /// A resource the action releases; lint wants it among the contract's `finally`
    /// actions for every resource the flow acquires.
    pub releases: Option<&'static str>,
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
    /// This action acquires `resource`.
    #[must_use]
    pub fn acquiring(mut self, resource: &'static str) -> ActionSpec {
        self.acquires = Some(resource);
        self
    }

    /// This action releases `resource`.
    #[must_use]
    pub fn releasing(mut self, resource: &'static str) -> ActionSpec {
        self.releases = Some(resource);
        self
    }

    pub(crate) fn result_ty(&self) -> Ty {
        self.result
            .as_ref()
            .map_or(Ty::Any, |s| Ty::from_schema(s, &BTreeMap::new()))
    }

    pub(crate) fn arg_ty(&self, name: &str) -> Option<Ty> {
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

/// Everything one host implements.
#[derive(Debug, Clone)]
pub struct Registry {
    pub host: &'static str,
    /// The built-in task actions followed by the host's own.
    pub actions: Vec<ActionSpec>,
    pub tools: Vec<&'static str>,
    /// Tools callable in every state (session control), whatever `allowed_tools` says.
    pub ungated_tools: Vec<&'static str>,
    /// Facts the host observes and passes with each event, with their JSON Schema type.
    pub facts: Vec<(&'static str, Value)>,
    pub messages: Vec<HostMessage>,
}

impl Registry {
    /// A host's registry: its own actions come after the built-in task actions, which
    /// every host has.
    pub fn new(
        host: &'static str,
        actions: Vec<ActionSpec>,
        tools: Vec<&'static str>,
        ungated_tools: Vec<&'static str>,
        facts: Vec<(&'static str, Value)>,
        messages: Vec<HostMessage>,
    ) -> Registry {
        let mut all: Vec<ActionSpec> = BuiltinAction::ALL.iter().map(|b| b.spec()).collect();
        all.extend(actions);
        Registry {
            host,
            actions: all,
            tools,
            ungated_tools,
            facts,
            messages,
        }
    }

    /// The registry as Markdown, for `docs/hosts.md` (generated; a test keeps it fresh):
    /// the host's own actions (the built-in task actions are documented once, in
    /// `docs/contract-format.md`), tools, facts and host messages.
    pub fn to_markdown(&self) -> String {
        let builtin: Vec<&str> = BuiltinAction::ALL.iter().map(|b| b.name()).collect();
        let mut out = format!("## `{}`\n\n### Actions\n\n", self.host);
        out.push_str("| Action | What it does | Arguments | Failure outcomes (placeholders) | Result |\n|---|---|---|---|---|\n");
        for a in self.actions.iter().filter(|a| !builtin.contains(&a.name)) {
            let args: Vec<String> = a
                .args
                .iter()
                .map(|(n, schema, required)| {
                    let optional = if *required { "" } else { ", optional" };
                    format!("`{n}` ({}{optional})", schema_text(schema))
                })
                .collect();
            let outcomes: Vec<String> = a
                .outcomes
                .iter()
                .map(|(o, placeholders)| {
                    if placeholders.is_empty() {
                        format!("`{o}`")
                    } else {
                        let p: Vec<String> =
                            placeholders.iter().map(|p| format!("`{p}`")).collect();
                        format!("`{o}` ({})", p.join(", "))
                    }
                })
                .collect();
            let or_dash = |v: Vec<String>| {
                if v.is_empty() {
                    "—".to_string()
                } else {
                    v.join(", ")
                }
            };
            let result = a
                .result
                .as_ref()
                .map_or("—".to_string(), |r| format!("`{r}`"));
            out.push_str(&format!(
                "| `{}` | {} | {} | {} | {} |\n",
                a.name,
                a.summary,
                or_dash(args),
                or_dash(outcomes),
                result.replace('|', "\\|")
            ));
        }
        let list = |items: &[&str]| -> String {
            if items.is_empty() {
                "none".to_string()
            } else {
                items
                    .iter()
                    .map(|t| format!("`{t}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        out.push_str(&format!(
            "\n### Tools\n\n{}.\n\nCallable in every state (session control): {}.\n",
            list(&self.tools),
            list(&self.ungated_tools)
        ));
        out.push_str("\n### Facts\n\n");
        if self.facts.is_empty() {
            out.push_str("None.\n");
        } else {
            out.push_str("| Fact | Type |\n|---|---|\n");
            for (name, schema) in &self.facts {
                out.push_str(&format!("| `{name}` | {} |\n", schema_text(schema)));
            }
        }
        out.push_str("\n### Host messages\n\nThe host renders these keys itself, so a contract for it must define them:\n\n");
        if self.messages.is_empty() {
            out.push_str("None.\n");
        }
        for m in &self.messages {
            if m.args.is_empty() {
                out.push_str(&format!("- `{}`\n", m.key));
            } else {
                let p: Vec<String> = m.args.iter().map(|a| format!("`{a}`")).collect();
                out.push_str(&format!("- `{}` ({})\n", m.key, p.join(", ")));
            }
        }
        out
    }

    pub fn action(&self, name: &str) -> Option<&ActionSpec> {
        self.actions.iter().find(|a| a.name == name)
    }

    pub(crate) fn facts_ty(&self) -> Ty {
        Ty::object(
            self.facts
                .iter()
                .map(|(n, s)| ((*n).to_string(), Ty::from_schema(s, &BTreeMap::new()))),
        )
    }
}

/// A JSON Schema in a few words: its type(s), or its allowed values.
fn schema_text(schema: &Value) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let v: Vec<String> = values.iter().map(ToString::to_string).collect();
        return v.join(" \\| ");
    }
    match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "any".to_string(),
    }
}

/// Builds a host action that an external state's transition runs after the step;
/// `outcomes` are the failures it can report, with their message placeholders.
pub fn host_action(
    name: &'static str,
    summary: &'static str,
    args: Vec<(&'static str, Value, bool)>,
    outcomes: &[(&'static str, &[&'static str])],
) -> ActionSpec {
    ActionSpec {
        name,
        summary,
        args,
        outcomes: outcome_list(outcomes),
        result: None,
        tasks: TaskEffect::None,
        acquires: None,
        releases: None,
    }
}

/// Builds a host action that an engine state runs (`run:`) for its `result`.
pub fn result_action(
    name: &'static str,
    summary: &'static str,
    args: Vec<(&'static str, Value, bool)>,
    result: Value,
) -> ActionSpec {
    ActionSpec {
        name,
        summary,
        args,
        outcomes: vec![],
        result: Some(result),
        tasks: TaskEffect::None,
        acquires: None,
        releases: None,
    }
}

/// A host message key and its placeholders.
pub fn host_message(key: &'static str, args: &[&'static str]) -> HostMessage {
    HostMessage {
        key,
        args: args.to_vec(),
    }
}

fn string() -> Value {
    json!({"type": "string"})
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

fn outcome_list(
    list: &[(&'static str, &[&'static str])],
) -> Vec<(&'static str, Vec<&'static str>)> {
    list.iter().map(|(n, a)| (*n, a.to_vec())).collect()
}

/// The actions the engine itself applies to the session's task list, for every host.
/// Lowering resolves their names, so the step function never dispatches on a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuiltinAction {
    /// `tasks.register`
    RegisterTasks,
    /// `tasks.complete`
    CompleteTask,
    /// `tasks.require_all_complete`
    RequireAllTasksComplete,
}

impl BuiltinAction {
    pub const ALL: [BuiltinAction; 3] = [
        BuiltinAction::RegisterTasks,
        BuiltinAction::CompleteTask,
        BuiltinAction::RequireAllTasksComplete,
    ];

    /// The name contracts use.
    pub fn name(self) -> &'static str {
        match self {
            BuiltinAction::RegisterTasks => "tasks.register",
            BuiltinAction::CompleteTask => "tasks.complete",
            BuiltinAction::RequireAllTasksComplete => "tasks.require_all_complete",
        }
    }

    pub fn from_name(name: &str) -> Option<BuiltinAction> {
        BuiltinAction::ALL.into_iter().find(|b| b.name() == name)
    }

    /// Its arguments, failure outcomes and effect on the task supply.
    pub(crate) fn spec(self) -> ActionSpec {
        match self {
            BuiltinAction::RegisterTasks => ActionSpec {
                name: self.name(),
                summary: "replace the task list with the submitted complete list (idempotent): new tasks enter pending, tasks completed by the flow are kept as they were unless reopened as pending, per-task counters are kept for ids that already existed",
                args: vec![(
                    "tasks",
                    json!({"type": "array", "items": {"type": "object"}}),
                    true,
                )],
                tasks: TaskEffect::Refills,
                acquires: None,
                releases: None,
                outcomes: outcome_list(&[
                    ("empty_tasks", &[]),
                    ("duplicate_task_ids", &[]),
                    ("no_pending_tasks", &[]),
                    ("checklist_required", &["task_id"]),
                    ("completion_not_earned", &["task_id"]),
                ]),
                result: None,
            },
            BuiltinAction::CompleteTask => ActionSpec {
                name: self.name(),
                summary: "mark the first pending task completed after checking the reported checklist against the registered one",
                args: vec![
                    ("task_id", string(), true),
                    (
                        "checklist",
                        json!({"type": "array", "items": {"type": "object"}}),
                        true,
                    ),
                ],
                outcomes: outcome_list(CHECKLIST_OUTCOMES),
                result: None,
                tasks: TaskEffect::Consumes,
                acquires: None,
                releases: None,
            },
            BuiltinAction::RequireAllTasksComplete => ActionSpec {
                name: self.name(),
                summary: "refuse unless tasks exist and none is pending",
                args: vec![],
                outcomes: outcome_list(&[
                    ("no_tasks_registered", &[]),
                    ("incomplete_tasks", &["count"]),
                ]),
                result: None,
                tasks: TaskEffect::None,
                acquires: None,
                releases: None,
            },
        }
    }
}

/// For the engine's own tests: hosts shaped like two of the programs' (the programs'
/// real registries live in their crates, which this one may not know): `agent-runner`
/// with a few engine-run and host actions, and `code-intel` with a submit tool.
#[cfg(test)]
pub(crate) fn test_hosts() -> Vec<Registry> {
    let object = serde_json::json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    let agent_runner = Registry::new(
        "agent-runner",
        vec![
            result_action("prd.load", "read the PRD", vec![], object.clone()),
            result_action("meta.plan_task", "ask the planner", vec![], object),
            host_action(
                "note.write",
                "write the note",
                vec![("state", serde_json::json!({"type": "string"}), true)],
                &[],
            ),
            host_action("sandbox.release", "release the sandbox", vec![], &[]),
        ],
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    let code_intel = Registry::new(
        "code-intel",
        Vec::new(),
        vec!["submit_phase"],
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    vec![agent_runner, code_intel]
}
