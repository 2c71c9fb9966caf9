//! One attempt of a task: the task file `agent-runner` is given (written from the task's
//! design and the workspace's runner defaults), the `agent-runner` process, its stop
//! (SIGTERM, so its finalizers remove the container; KILL only after a grace, then the
//! task's containers are removed by label), and what it left: the exit code and the result
//! JSON, read into an [`AttemptEnd`].
//!
//! Each attempt has its own directory (`runs/<task>/<n>/`): `task.yaml`, `result.json`,
//! `events.jsonl`, `stderr.log` and, after the run, a copy of the Task Note. Output goes to
//! files, never pipes the orchestrator must drain (the original's child blocked on a full
//! pipe), and the process is reaped only under the lock a stop takes, so a stop never
//! signals a pid that was already reaped and reused. [`EventsTail`] reads the lines
//! agent-runner appends to `events.jsonl` while it runs, for the orchestrator to forward.

use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::model::TaskDesign;

/// How often a running attempt's process is polled.
const POLL: Duration = Duration::from_millis(20);

/// What an attempt needs to run.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// `agent-runner` (a path, or a name on PATH).
    pub program: PathBuf,
    /// Arguments after the task file, e.g. `--unsafe-local`.
    pub extra_args: Vec<String>,
    /// The repository the task works in.
    pub project_root: PathBuf,
    /// The attempt's directory (created if missing).
    pub run_dir: PathBuf,
    /// The workspace's `runner:` block (planner, worker, sandbox, loops); the task's own
    /// settings win over it.
    pub runner_defaults: Value,
}

/// How an attempt ended, as the lifecycle reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptEnd {
    /// `agent-runner`'s exit code; `None` when it was killed by a signal.
    pub exit_code: Option<i32>,
    /// The result JSON's `status` (`complete`, `failed`, `incomplete`, `needs_human`,
    /// `cancelled`), or `None` when it wrote none (it could not start, it was killed).
    pub status: Option<String>,
    /// The result's summary, or why there is none.
    pub summary: String,
    /// The planner's question when the status is `needs_human`.
    pub question: Option<String>,
    pub files_changed: Vec<String>,
    pub duration: Duration,
    /// The copy of the Task Note in the run directory, when there was one.
    pub note: Option<PathBuf>,
}

/// Why an attempt could not be started.
#[derive(Debug)]
pub enum LaunchError {
    /// The run directory or a file in it could not be written.
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// `agent-runner` could not be started.
    Spawn {
        program: PathBuf,
        error: std::io::Error,
    },
}

impl std::fmt::Display for LaunchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LaunchError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            LaunchError::Spawn { program, error } => {
                write!(f, "could not start {}: {error}", program.display())
            }
        }
    }
}

impl std::error::Error for LaunchError {}

/// The task file for one attempt, as JSON (which YAML reads as it is: no escaping rules
/// of another language to get wrong, unlike the original's Go `%q` into YAML).
pub fn task_file(design: &TaskDesign, project_root: &Path, runner_defaults: &Value) -> Value {
    let mut prd = format!("Execute task: {}\n", design.title);
    if !design.description.trim().is_empty() {
        prd.push_str(&format!("\nDescription:\n{}\n", design.description.trim()));
    }
    if !design.acceptance_criteria.is_empty() {
        prd.push_str("\nAcceptance criteria:\n");
        for criterion in &design.acceptance_criteria {
            prd.push_str(&format!("- {criterion}\n"));
        }
    }
    let mut task = json!({
        "id": design.id.as_str(),
        "title": design.title,
        "repo": project_root.display().to_string(),
        "prd": {"text": prd},
    });
    if !design.description.is_empty() {
        task["description"] = json!(design.description);
    }
    if let Some(phase) = &design.phase {
        task["phase_name"] = json!(phase);
    }
    if let Some(hint) = &design.suggested_impl {
        let mut value = json!({"file_paths": hint.file_paths, "constraints": hint.constraints});
        if let Some(language) = &hint.language {
            value["language"] = json!(language);
        }
        task["suggested_impl"] = value;
    }
    if let Some(command) = &design.runner.test_command {
        task["test"] = json!({"command": command});
    }
    let mut runner = match runner_defaults {
        Value::Object(map) => Value::Object(map.clone()),
        _ => json!({}),
    };
    if let Some(loops) = design.runner.max_loops {
        runner["max_loops"] = json!(loops);
    }
    if let Some(kind) = &design.runner.worker_kind {
        // A different kind replaces the default worker block: its fields belong to a kind.
        let same = runner["worker"]["kind"].as_str() == Some(kind.as_str());
        if !same {
            runner["worker"] = json!({"kind": kind});
        }
    }
    json!({"version": 1, "task": task, "runner": runner})
}

