//! Chunks: the pieces of a file that semantic search ranks and embeds.
//!
//! Source files are cut along their definitions, found by the symbol index's own
//! tree-sitter tags: a function, method or class is one chunk when it fits the token
//! budget; a larger one is split into its header and its members, and a body with no
//! members into runs of lines. Small neighbours (imports, one-line helpers, constants) are
//! merged up to the budget, so no chunk is a lone `import os`. Markdown is cut at its
//! headings, other text files into runs of lines.
//!
//! Every chunk of a file has its own id, `path#symbol` (`src/a.py#Form.save`, `README.md#Usage/Install`),
//! with `~2`, `~3` appended to repeats (a property and its setter share a name) and `@2`, `@3`
//! to the parts of a split body: two chunks can never share an id, and an id survives edits
//! elsewhere in the file.

use std::collections::HashMap;
use std::path::Path;

use super::tokens::estimate;
use crate::codeintel::languages::{self, Language};
use crate::codeintel::tags::{Tag, Tagger};

/// Chunks whose text is larger than this are cut (a minified line): enough for any real
/// definition's first screenful, and a bound on what one chunk costs.
const MAX_CHUNK_BYTES: usize = 16 * 1024;

/// Definition kinds that make chunks of their own. Fields, constants, variables and
/// variants stay in the text around them.
const CHUNK_KINDS: &[&str] = &[
    "function",
    "fn",
    "method",
    "class",
    "interface",
    "impl",
    "trait",
    "struct",
    "enum",
    "union",
    "module",
    "mod",
    "macro",
    "type",
];

/// What kind of text a file is, for chunking.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FileKind {
    Code(&'static Language),
    Markdown,
    Text,
}

/// One chunk of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chunk {
    /// Unique in the index: `path#symbol`, see the module docs.
    pub(crate) id: String,
    pub(crate) path: String,
    /// 1-based, inclusive.
    pub(crate) start_line: u32,
    pub(crate) end_line: u32,
    /// The symbol path (`Form.save`), the heading path of a Markdown section
    /// (`Usage/Install`), or empty for text at the top of a file.
    pub(crate) symbol: String,
    /// `function`, `method`, `class`, ... for a definition; `module` for the text between
    /// definitions; `group` for merged neighbours; `section` and `text` for other files.
    pub(crate) kind: String,
    /// The chunk's lines, as in the file (cut at [`MAX_CHUNK_BYTES`]).
    pub(crate) text: String,
}

/// A piece of a file before ids are given: a line range with a name.
#[derive(Debug, Clone)]
struct Piece {
    start: u32,
    end: u32,
    symbol: String,
    kind: String,
    tokens: usize,
    /// One of several runs of lines cut from one body or section: numbered `@n`.
    part: bool,
}

/// The lines of a file, 1-based, without terminators, and their token estimates.
struct Lines<'a> {
    lines: Vec<&'a str>,
    tokens: Vec<usize>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Lines<'a> {
        let lines: Vec<&str> = text.lines().collect();
        let tokens = lines.iter().map(|l| estimate(l)).collect();
        Lines { lines, tokens }
    }

    fn count(&self) -> u32 {
        u32::try_from(self.lines.len()).unwrap_or(u32::MAX)
    }

    fn tokens(&self, start: u32, end: u32) -> usize {
        (start..=end)
            .filter_map(|l| self.tokens.get(l as usize - 1))
            .sum()
    }

    fn blank(&self, start: u32, end: u32) -> bool {
        (start..=end).all(|l| {
            self.lines
                .get(l as usize - 1)
                .is_none_or(|s| s.trim().is_empty())
        })
    }

    fn text(&self, start: u32, end: u32) -> String {
        let mut out = String::new();
        for l in start..=end {
            let Some(line) = self.lines.get(l as usize - 1) else {
                break;
            };
            if out.len() + line.len() + 1 > MAX_CHUNK_BYTES {
                let room = MAX_CHUNK_BYTES.saturating_sub(out.len());
                let mut cut = room.min(line.len());
                while !line.is_char_boundary(cut) {
                    cut -= 1;
                }
                out.push_str(&line[..cut]);
                break;
            }
            out.push_str(line);
            out.push('\n');
        }
        out
    }
}

