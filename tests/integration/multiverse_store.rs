//! The Multiverse workspace store on real files: a crash mid-append (the journal cut in
//! the middle of a line) opens with the entry dropped and the next append readable; any
//! sequence of changes folds to the state saved (a property); a second writer is refused
//! with the holder's pid, in this process and from another one, and a writer killed with
//! SIGKILL leaves no lock behind; missing state files are rebuilt from the journal; a
//! damaged middle line is an error naming it; attempts left running are reported with
//! their process alive or gone; a 1,000-task plan loads within its budget.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use code_intel::machine::Instance;
use code_intel::multiverse::{
    Attempt, BacklogItem, BacklogKind, CachedReader, Change, ExecutionState, NodeStatus,
    StoreError, TaskDesign, TaskId, TaskRuntime, Wbs, Workspace, WorkspaceState, process_alive,
    read_state, rebuild_state, saved_state,
};
use proptest::prelude::*;
use serde_json::{Map, json};

use crate::support::{Reaped, TempDir};

fn id(s: &str) -> TaskId {
    TaskId::parse(s).unwrap()
}

fn design(task: &str, title: &str, deps: &[&str]) -> TaskDesign {
    serde_json::from_value(json!({
        "id": task, "title": title, "dependencies": deps,
        "created_at": "2026-11-27T00:00:00Z", "updated_at": "2026-11-27T00:00:00Z",
        "created_by": "user",
    }))
    .unwrap()
}

fn runtime(state: &str, attempts: Vec<Attempt>) -> TaskRuntime {
    TaskRuntime {
        lifecycle: Instance {
            contract: "multiverse_task".into(),
            state: state.into(),
            flags: Map::new(),
            intent: "run".into(),
            locale: "en".into(),
            params: Map::new(),
            counters: Default::default(),
            tasks: Vec::new(),
            vars: Map::new(),
            summaries: Vec::new(),
            steps_taken: 3,
        },
        node: NodeStatus::InProgress,
        attempts,
        next_retry_at_ms: None,
        blocked_reason: None,
        enqueued_seq: 0,
    }
}

fn attempt(number: u32, pid: Option<u32>, finished: bool) -> Attempt {
    Attempt {
        number,
        started_at: "2026-11-27T00:00:00Z".into(),
        finished_at: finished.then(|| "2026-11-27T00:01:00Z".into()),
        pid,
        exit_code: finished.then_some(0),
        status: finished.then(|| "complete".into()),
        summary: None,
        run_dir: format!("runs/t/{number}"),
        files_changed: Vec::new(),
    }
}

fn init(dir: &Path) -> Workspace {
    Workspace::init(&dir.join("ws"), dir, "demo").unwrap()
}

/// A crash in the middle of an append: the journal ends in half a line and the state
/// files hold at most the entries before it (they are written only after an append).
#[test]
fn a_torn_tail_after_a_crash_is_dropped_and_the_next_append_is_readable() {
    let tmp = TempDir::new("mv-store-torn");
    let mut ws = init(&tmp);
    let dir = ws.dir().to_path_buf();
    ws.apply(vec![
        Change::TaskDesigned {
            design: design("a", "A", &[]),
        },
        Change::WbsSet {
            wbs: Wbs {
                roots: vec![id("a")],
                ..Wbs::default()
            },
        },
    ])
    .unwrap();
    ws.apply(vec![Change::RuntimeSet {
        task: id("a"),
        runtime: runtime("S1", Vec::new()),
    }])
    .unwrap();
    let before_crash = ws.state().clone();
    let journal_before = std::fs::read(ws.journal_path()).unwrap();
    let files_before = state_files(&dir);
    ws.apply(vec![Change::ExecutionSet {
        execution: ExecutionState::Running,
    }])
    .unwrap();
    let journal = ws.journal_path().to_path_buf();
    drop(ws);

    // What the disk holds if the process died halfway through writing entry 3.
    let full = std::fs::read(&journal).unwrap();
    let third = &full[journal_before.len()..];
    let mut torn = journal_before.clone();
    torn.extend_from_slice(&third[..third.len() / 2]);
    std::fs::write(&journal, &torn).unwrap();
    restore(&dir, &files_before);

    // A reader ignores the torn line and leaves it alone.
    assert_eq!(read_state(&dir).unwrap(), before_crash);
    assert_eq!(std::fs::read(&journal).unwrap(), torn);

    let mut ws = Workspace::open(&dir).unwrap();
    assert_eq!(ws.state(), &before_crash);
    assert_eq!(ws.state().execution, ExecutionState::Idle);
    // The next entry takes number 3 and starts on a line of its own.
    let seq = ws
        .apply(vec![Change::ExecutionSet {
            execution: ExecutionState::Paused,
        }])
        .unwrap();
    assert_eq!(seq, 3);
    let text = std::fs::read_to_string(&journal).unwrap();
    assert_eq!(text.lines().count(), 3);
    assert!(text.ends_with('\n'));
    let live = ws.state().clone();
    drop(ws);
    assert_eq!(live.execution, ExecutionState::Paused);
    assert_eq!(read_state(&dir).unwrap(), live);
    assert_eq!(rebuild_state(&dir).unwrap(), live);
    assert_eq!(Workspace::open(&dir).unwrap().state(), &live);
}

