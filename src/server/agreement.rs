//! What a session that ended in success teaches the Map: its request, with the symbols and
//! files its own evidence names. The server records it itself when the session ends
//! (nothing needs to ask the agent), from what the session record holds, never from a
//! claim the flow did not check.
//!
//! - Files: those the session's checklist evidence cites, then those it explored (or
//!   added), each an existing file inside the root outside `.git/` and `.code-intel/`.
//! - Symbols: the definitions holding the lines its evidence cites, then the definitions
//!   of those files that its summaries, task descriptions and checklist items name (by
//!   name, or as `Scope.name`).
//!
//! Both lists are bounded ([`MAX_FILES`], [`MAX_SYMBOLS`]); the first ones are the
//! strongest evidence.

use std::collections::BTreeSet;

use super::evidence::cited_lines;
use super::paths;
use super::session_record::SessionRecord;
use crate::codeintel::index::Index;
use crate::codeintel::page::Window;
use crate::codeintel::root::Root;
use crate::codeintel::symbols::{self, SymbolHit};

/// Files and symbols kept in one agreement: what a later search can use at a glance.
pub(crate) const MAX_FILES: usize = 20;
pub(crate) const MAX_SYMBOLS: usize = 20;

/// Names shorter than this are not taken from prose: `id` or `x` in a summary is a word
/// more often than a reference to a definition.
const MIN_NAMED_LEN: usize = 3;

/// The symbols and files a session's evidence names, strongest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Evidence {
    pub symbols: Vec<String>,
    pub files: Vec<String>,
}

/// What `record`'s own evidence names, read against the files as they are now (after the
/// merge, the base branch holds the session's work).
pub(crate) fn session_evidence(root: &Root, record: &SessionRecord) -> Evidence {
    let instance = &record.instance;
    let mut cited: Vec<(String, u32, u32)> = Vec::new();
    let mut texts: Vec<&str> = instance.summaries.iter().map(|s| s.text.as_str()).collect();
    for task in &instance.tasks {
        texts.push(&task.description);
        for item in &task.checklist {
            texts.push(&item.item);
            let cite = item
                .evidence
                .as_deref()
                .filter(|_| item.status == "done")
                .and_then(cited_lines);
            if let Some((path, start, end)) = cite
                && let Some(rel) = learnable(root, path)
            {
                cited.push((rel, start, end));
            }
        }
    }
    let mut files: Vec<String> = Vec::new();
    let candidates = cited.iter().map(|(rel, _, _)| rel.clone()).chain(
        record
            .host
            .explored
            .iter()
            .filter_map(|p| learnable(root, p)),
    );
    for rel in candidates {
        if files.len() == MAX_FILES {
            break;
        }
        if !files.contains(&rel) {
            files.push(rel);
        }
    }
    let mut found = Symbols::default();
    let names: Vec<&str> = files.iter().map(String::as_str).collect();
    // Files no grammar reads have no definitions: they stay as files.
    if let Ok(index) = Index::for_files(root, &names) {
        for (path, start, end) in &cited {
            found.at_lines(root, &index, path, *start, *end);
        }
        let words = named_words(&texts);
        for file in &files {
            found.named(root, &index, file, &words);
        }
    }
    Evidence {
        symbols: found.list,
        files,
    }
}

/// `path` as a root-relative file the Map may name: inside the root, not reserved, and a
/// regular file now.
fn learnable(root: &Root, path: &str) -> Option<String> {
    let abs = root.resolve(path.trim()).ok()?;
    let rel = root.relative(&abs);
    (!paths::is_reserved(&rel) && abs.is_file()).then_some(rel)
}

/// The identifier-like words of `texts` (`Scope.name` kept whole, and its parts too).
fn named_words(texts: &[&str]) -> BTreeSet<String> {
    let mut words = BTreeSet::new();
    for text in texts {
        for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.')) {
            let word = word.trim_matches('.');
            if word.chars().count() < MIN_NAMED_LEN {
                continue;
            }
            words.insert(word.to_string());
            for part in word.split('.') {
                if part.chars().count() >= MIN_NAMED_LEN {
                    words.insert(part.to_string());
                }
            }
        }
    }
    words
}

/// A definition's name as an agent writes it: `Scope.name` inside a class or function.
fn qualified(hit: &SymbolHit) -> String {
    match &hit.scope {
        Some(scope) => format!("{scope}.{}", hit.name),
        None => hit.name.clone(),
    }
}

