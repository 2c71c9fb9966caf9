//! Multiverse's executor against the real `agent-runner` binary: an attempt runs a task
//! written from its design (mock planner, a shell worker with `--unsafe-local`, a real git
//! repository), and its end is read from the exit code and the result JSON; a stop is a
//! SIGTERM that agent-runner turns into a cancelled task with its note. A failed attempt's
//! summary, which Multiverse shows as the task's reason, says what went wrong (the tests'
//! failure, the worker's exit, the planner's reason), never agent-runner's transitions.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use code_intel::multiverse::{RunRequest, RunnerSettings, TaskDesign, TaskId, launch};
use serde_json::json;

use crate::support::TempDir;

fn design(id: &str, test: &str) -> TaskDesign {
    TaskDesign {
        id: TaskId::parse(id).unwrap(),
        title: format!("task {id}"),
        description: "write done.txt".into(),
        acceptance_criteria: vec!["done.txt exists".into()],
        suggested_impl: None,
        dependencies: vec![],
        milestone: None,
        phase: None,
        pool: "default".into(),
        priority: 0,
        runner: RunnerSettings {
            max_loops: Some(1),
            worker_kind: None,
            test_command: Some(test.into()),
        },
        created_at: "2026-11-27T00:00:00Z".into(),
        updated_at: "2026-11-27T00:00:00Z".into(),
        created_by: "user".into(),
    }
}

fn request(dir: &Path, worker: &str, attempt: u32) -> RunRequest {
    let repo = dir.join("repo");
    if !repo.exists() {
        std::fs::create_dir_all(&repo).unwrap();
        crate::support::git_repo(&repo, &[("README.md", "# repo\n")]);
    }
    RunRequest {
        program: PathBuf::from(env!("CARGO_BIN_EXE_agent-runner")),
        extra_args: vec!["--unsafe-local".into()],
        project_root: repo,
        run_dir: dir.join("runs").join(attempt.to_string()),
        runner_defaults: json!({
            "meta": {"kind": "mock"},
            "worker": {"kind": "command", "command": ["sh", "-c", worker], "max_run_time_sec": 60},
        }),
    }
}

#[test]
fn an_attempt_runs_agent_runner_and_reads_its_result() {
    let dir = TempDir::new("mv-exec-ok");
    let req = request(dir.path(), "cat > /dev/null; echo done > done.txt", 1);
    let running = launch(&design("t-ok", "test -f done.txt"), &req).unwrap();
    let end = running.wait();
    let stderr = std::fs::read_to_string(req.run_dir.join("stderr.log")).unwrap_or_default();
    assert_eq!(end.exit_code, Some(0), "{end:?}\n{stderr}");
    assert_eq!(end.status.as_deref(), Some("complete"));
    assert_eq!(end.files_changed, ["done.txt"]);
    // Every attempt keeps its task file, result, events and a copy of the note.
    for file in ["task.yaml", "result.json", "events.jsonl", "note.md"] {
        assert!(req.run_dir.join(file).is_file(), "{file} missing");
    }
    assert_eq!(end.note, Some(req.run_dir.join("note.md")));
}

#[test]
fn a_failing_test_ends_incomplete_not_succeeded() {
    // The original took "the process exited 0" for success; here the status decides.
    let dir = TempDir::new("mv-exec-fail");
    let req = request(dir.path(), "cat > /dev/null; echo done > done.txt", 1);
    let end = launch(&design("t-fail", "false"), &req).unwrap().wait();
    assert_eq!(end.exit_code, Some(3), "{end:?}");
    assert_eq!(end.status.as_deref(), Some("incomplete"));
    assert!(!end.summary.is_empty());
}

