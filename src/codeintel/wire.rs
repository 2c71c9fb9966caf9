//! The JSON the code-intelligence tools answer with: `serde` + `schemars` output types,
//! converted by hand from the domain types, which are not serializable.
//!
//! Keeping the two apart lets the domain change shape (layers, overlays, typed queries)
//! without changing what clients parse, and gives the MCP server one place to derive its
//! output schemas from. The CLI's `--json` prints exactly these; field order is the JSON
//! order, so reordering fields here is a breaking change for clients.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use super::{impact, index, page, query, references, refresh, search, symbols};

/// One page of a longer list.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct Page<T> {
    pub(crate) items: Vec<T>,
    /// How many items exist in all.
    pub(crate) total: usize,
    /// How many are in `items`.
    pub(crate) returned: usize,
    /// Whether items exist beyond this page.
    pub(crate) truncated: bool,
    pub(crate) offset: usize,
    /// The offset of the next page, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) next_offset: Option<usize>,
}

impl<'a, D, T: From<&'a D>> From<&'a page::Page<D>> for Page<T> {
    fn from(p: &'a page::Page<D>) -> Page<T> {
        Page {
            items: p.items.iter().map(T::from).collect(),
            total: p.total,
            returned: p.returned,
            truncated: p.truncated,
            offset: p.offset,
            next_offset: p.next_offset,
        }
    }
}

/// What a walk did not read (present only when something was skipped).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct Skipped {
    /// How many files and directories were not read.
    pub(crate) count: usize,
    /// How many for each reason: `permission_denied`, `unreadable` (another I/O error),
    /// `binary` (has a NUL byte; not searched), `not_a_regular_file` (a FIFO, socket or
    /// device), `too_large` (over the index's size limit).
    pub(crate) by_reason: BTreeMap<String, usize>,
    /// The first few: those that could not be read, then the others, each by path.
    pub(crate) first: Vec<SkippedPath>,
}

/// How many skipped paths an answer lists; `count` says how many there were.
pub(crate) const SKIPPED_LISTED: usize = 10;

/// One file or directory that was not read.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct SkippedPath {
    /// Its root-relative path (named so it does not count as a file the client has seen).
    pub(crate) location: String,
    pub(crate) reason: String,
    /// What the system said (`Permission denied (os error 13)`).
    pub(crate) error: String,
}

impl Skipped {
    /// None when nothing was skipped.
    pub(crate) fn of(s: &search::Skipped) -> Option<Skipped> {
        (!s.is_empty()).then(|| Skipped {
            count: s.count(),
            by_reason: s
                .by_reason()
                .into_iter()
                .map(|(reason, n)| (reason.key().to_string(), n))
                .collect(),
            first: (s.paths.iter().filter(|p| p.reason.is_error()))
                .chain(s.paths.iter().filter(|p| !p.reason.is_error()))
                .take(SKIPPED_LISTED)
                .map(|p| SkippedPath {
                    location: p.path.clone(),
                    reason: p.reason.key().to_string(),
                    error: p.message.clone(),
                })
                .collect(),
        })
    }
}

/// A matching line.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct LineMatch {
    pub(crate) line: u64,
    /// 1-based character column of the first match on the line.
    pub(crate) column: usize,
    pub(crate) text: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) before: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) after: Vec<String>,
}

impl From<&search::LineMatch> for LineMatch {
    fn from(m: &search::LineMatch) -> LineMatch {
        LineMatch {
            line: m.line,
            column: m.column,
            text: m.text.clone(),
            before: m.before.clone(),
            after: m.after.clone(),
        }
    }
}

/// The matching lines of one file.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct FileMatches {
    pub(crate) path: String,
    pub(crate) matches: Vec<LineMatch>,
}

impl From<&search::FileMatches> for FileMatches {
    fn from(f: &search::FileMatches) -> FileMatches {
        FileMatches {
            path: f.path.clone(),
            matches: f.matches.iter().map(LineMatch::from).collect(),
        }
    }
}

