//! The `openai-chat` provider: an OpenAI-compatible `POST {base_url}/chat/completions`
//! asking for a JSON object (`response_format: json_object`), with a per-attempt timeout,
//! retries with jittered exponential backoff on transport errors, timeouts, 408, 429 and 5xx
//! (honouring `Retry-After`), and a cancel token that ends a request in flight and a
//! backoff sleep at once. The API key is read once, sent only in the `Authorization`
//! header and never logged.

use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use super::config::MetaConfig;
use super::prompt::{Prompt, Provider, ProviderError, excerpt};
use crate::http_retry;
use crate::runner::cancel::Cancel;

/// Replies larger than this are refused (a chat completion is a few kilobytes).
const MAX_BODY_BYTES: u64 = 8 * 1024 * 1024;
/// How often a waiting call looks at the cancel token.
const CANCEL_POLL: Duration = Duration::from_millis(20);
const EXCERPT_CHARS: usize = 300;

/// The OpenAI-compatible chat provider.
#[derive(Clone)]
pub struct HttpProvider {
    agent: ureq::Agent,
    url: String,
    model: String,
    key: String,
    timeout: Duration,
    max_retries: u32,
    backoff: Duration,
    /// `runner.tooling` falls back to another candidate on a rate limit: a 429 is
    /// returned at once instead of retried here.
    rate_limit_fallback: bool,
}

/// Written by hand so the key never reaches a log line.
impl std::fmt::Debug for HttpProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpProvider")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("key", &"<redacted>")
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .finish_non_exhaustive()
    }
}

impl HttpProvider {
    /// A provider with the key read from `config.api_key_env`; a missing or empty
    /// variable is an error before any request is made.
    pub fn from_env(config: &MetaConfig, model: String) -> Result<HttpProvider, ProviderError> {
        let variable = config.api_key_env.clone();
        match crate::environment::secret(&variable) {
            Some(key) => Ok(HttpProvider::new(config, model, key)),
            None => Err(ProviderError::AuthMissing { variable }),
        }
    }

    /// A provider with an explicit key.
    pub fn new(config: &MetaConfig, model: String, key: String) -> HttpProvider {
        let timeout = config.timeout();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            // Statuses are ours to interpret (429 and 5xx are retried, the body explains).
            .http_status_as_error(false)
            .build()
            .into();
        HttpProvider {
            agent,
            url: format!("{}/chat/completions", config.base_url.trim_end_matches('/')),
            model,
            key: key.trim().to_owned(),
            timeout,
            max_retries: config.max_retries,
            backoff: http_retry::DEFAULT_BACKOFF,
            rate_limit_fallback: false,
        }
    }

    /// Returns HTTP 429 at once (the caller falls back to another provider) instead of
    /// waiting and retrying.
    pub fn with_rate_limit_fallback(mut self) -> HttpProvider {
        self.rate_limit_fallback = true;
        self
    }

    /// The first retry's delay (doubling after); tests use a short one.
    pub fn with_backoff(mut self, first: Duration) -> HttpProvider {
        self.backoff = first;
        self
    }

    fn body(&self, prompt: &Prompt) -> Vec<u8> {
        let mut messages = vec![json!({"role": "system", "content": prompt.system})];
        messages.extend(
            prompt
                .messages
                .iter()
                .map(|m| json!({"role": m.role.name(), "content": m.content})),
        );
        json!({
            "model": self.model,
            "messages": messages,
            "response_format": {"type": "json_object"},
        })
        .to_string()
        .into_bytes()
    }

    /// One request, run on its own thread so the caller can stop waiting the moment the
    /// task is cancelled. A cancelled request's thread ends by itself at the timeout.
    fn attempt(&self, body: Vec<u8>, cancel: &Cancel) -> Result<Raw, ProviderError> {
        let (sender, receiver) = mpsc::channel();
        let agent = self.agent.clone();
        let url = self.url.clone();
        let authorization = format!("Bearer {}", self.key);
        std::thread::spawn(move || {
            let _ = sender.send(send(&agent, &url, &authorization, body));
        });
        loop {
            if cancel.is_cancelled() {
                return Err(ProviderError::Cancelled);
            }
            match receiver.recv_timeout(CANCEL_POLL) {
                Ok(raw) => return Ok(raw),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Ok(Raw::Transport {
                        message: "the request thread ended without an answer".to_owned(),
                        retryable: false,
                    });
                }
            }
        }
    }
}

/// What one attempt came to.
enum Raw {
    Response {
        status: u16,
        retry_after: Option<Duration>,
        body: String,
    },
    Timeout,
    Transport {
        message: String,
        retryable: bool,
    },
}

fn send(agent: &ureq::Agent, url: &str, authorization: &str, body: Vec<u8>) -> Raw {
    let response = agent
        .post(url)
        .header("Authorization", authorization)
        .header("Content-Type", "application/json")
        .send(&body[..]);
    let mut response = match response {
        Ok(response) => response,
        Err(e) => return classify(e),
    };
    let status = response.status().as_u16();
    let retry_after = http_retry::retry_after(response.headers());
    match response
        .body_mut()
        .with_config()
        .limit(MAX_BODY_BYTES)
        .read_to_string()
    {
        Ok(body) => Raw::Response {
            status,
            retry_after,
            body,
        },
        Err(e) => classify(e),
    }
}

