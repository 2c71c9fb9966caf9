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

pub use config::{MetaConfig, MetaKind};
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
