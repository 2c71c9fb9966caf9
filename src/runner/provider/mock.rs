//! The `mock` provider: an offline planner that decides on the structured request, never
//! on prompt text (the original matched prompt substrings, missed the completion prompt
//! and could never finish a task: AR-B5). Without a script it plans criteria from the PRD's
//! bullet lines, runs the worker until a run and the test succeed, then marks the task
//! complete and judges it satisfied (and turns a chat message's bullet lines into a
//! `plan_patch`); with a script ([`super::script`]) it answers with the
//! scripted replies first.

use std::path::Path;

use serde_json::{Value, json};

use super::prompt::{Prompt, Provider, ProviderError};
use super::script::{self, Entry};
use crate::runner::cancel::Cancel;
use crate::runner::protocol::request::{
    CompletionAssessmentRequest, NextActionRequest, PlanTaskRequest, Protocol,
};

/// Criteria taken from a PRD at most.
const MAX_BULLETS: usize = 20;

/// The mock planner.
#[derive(Debug, Clone, Default)]
pub(crate) struct MockProvider {
    script: Vec<Entry>,
    /// The script's file name, for `name()`.
    source: Option<String>,
}

impl MockProvider {
    /// The unscripted mock.
    pub(crate) fn new() -> MockProvider {
        MockProvider::default()
    }

    /// A mock answering from a script's text first (see [`super::script`]).
    pub(crate) fn from_script(text: &str, source: &str) -> Result<MockProvider, ProviderError> {
        let script = script::parse(text).map_err(|message| ProviderError::Script {
            message: format!("{source}: {message}"),
        })?;
        Ok(MockProvider {
            script,
            source: Some(source.to_owned()),
        })
    }

    /// A mock answering from the script file at `path` first. A file over
    /// [`script::MAX_SCRIPT_BYTES`] by its size is refused unread, and the read stops one
    /// byte past the limit, so one that grows meanwhile is refused without being read whole.
    pub(crate) fn from_file(path: &Path) -> Result<MockProvider, ProviderError> {
        use std::io::Read as _;
        let shown = path.display().to_string();
        let cannot = |e: std::io::Error| ProviderError::Config {
            message: format!("cannot read the mock script {shown}: {e}"),
        };
        let limit = script::MAX_SCRIPT_BYTES as u64;
        let file = std::fs::File::open(path).map_err(cannot)?;
        let size = file.metadata().map_err(cannot)?.len();
        if size > limit {
            return Err(ProviderError::Script {
                message: format!("{shown} is {size} bytes, over the {limit}-byte limit"),
            });
        }
        let mut bytes = Vec::new();
        file.take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(cannot)?;
        if bytes.len() as u64 > limit {
            return Err(ProviderError::Script {
                message: format!("{shown} grew past the {limit}-byte limit while it was read"),
            });
        }
        let text = String::from_utf8(bytes).map_err(|_| ProviderError::Config {
            message: format!("cannot read the mock script {shown}: it is not UTF-8 text"),
        })?;
        MockProvider::from_script(&text, &shown)
    }

    /// The scripted reply for this call, if an entry answers it (and uses it up).
    fn scripted(&mut self, prompt: &Prompt) -> Option<String> {
        let entry = self.script.iter_mut().find(|e| {
            e.left > 0
                && e.protocol == prompt.protocol
                && e.when
                    .as_ref()
                    .is_none_or(|when| script::contains(&prompt.request, when))
        })?;
        entry.left -= 1;
        Some(entry.reply.clone())
    }
}

impl Provider for MockProvider {
    fn complete(&mut self, prompt: &Prompt, cancel: &Cancel) -> Result<String, ProviderError> {
        if cancel.is_cancelled() {
            return Err(ProviderError::Cancelled);
        }
        if let Some(reply) = self.scripted(prompt) {
            tracing::debug!(protocol = %prompt.protocol, "mock planner: scripted reply");
            return Ok(reply);
        }
        let unreadable = |e: serde_json::Error| ProviderError::Script {
            message: format!("the mock cannot read the {} request: {e}", prompt.protocol),
        };
        let reply = match prompt.protocol {
            Protocol::PlanTask => {
                plan(&serde_json::from_value(prompt.request.clone()).map_err(unreadable)?)
            }
            Protocol::NextAction => {
                next(&serde_json::from_value(prompt.request.clone()).map_err(unreadable)?)
            }
            Protocol::CompletionAssessment => {
                assess(&serde_json::from_value(prompt.request.clone()).map_err(unreadable)?)
            }
            Protocol::PlanPatch => plan_patch(&prompt.request),
        };
        Ok(reply.to_string())
    }

    fn name(&self) -> String {
        match &self.source {
            Some(source) => format!("mock (script {source})"),
            None => "mock".to_owned(),
        }
    }
}

fn envelope(protocol: Protocol, payload: Value) -> Value {
    json!({"type": protocol.name(), "version": 1, "payload": payload})
}

