//! Loading contracts: YAML syntax, then the contract schema, then meaning.
//!
//! [`load`] runs the three stages in order and returns the resolved [`Contract`] with
//! every diagnostic found. The built-in default contract is compiled into the binary;
//! a project's `.code-intel/phase_contract.yml` either overlays it (`extends: builtin`)
//! or replaces it.

pub mod expected;
pub mod lower;
pub mod model;
pub mod raw;
pub mod registry;
pub mod roles;

use std::sync::OnceLock;

use serde_json::Value;

use crate::diagnostic::{self, Diagnostic};
use crate::source::{FileId, Sources};
use crate::yaml::{self, Node, NodeKind};
pub use model::Contract;

/// The default 19-step flow, compiled in.
pub const BUILTIN_CONTRACT: &str = include_str!("../../contracts/phase_contract.yml");
/// The name diagnostics use for the built-in contract.
pub const BUILTIN_NAME: &str = "<built-in>/contracts/phase_contract.yml";
/// The JSON Schema of contract files, generated from `contract::raw`.
pub const CONTRACT_SCHEMA: &str = include_str!("../../schemas/contract.schema.json");

/// The result of loading: a contract when it could be built, and every finding.
#[derive(Debug)]
pub struct Loaded {
    pub contract: Option<Contract>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Loaded {
    /// The contract if it has no error-level finding.
    pub fn ok(self) -> Result<Contract, Vec<Diagnostic>> {
        match self.contract {
            Some(c) if !diagnostic::has_errors(&self.diagnostics) => Ok(c),
            _ => Err(self.diagnostics),
        }
    }
}

/// Loads one contract file already registered in `sources`.
pub fn load(sources: &Sources, file: FileId) -> Loaded {
    let text = sources.get(file).map_or("", |f| f.text.as_str());
    match yaml::parse(file, text) {
        Err(d) => Loaded {
            contract: None,
            diagnostics: vec![d],
        },
        Ok((node, mut diagnostics)) => {
            let mut loaded = load_node(&node);
            diagnostics.append(&mut loaded.diagnostics);
            diagnostic::sort(&mut diagnostics);
            Loaded {
                contract: loaded.contract,
                diagnostics,
            }
        }
    }
}

/// Loads the built-in contract, overlaid by a project file when one is given. A project
/// file with `extends: builtin` is merged key by key onto the built-in contract (lists are
/// replaced whole); any other project file is a complete contract on its own.
pub fn load_layered(sources: &mut Sources, project: Option<(String, String)>) -> Loaded {
    let base_id = sources.add(BUILTIN_NAME, BUILTIN_CONTRACT);
    let Some((name, text)) = project else {
        return load(sources, base_id);
    };
    let overlay_id = sources.add(name, text.clone());
    let overlay = match yaml::parse(overlay_id, &text) {
        Ok(o) => o,
        Err(d) => {
            return Loaded {
                contract: None,
                diagnostics: vec![d],
            };
        }
    };
    let (mut overlay_node, mut diagnostics) = overlay;
    let extends = overlay_node
        .get("extends")
        .and_then(Node::as_str)
        .map(str::to_string);
    let node = match extends.as_deref() {
        None => overlay_node,
        Some("builtin") => {
            if let NodeKind::Map(entries) = &mut overlay_node.kind {
                entries.retain(|(k, _)| k.name != "extends");
            }
            let (mut base, _) = match yaml::parse(base_id, BUILTIN_CONTRACT) {
                Ok(b) => b,
                Err(d) => {
                    return Loaded {
                        contract: None,
                        diagnostics: vec![d],
                    };
                }
            };
            yaml::merge(&mut base, overlay_node);
            base
        }
        Some(other) => {
            let span = overlay_node.get("extends").map(|n| n.span);
            let d = Diagnostic::new("schema-violation", format!("`extends: {other}` is not supported"), span)
                .with_help("use `extends: builtin` to overlay the built-in contract, or remove `extends` for a complete custom flow");
            return Loaded {
                contract: None,
                diagnostics: vec![d],
            };
        }
    };
    let mut loaded = load_node(&node);
    diagnostics.append(&mut loaded.diagnostics);
    diagnostic::sort(&mut diagnostics);
    Loaded {
        contract: loaded.contract,
        diagnostics,
    }
}

/// The JSON Schema generated from `contract::raw`; `schemas/contract.schema.json` must
/// equal it (a test checks).
pub fn generated_schema() -> String {
    let schema = schemars::schema_for!(raw::RawContract);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
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
fn strip_extensions(node: &Node) -> Node {
    let mut node = node.clone();
    if let NodeKind::Map(entries) = &mut node.kind {
        entries.retain(|(k, _)| !k.name.starts_with("x-"));
    }
    node
}

/// Runs the schema and semantic stages on a parsed tree.
pub fn load_node(node: &Node) -> Loaded {
    let node = &strip_extensions(node);
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
    for error in validator.iter_errors(&instance) {
        diagnostics.push(schema_diagnostic(node, &error));
    }
    if !diagnostics.is_empty() {
        dedup_schema(&mut diagnostics);
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
    let (contract, mut lowered) = lower::lower(&raw, node);
    diagnostics.append(&mut lowered);
    if let Some(c) = &contract {
        let mut findings = crate::lint::run(c);
        drop_follow_ons(node, c, &mut findings);
        diagnostics.extend(findings);
    }
    diagnostic::sort(&mut diagnostics);
    Loaded {
        contract,
        diagnostics,
    }
}

/// Removes whole-flow findings that only restate an error lowering already reported.
///
/// An `otherwise` whose target does not exist is dropped while lowering; the state has a
/// fallback as written, so it is not also a dead end. An `initial` that names no state
/// leaves no start to measure reachability from.
fn drop_follow_ons(node: &Node, contract: &Contract, findings: &mut Vec<Diagnostic>) {
    let written_fallback = |id: &str| {
        node.get("states")
            .and_then(|states| states.get(id))
            .is_some_and(|state| state.get("otherwise").is_some())
    };
    let unknown_initial = node
        .get("initial")
        .and_then(Node::as_str)
        .is_some_and(|name| contract.state_id(name).is_none());
    findings.retain(|d| match d.code {
        "dead-end-state" => !contract
            .states
            .iter()
            .any(|s| Some(s.span) == d.span && written_fallback(&s.id)),
        "unreachable-state" => !unknown_initial,
        _ => true,
    });
}

fn schema_diagnostic(root: &Node, error: &jsonschema::ValidationError<'_>) -> Diagnostic {
    use jsonschema::error::ValidationErrorKind as K;
    let path = error.instance_path().as_str().to_string();
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
            Diagnostic::new("schema-violation", format!("unknown key `{name}` in {display}"), Some(span))
                .with_help("see `schemas/contract.schema.json` or docs/contract-format.md for the keys allowed here")
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

/// `anyOf` failures repeat one problem several times; keep one per location and message.
fn dedup_schema(diagnostics: &mut Vec<Diagnostic>) {
    diagnostic::sort(diagnostics);
    diagnostics.dedup_by(|a, b| a.span == b.span && a.message == b.message);
}
