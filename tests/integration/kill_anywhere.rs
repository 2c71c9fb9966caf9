//! A kill at any moment leaves a session that resumes: the real `code-intel serve` runs
//! whole default sessions, and during every phase's `submit_phase` it is killed with
//! SIGKILL at a random moment, restarted, and the session resumed with `--resume`. The
//! session must then go on from where it stands (the phase it was in, or the next one if
//! the submission was saved before the kill) and complete, merged into `main`, every time.
//!
//! The client is a minimal MCP client over stdio written here (newline-delimited
//! JSON-RPC), so the kill follows the request by a measured delay: the request is written
//! and flushed, the thread sleeps, the process is killed. The delays are drawn uniformly
//! from 0 to 1.2 times the submission's duration, measured per phase by an unkilled
//! calibration session first. Sessions alternate between the default flow with a quality
//! review (`git.prepare_commit` then `git.commit_prepared`) and one without
//! (`git.commit`), and half of them merge into a `main` the user committed on meanwhile
//! (a merge commit, checked out by the merge). The seed is printed; `CODE_INTEL_KILL_SEED`
//! replays one, `CODE_INTEL_KILL_SESSIONS` sets how many sessions run (each kills once
//! per phase) and `CODE_INTEL_KILL_PHASES` (`MERGE,READY_PLAN`) the phases killed in.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{TempDir, binary};

/// Sessions run by default: each kills the server once in each of its 12 or 13 phases.
const SESSIONS: usize = 20;
/// How long one answer may take before the test gives up on the server.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);
const QUERY: &str = "add a --json flag to the export command";
const APP: &str = "def parse_config(path):\n    return open(path).read()\n\n\ndef main():\n    print(parse_config(\"x\"))\n";
const APP_DONE: &str = "import sys\n\n\ndef parse_config(path):\n    return open(path).read()\n\n\ndef main():\n    if \"--json\" in sys.argv:\n        print('{\"config\": %r}' % parse_config(\"x\"))\n        return\n    print(parse_config(\"x\"))\n";
const COMMIT_MESSAGE: &str = "Add --json";

/// splitmix64: small, deterministic for a seed, good enough to spread delays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A duration uniform in `[0, max]`, in microseconds.
    fn delay(&mut self, max: Duration) -> Duration {
        let micros = max.as_micros().max(1) as u64;
        Duration::from_micros(self.next() % (micros + 1))
    }
}

/// One `code-intel serve` process and the client's end of its stdio.
struct Server {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    next_id: u64,
}

/// A tool's answer: `isError` and the structured body.
struct Answer {
    is_error: bool,
    body: Value,
}

impl Answer {
    fn state(&self) -> &str {
        self.body["state"].as_str().unwrap_or_default()
    }

    fn describe(&self) -> String {
        let text = self.body.to_string();
        let end = text.char_indices().nth(1500).map_or(text.len(), |(i, _)| i);
        format!("is_error {}: {}", self.is_error, &text[..end])
    }
}

impl Server {
    /// Starts the server on `root` and completes the MCP handshake. Its stderr is
    /// appended to `log`, to be shown when the test fails.
    fn start(root: &Path, state_dir: &Path, log: &Path) -> Result<Server, String> {
        let stderr = File::options()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let mut child = crate::support::code_intel()
            .arg("serve")
            .arg("--root")
            .arg(root)
            .env("CODE_INTEL_STATE_DIR", state_dir)
            .env("CODE_INTEL_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("spawn {}: {e}", binary().display()))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (send, lines) = channel();
        // A reader thread, so a server that stops answering fails the test with a timeout
        // instead of hanging it. It ends at EOF, when the server exits or is killed.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let mut server = Server {
            child,
            stdin,
            lines,
            next_id: 0,
        };
        let id = server.send(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "kill_anywhere", "version": "1"},
            }),
        )?;
        server.answer(id)?;
        server.write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(server)
    }

    fn write(&mut self, message: &Value) -> Result<(), String> {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("writing to the server: {e}"))
    }

    /// Writes a request and returns its id without waiting for the answer.
    fn send(&mut self, method: &str, params: Value) -> Result<u64, String> {
        self.next_id += 1;
        let id = self.next_id;
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        Ok(id)
    }

    /// The result of request `id`, skipping notifications.
    fn answer(&mut self, id: u64) -> Result<Value, String> {
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .map_err(|e| format!("no answer to request {id}: {e}"))?;
            let message: Value =
                serde_json::from_str(&line).map_err(|e| format!("not JSON ({e}): {line}"))?;
            if message["id"] != json!(id) {
                continue;
            }
            if let Some(error) = message.get("error") {
                return Err(format!("JSON-RPC error: {error}"));
            }
            return Ok(message["result"].clone());
        }
    }

    fn send_call(&mut self, tool: &str, args: Value) -> Result<u64, String> {
        self.send("tools/call", json!({"name": tool, "arguments": args}))
    }

    fn call(&mut self, tool: &str, args: Value) -> Result<Answer, String> {
        let id = self.send_call(tool, args)?;
        let result = self.answer(id)?;
        let body = match result.get("structuredContent") {
            Some(body) if !body.is_null() => body.clone(),
            _ => {
                let text = result["content"][0]["text"].as_str().unwrap_or_default();
                serde_json::from_str(text).unwrap_or_else(|_| json!({"text": text}))
            }
        };
        Ok(Answer {
            is_error: result["isError"].as_bool().unwrap_or(false),
            body,
        })
    }

    /// SIGKILL, then reap: once `wait` returns the process is gone, with its locks.
    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The state a successful submission in `state` leads to on the happy path.