/// One criterion per `- ` or `* ` line of the PRD, or one for the whole PRD.
fn plan(request: &PlanTaskRequest) -> Value {
    let mut bullets: Vec<&str> = request
        .prd
        .lines()
        .filter_map(|line| {
            let line = line.trim_start();
            line.strip_prefix("- ")
                .or_else(|| line.strip_prefix("* "))
                .map(str::trim)
        })
        .filter(|text| !text.is_empty())
        .take(MAX_BULLETS)
        .collect();
    if bullets.is_empty() {
        bullets.push("The task described in the PRD is done");
    }
    let criteria: Vec<Value> = bullets
        .iter()
        .enumerate()
        .map(|(i, text)| {
            json!({"id": format!("AC-{}", i + 1), "description": text, "type": "functional", "critical": true})
        })
        .collect();
    envelope(Protocol::PlanTask, json!({"acceptance_criteria": criteria}))
}

/// Titles taken from a chat message at most: the operations a `plan_patch` may carry
/// (Multiverse's `MAX_OPERATIONS`). More are not dropped silently: the understanding says
/// how many were left for another message.
const MAX_CHAT_TASKS: usize = 200;
/// Questions taken from a chat message at most (a `plan_patch`'s `MAX_QUESTIONS`).
const MAX_CHAT_QUESTIONS: usize = 20;

/// A chat turn's plan: one task per `- `, `* ` or `1. ` line of the request's `message`
/// (the whole first line when there is none), each depending on the one before when the
/// message says "in order" (順番), or on the items a line names at its end as
/// `(after 1, 3)` (their numbers in the list, from 1); a line ending in `?` is a question
/// instead. A `# ` line names the milestone and a `## ` line the phase of the items
/// after it (a milestone starts without a phase).
fn plan_patch(request: &Value) -> Value {
    let message = request["message"].as_str().unwrap_or_default();
    let mut titles = Vec::new();
    let mut questions = Vec::new();
    let (mut milestone, mut phase): (Option<&str>, Option<&str>) = (None, None);
    for line in message.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix("## ") {
            phase = Some(name.trim()).filter(|n| !n.is_empty());
            continue;
        }
        if let Some(name) = line.strip_prefix("# ") {
            (milestone, phase) = (Some(name.trim()).filter(|n| !n.is_empty()), None);
            continue;
        }
        let item = line
            .strip_prefix("- ")
            .or_else(|| line.strip_prefix("* "))
            .or_else(|| {
                let (number, rest) = line.split_once(". ")?;
                number.chars().all(|c| c.is_ascii_digit()).then_some(rest)
            })
            .map(str::trim);
        if line.ends_with(['?', '？']) {
            questions.push(item.unwrap_or(line).to_owned());
        } else if let Some(item) = item.filter(|i| !i.is_empty()) {
            let (title, after) = split_after(item);
            let place = (milestone, phase);
            titles.push((title.chars().take(200).collect::<String>(), after, place));
        }
    }
    if titles.is_empty() && questions.is_empty() {
        let first = message.lines().map(str::trim).find(|l| !l.is_empty());
        titles.push((
            first.unwrap_or("the request").chars().take(200).collect(),
            Vec::new(),
            (None, None),
        ));
    }
    let (items, asked) = (titles.len(), questions.len());
    titles.truncate(MAX_CHAT_TASKS);
    questions.truncate(MAX_CHAT_QUESTIONS);
    let ordered = message.to_lowercase().contains("in order") || message.contains("順番");
    let operations: Vec<Value> = titles
        .iter()
        .enumerate()
        .map(|(i, (title, after, (milestone, phase)))| {
            let dependencies: Vec<String> = if ordered && i > 0 {
                vec![format!("tmp-{i}")]
            } else {
                after.iter().map(|n| format!("tmp-{n}")).collect()
            };
            let mut create = json!({"op": "create", "temp_id": format!("tmp-{}", i + 1),
                "title": title, "acceptance_criteria": [format!("{title}: done")],
                "dependencies": dependencies});
            if let Some(milestone) = milestone {
                create["milestone"] = json!(milestone);
            }
            if let Some(phase) = phase {
                create["phase"] = json!(phase);
            }
            create
        })
        .collect();
    let mut understanding = format!(
        "mock: {} task(s) and {} question(s) from the request",
        operations.len(),
        questions.len()
    );
    for (kept, found, what) in [
        (operations.len(), items, "items"),
        (questions.len(), asked, "questions"),
    ] {
        if kept < found {
            understanding.push_str(&format!(
                "; only the first {kept} of its {found} {what} (a patch holds no more): send the rest in another message"
            ));
        }
    }
    envelope(
        Protocol::PlanPatch,
        json!({"understanding": understanding, "operations": operations, "questions": questions}),
    )
}

/// A list item's title and the item numbers its trailing `(after 1, 3)` names.
fn split_after(item: &str) -> (&str, Vec<usize>) {
    let Some(open) = item.rfind("(after ").filter(|_| item.ends_with(')')) else {
        return (item, Vec::new());
    };
    let numbers: Option<Vec<usize>> = item[open + "(after ".len()..item.len() - 1]
        .split(',')
        .map(|n| n.trim().parse().ok())
        .collect();
    match numbers {
        Some(numbers) => (item[..open].trim_end(), numbers),
        None => (item, Vec::new()),
    }
}

