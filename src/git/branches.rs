//! The task branch's life: start it at HEAD (carrying a dirty tree), list and resolve the
//! stale ones left by earlier sessions, merge it into its base, delete it.

use std::path::Path;

use git2::{BranchType, Oid};
use serde::{Deserialize, Serialize};

use super::error::GitError;
use super::name::{TASK_PREFIX, checked_task_branch_name, parse_task_branch, split_task_branch};
use super::repo::Repo;

/// A session's task branch, as stored in its checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskBranch {
    pub name: String,
    /// The branch it was started from and merges back into.
    pub base_branch: String,
    /// The commit it was started at (hex): changes are measured against it.
    pub base_commit: String,
}

/// An `llm_task_*` branch other than the session's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleBranch {
    pub name: String,
    /// `None` when the name does not have the `_from_` form at all.
    pub session_id: Option<String>,
    pub base_branch: Option<String>,
    /// Commits on the branch that its base lacks; `None` when the base is unknown or gone.
    pub commits_ahead: Option<usize>,
    pub checked_out: bool,
}

/// A commit of a stale branch that its base lacks, as shown to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AheadCommit {
    /// The abbreviated id (12 hex digits).
    pub id: String,
    /// The first line of its message, at most [`SUBJECT_CHARS`] characters.
    pub subject: String,
}

/// The longest commit subject shown; a longer one is cut and ends in `…`.
pub const SUBJECT_CHARS: usize = 120;

/// A stale branch with what the user needs to decide about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleDetail {
    pub branch: StaleBranch,
    /// Whole days since the branch was created (its oldest reflog entry), or since its
    /// tip was committed when it has no reflog.
    pub age_days: Option<u64>,
    /// The newest commits ahead of the base, newest first, at most the number asked for.
    pub commits: Vec<AheadCommit>,
    /// Commits ahead of the base that `commits` leaves out.
    pub more_commits: usize,
}

/// The stale branches shown before the user chooses, bounded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StaleReport {
    /// The checked-out one first (it is the one `merge` and `continue` act on), then by
    /// name; at most the number asked for.
    pub branches: Vec<StaleDetail>,
    /// Stale branches that `branches` leaves out.
    pub more_branches: usize,
}

/// The user's answer to stale task branches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StaleChoice {
    /// Delete every task branch (after checking out the base of the current one).
    Delete,
    /// Merge the checked-out task branch into its base, then delete the others.
    Merge,
    /// Leave everything as it is.
    Continue,
}

/// A deleted task branch and how much work only it held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletedBranch {
    pub name: String,
    /// Commits no other (non-task) local branch contains: lost unless recovered from the
    /// reflog. Non-zero means unmerged work was deleted, at the user's choice.
    pub unmerged_commits: usize,
}

/// A task branch that could not be deleted, and why (checked out in another worktree).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptBranch {
    pub name: String,
    pub reason: String,
}

/// What resolving stale branches did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StaleOutcome {
    pub deleted: Vec<DeletedBranch>,
    pub kept: Vec<KeptBranch>,
    pub merged: Option<MergeOutcome>,
    /// The branch checked out to leave a task branch, if any.
    pub checked_out: Option<String>,
    /// Uncommitted paths carried over by that checkout.
    pub carried: Vec<String>,
}

/// How the task branch reached its base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeKind {
    /// The base had not moved: it now points at the task's tip.
    FastForward,
    /// Both moved: a merge commit "Merge <task> into <base>".
    MergeCommit,
    /// The base already contained every task commit (or there were none).
    UpToDate,
}

/// A finished merge: the base is checked out and the task branch deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeOutcome {
    pub task_branch: String,
    pub base_branch: String,
    pub kind: MergeKind,
    /// The base's new tip (hex).
    pub commit: String,
}

/// A deleted task branch after a failed outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteOutcome {
    pub deleted: DeletedBranch,
    /// Whether the base had to be checked out first.
    pub checked_out_base: bool,
    /// Uncommitted paths carried onto the base.
    pub carried: Vec<String>,
}

