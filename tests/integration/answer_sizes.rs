//! Answers an agent can afford: impact's counts per section with the top items first and
//! one section on request, every code tool's answer within its byte budget and saying how
//! to get the rest, the freshness note once per server, a lean tool list, plain-language
//! questions routed to semantic search, and qualified names (`Session.request`) understood
//! by the symbol tools and commands.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use code_intel::codeintel::Root;
use code_intel::codeintel::{ANSWER_BUDGET, IMPACT_SUMMARY_BUDGET};
use code_intel::server::SemanticTools;
use code_intel::server::call_code;
use code_intel::server::english;
use code_intel::server::{ChangeSource, IndexCache};
use code_intel::server::{CodeTools, ToolError};
use serde_json::{Value, json};

use crate::support::TempDir;

/// A small library shaped like `requests`: a `Session.request` method, a module-level
/// `request` function, another class with its own `request`, thirty modules that call it,
/// and tests and docs that mention it hundreds of times.
fn library(name: &str) -> TempDir {
    let dir = TempDir::create(&format!("code-intel-sizes-{name}-{}", std::process::id()));
    let write = |path: &str, text: String| {
        let abs = dir.join(path);
        std::fs::create_dir_all(abs.parent().unwrap()).unwrap();
        std::fs::write(abs, text).unwrap();
    };
    write(
        "pkg/sessions.py",
        "class Session:\n    def request(self, method, url):\n        return (method, url)\n\n    def get(self, url):\n        return self.request(\"GET\", url)\n\n\ndef merge_setting(a, b):\n    return a or b\n".into(),
    );
    write(
        "pkg/api.py",
        "from .sessions import Session\n\n\ndef request(method, url):\n    s = Session()\n    return s.request(method, url)\n".into(),
    );
    write(
        "pkg/adapters.py",
        "class Adapter:\n    def request(self, prepared):\n        return prepared\n\n    def send(self, prepared):\n        return self.request(prepared)\n".into(),
    );
    for i in 0..30 {
        write(
            &format!("pkg/client_{i}.py"),
            format!(
                "from .sessions import Session\n\n\ndef fetch_{i}(url):\n    return Session().request(\"GET\", url)\n"
            ),
        );
    }
    for t in 0..20 {
        let mut text = String::from("from pkg.sessions import Session\n\n\n");
        for l in 0..30 {
            text.push_str(&format!(
                "def test_request_{l}():\n    assert Session().request(\"GET\", \"http://example.invalid/{t}/{l}\") is not None\n"
            ));
        }
        write(&format!("tests/test_client_{t}.py"), text);
    }
    let doc: String = (0..80)
        .map(|l| {
            format!("Line {l}: call `Session.request` with a method and a URL to send a request.\n")
        })
        .collect();
    write("docs/usage.md", doc);
    dir
}

fn code_tools(dir: &Path) -> CodeTools {
    let root = Root::open(dir).unwrap();
    let index = IndexCache::start(root.clone(), ChangeSource::Polling);
    let start = Instant::now();
    while index.building().is_some() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the index never became ready"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    CodeTools {
        semantic: SemanticTools::start(root.clone(), &crate::sealed::environment()),
        root,
        index,
    }
}

fn call(tools: &CodeTools, name: &str, args: Value) -> Value {
    call_code(tools, name, args.as_object().cloned().unwrap(), english())
        .unwrap_or_else(|e| panic!("{name}: {e:?}"))
        .unwrap()
}

fn refused(tools: &CodeTools, name: &str, args: Value) -> String {
    match call_code(tools, name, args.as_object().cloned().unwrap(), english()) {
        Err(ToolError::Tool(e)) => e.key().to_string(),
        other => panic!("{name} should be refused: {other:?}"),
    }
}

fn size(v: &Value) -> usize {
    serde_json::to_string(v).unwrap().len()
}

fn paths(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .unwrap_or_else(|| panic!("not a page: {page}"))
        .iter()
        .map(|i| i["path"].as_str().unwrap().to_string())
        .collect()
}

fn is_test(path: &str) -> bool {
    path.starts_with("tests/")
}

