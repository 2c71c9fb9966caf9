//! Prompts from the templates in `templates/planner/` (embedded in the binary): the
//! built-in system prompt, to which a task's own `system_prompt` is added (never
//! replacing it: AR-M19), and one user prompt per protocol that shows the evidence and states
//! the exact reply schema. Evidence is cut by characters, never mid-UTF-8 (the original
//! cut bytes: AR-M2), and put in fences longer than any backtick run inside it so worker
//! output cannot break out of its block.

use std::sync::OnceLock;

use minijinja::value::{Serde, Value as TemplateValue};
use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde_json::{Value, json};

use super::request::{
    CompletionAssessmentRequest, CriterionState, NextActionRequest, PlanTaskRequest, Protocol,
    RunEvidence, TestEvidence,
};
use super::response;

const TEMPLATES: [(&str, &str); 5] = [
    (
        "plan_patch",
        include_str!("../../../templates/planner/plan_patch.md.j2"),
    ),
    (
        "system",
        include_str!("../../../templates/planner/system.md.j2"),
    ),
    (
        "plan_task",
        include_str!("../../../templates/planner/plan_task.md.j2"),
    ),
    (
        "next_action",
        include_str!("../../../templates/planner/next_action.md.j2"),
    ),
    (
        "completion_assessment",
        include_str!("../../../templates/planner/completion_assessment.md.j2"),
    ),
];

/// Characters kept of each piece of evidence. The ends of outputs are kept (that is where
/// agents and test runners print their verdict), the starts of everything else.
pub const PRD_CHARS: usize = 30_000;
pub const SUMMARY_CHARS: usize = 2_000;
pub const STDOUT_TAIL_CHARS: usize = 3_000;
pub const DIFF_STAT_CHARS: usize = 3_000;
pub const TEST_OUTPUT_CHARS: usize = 4_000;
pub const DESCRIPTION_CHARS: usize = 2_000;
pub const CUSTOM_SYSTEM_CHARS: usize = 20_000;
const SUGGESTED_IMPL_CHARS: usize = 5_000;
const FILES_SHOWN: usize = 100;
/// Runs shown to `next_action` (the latest) and to `completion_assessment`.
pub const NEXT_ACTION_RUNS: usize = 5;
pub const ASSESSMENT_RUNS: usize = 20;

/// A template failed to render: a bug in a bundled template, not in the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderError(pub String);

impl std::fmt::Display for RenderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the planner prompt template failed: {}", self.0)
    }
}

impl std::error::Error for RenderError {}

/// The first `chars` characters of `text`, with a note of what was cut.
pub fn head(text: &str, chars: usize) -> String {
    let mut indices = text.char_indices();
    match indices.nth(chars) {
        None => text.to_owned(),
        Some((end, _)) => {
            let cut = text[end..].chars().count();
            format!("{}\n[... {cut} more characters not shown]", &text[..end])
        }
    }
}

/// The last `chars` characters of `text`, with a note of what was cut.
pub fn tail(text: &str, chars: usize) -> String {
    let count = text.chars().count();
    if count <= chars {
        return text.to_owned();
    }
    let skip = count - chars;
    let start = text.char_indices().nth(skip).map_or(text.len(), |(i, _)| i);
    format!(
        "[... {skip} earlier characters not shown]\n{}",
        &text[start..]
    )
}

/// `text` in a Markdown fence longer than any backtick run inside it.
fn fenced(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat((longest + 1).max(3));
    format!("{fence}\n{}\n{fence}", text.trim_end_matches('\n'))
}

fn environment() -> &'static Result<Environment<'static>, String> {
    static ENV: OnceLock<Result<Environment<'static>, String>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        env.set_auto_escape_callback(|_| AutoEscape::None);
        // Missing optional evidence may be tested with `if`; anything else missing is a bug.
        env.set_undefined_behavior(UndefinedBehavior::SemiStrict);
        env.add_filter("fenced", |text: String| fenced(&text));
        for (name, source) in TEMPLATES {
            env.add_template(name, source)
                .map_err(|e| format!("{name}: {e}"))?;
        }
        Ok(env)
    })
}

fn render(name: &str, context: Value) -> Result<String, RenderError> {
    let env = environment().as_ref().map_err(|e| RenderError(e.clone()))?;
    let template = env
        .get_template(name)
        .map_err(|e| RenderError(format!("{name}: {e}")))?;
    template
        .render(TemplateValue::from(Serde(context)))
        .map_err(|e| RenderError(format!("{name}: {e:#}")))
}

/// The built-in system prompt, with the task's own instructions added after it.
pub fn system(custom: Option<&str>) -> Result<String, RenderError> {
    let custom = custom
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(|c| head(c, CUSTOM_SYSTEM_CHARS));
    render("system", json!({"custom": custom}))
}

fn schema_text(protocol: Protocol) -> Result<String, RenderError> {
    response::generated_schema(protocol)
        .map(|text| text.trim_end().to_owned())
        .map_err(|e| RenderError(format!("the {} reply schema: {e}", protocol.name())))
}

fn run_view(run: &RunEvidence) -> Value {
    let shown: Vec<&String> = run.files_changed.iter().take(FILES_SHOWN).collect();
    json!({
        "id": run.id,
        "exit_code": run.exit_code,
        "duration_ms": run.duration_ms,
        "summary": head(run.summary.trim(), SUMMARY_CHARS),
        "stdout_tail": tail(run.stdout_tail.trim(), STDOUT_TAIL_CHARS),
        "diff_stat": head(run.diff_stat.trim(), DIFF_STAT_CHARS),
        "files_changed": shown,
        "files_not_shown": run.files_changed.len().saturating_sub(FILES_SHOWN),
    })
}

