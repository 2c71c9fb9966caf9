//! The symbol index, read side: the on-disk layers opened as one consistent snapshot,
//! with the files that changed since they were indexed re-tagged in memory, per answer.
//!
//! Two layers on disk, like a small log-structured store: the main index (`symbols.idx`)
//! and a delta (`symbols.delta`) holding files re-tagged since the main index was written,
//! and tombstones for deleted ones. `refresh` writes them; this module never writes.
//!
//! Freshness: before answering, every indexed file's size and mtime are compared with the
//! index; a file whose stamp moved is hashed, and re-tagged *in memory* (an overlay over
//! the disk layers) when its content changed; a deleted file is hidden. So no answer ever
//! comes from a file that changed since it was indexed, even when `.code-intel/` cannot be
//! written. Files created after the last refresh wait for the next `refresh`
//! (`code-intel index`). With no usable index on disk, the whole tree is tagged in memory.
//!
//! `Index` is `Send + Sync` and holds open file handles, so it answers from the files it
//! opened even after a refresh replaced them.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::error::Error;
use super::retag::{Job, Outcome, run_jobs, sha256, source_files, stamp};
use super::root::Root;
use super::store::{FileEntry, Store};
use super::tags::Tag;

/// Where the main index lives, relative to the root.
pub const INDEX_FILE: &str = ".code-intel/symbols.idx";
/// Where the delta lives, relative to the root.
pub const DELTA_FILE: &str = ".code-intel/symbols.delta";
/// The language of a delta entry that records a deleted file.
pub(crate) const TOMBSTONE: &str = "-";

/// How often a reader reopens the layers when a fold replaced the main index while it was
/// opening them. A fold is one rename, so the next attempt almost always succeeds; past
/// this many, the reader tags the tree in memory rather than wait.
const SNAPSHOT_ATTEMPTS: u32 = 50;

/// How fresh an answer is, for clients to judge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Freshness {
    /// Unix time of the last index write.
    pub indexed_at: u64,
    pub files_indexed: usize,
    /// Files re-tagged just before this answer because they changed.
    pub reindexed: Vec<String>,
    /// Indexed files that no longer exist (dropped from the answer).
    pub deleted: usize,
    pub note: &'static str,
    /// Why the index on disk could not be brought up to date, when a caller tried to and
    /// failed (the answer then comes from the in-memory overlay).
    pub unsaved: Option<String>,
    /// Why the index on disk was unusable (damaged, truncated, another format) and what
    /// was done instead: rebuilt, or every file tagged in memory for this answer.
    pub recovered: Option<String>,
}

// The CLI's notes; the server words them from the contract's `code_tools.note.*`
// messages in the session's locale (`server::code_tools`), recognising them by text.
pub(crate) const FRESHNESS_NOTE: &str = "every indexed file was checked against the index before answering; files created since the last `index` run are not included until the next one";
pub(crate) const CANDIDATES_NOTE: &str = "there is no index yet: the files that mention the name were found by text search and tagged in memory, which gives the same answer as a full index; `code-intel index` (or the server, in the background) builds it";
pub(crate) const PARTIAL_NOTE: &str = "the full index is still being built: only the files asked about were tagged, in memory, for this answer";
pub(crate) const IN_MEMORY_NOTE: &str = "there is no usable index on disk: every source file was tagged in memory for this answer; `code-intel index` saves that work";

/// Where a live file or a tag is: a layer on disk, or the in-memory overlay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layer {
    Main = 0,
    Delta = 1,
    Overlay = 2,
}

/// A tag in one of the layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TagRef {
    layer: Layer,
    tag: usize,
}

/// Files re-tagged in memory for one answer, searchable by name.
#[derive(Debug, Default)]
struct Overlay {
    files: Vec<FileEntry>,
    /// Every tag as (file, position among that file's tags).
    tags: Vec<(usize, usize)>,
    by_name: HashMap<String, Vec<usize>>,
}

