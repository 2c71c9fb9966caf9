//! Parsing a flag string (`--fast -ni --gate=full`) against a contract's declared flags.

use serde_json::{Map, Value};

use crate::contract::Contract;
use crate::contract::raw::FlagType;

/// The value of every declared flag: defaults overridden by what was given.
pub type FlagSet = Map<String, Value>;

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
pub fn parse(contract: &Contract, text: &str) -> Result<FlagSet, String> {
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
            return Err(format!(
                "`{token}` is not a flag: flags start with `-` or `--`"
            ));
        };
        let Some(flag) = flag else {
            let known: Vec<String> = contract
                .flags
                .iter()
                .map(|f| format!("--{}", f.long))
                .collect();
            return Err(format!(
                "unknown flag `{name}`; known flags: {}",
                known.join(", ")
            ));
        };
        let parsed = match (flag.kind, value) {
            (FlagType::Bool, None) => Value::Bool(true),
            (FlagType::Bool, Some(v)) => match v {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => {
                    return Err(format!(
                        "`{name}` is a switch; it takes no value (got `{v}`)"
                    ));
                }
            },
            (FlagType::Enum, None) => {
                return Err(format!(
                    "`{name}` needs a value: {name}={}",
                    flag.values.join("|")
                ));
            }
            (FlagType::Enum, Some(v)) => {
                let full = flag.abbreviations.get(v).map_or(v, String::as_str);
                if !flag.values.iter().any(|x| x == full) {
                    return Err(format!(
                        "`{v}` is not a value of `{name}`; use one of: {}",
                        flag.values.join(", ")
                    ));
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
            return Err(format!(
                "`--{}` and `--{}` cannot be combined",
                fa.long, fb.long
            ));
        }
    }
    Ok(set)
}
