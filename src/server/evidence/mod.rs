//! The host action `checklist.verify_evidence`: every `done` checklist item must cite
//! lines of a file inside the repository that this task changed and that hold a real
//! implementation, so a report cannot pass with an invented path, an old line or a stub.
//!
//! The check is pure apart from reading the cited files: the server computes which lines
//! the task branch changed (from git) and maps a failure onto the action's outcome with
//! `ActionFailure::from`.
//!
//! | outcome | when | args |
//! |---|---|---|
//! | `invalid_format` | the checklist or an item is not shaped as expected, or the evidence is not `path:line` / `path:start-end` with 1 ≤ start ≤ end | `evidence`, `item` |
//! | `outside_root` | the path leaves the repository (`..`, an absolute path elsewhere, a symlink) | `evidence`, `item`, `file_path` |
//! | `file_not_found` | the path does not exist, is not a file or cannot be read | `evidence`, `item`, `file_path` |
//! | `line_out_of_range` | the range ends after the file's last line | `evidence`, `item`, `file_path`, `line`, `total` |
//! | `not_changed` | the range overlaps no line this task changed | `evidence`, `item`, `file_path`, `changed_ranges` |
//! | `empty_impl` | the cited code is a stub, a comment or nothing | `evidence`, `item`, `file_path` |

mod placeholders;
mod syntax;

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::path::Path;

use serde_json::{Map, Value};

use crate::codeintel::languages;
use crate::codeintel::root::{PathError, Root};
use crate::session::ActionFailure;

/// The lines a task changed: root-relative, `/`-separated paths to the 1-based line
/// ranges the task branch added or modified (a new file is one range over all its lines).
pub type ChangedLines = BTreeMap<String, Vec<RangeInclusive<u32>>>;

/// Why a checklist's evidence was refused: the first refused `done` item, in checklist
/// order. Every variant carries the item's text and its evidence as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvidenceFailure {
    /// The checklist or the item is not the expected JSON shape, or the evidence is not
    /// `path:line` or `path:start-end` with 1 ≤ start ≤ end.
    InvalidFormat { item: String, evidence: String },
    /// The path leaves the repository root.
    OutsideRoot {
        item: String,
        evidence: String,
        file_path: String,
    },
    /// The path does not name an existing, readable file.
    FileNotFound {
        item: String,
        evidence: String,
        file_path: String,
    },
    /// The range ends at `line`, after the file's `total` lines.
    LineOutOfRange {
        item: String,
        evidence: String,
        file_path: String,
        line: u32,
        total: u32,
    },
    /// The range overlaps none of the lines this task changed in the file (`changed`,
    /// empty when the task did not touch the file).
    NotChanged {
        item: String,
        evidence: String,
        file_path: String,
        changed: Vec<RangeInclusive<u32>>,
    },
    /// The cited code implements nothing: a stub body, comments, placeholders or blanks.
    EmptyImpl {
        item: String,
        evidence: String,
        file_path: String,
    },
}

impl EvidenceFailure {
    /// The outcome name in the `checklist.verify_evidence` registry entry.
    pub fn outcome(&self) -> &'static str {
        match self {
            EvidenceFailure::InvalidFormat { .. } => "invalid_format",
            EvidenceFailure::OutsideRoot { .. } => "outside_root",
            EvidenceFailure::FileNotFound { .. } => "file_not_found",
            EvidenceFailure::LineOutOfRange { .. } => "line_out_of_range",
            EvidenceFailure::NotChanged { .. } => "not_changed",
            EvidenceFailure::EmptyImpl { .. } => "empty_impl",
        }
    }

    /// The values the outcome's message may use: always `evidence` and `item`, plus
    /// `file_path`, `line`, `total` and `changed_ranges` (`"3-10, 15"`, or `"none"`)
    /// where they apply.
    pub fn args(&self) -> Map<String, Value> {
        let mut args = Map::new();
        let (item, evidence) = match self {
            EvidenceFailure::InvalidFormat { item, evidence }
            | EvidenceFailure::OutsideRoot { item, evidence, .. }
            | EvidenceFailure::FileNotFound { item, evidence, .. }
            | EvidenceFailure::LineOutOfRange { item, evidence, .. }
            | EvidenceFailure::NotChanged { item, evidence, .. }
            | EvidenceFailure::EmptyImpl { item, evidence, .. } => (item, evidence),
        };
        args.insert("evidence".into(), evidence.as_str().into());
        args.insert("item".into(), item.as_str().into());
        match self {
            EvidenceFailure::InvalidFormat { .. } => {}
            EvidenceFailure::OutsideRoot { file_path, .. }
            | EvidenceFailure::FileNotFound { file_path, .. }
            | EvidenceFailure::EmptyImpl { file_path, .. } => {
                args.insert("file_path".into(), file_path.as_str().into());
            }
            EvidenceFailure::LineOutOfRange {
                file_path,
                line,
                total,
                ..
            } => {
                args.insert("file_path".into(), file_path.as_str().into());
                args.insert("line".into(), (*line).into());
                args.insert("total".into(), (*total).into());
            }
            EvidenceFailure::NotChanged {
                file_path, changed, ..
            } => {
                args.insert("file_path".into(), file_path.as_str().into());
                args.insert("changed_ranges".into(), describe_ranges(changed).into());
            }
        }
        args
    }
}

