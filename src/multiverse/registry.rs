//! Multiverse's registry: the side effects its task lifecycle
//! (`contracts/multiverse_task.yml`) asks the scheduler for. The contract decides every
//! transition; these actions are what the host does about one (the node's status, a
//! retry's time, a backlog item). `contract::load` checks the contract against this.

use serde_json::{Value, json};

use crate::contract::registry::{Registry, host_action};

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

/// Everything the multiverse host implements for its task lifecycle. No tools, facts or
/// host messages: the scheduler submits events, it is not an agent.
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
    Registry::new("multiverse", actions, vec![], vec![], vec![], vec![])
}
