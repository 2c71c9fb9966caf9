//! Symbol tags (definitions and references) of one source file, from the language's
//! tree-sitter tags query, with positions, a one-line signature and the enclosing scope.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use tree_sitter_tags::{TagsConfiguration, TagsContext};

use super::error::Error;
use super::languages::Language;

/// Longest signature kept, in characters.
const MAX_SIGNATURE_CHARS: usize = 200;

/// One definition or reference found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tag {
    /// The symbol's name, as written.
    pub(crate) name: String,
    /// The capture's suffix: `function`, `method`, `class`, `module`, `interface`, `call`,
    /// `type`, ...
    pub(crate) kind: String,
    /// `@definition.<kind>` rather than `@reference.<kind>`.
    pub(crate) is_definition: bool,
    /// Line of the name, 1-based.
    pub(crate) line: u32,
    /// Column of the name, 1-based, in characters.
    pub(crate) column: u32,
    /// Last line of the tagged node (a definition's whole body), 1-based.
    pub(crate) end_line: u32,
    /// First line of the tagged node, 1-based: before `line` when decorators or a
    /// definition keyword on an earlier line belong to it.
    pub(crate) start_line: u32,
    /// The first line of the tagged node's text, trimmed, at most 200 characters.
    pub(crate) signature: String,
    /// Name of the innermost other definition of the same file whose range holds this tag.
    pub(crate) scope: Option<String>,
    /// For a reference, what its name is reached through, as written: `admin` in
    /// `admin.ModelAdmin`, `self` in `self.save()`, `std::fmt` in `use std::fmt::Display`.
    /// None for definitions and bare names.
    pub(crate) qualifier: Option<String>,
}

/// Tags files. Holds a parser and, built on first use, one compiled tags configuration per
/// language, so keep one per thread and reuse it. [`Tagger::new`] finds definitions (what
/// the index stores); [`Tagger::with_references_to`] also the uses of names, with their kind.
#[derive(Default)]
pub(crate) struct Tagger {
    context: TagsContext,
    with_references: bool,
    /// With references: keep only the uses of these names (and every import, which says
    /// what the file binds). A question about one name then builds no tags for the
    /// thousands of other names in a file.
    only_uses_of: Option<HashSet<Vec<u8>>>,
    configs: HashMap<&'static str, Result<TagsConfiguration, String>>,
}

impl std::fmt::Debug for Tagger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut built: Vec<_> = self.configs.keys().collect();
        built.sort_unstable();
        f.debug_struct("Tagger")
            .field("with_references", &self.with_references)
            .field("configs", &built)
            .finish_non_exhaustive()
    }
}

/// A tag before scopes are assigned, with byte ranges.
struct RawTag {
    tag: Tag,
    /// Tagged node together with the name.
    range: Range<usize>,
    name_range: Range<usize>,
}

impl Tagger {
    /// A tagger of definitions.
    pub(crate) fn new() -> Tagger {
        Tagger::default()
    }

    /// A tagger of definitions and every reference (tests look at all of them).
    #[cfg(test)]
    pub(crate) fn with_references() -> Tagger {
        Tagger {
            with_references: true,
            ..Tagger::default()
        }
    }

    /// A tagger of definitions, imports, and the other references to `names` only.
    pub(crate) fn with_references_to(names: &[String]) -> Tagger {
        Tagger {
            with_references: true,
            only_uses_of: Some(names.iter().map(|n| n.as_bytes().to_vec()).collect()),
            ..Tagger::default()
        }
    }