impl Repo {
    /// Creates the session's task branch at HEAD and checks it out without touching the
    /// index or the working tree: the branch points at the same commit, so a dirty tree is
    /// simply carried onto it. Returns the branch and the carried paths.
    ///
    /// Idempotent: when HEAD already is this session's branch it is returned as it is, and
    /// when the branch exists but is not checked out (a kill between creating and checking
    /// it out, or an answer lost) it is taken up if it holds nothing but this session's
    /// work: at HEAD, or ahead of it only (then checked out in safe mode, which refuses to
    /// overwrite uncommitted files). Refuses when HEAD is another task branch, and when the
    /// session's branch has diverged from HEAD.
    pub fn start_task_branch(
        &self,
        session_id: &str,
    ) -> Result<(TaskBranch, Vec<String>), GitError> {
        self.require_clean_state()?;
        let head = self.head_branch()?;
        if head.branch.starts_with(TASK_PREFIX) {
            return match parse_task_branch(&head.branch) {
                Some((id, base)) if id == session_id => {
                    let branch = self.task_branch_at(&head.branch, &base, head.commit)?;
                    Ok((branch, self.uncommitted()?))
                }
                _ => Err(GitError::OnOtherTaskBranch {
                    current: head.branch,
                }),
            };
        }
        let name = checked_task_branch_name(session_id, &head.branch)?;
        let _intent = self.begin("start the task branch", &[&name])?;
        let carried = self.uncommitted()?;
        match self.branch_tip(&name)? {
            None => {
                let commit = self
                    .repo
                    .find_commit(head.commit)
                    .map_err(GitError::git("read HEAD"))?;
                self.repo
                    .branch(&name, &commit, false)
                    .map_err(GitError::git("create branch"))?;
            }
            Some(tip) if tip == head.commit => self.require_not_checked_out_elsewhere(&name)?,
            Some(tip)
                if self
                    .repo
                    .graph_descendant_of(tip, head.commit)
                    .map_err(GitError::git("merge analysis"))? =>
            {
                self.require_not_checked_out_elsewhere(&name)?;
                self.checkout_commit(tip)?;
            }
            Some(_) => return Err(GitError::TaskBranchExists { name }),
        }
        self.repo
            .set_head(&format!("refs/heads/{name}"))
            .map_err(GitError::git("set HEAD"))?;
        Ok((
            TaskBranch {
                name,
                base_branch: head.branch,
                base_commit: head.commit.to_string(),
            },
            carried,
        ))
    }

    /// The task branch `name` rebuilt from its name after a restart: the base commit is
    /// where it forked from its base (the original guessed main/master/develop instead).
    fn task_branch_at(&self, name: &str, base: &str, tip: Oid) -> Result<TaskBranch, GitError> {
        let base_tip = self
            .branch_tip(base)?
            .ok_or_else(|| GitError::BaseBranchMissing {
                base: base.to_string(),
            })?;
        let fork = self
            .repo
            .merge_base(base_tip, tip)
            .map_err(GitError::git("merge-base"))?;
        Ok(TaskBranch {
            name: name.to_string(),
            base_branch: base.to_string(),
            base_commit: fork.to_string(),
        })
    }

    /// The task branch checked out now, rebuilt from its name, if HEAD is one of ours.
    pub fn current_task_branch(&self) -> Result<Option<TaskBranch>, GitError> {
        let head = self.head_branch()?;
        match parse_task_branch(&head.branch) {
            Some((_, base)) => Ok(Some(self.task_branch_at(
                &head.branch,
                &base,
                head.commit,
            )?)),
            None => Ok(None),
        }
    }

    /// How many commits of the task branch no other local branch has: the work deleting
    /// it would lose (0 when the branch is gone).
    pub fn unmerged_work(&self, branch: &TaskBranch) -> Result<usize, GitError> {
        match self.branch_tip(&branch.name)? {
            Some(tip) => self.unmerged_commits(tip),
            None => Ok(0),
        }
    }

    /// Where HEAD is now, as a baseline to measure changes against when a session works
    /// without a task branch (`--quick`): the checked-out branch and its commit.
    pub fn baseline(&self) -> Result<TaskBranch, GitError> {
        let head = self.head_branch()?;
        Ok(TaskBranch {
            name: head.branch.clone(),
            base_branch: head.branch,
            base_commit: head.commit.to_string(),
        })
    }

