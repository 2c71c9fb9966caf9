//! The server's shared symbol index: built in the background, text answers (that say so)
//! until it is ready, changed and new files seen before answering, and concurrent calls
//! answered correctly while files change.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use code_intel::codeintel::Root;
use code_intel::server::CodeTools;
use code_intel::server::SemanticTools;
use code_intel::server::call_code;
use code_intel::server::english;
use code_intel::server::{ChangeSource, IndexCache, Lookup};
use serde_json::{Map, Value, json};

use crate::support::TempDir;

fn temp_repo(name: &str, files: &[(&str, &str)]) -> TempDir {
    let dir = TempDir::claim(&format!("code-intel-index-{name}-{}", std::process::id()));
    for (path, text) in files {
        let abs = dir.join(path);
        std::fs::create_dir_all(abs.parent().unwrap()).unwrap();
        std::fs::write(abs, text).unwrap();
    }
    dir
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

fn ready(cache: &IndexCache) {
    let start = Instant::now();
    while cache.building().is_some() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the index never became ready"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(matches!(cache.lookup(), Lookup::Ready(_)));
}

fn call(tools: &CodeTools, name: &str, a: Value) -> Value {
    call_code(tools, name, args(a), english())
        .unwrap_or_else(|e| panic!("{name}: {e:?}"))
        .unwrap()
}

fn paths(answer: &Value) -> Vec<String> {
    answer["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no symbols in {answer}"))
        .iter()
        .map(|s| format!("{}:{}", s["path"].as_str().unwrap(), s["line"]))
        .collect()
}

fn code_tools(dir: &Path, start: bool) -> CodeTools {
    code_tools_with(dir, start, ChangeSource::FileEvents)
}

fn code_tools_with(dir: &Path, start: bool, changes: ChangeSource) -> CodeTools {
    let root = Root::open(dir).unwrap();
    let index = if start {
        IndexCache::start(root.clone(), changes)
    } else {
        IndexCache::new(root.clone(), changes)
    };
    CodeTools {
        semantic: SemanticTools::start(root.clone(), &crate::sealed::environment()),
        root,
        index,
    }
}

