//! Loading contracts: YAML syntax, then the contract schema, then meaning.
//!
//! [`load`] runs the three stages in order and returns the resolved [`Contract`] with
//! every diagnostic found. The built-in default contract is compiled into the binary;
//! a project's `.code-intel/phase_contract.yml` either overlays it (`extends: builtin`)
//! or replaces it.
//!
//! ## The parts
//!
//! - `contract::raw`: serde and schemars types that mirror the YAML exactly (`RawContract`,
//!   `RawState`, ...). `schemas/contract.schema.json` is generated from them
//!   (`contract::generated_schema`, printed by `code-intel schema`).
//! - `contract::lower`: raw → model. Resolves state, counter, action, tool, var and param
//!   names; parses and type-checks every guard against a `TypeEnv` built from flags,
//!   intents, params, vars, counters, facts, payload and result schemas; compiles payload
//!   validators and instruction templates. It collects every problem and returns
//!   `(Option<Contract>, Vec<Diagnostic>)`.
//! - `contract::model`: the resolved `Contract`. States and counters are indices
//!   (`StateId`, `CounterId`), guards are parsed `Guard`s, payload schemas are compiled
//!   `jsonschema::Validator`s, templates live in a `minijinja::Environment`.
//! - `contract::registry`: the shape of what a host implements (`Registry`: actions with
//!   argument and result schemas and failure outcomes, tools, ungated tools, facts, host
//!   message keys) and the engine's built-in task actions, `BuiltinAction`. Lowering
//!   resolves each action call to `Performer::Engine(BuiltinAction)` (applied inside the
//!   step) or `Performer::Host` (emitted as an `Effect`); the step never dispatches on a
//!   name. The hosts' own registries live with the hosts (`server::registry`,
//!   `runner::registry`).
//! - `contract::flags`: parses a flag string (`--fast -ni --gate=full`) against the
//!   declared flags, with a typed `FlagError`.
//! - `contract::roles`: the engine's message roles and their placeholders.
//! - `contract::template_roots`: the names an instruction template is given
//!   (`TemplateRoot::ALL`); `machine::response` builds the template context from exactly
//!   this list and lint's `unknown-template-name` checks templates against it, so the two
//!   cannot disagree. Also the size of one template tag that compiles safely.
//! - `contract::expected`: the compact `expected_payload` description derived from a
//!   payload schema.
//! - `contract/mod.rs`: `load` and `load_layered` run YAML, overlay merge, schema and
//!   lowering in order; top-level `x-` keys are dropped before the schema stage. Loading
//!   never runs whole-flow lint: `lint` depends on `contract`, not the reverse.

pub(crate) mod expected;
pub mod flags;
pub(crate) mod lower;
pub mod model;
pub(crate) mod overlay;
pub(crate) mod raw;
pub mod registry;
pub(crate) mod roles;
pub(crate) mod template_roots;

// The surface: what the binaries, benches and integration tests use from this module.
pub use model::CounterScope;
pub use model::LimitValue;
pub use model::Outcome;
pub use model::StateKind;
pub use registry::BuiltinAction;

use std::sync::OnceLock;

use serde_json::Value;

use crate::diagnostic::{self, Diagnostic};
use crate::source::{FileId, Sources};
use crate::yaml::{self, Node, NodeKind};
pub use model::Contract;
pub use registry::Registry;

/// The default 19-step flow, compiled in.
pub const BUILTIN_CONTRACT: &str = include_str!("../../../../contracts/phase_contract.yml");
/// The name diagnostics use for the built-in contract.
pub const BUILTIN_NAME: &str = "<built-in>/contracts/phase_contract.yml";
/// A project's own contract (an overlay of the built-in one, or a complete flow),
/// relative to the repository root.
pub const PROJECT_CONTRACT: &str = ".code-intel/phase_contract.yml";
/// The JSON Schema of contract files, generated from `contract::raw`.
pub(crate) const CONTRACT_SCHEMA: &str = include_str!("../../../../schemas/contract.schema.json");