#[test]
fn a_stop_is_a_cancelled_task_with_its_note() {
    let dir = TempDir::new("mv-exec-stop");
    let req = request(dir.path(), "cat > /dev/null; touch started; sleep 60", 1);
    let running = launch(&design("t-stop", "true"), &req).unwrap();
    let started = req.project_root.join("started");
    let until = Instant::now() + Duration::from_secs(60);
    while !started.exists() {
        assert!(Instant::now() < until, "the worker never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let asked = Instant::now();
    assert!(running.terminate());
    let end = running.wait();
    assert_eq!(end.exit_code, Some(130), "{end:?}");
    assert_eq!(end.status.as_deref(), Some("cancelled"));
    assert!(
        asked.elapsed() < Duration::from_secs(20),
        "{:?}",
        asked.elapsed()
    );
    assert!(end.note.is_some());
    // Waiting again gives the same end at once.
    assert_eq!(running.wait().exit_code, Some(130));
    // Once reaped, nothing is signalled: the pid may belong to another process now.
    assert!(!running.terminate());
    assert!(!running.kill());
}

#[test]
fn a_missing_agent_runner_is_a_launch_error_naming_it() {
    let dir = TempDir::new("mv-exec-missing");
    let mut req = request(dir.path(), "true", 1);
    req.program = dir.path().join("no-such-agent-runner");
    let err = launch(&design("t-missing", "true"), &req).unwrap_err();
    assert!(err.to_string().contains("no-such-agent-runner"), "{err}");
}

/// What a failed attempt's summary must never be: agent-runner's own flow, a transition
/// (`RUNNING -> INCOMPLETE: ...`) or its contract's message for it.
fn assert_not_the_flows_text(summary: &str) {
    for flow in [
        " -> ",
        "RUNNING",
        "INCOMPLETE",
        "FAILED",
        "back to work",
        "used all its worker runs",
        "The planner aborted the task.",
    ] {
        assert!(!summary.contains(flow), "{flow:?} in {summary:?}");
    }
}

#[test]
fn a_failed_attempts_summary_is_the_tests_failure() {
    let dir = TempDir::new("mv-exec-why-tests");
    let req = request(dir.path(), "cat > /dev/null; echo done > done.txt", 1);
    let test = "echo running 1 test; echo \"expected hello, found nothing\"; exit 1";
    let end = launch(&design("t-why-tests", test), &req).unwrap().wait();
    assert_eq!(end.status.as_deref(), Some("incomplete"), "{end:?}");
    assert_eq!(
        end.summary,
        "After 1 worker run (runner.max_loops): The tests failed (exit code 1): expected hello, found nothing"
    );
    assert_not_the_flows_text(&end.summary);
}

#[test]
fn a_failed_attempts_summary_is_the_workers_exit_and_last_words() {
    let dir = TempDir::new("mv-exec-why-worker");
    let worker =
        "cat > /dev/null; echo 'compiling'; echo 'error: cannot find crate serde' >&2; exit 3";
    let req = request(dir.path(), worker, 1);
    let end = launch(&design("t-why-worker", "true"), &req)
        .unwrap()
        .wait();
    assert_eq!(end.status.as_deref(), Some("incomplete"), "{end:?}");
    assert_eq!(
        end.summary,
        "After 1 worker run (runner.max_loops): run-1: the worker exited with code 3: error: cannot find crate serde"
    );
    assert_not_the_flows_text(&end.summary);
}

#[test]
fn a_failed_attempts_summary_is_the_planners_reason_to_give_up() {
    let dir = TempDir::new("mv-exec-why-planner");
    let mut req = request(dir.path(), "cat > /dev/null; echo done > done.txt", 1);
    let script = dir.path().join("planner.yaml");
    std::fs::write(
        &script,
        "- protocol: next_action\n  reply: {type: next_action, version: 1, payload: {decision: {action: abort, reason: the PRD asks for a database this repository does not have}}}\n",
    )
    .unwrap();
    req.runner_defaults["meta"] = json!({"kind": "mock", "script": script});
    let end = launch(&design("t-why-planner", "true"), &req)
        .unwrap()
        .wait();
    assert_eq!(end.exit_code, Some(1), "{end:?}");
    assert_eq!(end.status.as_deref(), Some("failed"));
    assert_eq!(
        end.summary,
        "The planner gave up: the PRD asks for a database this repository does not have"
    );
    assert_not_the_flows_text(&end.summary);
}
