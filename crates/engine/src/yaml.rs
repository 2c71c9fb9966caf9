//! A span-preserving YAML loader: every node keeps the file position it came from.
//!
//! `serde_yaml` cannot map a JSON pointer back to a line, so contract files are parsed
//! with `saphyr-parser`'s event stream into [`Node`]s. Nodes convert to `serde_json`
//! values for JSON Schema validation and typed deserialisation, and [`Node::locate`]
//! turns a JSON pointer from either of those back into a [`Span`].
//!
//! ## How positions survive, and the budgets
//!
//! Every diagnostic must point at a line and column of the contract, including a column
//! inside a guard string. `serde_yaml` cannot do that (it keeps no spans) and is archived
//! upstream, so it is not used.
//!
//! Instead, `src/yaml.rs` reads the event stream of `saphyr-parser` and builds its own
//! `Node` tree. Each scalar, sequence, mapping and mapping key keeps its `Span`; quoted
//! single-line scalars also record where their content starts (and, when they contain
//! escapes, where each character is written), so `Node::inner_span` can turn a guard's
//! character range into a file column. The builder resolves anchors and
//! aliases, applies `<<` merge keys, reports duplicate keys as diagnostics (keeping the
//! later value), refuses a second document, and resolves plain scalars by the YAML 1.2
//! core schema.
//!
//! A contract is untrusted input (CI lints files from pull requests), so the loader has
//! budgets. An alias is a deep copy of its anchor, and nested aliases multiply (a 342-byte
//! "billion laughs" file would expand to 9⁹ strings): every anchor remembers its size, and
//! what aliases copy may not exceed 10 nodes per node written before the alias plus 10,000,
//! nor 10 bytes of text per byte of the file plus 1 MiB; the alias that would go beyond is
//! refused (`yaml-alias-budget`). `<<` merges copy only what their aliases already paid for,
//! so a chain of merges that grows quadratically is refused the same way. Sequences and
//! mappings nest at most 128 levels (`yaml-nesting-depth`), because every later stage
//! (`to_json`, the schema, serde, dropping the tree) recurses. Each step is linear: the
//! builder finds duplicate and overridden keys through a hash index per open mapping, and a
//! `Mapping` that is large enough looks keys up through an index built on its first lookup,
//! so `get`, `locate` and `merge` cost O(1) per step however many states or messages there
//! are. `benches/contract_load.py` measures how lint scales with the number of keys and
//! states.
//!
//! The tree is then used twice:
//!
//! 1. `Node::to_json` gives a `serde_json::Value`. It is validated against the generated
//!    contract schema with `jsonschema`, and then deserialised into `contract::raw` with
//!    `serde_json::from_value`. One parse serves both stages; there is no second YAML
//!    deserializer. A float with no fraction (`2.0`) becomes an integer, because JSON
//!    Schema counts it as one and serde's integers would not; counts in `contract::raw`
//!    carry their range in the schema (`maximum: 4294967295`), so whatever the schema
//!    passes serde accepts.
//! 2. Schema errors and lowering problems name a JSON pointer (`/states/S1/checks/0/require`).
//!    `Node::locate` walks the tree to that node, so each diagnostic gets the span of the
//!    exact key or value.
//!
//! `yaml::merge` works on the same tree, which is why an overlay's diagnostics point into
//! the overlay file and the built-in contract's into the built-in one. A mapping both files
//! write (an instruction whose `en` text the overlay replaces) keeps the built-in file's
//! place while each of its entries keeps its own: findings about a text are reported at the
//! text's node, never at the mapping around it. `Node::text_span` keeps where a scalar is
//! written apart from the tree (`Localized::spans` holds one per locale), and
//! `TextSpan::at` places a character of the value in the file, exactly for single-line
//! scalars and literal blocks (`|`), whose lines are the file's (`source::TextSpan`).

use std::collections::{HashMap, HashSet};

use saphyr_parser::{Event, Parser, ScalarStyle};
use serde_json::{Map, Number, Value};

use crate::diagnostic::Diagnostic;
use crate::source::{FileId, Pos, Span, TextSpan};

#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    /// Entries in file order; keys are always strings and unique.
    Map(Mapping),
}

/// A mapping's entries in file order. A mapping large enough to need one has a hash index
/// from key to entry, so finding every key of a mapping with n keys costs O(n), not O(n²).
#[derive(Debug, Clone, Default)]
pub struct Mapping {
    entries: Vec<(Key, Node)>,
    #[expect(
        clippy::box_collection,
        reason = "a mapping without an index costs 8 bytes, not 48: most are small"
    )]
    index: Option<Box<HashMap<String, usize>>>,
}

/// Below this many entries a linear search is faster than hashing.
const INDEXED_FROM: usize = 16;

impl PartialEq for Mapping {
    fn eq(&self, other: &Mapping) -> bool {
        self.entries == other.entries
    }
}

impl Mapping {
    pub fn new(entries: Vec<(Key, Node)>) -> Mapping {
        let mut mapping = Mapping {
            entries,
            index: None,
        };
        mapping.reindex();
        mapping
    }

    /// Builds the index when the mapping is large enough; the first entry of a key wins.
    fn reindex(&mut self) {
        self.index = (self.entries.len() >= INDEXED_FROM).then(|| {
            let mut index = HashMap::with_capacity(self.entries.len());
            for (i, (k, _)) in self.entries.iter().enumerate() {
                index.entry(k.name.clone()).or_insert(i);
            }
            Box::new(index)
        });
    }

