//! Why a code-intelligence call failed, as data: each failure mode is a variant with a
//! stable message key, so the CLI can print it and the MCP server can map it.
//!
//! Messages are lowercase with no trailing period; the key never changes once published,
//! the message may.

use std::path::PathBuf;

/// A failed code-intelligence call. Finding nothing is not an error: it is an empty answer.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A client path was refused or does not exist (`symbols ../outside.rs`).
    Path(PathError),
    /// The repository root cannot be opened (`--root /no/such/dir`, or a file).
    Root { path: PathBuf, reason: String },
    /// A file or directory could not be read or written (`.code-intel/` not writable).
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// No pattern, or only empty ones (`search ""`).
    NoPattern,
    /// A pattern is not a valid regular expression (`search '(' --regex`).
    Pattern(String),
    /// A glob does not parse (`files 'a[b'`).
    Glob { glob: String, message: String },
    /// A file type name is unknown (`search x --type nosuchtype`).
    FileType(String),
    /// The path exists but is not a source file the index covers (`symbols README.md`).
    NotIndexed { path: String, supported: String },
    /// An index file is not a code-intel index, is truncated, or is of an older format.
    /// Readers treat this as "no index" and callers rarely see it.
    IndexCorrupt { path: PathBuf, reason: String },
    /// The request names nothing to work on (`impact` with no target, a question with no
    /// identifier in it).
    NothingToLookFor(&'static str),
    /// A name that is neither a file under the root nor known to the index, and that no
    /// text in the repository mentions (`impact NoSuchThing`).
    NotFound(String),
    /// A directory where a file was needed.
    IsDirectory(String),
    /// A source file over the indexing size limit.
    TooLarge { path: String, size: u64, limit: u64 },
    /// `--kind` names no kind any language has.
    UnknownKind { kind: String, known: String },
    /// An impact section that does not exist; `known` lists them.
    UnknownSection { section: String, known: String },
    /// A tags query does not compile against its grammar, or tagging failed.
    Tags {
        language: &'static str,
        message: String,
    },
    /// A worker thread of a parallel walk panicked.
    Worker(&'static str),
    /// The project's settings (`.code-intel/config.yml`) cannot be used: the message says
    /// where and why.
    Settings(String),
    /// An answer could not be written as JSON (a map key that is not a string, say).
    Encode(serde_json::Error),
}

impl Error {
    /// A stable, dotted identifier of the failure mode, for clients that branch on it.
    pub fn key(&self) -> &'static str {
        match self {
            Error::Path(PathError::OutsideRoot(_)) => "path.outside_root",
            Error::Path(PathError::NotFound(_)) => "path.not_found",
            Error::Root { .. } => "root.invalid",
            Error::Io { .. } => "io",
            Error::NoPattern => "pattern.missing",
            Error::Pattern(_) => "pattern.invalid",
            Error::Glob { .. } => "glob.invalid",
            Error::FileType(_) => "file_type.unknown",
            Error::NotIndexed { .. } => "path.not_indexed",
            Error::IndexCorrupt { .. } => "index.corrupt",
            Error::NothingToLookFor(_) => "request.empty",
            Error::NotFound(_) => "symbol.not_found",
            Error::UnknownKind { .. } => "kind.unknown",
            Error::UnknownSection { .. } => "section.unknown",
            Error::TooLarge { .. } => "path.too_large",
            Error::IsDirectory(_) => "path.is_directory",
            Error::Tags { .. } => "tags.failed",
            Error::Worker(_) => "internal.worker",
            Error::Settings(_) => "config.invalid",
            Error::Encode(_) => "answer.encode",
        }
    }

    /// An IO error on `path`.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Path(e) => e.fmt(f),
            Error::Root { path, reason } => {
                write!(f, "cannot open root {}: {reason}", path.display())
            }
            Error::Io { path, source } => write!(f, "cannot access {}: {source}", path.display()),
            Error::NoPattern => f.write_str("no pattern given"),
            Error::Pattern(e) => write!(f, "invalid pattern: {e}"),
            Error::Glob { glob, message } => write!(f, "invalid glob `{glob}`: {message}"),
            Error::FileType(e) => write!(f, "unknown file type: {e}"),
            Error::NotIndexed { path, supported } => {
                write!(
                    f,
                    "`{path}` is not an indexed source file (supported: {supported})"
                )
            }
            Error::IndexCorrupt { path, reason } => {
                write!(f, "index {} is unusable: {reason}", path.display())
            }
            Error::NothingToLookFor(what) => f.write_str(what),
            Error::IsDirectory(path) => write!(
                f,
                "`{path}` is a directory: give a file (the structure of a directory is `structure`)"
            ),
            Error::TooLarge { path, size, limit } => write!(
                f,
                "`{path}` is {size} bytes, over the {limit}-byte limit for indexing: search it with search_text"
            ),
            Error::UnknownKind { kind, known } => {
                write!(f, "unknown kind `{kind}`; the kinds are: {known}")
            }
            Error::UnknownSection { section, known } => {
                write!(f, "unknown section `{section}`; the sections are: {known}")
            }
            Error::NotFound(name) => write!(
                f,
                "`{name}` was not found: it is not a file under the root, not a symbol the index knows, and no file mentions it"
            ),
            Error::Tags { language, message } => write!(f, "tagging {language}: {message}"),
            Error::Worker(what) => write!(f, "a {what} thread failed"),
            Error::Settings(message) => write!(f, "{message}"),
            Error::Encode(e) => write!(f, "the answer could not be written as JSON: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Path(e) => Some(e),
            Error::Io { source, .. } => Some(source),
            Error::Encode(e) => Some(e),
            _ => None,
        }
    }
}

impl From<PathError> for Error {
    fn from(e: PathError) -> Error {
        Error::Path(e)
    }
}

/// Why a client path was refused or could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathError {
    /// The path leaves the repository root (`..`, an absolute path elsewhere, a symlink).
    OutsideRoot(String),
    NotFound(String),
}

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathError::OutsideRoot(p) => write!(f, "path `{p}` is outside the repository root"),
            PathError::NotFound(p) => write!(f, "path `{p}` does not exist in the repository"),
        }
    }
}

impl std::error::Error for PathError {}
