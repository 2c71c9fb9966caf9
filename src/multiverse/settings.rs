//! The chat planner's settings as the IDE and `multiverse settings` see them: provider,
//! model, the *name* of the variable holding the API key (never the key: it is neither
//! stored, returned nor logged, only whether the variable is set), and the base URL.
//! They live in `config.json`'s `planner` block (`runner.meta`'s shape); a change is
//! validated here, whole, before anything is written. The connection test makes a real,
//! small call through the runner's own providers: one chat completion over its HTTP
//! client, `--version` of a CLI, or building the mock.

use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::runner::{
    Cancel, HttpProvider, Message, MetaConfig, MetaKind, Prompt, Protocol, Provider, ProviderError,
};

/// The longest a connection test waits for an answer.
pub const TEST_TIMEOUT: Duration = Duration::from_secs(10);
/// A model name longer than this is refused (a pasted text, not a name).
const MAX_MODEL_CHARS: usize = 200;
/// An environment variable name longer than this is refused.
const MAX_VARIABLE_CHARS: usize = 128;
/// Keys of `runner.meta` that belong to one provider and are dropped when it changes.
const PROVIDER_KEYS: [&str; 4] = ["base_url", "api_key_env", "command", "script"];

/// The planner block in effect: `config.json`'s `planner`, else the runner block's
/// `meta`, else the defaults (`{}`), as the chat's planner is built.
pub(crate) fn planner_block(planner: Option<&Value>, runner: &Value) -> Value {
    planner
        .cloned()
        .or_else(|| runner.get("meta").cloned())
        .unwrap_or_else(|| json!({}))
}

/// The chat planner's settings as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmSettings {
    /// `openai-chat`, `codex-cli`, `claude-code` or `mock`.
    pub provider: String,
    /// The model in effect (the configured one, else the provider's default).
    pub model: String,
    /// openai-chat: the environment variable the key is read from.
    pub api_key_env: Option<String>,
    /// openai-chat: whether that variable is set (non-empty) where this runs.
    pub api_key_set: bool,
    /// openai-chat: the API's base URL.
    pub base_url: Option<String>,
    /// codex-cli and claude-code: the CLI to run, when not the default on PATH.
    pub command: Option<String>,
}

impl LlmSettings {
    /// The settings a planner block describes.
    pub fn of(block: &Value) -> Result<LlmSettings, SettingsError> {
        let meta = meta(block)?;
        let http = meta.kind == MetaKind::OpenaiChat;
        Ok(LlmSettings {
            provider: meta.kind.name().to_string(),
            model: meta.model(None),
            api_key_env: http.then(|| meta.api_key_env.clone()),
            api_key_set: http && variable_set(&meta.api_key_env),
            base_url: http.then(|| meta.base_url.clone()),
            command: meta.command.clone(),
        })
    }
}

fn variable_set(name: &str) -> bool {
    crate::environment::secret(name).is_some()
}

fn meta(block: &Value) -> Result<MetaConfig, SettingsError> {
    serde_json::from_value(block.clone()).map_err(|e| SettingsError::Invalid(e.to_string()))
}

/// A change of the settings (`PUT /api/settings`, `multiverse settings set`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingsUpdate {
    pub provider: String,
    pub model: String,
    /// openai-chat only: the variable's name; unchanged when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// openai-chat only; unchanged when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// A connection test only: the key itself, typed for this one test of a base URL or
    /// key variable that is not the saved one. Never saved (a change carrying it is
    /// refused), never shown, never logged.
    #[serde(default, skip_serializing)]
    pub api_key: Option<TypedKey>,
}

/// A key typed into a connection test: its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct TypedKey(String);

impl TypedKey {
    pub fn new(key: impl Into<String>) -> TypedKey {
        TypedKey(key.into())
    }
}

impl std::fmt::Debug for TypedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TypedKey(<redacted>)")
    }
}

