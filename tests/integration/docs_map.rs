//! The maps of the code stay true: `docs/ARCHITECTURE.md` names every top-level module in
//! its code map and every binary among its entry points, and the integration-test binary's
//! `//!` describes every module it has. (The dependency table is checked by `layering`.)

use std::collections::BTreeSet;

use crate::support::repo;

fn architecture() -> String {
    std::fs::read_to_string(repo().join("docs/ARCHITECTURE.md")).unwrap()
}

/// The names written in backticks in the `###` headings of the document's code map.
fn code_map_modules(doc: &str) -> BTreeSet<String> {
    let map = doc
        .split("## Code Map")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("ARCHITECTURE.md has a Code Map section");
    map.lines()
        .filter(|l| l.starts_with("### "))
        .flat_map(|l| l.split('`').skip(1).step_by(2).map(str::to_string))
        .collect()
}

/// The top-level modules: `src/<name>.rs` and `src/<name>/`, and the same in each crate's
/// `src/` (re-exported by `code_intel` under those names).
fn top_level_modules() -> BTreeSet<String> {
    crate::support::source_roots()
        .into_iter()
        .flat_map(|root| std::fs::read_dir(root).unwrap())
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let name = p.file_stem()?.to_string_lossy().to_string();
            let module = p.is_dir() || p.extension().is_some_and(|e| e == "rs");
            (module && !["lib", "main", "bin"].contains(&name.as_str())).then_some(name)
        })
        .collect()
}

#[test]
fn the_code_map_names_every_top_level_module_and_no_other() {
    let listed = code_map_modules(&architecture());
    let modules = top_level_modules();
    let missing: Vec<_> = modules.difference(&listed).collect();
    let gone: Vec<_> = listed.difference(&modules).collect();
    assert!(
        missing.is_empty() && gone.is_empty(),
        "docs/ARCHITECTURE.md's code map misses {missing:?} and names {gone:?}, which do not exist"
    );
}

#[test]
fn the_entry_points_name_every_binary() {
    let doc = architecture();
    let entry = doc
        .split("## Entry Points")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("ARCHITECTURE.md has an Entry Points section");
    let mut binaries = vec!["src/main.rs".to_string()];
    for e in std::fs::read_dir(repo().join("src/bin")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().to_string();
        binaries.push(format!("src/bin/{name}"));
    }
    let missing: Vec<_> = binaries
        .iter()
        .filter(|b| !entry.contains(b.as_str()))
        .collect();
    assert!(missing.is_empty(), "entry points miss {missing:?}");
}

#[test]
fn the_test_binary_describes_every_module() {
    let main = std::fs::read_to_string(repo().join("tests/integration/main.rs")).unwrap();
    let doc: String = main
        .lines()
        .filter(|l| l.starts_with("//!"))
        .collect::<Vec<_>>()
        .join("\n");
    let missing: Vec<&str> = main
        .lines()
        .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
        .filter(|m| !doc.contains(&format!("`{m}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "tests/integration/main.rs's //! does not describe {missing:?}"
    );
}

#[test]
fn a_module_missing_from_the_code_map_is_noticed() {
    let doc = architecture().replace("### `cli`", "### the command line");
    assert!(!code_map_modules(&doc).contains("cli"));
    assert!(top_level_modules().contains("cli"));
}
