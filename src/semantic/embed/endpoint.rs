//! The endpoint backend: an OpenAI-compatible `POST .../v1/embeddings` (TEI, vLLM,
//! Ollama, OpenAI) asked for `{"model", "input": [...], "encoding_format": "float"}`.
//!
//! Batches go out up to `concurrency` at a time (scoped threads: ureq blocks). A request is
//! tried again on connection errors, timeouts, 408, 429 and 5xx, after a jittered
//! exponential backoff or the server's `Retry-After` (capped), up to `attempts` tries; then
//! the error names the URL, the status and the server's message. Answers are size-capped,
//! checked (count, order by `data[].index`, dimensions, finite) and normalised to unit
//! length, since not every server normalises. The API key goes only into the
//! `Authorization` header: never into a log line, an error or `Debug`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::error::ModelError;
use crate::config::SemanticSettings;
use crate::environment::{self, Environment};
use crate::http_retry;

/// Overrides `semantic.endpoint.url` (and turns the endpoint on by itself).
pub(crate) const ENV_URL: &str = "CODE_INTEL_EMBEDDING_URL";
/// Overrides `semantic.endpoint.model`.
pub(crate) const ENV_MODEL: &str = "CODE_INTEL_EMBEDDING_ENDPOINT_MODEL";

/// Answers larger than this are refused: 64 texts of 4096 floats as JSON are ~6 MiB.
const MAX_BODY_BYTES: u64 = 64 * 1024 * 1024;
/// The first retry waits about this long; each further one twice as long.
/// How much of a server's error message an error keeps.
const MESSAGE_CHARS: usize = 300;

/// An embedding server and how to use it.
#[derive(Clone, PartialEq)]
pub struct EndpointSpec {
    /// A base (`http://host:8080/v1`) or the full `.../embeddings` URL.
    pub url: String,
    /// The model name sent with each request.
    pub model: String,
    /// Sent as `Authorization: Bearer ...` when set.
    pub api_key: Option<String>,
    /// Texts per request.
    pub batch: usize,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// The limit of one request.
    pub timeout: Duration,
    /// The expected size of a vector; asked of the server once when unset.
    pub dimensions: Option<usize>,
    /// Tries per request, the first included.
    pub attempts: u32,
    /// The delay before the first retry (doubling after, jittered).
    pub backoff: Duration,
}

impl EndpointSpec {
    /// `url` and `model` with the defaults of `semantic.endpoint`.
    pub fn new(url: impl Into<String>, model: impl Into<String>) -> EndpointSpec {
        let defaults = crate::config::EndpointSettings::default();
        EndpointSpec {
            url: url.into(),
            model: model.into(),
            api_key: None,
            batch: defaults.batch,
            concurrency: defaults.concurrency,
            timeout: Duration::from_secs(defaults.timeout_seconds),
            dimensions: defaults.dimensions,
            attempts: defaults.attempts,
            backoff: http_retry::DEFAULT_BACKOFF,
        }
    }
}

/// Written by hand so the key never reaches a log line.
impl std::fmt::Debug for EndpointSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EndpointSpec")
            .field("url", &shown(&self.url))
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("batch", &self.batch)
            .field("concurrency", &self.concurrency)
            .field("timeout", &self.timeout)
            .field("dimensions", &self.dimensions)
            .field("attempts", &self.attempts)
            .finish_non_exhaustive()
    }
}

