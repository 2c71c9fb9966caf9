//! Opening the repository and the small queries every operation shares: where HEAD is,
//! what is uncommitted, and a checkout that refuses to overwrite uncommitted work.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use git2::{
    BranchType, CheckoutNotificationType, DiffOptions, ErrorCode, Oid, Repository, RepositoryState,
    StatusOptions, build::CheckoutBuilder,
};

use super::error::GitError;

/// An open repository whose working tree is the host's root.
pub struct Repo {
    pub(super) repo: Repository,
    pub(super) workdir: PathBuf,
    /// Uncommitted paths that are not the task's (see [`Repo::leaving`]).
    pub(super) left_alone: BTreeSet<String>,
}

impl std::fmt::Debug for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repo")
            .field("workdir", &self.workdir)
            .finish()
    }
}

/// Opens the repository whose working tree is exactly `root`.
///
/// `root` may not be a subdirectory of a repository: every path this module returns is
/// relative to the working tree, and a host's paths are relative to its root, so the
/// two must be the same directory. Refuses a bare repository, an unborn branch and a
/// detached HEAD, each with its own error, since none of them has a branch to start from.
pub fn open(root: &Path) -> Result<Repo, GitError> {
    let (repo, workdir) = discover(root)?;
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    if workdir != canonical(root) {
        return Err(GitError::NotRepositoryRoot {
            root: root.to_path_buf(),
            workdir,
        });
    }
    let repo = Repo {
        repo,
        workdir,
        left_alone: BTreeSet::new(),
    };
    repo.head_branch()?;
    Ok(repo)
}

/// The repository `dir` is in (at any depth) and its working tree, canonical; refuses a
/// directory outside any repository and a bare repository.
pub(super) fn discover(dir: &Path) -> Result<(Repository, PathBuf), GitError> {
    let repo = Repository::discover(dir).map_err(|e| match e.code() {
        ErrorCode::NotFound => GitError::NotARepository {
            path: dir.to_path_buf(),
        },
        _ => GitError::git("open")(e),
    })?;
    let Some(workdir) = repo.workdir() else {
        return Err(GitError::BareRepository {
            path: repo.path().to_path_buf(),
        });
    };
    let workdir = workdir
        .canonicalize()
        .unwrap_or_else(|_| workdir.to_path_buf());
    Ok((repo, workdir))
}

/// Every path under `under` (a directory relative to the working tree; `""` for all of
/// it) with uncommitted changes: staged, unstaged or untracked, not ignored, submodules
/// left out; sorted. The one status query of this module, for [`Repo::uncommitted`] and
/// [`WorkTree::uncommitted`](super::WorkTree::uncommitted).
pub(super) fn uncommitted_under(repo: &Repository, under: &str) -> Result<Vec<String>, GitError> {
    let mut options = StatusOptions::new();
    options
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true);
    if !under.is_empty() {
        options.pathspec(under);
    }
    let statuses = repo
        .statuses(Some(&mut options))
        .map_err(GitError::git("status"))?;
    let mut paths: Vec<String> = statuses
        .iter()
        .filter(|s| !s.status().is_ignored())
        .map(|s| String::from_utf8_lossy(s.path_bytes()).into_owned())
        .collect();
    paths.sort();
    paths.dedup();
    Ok(paths)
}

impl Repo {
    /// This repository with `paths` left alone: uncommitted work of the user's that the
    /// task did not touch. They are not among the task's changes (never listed, reviewed
    /// or committed), and a merge carries them to the base as they are instead of
    /// refusing them. Code-intel's own and personal files are always left alone
    /// ([`is_never_the_tasks`](super::personal::is_never_the_tasks)).
    pub fn leaving(mut self, paths: impl IntoIterator<Item = String>) -> Repo {
        self.left_alone.extend(paths);
        self
    }

    /// Whether `path` is left out of the task's changes.
    pub(super) fn leaves(&self, path: &str) -> bool {
        super::personal::is_never_the_tasks(path) || self.left_alone.contains(path)
    }
}

/// What an operation needs to know about HEAD.
#[derive(Debug, Clone)]
pub(super) struct Head {
    /// The short branch name (`main`, `feature/x`).
    pub(super) branch: String,
    pub(super) commit: Oid,
}

impl Repo {
    /// The working tree's directory.
    pub fn workdir(&self) -> &Path {
        &self.workdir
    }

