//! Tidy checks over the source tree: the engine stays generic and the code keeps its habits.

use std::path::{Path, PathBuf};

use crate::rust_source::non_test_lines;
use crate::support::{default_contract, repo};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn src_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(&repo().join("src"), &mut files);
    files.sort();
    files
}

fn is_word_boundary(c: Option<char>) -> bool {
    c.is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'))
}

#[test]
fn no_phase_name_of_the_default_flow_appears_in_src() {
    let contract = default_contract();
    let mut names: Vec<String> = contract
        .states
        .iter()
        .flat_map(|s| [s.id.clone(), s.phase.clone()])
        .collect();
    names.sort();
    names.dedup();
    let mut found = Vec::new();
    for file in src_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in non_test_lines(&text) {
            for name in &names {
                for (at, _) in line.match_indices(name.as_str()) {
                    let before = line[..at].chars().next_back();
                    let after = line[at + name.len()..].chars().next();
                    // Long names count anywhere (`step_05_EXPLORATION` too); short ones
                    // like `Q1` only as whole words.
                    if name.len() >= 4 || (is_word_boundary(before) && is_word_boundary(after)) {
                        found.push(format!("{}:{number}: {name}", file.display()));
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "the engine must stay generic; phase names found in src/:\n{}",
        found.join("\n")
    );
}

#[test]
fn every_module_says_what_it_is_for() {
    let missing: Vec<String> = src_files()
        .into_iter()
        .filter(|f| !std::fs::read_to_string(f).unwrap().starts_with("//!"))
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "files without a `//!` header: {missing:?}"
    );
}

#[test]
fn only_the_cli_prints() {
    let mut found = Vec::new();
    for file in src_files() {
        if file.starts_with(repo().join("src/cli")) || file.ends_with("main.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in non_test_lines(&text) {
            for needle in [
                "println!",
                "eprintln!",
                "print!(",
                "eprint!(",
                "dbg!",
                "todo!",
                "unimplemented!",
            ] {
                if line.contains(needle) {
                    found.push(format!("{}:{number}: {needle}", file.display()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "stdout belongs to the CLI (and later the MCP transport):\n{}",
        found.join("\n")
    );
}

/// The CLI writes through `cli::out` only: `println!` and `eprintln!` panic when the
/// reader of stdout or stderr has gone away (`code-intel lint | head -1`).
#[test]
fn the_cli_prints_through_its_output_module() {
    let mut found = Vec::new();
    for file in src_files() {
        if !file.starts_with(repo().join("src/cli")) && !file.ends_with("main.rs") {
            continue;
        }
        let code = crate::rust_source::code_without_tests(&std::fs::read_to_string(&file).unwrap());
        for (number, line) in code.lines().enumerate() {
            for needle in [
                "println!",
                "eprintln!",
                "print!(",
                "eprint!(",
                "std::io::stderr()",
            ] {
                if line.contains(needle) && !file.ends_with("cli/out.rs") {
                    found.push(format!("{}:{}: {needle}", file.display(), number + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "write with out!, outln!, putln!, err! or errln! (src/cli/out.rs):\n{}",
        found.join("\n")
    );
}

#[test]
fn pest_stays_inside_the_guard_parser() {
    for file in src_files() {
        if file.ends_with("guard/parser.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            !text.contains("pest::"),
            "{} uses pest directly",
            file.display()
        );
    }
}

/// The engine modules: they must stay generic over hosts.
const ENGINE_MODULES: &[&str] = &[
    "contract", "machine", "guard", "lint", "analysis", "session",
];

#[test]
fn no_host_tool_action_fact_or_message_is_named_in_the_engine() {
    let mut names: Vec<String> = Vec::new();
    for registry in code_intel::hosts::all() {
        names.extend(registry.tools.iter().map(|t| (*t).to_string()));
        names.extend(
            registry
                .actions
                .iter()
                .map(|a| a.name)
                .filter(|a| code_intel::contract::registry::BuiltinAction::from_name(a).is_none())
                .map(str::to_string),
        );
        names.extend(registry.facts.iter().map(|(f, _)| (*f).to_string()));
        names.extend(registry.messages.iter().map(|m| m.key.to_string()));
    }
    assert!(
        names.iter().any(|n| n == "git.commit"),
        "the registries are empty"
    );
    let mut found = Vec::new();
    for file in src_files() {
        let relative = file.strip_prefix(repo().join("src")).unwrap();
        let top = relative.components().next().unwrap().as_os_str();
        let top = top.to_string_lossy();
        if !ENGINE_MODULES.contains(&top.trim_end_matches(".rs")) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in non_test_lines(&text) {
            for name in &names {
                for (at, _) in line.match_indices(name.as_str()) {
                    let before = line[..at].chars().next_back();
                    let after = line[at + name.len()..].chars().next();
                    if is_word_boundary(before) && is_word_boundary(after) {
                        found.push(format!("{}:{number}: {name}", relative.display()));
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "host names in the engine (they belong in `server::registry` or `runner::registry`):\n{}",
        found.join("\n")
    );
}