    pub fn entries(&self) -> &[(Key, Node)] {
        &self.entries
    }

    pub fn iter(&self) -> std::slice::Iter<'_, (Key, Node)> {
        self.entries.iter()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry for `name`.
    pub fn get(&self, name: &str) -> Option<(&Key, &Node)> {
        self.position(name)
            .and_then(|i| self.entries.get(i))
            .map(|(k, v)| (k, v))
    }

    fn position(&self, name: &str) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(name).copied(),
            None => self.entries.iter().position(|(k, _)| k.name == name),
        }
    }

    /// Keeps the entries for which `keep` holds.
    pub fn retain(&mut self, keep: impl FnMut(&(Key, Node)) -> bool) {
        let before = self.entries.len();
        self.entries.retain(keep);
        if self.entries.len() != before {
            self.reindex();
        }
    }

    /// Appends an entry; the caller makes sure its key is new.
    fn push(&mut self, key: Key, node: Node) {
        if let Some(index) = &mut self.index {
            index.entry(key.name.clone()).or_insert(self.entries.len());
        }
        self.entries.push((key, node));
        if self.index.is_none() && self.entries.len() >= INDEXED_FROM {
            self.reindex();
        }
    }
}

impl<'a> IntoIterator for &'a Mapping {
    type Item = &'a (Key, Node);
    type IntoIter = std::slice::Iter<'a, (Key, Node)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter()
    }
}

/// A mapping key and where it is written.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    pub name: String,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub kind: NodeKind,
    pub span: Span,
    /// Characters between the node's start and its content: 1 for a quoted scalar.
    /// Lets guard diagnostics point inside the string.
    pub content_offset: u8,
    /// True for single-line plain or quoted scalars, where columns inside the text can be
    /// computed from the node's start.
    pub inline: bool,
    /// For a single-line quoted scalar written with escapes (`\"`, `\t`, `''`): for each
    /// character of the value, and one past its end, the character offset from the node's
    /// start where it is written. `None` when value and source line up one to one.
    pub escapes: Option<Vec<u32>>,
    /// True for a literal block scalar (`|`, `|-`, `|+`): its value's lines are the file's
    /// lines from the span's start on, each at the span's column, so a position inside
    /// the value has a place in the file.
    pub literal: bool,
}

/// Aliases may copy at most this many nodes per node written in the file before them...
pub(crate) const ALIAS_NODES_PER_NODE: usize = 10;
/// ... plus this many, so small files may share what they like.
pub(crate) const ALIAS_NODES_FLOOR: usize = 10_000;
/// Aliases may copy at most this many bytes of scalars and keys per byte of the file...
pub(crate) const ALIAS_BYTES_PER_BYTE: usize = 10;
/// ... plus this many.
pub(crate) const ALIAS_BYTES_FLOOR: usize = 1 << 20;
/// The deepest nesting of sequences and mappings a file may have (serde_json and
/// serde_yaml stop at the same depth); every later stage recurses over the tree.
pub(crate) const MAX_DEPTH: usize = 128;

/// Parses the first YAML document of `text`. Duplicate keys are reported and the later
/// value wins, so the rest of the file can still be checked.
///
/// Untrusted input cannot make it run long or use much memory: every step is linear in
/// the size of the text, what aliases copy is bounded by a budget proportional to it
/// (`yaml-alias-budget`, see [`ALIAS_NODES_PER_NODE`]), and nesting by [`MAX_DEPTH`]
/// (`yaml-nesting-depth`).
pub fn parse(file: FileId, text: &str) -> Result<(Node, Vec<Diagnostic>), Diagnostic> {
    let mut builder = Builder {
        file,
        text,
        line_starts: std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect(),
        stack: Vec::new(),
        anchors: HashMap::new(),
        root: None,
        warnings: Vec::new(),
        written: 0,
        copied: Size::default(),
    };
    let mut documents = 0;
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|e| {
            Diagnostic::new(
                "yaml-syntax",
                e.info().to_string(),
                Some(Span::point(file, marker_pos(e.marker()))),
            )
        })?;
        if matches!(event, Event::DocumentStart(_)) {
            documents += 1;
            if documents > 1 {
                return Err(Diagnostic::new(
                    "yaml-syntax",
                    "a contract file holds exactly one YAML document",
                    Some(Span::point(file, marker_pos(&span.start))),
                ));
            }
        }
        builder.event(event, to_span(file, &span))?;
    }
    let root = builder.root.unwrap_or(Node {
        kind: NodeKind::Null,
        span: Span::point(file, Pos::START),
        content_offset: 0,
        inline: true,
        escapes: None,
        literal: false,
    });
    Ok((root, builder.warnings))
}

fn marker_pos(m: &saphyr_parser::Marker) -> Pos {
    Pos {
        line: u32::try_from(m.line()).unwrap_or(u32::MAX),
        col: u32::try_from(m.col() + 1).unwrap_or(u32::MAX),
    }
}

fn to_span(file: FileId, s: &saphyr_parser::Span) -> Span {
    Span {
        file,
        start: marker_pos(&s.start),
        end: marker_pos(&s.end),
    }
}

