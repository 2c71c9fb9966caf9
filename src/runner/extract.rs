//! Finding the JSON object a planner answered with, whatever wrapped it: the whole reply,
//! a Claude CLI result envelope, a Codex `exec --json` event stream (the last agent
//! message wins: the original took the first event and got nothing, AR-B6), a fenced code
//! block, or an object inside prose, found by a brace scan that knows strings.
//!
//! Replies are untrusted: the size is bounded, the scan is linear, and unwrapping nests
//! at most a few levels.

use serde_json::{Map, Value};

/// Replies larger than this are refused rather than scanned.
pub(crate) const MAX_REPLY_BYTES: usize = 4 * 1024 * 1024;
/// Envelopes within envelopes (a stream whose message is a result envelope, ...).
const MAX_NESTING: usize = 3;
/// Characters of the reply quoted in an error.
const EXCERPT_CHARS: usize = 200;

/// Why no object could be taken from a reply. The message is fed back to the planner
/// when the contract retries, so it says what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExtractError {
    Empty,
    TooLarge {
        bytes: usize,
    },
    /// An event stream with no agent message in it.
    NoAgentMessage {
        events: usize,
    },
    /// Nothing in the reply parses as a JSON object.
    NoObject {
        excerpt: String,
    },
}

impl std::fmt::Display for ExtractError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExtractError::Empty => write!(f, "the reply is empty; answer with one JSON object"),
            ExtractError::TooLarge { bytes } => write!(
                f,
                "the reply is {bytes} bytes, over the {MAX_REPLY_BYTES}-byte limit"
            ),
            ExtractError::NoAgentMessage { events } => write!(
                f,
                "the reply is a stream of {events} events with no agent message in it"
            ),
            ExtractError::NoObject { excerpt } => write!(
                f,
                "no JSON object was found in the reply (it starts: {excerpt:?}); answer with one JSON object, optionally in a ```json block"
            ),
        }
    }
}

impl std::error::Error for ExtractError {}

fn excerpt(text: &str) -> String {
    text.trim().chars().take(EXCERPT_CHARS).collect()
}

/// The JSON object in `reply`.
pub(crate) fn json_object(reply: &str) -> Result<Map<String, Value>, ExtractError> {
    if reply.len() > MAX_REPLY_BYTES {
        return Err(ExtractError::TooLarge { bytes: reply.len() });
    }
    unwrap(reply, 0)
}

fn unwrap(text: &str, depth: usize) -> Result<Map<String, Value>, ExtractError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(ExtractError::Empty);
    }
    if let Ok(Value::Object(object)) = serde_json::from_str::<Value>(trimmed) {
        return match envelope_text(&object) {
            Some(inner) if depth < MAX_NESTING => unwrap(inner, depth + 1),
            _ => Ok(object),
        };
    }
    if let Some(messages) = event_stream(trimmed) {
        return match messages {
            Ok(last) if depth < MAX_NESTING => unwrap(&last, depth + 1),
            Ok(last) => Err(ExtractError::NoObject {
                excerpt: excerpt(&last),
            }),
            Err(events) => Err(ExtractError::NoAgentMessage { events }),
        };
    }
    if let Some(object) = fenced(trimmed).into_iter().rev().find_map(parse_object) {
        return Ok(object);
    }
    if let Some(object) = balanced_objects(trimmed)
        .into_iter()
        .rev()
        .find_map(parse_object)
    {
        return Ok(object);
    }
    Err(ExtractError::NoObject {
        excerpt: excerpt(trimmed),
    })
}

fn parse_object(text: &str) -> Option<Map<String, Value>> {
    match serde_json::from_str::<Value>(text.trim()) {
        Ok(Value::Object(object)) => Some(object),
        _ => None,
    }
}

/// The text a known envelope carries: Claude CLI's `{"type": "result", "result": "..."}`.
fn envelope_text(object: &Map<String, Value>) -> Option<&str> {
    if object.get("type").and_then(Value::as_str) == Some("result") {
        return object.get("result").and_then(Value::as_str);
    }
    None
}

/// The agent message of one stream event: Codex's current
/// `{"type": "item.completed", "item": {"type": "agent_message", "text": ...}}` and its
/// older `{"msg": {"type": "agent_message", "message": ...}}`.
fn agent_message(event: &Map<String, Value>) -> Option<&str> {
    if event.get("type").and_then(Value::as_str) == Some("item.completed") {
        let item = event.get("item")?.as_object()?;
        if item.get("type").and_then(Value::as_str) == Some("agent_message") {
            return item.get("text").and_then(Value::as_str);
        }
        return None;
    }
    let msg = event.get("msg")?.as_object()?;
    if msg.get("type").and_then(Value::as_str) == Some("agent_message") {
        return msg.get("message").and_then(Value::as_str);
    }
    None
}

/// When `text` is a stream of JSON objects, one per line (blank and non-JSON lines, such
/// as a CLI's warnings, are skipped, but most lines must be events): the last agent
/// message, or the number of events when there is none.
fn event_stream(text: &str) -> Option<Result<String, usize>> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let events: Vec<Map<String, Value>> = lines
        .iter()
        .filter_map(|l| match serde_json::from_str::<Value>(l.trim()) {
            Ok(Value::Object(o)) => Some(o),
            _ => None,
        })
        .collect();
    if events.len() < 2 || events.len() * 2 < lines.len() {
        return None;
    }
    Some(
        events
            .iter()
            .rev()
            .find_map(agent_message)
            .map(str::to_string)
            .ok_or(events.len()),
    )
}

