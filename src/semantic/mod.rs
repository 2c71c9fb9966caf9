//! Semantic search: the repository cut into chunks along its definitions, a lexical
//! (BM25) and a vector index over the same chunks, and a search that fuses both.
//!
//! Everything lives under `.code-intel/semantic/` (see [`Layout`]); [`sync::sync`]
//! writes it, holding the semantic lock; [`search::SemanticIndex`] reads it.

pub(crate) mod catalog;
pub(crate) mod chunk;
pub mod embed;
pub mod error;
pub mod eval;
pub(crate) mod layout;
pub(crate) mod lexical;
pub mod map;
pub mod search;
pub mod sync;
pub(crate) mod tokens;
pub(crate) mod vectors;

use std::path::{Path, PathBuf};

pub use embed::{Embedder, ModelError, ModelSpec};
pub use error::Error;
pub use search::{ChunkDetail, Hit, SearchResult, SemanticIndex};
pub use sync::{Phase, SyncOptions, SyncReport, sync, sync_files};

use crate::config::SemanticSettings;

/// Where the runtime and the model are, from the environment or the settings (relative
/// paths are relative to the root).
pub fn model_spec(root: &Path, settings: &SemanticSettings) -> Result<ModelSpec, ModelError> {
    let from = |env: &str, configured: &Option<PathBuf>| -> Option<PathBuf> {
        match std::env::var_os(env) {
            Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
            _ => configured.as_ref().map(|p| root.join(p)),
        }
    };
    let runtime =
        from(embed::ENV_RUNTIME, &settings.onnxruntime_path).ok_or(ModelError::NotConfigured {
            missing: embed::ENV_RUNTIME,
        })?;
    let dir = from(embed::ENV_MODEL_PATH, &settings.embedding_model_path).ok_or(
        ModelError::NotConfigured {
            missing: embed::ENV_MODEL_PATH,
        },
    )?;
    Ok(ModelSpec {
        name: settings.embedding_model.clone(),
        dir,
        runtime,
    })
}

/// Where the Map of `root` is kept.
pub fn map_path(root: &crate::codeintel::root::Root) -> PathBuf {
    layout::Layout::of(root).map
}

/// The size and modification time of the catalog: it changes with every sync, so a
/// reader holding an index can tell whether to reopen it.
pub fn catalog_stamp(root: &crate::codeintel::root::Root) -> Option<(u64, u64)> {
    crate::codeintel::retag::stamp(&layout::Layout::of(root).catalog)
}
