//! Loading the contract a command works on: a file named on the command line, or the
//! one the repository runs (`lint::repository`), with its diagnostics rendered into a
//! [`CliError`] when it has errors.

use std::path::Path;

use super::error::CliError;
use crate::contract::{Contract, Loaded, Registry};
use crate::diagnostic::render;
use crate::lint;
use crate::source::Sources;

/// `file`, or the contract the repository at `root` runs, loaded for `hosts` and linted.
pub(super) fn load_contract_and_sources(
    root: &Path,
    file: Option<&Path>,
    hosts: &[Registry],
) -> Result<(Contract, Sources), CliError> {
    let mut sources = Sources::default();
    let loaded = match file {
        Some(path) => {
            let name = path.display().to_string();
            lint::load_bytes_and_lint(
                &mut sources,
                name,
                std::fs::read(path).map_err(|e| CliError::read(path, e))?,
                hosts,
            )
        }
        None => repository_contract(&mut sources, root, hosts)?,
    };
    let diagnostics = loaded.diagnostics.clone();
    match loaded.ok() {
        Ok(contract) => Ok((contract, sources)),
        Err(_) => Err(CliError::InvalidContract {
            rendered: render::human(&sources, &diagnostics),
        }),
    }
}

/// The contract the repository at `root` runs ([`lint::repository::for_repository`]), for
/// `hosts`; an unreadable overlay is a [`CliError`].
pub(super) fn repository_contract(
    sources: &mut Sources,
    root: &Path,
    hosts: &[Registry],
) -> Result<Loaded, CliError> {
    lint::repository::for_repository(sources, root, hosts).map_err(|e| match e {
        lint::repository::RepositoryContractError::Read { path, source } => {
            CliError::read(path, source)
        }
        lint::repository::RepositoryContractError::Undecodable(d) => CliError::InvalidContract {
            rendered: render::human(sources, &[d]),
        },
    })
}
