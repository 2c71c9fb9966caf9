//! `search_text` and `search_files`: a gitignore-aware parallel walk (`ignore`) with
//! `grep-searcher` and a matcher of its own per walker thread, collecting into memory.
//! Nothing here prints. What the walk could not read, or chose not to (binary files,
//! FIFOs), is collected too ([`Skipped`]), so every answer can say what it did not see.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkFinish,
    SinkMatch,
};
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;
use ignore::{DirEntry, WalkBuilder, WalkState};

use super::error::Error;
use super::page::{Page, Window};
use super::root::Root;

/// Lines longer than this are cut in results, so one minified file cannot flood a client.
pub(crate) const MAX_LINE_CHARS: usize = 400;

/// Why a file or directory under the root was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SkipReason {
    /// The system refused to open or list it.
    PermissionDenied,
    /// Any other I/O error: it vanished during the walk, a read failed, ...
    Unreadable,
    /// It has a NUL byte: binary files are not searched (as ripgrep does).
    Binary,
    /// A FIFO, socket or device: only regular files are read (symbolic links are not
    /// followed, and not reported).
    NotARegularFile,
    /// Larger than the index's size limit (indexing only).
    TooLarge,
}

impl SkipReason {
    /// The stable name clients see (`permission_denied`, `binary`, ...).
    pub fn key(self) -> &'static str {
        match self {
            SkipReason::PermissionDenied => "permission_denied",
            SkipReason::Unreadable => "unreadable",
            SkipReason::Binary => "binary",
            SkipReason::NotARegularFile => "not_a_regular_file",
            SkipReason::TooLarge => "too_large",
        }
    }

    /// Whether reading failed (an error, which the CLI prints a line for, as `rg` does),
    /// rather than the walk choosing not to read it.
    pub fn is_error(self) -> bool {
        matches!(self, SkipReason::PermissionDenied | SkipReason::Unreadable)
    }

    /// Why an I/O error kept a path from being read.
    pub(crate) fn of(e: &std::io::Error) -> SkipReason {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            SkipReason::PermissionDenied
        } else {
            SkipReason::Unreadable
        }
    }
}

/// One file or directory that was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedPath {
    /// Root-relative.
    pub path: String,
    pub reason: SkipReason,
    /// What went wrong, as the system said it (`Permission denied (os error 13)`).
    pub message: String,
}

/// Everything a walk did not read, sorted by path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skipped {
    pub paths: Vec<SkippedPath>,
}

impl Skipped {
    pub fn count(&self) -> usize {
        self.paths.len()
    }

    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    pub fn by_reason(&self) -> BTreeMap<SkipReason, usize> {
        let mut counts = BTreeMap::new();
        for p in &self.paths {
            *counts.entry(p.reason).or_insert(0) += 1;
        }
        counts
    }

    /// `2 binary, 1 permission denied`.
    pub fn summary(&self) -> String {
        self.by_reason()
            .into_iter()
            .map(|(reason, n)| format!("{n} {}", reason.key().replace('_', " ")))
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub(crate) fn push(&mut self, path: String, reason: SkipReason, message: String) {
        self.paths.push(SkippedPath {
            path,
            reason,
            message,
        });
    }

    pub(crate) fn sort(&mut self) {
        self.paths
            .sort_unstable_by(|a, b| (&a.path, a.reason).cmp(&(&b.path, b.reason)));
    }
}

/// Collects what walker threads skipped.
#[derive(Default)]
struct SkipLog(Mutex<Skipped>);

impl SkipLog {
    fn add(&self, path: String, reason: SkipReason, message: String) {
        if let Ok(mut s) = self.0.lock() {
            s.push(path, reason, message);
        }
    }

    /// A walk error (a directory that cannot be listed, an entry that vanished).
    fn walk_error(&self, root: &Root, e: &ignore::Error) {
        let (path, message, reason) = describe_walk_error(e);
        let path = path.map(|p| root.relative(p)).unwrap_or_default();
        // The root itself (or an error with no path).
        let path = if path.is_empty() { ".".into() } else { path };
        self.add(path, reason, message);
    }

    /// Notes `entry` when it is a FIFO, socket or device; true when it is a regular file.
    fn regular_file(&self, root: &Root, entry: &DirEntry) -> bool {
        match entry.file_type() {
            Some(t) if t.is_file() => true,
            Some(t) if !t.is_dir() && !t.is_symlink() => {
                self.add(
                    root.relative(entry.path()),
                    SkipReason::NotARegularFile,
                    "not a regular file (a FIFO, socket or device)".into(),
                );
                false
            }
            _ => false,
        }
    }

