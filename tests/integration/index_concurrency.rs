//! The symbol index shared by concurrent readers and writers: threads of one process
//! refreshing and querying at once, CLI processes doing the same, a writer killed
//! mid-write, and an index directory nobody may write. Every answer must be complete and
//! consistent, and never an error. No assertion depends on timing.

use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use code_intel::codeintel::Root;
use code_intel::codeintel::Window;
use code_intel::codeintel::find_definitions;
use code_intel::codeintel::refresh;
use code_intel::codeintel::{DELTA_FILE, INDEX_FILE, Index};
use serde_json::Value;

use crate::support::TempDir;

/// How many source files the shared repositories have: more than the delta's minimum
/// (64), so rewriting them round-robin makes refreshes fold the delta again and again.
const FILES: usize = 100;

/// A fresh directory for one test.
fn fresh(name: &str) -> TempDir {
    let dir = TempDir::claim(&format!(
        "code-intel-concurrency-{name}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(dir.join("src")).unwrap();
    dir
}

/// Module `k` at `version`: `stable_k` is always defined once, on line 1, whatever the
/// version; the version only changes what follows (and the file's size).
fn module(k: usize, version: usize) -> String {
    let mut text = format!("pub fn stable_{k}() -> usize {{ {version} }}\n");
    for v in 0..=version % 7 {
        text.push_str(&format!("pub fn filler_{k}_{v}() {{}}\n"));
    }
    text
}

fn repo(name: &str) -> TempDir {
    let dir = fresh(name);
    for k in 0..FILES {
        std::fs::write(dir.join(format!("src/m{k}.rs")), module(k, 0)).unwrap();
    }
    dir
}

fn all() -> Window {
    Window {
        offset: 0,
        limit: 0,
    }
}

/// The definitions of `name` as (path, line).
fn defs(root: &Root, name: &str) -> Vec<(String, u32)> {
    let answer = find_definitions(&Index::open(root).unwrap(), name, None, all())
        .unwrap_or_else(|e| panic!("defs {name}: [{}] {e}", e.key()));
    answer
        .symbols
        .items
        .iter()
        .map(|h| (h.path.clone(), h.line))
        .collect()
}

/// Files under `.code-intel/` that an index write left behind.
fn temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir.join(".code-intel"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains(".tmp"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn threads_refresh_and_query_one_index_at_once() {
    let dir = repo("threads");
    let root = Root::open(&dir).unwrap();
    refresh(&root).unwrap();
    let done = AtomicBool::new(false);
    // The highest `extra_N` a finished refresh has indexed: a reader that starts after
    // seeing it must find it, or it paired a main index with the wrong delta.
    let published = AtomicUsize::new(0);
    let answers = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            for round in 1..=80 {
                // Every fifth round rewrites more files than the delta holds, so it folds;
                // the others only add to the delta.
                let batch = if round % 5 == 0 { 70 } else { 1 };
                for j in 0..batch {
                    let k = (round + j) % FILES;
                    // Atomically, as editors save: a reader re-tagging a file that is
                    // half written would see `stable_k` missing for a moment, which says
                    // nothing about the index.
                    let tmp = dir.join(format!("m{k}.rs.tmp"));
                    std::fs::write(&tmp, module(k, round)).unwrap();
                    std::fs::rename(&tmp, dir.join(format!("src/m{k}.rs"))).unwrap();
                }
                std::fs::write(
                    dir.join(format!("src/extra_{round}.rs")),
                    format!("pub fn extra_{round}() {{}}\n"),
                )
                .unwrap();
                let report = refresh(&root).unwrap_or_else(|e| panic!("refresh: {e}"));
                assert_eq!(report.files, FILES + round, "round {round}: {report:?}");
                published.store(round, Ordering::SeqCst);
            }
            done.store(true, Ordering::SeqCst);
        });
        let readers: Vec<_> = (0..2)
            .map(|r| {
                let (root, done, published, answers) = (&root, &done, &published, &answers);
                scope.spawn(move || {
                    let mut i = r;
                    while !done.load(Ordering::SeqCst) {
                        let seen = published.load(Ordering::SeqCst);
                        let k = i % FILES;
                        assert_eq!(
                            defs(root, &format!("stable_{k}")),
                            [(format!("src/m{k}.rs"), 1)],
                            "stable_{k}"
                        );
                        if seen > 0 {
                            assert_eq!(
                                defs(root, &format!("extra_{seen}")),
                                [(format!("src/extra_{seen}.rs"), 1)],
                                "extra_{seen} was indexed before this query started"
                            );
                        }
                        answers.fetch_add(1, Ordering::Relaxed);
                        i += 7;
                    }
                })
            })
            .collect();
        writer.join().unwrap();
        for r in readers {
            r.join().unwrap();
        }
    });
    assert!(answers.load(Ordering::Relaxed) > 0);
    assert!(temp_files(&dir).is_empty(), "{:?}", temp_files(&dir));
}

