//! What runs for a workspace, for the IDE's process view (`GET /api/processes`): the
//! agent-runner attempts in flight (from the saved state) and the containers they made
//! (from Docker, by the run label each attempt passes: `agent-runner.run=<run dir>`).
//! The daemon adds itself and the chat turns whose planner it is waiting for.

use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::model::{TaskId, WorkspaceState};
use crate::runner::RUN_LABEL;

/// An agent-runner attempt in flight.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkerProcess {
    pub task: TaskId,
    pub attempt: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub started_at: String,
    pub run_dir: String,
}

/// A container an attempt of this workspace made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContainerProcess {
    pub id: String,
    pub name: String,
    /// Docker's status line (`Up 3 minutes`, `Exited (0) ...`).
    pub status: String,
    /// The attempt's run directory (its label).
    pub run_dir: String,
}

/// The containers, or why they could not be listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Containers {
    pub listed: Vec<ContainerProcess>,
    /// Docker did not answer (not installed, not running, too slow): why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// The attempts in flight, by task.
pub fn workers(state: &WorkspaceState) -> Vec<WorkerProcess> {
    state
        .runtime
        .iter()
        .filter_map(|(id, rt)| {
            let last = rt.attempts.last().filter(|a| a.finished_at.is_none())?;
            Some(WorkerProcess {
                task: id.clone(),
                attempt: last.number,
                pid: last.pid,
                started_at: last.started_at.clone(),
                run_dir: last.run_dir.clone(),
            })
        })
        .collect()
}

/// How long `docker ps` may take before the view goes without containers.
const DOCKER_TIMEOUT: Duration = Duration::from_secs(5);

/// The most of `docker ps`'s output read.
const MAX_LISTING_BYTES: u64 = 1 << 20;

/// The containers whose run label lies under `runs_dir` (this workspace's attempts),
/// running or not, through `docker` (a path or a name on PATH).
pub fn containers(docker: &str, runs_dir: &Path) -> Containers {
    let format =
        format!("{{{{.ID}}}}\t{{{{.Names}}}}\t{{{{.Status}}}}\t{{{{.Label \"{RUN_LABEL}\"}}}}");
    let filter = format!("label={RUN_LABEL}");
    let spawned = Command::new(docker)
        .args(["ps", "-a", "--filter", &filter, "--format", &format])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => return unavailable(format!("docker could not be started: {e}")),
    };
    let deadline = Instant::now() + DOCKER_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return unavailable(format!("docker ps took over {}s", DOCKER_TIMEOUT.as_secs()));
            }
            Err(e) => return unavailable(format!("docker ps: {e}")),
        }
    };
    let mut text = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = out.take(MAX_LISTING_BYTES).read_to_string(&mut text);
    }
    if !status.success() {
        return unavailable(format!("docker ps ended with {status}"));
    }
    let runs = runs_dir.display().to_string();
    let listed = text
        .lines()
        .filter_map(|line| {
            let mut fields = line.splitn(4, '\t');
            let (id, name, status, run_dir) = (
                fields.next()?,
                fields.next()?,
                fields.next()?,
                fields.next()?,
            );
            let inside = run_dir
                .strip_prefix(&runs)
                .is_some_and(|rest| rest.starts_with('/'));
            inside.then(|| ContainerProcess {
                id: id.to_string(),
                name: name.to_string(),
                status: status.to_string(),
                run_dir: run_dir.to_string(),
            })
        })
        .collect();
    Containers {
        listed,
        unavailable: None,
    }
}

fn unavailable(why: String) -> Containers {
    Containers {
        listed: Vec::new(),
        unavailable: Some(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_docker_is_said_not_an_error() {
        let c = containers("/nonexistent/docker", Path::new("/tmp/ws/runs"));
        assert!(c.listed.is_empty());
        assert!(c.unavailable.unwrap().contains("could not be started"));
    }

    #[test]
    fn only_this_workspaces_runs_are_listed() {
        let dir = std::env::temp_dir().join(format!("mv-processes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("docker");
        std::fs::write(
            &fake,
            "#!/bin/sh\nprintf 'a1\\tagent-runner-t1-x\\tUp 2 seconds\\t/ws/runs/t1/1\\nb2\\tagent-runner-t1-y\\tUp 1 second\\t/other/runs/t1/1\\nc3\\tz\\tExited (0)\\t/ws/runs-old/t1/1\\n'\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let c = containers(fake.to_str().unwrap(), Path::new("/ws/runs"));
        assert_eq!(c.unavailable, None);
        let ids: Vec<&str> = c.listed.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["a1"]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
