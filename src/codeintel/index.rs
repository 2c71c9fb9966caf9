//! The symbol index: tree-sitter tags of every source file under the root, built in
//! parallel, persisted in `.code-intel/symbols.idx`, updated by content hash.
//!
//! Freshness: before answering, every indexed file's size and mtime are compared with the
//! index; a file whose stamp moved is hashed, and re-tagged only when its content changed.
//! So no answer ever comes from a file that changed since it was indexed. Files created
//! after the last update are picked up by the next `update` (`code-intel index`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::languages;
use super::root::Root;
use super::search::walk_files;
use super::store::{FileEntry, Store, write};
use super::tags::Tagger;

/// Where the index lives, relative to the root.
pub const INDEX_FILE: &str = ".code-intel/symbols.idx";

/// Files larger than this are not tagged (generated or minified code).
pub const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;

/// What an update did.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
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

/// Brings the index up to date with the files under the root and writes it.
pub fn update(root: &Root) -> Result<UpdateReport, String> {
    let start = Instant::now();
    let index_path = root.path().join(INDEX_FILE);
    let old = Store::read(&index_path).ok();
    let from_scratch = old.is_none();
    let mut previous: HashMap<String, FileEntry> = old
        .map(|s| {
            s.entries()
                .into_iter()
                .map(|e| (e.path.clone(), e))
                .collect()
        })
        .unwrap_or_default();
    let mut report = UpdateReport {
        from_scratch,
        ..UpdateReport::default()
    };
    let mut kept = Vec::new();
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
        let old = previous.remove(&rel);
        match old {
            Some(e) if e.size == size && e.mtime_ns == mtime_ns => {
                report.unchanged += 1;
                kept.push(e);
            }
            old => jobs.push(Job {
                abs,
                rel,
                size,
                mtime_ns,
                old,
            }),
        }
    }
    report.removed = previous.len();
    for outcome in run_jobs(jobs) {
        match outcome {
            Outcome::Touched(e) => {
                report.touched += 1;
                kept.push(e);
            }
            Outcome::Tagged(e) => {
                report.tagged += 1;
                kept.push(e);
            }
            Outcome::Gone => {}
        }
    }
    kept.sort_by(|a, b| a.path.cmp(&b.path));
    report.files = kept.len();
    report.tags = kept.iter().map(|e| e.tags.len()).sum();
    write(&index_path, &kept, now_unix())
        .map_err(|e| format!("cannot write {}: {e}", index_path.display()))?;
    report.elapsed_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(report)
}

/// How fresh an answer is, for clients to judge.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Freshness {
    /// Unix time of the last index write.
    pub indexed_at: u64,
    pub files_indexed: usize,
    /// Files re-tagged just before this answer because they changed.
    pub reindexed: Vec<String>,
    /// Indexed files that no longer exist (dropped from the answer).
    pub deleted: usize,
    pub note: &'static str,
}

const FRESHNESS_NOTE: &str = "every indexed file was checked against the index before answering; files created since the last `index` run are not included until the next one";

/// An up-to-date index, ready for queries.
pub struct Index {
    pub store: Store,
    pub freshness: Freshness,
    pub built: Option<UpdateReport>,
}

impl Index {
    /// Loads the index, building it when missing or unreadable, and re-tags every indexed
    /// file whose content changed since it was indexed.
    pub fn open(root: &Root) -> Result<Index, String> {
        let path = root.path().join(INDEX_FILE);
        let mut built = None;
        let store = match Store::open(&path) {
            Ok(s) => s,
            Err(_) => {
                built = Some(update(root)?);
                Store::open(&path)?
            }
        };
        let (changed, touched, deleted) = stale_files(root, &store);
        if changed.is_empty() && touched == 0 && deleted == 0 {
            let freshness = Freshness {
                indexed_at: store.built_unix,
                files_indexed: store.file_count(),
                reindexed: Vec::new(),
                deleted: 0,
                note: FRESHNESS_NOTE,
            };
            return Ok(Index {
                store,
                freshness,
                built,
            });
        }
        let report = update(root)?;
        let store = Store::open(&path)?;
        let freshness = Freshness {
            indexed_at: store.built_unix,
            files_indexed: store.file_count(),
            reindexed: changed,
            deleted,
            note: FRESHNESS_NOTE,
        };
        Ok(Index {
            store,
            freshness,
            built: built.or(Some(report)),
        })
    }
}

/// Indexed files whose content changed (stamp moved and hash differs), how many only had
/// their stamp moved (their stamps are refreshed so they are not hashed again), and how
/// many are gone.
fn stale_files(root: &Root, store: &Store) -> (Vec<String>, usize, usize) {
    let n = store.file_count();
    let threads = std::thread::available_parallelism()
        .map_or(2, std::num::NonZero::get)
        .min(n.max(1));
    let chunk = n.div_ceil(threads.max(1)).max(1);
    let results: Vec<(Vec<String>, usize, usize)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    let mut changed = Vec::new();
                    let mut touched = 0;
                    let mut deleted = 0;
                    for i in (t * chunk)..((t + 1) * chunk).min(n) {
                        let rel = store.file_path(i);
                        let abs = root.path().join(rel);
                        let (size, mtime_ns, hash) = store.file_stamp(i);
                        match stamp(&abs) {
                            None => deleted += 1,
                            Some((s, m)) if s == size && m == mtime_ns => {}
                            Some(_) => {
                                if std::fs::read(&abs).map(|b| sha256(&b)).ok() == Some(hash) {
                                    touched += 1;
                                } else {
                                    changed.push(rel.to_string());
                                }
                            }
                        }
                    }
                    (changed, touched, deleted)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut changed: Vec<String> = results.iter().flat_map(|(c, _, _)| c.clone()).collect();
    changed.sort();
    (
        changed,
        results.iter().map(|(_, t, _)| t).sum(),
        results.iter().map(|(_, _, d)| d).sum(),
    )
}
