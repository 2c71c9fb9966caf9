//! Which store a sync writes to: the one `semantic.vector_store` names.

use std::path::Path;

use super::chroma::Chroma;
use super::{Embedded, VectorStore};
use crate::config::{VectorStoreKind, VectorStoreSettings};
use crate::semantic::error::Error;

/// The store the settings name, for a sync with `model` (`dimensions` floats a vector).
/// `rebuild` empties the embedded log; a shared store is left as it is (its vectors are
/// keyed by content and model, so none of them can be stale, and other clones use them).
pub(crate) fn open(
    settings: &VectorStoreSettings,
    log: &Path,
    model: &str,
    dimensions: usize,
    rebuild: bool,
) -> Result<Box<dyn VectorStore>, Error> {
    match settings.kind {
        VectorStoreKind::Embedded => {
            if rebuild {
                match std::fs::remove_file(log) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(Error::io(log, e)),
                }
            }
            Ok(Box::new(Embedded::load(log, model, dimensions)?))
        }
        VectorStoreKind::Chroma => Ok(Box::new(Chroma::connect(settings, model, dimensions)?)),
    }
}