/// An attempt's process, or how it ended once reaped.
#[derive(Debug)]
enum Slot {
    Running(Child),
    Ended(std::process::ExitStatus),
}

/// A running attempt. Dropping it does not stop the process: the scheduler stops what it
/// means to stop, and a restart recovers the rest.
#[derive(Debug, Clone)]
pub struct RunningAttempt {
    pid: u32,
    /// The process until it is reaped (nothing may be signalled after that), then how it
    /// ended.
    child: Arc<Mutex<Slot>>,
    started: Instant,
    run_dir: PathBuf,
    project_root: PathBuf,
    task_id: String,
}

/// Writes the attempt's task file and starts `agent-runner` on it.
pub fn launch(design: &TaskDesign, request: &RunRequest) -> Result<RunningAttempt, LaunchError> {
    let dir = &request.run_dir;
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |error| LaunchError::Io { path, error }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let task_path = dir.join("task.yaml");
    let text = serde_json::to_string_pretty(&task_file(
        design,
        &request.project_root,
        &request.runner_defaults,
    ))
    .unwrap_or_default();
    crate::codeintel::store::atomic_write(&task_path, text.as_bytes()).map_err(io(&task_path))?;
    // What a run of the same number left (a task deleted and planned again under its id)
    // must not be read as this one's result or events.
    for stale in [dir.join("result.json"), dir.join("events.jsonl")] {
        match std::fs::remove_file(&stale) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(&stale)(e)),
            _ => {}
        }
    }
    let stderr_path = dir.join("stderr.log");
    let stderr = File::create(&stderr_path).map_err(io(&stderr_path))?;
    let mut command = Command::new(&request.program);
    command
        .arg(&task_path)
        .arg("--result-file")
        .arg(dir.join("result.json"))
        .arg("--events")
        .arg(dir.join("events.jsonl"))
        // Task ids repeat across workspaces: this attempt's containers are found by its
        // run directory, which is its own.
        .arg("--run-label")
        .arg(dir)
        .args(&request.extra_args);
    if request.extra_args.iter().any(|a| a == "--unsafe-local") {
        // The worker runs on this machine as this user: what it must not reach is hidden
        // from it (README's promise: a workspace no worker can reach).
        for path in hidden_paths(request) {
            command.arg("--hide").arg(path);
        }
    }
    command
        .current_dir(&request.project_root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(stderr));
    let child = command.spawn().map_err(|error| LaunchError::Spawn {
        program: request.program.clone(),
        error,
    })?;
    tracing::info!(task = %design.id, pid = child.id(), dir = %dir.display(), "started agent-runner");
    Ok(RunningAttempt {
        pid: child.id(),
        child: Arc::new(Mutex::new(Slot::Running(child))),
        started: Instant::now(),
        run_dir: dir.clone(),
        project_root: request.project_root.clone(),
        task_id: design.id.to_string(),
    })
}

impl RunningAttempt {
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The JSON lines agent-runner writes while it runs (`--events`).
    pub fn events_path(&self) -> PathBuf {
        self.run_dir.join("events.jsonl")
    }

