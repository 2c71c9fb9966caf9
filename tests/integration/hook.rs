//! `code-intel hook claude|codex` through the real binary: recorded hook inputs of Claude
//! Code 2.1.x and Codex 0.169 fed on stdin, in temporary git repositories whose session
//! checkpoints the real server wrote (`Server::call`), sealed with a key the binary reads
//! from `CODE_INTEL_STATE_DIR`.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::Stdio;

use code_intel::server::SealKey;
use code_intel::server::Server;
use serde_json::{Map, Value, json};

use crate::support::{SessionRepo, default_contract};

const KEY: [u8; 32] = [42; 32];

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
            ("lib.py", "def helper():\n    return 1\n"),
            ("README.md", "# demo\n"),
        ];
        Repo(SessionRepo::new(
            &format!("code-intel-hook-{name}"),
            KEY,
            &files,
        ))
    }

    fn abs(&self, path: &str) -> String {
        self.root.join(path).to_string_lossy().into_owned()
    }

    /// Runs the hook binary with `stdin`; returns stdout (exit status 0 is asserted).
    fn hook(&self, client: &str, stdin: &[u8]) -> String {
        let mut child = crate::support::code_intel()
            .args(["hook", client])
            .current_dir(&self.root)
            .env("CODE_INTEL_STATE_DIR", &self.state)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "the hook must always exit 0; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn pre(&self, tool: &str, tool_input: Value) -> Option<String> {
        let input = json!({
            "session_id": "abc", "transcript_path": "/tmp/t.jsonl",
            "cwd": self.root, "permission_mode": "default",
            "hook_event_name": "PreToolUse", "tool_name": tool,
            "tool_input": tool_input, "tool_use_id": "toolu_1",
        });
        let client = if tool == "apply_patch" {
            "codex"
        } else {
            "claude"
        };
        decision(&self.hook(client, input.to_string().as_bytes()))
    }

    /// A shell command as Claude Code's `Bash` tool or Codex's shell tool (which Codex
    /// 0.169 also names `Bash` in hook input, `{"command": "..."}`) sends it.
    fn bash(&self, client: &str, command: &str) -> Option<String> {
        let input = json!({
            "session_id": "abc", "transcript_path": "/tmp/t.jsonl",
            "cwd": self.root, "permission_mode": "default",
            "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": command, "description": "run it"},
            "tool_use_id": "toolu_3",
        });
        decision(&self.hook(client, input.to_string().as_bytes()))
    }

    fn write(&self, path: &str) -> Option<String> {
        self.pre("Write", json!({"file_path": path, "content": "x = 1\n"}))
    }

    fn patch(&self, patch: &str) -> Option<String> {
        self.pre(
            "apply_patch",
            json!({"command": format!("*** Begin Patch\n{patch}*** End Patch\n")}),
        )
    }

    fn post(&self, tool: &str, tool_input: Value, tool_response: Value) {
        let input = json!({
            "session_id": "abc", "transcript_path": "/tmp/t.jsonl",
            "cwd": self.root, "permission_mode": "default",
            "hook_event_name": "PostToolUse", "tool_name": tool,
            "tool_input": tool_input, "tool_response": tool_response,
            "tool_use_id": "toolu_2",
        });
        assert_eq!(self.hook("claude", input.to_string().as_bytes()), "");
    }

    fn checkpoint(&self) -> PathBuf {
        let current: Value = serde_json::from_str(
            &std::fs::read_to_string(self.root.join(".code-intel/sessions/current.json")).unwrap(),
        )
        .unwrap();
        let id = current["session"].as_str().unwrap();
        self.root.join(format!(".code-intel/sessions/{id}.json"))
    }
}

