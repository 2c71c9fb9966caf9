//! Answering a query: lexical (BM25) and vector rankings over the same chunks, fused by
//! reciprocal rank, each hit saying which rankings found it and whether its file is still
//! as it was synced.

use std::collections::HashMap;

use serde::Serialize;

use super::catalog::Catalog;
use super::embed::Embedder;
use super::error::Error;
use super::layout::{Layout, unhex};
use super::lexical::{Lexical, StoredChunk};
use super::role::{Asks, Role};
use super::store::chroma::Shared;
use super::store::{Live, VectorSource};
use super::vectors::{Graph, Hash, Vectors};
use crate::codeintel::retag::stamp;
use crate::codeintel::root::Root;

/// The constant of reciprocal rank fusion (Cormack et al.): a hit ranked r by a ranking
/// scores 1 / (K + r). 60 is the usual value; it keeps one ranking's top from drowning
/// the other's.
const RRF_K: f32 = 60.0;
/// Lines of a chunk shown with a hit.
const PREVIEW_LINES: usize = 8;
/// How much each ranking's reciprocal ranks count in the fusion. Names count fully: a
/// query that spells a definition's name wants it. Words count a tenth: on the tuning half
/// of benches/django_queries.yml (queries that describe behaviour in a user's words) the
/// word ranking alone finds an answer in the top 10 for under half of them and the vectors
/// for three quarters; at equal weights the fusion fell below the vectors alone. 0.05 to
/// 0.25 score within a query of each other there; a tenth keeps words able to lift a chunk
/// both rankings agree on. With no vectors (no model, or not embedded yet) the weights
/// change nothing: the word and name rankings are then all there is. The vector ranking
/// first takes [`Role::margin`] off the similarity of test and prose chunks
/// ([`rank_by_role`]).
const NAME_WEIGHT: f32 = 1.0;
const LEXICAL_WEIGHT: f32 = 0.1;
const VECTOR_WEIGHT: f32 = 1.0;
/// Lexical hits scoring under this fraction of the best one are dropped.
const LEXICAL_FLOOR: f32 = 0.05;

/// Which rankings a search fuses: all of them, or one side alone (to measure each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ranking {
    /// Names, words and vectors.
    Hybrid,
    /// Names and BM25 over words, no vectors.
    Words,
    /// Vectors only.
    Vector,
}

/// One ranking's opinion of a hit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Signal {
    /// 1-based rank in that ranking.
    pub rank: usize,
    /// BM25 score (lexical) or cosine similarity (vector).
    pub score: f32,
}

/// Whether a hit's file is as it was when it was synced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Freshness {
    Fresh,
    /// Changed since the last sync: lines may have moved.
    Changed,
    /// Deleted since the last sync.
    Deleted,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    pub id: String,
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub symbol: String,
    pub kind: String,
    /// The fused score: the sum over the rankings that found it of weight / (60 + rank).
    pub score: f32,
    /// `name`, `lexical`, `vector`: the rankings that found it.
    pub found_by: Vec<&'static str>,
    /// The query names this chunk's symbol (or the symbol it belongs to).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<Signal>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lexical: Option<Signal>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector: Option<Signal>,
    pub freshness: Freshness,
    /// The chunk's first lines.
    pub preview: String,
}

/// What the vector ranking could do for this answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VectorStatus {
    /// Whether a vector ranking took part.
    pub used: bool,
    /// The model, when one is loaded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Chunks with a vector, of all chunks.
    pub embedded: usize,
    pub chunks: usize,
    /// How many vectors the HNSW graph covered, when one served this answer (the rest
    /// were scanned exactly).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph: Option<usize>,
    /// Why it did not take part, or took part on only some chunks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What kept vectors out of a hybrid answer: an embedding endpoint or a shared store
    /// that did not answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<VectorFailure>,
}

impl VectorStatus {
    /// Marks an answer the words gave alone because the vectors could not be had.
    pub fn failed(&mut self, e: &Error) {
        self.used = false;
        self.graph = None;
        self.note = Some(format!(
            "the vectors could not be had ({}: {e}): results are lexical only",
            e.key()
        ));
        self.error = Some(VectorFailure::of(e));
    }
}

