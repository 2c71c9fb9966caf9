//! One planner call, start to end: render the prompt, send it to the provider, take the
//! JSON object out of the reply, check envelope, schema and meaning, and when the reply
//! is refused ask again (up to the configured number of retries) with the refused reply
//! and the reason added to the conversation (the original never retried). Every exchange
//! is recorded for the task note, whether the call succeeds or not.

use std::time::Instant;

use serde::Serialize;
use serde_json::{Map, Value};

use super::render::{self, RenderError};
use super::request::{CompletionAssessmentRequest, NextActionRequest, PlanTaskRequest, Protocol};
use super::response::{
    self, CompletionAssessmentPayload, InvalidReply, NextActionPayload, PlanTaskPayload,
};
use crate::runner::cancel::Cancel;
use crate::runner::extract;
use crate::runner::provider::config::MetaConfig;
use crate::runner::provider::prompt::{Message, Prompt, Provider, ProviderError};

/// Characters of a refused reply quoted back to the planner.
const REFUSED_REPLY_CHARS: usize = 8_000;
/// Characters of a reply kept in the exchange record.
const RECORDED_REPLY_CHARS: usize = 100_000;

/// How the planner behaves, from the task's contract and `runner.meta`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlannerOptions {
    /// How many times a refused (invalid) reply is asked for again; 0 means one attempt.
    pub retries: u32,
    /// The task's `system_prompt`, added to the built-in one.
    pub system_prompt: Option<String>,
}

/// One request and reply, for the task note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Exchange {
    pub protocol: Protocol,
    /// 1 for the first attempt of a call.
    pub attempt: u32,
    pub provider: String,
    pub system: String,
    /// The conversation sent (the rendered request, then refused replies and reasons).
    pub messages: Vec<Message>,
    /// The raw reply, if the provider gave one (cut at a generous length).
    pub reply: Option<String>,
    /// Why the reply was refused or no reply came; `None` for the accepted one.
    pub error: Option<String>,
    pub duration_ms: u64,
}

/// A call's outcome and everything exchanged on the way to it.
#[derive(Debug)]
pub struct Call<T> {
    pub result: Result<T, PlannerError>,
    pub exchanges: Vec<Exchange>,
}

/// Why a planner call produced no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlannerError {
    /// The provider gave no reply (transport, timeout, HTTP status, missing key, CLI
    /// failure, cancel); not retried here (the HTTP provider retries transport errors).
    Provider {
        protocol: Protocol,
        attempt: u32,
        error: ProviderError,
    },
    /// Every reply was refused; `last_error` says why the last one was.
    Invalid {
        protocol: Protocol,
        attempts: u32,
        last_error: String,
    },
    /// A bundled template failed (a bug, not bad input).
    Render {
        protocol: Protocol,
        error: RenderError,
    },
}

impl PlannerError {
    pub fn protocol(&self) -> Protocol {
        match self {
            PlannerError::Provider { protocol, .. }
            | PlannerError::Invalid { protocol, .. }
            | PlannerError::Render { protocol, .. } => *protocol,
        }
    }

    /// The task was cancelled during the call (not a planner failure).
    pub fn is_cancelled(&self) -> bool {
        matches!(self, PlannerError::Provider { error, .. } if error.is_cancelled())
    }
}

impl std::fmt::Display for PlannerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlannerError::Provider {
                protocol,
                attempt,
                error,
            } => write!(f, "{protocol} (attempt {attempt}): {error}"),
            PlannerError::Invalid {
                protocol,
                attempts,
                last_error,
            } => write!(
                f,
                "{protocol}: no valid reply in {attempts} attempts; the last was refused because {last_error}"
            ),
            PlannerError::Render { protocol, error } => write!(f, "{protocol}: {error}"),
        }
    }
}

impl std::error::Error for PlannerError {}

/// The planner: a provider plus the protocol machinery around it.
pub struct Planner {
    provider: Box<dyn Provider>,
    options: PlannerOptions,
}

impl Planner {
    pub fn new(provider: Box<dyn Provider>, options: PlannerOptions) -> Planner {
        Planner { provider, options }
    }

    /// The planner `runner.meta` describes (its provider and its `system_prompt`), asking
    /// again up to `retries` times after a refused reply. `base_dir` is the task file's
    /// directory; `model_override` is a command-line model flag.
    pub fn from_config(
        config: &MetaConfig,
        base_dir: &std::path::Path,
        model_override: Option<&str>,
        retries: u32,
    ) -> Result<Planner, ProviderError> {
        let provider = crate::runner::provider::provider(config, base_dir, model_override)?;
        Ok(Planner::new(
            provider,
            PlannerOptions {
                retries,
                system_prompt: config.system_prompt.clone(),
            },
        ))
    }

    /// The provider's name and model, for logs and the task note.
    pub fn provider_name(&self) -> String {
        self.provider.name()
    }

