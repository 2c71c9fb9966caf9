//! Reading Rust source as text for the tidy and layering checks: comments, strings and
//! char literals blanked (so none can look like code or unbalance braces), and the items
//! marked `#[cfg(test)]` found wherever they sit. Blanking keeps every character's
//! position and every newline, so positions in the blanked text are positions in the file.

use std::ops::Range;

/// `text` with comments and string and char literals replaced by spaces (newlines kept).
pub(crate) fn blank_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out: Vec<char> = chars.clone();
    let blank = |out: &mut Vec<char>, range: Range<usize>| {
        for c in &mut out[range] {
            if *c != '\n' {
                *c = ' ';
            }
        }
    };
    let starts = |i: usize, s: &str| {
        s.chars()
            .enumerate()
            .all(|(k, c)| chars.get(i + k) == Some(&c))
    };
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let after_ident = i > 0 && is_ident(chars[i - 1]);
        if starts(i, "//") {
            let start = i;
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            blank(&mut out, start..i);
        } else if starts(i, "/*") {
            // Block comments nest.
            let start = i;
            let mut depth = 0;
            while i < chars.len() {
                if starts(i, "/*") {
                    depth += 1;
                    i += 2;
                } else if starts(i, "*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            let end = i.min(chars.len());
            blank(&mut out, start..end);
        } else if let Some(end) = (!after_ident).then(|| raw_string_end(&chars, i)).flatten() {
            blank(&mut out, i..end);
            i = end;
        } else if c == '"' {
            let start = i;
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i = (i + 1).min(chars.len());
            blank(&mut out, start..i);
        } else if c == '\'' {
            // A char literal ('x', '\n', '\'', '\u{1F600}'), not a lifetime ('a).
            let len = if chars.get(i + 1) == Some(&'\\') {
                (i + 3..chars.len().min(i + 14))
                    .find(|&k| chars[k] == '\'')
                    .map(|k| k + 1 - i)
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(3)
            } else {
                None
            };
            match len {
                Some(n) => {
                    blank(&mut out, i..i + n);
                    i += n;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    out.into_iter().collect()
}

/// Where a raw string starting at `i` ends (`r"…"`, `r#"…"#`, `br##"…"##`, `cr"…"`).
fn raw_string_end(chars: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if matches!(chars.get(j), Some('b' | 'c')) {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while chars.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if chars.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < chars.len() {
        if chars[j] == '"' && (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(chars.len())
}

/// The ranges (in characters) of items marked `#[cfg(test)]`: the attribute through the
/// item's `;` or its whole `{ … }` block. A `#[cfg(test)]` on something that is not an
/// item (a field, an expression) covers only the attribute. `code` must be blanked.
pub(crate) fn test_items(code: &str) -> Vec<Range<usize>> {
    let chars: Vec<char> = code.chars().collect();
    let marker: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i + marker.len() <= chars.len() {
        if chars[i..i + marker.len()] != marker[..] {
            i += 1;
            continue;
        }
        let after = i + marker.len();
        let end = if starts_item(&chars, after) {
            item_end(&chars, after)
        } else {
            after
        };
        out.push(i..end);
        i = end.max(i + 1);
    }
    out
}

/// Whether an item keyword follows (after whitespace, further attributes and a
/// visibility).
fn starts_item(chars: &[char], mut i: usize) -> bool {
    let skip_ws = |i: &mut usize| {
        while *i < chars.len() && chars[*i].is_whitespace() {
            *i += 1;
        }
    };
    loop {
        skip_ws(&mut i);
        if chars.get(i) == Some(&'#') {
            // Another attribute: skip its brackets.
            let mut depth = 0;
            while i < chars.len() {
                match chars[i] {
                    '[' => depth += 1,
                    ']' => {
                        depth -= 1;
                        if depth == 0 {
                            i += 1;
                            break;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            continue;
        }
        break;
    }
    let word = |i: usize| -> String {
        chars[i.min(chars.len())..]
            .iter()
            .take_while(|c| c.is_alphanumeric() || **c == '_')
            .collect()
    };
    let mut w = word(i);
    if w == "pub" {
        i += 3;
        if chars.get(i) == Some(&'(') {
            while i < chars.len() && chars[i] != ')' {
                i += 1;
            }
            i += 1;
        }
        skip_ws(&mut i);
        w = word(i);
    }
    matches!(
        w.as_str(),
        "mod"
            | "fn"
            | "use"
            | "impl"
            | "struct"
            | "enum"
            | "const"
            | "static"
            | "type"
            | "trait"
            | "macro_rules"
            | "extern"
            | "unsafe"
            | "async"
    )
}

/// The end of the item starting at `i`: past its first top-level `;`, or its `{ … }`.
fn item_end(chars: &[char], mut i: usize) -> usize {
    while i < chars.len() && chars[i] != '{' && chars[i] != ';' {
        i += 1;
    }
    if chars.get(i) == Some(&'{') {
        let mut depth = 0;
        while i < chars.len() {
            match chars[i] {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
    (i + 1).min(chars.len())
}

/// The file's code with literals and test items blanked.
pub(crate) fn code_without_tests(text: &str) -> String {
    let code = blank_literals(text);
    let mut chars: Vec<char> = code.chars().collect();
    for range in test_items(&code) {
        for c in &mut chars[range] {
            if *c != '\n' {
                *c = ' ';
            }
        }
    }
    chars.into_iter().collect()
}

/// The file's lines (1-based, as written, comments included) outside `#[cfg(test)]`
/// items.
pub(crate) fn non_test_lines(text: &str) -> Vec<(usize, &str)> {
    let tests = test_items(&blank_literals(text));
    let mut out = Vec::new();
    let mut at = 0;
    for (i, line) in text.lines().enumerate() {
        let start = at;
        at += line.chars().count() + 1;
        if !tests.iter().any(|r| r.contains(&start)) {
            out.push((i + 1, line));
        }
    }
    out
}

#[test]
fn literals_are_blanked_and_test_items_found_wherever_they_sit() {
    let text = "let a = '\\''; let b = \"x\\\"{\"; let c = r#\"}\" {\"#; let d = cr\"{\";\n\
                /* a /* nested */ { */ struct S { #[cfg(test)] a: u8, b: u8 }\n\
                #[cfg(test)]\n#[allow(dead_code)]\npub(crate) mod tests { fn f() { {} } }\n\
                fn live() {}\n";
    let code = blank_literals(text);
    assert_eq!(code.chars().count(), text.chars().count());
    assert_eq!(
        code.matches('{').count(),
        code.matches('}').count(),
        "{code}"
    );
    let lines: Vec<usize> = non_test_lines(text).iter().map(|(n, _)| *n).collect();
    // The field attribute hides nothing; the test module (lines 3–5) is skipped.
    assert_eq!(lines, [1, 2, 6]);
    assert!(code_without_tests(text).contains("b: u8"));
    assert!(!code_without_tests(text).contains("fn f"));
}
