//! The code-intelligence tools as the server offers them: argument types (their JSON
//! Schemas are the tools' input schemas) and one function per tool that answers with the
//! `codeintel::wire` JSON. Paths go through `codeintel::root`, as for the CLI.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value, json};

use super::index_cache::{IndexCache, Lookup, WALK_INTERVAL};
use super::semantic_tools::SemanticTools;
use crate::codeintel::error::Error;
use crate::codeintel::impact::analyze_impact;
use crate::codeintel::index::Index;
use crate::codeintel::languages;
use crate::codeintel::page::Window;
use crate::codeintel::query;
use crate::codeintel::root::Root;
use crate::codeintel::search::{Case, FileQuery, TextQuery, search_files, search_text};
use crate::codeintel::symbols::{
    analyze_structure, find_definitions, find_references, function_at_line, get_symbols,
};
use crate::codeintel::wire;

/// How many results to skip and return. Numbers may also arrive as numeric strings
/// (some clients, such as the MCP Inspector, send optional numbers that way).
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
pub struct Paging {
    /// Results to skip, to page through long lists (default 0).
    #[serde(default, deserialize_with = "lenient_count")]
    #[schemars(with = "Option<u32>")]
    pub offset: usize,
    /// The most results to return: 1 to 1000 (more is cut to 1000); absent or null
    /// means 100.
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
pub struct SearchTextArgs {
    /// One or more patterns; a line matches when any of them does. Literal text unless
    /// `regex` is true.
    pub patterns: Vec<String>,
    /// Treat the patterns as regular expressions (Rust `regex` syntax).
    #[serde(default)]
    pub regex: bool,
    /// Ignore case.
    #[serde(default)]
    pub ignore_case: bool,
    /// Match whole words only.
    #[serde(default)]
    pub word: bool,
    /// Only paths matching these globs (`src/**/*.rs`; `!*.min.js` excludes).
    #[serde(default)]
    pub globs: Vec<String>,
    /// Only files of these types, by ripgrep's names (`rust`, `py`, `js`, ...).
    #[serde(default)]
    pub types: Vec<String>,
    /// Lines of context before and after each match (at most 10).
    #[serde(default, deserialize_with = "lenient_count")]
    #[schemars(with = "Option<u32>")]
    pub context: usize,
    /// Search only under these root-relative paths.
    #[serde(default)]
    pub paths: Vec<String>,
    #[serde(flatten)]
    pub paging: Paging,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchFilesArgs {
    /// Globs over root-relative paths; a bare name matches at any depth (`*.rs`,
    /// `Cargo.toml`, `src/**/test_*.py`).
    pub globs: Vec<String>,
    /// Only files of these types, by ripgrep's names.
    #[serde(default)]
    pub types: Vec<String>,
    #[serde(flatten)]
    pub paging: Paging,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DefinitionsArgs {
    /// The symbol name exactly as written in code (`parse_config`, `UserForm`).
    pub name: String,
    /// Only definitions of this kind, as the language names it (`function`, `class`,
    /// `method`; Rust: `struct`, `enum`, `trait`, `impl`, `fn`, ...); an unknown kind is an
    /// error that lists them.
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(flatten)]
    pub paging: Paging,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReferencesArgs {
    /// The symbol name exactly as written in code.
    pub name: String,
    /// Only uses of this kind: `call`, `inherit` (subclasses, implementations), `import`,
    /// `type`, `decorator` or `read` (any other use as a value).
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(flatten)]
    pub paging: Paging,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileArgs {
    /// A root-relative source file (`src/app.py`).
    pub file_path: String,
    #[serde(flatten)]
    pub paging: Paging,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LineArgs {
    /// A root-relative source file.
    pub file_path: String,
    /// A 1-based line number in it.
    #[serde(deserialize_with = "lenient_count")]
    #[schemars(with = "u32")]
    pub line: usize,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathArgs {
    /// A root-relative file or directory (default: the whole repository).
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
pub struct ImpactArgs {
    /// Root-relative files and/or symbol names you plan to change.
    pub targets: Vec<String>,
    #[serde(flatten)]
    pub paging: Paging,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryArgs {
    /// A question in plain words, e.g. "where is parse_config defined" or "who calls
    /// save"; it is routed to one of the other tools.
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
fn text_fallback(root: &Root, names: &[String], paging: Paging, why: &str) -> Result<Value, Error> {
    let q = TextQuery {
        patterns: names.to_vec(),
        word: true,
        ..TextQuery::default()
    };
    let r = search_text(root, &q, paging.window())?;
    Ok(json!({
        "source": "text",
        "note": format!("{why}; these are whole-word text matches, not resolved symbols"),
        "matches": json(&wire::TextResult::from(&r)),
    }))
}

fn not_ready(lookup: &Lookup) -> String {
    match lookup {
        Lookup::Building { done, total } => {
            format!("the symbol index is still being built ({done} of {total} files tagged)")
        }
        Lookup::Failed(reason) => format!("the symbol index is unavailable ({reason})"),
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

impl CodeTools {
    /// Runs the code tool `name`; `Ok(None)` when there is no such tool. The index on disk
    /// is checked piece by piece as tools read it (`codeintel::store`): when a piece does
    /// not match its checksum, the index is repaired and the tool runs again, once.
    pub fn call(&self, name: &str, args: Map<String, Value>) -> Result<Option<Value>, ToolError> {
        match self.call_once(name, args.clone()) {
            Err(ToolError::Tool(problem @ Error::IndexCorrupt { .. })) => {
                self.index.repair(&problem);
                self.call_once(name, args)
            }
            other => other,
        }
    }

    fn call_once(&self, name: &str, args: Map<String, Value>) -> Result<Option<Value>, ToolError> {
        let root = &self.root;
        let value = match name {
            "search_text" => search_text_tool(root, parse(args)?)?,
            "semantic_search" => self
                .semantic
                .search(parse(args)?)
                .map_err(ToolError::Semantic)?,
            "fetch_chunk_detail" => self
                .semantic
                .chunk(parse(args)?)
                .map_err(ToolError::Semantic)?,
            "sync_index" => self.semantic.sync(parse(args)?),
            "update_context" => self
                .semantic
                .update_context(parse(args)?)
                .map_err(ToolError::Arguments)?,
            "search_files" => search_files_tool(root, parse(args)?)?,
            "find_definitions" => {
                let a: DefinitionsArgs = parse(args)?;
                match self.index.lookup() {
                    Lookup::Ready(index) => {
                        let mut answer = find_definitions(
                            &index,
                            &a.name,
                            a.kind.as_deref(),
                            a.paging.window(),
                        )?;
                        if answer.symbols.total == 0
                            && let Lookup::Ready(index) = self.index.rescan()
                        {
                            // Maybe defined in a file created since the last walk.
                            answer = find_definitions(
                                &index,
                                &a.name,
                                a.kind.as_deref(),
                                a.paging.window(),
                            )?;
                        }
                        json(&wire::SymbolAnswer::from(&answer))
                    }
                    other => {
                        // The files that mention the name, tagged now: the answer the
                        // full index will give.
                        let index = Index::for_names(root, std::slice::from_ref(&a.name))?;
                        let answer = find_definitions(
                            &index,
                            &a.name,
                            a.kind.as_deref(),
                            a.paging.window(),
                        )?;
                        with_status(json(&wire::SymbolAnswer::from(&answer)), &not_ready(&other))
                    }
                }
            }
            "find_references" => {
                let a: ReferencesArgs = parse(args)?;
                // Uses are parsed from the files that mention the name either way; the
                // index only gives the definitions the text fallback leaves out.
                let (index, status) = match self.index.lookup() {
                    Lookup::Ready(index) => (index, None),
                    other => (
                        Arc::new(Index::for_names(root, std::slice::from_ref(&a.name))?),
                        Some(not_ready(&other)),
                    ),
                };
                let answer =
                    find_references(root, &index, &a.name, a.kind.as_deref(), a.paging.window())?;
                let value = json(&wire::SymbolAnswer::from(&answer));
                match status {
                    Some(note) => with_status(value, &note),
                    None => value,
                }
            }
            "get_symbols" => {
                let a: FileArgs = parse(args)?;
                let (index, note) = self.index_for(&a.file_path)?;
                let answer = get_symbols(root, &index, &a.file_path, a.paging.window())?;
                with_note(json(&wire::SymbolAnswer::from(&answer)), note)
            }
            "get_function_at_line" => {
                let a: LineArgs = parse(args)?;
                let (index, note) = self.index_for(&a.file_path)?;
                let line = u32::try_from(a.line).unwrap_or(u32::MAX);
                let answer = function_at_line(root, &index, &a.file_path, line)?;
                with_note(json(&wire::FunctionAtLine::from(&answer)), note)
            }
            "analyze_structure" => {
                let a: PathArgs = parse(args)?;
                let lookup = self.index.lookup();
                let (index, note) = match lookup {
                    Lookup::Ready(index) => (index, None),
                    other if root.resolve(&a.path).is_ok_and(|p| p.is_file()) => (
                        Arc::new(Index::for_files(root, &[a.path.as_str()])?),
                        Some(not_ready(&other)),
                    ),
                    other => {
                        let q = FileQuery {
                            globs: Vec::new(),
                            types: Vec::new(),
                            paths: vec![a.path.clone()],
                        };
                        let files = search_files(root, &q, a.paging.window())?;
                        return Ok(Some(json!({
                            "source": "files",
                            "note": format!("{}; the files under {} are listed instead of their structure", not_ready(&other), a.path),
                            "files": json(&wire::FileList::from(&files)),
                        })));
                    }
                };
                let s = analyze_structure(root, &index, &a.path, a.paging.window())?;
                with_note(json(&wire::Structure::from(&s)), note)
            }
            "analyze_impact" => {
                let a: ImpactArgs = parse(args)?;
                match self.index.lookup() {
                    Lookup::Ready(index) => {
                        let i = analyze_impact(root, &index, &a.targets, a.paging.window())?;
                        json(&wire::Impact::from(&i))
                    }
                    other => text_fallback(root, &a.targets, a.paging, &not_ready(&other))?,
                }
            }
            "query" => {
                let a: QueryArgs = parse(args)?;
                let route = query::route(root, &a.question)?;
                if route.uses_index() {
                    match self.index.lookup() {
                        Lookup::Ready(index) => {
                            let answer =
                                query::answer(root, Some(&index), route, a.paging.window())?;
                            json(&wire::QueryAnswer::from(&answer))
                        }
                        other => text_fallback(
                            root,
                            std::slice::from_ref(&route.subject),
                            a.paging,
                            &not_ready(&other),
                        )?,
                    }
                } else {
                    let answer = query::answer(root, None, route, a.paging.window())?;
                    json(&wire::QueryAnswer::from(&answer))
                }
            }
            _ => return Ok(None),
        };
        Ok(Some(server_freshness(value)))
    }

    /// The index for a file-scoped question: the shared one when ready, else that file
    /// tagged on the spot, with the reason.
    fn index_for(&self, file: &str) -> Result<(Arc<Index>, Option<String>), Error> {
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
                        Some(not_ready(&other)),
                    )),
                }
            }
            other => Ok((
                Arc::new(Index::for_files(&self.root, &[file])?),
                Some(not_ready(&other)),
            )),
        }
    }
}

/// The server's own freshness note: unlike a CLI run, it walks for new files (at most
/// every [`WALK_INTERVAL`], and at once before answering "not found").
fn server_freshness(mut value: Value) -> Value {
    let checked = FRESH_NOTE_PREFIX;
    for freshness in [value.get_mut("freshness"), None].into_iter().flatten() {
        if freshness["note"]
            .as_str()
            .is_some_and(|n| n.starts_with(checked))
        {
            freshness["note"] = Value::String(format!(
                "every indexed file was checked before answering; new files are found by a walk at most every {} s, and at once before a lookup answers that nothing was found",
                WALK_INTERVAL.as_secs()
            ));
        }
    }
    value
}

/// How the CLI's freshness note starts (`codeintel::index`).
const FRESH_NOTE_PREFIX: &str = "every indexed file was checked";

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

fn parse<T: serde::de::DeserializeOwned>(args: Map<String, Value>) -> Result<T, ToolError> {
    serde_json::from_value(Value::Object(args))
        .map_err(|e| ToolError::Arguments(format!("invalid arguments: {e}")))
}

fn json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn search_text_tool(root: &Root, a: SearchTextArgs) -> Result<Value, Error> {
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
    let r = search_text(root, &q, a.paging.window())?;
    Ok(json(&wire::TextResult::from(&r)))
}

fn search_files_tool(root: &Root, a: SearchFilesArgs) -> Result<Value, Error> {
    let q = FileQuery {
        globs: a.globs,
        types: a.types,
        paths: Vec::new(),
    };
    let p = search_files(root, &q, a.paging.window())?;
    Ok(json(&wire::FileList::from(&p)))
}

/// The root-relative paths a tool's answer shows: every `path` field, and the items of
/// a file list. What an agent has seen of the repository, for exploration evidence.
pub fn paths_in(answer: &Value, out: &mut std::collections::BTreeSet<String>) {
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
