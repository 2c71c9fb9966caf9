//! A Multiverse attempt's progress as its subscribers see it: a stand-in `agent-runner`
//! writes its `--events` file slowly (a line left partial and completed later, a line that
//! is not JSON, one over the 64 KiB bound, a last line just before it exits), and its lines
//! must arrive as `run` events in order, complete, once, and before the attempt's end and
//! the task's new state: from the orchestrator's hub, on `multiverse run --json`'s stderr
//! (and as a short line per state change without `--json`), and on the daemon's
//! server-sent event stream; after the run, the attempt's log route gives the same lines.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use code_intel::multiverse::{
    EventHub, ExecutionState, Orchestrator, Pools, RunnerSettings, Settings, SystemClock,
    TaskDesign, TaskId, Workspace,
};
use serde_json::{Map, Value, json};

use crate::support::{TempDir, mv, output_text as text};

/// The stand-in: its progress in steps 0.3 s apart, then its result.
const SLOW_AGENT_RUNNER: &str = r#"#!/bin/sh
shift
while [ $# -gt 0 ]; do
  case $1 in --result-file) result=$2; shift 2;; --events) events=$2; shift 2;; *) shift;; esac
done
printf '{"event":"state","from":"A","to":"B"}\n' > "$events"
sleep 0.3
printf '{"event":"action","action":"x","det' >> "$events"
sleep 0.3
printf 'ail":"y"}\nplain text\n' >> "$events"
head -c 70000 /dev/zero | tr '\0' x >> "$events"
sleep 0.3
printf '\n{"event":"finished","status":"complete","exit_code":0}\n' >> "$events"
printf '{"status":"complete","summary":"done"}' > "$result"
printf '{"event":"state","from":"B","to":"C"}\n' >> "$events"
exit 0
"#;

/// The `run` events the stand-in's file must give, without their task and attempt.
fn expected_runs() -> Vec<Value> {
    vec![
        json!({"event": {"event": "state", "from": "A", "to": "B"}}),
        json!({"event": {"event": "action", "action": "x", "detail": "y"}}),
        json!({"text": "plain text"}),
        json!({"skipped_bytes": 70000}),
        json!({"event": {"event": "finished", "status": "complete", "exit_code": 0}}),
        json!({"event": {"event": "state", "from": "B", "to": "C"}}),
    ]
}

/// A project repository, the stand-in and a workspace in `dir`; returns the stand-in.
fn setup(dir: &Path) -> PathBuf {
    let repo = dir.join("project");
    std::fs::create_dir_all(&repo).unwrap();
    crate::support::git_repo(&repo, &[("README.md", "# project\n")]);
    let fake = dir.join("agent-runner");
    std::fs::write(&fake, SLOW_AGENT_RUNNER).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    fake
}

/// Checks the events of one attempt of `task`, `(name, data)` in the order received: its
/// `run` events are the stand-in's lines, once each, in order, after the attempt's start
/// and before its end and the task's success. Returns where the first `run` came.
fn check_order(events: &[(String, Value)], task: &str) -> usize {
    let ours = |e: &&(String, Value)| e.1["task"] == task;
    let pos = |pred: &dyn Fn(&(String, Value)) -> bool| {
        events
            .iter()
            .position(|e| ours(&e) && pred(e))
            .unwrap_or_else(|| panic!("an event missing in {events:#?}"))
    };
    let runs: Vec<Value> = events
        .iter()
        .filter(|e| e.0 == "run" && ours(e))
        .map(|(_, data)| {
            assert_eq!(data["attempt"], 1, "{data}");
            let mut data = data.clone();
            let map = data.as_object_mut().unwrap();
            map.remove("task");
            map.remove("attempt");
            if let Some(event) = map.get_mut("event").and_then(Value::as_object_mut) {
                // agent-runner's own fields; the stand-in writes none.
                event.remove("ts");
                event.remove("trace_id");
            }
            data
        })
        .collect();
    assert_eq!(runs, expected_runs());
    let started = pos(&|e| e.0 == "attempt" && e.1["started"] == true);
    let first_run = pos(&|e| e.0 == "run");
    let last_run = events
        .iter()
        .rposition(|e| e.0 == "run" && e.1["task"] == task)
        .unwrap();
    let ended = pos(&|e| e.0 == "attempt" && e.1["ended"] == true);
    let succeeded = pos(&|e| e.0 == "task" && e.1["to"] == "SUCCEEDED");
    assert!(
        started < first_run && last_run < ended && ended < succeeded,
        "{events:#?}"
    );
    first_run
}

