//! Multiverse's task lifecycle driven through the real contract
//! (`contracts/multiverse_task.yml`, compiled into the binary) by a stand-in scheduler that
//! performs the effects the contract asks for on a task's record and a controllable clock,
//! as the real scheduler does on the workspace: the retry policy, the backlog, cancel,
//! crash recovery, questions and dependencies; and once with real `agent-runner` attempts
//! (the executor, the mock planner, a shell worker) whose ends decide the task.

use std::time::Duration;

use code_intel::contract::Outcome;
use code_intel::machine::Instance;
use code_intel::multiverse::{
    AttemptEnd, BacklogKind, Lifecycle, NodeStatus, Refusal, RunRequest, RunnerSettings, Submitted,
    TaskDesign, TaskEffect, TaskEvent, TaskId, Transition, launch,
};
use serde_json::{Map, json};

use crate::support::TempDir;

/// One task as the scheduler keeps it: its session, what the effects changed, and the
/// clock the retry times are set on.
struct Board {
    lifecycle: Lifecycle,
    task: Instance,
    node: NodeStatus,
    blocked_reason: Option<String>,
    next_retry_at_ms: Option<u64>,
    backlog: Vec<(BacklogKind, Option<String>)>,
    now_ms: u64,
    /// Every delay a retry was scheduled with, in order.
    delays: Vec<Duration>,
}

impl Board {
    fn new() -> Board {
        Board::with(Map::new())
    }

    fn with(params: Map<String, serde_json::Value>) -> Board {
        let lifecycle = Lifecycle::load().unwrap();
        let task = lifecycle.start(&params, "en").unwrap();
        Board {
            lifecycle,
            task,
            node: NodeStatus::Planned,
            blocked_reason: None,
            next_retry_at_ms: None,
            backlog: Vec::new(),
            now_ms: 1_000_000,
            delays: Vec::new(),
        }
    }

    fn state(&self) -> &str {
        &self.task.state
    }

    fn apply(&mut self, submitted: Submitted) -> Result<Transition, Refusal> {
        match submitted {
            Submitted::Accepted(t) => {
                for effect in &t.effects {
                    match effect {
                        TaskEffect::SetNode { status, reason } => {
                            self.node = *status;
                            self.blocked_reason = reason.clone();
                        }
                        TaskEffect::ScheduleRetry { delay, .. } => {
                            self.delays.push(*delay);
                            let ms = u64::try_from(delay.as_millis()).unwrap();
                            self.next_retry_at_ms = Some(self.now_ms + ms);
                        }
                        TaskEffect::AddBacklog { kind, reason } => {
                            self.backlog.push((*kind, reason.clone()));
                        }
                    }
                }
                self.task = t.instance.clone();
                Ok(*t)
            }
            Submitted::Rejected(r) => Err(r),
        }
    }

    fn submit(&mut self, event: TaskEvent) -> Result<Transition, Refusal> {
        let submitted = self.lifecycle.submit(&self.task, &event);
        self.apply(submitted)
    }

    fn cancel(&mut self) -> Result<Transition, Refusal> {
        let submitted = self.lifecycle.cancel(&self.task);
        self.apply(submitted)
    }

    /// The scheduler's tick: a task waiting to be retried is due once the clock passes
    /// its time, not before.
    fn tick(&mut self, advance: Duration) {
        self.now_ms += u64::try_from(advance.as_millis()).unwrap();
        if let Some(at) = self.next_retry_at_ms
            && self.now_ms >= at
        {
            self.next_retry_at_ms = None;
            self.submit(TaskEvent::RetryDue).unwrap();
        }
    }

    fn run(&mut self, end: TaskEvent) -> Transition {
        self.submit(TaskEvent::Start).unwrap();
        assert_eq!(self.node, NodeStatus::InProgress);
        self.submit(end).unwrap()
    }
}

fn ready() -> TaskEvent {
    TaskEvent::Deps {
        ready: true,
        failed: Vec::new(),
        reason: None,
    }
}

fn exited(code: i32, status: &str, summary: &str) -> TaskEvent {
    TaskEvent::Exited {
        exit_code: code,
        status: Some(status.into()),
        summary: Some(summary.into()),
    }
}