/// What a subtree holds, which is what an alias of it copies: its nodes (each scalar,
/// mapping key, sequence and mapping counts one, as many as there would be events if it
/// were written out), the bytes of its scalars and keys, and how many collections deep it
/// is (0 for a scalar).
#[derive(Debug, Clone, Copy, Default)]
struct Size {
    nodes: usize,
    bytes: usize,
    height: usize,
}

impl Size {
    fn scalar(bytes: usize) -> Size {
        Size {
            nodes: 1,
            bytes,
            height: 0,
        }
    }

    fn add(&mut self, child: Size) {
        self.nodes = self.nodes.saturating_add(child.nodes);
        self.bytes = self.bytes.saturating_add(child.bytes);
        self.height = self.height.max(child.height);
    }

    /// The size of a collection whose children add up to `self`.
    fn collection(self) -> Size {
        Size {
            nodes: self.nodes.saturating_add(1),
            bytes: self.bytes,
            height: self.height.saturating_add(1),
        }
    }
}

enum Frame {
    Seq {
        items: Vec<Node>,
        span: Span,
        anchor: usize,
        size: Size,
    },
    Map {
        /// Entries in file order; `None` where a later duplicate or an explicit key
        /// replaced an entry (removed at the end, so each key costs O(1)).
        entries: Vec<Option<(Key, Node)>>,
        /// Where each key's live entry is in `entries`.
        index: HashMap<String, usize>,
        pending_key: Option<Key>,
        /// Keys copied in by a `<<` merge key, which an explicit key may override.
        merged: HashSet<String>,
        span: Span,
        anchor: usize,
        size: Size,
    },
}

/// Which collection an end event closes.
#[derive(Clone, Copy)]
enum Closing {
    Sequence,
    Mapping,
}

struct Builder<'t> {
    file: FileId,
    text: &'t str,
    /// Byte offset of the start of each line of `text`.
    line_starts: Vec<usize>,
    stack: Vec<Frame>,
    anchors: HashMap<usize, (Node, Size)>,
    root: Option<Node>,
    warnings: Vec<Diagnostic>,
    /// Nodes written in the file so far: scalars (keys included), collections and aliases.
    written: usize,
    /// What aliases have copied so far.
    copied: Size,
}

