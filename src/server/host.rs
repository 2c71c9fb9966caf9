//! The code-intel host's side of the session driver: the facts it observes and the
//! actions of its registry (`server::registry`) performed for real — exploration records,
//! git task branches, evidence checks. Each action either succeeds or fails with one of
//! its registry outcomes; nothing is reported done that was not done.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use serde_json::{Map, Value, json};

use super::checkpoint::SealKey;
use super::evidence;
use super::paths;
use super::reads::read_paths;
use super::session_record::HostState;
use super::write_rule::Target;
use crate::codeintel::root::Root;
use crate::git::{self, GitError, StaleChoice};
use crate::machine::Effect;
use crate::session::{ActionFailure, Host};

/// The host for one driver call. The state is shared with the checkpoint store, so what
/// an action records is saved with the step it belongs to.
pub struct CodeIntelHost<'a> {
    pub root: &'a Root,
    pub session_id: &'a str,
    pub state: Rc<RefCell<HostState>>,
    /// The checkpoint key, to read the reads the client's hook recorded.
    pub key: &'a SealKey,
}

impl Host for CodeIntelHost<'_> {
    fn perform(&mut self, effect: &Effect) -> Result<Value, ActionFailure> {
        match ACTIONS.iter().find(|(name, _)| *name == effect.action) {
            Some((_, perform)) => perform(self, &effect.args),
            None => Err(ActionFailure::new("failed").with(
                "details",
                format!("the code-intel server does not perform `{}`", effect.action),
            )),
        }
    }

    fn facts(&mut self) -> Map<String, Value> {
        let root = self.root.path();
        let state = self.state.borrow();
        let own = state.branch.as_ref().map(|b| b.name.as_str());
        // Outside a git repository there are no branches to be stale; the session fails
        // later, where it needs a branch, with the reason.
        let stale = git::open(root)
            .and_then(|repo| repo.stale_task_branches(own))
            .is_ok_and(|list| !list.is_empty());
        let mut facts = Map::new();
        facts.insert(
            "quality_review_prompt_exists".into(),
            // As it was when the session started (see `HostState::quality_prompt`).
            Value::Bool(state.quality_prompt),
        );
        // The semantic tools are served; without a model their ranking is lexical, and
        // each answer says so.
        facts.insert("semantic_available".into(), Value::Bool(true));
        facts.insert("stale_branches_exist".into(), Value::Bool(stale));
        facts.insert(
            "task_branch_active".into(),
            Value::Bool(state.branch.is_some()),
        );
        facts.insert(
            "task_branch".into(),
            state
                .branch
                .as_ref()
                .map_or(Value::Null, |b| Value::String(b.name.clone())),
        );
        facts.insert(
            "base_branch".into(),
            state
                .branch
                .as_ref()
                .map_or(Value::Null, |b| Value::String(b.base_branch.clone())),
        );
        facts
    }
}

