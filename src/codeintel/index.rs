//! The symbol index: tree-sitter tags of every source file under the root, built in
//! parallel, persisted under `.code-intel/`, updated by content hash.
//!
//! Two layers, like a small log-structured store: the main index (`symbols.idx`) and a
//! delta (`symbols.delta`) holding files re-tagged since the main index was written, and
//! tombstones for deleted ones. An update writes only the delta, so re-indexing one
//! changed file costs that file, not the tree; when the delta grows past a share of the
//! tree, an update folds it into a new main index.
//!
//! Freshness: before answering, every indexed file's size and mtime are compared with the
//! index; a file whose stamp moved is hashed, and re-tagged only when its content changed.
//! So no answer ever comes from a file that changed since it was indexed. Files created
//! after the last update are picked up by the next `update` (`code-intel index`).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use super::error::Error;
use super::languages;
use super::root::Root;
use super::search::walk_files;
use super::store::{FileEntry, Store, write};
use super::tags::Tagger;

/// Where the main index lives, relative to the root.
pub const INDEX_FILE: &str = ".code-intel/symbols.idx";
/// Where the delta lives, relative to the root.
pub const DELTA_FILE: &str = ".code-intel/symbols.delta";
/// The language of a delta entry that records a deleted file.
const TOMBSTONE: &str = "-";
/// The delta is folded into the main index once it holds this share of the files (1/8).
const DELTA_SHARE: usize = 8;
/// ... or this many files, whichever is larger.
const DELTA_MIN: usize = 64;

/// Files larger than this are not tagged (generated or minified code).
pub const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;

/// What an update did.
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
    pub tags: usize,
    pub elapsed_ms: u64,
    /// Whether there was no usable index before.
    pub from_scratch: bool,
}

fn stamp(path: &Path) -> Option<(u64, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    let mtime = meta
        .modified()
        .ok()?
        .duration_since(UNIX_EPOCH)
        .ok()?
        .as_nanos();
    Some((meta.len(), u64::try_from(mtime).unwrap_or(u64::MAX)))
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    let digest = Sha256::digest(bytes);
    let mut out = [0u8; 32];
    out.copy_from_slice(&digest);
    out
}

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A job for the taggers: a file to read, hash and maybe tag.
struct Job {
    abs: PathBuf,
    rel: String,
    size: u64,
    mtime_ns: u64,
    old: Option<FileEntry>,
}

enum Outcome {
    Touched(FileEntry),
    Tagged(FileEntry),
    Gone,
}

/// Reads, hashes and (when the content changed) tags the jobs on every core.
fn run_jobs(jobs: Vec<Job>) -> Vec<Outcome> {
    let threads = std::thread::available_parallelism()
        .map_or(2, std::num::NonZero::get)
        .min(jobs.len().max(1));
    let next = AtomicUsize::new(0);
    let mut results: Vec<(usize, Outcome)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut tagger = Tagger::new();
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(job) = jobs.get(i) else { break };
                        out.push((i, process(&mut tagger, job)));
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, o)| o).collect()
}

fn process(tagger: &mut Tagger, job: &Job) -> Outcome {
    let Ok(bytes) = std::fs::read(&job.abs) else {
        return Outcome::Gone;
    };
    let hash = sha256(&bytes);
    if let Some(old) = &job.old
        && old.hash == hash
    {
        return Outcome::Touched(FileEntry {
            size: job.size,
            mtime_ns: job.mtime_ns,
            ..old.clone()
        });
    }
    let Some(language) = languages::for_path(&job.abs) else {
        return Outcome::Gone;
    };
    // A file that does not parse still yields what tree-sitter recovers; a tagging error
    // leaves the file indexed with no tags rather than failing the whole update.
    let tags = tagger.tag(language, &bytes).unwrap_or_default();
    Outcome::Tagged(FileEntry {
        path: job.rel.clone(),
        size: job.size,
        mtime_ns: job.mtime_ns,
        hash,
        language: language.name.to_string(),
        tags,
    })
}

