//! Code-intelligence tools: text search, files, symbols, references, structure and impact, as a library the CLI and the MCP server call.
//!
//! Every path a client gives goes through [`root::Root`]; every list is a bounded
//! [`page::Page`]; nothing here prints.
//!
//! ## The parts and the index
//!
//! The code-intelligence tools as a library: `root` (the repository root; every client path
//! is resolved inside it, refusing `..`, outside absolute paths and symlinks that leave it),
//! `page` (bounded lists with `total`, `returned`, `truncated`, `next_offset`), `budget`
//! (a byte budget for a tool's JSON answer: `budget::fit` cuts the longest list first (a
//! page, a text search's lines, semantic search's ranked hits) and keeps each cut page's
//! `truncated` and `next_offset` true; 16 KiB for every code tool
//! answer of the server, 8 KiB for impact's default summary), `qualified` (`Session.request`,
//! `module.func`, `Type::method`: a member name and its container, resolved against each
//! definition's `scope` and file module path, and which uses may be of it), `search`
//! (`search_text` and `search_files`: an `ignore` parallel walk that honours `.gitignore`,
//! skips `.git/` and `.code-intel/`, with one `grep-searcher` and matcher per thread
//! collecting into memory; `search_text_rendered` renders the CLI's `path:line:text` lines
//! on the walker threads instead, so printing adds no serial work after the walk; what the
//! walk does not read is collected as `Skipped`, by path and reason: directories it cannot
//! list, files it cannot open, binary files, FIFOs, sockets and devices; answers carry it
//! and the CLI prints a line per unreadable path, as `rg` does, and a summary), `languages` and `tags` (the eleven grammars, the
//! queries as data: definitions in `codeintel/queries/<language>.scm`, references in
//! `<language>.refs.scm`, and a `Tagger` that caches one `TagsConfiguration` per language,
//! of definitions only or of definitions and references), `store` (the binary index
//! format), `retag` (read, hash and tag files on every core), `index` (the read side),
//! `refresh` and `lock` (the write side), `references` (uses of names, below), `symbols`
//! (definitions, references with a text fallback, outlines, function at a line,
//! structure), `impact` (ranks every section, then shows the part an `impact::View` asks for:
//! a summary of counts and top items, one section paged, or all) and `query` (routes a
//! question to one tool and returns its typed answer, `Routed`; a description in plain words
//! routes to `semantic_search`, which the caller runs since `codeintel` is below `semantic`,
//! and `query::answer` gives the text search fallback). `error` holds `codeintel::Error`, one variant per failure
//! mode, each with a stable `key()` (`path.outside_root`, `index.corrupt`, ...). `wire`
//! holds the JSON output types (`serde` + `schemars`), converted by hand from the domain
//! types, which are not serializable; the CLI's `--json` prints them.
//!
//! The index has two layers: `.code-intel/symbols.idx` and `.code-intel/symbols.delta`.
//! Queries open the files and read only the header, the file table and the paths, then
//! binary-search the sorted name directory and read the tags they return (`pread`), so a
//! lookup costs the same in a small repository and a large one. Every 4 KiB piece of each
//! section has a checksum (xxHash64, written in `store`) in a chunk table that the header's
//! own checksum covers. Opening checks the header, the chunk table, the file table and the
//! paths; any other piece is checked the first time a read touches it (a per-`Store`
//! atomic bitset remembers which), so a query checks the few pieces it reads. A mismatch is
//! `Error::IndexCorrupt`, from the open or from the read that found it, never a wrong or
//! empty value. Opened that way, the index is rebuilt (`refresh`, `refresh_changed`) or, by
//! a reader that may not write, replaced by every file tagged in memory (`Index::open`);
//! found by a query, the CLI and the server call `refresh::repair` (check every piece,
//! rebuild if one fails) and ask again, once. The answer's `freshness.recovered` (the
//! report's `recovered` for `code-intel index`) says what was wrong; the CLI prints it as a
//! warning, the server logs it.
//!
//! Reading and refreshing are apart. `Index::open` (every query) only reads: it opens the
//! two layers as one snapshot, compares every indexed file's size and mtime with the index,
//! hashes the ones that moved, and re-tags those whose content changed *in memory*, as an
//! overlay over the disk layers for that answer; deleted files are hidden. With no usable
//! index on disk it tags the whole tree in memory. `refresh::refresh` (`code-intel index`)
//! walks the tree, re-tags new and changed files and writes only the delta (and reports
//! what it did not index, `UpdateReport::skipped`: files over the size limit, and
//! directories and source files it could not read); when the delta
//! passes an eighth of the files (at least 64) it is folded into a new main index and the
//! delta is removed. `refresh_changed` re-tags only the indexed files that changed (new
//! files wait for `index`) and returns the index it wrote, checked under the lock, so the
//! files are not stat'ed twice. The symbol functions (`find_definitions`, `analyze_impact`,
//! ...) take an `&Index` and never open one themselves: the CLI's symbol commands answer
//! from what `refresh_changed` returned, and when it fails (`.code-intel/` not writable)
//! from `Index::open`'s overlay, saying why in `freshness.unsaved`. The MCP server can share
//! one index between concurrent tool calls: reads take no lock and write nothing.
//!
//! The index stores definitions only. Uses are parsed when asked for: `references` finds
//! the files that mention the names as a word (one text search), tags them with the
//! definitions and references queries on every core, and gives each use its kind (`call`,
//! `inherit`, `import`, `type`, `decorator`, `read`: `references::REFERENCE_KINDS`, checked
//! against the queries by a test) and a resolution from what its own file says: `import`
//! (the file imports the name, or the use is the import), `local` (the file defines it),
//! `module` (reached through a module or type the file imports or defines, `admin.ModelAdmin`),
//! `self` (through `self`/`this`/`cls`/`Self`), or `name` when only the name matches
//! (`d.items()`); name matches are listed last and do not count towards impact's risk. The
//! queries `@ignore` the names that are bound rather than used (parameters, assignment
//! targets), and list specific kinds before the catch-all reads, because tree-sitter-tags
//! keeps one tag per name node, from the earliest pattern. Keeping uses out of the index
//! makes the cold build cheaper (the query cursor matches fewer patterns, nothing about
//! uses is written) and keeps their answer as fresh as the files; `impact` shares the one
//! text search between parsing and its test/configuration/markup mentions, and sorts what
//! it finds into subclasses, importers and callers.
//!
//! Before any index exists, a name is answered without building one: `Index::for_names`
//! finds the files that mention the name as a word (text search) and tags only those, in
//! memory; every definition of the name is in one of them, so `defs` gives the full
//! index's answer, and `refs` needs no index at all (the CLI when there is no index file, the server
//! while its first build runs). `Index::for_files` does the same for a file-scoped question.
//! Tags keep the first line of their node (`start_line`) besides the name's line, so a
//! decorator belongs to the function it decorates; definition kinds are the language's own
//! (`symbols::DEFINITION_KINDS`, checked against the queries by a test).
//!
//! Writes are serialised by `lock::WriteLock`: an in-process set of roots being written
//! (threads wait on a condition variable) and then an exclusive `File::lock` on
//! `.code-intel/index.lock` (processes). Both are needed: std leaves a second lock from the
//! same process unspecified, and where locks are per process two threads would both get
//! one. Every file is written by `store::atomic_write`: a temp file named
//! `<file>.tmp-<pid>-<counter>-<nanos>` opened with `create_new`, fsync, rename, fsync of the
//! directory. A refresh, holding the lock, first removes any `symbols.*.tmp*` (a dead
//! writer's) and any delta of another generation than the main index.

