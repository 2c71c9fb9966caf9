//! The code-intel host's registry: the tools the MCP server offers agents (from their
//! declarations, `server::tools`), the git and evidence actions it performs for the
//! default contract, the facts it observes and the messages it renders on its own.
//! `contract::load` checks a contract against this.

use serde_json::{Value, json};

use super::tools::TOOLS;
use super::words::Words;
use crate::contract::Contract;
use crate::contract::registry::{Registry, host_action, host_message};

/// The server's own texts in the built-in contract's English, for callers without a
/// session's contract (tests, tools used without a server, the hook before it finds a
/// session).
pub fn english() -> Words<'static> {
    builtin_contract().map_or_else(Words::keys_only, |contract| Words::new(contract, "en"))
}

/// The built-in contract resolved against this registry, loaded once per process: the
/// wording of the server's own texts where no session's contract is at hand (the code
/// tools called without a server, the write hook before it finds a session). `None` only
/// if the built-in contract did not load, which its own tests rule out.
pub(crate) fn builtin_contract() -> Option<&'static Contract> {
    static BUILTIN: std::sync::OnceLock<Option<Contract>> = std::sync::OnceLock::new();
    BUILTIN
        .get_or_init(|| {
            let mut sources = crate::source::Sources::default();
            let file = sources.add(
                crate::contract::BUILTIN_NAME,
                crate::contract::BUILTIN_CONTRACT,
            );
            crate::contract::load(&mut sources, file, &[registry()])
                .ok()
                .ok()
        })
        .as_ref()
}

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
    // Every message the server renders itself, with the placeholders it provides. Besides
    // these, a refusal's text may use `{details}` (the server's English detail) and the
    // reply's own fields (`server::reply::Reply::localize`). A test below checks that
    // each one is rendered by the server, and that the server renders no other.
    let messages = [
        ("tool_errors.review_changes.task_branch_not_enabled", vec![]),
        ("tool_errors.check_write_target.write_blocked", vec![]),
        (
            "tool_errors.check_write_target.write_phase_blocked",
            vec!["phase"],
        ),
        ("tool_errors.add_explored_files.no_files", vec![]),
        ("session.checkpoint_recovery", vec![]),
        (
            "tool_errors.gate.not_allowed",
            vec!["tool", "phase", "allowed"],
        ),
        ("tool_errors.add_explored_files.unseen", vec!["files"]),
        ("tool_errors.add_explored_files.outside_root", vec!["files"]),
        ("tool_errors.add_explored_files.reserved", vec!["files"]),
        ("session.no_active_session", vec![]),
        ("hints.phase_blocked_hint", vec![]),
        ("warnings.truncation_warning", vec![]),
        ("worktree.unexplored_changes", vec!["files"]),
        (
            "worktree.changed_without_writes",
            vec!["phase", "files", "restore"],
        ),
        ("worktree.uncommitted_changed", vec!["files"]),
        // The server's own refusals.
        ("session.active", vec!["session_id", "phase"]),
        ("session.active_cleanup", vec![]),
        ("session.recoverable", vec!["session_id", "phase"]),
        ("session.nothing_to_resume", vec![]),
        ("session.request_too_long", vec!["bytes", "limit"]),
        ("session.locked", vec!["session", "client", "pid"]),
        ("session.locked_unnamed", vec![]),
        ("session.lock_failed", vec!["details"]),
        ("session.invalid_compaction_count", vec!["value"]),
        ("session.not_started_unsaved", vec!["details"]),
        ("session.submission_unsaved", vec!["details"]),
        ("session.unsaved", vec!["details"]),
        ("session.outcome_unsaved", vec!["details"]),
        ("session.wrong_contract", vec!["found", "expected"]),
        ("session.engine_loop", vec!["limit"]),
        ("session.bad_start", vec!["details"]),
        ("invalid_arguments", vec!["details"]),
        ("unknown_tool", vec!["tool"]),
        ("arguments.too_large", vec!["field", "limit", "details"]),
        ("explored.budget_exceeded", vec!["count", "bytes", "limit"]),
        ("explored.too_many_files", vec!["count", "limit"]),
        ("explored.path_too_long", vec!["bytes", "start", "limit"]),
        ("code_tools.failed", vec!["tool", "error", "details"]),
        ("code_tools.rebuild_failed", vec!["details"]),
        // The code tools' own notes (`words::Words`).
        ("code_tools.note.text_matches", vec!["why"]),
        ("code_tools.note.index_building", vec!["done", "total"]),
        ("code_tools.note.index_unavailable", vec!["reason"]),
        ("code_tools.note.files_instead", vec!["why", "path"]),
        ("code_tools.note.freshness", vec!["seconds"]),
        ("code_tools.note.no_index", vec![]),
        ("code_tools.note.partial_index", vec![]),
        ("code_tools.note.in_memory", vec![]),
        ("code_tools.budget.paged", vec!["bytes"]),
        ("code_tools.budget.ranked", vec!["bytes"]),
        ("code_tools.impact_more", vec![]),
        ("code_tools.note.words_only", vec![]),
        ("code_tools.note.semantic_failed", vec!["error"]),
        (
            "semantic.note.no_model",
            vec!["model_variable", "runtime_variable"],
        ),
        ("semantic.note.model_failed", vec!["details"]),
        ("semantic.note.no_vectors_yet", vec![]),
        ("semantic.note.vectors_failed", vec!["key", "details"]),
        ("semantic.note.partial_vectors", vec!["embedded", "chunks"]),
        ("session.rebuild_with_resume", vec![]),
        ("notes.branch_kept", vec![]),
        ("server.internal_failure", vec!["tool"]),
        ("progress.index_building", vec!["done", "total"]),
        ("notes.task_branch", vec![]),
        ("notes.task_branch_carried", vec!["count"]),
        ("checkpoint.call_not_saved", vec!["tool", "details"]),
        ("checkpoint.io", vec!["path", "reason", "details"]),
        ("checkpoint.corrupt", vec!["path", "reason"]),
        ("checkpoint.version", vec!["path", "found", "expected"]),
        ("checkpoint.tampered", vec!["path"]),
        ("checkpoint.too_large", vec!["bytes", "limit"]),
        ("checkpoint.no_key_dir", vec![]),
        // Git refusals (`core::git_refusal` gives each the values of its failure).
        ("git.not_a_repository", vec!["path"]),
        ("git.bare_repository", vec!["path"]),
        ("git.not_repository_root", vec!["path", "workdir"]),
        ("git.unborn_branch", vec!["branch"]),
        ("git.detached_head", vec!["commit"]),
        ("git.operation_in_progress", vec!["operation"]),
        ("git.invalid_session_id", vec!["session_id"]),
        ("git.unsupported_base_name", vec!["branch"]),
        ("git.on_other_task_branch", vec!["branch"]),
        ("git.task_branch_exists", vec!["branch"]),
        ("git.not_on_task_branch", vec!["branch", "current"]),
        ("git.no_task_branch_checked_out", vec!["branch"]),
        ("git.base_branch_missing", vec!["branch"]),
        ("git.checked_out_elsewhere", vec!["branch", "path"]),
        ("git.uncommitted", vec!["files"]),
        ("git.merge_conflict", vec!["files"]),
        ("git.would_overwrite", vec!["files"]),
        ("git.unknown_reviewed_paths", vec!["files"]),
        ("git.contradictory_review", vec!["files"]),
        ("git.prepared_stale", vec!["commit", "head"]),
        ("git.failed", vec!["operation", "error"]),
        ("git.io", vec!["operation", "path", "error"]),
        // The write hooks' refusals (precomputed in the session's locale, filled in by
        // the hook: `session_record::WriteGate::texts`).
        ("hook.session_unreadable", vec!["reason"]),
        ("hook.unknown_targets", vec!["reason"]),
        ("hook.outside_root", vec!["files"]),
        ("hook.reserved", vec!["files"]),
        ("hook.shell_opaque", vec!["writes"]),
        ("hook.shell_unreadable", vec!["reason", "refusal"]),
        ("hook.shell_broad", vec!["writes", "refusal"]),
        ("hook.shell_writes", vec!["files", "refusal"]),
        ("hook.shell_refused", vec!["reason"]),
        // Denials before any session is found, in config.yml's locale (`client::hook::before_session`).
        ("hook.failed", vec!["client", "what"]),
        ("hook.input_unreadable", vec!["reason"]),
        ("hook.no_working_directory", vec![]),
        // What the shell scanner describes rather than names (`shell::DESCRIPTIONS`).
        ("hook.writes.run_by_other", vec!["what"]),
        ("hook.writes.from_input", vec!["what"]),
        ("hook.writes.archive", vec!["what"]),
        ("hook.writes.find_delete", vec!["what"]),
        ("hook.writes.other_repository", vec!["what"]),
        ("hook.writes.git", vec!["what"]),
        ("hook.writes.unnamed", vec!["what"]),
        ("hook.writes.after_cd", vec!["what"]),
        ("hook.writes.formatter", vec!["what"]),
        ("hook.unreadable.too_long", vec!["what"]),
        ("hook.unreadable.too_deep", vec!["what"]),
        ("hook.unreadable.shells_too_deep", vec!["what"]),
        ("hook.unreadable.no_target", vec!["what"]),
        ("hook.unreadable.not_closed", vec!["what"]),
    ];
    Registry::new(
        "code-intel",
        actions,
        // The tools and which of them are ungated follow from their declarations.
        TOOLS.iter().map(|t| t.name).collect(),
        TOOLS.iter().filter(|t| t.ungated).map(|t| t.name).collect(),
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

#[cfg(test)]
mod tests {
    //! The registry's messages and the server's code agree both ways: every message the
    //! registry declares is rendered somewhere in `server` (so no declared key is dead),
    //! and every message the server renders by name is declared (so `lint` reports a
    //! contract that lacks it).

    use std::collections::BTreeSet;
    use std::path::Path;

    use super::registry;

    /// Every `.rs` file under `dir`, but this one.
    fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs")
                && !path.ends_with("server/registry.rs")
                && let Ok(text) = std::fs::read_to_string(&path)
            {
                out.push((path.display().to_string(), text));
            }
        }
    }

    /// The server's sources, and those of the modules whose message keys its registry
    /// declares: the git library (`GitError::key`), the clients' hook and the shell
    /// scanner (the texts it words before a session and the writes it describes).
    fn server_sources() -> Vec<(String, String)> {
        let mut out = Vec::new();
        for dir in ["src/server", "src/git", "src/client/hook", "src/shell"] {
            sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join(dir), &mut out);
        }
        assert!(out.len() > 10, "the server's sources were not found");
        out
    }

    /// The string literal that starts `text` (after whitespace), if one does.
    fn literal(text: &str) -> Option<&str> {
        let rest = text.trim_start().strip_prefix('"')?;
        rest.find('"').map(|end| &rest[..end])
    }

    /// The text after the first argument of a call whose `(` was just passed.
    fn after_first_argument(text: &str) -> Option<&str> {
        let mut depth = 0i32;
        for (i, c) in text.char_indices() {
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' if depth == 0 => return None,
                ')' | ']' | '}' => depth -= 1,
                ',' if depth == 0 => return Some(&text[i + 1..]),
                _ => {}
            }
        }
        None
    }

    /// The message keys the server names where it renders one: `Reply::error(KEY`,
    /// `Reply::say(_, KEY`, `self.render(KEY`, `message(contract, KEY`, `words.note(KEY`.
    fn rendered_keys(text: &str) -> BTreeSet<String> {
        let mut keys = BTreeSet::new();
        for (pattern, skip_first) in [
            ("Reply::error(", false),
            ("self.render(", false),
            ("Reply::say(", true),
            ("message(\n", true),
            ("message(contract,", false),
            ("message(&self.contract,", false),
            ("words.note(", false),
        ] {
            for (at, _) in text.match_indices(pattern) {
                // `role_message(` names an engine role, not a key.
                if text[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
                {
                    continue;
                }
                let rest = &text[at + pattern.len()..];
                let rest = if skip_first {
                    match after_first_argument(rest) {
                        Some(r) => r,
                        None => continue,
                    }
                } else {
                    rest
                };
                if let Some(key) = literal(rest) {
                    keys.insert(key.to_string());
                }
            }
        }
        keys
    }

    #[test]
    fn every_declared_message_is_rendered_by_the_server() {
        let sources = server_sources();
        let dead: Vec<&str> = registry()
            .messages
            .iter()
            .map(|m| m.key)
            .filter(|key| {
                let quoted = format!("\"{key}\"");
                !sources.iter().any(|(_, text)| text.contains(&quoted))
            })
            .collect();
        assert!(
            dead.is_empty(),
            "the registry declares messages the server never renders: {dead:?}"
        );
    }

    #[test]
    fn every_message_the_server_renders_is_declared() {
        let declared: BTreeSet<&str> = registry().messages.iter().map(|m| m.key).collect();
        let mut undeclared = Vec::new();
        for (path, text) in server_sources() {
            for key in rendered_keys(&text) {
                if !declared.contains(key.as_str()) {
                    undeclared.push(format!("{path}: {key}"));
                }
            }
        }
        assert!(
            undeclared.is_empty(),
            "the server renders messages its registry does not declare: {undeclared:?}"
        );
    }

    #[test]
    fn a_contract_without_a_message_the_server_renders_fails_lint() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("contracts/phase_contract.yml");
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let removed = "  session.active:\n";
        let start = text
            .find(removed)
            .expect("the built-in contract has session.active");
        let end = text[start + removed.len()..]
            .find("\n  session.")
            .map_or(text.len(), |e| start + removed.len() + e + 1);
        let without = format!("{}{}", &text[..start], &text[end..]);
        let mut sources = crate::source::Sources::default();
        let file = sources.add("phase_contract.yml", without);
        let loaded = crate::lint::load_and_lint(&mut sources, file, &[registry()]);
        assert!(
            loaded
                .diagnostics
                .iter()
                .any(|d| d.code == "undefined-message" && d.message.contains("session.active")),
            "{:?}",
            loaded.diagnostics
        );
    }

    #[test]
    fn the_scanner_finds_keys_however_the_call_is_wrapped() {
        let keys = rendered_keys(
            "Reply::error(\n    \"a.b\",\n    x)\nReply::say(e.key(), \"c.d\", y)\nself.render(\"e.f\", &[])\nmessage(\n    contract,\n    \"g.h\",\n    &args)\nrole_message(\n    contract,\n    \"role\",\n    &args)\nwords.note(\"i.j\", &[])\nwith_words.note(\"k.l\", &[])",
        );
        let expected: BTreeSet<String> = ["a.b", "c.d", "e.f", "g.h", "i.j"]
            .map(str::to_string)
            .into();
        assert_eq!(keys, expected);
    }
}
