//! Opening the repository root the way every command does: confined paths, with the
//! project's `index.exclude` globs from `.code-intel/config.yml` applied.

use std::path::Path;

use crate::codeintel::error::Error;
use crate::codeintel::root::Root;
use crate::config::Config;

/// The root at `dir`, excluding what the project's config excludes.
pub(super) fn open_root(dir: &Path) -> Result<Root, Error> {
    let root = Root::open(dir)?;
    let config = Config::load(root.path()).map_err(|e| Error::Settings(e.to_string()))?;
    root.excluding(&config.index.exclude)
}