impl Builder<'_> {
    fn event(&mut self, event: Event<'_>, span: Span) -> Result<(), Diagnostic> {
        match event {
            Event::Scalar(value, style, anchor, _tag) => self.scalar(value, style, anchor, span),
            Event::Alias(id) => {
                self.written += 1;
                let size = match self.anchors.get(&id) {
                    Some((_, size)) => *size,
                    None => {
                        return Err(Diagnostic::new(
                            "yaml-syntax",
                            "alias refers to an unknown anchor",
                            Some(span),
                        ));
                    }
                };
                self.check_alias(size, span)?;
                let node = match self.anchors.get(&id) {
                    Some((node, _)) => Node {
                        span,
                        ..node.clone()
                    },
                    None => return Ok(()),
                };
                self.push(node, size)
            }
            Event::SequenceStart(anchor, _) => {
                self.written += 1;
                self.check_depth(span)?;
                self.stack.push(Frame::Seq {
                    items: Vec::new(),
                    span,
                    anchor,
                    size: Size::default(),
                });
                Ok(())
            }
            Event::MappingStart(anchor, _) => {
                self.written += 1;
                self.check_depth(span)?;
                self.stack.push(Frame::Map {
                    entries: Vec::new(),
                    index: HashMap::new(),
                    pending_key: None,
                    merged: HashSet::new(),
                    span,
                    anchor,
                    size: Size::default(),
                });
                Ok(())
            }
            Event::SequenceEnd => self.close(Closing::Sequence, span),
            Event::MappingEnd => self.close(Closing::Mapping, span),
            _ => Ok(()),
        }
    }

    /// A scalar: resolved by the core schema when plain, with where its text sits in the
    /// file when it is written on one line.
    fn scalar(
        &mut self,
        value: std::borrow::Cow<'_, str>,
        style: ScalarStyle,
        anchor: usize,
        span: Span,
    ) -> Result<(), Diagnostic> {
        self.written += 1;
        let size = Size::scalar(value.len());
        let quoted = matches!(style, ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted);
        let kind = if matches!(style, ScalarStyle::Plain) {
            resolve_plain(&value)
        } else {
            NodeKind::Str(value.into_owned())
        };
        let inline = span.start.line == span.end.line
            && matches!(
                style,
                ScalarStyle::Plain | ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted
            );
        let escapes = if inline && quoted {
            let double = matches!(style, ScalarStyle::DoubleQuoted);
            self.escapes(span, double, &kind)
        } else {
            None
        };
        let node = Node {
            kind,
            span,
            content_offset: u8::from(quoted),
            inline,
            escapes,
            literal: matches!(style, ScalarStyle::Literal),
        };
        if anchor > 0 {
            self.anchors.insert(anchor, (node.clone(), size));
        }
        self.push(node, size)
    }

    /// Closes the collection on top of the stack at its end event's `span`: a sequence
    /// keeps its items, a mapping the entries no later key replaced. An end event that does
    /// not close the collection it should is a syntax error.
    fn close(&mut self, closing: Closing, span: Span) -> Result<(), Diagnostic> {
        let (kind, start, anchor, size) = match (self.stack.pop(), closing) {
            (
                Some(Frame::Seq {
                    mut items,
                    span,
                    anchor,
                    size,
                }),
                Closing::Sequence,
            ) => {
                items.shrink_to_fit();
                (NodeKind::Seq(items), span, anchor, size)
            }
            (
                Some(Frame::Map {
                    entries,
                    index,
                    span,
                    anchor,
                    size,
                    ..
                }),
                Closing::Mapping,
            ) => {
                // The index holds exactly the entries that were not replaced.
                let mut live = Vec::with_capacity(index.len());
                live.extend(entries.into_iter().flatten());
                (NodeKind::Map(Mapping::new(live)), span, anchor, size)
            }
            (_, closing) => {
                let what = match closing {
                    Closing::Sequence => "unbalanced sequence end",
                    Closing::Mapping => "unbalanced mapping end",
                };
                return Err(Diagnostic::new("yaml-syntax", what, Some(span)));
            }
        };
        let node = Node {
            kind,
            span: Span {
                end: span.end,
                ..start
            },
            content_offset: 0,
            inline: false,
            escapes: None,
            literal: false,
        };
        self.finish_collection(node, anchor, size.collection())
    }

    /// `yaml-nesting-depth` when a collection starting at `span` would be nested deeper
    /// than [`MAX_DEPTH`].
    fn check_depth(&self, span: Span) -> Result<(), Diagnostic> {
        if self.stack.len() < MAX_DEPTH {
            return Ok(());
        }
        Err(Diagnostic::new(
            "yaml-nesting-depth",
            format!("this collection is nested more than {MAX_DEPTH} levels deep"),
            Some(span),
        )
        .with_help(format!(
            "a contract nests sequences and mappings at most {MAX_DEPTH} deep"
        )))
    }

    /// Refuses an alias that would take what aliases copy beyond the file's budget
    /// (`yaml-alias-budget`), or nest the copy deeper than [`MAX_DEPTH`]; else counts it.
    fn check_alias(&mut self, size: Size, span: Span) -> Result<(), Diagnostic> {
        let name = self.written_text(span).unwrap_or_else(|| "*…".to_string());
        let depth = self.stack.len().saturating_add(size.height);
        if depth > MAX_DEPTH {
            return Err(Diagnostic::new(
                "yaml-nesting-depth",
                format!(
                    "alias `{name}` nests collections {depth} levels deep, more than {MAX_DEPTH}"
                ),
                Some(span),
            )
            .with_help(format!(
                "a contract nests sequences and mappings at most {MAX_DEPTH} deep"
            )));
        }
        let nodes = self.copied.nodes.saturating_add(size.nodes);
        let bytes = self.copied.bytes.saturating_add(size.bytes);
        let node_limit = self
            .written
            .saturating_mul(ALIAS_NODES_PER_NODE)
            .saturating_add(ALIAS_NODES_FLOOR);
        let byte_limit = self
            .text
            .len()
            .saturating_mul(ALIAS_BYTES_PER_BYTE)
            .saturating_add(ALIAS_BYTES_FLOOR);
        let over = if nodes > node_limit {
            Some(format!(
                "alias `{name}` copies {} nodes, which brings what aliases copy to {nodes}, more than the {node_limit} allowed at this point",
                size.nodes
            ))
        } else if bytes > byte_limit {
            Some(format!(
                "alias `{name}` copies {} bytes of text, which brings what aliases copy to {bytes} bytes, more than the {byte_limit} this file allows",
                size.bytes
            ))
        } else {
            None
        };
        if let Some(message) = over {
            return Err(Diagnostic::new("yaml-alias-budget", message, Some(span))
                .with_help(format!(
                    "aliases may copy {ALIAS_NODES_PER_NODE} nodes per node written before them plus {ALIAS_NODES_FLOOR}, and {ALIAS_BYTES_PER_BYTE} bytes per byte of the file plus {ALIAS_BYTES_FLOOR}; write the repeated part out, or alias smaller pieces"
                ))
                .with_note("nested aliases multiply: a few lines of them (a \"billion laughs\" file) would expand to billions of nodes"));
        }
        self.copied.nodes = nodes;
        self.copied.bytes = bytes;
        Ok(())
    }

    /// The text a single-line span covers, as written.
    fn written_text(&self, span: Span) -> Option<String> {
        if span.start.line != span.end.line {
            return None;
        }
        let start = usize::try_from(span.start.col).ok()?.checked_sub(1)?;
        let width = usize::try_from(span.end.col.checked_sub(span.start.col)?).ok()?;
        let text: String = self
            .line(span.start.line)?
            .chars()
            .skip(start)
            .take(width.min(80))
            .collect();
        (!text.is_empty()).then_some(text)
    }

    /// The text of a 1-based line, without its terminator.
    fn line(&self, line: u32) -> Option<&str> {
        let index = usize::try_from(line).ok()?.checked_sub(1)?;
        let start = *self.line_starts.get(index)?;
        let end = self
            .line_starts
            .get(index + 1)
            .map_or(self.text.len(), |e| e - 1);
        let line = self.text.get(start..end)?;
        Some(line.strip_suffix('\r').unwrap_or(line))
    }

    /// Where each character of a single-line quoted scalar's value is written, when escapes
    /// make the source longer than the value (see [`Node::escapes`]).
    fn escapes(&self, span: Span, double: bool, kind: &NodeKind) -> Option<Vec<u32>> {
        let NodeKind::Str(value) = kind else {
            return None;
        };
        let quote = if double { '"' } else { '\'' };
        let start = usize::try_from(span.start.col).ok()?.checked_sub(1)?;
        let width = usize::try_from(span.end.col.checked_sub(span.start.col)?).ok()?;
        let source: Vec<char> = self
            .line(span.start.line)?
            .chars()
            .skip(start)
            .take(width)
            .collect();
        if source.len() < 2 || source.first() != Some(&quote) || source.last() != Some(&quote) {
            return None;
        }
        let inner = &source[1..source.len() - 1];
        let value_len = value.chars().count();
        if inner.len() == value_len {
            return None;
        }
        let mut map = Vec::with_capacity(value_len + 1);
        let mut i = 0;
        while i < inner.len() {
            map.push(u32::try_from(i + 1).ok()?);
            i += match (double, inner[i], inner.get(i + 1)) {
                (true, '\\', Some('x')) => 4,
                (true, '\\', Some('u')) => 6,
                (true, '\\', Some('U')) => 10,
                (true, '\\', _) | (false, '\'', _) => 2,
                _ => 1,
            };
        }
        map.push(u32::try_from(inner.len() + 1).ok()?);
        // Escapes this does not model (surrogate pairs) leave the approximate columns.
        (map.len() == value_len + 1).then_some(map)
    }

    fn finish_collection(
        &mut self,
        node: Node,
        anchor: usize,
        size: Size,
    ) -> Result<(), Diagnostic> {
        if anchor > 0 {
            self.anchors.insert(anchor, (node.clone(), size));
        }
        self.push(node, size)
    }

    fn push(&mut self, node: Node, size: Size) -> Result<(), Diagnostic> {
        let file = self.file;
        match self.stack.last_mut() {
            None => {
                self.root = Some(node);
                Ok(())
            }
            Some(Frame::Seq {
                items, size: total, ..
            }) => {
                total.add(size);
                items.push(node);
                Ok(())
            }
            Some(Frame::Map {
                entries,
                index,
                pending_key,
                merged,
                size: total,
                ..
            }) => {
                let Some(key) = pending_key.take() else {
                    total.add(size);
                    let name = match node.kind {
                        NodeKind::Str(s) => s,
                        NodeKind::Null => "null".to_string(),
                        NodeKind::Bool(b) => b.to_string(),
                        NodeKind::Int(i) => i.to_string(),
                        NodeKind::Float(f) => f.to_string(),
                        NodeKind::Seq(_) | NodeKind::Map(_) => {
                            return Err(Diagnostic::new(
                                "yaml-syntax",
                                "mapping keys must be scalars",
                                Some(Span { file, ..node.span }),
                            ));
                        }
                    };
                    *pending_key = Some(Key {
                        name,
                        span: node.span,
                    });
                    return Ok(());
                };
                // The YAML 1.1 merge key: `<<: *anchor` (or a list of anchors) copies the
                // entries the mapping does not set itself; explicit keys win. What it copies
                // was counted against the alias budget when the aliases were read.
                if key.name == "<<" {
                    // For a list of mappings, how many there are.
                    let node_shape = match &node.kind {
                        NodeKind::Seq(items) => Some(
                            items
                                .iter()
                                .filter(|n| matches!(n.kind, NodeKind::Map(_)))
                                .count(),
                        ),
                        _ => None,
                    };
                    let sources = match node.kind {
                        NodeKind::Map(m) => vec![m],
                        NodeKind::Seq(items) => items
                            .into_iter()
                            .filter_map(|n| match n.kind {
                                NodeKind::Map(m) => Some(m),
                                _ => None,
                            })
                            .collect(),
                        _ => {
                            return Err(Diagnostic::new(
                                "yaml-syntax",
                                "`<<` merges a mapping or a list of mappings",
                                Some(key.span),
                            ));
                        }
                    };
                    // What the mapping gains is the sources' entries: not the `<<` key
                    // (counted when it was read), nor the source collections themselves.
                    let (collections, levels) = match node_shape {
                        Some(maps) => (1 + maps, 2),
                        None => (1, 1),
                    };
                    total.nodes = total.nodes.saturating_sub(1);
                    total.add(Size {
                        nodes: size.nodes.saturating_sub(collections),
                        bytes: size.bytes,
                        height: size.height.saturating_sub(levels),
                    });
                    for source in sources {
                        for (k, v) in source.entries {
                            if !index.contains_key(&k.name) {
                                merged.insert(k.name.clone());
                                index.insert(k.name.clone(), entries.len());
                                entries.push(Some((k, v)));
                            }
                        }
                    }
                    return Ok(());
                }
                if merged.remove(&key.name)
                    && let Some(slot) = index.remove(&key.name)
                    && let Some(entry) = entries.get_mut(slot)
                {
                    *entry = None;
                }
                if let Some(slot) = index.get(&key.name).copied()
                    && let Some((first, _)) = entries.get_mut(slot).and_then(Option::take)
                {
                    self.warnings.push(
                        Diagnostic::new(
                            "yaml-duplicate-key",
                            format!("duplicate key `{}`", key.name),
                            Some(key.span),
                        )
                        .with_note(format!("first defined at {}", first.span.start))
                        .with_help(
                            "remove one of the two entries; only the last would take effect",
                        ),
                    );
                }
                total.add(size);
                index.insert(key.name.clone(), entries.len());
                entries.push(Some((key, node)));
                Ok(())
            }
        }
    }
}

