//! Nothing is acknowledged that is not saved: a call whose checkpoint cannot be written
//! is refused and changes nothing, input is bounded where it arrives, and the stdio
//! transport answers every malformed line. Through `Server::call` in real git
//! repositories, and through the real binary (`code-intel serve`) over stdio.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use code_intel::server::Server;
use code_intel::server::{Checkpoints, EXPLORED_BUDGET, MAX_CHECKPOINT_BYTES, SealKey};
use serde_json::{Map, Value, json};

use crate::support::SessionRepo;

const KEY: [u8; 32] = [9; 32];

/// The session repository of these tests, with their key and files.
struct Repo(SessionRepo);

impl std::ops::Deref for Repo {
    type Target = SessionRepo;

    fn deref(&self) -> &SessionRepo {
        &self.0
    }
}

impl Repo {
    fn new(name: &str) -> Repo {
        let files = [
            (
                "app.py",
                "def parse_config(path):\n    return open(path).read()\n\n\ndef main():\n    print(parse_config(\"x\"))\n",
            ),
            ("other.py", "x = 1\n"),
            ("README.md", "# demo\n"),
        ];
        Repo(SessionRepo::new(
            &format!("code-intel-saving-{name}"),
            KEY,
            &files,
        ))
    }

    fn checkpoints(&self) -> Checkpoints {
        Checkpoints::new(&self.root, SealKey::from_bytes(KEY))
    }

    /// Makes the session's checkpoint unwritable whoever runs the test (root too): its
    /// path becomes a directory that is not empty, so the rename onto it fails.
    fn break_checkpoint(&self, id: &str) {
        let path = self.checkpoints().path_of(id);
        let _ = std::fs::remove_file(&path);
        std::fs::create_dir_all(path.join("in-the-way")).unwrap();
    }

    /// Undoes [`Repo::break_checkpoint`], putting back the checkpoint as it was.
    fn mend_checkpoint(&self, id: &str, saved: &[u8]) {
        let path = self.checkpoints().path_of(id);
        std::fs::remove_dir_all(&path).unwrap();
        std::fs::write(&path, saved).unwrap();
    }

    /// Whether the write hook (`code-intel hook claude`, as Claude Code runs it before
    /// a `Write`) refuses a write to `path`.
    fn hook_denies(&self, path: &str) -> bool {
        let input = json!({
            "session_id": "abc", "transcript_path": "/tmp/t.jsonl",
            "cwd": self.root, "permission_mode": "default",
            "hook_event_name": "PreToolUse", "tool_name": "Write",
            "tool_input": {"file_path": self.root.join(path), "content": "x = 2\n"},
            "tool_use_id": "toolu_1",
        });
        let mut child = crate::support::code_intel()
            .args(["hook", "claude"])
            .current_dir(&self.root)
            .env("CODE_INTEL_STATE_DIR", &self.state)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input.to_string().as_bytes()).unwrap();
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap().contains("\"deny\"")
    }

    fn saved(&self, id: &str) -> Vec<u8> {
        std::fs::read(self.checkpoints().path_of(id)).unwrap()
    }
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

fn call(server: &Server, tool: &str, a: Value) -> Value {
    let reply = server.call(tool, args(a));
    assert!(!reply.is_error, "{tool}: {}", reply.body);
    reply.body
}

fn refused(server: &Server, tool: &str, a: Value) -> Value {
    let reply = server.call(tool, args(a));
    assert!(reply.is_error, "{tool} should be refused: {}", reply.body);
    reply.body
}

fn submit(server: &Server, data: Value) -> Value {
    call(server, "submit_phase", json!({"data": data}))
}

