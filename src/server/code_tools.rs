//! The code-intelligence tools as the server offers them: argument types (their JSON
//! Schemas are the tools' input schemas) and one function per tool that answers with the
//! `codeintel::wire` JSON. Paths go through `codeintel::root`, as for the CLI.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value, json};

use super::index_cache::{IndexCache, Lookup, WALK_INTERVAL};
use super::semantic_tools::{Collection, SemanticSearchArgs, SemanticTools};
use super::words::Words;
use crate::codeintel::budget::{ANSWER_BUDGET, IMPACT_SUMMARY_BUDGET, fit};
use crate::codeintel::error::Error;
use crate::codeintel::impact::{SUMMARY_TOP, Section, View, analyze};
use crate::codeintel::index::{
    CANDIDATES_NOTE, FRESHNESS_NOTE, IN_MEMORY_NOTE, Index, PARTIAL_NOTE,
};
use crate::codeintel::languages;
use crate::codeintel::page::Window;
use crate::codeintel::qualified;
use crate::codeintel::query;
use crate::codeintel::root::Root;
use crate::codeintel::search::{Case, FileQuery, TextQuery, search_files, search_text};
use crate::codeintel::symbols::{
    analyze_structure, find_definitions, find_references, function_at_line, get_symbols,
};
use crate::codeintel::wire;

// How many results to skip and return. Numbers may also arrive as numeric strings
// (some clients, such as the MCP Inspector, send optional numbers that way). A plain
// comment, not a doc comment: schemars would copy it into every tool's schema.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
pub(crate) struct Paging {
    /// Items to skip (a list's `next_offset`).
    #[serde(default, deserialize_with = "lenient_count")]
    #[schemars(with = "Option<u32>")]
    pub offset: usize,
    // Answers are also cut at `budget::ANSWER_BUDGET` bytes, and say so.
    /// Most items, 1-1000 (default 100).
    #[serde(default = "default_limit", deserialize_with = "lenient_limit")]
    #[schemars(with = "Option<u32>")]
    pub limit: usize,
}

impl Default for Paging {
    fn default() -> Paging {
        Paging {
            offset: 0,
            limit: default_limit(),
        }
    }
}

fn default_limit() -> usize {
    100
}

impl Paging {
    fn window(self) -> Window {
        Window {
            offset: self.offset,
            limit: self.limit.clamp(1, MAX_LIMIT),
        }
    }
}

/// The most results one page holds.
const MAX_LIMIT: usize = 1000;

/// A `limit`: null is the default (as if absent); 0 is refused, since a page of nothing
/// answers no question and [`Window`] reads 0 as "no limit".
fn lenient_limit<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(default_limit()),
        other => match lenient_count(other) {
            Ok(0) => Err(serde::de::Error::custom(format!(
                "limit must be between 1 and {MAX_LIMIT} (default {})",
                default_limit()
            ))),
            other => other.map_err(serde::de::Error::custom),
        },
    }
}

