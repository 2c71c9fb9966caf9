//! A model name as a planner or worker is given it: checked before it can reach a command
//! line (a leaf, so the task file, the providers and the workers share it without tying
//! their modules to each other).

/// Why a model name cannot be given to a planner or worker. Every model reaches a CLI's
/// command line somewhere (the Codex and Claude planners, every worker kind), where a value
/// starting with `-` is read as an option: `model: --dangerously-skip-permissions` would
/// become `--model --dangerously-skip-permissions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelNameError {
    /// Starts with `-`.
    LeadingDash(String),
    /// Holds whitespace or a control character (a newline, an escape), which no model
    /// name has and which would split or garble the command line and the record.
    Unprintable(String),
}

impl ModelNameError {
    /// The refusal's stable key.
    pub fn key(&self) -> &'static str {
        match self {
            ModelNameError::LeadingDash(_) => "model.leading_dash",
            ModelNameError::Unprintable(_) => "model.whitespace_or_control",
        }
    }
}

impl std::fmt::Display for ModelNameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelNameError::LeadingDash(model) => write!(
                f,
                "the model {model:?} starts with `-`, which a CLI would read as an option, not a model"
            ),
            ModelNameError::Unprintable(model) => write!(
                f,
                "the model {model:?} holds whitespace or a control character, which no model name has"
            ),
        }
    }
}

impl std::error::Error for ModelNameError {}

/// Checks a model name that a task, a tooling candidate or the command line gives, before
/// it can reach a command line: it may not start with `-` or hold whitespace or control
/// characters. (An empty model means the default and is the caller's to judge.)
pub fn check_model_name(model: &str) -> Result<(), ModelNameError> {
    if model.starts_with('-') {
        return Err(ModelNameError::LeadingDash(model.to_owned()));
    }
    if model.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ModelNameError::Unprintable(model.to_owned()));
    }
    Ok(())
}
