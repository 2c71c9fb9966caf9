//! Recovery from a process killed in the middle of a git action. Every action that changes
//! the repository first records an intent file in the git directory naming its process and
//! the refs it writes, and removes it when it returns. An action that finds the intent of a
//! process that died clears the lock files that process left, so the session goes on
//! instead of failing on `index.lock` or `refs/heads/<branch>.lock` until a human steps in.
//!
//! A lock file is removed only when all of these hold, so no one else's lock is touched:
//! 1. it is ours: an intent file exists, and the lock is one of the files such an action
//!    writes (the index, HEAD, `packed-refs`, the refs the intent names, and their reflogs);
//! 2. its writer is dead: the intent's process no longer exists, is a zombie, or its pid now
//!    belongs to a process started at another time;
//! 3. it was taken during that action: it is not older than the intent file (a lock that
//!    was there before would have made that action fail, so it is someone else's);
//! 4. no live process has it open (Linux, through `/proc`): git and libgit2 keep a lock file
//!    open while they write it, so a lock the user's own `git` took since is left alone.
//!
//! Actions run under the session lock (one server with a session per repository), so one
//! intent file is enough; another live process's intent is left as it is.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::error::GitError;
use super::repo::Repo;

/// The intent file, in the git directory (never in the working tree, never committed).
pub(super) const INTENT: &str = "code-intel-action.json";

/// What an action in progress records about itself.
#[derive(Debug, Serialize, Deserialize)]
struct IntentRecord {
    pid: u32,
    /// The process's start time (clock ticks after boot, Linux), so a reused pid is told
    /// from the writer.
    started: Option<u64>,
    action: String,
    /// Full names (`refs/heads/x`) of the refs the action may write.
    refs: Vec<String>,
}

/// An action in progress; its intent file is removed when it is dropped, whatever the
/// action's result (libgit2 removes its own lock files on a failure it returns from).
#[derive(Debug)]
pub(super) struct Intent {
    path: Option<PathBuf>,
}

impl Drop for Intent {
    fn drop(&mut self) {
        if let Some(path) = &self.path {
            // Nothing to do if it is gone; a leftover one names this process, which the
            // next action tells from a dead one.
            let _ = std::fs::remove_file(path);
        }
    }
}

/// What clearing a dead action's locks found, for tests and logs.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Recovered {
    /// The lock files removed, relative to the git directory.
    pub removed: Vec<String>,
    /// The interrupted action, when there was one.
    pub action: Option<String>,
}

impl Repo {
    /// Clears what a killed predecessor left, then records `action`, which may write the
    /// local branches `branches` (besides HEAD and the index), until the returned guard
    /// is dropped.
    pub(super) fn begin(&self, action: &str, branches: &[&str]) -> Result<Intent, GitError> {
        let path = self.repo.path().join(INTENT);
        if !self.recover_at(&path)? {
            // This process is in an action already (one calling another: the outer intent
            // names every ref), or another live process is: its intent and locks stay.
            return Ok(Intent { path: None });
        }
        let record = IntentRecord {
            pid: std::process::id(),
            started: process_start(std::process::id()),
            action: action.to_string(),
            refs: branches.iter().map(|b| format!("refs/heads/{b}")).collect(),
        };
        let text = serde_json::to_vec(&record).map_err(|e| GitError::Io {
            operation: "record the git action",
            path: path.clone(),
            source: std::io::Error::other(e),
        })?;
        // Written whole and renamed, so a reader never sees half of one. No fsync: a kill
        // loses nothing the kernel has, and after a power loss the locks are gone too.
        let temporary = path.with_extension("json.tmp");
        std::fs::write(&temporary, text)
            .and_then(|()| std::fs::rename(&temporary, &path))
            .map_err(|source| GitError::Io {
                operation: "record the git action",
                path: path.clone(),
                source,
            })?;
        Ok(Intent { path: Some(path) })
    }

    /// Clears the lock files of an action whose process died (the rule is in the module
    /// documentation) and removes its intent. Runs before every action; public so a test
    /// can show what it removes.
    pub fn recover(&self) -> Result<Recovered, GitError> {
        let mut recovered = Recovered::default();
        self.recover_into(&self.repo.path().join(INTENT), &mut recovered)?;
        Ok(recovered)
    }

    /// [`Repo::recover`]; false when the intent belongs to a live process (this one
    /// included), which is then left alone.
    fn recover_at(&self, path: &Path) -> Result<bool, GitError> {
        self.recover_into(path, &mut Recovered::default())
    }