fn lenient_count<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    match Value::deserialize(d)? {
        Value::Number(n) => n
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| serde::de::Error::custom("expected a non-negative integer")),
        Value::String(s) => s
            .trim()
            .parse()
            .map_err(|_| serde::de::Error::custom("expected a non-negative integer")),
        Value::Null => Ok(0),
        other => Err(serde::de::Error::custom(format!(
            "expected a non-negative integer, found {other}"
        ))),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchTextArgs {
    /// Patterns; a line matches any. Literal unless `regex`.
    pub patterns: Vec<String>,
    /// Patterns are Rust regexes.
    #[serde(default)]
    pub regex: bool,
    /// Ignore case.
    #[serde(default)]
    pub ignore_case: bool,
    /// Match whole words only.
    #[serde(default)]
    pub word: bool,
    /// Only paths matching (`src/**/*.rs`, `!*.min.js`).
    #[serde(default)]
    pub globs: Vec<String>,
    /// Only these ripgrep file types (`rust`, `py`).
    #[serde(default)]
    pub types: Vec<String>,
    /// Context lines around each match (at most 10).
    #[serde(default, deserialize_with = "lenient_count")]
    #[schemars(with = "Option<u32>")]
    pub context: usize,
    /// Only under these paths.
    #[serde(default)]
    pub paths: Vec<String>,
    #[serde(flatten)]
    pub paging: Paging,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchFilesArgs {
    /// Path globs; a bare name matches at any depth (`*.rs`, `src/**/test_*.py`).
    pub globs: Vec<String>,
    /// Only these ripgrep file types.
    #[serde(default)]
    pub types: Vec<String>,
    #[serde(flatten)]
    pub paging: Paging,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DefinitionsArgs {
    /// A symbol (`parse_config`, `Session.request`, `Index::open`).
    pub name: String,
    /// Only this kind (`function`, `class`, `method`, `struct`, `fn`, ...).
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(flatten)]
    pub paging: Paging,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReferencesArgs {
    /// A symbol (`save`, `Session.request`).
    pub name: String,
    /// Only this use: call, inherit, import, type, decorator or read.
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(flatten)]
    pub paging: Paging,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileArgs {
    /// A source file (`src/app.py`), or a class or module by name (`Session`, `pkg.module`).
    pub file_path: String,
    #[serde(flatten)]
    pub paging: Paging,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LineArgs {
    /// A source file.
    pub file_path: String,
    /// A 1-based line.
    #[serde(deserialize_with = "lenient_count")]
    #[schemars(with = "u32")]
    pub line: usize,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PathArgs {
    /// A file or directory (default: all).
    #[serde(default = "dot")]
    pub path: String,
    #[serde(flatten)]
    pub paging: Paging,
}

fn dot() -> String {
    ".".into()
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ImpactArgs {
    /// Files and/or symbols (`app.py`, `Session.request`).
    pub targets: Vec<String>,
    /// List one section whole, paged (`callers`, `tests`, ...); default: counts and top items.
    #[serde(default)]
    pub section: Option<String>,
    #[serde(flatten)]
    pub paging: Paging,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct QueryArgs {
    /// A question in plain words.
    pub question: String,
    #[serde(flatten)]
    pub paging: Paging,
}

/// The code tools with what they answer from: the repository root and the shared index.
pub struct CodeTools {
    pub root: Root,
    pub index: Arc<IndexCache>,
    pub semantic: SemanticTools,
}

/// The text search a symbol tool falls back on while the index cannot answer, and why.
fn text_fallback(
    root: &Root,
    names: &[String],
    paging: Paging,
    why: &str,
    words: Words,
) -> Result<Value, Error> {
    let q = TextQuery {
        patterns: names.to_vec(),
        word: true,
        ..TextQuery::default()
    };
    let r = search_text(root, &q, paging.window())?;
    Ok(json!({
        "source": "text",
        "note": words.note("code_tools.note.text_matches", &[("why", json!(why))]),
        "matches": json(&wire::TextResult::from(&r))?,
    }))
}

fn not_ready(lookup: &Lookup, words: Words) -> String {
    match lookup {
        Lookup::Building { done, total } => words.note(
            "code_tools.note.index_building",
            &[("done", json!(done)), ("total", json!(total))],
        ),
        Lookup::Failed(reason) => words.note(
            "code_tools.note.index_unavailable",
            &[("reason", json!(reason))],
        ),
        Lookup::Ready(_) => String::new(),
    }
}

/// Adds the index status to an answer made without the full index.
fn with_status(mut value: Value, note: &str) -> Value {
    if let Value::Object(map) = &mut value {
        map.insert("index_status".into(), Value::String(note.to_string()));
    }
    value
}

/// What answers one code tool: the tool's arguments as the call gave them, and how to
/// word notes. Its declaration (`server::tools`) names it; it parses the arguments
/// itself ([`parse`]), into the type whose schema the declaration lists.
pub(crate) type CodeHandler = fn(&CodeTools, Map<String, Value>, Words) -> Result<Value, ToolError>;

impl CodeTools {
    /// Runs one code tool's handler, its notes worded by `words`, and fits the answer to
    /// the answer budget. The index on disk is checked piece by piece as tools read it
    /// (`codeintel::store`): when a piece does not match its checksum, the index is
    /// repaired and the tool runs again, once.
    pub fn run(
        &self,
        handler: CodeHandler,
        args: Map<String, Value>,
        words: Words,
    ) -> Result<Value, ToolError> {
        let value = match handler(self, args.clone(), words) {
            Err(ToolError::Tool(problem @ Error::IndexCorrupt { .. })) => {
                self.index.repair(&problem);
                handler(self, args, words)?
            }
            other => other?,
        };
        let value = self.server_freshness(reword_more(value, words), words);
        Ok(within_budget(value, words))
    }

    pub(super) fn search_text(&self, a: SearchTextArgs) -> Result<Value, ToolError> {
        let q = TextQuery {
            patterns: a.patterns,
            regex: a.regex,
            case: if a.ignore_case {
                Case::Insensitive
            } else {
                Case::Sensitive
            },
            word: a.word,
            globs: a.globs,
            types: a.types,
            context: a.context.min(10),
            paths: a.paths,
        };
        let r = search_text(&self.root, &q, a.paging.window())?;
        Ok(json(&wire::TextResult::from(&r))?)
    }

    pub(super) fn search_files(&self, a: SearchFilesArgs) -> Result<Value, ToolError> {
        let q = FileQuery {
            globs: a.globs,
            types: a.types,
            paths: Vec::new(),
        };
        let p = search_files(&self.root, &q, a.paging.window())?;
        Ok(json(&wire::FileList::from(&p))?)
    }

    pub(super) fn find_definitions(
        &self,
        a: DefinitionsArgs,
        words: Words,
    ) -> Result<Value, ToolError> {
        let find =
            |index: &Index| find_definitions(index, &a.name, a.kind.as_deref(), a.paging.window());
        match self.index.lookup() {
            Lookup::Ready(index) => {
                let mut answer = find(&index)?;
                if answer.symbols.total == 0
                    && let Lookup::Ready(index) = self.index.rescan()
                {
                    // Maybe defined in a file created since the last walk.
                    answer = find(&index)?;
                }
                Ok(json(&wire::SymbolAnswer::from(&answer))?)
            }
            other => {
                // The files that mention the name, tagged now: the answer the full index
                // will give.
                let index = Index::for_names(&self.root, &[qualified::word_of(&a.name)])?;
                let answer = find(&index)?;
                Ok(with_status(
                    json(&wire::SymbolAnswer::from(&answer))?,
                    &not_ready(&other, words),
                ))
            }
        }
    }

    pub(super) fn find_references(
        &self,
        a: ReferencesArgs,
        words: Words,
    ) -> Result<Value, ToolError> {
        let root = &self.root;
        // Uses are parsed from the files that mention the name either way; the index
        // only gives the definitions the text fallback leaves out.
        let (index, status) = match self.index.lookup() {
            Lookup::Ready(index) => (index, None),
            other => (
                Arc::new(Index::for_names(root, &[qualified::word_of(&a.name)])?),
                Some(not_ready(&other, words)),
            ),
        };
        let answer = find_references(root, &index, &a.name, a.kind.as_deref(), a.paging.window())?;
        Ok(with_note(json(&wire::SymbolAnswer::from(&answer))?, status))
    }

    pub(super) fn get_symbols(&self, a: FileArgs, words: Words) -> Result<Value, ToolError> {
        let (index, note) = self.index_for(&a.file_path, words)?;
        let answer = get_symbols(&self.root, &index, &a.file_path, a.paging.window())?;
        Ok(with_note(json(&wire::SymbolAnswer::from(&answer))?, note))
    }

    pub(super) fn function_at_line(&self, a: LineArgs, words: Words) -> Result<Value, ToolError> {
        let (index, note) = self.index_for(&a.file_path, words)?;
        let line = u32::try_from(a.line).unwrap_or(u32::MAX);
        let answer = function_at_line(&self.root, &index, &a.file_path, line)?;
        Ok(with_note(json(&wire::FunctionAtLine::from(&answer))?, note))
    }

    pub(super) fn analyze_structure(&self, a: PathArgs, words: Words) -> Result<Value, ToolError> {
        let root = &self.root;
        let (index, note) = match self.index.lookup() {
            Lookup::Ready(index) => (index, None),
            other if root.resolve(&a.path).is_ok_and(|p| p.is_file()) => (
                Arc::new(Index::for_files(root, &[a.path.as_str()])?),
                Some(not_ready(&other, words)),
            ),
            other => {
                let q = FileQuery {
                    globs: Vec::new(),
                    types: Vec::new(),
                    paths: vec![a.path.clone()],
                };
                let files = search_files(root, &q, a.paging.window())?;
                return Ok(json!({
                    "source": "files",
                    "note": words.note(
                        "code_tools.note.files_instead",
                        &[("why", json!(not_ready(&other, words))), ("path", json!(a.path))],
                    ),
                    "files": json(&wire::FileList::from(&files))?,
                }));
            }
        };
        let s = analyze_structure(root, &index, &a.path, a.paging.window())?;
        Ok(with_note(json(&wire::Structure::from(&s))?, note))
    }

    pub(super) fn analyze_impact(&self, a: ImpactArgs, words: Words) -> Result<Value, ToolError> {
        let root = &self.root;
        match self.index.lookup() {
            Lookup::Ready(index) => {
                let (view, budget) = match &a.section {
                    Some(name) => (
                        View::Section(Section::parse(name)?, a.paging.window()),
                        ANSWER_BUDGET,
                    ),
                    None => (View::Summary { top: SUMMARY_TOP }, IMPACT_SUMMARY_BUDGET),
                };
                let i = analyze(root, &index, &a.targets, view)?;
                Ok(wire::impact_value(&i, Some(budget))?)
            }
            other => Ok(text_fallback(
                root,
                &a.targets,
                a.paging,
                &not_ready(&other, words),
                words,
            )?),
        }
    }

    pub(super) fn query(&self, a: QueryArgs, words: Words) -> Result<Value, ToolError> {
        let root = &self.root;
        let route = query::route(root, &a.question)?;
        if route.is_semantic() {
            return self.semantic_query(&a, route, words);
        }
        if !route.uses_index() {
            let answer = query::answer(root, None, route, a.paging.window())?;
            return Ok(json(&wire::QueryAnswer::from(&answer))?);
        }
        match self.index.lookup() {
            Lookup::Ready(index) => {
                let answer = query::answer(root, Some(&index), route, a.paging.window())?;
                Ok(json(&wire::QueryAnswer::from(&answer))?)
            }
            other => Ok(text_fallback(
                root,
                std::slice::from_ref(&route.subject),
                a.paging,
                &not_ready(&other, words),
                words,
            )?),
        }
    }

    /// A question in plain words, asked of `semantic_search`. Without an embedding model
    /// the search ranks by words only and the answer says so (`note`); when the semantic
    /// index cannot answer at all, the question's longest word is searched as text and
    /// the answer says why.
    fn semantic_query(
        &self,
        a: &QueryArgs,
        route: query::Route,
        words: Words,
    ) -> Result<Value, ToolError> {
        let args = SemanticSearchArgs {
            query: a.question.clone(),
            k: None,
            collection: Collection::default(),
        };
        match self.semantic.search_in(args, words) {
            Ok(result) => {
                let mut answer = json!({
                    "tool": "semantic_search",
                    "why": route.why,
                    "arguments": {"query": a.question},
                });
                // Said on every such answer, briefly; why (no model, vectors not yet
                // made) is in the result's `vector.note` when it matters.
                if result.get("ranking").and_then(Value::as_str) == Some("lexical") {
                    answer["note"] = json!(words.note("code_tools.note.words_only", &[]));
                }
                answer["result"] = result;
                Ok(answer)
            }
            Err(e) => {
                let answer = query::answer(&self.root, None, route, a.paging.window())?;
                let mut value = json(&wire::QueryAnswer::from(&answer))?;
                value["note"] = json!(words.note(
                    "code_tools.note.semantic_failed",
                    &[("error", json!(e.to_string()))],
                ));
                Ok(value)
            }
        }
    }

    /// The index for a file-scoped question: the shared one when ready, else that file
    /// tagged on the spot, with the reason.
    fn index_for(&self, file: &str, words: Words) -> Result<(Arc<Index>, Option<String>), Error> {
        match self.index.lookup() {
            Lookup::Ready(index) => {
                // Only a source file that exists but is missing is worth a walk; anything
                // else gets the tools' own answer (not found, not a source file).
                let missing_source = self.root.resolve(file).is_ok_and(|abs| {
                    languages::for_path(&abs).is_some()
                        && index.file_index(&self.root.relative(&abs)).is_none()
                });
                if !missing_source {
                    return Ok((index, None));
                }
                // A file created since the last walk: walk now rather than answer that
                // it is not indexed.
                match self.index.rescan() {
                    Lookup::Ready(index) => Ok((index, None)),
                    other => Ok((
                        Arc::new(Index::for_files(&self.root, &[file])?),
                        Some(not_ready(&other, words)),
                    )),
                }
            }
            other => Ok((
                Arc::new(Index::for_files(&self.root, &[file])?),
                Some(not_ready(&other, words)),
            )),
        }
    }
}

/// Cuts an answer to [`ANSWER_BUDGET`] bytes; a cut answer says so once, at the top, and
/// each cut list says `truncated` and `next_offset`.
fn within_budget(mut value: Value, words: Words) -> Value {
    // Ranked hits (semantic search) have no pages: the best are kept.
    let ranked = value.get("hits").is_some() || value.pointer("/result/hits").is_some();
    let bytes = [("bytes", json!(ANSWER_BUDGET))];
    let note = if ranked {
        words.note("code_tools.budget.ranked", &bytes)
    } else {
        words.note("code_tools.budget.paged", &bytes)
    };
    // Room for the note itself: `"budget":"…",`.
    let room = note.len() + 12;
    if fit(&mut value, ANSWER_BUDGET.saturating_sub(room))
        && let Value::Object(map) = &mut value
    {
        map.insert("budget".into(), Value::String(note));
    }
    value
}

/// The roots whose answers have explained the freshness model already, in this process.
static EXPLAINED: std::sync::Mutex<BTreeSet<PathBuf>> = std::sync::Mutex::new(BTreeSet::new());

impl CodeTools {
    /// The freshness note of an answer, worded by `words`. The general one (the index
    /// answers checked, and unlike a CLI run the server walks for new files at most every
    /// [`WALK_INTERVAL`], and at once before answering "not found") describes how every
    /// answer is made, not this one, so it is given once per server process (the first
    /// answer that carries a freshness record) and left out after; the other notes (no
    /// index yet, the first build under way, the index tagged in memory) say something
    /// about the answer itself and are always given.
    fn server_freshness(&self, mut value: Value, words: Words) -> Value {
        // A query's answer holds the routed tool's.
        let at = if value.get("freshness").is_some() {
            "/freshness"
        } else {
            "/result/freshness"
        };
        let Some(freshness) = value.pointer_mut(at).and_then(Value::as_object_mut) else {
            return value;
        };
        let key = match freshness.get("note").and_then(Value::as_str) {
            Some(FRESHNESS_NOTE) => None,
            Some(CANDIDATES_NOTE) => Some("code_tools.note.no_index"),
            Some(PARTIAL_NOTE) => Some("code_tools.note.partial_index"),
            Some(IN_MEMORY_NOTE) => Some("code_tools.note.in_memory"),
            _ => return value,
        };
        if let Some(key) = key {
            freshness.insert("note".into(), json!(words.note(key, &[])));
            return value;
        }
        let first = EXPLAINED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(self.root.path().to_path_buf());
        if first {
            let seconds = [("seconds", json!(WALK_INTERVAL.as_secs()))];
            freshness.insert(
                "note".into(),
                json!(words.note("code_tools.note.freshness", &seconds)),
            );
        } else {
            freshness.remove("note");
        }
        value
    }
}

/// An impact answer's `more` (how to see the rest of a cut section; `wire` words it for
/// the CLI), worded by `words`. A query's answer holds the routed tool's.
fn reword_more(mut value: Value, words: Words) -> Value {
    for at in ["/more", "/result/more"] {
        if let Some(more) = value.pointer_mut(at).filter(|m| m.is_string()) {
            *more = json!(words.note("code_tools.impact_more", &[]));
        }
    }
    value
}

fn with_note(value: Value, note: Option<String>) -> Value {
    match note {
        Some(n) => with_status(value, &n),
        None => value,
    }
}

/// A code tool that could not answer: bad arguments, or the tool's own error.
#[derive(Debug)]
pub enum ToolError {
    Arguments(String),
    Tool(Error),
    Semantic(crate::semantic::Error),
}

impl From<Error> for ToolError {
    fn from(e: Error) -> ToolError {
        ToolError::Tool(e)
    }
}

/// A code tool's arguments as the type its handler takes (and its schema describes).
pub(super) fn parse<T: serde::de::DeserializeOwned>(
    args: Map<String, Value>,
) -> Result<T, ToolError> {
    serde_json::from_value(Value::Object(args))
        .map_err(|e| ToolError::Arguments(format!("invalid arguments: {e}")))
}

fn json<T: serde::Serialize>(value: &T) -> Result<Value, Error> {
    serde_json::to_value(value).map_err(Error::Encode)
}

/// The root-relative paths a tool's answer shows: every `path` field, and the items of
/// a file list. What an agent has seen of the repository, for exploration evidence.
pub fn paths_in(answer: &Value, out: &mut BTreeSet<String>) {
    match answer {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("path" | "file", Value::String(p)) => {
                        out.insert(p.clone());
                    }
                    _ => paths_in(v, out),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                paths_in(item, out);
            }
        }
        _ => {}
    }
}