    fn finish(self) -> Skipped {
        let mut skipped = self.0.into_inner().unwrap_or_else(|e| e.into_inner());
        skipped.sort();
        skipped
    }
}

/// The path, message and reason of a walk error (`ignore` wraps the I/O error in the
/// path and depth it happened at).
fn describe_walk_error(e: &ignore::Error) -> (Option<&Path>, String, SkipReason) {
    let mut path = None;
    let mut inner = e;
    loop {
        match inner {
            ignore::Error::WithPath { path: p, err } => {
                path = Some(p.as_path());
                inner = err;
            }
            ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
                inner = err;
            }
            _ => break,
        }
    }
    let reason = e.io_error().map_or(SkipReason::Unreadable, SkipReason::of);
    (path, inner.to_string(), reason)
}

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
    /// Files and directories not searched, and why.
    pub skipped: Skipped,
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
    if !globs.is_empty() || !root.excludes().is_empty() {
        let mut overrides = OverrideBuilder::new(root.path());
        for g in globs {
            overrides.add(g).map_err(|e| glob_error(g, &e))?;
        }
        for g in root.excludes() {
            overrides
                .add(&format!("!{g}"))
                .map_err(|e| glob_error(g, &e))?;
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

/// A line as results show it: without its line terminator, lossily decoded, and cut
/// after [`MAX_LINE_CHARS`] characters (with `…`). Borrowed when nothing changes, which
/// is nearly always.
fn clip(bytes: &[u8]) -> Cow<'_, str> {
    let mut end = bytes.len();
    while end > 0 && matches!(bytes[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    let bytes = &bytes[..end];
    // A line of at most MAX_LINE_CHARS bytes has at most as many characters.
    if let Ok(text) = std::str::from_utf8(bytes)
        && (bytes.len() <= MAX_LINE_CHARS || text.chars().count() <= MAX_LINE_CHARS)
    {
        return Cow::Borrowed(text);
    }
    let text = String::from_utf8_lossy(bytes);
    if text.chars().count() > MAX_LINE_CHARS {
        let mut cut: String = text.chars().take(MAX_LINE_CHARS).collect();
        cut.push('…');
        Cow::Owned(cut)
    } else {
        Cow::Owned(text.into_owned())
    }
}

fn line_text(bytes: &[u8]) -> String {
    clip(bytes).into_owned()
}

/// A sink that gathers what one file gave, reused from file to file by a walker thread.
trait FileSink: Sink<Error = std::io::Error> + Send {
    /// What a file with matches gave.
    type Out: Send;
    /// Starts a file.
    fn start(&mut self, path: &Path);
    /// The file's root-relative path, how many matching lines it had, and what it gave;
    /// None when it had no match. Leaves the sink ready for the next file.
    fn take(&mut self) -> Option<(String, usize, Self::Out)>;
}

/// The file a sink is at, with its root-relative path made only when needed.
struct Current<'r> {
    root: &'r Root,
    path: PathBuf,
    rel: Option<String>,
}

impl<'r> Current<'r> {
    fn new(root: &'r Root) -> Current<'r> {
        Current {
            root,
            path: PathBuf::new(),
            rel: None,
        }
    }

    fn start(&mut self, path: &Path) {
        path.clone_into(&mut self.path);
        self.rel = None;
    }

    fn rel(&mut self) -> &str {
        self.rel
            .get_or_insert_with(|| self.root.relative(&self.path))
            .as_str()
    }

    fn take_rel(&mut self) -> String {
        self.rel();
        self.rel.take().unwrap_or_default()
    }
}

/// Collects the matches of one file as [`LineMatch`]es.
struct Collector<'r> {
    file: Current<'r>,
    /// For columns: the search reports lines, not where on them the match is.
    matcher: RegexMatcher,
    matches: Vec<LineMatch>,
    pending_before: Vec<String>,
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

impl FileSink for Collector<'_> {
    type Out = Vec<LineMatch>;

    fn start(&mut self, path: &Path) {
        self.file.start(path);
        self.pending_before.clear();
    }

    fn take(&mut self) -> Option<(String, usize, Vec<LineMatch>)> {
        if self.matches.is_empty() {
            return None;
        }
        let matches = std::mem::take(&mut self.matches);
        Some((self.file.take_rel(), matches.len(), matches))
    }
}

/// One file's matching lines as the CLI prints them, and where each match's block ends.
struct Rendered {
    text: Vec<u8>,
    ends: Vec<usize>,
}

/// Renders the matches of one file as text on the walker thread, so the formatting is
/// spread over every core rather than done after the walk: `path:line:text` for a
/// match, `path-line-text` for context, and `--` after each match's block when there
/// is context (the format of `code-intel search`, like `rg -n --no-heading`).
struct Renderer<'r> {
    file: Current<'r>,
    context: bool,
    text: Vec<u8>,
    ends: Vec<usize>,
    /// A match's block is open (its after-context may follow).
    open: bool,
}

impl Renderer<'_> {
    fn close(&mut self) {
        if self.open {
            if self.context {
                self.text.extend_from_slice(b"--\n");
            }
            self.ends.push(self.text.len());
            self.open = false;
        }
    }

    fn line(&mut self, separator: u8, number: Option<u64>, bytes: &[u8]) {
        let Current { root, path, rel } = &mut self.file;
        let rel = rel.get_or_insert_with(|| root.relative(path));
        self.text.extend_from_slice(rel.as_bytes());
        self.text.push(separator);
        push_decimal(&mut self.text, number.unwrap_or(0));
        self.text.push(separator);
        self.text.extend_from_slice(clip(bytes).as_bytes());
        self.text.push(b'\n');
    }
}

fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        // n % 10 < 10: the cast cannot truncate.
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

impl Sink for Renderer<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.close();
        let first_line = mat.lines().next().unwrap_or(mat.bytes());
        self.line(b':', mat.line_number(), first_line);
        self.open = true;
        Ok(true)
    }

    fn context(
        &mut self,
        _searcher: &Searcher,
        ctx: &SinkContext<'_>,
    ) -> Result<bool, Self::Error> {
        match ctx.kind() {
            SinkContextKind::Before => {
                self.close();
                self.line(b'-', ctx.line_number(), ctx.bytes());
            }
            SinkContextKind::After => self.line(b'-', ctx.line_number(), ctx.bytes()),
            SinkContextKind::Other => {}
        }
        Ok(true)
    }
}

impl FileSink for Renderer<'_> {
    type Out = Rendered;

    fn start(&mut self, path: &Path) {
        self.file.start(path);
        self.text.clear();
        self.ends.clear();
        self.open = false;
    }

    fn take(&mut self) -> Option<(String, usize, Rendered)> {
        self.close();
        if self.ends.is_empty() {
            return None;
        }
        let rendered = Rendered {
            text: std::mem::take(&mut self.text),
            ends: std::mem::take(&mut self.ends),
        };
        Some((self.file.take_rel(), rendered.ends.len(), rendered))
    }
}

/// Passes everything on to `sink` and notes where binary data stopped the search.
struct Watch<'s, S> {
    sink: &'s mut S,
    binary_at: Option<u64>,
}