impl Overlay {
    fn new(files: Vec<FileEntry>) -> Overlay {
        let mut tags = Vec::new();
        let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
        for (f, e) in files.iter().enumerate() {
            for (k, t) in e.tags.iter().enumerate() {
                by_name.entry(t.name.clone()).or_default().push(tags.len());
                tags.push((f, k));
            }
        }
        Overlay {
            files,
            tags,
            by_name,
        }
    }

    fn tag(&self, t: usize) -> &Tag {
        let (f, k) = self.tags[t];
        &self.files[f].tags[k]
    }
}

/// An index ready for queries: the disk layers of one generation, the in-memory overlay,
/// and the merged list of live files (sorted by path) that queries see.
pub struct Index {
    main: Option<Store>,
    delta: Option<Store>,
    overlay: Overlay,
    /// Live files: (layer, index in that layer), sorted by path.
    files: Vec<(Layer, usize)>,
    /// Per layer, for each of its files, its position in `files` (None when superseded by
    /// a newer layer, deleted, or a tombstone).
    live: [Vec<Option<usize>>; 3],
    pub freshness: Freshness,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("files", &self.files.len())
            .field("overlay", &self.overlay.files.len())
            .field("freshness", &self.freshness)
            .finish_non_exhaustive()
    }
}

impl Index {
    /// Opens the index for a query. Never writes: files that changed since they were
    /// indexed are re-tagged in memory for this answer, deleted ones are hidden, and with
    /// no usable index on disk the whole tree is tagged in memory.
    ///
    /// An unusable index on disk (see [`Index::on_disk`]) is not an error here: the tree
    /// is tagged in memory, and the freshness says why (`recovered`).
    pub fn open(root: &Root) -> Result<Index, Error> {
        let disk = match Index::on_disk(root) {
            Ok(disk) => disk,
            Err(e) if is_missing(&e) => return Index::in_memory(root),
            Err(e) => return Index::without_disk(root, &e),
        };
        match Index::over_disk(root, disk) {
            Err(e @ Error::IndexCorrupt { .. }) => Index::without_disk(root, &e),
            other => other,
        }
    }

    /// The disk layers with the files that changed since they were indexed re-tagged in
    /// memory and the deleted ones hidden.
    fn over_disk(root: &Root, disk: Index) -> Result<Index, Error> {
        // Touched files (stamp moved, content not) answer from disk as they are; only a
        // refresh records their new stamps.
        let (changed, _touched, deleted) = stale_files(root, &disk);
        if changed.is_empty() && deleted.is_empty() {
            return Ok(disk);
        }
        let mut rels = Vec::new();
        let mut jobs = Vec::new();
        for rel in &changed {
            let abs = root.path().join(rel);
            if let (Some(i), Some((size, mtime_ns))) = (disk.file_index(rel), stamp(&abs)) {
                rels.push(rel.clone());
                jobs.push(Job {
                    abs,
                    rel: rel.clone(),
                    size,
                    mtime_ns,
                    old: Some(disk.entry(i)?),
                });
            }
        }
        let mut hidden: BTreeSet<String> = deleted.iter().cloned().collect();
        let mut overlay = Vec::new();
        for (rel, outcome) in rels.into_iter().zip(run_jobs(jobs)) {
            match outcome {
                Outcome::Touched(e) | Outcome::Tagged(e) => overlay.push(e),
                Outcome::Gone | Outcome::Unreadable(_) => {
                    hidden.insert(rel);
                }
            }
        }
        let Index { main, delta, .. } = disk;
        let mut index = Index::assemble(main, delta, overlay, &hidden)?;
        index.freshness.reindexed = changed;
        index.freshness.deleted = deleted.len();
        Ok(index)
    }

