//! Why no embedding model could be loaded or run, with a stable key per failure mode, and
//! the environment variables that say where the local model is (its message names them).

use std::path::PathBuf;

/// Overrides `semantic.onnxruntime_path`.
pub(crate) const ENV_RUNTIME: &str = "CODE_INTEL_ORT_DYLIB";
/// Overrides `semantic.embedding_model_path`.
pub(crate) const ENV_MODEL_PATH: &str = "CODE_INTEL_EMBEDDING_MODEL_PATH";

/// Why no model could be loaded or run. Every message names the file, setting or server to
/// fix; none carries an API key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelError {
    /// Nothing says where the model or the runtime is.
    NotConfigured { missing: &'static str },
    /// The ONNX Runtime library could not be loaded.
    Runtime { path: PathBuf, reason: String },
    /// A model file is missing or unreadable, or fastembed refused it.
    Model { path: PathBuf, reason: String },
    /// The model failed on input.
    Embedding(String),
    /// `semantic.endpoint` is set but unusable (no model, a bad URL, its key's variable
    /// unset).
    EndpointConfig(String),
    /// The embedding server did not answer with success, after `attempts` tries.
    Endpoint {
        /// The URL without credentials or query.
        url: String,
        /// The last HTTP status, if there was a response at all.
        status: Option<u16>,
        /// The server's message (trimmed) or the transport error.
        message: String,
        attempts: u32,
    },
    /// The embedding server answered with success but not with the embeddings asked for.
    EndpointResponse { url: String, reason: String },
}

impl ModelError {
    /// A stable key for clients.
    pub fn key(&self) -> &'static str {
        match self {
            ModelError::NotConfigured { .. } => "semantic.model_not_configured",
            ModelError::Runtime { .. } => "semantic.runtime_unavailable",
            ModelError::Model { .. } => "semantic.model_unavailable",
            ModelError::Embedding(_) => "semantic.embedding_failed",
            ModelError::EndpointConfig(_) => "semantic.endpoint_misconfigured",
            ModelError::Endpoint { .. } => "semantic.endpoint_failed",
            ModelError::EndpointResponse { .. } => "semantic.endpoint_bad_response",
        }
    }

    /// Whether an embedding server did not answer: unreachable, timed out, throttled or
    /// failing (5xx). A failure of the moment, which may pass, unlike a key, a URL, a model
    /// name or a setting that is wrong (those stay errors).
    pub fn is_remote(&self) -> bool {
        match self {
            ModelError::Endpoint { status, .. } => status.is_none_or(crate::http_retry::retryable),
            _ => false,
        }
    }
}

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelError::NotConfigured { missing } => write!(
                f,
                "no embedding model is installed or configured ({missing} is not set): vector search is off and results are lexical only; run `code-intel model install` (or set {ENV_RUNTIME} and {ENV_MODEL_PATH}, or semantic.onnxruntime_path and semantic.embedding_model_path in .code-intel/config.yml), or name an embedding server in semantic.endpoint"
            ),
            ModelError::Runtime { path, reason } => write!(
                f,
                "ONNX Runtime could not be loaded from {}: {reason}",
                path.display()
            ),
            ModelError::Model { path, reason } => {
                write!(
                    f,
                    "the embedding model in {} is unusable: {reason}",
                    path.display()
                )
            }
            ModelError::Embedding(reason) => write!(f, "the embedding model failed: {reason}"),
            ModelError::EndpointConfig(reason) => {
                write!(f, "semantic.endpoint is unusable: {reason}")
            }
            ModelError::Endpoint {
                url,
                status,
                message,
                attempts,
            } => {
                let tries = if *attempts == 1 { "try" } else { "tries" };
                match status {
                    Some(status) => write!(
                        f,
                        "the embedding server {url} answered HTTP {status} ({attempts} {tries}): {message}"
                    ),
                    None => write!(
                        f,
                        "the embedding server {url} could not be reached ({attempts} {tries}): {message}"
                    ),
                }
            }
            ModelError::EndpointResponse { url, reason } => {
                write!(
                    f,
                    "the embedding server {url} gave an unusable answer: {reason}"
                )
            }
        }
    }
}

impl std::error::Error for ModelError {}