/// Why the vectors could not be had for one answer, which the words then gave alone.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VectorFailure {
    /// The failure's stable key (`semantic.endpoint_failed`, `semantic.store_unavailable`, ...).
    pub key: &'static str,
    pub message: String,
}

impl VectorFailure {
    pub fn of(e: &Error) -> VectorFailure {
        VectorFailure {
            key: e.key(),
            message: e.to_string(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResult {
    pub query: String,
    pub hits: Vec<Hit>,
    pub vector: VectorStatus,
    pub files: usize,
    /// Unix seconds of the last sync.
    pub synced_at: u64,
}

/// An opened semantic index: catalog, lexical index and (with a model) vectors.
pub struct SemanticIndex {
    root: Root,
    catalog: Catalog,
    lexical: Lexical,
    vectors: Option<Vectors>,
    /// Content hash → the chunks with that text.
    by_hash: HashMap<Hash, Vec<String>>,
    /// An HNSW graph over the vectors, once one was built (large indexes only).
    graph: Option<std::sync::Arc<Graph>>,
    /// The vector rows of the live chunks, for the exact scan.
    live_rows: Vec<u32>,
    /// The shared store, when `semantic.vector_store` names one (then `vectors` is None).
    shared: Option<Shared>,
}

impl std::fmt::Debug for SemanticIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemanticIndex")
            .field("generation", &self.catalog.generation)
            .field("files", &self.catalog.files.len())
            .finish_non_exhaustive()
    }
}

impl SemanticIndex {
    /// Opens the index of `root`; `None` when no sync has run yet (or its files do not
    /// agree: a sync repairs that).
    pub fn open(root: &Root, embedder: Option<&Embedder>) -> Result<Option<SemanticIndex>, Error> {
        let layout = Layout::of(root);
        let Some(catalog) = Catalog::load(&layout.catalog) else {
            return Ok(None);
        };
        let Some(lexical) = Lexical::open(&layout.lexical)? else {
            return Ok(None);
        };
        if lexical.generation() != Some(catalog.generation) {
            return Ok(None);
        }
        let mut by_hash: HashMap<Hash, Vec<String>> = HashMap::new();
        for file in catalog.files.values() {
            for c in &file.chunks {
                if let Some(h) = unhex(&c.hash) {
                    by_hash.entry(h).or_default().push(c.id.clone());
                }
            }
        }
        let shared = match embedder {
            Some(e) => {
                let settings = crate::config::Config::load(root.path())
                    .map_err(|e| Error::Config(e.to_string()))?
                    .semantic
                    .vector_store;
                Shared::open(&settings, e.id(), e.dimensions(), by_hash.keys())
            }
            None => None,
        };
        let vectors = match embedder {
            Some(e) if shared.is_none() => {
                Some(Vectors::load(&layout.vectors, e.id(), e.dimensions())?)
            }
            _ => None,
        };
        Ok(Some(SemanticIndex {
            shared,
            root: root.clone(),
            catalog,
            lexical,
            live_rows: vectors
                .as_ref()
                .map(|v| v.rows_of(by_hash.keys()))
                .unwrap_or_default(),
            vectors,
            by_hash,
            graph: None,
        }))
    }

    /// Picks up vectors a sync appended since the index was opened (or loads them, when
    /// the index was opened before the model was ready).
    pub fn catch_up(&mut self, embedder: Option<&Embedder>) -> Result<(), Error> {
        let Some(embedder) = embedder else {
            return Ok(());
        };
        if let Some(shared) = &mut self.shared {
            if shared.lacks(self.by_hash.keys()) {
                shared.refresh(self.by_hash.keys());
            }
            return Ok(());
        }
        let path = Layout::of(&self.root).vectors;
        match &mut self.vectors {
            Some(v) if v.model() == embedder.id() => {
                if !v.catch_up(&path)? {
                    return Ok(());
                }
            }
            _ => {
                self.vectors = Some(Vectors::load(&path, embedder.id(), embedder.dimensions())?);
            }
        }
        if let Some(v) = &self.vectors {
            self.live_rows = v.rows_of(self.by_hash.keys());
        }
        Ok(())
    }

    /// How many vectors are loaded (live or not).
    pub fn vector_count(&self) -> usize {
        self.vectors.as_ref().map_or(0, Vectors::len)
    }

    /// Rows the graph covers, when there is one.
    pub fn graph_rows(&self) -> Option<usize> {
        self.graph.as_ref().map(|g| g.rows())
    }

    /// A graph of the vectors loaded now, to hand to [`SemanticIndex::set_graph`] (built
    /// off the answering thread: it takes seconds per ten thousand vectors).
    pub fn graph_builder(&self) -> Option<impl FnOnce() -> Graph + Send + 'static> {
        let vectors = self.vectors.as_ref()?.snapshot();
        Some(move || vectors.build_graph())
    }

    /// Takes over `older`'s graph when this index's vectors start with the same rows (the
    /// log only grew since): a sync that changed a few files keeps the graph.
    pub fn adopt_graph(&mut self, older: &SemanticIndex) {
        let (Some(graph), Some(old), Some(new)) = (&older.graph, &older.vectors, &self.vectors)
        else {
            return;
        };
        if new.starts_with(old, graph.rows()) {
            self.graph = Some(graph.clone());
        }
    }

    /// The content hashes of the `k` vectors nearest to `query` among the live chunks,
    /// through the graph when `through_graph` and there is one, else by the exact scan.
    pub fn nearest_hashes(&self, query: &[f32], k: usize, through_graph: bool) -> Vec<Hash> {
        let Some(vectors) = &self.vectors else {
            return Vec::new();
        };
        let found = match (&self.graph, through_graph) {
            (Some(graph), true) => vectors.nearest_with_graph(graph, query, &self.live_rows, k),
            _ => vectors.nearest_rows(query, &self.live_rows, k),
        };
        found.into_iter().map(|(h, _)| h).collect()
    }

    pub fn set_graph(&mut self, graph: Graph) {
        self.graph = Some(std::sync::Arc::new(graph));
    }

    /// Unix seconds of the last sync.
    pub fn synced_at(&self) -> u64 {
        self.catalog.synced_at
    }

    /// Chunks that `embedder` could give a vector and has not yet (0 without a model).
    pub fn unembedded(&self, embedder: Option<&Embedder>) -> usize {
        match embedder {
            Some(_) => self.chunk_count() - self.embedded_count(),
            None => 0,
        }
    }

    pub fn generation(&self) -> u64 {
        self.catalog.generation
    }

    pub fn chunk_count(&self) -> usize {
        self.catalog.chunk_count()
    }

    /// Chunks that have a vector.
    pub fn embedded_count(&self) -> usize {
        let source = match &self.shared {
            Some(shared) => shared.connected(),
            None => self.vectors.as_ref().map(|v| v as &dyn VectorSource),
        };
        match source {
            Some(v) => self
                .by_hash
                .iter()
                .filter(|(h, _)| v.contains(h))
                .map(|(_, ids)| ids.len())
                .sum(),
            None => 0,
        }
    }

    fn freshness(&self, path: &str) -> Freshness {
        let Some(record) = self.catalog.files.get(path) else {
            return Freshness::Changed;
        };
        match stamp(&self.root.path().join(path)) {
            None => Freshness::Deleted,
            Some((size, mtime)) if size == record.size && mtime == record.mtime_ns => {
                Freshness::Fresh
            }
            Some(_) => Freshness::Changed,
        }
    }

    /// The `k` best chunks for `query`. `embedder` must be the model the index was opened
    /// with; without one, or before any vector exists, the answer is lexical and says so.
    pub fn search(
        &self,
        embedder: Option<&Embedder>,
        model_note: Option<&str>,
        query: &str,
        k: usize,
    ) -> Result<SearchResult, Error> {
        self.search_with(embedder, None, model_note, query, k, Ranking::Hybrid)
    }

    /// [`SemanticIndex::search`] with the query's vector already computed (the Map uses
    /// it too).
    pub fn search_with(
        &self,
        embedder: Option<&Embedder>,
        query_vector: Option<&[f32]>,
        model_note: Option<&str>,
        query: &str,
        k: usize,
        ranking: Ranking,
    ) -> Result<SearchResult, Error> {
        let query = query.trim();
        if query.is_empty() {
            return Err(Error::EmptyQuery);
        }
        let k = k.clamp(1, 100);
        let pool = (k * 5).max(50);
        let words = ranking != Ranking::Vector;
        let mut lexical = if words {
            self.lexical.search(query, pool)?
        } else {
            Vec::new()
        };
        // BM25 scores far below the best match are chunks that share only a common word
        // with the query; in a rank fusion they would count like real matches.
        if let Some(best) = lexical.first().map(|(_, s)| *s) {
            lexical.retain(|(_, s)| *s >= best * LEXICAL_FLOOR);
        }
        let named = if words {
            self.lexical
                .by_name(&super::tokens::query_identifiers(query), pool)?
        } else {
            Vec::new()
        };

        // Twice the pool, so that code the margins lift past tests and prose is there to
        // be lifted.
        let (vector_hits, status) =
            self.vector_hits(embedder, query_vector, model_note, query, 2 * pool, ranking)?;
        let vector_hits = rank_by_role(vector_hits, Asks::of(query), pool);
        let (ranked, mut stored) = fuse(named, lexical, vector_hits, k);
        let mut hits = Vec::with_capacity(ranked.len());
        for (id, fused) in ranked {
            let chunk = match stored.remove(&id) {
                Some(c) => c,
                None => match self.lexical.get(&id)? {
                    Some(c) => c,
                    None => continue,
                },
            };
            hits.push(self.hit(chunk, fused));
        }
        Ok(SearchResult {
            query: query.to_string(),
            hits,
            vector: status,
            files: self.catalog.files.len(),
            synced_at: self.catalog.synced_at,
        })
    }

    /// The `pool` chunks nearest to the query's vector (computed now unless given), and
    /// whether vectors took part and why not. Without an embedder, before any vector
    /// exists, or under a ranking by words, there are none.
    fn vector_hits(
        &self,
        embedder: Option<&Embedder>,
        query_vector: Option<&[f32]>,
        model_note: Option<&str>,
        query: &str,
        pool: usize,
        ranking: Ranking,
    ) -> Result<(Vec<(String, f32)>, VectorStatus), Error> {
        let chunks = self.chunk_count();
        let embedded = self.embedded_count();
        let mut vector_hits: Vec<(String, f32)> = Vec::new();
        let mut status = VectorStatus {
            used: false,
            model: embedder.map(|e| e.id().to_string()),
            embedded,
            chunks,
            graph: None,
            note: None,
            error: None,
        };
        let embedder = embedder.filter(|_| ranking != Ranking::Words);
        match self.nearest_to_query(embedder, query_vector, query, pool) {
            Ok(Some(nearest)) => {
                status.graph = self.graph.as_ref().map(|g| g.rows());
                for (hash, score) in nearest {
                    for id in self.by_hash.get(&hash).into_iter().flatten() {
                        vector_hits.push((id.clone(), score));
                    }
                }
                status.used = true;
                if embedded < chunks {
                    status.note = Some(format!(
                        "{embedded} of {chunks} chunks have vectors so far; the others are found by their words only until the sync embeds them"
                    ));
                }
            }
            // An endpoint or a shared store that does not answer now must not take the
            // words away: the hybrid ranking answers by them and says why, with the key.
            // A ranking by vectors alone has nothing else to give, so it fails.
            Err(e) if ranking == Ranking::Hybrid && e.is_transient() => status.failed(&e),
            Err(e) => return Err(e),
            Ok(None) if embedder.is_some() => {
                status.note = Some(
                    "no chunk has a vector yet (the sync embeds them in the background): results are lexical only"
                        .into(),
                );
            }
            Ok(None) if ranking == Ranking::Words => {
                status.note = Some("this ranking leaves vectors out".into());
            }
            Ok(None) => {
                status.note = Some(model_note.map_or_else(
                    || "no embedding model: results are lexical only".to_string(),
                    str::to_string,
                ));
            }
        }
        Ok((vector_hits, status))
    }

    /// The `pool` content hashes nearest to the query's vector (computed now unless
    /// given), or None when there is no model or no vector to rank yet.
    fn nearest_to_query(
        &self,
        embedder: Option<&Embedder>,
        query_vector: Option<&[f32]>,
        query: &str,
        pool: usize,
    ) -> Result<Option<Vec<(Hash, f32)>>, Error> {
        let Some(embedder) = embedder else {
            return Ok(None);
        };
        let source: Option<&dyn VectorSource> = match &self.shared {
            // Connecting first: a store that cannot be reached is a failure to report, not
            // a store without vectors.
            Some(shared) => Some(shared.source()?).filter(|_| self.embedded_count() > 0),
            None => self
                .vectors
                .as_ref()
                .filter(|v| v.len() > 0)
                .map(|v| v as &dyn VectorSource),
        };
        let Some(source) = source else {
            return Ok(None);
        };
        let q = match query_vector {
            Some(v) => v.to_vec(),
            None => embedder
                .embed(&[query])?
                .into_iter()
                .next()
                .unwrap_or_default(),
        };
        let live = Live {
            ids: &self.by_hash,
            rows: &self.live_rows,
            graph: self.graph.as_deref(),
        };
        Ok(Some(source.nearest(&q, &live, pool)?))
    }

    /// A fused chunk as a hit: its preview, freshness and the rankings that found it.
    fn hit(&self, chunk: StoredChunk, fused: Fused) -> Hit {
        let Fused {
            score,
            name,
            lexical,
            vector,
        } = fused;
        let mut found_by = Vec::new();
        if name.is_some() {
            found_by.push("name");
        }
        if lexical.is_some() {
            found_by.push("lexical");
        }
        if vector.is_some() {
            found_by.push("vector");
        }
        Hit {
            freshness: self.freshness(&chunk.path),
            preview: preview(&chunk.text, &chunk.symbol),
            id: chunk.id,
            path: chunk.path,
            start_line: chunk.start_line,
            end_line: chunk.end_line,
            symbol: chunk.symbol,
            kind: chunk.kind,
            score,
            found_by,
            name,
            lexical,
            vector,
        }
    }

    /// A chunk by id, with its whole text.
    pub fn chunk(&self, id: &str) -> Result<ChunkDetail, Error> {
        let chunk = self
            .lexical
            .get(id)?
            .ok_or_else(|| Error::UnknownChunk(id.to_string()))?;
        Ok(ChunkDetail {
            freshness: self.freshness(&chunk.path),
            id: chunk.id,
            path: chunk.path,
            start_line: chunk.start_line,
            end_line: chunk.end_line,
            symbol: chunk.symbol,
            kind: chunk.kind,
            text: chunk.text,
        })
    }
}

/// A chunk in full (`fetch_chunk_detail`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChunkDetail {
    pub id: String,
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub symbol: String,
    pub kind: String,
    pub freshness: Freshness,
    pub text: String,
}

