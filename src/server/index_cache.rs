//! The symbol index as the server holds it: loaded once, shared by every tool call, kept
//! fresh by one writer.
//!
//! - At start a background thread brings the index on disk up to date (building it when
//!   there is none) and loads it; until then symbol tools answer from a text search or a
//!   file tagged on the spot, and say so ([`Lookup::Building`]).
//! - Before each answer, the indexed files are checked by their stamps; changed or
//!   deleted ones are re-tagged and saved first (`refresh_changed`, as the CLI does).
//! - With file events from the kernel (`watch`), an answer touches no file unless
//!   something changed: modified files are re-tagged, created or removed ones trigger a
//!   walk. Without them, indexed files are checked by their stamps before each answer and
//!   new files are found by a walk at most every [`WALK_INTERVAL`], and before an answer
//!   of "not found".
//!
//! Readers share an `Arc<Index>`; refreshing takes a mutex, so there is one writer and
//! concurrent calls never block each other on reads.

use crate::environment::Environment;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use super::watch::{Drained, Watch};
use crate::codeintel::error::Error;
use crate::codeintel::index::{Index, stale_files};
use crate::codeintel::refresh::{
    Progress, refresh_changed, refresh_with_progress, repair_or_in_memory,
};
use crate::codeintel::root::Root;

/// How often a tool call may trigger a walk for files created since the last one.
pub(crate) const WALK_INTERVAL: Duration = Duration::from_secs(2);

/// What a symbol tool answers from.
pub enum Lookup {
    Ready(Arc<Index>),
    /// The first build is running: `done` of `total` files tagged so far.
    Building {
        done: usize,
        total: usize,
    },
    /// The index cannot be built (e.g. the walk failed); the reason.
    Failed(String),
}

/// Whether a refresh walks the tree for new files.
#[derive(Debug, Clone, Copy)]
enum Walk {
    Now,
    IfDue,
    Never,
}

/// How the cache learns that files changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeSource {
    /// File events from the kernel where available (falls back to polling).
    FileEvents,
    /// Stamps before each answer and periodic walks: for file systems whose changes the
    /// kernel does not report (network mounts), set with `CODE_INTEL_WATCH=0`.
    Polling,
}

impl ChangeSource {
    /// From the environment given: `CODE_INTEL_WATCH=0` polls.
    pub fn from_env(env: &Environment) -> ChangeSource {
        match env.var("CODE_INTEL_WATCH").map(str::trim) {
            Some("0" | "false" | "no") => ChangeSource::Polling,
            _ => ChangeSource::FileEvents,
        }
    }
}

pub struct IndexCache {
    root: Root,
    changes: ChangeSource,
    current: RwLock<Option<Arc<Index>>>,
    progress: Progress,
    building: AtomicBool,
    failed: Mutex<Option<String>>,
    /// Held while refreshing: one writer.
    writer: Mutex<Option<Instant>>,
    /// File events from the kernel, when watching works; otherwise every answer checks
    /// the indexed files' stamps and walks at most every [`WALK_INTERVAL`].
    watch: Mutex<Option<Watch>>,
}

impl IndexCache {
    /// A cache whose index is not loaded yet: it answers [`Lookup::Building`] until
    /// [`IndexCache::load_in_background`] has finished.
    pub fn new(root: Root, changes: ChangeSource) -> Arc<IndexCache> {
        Arc::new(IndexCache {
            root,
            changes,
            current: RwLock::new(None),
            progress: Progress::default(),
            building: AtomicBool::new(true),
            failed: Mutex::new(None),
            writer: Mutex::new(None),
            watch: Mutex::new(None),
        })
    }

    /// A cache that starts loading (or building) the index in the background at once.
    pub fn start(root: Root, changes: ChangeSource) -> Arc<IndexCache> {
        let cache = IndexCache::new(root, changes);
        IndexCache::load_in_background(&cache);
        cache
    }

    /// Loads (or builds) the index on a background thread.
    pub fn load_in_background(cache: &Arc<IndexCache>) {
        let worker = Arc::clone(cache);
        let spawned = std::thread::Builder::new()
            .name("index-build".into())
            .spawn(move || worker.build());
        if let Err(e) = spawned {
            cache.fail(format!("cannot start the index thread: {e}"));
        }
    }

