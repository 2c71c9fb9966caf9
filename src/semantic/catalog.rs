//! The catalog: which files the semantic index covers, their SHA-256 and stamps, and the
//! chunks each one has. It is the source of truth the lexical index and the vectors
//! follow, written atomically after every sync.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::error::Error;
use crate::codeintel::store::atomic_write;

const VERSION: u32 = 1;

/// A chunk of a file: its id and the hash of what is embedded for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ChunkRef {
    pub(crate) id: String,
    /// Hex SHA-256 of the embedding input.
    pub(crate) hash: String,
}

/// A file as last synced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FileRecord {
    pub(crate) size: u64,
    pub(crate) mtime_ns: u64,
    /// Hex SHA-256 of the file.
    pub(crate) sha256: String,
    pub(crate) chunks: Vec<ChunkRef>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Catalog {
    pub(crate) version: u32,
    /// Bumped by every sync; the lexical index's commit carries it.
    pub(crate) generation: u64,
    /// The chunk budget the chunks were made with: another one re-chunks everything.
    pub(crate) chunk_max_tokens: usize,
    /// Unix seconds of the last sync.
    pub(crate) synced_at: u64,
    pub(crate) files: BTreeMap<String, FileRecord>,
}

impl Catalog {
    pub(crate) fn empty(chunk_max_tokens: usize) -> Catalog {
        Catalog {
            version: VERSION,
            generation: 0,
            chunk_max_tokens,
            synced_at: 0,
            files: BTreeMap::new(),
        }
    }

    /// The catalog at `path`; `None` when there is none, or it is unreadable, damaged or
    /// of another version (a sync then starts over).
    pub(crate) fn load(path: &Path) -> Option<Catalog> {
        let bytes = std::fs::read(path).ok()?;
        let catalog: Catalog = serde_json::from_slice(&bytes).ok()?;
        (catalog.version == VERSION).then_some(catalog)
    }

    pub(crate) fn save(&self, path: &Path) -> Result<(), Error> {
        let bytes =
            serde_json::to_vec(self).map_err(|e| Error::io(path, std::io::Error::other(e)))?;
        atomic_write(path, &bytes).map_err(|e| Error::io(path, e))
    }

    pub(crate) fn chunk_count(&self) -> usize {
        self.files.values().map(|f| f.chunks.len()).sum()
    }
}