/// The answer of `search_text`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct TextResult {
    /// Matching lines grouped per file; the page counts lines, not files.
    pub(crate) files: Vec<FileMatches>,
    pub(crate) total: usize,
    pub(crate) returned: usize,
    pub(crate) truncated: bool,
    pub(crate) offset: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) next_offset: Option<usize>,
    pub(crate) files_with_matches: usize,
    /// Files and directories not searched, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) skipped: Option<Skipped>,
}

impl From<&search::TextResult> for TextResult {
    fn from(r: &search::TextResult) -> TextResult {
        TextResult {
            files: r.files.iter().map(FileMatches::from).collect(),
            total: r.total,
            returned: r.returned,
            truncated: r.truncated,
            offset: r.offset,
            next_offset: r.next_offset,
            files_with_matches: r.files_with_matches,
            skipped: Skipped::of(&r.skipped),
        }
    }
}

/// The answer of `search_files`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct FileList {
    #[serde(flatten)]
    pub(crate) files: Page<String>,
    /// Files and directories the walk could not read or did not list, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) skipped: Option<Skipped>,
}

impl From<&search::FileList> for FileList {
    fn from(l: &search::FileList) -> FileList {
        FileList {
            files: Page::from(&l.files),
            skipped: Skipped::of(&l.skipped),
        }
    }
}

/// How fresh an answer is, for clients to judge.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct Freshness {
    /// Unix time of the last index write.
    pub(crate) indexed_at: u64,
    pub(crate) files_indexed: usize,
    /// Files re-tagged just before this answer because they changed.
    pub(crate) reindexed: Vec<String>,
    /// Indexed files that no longer exist (dropped from the answer).
    pub(crate) deleted: usize,
    pub(crate) note: String,
    /// Present when the index on disk could not be brought up to date: says why, and that
    /// changed files were re-tagged in memory for this answer only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) unsaved: Option<String>,
    /// Present when the index on disk was unusable (damaged, truncated, another format):
    /// what was wrong, and whether it was rebuilt or the answer comes from every source
    /// file tagged in memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) recovered: Option<String>,
}

impl From<&index::Freshness> for Freshness {
    fn from(f: &index::Freshness) -> Freshness {
        Freshness {
            indexed_at: f.indexed_at,
            files_indexed: f.files_indexed,
            reindexed: f.reindexed.clone(),
            deleted: f.deleted,
            note: f.note.to_string(),
            unsaved: f.unsaved.clone(),
            recovered: f.recovered.clone(),
        }
    }
}

/// What an index refresh did.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct UpdateReport {
    /// Source files the index covers now.
    pub(crate) files: usize,
    /// Files whose size and mtime were unchanged.
    pub(crate) unchanged: usize,
    /// Files whose stamp moved but whose content hash did not.
    pub(crate) touched: usize,
    /// Files (re-)tagged because they are new or their content changed.
    pub(crate) tagged: usize,
    /// Files dropped because they were deleted or are no longer source files.
    pub(crate) removed: usize,
    /// Files skipped for being larger than the size limit.
    pub(crate) too_large: usize,
    pub(crate) tags: usize,
    pub(crate) elapsed_ms: u64,
    /// Whether there was no usable index before.
    pub(crate) from_scratch: bool,
    /// Present when the index on disk was unusable (damaged, truncated, another format)
    /// and was rebuilt: what was wrong with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) recovered: Option<String>,
    /// What was not indexed and why: files over the size limit, and what could not be
    /// read (present only when something was skipped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) skipped: Option<Skipped>,
}

impl From<&refresh::UpdateReport> for UpdateReport {
    fn from(r: &refresh::UpdateReport) -> UpdateReport {
        UpdateReport {
            files: r.files,
            unchanged: r.unchanged,
            touched: r.touched,
            tagged: r.tagged,
            removed: r.removed,
            too_large: r.too_large,
            tags: r.tags,
            elapsed_ms: r.elapsed_ms,
            from_scratch: r.from_scratch,
            recovered: r.recovered.clone(),
            skipped: Skipped::of(&r.skipped),
        }
    }
}