/// Why a change was refused. `key()` is stable. No variant holds what was given as the
/// key variable: a key pasted there by mistake must not come back in an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingsError {
    UnknownProvider(String),
    EmptyModel,
    ModelTooLong,
    /// A model a CLI would misread (an option, whitespace, a control character).
    BadModel(crate::runner::provider::ModelNameError),
    /// `api_key_env` is not an environment variable's name.
    BadKeyVariable,
    BadBaseUrl(String),
    /// `api_key_env` or `base_url` for a provider that does not use them.
    NotForProvider {
        field: &'static str,
        provider: String,
    },
    /// The block is not a valid `runner.meta`.
    Invalid(String),
    /// A change carried the key itself: keys are never saved.
    KeyNotStored,
}

impl SettingsError {
    pub fn key(&self) -> &'static str {
        match self {
            SettingsError::UnknownProvider(_) => "settings.unknown_provider",
            SettingsError::EmptyModel => "settings.empty_model",
            SettingsError::ModelTooLong => "settings.model_too_long",
            SettingsError::BadModel(_) => "settings.bad_model",
            SettingsError::BadKeyVariable => "settings.bad_key_variable",
            SettingsError::BadBaseUrl(_) => "settings.bad_base_url",
            SettingsError::NotForProvider { .. } => "settings.not_for_provider",
            SettingsError::Invalid(_) => "settings.invalid",
            SettingsError::KeyNotStored => "settings.key_not_stored",
        }
    }
}

impl std::fmt::Display for SettingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SettingsError::UnknownProvider(name) => write!(
                f,
                "unknown provider {name:?}: use openai-chat, codex-cli, claude-code or mock"
            ),
            SettingsError::EmptyModel => f.write_str("the model is empty"),
            SettingsError::BadModel(e) => e.fmt(f),
            SettingsError::ModelTooLong => {
                write!(f, "the model name is longer than {MAX_MODEL_CHARS} characters")
            }
            SettingsError::BadKeyVariable => write!(
                f,
                "api_key_env must be the name of an environment variable ending in {KEY_SUFFIX} (letters, digits and _, such as OPENAI_API_KEY), not the key itself"
            ),
            SettingsError::BadBaseUrl(url) => {
                write!(f, "base_url {url:?} is not an http:// or https:// URL")
            }
            SettingsError::NotForProvider { field, provider } => {
                write!(f, "{field} is for openai-chat, not {provider}")
            }
            SettingsError::Invalid(message) => write!(f, "the planner block: {message}"),
            SettingsError::KeyNotStored => f.write_str(
                "the key itself is never saved: put it in the environment variable api_key_env names (a key typed into a connection test is used for that test only)",
            ),
        }
    }
}

impl std::error::Error for SettingsError {}

/// What a key variable's name must end with. The settings can be changed by whoever holds
/// the daemon's token; a name that must say it holds an API key keeps them from pointing
/// the planner at any other secret of the daemon's environment (`HOME`, a cloud key).
pub(crate) const KEY_SUFFIX: &str = "_API_KEY";

/// Whether `name` can name the key's variable: `[A-Za-z_][A-Za-z0-9_]*` ending in
/// [`KEY_SUFFIX`].
pub fn valid_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= MAX_VARIABLE_CHARS
        && name.len() > KEY_SUFFIX.len()
        && name.ends_with(KEY_SUFFIX)
}

/// The planner block `current` becomes with `update`: checked whole, as `runner.meta`.
/// Keys of another provider (base URL, key variable, command, script) are dropped when
/// the provider changes; the rest (timeout, retries, system prompt) is kept.
pub(crate) fn apply(current: &Value, update: &SettingsUpdate) -> Result<Value, SettingsError> {
    if update.api_key.is_some() {
        return Err(SettingsError::KeyNotStored);
    }
    let kind = check(update)?;
    let model = update.model.trim();
    let mut block: Map<String, Value> = current.as_object().cloned().unwrap_or_default();
    let same_kind = meta(current).is_ok_and(|m| m.kind == kind);
    if !same_kind {
        for key in PROVIDER_KEYS {
            block.remove(key);
        }
    }
    block.insert("kind".into(), json!(kind.name()));
    block.insert("model".into(), json!(model));
    if let Some(name) = &update.api_key_env {
        block.insert("api_key_env".into(), json!(name));
    }
    if let Some(url) = &update.base_url {
        block.insert("base_url".into(), json!(url.trim()));
    }
    let block = Value::Object(block);
    meta(&block)?;
    Ok(block)
}

