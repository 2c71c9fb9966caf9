//! Runs you can debug, through the `agent-runner` binary offline (the mock planner, the
//! local worker, stand-in agents in temporary git repositories): the record directory
//! beside the Task Note (planner exchanges, the worker's prompt and full output, the test
//! output), the stderr of a failed worker in the note, the trace id in every log line,
//! event, the note and the result, the rotation of an earlier run's record, and no secret
//! in any of it.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use serde_json::Value;

use crate::support::TempDir;

fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_agent-runner"))
}

/// `repo/` (a git repository with one commit), `agent.sh` and `task.yaml` in a
/// temporary directory.
struct Fixture {
    dir: TempDir,
}

impl Fixture {
    fn new(name: &str, agent: &str, task: &str) -> Fixture {
        Fixture {
            dir: crate::agent_runner_cli::task_dir(&format!("debug-{name}"), agent, task),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn records(&self) -> PathBuf {
        self.path().join("repo/.agent-runner")
    }

    fn run(&self, extra: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = crate::sealed::command(binary());
        command
            .args([
                "task.yaml",
                "--unsafe-local",
                "--result-file",
                "result.json",
            ])
            .args(extra)
            .current_dir(self.path())
            .env("HOME", self.path().join("home"))
            .env_remove("OPENAI_API_KEY")
            .env_remove("AGENT_RUNNER_LOG")
            .stdin(Stdio::null());
        for (k, v) in env {
            command.env(k, v);
        }
        command.output().unwrap()
    }

    fn result(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.path().join("result.json")).unwrap())
            .unwrap()
    }

    fn read(&self, relative: &str) -> String {
        let path = self.records().join(relative);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("no {}: {e}", path.display()))
    }
}

/// A task: the mock planner, the command worker `./agent.sh`, `max_loops` loops.
fn task(id: &str, test: &str, max_loops: u32, extra_worker: &str) -> String {
    format!(
        "version: 1\ntask:\n  id: {id}\n  title: Say hello\n  repo: repo\n  prd:\n    text: |\n      - hello.txt says hello\n  test:\n    command: '{test}'\n    timeout_sec: 30\nrunner:\n  max_loops: {max_loops}\n  meta: {{kind: mock}}\n  worker:\n    kind: command\n    command: [./agent.sh]\n    max_run_time_sec: 30\n{extra_worker}"
    )
}

/// Every relative link `](target)` of a note, which must name a file or directory
/// beside the note.
fn links(note: &str) -> Vec<String> {
    note.split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .filter(|t| !t.starts_with("http"))
        .map(str::to_string)
        .collect()
}

/// A worker whose CLI is missing: it says so on stderr and exits 127, as `sh` does.
const MISSING_CLI_AGENT: &str = "#!/bin/sh\ncat > /dev/null\necho 'starting the agent'\necho 'sh: 1: codex: not found' >&2\nexit 127\n";