/// `None` for an allowed call (no output), else the deny reason; any other output fails.
fn decision(stdout: &str) -> Option<String> {
    if stdout.is_empty() {
        return None;
    }
    let answer: Value = serde_json::from_str(stdout).unwrap();
    let out = &answer["hookSpecificOutput"];
    assert_eq!(out["hookEventName"], "PreToolUse", "{stdout}");
    assert_eq!(out["permissionDecision"], "deny", "{stdout}");
    let reason = out["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!reason.is_empty());
    Some(reason)
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

fn call(server: &Server, tool: &str, a: Value) -> Value {
    let reply = server.call(tool, args(a));
    assert!(!reply.is_error, "{tool}: {}", reply.body);
    reply.body
}

fn submit(server: &Server, data: Value) -> Value {
    call(server, "submit_phase", json!({"data": data}))
}

/// Starts a session: the server's checkpoint now says writes are not allowed yet.
fn start(server: &Server) {
    call(
        server,
        "start_session",
        json!({"query": "add a --json flag to main", "flags": ""}),
    );
}

/// Drives the default flow from the start to the state where the plan's task is
/// implemented, with `explored` accepted in exploration (`app.py` is shown by tools).
/// Returns the answer to the plan (which announces the task branch).
fn to_implementation(server: &Server, explored: &[&str]) -> Value {
    call(server, "search_files", json!({"globs": ["*.md"]}));
    submit(
        server,
        json!({"documents_reviewed": ["README.md"], "tools_used": ["search_files"], "summary": "no rules", "compaction_count": 0}),
    );
    submit(
        server,
        json!({"target_feature": {"value": "main", "quote": "main"}, "desired_action": {"value": "add --json", "quote": "add a --json flag"}, "trigger_condition": null, "observed_issue": null, "tools_used": [], "summary": "frame", "compaction_count": 0}),
    );
    call(server, "get_symbols", json!({"file_path": "app.py"}));
    call(server, "search_text", json!({"patterns": ["def main"]}));
    submit(
        server,
        json!({"explored_files": explored, "findings": ["app.py:5 main prints the config"], "tools_used": ["get_symbols", "search_text"], "summary": "main is the entry", "compaction_count": 0}),
    );
    submit(
        server,
        json!({"needs_more_information": false, "reason": "the code is small and clear", "tools_used": [], "summary": "q1", "compaction_count": 0}),
    );
    submit(
        server,
        json!({"has_unverified_hypotheses": false, "reason": "nothing left to verify", "tools_used": [], "summary": "q2", "compaction_count": 0}),
    );
    submit(
        server,
        json!({"needs_impact_analysis": false, "reason": "a single entry point only", "tools_used": [], "summary": "q3", "compaction_count": 0}),
    );
    let body = submit(
        server,
        json!({"tasks": [{"id": "t1", "description": "add the flag", "status": "pending", "checklist": [{"item": "parse --json in main", "status": "pending"}]}], "tools_used": [], "summary": "one task", "compaction_count": 0}),
    );
    let allowed = call(server, "check_write_target", json!({"file_path": "app.py"}));
    assert_eq!(allowed["allowed"], true, "{body}");
    body
}

#[test]
fn without_a_session_every_write_is_allowed() {
    let repo = Repo::new("none");
    assert_eq!(repo.write(&repo.abs("app.py")), None);
    assert_eq!(repo.patch("*** Add File: new.py\n+x\n"), None);
    // Tools that do not write are never gated.
    assert_eq!(repo.pre("Bash", json!({"command": "ls"})), None);
}

#[test]
fn a_write_is_judged_by_the_session_of_its_own_repository_whatever_the_cwd() {
    let repo = Repo::new("cwd");
    let server = repo.server();
    start(&server);
    // The client works elsewhere (another checkout, /tmp) and writes into the repository.
    let elsewhere = std::env::temp_dir();
    let input = json!({"hook_event_name": "PreToolUse", "tool_name": "Write", "cwd": elsewhere,
                       "tool_input": {"file_path": repo.abs("app.py"), "content": "x"}});
    let reason = decision(&repo.hook("claude", input.to_string().as_bytes())).unwrap();
    assert!(
        reason.contains("Writing files is not allowed in phase"),
        "{reason}"
    );
    // A nested git repository inside the session's repository is governed by the session.
    let nested = repo.root.join("vendor/lib");
    std::fs::create_dir_all(nested.join(".git")).unwrap();
    let input = json!({"hook_event_name": "PreToolUse", "tool_name": "Write", "cwd": nested,
                       "tool_input": {"file_path": nested.join("x.py"), "content": "x"}});
    assert!(decision(&repo.hook("claude", input.to_string().as_bytes())).is_some());
    // From inside the session's repository, a file outside it is refused.
    let input = json!({"hook_event_name": "PreToolUse", "tool_name": "Write", "cwd": repo.root,
                       "tool_input": {"file_path": elsewhere.join("code-intel-unrelated.txt"), "content": "x"}});
    let reason = decision(&repo.hook("claude", input.to_string().as_bytes())).unwrap();
    assert!(reason.contains("outside the repository"), "{reason}");
    // A file outside any session, written from outside any session, is not this hook's
    // business.
    let input = json!({"hook_event_name": "PreToolUse", "tool_name": "Write", "cwd": elsewhere,
                       "tool_input": {"file_path": elsewhere.join("code-intel-unrelated.txt"), "content": "x"}});
    assert_eq!(
        decision(&repo.hook("claude", input.to_string().as_bytes())),
        None
    );
}

#[test]
fn writes_wait_for_the_state_that_allows_them() {
    let repo = Repo::new("phase");
    let server = repo.server();
    start(&server);
    let reason = repo.write(&repo.abs("app.py")).unwrap();
    assert!(
        reason.contains("Writing files is not allowed in phase"),
        "{reason}"
    );
    let reason = repo.patch("*** Update File: app.py\n@@\n-a\n+b\n").unwrap();
    assert!(
        reason.contains("Writing files is not allowed in phase"),
        "{reason}"
    );
}

#[test]
fn in_the_implementation_only_explored_files_inside_the_root_are_written() {
    let repo = Repo::new("impl");
    let server = repo.server();
    start(&server);
    to_implementation(&server, &["app.py"]);

    assert_eq!(repo.write(&repo.abs("app.py")), None);
    assert_eq!(
        repo.pre(
            "Edit",
            json!({"file_path": repo.abs("app.py"), "old_string": "a", "new_string": "b"})
        ),
        None
    );
    assert_eq!(
        repo.pre(
            "MultiEdit",
            json!({"file_path": repo.abs("app.py"), "edits": []})
        ),
        None
    );
    let reason = repo.write(&repo.abs("lib.py")).unwrap();
    assert!(
        reason.starts_with("lib.py: This file is outside the explored files"),
        "{reason}"
    );
    let reason = repo.write(&repo.abs("src/new.py")).unwrap();
    assert!(reason.starts_with("src/new.py:"), "{reason}");

    // NotebookEdit names its file in notebook_path.
    assert_eq!(
        repo.pre(
            "NotebookEdit",
            json!({"notebook_path": repo.abs("app.py"), "new_source": "x"})
        ),
        None
    );
    let reason = repo
        .pre(
            "NotebookEdit",
            json!({"notebook_path": repo.abs("nb.ipynb"), "new_source": "x"}),
        )
        .unwrap();
    assert!(reason.starts_with("nb.ipynb:"), "{reason}");
    assert!(
        repo.pre("NotebookEdit", json!({"new_source": "x"}))
            .is_some()
    );

    // Paths that leave the root, however they do it.
    for escape in ["../x.py", "/etc/passwd", "sub/../../x.py"] {
        let reason = repo.write(escape).unwrap();
        assert!(
            reason.contains("outside the repository"),
            "{escape}: {reason}"
        );
    }
    #[cfg(unix)]
    {
        let outside = repo.state.join("outside.py");
        std::fs::write(&outside, "secret\n").unwrap();
        std::os::unix::fs::symlink(&outside, repo.root.join("link.py")).unwrap();
        std::os::unix::fs::symlink(
            repo.state.join("nothing-yet.py"),
            repo.root.join("dangling.py"),
        )
        .unwrap();
        for link in ["link.py", "dangling.py"] {
            let reason = repo.write(&repo.abs(link)).unwrap();
            assert!(
                reason.contains("outside the repository"),
                "{link}: {reason}"
            );
        }
    }

    // The session's own state is never written, even when "explored".
    for state in [
        ".code-intel/sessions/current.json",
        ".code-intel/sessions",
        ".code-intel",
    ] {
        let reason = repo.write(&repo.abs(state)).unwrap();
        assert!(reason.contains("session state"), "{state}: {reason}");
    }
    let reason = repo
        .patch("*** Add File: .code-intel/sessions/x.reads\n+{}\n")
        .unwrap();
    assert!(reason.contains("session state"), "{reason}");

    // Codex patches: every file marker counts, relative to the client's cwd.
    assert_eq!(repo.patch("*** Update File: app.py\n@@\n-a\n+b\n"), None);
    let reason = repo.patch("*** Add File: new.py\n+x\n").unwrap();
    assert!(reason.starts_with("new.py:"), "{reason}");
    let reason = repo.patch("*** Delete File: README.md\n").unwrap();
    assert!(reason.starts_with("README.md:"), "{reason}");
    let reason = repo
        .patch("*** Update File: app.py\n*** Move to: moved.py\n@@\n-a\n+b\n")
        .unwrap();
    assert!(reason.starts_with("moved.py:"), "{reason}");
    let reason = repo
        .patch("*** Update File: app.py\n@@\n*** Add File: ../out.py\n+x\n")
        .unwrap();
    assert!(
        reason.contains("../out.py is outside the repository"),
        "{reason}"
    );
    let reason = repo
        .pre("apply_patch", json!({"command": "echo no patch here"}))
        .unwrap();
    assert!(
        reason.contains("cannot tell which files this patch writes"),
        "{reason}"
    );
}

#[test]
fn a_session_the_hook_cannot_verify_refuses_every_write() {
    let repo = Repo::new("tampered");
    let server = repo.server();
    start(&server);
    to_implementation(&server, &["app.py"]);
    assert_eq!(repo.write(&repo.abs("app.py")), None);

    // The agent adds a file to the explored list by hand: the seal no longer matches.
    let path = repo.checkpoint();
    let original = std::fs::read_to_string(&path).unwrap();
    let forged = original.replace(
        "\"explored\":[\"app.py\"]",
        "\"explored\":[\"app.py\",\"lib.py\"]",
    );
    assert_ne!(forged, original);
    std::fs::write(&path, &forged).unwrap();
    let reason = repo.write(&repo.abs("lib.py")).unwrap();
    assert!(reason.contains("does not match its seal"), "{reason}");
    assert!(repo.write(&repo.abs("app.py")).is_some());

    // Another version's checkpoint.
    std::fs::write(
        &path,
        original.replacen("\"version\":1", "\"version\":99", 1),
    )
    .unwrap();
    let reason = repo.write(&repo.abs("app.py")).unwrap();
    assert!(reason.contains("checkpoint format 99"), "{reason}");

    // No key to verify with (the hook never creates one).
    std::fs::write(&path, &original).unwrap();
    assert_eq!(repo.write(&repo.abs("app.py")), None);
    std::fs::remove_file(repo.state.join("checkpoint.key")).unwrap();
    let reason = repo.write(&repo.abs("app.py")).unwrap();
    assert!(reason.contains("no checkpoint key"), "{reason}");
    assert!(!repo.state.join("checkpoint.key").exists());

    // The pointer names a checkpoint that is gone.
    let hex: String = KEY.iter().map(|b| format!("{b:02x}")).collect();
    std::fs::write(repo.state.join("checkpoint.key"), hex).unwrap();
    std::fs::remove_file(&path).unwrap();
    let reason = repo.write(&repo.abs("app.py")).unwrap();
    assert!(reason.contains("is missing"), "{reason}");
}

#[test]
fn unreadable_input_is_a_deny_with_exit_status_zero() {
    let repo = Repo::new("garbage");
    for stdin in [
        &b"garbage"[..],
        b"",
        b"[1, 2]",
        b"\xff\xfe",
        b"{\"tool_name\": ",
    ] {
        let reason = decision(&repo.hook("claude", stdin)).unwrap();
        assert!(reason.contains("cannot read the hook input"), "{reason}");
        assert!(decision(&repo.hook("codex", stdin)).is_some());
    }
}

#[test]
fn reads_recorded_by_the_hook_count_as_seen_and_forged_ones_do_not() {
    let repo = Repo::new("reads");
    let server = repo.server();
    start(&server);
    // Read by the client's own tool during exploration, never shown by a code-intel tool:
    // accepted as explored.
    repo.post(
        "Read",
        json!({"file_path": repo.abs("lib.py")}),
        json!({"type": "text", "file": {"filePath": repo.abs("lib.py"), "content": "", "numLines": 2, "startLine": 1, "totalLines": 2}}),
    );
    to_implementation(&server, &["app.py", "lib.py"]);
    assert_eq!(repo.write(&repo.abs("lib.py")), None);

    // add_explored_files: refused before the read is recorded, accepted after.
    std::fs::create_dir_all(repo.root.join("src")).unwrap();
    std::fs::write(repo.root.join("src/util.py"), "x = 1\n").unwrap();
    std::fs::write(repo.root.join("src/other.py"), "y = 2\n").unwrap();
    std::fs::write(repo.root.join("secret.py"), "z = 3\n").unwrap();
    let reply = server.call(
        "add_explored_files",
        args(json!({"files": ["src/util.py"]})),
    );
    assert!(reply.is_error, "{}", reply.body);
    // Glob answers relative to the client's cwd.
    repo.post(
        "Glob",
        json!({"pattern": "src/*.py"}),
        json!({"filenames": ["src/util.py", "src/other.py"], "durationMs": 1, "numFiles": 2, "truncated": false}),
    );
    let body = call(
        &server,
        "add_explored_files",
        json!({"files": ["src/util.py"]}),
    );
    assert_eq!(body["added"], json!(["src/util.py"]));
    assert_eq!(repo.write(&repo.abs("src/util.py")), None);

    // A line written by hand, and one sealed for another session, are ignored.
    let reads = repo.checkpoint().with_extension("reads");
    let text = std::fs::read_to_string(&reads).unwrap();
    let sealed_line = text.lines().next().unwrap().to_string();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&reads)
        .unwrap();
    writeln!(
        file,
        "{}",
        json!({"path": "secret.py", "tool": "Read", "at": 0, "seal": "00".repeat(32)})
    )
    .unwrap();
    writeln!(file, "{}", sealed_line.replace("lib.py", "secret.py")).unwrap();
    writeln!(file, "not json").unwrap();
    drop(file);
    let reply = server.call("add_explored_files", args(json!({"files": ["secret.py"]})));
    assert!(reply.is_error, "{}", reply.body);
    assert_eq!(reply.body["files"], json!(["secret.py"]));
    // The valid lines still count after the junk.
    let body = call(
        &server,
        "add_explored_files",
        json!({"files": ["src/other.py"]}),
    );
    assert_eq!(body["added"], json!(["src/other.py"]));
    // Reads outside the root are not recorded.
    repo.post("Read", json!({"file_path": "/etc/hostname"}), json!({}));
    assert!(
        !std::fs::read_to_string(&reads)
            .unwrap()
            .contains("hostname")
    );
}

#[test]
fn the_hook_never_creates_a_key_or_session_state() {
    let repo = Repo::new("nokey");
    std::fs::remove_file(repo.state.join("checkpoint.key")).unwrap();
    assert_eq!(repo.write(&repo.abs("app.py")), None);
    repo.post("Read", json!({"file_path": repo.abs("app.py")}), json!({}));
    assert!(!repo.state.join("checkpoint.key").exists());
    assert!(!repo.root.join(".code-intel/sessions").exists());
}

#[test]
fn the_hook_runs_from_a_subdirectory_and_survives_a_closed_stdout() {
    let repo = Repo::new("subdir");
    let server = repo.server();
    start(&server);
    std::fs::create_dir_all(repo.root.join("sub")).unwrap();
    let input = json!({"hook_event_name": "PreToolUse", "tool_name": "apply_patch", "cwd": repo.root.join("sub"), "tool_input": {"command": "*** Begin Patch\n*** Add File: ../app.py\n+x\n*** End Patch\n"}});
    let reason = decision(&repo.hook("codex", input.to_string().as_bytes())).unwrap();
    assert!(reason.contains("Writing files is not allowed"), "{reason}");
    // Without a cwd in the input, the process's working directory is used.
    let input = json!({"hook_event_name": "PreToolUse", "tool_name": "Write", "tool_input": {"file_path": "app.py"}});
    assert!(decision(&repo.hook("claude", input.to_string().as_bytes())).is_some());

    let mut child = crate::support::code_intel()
        .args(["hook", "claude"])
        .current_dir(&repo.root)
        .env("CODE_INTEL_STATE_DIR", &repo.state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.stdin.take().unwrap().write_all(b"garbage").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Whether `check_write_target` allows `path` (it answers an error when it does not).
fn check_allows(server: &Server, path: &str) -> bool {
    let reply = server.call("check_write_target", args(json!({"file_path": path})));
    match reply.is_error {
        false => reply.body["allowed"] == true,
        true => {
            assert_eq!(reply.body["error"], "write_blocked", "{}", reply.body);
            false
        }
    }
}

#[test]
fn git_the_state_dir_and_the_hook_settings_are_never_explored_added_or_written() {
    let repo = Repo::new("reserved");
    let server = repo.server();
    start(&server);
    // The client reads .git/config with its own tool: not recorded as a read.
    repo.post(
        "Read",
        json!({"file_path": repo.abs(".git/config")}),
        json!({"type": "text", "file": {"filePath": repo.abs(".git/config"), "content": "", "numLines": 1, "startLine": 1, "totalLines": 1}}),
    );
    let reads = repo.checkpoint().with_extension("reads");
    assert!(
        !std::fs::read_to_string(&reads)
            .unwrap_or_default()
            .contains(".git"),
        "a read in .git/ was recorded"
    );
    to_implementation(&server, &["app.py"]);
    for path in [
        ".git/config",
        ".git/hooks/pre-commit",
        "./.git/HEAD",
        ".code-intel/config.yml",
        // The settings that install the hooks: writing them could switch the hooks off.
        ".claude/settings.json",
        ".claude/settings.local.json",
        ".codex/config.toml",
        ".codex/hooks.json",
    ] {
        let reply = server.call("add_explored_files", args(json!({"files": [path]})));
        assert!(reply.is_error, "{path}: {}", reply.body);
        assert_eq!(
            reply.body["error"], "reserved_path",
            "{path}: {}",
            reply.body
        );
        assert!(!check_allows(&server, path), "{path}");
        let reason = repo.write(&repo.abs(path)).unwrap();
        assert!(reason.contains("never written by an agent"), "{reason}");
    }
    let reason = repo
        .patch("*** Add File: .git/hooks/post-checkout\n+#!/bin/sh\n")
        .unwrap();
    assert!(reason.contains(".git/hooks/post-checkout"), "{reason}");
    // Reached through a link inside the repository, .git/ is still .git/.
    std::os::unix::fs::symlink(".git/hooks", repo.root.join("hooks")).unwrap();
    assert!(repo.write(&repo.abs("hooks/pre-push")).is_some());
    assert!(!check_allows(&server, "hooks/pre-push"));
    assert!(!repo.root.join(".git/hooks/pre-push").exists());
}

#[test]
fn an_exploration_claim_in_git_is_refused() {
    let repo = Repo::new("reserved-claim");
    let server = repo.server();
    start(&server);
    call(&server, "search_files", json!({"globs": ["*.md"]}));
    submit(
        &server,
        json!({"documents_reviewed": ["README.md"], "tools_used": ["search_files"], "summary": "no rules", "compaction_count": 0}),
    );
    submit(
        &server,
        json!({"target_feature": {"value": "main", "quote": "main"}, "desired_action": {"value": "add --json", "quote": "add a --json flag"}, "trigger_condition": null, "observed_issue": null, "tools_used": [], "summary": "frame", "compaction_count": 0}),
    );
    call(&server, "get_symbols", json!({"file_path": "app.py"}));
    call(&server, "search_text", json!({"patterns": ["def main"]}));
    let reply = server.call(
        "submit_phase",
        args(json!({"data": {"explored_files": ["app.py", ".git/config"], "findings": ["app.py:5 main"], "tools_used": ["get_symbols", "search_text"], "summary": "s", "compaction_count": 0}})),
    );
    assert!(reply.is_error, "{}", reply.body);
    assert_eq!(
        reply.body["message_key"], "failures.EXPLORATION.files_reserved",
        "{}",
        reply.body
    );
}

#[test]
fn the_hook_and_check_write_target_judge_every_path_alike() {
    let repo = Repo::new("alike");
    let server = repo.server();
    start(&server);
    to_implementation(&server, &["app.py"]);
    // An alias of the root (a symlink to it) and a subdirectory to work from.
    let alias = repo.root.parent().unwrap().join("alias");
    std::os::unix::fs::symlink(&repo.root, &alias).unwrap();
    std::fs::create_dir_all(repo.root.join("sub")).unwrap();
    let aliased = alias.join("app.py").to_string_lossy().into_owned();
    let cases: [(&str, bool); 7] = [
        ("app.py", true),
        (&aliased, true),
        ("./app.py", true),
        ("app.py ", false),
        (" app.py", false),
        ("", false),
        ("lib.py", false),
    ];
    for (path, allowed) in cases {
        assert_eq!(
            check_allows(&server, path),
            allowed,
            "check_write_target {path:?}"
        );
        let input = json!({"hook_event_name": "PreToolUse", "tool_name": "Write", "cwd": repo.root,
                           "tool_input": {"file_path": path, "content": "x"}});
        let hook = decision(&repo.hook("claude", input.to_string().as_bytes()));
        assert_eq!(hook.is_none(), allowed, "hook {path:?}: {hook:?}");
    }
    // From the alias as working directory, the same answers.
    let input = json!({"hook_event_name": "PreToolUse", "tool_name": "Write", "cwd": alias,
                       "tool_input": {"file_path": "app.py ", "content": "x"}});
    assert!(decision(&repo.hook("claude", input.to_string().as_bytes())).is_some());
    let input = json!({"hook_event_name": "PreToolUse", "tool_name": "Write", "cwd": alias,
                       "tool_input": {"file_path": "app.py", "content": "x"}});
    assert_eq!(
        decision(&repo.hook("claude", input.to_string().as_bytes())),
        None
    );
}

#[test]
fn a_linked_state_dir_is_refused_and_nothing_is_written_through_it() {
    let repo = Repo::new("linked-state");
    let elsewhere = repo.root.parent().unwrap().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::remove_dir_all(repo.root.join(".code-intel")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, repo.root.join(".code-intel")).unwrap();
    let error = match Server::new(
        &repo.root,
        default_contract(),
        SealKey::from_bytes(KEY),
        &crate::sealed::environment(),
    ) {
        Ok(_) => panic!("a server started on a linked .code-intel"),
        Err(e) => e.to_string(),
    };
    assert!(error.contains(".code-intel is a symbolic link"), "{error}");
    // The CLI's index refuses too.
    let out = crate::support::code_intel()
        .args(["index"])
        .current_dir(&repo.root)
        .env("CODE_INTEL_STATE_DIR", &repo.state)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("symbolic link"), "{stderr}");
    // A session's files planted there are not trusted by the hook.
    let reason = repo.write(&repo.abs("app.py")).unwrap();
    assert!(reason.contains("symbolic link"), "{reason}");
    assert_eq!(
        std::fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "something was written through the link"
    );

    // A linked directory inside a real .code-intel/ is refused the same way.
    std::fs::remove_file(repo.root.join(".code-intel")).unwrap();
    std::fs::create_dir_all(repo.root.join(".code-intel")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, repo.root.join(".code-intel/sessions")).unwrap();
    let server = repo.server();
    let reply = server.call(
        "start_session",
        args(json!({"query": "add a --json flag to main", "flags": ""})),
    );
    assert!(reply.is_error, "{}", reply.body);
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[test]
fn shell_commands_that_plainly_write_wait_for_implementation_and_explored_files() {
    let repo = Repo::new("shell");
    // No session: nothing to enforce.
    assert_eq!(repo.bash("claude", "echo x > app.py"), None);
    // The user's own uncommitted work when the session starts.
    std::fs::write(repo.root.join("README.md"), "# demo\nthe user's edit\n").unwrap();
    let server = repo.server();
    start(&server);
    for client in ["claude", "codex"] {
        // Reading, building and testing pass; so do writes outside the repository.
        for command in [
            "cat app.py | grep -n def",
            "git status && git diff HEAD -- app.py && git log --oneline -3",
            "ls -la 2>/dev/null >/dev/null",
            "cargo test > /tmp/code-intel-hook-test.log 2>&1",
            "python -c 'print(1)'",
        ] {
            assert_eq!(repo.bash(client, command), None, "{client}: {command}");
        }
        // Writes before implementation are refused, naming the file.
        for (command, file) in [
            ("echo x > app.py", "app.py"),
            ("printf 'y' >> lib.py", "lib.py"),
            ("sed -i 's/a/b/' app.py", "app.py"),
            ("cd sub && touch new.txt", "sub/new.txt"),
            ("rm README.md", "README.md"),
        ] {
            let reason = repo
                .bash(client, command)
                .unwrap_or_else(|| panic!("{command} allowed"));
            assert!(
                reason.contains("Writing files is not allowed in phase") && reason.contains(file),
                "{client}: {command}: {reason}"
            );
        }
        // Writes the hook cannot name, and commands it cannot read.
        let reason = repo.bash(client, "git commit -am wip").unwrap();
        assert!(reason.contains("git commit"), "{reason}");
        // A formatter over the project rewrites files too; its check mode does not.
        let reason = repo.bash(client, "black .").unwrap();
        assert!(reason.contains("`black .` rewrites"), "{reason}");
        assert_eq!(repo.bash(client, "black --check ."), None);
        let reason = repo.bash(client, "echo 'open > app.py").unwrap();
        assert!(reason.contains("cannot be read"), "{reason}");
        // Bringing a file back to HEAD, as the server's refusals ask, passes; the user's
        // uncommitted work is not thrown away that way, nor is everything at once.
        assert_eq!(
            repo.bash(client, "git checkout HEAD -- app.py lib.py"),
            None
        );
        assert_eq!(repo.bash(client, "git restore app.py"), None);
        for command in [
            "git checkout -- README.md",
            "git restore .",
            "git checkout main -- app.py",
        ] {
            let reason = repo
                .bash(client, command)
                .unwrap_or_else(|| panic!("{command} allowed"));
            assert!(
                reason.contains("Writing files is not allowed in phase"),
                "{command}: {reason}"
            );
        }
    }

    to_implementation(&server, &["app.py"]);
    for client in ["claude", "codex"] {
        assert_eq!(repo.bash(client, "echo x >> app.py"), None);
        assert_eq!(
            repo.bash(client, "sed -i 's/a/b/' app.py && cat app.py"),
            None
        );
        // During implementation an unreadable command and a formatter are left to the
        // check of the tree.
        assert_eq!(repo.bash(client, "echo 'open > app.py"), None);
        assert_eq!(repo.bash(client, "black ."), None);
        let reason = repo.bash(client, "echo x > lib.py").unwrap();
        assert!(
            reason.starts_with("code-intel refuses this shell command: lib.py"),
            "{reason}"
        );
        for (command, named) in [
            ("git checkout main", "git checkout"),
            ("echo x > .git/hooks/pre-commit", ".git/hooks/pre-commit"),
            (
                "cp app.py .code-intel/sessions/x.json",
                ".code-intel/sessions/x.json",
            ),
            ("ls | xargs rm", "rm"),
            ("echo x > $OUT", "$OUT"),
        ] {
            let reason = repo
                .bash(client, command)
                .unwrap_or_else(|| panic!("{command} allowed"));
            assert!(reason.contains(named), "{client}: {command}: {reason}");
        }
    }
    // Nothing ran: the hook only answers.
    assert_eq!(
        std::fs::read_to_string(repo.root.join("lib.py")).unwrap(),
        "def helper():\n    return 1\n"
    );
}

#[test]
fn what_appeared_since_the_accepted_tree_may_be_removed_where_nothing_may_be_written() {
    let repo = Repo::new("remove-new");
    // The user's own untracked file, there before the session: part of the accepted tree.
    std::fs::write(repo.root.join("notes.txt"), "mine\n").unwrap();
    let server = repo.server();
    start(&server);
    // A test run's cache, made after the server accepted the tree.
    std::fs::create_dir_all(repo.root.join("__pycache__")).unwrap();
    std::fs::write(repo.root.join("__pycache__/app.cpython-311.pyc"), "x").unwrap();
    let bash = |command: &str| repo.pre("Bash", json!({"command": command}));
    assert_eq!(bash("rm -rf __pycache__"), None);
    assert_eq!(bash("rm -f __pycache__/app.cpython-311.pyc"), None);
    // What HEAD holds, what the user had, and what git ignores (nothing the server would
    // ask to remove) stay out of reach.
    std::fs::write(repo.root.join(".gitignore"), "build/\n").unwrap();
    std::fs::create_dir_all(repo.root.join("build")).unwrap();
    std::fs::write(repo.root.join("build/out.bin"), "x").unwrap();
    for command in [
        "rm -rf build",
        "rm app.py",
        "rm -rf .",
        "rm notes.txt",
        "rm -rf __pycache__ app.py",
    ] {
        let reason = bash(command).unwrap_or_else(|| panic!("{command} was allowed"));
        assert!(
            reason.contains("Writing files is not allowed"),
            "{command}: {reason}"
        );
    }
}

/// Whether `text` holds Japanese (kana or kanji).
fn has_japanese(text: &str) -> bool {
    text.chars()
        .any(|c| matches!(c, '\u{3040}'..='\u{30ff}' | '\u{4e00}'..='\u{9fff}'))
}

/// Asserts that `text` is the Japanese of message `key`: Japanese characters, and no
/// English sentence of the message's `en` text (each stretch of it between placeholders
/// that holds a few words).
fn assert_japanese(contract: &code_intel::contract::Contract, key: &str, text: &str) {
    assert!(has_japanese(text), "{key}: not Japanese: {text}");
    let Some(message) = contract.messages.get(key) else {
        panic!("{key} is not a message of the contract (text: {text})");
    };
    let en = message.text.get("en", "en");
    let mut rest = en;
    while !rest.is_empty() {
        let (stretch, after) = match rest.find('{') {
            Some(open) => (
                &rest[..open],
                rest[open..]
                    .find('}')
                    .map_or("", |close| &rest[open + close + 1..]),
            ),
            None => (rest, ""),
        };
        let stretch = stretch.trim_matches(|c: char| c.is_ascii_punctuation() || c == ' ');
        if stretch.split_whitespace().count() >= 3 {
            assert!(
                !text.contains(stretch),
                "{key}: the Japanese text holds English of the en text ({stretch:?}): {text}"
            );
        }
        rest = after;
    }
}

/// A refusal of the server in Japanese: its `message` is the Japanese of its
/// `message_key`, and so is its `hint` when it has one.
fn refused_in_japanese(
    contract: &code_intel::contract::Contract,
    reply: &code_intel::server::Reply,
    error: &str,
) {
    assert!(reply.is_error, "{}", reply.body);
    assert_eq!(reply.body["error"], error, "{}", reply.body);
    let key = reply.body["message_key"]
        .as_str()
        .unwrap_or_else(|| panic!("no message_key: {}", reply.body));
    let text = reply.body["message"].as_str().unwrap_or_default();
    assert_japanese(contract, key, text);
    if let Some(hint) = reply.body["hint"].as_str() {
        assert_japanese(contract, "hints.phase_blocked_hint", hint);
    }
}

/// Asserts that the text at `pointer` of `answer` is the Japanese of message `key`.
fn note_in_japanese(
    contract: &code_intel::contract::Contract,
    answer: &Value,
    pointer: &str,
    key: &str,
) {
    let text = answer
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{key}: no {pointer} in {answer}"));
    assert_japanese(contract, key, text);
}

/// The notes the code tools add to their answers, before any session of a project whose
/// config says `locale: ja`: through the server while its index is ready, and worded the
/// same way by the code tools of an index that never loaded (the notes of an answer made
/// without it).
fn code_tool_notes_in_japanese(
    contract: &code_intel::contract::Contract,
    repo: &Repo,
    server: &Server,
) {
    use code_intel::codeintel::Root;
    use code_intel::server::CodeTools;
    use code_intel::server::SemanticTools;
    use code_intel::server::Words;
    use code_intel::server::call_code;
    use code_intel::server::{ChangeSource, IndexCache};

    let started = std::time::Instant::now();
    while server.index_building().is_some() {
        assert!(
            started.elapsed().as_secs() < 60,
            "the index was never built"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The freshness note, once per server.
    let symbols = call(server, "get_symbols", json!({"file_path": "app.py"}));
    note_in_japanese(
        contract,
        &symbols,
        "/freshness/note",
        "code_tools.note.freshness",
    );
    let text = call(server, "search_text", json!({"patterns": ["needle"]}));
    note_in_japanese(contract, &text, "/budget", "code_tools.budget.paged");
    let impact = call(server, "analyze_impact", json!({"targets": ["helper"]}));
    assert_eq!(impact["truncated"], true, "{impact}");
    note_in_japanese(contract, &impact, "/more", "code_tools.impact_more");
    // Without an embedding model: why, once per server; `ranking` on every answer.
    let semantic = call(server, "semantic_search", json!({"query": "helper"}));
    assert_eq!(semantic["ranking"], "lexical", "{semantic}");
    note_in_japanese(
        contract,
        &semantic,
        "/vector/note",
        "semantic.note.no_model",
    );
    let again = call(
        server,
        "semantic_search",
        json!({"query": "needle", "k": 50}),
    );
    assert_eq!(again["ranking"], "lexical", "{again}");
    assert!(again["vector"].get("note").is_none(), "{again}");
    // Ranked hits are cut by keeping the best.
    note_in_japanese(contract, &again, "/budget", "code_tools.budget.ranked");
    let query = call(
        server,
        "query",
        json!({"question": "how does the program read its configuration file"}),
    );
    assert_eq!(query["tool"], "semantic_search", "{query}");
    note_in_japanese(contract, &query, "/note", "code_tools.note.words_only");

    // An index that never loaded: the answers made without it say so.
    let root = Root::open(&repo.root).unwrap();
    let tools = CodeTools {
        semantic: SemanticTools::start(root.clone(), &crate::sealed::environment()),
        index: IndexCache::new(root.clone(), ChangeSource::Polling),
        root,
    };
    let words = Words::new(contract, "ja");
    let ask = |tool: &str, a: Value| {
        call_code(&tools, tool, args(a), words)
            .unwrap_or_else(|e| panic!("{tool}: {e:?}"))
            .unwrap_or_else(|| panic!("{tool}: no such tool"))
    };
    let defs = ask("find_definitions", json!({"name": "parse_config"}));
    note_in_japanese(
        contract,
        &defs,
        "/index_status",
        "code_tools.note.index_unavailable",
    );
    note_in_japanese(
        contract,
        &defs,
        "/freshness/note",
        "code_tools.note.no_index",
    );
    let symbols = ask("get_symbols", json!({"file_path": "app.py"}));
    note_in_japanese(
        contract,
        &symbols,
        "/freshness/note",
        "code_tools.note.partial_index",
    );
    let impact = ask("analyze_impact", json!({"targets": ["helper"]}));
    note_in_japanese(contract, &impact, "/note", "code_tools.note.text_matches");
    let structure = ask("analyze_structure", json!({"path": "."}));
    note_in_japanese(
        contract,
        &structure,
        "/note",
        "code_tools.note.files_instead",
    );

    // A model that is configured but cannot be loaded: said on every answer.
    let broken = Repo::new("ja-model");
    std::fs::write(
        broken.root.join(".code-intel/config.yml"),
        "locale: ja\nsemantic:\n  sync_on_start: false\n  embedding_model_path: no/model\n  onnxruntime_path: no/libonnxruntime.so\n",
    )
    .unwrap();
    let root = Root::open(&broken.root).unwrap();
    let tools = CodeTools {
        semantic: SemanticTools::start(root.clone(), &crate::sealed::environment()),
        index: IndexCache::new(root.clone(), ChangeSource::Polling),
        root,
    };
    for _ in 0..2 {
        let answer = call_code(
            &tools,
            "semantic_search",
            args(json!({"query": "helper"})),
            words,
        )
        .unwrap()
        .unwrap();
        assert_eq!(answer["ranking"], "lexical", "{answer}");
        note_in_japanese(
            contract,
            &answer,
            "/vector/note",
            "semantic.note.model_failed",
        );
    }
}

#[test]
fn a_ja_session_answers_every_reply_in_japanese() {
    let contract = default_contract();
    let repo = Repo::new("ja");
    // The locale init configured: the server's texts use it before any session.
    std::fs::write(
        repo.root.join(".code-intel/config.yml"),
        "locale: ja\nsemantic:\n  sync_on_start: false\n",
    )
    .unwrap();
    // Files whose answers the code tools cut: a name used by more callers than an
    // impact summary lists, and lines longer than a text search's answer may hold.
    let callers: String = (0..8)
        .map(|i| format!("from lib import helper\n\n\ndef use_{i}():\n    return helper()\n\n\n"))
        .collect();
    std::fs::write(repo.root.join("callers.py"), callers).unwrap();
    let long = format!("needle {}\n", "x".repeat(300)).repeat(120);
    std::fs::write(repo.root.join("data.txt"), long).unwrap();
    for a in [
        &["add", "callers.py", "data.txt"][..],
        &["commit", "-qm", "more files"],
    ] {
        let out = crate::sealed::command("git")
            .args(a)
            .current_dir(&repo.root)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
    let server = repo.server();
    let ask = |server: &Server, tool: &str, a: Value| server.call(tool, args(a));
    let denied = |reason: Option<String>, key: &str| {
        let reason = reason.unwrap_or_else(|| panic!("{key}: the write was allowed"));
        assert_japanese(&contract, key, &reason);
    };

    // No session yet.
    for tool in ["get_session_status", "submit_phase", "record_outcome"] {
        let a = match tool {
            "submit_phase" => json!({"data": {"summary": "x"}}),
            "record_outcome" => json!({"outcome": "success"}),
            _ => json!({}),
        };
        let reply = ask(&server, tool, a);
        refused_in_japanese(&contract, &reply, "session.no_active_session");
    }
    refused_in_japanese(
        &contract,
        &ask(&server, "no_such_tool", json!({})),
        "unknown_tool",
    );
    refused_in_japanese(
        &contract,
        &ask(&server, "submit_phase", json!({"data": "not an object"})),
        "invalid_arguments",
    );
    // A paged answer that left items out says so.
    let page = call(
        &server,
        "search_files",
        json!({"globs": ["*.py"], "limit": 1}),
    );
    assert_eq!(page["truncated"], true, "{page}");
    assert_japanese(
        &contract,
        "warnings.truncation_warning",
        page["warning"].as_str().unwrap_or_default(),
    );
    code_tool_notes_in_japanese(&contract, &repo, &server);
    // Denials before any session is found, in config.yml's locale.
    for client in ["claude", "codex"] {
        let garbage = decision(&repo.hook(client, b"{not json"));
        denied(garbage, "hook.input_unreadable");
    }
    // A repository that cannot host a task branch: a git refusal.
    let git = |a: &[&str]| {
        let out = crate::sealed::command("git")
            .args(a)
            .current_dir(&repo.root)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    git(&["checkout", "-q", "--detach"]);
    refused_in_japanese(
        &contract,
        &ask(
            &server,
            "start_session",
            json!({"query": "add a --json flag to main"}),
        ),
        "git.detached_head",
    );
    git(&["checkout", "-q", "main"]);

    // The session starts in Japanese, with the compaction protocol once.
    let started = call(
        &server,
        "start_session",
        json!({"query": "add a --json flag to main"}),
    );
    let instruction = started["instruction"].as_str().unwrap_or_default();
    assert!(has_japanese(instruction), "{instruction}");
    assert!(
        instruction.contains("[compaction_protocol] submit_phase の data"),
        "{instruction}"
    );
    refused_in_japanese(
        &contract,
        &ask(
            &server,
            "start_session",
            json!({"query": "another request"}),
        ),
        "session.active",
    );
    // A tool the phase does not allow, with its hint.
    refused_in_japanese(
        &contract,
        &ask(&server, "review_changes", json!({})),
        "tool_not_allowed",
    );
    refused_in_japanese(
        &contract,
        &ask(
            &server,
            "submit_phase",
            json!({"data": {"summary": "x", "compaction_count": "one"}}),
        ),
        "session.invalid_compaction_count",
    );
    refused_in_japanese(
        &contract,
        &ask(
            &server,
            "submit_phase",
            json!({"data": {"documents_reviewed": 3, "tools_used": [], "summary": "x", "compaction_count": 0}}),
        ),
        "payload_mismatch",
    );

    // The write hooks of both clients, through the real binary.
    for client in ["claude", "codex"] {
        denied(repo.bash(client, "echo x > app.py"), "hook.shell_writes");
        // What the scanner describes (a git command, a formatter) is Japanese too.
        let commit = repo.bash(client, "git commit -qam wip");
        denied(commit.clone(), "hook.shell_opaque");
        denied(commit, "hook.writes.git");
        let fmt = repo.bash(client, "cargo fmt");
        denied(fmt.clone(), "hook.shell_broad");
        denied(fmt, "hook.writes.formatter");
        denied(repo.bash(client, "echo x > $OUT"), "hook.writes.unnamed");
        let unread = repo.bash(client, "echo 'open > app.py");
        denied(unread.clone(), "hook.shell_unreadable");
        denied(unread, "hook.unreadable.not_closed");
        denied(
            repo.bash(client, "echo x > .code-intel/notes.txt"),
            "hook.shell_refused",
        );
    }
    denied(
        repo.write(&repo.abs("app.py")),
        "tool_errors.check_write_target.write_phase_blocked",
    );
    denied(
        repo.write(&repo.abs(".git/hooks/pre-commit")),
        "hook.reserved",
    );
    let outside = std::env::temp_dir().join("code-intel-ja-outside.txt");
    denied(repo.write(&outside.to_string_lossy()), "hook.outside_root");
    denied(
        repo.pre("apply_patch", json!({"command": "no markers at all"})),
        "hook.unknown_targets",
    );

    // In implementation: files that were not explored.
    let planned = to_implementation(&server, &["app.py"]);
    assert_japanese(
        &contract,
        "notes.task_branch",
        planned["task_branch"]["note"].as_str().unwrap_or_default(),
    );
    refused_in_japanese(
        &contract,
        &ask(
            &server,
            "check_write_target",
            json!({"file_path": "lib.py"}),
        ),
        "write_blocked",
    );
    refused_in_japanese(
        &contract,
        &ask(&server, "add_explored_files", json!({"files": ["lib.py"]})),
        "files_not_seen",
    );
    denied(
        repo.write(&repo.abs("lib.py")),
        "tool_errors.check_write_target.write_blocked",
    );
    denied(repo.bash("claude", "echo x > lib.py"), "hook.shell_refused");

    // A second server of the same repository: the session is another's.
    let other = repo.server();
    refused_in_japanese(
        &contract,
        &ask(
            &other,
            "start_session",
            json!({"query": "x", "resume": true}),
        ),
        "session.locked",
    );
    refused_in_japanese(
        &contract,
        &ask(&other, "cleanup_stale_branches", json!({})),
        "session.recoverable",
    );
    drop(other);

    // A checkpoint edited by hand: the hook refuses, and a server will not load it.
    let path = repo.checkpoint();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen("add a --json", "add a --yaml", 1)).unwrap();
    denied(repo.write(&repo.abs("lib.py")), "hook.session_unreadable");
    drop(server);
    let restarted = repo.server();
    refused_in_japanese(
        &contract,
        &ask(&restarted, "get_session_status", json!({})),
        "checkpoint.tampered",
    );
}