/// The largest magnitude below which every whole f64 is exact (2^53).
const MAX_EXACT_INTEGER: f64 = 9_007_199_254_740_992.0;

/// YAML 1.2 core-schema resolution of a plain scalar.
fn resolve_plain(text: &str) -> NodeKind {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return NodeKind::Null,
        "true" | "True" | "TRUE" => return NodeKind::Bool(true),
        "false" | "False" | "FALSE" => return NodeKind::Bool(false),
        _ => {}
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && let Ok(i) = text.parse::<i64>()
    {
        return NodeKind::Int(i);
    }
    if let Some(hex) = text.strip_prefix("0x")
        && let Ok(i) = i64::from_str_radix(hex, 16)
    {
        return NodeKind::Int(i);
    }
    if let Some(oct) = text.strip_prefix("0o")
        && let Ok(i) = i64::from_str_radix(oct, 8)
    {
        return NodeKind::Int(i);
    }
    let looks_numeric = digits.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        && digits
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+'));
    if looks_numeric && let Ok(f) = text.parse::<f64>() {
        return NodeKind::Float(f);
    }
    match text {
        ".inf" | ".Inf" | ".INF" | "+.inf" => NodeKind::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => NodeKind::Float(f64::NEG_INFINITY),
        _ => NodeKind::Str(text.to_string()),
    }
}