    /// The definitions and references in `source`, sorted by (line, column). A source with
    /// syntax errors still yields the tags of the parts that parse.
    pub(crate) fn tag(
        &mut self,
        lang: &'static Language,
        source: &[u8],
    ) -> Result<Vec<Tag>, Error> {
        let Tagger {
            context,
            with_references,
            only_uses_of,
            configs,
        } = self;
        let failed = |message: String| Error::Tags {
            language: lang.name,
            message,
        };
        let config = configs
            .entry(lang.name)
            .or_insert_with(|| {
                let query = if *with_references {
                    // Definitions first: tree-sitter-tags keeps the earliest pattern's tag.
                    format!("{}\n{}", lang.tags_query(), lang.references_query())
                } else {
                    lang.tags_query().to_owned()
                };
                TagsConfiguration::new(lang.grammar(), &query, lang.locals_query())
                    .map_err(|e| format!("tags query: {e}"))
            })
            .as_ref()
            .map_err(|e| failed(e.clone()))?;

        let (iter, _has_error) = context
            .generate_tags(config, source, None)
            .map_err(|e| failed(e.to_string()))?;

        let lines = LineIndex::new(source);
        let mut raw = Vec::new();
        for tag in iter {
            let tag = tag.map_err(|e| failed(e.to_string()))?;
            // tree-sitter-tags 0.27 yields the placeholders of `@ignore` captures when it
            // drains its queue at the end of a file; they have no range.
            if tag.range.start == usize::MAX {
                continue;
            }
            if let Some(wanted) = only_uses_of.as_ref()
                && !tag.is_definition
                && !source
                    .get(tag.name_range.clone())
                    .is_some_and(|name| wanted.contains(name))
                && config.syntax_type_name(tag.syntax_type_id) != "import"
            {
                continue;
            }
            let name_range = tag.name_range.clone();
            let line_start = name_range.start - tag.span.start.column;
            let column = char_count(&source[line_start..name_range.start]) + 1;
            let last_byte = tag.range.end.saturating_sub(1).max(tag.range.start);
            raw.push(RawTag {
                tag: Tag {
                    name: String::from_utf8_lossy(&source[name_range.clone()]).into_owned(),
                    kind: config.syntax_type_name(tag.syntax_type_id).to_owned(),
                    is_definition: tag.is_definition,
                    line: to_u32(tag.span.start.row + 1),
                    column: to_u32(column),
                    end_line: to_u32(lines.line_of(last_byte) + 1),
                    start_line: to_u32(lines.line_of(tag.range.start) + 1),
                    // The line of the name, not of a decorator before it.
                    signature: signature(
                        &source[line_start.max(tag.range.start)..tag.range.end.max(line_start)],
                    ),
                    scope: None,
                    qualifier: if tag.is_definition {
                        None
                    } else {
                        qualifier(&source[tag.range.start.min(name_range.start)..name_range.start])
                    },
                },
                range: tag.range,
                name_range,
            });
        }
        assign_scopes(&mut raw);
        let mut tags: Vec<Tag> = raw.into_iter().map(|r| r.tag).collect();
        tags.sort_by_key(|t| (t.line, t.column));
        Ok(tags)
    }
}

/// Sets each tag's scope to the innermost other definition whose range holds it: a
/// definition's whole range, a reference's name. Assumes definitions nest, as syntax
/// nodes do; where two overlap without nesting, the latest-starting one that holds the
/// tag wins.
fn assign_scopes(raw: &mut [RawTag]) {
    let probe = |r: &RawTag| {
        if r.tag.is_definition {
            r.range.clone()
        } else {
            r.name_range.clone()
        }
    };
    let mut order: Vec<usize> = (0..raw.len()).collect();
    // Outer before inner; at equal ranges, definitions first so references see them.
    order.sort_by_key(|&i| {
        let p = probe(&raw[i]);
        (p.start, std::cmp::Reverse(p.end), !raw[i].tag.is_definition)
    });
    let mut open: Vec<usize> = Vec::new();
    for i in order {
        let p = probe(&raw[i]);
        while open.last().is_some_and(|&d| raw[d].range.end <= p.start) {
            open.pop();
        }
        let scope = open.iter().rev().copied().find(|&d| {
            let r = &raw[d].range;
            r.start <= p.start && p.end <= r.end && *r != p
        });
        raw[i].tag.scope = scope.map(|d| raw[d].tag.name.clone());
        if raw[i].tag.is_definition {
            open.push(i);
        }
    }
}