    fn recover_into(&self, path: &Path, recovered: &mut Recovered) -> Result<bool, GitError> {
        let io = |source| GitError::Io {
            operation: "read the interrupted git action",
            path: path.to_path_buf(),
            source,
        };
        let (text, written) = match std::fs::read(path).and_then(|text| {
            let written = std::fs::metadata(path)?.modified()?;
            Ok((text, written))
        }) {
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(true),
            Err(e) => return Err(io(e)),
        };
        // An intent that does not parse was not written by this version through the
        // rename: nothing in it names a lock, so none is removed; it is replaced.
        if let Ok(record) = serde_json::from_slice::<IntentRecord>(&text) {
            let own =
                record.pid == std::process::id() && record.started == process_start(record.pid);
            if own || alive(record.pid, record.started) {
                return Ok(false);
            }
            for lock in self.lock_files(&record.refs) {
                if is_stale(&lock, written) {
                    std::fs::remove_file(&lock).map_err(|source| GitError::Io {
                        operation: "remove the stale lock",
                        path: lock.clone(),
                        source,
                    })?;
                    recovered.removed.push(self.git_relative(&lock));
                }
            }
            recovered.action = Some(record.action);
        }
        match std::fs::remove_file(path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
            Err(e) => Err(io(e)),
        }
    }

    /// The lock files an action naming `refs` can leave: the worktree's index, HEAD and
    /// HEAD's reflog, and in the common directory `packed-refs` and each ref with its
    /// reflog. Names that are not valid branch refs are skipped.
    fn lock_files(&self, refs: &[String]) -> Vec<PathBuf> {
        let gitdir = self.repo.path();
        let common = self.repo.commondir();
        let mut locks = vec![
            gitdir.join("index.lock"),
            gitdir.join("HEAD.lock"),
            gitdir.join("logs/HEAD.lock"),
            common.join("packed-refs.lock"),
        ];
        for name in refs {
            if name.starts_with("refs/heads/") && git2::Reference::is_valid_name(name) {
                locks.push(common.join(format!("{name}.lock")));
                locks.push(common.join(format!("logs/{name}.lock")));
            }
        }
        locks.sort();
        locks.dedup();
        locks
    }

    fn git_relative(&self, path: &Path) -> String {
        let common = self.repo.commondir();
        path.strip_prefix(self.repo.path())
            .or_else(|_| path.strip_prefix(common))
            .unwrap_or(path)
            .to_string_lossy()
            .replace('\\', "/")
    }
}

/// A lock file taken during the dead action (not older than its intent, written at
/// `since`) that no live process holds open.
fn is_stale(lock: &Path, since: SystemTime) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(lock) else {
        return false;
    };
    let taken_during = meta.modified().is_ok_and(|m| m >= since);
    meta.is_file() && taken_during && !held_open(lock)
}

/// Whether a live process has `path` open. Linux reads `/proc/*/fd`; processes whose file
/// descriptors cannot be read (another user's) cannot write this repository's locks
/// through our permissions and are passed over. Elsewhere no process is known to hold it.
fn held_open(path: &Path) -> bool {
    #[cfg(target_os = "linux")]
    {
        let Ok(target) = path.canonicalize() else {
            return false;
        };
        let Ok(processes) = std::fs::read_dir("/proc") else {
            return false;
        };
        for process in processes.flatten() {
            if !process
                .file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
            {
                continue;
            }
            let Ok(fds) = std::fs::read_dir(process.path().join("fd")) else {
                continue;
            };
            if fds
                .flatten()
                .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|link| link == target))
            {
                return true;
            }
        }
        false
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        false
    }
}

/// A process's state letter and start time from `/proc/<pid>/stat`, if it exists.
#[cfg(target_os = "linux")]
fn proc_stat(pid: u32) -> Option<(char, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces and ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    // Field 22, `starttime`; `fields` begins at field 3.
    let start = fields.get(19)?.parse().ok()?;
    Some((state, start))
}

/// When the process started (Linux), to tell it from a later process with its pid.
fn process_start(pid: u32) -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        proc_stat(pid).map(|(_, start)| start)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}

/// Whether the process that wrote an intent still runs. When that cannot be told, it is
/// taken as alive: its locks are then left for the user.
fn alive(pid: u32, started: Option<u64>) -> bool {
    #[cfg(target_os = "linux")]
    if std::path::Path::new("/proc/self/stat").exists() {
        return match proc_stat(pid) {
            None => false,
            Some((state, start)) => {
                !matches!(state, 'Z' | 'X') && started.is_none_or(|s| s == start)
            }
        };
    }
    #[cfg(unix)]
    {
        use nix::errno::Errno;
        use nix::sys::signal::kill;
        use nix::unistd::Pid;
        let Ok(raw) = i32::try_from(pid) else {
            return true;
        };
        // Signal 0 checks existence only; EPERM means it exists under another user.
        let _ = started;
        kill(Pid::from_raw(raw), None) != Err(Errno::ESRCH)
    }
    #[cfg(not(unix))]
    {
        let _ = (pid, started);
        true
    }
}
