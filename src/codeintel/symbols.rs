//! Symbol queries: definitions (from the index), references (parsed from the files that
//! mention the name, see `references`; text search as the fallback, and the answer says
//! which), a file's outline, the function at a line, and the structure of a file or
//! directory.

use std::collections::{BTreeMap, BTreeSet};

use super::error::Error;
use super::index::{Freshness, Index};
use super::page::{Page, Window};
use super::qualified::{self, Qualified};
use super::references::{self, REFERENCE_KINDS, Use, UseCounts};
use super::root::Root;
use super::search::search_words;
use super::tags::Tag;

/// One symbol occurrence.
#[derive(Debug, Clone, PartialEq)]
pub struct SymbolHit {
    pub name: String,
    pub kind: String,
    pub path: String,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub scope: Option<String>,
    pub signature: String,
    pub definition: bool,
    /// For a reference: how far its file says it is a use of this name (`import`, `local`,
    /// `module`, `self`, or `name` when only the name matches).
    pub resolution: Option<&'static str>,
    /// For a reference: what its name is reached through (`admin` in `admin.ModelAdmin`).
    pub qualifier: Option<String>,
}

/// A list of symbols, how it was found, and how fresh the index was.
#[derive(Debug, Clone)]
pub struct SymbolAnswer {
    pub symbols: Page<SymbolHit>,
    /// `index` (definitions from the symbol index), `syntax` (uses parsed from the files
    /// that mention the name) or `text` (word search, for names no parsed file uses).
    pub source: &'static str,
    /// For references: how many uses of each kind and resolution, before `--kind` and
    /// paging.
    pub uses: Option<UseCounts>,
    pub freshness: Freshness,
}

pub(crate) fn hit(path: &str, tag: Tag) -> SymbolHit {
    SymbolHit {
        name: tag.name,
        kind: tag.kind,
        path: path.to_string(),
        line: tag.line,
        column: tag.column,
        end_line: tag.end_line,
        scope: tag.scope,
        signature: tag.signature,
        definition: tag.is_definition,
        resolution: None,
        qualifier: tag.qualifier,
    }
}

/// The definitions among `hits` (of `q.name`) that the qualified name means.
pub(crate) fn members(q: &Qualified, hits: Vec<SymbolHit>) -> Vec<SymbolHit> {
    hits.into_iter()
        .filter(|h| q.defines(&h.path, h.scope.as_deref()))
        .collect()
}

fn use_hit(u: Use) -> SymbolHit {
    SymbolHit {
        resolution: Some(u.resolution.as_str()),
        ..hit(&u.path, u.tag)
    }
}

fn occurrences(index: &Index, name: &str, definitions: bool) -> Result<Vec<SymbolHit>, Error> {
    // Postings list definitions first, so reading stops or starts at the boundary without
    // decoding the strings of tags that are not wanted.
    let ids = index.lookup(name)?;
    let mut boundary = ids.len();
    for (k, t) in ids.iter().enumerate() {
        if !index.is_definition(*t)? {
            boundary = k;
            break;
        }
    }
    let wanted = if definitions {
        &ids[..boundary]
    } else {
        &ids[boundary..]
    };
    wanted
        .iter()
        .map(|t| {
            let (tag, file) = index.tag(*t)?;
            Ok(hit(index.file_path(file), tag))
        })
        .collect()
}

