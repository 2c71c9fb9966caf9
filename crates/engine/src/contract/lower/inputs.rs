//! What a session is started with: flags and their conflicts, the intent, params, and the
//! flag sets of the matrix columns.
//!
//! Flag strings themselves are parsed by `contract::flags` against the lowered [`Flag`]s;
//! matrix columns are checked against the flags by `lint`, which can parse them.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::lowerer::Lowerer;
use crate::contract::model::{Flag, MatrixColumn};
use crate::contract::raw::{FlagType, RawContract, ValueType};

impl Lowerer<'_> {
    pub(super) fn flags(&mut self, raw: &RawContract) -> Vec<Flag> {
        let mut flags = Vec::new();
        for (name, f) in &raw.flags {
            let p = format!("/flags/{name}");
            let default = match (f.kind, &f.default) {
                (FlagType::Bool, None) => Value::Bool(false),
                (FlagType::Bool, Some(Value::Bool(b))) => Value::Bool(*b),
                (FlagType::Enum, Some(Value::String(v))) if f.values.contains(v) => {
                    Value::String(v.clone())
                }
                (FlagType::Enum, None) if !f.values.is_empty() => {
                    Value::String(f.values[0].clone())
                }
                _ => {
                    self.report(
                        "invalid-flag-reference",
                        format!("flag `{name}` has an invalid default"),
                        &format!("{p}/default"),
                        Some(
                            "a bool flag defaults to true or false; an enum flag to one of its values"
                                .into(),
                        ),
                    );
                    Value::Null
                }
            };
            if f.kind == FlagType::Enum && f.values.is_empty() {
                self.report_key(
                    "invalid-flag-reference",
                    format!("enum flag `{name}` has no values"),
                    &p,
                    None,
                );
            }
            for (abbr, full) in &f.abbreviations {
                if !f.values.contains(full) {
                    self.report(
                        "invalid-flag-reference",
                        format!(
                            "abbreviation `{abbr}` names `{full}`, which is not a value of `{name}`"
                        ),
                        &format!("{p}/abbreviations/{abbr}"),
                        None,
                    );
                }
            }
            let help = self.localized(
                &f.help,
                &format!("{p}/help"),
                &format!("the help of flag `{name}`"),
            );
            flags.push(Flag {
                name: name.clone(),
                kind: f.kind,
                long: f.long.clone().unwrap_or_else(|| name.replace('_', "-")),
                short: f.short.clone(),
                aliases: f.aliases.clone(),
                values: f.values.clone(),
                abbreviations: f.abbreviations.clone(),
                default,
                help,
            });
        }
        flags
    }

    /// Pairs of flags that may not be set together, as indices into `flags`.
    pub(super) fn conflicts(&mut self, raw: &RawContract, flags: &[Flag]) -> Vec<(usize, usize)> {
        let mut conflicts = Vec::new();
        let index: HashMap<&str, usize> = flags
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.as_str(), i))
            .collect();
        for (i, [a, b]) in raw.conflicts.iter().enumerate() {
            let find = |n: &str| index.get(n).copied();
            match (find(a), find(b)) {
                (Some(x), Some(y)) => conflicts.push((x, y)),
                _ => self.report(
                    "invalid-flag-reference",
                    format!("conflict `{a}` / `{b}` names an undeclared flag"),
                    &format!("/conflicts/{i}"),
                    None,
                ),
            }
        }
        conflicts
    }

    /// The intents and the default one. A contract that declares none has one intent,
    /// `DEFAULT`, so `intent` is always a known string in guards.
    pub(super) fn intents(&mut self, raw: &RawContract) -> (Vec<String>, String) {
        match &raw.intents {
            Some(i) => {
                if !i.values.contains(&i.default) {
                    self.report(
                        "schema-violation",
                        format!("default intent `{}` is not one of the intents", i.default),
                        "/intents/default",
                        None,
                    );
                }
                (i.values.clone(), i.default.clone())
            }
            None => (vec!["DEFAULT".to_string()], "DEFAULT".to_string()),
        }
    }

    /// Each param's type and default value.
    pub(super) fn params(&mut self, raw: &RawContract) -> BTreeMap<String, (ValueType, Value)> {
        for (name, param) in &raw.params {
            if !param.kind.accepts(&param.default) {
                self.report(
                    "schema-violation",
                    format!("the default of param `{name}` is not a {:?}", param.kind),
                    &format!("/params/{name}/default"),
                    None,
                );
            }
        }
        raw.params
            .iter()
            .map(|(n, p)| (n.clone(), (p.kind, p.default.clone())))
            .collect()
    }

    pub(super) fn matrix_columns(&self, raw: &RawContract) -> Vec<MatrixColumn> {
        raw.matrix
            .as_ref()
            .map(|m| {
                m.columns
                    .iter()
                    .enumerate()
                    .map(|(i, c)| MatrixColumn {
                        key: c.key.clone(),
                        label: c.label.clone(),
                        flags: c.flags.clone(),
                        intent: c.intent.clone(),
                        span: self.value_span(&format!("/matrix/columns/{i}")),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::test_support::{HEADER, check, found, lower_yaml};

    /// A contract with one terminal state, whose `rest` (flags, intents, params) starts
    /// at line 5.
    fn with(rest: &str) -> String {
        format!("{HEADER}{rest}initial: A\nstates: {{A: {{kind: terminal}}}}\n")
    }

    #[test]
    fn flag_defaults_long_names_and_help_are_resolved() {
        let text = with(concat!(
            "flags:\n",
            "  dry_run: {type: bool, help: \"Do nothing.\"}\n",
            "  mode: {type: enum, values: [fast, slow], help: {en: \"How.\"}}\n",
        ));
        let (contract, diagnostics) = lower_yaml(&text);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let contract = contract.unwrap();
        let dry_run = contract.flag("dry_run").unwrap();
        assert_eq!(dry_run.default, json!(false));
        assert_eq!(dry_run.long, "dry-run");
        assert_eq!(dry_run.help.texts["en"], "Do nothing.");
        // An enum flag without a default starts at its first value.
        assert_eq!(contract.flag("mode").unwrap().default, json!("fast"));
    }

    #[test]
    fn a_flag_default_not_among_its_values_is_reported_at_the_default() {
        let text = with(concat!(
            "flags:\n",
            "  mode: {type: enum, values: [fast, slow], default: quick, help: h}\n",
            "  loud: {type: bool, default: \"yes\", help: h}\n",
        ));
        let (contract, diagnostics) = lower_yaml(&text);
        // Flags are lowered in name order.
        assert_eq!(
            found(&diagnostics),
            ["7:31 invalid-flag-reference", "6:53 invalid-flag-reference"]
        );
        // The flag is still lowered, with no default, so later checks can use it.
        assert_eq!(contract.unwrap().flag("mode").unwrap().default, json!(null));
    }

    #[test]
    fn an_enum_flag_without_values_is_reported_at_its_name() {
        let text = with("flags:\n  mode: {type: enum, help: h}\n");
        // Its default is invalid too, as there is no value to fall back to; with no
        // `default:` key, that is reported at the flag's mapping.
        assert_eq!(
            check(&text),
            ["6:9 invalid-flag-reference", "6:3 invalid-flag-reference"]
        );
    }

    #[test]
    fn abbreviations_and_conflicts_must_name_declared_things() {
        let text = with(concat!(
            "flags:\n",
            "  mode: {type: enum, values: [fast], abbreviations: {f: fast, q: quick}, help: h}\n",
            "  v: {type: bool, help: h}\n",
            "conflicts: [[mode, v], [mode, verbose]]\n",
        ));
        let (contract, diagnostics) = lower_yaml(&text);
        assert_eq!(
            found(&diagnostics),
            ["6:66 invalid-flag-reference", "8:24 invalid-flag-reference"]
        );
        assert_eq!(contract.unwrap().conflicts, [(0, 1)]);
    }

    #[test]
    fn a_default_intent_must_be_an_intent_and_param_defaults_must_fit_their_type() {
        let text = with(concat!(
            "intents: {values: [build, fix], default: review}\n",
            "params:\n",
            "  retries: {type: int, default: 1.5}\n",
            "  name: {type: string, default: x}\n",
        ));
        let (contract, diagnostics) = lower_yaml(&text);
        assert_eq!(
            found(&diagnostics),
            ["5:42 schema-violation", "7:33 schema-violation"]
        );
        let contract = contract.unwrap();
        assert_eq!(contract.default_intent, "review");
        assert_eq!(contract.params["name"].1, json!("x"));
    }
}
