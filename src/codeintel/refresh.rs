//! The symbol index, write side: bringing `.code-intel/` up to date with the tree. The
//! only code that writes the index, always under the index lock (`lock::WriteLock`).
//!
//! A refresh walks the tree, re-tags files whose content hash changed (on every core) and
//! writes only the delta; when the delta passes an eighth of the files (at least 64) it is
//! folded into a new main index of the next generation, and the delta is removed.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::error::Error;
use super::index::{DELTA_FILE, INDEX_FILE, Index, TOMBSTONE, is_missing, stale_files};
use super::lock::WriteLock;
pub(crate) use super::retag::Progress;
use super::retag::{Job, Outcome, run_jobs, run_jobs_with, source_files, stamp};
use super::root::Root;
use super::search::Skipped;
use super::store::{self, FileEntry, Store};

/// The delta is folded into the main index once it holds this share of the files (1/8).
const DELTA_SHARE: usize = 8;
/// ... or this many files, whichever is larger.
const DELTA_MIN: usize = 64;

/// What a refresh of the whole tree did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpdateReport {
    /// Source files the index covers now.
    pub files: usize,
    /// Files whose size and mtime were unchanged.
    pub unchanged: usize,
    /// Files whose stamp moved but whose content hash did not.
    pub touched: usize,
    /// Files (re-)tagged because they are new or their content changed.
    pub tagged: usize,
    /// Files dropped because they were deleted or are no longer source files.
    pub removed: usize,
    /// Files skipped for being larger than the size limit.
    pub too_large: usize,
    /// What was not indexed and why: those files, and what could not be read (a
    /// directory that cannot be listed, a file that cannot be opened), by path.
    pub skipped: Skipped,
    pub tags: usize,
    pub elapsed_ms: u64,
    /// Whether there was no usable index before.
    pub from_scratch: bool,
    /// When the index on disk was unusable (damaged, truncated, another format) and was
    /// rebuilt: what was wrong with it.
    pub recovered: Option<String>,
}

/// Brings the index up to date with the files under the root: walks the tree, re-tags
/// new and changed files, drops deleted ones, and writes the delta (or a new main index
/// when the delta has grown large, or there was no index). What `code-intel index` does.
pub fn refresh(root: &Root) -> Result<UpdateReport, Error> {
    refresh_with_progress(root, None)
}

/// [`refresh`], counting tagged files into `progress` as it goes.
pub(crate) fn refresh_with_progress(
    root: &Root,
    progress: Option<&Progress>,
) -> Result<UpdateReport, Error> {
    let start = Instant::now();
    let _lock = WriteLock::acquire(root)?;
    clean_up(root);
    refresh_tree(root, start, progress, Index::on_disk(root))
}

/// Builds the index again from the source files, whatever is on disk: every file is
/// re-tagged and a new main index (of the next generation) replaces the old one and its
/// delta. What `--rebuild` asks for, when the user no longer trusts the index.
pub(crate) fn rebuild(root: &Root) -> Result<UpdateReport, Error> {
    let start = Instant::now();
    let _lock = WriteLock::acquire(root)?;
    clean_up(root);
    // As if there were no index: nothing of the old one is kept, and nothing about it is
    // reported as recovered.
    let none = Error::io(
        root.path().join(INDEX_FILE),
        std::io::Error::from(std::io::ErrorKind::NotFound),
    );
    refresh_tree_over(root, start, None, Err(none))
}

/// Re-tags the indexed files that changed and drops the deleted ones, without walking
/// the tree for new files (they wait for [`refresh`]); builds the index when there is
/// none. Returns the index as written, ready to answer from: it was checked under the
/// lock, so it needs no second look (its freshness lists what this refresh re-tagged).
/// What the CLI's query commands do before answering.
pub(crate) fn refresh_changed(root: &Root) -> Result<Index, Error> {
    refresh_changed_checking(root, Check::AsRead)
}

/// [`refresh_changed`] after a query found a part of the index on disk that does not
/// match its checksum: every part is checked first, and an index that fails is rebuilt
/// from the source files (one another writer rebuilt meanwhile passes, and is kept). The
/// index returned says what was wrong (`freshness.recovered`).
pub(crate) fn repair(root: &Root) -> Result<Index, Error> {
    refresh_changed_checking(root, Check::Whole)
}

/// [`repair`], or, when the index cannot be rebuilt on disk (a read-only `.code-intel/`),
/// every source file tagged in memory, its freshness saying why nothing was saved. What
/// the CLI and the server both do after a query met `problem`, a corrupt piece.
pub(crate) fn repair_or_in_memory(root: &Root, problem: &Error) -> Result<Index, Error> {
    repair(root).or_else(|e| {
        let mut index = Index::without_disk(root, problem)?;
        index.freshness.unsaved = Some(format!("the index could not be rebuilt ({e})"));
        Ok(index)
    })
}

/// How much of the index on disk a refresh checks before building on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// What opening checks, then each piece as it is read.
    AsRead,
    /// Every piece first.
    Whole,
}

