//! Empty-implementation detection on a syntax tree, for every language `codeintel` parses:
//! which node kinds are definitions (functions, methods, classes, closures) and which only
//! group statements, per language, as data.

use tree_sitter::{Node, Parser, Tree};

use super::placeholders::{is_placeholder, lines_have_substance};
use crate::codeintel::languages::Language;

/// The node kinds of one grammar that matter here.
#[derive(Debug)]
struct Syntax {
    /// The [`Language::name`] it describes.
    language: &'static str,
    /// Functions, methods, classes and closures: nodes whose `body` field holds what they
    /// implement.
    definitions: &'static [&'static str],
    /// Nodes that only group statements (a block, a class body): their named children are
    /// the statements.
    blocks: &'static [&'static str],
    /// Whether a definition without a body is a stub (Ruby's `def f; end`) rather than a
    /// signature (an abstract or interface method, a function declared elsewhere).
    bodyless_is_empty: bool,
}

const ECMASCRIPT_DEFINITIONS: &[&str] = &[
    "function_declaration",
    "function_expression",
    "generator_function_declaration",
    "generator_function",
    "arrow_function",
    "method_definition",
    "class_declaration",
    "class",
];

const TYPESCRIPT_DEFINITIONS: &[&str] = &[
    "function_declaration",
    "function_expression",
    "generator_function_declaration",
    "generator_function",
    "arrow_function",
    "method_definition",
    "class_declaration",
    "abstract_class_declaration",
    "class",
];

const ECMASCRIPT_BLOCKS: &[&str] = &["statement_block", "class_body"];

static SYNTAXES: [Syntax; 12] = [
    Syntax {
        language: "rust",
        definitions: &[
            "function_item",
            "impl_item",
            "trait_item",
            "closure_expression",
        ],
        blocks: &["block", "declaration_list"],
        bodyless_is_empty: false,
    },
    Syntax {
        language: "python",
        definitions: &["function_definition", "class_definition", "lambda"],
        blocks: &["block"],
        bodyless_is_empty: false,
    },
    Syntax {
        language: "javascript",
        definitions: ECMASCRIPT_DEFINITIONS,
        blocks: ECMASCRIPT_BLOCKS,
        bodyless_is_empty: false,
    },
    Syntax {
        language: "typescript",
        definitions: TYPESCRIPT_DEFINITIONS,
        blocks: ECMASCRIPT_BLOCKS,
        bodyless_is_empty: false,
    },
    Syntax {
        language: "tsx",
        definitions: TYPESCRIPT_DEFINITIONS,
        blocks: ECMASCRIPT_BLOCKS,
        bodyless_is_empty: false,
    },
    Syntax {
        language: "go",
        definitions: &["function_declaration", "method_declaration", "func_literal"],
        blocks: &["block", "statement_list"],
        bodyless_is_empty: false,
    },
    Syntax {
        language: "java",
        definitions: &[
            "method_declaration",
            "constructor_declaration",
            "class_declaration",
            "interface_declaration",
            "enum_declaration",
            "record_declaration",
            "lambda_expression",
        ],
        blocks: &[
            "block",
            "constructor_body",
            "class_body",
            "interface_body",
            "enum_body",
            "enum_body_declarations",
        ],
        bodyless_is_empty: false,
    },
    Syntax {
        language: "c",
        definitions: &["function_definition"],
        blocks: &["compound_statement"],
        bodyless_is_empty: false,
    },
    Syntax {
        language: "cpp",
        definitions: &[
            "function_definition",
            "class_specifier",
            "struct_specifier",
            "lambda_expression",
        ],
        blocks: &["compound_statement", "field_declaration_list"],
        bodyless_is_empty: false,
    },
    Syntax {
        language: "php",
        definitions: &[
            "function_definition",
            "method_declaration",
            "class_declaration",
            "anonymous_function",
            "arrow_function",
        ],
        blocks: &["compound_statement", "declaration_list"],
        bodyless_is_empty: false,
    },
    Syntax {
        language: "ruby",
        definitions: &["method", "singleton_method", "class", "module"],
        blocks: &["body_statement"],
        bodyless_is_empty: true,
    },
    Syntax {
        language: "c_sharp",
        definitions: &[
            "method_declaration",
            "constructor_declaration",
            "class_declaration",
            "struct_declaration",
            "record_declaration",
            "local_function_statement",
            "lambda_expression",
        ],
        blocks: &["block", "declaration_list", "arrow_expression_clause"],
        bodyless_is_empty: false,
    },
];

