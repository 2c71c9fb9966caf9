//! One writer per workspace, across processes: the writer holds an exclusive OS file lock
//! on `writer.lock` and writes its pid into it, so a second writer is told who holds it
//! (and the command line can talk to that daemon instead). The lock dies with its process,
//! even by `kill -9`, so a stale lock cannot outlive its owner; a pid left in the file by a
//! dead writer is only information and is overwritten by the next one.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::error::{Holder, StoreError};

/// What this process is, said in the lock it takes (set once by the program).
static ROLE: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Names what this process is as a writer (`run`, `serve`, `task add`): a second writer
/// is told, and waits for a one-command holder rather than failing.
pub fn set_role(role: &str) {
    let _ = ROLE.set(role.to_string());
}

/// The held lock; released when dropped or when the process ends.
#[derive(Debug)]
pub(crate) struct WriterLock {
    file: File,
}

impl WriterLock {
    /// Takes the lock at `path` without waiting. On Linux the lock belongs to the open
    /// file, so a second writer in the same process is refused like one in another.
    pub(crate) fn acquire(path: &Path, since: String) -> Result<WriterLock, StoreError> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(StoreError::io(path))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(StoreError::Locked {
                    lock_file: path.to_path_buf(),
                    holder: read_holder(&mut file),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(StoreError::io(path)(e)),
        }
        let holder = Holder {
            pid: std::process::id(),
            since,
            role: ROLE.get().cloned(),
        };
        write_holder(&mut file, &holder).map_err(StoreError::io(path))?;
        Ok(WriterLock { file })
    }

    /// [`WriterLock::acquire`], waiting up to `patience` while the holder is one command
    /// (or has not said what it is yet): twenty `task add` at once take turns. A holder
    /// that stays (`run`, `serve`) is named at once.
    pub(crate) fn acquire_patiently(
        path: &Path,
        since: String,
        patience: std::time::Duration,
    ) -> Result<WriterLock, StoreError> {
        let until = std::time::Instant::now() + patience;
        loop {
            match WriterLock::acquire(path, since.clone()) {
                Err(StoreError::Locked { lock_file, holder })
                    if !holder.as_ref().is_some_and(Holder::stays)
                        && std::time::Instant::now() < until =>
                {
                    let _ = (lock_file, holder);
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => return other,
            }
        }
    }
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

/// The holder a lock file names, if it names one yet.
fn read_holder(file: &mut File) -> Option<Holder> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(4096).read_to_string(&mut text).ok()?;
    serde_json::from_str(text.trim()).ok()
}

fn write_holder(file: &mut File, holder: &Holder) -> std::io::Result<()> {
    let text = serde_json::to_string(holder).map_err(std::io::Error::other)?;
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(text.as_bytes())?;
    file.write_all(b"\n")
}

/// The lock file of the workspace at `dir`.
pub(crate) fn lock_path(dir: &Path) -> PathBuf {
    dir.join(super::layout::LOCK_FILE)
}

/// When the process `pid` started, from `/proc` (Linux); `None` when it cannot be told.
/// To a second or so: the kernel counts in clock ticks since boot (USER_HZ, 100 on every
/// Linux ABI), the boot time is in whole seconds.
pub fn process_start_time(pid: u32) -> Option<std::time::SystemTime> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (in parentheses, which may hold spaces and ')'):
    // the state is field 3, the start time field 22.
    let rest = &stat[stat.rfind(')')? + 1..];
    let ticks: u64 = rest.split_whitespace().nth(19)?.parse().ok()?;
    let boot: u64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    let millis = boot
        .checked_mul(1000)?
        .checked_add(ticks.checked_mul(10)?)?;
    Some(std::time::UNIX_EPOCH + std::time::Duration::from_millis(millis))
}

/// Whether the process `pid` still runs. A zombie (exited, not yet reaped) counts as gone;
/// when it cannot be told, it is taken as alive, so recovery never interrupts a live run.
pub fn process_alive(pid: u32) -> bool {
    #[cfg(target_os = "linux")]
    if Path::new("/proc/self/stat").exists() {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        // The command name (field 2) is in parentheses and may hold spaces and ')'.
        let state = stat
            .rfind(')')
            .and_then(|end| stat[end + 1..].split_whitespace().next())
            .and_then(|s| s.chars().next());
        return !matches!(state, Some('Z' | 'X'));
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
        kill(Pid::from_raw(raw), None) != Err(Errno::ESRCH)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_in_the_same_process_is_refused_with_the_holder() {
        let dir = std::env::temp_dir().join(format!("code-intel-mv-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("writer.lock");
        let first = WriterLock::acquire(&path, "t0".into()).unwrap();
        let err = WriterLock::acquire(&path, "t1".into()).unwrap_err();
        match &err {
            StoreError::Locked {
                holder: Some(h), ..
            } => assert_eq!((h.pid, h.since.as_str()), (std::process::id(), "t0")),
            other => panic!("{other:?}"),
        }
        assert_eq!(err.key(), "workspace.locked");
        assert!(
            err.to_string()
                .contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        drop(first);
        let again = WriterLock::acquire(&path, "t2".into()).unwrap();
        drop(again);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn this_process_is_alive_and_a_reaped_child_is_not() {
        assert!(process_alive(std::process::id()));
        let started = process_start_time(std::process::id()).unwrap();
        let now = std::time::SystemTime::now();
        assert!(started <= now + std::time::Duration::from_secs(2));
        assert!(now.duration_since(started).unwrap() < std::time::Duration::from_secs(3600));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!process_alive(pid));
    }
}
