//! Benchmark of Multiverse's own cost (issue 21): a plan of 1,000 tasks, each depending
//! on the one before, run one at a time by the orchestrator on a real workspace (journal
//! synced, state files) with an instant fake `agent-runner` (a shell script that writes
//! its result and exits). Printed:
//!
//! - the scheduler's overhead per task: the orchestrated run's time per task minus the
//!   time of the same script run 1,000 times back to back (the reference, measured in the
//!   same run on the same machine), goal < 5 ms;
//! - the time to open the workspace of that plan (state files and journal), goal < 200 ms;
//! - from a task's dependency ending to the task starting (the orchestrator's events),
//!   goal < 100 ms, over all 999 pairs of the chain; the events are read as they come, as
//!   the command line and the HTTP stream do (a subscriber that leaves them unread is
//!   dropped by the hub once its buffer is full, and the pairs after that are not seen:
//!   said, if it happens), and every `run` event (the fake writes two progress lines per
//!   attempt) is counted.
//!
//! Run with `cargo bench --bench multiverse`.
#![allow(clippy::print_stdout)]

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::{Duration, Instant};

use code_intel::multiverse::{
    EventHub, ExecutionState, Orchestrator, Pools, RunnerSettings, ServerEvent, Settings,
    SystemClock, TaskDesign, TaskId, Workspace,
};
use serde_json::{Map, json};

const TASKS: usize = 1_000;

/// The instant agent-runner: its third argument is the result file, its fifth the events
/// file (two lines, as agent-runner's first state change and its end).
const FAKE: &str = "#!/bin/sh\nprintf '{\"event\":\"state\",\"from\":\"a\",\"to\":\"b\"}\\n' > \"$5\"\nprintf '{\"status\":\"complete\",\"summary\":\"ok\"}' > \"$3\"\nprintf '{\"event\":\"finished\",\"status\":\"complete\",\"exit_code\":0}\\n' >> \"$5\"\n";

/// Progress lines the fake writes per attempt.
const RUN_LINES: usize = 2;

fn design(i: usize) -> TaskDesign {
    TaskDesign {
        id: TaskId::parse(&format!("t{i}")).expect("an id"),
        title: format!("task {i}"),
        description: String::new(),
        acceptance_criteria: vec![],
        suggested_impl: None,
        dependencies: if i == 0 {
            vec![]
        } else {
            vec![TaskId::parse(&format!("t{}", i - 1)).expect("an id")]
        },
        milestone: None,
        phase: None,
        pool: "default".into(),
        priority: 0,
        runner: RunnerSettings::default(),
        created_at: "2026-11-27T00:00:00Z".into(),
        updated_at: "2026-11-27T00:00:00Z".into(),
        created_by: "bench".into(),
    }
}

fn orchestrator(dir: &Path, fake: &Path) -> Orchestrator {
    let store = Workspace::open(&dir.join("ws")).expect("the workspace opens");
    let settings = Settings {
        program: fake.to_path_buf(),
        extra_args: vec![],
        project_root: dir.join("project"),
        runs_dir: dir.join("ws/runs"),
        runner_defaults: json!({}),
        pools: Pools {
            limits: [("default".to_string(), 1)].into_iter().collect(),
        },
        lifecycle_params: Map::new(),
        grace: Duration::from_secs(5),
        locale: "en".into(),
    };
    Orchestrator::new(
        store,
        settings,
        Arc::new(SystemClock),
        Arc::new(EventHub::new()),
    )
    .expect("the orchestrator starts")
}

