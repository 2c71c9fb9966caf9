//! Which contract a repository runs: its overlay of the built-in flow
//! (`.code-intel/phase_contract.yml`, `extends: builtin`) when it has one, else the
//! built-in flow; loaded for the hosts given and linted. Every command that runs or
//! explains "this repository's flow" (`serve`, `init`, `show`, `graph`, `matrix`) asks
//! here, so they cannot disagree on what the project runs. A running host passes only its
//! own registry: a contract for another host is refused at loading, not later.

use std::path::{Path, PathBuf};

use crate::contract::{self, Loaded, Registry};
use crate::diagnostic::Diagnostic;
use crate::source::Sources;

/// Why there is no loaded contract to look at.
#[derive(Debug)]
pub enum RepositoryContractError {
    /// The overlay exists but cannot be read.
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The overlay is not UTF-8 text (the diagnostic says where; its file is in the
    /// sources).
    Undecodable(Diagnostic),
}

/// Loads and lints the contract the repository at `root` runs. Whether it has errors is
/// the caller's question (`Loaded::ok`), with the diagnostics' spans in `sources`. The
/// overlay is named as the user would find it: relative to the working directory when
/// `root` is it, else under `root`.
pub fn for_repository(
    sources: &mut Sources,
    root: &Path,
    hosts: &[Registry],
) -> Result<Loaded, RepositoryContractError> {
    let path = root.join(contract::PROJECT_CONTRACT);
    let overlay = if path.is_file() {
        let bytes = std::fs::read(&path).map_err(|source| RepositoryContractError::Read {
            path: path.clone(),
            source,
        })?;
        let name = if root == Path::new(".") {
            contract::PROJECT_CONTRACT.to_string()
        } else {
            path.display().to_string()
        };
        let text =
            super::decode(sources, &name, bytes).map_err(RepositoryContractError::Undecodable)?;
        Some((name, text))
    } else {
        None
    };
    Ok(super::load_layered_and_lint(sources, overlay, hosts))
}
