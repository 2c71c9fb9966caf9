//! Multiverse's registries: the side effects its task lifecycle
//! (`contracts/multiverse_task.yml`) asks the scheduler for, and those its chat turn
//! (`contracts/multiverse_chat.yml`) asks the chat for. The contracts decide every
//! transition; these actions are what the host does about one (the node's status, a
//! retry's time, a backlog item; the execution state, the checked patch applied).
//! `contract::load` checks each contract against its registry.

use serde_json::{Value, json};

use crate::contract::registry::{Registry, host_action, host_message};

/// The node statuses the lifecycle may set (`model::NodeStatus`, snake case).
pub(crate) const NODE_STATUSES: &[&str] = &[
    "planned",
    "in_progress",
    "implemented",
    "verified",
    "blocked",
    "obsolete",
];

/// The backlog kinds the lifecycle may file (`model::BacklogKind`).
pub(crate) const BACKLOG_KINDS: &[&str] = &["FAILURE", "QUESTION", "BLOCKER"];

fn string() -> Value {
    json!({"type": "string"})
}

/// The one text the scheduler words itself through the lifecycle contract: the reason a
/// task blocked by a failed dependency shows (in the task's locale).
pub(crate) const DEPENDENCY_FAILED: (&str, &[&str]) =
    ("task.reason.dependency_failed", &["dependencies"]);

/// Everything the multiverse host implements for its task lifecycle. No tools or facts:
/// the scheduler submits events, it is not an agent.
pub(crate) fn registry() -> Registry {
    let actions = vec![
        host_action(
            "node.set",
            "set the task's node status (what its work achieved, which dependents read), with the reason a blocked node shows",
            vec![
                (
                    "status",
                    json!({"type": "string", "enum": NODE_STATUSES}),
                    true,
                ),
                ("reason", string(), false),
            ],
            &[],
        ),
        host_action(
            "retry.schedule",
            "set the time the task is retried: now plus backoff_base_sec·backoff_factorⁿ seconds, at most backoff_cap_sec, n the attempts that failed before this one (`lifecycle::backoff`)",
            vec![(
                "previous_failures",
                json!({"type": "integer", "minimum": 0}),
                true,
            )],
            &[],
        ),
        host_action(
            "backlog.add",
            "file a backlog item for a person about this task: FAILURE after its last attempt, QUESTION when it needs an answer",
            vec![
                (
                    "kind",
                    json!({"type": "string", "enum": BACKLOG_KINDS}),
                    true,
                ),
                ("reason", string(), false),
            ],
            &[],
        ),
    ];
    let messages = vec![host_message(DEPENDENCY_FAILED.0, DEPENDENCY_FAILED.1)];
    Registry::new("multiverse", actions, vec![], vec![], vec![], messages)
}

/// The execution states a chat turn may set (`model::ExecutionState`).
pub(crate) const EXECUTION_STATES: &[&str] = &["IDLE", "RUNNING", "PAUSED"];

/// The lines of a reply that the chat turn renders itself, one per change of an applied
/// patch, with their placeholders: the contract defines their text in every locale.
pub(crate) const CHAT_LINES: &[(&str, &[&str])] = &[
    ("chat.line.created", &["count", "tasks"]),
    ("chat.line.updated", &["count", "tasks"]),
    ("chat.line.moved", &["count", "tasks"]),
    ("chat.line.deleted", &["count", "tasks"]),
    ("chat.line.dependency_removed", &["task", "dependency"]),
    ("chat.line.conflict", &["file", "tasks", "reason"]),
    ("chat.line.question", &["question"]),
];

/// Everything the chat host implements for a chat turn.
pub(crate) fn chat_registry() -> Registry {
    let actions = vec![
        host_action(
            "execution.set",
            "set the workspace's execution state (IDLE stops and cancels what runs, PAUSED starts nothing new, RUNNING schedules ready tasks)",
            vec![(
                "state",
                json!({"type": "string", "enum": EXECUTION_STATES}),
                true,
            )],
            &[],
        ),
        host_action(
            "plan.apply",
            "replace the plan with the checked patch's result and open a QUESTION backlog item for each of its questions, in one journal entry",
            vec![],
            &[],
        ),
    ];
    let messages = CHAT_LINES
        .iter()
        .map(|(key, args)| host_message(key, args))
        .collect();
    Registry::new("multiverse-chat", actions, vec![], vec![], vec![], messages)
}