/// One symbol occurrence.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct SymbolHit {
    pub(crate) name: String,
    pub(crate) kind: String,
    pub(crate) path: String,
    pub(crate) line: u32,
    pub(crate) column: u32,
    pub(crate) end_line: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) scope: Option<String>,
    pub(crate) signature: String,
    pub(crate) definition: bool,
    /// For a use: how far its file says it is a use of this name: `import` (imported
    /// there, or the import itself), `local` (defined there), `module` (reached through an
    /// imported or defined module or type), `self` (through self/this/cls/Self), or `name`
    /// (only the name matches: the receiver's type is not known).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) resolution: Option<String>,
    /// For a use: what its name is reached through (`admin` in `admin.ModelAdmin`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) qualifier: Option<String>,
}

impl From<&symbols::SymbolHit> for SymbolHit {
    fn from(h: &symbols::SymbolHit) -> SymbolHit {
        SymbolHit {
            name: h.name.clone(),
            kind: h.kind.clone(),
            path: h.path.clone(),
            line: h.line,
            column: h.column,
            end_line: h.end_line,
            scope: h.scope.clone(),
            signature: h.signature.clone(),
            definition: h.definition,
            resolution: h.resolution.map(str::to_string),
            qualifier: h.qualifier.clone(),
        }
    }
}

/// A page of symbols, how they were found, and how fresh the index was.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct SymbolAnswer {
    pub(crate) items: Vec<SymbolHit>,
    pub(crate) total: usize,
    pub(crate) returned: usize,
    pub(crate) truncated: bool,
    pub(crate) offset: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) next_offset: Option<usize>,
    /// `index` (definitions from the symbol index), `syntax` (uses parsed from the files
    /// that mention the name) or `text` (word search, for names no parsed file uses).
    pub(crate) source: String,
    /// For references: how many uses of each kind and resolution, before `kind` and
    /// paging.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) uses: Option<UseCounts>,
    pub(crate) freshness: Freshness,
}

/// Uses of a name by kind and by resolution.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct UseCounts {
    pub(crate) by_kind: BTreeMap<String, usize>,
    pub(crate) by_resolution: BTreeMap<String, usize>,
}

impl From<&references::UseCounts> for UseCounts {
    fn from(c: &references::UseCounts) -> UseCounts {
        UseCounts {
            by_kind: c.by_kind.clone(),
            by_resolution: c
                .by_resolution
                .iter()
                .map(|(k, n)| (k.to_string(), *n))
                .collect(),
        }
    }
}

impl From<&symbols::SymbolAnswer> for SymbolAnswer {
    fn from(a: &symbols::SymbolAnswer) -> SymbolAnswer {
        let p = &a.symbols;
        SymbolAnswer {
            items: p.items.iter().map(SymbolHit::from).collect(),
            total: p.total,
            returned: p.returned,
            truncated: p.truncated,
            offset: p.offset,
            next_offset: p.next_offset,
            source: a.source.to_string(),
            uses: a.uses.as_ref().map(UseCounts::from),
            freshness: Freshness::from(&a.freshness),
        }
    }
}

/// The function that contains a line, and the definitions around it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct FunctionAtLine {
    pub(crate) path: String,
    pub(crate) line: u32,
    pub(crate) function: Option<SymbolHit>,
    /// The definitions that enclose the line, outermost first (class, then method).
    pub(crate) enclosing: Vec<SymbolHit>,
    pub(crate) freshness: Freshness,
}

impl From<&symbols::FunctionAtLine> for FunctionAtLine {
    fn from(f: &symbols::FunctionAtLine) -> FunctionAtLine {
        FunctionAtLine {
            path: f.path.clone(),
            line: f.line,
            function: f.function.as_ref().map(SymbolHit::from),
            enclosing: f.enclosing.iter().map(SymbolHit::from).collect(),
            freshness: Freshness::from(&f.freshness),
        }
    }
}

/// A definition with the definitions nested inside it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct Outline {
    pub(crate) name: String,
    pub(crate) kind: String,
    pub(crate) line: u32,
    pub(crate) end_line: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) children: Vec<Outline>,
}

impl From<&symbols::Outline> for Outline {
    fn from(o: &symbols::Outline) -> Outline {
        Outline {
            name: o.name.clone(),
            kind: o.kind.clone(),
            line: o.line,
            end_line: o.end_line,
            children: o.children.iter().map(Outline::from).collect(),
        }
    }
}