    /// The exit status once the process ended (reaping it), `None` while it runs.
    fn poll(&self) -> Option<std::process::ExitStatus> {
        let mut guard = self.child.lock().unwrap_or_else(|e| e.into_inner());
        let child = match &mut *guard {
            Slot::Ended(status) => return Some(*status),
            Slot::Running(child) => child,
        };
        match child.try_wait() {
            Ok(Some(status)) => {
                *guard = Slot::Ended(status);
                Some(status)
            }
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(pid = self.pid, error = %e, "could not poll agent-runner");
                None
            }
        }
    }

    /// Blocks until the process ends and reads what it left.
    pub fn wait(&self) -> AttemptEnd {
        loop {
            // Blocks until the process has ended without reaping it (WNOWAIT), so its pid
            // stays ours until `poll` reaps it under the lock that `signal` takes: no
            // polling delay between an attempt's end and the next start.
            let pid = nix::unistd::Pid::from_raw(i32::try_from(self.pid).unwrap_or(i32::MAX));
            let flags = nix::sys::wait::WaitPidFlag::WEXITED | nix::sys::wait::WaitPidFlag::WNOWAIT;
            let waited = nix::sys::wait::waitid(nix::sys::wait::Id::Pid(pid), flags);
            if let Some(status) = self.poll() {
                return self.end(status);
            }
            // Interrupted (EINTR): wait again; anything else: poll.
            if waited.is_err_and(|e| e != nix::errno::Errno::EINTR) {
                std::thread::sleep(POLL);
            }
        }
    }

    /// Asks the process to stop (SIGTERM: agent-runner cancels the task, its finalizers
    /// remove the container and write the note). Returns false when it had already ended.
    pub fn terminate(&self) -> bool {
        self.signal(nix::sys::signal::Signal::SIGTERM)
    }

    /// Kills the process (after the grace of [`Self::terminate`]) and removes the
    /// attempt's containers, which its finalizers then could not.
    pub fn kill(&self) -> bool {
        let killed = self.signal(nix::sys::signal::Signal::SIGKILL);
        if killed {
            remove_run_containers(&self.run_dir);
        }
        killed
    }

    fn signal(&self, signal: nix::sys::signal::Signal) -> bool {
        // Under the lock, and only while the child is not reaped: its pid is still ours.
        let guard = self.child.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(*guard, Slot::Ended(_)) {
            return false;
        }
        let pid = nix::unistd::Pid::from_raw(self.pid as i32);
        nix::sys::signal::kill(pid, signal).is_ok()
    }

    fn end(&self, status: std::process::ExitStatus) -> AttemptEnd {
        let result = std::fs::read_to_string(self.run_dir.join("result.json"))
            .ok()
            .and_then(|text| serde_json::from_str::<Value>(&text).ok());
        let text = |key: &str| {
            result
                .as_ref()
                .and_then(|r| r[key].as_str())
                .map(str::to_string)
        };
        let mut files: Vec<String> = Vec::new();
        if let Some(runs) = result.as_ref().and_then(|r| r["runs"].as_array()) {
            for run in runs {
                for file in run["files_changed"].as_array().into_iter().flatten() {
                    if let Some(file) = file.as_str()
                        && !files.iter().any(|f| f == file)
                    {
                        files.push(file.to_string());
                    }
                }
            }
        }
        let summary = text("summary").unwrap_or_else(|| match status.code() {
            Some(code) => format!(
                "agent-runner exited {code} without a result; see {}",
                self.run_dir.join("stderr.log").display()
            ),
            None => "agent-runner was killed".to_string(),
        });
        AttemptEnd {
            exit_code: status.code(),
            status: text("status"),
            summary,
            question: text("question"),
            files_changed: files,
            duration: self.started.elapsed(),
            note: self.copy_note(),
        }
    }

    /// Copies the Task Note agent-runner wrote in the repository into the run directory,
    /// so every attempt keeps its own (the next run moves the repository's aside).
    fn copy_note(&self) -> Option<PathBuf> {
        let note = self
            .project_root
            .join(".agent-runner")
            .join(format!("task-{}.md", self.task_id));
        // The repository is the worker's: a note it replaced with a link (to a key in
        // the user's home, say) is not followed into the workspace, nor one it made huge
        // read whole.
        let text = note_copy(&note, MAX_NOTE_BYTES)?;
        let copy = self.run_dir.join("note.md");
        match crate::codeintel::store::atomic_write(&copy, &text) {
            Ok(()) => Some(copy),
            Err(e) => {
                tracing::warn!(note = %note.display(), error = %e, "could not keep the Task Note");
                None
            }
        }
    }
}

/// The longest line of an events file that is forwarded; a longer one is skipped (and
/// said), never buffered whole.
pub(crate) const MAX_EVENT_LINE: usize = 64 * 1024;

/// Bytes read from an events file at a time.
const CHUNK: usize = 16 * 1024;

/// One line of an attempt's events file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RunLine {
    /// A JSON line: agent-runner's event object (`state`, `action`, `action_done`,
    /// `finished`, with `ts` and `trace_id`).
    Event(Value),
    /// A line that is not JSON, as text.
    Text(String),
    /// A line longer than [`MAX_EVENT_LINE`], skipped: its length in bytes.
    Skipped(u64),
}