/// Threads refreshing at once never lose each other's work: the lock serialises them (a
/// refresh reads the delta, adds to it and writes it back), and their temp files have
/// different names anyway.
#[test]
fn threads_refresh_the_same_index_at_once() {
    let dir = repo("writers");
    let root = Root::open(&dir).unwrap();
    let rounds = 30;
    std::thread::scope(|scope| {
        for t in 0..4 {
            let (root, dir) = (&root, &dir);
            scope.spawn(move || {
                for round in 0..rounds {
                    let k = (t * rounds + round) % FILES;
                    std::fs::write(dir.join(format!("src/m{k}.rs")), module(k, round + t)).unwrap();
                    std::fs::write(
                        dir.join(format!("src/t{t}_{round}.rs")),
                        format!("pub fn new_{t}_{round}() {{}}\n"),
                    )
                    .unwrap();
                    let report = refresh(root).unwrap_or_else(|e| panic!("refresh: {e}"));
                    assert!(report.files > FILES + round, "{report:?}");
                }
            });
        }
    });
    // New files are only found through a refresh: each one must have survived the others.
    for t in 0..4 {
        for round in 0..rounds {
            assert_eq!(
                defs(&root, &format!("new_{t}_{round}")),
                [(format!("src/t{t}_{round}.rs"), 1)]
            );
        }
    }
    for k in 0..FILES {
        assert_eq!(defs(&root, &format!("stable_{k}")).len(), 1);
    }
    assert!(temp_files(&dir).is_empty(), "{:?}", temp_files(&dir));
}

