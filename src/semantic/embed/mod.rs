//! The embedding model behind one API: the local model (`local`, fastembed over ONNX
//! Runtime, the default) or an OpenAI-compatible `/v1/embeddings` server (`endpoint`:
//! TEI, vLLM, Ollama, OpenAI). Callers see `id()`, `dimensions()` and `embed()`, which
//! returns unit vectors in the caller's order whichever backend made them.
//!
//! See docs/semantic-model.md ("An embedding server" for the endpoint).

pub(crate) mod endpoint;
pub(crate) mod error;
pub(crate) mod local;

pub use endpoint::EndpointSpec;
pub use error::ModelError;
pub(crate) use error::{ENV_MODEL_PATH, ENV_RUNTIME};
pub use local::ModelSpec;

/// Texts per model call of the local model: large enough to keep both cores busy, small
/// enough that one batch of long chunks stays well under a gigabyte. 16 and 32 ran at the
/// same rate on two cores, 64 and 128 5–10 % slower (INT8, Django's code, sorted batches).
pub(crate) const BATCH: usize = 32;
/// Texts the sync hands the local model at a time: eight batches, which [`Embedder::embed`]
/// sorts by length so that each batch pads little. Sorted batches ran 37 % faster than
/// batches in the catalog's order (INT8, Django's code, two cores), and a window this size
/// is still only seconds of work lost to a crash.
const LOCAL_WINDOW: usize = 8 * BATCH;

/// Which backend to load: the local model's files or an embedding server.
#[derive(Debug, Clone, PartialEq)]
pub enum EmbedderSpec {
    Local(ModelSpec),
    Endpoint(EndpointSpec),
}

enum Backend {
    /// Boxed: fastembed's model is large and an `Embedder` is moved around.
    Local(Box<local::Local>),
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
            backend: Backend::Local(Box::new(model)),
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

    /// How many texts a caller embedding many should hand over per call: a window of the
    /// local model's batches to sort by length, or enough batches to keep every allowed
    /// request to a server busy.
    pub fn texts_per_call(&self) -> usize {
        match &self.backend {
            Backend::Local(_) => LOCAL_WINDOW,
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