/// The endpoint the settings and the environment name, if any. The key is read here from
/// the variable `api_key_env` names; a variable named but unset is an error, not a request
/// without a key.
pub(crate) fn spec(
    settings: &SemanticSettings,
    env: &Environment,
) -> Result<Option<EndpointSpec>, ModelError> {
    let var = |name: &str| env.var(name).map(str::to_owned);
    let configured = settings.endpoint.clone().unwrap_or_default();
    let Some(url) = var(ENV_URL).or_else(|| {
        let url = configured.url.trim();
        (!url.is_empty()).then(|| url.to_owned())
    }) else {
        return Ok(None);
    };
    let model = var(ENV_MODEL)
        .or_else(|| {
            let model = configured.model.trim();
            (!model.is_empty()).then(|| model.to_owned())
        })
        .ok_or_else(|| {
            ModelError::EndpointConfig(format!(
                "the embedding server {} needs a model name: set semantic.endpoint.model or {ENV_MODEL}",
                shown(&url)
            ))
        })?;
    let api_key = match configured.api_key_env.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(variable) => Some(environment::secret(variable).ok_or_else(|| {
            ModelError::EndpointConfig(format!(
                "semantic.endpoint.api_key_env names {variable}, which is not set in the environment"
            ))
        })?),
    };
    Ok(Some(EndpointSpec {
        url,
        model,
        api_key: api_key.map(|k| k.trim().to_owned()),
        batch: configured.batch,
        concurrency: configured.concurrency,
        timeout: Duration::from_secs(configured.timeout_seconds),
        dimensions: configured.dimensions,
        attempts: configured.attempts,
        backoff: http_retry::DEFAULT_BACKOFF,
    }))
}

/// The URL requests go to: a base gets `/embeddings`, a URL already ending in it is kept
/// (as OpenAI's clients do).
fn request_url(url: &str) -> Result<String, ModelError> {
    let url = url.trim().trim_end_matches('/');
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(ModelError::EndpointConfig(format!(
            "the URL {} must start with http:// or https://",
            shown(url)
        )));
    }
    if url.ends_with("/embeddings") {
        Ok(url.to_owned())
    } else {
        Ok(format!("{url}/embeddings"))
    }
}

/// `url` as errors show it: without user information or query, which may hold secrets.
fn shown(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or("");
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority
                .rsplit_once('@')
                .map_or(authority, |(_, host)| host);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_owned(),
    }
}

/// A connected server.
pub(crate) struct Endpoint {
    agent: ureq::Agent,
    url: String,
    model: String,
    /// `Bearer <key>`, when there is a key.
    authorization: Option<String>,
    key: Option<String>,
    batch: usize,
    concurrency: usize,
    attempts: u32,
    backoff: Duration,
    /// Known once connected: configured, or learnt from the first answer.
    dimensions: Option<usize>,
}

impl Endpoint {
    /// Checks the spec and learns the dimensions (one request) unless they are configured.
    /// The id is the model name and the dimensions, not the URL: a team that moves its
    /// server keeps its vectors.
    pub(crate) fn connect(spec: &EndpointSpec) -> Result<(Endpoint, String, usize), ModelError> {
        if spec.model.trim().is_empty() {
            return Err(ModelError::EndpointConfig(format!(
                "the embedding server {} needs a model name",
                shown(&spec.url)
            )));
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(spec.timeout.max(Duration::from_millis(1))))
            // Statuses are ours to interpret (408, 429 and 5xx are retried).
            .http_status_as_error(false)
            // A redirect would carry the key elsewhere or turn the POST into a GET.
            .max_redirects(0)
            .build()
            .into();
        let key = spec
            .api_key
            .as_deref()
            .map(str::trim)
            .filter(|k| !k.is_empty());
        let mut endpoint = Endpoint {
            agent,
            url: request_url(&spec.url)?,
            model: spec.model.trim().to_owned(),
            authorization: key.map(|k| format!("Bearer {k}")),
            key: key.map(str::to_owned),
            batch: spec.batch.max(1),
            concurrency: spec.concurrency.max(1),
            attempts: spec.attempts.max(1),
            backoff: spec.backoff,
            dimensions: spec.dimensions.filter(|&d| d > 0),
        };
        let dimensions = match endpoint.dimensions {
            Some(d) => d,
            None => {
                let probe = endpoint.request(&["probe"], &AtomicBool::new(false))?;
                let d = probe.first().map_or(0, Vec::len);
                endpoint.dimensions = Some(d);
                d
            }
        };
        let id = format!("{}@endpoint/{dimensions}", endpoint.model);
        Ok((endpoint, id, dimensions))
    }

