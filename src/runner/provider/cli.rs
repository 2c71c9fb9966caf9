//! The `codex-cli` and `claude-code` providers: the CLI agent runs on the host with the
//! whole prompt on stdin, through `runner::process` so the timeout and the task's cancel
//! reach it and its whole process group (the original detached it from cancellation,
//! AR-M18). Codex prints an event stream (`--json`); its answer is the last agent message,
//! which `runner::extract` finds (the original took the first event, AR-B6), and a failed
//! turn or error event is a provider error. Claude prints one result envelope whose
//! `is_error` is checked.

use std::time::Duration;

use serde_json::{Map, Value};

use super::prompt::{Prompt, Provider, ProviderError, excerpt, tail};
use crate::runner::cancel::Cancel;
use crate::runner::process::{self, Ending, Spec};

const STDERR_TAIL_CHARS: usize = 1000;
const EXCERPT_CHARS: usize = 300;
/// Between TERM and KILL when the CLI must be stopped.
const GRACE: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavour {
    Codex,
    Claude,
}

/// A planner that is a CLI agent.
#[derive(Debug, Clone)]
pub(crate) struct CliProvider {
    flavour: Flavour,
    program: String,
    model: String,
    timeout: Duration,
}

impl CliProvider {
    /// `command` is the CLI to run; `None` means `codex` or `claude` on PATH.
    pub(crate) fn new(
        flavour: Flavour,
        command: Option<&str>,
        model: String,
        timeout: Duration,
    ) -> CliProvider {
        let default = match flavour {
            Flavour::Codex => "codex",
            Flavour::Claude => "claude",
        };
        CliProvider {
            flavour,
            program: command
                .filter(|c| !c.trim().is_empty())
                .unwrap_or(default)
                .to_owned(),
            model,
            timeout,
        }
    }

    fn spec(&self, prompt: &Prompt) -> Spec {
        // The model is one `--model=VALUE` argument, which both CLIs read as the option's
        // value whatever it holds (`--model -x` is an error to Codex and takes the next
        // argument as a model to Claude); a model starting with `-` is refused before this.
        let model = format!("--model={}", self.model);
        let args: Vec<&str> = match self.flavour {
            // `-` reads the prompt from stdin; read-only: the planner only answers.
            Flavour::Codex => vec![
                "exec",
                "--json",
                "--skip-git-repo-check",
                "--sandbox",
                "read-only",
                &model,
                "-",
            ],
            Flavour::Claude => vec!["-p", "--output-format", "json", &model],
        };
        let mut spec = Spec::new(self.program.clone(), args);
        spec.stdin = Some(prompt.transcript().into_bytes());
        spec.timeout = Some(self.timeout);
        spec.grace = GRACE;
        spec
    }
}

impl Provider for CliProvider {
    fn complete(&mut self, prompt: &Prompt, cancel: &Cancel) -> Result<String, ProviderError> {
        if cancel.is_cancelled() {
            return Err(ProviderError::Cancelled);
        }
        let spec = self.spec(prompt);
        tracing::debug!(command = %spec.display(), protocol = %prompt.protocol, "planner CLI");
        let output = process::run(&spec, cancel).map_err(|e| ProviderError::Spawn {
            program: self.program.clone(),
            message: e.source.to_string(),
        })?;
        let stdout = output.stdout.text();
        match output.ending {
            Ending::Cancelled => return Err(ProviderError::Cancelled),
            Ending::TimedOut => {
                return Err(ProviderError::Timeout {
                    after: self.timeout,
                    attempts: 1,
                });
            }
            Ending::Exited(0) => {}
            ending => {
                let stderr = output.stderr.tail_text(STDERR_TAIL_CHARS * 2);
                let detail = if stderr.trim().is_empty() {
                    // Codex reports a failed turn in the stream, not on stderr.
                    codex_failure(&stdout).unwrap_or_else(|| tail(&stdout, STDERR_TAIL_CHARS))
                } else {
                    tail(&stderr, STDERR_TAIL_CHARS)
                };
                return Err(ProviderError::CliExit {
                    program: self.program.clone(),
                    code: ending.code(),
                    stderr_tail: detail,
                });
            }
        }
        match self.flavour {
            Flavour::Codex => match codex_failure(&stdout) {
                Some(message) => Err(ProviderError::CliFailed {
                    program: self.program.clone(),
                    message,
                }),
                // The whole stream: the extractor takes its last agent message.
                None => Ok(stdout),
            },
            Flavour::Claude => claude_result(&self.program, &stdout),
        }
    }

