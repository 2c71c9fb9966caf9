//! `code-intel semantic "query"` and the semantic half of `code-intel index`: settings and
//! model from the repository's config, a sync with a progress bar on stderr, hits printed
//! like search results.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;

use clap::Args;

use super::out::{err, errln, outln};
use crate::codeintel::root::Root;
use crate::config::Config;
use crate::environment::Environment;
use crate::semantic::{
    self, Embedder, Error, ModelError, Phase, SemanticIndex, SyncOptions, SyncReport,
};
use crate::server::log::now;

#[derive(Debug, Args)]
pub(super) struct SemanticArgs {
    /// What you look for, in your own words ("where are passwords hashed").
    query: String,
    /// How many results.
    #[arg(short = 'k', long, default_value_t = 10)]
    k: usize,
    /// Answer from the index as it is, without syncing it first.
    #[arg(long)]
    no_sync: bool,
    /// The repository root.
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// The model the config names, or why there is none. A model that is configured but
/// cannot be loaded is an error; one that is not configured is a note (lexical only).
pub(super) fn load_model(root: &Root, config: &Config) -> Result<Option<Embedder>, ModelError> {
    match semantic::embedder_spec(root.path(), &config.semantic, &Environment::of_process()) {
        Err(e @ ModelError::NotConfigured { .. }) => {
            errln!("note: {e}");
            Ok(None)
        }
        Err(e) => Err(e),
        Ok(spec) => Embedder::open(&spec).map(Some),
    }
}

/// A progress line on stderr: redrawn in place on a terminal, a line per phase otherwise.
struct ProgressBar {
    terminal: bool,
    last: Mutex<Option<(Phase, usize)>>,
}

impl ProgressBar {
    fn new() -> ProgressBar {
        ProgressBar {
            terminal: super::out::stderr_is_terminal(),
            last: Mutex::new(None),
        }
    }