/// A definition and the definitions inside it.
#[derive(Debug)]
struct Region {
    start: u32,
    end: u32,
    symbol: String,
    kind: String,
    children: Vec<Region>,
}

/// Cuts files into chunks of at most `max_tokens` (estimated) each, except where one line
/// alone is larger.
pub(crate) struct Chunker {
    max_tokens: usize,
    tagger: Tagger,
}

impl Chunker {
    pub(crate) fn new(max_tokens: usize) -> Chunker {
        Chunker {
            max_tokens: max_tokens.max(16),
            tagger: Tagger::new(),
        }
    }

    /// The chunks of one file, in line order. A source file whose tags cannot be built
    /// (a grammar error) is chunked as text.
    pub(crate) fn chunks(&mut self, path: &str, text: &str, kind: FileKind) -> Vec<Chunk> {
        let lines = Lines::new(text);
        if lines.count() == 0 || lines.blank(1, lines.count()) {
            return Vec::new();
        }
        let pieces = match kind {
            FileKind::Code(lang) => match self.tagger.tag(lang, text.as_bytes()) {
                Ok(tags) => {
                    let root = Region {
                        start: 1,
                        end: lines.count(),
                        symbol: String::new(),
                        kind: "module".into(),
                        children: nest(&tags, lines.count()),
                    };
                    let mut out = Vec::new();
                    self.split(&lines, &root, &mut out);
                    out
                }
                Err(_) => self.text_pieces(&lines, 1, lines.count(), "", "text"),
            },
            FileKind::Markdown => self.markdown(&lines),
            FileKind::Text => self.text_pieces(&lines, 1, lines.count(), "", "text"),
        };
        name(path, &lines, pieces)
    }

    fn small(&self, tokens: usize) -> bool {
        tokens < self.max_tokens / 4
    }

    /// The pieces of a region too large to be one chunk (or the file itself): the text
    /// between its children, the children, small ones merged.
    fn split(&self, lines: &Lines<'_>, region: &Region, out: &mut Vec<Piece>) {
        let mut units: Vec<Piece> = Vec::new();
        let mut big: Vec<Option<&Region>> = Vec::new();
        let mut cursor = region.start;
        let gap = |mut start: u32,
                   mut end: u32,
                   units: &mut Vec<Piece>,
                   big: &mut Vec<Option<&Region>>| {
            while start <= end && lines.blank(start, start) {
                start += 1;
            }
            while end >= start && end > 0 && lines.blank(end, end) {
                end -= 1;
            }
            if start <= end {
                units.push(Piece {
                    start,
                    end,
                    symbol: region.symbol.clone(),
                    kind: if region.symbol.is_empty() {
                        "module".into()
                    } else {
                        region.kind.clone()
                    },
                    tokens: lines.tokens(start, end),
                    part: false,
                });
                big.push(None);
            }
        };
        for child in &region.children {
            gap(cursor, child.start.saturating_sub(1), &mut units, &mut big);
            units.push(Piece {
                start: child.start,
                end: child.end,
                symbol: child.symbol.clone(),
                kind: child.kind.clone(),
                tokens: lines.tokens(child.start, child.end),
                part: false,
            });
            big.push(Some(child));
            cursor = child.end + 1;
        }
        gap(cursor, region.end, &mut units, &mut big);

        // Units over the budget are split on their own; the others are merged with their
        // neighbours while one of the two is small and both fit.
        let mut run: Vec<(Piece, bool)> = Vec::new();
        for (unit, child) in units.into_iter().zip(big) {
            if unit.tokens > self.max_tokens {
                self.merge(std::mem::take(&mut run), out);
                match child {
                    Some(child) if !child.children.is_empty() => self.split(lines, child, out),
                    _ => out.extend(self.text_pieces(
                        lines,
                        unit.start,
                        unit.end,
                        &unit.symbol,
                        &unit.kind,
                    )),
                }
                continue;
            }
            run.push((unit, child.is_some()));
        }
        self.merge(run, out);
    }

