//! Source files and positions: the text every diagnostic points into.
//!
//! Positions are 1-based line and column counted in characters, because that is
//! what editors, `file:line:col` links and GitHub annotations expect.

use std::fmt;

/// Index of a file in a [`Sources`] table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FileId(pub u32);

/// A line and column, both 1-based, the column counted in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pos {
    pub line: u32,
    pub col: u32,
}

impl Pos {
    pub const START: Pos = Pos { line: 1, col: 1 };
}

/// A range of text in one file; `end` is exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Span {
    pub file: FileId,
    pub start: Pos,
    pub end: Pos,
}

impl Span {
    pub fn point(file: FileId, pos: Pos) -> Span {
        Span {
            file,
            start: pos,
            end: Pos {
                line: pos.line,
                col: pos.col + 1,
            },
        }
    }

    /// The span of `len` characters starting `offset` characters after this span's
    /// start on the same line. Used to point inside a single-line scalar.
    pub(crate) fn sub(&self, offset: usize, len: usize) -> Span {
        let col = self.start.col + u32::try_from(offset).unwrap_or(u32::MAX / 2);
        let len = u32::try_from(len.max(1)).unwrap_or(1);
        Span {
            file: self.file,
            start: Pos {
                line: self.start.line,
                col,
            },
            end: Pos {
                line: self.start.line,
                col: col + len,
            },
        }
    }
}

/// Where a YAML scalar's text is written (`yaml::Node::text_span`): its span, and how
/// the value's characters lie in the file when that can be said. Kept apart from the
/// tree, so a later stage can place a position inside a string it took from it.
#[derive(Debug, Clone, PartialEq)]
pub struct TextSpan {
    pub span: Span,
    /// Characters between the span's start and the value: 1 for a quoted scalar.
    pub(crate) content_offset: u8,
    /// A single-line plain or quoted scalar.
    pub(crate) inline: bool,
    /// For a single-line quoted scalar with escapes, where each character of the value
    /// is written (see `yaml::Node::escapes`).
    pub(crate) escapes: Option<Vec<u32>>,
    /// A literal block scalar (`|`): the value's lines are the file's from the span on.
    pub(crate) literal: bool,
}

impl TextSpan {
    /// A place with no layout: every position inside maps to its start.
    pub fn whole(span: Span) -> TextSpan {
        TextSpan {
            span,
            content_offset: 0,
            inline: false,
            escapes: None,
            literal: false,
        }
    }

    /// Whether [`Self::at`] finds a position inside the text, not just the text's start.
    pub fn is_exact(&self) -> bool {
        self.inline || self.literal
    }

    /// The span of `len` characters at character `offset` of `text`, the value this
    /// place holds: exact in a single-line scalar and in a literal block scalar (a
    /// position's line and column in the value added to where the block starts), else
    /// the first character of the scalar. One pass over `text` up to `offset`.
    pub fn at(&self, text: &str, offset: usize, len: usize) -> Span {
        if let (true, Some(map)) = (self.inline, &self.escapes) {
            let at = |i: usize| map.get(i).or(map.last()).map_or(0, |o| *o as usize);
            let start = at(offset);
            return self.span.sub(start, at(offset + len).saturating_sub(start));
        }
        if self.inline {
            return self
                .span
                .sub(usize::from(self.content_offset) + offset, len);
        }
        let start = Span {
            end: Pos {
                line: self.span.start.line,
                col: self.span.start.col.saturating_add(1),
            },
            ..self.span
        };
        if !self.literal {
            return start;
        }
        let (mut line, mut col) = (0usize, 0usize);
        for c in text.chars().take(offset) {
            if c == '\n' {
                line += 1;
                col = 0;
            } else {
                col += 1;
            }
        }
        let to_u32 = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let line = self.span.start.line.saturating_add(to_u32(line));
        let col = self.span.start.col.saturating_add(to_u32(col));
        // A span ends on its line: a name never holds a line break.
        Span {
            file: self.span.file,
            start: Pos { line, col },
            end: Pos {
                line,
                col: col.saturating_add(to_u32(len.max(1))),
            },
        }
    }
}

/// One loaded text file.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The name shown to users: the path as given, or `<built-in>/...` for compiled-in files.
    pub name: String,
    pub text: String,
    /// The byte offset where each line starts, so [`SourceFile::line`] costs O(1) and
    /// rendering a finding per line of a large file stays linear.
    line_starts: Vec<usize>,
}

impl SourceFile {
    /// The text of a 1-based line without its line terminator, if it exists.
    pub fn line(&self, line: u32) -> Option<&str> {
        let index = usize::try_from(line).ok()?.checked_sub(1)?;
        let start = *self.line_starts.get(index)?;
        let end = self
            .line_starts
            .get(index + 1)
            .map_or(self.text.len(), |next| next - 1);
        let line = self.text.get(start..end)?;
        Some(line.strip_suffix('\r').unwrap_or(line))
    }
}

/// All files a run has read, addressed by [`FileId`].
#[derive(Debug, Default, Clone)]
pub struct Sources {
    files: Vec<SourceFile>,
}

impl Sources {
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> FileId {
        let text = text.into();
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        self.files.push(SourceFile {
            name: name.into(),
            text,
            line_starts,
        });
        FileId(u32::try_from(self.files.len() - 1).unwrap_or(u32::MAX))
    }

    pub fn get(&self, id: FileId) -> Option<&SourceFile> {
        self.files.get(id.0 as usize)
    }

    pub fn name(&self, id: FileId) -> &str {
        self.get(id).map_or("<unknown>", |f| f.name.as_str())
    }

    /// Where a span starts, as editors and terminals link it: `file:line:col`.
    pub fn location(&self, span: Span) -> String {
        format!("{}:{}", self.name(span.file), span.start)
    }
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

#[cfg(test)]
mod tests {
    use super::Sources;

    #[test]
    fn lines_are_found_by_number_without_their_terminators() {
        let mut sources = Sources::default();
        let id = sources.add("f", "a\r\nb\n\nlast");
        let file = sources.get(id).unwrap();
        let lines: Vec<Option<&str>> = (0..=5).map(|n| file.line(n)).collect();
        assert_eq!(
            lines,
            [None, Some("a"), Some("b"), Some(""), Some("last"), None]
        );
        let id = sources.add("g", "ends with a newline\n");
        let file = sources.get(id).unwrap();
        assert_eq!(file.line(2), Some(""));
        assert_eq!(file.line(3), None);
    }
}
