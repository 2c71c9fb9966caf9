//! `agent-runner` end to end through the binary, offline: the mock planner (or a planner
//! that cannot start), scripted fake coding agents in temporary git repositories, the
//! local worker and a fake `docker` on PATH. Each test checks the exit code, the Task
//! Note and the result JSON, the way a user or an orchestrator reads them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

use crate::runner_sandbox::{FakeDocker, write_script};
use crate::support::TempDir;
use crate::support::repo;

fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_agent-runner"))
}

/// A task in a temporary directory: `repo/` (a git repository with one commit),
/// `agent.sh` (the fake coding agent) and `task.yaml`.
struct Fixture {
    dir: TempDir,
}

/// A fake agent that writes `hello.txt` and says so as its last line.
const GOOD_AGENT: &str =
    "#!/bin/sh\ncat > /dev/null\nprintf 'Hello, world!\\n' > hello.txt\necho 'Wrote hello.txt.'\n";

/// A temporary directory (`name` under the system's) holding `repo/` (a git repository
/// with one commit), `agent.sh` (the fake coding agent), `task.yaml` and an empty `home/`.
pub(crate) fn task_dir(name: &str, agent: &str, task: &str) -> TempDir {
    let dir = TempDir::new(name);
    crate::support::git_repo(&dir.path().join("repo"), &[("README.md", "# repo\n")]);
    write_script(&dir.path().join("agent.sh"), agent);
    std::fs::write(dir.path().join("task.yaml"), task).unwrap();
    std::fs::create_dir_all(dir.path().join("home")).unwrap();
    dir
}

impl Fixture {
    fn new(name: &str, agent: &str, task: &str) -> Fixture {
        Fixture {
            dir: task_dir(&format!("cli-{name}"), agent, task),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = crate::sealed::command(binary());
        command
            .args(args)
            .current_dir(self.path())
            .env("HOME", self.path().join("home"))
            .env_remove("OPENAI_API_KEY")
            .env_remove("AGENT_RUNNER_LOG")
            .stdin(Stdio::null());
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn result(&self) -> Value {
        let text = std::fs::read_to_string(self.path().join("result.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    fn note(&self, id: &str) -> String {
        let path = self.path().join(format!("repo/.agent-runner/task-{id}.md"));
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("no note at {}: {e}", path.display()))
    }
}

/// A task for the fixture: mock planner, the command worker `./agent.sh`.
fn task(id: &str, test: &str, extra_runner: &str) -> String {
    format!(
        "version: 1\ntask:\n  id: {id}\n  title: Say hello\n  repo: repo\n  prd:\n    text: |\n      - hello.txt says hello\n  test:\n    command: '{test}'\n    timeout_sec: 30\nrunner:\n  max_loops: 3\n  meta: {{kind: mock}}\n  worker:\n    kind: command\n    command: [./agent.sh]\n    max_run_time_sec: 30\n{extra_runner}"
    )
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn the_hello_example_completes_offline_as_the_readme_says() {
    // The example as shipped, in a copy of the repository layout it expects.
    let dir = TempDir::new("cli-hello-example");
    let root = repo();
    for file in [
        "examples/tasks/hello.yaml",
        "examples/agents/hello-agent.sh",
        "examples/hello/README.md",
    ] {
        let to = dir.path().join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(root.join(file), &to).unwrap();
    }
    git2::Repository::init(dir.path()).unwrap();
    let o = crate::sealed::command(binary())
        .args([
            "examples/tasks/hello.yaml",
            "--unsafe-local",
            "--result-file",
            "result.json",
            "--events",
            "events.jsonl",
        ])
        .current_dir(dir.path())
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Progress: one line per state change and action.
    let err = stderr(&o);
    assert!(err.contains("agent-runner: PLANNING -> RUNNING"), "{err}");
    assert!(err.contains("agent-runner:   worker.run"), "{err}");
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("result.json")).unwrap())
            .unwrap();
    assert_eq!(result["status"], "complete");
    assert_eq!(result["exit_code"], 0);
    assert_eq!(result["acceptance_criteria"].as_array().unwrap().len(), 2);
    assert!(
        result["acceptance_criteria"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["passed"] == true)
    );
    assert_eq!(
        result["runs"][0]["files_changed"],
        serde_json::json!(["examples/hello/hello.txt"])
    );
    assert_eq!(result["validation"]["test"]["passed"], true);
    for key in ["summary", "started_at", "finished_at"] {
        assert!(result[key].is_string(), "{key}");
    }
    let note = std::fs::read_to_string(
        dir.path()
            .join("examples/hello/.agent-runner/task-hello.md"),
    )
    .unwrap();
    assert!(note.contains("**complete**"), "{note}");
    assert!(note.contains("- [x] **AC-1**"), "{note}");
    // The result is also beside the note.
    let beside = std::fs::read_to_string(
        dir.path()
            .join("examples/hello/.agent-runner/task-hello.json"),
    )
    .unwrap();
    assert_eq!(serde_json::from_str::<Value>(&beside).unwrap(), result);
    // Events: JSON lines, the last one the end.
    let events = std::fs::read_to_string(dir.path().join("events.jsonl")).unwrap();
    let events: Vec<Value> = events
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "state" && e["to"] == "COMPLETE")
    );
    assert_eq!(events.last().unwrap()["event"], "finished");
}

