//! Running a child process the way every AgentRunner action needs it: stdin fed from
//! memory, stdout and stderr captured within a bound, a deadline and a cancel token that
//! stop the child's whole process group (TERM, a grace period, then KILL), so nothing is
//! left running when a worker times out (the original abandoned it, AR-B10) or the task is
//! cancelled.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::cancel::Cancel;
use crate::environment::Environment;

/// Bytes kept from the start of a stream. With the tail, a stream up to 8 MiB is kept
/// whole (the run record's `stdout.txt`), a longer one cut in the middle.
const HEAD_BYTES: usize = 4 * 1024 * 1024;
/// Bytes kept from the end of a stream (where a CLI agent prints its final answer).
const TAIL_BYTES: usize = 4 * 1024 * 1024;
/// How long readers may go on after the child ended (a grandchild holding the pipe).
const DRAIN_WAIT: Duration = Duration::from_secs(2);
/// Polling starts fast, so a quick child costs little latency, and backs off.
const FIRST_POLL: Duration = Duration::from_micros(200);
const MAX_POLL: Duration = Duration::from_millis(20);

/// What to run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Spec {
    pub program: String,
    pub args: Vec<String>,
    /// The environment the child starts from: `None` inherits this process's, `Some`
    /// gives it exactly that one (the docker CLI's, which its caller chose).
    pub base_env: Option<Environment>,
    /// Added to the base environment.
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
    /// Written to the child's stdin, which is then closed; `None` gives it no stdin.
    pub stdin: Option<Vec<u8>>,
    /// Wall-clock limit; `None` waits as long as it takes (or until cancelled).
    pub timeout: Option<Duration>,
    /// Between TERM and KILL when the child must be stopped.
    pub grace: Duration,
}

impl Spec {
    pub(crate) fn new(
        program: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Spec {
        Spec {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            grace: Duration::from_secs(5),
            ..Spec::default()
        }
    }

    /// The command line as a user would type it, for logs and errors.
    pub(crate) fn display(&self) -> String {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|a| {
                if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$`\\".contains(c))
                {
                    format!("'{}'", a.replace('\'', r"'\''"))
                } else {
                    a.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// How the child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Exited(i32),
    /// Killed by a signal it did not get from us.
    Signalled(i32),
    /// Stopped by us at its deadline.
    TimedOut,
    /// Stopped by us because the task was cancelled.
    Cancelled,
}

impl Ending {
    pub fn success(self) -> bool {
        self == Ending::Exited(0)
    }

    /// The exit code a shell would report: the code, 128 + the signal, 124 for a timeout
    /// (as `timeout(1)`), 130 for a cancel (as Ctrl-C).
    pub fn code(self) -> i32 {
        match self {
            Ending::Exited(code) => code,
            Ending::Signalled(signal) => 128 + signal,
            Ending::TimedOut => 124,
            Ending::Cancelled => 130,
        }
    }
}

/// A captured stream: its start and its end, with what was dropped between them counted.
#[derive(Debug, Clone, Default)]
pub struct Captured {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    dropped: u64,
}

impl Captured {
    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        if self.head.len() < HEAD_BYTES {
            let room = (HEAD_BYTES - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..room]);
            bytes = &bytes[room..];
        }
        self.tail.extend(bytes);
        let over = self.tail.len().saturating_sub(TAIL_BYTES);
        if over > 0 {
            self.tail.drain(..over);
            self.dropped += over as u64;
        }
    }

    /// Everything kept, as text (invalid UTF-8 replaced), with a marker where bytes were
    /// dropped.
    pub fn text(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            text.push_str(&format!("\n[... {} bytes not kept ...]\n", self.dropped));
        }
        let (a, b) = self.tail.as_slices();
        let mut tail = Vec::with_capacity(a.len() + b.len());
        tail.extend_from_slice(a);
        tail.extend_from_slice(b);
        text.push_str(&String::from_utf8_lossy(&tail));
        text
    }

    /// The last `chars` characters of the stream.
    pub fn tail_text(&self, chars: usize) -> String {
        let text = self.text();
        let count = text.chars().count();
        text.chars().skip(count.saturating_sub(chars)).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.head.is_empty() && self.tail.is_empty()
    }

    /// The stream's whole length, kept or not.
    pub fn total_bytes(&self) -> u64 {
        (self.head.len() + self.tail.len()) as u64 + self.dropped
    }

    /// Bytes dropped from the middle of the stream (0 when it was kept whole).
    pub fn dropped_bytes(&self) -> u64 {
        self.dropped
    }

    /// Everything kept, byte for byte, with one marker line where the middle was dropped
    /// that says how much and how long the stream was.
    pub fn kept_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.head.len() + self.tail.len() + 128);
        bytes.extend_from_slice(&self.head);
        if self.dropped > 0 {
            bytes.extend_from_slice(
                format!(
                    "\n[agent-runner: {} bytes not kept; the stream was {} bytes, of which the first {HEAD_BYTES} and the last {TAIL_BYTES} are kept]\n",
                    self.dropped,
                    self.total_bytes()
                )
                .as_bytes(),
            );
        }
        let (a, b) = self.tail.as_slices();
        bytes.extend_from_slice(a);
        bytes.extend_from_slice(b);
        bytes
    }
}

/// What a finished child left.
#[derive(Debug, Clone)]
pub struct Output {
    pub ending: Ending,
    pub stdout: Captured,
    pub stderr: Captured,
    pub duration: Duration,
}

/// The child could not be started.
#[derive(Debug)]
pub struct SpawnError {
    pub program: String,
    pub source: std::io::Error,
    /// For a program given as a path (it has a `/`): the file it names, against the
    /// child's working directory when relative. A bare name is looked up on `PATH`.
    pub path: Option<PathBuf>,
}

impl std::fmt::Display for SpawnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let program = &self.program;
        match (self.source.kind(), &self.path) {
            // ENOENT for a file that exists: the kernel could not find its interpreter.
            (std::io::ErrorKind::NotFound, Some(path)) if path.is_file() => write!(
                f,
                "could not run `{program}`: the interpreter on its `#!` line does not exist"
            ),
            (std::io::ErrorKind::NotFound, _) => {
                write!(
                    f,
                    "could not run `{program}`: {}",
                    not_found(program, self.path.as_deref())
                )
            }
            (std::io::ErrorKind::PermissionDenied, _) => write!(
                f,
                "could not run `{program}`: permission denied (is it executable? `chmod +x`)"
            ),
            _ => write!(f, "could not run `{program}`: {}", self.source),
        }
    }
}