/// Follows an events file as it grows: each call returns the lines completed since the
/// last one, in order and once. A partial last line waits for its newline; memory stays
/// bounded by [`MAX_EVENT_LINE`] and [`CHUNK`] whatever the file holds.
#[derive(Debug)]
pub(crate) struct EventsTail {
    path: PathBuf,
    file: Option<File>,
    /// Bytes of the file consumed so far.
    offset: u64,
    /// The start of a line whose newline has not come yet.
    pending: Vec<u8>,
    /// Bytes of an overlong line dropped so far, while it is being skipped.
    skipping: Option<u64>,
}

impl EventsTail {
    pub(crate) fn new(path: PathBuf) -> EventsTail {
        EventsTail {
            path,
            file: None,
            offset: 0,
            pending: Vec::new(),
            skipping: None,
        }
    }

    /// The lines completed since the last call, reading at most about `budget` bytes (the
    /// rest waits for the next call, so one call never floods the subscribers).
    pub(crate) fn read(&mut self, budget: usize) -> Vec<RunLine> {
        let mut lines = Vec::new();
        if self.file.is_none() {
            // Not there until agent-runner creates it.
            match File::open(&self.path) {
                Ok(file) => self.file = Some(file),
                Err(_) => return lines,
            }
        }
        // Out of `self` while `take` changes the rest; put back below.
        let Some(file) = self.file.take() else {
            return lines;
        };
        let mut buf = vec![0u8; CHUNK];
        let mut read = 0;
        while read < budget {
            let n = match file.read_at(&mut buf, self.offset) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    tracing::warn!(path = %self.path.display(), error = %e, "could not read the run's events");
                    break;
                }
            };
            read += n;
            self.offset += n as u64;
            self.take(&buf[..n], &mut lines);
        }
        self.file = Some(file);
        lines
    }

    /// Everything left, once the process has ended: the whole remainder, and a last line
    /// without its newline too (nothing will complete it).
    pub(crate) fn drain(&mut self) -> Vec<RunLine> {
        let mut lines = self.read(usize::MAX);
        if let Some(bytes) = self.skipping.take() {
            lines.push(RunLine::Skipped(bytes));
        } else if !self.pending.is_empty() {
            lines.extend(line(&std::mem::take(&mut self.pending)));
        }
        lines
    }

    /// Splits `bytes` at newlines onto what is pending.
    fn take(&mut self, mut bytes: &[u8], lines: &mut Vec<RunLine>) {
        while !bytes.is_empty() {
            let (part, complete) = match bytes.iter().position(|&b| b == b'\n') {
                Some(at) => (&bytes[..at], true),
                None => (bytes, false),
            };
            bytes = &bytes[(part.len() + usize::from(complete)).min(bytes.len())..];
            if let Some(dropped) = &mut self.skipping {
                *dropped += part.len() as u64;
            } else if self.pending.len() + part.len() > MAX_EVENT_LINE {
                self.skipping = Some((self.pending.len() + part.len()) as u64);
                self.pending = Vec::new();
            } else {
                self.pending.extend_from_slice(part);
            }
            if !complete {
                continue;
            }
            if let Some(bytes) = self.skipping.take() {
                tracing::warn!(path = %self.path.display(), bytes, "skipped an overlong line of the run's events");
                lines.push(RunLine::Skipped(bytes));
            } else {
                lines.extend(line(&self.pending));
                self.pending.clear();
            }
        }
    }
}

/// A complete line as a [`RunLine`]; nothing for a blank one.
fn line(bytes: &[u8]) -> Option<RunLine> {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end_matches('\r');
    if text.trim().is_empty() {
        return None;
    }
    Some(match serde_json::from_str::<Value>(text) {
        Ok(value) => RunLine::Event(value),
        Err(_) => RunLine::Text(text.to_string()),
    })
}

/// The most of a Task Note copied into the run directory, as the most of a result JSON
/// the API reads (`attempts`).
pub(crate) const MAX_NOTE_BYTES: u64 = 4 << 20;