fn spawn(dir: &Path, args: &[&str]) -> Child {
    crate::support::code_intel()
        .args(args)
        .arg("--root")
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn processes_index_and_query_one_repository_at_once() {
    let dir = repo("processes");
    for round in 1..=12 {
        // Rewrite a batch of files, so some rounds fold the delta and some only append.
        for j in 0..12 {
            let k = (round * 12 + j) % FILES;
            std::fs::write(dir.join(format!("src/m{k}.rs")), module(k, round)).unwrap();
        }
        let k = round * 5 % FILES;
        let children: Vec<(&str, Child)> = vec![
            ("index", spawn(&dir, &["index", "--json"])),
            (
                "defs",
                spawn(&dir, &["defs", &format!("stable_{k}"), "--json"]),
            ),
            ("index", spawn(&dir, &["index"])),
            ("defs", spawn(&dir, &["defs", "stable_1", "--json"])),
            ("refs", spawn(&dir, &["refs", "stable_2", "--json"])),
        ];
        for (what, child) in children {
            let out = child.wait_with_output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            match what {
                "refs" => assert!(
                    matches!(out.status.code(), Some(0 | 1)),
                    "round {round} {what}: {stderr}"
                ),
                _ => assert_eq!(out.status.code(), Some(0), "round {round} {what}: {stderr}"),
            }
            assert!(!stderr.contains("error"), "round {round} {what}: {stderr}");
            if what == "defs" {
                let v: Value = serde_json::from_str(&stdout).unwrap();
                assert_eq!(v["total"], 1, "round {round}: {stdout}");
                assert!(v["freshness"].get("unsaved").is_none(), "{stdout}");
            }
        }
    }
    assert!(temp_files(&dir).is_empty(), "{:?}", temp_files(&dir));
}

#[test]
fn a_writer_killed_mid_write_leaves_an_index_that_still_answers() {
    // Big enough that `index` is still building when it is killed.
    let dir = fresh("killed");
    for k in 0..3000 {
        std::fs::write(dir.join(format!("src/m{k}.rs")), module(k, k)).unwrap();
    }
    let mut child = spawn(&dir, &["index"]);
    // The lock file is the first thing a refresh creates; kill once it exists (or once
    // the run ended, if this machine is that fast: the checks below hold either way).
    while !dir.join(".code-intel/index.lock").exists() && child.try_wait().unwrap().is_none() {
        std::thread::yield_now();
    }
    std::thread::sleep(std::time::Duration::from_millis(30));
    let _ = child.kill();
    let _ = child.wait();
    // What a writer killed in `atomic_write` leaves: a half-written temp file, here of a
    // pid that no longer runs, and one in the format older versions used.
    std::fs::create_dir_all(dir.join(".code-intel")).unwrap();
    std::fs::write(
        dir.join(".code-intel/symbols.idx.tmp-999999-0-1"),
        b"CIIDX005half",
    )
    .unwrap();
    std::fs::write(dir.join(".code-intel/symbols.tmp999999"), b"CIIDX004").unwrap();

    let root = Root::open(&dir).unwrap();
    assert_eq!(
        defs(&root, "stable_2999"),
        [("src/m2999.rs".to_string(), 1)]
    );
    // The CLI refreshes before answering (taking the lock the killed writer held: the
    // kernel released it with the process) and removes what the dead writer left.
    let out = spawn(&dir, &["defs", "stable_1234", "--json"])
        .wait_with_output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["items"][0]["path"], "src/m1234.rs");
    assert!(temp_files(&dir).is_empty(), "{:?}", temp_files(&dir));
    assert_eq!(refresh(&root).unwrap().files, 3000);
}

#[test]
fn a_truncated_index_is_not_trusted_and_a_read_never_writes() {
    let dir = repo("truncated");
    let root = Root::open(&dir).unwrap();
    refresh(&root).unwrap();
    let index = dir.join(INDEX_FILE);
    let bytes = std::fs::read(&index).unwrap();
    std::fs::write(&index, &bytes[..bytes.len() / 2]).unwrap();
    let stray = dir.join(".code-intel/symbols.delta.tmp-4242-7-99");
    std::fs::write(&stray, b"half a delta").unwrap();
    std::fs::write(dir.join("src/m3.rs"), module(3, 5)).unwrap();
    let listing = |dir: &Path| -> Vec<(String, u64, std::time::SystemTime)> {
        let mut v: Vec<_> = std::fs::read_dir(dir.join(".code-intel"))
            .unwrap()
            .flatten()
            .map(|e| {
                let m = e.metadata().unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    m.len(),
                    m.modified().unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let before = listing(&dir);
    // The truncated index is ignored (the tree is tagged in memory), and nothing is written:
    // not the index, not the delta, and the stray temp file stays for the next refresh.
    assert_eq!(defs(&root, "stable_3"), [("src/m3.rs".to_string(), 1)]);
    assert_eq!(defs(&root, "filler_3_5"), [("src/m3.rs".to_string(), 7)]);
    assert_eq!(listing(&dir), before);
    let report = refresh(&root).unwrap();
    assert!(report.from_scratch, "{report:?}");
    assert!(!stray.exists());
    assert!(!dir.join(DELTA_FILE).exists());
    // Over a good index, a changed file is re-tagged in memory, and still nothing is written.
    std::fs::write(dir.join("src/m4.rs"), "pub fn renamed_4() {}\n").unwrap();
    let before = listing(&dir);
    assert!(defs(&root, "stable_4").is_empty());
    assert_eq!(defs(&root, "renamed_4"), [("src/m4.rs".to_string(), 1)]);
    assert_eq!(listing(&dir), before);
}

#[test]
fn when_the_index_cannot_be_written_the_cli_answers_from_memory_and_says_so() {
    let dir = repo("readonly");
    let root = Root::open(&dir).unwrap();
    refresh(&root).unwrap();
    // Tests may run as root, which ignores permissions: a directory where the lock file
    // should be makes the index just as unwritable.
    std::fs::remove_file(dir.join(".code-intel/index.lock")).unwrap();
    std::fs::create_dir(dir.join(".code-intel/index.lock")).unwrap();
    std::fs::write(dir.join("src/m9.rs"), "pub fn moved_9() {}\n").unwrap();
    let out = spawn(&dir, &["defs", "moved_9", "--json"])
        .wait_with_output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["items"][0]["path"], "src/m9.rs");
    assert_eq!(v["freshness"]["reindexed"][0], "src/m9.rs");
    assert!(
        v["freshness"]["unsaved"]
            .as_str()
            .is_some_and(|s| s.contains("could not be updated")),
        "{v}"
    );
    let out = spawn(&dir, &["defs", "stable_9"])
        .wait_with_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("note: the index could not be updated"));
    // `index` itself has nothing to fall back on: it fails, with the IO error.
    let out = spawn(&dir, &["index"]).wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("index.lock"));
}

