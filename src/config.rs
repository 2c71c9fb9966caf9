//! The repository's settings, `.code-intel/config.yml` (written by `code-intel init`):
//! read once, checked strictly (an unknown key or a wrong type is an error at its
//! line:col, never ignored), every key with a documented default.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::source::Sources;
use crate::yaml;

/// Where the settings live, relative to the root.
pub(crate) const CONFIG_FILE: &str = ".code-intel/config.yml";

/// The settings; `Config::default()` when there is no file.
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Config {
    /// The language of the flow's texts (`en`, `ja`); the contract's default when unset.
    pub locale: Option<String>,
    pub index: IndexSettings,
    pub semantic: SemanticSettings,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct IndexSettings {
    /// Gitignore-style globs left out of search, the symbol index and semantic search.
    pub exclude: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SemanticSettings {
    /// The model's name, recorded with its vectors.
    pub embedding_model: String,
    /// A directory holding `model.onnx` and the tokenizer files, relative to the root or
    /// absolute (`CODE_INTEL_EMBEDDING_MODEL_PATH` overrides it).
    pub embedding_model_path: Option<PathBuf>,
    /// The ONNX Runtime library (`CODE_INTEL_ORT_DYLIB` overrides it).
    pub onnxruntime_path: Option<PathBuf>,
    /// The token budget of one chunk.
    pub chunk_max_tokens: usize,
    /// Whether the MCP server syncs the semantic index when it starts (in the background).
    pub sync_on_start: bool,
    /// From this many vectors on, the MCP server builds an HNSW graph (in the background)
    /// and searches through it instead of scanning every vector.
    pub hnsw_min_chunks: usize,
    /// A Map agreement answers first when its request is at least this similar to the
    /// query (cosine of embeddings; word overlap without a model).
    pub map_threshold: f32,
    /// A semantic search syncs first when the last sync is older than this (0: always).
    pub sync_ttl_hours: f64,
    /// An OpenAI-compatible embedding server that embeds instead of the local model
    /// (docs/semantic-model.md, "An embedding server"); unset: the local model.
    pub endpoint: Option<EndpointSettings>,
    /// Where the vectors are kept: in the repository (the default) or a shared ChromaDB.
    pub vector_store: VectorStoreSettings,
}

/// `semantic.endpoint`: where the embedding server is and how hard to push it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EndpointSettings {
    /// A base such as `http://host:8080/v1` (`/embeddings` is appended) or the full
    /// `.../embeddings` URL (`CODE_INTEL_EMBEDDING_URL` overrides it).
    pub url: String,
    /// The model name sent with every request and recorded with the vectors
    /// (`CODE_INTEL_EMBEDDING_ENDPOINT_MODEL` overrides it).
    pub model: String,
    /// The environment variable holding the API key, sent as a Bearer token; the key
    /// itself is never written here.
    pub api_key_env: Option<String>,
    /// Texts per request.
    pub batch: usize,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// The limit of one request, connecting and reading included.
    pub timeout_seconds: u64,
    /// The vectors' size, when known: checked against every answer, and no request is
    /// made just to learn it when the embedder starts.
    pub dimensions: Option<usize>,
    /// Tries per request (the first included) on connection errors, 408, 429 and 5xx.
    pub attempts: u32,
}

impl Default for EndpointSettings {
    fn default() -> EndpointSettings {
        EndpointSettings {
            url: String::new(),
            model: String::new(),
            api_key_env: None,
            batch: 64,
            concurrency: 4,
            timeout_seconds: 60,
            dimensions: None,
            attempts: 5,
        }
    }
}

impl EndpointSettings {
    /// The first setting out of range: its key and why.
    fn check(&self) -> Option<(&'static str, String)> {
        let url = self.url.trim();
        if !(url.is_empty() || url.starts_with("http://") || url.starts_with("https://")) {
            return Some((
                "url",
                format!("semantic.endpoint.url must start with http:// or https://, not `{url}`"),
            ));
        }
        let at_least_one = [
            ("batch", self.batch),
            ("concurrency", self.concurrency),
            (
                "timeout_seconds",
                usize::try_from(self.timeout_seconds).unwrap_or(usize::MAX),
            ),
            (
                "attempts",
                usize::try_from(self.attempts).unwrap_or(usize::MAX),
            ),
            ("dimensions", self.dimensions.unwrap_or(1)),
        ];
        at_least_one.into_iter().find_map(|(key, value)| {
            (value == 0).then(|| (key, format!("semantic.endpoint.{key} must be at least 1")))
        })
    }
}

/// Which store keeps the vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum VectorStoreKind {
    /// An append-only log under `.code-intel/semantic/`, one per clone.
    #[default]
    Embedded,
    /// A ChromaDB server that many clones share (docs/scaling.md).
    Chroma,
}

