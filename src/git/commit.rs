//! Committing a reviewed task, directly or prepared for a quality review.
//!
//! The review names files `keep` or `discard`. Only discarded files are reverted to the
//! base (a new file is deleted, a deleted one restored, a rename undone); every other
//! changed file is kept, listed or not. The commit's tree is the base tree plus each
//! changed path's working-tree state, staged path by path, never the whole tree at once,
//! so it holds exactly the kept changes (the original reverted every unlisted file and
//! then ran `git add -A`, its bug CI-B4).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use git2::{Oid, build::CheckoutBuilder};
use serde::{Deserialize, Serialize};

use super::branches::TaskBranch;
use super::changes::{Change, ChangeStatus};
use super::error::GitError;
use super::repo::Repo;

/// A reviewer's decision about one changed file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Keep,
    Discard,
}

/// One reviewed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reviewed {
    /// As [`Change::path`] gives it (the new path of a rename).
    pub path: String,
    pub decision: Decision,
    pub reason: Option<String>,
}

/// How a review list matches the changed files.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Coverage {
    /// Changed files the review does not mention.
    pub missing: Vec<String>,
    /// Reviewed paths that are not changed files.
    pub unknown: Vec<String>,
}

impl Coverage {
    /// The review names every changed file and nothing else.
    pub fn is_exact(&self) -> bool {
        self.missing.is_empty() && self.unknown.is_empty()
    }
}

/// Which changed files a review misses and which of its paths are not changed, sorted, so a
/// server that wants every file reviewed can refuse naming them.
pub fn coverage(changes: &[Change], reviewed: &[Reviewed]) -> Coverage {
    let changed: BTreeSet<&str> = changes.iter().map(|c| c.path.as_str()).collect();
    let listed: BTreeSet<&str> = reviewed.iter().map(|r| r.path.as_str()).collect();
    Coverage {
        missing: changed.difference(&listed).map(|p| p.to_string()).collect(),
        unknown: listed.difference(&changed).map(|p| p.to_string()).collect(),
    }
}

/// What a commit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitOutcome {
    /// The new commit (hex); `None` when there was nothing to commit.
    pub commit: Option<String>,
    pub kept: Vec<String>,
    pub discarded: Vec<String>,
}

/// A commit staged for after the quality review. The server keeps it in its checkpoint;
/// nothing is written beside the repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreparedCommit {
    pub message: String,
    /// HEAD when it was prepared (hex); committing refuses if HEAD moved.
    pub head: String,
    /// The reviewed tree (hex), already in the object database.
    pub tree: String,
    pub kept: Vec<String>,
    pub discarded: Vec<String>,
}

/// The reviewed, staged state before it is committed.
struct Staged {
    head: Oid,
    tree: Oid,
    kept: Vec<String>,
    discarded: Vec<String>,
}

impl Repo {
    /// Reverts the discarded files, stages the kept ones and commits them on the task
    /// branch. Nothing to commit is a success with `commit: None`.
    ///
    /// Called again after a kill that came once the commit had landed, it finds nothing new
    /// to commit and HEAD already being that commit (its message, on the task branch):
    /// that commit is reported, not a second one made.
    pub fn commit_reviewed(
        &self,
        branch: &TaskBranch,
        message: &str,
        reviewed: &[Reviewed],
    ) -> Result<CommitOutcome, GitError> {
        let _intent = self.begin("commit", &[&branch.name])?;
        let staged = self.stage_review(branch, reviewed)?;
        let commit = match self.commit_tree(staged.head, staged.tree, message)? {
            Some(commit) => Some(commit),
            None => self.landed_commit(branch, staged.head, staged.tree, message)?,
        };
        Ok(CommitOutcome {
            commit: commit.map(|c| c.to_string()),
            kept: staged.kept,
            discarded: staged.discarded,
        })
    }

    /// Like [`Repo::commit_reviewed`] up to the commit: discarded files are reverted and
    /// the kept ones staged (visible to `git status`); the commit waits for
    /// [`Repo::commit_prepared`].
    pub fn prepare(
        &self,
        branch: &TaskBranch,
        message: &str,
        reviewed: &[Reviewed],
    ) -> Result<PreparedCommit, GitError> {
        let _intent = self.begin("prepare the commit", &[&branch.name])?;
        let staged = self.stage_review(branch, reviewed)?;
        Ok(PreparedCommit {
            message: message.to_string(),
            head: staged.head.to_string(),
            tree: staged.tree.to_string(),
            kept: staged.kept,
            discarded: staged.discarded,
        })
    }