fn classify(error: ureq::Error) -> Raw {
    match &error {
        ureq::Error::Timeout(_) => Raw::Timeout,
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => Raw::Timeout,
        ureq::Error::Io(_)
        | ureq::Error::ConnectionFailed
        | ureq::Error::HostNotFound
        | ureq::Error::Protocol(_) => Raw::Transport {
            message: error.to_string(),
            retryable: true,
        },
        _ => Raw::Transport {
            message: error.to_string(),
            retryable: false,
        },
    }
}

/// The assistant's text in a chat completion body.
fn content(body: &str) -> Result<String, ProviderError> {
    let value: Value = serde_json::from_str(body).map_err(|e| ProviderError::BadResponse {
        message: format!("the body is not JSON ({e})"),
        excerpt: excerpt(body, EXCERPT_CHARS),
    })?;
    let message = value
        .get("choices")
        .and_then(|c| c.get(0))
        .and_then(|c| c.get("message"));
    match message
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
    {
        Some(text) => Ok(text.to_owned()),
        None => {
            let refusal = message
                .and_then(|m| m.get("refusal"))
                .and_then(Value::as_str);
            Err(ProviderError::BadResponse {
                message: match refusal {
                    Some(r) => format!("the model refused: {r}"),
                    None => "no choices[0].message.content in the body".to_owned(),
                },
                excerpt: excerpt(body, EXCERPT_CHARS),
            })
        }
    }
}

/// The most telling part of an error body: OpenAI's `error.message` if there is one.
fn error_excerpt(body: &str) -> String {
    let message = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        v.get("error")
            .and_then(|e| e.get("message").or(Some(e)))
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    excerpt(message.as_deref().unwrap_or(body), EXCERPT_CHARS)
}

impl Provider for HttpProvider {
    fn complete(&mut self, prompt: &Prompt, cancel: &Cancel) -> Result<String, ProviderError> {
        let body = self.body(prompt);
        let attempts = self.max_retries.saturating_add(1);
        let mut attempt = 0;
        loop {
            attempt += 1;
            tracing::debug!(url = %self.url, model = %self.model, attempt, protocol = %prompt.protocol, "planner request");
            let (error, retry_after) = match self.attempt(body.clone(), cancel)? {
                Raw::Response { status, body, .. } if (200..300).contains(&status) => {
                    return content(&body);
                }
                Raw::Response {
                    status,
                    retry_after,
                    body,
                } => {
                    let error = ProviderError::Http {
                        status,
                        excerpt: error_excerpt(&body),
                        attempts: attempt,
                    };
                    if !http_retry::retryable(status) || (status == 429 && self.rate_limit_fallback)
                    {
                        return Err(error);
                    }
                    (error, retry_after)
                }
                Raw::Timeout => (
                    ProviderError::Timeout {
                        after: self.timeout,
                        attempts: attempt,
                    },
                    None,
                ),
                Raw::Transport { message, retryable } => {
                    let error = ProviderError::Transport {
                        message,
                        attempts: attempt,
                    };
                    if !retryable {
                        return Err(error);
                    }
                    (error, None)
                }
            };
            if attempt >= attempts {
                return Err(error);
            }
            let wait = http_retry::delay(self.backoff, attempt - 1, retry_after);
            tracing::warn!(%error, wait_ms = wait.as_millis() as u64, "planner request failed; retrying");
            if cancel.sleep(wait) {
                return Err(ProviderError::Cancelled);
            }
        }
    }

    fn name(&self) -> String {
        format!("openai-chat {}", self.model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_taken_from_the_first_choice_and_its_absence_explained() {
        let body =
            json!({"choices": [{"message": {"role": "assistant", "content": "{\"a\": 1}"}}]});
        assert_eq!(content(&body.to_string()).unwrap(), "{\"a\": 1}");
        let e = content("<html>gateway</html>").unwrap_err();
        assert!(
            e.to_string().contains("not JSON") && e.to_string().contains("gateway"),
            "{e}"
        );
        let e = content(r#"{"choices": []}"#).unwrap_err();
        assert!(e.to_string().contains("choices[0].message.content"), "{e}");
        let refused = json!({"choices": [{"message": {"content": null, "refusal": "no"}}]});
        assert!(
            content(&refused.to_string())
                .unwrap_err()
                .to_string()
                .contains("refused")
        );
    }

    #[test]
    fn debug_output_hides_the_key() {
        let provider = HttpProvider::new(&MetaConfig::default(), "m".into(), "sk-secret".into());
        assert!(!format!("{provider:?}").contains("sk-secret"));
    }

    #[test]
    fn error_bodies_show_the_api_message() {
        let body = json!({"error": {"message": "Rate limit reached", "type": "requests"}});
        assert_eq!(error_excerpt(&body.to_string()), "Rate limit reached");
        assert_eq!(error_excerpt("plain"), "plain");
    }
}
