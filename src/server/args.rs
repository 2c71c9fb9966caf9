//! The arguments of the session and control tools: their types are the tools' input
//! schemas (through schemars), so what clients see and what the server parses cannot
//! differ.

use serde::Deserialize;
use serde_json::{Map, Value};

/// No arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmptyArgs {}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartArgs {
    /// The user's request, verbatim (the contract checks quotes against it as `params.request`).
    pub query: String,
    /// IMPLEMENT, MODIFY, INVESTIGATE or QUESTION (default IMPLEMENT).
    #[serde(default)]
    pub intent: Option<String>,
    /// The flags as the user typed them, e.g. "--quick -ni".
    #[serde(default)]
    pub flags: Option<String>,
    /// `en` or `ja` (default: the contract's first locale).
    #[serde(default)]
    pub locale: Option<String>,
    /// Continue the unfinished session of this repository instead of starting one.
    #[serde(default)]
    pub resume: bool,
    /// Discard every saved session of this repository first.
    #[serde(default)]
    pub clean: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitArgs {
    /// The phase's payload, as the current `expected_payload` describes, plus
    /// `compaction_count`.
    pub data: Map<String, Value>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutcomeArgs {
    /// A failure or an abort ends the session and deletes its task branch.
    pub outcome: Outcome,
    /// What worked or what went wrong, for the outcome log.
    #[serde(default)]
    pub notes: Option<String>,
    /// On success: the symbols that answered the request (`PasswordResetForm.send_mail`).
    /// With the session's explored files they become an agreement of the Map, which
    /// semantic_search offers first to a similar request later.
    #[serde(default)]
    pub related_symbols: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Success,
    Failure,
    Aborted,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failure => "failure",
            Outcome::Aborted => "aborted",
        }
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteTargetArgs {
    /// The file you are about to create or edit (root-relative or absolute inside the root).
    pub file_path: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddExploredArgs {
    /// Files to add to the explored set: existing files must have appeared in a tool's
    /// output in this session; new files (to be created) must lie inside the repository.
    pub files: Vec<String>,
}