/// A chunk's place in the fused ranking: its score and what each ranking said of it.
#[derive(Default)]
struct Fused {
    score: f32,
    name: Option<Signal>,
    lexical: Option<Signal>,
    vector: Option<Signal>,
}

/// The chunk's first lines from the line that defines its symbol (a chunk that merged the
/// imports above a function starts at the function), blank lines left out.
fn preview(text: &str, symbol: &str) -> String {
    let name = symbol.rsplit(['.', ':', '/']).next().unwrap_or_default();
    let defines = |line: &str| {
        !name.is_empty()
            && line.match_indices(name).any(|(at, _)| {
                let before = line[..at].chars().next_back();
                let after = line[at + name.len()..].chars().next();
                let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                !word(before) && !word(after)
            })
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.iter().position(|l| defines(l)).unwrap_or(0);
    lines[start..]
        .iter()
        .take(PREVIEW_LINES)
        .copied()
        .collect::<Vec<_>>()
        .join("\n")
}

/// The vector ranking by similarity less the margin of each chunk's role
/// ([`Role::margin`]), cut to `keep`; the scores stay the similarities themselves.
fn rank_by_role(hits: Vec<(String, f32)>, asks: Asks, keep: usize) -> Vec<(String, f32)> {
    let mut ranked: Vec<(f32, (String, f32))> = hits
        .into_iter()
        .map(|(id, score)| {
            // A chunk id is `path#symbol`.
            let path = id.split_once('#').map_or(id.as_str(), |(path, _)| path);
            (score - Role::of(path).margin(asks), (id, score))
        })
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| (a.1).0.cmp(&(b.1).0)));
    ranked.truncate(keep);
    ranked.into_iter().map(|(_, hit)| hit).collect()
}