#[test]
fn impact_answers_counts_and_the_top_items_within_its_budget_and_one_section_on_request() {
    let dir = library("impact");
    let tools = code_tools(&dir);
    let impact = call(&tools, "analyze_impact", json!({"targets": ["request"]}));
    assert!(
        size(&impact) <= IMPACT_SUMMARY_BUDGET,
        "{} bytes: {impact}",
        size(&impact)
    );
    // Every section is counted; only its first items are listed.
    assert_eq!(impact["tests"]["total"], 600, "{}", impact["tests"]);
    assert!(impact["tests"]["returned"].as_u64().unwrap() <= 5);
    assert_eq!(impact["truncated"], true);
    assert!(
        impact["more"].as_str().unwrap().contains("section"),
        "{impact}"
    );
    // Ranked: one line per test file first, callers outside tests before those in tests.
    let tests = paths(&impact["tests"]);
    let mut distinct = tests.clone();
    distinct.dedup();
    assert_eq!(tests, distinct, "one line per file first: {tests:?}");
    let callers = paths(&impact["callers"]);
    assert!(
        !callers.is_empty() && !callers.iter().any(|p| is_test(p)),
        "{callers:?}"
    );
    assert!(impact["callers"]["total"].as_u64().unwrap() > 30);
    // The rest of one section, paged; the others are counts only.
    let section = call(
        &tools,
        "analyze_impact",
        json!({"targets": ["request"], "section": "tests", "offset": 5, "limit": 50}),
    );
    assert!(size(&section) <= ANSWER_BUDGET, "{} bytes", size(&section));
    let tests = &section["tests"];
    assert_eq!(
        (&tests["offset"], &tests["total"]),
        (&json!(5), &json!(600))
    );
    let returned = tests["returned"].as_u64().unwrap();
    assert!(returned > 0 && returned <= 50, "{tests}");
    assert_eq!(tests["next_offset"], json!(5 + returned));
    assert!(paths(tests).iter().all(|p| is_test(p)));
    for other in ["callers", "definitions", "config_and_docs"] {
        assert_eq!(section[other]["returned"], 0, "{other}: {}", section[other]);
        assert!(section[other]["total"].as_u64().unwrap() > 0, "{other}");
    }
    assert_eq!(
        refused(
            &tools,
            "analyze_impact",
            json!({"targets": ["request"], "section": "everything"})
        ),
        "section.unknown"
    );
}

#[test]
fn every_code_tool_answer_is_cut_to_its_budget_and_says_how_to_get_the_rest() {
    let dir = library("budget");
    let tools = code_tools(&dir);
    for (tool, args) in [
        (
            "search_text",
            json!({"patterns": ["request"], "limit": 1000}),
        ),
        ("find_references", json!({"name": "request", "limit": 1000})),
        ("analyze_structure", json!({"path": ".", "limit": 1000})),
    ] {
        let answer = call(&tools, tool, args.clone());
        assert!(
            size(&answer) <= ANSWER_BUDGET,
            "{tool}: {} bytes",
            size(&answer)
        );
        assert!(answer["budget"].as_str().is_some(), "{tool}: {answer}");
        let page = if answer["files"]["items"].is_array() {
            &answer["files"]
        } else {
            &answer
        };
        assert_eq!(page["truncated"], true, "{tool}");
        let next = page["next_offset"].as_u64().unwrap();
        assert_eq!(next, page["returned"].as_u64().unwrap(), "{tool}");
        // The next call goes on where this one stopped.
        let mut more = args.clone();
        more["offset"] = json!(next);
        let rest = call(&tools, tool, more);
        let rest_page = if rest["files"]["items"].is_array() {
            &rest["files"]
        } else {
            &rest
        };
        assert_eq!(rest_page["offset"], json!(next), "{tool}");
        assert!(rest_page["returned"].as_u64().unwrap() > 0, "{tool}");
    }
    // A small answer is not touched.
    let small = call(&tools, "find_definitions", json!({"name": "merge_setting"}));
    assert!(small.get("budget").is_none(), "{small}");
}

#[test]
fn the_freshness_note_is_given_once_per_server() {
    let dir = library("freshness");
    let tools = code_tools(&dir);
    let first = call(&tools, "find_definitions", json!({"name": "merge_setting"}));
    assert!(
        first["freshness"]["note"]
            .as_str()
            .unwrap()
            .contains("checked"),
        "{first}"
    );
    for (tool, args) in [
        ("find_definitions", json!({"name": "merge_setting"})),
        ("get_symbols", json!({"file_path": "pkg/api.py"})),
        ("analyze_impact", json!({"targets": ["merge_setting"]})),
    ] {
        let later = call(&tools, tool, args);
        assert!(later["freshness"].is_object(), "{tool}: {later}");
        assert!(later["freshness"].get("note").is_none(), "{tool}: {later}");
    }
}

#[test]
fn the_tool_list_is_lean() {
    let tools: Vec<Value> = code_intel::server::TOOLS
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "inputSchema": (t.schema)()}))
        .collect();
    let listed = serde_json::to_string(&tools).unwrap();
    assert!(
        listed.len() < 12_500,
        "tools/list is {} bytes",
        listed.len()
    );
    for tool in &tools {
        let schema = &tool["inputSchema"];
        // The paging type's own doc comment was copied into every schema.
        assert!(schema.get("description").is_none(), "{}", tool["name"]);
        let text = schema.to_string();
        assert!(!text.contains("\"format\""), "{}: {text}", tool["name"]);
        assert!(!text.contains("\\n"), "{}: {text}", tool["name"]);
        assert!(
            tool["description"].as_str().unwrap().len() <= 300,
            "{}",
            tool["name"]
        );
    }
}