impl<S: Sink> Sink for Watch<'_, S> {
    type Error = S::Error;

    fn matched(&mut self, searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, S::Error> {
        self.sink.matched(searcher, mat)
    }

    fn context(&mut self, searcher: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, S::Error> {
        self.sink.context(searcher, ctx)
    }

    fn context_break(&mut self, searcher: &Searcher) -> Result<bool, S::Error> {
        self.sink.context_break(searcher)
    }

    fn binary_data(&mut self, searcher: &Searcher, offset: u64) -> Result<bool, S::Error> {
        self.sink.binary_data(searcher, offset)
    }

    fn begin(&mut self, searcher: &Searcher) -> Result<bool, S::Error> {
        self.sink.begin(searcher)
    }

    fn finish(&mut self, searcher: &Searcher, finish: &SinkFinish) -> Result<(), S::Error> {
        self.binary_at = finish.binary_byte_offset();
        self.sink.finish(searcher, finish)
    }
}

/// What the walk gave: per file with matches, its path, match count and sink output,
/// sorted by path; and what it skipped.
struct Walked<T> {
    files: Vec<(String, usize, T)>,
    skipped: Skipped,
}

impl<T> Walked<T> {
    fn total(&self) -> usize {
        self.files.iter().map(|(_, n, _)| n).sum()
    }

    /// The files with matches inside `window` (matches counted across files, in path
    /// order), each with the range of its own matches that falls inside.
    fn cut(self, window: Window) -> Cut<T> {
        let total = self.total();
        let range = window.range(total);
        let mut kept = Vec::new();
        let mut base = 0;
        for (path, n, out) in self.files {
            let (start, end) = (range.start.max(base), range.end.min(base + n));
            if start < end {
                kept.push((path, out, start - base..end - base));
            }
            base += n;
            if base >= range.end {
                break;
            }
        }
        Cut {
            files: kept,
            page: Page::cut(vec![(); range.len()], total, window),
            skipped: self.skipped,
        }
    }
}

/// The part of a walk that a window keeps.
struct Cut<T> {
    /// Per file: its path, its sink's output, and the range of its matches kept.
    files: Vec<(String, T, Range<usize>)>,
    /// The page's numbers (its items are the kept matches, counted).
    page: Page<()>,
    skipped: Skipped,
}

/// Searches the query's files on every core with one `S` (made by `sink`), searcher and
/// matcher per walker thread.
fn search_walk<S: FileSink>(
    root: &Root,
    query: &TextQuery,
    matcher: &RegexMatcher,
    sink: impl Fn() -> S + Sync,
) -> Result<Walked<S::Out>, Error> {
    let paths = resolve_paths(root, &query.paths)?;
    let walk = walker(root, &paths, &query.globs, &query.types)?;
    let found: Mutex<Vec<(String, usize, S::Out)>> = Mutex::new(Vec::new());
    let skipped = SkipLog::default();
    walk.build_parallel().run(|| {
        let (found, skipped, sink) = (&found, &skipped, &sink);
        // A matcher per thread: threads sharing one contend for its scratch space.
        let matcher = matcher.clone();
        let mut sink = sink();
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(0))
            .before_context(query.context)
            .after_context(query.context)
            .build();
        Box::new(move |entry| {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    skipped.walk_error(root, &e);
                    return WalkState::Continue;
                }
            };
            if !skipped.regular_file(root, &entry) {
                return WalkState::Continue;
            }
            sink.start(entry.path());
            let mut watch = Watch {
                sink: &mut sink,
                binary_at: None,
            };
            let result = searcher.search_path(&matcher, entry.path(), &mut watch);
            let binary_at = watch.binary_at;
            match result {
                Err(e) => skipped.add(
                    root.relative(entry.path()),
                    SkipReason::of(&e),
                    e.to_string(),
                ),
                Ok(()) => {
                    if let Some(offset) = binary_at {
                        skipped.add(
                            root.relative(entry.path()),
                            SkipReason::Binary,
                            format!("binary file (a NUL byte at offset {offset})"),
                        );
                    }
                }
            }
            if let Some(file) = sink.take()
                && let Ok(mut f) = found.lock()
            {
                f.push(file);
            }
            WalkState::Continue
        })
    });
    let mut files = found.into_inner().map_err(|_| Error::Worker("search"))?;
    // Paths are unique: an unstable sort orders them all the same.
    files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(Walked {
        files,
        skipped: skipped.finish(),
    })
}

/// Searches the files under the root for the query; results are sorted by path and line.
pub fn search_text(root: &Root, query: &TextQuery, window: Window) -> Result<TextResult, Error> {
    let matcher = build_matcher(query)?;
    let walked = search_walk(root, query, &matcher, || Collector {
        file: Current::new(root),
        matcher: matcher.clone(),
        matches: Vec::new(),
        pending_before: Vec::new(),
    })?;
    let files_with_matches = walked.files.len();
    let Cut {
        files,
        page,
        skipped,
    } = walked.cut(window);
    let files = files
        .into_iter()
        .map(|(path, mut matches, range)| {
            matches.truncate(range.end);
            matches.drain(..range.start);
            FileMatches { path, matches }
        })
        .collect();
    Ok(TextResult {
        files,
        total: page.total,
        returned: page.returned,
        truncated: page.truncated,
        offset: page.offset,
        next_offset: page.next_offset,
        files_with_matches,
        skipped,
    })
}

