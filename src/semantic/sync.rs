//! Bringing the semantic index up to date: per-file SHA-256, re-chunking only what
//! changed, then embedding only the chunks whose text has no vector yet.
//!
//! Two phases, each durable on its own. First the catalog and the lexical index (fast:
//! reading and chunking), so lexical search covers every file within seconds. Then the
//! vectors (slow: the model), appended batch by batch; a sync killed there leaves every
//! finished batch on disk, and the next sync embeds only what is still missing. The
//! vectors go to the store `semantic.vector_store` names (`store`): the embedded log, or a
//! ChromaDB collection shared by every clone, where what another clone embedded counts as
//! present.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::catalog::{Catalog, ChunkRef, FileRecord};
use super::chunk::{Chunk, Chunker};
use super::chunk::{embedding_input, file_kind};
use super::embed::Embedder;
use super::error::Error;
use super::layout::{Layout, hex, unhex};
use super::lexical::Lexical;
use super::store;
use super::vectors::Hash;
use crate::codeintel::lock::WriteLock;
use crate::codeintel::retag::{MAX_FILE_BYTES, sha256, stamp};
use crate::codeintel::root::Root;
use crate::codeintel::search::walk_files;
use crate::codeintel::state_dir;

/// Where a sync is, for progress bars and status fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Reading, hashing and chunking files.
    Chunking,
    /// Embedding chunks that have no vector.
    Embedding,
}

/// What a sync did (its JSON is what `index --json` and `sync_index` report).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SyncReport {
    /// Files the index covers now.
    pub files: usize,
    /// Files whose content had not changed (by SHA-256).
    pub unchanged: usize,
    /// Files chunked in this sync (new or changed).
    pub chunked: usize,
    /// Files that disappeared.
    pub removed: usize,
    /// Chunks in the index now.
    pub chunks: usize,
    /// Chunks made by this sync.
    pub chunks_added: usize,
    /// Chunks embedded by this sync.
    pub embedded: usize,
    /// Chunks still without a vector (no model, or the sync was stopped).
    pub unembedded: usize,
    /// Whether everything was dropped and rebuilt (`--rebuild`, another chunk budget, or
    /// a lexical index that did not match the catalog).
    pub rebuilt: bool,
    /// The model's id, when one embedded.
    pub model: Option<String>,
    pub elapsed_ms: u64,
    /// Time spent inside the model (tokenising and running it): the rest of `elapsed_ms`
    /// is the pipeline's own cost.
    pub embed_ms: u64,
}