fn syntax_of(language: &Language) -> Option<&'static Syntax> {
    SYNTAXES.iter().find(|s| s.language == language.name)
}

/// Lines `first..=last` (0-based rows) of a parsed file.
#[derive(Debug, Clone, Copy)]
struct Rows {
    first: usize,
    last: usize,
}

impl Rows {
    fn of(node: Node<'_>) -> Rows {
        Rows {
            first: node.start_position().row,
            last: node.end_position().row,
        }
    }

    fn contains(self, other: Rows) -> bool {
        self.first <= other.first && other.last <= self.last
    }
}

/// Judges one parsed file.
struct File<'a> {
    syntax: &'static Syntax,
    text: &'a str,
}

impl File<'_> {
    fn is_definition(&self, node: Node<'_>) -> bool {
        self.syntax.definitions.contains(&node.kind())
    }

    fn is_block(&self, node: Node<'_>) -> bool {
        self.syntax.blocks.contains(&node.kind())
    }

    fn text_of(&self, node: Node<'_>) -> &str {
        self.text.get(node.byte_range()).unwrap_or("")
    }

    /// Whether a definition's body implements anything.
    fn definition_has_substance(&self, definition: Node<'_>) -> bool {
        match definition.child_by_field_name("body") {
            Some(body) => self.statement_has_substance(body),
            None => !self.syntax.bodyless_is_empty,
        }
    }

    /// Whether a statement (or a block of them, or a nested definition) does anything.
    fn statement_has_substance(&self, node: Node<'_>) -> bool {
        if is_inert(node) {
            return false;
        }
        if self.is_definition(node) {
            return self.definition_has_substance(node);
        }
        // A decorated or exported definition is judged by the definition it wraps.
        if let Some(inner) = node
            .child_by_field_name("definition")
            .or_else(|| node.child_by_field_name("declaration"))
            .filter(|inner| self.is_definition(*inner))
        {
            return self.definition_has_substance(inner);
        }
        if self.is_block(node) {
            let mut cursor = node.walk();
            return node
                .named_children(&mut cursor)
                .any(|child| self.statement_has_substance(child));
        }
        !is_placeholder(self.text_of(node))
    }
}

/// Decorations of a definition: Python and ECMAScript decorators, Rust attributes, C# and
/// PHP attribute lists. They shape a definition but implement nothing on their own.
const DECORATIONS: &[&str] = &["decorator", "attribute_item", "attribute_list"];

/// Whether a node implements nothing however it is written: a comment, documentation
/// written as a bare string (a Python docstring), or a decoration.
fn is_inert(node: Node<'_>) -> bool {
    if node.kind().contains("comment") || DECORATIONS.contains(&node.kind()) {
        return true;
    }
    node.kind() == "expression_statement"
        && node.named_child_count() == 1
        && node
            .named_child(0)
            .is_some_and(|only| only.kind().contains("string"))
}

/// Every definition and every inert node in the tree, in document order.
fn collect<'t>(tree: &'t Tree, file: &File<'_>) -> (Vec<Node<'t>>, Vec<Node<'t>>) {
    let mut definitions = Vec::new();
    let mut inert = Vec::new();
    let mut cursor = tree.walk();
    loop {
        let node = cursor.node();
        if file.is_definition(node) {
            definitions.push(node);
        }
        if is_inert(node) {
            inert.push(node);
        } else if cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return (definitions, inert);
            }
        }
    }
}

