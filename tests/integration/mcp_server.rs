//! The MCP server end to end: every scenario in `tests/mcp/scenarios/` runs against the
//! real binary (`code-intel serve`) through the real Python `mcp` client
//! (`tests/mcp/scenario.py`), in a fresh git repository built from the scenario's `files`.
//!
//! The Python client comes from `$CODE_INTEL_TEST_PYTHON`, else a `python3` that can
//! `import mcp`, else a virtual environment this test creates under `target/` and fills
//! from PyPI (`mcp==2.3.0`), so `cargo test` works on a fresh clone.
//!
//! What no scenario can say (a text that must be absent) is tested on the server in
//! process: the compaction protocol is sent once per session, not with every response.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

use crate::support::{TempDir, binary, repo};

const MCP_VERSION: &str = "2.3.0";

/// A Python interpreter that has the `mcp` package, or why there is none.
pub(crate) fn python() -> &'static Result<PathBuf, String> {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PYTHON.get_or_init(|| {
        if let Some(p) = std::env::var_os("CODE_INTEL_TEST_PYTHON") {
            return Ok(PathBuf::from(p));
        }
        let has_mcp = |python: &Path| {
            crate::sealed::command(python)
                .args(["-c", "import mcp.client.stdio"])
                .output()
                .is_ok_and(|o| o.status.success())
        };
        let venv = repo().join("target/mcp-venv");
        let venv_python = venv.join("bin/python");
        if has_mcp(&venv_python) {
            return Ok(venv_python);
        }
        // Never a system python3 that happens to have some `mcp`: its version is the
        // machine's, not the one pinned here.
        let made = crate::sealed::setup_command("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .output()
            .map_err(|e| format!("python3 is needed for the MCP tests: {e}"))?;
        if !made.status.success() {
            return Err(format!(
                "python3 -m venv failed: {}",
                String::from_utf8_lossy(&made.stderr)
            ));
        }
        let pip = crate::sealed::setup_command(&venv_python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                &format!("mcp=={MCP_VERSION}"),
            ])
            .output()
            .map_err(|e| format!("pip: {e}"))?;
        if !pip.status.success() || !has_mcp(&venv_python) {
            return Err(format!(
                "installing mcp=={MCP_VERSION} failed: {}",
                String::from_utf8_lossy(&pip.stderr)
            ));
        }
        Ok(venv_python)
    })
}

/// A fresh git repository with `files` committed on `main`.
fn git_repo(name: &str, files: &serde_json::Map<String, Value>) -> TempDir {
    let dir = TempDir::create(&format!("code-intel-mcp-{name}-{}", std::process::id()));
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(path, text)| (path.as_str(), text.as_str().unwrap_or_default()))
        .collect();
    crate::support::git_repo(&dir, &files);
    dir
}

