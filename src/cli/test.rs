//! `code-intel test`: finds scenario files (`*.scenarios.yml`), runs every scenario against
//! the contract its file names, prints a line per scenario like a test runner, and with
//! `--coverage` the rules of each contract no scenario exercised.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::error::CliError;
use super::out::{err, errln, outln};
use crate::contract::Contract;
use crate::diagnostic::render;
use crate::scenario::{self, ContractRef, Coverage, Taken};
use crate::source::Sources;
use crate::{hosts, lint};

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
        } else if scenario::is_scenario_file(&entry) {
            out.push(entry);
        }
    }
    Ok(())
}

/// A contract loaded once for all the scenario files that name it.
struct Loaded {
    label: String,
    contract: Contract,
    taken: BTreeSet<Taken>,
}

pub(super) fn run(paths: &[PathBuf], coverage: bool) -> Result<ExitCode, CliError> {
    let mut files = Vec::new();
    let defaults = [PathBuf::from(".")];
    for path in if paths.is_empty() {
        &defaults[..]
    } else {
        paths
    } {
        collect(path, &mut files)?;
    }
    if files.is_empty() {
        errln!("no scenario files (*.scenarios.yml) found");
        return Ok(ExitCode::from(2));
    }
    let mut sources = Sources::default();
    let mut contracts: BTreeMap<String, Loaded> = BTreeMap::new();
    let (mut passed, mut failed, mut broken) = (0usize, 0usize, 0usize);
    for path in &files {
        let text = std::fs::read_to_string(path).map_err(|e| CliError::read(path, e))?;
        let file = sources.add(path.display().to_string(), text.clone());
        let loaded = match scenario::load(file, &text) {
            Ok(l) => l,
            Err(diagnostics) => {
                err!("{}", render::human(&sources, &diagnostics));
                broken += 1;
                continue;
            }
        };
        let key = match &loaded.contract {
            ContractRef::Builtin => "builtin".to_string(),
            ContractRef::Path(p) => path
                .parent()
                .unwrap_or(Path::new("."))
                .join(p)
                .display()
                .to_string(),
        };
        if !contracts.contains_key(&key) {
            match load_contract(&mut sources, &loaded.contract, &key) {
                Ok(contract) => {
                    contracts.insert(
                        key.clone(),
                        Loaded {
                            label: key.clone(),
                            contract,
                            taken: BTreeSet::new(),
                        },
                    );
                }
                Err(e) => {
                    errln!(
                        "{}: the contract `{key}` does not load:\n{e}",
                        path.display()
                    );
                    broken += 1;
                    continue;
                }
            }
        }
        let Some(target) = contracts.get_mut(&key) else {
            continue;
        };
        for s in &loaded.scenarios {
            let report = scenario::run(&target.contract, s);
            target.taken.extend(report.taken.iter().cloned());
            match &report.failure {
                None => {
                    passed += 1;
                    outln!("scenario {} ... ok", report.name);
                }
                Some(f) => {
                    failed += 1;
                    outln!("scenario {} ... FAILED", report.name);
                    outln!(
                        "  {}: {}: {}",
                        sources.location(f.span),
                        if f.step == 0 {
                            "start".to_string()
                        } else {
                            format!("step {}", f.step)
                        },
                        f.message
                    );
                }
            }
        }
    }
    outln!(
        "\ntest result: {}. {passed} passed; {failed} failed; {broken} file(s) not run",
        if failed + broken == 0 { "ok" } else { "FAILED" }
    );
    if coverage {
        for loaded in contracts.values() {
            let c = Coverage::of(&loaded.contract, &loaded.taken);
            let hit = c.covered.iter().filter(|x| **x).count();
            outln!(
                "\ncoverage of {}: {hit} of {} transitions and limit redirects ({:.1} %)",
                loaded.label,
                c.rules.len(),
                c.percent()
            );
            for rule in c.missed() {
                outln!(
                    "  not exercised: {}: {}",
                    sources.location(rule.span),
                    rule.label
                );
            }
        }
    }
    Ok(if failed + broken == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Runs the scenarios of `text` (a replay) against `contract`, printing like `run`.
pub(super) fn check_text(contract: &Contract, text: &str) -> Result<ExitCode, CliError> {
    let mut sources = Sources::default();
    let file = sources.add("<replay>", text.to_string());
    let loaded = scenario::load(file, text).map_err(|d| CliError::InvalidContract {
        rendered: render::human(&sources, &d),
    })?;
    let mut failed = 0;
    for s in &loaded.scenarios {
        let report = scenario::run(contract, s);
        match &report.failure {
            None => errln!(
                "replay {} ... ok: the contract decides as it did",
                report.name
            ),
            Some(f) => {
                failed += 1;
                errln!(
                    "replay {} ... DIFFERS at step {}: {}",
                    report.name,
                    f.step,
                    f.message
                );
            }
        }
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn load_contract(
    sources: &mut Sources,
    contract: &ContractRef,
    path: &str,
) -> Result<Contract, String> {
    // A scenario names the contract it tests: `builtin` is the shipped flow itself, not
    // whatever this repository runs (`lint::repository::for_repository`), so a project's
    // overlay cannot change what the shipped scenarios check.
    let loaded = match contract {
        ContractRef::Builtin => lint::load_layered_and_lint(sources, None, &hosts::all()),
        ContractRef::Path(_) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
            super::lint::load_file(sources, Path::new(path), text.into_bytes())
        }
    };
    let diagnostics = loaded.diagnostics.clone();
    loaded
        .ok()
        .map_err(|_| render::human(sources, &diagnostics))
}
