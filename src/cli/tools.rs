//! The code-intelligence subcommands: `search`, `files`, `defs`, `refs`, `symbols`,
//! `structure`, `impact`, `index` and `query`. Human output by default (like `rg`), JSON
//! with `--json`. Exit 0 when something was found, 1 when nothing was, 2 on error.

use super::out::{errln, finish, outln, put_bytes, putln};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use crate::codeintel::budget;
use crate::codeintel::error::Error;
use crate::codeintel::impact::{Impact, SUMMARY_TOP, Section, View, analyze};
use crate::codeintel::index::{Freshness, Index};
use crate::codeintel::page::{Page, Window};
use crate::codeintel::qualified;
use crate::codeintel::query::{self, QueryAnswer, Routed};
use crate::codeintel::refresh::{refresh, refresh_changed, repair_or_in_memory};
use crate::codeintel::root::Root;
use crate::codeintel::search::{
    Case, FileList, FileQuery, Skipped, TextQuery, TextResult, search_files, search_text,
    search_text_rendered,
};
use crate::codeintel::symbols::{
    FunctionAtLine, Outline, Structure, SymbolAnswer, analyze_structure, find_definitions,
    find_references, function_at_line, get_symbols,
};
use crate::codeintel::wire;

/// Options every tool takes.
#[derive(Debug, Args)]
pub(super) struct Common {
    /// The repository root; paths are relative to it and confined to it.
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// The most results to return (0: no limit).
    #[arg(long, default_value_t = 200)]
    limit: usize,
    /// Results to skip, to page through long lists.
    #[arg(long, default_value_t = 0)]
    offset: usize,
}

impl Common {
    fn window(&self) -> Window {
        Window {
            offset: self.offset,
            limit: self.limit,
        }
    }
}

#[derive(Debug, Args)]
pub(super) struct SearchArgs {
    /// Patterns; a line matches when any does.
    #[arg(required = true)]
    patterns: Vec<String>,
    /// Treat patterns as regular expressions (default: literal text).
    #[arg(long)]
    regex: bool,
    /// Ignore case.
    #[arg(short = 'i', long)]
    ignore_case: bool,
    /// Ignore case unless a pattern has an uppercase letter.
    #[arg(short = 'S', long)]
    smart_case: bool,
    /// Match whole words only.
    #[arg(short = 'w', long)]
    word: bool,
    /// Only paths matching this glob (repeatable; `!glob` excludes).
    #[arg(short = 'g', long = "glob")]
    globs: Vec<String>,
    /// Only files of this type, by ripgrep's type names (repeatable).
    #[arg(short = 't', long = "type")]
    types: Vec<String>,
    /// Lines of context around each match.
    #[arg(short = 'C', long, default_value_t = 0)]
    context: usize,
    /// Search only under these root-relative paths.
    #[arg(long = "path")]
    paths: Vec<String>,
    #[command(flatten)]
    common: Common,
}

fn open(common: &Common) -> Result<Root, Error> {
    super::root::open_root(&common.root)
}

/// The index a symbol command answers from. The CLI refreshes the index on disk when it
/// can, so the next run starts fresh, and answers from what it wrote; when it cannot (a
/// read-only `.code-intel/`), it answers from files re-tagged in memory, and the
/// freshness says why nothing was saved.
fn prepare(root: &Root) -> Result<Index, Error> {
    match refresh_changed(root) {
        Ok(index) => Ok(index),
        Err(e) => {
            let mut index = Index::open(root)?;
            index.freshness.unsaved = Some(format!(
                "the index could not be updated ({e}); files changed since it was written were re-tagged in memory for this answer"
            ));
            Ok(index)
        }
    }
}

