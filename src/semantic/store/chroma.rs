//! A ChromaDB collection as the vector store, over its HTTP API (`/api/v2`, as served by
//! `chroma run` from the PyPI package `chromadb`, 1.5.9 tested).
//!
//! One collection per model: its name is the configured prefix and the model's id (made
//! to fit Chroma's name rules), its metadata records the full model id and the dimension,
//! and a collection whose metadata names another model, or another dimension, is refused
//! rather than mixed into. Ids are the content hashes in hex, so every clone that embeds
//! the same text writes the same record (`upsert`: two machines racing on one chunk agree).
//! Writes go in batches no larger than the server's `max_batch_size`.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Live, VectorSource, VectorStore};
use crate::config::{VectorStoreKind, VectorStoreSettings};
use crate::semantic::error::{Error, StoreError};
use crate::semantic::layout::{hex, unhex};
use crate::semantic::vectors::Hash;

/// Metadata keys of a collection this crate made.
const MODEL_KEY: &str = "code_intel_model";
const DIMENSIONS_KEY: &str = "code_intel_dimensions";
/// Chroma's limits on a collection name (the strictest of the versions in use: newer
/// servers allow up to 512 characters).
const NAME_MIN: usize = 3;
const NAME_MAX: usize = 63;
/// Ids per `get` request when asking which hashes exist: the request names them all.
const GET_BATCH: usize = 1000;
/// How long to wait for a connection, and for a whole request (a large upsert or a
/// query of a large collection takes seconds).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// Bodies larger than this are refused (a query of thousands of ids is a few hundred KiB).
const MAX_BODY_BYTES: u64 = 64 << 20;

/// The collection of one model on a Chroma server.
pub(crate) struct Chroma {
    agent: ureq::Agent,
    /// The server's base URL, as configured (messages name it).
    url: String,
    /// `…/api/v2/tenants/T/databases/D/collections/ID`.
    collection: String,
    token: Option<String>,
    max_batch: usize,
    /// Hashes known to have a vector there: learned from `put` and `learn`.
    present: HashSet<Hash>,
}

impl std::fmt::Debug for Chroma {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chroma")
            .field("collection", &self.collection)
            .finish_non_exhaustive()
    }
}

/// The collection's name for `model`: `prefix-model`, every character Chroma does not
/// allow turned into `-`, two periods never in a row, alphanumeric at both ends, and cut
/// to 63 characters with a hash of the whole when it is longer (so two long model ids
/// still get two names). Two model ids that differ only in disallowed characters get one
/// name; the metadata check refuses the second.
pub(crate) fn collection_name(prefix: &str, model: &str) -> Result<String, StoreError> {
    let raw = if prefix.is_empty() {
        model.to_string()
    } else {
        format!("{prefix}-{model}")
    };
    let mut name = String::with_capacity(raw.len());
    for c in raw.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' {
            c
        } else {
            '-'
        };
        if c == '.' && name.ends_with('.') {
            name.push('-');
        } else {
            name.push(c);
        }
    }
    let trim = |s: &str| {
        s.trim_matches(|c: char| !c.is_ascii_alphanumeric())
            .to_string()
    };
    let mut name = trim(&name);
    if name.len() > NAME_MAX {
        let digest = hex(&crate::codeintel::retag::sha256(raw.as_bytes()));
        let head = trim(&name[..NAME_MAX - 9]);
        name = format!("{head}-{}", &digest[..8]);
    }
    if name.len() < NAME_MIN {
        return Err(StoreError::Settings(format!(
            "the collection name `{name}` made from the prefix `{prefix}` and the model `{model}` is shorter than {NAME_MIN} characters"
        )));
    }
    if name.parse::<std::net::Ipv4Addr>().is_ok() {
        return Err(StoreError::Settings(format!(
            "the collection name `{name}` would be an IP address, which Chroma refuses: choose another collection prefix"
        )));
    }
    Ok(name)
}

/// `max_batch_size` from `/pre-flight-checks`.
fn parse_preflight(body: &Value) -> Result<usize, String> {
    body.get("max_batch_size")
        .and_then(Value::as_u64)
        .filter(|&n| n > 0)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| format!("no max_batch_size in the pre-flight checks: {body}"))
}