/// The result of loading: a contract when it could be built, and every finding.
#[derive(Debug)]
pub struct Loaded {
    pub contract: Option<Contract>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Loaded {
    fn failed(d: Diagnostic) -> Loaded {
        Loaded {
            contract: None,
            diagnostics: vec![d],
        }
    }

    /// The contract if it has no error-level finding.
    pub fn ok(self) -> Result<Contract, Vec<Diagnostic>> {
        match self.contract {
            Some(c) if !diagnostic::has_errors(&self.diagnostics) => Ok(c),
            _ => Err(self.diagnostics),
        }
    }
}

/// Loads the contract in `file`, resolved against the registry of the host it names
/// (`host:`), which must be one of `hosts`: a server passes its own registry, `lint`
/// passes every host it knows.
///
/// A file with `extends: builtin` is an overlay: it is merged key by key onto the
/// built-in contract (lists are replaced whole), which is added to `sources` so findings
/// about it point into it. Any other file is a complete contract on its own.
///
/// This runs YAML, schema and lowering (name resolution, guard types, templates). The
/// whole-flow rules are `lint::check`, run above this by whoever wants them.
pub fn load(sources: &mut Sources, file: FileId, hosts: &[Registry]) -> Loaded {
    let text = sources.get(file).map_or("", |f| f.text.as_str());
    let (mut node, mut diagnostics) = match yaml::parse(file, text) {
        Ok(parsed) => parsed,
        Err(d) => return Loaded::failed(d),
    };
    let extends = node
        .get("extends")
        .map(|n| (n.as_str().map(str::to_string), n.span));
    let mut node = match extends {
        None => node,
        Some((Some(name), _)) if name == "builtin" => {
            if let NodeKind::Map(entries) = &mut node.kind {
                entries.retain(|(k, _)| k.name != "extends");
            }
            let base_id = sources.add(BUILTIN_NAME, BUILTIN_CONTRACT);
            let (mut base, _) = match yaml::parse(base_id, BUILTIN_CONTRACT) {
                Ok(b) => b,
                Err(d) => return Loaded::failed(d),
            };
            diagnostics.extend(overlay::near_misses(&base, &node));
            yaml::merge(&mut base, node);
            base
        }
        Some((name, span)) => {
            let found = match name {
                Some(name) => format!("`{name}`"),
                None => "something that is not a name (a list or a mapping)".to_string(),
            };
            let d = Diagnostic::new("schema-violation", format!("`extends` takes the name `builtin`; found {found}"), Some(span))
                .with_help("use `extends: builtin` to overlay the built-in contract, or remove `extends` for a complete custom flow");
            return Loaded::failed(d);
        }
    };
    strip_extensions(&mut node);
    let mut loaded = load_node(&node, hosts);
    diagnostics.append(&mut loaded.diagnostics);
    diagnostic::sort(&mut diagnostics);
    Loaded {
        contract: loaded.contract,
        diagnostics,
    }
}

/// Loads the contract a session runs: the project's file when there is one (an overlay
/// of the built-in contract or a complete contract, see [`load`]), else the built-in one.
pub fn load_layered(
    sources: &mut Sources,
    project: Option<(String, String)>,
    hosts: &[Registry],
) -> Loaded {
    let file = match project {
        Some((name, text)) => sources.add(name, text),
        None => sources.add(BUILTIN_NAME, BUILTIN_CONTRACT),
    };
    load(sources, file, hosts)
}

/// The JSON Schema generated from `contract::raw`; `schemas/contract.schema.json` must
/// equal it (a test checks).
pub fn generated_schema() -> Result<String, serde_json::Error> {
    let schema = schemars::schema_for!(raw::RawContract);
    let mut text = serde_json::to_string_pretty(&schema)?;
    text.push('\n');
    Ok(text)
}

fn schema_validator() -> Option<&'static (Value, jsonschema::Validator)> {
    static VALIDATOR: OnceLock<Option<(Value, jsonschema::Validator)>> = OnceLock::new();
    VALIDATOR
        .get_or_init(|| {
            let schema: Value = serde_json::from_str(CONTRACT_SCHEMA).ok()?;
            let validator = jsonschema::validator_for(&schema).ok()?;
            Some((schema, validator))
        })
        .as_ref()
}