    fn update(&self, phase: Phase, done: usize, total: usize) {
        let Ok(mut last) = self.last.lock() else {
            return;
        };
        let what = match phase {
            Phase::Chunking => "chunking files",
            Phase::Embedding => "embedding chunks",
        };
        if self.terminal {
            let width = 30;
            let filled = (done * width).checked_div(total).unwrap_or(width);
            err!(
                "\r{what:<16} [{}{}] {done}/{total}\x1b[K",
                "#".repeat(filled),
                ".".repeat(width - filled)
            );
            if done >= total {
                err!("\n");
            }
        } else if last.is_none_or(|(p, _)| p != phase) && total > 0 {
            errln!("{what}: {total}");
        }
        *last = Some((phase, done));
    }
}

pub(super) fn run_sync(
    root: &Root,
    config: &Config,
    embedder: Option<&Embedder>,
    rebuild: bool,
) -> Result<SyncReport, Error> {
    let bar = ProgressBar::new();
    let progress = |phase, done, total| bar.update(phase, done, total);
    let options = SyncOptions {
        chunk_max_tokens: config.semantic.chunk_max_tokens,
        rebuild,
        progress: &progress,
    };
    semantic::sync(root, embedder, &options)
}

pub(super) fn describe(report: &SyncReport) -> String {
    format!(
        "semantic index: {} files, {} chunks in {} ms: {} files chunked, {} unchanged, {} removed; {} chunks embedded{}{}",
        report.files,
        report.chunks,
        report.elapsed_ms,
        report.chunked,
        report.unchanged,
        report.removed,
        report.embedded,
        if report.unembedded > 0 {
            format!(", {} without a vector", report.unembedded)
        } else {
            String::new()
        },
        if report.rebuilt { " (rebuilt)" } else { "" }
    )
}

/// The semantic half of `code-intel index`.
pub(super) fn index(root: &Root, rebuild: bool) -> Result<SyncReport, Error> {
    let config = Config::load(root.path()).map_err(|e| Error::Config(e.to_string()))?;
    let embedder = load_model(root, &config)?;
    run_sync(root, &config, embedder.as_ref(), rebuild)
}

fn fail(e: &dyn std::fmt::Display) -> ExitCode {
    errln!("error: {e}");
    ExitCode::from(2)
}

/// The root, its settings and its model, as every semantic command starts.
fn open(dir: &std::path::Path) -> Result<(Root, Config, Option<Embedder>), ExitCode> {
    let root = super::root::open_root(dir).map_err(|e| fail(&e))?;
    let config = Config::load(root.path()).map_err(|e| fail(&e))?;
    let embedder = load_model(&root, &config).map_err(|e| fail(&e))?;
    Ok((root, config, embedder))
}

pub(super) fn semantic(a: &SemanticArgs) -> ExitCode {
    search(a).unwrap_or_else(|code| code)
}

/// `code-intel query` with a question in plain words: the search `semantic` makes, with
/// its output. `Err` (the error printed as a note) when the semantic index cannot answer,
/// for the caller to fall back on.
pub(super) fn ask(root: &std::path::Path, question: &str, json: bool) -> Result<ExitCode, ()> {
    let a = SemanticArgs {
        query: question.to_string(),
        k: 10,
        no_sync: false,
        root: root.to_path_buf(),
        json,
    };
    search(&a).map_err(|_| ())
}

/// Searches and prints; `Err` with the exit code of an error, already printed.
fn search(a: &SemanticArgs) -> Result<ExitCode, ExitCode> {
    let root = super::root::open_root(&a.root).map_err(|e| fail(&e))?;
    let config = Config::load(root.path()).map_err(|e| fail(&e))?;
    match load_model(&root, &config) {
        Ok(embedder) => Ok(search_in(a, &root, &config, embedder, None)),
        // An embedding server that does not answer leaves the search to the words.
        Err(e) if e.is_remote() => {
            errln!("warning: {e}");
            Ok(search_in(a, &root, &config, None, Some(e.into())))
        }
        Err(e) => Err(fail(&e)),
    }
}

/// `vectors_failed`: why the model could not be had; the answer is by words then.
fn search_in(
    a: &SemanticArgs,
    root: &Root,
    config: &Config,
    embedder: Option<Embedder>,
    vectors_failed: Option<Error>,
) -> ExitCode {
    let mut index = match SemanticIndex::open(root, embedder.as_ref()) {
        Ok(index) => index,
        Err(e) => return fail(&e),
    };
    let ttl_secs = (config.semantic.sync_ttl_hours * 3600.0).max(0.0) as u64;
    let stale = index.as_ref().is_none_or(|i| {
        now().saturating_sub(i.synced_at()) >= ttl_secs || i.unembedded(embedder.as_ref()) > 0
    });
    if stale && !a.no_sync {
        // A sync that cannot finish (an embedding server or a shared store down) leaves
        // what it wrote; the search answers from that, and says what it lacks.
        let synced = run_sync(root, config, embedder.as_ref(), false);
        match &synced {
            Ok(report) => errln!("{}", describe(report)),
            Err(e) if e.is_transient() => {
                errln!("warning: the sync did not finish ({}): {e}", e.key());
            }
            Err(e) => return fail(e),
        }
        index = match SemanticIndex::open(root, embedder.as_ref()) {
            Ok(index) => index,
            Err(e) => return fail(&e),
        };
        if let (None, Err(e)) = (&index, synced) {
            return fail(&e);
        }
    }
    let Some(index) = index else {
        return fail(&"there is no semantic index yet: run `code-intel index` (or drop --no-sync)");
    };
    let note = embedder
        .is_none()
        .then_some("no embedding model is configured: results are lexical only");
    let mut result = match index.search(embedder.as_ref(), note, &a.query, a.k) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    if let Some(e) = &vectors_failed {
        result.vector.failed(e);
    }
    if a.json {
        match serde_json::to_string_pretty(&result) {
            Ok(text) => outln!("{text}"),
            Err(e) => return fail(&Error::Code(crate::codeintel::error::Error::Encode(e))),
        }
    } else {
        for (n, hit) in result.hits.iter().enumerate() {
            let mut signals = Vec::new();
            if hit.name.is_some() {
                signals.push("name".to_string());
            }
            if let Some(s) = hit.lexical {
                signals.push(format!("lexical #{}", s.rank));
            }
            if let Some(s) = hit.vector {
                signals.push(format!("vector #{} ({:.2})", s.rank, s.score));
            }
            let stale = match hit.freshness {
                semantic::search::Freshness::Fresh => "",
                semantic::search::Freshness::Changed => "  [changed since the last sync]",
                semantic::search::Freshness::Deleted => "  [deleted since the last sync]",
            };
            outln!(
                "{}. {}:{}-{}  {} ({})  [{}]{stale}",
                n + 1,
                hit.path,
                hit.start_line,
                hit.end_line,
                if hit.symbol.is_empty() {
                    "-"
                } else {
                    &hit.symbol
                },
                hit.kind,
                signals.join(", ")
            );
            for line in hit.preview.lines().take(3) {
                outln!("    {line}");
            }
        }
        // Without a model, load_model has said so already.
        if let (Some(note), Some(_)) = (&result.vector.note, &embedder) {
            errln!("note: {note}");
        }
    }
    if result.hits.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

#[derive(Debug, Args)]
pub(super) struct EvalArgs {
    /// The labelled queries: YAML `queries: [{query, expect: [path, dir/ or symbol]}]`.
    file: PathBuf,
    /// The cut-off: an answer counts when it is in the top k.
    #[arg(short = 'k', long, default_value_t = 10)]
    k: usize,
    /// The repository root (its semantic index is used as it is, not synced).
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// Also build an HNSW graph over the vectors and compare its top k with the exact
    /// scan's on the same queries (recall, build time, p50 latency of both).
    #[arg(long)]
    hnsw: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub(super) fn eval(a: &EvalArgs) -> ExitCode {
    let text = match std::fs::read_to_string(&a.file) {
        Ok(t) => t,
        Err(e) => return fail(&format!("{}: {e}", a.file.display())),
    };
    let queries = match semantic::eval::load(&a.file.to_string_lossy(), &text) {
        Ok(q) => q,
        Err(e) => return fail(&e),
    };
    let (root, _, embedder) = match open(&a.root) {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let mut index = match SemanticIndex::open(&root, embedder.as_ref()) {
        Ok(Some(index)) => index,
        Ok(None) => return fail(&"there is no semantic index: run `code-intel index` first"),
        Err(e) => return fail(&e),
    };
    if index.unembedded(embedder.as_ref()) > 0 {
        errln!(
            "note: {} of {} chunks have no vector yet: run `code-intel index` for a fair vector score",
            index.unembedded(embedder.as_ref()),
            index.chunk_count()
        );
    }
    let scores = match semantic::eval::evaluate(&index, embedder.as_ref(), &queries, a.k.max(1)) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let graph = match (&embedder, a.hnsw) {
        (Some(e), true) => {
            match semantic::eval::compare_graph(&mut index, e, &queries, a.k.max(1)) {
                Ok(g) => Some(g),
                Err(e) => return fail(&e),
            }
        }
        (None, true) => return fail(&"--hnsw needs the embedding model"),
        _ => None,
    };
    if a.json {
        let value = serde_json::json!({"rankings": scores, "hnsw": graph});
        return match serde_json::to_string_pretty(&value) {
            Ok(text) => {
                outln!("{text}");
                ExitCode::SUCCESS
            }
            Err(e) => fail(&Error::Code(crate::codeintel::error::Error::Encode(e))),
        };
    }
    outln!(
        "{:<8} {:>10} {:>7} {:>8}",
        "ranking",
        format!("recall@{}", a.k),
        "MRR",
        "queries"
    );
    for s in &scores {
        outln!(
            "{:<8} {:>10.3} {:>7.3} {:>8}",
            s.ranking,
            s.all.recall,
            s.all.mrr,
            s.all.queries
        );
        if let Some(h) = &s.halves {
            for (label, half) in [("tuned", &h.tune), ("held out", &h.held_out)] {
                outln!(
                    "  {label:<8} {:>8.3} {:>7.3} {:>8}",
                    half.recall,
                    half.mrr,
                    half.queries
                );
            }
        }
    }
    if let Some(g) = &graph {
        outln!(
            "hnsw over {} vectors: built in {} ms; recall@{} vs exact {:.3}; p50 {} µs (exact scan {} µs)",
            g.vectors,
            g.build_ms,
            a.k,
            g.recall,
            g.graph_p50_us,
            g.exact_p50_us
        );
    }
    if let Some(best) = scores.last() {
        for q in &best.missed {
            errln!("missed by {}: {q}", best.ranking);
        }
    }
    ExitCode::SUCCESS
}