/// How a sync is run.
pub struct SyncOptions<'a> {
    pub chunk_max_tokens: usize,
    pub rebuild: bool,
    /// Called with (phase, done, total) as work proceeds.
    pub progress: &'a (dyn Fn(Phase, usize, usize) + Sync),
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Brings the index of `root` up to date. Holds the semantic lock while it runs: one sync
/// per repository at a time, across processes.
pub fn sync(
    root: &Root,
    embedder: Option<&Embedder>,
    options: &SyncOptions<'_>,
) -> Result<SyncReport, Error> {
    let started = Instant::now();
    let layout = Layout::of(root);
    state_dir::check_path(&layout.dir.join("-")).map_err(|e| Error::io(&layout.dir, e))?;
    crate::codeintel::gitignore::ensure_gitignore(root.path())
        .map_err(|e| Error::io(&layout.dir, e))?;
    std::fs::create_dir_all(&layout.dir).map_err(|e| Error::io(&layout.dir, e))?;
    let mut report = SyncReport::default();
    let (catalog, lexical, added) = {
        let _lock = WriteLock::acquire_at(&layout.lock)?;
        chunk_files(root, &layout, options, &mut report)?
    };

    // Phase 2: vectors for the chunks that have none. Files may be re-chunked meanwhile
    // (the chunking lock is free): a chunk whose text is gone is skipped, and a vector
    // nobody needs any more is dropped by a later compaction.
    let _vectors_lock = WriteLock::acquire_at(&layout.vectors_lock)?;
    let live: HashMap<Hash, String> = catalog
        .files
        .values()
        .flat_map(|f| f.chunks.iter())
        .filter_map(|c| Some((unhex(&c.hash)?, c.id.clone())))
        .collect();
    match embedder {
        None => {
            report.unembedded = report.chunks;
        }
        Some(embedder) => {
            report.model = Some(embedder.id().to_string());
            let settings = crate::config::Config::load(root.path())
                .map_err(|e| Error::Config(e.to_string()))?
                .semantic
                .vector_store;
            let mut vectors = store::select::open(
                &settings,
                &layout.vectors,
                embedder.id(),
                embedder.dimensions(),
                options.rebuild,
            )?;
            let texts: HashMap<&str, &Chunk> =
                added.iter().map(|(c, _)| (c.id.as_str(), c)).collect();
            let mut hashes: Vec<Hash> = live.keys().copied().collect();
            hashes.sort_by(|a, b| live[a].cmp(&live[b]));
            // Asked once: with a shared store, what any clone embedded is not embedded again.
            let missing = vectors.missing(&hashes)?;
            let total = missing.len();
            let mut still_missing: HashSet<Hash> = missing.iter().copied().collect();
            // A window of the local model's batches, or enough for every request an
            // embedding server may have in flight (`Embedder::texts_per_call`).
            let per_call = embedder.texts_per_call().max(1);
            for (done, batch) in missing.chunks(per_call).enumerate() {
                (options.progress)(Phase::Embedding, done * per_call, total);
                let mut hashes = Vec::with_capacity(batch.len());
                let mut inputs = Vec::with_capacity(batch.len());
                for hash in batch {
                    let id = &live[hash];
                    let input = match texts.get(id.as_str()) {
                        Some(c) => embedding_input(c),
                        None => match lexical.get(id)? {
                            Some(stored) => embedding_input(&stored.as_chunk()),
                            None => continue,
                        },
                    };
                    hashes.push(*hash);
                    inputs.push(input);
                }
                let refs: Vec<&str> = inputs.iter().map(String::as_str).collect();
                let model_started = Instant::now();
                let embedded = embedder.embed(&refs)?;
                report.embed_ms += u64::try_from(model_started.elapsed().as_millis()).unwrap_or(0);
                let records: Vec<(Hash, Vec<f32>)> = hashes.into_iter().zip(embedded).collect();
                vectors.put(&records)?;
                for (hash, _) in &records {
                    still_missing.remove(hash);
                }
                report.embedded += records.len();
            }
            (options.progress)(Phase::Embedding, report.embedded, total);
            report.unembedded = catalog
                .files
                .values()
                .flat_map(|f| f.chunks.iter())
                .filter(|c| unhex(&c.hash).is_none_or(|h| still_missing.contains(&h)))
                .count();
            let live_set: HashSet<Hash> = live.keys().copied().collect();
            vectors.settle(&live_set)?;
        }
    }
    report.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(report)
}

/// What the first phase leaves: the catalog, the lexical index, and the chunks it made
/// with their content hashes.
type Chunked = (Catalog, Lexical, Vec<(Chunk, String)>);