/// Reciprocal rank fusion of the three rankings, weighted, best first (ties by id), cut
/// to `k`; with the stored chunks the name and word rankings brought.
fn fuse(
    named: Vec<StoredChunk>,
    lexical: Vec<(StoredChunk, f32)>,
    vector_hits: Vec<(String, f32)>,
    k: usize,
) -> (Vec<(String, Fused)>, HashMap<String, StoredChunk>) {
    let signal = |rank: usize, score: f32| Signal {
        rank: rank + 1,
        score,
    };
    let rrf = |rank: usize| 1.0 / (RRF_K + (rank + 1) as f32);
    let mut fused: HashMap<String, Fused> = HashMap::new();
    let mut stored: HashMap<String, StoredChunk> = HashMap::new();
    for (rank, chunk) in named.into_iter().enumerate() {
        let entry = fused.entry(chunk.id.clone()).or_default();
        entry.score += NAME_WEIGHT * rrf(rank);
        entry.name = Some(signal(rank, 1.0));
        stored.insert(chunk.id.clone(), chunk);
    }
    for (rank, (chunk, score)) in lexical.into_iter().enumerate() {
        let entry = fused.entry(chunk.id.clone()).or_default();
        entry.score += LEXICAL_WEIGHT * rrf(rank);
        entry.lexical = Some(signal(rank, score));
        stored.insert(chunk.id.clone(), chunk);
    }
    for (rank, (id, score)) in vector_hits.into_iter().enumerate() {
        let entry = fused.entry(id).or_default();
        entry.score += VECTOR_WEIGHT * rrf(rank);
        entry.vector = Some(signal(rank, score));
    }
    let mut ranked: Vec<(String, Fused)> = fused.into_iter().collect();
    ranked.sort_by(|a, b| b.1.score.total_cmp(&a.1.score).then_with(|| a.0.cmp(&b.0)));
    ranked.truncate(k);
    (ranked, stored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preview_starts_at_the_definition_and_leaves_blank_lines_out() {
        let text = "import hashlib, hmac\n\n\ndef check_password(user, raw):\n    \"\"\"Compare.\"\"\"\n\n    return ok\n";
        assert_eq!(
            preview(text, "check_password"),
            "def check_password(user, raw):\n    \"\"\"Compare.\"\"\"\n    return ok"
        );
        // A method's symbol names its class; digits are part of a name; no match starts at
        // the top.
        let method = "    @property\n    def save(self):\n        return 1\n";
        assert!(preview(method, "Form.save").starts_with("    def save"));
        assert!(preview("x = 1\ndef sha256(b):\n", "sha256").starts_with("def sha256"));
        assert_eq!(preview("a\n\nb\n", "Other"), "a\nb");
        // The name as part of a longer word does not count.
        assert!(preview("x = saved\ndef save():\n", "save").starts_with("def save"));
        let long: String = (0..20).map(|n| format!("line {n}\n")).collect();
        assert_eq!(preview(&long, "").lines().count(), PREVIEW_LINES);
    }

    #[test]
    fn the_vector_ranking_lets_code_pass_a_test_it_nearly_ties_but_not_a_clearly_better_doc() {
        let hits = vec![
            ("tests/test_auth.py#test_login".to_string(), 0.60),
            ("docs/auth.md#".to_string(), 0.80),
            ("app/auth.py#login".to_string(), 0.55),
            ("app/util.py#helper".to_string(), 0.20),
        ];
        let ranked = rank_by_role(hits.clone(), Asks::default(), 3);
        let ids: Vec<&str> = ranked.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "docs/auth.md#",
                "app/auth.py#login",
                "tests/test_auth.py#test_login"
            ]
        );
        // The similarities are reported as they are.
        assert_eq!(ranked[2].1, 0.60);
        // A query about tests ranks them by similarity alone.
        let asks = Asks::of("the test of login");
        let ranked = rank_by_role(hits, asks, 2);
        assert_eq!(ranked[1].0, "tests/test_auth.py#test_login");
    }
}
