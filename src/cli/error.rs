//! Errors at the command-line boundary and the exit status each one gives. Domain errors
//! arrive typed; this is the one place that turns them into text and exit codes.

use std::fmt;
use std::path::PathBuf;

use crate::analysis::matrix::MatrixError;
use crate::client::init::InitError;
use crate::contract::flags::FlagError;
use crate::server::checkpoint::CheckpointError;
use crate::server::core::ServerError;
use crate::server::service::ServeError;

#[derive(Debug)]
pub(super) enum CliError {
    /// A file or directory that could not be read (exit 2).
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A flag string given on the command line that the contract refuses (exit 2).
    Flags(FlagError),
    /// An `--intent` the contract does not declare; `known` lists its intents (exit 2).
    UnknownIntent { intent: String, known: Vec<String> },
    /// The contract has errors; its diagnostics, already rendered (exit 1).
    InvalidContract { rendered: String },
    /// The matrix of a contract whose columns do not parse (exit 1).
    Matrix(MatrixError),
    /// The checkpoint key could not be read or made (exit 2).
    Key(CheckpointError),
    /// The MCP server could not start (exit 2).
    Server(ServerError),
    /// The MCP server stopped with an error (exit 2).
    Serve(ServeError),
    /// `init` refused to set the project up and wrote nothing (exit 2).
    Init(InitError),
    /// An argument names something the contract does not have (exit 2).
    Usage(String),
    /// An answer could not be written as JSON (exit 2): said, rather than printing nothing.
    Encode(serde_json::Error),
}

impl CliError {
    pub(super) fn read(path: impl Into<PathBuf>, source: std::io::Error) -> CliError {
        CliError::Read {
            path: path.into(),
            source,
        }
    }

    /// 1 for a problem in the contract, 2 for usage and IO errors, as documented.
    pub(super) fn exit_code(&self) -> u8 {
        match self {
            CliError::Read { .. }
            | CliError::Flags(_)
            | CliError::UnknownIntent { .. }
            | CliError::Key(_)
            | CliError::Server(_)
            | CliError::Serve(_)
            | CliError::Init(_)
            | CliError::Usage(_)
            | CliError::Encode(_) => 2,
            CliError::InvalidContract { .. } | CliError::Matrix(_) => 1,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Read { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())
            }
            CliError::Flags(e) => e.fmt(f),
            CliError::UnknownIntent { intent, known } => write!(
                f,
                "unknown intent `{intent}`; the contract's intents are: {}",
                known.join(", ")
            ),
            CliError::InvalidContract { rendered } => f.write_str(rendered),
            CliError::Matrix(e) => e.fmt(f),
            CliError::Key(e) => e.fmt(f),
            CliError::Server(e) => e.fmt(f),
            CliError::Serve(e) => e.fmt(f),
            CliError::Init(e) => e.fmt(f),
            CliError::Usage(e) => f.write_str(e),
            CliError::Encode(e) => write!(f, "the answer could not be written as JSON: {e}"),
        }
    }
}

impl std::error::Error for CliError {}
