//! The real Codex CLI end to end, offline: `code-intel init` sets up a fresh git
//! repository (nothing else configures the client's view of the project), `codex mcp
//! list` must list the server once the project is trusted, and `codex exec '$code …'`
//! (init's skill, which must reach the model naming the tools as Codex does) runs a
//! scripted model (`tests/codex/model_server.py`, a loopback Responses API) through a
//! session: `start_session`, the phases up to implementation under Codex's own names for
//! the server's tools, then an `apply_patch` the hook must refuse and one it must let
//! through; a shell command that writes before implementation is refused too. The
//! assertions read what the client sent back to the model (the recorded
//! `function_call_output` / `custom_tool_call_output` items) and the repository.
//!
//! What the test gives Codex besides `init`'s files, all in a temporary `CODEX_HOME`, is
//! what a user has or does once: the model provider (the scripted server, no login), the
//! project marked trusted (`[projects."<repo>"] trust_level = "trusted"`, what answering
//! Codex's trust question writes; untrusted, the project's `.codex/config.toml` is not
//! read at all), and the review of the project's hook: Codex runs a project hook only
//! when the user config holds `[hooks.state."<key>"] trusted_hash` equal to the hook's
//! current hash, which `/hooks` writes after the user reviews it. The test asks Codex for
//! the key and hash (`hooks/list` of `codex app-server`, what `/hooks` shows) and writes
//! that entry, so the hook runs as it would for a user who trusted it, not through
//! `--dangerously-bypass-hook-trust`.
//!
//! Codex comes from `tests/codex/node_modules` (`@openai/codex` pinned by its
//! `package-lock.json`; the platform binary is an optional dependency of that package,
//! nothing is downloaded at run time); when it is missing the test installs it as
//! `.ci/run` does (`npm ci --prefix tests/codex`) and fails with the reason if that fails.
//! `HOME` and `CODEX_HOME` are temporary directories, so the user's configuration is
//! neither read nor touched.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{ModelServer, Reaped, TempDir, binary};

/// Upper bounds, so a stuck client fails the test instead of hanging it.
const MCP_LIST_TIMEOUT_S: u32 = 60;
const APP_SERVER_TIMEOUT: Duration = Duration::from_secs(60);
const RUN_TIMEOUT_S: u32 = 180;
/// The user's request (`start_session` quotes are checked against it).
const REQUEST: &str = "add a --json flag to the export command";
const APP: &str = "def parse_config(path):\n    return open(path).read()\n\n\ndef main():\n    print(parse_config(\"x\"))\n";
/// The line the allowed patch replaces, and its replacement.
const APP_OLD_LINE: &str = "    print(parse_config(\"x\"))\n";
const APP_NEW_LINE: &str =
    "    print(parse_config(\"x\"), \"--json\" in __import__(\"sys\").argv)\n";
/// A shell command that plainly writes an explored file.
const SHELL_WRITE: &str = "echo x > app.py";
const FINAL_TEXT: &str = "Scripted run finished.";
/// Call ids the model server gives turn N: `call_scripted_NNN`.
const ID_PREFIX: &str = "call_scripted_";
/// The model Codex is told to use: a slug of the pinned version's bundled model catalog,
/// so its metadata (the `apply_patch` and `exec_command` tools) applies; the requests go
/// to the scripted server all the same.
const MODEL: &str = "gpt-5.5";
/// Codex's name for the server `code-intel`: the Responses namespace of its tools, and the
/// prefix of their names in hook inputs (`mcp__code_intel__start_session`).
const NAMESPACE: &str = "mcp__code_intel";

/// The `codex` executable, installed by `npm ci --prefix tests/codex` when missing.
fn codex() -> &'static Result<PathBuf, String> {
    static CODEX: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    CODEX.get_or_init(|| {
        crate::support::npm_package("codex", ".bin/codex")
            .map_err(|e| format!("Codex is not installed: {e}"))
    })
}

/// The test's directories, all under `base`, removed when the test ends, pass or fail.
struct Dirs {
    base: TempDir,
    repo: PathBuf,
    home: PathBuf,
    codex_home: PathBuf,
    state: PathBuf,
}

