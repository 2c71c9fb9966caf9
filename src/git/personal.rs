//! What is never a task's change: code-intel's own directory and the clients' personal
//! files; and keeping the personal files out of git on this machine only: `init` lists
//! them in the repository's `info/exclude`, which git reads like a `.gitignore` that is
//! never committed, so one person's approvals never reach a commit or a teammate.

use std::path::Path;

use git2::Repository;

use super::error::GitError;
use crate::codeintel::store::atomic_write;

/// code-intel's own directory (`.code-intel/`: prompts, config, session state) is never
/// a change of a task: not listed, not reviewed, never committed or reverted by a task.
const OWN_DIR: &str = ".code-intel/";

/// Files a client keeps for one person on one machine (Claude Code's local settings,
/// which `init` writes the server's approval into, and its personal memory file). A
/// task never commits them: they would hand one user's permissions to everyone.
pub const PERSONAL_FILES: &[&str] = &[".claude/settings.local.json", "CLAUDE.local.md"];

/// Whether `path` (root-relative, `/`-separated) can never be a change of a task:
/// code-intel's own state and the clients' personal files. Such paths are not listed,
/// reviewed, committed or reverted, are left out of the tree check, and never stop a
/// merge.
pub fn is_never_the_tasks(path: &str) -> bool {
    path.starts_with(OWN_DIR) || PERSONAL_FILES.contains(&path)
}

/// What [`exclude_personal_files`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Excluded {
    /// `root` is not in a git repository: nothing to do.
    NoRepository,
    /// Every personal file was listed already.
    AlreadyListed,
    /// These lines were added.
    Added(Vec<String>),
}

/// Adds each of [`PERSONAL_FILES`] that is not listed yet to the `info/exclude` of the
/// repository `root` is in, as a path anchored at the top (`/.claude/settings.local.json`).
pub fn exclude_personal_files(root: &Path) -> Result<Excluded, GitError> {
    let Ok(repo) = Repository::discover(root) else {
        return Ok(Excluded::NoRepository);
    };
    // Linked worktrees share the main repository's `info/exclude`.
    let path = repo.commondir().join("info").join("exclude");
    let existing = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => {
            return Err(GitError::Io {
                operation: "read",
                path,
                source,
            });
        }
    };
    let listed: Vec<&str> = existing.lines().map(str::trim).collect();
    let missing: Vec<String> = PERSONAL_FILES
        .iter()
        .map(|p| format!("/{p}"))
        .filter(|line| !listed.contains(&line.as_str()))
        .collect();
    if missing.is_empty() {
        return Ok(Excluded::AlreadyListed);
    }
    let mut text = existing;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("# Personal files of coding-agent clients (added by `code-intel init`)\n");
    for line in &missing {
        text.push_str(line);
        text.push('\n');
    }
    let io = |source| GitError::Io {
        operation: "write",
        path: path.clone(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    atomic_write(&path, text.as_bytes()).map_err(io)?;
    Ok(Excluded::Added(missing))
}