    /// The layers on disk as one consistent snapshot, without checking files. An error
    /// when there is no usable index: `Error::Io` (not found when there is none yet) or
    /// `Error::IndexCorrupt`. The parts of the files every query reads are checked here;
    /// the rest is checked as it is read, so a later read can still fail with
    /// `Error::IndexCorrupt` (see `store`).
    pub(crate) fn on_disk(root: &Root) -> Result<Index, Error> {
        let (main, delta) = read_snapshot(root)?;
        Index::assemble(Some(main), delta, Vec::new(), &BTreeSet::new())
    }

    /// Checks every piece of the layers on disk against its checksum, which queries only
    /// do for the pieces they read.
    pub(crate) fn verify(&self) -> Result<(), Error> {
        for store in [&self.main, &self.delta].into_iter().flatten() {
            store.verify()?;
        }
        Ok(())
    }

    /// Every source file under the root, tagged in memory.
    fn in_memory(root: &Root) -> Result<Index, Error> {
        let mut index = Index::tagged(source_files(root)?.jobs, IN_MEMORY_NOTE)?;
        index.freshness.indexed_at = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Ok(index)
    }

    /// Every source file under the root tagged in memory, ignoring the index on disk,
    /// which `problem` (an [`Error::IndexCorrupt`]) says is unusable: what a reader that
    /// may not write answers from. The freshness says why (`recovered`).
    pub(crate) fn without_disk(root: &Root, problem: &Error) -> Result<Index, Error> {
        let mut index = Index::in_memory(root)?;
        index.freshness.recovered = Some(format!(
            "{problem}; every source file was tagged in memory for this answer"
        ));
        Ok(index)
    }

    /// An index of `jobs` tagged in memory, with no disk layer.
    fn tagged(jobs: Vec<Job>, note: &'static str) -> Result<Index, Error> {
        let entries: Vec<FileEntry> = run_jobs(jobs)
            .into_iter()
            .filter_map(|o| match o {
                Outcome::Tagged(e) | Outcome::Touched(e) => Some(e),
                Outcome::Gone | Outcome::Unreadable(_) => None,
            })
            .collect();
        let mut index = Index::assemble(None, None, entries, &BTreeSet::new())?;
        index.freshness.note = note;
        Ok(index)
    }

    /// Whether an index has been written under the root (usable or not).
    pub fn exists(root: &Root) -> bool {
        root.path().join(INDEX_FILE).is_file()
    }

    /// An index of the source files that mention any of `names` as a word, tagged in
    /// memory: every definition and reference of those names is in one of them, so it
    /// answers `defs` and `refs` for them exactly as the full index would, long before a
    /// full index of a large repository exists.
    pub fn for_names(root: &Root, names: &[String]) -> Result<Index, Error> {
        let found = super::search::search_words(root, names)?;
        let files: Vec<&str> = found
            .files
            .iter()
            .map(|f| f.path.as_str())
            .filter(|p| super::languages::for_path(std::path::Path::new(p)).is_some())
            .collect();
        let mut index = Index::for_files(root, &files)?;
        index.freshness.note = CANDIDATES_NOTE;
        Ok(index)
    }

    /// An index of just these files (client paths, confined to the root), tagged in
    /// memory: what file-scoped questions answer from while the full index is being built.
    pub fn for_files(root: &Root, files: &[&str]) -> Result<Index, Error> {
        let mut jobs = Vec::new();
        for file in files {
            let abs = root.resolve(file)?;
            if let Some((size, mtime_ns)) = stamp(&abs) {
                jobs.push(Job {
                    rel: root.relative(&abs),
                    abs,
                    size,
                    mtime_ns,
                    old: None,
                });
            }
        }
        Index::tagged(jobs, PARTIAL_NOTE)
    }

