//! Measuring search quality: a labelled set of queries (each with the files or symbols
//! that answer it) run through each ranking, scored by recall@k (the share of queries with
//! an answer in the top k) and MRR (the mean of 1 / the rank of the first answer).

use serde::{Deserialize, Serialize};

use super::embed::Embedder;
use super::error::Error;
use super::search::{Hit, Ranking, SemanticIndex};
use crate::source::Sources;

/// One labelled query.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EvalQuery {
    pub query: String,
    /// Files (root-relative paths), directories (ending in `/`) or symbols (`Class.method`,
    /// or the last part of one) that answer it; a hit matching any one counts.
    pub expect: Vec<String>,
    /// Held out from tuning: weights and choices are tuned on the other queries, and the
    /// scores of these say whether the tuning generalises.
    #[serde(default)]
    pub held_out: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct EvalFile {
    queries: Vec<EvalQuery>,
}

/// Why an evaluation file could not be read. Each names the file.
#[derive(Debug)]
pub(crate) enum LoadError {
    /// Not YAML the crate's loader reads; `at` is `line:col` (empty when unknown).
    Yaml {
        path: String,
        at: String,
        message: String,
    },
    /// YAML, but not `queries: [{query, expect}]`.
    Shape {
        path: String,
        source: serde_json::Error,
    },
    /// A query with an empty `expect` could never score.
    ExpectsNothing { path: String, query: String },
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Yaml { path, at, message } => write!(f, "{path}:{at}: {message}"),
            LoadError::Shape { path, source } => write!(f, "{path}: {source}"),
            LoadError::ExpectsNothing { path, query } => {
                write!(f, "{path}: the query `{query}` expects nothing")
            }
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoadError::Shape { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Reads an evaluation file: YAML `queries: [{query, expect: [...]}]`.
pub(crate) fn load(path: &str, text: &str) -> Result<Vec<EvalQuery>, LoadError> {
    let mut sources = Sources::default();
    let file = sources.add(path, text.to_string());
    let (node, _) = crate::yaml::parse(file, text).map_err(|d| LoadError::Yaml {
        path: path.to_string(),
        at: d
            .span
            .map(|s| format!("{}:{}", s.start.line, s.start.col))
            .unwrap_or_default(),
        message: d.message,
    })?;
    let parsed: EvalFile =
        serde_json::from_value(node.to_json()).map_err(|source| LoadError::Shape {
            path: path.to_string(),
            source,
        })?;
    if let Some(q) = parsed.queries.iter().find(|q| q.expect.is_empty()) {
        return Err(LoadError::ExpectsNothing {
            path: path.to_string(),
            query: q.query.clone(),
        });
    }
    Ok(parsed.queries)
}

/// Whether `hit` answers a query expecting `expected`: a directory (`auth/`) holds the
/// hit's file, a file is it, or a symbol (`Form`, `Form.save`) is the hit's definition or
/// one it belongs to — as any chunk of an expected file answers, so does any chunk of an
/// expected class (`Form.clean` answers `Form`; a large class is cut into its members).
fn answers(hit: &Hit, expected: &str) -> bool {
    if let Some(dir) = expected.strip_suffix('/') {
        return hit.path.starts_with(&format!("{dir}/"));
    }
    if hit.path == expected {
        return true;
    }
    let symbol: Vec<&str> = hit.symbol.split('.').collect();
    let wanted: Vec<&str> = expected.split('.').collect();
    symbol
        .windows(wanted.len())
        .any(|run| run == wanted.as_slice())
}

/// One ranking's scores.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Scores {
    pub ranking: &'static str,
    /// Every query's scores (the JSON keeps them at the top: `queries`, `recall`, `mrr`).
    #[serde(flatten)]
    pub all: Half,
    /// Queries with no answer in the top k.
    pub missed: Vec<String>,
    /// The same scores on the queries tuned on and on the held-out ones, when the file
    /// marks some `held_out`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub halves: Option<Halves>,
}

/// Scores of the two halves of an evaluation file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Halves {
    pub tune: Half,
    pub held_out: Half,
}