/// The structure of one file.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct FileStructure {
    pub(crate) path: String,
    pub(crate) language: String,
    pub(crate) imports: Vec<String>,
    pub(crate) classes: usize,
    pub(crate) functions: usize,
    /// Definitions nested by line ranges.
    pub(crate) outline: Vec<Outline>,
}

impl From<&symbols::FileStructure> for FileStructure {
    fn from(f: &symbols::FileStructure) -> FileStructure {
        FileStructure {
            path: f.path.clone(),
            language: f.language.clone(),
            imports: f.imports.clone(),
            classes: f.classes,
            functions: f.functions,
            outline: f.outline.iter().map(Outline::from).collect(),
        }
    }
}

/// The structure of a file or of every file under a directory.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct Structure {
    pub(crate) files: Page<FileStructure>,
    /// Definition counts by kind over every file under the path.
    pub(crate) kinds: BTreeMap<String, usize>,
    pub(crate) freshness: Freshness,
}

impl From<&symbols::Structure> for Structure {
    fn from(s: &symbols::Structure) -> Structure {
        Structure {
            files: Page::from(&s.files),
            kinds: s.kinds.clone(),
            freshness: Freshness::from(&s.freshness),
        }
    }
}

/// One place a change may touch, and why it is listed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct ImpactItem {
    pub(crate) path: String,
    pub(crate) line: u64,
    pub(crate) name: String,
    pub(crate) why: String,
}

impl From<&impact::ImpactItem> for ImpactItem {
    fn from(i: &impact::ImpactItem) -> ImpactItem {
        ImpactItem {
            path: i.path.clone(),
            line: i.line,
            name: i.name.clone(),
            why: i.why.clone(),
        }
    }
}

/// A definition that contains a reference to an analysed name.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct Caller {
    /// The definition that contains a reference.
    pub(crate) name: String,
    pub(crate) kind: String,
    pub(crate) path: String,
    pub(crate) line: u32,
    /// The name it uses.
    pub(crate) uses: String,
    /// How, strongest first when the definition uses the name in several ways (`["call", "type"]`):
    /// `inherit`, `call`, `read`, `type`, `decorator`.
    pub(crate) via: Vec<String>,
    /// How far the file says the use is of this name: `import`, `local`, `module`,
    /// `self`, or `name` when only the name matches.
    pub(crate) resolution: String,
}

impl From<&impact::Caller> for Caller {
    fn from(c: &impact::Caller) -> Caller {
        Caller {
            name: c.name.clone(),
            kind: c.kind.clone(),
            path: c.path.clone(),
            line: c.line,
            uses: c.uses.clone(),
            via: c.via.clone(),
            resolution: c.resolution.to_string(),
        }
    }
}

/// How risky a change looks, and why.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct Risk {
    /// `low`, `medium` or `high`.
    pub(crate) level: String,
    pub(crate) reasons: Vec<String>,
}

impl From<&impact::Risk> for Risk {
    fn from(r: &impact::Risk) -> Risk {
        Risk {
            level: r.level.to_string(),
            reasons: r.reasons.clone(),
        }
    }
}

/// How an impact answer's reader sees the rest of a section.
pub(crate) const IMPACT_MORE: &str = "each section's `total` counts all its items; `section` (with `offset`/`limit`; CLI: --section) lists one";

/// The answer of `analyze_impact`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct Impact {
    /// The symbol names analysed (a file target contributes its definitions).
    pub(crate) names: Vec<String>,
    /// Definitions in the target files first.
    pub(crate) definitions: Page<SymbolHit>,
    /// Every use, what the files say first, name matches last.
    pub(crate) references: Page<SymbolHit>,
    /// Uses by kind and resolution.
    pub(crate) uses: UseCounts,
    /// Classes that inherit from a name, types that implement it.
    pub(crate) subclasses: Page<Caller>,
    /// Files that import a name.
    pub(crate) importers: Page<ImpactItem>,
    /// Definitions that use a name in any other way (call, read, type, decorator).
    pub(crate) callers: Page<Caller>,
    pub(crate) tests: Page<ImpactItem>,
    pub(crate) config_and_docs: Page<ImpactItem>,
    /// Markup, stylesheets and scripts that use a name as a class or id.
    pub(crate) markup: Page<ImpactItem>,
    pub(crate) risk: Risk,
    /// Whether a section shows fewer items than it has (each section's `total` counts
    /// them all).
    pub(crate) truncated: bool,
    /// When truncated: how to see the rest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) more: Option<String>,
    pub(crate) freshness: Freshness,
}

