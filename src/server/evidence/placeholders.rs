//! What stands in for an implementation without being one: the placeholder statements
//! (one table, so a new one is one row) and the textual rule for lines, used where no
//! grammar parses the file and for the lines of a range that a syntax tree leaves over.

/// What may follow a placeholder's head for the statement to still be that placeholder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arguments {
    /// Nothing: the head is the whole statement (`pass`).
    None,
    /// Nothing or any argument list (`raise NotImplementedError`, `...("why")`, Ruby's
    /// `raise NotImplementedError, "why"`).
    Optional,
    /// An argument list with any content (Rust's `todo` macro, with or without a message).
    Required,
    /// An argument list that says it is not implemented (`throw new Error("Not
    /// implemented")`): the same head with another message is real error handling.
    SayingNotImplemented,
}

/// One placeholder statement, matched on its text with whitespace collapsed and trailing
/// semicolons removed.
#[derive(Debug)]
struct Placeholder {
    head: &'static str,
    /// A Rust macro: `head!` followed by its arguments. The `!` is not written into the
    /// head so that the macro names do not read as leftover macro calls in the source.
    is_macro: bool,
    arguments: Arguments,
}

const fn statement(head: &'static str, arguments: Arguments) -> Placeholder {
    Placeholder {
        head,
        is_macro: false,
        arguments,
    }
}

const fn macro_call(head: &'static str, arguments: Arguments) -> Placeholder {
    Placeholder {
        head,
        is_macro: true,
        arguments,
    }
}

/// Every placeholder, for every language. Comments and docstrings are not here: the
/// callers remove them before asking.
const PLACEHOLDERS: &[Placeholder] = &[
    // Nothing at all, or an empty block written out (`{}` on its own line).
    statement("", Arguments::None),
    statement("{}", Arguments::None),
    // Python.
    statement("pass", Arguments::None),
    statement("...", Arguments::None),
    // Python and Ruby.
    statement("raise NotImplementedError", Arguments::Optional),
    // Rust.
    macro_call("todo", Arguments::Required),
    macro_call("unimplemented", Arguments::Required),
    macro_call("panic", Arguments::SayingNotImplemented),
    // Go (`panic("not implemented")` is what gopls generates for a stub).
    statement("panic", Arguments::SayingNotImplemented),
    // JavaScript, TypeScript, Java, C#, PHP, C++.
    statement("throw new Error", Arguments::SayingNotImplemented),
    statement("throw Error", Arguments::SayingNotImplemented),
    statement("throw new NotImplementedException", Arguments::Optional),
    statement(
        "throw new System.NotImplementedException",
        Arguments::Optional,
    ),
    statement(
        "throw new UnsupportedOperationException",
        Arguments::SayingNotImplemented,
    ),
    statement("throw new Exception", Arguments::SayingNotImplemented),
    statement("throw new \\Exception", Arguments::SayingNotImplemented),
    statement("throw std::logic_error", Arguments::SayingNotImplemented),
    statement("throw std::runtime_error", Arguments::SayingNotImplemented),
];

/// The phrases (lower case) that make an error a placeholder.
const NOT_IMPLEMENTED: &[&str] = &["not implemented", "not yet implemented"];

impl Placeholder {
    fn matches(&self, normalized: &str) -> bool {
        let Some(rest) = normalized.strip_prefix(self.head) else {
            return false;
        };
        let rest = if self.is_macro {
            match rest.strip_prefix('!') {
                Some(rest) => rest,
                None => return false,
            }
        } else {
            rest
        };
        let rest = rest.trim_start();
        match self.arguments {
            Arguments::None => rest.is_empty(),
            Arguments::Optional => {
                rest.is_empty() || is_argument_list(rest) || rest.starts_with(',')
            }
            Arguments::Required => is_argument_list(rest),
            Arguments::SayingNotImplemented => {
                let lower = rest.to_lowercase();
                is_argument_list(rest) && NOT_IMPLEMENTED.iter().any(|p| lower.contains(p))
            }
        }
    }
}

/// `(…)`, `[…]` or `{…}`: the whole rest is one bracketed list (so `throw new ErrorX(…)`
/// does not match the head `throw new Error`).
fn is_argument_list(rest: &str) -> bool {
    let mut chars = rest.chars();
    let (Some(open), Some(close)) = (chars.next(), chars.next_back()) else {
        return false;
    };
    matches!((open, close), ('(', ')') | ('[', ']') | ('{', '}'))
}

/// Whitespace runs collapsed to one space, trailing `;` removed.
fn normalize(statement: &str) -> String {
    let collapsed = statement.split_whitespace().collect::<Vec<_>>().join(" ");
    collapsed.trim_end_matches([';', ' ']).to_string()
}

/// Whether `statement` (comments already removed) is only a placeholder.
pub(super) fn is_placeholder(statement: &str) -> bool {
    let normalized = normalize(statement);
    PLACEHOLDERS.iter().any(|p| p.matches(&normalized))
}

/// Brackets and separators on their own carry no implementation (`}` closing a block).
fn is_punctuation(line: &str) -> bool {
    line.chars()
        .all(|c| c.is_whitespace() || "{}()[];,".contains(c))
}

