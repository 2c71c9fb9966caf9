//! `analyze_impact`: what a change to some files or symbols may touch, each item with the
//! reason it is listed, and a short risk summary: subclasses and implementations first,
//! then importers, then the definitions that use the names otherwise (calls, reads, types,
//! decorators), then tests, configuration, documentation and markup. Reproducible: the
//! same tree gives the same answer, in the same order.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::error::{Error, PathError};
use super::index::{Freshness, Index};
use super::page::{Page, Window};
use super::qualified::{self, Qualified};
use super::references::{self, Use, UseCounts};
use super::root::Root;
use super::search::{TextResult, search_words};
use super::symbols::SymbolHit;
use super::tags::Tag;

/// One place the change may touch, and why it is listed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ImpactItem {
    pub path: String,
    pub line: u64,
    pub name: String,
    pub why: String,
}

/// A definition that uses one of the names: a subclass, an implementation, or a function,
/// method or class whose body calls or reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The definition that contains the use, qualified by the definition around it
    /// (`GroupForm.form_class`).
    pub name: String,
    pub kind: String,
    pub path: String,
    pub line: u32,
    /// The name it uses.
    pub uses: String,
    /// How, strongest first when the definition uses the name in several ways: `inherit`,
    /// `call`, `read`, `type`, `decorator` (`["call", "type"]`).
    pub via: Vec<String>,
    /// How far the file says the use is of this name (see `references::Resolution`);
    /// `name` when only the name matches.
    pub resolution: &'static str,
}

#[derive(Debug, Clone)]
pub struct Risk {
    /// `low`, `medium` or `high`.
    pub level: &'static str,
    pub reasons: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Impact {
    /// The symbol names analysed (a file target contributes its definitions).
    pub names: Vec<String>,
    /// Definitions in the target files first.
    pub definitions: Page<SymbolHit>,
    /// Every use, what the files say first (see `references`).
    pub references: Page<SymbolHit>,
    /// Uses by kind and resolution.
    pub uses: UseCounts,
    /// Classes that inherit from a name, types that implement it.
    pub subclasses: Page<Caller>,
    /// Files that import a name.
    pub importers: Page<ImpactItem>,
    /// Definitions that use a name in any other way.
    pub callers: Page<Caller>,
    pub tests: Page<ImpactItem>,
    pub config_and_docs: Page<ImpactItem>,
    pub markup: Page<ImpactItem>,
    pub risk: Risk,
    pub freshness: Freshness,
}

/// A section of an impact answer, as clients name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Section {
    Definitions,
    References,
    Subclasses,
    Importers,
    Callers,
    Tests,
    ConfigAndDocs,
    Markup,
}

impl Section {
    /// Every section, in the order an answer lists them.
    pub(crate) const ALL: &'static [Section] = &[
        Section::Definitions,
        Section::References,
        Section::Subclasses,
        Section::Importers,
        Section::Callers,
        Section::Tests,
        Section::ConfigAndDocs,
        Section::Markup,
    ];

    /// Its name in answers and arguments (`config_and_docs`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Section::Definitions => "definitions",
            Section::References => "references",
            Section::Subclasses => "subclasses",
            Section::Importers => "importers",
            Section::Callers => "callers",
            Section::Tests => "tests",
            Section::ConfigAndDocs => "config_and_docs",
            Section::Markup => "markup",
        }
    }

    /// The section of this name; an unknown name is an error that lists them.
    pub(crate) fn parse(name: &str) -> Result<Section, Error> {
        Section::ALL
            .iter()
            .copied()
            .find(|s| s.name() == name)
            .ok_or_else(|| Error::UnknownSection {
                section: name.to_string(),
                known: Section::names().join(", "),
            })
    }

    /// Every section's name.
    pub(crate) fn names() -> Vec<&'static str> {
        Section::ALL.iter().map(|s| s.name()).collect()
    }
}

/// How much of an impact an answer shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum View {
    /// Every section cut to the same window.
    All(Window),
    /// Every section's count and its first `top` items, best first; no references (the
    /// callers, importers and subclasses say what they are, and `uses` counts them).
    Summary { top: usize },
    /// One section, paged; the others as counts only.
    Section(Section, Window),
}

