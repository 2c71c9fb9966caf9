//! What init is asked to do and what it answers: options, the per-file report, errors.

use std::fmt;
use std::path::PathBuf;

use super::merge::JsonProblem;

/// What the user asked for.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// The repository to set up; must be a directory.
    pub root: PathBuf,
    /// The language of the prompt files: one of the contract's locales.
    pub locale: String,
    /// How clients start code-intel (`code-intel`, or a path to the binary).
    pub command: String,
    /// Overwrite files we generated even when they were edited since.
    pub force: bool,
}

/// What happened to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Status {
    Created,
    Updated,
    Unchanged,
    /// Left as it is; the reason says why and what to do.
    Kept(Kept),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kept {
    /// The file differs from what init last wrote: someone edited it.
    EditedByYou,
    /// The file already configures code-intel itself, outside the part init manages.
    ConfiguredByYou,
}

/// One line of the report, with the path relative to the repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileReport {
    pub path: String,
    pub status: Status,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InitReport {
    pub files: Vec<FileReport>,
    /// What became of the clients' personal files in git's `info/exclude`.
    pub excluded: crate::git::Excluded,
}

impl InitReport {
    /// What a `git add` of the setup names: the files a team shares, `.code-intel/` as
    /// one directory (its `.gitignore` keeps the machine-local part out), personal files
    /// never.
    pub(crate) fn shared_paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = self
            .files
            .iter()
            .map(|f| f.path.as_str())
            .filter(|p| !crate::git::PERSONAL_FILES.contains(p))
            .map(|p| {
                if p.starts_with(".code-intel/") {
                    ".code-intel".to_string()
                } else {
                    p.to_string()
                }
            })
            .collect();
        paths.sort();
        paths.dedup();
        paths
    }
}

/// Why init wrote nothing.
#[derive(Debug)]
pub(crate) enum InitError {
    NotADirectory(PathBuf),
    UnknownLocale {
        locale: String,
        known: Vec<String>,
    },
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A JSON file we merge into does not parse, or has a shape we cannot merge into.
    Json {
        path: String,
        problem: JsonProblem,
    },
    /// A bug in a bundled template (its name and minijinja's message).
    Template {
        name: String,
        message: String,
    },
}

impl fmt::Display for InitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InitError::NotADirectory(p) => write!(f, "{} is not a directory", p.display()),
            InitError::UnknownLocale { locale, known } => write!(
                f,
                "unknown locale `{locale}`; the contract has: {}",
                known.join(", ")
            ),
            InitError::Read { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())
            }
            InitError::Write { path, source } => {
                write!(f, "cannot write {}: {source}", path.display())
            }
            InitError::Json { path, problem } => {
                let separator = match problem {
                    JsonProblem::Syntax { .. } => ":",
                    JsonProblem::Shape { .. } | JsonProblem::Encode(_) => ": ",
                };
                write!(
                    f,
                    "{path}{separator}{problem}; fix it and run init again (nothing was written)"
                )
            }
            InitError::Template { name, message } => {
                write!(f, "bundled template {name} does not render: {message}")
            }
        }
    }
}

impl std::error::Error for InitError {}