/// Top-level keys starting with `x-` are ignored, so a contract can keep YAML anchors
/// (shared lists, message maps) in one place.
fn strip_extensions(node: &mut Node) {
    if let NodeKind::Map(entries) = &mut node.kind {
        entries.retain(|(k, _)| !k.name.starts_with("x-"));
    }
}

/// Runs the schema and lowering stages on a parsed tree (without its `x-` keys).
fn load_node(node: &Node, hosts: &[Registry]) -> Loaded {
    let instance = node.to_json();
    let mut diagnostics = Vec::new();
    let Some((schema, validator)) = schema_validator() else {
        let d = Diagnostic::new(
            "schema-violation",
            "internal error: the built-in contract schema does not compile",
            None,
        );
        return Loaded {
            contract: None,
            diagnostics: vec![d],
        };
    };
    diagnostics.extend(schema_findings(
        node,
        validator,
        schema,
        "`schemas/contract.schema.json` or docs/contract-format.md",
    ));
    if !diagnostics.is_empty() {
        return Loaded {
            contract: None,
            diagnostics,
        };
    }
    let raw: raw::RawContract = match serde_json::from_value(instance) {
        Ok(r) => r,
        Err(e) => {
            let d = Diagnostic::new(
                "schema-violation",
                format!("internal error: the schema accepted a file serde rejects: {e}"),
                Some(node.span),
            )
            .with_help("please report this; the schema and `contract::raw` disagree");
            return Loaded {
                contract: None,
                diagnostics: vec![d],
            };
        }
    };
    let (contract, mut lowered) = lower::lower(&raw, node, hosts);
    diagnostics.append(&mut lowered);
    diagnostic::sort(&mut diagnostics);
    Loaded {
        contract,
        diagnostics,
    }
}

/// Every way the YAML tree `root` breaks `validator`'s schema, as `schema-violation`
/// findings at the offending node; `schema` is the JSON the validator was built from (an
/// unknown key is compared with the keys allowed at its place, for a "did you mean");
/// `reference` names where the allowed keys are listed.
/// Also used for other YAML files checked by a schema (AgentRunner's task files).
pub fn schema_findings(
    root: &Node,
    validator: &jsonschema::Validator,
    schema: &Value,
    reference: &str,
) -> Vec<Diagnostic> {
    let instance = root.to_json();
    let mut diagnostics: Vec<Diagnostic> = validator
        .iter_errors(&instance)
        .map(|error| schema_diagnostic(root, &error, schema, reference))
        .collect();
    dedup_schema(&mut diagnostics);
    diagnostics
}