/// How many items of each section the default answer shows (before the byte budget).
pub(crate) const SUMMARY_TOP: usize = 5;

/// How many names a file target contributes at most (its first definitions).
const MAX_NAMES: usize = 30;

fn is_test_path(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.split('/').any(|seg| {
        matches!(
            seg,
            "test" | "tests" | "spec" | "specs" | "__tests__" | "testing"
        )
    }) || lower.rsplit('/').next().is_some_and(|f| {
        f.starts_with("test_")
            || f.contains("_test.")
            || f.contains(".test.")
            || f.contains(".spec.")
            || f.ends_with("tests.rs")
            || f.ends_with("test.go")
    })
}

fn is_config_or_doc(path: &str) -> bool {
    let ext = path.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
    matches!(
        ext.as_str(),
        "md" | "rst"
            | "txt"
            | "adoc"
            | "yml"
            | "yaml"
            | "json"
            | "toml"
            | "ini"
            | "cfg"
            | "conf"
            | "env"
            | "properties"
            | "xml"
    )
}

/// Files that can use a class or id of HTML or CSS: markup, stylesheets, templates, and
/// the scripts and components that select elements by them.
fn is_markup_style_or_script(path: &str) -> bool {
    let ext = path.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
    matches!(
        ext.as_str(),
        "html"
            | "htm"
            | "css"
            | "scss"
            | "sass"
            | "less"
            | "vue"
            | "svelte"
            | "jsx"
            | "tsx"
            | "js"
            | "ts"
            | "erb"
            | "jinja"
            | "j2"
            | "twig"
            | "hbs"
    )
}

/// Whether a target names a file rather than a symbol: it has a `/`, or ends in an
/// extension (`app.py`), which no identifier does.
fn looks_like_path(target: &str) -> bool {
    target.contains('/')
        || std::path::Path::new(target).extension().is_some_and(|e| {
            !e.is_empty()
                && e.to_string_lossy()
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric())
        }) && !target.contains("::")
}

/// Whether a target ends in an extension of a file the tools know (`app.py`,
/// `settings.yml`), so `Session.request` is a name and `missing.py` a path.
fn looks_like_file_name(target: &str) -> bool {
    target.contains('/')
        || super::languages::for_path(std::path::Path::new(target)).is_some()
        || is_config_or_doc(target)
        || is_markup_style_or_script(target)
}

/// The definitions of `name`.
fn defined_as(index: &Index, name: &str) -> Result<Vec<SymbolHit>, Error> {
    let mut hits = Vec::new();
    for t in index.lookup(name)? {
        let (tag, file) = index.tag(t)?;
        if tag.is_definition {
            hits.push(super::symbols::hit(index.file_path(file), tag));
        }
    }
    Ok(hits)
}

/// Analyses the impact of changing `targets`: root-relative file paths or symbol names.
pub fn analyze_impact(
    root: &Root,
    index: &Index,
    targets: &[String],
    window: Window,
) -> Result<Impact, Error> {
    analyze(root, index, targets, View::All(window))
}