    /// Merges the layers: for each path the newest layer wins (overlay, delta, main);
    /// `hidden` paths and tombstones are dropped. Fails only when the delta's languages
    /// (which mark tombstones) cannot be read.
    fn assemble(
        main: Option<Store>,
        delta: Option<Store>,
        overlay: Vec<FileEntry>,
        hidden: &BTreeSet<String>,
    ) -> Result<Index, Error> {
        let overlay = Overlay::new(overlay);
        let mut files: Vec<(Layer, usize)> = (0..overlay.files.len())
            .map(|i| (Layer::Overlay, i))
            .collect();
        let mut shadowed: HashSet<&str> = hidden.iter().map(String::as_str).collect();
        shadowed.extend(overlay.files.iter().map(|f| f.path.as_str()));
        if let Some(d) = &delta {
            for j in 0..d.file_count() {
                if !shadowed.contains(d.file_path(j)) && d.file_language(j)? != TOMBSTONE {
                    files.push((Layer::Delta, j));
                }
            }
            shadowed.extend((0..d.file_count()).map(|j| d.file_path(j)));
        }
        if let Some(m) = &main {
            files.extend(
                (0..m.file_count())
                    .filter(|i| shadowed.is_empty() || !shadowed.contains(m.file_path(*i)))
                    .map(|i| (Layer::Main, i)),
            );
        }
        drop(shadowed);
        // The main layer alone is already in path order.
        if delta.is_some() || !overlay.files.is_empty() {
            let path = |&(layer, i): &(Layer, usize)| match layer {
                Layer::Main => main.as_ref().map_or("", |m| m.file_path(i)),
                Layer::Delta => delta.as_ref().map_or("", |d| d.file_path(i)),
                Layer::Overlay => overlay.files[i].path.as_str(),
            };
            files.sort_by(|a, b| path(a).cmp(path(b)));
        }
        let mut live = [
            vec![None; main.as_ref().map_or(0, Store::file_count)],
            vec![None; delta.as_ref().map_or(0, Store::file_count)],
            vec![None; overlay.files.len()],
        ];
        for (k, &(layer, i)) in files.iter().enumerate() {
            live[layer as usize][i] = Some(k);
        }
        let indexed_at = [&main, &delta]
            .into_iter()
            .flatten()
            .map(|s| s.built_unix)
            .max()
            .unwrap_or(0);
        let freshness = Freshness {
            indexed_at,
            files_indexed: files.len(),
            reindexed: Vec::new(),
            deleted: 0,
            note: FRESHNESS_NOTE,
            unsaved: None,
            recovered: None,
        };
        Ok(Index {
            main,
            delta,
            overlay,
            files,
            live,
            freshness,
        })
    }

    fn store(&self, layer: Layer) -> Option<&Store> {
        match layer {
            Layer::Main => self.main.as_ref(),
            Layer::Delta => self.delta.as_ref(),
            Layer::Overlay => None,
        }
    }

    pub(crate) fn file_count(&self) -> usize {
        self.files.len()
    }

    pub(crate) fn file_path(&self, i: usize) -> &str {
        let (layer, j) = self.files[i];
        self.path_in(layer, j)
    }

    fn path_in(&self, layer: Layer, j: usize) -> &str {
        match layer {
            Layer::Overlay => &self.overlay.files[j].path,
            layer => self.store(layer).map_or("", |s| s.file_path(j)),
        }
    }

    pub(crate) fn file_language(&self, i: usize) -> Result<String, Error> {
        match self.files[i] {
            (Layer::Overlay, j) => Ok(self.overlay.files[j].language.clone()),
            (layer, j) => self
                .store(layer)
                .map_or_else(|| Ok(String::new()), |s| s.file_language(j)),
        }
    }

    pub(crate) fn file_tags(&self, i: usize) -> Result<Vec<Tag>, Error> {
        match self.files[i] {
            (Layer::Overlay, j) => Ok(self.overlay.files[j].tags.clone()),
            (layer, j) => self
                .store(layer)
                .map_or_else(|| Ok(Vec::new()), |s| s.file_tags(j)),
        }
    }

