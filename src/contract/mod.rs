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
pub(crate) mod model;
pub(crate) mod overlay;
pub(crate) mod raw;
pub(crate) mod registry;
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
pub const BUILTIN_CONTRACT: &str = include_str!("../../contracts/phase_contract.yml");
/// The name diagnostics use for the built-in contract.
pub(crate) const BUILTIN_NAME: &str = "<built-in>/contracts/phase_contract.yml";
/// A project's own contract (an overlay of the built-in one, or a complete flow),
/// relative to the repository root.
pub(crate) const PROJECT_CONTRACT: &str = ".code-intel/phase_contract.yml";
/// The JSON Schema of contract files, generated from `contract::raw`.
pub(crate) const CONTRACT_SCHEMA: &str = include_str!("../../schemas/contract.schema.json");

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
pub(crate) fn load_layered(
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

fn schema_validator() -> Option<&'static jsonschema::Validator> {
    static VALIDATOR: OnceLock<Option<jsonschema::Validator>> = OnceLock::new();
    VALIDATOR
        .get_or_init(|| {
            let schema: Value = serde_json::from_str(CONTRACT_SCHEMA).ok()?;
            jsonschema::validator_for(&schema).ok()
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
    let Some(validator) = schema_validator() else {
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
/// findings at the offending node; `reference` names where the allowed keys are listed.
/// Also used for other YAML files checked by a schema (AgentRunner's task files).
pub(crate) fn schema_findings(
    root: &Node,
    validator: &jsonschema::Validator,
    reference: &str,
) -> Vec<Diagnostic> {
    let instance = root.to_json();
    let mut diagnostics: Vec<Diagnostic> = validator
        .iter_errors(&instance)
        .map(|error| schema_diagnostic(root, &error, reference))
        .collect();
    dedup_schema(&mut diagnostics);
    diagnostics
}

fn schema_diagnostic(
    root: &Node,
    error: &jsonschema::ValidationError<'_>,
    reference: &str,
) -> Diagnostic {
    use jsonschema::error::ValidationErrorKind as K;
    if let Some(specific) = specific_alternative(error) {
        return schema_diagnostic(root, specific, reference);
    }
    let path = error.instance_path().as_str().to_string();
    if let Some(allowed) = allowed_alternatives(error) {
        let (_, node) = root.locate(&path);
        let display = format!("`{}`", path.trim_start_matches('/').replace('/', "."));
        return Diagnostic::new(
            "schema-violation",
            format!(
                "{display}: {} is not allowed here; it takes {allowed}",
                error.instance()
            ),
            Some(node.span),
        );
    }
    let (key, node) = root.locate(&path);
    let display = if path.is_empty() {
        "the file".to_string()
    } else {
        format!("`{}`", path.trim_start_matches('/').replace('/', "."))
    };
    match error.kind() {
        K::AdditionalProperties { unexpected } => {
            let name = unexpected.first().cloned().unwrap_or_default();
            let span = node.entry(&name).map_or(node.span, |(k, _)| k.span);
            Diagnostic::new(
                "schema-violation",
                format!("unknown key `{name}` in {display}"),
                Some(span),
            )
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
        _ => Diagnostic::new(
            "schema-violation",
            format!("{display}: {error}"),
            Some(node.span),
        ),
    }
}

/// For an `anyOf` failure (an untagged type like `limit`, an integer or a param name),
/// the first error of the one alternative the value failed for another reason than its
/// type: `4294967296 is greater than the maximum of 4294967295` says more than "not valid
/// under any of the schemas".
/// For an `anyOf` whose every alternative refused the value's type or value outright, what
/// the alternatives allow, in words: `an integer or a string`, `one of "a", "b"`.
fn allowed_alternatives(error: &jsonschema::ValidationError<'_>) -> Option<String> {
    use jsonschema::error::ValidationErrorKind as K;
    let K::AnyOf { context } = error.kind() else {
        return None;
    };
    let mut allowed: Vec<String> = Vec::new();
    for errors in context {
        let [only] = errors.as_slice() else {
            return None;
        };
        if only.instance_path() != error.instance_path() {
            return None;
        }
        let text = only.to_string();
        let what = match only.kind() {
            K::Type { .. } => {
                let ty = text.rsplit("is not of type ").next()?.trim_matches('"');
                match ty {
                    "integer" => "an integer (a whole number)".to_string(),
                    "object" => "a mapping".to_string(),
                    "array" => "a list".to_string(),
                    other => format!("a {other}"),
                }
            }
            K::Enum { .. } | K::Constant { .. } => text
                .split_once("is not ")
                .map(|(_, rest)| rest.to_string())?,
            _ => return None,
        };
        if !allowed.contains(&what) {
            allowed.push(what);
        }
    }
    (!allowed.is_empty()).then(|| allowed.join(" or "))
}

fn specific_alternative<'e>(
    error: &'e jsonschema::ValidationError<'_>,
) -> Option<&'e jsonschema::ValidationError<'static>> {
    use jsonschema::error::ValidationErrorKind as K;
    let K::AnyOf { context } = error.kind() else {
        return None;
    };
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
        load(&mut sources, id, &crate::hosts::all()).diagnostics
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
                "`states.A.outcome`: \"successs\" is not one of \"success\", \"failure\" or 3 other candidates",
            ]
        );
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
