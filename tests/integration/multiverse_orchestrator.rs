//! Multiverse's orchestrator on a real workspace (journal, lock, state files) with a fake
//! `agent-runner` (a shell script that answers each task's attempts with scripted exit
//! codes and result JSON, logging when each starts and ends), the real lifecycle contract,
//! and a manual clock where the backoff is observed: dependency order, two at a time in
//! one pool, fail-fail-pass after 5 s and 10 s, a task that always fails ends in the
//! backlog and blocks its dependents with the reason, a cancel mid-run is no failure, a
//! crash mid-run is recovered, and a chat request with the mock planner plans and runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use code_intel::multiverse::{
    ChatLog, Clock, EventHub, ExecutionState, ManualClock, Orchestrator, Pools, RunnerSettings,
    Settings, SystemClock, TaskDesign, TaskId, TurnSettings, Workspace, chat_turn,
};
use code_intel::runner::{Cancel, MetaConfig, Planner};
use serde_json::{Map, Value, json};

use crate::support::TempDir;

/// The fake agent-runner. `plan-<id>` lists an exit code per attempt (default 0);
/// `sleep` sleeps until stopped. It logs `start <id>` and `end <id> <code>` with a time.
const FAKE_AGENT_RUNNER: &str = r#"#!/bin/sh
task=$1; shift
result=
while [ $# -gt 0 ]; do
  case $1 in --result-file) result=$2; shift 2;; *) shift;; esac
done
dir='@DIR@'
id=$(sed -n 's/^ *"id": "\([^"]*\)",*$/\1/p' "$task" | head -1)
n=$(cat "$dir/count-$id" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$dir/count-$id"
code=$(sed -n "${n}p" "$dir/plan-$id" 2>/dev/null); [ -z "$code" ] && code=0
finish() {
  case $1 in 0) s=complete;; 3) s=incomplete;; 4) s=needs_human;; 130) s=cancelled;; *) s=failed;; esac
  printf '{"status":"%s","exit_code":%s,"summary":"attempt %s ended %s","question":"which database?","runs":[{"files_changed":["f-%s.txt"]}]}' "$s" "$1" "$n" "$s" "$id" > "$result"
  echo "end $id $n $1" >> "$dir/log"
  exit $1
}
trap 'finish 130' TERM
echo "start $id $n" >> "$dir/log"
if [ "$code" = sleep ]; then
  sleep 60 & wait $!
  finish 0
fi
sleep 0.3
finish $code
"#;

struct Bench {
    dir: TempDir,
    fake: PathBuf,
}

