//! The IDE's JavaScript: its units (`tests/ide/*.test.mjs`: the graph layout, the
//! Markdown parser, the panels' pure parts) run with Node's own test runner, so `cargo
//! test` runs them too (Node is on every machine `.ci/run` prepares: it installs the npm
//! test clients with it); and the rules the modules keep (issue 35), read from their
//! source: no function over [`MAX_FUNCTION_LINES`] and no file over [`MAX_FILE_LINES`],
//! and the strings in `ide/locales/` (one table per language, the same keys in each, read
//! by `i18n.js` only), every key a module names in both.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::support::repo;

#[test]
fn the_ides_javascript_units_pass_under_node() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ide");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".test.mjs"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no tests in {}", dir.display());
    let o = crate::sealed::command("node")
        .arg("--test")
        // One file at a time: the Markdown parser's growth checks time their inputs, and
        // the other files running beside them would only add noise.
        .arg("--test-concurrency=1")
        .args(&files)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("node (20 or later) is needed for the IDE's JavaScript tests");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "node --test failed:\n{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Each file ran: its tests are in the report, none skipped as empty.
    let passed = out
        .lines()
        .find_map(|l| l.strip_prefix("# pass "))
        .and_then(|n| n.trim().parse::<u32>().ok())
        .unwrap_or(0);
    assert!(passed >= files.len() as u32, "{passed} passed:\n{out}");
}

// ---- The source: comments and literals told apart from code ----

/// Whether `c` can be part of a JavaScript identifier (or a number).
fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// A JavaScript source with its comments and the insides of its string, template and
/// regular-expression literals blanked (each character a space, newlines kept, so
/// positions and lines do not move); a template's `${…}` stays code.
fn js_code(text: &str) -> String {
    scan(text).0
}

/// A string literal, or the text of a template literal up to its first `${` (`whole`
/// when it has none), with the position of its opening quote or backtick.
#[derive(Debug)]
struct Literal {
    at: usize,
    text: String,
    whole: bool,
}

/// The string and template literals of a JavaScript source, in order.
fn js_literals(text: &str) -> Vec<Literal> {
    scan(text).1
}

/// [`js_code`] and [`js_literals`] in one pass.
fn scan(text: &str) -> (String, Vec<Literal>) {
    let mut literals = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut out = chars.clone();
    let mut blank = |from: usize, to: usize| {
        for c in &mut out[from..to.min(chars.len())] {
            if *c != '\n' {
                *c = ' ';
            }
        }
    };
    // The brace depth at which each open template's `${` sits, innermost last.
    let mut templates: Vec<usize> = Vec::new();
    let mut braces = 0usize;
    // The last character of code that is not whitespace, and the word it ends.
    let mut last: Option<char> = None;
    let mut word = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            let start = i;
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            blank(start, i);
            continue;
        }
        if c == '/' && next == Some('*') {
            let start = i;
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i += 2;
            blank(start, i);
            continue;
        }
        let in_template_text =
            c == '`' || (c == '}' && templates.last().map(|d| d + 1) == Some(braces));
        if in_template_text {
            let opening = c == '`';
            if c == '}' {
                templates.pop();
                braces -= 1;
            }
            i += 1;
            let start = i;
            while i < chars.len()
                && chars[i] != '`'
                && !(chars[i] == '$' && chars.get(i + 1) == Some(&'{'))
            {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            blank(start, i);
            if opening {
                literals.push(Literal {
                    at: start - 1,
                    text: chars[start..i.min(chars.len())].iter().collect(),
                    whole: i >= chars.len() || chars[i] == '`',
                });
            }
            if i < chars.len() && chars[i] == '$' {
                templates.push(braces);
                braces += 1;
                i += 2;
                last = Some('{');
            } else {
                i += 1;
                last = Some(')');
            }
            word.clear();
            continue;
        }
        let regex = c == '/' && regex_may_start(last, &word);
        if c == '\'' || c == '"' || regex {
            // The quotes (or slashes) stay; what is between them goes.
            i += 1;
            let start = i;
            let mut class = false;
            while i < chars.len() && chars[i] != '\n' {
                let d = chars[i];
                if d == '\\' {
                    i += 2;
                    continue;
                }
                if regex && d == '[' {
                    class = true;
                } else if regex && d == ']' {
                    class = false;
                } else if d == c && !class {
                    break;
                }
                i += 1;
            }
            blank(start, i);
            if !regex {
                literals.push(Literal {
                    at: start - 1,
                    text: chars[start..i.min(chars.len())].iter().collect(),
                    whole: true,
                });
            }
            i += 1;
            last = Some(')');
            word.clear();
            continue;
        }
        match c {
            '{' => braces += 1,
            '}' => braces = braces.saturating_sub(1),
            _ => {}
        }
        if word_char(c) {
            if !last.is_some_and(word_char) || (i > 0 && !word_char(chars[i - 1])) {
                word.clear();
            }
            word.push(c);
            last = Some(c);
        } else if !c.is_whitespace() {
            last = Some(c);
            word.clear();
        }
        i += 1;
    }
    (out.into_iter().collect(), literals)
}