/// What a reference's name is reached through: the expression right before the name and
/// its separator (`.`, `::`, `->`, `?.`, `\\`) in the tagged node, without a decorator's
/// `@`, runs of white space made one space. None when the name is not reached through
/// anything (a bare name, or a keyword before it as in `impl Display for`).
fn qualifier(before: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(before);
    let text = text.trim_end();
    let stripped = ["::", "->", "?.", ".", "\\"]
        .iter()
        .find_map(|sep| text.strip_suffix(sep))?
        .trim_end();
    // Walk back over one expression: stop at white space, a separator of arguments or an
    // unbalanced opening bracket, outside brackets.
    let mut depth = 0usize;
    let mut start = stripped.len();
    for (at, c) in stripped.char_indices().rev() {
        match c {
            ')' | ']' | '}' | '>' => depth += 1,
            '(' | '[' | '{' | '<' if depth > 0 => depth -= 1,
            '(' | '[' | '{' | '<' | ',' | '=' | ';' | '!' | '&' | '|' | '*' | '+' if depth == 0 => {
                break;
            }
            c if c.is_whitespace() && depth == 0 => break,
            _ => {}
        }
        start = at;
    }
    let expression = stripped[start..].trim_start_matches('@');
    if expression.is_empty() {
        return None;
    }
    let collapsed: String = expression.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(match collapsed.char_indices().nth(MAX_SIGNATURE_CHARS) {
        Some((cut, _)) => collapsed[..cut].to_owned(),
        None => collapsed,
    })
}

/// The first line of `text`, trimmed, cut to [`MAX_SIGNATURE_CHARS`].
fn signature(text: &[u8]) -> String {
    let first = text.split(|&b| b == b'\n').next().unwrap_or_default();
    let first = String::from_utf8_lossy(first);
    let trimmed = first.trim();
    match trimmed.char_indices().nth(MAX_SIGNATURE_CHARS) {
        Some((cut, _)) => trimmed[..cut].trim_end().to_owned(),
        None => trimmed.to_owned(),
    }
}

