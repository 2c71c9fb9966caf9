//! What a task leaves behind: the Task Note (Markdown from
//! `templates/agent-runner/task_note.md.j2`) and the result JSON, both written on every
//! exit path and atomically (by the host, with `codeintel::store::atomic_write`), so a reader never sees half a file (the original wrote the
//! note only on success, overwrote it on a rerun and broke its code fences, AR-M9).

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Value, json};

const NOTE_TEMPLATE: &str = include_str!("../../templates/agent-runner/task_note.md.j2");

/// How a task ended, as its caller sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Complete,
    Failed,
    Incomplete,
    Cancelled,
    /// The planner asked a question only a person can answer (`ask_human`).
    #[serde(rename = "needs_human")]
    NeedsHuman,
}

impl Status {
    /// 0 complete, 1 failed, 3 incomplete (loops exhausted), 4 needs a human, 130
    /// cancelled.
    pub fn exit_code(self) -> i32 {
        match self {
            Status::Complete => 0,
            Status::Failed => 1,
            Status::Incomplete => 3,
            Status::NeedsHuman => 4,
            Status::Cancelled => 130,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Complete => "complete",
            Status::Failed => "failed",
            Status::Incomplete => "incomplete",
            Status::Cancelled => "cancelled",
            Status::NeedsHuman => "needs_human",
        }
    }
}

/// One acceptance criterion and whether the assessment found it met.
#[derive(Debug, Clone, Serialize)]
pub struct CriterionResult {
    pub id: String,
    pub description: String,
    pub passed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// Everything the note and the result say about a task.
#[derive(Debug, Clone, Serialize)]
pub struct TaskReport {
    pub task: Value,
    pub status: Status,
    pub exit_code: i32,
    /// The state the task ended in.
    pub state: String,
    /// One paragraph: why it ended as it did.
    pub summary: String,
    /// The planner's question when the task needs a human.
    pub question: Option<String>,
    pub started_at: String,
    pub finished_at: String,
    pub planner: String,
    pub worker: String,
    pub prd: String,
    pub suggested_impl: Option<Value>,
    pub acceptance_criteria: Vec<CriterionResult>,
    /// Worker runs as recorded (id, exit_code, ending, duration, summary, files, ...).
    pub runs: Vec<Value>,
    /// The last test run and the planner's assessment, when the task got that far.
    pub validation: Option<Value>,
    pub planner_calls: Vec<Value>,
    /// What went wrong on the way out (a sandbox not removed).
    pub warnings: Vec<String>,
    /// State changes and what the engine said, in order.
    pub timeline: Vec<String>,
    /// The run's id in its logs, events, note and result.
    pub trace_id: String,
    /// The run's record directory relative to the note (`task-<id>`), once written.
    pub artifacts: Option<String>,
    /// The same directory on the host, for the result JSON.
    #[serde(skip)]
    pub artifacts_dir: String,
}

impl TaskReport {
    /// The Task Note in Markdown.
    pub fn note(&self) -> Result<String, NoteError> {
        let mut env = minijinja::Environment::new();
        env.add_filter("fence", fence);
        env.add_template("task_note.md", NOTE_TEMPLATE)
            .map_err(NoteError::Template)?;
        let template = env
            .get_template("task_note.md")
            .map_err(NoteError::Lookup)?;
        template
            .render(minijinja::value::Value::from(minijinja::value::Serde(self)))
            .map_err(NoteError::Render)
    }

    /// The result JSON of `--result-file`.
    pub fn result(&self) -> Value {
        json!({
            "task_id": self.task.get("id"),
            "trace_id": self.trace_id,
            "status": self.status,
            "exit_code": self.exit_code,
            "state": self.state,
            "summary": self.summary,
            "question": self.question,
            "acceptance_criteria": self.acceptance_criteria,
            "runs": self.runs,
            "validation": self.validation,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "warnings": self.warnings,
            "artifacts": self.artifacts.as_ref().map(|_| &self.artifacts_dir),
        })
    }
}

/// Why the Task Note could not be written out as text.
#[derive(Debug)]
pub enum NoteError {
    /// The built-in template does not compile.
    Template(minijinja::Error),
    /// The template, once added, cannot be found again.
    Lookup(minijinja::Error),
    /// Rendering the report through the template failed.
    Render(minijinja::Error),
}

impl std::fmt::Display for NoteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoteError::Template(e) => write!(f, "the Task Note template does not compile: {e}"),
            NoteError::Lookup(e) => e.fmt(f),
            NoteError::Render(e) => write!(f, "the Task Note could not be rendered: {e}"),
        }
    }
}

impl std::error::Error for NoteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NoteError::Template(e) | NoteError::Lookup(e) | NoteError::Render(e) => Some(e),
        }
    }
}

/// `text` in a fenced code block whose fence is longer than any backtick run inside, so
/// output that contains ``` cannot close it early.
fn fence(text: String, lang: Option<String>) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let ticks = "`".repeat(longest.max(2) + 1);
    let body = text.trim_end_matches('\n');
    format!("{ticks}{}\n{body}\n{ticks}", lang.unwrap_or_default())
}