/// Symbols found so far, without repeats, at most [`MAX_SYMBOLS`].
#[derive(Default)]
struct Symbols {
    list: Vec<String>,
}

impl Symbols {
    fn push(&mut self, name: String) {
        if self.list.len() < MAX_SYMBOLS && !self.list.contains(&name) {
            self.list.push(name);
        }
    }

    /// The innermost definition holding `start`, and the definitions that begin in
    /// `start..=end`: what the cited lines implement.
    fn at_lines(&mut self, root: &Root, index: &Index, path: &str, start: u32, end: u32) {
        if let Ok(at) = symbols::function_at_line(root, index, path, start)
            && let Some(innermost) = at.function.as_ref().or(at.enclosing.last())
        {
            self.push(qualified(innermost));
        }
        if let Ok(outline) = symbols::get_symbols(root, index, path, Window::ALL) {
            for hit in outline.symbols.items {
                if (start..=end).contains(&hit.line) {
                    self.push(qualified(&hit));
                }
            }
        }
    }

    /// The definitions of `path` that `words` name.
    fn named(&mut self, root: &Root, index: &Index, path: &str, words: &BTreeSet<String>) {
        let Ok(outline) = symbols::get_symbols(root, index, path, Window::ALL) else {
            return;
        };
        for hit in outline.symbols.items {
            let full = qualified(&hit);
            if hit.name.chars().count() >= MIN_NAMED_LEN
                && (words.contains(&hit.name) || words.contains(&full))
            {
                self.push(full);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A temporary directory removed when the test ends, pass or fail.
    struct TempDir(std::path::PathBuf);

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn record(explored: &[&str], summaries: &[&str], evidence: &[&str]) -> SessionRecord {
        let checklist: Vec<_> = evidence
            .iter()
            .map(|e| json!({"item": "implement it", "status": "done", "evidence": e}))
            .collect();
        serde_json::from_value(json!({
            "version": 1, "id": "s", "created_at": 0, "updated_at": 0,
            "request": "make sessions send requests", "flag_text": "",
            "instance": {
                "contract": "c", "state": "DONE", "flags": {}, "intent": "IMPLEMENT",
                "locale": "en", "params": {}, "counters": {}, "vars": {}, "steps_taken": 0,
                "tasks": [{"id": "t1", "description": "wire up Session.send", "status": "completed", "checklist": checklist}],
                "summaries": summaries.iter().enumerate().map(|(i, t)| json!({"key": format!("k{i}"), "text": t})).collect::<Vec<_>>(),
            },
            "compaction_count": 0, "tools_called": [], "tool_history": {},
            "host": {"explored": explored},
            "outcome": "success",
        }))
        .unwrap()
    }

    #[test]
    fn evidence_names_the_cited_definitions_then_the_named_ones_of_the_files() {
        let dir = std::env::temp_dir().join(format!("ci-agreement-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join(".code-intel")).unwrap();
        let _dir = TempDir(dir.clone());
        std::fs::write(
            dir.join("sessions.py"),
            "class Session:\n    def send(self, request):\n        return request\n\n    def close(self):\n        pass\n\n\ndef helper():\n    return 1\n\n\ndef unused():\n    return 2\n",
        )
        .unwrap();
        std::fs::write(dir.join("NOTES.md"), "# notes\n").unwrap();
        std::fs::write(dir.join(".code-intel/x.py"), "def hidden():\n    pass\n").unwrap();
        let root = Root::open(&dir).unwrap();
        let found = session_evidence(
            &root,
            &record(
                &["NOTES.md", "gone.py", ".code-intel/x.py"],
                &["send goes through helper; close is left alone", "id x ok"],
                &["./sessions.py:3", "nowhere.py:1", "sessions.py:1:2"],
            ),
        );
        // Cited lines first (the method holding line 3), then the definitions the texts
        // name (`Session.send` names `Session` too), in file order; `unused` is named
        // nowhere, and a file that does not exist or is reserved is never named.
        assert_eq!(
            found.symbols,
            ["Session.send", "Session", "Session.close", "helper"],
            "{found:?}"
        );
        assert_eq!(found.files, ["sessions.py", "NOTES.md"]);
        assert!(!found.symbols.is_empty());
        let nothing = session_evidence(&root, &record(&[], &[], &[]));
        assert!(
            nothing.symbols.is_empty() && nothing.files.is_empty(),
            "{nothing:?}"
        );
    }
}
