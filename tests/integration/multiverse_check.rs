//! `multiverse check` and `--repair` on a real workspace through the binary: each kind of
//! damage (a state file unreadable or different from the journal's fold, a journal line
//! damaged in the middle, a torn last line) is found with its file, line and repair; `run`
//! refuses to start on it; the repair leaves a workspace `check` finds clean and keeps
//! every damaged file byte for byte; a torn tail a writer cuts off is kept too.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{TempDir, mv, output_text as text};

/// A workspace with three tasks added by three commands (three journal entries and more).
fn workspace(dir: &Path) -> PathBuf {
    let project = dir.join("project");
    std::fs::create_dir_all(&project).unwrap();
    crate::support::git_repo(&project, &[("README.md", "# project\n")]);
    let runner = env!("CARGO_BIN_EXE_agent-runner");
    let o = mv(
        dir,
        &[
            "init",
            project.to_str().unwrap(),
            "--planner",
            "mock",
            "--agent-runner",
            runner,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    for title in ["lexer", "parser", "printer"] {
        let o = mv(dir, &["task", "add", title]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    dir.join("ws")
}

/// `check --json`: its exit code and findings.
fn check(dir: &Path) -> (Option<i32>, Vec<Value>) {
    let o = mv(dir, &["--json", "check"]);
    let report: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", text(&o)));
    (
        o.status.code(),
        report["findings"].as_array().unwrap().clone(),
    )
}

fn kept(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    found.sort();
    found
}

#[test]
fn a_clean_workspace_checks_ok_and_damaged_state_files_are_found_refused_and_repaired() {
    let tmp = TempDir::new("mv-check-state");
    let ws = workspace(tmp.path());
    let o = mv(tmp.path(), &["check"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).starts_with("ok: "),
        "{}",
        text(&o)
    );

    // Damage from outside: one file unreadable, another edited to say something the
    // journal never did (its number kept, so only the fold tells).
    let runtime = ws.join("state/runtime.json");
    std::fs::write(&runtime, b"{\"seq\": 2, \"data\": ").unwrap();
    let plan_path = ws.join("design/plan.json");
    let plan = std::fs::read_to_string(&plan_path).unwrap();
    let edited = plan.replace("\"parser\"", "\"PARSER (edited)\"");
    assert_ne!(plan, edited);
    std::fs::write(&plan_path, &edited).unwrap();

    let (code, findings) = check(tmp.path());
    assert_eq!(code, Some(1));
    let keys: Vec<(&str, &str)> = findings
        .iter()
        .map(|f| (f["key"].as_str().unwrap(), f["file"].as_str().unwrap()))
        .collect();
    assert_eq!(
        keys,
        [
            ("state.differs", "design/plan.json"),
            ("state.unreadable", "state/runtime.json")
        ]
    );
    assert!(
        findings
            .iter()
            .all(|f| f["repair"].as_str().unwrap().contains("rewrite"))
    );
    // Nothing was changed by looking.
    assert_eq!(std::fs::read_to_string(&plan_path).unwrap(), edited);

    // A start refuses, naming each finding and the repair.
    let o = mv(tmp.path(), &["run"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains("[workspace.damaged]")
            && said.contains("design/plan.json")
            && said.contains("state/runtime.json")
            && said.contains("multiverse check --repair"),
        "{said}"
    );

    let o = mv(tmp.path(), &["check", "--repair"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(check(tmp.path()), (Some(0), vec![]));
    let titles: Vec<String> = tasks(tmp.path());
    assert_eq!(titles, ["lexer", "parser", "printer"]);
    // The damaged files are kept as they were.
    let kept_plan = kept(&ws.join("design"), "plan.json.damaged-");
    assert_eq!(kept_plan.len(), 1, "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&kept_plan[0]).unwrap(), edited);
    let kept_runtime = kept(&ws.join("state"), "runtime.json.damaged-");
    assert_eq!(
        std::fs::read(&kept_runtime[0]).unwrap(),
        b"{\"seq\": 2, \"data\": "
    );
}

fn tasks(dir: &Path) -> Vec<String> {
    let o = mv(dir, &["--json", "task", "list"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    serde_json::from_slice::<Vec<Value>>(&o.stdout)
        .unwrap()
        .iter()
        .map(|t| t["title"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_journal_damaged_in_the_middle_is_cut_back_to_its_trusted_entries_and_kept_whole() {
    let tmp = TempDir::new("mv-check-journal");
    let ws = workspace(tmp.path());
    let journal = ws.join("history/journal.jsonl");
    let original = std::fs::read_to_string(&journal).unwrap();
    let lines: Vec<&str> = original.lines().collect();
    assert!(lines.len() >= 3, "{original}");
    // The last task's entry damaged: a byte flipped inside it.
    let damaged_at = lines
        .iter()
        .position(|l| l.contains("\"printer\""))
        .expect("the entry that added printer");
    let mut damaged: Vec<String> = lines.iter().map(ToString::to_string).collect();
    damaged[damaged_at] = damaged[damaged_at].replacen('{', "#", 1);
    let damaged = damaged.join("\n") + "\n";
    std::fs::write(&journal, &damaged).unwrap();

    let (code, findings) = check(tmp.path());
    assert_eq!(code, Some(1));
    let first = &findings[0];
    assert_eq!(first["key"], "journal.corrupt");
    assert_eq!(first["line"], damaged_at as u64 + 1);
    let after = lines.len() - damaged_at - 1;
    assert!(
        first["problem"]
            .as_str()
            .unwrap()
            .contains(&format!("{after} line(s) follow it")),
        "{first}"
    );
    assert!(first["repair"].as_str().unwrap().contains(&format!(
        "keep the {damaged_at} entries before line {}",
        damaged_at + 1
    )));

    let o = mv(tmp.path(), &["check", "--repair"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(check(tmp.path()), (Some(0), vec![]));
    let now = std::fs::read_to_string(&journal).unwrap();
    assert_eq!(now, lines[..damaged_at].join("\n") + "\n");
    let whole = kept(&ws.join("history"), "journal.jsonl.damaged-");
    assert_eq!(std::fs::read_to_string(&whole[0]).unwrap(), damaged);
    assert_eq!(tasks(tmp.path()), ["lexer", "parser"]);
    // The workspace takes changes again.
    let o = mv(tmp.path(), &["task", "add", "printer"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(check(tmp.path()), (Some(0), vec![]));
}

#[test]
fn a_torn_last_line_is_reported_and_its_bytes_kept_when_a_writer_cuts_it_off() {
    let tmp = TempDir::new("mv-check-torn");
    let ws = workspace(tmp.path());
    let journal = ws.join("history/journal.jsonl");
    let mut bytes = std::fs::read(&journal).unwrap();
    let entries = bytes.iter().filter(|b| **b == b'\n').count();
    bytes.extend_from_slice(br#"{"seq":99,"at":"2026-12-08T0"#);
    std::fs::write(&journal, &bytes).unwrap();

    let (code, findings) = check(tmp.path());
    assert_eq!(code, Some(1));
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0]["key"], "journal.torn");
    assert_eq!(findings[0]["line"], entries as u64 + 1);

    // A writer (here `task add` without a daemon) cuts it off and keeps it, and says so
    // in plain text to a stderr that is not a terminal (no colour codes).
    let o = mv(tmp.path(), &["task", "add", "more"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(said.contains("cut off a torn journal line"), "{said}");
    assert!(!said.contains('\u{1b}'), "colour codes in a pipe: {said:?}");
    let torn = kept(&ws.join("history"), "journal.jsonl.torn-");
    assert_eq!(torn.len(), 1);
    assert_eq!(
        std::fs::read(&torn[0]).unwrap(),
        br#"{"seq":99,"at":"2026-12-08T0"#
    );
    assert_eq!(check(tmp.path()), (Some(0), vec![]));
    assert_eq!(tasks(tmp.path()).len(), 4);
}