/// A Task Note's copy: the file's bytes when it holds at most `limit`; else its first
/// `limit` bytes as text (a character cut in two replaced) and a last line saying the
/// rest was not kept. Nothing for a link or anything but a regular file.
fn note_copy(path: &Path, limit: u64) -> Option<Vec<u8>> {
    let (bytes, longer) = read_regular_file(path, limit)?;
    if !longer {
        return Some(bytes);
    }
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    text.push_str(&format!(
        "\n\n[multiverse: this Task Note is longer than {limit} bytes; only its first {limit} bytes were kept]\n"
    ));
    Some(text.into_bytes())
}

/// A regular file's first `limit` bytes, opened without following a final symbolic link,
/// and whether it held more (the read stops one byte past the limit).
fn read_regular_file(path: &Path, limit: u64) -> Option<(Vec<u8>, bool)> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .ok()?;
    let longer = bytes.len() as u64 > limit;
    bytes.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    Some((bytes, longer))
}

/// What an `--unsafe-local` attempt hides from its worker (agent-runner's `--hide`): the
/// workspace (when it holds its project, each of its entries but the one leading to the
/// project; when the run directory is not in a workspace's `runs/<task>/<n>`, the run
/// directory), and the recent list's directory `.multiverse` (the one holding the
/// workspace, and the user's own, from the password database) unless it holds the
/// project. Canonical paths of what exists, none overlapping the project.
fn hidden_paths(request: &RunRequest) -> Vec<PathBuf> {
    let canonical = |path: &Path| path.canonicalize().ok();
    let project = canonical(&request.project_root).unwrap_or_else(|| request.project_root.clone());
    let fits = |path: &Path| {
        !project.starts_with(path)
            && !path.starts_with(&project)
            && (path.is_dir() || path.is_file())
    };
    let mut hidden: Vec<PathBuf> = Vec::new();
    let workspace = request
        .run_dir
        .parent()
        .and_then(Path::parent)
        .filter(|runs| runs.file_name().is_some_and(|n| n == "runs"))
        .and_then(Path::parent)
        .and_then(canonical);
    match &workspace {
        Some(ws) if project.starts_with(ws) => {
            let entries = std::fs::read_dir(ws).into_iter().flatten().flatten();
            hidden.extend(
                entries
                    .filter_map(|e| canonical(&e.path()))
                    .filter(|p| fits(p)),
            );
        }
        Some(ws) => hidden.push(ws.clone()),
        None => hidden.extend(canonical(&request.run_dir).filter(|p| fits(p))),
    }
    let user_home = nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|user| user.dir.join(".multiverse"));
    let recent = workspace
        .iter()
        .flat_map(|ws| ws.ancestors())
        .filter(|dir| dir.file_name().is_some_and(|n| n == ".multiverse"))
        .map(Path::to_path_buf)
        .chain(user_home);
    for dir in recent {
        if let Some(dir) = canonical(&dir).filter(|d| d.is_dir() && fits(d))
            && !hidden.contains(&dir)
        {
            hidden.push(dir);
        }
    }
    hidden
}