    pub(crate) fn batch(&self) -> usize {
        self.batch
    }

    pub(crate) fn texts_per_call(&self) -> usize {
        self.batch.saturating_mul(self.concurrency)
    }

    /// The vectors of each batch, in order, with up to `concurrency` requests in flight.
    /// The first failure stops the rest (no new request or retry starts) and is returned.
    pub(crate) fn embed_batches(
        &self,
        batches: &[&[&str]],
    ) -> Result<Vec<Vec<Vec<f32>>>, ModelError> {
        let stop = AtomicBool::new(false);
        if batches.len() <= 1 || self.concurrency == 1 {
            return batches.iter().map(|b| self.request(b, &stop)).collect();
        }
        let next = AtomicUsize::new(0);
        let first_error: Mutex<Option<ModelError>> = Mutex::new(None);
        let done: Mutex<Vec<Option<Vec<Vec<f32>>>>> = Mutex::new(vec![None; batches.len()]);
        let work = || {
            while !stop.load(Ordering::SeqCst) {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(batch) = batches.get(i) else {
                    break;
                };
                match self.request(batch, &stop) {
                    Ok(vectors) => {
                        done.lock().unwrap_or_else(PoisonError::into_inner)[i] = Some(vectors);
                    }
                    Err(e) => {
                        stop.store(true, Ordering::SeqCst);
                        first_error
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .get_or_insert(e);
                    }
                }
            }
        };
        std::thread::scope(|scope| {
            let workers = self.concurrency.min(batches.len());
            let mut handles = Vec::with_capacity(workers);
            for _ in 1..workers {
                match std::thread::Builder::new()
                    .name("embed-request".into())
                    .spawn_scoped(scope, work)
                {
                    Ok(handle) => handles.push(handle),
                    // Fewer threads only means fewer requests at once.
                    Err(_) => break,
                }
            }
            work();
            for handle in handles {
                if handle.join().is_err() {
                    stop.store(true, Ordering::SeqCst);
                    first_error
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .get_or_insert(ModelError::Embedding(
                            "an embedding request thread failed".into(),
                        ));
                }
            }
        });
        if let Some(e) = first_error
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
        {
            return Err(e);
        }
        done.into_inner()
            .unwrap_or_else(PoisonError::into_inner)
            .into_iter()
            .map(|v| v.ok_or_else(|| ModelError::Embedding("a batch was never embedded".into())))
            .collect()
    }

    /// One batch, tried up to `attempts` times.
    fn request(&self, texts: &[&str], stop: &AtomicBool) -> Result<Vec<Vec<f32>>, ModelError> {
        let body = serde_json::json!({
            "model": self.model,
            "input": texts,
            "encoding_format": "float",
        })
        .to_string()
        .into_bytes();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let started = Instant::now();
            let raw = self.send(&body);
            tracing::debug!(
                url = %shown(&self.url),
                model = %self.model,
                texts = texts.len(),
                attempt,
                ms = started.elapsed().as_millis() as u64,
                "embedding request"
            );
            let (retry, retry_after, status, message) = match raw {
                Raw::Response { status, body, .. } if (200..300).contains(&status) => {
                    return parse(&body, texts.len(), self.dimensions).map_err(|reason| {
                        ModelError::EndpointResponse {
                            url: shown(&self.url),
                            reason: self.redact(reason),
                        }
                    });
                }
                Raw::Response {
                    status,
                    retry_after,
                    body,
                } => (
                    http_retry::retryable(status),
                    retry_after,
                    Some(status),
                    server_message(&body),
                ),
                Raw::Transport { message, retryable } => (retryable, None, None, message),
            };
            let failed = || ModelError::Endpoint {
                url: shown(&self.url),
                status,
                message: self.redact(message.clone()),
                attempts: attempt,
            };
            if !retry || attempt >= self.attempts || stop.load(Ordering::SeqCst) {
                return Err(failed());
            }
            std::thread::sleep(http_retry::delay(self.backoff, attempt - 1, retry_after));
            // Another batch of the same call failed meanwhile: this one's answer is not needed.
            if stop.load(Ordering::SeqCst) {
                return Err(failed());
            }
        }
    }

    fn send(&self, body: &[u8]) -> Raw {
        let mut request = self
            .agent
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json");
        if let Some(authorization) = &self.authorization {
            request = request.header("Authorization", authorization);
        }
        let mut response = match request.send(body) {
            Ok(response) => response,
            Err(e) => return transport(&e),
        };
        let status = response.status().as_u16();
        let retry_after = http_retry::retry_after(response.headers());
        match response
            .body_mut()
            .with_config()
            .limit(MAX_BODY_BYTES)
            .read_to_vec()
        {
            Ok(body) => Raw::Response {
                status,
                retry_after,
                body,
            },
            Err(ureq::Error::BodyExceedsLimit(limit)) => Raw::Transport {
                message: format!("the answer is larger than {limit} bytes"),
                retryable: false,
            },
            Err(e) => transport(&e),
        }
    }

    /// `text` without the key, should a server echo it back.
    fn redact(&self, text: String) -> String {
        match &self.key {
            Some(key) if text.contains(key.as_str()) => text.replace(key.as_str(), "<redacted>"),
            _ => text,
        }
    }
}