/// The checks of `update` on its own (provider, model, key variable, base URL); its
/// provider.
pub fn check(update: &SettingsUpdate) -> Result<MetaKind, SettingsError> {
    let kind: MetaKind = serde_json::from_value(json!(update.provider.trim()))
        .map_err(|_| SettingsError::UnknownProvider(update.provider.clone()))?;
    let model = update.model.trim();
    if model.is_empty() {
        return Err(SettingsError::EmptyModel);
    }
    if model.chars().count() > MAX_MODEL_CHARS {
        return Err(SettingsError::ModelTooLong);
    }
    crate::runner::provider::check_model_name(model).map_err(SettingsError::BadModel)?;
    let not_for = |field| SettingsError::NotForProvider {
        field,
        provider: kind.name().to_string(),
    };
    if kind != MetaKind::OpenaiChat {
        if update.api_key_env.is_some() {
            return Err(not_for("api_key_env"));
        }
        if update.base_url.is_some() {
            return Err(not_for("base_url"));
        }
    }
    if let Some(name) = &update.api_key_env
        && !valid_variable_name(name)
    {
        return Err(SettingsError::BadKeyVariable);
    }
    if let Some(url) = &update.base_url {
        let url = url.trim();
        let rest = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"));
        if rest.is_none_or(|r| r.is_empty() || r.contains(char::is_whitespace)) {
            return Err(SettingsError::BadBaseUrl(url.to_string()));
        }
    }
    Ok(kind)
}

/// What a connection test found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionTest {
    pub ok: bool,
    pub provider: String,
    pub model: String,
    /// From the start of the call to its answer (or failure).
    pub latency_ms: u64,
    /// What was tried and seen, e.g. the endpoint, the CLI's version line.
    pub detail: String,
    /// Why it failed: `{key, message}` with a stable key.
    pub error: Option<TestFailure>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestFailure {
    pub key: String,
    pub message: String,
}

/// Where a connection test's key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum KeySource {
    /// The variable the saved settings name, for the saved endpoint.
    Saved,
    /// Typed into this test.
    Typed(TypedKey),
    /// None may be sent: the endpoint or the variable is not the saved one, and no key
    /// was typed.
    Withheld,
}

/// The connection test of the saved planner block `saved`, or of `candidate` laid over it
/// (nothing saved). The key goes only where the user sent it: the saved variable's value
/// to the saved base URL, a typed key to the URL typed with it; a candidate that changes
/// the base URL or the variable without typing the key is tested without sending one
/// (`connection.key_required`), so no request can send a secret of the daemon's
/// environment to an address of its choosing.
pub(crate) fn connection_test(
    saved: &Value,
    candidate: Option<&SettingsUpdate>,
    base_dir: &Path,
) -> Result<ConnectionTest, SettingsError> {
    let Some(candidate) = candidate else {
        return Ok(test_connection(saved, base_dir, KeySource::Saved));
    };
    let typed = candidate.api_key.clone();
    let block = apply(
        saved,
        &SettingsUpdate {
            api_key: None,
            ..candidate.clone()
        },
    )?;
    let endpoint = |b: &Value| {
        meta(b)
            .ok()
            .filter(|m| m.kind == MetaKind::OpenaiChat)
            .map(|m| (m.base_url.trim_end_matches('/').to_string(), m.api_key_env))
    };
    let key = match typed {
        Some(key) => KeySource::Typed(key),
        None if endpoint(&block) == endpoint(saved) => KeySource::Saved,
        None => KeySource::Withheld,
    };
    Ok(test_connection(&block, base_dir, key))
}