    /// The checked-out branch, refusing an unborn branch and a detached HEAD.
    pub(super) fn head_branch(&self) -> Result<Head, GitError> {
        let head = match self.repo.head() {
            Ok(head) => head,
            Err(e) if e.code() == ErrorCode::UnbornBranch || e.code() == ErrorCode::NotFound => {
                let branch = self
                    .repo
                    .find_reference("HEAD")
                    .ok()
                    .and_then(|r| r.symbolic_target().ok().flatten().map(str::to_string))
                    .map(|t| t.trim_start_matches("refs/heads/").to_string())
                    .unwrap_or_else(|| "HEAD".to_string());
                return Err(GitError::UnbornBranch { branch });
            }
            Err(e) => return Err(GitError::git("read HEAD")(e)),
        };
        let commit = head
            .peel_to_commit()
            .map_err(GitError::git("read HEAD"))?
            .id();
        if !head.is_branch() {
            return Err(GitError::DetachedHead {
                commit: commit.to_string(),
            });
        }
        let branch = head
            .shorthand()
            .map_err(GitError::git("read HEAD"))?
            .to_string();
        Ok(Head { branch, commit })
    }

    /// Refuses while a merge, rebase or similar is half done: its index and files belong
    /// to that operation.
    pub(super) fn require_clean_state(&self) -> Result<(), GitError> {
        let state = match self.repo.state() {
            RepositoryState::Clean => return Ok(()),
            RepositoryState::Merge => "merge",
            RepositoryState::Revert | RepositoryState::RevertSequence => "revert",
            RepositoryState::CherryPick | RepositoryState::CherryPickSequence => "cherry-pick",
            RepositoryState::Bisect => "bisect",
            RepositoryState::Rebase
            | RepositoryState::RebaseInteractive
            | RepositoryState::RebaseMerge => "rebase",
            RepositoryState::ApplyMailbox | RepositoryState::ApplyMailboxOrRebase => "git am",
        };
        Err(GitError::OperationInProgress { state })
    }

    /// HEAD must be `branch`.
    pub(super) fn require_on(&self, branch: &str) -> Result<Head, GitError> {
        let head = self.head_branch()?;
        if head.branch != branch {
            return Err(GitError::NotOnTaskBranch {
                expected: branch.to_string(),
                current: head.branch,
            });
        }
        Ok(head)
    }

    /// Every path with uncommitted changes (staged, unstaged or untracked, not ignored),
    /// sorted.
    pub fn uncommitted(&self) -> Result<Vec<String>, GitError> {
        uncommitted_under(&self.repo, "")
    }

