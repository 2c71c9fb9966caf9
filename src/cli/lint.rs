//! `code-intel lint`: finds contract files, loads and checks each, renders the findings.

use super::out::out;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::error::CliError;
use crate::contract::Loaded;
use crate::diagnostic::render::{Format, render};
use crate::diagnostic::{self, Diagnostic, Severity};
use crate::source::Sources;
use crate::{hosts, lint};

/// Loads and lints a contract file of any known host (an overlay when it says
/// `extends: builtin`).
pub(super) fn load_file(sources: &mut Sources, path: &Path, text: String) -> Loaded {
    let file = sources.add(path.display().to_string(), text);
    lint::load_and_lint(sources, file, &hosts::all())
}

fn collect(path: &Path, out: &mut Vec<PathBuf>) -> Result<(), CliError> {
    let meta = std::fs::metadata(path).map_err(|e| CliError::read(path, e))?;
    if meta.is_file() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| CliError::read(path, e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            collect(&entry, out)?;
        } else if entry.extension().is_some_and(|e| e == "yml" || e == "yaml")
            && !crate::scenario::is_scenario_file(&entry)
        {
            // Scenario files sit next to their contract; `code-intel test` checks them.
            out.push(entry);
        }
    }
    Ok(())
}

pub(super) fn run(
    paths: &[PathBuf],
    format: Format,
    deny_errors_only: bool,
) -> Result<ExitCode, CliError> {
    let mut files = Vec::new();
    let mut use_builtin = false;
    if paths.is_empty() {
        let project = Path::new(crate::contract::PROJECT_CONTRACT);
        if project.is_file() {
            files.push(project.to_path_buf());
        } else {
            use_builtin = true;
        }
    }
    for p in paths {
        collect(p, &mut files)?;
    }
    let mut sources = Sources::default();
    let mut all: Vec<Diagnostic> = Vec::new();
    if use_builtin {
        all.extend(lint::load_layered_and_lint(&mut sources, None, &hosts::all()).diagnostics);
    }
    for file in &files {
        let text = std::fs::read_to_string(file).map_err(|e| CliError::read(file, e))?;
        all.extend(load_file(&mut sources, file, text).diagnostics);
    }
    diagnostic::sort(&mut all);
    out!("{}", render(format, &sources, &all));
    let threshold = if deny_errors_only {
        Severity::Error
    } else {
        Severity::Warning
    };
    Ok(if all.iter().any(|d| d.severity >= threshold) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
