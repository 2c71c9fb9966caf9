//! The control tools: `check_write_target`, `add_explored_files`, `review_changes` and
//! `cleanup_stale_branches`.

use serde_json::{Map, Value, json};

use crate::git;
use crate::server::args::{AddExploredArgs, EmptyArgs, MAX_EXPLORED_PER_CALL, WriteTargetArgs};
use crate::server::checkpoint::{EXPLORED_BUDGET, MAX_PATH_BYTES, paths_len};
use crate::server::host::{check_explorable, seen_paths};
use crate::server::reply::Reply;

use super::{Server, State, git_refusal, no_session, parse};
use crate::machine::response::RenderedMessage;
use crate::server::paths;
use crate::server::write_rule::{Decision, Target, Targets, decide_in_session};

impl Server {
    pub(crate) fn check_write_target(&self, state: &mut State, args: Map<String, Value>) -> Reply {
        let a: WriteTargetArgs = match parse(args) {
            Ok(a) => a,
            Err(reply) => return reply,
        };
        let Some(active) = state.active.as_ref() else {
            return Reply::ok(json!({"allowed": true, "reason": "no active session"}));
        };
        // The same path judgement and rule as the write hook's, so a client without hooks
        // is held to it too.
        let target = paths::judge(&self.root, self.root.path(), &a.file_path);
        let file_path = match &target {
            Target::Inside(rel) | Target::Outside(rel) => rel.clone(),
        };
        match decide_in_session(&active.record, &Targets::Paths(vec![target])) {
            Decision::Allow => Reply::ok(json!({"allowed": true, "file_path": file_path})),
            // The reason is the contract's, in the session's locale (`WriteGate`).
            Decision::Deny(reason) => Reply::refused(&RenderedMessage {
                key: "tool_errors.check_write_target.write_blocked".into(),
                error: Some("write_blocked".into()),
                text: reason,
                user_intervention: false,
            })
            .with("file_path", file_path),
        }
    }

    pub(crate) fn add_explored_files(&self, state: &mut State, args: Map<String, Value>) -> Reply {
        let a: AddExploredArgs = match parse(args) {
            Ok(a) => a,
            Err(reply) => return reply,
        };
        let Some(active) = state.active.as_mut() else {
            return no_session();
        };
        let record = &mut active.record;
        if a.files.is_empty() {
            let m = self.render(
                "tool_errors.add_explored_files.no_files",
                &[],
                &record.instance,
            );
            return Reply::refused(&m);
        }
        if let Err(refusal) = within_limits(&a.files) {
            return refusal;
        }
        let seen = seen_paths(
            &self.root,
            &record.id,
            self.checkpoints.key(),
            &record.host.seen_paths,
        );
        match check_explorable(&self.root, &seen, &a.files, record.host.baseline()) {
            Ok(accepted) => {
                let mut explored = record.host.explored.clone();
                explored.extend(accepted.iter().cloned());
                let bytes = paths_len(&explored);
                if bytes > EXPLORED_BUDGET {
                    // Checked here, so the checkpoint always has room for what enforcement
                    // depends on; nothing was added.
                    return Reply::error(
                        "explored.budget_exceeded",
                        format!(
                            "{} explored files would take {bytes} bytes of the session's checkpoint; the limit is {EXPLORED_BUDGET}: explore only the files the task needs",
                            explored.len()
                        ),
                    )
                    .args(&[("count", json!(explored.len())), ("bytes", json!(bytes))])
                    .with("limit", EXPLORED_BUDGET)
                    .with("explored_count", record.host.explored.len());
                }
                record.host.explored = explored;
                Reply::ok(json!({"added": accepted, "explored_files": record.host.explored}))
            }
            Err(failure) => {
                let key = match failure.outcome.as_str() {
                    "unseen" => "tool_errors.add_explored_files.unseen",
                    "reserved" => "tool_errors.add_explored_files.reserved",
                    _ => "tool_errors.add_explored_files.outside_root",
                };
                let files = failure.args.get("files").cloned().unwrap_or(Value::Null);
                let m = self.render(key, &[("files", files.clone())], &record.instance);
                Reply::refused(&m).with("files", files)
            }
        }
    }

