//! The recent workspaces, for the IDE's list and `multiverse workspaces`:
//! `~/.multiverse/workspaces.json`, most recently opened first, at most [`MAX_RECENT`].
//! `init` and opening a workspace record it; forgetting one only takes it off the list.
//! The list is a convenience, never a reason to fail: a corrupt or unreadable file reads
//! as empty (with a warning) and is replaced by the next record. Read-modify-write runs
//! under an OS lock on `workspaces.lock` so two processes do not lose each other's entry;
//! the file itself is written atomically.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::codeintel::store::atomic_write;

/// Entries kept; the oldest goes first.
pub const MAX_RECENT: usize = 50;
const FILE: &str = "workspaces.json";
const LOCK: &str = "workspaces.lock";
const VERSION: u32 = 1;

/// One workspace on the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecentWorkspace {
    /// The workspace directory (canonical).
    pub path: PathBuf,
    /// The project it plans for.
    pub project: PathBuf,
    pub name: String,
    /// When it was last created or opened, RFC 3339.
    pub last_opened: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecentFile {
    version: u32,
    workspaces: Vec<RecentWorkspace>,
}

/// `~/.multiverse/workspaces.json` under `home`.
pub fn recent_file(home: &Path) -> PathBuf {
    home.join(".multiverse").join(FILE)
}

/// The list, most recent first. Missing: empty. Unreadable or corrupt: empty, with a
/// warning naming the file.
pub(crate) fn load(home: &Path) -> Vec<RecentWorkspace> {
    let path = recent_file(home);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            tracing::warn!(file = %path.display(), error = %e, "the recent workspaces cannot be read; treated as empty");
            return Vec::new();
        }
    };
    match serde_json::from_str::<RecentFile>(&text) {
        Ok(file) if file.version == VERSION => {
            let mut list = file.workspaces;
            list.truncate(MAX_RECENT);
            list
        }
        Ok(file) => {
            tracing::warn!(file = %path.display(), version = file.version, "the recent workspaces file has an unknown version; treated as empty");
            Vec::new()
        }
        Err(e) => {
            tracing::warn!(file = %path.display(), error = %e, "the recent workspaces file is corrupt; treated as empty and rewritten at the next record");
            Vec::new()
        }
    }
}

/// Puts `entry` first (replacing an entry for the same path), keeping [`MAX_RECENT`].
pub(crate) fn record(home: &Path, entry: RecentWorkspace) -> std::io::Result<()> {
    update(home, |list| {
        list.retain(|w| w.path != entry.path);
        list.insert(0, entry);
        list.truncate(MAX_RECENT);
        true
    })
    .map(|_| ())
}

/// Takes `path` off the list (nothing on disk is touched); whether it was on it.
pub fn forget(home: &Path, path: &Path) -> std::io::Result<bool> {
    // The directory may be gone: compare as given, and as resolved when it still exists.
    let resolved = path.canonicalize().ok();
    update(home, |list| {
        let before = list.len();
        list.retain(|w| w.path != path && Some(&w.path) != resolved.as_ref());
        list.len() != before
    })
}

/// Read, change, write back when `change` says it changed something; under the lock.
fn update(
    home: &Path,
    change: impl FnOnce(&mut Vec<RecentWorkspace>) -> bool,
) -> std::io::Result<bool> {
    let dir = home.join(".multiverse");
    std::fs::create_dir_all(&dir)?;
    let lock = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(dir.join(LOCK))?;
    lock.lock()?;
    let mut list = load(home);
    let changed = change(&mut list);
    if changed {
        let file = RecentFile {
            version: VERSION,
            workspaces: list,
        };
        let mut text = serde_json::to_string_pretty(&file).map_err(std::io::Error::other)?;
        text.push('\n');
        atomic_write(&recent_file(home), text.as_bytes())?;
    }
    let _ = lock.unlock();
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct TempDir(PathBuf);

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    impl TempDir {
        fn path(&self) -> &Path {
            &self.0
        }
    }

    fn temp(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("code-intel-recent-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn entry(path: &str) -> RecentWorkspace {
        RecentWorkspace {
            path: PathBuf::from(path),
            project: PathBuf::from("/p"),
            name: "p".into(),
            last_opened: "2026-11-27T00:00:00.000Z".into(),
        }
    }

    #[test]
    fn newest_first_bounded_and_forgettable() {
        let home = temp("bounded");
        for n in 0..(MAX_RECENT + 5) {
            record(home.path(), entry(&format!("/w{n}"))).unwrap();
        }
        record(home.path(), entry("/w3")).unwrap();
        let list = load(home.path());
        assert_eq!(list.len(), MAX_RECENT);
        assert_eq!(list[0].path, PathBuf::from("/w3"));
        assert_eq!(list[1].path, PathBuf::from(format!("/w{}", MAX_RECENT + 4)));
        assert_eq!(
            list.iter().filter(|w| w.path == Path::new("/w3")).count(),
            1
        );
        assert!(forget(home.path(), Path::new("/w3")).unwrap());
        assert!(!forget(home.path(), Path::new("/w3")).unwrap());
        assert_eq!(load(home.path()).len(), MAX_RECENT - 1);
    }

    #[test]
    fn records_from_many_writers_at_once_are_all_kept() {
        let home = temp("concurrent");
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let home = home.path().to_path_buf();
                std::thread::spawn(move || {
                    for n in 0..5 {
                        record(&home, entry(&format!("/w{t}-{n}"))).unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(load(home.path()).len(), 40);
    }

    #[test]
    fn a_corrupt_file_reads_as_empty_and_is_replaced() {
        let home = temp("corrupt");
        std::fs::create_dir_all(home.path().join(".multiverse")).unwrap();
        std::fs::write(
            recent_file(home.path()),
            "{\"version\": 1, \"workspaces\": [",
        )
        .unwrap();
        assert!(load(home.path()).is_empty());
        record(home.path(), entry("/a")).unwrap();
        assert_eq!(load(home.path()).len(), 1);
    }
}