/// Analyses the impact of changing `targets` and shows the part `view` asks for. Every
/// section is ranked before it is cut, so a summary's items are the first of the section
/// paged whole: definitions in the target files first; subclasses, importers, callers and
/// references outside tests before those in tests, and those the files resolve before
/// name matches; test, configuration and markup lines one per file first (files with the
/// most mentions first), then the rest.
pub(crate) fn analyze(
    root: &Root,
    index: &Index,
    targets: &[String],
    view: View,
) -> Result<Impact, Error> {
    if targets.is_empty() {
        return Err(Error::NothingToLookFor(
            "no target given: name files or symbols",
        ));
    }
    let resolved = Targets::resolve(root, index, targets)?;
    let names = &resolved.names;
    let mut definitions = resolved.definitions(index)?;
    // One text search finds both the files to parse for uses and the mentions in tests,
    // configuration, documentation and markup.
    let found = if names.is_empty() {
        None
    } else {
        Some(search_words(root, names)?)
    };
    let files: Vec<references::TaggedFile> = found
        .as_ref()
        .map(|f| references::tag_found(root, f, names))
        .unwrap_or_default()
        .into_iter()
        .filter(|f| !resolved.files.contains(&f.path))
        .collect();
    let mut uses = references::uses_in(&files, names);
    uses.retain(|u| {
        let of = resolved.members_of(&u.tag.name);
        of.is_empty() || of.iter().any(|(q, of_type)| q.may_use(u, &files, *of_type))
    });
    references::sort_for_reading(&mut uses);
    let counts = UseCounts::of(&uses);
    let (mut subclasses, mut importers, mut callers) = dependents(&files, &uses);
    let mut references: Vec<SymbolHit> = uses
        .iter()
        .map(|u| SymbolHit {
            resolution: Some(u.resolution.as_str()),
            ..super::symbols::hit(&u.path, u.tag.clone())
        })
        .collect();
    let Mentions {
        tests,
        config_and_docs,
        markup,
    } = found.map_or_else(Mentions::default, |f| Mentions::of(f, &resolved));
    // Name matches say nothing about this code: they do not count towards the risk.
    let referencing_files: BTreeSet<&str> = uses
        .iter()
        .filter(|u| u.resolution.is_bound())
        .map(|u| u.path.as_str())
        .collect();
    let risk = risk(
        names,
        &definitions,
        &referencing_files,
        subclasses.len(),
        &tests,
        &config_and_docs,
        &markup,
    );
    let nothing = definitions.is_empty()
        && references.is_empty()
        && tests.is_empty()
        && config_and_docs.is_empty()
        && markup.is_empty();
    if nothing && resolved.files.is_empty() {
        return Err(Error::NotFound(targets.join(", ")));
    }
    definitions.sort_by_key(|d| !resolved.files.contains(&d.path));
    references.sort_by_key(|r| (r.resolution == Some("name"), is_test_path(&r.path)));
    subclasses.sort_by_key(|c| (c.resolution == "name", is_test_path(&c.path)));
    callers.sort_by_key(|c| (c.resolution == "name", is_test_path(&c.path)));
    importers.sort_by_key(|i| is_test_path(&i.path));
    let window = |section: Section| match view {
        View::All(window) => Some(window),
        View::Summary { .. } if section == Section::References => None,
        // A limit of 0 is no limit: a summary of no items is counts only.
        View::Summary { top: 0 } => None,
        View::Summary { top } => Some(Window {
            offset: 0,
            limit: top,
        }),
        View::Section(wanted, window) => (wanted == section).then_some(window),
    };
    // A section not shown keeps its count.
    fn page<T>(all: Vec<T>, window: Option<Window>) -> Page<T> {
        match window {
            Some(w) => Page::of(all, w),
            None => Page::counted(all.len()),
        }
    }
    Ok(Impact {
        definitions: page(definitions, window(Section::Definitions)),
        references: {
            let mut page = page(references, window(Section::References));
            super::symbols::fill_reference_lines(root, &mut page);
            page
        },
        uses: counts,
        subclasses: page(subclasses, window(Section::Subclasses)),
        importers: page(importers, window(Section::Importers)),
        callers: page(callers, window(Section::Callers)),
        tests: page(spread(tests), window(Section::Tests)),
        config_and_docs: page(spread(config_and_docs), window(Section::ConfigAndDocs)),
        markup: page(spread(markup), window(Section::Markup)),
        risk,
        freshness: index.freshness.clone(),
        names: resolved.names,
    })
}

/// The targets resolved: the names to look for and the files they name.
struct Targets {
    /// Every name looked for, in the order the targets gave them.
    names: Vec<String>,
    /// The target files (root-relative), whose own lines are not impact.
    files: BTreeSet<String>,
    /// Qualified targets (`Session.request`), each with whether its container is a type.
    members: Vec<(Qualified, bool)>,
    /// The names some target gave plainly (a file's definitions, a bare name).
    plain: BTreeSet<String>,
}