/// Tests the planner `block` describes: openai-chat makes one small chat completion (no
/// retry, at most [`TEST_TIMEOUT`]) with the key `key` says; a CLI must be found and
/// answer `--version`; the mock is built (its script read). `base_dir` is where a mock
/// script's path starts.
fn test_connection(block: &Value, base_dir: &Path, key: KeySource) -> ConnectionTest {
    let started = Instant::now();
    let (provider, model, outcome) = match meta(block) {
        Ok(meta) => {
            let outcome = match meta.kind {
                MetaKind::OpenaiChat => test_http(&meta, key),
                MetaKind::CodexCli | MetaKind::ClaudeCode => test_cli(&meta),
                MetaKind::Mock => crate::runner::provider::provider(&meta, base_dir, None)
                    .map(|p| format!("the offline planner ({})", p.name()))
                    .map_err(failure),
            };
            (meta.kind.name().to_string(), meta.model(None), outcome)
        }
        Err(e) => (
            String::new(),
            String::new(),
            Err(TestFailure {
                key: e.key().to_string(),
                message: e.to_string(),
            }),
        ),
    };
    let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    match outcome {
        Ok(detail) => ConnectionTest {
            ok: true,
            provider,
            model,
            latency_ms,
            detail,
            error: None,
        },
        Err(error) => ConnectionTest {
            ok: false,
            provider,
            model,
            latency_ms,
            detail: String::new(),
            error: Some(error),
        },
    }
}

/// One chat completion through the runner's HTTP provider, without retries.
fn test_http(meta: &MetaConfig, key: KeySource) -> Result<String, TestFailure> {
    let mut meta = meta.clone();
    meta.max_retries = 0;
    meta.timeout_sec = Some(meta.timeout().min(TEST_TIMEOUT).as_secs().max(1));
    let endpoint = format!("{}/chat/completions", meta.base_url.trim_end_matches('/'));
    let mut provider = match key {
        KeySource::Saved => HttpProvider::from_env(&meta, meta.model(None)).map_err(failure)?,
        KeySource::Typed(TypedKey(key)) => HttpProvider::new(&meta, meta.model(None), key),
        KeySource::Withheld => {
            return Err(TestFailure {
                key: "connection.key_required".into(),
                message: format!(
                    "the key of {} is sent only to the saved base URL; to test {endpoint} or another variable, type the key into the test (it is not saved)",
                    meta.api_key_env
                ),
            });
        }
    };
    let prompt = Prompt {
        protocol: Protocol::PlanPatch,
        system: "A connection test. Answer with the JSON object {\"ok\": true}.".into(),
        messages: vec![Message::user("ping")],
        request: json!({}),
        schema: json!({"type": "object"}),
    };
    match provider.complete(&prompt, &Cancel::new()) {
        Ok(_) => Ok(format!("{endpoint} answered")),
        // A 200 that is not a chat completion still reached a server that took the key.
        Err(ProviderError::BadResponse { message, .. }) => Err(TestFailure {
            key: "connection.bad_response".into(),
            message: format!("{endpoint} answered, but not with a chat completion: {message}"),
        }),
        Err(e) => Err(failure(e)),
    }
}

/// The CLI is found and its `--version` exits 0.
fn test_cli(meta: &MetaConfig) -> Result<String, TestFailure> {
    use crate::runner::process::{Ending, Spec, run};
    let default = if meta.kind == MetaKind::ClaudeCode {
        "claude"
    } else {
        "codex"
    };
    let program = meta
        .command
        .as_deref()
        .filter(|c| !c.trim().is_empty())
        .unwrap_or(default);
    let path = crate::environment::program_path();
    let path = path.as_deref().and_then(std::ffi::OsStr::to_str);
    let Some(found) = crate::runner::preflight::find_on_path(program, path) else {
        return Err(TestFailure {
            key: "connection.cli_missing".into(),
            message: format!(
                "{}: {}",
                meta.kind.name(),
                crate::runner::process::not_found(program, None)
            ),
        });
    };
    let mut spec = Spec::new(found.display().to_string(), ["--version"]);
    spec.timeout = Some(TEST_TIMEOUT);
    let output = run(&spec, &Cancel::new()).map_err(|e| TestFailure {
        key: "connection.cli_failed".into(),
        message: e.to_string(),
    })?;
    match output.ending {
        Ending::Exited(0) => {
            let version = output.stdout.text();
            let line = version.lines().map(str::trim).find(|l| !l.is_empty());
            Ok(format!(
                "{} {}",
                found.display(),
                line.unwrap_or("(no version)")
            ))
        }
        Ending::TimedOut => Err(TestFailure {
            key: "connection.timeout".into(),
            message: format!(
                "`{} --version` did not end within {} s",
                found.display(),
                TEST_TIMEOUT.as_secs()
            ),
        }),
        ending => Err(TestFailure {
            key: "connection.cli_failed".into(),
            message: format!(
                "`{} --version` exited {}: {}",
                found.display(),
                ending.code(),
                output.stderr.tail_text(300).trim()
            ),
        }),
    }
}