fn state_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    [
        "design/plan.json",
        "state/runtime.json",
        "backlog/backlog.json",
        "state/execution.json",
    ]
    .iter()
    .map(|f| (dir.join(f), std::fs::read(dir.join(f)).unwrap()))
    .collect()
}

fn restore(dir: &Path, files: &[(PathBuf, Vec<u8>)]) {
    for (path, bytes) in files {
        assert!(path.starts_with(dir));
        std::fs::write(path, bytes).unwrap();
    }
}

#[test]
fn missing_state_files_are_rebuilt_from_the_journal() {
    let tmp = TempDir::new("mv-store-missing");
    let mut ws = init(&tmp);
    let dir = ws.dir().to_path_buf();
    for n in 0..20 {
        let task = format!("t{n}");
        ws.apply(vec![
            Change::TaskDesigned {
                design: design(&task, "T", &[]),
            },
            Change::RuntimeSet {
                task: id(&task),
                runtime: runtime("S1", vec![attempt(1, Some(1), true)]),
            },
        ])
        .unwrap();
    }
    let saved = ws.state().clone();
    drop(ws);
    std::fs::remove_file(dir.join("design/plan.json")).unwrap();
    std::fs::remove_file(dir.join("state/runtime.json")).unwrap();
    assert_eq!(read_state(&dir).unwrap(), saved);
    let ws = Workspace::open(&dir).unwrap();
    assert_eq!(ws.state(), &saved);
    drop(ws);
    // Open wrote them again.
    assert_eq!(saved_state(&dir).unwrap(), saved);
}

#[test]
fn a_cached_reader_reads_again_exactly_when_the_journal_changed() {
    let tmp = TempDir::new("mv-store-cached");
    let mut ws = init(&tmp);
    let dir = ws.dir().to_path_buf();
    let reader = CachedReader::new(&dir);
    let empty = reader.read().unwrap();
    assert_eq!(*empty, read_state(&dir).unwrap());
    assert!(
        Arc::ptr_eq(&empty, &reader.read().unwrap()),
        "read again unchanged"
    );
    for n in 0..3 {
        let task = format!("t{n}");
        ws.apply(vec![Change::TaskDesigned {
            design: design(&task, "T", &[]),
        }])
        .unwrap();
        let now = reader.read().unwrap();
        assert_eq!(*now, *ws.state(), "after change {n}");
        assert_eq!(*now, read_state(&dir).unwrap());
        assert!(Arc::ptr_eq(&now, &reader.read().unwrap()));
    }
}

