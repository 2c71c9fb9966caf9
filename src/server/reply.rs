//! What a tool call answers: a JSON body and whether it is an error. Errors carry a stable
//! `error` key and a `message` for the agent; session refusals add the current phase so
//! the agent can retry without another call.
//!
//! Every text a client reads comes from the contract's messages in the session's locale.
//! A refusal the server makes on its own ([`Reply::error`], [`Reply::say`]) names the
//! message to render and its placeholder values; [`Reply::localize`] renders it once the
//! locale is known (`core::Server::call`, for every reply). The English given in the code
//! is only what a contract without that message shows; the server's registry declares
//! every such message, so lint reports a contract that lacks one.

use serde_json::{Map, Value, json};

use crate::contract::Contract;
use crate::machine::response::{PhaseResponse, RenderedMessage, message};

/// One tool call's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub is_error: bool,
    pub body: Value,
    /// The contract message that gives `message` its text, not rendered yet (boxed: a
    /// reply travels in `Result`s).
    text: Option<Box<Pending>>,
}

/// A contract message to render into a reply's `message`.
#[derive(Debug, Clone, PartialEq)]
struct Pending {
    key: String,
    args: Map<String, Value>,
}

impl Reply {
    pub fn ok(body: Value) -> Reply {
        Reply {
            is_error: false,
            body,
            text: None,
        }
    }

    /// A refusal with a stable key, whose text is the contract's message of that key
    /// (`fallback` when the contract has none; `{details}` in the message).
    pub fn error(key: &str, fallback: impl Into<String>) -> Reply {
        Reply::say(key, key, fallback)
    }

    /// A refusal with the stable key `error` whose text is the contract's message
    /// `message_key` (`fallback` when the contract has none): for one failure (a
    /// checkpoint that cannot be written) told differently where it happens.
    pub fn say(error: &str, message_key: &str, fallback: impl Into<String>) -> Reply {
        Reply {
            is_error: true,
            body: json!({"error": error, "message": fallback.into()}),
            text: Some(Box::new(Pending {
                key: message_key.to_string(),
                args: Map::new(),
            })),
        }
    }

    /// The placeholder values of the message (`{name}` in its text).
    #[must_use]
    pub fn args(mut self, args: &[(&str, Value)]) -> Reply {
        if let Some(pending) = &mut self.text {
            for (k, v) in args {
                pending.args.insert((*k).to_string(), v.clone());
            }
        }
        self
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
            text: None,
        }
    }

    /// Renders the pending message in `locale`: `message` becomes the contract's text and
    /// `message_key` names it. A contract without the message keeps the fallback (lint
    /// reports such a contract: the key is in the server's registry).
    #[must_use]
    pub fn localize(mut self, contract: &Contract, locale: &str) -> Reply {
        let Some(pending) = self.text.take() else {
            return self;
        };
        if !contract.messages.contains_key(&pending.key) {
            return self;
        }
        // Placeholders: the values given, then the reply's own fields (`limit`,
        // `file_path`, ...), then `details`, the English the code wrote.
        let Pending { key, mut args } = *pending;
        if let Value::Object(map) = &self.body {
            for (k, v) in map {
                if k == "message" {
                    args.entry("details").or_insert_with(|| v.clone());
                } else {
                    args.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }
        let rendered = message(contract, &key, &args, locale);
        if let Value::Object(map) = &mut self.body {
            map.insert("message".into(), Value::String(rendered.text));
            map.insert("message_key".into(), Value::String(rendered.key));
            if rendered.user_intervention {
                map.insert("user_intervention".into(), Value::Bool(true));
            }
        }
        self
    }

    /// Whether a message is still to be rendered ([`Reply::localize`]).
    pub fn pending(&self) -> bool {
        self.text.is_some()
    }

    /// The contract message key this reply's text is (or will be) rendered from.
    pub fn message_key(&self) -> Option<&str> {
        self.text
            .as_ref()
            .map(|p| p.key.as_str())
            .or_else(|| self.body.get("message_key").and_then(Value::as_str))
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
        if let Value::Object(map) = &mut self.body {
            for (k, v) in phase.to_map() {
                map.entry(k).or_insert(v);
            }
            map.insert("compaction_count".into(), Value::from(compaction_count));
        }
        self
    }
}
