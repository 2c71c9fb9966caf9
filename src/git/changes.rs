//! What the task changed: every difference of the working tree against the task's base
//! commit (committed on the task branch, staged, unstaged and untracked files alike), for
//! review before committing, and the changed line ranges that checklist evidence must
//! point into.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

use git2::{Delta, Diff, DiffFindOptions, DiffOptions, Oid, Patch};

use super::branches::TaskBranch;
use super::error::GitError;
use super::repo::Repo;

/// A unified diff longer than this is cut at a line boundary and marked truncated, so one
/// generated file cannot flood an agent's context.
pub const DIFF_CAP_BYTES: usize = 64 * 1024;

/// How a path differs from the base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeStatus {
    /// New since the base (tracked or untracked, not ignored; copies count as added).
    Added,
    Modified,
    Deleted,
    /// Moved from `from`, possibly with edits (libgit2's similarity detection).
    Renamed {
        from: String,
    },
    /// A file became a symlink or the reverse.
    TypeChange,
}

/// One changed path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Relative to the working tree, `/`-separated; the new path of a rename.
    pub path: String,
    pub status: ChangeStatus,
    pub binary: bool,
    /// The unified diff against the base (3 lines of context); `None` for binary files.
    pub diff: Option<String>,
    /// Whether `diff` was cut at [`DIFF_CAP_BYTES`].
    pub diff_truncated: bool,
    /// The size of the working-tree file, or of the base version for a deleted one.
    pub size_bytes: u64,
}

/// Changed lines per file: 1-based, inclusive ranges of the working-tree version.
pub type ChangedLines = BTreeMap<String, Vec<RangeInclusive<u32>>>;

impl Repo {
    /// Every change of the working tree against the task's base commit, sorted by path.
    /// A rename is one entry.
    pub fn changes(&self, branch: &TaskBranch) -> Result<Vec<Change>, GitError> {
        let diff = self.diff_against_base(branch, 3)?;
        let mut changes = Vec::new();
        for (index, delta) in diff.deltas().enumerate() {
            if self.leaves(&path_of(&delta)) {
                continue;
            }
            let Some(status) = change_status(delta.status(), &delta) else {
                continue;
            };
            let mut patch = Patch::from_diff(&diff, index).map_err(GitError::git("diff"))?;
            let binary = delta.flags().is_binary()
                || patch
                    .as_ref()
                    .is_some_and(|p| p.delta().flags().is_binary());
            let (diff_text, diff_truncated) = match (&mut patch, binary) {
                (Some(patch), false) => {
                    let buf = patch.to_buf().map_err(GitError::git("diff"))?;
                    let (text, truncated) = capped(&String::from_utf8_lossy(&buf));
                    (Some(text), truncated)
                }
                _ => (None, false),
            };
            let path = path_of(&delta);
            let size_bytes = if status == ChangeStatus::Deleted {
                self.repo
                    .find_blob(delta.old_file().id())
                    .map(|b| b.size() as u64)
                    .unwrap_or(0)
            } else {
                std::fs::symlink_metadata(self.workdir.join(&path))
                    .map(|m| m.len())
                    .unwrap_or(0)
            };
            changes.push(Change {
                path,
                status,
                binary,
                diff: diff_text,
                diff_truncated,
                size_bytes,
            });
        }
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(changes)
    }

    /// For each changed text file that exists in the working tree, the line ranges added
    /// or modified against the base; a new file is wholly changed (an empty one has no
    /// ranges). Deleted and binary files have no lines and are left out; lines that were
    /// only removed leave no range.
    pub fn changed_lines(&self, branch: &TaskBranch) -> Result<ChangedLines, GitError> {
        let diff = self.diff_against_base(branch, 0)?;
        let mut out = ChangedLines::new();
        for (index, delta) in diff.deltas().enumerate() {
            if self.leaves(&path_of(&delta)) {
                continue;
            }
            match change_status(delta.status(), &delta) {
                None | Some(ChangeStatus::Deleted) => continue,
                Some(_) => {}
            }
            let Some(patch) = Patch::from_diff(&diff, index).map_err(GitError::git("diff"))? else {
                continue;
            };
            if patch.delta().flags().is_binary() {
                continue;
            }
            let mut lines = Vec::new();
            for hunk in 0..patch.num_hunks() {
                let count = patch
                    .num_lines_in_hunk(hunk)
                    .map_err(GitError::git("diff"))?;
                for line in 0..count {
                    let line = patch
                        .line_in_hunk(hunk, line)
                        .map_err(GitError::git("diff"))?;
                    if line.origin() == '+'
                        && let Some(number) = line.new_lineno()
                    {
                        lines.push(number);
                    }
                }
            }
            out.insert(path_of(&delta), ranges(lines));
        }
        Ok(out)
    }