    /// Commits exactly the prepared tree, whatever happened to the index since. Refuses if
    /// HEAD moved, unless HEAD is this very commit (a kill came after it landed): then it
    /// is reported and nothing is committed twice. Later working-tree edits stay as
    /// unstaged changes.
    pub fn commit_prepared(
        &self,
        branch: &TaskBranch,
        prepared: &PreparedCommit,
    ) -> Result<CommitOutcome, GitError> {
        self.require_clean_state()?;
        let head = self.require_on(&branch.name)?;
        let _intent = self.begin("commit the prepared commit", &[&branch.name])?;
        let tree = Oid::from_str(&prepared.tree).map_err(GitError::git("read prepared tree"))?;
        let outcome = |commit: Option<Oid>| CommitOutcome {
            commit: commit.map(|c| c.to_string()),
            kept: prepared.kept.clone(),
            discarded: prepared.discarded.clone(),
        };
        if head.commit.to_string() != prepared.head {
            if self.is_prepared_commit(head.commit, prepared, tree)? {
                // Killed before the index was reset to it, perhaps: do that part again.
                self.reset_index_to(head.commit)?;
                return Ok(outcome(Some(head.commit)));
            }
            return Err(GitError::PreparedStale {
                prepared_on: prepared.head.clone(),
                head: head.commit.to_string(),
            });
        }
        let commit = self.commit_tree(head.commit, tree, &prepared.message)?;
        Ok(outcome(commit))
    }

    /// Unstages a prepared commit; the working tree keeps every change (discarded files
    /// stay reverted: that was the review's decision).
    pub fn discard_prepared(&self, branch: &TaskBranch) -> Result<(), GitError> {
        self.require_clean_state()?;
        let head = self.require_on(&branch.name)?;
        let _intent = self.begin("discard the prepared commit", &[&branch.name])?;
        self.reset_index_to(head.commit)
    }

    /// Whether `commit` is the one `prepared` describes: its tree and message, with the
    /// prepared-on HEAD as its only parent.
    fn is_prepared_commit(
        &self,
        commit: Oid,
        prepared: &PreparedCommit,
        tree: Oid,
    ) -> Result<bool, GitError> {
        let commit = self
            .repo
            .find_commit(commit)
            .map_err(GitError::git("read HEAD"))?;
        Ok(commit.parent_count() == 1
            && commit
                .parent_id(0)
                .is_ok_and(|p| p.to_string() == prepared.head)
            && commit.tree_id() == tree
            && commit.message_raw_bytes() == prepared.message.as_bytes())
    }

    /// HEAD (`head`) when it is the commit `commit_reviewed` would have made now: on the
    /// task branch past its base, with `tree` and `message`. `None` otherwise.
    fn landed_commit(
        &self,
        branch: &TaskBranch,
        head: Oid,
        tree: Oid,
        message: &str,
    ) -> Result<Option<Oid>, GitError> {
        if head.to_string() == branch.base_commit {
            return Ok(None);
        }
        let commit = self
            .repo
            .find_commit(head)
            .map_err(GitError::git("read HEAD"))?;
        let same = commit.tree_id() == tree && commit.message_raw_bytes() == message.as_bytes();
        Ok(same.then_some(head))
    }

