//! The module layering of `docs/ARCHITECTURE.md`, checked against the imports in `src/`:
//! every `crate::…` and `super::…` path outside `#[cfg(test)]` modules is resolved to the
//! file it names, modules may only use what their row of the dependency table allows, and
//! no two source files import each other through a cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::rust_source::code_without_tests;
use crate::support::repo;

/// One source file: its module path (`["contract", "lower"]`; `[]` for `lib.rs`) and text.
struct SourceFile {
    module: Vec<String>,
    text: String,
}

/// Every library source file under `src/` and the crates' `src/` (the binary's `main.rs`
/// is a client of the library, not part of its layering; a crate's `lib.rs` only declares
/// the modules `code_intel` re-exports under the same names).
fn library_files() -> Vec<SourceFile> {
    fn walk(dir: &Path, module: &[String], out: &mut Vec<SourceFile>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path.file_stem().unwrap().to_string_lossy().to_string();
            if path.is_dir() {
                let mut inner = module.to_vec();
                inner.push(name);
                walk(&path, &inner, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let mut m = module.to_vec();
                match name.as_str() {
                    "mod" => {}
                    "lib" if module.is_empty() => {}
                    "main" if module.is_empty() => continue,
                    _ => m.push(name),
                }
                let text = std::fs::read_to_string(&path).unwrap();
                out.push(SourceFile { module: m, text });
            }
        }
    }
    let mut out = Vec::new();
    for root in crate::support::source_roots() {
        let before = out.len();
        walk(&root, &[], &mut out);
        if root != repo().join("src") {
            // The crate's own `lib.rs`: its module list, not a module of the tree.
            let mut at = before;
            while at < out.len() {
                if out[at].module.is_empty() {
                    out.remove(at);
                } else {
                    at += 1;
                }
            }
        }
    }
    out
}

/// The code of a file outside `#[cfg(test)]` items, literals blanked, with whitespace
/// around `::` removed so `crate :: cli` reads as `crate::cli`.
fn code_of(text: &str) -> String {
    let code = code_without_tests(text);
    let mut out = String::with_capacity(code.len());
    for (i, part) in code.split("::").enumerate() {
        if i > 0 {
            out.truncate(out.trim_end().len());
            out.push_str("::");
            out.push_str(part.trim_start());
        } else {
            out.push_str(part);
        }
    }
    out
}

/// The paths a use tree or path expression starting at `at` names, as segment lists:
/// `a::b::{c, d::e}` gives `[a,b,c]` and `[a,b,d,e]`; `self` inside braces names the
/// prefix itself.
fn paths_at(code: &[char], mut at: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let skip_ws = |at: &mut usize| {
        while *at < code.len() && code[*at].is_whitespace() {
            *at += 1;
        }
    };
    let mut path = prefix.to_vec();
    loop {
        skip_ws(&mut at);
        if at < code.len() && code[at] == '{' {
            at += 1;
            loop {
                skip_ws(&mut at);
                if at >= code.len() {
                    return at;
                }
                if code[at] == '}' {
                    return at + 1;
                }
                if code[at] == ',' {
                    at += 1;
                    continue;
                }
                at = paths_at(code, at, &path, out);
            }
        }
        let start = at;
        while at < code.len() && (code[at].is_alphanumeric() || code[at] == '_') {
            at += 1;
        }
        if start == at {
            out.push(path);
            return at;
        }
        let segment: String = code[start..at].iter().collect();
        if segment == "self" && path.len() == prefix.len() && !prefix.is_empty() {
            // `{self, …}`: the prefix itself.
        } else if segment == "super" {
            path.pop();
        } else {
            path.push(segment);
        }
        if code.get(at) == Some(&':') && code.get(at + 1) == Some(&':') {
            at += 2;
        } else {
            out.push(path);
            return skip_rename(code, at);
        }
    }
}

/// Skips ` as name` after a use path.
fn skip_rename(code: &[char], at: usize) -> usize {
    let mut i = at;
    while i < code.len() && code[i].is_whitespace() {
        i += 1;
    }
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    if code.get(i) == Some(&'a')
        && code.get(i + 1) == Some(&'s')
        && code.get(i + 2).is_some_and(|c| c.is_whitespace())
    {
        i += 2;
        while i < code.len() && code[i].is_whitespace() {
            i += 1;
        }
        while i < code.len() && is_ident(code[i]) {
            i += 1;
        }
        return i;
    }
    at
}