#[test]
fn until_the_index_is_ready_symbol_tools_answer_without_it_and_say_so() {
    let dir = temp_repo(
        "pending",
        &[(
            "app.py",
            "def parse_config(path):\n    return path\n\nparse_config(1)\n",
        )],
    );
    let tools = code_tools(&dir, false);
    // Names are answered from the files that mention them, tagged on the spot: the
    // answer the full index will give, and it says the index is not ready.
    let defs = call(&tools, "find_definitions", json!({"name": "parse_config"}));
    assert_eq!(paths(&defs), ["app.py:1"], "{defs}");
    assert!(
        defs["index_status"]
            .as_str()
            .unwrap()
            .contains("still being built"),
        "{defs}"
    );
    let refs = call(&tools, "find_references", json!({"name": "parse_config"}));
    assert_eq!(paths(&refs), ["app.py:4"], "{refs}");
    // A file-scoped question tags that one file on the spot.
    let outline = call(&tools, "get_symbols", json!({"file_path": "app.py"}));
    assert_eq!(paths(&outline), ["app.py:1"], "{outline}");
    assert!(
        outline["index_status"]
            .as_str()
            .unwrap()
            .contains("still being built")
    );
    let impact = call(
        &tools,
        "analyze_impact",
        json!({"targets": ["parse_config"]}),
    );
    assert_eq!(impact["source"], "text", "{impact}");
    let structure = call(&tools, "analyze_structure", json!({"path": "."}));
    assert_eq!(structure["source"], "files", "{structure}");
    // Once loaded, the same questions answer from the index.
    IndexCache::load_in_background(&tools.index);
    ready(&tools.index);
    let defs = call(&tools, "find_definitions", json!({"name": "parse_config"}));
    assert_eq!(paths(&defs), ["app.py:1"], "{defs}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn changed_and_new_files_are_seen_before_answering_with_file_events() {
    fresh_answers("events", ChangeSource::FileEvents);
}

#[test]
fn changed_and_new_files_are_seen_before_answering_when_polling() {
    fresh_answers("polling", ChangeSource::Polling);
}

fn fresh_answers(name: &str, changes: ChangeSource) {
    let dir = temp_repo(name, &[("a.py", "def old_name():\n    pass\n")]);
    let tools = code_tools_with(&dir, true, changes);
    ready(&tools.index);
    assert_eq!(
        tools.index.watching(),
        changes == ChangeSource::FileEvents && cfg!(target_os = "linux"),
        "which path this test exercises"
    );
    assert_eq!(
        paths(&call(
            &tools,
            "find_definitions",
            json!({"name": "old_name"})
        )),
        ["a.py:1"]
    );
    // An edit is re-tagged before the next answer.
    std::fs::write(dir.join("a.py"), "\n\ndef new_name():\n    pass\n").unwrap();
    assert_eq!(
        paths(&call(
            &tools,
            "find_definitions",
            json!({"name": "new_name"})
        )),
        ["a.py:3"]
    );
    assert_eq!(
        call(&tools, "find_definitions", json!({"name": "old_name"}))["total"],
        0
    );
    // A file created a moment ago is found at once, not after the next periodic walk.
    std::fs::create_dir_all(dir.join("pkg")).unwrap();
    std::fs::write(dir.join("pkg/b.py"), "class Fresh:\n    pass\n").unwrap();
    assert_eq!(
        paths(&call(&tools, "find_definitions", json!({"name": "Fresh"}))),
        ["pkg/b.py:1"]
    );
    std::fs::write(dir.join("pkg/c.py"), "def helper():\n    pass\n").unwrap();
    assert_eq!(
        paths(&call(
            &tools,
            "get_symbols",
            json!({"file_path": "pkg/c.py"})
        )),
        ["pkg/c.py:1"]
    );
    // A deleted file disappears.
    std::fs::remove_file(dir.join("pkg/b.py")).unwrap();
    assert_eq!(
        call(&tools, "find_definitions", json!({"name": "Fresh"}))["total"],
        0
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn concurrent_calls_share_the_index_while_files_change() {
    let files: Vec<(String, String)> = (0..40)
        .map(|i| (format!("m{i}.py"), format!("def f{i}():\n    return {i}\n")))
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let dir = temp_repo("concurrent", &refs);
    let tools = Arc::new(code_tools(&dir, true));
    ready(&tools.index);
    std::thread::scope(|s| {
        let writer = {
            let dir = dir.to_path_buf();
            s.spawn(move || {
                for round in 0..20 {
                    // Saved as editors save: a temp file renamed over the old one, so a
                    // reader never sees a half-written file.
                    let tmp = dir.join(format!(".m0.py.{round}.tmp"));
                    std::fs::write(
                        &tmp,
                        format!("def f0():\n    return {round}\n\n\ndef g{round}():\n    pass\n"),
                    )
                    .unwrap();
                    std::fs::rename(&tmp, dir.join("m0.py")).unwrap();
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
        };
        let readers: Vec<_> = (0..6)
            .map(|t| {
                let tools = Arc::clone(&tools);
                s.spawn(move || {
                    for i in 0..30 {
                        let n = (t * 7 + i) % 40;
                        let defs =
                            call(&tools, "find_definitions", json!({"name": format!("f{n}")}));
                        assert_eq!(paths(&defs), [format!("m{n}.py:1")], "{defs}");
                        let outline = call(
                            &tools,
                            "get_symbols",
                            json!({"file_path": format!("m{n}.py")}),
                        );
                        assert!(outline["total"].as_u64().unwrap() >= 1, "{outline}");
                    }
                })
            })
            .collect();
        writer.join().unwrap();
        for r in readers {
            r.join().unwrap();
        }
    });
    assert_eq!(
        paths(&call(&tools, "find_definitions", json!({"name": "g19"}))),
        ["m0.py:5"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A piece of the index on disk that does not match its checksum, found only when a tool
/// reads it: the server rebuilds the index and the tool answers as if nothing happened.
#[test]
fn a_damaged_piece_of_the_index_found_by_a_tool_is_repaired() {
    use code_intel::codeintel::INDEX_FILE;
    use code_intel::codeintel::refresh;
    let files: Vec<(String, String)> = (0..30)
        .map(|k| {
            (
                format!("src/m{k:02}.py"),
                format!("def f_{k}():\n    return {k}\n"),
            )
        })
        .collect();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let dir = temp_repo("damaged", &files);
    refresh(&Root::open(&dir).unwrap()).unwrap();
    // The last bytes of the index are the strings of the last file's tags: read only when
    // a question needs them, not when the index is opened.
    let index = dir.join(INDEX_FILE);
    let mut bytes = std::fs::read(&index).unwrap();
    let n = bytes.len();
    for b in &mut bytes[n - 3..] {
        *b ^= 0xA5;
    }
    std::fs::write(&index, &bytes).unwrap();
    let tools = code_tools(&dir, true);
    ready(&tools.index);
    assert!(
        std::fs::read(&index).unwrap() == bytes,
        "opening the index did not find the damage"
    );
    let answer = call(&tools, "get_symbols", json!({"file_path": "src/m29.py"}));
    assert_eq!(answer["items"][0]["name"], "f_29", "{answer}");
    assert_eq!(answer["items"][0]["signature"], "def f_29():", "{answer}");
    assert!(
        std::fs::read(&index).unwrap() != bytes,
        "the index was rebuilt"
    );
    let answer = call(&tools, "find_definitions", json!({"name": "f_29"}));
    assert_eq!(paths(&answer), ["src/m29.py:1"]);
}
