//! The working tree path by path, for the check the server makes at every submission:
//! which files differ from a commit (the session's baseline, or HEAD; staged, unstaged
//! and untracked non-ignored files alike) and what HEAD holds for a file. Read-only: nothing here
//! changes the repository, the index included.

use std::path::Path;

use git2::{Delta, DiffOptions};

use super::branches::TaskBranch;
use super::changes::ChangeStatus;
use super::error::GitError;
use super::repo::Repo;

/// One path of the working tree that differs from the baseline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeChange {
    /// Relative to the working tree, `/`-separated.
    pub path: String,
    /// `Added`, `Modified`, `Deleted` or `TypeChange`: no rename detection, so a moved
    /// file is its old path deleted and its new path added, each judged on its own.
    pub status: ChangeStatus,
}

impl Repo {
    /// Every path that differs from the baseline's commit, sorted, without diffs or
    /// rename detection (cheaper than [`Repo::changes`], and a rename cannot hide the
    /// deletion of its source). What is never the task's ([`super::personal::is_never_the_tasks`]) is
    /// left out.
    pub fn tree_changes(&self, baseline: &TaskBranch) -> Result<Vec<TreeChange>, GitError> {
        let base_tree = self.base_tree(baseline)?;
        let mut options = DiffOptions::new();
        options
            .include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_typechange(true)
            .ignore_submodules(true)
            .context_lines(0);
        let diff = self
            .repo
            .diff_tree_to_workdir_with_index(Some(&base_tree), Some(&mut options))
            .map_err(GitError::git("diff"))?;
        let mut out: Vec<TreeChange> = diff
            .deltas()
            .filter_map(|delta| {
                let status = match delta.status() {
                    Delta::Added | Delta::Untracked | Delta::Copied => ChangeStatus::Added,
                    Delta::Deleted => ChangeStatus::Deleted,
                    Delta::Modified | Delta::Conflicted | Delta::Unreadable | Delta::Renamed => {
                        ChangeStatus::Modified
                    }
                    Delta::Typechange => ChangeStatus::TypeChange,
                    Delta::Unmodified | Delta::Ignored => return None,
                };
                let file = if status == ChangeStatus::Deleted {
                    delta.old_file()
                } else {
                    delta.new_file()
                };
                let path = String::from_utf8_lossy(file.path_bytes()?).into_owned();
                (!super::personal::is_never_the_tasks(&path)).then_some(TreeChange { path, status })
            })
            .collect();
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out.dedup_by(|a, b| a.path == b.path);
        Ok(out)
    }

    /// Whether a git action of the server was cut short (its intent file is still in the
    /// git directory, `recover`): the tree is then halfway through that action, which
    /// the next call of it completes, so it cannot be judged yet.
    pub fn action_interrupted(&self) -> bool {
        self.repo
            .path()
            .join(super::recover::INTENT)
            .symlink_metadata()
            .is_ok()
    }

    /// The content of `path` (root-relative) in HEAD's commit, `None` when HEAD has no
    /// such file: whether `git checkout HEAD -- FILE` can bring a file back.
    pub fn content_at_head(&self, path: &str) -> Option<Vec<u8>> {
        let tree = self.repo.head().ok()?.peel_to_tree().ok()?;
        let entry = tree.get_path(Path::new(path)).ok()?;
        let blob = self.repo.find_blob(entry.id()).ok()?;
        Some(blob.content().to_vec())
    }
}

/// Whether `path` (relative to `root`, which must be a repository's working tree itself,
/// not a directory inside one) is new since HEAD: HEAD's tree does not hold it (no file,
/// no directory with a tracked file in it; a branch with no commit yet holds nothing) and
/// git does not ignore it. The root itself is never new, and anything that cannot be
/// established answers no. Read-only, and it needs no HEAD on a branch, unlike [`open`].
///
/// [`open`]: super::open
pub fn is_new_since_head(root: &Path, path: &str) -> bool {
    let Ok(repo) = git2::Repository::open(root) else {
        return false;
    };
    let path = path.trim_end_matches('/');
    if path.is_empty() || repo.is_path_ignored(Path::new(path)).unwrap_or(true) {
        return false;
    }
    match repo.head().and_then(|head| head.peel_to_tree()) {
        Ok(tree) => tree.get_path(Path::new(path)).is_err(),
        // No commit yet: HEAD holds nothing.
        Err(e) => e.code() == git2::ErrorCode::UnbornBranch,
    }
}