/// Why `program` was not found, in words that fit how it was given: a path (it has a
/// `/`) names a file that is missing, a bare name was looked up on `PATH`. `path` is the
/// file a path names, when known (the relative path resolved).
pub(crate) fn not_found(program: &str, path: Option<&Path>) -> String {
    if program.contains('/') {
        match path {
            Some(path) if path != Path::new(program) => {
                format!("there is no file `{program}` ({})", path.display())
            }
            _ => format!("there is no file `{program}`"),
        }
    } else {
        format!("`{program}` was not found on PATH")
    }
}

impl std::error::Error for SpawnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Runs `spec` to its end, its deadline or the cancel, whichever comes first.
pub(crate) fn run(spec: &Spec, cancel: &Cancel) -> Result<Output, SpawnError> {
    let started = Instant::now();
    let mut command = Command::new(&spec.program);
    if let Some(base) = &spec.base_env {
        command.env_clear().envs(base.vars());
    }
    command
        .args(&spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so stopping it stops what it started too.
        .process_group(0);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    let spawn_error = |source| SpawnError {
        program: spec.program.clone(),
        source,
        path: spec.program.contains('/').then(|| match &spec.cwd {
            Some(cwd) => cwd.join(&spec.program),
            None => PathBuf::from(&spec.program),
        }),
    };
    let mut child = command.spawn().map_err(spawn_error)?;

    if let (Some(bytes), Some(mut stdin)) = (spec.stdin.clone(), child.stdin.take()) {
        // A child that never reads (or exits early) must not block us: write from a thread
        // and ignore a broken pipe.
        std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        });
    }
    let (sender, receiver) = mpsc::channel();
    for (index, stream) in [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .enumerate()
    {
        let Some(mut stream) = stream else { continue };
        let sender = sender.clone();
        std::thread::spawn(move || {
            let mut captured = Captured::default();
            let mut buffer = [0u8; 64 * 1024];
            loop {
                match stream.read(&mut buffer) {
                    Ok(0) => break,
                    Ok(n) => captured.push(&buffer[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = sender.send((index, captured));
        });
    }
    drop(sender);

    let group = Pid::from_raw(child.id() as i32);
    // Until it ends, an exit that cannot wait (a second signal) kills the group too.
    let _tracked = super::cleanup::track_group(child.id() as i32);
    let deadline = spec.timeout.map(|t| started + t);
    let mut poll = FIRST_POLL;
    let mut stopped_by_us = None;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(_) => break None,
        }
        if let Some(reason) = stop_reason(cancel, deadline) {
            stopped_by_us = Some(reason);
            break stop(&mut child, group, spec.grace);
        }
        std::thread::sleep(poll);
        poll = (poll * 2).min(MAX_POLL);
    };
    // The group may still hold processes that outlived the leader; they go too.
    let _ = killpg(group, Signal::SIGKILL);

    let mut stdout = Captured::default();
    let mut stderr = Captured::default();
    let drain_deadline = Instant::now() + DRAIN_WAIT;
    for _ in 0..2 {
        let left = drain_deadline.saturating_duration_since(Instant::now());
        match receiver.recv_timeout(left) {
            Ok((0, captured)) => stdout = captured,
            Ok((_, captured)) => stderr = captured,
            Err(_) => break,
        }
    }
    let ending = match (stopped_by_us, status) {
        (Some(reason), _) => reason,
        (None, Some(status)) => match (status.code(), status.signal()) {
            (Some(code), _) => Ending::Exited(code),
            (None, Some(signal)) => Ending::Signalled(signal),
            (None, None) => Ending::Exited(-1),
        },
        (None, None) => Ending::Exited(-1),
    };
    Ok(Output {
        ending,
        stdout,
        stderr,
        duration: started.elapsed(),
    })
}

/// The first executable file named `program` in the `PATH` directories.
pub(crate) fn find_on_path(program: &str, path: Option<&str>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return executable(&p).then_some(p);
    }
    std::env::split_paths(path?)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(program))
        .find(|p| executable(p))
}