/// The id of a collection as the server returned it, once its metadata says it holds
/// `model`'s vectors of `dimensions` (`Err(found)` says what it holds otherwise).
fn parse_collection(
    body: &Value,
    model: &str,
    dimensions: usize,
) -> Result<Result<String, String>, String> {
    let id = body
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("the collection has no id: {body}"))?;
    let metadata = body.get("metadata");
    let found_model = metadata
        .and_then(|m| m.get(MODEL_KEY))
        .and_then(Value::as_str);
    let found_dims = metadata
        .and_then(|m| m.get(DIMENSIONS_KEY))
        .and_then(Value::as_u64);
    // The dimension the collection took from its first vectors (null while empty).
    let stored_dims = body.get("dimension").and_then(Value::as_u64);
    let space = body
        .pointer("/configuration_json/hnsw/space")
        .and_then(Value::as_str);
    let dims = dimensions as u64;
    let found = match (found_model, found_dims) {
        (Some(m), Some(d)) if m == model && d == dims => None,
        (Some(m), Some(d)) => Some(format!("the model {m} ({d} dimensions)")),
        _ => Some("no model this program recorded (a collection made by something else)".into()),
    };
    if let Some(found) = found {
        return Ok(Err(found));
    }
    if let Some(d) = stored_dims.filter(|&d| d != dims) {
        return Ok(Err(format!("vectors of {d} dimensions")));
    }
    if let Some(space) = space.filter(|&s| s != "cosine") {
        return Ok(Err(format!("a `{space}` distance, not cosine")));
    }
    Ok(Ok(id.to_string()))
}

/// The ids `/get` returned.
fn parse_ids(body: &Value) -> Result<Vec<String>, String> {
    body.get("ids")
        .and_then(Value::as_array)
        .map(|ids| {
            ids.iter()
                .filter_map(|id| id.as_str().map(str::to_string))
                .collect()
        })
        .ok_or_else(|| format!("no ids in the answer: {}", excerpt(&body.to_string())))
}

/// The (id, cosine similarity) pairs of the first query of a `/query` answer, nearest
/// first. The collection's space is cosine, whose distance is 1 − cosine.
fn parse_query(body: &Value) -> Result<Vec<(String, f32)>, String> {
    let ids = body
        .pointer("/ids/0")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("no ids in the answer: {}", excerpt(&body.to_string())))?;
    let distances = body
        .pointer("/distances/0")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("no distances in the answer: {}", excerpt(&body.to_string())))?;
    if ids.len() != distances.len() {
        return Err(format!(
            "{} ids but {} distances in the answer",
            ids.len(),
            distances.len()
        ));
    }
    ids.iter()
        .zip(distances)
        .map(|(id, d)| match (id.as_str(), d.as_f64()) {
            (Some(id), Some(d)) => Ok((id.to_string(), 1.0 - d as f32)),
            _ => Err(format!("an id or a distance is malformed: {id}, {d}")),
        })
        .collect()
}

/// The error message of a refused request: Chroma answers `{"error", "message"}`.
fn refusal(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            let error = v.get("error").and_then(Value::as_str);
            let message = v.get("message").and_then(Value::as_str);
            match (error, message) {
                (Some(e), Some(m)) => Some(format!("{e}: {m}")),
                (e, m) => e.or(m).map(str::to_string),
            }
        })
        .unwrap_or_else(|| excerpt(body))
}

/// `request` with the token, when there is one. Chroma's own clients send it as
/// `X-Chroma-Token` or as a bearer `Authorization`, depending on the server's setting; both
/// are sent, so either setting accepts it.
fn authorized<B>(token: Option<&str>, request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
    match token {
        Some(t) => request
            .header("X-Chroma-Token", t)
            .header("Authorization", format!("Bearer {t}")),
        None => request,
    }
}