impl Bench {
    fn new(name: &str) -> Bench {
        let dir = TempDir::new(name);
        let fake = dir.path().join("bin/agent-runner");
        std::fs::create_dir_all(fake.parent().unwrap()).unwrap();
        std::fs::create_dir_all(dir.path().join("fake")).unwrap();
        std::fs::write(
            &fake,
            FAKE_AGENT_RUNNER.replace("@DIR@", &dir.path().join("fake").display().to_string()),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        crate::support::git_repo(&repo, &[("README.md", "# repo\n")]);
        Workspace::init(&dir.path().join("ws"), &repo, name).unwrap();
        Bench { dir, fake }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Exit codes of the task's attempts, in order.
    fn script(&self, id: &str, codes: &[&str]) {
        std::fs::write(
            self.path().join("fake").join(format!("plan-{id}")),
            codes.join("\n") + "\n",
        )
        .unwrap();
    }

    fn log(&self) -> Vec<String> {
        std::fs::read_to_string(self.path().join("fake/log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn orchestrator(&self, clock: Arc<dyn Clock>) -> Orchestrator {
        let store = Workspace::open(&self.path().join("ws")).unwrap();
        let settings = Settings {
            program: self.fake.clone(),
            extra_args: vec![],
            project_root: self.path().join("repo"),
            runs_dir: self.path().join("ws/runs"),
            runner_defaults: json!({}),
            pools: Pools::default(),
            lifecycle_params: Map::new(),
            grace: Duration::from_secs(5),
            locale: "en".into(),
        };
        let mut o = Orchestrator::new(store, settings, clock, Arc::new(EventHub::new())).unwrap();
        o.recover().unwrap();
        o
    }
}

fn design(id: &str, deps: &[&str]) -> TaskDesign {
    TaskDesign {
        id: TaskId::parse(id).unwrap(),
        title: format!("task {id}"),
        description: String::new(),
        acceptance_criteria: vec![],
        suggested_impl: None,
        dependencies: deps.iter().map(|d| TaskId::parse(d).unwrap()).collect(),
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

fn state_of(o: &Orchestrator, id: &str) -> String {
    o.state().runtime[&TaskId::parse(id).unwrap()]
        .lifecycle
        .state
        .clone()
}

/// Ticks and waits for attempts until nothing is left to do on this clock.
fn run_until_settled(o: &mut Orchestrator) {
    let until = Instant::now() + Duration::from_secs(120);
    loop {
        let next = o.tick().unwrap();
        if o.is_settled() || (o.running().is_empty() && next.is_some_and(|d| d > Duration::ZERO)) {
            return;
        }
        assert!(Instant::now() < until, "the plan did not settle");
        o.wait_for_end(
            next.unwrap_or(Duration::from_millis(50))
                .min(Duration::from_millis(50)),
        )
        .unwrap();
    }
}

#[test]
fn five_tasks_run_in_dependency_order_two_at_a_time() {
    let bench = Bench::new("mv-order");
    let mut o = bench.orchestrator(Arc::new(SystemClock));
    for (id, deps) in [
        ("a", &[][..]),
        ("b", &["a"][..]),
        ("c", &["a"][..]),
        ("d", &["b", "c"][..]),
        ("e", &["d"][..]),
    ] {
        o.add_task(design(id, deps), None).unwrap();
    }
    // Nothing starts until execution does.
    o.tick().unwrap();
    assert!(o.running().is_empty());
    o.set_execution(ExecutionState::Running).unwrap();
    run_until_settled(&mut o);
    assert!(o.all_succeeded(), "{:?}", o.outcome_counts());
    let log = bench.log();
    let pos = |line: &str| {
        log.iter()
            .position(|l| l.starts_with(line))
            .unwrap_or_else(|| panic!("{line} in {log:?}"))
    };
    assert!(
        pos("end a") < pos("start b") && pos("end a") < pos("start c"),
        "{log:?}"
    );
    assert!(
        pos("end b") < pos("start d") && pos("end c") < pos("start d"),
        "{log:?}"
    );
    assert!(pos("end d") < pos("start e"), "{log:?}");
    // b and c ran at the same time: both started before either ended.
    assert!(
        pos("start b") < pos("end c") && pos("start c") < pos("end b"),
        "{log:?}"
    );
    // Never more than the pool's two at once.
    let mut running = 0i32;
    for line in &log {
        running += if line.starts_with("start") { 1 } else { -1 };
        assert!(running <= 2, "{log:?}");
    }
    // Every attempt kept its record, and the node is implemented.
    let rt = &o.state().runtime[&TaskId::parse("e").unwrap()];
    assert_eq!(rt.attempts.len(), 1);
    assert_eq!(rt.attempts[0].exit_code, Some(0));
    assert_eq!(rt.attempts[0].files_changed, ["f-e.txt"]);
    assert!(
        Path::new(&rt.attempts[0].run_dir)
            .join("task.yaml")
            .is_file()
    );
    assert!(rt.node.is_done());
}

#[test]
fn a_task_that_fails_twice_passes_on_the_third_attempt_after_5_then_10_seconds() {
    let bench = Bench::new("mv-retry");
    bench.script("t", &["1", "3", "0"]);
    let clock = ManualClock::starting_at(1_800_000_000_000);
    let mut o = bench.orchestrator(Arc::new(clock.clone()));
    let stream = o.events().subscribe();
    o.add_task(design("t", &[]), None).unwrap();
    o.set_execution(ExecutionState::Running).unwrap();
    for (attempt, wait_ms) in [(1, 5_000u64), (2, 10_000)] {
        run_until_settled(&mut o);
        assert_eq!(
            bench.log().iter().filter(|l| l.starts_with("end")).count(),
            attempt
        );
        assert_eq!(state_of(&o, "t"), "RETRY_WAIT");
        // Not a millisecond early.
        clock.advance(wait_ms - 1);
        o.tick().unwrap();
        assert!(
            o.running().is_empty(),
            "attempt {} started early",
            attempt + 1
        );
        clock.advance(1);
        o.tick().unwrap();
        assert_eq!(
            o.running().len(),
            1,
            "attempt {} did not start on time",
            attempt + 1
        );
    }
    run_until_settled(&mut o);
    assert_eq!(state_of(&o, "t"), "SUCCEEDED");
    let attempts = &o.state().runtime[&TaskId::parse("t").unwrap()].attempts;
    let codes: Vec<Option<i32>> = attempts.iter().map(|a| a.exit_code).collect();
    assert_eq!(codes, [Some(1), Some(3), Some(0)]);
    assert!(o.state().backlog.is_empty());
    // Each wait is in its event, with the attempts so far and how the last one ended: a
    // view counts down and says why without asking again.
    let waits: Vec<(Value, Value, Value)> = std::iter::from_fn(|| stream.try_recv().ok())
        .filter(|e| e.name == "task" && e.data["to"] == "RETRY_WAIT")
        .map(|e| {
            (
                e.data["next_retry_at_ms"].clone(),
                e.data["attempts"].clone(),
                e.data["last_attempt"]["exit_code"].clone(),
            )
        })
        .collect();
    assert_eq!(
        waits,
        [
            (json!(1_800_000_005_000u64), json!(1), json!(1)),
            (json!(1_800_000_015_000u64), json!(2), json!(3))
        ]
    );
}

#[test]
fn a_task_that_always_fails_goes_to_the_backlog_and_blocks_its_dependents() {
    let bench = Bench::new("mv-fail");
    bench.script("bad", &["1", "1", "1"]);
    let clock = ManualClock::starting_at(1_800_000_000_000);
    let mut o = bench.orchestrator(Arc::new(clock.clone()));
    o.add_task(design("bad", &[]), None).unwrap();
    o.add_task(design("after", &["bad"]), None).unwrap();
    o.add_task(design("later", &["after"]), None).unwrap();
    o.set_execution(ExecutionState::Running).unwrap();
    for _ in 0..3 {
        run_until_settled(&mut o);
        clock.advance(300_000);
    }
    run_until_settled(&mut o);
    assert_eq!(state_of(&o, "bad"), "FAILED");
    assert_eq!(state_of(&o, "after"), "BLOCKED");
    let after = &o.state().runtime[&TaskId::parse("after").unwrap()];
    assert!(
        after
            .blocked_reason
            .as_deref()
            .unwrap_or_default()
            .contains("bad"),
        "{after:?}"
    );
    let items: Vec<_> = o.state().backlog.values().collect();
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0].task.as_ref().map(TaskId::as_str), Some("bad"));
    assert_eq!(
        bench
            .log()
            .iter()
            .filter(|l| l.starts_with("start bad"))
            .count(),
        3
    );
    assert!(!bench.log().iter().any(|l| l.starts_with("start after")));

    // Resolving the item retries the task (fresh attempts); now it passes and the
    // dependents go on.
    bench.script("bad", &["1", "1", "1", "0"]);
    let item = items[0].id.clone();
    o.resolve_backlog(&item, "fixed the fixture", true).unwrap();
    run_until_settled(&mut o);
    assert!(o.all_succeeded(), "{:?}", o.outcome_counts());
}

#[test]
fn a_cancel_mid_run_ends_canceled_with_no_retry() {
    let bench = Bench::new("mv-cancel");
    bench.script("slow", &["sleep"]);
    let mut o = bench.orchestrator(Arc::new(SystemClock));
    o.add_task(design("slow", &[]), None).unwrap();
    o.set_execution(ExecutionState::Running).unwrap();
    o.tick().unwrap();
    assert_eq!(o.running().len(), 1);
    // Once it runs (its TERM handler set up), the user cancels.
    let until = Instant::now() + Duration::from_secs(30);
    while !bench.log().iter().any(|l| l.starts_with("start slow")) {
        assert!(Instant::now() < until);
        std::thread::sleep(Duration::from_millis(10));
    }
    let id = TaskId::parse("slow").unwrap();
    o.cancel(&id).unwrap();
    run_until_settled(&mut o);
    assert_eq!(state_of(&o, "slow"), "CANCELED");
    let rt = &o.state().runtime[&id];
    assert_eq!(rt.attempts.len(), 1);
    assert_eq!(rt.attempts[0].exit_code, Some(130));
    assert_eq!(rt.next_retry_at_ms, None);
    assert!(o.state().backlog.is_empty());
    assert_eq!(
        bench
            .log()
            .iter()
            .filter(|l| l.starts_with("start"))
            .count(),
        1
    );
}

/// A graceful shutdown interrupts what runs (queued again), but an attempt the user had
/// already cancelled stays cancelled.
#[test]
fn a_shutdown_interrupts_what_runs_but_keeps_a_users_cancel() {
    let bench = Bench::new("mv-shutdown");
    bench.script("slow", &["sleep"]);
    bench.script("kept", &["sleep"]);
    let mut o = bench.orchestrator(Arc::new(SystemClock));
    o.add_task(design("slow", &[]), None).unwrap();
    o.add_task(design("kept", &[]), None).unwrap();
    o.set_execution(ExecutionState::Running).unwrap();
    o.tick().unwrap();
    assert_eq!(o.running().len(), 2);
    let until = Instant::now() + Duration::from_secs(30);
    while bench
        .log()
        .iter()
        .filter(|l| l.starts_with("start"))
        .count()
        < 2
    {
        assert!(Instant::now() < until);
        std::thread::sleep(Duration::from_millis(10));
    }
    o.cancel(&TaskId::parse("kept").unwrap()).unwrap();
    o.interrupt_all();
    while !o.running().is_empty() {
        o.tick().unwrap();
        o.wait_for_end(Duration::from_millis(50)).unwrap();
    }
    assert_eq!(state_of(&o, "slow"), "READY");
    assert_eq!(state_of(&o, "kept"), "CANCELED");
    let rt = &o.state().runtime[&TaskId::parse("slow").unwrap()];
    assert_eq!(rt.attempts[0].status.as_deref(), Some("interrupted"));
    // Nothing new started while it drained.
    assert_eq!(o.tick().unwrap(), None);
    assert!(o.running().is_empty());
}

#[test]
fn a_crash_mid_run_is_recovered_and_the_plan_completes() {
    let bench = Bench::new("mv-crash");
    bench.script("t", &["sleep", "0"]);
    {
        let mut o = bench.orchestrator(Arc::new(SystemClock));
        o.add_task(design("t", &[]), None).unwrap();
        o.set_execution(ExecutionState::Running).unwrap();
        o.tick().unwrap();
        assert_eq!(o.running().len(), 1);
        // The orchestrator goes away without stopping anything: its agent-runner runs on.
    }
    let pid = {
        let state = code_intel::multiverse::read_state(&bench.path().join("ws")).unwrap();
        state.runtime[&TaskId::parse("t").unwrap()].attempts[0]
            .pid
            .unwrap()
    };
    assert!(code_intel::multiverse::process_alive(pid));
    let mut o = bench.orchestrator(Arc::new(SystemClock));
    // Recovery stopped the orphan and ended its attempt as interrupted; the task runs again.
    assert!(!code_intel::multiverse::process_alive(pid));
    let rt = &o.state().runtime[&TaskId::parse("t").unwrap()];
    assert_eq!(rt.attempts[0].status.as_deref(), Some("interrupted"));
    run_until_settled(&mut o);
    assert_eq!(state_of(&o, "t"), "SUCCEEDED");
    assert_eq!(
        o.state().runtime[&TaskId::parse("t").unwrap()]
            .attempts
            .len(),
        2
    );
}

#[test]
fn a_chat_request_plans_tasks_that_then_run_in_order() {
    let bench = Bench::new("mv-chat");
    let mut o = bench.orchestrator(Arc::new(SystemClock));
    let meta: MetaConfig = serde_json::from_value(json!({"kind": "mock"})).unwrap();
    let mut planner = Planner::from_config(&meta, bench.path(), None, 1).unwrap();
    let log = ChatLog::new(&bench.path().join("ws/chat"));
    let turn = chat_turn(
        &mut o,
        &mut planner,
        &log,
        None,
        "Build it in order:\n- parser\n- checker\n- renderer",
        &TurnSettings::default(),
        &Cancel::new(),
    )
    .unwrap();
    assert_eq!(turn.error, None, "{turn:?}");
    assert!(turn.autopilot);
    let created: Vec<String> = turn
        .patch
        .as_ref()
        .unwrap()
        .created
        .iter()
        .map(|c| c.id.to_string())
        .collect();
    assert_eq!(created.len(), 3);
    run_until_settled(&mut o);
    assert!(o.all_succeeded(), "{:?}", o.outcome_counts());
    let starts: Vec<String> = bench
        .log()
        .iter()
        .filter(|l| l.starts_with("start"))
        .map(|l| l.split(' ').nth(1).unwrap().to_string())
        .collect();
    assert_eq!(starts, created, "run in the order the chat asked for");
    let messages = log.read(&turn.session).unwrap();
    assert_eq!(messages.len(), 2);
    assert!(
        messages[1].content.contains("Created (3)"),
        "{}",
        messages[1].content
    );

    // A control word is handled without the planner.
    let turn = chat_turn(
        &mut o,
        &mut planner,
        &log,
        Some(&turn.session),
        "一旦止めて",
        &TurnSettings::default(),
        &Cancel::new(),
    )
    .unwrap();
    assert!(turn.control.is_some() && turn.patch.is_none());
    assert_eq!(o.state().execution, ExecutionState::Paused);
    let _: Value = serde_json::to_value(&turn).unwrap();
}

#[test]
fn a_cancel_before_the_attempt_could_report_is_still_a_cancel() {
    // The process dies of the TERM before it set up its handler: no exit code, no
    // result. The user asked for the stop, so it is a cancel, not a failure to retry.
    let bench = Bench::new("mv-cancel-early");
    bench.script("slow", &["sleep"]);
    let mut o = bench.orchestrator(Arc::new(SystemClock));
    o.add_task(design("slow", &[]), None).unwrap();
    o.set_execution(ExecutionState::Running).unwrap();
    o.tick().unwrap();
    o.cancel(&TaskId::parse("slow").unwrap()).unwrap();
    run_until_settled(&mut o);
    assert_eq!(state_of(&o, "slow"), "CANCELED");
    assert!(o.state().backlog.is_empty());
}