    /// Each changed path with its status, without loading diffs.
    pub(super) fn change_set(
        &self,
        branch: &TaskBranch,
    ) -> Result<Vec<(String, ChangeStatus)>, GitError> {
        let diff = self.diff_against_base(branch, 0)?;
        Ok(diff
            .deltas()
            .filter_map(|delta| Some((path_of(&delta), change_status(delta.status(), &delta)?)))
            .filter(|(path, _)| !self.leaves(path))
            .collect())
    }

    /// The diff from the base commit's tree to the working tree (through the index, so
    /// staged and unstaged changes both count), untracked files included, renames found.
    pub(super) fn diff_against_base(
        &self,
        branch: &TaskBranch,
        context: u32,
    ) -> Result<Diff<'_>, GitError> {
        let base_tree = self.base_tree(branch)?;
        let mut options = DiffOptions::new();
        options
            .include_untracked(true)
            .recurse_untracked_dirs(true)
            .show_untracked_content(true)
            .include_typechange(true)
            .ignore_submodules(true)
            .context_lines(context);
        let diff = |options: &mut DiffOptions| {
            self.repo
                .diff_tree_to_workdir_with_index(Some(&base_tree), Some(options))
                .map_err(GitError::git("diff"))
        };
        let mut found = diff(&mut options)?;
        let mut find = DiffFindOptions::new();
        find.renames(true).for_untracked(true);
        found
            .find_similar(Some(&mut find))
            .map_err(GitError::git("find renames"))?;
        // A rename pairs two paths; when one of them is left alone (the user's, or never a
        // task's), the pair would hide the other side's change or drag the left-alone one
        // into the task's commit. Each path then stands on its own.
        let mixed = found.deltas().any(|d| {
            d.status() == Delta::Renamed
                && (self.leaves(&diff_file_path(&d.old_file()))
                    || self.leaves(&diff_file_path(&d.new_file())))
        });
        if mixed {
            found = diff(&mut options)?;
        }
        Ok(found)
    }

    /// Whether `path` (root-relative) is a file of the base commit: a file that does not
    /// exist now but did then was deleted, not "to be created".
    pub fn existed_at_base(&self, branch: &TaskBranch, path: &str) -> bool {
        self.base_tree(branch)
            .is_ok_and(|tree| tree.get_path(std::path::Path::new(path)).is_ok())
    }

    pub(super) fn base_tree(&self, branch: &TaskBranch) -> Result<git2::Tree<'_>, GitError> {
        Oid::from_str(&branch.base_commit)
            .and_then(|oid| self.repo.find_commit(oid))
            .and_then(|commit| commit.tree())
            .map_err(GitError::git("read the base commit"))
    }
}

fn change_status(delta: Delta, diff_delta: &git2::DiffDelta<'_>) -> Option<ChangeStatus> {
    match delta {
        Delta::Added | Delta::Untracked | Delta::Copied => Some(ChangeStatus::Added),
        Delta::Modified | Delta::Conflicted | Delta::Unreadable => Some(ChangeStatus::Modified),
        Delta::Deleted => Some(ChangeStatus::Deleted),
        Delta::Renamed => Some(ChangeStatus::Renamed {
            from: diff_file_path(&diff_delta.old_file()),
        }),
        Delta::Typechange => Some(ChangeStatus::TypeChange),
        Delta::Unmodified | Delta::Ignored => None,
    }
}

/// The path a change is known by: the new one, or the old one for a deletion.
fn path_of(delta: &git2::DiffDelta<'_>) -> String {
    if delta.status() == Delta::Deleted {
        diff_file_path(&delta.old_file())
    } else {
        diff_file_path(&delta.new_file())
    }
}

fn diff_file_path(file: &git2::DiffFile<'_>) -> String {
    file.path_bytes()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}

fn capped(text: &str) -> (String, bool) {
    if text.len() <= DIFF_CAP_BYTES {
        return (text.to_string(), false);
    }
    let mut end = DIFF_CAP_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = text[..end].rfind('\n').map_or(end, |i| i + 1);
    (text[..cut].to_string(), true)
}

/// Sorted line numbers folded into inclusive ranges.
fn ranges(mut lines: Vec<u32>) -> Vec<RangeInclusive<u32>> {
    lines.sort_unstable();
    lines.dedup();
    let mut out: Vec<RangeInclusive<u32>> = Vec::new();
    for line in lines {
        match out.last_mut() {
            Some(last) if *last.end() + 1 == line => *last = *last.start()..=line,
            _ => out.push(line..=line),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_fold_into_ranges() {
        assert_eq!(ranges(vec![5, 1, 2, 3, 7, 8]), vec![1..=3, 5..=5, 7..=8]);
        assert!(ranges(Vec::new()).is_empty());
    }

    #[test]
    fn long_diffs_are_cut_at_a_line() {
        let text = "x\n".repeat(DIFF_CAP_BYTES);
        let (cut, truncated) = capped(&text);
        assert!(truncated);
        assert!(cut.len() <= DIFF_CAP_BYTES && cut.ends_with('\n'));
        assert_eq!(capped("a\n"), ("a\n".to_string(), false));
    }
}
