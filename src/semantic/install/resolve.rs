//! Which runtime and model semantic search uses, and where each was found: the
//! environment variable, else the repository's setting, else the model cache's manifest
//! (its active model and the runtime installed with it). `model status` reports it.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::cache::{self, InstalledModel, InstalledRuntime, Manifest};
use super::catalog::Precision;
use super::check;
use super::error::InstallError;
use crate::config::SemanticSettings;
use crate::environment::Environment;
use crate::semantic::embed::{ENV_MODEL_PATH, ENV_RUNTIME};
use crate::semantic::embed::{Embedder, ModelError, ModelSpec};

/// Where a path was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Origin {
    /// `CODE_INTEL_ORT_DYLIB` or `CODE_INTEL_EMBEDDING_MODEL_PATH`.
    Env,
    /// `.code-intel/config.yml`.
    Config,
    /// The model cache's manifest.
    Cache,
}

/// The model semantic search would load, and where its parts come from.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub(crate) spec: ModelSpec,
    pub(crate) model_from: Origin,
    pub(crate) runtime_from: Origin,
    /// The cache directory looked at, and its manifest's entries for what it supplied.
    pub(crate) cache: Option<PathBuf>,
    pub(crate) installed_model: Option<InstalledModel>,
    pub(crate) installed_runtime: Option<InstalledRuntime>,
}

/// Resolves the runtime and the model: each from its variable in `env`, else its setting
/// (relative to `root`), else the cache `env` locates.
pub(crate) fn resolve(
    root: &Path,
    settings: &SemanticSettings,
    env: &Environment,
) -> Result<Resolved, ModelError> {
    resolve_with_cache(root, settings, env, cache::cache_dir(None, env))
}

pub(crate) fn resolve_with_cache(
    root: &Path,
    settings: &SemanticSettings,
    env: &Environment,
    cache_dir: Option<PathBuf>,
) -> Result<Resolved, ModelError> {
    let from = |variable: &str, configured: &Option<PathBuf>| -> Option<(PathBuf, Origin)> {
        match env.path(variable) {
            Some(path) => Some((path, Origin::Env)),
            None => configured.as_ref().map(|p| (root.join(p), Origin::Config)),
        }
    };
    let runtime = from(ENV_RUNTIME, &settings.onnxruntime_path);
    let model = from(ENV_MODEL_PATH, &settings.embedding_model_path);
    // The cache is read only when it must supply something.
    let manifest = match (&runtime, &model, &cache_dir) {
        (Some(_), Some(_), _) | (_, _, None) => None,
        (_, _, Some(dir)) => Manifest::load(dir).map_err(|e| match e {
            InstallError::ManifestUnreadable { path, reason } => ModelError::Model { path, reason },
            other => ModelError::Model {
                path: dir.join(cache::MANIFEST),
                reason: other.to_string(),
            },
        })?,
    };
    let cached_model = manifest.as_ref().and_then(Manifest::active);
    let cached_runtime = manifest.as_ref().and_then(|m| m.runtime.as_ref());
    let cache_join = |rel: &str| cache_dir.as_ref().map(|c| c.join(rel));
    let (runtime, runtime_from, installed_runtime) = match (runtime, cached_runtime) {
        (Some((path, origin)), _) => (path, origin, None),
        (None, Some(r)) => match cache_join(&r.path) {
            Some(path) => (path, Origin::Cache, Some(r.clone())),
            None => return Err(not_configured(ENV_RUNTIME)),
        },
        (None, None) => return Err(not_configured(ENV_RUNTIME)),
    };
    let (name, dir, model_from, installed_model) = match (model, cached_model) {
        (Some((path, origin)), _) => (settings.embedding_model.clone(), path, origin, None),
        (None, Some((name, m))) => match cache_join(&m.dir) {
            Some(dir) => (name.to_string(), dir, Origin::Cache, Some(m.clone())),
            None => return Err(not_configured(ENV_MODEL_PATH)),
        },
        (None, None) => return Err(not_configured(ENV_MODEL_PATH)),
    };
    Ok(Resolved {
        spec: ModelSpec { name, dir, runtime },
        model_from,
        runtime_from,
        cache: cache_dir,
        installed_model,
        installed_runtime,
    })
}

fn not_configured(missing: &'static str) -> ModelError {
    ModelError::NotConfigured { missing }
}

/// `model status`: what semantic search would use, as recorded and (with `measure`) as
/// measured now.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ModelStatus {
    pub(crate) model: String,
    pub(crate) model_dir: PathBuf,
    pub(crate) model_from: Origin,
    /// From the manifest when the cache supplied the model.
    pub(crate) precision: Option<Precision>,
    /// Of the `model.onnx` on disk now.
    pub onnx_sha256: Option<String>,
    pub(crate) runtime: PathBuf,
    pub(crate) runtime_from: Origin,
    pub(crate) runtime_version: Option<String>,
    /// The threads an embedder runs with on this machine.
    pub(crate) threads: usize,
    pub(crate) cache: Option<PathBuf>,
    /// What the install measured.
    pub(crate) installed: Option<InstalledModel>,
    pub(crate) measured: Option<Measured>,
}

