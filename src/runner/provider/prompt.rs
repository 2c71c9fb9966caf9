//! What every planner provider takes and gives: a [`Prompt`] (system text, the
//! conversation so far, and the structured request and reply schema it was rendered
//! from), the [`Provider`] trait, and the [`ProviderError`]s that say why no reply came.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::runner::cancel::Cancel;
use crate::runner::protocol::request::Protocol;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
}

impl Message {
    pub fn user(content: impl Into<String>) -> Message {
        Message {
            role: Role::User,
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<String>) -> Message {
        Message {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// One request to a provider.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    pub protocol: Protocol,
    pub system: String,
    /// The rendered request first; on a retry, the refused reply and the error follow.
    pub messages: Vec<Message>,
    /// The structured request the messages were rendered from (the mock decides on it).
    pub request: Value,
    /// The JSON Schema the reply must match (also stated in the first message).
    pub schema: Value,
}

impl Prompt {
    /// The whole prompt as one text, for providers that take a single input (CLI agents
    /// read it on stdin).
    pub fn transcript(&self) -> String {
        let mut text = self.system.trim_end().to_owned();
        if self.messages.len() == 1 {
            text.push_str("\n\n");
            text.push_str(&self.messages[0].content);
            return text;
        }
        for message in &self.messages {
            let heading = match message.role {
                Role::User => "## Request",
                Role::Assistant => "## Your previous reply",
            };
            text.push_str("\n\n");
            text.push_str(heading);
            text.push_str("\n\n");
            text.push_str(&message.content);
        }
        text
    }
}

/// A planner backend: an HTTP API, a CLI agent, or the mock.
pub trait Provider: Send {
    /// The raw reply to `prompt`. Stops promptly with [`ProviderError::Cancelled`] when
    /// `cancel` is set.
    fn complete(&mut self, prompt: &Prompt, cancel: &Cancel) -> Result<String, ProviderError>;
    /// The provider and model, for logs and the task note (`openai-chat gpt-5.2`).
    fn name(&self) -> String;
}

/// Why a provider gave no reply. Replies it did give but that are invalid are the
/// planner's business (its `Invalid` error), not the provider's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderError {
    /// The configuration cannot work, e.g. `script:` with `kind: openai-chat`, or an
    /// unreadable mock script.
    Config { message: String },
    /// The API key variable (`api_key_env`, default `OPENAI_API_KEY`) is not set.
    AuthMissing { variable: String },
    /// The server could not be reached or the connection broke, on every attempt.
    Transport { message: String, attempts: u32 },
    /// No reply within `timeout_sec`, on every attempt.
    Timeout { after: Duration, attempts: u32 },
    /// The server answered with an error status (after retries for 429 and 5xx).
    Http {
        status: u16,
        excerpt: String,
        attempts: u32,
    },
    /// The server answered 200 with something that is not a chat completion.
    BadResponse { message: String, excerpt: String },
    /// The CLI could not be started (not installed, not executable).
    Spawn { program: String, message: String },
    /// The CLI exited non-zero (or was killed by a signal).
    CliExit {
        program: String,
        code: i32,
        stderr_tail: String,
    },
    /// The CLI ran but reported a failure (a failed turn, `is_error: true`).
    CliFailed { program: String, message: String },
    /// The mock script has no usable entry, or an entry cannot be used.
    Script { message: String },
    /// The task was cancelled while waiting.
    Cancelled,
}

impl ProviderError {
    pub fn is_cancelled(&self) -> bool {
        matches!(self, ProviderError::Cancelled)
    }

    /// Whether the provider refused for a rate limit or an exhausted quota: HTTP 429 (the
    /// status is exact), or a CLI whose error says so (`rate limit`, `429`, `quota`, `too
    /// many requests`; CLIs have no status to go by). `runner.tooling` then cools the
    /// candidate down and falls back to another.
    pub fn is_rate_limited(&self) -> bool {
        match self {
            ProviderError::Http { status, .. } => *status == 429,
            ProviderError::CliExit { stderr_tail, .. } => mentions_rate_limit(stderr_tail),
            ProviderError::CliFailed { message, .. } => mentions_rate_limit(message),
            _ => false,
        }
    }

    /// Whether asking again later may succeed: a timeout, a broken connection, HTTP 429
    /// or 5xx, a CLI that exited or failed its turn. A missing key, a bad configuration,
    /// another HTTP status or a missing CLI fails the same way every time.
    pub fn is_transient(&self) -> bool {
        match self {
            ProviderError::Transport { .. }
            | ProviderError::Timeout { .. }
            | ProviderError::CliExit { .. }
            | ProviderError::CliFailed { .. }
            | ProviderError::BadResponse { .. } => true,
            ProviderError::Http { status, .. } => *status == 429 || *status >= 500,
            ProviderError::Config { .. }
            | ProviderError::AuthMissing { .. }
            | ProviderError::Spawn { .. }
            | ProviderError::Script { .. }
            | ProviderError::Cancelled => false,
        }
    }
}

impl std::fmt::Display for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProviderError::Config { message } => write!(f, "planner configuration: {message}"),
            ProviderError::AuthMissing { variable } => write!(
                f,
                "the planner API key is missing: set the environment variable {variable} (or point runner.meta.api_key_env at another one)"
            ),
            ProviderError::Transport { message, attempts } => {
                write!(
                    f,
                    "the planner API could not be reached ({attempts} attempts): {message}"
                )
            }
            ProviderError::Timeout { after, attempts } => write!(
                f,
                "the planner API did not answer within {}s ({attempts} attempts)",
                after.as_secs_f64()
            ),
            ProviderError::Http {
                status,
                excerpt,
                attempts,
            } => write!(
                f,
                "the planner API answered HTTP {status} ({attempts} attempts): {excerpt}"
            ),
            ProviderError::BadResponse { message, excerpt } => {
                write!(
                    f,
                    "the planner API's answer is unusable: {message}: {excerpt}"
                )
            }
            ProviderError::Spawn { program, message } => {
                write!(f, "could not run the planner CLI `{program}`: {message}")
            }
            ProviderError::CliExit {
                program,
                code,
                stderr_tail,
            } => write!(
                f,
                "the planner CLI `{program}` exited with code {code}: {stderr_tail}"
            ),
            ProviderError::CliFailed { program, message } => {
                write!(f, "the planner CLI `{program}` failed: {message}")
            }
            ProviderError::Script { message } => write!(f, "mock planner script: {message}"),
            ProviderError::Cancelled => write!(f, "the planner call was cancelled"),
        }
    }
}