#[test]
fn a_task_runs_and_succeeds_with_its_node_implemented() {
    let mut board = Board::new();
    assert_eq!(board.state(), "PENDING");
    board.submit(ready()).unwrap();
    assert_eq!(board.state(), "READY");
    let done = board.run(exited(0, "complete", "all criteria met"));
    assert_eq!(done.finished, Some(Outcome::Success));
    assert_eq!(board.state(), "SUCCEEDED");
    assert_eq!(board.node, NodeStatus::Implemented);
    assert!(board.backlog.is_empty() && board.delays.is_empty());
    // Exit 0 alone is not success: without `complete` it is a failed attempt.
    let mut other = Board::new();
    other.submit(ready()).unwrap();
    other.run(exited(0, "incomplete", "loops ran out"));
    assert_eq!(other.state(), "RETRY_WAIT");
}

#[test]
fn a_task_that_fails_twice_passes_on_the_third_attempt_after_5_then_10_seconds() {
    let mut board = Board::new();
    board.submit(ready()).unwrap();
    board.run(exited(1, "failed", "tests fail"));
    assert_eq!(board.state(), "RETRY_WAIT");
    // Not due before its time: the clock decides, not the order of events.
    board.tick(Duration::from_millis(4_999));
    assert_eq!(board.state(), "RETRY_WAIT");
    board.tick(Duration::from_millis(1));
    assert_eq!(board.state(), "READY");
    board.run(exited(3, "incomplete", "loops ran out"));
    board.tick(Duration::from_secs(9));
    assert_eq!(board.state(), "RETRY_WAIT");
    board.tick(Duration::from_secs(1));
    assert_eq!(board.state(), "READY");
    let done = board.run(exited(0, "complete", "done"));
    assert_eq!(done.finished, Some(Outcome::Success));
    assert_eq!(
        board.delays,
        [Duration::from_secs(5), Duration::from_secs(10)]
    );
    assert!(board.backlog.is_empty());
}

#[test]
fn a_task_that_always_fails_ends_failed_with_a_failure_backlog_item() {
    let mut board = Board::new();
    board.submit(ready()).unwrap();
    for _ in 0..2 {
        board.run(exited(1, "failed", "tests fail"));
        board.tick(Duration::from_secs(300));
    }
    let last = board.run(exited(7, "failed", "the worker crashed"));
    assert_eq!(last.finished, Some(Outcome::Failure));
    assert_eq!(board.state(), "FAILED");
    assert_eq!(board.delays.len(), 2, "no retry after the last attempt");
    assert_eq!(
        board.backlog,
        [(BacklogKind::Failure, Some("the worker crashed".into()))]
    );
    assert_eq!(board.node, NodeStatus::Planned);
    let message = last.message.unwrap();
    assert_eq!(message.error.as_deref(), Some("task_failed"));
    assert!(message.text.contains("3 attempts"), "{}", message.text);
    // A finished task takes no more attempt events.
    let refused = board.submit(TaskEvent::Start).unwrap_err();
    assert_eq!(refused.key, "task_finished");
}

#[test]
fn a_cancel_mid_run_ends_canceled_with_no_retry() {
    let mut board = Board::new();
    board.submit(ready()).unwrap();
    board.submit(TaskEvent::Start).unwrap();
    let cancelled = board.cancel().unwrap();
    assert_eq!(cancelled.finished, Some(Outcome::Cancelled));
    assert_eq!(board.state(), "CANCELED");
    // Nothing is retried or filed; the node goes back to planned (the contract's finally).
    assert!(board.delays.is_empty() && board.backlog.is_empty());
    assert_eq!(board.node, NodeStatus::Planned);
    assert_eq!(board.task.counters["attempts"], 0);
    // The run's end arriving after the cancel changes nothing.
    let late = board
        .submit(exited(130, "cancelled", "stopped"))
        .unwrap_err();
    assert_eq!(late.key, "task_finished");
    board.tick(Duration::from_secs(3_600));
    assert_eq!(board.state(), "CANCELED");
    // A cancelled agent-runner (exit 130, e.g. the daemon's stop) is a cancel too.
    let mut stopped = Board::new();
    stopped.submit(ready()).unwrap();
    let t = stopped.run(exited(130, "cancelled", "stopped"));
    assert_eq!(t.finished, Some(Outcome::Cancelled));
    assert!(stopped.delays.is_empty() && stopped.backlog.is_empty());
}