fn refresh_changed_checking(root: &Root, check: Check) -> Result<Index, Error> {
    let start = Instant::now();
    let _lock = WriteLock::acquire(root)?;
    clean_up(root);
    let current = Index::on_disk(root).and_then(|index| match check {
        Check::AsRead => Ok(index),
        Check::Whole => index.verify().map(|()| index),
    });
    let current = match current {
        Ok(current) => current,
        Err(e) => return rebuilt(root, start, Err(e)),
    };
    match update_changed(root, current) {
        // A piece of the index read only now does not match its checksum.
        Err(e @ Error::IndexCorrupt { .. }) => rebuilt(root, start, Err(e)),
        other => other,
    }
}

/// The whole tree refreshed over `current` (from scratch when it is an error), and the
/// index written, saying what was wrong with the old one.
fn rebuilt(root: &Root, start: Instant, current: Result<Index, Error>) -> Result<Index, Error> {
    let report = refresh_tree(root, start, None, current)?;
    let mut index = reopen(root)?;
    index.freshness.recovered = report.recovered;
    Ok(index)
}

/// Re-tags the files of `current` that changed and writes the result (the lock is held);
/// `current` itself when nothing changed.
fn update_changed(root: &Root, current: Index) -> Result<Index, Error> {
    let (changed, touched, deleted) = stale_files(root, &current);
    if changed.is_empty() && touched.is_empty() && deleted.is_empty() {
        return Ok(current);
    }
    let mut jobs = Vec::new();
    for rel in changed.iter().chain(&touched) {
        let abs = root.path().join(rel);
        if let (Some(i), Some((size, mtime_ns))) = (current.file_index(rel), stamp(&abs)) {
            jobs.push(Job {
                abs,
                rel: rel.clone(),
                size,
                mtime_ns,
                old: Some(current.entry(i)?),
            });
        }
    }
    write_changes(root, Some(&current), run_jobs(jobs), &deleted)?;
    let mut index = reopen(root)?;
    index.freshness.reindexed = changed;
    index.freshness.deleted = deleted.len();
    Ok(index)
}

/// The index just written, read back.
fn reopen(root: &Root) -> Result<Index, Error> {
    Index::on_disk(root).map_err(|e| Error::IndexCorrupt {
        path: root.path().join(INDEX_FILE),
        reason: format!("unreadable right after it was written ({e})"),
    })
}

/// Removes what dead writers left, if no writer is at work now (never waits): for readers
/// that do not refresh, such as a name lookup before any index exists.
pub(crate) fn clean_up_if_idle(root: &Root) {
    // No `.code-intel/`, nothing to clean: a read must not create it (or a lock file).
    if !root.path().join(".code-intel").is_dir() {
        return;
    }
    if let Some(_lock) = WriteLock::try_acquire(root) {
        clean_up(root);
    }
}

/// Removes what dead writers left: temp files (`symbols.*.tmp*`), and a delta of another
/// generation than the main index (a writer killed between a fold's rename and its
/// removal of the delta). Called with the lock held, so no live writer owns them.
fn clean_up(root: &Root) {
    let dir = root.path().join(".code-intel");
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            if e.file_name().to_str().is_some_and(store::is_temp) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let main = Store::generation_at(&root.path().join(INDEX_FILE));
    let delta_path = root.path().join(DELTA_FILE);
    if let (Some(m), Some(d)) = (main, Store::generation_at(&delta_path))
        && m != d
    {
        let _ = std::fs::remove_file(&delta_path);
    }
}

/// Refreshes the whole tree over `current`, the layers on disk (or why there are none
/// usable: then from scratch). When a piece of `current` read only now does not match its
/// checksum, starts again from scratch.
fn refresh_tree(
    root: &Root,
    start: Instant,
    progress: Option<&Progress>,
    current: Result<Index, Error>,
) -> Result<UpdateReport, Error> {
    if current.is_err() {
        return refresh_tree_over(root, start, progress, current);
    }
    match refresh_tree_over(root, start, progress, current) {
        Err(e @ Error::IndexCorrupt { .. }) => refresh_tree_over(root, start, progress, Err(e)),
        other => other,
    }
}