impl Dirs {
    fn new() -> Dirs {
        let base = TempDir::claim(&format!("code-intel-codex-{}", std::process::id()));
        let dirs = Dirs {
            repo: base.join("repo"),
            home: base.join("home"),
            codex_home: base.join("codex-home"),
            state: base.join("state"),
            base,
        };
        for d in [&dirs.repo, &dirs.home, &dirs.codex_home, &dirs.state] {
            std::fs::create_dir_all(d).unwrap();
        }
        dirs
    }
}

/// What the user configuration in the temporary `CODEX_HOME` says.
struct UserConfig {
    port: u16,
    trusted: bool,
    /// `hooks.state` entries: (key, trusted hash).
    trusted_hooks: Vec<(String, String)>,
}

impl UserConfig {
    fn write(&self, dirs: &Dirs) {
        let mut text = format!(
            "model = {model}\nmodel_provider = \"scripted\"\ncheck_for_update_on_startup = false\n\n\
             [analytics]\nenabled = false\n\n\
             [model_providers.scripted]\nname = \"scripted model (tests/codex/model_server.py)\"\n\
             base_url = {url}\nwire_api = \"responses\"\nrequest_max_retries = 0\n\
             stream_max_retries = 0\nstream_idle_timeout_ms = 60000\n",
            model = toml_string(MODEL),
            url = toml_string(&format!("http://127.0.0.1:{}/v1", self.port)),
        );
        if self.trusted {
            let repo = dirs.repo.canonicalize().unwrap();
            text.push_str(&format!(
                "\n[projects.{}]\ntrust_level = \"trusted\"\n",
                toml_string(&repo.to_string_lossy())
            ));
        }
        for (key, hash) in &self.trusted_hooks {
            text.push_str(&format!(
                "\n[hooks.state.{}]\ntrusted_hash = {}\n",
                toml_string(key),
                toml_string(hash)
            ));
        }
        std::fs::write(dirs.codex_home.join("config.toml"), text).unwrap();
    }
}

/// A TOML basic string (JSON's escapes are TOML's for what these values hold).
fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// The client's environment: the temporary `HOME` and `CODEX_HOME`, nothing of the
/// caller's but `PATH`.
fn codex_command(dirs: &Dirs, program: &Path) -> Command {
    let mut cmd = crate::sealed::command(program);
    cmd.current_dir(&dirs.repo)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &dirs.home)
        .env("CODEX_HOME", &dirs.codex_home)
        .env("CODE_INTEL_STATE_DIR", &dirs.state)
        .env("CODE_INTEL_LOG", "warn");
    cmd
}

