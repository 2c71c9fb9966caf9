//! A chat turn's planner call: the user's message, the plan as it is and the recent
//! conversation, rendered (`templates/planner/plan_patch.md.j2`) and sent through the
//! runner's [`Planner`] under the `plan_patch` protocol, whose reply the caller checks
//! (parse and a dry run of the patch), so a patch that cannot be applied goes back to the
//! planner with the reasons, like any refused reply. Everything sent is bounded.
//!
//! The original sent the user's message twice (as the request and again at the end of
//! the history); here the history holds only the turns before this one.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::runner::Cancel;
use crate::runner::protocol::planner::{Call, Planner};
use crate::runner::protocol::request::Protocol;
use crate::runner::protocol::response::InvalidReply;

/// Tasks listed to the planner at most (in WBS order); the rest are counted.
pub const MAX_TASKS_SHOWN: usize = 300;
/// Earlier messages of the session sent at most.
pub const MAX_HISTORY: usize = 10;
/// Characters of one message, one title, sent at most.
pub const MAX_MESSAGE_CHARS: usize = 8_000;
const MAX_TITLE_CHARS: usize = 200;

/// Who wrote a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    User,
    Assistant,
    /// The orchestrator's own notes (a control word handled, autopilot started).
    System,
}

/// One message of a chat session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatMessage {
    pub role: ChatRole,
    pub content: String,
    /// RFC 3339.
    pub at: String,
    /// The tasks this message's patch created.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created_tasks: Vec<String>,
    /// The journal entry that applied this reply's patch (and holds the reply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_seq: Option<u64>,
}

/// One task as the planner sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskLine {
    pub id: String,
    pub title: String,
    /// Its lifecycle state.
    pub status: String,
    pub parent: Option<String>,
    pub dependencies: Vec<String>,
    pub phase: Option<String>,
    pub milestone: Option<String>,
}

/// The structured request (the mock planner decides on it) and what renders the prompt.
pub fn request(message: &str, tasks: &[TaskLine], history: &[ChatMessage]) -> Value {
    let shown: Vec<Value> = tasks
        .iter()
        .take(MAX_TASKS_SHOWN)
        .map(|t| {
            json!({"id": t.id, "title": head(&t.title, MAX_TITLE_CHARS), "status": t.status,
                   "parent": t.parent, "dependencies": t.dependencies, "phase": t.phase,
                   "milestone": t.milestone})
        })
        .collect();
    let skip = history.len().saturating_sub(MAX_HISTORY);
    let history: Vec<Value> = history[skip..]
        .iter()
        .filter(|m| m.role != ChatRole::System)
        .map(|m| {
            let role = match m.role {
                ChatRole::User => "user",
                _ => "assistant",
            };
            json!({"role": role, "content": head(&m.content, MAX_MESSAGE_CHARS)})
        })
        .collect();
    json!({
        "message": head(message, MAX_MESSAGE_CHARS),
        "tasks": shown,
        "tasks_not_shown": tasks.len().saturating_sub(MAX_TASKS_SHOWN),
        "history": history,
    })
}

/// Asks the planner for a `plan_patch` for `request` (see [`request`]); `schema` is the
/// reply's JSON Schema and `check` turns a reply into the caller's patch or says why not.
pub fn ask<T>(
    planner: &mut Planner,
    request: &Value,
    schema: &Value,
    cancel: &Cancel,
    check: impl Fn(&Map<String, Value>) -> Result<T, InvalidReply>,
) -> Call<T> {
    let mut context = request.clone();
    context["schema"] = Value::String(serde_json::to_string_pretty(schema).unwrap_or_default());
    let user = match crate::runner::protocol::render::plan_patch(context) {
        Ok(user) => user,
        // The template is ours and tested; should it fail, the planner still gets the
        // request as JSON rather than nothing.
        Err(e) => {
            tracing::error!(error = %e, "could not render the plan_patch request");
            format!("Request (JSON): {request}\n\nReply with a plan_patch matching: {schema}")
        }
    };
    planner.ask(
        Protocol::PlanPatch,
        request,
        user,
        schema.clone(),
        cancel,
        check,
    )
}

/// The first `chars` characters of `text`.
fn head(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(id: &str, deps: &[&str]) -> TaskLine {
        TaskLine {
            id: id.into(),
            title: format!("title of {id}"),
            status: "PENDING".into(),
            parent: None,
            dependencies: deps.iter().map(|d| d.to_string()).collect(),
            phase: Some("実装".into()),
            milestone: None,
        }
    }

    fn message(role: ChatRole, content: &str) -> ChatMessage {
        ChatMessage {
            role,
            content: content.into(),
            at: "2026-11-27T00:00:00.000Z".into(),
            created_tasks: vec![],
            patch_seq: None,
        }
    }

    #[test]
    fn the_request_is_bounded_and_sends_the_message_once() {
        let tasks: Vec<TaskLine> = (0..MAX_TASKS_SHOWN + 5)
            .map(|i| line(&format!("t{i}"), &[]))
            .collect();
        let history: Vec<ChatMessage> = (0..15)
            .map(|i| message(ChatRole::User, &format!("earlier {i}")))
            .chain([message(ChatRole::System, "autopilot started")])
            .collect();
        let long = "x".repeat(MAX_MESSAGE_CHARS + 10);
        let req = request(&long, &tasks, &history);
        assert_eq!(req["tasks"].as_array().unwrap().len(), MAX_TASKS_SHOWN);
        assert_eq!(req["tasks_not_shown"], 5);
        let sent = req["history"].as_array().unwrap();
        assert_eq!(
            sent.len(),
            MAX_HISTORY - 1,
            "the last ten, the system note left out"
        );
        assert_eq!(sent[0]["content"], "earlier 6");
        assert_eq!(
            req["message"].as_str().unwrap().chars().count(),
            MAX_MESSAGE_CHARS + 1
        );
    }

    #[test]
    fn the_prompt_lists_the_plan_and_states_the_schema() {
        let req = request(
            "add tests",
            &[line("a", &[]), line("b", &["a"])],
            &[
                message(ChatRole::User, "build a parser"),
                message(ChatRole::Assistant, "created a"),
            ],
        );
        let mut context = req.clone();
        context["schema"] = json!("{\"title\": \"SCHEMA-HERE\"}");
        let text = crate::runner::protocol::render::plan_patch(context).unwrap();
        assert!(text.contains("add tests"), "{text}");
        assert!(
            text.contains("- `b` [PENDING] title of b; depends on `a`; phase 実装"),
            "{text}"
        );
        assert!(text.contains("**user**: build a parser"), "{text}");
        assert!(text.contains("SCHEMA-HERE"), "{text}");
        let empty = request("hi", &[], &[]);
        let mut context = empty;
        context["schema"] = json!("{}");
        let text = crate::runner::protocol::render::plan_patch(context).unwrap();
        assert!(text.contains("No tasks yet."), "{text}");
    }
}