/// Whether lines (comments already removed) hold anything but blanks, punctuation and
/// placeholders. The lines are also judged together, so a placeholder written over
/// several lines (`raise NotImplementedError(` … `)`) is still one.
pub(super) fn lines_have_substance<S: AsRef<str>>(lines: &[S]) -> bool {
    let joined = lines
        .iter()
        .map(AsRef::as_ref)
        .collect::<Vec<_>>()
        .join(" ");
    if is_placeholder(&joined) || is_punctuation(&joined) {
        return false;
    }
    lines.iter().map(AsRef::as_ref).any(|line| {
        let line = line.trim();
        !line.is_empty() && !is_punctuation(line) && !is_placeholder(line)
    })
}

/// How comments are written in a file no grammar parses.
#[derive(Debug)]
struct CommentSyntax {
    /// A line whose text starts with one of these is a comment.
    line_prefixes: &'static [&'static str],
    /// Comments that open and close anywhere, possibly on other lines.
    blocks: &'static [(&'static str, &'static str)],
}

/// Configuration files, scripts and most languages without a grammar here.
const COMMON_COMMENTS: CommentSyntax = CommentSyntax {
    line_prefixes: &["#", "//", "--", ";"],
    blocks: &[("/*", "*/"), ("<!--", "-->")],
};

/// Markup, where `#` starts a heading, not a comment.
const MARKUP_COMMENTS: CommentSyntax = CommentSyntax {
    line_prefixes: &[],
    blocks: &[("<!--", "-->")],
};

/// Extensions (lower case) of markup files.
const MARKUP_EXTENSIONS: &[&str] = &[
    "md", "markdown", "mdx", "html", "htm", "xhtml", "xml", "svg", "vue",
];

/// The file's lines with comments removed, for a file without a grammar. Block comments
/// are tracked from the start of the file, so a range inside a comment opened earlier is
/// still seen as comment.
pub(super) fn uncommented_lines(text: &str, extension: Option<&str>) -> Vec<String> {
    let syntax = match extension {
        Some(ext)
            if MARKUP_EXTENSIONS
                .iter()
                .any(|m| m.eq_ignore_ascii_case(ext)) =>
        {
            &MARKUP_COMMENTS
        }
        _ => &COMMON_COMMENTS,
    };
    let mut open_block: Option<&str> = None;
    let mut out = Vec::new();
    for line in text.lines() {
        let mut kept = String::new();
        let mut rest = line;
        loop {
            if let Some(close) = open_block {
                match rest.find(close) {
                    Some(at) => {
                        rest = &rest[at + close.len()..];
                        open_block = None;
                    }
                    None => break,
                }
            }
            let next_open = syntax
                .blocks
                .iter()
                .filter_map(|(open, close)| rest.find(open).map(|at| (at, *open, *close)))
                .min_by_key(|(at, _, _)| *at);
            match next_open {
                Some((at, open, close)) => {
                    kept.push_str(&rest[..at]);
                    rest = &rest[at + open.len()..];
                    open_block = Some(close);
                }
                None => {
                    kept.push_str(rest);
                    break;
                }
            }
        }
        let trimmed = kept.trim_start();
        if syntax
            .line_prefixes
            .iter()
            .any(|prefix| trimmed.starts_with(prefix))
        {
            kept.clear();
        }
        out.push(kept);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_match_with_and_without_arguments() {
        for text in [
            "pass",
            "  ...  ",
            "raise NotImplementedError",
            "raise NotImplementedError()",
            "raise NotImplementedError(\"later\")",
            "raise NotImplementedError, 'later'",
            "todo!()",
            "todo!(\"x\");",
            "unimplemented!()",
            "panic!(\"not implemented\")",
            "panic(\"Not implemented yet\")",
            "throw new Error(\"Not implemented\");",
            "throw new Error('NOT IMPLEMENTED')",
            "throw new NotImplementedException();",
            "throw new UnsupportedOperationException(\"Not yet implemented\");",
            "{}",
            "",
        ] {
            assert!(is_placeholder(text), "{text:?}");
        }
        for text in [
            "passed = True",
            "raise NotImplementedErrorX",
            "raise ValueError(\"bad\")",
            "todo",
            "todo!",
            "throw new Error(\"bad input\")",
            "throw new ErrorX(\"not implemented\")",
            "panic(err)",
            "return None",
            "{ x }",
        ] {
            assert!(!is_placeholder(text), "{text:?}");
        }
    }

    #[test]
    fn lines_are_judged_alone_and_together() {
        assert!(!lines_have_substance(&["", "  }", "pass"]));
        assert!(!lines_have_substance(&[
            "raise NotImplementedError(",
            "    \"later\"",
            ")"
        ]));
        assert!(lines_have_substance(&["}", "return x"]));
        assert!(!lines_have_substance::<&str>(&[]));
    }

    #[test]
    fn comments_are_removed_by_prefix_and_block() {
        let text = "# c\nkey: 1 # kept\n/* a\nb */ x\n  // y\n<!-- z -->w\n-- sql\n; ini\n";
        assert_eq!(
            uncommented_lines(text, Some("yml")),
            ["", "key: 1 # kept", "", " x", "", "w", "", ""]
        );
        assert_eq!(
            uncommented_lines("# Title\n<!--\nhidden\n-->\n", Some("MD")),
            ["# Title", "", "", ""]
        );
    }
}