impl std::error::Error for ProviderError {}

/// Whether a CLI's error text says it was rate limited or out of quota. The one rule for
/// planner CLIs here and for worker runs (`tooling::worker_rate_limit`).
pub(crate) fn mentions_rate_limit(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    [
        "rate limit",
        "rate-limit",
        "rate_limit",
        "ratelimit",
        "429",
        "quota",
        "too many requests",
    ]
    .iter()
    .any(|needle| text.contains(needle))
}

/// At most `chars` characters of `text`, with a marker when cut (never mid-character).
pub(crate) fn excerpt(text: &str, chars: usize) -> String {
    let text = text.trim();
    let mut out: String = text.chars().take(chars).collect();
    if out.len() < text.len() {
        out.push_str(" [...]");
    }
    out
}

/// The last `chars` characters of `text`, with a marker when cut.
pub(crate) fn tail(text: &str, chars: usize) -> String {
    let text = text.trim();
    let count = text.chars().count();
    if count <= chars {
        return text.to_owned();
    }
    let kept: String = text.chars().skip(count - chars).collect();
    format!("[...] {kept}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limits_are_told_by_status_and_by_cli_text() {
        let http = |status| ProviderError::Http {
            status,
            excerpt: "rate limit".into(),
            attempts: 1,
        };
        assert!(http(429).is_rate_limited());
        assert!(
            !http(500).is_rate_limited(),
            "only the status counts for HTTP"
        );
        let exit = |stderr: &str| ProviderError::CliExit {
            program: "codex".into(),
            code: 1,
            stderr_tail: stderr.into(),
        };
        assert!(exit("Error: Rate limit reached for gpt-5").is_rate_limited());
        assert!(exit("HTTP 429 Too Many Requests").is_rate_limited());
        assert!(exit("You exceeded your current quota").is_rate_limited());
        assert!(!exit("segmentation fault").is_rate_limited());
        let failed = ProviderError::CliFailed {
            program: "claude".into(),
            message: "usage limit: too many requests".into(),
        };
        assert!(failed.is_rate_limited());
        assert!(!ProviderError::Cancelled.is_rate_limited());
    }
}