/// What one attempt came to.
enum Raw {
    Response {
        status: u16,
        retry_after: Option<Duration>,
        body: Vec<u8>,
    },
    Transport {
        message: String,
        retryable: bool,
    },
}

/// Timeouts and connection failures are worth another try; a TLS or URL error is not.
fn transport(error: &ureq::Error) -> Raw {
    let retryable = matches!(
        error,
        ureq::Error::Timeout(_)
            | ureq::Error::Io(_)
            | ureq::Error::ConnectionFailed
            | ureq::Error::HostNotFound
            | ureq::Error::Protocol(_)
    );
    Raw::Transport {
        message: error.to_string(),
        retryable,
    }
}

/// The most telling part of an error body: OpenAI's `error.message`, TEI's and Ollama's
/// `error`, vLLM's `message`, FastAPI's `detail`; else the body itself. Trimmed.
fn server_message(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let value: Option<serde_json::Value> = serde_json::from_str(&text).ok();
    let found = value.as_ref().and_then(|v| {
        let error = v.get("error");
        error
            .and_then(|e| e.get("message"))
            .or(error)
            .or_else(|| v.get("message"))
            .or_else(|| v.get("detail"))
            .and_then(serde_json::Value::as_str)
    });
    let message = found.unwrap_or(&text).trim();
    if message.is_empty() {
        return "(no message)".into();
    }
    let mut out: String = message.chars().take(MESSAGE_CHARS).collect();
    if out.len() < message.len() {
        out.push_str(" [...]");
    }
    out
}

#[derive(Deserialize)]
struct Answer {
    data: Vec<Datum>,
}