impl Targets {
    /// Resolves each target as a file under the root or else as a symbol name. A target
    /// that leaves the root is an error, not a name to search for; one that looks like a
    /// path but does not exist is not found, and so is a member no type has.
    fn resolve(root: &Root, index: &Index, targets: &[String]) -> Result<Targets, Error> {
        let mut resolved = Targets {
            names: Vec::new(),
            files: BTreeSet::new(),
            members: Vec::new(),
            plain: BTreeSet::new(),
        };
        for target in targets {
            let path = root.resolve(target);
            let member = qualified::split(target).filter(|_| !looks_like_file_name(target));
            match &path {
                Err(PathError::OutsideRoot(_)) => {
                    return Err(Error::Path(PathError::OutsideRoot(target.clone())));
                }
                Err(PathError::NotFound(_)) if looks_like_path(target) && member.is_none() => {
                    return Err(Error::Path(PathError::NotFound(target.clone())));
                }
                _ => {}
            }
            match path.ok().filter(|p| p.is_file()) {
                Some(abs) => resolved.add_file(root, index, &abs)?,
                None => resolved.add_symbol(index, target, member)?,
            }
        }
        Ok(resolved)
    }

    /// A target file: its top-level definitions are names, and so are the classes and ids
    /// of a markup, stylesheet or script file.
    fn add_file(&mut self, root: &Root, index: &Index, abs: &Path) -> Result<(), Error> {
        let rel = root.relative(abs);
        if let Some(i) = index.file_index(&rel) {
            for t in index
                .file_tags(i)?
                .into_iter()
                .filter(|t| t.is_definition && t.scope.is_none())
                .take(MAX_NAMES)
            {
                self.add_plain(t.name);
            }
        }
        if is_markup_style_or_script(&rel)
            && let Ok(text) = std::fs::read_to_string(abs)
        {
            for n in markup_names(&text).into_iter().take(MAX_NAMES) {
                self.add_plain(n);
            }
        }
        self.files.insert(rel);
        Ok(())
    }

    /// A symbol target: a bare name, or a member (`Type.member`) when the qualified text
    /// is not itself defined.
    fn add_symbol(
        &mut self,
        index: &Index,
        target: &str,
        member: Option<Qualified>,
    ) -> Result<(), Error> {
        let defined = || -> Result<bool, Error> {
            for t in index.lookup(target)? {
                if index.is_definition(t)? {
                    return Ok(true);
                }
            }
            Ok(false)
        };
        match member {
            Some(q) if !defined()? => {
                let found = super::symbols::members(&q, defined_as(index, &q.name)?);
                if found.is_empty() {
                    // No such member: the same answer as an unknown name.
                    return Err(Error::NotFound(target.to_string()));
                }
                let of_type = found.iter().any(|d| d.scope.as_deref() == Some(q.last()));
                let name = q.name.clone();
                self.members.push((q, of_type));
                self.add_name(name);
            }
            _ => self.add_plain(target.to_string()),
        }
        Ok(())
    }

    fn add_plain(&mut self, name: String) {
        self.plain.insert(name.clone());
        self.add_name(name);
    }

    fn add_name(&mut self, name: String) {
        if !self.names.contains(&name) {
            self.names.push(name);
        }
    }

    /// The members a name stands for when no target gave it plainly.
    fn members_of(&self, name: &str) -> Vec<&(Qualified, bool)> {
        if self.plain.contains(name) {
            Vec::new()
        } else {
            self.members
                .iter()
                .filter(|(q, _)| q.name == name)
                .collect()
        }
    }

    /// The definitions of the names: of a member's name, only those of that member.
    fn definitions(&self, index: &Index) -> Result<Vec<SymbolHit>, Error> {
        let mut definitions = Vec::new();
        for name in &self.names {
            for t in index.lookup(name)? {
                let (tag, file) = index.tag(t)?;
                let path = index.file_path(file);
                let meant = || {
                    let of = self.members_of(name);
                    of.is_empty()
                        || of
                            .iter()
                            .any(|(q, _)| q.defines(path, tag.scope.as_deref()))
                };
                if tag.is_definition && meant() {
                    definitions.push(super::symbols::hit(path, tag));
                }
            }
        }
        Ok(definitions)
    }
}

/// Text mentions outside the code index: tests, configuration, documentation, markup.
#[derive(Default)]
struct Mentions {
    tests: Vec<ImpactItem>,
    config_and_docs: Vec<ImpactItem>,
    markup: Vec<ImpactItem>,
}