/// Whether a `/` after `last` (the last character of code, `word` the word it ends)
/// starts a regular expression rather than a division: after an operator, an opening
/// bracket, a comma, nothing, or a keyword that takes an expression.
fn regex_may_start(last: Option<char>, word: &str) -> bool {
    match last {
        None => true,
        Some(c) if word_char(c) => matches!(
            word,
            "return"
                | "typeof"
                | "instanceof"
                | "in"
                | "of"
                | "new"
                | "delete"
                | "void"
                | "throw"
                | "case"
                | "do"
                | "else"
                | "yield"
                | "await"
        ),
        Some(c) => !matches!(c, ')' | ']' | '}'),
    }
}

// ---- Lengths: no function over 150 lines, no file over 900 (issue 35) ----

/// The longest a function may be, in lines, as `tidy` has it for Rust.
const MAX_FUNCTION_LINES: usize = 150;

/// The most lines a module may have.
const MAX_FILE_LINES: usize = 900;

/// The functions allowed over [`MAX_FUNCTION_LINES`] (`file:name`, the file under
/// `ide/`): data tables only, each with why.
const LONG_FUNCTIONS_ALLOWED: &[(&str, &str)] = &[];

/// The files allowed over [`MAX_FILE_LINES`] (under `ide/`): data tables only, each with
/// why.
const LONG_FILES_ALLOWED: &[(&str, &str)] = &[];

/// A function found in a module: its name (the variable or key it is assigned to for an
/// arrow or an anonymous function), the line it starts on and how many lines it takes.
#[derive(Debug, PartialEq)]
struct FunctionLength {
    name: String,
    line: usize,
    lines: usize,
}