/// A provider's error as a test failure with a stable key.
fn failure(error: ProviderError) -> TestFailure {
    let key = match &error {
        ProviderError::AuthMissing { .. } => "connection.key_missing",
        ProviderError::Http {
            status: 401 | 403, ..
        } => "connection.auth_refused",
        ProviderError::Http { .. } => "connection.http_error",
        ProviderError::Transport { .. } => "connection.unreachable",
        ProviderError::Timeout { .. } => "connection.timeout",
        ProviderError::BadResponse { .. } => "connection.bad_response",
        ProviderError::Spawn { .. } => "connection.cli_missing",
        ProviderError::CliExit { .. } | ProviderError::CliFailed { .. } => "connection.cli_failed",
        ProviderError::Config { .. } | ProviderError::Script { .. } => "connection.config",
        ProviderError::Cancelled => "connection.cancelled",
    };
    TestFailure {
        key: key.to_string(),
        message: error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(provider: &str, model: &str) -> SettingsUpdate {
        SettingsUpdate {
            provider: provider.into(),
            model: model.into(),
            api_key_env: None,
            base_url: None,
            api_key: None,
        }
    }

    #[test]
    fn a_change_is_checked_whole_and_keeps_what_it_does_not_name() {
        let current = json!({"kind": "mock", "script": "replies.yml", "timeout_sec": 30});
        let block = apply(
            &current,
            &SettingsUpdate {
                api_key_env: Some("MY_API_KEY".into()),
                base_url: Some("http://127.0.0.1:9/v1".into()),
                ..update("openai-chat", " gpt-x ")
            },
        )
        .unwrap();
        assert_eq!(
            block,
            json!({"kind": "openai-chat", "model": "gpt-x", "api_key_env": "MY_API_KEY",
                   "base_url": "http://127.0.0.1:9/v1", "timeout_sec": 30})
        );
        let shown = LlmSettings::of(&block).unwrap();
        assert_eq!(shown.api_key_env.as_deref(), Some("MY_API_KEY"));
        // Same provider: its own keys stay.
        let again = apply(&block, &update("openai-chat", "gpt-y")).unwrap();
        assert_eq!(again["api_key_env"], "MY_API_KEY");
        assert_eq!(again["base_url"], "http://127.0.0.1:9/v1");
    }

    #[test]
    fn bad_changes_are_refused_with_their_key_and_never_echo_a_key() {
        let key = |u: SettingsUpdate| apply(&json!({}), &u).unwrap_err().key();
        assert_eq!(key(update("gemini", "m")), "settings.unknown_provider");
        assert_eq!(key(update("mock", "  ")), "settings.empty_model");
        assert_eq!(
            key(update("mock", &"m".repeat(201))),
            "settings.model_too_long"
        );
        // A model the planner's CLI would read as an option (issue 34), or that holds
        // whitespace or a control character.
        for bad in [
            "--dangerously-skip-permissions",
            "-m",
            "gpt 5",
            "gpt\u{1b}[2J",
        ] {
            assert_eq!(
                key(update("claude-code", bad)),
                "settings.bad_model",
                "{bad:?}"
            );
        }
        let pasted = SettingsUpdate {
            api_key_env: Some("sk-proj-abc123".into()),
            ..update("openai-chat", "m")
        };
        let e = apply(&json!({}), &pasted).unwrap_err();
        assert_eq!(e.key(), "settings.bad_key_variable");
        assert!(!e.to_string().contains("sk-proj"), "{e}");
        // A name must say it holds an API key: no other secret of the daemon's
        // environment can be named (issue 34, finding 2).
        for bad in [
            "",
            "1ABC",
            "A B",
            "A=B",
            "HOME",
            "PATH",
            "SECRET_THING",
            "_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "OPENAI_API_KEY2",
        ] {
            assert!(!valid_variable_name(bad), "{bad:?}");
        }
        assert!(valid_variable_name("OPENAI_API_KEY"));
        assert!(valid_variable_name("_MY_API_KEY"));
        let key_itself = SettingsUpdate {
            api_key: Some(TypedKey::new("sk-typed")),
            ..update("openai-chat", "m")
        };
        let e = apply(&json!({}), &key_itself).unwrap_err();
        assert_eq!(e.key(), "settings.key_not_stored");
        assert!(!format!("{key_itself:?} {e}").contains("sk-typed"));
        let url = SettingsUpdate {
            base_url: Some("ftp://x".into()),
            ..update("openai-chat", "m")
        };
        assert_eq!(key(url), "settings.bad_base_url");
        let misplaced = SettingsUpdate {
            api_key_env: Some("K".into()),
            ..update("mock", "m")
        };
        assert_eq!(key(misplaced), "settings.not_for_provider");
    }

    #[test]
    fn the_block_in_effect_is_planner_then_runner_meta() {
        let runner = json!({"meta": {"kind": "mock"}});
        assert_eq!(planner_block(None, &runner), json!({"kind": "mock"}));
        let planner = json!({"kind": "codex-cli"});
        assert_eq!(planner_block(Some(&planner), &runner), planner);
        assert_eq!(planner_block(None, &json!({})), json!({}));
        let shown = LlmSettings::of(&json!({})).unwrap();
        assert_eq!(
            (shown.provider.as_str(), shown.base_url.is_some()),
            ("openai-chat", true)
        );
    }

    #[test]
    fn a_missing_cli_and_the_mock_are_tested_without_a_network() {
        let missing = test_connection(
            &json!({"kind": "codex-cli", "command": "/nonexistent/codex"}),
            Path::new("."),
            KeySource::Saved,
        );
        assert!(!missing.ok);
        assert_eq!(missing.error.unwrap().key, "connection.cli_missing");
        let mock = test_connection(&json!({"kind": "mock"}), Path::new("."), KeySource::Saved);
        assert!(mock.ok, "{mock:?}");
        let sh = test_connection(
            &json!({"kind": "claude-code", "command": "/bin/sh"}),
            Path::new("."),
            KeySource::Saved,
        );
        // `sh --version` is refused by a POSIX sh or answered by bash: either way it ran.
        assert!(
            sh.ok || sh.error.as_ref().unwrap().key == "connection.cli_failed",
            "{sh:?}"
        );
    }

    #[test]
    fn a_candidate_gets_the_saved_key_only_for_the_saved_endpoint() {
        let saved = json!({"kind": "openai-chat", "model": "m", "base_url": "http://127.0.0.1:9/v1",
                           "api_key_env": "MV_SETTINGS_UNIT_API_KEY"});
        let changed = |base_url: Option<&str>, variable: Option<&str>, typed: Option<&str>| {
            let candidate = SettingsUpdate {
                base_url: base_url.map(str::to_string),
                api_key_env: variable.map(str::to_string),
                api_key: typed.map(TypedKey::new),
                ..update("openai-chat", "m2")
            };
            connection_test(&saved, Some(&candidate), Path::new(".")).unwrap()
        };
        let required = |t: &ConnectionTest| {
            t.error.as_ref().map(|e| e.key.as_str()) == Some("connection.key_required")
        };
        // Another URL, or another variable, and no key typed: nothing is sent.
        assert!(required(&changed(
            Some("http://127.0.0.1:1/v1"),
            None,
            None
        )));
        assert!(required(&changed(None, Some("OTHER_API_KEY"), None)));
        // The saved endpoint and variable (a new model only): the saved variable is read
        // (unset here, so the key is missing, not withheld).
        let same = changed(None, None, None);
        assert_eq!(same.error.unwrap().key, "connection.key_missing");
        // A typed key goes to the typed URL (nothing listens there: unreachable, not
        // refused for want of a key).
        let typed = changed(Some("http://127.0.0.1:1/v1"), None, Some("sk-typed"));
        assert_eq!(typed.error.unwrap().key, "connection.unreachable");
    }
}
