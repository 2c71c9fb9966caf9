//! Unit tests of the workspace store on real files in temporary directories.

use std::path::{Path, PathBuf};

use serde_json::Map;

use super::{
    Change, InFlight, LAYOUT_VERSION, MAX_LINE_BYTES, MutateError, Workspace, read_state,
    saved_state,
};
use crate::machine::Instance;
use crate::multiverse::model::{
    Attempt, ExecutionState, NodeStatus, TaskDesign, TaskId, TaskRuntime, WorkspaceState,
};

fn tempdir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("code-intel-mv-store-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn id(s: &str) -> TaskId {
    TaskId::parse(s).unwrap()
}

fn design(task: &str) -> TaskDesign {
    serde_json::from_value(serde_json::json!({
        "id": task, "title": format!("do {task}"),
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
            steps_taken: 1,
        },
        node: NodeStatus::Planned,
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
        exit_code: None,
        status: None,
        summary: None,
        run_dir: format!("runs/t/{number}"),
        files_changed: Vec::new(),
    }
}

fn init(dir: &Path) -> Workspace {
    Workspace::init(dir, Path::new("/project"), "demo").unwrap()
}

#[test]
fn init_creates_the_layout_and_refuses_a_second_time() {
    let dir = tempdir("init");
    let ws = init(&dir);
    for sub in ["design", "state", "history", "chat", "backlog", "runs"] {
        assert!(dir.join(sub).is_dir(), "{sub}");
    }
    for file in [
        "workspace.json",
        "design/plan.json",
        "state/runtime.json",
        "backlog/backlog.json",
        "state/execution.json",
    ] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    assert_eq!(ws.meta().name, "demo");
    assert_eq!(ws.meta().version, LAYOUT_VERSION);
    drop(ws);
    let err = Workspace::init(&dir, Path::new("/project"), "again").unwrap_err();
    assert_eq!(err.key(), "workspace.exists");
    let err = Workspace::open(&dir.join("design")).unwrap_err();
    assert_eq!(err.key(), "workspace.missing");
    // A layout this code does not know is named as such, not as damage.
    let meta = dir.join("workspace.json");
    let text = std::fs::read_to_string(&meta).unwrap();
    std::fs::write(&meta, text.replace("\"version\": 1", "\"version\": 2")).unwrap();
    let err = Workspace::open(&dir).unwrap_err();
    assert_eq!(err.key(), "workspace.version");
    assert!(err.to_string().contains("version 2"), "{err}");
    std::fs::write(&meta, "[]").unwrap();
    assert_eq!(
        Workspace::open(&dir).unwrap_err().key(),
        "workspace.invalid"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_refused_or_failed_mutation_changes_nothing() {
    let dir = tempdir("refused");
    let mut ws = init(&dir);
    ws.apply(vec![Change::TaskDesigned {
        design: design("t1"),
    }])
    .unwrap();
    let before = ws.state().clone();
    let journal_before = std::fs::read(ws.journal_path()).unwrap();

    let refused = ws.mutate(|_| Err::<Vec<Change>, _>("no"));
    assert!(matches!(refused, Err(MutateError::Rejected("no"))));

    // An entry over the line limit is refused before a byte is written.
    let mut huge = design("t2");
    huge.description = "x".repeat(usize::try_from(MAX_LINE_BYTES).unwrap());
    let err = ws
        .apply(vec![Change::TaskDesigned { design: huge }])
        .unwrap_err();
    assert_eq!(err.key(), "journal.entry_too_large");

    assert_eq!(ws.state(), &before);
    assert_eq!(std::fs::read(ws.journal_path()).unwrap(), journal_before);
    assert_eq!(ws.mutate(|_| Ok::<_, ()>(Vec::new())).unwrap(), before.seq);
    drop(ws);
    assert_eq!(read_state(&dir).unwrap(), before);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn files_written_less_often_lose_nothing() {
    let dir = tempdir("lazy");
    let mut ws = init(&dir);
    ws.set_save_every(1000);
    for n in 0..10 {
        let task = format!("t{n}");
        ws.apply(vec![
            Change::TaskDesigned {
                design: design(&task),
            },
            Change::RuntimeSet {
                task: id(&task),
                runtime: runtime("S1", Vec::new()),
            },
        ])
        .unwrap();
    }
    let live = ws.state().clone();
    assert_eq!(live.seq, 10);
    // The files are behind; a reader folds in what they miss.
    assert_eq!(saved_state(&dir).unwrap().seq, 0);
    assert_eq!(read_state(&dir).unwrap(), live);
    assert_eq!(ws.rebuild().unwrap(), live);
    // Dropping the writer saves.
    drop(ws);
    assert_eq!(saved_state(&dir).unwrap(), live);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_state_file_ahead_of_the_journal_is_an_error_and_a_damaged_one_is_rebuilt() {
    let dir = tempdir("ahead");
    let mut ws = init(&dir);
    ws.apply(vec![Change::ExecutionSet {
        execution: ExecutionState::Running,
    }])
    .unwrap();
    let saved = ws.state().clone();
    drop(ws);

    std::fs::write(dir.join("state/execution.json"), "{ damaged").unwrap();
    assert_eq!(read_state(&dir).unwrap(), saved);
    let ws = Workspace::open(&dir).unwrap();
    assert_eq!(ws.state(), &saved);
    drop(ws);
    // Open rewrote the damaged file.
    assert_eq!(saved_state(&dir).unwrap(), saved);

    std::fs::write(
        dir.join("state/execution.json"),
        r#"{"seq": 9, "data": "PAUSED"}"#,
    )
    .unwrap();
    let err = Workspace::open(&dir).unwrap_err();
    assert_eq!(err.key(), "state.ahead_of_journal");
    assert!(err.to_string().contains("execution.json"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn attempts_without_an_end_are_in_flight() {
    let dir = tempdir("inflight");
    let mut ws = init(&dir);
    ws.apply(vec![
        Change::RuntimeSet {
            task: id("done"),
            runtime: runtime("S", vec![attempt(1, Some(11), true)]),
        },
        Change::RuntimeSet {
            task: id("running"),
            runtime: runtime(
                "S",
                vec![attempt(1, Some(12), true), attempt(2, Some(13), false)],
            ),
        },
        Change::RuntimeSet {
            task: id("spawning"),
            runtime: runtime("S", vec![attempt(1, None, false)]),
        },
        Change::RuntimeSet {
            task: id("never"),
            runtime: runtime("S", Vec::new()),
        },
    ])
    .unwrap();
    assert_eq!(
        ws.attempts_in_flight(),
        vec![
            InFlight {
                task: id("running"),
                attempt: 2,
                pid: Some(13)
            },
            InFlight {
                task: id("spawning"),
                attempt: 1,
                pid: None
            },
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_reader_sees_a_workspace_state_equal_to_the_writers() {
    let dir = tempdir("reader");
    let mut ws = init(&dir);
    assert_eq!(read_state(&dir).unwrap(), WorkspaceState::default());
    ws.apply(vec![Change::TaskDesigned {
        design: design("a"),
    }])
    .unwrap();
    assert_eq!(&read_state(&dir).unwrap(), ws.state());
    let _ = std::fs::remove_dir_all(&dir);
}