/// Fills the signature of reference hits with their source line, reading each file once.
/// Only the returned page is filled, so the cost is bounded by the page size.
pub(crate) fn fill_reference_lines(root: &Root, page: &mut Page<SymbolHit>) {
    let mut cache: std::collections::HashMap<String, Vec<String>> =
        std::collections::HashMap::new();
    // Every reference shows its source line, whichever layer it came from (the disk
    // index stores no text for references; tags made in memory carry the call's text).
    for h in page.items.iter_mut().filter(|h| !h.definition) {
        let lines = cache.entry(h.path.clone()).or_insert_with(|| {
            std::fs::read(root.path().join(&h.path))
                .map(|b| {
                    String::from_utf8_lossy(&b)
                        .lines()
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        });
        if let Some(line) = lines.get((h.line as usize).saturating_sub(1)) {
            h.signature = line.trim().chars().take(200).collect();
        }
    }
}

/// Every definition kind the tags queries produce (`@definition.KIND` in
/// `src/codeintel/queries/`; a test keeps the two in step). Languages name their own
/// things: Rust's are `struct`, `enum`, `union`, `type`, `trait`, `impl`, `fn`, `mod`,
/// `const`, `static`, `macro`, `variant`, `field`, and `method` for functions in `impl`
/// and `trait` bodies.
pub const DEFINITION_KINDS: &[&str] = &[
    "class",
    "const",
    "constant",
    "enum",
    "field",
    "fn",
    "function",
    "impl",
    "interface",
    "macro",
    "method",
    "mod",
    "module",
    "static",
    "struct",
    "trait",
    "type",
    "union",
    "variable",
    "variant",
];

/// Kinds counted as class-like in a structure summary.
const CLASS_KINDS: &[&str] = &[
    "class",
    "interface",
    "struct",
    "enum",
    "union",
    "trait",
    "module",
    "mod",
    "type",
];

/// Kinds that have a body of code: what `function_at_line` looks for.
const FUNCTION_KINDS: &[&str] = &["function", "fn", "method", "constructor", "macro"];

/// Where `name` is defined, optionally only of one kind (`function`, `struct`, ...; see
/// [`DEFINITION_KINDS`]; an unknown kind is an error listing them).
pub fn find_definitions(
    index: &Index,
    name: &str,
    kind: Option<&str>,
    window: Window,
) -> Result<SymbolAnswer, Error> {
    if let Some(k) = kind
        && !DEFINITION_KINDS.contains(&k)
    {
        return Err(Error::UnknownKind {
            kind: k.to_string(),
            known: DEFINITION_KINDS.join(", "),
        });
    }
    let mut hits = occurrences(index, name, true)?;
    if hits.is_empty()
        && let Some(q) = qualified::split(name)
    {
        // `Session.request`, `Index::open`: the member of that container.
        hits = members(&q, occurrences(index, &q.name, true)?);
    }
    if let Some(k) = kind {
        hits.retain(|h| h.kind == k);
    }
    Ok(SymbolAnswer {
        symbols: Page::of(hits, window),
        source: "index",
        uses: None,
        freshness: index.freshness.clone(),
    })
}

/// Where `name` is used: calls, subclasses and implementations, imports, type uses,
/// decorators and reads, parsed from the files that mention it, what the files say about
/// each use first (see [`references::Resolution`]), name matches last. Optionally only one
/// kind of use (see [`REFERENCE_KINDS`]; an unknown kind is an error listing them). When no
/// parsed file uses the name, falls back to a whole-word text search that leaves out the
/// definition lines (documentation, configuration, languages without a grammar).
pub fn find_references(
    root: &Root,
    index: &Index,
    name: &str,
    kind: Option<&str>,
    window: Window,
) -> Result<SymbolAnswer, Error> {
    if let Some(k) = kind
        && !REFERENCE_KINDS.contains(&k)
    {
        return Err(Error::UnknownKind {
            kind: k.to_string(),
            known: REFERENCE_KINDS.join(", "),
        });
    }
    if let Some(q) = qualified::split(name)
        && occurrences(index, name, true)?.is_empty()
    {
        return member_references(root, index, name, &q, kind, window);
    }
    let names = [name.to_string()];
    // One text search: its files are parsed for uses, and are the fallback's matches.
    let found = search_words(root, &names)?;
    let files = references::tag_found(root, &found, &names);
    let uses = references::uses_in(&files, &names);
    if !uses.is_empty() {
        return Ok(syntax_answer(root, index, uses, kind, window));
    }
    let definitions: BTreeSet<(String, u32)> = occurrences(index, name, true)?
        .into_iter()
        .map(|h| (h.path, h.line))
        .collect();
    let mut hits = Vec::new();
    for file in found.files {
        for m in file.matches {
            let line = u32::try_from(m.line).unwrap_or(u32::MAX);
            if definitions.contains(&(file.path.clone(), line)) {
                continue;
            }
            hits.push(SymbolHit {
                name: name.to_string(),
                kind: "text".into(),
                path: file.path.clone(),
                line,
                column: u32::try_from(m.column).unwrap_or(1),
                end_line: line,
                scope: None,
                signature: m.text.trim().to_string(),
                definition: false,
                resolution: Some(references::Resolution::Name.as_str()),
                qualifier: None,
            });
        }
    }
    if hits.is_empty() && definitions.is_empty() {
        // Not defined, not referenced, not even mentioned: most likely a typo.
        return Err(Error::NotFound(name.to_string()));
    }
    if kind.is_some() {
        // Text matches have no kind of use.
        hits.clear();
    }
    Ok(SymbolAnswer {
        symbols: Page::of(hits, window),
        source: "text",
        uses: None,
        freshness: index.freshness.clone(),
    })
}

/// The uses of a qualified name (`Session.request`): the uses of its member name that may
/// be of it (see [`Qualified::may_use`]). A name whose container defines no such member
/// is not found, as an unknown name is.
fn member_references(
    root: &Root,
    index: &Index,
    written: &str,
    q: &Qualified,
    kind: Option<&str>,
    window: Window,
) -> Result<SymbolAnswer, Error> {
    let definitions = members(q, occurrences(index, &q.name, true)?);
    if definitions.is_empty() {
        return Err(Error::NotFound(written.to_string()));
    }
    let of_type = definitions
        .iter()
        .any(|d| d.scope.as_deref() == Some(q.last()));
    let names = [q.name.clone()];
    let found = search_words(root, &names)?;
    let files = references::tag_found(root, &found, &names);
    let mut uses = references::uses_in(&files, &names);
    uses.retain(|u| q.may_use(u, &files, of_type));
    Ok(syntax_answer(root, index, uses, kind, window))
}

/// The uses found by parsing, counted by kind before `kind` filters them, in reading
/// order, one page of them with their lines.
fn syntax_answer(
    root: &Root,
    index: &Index,
    mut uses: Vec<references::Use>,
    kind: Option<&str>,
    window: Window,
) -> SymbolAnswer {
    let counts = UseCounts::of(&uses);
    if let Some(k) = kind {
        uses.retain(|u| u.tag.kind == k);
    }
    references::sort_for_reading(&mut uses);
    let mut symbols = Page::of(uses.into_iter().map(use_hit).collect(), window);
    fill_reference_lines(root, &mut symbols);
    SymbolAnswer {
        symbols,
        source: "syntax",
        uses: Some(counts),
        freshness: index.freshness.clone(),
    }
}

/// The outline a name stands for when it is not a file: a module (`requests.sessions`,
/// the one indexed file whose module path ends with it) or a definition (`Session`,
/// `sessions.Session`, `Index::open`) with the definitions inside it. `None` when it is
/// neither.
fn named_outline(index: &Index, text: &str) -> Result<Option<Vec<SymbolHit>>, Error> {
    let parts: Vec<String> = text
        .split(['.', ':'])
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    let modules: Vec<usize> = (0..index.file_count())
        .filter(|&i| qualified::is_module(index.file_path(i), &parts))
        .collect();
    if let [file] = modules.as_slice() {
        let path = index.file_path(*file).to_string();
        let hits = index
            .file_tags(*file)?
            .into_iter()
            .filter(|t| t.is_definition)
            .map(|t| hit(&path, t))
            .collect();
        return Ok(Some(hits));
    }
    let definitions = match qualified::split(text) {
        Some(q) => members(&q, occurrences(index, &q.name, true)?),
        None => occurrences(index, text, true)?,
    };
    if definitions.is_empty() {
        return Ok(None);
    }
    let mut hits = Vec::new();
    for d in definitions {
        let Some(i) = index.file_index(&d.path) else {
            continue;
        };
        hits.extend(
            index
                .file_tags(i)?
                .into_iter()
                .filter(|t| t.is_definition && d.line <= t.line && t.line <= d.end_line)
                .map(|t| hit(&d.path, t)),
        );
    }
    Ok(Some(hits))
}

fn file_index(index: &Index, root: &Root, file: &str) -> Result<(usize, String), Error> {
    let abs = root.resolve(file)?;
    let rel = root.relative(&abs);
    match index.file_index(&rel) {
        Some(i) => Ok((i, rel)),
        None => Err(why_not_indexed(&abs, rel)),
    }
}

/// Why a file is not in the index, as precisely as the file says: a directory, a file
/// that cannot be read, one over the size limit, or one of a language the index does not
/// cover.
fn why_not_indexed(abs: &std::path::Path, rel: String) -> Error {
    let meta = match std::fs::metadata(abs) {
        Ok(meta) => meta,
        Err(e) => return Error::io(abs, e),
    };
    if meta.is_dir() {
        return Error::IsDirectory(rel);
    }
    if let Err(e) = std::fs::File::open(abs) {
        return Error::io(abs, e);
    }
    let limit = super::retag::MAX_FILE_BYTES;
    if super::languages::for_path(abs).is_some() && meta.len() > limit {
        return Error::TooLarge {
            path: rel,
            size: meta.len(),
            limit,
        };
    }
    not_indexed(rel)
}

fn not_indexed(path: String) -> Error {
    let supported: Vec<&str> = super::languages::all().iter().map(|l| l.name).collect();
    Error::NotIndexed {
        path,
        supported: supported.join(", "),
    }
}

/// The definitions of one file, in order: its outline.
pub fn get_symbols(
    root: &Root,
    index: &Index,
    file: &str,
    window: Window,
) -> Result<SymbolAnswer, Error> {
    let (i, rel) = match file_index(index, root, file) {
        Ok(found) => found,
        Err(not_a_file @ Error::Path(super::error::PathError::NotFound(_))) => {
            // A class or module by name: its outline.
            let Some(hits) = named_outline(index, file)? else {
                return Err(not_a_file);
            };
            return Ok(SymbolAnswer {
                symbols: Page::of(hits, window),
                source: "index",
                uses: None,
                freshness: index.freshness.clone(),
            });
        }
        Err(e) => return Err(e),
    };
    let hits: Vec<SymbolHit> = index
        .file_tags(i)?
        .into_iter()
        .filter(|t| t.is_definition)
        .map(|t| hit(&rel, t))
        .collect();
    Ok(SymbolAnswer {
        symbols: Page::of(hits, window),
        source: "index",
        uses: None,
        freshness: index.freshness.clone(),
    })
}

/// The innermost definition of a function-like kind whose lines contain `line`.
#[derive(Debug, Clone)]
pub struct FunctionAtLine {
    pub path: String,
    pub line: u32,
    pub function: Option<SymbolHit>,
    /// The definitions that enclose the line, outermost first (class, then method).
    pub enclosing: Vec<SymbolHit>,
    pub freshness: Freshness,
}

pub fn function_at_line(
    root: &Root,
    index: &Index,
    file: &str,
    line: u32,
) -> Result<FunctionAtLine, Error> {
    let (i, rel) = file_index(index, root, file)?;
    // A definition holds the lines of its whole node, decorators and attributes before
    // its name included (`start_line`); indexes of older tags have no start and use the
    // name's line.
    let start = |t: &Tag| {
        if t.start_line == 0 {
            t.line
        } else {
            t.start_line.min(t.line)
        }
    };
    let mut enclosing: Vec<(u32, SymbolHit)> = index
        .file_tags(i)?
        .into_iter()
        .filter(|t| t.is_definition && start(t) <= line && line <= t.end_line)
        .map(|t| (start(&t), hit(&rel, t)))
        .collect();
    // Outermost first: the wider range, then the earlier start.
    enclosing.sort_by_key(|(s, h)| (std::cmp::Reverse(h.end_line - s), *s));
    let enclosing: Vec<SymbolHit> = enclosing.into_iter().map(|(_, h)| h).collect();
    let function = enclosing
        .iter()
        .rev()
        .find(|h| FUNCTION_KINDS.contains(&h.kind.as_str()))
        .cloned();
    Ok(FunctionAtLine {
        path: rel,
        line,
        function,
        enclosing,
        freshness: index.freshness.clone(),
    })
}

/// A definition with the definitions nested inside it.
#[derive(Debug, Clone)]
pub struct Outline {
    pub name: String,
    pub kind: String,
    pub line: u32,
    pub end_line: u32,
    pub children: Vec<Outline>,
}

#[derive(Debug, Clone)]
pub struct FileStructure {
    pub path: String,
    pub language: String,
    pub imports: Vec<String>,
    pub classes: usize,
    pub functions: usize,
    /// Definitions nested by line ranges.
    pub outline: Vec<Outline>,
}

#[derive(Debug, Clone)]
pub struct Structure {
    pub files: Page<FileStructure>,
    /// Definition counts by kind over every file under the path.
    pub kinds: BTreeMap<String, usize>,
    pub freshness: Freshness,
}

/// The imports of a file, each whole: an import whose brackets open on its first line
/// (`from x import (`, `use a::{`, `import {`, Go's `import (`) runs until they close,
/// and is given as one line with its whitespace collapsed.
fn imports_of(language: &str, text: &str) -> Vec<String> {
    const MAX_IMPORT_CHARS: usize = 2000;
    let depth_of = |line: &str| -> i64 {
        line.chars()
            .map(|c| match c {
                '(' | '{' | '[' => 1,
                ')' | '}' | ']' => -1,
                _ => 0,
            })
            .sum()
    };
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if !is_import(language, line) {
            continue;
        }
        let mut whole = line.trim().to_string();
        let mut depth = depth_of(line);
        while depth > 0 {
            let Some(next) = lines.next() else { break };
            whole.push(' ');
            whole.push_str(next.trim());
            depth += depth_of(next);
        }
        let collapsed: String = whole
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(MAX_IMPORT_CHARS)
            .collect();
        out.push(collapsed);
    }
    out
}

/// Lines that import other code, per language (text patterns: imports are simple enough).
fn is_import(language: &str, line: &str) -> bool {
    let l = line.trim_start();
    match language {
        "rust" => {
            l.starts_with("use ")
                || l.starts_with("pub use ")
                || l.starts_with("extern crate ")
                || l.starts_with("mod ") && l.ends_with(';')
        }
        "python" => l.starts_with("import ") || l.starts_with("from ") && l.contains(" import "),
        "javascript" | "typescript" | "tsx" => {
            l.starts_with("import ")
                || l.contains("require(")
                    && (l.starts_with("const ") || l.starts_with("var ") || l.starts_with("let "))
        }
        "go" => l.starts_with("import ") || l.starts_with('"') && l.ends_with('"'),
        "java" => l.starts_with("import "),
        "c" | "cpp" => l.starts_with("#include"),
        "php" => l.starts_with("use ") || l.starts_with("require") || l.starts_with("include"),
        "ruby" => l.starts_with("require ") || l.starts_with("require_relative "),
        "c_sharp" => l.starts_with("using ") && l.ends_with(';'),
        _ => false,
    }
}

fn nest(mut defs: Vec<Tag>) -> Vec<Outline> {
    defs.sort_by_key(|t| (t.line, std::cmp::Reverse(t.end_line)));
    let mut roots: Vec<Outline> = Vec::new();
    for t in defs {
        let node = Outline {
            name: t.name,
            kind: t.kind,
            line: t.line,
            end_line: t.end_line,
            children: Vec::new(),
        };
        insert(&mut roots, node);
    }
    roots
}

fn insert(level: &mut Vec<Outline>, node: Outline) {
    if let Some(parent) = level.last_mut()
        && parent.line <= node.line
        && node.end_line <= parent.end_line
        && (parent.line, parent.end_line) != (node.line, node.end_line)
    {
        insert(&mut parent.children, node);
        return;
    }
    level.push(node);
}

/// Classes, functions, imports and nesting of a file, or of every file under a directory.
pub fn analyze_structure(
    root: &Root,
    index: &Index,
    path: &str,
    window: Window,
) -> Result<Structure, Error> {
    let abs = root.resolve(path)?;
    let rel = root.relative(&abs);
    let prefix = if abs.is_dir() && !rel.is_empty() {
        format!("{rel}/")
    } else {
        String::new()
    };
    let selected: Vec<usize> = (0..index.file_count())
        .filter(|i| {
            let p = index.file_path(*i);
            if abs.is_dir() {
                p.starts_with(&prefix)
            } else {
                p == rel
            }
        })
        .collect();
    if selected.is_empty() && !abs.is_dir() {
        return Err(not_indexed(rel));
    }
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    let mut files = Vec::new();
    for i in selected {
        let tags: Vec<Tag> = index
            .file_tags(i)?
            .into_iter()
            .filter(|t| t.is_definition)
            .collect();
        for t in &tags {
            *kinds.entry(t.kind.clone()).or_default() += 1;
        }
        let path = index.file_path(i).to_string();
        let language = index.file_language(i)?;
        let imports = std::fs::read_to_string(root.path().join(&path))
            .map(|text| imports_of(&language, &text))
            .unwrap_or_default();
        let classes = tags
            .iter()
            .filter(|t| CLASS_KINDS.contains(&t.kind.as_str()))
            .count();
        let functions = tags
            .iter()
            .filter(|t| FUNCTION_KINDS.contains(&t.kind.as_str()))
            .count();
        files.push(FileStructure {
            path,
            language,
            imports,
            classes,
            functions,
            outline: nest(tags),
        });
    }
    Ok(Structure {
        files: Page::of(files, window),
        kinds,
        freshness: index.freshness.clone(),
    })
}