impl Node {
    pub fn to_json(&self) -> Value {
        match &self.kind {
            NodeKind::Null => Value::Null,
            NodeKind::Bool(b) => Value::Bool(*b),
            NodeKind::Int(i) => Value::Number((*i).into()),
            // A float with no fraction is an integer to JSON Schema (`type: integer`
            // accepts `2.0`), so it is one for serde too; otherwise the schema would pass
            // `limit: 2.0` and serde's u32 refuse it.
            // (A whole number below 2^53 converts exactly.)
            NodeKind::Float(f) if f.fract() == 0.0 && f.abs() <= MAX_EXACT_INTEGER => {
                Value::Number((*f as i64).into())
            }
            NodeKind::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
            NodeKind::Str(s) => Value::String(s.clone()),
            NodeKind::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            NodeKind::Map(entries) => {
                let mut map = Map::with_capacity(entries.len());
                for (k, v) in entries {
                    map.insert(k.name.clone(), v.to_json());
                }
                Value::Object(map)
            }
        }
    }

    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|(_, v)| v)
    }

    pub fn entry(&self, key: &str) -> Option<(&Key, &Node)> {
        match &self.kind {
            NodeKind::Map(entries) => entries.get(key),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            NodeKind::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The node a JSON pointer (`/states/A/transitions/0/when`) names, with the key that
    /// introduces it when the last step is a mapping key. Missing steps stop at the
    /// deepest node that exists, so a location is always found.
    pub fn locate(&self, pointer: &str) -> (Option<&Key>, &Node) {
        let mut node = self;
        let mut key = None;
        for raw in pointer.split('/').skip(1) {
            let step = raw.replace("~1", "/").replace("~0", "~");
            let next = match &node.kind {
                NodeKind::Map(entries) => entries.get(&step).map(|(k, v)| (Some(k), v)),
                NodeKind::Seq(items) => step
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| items.get(i))
                    .map(|v| (None, v)),
                _ => None,
            };
            match next {
                Some((k, v)) => {
                    key = k;
                    node = v;
                }
                None => break,
            }
        }
        (key, node)
    }

    /// Where this node's text is written, kept apart from the text: what a later stage
    /// needs to place a position inside a string it took from the tree.
    pub fn text_span(&self) -> TextSpan {
        TextSpan {
            span: self.span,
            content_offset: self.content_offset,
            inline: self.inline,
            escapes: self.escapes.clone(),
            literal: self.literal,
        }
    }

    /// The span of the text inside a single-line scalar, starting at character `offset`.
    /// Falls back to the node's own span for block scalars.
    pub(crate) fn inner_span(&self, offset: usize, len: usize) -> Span {
        let literal = TextSpan {
            literal: false,
            ..self.text_span()
        };
        literal.at("", offset, len)
    }
}

