//! One planner call, start to end: render the prompt, send it to the provider, take the
//! JSON object out of the reply, check envelope, schema and meaning, and when the reply
//! is refused ask again (up to the configured number of retries) with the refused reply
//! and the reason added to the conversation (the original never retried). Every exchange
//! is recorded for the task note, whether the call succeeds or not. Under
//! `runner.tooling` each call picks its provider ([`crate::runner::tooling`]): a rate
//! limit cools that candidate down and the call goes on with another, which is not a
//! protocol retry.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
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
use crate::runner::tooling::{Category, Choice, Selector};

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
    /// Under `runner.tooling`: the candidate used and why it was chosen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub choice: Option<Choice>,
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
    /// `runner.tooling` had no candidate to use (all cooling down after rate limits, or
    /// unavailable); `message` names each and why.
    Tooling { protocol: Protocol, message: String },
}

impl PlannerError {
    pub fn protocol(&self) -> Protocol {
        match self {
            PlannerError::Provider { protocol, .. }
            | PlannerError::Invalid { protocol, .. }
            | PlannerError::Render { protocol, .. }
            | PlannerError::Tooling { protocol, .. } => *protocol,
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
            PlannerError::Tooling { protocol, message } => write!(f, "{protocol}: {message}"),
        }
    }
}

impl std::error::Error for PlannerError {}

/// The planner: a provider (or `runner.tooling`'s choice of one per call) plus the
/// protocol machinery around it.
pub struct Planner {
    source: Source,
    options: PlannerOptions,
}

/// Where a call's provider comes from.
enum Source {
    /// `runner.meta`: one provider for every call.
    Fixed(Box<dyn Provider>),
    /// `runner.tooling`: chosen per call.
    Tooled(Box<Tooled>),
}

struct Tooled {
    selector: Selector,
    /// `runner.meta`, under each candidate's own keys.
    base: MetaConfig,
    base_dir: PathBuf,
    model_override: Option<String>,
    /// Providers built so far, by the category that answered and the candidate's index
    /// (an HTTP provider keeps its connection pool between calls).
    built: HashMap<(Category, usize), Box<dyn Provider>>,
}

/// The provider one attempt goes to.
struct Active {
    name: String,
    choice: Option<Choice>,
    config: Option<MetaConfig>,
}

impl Source {
    fn choose(
        &mut self,
        category: Category,
        after: Option<&str>,
    ) -> Result<Active, crate::runner::tooling::SelectError> {
        match self {
            Source::Fixed(provider) => Ok(Active {
                name: provider.name(),
                choice: None,
                config: None,
            }),
            Source::Tooled(tooled) => {
                let (choice, candidate) = tooled.selector.choose(category, after)?;
                // Checked when the planner was built; a failure here is still said, as the
                // provider's error on the first attempt.
                let config =
                    crate::runner::provider::candidate_config(&tooled.base, &candidate).ok();
                let model = config
                    .as_ref()
                    .map(|c| c.model(tooled.model_override.as_deref()));
                Ok(Active {
                    name: match model {
                        Some(model) => format!("{} {model}", candidate.tool),
                        None => choice.label(),
                    },
                    choice: Some(choice),
                    config,
                })
            }
        }
    }

    fn complete(
        &mut self,
        active: &Active,
        prompt: &Prompt,
        cancel: &Cancel,
    ) -> Result<String, ProviderError> {
        match self {
            Source::Fixed(provider) => provider.complete(prompt, cancel),
            Source::Tooled(tooled) => {
                let (Some(choice), Some(config)) = (&active.choice, &active.config) else {
                    return Err(ProviderError::Config {
                        message: "runner.tooling: the chosen candidate has no usable configuration"
                            .into(),
                    });
                };
                let key = (choice.from, choice.index);
                if !tooled.built.contains_key(&key) {
                    let fallback = tooled
                        .selector
                        .category(choice.category)
                        .is_some_and(|c| c.fallback_on_rate_limit);
                    let provider = crate::runner::provider::candidate_provider(
                        config,
                        &tooled.base_dir,
                        tooled.model_override.as_deref(),
                        fallback,
                    )?;
                    tooled.built.insert(key, provider);
                }
                match tooled.built.get_mut(&key) {
                    Some(provider) => provider.complete(prompt, cancel),
                    None => Err(ProviderError::Config {
                        message: "runner.tooling: the provider was not kept".into(),
                    }),
                }
            }
        }
    }

