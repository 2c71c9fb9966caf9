//! Planner providers: where a rendered prompt goes and its raw reply comes from. An
//! OpenAI-compatible HTTP API ([`http`]), the Codex and Claude CLIs ([`cli`]), or the
//! offline [`mock`] (optionally [`script`]ed). [`provider`] builds one from the task's
//! `runner.meta` block ([`config::MetaConfig`]).

pub(crate) mod cli;
pub(crate) mod config;
pub(crate) mod http;
pub(crate) mod mock;
pub(crate) mod prompt;
pub(crate) mod script;

use std::path::Path;

pub use config::{MetaConfig, MetaKind, ModelNameError, check_model_name};
pub use prompt::{Message, Prompt, Provider, ProviderError, Role};

/// The provider `config` describes. `base_dir` is the task file's directory (a mock
/// script's path is relative to it); `model_override` (a command-line flag) beats the
/// configured model. A missing API key is reported here, before any request is made.
pub fn provider(
    config: &MetaConfig,
    base_dir: &Path,
    model_override: Option<&str>,
) -> Result<Box<dyn Provider>, ProviderError> {
    if config.script.is_some() && config.kind != MetaKind::Mock {
        return Err(ProviderError::Config {
            message: format!(
                "`script` is for kind: mock only; this planner is {}",
                config.kind.name()
            ),
        });
    }
    if config.timeout_sec == Some(0) {
        return Err(ProviderError::Config {
            message: "timeout_sec must be at least 1".to_owned(),
        });
    }
    let model = config.model(model_override);
    check_model_name(&model).map_err(|e| ProviderError::Config {
        message: e.to_string(),
    })?;
    Ok(match config.kind {
        MetaKind::OpenaiChat => Box::new(http::HttpProvider::from_env(config, model)?),
        MetaKind::CodexCli => Box::new(cli::CliProvider::new(
            cli::Flavour::Codex,
            config.command.as_deref(),
            model,
            config.timeout(),
        )),
        MetaKind::ClaudeCode => Box::new(cli::CliProvider::new(
            cli::Flavour::Claude,
            config.command.as_deref(),
            model,
            config.timeout(),
        )),
        MetaKind::Mock => match &config.script {
            Some(path) => Box::new(mock::MockProvider::from_file(&base_dir.join(path))?),
            None => Box::new(mock::MockProvider::new()),
        },
    })
}

/// The `runner.meta` of one `runner.tooling` planner candidate: the task's `runner.meta`
/// with the candidate's tool, model, `cliPath`, `systemPrompt` and `toolSpecific` keys
/// (any other `runner.meta` key, e.g. `base_url`) laid over it. An unknown
/// `toolSpecific` key is an error, like an unknown key in `runner.meta`.
pub fn candidate_config(
    base: &MetaConfig,
    candidate: &crate::runner::tooling::Candidate,
) -> Result<MetaConfig, ProviderError> {
    let label = match &candidate.model {
        Some(model) => format!("{} {model}", candidate.tool),
        None => candidate.tool.clone(),
    };
    let invalid = |e: serde_json::Error| ProviderError::Config {
        message: format!("runner.tooling candidate `{label}`: {e}"),
    };
    let mut value = serde_json::to_value(base).map_err(invalid)?;
    let Some(object) = value.as_object_mut() else {
        return Err(ProviderError::Config {
            message: format!("runner.tooling candidate `{label}`: runner.meta is not an object"),
        });
    };
    // The base's model and command belong to its own kind, not to this candidate's.
    object.remove("model");
    object.remove("command");
    object.remove("script");
    for (key, v) in &candidate.tool_specific {
        if matches!(key.as_str(), "kind" | "model" | "command" | "system_prompt") {
            return Err(ProviderError::Config {
                message: format!(
                    "runner.tooling candidate `{label}`: set `{key}` with the candidate's own key (tool, model, cliPath, systemPrompt), not in toolSpecific"
                ),
            });
        }
        object.insert(key.clone(), v.clone());
    }
    object.insert(
        "kind".into(),
        serde_json::Value::String(candidate.tool.clone()),
    );
    if let Some(model) = &candidate.model {
        object.insert("model".into(), serde_json::Value::String(model.clone()));
    }
    if let Some(path) = &candidate.cli_path {
        object.insert("command".into(), serde_json::Value::String(path.clone()));
    }
    if let Some(prompt) = &candidate.system_prompt {
        object.insert(
            "system_prompt".into(),
            serde_json::Value::String(prompt.clone()),
        );
    }
    serde_json::from_value(value).map_err(invalid)
}

/// The provider of one `runner.tooling` candidate (see [`candidate_config`]). With
/// `rate_limit_fallback` an HTTP provider hands a 429 back at once, for the caller to
/// try another candidate.
pub fn candidate_provider(
    config: &MetaConfig,
    base_dir: &Path,
    model_override: Option<&str>,
    rate_limit_fallback: bool,
) -> Result<Box<dyn Provider>, ProviderError> {
    if config.kind == MetaKind::OpenaiChat
        && rate_limit_fallback
        && config.timeout_sec != Some(0)
        && config.script.is_none()
    {
        let model = config.model(model_override);
        check_model_name(&model).map_err(|e| ProviderError::Config {
            message: e.to_string(),
        })?;
        return Ok(Box::new(
            http::HttpProvider::from_env(config, model)?.with_rate_limit_fallback(),
        ));
    }
    provider(config, base_dir, model_override)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::tooling::Candidate;

    fn candidate(json: serde_json::Value) -> Candidate {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn a_candidate_lays_its_keys_over_runner_meta() {
        let base = MetaConfig {
            kind: MetaKind::ClaudeCode,
            model: Some("opus".into()),
            command: Some("/opt/claude".into()),
            timeout_sec: Some(30),
            ..MetaConfig::default()
        };
        let config = candidate_config(
            &base,
            &candidate(serde_json::json!({"tool": "openai-chat", "model": "gpt-x",
                "systemPrompt": "be brief",
                "toolSpecific": {"base_url": "http://127.0.0.1:9/v1", "max_retries": 0}})),
        )
        .unwrap();
        assert_eq!(config.kind, MetaKind::OpenaiChat);
        assert_eq!(config.model(None), "gpt-x");
        assert_eq!(config.base_url, "http://127.0.0.1:9/v1");
        assert_eq!((config.timeout_sec, config.max_retries), (Some(30), 0));
        assert_eq!(
            config.command, None,
            "the base's CLI is not this candidate's"
        );
        assert_eq!(config.system_prompt.as_deref(), Some("be brief"));
        let codex = candidate_config(
            &base,
            &candidate(serde_json::json!({"tool": "codex-cli", "cliPath": "/bin/codex"})),
        )
        .unwrap();
        assert_eq!(
            (codex.model(None).as_str(), codex.command.as_deref()),
            ("gpt-5.2", Some("/bin/codex"))
        );
        let e = candidate_config(
            &base,
            &candidate(serde_json::json!({"tool": "mock", "toolSpecific": {"baseurl": "x"}})),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("candidate `mock`: unknown field `baseurl`"),
            "{e}"
        );
        let e = candidate_config(
            &base,
            &candidate(serde_json::json!({"tool": "mock", "toolSpecific": {"model": "x"}})),
        )
        .unwrap_err();
        assert!(e.to_string().contains("not in toolSpecific"), "{e}");
    }
}