/// `codex ARGS` in the repository under `timeout`.
fn run_codex(dirs: &Dirs, seconds: u32, args: &[&str]) -> Output {
    let exe = codex().as_ref().unwrap_or_else(|e| panic!("{e}"));
    // timeout signals the whole process group: the client, its MCP server and hooks.
    let mut cmd = codex_command(dirs, Path::new("timeout"));
    cmd.args(["--kill-after=10", &seconds.to_string()])
        .arg(exe)
        .args(args)
        .stdin(Stdio::null());
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
    assert_ne!(
        out.status.code(),
        Some(124),
        "codex {args:?} did not finish within {seconds} s and was killed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The servers `codex mcp list --json` reports.
fn mcp_list(dirs: &Dirs) -> Vec<Value> {
    let out = run_codex(dirs, MCP_LIST_TIMEOUT_S, &["mcp", "list", "--json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "`codex mcp list --json` failed ({}):\n{text}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(servers)) => servers,
        _ => panic!("`codex mcp list --json` printed no JSON list:\n{text}"),
    }
}

/// The hooks Codex found for the repository, as `/hooks` lists them: `codex app-server`
/// answers `hooks/list` with each hook's key, current hash and trust status.
fn hook_entries(dirs: &Dirs) -> Vec<Value> {
    let exe = codex().as_ref().unwrap_or_else(|e| panic!("{e}"));
    let mut child = codex_command(dirs, exe)
        .arg("app-server")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {} app-server: {e}", exe.display()));
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut child = Reaped(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let repo = dirs.repo.canonicalize().unwrap();
    for message in [
        json!({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "code-intel-test", "version": "1"}}}),
        json!({"method": "initialized"}),
        json!({"id": 2, "method": "hooks/list", "params": {"cwds": [repo]}}),
    ] {
        writeln!(stdin, "{message}").expect("writing to codex app-server");
    }
    let deadline = Instant::now() + APP_SERVER_TIMEOUT;
    let mut seen = Vec::new();
    let answer = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => match serde_json::from_str::<Value>(&line) {
                Ok(v) if v["id"] == 2 => break v,
                _ => seen.push(line),
            },
            Err(_) => panic!(
                "`codex app-server` did not answer hooks/list within {APP_SERVER_TIMEOUT:?}:\n{}",
                seen.join("\n")
            ),
        }
    };
    // End of input ends the server; the drop kills it if it lingers.
    drop(stdin);
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until && matches!(child.0.try_wait(), Ok(None)) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let entries = answer["result"]["data"]
        .as_array()
        .and_then(|d| {
            d.iter()
                .find(|e| e["cwd"] == repo.to_string_lossy().as_ref())
        })
        .and_then(|e| e["hooks"].as_array())
        .unwrap_or_else(|| panic!("hooks/list answered no hooks for the repository: {answer}"));
    entries.clone()
}

/// The hooks of init's `.codex/config.toml` among `entries`, `apply_patch`'s among them.
fn project_hooks(entries: &[Value], dirs: &Dirs) -> Vec<Value> {
    let config = dirs.repo.canonicalize().unwrap().join(".codex/config.toml");
    let hooks: Vec<Value> = entries
        .iter()
        .filter(|e| e["sourcePath"] == config.to_string_lossy().as_ref())
        .cloned()
        .collect();
    assert!(
        hooks
            .iter()
            .any(|e| e["eventName"] == "preToolUse" && e["matcher"] == "apply_patch"),
        "Codex does not see init's apply_patch hook in {}: {entries:?}",
        config.display()
    );
    for hook in &hooks {
        assert!(
            hook["command"]
                .as_str()
                .is_some_and(|c| c.ends_with(" hook codex")),
            "{hook}"
        );
    }
    hooks
}

/// One scripted step: a name the assertions find it by, and the model's turn.
struct Step {
    name: &'static str,
    turn: Value,
}

/// A call of one of the server's tools, as the model makes it: the function `tool` in
/// the namespace Codex gives the server. `stop_unless` ends the run early when the
/// answer lacks that text.
fn mcp(name: &'static str, tool: &str, arguments: Value, stop_unless: &str) -> Step {
    Step {
        name,
        turn: json!({"function_call": {"namespace": NAMESPACE, "name": tool, "arguments": arguments},
                     "stop_unless": stop_unless}),
    }
}

fn submit(name: &'static str, mut data: Value, next_state: &str) -> Step {
    data["compaction_count"] = json!(0);
    mcp(name, "submit_phase", json!({ "data": data }), next_state)
}

fn patch(name: &'static str, body: &str, stop_unless: &str) -> Step {
    Step {
        name,
        turn: json!({"custom_tool_call": {"name": "apply_patch",
                                          "input": format!("*** Begin Patch\n{body}*** End Patch\n")},
                     "stop_unless": stop_unless}),
    }
}