fn excerpt(text: &str) -> String {
    let cut: String = text.chars().take(300).collect();
    if cut.len() < text.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

impl Chroma {
    /// Opens (creating when needed) the collection of `model` on the server the settings
    /// name, and checks that it holds that model's vectors.
    pub(crate) fn connect(
        settings: &VectorStoreSettings,
        model: &str,
        dimensions: usize,
    ) -> Result<Chroma, StoreError> {
        let url = settings.url.trim_end_matches('/').to_string();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(StoreError::Settings(format!(
                "url `{}` is not an http:// or https:// URL",
                settings.url
            )));
        }
        let token = match &settings.token_env {
            None => None,
            Some(variable) => match crate::environment::secret(variable) {
                Some(t) => Some(t.trim().to_string()),
                None => {
                    return Err(StoreError::Settings(format!(
                        "token_env names the variable {variable}, which is not set"
                    )));
                }
            },
        };
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .timeout_global(Some(REQUEST_TIMEOUT))
            .http_status_as_error(false)
            .build()
            .into();
        let mut chroma = Chroma {
            agent,
            collection: String::new(),
            token,
            max_batch: 1,
            present: HashSet::new(),
            url,
        };
        let preflight = chroma.call("GET", "/api/v2/pre-flight-checks", None)?;
        chroma.max_batch = parse_preflight(&preflight).map_err(|reason| chroma.bad(reason))?;
        let name = collection_name(&settings.collection, model)?;
        let collections = format!(
            "/api/v2/tenants/{}/databases/{}/collections",
            settings.tenant, settings.database
        );
        let created = chroma.call(
            "POST",
            &collections,
            Some(&json!({
                "name": name,
                "metadata": {MODEL_KEY: model, DIMENSIONS_KEY: dimensions},
                "configuration": {"hnsw": {"space": "cosine"}},
                "get_or_create": true,
            })),
        )?;
        match parse_collection(&created, model, dimensions).map_err(|r| chroma.bad(r))? {
            Ok(id) => chroma.collection = format!("{collections}/{id}"),
            Err(found) => {
                return Err(StoreError::ModelMismatch {
                    url: chroma.url.clone(),
                    collection: name,
                    found,
                    expected: format!("the model {model} ({dimensions} dimensions)"),
                });
            }
        }
        Ok(chroma)
    }

    fn bad(&self, reason: String) -> StoreError {
        StoreError::BadResponse {
            url: self.url.clone(),
            reason,
        }
    }

    /// One request; its JSON answer, or why there is none.
    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, StoreError> {
        let url = format!("{}{path}", self.url);
        let unavailable = |cause: String| StoreError::Unavailable {
            url: self.url.clone(),
            cause,
        };
        let token = self.token.as_deref();
        let sent = match (method, body) {
            ("GET", _) => authorized(token, self.agent.get(&url)).call(),
            (_, body) => {
                let bytes = body.map(Value::to_string).unwrap_or_default().into_bytes();
                let request = self
                    .agent
                    .post(&url)
                    .header("Content-Type", "application/json");
                authorized(token, request).send(&bytes[..])
            }
        };
        let mut response = sent.map_err(|e| unavailable(e.to_string()))?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .with_config()
            .limit(MAX_BODY_BYTES)
            .read_to_string()
            .map_err(|e| unavailable(e.to_string()))?;
        match status {
            200..=299 => serde_json::from_str(&text).map_err(|e| {
                self.bad(format!(
                    "{method} {path}: not JSON ({e}): {}",
                    excerpt(&text)
                ))
            }),
            500..=599 => Err(unavailable(format!("HTTP {status}: {}", refusal(&text)))),
            _ => Err(StoreError::Rejected {
                url: self.url.clone(),
                status,
                message: format!("{method} {path}: {}", refusal(&text)),
            }),
        }
    }

    /// Asks which of `hashes` the collection has that this handle does not know of yet,
    /// and remembers them (a search does this when it opens, and before each answer while
    /// some live chunks still lack a vector).
    pub(crate) fn learn<'a>(
        &mut self,
        hashes: impl Iterator<Item = &'a Hash>,
    ) -> Result<(), StoreError> {
        let unknown: Vec<Hash> = hashes
            .filter(|h| !self.present.contains(*h))
            .copied()
            .collect();
        let missing: HashSet<Hash> = self.absent(&unknown)?;
        self.present
            .extend(unknown.into_iter().filter(|h| !missing.contains(h)));
        Ok(())
    }
}

impl VectorSource for Chroma {
    fn contains(&self, hash: &Hash) -> bool {
        self.present.contains(hash)
    }

