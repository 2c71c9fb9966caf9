//! The real Claude Code client end to end, offline, as a new user meets it: `code-intel
//! init` sets up a fresh git repository (nothing else configures the client, and nothing
//! of it is committed), `claude mcp list` must report the server connected, and `claude
//! -p "/code ..."` runs a scripted model (`tests/claude/model_server.py`, a loopback
//! Messages API) through a whole first session: tool discovery, `start_session`, the
//! phases up to implementation (a shell command that writes on the way refused by the
//! hook), a write the hook must refuse and one it must let through, verification, a
//! review of exactly the task's file, the quality review and the merge into `main`. Then
//! the registration line init printed is run as printed. The assertions read what the
//! client sent back to the model (the recorded `tool_result` blocks) and the repository.
//!
//! Claude Code comes from `tests/claude/node_modules` (pinned by its `package-lock.json`);
//! when it is missing the test installs it as `.ci/run` does (`npm ci --prefix
//! tests/claude`) and fails with the reason if that fails. The client runs with `HOME` in
//! a temporary directory, so the user's configuration is neither read nor touched.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::support::{ModelServer, TempDir};

/// Upper bounds, so a stuck client fails the test instead of hanging it.
const MCP_LIST_TIMEOUT_S: u32 = 60;
const RUN_TIMEOUT_S: u32 = 120;
/// The user's request (`start_session` quotes are checked against it).
const REQUEST: &str = "add a --json flag to the export command";
const APP: &str = "def parse_config(path):\n    return open(path).read()\n\n\ndef main():\n    print(parse_config(\"x\"))\n";
const APP_NEW: &str = "import sys\n\n\ndef parse_config(path):\n    return open(path).read()\n\n\ndef main():\n    if \"--json\" in sys.argv:\n        print('{\"config\": %r}' % parse_config(\"x\"))\n        return\n    print(parse_config(\"x\"))\n";
/// A shell command that plainly writes an explored file.
const SHELL_WRITE: &str = "echo x > app.py";
const FINAL_TEXT: &str = "Scripted run finished.";
/// Tool-use ids the model server gives turn N: `toolu_scripted_NNN`.
const ID_PREFIX: &str = "toolu_scripted_";

/// The `claude` executable, installed by `npm ci --prefix tests/claude` when missing.
fn claude() -> &'static Result<PathBuf, String> {
    static CLAUDE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    CLAUDE.get_or_init(|| {
        crate::support::npm_package("claude", ".bin/claude")
            .map_err(|e| format!("Claude Code is not installed: {e}"))
    })
}

/// The test's directories, all under `base`, removed when the test ends, pass or fail.
struct Dirs {
    base: TempDir,
    repo: PathBuf,
    home: PathBuf,
    state: PathBuf,
}

impl Dirs {
    fn new() -> Dirs {
        let base = TempDir::claim(&format!("code-intel-claude-{}", std::process::id()));
        let dirs = Dirs {
            repo: base.join("repo"),
            home: base.join("home"),
            state: base.join("state"),
            base,
        };
        for d in [&dirs.repo, &dirs.home, &dirs.state] {
            std::fs::create_dir_all(d).unwrap();
        }
        dirs
    }
}