/// The model's turns: run the flow to implementation, then patch twice.
fn script() -> Vec<Step> {
    vec![
        // The model used defers MCP tools: their schemas are loaded by a search first.
        Step {
            name: "tool_search",
            turn: json!({"tool_search_call": {"query": "code-intel start_session submit_phase get_symbols search_text",
                                               "limit": 10},
                         "stop_unless": "start_session"}),
        },
        mcp(
            "start_session",
            "start_session",
            json!({"query": REQUEST, "intent": "IMPLEMENT", "flags": "--no-doc"}),
            "QUERY_FRAME",
        ),
        submit(
            "submit QUERY_FRAME",
            json!({"target_feature": {"value": "export command", "quote": "the export command"},
                   "desired_action": {"value": "add --json", "quote": "add a --json flag"},
                   "trigger_condition": null, "observed_issue": null, "tools_used": [], "summary": "frame"}),
            "EXPLORATION",
        ),
        mcp(
            "get_symbols",
            "get_symbols",
            json!({"file_path": "app.py"}),
            "parse_config",
        ),
        mcp(
            "search_text",
            "search_text",
            json!({"patterns": ["def main"]}),
            "app.py",
        ),
        // A shell command that writes before implementation: the hook must refuse it
        // (Codex's shell tool is `Bash` to hooks).
        Step {
            name: "shell write",
            turn: json!({"function_call": {"name": "exec_command", "arguments": {"cmd": SHELL_WRITE}},
                         "stop_unless": "PreToolUse hook"}),
        },
        submit(
            "submit EXPLORATION",
            json!({"explored_files": ["app.py"], "findings": ["app.py:5 main prints the config"],
                   "tools_used": ["get_symbols", "search_text"], "summary": "main is the entry"}),
            "Q1",
        ),
        submit(
            "submit Q1",
            json!({"needs_more_information": false, "reason": "the code is small and clear", "tools_used": [], "summary": "q1"}),
            "Q2",
        ),
        submit(
            "submit Q2",
            json!({"has_unverified_hypotheses": false, "reason": "nothing left to verify", "tools_used": [], "summary": "q2"}),
            "Q3",
        ),
        submit(
            "submit Q3",
            json!({"needs_impact_analysis": false, "reason": "a single entry point only", "tools_used": [], "summary": "q3"}),
            "READY_PLAN",
        ),
        submit(
            "submit READY_PLAN",
            json!({"tasks": [{"id": "t1", "description": "add the flag", "status": "pending",
                              "checklist": [{"item": "parse --json in main", "status": "pending"}]}],
                   "tools_used": [], "summary": "one task"}),
            "READY_IMPL",
        ),
        // A file outside the explored files: the hook must refuse it.
        patch(
            "patch unexplored.py",
            "*** Add File: unexplored.py\n+print('no')\n",
            "unexplored.py",
        ),
        // An explored file: allowed.
        patch(
            "patch app.py",
            &format!(
                "*** Update File: app.py\n@@ def main():\n-{}+{}",
                APP_OLD_LINE, APP_NEW_LINE
            ),
            "app.py",
        ),
        Step {
            name: "final",
            turn: json!({"text": FINAL_TEXT}),
        },
    ]
}

/// The output Codex sent back for one scripted call.
#[derive(Debug)]
struct CallOutput {
    text: String,
}

impl CallOutput {
    /// The tool's own answer: Codex puts `Wall time: …\nOutput:\n` before an MCP tool's
    /// result text.
    fn payload(&self) -> &str {
        self.text
            .split_once("Output:\n")
            .map_or(self.text.as_str(), |(_, rest)| rest)
    }

    fn json(&self) -> Value {
        serde_json::from_str(self.payload().trim())
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }
}

/// The outputs of the scripted calls in every request's history, by turn.
fn call_outputs(requests: &[Value]) -> HashMap<usize, CallOutput> {
    let mut outputs = HashMap::new();
    for item in requests
        .iter()
        .filter_map(|r| r["body"]["input"].as_array())
        .flatten()
        .filter(|i| {
            [
                "function_call_output",
                "custom_tool_call_output",
                "tool_search_output",
            ]
            .contains(&i["type"].as_str().unwrap_or_default())
        })
    {
        let Some(turn) = item["call_id"]
            .as_str()
            .and_then(|id| id.strip_prefix(ID_PREFIX))
            .and_then(|n| n.parse().ok())
        else {
            continue;
        };
        let text = match &item["output"] {
            // A tool search answers with the tools it found.
            Value::Null => item["tools"].to_string(),
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .map(|p| p["text"].as_str().unwrap_or_default())
                .collect(),
            other => other.to_string(),
        };
        outputs.insert(turn, CallOutput { text });
    }
    outputs
}