#[test]
fn an_interrupted_attempt_is_queued_again_and_counts_against_the_attempts() {
    let mut board = Board::new();
    board.submit(ready()).unwrap();
    board.submit(TaskEvent::Start).unwrap();
    let requeued = board.submit(TaskEvent::Interrupted).unwrap();
    assert_eq!(requeued.to, "READY");
    assert!(
        board.delays.is_empty(),
        "re-queued at once, without a backoff"
    );
    assert_eq!(board.task.counters["attempts"], 1);
    board.run(TaskEvent::Interrupted);
    let last = board.run(TaskEvent::Interrupted);
    assert_eq!(last.finished, Some(Outcome::Failure));
    assert_eq!(board.backlog[0].0, BacklogKind::Failure);
    // Only a running task can be interrupted.
    let mut idle = Board::new();
    assert_eq!(
        idle.submit(TaskEvent::Interrupted).unwrap_err().key,
        "event_not_accepted"
    );
}

#[test]
fn needs_human_files_a_question_and_the_answer_retries_with_fresh_attempts() {
    let mut board = Board::new();
    board.submit(ready()).unwrap();
    board.run(exited(1, "failed", "tests fail"));
    board.tick(Duration::from_secs(5));
    let end = AttemptEnd {
        exit_code: Some(4),
        status: Some("needs_human".into()),
        summary: "the planner needs a person".into(),
        question: Some("Postgres or SQLite?".into()),
        files_changed: Vec::new(),
        duration: Duration::from_secs(3),
        note: None,
    };
    let asked = board.run(TaskEvent::from(&end));
    assert_eq!(asked.to, "BLOCKED");
    assert_eq!(asked.finished, None);
    assert_eq!(
        board.backlog,
        [(BacklogKind::Question, Some("Postgres or SQLite?".into()))]
    );
    assert_eq!(board.node, NodeStatus::Blocked);
    assert_eq!(board.blocked_reason.as_deref(), Some("Postgres or SQLite?"));
    // Its dependencies being done does not answer it.
    assert_eq!(board.submit(ready()).unwrap_err().key, "waits_for_answer");
    // The backlog item is resolved: the scheduler submits `retry`.
    let answered = board.submit(TaskEvent::Retry).unwrap();
    assert_eq!(answered.to, "READY");
    assert_eq!(board.task.counters["attempts"], 0, "fresh attempts");
    assert_eq!(board.node, NodeStatus::Planned);
    let done = board.run(exited(0, "complete", "done"));
    assert_eq!(done.finished, Some(Outcome::Success));
}

#[test]
fn a_dependency_that_failed_for_good_blocks_the_task_with_the_reason() {
    let mut board = Board::new();
    let blocked = board
        .submit(TaskEvent::Deps {
            ready: false,
            failed: vec![TaskId::parse("t1").unwrap()],
            reason: Some("t1 failed after 3 attempts".into()),
        })
        .unwrap();
    assert_eq!(blocked.to, "BLOCKED");
    assert_eq!(board.node, NodeStatus::Blocked);
    assert_eq!(
        board.blocked_reason.as_deref(),
        Some("t1 failed after 3 attempts")
    );
    assert_eq!(
        board.task.vars["blocked_reason"],
        json!("t1 failed after 3 attempts")
    );
    assert!(
        blocked.message.unwrap().text.contains("t1 failed"),
        "the reason is shown"
    );
    // It cannot start, and a retry is for the dependency.
    assert_eq!(
        board.submit(TaskEvent::Start).unwrap_err().key,
        "event_not_accepted"
    );
    assert_eq!(
        board.submit(TaskEvent::Retry).unwrap_err().key,
        "retry_the_dependency"
    );
    // The dependency was retried and is done: the task is ready.
    board.submit(ready()).unwrap();
    assert_eq!(board.state(), "READY");
    assert_eq!(board.node, NodeStatus::Planned);
    assert_eq!(board.blocked_reason, None);
}

