//! `code-intel lint`: finds contract files, loads and checks each, renders the findings,
//! and ends with a one-line summary on stderr.
//!
//! A run never stops at one bad file: a path that cannot be read (missing, a dangling
//! link, no permission, not a regular file) or decoded (not UTF-8) is a `file-unreadable`
//! finding for that path, and the other files are still checked, so every output format
//! is a complete, valid document. Such a run, and one that finds no contract file in a
//! directory, exits with status 2: something was not checked.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::out::{errln, out};
use crate::contract::Loaded;
use crate::diagnostic::render::{Format, render};
use crate::diagnostic::{self, Diagnostic, Severity};
use crate::source::{Pos, Sources, Span};
use crate::{hosts, lint};

/// Loads and lints a contract file of any known host (an overlay when it says
/// `extends: builtin`), given as the bytes read from disk.
pub(super) fn load_file(sources: &mut Sources, path: &Path, bytes: Vec<u8>) -> Loaded {
    lint::load_bytes_and_lint(sources, path.display().to_string(), bytes, &hosts::all())
}

/// What a path on the command line led to.
enum Target {
    /// A file to read and check.
    File(PathBuf),
    /// A path that cannot be read, and why.
    Unreadable(PathBuf, String),
}

/// The contract files under the command line's paths, in order.
#[derive(Default)]
struct Walk {
    targets: Vec<Target>,
    /// Directories already walked (canonical), so a symlink loop is walked once.
    visited: HashSet<PathBuf>,
}

fn is_contract_name(path: &Path) -> bool {
    // Scenario files sit next to their contract; `code-intel test` checks them.
    path.extension().is_some_and(|e| e == "yml" || e == "yaml")
        && !crate::scenario::is_scenario_file(path)
}

/// Why `path` cannot be read, in words; says so when it is a symbolic link to nothing.
fn unreadable(path: &Path, e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::NotFound
        && let Ok(target) = std::fs::read_link(path)
    {
        return format!(
            "it is a symbolic link to `{}`, which does not exist",
            target.display()
        );
    }
    e.to_string()
}

impl Walk {
    /// A path named on the command line: a file is checked whatever its name (so
    /// `lint <(cat flow.yml)` works); a directory is searched for `*.yml` and `*.yaml`.
    /// Returns false for a directory with no contract file in it.
    fn argument(&mut self, path: &Path) -> bool {
        match std::fs::metadata(path) {
            Err(e) => {
                let why = unreadable(path, &e);
                self.targets
                    .push(Target::Unreadable(path.to_path_buf(), why));
                true
            }
            Ok(meta) if meta.is_dir() => {
                let before = self.targets.len();
                self.directory(path);
                self.targets.len() > before
            }
            Ok(_) => {
                self.targets.push(Target::File(path.to_path_buf()));
                true
            }
        }
    }

    fn directory(&mut self, dir: &Path) {
        if let Ok(canonical) = std::fs::canonicalize(dir)
            && !self.visited.insert(canonical)
        {
            return;
        }
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) => {
                let why = format!("cannot list the directory: {e}");
                self.targets
                    .push(Target::Unreadable(dir.to_path_buf(), why));
                return;
            }
        };
        let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
        paths.sort();
        for path in paths {
            // Follows symbolic links: a link to a contract is checked like the contract.
            match std::fs::metadata(&path) {
                Ok(meta) if meta.is_dir() => self.directory(&path),
                _ if !is_contract_name(&path) => {}
                Ok(meta) if meta.is_file() => self.targets.push(Target::File(path)),
                // A FIFO or a device would block or never end; it is not a contract.
                Ok(_) => self.targets.push(Target::Unreadable(
                    path,
                    "it is not a regular file".to_string(),
                )),
                Err(e) => {
                    let why = unreadable(&path, &e);
                    self.targets.push(Target::Unreadable(path, why));
                }
            }
        }
    }
}

/// The finding for a path that could not be read: at its first line, with no text.
fn unreadable_finding(sources: &mut Sources, path: &Path, why: &str) -> Diagnostic {
    let file = sources.add(path.display().to_string(), String::new());
    Diagnostic::new(
        "file-unreadable",
        format!("cannot read this contract file: {why}"),
        Some(Span::point(file, Pos::START)),
    )
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

pub(super) fn run(paths: &[PathBuf], format: Format, deny_errors_only: bool) -> ExitCode {
    let mut walk = Walk::default();
    let mut use_builtin = false;
    let mut empty = Vec::new();
    if paths.is_empty() {
        let project = Path::new(crate::contract::PROJECT_CONTRACT);
        if std::fs::symlink_metadata(project).is_ok() {
            walk.argument(project);
        } else {
            use_builtin = true;
        }
    }
    for p in paths {
        if !walk.argument(p) {
            empty.push(p);
        }
    }
    let mut sources = Sources::default();
    let mut all: Vec<Diagnostic> = Vec::new();
    if use_builtin {
        all.extend(lint::load_layered_and_lint(&mut sources, None, &hosts::all()).diagnostics);
    }
    let mut not_read = 0;
    for target in &walk.targets {
        let found = match target {
            Target::File(path) => match std::fs::read(path) {
                Ok(bytes) => load_file(&mut sources, path, bytes).diagnostics,
                Err(e) => vec![unreadable_finding(
                    &mut sources,
                    path,
                    &unreadable(path, &e),
                )],
            },
            Target::Unreadable(path, why) => vec![unreadable_finding(&mut sources, path, why)],
        };
        not_read += usize::from(found.iter().any(|d| d.code == "file-unreadable"));
        all.extend(found);
    }
    diagnostic::sort(&mut all);
    match render(format, &sources, &all) {
        Ok(text) => out!("{text}"),
        Err(e) => {
            errln!("error: the findings could not be written as JSON: {e}");
            return ExitCode::from(2);
        }
    }

    for dir in &empty {
        errln!(
            "error: no contract file (*.yml, *.yaml) in {}",
            dir.display()
        );
    }
    let errors = all.iter().filter(|d| d.severity == Severity::Error).count();
    let checked = if use_builtin {
        "the built-in contract".to_string()
    } else {
        plural(walk.targets.len(), "contract file")
    };
    let mut summary = format!(
        "checked {checked}: {}, {}",
        plural(errors, "error"),
        plural(all.len() - errors, "warning")
    );
    if not_read > 0 {
        summary.push_str(&format!(" ({not_read} could not be read)"));
    }
    errln!("{summary}");

    let threshold = if deny_errors_only {
        Severity::Error
    } else {
        Severity::Warning
    };
    if not_read > 0 || !empty.is_empty() {
        ExitCode::from(2)
    } else if all.iter().any(|d| d.severity >= threshold) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