/// The length of every function in `code` (blanked by [`js_code`]): a `function`, a
/// method and an arrow function, from the line it starts on (its `function` keyword, its
/// name, its parameters) to the line of its closing brace, or of the end of an arrow's
/// expression body, both included. A function inside another is measured on its own and
/// counts in the outer one's lines too.
fn js_function_lengths(code: &str) -> Vec<FunctionLength> {
    let chars: Vec<char> = code.chars().collect();
    let line_of = |at: usize| chars[..at].iter().filter(|c| **c == '\n').count() + 1;
    // Each bracket's partner.
    let mut partner = vec![usize::MAX; chars.len()];
    let mut open = Vec::new();
    for (i, c) in chars.iter().enumerate() {
        match c {
            '(' | '[' | '{' => open.push(i),
            ')' | ']' | '}' => {
                if let Some(o) = open.pop() {
                    partner[o] = i;
                    partner[i] = o;
                }
            }
            _ => {}
        }
    }
    // The last non-space position before `at`, if any.
    let before = |at: usize| (0..at).rev().find(|&k| !chars[k].is_whitespace());
    // The word ending at `end` (inclusive) and where it starts.
    let word_at = |end: usize| {
        let mut start = end + 1;
        while start > 0 && word_char(chars[start - 1]) {
            start -= 1;
        }
        (start <= end).then(|| (chars[start..=end].iter().collect::<String>(), start))
    };
    // The word before position `at` (skipping whitespace), with its start.
    let word_before = |at: usize| before(at).and_then(word_at);
    // What a function starting at `start` is called: `name =`, `name:` before it, else none.
    let assigned = |start: usize| {
        let p = before(start)?;
        if chars[p] != '=' && chars[p] != ':' {
            return None;
        }
        if chars[p] == '=' && p > 0 && matches!(chars[p - 1], '=' | '!' | '<' | '>') {
            return None;
        }
        word_before(p).map(|(w, _)| w)
    };
    let mut out = Vec::new();
    for at in 0..chars.len() {
        let arrow = chars[at] == '=' && chars.get(at + 1) == Some(&'>');
        let (start, end, name) = if arrow {
            // The parameters: `(…)` or one name, `async` before them included.
            let Some(p) = before(at) else { continue };
            let mut start = if chars[p] == ')' && partner[p] != usize::MAX {
                partner[p]
            } else if let Some((_, s)) = word_at(p) {
                s
            } else {
                continue;
            };
            if let Some((w, s)) = word_before(start)
                && w == "async"
            {
                start = s;
            }
            let Some(body) = (at + 2..chars.len()).find(|&k| !chars[k].is_whitespace()) else {
                continue;
            };
            let end = if chars[body] == '{' {
                partner[body]
            } else {
                // An expression body: to the `,` or `;` or the closing bracket that ends it.
                let mut k = body;
                let mut last = body;
                while k < chars.len() {
                    match chars[k] {
                        '(' | '[' | '{' if partner[k] != usize::MAX => {
                            k = partner[k];
                            last = k;
                        }
                        ',' | ';' | ')' | ']' | '}' => break,
                        c if !c.is_whitespace() => last = k,
                        _ => {}
                    }
                    k += 1;
                }
                last
            };
            (start, end, assigned(start))
        } else if chars[at] == '{' {
            let Some(p) = before(at) else { continue };
            if chars[p] != ')' || partner[p] == usize::MAX {
                continue;
            }
            let paren = partner[p];
            let Some((w, s)) = word_before(paren) else {
                continue;
            };
            if matches!(
                w.as_str(),
                "if" | "for" | "while" | "switch" | "catch" | "with"
            ) {
                continue;
            }
            if w == "function" {
                (s, partner[at], assigned(s))
            } else {
                // `function name(…) {` or, in a class or an object, the method `name(…) {`.
                let keyword = before(s)
                    .map(|q| if chars[q] == '*' { before(q) } else { Some(q) })
                    .and_then(|q| q.and_then(word_at));
                match keyword {
                    Some((k, ks)) if k == "function" => (ks, partner[at], Some(w)),
                    _ => (s, partner[at], Some(w)),
                }
            }
        } else {
            continue;
        };
        if end == usize::MAX {
            continue;
        }
        let line = line_of(start);
        out.push(FunctionLength {
            name: name.unwrap_or_else(|| "(anonymous)".to_string()),
            line,
            lines: line_of(end) - line + 1,
        });
    }
    out.sort_by_key(|f| f.line);
    out
}