fn next_state(state: &str, quality: bool) -> Option<&'static str> {
    Some(match state {
        "DOCUMENT_RESEARCH" => "QUERY_FRAME",
        "QUERY_FRAME" => "EXPLORATION",
        "EXPLORATION" => "Q1",
        "Q1" => "Q2",
        "Q2" => "Q3",
        "Q3" => "READY_PLAN",
        "READY_PLAN" => "READY_IMPL",
        "READY_IMPL" => "READY_COMPLETE",
        "READY_COMPLETE" => "POST_IMPL_VERIFY",
        "POST_IMPL_VERIFY" => "PRE_COMMIT",
        "PRE_COMMIT" if quality => "QUALITY_REVIEW",
        "PRE_COMMIT" => "MERGE",
        "QUALITY_REVIEW" => "MERGE",
        "MERGE" => "SESSION_COMPLETE",
        _ => return None,
    })
}

/// What the agent does in `state` before submitting (tool calls the phase requires, the
/// implementation), and the payload it submits. Doing it again after a restart is
/// harmless: the calls read, the write writes the same text.
fn prepare(server: &mut Server, root: &Path, state: &str) -> Result<Value, String> {
    let mut calls = |tool: &str, args: Value| -> Result<(), String> {
        let answer = server.call(tool, args)?;
        if answer.is_error {
            return Err(format!("{tool} in {state}: {}", answer.describe()));
        }
        Ok(())
    };
    Ok(match state {
        "DOCUMENT_RESEARCH" => {
            calls("search_files", json!({"globs": ["*.md"]}))?;
            json!({"documents_reviewed": ["README.md"], "tools_used": ["search_files"], "summary": "no rules"})
        }
        "QUERY_FRAME" => json!({
            "target_feature": {"value": "export command", "quote": "the export command"},
            "desired_action": {"value": "add --json", "quote": "add a --json flag"},
            "trigger_condition": null, "observed_issue": null, "tools_used": [], "summary": "frame"
        }),
        "EXPLORATION" => {
            calls("get_symbols", json!({"file_path": "app.py"}))?;
            calls("search_text", json!({"patterns": ["def main"]}))?;
            json!({"explored_files": ["app.py"], "findings": ["app.py:5 main prints the config"],
                   "tools_used": ["get_symbols", "search_text"], "summary": "main is the entry"})
        }
        "Q1" => {
            json!({"needs_more_information": false, "reason": "the code is small", "tools_used": [], "summary": "q1"})
        }
        "Q2" => {
            json!({"has_unverified_hypotheses": false, "reason": "nothing to verify", "tools_used": [], "summary": "q2"})
        }
        "Q3" => {
            json!({"needs_impact_analysis": false, "reason": "one entry point", "tools_used": [], "summary": "q3"})
        }
        "READY_PLAN" => json!({
            "tasks": [{"id": "t1", "description": "add the flag", "status": "pending",
                       "checklist": [{"item": "parse --json in main", "status": "pending"}]}],
            "tools_used": [], "summary": "one task"
        }),
        "READY_IMPL" => {
            calls("check_write_target", json!({"file_path": "app.py"}))?;
            std::fs::write(root.join("app.py"), APP_DONE).map_err(|e| e.to_string())?;
            json!({"task_id": "t1",
                   "checklist": [{"item": "parse --json in main", "status": "done", "evidence": "app.py:8-12"}],
                   "tools_used": ["check_write_target"], "summary": "done"})
        }
        "READY_COMPLETE" => json!({"summary": "implemented"}),
        "POST_IMPL_VERIFY" => json!({
            "verifier_used": "verifiers/code.md", "passed": true, "details": "ran it",
            "tools_used": [], "summary": "verified"
        }),
        "PRE_COMMIT" => {
            calls("review_changes", json!({}))?;
            json!({"review_prompt_used": "garbage_detection.md",
                   "reviewed_files": [{"path": "app.py", "decision": "keep"}],
                   "commit_message": COMMIT_MESSAGE, "tools_used": ["review_changes"], "summary": "reviewed"})
        }
        "QUALITY_REVIEW" => json!({
            "quality_prompt_used": "quality_review.md", "quality_score": 9, "issues": [],
            "tools_used": [], "summary": "fine"
        }),
        "MERGE" => json!({"summary": "all done"}),
        other => return Err(format!("no step for state {other}")),
    })
}