#[test]
fn codex_runs_a_session_through_the_server_and_the_hook() {
    if let Err(e) = codex() {
        panic!("{e}");
    }
    let dirs = Dirs::new();
    crate::support::git_repo(&dirs.repo, &[("app.py", APP)]);

    // 1. code-intel init is the only configuration of the project the client gets.
    crate::support::init_for_clients(&dirs.repo);

    let steps = script();
    let script_path = dirs.base.join("script.json");
    let turns: Vec<&Value> = steps.iter().map(|s| &s.turn).collect();
    std::fs::write(
        &script_path,
        serde_json::to_string_pretty(&json!({ "turns": turns })).unwrap(),
    )
    .unwrap();
    let record = dirs.base.join("requests.jsonl");
    let server = ModelServer::start(
        "tests/codex/model_server.py",
        &script_path,
        &record,
        &dirs.base.join("model_server.log"),
    );

    // 2. The health check. Codex reads a project's .codex/config.toml only once the
    // project is trusted: before, the server is not listed at all.
    let mut config = UserConfig {
        port: server.port,
        trusted: false,
        trusted_hooks: Vec::new(),
    };
    config.write(&dirs);
    let servers = mcp_list(&dirs);
    assert!(
        !servers.iter().any(|s| s["name"] == "code-intel"),
        "an untrusted project: expected no code-intel server, got {servers:?}"
    );
    config.trusted = true;
    config.write(&dirs);
    let servers = mcp_list(&dirs);
    let listed = servers
        .iter()
        .find(|s| s["name"] == "code-intel")
        .unwrap_or_else(|| panic!("`codex mcp list` lists no code-intel server: {servers:?}"));
    assert_eq!(listed["enabled"], true, "{listed}");
    assert_eq!(
        listed["transport"]["command"],
        binary().to_string_lossy().as_ref(),
        "{listed}"
    );
    assert_eq!(listed["transport"]["args"], json!(["serve"]), "{listed}");
    // The server gets the variables that place the checkpoint key, as the hook does.
    assert_eq!(
        listed["transport"]["env_vars"],
        json!([
            "CODE_INTEL_STATE_DIR",
            "XDG_STATE_HOME",
            "CODE_INTEL_CACHE_DIR",
            "XDG_CACHE_HOME",
            "CODE_INTEL_ORT_DYLIB",
            "CODE_INTEL_EMBEDDING_MODEL_PATH",
            "CODE_INTEL_EMBEDDING_URL",
            "CODE_INTEL_EMBEDDING_ENDPOINT_MODEL"
        ]),
        "{listed}"
    );

    // 3. The hook review, as /hooks does it: Codex lists init's hooks as untrusted until
    // the user config holds their current hashes.
    let hooks = project_hooks(&hook_entries(&dirs), &dirs);
    for hook in &hooks {
        assert_eq!(hook["trustStatus"], "untrusted", "{hook}");
        let key = hook["key"].as_str().unwrap().to_string();
        let hash = hook["currentHash"].as_str().unwrap().to_string();
        config.trusted_hooks.push((key, hash));
    }
    config.write(&dirs);
    for hook in project_hooks(&hook_entries(&dirs), &dirs) {
        assert_eq!(hook["trustStatus"], "trusted", "{hook}");
    }

    // 4. A session driven by the scripted model.
    // The user invokes init's skill as its description says: `$code <request>`.
    let out = run_codex(&dirs, RUN_TIMEOUT_S, &["exec", &format!("$code {REQUEST}")]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let context = format!(
        "codex exited with {}\nstdout:\n{stdout}\nstderr:\n{}\nmodel server log:\n{}\n(requests in {})",
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
    // The server is connected before the first request: its tools are offered from the
    // start, deferred, as the namespace Codex names after the server.
    let first = &main_loop[0]["body"]["input"];
    assert!(
        first.to_string().contains(NAMESPACE),
        "the first model request does not mention {NAMESPACE}\n{context}"
    );
    // `$code` put init's skill before the model, naming the tools as Codex exposes them.
    let skill = dirs
        .repo
        .canonicalize()
        .unwrap()
        .join(".codex/skills/code/SKILL.md");
    let skill_text = first
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["content"].as_array())
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .find(|t| t.starts_with("<skill>") && t.contains(skill.to_string_lossy().as_ref()))
        .unwrap_or_else(|| panic!("`$code` did not give the model init's skill\n{context}"));
    assert!(
        skill_text.contains(&format!("`{NAMESPACE}__start_session`")),
        "the skill does not name start_session as Codex exposes it: {skill_text}"
    );

    let outputs = call_outputs(&requests);
    let turn = |name: &str| {
        steps
            .iter()
            .position(|s| s.name == name)
            .unwrap_or_else(|| panic!("no scripted step {name}"))
    };
    let output = |name: &str| {
        let t = turn(name);
        outputs
            .get(&t)
            .unwrap_or_else(|| panic!("no output for scripted turn {t} ({name})\n{context}"))
    };
    // The search loads the server's tools: functions of that namespace.
    let found = output("tool_search").json();
    let loaded: Vec<&str> = found
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["type"] == "namespace" && t["name"] == NAMESPACE)
        .filter_map(|t| t["tools"].as_array())
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for tool in [
        "start_session",
        "submit_phase",
        "get_symbols",
        "search_text",
    ] {
        assert!(
            loaded.contains(&tool),
            "tool_search did not load {NAMESPACE}.{tool} (loaded: {loaded:?})\n{context}"
        );
    }
    for (name, state) in [
        ("start_session", "QUERY_FRAME"),
        ("submit QUERY_FRAME", "EXPLORATION"),
        ("submit EXPLORATION", "Q1"),
        ("submit Q1", "Q2"),
        ("submit Q2", "Q3"),
        ("submit Q3", "READY_PLAN"),
        ("submit READY_PLAN", "READY_IMPL"),
    ] {
        let body = output(name).json();
        assert_eq!(body["state"], state, "{name}: {body}\n{context}");
    }
    for name in ["get_symbols", "search_text"] {
        let o = output(name);
        assert!(
            o.json().get("error").is_none(),
            "{name} failed: {}\n{context}",
            o.text
        );
    }

    // The shell hook: a command that writes before implementation is refused, and the
    // file stays as it was (the exploration it was written in was accepted, and the patch
    // below applies to the original text).
    let shell = output("shell write");
    assert!(
        shell.text.contains("blocked by PreToolUse hook") && shell.text.contains("app.py"),
        "`{SHELL_WRITE}` was not refused by the hook: {shell:?}\n{context}"
    );

    // The hook: a file outside the explored files is refused, an explored one is patched.
    // (Depends on `code-intel hook codex`.)
    let denied = output("patch unexplored.py");
    assert!(
        denied.text.contains("PreToolUse hook")
            && denied.text.contains("unexplored.py")
            && denied.text.contains("add_explored_files"),
        "the patch of unexplored.py was not refused by the hook with the contract's reason: {denied:?}\n{context}"
    );
    assert!(
        !dirs.repo.join("unexplored.py").exists(),
        "unexplored.py was written despite the refusal\n{context}"
    );
    let allowed = output("patch app.py");
    assert!(
        allowed.text.contains("Success") && !allowed.text.contains("PreToolUse hook"),
        "the patch of app.py did not go through: {allowed:?}\n{context}"
    );
    assert_eq!(
        std::fs::read_to_string(dirs.repo.join("app.py")).unwrap(),
        APP.replace(APP_OLD_LINE, APP_NEW_LINE),
        "app.py does not have the new content\n{context}"
    );
    assert!(stdout.contains(FINAL_TEXT), "no final answer\n{context}");

    // The session moved the work onto its task branch.
    let repository = git2::Repository::open(&dirs.repo).unwrap();
    let head = repository.head().unwrap();
    let branch = head.shorthand().unwrap_or_default();
    assert!(
        branch.starts_with("llm_task_"),
        "the session is not on a task branch: {branch}\n{context}"
    );

    drop(server);
}
