//! One active session per repository, across processes: the server that runs a session
//! holds an exclusive lock on `.code-intel/sessions/session.lock` for as long as it does,
//! and writes who it is into `holder.json` so a second client is told whom it is waiting
//! for.
//!
//! The lock is an OS file lock (`File::try_lock`), so a holder that dies, even by
//! `kill -9`, releases it with its process: a stale lock cannot outlive its owner.
//! `holder.json` is only information; a `holder.json` without a held lock is stale and
//! simply overwritten.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::checkpoint::SESSIONS_DIR;
use crate::codeintel::store::atomic_write;

const LOCK_FILE: &str = "session.lock";
const HOLDER_FILE: &str = "holder.json";

/// Who holds a repository's session lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Holder {
    pub pid: u32,
    /// The MCP client's name as it introduced itself (`claude-code`, `codex`, ...).
    pub client: String,
    pub session: String,
    /// Seconds since the epoch.
    pub since: u64,
}

impl Holder {
    /// The holder as JSON (its serde form), built from plain fields so it cannot fail.
    pub(crate) fn to_value(&self) -> serde_json::Value {
        serde_json::json!({
            "pid": self.pid,
            "client": self.client,
            "session": self.session,
            "since": self.since,
        })
    }
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "session {} of {} (server process {}, since {})",
            self.session, self.client, self.pid, self.since
        )
    }
}

/// Why the lock was not taken.
#[derive(Debug)]
pub(crate) enum LockError {
    /// Another process holds it (`None` when it has not said who it is yet).
    Held(Option<Holder>),
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

impl std::fmt::Display for LockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockError::Held(Some(h)) => {
                write!(f, "another session is active in this repository: {h}")
            }
            LockError::Held(None) => {
                write!(f, "another server holds this repository's session lock")
            }
            LockError::Io { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

/// The held lock; released when dropped (or when the process ends).
#[derive(Debug)]
pub(crate) struct SessionLock {
    file: File,
    holder_path: PathBuf,
}

impl SessionLock {
    /// Takes the lock of the repository at `root` without waiting.
    pub(crate) fn acquire(root: &Path, holder: &Holder) -> Result<SessionLock, LockError> {
        let dir = root.join(SESSIONS_DIR);
        let io = |path: &Path, error| LockError::Io {
            path: path.to_path_buf(),
            error,
        };
        let lock_path = dir.join(LOCK_FILE);
        let holder_path = dir.join(HOLDER_FILE);
        let file = crate::codeintel::state_dir::open_in_place(
            &lock_path,
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false),
        )
        .map_err(|e| io(&lock_path, e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(LockError::Held(read_holder(&holder_path)));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(&lock_path, e)),
        }
        let lock = SessionLock { file, holder_path };
        lock.update(holder).map_err(|e| io(&lock.holder_path, e))?;
        Ok(lock)
    }

    /// Rewrites the holder information (a new session under the same lock).
    pub(crate) fn update(&self, holder: &Holder) -> std::io::Result<()> {
        let text = serde_json::to_string(holder).map_err(std::io::Error::other)?;
        atomic_write(&self.holder_path, text.as_bytes())
    }
}

impl Drop for SessionLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.holder_path);
        let _ = self.file.unlock();
    }
}

fn read_holder(path: &Path) -> Option<Holder> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holder_as_json_is_its_serde_form() {
        let holder = Holder {
            pid: 7,
            client: "claude-code".into(),
            session: "s1".into(),
            since: 1_700_000_000,
        };
        assert_eq!(holder.to_value(), serde_json::to_value(&holder).unwrap());
    }
}
