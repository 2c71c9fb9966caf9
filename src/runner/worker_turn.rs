//! One worker turn and its record: snapshot the repository's changed files, run the
//! worker in the sandbox, snapshot again, and keep what happened as a [`WorkerRun`]
//! (what the Task Note and the planner see). Also the task's test command, run inside
//! the sandbox as a [`TestResult`] (the original ran it on the host, AR-M8).
//!
//! Nothing here fails: a worker that cannot be started, a repository git cannot read or
//! a bad config becomes a record with `error` set, so the task can still report it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

use super::cancel::Cancel;
use super::process::{Ending, Output};
use super::sandbox::Sandbox;
use super::time::Timestamp;
use super::worker::{self, Invocation, WorkerConfig};
use crate::git::{GitError, Oid, WorkTree};

/// Characters kept from the end of a worker's or a test's output.
pub(crate) const OUTPUT_TAIL_CHARS: usize = 4000;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunEnding {
    Exited,
    /// Killed by a signal nobody here sent.
    Signalled,
    TimedOut,
    Cancelled,
    /// It never ran (see `error`).
    NotStarted,
}

impl From<Ending> for RunEnding {
    fn from(ending: Ending) -> RunEnding {
        match ending {
            Ending::Exited(_) => RunEnding::Exited,
            Ending::Signalled(_) => RunEnding::Signalled,
            Ending::TimedOut => RunEnding::TimedOut,
            Ending::Cancelled => RunEnding::Cancelled,
        }
    }
}

/// Hands out `run-1`, `run-2`, … for one task, so two runs never share an id (the
/// original used the Unix second, AR-M6).
#[derive(Debug, Default)]
pub struct RunIds {
    next: u64,
}

impl RunIds {
    pub fn new() -> RunIds {
        RunIds::default()
    }

    pub fn next_id(&mut self) -> String {
        self.next += 1;
        format!("run-{}", self.next)
    }
}

/// What one worker run did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkerRun {
    pub id: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub finished_at: String,
    pub duration_ms: u64,
    /// The exit code as a shell reports it (124 timed out, 130 cancelled, 128+n for a
    /// signal); absent when the worker never ran.
    pub exit_code: Option<i32>,
    pub ending: RunEnding,
    pub stdout_tail: String,
    pub stderr_tail: String,
    /// The worker's final message.
    pub summary: String,
    /// Files whose content differs after the run (repository-relative, sorted).
    pub files_changed: Vec<String>,
    /// `git diff --stat` of those files against the commit checked out before the run.
    pub diff_stat: String,
    /// What went wrong around the worker (not the worker's own failure, which is its exit
    /// code and output).
    pub error: Option<String>,
    /// What the planner asked of this run that the worker kind's allow-list refused (or
    /// changed), one sentence each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
    /// The `runner.tooling` worker candidate this run used and why it was chosen
    /// (`codex-cli gpt-5.2 (weighted)`); set by the host, absent without tooling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidate: Option<String>,
}

/// Everything one turn needs besides the sandbox.
pub struct WorkerTurn<'a> {
    pub config: &'a WorkerConfig,
    pub invocation: &'a Invocation,
    /// The repository on the host (for the before/after snapshots).
    pub repo: &'a Path,
    /// Reads a host variable (`env:HOSTVAR` values and API keys).
    pub host_env: &'a dyn Fn(&str) -> Option<String>,
}

/// Runs the worker once in `sandbox` (which must be started) and records it.
pub fn run_worker(
    sandbox: &mut dyn Sandbox,
    turn: &WorkerTurn<'_>,
    ids: &mut RunIds,
    cancel: &Cancel,
) -> WorkerRun {
    let id = ids.next_id();
    let started_at = SystemTime::now();
    let clock = Instant::now();
    let mut errors: Vec<String> = Vec::new();
    let before = Snapshot::take(turn.repo)
        .map_err(|e| {
            errors.push(format!(
                "could not read the repository's changes before the run: {e}"
            ))
        })
        .ok();

    for refusal in &turn.invocation.refused {
        tracing::warn!(run = %id, "{refusal}");
    }
    let outcome = match turn.config.resolve_env(&turn.invocation.env, turn.host_env) {
        Err(e) => Err(e.to_string()),
        Ok(env) => {
            let argv = turn.config.argv(turn.invocation, &sandbox.workdir());
            tracing::info!(run = %id, sandbox = %sandbox.describe(), argv = ?argv, "running the worker");
            sandbox
                .exec(
                    &argv,
                    &env,
                    Some(turn.invocation.prompt.clone().into_bytes()),
                    Some(turn.config.max_run_time()),
                    cancel,
                )
                .map_err(|e| format!("could not run the worker: {e}"))
        }
    };

    let (files_changed, diff_stat) = match before.map(|b| (Snapshot::take(turn.repo), b)) {
        Some((Ok(after), before)) => {
            let files = before.changed_files(&after, turn.repo);
            let stat = diff_stat(turn.repo, before.head, &files).unwrap_or_else(|e| {
                errors.push(format!("could not compute the diff stat: {e}"));
                String::new()
            });
            (files, stat)
        }
        Some((Err(e), _)) => {
            errors.push(format!(
                "could not read the repository's changes after the run: {e}"
            ));
            (Vec::new(), String::new())
        }
        None => (Vec::new(), String::new()),
    };

    let finished_at = SystemTime::now();
    let duration_ms = millis(clock.elapsed());
    let mut run = WorkerRun {
        id,
        started_at: Timestamp::from(started_at).rfc3339(),
        finished_at: Timestamp::from(finished_at).rfc3339(),
        duration_ms,
        exit_code: None,
        ending: RunEnding::NotStarted,
        stdout_tail: String::new(),
        stderr_tail: String::new(),
        summary: String::new(),
        files_changed,
        diff_stat,
        error: None,
        refused: turn.invocation.refused.clone(),
        candidate: None,
    };
    match outcome {
        Ok(output) => fill_from_output(&mut run, &output, turn.config),
        Err(e) => errors.insert(0, e),
    }
    if !errors.is_empty() {
        run.error = Some(errors.join("; "));
    }
    tracing::info!(run = %run.id, ending = ?run.ending, exit_code = ?run.exit_code, files = run.files_changed.len(), "worker run finished");
    run
}