    /// After `error` from `active`: whether to cool it down and try another candidate.
    fn falls_back(&mut self, active: &Active, error: &ProviderError) -> bool {
        match (self, &active.choice) {
            (Source::Tooled(tooled), Some(choice)) if error.is_rate_limited() => {
                tooled.selector.rate_limited(choice)
            }
            _ => false,
        }
    }

    /// How many candidates a call may fall back through (each is cooled down first; a
    /// `cooldownSec` of 0 must not make a call loop).
    fn max_fallbacks(&self, category: Category) -> usize {
        match self {
            Source::Fixed(_) => 0,
            Source::Tooled(tooled) => tooled
                .selector
                .category(category)
                .map_or(0, |c| c.candidates.len()),
        }
    }
}

impl Planner {
    pub fn new(provider: Box<dyn Provider>, options: PlannerOptions) -> Planner {
        Planner {
            source: Source::Fixed(provider),
            options,
        }
    }

    /// A planner whose every call picks its provider with `selector` (`runner.tooling`):
    /// `plan_task` from the `plan` category (else `meta`), the others from `meta`. Each
    /// candidate's `runner.meta` (`base` under its own keys) is checked now, so a bad one
    /// is reported before any planner spend.
    pub fn tooled(
        selector: Selector,
        base: &MetaConfig,
        base_dir: &Path,
        model_override: Option<&str>,
        retries: u32,
    ) -> Result<Planner, ProviderError> {
        for category in [Category::Meta, Category::Plan] {
            let Some(config) = selector.category(category) else {
                return Err(ProviderError::Config {
                    message: format!(
                        "runner.tooling: the active profile defines neither `{}` nor `meta`",
                        category.name()
                    ),
                });
            };
            for candidate in &config.candidates {
                let config = crate::runner::provider::candidate_config(base, candidate)?;
                if config.timeout_sec == Some(0) {
                    return Err(ProviderError::Config {
                        message: format!(
                            "runner.tooling candidate `{}`: timeout_sec must be at least 1",
                            candidate.tool
                        ),
                    });
                }
                if config.script.is_some() && config.kind != crate::runner::provider::MetaKind::Mock
                {
                    return Err(ProviderError::Config {
                        message: format!(
                            "runner.tooling candidate `{}`: `script` is for tool: mock only",
                            candidate.tool
                        ),
                    });
                }
            }
        }
        Ok(Planner {
            source: Source::Tooled(Box::new(Tooled {
                selector,
                base: base.clone(),
                base_dir: base_dir.to_path_buf(),
                model_override: model_override.map(str::to_owned),
                built: HashMap::new(),
            })),
            options: PlannerOptions {
                retries,
                system_prompt: base.system_prompt.clone(),
            },
        })
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
        match &self.source {
            Source::Fixed(provider) => provider.name(),
            Source::Tooled(_) => "runner.tooling (chosen per call)".to_owned(),
        }
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

    /// A call of a protocol whose reply type lives above the runner (Multiverse's
    /// `plan_patch`): the caller renders the request (`user`, which states `schema`),
    /// gives the reply's JSON Schema and checks the reply, and gets what the task
    /// protocols get: the reply asked for again with the reason when `check` refuses it,
    /// rate-limit fallbacks under `runner.tooling` (the `plan` category), and every
    /// exchange recorded.
    pub fn ask<T>(
        &mut self,
        protocol: Protocol,
        request: &impl Serialize,
        user: String,
        schema: Value,
        cancel: &Cancel,
        check: impl Fn(&Map<String, Value>) -> Result<T, InvalidReply>,
    ) -> Call<T> {
        self.call_with_schema(protocol, request, Ok(user), schema, cancel, check)
    }

    fn call<T>(
        &mut self,
        protocol: Protocol,
        request: &impl Serialize,
        user: Result<String, RenderError>,
        cancel: &Cancel,
        check: impl Fn(&Map<String, Value>) -> Result<T, InvalidReply>,
    ) -> Call<T> {
        let schema = response::schema(protocol);
        self.call_with_schema(protocol, request, user, schema, cancel, check)
    }

    fn call_with_schema<T>(
        &mut self,
        protocol: Protocol,
        request: &impl Serialize,
        user: Result<String, RenderError>,
        schema: Value,
        cancel: &Cancel,
        check: impl Fn(&Map<String, Value>) -> Result<T, InvalidReply>,
    ) -> Call<T> {
        let mut exchanges = Vec::new();
        // The structured request goes to the provider (the mock matches on it): one that
        // cannot be encoded is a render failure, not a request of `null`.
        let rendered = user.and_then(|user| {
            serde_json::to_value(request)
                .map(|request| (user, request))
                .map_err(|e| RenderError(format!("the structured request: {e}")))
        });
        let (user, request) = match rendered {
            Ok(parts) => parts,
            Err(error) => {
                return Call {
                    result: Err(PlannerError::Render { protocol, error }),
                    exchanges,
                };
            }
        };
        let category = match protocol {
            Protocol::PlanTask | Protocol::PlanPatch => Category::Plan,
            Protocol::NextAction | Protocol::CompletionAssessment => Category::Meta,
        };
        let (mut active, system) = match self.start(protocol, category, None) {
            Ok(started) => started,
            Err(error) => {
                return Call {
                    result: Err(error),
                    exchanges,
                };
            }
        };
        let mut prompt = Prompt {
            protocol,
            system,
            messages: vec![Message::user(user)],
            request,
            schema,
        };
        let attempts = self.options.retries.saturating_add(1);
        let mut fallbacks_left = self.source.max_fallbacks(category);
        let mut attempt = 1;
        while attempt <= attempts {
            let started = Instant::now();
            let mut exchange = Exchange {
                protocol,
                attempt,
                provider: active.name.clone(),
                system: prompt.system.clone(),
                messages: prompt.messages.clone(),
                reply: None,
                error: None,
                duration_ms: 0,
                choice: active.choice.clone(),
            };
            let reply = self.source.complete(&active, &prompt, cancel);
            exchange.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            let reply = match reply {
                Ok(reply) => reply,
                Err(error) if fallbacks_left > 0 && self.source.falls_back(&active, &error) => {
                    // A rate limit: that candidate cools down and another takes the same
                    // attempt (not a protocol retry).
                    tracing::warn!(%protocol, provider = %active.name, %error, "planner rate limited; falling back");
                    exchange.error = Some(error.to_string());
                    exchanges.push(exchange);
                    fallbacks_left -= 1;
                    let limited = active
                        .choice
                        .as_ref()
                        .map_or_else(|| active.name.clone(), Choice::label);
                    match self.start(protocol, category, Some((&limited, &error))) {
                        Ok((next, system)) => (active, prompt.system) = (next, system),
                        Err(error) => {
                            return Call {
                                result: Err(error),
                                exchanges,
                            };
                        }
                    }
                    continue;
                }
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
            attempt += 1;
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

    /// The provider for a call (or, after `limited` was rate limited with its error,
    /// another one) and the system prompt that goes with it.
    fn start(
        &mut self,
        protocol: Protocol,
        category: Category,
        limited: Option<(&str, &ProviderError)>,
    ) -> Result<(Active, String), PlannerError> {
        let active = self
            .source
            .choose(category, limited.map(|(label, _)| label))
            .map_err(|e| PlannerError::Tooling {
                protocol,
                message: match limited {
                    Some((label, error)) => format!("{label} was rate limited ({error}); {e}"),
                    None => e.to_string(),
                },
            })?;
        let system = self
            .system(&active)
            .map_err(|error| PlannerError::Render { protocol, error })?;
        Ok((active, system))
    }

    /// The system prompt for `active`: a tooling candidate's `systemPrompt` (already laid
    /// over `runner.meta`'s) or the task's.
    fn system(&self, active: &Active) -> Result<String, RenderError> {
        let extra = match &active.config {
            Some(config) => config.system_prompt.as_deref(),
            None => self.options.system_prompt.as_deref(),
        };
        render::system(extra)
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
