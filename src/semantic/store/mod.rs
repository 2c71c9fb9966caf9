//! Where the vectors are kept, behind one seam: the embedded log under
//! `.code-intel/semantic/` (the default, one per clone) or a ChromaDB collection that every
//! clone of a team shares (`semantic.vector_store.kind: chroma`).
//!
//! Both are keyed by the content hash of what was embedded, so a store is a set of
//! (hash → vector) for one model. A sync asks which of its live hashes the store lacks,
//! embeds only those and puts them ([`VectorStore`]); a search asks for the nearest vectors
//! among the live chunks of this clone ([`VectorSource`]). With a shared store, one machine
//! embeds a chunk and every other clone with the same text (another branch, another
//! laptop) finds its vector there: nothing is embedded twice in the team.
//!
//! A shared collection holds chunks this clone does not have (other branches, deleted
//! code), so a search must keep only this clone's live hashes. Two ways were weighed:
//! pulling the live vectors into the local log as a cache and searching locally, or asking
//! the server for more neighbours than needed and filtering. The cache is exact and fast
//! but costs every clone its own copy, 1.5 KiB per chunk (1.5 GB at 1M live chunks, with
//! an HNSW graph in memory on top), which is what a shared store is meant to take off the
//! laptops; it also turns every sync into a download of whatever other machines embedded.
//! So the search over-fetches: the server's HNSW answers `n` neighbours, those that are
//! not live here are dropped, and `n` doubles until enough live ones are found or the
//! collection is exhausted (see `chroma::Chroma::nearest`). Clones of one repository
//! share most chunks, so the first request usually suffices.
//!
//! A shared store never deletes: what this clone no longer uses another may still use.
//! When the server cannot be reached a search that needs vectors fails with
//! `semantic.store_unavailable` rather than answer from something else; ranking by words
//! and names works without it, as it does without a model.

pub(crate) mod chroma;
pub(crate) mod select;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::error::Error;
use super::vectors::{Graph, Hash, Vectors};

/// This clone's live chunks, as a search sees them: the chunks of each content hash, and
/// for the embedded log their rows (sorted) and the HNSW graph when one was built.
pub(crate) struct Live<'a> {
    pub(crate) ids: &'a HashMap<Hash, Vec<String>>,
    pub(crate) rows: &'a [u32],
    pub(crate) graph: Option<&'a Graph>,
}

/// What a search needs of a store.
pub(crate) trait VectorSource {
    /// Whether the store has a vector for `hash`.
    fn contains(&self, hash: &Hash) -> bool;

    /// The `k` vectors nearest to `query` among `live`, best first, as (hash, cosine).
    fn nearest(&self, query: &[f32], live: &Live<'_>, k: usize) -> Result<Vec<(Hash, f32)>, Error>;
}

/// What a sync needs of a store.
pub(crate) trait VectorStore: VectorSource {
    /// Of `hashes`, those the store has no vector for, in their order.
    fn missing(&self, hashes: &[Hash]) -> Result<Vec<Hash>, Error>;

    /// Stores vectors of the store's model; durable when this returns.
    fn put(&mut self, batch: &[(Hash, Vec<f32>)]) -> Result<(), Error>;

    /// The sync is over and `live` are the hashes this clone uses: a store of its own may
    /// drop the others.
    fn settle(&mut self, live: &HashSet<Hash>) -> Result<(), Error>;
}

impl VectorSource for Vectors {
    fn contains(&self, hash: &Hash) -> bool {
        Vectors::contains(self, hash)
    }

    fn nearest(&self, query: &[f32], live: &Live<'_>, k: usize) -> Result<Vec<(Hash, f32)>, Error> {
        Ok(match live.graph {
            Some(graph) => self.nearest_with_graph(graph, query, live.rows, k),
            None => self.nearest_rows(query, live.rows, k),
        })
    }
}

/// The embedded log of one clone (`vectors.bin`).
pub(crate) struct Embedded {
    path: PathBuf,
    vectors: Vectors,
}

impl Embedded {
    pub(crate) fn load(path: &Path, model: &str, dimensions: usize) -> Result<Embedded, Error> {
        Ok(Embedded {
            path: path.to_path_buf(),
            vectors: Vectors::load(path, model, dimensions)?,
        })
    }
}

impl VectorSource for Embedded {
    fn contains(&self, hash: &Hash) -> bool {
        self.vectors.contains(hash)
    }

    fn nearest(&self, query: &[f32], live: &Live<'_>, k: usize) -> Result<Vec<(Hash, f32)>, Error> {
        // The rows in `live` are those of the log as a search loaded it; a sync's store
        // has no rows of its own to offer, so it scans its own.
        let rows = self.vectors.rows_of(live.ids.keys());
        Ok(self.vectors.nearest_rows(query, &rows, k))
    }
}

impl VectorStore for Embedded {
    fn missing(&self, hashes: &[Hash]) -> Result<Vec<Hash>, Error> {
        Ok(hashes
            .iter()
            .filter(|h| !self.vectors.contains(h))
            .copied()
            .collect())
    }

    fn put(&mut self, batch: &[(Hash, Vec<f32>)]) -> Result<(), Error> {
        self.vectors.append(&self.path, batch)
    }

    fn settle(&mut self, live: &HashSet<Hash>) -> Result<(), Error> {
        self.vectors.compact(&self.path, live).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::VectorStoreSettings;
    use select::open;

    /// A temporary directory removed when the test ends, pass or fail.
    struct TempDir(PathBuf);

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn the_embedded_store_reports_what_it_lacks_and_keeps_what_it_is_given() {
        let dir = std::env::temp_dir().join(format!("ci-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let _dir = TempDir(dir.clone());
        let log = dir.join("vectors.bin");
        let settings = VectorStoreSettings::default();
        let mut store = open(&settings, &log, "m@1", 2, false).unwrap();
        let (a, b) = ([1u8; 32], [2u8; 32]);
        assert_eq!(store.missing(&[a, b]).unwrap(), [a, b]);
        store.put(&[(a, vec![1.0, 0.0])]).unwrap();
        assert_eq!(store.missing(&[a, b]).unwrap(), [b]);
        // Durable: a store opened again has it; a rebuild starts over.
        let store = open(&settings, &log, "m@1", 2, false).unwrap();
        assert!(store.contains(&a));
        let ids = HashMap::from([(a, vec!["x#a".to_string()])]);
        let live = Live {
            ids: &ids,
            rows: &[],
            graph: None,
        };
        let got = store.nearest(&[1.0, 0.0], &live, 5).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, a);
        let store = open(&settings, &log, "m@1", 2, true).unwrap();
        assert_eq!(store.missing(&[a]).unwrap(), [a]);
    }
}
