//! Why the MCP server could not start for a repository. The CLI prints it and exits 2.

use std::fmt;

use crate::codeintel;
use crate::config::ConfigError;

/// A server that did not start: nothing was written.
#[derive(Debug)]
pub enum ServerError {
    /// `.code-intel/config.yml` could not be read.
    Config(ConfigError),
    /// The repository root could not be opened (or its exclusions do not compile).
    Root(codeintel::error::Error),
    /// The contract is for another host.
    WrongHost { contract: String, host: String },
    /// `.code-intel/` is not a plain directory of the repository (a link would take every
    /// write outside it).
    StateDir(std::io::Error),
    /// `.code-intel/.gitignore` could not be written.
    Gitignore(std::io::Error),
}

impl ServerError {
    /// The stable key of the failure.
    pub fn key(&self) -> &'static str {
        match self {
            ServerError::Config(_) => "config.invalid",
            ServerError::Root(e) => e.key(),
            ServerError::WrongHost { .. } => "server.wrong_host",
            ServerError::StateDir(_) => "server.state_dir",
            ServerError::Gitignore(_) => "server.gitignore",
        }
    }
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerError::Config(e) => e.fmt(f),
            ServerError::Root(e) => e.fmt(f),
            ServerError::WrongHost { contract, host } => write!(
                f,
                "the contract `{contract}` is for the host `{host}`, not code-intel"
            ),
            ServerError::StateDir(e) | ServerError::Gitignore(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ServerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServerError::Config(e) => Some(e),
            ServerError::Root(e) => Some(e),
            ServerError::WrongHost { .. } => None,
            ServerError::StateDir(e) | ServerError::Gitignore(e) => Some(e),
        }
    }
}