/// Characters in UTF-8 text (bytes that do not continue a sequence).
fn char_count(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b & 0xC0 != 0x80).count()
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Byte offset to 0-based line.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(source: &[u8]) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(
            source
                .iter()
                .enumerate()
                .filter(|&(_, &b)| b == b'\n')
                .map(|(i, _)| i + 1),
        );
        LineIndex { starts }
    }

    fn line_of(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codeintel::languages::{all, by_name};

    /// Definitions and references.
    fn tag(lang: &str, source: &str) -> Vec<Tag> {
        let lang = by_name(lang).unwrap();
        Tagger::with_references()
            .tag(lang, source.as_bytes())
            .unwrap()
    }

    /// (name, kind, line, column) of the definitions.
    fn defs(tags: &[Tag]) -> Vec<(&str, &str, u32, u32)> {
        tags.iter()
            .filter(|t| t.is_definition)
            .map(|t| (t.name.as_str(), t.kind.as_str(), t.line, t.column))
            .collect()
    }

    fn find<'a>(tags: &'a [Tag], name: &str, is_definition: bool) -> &'a Tag {
        tags.iter()
            .find(|t| t.name == name && t.is_definition == is_definition)
            .unwrap_or_else(|| panic!("no tag {name} (definition: {is_definition}) in {tags:#?}"))
    }

    fn assert_call(tags: &[Tag], name: &str, line: u32) {
        let t = find(tags, name, false);
        assert_eq!((t.kind.as_str(), t.line), ("call", line), "{t:?}");
    }

    #[test]
    fn every_configuration_builds() {
        for mut tagger in [Tagger::new(), Tagger::with_references()] {
            for lang in all() {
                let tags = tagger
                    .tag(lang, b"")
                    .unwrap_or_else(|e| panic!("{}: {e}", lang.name));
                assert!(tags.is_empty(), "{}", lang.name);
            }
            assert_eq!(tagger.configs.len(), all().len());
        }
    }

    /// (name, kind, qualifier, line) of the references to `name`.
    fn uses<'a>(tags: &'a [Tag], name: &str) -> Vec<(&'a str, Option<&'a str>, u32)> {
        tags.iter()
            .filter(|t| !t.is_definition && t.name == name)
            .map(|t| (t.kind.as_str(), t.qualifier.as_deref(), t.line))
            .collect()
    }

    /// tree-sitter-tags hands out `@ignore` placeholders (no range) when a file ends in
    /// bindings; they used to panic the tagger.
    #[test]
    fn a_file_that_ends_in_bindings_tags_cleanly() {
        for src in [
            "def f(a):\n    b = a\n",
            "def f(a, b):\n    pass\n",
            "x = 1\nfor i in x: y = i\n",
        ] {
            let tags = tag("python", src);
            assert!(
                tags.iter().all(|t| t.line >= 1 && !t.name.is_empty()),
                "{tags:#?}"
            );
        }
    }

    #[test]
    fn ecmascript_references_carry_their_kind() {
        let js = "\
import { Base, helper } from './base';
import * as lib from 'lib';
export { helper };
class Widget extends Base {
  draw(el) { return helper(el, Base.size, lib.Base); }
}
const w = new Widget(<Base />);
";
        let tags = tag("javascript", js);
        assert_eq!(
            uses(&tags, "Base"),
            [
                ("import", None, 1),
                ("inherit", None, 4),
                ("read", None, 5),
                ("read", Some("lib"), 5),
                ("call", None, 7),
            ]
        );
        assert_eq!(
            uses(&tags, "helper"),
            [("import", None, 1), ("import", None, 3), ("call", None, 5)]
        );
        // `el` is a parameter where it is bound, a read where it is passed on.
        assert_eq!(uses(&tags, "el"), [("read", None, 5)]);
        let ts = "\
import { Shape } from './shape';
interface Round extends Shape {}
class Circle implements Shape {
  area(s: Shape): number { return s.area(); }
}
";
        for lang in ["typescript", "tsx"] {
            let tags = tag(lang, ts);
            assert_eq!(
                uses(&tags, "Shape"),
                [
                    ("import", None, 1),
                    ("inherit", None, 2),
                    ("inherit", None, 3),
                    ("type", None, 4),
                ],
                "{lang}"
            );
            assert_eq!(uses(&tags, "area"), [("call", Some("s"), 4)], "{lang}");
        }
    }

    #[test]
    fn python_class_attributes_are_fields_and_guarded_module_names_constants() {
        let src = "class Model:\n    pk = property(get_pk)\n    limit: int = 3\n\n    def save(self):\n        local = 1\n\ntry:\n    import x\nexcept ImportError:\n    Fallback = None\n";
        let tags = tag("python", src);
        assert_eq!(
            defs(&tags),
            [
                ("Model", "class", 1, 7),
                ("pk", "field", 2, 5),
                ("limit", "field", 3, 5),
                ("save", "method", 5, 9),
                ("Fallback", "constant", 11, 5),
            ]
        );
        assert_eq!(find(&tags, "pk", true).scope.as_deref(), Some("Model"));
    }

    #[test]
    fn python_references_carry_their_kind_and_qualifier() {
        let src = "\
from django.contrib.auth.forms import UserCreationForm
from django.contrib import admin
import django.contrib.admin as dj


@admin.register(User)
class UserAdmin(admin.ModelAdmin):
    add_form = UserCreationForm

    @property
    def is_measured(self) -> UserCreationForm:
        return self.form.is_measured


class Form(UserCreationForm, metaclass=Meta):
    def items(self, items):
        d.items()
        return make(UserCreationForm, items=3).is_measured
";
        let tags = tag("python", src);
        assert_eq!(
            uses(&tags, "UserCreationForm"),
            [
                ("import", None, 1),
                ("read", None, 8),
                ("type", None, 11),
                ("inherit", None, 15),
                ("read", None, 18),
            ]
        );
        assert_eq!(uses(&tags, "ModelAdmin"), [("inherit", Some("admin"), 7)]);
        assert_eq!(uses(&tags, "register"), [("decorator", Some("admin"), 6)]);
        assert_eq!(uses(&tags, "property"), [("decorator", None, 10)]);
        assert_eq!(
            uses(&tags, "is_measured"),
            [
                ("read", Some("self.form"), 12),
                ("read", Some("make(UserCreationForm, items=3)"), 18)
            ]
        );
        // The parameter and the keyword argument bind `items`; only the call uses it.
        assert_eq!(uses(&tags, "items"), [("call", Some("d"), 17)]);
        assert_eq!(
            uses(&tags, "admin"),
            [
                ("import", None, 2),
                ("import", Some("django.contrib"), 3),
                ("read", None, 6),
                ("read", None, 7),
            ]
        );
        // The definitions are the same as the index's.
        let defs_only = Tagger::new()
            .tag(by_name("python").unwrap(), src.as_bytes())
            .unwrap();
        let with_refs: Vec<&Tag> = tags.iter().filter(|t| t.is_definition).collect();
        assert_eq!(with_refs, defs_only.iter().collect::<Vec<_>>());
        assert!(defs_only.iter().all(|t| t.is_definition));
    }

    #[test]
    fn tagger_is_send() {
        fn send<T: Send>() {}
        send::<Tagger>();
    }

    #[test]
    fn rust() {
        let src = "\
/// A point.
struct Point { x: i32 }

impl Point {
    fn norm(&self) -> i32 {
        helper(self.x) + Vec::new().len()
    }
}

trait Shape { fn area(&self) -> f64; }

fn helper(x: i32) -> i32 { println!(\"{x}\"); x }

mod inner { fn free() {} }
";
        let tags = tag("rust", src);
        assert_eq!(
            defs(&tags),
            [
                ("Point", "struct", 2, 8),
                ("x", "field", 2, 16),
                ("Point", "impl", 4, 6),
                ("norm", "method", 5, 8),
                ("Shape", "trait", 10, 7),
                ("area", "method", 10, 18),
                ("helper", "fn", 12, 4),
                ("inner", "mod", 14, 5),
                ("free", "fn", 14, 16),
            ]
        );
        assert_call(&tags, "helper", 6);
        assert_call(&tags, "new", 6);
        assert_call(&tags, "len", 6);
        assert_call(&tags, "println", 12);
        let norm = find(&tags, "norm", true);
        assert_eq!(norm.scope.as_deref(), Some("Point"));
        assert_eq!(norm.end_line, 7);
        assert_eq!(norm.signature, "fn norm(&self) -> i32 {");
        assert_eq!(find(&tags, "helper", false).scope.as_deref(), Some("norm"));
        assert_eq!(find(&tags, "area", true).scope.as_deref(), Some("Shape"));
        assert_eq!(find(&tags, "helper", true).scope, None);
        assert_eq!(find(&tags, "free", true).scope.as_deref(), Some("inner"));
    }

    #[test]
    fn rust_impls_of_types_that_are_not_plain_paths() {
        let src = "\
impl<'a, A: Automaton + ?Sized> Automaton for &'a A {}
impl Cmov for u128 {}
impl<T> Factory for std::sync::Arc<T> {}
impl<T> Pointer for *const T {}
impl<A: Array> ToSmallVec<A> for [A::Item] {}
impl std::fmt::Debug for dyn EventStore {}
impl A for () {}
extern \"C\" { pub type JsArray; }
";
        let tags = tag("rust", src);
        assert_eq!(
            defs(&tags),
            [
                ("A", "impl", 1, 51),
                ("u128", "impl", 2, 15),
                ("Arc", "impl", 3, 32),
                ("T", "impl", 4, 28),
                ("Item", "impl", 5, 38),
                ("EventStore", "impl", 6, 30),
                ("JsArray", "type", 8, 23),
            ]
        );
    }

    #[test]
    fn python() {
        let src = "\
LIMIT = 3

class Greeter:
    def hello(self, who):
        return fmt(who).strip()

    @staticmethod
    def make():
        return Greeter()

def fmt(x):
    return str(x)
";
        let tags = tag("python", src);
        assert_eq!(
            defs(&tags),
            [
                ("LIMIT", "constant", 1, 1),
                ("Greeter", "class", 3, 7),
                ("hello", "method", 4, 9),
                ("make", "method", 8, 9),
                ("fmt", "function", 11, 5),
            ]
        );
        assert_call(&tags, "fmt", 5);
        assert_call(&tags, "strip", 5);
        assert_call(&tags, "Greeter", 9);
        assert_eq!(find(&tags, "hello", true).scope.as_deref(), Some("Greeter"));
        assert_eq!(find(&tags, "make", true).signature, "def make():");
        assert_eq!(find(&tags, "fmt", false).scope.as_deref(), Some("hello"));
    }

    #[test]
    fn javascript() {
        let src = "\
class Widget {
  render() { return draw(this.el); }
  onClick = () => { this.render(); }
}
function draw(el) { console.log(el); }
const make = () => new Widget();
";
        let tags = tag("javascript", src);
        assert_eq!(
            defs(&tags),
            [
                ("Widget", "class", 1, 7),
                ("render", "method", 2, 3),
                ("onClick", "method", 3, 3),
                ("draw", "function", 5, 10),
                ("make", "function", 6, 7),
            ]
        );
        assert_call(&tags, "draw", 2);
        assert_call(&tags, "render", 3);
        assert_call(&tags, "log", 5);
        assert_eq!(find(&tags, "log", false).signature, "console.log(el)");
        assert_eq!(find(&tags, "render", true).scope.as_deref(), Some("Widget"));
        assert_eq!(find(&tags, "Widget", false).kind, "call");
    }

    const TS_SOURCE: &str = "\
interface Shape { area(): number; }
type Id = string;
class Square implements Shape {
  area(): number { return square(this.side); }
}
function square(x: number): number { return Math.pow(x, 2); }
";

    #[test]
    fn typescript_and_tsx() {
        for lang in ["typescript", "tsx"] {
            let tags = tag(lang, TS_SOURCE);
            assert_eq!(
                defs(&tags),
                [
                    ("Shape", "interface", 1, 11),
                    ("area", "method", 1, 19),
                    ("Id", "type", 2, 6),
                    ("Square", "class", 3, 7),
                    ("area", "method", 4, 3),
                    ("square", "function", 6, 10),
                ],
                "{lang}"
            );
            assert_call(&tags, "square", 4);
            assert_call(&tags, "pow", 6);
            let shape = tags.iter().find(|t| t.name == "Shape" && t.line == 3);
            assert_eq!(shape.map(|t| t.kind.as_str()), Some("inherit"));
            let area = tags.iter().find(|t| t.name == "area" && t.line == 4);
            assert_eq!(area.and_then(|t| t.scope.as_deref()), Some("Square"));
        }
        let tags = tag("tsx", "function App() { return <div>{render()}</div>; }\n");
        assert_eq!(defs(&tags), [("App", "function", 1, 10)]);
        assert_call(&tags, "render", 1);
    }

    #[test]
    fn go() {
        let src = "\
package main

type Server struct {
\tAddr string
}

type Runner interface {
\tRun() error
}

// Start starts.
func (s *Server) Start() error {
\treturn listen(s.Addr)
}

func listen(addr string) error { return fmt.Errorf(\"%s\", addr) }
";
        let tags = tag("go", src);
        assert_eq!(
            defs(&tags),
            [
                ("main", "module", 1, 9),
                ("Server", "class", 3, 6),
                ("Addr", "field", 4, 2),
                ("Runner", "interface", 7, 6),
                ("Run", "method", 8, 2),
                ("Start", "method", 12, 18),
                ("listen", "function", 16, 6),
            ]
        );
        assert_call(&tags, "listen", 13);
        assert_call(&tags, "Errorf", 16);
        let server_ref = tags.iter().find(|t| t.name == "Server" && t.line == 12);
        assert_eq!(server_ref.map(|t| t.kind.as_str()), Some("type"));
        assert_eq!(find(&tags, "Addr", true).scope.as_deref(), Some("Server"));
        assert_eq!(find(&tags, "listen", false).scope.as_deref(), Some("Start"));
    }

    #[test]
    fn java() {
        let src = "\
public class Cart implements Priced {
    private int total;
    public Cart() { reset(); }
    public int price() { return helper.compute(total); }
}
";
        let tags = tag("java", src);
        assert_eq!(
            defs(&tags),
            [
                ("Cart", "class", 1, 14),
                ("total", "field", 2, 17),
                ("Cart", "method", 3, 12),
                ("price", "method", 4, 16),
            ]
        );
        assert_call(&tags, "reset", 3);
        assert_call(&tags, "compute", 4);
        assert_eq!(
            find(&tags, "compute", false).signature,
            "helper.compute(total)"
        );
        assert_eq!(find(&tags, "Priced", false).kind, "inherit");
        assert_eq!(find(&tags, "price", true).scope.as_deref(), Some("Cart"));
    }

    #[test]
    fn c() {
        let src = "\
#define MAX 10
struct point { int x; };
typedef int count_t;
int helper(int x);
static int *twice(struct point *p) {
    helper(p->x);
    return p->cb(p);
}
";
        let tags = tag("c", src);
        assert_eq!(
            defs(&tags),
            [
                ("MAX", "macro", 1, 9),
                ("point", "class", 2, 8),
                ("count_t", "type", 3, 13),
                ("helper", "function", 4, 5),
                ("twice", "function", 5, 13),
            ]
        );
        assert_call(&tags, "helper", 6);
        assert_call(&tags, "cb", 7);
        let twice = find(&tags, "twice", true);
        assert_eq!(twice.end_line, 8);
        assert_eq!(twice.signature, "static int *twice(struct point *p) {");
        assert_eq!(find(&tags, "cb", false).scope.as_deref(), Some("twice"));
    }

    #[test]
    fn cpp() {
        let src = "\
namespace geo {
class Shape {
public:
    double area() const { return compute(); }
};
}
double geo::Shape::scale(double f) {
    auto s = std::make_unique<Shape>();
    return s->area() * std::sqrt(f) + obj.run();
}
";
        let tags = tag("cpp", src);
        assert_eq!(
            defs(&tags),
            [
                ("geo", "module", 1, 11),
                ("Shape", "class", 2, 7),
                ("area", "function", 4, 12),
                ("scale", "method", 7, 20),
            ]
        );
        assert_call(&tags, "compute", 4);
        assert_call(&tags, "make_unique", 8);
        assert_call(&tags, "area", 9);
        assert_call(&tags, "sqrt", 9);
        assert_call(&tags, "run", 9);
        assert_eq!(find(&tags, "area", true).scope.as_deref(), Some("Shape"));
        assert_eq!(find(&tags, "Shape", true).scope.as_deref(), Some("geo"));
    }

    #[test]
    fn php() {
        let src = "\
<?php
namespace App;

class User implements Named {
    public $name;
    public function greet() { return format_name($this->name) . $this->tail(); }
}

function format_name($n) { return strtoupper($n); }
";
        let tags = tag("php", src);
        assert_eq!(
            defs(&tags),
            [
                ("App", "module", 2, 11),
                ("User", "class", 4, 7),
                ("name", "field", 5, 13),
                ("greet", "method", 6, 21),
                ("format_name", "function", 9, 10),
            ]
        );
        assert_call(&tags, "format_name", 6);
        assert_call(&tags, "tail", 6);
        assert_call(&tags, "strtoupper", 9);
        assert_eq!(find(&tags, "greet", true).scope.as_deref(), Some("User"));
    }

    #[test]
    fn ruby() {
        let src = "\
module Shop
  class Cart
    def total(items)
      count = items.size
      compute(count)
    end
  end
end
";
        let tags = tag("ruby", src);
        assert_eq!(
            defs(&tags),
            [
                ("Shop", "module", 1, 8),
                ("Cart", "class", 2, 9),
                ("total", "method", 3, 9),
            ]
        );
        assert_call(&tags, "size", 4);
        assert_call(&tags, "compute", 5);
        // Locals are not calls, thanks to the locals query.
        assert!(!tags.iter().any(|t| t.name == "count" || t.name == "items"));
        assert_eq!(find(&tags, "total", true).scope.as_deref(), Some("Cart"));
        assert_eq!(find(&tags, "Cart", true).scope.as_deref(), Some("Shop"));
    }

    #[test]
    fn c_sharp() {
        let src = "\
namespace App.Models
{
    public class Order : IOrder
    {
        public Order() { }
        public Total Sum(Item item) { Log(item); return calc.Add<int>(item); }
    }
}
";
        let tags = tag("c_sharp", src);
        assert_eq!(
            defs(&tags),
            [
                ("App.Models", "module", 1, 11),
                ("Order", "class", 3, 18),
                ("Order", "method", 5, 16),
                ("Sum", "method", 6, 22),
            ]
        );
        assert_call(&tags, "Log", 6);
        assert_call(&tags, "Add", 6);
        assert_eq!(find(&tags, "Item", false).kind, "type");
        assert_eq!(find(&tags, "Sum", true).scope.as_deref(), Some("Order"));
        assert_eq!(
            find(&tags, "Order", true).scope.as_deref(),
            Some("App.Models")
        );
    }

    #[test]
    fn columns_count_characters() {
        let tags = tag("python", "s = 'é'; f(s); g = 'ü'\nx = 'ö'; h()\n");
        let h = find(&tags, "h", false);
        assert_eq!((h.line, h.column), (2, 10));
        let f = find(&tags, "f", false);
        assert_eq!((f.line, f.column), (1, 10));
    }

    #[test]
    fn signature_is_one_trimmed_line_of_at_most_200_chars() {
        assert_eq!(signature(b"  fn a() {\n}\n"), "fn a() {");
        let long = format!("def {}(): pass", "é".repeat(300));
        let sig = signature(long.as_bytes());
        assert_eq!(sig.chars().count(), 200);
        assert!(sig.starts_with("def éé"));
    }

    #[test]
    fn syntax_errors_still_yield_tags() {
        let cases = [
            ("rust", "fn good() { other(); }\nfn broken( {\nstruct S {"),
            ("python", "def good():\n    other()\ndef broken(:\n"),
            ("javascript", "function good() { other(); }\nfunction ( {{{"),
            ("c", "int good(void) { other(); }\nint broken( {"),
            (
                "java",
                "class A { void good() { other(); } void broken( { }",
            ),
        ];
        for (lang, src) in cases {
            let tags = tag(lang, src);
            let good = find(&tags, "good", true);
            assert_eq!(good.line, 1, "{lang}");
            assert_call(&tags, "other", if lang == "python" { 2 } else { 1 });
        }
        // Garbage and binary-ish input in every language: no panic.
        let mut tagger = Tagger::new();
        for lang in all() {
            for src in [
                &b"}}}{{{ ))((\n\t\0\xff\xfe"[..],
                b"\xe9\xe9 invalid utf8 (",
                b"\n\n",
            ] {
                tagger.tag(lang, src).unwrap();
            }
        }
    }

    #[test]
    fn tags_are_sorted_and_configuration_is_reused() {
        let mut tagger = Tagger::new();
        let rust = by_name("rust").unwrap();
        let src = b"fn a() { b(); c(); }\nfn b() {}\nfn c() { a() }\n";
        let first = tagger.tag(rust, src).unwrap();
        let second = tagger.tag(rust, src).unwrap();
        assert_eq!(first, second);
        assert_eq!(tagger.configs.len(), 1);
        let keys: Vec<_> = first.iter().map(|t| (t.line, t.column)).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted);
    }
}