fn schema_diagnostic(
    root: &Node,
    error: &jsonschema::ValidationError<'_>,
    schema: &Value,
    reference: &str,
) -> Diagnostic {
    use jsonschema::error::ValidationErrorKind as K;
    let path = error.instance_path().as_str().to_string();
    let (key, node) = root.locate(&path);
    let display = if path.is_empty() {
        "the file".to_string()
    } else {
        format!("`{}`", path.trim_start_matches('/').replace('/', "."))
    };
    // Every alternative refused the type or the value outright: say what they all take
    // (`an integer or `auto``), which says more than the one alternative of another type.
    if let Some(allowed) = allowed_alternatives(error) {
        return Diagnostic::new(
            "schema-violation",
            format!("{display}: {}", allowed.message(error.instance())),
            Some(node.span),
        );
    }
    if let Some(specific) = specific_alternative(error) {
        return schema_diagnostic(root, specific, schema, reference);
    }
    match error.kind() {
        K::AdditionalProperties { unexpected } => {
            let name = unexpected.first().cloned().unwrap_or_default();
            let span = node.entry(&name).map_or(node.span, |(k, _)| k.span);
            let allowed = allowed_keys(schema, error.schema_path().as_str());
            let message = match closest(&name, allowed.iter().map(String::as_str)) {
                Some(near) => format!("unknown key `{name}` in {display}; did you mean `{near}`?"),
                None => format!("unknown key `{name}` in {display}"),
            };
            Diagnostic::new("schema-violation", message, Some(span))
                .with_help(format!("see {reference} for the keys allowed here"))
        }
        K::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            let span = key.map_or(node.span, |k| k.span);
            Diagnostic::new(
                "schema-violation",
                format!("{display} is missing the required key `{name}`"),
                Some(span),
            )
        }
        K::Enum { options } => {
            let allowed = Allowed {
                kinds: Vec::new(),
                values: options.as_array().cloned().unwrap_or_default(),
            };
            Diagnostic::new(
                "schema-violation",
                format!("{display}: {}", allowed.message(error.instance())),
                Some(node.span),
            )
        }
        K::Constant { expected_value } => {
            let allowed = Allowed {
                kinds: Vec::new(),
                values: vec![Value::clone(expected_value)],
            };
            Diagnostic::new(
                "schema-violation",
                format!("{display}: {}", allowed.message(error.instance())),
                Some(node.span),
            )
        }
        _ => Diagnostic::new(
            "schema-violation",
            format!("{display}: {error}"),
            Some(node.span),
        ),
    }
}

/// How many allowed values a finding lists before it says "and N more".
const LISTED_VALUES: usize = 12;
/// How many names a "did you mean" compares with (the distance is cheap, but a schema
/// could list thousands of keys or values).
const SUGGESTION_CANDIDATES: usize = 512;

/// What the alternatives of an `anyOf`/`oneOf` (or one `enum`/`const`) accept: types in
/// words, and literal values listed.
struct Allowed {
    kinds: Vec<String>,
    values: Vec<Value>,
}

impl Allowed {
    /// `"mok" is not one of openai-chat, ...; did you mean mock?`, or, with types among
    /// the alternatives, `2.5 is not allowed here; it takes an integer or a string`.
    fn message(&self, instance: &Value) -> String {
        let found = literal(instance);
        let listed = self
            .values
            .iter()
            .take(LISTED_VALUES)
            .map(literal)
            .collect::<Vec<_>>();
        let mut values = match self.values.len() {
            0 => String::new(),
            1 => listed.join(""),
            n if n > LISTED_VALUES => {
                format!("{} and {} more", listed.join(", "), n - LISTED_VALUES)
            }
            _ => listed.join(", "),
        };
        let near = instance
            .as_str()
            .and_then(|s| closest(s, self.values.iter().filter_map(Value::as_str)));
        let mut text = if self.kinds.is_empty() {
            match self.values.len() {
                1 => format!("{found} is not allowed here; it takes {values}"),
                _ => format!("{found} is not one of {values}"),
            }
        } else {
            if self.values.len() > 1 {
                values = format!("one of {values}");
            }
            let mut all = self.kinds.clone();
            if !values.is_empty() {
                all.push(values);
            }
            format!("{found} is not allowed here; it takes {}", all.join(" or "))
        };
        if let Some(near) = near {
            text.push_str(&format!("; did you mean `{near}`?"));
        }
        text
    }
}

/// A value as a finding shows it: a string in backticks, anything else as JSON.
fn literal(value: &Value) -> String {
    match value {
        Value::String(s) => format!("`{s}`"),
        other => other.to_string(),
    }
}