#[test]
fn a_failed_run_keeps_the_planner_exchanges_prompt_output_and_test_output() {
    // The first run fails as a missing CLI does; the second works, so the tests run.
    let agent = "#!/bin/sh\ncat > /dev/null\nif [ -f ../ran ]; then echo second; exit 0; fi\ntouch ../ran\necho 'starting the agent'\necho 'sh: 1: codex: not found' >&2\nexit 127\n";
    let f = Fixture::new(
        "failed",
        agent,
        &task("T", "echo test-says-hi; exit 1", 2, ""),
    );
    let o = f.run(&[], &[]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    // Each planner exchange: the messages sent, the raw reply.
    let plan: Value = serde_json::from_str(&f.read("task-T/planner/001-plan_task.json")).unwrap();
    assert_eq!(plan["protocol"], "plan_task");
    assert_eq!(plan["messages"][0]["role"], "user");
    assert!(
        plan["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("hello.txt says hello"),
        "{plan}"
    );
    assert!(!plan["reply"].as_str().unwrap().is_empty(), "{plan}");
    let next = f.read("task-T/planner/002-next_action.json");
    assert!(next.contains("\"next_action\""), "{next}");

    // The worker's prompt and its whole output.
    let prompt = f.read("task-T/runs/run-1/prompt.md");
    assert!(!prompt.trim().is_empty());
    assert_eq!(
        f.read("task-T/runs/run-1/stdout.txt"),
        "starting the agent\n"
    );
    assert_eq!(
        f.read("task-T/runs/run-1/stderr.txt"),
        "sh: 1: codex: not found\n"
    );
    let run: Value = serde_json::from_str(&f.read("task-T/runs/run-1/run.json")).unwrap();
    assert_eq!(run["exit_code"], 127);
    // The test command's output.
    assert_eq!(f.read("task-T/tests/001.txt"), "test-says-hi\n");

    // The note shows the failed worker's stderr and links every record, all of which
    // exist.
    let note = f.read("task-T.md");
    assert!(
        note.contains("Standard error (end):\n\n```text\nsh: 1: codex: not found\n```"),
        "{note}"
    );
    // Only the failed run's.
    assert_eq!(note.matches("Standard error (end)").count(), 1, "{note}");
    assert_eq!(f.read("task-T/runs/run-2/stdout.txt"), "second\n");
    let targets = links(&note);
    for wanted in [
        "task-T/",
        "task-T/runs/run-1/prompt.md",
        "task-T/runs/run-1/stdout.txt",
        "task-T/runs/run-1/stderr.txt",
        "task-T/planner/001-plan_task.json",
        "task-T/tests/001.txt",
    ] {
        assert!(
            targets.iter().any(|t| t == wanted),
            "{wanted} in {targets:?}"
        );
    }
    for target in &targets {
        assert!(f.records().join(target).exists(), "{target} does not exist");
    }
    assert_eq!(
        f.result()["artifacts"],
        f.records().join("task-T").display().to_string()
    );
    // The record, written while the runs went on, is no change of theirs.
    for run in f.result()["runs"].as_array().unwrap() {
        assert_eq!(run["files_changed"], serde_json::json!([]), "{run}");
    }
}

#[test]
fn output_over_eight_mib_is_cut_in_the_middle_with_its_size_noted() {
    let agent = "#!/bin/sh\ncat > /dev/null\necho first-line\nhead -c 9437184 /dev/zero | tr '\\0' x\necho\necho last-line\nexit 1\n";
    let f = Fixture::new("large", agent, &task("L", "true", 1, ""));
    let o = f.run(&[], &[]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let stdout = f.read("task-L/runs/run-1/stdout.txt");
    let total = 11 + 9_437_184 + 1 + 10;
    assert!(stdout.starts_with("first-line\nxxx"));
    assert!(stdout.ends_with("x\nlast-line\n"));
    assert!(
        stdout.contains(&format!(
            "bytes not kept; the stream was {total} bytes, of which the first 4194304 and the last 4194304 are kept]"
        )),
        "no marker"
    );
    assert!(stdout.len() < 8 * 1024 * 1024 + 200, "{}", stdout.len());
    let note = f.read("task-L.md");
    let dropped = total - 8 * 1024 * 1024;
    assert!(
        note.contains(&format!(
            "[stdout](task-L/runs/run-1/stdout.txt) ({total} bytes; {dropped} bytes in the middle not kept)"
        )),
        "{note}"
    );
}

#[test]
fn one_trace_id_is_in_every_log_line_event_the_note_and_the_result() {
    let f = Fixture::new(
        "trace",
        "#!/bin/sh\ncat > /dev/null\necho hi > hello.txt\necho done\n",
        &task("TR", "test -f hello.txt", 2, ""),
    );
    let o = f.run(&["--log-format", "json", "--events", "events.jsonl"], &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let id = f.result()["trace_id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 16, "{id}");
    assert!(id.chars().all(|c| c.is_ascii_hexdigit()), "{id}");

    let logs = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<Value> = logs
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    assert!(lines.len() >= 3, "{logs}");
    for line in &lines {
        assert_eq!(line["span"]["trace_id"], id.as_str(), "{line}");
    }

    let events = std::fs::read_to_string(f.path().join("events.jsonl")).unwrap();
    let events: Vec<Value> = events
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(events.len() > 5);
    for event in &events {
        assert_eq!(event["trace_id"], id.as_str(), "{event}");
    }
    assert!(
        f.read("task-TR.md")
            .contains(&format!("| Trace id | `{id}` |"))
    );
    let plan: Value = serde_json::from_str(&f.read("task-TR/planner/001-plan_task.json")).unwrap();
    assert_eq!(plan["trace_id"], id.as_str());

    // The next run is another trace; in text logs too every line names it.
    let o = f.run(&[], &[("AGENT_RUNNER_LOG", "debug")]);
    assert_eq!(o.status.code(), Some(0));
    let next = f.result()["trace_id"].as_str().unwrap().to_string();
    assert_ne!(next, id);
    let logs = String::from_utf8_lossy(&o.stderr);
    let log_lines: Vec<&str> = logs
        .lines()
        .filter(|l| !l.starts_with("agent-runner: "))
        .collect();
    assert!(log_lines.len() >= 3, "{logs}");
    for line in log_lines {
        assert!(line.contains(&format!("trace_id={next}")), "{line}");
    }
}

#[test]
fn a_rerun_keeps_the_earlier_record_beside_its_note_and_relinks_it() {
    let f = Fixture::new("rerun", MISSING_CLI_AGENT, &task("R", "true", 1, ""));
    assert_eq!(f.run(&[], &[]).status.code(), Some(3));
    let first_id = f.result()["trace_id"].as_str().unwrap().to_string();
    assert_eq!(f.run(&[], &[]).status.code(), Some(3));
    let second_id = f.result()["trace_id"].as_str().unwrap().to_string();

    // The earlier run: its note, result and record moved together, its links pointing at
    // its own record.
    let earlier = f.read("task-R-2.md");
    assert!(earlier.contains(&first_id));
    let targets = links(&earlier);
    assert!(
        targets
            .iter()
            .any(|t| t == "task-R-2/runs/run-1/stderr.txt"),
        "{targets:?}"
    );
    for target in &targets {
        assert!(f.records().join(target).exists(), "{target} does not exist");
    }
    let plan: Value = serde_json::from_str(&f.read("task-R-2/planner/001-plan_task.json")).unwrap();
    assert_eq!(plan["trace_id"], first_id.as_str());
    let earlier_result: Value = serde_json::from_str(&f.read("task-R-2.json")).unwrap();
    assert_eq!(
        earlier_result["artifacts"],
        f.records().join("task-R-2").display().to_string()
    );
    // The latest run has the plain names, and only its own files.
    assert!(f.read("task-R.md").contains(&second_id));
    let plan: Value = serde_json::from_str(&f.read("task-R/planner/001-plan_task.json")).unwrap();
    assert_eq!(plan["trace_id"], second_id.as_str());
    assert!(!f.records().join("task-R/runs/run-2").exists());
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[test]
fn the_record_never_holds_the_values_given_to_the_worker() {
    const SECRET: &str = "s3cret-token-0123456789";
    let agent = "#!/bin/sh\ncat > /dev/null\necho \"token=$API_TOKEN\"\necho \"token=$API_TOKEN\" >&2\nexit 1\n";
    let f = Fixture::new(
        "secrets",
        agent,
        &task(
            "S",
            "echo $API_TOKEN; true",
            1,
            "    env:\n      API_TOKEN: env:HOST_TOKEN\n",
        ),
    );
    let o = f.run(&[], &[("HOST_TOKEN", SECRET), ("OPENAI_API_KEY", SECRET)]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let written = files(&f.records());
    assert!(written.len() >= 6, "{written:?}");
    for file in written.iter().chain([&f.path().join("result.json")]) {
        let text = String::from_utf8_lossy(&std::fs::read(file).unwrap()).into_owned();
        assert!(
            !text.contains(SECRET),
            "{} holds the secret",
            file.display()
        );
    }
    // The worker did see it; the record says which variable it was.
    assert_eq!(
        f.read("task-S/runs/run-1/stdout.txt"),
        "token=[redacted: API_TOKEN]\n"
    );
    let run: Value = serde_json::from_str(&f.read("task-S/runs/run-1/run.json")).unwrap();
    assert!(
        run["env_names"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "API_TOKEN"),
        "{run}"
    );
}