/// `claude ARGS` in the repository under `timeout`, with a clean environment: the
/// temporary `HOME`, no telemetry, updates or other traffic, plus `extra`.
fn run_claude(dirs: &Dirs, seconds: u32, args: &[&str], extra: &[(&str, String)]) -> Output {
    let exe = claude().as_ref().unwrap_or_else(|e| panic!("{e}"));
    let mut cmd = crate::sealed::command("timeout");
    // timeout signals the whole process group: the client, its MCP server and hooks.
    cmd.args(["--kill-after=10", &seconds.to_string()])
        .arg(exe)
        .args(args)
        .current_dir(&dirs.repo)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &dirs.home)
        .env("CODE_INTEL_STATE_DIR", &dirs.state)
        .env("CODE_INTEL_LOG", "warn")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .stdin(Stdio::null());
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
    assert_ne!(
        out.status.code(),
        Some(124),
        "claude {args:?} did not finish within {seconds} s and was killed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The line `claude mcp list` prints for the code-intel server.
fn mcp_list_line(dirs: &Dirs) -> String {
    let out = run_claude(dirs, MCP_LIST_TIMEOUT_S, &["mcp", "list"], &[]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .find(|l| l.starts_with("code-intel:"))
        .map(str::to_string)
        .unwrap_or_else(|| {
            panic!(
                "`claude mcp list` lists no code-intel server:\n{text}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

/// Marks the repository trusted in the client's `~/.claude.json`, as answering the
/// client's workspace-trust question does on the first interactive run.
fn accept_trust(dirs: &Dirs) {
    let path = dirs.home.join(".claude.json");
    let mut config: Value = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| json!({}));
    let repo_path = dirs.repo.canonicalize().unwrap();
    config["projects"][repo_path.to_string_lossy().as_ref()] =
        json!({"hasTrustDialogAccepted": true});
    std::fs::write(&path, serde_json::to_string_pretty(&config).unwrap()).unwrap();
}

/// The model's turns, each with a name the assertions find it by: load the tools, run
/// the flow to implementation, write twice.
fn script(repo_dir: &Path) -> Vec<(&'static str, Value)> {
    let mcp = |tool: &str| format!("mcp__code-intel__{tool}");
    let call = |name: String, input: Value| json!({"tool_use": {"name": name, "input": input}});
    let submit = |mut data: Value| {
        data["compaction_count"] = json!(0);
        call(mcp("submit_phase"), json!({ "data": data }))
    };
    // A call whose result must be an error (a hook's refusal).
    let refused = |name: &str, input: Value| {
        let mut turn = call(name.into(), input);
        turn["expect_error"] = json!(true);
        turn
    };
    let loaded: Vec<String> = [
        "start_session",
        "submit_phase",
        "get_symbols",
        "search_text",
        "review_changes",
        "check_write_target",
    ]
    .iter()
    .map(|t| mcp(t))
    .collect();
    vec![
        // MCP tools are deferred in 2.1.x: the model loads their schemas first.
        (
            "ToolSearch",
            call(
                "ToolSearch".into(),
                json!({"query": format!("select:{}", loaded.join(",")), "max_results": 10}),
            ),
        ),
        (
            "start_session",
            call(
                mcp("start_session"),
                json!({"query": REQUEST, "intent": "IMPLEMENT", "flags": "--no-doc"}),
            ),
        ),
        (
            "submit QUERY_FRAME",
            submit(
                json!({"target_feature": {"value": "export command", "quote": "the export command"},
                      "desired_action": {"value": "add --json", "quote": "add a --json flag"},
                      "trigger_condition": null, "observed_issue": null, "tools_used": [], "summary": "frame"}),
            ),
        ),
        (
            "get_symbols",
            call(mcp("get_symbols"), json!({"file_path": "app.py"})),
        ),
        (
            "search_text",
            call(mcp("search_text"), json!({"patterns": ["def main"]})),
        ),
        // A shell command that writes before implementation: the hook must refuse it.
        (
            "Bash write",
            refused(
                "Bash",
                json!({"command": SHELL_WRITE, "description": "write app.py"}),
            ),
        ),
        (
            "submit EXPLORATION",
            submit(
                json!({"explored_files": ["app.py"], "findings": ["app.py:5 main prints the config"],
                      "tools_used": ["get_symbols", "search_text"], "summary": "main is the entry"}),
            ),
        ),
        (
            "submit Q1",
            submit(
                json!({"needs_more_information": false, "reason": "the code is small and clear", "tools_used": [], "summary": "q1"}),
            ),
        ),
        (
            "submit Q2",
            submit(
                json!({"has_unverified_hypotheses": false, "reason": "nothing left to verify", "tools_used": [], "summary": "q2"}),
            ),
        ),
        (
            "submit Q3",
            submit(
                json!({"needs_impact_analysis": false, "reason": "a single entry point only", "tools_used": [], "summary": "q3"}),
            ),
        ),
        (
            "submit READY_PLAN",
            submit(
                json!({"tasks": [{"id": "t1", "description": "add the flag", "status": "pending",
                                 "checklist": [{"item": "parse --json in main", "status": "pending"}]}],
                      "tools_used": [], "summary": "one task"}),
            ),
        ),
        // A file outside the explored files: the hook must refuse it.
        (
            "Write unexplored.py",
            refused(
                "Write",
                json!({"file_path": repo_dir.join("unexplored.py"), "content": "print('no')\n"}),
            ),
        ),
        // An explored file: allowed.
        (
            "check_write_target",
            call(mcp("check_write_target"), json!({"file_path": "app.py"})),
        ),
        (
            "Write app.py",
            call(
                "Write".into(),
                json!({"file_path": repo_dir.join("app.py"), "content": APP_NEW}),
            ),
        ),
        // The rest of the flow, through the commit review and the merge.
        (
            "submit READY_IMPL",
            submit(
                json!({"task_id": "t1", "checklist": [{"item": "parse --json in main", "status": "done", "evidence": "app.py:8-12"}],
                      "tools_used": ["check_write_target"], "summary": "the flag is parsed"}),
            ),
        ),
        (
            "submit READY_COMPLETE",
            submit(json!({"summary": "implemented"})),
        ),
        (
            "submit POST_IMPL_VERIFY",
            submit(
                json!({"verifier_used": "verifiers/code.md", "passed": true, "details": "ran main with --json",
                      "tools_used": [], "summary": "verified"}),
            ),
        ),
        ("review_changes", call(mcp("review_changes"), json!({}))),
        (
            "submit PRE_COMMIT",
            submit(
                json!({"review_prompt_used": "garbage_detection.md", "reviewed_files": [{"path": "app.py", "decision": "keep"}],
                      "commit_message": "Add --json to the export command", "tools_used": ["review_changes"], "summary": "reviewed"}),
            ),
        ),
        (
            "submit QUALITY_REVIEW",
            submit(
                json!({"quality_prompt_used": "quality_review.md", "quality_score": "good", "issues": [],
                      "tools_used": [], "summary": "fine"}),
            ),
        ),
        ("submit MERGE", submit(json!({"summary": "merged"}))),
        ("final", json!({"text": FINAL_TEXT})),
    ]
}

/// One `tool_result` the client sent back.
#[derive(Debug)]
struct ToolResult {
    is_error: bool,
    text: String,
}

/// The tool results of the scripted calls, by turn.
fn tool_results(requests: &[Value]) -> HashMap<usize, ToolResult> {
    let mut results = HashMap::new();
    for request in requests {
        let Some(messages) = request["body"]["messages"].as_array() else {
            continue;
        };
        for block in messages
            .iter()
            .filter(|m| m["role"] == "user")
            .filter_map(|m| m["content"].as_array())
            .flatten()
            .filter(|b| b["type"] == "tool_result")
        {
            let Some(turn) = block["tool_use_id"]
                .as_str()
                .and_then(|id| id.strip_prefix(ID_PREFIX))
                .and_then(|n| n.parse().ok())
            else {
                continue;
            };
            let text = match &block["content"] {
                Value::String(s) => s.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .map(|p| p["text"].as_str().unwrap_or_default())
                    .collect(),
                _ => String::new(),
            };
            results.insert(
                turn,
                ToolResult {
                    is_error: block["is_error"] == true,
                    text,
                },
            );
        }
    }
    results
}

#[test]
fn claude_code_runs_a_session_through_the_server_and_the_hook() {
    if let Err(e) = claude() {
        panic!("{e}");
    }
    let dirs = Dirs::new();
    crate::support::git_repo(&dirs.repo, &[("app.py", APP)]);

    // 1. code-intel init is the only configuration the client gets, and nothing of it is
    // committed: the first session must merge all the same.
    let init_out = crate::support::init_for_clients(&dirs.repo);

    // 2. The health check. Claude Code 2.1.x applies the approval in
    // .claude/settings.local.json only once the workspace is trusted; until then the
    // server is listed as pending. The exit status is 0 either way, so the text decides.
    let line = mcp_list_line(&dirs);
    assert!(
        line.contains("Pending approval"),
        "an untrusted workspace: expected the server pending approval, got: {line}"
    );
    accept_trust(&dirs);
    let line = mcp_list_line(&dirs);
    assert!(
        line.contains("✔ Connected"),
        "`claude mcp list` does not report code-intel connected: {line}"
    );

    // 3. A session driven by the scripted model.
    let steps = script(&dirs.repo.canonicalize().unwrap());
    let turns: Vec<&Value> = steps.iter().map(|(_, turn)| turn).collect();
    let script_path = dirs.base.join("script.json");
    std::fs::write(
        &script_path,
        serde_json::to_string_pretty(&json!({ "turns": turns })).unwrap(),
    )
    .unwrap();
    let record = dirs.base.join("requests.jsonl");
    let server = ModelServer::start(
        "tests/claude/model_server.py",
        &script_path,
        &record,
        &dirs.base.join("model_server.log"),
    );
    let out = run_claude(
        &dirs,
        RUN_TIMEOUT_S,
        &[
            "-p",
            &format!("/code {REQUEST}"),
            "--dangerously-skip-permissions",
        ],
        &[
            ("IS_SANDBOX", "1".into()),
            (
                "ANTHROPIC_BASE_URL",
                format!("http://127.0.0.1:{}", server.port),
            ),
            ("ANTHROPIC_API_KEY", "test".into()),
            ("MCP_CONNECTION_NONBLOCKING", "false".into()),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let context = format!(
        "claude exited with {}\nstdout:\n{stdout}\nstderr:\n{}\nmodel server log:\n{}\n(requests in {})",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(&server.log).unwrap_or_default(),
        record.display()
    );

    let requests = ModelServer::requests(&record);
    let main_loop: Vec<&Value> = requests
        .iter()
        .filter(|r| r["body"]["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .collect();
    assert!(
        !main_loop.is_empty(),
        "the client asked the model nothing\n{context}"
    );
    // With MCP_CONNECTION_NONBLOCKING=false the server is connected before the first
    // request: its tools are offered (deferred, by name) from the start.
    assert!(
        main_loop[0]["body"]
            .to_string()
            .contains("mcp__code-intel__submit_phase"),
        "the first model request does not mention code-intel's tools\n{context}"
    );
    // `/code` expanded into init's command: the model reads the flow and the request.
    let first = main_loop[0]["body"]["messages"].to_string();
    assert!(
        first.contains("start_session") && first.contains(REQUEST),
        "the first model request does not carry the /code command with the request\n{context}"
    );
    let results = tool_results(&requests);
    let result = |name: &str| {
        let turn = steps
            .iter()
            .position(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("no scripted step {name}"));
        results.get(&turn).unwrap_or_else(|| {
            panic!("no tool_result for scripted turn {turn} ({name})\n{context}")
        })
    };
    let ok = |name: &str| {
        let r = result(name);
        assert!(!r.is_error, "{name} failed: {}\n{context}", r.text);
        r
    };
    ok("ToolSearch");
    assert!(
        main_loop.last().unwrap()["body"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "mcp__code-intel__start_session"),
        "after ToolSearch the client does not offer start_session's schema\n{context}"
    );
    for (name, state) in [
        ("start_session", "QUERY_FRAME"),
        ("submit QUERY_FRAME", "EXPLORATION"),
        ("submit EXPLORATION", "Q1"),
        ("submit Q1", "Q2"),
        ("submit Q2", "Q3"),
        ("submit Q3", "READY_PLAN"),
        ("submit READY_PLAN", "READY_IMPL"),
        ("submit READY_IMPL", "READY_COMPLETE"),
        ("submit READY_COMPLETE", "POST_IMPL_VERIFY"),
        ("submit POST_IMPL_VERIFY", "PRE_COMMIT"),
        ("submit PRE_COMMIT", "QUALITY_REVIEW"),
        ("submit QUALITY_REVIEW", "MERGE"),
        ("submit MERGE", "SESSION_COMPLETE"),
    ] {
        let r = ok(name);
        let body: Value = serde_json::from_str(&r.text)
            .unwrap_or_else(|e| panic!("{name}: not JSON ({e}): {}", r.text));
        assert_eq!(body["state"], state, "{name}: {}", r.text);
    }
    ok("get_symbols");
    ok("search_text");

    // The Bash hook: a command that writes before implementation is refused, and the file
    // stays as it was (the exploration it was written in was accepted after it).
    let shell = result("Bash write");
    assert!(
        shell.is_error && shell.text.contains("hook") && shell.text.contains("app.py"),
        "`{SHELL_WRITE}` was not refused by the hook: {shell:?}\n{context}"
    );

    // The hook: a file outside the explored files is refused, an explored one is written.
    // (Depends on `code-intel hook claude`.)
    let denied = result("Write unexplored.py");
    assert!(
        denied.is_error
            && denied.text.contains("hook")
            && denied.text.contains("unexplored.py")
            && denied.text.contains("add_explored_files"),
        "the write to unexplored.py was not refused by the hook with the contract's reason: {denied:?}\n{context}"
    );
    assert!(
        !dirs.repo.join("unexplored.py").exists(),
        "unexplored.py was written despite the refusal\n{context}"
    );
    ok("Write app.py");
    assert_eq!(
        std::fs::read_to_string(dirs.repo.join("app.py")).unwrap(),
        APP_NEW,
        "app.py does not have the new content\n{context}"
    );
    assert!(stdout.contains(FINAL_TEXT), "no final answer\n{context}");

    // The review listed exactly the task's file: init's uncommitted files are left alone.
    let review: Value = serde_json::from_str(&ok("review_changes").text).unwrap();
    let listed: Vec<&str> = review["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["path"].as_str())
        .collect();
    assert_eq!(
        listed,
        vec!["app.py"],
        "review_changes: {review}\n{context}"
    );

    // The session merged its branch into main: one commit holding app.py only, init's
    // files still uncommitted beside it, the personal settings file ignored.
    let repository = git2::Repository::open(&dirs.repo).unwrap();
    let head = repository.head().unwrap();
    assert_eq!(head.shorthand(), Ok("main"), "not back on main\n{context}");
    let commit = head.peel_to_commit().unwrap();
    assert_eq!(
        commit.summary().ok().flatten(),
        Some("Add --json to the export command")
    );
    let parent = commit.parent(0).unwrap();
    let diff = repository
        .diff_tree_to_tree(
            Some(&parent.tree().unwrap()),
            Some(&commit.tree().unwrap()),
            None,
        )
        .unwrap();
    let committed: Vec<String> = diff
        .deltas()
        .filter_map(|d| d.new_file().path().map(|p| p.display().to_string()))
        .collect();
    assert_eq!(committed, vec!["app.py"], "{context}");
    let mut options = git2::StatusOptions::new();
    options.include_untracked(true);
    let untracked: Vec<String> = repository
        .statuses(Some(&mut options))
        .unwrap()
        .iter()
        .filter_map(|e| e.path().ok().map(str::to_string))
        .collect();
    assert_eq!(
        untracked,
        vec![".claude/", ".code-intel/", ".codex/", ".mcp.json"],
        "{context}"
    );
    assert!(
        repository
            .is_path_ignored(".claude/settings.local.json")
            .unwrap()
    );
    assert!(
        repository
            .find_branch("llm_task_", git2::BranchType::Local)
            .is_err()
            && repository
                .branches(Some(git2::BranchType::Local))
                .unwrap()
                .all(|b| !b
                    .unwrap()
                    .0
                    .name()
                    .unwrap()
                    .unwrap()
                    .starts_with("llm_task_")),
        "the task branch is left\n{context}"
    );

    // Registration as init printed it, for one user only, works right after init.
    let line = init_out
        .lines()
        .find_map(|l| l.trim().strip_prefix("or, for you only:"))
        .unwrap_or_else(|| panic!("init printed no registration line:\n{init_out}"))
        .trim();
    let args: Vec<&str> = line.split(' ').collect();
    assert_eq!(&args[..2], ["claude", "mcp"], "{line}");
    let out = run_claude(&dirs, MCP_LIST_TIMEOUT_S, &args[1..], &[]);
    assert!(
        out.status.success(),
        "`{line}` failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = mcp_list_line(&dirs);
    assert!(listed.contains("✔ Connected"), "after `{line}`: {listed}");

    drop(server);
}