/// Whether `answer` to a submission in `state` is the expected success.
fn accepted(answer: &Answer, next: &str) -> bool {
    !answer.is_error
        && if next == "SESSION_COMPLETE" {
            answer.body["session_complete"] == json!(true)
                && answer.body["outcome"] == json!("success")
        } else {
            answer.state() == next
        }
}

fn git(root: &Path, args: &[&str]) -> String {
    let out = crate::sealed::command("git")
        .args(args)
        .current_dir(root)
        .output()
        .unwrap_or_else(|e| panic!("git {args:?}: {e}"));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What a kill left in the git directory: whether a git action was cut short (the
/// server's intent file), and the lock files, relative to `.git`.
fn leftovers(root: &Path) -> (bool, Vec<String>) {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if !path.ends_with("objects") {
                    walk(&path, base, out);
                }
            } else if path.extension().is_some_and(|e| e == "lock") {
                let rel = path.strip_prefix(base).unwrap_or(&path);
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    let git = root.join(".git");
    let mut locks = Vec::new();
    walk(&git, &git, &mut locks);
    locks.sort();
    (git.join("code-intel-action.json").exists(), locks)
}

/// A commit on `main` while the task branch is checked out (`git commit` in another
/// worktree, in effect): a new file, so the merge has no conflict.
fn commit_on_main(root: &Path) -> Result<(), String> {
    let repo = git2::Repository::open(root).map_err(|e| e.to_string())?;
    let main = repo
        .find_branch("main", git2::BranchType::Local)
        .and_then(|b| b.get().peel_to_commit())
        .map_err(|e| e.to_string())?;
    let blob = repo
        .blob(b"meanwhile on main\n")
        .map_err(|e| e.to_string())?;
    let mut tree = repo
        .treebuilder(Some(&main.tree().map_err(|e| e.to_string())?))
        .map_err(|e| e.to_string())?;
    tree.insert("MAIN.md", blob, 0o100644)
        .map_err(|e| e.to_string())?;
    let tree = repo
        .find_tree(tree.write().map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let who = git2::Signature::now("user", "user@example.com").map_err(|e| e.to_string())?;
    repo.commit(
        Some("refs/heads/main"),
        &who,
        &who,
        "meanwhile on main",
        &tree,
        &[&main],
    )
    .map_err(|e| e.to_string())?;
    Ok(())
}

/// A session's repository, server state directory and server log.
struct Place {
    root: TempDir,
    state: TempDir,
    log: PathBuf,
}

impl Place {
    fn new(n: usize, quality: bool) -> Place {
        let root = TempDir::create(&format!("code-intel-kill-{}-{n}", std::process::id()));
        let mut files = vec![("app.py", APP), ("README.md", "# demo\n")];
        if quality {
            files.push((
                ".code-intel/review_prompts/quality_review.md",
                "Check naming and tests.\n",
            ));
        }
        crate::support::git_repo(&root, &files);
        let state = TempDir::at(root.with_extension("state"));
        let log = root.with_extension("log");
        let _ = std::fs::remove_file(&log);
        Place { root, state, log }
    }

    fn server(&self) -> Result<Server, String> {
        Server::start(&self.root, &self.state, &self.log)
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.log);
    }
}

/// What the kills of one session found.
#[derive(Default)]
struct Tally {
    kills: usize,
    /// Kills after which the session had already moved to the next phase.
    saved_before: usize,
    /// Kills that cut a git action short (its intent file left in `.git`).
    actions_cut_short: usize,
    /// Kills that left lock files in `.git`.
    locks_left: usize,
    phases: BTreeMap<String, usize>,
}

/// One whole session. With `windows`, the server is killed once during each phase's
/// submission, after a delay drawn from that phase's window; without, it runs unkilled
/// and returns how long each submission took.
fn session(
    n: usize,
    quality: bool,
    moves_main: bool,
    windows: Option<&BTreeMap<String, Duration>>,
    rng: &mut Rng,
    tally: &mut Tally,
) -> Result<BTreeMap<String, Duration>, String> {
    let place = Place::new(n, quality);
    let root = place.root.path();
    let fail = |what: String| format!("session {n} (quality review {quality}): {what}");
    let with_log = |what: String| {
        if std::env::var_os("CODE_INTEL_KILL_KEEP").is_some() {
            // Kept for a post-mortem: a copy, since the session's own directory goes.
            let kept = root.with_extension("kept");
            let _ = crate::sealed::command("cp")
                .arg("-a")
                .arg(root)
                .arg(&kept)
                .status();
            return fail(format!(
                "{what}\nrepository kept at {}\nserver stderr:\n{}",
                kept.display(),
                place.stderr()
            ));
        }
        fail(format!("{what}\nserver stderr:\n{}", place.stderr()))
    };
    let mut durations = BTreeMap::new();
    let mut server = place.server().map_err(fail)?;
    let started = server
        .call("start_session", json!({"query": QUERY, "flags": ""}))
        .map_err(fail)?;
    if started.state() != "DOCUMENT_RESEARCH" {
        return Err(fail(format!("start_session: {}", started.describe())));
    }
    let mut state = "DOCUMENT_RESEARCH".to_string();
    let mut complete = false;
    let mut main_moved = false;
    while !complete {
        let next = next_state(&state, quality).ok_or_else(|| fail(format!("state {state}")))?;
        if state == "MERGE" && moves_main && !main_moved {
            // The user committed on main meanwhile: the merge makes a merge commit and
            // checks it out, which a kill can cut short.
            commit_on_main(root).map_err(fail)?;
            main_moved = true;
        }
        let payload = prepare(&mut server, root, &state).map_err(fail)?;
        let args = json!({"data": payload});
        let Some(window) = windows.and_then(|w| w.get(&state).copied()) else {
            let began = Instant::now();
            let answer = server.call("submit_phase", args).map_err(fail)?;
            durations.insert(state.clone(), began.elapsed());
            if !accepted(&answer, next) {
                return Err(fail(format!("{state}: {}", answer.describe())));
            }
            complete = next == "SESSION_COMPLETE";
            state = next.to_string();
            continue;
        };
        let delay = rng.delay(window);
        server.send_call("submit_phase", args).map_err(fail)?;
        std::thread::sleep(delay);
        server.kill();
        tally.kills += 1;
        *tally.phases.entry(state.clone()).or_default() += 1;
        let (cut_short, locks) = leftovers(root);
        tally.actions_cut_short += usize::from(cut_short);
        tally.locks_left += usize::from(!locks.is_empty());
        let killed = format!(
            "killed {:.2} ms into the {state} submission (git action cut short: {cut_short}, lock files left: {locks:?})",
            delay.as_secs_f64() * 1e3
        );
        server = place.server().map_err(fail)?;
        let resumed = server
            .call(
                "start_session",
                json!({"query": QUERY, "flags": "--resume"}),
            )
            .map_err(fail)?;
        if next == "SESSION_COMPLETE"
            && (resumed.body["error"] == json!("session.nothing_to_resume")
                || accepted(&resumed, next))
        {
            // The merge was done and saved before the kill: the session had ended (nothing
            // to resume), or its last step was saved and resuming ends it. The merge itself
            // is checked below.
            tally.saved_before += 1;
            break;
        }
        if resumed.is_error {
            return Err(with_log(format!(
                "{killed}, resuming: {}",
                resumed.describe()
            )));
        }
        let now = resumed.state().to_string();
        if now == next {
            tally.saved_before += 1;
            state = now;
            continue;
        }
        if now != state {
            return Err(with_log(format!(
                "{killed}, the resumed session is in {now}: {}",
                resumed.describe()
            )));
        }
        // The submission was not saved: the agent submits it again, and it must succeed.
        let payload = prepare(&mut server, root, &state)
            .map_err(|e| with_log(format!("{killed}, then: {e}")))?;
        let answer = server
            .call("submit_phase", json!({"data": payload}))
            .map_err(fail)?;
        if !accepted(&answer, next) {
            return Err(with_log(format!(
                "{killed}, submitting it again after the restart: {}",
                answer.describe()
            )));
        }
        complete = next == "SESSION_COMPLETE";
        state = next.to_string();
    }
    drop(server);
    // Completed means merged: on main, the task branch gone, the commit there once, the
    // implementation in the tree and nothing left uncommitted.
    let branch = git(root, &["branch", "--show-current"]);
    let task_branches = git(root, &["branch", "--list", "llm_task_*"]);
    let subjects = git(root, &["log", "--format=%s", "main"]);
    let status = git(root, &["status", "--porcelain"]);
    let app = std::fs::read_to_string(root.join("app.py")).unwrap_or_default();
    let commits = subjects.lines().filter(|s| *s == COMMIT_MESSAGE).count();
    if branch.trim() != "main"
        || !task_branches.trim().is_empty()
        || commits != 1
        || !status.is_empty()
        || app != APP_DONE
        || (moves_main && !(root.join("MAIN.md").is_file() && subjects.contains("Merge llm_task_")))
    {
        return Err(with_log(format!(
            "not merged: on {branch:?}, task branches {task_branches:?}, log {subjects:?}, status {status:?}"
        )));
    }
    Ok(durations)
}

/// Sessions run side by side: each waits on its server most of the time.
const PARALLEL: usize = 2;

#[test]
// The seed (to replay a failure) and the count of kills are the test's report.
#[allow(clippy::print_stdout)]
fn every_phase_survives_a_kill_at_any_moment() {
    let seed = std::env::var("CODE_INTEL_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    let sessions = std::env::var("CODE_INTEL_KILL_SESSIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SESSIONS);
    println!("kill_anywhere: seed {seed} (CODE_INTEL_KILL_SEED={seed} replays the delays)");
    let began = Instant::now();
    // Each session draws from its own generator, so a seed gives the same delays to the
    // same session whatever order the sessions run in.
    let rng = |n: usize| Rng(seed ^ (n as u64).wrapping_mul(0xA24B_AED4_963E_E407));
    let calibration = session(0, true, false, None, &mut rng(0), &mut Tally::default()).unwrap();
    // Each window covers the whole submission with room to spare, so kills land before,
    // inside and just after its effects and checkpoint.
    // `CODE_INTEL_KILL_PHASES=MERGE,READY_PLAN` kills in those phases only.
    let only = std::env::var("CODE_INTEL_KILL_PHASES").ok();
    let windows: BTreeMap<String, Duration> = calibration
        .iter()
        .filter(|(state, _)| {
            only.as_deref()
                .is_none_or(|o| o.split(',').any(|p| p == state.as_str()))
        })
        .map(|(state, took)| (state.clone(), (*took * 6 / 5).max(Duration::from_millis(2))))
        .collect();
    for (state, window) in &windows {
        println!(
            "kill_anywhere: {state} took {:.1} ms, kills within {:.1} ms",
            calibration[state].as_secs_f64() * 1e3,
            window.as_secs_f64() * 1e3
        );
    }
    let next = std::sync::atomic::AtomicUsize::new(1);
    let results: Vec<(Tally, Vec<String>)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..PARALLEL)
            .map(|_| {
                s.spawn(|| {
                    let mut tally = Tally::default();
                    let mut failures = Vec::new();
                    loop {
                        let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if n > sessions {
                            break;
                        }
                        // With and without the quality review, each half the time
                        // merging into a main that moved.
                        let (quality, moves_main) = (n % 2 == 1, n % 4 < 2);
                        let result = session(
                            n,
                            quality,
                            moves_main,
                            Some(&windows),
                            &mut rng(n),
                            &mut tally,
                        );
                        if let Err(e) = result {
                            failures.push(e);
                        }
                    }
                    (tally, failures)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let mut tally = Tally::default();
    let mut failures = Vec::new();
    for (t, f) in results {
        tally.kills += t.kills;
        tally.saved_before += t.saved_before;
        tally.actions_cut_short += t.actions_cut_short;
        tally.locks_left += t.locks_left;
        for (state, kills) in t.phases {
            *tally.phases.entry(state).or_default() += kills;
        }
        failures.extend(f);
    }
    println!(
        "kill_anywhere: {} kills, {} phases, {} sessions ({} failed), {:.1} s",
        tally.kills,
        tally.phases.len(),
        sessions,
        failures.len(),
        began.elapsed().as_secs_f64()
    );
    println!(
        "kill_anywhere: {} kills came after the submission was saved, {} cut a git action short, {} left lock files",
        tally.saved_before, tally.actions_cut_short, tally.locks_left
    );
    for (state, kills) in &tally.phases {
        println!("kill_anywhere:   {state}: {kills} kills");
    }
    assert!(
        failures.is_empty(),
        "seed {seed}: {} of {sessions} sessions did not complete after a kill:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