/// How the host performs one action, given its arguments.
type Perform = fn(&mut CodeIntelHost<'_>, &Map<String, Value>) -> Result<Value, ActionFailure>;

/// Every action this host performs: the dispatch table, and the list a test compares
/// with the registry both ways.
pub const ACTIONS: &[(&str, Perform)] = &[
    ("exploration.record", |h, a| h.record_explored(a)),
    ("changes.require_explored", |h, _| {
        h.require_explored().map(|()| Value::Null)
    }),
    (RESOLVE_STALE_ACTION, |h, a| h.resolve_stale(a)),
    ("git.ensure_task_branch", |h, _| h.ensure_task_branch()),
    ("git.commit", |h, a| h.commit(a, false)),
    ("git.prepare_commit", |h, a| h.commit(a, true)),
    ("git.commit_prepared", |h, _| h.commit_prepared()),
    ("git.discard_prepared", |h, _| h.discard_prepared()),
    ("git.merge", |h, _| h.merge()),
    ("checklist.verify_evidence", |h, a| h.verify_evidence(a)),
];

/// The prompt whose presence turns the quality review on (`facts.quality_review_prompt_exists`).
pub(crate) const QUALITY_PROMPT: &str = ".code-intel/review_prompts/quality_review.md";

impl CodeIntelHost<'_> {
    /// The repository, leaving alone the user's untouched work from before the session.
    fn repo(&self) -> Result<git::Repo, ActionFailure> {
        let left_alone = self.state.borrow().left_alone(self.root.path());
        git::open(self.root.path())
            .map(|repo| repo.leaving(left_alone))
            .map_err(git_failure)
    }

    /// `git.resolve_stale_branches {choice}`. `continue` adopts the checked-out task
    /// branch as this session's, so `git.ensure_task_branch` does not start another.
    fn resolve_stale(&mut self, args: &Map<String, Value>) -> Result<Value, ActionFailure> {
        let choice = match args.get("choice").and_then(Value::as_str) {
            Some("delete") => StaleChoice::Delete,
            Some("merge") => StaleChoice::Merge,
            Some("continue") => StaleChoice::Continue,
            other => {
                return Err(ActionFailure::new("failed")
                    .with("choice", other.map_or(Value::Null, Value::from))
                    .with("errors", "the choice must be delete, merge or continue"));
            }
        };
        let repo = self.repo()?;
        let outcome = repo.resolve_stale(choice).map_err(|e| {
            ActionFailure::new("failed")
                .with("choice", args.get("choice").cloned().unwrap_or(Value::Null))
                .with("errors", e.to_string())
                .with("files", e.files().to_vec())
        })?;
        // `continue` on a task branch makes it this session's; on any other branch the
        // session has none yet, and the contract's `git.ensure_task_branch` starts one from that branch as usual.
        let mut adopted = Value::Null;
        if choice == StaleChoice::Continue {
            let current = repo.current_task_branch().map_err(git_failure)?;
            adopted = current.as_ref().map_or(
                Value::Null,
                |b| json!({"name": b.name, "base_branch": b.base_branch}),
            );
            self.state.borrow_mut().branch = current;
        }
        Ok(json!({
            "choice": args.get("choice").cloned().unwrap_or(Value::Null),
            "deleted": outcome.deleted.iter().map(|d| json!({"name": d.name, "unmerged_commits": d.unmerged_commits})).collect::<Vec<_>>(),
            "kept": outcome.kept.iter().map(|k| json!({"name": k.name, "reason": k.reason})).collect::<Vec<_>>(),
            "merged": outcome.merged.as_ref().map(|m| json!({"branch": m.task_branch, "into": m.base_branch, "commit": m.commit})),
            "checked_out": outcome.checked_out,
            "carried_uncommitted_files": outcome.carried,
            "adopted": adopted,
        }))
    }

    /// `git.ensure_task_branch`: the session's branch, created at HEAD (a dirty tree is
    /// carried onto it, never discarded) unless it exists.
    fn ensure_task_branch(&mut self) -> Result<Value, ActionFailure> {
        if let Some(branch) = &self.state.borrow().branch {
            return Ok(json!({"branch": branch.name, "created": false}));
        }
        let repo = self.repo()?;
        let (branch, carried) = repo
            .start_task_branch(self.session_id)
            .map_err(|e| ActionFailure::new("failed").with("details", e.to_string()))?;
        let reply = json!({"branch": branch.name, "base": branch.base_branch, "created": true, "carried": carried});
        let mut state = self.state.borrow_mut();
        state.branch = Some(branch);
        state.carried = carried;
        Ok(reply)
    }

    /// The changed files (against the baseline) that are neither explored nor added,
    /// ignoring code-intel's own directory and the user's own uncommitted work from
    /// before the session (while it is unchanged: the agent did not write it).
    fn unexplored_changes(&self, changes: &[git::Change]) -> Vec<String> {
        let state = self.state.borrow();
        let root = self.root.path();
        changes
            .iter()
            .map(|c| c.path.clone())
            .filter(|p| {
                !git::is_never_the_tasks(p)
                    && !state.explored.contains(p)
                    && !state.untouched_user_change(root, p)
            })
            .collect()
    }

    fn changes(&self) -> Result<(git::Repo, git::TaskBranch, Vec<git::Change>), ActionFailure> {
        let Some(baseline) = self.state.borrow().baseline().cloned() else {
            return Err(ActionFailure::new("no_branch"));
        };
        let repo = self.repo()?;
        let changes = repo.changes(&baseline).map_err(git_failure)?;
        Ok((repo, baseline, changes))
    }

    /// `changes.require_explored`: the real diff decides what was written. Every changed
    /// file must be explored or added, whatever tool wrote it.
    fn require_explored(&self) -> Result<(), ActionFailure> {
        let (_, _, changes) = self.changes()?;
        let unexplored = self.unexplored_changes(&changes);
        if unexplored.is_empty() {
            Ok(())
        } else {
            Err(ActionFailure::new("unexplored").with("files", unexplored))
        }
    }

    /// `git.commit` / `git.prepare_commit {message, reviewed_files}`: the review must
    /// name exactly the changed files, every changed file must have been explored, and
    /// only the files reviewed as `discard` are reverted.
    fn commit(&mut self, args: &Map<String, Value>, prepare: bool) -> Result<Value, ActionFailure> {
        let Some(branch) = self.state.borrow().branch.clone() else {
            return Err(ActionFailure::new("no_branch"));
        };
        let message = args
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let reviewed = reviewed_files(args.get("reviewed_files"));
        let repo = self.repo()?;
        let changes = repo.changes(&branch).map_err(git_failure)?;
        let coverage = git::coverage(&changes, &reviewed);
        if !coverage.is_exact() {
            return Err(ActionFailure::new("review_incomplete")
                .with("missing", coverage.missing)
                .with("unknown", coverage.unknown));
        }
        // The user's uncommitted work from before the session is theirs: never reverted,
        // neither the file itself nor the source of a rename (discarding a rename restores
        // its source as the base had it).
        let users: Vec<String> = {
            let state = self.state.borrow();
            let renamed_from = |path: &str| {
                changes.iter().find_map(|c| match &c.status {
                    git::ChangeStatus::Renamed { from } if c.path == path => Some(from.clone()),
                    _ => None,
                })
            };
            reviewed
                .iter()
                .filter(|r| r.decision == git::Decision::Discard)
                .filter(|r| {
                    state.start_dirty.contains_key(&r.path)
                        || renamed_from(&r.path).is_some_and(|f| state.start_dirty.contains_key(&f))
                })
                .map(|r| r.path.clone())
                .collect()
        };
        if !users.is_empty() {
            return Err(ActionFailure::new("discard_refused").with("files", users));
        }
        // Files reviewed as `discard` are reverted, so only the kept ones must have been
        // explored.
        let discarded: BTreeSet<&str> = reviewed
            .iter()
            .filter(|r| r.decision == git::Decision::Discard)
            .map(|r| r.path.as_str())
            .collect();
        let unexplored: Vec<String> = self
            .unexplored_changes(&changes)
            .into_iter()
            .filter(|p| !discarded.contains(p.as_str()))
            .collect();
        if !unexplored.is_empty() {
            return Err(ActionFailure::new("unexplored").with("files", unexplored));
        }
        if prepare {
            let prepared = repo
                .prepare(&branch, message, &reviewed)
                .map_err(commit_failure)?;
            let reply =
                json!({"prepared": true, "kept": prepared.kept, "discarded": prepared.discarded});
            self.state.borrow_mut().prepared = Some(prepared);
            return Ok(reply);
        }
        let done = repo
            .commit_reviewed(&branch, message, &reviewed)
            .map_err(commit_failure)?;
        Ok(json!({"commit": done.commit, "kept": done.kept, "discarded": done.discarded}))
    }

    fn commit_prepared(&mut self) -> Result<Value, ActionFailure> {
        let (Some(branch), Some(prepared)) = ({
            let state = self.state.borrow();
            (state.branch.clone(), state.prepared.clone())
        }) else {
            return Err(ActionFailure::new("failed").with("details", "there is no prepared commit"));
        };
        let done = self
            .repo()?
            .commit_prepared(&branch, &prepared)
            .map_err(commit_failure)?;
        self.state.borrow_mut().prepared = None;
        Ok(json!({"commit": done.commit, "kept": done.kept, "discarded": done.discarded}))
    }

    fn discard_prepared(&mut self) -> Result<Value, ActionFailure> {
        let branch = self.state.borrow().branch.clone();
        if let Some(branch) = branch {
            self.repo()?
                .discard_prepared(&branch)
                .map_err(git_failure)?;
        }
        self.state.borrow_mut().prepared = None;
        Ok(Value::Null)
    }

    /// `git.merge`: into the base, then the task branch is deleted. A conflict leaves
    /// the repository as it was.
    fn merge(&mut self) -> Result<Value, ActionFailure> {
        let (branch, prepared) = {
            let state = self.state.borrow();
            (state.branch.clone(), state.prepared.is_some())
        };
        let Some(branch) = branch else {
            return Err(ActionFailure::new("no_branch"));
        };
        if prepared {
            return Err(ActionFailure::new("uncommitted"));
        }
        let merged = self.repo()?.merge_into_base(&branch).map_err(|e| match e {
            GitError::MergeConflict { files } => {
                ActionFailure::new("conflict").with("files", files)
            }
            other => ActionFailure::new("failed").with("details", other.to_string()),
        })?;
        self.state.borrow_mut().branch = None;
        Ok(
            json!({"merged": merged.task_branch, "into": merged.base_branch, "commit": merged.commit}),
        )
    }

    /// `checklist.verify_evidence {task_id, checklist}`: `done` items point at lines this
    /// session changed, in range, with a real implementation.
    fn verify_evidence(&self, args: &Map<String, Value>) -> Result<Value, ActionFailure> {
        let Some(baseline) = self.state.borrow().baseline().cloned() else {
            return Err(ActionFailure::new("no_baseline"));
        };
        // Lines of the user's untouched work are not this session's, with or without a
        // task branch.
        let untouched = self.state.borrow().untouched_user_work(self.root.path());
        let changed = git::open(self.root.path())
            .map(|repo| repo.leaving(untouched))
            .and_then(|repo| repo.changed_lines(&baseline))
            .map_err(git_failure)?;
        let checklist = args.get("checklist").cloned().unwrap_or(Value::Null);
        evidence::verify_checklist(self.root, &checklist, &changed).map_err(ActionFailure::from)?;
        Ok(Value::Null)
    }

    /// `exploration.record {files}`: the files become explored, if each is a path inside
    /// the repository that the agent has seen in a tool's output (or a file that does not
    /// exist yet, to be created).
    fn record_explored(&mut self, args: &Map<String, Value>) -> Result<Value, ActionFailure> {
        let files = string_list(args.get("files"));
        let mut state = self.state.borrow_mut();
        let seen = seen_paths(self.root, self.session_id, self.key, &state.seen_paths);
        let baseline = state.baseline().cloned();
        let accepted = check_explorable(self.root, &seen, &files, baseline.as_ref())?;
        state.explored.extend(accepted);
        Ok(Value::Null)
    }
}