fn design(id: &str) -> TaskDesign {
    TaskDesign {
        id: TaskId::parse(id).unwrap(),
        title: format!("task {id}"),
        description: String::new(),
        acceptance_criteria: vec![],
        suggested_impl: None,
        dependencies: vec![],
        milestone: None,
        phase: None,
        pool: "default".into(),
        priority: 0,
        runner: RunnerSettings::default(),
        created_at: "2026-11-27T00:00:00Z".into(),
        updated_at: "2026-11-27T00:00:00Z".into(),
        created_by: "test".into(),
    }
}

#[test]
fn an_attempts_progress_lines_are_forwarded_as_it_runs_in_order_and_once() {
    let tmp = TempDir::new("mv-progress-hub");
    let dir = tmp.path();
    let fake = setup(dir);
    Workspace::init(&dir.join("ws"), &dir.join("project"), "progress").unwrap();
    let settings = Settings {
        program: fake,
        extra_args: vec![],
        project_root: dir.join("project"),
        runs_dir: dir.join("ws/runs"),
        runner_defaults: json!({}),
        pools: Pools::default(),
        lifecycle_params: Map::new(),
        grace: Duration::from_secs(5),
        locale: "en".into(),
    };
    let store = Workspace::open(&dir.join("ws")).unwrap();
    let mut o = Orchestrator::new(
        store,
        settings,
        Arc::new(SystemClock),
        Arc::new(EventHub::new()),
    )
    .unwrap();
    o.recover().unwrap();
    let events = o.events().subscribe();
    o.add_task(design("slow"), None).unwrap();
    o.set_execution(ExecutionState::Running).unwrap();
    // Each event with when it was received, read as the loop goes.
    let mut seen: Vec<(String, Value, Instant)> = Vec::new();
    let until = Instant::now() + Duration::from_secs(60);
    while !o.all_succeeded() {
        assert!(Instant::now() < until, "the task did not succeed");
        o.tick().unwrap();
        o.wait_for_end(Duration::from_millis(50)).unwrap();
        seen.extend(events.try_iter().map(|e| (e.name, e.data, Instant::now())));
    }
    let order: Vec<(String, Value)> = seen.iter().map(|e| (e.0.clone(), e.1.clone())).collect();
    let first = check_order(&order, "slow");
    // Forwarded while the attempt ran, not only when it ended: the first line came about
    // 0.9 s (the stand-in's sleeps) before the end.
    let ended = seen
        .iter()
        .find(|e| e.0 == "attempt" && e.1["ended"] == true)
        .unwrap()
        .2;
    assert!(
        ended.duration_since(seen[first].2) > Duration::from_millis(500),
        "the first line came {:?} before the end",
        ended.duration_since(seen[first].2)
    );
}

fn multiverse() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_multiverse"))
}