/// Where a task's note goes: `<repo>/.agent-runner/task-<id>.md`, its result JSON beside
/// it (`.json`) and its record directory (`task-<id>/`). The latest run's note always has
/// that name: when the run starts, an earlier run's note, result and directory are moved
/// together to the next free `task-<id>-<n>` names (`artifacts::rotate_earlier`), so
/// nothing is lost and a reader of `task-<id>.md` never sees a stale run.
pub(crate) fn note_path(repo: &Path, task_id: &str) -> PathBuf {
    repo.join(super::artifacts::RECORD_DIR)
        .join(format!("task-{task_id}.md"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A temporary directory removed when the test ends, pass or fail.
    struct TempDir(std::path::PathBuf);

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn report() -> TaskReport {
        TaskReport {
            task: json!({"id": "T-1", "title": "Say hello", "repo": "/r"}),
            status: Status::Complete,
            exit_code: 0,
            state: "COMPLETE".into(),
            summary: "Every acceptance criterion is met.".into(),
            question: None,
            started_at: "2026-11-24T07:00:00.000Z".into(),
            finished_at: "2026-11-24T07:01:00.000Z".into(),
            planner: "mock".into(),
            worker: "codex-cli (local)".into(),
            prd: "Write hello.txt".into(),
            suggested_impl: None,
            acceptance_criteria: vec![CriterionResult {
                id: "AC-1".into(),
                description: "hello.txt exists".into(),
                passed: true,
                comment: None,
            }],
            runs: vec![json!({
                "id": "run-1", "exit_code": 0, "ending": "exited", "duration_ms": 12,
                "started_at": "a", "finished_at": "b", "files_changed": ["hello.txt"],
                "summary": "wrote it", "diff_stat": " hello.txt | 1 +",
                "stdout_tail": "```\nbroken fence\n```"
            })],
            validation: Some(
                json!({"test": {"command": "test -f hello.txt", "exit_code": 0,
                "passed": true, "duration_ms": 3, "output_tail": ""}}),
            ),
            planner_calls: vec![],
            warnings: vec![],
            timeline: vec!["PENDING -> PREFLIGHT".into()],
            trace_id: "0123456789abcdef".into(),
            artifacts: Some("task-T-1".into()),
            artifacts_dir: "/r/.agent-runner/task-T-1".into(),
        }
    }

    #[test]
    fn the_note_checks_met_criteria_and_fences_output_safely() {
        let note = report().note().unwrap();
        assert!(note.contains("# Task Note: T-1 (Say hello)"), "{note}");
        assert!(note.contains("- [x] **AC-1** hello.txt exists"), "{note}");
        assert!(note.contains("`hello.txt`"), "{note}");
        // The run's output holds a ``` fence: the note's fence is longer.
        assert!(
            note.contains("````text\n```\nbroken fence\n```\n````"),
            "{note}"
        );
        assert!(note.contains("2026-11-24T07:01:00.000Z"));
    }

    #[test]
    fn the_result_has_the_documented_fields() {
        let result = report().result();
        for key in [
            "status",
            "exit_code",
            "summary",
            "acceptance_criteria",
            "runs",
            "validation",
            "started_at",
            "finished_at",
        ] {
            assert!(result.get(key).is_some(), "{key}");
        }
        assert_eq!(result["status"], "complete");
        assert_eq!(result["acceptance_criteria"][0]["passed"], true);
    }

    #[test]
    fn exit_codes_follow_the_status() {
        assert_eq!(Status::Complete.exit_code(), 0);
        assert_eq!(Status::Failed.exit_code(), 1);
        assert_eq!(Status::Incomplete.exit_code(), 3);
        assert_eq!(Status::NeedsHuman.exit_code(), 4);
        assert_eq!(Status::NeedsHuman.as_str(), "needs_human");
        assert_eq!(Status::Cancelled.exit_code(), 130);
    }

    #[test]
    fn a_rerun_keeps_the_earlier_note_and_takes_the_name() {
        let dir = std::env::temp_dir().join(format!("code-intel-note-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let _dir = TempDir(dir.clone());
        let first = note_path(&dir, "T");
        std::fs::create_dir_all(first.parent().unwrap()).unwrap();
        std::fs::write(&first, b"one").unwrap();
        std::fs::write(first.with_extension("json"), b"{}").unwrap();
        assert!(super::super::artifacts::rotate_earlier(&dir, "T").is_empty());
        let second = note_path(&dir, "T");
        assert_eq!(first, second);
        assert!(second.ends_with(".agent-runner/task-T.md"));
        let kept = dir.join(".agent-runner/task-T-2.md");
        assert_eq!(std::fs::read(&kept).unwrap(), b"one");
        assert!(kept.with_extension("json").exists());
        assert!(!second.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
