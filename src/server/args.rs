//! The arguments of the session and control tools: their types are the tools' input
//! schemas (through schemars), so what clients see and what the server parses cannot
//! differ.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::reply::Reply;

/// No arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EmptyArgs {}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StartArgs {
    // The contract checks quotes against it as `params.request`.
    /// The user's request, verbatim.
    pub query: String,
    /// IMPLEMENT (default), MODIFY, INVESTIGATE or QUESTION.
    #[serde(default)]
    pub intent: Option<String>,
    /// The flags as typed (`--quick -ni`).
    #[serde(default)]
    pub flags: Option<String>,
    /// `en` or `ja` (default: the contract's first).
    #[serde(default)]
    pub locale: Option<String>,
    /// Continue the unfinished session.
    #[serde(default)]
    pub resume: bool,
    /// Discard the saved sessions first.
    #[serde(default)]
    pub clean: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SubmitArgs {
    /// The payload `expected_payload` describes, with `compaction_count`.
    pub data: Map<String, Value>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct OutcomeArgs {
    /// `success`, `failure` or `aborted`.
    pub outcome: ClaimedOutcome,
    /// What worked or went wrong.
    #[serde(default)]
    pub notes: Option<String>,
    // Added to the agreement the Map records from the session's own evidence (which a
    // session ending in success records by itself); semantic_search answers a similar
    // request from it later.
    /// On success: the symbols that answered the request (`Form.send_mail`), remembered for similar requests.
    #[serde(default)]
    pub related_symbols: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ClaimedOutcome {
    Success,
    Failure,
    Aborted,
}

impl ClaimedOutcome {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ClaimedOutcome::Success => "success",
            ClaimedOutcome::Failure => "failure",
            ClaimedOutcome::Aborted => "aborted",
        }
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WriteTargetArgs {
    /// The file about to be created or edited.
    pub file_path: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AddExploredArgs {
    /// Existing files shown by a code-intel answer this session, or new files inside the repository.
    pub files: Vec<String>,
}

/// The most files one `add_explored_files` call may name.
pub(crate) const MAX_EXPLORED_PER_CALL: usize = 256;

// Input limits. Every call's arguments are measured before any work is done, so a
// megabyte `query` or pattern is refused at once rather than compiled into a matcher
// (a regex takes some 400 bytes of memory per byte of pattern) or held in a session.
// The limits are far beyond what an agent writes; a refusal names the field and limit.

/// The most bytes a call's arguments may take as JSON: no more could be checkpointed.
pub(crate) const MAX_ARGUMENTS_BYTES: usize = super::checkpoint::MAX_CHECKPOINT_BYTES;
/// The longest string any argument may hold, unless its tool declares a limit of its
/// own ([`FieldLimit`]).
pub(crate) const MAX_STRING_BYTES: usize = 16 * 1024;
/// The most items of any list argument.
pub(crate) const MAX_LIST_ITEMS: usize = 1000;
/// The longest `query` question and `search_text` pattern.
pub(crate) const MAX_QUERY_BYTES: usize = 4 * 1024;
/// The most bytes of all the patterns (or targets) of one text search: each byte
/// costs hundreds in the compiled matcher.
pub(crate) const MAX_PATTERNS_BYTES: usize = 16 * 1024;

/// The limits of one field of a tool, beyond the general ones (each tool's declaration
/// lists them: `server::tools::ToolSpec::limits`).
#[derive(Debug, Clone, Copy)]
pub struct FieldLimit {
    pub field: &'static str,
    /// The longest string in it; `None` leaves it to the tool's own check (the request
    /// of `start_session`) or to the total of the call (`submit_phase`'s payload, whose
    /// texts the contract bounds).
    pub string: Option<usize>,
    /// The most bytes the whole field may take.
    pub total: Option<usize>,
}

/// Refuses arguments of `tool` over the input limits (`arguments.too_large`): the
/// general ones, or those of its `fields`. The refusal names the field and the limit.
/// Stops counting at the first excess, so a huge argument costs one scan of its prefix.
pub(crate) fn bounded(
    tool: &str,
    fields: &[FieldLimit],
    args: &Map<String, Value>,
) -> Result<(), Reply> {
    let mut total = 2;
    for (field, value) in args {
        let limits = fields.iter().find(|l| l.field == field);
        let strings = limits
            .map_or(Some(MAX_STRING_BYTES), |l| l.string)
            .unwrap_or(MAX_ARGUMENTS_BYTES);
        let field_total = limits.and_then(|l| l.total);
        total += field.len() + 4;
        let before = total;
        let measured = measure(value, strings, &mut total).and_then(|()| match field_total {
            Some(limit) if total - before > limit => Err(Excess::Field(limit)),
            _ => Ok(()),
        });
        measured.map_err(|excess| {
            let (what, limit) = match excess {
                Excess::String(len) => (format!("a string of {len} bytes"), strings),
                Excess::List(len) => (format!("a list of {len} items"), MAX_LIST_ITEMS),
                Excess::Field(limit) => (format!("more than {limit} bytes"), limit),
                Excess::Total => (
                    format!("more than {MAX_ARGUMENTS_BYTES} bytes of arguments"),
                    MAX_ARGUMENTS_BYTES,
                ),
            };
            Reply::error(
                "arguments.too_large",
                format!(
                    "`{field}` of `{tool}` holds {what}; the limit is {limit}: shorten it, or split the call"
                ),
            )
            .with("field", field.as_str())
            .with("limit", limit)
        })?;
    }
    Ok(())
}

enum Excess {
    String(usize),
    List(usize),
    Field(usize),
    Total,
}

fn measure(value: &Value, strings: usize, total: &mut usize) -> Result<(), Excess> {
    match value {
        Value::String(s) => {
            if s.len() > strings {
                return Err(Excess::String(s.len()));
            }
            *total += s.len() + 2;
        }
        Value::Array(items) => {
            if items.len() > MAX_LIST_ITEMS {
                return Err(Excess::List(items.len()));
            }
            for item in items {
                measure(item, strings, total)?;
                *total += 1;
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                if key.len() > strings {
                    return Err(Excess::String(key.len()));
                }
                *total += key.len() + 4;
                measure(item, strings, total)?;
            }
        }
        Value::Number(_) | Value::Bool(_) | Value::Null => *total += 8,
    }
    if *total > MAX_ARGUMENTS_BYTES {
        return Err(Excess::Total);
    }
    Ok(())
}