/// The IDE's JavaScript modules: every `.js` and `.mjs` under `ide/`, as their path
/// under it (with `/`) and their text, in order.
fn ide_modules() -> Vec<(String, String)> {
    let root = repo().join("ide");
    let mut pending = vec![root.clone()];
    let mut out = Vec::new();
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path: PathBuf = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "js" || e == "mjs") {
                let name = path
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((name, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    out.sort();
    assert!(out.len() > 10, "the IDE's modules were not found: {out:?}");
    out
}

#[test]
fn the_js_measure_counts_from_the_function_to_its_closing_brace() {
    let body = |lines: usize| "  x = '}' + `{${'}'}` + /[}]/.source; // {\n".repeat(lines);
    let text = format!(
        "// A comment is not code: function nope() {{\nexport function declared(a, b) {{\n{}}}\n\
         const arrow = async (a) => {{\n{}}};\nconst short = (a) =>\n  a +\n  b;\n\
         const o = {{ method(x) {{ if (x) {{ return 1; }} }}, key: function () {{}} }};\n\
         /* function hidden() {{\n}} */\n",
        body(MAX_FUNCTION_LINES - 2),
        body(MAX_FUNCTION_LINES - 1),
    );
    let lengths = js_function_lengths(&js_code(&text));
    let names: Vec<(&str, usize)> = lengths.iter().map(|f| (f.name.as_str(), f.lines)).collect();
    // The function's first line and its closing brace count; braces in strings,
    // templates, regular expressions and comments count for nothing; an `if` is no
    // function, an arrow's expression body ends where its expression does.
    assert_eq!(
        names,
        [
            ("declared", MAX_FUNCTION_LINES),
            ("arrow", MAX_FUNCTION_LINES + 1),
            ("short", 3),
            ("method", 1),
            ("key", 1),
        ]
    );
    // A template's text up to its first `${`, a string's text; not a comment's.
    let (strings, prefixes) =
        names_in("t('a.b'); t(`state.${s}`); x(`c.d`); // 'e.f'\nh(\"g.h\");");
    assert_eq!(strings, ["a.b", "c.d", "g.h"]);
    assert_eq!(prefixes, ["state."]);
}

/// No function of the IDE is longer than [`MAX_FUNCTION_LINES`], measured by
/// [`js_function_lengths`] (from the line of its `function` keyword, its name or its
/// parameters to the line of its closing brace, comments and blank lines inside
/// counted), and no module longer than [`MAX_FILE_LINES`]. Data tables are allowed by
/// name; an entry no longer needed must go.
#[test]
fn no_ide_function_is_longer_than_150_lines_and_no_module_than_900() {
    let mut over = Vec::new();
    let mut allowed_and_long = Vec::new();
    for (name, text) in ide_modules() {
        let lines = text.lines().count();
        if lines > MAX_FILE_LINES {
            if LONG_FILES_ALLOWED.iter().any(|(f, _)| *f == name) {
                allowed_and_long.push(name.clone());
            } else {
                over.push(format!("ide/{name}: {lines} lines"));
            }
        }
        for f in js_function_lengths(&js_code(&text)) {
            if f.lines <= MAX_FUNCTION_LINES {
                continue;
            }
            let id = format!("{name}:{}", f.name);
            if LONG_FUNCTIONS_ALLOWED.iter().any(|(n, _)| *n == id) {
                allowed_and_long.push(id);
            } else {
                over.push(format!(
                    "ide/{name}:{}: {} ({} lines)",
                    f.line, f.name, f.lines
                ));
            }
        }
    }
    let stale: Vec<&str> = LONG_FUNCTIONS_ALLOWED
        .iter()
        .chain(LONG_FILES_ALLOWED)
        .map(|(n, _)| *n)
        .filter(|n| !allowed_and_long.iter().any(|a| a == n))
        .collect();
    assert!(
        over.is_empty() && stale.is_empty(),
        "over {MAX_FUNCTION_LINES} lines a function or {MAX_FILE_LINES} a module (split them by \
         the sections they draw):\n{}\nallowed as long that are not (remove them): {stale:?}",
        over.join("\n"),
    );
}

// ---- Translations: one table per language in ide/locales/, read by i18n.js only ----

/// The languages, each a table `ide/locales/<code>.js` (i18n.js's `LOCALES`).
const LOCALES: &[&str] = &["en", "ja"];

/// Keys in the tables that no module names (kept as they were when the strings moved
/// out of the modules, issue 35); an entry whose key is named again, or gone, must go.
const UNUSED_KEYS_ALLOWED: &[&str] = &["backlog.task", "chat.conflict", "task.summary"];

/// The keys of a locale's table: its `'key': …` lines, in order.
fn locale_keys(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix('\'')?;
            let (key, after) = rest.split_once('\'')?;
            (after.starts_with(':') && is_key(key)).then(|| key.to_string())
        })
        .collect()
}

/// Whether `s` has a key's shape: names joined by dots, the first in lower case.
fn is_key(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.contains('.')
        && s.split('.').all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
}

/// What a module names that may be a key: the text of its string literals and of its
/// templates without `${…}`, and the text before the first `${` of each template passed
/// straight to `t(` (a key's prefix, the rest computed).
fn names_in(text: &str) -> (Vec<String>, Vec<String>) {
    let code: Vec<char> = js_code(text).chars().collect();
    let mut strings = Vec::new();
    let mut prefixes = Vec::new();
    for literal in js_literals(text) {
        if literal.whole {
            strings.push(literal.text);
            continue;
        }
        let mut k = literal.at;
        while k > 0 && code[k - 1].is_whitespace() {
            k -= 1;
        }
        let called = k >= 2
            && code[k - 1] == '('
            && code[k - 2] == 't'
            && (k < 3 || !word_char(code[k - 3]));
        if called {
            prefixes.push(literal.text);
        }
    }
    (strings, prefixes)
}

