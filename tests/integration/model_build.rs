//! The Rust ONNX builder (`semantic::build_bert_onnx`) on the real all-MiniLM-L6-v2 weights
//! that `tests/model/fetch.sh` keeps in `DEST/weights/`: the fp32 graph is build_onnx.py's
//! byte for byte (but the producer name) and embeds as the Python-built model does; the
//! INT8 graph gives the known answer and stays close to fp32; both builds are deterministic.
//! Each model is loaded through the real `Embedder` (fastembed and ONNX Runtime).
//!
//! DEST is `target/model` (filled by fetch.sh the first time), as in `semantic.rs`: one
//! process loads one ONNX Runtime library, so both modules must name the same one.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use code_intel::semantic::{Embedder, ModelSpec, Precision, build_bert_onnx};

use crate::support::{TempDir, repo};

const MODEL: &str = "all-minilm-l6-v2";
const TOKENIZER_FILES: [&str; 4] = [
    "tokenizer.json",
    "config.json",
    "special_tokens_map.json",
    "tokenizer_config.json",
];

/// The runtime library and DEST (the directory holding the model's directory), fetched if
/// needed, or why not: the semantic tests' model files.
fn dest() -> &'static Result<(PathBuf, PathBuf), String> {
    static DEST: OnceLock<Result<(PathBuf, PathBuf), String>> = OnceLock::new();
    DEST.get_or_init(|| {
        let (runtime, model) = crate::semantic::model_files()
            .as_ref()
            .map_err(Clone::clone)?;
        let dest = model
            .parent()
            .ok_or("the model directory has no parent directory")?;
        Ok((runtime.clone(), dest.to_path_buf()))
    })
}

fn runtime_and_dest() -> (&'static Path, &'static Path) {
    let (runtime, dest) = dest().as_ref().unwrap_or_else(|e| panic!("{e}"));
    (runtime, dest)
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (tests/model/fetch.sh keeps the weights in DEST/weights/)",
            path.display()
        )
    })
}

/// The model built by the Rust builder from DEST/weights, and how long the build took.
fn build(precision: Precision) -> (Vec<u8>, f64) {
    let (_, dest) = runtime_and_dest();
    let weights = read(&dest.join("weights/model.safetensors"));
    let config = read(&dest.join("weights/config.json"));
    let start = Instant::now();
    let onnx = build_bert_onnx(&weights, &config, precision)
        .unwrap_or_else(|e| panic!("{precision:?} build failed: [{}] {e}", e.key()));
    (onnx, start.elapsed().as_secs_f64())
}

/// Each precision built once per test process, with its build time.
fn built(precision: Precision) -> &'static (Vec<u8>, f64) {
    static F32: OnceLock<(Vec<u8>, f64)> = OnceLock::new();
    static INT8: OnceLock<(Vec<u8>, f64)> = OnceLock::new();
    match precision {
        Precision::F32 => F32.get_or_init(|| build(precision)),
        Precision::Int8 => INT8.get_or_init(|| build(precision)),
    }
}

/// `onnx` written into a fresh model directory with the tokenizer files, loaded.
fn load_built(name: &str, onnx: &[u8]) -> (TempDir, Embedder) {
    let (runtime, dest) = runtime_and_dest();
    let dir = TempDir::create(&format!("ci-model-build-{}-{name}", std::process::id()));
    for f in TOKENIZER_FILES {
        std::fs::copy(dest.join(MODEL).join(f), dir.join(f)).unwrap();
    }
    std::fs::write(dir.join("model.onnx"), onnx).unwrap();
    let embedder = load(&dir, runtime);
    (dir, embedder)
}

fn load(dir: &Path, runtime: &Path) -> Embedder {
    Embedder::load(&ModelSpec {
        name: MODEL.into(),
        dir: dir.to_path_buf(),
        runtime: runtime.to_path_buf(),
    })
    .unwrap_or_else(|e| panic!("{} does not load: {e}", dir.display()))
}

/// The model fetch.sh built with Python: fp32, or INT8 with onnxruntime's quantizer.
fn python_model(int8: bool) -> Embedder {
    let (runtime, dest) = runtime_and_dest();
    let dir = if int8 {
        format!("{MODEL}-int8")
    } else {
        MODEL.into()
    };
    load(&dest.join(dir), runtime)
}