/// Questions whose answers the damage tests compare: a definition, an outline and the
/// structure of every file (which reads nearly all of the index).
const QUESTIONS: [&[&str]; 3] = [
    &["defs", "stable_42", "--json"],
    &["symbols", "src/m7.rs", "--json"],
    &["structure", "src", "--json"],
];

/// The CLI's JSON answer to `args` without its freshness, and the freshness.
fn answer(dir: &Path, args: &[&str]) -> (Value, Value) {
    let out = spawn(dir, args).wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let freshness = v
        .as_object_mut()
        .and_then(|o| o.remove("freshness"))
        .unwrap_or(Value::Null);
    (v, freshness)
}

/// `good` with three bytes at `at` overwritten.
fn damaged(good: &[u8], at: usize) -> Vec<u8> {
    let mut bad = good.to_vec();
    for b in bad.iter_mut().skip(at).take(3) {
        *b ^= 0xA5;
    }
    bad
}

/// Three bytes overwritten at 50 places of a real index, each answer from a fresh copy:
/// the answer is the undamaged one, either because the damage was not in what it read, or
/// because the damage was found and the index rebuilt, which the answer says. Never a
/// damaged name, kind or file list, never a panic.
#[test]
fn damaged_bytes_anywhere_in_the_index_are_caught_or_harmless() {
    let dir = repo("damaged");
    let root = Root::open(&dir).unwrap();
    refresh(&root).unwrap();
    let index = dir.join(INDEX_FILE);
    let good = std::fs::read(&index).unwrap();
    let expected: Vec<Value> = QUESTIONS.iter().map(|q| answer(&dir, q).0).collect();
    assert_eq!(expected[0]["items"][0]["name"], "stable_42");
    assert_eq!(expected[1]["items"][0]["kind"], "fn");
    assert_eq!(expected[2]["files"]["total"], FILES);
    assert_eq!(
        std::fs::read(&index).unwrap(),
        good,
        "answering wrote nothing"
    );
    let mut rebuilt = 0;
    for k in 0..50 {
        // Spread over the whole file, header to last byte, across record boundaries.
        let at = k * (good.len() - 3) / 49;
        let bad = damaged(&good, at);
        for (question, want) in QUESTIONS.iter().zip(&expected) {
            std::fs::write(&index, &bad).unwrap();
            let (got, freshness) = answer(&dir, question);
            assert_eq!(&got, want, "byte {at}, {question:?}");
            let Some(what) = freshness["recovered"].as_str() else {
                // The damage was in no part this answer read: nothing was rebuilt.
                assert!(
                    std::fs::read(&index).unwrap() == bad,
                    "byte {at}, {question:?}: the index was rewritten without a word"
                );
                continue;
            };
            rebuilt += 1;
            assert!(
                what.contains("is unusable") && what.contains("rebuilt"),
                "byte {at}, {question:?}: {what}"
            );
            let (again, freshness) = answer(&dir, question);
            assert_eq!(&again, want, "byte {at}, {question:?}, after the rebuild");
            assert!(freshness.get("recovered").is_none(), "{freshness}");
        }
        // A read that may not write (the library's `Index::open`) never answers from
        // damaged bytes either: the same answer, or an error that says the index is corrupt.
        std::fs::write(&index, &bad).unwrap();
        match find_definitions(&Index::open(&root).unwrap(), "stable_42", None, all()) {
            Ok(a) => assert_eq!(
                (a.symbols.total, a.symbols.items[0].kind.as_str()),
                (1, "fn"),
                "byte {at}"
            ),
            Err(e) => assert_eq!(e.key(), "index.corrupt", "byte {at}: {e}"),
        }
    }
    // The structure reads nearly every part of the index, so most damage is found.
    assert!(
        rebuilt >= 40,
        "only {rebuilt} of 150 answers found the damage"
    );
}

