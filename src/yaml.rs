//! A span-preserving YAML loader: every node keeps the file position it came from.
//!
//! `serde_yaml` cannot map a JSON pointer back to a line, so contract files are parsed
//! with `saphyr-parser`'s event stream into [`Node`]s. Nodes convert to `serde_json`
//! values for JSON Schema validation and typed deserialisation, and [`Node::locate`]
//! turns a JSON pointer from either of those back into a [`Span`].

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle};
use serde_json::{Map, Number, Value};

use crate::diagnostic::Diagnostic;
use crate::source::{FileId, Pos, Span};

#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    /// Entries in file order; keys are always strings.
    Map(Vec<(Key, Node)>),
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
}

/// Parses the first YAML document of `text`. Duplicate keys are reported and the later
/// value wins, so the rest of the file can still be checked.
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

enum Frame {
    Seq {
        items: Vec<Node>,
        span: Span,
        anchor: usize,
    },
    Map {
        entries: Vec<(Key, Node)>,
        pending_key: Option<Key>,
        /// Keys copied in by a `<<` merge key, which an explicit key may override.
        merged: Vec<String>,
        span: Span,
        anchor: usize,
    },
}

struct Builder<'t> {
    file: FileId,
    text: &'t str,
    /// Byte offset of the start of each line of `text`.
    line_starts: Vec<usize>,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Node>,
    root: Option<Node>,
    warnings: Vec<Diagnostic>,
}