fn run_scenario(path: &Path) -> Result<(), String> {
    let name = path.file_stem().unwrap().to_string_lossy().into_owned();
    let scenario: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap())
        .map_err(|e| format!("{name}: {e}"))?;
    let files = scenario["files"].as_object().cloned().unwrap_or_default();
    let dir = git_repo(&name, &files);
    let state = TempDir::at(dir.with_extension("state"));
    let python = python().as_ref().map_err(Clone::clone)?;
    let out = crate::sealed::command(python)
        .arg(repo().join("tests/mcp/scenario.py"))
        .arg(binary())
        .arg(dir.path())
        .arg(path)
        .env("CODE_INTEL_STATE_DIR", state.path())
        .env("CODE_INTEL_LOG", "warn")
        .output()
        .map_err(|e| format!("{name}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "scenario {name} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

#[test]
fn scenarios() {
    let dir = repo().join("tests/mcp/scenarios");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no scenarios in {}", dir.display());
    // `CODE_INTEL_SCENARIO=part_of_a_name` runs only the matching scenarios, while working
    // on one.
    if let Ok(only) = std::env::var("CODE_INTEL_SCENARIO") {
        paths.retain(|p| p.to_string_lossy().contains(&only));
        assert!(!paths.is_empty(), "no scenario matches {only}");
    }
    // Two at a time: each scenario runs its own server processes.
    let failures: Vec<String> = paths
        .chunks(2)
        .flat_map(|pair| {
            std::thread::scope(|s| {
                let handles: Vec<_> = pair
                    .iter()
                    .map(|p| s.spawn(move || run_scenario(p)))
                    .collect();
                handles
                    .into_iter()
                    .filter_map(|h| h.join().unwrap().err())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The contract's footer: the compaction protocol an agent needs once, and again when it
/// lost its context.
const PROTOCOL: &str = "[compaction_protocol]";

fn instruction_of(body: &Value) -> &str {
    body["instruction"].as_str().unwrap_or_default()
}

#[test]
fn the_compaction_protocol_comes_once_per_session_and_after_a_compaction() {
    use serde_json::json;
    let repo = crate::support::SessionRepo::new(
        "code-intel-mcp-footer",
        [7; 32],
        &[
            ("app.py", "def main():\n    return 1\n"),
            ("README.md", "# demo\n"),
        ],
    );
    let server = repo.server();
    let call = |tool: &str, a: Value| {
        let reply = server.call(tool, a.as_object().cloned().unwrap_or_default());
        (reply.is_error, reply.body)
    };
    let (_, started) = call(
        "start_session",
        json!({"query": "explain main", "intent": "QUESTION"}),
    );
    assert!(instruction_of(&started).contains(PROTOCOL), "{started}");
    call("search_files", json!({"globs": ["*.md"]}));
    let (refused, gated) = call("review_changes", json!({}));
    assert!(refused, "{gated}");
    assert!(!instruction_of(&gated).contains(PROTOCOL), "{gated}");
    let (_, next) = call(
        "submit_phase",
        json!({"data": {"documents_reviewed": ["README.md"], "tools_used": ["search_files"], "summary": "no rules", "compaction_count": 0}}),
    );
    assert_eq!(next["state"], "QUERY_FRAME", "{next}");
    assert!(!instruction_of(&next).contains(PROTOCOL), "{next}");
    let (_, status) = call("get_session_status", json!({}));
    assert!(instruction_of(&status).contains(PROTOCOL), "{status}");
    // The agent lost its context and says so with the next count: the protocol comes
    // back with the summaries, whatever the submission's fate.
    let (_, compacted) = call(
        "submit_phase",
        json!({"data": {"target_feature": {"value": "main", "quote": "main"}, "desired_action": {"value": "explain", "quote": "explain"}, "trigger_condition": null, "observed_issue": null, "tools_used": [], "summary": "frame", "compaction_count": 1}}),
    );
    assert!(compacted["phase_summaries"].is_object(), "{compacted}");
    assert!(instruction_of(&compacted).contains(PROTOCOL), "{compacted}");
    let (_, after) = call(
        "submit_phase",
        json!({"data": {"explored_files": ["app.py"], "findings": ["app.py:1 main"], "tools_used": [], "summary": "x", "compaction_count": 1}}),
    );
    assert!(!instruction_of(&after).contains(PROTOCOL), "{after}");
}

/// `update_context` keeps what the summaries file holds: one it cannot read as JSON is an
/// error naming the file, and the file is left as it is, not replaced by the new
/// summaries alone.
#[test]
fn update_context_reports_a_corrupt_summaries_file_and_leaves_it() {
    use serde_json::json;
    let repo = crate::support::SessionRepo::new(
        "code-intel-mcp-summaries",
        [8; 32],
        &[("README.md", "# demo\n")],
    );
    let server = repo.server();
    let update = |rules: &str| {
        let reply = server.call(
            "update_context",
            json!({"project_rules_summary": rules})
                .as_object()
                .cloned()
                .unwrap(),
        );
        (reply.is_error, reply.body)
    };
    let (failed, body) = update("first");
    assert!(!failed, "{body}");
    let file = repo.root.join(".code-intel/context_summaries.json");
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved["project_rules_summary"], "first", "{saved}");

    std::fs::write(&file, "{not json").unwrap();
    let (failed, body) = update("second");
    assert!(failed, "{body}");
    assert_eq!(body["error"], "invalid_arguments", "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("context_summaries.json is not a JSON object"),
        "{body}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{not json");
}