impl Mentions {
    /// The mentions among the lines the text search `found`, outside the target files: a
    /// line names a target (of a member, with its container) as a whole word.
    fn of(found: TextResult, targets: &Targets) -> Mentions {
        let mut mentions = Mentions::default();
        for file in found.files {
            if targets.files.contains(&file.path) {
                continue;
            }
            for m in file.matches {
                let Some(name) = targets.names.iter().find(|n| {
                    let of = targets.members_of(n);
                    contains_word(&m.text, n)
                        && (of.is_empty() || of.iter().any(|(q, _)| q.mentioned_in(&m.text)))
                }) else {
                    continue;
                };
                let item = |why: String| ImpactItem {
                    path: file.path.clone(),
                    line: m.line,
                    name: name.clone(),
                    why,
                };
                if is_test_path(&file.path) {
                    mentions
                        .tests
                        .push(item(format!("test file mentions `{name}`")));
                } else if is_config_or_doc(&file.path) {
                    mentions.config_and_docs.push(item(format!(
                        "configuration or documentation names `{name}`"
                    )));
                } else if is_markup_style_or_script(&file.path)
                    && markup_use(&file.path, &m.text, name)
                {
                    mentions
                        .markup
                        .push(item(format!("markup uses `{name}` as a class or id")));
                }
            }
        }
        mentions
    }
}

/// Text mentions ranked for reading: the first line of each file, files with the most
/// mentions first, then every other line in file order. A few items then cover as many
/// files as they can.
fn spread(items: Vec<ImpactItem>) -> Vec<ImpactItem> {
    let mut per_file: BTreeMap<&str, usize> = BTreeMap::new();
    for i in &items {
        *per_file.entry(i.path.as_str()).or_default() += 1;
    }
    let mut firsts: Vec<usize> = Vec::new();
    let mut seen = BTreeSet::new();
    for (k, i) in items.iter().enumerate() {
        if seen.insert(i.path.as_str()) {
            firsts.push(k);
        }
    }
    firsts.sort_by_key(|&k| std::cmp::Reverse(per_file[items[k].path.as_str()]));
    let first: BTreeSet<usize> = firsts.iter().copied().collect();
    let order: Vec<usize> = firsts
        .into_iter()
        .chain((0..items.len()).filter(|k| !first.contains(k)))
        .collect();
    let mut slots: Vec<Option<ImpactItem>> = items.into_iter().map(Some).collect();
    order.into_iter().filter_map(|k| slots[k].take()).collect()
}

/// The order in which a caller's ways of using a name are listed: the strongest first.
const VIA_ORDER: &[&str] = &["inherit", "call", "read", "type", "decorator"];

/// Splits uses into subclasses (inherit), importers (import) and callers (any other use),
/// each caller being the innermost definition around its use, once per definition and
/// name. Bound uses come before name matches, as `uses` is sorted.
fn dependents(
    files: &[references::TaggedFile],
    uses: &[Use],
) -> (Vec<Caller>, Vec<ImpactItem>, Vec<Caller>) {
    let definitions: BTreeMap<&str, Vec<&Tag>> = files
        .iter()
        .map(|f| {
            let defs = f.tags.iter().filter(|t| t.is_definition).collect();
            (f.path.as_str(), defs)
        })
        .collect();
    let mut subclasses = Vec::new();
    let mut importers = Vec::new();
    let mut callers = Vec::new();
    let mut seen = BTreeMap::new();
    for u in uses {
        if u.tag.kind == "import" {
            importers.push(ImpactItem {
                path: u.path.clone(),
                line: u64::from(u.tag.line),
                name: u.tag.name.clone(),
                why: format!("imports `{}`", u.tag.name),
            });
            continue;
        }
        let line = u.tag.line;
        let around = definitions.get(u.path.as_str()).and_then(|defs| {
            defs.iter()
                .filter(|d| d.start_line.min(d.line) <= line && line <= d.end_line)
                .filter(|d| !(d.line == line && d.column == u.tag.column))
                .min_by_key(|d| d.end_line - d.start_line.min(d.line))
        });
        let Some(d) = around else { continue };
        let is_inherit = u.tag.kind == "inherit";
        let list: &mut Vec<Caller> = if is_inherit {
            &mut subclasses
        } else {
            &mut callers
        };
        let key = (u.path.clone(), d.line, u.tag.name.clone(), is_inherit);
        if let Some(&at) = seen.get(&key) {
            // One entry per definition and name: add this way of using it.
            let c: &mut Caller = &mut list[at];
            if !c.via.contains(&u.tag.kind) {
                c.via.push(u.tag.kind.clone());
                c.via.sort_by_key(|k| VIA_ORDER.iter().position(|o| o == k));
            }
            continue;
        }
        seen.insert(key, list.len());
        let caller = Caller {
            // `GroupForm.form_class`, `UserAdmin.save`: the enclosing definition names
            // which of the file's same-named members it is.
            name: match &d.scope {
                Some(scope) => format!("{scope}.{}", d.name),
                None => d.name.clone(),
            },
            kind: d.kind.clone(),
            path: u.path.clone(),
            line: d.line,
            uses: u.tag.name.clone(),
            via: vec![u.tag.kind.clone()],
            resolution: u.resolution.as_str(),
        };
        if u.tag.kind == "inherit" {
            subclasses.push(caller);
        } else {
            callers.push(caller);
        }
    }
    (subclasses, importers, callers)
}

