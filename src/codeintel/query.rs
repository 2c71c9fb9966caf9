//! `query`: a natural-language entry point that routes a question to one of the tools and
//! says which it used and why. The routing is a small set of phrase rules, not a model, so
//! it is predictable.

use super::error::Error;
use super::impact::{Impact, SUMMARY_TOP, View, analyze};
use super::index::Index;
use super::page::Window;
use super::root::Root;
use super::search::{Case, FileList, FileQuery, TextQuery, TextResult, search_files, search_text};
use super::symbols::{
    Structure, SymbolAnswer, analyze_structure, find_definitions, find_references, get_symbols,
};

/// A question, the tool it was routed to and why, and that tool's answer.
#[derive(Debug, Clone)]
pub struct QueryAnswer {
    /// The tool the question was routed to.
    pub tool: &'static str,
    pub why: String,
    /// The one argument the tool was called with: its name and the question's subject.
    pub argument: (&'static str, String),
    pub result: Routed,
}

/// The answer of the tool a question was routed to.
#[derive(Debug, Clone)]
pub enum Routed {
    /// `find_definitions`, `find_references` or `get_symbols`.
    Symbols(SymbolAnswer),
    /// Boxed: an impact is several times larger than the other answers.
    Impact(Box<Impact>),
    Structure(Structure),
    Files(FileList),
    Text(TextResult),
}

/// Identifier-like words of the question, longest first (`parse_config`, `UserService`).
fn identifiers(question: &str) -> Vec<String> {
    let stop = [
        "where",
        "what",
        "which",
        "who",
        "how",
        "is",
        "are",
        "the",
        "defined",
        "define",
        "definition",
        "calls",
        "call",
        "used",
        "uses",
        "usages",
        "references",
        "find",
        "show",
        "of",
        "in",
        "to",
        "a",
        "an",
        "does",
        "do",
        "file",
        "files",
        "structure",
        "impact",
        "change",
        "changes",
        "if",
        "i",
        "symbols",
        "outline",
        "named",
        "called",
        "function",
        "class",
        "method",
    ];
    let mut words: Vec<String> = question
        .split(|c: char| {
            !(c.is_alphanumeric() || c == '_' || c == '.' || c == '/' || c == '*' || c == '-')
        })
        .map(|w| w.trim_matches(|c| c == '.' || c == '-').to_string())
        .filter(|w| !w.is_empty() && !stop.contains(&w.to_ascii_lowercase().as_str()))
        .collect();
    words.sort_by_key(|w| std::cmp::Reverse(w.len()));
    words
}

fn quoted(question: &str) -> Option<String> {
    for q in ['`', '"', '\''] {
        let mut parts = question.split(q);
        parts.next();
        if let Some(inner) = parts.next()
            && !inner.is_empty()
            && question.matches(q).count() >= 2
        {
            return Some(inner.to_string());
        }
    }
    None
}

/// Answers a question by routing it to a tool, opening the index when the tool reads it.
pub fn query(root: &Root, question: &str, window: Window) -> Result<QueryAnswer, Error> {
    let route = route(root, question)?;
    let index = route.uses_index().then(|| Index::open(root)).transpose()?;
    answer(root, index.as_ref(), route, window)
}

/// Where a question goes: the tool, why, and the subject it is called with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Route {
    pub(crate) tool: &'static str,
    pub(crate) why: &'static str,
    pub(crate) subject: String,
}

impl Route {
    /// Whether the tool reads the symbol index (a caller may want to refresh it first).
    pub(crate) fn uses_index(&self) -> bool {
        !matches!(self.tool, "search_files" | "search_text" | BY_MEANING)
    }

    /// Whether the question goes to semantic search, which the caller runs (the semantic
    /// index lives above this module); [`answer`] gives the text search fallback.
    pub(crate) fn is_semantic(&self) -> bool {
        self.tool == BY_MEANING
    }
}

/// The semantic search tool, for questions in plain words.
const BY_MEANING: &str = "semantic_search";

/// Whether a word is shaped like an identifier or a path rather than an English word:
/// `parse_config`, `UserService`, `getUser`, `app.py`, `Index::open`, `src/lib.rs`.
fn identifier_shaped(word: &str) -> bool {
    let inner_upper = word.chars().skip(1).any(char::is_uppercase);
    word.contains(['_', '/', '.', ':', '*'])
        || inner_upper
        || word.chars().any(|c| c.is_ascii_digit())
}

/// Whether a question is a description in plain words ("how does the library pick
/// proxies from environment variables"): at least three words and none shaped like an
/// identifier or path. Such a question names no symbol to look up; its words are what
/// semantic search ranks by.
fn is_plain_words(question: &str) -> bool {
    let words: Vec<&str> = question
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| c.is_ascii_punctuation() && c != '_'))
        .filter(|w| !w.is_empty())
        .collect();
    words.len() >= 3 && !words.iter().any(|w| identifier_shaped(w))
}