/// Why a command still running must be stopped now, if it must: the task was cancelled,
/// or its deadline passed.
pub(crate) fn stop_reason(cancel: &Cancel, deadline: Option<Instant>) -> Option<Ending> {
    if cancel.is_cancelled() {
        Some(Ending::Cancelled)
    } else if deadline.is_some_and(|d| Instant::now() >= d) {
        Some(Ending::TimedOut)
    } else {
        None
    }
}

/// TERM to the group, up to `grace` for it to go, then KILL.
fn stop(
    child: &mut std::process::Child,
    group: Pid,
    grace: Duration,
) -> Option<std::process::ExitStatus> {
    let _ = killpg(group, Signal::SIGTERM);
    let until = Instant::now() + grace;
    while Instant::now() < until {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = killpg(group, Signal::SIGKILL);
    child.wait().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A temporary directory removed when the test ends, pass or fail.
    struct TempDir(std::path::PathBuf);

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn sh(script: &str) -> Spec {
        Spec::new("sh", ["-c", script])
    }

    #[test]
    fn a_missing_program_is_named_as_a_missing_file_or_a_name_not_on_path() {
        let dir = std::env::temp_dir().join(format!("code-intel-spawn-{}", std::process::id()));
        let _dir = TempDir(dir.clone());
        std::fs::create_dir_all(&dir).unwrap();

        let mut spec = Spec::new("./agents/fix.sh", Vec::<String>::new());
        spec.cwd = Some(dir.clone());
        let e = run(&spec, &Cancel::new()).unwrap_err().to_string();
        let expected = format!(
            "could not run `./agents/fix.sh`: there is no file `./agents/fix.sh` ({})",
            dir.join("./agents/fix.sh").display()
        );
        assert_eq!(e, expected);
        assert!(!e.contains("PATH"), "{e}");

        let spec = Spec::new("code-intel-no-such-program", Vec::<String>::new());
        let e = run(&spec, &Cancel::new()).unwrap_err().to_string();
        assert_eq!(
            e,
            "could not run `code-intel-no-such-program`: `code-intel-no-such-program` was not found on PATH"
        );

        // A file that is there but cannot be run: not executable, or its interpreter missing.
        let plain = dir.join("plain.sh");
        std::fs::write(&plain, "#!/bin/sh\n").unwrap();
        let spec = Spec::new(plain.display().to_string(), Vec::<String>::new());
        let e = run(&spec, &Cancel::new()).unwrap_err().to_string();
        assert!(
            e.ends_with("permission denied (is it executable? `chmod +x`)"),
            "{e}"
        );
        let orphan = dir.join("orphan.sh");
        std::fs::write(&orphan, "#!/no/such/interpreter\n").unwrap();
        std::fs::set_permissions(&orphan, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let spec = Spec::new(orphan.display().to_string(), Vec::<String>::new());
        let e = run(&spec, &Cancel::new()).unwrap_err().to_string();
        assert!(
            e.ends_with("the interpreter on its `#!` line does not exist"),
            "{e}"
        );
    }

    #[test]
    fn captures_output_exit_code_and_stdin() {
        let mut spec = sh("cat; echo err >&2; exit 3");
        spec.stdin = Some(b"hello".to_vec());
        let out = run(&spec, &Cancel::new()).unwrap();
        assert_eq!(out.ending, Ending::Exited(3));
        assert_eq!(out.stdout.text(), "hello");
        assert_eq!(out.stderr.text(), "err\n");
    }

    #[test]
    fn a_timeout_stops_the_whole_group() {
        let dir = std::env::temp_dir().join(format!("code-intel-process-{}", std::process::id()));
        let _dir = TempDir(dir.clone());
        std::fs::create_dir_all(&dir).unwrap();
        let marker = dir.join("survived");
        let _ = std::fs::remove_file(&marker);
        // The grandchild would write the marker a second later if it outlived the stop.
        let mut spec = sh(&format!("(sleep 1; touch {}) & sleep 30", marker.display()));
        spec.timeout = Some(Duration::from_millis(100));
        spec.grace = Duration::from_millis(100);
        let started = Instant::now();
        let out = run(&spec, &Cancel::new()).unwrap();
        assert_eq!(out.ending, Ending::TimedOut);
        assert_eq!(out.ending.code(), 124);
        assert!(started.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(1500));
        assert!(!marker.exists(), "a grandchild outlived the timeout");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_child_that_ignores_term_is_killed_after_the_grace() {
        let mut spec = sh("trap '' TERM; sleep 30");
        spec.timeout = Some(Duration::from_millis(50));
        spec.grace = Duration::from_millis(100);
        let started = Instant::now();
        let out = run(&spec, &Cancel::new()).unwrap();
        assert_eq!(out.ending, Ending::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_cancel_stops_the_child() {
        let cancel = Cancel::new();
        let trigger = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            trigger.cancel();
        });
        let out = run(&sh("sleep 30"), &cancel).unwrap();
        assert_eq!(out.ending, Ending::Cancelled);
        assert_eq!(out.ending.code(), 130);
    }

    #[test]
    fn a_missing_program_is_a_spawn_error_naming_it() {
        let err = run(&Spec::new("no-such-program-here", [""; 0]), &Cancel::new()).unwrap_err();
        assert!(err.to_string().contains("no-such-program-here"), "{err}");
    }

    #[test]
    fn a_long_stream_keeps_its_head_and_tail() {
        let mut captured = Captured::default();
        captured.push(b"start");
        captured.push(&vec![b'x'; HEAD_BYTES + TAIL_BYTES]);
        captured.push(b"end");
        let text = captured.text();
        assert!(text.starts_with("start"));
        assert!(text.ends_with("end"));
        assert!(text.contains("bytes not kept"));
        assert_eq!(captured.tail_text(3), "end");
        // The record keeps 8 MiB and says how long the stream was.
        let total = (5 + HEAD_BYTES + TAIL_BYTES + 3) as u64;
        assert_eq!(captured.total_bytes(), total);
        assert_eq!(captured.dropped_bytes(), 8);
        let kept = String::from_utf8(captured.kept_bytes()).unwrap();
        assert!(kept.contains(&format!("8 bytes not kept; the stream was {total} bytes")));
        assert!(kept.ends_with("end"));
    }

    #[test]
    fn a_stream_up_to_eight_mib_is_kept_whole() {
        let mut captured = Captured::default();
        let bytes: Vec<u8> = (0..HEAD_BYTES + TAIL_BYTES)
            .map(|i| (i % 251) as u8)
            .collect();
        for chunk in bytes.chunks(64 * 1024) {
            captured.push(chunk);
        }
        assert_eq!(captured.dropped_bytes(), 0);
        assert_eq!(captured.kept_bytes(), bytes);
    }

    #[test]
    fn display_quotes_what_a_shell_would_split() {
        let spec = Spec::new("codex", ["exec", "fix the bug", "it's"]);
        assert_eq!(spec.display(), r"codex exec 'fix the bug' 'it'\''s'");
    }
}