fn contains_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        boundary(before) && boundary(after)
    })
}

/// Whether a line uses `name` as an HTML/CSS/JS class or id (the original's v1.3 markup
/// cross-reference): `class="... name"`, `id="name"`, `.name {`, `#name`, `getElementById`,
/// `querySelector`, `classList`.
fn markup_use(path: &str, line: &str, name: &str) -> bool {
    let trimmed = line.trim_start();
    // A comment that happens to say "class" and the name is not a use.
    if ["//", "/*", "*", "<!--", "{#", "{{!--"]
        .iter()
        .any(|c| trimmed.starts_with(c))
    {
        return false;
    }
    let stylesheet = matches!(
        path.rsplit('.').next(),
        Some("css" | "scss" | "sass" | "less")
    );
    in_attribute(line, name) || in_dom_call(line, name) || (stylesheet && in_selector(line, name))
}

/// `class="a NAME b"`, `className='NAME'`, `id="NAME"` (also `:class`, `v-bind:class`).
fn in_attribute(line: &str, name: &str) -> bool {
    for attr in ["class", "classname", "id"] {
        let lower = line.to_ascii_lowercase();
        for (at, _) in lower.match_indices(attr) {
            let before = lower[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-') {
                continue;
            }
            let rest = line[at + attr.len()..].trim_start();
            let Some(rest) = rest.strip_prefix('=') else {
                continue;
            };
            let rest = rest.trim_start();
            let Some(quote) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') else {
                continue;
            };
            let value = &rest[1..];
            let value = &value[..value.find(quote).unwrap_or(value.len())];
            if value.split_whitespace().any(|v| v == name) {
                return true;
            }
        }
    }
    false
}

/// `getElementById("NAME")`, `classList.add("NAME")`, `querySelector(".NAME")` and the
/// like.
fn in_dom_call(line: &str, name: &str) -> bool {
    for call in [
        "getElementById(",
        "classList.add(",
        "classList.remove(",
        "classList.toggle(",
        "classList.contains(",
        "getElementsByClassName(",
    ] {
        for (at, _) in line.match_indices(call) {
            let rest = line[at + call.len()..].trim_start();
            if let Some(value) = quoted(rest)
                && value.split_whitespace().any(|v| v == name)
            {
                return true;
            }
        }
    }
    for call in ["querySelector(", "querySelectorAll(", "$("] {
        for (at, _) in line.match_indices(call) {
            if let Some(value) = quoted(line[at + call.len()..].trim_start())
                && in_selector(value, name)
            {
                return true;
            }
        }
    }
    false
}

/// The text of a string literal at the start of `text`.
fn quoted(text: &str) -> Option<&str> {
    let quote = text
        .chars()
        .next()
        .filter(|c| matches!(c, '"' | '\'' | '`'))?;
    let value = &text[1..];
    Some(&value[..value.find(quote)?])
}