/// Routes a question to a tool, without running it.
pub(crate) fn route(root: &Root, question: &str) -> Result<Route, Error> {
    let q = question.to_ascii_lowercase();
    let subject = quoted(question)
        .or_else(|| identifiers(question).into_iter().next())
        .ok_or(Error::NothingToLookFor(
            "the question names nothing to look for",
        ))?;
    let looks_like_path =
        subject.contains('/') || subject.contains('.') && root.resolve(&subject).is_ok();
    let has = |words: &[&str]| words.iter().any(|w| q.contains(w));
    let (tool, why): (&'static str, &'static str) =
        if has(&["impact", "what breaks", "affected", "affect"]) {
            ("analyze_impact", "the question asks what a change affects")
        } else if has(&[
            "who calls",
            "callers",
            "usages",
            "references",
            "where is",
            "used",
        ]) && has(&["call", "usage", "reference", "used"])
        {
            (
                "find_references",
                "the question asks where something is used",
            )
        } else if has(&["structure", "imports", "nesting"]) {
            ("analyze_structure", "the question asks for structure")
        } else if has(&[
            "outline",
            "symbols in",
            "what is in",
            "what's in",
            "contents of",
        ]) && looks_like_path
        {
            ("get_symbols", "the question asks for a file's outline")
        } else if has(&[
            "files named",
            "file named",
            "files matching",
            "find files",
            "which files",
        ]) {
            ("search_files", "the question asks for files by name")
        } else if has(&[
            "defined",
            "definition",
            "declared",
            "declaration",
            "implemented",
            "implementation",
        ]) {
            (
                "find_definitions",
                "the question asks where something is defined",
            )
        } else if quoted(question).is_some() {
            ("search_text", "the question quotes text to find")
        } else if is_plain_words(question) {
            (
                BY_MEANING,
                "the question describes behaviour in plain words and names no identifier",
            )
        } else {
            (
                "find_definitions",
                "the question names an identifier; its definitions come first",
            )
        };
    Ok(Route { tool, why, subject })
}

/// Runs the tool a question was routed to. `index` is what index tools answer from; when
/// the caller has none, it is opened here.
pub(crate) fn answer(
    root: &Root,
    index: Option<&Index>,
    route: Route,
    window: Window,
) -> Result<QueryAnswer, Error> {
    let opened = match index {
        None if route.uses_index() => Some(Index::open(root)?),
        _ => None,
    };
    // Index tools have an index here (`uses_index`); the others match on `None`.
    let index = index.or(opened.as_ref());
    let Route { tool, why, subject } = route;
    let answer = |tool, why: String, key, result| {
        Ok(QueryAnswer {
            tool,
            why,
            argument: (key, subject.clone()),
            result,
        })
    };
    let text = || TextQuery {
        patterns: vec![subject.clone()],
        case: Case::Smart,
        ..TextQuery::default()
    };
    match (tool, index) {
        ("analyze_impact", Some(index)) => answer(
            tool,
            why.into(),
            "targets",
            // Counts per section and the top items: a question wants the gist.
            Routed::Impact(Box::new(analyze(
                root,
                index,
                std::slice::from_ref(&subject),
                View::Summary { top: SUMMARY_TOP },
            )?)),
        ),
        ("find_references", Some(index)) => answer(
            tool,
            why.into(),
            "name",
            Routed::Symbols(find_references(root, index, &subject, None, window)?),
        ),
        ("analyze_structure", Some(index)) => answer(
            tool,
            why.into(),
            "path",
            Routed::Structure(analyze_structure(root, index, &subject, window)?),
        ),
        ("get_symbols", Some(index)) => answer(
            tool,
            why.into(),
            "file",
            Routed::Symbols(get_symbols(root, index, &subject, window)?),
        ),
        ("search_files", _) => {
            let fq = FileQuery {
                globs: vec![subject.clone()],
                ..FileQuery::default()
            };
            answer(
                tool,
                why.into(),
                "glob",
                Routed::Files(search_files(root, &fq, window)?),
            )
        }
        ("find_definitions", Some(index)) => {
            let defs = find_definitions(index, &subject, None, window)?;
            if defs.symbols.total > 0 {
                return answer(tool, why.into(), "name", Routed::Symbols(defs));
            }
            answer(
                "search_text",
                format!("{why}, but it has no definition, so its text was searched"),
                "pattern",
                Routed::Text(search_text(root, &text(), window)?),
            )
        }
        (BY_MEANING, _) => answer(
            "search_text",
            format!(
                "{why}, but semantic search is not available here, so its longest word was searched"
            ),
            "pattern",
            Routed::Text(search_text(root, &text(), window)?),
        ),
        _ => answer(
            "search_text",
            why.into(),
            "pattern",
            Routed::Text(search_text(root, &text(), window)?),
        ),
    }
}