/// The candidate nearest to `name` (case-insensitive edit distance at most 2, at most 1
/// for names of three characters or fewer, never the name itself), the first on a tie;
/// failing that, the one candidate that contains a name of four characters or more
/// (`codex` → `codex-cli`, `max_run_time` → `max_run_time_sec`: shortened names the
/// distance misses).
fn closest<'c>(name: &str, candidates: impl Iterator<Item = &'c str>) -> Option<&'c str> {
    let length = name.chars().count();
    let limit = if length <= 3 { 1 } else { 2 };
    let lower = name.to_lowercase();
    let mut best: Option<(usize, &str)> = None;
    let mut containing: Vec<&str> = Vec::new();
    for candidate in candidates.take(SUGGESTION_CANDIDATES) {
        if candidate == name {
            continue;
        }
        let d = overlay::edit_distance(name, candidate);
        if d <= limit && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, candidate));
        }
        if length >= 4 && containing.len() < 2 && candidate.to_lowercase().contains(&lower) {
            containing.push(candidate);
        }
    }
    match (best, containing.as_slice()) {
        (Some((_, c)), _) => Some(c),
        (None, [only]) => Some(only),
        _ => None,
    }
}

/// The keys the schema names under the object whose `additionalProperties` refused a
/// key; `schema_path` is that keyword's canonical location (`/$defs/RunnerSpec/
/// additionalProperties`), so the object's `properties` sit beside it.
fn allowed_keys(schema: &Value, schema_path: &str) -> Vec<String> {
    let Some(parent) = schema_path.strip_suffix("/additionalProperties") else {
        return Vec::new();
    };
    schema
        .pointer(parent)
        .and_then(|object| object.get("properties"))
        .and_then(Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default()
}

/// The alternatives of an `anyOf` or a failed `oneOf`.
fn alternatives<'e>(
    error: &'e jsonschema::ValidationError<'_>,
) -> Option<&'e [Vec<jsonschema::ValidationError<'static>>]> {
    use jsonschema::error::ValidationErrorKind as K;
    match error.kind() {
        K::AnyOf { context } | K::OneOfNotValid { context } => Some(context),
        _ => None,
    }
}

/// For an `anyOf` or `oneOf` whose every alternative refused the value's type or value
/// outright, what the alternatives allow: `an integer or a string`, the listed values
/// (a Rust enum of unit variants is a `oneOf` of `const`s in the generated schema).
fn allowed_alternatives(error: &jsonschema::ValidationError<'_>) -> Option<Allowed> {
    use jsonschema::error::ValidationErrorKind as K;
    let context = alternatives(error)?;
    let mut allowed = Allowed {
        kinds: Vec::new(),
        values: Vec::new(),
    };
    for errors in context {
        let [only] = errors.as_slice() else {
            return None;
        };
        if only.instance_path() != error.instance_path() {
            return None;
        }
        match only.kind() {
            K::Type { .. } => {
                let text = only.to_string();
                let ty = text.rsplit("is not of type ").next()?.trim_matches('"');
                // `null` is how an optional field is spelled in the schema, not a value
                // anyone means to write.
                if ty == "null" {
                    continue;
                }
                let what = match ty {
                    "integer" => "an integer (a whole number)".to_string(),
                    "object" => "a mapping".to_string(),
                    "array" => "a list".to_string(),
                    other => format!("a {other}"),
                };
                if !allowed.kinds.contains(&what) {
                    allowed.kinds.push(what);
                }
            }
            K::Enum { options } => {
                for value in options.as_array().into_iter().flatten() {
                    if !allowed.values.contains(value) {
                        allowed.values.push(value.clone());
                    }
                }
            }
            K::Constant { expected_value } => {
                if !allowed.values.contains(expected_value) {
                    allowed.values.push(Value::clone(expected_value));
                }
            }
            _ => return None,
        }
    }
    (!allowed.kinds.is_empty() || !allowed.values.is_empty()).then_some(allowed)
}

/// For an `anyOf` failure (an untagged type like `limit`, an integer or a param name),
/// the first error of the one alternative the value failed for another reason than its
/// type: `4294967296 is greater than the maximum of 4294967295` says more than "not valid
/// under any of the schemas".
fn specific_alternative<'e>(
    error: &'e jsonschema::ValidationError<'_>,
) -> Option<&'e jsonschema::ValidationError<'static>> {
    use jsonschema::error::ValidationErrorKind as K;
    let context = alternatives(error)?;
    let mut specific = context.iter().filter(|errors| {
        !errors.iter().all(|e| {
            matches!(e.kind(), K::Type { .. }) && e.instance_path() == error.instance_path()
        })
    });
    let one = specific.next()?;
    if specific.next().is_some() {
        return None;
    }
    one.first()
}