fn cos(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

const KNOWN_A: &str = "A man is eating food.";
const KNOWN_B: &str = "A man is eating a piece of bread.";

/// Prose and code, short and long (past the 256-token window), more than one batch of 32.
fn texts() -> Vec<String> {
    let mut texts: Vec<String> = [
        KNOWN_A,
        KNOWN_B,
        "x",
        "How do I reset a user's password when the reset email never arrives?",
        "fn main() { println!(\"hello\"); }",
        "def parse(self, data: bytes) -> dict:\n    return json.loads(data)",
        "SELECT id, name FROM users WHERE created_at > now() - interval '1 day' ORDER BY name;",
        "The cache evicts the least recently used entry once it holds more than its capacity.",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    texts.extend(code_snippets(40, 1));
    // two long ones, truncated at the window
    let long = std::fs::read_to_string(repo().join("src/semantic/install/bert.rs")).unwrap();
    texts.push(long.chars().take(6000).collect());
    texts.push("word ".repeat(400));
    texts
}

/// `n` snippets of this repository's Rust sources, `lines` × 12 lines each, spread evenly
/// over all the blocks of the files in sorted order: code-like text of realistic length
/// that does not change between runs of the same commit.
fn code_snippets(n: usize, lines: usize) -> Vec<String> {
    let mut files = Vec::new();
    let mut stack = vec![repo().join("src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut blocks = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.strip_prefix(repo()).unwrap().display().to_string();
        let all: Vec<&str> = text.lines().collect();
        for block in all.chunks(12 * lines) {
            let snippet = block.join("\n");
            if snippet.trim().len() > 80 {
                blocks.push(format!("{name}\n{snippet}"));
            }
        }
    }
    assert!(blocks.len() >= n, "only {} blocks", blocks.len());
    let step = blocks.len() / n;
    blocks.into_iter().step_by(step).take(n).collect()
}

fn embed_all(e: &Embedder, texts: &[String]) -> Vec<Vec<f32>> {
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    e.embed(&refs).unwrap()
}

#[test]
fn the_fp32_build_is_build_onnx_py_s_model_but_for_the_producer_name() {
    let (ours, _) = built(Precision::F32);
    let (_, dest) = runtime_and_dest();
    let python = read(&dest.join(MODEL).join("model.onnx"));
    // ModelProto: ir_version (08 08), then producer_name (12, length, bytes), then the rest
    let (ours_len, py_len) = (usize::from(ours[3]), usize::from(python[3]));
    assert_eq!(&ours[..3], &python[..3]);
    assert_eq!(
        &python[4..4 + py_len],
        b"code-intel tests/model/build_onnx.py"
    );
    if ours[4 + ours_len..] != python[4 + py_len..] {
        let kept = std::env::temp_dir().join("code-intel-rust-fp32-model.onnx");
        std::fs::write(&kept, ours).unwrap();
        panic!(
            "the Rust fp32 graph ({} bytes, kept in {}) differs from build_onnx.py's ({} bytes)",
            ours.len(),
            kept.display(),
            python.len()
        );
    }
    // deterministic: a second build gives the same bytes
    let (again, _) = build(Precision::F32);
    assert!(again == *ours, "two fp32 builds differ");
}

#[test]
fn the_fp32_build_embeds_as_the_python_built_model() {
    let texts = texts();
    let (_dir, ours) = load_built("fp32", &built(Precision::F32).0);
    let python = python_model(false);
    let (a, b) = (embed_all(&ours, &texts), embed_all(&python, &texts));
    let worst = a
        .iter()
        .zip(&b)
        .flat_map(|(x, y)| x.iter().zip(y).map(|(p, q)| (p - q).abs()))
        .fold(0.0f32, f32::max);
    assert!(worst <= 1e-5, "max |delta| = {worst}");
    let known = ours.embed(&[KNOWN_A, KNOWN_B]).unwrap();
    let c = cos(&known[0], &known[1]);
    assert!((c - 0.7553).abs() < 0.01, "known answer {c}");
}

#[test]
fn the_int8_build_gives_the_known_answer_and_stays_close_to_fp32() {
    let (onnx, _) = built(Precision::Int8);
    let (again, _) = build(Precision::Int8);
    assert!(again == *onnx, "two INT8 builds differ");
    let (_dir, int8) = load_built("int8", onnx);
    let known = int8.embed(&[KNOWN_A, KNOWN_B]).unwrap();
    let c = cos(&known[0], &known[1]);
    assert!((c - 0.7553).abs() <= 0.03, "INT8 known answer {c}");
    let texts = texts();
    let fp32 = embed_all(&python_model(false), &texts);
    let ours = embed_all(&int8, &texts);
    let cosines: Vec<f32> = ours.iter().zip(&fp32).map(|(a, b)| cos(a, b)).collect();
    let mean = cosines.iter().sum::<f32>() / cosines.len() as f32;
    let min = cosines.iter().copied().fold(1.0f32, f32::min);
    assert!(mean >= 0.98, "INT8 vs fp32: mean cosine {mean}, min {min}");
    // the INT8 file is smaller: its linear layers hold a byte per weight, not four
    assert!(
        onnx.len() < built(Precision::F32).0.len() * 3 / 4,
        "{} bytes",
        onnx.len()
    );
}