#[derive(Deserialize)]
struct Datum {
    index: Option<usize>,
    embedding: Embedding,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Embedding {
    Floats(Vec<f32>),
    Text(String),
}

/// The unit vectors of an answer to `count` texts, in input order, or why the answer is
/// not one.
fn parse(body: &[u8], count: usize, dimensions: Option<usize>) -> Result<Vec<Vec<f32>>, String> {
    let answer: Answer = serde_json::from_slice(body).map_err(|e| {
        let text = String::from_utf8_lossy(body);
        let start: String = text.trim().chars().take(80).collect();
        format!("not an embeddings response ({e}); it starts with `{start}`")
    })?;
    if answer.data.len() != count {
        return Err(format!(
            "{count} embeddings asked for, {} in the answer",
            answer.data.len()
        ));
    }
    // Without configured dimensions, every vector must have the first one's size.
    let mut dimensions = dimensions;
    let mut out: Vec<Option<Vec<f32>>> = vec![None; count];
    for (position, datum) in answer.data.into_iter().enumerate() {
        let index = datum.index.unwrap_or(position);
        let mut vector = match datum.embedding {
            Embedding::Floats(v) => v,
            Embedding::Text(text) => {
                return Err(format!(
                    "embedding {index} is a string of {} characters (base64?): the server ignored encoding_format \"float\"",
                    text.len()
                ));
            }
        };
        let expected = *dimensions.get_or_insert(vector.len());
        if vector.is_empty() || vector.len() != expected {
            return Err(format!(
                "embedding {index} has {} dimensions, {expected} expected",
                vector.len()
            ));
        }
        if vector.iter().any(|x| !x.is_finite()) {
            return Err(format!(
                "embedding {index} holds a value that is not finite"
            ));
        }
        let norm = vector
            .iter()
            .map(|&x| f64::from(x) * f64::from(x))
            .sum::<f64>()
            .sqrt();
        if norm == 0.0 || !norm.is_finite() {
            return Err(format!("embedding {index} is the zero vector"));
        }
        for x in &mut vector {
            *x = (f64::from(*x) / norm) as f32;
        }
        match out.get_mut(index) {
            Some(slot @ None) => *slot = Some(vector),
            Some(Some(_)) => return Err(format!("index {index} appears twice")),
            None => {
                return Err(format!("index {index} is out of range for {count} inputs"));
            }
        }
    }
    // As many answers as inputs, each index once and in range: every slot is filled.
    Ok(out.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_gets_embeddings_appended_and_a_full_one_is_kept() {
        let url = |u: &str| request_url(u).unwrap();
        assert_eq!(url("http://gpu:8080/v1"), "http://gpu:8080/v1/embeddings");
        assert_eq!(url("http://gpu:8080/v1/"), "http://gpu:8080/v1/embeddings");
        assert_eq!(
            url("https://api.openai.com/v1/embeddings"),
            "https://api.openai.com/v1/embeddings"
        );
        assert_eq!(
            url(" http://localhost:11434/v1/embeddings/ "),
            "http://localhost:11434/v1/embeddings"
        );
        let e = request_url("gpu:8080/v1").unwrap_err();
        assert_eq!(e.key(), "semantic.endpoint_misconfigured");
    }

    #[test]
    fn a_url_is_shown_without_credentials_or_query() {
        assert_eq!(
            shown("https://user:secret@host:1/v1/embeddings?api-key=k#x"),
            "https://host:1/v1/embeddings"
        );
        assert_eq!(shown("http://host/v1"), "http://host/v1");
        assert_eq!(shown("http://user@host"), "http://host");
    }

    #[test]
    fn an_answer_is_put_in_input_order_and_normalised() {
        let body = br#"{"object":"list","data":[
            {"object":"embedding","index":1,"embedding":[0.0,2.0]},
            {"object":"embedding","index":0,"embedding":[3.0,4.0]}],
            "model":"m","usage":{"prompt_tokens":2,"total_tokens":2}}"#;
        let v = parse(body, 2, Some(2)).unwrap();
        assert_eq!(v, [vec![0.6, 0.8], vec![0.0, 1.0]]);
        // Without indexes, the answer's order is the input's.
        let v = parse(
            br#"{"data":[{"embedding":[1,0]},{"embedding":[0,5]}]}"#,
            2,
            None,
        )
        .unwrap();
        assert_eq!(v, [vec![1.0, 0.0], vec![0.0, 1.0]]);
    }

