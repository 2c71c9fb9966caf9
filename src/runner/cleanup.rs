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
pub struct GroupGuard(i32);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        live().groups.retain(|g| *g != self.0);
    }
}

/// Registers the process group `pgid` until the guard drops.
pub fn track_group(pgid: i32) -> GroupGuard {
    live().groups.push(pgid);
    GroupGuard(pgid)
}

/// Registers a container that exists until [`untrack_container`].
pub fn track_container(program: &str, name: &str) {
    live()
        .containers
        .push((program.to_string(), name.to_string()));
}

/// The container was removed.
pub fn untrack_container(name: &str) {
    live().containers.retain(|(_, n)| n != name);
}

/// Kills every registered process group and removes every registered container, for an
/// exit that cannot wait for the finalizers. Best effort: errors are logged.
pub fn kill_everything() {
    let (groups, containers) = {
        let live = live();
        (live.groups.clone(), live.containers.clone())
    };
    for group in groups {
        let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
    }
    for (program, name) in containers {
        let mut spec = super::process::Spec::new(program, ["rm", "-f", name.as_str()]);
        spec.timeout = Some(REMOVE_TIMEOUT);
        spec.grace = Duration::from_secs(1);
        match super::process::run(&spec, &super::cancel::Cancel::new()) {
            Ok(out) if out.ending.success() => {
                tracing::warn!(container = %name, "removed the container on the way out");
            }
            Ok(out) => {
                tracing::error!(container = %name, stderr = %out.stderr.tail_text(500), "could not remove the container")
            }
            Err(e) => {
                tracing::error!(container = %name, error = %e, "could not remove the container")
            }
        }
    }
}
