//! Embeddings from an OpenAI-compatible `/v1/embeddings` server (`semantic.endpoint`),
//! against a loopback HTTP server in this test that embeds with the same local ONNX model
//! (fp32 all-MiniLM-L6-v2, see `semantic`): the vectors equal the local ones, the bearer
//! key is sent, throttling and server errors are retried within the configured attempts
//! and concurrency, bad answers are clear errors, and a repository indexed through the
//! server answers queries as one indexed with the local model does, through the CLI and
//! the MCP server's semantic tools.

use crate::support::{Seen, read_request, write_response};
use std::collections::VecDeque;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use code_intel::semantic::{Embedder, EndpointSpec};
use serde_json::{Value, json};

use crate::semantic::{embedder, model_files};
use crate::support::{TempDir, binary, git_repo};

/// The longest a request may take here (see [`Loopback::spec`]).
const TIMEOUT: Duration = Duration::from_secs(600);

/// A reply the server gives instead of embedding.
#[derive(Clone)]
struct Canned {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
}

fn canned(status: u16, body: &str) -> Canned {
    Canned {
        status,
        headers: Vec::new(),
        body: body.to_owned(),
    }
}

#[derive(Default)]
struct State {
    /// Replies given first, in order; after them (or `always`), the model answers.
    script: Mutex<VecDeque<Canned>>,
    always: Mutex<Option<Canned>>,
    seen: Mutex<Vec<Seen>>,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
    /// How long each request is held before the answer (to make concurrency visible).
    hold: Mutex<Duration>,
}

/// The loopback embedding server: a thread accepting connections, one thread per
/// connection, each request answered with `Connection: close`.
struct Loopback {
    base_url: String,
    state: Arc<State>,
}

impl Loopback {
    fn start() -> Loopback {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let state = Arc::new(State::default());
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let state = Arc::clone(&shared);
                std::thread::spawn(move || serve(&stream, &state));
            }
        });
        Loopback { base_url, state }
    }

    fn script(&self, replies: Vec<Canned>) {
        self.state.script.lock().unwrap().extend(replies);
    }

    fn always(&self, reply: Canned) {
        *self.state.always.lock().unwrap() = Some(reply);
    }

    fn hold(&self, d: Duration) {
        *self.state.hold.lock().unwrap() = d;
    }

    fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }

    /// A spec for this server with fast retries. The timeout is long: the server's model is
    /// shared with the other tests of this binary, which may hold it for a while on a busy
    /// machine.
    fn spec(&self) -> EndpointSpec {
        let mut spec = EndpointSpec::new(self.base_url.clone(), "all-minilm-l6-v2");
        spec.backoff = Duration::from_millis(10);
        spec.timeout = TIMEOUT;
        spec
    }
}

fn serve(stream: &TcpStream, state: &State) {
    let Some(seen) = read_request(Duration::from_secs(30), stream) else {
        return;
    };
    state.seen.lock().unwrap().push(seen.clone());
    let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    state.most_in_flight.fetch_max(now, Ordering::SeqCst);
    std::thread::sleep(*state.hold.lock().unwrap());
    let scripted = state.script.lock().unwrap().pop_front();
    let reply = scripted
        .or_else(|| state.always.lock().unwrap().clone())
        .unwrap_or_else(|| embed_reply(&seen));
    state.in_flight.fetch_sub(1, Ordering::SeqCst);
    let _ = write_response(stream, reply.status, &reply.headers, &reply.body);
}