fn main() {
    let dir = std::env::temp_dir().join(format!("code-intel-bench-mv-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("project")).expect("a directory");
    let fake = dir.join("agent-runner");
    std::fs::write(&fake, FAKE).expect("the fake");
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    Workspace::init(&dir.join("ws"), &dir.join("project"), "bench").expect("init");

    // The plan, added through the orchestrator (each add is a journal entry).
    let mut o = orchestrator(&dir, &fake);
    let added = Instant::now();
    for i in 0..TASKS {
        o.add_task(design(i), None).expect("added");
    }
    let add_time = added.elapsed();
    drop(o);

    let opened = Instant::now();
    let mut o = orchestrator(&dir, &fake);
    o.recover().expect("recovered");
    let open_time = opened.elapsed();

    let events = o.events().subscribe();
    let mut seen = Vec::new();
    let mut dropped = false;
    o.set_execution(ExecutionState::Running).expect("running");
    let started = Instant::now();
    while !o.all_succeeded() {
        let next = o.tick().expect("tick");
        o.wait_for_end(
            next.unwrap_or(Duration::from_millis(50))
                .min(Duration::from_millis(50)),
        )
        .expect("an end");
        dropped |= take(&events, &mut seen);
    }
    let run_time = started.elapsed();
    dropped |= take(&events, &mut seen);

    // From each task's attempt ending to its dependent's attempt starting.
    let mut ended_at = None;
    let mut gaps = Vec::new();
    let mut run_events = 0;
    for event in &seen {
        if event.name == "run" {
            run_events += 1;
        }
        if event.name != "attempt" {
            continue;
        }
        if event.data["ended"] == true {
            ended_at = Some(event_time(&event.data));
        } else if event.data["started"] == true
            && let Some(end) = ended_at.take()
        {
            gaps.push(event_time(&event.data).saturating_sub(end));
        }
    }

    // The reference: the same script, the same number of times, back to back.
    let reference = Instant::now();
    for i in 0..TASKS {
        let result = dir.join(format!("ref-{}.json", i % 8));
        let status = Command::new(&fake)
            .arg(dir.join("task.yaml"))
            .arg("--result-file")
            .arg(&result)
            .arg("--events")
            .arg(dir.join(format!("ref-{}.jsonl", i % 8)))
            .status()
            .expect("the fake runs");
        assert!(status.success());
    }
    let reference_time = reference.elapsed();
    let _ = std::fs::remove_dir_all(&dir);

    let per_task = run_time.as_secs_f64() * 1e3 / TASKS as f64;
    let spawn = reference_time.as_secs_f64() * 1e3 / TASKS as f64;
    gaps.sort();
    let median_gap = gaps.get(gaps.len() / 2).copied().unwrap_or(0);
    let max_gap = gaps.last().copied().unwrap_or(0);
    println!(
        "multiverse, {TASKS}-task chain: {per_task:.2} ms per task orchestrated, {spawn:.2} ms per bare run of the same fake (reference); scheduler overhead {:.2} ms per task (goal < 5 ms), ratio {:.1}x",
        per_task - spawn,
        per_task / spawn.max(1e-9)
    );
    println!(
        "multiverse, {TASKS}-task plan: opened in {:.1} ms (goal < 200 ms); added in {:.0} ms ({:.2} ms per task)",
        open_time.as_secs_f64() * 1e3,
        add_time.as_secs_f64() * 1e3,
        add_time.as_secs_f64() * 1e3 / TASKS as f64
    );
    println!(
        "multiverse, dependency done to dependent started: median {median_gap} ms, max {max_gap} ms over {} of {} dependency pairs (goal < 100 ms); {run_events} of {} run progress lines forwarded",
        gaps.len(),
        TASKS - 1,
        TASKS * RUN_LINES
    );
    if gaps.len() != TASKS - 1 || run_events != TASKS * RUN_LINES {
        println!(
            "multiverse: events missing ({} read): {}",
            seen.len(),
            if dropped {
                "the hub dropped this subscriber (its buffer was full)"
            } else if gaps.len() != TASKS - 1 {
                "not dropped: an attempt's start came without its dependency's end before it"
            } else {
                "not dropped: run progress lines were not forwarded"
            }
        );
    }
}

/// Reads what the hub has sent so far; true when it dropped the subscriber.
fn take(events: &Receiver<ServerEvent>, seen: &mut Vec<ServerEvent>) -> bool {
    loop {
        match events.try_recv() {
            Ok(event) => seen.push(event),
            Err(TryRecvError::Empty) => return false,
            Err(TryRecvError::Disconnected) => return true,
        }
    }
}

/// An attempt event's time (the orchestrator's clock, milliseconds).
fn event_time(data: &serde_json::Value) -> u64 {
    data["at_ms"].as_u64().unwrap_or(0)
}