fn refresh_tree_over(
    root: &Root,
    start: Instant,
    progress: Option<&Progress>,
    current: Result<Index, Error>,
) -> Result<UpdateReport, Error> {
    let recovered = match &current {
        Err(e) if !is_missing(e) => Some(format!("{e}; it was rebuilt from the source files")),
        _ => None,
    };
    let current = current.ok();
    let mut report = UpdateReport {
        from_scratch: current.is_none(),
        recovered,
        ..UpdateReport::default()
    };
    let known: HashMap<String, usize> = current
        .as_ref()
        .map(|ix| {
            (0..ix.file_count())
                .map(|i| (ix.file_path(i).to_string(), i))
                .collect()
        })
        .unwrap_or_default();
    let mut seen = vec![false; known.len()];
    let sources = source_files(root)?;
    report.too_large = sources.too_large;
    report.skipped = sources.skipped;
    let mut jobs = Vec::new();
    for mut job in sources.jobs {
        if let (Some(&i), Some(ix)) = (known.get(&job.rel), current.as_ref()) {
            seen[i] = true;
            let (size, mtime_ns, _) = ix.file_stamp(i);
            if (size, mtime_ns) == (job.size, job.mtime_ns) {
                report.unchanged += 1;
                continue;
            }
            job.old = Some(ix.entry(i)?);
        }
        jobs.push(job);
    }
    let removed: Vec<String> = known
        .iter()
        .filter(|(_, i)| !seen[**i])
        .map(|(p, _)| p.clone())
        .collect();
    report.removed = removed.len();
    let changes = run_jobs_with(jobs, progress);
    for c in &changes {
        match c {
            Outcome::Touched(_) => report.touched += 1,
            Outcome::Tagged(_) => report.tagged += 1,
            Outcome::Gone => {}
            Outcome::Unreadable(p) => report.skipped.paths.push(p.clone()),
        }
    }
    report.skipped.sort();
    write_changes(root, current.as_ref(), changes, &removed)?;
    let now = reopen(root)?;
    report.files = now.file_count();
    report.tags = (0..now.file_count()).map(|i| now.file_tag_count(i)).sum();
    report.elapsed_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(report)
}

/// Writes changed and removed files: into the delta, or, when there is no index yet or the
/// delta would grow past its share, into a new main index (then the delta is removed).
fn write_changes(
    root: &Root,
    current: Option<&Index>,
    changes: Vec<Outcome>,
    removed: &[String],
) -> Result<(), Error> {
    super::gitignore::ensure_gitignore(root.path())
        .map_err(|e| Error::io(root.path().join(super::state_dir::STATE_DIR), e))?;
    let main_path = root.path().join(INDEX_FILE);
    let delta_path = root.path().join(DELTA_FILE);
    let mut delta: BTreeMap<String, FileEntry> = current
        .map(Index::delta_entries)
        .transpose()?
        .unwrap_or_default()
        .into_iter()
        .map(|e| (e.path.clone(), e))
        .collect();
    for c in changes {
        if let Outcome::Touched(e) | Outcome::Tagged(e) = c {
            delta.insert(e.path.clone(), e);
        }
    }
    for path in removed {
        delta.insert(
            path.clone(),
            FileEntry {
                path: path.clone(),
                size: 0,
                mtime_ns: 0,
                hash: [0; 32],
                language: TOMBSTONE.to_string(),
                tags: Vec::new(),
            },
        );
    }
    let main_files = current.map_or(0, Index::main_file_count);
    let fold = current.is_none() || delta.len() > DELTA_MIN.max(main_files / DELTA_SHARE);
    let built = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    if fold {
        // A new main index: every current file, with the delta applied, in path order.
        let mut all: BTreeMap<String, FileEntry> = current
            .map(|ix| main_entries(&main_path, ix))
            .transpose()?
            .unwrap_or_default()
            .into_iter()
            .map(|e| (e.path.clone(), e))
            .collect();
        for (path, e) in delta {
            if e.language == TOMBSTONE {
                all.remove(&path);
            } else {
                all.insert(path, e);
            }
        }
        let entries: Vec<FileEntry> = all.into_values().collect();
        let generation = next_generation(current.map(Index::generation), built.as_nanos());
        store::write(&main_path, &entries, built.as_secs(), generation)
            .map_err(|e| Error::io(&main_path, e))?;
        // After the rename: a reader that still finds this delta sees its generation is
        // not the new main's and ignores it (see `index::read_snapshot`).
        return remove_if_present(&delta_path);
    }
    let entries: Vec<FileEntry> = delta.into_values().collect();
    let generation = current.map_or(0, Index::generation);
    store::write(&delta_path, &entries, built.as_secs(), generation)
        .map_err(|e| Error::io(&delta_path, e))
}

/// Every file of the current main index, read whole into memory (and checked whole) when
/// the file at its path is still the one `current` opened (it is, under the lock, unless
/// someone else edits `.code-intel/`), else decoded piece by piece from the open file.
fn main_entries(main_path: &Path, current: &Index) -> Result<Vec<FileEntry>, Error> {
    match Store::read(main_path) {
        Ok(store) if store.generation == current.generation() => store.entries(),
        _ => current.main_entries(),
    }
}

/// A new main index's generation: above the old one, and above any earlier index of this
/// root even when `.code-intel/` was deleted meanwhile (the clock, in nanoseconds).
fn next_generation(old: Option<u64>, now_ns: u128) -> u64 {
    let now = u64::try_from(now_ns).unwrap_or(u64::MAX);
    old.map_or(now, |g| g.saturating_add(1).max(now))
}

fn remove_if_present(path: &Path) -> Result<(), Error> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(path, e)),
        _ => Ok(()),
    }
}
