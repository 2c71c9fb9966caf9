//! `analyze_impact`: what a change to some files or symbols may touch, each item with the
//! reason it is listed, and a short risk summary. Reproducible: the same tree gives the
//! same answer, in the same order.

use std::collections::{BTreeMap, BTreeSet};

use super::error::{Error, PathError};
use super::index::{Freshness, Index};
use super::page::{Page, Window};
use super::root::Root;
use super::search::search_words;
use super::symbols::SymbolHit;

/// One place the change may touch, and why it is listed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ImpactItem {
    pub path: String,
    pub line: u64,
    pub name: String,
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The definition that contains a reference.
    pub name: String,
    pub kind: String,
    pub path: String,
    pub line: u32,
    pub calls: String,
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
    pub definitions: Vec<SymbolHit>,
    pub references: Page<SymbolHit>,
    pub callers: Page<Caller>,
    pub tests: Page<ImpactItem>,
    pub config_and_docs: Page<ImpactItem>,
    pub markup: Page<ImpactItem>,
    pub risk: Risk,
    pub freshness: Freshness,
}

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

/// Analyses the impact of changing `targets`: root-relative file paths or symbol names.
pub fn analyze_impact(
    root: &Root,
    index: &Index,
    targets: &[String],
    window: Window,
) -> Result<Impact, Error> {
    if targets.is_empty() {
        return Err(Error::NothingToLookFor(
            "no target given: name files or symbols",
        ));
    }
    let mut names: Vec<String> = Vec::new();
    let mut target_files: BTreeSet<String> = BTreeSet::new();
    for target in targets {
        let resolved = root.resolve(target);
        // A target that leaves the root is an error, not a name to search for; one that
        // looks like a path but does not exist is not found.
        match &resolved {
            Err(PathError::OutsideRoot(_)) => {
                return Err(Error::Path(PathError::OutsideRoot(target.clone())));
            }
            Err(PathError::NotFound(_)) if looks_like_path(target) => {
                return Err(Error::Path(PathError::NotFound(target.clone())));
            }
            _ => {}
        }
        let as_file = resolved.ok().filter(|p| p.is_file());
        match as_file {
            Some(abs) => {
                let rel = root.relative(&abs);
                if let Some(i) = index.file_index(&rel) {
                    for t in index
                        .file_tags(i)?
                        .into_iter()
                        .filter(|t| t.is_definition && t.scope.is_none())
                        .take(MAX_NAMES)
                    {
                        if !names.contains(&t.name) {
                            names.push(t.name);
                        }
                    }
                }
                // Markup, stylesheet and script targets: their classes and ids are names.
                if is_markup_style_or_script(&rel)
                    && let Ok(text) = std::fs::read_to_string(&abs)
                {
                    for n in markup_names(&text).into_iter().take(MAX_NAMES) {
                        if !names.contains(&n) {
                            names.push(n);
                        }
                    }
                }
                target_files.insert(rel);
            }
            None => {
                if !names.contains(target) {
                    names.push(target.clone());
                }
            }
        }
    }
    let mut definitions = Vec::new();
    let mut references = Vec::new();
    for name in &names {
        for t in index.lookup(name)? {
            let (tag, file) = index.tag(t)?;
            let path = index.file_path(file).to_string();
            let h = super::symbols::hit(&path, tag);
            if h.definition {
                definitions.push(h)
            } else if !target_files.contains(&h.path) {
                references.push(h)
            }
        }
    }
    // Callers: the definition around each reference, found by line ranges.
    let mut callers = Vec::new();
    let mut seen = BTreeSet::new();
    let mut file_defs: BTreeMap<String, Vec<super::tags::Tag>> = BTreeMap::new();
    for r in &references {
        if !file_defs.contains_key(&r.path) {
            let defs = match index.file_index(&r.path) {
                Some(i) => index
                    .file_tags(i)?
                    .into_iter()
                    .filter(|t| t.is_definition)
                    .collect(),
                None => Vec::new(),
            };
            file_defs.insert(r.path.clone(), defs);
        }
        let defs = file_defs.get(&r.path).map_or(&[][..], Vec::as_slice);
        if let Some(d) = defs
            .iter()
            .filter(|d| d.line <= r.line && r.line <= d.end_line)
            .min_by_key(|d| d.end_line - d.line)
            && seen.insert((r.path.clone(), d.line, r.name.clone()))
        {
            callers.push(Caller {
                name: d.name.clone(),
                kind: d.kind.clone(),
                path: r.path.clone(),
                line: d.line,
                calls: r.name.clone(),
            });
        }
    }
    // Text mentions outside the code index: tests, configuration, documentation, markup.
    let mut tests = Vec::new();
    let mut config_and_docs = Vec::new();
    let mut markup = Vec::new();
    if !names.is_empty() {
        let found = search_words(root, &names)?;
        for file in found.files {
            if target_files.contains(&file.path) {
                continue;
            }
            for m in file.matches {
                let Some(name) = names.iter().find(|n| contains_word(&m.text, n)) else {
                    continue;
                };
                let item = |why: String| ImpactItem {
                    path: file.path.clone(),
                    line: m.line,
                    name: name.clone(),
                    why,
                };
                if is_test_path(&file.path) {
                    tests.push(item(format!("test file mentions `{name}`")));
                } else if is_config_or_doc(&file.path) {
                    config_and_docs.push(item(format!(
                        "configuration or documentation names `{name}`"
                    )));
                } else if is_markup_style_or_script(&file.path)
                    && markup_use(&file.path, &m.text, name)
                {
                    markup.push(item(format!("markup uses `{name}` as a class or id")));
                }
            }
        }
    }
    let referencing_files: BTreeSet<&str> = references.iter().map(|r| r.path.as_str()).collect();
    let risk = risk(
        &names,
        &definitions,
        &referencing_files,
        &tests,
        &config_and_docs,
        &markup,
    );
    let nothing = definitions.is_empty()
        && references.is_empty()
        && tests.is_empty()
        && config_and_docs.is_empty()
        && markup.is_empty();
    if nothing && target_files.is_empty() {
        return Err(Error::NotFound(targets.join(", ")));
    }
    Ok(Impact {
        names,
        definitions,
        references: {
            let mut page = Page::of(references, window);
            super::symbols::fill_reference_lines(root, &mut page);
            page
        },
        callers: Page::of(callers, window),
        tests: Page::of(tests, window),
        config_and_docs: Page::of(config_and_docs, window),
        markup: Page::of(markup, window),
        risk,
        freshness: index.freshness.clone(),
    })
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