/// The module paths (from the crate root) a file's code refers to through `crate::`,
/// `super::`, `self::` and the names of its own child modules (`lower::lower`).
fn referenced_paths(file: &SourceFile, children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let code: Vec<char> = code_of(&file.text).chars().collect();
    let mut out = Vec::new();
    let mut at = 0;
    while at < code.len() {
        let boundary = at == 0 || !(code[at - 1].is_alphanumeric() || code[at - 1] == '_');
        let word: String = code[at..code.len().min(at + 7)].iter().collect();
        let base: Option<(usize, Vec<String>)> = if !boundary {
            None
        } else if word.starts_with("crate::") {
            Some((7, Vec::new()))
        } else if word.starts_with("super::") {
            let mut m = file.module.clone();
            m.pop();
            Some((7, m))
        } else if word.starts_with("self::") {
            Some((6, file.module.clone()))
        } else {
            children.iter().find_map(|child| {
                let text: String = code[at..code.len().min(at + child.len() + 2)]
                    .iter()
                    .collect();
                (text == format!("{child}::")).then(|| (0, file.module.clone()))
            })
        };
        match base {
            Some((len, prefix)) => {
                let mut found = Vec::new();
                at = paths_at(&code, at + len, &prefix, &mut found);
                out.extend(found);
            }
            None => at += 1,
        }
    }
    out
}

/// The longest prefix of `path` that is a module of the crate.
fn module_of(path: &[String], modules: &BTreeSet<Vec<String>>) -> Vec<String> {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains(p))
        .unwrap_or_default()
}

/// File-level import edges: module → modules it refers to (never itself).
fn import_graph(files: &[SourceFile]) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| f.module.clone()).collect();
    files
        .iter()
        .map(|f| {
            let children: BTreeSet<String> = modules
                .iter()
                .filter(|m| m.len() == f.module.len() + 1 && m.starts_with(&f.module))
                .map(|m| m[f.module.len()].clone())
                .collect();
            let targets = referenced_paths(f, &children)
                .iter()
                .map(|p| module_of(p, &modules))
                .filter(|m| !m.is_empty() && *m != f.module)
                // A module's own parent `mod.rs` is where re-exports live; using a sibling
                // through it is still an edge to the parent.
                .collect();
            (f.module.clone(), targets)
        })
        .collect()
}

/// The allowed-dependency table of `docs/ARCHITECTURE.md` ("Dependencies between
/// modules"): top-level module → the top-level modules it may use.
fn allowed_table(doc: &str) -> BTreeMap<String, BTreeSet<String>> {
    let section = doc
        .split("### Dependencies between modules")
        .nth(1)
        .expect("ARCHITECTURE.md has a dependency table");
    let mut table = BTreeMap::new();
    for line in section.lines().skip_while(|l| !l.starts_with('|')) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 3 || cells[1].starts_with("Module") || cells[1].starts_with("---") {
            continue;
        }
        let names = |cell: &str| -> Vec<String> {
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(|s| s.split("::").next().unwrap_or(s).to_string())
                .collect()
        };
        let uses: BTreeSet<String> = names(cells[2]).into_iter().collect();
        for module in names(cells[1]) {
            table.insert(module, uses.clone());
        }
    }
    table
}

