//! The index write lock: one refresh at a time per repository, across threads and across
//! processes (a CLI run and an MCP server may refresh the same index at once).
//!
//! Two layers, because neither is enough alone: an exclusive `File::lock` on
//! `.code-intel/index.lock` serialises processes, and an in-process set of held lock files
//! serialises threads. The file lock alone would do on Linux (`flock` locks belong to the
//! open file description, so two handles conflict), but std leaves a second lock from the
//! same process unspecified (it "may deadlock"), and where it is emulated with `fcntl`
//! locks belong to the process, so two threads would both get it. Readers take no lock.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, LazyLock, Mutex, PoisonError};

use super::error::Error;
use super::root::Root;

/// Where the lock file lives, relative to the root.
pub(crate) const LOCK_FILE: &str = ".code-intel/index.lock";

/// Lock files a thread of this process holds, and a condition to wait for one.
static HELD: LazyLock<(Mutex<HashSet<PathBuf>>, Condvar)> =
    LazyLock::new(|| (Mutex::new(HashSet::new()), Condvar::new()));

/// The write lock of one root (or of another store, by its lock file), held until dropped.
#[derive(Debug)]
pub(crate) struct WriteLock {
    /// The lock file: the key of the in-process lock too.
    file_path: PathBuf,
    file: Option<File>,
}

impl WriteLock {
    /// Blocks until this thread holds the root's lock. Fails when the lock file cannot be
    /// created or opened for writing (a read-only `.code-intel/`): then nothing may write.
    pub(crate) fn acquire(root: &Root) -> Result<WriteLock, Error> {
        WriteLock::acquire_at(&root.path().join(LOCK_FILE))
    }

    /// Blocks until this thread holds the lock of the file at `path` (another store's
    /// lock, such as the semantic index's), as [`WriteLock::acquire`].
    pub(crate) fn acquire_at(path: &Path) -> Result<WriteLock, Error> {
        let key = path.to_path_buf();
        {
            let (held, freed) = &*HELD;
            let mut held = held.lock().unwrap_or_else(PoisonError::into_inner);
            while held.contains(&key) {
                held = freed.wait(held).unwrap_or_else(PoisonError::into_inner);
            }
            held.insert(key.clone());
        }
        // From here on `Drop` releases the in-process lock, whatever fails below.
        let mut lock = WriteLock {
            file_path: key,
            file: None,
        };
        let file = open_lock_file(path).map_err(|e| Error::io(path, e))?;
        file.lock().map_err(|e| Error::io(path, e))?;
        lock.file = Some(file);
        Ok(lock)
    }
}

impl WriteLock {
    /// The lock if nobody holds it now, without waiting; `None` when a writer (in this
    /// process or another) holds it or the lock file cannot be opened.
    pub(crate) fn try_acquire(root: &Root) -> Option<WriteLock> {
        WriteLock::try_acquire_at(&root.path().join(LOCK_FILE))
    }

    /// [`WriteLock::try_acquire`] for the lock file at `path`.
    pub(crate) fn try_acquire_at(path: &Path) -> Option<WriteLock> {
        let key = path.to_path_buf();
        {
            let (held, _) = &*HELD;
            let mut held = held.lock().unwrap_or_else(PoisonError::into_inner);
            if held.contains(&key) {
                return None;
            }
            held.insert(key.clone());
        }
        let mut lock = WriteLock {
            file_path: key,
            file: None,
        };
        let file = open_lock_file(path).ok()?;
        file.try_lock().ok()?;
        lock.file = Some(file);
        Some(lock)
    }
}

fn open_lock_file(path: &Path) -> std::io::Result<File> {
    // Opened for writing: std leaves locking a read-only handle unspecified.
    super::state_dir::open_in_place(
        path,
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false),
    )
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        // The file lock goes first, so another process can take it as soon as a thread
        // of ours could.
        if let Some(file) = self.file.take() {
            let _ = file.unlock();
        }
        let (held, freed) = &*HELD;
        held.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.file_path);
        freed.notify_all();
    }
}
