//! Semantic search: the repository cut into chunks along its definitions, a lexical
//! (BM25) and a vector index over the same chunks, and a search that fuses both.
//!
//! Everything lives under `.code-intel/semantic/` (see [`Layout`]); [`sync::sync`]
//! writes it, holding the semantic lock; [`search::SemanticIndex`] reads it.
//!
//! ## The parts
//!
//! Semantic search over chunks of the repository. `chunk` cuts a file along the
//! definitions the symbol index's `Tagger` finds (a definition per chunk when it fits the
//! token budget; a larger one split into its header and members; small neighbours merged;
//! Markdown by heading, other text by runs of lines) and names each chunk `path#symbol`,
//! unique by construction. `tokens` has the code-aware words (identifiers split at
//! `snake_case`/`camelCase`, the whole kept) and the token estimate. `lexical` is a tantivy
//! index of the chunks (BM25 over those words, a boosted field of symbol names, and the
//! chunk's stored text, which `fetch_chunk_detail` reads). `embed` is the model behind one API: ONNX
//! Runtime and the model loaded from files through fastembed, once per process, or an
//! OpenAI-compatible embedding server (`semantic.endpoint`). `vectors` is the append-only,
//! content-addressed vector log and the exact nearest-neighbour scan. `store` is the seam
//! sync and search use: the log (the default) or a ChromaDB collection that every clone of
//! a team shares (`semantic.vector_store`). `catalog` is the
//! source of truth: the files synced, their SHA-256, and their chunks' ids and content
//! hashes. `sync` has two phases under two locks: chunking (catalog and lexical index,
//! seconds) and embedding (minutes, batch by batch). `search::SemanticIndex` fuses the name,
//! lexical and vector rankings by weighted reciprocal rank, counting tests and prose at a
//! fraction unless the query asks for them (`role`); from `hnsw_min_chunks` vectors on
//! the server gives it an instant-distance HNSW graph (built off the answering thread, kept
//! across syncs that only appended vectors; newer vectors are scanned exactly). `map` is the
//! Map of agreements that the server writes when a session ends in success
//! (`server::agreement` reads the request's symbols and files from the session's own
//! evidence) and `semantic_search` consults first: a hit at or above `map_threshold` answers
//! without the chunks unless `collection: both` asks for them. `eval` scores the rankings on labelled queries (`code-intel semantic-eval`).
//! `install` is `code-intel model install`: the pinned runtime and weights fetched into the
//! user's cache, the ONNX graph (fp32 or INT8) built from the safetensors in Rust (no
//! Python), checked and named in the cache's manifest, which [`model_spec`] falls back on.

pub(crate) mod catalog;
pub(crate) mod chunk;
pub(crate) mod embed;
pub(crate) mod error;
pub(crate) mod eval;
pub(crate) mod install;
pub(crate) mod layout;
pub(crate) mod lexical;
pub(crate) mod map;
pub(crate) mod role;
pub(crate) mod search;
pub(crate) mod store;
pub(crate) mod sync;
pub(crate) mod tokens;
pub(crate) mod vectors;

use std::path::{Path, PathBuf};

pub use embed::{Embedder, EmbedderSpec, EndpointSpec, ModelError, ModelSpec};
pub use error::{Error, StoreError};
pub use install::bert::{BuildError, Precision, build_bert_onnx};
pub use install::safetensors::SafetensorsError;
pub use search::{ChunkDetail, Hit, SearchResult, SemanticIndex, VectorFailure};
pub use sync::{Phase, SyncOptions, SyncReport, sync, sync_files};

use crate::config::SemanticSettings;
use crate::environment::Environment;

/// The embedding server when one is configured (`semantic.endpoint` or
/// `CODE_INTEL_EMBEDDING_URL` in `env`), else the local model ([`model_spec`]).
pub fn embedder_spec(
    root: &Path,
    settings: &SemanticSettings,
    env: &Environment,
) -> Result<EmbedderSpec, ModelError> {
    match embed::endpoint::spec(settings, env)? {
        Some(endpoint) => Ok(EmbedderSpec::Endpoint(endpoint)),
        None => model_spec(root, settings, env).map(EmbedderSpec::Local),
    }
}

/// Where the runtime and the model are: each from its variable in `env`, else the setting
/// (relative paths are relative to the root), else the model `code-intel model install`
/// made active in the cache `env` locates (`CODE_INTEL_CACHE_DIR`, `XDG_CACHE_HOME`,
/// `HOME`). [`Environment::empty`] means settings only.
pub fn model_spec(
    root: &Path,
    settings: &SemanticSettings,
    env: &Environment,
) -> Result<ModelSpec, ModelError> {
    install::resolve(root, settings, env).map(|r| r.spec)
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
