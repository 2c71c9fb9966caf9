//! What a tool call answers: a JSON body and whether it is an error. Errors carry a stable
//! `error` key and a `message` for the agent; session refusals add the current phase so
//! the agent can retry without another call.

use serde_json::{Map, Value, json};

use crate::machine::response::{PhaseResponse, RenderedMessage};

/// One tool call's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub is_error: bool,
    pub body: Value,
}

impl Reply {
    pub fn ok(body: Value) -> Reply {
        Reply {
            is_error: false,
            body,
        }
    }

    /// A refusal with a stable key and a message.
    pub fn error(key: &str, message: impl Into<String>) -> Reply {
        Reply {
            is_error: true,
            body: json!({"error": key, "message": message.into()}),
        }
    }

    /// A refusal rendered from a contract message (its `error` code when it has one,
    /// else its key).
    pub fn refused(message: &RenderedMessage) -> Reply {
        let mut body = Map::new();
        body.insert(
            "error".into(),
            Value::String(message.error.clone().unwrap_or_else(|| message.key.clone())),
        );
        body.insert("message_key".into(), Value::String(message.key.clone()));
        body.insert("message".into(), Value::String(message.text.clone()));
        if message.user_intervention {
            body.insert("user_intervention".into(), Value::Bool(true));
        }
        Reply {
            is_error: true,
            body: Value::Object(body),
        }
    }

    /// Adds a field to the body.
    #[must_use]
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Reply {
        if let Value::Object(map) = &mut self.body {
            map.insert(key.to_string(), value.into());
        }
        self
    }

    /// Adds the phase the session is in, flattened into the body.
    #[must_use]
    pub fn with_phase(mut self, phase: &PhaseResponse, compaction_count: u64) -> Reply {
        if let (Value::Object(map), Ok(Value::Object(p))) =
            (&mut self.body, serde_json::to_value(phase))
        {
            for (k, v) in p {
                map.entry(k).or_insert(v);
            }
            map.insert("compaction_count".into(), Value::from(compaction_count));
        }
        self
    }
}