impl std::fmt::Display for EvidenceFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let args = self.args();
        let evidence = args.get("evidence").and_then(Value::as_str).unwrap_or("");
        write!(f, "evidence `{evidence}` refused: {}", self.outcome())
    }
}

impl std::error::Error for EvidenceFailure {}

impl From<EvidenceFailure> for ActionFailure {
    fn from(failure: EvidenceFailure) -> ActionFailure {
        ActionFailure {
            outcome: failure.outcome().to_string(),
            args: failure.args(),
        }
    }
}

/// `3-10, 15`, or `none`: the changed ranges as a message shows them.
fn describe_ranges(ranges: &[RangeInclusive<u32>]) -> String {
    if ranges.is_empty() {
        return "none".to_string();
    }
    ranges
        .iter()
        .map(|r| {
            if r.start() == r.end() {
                r.start().to_string()
            } else {
                format!("{}-{}", r.start(), r.end())
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks every `done` item of a reported checklist (the JSON array the agent sent:
/// `{item, status, evidence?, reason?}` objects) and returns the first failure in
/// checklist order. Items with another status are not checked here (the engine's
/// `tasks.complete` checks statuses and reasons).
///
/// For a `done` item, `evidence` must be `path:line` or `path:start-end` (spaces around
/// the numbers are allowed); the path must resolve inside `root` to a file, the range
/// must lie inside the file and overlap a range of `changed` for that file, and the cited
/// code must implement something: for a language `codeintel` parses, the innermost
/// function, method, class or closure around the range must have a body that is more
/// than placeholders (`pass`, `...`, `{}`, Rust's `todo` macro, `raise NotImplementedError`, a
/// "not implemented" error, comments), and the range itself must hold code; for other
/// files the range's lines without comments and placeholders must not be empty.
pub fn verify_checklist(
    root: &Root,
    checklist: &Value,
    changed: &ChangedLines,
) -> Result<(), EvidenceFailure> {
    let Some(items) = checklist.as_array() else {
        return Err(EvidenceFailure::InvalidFormat {
            item: String::new(),
            evidence: String::new(),
        });
    };
    for entry in items {
        let item = entry
            .get("item")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let evidence = match entry.get("evidence") {
            None => String::new(),
            Some(Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
        };
        match entry.get("status").and_then(Value::as_str) {
            Some("done") => {}
            // `skipped` (or a status the engine refuses anyway) claims nothing to cite.
            Some(_) => continue,
            // Not an object, or no status: what the item claims cannot be told.
            None => return Err(EvidenceFailure::InvalidFormat { item, evidence }),
        }
        let cited = match entry.get("evidence") {
            Some(Value::String(text)) => Citation::parse(text),
            _ => None,
        };
        let Some(cited) = cited else {
            return Err(EvidenceFailure::InvalidFormat { item, evidence });
        };
        verify_citation(root, changed, &cited, item, evidence)?;
    }
    Ok(())
}

/// The lines a `path:line` or `path:start-end` evidence cites: `(path, start, end)`, or
/// `None` when it is not one (as `checklist.verify_evidence` reads it).
pub(crate) fn cited_lines(evidence: &str) -> Option<(&str, u32, u32)> {
    Citation::parse(evidence).map(|c| (c.path, c.start, c.end))
}

/// A `path:line` or `path:start-end` citation, with 1 ≤ start ≤ end.
#[derive(Debug, PartialEq, Eq)]
struct Citation<'a> {
    path: &'a str,
    start: u32,
    end: u32,
}

impl Citation<'_> {
    fn parse(evidence: &str) -> Option<Citation<'_>> {
        let (path, lines) = evidence.trim().rsplit_once(':')?;
        let path = path.trim();
        if path.is_empty() || path.contains(['\n', '\r']) {
            return None;
        }
        // `path:line:column` cites a position, not lines; refuse it rather than look for
        // a file named `path:line`.
        if path
            .rsplit_once(':')
            .is_some_and(|(_, tail)| line_number(tail).is_some())
        {
            return None;
        }
        let (start, end) = match lines.split_once('-') {
            Some((start, end)) => (line_number(start)?, line_number(end)?),
            None => {
                let line = line_number(lines)?;
                (line, line)
            }
        };
        (1 <= start && start <= end).then_some(Citation { path, start, end })
    }
}

/// A line number: ASCII digits only (no sign), spaces around allowed.
fn line_number(text: &str) -> Option<u32> {
    let text = text.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn verify_citation(
    root: &Root,
    changed: &ChangedLines,
    cited: &Citation<'_>,
    item: String,
    evidence: String,
) -> Result<(), EvidenceFailure> {
    let file_path = cited.path.to_string();
    let file = match root.resolve(cited.path) {
        Ok(file) => file,
        Err(PathError::OutsideRoot(_)) => {
            return Err(EvidenceFailure::OutsideRoot {
                item,
                evidence,
                file_path,
            });
        }
        Err(PathError::NotFound(_)) => {
            return Err(EvidenceFailure::FileNotFound {
                item,
                evidence,
                file_path,
            });
        }
    };
    let bytes = match std::fs::read(&file) {
        Ok(bytes) if file.is_file() => bytes,
        _ => {
            return Err(EvidenceFailure::FileNotFound {
                item,
                evidence,
                file_path,
            });
        }
    };
    // Lossy: a stray invalid byte must not hide the rest of the file from the check.
    let text = String::from_utf8_lossy(&bytes);
    let total = u32::try_from(text.lines().count()).unwrap_or(u32::MAX);
    if cited.end > total {
        return Err(EvidenceFailure::LineOutOfRange {
            item,
            evidence,
            file_path,
            line: cited.end,
            total,
        });
    }
    let ranges = changed
        .get(&root.relative(&file))
        .map(Vec::as_slice)
        .unwrap_or_default();
    if !ranges
        .iter()
        .any(|r| *r.start() <= cited.end && cited.start <= *r.end())
    {
        return Err(EvidenceFailure::NotChanged {
            item,
            evidence,
            file_path,
            changed: ranges.to_vec(),
        });
    }
    if range_is_empty(&file, &text, cited.start, cited.end) {
        return Err(EvidenceFailure::EmptyImpl {
            item,
            evidence,
            file_path,
        });
    }
    Ok(())
}

/// Whether the 1-based lines `start..=end` (inside the file) implement nothing: on the
/// syntax tree when `codeintel` parses the language, else by the textual rule.
fn range_is_empty(file: &Path, text: &str, start: u32, end: u32) -> bool {
    if let Some(empty) = languages::for_path(file)
        .and_then(|language| syntax::range_is_empty(language, text, start, end))
    {
        return empty;
    }
    let extension = file.extension().and_then(|e| e.to_str());
    let lines = placeholders::uncommented_lines(text, extension);
    let first = usize::try_from(start.saturating_sub(1)).unwrap_or(usize::MAX);
    let last = usize::try_from(end.saturating_sub(1)).unwrap_or(usize::MAX);
    let cited: Vec<&String> = lines
        .iter()
        .enumerate()
        .filter(|(row, _)| (first..=last).contains(row))
        .map(|(_, line)| line)
        .collect();
    !placeholders::lines_have_substance(&cited)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn citations_parse_lines_and_ranges_only() {
        let ok = [
            ("src/a.py:42", ("src/a.py", 42, 42)),
            ("src/a.py:42-58", ("src/a.py", 42, 58)),
            (" src/a.py : 42 - 58 ", ("src/a.py", 42, 58)),
            ("dir with space/a b.rs:3", ("dir with space/a b.rs", 3, 3)),
            ("Makefile:1", ("Makefile", 1, 1)),
        ];
        for (text, (path, start, end)) in ok {
            assert_eq!(
                Citation::parse(text),
                Some(Citation { path, start, end }),
                "{text}"
            );
        }
        for text in [
            "line 42 in auth.py",
            "auth.py",
            "auth.py:",
            ":42",
            "auth.py:0",
            "auth.py:58-42",
            "auth.py:-3",
            "auth.py:+3",
            "auth.py:L42",
            "auth.py:42:7",
            "auth.py:1-2-3",
            "auth.py:99999999999",
            "a\nb.py:3",
        ] {
            assert_eq!(Citation::parse(text), None, "{text}");
        }
    }

    #[test]
    fn ranges_are_described_compactly() {
        assert_eq!(describe_ranges(&[]), "none");
        assert_eq!(describe_ranges(&[3..=10, 15..=15]), "3-10, 15");
    }

    #[test]
    fn failures_map_onto_action_failures() {
        let failure = EvidenceFailure::LineOutOfRange {
            item: "Add f".into(),
            evidence: "a.py:9".into(),
            file_path: "a.py".into(),
            line: 9,
            total: 3,
        };
        let action = ActionFailure::from(failure);
        assert_eq!(action.outcome, "line_out_of_range");
        assert_eq!(
            Value::Object(action.args),
            serde_json::json!({"evidence": "a.py:9", "item": "Add f", "file_path": "a.py", "line": 9, "total": 3})
        );
    }
}
