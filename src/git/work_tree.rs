//! A work tree looked at from any directory inside it, read-only: for a host that records
//! what a process changed rather than one that runs task branches (the agent runner
//! snapshots the tree before and after each worker run). Unlike [`open`](super::open) it
//! takes a subdirectory (a task's part of a larger repository) and any HEAD, unborn or
//! detached, and it leaves nothing out: code-intel's own files are changes like any other.

use std::path::{Path, PathBuf};

use git2::{DiffOptions, DiffStatsFormat, ObjectType, Oid, Repository};

use super::error::GitError;
use super::repo::{discover, uncommitted_under};

/// An open repository seen from a directory inside its working tree.
pub struct WorkTree {
    repo: Repository,
    /// The working tree's directory, canonical.
    workdir: PathBuf,
    /// The directory looked from, relative to the working tree (`/`-separated; empty at
    /// the top).
    prefix: String,
}

impl std::fmt::Debug for WorkTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkTree")
            .field("workdir", &self.workdir)
            .field("prefix", &self.prefix)
            .finish()
    }
}

impl WorkTree {
    /// The work tree `dir` is in, at any depth. Refuses a directory outside any repository
    /// and a bare repository.
    pub fn discover(dir: &Path) -> Result<WorkTree, GitError> {
        let (repo, workdir) = discover(dir)?;
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        let prefix = dir
            .strip_prefix(&workdir)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(WorkTree {
            repo,
            workdir,
            prefix,
        })
    }

    /// The working tree's directory. Every path this type returns or takes is relative to
    /// it, as git shows them.
    pub fn workdir(&self) -> &Path {
        &self.workdir
    }

    /// The commit HEAD points at; `None` on a branch with no commit yet.
    pub fn head(&self) -> Option<Oid> {
        self.repo.head().ok().and_then(|h| h.target())
    }

    /// Every path under the directory looked from with uncommitted changes (staged,
    /// unstaged or untracked, not ignored), sorted: the same query as
    /// [`Repo::uncommitted`](super::Repo::uncommitted), limited to that directory.
    pub fn uncommitted(&self) -> Result<Vec<String>, GitError> {
        uncommitted_under(&self.repo, &self.prefix)
    }

    /// An id of the content of the file `path`, to tell whether it changed between two
    /// looks: its blob id, or for a file larger than `hash_limit` bytes an id of its size
    /// and modification time, so a large file is not read whole. `None` when there is no
    /// file there (a deletion), which differs from any content.
    pub fn content_id(&self, path: &str, hash_limit: u64) -> Option<Oid> {
        let full = self.workdir.join(path);
        match std::fs::metadata(&full) {
            Ok(m) if m.is_file() && m.len() <= hash_limit => {
                Oid::hash_file(ObjectType::Blob, &full).ok()
            }
            Ok(m) if m.is_file() => {
                let stamp = format!("{}:{:?}", m.len(), m.modified().ok());
                Oid::hash_object(ObjectType::Blob, stamp.as_bytes()).ok()
            }
            _ => None,
        }
    }

    /// The paths that differ between the trees of two commits (`None`: the empty tree),
    /// in the order git lists them; a rename is its new path.
    pub fn paths_between(
        &self,
        from: Option<Oid>,
        to: Option<Oid>,
    ) -> Result<Vec<String>, GitError> {
        let tree = |oid: Option<Oid>| {
            oid.map(|o| self.repo.find_commit(o).and_then(|c| c.tree()))
                .transpose()
                .map_err(GitError::git("read commit"))
        };
        let diff = self
            .repo
            .diff_tree_to_tree(tree(from)?.as_ref(), tree(to)?.as_ref(), None)
            .map_err(GitError::git("diff"))?;
        Ok(diff
            .deltas()
            .filter_map(|d| d.new_file().path().or_else(|| d.old_file().path()))
            .map(|p| p.to_string_lossy().into_owned())
            .collect())
    }

    /// `git diff --stat` (80 columns) of `files` from the commit `base` (`None`: the empty
    /// tree) to the working tree, untracked files included; empty for no files.
    pub fn diff_stat(&self, base: Option<Oid>, files: &[String]) -> Result<String, GitError> {
        if files.is_empty() {
            return Ok(String::new());
        }
        let tree = base
            .map(|o| self.repo.find_commit(o).and_then(|c| c.tree()))
            .transpose()
            .map_err(GitError::git("read commit"))?;
        let mut options = DiffOptions::new();
        options
            .include_untracked(true)
            .recurse_untracked_dirs(true)
            .show_untracked_content(true)
            .disable_pathspec_match(true);
        for file in files {
            options.pathspec(file);
        }
        let diff = self
            .repo
            .diff_tree_to_workdir_with_index(tree.as_ref(), Some(&mut options))
            .map_err(GitError::git("diff"))?;
        let stats = diff.stats().map_err(GitError::git("diff stat"))?;
        let buf = stats
            .to_buf(DiffStatsFormat::FULL, 80)
            .map_err(GitError::git("diff stat"))?;
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// A fresh directory for one test, removed first if a run before left it.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ci-work-tree-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn git(dir: &Path, args: &[&str]) {
        // Sealed from the user's git settings: a global hook, signing or another default
        // branch would change what this test sees.
        let out = Command::new("git")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }

    #[test]
    fn a_subdirectory_sees_its_own_part_and_any_head() {
        let dir = scratch("sub");
        let root = dir.as_path();
        git(root, &["init", "-q", "-b", "main"]);
        std::fs::create_dir_all(root.join("task/src")).unwrap();
        std::fs::write(root.join("task/src/a.txt"), "a").unwrap();
        std::fs::write(root.join("other.txt"), "o").unwrap();

        // An unborn branch is no refusal here.
        let tree = WorkTree::discover(&root.join("task")).unwrap();
        assert_eq!(tree.head(), None);
        assert_eq!(tree.uncommitted().unwrap(), ["task/src/a.txt"]);
        let whole = WorkTree::discover(root).unwrap();
        assert_eq!(
            whole.uncommitted().unwrap(),
            ["other.txt", "task/src/a.txt"]
        );

        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "one"]);
        let first = tree.head().unwrap();
        std::fs::write(root.join("task/src/a.txt"), "b").unwrap();
        let changed = tree.content_id("task/src/a.txt", u64::MAX);
        assert_ne!(changed, None);
        // Past the limit the id is the size and time, still an id.
        assert_ne!(tree.content_id("task/src/a.txt", 0), changed);
        assert_eq!(tree.content_id("task/src/gone.txt", u64::MAX), None);
        let stat = tree
            .diff_stat(Some(first), &["task/src/a.txt".into()])
            .unwrap();
        assert!(stat.contains("1 file changed"), "{stat}");
        assert_eq!(tree.diff_stat(Some(first), &[]).unwrap(), "");

        git(root, &["commit", "-q", "-am", "two"]);
        let second = WorkTree::discover(root).unwrap().head();
        assert_eq!(
            tree.paths_between(Some(first), second).unwrap(),
            ["task/src/a.txt"]
        );
        assert_eq!(
            tree.paths_between(None, Some(first)).unwrap(),
            ["other.txt", "task/src/a.txt"]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn outside_a_repository_is_refused_with_its_key() {
        let dir = scratch("none");
        let err = WorkTree::discover(&dir).unwrap_err();
        assert_eq!(err.key(), "git.not_a_repository");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