/// Recall@k and MRR over some of the queries.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Half {
    pub queries: usize,
    /// Share of queries answered in the top k.
    pub recall: f64,
    /// Mean reciprocal rank of the first answer (0 when none is in the top k).
    pub mrr: f64,
}

impl Half {
    /// From each query's reciprocal rank (0 when no answer is in the top k).
    fn of<'a>(reciprocals: impl Iterator<Item = &'a f64>) -> Half {
        let (mut queries, mut found, mut sum) = (0usize, 0usize, 0f64);
        for r in reciprocals {
            queries += 1;
            found += usize::from(*r > 0.0);
            sum += r;
        }
        let n = queries.max(1) as f64;
        Half {
            queries,
            recall: found as f64 / n,
            mrr: sum / n,
        }
    }
}

/// The scores of the tuned and the held-out queries, when the file has both.
fn halves(queries: &[EvalQuery], reciprocals: &[f64]) -> Option<Halves> {
    let of = |held_out: bool| {
        Half::of(
            queries
                .iter()
                .zip(reciprocals)
                .filter(move |(q, _)| q.held_out == held_out)
                .map(|(_, r)| r),
        )
    };
    let (tune, held_out) = (of(false), of(true));
    (tune.queries > 0 && held_out.queries > 0).then_some(Halves { tune, held_out })
}

/// Runs every query through the word, vector and hybrid rankings.
pub(crate) fn evaluate(
    index: &SemanticIndex,
    embedder: Option<&Embedder>,
    queries: &[EvalQuery],
    k: usize,
) -> Result<Vec<Scores>, Error> {
    let mut rankings = vec![(Ranking::Words, "words")];
    if embedder.is_some() {
        rankings.push((Ranking::Vector, "vector"));
        rankings.push((Ranking::Hybrid, "hybrid"));
    }
    // Each query is embedded once, for both rankings that use vectors.
    let mut vectors = Vec::with_capacity(queries.len());
    for q in queries {
        vectors.push(match embedder {
            Some(e) => e.embed(&[q.query.as_str()])?.into_iter().next(),
            None => None,
        });
    }
    let mut out = Vec::new();
    for (ranking, name) in rankings {
        let mut reciprocals = Vec::with_capacity(queries.len());
        let mut missed = Vec::new();
        for (q, v) in queries.iter().zip(&vectors) {
            let mut result =
                index.search_with(embedder, v.as_deref(), None, &q.query, k, ranking)?;
            if result.vector.error.is_some() {
                // A hybrid answer left to words by a failing endpoint or store would score
                // the words as the fusion: the vector ranking alone fails with the cause,
                // and if it answers now, the hybrid one is asked again.
                index.search_with(embedder, v.as_deref(), None, &q.query, k, Ranking::Vector)?;
                result = index.search_with(embedder, v.as_deref(), None, &q.query, k, ranking)?;
            }
            match result
                .hits
                .iter()
                .position(|h| q.expect.iter().any(|e| answers(h, e)))
            {
                Some(rank) => reciprocals.push(1.0 / (rank + 1) as f64),
                None => {
                    reciprocals.push(0.0);
                    missed.push(q.query.clone());
                }
            }
        }
        out.push(Scores {
            ranking: name,
            all: Half::of(reciprocals.iter()),
            missed,
            halves: halves(queries, &reciprocals),
        });
    }
    Ok(out)
}

/// How the HNSW graph compares with the exact scan on the same query vectors.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct GraphScores {
    pub vectors: usize,
    pub build_ms: u64,
    /// Share of the exact top k that the graph also returns, over all queries.
    pub recall: f64,
    pub exact_p50_us: u64,
    pub graph_p50_us: u64,
}

fn p50(mut samples: Vec<u64>) -> u64 {
    samples.sort_unstable();
    samples.get(samples.len() / 2).copied().unwrap_or(0)
}

