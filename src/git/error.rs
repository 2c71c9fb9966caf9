//! Why a git operation on the task branch failed, as data: one variant per failure mode,
//! each with a stable `key()` for the host and a message that says what to do.
//!
//! Messages are lowercase with no trailing period; the key never changes once published,
//! the message may.

use std::fmt;
use std::path::PathBuf;

/// A refused or failed git operation. Refusals come before any change to the repository;
/// `Git` and `Io` can come midway, and each names the operation that failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum GitError {
    /// The root is not inside a git repository.
    NotARepository { path: PathBuf },
    /// The repository has no working tree.
    BareRepository { path: PathBuf },
    /// The root is a subdirectory of a repository; paths would not be repository-relative.
    NotRepositoryRoot { root: PathBuf, workdir: PathBuf },
    /// HEAD names a branch that has no commit yet (a fresh `git init`).
    UnbornBranch { branch: String },
    /// HEAD points at a commit, not a branch, so there is no base to return to.
    DetachedHead { commit: String },
    /// A merge, rebase, cherry-pick, revert or bisect is in progress.
    OperationInProgress { state: &'static str },
    /// A session id outside `[A-Za-z0-9-]+`.
    InvalidSessionId { session_id: String },
    /// A base branch whose name would not survive the task-branch name round trip.
    UnsupportedBaseName { base: String },
    /// HEAD is a task branch of another session (or an unparseable `llm_task_*` one).
    OnOtherTaskBranch { current: String },
    /// The session's task branch exists, is not checked out, and is neither at HEAD nor
    /// ahead of it (so it cannot be taken up as it is).
    TaskBranchExists { name: String },
    /// The operation needs `expected` checked out, and HEAD is elsewhere.
    NotOnTaskBranch { expected: String, current: String },
    /// HEAD is not a task branch, so there is nothing to merge.
    NoTaskBranchCheckedOut { current: String },
    /// The base branch of a task branch no longer exists.
    BaseBranchMissing { base: String },
    /// The branch is checked out in another worktree of the repository.
    CheckedOutElsewhere { branch: String, worktree: PathBuf },
    /// The working tree or index has changes (ignored files aside).
    Uncommitted { paths: Vec<String> },
    /// The merge into the base conflicts; nothing was changed.
    MergeConflict { files: Vec<String> },
    /// Checking out another branch would overwrite these uncommitted files; nothing was
    /// changed.
    WouldOverwrite { files: Vec<String> },
    /// Reviewed paths that are not among the task's changes.
    UnknownReviewedPaths { paths: Vec<String> },
    /// A path reviewed both `keep` and `discard`.
    ContradictoryReview { path: String },
    /// HEAD moved since the commit was prepared, so the prepared tree is out of date.
    PreparedStale { prepared_on: String, head: String },
    /// A libgit2 call failed.
    Git {
        operation: &'static str,
        message: String,
    },
    /// A file of the working tree could not be read, written or removed.
    Io {
        operation: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

impl GitError {
    /// A stable, dotted identifier of the failure mode, for clients that branch on it.
    pub fn key(&self) -> &'static str {
        match self {
            GitError::NotARepository { .. } => "git.not_a_repository",
            GitError::BareRepository { .. } => "git.bare_repository",
            GitError::NotRepositoryRoot { .. } => "git.not_repository_root",
            GitError::UnbornBranch { .. } => "git.unborn_branch",
            GitError::DetachedHead { .. } => "git.detached_head",
            GitError::OperationInProgress { .. } => "git.operation_in_progress",
            GitError::InvalidSessionId { .. } => "git.invalid_session_id",
            GitError::UnsupportedBaseName { .. } => "git.unsupported_base_name",
            GitError::OnOtherTaskBranch { .. } => "git.on_other_task_branch",
            GitError::TaskBranchExists { .. } => "git.task_branch_exists",
            GitError::NotOnTaskBranch { .. } => "git.not_on_task_branch",
            GitError::NoTaskBranchCheckedOut { .. } => "git.no_task_branch_checked_out",
            GitError::BaseBranchMissing { .. } => "git.base_branch_missing",
            GitError::CheckedOutElsewhere { .. } => "git.checked_out_elsewhere",
            GitError::Uncommitted { .. } => "git.uncommitted",
            GitError::MergeConflict { .. } => "git.merge_conflict",
            GitError::WouldOverwrite { .. } => "git.would_overwrite",
            GitError::UnknownReviewedPaths { .. } => "git.unknown_reviewed_paths",
            GitError::ContradictoryReview { .. } => "git.contradictory_review",
            GitError::PreparedStale { .. } => "git.prepared_stale",
            GitError::Git { .. } => "git.failed",
            GitError::Io { .. } => "git.io",
        }
    }

    /// The files a refusal is about (conflicts, uncommitted or unknown paths), for clients
    /// that list them.
    pub fn files(&self) -> &[String] {
        match self {
            GitError::Uncommitted { paths } | GitError::UnknownReviewedPaths { paths } => paths,
            GitError::MergeConflict { files } | GitError::WouldOverwrite { files } => files,
            _ => &[],
        }
    }

    /// Wraps a libgit2 error with the operation that produced it.
    pub(crate) fn git(operation: &'static str) -> impl FnOnce(git2::Error) -> GitError {
        move |e| GitError::Git {
            operation,
            message: e.message().to_string(),
        }
    }
}

/// At most this many paths are named in a message; `files()` has them all.
const LISTED_PATHS: usize = 20;

fn list(paths: &[String]) -> String {
    let mut text = paths
        .iter()
        .take(LISTED_PATHS)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > LISTED_PATHS {
        text.push_str(&format!(" and {} more", paths.len() - LISTED_PATHS));
    }
    text
}

impl fmt::Display for GitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GitError::NotARepository { path } => write!(
                f,
                "{} is not inside a git repository; run `git init` and make a first commit, or start in a repository",
                path.display()
            ),
            GitError::BareRepository { path } => write!(
                f,
                "{} is a bare repository with no working tree; start in a clone with a working tree",
                path.display()
            ),
            GitError::NotRepositoryRoot { root, workdir } => write!(
                f,
                "{} is inside the repository at {}; start at the repository root, or run `git init` in {0} to make it a repository of its own",
                root.display(),
                workdir.display()
            ),
            GitError::UnbornBranch { branch } => write!(
                f,
                "branch {branch} has no commits yet; make a first commit before starting a task"
            ),
            GitError::DetachedHead { commit } => write!(
                f,
                "HEAD is detached at {commit}; check out a branch (`git switch <branch>`) before starting a task"
            ),
            GitError::OperationInProgress { state } => write!(
                f,
                "a {state} is in progress; finish or abort it before continuing"
            ),
            GitError::InvalidSessionId { session_id } => write!(
                f,
                "session id {session_id:?} may only contain ASCII letters, digits and '-'"
            ),
            GitError::UnsupportedBaseName { base } => write!(
                f,
                "branch {base:?} cannot be encoded in a task branch name (it contains \"__\", \"_/\" or is not a valid branch name); start from a branch with a simpler name"
            ),
            GitError::OnOtherTaskBranch { current } => write!(
                f,
                "HEAD is on task branch {current} of another session; resolve the stale task branches (delete, merge or continue) first"
            ),
            GitError::TaskBranchExists { name } => write!(
                f,
                "task branch {name} already exists but is not checked out, and it does not start at HEAD; check it out, or delete it to start again"
            ),
            GitError::NotOnTaskBranch { expected, current } => write!(
                f,
                "the task branch {expected} is not checked out (HEAD is {current}); check it out first"
            ),
            GitError::NoTaskBranchCheckedOut { current } => write!(
                f,
                "HEAD is {current}, not an llm_task_* branch, so there is nothing to merge; check out the task branch to merge, or choose delete or continue"
            ),
            GitError::BaseBranchMissing { base } => write!(
                f,
                "base branch {base} no longer exists; recreate it or merge the task branch by hand"
            ),
            GitError::CheckedOutElsewhere { branch, worktree } => write!(
                f,
                "branch {branch} is checked out in the worktree at {}; switch that worktree to another branch first",
                worktree.display()
            ),
            GitError::Uncommitted { paths } => write!(
                f,
                "the working tree has uncommitted changes ({}); commit or discard them first",
                list(paths)
            ),
            GitError::MergeConflict { files } => write!(
                f,
                "merging into the base branch conflicts in {}; nothing was changed: resolve by hand or rebase the task branch",
                list(files)
            ),
            GitError::WouldOverwrite { files } => write!(
                f,
                "switching branches would overwrite uncommitted changes in {}; nothing was changed: commit or stash them first",
                list(files)
            ),
            GitError::UnknownReviewedPaths { paths } => write!(
                f,
                "reviewed paths that are not among the task's changes: {}; review only the files review_changes lists",
                list(paths)
            ),
            GitError::ContradictoryReview { path } => {
                write!(f, "{path} is reviewed both keep and discard; choose one")
            }
            GitError::PreparedStale { prepared_on, head } => write!(
                f,
                "the commit was prepared on {prepared_on} but HEAD is now {head}; review and prepare the commit again"
            ),
            GitError::Git { operation, message } => write!(f, "git {operation} failed: {message}"),
            GitError::Io {
                operation,
                path,
                source,
            } => write!(f, "{operation} {} failed: {source}", path.display()),
        }
    }
}

impl std::error::Error for GitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            GitError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