pub(crate) mod budget;
pub(crate) mod error;
pub(crate) mod gitignore;
pub(crate) mod impact;
pub(crate) mod index;
pub(crate) mod languages;
pub(crate) mod lock;
pub(crate) mod page;
pub(crate) mod qualified;
pub(crate) mod query;
pub(crate) mod references;
pub(crate) mod refresh;
pub(crate) mod retag;
pub(crate) mod root;
pub(crate) mod search;
pub(crate) mod state_dir;
pub(crate) mod store;
pub(crate) mod symbols;
pub(crate) mod tags;
pub(crate) mod wire;

// The surface: what the binaries, benches and integration tests use from this module.
pub use budget::ANSWER_BUDGET;
pub use budget::IMPACT_SUMMARY_BUDGET;
pub use impact::analyze_impact;
pub use index::DELTA_FILE;
pub use index::INDEX_FILE;
pub use index::Index;
pub use page::Window;
pub use query::query;
pub use refresh::refresh;
pub use root::Root;
pub use search::Case;
pub use search::FileQuery;
pub use search::SkipReason;
pub use search::TextQuery;
pub use search::search_files;
pub use search::search_text;
pub use search::search_text_rendered;
pub use symbols::DEFINITION_KINDS;
pub use symbols::analyze_structure;
pub use symbols::find_definitions;
pub use symbols::find_references;
pub use symbols::function_at_line;
pub use symbols::get_symbols;