    fn name(&self) -> String {
        let kind = match self.flavour {
            Flavour::Codex => "codex-cli",
            Flavour::Claude => "claude-code",
        };
        format!("{kind} {}", self.model)
    }
}

/// A Codex stream's failure: a `turn.failed` event, or an `error` event that no agent
/// message followed (Codex also reports transient reconnects as `error` events).
fn codex_failure(stdout: &str) -> Option<String> {
    let mut failure: Option<String> = None;
    let mut turn_failed = None;
    for line in stdout.lines() {
        let Ok(Value::Object(event)) = serde_json::from_str::<Value>(line.trim()) else {
            continue;
        };
        match event.get("type").and_then(Value::as_str) {
            Some("turn.failed") => {
                let message = event
                    .get("error")
                    .and_then(|e| e.get("message"))
                    .and_then(Value::as_str)
                    .unwrap_or("the turn failed");
                turn_failed = Some(excerpt(message, EXCERPT_CHARS));
            }
            Some("error") => {
                let message = event
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("an error event");
                failure = Some(excerpt(message, EXCERPT_CHARS));
            }
            Some("item.completed") if is_agent_message(&event) => failure = None,
            _ => {}
        }
    }
    turn_failed.or(failure)
}

fn is_agent_message(event: &Map<String, Value>) -> bool {
    event
        .get("item")
        .and_then(|i| i.get("type"))
        .and_then(Value::as_str)
        == Some("agent_message")
}

/// The answer in Claude's `--output-format json` output: one result envelope (or, with
/// `--verbose`, an array of messages ending in one).
fn claude_result(program: &str, stdout: &str) -> Result<String, ProviderError> {
    let unusable = |message: &str| ProviderError::BadResponse {
        message: format!("`{program}` printed {message}"),
        excerpt: excerpt(stdout, EXCERPT_CHARS),
    };
    let value: Value =
        serde_json::from_str(stdout.trim()).map_err(|_| unusable("no JSON result envelope"))?;
    let envelope = match &value {
        Value::Array(items) => items
            .iter()
            .rev()
            .find(|v| v.get("type").and_then(Value::as_str) == Some("result")),
        Value::Object(_) if value.get("type").and_then(Value::as_str) == Some("result") => {
            Some(&value)
        }
        _ => None,
    }
    .ok_or_else(|| unusable("JSON without a result envelope"))?;
    let text = envelope.get("result").and_then(Value::as_str);
    if envelope.get("is_error").and_then(Value::as_bool) == Some(true) {
        let subtype = envelope
            .get("subtype")
            .and_then(Value::as_str)
            .unwrap_or("error");
        return Err(ProviderError::CliFailed {
            program: program.to_owned(),
            message: format!("{subtype}: {}", excerpt(text.unwrap_or(""), EXCERPT_CHARS)),
        });
    }
    text.map(str::to_owned)
        .ok_or_else(|| unusable("a result envelope without a result text"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_failed_turn_or_an_unanswered_error_is_a_failure() {
        let lines = |events: &[Value]| {
            events
                .iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        };
        let failed = lines(&[
            json!({"type": "thread.started"}),
            json!({"type": "turn.failed", "error": {"message": "quota exceeded"}}),
        ]);
        assert_eq!(codex_failure(&failed).as_deref(), Some("quota exceeded"));
        let recovered = lines(&[
            json!({"type": "error", "message": "Reconnecting... 1/5"}),
            json!({"type": "item.completed", "item": {"type": "agent_message", "text": "{}"}}),
        ]);
        assert_eq!(codex_failure(&recovered), None);
        let unanswered = lines(&[json!({"type": "error", "message": "stream closed"})]);
        assert_eq!(codex_failure(&unanswered).as_deref(), Some("stream closed"));
    }

    #[test]
    fn claude_envelopes_are_read_and_errors_reported() {
        let ok = json!({"type": "result", "subtype": "success", "is_error": false, "result": "{}"});
        assert_eq!(claude_result("claude", &ok.to_string()).unwrap(), "{}");
        let verbose = json!([{"type": "system"}, ok]);
        assert_eq!(claude_result("claude", &verbose.to_string()).unwrap(), "{}");
        let err = json!({"type": "result", "subtype": "error_max_turns", "is_error": true, "result": "x"});
        let e = claude_result("claude", &err.to_string()).unwrap_err();
        assert!(e.to_string().contains("error_max_turns"), "{e}");
        assert!(claude_result("claude", "Hello").is_err());
    }
}