/// What a session may claim to have explored: the paths its code-intel tool calls showed
/// (`seen`) and the files its client's own read tools opened, as the hook recorded them.
pub(crate) fn seen_paths(
    root: &Root,
    session_id: &str,
    key: &SealKey,
    seen: &BTreeSet<String>,
) -> BTreeSet<String> {
    let mut all = read_paths(root.path(), session_id, key);
    all.extend(seen.iter().cloned());
    all
}

/// Normalises client paths and checks them as exploration claims: inside the root, not in
/// a reserved directory (`.git/`, `.code-intel/`), and, when the file exists (or existed
/// at the baseline), seen in this session. Returns the root-relative paths. The paths are
/// judged as the write hook judges them ([`paths::judge`]).
pub(crate) fn check_explorable(
    root: &Root,
    seen: &BTreeSet<String>,
    files: &[String],
    baseline: Option<&git::TaskBranch>,
) -> Result<Vec<String>, ActionFailure> {
    // A file the baseline has but the tree does not was deleted: it existed, so claiming
    // it needs it seen, like any other file.
    let repo = baseline.and_then(|_| git::open(root.path()).ok());
    let existed = |rel: &str| match (&repo, baseline) {
        (Some(repo), Some(base)) => repo.existed_at_base(base, rel),
        _ => false,
    };
    let mut outside = Vec::new();
    let mut reserved = Vec::new();
    let mut unseen = Vec::new();
    let mut accepted = Vec::new();
    for file in files {
        match paths::judge(root, root.path(), file) {
            Target::Outside(_) => outside.push(file.clone()),
            Target::Inside(rel) if paths::is_reserved(&rel) => reserved.push(rel),
            Target::Inside(rel) => {
                let exists = root.path().join(&rel).exists() || existed(&rel);
                if exists && !seen.contains(&rel) {
                    unseen.push(rel);
                } else {
                    accepted.push(rel);
                }
            }
        }
    }
    if !outside.is_empty() {
        return Err(ActionFailure::new("outside_root").with("files", outside));
    }
    if !reserved.is_empty() {
        return Err(ActionFailure::new("reserved").with("files", reserved));
    }
    if !unseen.is_empty() {
        return Err(ActionFailure::new("unseen").with("files", unseen));
    }
    Ok(accepted)
}