fn state(server: &Server) -> String {
    call(server, "get_session_status", json!({}))["state"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Starts a session and drives it to EXPLORATION; returns the session id.
fn to_exploration(server: &Server) -> String {
    let started = call(
        server,
        "start_session",
        json!({"query": "add a --json flag to the export command", "flags": "--no-doc --no-quality"}),
    );
    submit(
        server,
        json!({"target_feature": {"value": "export command", "quote": "the export command"}, "desired_action": {"value": "add --json", "quote": "add a --json flag"}, "tools_used": [], "summary": "frame", "compaction_count": 0}),
    );
    assert_eq!(state(server), "EXPLORATION");
    started["session_id"].as_str().unwrap().to_string()
}

/// From EXPLORATION to READY_IMPL with `app.py` explored.
fn to_implementation(server: &Server) {
    call(server, "get_symbols", json!({"file_path": "app.py"}));
    call(server, "search_text", json!({"patterns": ["def main"]}));
    for data in [
        json!({"explored_files": ["app.py"], "findings": ["app.py:5 main prints the config"], "tools_used": ["get_symbols", "search_text"], "summary": "main is the entry", "compaction_count": 0}),
        json!({"needs_more_information": false, "reason": "the code is small and clear", "tools_used": [], "summary": "q1", "compaction_count": 0}),
        json!({"has_unverified_hypotheses": false, "reason": "nothing left to verify", "tools_used": [], "summary": "q2", "compaction_count": 0}),
        json!({"needs_impact_analysis": false, "reason": "a single entry point only", "tools_used": [], "summary": "q3", "compaction_count": 0}),
        json!({"tasks": [{"id": "t1", "description": "add the flag", "status": "pending", "checklist": [{"item": "parse --json in main", "status": "pending"}]}], "tools_used": [], "summary": "one task", "compaction_count": 0}),
    ] {
        submit(server, data);
    }
    assert_eq!(state(server), "READY_IMPL");
}

#[test]
fn a_tool_call_that_cannot_be_saved_is_refused_and_changes_nothing() {
    let repo = Repo::new("gated");
    let server = repo.server();
    let id = to_exploration(&server);
    let before = call(&server, "get_session_status", json!({}));
    let saved = repo.saved(&id);
    repo.break_checkpoint(&id);
    let body = refused(&server, "search_text", json!({"patterns": ["def main"]}));
    assert_eq!(body["error"], "checkpoint.io", "{body}");
    assert_eq!(body["saved"], false);
    // Not counted as called, nothing seen: the session is as it was.
    assert_eq!(call(&server, "get_session_status", json!({})), before);
    repo.mend_checkpoint(&id, &saved);
    call(&server, "search_text", json!({"patterns": ["def main"]}));
    let status = call(&server, "get_session_status", json!({}));
    assert_eq!(status["tools_called"], json!(["search_text"]));
    // Memory and disk agree.
    let on_disk = repo.checkpoints().load(&id).unwrap().unwrap();
    assert_eq!(on_disk.tools_called, vec!["search_text".to_string()]);
    assert!(on_disk.host.seen_paths.contains("app.py"));
}

#[test]
fn a_step_that_cannot_be_saved_is_not_taken() {
    let repo = Repo::new("submit");
    let server = repo.server();
    let id = to_exploration(&server);
    call(&server, "get_symbols", json!({"file_path": "app.py"}));
    call(&server, "search_text", json!({"patterns": ["def main"]}));
    let saved = repo.saved(&id);
    repo.break_checkpoint(&id);
    let payload = json!({"data": {"explored_files": ["app.py"], "findings": ["app.py:5 main prints the config"], "tools_used": ["get_symbols", "search_text"], "summary": "main is the entry", "compaction_count": 0}});
    let body = refused(&server, "submit_phase", payload.clone());
    assert_eq!(body["error"], "checkpoint.io", "{body}");
    assert_eq!(body["state"], "EXPLORATION", "{body}");
    let status = call(&server, "get_session_status", json!({}));
    assert_eq!(status["state"], "EXPLORATION");
    assert_eq!(status["explored_files"], json!([]));
    assert_eq!(
        status["tools_called"],
        json!(["get_symbols", "search_text"])
    );
    // Once the checkpoint can be written, the same submission goes through.
    repo.mend_checkpoint(&id, &saved);
    call(&server, "submit_phase", payload);
    assert_eq!(state(&server), "Q1");
    let on_disk = repo.checkpoints().load(&id).unwrap().unwrap();
    assert_eq!(on_disk.instance.state, "Q1");
}

#[test]
fn a_control_tool_that_cannot_be_saved_is_refused_and_changes_nothing() {
    let repo = Repo::new("control");
    let server = repo.server();
    let id = to_exploration(&server);
    to_implementation(&server);
    call(&server, "search_text", json!({"patterns": ["x = 1"]}));
    let saved = repo.saved(&id);
    repo.break_checkpoint(&id);
    let body = refused(
        &server,
        "add_explored_files",
        json!({"files": ["other.py"]}),
    );
    assert_eq!(body["error"], "checkpoint.io", "{body}");
    repo.mend_checkpoint(&id, &saved);
    // Memory did not move ahead of the disk: the server and the write hook (which reads
    // the checkpoint) both still refuse the write.
    let body = refused(
        &server,
        "check_write_target",
        json!({"file_path": "other.py"}),
    );
    assert_eq!(body["error"], "write_blocked", "{body}");
    assert!(repo.hook_denies("other.py"));
    call(
        &server,
        "add_explored_files",
        json!({"files": ["other.py"]}),
    );
    let allowed = call(
        &server,
        "check_write_target",
        json!({"file_path": "other.py"}),
    );
    assert_eq!(allowed["allowed"], true);
    assert!(!repo.hook_denies("other.py"));
    let on_disk = repo.checkpoints().load(&id).unwrap().unwrap();
    assert!(on_disk.host.explored.contains("other.py"));
}

#[test]
fn thousands_of_explored_files_are_refused_where_they_arrive_and_memory_matches_disk() {
    let repo = Repo::new("budget");
    let server = repo.server();
    let id = to_exploration(&server);
    to_implementation(&server);
    // One call naming thousands of files.
    let many: Vec<String> = (0..5001).map(|i| format!("new/f{i}.py")).collect();
    let body = refused(&server, "add_explored_files", json!({"files": many}));
    assert_eq!(body["error"], "arguments.too_large", "{body}");
    let body = refused(
        &server,
        "add_explored_files",
        json!({"files": &many[..1000]}),
    );
    assert_eq!(body["error"], "explored.too_many_files", "{body}");
    assert_eq!(body["limit"], 256, "{body}");
    // A path no file system has.
    let body = refused(
        &server,
        "add_explored_files",
        json!({"files": ["a/".repeat(600)]}),
    );
    assert_eq!(body["error"], "explored.path_too_long", "{body}");
    // Many calls of new files: accepted until the budget, then refused naming it; the
    // checkpoint holds exactly what the server enforces after every call.
    let mut refusal = None;
    for batch in 0..40_usize {
        let files: Vec<String> = (0..200)
            .map(|i| format!("src/generated/module_{batch:02}/file_{i:03}.py"))
            .collect();
        let reply = server.call("add_explored_files", args(json!({"files": files})));
        let status = call(&server, "get_session_status", json!({}));
        let on_disk = repo.checkpoints().load(&id).unwrap().unwrap();
        let explored: Vec<String> = on_disk.host.explored.iter().cloned().collect();
        assert_eq!(status["explored_files"], json!(explored));
        if reply.is_error {
            refusal = Some((batch, reply.body));
            break;
        }
    }
    let (last, refusal) = refusal.expect("the explored budget is reached");
    assert_eq!(refusal["error"], "explored.budget_exceeded", "{refusal}");
    assert_eq!(refusal["limit"], EXPLORED_BUDGET);
    let path = repo.checkpoints().path_of(&id);
    assert!(std::fs::metadata(&path).unwrap().len() as usize <= MAX_CHECKPOINT_BYTES);
    // The accepted files are writable, those of the refused batch are not, here and
    // after a restart.
    let accepted = "src/generated/module_00/file_000.py";
    let blocked = format!("src/generated/module_{last:02}/file_000.py");
    assert_eq!(
        call(
            &server,
            "check_write_target",
            json!({"file_path": accepted})
        )["allowed"],
        true
    );
    let body = refused(&server, "check_write_target", json!({"file_path": blocked}));
    assert_eq!(body["error"], "write_blocked", "{body}");
    let status = call(&server, "get_session_status", json!({}));
    drop(server);
    let server = repo.server();
    let resumed = call(&server, "get_session_status", json!({}));
    assert_eq!(resumed["explored_files"], status["explored_files"]);
}

#[test]
fn an_outcome_that_cannot_end_the_session_is_refused() {
    let repo = Repo::new("outcome");
    let server = repo.server();
    let id = to_exploration(&server);
    let saved = repo.saved(&id);
    repo.break_checkpoint(&id);
    let body = refused(&server, "record_outcome", json!({"outcome": "aborted"}));
    assert!(
        body["error"].as_str().unwrap().starts_with("checkpoint."),
        "{body}"
    );
    // Still running, in memory as on disk.
    assert_eq!(state(&server), "EXPLORATION");
    repo.mend_checkpoint(&id, &saved);
    call(&server, "record_outcome", json!({"outcome": "aborted"}));
    assert!(!repo.checkpoints().path_of(&id).exists());
}

#[test]
fn a_session_that_cannot_be_saved_is_not_started() {
    let repo = Repo::new("start");
    let server = repo.server();
    // The user's uncommitted work is recorded with the session (each path and the hash
    // of its content): thousands of files do not fit in a checkpoint.
    for i in 0..3000 {
        let path = repo.root.join(format!(
            "scratch/notes_{:02}/draft_number_{i:05}.txt",
            i % 30
        ));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "draft\n").unwrap();
    }
    let body = refused(
        &server,
        "start_session",
        json!({"query": "add a --json flag", "flags": "--no-doc"}),
    );
    assert_eq!(body["error"], "checkpoint.too_large", "{body}");
    assert_eq!(body["saved"], false);
    // Not started: no checkpoint and no pointer that a restart or the write hook would
    // take for a session.
    assert_eq!(repo.checkpoints().all_ids(), Vec::<String>::new());
    assert_eq!(repo.checkpoints().current().unwrap(), None);
    let body = refused(&server, "get_session_status", json!({}));
    assert_eq!(body["error"], "session.no_active_session", "{body}");
}

#[test]
fn temp_files_of_killed_checkpoint_writes_are_removed_at_start() {
    let repo = Repo::new("temps");
    let sessions = repo.root.join(".code-intel/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    // A process id no process has (beyond Linux's pid_max).
    let dead = 4_194_400;
    assert!(!Path::new(&format!("/proc/{dead}")).exists());
    let id = "0123456789abcdef0123456789abcdef";
    let stale = [
        format!("{id}.json.tmp-{dead}-0-123456789"),
        format!("current.json.tmp-{dead}-3-42"),
    ];
    let kept = [
        // A write of this very process may be under way.
        format!("{id}.json.tmp-{}-0-1", std::process::id()),
        // Not a temp name of ours.
        "notes.tmp-x".to_string(),
        format!("{id}.reads"),
    ];
    for name in stale.iter().chain(&kept) {
        std::fs::write(sessions.join(name), "{").unwrap();
    }
    let _server = repo.server();
    for name in &stale {
        assert!(!sessions.join(name).exists(), "{name} should be removed");
    }
    for name in &kept {
        assert!(sessions.join(name).exists(), "{name} should be kept");
    }
}

#[test]
fn inputs_are_bounded_before_any_work() {
    let repo = Repo::new("inputs");
    let server = repo.server();
    // A megabyte question is refused at once (it used to take seconds and hundreds of
    // megabytes: a regex is compiled from it).
    let started = Instant::now();
    let body = refused(&server, "query", json!({"question": "a".repeat(4 << 20)}));
    assert_eq!(body["error"], "arguments.too_large", "{body}");
    assert_eq!(body["field"], "question");
    assert_eq!(body["limit"], 4096);
    assert!(started.elapsed() < Duration::from_secs(2));
    let body = refused(
        &server,
        "search_text",
        json!({"patterns": ["x", "b".repeat(5000)]}),
    );
    assert_eq!(body["error"], "arguments.too_large", "{body}");
    // Each pattern within its limit, all of them together not.
    let body = refused(
        &server,
        "search_text",
        json!({"patterns": vec!["c".repeat(3000); 8], "ignore_case": true}),
    );
    assert_eq!(body["error"], "arguments.too_large", "{body}");
    assert_eq!(body["limit"], 16 * 1024, "{body}");
    let body = refused(
        &server,
        "search_files",
        json!({"globs": vec!["*.py"; 1001]}),
    );
    assert_eq!(body["error"], "arguments.too_large", "{body}");
    let body = refused(
        &server,
        "find_definitions",
        json!({"name": "n".repeat(20_000)}),
    );
    assert_eq!(body["error"], "arguments.too_large", "{body}");
    let body = refused(
        &server,
        "start_session",
        json!({"query": "q".repeat(40_000)}),
    );
    assert_eq!(body["error"], "session.request_too_long", "{body}");
    // Ordinary sizes still work.
    call(
        &server,
        "query",
        json!({"question": "where is parse_config defined"}),
    );
}

#[test]
fn a_null_limit_is_the_default_and_zero_is_refused() {
    let repo = Repo::new("limit");
    let server = repo.server();
    let all = call(
        &server,
        "search_files",
        json!({"globs": ["*"], "limit": null}),
    );
    assert_eq!(all["returned"], 3, "{all}");
    assert_eq!(all["truncated"], false, "{all}");
    let body = refused(&server, "search_files", json!({"globs": ["*"], "limit": 0}));
    assert_eq!(body["error"], "invalid_arguments", "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("limit"),
        "{body}"
    );
    let text = call(
        &server,
        "search_text",
        json!({"patterns": ["parse_config"], "limit": null}),
    );
    assert_eq!(text["truncated"], false, "{text}");
    assert_eq!(text["returned"], 2, "{text}");
}

/// `code-intel serve` over pipes, its replies read on a thread so that a missing reply
/// is a timeout, not a hung test.
struct Serve {
    child: Child,
    stdin: ChildStdin,
    replies: mpsc::Receiver<Value>,
}

impl Serve {
    fn start(repo: &Repo) -> Serve {
        let mut child = crate::support::code_intel()
            .args(["serve", "--root"])
            .arg(&repo.root)
            .env("CODE_INTEL_STATE_DIR", &repo.state)
            .env("CODE_INTEL_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (send, replies) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line}"));
                if send.send(value).is_err() {
                    break;
                }
            }
        });
        let mut serve = Serve {
            child,
            stdin,
            replies,
        };
        serve.send(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#);
        assert_eq!(serve.reply()["id"], 0);
        serve.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        serve
    }

    fn send(&mut self, line: &[u8]) {
        self.stdin.write_all(line).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    fn reply(&self) -> Value {
        self.replies
            .recv_timeout(Duration::from_secs(30))
            .expect("the server answers within 30 s")
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn malformed_json_rpc_over_stdio_gets_an_error_and_the_stream_stays_usable() {
    let repo = Repo::new("stdio");
    let mut serve = Serve::start(&repo);
    serve.send(b"{not json");
    let reply = serve.reply();
    assert_eq!(reply["id"], Value::Null, "{reply}");
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    // Nested deeper than any reader takes: a parse error, answered to its request.
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"query","arguments":{}1{}}}}}"#,
        r#"{"a":"#.repeat(130),
        "}".repeat(130)
    );
    serve.send(deep.as_bytes());
    let reply = serve.reply();
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    assert_eq!(reply["id"], 5, "{reply}");
    let deep_array = format!("{}{}", "[".repeat(200), "]".repeat(200));
    serve.send(deep_array.as_bytes());
    assert_eq!(serve.reply()["error"]["code"], -32700);
    // JSON that is not a message.
    serve.send(br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":7}"#);
    let reply = serve.reply();
    assert_eq!(
        (reply["id"].clone(), reply["error"]["code"].clone()),
        (json!(6), json!(-32600)),
        "{reply}"
    );
    // A line over the limit, its id at the end (as Python's client writes it).
    let long = format!(
        r#"{{"method":"tools/call","params":{{"name":"search_text","arguments":{{"patterns":["{}"]}}}},"jsonrpc":"2.0","id":7}}"#,
        "a".repeat(5 << 20)
    );
    serve.send(long.as_bytes());
    let reply = serve.reply();
    assert_eq!(
        (reply["id"].clone(), reply["error"]["code"].clone()),
        (json!(7), json!(-32600)),
        "{reply}"
    );
    // Still serving.
    serve.send(br#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#);
    assert_eq!(
        serve.reply(),
        json!({"jsonrpc": "2.0", "id": 8, "result": {}})
    );
    serve.send(br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"search_files","arguments":{"globs":["*.py"],"limit":null}}}"#);
    let reply = serve.reply();
    assert_eq!(
        reply["result"]["structuredContent"]["returned"], 2,
        "{reply}"
    );
}