    #[test]
    fn an_answer_that_is_not_the_embeddings_asked_for_says_why() {
        let err = |body: &str, count, dims| parse(body.as_bytes(), count, dims).unwrap_err();
        assert!(err("<html>busy</html>", 1, None).contains("not an embeddings response"));
        assert!(err("<html>busy</html>", 1, None).contains("<html>busy"));
        assert!(err(r#"{"data":{}}"#, 1, None).contains("not an embeddings response"));
        assert!(
            err(r#"{"data":[{"index":0,"embedding":[1]}]}"#, 2, None)
                .contains("2 embeddings asked for, 1 in the answer")
        );
        assert!(
            err(r#"{"data":[{"index":0,"embedding":[1,2,3]}]}"#, 1, Some(2))
                .contains("3 dimensions, 2 expected")
        );
        assert!(
            err(
                r#"{"data":[{"embedding":[1,2]},{"embedding":[1,2,3]}]}"#,
                2,
                None
            )
            .contains("embedding 1 has 3 dimensions, 2 expected")
        );
        assert!(err(r#"{"data":[{"embedding":[]}]}"#, 1, None).contains("0 dimensions"));
        assert!(err(r#"{"data":[{"embedding":[0,0]}]}"#, 1, None).contains("zero vector"));
        assert!(err(r#"{"data":[{"embedding":[1e39]}]}"#, 1, None).contains("not finite"));
        assert!(
            err(
                r#"{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}"#,
                2,
                None
            )
            .contains("index 0 appears twice")
        );
        assert!(err(r#"{"data":[{"index":5,"embedding":[1]}]}"#, 1, None).contains("out of range"));
        assert!(err(r#"{"data":[{"embedding":"AACAPw=="}]}"#, 1, None).contains("base64"));
    }

    #[test]
    fn the_servers_message_is_found_and_trimmed() {
        let m = |body: &str| server_message(body.as_bytes());
        assert_eq!(
            m(r#"{"error":{"message":"Rate limit reached","type":"requests"}}"#),
            "Rate limit reached"
        );
        assert_eq!(
            m(r#"{"error":"Input validation error","error_type":"Validation"}"#),
            "Input validation error"
        );
        assert_eq!(
            m(r#"{"object":"error","message":"model not found"}"#),
            "model not found"
        );
        assert_eq!(m(r#"{"detail":"Not Found"}"#), "Not Found");
        assert_eq!(m("  upstream timed out \n"), "upstream timed out");
        assert_eq!(m(""), "(no message)");
        let long = m(&"x".repeat(1000));
        assert!(long.ends_with(" [...]") && long.len() < 320, "{long}");
    }

    #[test]
    fn the_spec_comes_from_the_settings_and_a_missing_key_variable_is_an_error() {
        let env = Environment::empty();
        let mut settings = SemanticSettings::default();
        assert_eq!(spec(&settings, &env).unwrap(), None);
        settings.endpoint = Some(crate::config::EndpointSettings {
            url: "http://gpu:8080/v1".into(),
            ..Default::default()
        });
        let e = spec(&settings, &env).unwrap_err();
        assert!(e.to_string().contains("semantic.endpoint.model"), "{e}");
        settings.endpoint = Some(crate::config::EndpointSettings {
            url: "http://gpu:8080/v1".into(),
            model: "bge-small".into(),
            batch: 16,
            api_key_env: Some("CODE_INTEL_TEST_NO_SUCH_VARIABLE".into()),
            ..Default::default()
        });
        let e = spec(&settings, &env).unwrap_err();
        assert_eq!(e.key(), "semantic.endpoint_misconfigured");
        assert!(
            e.to_string().contains("CODE_INTEL_TEST_NO_SUCH_VARIABLE"),
            "{e}"
        );
        // PATH is set everywhere: it stands in for a key variable that is set.
        settings.endpoint.as_mut().unwrap().api_key_env = Some("PATH".into());
        let s = spec(&settings, &env).unwrap().unwrap();
        assert_eq!(
            (s.model.as_str(), s.batch, s.concurrency),
            ("bge-small", 16, 4)
        );
        assert!(s.api_key.is_some());
        assert!(!format!("{s:?}").contains(&std::env::var("PATH").unwrap()));
        // The environment given overrides the settings' URL and model.
        let env = Environment::empty()
            .with(ENV_URL, "http://other:9000/v1")
            .with(ENV_MODEL, "e5");
        let s = spec(&settings, &env).unwrap().unwrap();
        assert_eq!(
            (s.url.as_str(), s.model.as_str()),
            ("http://other:9000/v1", "e5")
        );
    }
}