/// Imports between top-level modules that the table does not allow, as readable lines.
fn layering_violations(
    graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
    allowed: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (from, targets) in graph {
        let Some(top) = from.first() else { continue };
        for to in targets {
            let to_top = &to[0];
            if to_top == top {
                continue;
            }
            match allowed.get(top) {
                None => out.push(format!("module `{top}` has no row in the dependency table")),
                Some(uses) if !uses.contains(to_top) => out.push(format!(
                    "`{}` uses `{}`, but `{top}` may only use: {}",
                    from.join("::"),
                    to.join("::"),
                    uses.iter().cloned().collect::<Vec<_>>().join(", ")
                )),
                Some(_) => {}
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Allowances of the table that no import uses: a row that says more than the code does
/// is a map that has drifted.
fn unused_allowances(
    graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
    allowed: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<String> {
    let mut used: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (from, targets) in graph {
        let Some(top) = from.first() else { continue };
        for to in targets {
            used.entry(top.as_str()).or_default().insert(to[0].as_str());
        }
    }
    let mut out = Vec::new();
    for (module, uses) in allowed {
        for name in uses {
            if !used
                .get(module.as_str())
                .is_some_and(|u| u.contains(name.as_str()))
            {
                out.push(format!(
                    "the row of `{module}` allows `{name}`, which no file of `{module}` imports"
                ));
            }
        }
    }
    out
}

/// Every cycle of the graph's strongly connected components, as module lists.
fn cycles(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<String>> {
    // Kosaraju: order by finish time, then collect components on the reversed graph.
    fn finish(
        node: &Vec<String>,
        graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        seen: &mut BTreeSet<Vec<String>>,
        order: &mut Vec<Vec<String>>,
    ) {
        if !seen.insert(node.clone()) {
            return;
        }
        for next in graph.get(node).into_iter().flatten() {
            finish(next, graph, seen, order);
        }
        order.push(node.clone());
    }
    let mut seen = BTreeSet::new();
    let mut order = Vec::new();
    for node in graph.keys() {
        finish(node, graph, &mut seen, &mut order);
    }
    let mut reversed: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (from, targets) in graph {
        for to in targets {
            reversed.entry(to.clone()).or_default().insert(from.clone());
        }
    }
    let mut assigned = BTreeSet::new();
    let mut out = Vec::new();
    for node in order.iter().rev() {
        let mut component = Vec::new();
        finish(node, &reversed, &mut assigned, &mut component);
        if component.len() > 1 {
            let mut names: Vec<String> = component.iter().map(|m| m.join("::")).collect();
            names.sort();
            out.push(names);
        }
    }
    out
}

fn architecture() -> String {
    std::fs::read_to_string(repo().join("docs/ARCHITECTURE.md")).unwrap()
}

#[test]
fn imports_follow_the_documented_layering() {
    let graph = import_graph(&library_files());
    let allowed = allowed_table(&architecture());
    let violations = layering_violations(&graph, &allowed);
    assert!(violations.is_empty(), "{}", violations.join("\n"));
    // The table names real modules only, so it cannot silently drift.
    let unused = unused_allowances(&graph, &allowed);
    assert!(
        unused.is_empty(),
        "docs/ARCHITECTURE.md allows more than the code uses:\n{}",
        unused.join("\n")
    );
    let tops: BTreeSet<&String> = graph.keys().filter_map(|m| m.first()).collect();
    for (module, uses) in &allowed {
        for name in std::iter::once(module).chain(uses) {
            assert!(
                tops.contains(name),
                "the table names `{name}`, which is not a module"
            );
        }
    }
}

#[test]
fn no_source_files_import_each_other_in_a_cycle() {
    let found = cycles(&import_graph(&library_files()));
    assert!(found.is_empty(), "import cycles: {found:?}");
}

/// The checker itself: a forbidden import, an unused allowance and a cycle added to a copy
/// of the real tree are found, so the tests above can fail.
#[test]
fn a_forbidden_import_or_a_cycle_is_reported() {
    let mut files = library_files();
    let machine = files
        .iter_mut()
        .find(|f| f.module == ["machine", "step"])
        .unwrap();
    machine.text = format!(
        "use crate::lint::check;\nuse crate::{{codeintel::root::Root, yaml}};\n{}",
        machine.text
    );
    let graph = import_graph(&files);
    let violations = layering_violations(&graph, &allowed_table(&architecture()));
    assert!(
        violations
            .iter()
            .any(|v| v.starts_with("`machine::step` uses `lint`")),
        "{violations:?}"
    );
    assert!(
        violations
            .iter()
            .any(|v| v.starts_with("`machine::step` uses `codeintel::root`")),
        "{violations:?}"
    );
    assert!(
        violations
            .iter()
            .any(|v| v.starts_with("`machine::step` uses `yaml`")),
        "{violations:?}"
    );

    // An allowance no import uses is reported too.
    let mut allowed = allowed_table(&architecture());
    allowed.get_mut("guard").unwrap().insert("yaml".to_string());
    assert!(
        unused_allowances(&import_graph(&library_files()), &allowed)
            .contains(&"the row of `guard` allows `yaml`, which no file of `guard` imports".into()),
        "an unused allowance goes unreported"
    );

    let contract = files.iter_mut().find(|f| f.module == ["contract"]).unwrap();
    contract.text = format!("use super::machine::step;\n{}", contract.text);
    let found = cycles(&import_graph(&files));
    assert!(
        found.iter().any(
            |c| c.contains(&"contract".to_string()) && c.contains(&"machine::step".to_string())
        ),
        "{found:?}"
    );
}

#[test]
fn use_trees_resolve_to_every_path_they_name() {
    let file = SourceFile {
        module: vec!["contract".into(), "lower".into()],
        text: "use super::{model::{A, B}, self as me};\nuse crate::{guard::{self, Expr}, source::Span};\n\
               // use crate::cli; in a comment\nlet s = \"crate::cli\"; let c = '{';\n\
               fn f() { crate::lint::check(x); expected::describe(y); unexpected::no(); }\n\
               /* use crate::cli; /* nested */ use crate::cli; */ let r = r#\"crate::cli \" {\"#;\n\
               #[cfg(test)]\nmod tests { fn g() { if x { use crate::cli; } } }\n\
               #[cfg(test)]\nuse crate::cli;\nfn after_tests() { crate::yaml::parse(); }\n"
            .into(),
    };
    let children = BTreeSet::from(["expected".to_string()]);
    let mut paths: Vec<String> = referenced_paths(&file, &children)
        .iter()
        .map(|p| p.join("::"))
        .collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            "contract",
            "contract::lower::expected::describe",
            "contract::model::A",
            "contract::model::B",
            "guard",
            "guard::Expr",
            "lint::check",
            "source::Span",
            "yaml::parse"
        ]
    );
}

/// Paths the checker could not follow: the crate or a parent under another name, or a
/// glob that brings a module's names in unqualified. None may appear outside tests, and
/// `lib.rs` only declares modules, so nothing reaches a module through a re-export there.
fn hidden_paths(file: &SourceFile) -> Vec<String> {
    let code = code_of(&file.text);
    let squeezed: String = code.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = Vec::new();
    for pattern in [
        "use crate as",
        "use super as",
        "use self as",
        "extern crate",
        "crate::*",
        "super::*",
        "crate::{*",
        "super::{*",
    ] {
        if squeezed.contains(pattern) {
            out.push(format!("`{}` has `{pattern}`", file.module.join("::")));
        }
    }
    if file.module.is_empty() {
        let libs = workspace_libraries();
        for line in code.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let item = line
                .strip_prefix("pub ")
                .or_else(|| line.strip_prefix("pub(crate) "))
                .unwrap_or(line);
            // A module of a workspace crate, re-exported under its own name.
            let reexports = item.strip_prefix("use ").is_some_and(|path| {
                let mut parts = path.trim_end_matches(';').split("::");
                let (lib, module, rest) = (parts.next(), parts.next(), parts.next());
                lib.is_some_and(|l| libs.contains(l))
                    && module.is_some_and(|m| m.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
                    && rest.is_none()
            });
            if !item.starts_with("mod ") && !reexports {
                out.push(format!("lib.rs does more than declare modules: `{line}`"));
            }
        }
    }
    out
}

/// The library names of the workspace's crates (`[lib] name` in `crates/*/Cargo.toml`).
fn workspace_libraries() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for manifest in crate::support::source_roots()
        .iter()
        .filter_map(|src| src.parent())
        .map(|dir| dir.join("Cargo.toml"))
    {
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let lib = text.split("[lib]").nth(1).unwrap_or_default();
        if let Some(name) = lib
            .lines()
            .find_map(|l| l.trim().strip_prefix("name = "))
            .map(|n| n.trim_matches('"').to_string())
        {
            names.insert(name);
        }
    }
    names
}

#[test]
fn no_path_hides_from_the_checker() {
    let found: Vec<String> = library_files().iter().flat_map(hidden_paths).collect();
    assert!(found.is_empty(), "{}", found.join("\n"));
    for text in [
        "use crate as root;\nfn f() { root::cli::run(); }\n",
        "extern crate self as me;\n",
        "use crate :: * ;\n",
        "use super::{*, x};\n",
    ] {
        let file = SourceFile {
            module: vec!["machine".into()],
            text: text.into(),
        };
        assert!(!hidden_paths(&file).is_empty(), "{text}");
    }
    let lib = SourceFile {
        module: vec![],
        text: "//! Doc.\npub mod a;\nmod b;\npub use a::cli;\n".into(),
    };
    assert_eq!(hidden_paths(&lib).len(), 1);
}

/// The places a Rust source names `contract::raw` (the YAML mirror types), as
/// `line: text`: a path through it (`crate::contract::raw::StateKind`, `contract :: raw`),
/// `raw` in a use tree of `contract` (`contract::{raw, model}`), or a glob of `contract`,
/// which brings `raw` in unnamed. Comments, strings and test items count as written
/// (blanked literals aside): tests reach the model the same way.
fn names_contract_raw(text: &str) -> Vec<String> {
    let code = crate::rust_source::blank_literals(text);
    let mut squeezed = String::with_capacity(code.len());
    let mut lines = Vec::with_capacity(code.len());
    let mut line = 1;
    for c in code.chars() {
        if c == '\n' {
            line += 1;
        }
        if !c.is_whitespace() {
            squeezed.push(c);
            lines.push(line);
        }
    }
    let word_before = |at: usize| {
        squeezed[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    };
    let mut found = Vec::new();
    for (at, _) in squeezed.match_indices("contract::") {
        if word_before(at) {
            continue;
        }
        let rest = &squeezed[at + "contract::".len()..];
        let named = if rest.starts_with('*') {
            true
        } else if let Some(tree) = rest.strip_prefix('{') {
            // The top-level items of the use tree.
            let mut depth = 0;
            let mut items = vec![String::new()];
            for c in tree.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => items.push(String::new()),
                    _ => {}
                }
                if (depth > 0 || !matches!(c, ',' | '{'))
                    && let Some(item) = items.last_mut()
                {
                    item.push(c);
                }
            }
            items.iter().any(|item| {
                item == "*"
                    || item == "raw"
                    || item.starts_with("raw::")
                    || item.starts_with("rawas")
            })
        } else {
            rest.starts_with("raw::")
                || rest.starts_with("raw;")
                || rest.starts_with("rawas")
                || rest.starts_with("raw,")
                || rest.starts_with("raw}")
        };
        if named {
            let end = squeezed[at..]
                .find([';', '\n'])
                .map_or(squeezed.len(), |e| at + e);
            found.push(format!("{}: {}", lines[at], &squeezed[at..end]));
        }
    }
    found
}

#[test]
fn only_contract_names_its_raw_yaml_types() {
    fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for path in entries.map(|e| e.unwrap().path()) {
            if path.is_dir() {
                // Installed packages (`node_modules`) and build output hold no sources of ours.
                if !path.ends_with("node_modules") && !path.ends_with("target") {
                    rust_files(&path, out);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let root = repo();
    let mut files = Vec::new();
    for dir in ["src", "crates", "tests", "benches", "examples"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 100, "the sources were not found");
    let contract = root.join("crates/engine/src/contract");
    let mut named = Vec::new();
    for path in files.iter().filter(|p| !p.starts_with(&contract)) {
        let text = std::fs::read_to_string(path).unwrap();
        for place in names_contract_raw(&text) {
            let shown = path.strip_prefix(&root).unwrap_or(path).display();
            named.push(format!("{shown}:{place}"));
        }
    }
    assert!(
        named.is_empty(),
        "outside `contract`, name the model (`contract::model`), not the YAML mirror types:\n{}",
        named.join("\n")
    );
    // The checker itself, on samples: every way of naming `raw` is found, and nothing else.
    for sample in [
        "use crate::contract::raw::StateKind;\n",
        "use code_intel::contract::raw::{Outcome, StateKind};\n",
        "fn f() { crate::contract :: raw :: Outcome::as_str(o); }\n",
        "use crate::contract::{self, raw};\n",
        "use crate::contract::{model::State, raw::StateKind};\n",
        "use crate::contract::{raw as yaml};\n",
        "use crate::contract::raw;\n",
        "use crate::contract::*;\n",
        "use crate::contract::{\n    model,\n    raw::{Outcome, StateKind},\n};\n",
    ] {
        assert_eq!(names_contract_raw(sample).len(), 1, "{sample}");
    }
    for sample in [
        "use crate::contract::model::{Outcome, StateKind};\n",
        "use crate::scenario::raw::RawScenarioFile;\nuse raw::X;\n",
        "use crate::contract::{self, Contract, model::raw_name};\n",
        "// the YAML mirror types are contract::raw\nlet s = \"contract::raw::StateKind\";\n",
        "use crate::subcontract::raw::X;\n",
    ] {
        assert_eq!(names_contract_raw(sample), Vec::<String>::new(), "{sample}");
    }
}