    pub(crate) fn file_tag_count(&self, i: usize) -> usize {
        match self.files[i] {
            (Layer::Overlay, j) => self.overlay.files[j].tags.len(),
            (layer, j) => self.store(layer).map_or(0, |s| s.file_tag_count(j)),
        }
    }

    /// `(size, mtime_ns, sha256)` of file `i` when it was indexed.
    pub(crate) fn file_stamp(&self, i: usize) -> (u64, u64, [u8; 32]) {
        match self.files[i] {
            (Layer::Overlay, j) => {
                let f = &self.overlay.files[j];
                (f.size, f.mtime_ns, f.hash)
            }
            (layer, j) => self
                .store(layer)
                .map_or((0, 0, [0; 32]), |s| s.file_stamp(j)),
        }
    }

    /// The position of a root-relative path among the live files.
    pub(crate) fn file_index(&self, rel: &str) -> Option<usize> {
        self.files
            .binary_search_by(|&(layer, j)| self.path_in(layer, j).cmp(rel))
            .ok()
    }

    /// File `i`, decoded with its tags.
    pub(crate) fn entry(&self, i: usize) -> Result<FileEntry, Error> {
        match self.files[i] {
            (Layer::Overlay, j) => Ok(self.overlay.files[j].clone()),
            (layer, j) => self.store(layer).map_or_else(
                || {
                    Ok(FileEntry {
                        path: String::new(),
                        size: 0,
                        mtime_ns: 0,
                        hash: [0; 32],
                        language: String::new(),
                        tags: Vec::new(),
                    })
                },
                |s| s.entry(j),
            ),
        }
    }

    /// The generation of the main layer on disk (0 when there is none).
    pub(crate) fn generation(&self) -> u64 {
        self.main.as_ref().map_or(0, |m| m.generation)
    }

    /// How many files the main layer on disk holds.
    pub(crate) fn main_file_count(&self) -> usize {
        self.main.as_ref().map_or(0, Store::file_count)
    }

    /// Every entry of the main layer (for a fold).
    pub(crate) fn main_entries(&self) -> Result<Vec<FileEntry>, Error> {
        self.main
            .as_ref()
            .map_or_else(|| Ok(Vec::new()), Store::entries)
    }

    /// Every entry of the delta layer, tombstones included (for the next delta).
    pub(crate) fn delta_entries(&self) -> Result<Vec<FileEntry>, Error> {
        self.delta
            .as_ref()
            .map_or_else(|| Ok(Vec::new()), Store::entries)
    }

    /// The live tags named `name`: definitions first, then references, each in path order
    /// and, within a file, in source order, whatever layer they come from.
    pub(crate) fn lookup(&self, name: &str) -> Result<Vec<TagRef>, Error> {
        let mut found: Vec<(bool, usize, TagRef)> = Vec::new();
        for layer in [Layer::Main, Layer::Delta] {
            let Some(store) = self.store(layer) else {
                continue;
            };
            for t in store.lookup(name)? {
                let (file, def) = store.tag_file_and_kind(t)?;
                if let Some(pos) = self.live[layer as usize].get(file).copied().flatten() {
                    found.push((def, pos, TagRef { layer, tag: t }));
                }
            }
        }
        for &t in self.overlay.by_name.get(name).into_iter().flatten() {
            let (file, _) = self.overlay.tags[t];
            if let Some(pos) = self.live[Layer::Overlay as usize][file] {
                let r = TagRef {
                    layer: Layer::Overlay,
                    tag: t,
                };
                found.push((self.overlay.tag(t).is_definition, pos, r));
            }
        }
        found.sort_by_key(|&(def, pos, r)| (!def, pos, r.tag));
        Ok(found.into_iter().map(|(_, _, r)| r).collect())
    }

    pub(crate) fn is_definition(&self, r: TagRef) -> Result<bool, Error> {
        match r.layer {
            Layer::Overlay => Ok(self.overlay.tag(r.tag).is_definition),
            layer => self
                .store(layer)
                .map_or(Ok(false), |s| s.is_definition(r.tag)),
        }
    }

