//! The embedding model behind one API: the local model (`local`, fastembed over ONNX
//! Runtime, the default) or an OpenAI-compatible `/v1/embeddings` server (`endpoint`:
//! TEI, vLLM, Ollama, OpenAI). Callers see `id()`, `dimensions()` and `embed()`, which
//! returns unit vectors in the caller's order whichever backend made them.
//!
//! See docs/semantic-model.md ("An embedding server" for the endpoint).

pub(crate) mod endpoint;
pub(crate) mod local;

use std::path::PathBuf;

pub use endpoint::EndpointSpec;
pub use local::ModelSpec;
pub(crate) use local::{ENV_MODEL_PATH, ENV_RUNTIME};

/// Texts per model call of the local model: large enough to keep both cores busy, small
/// enough that one batch of long chunks stays well under a gigabyte. The sync hands the
/// local model this many texts at a time.
pub(crate) const BATCH: usize = 32;

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
}

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelError::NotConfigured { missing } => write!(
                f,
                "no embedding model is configured ({missing} is not set): vector search is off and results are lexical only; run tests/model/fetch.sh DIR and set {ENV_RUNTIME}=DIR/libonnxruntime.so and {ENV_MODEL_PATH}=DIR/all-minilm-l6-v2 (or semantic.onnxruntime_path and semantic.embedding_model_path in .code-intel/config.yml), or name an embedding server in semantic.endpoint"
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

/// Which backend to load: the local model's files or an embedding server.
#[derive(Debug, Clone, PartialEq)]
pub enum EmbedderSpec {
    Local(ModelSpec),
    Endpoint(EndpointSpec),
}

enum Backend {
    Local(local::Local),
    Endpoint(endpoint::Endpoint),
}

/// A loaded model, local or remote.
pub struct Embedder {
    backend: Backend,
    /// Stored with every vector, so another model forces a re-embedding: the local
    /// model's name and file hash, or the endpoint's model name and dimensions.
    id: String,
    dimensions: usize,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("id", &self.id)
            .field("dimensions", &self.dimensions)
            .finish_non_exhaustive()
    }
}

impl Embedder {
    /// Loads the local runtime (once per process) and model.
    pub fn load(spec: &ModelSpec) -> Result<Embedder, ModelError> {
        let (model, id, dimensions) = local::Local::load(spec)?;
        Ok(Embedder {
            backend: Backend::Local(model),
            id,
            dimensions,
        })
    }

    /// An embedding server; asks it once for its dimensions unless they are configured.
    pub fn connect(spec: &EndpointSpec) -> Result<Embedder, ModelError> {
        let (endpoint, id, dimensions) = endpoint::Endpoint::connect(spec)?;
        Ok(Embedder {
            backend: Backend::Endpoint(endpoint),
            id,
            dimensions,
        })
    }

    /// Whichever backend `spec` names.
    pub fn open(spec: &EmbedderSpec) -> Result<Embedder, ModelError> {
        match spec {
            EmbedderSpec::Local(spec) => Embedder::load(spec),
            EmbedderSpec::Endpoint(spec) => Embedder::connect(spec),
        }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// How many texts a caller embedding many should hand over per call: one batch of the
    /// local model, or enough batches to keep every allowed request to a server busy.
    pub fn texts_per_call(&self) -> usize {
        match &self.backend {
            Backend::Local(_) => BATCH,
            Backend::Endpoint(e) => e.texts_per_call(),
        }
    }

    fn batch(&self) -> usize {
        match &self.backend {
            Backend::Local(_) => BATCH,
            Backend::Endpoint(e) => e.batch(),
        }
    }

    /// Unit-length vectors of `texts`, in order.
    ///
    /// The texts are embedded shortest first, so each batch holds texts of about one
    /// length: the local model pads a batch to its longest text, and a server's batches
    /// cost about the same. The vectors come back in the caller's order.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ModelError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let order = by_length(texts);
        let sorted: Vec<&str> = order.iter().map(|&i| texts[i]).collect();
        let batches: Vec<&[&str]> = sorted.chunks(self.batch().max(1)).collect();
        let embedded: Vec<Vec<Vec<f32>>> = match &self.backend {
            Backend::Local(model) => batches
                .iter()
                .map(|batch| model.embed(batch))
                .collect::<Result<_, _>>()?,
            Backend::Endpoint(server) => server.embed_batches(&batches)?,
        };
        let vectors: Vec<Vec<f32>> = embedded.into_iter().flatten().collect();
        if vectors.len() != texts.len() || vectors.iter().any(|v| v.len() != self.dimensions) {
            return Err(ModelError::Embedding(format!(
                "{} vectors of {} dimensions expected",
                texts.len(),
                self.dimensions
            )));
        }
        Ok(restore(&order, vectors))
    }
}

/// The indices of `texts`, shortest text first (ties in the caller's order).
fn by_length(texts: &[&str]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| texts[i].len());
    order
}

/// `sorted[k]` belongs at `order[k]`: puts each back in the caller's place.
fn restore<T: Default>(order: &[usize], sorted: Vec<T>) -> Vec<T> {
    let mut out: Vec<T> = std::iter::repeat_with(T::default)
        .take(sorted.len())
        .collect();
    for (&at, item) in order.iter().zip(sorted) {
        out[at] = item;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_go_shortest_first_and_come_back_in_the_callers_order() {
        let texts = ["ccc", "a", "bb", "", "dd"];
        let order = by_length(&texts);
        assert_eq!(order, [3, 1, 2, 4, 0]);
        let sorted: Vec<String> = order.iter().map(|&i| texts[i].to_uppercase()).collect();
        assert_eq!(sorted, ["", "A", "BB", "DD", "CCC"]);
        assert_eq!(restore(&order, sorted), ["CCC", "A", "BB", "", "DD"]);
    }
}
