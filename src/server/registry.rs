//! The code-intel host's registry: the tools the MCP server offers agents, the git and
//! evidence actions it performs for the default contract, the facts it observes and the
//! messages it renders on its own. `contract::load` checks a contract against this.

use serde_json::{Value, json};

use crate::contract::registry::{Registry, host_action, host_message};

fn string() -> Value {
    json!({"type": "string"})
}

/// Everything the code-intel host implements.
pub fn registry() -> Registry {
    let actions = vec![
        host_action(
            "exploration.record",
            "remember files as explored (the files the agent may write); each existing file must have appeared in a tool's output or a read of this session",
            vec![(
                "files",
                json!({"type": "array", "items": {"type": "string"}}),
                true,
            )],
            &[
                ("unseen", &["files"]),
                ("outside_root", &["files"]),
                ("reserved", &["files"]),
            ],
        ),
        host_action(
            "changes.require_explored",
            "check that every file changed against the session's baseline was explored or added",
            vec![],
            &[("unexplored", &["files"]), ("failed", &["details"])],
        ),
        host_action(
            "git.resolve_stale_branches",
            "delete all stale llm_task_* branches, merge the current one and delete the rest, or continue on the current branch",
            vec![(
                "choice",
                json!({"type": "string", "enum": ["delete", "merge", "continue"]}),
                true,
            )],
            &[("failed", &["choice", "errors"])],
        ),
        host_action(
            "git.ensure_task_branch",
            "create the session's task branch unless one is active (idempotent)",
            vec![],
            &[("failed", &["details"])],
        ),
        host_action(
            "checklist.verify_evidence",
            "check that every `done` item's evidence cites lines inside the repository that this task changed and that hold a real implementation",
            vec![
                ("task_id", string(), true),
                ("checklist", json!({"type": "array"}), true),
            ],
            &[
                ("invalid_format", &["evidence", "item"]),
                ("outside_root", &["evidence", "item", "file_path"]),
                ("file_not_found", &["evidence", "item", "file_path"]),
                (
                    "line_out_of_range",
                    &["evidence", "item", "file_path", "line", "total"],
                ),
                (
                    "not_changed",
                    &["evidence", "item", "file_path", "changed_ranges"],
                ),
                ("empty_impl", &["evidence", "item", "file_path"]),
            ],
        ),
        host_action(
            "git.commit",
            "commit the task branch's changes, reverting only the files reviewed as `discard`",
            vec![
                ("message", string(), true),
                ("reviewed_files", json!({"type": "array"}), false),
            ],
            &[
                ("no_branch", &[]),
                ("failed", &["details"]),
                ("unexplored", &["files"]),
                ("review_incomplete", &["missing", "unknown"]),
                ("discard_refused", &["files"]),
            ],
        ),
        host_action(
            "git.prepare_commit",
            "stage the reviewed changes and remember the message; the commit happens after quality review",
            vec![
                ("message", string(), true),
                ("reviewed_files", json!({"type": "array"}), false),
            ],
            &[
                ("no_branch", &[]),
                ("failed", &["details"]),
                ("unexplored", &["files"]),
                ("review_incomplete", &["missing", "unknown"]),
                ("discard_refused", &["files"]),
            ],
        ),
        host_action(
            "git.commit_prepared",
            "commit what `git.prepare_commit` staged",
            vec![],
            &[("failed", &["details"])],
        ),
        host_action(
            "git.discard_prepared",
            "forget a prepared commit so planning can start again",
            vec![],
            &[],
        ),
        host_action(
            "git.merge",
            "merge the task branch into its base branch and delete it; refuses while a prepared commit is not yet committed",
            vec![],
            &[
                ("no_branch", &[]),
                ("uncommitted", &[]),
                ("conflict", &["files"]),
                ("failed", &["details"]),
            ],
        ),
    ];
    let messages = [
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
        (
            "tool_errors.gate.not_allowed",
            vec!["tool", "phase", "allowed"],
        ),
        ("tool_errors.add_explored_files.unseen", vec!["files"]),
        ("tool_errors.add_explored_files.outside_root", vec!["files"]),
        ("tool_errors.add_explored_files.reserved", vec!["files"]),
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
        ("worktree.unexplored_changes", vec!["files"]),
        (
            "worktree.changed_without_writes",
            vec!["phase", "files", "restore"],
        ),
        ("worktree.uncommitted_changed", vec!["files"]),
    ];
    Registry::new(
        "code-intel",
        actions,
        vec![
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
            "record_outcome",
        ],
        // Index maintenance and context notes may run in any phase: they change neither
        // the code nor the flow.
        vec![
            "start_session",
            "get_session_status",
            "record_outcome",
            "sync_index",
            "update_context",
        ],
        vec![
            ("stale_branches_exist", json!({"type": "boolean"})),
            ("semantic_available", json!({"type": "boolean"})),
            ("quality_review_prompt_exists", json!({"type": "boolean"})),
            ("task_branch_active", json!({"type": "boolean"})),
            ("task_branch", json!({"type": ["string", "null"]})),
            ("base_branch", json!({"type": ["string", "null"]})),
        ],
        messages
            .iter()
            .map(|(key, args)| host_message(key, args.as_slice()))
            .collect(),
    )
}