/// Phase 1, under the lock: files → chunks → catalog and lexical index. Returns them with
/// the chunks made (their text is at hand for embedding).
fn chunk_files(
    root: &Root,
    layout: &Layout,
    options: &SyncOptions<'_>,
    report: &mut SyncReport,
) -> Result<Chunked, Error> {
    let mut catalog = Catalog::load(&layout.catalog)
        .filter(|c| c.chunk_max_tokens == options.chunk_max_tokens && !options.rebuild)
        .unwrap_or_else(|| {
            report.rebuilt = true;
            let generation = Catalog::load(&layout.catalog).map_or(0, |c| c.generation);
            Catalog {
                generation,
                ..Catalog::empty(options.chunk_max_tokens)
            }
        });
    let mut lexical = Lexical::open_or_create(&layout.lexical)?;
    let clear = report.rebuilt || lexical.generation() != Some(catalog.generation);
    if clear {
        report.rebuilt = true;
        catalog.files.clear();
    }

    // Phase 1: files → chunks → catalog and lexical index.
    let (files, _skipped) = walk_files(root)?;
    let candidates: Vec<(PathBuf, String, super::chunk::FileKind)> = files
        .into_iter()
        .filter_map(|abs| {
            let kind = file_kind(&abs)?;
            let rel = root.relative(&abs);
            Some((abs, rel, kind))
        })
        .collect();
    let total = candidates.len();
    let mut chunker = Chunker::new(options.chunk_max_tokens);
    let mut seen: HashSet<String> = HashSet::new();
    let mut replaced: Vec<String> = Vec::new();
    let mut added: Vec<(Chunk, String)> = Vec::new();
    for (n, (abs, rel, kind)) in candidates.into_iter().enumerate() {
        if n % 64 == 0 {
            (options.progress)(Phase::Chunking, n, total);
        }
        let Some((size, mtime_ns)) = stamp(&abs) else {
            continue;
        };
        if size > MAX_FILE_BYTES {
            continue;
        }
        seen.insert(rel.clone());
        if let Some(old) = catalog.files.get(&rel)
            && old.size == size
            && old.mtime_ns == mtime_ns
        {
            report.unchanged += 1;
            continue;
        }
        let Ok(bytes) = std::fs::read(&abs) else {
            seen.remove(&rel);
            continue;
        };
        let digest = hex(&sha256(&bytes));
        if let Some(old) = catalog.files.get_mut(&rel)
            && old.sha256 == digest
        {
            old.size = size;
            old.mtime_ns = mtime_ns;
            report.unchanged += 1;
            continue;
        }
        // Not UTF-8: a binary file with a text extension, left out.
        let Ok(text) = String::from_utf8(bytes) else {
            seen.remove(&rel);
            continue;
        };
        let chunks = chunker.chunks(&rel, &text, kind);
        let refs = chunks
            .iter()
            .map(|c| ChunkRef {
                id: c.id.clone(),
                hash: hex(&sha256(embedding_input(c).as_bytes())),
            })
            .collect::<Vec<_>>();
        if catalog.files.contains_key(&rel) {
            replaced.push(rel.clone());
        }
        for (c, r) in chunks.into_iter().zip(&refs) {
            added.push((c, r.hash.clone()));
        }
        catalog.files.insert(
            rel,
            FileRecord {
                size,
                mtime_ns,
                sha256: digest,
                chunks: refs,
            },
        );
        report.chunked += 1;
    }
    (options.progress)(Phase::Chunking, total, total);
    let gone: Vec<String> = catalog
        .files
        .keys()
        .filter(|p| !seen.contains(*p))
        .cloned()
        .collect();
    for p in &gone {
        catalog.files.remove(p);
    }
    report.removed = gone.len();
    replaced.extend(gone);
    report.chunks_added = added.len();
    if clear || !replaced.is_empty() || !added.is_empty() || catalog.synced_at == 0 {
        catalog.generation += 1;
        lexical.update(
            &layout.lexical,
            clear,
            &replaced,
            &added,
            catalog.generation,
        )?;
    }
    catalog.synced_at = now();
    catalog.save(&layout.catalog)?;
    report.files = catalog.files.len();
    report.chunks = catalog.chunk_count();

    Ok((catalog, lexical, added))
}

/// Only the first phase of [`sync`]: every file searchable by its words, in seconds; the
/// vectors are left to a full sync.
pub fn sync_files(root: &Root, chunk_max_tokens: usize) -> Result<SyncReport, Error> {
    let started = Instant::now();
    let layout = Layout::of(root);
    state_dir::check_path(&layout.dir.join("-")).map_err(|e| Error::io(&layout.dir, e))?;
    crate::codeintel::gitignore::ensure_gitignore(root.path())
        .map_err(|e| Error::io(&layout.dir, e))?;
    std::fs::create_dir_all(&layout.dir).map_err(|e| Error::io(&layout.dir, e))?;
    let _lock = WriteLock::acquire_at(&layout.lock)?;
    let mut report = SyncReport::default();
    let options = SyncOptions {
        chunk_max_tokens,
        rebuild: false,
        progress: &|_, _, _| {},
    };
    chunk_files(root, &layout, &options, &mut report)?;
    report.unembedded = report.chunks;
    report.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(report)
}