/// A measurement made by `model status --measure`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Measured {
    pub(crate) known_answer: f32,
    pub(crate) chunks_per_second: f64,
    pub(crate) threads: usize,
}

/// The status of the model `root`'s settings resolve to.
pub(crate) fn status(
    root: &Path,
    settings: &SemanticSettings,
    env: &Environment,
    measure: bool,
) -> Result<ModelStatus, ModelError> {
    let r = resolve(root, settings, env)?;
    let onnx_sha256 = super::installer::file_sha(&r.spec.dir.join("model.onnx"));
    let measured = if measure {
        let embedder = Embedder::load(&r.spec)?;
        Some(Measured {
            known_answer: check::known_answer(&embedder)?,
            chunks_per_second: check::measure(&embedder)?,
            threads: check::threads(),
        })
    } else {
        None
    };
    Ok(ModelStatus {
        model: r.spec.name.clone(),
        model_dir: r.spec.dir.clone(),
        model_from: r.model_from,
        precision: r.installed_model.as_ref().map(|m| m.precision),
        onnx_sha256,
        runtime: r.spec.runtime.clone(),
        runtime_from: r.runtime_from,
        runtime_version: r.installed_runtime.as_ref().map(|rt| rt.version.clone()),
        threads: check::threads(),
        cache: r.cache,
        installed: r.installed_model,
        measured,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ci-resolve-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn nothing_anywhere_is_not_configured() {
        let cache = temp("empty");
        let e = resolve_with_cache(
            Path::new("/r"),
            &SemanticSettings::default(),
            &Environment::empty(),
            Some(cache),
        )
        .unwrap_err();
        assert_eq!(e.key(), "semantic.model_not_configured");
        assert!(e.to_string().contains("code-intel model install"), "{e}");
    }

    #[test]
    fn the_cache_supplies_what_the_settings_do_not() {
        let cache = temp("cached");
        let mut m = Manifest::default();
        m.models.insert(
            "all-minilm-l6-v2-int8".into(),
            InstalledModel {
                dir: "models/all-minilm-l6-v2-int8-bc138f8a".into(),
                precision: Precision::Int8,
                onnx_sha256: "bc".repeat(32),
                source: "pypi https://pypi.org/simple".into(),
                installed_at: 1,
                known_answer: 0.76,
                chunks_per_second: 90.0,
                threads: 2,
            },
        );
        m.active = Some("all-minilm-l6-v2-int8".into());
        m.runtime = Some(InstalledRuntime {
            path: "runtime/ort/libonnxruntime.so.1.31.1".into(),
            version: "1.31.1".into(),
            platform: "linux-x86_64".into(),
            sha256: "fc".repeat(32),
            source: "pypi https://pypi.org/simple".into(),
            installed_at: 1,
        });
        m.save(&cache).unwrap();
        let r = resolve_with_cache(
            Path::new("/r"),
            &SemanticSettings::default(),
            &Environment::empty(),
            Some(cache.clone()),
        )
        .unwrap();
        assert_eq!(r.spec.name, "all-minilm-l6-v2-int8");
        assert_eq!(
            r.spec.dir,
            cache.join("models/all-minilm-l6-v2-int8-bc138f8a")
        );
        assert_eq!(
            r.spec.runtime,
            cache.join("runtime/ort/libonnxruntime.so.1.31.1")
        );
        assert_eq!(
            (r.model_from, r.runtime_from),
            (Origin::Cache, Origin::Cache)
        );
        // A setting wins over the cache, part by part.
        let settings = SemanticSettings {
            embedding_model_path: Some("mine".into()),
            ..SemanticSettings::default()
        };
        let r = resolve_with_cache(
            Path::new("/r"),
            &settings,
            &Environment::empty(),
            Some(cache.clone()),
        )
        .unwrap();
        assert_eq!(r.spec.dir, PathBuf::from("/r/mine"));
        assert_eq!(r.spec.name, "all-minilm-l6-v2");
        assert_eq!(
            (r.model_from, r.runtime_from),
            (Origin::Config, Origin::Cache)
        );
        // A variable of the environment given wins over both; nothing else is consulted.
        let env = Environment::empty()
            .with(ENV_RUNTIME, "/ort/libonnxruntime.so")
            .with(ENV_MODEL_PATH, "/models/m");
        let r = resolve_with_cache(Path::new("/r"), &settings, &env, Some(cache.clone())).unwrap();
        assert_eq!(
            (r.spec.runtime.as_path(), r.spec.dir.as_path()),
            (Path::new("/ort/libonnxruntime.so"), Path::new("/models/m"))
        );
        assert_eq!((r.model_from, r.runtime_from), (Origin::Env, Origin::Env));
        let _ = std::fs::remove_dir_all(&cache);
    }
}