    fn fail(&self, reason: String) {
        tracing::warn!("symbol index unavailable: {reason}");
        *self.failed.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason);
        self.building.store(false, Ordering::Release);
    }

    fn build(&self) {
        let started = Instant::now();
        // Watching starts before the walk, so a file changed while the index is being
        // built is seen by the first answer.
        if self.changes == ChangeSource::FileEvents {
            *self.watch.lock().unwrap_or_else(PoisonError::into_inner) = Watch::start(&self.root);
        }
        let built = refresh_with_progress(&self.root, Some(&self.progress))
            .and_then(|report| {
                if let Some(what) = report.recovered {
                    tracing::warn!("{what}");
                }
                refresh_changed(&self.root)
            })
            // A read-only `.code-intel/`: answer from an index built in memory.
            .or_else(|_| Index::open(&self.root));
        match built {
            Ok(index) => {
                tracing::info!(
                    "symbol index ready: {} files in {} ms",
                    index.freshness.files_indexed,
                    started.elapsed().as_millis()
                );
                self.set(index);
                *self.writer.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
                self.building.store(false, Ordering::Release);
            }
            Err(e) => self.fail(e.to_string()),
        }
    }

    /// Keeps `index` for the next answers. What was wrong with the index it replaced
    /// (`freshness.recovered`) is logged, not kept: every later answer would repeat it.
    fn set(&self, mut index: Index) {
        if let Some(what) = index.freshness.recovered.take() {
            tracing::warn!("{what}");
        }
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(index));
    }

    /// Builds the index again from scratch (`--rebuild`) and answers from it from now on.
    /// Waits for a refresh under way; the first build, if still running, keeps answering
    /// [`Lookup::Building`] until it ends.
    pub fn rebuild(&self) -> Result<crate::codeintel::refresh::UpdateReport, Error> {
        let mut last_walk = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let report = crate::codeintel::refresh::rebuild(&self.root)?;
        self.set(refresh_changed(&self.root)?);
        *last_walk = Some(Instant::now());
        Ok(report)
    }

    /// After a tool found a piece of the index on disk that does not match its checksum
    /// (`problem`, read only then): checks the index whole and rebuilds it, or, when
    /// `.code-intel/` cannot be written, tags every source file in memory; the next
    /// lookup answers from the result.
    pub fn repair(&self, problem: &Error) {
        let _writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        tracing::warn!("{problem}; repairing the symbol index");
        match repair_or_in_memory(&self.root, problem) {
            Ok(index) => self.set(index),
            Err(e) => tracing::warn!("the symbol index could not be repaired: {e}"),
        }
    }

    fn get(&self) -> Option<Arc<Index>> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// While the first build runs: files tagged so far and files to tag.
    pub fn building(&self) -> Option<(usize, usize)> {
        self.building.load(Ordering::Acquire).then(|| {
            (
                self.progress.done.load(Ordering::Relaxed),
                self.progress.total.load(Ordering::Relaxed),
            )
        })
    }

    /// The index to answer from, refreshed for files that changed.
    pub fn lookup(&self) -> Lookup {
        if self.building.load(Ordering::Acquire) {
            return Lookup::Building {
                done: self.progress.done.load(Ordering::Relaxed),
                total: self.progress.total.load(Ordering::Relaxed),
            };
        }
        let Some(index) = self.get() else {
            let reason = self
                .failed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
                .unwrap_or_else(|| "the index is not loaded".into());
            return Lookup::Failed(reason);
        };
        // The writer lock is taken before draining, so a call that drains nothing cannot
        // answer from before a refresh another call is making for what it drained.
        let mut last_walk = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let index = self.get().unwrap_or(index);
        let drained = self
            .watch
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
            .map(|w| w.drain(&self.root));
        let refreshed = match drained {
            // Watching, and nothing changed: answer at once, touching no file.
            Some(Drained::Nothing) => Ok(index),
            Some(Drained::Modified(_)) => self.refresh_locked(&mut last_walk, index, Walk::Never),
            Some(Drained::Structure | Drained::Unknown) => {
                self.refresh_locked(&mut last_walk, index, Walk::Now)
            }
            // Not watching: check every file (and walk now and then).
            None => self.refresh_locked(&mut last_walk, index, Walk::IfDue),
        };
        match refreshed {
            Ok(index) => Lookup::Ready(index),
            Err(e) => Lookup::Failed(e.to_string()),
        }
    }

    /// Whether changes are learnt from file events (otherwise from stamps and walks).
    pub fn watching(&self) -> bool {
        self.watch
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// The index after a walk for new files, whenever the last walk was: what a tool
    /// calls before answering "not found", so a file created a moment ago is found.
    pub fn rescan(&self) -> Lookup {
        let lookup = self.lookup();
        // With file events, `lookup` has already seen every file created before the call.
        if self.watching() {
            return lookup;
        }
        let Lookup::Ready(index) = lookup else {
            return lookup;
        };
        let mut last_walk = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        match self.refresh_locked(&mut last_walk, index, Walk::Now) {
            Ok(index) => Lookup::Ready(index),
            Err(e) => Lookup::Failed(e.to_string()),
        }
    }

    /// `index` after re-tagging changed files and, as `walk` says, picking up new ones
    /// with a walk. The caller holds the writer lock (`last_walk` is its content).
    fn refresh_locked(
        &self,
        last_walk: &mut Option<Instant>,
        index: Arc<Index>,
        walk: Walk,
    ) -> Result<Arc<Index>, Error> {
        let walk_due = match walk {
            Walk::Now => true,
            Walk::IfDue => last_walk.is_none_or(|at| at.elapsed() >= WALK_INTERVAL),
            Walk::Never => false,
        };
        if walk_due {
            *last_walk = Some(Instant::now());
            let report = refresh_with_progress(&self.root, None);
            match report {
                Ok(r) if r.tagged + r.touched + r.removed > 0 => {
                    let fresh = refresh_changed(&self.root)?;
                    self.set(fresh);
                    return Ok(self.get().unwrap_or(index));
                }
                Ok(_) => {}
                // Cannot write: fall through to the in-memory re-tagging below.
                Err(e) => tracing::debug!("index walk failed: {e}"),
            }
        }
        let (changed, touched, deleted) = stale_files(&self.root, &index);
        if changed.is_empty() && touched.is_empty() && deleted.is_empty() {
            return Ok(index);
        }
        let fresh = match refresh_changed(&self.root) {
            Ok(fresh) => fresh,
            Err(e) => {
                let mut fresh = Index::open(&self.root)?;
                fresh.freshness.unsaved = Some(format!(
                    "the index could not be updated ({e}); changed files were re-tagged in memory"
                ));
                // Kept for the next answers too: the file events are consumed, so an
                // index from before them would answer stale.
                self.set(fresh);
                return Ok(self.get().unwrap_or(index));
            }
        };
        self.set(fresh);
        Ok(self.get().unwrap_or(index))
    }
}
