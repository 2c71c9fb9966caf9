//! The `multiverse` binary as a user meets it: `init`, a chat request planned by the mock
//! planner, `run` through the real `agent-runner` to every task's note; and the daemon:
//! `serve` with its token, commands from the command line going to it, `kill -9` of the
//! daemon mid-run and a restart that recovers the orphaned attempt and finishes the plan.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{TempDir, mv, output_text as text};

fn multiverse() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_multiverse"))
}

fn agent_runner() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_agent-runner"))
}

fn project(dir: &Path) -> PathBuf {
    let repo = dir.join("project");
    std::fs::create_dir_all(&repo).unwrap();
    crate::support::git_repo(&repo, &[("README.md", "# project\n")]);
    repo
}

fn tasks(dir: &Path) -> Vec<Value> {
    let o = mv(dir, &["--json", "task", "list"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    serde_json::from_slice::<Vec<Value>>(&o.stdout).unwrap()
}

/// `init` of the project in `dir` with the mock planner, a stand-in agent that runs
/// `work` (after reading its prompt) on this machine, and the real agent-runner.
fn init_offline(dir: &Path, work: &str) {
    let agent = dir.join("agent.sh");
    std::fs::write(
        &agent,
        format!("#!/bin/sh\ncat > /dev/null\n{work}\necho did it\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = mv(
        dir,
        &[
            "init",
            dir.join("project").to_str().unwrap(),
            "--planner",
            "mock",
            "--worker-command",
            agent.to_str().unwrap(),
            "--unsafe-local",
            "--agent-runner",
            agent_runner().to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn a_new_user_plans_by_chat_and_runs_the_plan_to_every_tasks_note() {
    let tmp = TempDir::new("mv-cli-user");
    let dir = tmp.path();
    project(dir);
    init_offline(dir, "echo work >> work.txt");
    // A workspace inside the project is refused: workers could change it.
    let inside = crate::sealed::command(multiverse())
        .args([
            "--workspace",
            dir.join("project/.mv").to_str().unwrap(),
            "init",
        ])
        .arg(dir.join("project"))
        .output()
        .unwrap();
    assert_eq!(inside.status.code(), Some(2), "{}", text(&inside));
    assert!(String::from_utf8_lossy(&inside.stderr).contains("workspace_in_project"));
    // So is one spelled as a link from outside to a directory inside.
    std::fs::create_dir_all(dir.join("project/hidden")).unwrap();
    std::os::unix::fs::symlink(dir.join("project/hidden"), dir.join("link")).unwrap();
    let linked = crate::sealed::command(multiverse())
        .args(["--workspace", dir.join("link").to_str().unwrap(), "init"])
        .arg(dir.join("project"))
        .output()
        .unwrap();
    assert_eq!(linked.status.code(), Some(2), "{}", text(&linked));
    assert!(String::from_utf8_lossy(&linked.stderr).contains("workspace_in_project"));
    assert!(!dir.join("project/hidden/workspace.json").exists());

    let o = mv(
        dir,
        &[
            "chat",
            "Set it up in order:\n- write the parser\n- write the checker\n- write the docs",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("Created (3)"),
        "{}",
        text(&o)
    );
    assert_eq!(tasks(dir).len(), 3);
    // The mock planner's own syntax as the first thing typed is a message, not an option
    // (issue 34: `chat "- item"` was refused as an unknown argument).
    let o = mv(dir, &["chat", "- write the changelog"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("Created (1)"),
        "{}",
        text(&o)
    );
    assert_eq!(tasks(dir).len(), 4);

    let o = mv(dir, &["run"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("-> SUCCEEDED"),
        "{}",
        text(&o)
    );
    for task in tasks(dir) {
        assert_eq!(task["state"], "SUCCEEDED", "{task}");
        let id = task["id"].as_str().unwrap();
        let o = mv(dir, &["task", "show", id]);
        let shown: Value = serde_json::from_slice(&o.stdout).unwrap();
        let run_dir = PathBuf::from(shown["attempts"][0]["run_dir"].as_str().unwrap());
        let note = std::fs::read_to_string(run_dir.join("note.md")).unwrap();
        assert!(note.contains(id), "{note}");
        // `task note` prints it (the last attempt's, or the one asked for).
        let o = mv(dir, &["task", "note", id]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim_end(),
            note.trim_end()
        );
        let o = mv(dir, &["task", "note", id, "--attempt", "2", "--json"]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("has no attempt 2"),
            "{}",
            text(&o)
        );
        assert!(
            dir.join(format!("project/.agent-runner/task-{id}.md"))
                .is_file()
        );
    }
    let o = mv(dir, &["status"]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("4 SUCCEEDED"),
        "{}",
        text(&o)
    );
}

/// A fake agent-runner: the first attempt of each task sleeps until stopped (TERM: exit
/// 130), later ones succeed; it logs each start.
const SLEEPY_AGENT_RUNNER: &str = r#"#!/bin/sh
task=$1; shift
result=
while [ $# -gt 0 ]; do
  case $1 in --result-file) result=$2; shift 2;; *) shift;; esac
done
dir='@DIR@'
id=$(sed -n 's/^ *"id": "\([^"]*\)",*$/\1/p' "$task" | head -1)
n=$(cat "$dir/count-$id" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$dir/count-$id"
trap 'printf "{\"status\":\"cancelled\"}" > "$result"; exit 130' TERM
echo "start $id $n $$" >> "$dir/log"
if [ $n = 1 ]; then sleep 120 & wait $!; fi
printf '{"status":"complete","summary":"done"}' > "$result"
exit 0
"#;

/// [`SLEEPY_AGENT_RUNNER`] written to `dir/agent-runner`, logging into `dir/fake`: the
/// program and its log directory.
fn sleepy_agent_runner(dir: &Path) -> (PathBuf, PathBuf) {
    let fake_dir = dir.join("fake");
    std::fs::create_dir_all(&fake_dir).unwrap();
    let fake = dir.join("agent-runner");
    std::fs::write(
        &fake,
        SLEEPY_AGENT_RUNNER.replace("@DIR@", &fake_dir.display().to_string()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    (fake, fake_dir)
}

fn serve(dir: &Path) -> (Child, String) {
    let mut child = crate::sealed::command(multiverse())
        .args(["--workspace", dir.join("ws").to_str().unwrap(), "serve"])
        .env("HOME", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let url = crate::support::served(&mut child, &dir.join("ws")).url;
    (child, url)
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(90);
    while !done() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_daemon_killed_mid_run_is_recovered_on_restart_and_the_plan_completes() {
    let tmp = TempDir::new("mv-cli-daemon");
    let dir = tmp.path();
    project(dir);
    let (fake, fake_dir) = sleepy_agent_runner(dir);
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

    let (mut daemon, url) = serve(dir);
    // The door is locked without the token.
    let port: u16 = url
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .new_agent();
    let refused = agent
        .get(&format!("http://127.0.0.1:{port}/api/state"))
        .call()
        .unwrap();
    assert_eq!(refused.status().as_u16(), 401);
    let token = url.split("token=").nth(1).unwrap();
    let mut ok = agent
        .get(&format!("http://127.0.0.1:{port}/api/state"))
        .header("Authorization", &format!("Bearer {token}"))
        .call()
        .unwrap();
    assert_eq!(ok.status().as_u16(), 200);
    let _: Value = serde_json::from_str(&ok.body_mut().read_to_string().unwrap()).unwrap();

    // Commands from the command line go to the daemon (it holds the workspace).
    let o = mv(dir, &["task", "add", "the only task", "--id", "only"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = mv(dir, &["start"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let log = fake_dir.join("log");
    wait_for("the first attempt", || log.exists());
    let first_pid: i32 = std::fs::read_to_string(&log)
        .unwrap()
        .split_whitespace()
        .nth(3)
        .unwrap()
        .parse()
        .unwrap();

    // kill -9: no finalizers, the attempt's process left behind.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    daemon.wait().unwrap();
    assert!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(first_pid), None).is_ok(),
        "the orphan runs on"
    );

    let (mut daemon, _) = serve(dir);
    wait_for("the task to succeed", || {
        tasks(dir)
            .first()
            .is_some_and(|t| t["state"] == "SUCCEEDED")
    });
    // The orphan was stopped, its attempt ended as interrupted, the second one ran.
    assert!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(first_pid), None).is_err());
    let o = mv(dir, &["task", "show", "only"]);
    let shown: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(shown["attempts"][0]["status"], "interrupted", "{shown}");
    assert_eq!(shown["attempts"].as_array().unwrap().len(), 2, "{shown}");

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = daemon.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(!dir.join("ws/daemon.json").exists());
}

/// Issue 34, finding 5: SIGTERM or Ctrl-C of `serve` marked the running task CANCELED (never
/// retried) and its dependents BLOCKED, where `kill -9` re-queued them: restarting the
/// daemon to upgrade it destroyed work. Now a graceful stop interrupts, as a crash does.
#[test]
fn a_graceful_stop_interrupts_what_runs_and_a_restart_goes_on() {
    let tmp = TempDir::new("mv-cli-graceful");
    let dir = tmp.path();
    project(dir);
    let (fake, fake_dir) = sleepy_agent_runner(dir);
    let project_dir = dir.join("project");
    let o = mv(
        dir,
        &[
            "init",
            project_dir.to_str().unwrap(),
            "--agent-runner",
            fake.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (mut daemon, _) = serve(dir);
    for args in [
        &["task", "add", "first", "--id", "first"][..],
        &[
            "task",
            "add",
            "second",
            "--id",
            "second",
            "--depends-on",
            "first",
        ][..],
        &["start"][..],
    ] {
        let o = mv(dir, args);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    wait_for("the first attempt", || fake_dir.join("log").exists());

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(daemon.wait().unwrap().code(), Some(130));
    let state = |id: &str| {
        tasks(dir)
            .into_iter()
            .find(|t| t["id"] == id)
            .map(|t| t["state"].as_str().unwrap_or_default().to_string())
    };
    // Queued again, not cancelled; its dependent waits, not blocked.
    assert_eq!(state("first").as_deref(), Some("READY"), "{:?}", tasks(dir));
    assert_eq!(
        state("second").as_deref(),
        Some("PENDING"),
        "{:?}",
        tasks(dir)
    );
    let o = mv(dir, &["task", "show", "first"]);
    let shown: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(shown["attempts"][0]["status"], "interrupted", "{shown}");

    // The restarted daemon goes on where the stopped one was (the fake sleeps through the
    // first attempt of every task: the dependent's is counted as a later one).
    std::fs::write(fake_dir.join("count-second"), "1\n").unwrap();
    let (mut daemon, _) = serve(dir);
    wait_for("both tasks to succeed", || {
        state("first").as_deref() == Some("SUCCEEDED")
            && state("second").as_deref() == Some("SUCCEEDED")
    });
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(daemon.wait().unwrap().code(), Some(130));
}

/// Issue 34: without a daemon, 19 of 20 `task add` at once failed on the writer lock, and
/// while `run` ran, `stop`, `chat` and `ide` were refused as if some other process held the
/// workspace. One-command writers now take turns; a foreground `run` is named, with how
/// to stop it and what takes commands instead.
#[test]
fn twenty_task_adds_at_once_take_turns_and_a_foreground_run_is_named_to_commands() {
    let tmp = TempDir::new("mv-cli-writers");
    let dir = tmp.path();
    project(dir);
    let (fake, fake_dir) = sleepy_agent_runner(dir);
    let project_dir = dir.join("project");
    let o = mv(
        dir,
        &[
            "init",
            project_dir.to_str().unwrap(),
            "--agent-runner",
            fake.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let adds: Vec<Child> = (0..20)
        .map(|i| {
            crate::sealed::command(multiverse())
                .arg("--workspace")
                .arg(dir.join("ws"))
                .args([
                    "task",
                    "add",
                    &format!("task {i}"),
                    "--id",
                    &format!("t{i}"),
                ])
                .env("HOME", dir)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for add in adds {
        let o = add.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    assert_eq!(tasks(dir).len(), 20);

    let run = crate::sealed::command(multiverse())
        .arg("--workspace")
        .arg(dir.join("ws"))
        .arg("run")
        .env("HOME", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let run = crate::support::Terminated(run);
    wait_for("the first attempt", || fake_dir.join("log").exists());
    for args in [
        &["stop"][..],
        &["chat", "- one more"][..],
        &["task", "add", "late"][..],
    ] {
        let o = mv(dir, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let said = String::from_utf8_lossy(&o.stderr);
        assert!(
            said.contains(&format!("`multiverse run` (pid {}", run.0.id()))
                && said.contains("Ctrl-C")
                && said.contains("`multiverse serve`"),
            "{args:?}: {said}"
        );
    }
    let o = mv(dir, &["ide"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("`multiverse run` (pid"),
        "{}",
        text(&o)
    );
    // `run` is stopped (TERM) when dropped.
    drop(run);
}

#[test]
fn a_missing_agent_runner_is_said_once_not_as_failed_attempts() {
    let tmp = TempDir::new("mv-cli-missing");
    let dir = tmp.path();
    project(dir);
    let missing = dir.join("no-such-agent-runner");
    let o = mv(
        dir,
        &[
            "init",
            dir.join("project").to_str().unwrap(),
            "--agent-runner",
            missing.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = mv(dir, &["task", "add", "something"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("agent_runner_missing") && err.contains("no-such-agent-runner"),
        "{err}"
    );
}

/// GET or POST `path` on the daemon at `url` (as `serve` printed it) with its token.
fn api(url: &str, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let port = url.split(':').nth(2).unwrap().split('/').next().unwrap();
    let token = url.split("token=").nth(1).unwrap();
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .new_agent();
    let target = format!("http://127.0.0.1:{port}{path}");
    let auth = format!("Bearer {token}");
    let mut reply = match (method, body) {
        ("GET", _) => agent
            .get(&target)
            .header("Authorization", &auth)
            .call()
            .unwrap(),
        (_, body) => agent
            .post(&target)
            .header("Authorization", &auth)
            .header("Content-Type", "application/json")
            .send(
                serde_json::to_vec(&body.unwrap_or(Value::Null))
                    .unwrap()
                    .as_slice(),
            )
            .unwrap(),
    };
    let status = reply.status().as_u16();
    let text = reply.body_mut().read_to_string().unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[test]
fn the_daemon_api_plans_by_chat_runs_and_serves_each_attempts_note() {
    let tmp = TempDir::new("mv-cli-api");
    let dir = tmp.path();
    project(dir);
    init_offline(dir, "true");
    let (mut daemon, url) = serve(dir);

    let (status, turn) = api(
        &url,
        "POST",
        "/api/chat",
        Some(serde_json::json!({"message": "In order:\n- one\n- two"})),
    );
    assert_eq!(status, 200, "{turn}");
    assert_eq!(turn["autopilot"], true, "{turn}");
    let session = turn["session"].as_str().unwrap().to_string();
    wait_for("both tasks to succeed", || {
        let (_, tasks) = api(&url, "GET", "/api/tasks", None);
        tasks
            .as_array()
            .is_some_and(|t| t.len() == 2 && t.iter().all(|t| t["state"] == "SUCCEEDED"))
    });
    let (_, tasks) = api(&url, "GET", "/api/tasks", None);
    let first = tasks[0]["id"].as_str().unwrap().to_string();
    let (status, shown) = api(&url, "GET", &format!("/api/tasks/{first}"), None);
    assert_eq!(status, 200);
    assert_eq!(shown["attempts"][0]["exit_code"], 0, "{shown}");
    let (status, note) = api(
        &url,
        "GET",
        &format!("/api/tasks/{first}/attempts/1/note"),
        None,
    );
    assert_eq!(status, 200, "{note}");
    assert!(
        note["markdown"].as_str().unwrap().contains(&first),
        "{note}"
    );
    // The result as agent-runner wrote it, each criterion with its verdict.
    let (status, result) = api(
        &url,
        "GET",
        &format!("/api/tasks/{first}/attempts/1/result"),
        None,
    );
    assert_eq!(status, 200, "{result}");
    assert_eq!(result["result"]["status"], "complete", "{result}");
    let (status, _) = api(
        &url,
        "GET",
        &format!("/api/tasks/{first}/attempts/9/result"),
        None,
    );
    assert_eq!(status, 404);
    // Rows carry what a WBS view groups by.
    for key in ["priority", "parent", "milestone", "phase", "pool"] {
        assert!(tasks[0].get(key).is_some(), "{key}: {}", tasks[0]);
    }
    let (status, execution) = api(&url, "GET", "/api/execution", None);
    assert_eq!(status, 200);
    assert!(execution["state"].is_string(), "{execution}");
    // Nothing outside the workspace's runs is served.
    let (status, _) = api(&url, "GET", "/api/tasks/%2e%2e/attempts/1/note", None);
    assert_eq!(status, 404);
    let (status, _) = api(
        &url,
        "GET",
        &format!("/api/tasks/{first}/attempts/9/note"),
        None,
    );
    assert_eq!(status, 404);
    // The sessions, titled by their first message, and the pools with their counts.
    let (status, sessions) = api(&url, "GET", "/api/chat", None);
    assert_eq!(status, 200, "{sessions}");
    assert_eq!(sessions[0]["session"], session.as_str(), "{sessions}");
    assert!(
        sessions[0]["title"]
            .as_str()
            .unwrap()
            .starts_with("In order"),
        "{sessions}"
    );
    let (status, pools) = api(&url, "GET", "/api/pools", None);
    assert_eq!(status, 200, "{pools}");
    let default = pools
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pool"] == "default")
        .unwrap();
    assert_eq!(
        (default["total"].clone(), default["succeeded"].clone()),
        (Value::from(2), Value::from(2)),
        "{pools}"
    );
    let (_, messages) = api(&url, "GET", &format!("/api/chat/{session}"), None);
    assert_eq!(messages.as_array().map(Vec::len), Some(2), "{messages}");
    // A session id is letters, digits, '-' and '_': anything else is refused.
    let (status, _) = api(&url, "GET", "/api/chat/..%2Fx", None);
    assert_eq!(status, 404);
    let (status, bad) = api(&url, "GET", "/api/chat/a.b", None);
    assert_eq!(
        (status, bad["error"]["key"].clone()),
        (400, Value::from("bad_session"))
    );
    let (status, answer) = api(
        &url,
        "POST",
        "/api/execution",
        Some(serde_json::json!({"state": "PAUSED"})),
    );
    assert_eq!(
        (status, answer["execution"].clone()),
        (200, Value::from("PAUSED"))
    );
    let (status, bad) = api(
        &url,
        "POST",
        "/api/execution",
        Some(serde_json::json!({"state": "FAST"})),
    );
    assert_eq!(
        (status, bad["error"]["key"].clone()),
        (400, Value::from("bad_request"))
    );
    let (_, doc) = api(&url, "GET", "/api/openapi.json", None);
    assert!(doc["paths"]["/api/tasks/{id}/attempts/{n}/note"].is_object());
    assert!(doc["paths"]["/api/chat"]["get"].is_object());
    assert!(doc["paths"]["/api/pools"]["get"].is_object());

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(daemon.wait().unwrap().code(), Some(130));
}

#[test]
fn a_japanese_workspace_answers_in_japanese_and_an_unknown_language_is_refused() {
    let tmp = TempDir::new("mv-cli-locale");
    let dir = tmp.path();
    let repo = project(dir);
    let o = mv(
        dir,
        &[
            "init",
            repo.to_str().unwrap(),
            "--planner",
            "mock",
            "--locale",
            "fr",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("locale \"fr\" is not one of en, ja"),
        "{}",
        text(&o)
    );
    assert!(!dir.join("ws/workspace.json").exists(), "nothing was made");
    let o = mv(
        dir,
        &[
            "init",
            repo.to_str().unwrap(),
            "--planner",
            "mock",
            "--locale",
            "ja",
            "--agent-runner",
            agent_runner().to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = mv(dir, &["chat", "pause"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("一時停止しました"),
        "{}",
        text(&o)
    );
    // A hand edit to a language it does not speak is named, not guessed around.
    let path = dir.join("ws/config.json");
    let mut config: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    config["locale"] = serde_json::json!("xx");
    std::fs::write(&path, config.to_string()).unwrap();
    let o = mv(dir, &["chat", "status"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("config_invalid"),
        "{}",
        text(&o)
    );
}

/// Issue 34, low findings: terminal control characters and NUL in a title printed raw in
/// `task list`; a chat turn whose planner failed exited 0.
#[test]
fn control_characters_print_escaped_and_a_failed_chat_turn_exits_1() {
    let tmp = TempDir::new("mv-cli-hostile-text");
    let dir = tmp.path();
    project(dir);
    init_offline(dir, "true");
    // (A NUL cannot travel in argv; the API takes one, and it prints as \u0000 too.)
    let title = "clear\u{1b}[2J\u{1b}]0;pwned\u{7}\rover\u{9b}31m";
    let o = mv(dir, &["task", "add", title, "--id", "hostile"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = mv(dir, &["task", "list"]);
    let shown = String::from_utf8(o.stdout.clone()).unwrap();
    assert!(
        !shown
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "{shown:?}"
    );
    assert!(
        shown.contains("clear\\u001b[2J\\u001b]0;pwned\\u0007\\u000dover\\u009b31m"),
        "{shown:?}"
    );
    // JSON output stays JSON and keeps the title exact.
    let o = mv(dir, &["--json", "task", "list"]);
    let listed: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(listed[0]["title"], title);

    let o = mv(
        dir,
        &[
            "settings",
            "set",
            "--provider",
            "openai-chat",
            "--model",
            "m",
            "--key-env",
            "MV_CLI_TEST_API_KEY",
            "--base-url",
            "http://127.0.0.1:1/v1",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // The key is set, nothing answers at the base URL: the turn fails and changes nothing.
    let o = crate::sealed::command(multiverse())
        .arg("--workspace")
        .arg(dir.join("ws"))
        .args(["chat", "plan the next step"])
        .env("HOME", dir)
        .env("MV_CLI_TEST_API_KEY", "sk-test")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(tasks(dir).len(), 1);
}

/// Issue 34: with `--unsafe-local` a worker runs on this machine as the user, and found
/// the workspace through its parent's command line (`--run-label <workspace>/runs/...`)
/// and could append to its journal or read the daemon's token. Now each attempt hides the
/// workspace from its worker, whose work in the project still succeeds.
#[test]
fn an_unsafe_local_worker_cannot_touch_the_workspace_it_works_for() {
    let tmp = TempDir::new("mv-cli-confined");
    let dir = tmp.path();
    project(dir);
    let ws = dir.join("ws");
    init_offline(
        dir,
        &format!(
            r#"ws='{}'
{{
  if echo forged >> "$ws/history/journal.jsonl"; then echo "journal: appended"; else echo "journal: refused"; fi
  if cat "$ws/daemon.json"; then echo "token: read"; else echo "token: refused"; fi
  echo "parent: $(tr '\0' ' ' < /proc/$PPID/cmdline)"
}} > ../probe.txt 2>&1
echo work >> work.txt"#,
            ws.display()
        ),
    );
    let (mut daemon, url) = serve(dir);
    assert!(ws.join("daemon.json").is_file() && ws.join("history/journal.jsonl").is_file());
    let (status, turn) = api(
        &url,
        "POST",
        "/api/chat",
        Some(serde_json::json!({"message": "In order:\n- do the work"})),
    );
    assert_eq!(status, 200, "{turn}");
    let probe_file = dir.join("probe.txt");
    wait_for("the worker's attempts", || {
        std::fs::read_to_string(&probe_file).is_ok_and(|p| p.contains("parent: "))
    });
    let probe = std::fs::read_to_string(&probe_file).unwrap();
    assert!(
        probe.contains("journal: refused") && probe.contains("token: refused"),
        "{probe}"
    );
    let token = url.split("token=").nth(1).unwrap();
    assert!(!probe.contains(token), "{probe}");
    let parent = probe.lines().find(|l| l.starts_with("parent: ")).unwrap();
    assert!(!parent.contains("--result-file"), "{parent}");
    wait_for("the task to succeed", || {
        let (_, tasks) = api(&url, "GET", "/api/tasks", None);
        tasks
            .as_array()
            .is_some_and(|t| t.len() == 1 && t[0]["state"] == "SUCCEEDED")
    });
    // The journal holds the daemon's entries only; the task's work was done.
    let journal = std::fs::read_to_string(ws.join("history/journal.jsonl")).unwrap();
    assert!(
        journal
            .lines()
            .all(|l| serde_json::from_str::<Value>(l).is_ok()),
        "{journal}"
    );
    assert!(dir.join("project/work.txt").is_file());
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    daemon.wait().unwrap();
}