    /// Every local `llm_task_*` branch except `own`, sorted by name.
    pub fn stale_task_branches(&self, own: Option<&str>) -> Result<Vec<StaleBranch>, GitError> {
        let current = self.head_branch().ok().map(|h| h.branch);
        let mut out = Vec::new();
        for name in self.task_branch_names()? {
            if Some(name.as_str()) == own {
                continue;
            }
            let split = split_task_branch(&name);
            let base_branch = split.as_ref().map(|(_, base)| base.clone());
            let tip = self.branch_tip(&name)?;
            let commits_ahead = match (&base_branch, tip) {
                (Some(base), Some(tip)) => match self.branch_tip(base)? {
                    Some(base_tip) => Some(
                        self.repo
                            .graph_ahead_behind(tip, base_tip)
                            .map_err(GitError::git("count commits"))?
                            .0,
                    ),
                    None => None,
                },
                _ => None,
            };
            out.push(StaleBranch {
                session_id: split.map(|(id, _)| id.to_string()),
                base_branch,
                commits_ahead,
                checked_out: current.as_deref() == Some(name.as_str()),
                name,
            });
        }
        Ok(out)
    }

    /// The stale branches (every `llm_task_*` branch but `own`) with their age and the
    /// subjects of their commits ahead of the base: at most `max_branches` branches (the
    /// checked-out one always among them) and `max_commits` subjects each, with counts of
    /// what was left out.
    pub fn stale_report(
        &self,
        own: Option<&str>,
        max_branches: usize,
        max_commits: usize,
    ) -> Result<StaleReport, GitError> {
        let mut stale = self.stale_task_branches(own)?;
        // Stable: the checked-out branch first, the others keep their name order.
        stale.sort_by_key(|b| !b.checked_out);
        let more_branches = stale.len().saturating_sub(max_branches);
        stale.truncate(max_branches);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut branches = Vec::with_capacity(stale.len());
        for branch in stale {
            let tip = self.branch_tip(&branch.name)?;
            let base_tip = match &branch.base_branch {
                Some(base) => self.branch_tip(base)?,
                None => None,
            };
            let commits = match (tip, base_tip) {
                (Some(tip), Some(base_tip)) => self.commits_ahead(tip, base_tip, max_commits)?,
                _ => Vec::new(),
            };
            let more_commits = branch
                .commits_ahead
                .unwrap_or(0)
                .saturating_sub(commits.len());
            let age_days = self
                .created_at(&branch.name, tip)
                .map(|created| now.saturating_sub(created) / 86_400);
            branches.push(StaleDetail {
                branch,
                age_days,
                commits,
                more_commits,
            });
        }
        Ok(StaleReport {
            branches,
            more_branches,
        })
    }