/// Brings the index up to date with the files under the root: walks the tree, re-tags
/// new and changed files, drops deleted ones, and writes the delta (or a new main index
/// when the delta has grown large, or there was no index).
pub fn update(root: &Root) -> Result<UpdateReport, Error> {
    let start = Instant::now();
    let current = Index::load(root).ok();
    let from_scratch = current.is_none();
    let mut report = UpdateReport {
        from_scratch,
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
    let mut jobs = Vec::new();
    for abs in walk_files(root)? {
        if languages::for_path(&abs).is_none() {
            continue;
        }
        let Some((size, mtime_ns)) = stamp(&abs) else {
            continue;
        };
        if size > MAX_FILE_BYTES {
            report.too_large += 1;
            continue;
        }
        let rel = root.relative(&abs);
        let old = known.get(&rel).copied();
        if let Some(i) = old {
            seen[i] = true;
        }
        match (old, current.as_ref()) {
            (Some(i), Some(ix)) if ix.file_stamp(i).0 == size && ix.file_stamp(i).1 == mtime_ns => {
                report.unchanged += 1
            }
            (old, ix) => {
                let old = old.zip(ix).map(|(i, ix)| ix.entry(i));
                jobs.push(Job {
                    abs,
                    rel,
                    size,
                    mtime_ns,
                    old,
                });
            }
        }
    }
    let removed: Vec<String> = known
        .iter()
        .filter(|(_, i)| !seen[**i])
        .map(|(p, _)| p.clone())
        .collect();
    report.removed = removed.len();
    let changes = run_jobs(jobs);
    for c in &changes {
        match c {
            Outcome::Touched(_) => report.touched += 1,
            Outcome::Tagged(_) => report.tagged += 1,
            Outcome::Gone => {}
        }
    }
    write_changes(root, current.as_ref(), changes, &removed)?;
    let now = Index::load(root)?;
    report.files = now.file_count();
    report.tags = (0..now.file_count()).map(|i| now.file_tag_count(i)).sum();
    report.elapsed_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(report)
}

/// Writes changed and removed files: into the delta, or, when there is no index yet or the
/// delta would grow past its share, into a new main index.
fn write_changes(
    root: &Root,
    current: Option<&Index>,
    changes: Vec<Outcome>,
    removed: &[String],
) -> Result<(), Error> {
    let main_path = root.path().join(INDEX_FILE);
    let delta_path = root.path().join(DELTA_FILE);
    let mut delta: BTreeMap<String, FileEntry> = current
        .and_then(|ix| ix.delta.as_ref())
        .map(|_| {
            Store::read(&delta_path)
                .map(|d| d.entries())
                .unwrap_or_default()
        })
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
    let main_files = current.map_or(0, |ix| ix.main.file_count());
    let fold = current.is_none() || delta.len() > DELTA_MIN.max(main_files / DELTA_SHARE);
    let now = now_unix();
    if fold {
        // A new main index: every current file, with the delta applied, in path order.
        let mut all: BTreeMap<String, FileEntry> = match current {
            Some(_) => Store::read(&main_path)
                .map(|m| m.entries())
                .unwrap_or_default()
                .into_iter()
                .map(|e| (e.path.clone(), e))
                .collect(),
            None => BTreeMap::new(),
        };
        for (path, e) in delta {
            if e.language == TOMBSTONE {
                all.remove(&path);
            } else {
                all.insert(path, e);
            }
        }
        let entries: Vec<FileEntry> = all.into_values().collect();
        write(&main_path, &entries, now).map_err(|e| Error::io(&main_path, e))?;
        let _ = std::fs::remove_file(&delta_path);
        return Ok(());
    }
    let entries: Vec<FileEntry> = delta.into_values().collect();
    write(&delta_path, &entries, now).map_err(|e| Error::io(&delta_path, e))
}

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
}

const FRESHNESS_NOTE: &str = "every indexed file was checked against the index before answering; files created since the last `index` run are not included until the next one";

/// A tag in one of the two layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TagRef {
    delta: bool,
    tag: usize,
}

/// An up-to-date index, ready for queries: the main layer, the delta, and the merged list
/// of live files (sorted by path) that queries see.
pub struct Index {
    main: Store,
    delta: Option<Store>,
    /// Live files: (in the delta, index in that layer).
    files: Vec<(bool, usize)>,
    /// For each layer's file, its position in `files` (None when superseded or deleted).
    main_live: Vec<Option<usize>>,
    delta_live: Vec<Option<usize>>,
    pub freshness: Freshness,
    pub built: Option<UpdateReport>,
}

impl Index {
    /// Loads the index, building it when missing or unreadable, and re-tags every indexed
    /// file whose content changed since it was indexed.
    pub fn open(root: &Root) -> Result<Index, Error> {
        let mut built = None;
        let mut index = match Index::load(root) {
            Ok(ix) => ix,
            Err(_) => {
                built = Some(update(root)?);
                Index::load(root)?
            }
        };
        let (changed, touched, deleted) = stale_files(root, &index);
        if !changed.is_empty() || !touched.is_empty() || !deleted.is_empty() {
            let mut jobs = Vec::new();
            for rel in changed.iter().chain(&touched) {
                let Some(i) = index.file_index(rel) else {
                    continue;
                };
                let abs = root.path().join(rel);
                let Some((size, mtime_ns)) = stamp(&abs) else {
                    continue;
                };
                jobs.push(Job {
                    abs,
                    rel: rel.clone(),
                    size,
                    mtime_ns,
                    old: Some(index.entry(i)),
                });
            }
            write_changes(root, Some(&index), run_jobs(jobs), &deleted)?;
            index = Index::load(root)?;
        }
        index.freshness.reindexed = changed;
        index.freshness.deleted = deleted.len();
        index.built = built;
        Ok(index)
    }