/// [`search_text`]'s page rendered as `code-intel search` prints it (`path:line:text`,
/// context lines as `path-line-text`, `--` after each match when there is context), in
/// one chunk of text per file, in path order. Rendered on the walker threads: no line is
/// held as a value of its own, and no column is computed.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedText {
    pub chunks: Vec<Vec<u8>>,
    pub total: usize,
    pub returned: usize,
    pub truncated: bool,
    pub offset: usize,
    pub next_offset: Option<usize>,
    pub skipped: Skipped,
}

/// [`search_text`], rendered as text ([`RenderedText`]).
pub fn search_text_rendered(
    root: &Root,
    query: &TextQuery,
    window: Window,
) -> Result<RenderedText, Error> {
    let matcher = build_matcher(query)?;
    let walked = search_walk(root, query, &matcher, || Renderer {
        file: Current::new(root),
        context: query.context > 0,
        text: Vec::new(),
        ends: Vec::new(),
        open: false,
    })?;
    let Cut {
        files,
        page,
        skipped,
    } = walked.cut(window);
    let chunks = files
        .into_iter()
        .map(|(_, mut r, range)| {
            let start = range.start.checked_sub(1).map_or(0, |i| r.ends[i]);
            r.text.truncate(r.ends[range.end - 1]);
            r.text.drain(..start);
            r.text
        })
        .collect();
    Ok(RenderedText {
        chunks,
        total: page.total,
        returned: page.returned,
        truncated: page.truncated,
        offset: page.offset,
        next_offset: page.next_offset,
        skipped,
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

/// The answer of `search_files`: a page of paths, and what the walk could not read.
#[derive(Debug, Clone, PartialEq)]
pub struct FileList {
    pub files: Page<String>,
    pub skipped: Skipped,
}

/// Lists the files under the root whose path matches any glob, sorted.
pub fn search_files(root: &Root, query: &FileQuery, window: Window) -> Result<FileList, Error> {
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
    let skipped = SkipLog::default();
    walk.build_parallel().run(|| {
        let (found, skipped, set) = (&found, &skipped, &set);
        Box::new(move |entry| {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    skipped.walk_error(root, &e);
                    return WalkState::Continue;
                }
            };
            if skipped.regular_file(root, &entry) {
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
    Ok(FileList {
        files: Page::of(files, window),
        skipped: skipped.finish(),
    })
}

/// Every directory the walk visits under `dir` (a directory under the root; gitignore-aware,
/// hidden ones skipped), `dir` included, as absolute paths: what a file watcher watches.
pub(crate) fn walk_dirs_under(root: &Root, dir: &std::path::Path) -> Result<Vec<PathBuf>, Error> {
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

/// Every regular file under the root the walk visits (gitignore-aware), as absolute
/// paths, and what the walk could not read (directories it could not list, FIFOs, ...).
pub(crate) fn walk_files(root: &Root) -> Result<(Vec<PathBuf>, Skipped), Error> {
    let walk = walker(root, &[], &[], &[])?;
    let found: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    let skipped = SkipLog::default();
    walk.build_parallel().run(|| {
        let (found, skipped) = (&found, &skipped);
        Box::new(move |entry| {
            match entry {
                Err(e) => skipped.walk_error(root, &e),
                Ok(entry) => {
                    if skipped.regular_file(root, &entry)
                        && let Ok(mut f) = found.lock()
                    {
                        f.push(entry.into_path());
                    }
                }
            }
            WalkState::Continue
        })
    });
    let mut files = found.into_inner().map_err(|_| Error::Worker("walker"))?;
    files.sort();
    Ok((files, skipped.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_shown_without_terminators_decoded_and_cut() {
        assert_eq!(clip(b"abc\r\n"), "abc");
        assert!(matches!(clip(b"abc\n"), Cow::Borrowed("abc")));
        assert_eq!(clip(b"a\xffb\n"), "a\u{fffd}b");
        // Over MAX_LINE_CHARS bytes but not characters: whole.
        let short = "é".repeat(MAX_LINE_CHARS);
        assert_eq!(clip(short.as_bytes()), short.as_str());
        let long = "é".repeat(MAX_LINE_CHARS + 1);
        assert_eq!(clip(long.as_bytes()), format!("{short}…"));
        let mut decimal = Vec::new();
        for n in [0, 7, 10, 1234, u64::MAX] {
            push_decimal(&mut decimal, n);
            decimal.push(b' ');
        }
        assert_eq!(decimal, format!("0 7 10 1234 {} ", u64::MAX).as_bytes());
    }
}
