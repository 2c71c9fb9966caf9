//! `docs/history.md` is the one list of the original system's bugs: every bug id cited in the
//! code, the contracts, the tests and the docs is listed there, and none is cited bare (`B9`
//! named two different bugs in two places before the ids got their system's prefix).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::support::repo;

/// Where ids are cited: everything we write, not the dependencies we vendor for tests.
const CITING_ROOTS: &[&str] = &[
    "src",
    "crates",
    "tests",
    "contracts",
    "schemas",
    "templates",
    "docs",
    "benches",
    "README.md",
];

/// Folders of other people's files (and of build output) under the citing roots.
const NOT_OURS: &[&str] = &["node_modules", "target", "model", ".venv", "__pycache__"];

const TEXT_ENDINGS: &[&str] = &[
    "rs", "yml", "yaml", "json", "md", "j2", "py", "sh", "toml", "pest", "js", "html",
];

fn citing_files() -> Vec<PathBuf> {
    fn walk(path: &Path, out: &mut Vec<PathBuf>) {
        if path.is_dir() {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if NOT_OURS.contains(&name.as_ref()) {
                return;
            }
            let mut entries: Vec<_> = std::fs::read_dir(path)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            entries.sort();
            for entry in entries {
                walk(&entry, out);
            }
        } else if path
            .extension()
            .is_some_and(|e| TEXT_ENDINGS.contains(&e.to_string_lossy().as_ref()))
        {
            out.push(path.to_path_buf());
        }
    }
    let mut out = Vec::new();
    for root in CITING_ROOTS {
        walk(&repo().join(root), &mut out);
    }
    // The list itself, and this file's own examples.
    out.retain(|f| !f.ends_with("docs/history.md") && !f.ends_with("integration/history.rs"));
    out
}

/// A bug id as the digests number them: `B9`, `M27`, `D6`, `V5` (a verification test of the
/// AgentRunner digest), optionally with a letter (`V18a`).
#[derive(Debug, PartialEq, Eq)]
enum Found {
    /// `CI-B9`, `AR-M27`.
    Prefixed(String),
    /// `B9` with no system named.
    Bare(String),
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The bug ids in one line of text.
fn bug_ids(line: &str) -> Vec<Found> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        let before = at.checked_sub(1).map(|i| chars[i]);
        let starts_word = before.is_none_or(|b| !is_word(b) && b != '[');
        if !(starts_word && matches!(c, 'B' | 'M' | 'D' | 'V')) {
            at += 1;
            continue;
        }
        let digits = chars[at + 1..]
            .iter()
            .take_while(|d| d.is_ascii_digit())
            .count();
        let mut end = at + 1 + digits;
        if chars.get(end).is_some_and(|l| l.is_ascii_lowercase()) {
            end += 1;
        }
        if !(1..=2).contains(&digits) || chars.get(end).is_some_and(|&n| is_word(n)) {
            at += 1;
            continue;
        }
        let id: String = chars[at..end].iter().collect();
        let prefix: String = chars[at.saturating_sub(3)..at].iter().collect();
        let prefixed = (prefix == "CI-" || prefix == "AR-") && (at < 4 || !is_word(chars[at - 4]));
        if before == Some('-') && !prefixed {
            // Part of some other hyphenated name (`X-B3`), not a bug id.
            at = end;
            continue;
        }
        out.push(if prefixed {
            Found::Prefixed(format!("{prefix}{id}"))
        } else {
            Found::Bare(id)
        });
        at = end;
    }
    out
}

/// The ids `docs/history.md` lists: the first cell of each table row.
fn listed_ids(history: &str) -> BTreeSet<String> {
    history
        .lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|l| l.split(" |").next())
        .filter(|id| id.starts_with("CI-") || id.starts_with("AR-"))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_cited_bug_id_is_listed_in_the_history() {
    let history = std::fs::read_to_string(repo().join("docs/history.md")).unwrap();
    let listed = listed_ids(&history);
    assert!(
        listed.contains("CI-B9") && listed.contains("AR-B9"),
        "{listed:?}"
    );
    let mut problems = Vec::new();
    let mut cited = 0;
    for file in citing_files() {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let name = file.strip_prefix(repo()).unwrap().display().to_string();
        for (number, line) in text.lines().enumerate() {
            for found in bug_ids(line) {
                match found {
                    Found::Prefixed(id) if listed.contains(&id) => cited += 1,
                    Found::Prefixed(id) => problems.push(format!(
                        "{name}:{}: {id} is not in docs/history.md",
                        number + 1
                    )),
                    Found::Bare(id) => problems.push(format!(
                        "{name}:{}: bare bug id {id}: name its system ({})",
                        number + 1,
                        if id.starts_with('B') {
                            format!("CI-{id} or AR-{id}")
                        } else {
                            format!("AR-{id}; for a verification test, the bug it confirmed")
                        }
                    )),
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        cited > 20,
        "only {cited} citations found: is the scan reading the tree?"
    );
}

#[test]
fn the_history_lists_each_id_once() {
    let history = std::fs::read_to_string(repo().join("docs/history.md")).unwrap();
    let mut seen = BTreeSet::new();
    for id in history
        .lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|l| l.split(" |").next())
        .filter(|id| id.starts_with("CI-") || id.starts_with("AR-"))
    {
        assert!(seen.insert(id), "{id} is listed twice");
    }
}

#[test]
fn bare_and_prefixed_ids_are_told_apart() {
    assert_eq!(
        bug_ids("FIX(B9): and (CI-B10, AR-M27) [V18a] D000 MB12 B123 M2."),
        vec![
            Found::Bare("B9".into()),
            Found::Prefixed("CI-B10".into()),
            Found::Prefixed("AR-M27".into()),
            Found::Bare("M2".into()),
        ]
    );
    assert_eq!(bug_ids("V5, X-B3"), vec![Found::Bare("V5".into())]);
}