    /// A tag and the position of its file among the live files.
    pub(crate) fn tag(&self, r: TagRef) -> Result<(Tag, usize), Error> {
        let (tag, file) = match r.layer {
            Layer::Overlay => (self.overlay.tag(r.tag).clone(), self.overlay.tags[r.tag].0),
            layer => {
                let Some(store) = self.store(layer) else {
                    return Ok((empty_tag(), 0));
                };
                let stored = store.tag(r.tag)?;
                (stored.tag, stored.file)
            }
        };
        let live = &self.live[r.layer as usize];
        Ok((tag, live.get(file).copied().flatten().unwrap_or(0)))
    }
}

/// Whether opening the index failed only because there is none yet.
pub(crate) fn is_missing(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
}

fn empty_tag() -> Tag {
    Tag {
        name: String::new(),
        kind: String::new(),
        is_definition: false,
        line: 0,
        column: 0,
        end_line: 0,
        start_line: 0,
        signature: String::new(),
        scope: None,
        qualifier: None,
    }
}

/// Opens the main index and the delta as a consistent pair, or why there is no usable
/// index (missing, corrupt, older format).
///
/// A fold renames a new main index over the old one and then removes the delta, so a
/// reader can open the old main and then find no delta, or the new main and then the old
/// delta. Both headers carry a generation (a delta carries its main's), and after opening
/// both the reader checks that the file now at the main path is still the generation it
/// opened: if not, a fold happened in between and it starts again. A delta of another
/// generation than a current main is a leftover of a fold whose files the main already
/// holds (a writer killed between the rename and the removal), so it is ignored.
fn read_snapshot(root: &Root) -> Result<(Store, Option<Store>), Error> {
    read_snapshot_with(root, || {})
}

/// [`read_snapshot`], running `between` after opening the main index and before opening
/// the delta: where a concurrent fold does harm, so tests can put one there.
fn read_snapshot_with(
    root: &Root,
    mut between: impl FnMut(),
) -> Result<(Store, Option<Store>), Error> {
    let main_path = root.path().join(INDEX_FILE);
    let delta_path = root.path().join(DELTA_FILE);
    for attempt in 0..SNAPSHOT_ATTEMPTS {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let main = Store::open(&main_path)?;
        between();
        let delta = match Store::open(&delta_path) {
            Ok(d) => Some(d),
            Err(e) if is_missing(&e) => None,
            Err(e) => return Err(e),
        };
        if Store::generation_at(&main_path) != Some(main.generation) {
            continue;
        }
        let delta = delta.filter(|d| d.generation == main.generation);
        return Ok((main, delta));
    }
    Err(Error::IndexCorrupt {
        path: main_path,
        reason: format!("it was replaced {SNAPSHOT_ATTEMPTS} times while being opened"),
    })
}