/// Work until the last run exited 0 and the last test (if any) passed.
fn next(request: &NextActionRequest) -> Value {
    let last = request.runs.last();
    let test_failed = request.last_test.as_ref().is_some_and(|t| !t.passed());
    let (action, reason) = match last {
        None => ("run_worker", "no worker run yet".to_owned()),
        Some(run) if run.exit_code != 0 => (
            "run_worker",
            format!(
                "the last run ({}) exited with code {}",
                run.id, run.exit_code
            ),
        ),
        Some(_) if test_failed => ("run_worker", "the last test failed".to_owned()),
        Some(run) => (
            "mark_complete",
            format!("the last run ({}) succeeded", run.id),
        ),
    };
    if action == "mark_complete" {
        return envelope(
            Protocol::NextAction,
            json!({"decision": {"action": action, "reason": reason}}),
        );
    }
    let mut prompt = format!("Task: {}\n\n{}\n", request.title, request.prd.trim());
    if !request.acceptance_criteria.is_empty() {
        prompt.push_str("\nAcceptance criteria:\n");
        for c in &request.acceptance_criteria {
            prompt.push_str(&format!(
                "- {}: {}\n",
                c.criterion.id, c.criterion.description
            ));
        }
    }
    if last.is_some() {
        prompt.push_str(&format!(
            "\nThe previous attempt did not succeed: {reason}.\n"
        ));
    }
    envelope(
        Protocol::NextAction,
        json!({"decision": {"action": action, "reason": reason}, "worker_call": {"prompt": prompt}}),
    )
}

/// Satisfied iff the last run exited 0 and the test (if any) passed.
fn assess(request: &CompletionAssessmentRequest) -> Value {
    let run_ok = request.runs.last().is_some_and(|r| r.exit_code == 0);
    let test_ok = request.test.as_ref().is_none_or(|t| t.passed());
    let satisfied = run_ok && test_ok;
    let comment = match (run_ok, test_ok) {
        (true, true) => "the last run succeeded and the test passed",
        (false, _) => "the last worker run did not succeed",
        (true, false) => "the test failed",
    };
    let status = if satisfied { "passed" } else { "failed" };
    let verdicts: Vec<Value> = request
        .acceptance_criteria
        .iter()
        .map(|c| json!({"id": c.id, "status": status, "comment": comment}))
        .collect();
    envelope(
        Protocol::CompletionAssessment,
        json!({"all_criteria_satisfied": satisfied, "summary": comment, "by_criterion": verdicts}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_name_the_milestone_and_phase_of_the_items_after_them() {
        let patch =
            plan_patch(&json!({"message": "Plan:\n# v1\n## build\n- a\n## check\n- b\n# v2\n- c"}));
        let places: Vec<(Value, Value)> = patch["payload"]["operations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|op| (op["milestone"].clone(), op["phase"].clone()))
            .collect();
        assert_eq!(
            places,
            [
                (json!("v1"), json!("build")),
                (json!("v1"), json!("check")),
                (json!("v2"), Value::Null)
            ]
        );
    }

    #[test]
    fn a_bullet_names_the_items_it_comes_after() {
        let reply = plan_patch(&json!({"message":
            "- lex\n- parse (after 1)\n- check (after 1)\n- emit (after 2, 3)\n- notes (after x)"}));
        let ops = reply["payload"]["operations"].as_array().unwrap();
        let titles: Vec<&str> = ops.iter().map(|o| o["title"].as_str().unwrap()).collect();
        assert_eq!(titles, ["lex", "parse", "check", "emit", "notes (after x)"]);
        assert_eq!(ops[1]["dependencies"], json!(["tmp-1"]));
        assert_eq!(ops[3]["dependencies"], json!(["tmp-2", "tmp-3"]));
        assert_eq!(ops[4]["dependencies"], json!([]));
    }

    #[test]
    fn a_chat_message_becomes_a_plan_patch_of_its_bullets() {
        let reply = plan_patch(
            &json!({"message": "Build it in order:\n- parse\n* check\n2. render\nwhich style?"}),
        );
        assert_eq!(reply["type"], "plan_patch");
        let ops = reply["payload"]["operations"].as_array().unwrap();
        let titles: Vec<&str> = ops.iter().map(|o| o["title"].as_str().unwrap()).collect();
        assert_eq!(titles, ["parse", "check", "render"]);
        assert_eq!(ops[0]["dependencies"], json!([]));
        assert_eq!(ops[2]["dependencies"], json!(["tmp-2"]));
        assert_eq!(reply["payload"]["questions"], json!(["which style?"]));

        let reply = plan_patch(&json!({"message": "Add a README\nwith usage"}));
        let ops = reply["payload"]["operations"].as_array().unwrap();
        assert_eq!(ops.len(), 1);
        assert_eq!(ops[0]["title"], "Add a README");
        assert_eq!(ops[0]["dependencies"], json!([]));
    }
}