/// A process left by a crashed orchestrator: if it is still the attempt's agent-runner
/// (its command line names the attempt's directory; a reused pid is left alone), it is
/// stopped: TERM, then KILL after the grace.
pub(crate) fn stop_orphan(pid: u32, run_dir: &str, grace: Duration) {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let ours = String::from_utf8_lossy(&cmdline).contains(run_dir);
    if !ours {
        return;
    }
    let Ok(raw) = i32::try_from(pid) else { return };
    let pid = nix::unistd::Pid::from_raw(raw);
    tracing::warn!(%pid, "stopping an attempt left running by a crashed orchestrator");
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let until = Instant::now() + grace;
    while Instant::now() < until {
        if nix::sys::signal::kill(pid, None).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
}

/// Removes the containers agent-runner made for the attempt whose run directory is
/// `run_dir` (its `--run-label`: `agent-runner.run=<run dir>`), for a run that was killed
/// or found dead after a crash. Not by the task's id: another workspace may have a task
/// of the same id running. Best effort: no docker, no containers.
pub fn remove_run_containers(run_dir: &Path) {
    let listed = Command::new("docker")
        .args([
            "ps",
            "-a",
            "-q",
            "--filter",
            &format!("label={}={}", crate::runner::RUN_LABEL, run_dir.display()),
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    let Ok(listed) = listed else { return };
    let ids: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect();
    if ids.is_empty() {
        return;
    }
    let removed = Command::new("docker")
        .arg("rm")
        .arg("-f")
        .args(&ids)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    tracing::info!(
        run = %run_dir.display(),
        containers = ids.len(),
        ok = removed.is_ok_and(|s| s.success()),
        "removed the attempt's containers"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multiverse::model::{RunnerSettings, SuggestedImpl, TaskId};

    fn design() -> TaskDesign {
        TaskDesign {
            id: TaskId::parse("t-1").unwrap(),
            title: "Add: \"quotes\" \\ and\nnewlines".into(),
            description: "Do it: {x}\n  indented".into(),
            acceptance_criteria: vec!["it works".into(), "- odd: yaml".into()],
            suggested_impl: Some(SuggestedImpl {
                language: Some("rust".into()),
                file_paths: vec!["src/a.rs".into()],
                constraints: vec![],
            }),
            dependencies: vec![],
            milestone: None,
            phase: Some("実装".into()),
            pool: "default".into(),
            priority: 0,
            runner: RunnerSettings {
                max_loops: Some(4),
                worker_kind: None,
                test_command: Some("cargo test".into()),
            },
            created_at: "2026-11-27T00:00:00Z".into(),
            updated_at: "2026-11-27T00:00:00Z".into(),
            created_by: "user".into(),
        }
    }

    #[test]
    fn the_task_file_carries_the_design_and_reads_back_as_yaml() {
        let defaults = json!({"max_loops": 9, "meta": {"kind": "mock"}, "worker": {"kind": "command", "command": ["sh", "x"]}});
        let file = task_file(&design(), Path::new("/repo"), &defaults);
        assert_eq!(file["version"], 1);
        assert_eq!(file["task"]["id"], "t-1");
        assert_eq!(file["task"]["repo"], "/repo");
        assert_eq!(file["task"]["test"]["command"], "cargo test");
        assert_eq!(
            file["runner"]["max_loops"], 4,
            "the task's own setting wins"
        );
        assert_eq!(file["runner"]["meta"]["kind"], "mock");
        assert_eq!(file["runner"]["worker"]["command"][0], "sh");
        let prd = file["task"]["prd"]["text"].as_str().unwrap();
        assert!(
            prd.contains("- it works") && prd.contains("\"quotes\""),
            "{prd}"
        );
        // What agent-runner reads: the JSON text parsed as YAML gives the same value.
        let text = serde_json::to_string_pretty(&file).unwrap();
        let file_id = crate::source::Sources::default().add("task.yaml", text.clone());
        let (node, findings) = crate::yaml::parse(file_id, &text).unwrap();
        assert!(findings.is_empty(), "{findings:?}");
        assert_eq!(node.to_json(), file);
    }

    #[test]
    fn a_note_replaced_by_a_link_is_not_followed() {
        let dir = std::env::temp_dir().join(format!("mv-note-link-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let secret = dir.join("secret");
        std::fs::write(&secret, "key").unwrap();
        let link = dir.join("task-t.md");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        assert_eq!(note_copy(&link, MAX_NOTE_BYTES), None);
        assert_eq!(
            note_copy(&secret, MAX_NOTE_BYTES).as_deref(),
            Some(&b"key"[..])
        );
        assert_eq!(note_copy(&dir, MAX_NOTE_BYTES), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_note_past_the_limit_is_kept_cut_and_says_so() {
        let dir = std::env::temp_dir().join(format!("mv-note-big-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let note = dir.join("task-t.md");
        std::fs::write(&note, "ab€cd").unwrap();
        // Within the limit: byte for byte.
        assert_eq!(note_copy(&note, 7).unwrap(), "ab€cd".as_bytes());
        // Past it: the first bytes, the cut character replaced, and a line saying so.
        let cut = String::from_utf8(note_copy(&note, 3).unwrap()).unwrap();
        assert!(
            cut.starts_with("ab\u{fffd}\n\n[multiverse: this Task Note is longer than 3 bytes"),
            "{cut}"
        );
        assert_eq!(
            read_regular_file(&note, 3),
            Some((b"ab\xe2".to_vec(), true))
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_unsafe_local_attempt_hides_the_workspace_but_never_the_project() {
        let root = std::env::temp_dir().join(format!("mv-hide-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let ws = root.join(".multiverse/workspaces/p-1");
        for sub in ["runs/t/1", "history"] {
            std::fs::create_dir_all(ws.join(sub)).unwrap();
        }
        std::fs::create_dir_all(root.join("project")).unwrap();
        let root = root.canonicalize().unwrap();
        let ws = ws.canonicalize().unwrap();
        let request = |project: PathBuf, run_dir: PathBuf| RunRequest {
            program: PathBuf::from("agent-runner"),
            extra_args: vec!["--unsafe-local".into()],
            project_root: project,
            run_dir,
            runner_defaults: json!({}),
        };
        let hidden = hidden_paths(&request(root.join("project"), ws.join("runs/t/1")));
        assert!(
            hidden.starts_with(&[ws.clone(), root.join(".multiverse")]),
            "{hidden:?}"
        );
        // A workspace holding its project: its entries but the way to the project.
        std::fs::create_dir_all(ws.join("code/project")).unwrap();
        let hidden = hidden_paths(&request(ws.join("code/project"), ws.join("runs/t/1")));
        assert!(hidden.contains(&ws.join("runs")) && hidden.contains(&ws.join("history")));
        assert!(
            !hidden
                .iter()
                .any(|p| ws.join("code/project").starts_with(p)),
            "{hidden:?}"
        );
        // Not a workspace's run directory: that directory.
        let hidden = hidden_paths(&request(root.join("project"), ws.join("runs/t")));
        assert_eq!(hidden.first(), Some(&ws.join("runs/t")));
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn another_worker_kind_replaces_the_default_worker_block() {
        let mut d = design();
        d.runner.worker_kind = Some("claude-code".into());
        let defaults = json!({"worker": {"kind": "codex-cli", "model": "m"}});
        let file = task_file(&d, Path::new("/repo"), &defaults);
        assert_eq!(file["runner"]["worker"], json!({"kind": "claude-code"}));
        d.runner.worker_kind = Some("codex-cli".into());
        let file = task_file(&d, Path::new("/repo"), &defaults);
        assert_eq!(file["runner"]["worker"]["model"], "m");
    }

    #[test]
    fn an_events_tail_gives_each_complete_line_once_in_order() {
        let dir = std::env::temp_dir().join(format!("mv-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("events.jsonl");
        let _ = std::fs::remove_file(&path);
        let mut tail = EventsTail::new(path.clone());
        assert_eq!(tail.read(usize::MAX), vec![], "no file yet");
        let append = |bytes: &[u8]| {
            use std::io::Write as _;
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .unwrap();
            f.write_all(bytes).unwrap();
        };
        append(b"{\"event\":\"state\",\"to\":\"A\"}\n{\"event\":\"act");
        assert_eq!(
            tail.read(usize::MAX),
            vec![RunLine::Event(json!({"event": "state", "to": "A"}))]
        );
        assert_eq!(tail.read(usize::MAX), vec![], "the partial line waits");
        append(b"ion\"}\n\nnot json\r\n");
        assert_eq!(
            tail.read(usize::MAX),
            vec![
                RunLine::Event(json!({"event": "action"})),
                RunLine::Text("not json".into())
            ]
        );
        // An overlong line is skipped as it comes, in pieces, never held whole.
        append(&vec![b'x'; MAX_EVENT_LINE]);
        assert_eq!(tail.read(usize::MAX), vec![]);
        append(b"xx\n{\"n\":1}\n");
        assert_eq!(
            tail.read(usize::MAX),
            vec![
                RunLine::Skipped(MAX_EVENT_LINE as u64 + 2),
                RunLine::Event(json!({"n": 1}))
            ]
        );
        assert!(tail.pending.capacity() <= MAX_EVENT_LINE + CHUNK);
        // A budget leaves the rest for the next call; the drain takes a last partial line.
        let many: String = (0..2000).map(|i| format!("{{\"n\":{i}}}\n")).collect();
        append(many.as_bytes());
        append(b"{\"last\":true}");
        let first = tail.read(1);
        assert!(!first.is_empty() && first.len() < 2000, "{}", first.len());
        let mut rest = tail.drain();
        assert_eq!(rest.pop(), Some(RunLine::Event(json!({"last": true}))));
        let all: Vec<RunLine> = first.into_iter().chain(rest).collect();
        let expected: Vec<RunLine> = (0..2000).map(|i| RunLine::Event(json!({"n": i}))).collect();
        assert_eq!(all, expected);
        assert_eq!(tail.drain(), vec![]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