/// `semantic.vector_store`: the store, and for a shared one where it is and who may use it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VectorStoreSettings {
    pub kind: VectorStoreKind,
    /// The server's base URL (`chroma run` listens on port 8000).
    pub url: String,
    pub tenant: String,
    pub database: String,
    /// The prefix of the collection's name; the rest is the model's id, so every model
    /// has its own collection and every clone of the team shares it.
    pub collection: String,
    /// The environment variable holding the token sent to the server (none: no token).
    pub token_env: Option<String>,
}

impl Default for VectorStoreSettings {
    fn default() -> VectorStoreSettings {
        VectorStoreSettings {
            kind: VectorStoreKind::Embedded,
            url: "http://localhost:8000".into(),
            tenant: "default_tenant".into(),
            database: "default_database".into(),
            collection: "code-intel".into(),
            token_env: None,
        }
    }
}

impl Default for SemanticSettings {
    fn default() -> SemanticSettings {
        SemanticSettings {
            embedding_model: "all-minilm-l6-v2".into(),
            embedding_model_path: None,
            onnxruntime_path: None,
            chunk_max_tokens: 512,
            sync_on_start: true,
            map_threshold: 0.7,
            hnsw_min_chunks: 100_000,
            sync_ttl_hours: 24.0,
            endpoint: None,
            vector_store: VectorStoreSettings::default(),
        }
    }
}

/// Why the settings could not be read: `file:line:col: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub path: PathBuf,
    pub line: u32,
    pub col: u32,
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.path.display(),
            self.line,
            self.col,
            self.message
        )
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// The settings of the repository at `root`.
    pub(crate) fn load(root: &Path) -> Result<Config, ConfigError> {
        let path = root.join(CONFIG_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(e) => {
                return Err(ConfigError {
                    path,
                    line: 1,
                    col: 1,
                    message: e.to_string(),
                });
            }
        };
        Config::parse(&path, &text)
    }

    /// Settings from the text of a config file at `path`.
    pub(crate) fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
        let mut sources = Sources::default();
        let file = sources.add(path.to_string_lossy(), text.to_string());
        let at = |span: Option<crate::source::Span>, message: String| ConfigError {
            path: path.to_path_buf(),
            line: span.map_or(1, |s| s.start.line),
            col: span.map_or(1, |s| s.start.col),
            message,
        };
        let (node, _) = yaml::parse(file, text).map_err(|d| at(d.span, d.message))?;
        if matches!(node.kind, yaml::NodeKind::Null) {
            return Ok(Config::default());
        }
        let config: Config = serde_json::from_value(node.to_json()).map_err(|e| {
            // serde names the key or the expectation; find where the first quoted name in
            // its message is written, so the error points at the line to fix.
            let message = e.to_string();
            let span = message
                .split('`')
                .nth(1)
                .and_then(|name| find_key(&node, name))
                .or(Some(node.span));
            at(span, message)
        })?;
        if let Some((key, message)) = config
            .semantic
            .endpoint
            .as_ref()
            .and_then(EndpointSettings::check)
        {
            let endpoint = find_key(&node, "endpoint");
            let span = match endpoint {
                Some(_) => find_endpoint_key(&node, key).or(endpoint),
                None => None,
            };
            return Err(at(span, message));
        }
        Ok(config)
    }
}

