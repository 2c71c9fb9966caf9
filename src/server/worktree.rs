//! The working tree is checked at every `submit_phase`, whatever wrote to it. The write
//! hooks see only the client's own edit tools (and, best effort, shell commands); a file
//! changed by a script, a build step or a command the hook did not understand is found
//! here, before the step runs:
//!
//! - in a state whose write gate allows writes (implementation), every changed file must
//!   have been explored or added, as at the end of implementation;
//! - in any other state, what is not committed must be exactly as the server last
//!   accepted it ([`HostState::accepted_tree`]): before implementation that is the
//!   user's own uncommitted work and nothing else, after it the implementation as
//!   submitted.
//!
//! Which states allow writes comes from the contract through [`crate::server::session_record::WriteGate`],
//! so no state is named here. [`judge`] is the pure rule; [`check`] reads the tree.

use std::collections::BTreeMap;
use std::path::Path;

use super::session_record::{HostState, bytes_hash, content_hash};
use crate::git::{self, ChangeStatus, GitError};

/// One changed path as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Current {
    pub status: ChangeStatus,
    /// The sha256 of the content now, `None` when deleted.
    pub hash: Option<String>,
}

/// What the check found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Verdict {
    /// Changed files that were neither explored nor added (writes allowed).
    pub unexplored: Vec<String>,
    /// Files changed where no write is allowed, with how to restore each.
    pub changed: Vec<Restore>,
}

impl Verdict {
    pub(crate) fn is_clean(&self) -> bool {
        self.unexplored.is_empty() && self.changed.is_empty()
    }
}

/// A file changed in a state that allows no writes, and how it comes back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Restore {
    /// A file that was not there: delete it.
    Delete(String),
    /// HEAD holds the content it had: `git checkout HEAD -- FILE`.
    FromHead(String),
    /// Its earlier content is uncommitted (the user's work, or this session's
    /// implementation): git cannot bring it back.
    ByHand(String),
}

impl Restore {
    pub(crate) fn path(&self) -> &str {
        match self {
            Restore::Delete(p) | Restore::FromHead(p) | Restore::ByHand(p) => p,
        }
    }

    /// The shell command that restores the file, if there is one.
    pub(crate) fn command(&self) -> Option<String> {
        match self {
            Restore::Delete(p) => Some(format!("rm -- {}", shell_quote(p))),
            Restore::FromHead(p) => Some(format!("git checkout HEAD -- {}", shell_quote(p))),
            Restore::ByHand(_) => None,
        }
    }
}

/// The rule, on the tree as it is now (`current`: every path that differs from the
/// baseline) and what the session knows. `head_hash` gives the sha256 of a path's
/// content in HEAD (`None`: HEAD has no such file).
pub(crate) fn judge(
    current: &BTreeMap<String, Current>,
    host: &HostState,
    writes_allowed: bool,
    root: &Path,
    head_hash: impl Fn(&str) -> Option<String>,
) -> Verdict {
    let mut verdict = Verdict::default();
    if writes_allowed {
        // Every change must be explored or added, or be the user's own work from before
        // the session, untouched (the user's file reverted counts as a change too).
        let mut paths: Vec<&String> = current.keys().collect();
        paths.extend(
            host.start_dirty
                .keys()
                .filter(|p| !current.contains_key(*p)),
        );
        paths.sort();
        verdict.unexplored = paths
            .into_iter()
            .filter(|p| !host.explored.contains(*p) && !host.untouched_user_change(root, p))
            .cloned()
            .collect();
        return verdict;
    }
    let Some(accepted) = host.accepted_tree.as_ref() else {
        return verdict;
    };
    let mut paths: Vec<&String> = current.keys().chain(accepted.keys()).collect();
    paths.sort();
    paths.dedup();
    for path in paths {
        let now = current.get(path).map(|c| c.hash.clone());
        let before = accepted.get(path);
        // Absent from `current` means "as in HEAD"; absent from `accepted`, "as in HEAD
        // then". Accepted content HEAD now holds was committed (by the server, or a
        // commit a kill separated from its step's save): the same content.
        let same = match (&now, before) {
            (None, None) => true,
            (Some(now), Some(before)) => now == before,
            (None, Some(before)) => head_hash(path) == *before,
            (Some(_), None) => false,
        };
        if same {
            continue;
        }
        let restore = match before {
            // It was as in the baseline: a new file goes, any other comes from HEAD.
            None if current
                .get(path)
                .is_some_and(|c| c.status == ChangeStatus::Added) =>
            {
                Restore::Delete(path.clone())
            }
            None => Restore::FromHead(path.clone()),
            // It was deleted then: delete it again.
            Some(None) => Restore::Delete(path.clone()),
            Some(Some(hash)) if head_hash(path).as_ref() == Some(hash) => {
                Restore::FromHead(path.clone())
            }
            Some(Some(_)) => Restore::ByHand(path.clone()),
        };
        verdict.changed.push(restore);
    }
    verdict
}

/// Every path that differs from `against` now, with its content hash.
fn current(
    root: &Path,
    repo: &git::Repo,
    against: &git::TaskBranch,
) -> Result<BTreeMap<String, Current>, GitError> {
    Ok(repo
        .tree_changes(against)?
        .into_iter()
        .map(|c| {
            let hash = match c.status {
                ChangeStatus::Deleted => None,
                _ => content_hash(&root.join(&c.path)),
            };
            (
                c.path,
                Current {
                    status: c.status,
                    hash,
                },
            )
        })
        .collect())
}