#[test]
fn b3_b4_a_task_whose_tests_keep_failing_ends_incomplete_with_exit_3() {
    let f = Fixture::new(
        "incomplete",
        GOOD_AGENT,
        &task("incomplete", "grep -q Goodbye hello.txt", ""),
    );
    let o = f.run(&[
        "task.yaml",
        "--unsafe-local",
        "--result-file",
        "result.json",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let result = f.result();
    assert_eq!(result["status"], "incomplete");
    assert_eq!(result["state"], "INCOMPLETE");
    assert_eq!(result["validation"]["test"]["passed"], false);
    assert!(
        f.note("incomplete")
            .contains("**incomplete** (exit code 3)")
    );
}

#[test]
fn b3_a_planner_that_aborts_fails_the_task_with_exit_1_and_still_writes_the_note() {
    let f = Fixture::new(
        "abort",
        GOOD_AGENT,
        &task("abort", "true", "  planner_retries: 0\n").replace(
            "meta: {kind: mock}",
            "meta: {kind: mock, script: script.yaml}",
        ),
    );
    std::fs::write(
        f.path().join("script.yaml"),
        "- protocol: next_action\n  reply: {type: next_action, version: 1, payload: {decision: {action: abort, reason: cannot be done}}}\n",
    )
    .unwrap();
    let o = f.run(&[
        "task.yaml",
        "--unsafe-local",
        "--result-file",
        "result.json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let result = f.result();
    assert_eq!(result["status"], "failed");
    assert_eq!(result["state"], "FAILED");
    let note = f.note("abort");
    assert!(note.contains("The planner aborted the task."), "{note}");
}

/// `ask_human` is its own ending: exit 4, status `needs_human`, the question in the result
/// JSON and the note (the original failed the task).
#[test]
fn a_planner_that_asks_a_human_ends_with_exit_4_and_its_question() {
    let f = Fixture::new(
        "ask",
        GOOD_AGENT,
        &task("ask", "true", "  planner_retries: 0\n").replace(
            "meta: {kind: mock}",
            "meta: {kind: mock, script: script.yaml}",
        ),
    );
    std::fs::write(
        f.path().join("script.yaml"),
        "- protocol: next_action\n  reply: {type: next_action, version: 1, payload: {decision: {action: ask_human, reason: the PRD names two databases, question: Should the cache use Redis or Postgres?}}}\n",
    )
    .unwrap();
    let o = f.run(&[
        "task.yaml",
        "--unsafe-local",
        "--result-file",
        "result.json",
    ]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let result = f.result();
    assert_eq!(result["status"], "needs_human");
    assert_eq!(result["state"], "NEEDS_HUMAN");
    assert_eq!(result["exit_code"], 4);
    assert_eq!(
        result["question"],
        "Should the cache use Redis or Postgres?"
    );
    let note = f.note("ask");
    assert!(note.contains("## Question for a human"), "{note}");
    assert!(
        note.contains("Should the cache use Redis or Postgres?"),
        "{note}"
    );
    // Without `question`, the reason is the question.
    std::fs::write(
        f.path().join("script.yaml"),
        "- protocol: next_action\n  reply: {type: next_action, version: 1, payload: {decision: {action: ask_human, reason: Which API version is meant?}}}\n",
    )
    .unwrap();
    let o = f.run(&[
        "task.yaml",
        "--unsafe-local",
        "--result-file",
        "result.json",
    ]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert_eq!(f.result()["question"], "Which API version is meant?");
}

/// The planner's `worker_call` reaches the worker only through the kind's allow-list;
/// what it refuses is named in the run record and the note, and never passed.
#[test]
fn the_planners_worker_call_fields_are_refused_by_name_and_never_passed() {
    // The agent records its arguments and environment.
    let agent = "#!/bin/sh\ncat > /dev/null\necho \"$@\" > args.txt\nenv > env.txt\nprintf 'Hello, world!\\n' > hello.txt\necho done\n";
    let f = Fixture::new(
        "fields",
        agent,
        &task("fields", "true", "  planner_retries: 0\n").replace(
            "meta: {kind: mock}",
            "meta: {kind: mock, script: script.yaml}",
        ),
    );
    std::fs::write(
        f.path().join("script.yaml"),
        "- protocol: next_action\n  reply: {type: next_action, version: 1, payload: {decision: {action: run_worker, reason: start}, worker_call: {prompt: write hello.txt, model: gpt-x, cli_path: /bin/evil, workdir: /, flags: [--evil-flag], env: {LD_PRELOAD: /tmp/x.so, PLANNER_SECRET: leak}, temperature: 0.3}}}\n",
    )
    .unwrap();
    let o = f.run(&[
        "task.yaml",
        "--unsafe-local",
        "--result-file",
        "result.json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let result = f.result();
    let refused: Vec<String> = result["runs"][0]["refused"]
        .as_array()
        .unwrap_or_else(|| panic!("no refused in {result}"))
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect();
    let all = refused.join("\n");
    for named in [
        "worker_call.model",
        "worker_call.cli_path",
        "worker_call.workdir",
        "\"--evil-flag\"",
        "env.LD_PRELOAD",
        "env.PLANNER_SECRET",
        "worker_call.temperature",
    ] {
        assert!(all.contains(named), "{named} not in {all}");
    }
    let args = std::fs::read_to_string(f.path().join("repo/args.txt")).unwrap();
    assert!(!args.contains("evil") && !args.contains("gpt-x"), "{args}");
    let env = std::fs::read_to_string(f.path().join("repo/env.txt")).unwrap();
    assert!(
        !env.contains("PLANNER_SECRET") && !env.contains("x.so"),
        "{env}"
    );
    let note = f.note("fields");
    assert!(
        note.contains("Not passed to the worker: worker_call.cli_path"),
        "{note}"
    );
}

#[test]
fn m7_a_planner_without_its_key_fails_in_preflight_before_any_planner_call() {
    let f = Fixture::new(
        "nokey",
        GOOD_AGENT,
        &task("nokey", "true", "").replace("meta: {kind: mock}", "meta: {kind: openai-chat}"),
    );
    let o = f.run(&[
        "task.yaml",
        "--unsafe-local",
        "--result-file",
        "result.json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let result = f.result();
    assert_eq!(result["state"], "FAILED");
    assert!(
        result["summary"]
            .as_str()
            .unwrap()
            .contains("OPENAI_API_KEY"),
        "{result}"
    );
    assert!(!stderr(&o).contains("meta.plan_task"), "{}", stderr(&o));
}

#[test]
fn an_invalid_task_is_exit_2_naming_the_line_and_column() {
    let f = Fixture::new(
        "invalid",
        GOOD_AGENT,
        "version: 1\ntask:\n  id: bad\n  prd: {text: x}\n  tset: {command: true}\n",
    );
    let o = f.run(&["task.yaml", "--unsafe-local"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("task.yaml:5:3"), "{err}");
    assert!(err.contains("unknown key `tset`"), "{err}");
    assert!(!f.path().join("repo/.agent-runner").exists());

    // Usage errors are exit 2 as well; a missing file names itself.
    let o = f.run(&["missing.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("missing.yaml"), "{}", stderr(&o));
    let o = f.run(&["--no-such-flag"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn b1_a_quoted_version_is_read_with_a_warning_and_the_task_runs_from_stdin() {
    let f = Fixture::new(
        "quoted",
        GOOD_AGENT,
        &task("quoted", "grep -q Hello hello.txt", "").replace("version: 1", "version: \"1\""),
    );
    let text = std::fs::read(f.path().join("task.yaml")).unwrap();
    let mut child = f
        .command(&["--unsafe-local", "--result-file", "result.json"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), &text).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("warning"), "{}", stderr(&o));
    assert!(stderr(&o).contains("<stdin>:1:10"), "{}", stderr(&o));
    assert_eq!(f.result()["status"], "complete");
}

/// Waits until `path` exists (the fake agent started).
fn wait_for(path: &Path, child: &mut Child) {
    let until = Instant::now() + Duration::from_secs(60);
    while !path.exists() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("agent-runner ended before the agent started: {status}");
        }
        assert!(Instant::now() < until, "the agent never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The host's processes whose command line names `dir` (a fixture's: its agent, and the
/// namespace's first process that runs it). A local agent runs in a PID namespace of its
/// own, so the `$$` it records is not a pid the test can signal.
fn processes_naming(dir: &Path) -> Vec<Pid> {
    let needle = dir.display().to_string();
    let entries = std::fs::read_dir("/proc").into_iter().flatten().flatten();
    entries
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&needle))
        })
        .map(Pid::from_raw)
        .collect()
}

/// An agent that records its pid, then works for a long time.
const SLOW_AGENT: &str =
    "#!/bin/sh\ncat > /dev/null\necho $$ > ../agent.pid\nsleep 60\necho finished > ../agent.done\n";

#[test]
fn a_cancelled_task_exits_130_writes_its_note_and_stops_the_agent() {
    let f = Fixture::new("cancel", SLOW_AGENT, &task("cancel", "true", ""));
    let mut child = f
        .command(&[
            "task.yaml",
            "--unsafe-local",
            "--result-file",
            "result.json",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&f.path().join("agent.pid"), &mut child);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let result = f.result();
    assert_eq!(result["status"], "cancelled");
    assert_eq!(result["state"], "CANCELLED");
    assert_eq!(result["runs"][0]["ending"], "cancelled");
    assert!(f.note("cancel").contains("**cancelled** (exit code 130)"));
    let left = processes_naming(f.path());
    assert!(
        left.is_empty(),
        "the agent still runs after the cancel: {left:?}"
    );
}

/// The docker part of a task: a fake docker first on PATH, the image present, and the
/// agent inside the repository, where the "container" finds it under the mount.
fn docker_fixture(name: &str, agent: &str) -> (Fixture, FakeDocker) {
    let f = Fixture::new(
        name,
        agent,
        &task(name, "grep -q Hello hello.txt", "")
            .replace(
                "    kind: command\n",
                "    kind: command\n    docker_image: agent-image:test\n",
            )
            .replace(
                "command: [./agent.sh]",
                "command: [/workspace/project/agent.sh]",
            ),
    );
    std::fs::copy(f.path().join("agent.sh"), f.path().join("repo/agent.sh")).unwrap();
    let docker = FakeDocker::new(f.path());
    docker.mark("image-present");
    (f, docker)
}

fn with_fake_docker(command: &mut Command, docker: &FakeDocker) {
    let bin = docker.program.parent().unwrap().display().to_string();
    let path = std::env::var("PATH").unwrap_or_default();
    command.env("PATH", format!("{bin}:{path}"));
}

#[test]
fn b9_a_docker_task_works_in_a_named_labelled_container_that_is_removed() {
    let (f, docker) = docker_fixture("docker", GOOD_AGENT);
    let mut command = f.command(&["task.yaml", "--result-file", "result.json"]);
    with_fake_docker(&mut command, &docker);
    let o = command.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let calls = docker.calls();
    let verbs: Vec<&str> = calls.iter().map(|c| c[0].as_str()).collect();
    assert_eq!(
        verbs,
        [
            "version", "image", "run", "run", "exec", "pause", "run", "exec", "rm", "unpause", "rm"
        ],
        "{calls:?}"
    );
    // Preflight looked for the worker's program in a throwaway container of the image.
    assert_eq!(calls[2][..2], ["run", "--rm"], "{calls:?}");
    let run = &calls[3];
    let name = &run[run.iter().position(|a| a == "--name").unwrap() + 1];
    assert!(name.starts_with("agent-runner-docker-"), "{name}");
    assert!(
        run.contains(&"created-by=agent-runner".to_string()),
        "{run:?}"
    );
    assert!(run.contains(&"agent-image:test".to_string()), "{run:?}");
    // The test command ran in a container of its own, removed after it, while the
    // worker's was frozen.
    assert_eq!(calls[5], ["pause", name.as_str()]);
    let fresh = &calls[6][calls[6].iter().position(|a| a == "--name").unwrap() + 1];
    assert_ne!(fresh, name);
    assert_eq!(calls[7][1], *fresh);
    assert_eq!(calls[8], ["rm", "-f", fresh.as_str()]);
    assert_eq!(calls[9], ["unpause", name.as_str()]);
    assert_eq!(calls[10], ["rm", "-f", name.as_str()]);
    assert!(!docker.container_exists(name));
    assert_eq!(f.result()["status"], "complete");
}

#[test]
fn b8_sigterm_during_a_docker_run_still_removes_the_container() {
    let (f, docker) = docker_fixture("docker-cancel", SLOW_AGENT);
    let mut command = f.command(&["task.yaml", "--result-file", "result.json"]);
    with_fake_docker(&mut command, &docker);
    let mut child = command.stderr(Stdio::piped()).spawn().unwrap();
    wait_for(&f.path().join("agent.pid"), &mut child);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let calls = docker.calls();
    let last = calls.last().unwrap();
    assert_eq!(last[..2], ["rm", "-f"], "{calls:?}");
    assert!(!docker.container_exists(&last[2]));
    assert_eq!(f.result()["status"], "cancelled");
    assert!(!f.path().join("agent.done").exists());
}

#[test]
fn b2_the_planner_the_task_file_names_is_the_one_used() {
    // The original's orchestrator dropped `runner.meta`, so every task used the OpenAI
    // HTTP planner. Here the task's planner (the mock) runs, with no OpenAI key around.
    let f = Fixture::new("b2", GOOD_AGENT, &task("b2", "grep -q Hello hello.txt", ""));
    let o = f.run(&[
        "task.yaml",
        "--unsafe-local",
        "--result-file",
        "result.json",
        "--meta-model",
        "mock-large",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        f.note("b2").contains("| Planner | mock"),
        "{}",
        f.note("b2")
    );
}

/// An agent that ignores TERM, so stopping it takes the whole grace period.
const STUBBORN_AGENT: &str =
    "#!/bin/sh\ntrap '' TERM\ncat > /dev/null\necho $$ > ../agent.pid\nsleep 60 &\nwait\nwait\n";

#[test]
fn a_second_signal_stops_at_once() {
    let f = Fixture::new("twice", STUBBORN_AGENT, &task("twice", "true", ""));
    let mut child = f
        .command(&["task.yaml", "--unsafe-local", "--log-format", "json"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&f.path().join("agent.pid"), &mut child);
    let runner = Pid::from_raw(child.id() as i32);
    kill(runner, Signal::SIGINT).unwrap();
    // The first signal cancels: the agent ignores TERM, so the runner waits out its
    // grace period. The second one ends the runner without waiting.
    std::thread::sleep(Duration::from_millis(300));
    let second = Instant::now();
    kill(runner, Signal::SIGINT).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(
        second.elapsed() < Duration::from_secs(3),
        "{:?}",
        second.elapsed()
    );
    // JSON logs: every stderr line is a JSON object, and the cancel was logged.
    let err = stderr(&o);
    assert!(
        err.lines()
            .all(|l| serde_json::from_str::<Value>(l).is_ok()),
        "{err}"
    );
    assert!(err.contains("cancelling the task"), "{err}");
    // No finalizers ran, but the agent did not outlive the runner.
    let until = Instant::now() + Duration::from_secs(5);
    while !processes_naming(f.path()).is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survived = processes_naming(f.path());
    for pid in &survived {
        let _ = kill(*pid, Signal::SIGKILL);
    }
    assert!(
        survived.is_empty(),
        "the agent outlived the runner: {survived:?}"
    );
}

#[test]
fn b8_a_second_signal_still_removes_the_container() {
    let (f, docker) = docker_fixture("docker-twice", STUBBORN_AGENT);
    let mut command = f.command(&["task.yaml"]);
    with_fake_docker(&mut command, &docker);
    let mut child = command.stderr(Stdio::piped()).spawn().unwrap();
    wait_for(&f.path().join("agent.pid"), &mut child);
    let runner = Pid::from_raw(child.id() as i32);
    kill(runner, Signal::SIGTERM).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    kill(runner, Signal::SIGTERM).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let calls = docker.calls();
    let removed = calls.iter().any(|c| c.len() == 3 && c[..2] == ["rm", "-f"]);
    assert!(removed, "{calls:?}");
    // The fake's "container" is the host: its agent is stopped by the test.
    if let Ok(pid) = std::fs::read_to_string(f.path().join("agent.pid"))
        && let Ok(pid) = pid.trim().parse::<i32>()
    {
        let _ = nix::sys::signal::killpg(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

#[test]
fn a_planner_that_gives_up_on_failing_tests_fails_the_task() {
    // The mock decides on what it sees: after a failed test it aborts (scripted on the
    // request's evidence, as a real planner would read it).
    let f = Fixture::new(
        "gives-up",
        GOOD_AGENT,
        &task("gives-up", "grep -q Goodbye hello.txt", "").replace(
            "meta: {kind: mock}",
            "meta: {kind: mock, script: script.yaml}",
        ),
    );
    std::fs::write(
        f.path().join("script.yaml"),
        "- protocol: next_action\n  when: {last_test: {exit_code: 1}}\n  reply: {type: next_action, version: 1, payload: {decision: {action: abort, reason: the tests cannot pass}}}\n",
    )
    .unwrap();
    let o = f.run(&[
        "task.yaml",
        "--unsafe-local",
        "--result-file",
        "result.json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let result = f.result();
    assert_eq!(result["status"], "failed");
    assert_eq!(result["validation"]["test"]["passed"], false);
    assert_eq!(result["runs"].as_array().unwrap().len(), 1);
}

#[test]
fn a_worker_that_keeps_failing_exhausts_its_loops_with_exit_3() {
    // The agent exits 2 every time; the mock runs it again until max_loops (3) runs
    // happened, and the decision for a fourth ends the task.
    let failing = "#!/bin/sh\ncat > /dev/null\necho 'cannot build' >&2\nexit 2\n";
    let f = Fixture::new("exhausted", failing, &task("exhausted", "true", ""));
    let o = f.run(&[
        "task.yaml",
        "--unsafe-local",
        "--result-file",
        "result.json",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let result = f.result();
    assert_eq!(result["status"], "incomplete");
    let runs = result["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    assert!(runs.iter().all(|r| r["exit_code"] == 2));
    assert!(
        f.note("exhausted").contains("used all its worker runs"),
        "{}",
        f.note("exhausted")
    );
}

#[test]
fn a_relative_command_in_docker_is_resolved_in_the_container() {
    // `./agents/fix.sh` lives in the repository only: the container finds it under the
    // mount, where the worker runs. Joined to the task file's directory it would be a host
    // path that no container has (and here not even the host).
    let (f, docker) = docker_fixture("docker-relative", GOOD_AGENT);
    let text = std::fs::read_to_string(f.path().join("task.yaml")).unwrap();
    let text = text.replace(
        "command: [/workspace/project/agent.sh]",
        "command: [./agents/fix.sh]",
    );
    std::fs::write(f.path().join("task.yaml"), text).unwrap();
    std::fs::create_dir_all(f.path().join("repo/agents")).unwrap();
    write_script(&f.path().join("repo/agents/fix.sh"), GOOD_AGENT);
    let mut command = f.command(&["task.yaml", "--result-file", "result.json"]);
    with_fake_docker(&mut command, &docker);
    let o = command.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(f.result()["status"], "complete");
    let calls = docker.calls();
    let exec = calls
        .iter()
        .find(|c| c[0] == "exec" && c.iter().any(|a| a.ends_with("fix.sh")))
        .unwrap_or_else(|| panic!("no exec of the agent: {calls:?}"));
    assert!(exec.contains(&"./agents/fix.sh".to_string()), "{exec:?}");
    let host = f.path().display().to_string();
    assert!(!exec.iter().any(|a| a.contains(&host)), "{exec:?}");
}

#[test]
fn a_relative_command_on_the_host_is_relative_to_the_task_file() {
    // Started from elsewhere (`/`), the local worker still finds `./agent.sh` beside the
    // task file.
    let f = Fixture::new(
        "local-relative",
        GOOD_AGENT,
        &task("local-relative", "grep -q Hello hello.txt", ""),
    );
    let task_file = f.path().join("task.yaml").display().to_string();
    let o = f
        .command(&[&task_file, "--unsafe-local", "--result-file"])
        .arg(f.path().join("result.json"))
        .current_dir("/")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(f.result()["status"], "complete");
}

#[test]
fn no_task_and_a_terminal_on_stdin_prints_usage_and_exits_2() {
    // stdin a pseudo-terminal (python3's `pty`), stderr a pipe: before, the runner
    // waited for YAML on the terminal until the timeout below.
    let script = r#"
import os, pty, subprocess, sys
master, slave = pty.openpty()
try:
    p = subprocess.run([sys.argv[1]], stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=20)
except subprocess.TimeoutExpired:
    print("timeout"); sys.exit(0)
sys.stdout.write("exit=%d\n" % p.returncode)
sys.stdout.write(p.stderr.decode())
"#;
    let o = crate::sealed::command("python3")
        .arg("-c")
        .arg(script)
        .arg(binary())
        .output()
        .expect("python3 runs");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("exit=2\n"), "{out}{}", stderr(&o));
    assert!(out.contains("stdin is a terminal"), "{out}");
    assert!(out.contains("Usage: agent-runner"), "{out}");
}

#[test]
fn a_missing_command_script_is_reported_as_a_missing_file() {
    let f = Fixture::new(
        "missing-script",
        GOOD_AGENT,
        &task("missing-script", "true", "").replace("[./agent.sh]", "[./agents/nope.sh]"),
    );
    let o = f.run(&[
        "task.yaml",
        "--unsafe-local",
        "--result-file",
        "result.json",
    ]);
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
    let all = format!("{}{}", stderr(&o), f.result());
    assert!(all.contains("agents/nope.sh"), "{all}");
    assert!(!all.contains("nope.sh` was not found on PATH"), "{all}");
}

#[test]
fn an_empty_task_says_it_is_empty() {
    let f = Fixture::new("empty", GOOD_AGENT, "");
    for args in [&["task.yaml"][..], &[]] {
        let o = f.run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("the task file is empty") && !stderr(&o).contains("null"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

/// The address space the binary runs in for the size tests (1 GiB): several times what it
/// needs (its threads' arenas reserve some 170 MiB), half the size of the file they give
/// it, so a binary that read the file whole would die for want of memory.
const SIZE_TEST_ADDRESS_SPACE_KIB: u32 = 1024 * 1024;
/// The task file the size tests give: 2 GiB (sparse, or through a FIFO: free to make).
const HUGE_TASK_BYTES: u64 = 2 * 1024 * 1024 * 1024;

/// `agent-runner ARGS` in the fixture's directory, in an address space of
/// [`SIZE_TEST_ADDRESS_SPACE_KIB`] (`ulimit -v`).
fn run_in_small_address_space(f: &Fixture, args: &[&str]) -> Output {
    let script = format!("ulimit -v {SIZE_TEST_ADDRESS_SPACE_KIB} && exec \"$0\" \"$@\"");
    crate::sealed::command("sh")
        .arg("-c")
        .arg(script)
        .arg(binary())
        .args(args)
        .current_dir(f.path())
        .env("HOME", f.path().join("home"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A task file over the limit is refused by its size before a byte of it is read: the
/// error names the file, its size and the limit, with its key. The file is sparse (free to
/// make), and the binary runs in half its size of address space, so reading it whole
/// would have killed it.
#[test]
fn a_task_file_over_the_limit_is_refused_unread_naming_its_size_and_the_limit() {
    let f = Fixture::new("huge", GOOD_AGENT, "");
    let huge = std::fs::File::create(f.path().join("huge.yaml")).unwrap();
    huge.set_len(HUGE_TASK_BYTES).unwrap();
    drop(huge);
    let o = run_in_small_address_space(&f, &["huge.yaml"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(
        err,
        format!(
            "agent-runner: huge.yaml is {HUGE_TASK_BYTES} bytes, over the {}-byte limit of a task file; it was not read [task.too_large]\n",
            code_intel::runner::task::MAX_TASK_BYTES
        )
    );
}

/// A task file whose size says nothing (a FIFO, as `agent-runner <(make-task)` gives; a
/// file that grows while it is read looks the same) is read only to one byte past the
/// limit: 2 GiB written into it are refused, not read whole.
#[test]
fn a_task_file_that_outgrows_its_size_is_read_only_to_the_limit() {
    let f = Fixture::new("fifo", GOOD_AGENT, "");
    let fifo = f.path().join("task.fifo");
    let made = crate::sealed::command("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // The writer blocks until agent-runner opens the FIFO, and dies of SIGPIPE when it
    // stops reading.
    let mut writer = crate::sealed::command("sh")
        .arg("-c")
        .arg(format!("head -c {HUGE_TASK_BYTES} /dev/zero > task.fifo"))
        .current_dir(f.path())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let o = run_in_small_address_space(&f, &["task.fifo"]);
    // Had agent-runner never opened the FIFO, the writer would wait forever.
    let _ = writer.kill();
    let _ = writer.wait();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(
        err,
        format!(
            "agent-runner: task.fifo holds more than the {}-byte limit of a task file; reading stopped there [task.too_large]\n",
            code_intel::runner::task::MAX_TASK_BYTES
        )
    );
}

/// A planner model that starts with `-` would be an option on the planner CLI's command
/// line: from `--meta-model` and from the task file alike it is refused with its key, exit
/// 2, before anything runs.
#[test]
fn a_planner_model_that_looks_like_an_option_is_refused_before_anything_runs() {
    let f = Fixture::new(
        "option-model",
        GOOD_AGENT,
        &task("option-model", "true", "").replace(
            "meta: {kind: mock}",
            "meta: {kind: claude-code, command: ./agent.sh}",
        ),
    );
    let o = f.run(&[
        "task.yaml",
        "--unsafe-local",
        "--meta-model=--dangerously-skip-permissions",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "agent-runner: --meta-model: the model \"--dangerously-skip-permissions\" starts with `-`, which a CLI would read as an option, not a model [model.leading_dash]\n"
    );
    std::fs::write(
        f.path().join("task.yaml"),
        task("option-model", "true", "").replace(
            "meta: {kind: mock}",
            "meta: {kind: claude-code, command: ./agent.sh, model: --dangerously-skip-permissions}",
        ),
    )
    .unwrap();
    let o = f.run(&["task.yaml", "--unsafe-local"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "`runner.meta.model`: the model \"--dangerously-skip-permissions\" starts with `-`"
        ) && err.contains("(model.leading_dash)")
            && err.contains("task.yaml:14:"),
        "{err}"
    );
    assert!(!f.path().join("repo/.agent-runner").exists());
}