    /// The newest `max` commits reachable from `tip` but not from `base_tip`.
    fn commits_ahead(
        &self,
        tip: Oid,
        base_tip: Oid,
        max: usize,
    ) -> Result<Vec<AheadCommit>, GitError> {
        let mut walk = self.repo.revwalk().map_err(GitError::git("revwalk"))?;
        walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::TIME)
            .map_err(GitError::git("revwalk"))?;
        walk.push(tip).map_err(GitError::git("revwalk"))?;
        walk.hide(base_tip).map_err(GitError::git("revwalk"))?;
        let mut out = Vec::new();
        for oid in walk.take(max) {
            let oid = oid.map_err(GitError::git("revwalk"))?;
            let commit = self
                .repo
                .find_commit(oid)
                .map_err(GitError::git("read commit"))?;
            let summary = String::from_utf8_lossy(commit.summary_bytes().unwrap_or_default());
            let subject = if summary.chars().count() > SUBJECT_CHARS {
                let cut: String = summary.chars().take(SUBJECT_CHARS - 1).collect();
                format!("{cut}…")
            } else {
                summary.into_owned()
            };
            let id = oid.to_string();
            out.push(AheadCommit {
                id: id[..12.min(id.len())].to_string(),
                subject,
            });
        }
        Ok(out)
    }

    /// When branch `name` was created, in Unix seconds: its oldest reflog entry, or its
    /// tip's commit time when git kept no reflog for it.
    fn created_at(&self, name: &str, tip: Option<Oid>) -> Option<u64> {
        let logged = self
            .repo
            .reflog(&format!("refs/heads/{name}"))
            .ok()
            .and_then(|log| {
                let oldest = log.len().checked_sub(1)?;
                log.get(oldest).map(|e| e.committer().when().seconds())
            });
        let committed = || {
            tip.and_then(|t| self.repo.find_commit(t).ok())
                .map(|c| c.time().seconds())
        };
        logged
            .or_else(committed)
            .and_then(|s| u64::try_from(s).ok())
    }

    fn task_branch_names(&self) -> Result<Vec<String>, GitError> {
        let branches = self
            .repo
            .branches(Some(BranchType::Local))
            .map_err(GitError::git("list branches"))?;
        let mut names = Vec::new();
        for branch in branches {
            let (branch, _) = branch.map_err(GitError::git("list branches"))?;
            // A name that is not UTF-8 is no task branch of ours.
            if let Ok(Some(name)) = branch.name()
                && name.starts_with(TASK_PREFIX)
            {
                names.push(name.to_string());
            }
        }
        names.sort();
        Ok(names)
    }

    /// Carries out the user's choice about stale task branches.
    ///
    /// `Merge` needs a task branch checked out and refuses before deleting anything
    /// otherwise (the original deleted first, then failed). A merge conflict leaves
    /// everything as it was. Deleted branches are listed with their unmerged commits.
    pub fn resolve_stale(&self, choice: StaleChoice) -> Result<StaleOutcome, GitError> {
        let mut outcome = StaleOutcome::default();
        if choice == StaleChoice::Continue {
            return Ok(outcome);
        }
        // Every branch this may write: the task branches, their bases and HEAD's.
        let mut touched = self.task_branch_names()?;
        touched.extend(
            touched
                .iter()
                .filter_map(|name| split_task_branch(name).map(|(_, base)| base))
                .collect::<Vec<_>>(),
        );
        if let Ok(head) = self.head_branch() {
            touched.push(head.branch);
        }
        let touched: Vec<&str> = touched.iter().map(String::as_str).collect();
        let _intent = self.begin("resolve stale task branches", &touched)?;
        match choice {
            StaleChoice::Continue => return Ok(outcome),
            StaleChoice::Delete => {
                self.require_clean_state()?;
                let head = self.head_branch()?;
                if head.branch.starts_with(TASK_PREFIX) {
                    let (_, base) = split_task_branch(&head.branch).ok_or_else(|| {
                        GitError::BaseBranchMissing {
                            base: format!("(none encoded in {})", head.branch),
                        }
                    })?;
                    outcome.carried = self.switch_to(&base)?;
                    outcome.checked_out = Some(base);
                }
            }
            StaleChoice::Merge => {
                let head = self.head_branch()?;
                let Some((_, base)) = split_task_branch(&head.branch) else {
                    return Err(GitError::NoTaskBranchCheckedOut {
                        current: head.branch,
                    });
                };
                let branch = self.task_branch_at(&head.branch, &base, head.commit)?;
                let merged = self.merge_into_base(&branch)?;
                outcome.checked_out = Some(merged.base_branch.clone());
                outcome.merged = Some(merged);
            }
        }
        for name in self.task_branch_names()? {
            match self.delete_branch(&name) {
                Ok(deleted) => outcome.deleted.push(deleted),
                Err(e) => outcome.kept.push(KeptBranch {
                    name,
                    reason: e.to_string(),
                }),
            }
        }
        Ok(outcome)
    }

    /// Deletes a local branch that is not checked out here, reporting its unmerged work.
    fn delete_branch(&self, name: &str) -> Result<DeletedBranch, GitError> {
        let mut branch = self
            .repo
            .find_branch(name, BranchType::Local)
            .map_err(GitError::git("find branch"))?;
        let unmerged_commits = match branch.get().target() {
            Some(tip) => self.unmerged_commits(tip)?,
            None => 0,
        };
        branch.delete().map_err(GitError::git("delete branch"))?;
        Ok(DeletedBranch {
            name: name.to_string(),
            unmerged_commits,
        })
    }

    /// Merges the checked-out task branch into its base: fast-forward when the base has not
    /// moved, else a merge commit. Then the base is checked out and the task branch deleted.
    ///
    /// Refuses uncommitted changes (ignored files and what the repository leaves alone,
    /// [`Repo::leaving`], aside: those are carried to the base as they are, and the safe
    /// checkout refuses to overwrite one) and a missing base. The merge is
    /// computed in memory first, so a conflict changes nothing: HEAD, index and working
    /// tree stay as they were and the conflicted files are named.
    ///
    /// Called again after a kill that came once the base had moved, it finishes what was
    /// left (HEAD to the base, the task branch deleted) and reports that merge.
    pub fn merge_into_base(&self, branch: &TaskBranch) -> Result<MergeOutcome, GitError> {
        self.require_clean_state()?;
        let _intent = self.begin("merge", &[&branch.name, &branch.base_branch])?;
        if let Some(done) = self.finish_landed_merge(branch)? {
            return Ok(done);
        }
        let head = self.require_on(&branch.name)?;
        let uncommitted: Vec<String> = self
            .uncommitted()?
            .into_iter()
            .filter(|p| !self.leaves(p))
            .collect();
        // A kill while the merge commit was being checked out leaves files of the merge in
        // the task tip's tree: those are checked out again, forced over them only.
        let interrupted =
            !uncommitted.is_empty() && self.interrupted_merge_checkout(branch, head.commit)?;
        if !uncommitted.is_empty() && !interrupted {
            return Err(GitError::Uncommitted { paths: uncommitted });
        }
        let base_ref = format!("refs/heads/{}", branch.base_branch);
        let base_tip =
            self.branch_tip(&branch.base_branch)?
                .ok_or_else(|| GitError::BaseBranchMissing {
                    base: branch.base_branch.clone(),
                })?;
        self.require_not_checked_out_elsewhere(&branch.base_branch)?;
        let task_tip = head.commit;
        let up_to_date = base_tip == task_tip
            || self
                .repo
                .graph_descendant_of(base_tip, task_tip)
                .map_err(GitError::git("merge analysis"))?;
        let fast_forward = !up_to_date
            && self
                .repo
                .graph_descendant_of(task_tip, base_tip)
                .map_err(GitError::git("merge analysis"))?;
        let (kind, new_tip) = if up_to_date {
            self.checkout_commit(base_tip)?;
            (MergeKind::UpToDate, base_tip)
        } else if fast_forward {
            // The clean working tree already is the task tip's tree.
            (MergeKind::FastForward, task_tip)
        } else {
            let merge = self.merge_commit(branch, base_tip, task_tip)?;
            if interrupted {
                self.force_checkout(merge)?;
            } else {
                self.checkout_commit(merge)?;
            }
            (MergeKind::MergeCommit, merge)
        };
        let moved = self
            .repo
            .reference_matching(
                &base_ref,
                new_tip,
                true,
                base_tip,
                &format!("merge {}: {kind:?}", branch.name),
            )
            .and_then(|_| self.repo.set_head(&base_ref));
        if let Err(e) = moved {
            // Put the task branch's files back, so the failed merge leaves HEAD and tree
            // consistent. The tree was clean at the task tip, so forcing only rewrites
            // files this merge wrote; the ref error is the one worth reporting.
            let _ = self.force_checkout(task_tip);
            return Err(GitError::git("update the base branch")(e));
        }
        self.delete_branch(&branch.name)?;
        Ok(MergeOutcome {
            task_branch: branch.name.clone(),
            base_branch: branch.base_branch.clone(),
            kind,
            commit: new_tip.to_string(),
        })
    }

    /// Whether every difference of the index and working tree from the task tip is the
    /// merge's own: a checkout of the merge commit a kill cut short. Each differing file
    /// must already hold the merge's version in the working tree, or the start of it (the
    /// file being written), or be absent from both; and the index may hold only the task
    /// tip's or the merge's version. Forcing the checkout again then overwrites nothing but
    /// this merge's own files. Only for a merge
    /// that needs a merge commit (no other kind checks anything out over the task tip).
    fn interrupted_merge_checkout(
        &self,
        branch: &TaskBranch,
        task_tip: Oid,
    ) -> Result<bool, GitError> {
        let Some(base_tip) = self.branch_tip(&branch.base_branch)? else {
            return Ok(false);
        };
        let related = base_tip == task_tip
            || self
                .repo
                .graph_descendant_of(base_tip, task_tip)
                .map_err(GitError::git("merge analysis"))?
            || self
                .repo
                .graph_descendant_of(task_tip, base_tip)
                .map_err(GitError::git("merge analysis"))?;
        if related {
            return Ok(false);
        }
        let read = |oid: Oid| {
            self.repo
                .find_commit(oid)
                .and_then(|c| c.tree())
                .map_err(GitError::git("merge"))
        };
        let (ours, theirs) = (
            self.repo
                .find_commit(base_tip)
                .map_err(GitError::git("merge"))?,
            self.repo
                .find_commit(task_tip)
                .map_err(GitError::git("merge"))?,
        );
        let mut merged = self
            .repo
            .merge_commits(&ours, &theirs, None)
            .map_err(GitError::git("merge"))?;
        if merged.has_conflicts() {
            return Ok(false);
        }
        let target = self
            .repo
            .find_tree(
                merged
                    .write_tree_to(&self.repo)
                    .map_err(GitError::git("write merge tree"))?,
            )
            .map_err(GitError::git("write merge tree"))?;
        let task_tree = read(task_tip)?;
        let index = self.repo.index().map_err(GitError::git("read index"))?;
        for path in self.differences_from(task_tip)? {
            if self.leaves(&path) {
                continue;
            }
            let rel = Path::new(&path);
            let wanted = target.get_path(rel).ok().map(|e| e.id());
            let in_task = task_tree.get_path(rel).ok().map(|e| e.id());
            let full = self.workdir.join(rel);
            let on_disk = match std::fs::symlink_metadata(&full) {
                Ok(meta) if meta.is_file() => {
                    Some(std::fs::read(&full).map_err(|source| GitError::Io {
                        operation: "read",
                        path: full.clone(),
                        source,
                    })?)
                }
                Ok(_) => return Ok(false),
                Err(_) => None,
            };
            let written = match (on_disk, wanted) {
                (None, None) => true,
                // The merge's version, or the start of it: the file being written when the
                // kill came (libgit2 creates it empty, then writes it), so checking it out
                // again only completes it.
                (Some(bytes), Some(id)) => {
                    let blob = self
                        .repo
                        .find_blob(id)
                        .map_err(GitError::git("read blob"))?;
                    blob.content().starts_with(&bytes)
                }
                _ => false,
            };
            let staged = index.get_path(rel, 0).map(|e| e.id);
            let index_ours = staged.is_none() || staged == wanted || staged == in_task;
            if !written || !index_ours {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// A merge of `branch` that a kill interrupted after the base moved, finished: the
    /// base's newest reflog entry is this merge's (its message names the task branch) and
    /// the base still points where it left it, and the task branch, if still there, is
    /// contained in the base. HEAD then moves to the base, when the index and working tree
    /// already are the base's (the merge checked them out before moving the base), and the
    /// task branch is deleted. `None` when no such merge landed.
    fn finish_landed_merge(&self, branch: &TaskBranch) -> Result<Option<MergeOutcome>, GitError> {
        let Some(base_tip) = self.branch_tip(&branch.base_branch)? else {
            return Ok(None);
        };
        let Some(kind) = self.logged_merge(&branch.name, &branch.base_branch, base_tip)? else {
            return Ok(None);
        };
        let task_tip = self.branch_tip(&branch.name)?;
        if let Some(tip) = task_tip {
            let contained = tip == base_tip
                || self
                    .repo
                    .graph_descendant_of(base_tip, tip)
                    .map_err(GitError::git("merge analysis"))?;
            if !contained {
                return Ok(None);
            }
        }
        let head = self.head_branch()?;
        if head.branch == branch.name {
            let differing = self.differences_from(base_tip)?;
            if !differing.is_empty() {
                return Err(GitError::Uncommitted { paths: differing });
            }
            self.require_not_checked_out_elsewhere(&branch.base_branch)?;
            self.repo
                .set_head(&format!("refs/heads/{}", branch.base_branch))
                .map_err(GitError::git("set HEAD"))?;
        } else if head.branch != branch.base_branch {
            return Ok(None);
        }
        if task_tip.is_some() {
            self.delete_branch(&branch.name)?;
        }
        Ok(Some(MergeOutcome {
            task_branch: branch.name.clone(),
            base_branch: branch.base_branch.clone(),
            kind,
            commit: base_tip.to_string(),
        }))
    }

    /// The kind of the merge of `task` recorded as the newest reflog entry of `base`, when
    /// that entry moved `base` to `tip` (written by [`Repo::merge_into_base`]).
    fn logged_merge(
        &self,
        task: &str,
        base: &str,
        tip: Oid,
    ) -> Result<Option<MergeKind>, GitError> {
        let reflog = self
            .repo
            .reflog(&format!("refs/heads/{base}"))
            .map_err(GitError::git("read the reflog"))?;
        // Entry 0 is the newest.
        let Some(entry) = reflog.get(0) else {
            return Ok(None);
        };
        if entry.id_new() != tip {
            return Ok(None);
        }
        let logged = entry
            .message_bytes()
            .and_then(|m| m.strip_prefix(format!("merge {task}: ").as_bytes()));
        Ok(match logged {
            Some(b"FastForward") => Some(MergeKind::FastForward),
            Some(b"MergeCommit") => Some(MergeKind::MergeCommit),
            Some(b"UpToDate") => Some(MergeKind::UpToDate),
            _ => None,
        })
    }

    /// Writes the merge commit of `task_tip` into `base_tip` without touching any ref, the
    /// index or the working tree; a conflict names the files.
    fn merge_commit(
        &self,
        branch: &TaskBranch,
        base_tip: Oid,
        task_tip: Oid,
    ) -> Result<Oid, GitError> {
        let ours = self
            .repo
            .find_commit(base_tip)
            .map_err(GitError::git("merge"))?;
        let theirs = self
            .repo
            .find_commit(task_tip)
            .map_err(GitError::git("merge"))?;
        let mut index = self
            .repo
            .merge_commits(&ours, &theirs, None)
            .map_err(GitError::git("merge"))?;
        if index.has_conflicts() {
            let mut files = Vec::new();
            for conflict in index.conflicts().map_err(GitError::git("merge"))? {
                let conflict = conflict.map_err(GitError::git("merge"))?;
                let entry = conflict.our.or(conflict.their).or(conflict.ancestor);
                if let Some(entry) = entry {
                    files.push(String::from_utf8_lossy(&entry.path).into_owned());
                }
            }
            files.sort();
            files.dedup();
            return Err(GitError::MergeConflict { files });
        }
        let tree_id = index
            .write_tree_to(&self.repo)
            .map_err(GitError::git("write merge tree"))?;
        let tree = self
            .repo
            .find_tree(tree_id)
            .map_err(GitError::git("write merge tree"))?;
        let signature = self.signature()?;
        self.repo
            .commit(
                None,
                &signature,
                &signature,
                &format!("Merge {} into {}", branch.name, branch.base_branch),
                &tree,
                &[&ours, &theirs],
            )
            .map_err(GitError::git("merge commit"))
    }

    /// Deletes the task branch after a failed outcome. When it is checked out, its base is
    /// checked out first, carrying uncommitted changes over; if one would be overwritten,
    /// nothing is done.
    ///
    /// Called again after a kill, it does what is left: a branch already gone counts as
    /// deleted, with no unmerged work left to report.
    pub fn delete_task_branch(&self, branch: &TaskBranch) -> Result<DeleteOutcome, GitError> {
        self.require_clean_state()?;
        let _intent = self.begin(
            "delete the task branch",
            &[&branch.name, &branch.base_branch],
        )?;
        let on_branch = self.head_branch()?.branch == branch.name;
        let carried = if on_branch {
            self.switch_to(&branch.base_branch)?
        } else {
            Vec::new()
        };
        let deleted = if self.branch_tip(&branch.name)?.is_some() {
            self.delete_branch(&branch.name)?
        } else {
            DeletedBranch {
                name: branch.name.clone(),
                unmerged_commits: 0,
            }
        };
        Ok(DeleteOutcome {
            deleted,
            checked_out_base: on_branch,
            carried,
        })
    }
}
