//! A task run's record for whoever investigates it afterwards. Beside the Task Note
//! (`.agent-runner/task-<id>.md`) the directory `.agent-runner/task-<id>/` keeps what the
//! note only sums up: every planner exchange (`planner/001-plan_task.json`: the messages
//! sent, the raw reply, the error), each worker run's prompt and full output
//! (`runs/run-1/prompt.md`, `stdout.txt`, `stderr.txt`, `run.json`) and each test
//! command's output (`tests/001.txt`). Every file is written atomically (temp file, fsync,
//! rename; each directory fsynced once per batch of writes), so a crash leaves whole files
//! or none. The writes happen on the record's writer thread, in
//! order: a sync costs milliseconds on a busy disk, several per loop, and the flow never
//! waits for them; dropping the record waits until every file is written.
//!
//! No secret reaches it: the environment given to the worker is recorded by name only,
//! request headers (where the planner's key goes) are never kept, and any value of the
//! worker's environment or the planner's key that a program echoes is replaced by
//! `[redacted: NAME]` before a file is written.
//!
//! A rerun of the same task first moves the earlier run's note, result and directory
//! together to the next free `task-<id>-<n>` names ([`rotate_earlier`]), and points the
//! moved note's links at the moved directory: nothing of an earlier run is overwritten.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::{Value, json};

use super::process::{Captured, Output};
use super::protocol::planner::Exchange;
use crate::codeintel::store::{atomic_write, sync_dir, write_and_rename};

/// The directory beside the repository's code that holds the runner's records.
pub(crate) const RECORD_DIR: &str = ".agent-runner";

/// Secrets shorter than this are not searched for: a value like `1` would turn every
/// digit of the output into a redaction, and is no secret anyway.
const MIN_SECRET_CHARS: usize = 8;