/// Answers `question` from `index`. The index on disk is checked piece by piece as
/// questions read it (`codeintel::store`); when a piece does not match its checksum, the
/// index is repaired (checked whole, rebuilt) and the question asked again, once; when
/// `.code-intel/` cannot be written, it is asked of every source file tagged in memory.
/// Either way the answer's freshness says what was wrong (`recovered`).
fn answer_checked<T>(
    root: &Root,
    index: Index,
    question: impl Fn(&Index) -> Result<T, Error>,
) -> Result<T, Error> {
    match question(&index) {
        Err(problem @ Error::IndexCorrupt { .. }) => {
            drop(index);
            question(&repair_or_in_memory(root, &problem)?)
        }
        other => other,
    }
}

/// Asks `question` of the repository's symbol index (`index_for` says which), repaired and
/// asked once more when a piece of it turns out damaged (`answer_checked`).
fn ask_index<T>(
    common: &Common,
    index_for: impl FnOnce(&Root) -> Result<Index, Error>,
    question: impl Fn(&Root, &Index) -> Result<T, Error>,
) -> Result<T, Error> {
    let root = open(common)?;
    let index = index_for(&root)?;
    answer_checked(&root, index, |index| question(&root, index))
}

/// How every code-intel command ends: the answer printed as JSON (its `codeintel::wire`
/// form, never a domain type: the JSON is the wire's) or as text, then exit 0 when
/// something was found, 1 when nothing was, and 2 on an error, which is printed.
fn respond<A, W: Serialize>(
    common: &Common,
    answer: Result<A, Error>,
    wire: impl FnOnce(&A) -> Result<W, Error>,
    text: impl FnOnce(&A),
    found_any: impl FnOnce(&A) -> bool,
) -> ExitCode {
    let answer = match answer {
        Ok(answer) => answer,
        Err(e) => return fail(&e),
    };
    if common.json {
        if let Err(code) = wire(&answer)
            .map_err(|e| fail(&e))
            .and_then(|w| emit_json(&w))
        {
            return code;
        }
    } else {
        text(&answer);
    }
    found(found_any(&answer))
}

/// In human output, says (on stderr) when the index on disk was unusable, and when it
/// could not be saved.
fn note_unsaved(f: &Freshness) {
    if let Some(what) = &f.recovered {
        errln!("warning: {what}");
    }
    if let Some(why) = &f.unsaved {
        errln!("note: {why}");
    }
}

/// Prints `value` as JSON; when it cannot be written as JSON, says so and gives exit 2
/// instead of printing nothing.
fn emit_json<T: Serialize>(value: &T) -> Result<(), ExitCode> {
    let text = serde_json::to_string_pretty(value).map_err(|e| fail(&Error::Encode(e)))?;
    let mut out = std::io::stdout().lock();
    putln!(out, "{text}");
    finish(out);
    Ok(())
}

