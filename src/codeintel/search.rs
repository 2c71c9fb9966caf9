//! `search_text` and `search_files`: a gitignore-aware parallel walk (`ignore`) with
//! `grep-searcher` per walker thread, collecting into memory. Nothing here prints.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;
use ignore::{WalkBuilder, WalkState};

use super::error::Error;
use super::page::{Page, Window};
use super::root::Root;

/// Lines longer than this are cut in results, so one minified file cannot flood a client.
pub(crate) const MAX_LINE_CHARS: usize = 400;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Case {
    #[default]
    Sensitive,
    Insensitive,
    /// Insensitive unless a pattern has an uppercase letter.
    Smart,
}

/// What to search for and where.
#[derive(Debug, Clone, Default)]
pub struct TextQuery {
    /// One or more patterns; a line matches when any of them does.
    pub patterns: Vec<String>,
    /// Patterns are regular expressions (otherwise literal text).
    pub regex: bool,
    pub case: Case,
    /// Match whole words only.
    pub word: bool,
    /// Globs over root-relative paths (`src/**/*.rs`, `!*.min.js`).
    pub globs: Vec<String>,
    /// File types by ripgrep's names (`rust`, `py`, `js`, ...).
    pub types: Vec<String>,
    /// Lines of context before and after each match.
    pub context: usize,
    /// Root-relative paths to search under; empty for the whole root.
    pub paths: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LineMatch {
    pub line: u64,
    /// 1-based character column of the first match on the line.
    pub column: usize,
    pub text: String,
    pub before: Vec<String>,
    pub after: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FileMatches {
    pub path: String,
    pub matches: Vec<LineMatch>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TextResult {
    /// Matching lines grouped per file; the page counts lines, not files.
    pub files: Vec<FileMatches>,
    pub total: usize,
    pub returned: usize,
    pub truncated: bool,
    pub offset: usize,
    pub next_offset: Option<usize>,
    pub files_with_matches: usize,
}

fn build_matcher(query: &TextQuery) -> Result<RegexMatcher, Error> {
    if query.patterns.is_empty() || query.patterns.iter().all(String::is_empty) {
        return Err(Error::NoPattern);
    }
    let mut builder = RegexMatcherBuilder::new();
    // Lines never span a newline: telling the matcher lets the searcher use its fast
    // line-oriented path even for classes like `[^x]` or `\s` (as ripgrep does).
    builder.line_terminator(Some(b'\n'));
    builder.word(query.word);
    // `build_literals` does not escape: literal search must say so explicitly.
    builder.fixed_strings(!query.regex);
    match query.case {
        Case::Sensitive => {}
        Case::Insensitive => {
            builder.case_insensitive(true);
        }
        Case::Smart => {
            builder.case_smart(true);
        }
    }
    builder
        .build_many(&query.patterns)
        .map_err(|e| Error::Pattern(e.to_string()))
}

/// Builds the walker over `root` (or the query's sub-paths) with globs and type filters.
fn walker(
    root: &Root,
    paths: &[PathBuf],
    globs: &[String],
    types: &[String],
) -> Result<WalkBuilder, Error> {
    let mut builder = match paths.split_first() {
        Some((first, rest)) => {
            let mut b = WalkBuilder::new(first);
            for p in rest {
                b.add(p);
            }
            b
        }
        None => WalkBuilder::new(root.path()),
    };
    builder.threads(std::thread::available_parallelism().map_or(2, std::num::NonZero::get));
    // The index lives under .code-intel/ and git's own files under .git/: never search them.
    builder.filter_entry(|e| {
        let name = e.file_name();
        name != ".git" && name != ".code-intel"
    });
    builder.require_git(false);
    if !globs.is_empty() {
        let mut overrides = OverrideBuilder::new(root.path());
        for g in globs {
            overrides.add(g).map_err(|e| glob_error(g, &e))?;
        }
        builder.overrides(overrides.build().map_err(|e| glob_error("", &e))?);
    }
    if !types.is_empty() {
        let mut tb = TypesBuilder::new();
        tb.add_defaults();
        for t in types {
            tb.select(t);
        }
        let built = tb.build().map_err(|e| Error::FileType(e.to_string()))?;
        builder.types(built);
    }
    Ok(builder)
}

fn glob_error(glob: &str, e: &impl std::fmt::Display) -> Error {
    Error::Glob {
        glob: glob.to_string(),
        message: e.to_string(),
    }
}

fn resolve_paths(root: &Root, paths: &[String]) -> Result<Vec<PathBuf>, Error> {
    paths
        .iter()
        .map(|p| root.resolve(p).map_err(Error::Path))
        .collect()
}

/// Collects the matches of one file.
struct Collector<'m> {
    matcher: &'m RegexMatcher,
    matches: Vec<LineMatch>,
    pending_before: Vec<String>,
}

fn line_text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end_matches(['\n', '\r']);
    if text.chars().count() > MAX_LINE_CHARS {
        let mut cut: String = text.chars().take(MAX_LINE_CHARS).collect();
        cut.push('…');
        cut
    } else {
        text.to_string()
    }
}

impl Sink for Collector<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let first_line = mat.lines().next().unwrap_or(mat.bytes());
        let column = self.matcher.find(first_line).ok().flatten().map_or(1, |m| {
            String::from_utf8_lossy(&first_line[..m.start()])
                .chars()
                .count()
                + 1
        });
        self.matches.push(LineMatch {
            line: mat.line_number().unwrap_or(0),
            column,
            text: line_text(first_line),
            before: std::mem::take(&mut self.pending_before),
            after: Vec::new(),
        });
        Ok(true)
    }

    fn context(
        &mut self,
        _searcher: &Searcher,
        ctx: &SinkContext<'_>,
    ) -> Result<bool, Self::Error> {
        match ctx.kind() {
            SinkContextKind::Before => self.pending_before.push(line_text(ctx.bytes())),
            SinkContextKind::After => {
                if let Some(last) = self.matches.last_mut() {
                    last.after.push(line_text(ctx.bytes()));
                }
            }
            SinkContextKind::Other => {}
        }
        Ok(true)
    }
}

