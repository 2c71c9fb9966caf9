//! The shared vector store: a real ChromaDB server (`chroma run` from the PyPI package
//! `chromadb`, in `target/chroma-venv`, made by `.ci/run` or by this test) behind
//! `semantic.vector_store.kind: chroma`, with the real embedding model. Two clones of one
//! git repository share one collection and embed each chunk once between them; a search
//! through it answers as the embedded store does and never with a chunk this clone lacks;
//! a stopped server and a collection of another model fail with their keys.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use code_intel::codeintel::Root;
use code_intel::semantic::{SemanticIndex, SyncOptions, SyncReport, sync};
use serde_json::{Value, json};

use crate::semantic::{embedder, model_files, project};
use crate::support::{Reaped, TempDir, git_repo, repo};

const CHROMA_VERSION: &str = "1.5.9";

/// The `chroma` command of `target/chroma-venv`, installed there if needed.
fn chroma_command() -> &'static PathBuf {
    static CHROMA: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let found = CHROMA.get_or_init(|| {
        let venv = repo().join("target/chroma-venv");
        let chroma = venv.join("bin/chroma");
        let python = venv.join("bin/python");
        let installed = || {
            crate::sealed::command(&python)
                .args([
                    "-c",
                    "import chromadb, sys; sys.exit(chromadb.__version__ != sys.argv[1])",
                ])
                .arg(CHROMA_VERSION)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if chroma.is_file() && installed() {
            return Ok(chroma);
        }
        let made = crate::sealed::setup_command("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .output()
            .map_err(|e| format!("python3 is needed for the Chroma tests: {e}"))?;
        if !made.status.success() {
            return Err(format!(
                "python3 -m venv failed: {}",
                String::from_utf8_lossy(&made.stderr)
            ));
        }
        let pip = crate::sealed::setup_command(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args([
                "--only-binary=:all:",
                &format!("chromadb=={CHROMA_VERSION}"),
            ])
            .output()
            .map_err(|e| format!("pip: {e}"))?;
        if !pip.status.success() || !installed() {
            return Err(format!(
                "installing chromadb=={CHROMA_VERSION} into {} failed:\n{}",
                venv.display(),
                String::from_utf8_lossy(&pip.stderr)
            ));
        }
        Ok(chroma)
    });
    found.as_ref().unwrap_or_else(|e| panic!("{e}"))
}

/// A `chroma run` on a free loopback port with its data in a temporary directory; killed
/// when dropped.
struct ChromaServer {
    child: Option<Reaped>,
    url: String,
    _data: TempDir,
}

impl ChromaServer {
    fn start(name: &str) -> ChromaServer {
        let data = TempDir::create(&format!("ci-chroma-{}-{name}", std::process::id()));
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let log = std::fs::File::create(data.join("server.log")).unwrap();
        let child = crate::sealed::command(chroma_command())
            .arg("run")
            .arg("--path")
            .arg(data.join("db"))
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("chroma run: {e}"));
        let server = ChromaServer {
            child: Some(Reaped(child)),
            url: format!("http://127.0.0.1:{port}"),
            _data: data,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while server.get("/api/v2/heartbeat").is_none() {
            assert!(
                Instant::now() < deadline,
                "chroma run did not answer its heartbeat within 60 s:\n{}",
                std::fs::read_to_string(server._data.join("server.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        server
    }

    fn get(&self, path: &str) -> Option<Value> {
        let mut response = ureq::get(format!("{}{path}", self.url)).call().ok()?;
        serde_json::from_str(&response.body_mut().read_to_string().ok()?).ok()
    }

    fn post(&self, path: &str, body: &Value) -> Value {
        let mut response = ureq::post(format!("{}{path}", self.url))
            .header("Content-Type", "application/json")
            .send(body.to_string().as_bytes())
            .unwrap();
        serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap()
    }

    /// How many records the collection named `name` holds.
    fn count(&self, name: &str) -> u64 {
        let collections = "/api/v2/tenants/default_tenant/databases/default_database/collections";
        let collection = self.get(&format!("{collections}/{name}")).unwrap();
        let id = collection["id"].as_str().unwrap();
        self.get(&format!("{collections}/{id}/count"))
            .and_then(|v| v.as_u64())
            .unwrap()
    }

    fn stop(&mut self) {
        self.child = None;
    }
}

/// The collection the model's vectors go to under `prefix`: the model id with what a
/// collection name cannot hold (`@`, `/`) made `-`.
fn collection(prefix: &str) -> String {
    let id: String = embedder()
        .id()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("{prefix}-{id}")
}

fn config(url: &str, prefix: &str) -> String {
    format!(
        "semantic:\n  vector_store:\n    kind: chroma\n    url: {url}\n    collection: {prefix}\n"
    )
}

fn run_sync(dir: &Path) -> Result<SyncReport, code_intel::semantic::Error> {
    let root = Root::open(dir).unwrap();
    sync(
        &root,
        Some(embedder()),
        &SyncOptions {
            chunk_max_tokens: 512,
            rebuild: false,
            progress: &|_, _, _| {},
        },
    )
}

/// A git repository of the small project whose config names the Chroma server, and a
/// clone of it (`git clone`, as a teammate would).
fn two_clones(name: &str, url: &str, prefix: &str) -> (TempDir, TempDir) {
    let first = TempDir::create(&format!("ci-chroma-{}-{name}-a", std::process::id()));
    project(&first);
    std::fs::create_dir_all(first.join(".code-intel")).unwrap();
    std::fs::write(first.join(".code-intel/config.yml"), config(url, prefix)).unwrap();
    git_repo(&first, &[]);
    let second = TempDir::claim(&format!("ci-chroma-{}-{name}-b", std::process::id()));
    let cloned = crate::sealed::command("git")
        .arg("clone")
        .arg("--quiet")
        .arg(first.path())
        .arg(second.path())
        .output()
        .unwrap();
    assert!(cloned.status.success(), "{cloned:?}");
    (first, second)
}

/// The chunk ids of a JSON answer's hits, in order.
fn hit_ids(answer: &Value) -> Vec<String> {
    answer["hits"]
        .as_array()
        .unwrap_or_else(|| panic!("no hits: {answer}"))
        .iter()
        .map(|h| h["id"].as_str().unwrap().to_string())
        .collect()
}

/// The chunk ids of the embedded store's `k` best hits for `query`.
fn local_ids(local: &SemanticIndex, query: &str, k: usize) -> Vec<String> {
    let answer = local.search(Some(embedder()), None, query, k).unwrap();
    answer.hits.into_iter().map(|h| h.id).collect()
}

/// The content hashes of the chunks a clone's catalog lists.
fn live_hashes(dir: &Path) -> HashSet<String> {
    let text = std::fs::read_to_string(dir.join(".code-intel/semantic/catalog.json")).unwrap();
    let catalog: Value = serde_json::from_str(&text).unwrap();
    catalog["files"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|f| f["chunks"].as_array().unwrap().iter())
        .map(|c| c["hash"].as_str().unwrap().to_string())
        .collect()
}

fn open(dir: &Path) -> SemanticIndex {
    SemanticIndex::open(&Root::open(dir).unwrap(), Some(embedder()))
        .unwrap()
        .unwrap()
}

#[test]
fn two_clones_share_one_collection_and_embed_each_chunk_once() {
    let server = ChromaServer::start("share");
    let (first, second) = two_clones("share", &server.url, "team");

    let one = run_sync(&first).unwrap();
    assert!(one.chunks > 0);
    assert_eq!((one.embedded, one.unembedded), (one.chunks, 0), "{one:?}");
    assert_eq!(server.count(&collection("team")), one.chunks as u64);
    // Nothing of the vectors is kept in the clone.
    assert!(!first.join(".code-intel/semantic/vectors.bin").exists());

    // The teammate's clone: every chunk already has a vector.
    let two = run_sync(&second).unwrap();
    assert_eq!(two.chunks, one.chunks);
    assert_eq!((two.embedded, two.unembedded), (0, 0), "{two:?}");

    // A changed file in the second clone: only the chunks whose text is new are embedded.
    let before: HashSet<String> = live_hashes(&first);
    let auth = std::fs::read_to_string(second.join("app/auth.py")).unwrap();
    std::fs::write(
        second.join("app/auth.py"),
        auth.replace("user.digest", "user.password_digest"),
    )
    .unwrap();
    let changed = run_sync(&second).unwrap();
    let new: HashSet<String> = live_hashes(&second).difference(&before).cloned().collect();
    assert_eq!(changed.chunked, 1);
    assert!(!new.is_empty() && new.len() < one.chunks, "{new:?}");
    assert_eq!(changed.embedded, new.len(), "{changed:?}");
    assert_eq!(
        server.count(&collection("team")),
        (one.chunks + new.len()) as u64
    );
    // Back in the first clone nothing is missing: its chunks were all there already.
    assert_eq!(run_sync(&first).unwrap().embedded, 0);
}

#[test]
fn the_shared_store_answers_as_the_embedded_one_and_never_with_a_chunk_this_clone_lacks() {
    let server = ChromaServer::start("answers");
    let (shared, other) = two_clones("answers", &server.url, "team");
    let embedded = TempDir::create(&format!("ci-chroma-{}-answers-local", std::process::id()));
    project(&embedded);
    run_sync(&embedded).unwrap();
    run_sync(&shared).unwrap();

    // The other clone adds files the first one never sees, and puts their vectors in:
    // more chunks nearer to the payment query than any of the first clone's, so the
    // store's first answer to it holds none of the first clone's chunks.
    std::fs::create_dir_all(other.join("app/payments")).unwrap();
    for n in 0..120 {
        std::fs::write(
            other.join(format!("app/payments/p{n}.py")),
            format!(
                "def charge_card_{n}(card, amount):\n    \"\"\"Take money from credit card {n} through payment gateway {n}.\"\"\"\n    return gateway_{n}.capture(card.token, amount)\n"
            ),
        )
        .unwrap();
    }
    assert!(run_sync(&other).unwrap().embedded >= 120);
    let query = "take money from a credit card";
    let theirs = open(&other)
        .search(Some(embedder()), None, query, 5)
        .unwrap();
    assert!(
        theirs.hits[0].path.starts_with("app/payments/"),
        "{:?}",
        theirs.hits
    );

    let local = open(&embedded);
    let index = open(&shared);
    let queries = [
        "how are user passwords hashed",
        "send an email message",
        "remove least recently used entries",
        "undo a bad release",
        "convert a string to a date",
        query,
    ];
    for q in queries {
        let want = local.search(Some(embedder()), None, q, 5).unwrap();
        let got = index.search(Some(embedder()), None, q, 5).unwrap();
        assert!(got.vector.used, "{q}: {:?}", got.vector);
        assert_eq!(got.vector.embedded, want.vector.embedded);
        let ids = |r: &code_intel::semantic::SearchResult| {
            r.hits.iter().map(|h| h.id.clone()).collect::<Vec<_>>()
        };
        assert_eq!(ids(&got), ids(&want), "{q}");
        for (g, w) in got.hits.iter().zip(&want.hits) {
            let (g, w) = (g.vector.map(|s| s.score), w.vector.map(|s| s.score));
            assert!(
                match (g, w) {
                    (Some(g), Some(w)) => (g - w).abs() < 1e-4,
                    (g, w) => g.is_none() && w.is_none(),
                },
                "{q}: {g:?} vs {w:?}"
            );
        }
        assert!(
            got.hits.iter().all(|h| !h.path.starts_with("app/payments")),
            "{q}"
        );
    }

    // The real binary, configured by the clone's config.yml alone, answers the same.
    let (runtime, model) = model_files().as_ref().unwrap();
    for q in queries {
        let out = crate::support::code_intel()
            .args(["semantic", q, "--json", "--no-sync", "-k", "5", "--root"])
            .arg(shared.path())
            .env("CODE_INTEL_ORT_DYLIB", runtime)
            .env("CODE_INTEL_EMBEDDING_MODEL_PATH", model)
            .output()
            .unwrap();
        assert!(out.status.success(), "{q}: {out:?}");
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(hit_ids(&answer), local_ids(&local, q, 5), "{q}");
        assert_eq!(answer["vector"]["used"], true, "{q}");
    }
    // And so does the MCP server, through the real client.
    let answers = crate::embedding_endpoint::mcp_answers(&shared, &queries, &[]);
    for (q, answer) in queries.iter().zip(&answers) {
        assert_eq!(hit_ids(answer), local_ids(&local, q, 3), "{q}");
        assert_eq!(answer["vector"]["used"], true, "{q}: {answer}");
        assert_eq!(answer["ranking"], "hybrid", "{q}: {answer}");
    }
}

#[test]
fn a_stopped_store_leaves_a_search_to_words_with_its_key_and_fails_a_sync() {
    let mut server = ChromaServer::start("stopped");
    let (first, _second) = two_clones("stopped", &server.url, "team");
    run_sync(&first).unwrap();
    let index = open(&first);
    assert!(
        index
            .search(Some(embedder()), None, "send an email", 3)
            .unwrap()
            .vector
            .used
    );

    server.stop();
    // The open index keeps its connection; the search answers by words and says why the
    // vectors are missing, naming the key and the server.
    let degraded = |index: &SemanticIndex| {
        let answer = index
            .search(Some(embedder()), None, "evict oldest", 3)
            .unwrap();
        assert!(!answer.vector.used);
        let failure = answer.vector.error.clone().expect("the failure is named");
        assert_eq!(failure.key, "semantic.store_unavailable");
        assert!(failure.message.contains(&server.url), "{}", failure.message);
        let note = answer.vector.note.clone().unwrap_or_default();
        assert!(note.contains("lexical only"), "{note}");
        assert!(note.contains(&server.url), "{note}");
        assert_eq!(answer.hits[0].path, "src/cache.rs");
    };
    degraded(&index);
    // Opening while it is down works, and answers the same way.
    degraded(&open(&first));
    // A sync has nothing to fall back on: it fails with the key.
    let e = run_sync(&first).unwrap_err();
    assert_eq!(e.key(), "semantic.store_unavailable", "{e}");
    // Without vectors the search ranks by words, as it does without a model.
    let words = SemanticIndex::open(&Root::open(&first).unwrap(), None)
        .unwrap()
        .unwrap()
        .search(None, None, "evict oldest", 3)
        .unwrap();
    assert_eq!(words.hits[0].path, "src/cache.rs");
}

#[test]
fn a_collection_of_another_model_is_refused() {
    let server = ChromaServer::start("mismatch");
    let collections = "/api/v2/tenants/default_tenant/databases/default_database/collections";
    // Collections under the names this model's vectors would go to, made by another
    // model, by the same model with another dimension, and by something else.
    let made = [
        (
            "other",
            json!({"code_intel_model": "bge-small@0123", "code_intel_dimensions": 384}),
        ),
        (
            "dims",
            json!({"code_intel_model": embedder().id(), "code_intel_dimensions": 768}),
        ),
        ("foreign", json!({"owner": "someone"})),
    ];
    for (prefix, metadata) in made {
        server.post(
            collections,
            &json!({"name": collection(prefix), "metadata": metadata, "get_or_create": true}),
        );
        let (dir, _clone) = two_clones(&format!("mismatch-{prefix}"), &server.url, prefix);
        let e = run_sync(&dir).unwrap_err();
        assert_eq!(e.key(), "semantic.store_model_mismatch", "{prefix}: {e}");
        assert!(e.to_string().contains(&collection(prefix)), "{e}");
        assert_eq!(server.count(&collection(prefix)), 0);
    }
    // The same server takes this model's vectors under a prefix of their own.
    let (dir, _clone) = two_clones("mismatch-ours", &server.url, "ours");
    assert!(run_sync(&dir).unwrap().embedded > 0);
}