/// Where `semantic.endpoint.<key>` is written.
fn find_endpoint_key(node: &yaml::Node, key: &str) -> Option<crate::source::Span> {
    fn child<'a>(node: &'a yaml::Node, name: &str) -> Option<&'a (yaml::Key, yaml::Node)> {
        match &node.kind {
            yaml::NodeKind::Map(entries) => entries.iter().find(|(k, _)| k.name == name),
            _ => None,
        }
    }
    let (_, semantic) = child(node, "semantic")?;
    let (_, endpoint) = child(semantic, "endpoint")?;
    child(endpoint, key).map(|(k, _)| k.span)
}

/// Where a key of this name is written, anywhere in the tree (depth first).
fn find_key(node: &yaml::Node, name: &str) -> Option<crate::source::Span> {
    match &node.kind {
        yaml::NodeKind::Map(entries) => entries.iter().find_map(|(k, v)| {
            if k.name == name {
                Some(k.span)
            } else {
                find_key(v, name)
            }
        }),
        yaml::NodeKind::Seq(items) => items.iter().find_map(|n| find_key(n, name)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(Path::new(".code-intel/config.yml"), text)
    }

    #[test]
    fn the_file_init_writes_is_the_defaults_with_its_locale() {
        let text =
            include_str!("../templates/code-intel/config.yml.j2").replace("{{ locale }}", "ja");
        let config = parse(&text).unwrap();
        assert_eq!(config.locale.as_deref(), Some("ja"));
        assert_eq!(config.semantic, SemanticSettings::default());
    }

    #[test]
    fn an_unknown_key_is_an_error_where_it_is_written() {
        let e = parse("index:\n  exclude: []\nsemantic:\n  chunk_max_token: 5\n").unwrap_err();
        assert_eq!((e.line, e.col), (4, 3), "{e}");
        assert!(e.message.contains("chunk_max_token"), "{e}");
    }

    #[test]
    fn a_wrong_type_is_an_error() {
        let e = parse("semantic:\n  chunk_max_tokens: lots\n").unwrap_err();
        assert!(e.message.contains("expected usize"), "{e}");
    }

    #[test]
    fn an_endpoint_takes_its_defaults_and_a_bad_setting_is_an_error_where_it_is_written() {
        let config =
            parse("semantic:\n  endpoint:\n    url: http://gpu:8080/v1\n    model: bge\n").unwrap();
        let endpoint = config.semantic.endpoint.unwrap();
        assert_eq!(endpoint.url, "http://gpu:8080/v1");
        assert_eq!(
            (endpoint.batch, endpoint.concurrency, endpoint.attempts),
            (64, 4, 5)
        );
        assert_eq!(endpoint.api_key_env, None);

        let e = parse("semantic:\n  endpoint:\n    url: gpu:8080\n    model: bge\n").unwrap_err();
        assert_eq!((e.line, e.col), (3, 5), "{e}");
        assert!(e.message.contains("http://"), "{e}");
        let e = parse("semantic:\n  endpoint:\n    model: bge\n    concurrency: 0\n").unwrap_err();
        assert_eq!((e.line, e.col), (4, 5), "{e}");
        assert!(e.message.contains("concurrency must be at least 1"), "{e}");
        let e = parse("semantic:\n  endpoint:\n    api_key: sk-123\n").unwrap_err();
        assert_eq!((e.line, e.col), (3, 5), "{e}");
        assert!(e.message.contains("api_key"), "{e}");
    }

    #[test]
    fn a_shared_vector_store_is_read_with_its_defaults_filled_in() {
        let config = parse(
            "semantic:\n  vector_store:\n    kind: chroma\n    url: http://chroma.internal:8000\n    token_env: CHROMA_TOKEN\n",
        )
        .unwrap();
        let store = &config.semantic.vector_store;
        assert_eq!(store.kind, VectorStoreKind::Chroma);
        assert_eq!(store.url, "http://chroma.internal:8000");
        assert_eq!(store.token_env.as_deref(), Some("CHROMA_TOKEN"));
        assert_eq!(store.tenant, "default_tenant");
        assert_eq!(store.collection, "code-intel");
        let e = parse("semantic:\n  vector_store:\n    kind: milvus\n").unwrap_err();
        assert!(e.message.contains("milvus"), "{e}");
    }

    #[test]
    fn an_empty_file_is_the_defaults() {
        assert_eq!(parse("").unwrap(), Config::default());
        assert_eq!(parse("# nothing\n").unwrap(), Config::default());
    }
}