/// Searches the files under the root for the query; results are sorted by path and line.
pub fn search_text(root: &Root, query: &TextQuery, window: Window) -> Result<TextResult, Error> {
    let matcher = build_matcher(query)?;
    let paths = resolve_paths(root, &query.paths)?;
    let walk = walker(root, &paths, &query.globs, &query.types)?;
    let found: Mutex<Vec<(String, Vec<LineMatch>)>> = Mutex::new(Vec::new());
    walk.build_parallel().run(|| {
        let matcher = &matcher;
        let found = &found;
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(0))
            .before_context(query.context)
            .after_context(query.context)
            .build();
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let mut sink = Collector {
                matcher,
                matches: Vec::new(),
                pending_before: Vec::new(),
            };
            if searcher
                .search_path(matcher, entry.path(), &mut sink)
                .is_ok()
                && !sink.matches.is_empty()
            {
                let path = root.relative(entry.path());
                if let Ok(mut f) = found.lock() {
                    f.push((path, sink.matches));
                }
            }
            WalkState::Continue
        })
    });
    let mut files = found.into_inner().map_err(|_| Error::Worker("search"))?;
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let files_with_matches = files.len();
    let flat: Vec<(usize, LineMatch)> = files
        .iter_mut()
        .enumerate()
        .flat_map(|(i, (_, m))| std::mem::take(m).into_iter().map(move |m| (i, m)))
        .collect();
    let page = Page::of(flat, window);
    let mut grouped: Vec<FileMatches> = Vec::new();
    for (i, m) in page.items {
        match grouped.last_mut() {
            Some(g) if g.path == files[i].0 => g.matches.push(m),
            _ => grouped.push(FileMatches {
                path: files[i].0.clone(),
                matches: vec![m],
            }),
        }
    }
    Ok(TextResult {
        files: grouped,
        total: page.total,
        returned: page.returned,
        truncated: page.truncated,
        offset: page.offset,
        next_offset: page.next_offset,
        files_with_matches,
    })
}

/// Every line mentioning any of `names` as a whole word, case-sensitively: the text side
/// of reference and impact searches.
pub(crate) fn search_words(root: &Root, names: &[String]) -> Result<TextResult, Error> {
    let query = TextQuery {
        patterns: names.to_vec(),
        word: true,
        case: Case::Sensitive,
        ..TextQuery::default()
    };
    search_text(root, &query, Window::ALL)
}

/// What `search_files` looks for.
#[derive(Debug, Clone, Default)]
pub struct FileQuery {
    /// Globs over root-relative paths; a bare name without `/` matches at any depth.
    pub globs: Vec<String>,
    pub types: Vec<String>,
    pub paths: Vec<String>,
}

/// Lists the files under the root whose path matches any glob, sorted.
pub fn search_files(root: &Root, query: &FileQuery, window: Window) -> Result<Page<String>, Error> {
    let paths = resolve_paths(root, &query.paths)?;
    let mut set = globset::GlobSetBuilder::new();
    for g in &query.globs {
        let pattern = if g.contains('/') {
            g.clone()
        } else {
            format!("**/{g}")
        };
        set.add(
            globset::GlobBuilder::new(&pattern)
                .literal_separator(true)
                .build()
                .map_err(|e| glob_error(g, &e))?,
        );
    }
    let set = set.build().map_err(|e| glob_error("", &e))?;
    let walk = walker(root, &paths, &[], &query.types)?;
    let found: Mutex<Vec<String>> = Mutex::new(Vec::new());
    walk.build_parallel().run(|| {
        let found = &found;
        let set = &set;
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if entry.file_type().is_some_and(|t| t.is_file()) {
                let rel = root.relative(entry.path());
                if (query.globs.is_empty() || set.is_match(Path::new(&rel)))
                    && let Ok(mut f) = found.lock()
                {
                    f.push(rel);
                }
            }
            WalkState::Continue
        })
    });
    let mut files = found.into_inner().map_err(|_| Error::Worker("walker"))?;
    files.sort();
    Ok(Page::of(files, window))
}

/// Every directory under the root the walk visits (gitignore-aware, hidden ones skipped),
/// the root included, as absolute paths: what a file watcher watches.
pub fn walk_dirs(root: &Root) -> Result<Vec<PathBuf>, Error> {
    walk_dirs_under(root, root.path())
}

/// [`walk_dirs`] for the subtree at `dir` (a directory under the root).
pub fn walk_dirs_under(root: &Root, dir: &std::path::Path) -> Result<Vec<PathBuf>, Error> {
    let walk = walker(root, &[dir.to_path_buf()], &[], &[])?;
    let mut dirs: Vec<PathBuf> = walk
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_dir()))
        .map(ignore::DirEntry::into_path)
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// Every file under the root the walk visits (gitignore-aware), as absolute paths.
pub(crate) fn walk_files(root: &Root) -> Result<Vec<PathBuf>, Error> {
    let walk = walker(root, &[], &[], &[])?;
    let found: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    walk.build_parallel().run(|| {
        let found = &found;
        Box::new(move |entry| {
            if let Ok(entry) = entry
                && entry.file_type().is_some_and(|t| t.is_file())
                && let Ok(mut f) = found.lock()
            {
                f.push(entry.into_path());
            }
            WalkState::Continue
        })
    });
    let mut files = found.into_inner().map_err(|_| Error::Worker("walker"))?;
    files.sort();
    Ok(files)
}