fn test_view(test: Option<&TestEvidence>) -> Value {
    match test {
        None => Value::Null,
        Some(test) => json!({
            "command": test.command,
            "exit_code": test.exit_code,
            "passed": test.passed(),
            "output_tail": tail(test.output_tail.trim(), TEST_OUTPUT_CHARS),
        }),
    }
}

/// The latest `limit` runs and how many earlier ones were left out.
fn runs_view(runs: &[RunEvidence], limit: usize) -> (Vec<Value>, usize) {
    let omitted = runs.len().saturating_sub(limit);
    (runs[omitted..].iter().map(run_view).collect(), omitted)
}

fn criterion_view(state: &CriterionState) -> Value {
    json!({
        "id": state.criterion.id,
        "description": head(&state.criterion.description, DESCRIPTION_CHARS),
        "critical": state.criterion.critical,
        "status": state.status,
        "comment": state.comment.as_deref().map(|c| head(c, DESCRIPTION_CHARS)),
    })
}

/// Multiverse's `plan_patch` request as the planner reads it: `context` has `message`,
/// `tasks` (`id`, `title`, `status`, `parent`, `dependencies`, `phase`, `milestone`),
/// `tasks_not_shown`, `history` (`role`, `content`) and `schema` (the reply schema's text);
/// the caller bounds each.
pub fn plan_patch(context: Value) -> Result<String, RenderError> {
    render("plan_patch", context)
}

/// The `plan_task` request as the planner reads it.
pub fn plan_task(request: &PlanTaskRequest) -> Result<String, RenderError> {
    let suggested = match &request.suggested_impl {
        Some(v) => Some(head(
            &serde_json::to_string_pretty(v)
                .map_err(|e| RenderError(format!("the suggested implementation: {e}")))?,
            SUGGESTED_IMPL_CHARS,
        )),
        None => None,
    };
    render(
        "plan_task",
        json!({
            "task_id": request.task_id,
            "title": request.title,
            "prd": head(request.prd.trim(), PRD_CHARS),
            "suggested_impl": suggested,
            "test_command": request.test_command,
            "schema": schema_text(Protocol::PlanTask)?,
        }),
    )
}

/// The `next_action` request as the planner reads it.
pub fn next_action(request: &NextActionRequest) -> Result<String, RenderError> {
    let (runs, omitted) = runs_view(&request.runs, NEXT_ACTION_RUNS);
    render(
        "next_action",
        json!({
            "title": request.title,
            "prd": head(request.prd.trim(), PRD_CHARS),
            "criteria": request.acceptance_criteria.iter().map(criterion_view).collect::<Vec<_>>(),
            "runs": runs,
            "runs_omitted": omitted,
            "loops_used": request.loops_used,
            "max_loops": request.max_loops,
            "test": test_view(request.last_test.as_ref()),
            "schema": schema_text(Protocol::NextAction)?,
        }),
    )
}

/// The `completion_assessment` request as the planner reads it.
pub fn completion_assessment(request: &CompletionAssessmentRequest) -> Result<String, RenderError> {
    let (runs, omitted) = runs_view(&request.runs, ASSESSMENT_RUNS);
    let criteria: Vec<Value> = request
        .acceptance_criteria
        .iter()
        .map(|c| {
            json!({"id": c.id, "description": head(&c.description, DESCRIPTION_CHARS), "critical": c.critical})
        })
        .collect();
    render(
        "completion_assessment",
        json!({
            "title": request.title,
            "prd": head(request.prd.trim(), PRD_CHARS),
            "criteria": criteria,
            "runs": runs,
            "runs_omitted": omitted,
            "test": test_view(request.test.as_ref()),
            "schema": schema_text(Protocol::CompletionAssessment)?,
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_are_by_character_never_inside_one() {
        // AR-M2: the original cut bytes and split multi-byte characters.
        let text = "日本語のテキスト".repeat(10);
        let cut = head(&text, 5);
        assert!(cut.starts_with("日本語のテ\n[... 75 more"), "{cut}");
        let end = tail(&text, 4);
        assert!(
            end.ends_with("キスト") && end.contains("76 earlier"),
            "{end}"
        );
        assert_eq!(head("short", 10), "short");
        assert_eq!(tail("short", 10), "short");
    }

    #[test]
    fn fences_outgrow_backticks_inside() {
        assert_eq!(fenced("a"), "```\na\n```");
        assert_eq!(fenced("x ```` y"), "`````\nx ```` y\n`````");
    }

    #[test]
    fn every_template_renders_and_the_custom_prompt_is_added() {
        let plain = system(None).unwrap();
        let custom = system(Some("Prefer small steps.")).unwrap();
        assert!(
            custom.starts_with(plain.trim_end()),
            "the built-in prompt must stay first"
        );
        assert!(custom.contains("Prefer small steps."));
        let plan = plan_task(&PlanTaskRequest {
            task_id: "t-1".into(),
            title: "Add".into(),
            prd: "- adds".into(),
            suggested_impl: Some(json!({"language": "rust"})),
            test_command: Some("cargo test".into()),
        })
        .unwrap();
        assert!(plan.contains("\"const\": \"plan_task\""), "{plan}");
        assert!(plan.contains("cargo test") && plan.contains("rust"));
    }
}