    /// Reads both layers as they are on disk, without checking freshness.
    fn load(root: &Root) -> Result<Index, Error> {
        let main = Store::open(&root.path().join(INDEX_FILE))?;
        let delta = Store::open(&root.path().join(DELTA_FILE)).ok();
        let mut superseded: HashMap<&str, ()> = HashMap::new();
        if let Some(d) = &delta {
            for j in 0..d.file_count() {
                superseded.insert(d.file_path(j), ());
            }
        }
        let mut files: Vec<(bool, usize)> = (0..main.file_count())
            .filter(|i| !superseded.contains_key(main.file_path(*i)))
            .map(|i| (false, i))
            .collect();
        if let Some(d) = &delta {
            files.extend(
                (0..d.file_count())
                    .filter(|j| d.file_language(*j) != TOMBSTONE)
                    .map(|j| (true, j)),
            );
            let path = |&(in_delta, i): &(bool, usize)| {
                if in_delta {
                    d.file_path(i)
                } else {
                    main.file_path(i)
                }
            };
            files.sort_by(|a, b| path(a).cmp(path(b)));
        }
        drop(superseded);
        let mut main_live = vec![None; main.file_count()];
        let mut delta_live = vec![None; delta.as_ref().map_or(0, Store::file_count)];
        for (k, &(in_delta, i)) in files.iter().enumerate() {
            if in_delta {
                delta_live[i] = Some(k)
            } else {
                main_live[i] = Some(k)
            }
        }
        let indexed_at = delta
            .as_ref()
            .map_or(main.built_unix, |d| d.built_unix.max(main.built_unix));
        let freshness = Freshness {
            indexed_at,
            files_indexed: files.len(),
            reindexed: Vec::new(),
            deleted: 0,
            note: FRESHNESS_NOTE,
            unsaved: None,
        };
        Ok(Index {
            main,
            delta,
            files,
            main_live,
            delta_live,
            freshness,
            built: None,
        })
    }

    fn layer(&self, in_delta: bool) -> &Store {
        match (&self.delta, in_delta) {
            (Some(d), true) => d,
            _ => &self.main,
        }
    }

    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    pub fn file_path(&self, i: usize) -> &str {
        let (d, j) = self.files[i];
        self.layer(d).file_path(j)
    }

    pub fn file_language(&self, i: usize) -> String {
        let (d, j) = self.files[i];
        self.layer(d).file_language(j)
    }

    pub fn file_tags(&self, i: usize) -> Vec<super::tags::Tag> {
        let (d, j) = self.files[i];
        self.layer(d).file_tags(j)
    }

    fn file_tag_count(&self, i: usize) -> usize {
        let (d, j) = self.files[i];
        self.layer(d).file_tag_count(j)
    }

    /// `(size, mtime_ns, sha256)` of file `i` when it was indexed.
    pub fn file_stamp(&self, i: usize) -> (u64, u64, [u8; 32]) {
        let (d, j) = self.files[i];
        self.layer(d).file_stamp(j)
    }

    /// The position of a root-relative path among the live files.
    pub fn file_index(&self, rel: &str) -> Option<usize> {
        self.files
            .binary_search_by(|&(d, j)| self.layer(d).file_path(j).cmp(rel))
            .ok()
    }

    fn entry(&self, i: usize) -> FileEntry {
        let (d, j) = self.files[i];
        self.layer(d).entry(j)
    }

    /// The live tags named `name`: definitions first (main, then delta), then references.
    pub fn lookup(&self, name: &str) -> Vec<TagRef> {
        let mut defs = Vec::new();
        let mut refs = Vec::new();
        for (in_delta, live) in [(false, &self.main_live), (true, &self.delta_live)] {
            if in_delta && self.delta.is_none() {
                continue;
            }
            let store = self.layer(in_delta);
            for t in store.lookup(name) {
                // Without a delta every main tag is live; skip the per-tag file check.
                if (self.delta.is_some() || in_delta)
                    && live.get(store.tag_file(t)).copied().flatten().is_none()
                {
                    continue;
                }
                let r = TagRef {
                    delta: in_delta,
                    tag: t,
                };
                if store.is_definition(t) {
                    defs.push(r)
                } else {
                    refs.push(r)
                }
            }
        }
        defs.extend(refs);
        defs
    }

    pub fn is_definition(&self, r: TagRef) -> bool {
        self.layer(r.delta).is_definition(r.tag)
    }

    /// A tag and the position of its file among the live files.
    pub fn tag(&self, r: TagRef) -> (super::tags::Tag, usize) {
        let stored = self.layer(r.delta).tag(r.tag);
        let live = if r.delta {
            &self.delta_live
        } else {
            &self.main_live
        };
        (
            stored.tag,
            live.get(stored.file).copied().flatten().unwrap_or(0),
        )
    }
}

/// Indexed files whose content changed (stamp moved and hash differs), files whose stamp
/// moved but content did not (re-recorded so they are not hashed again), and deleted files.
fn stale_files(root: &Root, index: &Index) -> (Vec<String>, Vec<String>, Vec<String>) {
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