/// `anyOf` failures repeat one problem several times; keep one per location and message.
fn dedup_schema(diagnostics: &mut Vec<Diagnostic>) {
    diagnostic::sort(diagnostics);
    diagnostics.dedup_by(|a, b| a.span == b.span && a.message == b.message);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_text(text: &str) -> Vec<Diagnostic> {
        let mut sources = Sources::default();
        let id = sources.add("t.yml", text);
        load(&mut sources, id, &crate::contract::registry::test_hosts()).diagnostics
    }

    #[test]
    fn an_extends_that_is_not_a_name_is_one_error() {
        let diagnostics = load_text("extends: [builtin]\ncounters:\n  failure_count: {limit: 5}\n");
        let messages: Vec<&str> = diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "`extends` takes the name `builtin`; found something that is not a name (a list or a mapping)"
            ]
        );
    }

    #[test]
    fn a_value_no_alternative_takes_says_what_they_take() {
        let text = "contract: t\nversion: 1\nhost: agent-runner\nlocales: [en]\ninitial: A\ncounters:\n  c: {scope: session, limit: 2.5}\nstates: {A: {kind: terminal, outcome: successs}}\n";
        let messages: Vec<String> = load_text(text).iter().map(|d| d.message.clone()).collect();
        assert_eq!(
            messages,
            [
                "`counters.c.limit`: 2.5 is not allowed here; it takes an integer (a whole number) or a string",
                "`states.A.outcome`: `successs` is not one of `success`, `failure`, `aborted`, `incomplete`, `cancelled`, `needs_human`; did you mean `success`?",
            ]
        );
    }

    #[test]
    fn an_unknown_key_near_an_allowed_one_is_suggested() {
        let text = "contract: t\nversion: 1\nhost: agent-runner\nlocales: [en]\ninitial: A\nstates: {A: {kind: terminal, outcome: success, instrution: x}}\nmesages: {}\n";
        let messages: Vec<String> = load_text(text).iter().map(|d| d.message.clone()).collect();
        assert_eq!(
            messages,
            [
                "unknown key `instrution` in `states.A`; did you mean `instruction`?",
                "unknown key `mesages` in the file; did you mean `messages`?",
            ]
        );
    }

    #[test]
    fn an_unknown_key_far_from_every_allowed_one_gets_no_suggestion() {
        let text = "contract: t\nversion: 1\nhost: agent-runner\nlocales: [en]\ninitial: A\nstates: {A: {kind: terminal, outcome: success}}\nzzzzzz: 1\n";
        let messages: Vec<String> = load_text(text).iter().map(|d| d.message.clone()).collect();
        assert_eq!(messages, ["unknown key `zzzzzz` in the file"]);
    }

    #[test]
    fn a_value_outside_a_oneof_of_constants_lists_them() {
        let text = "contract: t\nversion: 1\nhost: agent-runner\nlocales: [en]\ninitial: A\nstates: {A: {kind: terminl, outcome: success}}\n";
        let messages: Vec<String> = load_text(text).iter().map(|d| d.message.clone()).collect();
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(
            messages[0].starts_with("`states.A.kind`: `terminl` is not one of `")
                && messages[0].contains("`terminal`")
                && messages[0].ends_with("; did you mean `terminal`?"),
            "{messages:?}"
        );
    }

    /// The findings of `text` against `schema`, as `schema_findings` gives them.
    fn findings_against(schema: Value, text: &str) -> Vec<String> {
        let mut sources = Sources::default();
        let id = sources.add("t.yml", text);
        let (node, _) = yaml::parse(id, text).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        schema_findings(&node, &validator, &schema, "the docs")
            .into_iter()
            .map(|d| d.message)
            .collect()
    }

    #[test]
    fn types_and_values_of_the_alternatives_are_named_together() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"limit": {"anyOf": [
                {"type": "integer"}, {"const": "auto"}, {"type": "null"}
            ]}},
            "additionalProperties": false
        });
        assert_eq!(
            findings_against(schema.clone(), "limit: atuo\n"),
            [
                "`limit`: `atuo` is not allowed here; it takes an integer (a whole number) or `auto`; did you mean `auto`?"
            ]
        );
        assert_eq!(
            findings_against(schema, "limit: [1]\n"),
            ["`limit`: [1] is not allowed here; it takes an integer (a whole number) or `auto`"]
        );
    }

    #[test]
    fn closest_is_bounded_and_never_the_name_itself() {
        assert_eq!(
            closest("max_loop", ["max_loops", "meta"].into_iter()),
            Some("max_loops")
        );
        assert_eq!(closest("mok", ["mock", "mo"].into_iter()), Some("mock"));
        assert_eq!(closest("abc", ["xyz"].into_iter()), None);
        assert_eq!(closest("mock", ["mock"].into_iter()), None);
        // A shortened name: the one candidate containing it, not one of several.
        assert_eq!(
            closest("codex", ["codex-cli", "claude-code"].into_iter()),
            Some("codex-cli")
        );
        assert_eq!(
            closest("max_run_time", ["max_run_time_sec"].into_iter()),
            Some("max_run_time_sec")
        );
        assert_eq!(
            closest("code", ["codex-cli", "claude-code"].into_iter()),
            None
        );
        assert_eq!(closest("cli", ["codex-cli"].into_iter()), None);
        let many: Vec<String> = (0..10_000).map(|i| format!("key{i}")).collect();
        // Only the first SUGGESTION_CANDIDATES are compared: `key9999` is past them.
        assert_eq!(closest("key9999x", many.iter().map(String::as_str)), None);
    }

    #[test]
    fn a_long_value_list_is_cut_with_a_count() {
        let allowed = Allowed {
            kinds: Vec::new(),
            values: (0..20).map(|i| Value::from(format!("v{i}"))).collect(),
        };
        let message = allowed.message(&Value::from("w"));
        assert!(message.ends_with("`v11` and 8 more"), "{message}");
    }

    #[test]
    fn numbers_beyond_a_count_are_schema_errors_that_state_the_range() {
        let text = "contract: t\nversion: 1\nhost: agent-runner\nlocales: [en]\ninitial: A\ncounters:\n  c: {scope: session, limit: 4294967296}\n  d: {scope: session, limit: -1}\nstates: {A: {kind: terminal, step: 99999999999}}\n";
        let diagnostics = load_text(text);
        let found: Vec<(String, String)> = diagnostics
            .iter()
            .map(|d| (d.span.unwrap().start.to_string(), d.message.clone()))
            .collect();
        assert_eq!(
            found,
            [
                (
                    "7:30".to_string(),
                    "`counters.c.limit`: 4294967296 is greater than the maximum of 4294967295"
                        .to_string()
                ),
                (
                    "8:30".to_string(),
                    "`counters.d.limit`: -1 is less than the minimum of 0".to_string()
                ),
                (
                    "9:36".to_string(),
                    "`states.A.step`: 99999999999 is greater than the maximum of 4294967295"
                        .to_string()
                ),
            ]
        );
        // The largest count is accepted.
        let text = text
            .replace("4294967296", "4294967295")
            .replace("-1", "0")
            .replace("99999999999", "1");
        assert!(load_text(&text).is_empty());
        // Whole numbers written as floats are integers, as JSON Schema says: serde's u32
        // refused them after the schema had accepted them ("internal error").
        let floats = text
            .replace("version: 1", "version: 1.0")
            .replace("limit: 4294967295", "limit: 3.0")
            .replace("step: 1", "step: 2e0");
        assert!(load_text(&floats).is_empty(), "{:?}", load_text(&floats));
    }
}