/// The bodies of fenced code blocks (```` ``` ```` or ```` ```json ````), in order.
fn fenced(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        // The info string runs to the end of the line.
        let body_start = after.find('\n').map_or(after.len(), |n| n + 1);
        let body = &after[body_start..];
        let Some(close) = body.find("```") else {
            break;
        };
        out.push(&body[..close]);
        rest = &body[close + 3..];
    }
    out
}

/// Every top-level balanced `{...}` of `text`, in order, with braces inside JSON strings
/// (and escaped quotes inside those) ignored. One linear pass.
fn balanced_objects(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' if depth > 0 => in_string = true,
            '{' => {
                if depth == 0 {
                    start = i;
                }
                depth += 1;
            }
            '}' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    out.push(&text[start..=i]);
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn got(reply: &str) -> Value {
        Value::Object(json_object(reply).unwrap_or_else(|e| panic!("{e}: {reply}")))
    }

    #[test]
    fn a_bare_object_is_the_answer() {
        assert_eq!(
            got(r#" {"type": "plan_task", "version": 1} "#),
            json!({"type": "plan_task", "version": 1})
        );
    }

    #[test]
    fn a_fenced_block_in_prose_is_found_and_the_last_one_wins() {
        let reply = "Here is a draft:\n```json\n{\"v\": 1}\n```\nCorrected:\n```json\n{\"v\": 2}\n```\nDone.";
        assert_eq!(got(reply), json!({"v": 2}));
        assert_eq!(got("```\n{\"plain\": true}\n```"), json!({"plain": true}));
    }

    #[test]
    fn braces_inside_strings_do_not_confuse_the_scan() {
        let reply =
            r#"I think {"note": "use } and { freely, even \"quoted }\"", "n": 1} is right."#;
        assert_eq!(
            got(reply),
            json!({"note": "use } and { freely, even \"quoted }\"", "n": 1})
        );
    }

    #[test]
    fn the_last_agent_message_of_a_codex_stream_is_unwrapped() {
        // AR-B6: the first event is thread.started; the answer is the last agent message.
        let stream = [
            json!({"type": "thread.started", "thread_id": "t"}),
            json!({"type": "turn.started"}),
            json!({"type": "item.completed", "item": {"type": "reasoning", "text": "{\"not\": \"this\"}"}}),
            json!({"type": "item.completed", "item": {"type": "agent_message", "text": "draft {\"v\": 1}"}}),
            json!({"type": "item.completed", "item": {"type": "agent_message", "text": "```json\n{\"type\": \"next_action\", \"v\": 2}\n```"}}),
            json!({"type": "turn.completed", "usage": {"input_tokens": 1}}),
        ]
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n");
        assert_eq!(got(&stream), json!({"type": "next_action", "v": 2}));
        let old = [
            json!({"msg": {"type": "task_started"}}),
            json!({"msg": {"type": "agent_message", "message": "{\"old\": true}"}}),
        ]
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n");
        assert_eq!(got(&old), json!({"old": true}));
    }

    #[test]
    fn a_stream_without_an_agent_message_says_so() {
        let stream = "{\"type\": \"thread.started\"}\n{\"type\": \"turn.failed\"}\n";
        assert_eq!(
            json_object(stream),
            Err(ExtractError::NoAgentMessage { events: 2 })
        );
    }

    #[test]
    fn a_claude_result_envelope_is_unwrapped() {
        let reply = json!({"type": "result", "subtype": "success", "result": "Sure.\n```json\n{\"type\": \"plan_task\"}\n```"}).to_string();
        assert_eq!(got(&reply), json!({"type": "plan_task"}));
    }

    #[test]
    fn truncated_and_empty_replies_are_errors_that_say_what_to_send() {
        let e = json_object("{\"type\": \"plan_task\", \"criteria\": [").unwrap_err();
        assert!(matches!(e, ExtractError::NoObject { .. }));
        assert!(e.to_string().contains("answer with one JSON object"));
        assert_eq!(json_object("  \n"), Err(ExtractError::Empty));
        let e = json_object("[1, 2]").unwrap_err();
        assert!(e.to_string().contains("no JSON object"), "{e}");
        let big = "x".repeat(MAX_REPLY_BYTES + 1);
        assert!(matches!(
            json_object(&big),
            Err(ExtractError::TooLarge { .. })
        ));
    }

    #[test]
    fn nesting_is_bounded() {
        // A result envelope whose text is an envelope whose text is ...
        let mut reply = json!({"deep": true}).to_string();
        for _ in 0..10 {
            reply = json!({"type": "result", "result": reply}).to_string();
        }
        let object = json_object(&reply).unwrap();
        assert_eq!(object.get("type"), Some(&json!("result")));
    }

    proptest::proptest! {
        #[test]
        fn any_reply_is_an_object_or_an_error_never_a_panic(reply in "(?s).{0,300}") {
            let _ = json_object(&reply);
        }

        #[test]
        fn an_object_survives_any_prose_around_it(before in "[^{}`]{0,60}", after in "[^{}`]{0,60}", n in 0u32..1000) {
            let reply = format!("{before}{{\"n\": {n}, \"s\": \"}}{{\"}}{after}");
            let object = json_object(&reply).unwrap();
            proptest::prop_assert_eq!(object.get("n"), Some(&json!(n)));
        }
    }
}