    /// Acceptance criteria for the task.
    pub fn plan_task(
        &mut self,
        request: &PlanTaskRequest,
        cancel: &Cancel,
    ) -> Call<PlanTaskPayload> {
        let user = render::plan_task(request);
        self.call(
            Protocol::PlanTask,
            request,
            user,
            cancel,
            response::plan_task,
        )
    }

    /// What to do next.
    pub fn next_action(
        &mut self,
        request: &NextActionRequest,
        cancel: &Cancel,
    ) -> Call<NextActionPayload> {
        let user = render::next_action(request);
        self.call(
            Protocol::NextAction,
            request,
            user,
            cancel,
            response::next_action,
        )
    }

    /// Whether every criterion is met.
    pub fn completion_assessment(
        &mut self,
        request: &CompletionAssessmentRequest,
        cancel: &Cancel,
    ) -> Call<CompletionAssessmentPayload> {
        let user = render::completion_assessment(request);
        self.call(
            Protocol::CompletionAssessment,
            request,
            user,
            cancel,
            |reply| response::completion_assessment(reply, request),
        )
    }

    fn call<T>(
        &mut self,
        protocol: Protocol,
        request: &impl Serialize,
        user: Result<String, RenderError>,
        cancel: &Cancel,
        check: impl Fn(&Map<String, Value>) -> Result<T, InvalidReply>,
    ) -> Call<T> {
        let mut exchanges = Vec::new();
        let rendered = user.and_then(|user| {
            render::system(self.options.system_prompt.as_deref()).map(|system| (system, user))
        });
        // The structured request goes to the provider (the mock matches on it): one that
        // cannot be encoded is a render failure, not a request of `null`.
        let rendered = rendered.and_then(|(system, user)| {
            serde_json::to_value(request)
                .map(|request| (system, user, request))
                .map_err(|e| RenderError(format!("the structured request: {e}")))
        });
        let (system, user, request) = match rendered {
            Ok(parts) => parts,
            Err(error) => {
                return Call {
                    result: Err(PlannerError::Render { protocol, error }),
                    exchanges,
                };
            }
        };
        let mut prompt = Prompt {
            protocol,
            system,
            messages: vec![Message::user(user)],
            request,
            schema: response::schema(protocol),
        };
        let attempts = self.options.retries.saturating_add(1);
        let provider = self.provider.name();
        for attempt in 1..=attempts {
            let started = Instant::now();
            let mut exchange = Exchange {
                protocol,
                attempt,
                provider: provider.clone(),
                system: prompt.system.clone(),
                messages: prompt.messages.clone(),
                reply: None,
                error: None,
                duration_ms: 0,
            };
            let reply = self.provider.complete(&prompt, cancel);
            exchange.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            let reply = match reply {
                Ok(reply) => reply,
                Err(error) => {
                    exchange.error = Some(error.to_string());
                    exchanges.push(exchange);
                    return Call {
                        result: Err(PlannerError::Provider {
                            protocol,
                            attempt,
                            error,
                        }),
                        exchanges,
                    };
                }
            };
            exchange.reply = Some(render::head(&reply, RECORDED_REPLY_CHARS));
            let checked = extract::json_object(&reply)
                .map_err(|e| e.to_string())
                .and_then(|object| check(&object).map_err(|e| e.0));
            match checked {
                Ok(answer) => {
                    exchanges.push(exchange);
                    return Call {
                        result: Ok(answer),
                        exchanges,
                    };
                }
                Err(reason) => {
                    tracing::warn!(%protocol, attempt, %reason, "planner reply refused");
                    exchange.error = Some(reason.clone());
                    exchanges.push(exchange);
                    if attempt == attempts {
                        return Call {
                            result: Err(PlannerError::Invalid {
                                protocol,
                                attempts,
                                last_error: reason,
                            }),
                            exchanges,
                        };
                    }
                    prompt.messages.push(Message::assistant(render::head(
                        &reply,
                        REFUSED_REPLY_CHARS,
                    )));
                    prompt
                        .messages
                        .push(Message::user(feedback(protocol, &reason)));
                }
            }
        }
        // `attempts` is at least 1, so the loop returned; this keeps the compiler honest
        // without a panic.
        Call {
            result: Err(PlannerError::Invalid {
                protocol,
                attempts,
                last_error: "no attempt was made".to_owned(),
            }),
            exchanges,
        }
    }
}

/// What the planner is told after a refused reply.
fn feedback(protocol: Protocol, reason: &str) -> String {
    format!(
        "Your reply was refused: {reason}.\n\nAnswer the same {name} request again with exactly one JSON object, \
         {{\"type\": \"{name}\", \"version\": 1, \"payload\": {{...}}}}, matching the JSON Schema in the request. No other text.",
        name = protocol.name()
    )
}