/// Builds an HNSW graph over `index`'s vectors and compares its top `k` with the exact
/// scan's for every query (needs the model).
pub(crate) fn compare_graph(
    index: &mut SemanticIndex,
    embedder: &Embedder,
    queries: &[EvalQuery],
    k: usize,
) -> Result<GraphScores, Error> {
    let started = std::time::Instant::now();
    let Some(build) = index.graph_builder() else {
        return Err(Error::NotBuilt);
    };
    let graph = build();
    let build_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    index.set_graph(graph);
    let (mut exact_us, mut graph_us) = (Vec::new(), Vec::new());
    let (mut found, mut total) = (0usize, 0usize);
    for q in queries {
        let Some(v) = embedder.embed(&[q.query.as_str()])?.into_iter().next() else {
            continue;
        };
        let t = std::time::Instant::now();
        let exact = index.nearest_hashes(&v, k, false);
        exact_us.push(u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX));
        let t = std::time::Instant::now();
        let approx = index.nearest_hashes(&v, k, true);
        graph_us.push(u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX));
        total += exact.len();
        found += exact.iter().filter(|h| approx.contains(h)).count();
    }
    Ok(GraphScores {
        vectors: index.vector_count(),
        build_ms,
        recall: found as f64 / total.max(1) as f64,
        exact_p50_us: p50(exact_us),
        graph_p50_us: p50(graph_us),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_symbol_is_answered_by_its_chunk_and_its_members_chunks() {
        let hit = |path: &str, symbol: &str| super::Hit {
            id: format!("{path}#{symbol}"),
            path: path.into(),
            start_line: 1,
            end_line: 2,
            symbol: symbol.into(),
            kind: "code".into(),
            score: 0.0,
            found_by: Vec::new(),
            name: None,
            lexical: None,
            vector: None,
            freshness: crate::semantic::search::Freshness::Fresh,
            preview: String::new(),
        };
        let method = hit("app/forms.py", "SetPasswordMixin.create_password_fields");
        for yes in [
            "app/forms.py",
            "app/",
            "SetPasswordMixin",
            "create_password_fields",
            "SetPasswordMixin.create_password_fields",
        ] {
            assert!(super::answers(&method, yes), "{yes}");
        }
        for no in [
            "app/forms",
            "ap/",
            "Mixin",
            "SetPassword",
            "create_password",
            "Form.create_password_fields",
        ] {
            assert!(!super::answers(&method, no), "{no}");
        }
    }

    use super::*;

    #[test]
    fn held_out_queries_are_scored_apart_from_the_tuned_ones() {
        let q = load(
            "e.yml",
            "queries:\n  - query: a\n    expect: [x]\n  - query: b\n    expect: [x]\n    held_out: true\n  - query: c\n    expect: [x]\n",
        )
        .unwrap();
        assert_eq!(
            q.iter().map(|q| q.held_out).collect::<Vec<_>>(),
            [false, true, false]
        );
        // a: first hit, b: missed, c: second hit.
        let h = halves(&q, &[1.0, 0.0, 0.5]).unwrap();
        assert_eq!(
            h.tune,
            Half {
                queries: 2,
                recall: 1.0,
                mrr: 0.75
            }
        );
        assert_eq!(
            h.held_out,
            Half {
                queries: 1,
                recall: 0.0,
                mrr: 0.0
            }
        );
        // Without held-out queries there are no halves to report.
        assert_eq!(halves(&q[..1], &[1.0]), None);
    }

    #[test]
    fn an_eval_file_is_queries_with_expectations() {
        let q = load(
            "e.yml",
            "queries:\n  - query: hash a password\n    expect: [django/contrib/auth/hashers.py]\n",
        )
        .unwrap();
        assert_eq!(q[0].expect, ["django/contrib/auth/hashers.py"]);
        let e = load("e.yml", "queries:\n  - query: x\n    expect: []\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("expects nothing"), "{e}");
        let e = load("e.yml", "queries:\n  - query: x\n    expected: [a]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected"), "{e}");
    }
}