    /// Every path whose index or working-tree state differs from `commit`'s tree
    /// (untracked files included, ignored ones not): what checking `commit` out would have
    /// to change or carry.
    pub(super) fn differences_from(&self, commit: Oid) -> Result<Vec<String>, GitError> {
        let tree = self
            .repo
            .find_commit(commit)
            .and_then(|c| c.tree())
            .map_err(GitError::git("read commit"))?;
        let mut options = DiffOptions::new();
        options
            .include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false);
        let diff = self
            .repo
            .diff_tree_to_workdir_with_index(Some(&tree), Some(&mut options))
            .map_err(GitError::git("diff"))?;
        let mut paths: Vec<String> = diff
            .deltas()
            .filter_map(|d| d.new_file().path().or_else(|| d.old_file().path()))
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .collect();
        paths.sort();
        paths.dedup();
        Ok(paths)
    }

    /// The commit a local branch points at, or `None` when it does not exist.
    pub(super) fn branch_tip(&self, name: &str) -> Result<Option<Oid>, GitError> {
        match self.repo.find_branch(name, BranchType::Local) {
            Ok(branch) => Ok(Some(
                branch
                    .get()
                    .peel_to_commit()
                    .map_err(GitError::git("read branch"))?
                    .id(),
            )),
            Err(e) if e.code() == ErrorCode::NotFound => Ok(None),
            Err(e) => Err(GitError::git("find branch")(e)),
        }
    }

    /// The working tree of another worktree of this repository that has `branch` checked
    /// out. Moving such a branch would leave that tree behind its HEAD, and git refuses to
    /// check out one branch twice, so merges and switches refuse it.
    pub(super) fn checked_out_elsewhere(&self, branch: &str) -> Result<Option<PathBuf>, GitError> {
        let full = format!("refs/heads/{branch}");
        let mut others = Vec::new();
        if self.repo.is_worktree()
            && let Ok(main) = Repository::open(self.repo.commondir())
        {
            others.push(main);
        }
        let names = self
            .repo
            .worktrees()
            .map_err(GitError::git("list worktrees"))?;
        for name in names.iter().flatten().flatten() {
            // A pruned or unreadable worktree has nothing checked out.
            if let Ok(other) = self
                .repo
                .find_worktree(name)
                .and_then(|w| Repository::open_from_worktree(&w))
            {
                others.push(other);
            }
        }
        for other in others {
            if other.path() == self.repo.path() {
                continue;
            }
            let head = other.find_reference("HEAD");
            let target = head
                .as_ref()
                .ok()
                .and_then(|h| h.symbolic_target().ok().flatten());
            if target == Some(full.as_str()) {
                let path = other.workdir().unwrap_or(other.path());
                return Ok(Some(path.to_path_buf()));
            }
        }
        Ok(None)
    }

    /// Refuses when `branch` is checked out in another worktree.
    pub(super) fn require_not_checked_out_elsewhere(&self, branch: &str) -> Result<(), GitError> {
        match self.checked_out_elsewhere(branch)? {
            Some(worktree) => Err(GitError::CheckedOutElsewhere {
                branch: branch.to_string(),
                worktree,
            }),
            None => Ok(()),
        }
    }

    /// Switches HEAD to the local branch `name`, updating the index and working tree the
    /// way `git switch` does: uncommitted changes are carried over, and if one would be
    /// overwritten nothing is touched and the files are named. Returns the carried paths.
    pub(super) fn switch_to(&self, name: &str) -> Result<Vec<String>, GitError> {
        let tip = self
            .branch_tip(name)?
            .ok_or_else(|| GitError::BaseBranchMissing {
                base: name.to_string(),
            })?;
        self.require_not_checked_out_elsewhere(name)?;
        let carried = self.uncommitted()?;
        self.checkout_commit(tip)?;
        self.repo
            .set_head(&format!("refs/heads/{name}"))
            .map_err(GitError::git("set HEAD"))?;
        Ok(carried)
    }

    /// Overwrites tracked files with a commit's tree; only for undoing or completing this
    /// module's own checkout. What the repository leaves alone is not touched: it is the
    /// user's work, which no checkout of ours wrote.
    pub(super) fn force_checkout(&self, commit: Oid) -> Result<(), GitError> {
        let tree = self
            .repo
            .find_commit(commit)
            .and_then(|c| c.tree())
            .map_err(GitError::git("read commit"))?;
        let paths: Vec<String> = self
            .differences_from(commit)?
            .into_iter()
            .filter(|p| !self.leaves(p))
            .collect();
        if paths.is_empty() {
            return Ok(());
        }
        let mut checkout = CheckoutBuilder::new();
        checkout.force().disable_pathspec_match(true);
        for path in &paths {
            checkout.path(path.as_str());
        }
        self.repo
            .checkout_tree(tree.as_object(), Some(&mut checkout))
            .map_err(GitError::git("checkout"))
    }

    /// Checks out a commit's tree over the current one in safe mode (no forced overwrite):
    /// libgit2 checks every file before writing any, so a conflict leaves all as it was.
    pub(super) fn checkout_commit(&self, commit: Oid) -> Result<(), GitError> {
        let tree = self
            .repo
            .find_commit(commit)
            .and_then(|c| c.tree())
            .map_err(GitError::git("read commit"))?;
        let conflicts = RefCell::new(Vec::new());
        let result = {
            let mut checkout = CheckoutBuilder::new();
            checkout
                .safe()
                .notify_on(CheckoutNotificationType::CONFLICT)
                .notify(|_, path, _, _, _| {
                    if let Some(path) = path {
                        conflicts
                            .borrow_mut()
                            .push(path.to_string_lossy().replace('\\', "/"));
                    }
                    true
                });
            self.repo
                .checkout_tree(tree.as_object(), Some(&mut checkout))
        };
        let mut files = conflicts.into_inner();
        match result {
            Ok(()) => Ok(()),
            Err(_) if !files.is_empty() => {
                files.sort();
                files.dedup();
                Err(GitError::WouldOverwrite { files })
            }
            Err(e) if e.code() == ErrorCode::Conflict => Err(GitError::WouldOverwrite { files }),
            Err(e) => Err(GitError::git("checkout")(e)),
        }
    }

    /// The committer: the repository's configured user, else a fixed one, so a machine
    /// without `user.name` can still commit.
    pub(super) fn signature(&self) -> Result<git2::Signature<'static>, GitError> {
        match self.repo.signature() {
            Ok(signature) => Ok(signature),
            Err(_) => git2::Signature::now("code-intel", "code-intel@localhost")
                .map_err(GitError::git("signature")),
        }
    }

    /// How many commits of `tip` no local branch outside the task branches contains: the
    /// work that deleting the branch would lose.
    pub(super) fn unmerged_commits(&self, tip: Oid) -> Result<usize, GitError> {
        let mut walk = self.repo.revwalk().map_err(GitError::git("revwalk"))?;
        walk.push(tip).map_err(GitError::git("revwalk"))?;
        let branches = self
            .repo
            .branches(Some(BranchType::Local))
            .map_err(GitError::git("list branches"))?;
        for branch in branches {
            let (branch, _) = branch.map_err(GitError::git("list branches"))?;
            let name = branch.name().ok().flatten().unwrap_or_default();
            if name.starts_with(super::name::TASK_PREFIX) {
                continue;
            }
            if let Some(oid) = branch.get().target() {
                walk.hide(oid).map_err(GitError::git("revwalk"))?;
            }
        }
        let mut count = 0;
        for oid in walk {
            oid.map_err(GitError::git("revwalk"))?;
            count += 1;
        }
        Ok(count)
    }
}
