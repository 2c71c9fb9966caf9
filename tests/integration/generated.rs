//! Generated files are checked in and must match what the code generates.
//! `UPDATE_GENERATED=1 cargo test` rewrites them; review the diff afterwards.

use crate::support::repo;

fn check(path: &str, generated: &str) {
    let file = repo().join(path);
    if std::env::var_os("UPDATE_GENERATED").is_some() {
        std::fs::write(&file, generated).unwrap();
        return;
    }
    let current = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        current == generated,
        "{path} is stale: run `UPDATE_GENERATED=1 cargo test` and commit the result"
    );
}

#[test]
fn contract_schema_is_fresh() {
    check(
        "schemas/contract.schema.json",
        &code_intel::contract::generated_schema().expect("the schema encodes"),
    );
}

#[test]
fn scenario_schema_is_fresh() {
    check(
        "schemas/scenario.schema.json",
        &code_intel::scenario::generated_schema().expect("the schema encodes"),
    );
}

#[test]
fn task_schema_is_fresh() {
    check(
        "schemas/task.schema.json",
        &code_intel::runner::task_schema().expect("the schema encodes"),
    );
}

#[test]
fn plan_patch_schema_is_fresh() {
    check(
        "schemas/multiverse/plan_patch.schema.json",
        &code_intel::multiverse::generated_plan_patch_schema().expect("the schema encodes"),
    );
}

#[test]
fn lint_docs_are_fresh() {
    check("docs/lints.md", &code_intel::diagnostic::codes::markdown());
}

#[test]
fn host_docs_are_fresh() {
    check("docs/hosts.md", &code_intel::hosts::markdown());
}

/// The scenario files next to the shipped contracts pass (`code-intel test contracts/`)
/// and cover every rule of every shipped contract.
#[test]
fn every_shipped_scenario_passes() {
    let o = crate::support::code_intel()
        .args(["test", "contracts/", "--coverage"])
        .current_dir(repo())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("test result: ok."), "{stdout}");
    // Every transition and limit redirect of the shipped contracts is exercised.
    for contract in [
        "builtin",
        "contracts/agent_runner_task.yml",
        "contracts/multiverse_task.yml",
        "contracts/multiverse_chat.yml",
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(&format!("coverage of {contract}: "))
                    && l.ends_with("(100.0 %)")),
            "{contract}: {stdout}"
        );
    }
}

#[test]
fn every_shipped_contract_lints_clean() {
    for entry in std::fs::read_dir(repo().join("contracts")).unwrap() {
        let path = entry.unwrap().path();
        if code_intel::scenario::is_scenario_file(&path) {
            continue;
        }
        let relative = format!("contracts/{}", path.file_name().unwrap().to_string_lossy());
        let text = std::fs::read_to_string(&path).unwrap();
        let mut sources = code_intel::source::Sources::default();
        let id = sources.add(relative.clone(), text);
        let loaded = code_intel::lint::load_and_lint(&mut sources, id, &code_intel::hosts::all());
        assert!(
            loaded.diagnostics.is_empty(),
            "{relative}:\n{}",
            code_intel::diagnostic::render::human(&sources, &loaded.diagnostics)
        );
    }
}
