//! The mock planner's script file: a YAML list of canned replies, each for one protocol and
//! optionally only for requests that contain a given JSON subset, used in order.
//!
//! ```yaml
//! # Each entry: protocol, optional `when` (a JSON subset the structured request must
//! # contain), then `reply` (a JSON object, sent as its JSON text) or `reply_text` (sent
//! # as is), and `times` (how many calls it answers, default 1).
//! - protocol: plan_task
//!   reply_text: "not JSON at all"          # the planner retries with the error
//! - protocol: next_action
//!   when: {runs: [{exit_code: 1}]}         # only after a failed run
//!   reply: {type: next_action, version: 1, payload: {decision: {action: abort, reason: "gave up"}}}
//!   times: 2
//! ```
//!
//! For each call the first entry (in file order) that is not used up, names the call's
//! protocol and whose `when` matches answers it. `when` matches when every key it has is
//! in the request with a matching value: objects recursively, scalars by equality, and a
//! list when each of its items matches some item of the request's list. A call no entry
//! answers gets the mock's built-in answer, so a script only needs the replies a test is
//! about.
//!
//! The YAML is read by the crate's loader (`crate::yaml`), within its alias and nesting
//! budgets, and the file is bounded in size.

use serde::Deserialize;
use serde_json::Value;

use crate::runner::protocol::request::Protocol;

/// Script files larger than this are refused.
pub(crate) const MAX_SCRIPT_BYTES: usize = 1024 * 1024;

/// One scripted reply.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub protocol: Protocol,
    pub when: Option<Value>,
    /// The text sent as the reply.
    pub reply: String,
    /// Calls it may still answer.
    pub left: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    protocol: String,
    #[serde(default)]
    when: Option<Value>,
    #[serde(default)]
    reply: Option<Value>,
    #[serde(default)]
    reply_text: Option<String>,
    #[serde(default)]
    times: Option<u32>,
}

/// Why a script's text is not a script. The text names the entry and what is wrong.
#[derive(Debug)]
pub(crate) enum ScriptError {
    /// The text is over [`MAX_SCRIPT_BYTES`].
    TooLarge { bytes: usize },
    /// The text is not YAML the crate's loader reads: where (`line N: `, or nothing) and
    /// why.
    Yaml { at: String, message: String },
    /// The document is not a list.
    NotAList,
    /// Entry `index` (1-based) is wrong.
    Entry { index: usize, problem: EntryProblem },
}

/// What is wrong with one entry of a script.
#[derive(Debug)]
pub(crate) enum EntryProblem {
    /// Its keys or their types (an unknown key, a missing `protocol`).
    Shape(serde_json::Error),
    UnknownProtocol(String),
    ReplyNotMapping,
    BothReplies,
    NoReply,
    ZeroTimes,
}

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScriptError::TooLarge { bytes } => write!(
                f,
                "the script is {bytes} bytes, over the {MAX_SCRIPT_BYTES}-byte limit"
            ),
            ScriptError::Yaml { at, message } => write!(f, "YAML: {at}{message}"),
            ScriptError::NotAList => f.write_str("a script is a YAML list of entries"),
            ScriptError::Entry { index, problem } => write!(f, "entry {index}: {problem}"),
        }
    }
}

impl std::fmt::Display for EntryProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EntryProblem::Shape(e) => e.fmt(f),
            EntryProblem::UnknownProtocol(name) => write!(
                f,
                "unknown protocol {name:?} (plan_task, next_action or completion_assessment)"
            ),
            EntryProblem::ReplyNotMapping => {
                f.write_str("`reply` must be a mapping (a JSON object)")
            }
            EntryProblem::BothReplies => f.write_str("give `reply` or `reply_text`, not both"),
            EntryProblem::NoReply => f.write_str("`reply` or `reply_text` is required"),
            EntryProblem::ZeroTimes => f.write_str("`times` must be at least 1"),
        }
    }
}

impl std::error::Error for ScriptError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ScriptError::Entry {
                problem: EntryProblem::Shape(e),
                ..
            } => Some(e),
            _ => None,
        }
    }
}

/// The entries of a script's text; the error names the entry and what is wrong.
pub(crate) fn parse(text: &str) -> Result<Vec<Entry>, ScriptError> {
    if text.len() > MAX_SCRIPT_BYTES {
        return Err(ScriptError::TooLarge { bytes: text.len() });
    }
    let value = yaml_value(text)?;
    let items = match value {
        Value::Array(items) => items,
        Value::Null => Vec::new(),
        _ => return Err(ScriptError::NotAList),
    };
    items
        .into_iter()
        .enumerate()
        .map(|(index, item)| {
            entry(item).map_err(|problem| ScriptError::Entry {
                index: index + 1,
                problem,
            })
        })
        .collect()
}