/// What an OpenAI-compatible server answers, made with the local model: the data in
/// reverse order (each with its index) and scaled, as a server that does not normalise
/// would send them.
fn embed_reply(seen: &Seen) -> Canned {
    if !seen.request_line.starts_with("POST /v1/embeddings ") {
        return canned(404, r#"{"error":"no such route"}"#);
    }
    let (Some(model), Some(input), Some("float")) = (
        seen.body["model"].as_str(),
        seen.body["input"].as_array(),
        seen.body["encoding_format"].as_str(),
    ) else {
        return canned(
            422,
            r#"{"error":"model, input and encoding_format: float expected"}"#,
        );
    };
    let texts: Vec<&str> = input.iter().filter_map(Value::as_str).collect();
    let vectors = embedder().embed(&texts).unwrap();
    let data: Vec<Value> = vectors
        .iter()
        .enumerate()
        .rev()
        .map(|(i, v)| {
            let scaled: Vec<f32> = v.iter().map(|x| x * 2.5).collect();
            json!({"object": "embedding", "index": i, "embedding": scaled})
        })
        .collect();
    let body = json!({"object": "list", "data": data, "model": model,
        "usage": {"prompt_tokens": 0, "total_tokens": 0}});
    canned(200, &body.to_string())
}

/// Code-like texts of many lengths.
fn texts() -> Vec<String> {
    let mut texts: Vec<String> = [
        "A man is eating food.",
        "def check_password(user, raw):\n    return hasher.verify(raw, user.password_hash)",
        "fn evict_oldest(&mut self) { self.map.pop_front(); }",
        "# Deploying\n\nBuild the container image and push it to the registry.",
        "x",
        "class Mailer:\n    def deliver(self, to, subject, body):\n        smtp.sendmail(to, subject, body)",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    for i in 0..14 {
        texts.push(format!(
            "def handler_{i}(request):\n    {}\n    return request.respond(status={})",
            "total = sum(item.price for item in request.items)\n    ".repeat(i % 5 + 1),
            200 + i
        ));
    }
    texts
}

fn max_difference(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .flat_map(|(x, y)| {
            assert_eq!(x.len(), y.len());
            x.iter().zip(y).map(|(p, q)| (p - q).abs())
        })
        .fold(0.0, f32::max)
}

#[test]
fn the_endpoints_vectors_equal_the_local_models_and_the_key_is_sent() {
    let server = Loopback::start();
    let mut spec = server.spec();
    spec.batch = 5;
    spec.concurrency = 2;
    spec.api_key = Some("sk-loopback-test".into());
    let remote = Embedder::connect(&spec).unwrap();
    // The dimensions were asked of the server; the id names the model and them, not the URL.
    assert_eq!(remote.dimensions(), 384);
    assert_eq!(remote.id(), "all-minilm-l6-v2@endpoint/384");
    assert_ne!(remote.id(), embedder().id());

    let texts = texts();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let local = embedder().embed(&refs).unwrap();
    let from_server = remote.embed(&refs).unwrap();
    let difference = max_difference(&local, &from_server);
    assert!(difference < 1e-5, "max |Δ| = {difference}");
    for v in &from_server {
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{norm}");
    }

    let seen = server.seen();
    // The probe, then 20 texts in batches of 5.
    assert_eq!(seen.len(), 1 + 4, "{seen:?}");
    for s in &seen {
        assert_eq!(s.request_line, "POST /v1/embeddings HTTP/1.1");
        assert_eq!(s.authorization.as_deref(), Some("Bearer sk-loopback-test"));
        assert_eq!(s.body["model"], "all-minilm-l6-v2");
        assert_eq!(s.body["encoding_format"], "float");
    }
    // Shortest first: each batch's texts are no longer than the next batch's.
    let lengths: Vec<Vec<usize>> = seen[1..]
        .iter()
        .map(|s| {
            s.body["input"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap().len())
                .collect()
        })
        .collect();
    let mut batches = lengths.clone();
    batches.sort_by_key(|b| b[0]);
    for pair in batches.windows(2) {
        assert!(pair[0].iter().max() <= pair[1].iter().min(), "{lengths:?}");
    }

    // With the dimensions configured, connecting asks nothing; a full URL is used as is.
    let before = server.seen().len();
    let mut spec = server.spec();
    spec.url = format!("{}/embeddings/", server.base_url);
    spec.dimensions = Some(384);
    let quiet = Embedder::connect(&spec).unwrap();
    assert_eq!(server.seen().len(), before);
    assert_eq!(quiet.id(), remote.id());
    let one = quiet.embed(&[refs[1]]).unwrap();
    assert!(max_difference(&one, &local[1..2]) < 1e-5);
    assert_eq!(server.seen()[before].authorization, None);
}

#[test]
fn throttling_is_retried_after_the_servers_retry_after() {
    let server = Loopback::start();
    let mut spec = server.spec();
    spec.dimensions = Some(384);
    let remote = Embedder::connect(&spec).unwrap();
    let mut limited = canned(429, r#"{"error":{"message":"Rate limit reached"}}"#);
    limited.headers.push(("Retry-After", "1".into()));
    server.script(vec![limited, canned(503, "warming up")]);
    let started = Instant::now();
    let v = remote.embed(&["A man is eating food."]).unwrap();
    let waited = started.elapsed();
    assert!(max_difference(&v, &embedder().embed(&["A man is eating food."]).unwrap()) < 1e-5);
    assert_eq!(server.seen().len(), 3);
    assert!(waited >= Duration::from_secs(1), "{waited:?}");
}

#[test]
fn a_server_that_keeps_failing_ends_in_endpoint_failed_after_the_configured_attempts() {
    let server = Loopback::start();
    let mut spec = server.spec();
    spec.dimensions = Some(384);
    spec.attempts = 3;
    spec.api_key = Some("sk-secret-value".into());
    let remote = Embedder::connect(&spec).unwrap();
    server.always(canned(
        500,
        r#"{"error":{"message":"CUDA out of memory","type":"server_error"}}"#,
    ));
    let e = remote.embed(&["one", "two"]).unwrap_err();
    assert_eq!(e.key(), "semantic.endpoint_failed");
    let message = e.to_string();
    assert!(
        message.contains(&format!("{}/embeddings", server.base_url)),
        "{message}"
    );
    assert!(message.contains("HTTP 500"), "{message}");
    assert!(message.contains("3 tries"), "{message}");
    assert!(message.contains("CUDA out of memory"), "{message}");
    assert_eq!(server.seen().len(), 3);

    // A refusal is not retried, and a key the server echoes back is not repeated.
    server.always(canned(
        401,
        r#"{"error":{"message":"Incorrect API key provided: sk-secret-value"}}"#,
    ));
    let e = remote.embed(&["one"]).unwrap_err();
    assert_eq!(e.key(), "semantic.endpoint_failed");
    assert_eq!(server.seen().len(), 4);
    assert!(e.to_string().contains("HTTP 401"), "{e}");
    assert!(!e.to_string().contains("sk-secret-value"), "{e}");
    assert!(!format!("{e:?} {spec:?} {remote:?}").contains("sk-secret-value"));

    // Nobody listening: connection errors are retried, then reported without a status.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let mut spec = EndpointSpec::new(url.clone(), "all-minilm-l6-v2");
    spec.backoff = Duration::from_millis(10);
    spec.attempts = 2;
    let e = Embedder::connect(&spec).unwrap_err();
    assert_eq!(e.key(), "semantic.endpoint_failed");
    assert!(
        e.to_string().contains("could not be reached (2 tries)"),
        "{e}"
    );
    assert!(e.to_string().contains(&url), "{e}");
}

#[test]
fn no_more_requests_than_the_concurrency_are_in_flight() {
    let server = Loopback::start();
    let mut spec = server.spec();
    spec.dimensions = Some(384);
    spec.batch = 2;
    spec.concurrency = 3;
    let remote = Embedder::connect(&spec).unwrap();
    assert_eq!(remote.texts_per_call(), 6);
    server.hold(Duration::from_millis(300));
    let texts = texts();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let v = remote.embed(&refs).unwrap();
    assert!(max_difference(&v, &embedder().embed(&refs).unwrap()) < 1e-5);
    assert_eq!(server.seen().len(), 10);
    assert_eq!(server.state.most_in_flight.load(Ordering::SeqCst), 3);

    // One request at a time when so configured.
    let server = Loopback::start();
    let mut spec = server.spec();
    spec.dimensions = Some(384);
    spec.batch = 4;
    spec.concurrency = 1;
    server.hold(Duration::from_millis(50));
    Embedder::connect(&spec).unwrap().embed(&refs).unwrap();
    assert_eq!(server.seen().len(), 5);
    assert_eq!(server.state.most_in_flight.load(Ordering::SeqCst), 1);
}

#[test]
fn an_answer_that_is_not_the_embeddings_asked_for_is_a_clear_error() {
    let server = Loopback::start();
    let mut spec = server.spec();
    spec.dimensions = Some(384);
    let remote = Embedder::connect(&spec).unwrap();
    let url = format!("{}/embeddings", server.base_url);
    let one = json!({"data": [{"index": 0, "embedding": vec![0.5f32; 384]}]}).to_string();
    let short = json!({"data": [{"index": 0, "embedding": vec![0.5f32; 100]}]}).to_string();
    let cases = [
        (one.as_str(), "2 embeddings asked for, 1 in the answer"),
        (
            short.as_str(),
            "embedding 0 has 100 dimensions, 384 expected",
        ),
        (
            "<html><body>Bad gateway</body></html>",
            "not an embeddings response",
        ),
    ];
    for (body, expected) in cases {
        server.script(vec![canned(200, body)]);
        let before = server.seen().len();
        let e = remote.embed(&["one", "two"][..if body == short { 1 } else { 2 }]);
        let e = e.unwrap_err();
        assert_eq!(e.key(), "semantic.endpoint_bad_response", "{e}");
        assert!(e.to_string().contains(expected), "{e}");
        assert!(e.to_string().contains(&url), "{e}");
        // A success with a bad answer is not retried.
        assert_eq!(server.seen().len(), before + 1);
    }
    // Without configured dimensions, the probe's answer is checked the same way.
    let mut spec = server.spec();
    spec.dimensions = None;
    server.script(vec![canned(200, r#"{"data":[]}"#)]);
    let e = Embedder::connect(&spec).unwrap_err();
    assert_eq!(e.key(), "semantic.endpoint_bad_response", "{e}");
}

/// A small project whose files each do one thing a user would describe in other words.
const PROJECT: &[(&str, &str)] = &[
    (
        "app/auth.py",
        "import hashlib\n\n\ndef make_password_digest(raw: str, salt: bytes) -> str:\n    \"\"\"Store credentials safely.\"\"\"\n    return hashlib.pbkdf2_hmac('sha256', raw.encode(), salt, 600_000).hex()\n\n\ndef check_login(user, raw):\n    return make_password_digest(raw, user.salt) == user.digest\n",
    ),
    (
        "app/dates.py",
        "from datetime import datetime\n\n\ndef parse_timestamp(text):\n    \"\"\"Turn an ISO 8601 string into a datetime.\"\"\"\n    return datetime.fromisoformat(text)\n",
    ),
    (
        "app/mail.py",
        "import smtplib\n\n\nclass Mailer:\n    def deliver(self, to, subject, body):\n        with smtplib.SMTP('localhost') as s:\n            s.sendmail('noreply@example.com', [to], f'Subject: {subject}\\n\\n{body}')\n",
    ),
    (
        "app/upload.py",
        "def save_upload(request, storage):\n    \"\"\"Write an uploaded file to disk, refusing files over 10 MB.\"\"\"\n    f = request.files['file']\n    if f.size > 10 * 1024 * 1024:\n        raise ValueError('too large')\n    storage.write(f.name, f.read())\n",
    ),
    (
        "src/cache.rs",
        "use std::collections::HashMap;\n\npub struct Lru { map: HashMap<String, Vec<u8>>, cap: usize }\n\nimpl Lru {\n    pub fn evict_oldest(&mut self) {\n        if self.map.len() > self.cap {\n            let k = self.map.keys().next().cloned();\n            if let Some(k) = k { self.map.remove(&k); }\n        }\n    }\n}\n",
    ),
    (
        "src/retry.rs",
        "use std::time::Duration;\n\n/// Waits longer after each failed attempt.\npub fn backoff(attempt: u32) -> Duration {\n    Duration::from_millis(100 * 2u64.pow(attempt))\n}\n",
    ),
    (
        "docs/deploy.md",
        "# Deploying\n\nBuild the container image and push it to the registry.\n\n## Rollback\n\nRedeploy the previous image tag when a release goes wrong.\n",
    ),
];

const QUERIES: &[&str] = &[
    "how are user passwords hashed",
    "send an email message",
    "remove least recently used entries",
    "undo a bad release",
    "convert a string to a date",
    "reject files that are too big",
    "wait longer between attempts",
];

/// `code-intel` in `dir` with the local model's variables set (an endpoint in the config
/// wins over them) and none of the endpoint's.
fn cli(dir: &Path, args: &[&str]) -> Command {
    let (runtime, model) = model_files().as_ref().unwrap_or_else(|e| panic!("{e}"));
    let mut c = crate::support::code_intel();
    c.args(args)
        .current_dir(dir)
        .env("CODE_INTEL_ORT_DYLIB", runtime)
        .env("CODE_INTEL_EMBEDDING_MODEL_PATH", model)
        .env_remove("CODE_INTEL_EMBEDDING_URL")
        .env_remove("CODE_INTEL_EMBEDDING_ENDPOINT_MODEL");
    c
}

fn json_of(mut c: Command) -> Value {
    let out = c.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The top three hits of each query, as `path#symbol`, from `code-intel semantic`.
fn cli_top_hits(dir: &Path, key: &str) -> Vec<Vec<String>> {
    QUERIES
        .iter()
        .map(|q| {
            let mut c = cli(dir, &["semantic", q, "-k", "3", "--no-sync", "--json"]);
            c.env(KEY_VARIABLE, key);
            let v = json_of(c);
            assert_eq!(v["vector"]["used"], true, "{v}");
            hit_names(&v)
        })
        .collect()
}

fn hit_names(answer: &Value) -> Vec<String> {
    answer["hits"]
        .as_array()
        .unwrap_or_else(|| panic!("no hits: {answer}"))
        .iter()
        .map(|h| {
            format!(
                "{}#{}",
                h["path"].as_str().unwrap(),
                h["symbol"].as_str().unwrap()
            )
        })
        .collect()
}

/// Calls `semantic_search` for each query (argv[3], JSON) on `code-intel serve` in
/// argv[2] through the `mcp` client; prints the answers as a JSON list.
const MCP_CLIENT: &str = r#"
import asyncio, json, os, sys
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

async def main():
    binary, root, queries = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    params = StdioServerParameters(command=binary, args=["serve", "--root", root], env=dict(os.environ))
    answers = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for query in queries:
                result = await session.call_tool("semantic_search", {"query": query, "k": 3})
                if result.is_error:
                    raise SystemExit("semantic_search failed: " + result.content[0].text)
                answers.append(json.loads(result.content[0].text))
    print(json.dumps(answers))

asyncio.run(main())
"#;

/// The same, from the MCP server through the real Python client.
fn mcp_top_hits(dir: &Path, key: &str) -> Vec<Vec<String>> {
    mcp_answers(dir, QUERIES, &[(KEY_VARIABLE, key)])
        .iter()
        .map(|v| {
            assert_eq!(v["vector"]["used"], true, "{v}");
            hit_names(v)
        })
        .collect()
}

/// The answers of `code-intel serve` in `dir` to `semantic_search` (k 3) for each query,
/// through the real Python client, with the local model's variables set and `env`.
pub(crate) fn mcp_answers(dir: &Path, queries: &[&str], env: &[(&str, &str)]) -> Vec<Value> {
    let python = crate::mcp_server::python()
        .as_ref()
        .unwrap_or_else(|e| panic!("{e}"));
    let (runtime, model) = model_files().as_ref().unwrap_or_else(|e| panic!("{e}"));
    let out = crate::sealed::command(python)
        .args(["-c", MCP_CLIENT])
        .arg(binary())
        .arg(dir)
        .arg(serde_json::to_string(queries).unwrap())
        .env("CODE_INTEL_ORT_DYLIB", runtime)
        .env("CODE_INTEL_EMBEDDING_MODEL_PATH", model)
        .env_remove("CODE_INTEL_EMBEDDING_URL")
        .env_remove("CODE_INTEL_EMBEDDING_ENDPOINT_MODEL")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

const KEY_VARIABLE: &str = "CODE_INTEL_TEST_EMBEDDING_KEY";

#[test]
fn a_repository_indexed_through_the_endpoint_answers_as_the_local_model_does() {
    let server = Loopback::start();
    let local = TempDir::create(&format!("ci-endpoint-local-{}", std::process::id()));
    git_repo(&local, PROJECT);
    let remote = TempDir::create(&format!("ci-endpoint-remote-{}", std::process::id()));
    git_repo(&remote, PROJECT);
    std::fs::create_dir_all(remote.join(".code-intel")).unwrap();
    std::fs::write(
        remote.join(".code-intel/config.yml"),
        format!(
            "semantic:\n  sync_on_start: false\n  endpoint:\n    url: {}\n    model: all-minilm-l6-v2\n    api_key_env: {KEY_VARIABLE}\n    batch: 4\n    concurrency: 2\n    timeout_seconds: {}\n",
            server.base_url,
            TIMEOUT.as_secs(),
        ),
    )
    .unwrap();
    std::fs::create_dir_all(local.join(".code-intel")).unwrap();
    std::fs::write(
        local.join(".code-intel/config.yml"),
        "semantic:\n  sync_on_start: false\n",
    )
    .unwrap();

    let local_index = json_of(cli(&local, &["index", "--json"]));
    // Without the key's variable the endpoint is refused before any request.
    let out = cli(&remote, &["index", "--json"]).output().unwrap();
    assert_ne!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(KEY_VARIABLE), "{stderr}");
    assert!(server.seen().is_empty());

    let mut index = cli(&remote, &["index", "--json"]);
    index.env(KEY_VARIABLE, "sk-team-key");
    let remote_index = json_of(index);
    assert_eq!(
        remote_index["semantic"]["model"],
        "all-minilm-l6-v2@endpoint/384"
    );
    assert_ne!(
        local_index["semantic"]["model"],
        remote_index["semantic"]["model"]
    );
    let chunks = local_index["semantic"]["chunks"].as_u64().unwrap();
    assert!(chunks >= 7, "{local_index}");
    assert_eq!(
        remote_index["semantic"]["embedded"], chunks,
        "{remote_index}"
    );
    assert_eq!(remote_index["semantic"]["unembedded"], 0, "{remote_index}");
    let seen = server.seen();
    assert!(seen.len() >= 2, "{}", seen.len());
    assert!(
        seen.iter()
            .all(|s| s.authorization.as_deref() == Some("Bearer sk-team-key"))
    );

    // Queries go through the server too (with the key); the top hits are the local ones,
    // from the CLI and from the MCP server.
    let before = server.seen().len();
    let local_hits = cli_top_hits(&local, "unused");
    assert_eq!(server.seen().len(), before);
    let remote_hits = cli_top_hits(&remote, "sk-team-key");
    // Each process asks the dimensions once (none are configured), then embeds the query.
    assert_eq!(server.seen().len(), before + 2 * QUERIES.len());
    assert_eq!(local_hits, remote_hits);
    assert_eq!(
        local_hits[0][0], "app/auth.py#make_password_digest",
        "{local_hits:?}"
    );
    assert_eq!(mcp_top_hits(&local, "unused"), local_hits);
    assert_eq!(mcp_top_hits(&remote, "sk-team-key"), local_hits);
    // One server process: the dimensions once, then each query.
    assert_eq!(server.seen().len(), before + 3 * QUERIES.len() + 1);
    assert!(
        server
            .seen()
            .iter()
            .all(|s| s.authorization.as_deref() == Some("Bearer sk-team-key"))
    );

    // The server down at query time: the answers are by words, and say why.
    server.always(canned(503, r#"{"error": {"message": "the GPU is busy"}}"#));
    let config = remote.join(".code-intel/config.yml");
    let once = std::fs::read_to_string(&config).unwrap() + "    attempts: 1\n";
    std::fs::write(&config, once).unwrap();
    let query = "evict the oldest entry";
    let mut c = cli(
        &remote,
        &["semantic", query, "-k", "3", "--no-sync", "--json"],
    );
    c.env(KEY_VARIABLE, "sk-team-key");
    let words = json_of(c);
    let mcp = mcp_answers(&remote, &[query], &[(KEY_VARIABLE, "sk-team-key")]);
    for answer in [&words, &mcp[0]] {
        assert_eq!(answer["vector"]["used"], false, "{answer}");
        assert_eq!(
            answer["vector"]["error"]["key"], "semantic.endpoint_failed",
            "{answer}"
        );
        let note = answer["vector"]["note"].as_str().unwrap_or_default();
        assert!(note.contains("lexical only"), "{note}");
        assert!(note.contains("the GPU is busy"), "{note}");
        assert!(
            hit_names(answer)[0].starts_with("src/cache.rs#"),
            "{answer}"
        );
    }
    assert_eq!(mcp[0]["ranking"], "lexical", "{}", mcp[0]);
}