#[test]
fn a_damaged_middle_line_is_an_error_naming_it() {
    let tmp = TempDir::new("mv-store-corrupt");
    let mut ws = init(&tmp);
    let dir = ws.dir().to_path_buf();
    for state in [
        ExecutionState::Running,
        ExecutionState::Paused,
        ExecutionState::Running,
    ] {
        ws.apply(vec![Change::ExecutionSet { execution: state }])
            .unwrap();
    }
    let journal = ws.journal_path().to_path_buf();
    drop(ws);
    let text = std::fs::read_to_string(&journal).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let damaged = format!("{}\n{}\n{}\n", lines[0], &lines[1][..10], lines[2]);
    std::fs::write(&journal, damaged).unwrap();
    // The state files are fine; a rebuild and an open both read the journal.
    for err in [
        rebuild_state(&dir).unwrap_err(),
        Workspace::open(&dir).unwrap_err(),
    ] {
        assert_eq!(err.key(), "journal.corrupt");
        assert_eq!(err.line(), Some(2));
        assert!(err.to_string().contains("journal.jsonl line 2"), "{err}");
    }
}

#[test]
fn a_second_writer_in_this_process_is_refused_naming_the_holder() {
    let tmp = TempDir::new("mv-store-lock");
    let ws = init(&tmp);
    let err = Workspace::open(ws.dir()).unwrap_err();
    assert_eq!(err.key(), "workspace.locked");
    match &err {
        StoreError::Locked {
            holder: Some(h), ..
        } => assert_eq!(h.pid, std::process::id()),
        other => panic!("{other:?}"),
    }
    assert!(
        err.to_string()
            .contains(&format!("(pid {}", std::process::id())),
        "{err}"
    );
    // Readers need no lock.
    assert_eq!(read_state(ws.dir()).unwrap(), WorkspaceState::default());
    let dir = ws.dir().to_path_buf();
    drop(ws);
    Workspace::open(&dir).unwrap();
}

/// The other process of the test below: this test binary run again with only this test,
/// holding the workspace named by `MV_STORE_HOLD_DIR` until its stdin closes.
#[test]
#[ignore = "a helper process of another_process_holding_the_workspace_is_named"]
fn hold_the_workspace_child() {
    let Some(dir) = std::env::var_os("MV_STORE_HOLD_DIR") else {
        return;
    };
    let dir = PathBuf::from(dir);
    let ws = Workspace::open(&dir).unwrap();
    std::fs::write(dir.join("../child-ready"), std::process::id().to_string()).unwrap();
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut std::io::stdin(), &mut rest).unwrap();
    drop(ws);
}

