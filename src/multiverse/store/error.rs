//! Why a workspace could not be created, opened, read or changed; each failure has a stable
//! dotted key for clients that branch on it, and a message that names the file (and the
//! journal line) at fault.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Who holds a workspace's writer lock, as its lock file says (`super::lock`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    pub pid: u32,
    /// RFC 3339.
    pub since: String,
    /// What the holder is, as its program said ([`super::lock::set_role`]): `run`,
    /// `serve`, `task add`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

impl Holder {
    /// A holder that keeps the workspace until it is stopped (a foreground `run`, a
    /// daemon), rather than for one command.
    pub fn stays(&self) -> bool {
        matches!(self.role.as_deref(), Some("run" | "serve"))
    }
}

/// One thing `check` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Stable: `journal.torn`, `journal.corrupt`, `journal.sequence`,
    /// `journal.line_too_long`, `state.missing`, `state.unreadable`,
    /// `state.ahead_of_journal`, `state.differs`.
    pub key: &'static str,
    /// The file at fault, relative to the workspace.
    pub file: String,
    /// The journal line at fault (1-based), for the journal's findings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    pub problem: String,
    /// What `--repair` does about it.
    pub repair: String,
}

/// A store failure. Nothing in memory or on disk changed when one is returned from a
/// mutation, except where a variant says otherwise.
#[derive(Debug)]
pub enum StoreError {
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// `workspace.json` is missing: the directory was never initialised.
    NotAWorkspace {
        dir: PathBuf,
    },
    /// `init` on a directory that already holds a workspace.
    AlreadyAWorkspace {
        dir: PathBuf,
    },
    /// `workspace.json` cannot be read as a workspace description.
    BadMeta {
        path: PathBuf,
        reason: String,
    },
    /// A workspace written by a newer (or unknown) layout.
    UnsupportedVersion {
        path: PathBuf,
        version: u32,
        supported: u32,
    },
    /// Another writer holds the workspace (`None` when it has not said who it is yet).
    Locked {
        lock_file: PathBuf,
        holder: Option<Holder>,
    },
    /// A complete journal line (one that ends in a newline) that is not an entry: damage
    /// that a crash cannot cause, so the journal is not trusted past it.
    JournalCorrupt {
        path: PathBuf,
        line: u64,
        reason: String,
    },
    /// A journal line longer than [`super::journal::MAX_LINE_BYTES`].
    JournalLineTooLong {
        path: PathBuf,
        line: u64,
        limit: u64,
    },
    /// The entries do not count 1, 2, 3, ...: lines lost, repeated or reordered.
    JournalSequence {
        path: PathBuf,
        line: u64,
        expected: u64,
        found: u64,
    },
    /// A state file says it holds entries the journal does not have: the journal lost
    /// entries after they were acknowledged, so neither can be trusted alone.
    StateAheadOfJournal {
        path: PathBuf,
        state_seq: u64,
        journal_seq: u64,
    },
    /// One mutation's entry is larger than a journal line may be; nothing was written.
    EntryTooLarge {
        bytes: u64,
        limit: u64,
    },
    /// An append failed and the partial line could not be cut off again; this handle
    /// refuses further writes (reopening the workspace drops the partial line).
    JournalPoisoned {
        path: PathBuf,
    },
    Encode(serde_json::Error),
    /// `multiverse check` found the state files or the journal damaged (a start refuses
    /// until `multiverse check --repair`).
    Damaged {
        dir: PathBuf,
        findings: Vec<Finding>,
    },
}