/// Indexed files whose content changed (stamp moved and hash differs), files whose stamp
/// moved but content did not (re-recorded so they are not hashed again), and deleted files.
pub(crate) fn stale_files(root: &Root, index: &Index) -> (Vec<String>, Vec<String>, Vec<String>) {
    let n = index.file_count();
    let threads = std::thread::available_parallelism()
        .map_or(2, std::num::NonZero::get)
        .min(n.max(1));
    let chunk = n.div_ceil(threads.max(1)).max(1);
    let results: Vec<[Vec<String>; 3]> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    let [mut changed, mut touched, mut deleted] =
                        [Vec::new(), Vec::new(), Vec::new()];
                    for i in (t * chunk)..((t + 1) * chunk).min(n) {
                        let rel = index.file_path(i);
                        let abs = root.path().join(rel);
                        let (size, mtime_ns, hash) = index.file_stamp(i);
                        match stamp(&abs) {
                            None => deleted.push(rel.to_string()),
                            Some((s, m)) if s == size && m == mtime_ns => {}
                            Some(_) => {
                                if std::fs::read(&abs).map(|b| sha256(&b)).ok() == Some(hash) {
                                    touched.push(rel.to_string());
                                } else {
                                    changed.push(rel.to_string());
                                }
                            }
                        }
                    }
                    [changed, touched, deleted]
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut out: [Vec<String>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for r in results {
        for (o, v) in out.iter_mut().zip(r) {
            o.extend(v);
        }
    }
    for v in &mut out {
        v.sort();
    }
    let [changed, touched, deleted] = out;
    (changed, touched, deleted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codeintel::refresh::refresh;

    /// A temporary directory removed when the test ends, pass or fail.
    struct TempDir(std::path::PathBuf);

    impl std::ops::Deref for TempDir {
        type Target = std::path::Path;

        fn deref(&self) -> &std::path::Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn repo(name: &str, files: usize) -> (TempDir, Root) {
        let dir =
            std::env::temp_dir().join(format!("code-intel-snapshot-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for k in 0..files {
            std::fs::write(dir.join(format!("m{k}.rs")), format!("fn f{k}() {{}}\n")).unwrap();
        }
        let root = Root::open(&dir).unwrap();
        (TempDir(dir), root)
    }

    /// The MCP server shares one `Index` between concurrent tool calls.
    #[test]
    fn an_index_can_be_shared_between_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<Index>();
    }

    /// A fold between opening the main index and opening the delta (the old main, then no
    /// delta) must not pair the old main with nothing: the reader starts again.
    #[test]
    fn a_fold_between_the_two_opens_makes_the_reader_retry() {
        let (dir, root) = repo("fold", 10);
        refresh(&root).unwrap();
        std::fs::write(dir.join("new.rs"), "fn new_file() {}\n").unwrap();
        refresh(&root).unwrap();
        assert!(
            dir.join(DELTA_FILE).exists(),
            "the new file went to the delta"
        );
        let mut folded = false;
        let (main, delta) = read_snapshot_with(&root, || {
            if !folded {
                folded = true;
                for k in 0..100 {
                    std::fs::write(dir.join(format!("g{k}.rs")), "fn g() {}\n").unwrap();
                }
                refresh(&root).unwrap();
                assert!(!dir.join(DELTA_FILE).exists(), "that refresh folded");
            }
        })
        .unwrap();
        assert_eq!(
            Some(main.generation),
            Store::generation_at(&dir.join(INDEX_FILE))
        );
        assert!(delta.is_none());
        let index = Index::assemble(Some(main), delta, Vec::new(), &BTreeSet::new()).unwrap();
        assert!(
            index.file_index("new.rs").is_some(),
            "the delta's file is in the new main"
        );
    }

    /// A delta of another generation than the main index it sits next to (a writer killed
    /// between a fold's rename and its removal of the delta) is ignored: the main index
    /// already holds its files.
    #[test]
    fn a_delta_of_another_generation_is_ignored() {
        let (dir, root) = repo("orphan", 10);
        refresh(&root).unwrap();
        std::fs::write(dir.join("m3.rs"), "fn changed() {}\n").unwrap();
        refresh(&root).unwrap();
        let delta = std::fs::read(dir.join(DELTA_FILE)).unwrap();
        std::fs::remove_file(dir.join(DELTA_FILE)).unwrap();
        for k in 0..100 {
            std::fs::write(dir.join(format!("g{k}.rs")), "fn g() {}\n").unwrap();
        }
        refresh(&root).unwrap();
        std::fs::write(dir.join(DELTA_FILE), delta).unwrap();
        let (main, delta) = read_snapshot(&root).unwrap();
        assert!(delta.is_none());
        let index = Index::assemble(Some(main), None, Vec::new(), &BTreeSet::new()).unwrap();
        assert!(index.file_index("g99.rs").is_some());
    }
}
