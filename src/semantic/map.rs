//! The Map: agreements learned from finished sessions. A session that ended in success
//! records its request with the symbols and files that answered it; a later search whose
//! query is close enough to a recorded request gets that agreement first.
//!
//! Closeness is the cosine of the two queries' embeddings when a model is loaded, and the
//! overlap of their words (Jaccard) otherwise, so the Map works, more bluntly, without
//! one. The file (`map.json`) is small and rewritten atomically on every change.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::error::Error;
use super::tokens;
use super::vectors::dot;
use crate::codeintel::store::atomic_write;

const VERSION: u32 = 1;
/// Agreements kept; the oldest go first.
const MAX_AGREEMENTS: usize = 2_000;

/// One agreement: a request and what answered it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Agreement {
    pub query: String,
    pub symbols: Vec<String>,
    pub files: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// Unix seconds.
    pub recorded_at: u64,
    /// The query's embedding, and the model that made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vector: Vec<f32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct MapFile {
    version: u32,
    agreements: Vec<Agreement>,
}

/// A Map hit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct MapHit {
    pub query: String,
    pub symbols: Vec<String>,
    pub files: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    pub similarity: f32,
    /// `embedding` or `words`: how the similarity was measured.
    pub measured_by: &'static str,
}

/// The agreements of a repository.
#[derive(Debug, Default)]
pub(crate) struct AgreementMap {
    agreements: Vec<Agreement>,
}

impl AgreementMap {
    /// The Map at `path`; empty when there is none or it cannot be read.
    pub(crate) fn load(path: &Path) -> AgreementMap {
        let agreements = std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice::<MapFile>(&b).ok())
            .filter(|m| m.version == VERSION)
            .map(|m| m.agreements)
            .unwrap_or_default();
        AgreementMap { agreements }
    }

    /// Adds an agreement (replacing one with the same query) and saves the Map.
    pub(crate) fn record(&mut self, path: &Path, agreement: Agreement) -> Result<(), Error> {
        self.agreements.retain(|a| a.query != agreement.query);
        self.agreements.push(agreement);
        if self.agreements.len() > MAX_AGREEMENTS {
            let extra = self.agreements.len() - MAX_AGREEMENTS;
            self.agreements.drain(..extra);
        }
        let file = MapFile {
            version: VERSION,
            agreements: self.agreements.clone(),
        };
        let bytes =
            serde_json::to_vec(&file).map_err(|e| Error::io(path, std::io::Error::other(e)))?;
        atomic_write(path, &bytes).map_err(|e| Error::io(path, e))
    }

    /// Agreements at least `threshold` similar to `query`, most similar first. With
    /// `query_vector` (and `model`), agreements embedded by that model compare by cosine;
    /// the others by words.
    pub(crate) fn search(
        &self,
        query: &str,
        query_vector: Option<(&str, &[f32])>,
        threshold: f32,
        k: usize,
    ) -> Vec<MapHit> {
        let words: BTreeSet<String> = tokens::query_words(query).into_iter().collect();
        let mut hits: Vec<MapHit> = self
            .agreements
            .iter()
            .map(|a| {
                let (similarity, measured_by) = match query_vector {
                    Some((model, v))
                        if a.model.as_deref() == Some(model) && a.vector.len() == v.len() =>
                    {
                        (dot(v, &a.vector), "embedding")
                    }
                    _ => {
                        let theirs: BTreeSet<String> =
                            tokens::query_words(&a.query).into_iter().collect();
                        let common = words.intersection(&theirs).count();
                        let all = words.union(&theirs).count();
                        (common as f32 / all.max(1) as f32, "words")
                    }
                };
                MapHit {
                    query: a.query.clone(),
                    symbols: a.symbols.clone(),
                    files: a.files.clone(),
                    notes: a.notes.clone(),
                    similarity,
                    measured_by,
                }
            })
            .filter(|h| h.similarity >= threshold)
            .collect();
        hits.sort_by(|a, b| b.similarity.total_cmp(&a.similarity));
        hits.truncate(k);
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A temporary directory removed when the test ends, pass or fail.
    struct TempDir(std::path::PathBuf);

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn agreement(query: &str, vector: Vec<f32>) -> Agreement {
        Agreement {
            query: query.into(),
            symbols: vec!["PasswordResetForm.send_mail".into()],
            files: vec!["auth/forms.py".into()],
            notes: None,
            recorded_at: 1,
            model: (!vector.is_empty()).then(|| "m".to_string()),
            vector,
        }
    }

    #[test]
    fn a_close_query_finds_its_agreement_by_words_or_by_embedding() {
        let dir = std::env::temp_dir().join(format!("ci-map-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let _dir = TempDir(dir.clone());
        let path = dir.join("map.json");
        let mut map = AgreementMap::load(&path);
        map.record(&path, agreement("fix the password reset email", vec![]))
            .unwrap();
        map.record(
            &path,
            agreement("speed up the admin changelist", vec![0.0, 1.0]),
        )
        .unwrap();
        let map = AgreementMap::load(&path);
        assert_eq!(map.agreements.len(), 2);
        let hits = map.search("the password reset email is wrong", None, 0.5, 5);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].measured_by, "words");
        assert_eq!(hits[0].symbols, ["PasswordResetForm.send_mail"]);
        let hits = map.search("anything", Some(("m", &[0.0, 1.0])), 0.7, 5);
        assert_eq!(hits[0].query, "speed up the admin changelist");
        assert_eq!(hits[0].measured_by, "embedding");
        assert!(map.search("unrelated words", None, 0.7, 5).is_empty());
    }
}