    /// Over-fetches and filters (see the module `store`): `n` neighbours from the server's
    /// index, those not live here dropped; `n` grows fourfold until `k` live ones are found
    /// or the collection has no more.
    fn nearest(&self, query: &[f32], live: &Live<'_>, k: usize) -> Result<Vec<(Hash, f32)>, Error> {
        if k == 0 || live.ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut n = (k * 2).max(k + 16);
        loop {
            let body = self.call(
                "POST",
                &format!("{}/query", self.collection),
                Some(&json!({
                    "query_embeddings": [query],
                    "n_results": n,
                    "include": ["distances"],
                })),
            )?;
            let found = parse_query(&body).map_err(|r| self.bad(r))?;
            let returned = found.len();
            let kept: Vec<(Hash, f32)> = found
                .into_iter()
                .filter_map(|(id, score)| Some((unhex(&id)?, score)))
                .filter(|(h, _)| live.ids.contains_key(h))
                .take(k)
                .collect();
            if kept.len() >= k || returned < n {
                return Ok(kept);
            }
            n = n.saturating_mul(4);
        }
    }
}

impl Chroma {
    /// Of `hashes`, those the collection has no record of.
    fn absent(&self, hashes: &[Hash]) -> Result<HashSet<Hash>, StoreError> {
        let mut present: HashSet<Hash> = HashSet::new();
        for batch in hashes.chunks(GET_BATCH.min(self.max_batch)) {
            let ids: Vec<String> = batch.iter().map(|h| hex(h)).collect();
            let body = self.call(
                "POST",
                &format!("{}/get", self.collection),
                Some(&json!({"ids": ids, "include": []})),
            )?;
            for id in parse_ids(&body).map_err(|r| self.bad(r))? {
                if let Some(h) = unhex(&id) {
                    present.insert(h);
                }
            }
        }
        Ok(hashes
            .iter()
            .filter(|h| !present.contains(*h))
            .copied()
            .collect())
    }
}

impl VectorStore for Chroma {
    fn missing(&self, hashes: &[Hash]) -> Result<Vec<Hash>, Error> {
        let absent = self.absent(hashes)?;
        Ok(hashes
            .iter()
            .filter(|h| absent.contains(*h))
            .copied()
            .collect())
    }

    fn put(&mut self, batch: &[(Hash, Vec<f32>)]) -> Result<(), Error> {
        for part in batch.chunks(self.max_batch) {
            let ids: Vec<String> = part.iter().map(|(h, _)| hex(h)).collect();
            let embeddings: Vec<&[f32]> = part.iter().map(|(_, v)| v.as_slice()).collect();
            self.call(
                "POST",
                &format!("{}/upsert", self.collection),
                Some(&json!({"ids": ids, "embeddings": embeddings})),
            )?;
            self.present.extend(part.iter().map(|(h, _)| *h));
        }
        Ok(())
    }

    /// Nothing: other clones may use what this one no longer does.
    fn settle(&mut self, _live: &HashSet<Hash>) -> Result<(), Error> {
        Ok(())
    }
}

/// A search's handle on a shared store: connected, knowing which live hashes have a
/// vector there, or why not. A search that needs vectors fails with that error (and the
/// next answer tries again); one by words and names does not need it.
pub(crate) struct Shared {
    settings: VectorStoreSettings,
    model: String,
    dimensions: usize,
    state: Result<Chroma, StoreError>,
}