fn entry(item: Value) -> Result<Entry, EntryProblem> {
    let raw: RawEntry = serde_json::from_value(item).map_err(EntryProblem::Shape)?;
    let protocol = Protocol::from_name(&raw.protocol)
        .ok_or_else(|| EntryProblem::UnknownProtocol(raw.protocol.clone()))?;
    let reply = match (raw.reply, raw.reply_text) {
        (Some(Value::Object(object)), None) => Value::Object(object).to_string(),
        (Some(_), None) => return Err(EntryProblem::ReplyNotMapping),
        (None, Some(text)) => text,
        (Some(_), Some(_)) => return Err(EntryProblem::BothReplies),
        (None, None) => return Err(EntryProblem::NoReply),
    };
    let left = raw.times.unwrap_or(1);
    if left == 0 {
        return Err(EntryProblem::ZeroTimes);
    }
    Ok(Entry {
        protocol,
        when: raw.when,
        reply,
        left,
    })
}

/// Whether `request` contains everything in `pattern` (see the module docs).
pub(crate) fn contains(request: &Value, pattern: &Value) -> bool {
    match (request, pattern) {
        (Value::Object(have), Value::Object(want)) => want
            .iter()
            .all(|(key, want)| have.get(key).is_some_and(|have| contains(have, want))),
        (Value::Array(have), Value::Array(want)) => want
            .iter()
            .all(|want| have.iter().any(|have| contains(have, want))),
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (a, b) => a == b,
    }
}

/// A YAML document as a JSON value, through the crate's YAML loader (linear, bounded
/// aliases and nesting). Errors name the line and column.
fn yaml_value(text: &str) -> Result<Value, ScriptError> {
    let yaml = |d: &crate::diagnostic::Diagnostic| ScriptError::Yaml {
        at: d
            .span
            .map(|s| format!("line {}: ", s.start))
            .unwrap_or_default(),
        message: d.message.clone(),
    };
    let (node, findings) =
        crate::yaml::parse(crate::source::FileId(0), text).map_err(|d| yaml(&d))?;
    if let Some(d) = findings.first() {
        return Err(yaml(d));
    }
    Ok(node.to_json())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_script_parses_into_entries() {
        let text = r#"
- protocol: plan_task
  reply_text: "not JSON"
- protocol: next_action
  when: {runs: [{exit_code: 1}], loops_used: 2}
  reply: {type: next_action, version: 1, payload: {decision: {action: abort, reason: "no"}}}
  times: 2
"#;
        let entries = parse(text).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].reply, "not JSON");
        assert_eq!(entries[1].left, 2);
        assert_eq!(
            entries[1].when,
            Some(json!({"runs": [{"exit_code": 1}], "loops_used": 2}))
        );
        let reply: Value = serde_json::from_str(&entries[1].reply).unwrap();
        assert_eq!(reply["payload"]["decision"]["action"], "abort");
    }

    #[test]
    fn mistakes_name_the_entry() {
        assert!(
            parse("- protocol: plan\n  reply_text: x")
                .unwrap_err()
                .to_string()
                .contains("entry 1")
        );
        assert!(
            parse("- protocol: plan_task")
                .unwrap_err()
                .to_string()
                .contains("required")
        );
        assert!(
            parse("- protocol: plan_task\n  reply: [1]")
                .unwrap_err()
                .to_string()
                .contains("mapping")
        );
        assert!(
            parse("- protocol: plan_task\n  reply_text: x\n  tiems: 2")
                .unwrap_err()
                .to_string()
                .contains("unknown field")
        );
        assert!(parse("{").unwrap_err().to_string().contains("YAML"));
        assert!(
            parse("key: value")
                .unwrap_err()
                .to_string()
                .contains("list")
        );
        assert_eq!(parse("").unwrap(), vec![]);
    }

    #[test]
    fn when_is_a_subset_match() {
        let request = json!({"runs": [{"id": "r1", "exit_code": 0}, {"id": "r2", "exit_code": 1}], "loops_used": 2});
        assert!(contains(&request, &json!({})));
        assert!(contains(&request, &json!({"runs": [{"exit_code": 1}]})));
        assert!(contains(&request, &json!({"loops_used": 2.0})));
        assert!(!contains(&request, &json!({"runs": [{"exit_code": 3}]})));
        assert!(!contains(&request, &json!({"missing": null})));
    }
}
