//! Parsing a flag string (`--fast -ni --gate=full`) against a contract's declared flags.

use serde_json::{Map, Value};

use std::fmt;

use super::Contract;
use super::raw::FlagType;

/// The value of every declared flag: defaults overridden by what was given.
pub type FlagSet = Map<String, Value>;

/// Why a flag string was refused. `Display` gives the message for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlagError {
    /// A token that does not start with `-`.
    NotAFlag { token: String },
    /// A flag the contract does not declare; `known` lists the long forms.
    Unknown { name: String, known: Vec<String> },
    /// A switch given a value other than `true` or `false`.
    SwitchWithValue { name: String, value: String },
    /// An enum flag given without `=VALUE`.
    MissingValue { name: String, values: Vec<String> },
    /// An enum flag given a value it does not have.
    BadValue {
        name: String,
        value: String,
        values: Vec<String>,
    },
    /// Two switches the contract declares as conflicting.
    Conflict { first: String, second: String },
}

impl FlagError {
    /// A stable key for hosts that map errors to their own messages.
    pub fn key(&self) -> &'static str {
        match self {
            FlagError::NotAFlag { .. } => "flags.not_a_flag",
            FlagError::Unknown { .. } => "flags.unknown",
            FlagError::SwitchWithValue { .. } => "flags.switch_with_value",
            FlagError::MissingValue { .. } => "flags.missing_value",
            FlagError::BadValue { .. } => "flags.bad_value",
            FlagError::Conflict { .. } => "flags.conflict",
        }
    }
}

impl fmt::Display for FlagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlagError::NotAFlag { token } => {
                write!(f, "`{token}` is not a flag: flags start with `-` or `--`")
            }
            FlagError::Unknown { name, known } => {
                write!(
                    f,
                    "unknown flag `{name}`; known flags: {}",
                    known.join(", ")
                )
            }
            FlagError::SwitchWithValue { name, value } => {
                write!(f, "`{name}` is a switch; it takes no value (got `{value}`)")
            }
            FlagError::MissingValue { name, values } => {
                write!(f, "`{name}` needs a value: {name}={}", values.join("|"))
            }
            FlagError::BadValue {
                name,
                value,
                values,
            } => write!(
                f,
                "`{value}` is not a value of `{name}`; use one of: {}",
                values.join(", ")
            ),
            FlagError::Conflict { first, second } => {
                write!(f, "`--{first}` and `--{second}` cannot be combined")
            }
        }
    }
}

impl std::error::Error for FlagError {}

/// Every declared flag at its default.
pub fn defaults(contract: &Contract) -> FlagSet {
    contract
        .flags
        .iter()
        .map(|f| (f.name.clone(), f.default.clone()))
        .collect()
}

/// Parses whitespace-separated flags. Refuses unknown flags, bad enum values and
/// combinations the contract declares as conflicting.
pub fn parse(contract: &Contract, text: &str) -> Result<FlagSet, FlagError> {
    let mut set = defaults(contract);
    let mut given: Vec<&str> = Vec::new();
    for token in text.split_whitespace() {
        let (name, value) = match token.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (token, None),
        };
        let flag = if let Some(long) = name.strip_prefix("--") {
            contract
                .flags
                .iter()
                .find(|f| f.long == long || f.aliases.iter().any(|a| a == long))
        } else if let Some(short) = name.strip_prefix('-') {
            contract
                .flags
                .iter()
                .find(|f| f.short.as_deref() == Some(short))
        } else {
            return Err(FlagError::NotAFlag {
                token: token.to_string(),
            });
        };
        let Some(flag) = flag else {
            let known: Vec<String> = contract
                .flags
                .iter()
                .map(|f| format!("--{}", f.long))
                .collect();
            return Err(FlagError::Unknown {
                name: name.to_string(),
                known,
            });
        };
        let parsed = match (flag.kind, value) {
            (FlagType::Bool, None) => Value::Bool(true),
            (FlagType::Bool, Some(v)) => match v {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => {
                    return Err(FlagError::SwitchWithValue {
                        name: name.to_string(),
                        value: v.to_string(),
                    });
                }
            },
            (FlagType::Enum, None) => {
                return Err(FlagError::MissingValue {
                    name: name.to_string(),
                    values: flag.values.clone(),
                });
            }
            (FlagType::Enum, Some(v)) => {
                let full = flag.abbreviations.get(v).map_or(v, String::as_str);
                if !flag.values.iter().any(|x| x == full) {
                    return Err(FlagError::BadValue {
                        name: name.to_string(),
                        value: v.to_string(),
                        values: flag.values.clone(),
                    });
                }
                Value::String(full.to_string())
            }
        };
        given.push(flag.name.as_str());
        set.insert(flag.name.clone(), parsed);
    }
    for &(a, b) in &contract.conflicts {
        let (fa, fb) = (&contract.flags[a], &contract.flags[b]);
        let on = |name: &str| set.get(name).is_some_and(|v| v == &Value::Bool(true));
        if on(&fa.name) && on(&fb.name) {
            return Err(FlagError::Conflict {
                first: fa.long.clone(),
                second: fb.long.clone(),
            });
        }
    }
    Ok(set)
}
