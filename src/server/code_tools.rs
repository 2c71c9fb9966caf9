//! The code-intelligence tools as the server offers them: argument types (their JSON
//! Schemas are the tools' input schemas) and one function per tool that answers with the
//! `codeintel::wire` JSON. Paths go through `codeintel::root`, as for the CLI.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::codeintel::error::Error;
use crate::codeintel::impact::analyze_impact;
use crate::codeintel::index::Index;
use crate::codeintel::page::Window;
use crate::codeintel::query;
use crate::codeintel::refresh::refresh_changed;
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
    /// The most results to return (default 100, at most 1000).
    #[serde(default = "default_limit", deserialize_with = "lenient_count")]
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
            limit: self.limit.clamp(1, 1000),
        }
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
    /// Only definitions of this kind (`function`, `class`, `method`, ...).
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

/// The index a symbol tool answers from: refreshed on disk when possible, otherwise
/// re-tagged in memory for this answer, with the reason in its freshness.
pub fn prepare_index(root: &Root) -> Result<Index, Error> {
    match refresh_changed(root) {
        Ok(index) => Ok(index),
        Err(e) => {
            let mut index = Index::open(root)?;
            index.freshness.unsaved = Some(format!(
                "the index could not be updated ({e}); changed files were re-tagged in memory for this answer"
            ));
            Ok(index)
        }
    }
}

fn json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

pub fn search_text_tool(root: &Root, a: SearchTextArgs) -> Result<Value, Error> {
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

pub fn search_files_tool(root: &Root, a: SearchFilesArgs) -> Result<Value, Error> {
    let q = FileQuery {
        globs: a.globs,
        types: a.types,
        paths: Vec::new(),
    };
    let p = search_files(root, &q, a.paging.window())?;
    Ok(json(&wire::Page::<String>::from(&p)))
}

pub fn definitions_tool(root: &Root, a: DefinitionsArgs) -> Result<Value, Error> {
    let index = prepare_index(root)?;
    let answer = find_definitions(&index, &a.name, a.kind.as_deref(), a.paging.window())?;
    Ok(json(&wire::SymbolAnswer::from(&answer)))
}

pub fn references_tool(root: &Root, a: ReferencesArgs) -> Result<Value, Error> {
    let index = prepare_index(root)?;
    let answer = find_references(root, &index, &a.name, a.paging.window())?;
    Ok(json(&wire::SymbolAnswer::from(&answer)))
}

pub fn symbols_tool(root: &Root, a: FileArgs) -> Result<Value, Error> {
    let index = prepare_index(root)?;
    let answer = get_symbols(root, &index, &a.file_path, a.paging.window())?;
    Ok(json(&wire::SymbolAnswer::from(&answer)))
}

pub fn function_at_line_tool(root: &Root, a: LineArgs) -> Result<Value, Error> {
    let index = prepare_index(root)?;
    let line = u32::try_from(a.line).unwrap_or(u32::MAX);
    let answer = function_at_line(root, &index, &a.file_path, line)?;
    Ok(json(&wire::FunctionAtLine::from(&answer)))
}

pub fn structure_tool(root: &Root, a: PathArgs) -> Result<Value, Error> {
    let index = prepare_index(root)?;
    let s = analyze_structure(root, &index, &a.path, a.paging.window())?;
    Ok(json(&wire::Structure::from(&s)))
}

pub fn impact_tool(root: &Root, a: ImpactArgs) -> Result<Value, Error> {
    let index = prepare_index(root)?;
    let i = analyze_impact(root, &index, &a.targets, a.paging.window())?;
    Ok(json(&wire::Impact::from(&i)))
}

pub fn query_tool(root: &Root, a: QueryArgs) -> Result<Value, Error> {
    let route = query::route(root, &a.question)?;
    let index = route
        .uses_index()
        .then(|| prepare_index(root))
        .transpose()?;
    let answer = query::answer(root, index.as_ref(), route, a.paging.window())?;
    Ok(json(&wire::QueryAnswer::from(&answer)))
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