impl StoreError {
    /// A stable, dotted identifier of the failure mode.
    pub fn key(&self) -> &'static str {
        match self {
            StoreError::Io { .. } => "io",
            StoreError::NotAWorkspace { .. } => "workspace.missing",
            StoreError::AlreadyAWorkspace { .. } => "workspace.exists",
            StoreError::BadMeta { .. } => "workspace.invalid",
            StoreError::UnsupportedVersion { .. } => "workspace.version",
            StoreError::Locked { .. } => "workspace.locked",
            StoreError::JournalCorrupt { .. } => "journal.corrupt",
            StoreError::JournalLineTooLong { .. } => "journal.line_too_long",
            StoreError::JournalSequence { .. } => "journal.sequence",
            StoreError::StateAheadOfJournal { .. } => "state.ahead_of_journal",
            StoreError::EntryTooLarge { .. } => "journal.entry_too_large",
            StoreError::JournalPoisoned { .. } => "journal.poisoned",
            StoreError::Encode(_) => "encode",
            StoreError::Damaged { .. } => "workspace.damaged",
        }
    }

    /// The journal line at fault, for the variants that have one (1-based).
    pub fn line(&self) -> Option<u64> {
        match self {
            StoreError::JournalCorrupt { line, .. }
            | StoreError::JournalLineTooLong { line, .. }
            | StoreError::JournalSequence { line, .. } => Some(*line),
            _ => None,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> StoreError {
        let path = path.into();
        move |error| StoreError::Io { path, error }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            StoreError::NotAWorkspace { dir } => write!(
                f,
                "{} is not a Multiverse workspace (no workspace.json); run `multiverse init` first",
                dir.display()
            ),
            StoreError::AlreadyAWorkspace { dir } => write!(
                f,
                "{} already holds a Multiverse workspace; nothing was changed",
                dir.display()
            ),
            StoreError::BadMeta { path, reason } => {
                write!(
                    f,
                    "{} is not a workspace description: {reason}",
                    path.display()
                )
            }
            StoreError::UnsupportedVersion {
                path,
                version,
                supported,
            } => write!(
                f,
                "{} has layout version {version}, which this multiverse does not know (it knows {supported})",
                path.display(),
            ),
            StoreError::Locked {
                holder: Some(h), ..
            } => match h.role.as_deref() {
                Some("run") => write!(
                    f,
                    "`multiverse run` (pid {pid}, since {}) runs this workspace in the foreground and takes no commands: stop it (Ctrl-C in its terminal, or `kill -INT {pid}`) and try again; `multiverse serve` (or `ide`) runs the plan with a daemon that takes commands meanwhile",
                    h.since,
                    pid = h.pid
                ),
                Some(role) => write!(
                    f,
                    "`multiverse {role}` (pid {}, since {}) holds this workspace",
                    h.pid, h.since
                ),
                None => write!(
                    f,
                    "another process (pid {}, since {}) holds this workspace",
                    h.pid, h.since
                ),
            },
            StoreError::Locked {
                lock_file,
                holder: None,
            } => write!(
                f,
                "another process holds this workspace (lock {})",
                lock_file.display()
            ),
            StoreError::JournalCorrupt { path, line, reason } => write!(
                f,
                "{} line {line} is not a journal entry ({reason}); the journal is damaged, nothing was read past it",
                path.display()
            ),
            StoreError::JournalLineTooLong { path, line, limit } => write!(
                f,
                "{} line {line} is longer than {limit} bytes; the journal is damaged",
                path.display()
            ),
            StoreError::JournalSequence {
                path,
                line,
                expected,
                found,
            } => write!(
                f,
                "{} line {line} has entry {found} where entry {expected} should be; entries were lost or repeated",
                path.display()
            ),
            StoreError::StateAheadOfJournal {
                path,
                state_seq,
                journal_seq,
            } => write!(
                f,
                "{} holds entries up to {state_seq} but the journal ends at {journal_seq}; the journal lost entries",
                path.display()
            ),
            StoreError::EntryTooLarge { bytes, limit } => write!(
                f,
                "a change of {bytes} bytes is larger than a journal entry may be ({limit}); nothing was written"
            ),
            StoreError::JournalPoisoned { path } => write!(
                f,
                "{}: an earlier append failed and could not be undone; reopen the workspace",
                path.display()
            ),
            StoreError::Encode(e) => write!(f, "could not encode a journal entry: {e}"),
            StoreError::Damaged { dir, findings } => {
                write!(f, "the workspace {} is damaged:", dir.display())?;
                for finding in findings {
                    let line = finding.line.map(|l| format!(":{l}")).unwrap_or_default();
                    write!(
                        f,
                        "\n  {}{line}: {} [{}]",
                        finding.file, finding.problem, finding.key
                    )?;
                }
                write!(
                    f,
                    "\nrun `multiverse check` to see what a repair does, and `multiverse check --repair` to do it"
                )
            }
        }
    }
}

impl std::error::Error for StoreError {}

/// A [`super::Workspace::mutate`] that did not happen: the caller's decision refused it,
/// or the store could not journal it. Either way nothing changed.
#[derive(Debug)]
pub enum MutateError<E> {
    Rejected(E),
    Store(StoreError),
}

impl<E: fmt::Display> fmt::Display for MutateError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MutateError::Rejected(e) => e.fmt(f),
            MutateError::Store(e) => e.fmt(f),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for MutateError<E> {}

impl<E> From<StoreError> for MutateError<E> {
    fn from(e: StoreError) -> MutateError<E> {
        MutateError::Store(e)
    }
}
