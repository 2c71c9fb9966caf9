//! Reading, hashing and tagging files on every core: the work a refresh does before it
//! writes, and a reader does in memory for the files that changed under it.
//!
//! Nothing here writes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::UNIX_EPOCH;

use sha2::{Digest, Sha256};

use super::error::Error;
use super::languages;
use super::root::Root;
use super::search::{SkipReason, Skipped, SkippedPath, walk_files};
use super::store::FileEntry;
use super::tags::Tagger;

/// Files larger than this are not tagged (generated or minified code).
pub(crate) const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;

/// `(size, mtime in ns)` of a file, or None when it cannot be read.
pub(crate) fn stamp(path: &Path) -> Option<(u64, u64)> {
    try_stamp(path).ok()
}

fn try_stamp(path: &Path) -> std::io::Result<(u64, u64)> {
    let meta = std::fs::metadata(path)?;
    let mtime = meta
        .modified()?
        .duration_since(UNIX_EPOCH)
        .map_err(|_| std::io::Error::other("modified before 1970"))?
        .as_nanos();
    Ok((meta.len(), u64::try_from(mtime).unwrap_or(u64::MAX)))
}

fn unreadable(rel: &str, e: &std::io::Error) -> SkippedPath {
    SkippedPath {
        path: rel.to_string(),
        reason: SkipReason::of(e),
        message: e.to_string(),
    }
}

pub(crate) fn sha256(bytes: &[u8]) -> [u8; 32] {
    let digest = Sha256::digest(bytes);
    let mut out = [0u8; 32];
    out.copy_from_slice(&digest);
    out
}

/// A job for the taggers: a file to read, hash and maybe tag.
pub(crate) struct Job {
    pub(crate) abs: PathBuf,
    pub(crate) rel: String,
    pub(crate) size: u64,
    pub(crate) mtime_ns: u64,
    /// The file as indexed, when it was: an unchanged hash keeps its tags.
    pub(crate) old: Option<FileEntry>,
}

pub(crate) enum Outcome {
    /// The stamp moved but the content did not: the old tags with the new stamp.
    Touched(FileEntry),
    /// New or changed content, tagged.
    Tagged(FileEntry),
    /// Deleted meanwhile, or no longer a source file.
    Gone,
    /// It could not be read (treated as gone, and reported).
    Unreadable(SkippedPath),
}

/// Reads, hashes and (when the content changed) tags the jobs on every core, in order.
/// How far a long refresh has got: files tagged so far of the files to tag. Shared with
/// whoever reports progress (the MCP server's progress notifications).
#[derive(Debug, Default)]
pub(crate) struct Progress {
    pub done: AtomicUsize,
    pub total: AtomicUsize,
}

pub(crate) fn run_jobs(jobs: Vec<Job>) -> Vec<Outcome> {
    run_jobs_with(jobs, None)
}

/// [`run_jobs`], counting finished jobs into `progress`.
pub(crate) fn run_jobs_with(jobs: Vec<Job>, progress: Option<&Progress>) -> Vec<Outcome> {
    run(jobs, progress, &Tagger::new)
}

/// [`run_jobs`] with the imports and the references to `names` as well as definitions:
/// what questions about uses read.
pub(crate) fn run_reference_jobs(jobs: Vec<Job>, names: &[String]) -> Vec<Outcome> {
    run(jobs, None, &|| Tagger::with_references_to(names))
}

fn run(
    jobs: Vec<Job>,
    progress: Option<&Progress>,
    tagger: &(dyn Fn() -> Tagger + Sync),
) -> Vec<Outcome> {
    if let Some(p) = progress {
        p.total.store(jobs.len(), Ordering::Relaxed);
        p.done.store(0, Ordering::Relaxed);
    }
    let threads = std::thread::available_parallelism()
        .map_or(2, std::num::NonZero::get)
        .min(jobs.len().max(1));
    let next = AtomicUsize::new(0);
    let mut results: Vec<(usize, Outcome)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let tagger_kind = tagger;
                    let mut tagger = tagger();
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(job) = jobs.get(i) else { break };
                        out.push((i, process(&mut tagger, tagger_kind, job)));
                        if let Some(p) = progress {
                            p.done.fetch_add(1, Ordering::Relaxed);
                        }
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

fn process(tagger: &mut Tagger, fresh: &dyn Fn() -> Tagger, job: &Job) -> Outcome {
    let bytes = match std::fs::read(&job.abs) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Outcome::Gone,
        Err(e) => return Outcome::Unreadable(unreadable(&job.rel, &e)),
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
    // A panic inside tree-sitter or a query must not take the other files of this
    // worker with it: the file keeps no tags and the worker a fresh tagger.
    let tags = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        tagger.tag(language, &bytes).unwrap_or_default()
    }))
    .unwrap_or_else(|_| {
        *tagger = fresh();
        Vec::new()
    });
    Outcome::Tagged(FileEntry {
        path: job.rel.clone(),
        size: job.size,
        mtime_ns: job.mtime_ns,
        hash,
        language: language.name.to_string(),
        tags,
    })
}

/// The source files under the root the index covers, as jobs with no old entry, and what
/// was left out.
pub(crate) struct Sources {
    pub(crate) jobs: Vec<Job>,
    /// Files over [`MAX_FILE_BYTES`].
    pub(crate) too_large: usize,
    /// Those files, the directories the walk could not list, source files it could not
    /// stat, and FIFOs, sockets and devices named like source files.
    pub(crate) skipped: Skipped,
}

pub(crate) fn source_files(root: &Root) -> Result<Sources, Error> {
    let (files, walked) = walk_files(root)?;
    let mut skipped = Skipped::default();
    for p in walked.paths {
        if p.reason.is_error() || languages::for_path(Path::new(&p.path)).is_some() {
            skipped.paths.push(p);
        }
    }
    let mut jobs = Vec::new();
    let mut too_large = 0;
    for abs in files {
        if languages::for_path(&abs).is_none() {
            continue;
        }
        let rel = root.relative(&abs);
        let (size, mtime_ns) = match try_stamp(&abs) {
            Ok(stamp) => stamp,
            // Deleted since the walk saw it.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                skipped.paths.push(unreadable(&rel, &e));
                continue;
            }
        };
        if size > MAX_FILE_BYTES {
            too_large += 1;
            skipped.push(
                rel,
                SkipReason::TooLarge,
                format!("{size} bytes, over the {MAX_FILE_BYTES}-byte limit for indexing"),
            );
            continue;
        }
        jobs.push(Job {
            abs,
            rel,
            size,
            mtime_ns,
            old: None,
        });
    }
    Ok(Sources {
        jobs,
        too_large,
        skipped,
    })
}
