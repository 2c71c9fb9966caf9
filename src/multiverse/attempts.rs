//! An attempt's files as the API and the command line show them: its Task Note, its
//! result JSON and its log (agent-runner's events and the tail of its stderr), read from
//! the workspace's own `runs/<task>/<n>/` only, whatever the state file says, and bounded
//! in what is read.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::model::{TaskId, WorkspaceState};

/// Why an attempt's Task Note, result or log cannot be shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoteError {
    UnknownTask(TaskId),
    /// No such attempt (or, with none asked for, the task has none yet).
    UnknownAttempt {
        task: TaskId,
        attempt: Option<u32>,
    },
    /// The attempt left no note (it is running, or ended before writing one).
    NoNote {
        task: TaskId,
        attempt: u32,
    },
    /// The attempt left no readable result JSON.
    NoResult {
        task: TaskId,
        attempt: u32,
    },
    /// The attempt left no log (it has not started its agent-runner).
    NoLog {
        task: TaskId,
        attempt: u32,
    },
}

impl NoteError {
    pub fn key(&self) -> &'static str {
        match self {
            NoteError::UnknownTask(_) => "unknown_task",
            NoteError::UnknownAttempt { .. } => "unknown_attempt",
            NoteError::NoNote { .. } => "no_note",
            NoteError::NoResult { .. } => "no_result",
            NoteError::NoLog { .. } => "no_log",
        }
    }
}

impl std::fmt::Display for NoteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoteError::UnknownTask(id) => write!(f, "no task {id} in this workspace"),
            NoteError::UnknownAttempt {
                task,
                attempt: Some(n),
            } => write!(f, "task {task} has no attempt {n}"),
            NoteError::UnknownAttempt {
                task,
                attempt: None,
            } => write!(f, "task {task} has not run yet"),
            NoteError::NoNote { task, attempt } => write!(
                f,
                "attempt {attempt} of task {task} left no Task Note (it runs, or ended before writing one)"
            ),
            NoteError::NoResult { task, attempt } => write!(
                f,
                "attempt {attempt} of task {task} left no result (it runs, or ended before writing one)"
            ),
            NoteError::NoLog { task, attempt } => {
                write!(f, "attempt {attempt} of task {task} left no log")
            }
        }
    }
}

impl std::error::Error for NoteError {}

/// An attempt's Task Note (its number and Markdown): attempt `number`, or the last one.
/// Read from the workspace's own `runs/<task>/<n>/note.md` only, whatever the state file
/// says, so no request reaches a file outside the workspace.
pub fn attempt_note(
    dir: &Path,
    state: &WorkspaceState,
    id: &TaskId,
    number: Option<u32>,
) -> Result<(u32, String), NoteError> {
    let (number, path) = attempt_file(dir, state, id, number, "note.md")?;
    std::fs::read_to_string(&path)
        .map(|text| (number, text))
        .map_err(|_| NoteError::NoNote {
            task: id.clone(),
            attempt: number,
        })
}

/// The most of an attempt's result JSON read.
const MAX_RESULT_BYTES: u64 = 4 << 20;

/// An attempt's result JSON as agent-runner wrote it (status, exit code, each criterion's
/// verdict, runs, files changed), from the workspace's own `runs/<task>/<n>/result.json`.
pub fn attempt_result(
    dir: &Path,
    state: &WorkspaceState,
    id: &TaskId,
    number: Option<u32>,
) -> Result<(u32, Value), NoteError> {
    use std::io::Read as _;
    let (number, path) = attempt_file(dir, state, id, number, "result.json")?;
    let missing = || NoteError::NoResult {
        task: id.clone(),
        attempt: number,
    };
    let mut text = String::new();
    std::fs::File::open(&path)
        .and_then(|f| f.take(MAX_RESULT_BYTES).read_to_string(&mut text))
        .map_err(|_| missing())?;
    serde_json::from_str(&text)
        .map(|value| (number, value))
        .map_err(|_| missing())
}

/// The path of `name` in attempt `number`'s (or the last attempt's) run directory.
fn attempt_file(
    dir: &Path,
    state: &WorkspaceState,
    id: &TaskId,
    number: Option<u32>,
    name: &str,
) -> Result<(u32, PathBuf), NoteError> {
    let runtime = state
        .runtime
        .get(id)
        .ok_or_else(|| NoteError::UnknownTask(id.clone()))?;
    let found = match number {
        Some(n) => runtime.attempts.iter().find(|a| a.number == n),
        None => runtime.attempts.last(),
    }
    .ok_or(NoteError::UnknownAttempt {
        task: id.clone(),
        attempt: number,
    })?;
    let path = dir
        .join("runs")
        .join(id.as_str())
        .join(found.number.to_string())
        .join(name);
    Ok((found.number, path))
}

/// The most of an attempt's `events.jsonl` read: its last lines.
const MAX_EVENTS_BYTES: u64 = 1 << 20;
/// The most of an attempt's `stderr.log` read: its tail.
const MAX_STDERR_BYTES: u64 = 64 << 10;

/// An attempt's log: its number, agent-runner's events (the last MiB of `events.jsonl`,
/// each line as JSON, or `{text}` when it is not) and the tail of its `stderr.log`, with
/// whether either was cut. Lets a view show the run of an attempt that ended before it
/// was opened; a running attempt's new lines come as `run` events.
pub fn attempt_log(
    dir: &Path,
    state: &WorkspaceState,
    id: &TaskId,
    number: Option<u32>,
) -> Result<(u32, Value), NoteError> {
    let (number, events_path) = attempt_file(dir, state, id, number, "events.jsonl")?;
    let run_dir = events_path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let events = tail(&events_path, MAX_EVENTS_BYTES);
    let stderr = tail(&run_dir.join("stderr.log"), MAX_STDERR_BYTES);
    if events.is_none() && stderr.is_none() {
        return Err(NoteError::NoLog {
            task: id.clone(),
            attempt: number,
        });
    }
    let (events, events_cut) = events.unwrap_or_default();
    let mut lines: Vec<&str> = events.lines().collect();
    // A cut file starts mid-line: that first piece is not an event.
    if events_cut && !lines.is_empty() {
        lines.remove(0);
    }
    let events: Vec<Value> = lines
        .into_iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| json!({"text": l})))
        .collect();
    let (stderr, stderr_cut) = stderr.unwrap_or_default();
    Ok((
        number,
        json!({"events": events, "events_cut": events_cut,
               "stderr": stderr, "stderr_cut": stderr_cut}),
    ))
}

/// The last `limit` bytes of a file as text, and whether it was longer; none when it
/// cannot be read.
fn tail(path: &Path, limit: u64) -> Option<(String, bool)> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    let length = file.metadata().ok()?.len();
    let start = length.saturating_sub(limit);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::new();
    file.take(limit).read_to_end(&mut bytes).ok()?;
    Some((String::from_utf8_lossy(&bytes).into_owned(), start > 0))
}