impl From<&impact::Impact> for Impact {
    fn from(i: &impact::Impact) -> Impact {
        let truncated = [
            i.definitions.truncated,
            i.references.truncated,
            i.subclasses.truncated,
            i.importers.truncated,
            i.callers.truncated,
            i.tests.truncated,
            i.config_and_docs.truncated,
            i.markup.truncated,
        ]
        .contains(&true);
        Impact {
            names: i.names.clone(),
            definitions: Page::from(&i.definitions),
            references: Page::from(&i.references),
            uses: UseCounts::from(&i.uses),
            subclasses: Page::from(&i.subclasses),
            importers: Page::from(&i.importers),
            callers: Page::from(&i.callers),
            tests: Page::from(&i.tests),
            config_and_docs: Page::from(&i.config_and_docs),
            markup: Page::from(&i.markup),
            risk: Risk::from(&i.risk),
            truncated,
            more: truncated.then(|| IMPACT_MORE.to_string()),
            freshness: Freshness::from(&i.freshness),
        }
    }
}

/// An impact as JSON, its lists cut to `budget` bytes when one is given; a cut answer
/// says `truncated` and how to see the rest.
pub(crate) fn impact_value(
    i: &impact::Impact,
    budget: Option<usize>,
) -> Result<serde_json::Value, super::error::Error> {
    let mut value = serde_json::to_value(Impact::from(i)).map_err(super::error::Error::Encode)?;
    if let Some(budget) = budget
        && super::budget::fit(&mut value, budget)
    {
        value["truncated"] = serde_json::Value::Bool(true);
        value["more"] = serde_json::Value::String(IMPACT_MORE.to_string());
    }
    Ok(value)
}

/// The answer of the tool a question was routed to; which one is in `tool`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum QueryResult {
    Symbols(SymbolAnswer),
    Impact(Box<Impact>),
    Structure(Structure),
    Files(FileList),
    Text(TextResult),
}

impl From<&query::Routed> for QueryResult {
    fn from(r: &query::Routed) -> QueryResult {
        match r {
            query::Routed::Symbols(a) => QueryResult::Symbols(a.into()),
            query::Routed::Impact(i) => QueryResult::Impact(Box::new(i.as_ref().into())),
            query::Routed::Structure(s) => QueryResult::Structure(s.into()),
            query::Routed::Files(p) => QueryResult::Files(p.into()),
            query::Routed::Text(t) => QueryResult::Text(t.into()),
        }
    }
}

/// A question, the tool it was routed to and why, and that tool's answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct QueryAnswer {
    /// The tool the question was routed to.
    pub(crate) tool: String,
    pub(crate) why: String,
    /// The arguments the tool was called with (one: the question's subject).
    pub(crate) arguments: BTreeMap<String, String>,
    pub(crate) result: QueryResult,
}

impl From<&query::QueryAnswer> for QueryAnswer {
    fn from(a: &query::QueryAnswer) -> QueryAnswer {
        let (key, value) = &a.argument;
        QueryAnswer {
            tool: a.tool.to_string(),
            why: a.why.clone(),
            arguments: BTreeMap::from([((*key).to_string(), value.clone())]),
            result: QueryResult::from(&a.result),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The MCP server derives its output schemas from these types; an untagged answer
    /// must still list every shape it can take.
    #[test]
    fn every_answer_has_a_schema() {
        let schema = serde_json::to_value(schemars::schema_for!(QueryAnswer)).unwrap();
        let text = schema.to_string();
        for name in [
            "SymbolAnswer",
            "Impact",
            "Structure",
            "TextResult",
            "Freshness",
        ] {
            assert!(text.contains(name), "{name} missing from {text}");
        }
        let _ = schemars::schema_for!(FunctionAtLine);
        let _ = schemars::schema_for!(UpdateReport);
    }
}