#[test]
fn a_failed_task_is_retried_from_the_backlog_as_a_new_session() {
    let mut params = Map::new();
    params.insert("max_attempts".into(), json!(1));
    let mut board = Board::with(params);
    board.submit(ready()).unwrap();
    board.run(exited(1, "failed", "tests fail"));
    assert_eq!(board.state(), "FAILED");
    assert_eq!(board.backlog.len(), 1);
    let retried = board.submit(TaskEvent::Retry).unwrap();
    assert!(retried.restarted);
    assert_eq!(
        (retried.from.as_str(), retried.to.as_str()),
        ("FAILED", "PENDING")
    );
    // Fresh attempts, the session's own policy kept.
    assert_eq!(board.task.counters["attempts"], 0);
    assert_eq!(board.task.params["max_attempts"], json!(1));
    board.submit(ready()).unwrap();
    let done = board.run(exited(0, "complete", "fixed"));
    assert_eq!(done.finished, Some(Outcome::Success));
    // A task that succeeded is not retried.
    assert_eq!(
        board.submit(TaskEvent::Retry).unwrap_err().key,
        "task_finished"
    );
}

#[test]
fn which_finished_tasks_may_be_retried_is_the_contracts_param() {
    let mut params = Map::new();
    params.insert("retryable_outcomes".into(), json!(["failure"]));
    let mut board = Board::with(params);
    board.submit(ready()).unwrap();
    board.cancel().unwrap();
    assert_eq!(
        board.submit(TaskEvent::Retry).unwrap_err().key,
        "task_finished"
    );
}

#[test]
fn a_malformed_event_is_refused_by_the_engine() {
    let lifecycle = Lifecycle::load().unwrap();
    let task = lifecycle.start(&Map::new(), "en").unwrap();
    for payload in [
        json!({"event": "deps", "ready": true}),
        json!({"event": "deps", "ready": true, "failed": [], "extra": 1}),
        json!({"ready": true, "failed": []}),
        json!("deps"),
    ] {
        let refused = lifecycle.submit_payload(&task, payload.clone());
        let refusal = refused.rejected().unwrap_or_else(|| panic!("{payload}"));
        assert!(
            ["payload_invalid", "event_not_accepted"].contains(&refusal.key.as_str()),
            "{payload}: {refusal:?}"
        );
    }
    assert_eq!(
        lifecycle
            .submit_payload(&task, json!({"event": "launch"}))
            .rejected()
            .unwrap()
            .key,
        "event_not_accepted"
    );
}

/// A task for the real `agent-runner`: the shell worker writes done.txt, `test` decides.
fn design(test: &str) -> TaskDesign {
    TaskDesign {
        id: TaskId::parse("t-life").unwrap(),
        title: "write done.txt".into(),
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

#[test]
fn real_agent_runner_attempts_decide_the_task_an_incomplete_one_is_retried() {
    let dir = TempDir::new("mv-life-real");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    crate::support::git_repo(&repo, &[("README.md", "# repo\n")]);
    let request = |attempt: u32| RunRequest {
        program: std::path::PathBuf::from(env!("CARGO_BIN_EXE_agent-runner")),
        extra_args: vec!["--unsafe-local".into()],
        project_root: repo.clone(),
        run_dir: dir.path().join("runs").join(attempt.to_string()),
        runner_defaults: json!({
            "meta": {"kind": "mock"},
            "worker": {"kind": "command", "command": ["sh", "-c", "cat > /dev/null; echo done > done.txt"], "max_run_time_sec": 60},
        }),
    };
    let mut board = Board::new();
    board.submit(ready()).unwrap();
    // Attempt 1: its test command fails, so agent-runner ends incomplete (exit 3).
    board.submit(TaskEvent::Start).unwrap();
    let end = launch(&design("false"), &request(1)).unwrap().wait();
    assert_eq!(
        (end.exit_code, end.status.as_deref()),
        (Some(3), Some("incomplete"))
    );
    let t = board.submit(TaskEvent::from(&end)).unwrap();
    assert_eq!(t.to, "RETRY_WAIT");
    assert_eq!(board.delays, [Duration::from_secs(5)]);
    board.tick(Duration::from_secs(5));
    // Attempt 2 passes: exit 0 with a complete result.
    board.submit(TaskEvent::Start).unwrap();
    let end = launch(&design("test -f done.txt"), &request(2))
        .unwrap()
        .wait();
    let t = board.submit(TaskEvent::from(&end)).unwrap();
    assert_eq!(t.finished, Some(Outcome::Success), "{end:?}");
    assert_eq!(board.node, NodeStatus::Implemented);
    assert!(board.backlog.is_empty());
}