/// `.NAME` or `#NAME` in a selector (stylesheet lines and selector strings only, where a
/// compound like `div.NAME` is a selector too): not followed by a name character, so
/// `.NAMEs` is another class.
fn in_selector(text: &str, name: &str) -> bool {
    ['.', '#'].iter().any(|sigil| {
        let needle = format!("{sigil}{name}");
        text.match_indices(&needle).any(|(at, _)| {
            let after = text[at + needle.len()..].chars().next();
            !after.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-')
        })
    })
}

/// Class and id names a markup or stylesheet file defines.
fn markup_names(text: &str) -> Vec<String> {
    let mut out = BTreeSet::new();
    for attr in ["class=\"", "id=\"", "class='", "id='"] {
        for (at, _) in text.match_indices(attr) {
            let rest = &text[at + attr.len()..];
            let end = rest.find(['"', '\'']).unwrap_or(rest.len());
            for n in rest[..end].split_whitespace() {
                if n.chars()
                    .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
                {
                    out.insert(n.to_string());
                }
            }
        }
    }
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(sel) = t.strip_prefix('.').or_else(|| t.strip_prefix('#')) {
            let n: String = sel
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            if !n.is_empty() && t.contains('{') {
                out.insert(n);
            }
        }
    }
    out.into_iter().collect()
}

fn risk(
    names: &[String],
    definitions: &[SymbolHit],
    referencing: &BTreeSet<&str>,
    subclasses: usize,
    tests: &[ImpactItem],
    config: &[ImpactItem],
    markup: &[ImpactItem],
) -> Risk {
    let mut reasons = Vec::new();
    let mut score = 0;
    match referencing.len() {
        0 => reasons.push("no other source file refers to it".to_string()),
        n @ 1..=5 => {
            score += 1;
            reasons.push(format!("{n} other source file(s) refer to it"));
        }
        n => {
            score += 2;
            reasons.push(format!("{n} other source files refer to it"));
        }
    }
    if subclasses > 0 {
        score += 1;
        reasons.push(format!(
            "{subclasses} subclass(es) or implementation(s) inherit its behaviour"
        ));
    }
    if definitions.len() > names.len() {
        score += 1;
        reasons.push(format!("{} definitions share these {} name(s): overloads or same-named symbols may be confused", definitions.len(), names.len()));
    }
    if tests.is_empty() {
        score += 1;
        reasons.push("no test mentions it: changes are unguarded".to_string());
    } else {
        reasons.push(format!("{} test line(s) mention it", tests.len()));
    }
    if !config.is_empty() {
        score += 1;
        reasons.push(format!(
            "{} configuration or documentation line(s) name it",
            config.len()
        ));
    }
    if !markup.is_empty() {
        score += 1;
        reasons.push(format!(
            "{} markup line(s) use it as a class or id",
            markup.len()
        ));
    }
    let level = match score {
        0 | 1 => "low",
        2 | 3 => "medium",
        _ => "high",
    };
    Risk { level, reasons }
}

#[cfg(test)]
mod markup_tests {
    use super::markup_use;

    #[test]
    fn only_class_and_id_uses_count_as_markup() {
        let table = [
            ("page.html", r#"<div class="card active">"#, true),
            ("page.html", r#"<section id="card">"#, true),
            ("page.html", r#"<div class="cards">"#, false),
            (
                "page.html",
                "<!-- the card class is styled below -->",
                false,
            ),
            ("app.jsx", r#"return <div className="card" />;"#, true),
            ("app.js", "// the card class is styled below", false),
            (
                "app.js",
                r#"document.getElementById("card").focus();"#,
                true,
            ),
            ("app.js", "el.classList.add('card');", true),
            ("app.js", r#"document.querySelector(".card > a")"#, true),
            ("app.js", r##"$("#card").hide();"##, true),
            ("app.js", "const x = obj.card;", false),
            ("style.css", ".card { color: red }", true),
            ("style.css", ".cards { color: red }", false),
            ("style.css", "a.card:hover {}", true),
            ("app.js", r#"document.querySelector("div.card")"#, true),
            ("page.html", "{{ value|card }}", false),
        ];
        for (path, line, expected) in table {
            assert_eq!(markup_use(path, line, "card"), expected, "{path}: {line}");
        }
    }
}