    /// Merges a run of adjacent units that each fit the budget: a unit joins the chunk
    /// before it when either is small and the two fit together. A merged chunk keeps the
    /// name and kind of its one definition, or is a `group` named after its largest.
    fn merge(&self, run: Vec<(Piece, bool)>, out: &mut Vec<Piece>) {
        let mut current: Vec<(Piece, bool)> = Vec::new();
        let mut tokens = 0;
        let finish = |current: &mut Vec<(Piece, bool)>, out: &mut Vec<Piece>| {
            let Some(first) = current.first() else {
                return;
            };
            let start = first.0.start;
            let end = current[current.len() - 1].0.end;
            let defs: Vec<&Piece> = current.iter().filter(|(_, d)| *d).map(|(p, _)| p).collect();
            let main = defs
                .iter()
                .max_by_key(|p| p.tokens)
                .copied()
                .unwrap_or(&first.0);
            let piece = Piece {
                start,
                end,
                symbol: main.symbol.clone(),
                kind: if defs.len() > 1 {
                    "group".into()
                } else {
                    main.kind.clone()
                },
                tokens: current.iter().map(|(p, _)| p.tokens).sum(),
                part: false,
            };
            out.push(piece);
            current.clear();
        };
        for (unit, is_def) in run {
            let joins = current.last().is_some_and(|_| {
                tokens + unit.tokens <= self.max_tokens
                    && (self.small(unit.tokens)
                        || current.iter().all(|(p, _)| self.small(p.tokens)) && self.small(tokens))
            });
            if !joins {
                finish(&mut current, out);
                tokens = 0;
            }
            tokens += unit.tokens;
            current.push((unit, is_def));
        }
        finish(&mut current, out);
    }

    /// Runs of whole lines of at most the budget each, cut after a blank line where one
    /// is near the end of the run.
    fn text_pieces(
        &self,
        lines: &Lines<'_>,
        start: u32,
        end: u32,
        symbol: &str,
        kind: &str,
    ) -> Vec<Piece> {
        let mut out = Vec::new();
        let mut from = start;
        while from <= end {
            let mut to = from;
            let mut tokens = lines.tokens(from, from);
            let mut last_blank = None;
            while to < end {
                let next = lines.tokens(to + 1, to + 1);
                if tokens + next > self.max_tokens {
                    break;
                }
                to += 1;
                tokens += next;
                if lines.blank(to, to) {
                    last_blank = Some(to);
                }
            }
            // Prefer to end at a paragraph break in the last quarter of the run.
            if to < end
                && let Some(b) = last_blank
                && b > from
                && lines.tokens(from, b) * 4 >= self.max_tokens * 3
            {
                to = b;
            }
            if !lines.blank(from, to) {
                out.push(Piece {
                    start: from,
                    end: to,
                    symbol: symbol.to_string(),
                    kind: kind.to_string(),
                    tokens: lines.tokens(from, to),
                    part: false,
                });
            }
            from = to + 1;
        }
        if out.len() > 1 {
            for p in &mut out {
                p.part = true;
            }
        }
        out
    }

    /// Sections at ATX headings (`#` to `######`, outside fenced code), named by their
    /// heading path; small ones merged, large ones cut into runs of lines.
    fn markdown(&self, lines: &Lines<'_>) -> Vec<Piece> {
        let mut sections: Vec<(u32, u32, String)> = Vec::new();
        let mut path: Vec<(usize, String)> = Vec::new();
        let mut fence: Option<&str> = None;
        let mut start = 1;
        let mut symbol = String::new();
        for (i, line) in lines.lines.iter().enumerate() {
            let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
            let trimmed = line.trim_start();
            if let Some(f) = fence {
                if trimmed.starts_with(f) {
                    fence = None;
                }
                continue;
            }
            if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
                fence = Some(&trimmed[..3]);
                continue;
            }
            let level = line.bytes().take_while(|&b| b == b'#').count();
            let is_heading = (1..=6).contains(&level) && line[level..].starts_with([' ', '\t']);
            if !is_heading {
                continue;
            }
            if n > start {
                sections.push((start, n - 1, symbol.clone()));
            }
            let title = line[level..]
                .trim()
                .trim_end_matches('#')
                .trim()
                .to_string();
            path.retain(|(l, _)| *l < level);
            path.push((level, title));
            symbol = path
                .iter()
                .map(|(_, t)| t.as_str())
                .collect::<Vec<_>>()
                .join("/");
            start = n;
        }
        sections.push((start, lines.count(), symbol));