#[test]
fn plain_language_questions_go_to_semantic_search_and_identifiers_stay_routed() {
    let dir = library("query");
    let tools = code_tools(&dir);
    let answer = call(
        &tools,
        "query",
        json!({"question": "how does the library merge settings from the session"}),
    );
    assert_eq!(answer["tool"], "semantic_search", "{answer}");
    assert!(
        answer["result"]["hits"]
            .as_array()
            .is_some_and(|h| !h.is_empty()),
        "{answer}"
    );
    // No embedding model here: the answer says the ranking is by words only.
    assert!(
        answer["note"].as_str().unwrap_or("").contains("words only"),
        "{answer}"
    );
    for (question, tool) in [
        ("where is merge_setting defined", "find_definitions"),
        ("who calls merge_setting", "find_references"),
        ("merge_setting", "find_definitions"),
        ("what breaks if I change Session.request", "analyze_impact"),
    ] {
        let answer = call(&tools, "query", json!({"question": question}));
        assert_eq!(answer["tool"], tool, "{question}: {answer}");
    }
    let o = run(
        &dir,
        &[
            "query", "how", "does", "the", "library", "merge", "settings",
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("answered by semantic_search"), "{err}");
    assert!(err.contains("no embedding model"), "{err}");
    assert_eq!(o.status.code(), Some(0), "{err}");
}

fn run(dir: &Path, args: &[&str]) -> Output {
    crate::support::code_intel()
        .args(args)
        .current_dir(dir)
        .env_remove("CODE_INTEL_ORT_DYLIB")
        .env_remove("CODE_INTEL_MODEL_PATH")
        .output()
        .unwrap()
}

#[test]
fn qualified_names_are_understood_by_every_symbol_tool() {
    let dir = library("qualified");
    let tools = code_tools(&dir);
    let defs = call(
        &tools,
        "find_definitions",
        json!({"name": "Session.request"}),
    );
    assert_eq!(paths(&defs), ["pkg/sessions.py"], "{defs}");
    let module = call(
        &tools,
        "find_definitions",
        json!({"name": "sessions.merge_setting"}),
    );
    assert_eq!(paths(&module), ["pkg/sessions.py"], "{module}");
    // Uses through the container, through `self` inside it, or of an unknown receiver;
    // never `self.request` inside another class.
    let refs = call(
        &tools,
        "find_references",
        json!({"name": "Session.request", "limit": 1000}),
    );
    let lines: Vec<String> = refs["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| format!("{}:{}", i["path"].as_str().unwrap(), i["line"]))
        .collect();
    assert!(
        lines.contains(&"pkg/sessions.py:6".to_string()),
        "{lines:?}"
    );
    assert!(lines.contains(&"pkg/api.py:6".to_string()), "{lines:?}");
    assert!(
        !lines.iter().any(|l| l.starts_with("pkg/adapters.py")),
        "{lines:?}"
    );
    let impact = call(
        &tools,
        "analyze_impact",
        json!({"targets": ["Session.request"]}),
    );
    assert_eq!(
        paths(&impact["definitions"]),
        ["pkg/sessions.py"],
        "{impact}"
    );
    assert!(
        !paths(&impact["callers"])
            .iter()
            .any(|p| p == "pkg/adapters.py")
    );
    let outline = call(&tools, "get_symbols", json!({"file_path": "Session"}));
    let names: Vec<&str> = outline["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Session", "request", "get"], "{outline}");
    let module = call(&tools, "get_symbols", json!({"file_path": "pkg.sessions"}));
    assert_eq!(module["total"], 4, "{module}");
    // An unknown member is what an unknown name is: nothing found.
    let none = call(&tools, "find_definitions", json!({"name": "Nope.request"}));
    assert_eq!(none["total"], 0, "{none}");
    for (tool, args) in [
        ("find_references", json!({"name": "Nope.request"})),
        ("analyze_impact", json!({"targets": ["Nope.request"]})),
    ] {
        assert_eq!(refused(&tools, tool, args), "symbol.not_found", "{tool}");
    }
    assert_eq!(
        refused(&tools, "get_symbols", json!({"file_path": "Nope.request"})),
        "path.not_found"
    );
    // The commands: found is 0, nothing found is 1 with a line on stderr, an unknown
    // impact or refs target is an error (2), as for plain names.
    for (args, code, stderr) in [
        (&["defs", "Session.request"][..], 0, ""),
        (
            &["defs", "Nope.request"],
            1,
            "no definition of `Nope.request` found",
        ),
        (
            &["defs", "NoSuchThing"],
            1,
            "no definition of `NoSuchThing` found",
        ),
        (&["refs", "Session.request"], 0, ""),
        (&["refs", "Nope.request"], 2, "was not found"),
        (&["impact", "Session.request"], 0, ""),
        (&["impact", "Nope.request"], 2, "was not found"),
        (&["symbols", "Session"], 0, ""),
    ] {
        let o = run(&dir, args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(stderr), "{args:?}: {err}");
    }
    let text =
        String::from_utf8_lossy(&run(&dir, &["defs", "Session.request"]).stdout).into_owned();
    assert!(text.starts_with("pkg/sessions.py:2:"), "{text}");
}