/// Merges `overlay` into `base`: mappings merge key by key, anything else is replaced.
/// Each node keeps the span of the file it came from.
pub(crate) fn merge(base: &mut Node, overlay: Node) {
    let Node {
        kind,
        span,
        content_offset,
        inline,
        escapes,
        literal,
    } = overlay;
    match (&mut base.kind, kind) {
        (NodeKind::Map(base_entries), NodeKind::Map(overlay_entries)) => {
            for (key, value) in overlay_entries.entries {
                match base_entries.position(&key.name) {
                    Some(i) => merge(&mut base_entries.entries[i].1, value),
                    None => base_entries.push(key, value),
                }
            }
        }
        (_, kind) => {
            *base = Node {
                kind,
                span,
                content_offset,
                inline,
                escapes,
                literal,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> (Value, Vec<Diagnostic>) {
        let (node, warnings) = parse(FileId(0), text).unwrap();
        (node.to_json(), warnings)
    }

    #[test]
    fn merge_keys_copy_and_explicit_keys_override() {
        let (v, warnings) = load("a: &x {p: 1, q: 2}\nc: &y {r: 4}\nb:\n  <<: [*x, *y]\n  q: 3\n");
        assert_eq!(v["b"], serde_json::json!({"p": 1, "q": 3, "r": 4}));
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn duplicate_keys_are_reported_at_the_second_key() {
        let (v, warnings) = load("a: 1\nb: 2\na: 3\n");
        assert_eq!(v["a"], 3);
        assert_eq!(warnings[0].code, "yaml-duplicate-key");
        assert_eq!(warnings[0].span.unwrap().start, Pos { line: 3, col: 1 });
    }

    #[test]
    fn whole_floats_are_integers_in_json_as_in_json_schema() {
        let (v, _) = load("a: 2.0\nb: 1e3\nc: 2.5\nd: -0.0\ne: 1e300\n");
        assert_eq!(v["a"], serde_json::json!(2));
        assert!(v["a"].is_u64());
        assert_eq!(v["b"], serde_json::json!(1000));
        assert_eq!(v["c"], serde_json::json!(2.5));
        assert!(v["d"].is_i64());
        assert!(v["e"].is_f64());
    }

    #[test]
    fn plain_scalars_resolve_by_the_core_schema_and_quoted_ones_stay_strings() {
        let (v, _) = load("a: true\nb: 'true'\nc: 12\nd: 1.5\ne: ~\nf: 0x10\ng: 1.2.3\n");
        assert_eq!(
            v,
            serde_json::json!({"a": true, "b": "true", "c": 12, "d": 1.5, "e": null, "f": 16, "g": "1.2.3"})
        );
    }

    /// The 342-byte "billion laughs" file of issue 9: nine levels, each a list of nine
    /// aliases of the level before, 9^9 strings once expanded.
    fn billion_laughs() -> String {
        let mut text = String::from(
            "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        for level in b'b'..=b'i' {
            let (name, prev) = (char::from(level), char::from(level - 1));
            let items = vec![format!("*{prev}"); 9].join(",");
            text.push_str(&format!("{name}: &{name} [{items}]\n"));
        }
        text
    }

    #[test]
    fn the_billion_laughs_are_refused_at_the_alias_that_exceeds_the_budget() {
        let text = billion_laughs();
        assert_eq!(text.len(), 342);
        let err = parse(FileId(0), &text).unwrap_err();
        assert_eq!(err.code, "yaml-alias-budget", "{err:?}");
        // Level `e` copies 9 x 7,381 nodes of level `d`: the second `*d` goes over
        // 10,000 + 10 x the 48 nodes written by then.
        let span = err.span.unwrap();
        assert_eq!((span.start.line, span.start.col), (5, 8), "{}", err.message);
        assert!(
            err.message.contains("`*d` copies 7381 nodes"),
            "{}",
            err.message
        );
        assert!(err.help.as_deref().unwrap().contains("10 nodes per node"));
    }

    #[test]
    fn sharing_within_the_budget_is_expanded() {
        // Four levels: 9^4 = 6,561 strings, 8,289 nodes copied, within the 10,000 nodes
        // any file may copy.
        let text: String = billion_laughs()
            .lines()
            .take(4)
            .map(|l| format!("{l}\n"))
            .collect();
        let (v, _) = load(&text);
        let strings = |v: &Value| v.to_string().matches("lol").count();
        assert_eq!(strings(&v["d"]), 6_561);
        // A big file may copy more: 10 nodes for each node it writes.
        let mut text = String::from("x: &x [1, 2, 3, 4, 5, 6, 7, 8, 9]\nlist:\n");
        for i in 0..2_000 {
            text.push_str(&format!("  - {{id: {i}, shared: *x}}\n"));
        }
        let (v, _) = load(&text);
        assert_eq!(v["list"].as_array().unwrap().len(), 2_000);
        assert_eq!(v["list"][1_999]["shared"][8], 9);
    }

    #[test]
    fn long_strings_copied_by_aliases_count_against_the_byte_budget() {
        let long = "x".repeat(100_000);
        let text = format!("a: &a \"{long}\"\nb: [{}]\n", vec!["*a"; 200].join(", "));
        let err = parse(FileId(0), &text).unwrap_err();
        assert_eq!(err.code, "yaml-alias-budget");
        assert!(err.message.contains("bytes"), "{}", err.message);
        assert_eq!(err.span.unwrap().start.line, 2);
        // A few copies are fine.
        let text = format!("a: &a \"{long}\"\nb: [*a, *a, *a]\n");
        assert_eq!(load(&text).0["b"][2].as_str().map(str::len), Some(100_000));
    }

    #[test]
    fn a_chain_of_merge_keys_is_charged_for_what_it_copies() {
        // Each level merges the one before and adds a key: n levels copy n^2/2 entries.
        let mut text = String::from("m0: &m0 {k0: 0}\n");
        for i in 1..2_000 {
            text.push_str(&format!(
                "m{i}: &m{i} {{<<: *m{prev}, k{i}: {i}}}\n",
                prev = i - 1
            ));
        }
        let err = parse(FileId(0), &text).unwrap_err();
        assert_eq!(err.code, "yaml-alias-budget");
        let line = err.span.unwrap().start.line;
        assert!((50..500).contains(&line), "refused at line {line}");
        // A short chain merges every level.
        let short: String = text.lines().take(20).map(|l| format!("{l}\n")).collect();
        let (v, warnings) = load(&short);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(v["m19"].as_object().unwrap().len(), 20);
        assert_eq!(v["m19"]["k0"], 0);
    }

    #[test]
    fn nesting_deeper_than_the_limit_is_refused_where_it_starts() {
        let nested =
            |depth: usize| format!("a: {}1{}\n", "[".repeat(depth - 1), "]".repeat(depth - 1));
        let refused = |text: &str| parse(FileId(0), text).err();
        // The top-level mapping is the first level.
        assert!(refused(&nested(MAX_DEPTH)).is_none());
        let err = refused(&nested(MAX_DEPTH + 1)).unwrap();
        assert_eq!(err.code, "yaml-nesting-depth");
        let col = u32::try_from(MAX_DEPTH).unwrap() + 3;
        assert_eq!(err.span.unwrap().start, Pos { line: 1, col });
        // Block sequences nest two characters a level; 100,000 levels used to overflow
        // the stack of every recursive stage after the parser.
        let err = refused(&"- ".repeat(100_000)).unwrap();
        assert_eq!(err.code, "yaml-nesting-depth");
        // An alias cannot carry a deep collection below the limit either: `a` is 126
        // levels high, and the alias sits 4 levels deep.
        let text = format!(
            "a: &a {}1{}\nb: [[[*a]]]\n",
            "[".repeat(126),
            "]".repeat(126)
        );
        let err = refused(&text).unwrap();
        assert_eq!(err.code, "yaml-nesting-depth");
        assert_eq!(err.span.unwrap().start, Pos { line: 2, col: 7 });
    }

    #[test]
    fn large_mappings_find_duplicates_and_keys_in_linear_time() {
        let mut text = String::new();
        for i in 0..20_000 {
            text.push_str(&format!("k{i}: {i}\n"));
        }
        text.push_str("k7: again\n");
        let (node, warnings) = parse(FileId(0), &text).unwrap();
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].span.unwrap().start.line, 20_001);
        assert!(
            warnings[0].notes[0].contains("8:1"),
            "{:?}",
            warnings[0].notes
        );
        let NodeKind::Map(m) = &node.kind else {
            panic!("not a mapping")
        };
        assert_eq!(m.len(), 20_000);
        // The duplicate moved to the end, where it was written.
        assert_eq!(m.entries()[19_999].0.name, "k7");
        assert_eq!(node.get("k7").and_then(Node::as_str), Some("again"));
        assert_eq!(node.locate("/k19999").1.to_json(), 19_999);
        assert_eq!(node.locate("/k8").0.unwrap().span.start.line, 9);
    }

    #[test]
    fn explicit_keys_override_merged_ones_wherever_they_are_written() {
        let (v, warnings) = load("a: &a {p: 1, q: 2}\nb: {p: 0, <<: *a, q: 3}\n");
        assert_eq!(v["b"], serde_json::json!({"p": 0, "q": 3}));
        assert!(warnings.is_empty(), "{warnings:?}");
        // A key written twice is still a duplicate after a merge.
        let (v, warnings) = load("a: &a {p: 1}\nb: {q: 0, <<: *a, q: 3}\n");
        assert_eq!(v["b"], serde_json::json!({"p": 1, "q": 3}));
        assert_eq!(warnings.len(), 1);
    }

    #[test]
    fn positions_inside_a_text_are_found_in_single_lines_and_literal_blocks() {
        let text = "a:\n  lit: |-\n    one\n      two {{ x }}\n  quoted: \"say {{ y }}\"\n  folded: >-\n    one\n    two {{ z }}\n";
        let (node, _) = parse(FileId(0), text).unwrap();
        let at = |pointer: &str, needle: &str| {
            let n = node.locate(pointer).1;
            let value = n.as_str().unwrap();
            let offset = value[..value.find(needle).unwrap()].chars().count();
            let span = n.text_span().at(value, offset, needle.chars().count());
            (span.start.line, span.start.col, span.end.col)
        };
        // In a literal block, the value's lines are the file's (indentation kept).
        assert_eq!(at("/a/lit", "one"), (3, 5, 8));
        assert_eq!(at("/a/lit", "x"), (4, 14, 15));
        assert_eq!(at("/a/quoted", "{{"), (5, 16, 18));
        // A folded block joins lines: only its start is known.
        assert!(!node.locate("/a/folded").1.text_span().is_exact());
        assert_eq!(at("/a/folded", "z"), (7, 5, 6));
        // A value given by an overlay keeps the overlay's file.
        let (mut base, _) = parse(FileId(0), "s: {t: {en: a, ja: b}}\n").unwrap();
        let (overlay, _) = parse(FileId(1), "s:\n  t:\n    en: |-\n      {{ x }}\n").unwrap();
        merge(&mut base, overlay);
        let en = base.locate("/s/t/en").1;
        assert_eq!(en.text_span().at("{{ x }}", 3, 1).file, FileId(1));
        assert_eq!(base.locate("/s/t/ja").1.span.file, FileId(0));
    }

    #[test]
    fn syntax_errors_have_a_position() {
        let err = parse(FileId(0), "a: {b: 1\n").unwrap_err();
        assert_eq!(err.code, "yaml-syntax");
        assert!(err.span.is_some());
    }
}