    fn stage_review(&self, branch: &TaskBranch, reviewed: &[Reviewed]) -> Result<Staged, GitError> {
        self.require_clean_state()?;
        let head = self.require_on(&branch.name)?;
        let changes: BTreeMap<String, ChangeStatus> =
            self.change_set(branch)?.into_iter().collect();
        let decisions = decisions(&changes, reviewed)?;
        let (discarded, kept): (Vec<String>, Vec<String>) = changes
            .keys()
            .cloned()
            .partition(|p| decisions.get(p.as_str()) == Some(&Decision::Discard));

        let base_tree = self.base_tree(branch)?;
        let mut restore = Vec::new();
        for path in &discarded {
            match &changes[path] {
                ChangeStatus::Added => self.remove_file(path)?,
                ChangeStatus::Renamed { from } => {
                    self.remove_file(path)?;
                    restore.push(from.clone());
                }
                ChangeStatus::Modified | ChangeStatus::Deleted | ChangeStatus::TypeChange => {
                    restore.push(path.clone())
                }
            }
        }
        if !restore.is_empty() {
            let mut checkout = CheckoutBuilder::new();
            checkout.force().disable_pathspec_match(true);
            for path in &restore {
                checkout.path(path.as_str());
            }
            self.repo
                .checkout_tree(base_tree.as_object(), Some(&mut checkout))
                .map_err(GitError::git("restore discarded files"))?;
        }

        // Base tree plus the working-tree state of every changed path (a rename's source
        // too); discarded paths now equal the base, so only kept changes differ.
        let mut index = self.repo.index().map_err(GitError::git("read index"))?;
        index
            .read_tree(&base_tree)
            .map_err(GitError::git("stage"))?;
        let mut paths: BTreeSet<&str> = changes.keys().map(String::as_str).collect();
        for status in changes.values() {
            if let ChangeStatus::Renamed { from } = status {
                paths.insert(from);
            }
        }
        for path in paths {
            let exists = std::fs::symlink_metadata(self.workdir.join(path)).is_ok();
            if exists {
                index.add_path(Path::new(path))
            } else {
                index.remove_path(Path::new(path))
            }
            .map_err(GitError::git("stage"))?;
        }
        index.write().map_err(GitError::git("write index"))?;
        let tree = index.write_tree().map_err(GitError::git("write tree"))?;
        Ok(Staged {
            head: head.commit,
            tree,
            kept,
            discarded,
        })
    }

    /// Commits `tree` on HEAD (`head`), or returns `None` when it is HEAD's own tree. The
    /// index is set to the committed tree.
    fn commit_tree(&self, head: Oid, tree: Oid, message: &str) -> Result<Option<Oid>, GitError> {
        let parent = self
            .repo
            .find_commit(head)
            .map_err(GitError::git("read HEAD"))?;
        if parent.tree_id() == tree {
            return Ok(None);
        }
        let tree = self
            .repo
            .find_tree(tree)
            .map_err(GitError::git("read tree"))?;
        let signature = self.signature()?;
        let commit = self
            .repo
            .commit(
                Some("HEAD"),
                &signature,
                &signature,
                message,
                &tree,
                &[&parent],
            )
            .map_err(GitError::git("commit"))?;
        self.reset_index_to(commit)?;
        Ok(Some(commit))
    }

    /// Sets the index to a commit's tree without touching the working tree (`git reset`).
    fn reset_index_to(&self, commit: Oid) -> Result<(), GitError> {
        let tree = self
            .repo
            .find_commit(commit)
            .and_then(|c| c.tree())
            .map_err(GitError::git("read commit"))?;
        let mut index = self.repo.index().map_err(GitError::git("read index"))?;
        index
            .read_tree(&tree)
            .map_err(GitError::git("reset index"))?;
        index.write().map_err(GitError::git("write index"))
    }

    /// Deletes a file discarded by review and the directories it leaves empty.
    fn remove_file(&self, path: &str) -> Result<(), GitError> {
        let full = self.workdir.join(path);
        match std::fs::remove_file(&full) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(GitError::Io {
                    operation: "remove discarded file",
                    path: full,
                    source,
                });
            }
        }
        let mut dir = full.parent();
        while let Some(d) = dir {
            // `remove_dir` fails on a non-empty directory, which is where pruning stops.
            if d == self.workdir || std::fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
        Ok(())
    }
}

/// Each reviewed path's decision, refusing unknown paths and contradictions.
fn decisions<'a>(
    changes: &BTreeMap<String, ChangeStatus>,
    reviewed: &'a [Reviewed],
) -> Result<BTreeMap<&'a str, Decision>, GitError> {
    let unknown: BTreeSet<String> = reviewed
        .iter()
        .filter(|r| !changes.contains_key(&r.path))
        .map(|r| r.path.clone())
        .collect();
    if !unknown.is_empty() {
        return Err(GitError::UnknownReviewedPaths {
            paths: unknown.into_iter().collect(),
        });
    }
    let mut out = BTreeMap::new();
    for r in reviewed {
        if let Some(previous) = out.insert(r.path.as_str(), r.decision)
            && previous != r.decision
        {
            return Err(GitError::ContradictoryReview {
                path: r.path.clone(),
            });
        }
    }
    Ok(out)
}
