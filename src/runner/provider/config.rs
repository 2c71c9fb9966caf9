//! The `runner.meta` block of a task file: which planner provider to use and how. Unknown
//! keys and unknown kinds are errors when the file is read (the original turned any
//! unknown kind into the OpenAI provider silently).

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which planner provider runs the protocols.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MetaKind {
    /// An OpenAI-compatible `POST {base_url}/chat/completions` API.
    #[default]
    OpenaiChat,
    /// The Codex CLI: `codex exec --json`, on the host.
    CodexCli,
    /// The Claude Code CLI: `claude -p --output-format json`, on the host.
    ClaudeCode,
    /// An offline planner that decides on the structured request, optionally scripted.
    Mock,
}

impl MetaKind {
    pub fn name(self) -> &'static str {
        match self {
            MetaKind::OpenaiChat => "openai-chat",
            MetaKind::CodexCli => "codex-cli",
            MetaKind::ClaudeCode => "claude-code",
            MetaKind::Mock => "mock",
        }
    }
}

/// `runner.meta`: the planner LLM's provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetaConfig {
    /// `openai-chat` (default), `codex-cli`, `claude-code` or `mock`.
    #[serde(default)]
    pub kind: MetaKind,
    /// The model; default `gpt-5.2` for openai-chat and codex-cli, `sonnet` for
    /// claude-code. A command-line override wins over both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// openai-chat: the API's base URL (`/chat/completions` is appended).
    #[serde(default = "default_base_url")]
    pub base_url: String,
    /// openai-chat: the environment variable that holds the API key.
    #[serde(default = "default_api_key_env")]
    pub api_key_env: String,
    /// How long one attempt may take, in seconds; default 120 for openai-chat, 600 for the
    /// CLI planners (codex-cli, claude-code), which work as agents and take longer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 86400))]
    pub timeout_sec: Option<u64>,
    /// openai-chat: retries after a transport error, a timeout, HTTP 429 or 5xx.
    #[serde(default = "default_max_retries")]
    #[schemars(range(max = 20))]
    pub max_retries: u32,
    /// Added to the built-in system prompt (which states the reply schema and cannot be
    /// replaced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// codex-cli and claude-code: the CLI to run (default `codex` or `claude` on PATH).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// mock only: a YAML script of replies, relative to the task file's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
}

pub use crate::runner::model_name::{ModelNameError, check_model_name};

pub(crate) const DEFAULT_OPENAI_MODEL: &str = "gpt-5.2";
pub(crate) const DEFAULT_CLAUDE_MODEL: &str = "sonnet";

fn default_base_url() -> String {
    "https://api.openai.com/v1".to_owned()
}

fn default_api_key_env() -> String {
    "OPENAI_API_KEY".to_owned()
}

/// One openai-chat attempt's limit when the task does not say.
pub(crate) const DEFAULT_HTTP_TIMEOUT_SEC: u64 = 120;
/// A CLI planner's limit when the task does not say: the original's
/// `DefaultMetaAgentTimeout` (10 minutes), since a CLI agent reads the repository and
/// thinks before it answers; 120 s cut real Codex plans short.
pub(crate) const DEFAULT_CLI_TIMEOUT_SEC: u64 = 600;

fn default_max_retries() -> u32 {
    3
}

impl Default for MetaConfig {
    fn default() -> MetaConfig {
        MetaConfig {
            kind: MetaKind::default(),
            model: None,
            base_url: default_base_url(),
            api_key_env: default_api_key_env(),
            timeout_sec: None,
            max_retries: default_max_retries(),
            system_prompt: None,
            command: None,
            script: None,
        }
    }
}

impl MetaConfig {
    /// The model to use: the override, the configured one, or the kind's default.
    pub fn model(&self, model_override: Option<&str>) -> String {
        if let Some(model) = model_override.filter(|m| !m.trim().is_empty()) {
            return model.to_owned();
        }
        if let Some(model) = self.model.as_deref().filter(|m| !m.trim().is_empty()) {
            return model.to_owned();
        }
        match self.kind {
            MetaKind::ClaudeCode => DEFAULT_CLAUDE_MODEL.to_owned(),
            MetaKind::Mock => "mock".to_owned(),
            MetaKind::OpenaiChat | MetaKind::CodexCli => DEFAULT_OPENAI_MODEL.to_owned(),
        }
    }

    /// One attempt's limit: `timeout_sec`, else the kind's default.
    pub fn timeout(&self) -> Duration {
        let default = match self.kind {
            MetaKind::CodexCli | MetaKind::ClaudeCode => DEFAULT_CLI_TIMEOUT_SEC,
            MetaKind::OpenaiChat | MetaKind::Mock => DEFAULT_HTTP_TIMEOUT_SEC,
        };
        Duration::from_secs(self.timeout_sec.unwrap_or(default).max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<MetaConfig, serde_json::Error> {
        serde_json::from_str(json)
    }

    #[test]
    fn defaults_and_kinds() {
        let config = parse("{}").unwrap();
        assert_eq!(config, MetaConfig::default());
        assert_eq!(config.kind, MetaKind::OpenaiChat);
        assert_eq!(config.model(None), "gpt-5.2");
        assert_eq!(config.model(Some("o4")), "o4");
        let claude = parse(r#"{"kind": "claude-code"}"#).unwrap();
        assert_eq!(claude.model(None), "sonnet");
        assert_eq!(
            parse(r#"{"kind": "codex-cli", "model": "m"}"#)
                .unwrap()
                .model(None),
            "m"
        );
    }

    #[test]
    fn cli_planners_default_to_ten_minutes_http_to_two() {
        let secs = |json: &str| parse(json).unwrap().timeout().as_secs();
        assert_eq!(secs("{}"), 120);
        assert_eq!(secs(r#"{"kind": "mock"}"#), 120);
        assert_eq!(secs(r#"{"kind": "codex-cli"}"#), 600);
        assert_eq!(secs(r#"{"kind": "claude-code"}"#), 600);
        assert_eq!(secs(r#"{"kind": "codex-cli", "timeout_sec": 30}"#), 30);
        assert_eq!(secs(r#"{"timeout_sec": 5}"#), 5);
    }

    #[test]
    fn a_model_that_a_cli_would_read_as_an_option_or_split_is_refused() {
        for good in [
            "gpt-5.2",
            "sonnet",
            "openrouter/anthropic/claude-4:beta",
            "m@1.0_x",
        ] {
            assert_eq!(check_model_name(good), Ok(()), "{good}");
        }
        let e = check_model_name("--dangerously-skip-permissions").unwrap_err();
        assert_eq!(e.key(), "model.leading_dash");
        assert!(e.to_string().contains("starts with `-`"), "{e}");
        for bad in ["gpt 5", "gpt-5\n--yolo", " sonnet", "a\tb", "x\u{1b}[0m"] {
            let e = check_model_name(bad).unwrap_err();
            assert_eq!(e.key(), "model.whitespace_or_control", "{bad:?}");
        }
    }

    #[test]
    fn unknown_kinds_and_keys_are_refused() {
        let e = parse(r#"{"kind": "gemini-cli"}"#).unwrap_err();
        assert!(e.to_string().contains("unknown variant"), "{e}");
        let e = parse(r#"{"kind": "mock", "scrpit": "x"}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field"), "{e}");
    }
}