    /// Every change of the session against its baseline (the task branch's base, or
    /// HEAD at the start), with diffs, and which changed files were never explored.
    pub(crate) fn review_changes(&self, state: &mut State, args: Map<String, Value>) -> Reply {
        if let Err(reply) = parse::<EmptyArgs>(args) {
            return reply;
        }
        let Some(active) = state.active.as_ref() else {
            return no_session();
        };
        let host = &active.record.host;
        let Some(baseline) = host.baseline() else {
            let m = self.render(
                "tool_errors.review_changes.task_branch_not_enabled",
                &[],
                &active.record.instance,
            );
            return Reply::refused(&m);
        };
        let root = self.root.path();
        let left_alone = host.left_alone(root);
        let changes = match git::open(root)
            .and_then(|repo| repo.leaving(left_alone.iter().cloned()).changes(baseline))
        {
            Ok(c) => c,
            Err(e) => return git_refusal(&e),
        };
        let unexplored: Vec<&str> = changes
            .iter()
            .map(|c| c.path.as_str())
            .filter(|p| !host.explored.contains(*p) && !host.untouched_user_change(root, p))
            .collect();
        let listed: Vec<Value> = changes
            .iter()
            .map(|c| {
                let (status, from) = match &c.status {
                    git::ChangeStatus::Added => ("added", None),
                    git::ChangeStatus::Modified => ("modified", None),
                    git::ChangeStatus::Deleted => ("deleted", None),
                    git::ChangeStatus::Renamed { from } => ("renamed", Some(from.clone())),
                    git::ChangeStatus::TypeChange => ("type_changed", None),
                };
                json!({
                    "path": c.path,
                    "status": status,
                    "renamed_from": from,
                    "binary": c.binary,
                    "size_bytes": c.size_bytes,
                    "diff": c.diff,
                    "diff_truncated": c.diff_truncated,
                    // Uncommitted before the session started: the user's work, kept.
                    "before_session": host.start_dirty.contains_key(&c.path),
                })
            })
            .collect();
        Reply::ok(json!({
            "task_branch": host.branch.as_ref().map(|b| b.name.clone()),
            "base_branch": baseline.base_branch,
            "base_commit": baseline.base_commit,
            "changes": listed,
            "unexplored": unexplored,
            // The user's uncommitted files this session did not touch: not reviewed, not
            // committed, carried back to the base as they are (said, so nothing is a
            // surprise).
            "left_alone": left_alone,
        }))
    }

    /// Outside a session: deletes every task branch and every saved session.
    pub(crate) fn cleanup_stale_branches(
        &self,
        state: &mut State,
        args: Map<String, Value>,
    ) -> Reply {
        if let Err(reply) = parse::<EmptyArgs>(args) {
            return reply;
        }
        if state.active.as_ref().is_some_and(|a| !a.record.finished()) {
            return Reply::say(
                "session.active",
                "session.active_cleanup",
                "a session is active: finish it or record its outcome before cleaning up",
            );
        }
        // After a restart the unfinished session is only on disk: it is not stale.
        if let Ok(Some(record)) = self.recoverable() {
            return Reply::error(
                "session.recoverable",
                format!(
                    "session {} (phase {}) can still be resumed; resume it, or ask the user before start_session with clean: true, which deletes it with its branches",
                    record.id, record.instance.state
                ),
            )
            .args(&[
                ("session_id", json!(record.id)),
                ("phase", json!(record.instance.state)),
            ]);
        }
        let lock = match self.take_lock(state, "cleaning") {
            Ok(lock) => lock,
            Err(reply) => return reply,
        };
        let outcome = match git::open(self.root.path())
            .and_then(|repo| repo.resolve_stale(git::StaleChoice::Delete))
        {
            Ok(o) => o,
            Err(e) => return git_refusal(&e).with("files", e.files().to_vec()),
        };
        let removed = self.checkpoints.all_ids();
        for id in &removed {
            let _ = self.checkpoints.remove(id);
        }
        let _ = self.checkpoints.set_current(None);
        drop(lock);
        Reply::ok(json!({
            "deleted_branches": outcome.deleted.iter().map(|d| json!({"name": d.name, "unmerged_commits": d.unmerged_commits})).collect::<Vec<_>>(),
            "kept_branches": outcome.kept.iter().map(|k| json!({"name": k.name, "reason": k.reason})).collect::<Vec<_>>(),
            "removed_sessions": removed,
        }))
    }
}

/// Refuses an `add_explored_files` call naming too many files, or a path too long to be
/// a real one, before any file is looked at.
fn within_limits(files: &[String]) -> Result<(), Reply> {
    if files.len() > MAX_EXPLORED_PER_CALL {
        return Err(Reply::error(
            "explored.too_many_files",
            format!(
                "{} files in one call; at most {MAX_EXPLORED_PER_CALL} may be added at once",
                files.len()
            ),
        )
        .args(&[("count", json!(files.len()))])
        .with("limit", MAX_EXPLORED_PER_CALL));
    }
    if let Some(long) = files.iter().find(|f| f.len() > MAX_PATH_BYTES) {
        let start: String = long.chars().take(80).collect();
        return Err(Reply::error(
            "explored.path_too_long",
            format!(
                "a path of {} bytes ({start}...); a path may take at most {MAX_PATH_BYTES}",
                long.len()
            ),
        )
        .args(&[("bytes", json!(long.len())), ("start", json!(start))])
        .with("limit", MAX_PATH_BYTES));
    }
    Ok(())
}