fn fill_from_output(run: &mut WorkerRun, output: &Output, config: &WorkerConfig) {
    run.exit_code = Some(output.ending.code());
    run.ending = output.ending.into();
    run.stdout_tail = output.stdout.tail_text(OUTPUT_TAIL_CHARS);
    run.stderr_tail = output.stderr.tail_text(OUTPUT_TAIL_CHARS);
    run.summary = worker::summary(config.kind, &output.stdout.text());
}

/// The task's test command and how it went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TestResult {
    pub command: String,
    /// Where it ran, as the sandbox sees it.
    pub cwd: String,
    pub exit_code: Option<i32>,
    pub ending: RunEnding,
    /// The end of its output (stdout and stderr interleaved).
    pub output_tail: String,
    pub duration_ms: u64,
    pub error: Option<String>,
}

impl TestResult {
    pub fn passed(&self) -> bool {
        self.ending == RunEnding::Exited && self.exit_code == Some(0)
    }
}

/// Runs the wrapper's directory change and the command; `$1` is the directory, `$2` the
/// command. Passing both as arguments avoids quoting them into a script.
const TEST_WRAPPER: &str = r#"cd "$1" || exit 125
exec sh -c "$2" 2>&1"#;

/// Runs `sh -c <command>` in a fresh sandbox like the worker's ([`Sandbox::exec_fresh`]), in `cwd` (relative to the repository; the
/// repository itself when `None`).
pub fn run_test_command(
    sandbox: &mut dyn Sandbox,
    command: &str,
    cwd: Option<&str>,
    timeout: Option<Duration>,
    cancel: &Cancel,
) -> TestResult {
    let clock = Instant::now();
    let workdir = sandbox.workdir();
    let mut result = TestResult {
        command: command.to_string(),
        cwd: workdir.clone(),
        exit_code: None,
        ending: RunEnding::NotStarted,
        output_tail: String::new(),
        duration_ms: 0,
        error: None,
    };
    match cwd.map(relative_dir).transpose() {
        Err(e) => {
            result.error = Some(e);
            return result;
        }
        Ok(Some(rel)) if !rel.is_empty() => {
            result.cwd = format!("{}/{rel}", workdir.trim_end_matches('/'))
        }
        Ok(_) => {}
    }
    let argv: Vec<String> = vec![
        "sh".into(),
        "-c".into(),
        TEST_WRAPPER.into(),
        "agent-runner-test".into(),
        result.cwd.clone(),
        command.to_string(),
    ];
    tracing::info!(command, cwd = %result.cwd, "running the test command in a fresh sandbox");
    match sandbox.exec_fresh(&argv, timeout, cancel) {
        Ok(output) => {
            result.exit_code = Some(output.ending.code());
            result.ending = output.ending.into();
            let mut tail = output.stdout.tail_text(OUTPUT_TAIL_CHARS);
            let stderr = output.stderr.tail_text(OUTPUT_TAIL_CHARS);
            if !stderr.trim().is_empty() {
                tail.push_str(&stderr);
                let count = tail.chars().count();
                tail = tail
                    .chars()
                    .skip(count.saturating_sub(OUTPUT_TAIL_CHARS))
                    .collect();
            }
            result.output_tail = tail;
            // 126 and 127 are the shell's "cannot execute" and "not found": the image (or
            // machine) lacks the test's tool, which no worker run can fix. Said at once
            // rather than sending the worker back until the loops run out.
            if let Ending::Exited(code @ (126 | 127)) = output.ending {
                let why = if code == 127 {
                    "not found"
                } else {
                    "not executable"
                };
                let last = result
                    .output_tail
                    .trim()
                    .lines()
                    .last()
                    .unwrap_or("")
                    .trim()
                    .to_string();
                result.error = Some(format!(
                    "the test command could not run in {} (exit {code}: {why}): {last}",
                    sandbox.environment()
                ));
            }
        }
        Err(e) => result.error = Some(format!("could not run the test command: {e}")),
    }
    result.duration_ms = millis(clock.elapsed());
    result
}