        let mut out = Vec::new();
        let mut group: Vec<Piece> = Vec::new();
        let flush = |group: &mut Vec<Piece>, out: &mut Vec<Piece>| {
            if group.len() > 1 {
                out.push(Piece {
                    start: group[0].start,
                    end: group[group.len() - 1].end,
                    symbol: group[0].symbol.clone(),
                    kind: "section".into(),
                    tokens: group.iter().map(|p| p.tokens).sum(),
                    part: false,
                });
                group.clear();
            } else {
                out.append(group);
            }
        };
        for (start, end, symbol) in sections {
            if lines.blank(start, end) {
                continue;
            }
            let tokens = lines.tokens(start, end);
            if tokens > self.max_tokens {
                flush(&mut group, &mut out);
                out.extend(self.text_pieces(lines, start, end, &symbol, "section"));
                continue;
            }
            let piece = Piece {
                start,
                end,
                symbol,
                kind: "section".into(),
                tokens,
                part: false,
            };
            if !self.small(tokens) {
                flush(&mut group, &mut out);
                out.push(piece);
                continue;
            }
            if group.iter().map(|p| p.tokens).sum::<usize>() + tokens > self.max_tokens {
                flush(&mut group, &mut out);
            }
            group.push(piece);
        }
        flush(&mut group, &mut out);
        out
    }
}

/// The chunkable definitions of a file as a tree, by line ranges. A definition that
/// overlaps the one before without being inside it starts after it.
fn nest(tags: &[Tag], line_count: u32) -> Vec<Region> {
    let mut defs: Vec<&Tag> = tags
        .iter()
        .filter(|t| t.is_definition && CHUNK_KINDS.contains(&t.kind.as_str()))
        .collect();
    defs.sort_by(|a, b| {
        a.start_line
            .cmp(&b.start_line)
            .then(b.end_line.cmp(&a.end_line))
    });
    // Open regions, outermost first; a region moves to its parent's children when closed.
    let mut stack: Vec<Region> = Vec::new();
    let mut top: Vec<Region> = Vec::new();
    let close = |stack: &mut Vec<Region>, top: &mut Vec<Region>| {
        if let Some(done) = stack.pop() {
            match stack.last_mut() {
                Some(parent) => parent.children.push(done),
                None => top.push(done),
            }
        }
    };
    for tag in defs {
        let end = tag.end_line.min(line_count);
        while stack.last().is_some_and(|open| open.end < tag.start_line) {
            close(&mut stack, &mut top);
        }
        let mut start = tag.start_line.max(1);
        if let Some(open) = stack.last() {
            if end > open.end {
                // Overlaps without nesting: not a definition of its own here.
                continue;
            }
            if start == open.start && end == open.end {
                // The same node tagged twice (a decorated definition): keep the first.
                continue;
            }
            if let Some(prev) = open.children.last() {
                start = start.max(prev.end + 1);
            }
        } else if let Some(prev) = top.last() {
            start = start.max(prev.end + 1);
        }
        if start > end {
            continue;
        }
        let symbol = match stack.last() {
            Some(parent) => format!("{}.{}", parent.symbol, tag.name),
            None => tag.name.clone(),
        };
        stack.push(Region {
            start,
            end,
            symbol,
            kind: tag.kind.clone(),
            children: Vec::new(),
        });
    }
    while !stack.is_empty() {
        close(&mut stack, &mut top);
    }
    top
}

