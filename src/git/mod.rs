//! git for every host, as a plain synchronous library: the task-branch lifecycle (start a
//! session's branch, resolve stale ones, review and commit its changes, merge it back),
//! which the code-intel server runs, and a read-only look at a work tree ([`WorkTree`])
//! for a host that records what a process changed, as the agent runner does around each
//! worker run.
//!
//! Host-neutral: nothing here imports a host (`server`, `runner`, `client`); the one other
//! module it uses is `codeintel`'s atomic file write. No other module uses libgit2 (the
//! `tidy` test checks), so every host asks git the same way. What a task never changes
//! (code-intel's own directory and the clients' personal files, [`is_never_the_tasks`])
//! lives here rather than in a host, so every host that runs task branches leaves the same
//! files alone.
//!
//! Everything is local (libgit2 through `git2`, no network), nothing prints, and every
//! failure is a [`GitError`] variant with a stable `key()`. Refusals happen before any
//! change to the repository. A [`Repo`] wraps a `git2::Repository`, which is `Send` but
//! not `Sync`: share one behind a mutex, or open one per call (it is cheap).
//!
//! - [`open`] opens the repository whose working tree is exactly the root, refusing a
//!   non-repository, a subdirectory, a bare repository, an unborn branch and a detached
//!   HEAD.
//! - Names: `llm_task_<session id>_from_<base>`, session ids `[A-Za-z0-9-]+`, `/` in the
//!   base written `__`; bases with `__` or `_/` are refused so every name parses back
//!   ([`task_branch_name`], [`checked_task_branch_name`], [`parse_task_branch`]).
//! - Branches: [`Repo::start_task_branch`] (carries a dirty tree, idempotent),
//!   [`Repo::current_task_branch`], [`Repo::stale_task_branches`] (with their age and
//!   the subjects of their commits ahead, bounded: [`Repo::stale_report`]),
//!   [`Repo::resolve_stale`], [`Repo::merge_into_base`], [`Repo::delete_task_branch`].
//! - Changes against the base commit: [`Repo::changes`] (diffs capped at
//!   [`DIFF_CAP_BYTES`]), [`Repo::changed_lines`]; path by path for the check at every
//!   submission, [`Repo::tree_changes`], [`Repo::content_at_head`]; whether a path is new
//!   since HEAD ([`is_new_since_head`], for the write hook's removals).
//! - Commits: [`coverage`], [`Repo::commit_reviewed`], or [`Repo::prepare`] →
//!   [`Repo::commit_prepared`] / [`Repo::discard_prepared`]. A [`PreparedCommit`] is
//!   returned to the caller, who keeps it (in its checkpoint) with the [`TaskBranch`].
//! - A kill at any moment: every action that changes the repository records itself first
//!   (an intent file in the git directory), so the next action clears the lock files a
//!   killed one left ([`Repo::recover`], its rule in `recover`); and every action can be
//!   called again after a kill: a task branch of the session's name is taken up, a commit
//!   or merge that landed is recognised and reported, not refused or repeated.
//! - Watching a work tree: [`WorkTree::discover`] from any directory inside it, its
//!   uncommitted paths (the one status query, shared with [`Repo::uncommitted`]), an id
//!   of a file's content, the paths between two commits and a `git diff --stat`.
//!
//! ## The task-branch lifecycle
//!
//! The task-branch lifecycle on git2 (`.code-intel/` and the clients' personal
//! files are never a change of a task: not listed, reviewed, committed or reverted, nor is
//! what a `Repo` is told to leave alone, the user's untouched work from before the
//! session, which a merge carries to the base as it is; create with a carried dirty tree, stale
//! branches (shown with their base, age and commits ahead, bounded: `Repo::stale_report`;
//! the server adds them to every answer of a state that runs `git.resolve_stale_branches`)
//! and the delete/merge/continue choices, changes and changed lines against the
//! base commit, a review that must name exactly the changed files, prepared commits, a
//! merge computed in memory first so a conflict changes nothing). Every action can be
//! called again after a kill at any moment: each records itself first (an intent file in
//! the git directory), so the next one clears the lock files a killed one left (only that
//! action's own, its process dead, taken during it, held open by no process); a task branch
//! of the session's name at or ahead of HEAD is taken up; a commit or merge that landed is
//! recognised and finished, never refused or made twice.

mod branches;
mod changes;
mod commit;
mod error;
mod name;
mod personal;
mod recover;
mod repo;
mod tree;
mod work_tree;

pub use branches::{
    AheadCommit, DeleteOutcome, DeletedBranch, KeptBranch, MergeKind, MergeOutcome, SUBJECT_CHARS,
    StaleBranch, StaleChoice, StaleDetail, StaleOutcome, StaleReport, TaskBranch,
};
pub use changes::{Change, ChangeStatus, ChangedLines, DIFF_CAP_BYTES};
pub use commit::{CommitOutcome, Coverage, Decision, PreparedCommit, Reviewed, coverage};
pub use error::GitError;
pub use name::{
    TASK_PREFIX, checked_task_branch_name, is_valid_session_id, parse_task_branch, task_branch_name,
};
pub use personal::{Excluded, PERSONAL_FILES, exclude_personal_files, is_never_the_tasks};
pub use recover::Recovered;
pub use repo::{Repo, open};
pub use tree::{TreeChange, is_new_since_head};
pub use work_tree::WorkTree;

/// A commit's or a content's id (git's object id).
pub use git2::Oid;