impl Shared {
    /// The shared store `settings` name, when they name one.
    pub(crate) fn open<'a>(
        settings: &VectorStoreSettings,
        model: &str,
        dimensions: usize,
        live: impl Iterator<Item = &'a Hash>,
    ) -> Option<Shared> {
        if settings.kind == VectorStoreKind::Embedded {
            return None;
        }
        let mut shared = Shared {
            settings: settings.clone(),
            model: model.to_string(),
            dimensions,
            state: Err(StoreError::Settings("not connected yet".into())),
        };
        shared.refresh(live);
        Some(shared)
    }

    /// Connects again if the last attempt failed, and learns which of `live` got a vector
    /// since (a sync on this or another machine put them).
    pub(crate) fn refresh<'a>(&mut self, live: impl Iterator<Item = &'a Hash>) {
        if self.state.is_err() {
            self.state = Chroma::connect(&self.settings, &self.model, self.dimensions);
        }
        if let Ok(store) = &mut self.state
            && let Err(e) = store.learn(live)
        {
            self.state = Err(e);
        }
    }

    /// Whether some of `live` have no known vector yet.
    pub(crate) fn lacks<'a>(&self, mut live: impl Iterator<Item = &'a Hash>) -> bool {
        match &self.state {
            Ok(store) => live.any(|h| !store.contains(h)),
            Err(_) => true,
        }
    }

    /// The store to search, or why there is none.
    pub(crate) fn source(&self) -> Result<&dyn VectorSource, Error> {
        match &self.state {
            Ok(store) => Ok(store),
            Err(e) => Err(e.clone().into()),
        }
    }

    /// The store when connected (for counting what has a vector).
    pub(crate) fn connected(&self) -> Option<&dyn VectorSource> {
        self.state.as_ref().ok().map(|s| s as &dyn VectorSource)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(name: &str) -> bool {
        (NAME_MIN..=NAME_MAX).contains(&name.len())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
            && name.starts_with(|c: char| c.is_ascii_alphanumeric())
            && name.ends_with(|c: char| c.is_ascii_alphanumeric())
            && !name.contains("..")
    }

    #[test]
    fn a_model_id_becomes_a_name_chroma_accepts() {
        let name = collection_name("code-intel", "all-minilm-l6-v2@9d629e53abcdef01").unwrap();
        assert_eq!(name, "code-intel-all-minilm-l6-v2-9d629e53abcdef01");
        // Disallowed characters, periods in a row, odd ends.
        let name = collection_name("_team..x", "models/bge small@1.5/").unwrap();
        assert_eq!(name, "team.-x-models-bge-small-1.5");
        assert!(valid(&name), "{name}");
        // Too long: cut, with a hash of the whole so two long ids stay apart.
        let long_a = format!("{}@aaaa", "m".repeat(80));
        let long_b = format!("{}@bbbb", "m".repeat(80));
        let (a, b) = (
            collection_name("code-intel", &long_a).unwrap(),
            collection_name("code-intel", &long_b).unwrap(),
        );
        assert!(valid(&a) && valid(&b), "{a} {b}");
        assert_ne!(a, b);
        // Nothing usable left, or an IP address.
        assert!(collection_name("", "@@").is_err());
        assert!(collection_name("", "10.0.0.1").is_err());
    }

    #[test]
    fn the_server_answers_are_read_and_a_collection_of_another_model_is_told_apart() {
        assert_eq!(
            parse_preflight(&json!({"max_batch_size": 5461, "supports_base64_encoding": true})),
            Ok(5461)
        );
        assert!(parse_preflight(&json!({"supports_base64_encoding": true})).is_err());

        let ours = json!({"id": "c1", "metadata": {MODEL_KEY: "m@1", DIMENSIONS_KEY: 384},
            "dimension": null, "configuration_json": {"hnsw": {"space": "cosine"}}});
        assert_eq!(parse_collection(&ours, "m@1", 384), Ok(Ok("c1".into())));
        let found = parse_collection(&ours, "m@2", 384).unwrap().unwrap_err();
        assert!(found.contains("m@1"), "{found}");
        assert!(parse_collection(&ours, "m@1", 768).unwrap().is_err());
        let foreign = json!({"id": "c2", "metadata": null, "dimension": 384});
        assert!(parse_collection(&foreign, "m@1", 384).unwrap().is_err());
        let l2 = json!({"id": "c3", "metadata": {MODEL_KEY: "m@1", DIMENSIONS_KEY: 384},
            "configuration_json": {"hnsw": {"space": "l2"}}});
        assert!(
            parse_collection(&l2, "m@1", 384)
                .unwrap()
                .unwrap_err()
                .contains("l2")
        );
        assert!(parse_collection(&json!({"name": "x"}), "m@1", 384).is_err());

        assert_eq!(
            parse_ids(&json!({"ids": ["a", "b"], "embeddings": null})),
            Ok(vec!["a".to_string(), "b".to_string()])
        );
        let got = parse_query(&json!({"ids": [["a", "b"]], "distances": [[0.25, 0.5]]})).unwrap();
        assert_eq!(got, [("a".to_string(), 0.75), ("b".to_string(), 0.5)]);
        assert!(parse_query(&json!({"ids": [["a"]], "distances": [[]]})).is_err());
        assert!(parse_query(&json!({"error": "x"})).is_err());
        assert_eq!(
            refusal(r#"{"error":"NotFound","message":"Database d not found"}"#),
            "NotFound: Database d not found"
        );
    }
}