/// Stale branches shown before the user chooses, and subjects shown per branch: enough to
/// recognise the work, small enough for any answer.
pub(crate) const MAX_STALE_BRANCHES: usize = 10;
pub(crate) const MAX_STALE_COMMITS: usize = 5;

/// The action whose choice the stale-branch report is for: a reply of a state that runs it
/// on submission shows the report.
pub(crate) const RESOLVE_STALE_ACTION: &str = "git.resolve_stale_branches";

/// The stale task branches (all but `own`) as the agent shows them to the user before they
/// choose: each one's name, base, age in days, whether it is checked out, and its commits
/// ahead of the base with their subjects, at most [`MAX_STALE_BRANCHES`] branches and
/// [`MAX_STALE_COMMITS`] subjects each; `more_branches` and `more_commits` count what was
/// left out. `Err` is git's refusal.
pub(crate) fn stale_branch_report(root: &Root, own: Option<&str>) -> Result<Value, GitError> {
    let report = git::open(root.path())
        .and_then(|repo| repo.stale_report(own, MAX_STALE_BRANCHES, MAX_STALE_COMMITS))?;
    let branches: Vec<Value> = report
        .branches
        .iter()
        .map(|d| {
            json!({
                "name": d.branch.name,
                "base_branch": d.branch.base_branch,
                "checked_out": d.branch.checked_out,
                "age_days": d.age_days,
                "commits_ahead": d.branch.commits_ahead,
                "commits": d.commits.iter().map(|c| json!({"id": c.id, "subject": c.subject})).collect::<Vec<_>>(),
                "more_commits": d.more_commits,
            })
        })
        .collect();
    Ok(json!({"branches": branches, "more_branches": report.more_branches}))
}

/// A git refusal as the generic `failed` outcome with its text.
fn git_failure(e: GitError) -> ActionFailure {
    ActionFailure::new("failed")
        .with("details", e.to_string())
        .with("error", e.key())
}

fn commit_failure(e: GitError) -> ActionFailure {
    match e {
        GitError::UnknownReviewedPaths { paths } => ActionFailure::new("review_incomplete")
            .with("missing", Vec::<String>::new())
            .with("unknown", paths),
        other => git_failure(other),
    }
}

/// `reviewed_files` items as git review decisions; anything but `discard` keeps.
fn reviewed_files(value: Option<&Value>) -> Vec<git::Reviewed> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| {
                    let path = item
                        .get("path")?
                        .as_str()?
                        .trim_start_matches("./")
                        .to_string();
                    let decision = match item.get("decision").and_then(Value::as_str) {
                        Some("discard") => git::Decision::Discard,
                        _ => git::Decision::Keep,
                    };
                    let reason = item
                        .get("reason")
                        .and_then(Value::as_str)
                        .map(str::to_string);
                    Some(git::Reviewed {
                        path,
                        decision,
                        reason,
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

fn string_list(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}