/// A random id for one task run, 16 hex digits, that ties its log lines, its events, its
/// note and its result together.
pub fn new_trace_id() -> String {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness: the time and the pid still tell two runs apart.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let mixed = (nanos as u64) ^ (u64::from(std::process::id()) << 32);
        bytes = mixed.to_be_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The note's name of a task's latest run: `task-<id>`.
fn stem(task_id: &str) -> String {
    format!("task-{task_id}")
}

/// Moves an earlier run's note (`task-<id>.md`), result (`.json`) and directory
/// (`task-<id>/`) to the first `task-<id>-<n>` under which none of the three exists, so
/// the run about to start takes the plain names and nothing is overwritten. The moved
/// note's links and the moved result's `artifacts` are pointed at the moved directory.
/// Returns what went wrong, for the run's warnings (the run goes on either way).
pub(crate) fn rotate_earlier(repo: &Path, task_id: &str) -> Vec<String> {
    let dir = repo.join(RECORD_DIR);
    let stem = stem(task_id);
    let note = dir.join(format!("{stem}.md"));
    let result = dir.join(format!("{stem}.json"));
    let records = dir.join(&stem);
    // A symlink counts as there: it is moved aside, never followed.
    let there = |p: &Path| p.symlink_metadata().is_ok();
    if ![&note, &result, &records].iter().any(|p| there(p)) {
        return Vec::new();
    }
    let Some(n) = (2..100_000).find(|n| {
        let kept = format!("{stem}-{n}");
        !there(&dir.join(format!("{kept}.md")))
            && !there(&dir.join(format!("{kept}.json")))
            && !there(&dir.join(&kept))
    }) else {
        return vec![format!(
            "no free name to keep the earlier runs of task {task_id} under; they will be replaced"
        )];
    };
    let kept = format!("{stem}-{n}");
    let mut problems = Vec::new();
    for (from, to) in [
        (&note, dir.join(format!("{kept}.md"))),
        (&result, dir.join(format!("{kept}.json"))),
        (&records, dir.join(&kept)),
    ] {
        if there(from)
            && let Err(e) = std::fs::rename(from, &to)
        {
            problems.push(format!(
                "could not keep the earlier {} as {}: {e}",
                from.display(),
                to.display()
            ));
        }
    }
    // The moved note linked `task-<id>/…`, which now names the new run's directory.
    let moved_note = dir.join(format!("{kept}.md"));
    if let Ok(text) = std::fs::read_to_string(&moved_note) {
        let relinked = text.replace(&format!("]({stem}/"), &format!("]({kept}/"));
        if relinked != text
            && let Err(e) = atomic_write(&moved_note, relinked.as_bytes())
        {
            problems.push(format!("could not relink {}: {e}", moved_note.display()));
        }
    }
    let moved_result = dir.join(format!("{kept}.json"));
    if let Ok(text) = std::fs::read_to_string(&moved_result)
        && let Ok(mut value) = serde_json::from_str::<Value>(&text)
        && let Some(map) = value.as_object_mut()
        && map.contains_key("artifacts")
    {
        map.insert(
            "artifacts".into(),
            Value::String(dir.join(&kept).display().to_string()),
        );
        if let Ok(mut text) = serde_json::to_string_pretty(&value) {
            text.push('\n');
            if let Err(e) = atomic_write(&moved_result, text.as_bytes()) {
                problems.push(format!("could not update {}: {e}", moved_result.display()));
            }
        }
    }
    problems
}

/// What one recorded command left: the stream files and their sizes, for the note.
#[derive(Debug, Clone, Default)]
pub(crate) struct StreamFile {
    /// Relative to the note's directory (`task-<id>/runs/run-1/stdout.txt`).
    pub link: String,
    /// The stream's full size.
    pub bytes: u64,
    /// Bytes left out of the file (its middle), when it was over the bound.
    pub dropped: u64,
}

impl StreamFile {
    pub(crate) fn to_json(&self) -> Value {
        json!({"link": self.link, "bytes": self.bytes, "dropped": self.dropped})
    }
}

/// What the writer thread is asked to do.
enum Job {
    /// Write these bytes at this path, atomically.
    Write(PathBuf, Vec<u8>),
    /// Answer once every earlier job is done.
    #[cfg(test)]
    Flush(Sender<()>),
}

/// The writer thread, started on the first write.
#[derive(Debug, Default)]
struct Writer {
    jobs: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

/// The record directory of one task run. Writing never fails the task: a file that
/// cannot be written is a warning in the note.
#[derive(Debug)]
pub(crate) struct Artifacts {
    /// `<repo>/.agent-runner`.
    base: PathBuf,
    /// `task-<id>`: the directory's name, and the prefix of the note's links.
    name: String,
    trace_id: String,
    planner_calls: u32,
    tests: u32,
    /// `(name, value)` of every value that must not be written.
    secrets: Vec<(String, String)>,
    /// Files that could not be written (by the writer thread too).
    problems: Arc<Mutex<Vec<String>>>,
    writer: Writer,
}

impl Drop for Artifacts {
    /// Waits until every file of the record is written.
    fn drop(&mut self) {
        self.writer.jobs = None;
        if let Some(thread) = self.writer.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Artifacts {
    /// The record of a run of `task_id` in `repo` (created on the first write).
    pub(crate) fn new(repo: &Path, task_id: &str, trace_id: &str) -> Artifacts {
        Artifacts {
            base: repo.join(RECORD_DIR),
            name: stem(task_id),
            trace_id: trace_id.to_string(),
            planner_calls: 0,
            tests: 0,
            secrets: Vec::new(),
            problems: Arc::default(),
            writer: Writer::default(),
        }
    }

    /// The directory, on the host.
    pub(crate) fn dir(&self) -> PathBuf {
        self.base.join(&self.name)
    }

    /// The directory relative to the note (`task-<id>`).
    pub(crate) fn link(&self) -> &str {
        &self.name
    }

    /// Files that could not be written so far, for the note's warnings.
    pub(crate) fn problems(&self) -> Vec<String> {
        self.problems.lock().map(|p| p.clone()).unwrap_or_default()
    }

    fn problem(&self, problem: String) {
        tracing::warn!("{problem}");
        if let Ok(mut problems) = self.problems.lock() {
            problems.push(problem);
        }
    }

    /// Waits until every file asked for so far is written (or has failed).
    #[cfg(test)]
    pub(crate) fn flush(&self) {
        if let Some(jobs) = &self.writer.jobs {
            let (done, wait) = mpsc::channel();
            if jobs.send(Job::Flush(done)).is_ok() {
                let _ = wait.recv();
            }
        }
    }

    /// Never writes `value` (the variable `name`'s): it is redacted wherever it appears.
    pub(crate) fn keep_secret(&mut self, name: &str, value: &str) {
        if value.chars().count() < MIN_SECRET_CHARS {
            return;
        }
        // As written, and as JSON writes it inside a string (the result, the records).
        let escaped = serde_json::to_string(value)
            .map(|s| s[1..s.len() - 1].to_string())
            .unwrap_or_default();
        for form in [value.to_string(), escaped] {
            if !form.is_empty() && !self.secrets.iter().any(|(_, v)| *v == form) {
                self.secrets.push((name.to_string(), form));
            }
        }
    }

    /// `text` with every kept secret replaced by `[redacted: NAME]`.
    pub(crate) fn redact(&self, text: &str) -> String {
        let mut text = text.to_string();
        for (name, value) in &self.secrets {
            if text.contains(value.as_str()) {
                text = text.replace(value.as_str(), &format!("[redacted: {name}]"));
            }
        }
        text
    }

    fn redact_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        if self.secrets.is_empty() {
            return bytes.to_vec();
        }
        // Text (nearly always) is searched as text, which is fast; other bytes byte by byte.
        if let Ok(text) = std::str::from_utf8(bytes) {
            return self.redact(text).into_bytes();
        }
        let mut bytes = bytes.to_vec();
        for (name, value) in &self.secrets {
            let needle = value.as_bytes();
            if bytes.windows(needle.len()).any(|w| w == needle) {
                let with = format!("[redacted: {name}]").into_bytes();
                let mut out = Vec::with_capacity(bytes.len());
                let mut i = 0;
                while i < bytes.len() {
                    if bytes[i..].starts_with(needle) {
                        out.extend_from_slice(&with);
                        i += needle.len();
                    } else {
                        out.push(bytes[i]);
                        i += 1;
                    }
                }
                bytes = out;
            }
        }
        bytes
    }

    /// Has `bytes` (redacted) written at `relative` under the directory; returns the
    /// link to it from the note, or `None` when it cannot be written at all.
    fn write(&mut self, relative: &str, bytes: &[u8]) -> Option<String> {
        let path = self.dir().join(relative);
        let bytes = self.redact_bytes(bytes);
        if self.writer.jobs.is_none() {
            self.start_writer();
        }
        let sent = match &self.writer.jobs {
            Some(jobs) => jobs.send(Job::Write(path.clone(), bytes)).is_ok(),
            None => false,
        };
        if sent {
            Some(format!("{}/{relative}", self.name))
        } else {
            self.problem(format!(
                "the run record {} was not written: its writer is gone",
                path.display()
            ));
            None
        }
    }

    fn start_writer(&mut self) {
        // The record is no change of the worker's: git ignores the whole directory, so a
        // run's snapshots never count its files (nor their temp files). Written here, on
        // the flow's thread, before any record file and so before any snapshot sees one.
        let ignore = self.dir().join(".gitignore");
        if let Err(e) = check_dirs(&self.base, &ignore).and_then(|()| {
            atomic_write(
                &ignore,
                b"# agent-runner's run record, not part of the work: ignore all of it\n*\n",
            )
        }) {
            self.problem(format!(
                "the run record {} was not written: {e}",
                ignore.display()
            ));
        }
        let (jobs, queue) = mpsc::channel();
        let base = self.base.clone();
        let problems = Arc::clone(&self.problems);
        // Its log lines belong to the run (the trace id).
        let span = tracing::Span::current();
        let spawned = std::thread::Builder::new()
            .name("agent-runner-record".into())
            .spawn(move || {
                let _entered = span.enter();
                write_jobs(&base, &queue, &problems);
            });
        match spawned {
            Ok(thread) => {
                self.writer = Writer {
                    jobs: Some(jobs),
                    thread: Some(thread),
                }
            }
            Err(e) => self.problem(format!("the run record's writer did not start: {e}")),
        }
    }

    fn write_json(&mut self, relative: &str, value: &Value) -> Option<String> {
        match serde_json::to_string_pretty(value) {
            Ok(mut text) => {
                text.push('\n');
                self.write(relative, text.as_bytes())
            }
            Err(e) => {
                self.problem(format!(
                    "the run record {relative} could not be encoded: {e}"
                ));
                None
            }
        }
    }

    /// One planner exchange (one attempt of a call): `planner/NNN-PROTOCOL.json`.
    pub(crate) fn planner_exchange(&mut self, exchange: &Exchange) -> Option<String> {
        self.planner_calls += 1;
        let relative = format!(
            "planner/{:03}-{}.json",
            self.planner_calls,
            exchange.protocol.name()
        );
        // Only what was said: the provider's request headers (its key) are never here.
        let messages: Vec<Value> = exchange
            .messages
            .iter()
            .map(|m| json!({"role": m.role, "content": self.redact(&m.content)}))
            .collect();
        let value = json!({
            "trace_id": self.trace_id,
            "protocol": exchange.protocol.name(),
            "attempt": exchange.attempt,
            "provider": exchange.provider,
            "duration_ms": exchange.duration_ms,
            "system": self.redact(&exchange.system),
            "messages": messages,
            "reply": exchange.reply.as_deref().map(|r| self.redact(r)),
            "error": exchange.error.as_deref().map(|e| self.redact(e)),
        });
        self.write_json(&relative, &value)
    }

    /// A worker run: its prompt, full output and how it was run (`runs/RUN/`), with the
    /// `runner.tooling` candidate it used, if any. `env` is recorded by name only.
    /// Returns the note's links.
    pub(crate) fn worker_run(
        &mut self,
        run_id: &str,
        prompt: &str,
        exec: Option<&Exec>,
        candidate: Option<&str>,
    ) -> Value {
        let prompt_link = self.write(&format!("runs/{run_id}/prompt.md"), prompt.as_bytes());
        let mut links = json!({"prompt": prompt_link});
        if let Some(exec) = exec {
            let meta = json!({
                "trace_id": self.trace_id,
                "run": run_id,
                "candidate": candidate,
                "argv": exec.argv.iter().map(|a| self.redact(a)).collect::<Vec<_>>(),
                "env_names": exec.env_names,
                "exit_code": exec.output.as_ref().map(|o| o.ending.code()),
                "error": exec.error,
                "stdout_bytes": exec.output.as_ref().map(|o| o.stdout.total_bytes()),
                "stderr_bytes": exec.output.as_ref().map(|o| o.stderr.total_bytes()),
            });
            links["run"] = json!(self.write_json(&format!("runs/{run_id}/run.json"), &meta));
            if let Some(output) = &exec.output {
                for (name, stream) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
                    if let Some(file) = self.stream(&format!("runs/{run_id}/{name}.txt"), stream) {
                        links[name] = file.to_json();
                    }
                }
            }
        }
        links
    }

    /// A test command's output (stdout and stderr as it interleaved them):
    /// `tests/NNN.txt`.
    pub(crate) fn test_output(&mut self, output: Option<&Output>) -> Option<StreamFile> {
        self.tests += 1;
        let output = output?;
        let relative = format!("tests/{:03}.txt", self.tests);
        let mut file = self.stream(&relative, &output.stdout)?;
        // The test wrapper sends stderr to stdout; anything still on stderr (the
        // sandbox's own complaint) follows it.
        if !output.stderr.is_empty() {
            let mut bytes = output.stdout.kept_bytes();
            bytes.extend_from_slice(b"\n[agent-runner: standard error follows]\n");
            bytes.extend_from_slice(&output.stderr.kept_bytes());
            file.link = self.write(&relative, &bytes)?;
            file.bytes += output.stderr.total_bytes();
            file.dropped += output.stderr.dropped_bytes();
        }
        Some(file)
    }

    fn stream(&mut self, relative: &str, stream: &Captured) -> Option<StreamFile> {
        let link = self.write(relative, &stream.kept_bytes())?;
        Some(StreamFile {
            link,
            bytes: stream.total_bytes(),
            dropped: stream.dropped_bytes(),
        })
    }
}

/// The writer thread: each file in order, atomically; a failure is a problem of the
/// record, never of the task.
/// Writes the queued files in order. Each file is written in full, fsynced and renamed
/// into place; the directories are fsynced once per batch (what was queued when the
/// writer woke up) rather than once per file: a run step queues several files into one
/// directory, and the directory fsyncs were half the record's cost.
fn write_jobs(base: &Path, queue: &Receiver<Job>, problems: &Mutex<Vec<String>>) {
    let mut unsynced: BTreeSet<PathBuf> = BTreeSet::new();
    while let Ok(first) = queue.recv() {
        for job in std::iter::once(first).chain(std::iter::from_fn(|| queue.try_recv().ok())) {
            match job {
                Job::Write(path, bytes) => {
                    match check_dirs(base, &path).and_then(|()| write_and_rename(&path, &bytes)) {
                        Ok(()) => {
                            tracing::debug!(file = %path.display(), bytes = bytes.len(), "recorded");
                            if let Some(dir) = path.parent() {
                                unsynced.insert(dir.to_path_buf());
                            }
                        }
                        Err(e) => {
                            let problem =
                                format!("the run record {} was not written: {e}", path.display());
                            tracing::warn!("{problem}");
                            if let Ok(mut problems) = problems.lock() {
                                problems.push(problem);
                            }
                        }
                    }
                }
                #[cfg(test)]
                Job::Flush(done) => {
                    std::mem::take(&mut unsynced)
                        .iter()
                        .for_each(|d| sync_dir(d));
                    let _ = done.send(());
                }
            }
        }
        std::mem::take(&mut unsynced)
            .iter()
            .for_each(|d| sync_dir(d));
    }
}

/// Refuses to write through a symbolic link: the worker can change the repository, and a
/// planted `.agent-runner/task-<id>` link would otherwise send the record (and the
/// runner's writes) anywhere on the host.
fn check_dirs(base: &Path, file: &Path) -> std::io::Result<()> {
    let Some(parent) = file.parent() else {
        return Ok(());
    };
    let Ok(below) = parent.strip_prefix(base) else {
        return Ok(());
    };
    let check = |dir: &Path| match std::fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() || !m.is_dir() => Err(std::io::Error::other(format!(
            "{} is not a real directory; the runner writes its records only into one",
            dir.display()
        ))),
        _ => Ok(()),
    };
    let mut dir = base.to_path_buf();
    check(&dir)?;
    for part in below.components() {
        dir.push(part);
        check(&dir)?;
    }
    Ok(())
}

/// One command as the sandbox ran it, for the record.
#[derive(Debug, Clone)]
pub(crate) struct Exec {
    pub argv: Vec<String>,
    /// The names of the variables given to it; never their values.
    pub env_names: Vec<String>,
    pub output: Option<Output>,
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A temporary directory removed when the test ends, pass or fail.
    struct TempDir(PathBuf);

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn temp(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "code-intel-artifacts-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    #[test]
    fn trace_ids_are_sixteen_hex_digits_and_differ() {
        let a = new_trace_id();
        let b = new_trace_id();
        assert_eq!(a.len(), 16);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()), "{a}");
        assert_ne!(a, b);
    }

    #[test]
    fn a_rerun_moves_the_earlier_note_result_and_directory_together() {
        let dir = temp("rotate");
        let base = dir.0.join(RECORD_DIR);
        std::fs::create_dir_all(base.join("task-T/runs/run-1")).unwrap();
        std::fs::write(base.join("task-T/runs/run-1/stdout.txt"), "first").unwrap();
        std::fs::write(
            base.join("task-T.md"),
            "[stdout](task-T/runs/run-1/stdout.txt)\n",
        )
        .unwrap();
        let result_path = base.join("task-T").display().to_string();
        std::fs::write(
            base.join("task-T.json"),
            json!({"artifacts": result_path}).to_string(),
        )
        .unwrap();
        // `-2` is taken by a directory alone: the next run goes to `-3`.
        std::fs::create_dir_all(base.join("task-T-2")).unwrap();
        assert!(rotate_earlier(&dir.0, "T").is_empty());
        assert!(!base.join("task-T").exists());
        assert!(!base.join("task-T.md").exists());
        assert_eq!(
            std::fs::read_to_string(base.join("task-T-3/runs/run-1/stdout.txt")).unwrap(),
            "first"
        );
        assert_eq!(
            std::fs::read_to_string(base.join("task-T-3.md")).unwrap(),
            "[stdout](task-T-3/runs/run-1/stdout.txt)\n"
        );
        let result: Value =
            serde_json::from_str(&std::fs::read_to_string(base.join("task-T-3.json")).unwrap())
                .unwrap();
        assert!(
            result["artifacts"].as_str().unwrap().ends_with("task-T-3"),
            "{result}"
        );
        // Nothing earlier: nothing moves.
        assert!(rotate_earlier(&dir.0, "U").is_empty());
        assert!(!base.join("task-U-2").exists());
    }

    #[test]
    fn secrets_are_redacted_and_symlinks_refused() {
        let dir = temp("secrets");
        let mut artifacts = Artifacts::new(&dir.0, "T", "0123456789abcdef");
        artifacts.keep_secret("OPENAI_API_KEY", "sk-very-secret-value");
        artifacts.keep_secret("IS_SANDBOX", "1");
        let link = artifacts
            .write("runs/run-1/stdout.txt", b"key=sk-very-secret-value 1\n")
            .unwrap();
        assert_eq!(link, "task-T/runs/run-1/stdout.txt");
        artifacts.flush();
        assert_eq!(
            std::fs::read_to_string(dir.0.join(".agent-runner/task-T/runs/run-1/stdout.txt"))
                .unwrap(),
            "key=[redacted: OPENAI_API_KEY] 1\n"
        );
        // A planted link where the record goes is refused, not followed.
        let elsewhere = dir.0.join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::remove_dir_all(dir.0.join(".agent-runner/task-T/runs")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.0.join(".agent-runner/task-T/runs")).unwrap();
        artifacts.write("runs/run-2/stdout.txt", b"x");
        artifacts.flush();
        assert!(!elsewhere.join("run-2").exists());
        assert_eq!(artifacts.problems().len(), 1, "{:?}", artifacts.problems());
    }
}