/// A repository-relative directory with `/` separators, refusing absolute paths and `..`
/// (the command runs inside the repository, whatever path the sandbox gives it).
fn relative_dir(cwd: &str) -> Result<String, String> {
    let path = Path::new(cwd);
    if path.is_absolute() {
        return Err(format!(
            "test cwd {cwd:?} must be relative to the repository"
        ));
    }
    let mut parts = Vec::new();
    for part in path.components() {
        match part {
            std::path::Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            std::path::Component::CurDir => {}
            _ => return Err(format!("test cwd {cwd:?} leaves the repository")),
        }
    }
    Ok(parts.join("/"))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The repository's changed files (work tree and index against HEAD, untracked
/// included, ignored not) with an id of their content, so a file already dirty before
/// the run that changes again is seen; and HEAD, so a run that commits is seen too.
/// More changed files than this and a run record does not track them.
const MAX_SNAPSHOT_FILES: usize = 20_000;
/// Files larger than this are compared by size and modification time.
const MAX_HASHED_BYTES: u64 = 16 * 1024 * 1024;

struct Snapshot {
    head: Option<Oid>,
    files: BTreeMap<String, Option<Oid>>,
}

/// Why a snapshot could not be taken.
#[derive(Debug)]
enum SnapshotError {
    Git(GitError),
    /// More changed files than [`MAX_SNAPSHOT_FILES`].
    TooManyFiles(usize),
}

impl std::fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SnapshotError::Git(e) => e.fmt(f),
            SnapshotError::TooManyFiles(n) => write!(
                f,
                "{n} changed files, more than the {MAX_SNAPSHOT_FILES} a run record tracks"
            ),
        }
    }
}

impl Snapshot {
    /// `repo` may be a directory inside the repository: only its part is looked at, and
    /// paths in records are relative to the work tree, as git shows them.
    fn take(repo: &Path) -> Result<Snapshot, SnapshotError> {
        let tree = WorkTree::discover(repo).map_err(SnapshotError::Git)?;
        let head = tree.head();
        let paths = tree.uncommitted().map_err(SnapshotError::Git)?;
        if paths.len() > MAX_SNAPSHOT_FILES {
            // A worker that created a huge untracked tree (a vendored directory, build
            // output) would make every snapshot slow; the record says so instead.
            return Err(SnapshotError::TooManyFiles(paths.len()));
        }
        // Deleted files have no id; that differs from any content. Large files are told
        // apart by size and modification time rather than read whole.
        let files = paths
            .into_iter()
            .map(|path| {
                let id = tree.content_id(&path, MAX_HASHED_BYTES);
                (path, id)
            })
            .collect();
        Ok(Snapshot { head, files })
    }

    /// Paths whose state differs between `self` (before) and `after`, plus the paths of
    /// commits made in between.
    fn changed_files(&self, after: &Snapshot, repo: &Path) -> Vec<String> {
        let mut changed = BTreeSet::new();
        for path in self.files.keys().chain(after.files.keys()) {
            if self.files.get(path) != after.files.get(path) {
                changed.insert(path.clone());
            }
        }
        if self.head != after.head
            && let Ok(committed) =
                WorkTree::discover(repo).and_then(|t| t.paths_between(self.head, after.head))
        {
            for path in committed {
                // Committed and then changed back in the work tree is no change at all,
                // but that is rare enough to report as changed.
                changed.insert(path);
            }
        }
        changed.into_iter().collect()
    }
}

/// `git diff --stat` of `files` from the commit `base` to the work tree.
fn diff_stat(repo: &Path, base: Option<Oid>, files: &[String]) -> Result<String, GitError> {
    if files.is_empty() {
        return Ok(String::new());
    }
    WorkTree::discover(repo)?.diff_stat(base, files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_unique_per_task() {
        let mut ids = RunIds::new();
        assert_eq!(ids.next_id(), "run-1");
        assert_eq!(ids.next_id(), "run-2");
    }

    #[test]
    fn test_cwd_stays_in_the_repository() {
        assert_eq!(relative_dir("a/./b").unwrap(), "a/b");
        assert_eq!(relative_dir(".").unwrap(), "");
        assert!(relative_dir("../x").is_err());
        assert!(relative_dir("/etc").is_err());
    }
}