/// Every language's table has the same keys, each once; every key a module names (a
/// string of a key's shape in a namespace the tables have: `t('task.retry')`, a key in
/// a list or a table of the module's) is in them, or is the rest of a key whose prefix
/// a module gives `t` (`t(`settings.err.${key}`)`); and every key of the tables is named
/// by a module, literally or by its prefix (but [`UNUSED_KEYS_ALLOWED`]).
#[test]
fn every_language_has_the_same_keys_and_every_key_a_module_names() {
    let dir = repo().join("ide/locales");
    let mut tables = Vec::new();
    for code in LOCALES {
        let text = std::fs::read_to_string(dir.join(format!("{code}.js"))).unwrap();
        let keys = locale_keys(&text);
        let unique: BTreeSet<String> = keys.iter().cloned().collect();
        assert!(unique.len() > 300, "{code}.js: {} keys found", unique.len());
        assert_eq!(unique.len(), keys.len(), "{code}.js names a key twice");
        tables.push((*code, unique));
    }
    let (_, en) = &tables[0];
    for (code, keys) in &tables[1..] {
        let missing: Vec<&String> = en.difference(keys).collect();
        let extra: Vec<&String> = keys.difference(en).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{code}.js lacks {missing:?} of en.js, and has {extra:?} that en.js lacks"
        );
    }
    let namespaces: BTreeSet<&str> = en.iter().filter_map(|k| k.split('.').next()).collect();
    let mut named = BTreeSet::new();
    let mut prefixes = BTreeSet::new();
    for (name, text) in ide_modules() {
        if name.starts_with("locales/") {
            continue;
        }
        let (strings, given) = names_in(&text);
        for s in strings {
            if is_key(&s) && namespaces.contains(s.split('.').next().unwrap_or_default()) {
                named.insert((s, name.clone()));
            }
        }
        prefixes.extend(given);
    }
    assert!(
        prefixes.contains("state."),
        "no computed key found: {prefixes:?}"
    );
    let unknown: Vec<String> = named
        .iter()
        .filter(|(key, _)| {
            !en.contains(key) && !prefixes.iter().any(|p| en.contains(&format!("{p}{key}")))
        })
        .map(|(key, module)| format!("{module}: {key}"))
        .collect();
    assert!(
        unknown.is_empty(),
        "keys the tables lack:\n{}",
        unknown.join("\n")
    );
    let unused: Vec<&String> = en
        .iter()
        .filter(|k| {
            !named.iter().any(|(n, _)| n == *k)
                && !prefixes.iter().any(|p| k.starts_with(p.as_str()))
        })
        .collect();
    let listed: Vec<&String> = unused
        .iter()
        .copied()
        .filter(|k| !UNUSED_KEYS_ALLOWED.contains(&k.as_str()))
        .collect();
    let stale: Vec<&&str> = UNUSED_KEYS_ALLOWED
        .iter()
        .filter(|k| !unused.iter().any(|u| u == *k))
        .collect();
    assert!(
        listed.is_empty() && stale.is_empty(),
        "keys no module names: {listed:?}; allowed as unused that are not (or gone): {stale:?}"
    );
}

/// The strings live in the tables alone: `i18n.js` is the only module that names
/// `locales/` and the only one with `register`, and no module holds a table of keys of
/// its own (a `'key': 'text'` line).
#[test]
fn only_i18n_reads_the_tables_and_no_module_keeps_strings() {
    let mut found = Vec::new();
    for (name, text) in ide_modules() {
        if name.starts_with("locales/") || name == "i18n.js" {
            continue;
        }
        if js_literals(&text)
            .iter()
            .any(|l| l.text.contains("locales/"))
        {
            found.push(format!("{name} reads a table"));
        }
        let code = js_code(&text);
        if code
            .match_indices("register(")
            .any(|(at, _)| !code[..at].ends_with(|c: char| word_char(c) || c == '.'))
        {
            found.push(format!("{name} registers strings"));
        }
        if let Some(key) = locale_keys(&text).first() {
            found.push(format!("{name} holds strings ({key}, …)"));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
    let i18n = std::fs::read_to_string(repo().join("ide/i18n.js")).unwrap();
    assert!(
        i18n.contains("from './locales/en.js'") && i18n.contains("import(`./locales/${"),
        "i18n.js loads no table"
    );
}
