//! Reading a scenario file: YAML with positions, then the raw serde types, then the
//! resolved [`ScenarioFile`] whose scenarios and steps know where they are written.

use std::path::Path;

use super::model::{ContractRef, Expect, Scenario, ScenarioFile, Step};
use super::raw;
use crate::diagnostic::Diagnostic;
use crate::source::{FileId, Span};
use crate::yaml::{self, Node};

/// The file names scenario files end with.
pub const SUFFIXES: &[&str] = &[".scenarios.yml", ".scenarios.yaml"];

/// Whether `path` names a scenario file (`*.scenarios.yml`), which sits next to the
/// contract it tests and is not a contract itself.
pub fn is_scenario_file(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// The JSON Schema of scenario files (`schemas/scenario.schema.json` is this, checked by a
/// test).
pub fn generated_schema() -> Result<String, serde_json::Error> {
    let schema = schemars::schema_for!(raw::RawScenarioFile);
    let mut text = serde_json::to_string_pretty(&schema)?;
    text.push('\n');
    Ok(text)
}

/// Loads a scenario file. Problems are diagnostics at their place in the file
/// (`scenario-invalid`); a file with any is not run.
pub fn load(file: FileId, text: &str) -> Result<ScenarioFile, Vec<Diagnostic>> {
    let (root, mut problems) = yaml::parse(file, text).map_err(|d| vec![d])?;
    let json = root.to_json();
    if let Some(validator) = validator() {
        for error in validator.iter_errors(&json) {
            problems.push(schema_problem(&root, &error));
        }
    }
    if !problems.is_empty() {
        problems.dedup_by(|a, b| a.span == b.span && a.message == b.message);
        return Err(problems);
    }
    let raw: raw::RawScenarioFile = match serde_json::from_value(json) {
        Ok(raw) => raw,
        Err(e) => {
            problems.push(Diagnostic::new(
                "scenario-invalid",
                format!("not a scenario file: {e}"),
                Some(root.span),
            ));
            return Err(problems);
        }
    };
    if !problems.is_empty() {
        return Err(problems);
    }
    let contract = match raw.contract.as_deref() {
        None | Some("builtin") => ContractRef::Builtin,
        Some(path) => ContractRef::Path(path.to_string()),
    };
    let mut scenarios = Vec::new();
    for (i, s) in raw.scenarios.into_iter().enumerate() {
        let at = |pointer: String| locate(&root, &pointer);
        let steps = s
            .steps
            .into_iter()
            .enumerate()
            .map(|(j, step)| Step {
                submit: step.submit,
                tools: step.tools,
                facts: step.facts,
                results: step.results,
                expect: Expect {
                    state: step.expect.state,
                    message: step.expect.message,
                    rejected: step.expect.rejected,
                    finished: step.expect.finished,
                    action_failed: step.expect.action_failed,
                    limit: step.expect.limit,
                    start_error: step.expect.start_error,
                    counters: step.expect.counters,
                    vars: step.expect.vars,
                },
                span: at(format!("/scenarios/{i}/steps/{j}")),
            })
            .collect();
        scenarios.push(Scenario {
            name: s.name,
            flags: s.flags,
            intent: s.intent,
            locale: s.locale,
            params: s.params,
            facts: s.facts,
            results: s.results,
            steps,
            span: at(format!("/scenarios/{i}/name")),
        });
    }
    Ok(ScenarioFile {
        contract,
        scenarios,
    })
}

fn validator() -> Option<&'static jsonschema::Validator> {
    static VALIDATOR: std::sync::OnceLock<Option<jsonschema::Validator>> =
        std::sync::OnceLock::new();
    VALIDATOR
        .get_or_init(|| {
            let schema: serde_json::Value = serde_json::from_str(&generated_schema().ok()?).ok()?;
            jsonschema::validator_for(&schema).ok()
        })
        .as_ref()
}

/// A schema failure at its place: an unknown key at the key, a missing one at its parent.
fn schema_problem(root: &Node, error: &jsonschema::ValidationError<'_>) -> Diagnostic {
    use jsonschema::error::ValidationErrorKind as K;
    let path = error.instance_path().as_str().to_string();
    let (key, node) = root.locate(&path);
    let display = if path.is_empty() {
        "the file".to_string()
    } else {
        format!("`{}`", path.trim_start_matches('/').replace('/', "."))
    };
    let (message, span) = match error.kind() {
        K::AdditionalProperties { unexpected } => {
            let name = unexpected.first().cloned().unwrap_or_default();
            let span = node.entry(&name).map_or(node.span, |(k, _)| k.span);
            (format!("unknown key `{name}` in {display}"), span)
        }
        K::Required { property } => (
            format!(
                "{display} is missing the required key `{}`",
                property.as_str().unwrap_or_default()
            ),
            key.map_or(node.span, |k| k.span),
        ),
        _ => (format!("{display}: {error}"), node.span),
    };
    Diagnostic::new("scenario-invalid", message, Some(span))
        .with_help("see `schemas/scenario.schema.json` (`code-intel schema --scenarios`)")
}

/// The span of the node at a JSON pointer (the deepest that exists).
fn locate(root: &Node, pointer: &str) -> Span {
    let (key, node) = root.locate(pointer);
    key.map_or(node.span, |k| k.span)
}