/// A damaged index in a `.code-intel/` nobody may write, with a source file changed since
/// it was indexed: the answer comes from the files tagged in memory and says why, whether
/// the damage is found when the index is opened or only when a query reads it.
#[test]
fn a_damaged_index_that_cannot_be_rebuilt_is_answered_from_memory() {
    use std::os::unix::fs::PermissionsExt;
    let dir = repo("damaged-readonly");
    let root = Root::open(&dir).unwrap();
    refresh(&root).unwrap();
    let index = dir.join(INDEX_FILE);
    let good = std::fs::read(&index).unwrap();
    std::fs::write(dir.join("src/m9.rs"), "pub fn moved_9() {}\n").unwrap();
    // The answer with the changed file, from a writable index (then put back as it was).
    let expected = answer(&dir, QUESTIONS[2]).0;
    let _ = std::fs::remove_file(dir.join(DELTA_FILE));
    std::fs::write(&index, &good).unwrap();
    // Tests may run as root, which ignores permissions: a directory where the lock file
    // should be makes the index just as unwritable.
    let code_intel = dir.join(".code-intel");
    std::fs::remove_file(code_intel.join("index.lock")).unwrap();
    std::fs::create_dir(code_intel.join("index.lock")).unwrap();
    std::fs::set_permissions(&code_intel, std::fs::Permissions::from_mode(0o555)).unwrap();
    // The last bytes are the blob's, read only by a query (here, for the structure); byte
    // 10 is in the header, checked when the index is opened.
    for at in [good.len() - 3, 10] {
        let bad = damaged(&good, at);
        std::fs::set_permissions(&code_intel, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(&index, &bad).unwrap();
        std::fs::set_permissions(&code_intel, std::fs::Permissions::from_mode(0o555)).unwrap();
        let (got, freshness) = answer(&dir, QUESTIONS[2]);
        assert_eq!(got, expected, "byte {at}");
        assert!(
            freshness["recovered"]
                .as_str()
                .is_some_and(|s| s.contains("is unusable") && s.contains("tagged in memory")),
            "byte {at}: {freshness}"
        );
        assert!(freshness["unsaved"].is_string(), "byte {at}: {freshness}");
        let (got, _) = answer(&dir, &["defs", "moved_9", "--json"]);
        assert_eq!(got["items"][0]["path"], "src/m9.rs");
        let out = spawn(&dir, &["structure", "src/m9.rs"])
            .wait_with_output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("warning: index "),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            std::fs::read(&index).unwrap() == bad,
            "byte {at}: the index was written"
        );
        assert!(!dir.join(DELTA_FILE).exists());
    }
    std::fs::set_permissions(&code_intel, std::fs::Permissions::from_mode(0o755)).unwrap();
}