/// Gives pieces their ids and texts: `path#symbol`, `@n` for the parts of one split
/// body, `~n` for a repeated name.
fn name(path: &str, lines: &Lines<'_>, pieces: Vec<Piece>) -> Vec<Chunk> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut part_no: HashMap<(String, String), usize> = HashMap::new();
    let mut out = Vec::with_capacity(pieces.len());
    for p in pieces {
        let key = (p.symbol.clone(), p.kind.clone());
        let mut id = format!("{path}#{}", p.symbol);
        if p.part {
            let n = part_no.entry(key).or_default();
            *n += 1;
            id = format!("{id}@{n}");
        }
        let repeat = seen.entry(id.clone()).or_default();
        *repeat += 1;
        if *repeat > 1 {
            id = format!("{id}~{repeat}");
        }
        out.push(Chunk {
            id,
            path: path.to_string(),
            start_line: p.start,
            end_line: p.end,
            text: lines.text(p.start, p.end),
            symbol: p.symbol,
            kind: p.kind,
        });
    }
    out
}

/// Text files other than source and Markdown that are worth searching by meaning, by
/// extension. Data formats (JSON, CSV, translation catalogs) are left out: their chunks
/// would crowd out code and cost embedding time for little.
const TEXT_EXTENSIONS: &[&str] = &[
    "txt", "rst", "adoc", "yml", "yaml", "toml", "ini", "cfg", "html", "htm", "css", "scss", "sh",
    "bash", "sql", "proto", "graphql",
];

/// How a file is chunked, or `None` when it is not in the semantic index.
pub(crate) fn file_kind(path: &Path) -> Option<FileKind> {
    if let Some(lang) = languages::for_path(path) {
        return Some(FileKind::Code(lang));
    }
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    if ext == "md" || ext == "markdown" {
        return Some(FileKind::Markdown);
    }
    TEXT_EXTENSIONS
        .contains(&ext.as_str())
        .then_some(FileKind::Text)
}