impl Builder<'_> {
    fn event(&mut self, event: Event<'_>, span: Span) -> Result<(), Diagnostic> {
        match event {
            Event::Scalar(value, style, anchor, _tag) => {
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
                };
                if anchor > 0 {
                    self.anchors.insert(anchor, node.clone());
                }
                self.push(node)
            }
            Event::Alias(id) => {
                let node = self.anchors.get(&id).cloned().ok_or_else(|| {
                    Diagnostic::new(
                        "yaml-syntax",
                        "alias refers to an unknown anchor",
                        Some(span),
                    )
                })?;
                self.push(Node { span, ..node })
            }
            Event::SequenceStart(anchor, _) => {
                self.stack.push(Frame::Seq {
                    items: Vec::new(),
                    span,
                    anchor,
                });
                Ok(())
            }
            Event::MappingStart(anchor, _) => {
                self.stack.push(Frame::Map {
                    entries: Vec::new(),
                    pending_key: None,
                    merged: Vec::new(),
                    span,
                    anchor,
                });
                Ok(())
            }
            Event::SequenceEnd => match self.stack.pop() {
                Some(Frame::Seq {
                    items,
                    span: start,
                    anchor,
                }) => {
                    let node = Node {
                        kind: NodeKind::Seq(items),
                        span: Span {
                            end: span.end,
                            ..start
                        },
                        content_offset: 0,
                        inline: false,
                        escapes: None,
                    };
                    self.finish_collection(node, anchor)
                }
                _ => Err(Diagnostic::new(
                    "yaml-syntax",
                    "unbalanced sequence end",
                    Some(span),
                )),
            },
            Event::MappingEnd => match self.stack.pop() {
                Some(Frame::Map {
                    entries,
                    span: start,
                    anchor,
                    ..
                }) => {
                    let node = Node {
                        kind: NodeKind::Map(entries),
                        span: Span {
                            end: span.end,
                            ..start
                        },
                        content_offset: 0,
                        inline: false,
                        escapes: None,
                    };
                    self.finish_collection(node, anchor)
                }
                _ => Err(Diagnostic::new(
                    "yaml-syntax",
                    "unbalanced mapping end",
                    Some(span),
                )),
            },
            _ => Ok(()),
        }
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

    fn finish_collection(&mut self, node: Node, anchor: usize) -> Result<(), Diagnostic> {
        if anchor > 0 {
            self.anchors.insert(anchor, node.clone());
        }
        self.push(node)
    }

    fn push(&mut self, node: Node) -> Result<(), Diagnostic> {
        let file = self.file;
        match self.stack.last_mut() {
            None => {
                self.root = Some(node);
                Ok(())
            }
            Some(Frame::Seq { items, .. }) => {
                items.push(node);
                Ok(())
            }
            Some(Frame::Map {
                entries,
                pending_key,
                merged,
                ..
            }) => {
                match pending_key.take() {
                    None => {
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
                        Ok(())
                    }
                    Some(key) => {
                        // The YAML 1.1 merge key: `<<: *anchor` (or a list of anchors) copies
                        // the entries the mapping does not set itself; explicit keys win.
                        if key.name == "<<" {
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
                            for source in sources {
                                for (k, v) in source {
                                    if !entries.iter().any(|(e, _)| e.name == k.name) {
                                        merged.push(k.name.clone());
                                        entries.push((k, v));
                                    }
                                }
                            }
                            return Ok(());
                        }
                        if let Some(m) = merged.iter().position(|n| *n == key.name) {
                            merged.remove(m);
                            entries.retain(|(k, _)| k.name != key.name);
                        }
                        if let Some(i) = entries.iter().position(|(k, _)| k.name == key.name) {
                            let first = entries[i].0.span.start;
                            self.warnings.push(
                            Diagnostic::new("yaml-duplicate-key", format!("duplicate key `{}`", key.name), Some(key.span))
                                .with_note(format!("first defined at {first}"))
                                .with_help("remove one of the two entries; only the last would take effect"),
                        );
                            entries.remove(i);
                        }
                        entries.push((key, node));
                        Ok(())
                    }
                }
            }
        }
    }
}

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
    pub(crate) fn to_json(&self) -> Value {
        match &self.kind {
            NodeKind::Null => Value::Null,
            NodeKind::Bool(b) => Value::Bool(*b),
            NodeKind::Int(i) => Value::Number((*i).into()),
            NodeKind::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
            NodeKind::Str(s) => Value::String(s.clone()),
            NodeKind::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            NodeKind::Map(entries) => {
                let mut map = Map::new();
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
            NodeKind::Map(entries) => entries
                .iter()
                .find(|(k, _)| k.name == key)
                .map(|(k, v)| (k, v)),
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
    pub(crate) fn locate(&self, pointer: &str) -> (Option<&Key>, &Node) {
        let mut node = self;
        let mut key = None;
        for raw in pointer.split('/').skip(1) {
            let step = raw.replace("~1", "/").replace("~0", "~");
            let next = match &node.kind {
                NodeKind::Map(entries) => entries
                    .iter()
                    .find(|(k, _)| k.name == step)
                    .map(|(k, v)| (Some(k), v)),
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

    /// The span of the text inside a single-line scalar, starting at character `offset`.
    /// Falls back to the node's own span for block scalars.
    pub(crate) fn inner_span(&self, offset: usize, len: usize) -> Span {
        if let (true, Some(map)) = (self.inline, &self.escapes) {
            let at = |i: usize| map.get(i).or(map.last()).map_or(0, |o| *o as usize);
            let start = at(offset);
            self.span.sub(start, at(offset + len).saturating_sub(start))
        } else if self.inline {
            self.span
                .sub(usize::from(self.content_offset) + offset, len)
        } else {
            Span {
                end: Pos {
                    line: self.span.start.line,
                    col: self.span.start.col + 1,
                },
                ..self.span
            }
        }
    }
}

/// Merges `overlay` into `base`: mappings merge key by key, anything else is replaced.
/// Each node keeps the span of the file it came from.
pub fn merge(base: &mut Node, overlay: Node) {
    let Node {
        kind,
        span,
        content_offset,
        inline,
        escapes,
    } = overlay;
    match (&mut base.kind, kind) {
        (NodeKind::Map(base_entries), NodeKind::Map(overlay_entries)) => {
            for (key, value) in overlay_entries {
                if let Some((_, existing)) =
                    base_entries.iter_mut().find(|(k, _)| k.name == key.name)
                {
                    merge(existing, value);
                } else {
                    base_entries.push((key, value));
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
    fn plain_scalars_resolve_by_the_core_schema_and_quoted_ones_stay_strings() {
        let (v, _) = load("a: true\nb: 'true'\nc: 12\nd: 1.5\ne: ~\nf: 0x10\ng: 1.2.3\n");
        assert_eq!(
            v,
            serde_json::json!({"a": true, "b": "true", "c": 12, "d": 1.5, "e": null, "f": 16, "g": "1.2.3"})
        );
    }

    #[test]
    fn syntax_errors_have_a_position() {
        let err = parse(FileId(0), "a: {b: 1\n").unwrap_err();
        assert_eq!(err.code, "yaml-syntax");
        assert!(err.span.is_some());
    }
}
