//! The semantic tools as the server offers them: `semantic_search`,
//! `fetch_chunk_detail`, `sync_index` and `update_context`, over the semantic index kept
//! in memory and synced in the background.
//!
//! The model loads once, in the background; until it does (or when none is configured)
//! search is lexical and says so. A sync runs on its own thread (at start when the config
//! says `sync_on_start`, when a search finds the index older than `sync_ttl_hours`, and on
//! `sync_index`); its progress is the `sync` field of every answer. Searches answer from
//! what is on disk meanwhile: every file is searchable by its words as soon as the first
//! phase of a sync has written the catalog, and chunks gain vectors batch by batch.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::log::now;
use super::words::Words;
use crate::codeintel::root::Root;
use crate::codeintel::store::atomic_write;
use crate::config::{Config, SemanticSettings};
use crate::environment::Environment;
use crate::semantic::{self, Embedder, ModelError, Phase, SemanticIndex, SyncOptions};

/// `k`: null is the default (as if absent); 0 is refused, as `limit: 0` is for the other
/// tools: a page of nothing answers no question.
fn result_count<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    match Option::<usize>::deserialize(d)? {
        Some(0) => Err(serde::de::Error::custom(
            "k must be between 1 and 50 (default 10)",
        )),
        k => Ok(k),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SemanticSearchArgs {
    /// What you look for, in words: the behaviour, not only identifiers ("where are
    /// password reset emails sent"). Identifiers in it rank their definitions first.
    pub query: String,
    /// How many results (default 10, at most 50).
    #[serde(default, deserialize_with = "result_count")]
    pub k: Option<usize>,
    /// `auto` (default): an agreement recorded by an earlier successful session (request →
    /// symbols and files) at least `map_threshold` similar to the query answers alone
    /// (`answered_by: "map"`, `forest_skipped: true`), else the chunks of the repository
    /// do; `both`: the agreements and the chunks; `map` or `forest`: only those.
    #[serde(default)]
    pub collection: Collection,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Collection {
    /// The Map first; the Forest only when no agreement is close enough.
    #[default]
    Auto,
    Forest,
    Map,
    Both,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChunkArgs {
    /// A chunk id from semantic_search (`path#symbol`).
    pub chunk_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SyncArgs {
    /// Drop the semantic index and build it again, vectors included (slow: minutes on a
    /// large repository). Default false: only changed files are re-read.
    #[serde(default)]
    pub rebuild: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DocSummary {
    /// A root-relative document path.
    pub path: String,
    /// What the document says that matters for changes to this project.
    pub summary: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateContextArgs {
    /// Summaries of the design documents you read for this project.
    #[serde(default)]
    pub design_doc_summaries: Vec<DocSummary>,
    /// A summary of the project's rules (CLAUDE.md, AGENTS.md, contributing guides).
    #[serde(default)]
    pub project_rules_summary: Option<String>,
}

/// Where the context summaries are kept, relative to the root: a file of its own, so the
/// user's commented `context.yml` is never rewritten.
pub(crate) const SUMMARIES_FILE: &str = ".code-intel/context_summaries.json";

/// The state of the background sync.
#[derive(Debug, Default)]
struct SyncStatus {
    running: bool,
    phase: Option<Phase>,
    done: usize,
    total: usize,
    last: Option<Value>,
    error: Option<String>,
    /// A rebuild asked for while a sync was running: it starts when that sync ends, so
    /// the request is not lost to the sync already under way.
    rebuild_queued: bool,
}

impl SyncStatus {
    fn to_json(&self) -> Value {
        let state = match (self.running, self.phase) {
            (false, _) => "idle",
            (true, Some(Phase::Embedding)) => "embedding",
            (true, _) => "chunking",
        };
        let mut v = json!({"state": state});
        if self.running {
            v["done"] = json!(self.done);
            v["total"] = json!(self.total);
        }
        if let Some(last) = &self.last {
            v["last"] = last.clone();
        }
        if let Some(e) = &self.error {
            v["error"] = json!(e);
        }
        if self.rebuild_queued {
            v["rebuild_queued"] = json!(true);
        }
        v
    }
}

/// An index as opened, with the catalog's (size, mtime) at that moment.
type OpenIndex = (Option<(u64, u64)>, SemanticIndex);

/// The model as loaded: `Ok(None)` when none is configured.
type Loaded = Result<Option<Arc<Embedder>>, ModelError>;

/// How long a server waits before it asks an embedding endpoint that failed to load again.
const ENDPOINT_RETRY: Duration = Duration::from_secs(30);

struct Inner {
    root: Root,
    settings: Result<SemanticSettings, String>,
    /// Where the model is found.
    env: Environment,
    /// Loaded once, with the time it was tried; `Ok(None)` when no model is configured.
    /// An embedding endpoint that did not answer is tried again (see [`ENDPOINT_RETRY`]).
    model: Mutex<Option<(Loaded, Instant)>>,
    status: Mutex<SyncStatus>,
    /// The opened index and the catalog stamp it was opened at.
    index: Mutex<Option<OpenIndex>>,
    /// Whether an HNSW graph is being built.
    graph_building: std::sync::atomic::AtomicBool,
    /// Whether an answer has said that no model is configured: said once per server.
    model_note_given: std::sync::atomic::AtomicBool,
}

/// The semantic tools of one repository; cheap to clone (shared state).
#[derive(Clone)]
pub struct SemanticTools {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SemanticTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemanticTools").finish_non_exhaustive()
    }
}

impl SemanticTools {
    /// The tools for `root`; starts a background sync when the config asks for one. The
    /// model is found through `env` ([`semantic::embedder_spec`]).
    pub fn start(root: Root, env: &Environment) -> SemanticTools {
        let settings = Config::load(root.path())
            .map(|c| c.semantic)
            .map_err(|e| e.to_string());
        let on_start = settings.as_ref().is_ok_and(|s| s.sync_on_start);
        let tools = SemanticTools {
            inner: Arc::new(Inner {
                root,
                settings,
                env: env.clone(),
                model: Mutex::new(None),
                status: Mutex::new(SyncStatus::default()),
                index: Mutex::new(None),
                graph_building: std::sync::atomic::AtomicBool::new(false),
                model_note_given: std::sync::atomic::AtomicBool::new(false),
            }),
        };
        if on_start {
            tools.start_sync(false);
        }
        tools
    }

    fn settings(&self) -> Result<&SemanticSettings, String> {
        self.inner.settings.as_ref().map_err(Clone::clone)
    }

    fn model(&self) -> Loaded {
        let mut cached = self
            .inner
            .model
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // A server started while its embedding endpoint was down (the endpoint is asked
        // its dimensions on load) would otherwise rank by words for the rest of its life.
        let stale = |(loaded, at): &(Loaded, Instant)| {
            loaded.as_ref().is_err_and(ModelError::is_remote) && at.elapsed() >= ENDPOINT_RETRY
        };
        if cached.as_ref().is_none_or(stale) {
            let loaded = match self.settings() {
                Err(_) => Ok(None),
                Ok(settings) => {
                    match semantic::embedder_spec(self.inner.root.path(), settings, &self.inner.env)
                    {
                        Err(ModelError::NotConfigured { .. }) => Ok(None),
                        Err(e) => Err(e),
                        Ok(spec) => Embedder::open(&spec).map(|e| Some(Arc::new(e))),
                    }
                }
            };
            *cached = Some((loaded, Instant::now()));
        }
        cached
            .as_ref()
            .map_or(Ok(None), |(loaded, _)| loaded.clone())
    }

    fn status(&self) -> std::sync::MutexGuard<'_, SyncStatus> {
        self.inner
            .status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts a sync on its own thread unless one is running; the status either way. A
    /// rebuild asked for while one runs is queued behind it.
    pub fn start_sync(&self, rebuild: bool) -> Value {
        {
            let mut status = self.status();
            if status.running {
                status.rebuild_queued |= rebuild;
                return status.to_json();
            }
            status.running = true;
            status.phase = Some(Phase::Chunking);
            status.done = 0;
            status.total = 0;
            status.error = None;
        }
        let tools = self.clone();
        let spawned = std::thread::Builder::new()
            .name("semantic-sync".into())
            .spawn(move || tools.run_sync(rebuild));
        if let Err(e) = spawned {
            let mut status = self.status();
            status.running = false;
            status.error = Some(format!("the sync thread could not start: {e}"));
        }
        self.status().to_json()
    }

    fn run_sync(&self, rebuild: bool) {
        let outcome = (|| -> Result<Value, String> {
            let settings = self.settings()?.clone();
            let model = self.model().map_err(|e| e.to_string())?;
            let progress = |phase, done, total| {
                let mut status = self.status();
                status.phase = Some(phase);
                status.done = done;
                status.total = total;
            };
            let options = SyncOptions {
                chunk_max_tokens: settings.chunk_max_tokens,
                rebuild,
                progress: &progress,
            };
            let report = semantic::sync(&self.inner.root, model.as_deref(), &options)
                .map_err(|e| e.to_string())?;
            let mut last = serde_json::to_value(&report).map_err(|e| e.to_string())?;
            last["finished_at"] = json!(now());
            Ok(last)
        })();
        let queued = {
            let mut status = self.status();
            status.running = false;
            status.phase = None;
            match outcome {
                Ok(last) => status.last = Some(last),
                Err(e) => {
                    tracing::warn!("semantic sync failed: {e}");
                    status.error = Some(e);
                }
            }
            std::mem::take(&mut status.rebuild_queued)
        };
        if queued {
            self.start_sync(true);
        }
    }

    /// Runs `f` on the index as it is on disk now (reopened when a sync changed it).
    fn with_index<T>(
        &self,
        model: Option<&Embedder>,
        f: impl FnOnce(&SemanticIndex) -> Result<T, semantic::Error>,
    ) -> Result<Option<T>, semantic::Error> {
        let stamp = semantic::catalog_stamp(&self.inner.root);
        let mut cached = self
            .inner
            .index
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match cached.as_mut() {
            Some((at, index)) if *at == stamp => index.catch_up(model)?,
            _ => {
                let mut opened = SemanticIndex::open(&self.inner.root, model)?;
                if let (Some(new), Some((_, old))) = (opened.as_mut(), cached.as_ref()) {
                    new.adopt_graph(old);
                }
                *cached = opened.map(|i| (stamp, i));
            }
        }
        if let Some((at, index)) = cached.as_ref() {
            self.maybe_build_graph(*at, index);
        }
        match cached.as_ref() {
            Some((_, index)) => f(index).map(Some),
            None => Ok(None),
        }
    }

    /// Starts building an HNSW graph when the index has grown past `hnsw_min_chunks`
    /// vectors and has no graph, or a tenth of its vectors arrived after the graph was
    /// built. The graph joins the index it was built for, if that is still the one open.
    fn maybe_build_graph(&self, stamp: Option<(u64, u64)>, index: &SemanticIndex) {
        use std::sync::atomic::Ordering;
        let Ok(settings) = self.settings() else {
            return;
        };
        let count = index.vector_count();
        let wanted = count >= settings.hnsw_min_chunks.max(1)
            && index
                .graph_rows()
                .is_none_or(|rows| count - rows > rows / 10);
        if !wanted || self.inner.graph_building.swap(true, Ordering::SeqCst) {
            return;
        }
        let Some(build) = index.graph_builder() else {
            self.inner.graph_building.store(false, Ordering::SeqCst);
            return;
        };
        let tools = self.clone();
        let spawned = std::thread::Builder::new()
            .name("semantic-graph".into())
            .spawn(move || {
                let started = std::time::Instant::now();
                let graph = build();
                tracing::info!(
                    "HNSW graph of {} vectors built in {:?}",
                    graph.rows(),
                    started.elapsed()
                );
                let mut cached = tools
                    .inner
                    .index
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                if let Some((at, index)) = cached.as_mut()
                    && *at == stamp
                {
                    index.set_graph(graph);
                }
                tools.inner.graph_building.store(false, Ordering::SeqCst);
            });
        if spawned.is_err() {
            self.inner.graph_building.store(false, Ordering::SeqCst);
        }
    }

    /// `semantic_search`, its notes worded by `words`. Every answer says how it was
    /// ranked (`ranking`: `hybrid` with vectors, `lexical` by words only); why vectors
    /// took no part, or only some, is `vector.note`: on every answer when it is about
    /// this one (the model failed to load, vectors not all made yet), once per server
    /// when it is that no model is configured, which is the same for every answer.
    pub fn search_in(&self, a: SemanticSearchArgs, words: Words) -> Result<Value, semantic::Error> {
        let mut value = self.search_unworded(a)?;
        self.word_ranking(&mut value, words);
        Ok(value)
    }

    /// Adds `ranking` and words `vector.note` (see [`SemanticTools::search_in`]).
    fn word_ranking(&self, value: &mut Value, words: Words) {
        use std::sync::atomic::Ordering;
        let model = self.model();
        let used = value.pointer("/vector/used").and_then(Value::as_bool);
        // A Map answer has no vector ranking of its own: it was matched with the model
        // when there is one.
        let hybrid = used.unwrap_or(matches!(model, Ok(Some(_))));
        value["ranking"] = json!(if hybrid { "hybrid" } else { "lexical" });
        let Some(vector) = value.get_mut("vector").and_then(Value::as_object_mut) else {
            return;
        };
        let count = |field: &str| vector.get(field).and_then(Value::as_u64).unwrap_or(0);
        let (embedded, chunks) = (count("embedded"), count("chunks"));
        let failure = vector.get("error").map(|f| {
            let field = |name: &str| f.get(name).cloned().unwrap_or(Value::Null);
            (field("key"), field("message"))
        });
        let note = match model {
            _ if failure.is_some() => failure.map(|(key, message)| {
                words.note(
                    "semantic.note.vectors_failed",
                    &[("key", key), ("details", message)],
                )
            }),
            _ if hybrid => (embedded < chunks).then(|| {
                words.note(
                    "semantic.note.partial_vectors",
                    &[("embedded", json!(embedded)), ("chunks", json!(chunks))],
                )
            }),
            Ok(Some(_)) => Some(words.note("semantic.note.no_vectors_yet", &[])),
            Err(e) => Some(words.note(
                "semantic.note.model_failed",
                &[("details", json!(e.to_string()))],
            )),
            Ok(None) => (!self.inner.model_note_given.swap(true, Ordering::SeqCst)).then(|| {
                words.note(
                    "semantic.note.no_model",
                    &[
                        ("model_variable", json!(semantic::embed::ENV_MODEL_PATH)),
                        ("runtime_variable", json!(semantic::embed::ENV_RUNTIME)),
                    ],
                )
            }),
        };
        match note {
            Some(note) => vector.insert("note".into(), json!(note)),
            None => vector.remove("note"),
        };
    }

    fn search_unworded(&self, a: SemanticSearchArgs) -> Result<Value, semantic::Error> {
        if a.query.trim().is_empty() {
            return Err(semantic::Error::EmptyQuery);
        }
        // An embedding endpoint that does not answer (now, or when the model was loaded)
        // leaves this answer to the words (the Map's and the Forest's), saying why,
        // rather than failing it.
        let mut vectors_failed = None;
        let (model, note) = match self.model() {
            Ok(m) => (m, None),
            Err(e) if e.is_remote() => {
                vectors_failed = Some(semantic::Error::from(e));
                (None, None)
            }
            Err(e) => (None, Some(e.to_string())),
        };
        let model = model.as_deref();
        let note = note.or_else(|| {
            model.is_none().then(|| {
                ModelError::NotConfigured {
                    missing: semantic::embed::ENV_MODEL_PATH,
                }
                .to_string()
            })
        });
        let k = a.k.unwrap_or(10).clamp(1, 50);
        let query_vector = match model.map(|m| m.embed(&[a.query.as_str()])) {
            Some(Ok(v)) => v.into_iter().next(),
            Some(Err(e)) if e.is_remote() => {
                vectors_failed = Some(e.into());
                None
            }
            Some(Err(e)) => return Err(e.into()),
            None => None,
        };
        // The index stays opened with the model (it is cached for the next answers).
        let ranking_model = model.filter(|_| vectors_failed.is_none());

        let threshold = self.settings().map_or(0.7, |s| s.map_threshold);
        let map_hits = if a.collection == Collection::Forest {
            Vec::new()
        } else {
            let map = semantic::map::AgreementMap::load(&semantic::map_path(&self.inner.root));
            let with_vector = model.zip(query_vector.as_deref()).map(|(m, v)| (m.id(), v));
            map.search(&a.query, with_vector, threshold, k)
        };
        let answered_by = if map_hits.is_empty() { "forest" } else { "map" };
        if a.collection == Collection::Map {
            return Ok(json!({
                "query": a.query,
                "map": map_hits,
                "answered_by": if map_hits.is_empty() { Value::Null } else { json!("map") },
            }));
        }
        // An agreement close enough is the answer: the Forest is not searched (nor synced)
        // unless the caller asks for both.
        if a.collection == Collection::Auto && !map_hits.is_empty() {
            return Ok(json!({
                "query": a.query,
                "map": map_hits,
                "answered_by": "map",
                "forest_skipped": true,
                "map_threshold": (f64::from(threshold) * 1e4).round() / 1e4,
                "sync": self.status().to_json(),
            }));
        }

        let run = |index: &SemanticIndex| {
            index
                .search_with(
                    ranking_model,
                    query_vector.as_deref(),
                    note.as_deref(),
                    &a.query,
                    k,
                    semantic::search::Ranking::Hybrid,
                )
                .and_then(|r| Ok((encode(&r)?, index.synced_at())))
        };
        let mut answer = self.with_index(model, run)?;
        if answer.is_none() {
            // No index yet: build the searchable part now (seconds; after the background
            // sync's own first phase if one is under way), and leave the vectors to the
            // background.
            let settings = self
                .settings()
                .map_err(|e| semantic::Error::Config(e.clone()))?;
            semantic::sync_files(&self.inner.root, settings.chunk_max_tokens)?;
            self.start_sync(false);
            answer = self.with_index(model, run)?;
        }
        let Some((mut value, synced_at)) = answer else {
            return Err(semantic::Error::NotBuilt);
        };
        if let Some(e) = vectors_failed {
            value["vector"]["error"] = encode(&semantic::VectorFailure::of(&e))?;
        }
        if let Ok(settings) = self.settings() {
            let ttl = (settings.sync_ttl_hours * 3600.0).max(0.0) as u64;
            if now().saturating_sub(synced_at) >= ttl {
                self.start_sync(false);
            }
        }
        if a.collection == Collection::Both {
            value["map"] = json!(map_hits);
        }
        value["answered_by"] = json!(answered_by);
        value["sync"] = self.status().to_json();
        Ok(value)
    }

    /// Records a successful session's request and what answered it in the Map.
    pub fn record_agreement(
        &self,
        query: &str,
        symbols: Vec<String>,
        files: Vec<String>,
        notes: Option<String>,
    ) -> Result<(), semantic::Error> {
        let model = self.model().ok().flatten();
        // An embedding endpoint that does not answer now must not lose the agreement: it
        // is kept without a vector, matched by its words, as without a model.
        let embedded = model
            .as_ref()
            .and_then(|m| Some((m.id().to_string(), m.embed(&[query]).ok()?.pop()?)));
        let (model_id, vector) = match embedded {
            Some((id, vector)) => (Some(id), vector),
            None => (None, Vec::new()),
        };
        let path = semantic::map_path(&self.inner.root);
        let mut map = semantic::map::AgreementMap::load(&path);
        map.record(
            &path,
            semantic::map::Agreement {
                query: query.to_string(),
                symbols,
                files,
                notes,
                recorded_at: now(),
                model: model_id,
                vector,
            },
        )
    }

    /// `fetch_chunk_detail`.
    pub fn chunk(&self, a: ChunkArgs) -> Result<Value, semantic::Error> {
        let model = self.model().ok().flatten();
        match self.with_index(model.as_deref(), |index| index.chunk(&a.chunk_id))? {
            Some(detail) => encode(&detail),
            None => Err(semantic::Error::UnknownChunk(a.chunk_id)),
        }
    }

    /// `sync_index`.
    pub fn sync(&self, a: SyncArgs) -> Value {
        let mut status = self.start_sync(a.rebuild);
        if let Err(e) = self.model() {
            status["model_error"] = json!(e.to_string());
        }
        json!({"sync": status})
    }

    /// `update_context`: the summaries are kept beside `context.yml` and returned with
    /// the project context by `start_session`.
    pub fn update_context(&self, a: UpdateContextArgs) -> Result<Value, ContextError> {
        let path: PathBuf = self.inner.root.path().join(SUMMARIES_FILE);
        // No file yet is no summaries; one that cannot be read or is not a JSON object is
        // an error, not an empty start that would overwrite what it holds.
        let mut current: Map<String, Value> = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(ContextError::Corrupt)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Map::new(),
            Err(e) => return Err(ContextError::Read(e)),
        };
        let mut docs: Map<String, Value> = current
            .get("design_docs")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for d in &a.design_doc_summaries {
            // Only documents of this repository: the path must resolve inside the root.
            self.inner
                .root
                .resolve(&d.path)
                .map_err(|source| ContextError::Outside {
                    path: d.path.clone(),
                    source,
                })?;
            docs.insert(
                d.path.clone(),
                json!({"summary": d.summary, "updated_at": now()}),
            );
        }
        current.insert("design_docs".into(), Value::Object(docs));
        if let Some(rules) = &a.project_rules_summary {
            current.insert("project_rules_summary".into(), json!(rules));
        }
        let bytes = serde_json::to_vec_pretty(&current).map_err(ContextError::Serialise)?;
        atomic_write(&path, &bytes).map_err(ContextError::Write)?;
        Ok(json!({
            "updated": {
                "design_docs": a.design_doc_summaries.len(),
                "project_rules": a.project_rules_summary.is_some(),
            },
            "file": SUMMARIES_FILE,
        }))
    }
}

/// An answer as JSON; a failure reaches the client as the tool's error.
fn encode(value: &impl serde::Serialize) -> Result<Value, semantic::Error> {
    serde_json::to_value(value)
        .map_err(|e| semantic::Error::Code(crate::codeintel::error::Error::Encode(e)))
}

/// Why `update_context` saved nothing.
#[derive(Debug)]
pub enum ContextError {
    /// A design document's path is not inside the repository.
    Outside {
        path: String,
        source: crate::codeintel::error::PathError,
    },
    /// The summaries file could not be read.
    Read(std::io::Error),
    /// The summaries file is not a JSON object.
    Corrupt(serde_json::Error),
    Serialise(serde_json::Error),
    /// The summaries file could not be written.
    Write(std::io::Error),
}

impl std::fmt::Display for ContextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ContextError::Outside { path, source } => write!(f, "{path}: {source}"),
            ContextError::Read(e) => write!(f, "{SUMMARIES_FILE}: {e}"),
            ContextError::Corrupt(e) => write!(
                f,
                "{SUMMARIES_FILE} is not a JSON object ({e}): fix or remove it, then update the context again"
            ),
            ContextError::Serialise(e) => e.fmt(f),
            ContextError::Write(e) => write!(f, "{SUMMARIES_FILE}: {e}"),
        }
    }
}

impl std::error::Error for ContextError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ContextError::Outside { source, .. } => Some(source),
            ContextError::Corrupt(e) | ContextError::Serialise(e) => Some(e),
            ContextError::Read(e) | ContextError::Write(e) => Some(e),
        }
    }
}
