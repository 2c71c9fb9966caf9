//! What the runner must not leave behind even when it exits at once (a second signal
//! skips the finalizers): the process groups of the children it is running and the
//! containers it created. Each registers while alive; [`kill_everything`] stops them all.

use std::sync::Mutex;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// How long the last-moment `docker rm -f` may take.
const REMOVE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Default)]
struct Live {
    groups: Vec<i32>,
    /// (docker program, container name).
    containers: Vec<(String, String)>,
}

static LIVE: Mutex<Live> = Mutex::new(Live {
    groups: Vec::new(),
    containers: Vec::new(),
});

fn live() -> std::sync::MutexGuard<'static, Live> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A child's process group, registered until the guard drops.
#[must_use]
pub(crate) struct GroupGuard(i32);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        live().groups.retain(|g| *g != self.0);
    }
}

/// Registers the process group `pgid` until the guard drops.
pub(crate) fn track_group(pgid: i32) -> GroupGuard {
    live().groups.push(pgid);
    GroupGuard(pgid)
}

/// Registers a container that exists until [`untrack_container`].
pub(crate) fn track_container(program: &str, name: &str) {
    live()
        .containers
        .push((program.to_string(), name.to_string()));
}

/// The container was removed.
pub(crate) fn untrack_container(name: &str) {
    live().containers.retain(|(_, n)| n != name);
}

/// Kills every registered process group and removes every registered container, for an
/// exit that cannot wait for the finalizers. Best effort: errors are logged.
pub(crate) fn kill_everything() {
    let (groups, containers) = {
        let live = live();
        (live.groups.clone(), live.containers.clone())
    };
    for group in groups {
        let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
    }
    for (program, name) in containers {
        remove_container(&program, &name);
    }
}

/// `docker rm -f NAME`, waited for at most [`REMOVE_TIMEOUT`]. (Spawned directly: the
/// process runner registers its children here, so it cannot be used from here.)
fn remove_container(program: &str, name: &str) {
    let child = std::process::Command::new(program)
        .args(["rm", "-f", name])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(container = %name, error = %e, "could not remove the container");
            return;
        }
    };
    let until = std::time::Instant::now() + REMOVE_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => {
                tracing::warn!(container = %name, "removed the container on the way out");
                return;
            }
            Ok(Some(status)) => {
                tracing::error!(container = %name, %status, "could not remove the container");
                return;
            }
            Ok(None) if std::time::Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(None) | Err(_) => {
                let _ = child.kill();
                tracing::error!(container = %name, "removing the container took too long");
                return;
            }
        }
    }
}