/// The check of one submission: reads the tree and judges it. Where writes are allowed,
/// the changes are measured against the session's baseline (what it will commit); where
/// they are not, against HEAD: what is not committed must be as accepted. A commit is not
/// judged here: the server's own (task branch, commit, merge) and the user's (a conflict
/// they resolve, a branch they check out, as the flow's messages ask) move HEAD, and the
/// agent's are refused by the hook and reviewed at commit against the baseline.
pub(crate) fn check(
    root: &Path,
    host: &HostState,
    writes_allowed: bool,
) -> Result<Verdict, GitError> {
    if !writes_allowed && host.accepted_tree.is_none() {
        return Ok(Verdict::default());
    }
    let repo = git::open(root)?;
    if !writes_allowed && repo.action_interrupted() {
        // A kill cut one of the server's own git actions short (a merge's checkout, say):
        // the submission runs it again and completes it, and the step's save takes the
        // tree as it leaves it. Judging the half-done tree would refuse the recovery.
        return Ok(Verdict::default());
    }
    let against = match host.baseline() {
        Some(baseline) if writes_allowed => baseline.clone(),
        _ => repo.baseline()?,
    };
    let now = current(root, &repo, &against)?;
    Ok(judge(&now, host, writes_allowed, root, |path| {
        repo.content_at_head(path).map(|bytes| bytes_hash(&bytes))
    }))
}

/// The tree to accept from now on: every path that differs from HEAD, with its content
/// hash.
pub(crate) fn snapshot(root: &Path) -> Result<BTreeMap<String, Option<String>>, GitError> {
    let repo = git::open(root)?;
    let head = repo.baseline()?;
    Ok(current(root, &repo, &head)?
        .into_iter()
        .map(|(path, c)| (path, c.hash))
        .collect())
}

/// `path` quoted for a POSIX shell when it needs it.
fn shell_quote(path: &str) -> String {
    if !path.is_empty()
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,@%=:".contains(c))
    {
        path.to_string()
    } else {
        format!("'{}'", path.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cur(entries: &[(&str, ChangeStatus, Option<&str>)]) -> BTreeMap<String, Current> {
        entries
            .iter()
            .map(|(p, s, h)| {
                (
                    p.to_string(),
                    Current {
                        status: s.clone(),
                        hash: h.map(str::to_string),
                    },
                )
            })
            .collect()
    }

    fn accepted(entries: &[(&str, Option<&str>)]) -> Option<BTreeMap<String, Option<String>>> {
        Some(
            entries
                .iter()
                .map(|(p, h)| (p.to_string(), h.map(str::to_string)))
                .collect(),
        )
    }

    #[test]
    fn no_write_states_find_the_tree_as_accepted() {
        let root = Path::new("/nonexistent");
        let host = HostState {
            accepted_tree: accepted(&[("user.txt", Some("u1")), ("impl.rs", Some("i1"))]),
            ..HostState::default()
        };
        let head = |p: &str| (p == "impl.rs").then(|| "i1".to_string());
        // As accepted: clean.
        let same = cur(&[
            ("user.txt", ChangeStatus::Modified, Some("u1")),
            ("impl.rs", ChangeStatus::Modified, Some("i1")),
        ]);
        assert!(judge(&same, &host, false, root, head).is_clean());
        // A new file, a changed tracked file, the user's file changed, a committed file
        // changed.
        let changed = cur(&[
            ("new.txt", ChangeStatus::Added, Some("n")),
            ("src/a.rs", ChangeStatus::Modified, Some("a2")),
            ("user.txt", ChangeStatus::Modified, Some("u2")),
            ("impl.rs", ChangeStatus::Modified, Some("i2")),
        ]);
        let verdict = judge(&changed, &host, false, root, head);
        assert_eq!(
            verdict.changed,
            vec![
                Restore::FromHead("impl.rs".into()),
                Restore::Delete("new.txt".into()),
                Restore::FromHead("src/a.rs".into()),
                Restore::ByHand("user.txt".into()),
            ]
        );
        // The user's file reverted to the baseline is a change too.
        let reverted = cur(&[("impl.rs", ChangeStatus::Modified, Some("i1"))]);
        assert_eq!(
            judge(&reverted, &host, false, root, head).changed,
            vec![Restore::ByHand("user.txt".into())]
        );
        // Accepted content that HEAD now holds was committed: nothing changed.
        let committed = cur(&[("user.txt", ChangeStatus::Modified, Some("u1"))]);
        assert!(judge(&committed, &host, false, root, head).is_clean());
        assert_eq!(
            Restore::Delete("a b.txt".into()).command().as_deref(),
            Some("rm -- 'a b.txt'")
        );
    }

    #[test]
    fn writing_states_require_explored_files() {
        let root = Path::new("/nonexistent");
        let host = HostState {
            explored: ["a.rs".to_string()].into_iter().collect(),
            accepted_tree: accepted(&[]),
            ..HostState::default()
        };
        let now = cur(&[
            ("a.rs", ChangeStatus::Modified, Some("x")),
            ("b.rs", ChangeStatus::Added, Some("y")),
        ]);
        let verdict = judge(&now, &host, true, root, |_| None);
        assert_eq!(verdict.unexplored, vec!["b.rs".to_string()]);
        assert!(verdict.changed.is_empty());
        // A checkpoint from before the accepted tree existed is not judged outside
        // implementation.
        let legacy = HostState::default();
        assert!(judge(&now, &legacy, false, root, |_| None).is_clean());
    }
}