fn spawn_holder(dir: &Path) -> Reaped {
    let ready = dir.join("../child-ready");
    let _ = std::fs::remove_file(&ready);
    let child = crate::sealed::command(std::env::current_exe().unwrap())
        .args([
            "multiverse_store::hold_the_workspace_child",
            "--exact",
            "--ignored",
            "--test-threads=1",
        ])
        .env("MV_STORE_HOLD_DIR", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Reaped(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready.exists() {
        assert!(
            child.0.try_wait().unwrap().is_none(),
            "the holder process ended before it held the workspace"
        );
        assert!(Instant::now() < deadline, "the holder never got the lock");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

#[test]
fn another_process_holding_the_workspace_is_named() {
    let tmp = TempDir::new("mv-store-lock-process");
    let dir = init(&tmp).dir().to_path_buf();

    // A holder that lets go: refused while it holds, free once it ends.
    let mut child = spawn_holder(&dir);
    let pid = child.0.id();
    let err = Workspace::open(&dir).unwrap_err();
    match &err {
        StoreError::Locked {
            holder: Some(h), ..
        } => assert_eq!(h.pid, pid),
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains(&format!("(pid {pid}")), "{err}");
    drop(child.0.stdin.take());
    assert!(child.0.wait().unwrap().success());
    drop(Workspace::open(&dir).unwrap());

    // A holder killed with SIGKILL leaves no lock behind; its pid in the file is only
    // information, overwritten by the next writer.
    let mut child = spawn_holder(&dir);
    assert_eq!(Workspace::open(&dir).unwrap_err().key(), "workspace.locked");
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    let ws = Workspace::open(&dir).unwrap();
    let err = Workspace::open(&dir).unwrap_err();
    assert!(
        err.to_string()
            .contains(&format!("(pid {}", std::process::id())),
        "{err}"
    );
    drop(ws);
}

#[test]
fn attempts_left_running_are_reported_with_their_process_alive_or_gone() {
    let tmp = TempDir::new("mv-store-recovery");
    let mut ws = init(&tmp);
    let dir = ws.dir().to_path_buf();
    let alive = Reaped(crate::sealed::command("sleep").arg("30").spawn().unwrap());
    let mut gone = crate::sealed::command("true").spawn().unwrap();
    let gone_pid = gone.id();
    gone.wait().unwrap();
    ws.apply(vec![
        Change::RuntimeSet {
            task: id("alive"),
            runtime: runtime("S2", vec![attempt(1, Some(alive.0.id()), false)]),
        },
        Change::RuntimeSet {
            task: id("gone"),
            runtime: runtime(
                "S2",
                vec![attempt(1, Some(7), true), attempt(2, Some(gone_pid), false)],
            ),
        },
        Change::RuntimeSet {
            task: id("finished"),
            runtime: runtime("S3", vec![attempt(1, Some(8), true)]),
        },
    ])
    .unwrap();
    drop(ws);
    let ws = Workspace::open(&dir).unwrap();
    let found: Vec<(String, u32, bool)> = ws
        .attempts_in_flight()
        .into_iter()
        .map(|f| (f.task.to_string(), f.attempt, process_alive(f.pid.unwrap())))
        .collect();
    assert_eq!(
        found,
        [
            ("alive".to_string(), 1, true),
            ("gone".to_string(), 2, false)
        ]
    );
}

/// A plan of 1,000 tasks, each with its runtime, opens within the budget: 200 ms in an
/// optimised build; a debug build (unoptimised serde) is allowed ten times that.
#[test]
fn a_thousand_task_plan_loads_within_its_budget() {
    let tmp = TempDir::new("mv-store-thousand");
    let mut ws = init(&tmp);
    let dir = ws.dir().to_path_buf();
    let mut changes = Vec::new();
    let mut roots = Vec::new();
    for n in 0..1000 {
        let task = format!("task-{n:04}");
        let deps: Vec<String> = (n.max(3) - 3..n).map(|d| format!("task-{d:04}")).collect();
        let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
        let mut d = design(&task, &format!("Implement part {n} of the system"), &deps);
        d.description = "A paragraph of what the task is meant to do. ".repeat(8);
        d.acceptance_criteria = vec!["it builds".into(), "its tests pass".into()];
        changes.push(Change::TaskDesigned { design: d });
        roots.push(id(&task));
    }
    changes.push(Change::WbsSet {
        wbs: Wbs {
            roots,
            ..Wbs::default()
        },
    });
    ws.apply(changes).unwrap();
    let runtimes = (0..1000)
        .map(|n| Change::RuntimeSet {
            task: id(&format!("task-{n:04}")),
            runtime: runtime("S1", vec![attempt(1, Some(1), true)]),
        })
        .collect();
    ws.apply(runtimes).unwrap();
    let saved = ws.state().clone();
    drop(ws);

    let budget = if cfg!(debug_assertions) {
        Duration::from_millis(2000)
    } else {
        Duration::from_millis(200)
    };
    let started = Instant::now();
    let ws = Workspace::open(&dir).unwrap();
    let took = started.elapsed();
    assert_eq!(ws.state(), &saved);
    assert!(took < budget, "opening a 1,000-task plan took {took:?}");
}

/// One step of the property below.
#[derive(Debug, Clone)]
enum Op {
    Design(u8, String, Vec<u8>),
    Remove(u8),
    Wbs(Vec<u8>),
    Runtime(u8, String, u8, bool),
    RuntimeRemoved(u8),
    Backlog(u8, bool),
    BacklogRemoved(u8),
    Execution(u8),
}

fn op() -> impl Strategy<Value = Op> {
    let task = 0u8..6;
    prop_oneof![
        (
            task.clone(),
            "[a-zé ]{0,12}",
            prop::collection::vec(0u8..6, 0..3)
        )
            .prop_map(|(t, title, deps)| Op::Design(t, title, deps)),
        task.clone().prop_map(Op::Remove),
        prop::collection::vec(0u8..6, 0..6).prop_map(Op::Wbs),
        (task.clone(), "[A-Z_]{1,8}", 0u8..4, any::<bool>())
            .prop_map(|(t, s, n, done)| Op::Runtime(t, s, n, done)),
        task.clone().prop_map(Op::RuntimeRemoved),
        (0u8..4, any::<bool>()).prop_map(|(b, resolved)| Op::Backlog(b, resolved)),
        (0u8..4).prop_map(Op::BacklogRemoved),
        (0u8..3).prop_map(Op::Execution),
    ]
}

fn task_name(t: u8) -> String {
    format!("t{t}")
}

fn change(op: &Op) -> Change {
    match op {
        Op::Design(t, title, deps) => {
            let deps: Vec<String> = deps.iter().map(|d| task_name(*d)).collect();
            let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
            Change::TaskDesigned {
                design: design(&task_name(*t), title, &deps),
            }
        }
        Op::Remove(t) => Change::TaskRemoved {
            task: id(&task_name(*t)),
        },
        Op::Wbs(order) => {
            let mut wbs = Wbs::default();
            let mut seen = std::collections::BTreeSet::new();
            for t in order {
                if seen.insert(*t) {
                    wbs.roots.push(id(&task_name(*t)));
                }
            }
            Change::WbsSet { wbs }
        }
        Op::Runtime(t, state, n, done) => Change::RuntimeSet {
            task: id(&task_name(*t)),
            runtime: runtime(
                state,
                (1..=u32::from(*n))
                    .map(|k| attempt(k, Some(1000 + k), *done || k < u32::from(*n)))
                    .collect(),
            ),
        },
        Op::RuntimeRemoved(t) => Change::RuntimeRemoved {
            task: id(&task_name(*t)),
        },
        Op::Backlog(b, resolved) => Change::BacklogSet {
            item: BacklogItem {
                id: format!("b{b}"),
                kind: BacklogKind::Failure,
                task: Some(id("t1")),
                title: "t1 failed three times".into(),
                description: String::new(),
                created_at: "2026-11-27T00:00:00Z".into(),
                resolved_at: resolved.then(|| "2026-11-27T01:00:00Z".into()),
                resolution: resolved.then(|| "retry".into()),
                metadata: json!({"attempts": 3, "ratio": 0.5}),
            },
        },
        Op::BacklogRemoved(b) => Change::BacklogRemoved {
            id: format!("b{b}"),
        },
        Op::Execution(e) => Change::ExecutionSet {
            execution: [
                ExecutionState::Idle,
                ExecutionState::Running,
                ExecutionState::Paused,
            ][usize::from(*e)],
        },
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Any sequence of changes, in batches of any size, with the state files written after
    /// every entry or only now and then, and the workspace reopened midway: the live state,
    /// the saved files, a reader's view, a reopen and a fold of the whole journal from
    /// empty are all the same state, and all equal a plain fold in memory.
    #[test]
    fn any_sequence_of_changes_folds_to_the_saved_state(
        batches in prop::collection::vec(prop::collection::vec(op(), 1..4), 1..16),
        save_every in 1u32..5,
        reopen_after in 0usize..16,
    ) {
        let tmp = TempDir::new("mv-store-prop");
        let mut ws = init(&tmp);
        let dir = ws.dir().to_path_buf();
        ws.set_save_every(save_every);
        let mut model = WorkspaceState::default();
        for (i, batch) in batches.iter().enumerate() {
            let changes: Vec<Change> = batch.iter().map(change).collect();
            for c in changes.clone() {
                c.apply(&mut model);
            }
            model.seq += 1;
            prop_assert_eq!(ws.apply(changes).unwrap(), model.seq);
            if i == reopen_after {
                drop(ws);
                ws = Workspace::open(&dir).unwrap();
                ws.set_save_every(save_every);
            }
        }
        prop_assert_eq!(ws.state(), &model);
        prop_assert_eq!(&read_state(&dir).unwrap(), &model);
        prop_assert_eq!(&ws.rebuild().unwrap(), &model);
        drop(ws);
        prop_assert_eq!(&saved_state(&dir).unwrap(), &model);
        let reopened = Workspace::open(&dir).unwrap();
        prop_assert_eq!(reopened.state(), &model);
    }
}