/// `init` with the stand-in as agent-runner.
fn init(dir: &Path) {
    let fake = setup(dir);
    let o = mv(
        dir,
        &[
            "init",
            dir.join("project").to_str().unwrap(),
            "--agent-runner",
            fake.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn multiverse_run_prints_the_runs_progress_before_the_tasks_end() {
    let tmp = TempDir::new("mv-progress-cli");
    let dir = tmp.path();
    init(dir);
    let o = mv(dir, &["task", "add", "slow one", "--id", "slow"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = mv(dir, &["--json", "run"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let events: Vec<(String, Value)> = String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|e| {
            (
                e["event"].as_str().unwrap_or_default().to_string(),
                e["data"].clone(),
            )
        })
        .collect();
    check_order(&events, "slow");

    // Without --json: a short line for each of the run's state changes, nothing else of it.
    let o = mv(dir, &["task", "add", "another", "--id", "other"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = mv(dir, &["run"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let at = |line: &str| {
        err.find(line)
            .unwrap_or_else(|| panic!("{line:?} missing: {}", text(&o)))
    };
    let (a_b, b_c) = (
        at("multiverse: other: run A -> B\n"),
        at("multiverse: other: run B -> C\n"),
    );
    assert!(a_b < b_c && b_c < at("-> SUCCEEDED"), "{}", text(&o));
    assert!(
        !err.contains("plain text") && !err.contains("\"action\""),
        "{}",
        text(&o)
    );
}

/// A daemon, killed if the test ends before it stopped it.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        // Nothing is signalled once it was waited for.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `multiverse serve` in `dir`; its URL (with the token) once it listens.
fn serve(dir: &Path) -> (Daemon, String) {
    let mut child = crate::sealed::command(multiverse())
        .args(["--workspace", dir.join("ws").to_str().unwrap(), "serve"])
        .env("HOME", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let url = crate::support::served(&mut child, &dir.join("ws")).url;
    (Daemon(child), url)
}

#[test]
fn the_daemons_event_stream_carries_the_runs_progress_before_the_tasks_end() {
    let tmp = TempDir::new("mv-progress-sse");
    let dir = tmp.path();
    init(dir);
    let (mut daemon, url) = serve(dir);
    let port = url.split(':').nth(2).unwrap().split('/').next().unwrap();
    let token = url.split("token=").nth(1).unwrap();
    let mut stream = TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(
        stream,
        "GET /api/events?token={token} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    while line.trim() != ": connected" {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the stream ended");
    }
    let o = mv(dir, &["task", "add", "slow one", "--id", "slow"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = mv(dir, &["start"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let mut events: Vec<(String, Value)> = Vec::new();
    let mut name = String::new();
    while !events
        .iter()
        .any(|e| e.0 == "task" && e.1["to"] == "SUCCEEDED")
    {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the stream ended");
        if let Some(n) = line.strip_prefix("event: ") {
            name = n.trim().to_string();
        } else if let Some(data) = line.strip_prefix("data: ") {
            events.push((name.clone(), serde_json::from_str(data).unwrap()));
        }
    }
    check_order(&events, "slow");
    // After the run, the attempt's log gives the same lines to a view opened later.
    let text = ureq::get(format!(
        "http://127.0.0.1:{port}/api/tasks/slow/attempts/1/log"
    ))
    .header("Authorization", &format!("Bearer {token}"))
    .call()
    .unwrap()
    .body_mut()
    .read_to_string()
    .unwrap();
    let log: Value = serde_json::from_str(&text).unwrap();
    let logged: Vec<&Value> = log["events"].as_array().unwrap().iter().collect();
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(map) = v.as_object_mut() {
            map.remove("ts");
            map.remove("trace_id");
        }
        v
    };
    assert_eq!(logged.len(), 6, "{log}");
    assert_eq!(
        strip(logged[0]),
        json!({"event": "state", "from": "A", "to": "B"})
    );
    assert_eq!(logged[2], &json!({"text": "plain text"}));
    assert_eq!(
        strip(logged[5]),
        json!({"event": "state", "from": "B", "to": "C"})
    );
    assert_eq!(
        (log["events_cut"].as_bool(), log["attempt"].as_u64()),
        (Some(false), Some(1))
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.0.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(daemon.0.wait().unwrap().code(), Some(130));
}