/// What is embedded for a chunk: where it is, then its text. The path and symbol carry
/// meaning the body often lacks (`auth/forms.py`, `UserCreationForm.save`).
pub(crate) fn embedding_input(chunk: &Chunk) -> String {
    format!("{} {}\n{}", chunk.path, chunk.symbol, chunk.text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codeintel::languages;

    fn code(path: &str, text: &str, max: usize) -> Vec<Chunk> {
        let lang = languages::for_path(std::path::Path::new(path)).unwrap();
        Chunker::new(max).chunks(path, text, FileKind::Code(lang))
    }

    fn summary(chunks: &[Chunk]) -> Vec<String> {
        chunks
            .iter()
            .map(|c| format!("{} {}-{} {}", c.id, c.start_line, c.end_line, c.kind))
            .collect()
    }

    const PY: &str = "import os\nimport sys\n\n\ndef helper():\n    return 1\n\n\nclass Form:\n    \"\"\"A form.\"\"\"\n\n    def save(self):\n        return os.path.join('a', 'b')\n\n    def clean(self):\n        return sys.argv\n";

    #[test]
    fn a_small_file_merges_its_small_neighbours_and_keeps_them_in_order() {
        let chunks = code("a.py", PY, 512);
        assert_eq!(summary(&chunks), ["a.py#Form 1-16 group"]);
        assert_eq!(chunks[0].text, PY);
    }

    #[test]
    fn a_class_over_the_budget_splits_into_its_header_and_methods() {
        let chunks = code("a.py", PY, 24);
        assert_eq!(
            summary(&chunks),
            [
                "a.py# 1-2 module",
                "a.py#helper 5-6 function",
                "a.py#Form 9-10 class",
                "a.py#Form.save 12-13 method",
                "a.py#Form.clean 15-16 method",
            ]
        );
    }

    #[test]
    fn a_long_body_without_members_is_cut_into_numbered_parts() {
        let body: String = (0..40)
            .map(|i| format!("    x{i} = compute_value({i})\n"))
            .collect();
        let text = format!("def long():\n{body}");
        let chunks = code("b.py", &text, 64);
        assert!(chunks.len() > 2, "{:?}", summary(&chunks));
        assert_eq!(chunks[0].id, "b.py#long@1");
        assert_eq!(chunks[1].id, "b.py#long@2");
        assert_eq!(chunks[0].start_line, 1);
        assert_eq!(chunks.last().unwrap().end_line, 41);
        for pair in chunks.windows(2) {
            assert_eq!(pair[0].end_line + 1, pair[1].start_line);
        }
    }

    #[test]
    fn repeated_names_get_distinct_ids() {
        let text = "class A:\n    @property\n    def x(self):\n        return self._x + 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 10\n\n    @x.setter\n    def x(self, v):\n        self._x = v + 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 10 + 11\n";
        let chunks = code("c.py", text, 60);
        let ids: Vec<&str> = chunks.iter().map(|c| c.id.as_str()).collect();
        assert!(
            ids.contains(&"c.py#A.x") && ids.contains(&"c.py#A.x~2"),
            "{ids:?}"
        );
        let unique: std::collections::HashSet<&str> = ids.iter().copied().collect();
        assert_eq!(unique.len(), ids.len());
    }

    #[test]
    fn rust_impls_nest_their_methods() {
        let text = "struct S;\n\nimpl S {\n    fn new() -> S {\n        S\n    }\n\n    fn run(&self) -> usize {\n        1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 10 + 11 + 12 + 13\n    }\n}\n";
        let chunks = code("s.rs", text, 40);
        let ids: Vec<&str> = chunks.iter().map(|c| c.id.as_str()).collect();
        assert!(ids.contains(&"s.rs#S.run"), "{ids:?}");
    }

    #[test]
    fn markdown_is_cut_at_headings_outside_fences() {
        let filler = "word ".repeat(60);
        let text = format!(
            "# Title\n{filler}\n## Install\n{filler}\n```sh\n# not a heading\n```\n## Use\n{filler}\n"
        );
        let chunks = Chunker::new(100).chunks("README.md", &text, FileKind::Markdown);
        assert_eq!(
            summary(&chunks),
            [
                "README.md#Title 1-2 section",
                "README.md#Title/Install 3-7 section",
                "README.md#Title/Use 8-9 section",
            ]
        );
    }

    #[test]
    fn text_is_cut_into_runs_of_lines_within_the_budget() {
        let text: String = (0..100)
            .map(|i| format!("line number {i} of the file\n"))
            .collect();
        let chunks = Chunker::new(64).chunks("notes.txt", &text, FileKind::Text);
        assert!(chunks.len() > 5);
        assert!(chunks.iter().all(|c| estimate(&c.text) <= 64));
        assert_eq!(chunks[0].id, "notes.txt#@1");
    }

    #[test]
    fn a_minified_line_is_one_chunk_cut_at_the_byte_limit() {
        let text = format!("var a = [{}];\n", "1,".repeat(20_000));
        let chunks = code("m.js", &text, 512);
        assert_eq!(chunks.len(), 1);
        assert!(chunks[0].text.len() <= MAX_CHUNK_BYTES);
    }

    #[test]
    fn empty_and_blank_files_have_no_chunks() {
        assert!(code("e.py", "", 512).is_empty());
        assert!(code("e.py", "\n\n  \n", 512).is_empty());
    }

    #[test]
    fn files_are_chunked_by_kind() {
        assert!(matches!(
            file_kind(Path::new("a/b.py")),
            Some(FileKind::Code(_))
        ));
        assert!(matches!(
            file_kind(Path::new("README.md")),
            Some(FileKind::Markdown)
        ));
        assert!(matches!(
            file_kind(Path::new("docs/x.rst")),
            Some(FileKind::Text)
        ));
        assert!(file_kind(Path::new("data.json")).is_none());
        assert!(file_kind(Path::new("locale/de.po")).is_none());
        assert!(file_kind(Path::new("Makefile")).is_none());
    }
}
