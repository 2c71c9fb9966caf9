//! Why a semantic-search call failed, with a stable key per failure mode (and why a shared
//! vector store did, `StoreError`).

use std::path::{Path, PathBuf};

use super::embed::ModelError;
use crate::codeintel;

/// A failed semantic-search call. No model is not an error (search is lexical then, and
/// says so); a model that is configured but broken is.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// From the code-intelligence layer: the root, a path, the walk.
    Code(codeintel::error::Error),
    /// A file under `.code-intel/semantic/` could not be read or written.
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The lexical index failed.
    Lexical { path: PathBuf, reason: String },
    /// The embedding model failed.
    Model(ModelError),
    /// The shared vector store failed (`semantic.vector_store`).
    Store(StoreError),
    /// The query is empty.
    EmptyQuery,
    /// No chunk has this id (`fetch_chunk_detail`).
    UnknownChunk(String),
    /// `.code-intel/config.yml` could not be read.
    Config(String),
    /// The index was built but cannot be opened (another process removed it meanwhile).
    NotBuilt,
}

impl Error {
    pub fn key(&self) -> &'static str {
        match self {
            Error::Code(e) => e.key(),
            Error::Io { .. } => "semantic.io",
            Error::Lexical { .. } => "semantic.lexical_index",
            Error::Model(e) => e.key(),
            Error::Store(e) => e.key(),
            Error::EmptyQuery => "semantic.empty_query",
            Error::UnknownChunk(_) => "semantic.unknown_chunk",
            Error::Config(_) => "config.invalid",
            Error::NotBuilt => "semantic.not_built",
        }
    }

    /// Whether an embedding server or a shared store did not answer this time (a search
    /// then answers by words); anything else is a fault to report.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Model(e) => e.is_remote(),
            Error::Store(e) => matches!(e, StoreError::Unavailable { .. }),
            _ => false,
        }
    }

    pub(crate) fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn lexical(path: &Path, e: impl std::fmt::Display) -> Error {
        Error::Lexical {
            path: path.to_path_buf(),
            reason: e.to_string(),
        }
    }

    pub(crate) fn lexical_query(e: impl std::fmt::Display) -> Error {
        Error::Lexical {
            path: PathBuf::from(super::layout::LEXICAL_DIR),
            reason: e.to_string(),
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Code(e) => e.fmt(f),
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Lexical { path, reason } => {
                write!(
                    f,
                    "the lexical index in {} failed: {reason}",
                    path.display()
                )
            }
            Error::Model(e) => e.fmt(f),
            Error::Store(e) => e.fmt(f),
            Error::EmptyQuery => write!(f, "the query is empty: describe what you look for"),
            Error::UnknownChunk(id) => write!(
                f,
                "no chunk has the id `{id}`: ids come from semantic_search results and change when their file is re-synced"
            ),
            Error::Config(e) => e.fmt(f),
            Error::NotBuilt => write!(
                f,
                "the semantic index could not be opened after it was built; call sync_index and search again"
            ),
        }
    }
}

impl std::error::Error for Error {}

/// Why a shared store failed, with a stable key per failure mode. Every message names the
/// server's URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The server could not be reached, or answered 5xx.
    Unavailable { url: String, cause: String },
    /// The server refused a request (4xx): a wrong token, tenant or database.
    Rejected {
        url: String,
        status: u16,
        message: String,
    },
    /// The collection holds another model's vectors, or vectors of another dimension.
    ModelMismatch {
        url: String,
        collection: String,
        found: String,
        expected: String,
    },
    /// The server's answer was not what its API says.
    BadResponse { url: String, reason: String },
    /// `semantic.vector_store` cannot be used as it is.
    Settings(String),
}

impl StoreError {
    pub fn key(&self) -> &'static str {
        match self {
            StoreError::Unavailable { .. } => "semantic.store_unavailable",
            StoreError::Rejected { .. } => "semantic.store_rejected",
            StoreError::ModelMismatch { .. } => "semantic.store_model_mismatch",
            StoreError::BadResponse { .. } => "semantic.store_bad_response",
            StoreError::Settings(_) => "semantic.store_settings",
        }
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Unavailable { url, cause } => write!(
                f,
                "the vector store at {url} is unavailable ({cause}): vector search cannot answer until it is back; start it (chroma run, docs/scaling.md) or set semantic.vector_store.kind: embedded"
            ),
            StoreError::Rejected {
                url,
                status,
                message,
            } => write!(
                f,
                "the vector store at {url} refused the request (HTTP {status}): {message}"
            ),
            StoreError::ModelMismatch {
                url,
                collection,
                found,
                expected,
            } => write!(
                f,
                "the collection `{collection}` at {url} holds vectors of {found}, not of {expected}: choose another semantic.vector_store.collection prefix"
            ),
            StoreError::BadResponse { url, reason } => {
                write!(
                    f,
                    "the vector store at {url} answered unexpectedly: {reason}"
                )
            }
            StoreError::Settings(reason) => {
                write!(f, "semantic.vector_store cannot be used: {reason}")
            }
        }
    }
}

impl std::error::Error for StoreError {}

impl From<codeintel::error::Error> for Error {
    fn from(e: codeintel::error::Error) -> Error {
        Error::Code(e)
    }
}

impl From<ModelError> for Error {
    fn from(e: ModelError) -> Error {
        Error::Model(e)
    }
}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Error {
        Error::Store(e)
    }
}
