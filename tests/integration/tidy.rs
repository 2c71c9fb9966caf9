//! Tidy checks over the source tree: the engine stays generic and the code keeps its habits.

use std::path::{Path, PathBuf};

use crate::rust_source::non_test_lines;
use crate::support::{default_contract, in_source_root, repo, source_roots};

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
    for root in source_roots() {
        rust_files(&root, &mut files);
    }
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

/// Multiverse's hosts decide no transition of their contracts (the task lifecycle, the
/// chat turn), so no state of those contracts is written as a string in `src/multiverse`
/// outside tests. The execution states (`IDLE`, `RUNNING`, `PAUSED`) are the model's own
/// values, which the chat turn's payloads carry, so they are not counted.
#[test]
fn no_state_of_the_multiverse_contracts_is_named_in_its_hosts() {
    let mut names = std::collections::BTreeSet::new();
    for file in [
        "contracts/multiverse_task.yml",
        "contracts/multiverse_chat.yml",
    ] {
        let text = std::fs::read_to_string(repo().join(file)).unwrap();
        let mut sources = code_intel::source::Sources::default();
        let id = sources.add(file, text);
        let loaded = code_intel::lint::load_and_lint(&mut sources, id, &code_intel::hosts::all());
        let contract = loaded.contract.expect(file);
        names.extend(contract.states.iter().map(|s| s.id.clone()));
    }
    assert!(names.contains("RETRY_WAIT") && names.contains("PLANNING"));
    for execution in ["IDLE", "RUNNING", "PAUSED"] {
        names.remove(execution);
    }
    let mut files = Vec::new();
    rust_files(&repo().join("src/multiverse"), &mut files);
    files.push(repo().join("src/bin/multiverse.rs"));
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in non_test_lines(&text) {
            for name in &names {
                if line.contains(&format!("\"{name}\"")) {
                    found.push(format!("{}:{number}: {name}", file.display()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "a multiverse host names a state of its contract:\n{}",
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

/// libgit2 is reached through the `git` module only, so every host asks git the same way
/// (one status query, one open, one set of error keys) and a third host adds no copy.
#[test]
fn git2_stays_inside_the_git_module() {
    let git = repo().join("src/git");
    let found: Vec<String> = src_files()
        .into_iter()
        .filter(|file| !file.starts_with(&git))
        .filter(|file| std::fs::read_to_string(file).unwrap().contains("git2::"))
        .map(|file| file.display().to_string())
        .collect();
    assert!(found.is_empty(), "libgit2 used outside `git`: {found:?}");
}

/// Lines of `files` (outside `#[cfg(test)]` items, comments and literals blanked) that
/// contain any of `needles`, as `path:line`.
fn lines_naming(files: &[PathBuf], needles: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        let code = crate::rust_source::code_without_tests(&text);
        for (i, line) in code.lines().enumerate() {
            if needles.iter().any(|n| line.contains(n)) {
                let rel = file.strip_prefix(repo()).unwrap_or(file);
                found.push(format!("{}:{}", rel.display(), i + 1));
            }
        }
    }
    found
}

/// Ways of reading the process environment.
const ENVIRONMENT_READS: &[&str] = &["env::var(", "env::var_os(", "env::vars(", "env::vars_os("];

#[test]
fn only_the_environment_module_reads_the_process_environment() {
    let files: Vec<PathBuf> = src_files()
        .into_iter()
        .filter(|f| !f.ends_with("src/environment.rs"))
        .collect();
    let found = lines_naming(&files, ENVIRONMENT_READS);
    assert!(
        found.is_empty(),
        "the process environment read outside `environment` (take an `&Environment`): {found:?}"
    );
    // And only the entry points take the process's: everything below is handed one.
    let entry = |f: &Path| {
        let rel = in_source_root(f).unwrap();
        rel.starts_with("bin") || rel.starts_with("cli") || rel == Path::new("main.rs")
    };
    let files: Vec<PathBuf> = src_files()
        .into_iter()
        .filter(|f| !entry(f) && !f.ends_with("src/environment.rs"))
        .collect();
    let found = lines_naming(&files, &["of_process("]);
    assert!(
        found.is_empty(),
        "Environment::of_process called below the entry points: {found:?}"
    );
}

#[test]
fn a_read_of_the_process_environment_is_reported() {
    let dir = crate::support::TempDir::new("tidy-env");
    let file = dir.path().join("lib.rs");
    std::fs::write(
        &file,
        "//! x\nfn a() { let _ = std::env::var_os(\"HOME\"); }\n// std::env::var(\"X\")\n#[cfg(test)]\nmod tests { fn b() { std::env::var(\"Y\"); } }\n",
    )
    .unwrap();
    let found = lines_naming(&[file], ENVIRONMENT_READS);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].ends_with("lib.rs:2"), "{found:?}");
}

#[test]
fn tests_start_processes_only_through_the_sealed_door() {
    let mut files = Vec::new();
    rust_files(&repo().join("tests/integration"), &mut files);
    files.retain(|f| !f.ends_with("sealed.rs") && !f.ends_with("tidy.rs"));
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let code = crate::rust_source::blank_literals(&text);
        for (i, line) in code.lines().enumerate() {
            if line.contains("Command::new(") {
                let rel = file.strip_prefix(repo()).unwrap_or(file);
                found.push(format!("{}:{}", rel.display(), i + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a test starts a process outside `sealed::command` (the user's environment leaks in): {found:?}"
    );
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
                .filter(|a| code_intel::contract::BuiltinAction::from_name(a).is_none())
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
        let relative = in_source_root(&file).unwrap();
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

/// The longest a function may be, in lines (issue 18).
const MAX_FUNCTION_LINES: usize = 150;

/// The most code lines a file may have outside its tests (issue 18).
const MAX_FILE_CODE_LINES: usize = 900;

/// The functions allowed over [`MAX_FUNCTION_LINES`]: data tables only, each with why. A
/// name is the module path and the function's name (a method's type is left out).
const LONG_FUNCTIONS_ALLOWED: &[(&str, &str)] = &[(
    "server::registry::registry",
    "the code-intel host's registry: one entry per action, fact and message",
)];

/// The files allowed over [`MAX_FILE_CODE_LINES`], each with why.
const LONG_FILES_ALLOWED: &[(&str, &str)] = &[];

/// A function found in a file: its name, the line of its `fn` and how many lines it takes.
#[derive(Debug, PartialEq)]
struct FunctionLength {
    name: String,
    line: usize,
    lines: usize,
}

/// The length of every function with a body in `code` (blanked: see
/// [`crate::rust_source::code_without_tests`]): from the line of its `fn` keyword to the
/// line of its closing brace, both included. A function inside another is measured on its
/// own and counts in the outer one's lines too; a declaration without a body (`fn f();`
/// in a trait) and a function pointer type (`fn(u8) -> u8`) are not functions here.
fn function_lengths(code: &str) -> Vec<FunctionLength> {
    let chars: Vec<char> = code.chars().collect();
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let line_of = |at: usize| chars[..at].iter().filter(|c| **c == '\n').count() + 1;
    let mut out = Vec::new();
    for at in 0..chars.len().saturating_sub(2) {
        let keyword = chars[at] == 'f'
            && chars[at + 1] == 'n'
            && chars[at + 2].is_whitespace()
            && (at == 0 || !is_ident(chars[at - 1]));
        if !keyword {
            continue;
        }
        let mut i = at + 2;
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        let name: String = chars[i..].iter().take_while(|c| is_ident(**c)).collect();
        if name.is_empty() {
            continue;
        }
        // The body is the first `{` outside the signature's parentheses and brackets; a
        // `;` or a `}` first means there is none.
        let mut depth = 0i32;
        let mut body = None;
        while i < chars.len() {
            match chars[i] {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                '{' if depth == 0 => {
                    body = Some(i);
                    break;
                }
                ';' | '}' if depth == 0 => break,
                _ => {}
            }
            i += 1;
        }
        let Some(open) = body else { continue };
        let mut depth = 0;
        let mut close = None;
        for (k, c) in chars.iter().enumerate().skip(open) {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(k);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(close) = close else { continue };
        let line = line_of(at);
        out.push(FunctionLength {
            name,
            line,
            lines: line_of(close) - line + 1,
        });
    }
    out
}

/// The code lines of a file: its non-blank lines once comments and literals are blanked
/// and its `#[cfg(test)]` items removed ([`crate::rust_source::code_without_tests`]).
fn code_lines(text: &str) -> usize {
    crate::rust_source::code_without_tests(text)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count()
}

/// A source file's module path: `src/server/core/mod.rs` is `server::core`.
fn module_path(file: &Path) -> String {
    let relative = in_source_root(file).unwrap();
    let relative = relative.as_path();
    let mut parts: Vec<String> = relative
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts.join("::")
}

#[test]
fn the_function_measure_counts_from_the_fn_line_to_the_closing_brace() {
    let function = |name: &str, lines: usize| {
        let body = "    let s = \"}\"; // {\n".repeat(lines - 5);
        format!(
            "/// A doc line is not counted.\npub fn {name}(a: [u8; 2]) -> Vec<u8>\nwhere\n    u8: Copy,\n{{\n{body}}}\n"
        )
    };
    // The signature's lines and the braces count: a function of n lines has n - 5 in its
    // body here. Braces in strings and comments count for nothing.
    let text = format!(
        "{}{}trait T {{ fn declared(&self); }}\nstruct S {{ f: fn(u8) -> u8 }}\nimpl S {{ fn short(&self) {{}} }}\n",
        function("at_the_limit", MAX_FUNCTION_LINES),
        function("over_it", MAX_FUNCTION_LINES + 1),
    );
    let lengths = function_lengths(&crate::rust_source::code_without_tests(&text));
    let names: Vec<(&str, usize)> = lengths.iter().map(|f| (f.name.as_str(), f.lines)).collect();
    assert_eq!(
        names,
        [
            ("at_the_limit", MAX_FUNCTION_LINES),
            ("over_it", MAX_FUNCTION_LINES + 1),
            ("short", 1)
        ]
    );
    let over: Vec<&str> = lengths
        .iter()
        .filter(|f| f.lines > MAX_FUNCTION_LINES)
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(over, ["over_it"]);
    // Comments, blank lines and test items are not code lines.
    let file = "//! A module.\nfn a() {}\n\n/* two\nlines */\n#[cfg(test)]\nmod tests {\n    fn b() {}\n}\nfn c() {}\n";
    assert_eq!(code_lines(file), 2);
}

/// No function in `src/` is longer than [`MAX_FUNCTION_LINES`], measured by
/// [`function_lengths`] on the code without tests: from the line of the `fn` keyword to
/// the line of the closing brace, both included, comments and blank lines inside
/// counted. Data tables are allowed by name in [`LONG_FUNCTIONS_ALLOWED`], and an entry
/// no longer needed must go.
#[test]
fn no_function_is_longer_than_150_lines() {
    let mut over = Vec::new();
    let mut allowed_and_long = Vec::new();
    for file in src_files() {
        let code = crate::rust_source::code_without_tests(&std::fs::read_to_string(&file).unwrap());
        for f in function_lengths(&code) {
            if f.lines <= MAX_FUNCTION_LINES {
                continue;
            }
            let name = format!("{}::{}", module_path(&file), f.name);
            if LONG_FUNCTIONS_ALLOWED.iter().any(|(n, _)| *n == name) {
                allowed_and_long.push(name);
            } else {
                let relative = file.strip_prefix(repo()).unwrap().display().to_string();
                over.push(format!("{relative}:{}: {name} ({} lines)", f.line, f.lines));
            }
        }
    }
    let stale: Vec<&str> = LONG_FUNCTIONS_ALLOWED
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| !allowed_and_long.iter().any(|a| a == n))
        .collect();
    assert!(
        over.is_empty() && stale.is_empty(),
        "{} functions over {MAX_FUNCTION_LINES} lines (split them where their comments put headers):\n{}\n\
         {} allowed as long that are not (remove them from LONG_FUNCTIONS_ALLOWED): {stale:?}",
        over.len(),
        over.join("\n"),
        stale.len(),
    );
}

/// No file in `src/` has more than [`MAX_FILE_CODE_LINES`] code lines, counted by
/// [`code_lines`]: the lines that are not blank once comments and string and char
/// literals are blanked and `#[cfg(test)]` items removed. Files allowed by name in
/// [`LONG_FILES_ALLOWED`]; an entry no longer needed must go.
#[test]
fn no_file_has_more_than_900_lines_of_code_outside_tests() {
    let mut over = Vec::new();
    let mut allowed_and_long = Vec::new();
    for file in src_files() {
        let lines = code_lines(&std::fs::read_to_string(&file).unwrap());
        if lines <= MAX_FILE_CODE_LINES {
            continue;
        }
        let relative = in_source_root(&file).unwrap();
        let relative = relative.to_string_lossy().replace('\\', "/");
        if LONG_FILES_ALLOWED.iter().any(|(f, _)| *f == relative) {
            allowed_and_long.push(relative);
        } else {
            over.push(format!("src/{relative}: {lines} code lines"));
        }
    }
    let stale: Vec<&str> = LONG_FILES_ALLOWED
        .iter()
        .map(|(f, _)| *f)
        .filter(|f| !allowed_and_long.iter().any(|a| a == f))
        .collect();
    assert!(
        over.is_empty() && stale.is_empty(),
        "{} files over {MAX_FILE_CODE_LINES} code lines outside tests (split them where their comments put headers):\n{}\n\
         {} allowed as long that are not (remove them from LONG_FILES_ALLOWED): {stale:?}",
        over.len(),
        over.join("\n"),
        stale.len(),
    );
}

// ---- Typed errors to the edge: no `pub` function answers with a `String` error. ----

/// The `pub` functions (any `pub(…)` too) and `pub` type aliases of a file's non-test
/// code whose error type is `String`: `Result<T, String>` written on any number of lines,
/// or an alias of it. Each as `line: name`.
fn string_errors(text: &str) -> Vec<String> {
    let code = crate::rust_source::code_without_tests(text);
    let chars: Vec<char> = code.chars().collect();
    let line_of = |at: usize| chars[..at].iter().filter(|c| **c == '\n').count() + 1;
    let mut found = Vec::new();
    // Aliases first: a function may hide its `String` error behind one.
    let mut aliases = Vec::new();
    for at in keyword_positions(&chars, "type") {
        let Some((name, rest)) = item_name(&chars, at + 4) else {
            continue;
        };
        let Some(eq) = (rest..chars.len()).find(|&k| chars[k] == '=' || chars[k] == ';') else {
            continue;
        };
        if chars[eq] != '=' {
            continue;
        }
        let end = (eq..chars.len())
            .find(|&k| chars[k] == ';')
            .unwrap_or(chars.len());
        let ty: String = chars[eq + 1..end].iter().collect();
        if is_string_result(&ty, &[]) {
            if is_pub(&chars, at) {
                found.push(format!("{}: type {name}", line_of(at)));
            }
            aliases.push(name);
        }
    }
    for at in keyword_positions(&chars, "fn") {
        if !is_pub(&chars, at) {
            continue;
        }
        let Some((name, rest)) = item_name(&chars, at + 2) else {
            continue;
        };
        // The signature runs to the body's `{` or the `;` of a declaration, outside
        // brackets (a tuple or an array type may hold neither, but may hold a comma).
        let mut depth = 0i32;
        let mut end = rest;
        while end < chars.len() {
            match chars[end] {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                '{' | ';' if depth <= 0 => break,
                _ => {}
            }
            end += 1;
        }
        let signature: String = chars[rest..end].iter().collect();
        // The return type: after the last `->` outside the parameter list, up to `where`.
        let mut depth = 0i32;
        let mut arrow = None;
        let sig: Vec<char> = signature.chars().collect();
        for k in 0..sig.len() {
            match sig[k] {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                '-' if depth == 0 && sig.get(k + 1) == Some(&'>') => {
                    arrow = Some(k + 2);
                    break;
                }
                _ => {}
            }
        }
        let Some(arrow) = arrow else {
            continue;
        };
        let ret: String = sig[arrow..].iter().collect();
        let ret = match ret.find(" where ").or_else(|| ret.find("\nwhere")) {
            Some(w) => ret[..w].to_string(),
            None => ret,
        };
        if is_string_result(&ret, &aliases) {
            found.push(format!("{}: fn {name}", line_of(at)));
        }
    }
    found.sort();
    found
}

/// Where `word` stands as a whole word.
fn keyword_positions(chars: &[char], word: &str) -> Vec<usize> {
    let w: Vec<char> = word.chars().collect();
    let ident = |c: Option<&char>| c.is_some_and(|c| c.is_alphanumeric() || *c == '_');
    (0..chars.len().saturating_sub(w.len() - 1))
        .filter(|&i| {
            chars[i..i + w.len()] == w[..]
                && !ident(i.checked_sub(1).and_then(|p| chars.get(p)))
                && !ident(chars.get(i + w.len()))
        })
        .collect()
}

/// The identifier after `from` (skipping whitespace) and where it ends.
fn item_name(chars: &[char], from: usize) -> Option<(String, usize)> {
    let start = (from..chars.len()).find(|&k| !chars[k].is_whitespace())?;
    let end = (start..chars.len())
        .find(|&k| !(chars[k].is_alphanumeric() || chars[k] == '_'))
        .unwrap_or(chars.len());
    (end > start).then(|| (chars[start..end].iter().collect(), end))
}

/// Whether the item keyword at `at` is preceded by a `pub` visibility (through `const`,
/// `async`, `unsafe` and `extern "…"`).
fn is_pub(chars: &[char], at: usize) -> bool {
    let mut k = at;
    loop {
        while k > 0 && chars[k - 1].is_whitespace() {
            k -= 1;
        }
        if k > 0 && chars[k - 1] == ')' {
            // `pub(crate)`, `pub(super)`, `pub(in path)`.
            let Some(open) = (0..k - 1).rev().find(|&p| chars[p] == '(') else {
                return false;
            };
            k = open;
            continue;
        }
        let end = k;
        while k > 0 && (chars[k - 1].is_alphanumeric() || chars[k - 1] == '_') {
            k -= 1;
        }
        let word: String = chars[k..end].iter().collect();
        match word.as_str() {
            "pub" => return true,
            "const" | "async" | "unsafe" | "extern" => continue,
            _ => return false,
        }
    }
}

/// Whether `ty` is `Result<_, String>` (any path to either), or one of `aliases`.
fn is_string_result(ty: &str, aliases: &[String]) -> bool {
    let ty: String = ty.chars().filter(|c| !c.is_whitespace()).collect();
    let ty = ty.trim_end_matches(',');
    // An alias is named with or without its own generic arguments.
    let head = ty.split('<').next().unwrap_or(ty);
    if aliases.iter().any(|a| head == a) {
        return true;
    }
    let Some(open) = ty.find('<') else {
        return false;
    };
    let outer = &ty[..open];
    if !(outer == "Result" || outer.ends_with("::Result") && !outer.ends_with("io::Result")) {
        return false;
    }
    let Some(inner) = ty[open + 1..].strip_suffix('>') else {
        return false;
    };
    let mut depth = 0;
    let mut args = vec![String::new()];
    for c in inner.chars() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                args.push(String::new());
                continue;
            }
            _ => {}
        }
        if let Some(last) = args.last_mut() {
            last.push(c);
        }
    }
    args.retain(|a| !a.is_empty());
    args.len() == 2 && matches!(args[1].as_str(), "String" | "std::string::String")
}

#[test]
fn no_pub_fn_answers_with_a_string_error() {
    let root = repo();
    let mut found = Vec::new();
    for file in src_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let relative = file.strip_prefix(&root).unwrap().display().to_string();
        for f in string_errors(&text) {
            found.push(format!("{relative}:{f}"));
        }
    }
    assert!(
        found.is_empty(),
        "a `pub` function whose error is a `String` (give it an error type with the cases, a `Display` and `std::error::Error`):\n{}",
        found.join("\n")
    );
}

/// The checker itself: each way of writing a `String` error is found, and what is not
/// one (a private function, a `String` success, test code) is not.
#[test]
fn a_string_error_in_a_pub_fn_is_reported() {
    let sample = "\
pub fn one() -> Result<u8, String> { Ok(1) }
pub(crate) async fn two(
    a: (u8, u8),
) -> std::result::Result<
    Vec<u8>,
    String,
> {
    todo()
}
pub type Answer = Result<Value, String>;
type Hidden<T> = Result<T, String>;
pub(super) fn three() -> Answer { x() }
pub fn four() -> Hidden<u8> where u8: Copy { x() }
impl A {
    pub fn five(&self) -> Result<(), String>;
}
fn private() -> Result<u8, String> { Ok(1) }
pub fn success() -> Result<String, Error> { x() }
pub fn io() -> io::Result<String> { x() }
pub fn text() -> String { \"Result<u8, String>\".into() }
#[cfg(test)]
pub fn in_tests() -> Result<u8, String> { Ok(1) }
";
    let found = string_errors(sample);
    let mut names: Vec<&str> = found
        .iter()
        .map(|f| f.split(": ").nth(1).unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "fn five",
            "fn four",
            "fn one",
            "fn three",
            "fn two",
            "type Answer"
        ],
        "{found:?}"
    );
    assert!(found.contains(&"2: fn two".to_string()), "{found:?}");
}

// ---- Only the binaries and the CLI write to the terminal. ----

/// The files outside the binaries and `src/cli/` whose stream is the product itself.
const STREAM_IS_THE_PRODUCT: &[(&str, &str)] = &[(
    "src/server/service.rs",
    "the MCP server's stdio transport: stdout carries the protocol, nothing else",
)];

/// Direct uses of the process's stdout or stderr in a file's non-test code
/// (`std::io::stdout()`, `io::stderr()`, `tokio::io::stdout()`, an imported `stderr()`,
/// `.with_writer(std::io::stderr)`), each as `line: what`.
fn terminal_writes(text: &str) -> Vec<String> {
    let code = crate::rust_source::code_without_tests(text);
    let mut found = Vec::new();
    for (number, line) in code.lines().enumerate() {
        for stream in ["stdout", "stderr"] {
            for (at, _) in line.match_indices(stream) {
                let before = &line[..at];
                let after = line[at + stream.len()..].trim_start();
                let next = line[at + stream.len()..].chars().next();
                if !is_word_boundary(next) {
                    continue;
                }
                let by_path = before.ends_with("io::");
                // A bare call of an imported `stdout`/`stderr`; a method (`.stdout(…)` of
                // a `Command`) or a field (`output.stderr`) is not the process's stream.
                let called = after.starts_with("()")
                    && is_word_boundary(before.chars().next_back())
                    && !before.trim_end().ends_with('.');
                if by_path || called {
                    found.push(format!("{}: {stream}", number + 1));
                }
            }
        }
    }
    found
}

#[test]
fn only_the_binaries_and_the_cli_write_to_stdout_or_stderr() {
    let root = repo();
    let mut found = Vec::new();
    let mut allowed_used = Vec::new();
    for file in src_files() {
        let relative = file
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .to_string();
        if relative == "src/main.rs"
            || relative.starts_with("src/bin/")
            || relative.starts_with("src/cli/")
        {
            continue;
        }
        let writes = terminal_writes(&std::fs::read_to_string(&file).unwrap());
        if STREAM_IS_THE_PRODUCT.iter().any(|(f, _)| *f == relative) {
            if !writes.is_empty() {
                allowed_used.push(relative);
            }
            continue;
        }
        for w in writes {
            found.push(format!("{relative}:{w}"));
        }
    }
    assert!(
        found.is_empty(),
        "the terminal belongs to the binaries and the CLI: return the text or a typed outcome, or take a writer:\n{}",
        found.join("\n")
    );
    // An allowance no file needs any more is a hole for the next write: remove it.
    for (file, why) in STREAM_IS_THE_PRODUCT {
        assert!(
            allowed_used.iter().any(|f| f == file),
            "{file} is allowed to write to the terminal ({why}) but no longer does"
        );
    }
}

/// The checker itself: every way of reaching the process's streams is found, and the
/// look-alikes (a child's piped output, a field, test code, text) are not.
#[test]
fn a_write_to_stdout_or_stderr_outside_the_binaries_is_reported() {
    let sample = "\
use std::io::{stderr, Write};
fn a() { let _ = writeln!(std::io::stderr().lock(), \"x\"); }
fn b() { let _ = io::stdout().flush(); }
fn c() { let _ = stderr().write_all(b\"x\"); }
fn d() { tracing_subscriber::fmt().with_writer(std::io::stderr).init(); }
fn e() { tokio::io::stdout(); }
fn f() { Command::new(\"git\").stdout(Stdio::piped()).stderr(Stdio::null()); }
fn g(o: Output) -> Vec<u8> { o.stdout }
fn h() -> &'static str { \"std::io::stdout()\" }
fn i(child: &mut Child) { child.stdout.take(); }
#[cfg(test)]
fn j() { std::io::stdout(); }
";
    let found = terminal_writes(sample);
    assert_eq!(
        found,
        [
            "2: stderr",
            "3: stdout",
            "4: stderr",
            "5: stderr",
            "6: stdout"
        ],
        "{found:?}"
    );
}