/// Whether the 1-based lines `start..=end` of `text` hold no implementation, judged on the
/// syntax tree: `None` when the language has no syntax table or the parser cannot run,
/// so the caller falls back to the textual rule.
///
/// The innermost definition that contains the range must implement something; then
/// either a definition inside the range implements something, or the range's other lines
/// hold code (comments, docstrings, decorations and placeholders do not count).
pub(super) fn range_is_empty(
    language: &Language,
    text: &str,
    start: u32,
    end: u32,
) -> Option<bool> {
    let syntax = syntax_of(language)?;
    let mut parser = Parser::new();
    parser.set_language(&language.grammar()).ok()?;
    let tree = parser.parse(text, None)?;
    let file = File { syntax, text };
    let range = Rows {
        first: usize::try_from(start).ok()?.checked_sub(1)?,
        last: usize::try_from(end).ok()?.checked_sub(1)?,
    };
    let (definitions, inert) = collect(&tree, &file);

    let container = definitions
        .iter()
        .filter(|d| Rows::of(**d).contains(range))
        .min_by_key(|d| d.byte_range().len());
    if let Some(container) = container
        && !file.definition_has_substance(*container)
    {
        return Some(true);
    }
    let inside: Vec<Node<'_>> = definitions
        .iter()
        .filter(|d| Some(*d) != container && range.contains(Rows::of(**d)))
        .copied()
        .collect();
    if inside.iter().any(|d| file.definition_has_substance(*d)) {
        return Some(false);
    }

    // The range's own lines, without the (empty) definitions inside it and with
    // inert nodes blanked out.
    let mut lines = Vec::new();
    let mut line_start = 0;
    for (row, line) in text.split('\n').enumerate() {
        let line_end = line_start + line.len();
        if row >= range.first
            && row <= range.last
            && !inside.iter().any(|d| {
                Rows::of(*d).contains(Rows {
                    first: row,
                    last: row,
                })
            })
        {
            let mut kept = line.as_bytes().to_vec();
            for c in &inert {
                let from = c.start_byte().max(line_start);
                let to = c.end_byte().min(line_end);
                for byte in kept
                    .iter_mut()
                    .take(to.saturating_sub(line_start))
                    .skip(from.saturating_sub(line_start))
                {
                    *byte = b' ';
                }
            }
            lines.push(String::from_utf8_lossy(&kept).into_owned());
        }
        line_start = line_end + 1;
    }
    Some(!lines_have_substance(&lines))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codeintel::languages::{all, by_name};

    #[test]
    fn every_parsed_language_has_a_syntax_table_whose_kinds_exist() {
        for language in all() {
            let syntax = syntax_of(language)
                .unwrap_or_else(|| panic!("{} has no syntax table", language.name));
            let grammar = language.grammar();
            for kind in syntax.definitions.iter().chain(syntax.blocks) {
                assert_ne!(
                    grammar.id_for_node_kind(kind, true),
                    0,
                    "{}: no node kind `{kind}`",
                    language.name
                );
            }
        }
        assert_eq!(SYNTAXES.len(), all().len());
    }

    fn empty(language: &str, text: &str, start: u32, end: u32) -> bool {
        let language = by_name(language).unwrap();
        range_is_empty(language, text, start, end).unwrap()
    }

    #[test]
    fn stubs_are_empty_and_code_is_not() {
        let python = "class A:\n    \"\"\"Doc.\"\"\"\n\n    def f(self):\n        \"\"\"Doc.\"\"\"\n        # TODO\n        raise NotImplementedError\n\n    def g(self):\n        return 1\n";
        assert!(empty("python", python, 4, 7));
        assert!(empty("python", python, 6, 6));
        assert!(!empty("python", python, 9, 10));
        assert!(!empty("python", python, 1, 10));
        assert!(!empty("python", python, 3, 10));
        let go = "package a\n\nfunc F() {\n}\n\nfunc G() int {\n\treturn 1\n}\n";
        assert!(empty("go", go, 3, 4));
        assert!(!empty("go", go, 6, 8));
        let ruby = "class A\n  def f\n  end\n\n  def g\n    1\n  end\nend\n";
        assert!(empty("ruby", ruby, 2, 3));
        assert!(!empty("ruby", ruby, 5, 7));
        let csharp =
            "class A {\n  int F() => throw new NotImplementedException();\n  int G() => 1;\n}\n";
        assert!(empty("c_sharp", csharp, 2, 2));
        assert!(!empty("c_sharp", csharp, 3, 3));
    }
}