fn found(any: bool) -> ExitCode {
    if any {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Every error exits 2; the message is the error's, the key is for machines, not people.
fn fail(error: &Error) -> ExitCode {
    errln!("error: {error}");
    ExitCode::from(2)
}

fn note_truncated(truncated: bool, returned: usize, total: usize, next: Option<usize>) {
    if truncated {
        errln!(
            "note: showing {returned} of {total}; use --offset {} (or --limit 0) for more",
            next.unwrap_or(0)
        );
    }
}

/// On stderr: a line for each file or directory that could not be read, as `rg` prints
/// them, then what was left out and why (`--json` lists the first few).
fn note_skipped(skipped: &Skipped, what: &str) {
    if skipped.is_empty() {
        return;
    }
    for p in skipped.paths.iter().filter(|p| p.reason.is_error()) {
        errln!("code-intel: {}: {}", p.path, p.message);
    }
    errln!("note: {what}: {}", skipped.summary());
}

pub(super) fn search(a: &SearchArgs) -> ExitCode {
    let root = match open(&a.common) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let case = if a.ignore_case {
        Case::Insensitive
    } else if a.smart_case {
        Case::Smart
    } else {
        Case::Sensitive
    };
    let q = TextQuery {
        patterns: a.patterns.clone(),
        regex: a.regex,
        case,
        word: a.word,
        globs: a.globs.clone(),
        types: a.types.clone(),
        context: a.context,
        paths: a.paths.clone(),
    };
    if a.common.json {
        let answer = search_text(&root, &q, a.common.window());
        let wire = |r: &TextResult| Ok(wire::TextResult::from(r));
        return respond(&a.common, answer, wire, |_| {}, |r| r.total > 0);
    }
    // Text: the lines are rendered on the walker threads; this only writes them out.
    match search_text_rendered(&root, &q, a.common.window()) {
        Err(e) => fail(&e),
        Ok(r) => {
            let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
            for chunk in &r.chunks {
                put_bytes(&mut out, chunk);
            }
            finish(out);
            note_skipped(&r.skipped, "not searched");
            note_truncated(r.truncated, r.returned, r.total, r.next_offset);
            let code = found(r.total > 0);
            // The process ends next: freeing a buffer per file and a path per skipped
            // file first would be the last serial work of the run, for nothing.
            std::mem::forget(r);
            code
        }
    }
}

#[derive(Debug, Args)]
pub(super) struct FilesArgs {
    /// Globs over root-relative paths; a bare name matches at any depth (`*.rs`, `Cargo.toml`).
    globs: Vec<String>,
    #[arg(short = 't', long = "type")]
    types: Vec<String>,
    #[command(flatten)]
    common: Common,
}

pub(super) fn files(a: &FilesArgs) -> ExitCode {
    let q = FileQuery {
        globs: a.globs.clone(),
        types: a.types.clone(),
        paths: Vec::new(),
    };
    let answer = open(&a.common).and_then(|root| search_files(&root, &q, a.common.window()));
    let wire = |list: &FileList| Ok(wire::FileList::from(list));
    respond(&a.common, answer, wire, print_files, |list| {
        list.files.total > 0
    })
}

fn print_files(list: &FileList) {
    let p = &list.files;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for f in &p.items {
        putln!(out, "{f}");
    }
    finish(out);
    note_skipped(&list.skipped, "not listed");
    note_truncated(p.truncated, p.returned, p.total, p.next_offset);
}

/// A text search's answer as `search` prints it: `path:line:text`, like `rg -n`.
fn print_text(r: &TextResult) {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for f in &r.files {
        for m in &f.matches {
            putln!(out, "{}:{}:{}", f.path, m.line, m.text);
        }
    }
    finish(out);
    note_skipped(&r.skipped, "not searched");
    note_truncated(r.truncated, r.returned, r.total, r.next_offset);
}

#[derive(Debug, Args)]
pub(super) struct NameArgs {
    /// The symbol name, exactly as written in code.
    name: String,
    /// `defs`: only definitions of this kind, as the language names it (`function`,
    /// `class`, `method`; Rust: `struct`, `enum`, `trait`, `impl`, `fn`, ...). `refs`: only
    /// uses of this kind (`call`, `inherit`, `import`, `type`, `decorator`, `read`). An
    /// unknown kind is an error that lists them.
    #[arg(long)]
    kind: Option<String>,
    #[command(flatten)]
    common: Common,
}

/// A symbol answer as text: `path:line:column: kind name (in scope): signature`, and on
/// stderr how it was found and what was cut.
fn print_symbols(answer: &SymbolAnswer) {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for s in &answer.symbols.items {
        let scope = s
            .scope
            .as_ref()
            .map(|sc| format!(" (in {sc})"))
            .unwrap_or_default();
        let only_name = if s.resolution == Some("name") && answer.source == "syntax" {
            " (name match)"
        } else {
            ""
        };
        putln!(
            out,
            "{}:{}:{}: {} {}{scope}{only_name}: {}",
            s.path,
            s.line,
            s.column,
            s.kind,
            s.name,
            s.signature
        );
    }
    finish(out);
    if answer.source == "text" {
        errln!("note: found by text search (no parsed source file uses this name)");
    }
    if let Some(uses) = &answer.uses {
        let total: usize = uses.by_kind.values().sum();
        let kinds: Vec<String> = uses
            .by_kind
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let name_only = uses.by_resolution.get("name").copied().unwrap_or(0);
        errln!(
            "note: {total} use(s): {}; {name_only} match(es) by name only (the file does not say what they are reached through), listed last",
            kinds.join(", ")
        );
    }
    note_unsaved(&answer.freshness);
    if !answer.freshness.reindexed.is_empty() {
        errln!(
            "note: re-indexed {} changed file(s) first",
            answer.freshness.reindexed.len()
        );
    }
    note_truncated(
        answer.symbols.truncated,
        answer.symbols.returned,
        answer.symbols.total,
        answer.symbols.next_offset,
    );
}

/// `respond` for a symbol answer.
fn respond_symbols(common: &Common, answer: Result<SymbolAnswer, Error>) -> ExitCode {
    respond(common, answer, symbols_wire, print_symbols, symbols_found)
}

fn symbols_wire(answer: &SymbolAnswer) -> Result<wire::SymbolAnswer, Error> {
    Ok(wire::SymbolAnswer::from(answer))
}

fn symbols_found(answer: &SymbolAnswer) -> bool {
    answer.symbols.total > 0
}

/// The index a name lookup answers from: with no index yet, the files that mention the
/// name, tagged now (the same answer, without waiting for a full index).
fn index_for_name(root: &Root, name: &str) -> Result<Index, Error> {
    if Index::exists(root) {
        prepare(root)
    } else {
        // A writer killed before its first index leaves temp files; nothing else would
        // remove them until the next refresh.
        crate::codeintel::refresh::clean_up_if_idle(root);
        Index::for_names(root, &[qualified::word_of(name)])
    }
}

pub(super) fn defs(a: &NameArgs) -> ExitCode {
    let answer = ask_index(
        &a.common,
        |root| index_for_name(root, &a.name),
        |_, index| find_definitions(index, &a.name, a.kind.as_deref(), a.common.window()),
    );
    let text = |answer: &SymbolAnswer| {
        // Like grep, nothing found is exit 1; a person also gets a line saying so.
        if answer.symbols.total == 0 {
            errln!("no definition of `{}` found", a.name);
        }
        print_symbols(answer);
    };
    respond(&a.common, answer, symbols_wire, text, symbols_found)
}

pub(super) fn refs(a: &NameArgs) -> ExitCode {
    let answer = ask_index(
        &a.common,
        |root| index_for_name(root, &a.name),
        |root, index| find_references(root, index, &a.name, a.kind.as_deref(), a.common.window()),
    );
    respond_symbols(&a.common, answer)
}

#[derive(Debug, Args)]
pub(super) struct FileArgs {
    /// A root-relative source file.
    file: String,
    /// With `symbols`: show the function that contains this line instead of the outline.
    #[arg(long)]
    line: Option<u32>,
    #[command(flatten)]
    common: Common,
}

pub(super) fn symbols(a: &FileArgs) -> ExitCode {
    if let Some(line) = a.line {
        let answer = ask_index(&a.common, prepare, |root, index| {
            function_at_line(root, index, &a.file, line)
        });
        let wire = |f: &FunctionAtLine| Ok(wire::FunctionAtLine::from(f));
        return respond(&a.common, answer, wire, print_function_at_line, |f| {
            f.function.is_some() || !f.enclosing.is_empty()
        });
    }
    let answer = ask_index(&a.common, prepare, |root, index| {
        get_symbols(root, index, &a.file, a.common.window())
    });
    respond_symbols(&a.common, answer)
}

/// The functions around a line, outermost first: `path:line-end_line: kind name: signature`.
fn print_function_at_line(f: &FunctionAtLine) {
    note_unsaved(&f.freshness);
    for e in &f.enclosing {
        outln!(
            "{}:{}-{}: {} {}: {}",
            e.path,
            e.line,
            e.end_line,
            e.kind,
            e.name,
            e.signature
        );
    }
}

#[derive(Debug, Args)]
pub(super) struct PathArgs {
    /// A root-relative file or directory.
    #[arg(default_value = ".")]
    path: String,
    #[command(flatten)]
    common: Common,
}

fn print_outline(out: &mut impl std::io::Write, items: &[Outline], depth: usize) {
    for o in items {
        putln!(
            *out,
            "{}{} {} ({}-{})",
            "  ".repeat(depth + 1),
            o.kind,
            o.name,
            o.line,
            o.end_line
        );
        print_outline(out, &o.children, depth + 1);
    }
}

pub(super) fn structure(a: &PathArgs) -> ExitCode {
    let answer = ask_index(&a.common, prepare, |root, index| {
        analyze_structure(root, index, &a.path, a.common.window())
    });
    let wire = |s: &Structure| Ok(wire::Structure::from(s));
    respond(&a.common, answer, wire, print_structure, |s| {
        s.files.total > 0
    })
}

fn print_structure(s: &Structure) {
    note_unsaved(&s.freshness);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for f in &s.files.items {
        putln!(
            out,
            "{} ({}): {} class-like, {} function-like, {} import(s)",
            f.path,
            f.language,
            f.classes,
            f.functions,
            f.imports.len()
        );
        for i in &f.imports {
            putln!(out, "  import: {i}");
        }
        print_outline(&mut out, &f.outline, 0);
    }
    let kinds: Vec<String> = s.kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
    putln!(out, "definitions: {}", kinds.join(", "));
    finish(out);
    note_truncated(
        s.files.truncated,
        s.files.returned,
        s.files.total,
        s.files.next_offset,
    );
}

#[derive(Debug, Args)]
pub(super) struct ImpactArgs {
    /// Root-relative files or symbol names (`Session.request`, `module.func` and
    /// `Type::method` name a member).
    #[arg(required = true)]
    targets: Vec<String>,
    /// List one section whole, paged by --limit and --offset: definitions, references,
    /// subclasses, importers, callers, tests, config_and_docs, markup. Without it (and
    /// without --all) each section shows its count and its first items.
    #[arg(long, conflicts_with = "all")]
    section: Option<String>,
    /// Every section, each paged by --limit and --offset.
    #[arg(long)]
    all: bool,
    #[command(flatten)]
    common: Common,
}

impl ImpactArgs {
    fn view(&self) -> Result<View, Error> {
        Ok(match (&self.section, self.all) {
            (Some(name), _) => View::Section(Section::parse(name)?, self.common.window()),
            (None, true) => View::All(self.common.window()),
            (None, false) => View::Summary { top: SUMMARY_TOP },
        })
    }
}

/// Under a section that shows fewer items than it has: how many, and how to see the rest.
fn section_note<T>(view: View, label: &str, section: Section, page: &Page<T>) {
    if !page.truncated {
        return;
    }
    let how = match view {
        View::Summary { .. } => format!("--section {} for all", section.name()),
        View::Section(..) | View::All(_) => format!(
            "--offset {} or --limit 0 for more",
            page.next_offset.unwrap_or(0)
        ),
    };
    if matches!(view, View::Section(shown, _) if shown != section) {
        return;
    }
    outln!(
        "         … showing {} of {} {label} ({how})",
        page.returned,
        page.total
    );
}

pub(super) fn impact(a: &ImpactArgs) -> ExitCode {
    let answer = a.view().and_then(|view| {
        ask_index(&a.common, prepare, |root, index| {
            analyze(root, index, &a.targets, view)
        })
        .map(|i| (i, view))
    });
    respond(
        &a.common,
        answer,
        |(i, view)| wire::impact_value(i, impact_budget(*view)),
        |(i, view)| print_impact(i, *view),
        |(i, _)| impact_found_any(i),
    )
}

/// The byte budget of an impact's JSON: the summary's, or none when the reader chose
/// the pages (`--section`, `--all`, with `--limit`).
fn impact_budget(view: View) -> Option<usize> {
    matches!(view, View::Summary { .. }).then_some(budget::IMPACT_SUMMARY_BUDGET)
}

fn impact_found_any(i: &Impact) -> bool {
    i.definitions.total > 0
        || i.references.total > 0
        || i.tests.total + i.config_and_docs.total + i.markup.total > 0
}

fn print_impact(i: &Impact, view: View) {
    note_unsaved(&i.freshness);
    outln!("names: {}", i.names.join(", "));
    outln!("risk: {} ({})", i.risk.level, i.risk.reasons.join("; "));
    for d in &i.definitions.items {
        outln!("defined  {}:{}: {} {}", d.path, d.line, d.kind, d.name);
    }
    section_note(view, "definitions", Section::Definitions, &i.definitions);
    let only_name = |resolution: &str| {
        if resolution == "name" {
            " (name match)"
        } else {
            ""
        }
    };
    for c in &i.subclasses.items {
        outln!(
            "subclass {}:{}: {} {} inherits {}{}",
            c.path,
            c.line,
            c.kind,
            c.name,
            c.uses,
            only_name(c.resolution)
        );
    }
    section_note(view, "subclasses", Section::Subclasses, &i.subclasses);
    for m in &i.importers.items {
        outln!("importer {}:{}: {}", m.path, m.line, m.why);
    }
    section_note(view, "importers", Section::Importers, &i.importers);
    for c in &i.callers.items {
        let verb = match c.via.first().map_or("", String::as_str) {
            "call" => "calls",
            "type" => "names the type",
            "decorator" => "is decorated by",
            _ => "uses",
        };
        outln!(
            "caller   {}:{}: {} {} {verb} {}{}",
            c.path,
            c.line,
            c.kind,
            c.name,
            c.uses,
            only_name(c.resolution)
        );
    }
    section_note(view, "callers", Section::Callers, &i.callers);
    for (label, section, list) in [
        ("test", Section::Tests, &i.tests),
        ("config", Section::ConfigAndDocs, &i.config_and_docs),
        ("markup", Section::Markup, &i.markup),
    ] {
        for t in &list.items {
            outln!("{label:<8} {}:{}: {}", t.path, t.line, t.why);
        }
        section_note(view, section.name(), section, list);
    }
    for r in &i.references.items {
        outln!(
            "use      {}:{}: {} {}{}",
            r.path,
            r.line,
            r.kind,
            r.name,
            only_name(r.resolution.unwrap_or(""))
        );
    }
    if matches!(view, View::Section(Section::References, _)) {
        section_note(view, "references", Section::References, &i.references);
    }
    let kinds: Vec<String> = i
        .uses
        .by_kind
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    let name_only = i.uses.by_resolution.get("name").copied().unwrap_or(0);
    outln!(
        "references: {} in all ({}); {name_only} by name only",
        i.references.total,
        if kinds.is_empty() {
            "none".to_string()
        } else {
            kinds.join(", ")
        }
    );
}

#[derive(Debug, Args)]
pub(super) struct IndexArgs {
    /// Only the symbol index: leave the semantic index as it is.
    #[arg(long)]
    no_semantic: bool,
    /// Drop the semantic index and build it again, vectors included.
    #[arg(long, conflicts_with = "no_semantic")]
    rebuild: bool,
    #[command(flatten)]
    common: Common,
}

pub(super) fn index(a: &IndexArgs) -> ExitCode {
    let (root, r) = match open(&a.common).and_then(|root| refresh(&root).map(|r| (root, r))) {
        Err(e) => return fail(&e),
        Ok(done) => done,
    };
    let semantic = if a.no_semantic {
        None
    } else {
        match super::semantic::index(&root, a.rebuild) {
            Ok(report) => Some(report),
            Err(message) => {
                errln!("error: {message}");
                return ExitCode::from(2);
            }
        }
    };
    if a.common.json {
        let encoded = serde_json::to_value(wire::UpdateReport::from(&r)).and_then(|mut v| {
            if let (Some(map), Some(report)) = (v.as_object_mut(), &semantic) {
                map.insert("semantic".into(), serde_json::to_value(report)?);
            }
            Ok(v)
        });
        return match encoded {
            Ok(v) => emit_json(&v).map_or_else(|code| code, |()| ExitCode::SUCCESS),
            Err(e) => fail(&Error::Encode(e)),
        };
    }
    outln!(
        "indexed {} files ({} tags) in {} ms: {} tagged, {} unchanged, {} touched but unchanged, {} removed, {} too large{}",
        r.files,
        r.tags,
        r.elapsed_ms,
        r.tagged,
        r.unchanged,
        r.touched,
        r.removed,
        r.too_large,
        if r.from_scratch {
            " (built from scratch)"
        } else {
            ""
        }
    );
    if let Some(what) = &r.recovered {
        errln!("warning: {what}");
    }
    note_skipped(&r.skipped, "not indexed");
    if let Some(report) = &semantic {
        outln!("{}", super::semantic::describe(report));
    }
    ExitCode::SUCCESS
}

#[derive(Debug, Args)]
pub(super) struct QueryArgs {
    /// A question in plain words, e.g. "where is parse_config defined" (quoted or not).
    #[arg(required = true, num_args = 1..)]
    question: Vec<String>,
    #[command(flatten)]
    common: Common,
}

pub(super) fn ask(a: &QueryArgs) -> ExitCode {
    let question = a.question.join(" ");
    // A description in plain words goes to semantic search, which prints its own answer;
    // when it cannot answer, its longest word is searched as text (below).
    if let Ok(root) = open(&a.common)
        && let Ok(route) = query::route(&root, &question)
        && route.is_semantic()
    {
        errln!("query: answered by semantic_search ({})", route.why);
        if let Ok(code) = super::semantic::ask(&a.common.root, &question, a.common.json) {
            return code;
        }
    }
    let answer = open(&a.common).and_then(|root| {
        let route = query::route(&root, &question)?;
        if !route.uses_index() {
            return query::answer(&root, None, route, a.common.window());
        }
        answer_checked(&root, prepare(&root)?, |index| {
            query::answer(&root, Some(index), route.clone(), a.common.window())
        })
    });
    let wire = |answer: &QueryAnswer| Ok(wire::QueryAnswer::from(answer));
    respond(&a.common, answer, wire, print_routed, |answer| {
        routed_found(&answer.result)
    })
}

/// A routed answer as the command that answered prints it; which one goes to stderr.
fn print_routed(answer: &QueryAnswer) {
    errln!("query: answered by {} ({})", answer.tool, answer.why);
    match &answer.result {
        Routed::Symbols(symbols) => print_symbols(symbols),
        Routed::Impact(impact) => print_impact(impact, View::Summary { top: SUMMARY_TOP }),
        Routed::Structure(structure) => print_structure(structure),
        Routed::Files(list) => print_files(list),
        Routed::Text(text) => print_text(text),
    }
}

/// Whether a routed answer found anything, as the command that answered would say.
fn routed_found(result: &Routed) -> bool {
    match result {
        Routed::Symbols(symbols) => symbols_found(symbols),
        Routed::Impact(impact) => impact_found_any(impact),
        Routed::Structure(structure) => structure.files.total > 0,
        Routed::Files(list) => list.files.total > 0,
        Routed::Text(text) => text.total > 0,
    }
}
