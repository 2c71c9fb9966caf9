//! `code-intel init` as users run it: the files it writes, merging into the user's
//! client configuration, idempotence, edited files, refused JSON, rules and locales.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use code_intel::contract::StateKind;
use serde_json::Value;

use crate::support::{TempDir, binary, default_contract};

/// The binary under test stands in for `code-intel` in every generated command.
fn init(dir: &Path, extra: &[&str]) -> Output {
    let bin = binary();
    let mut args = vec!["init", ".", "--command", bin.to_str().unwrap()];
    args.extend_from_slice(extra);
    crate::support::code_intel()
        .args(&args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn temp_dir(name: &str) -> TempDir {
    TempDir::create(&format!("code-intel-init-{name}-{}", std::process::id()))
}

fn read(dir: &Path, path: &str) -> String {
    std::fs::read_to_string(dir.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn json(dir: &Path, path: &str) -> Value {
    serde_json::from_str(&read(dir, path)).unwrap()
}

/// Every file under `dir`, by relative path, with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().to_path_buf();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The report line of one file.
fn status_of<'a>(out: &'a str, path: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.trim_start().strip_prefix(path))
        .map(str::trim)
        .unwrap_or_else(|| panic!("{path} not in the report:\n{out}"))
}

#[test]
fn the_command_and_the_skill_list_every_flag_and_phase_of_the_contract() {
    let dir = temp_dir("generated");
    let out = init(&dir, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let contract = default_contract();
    let mut expected = Vec::new();
    for f in &contract.flags {
        expected.push(format!("`--{}", f.long));
        expected.extend(f.short.iter().map(|s| format!("`-{s}`")));
        expected.extend(f.aliases.iter().map(|a| format!("`--{a}`")));
    }
    for s in contract
        .states
        .iter()
        .filter(|s| s.kind == StateKind::External)
    {
        expected.push(format!("`{}`", s.id));
    }
    // Each client's own name for the server's tools (Codex turns `code-intel` into
    // `code_intel`; tests/integration/codex.rs calls them under that name).
    for (path, tool, other) in [
        (
            ".claude/commands/code.md",
            "mcp__code-intel__start_session",
            "mcp__code_intel__",
        ),
        (
            ".codex/skills/code/SKILL.md",
            "mcp__code_intel__start_session",
            "mcp__code-intel__",
        ),
    ] {
        let text = read(&dir, path);
        let missing: Vec<&String> = expected.iter().filter(|e| !text.contains(*e)).collect();
        assert!(missing.is_empty(), "{path} lacks {missing:?}");
        // Wholly English for an English install: no Japanese column or label.
        let japanese: String = text
            .chars()
            .filter(|c| matches!(*c as u32, 0x3040..=0x30FF | 0x4E00..=0x9FFF | 0xFF00..=0xFFEF))
            .collect();
        assert!(japanese.is_empty(), "{path} holds {japanese:?}");
        // The phase table starts where a session starts, at step 1.
        assert!(
            text.contains("| 1 | `SESSION_START` | start_session |"),
            "{path}"
        );
        assert!(
            text.contains("| 12 | `READY_PLAN` | READY (plan) |"),
            "{path}"
        );
        assert!(text.contains(tool), "{path} does not name {tool}");
        assert!(
            !text.contains(other),
            "{path} names the other client's {other}"
        );
    }
    assert!(read(&dir, ".claude/commands/code.md").contains("$ARGUMENTS"));
    assert!(read(&dir, ".codex/skills/code/SKILL.md").starts_with("---\nname: code\n"));
    for prompt in [
        "doc_research/default.md",
        "verifiers/code.md",
        "verifiers/tests.md",
        "interventions/structure_review.md",
        "interventions/hypothesis_review.md",
        "interventions/step_back.md",
        "review_prompts/garbage_detection.md",
        "review_prompts/quality_review.md",
        "task_planning.md",
        "user_escalation.md",
    ] {
        assert!(read(&dir, &format!(".code-intel/{prompt}")).starts_with("# "));
    }
    let toml = read(&dir, ".codex/config.toml");
    let bin = binary();
    assert!(toml.contains("[mcp_servers.code-intel]"), "{toml}");
    // Codex passes a server only the variables it names; the hook sees them all.
    assert!(
        toml.contains("env_vars = [\"CODE_INTEL_STATE_DIR\", \"XDG_STATE_HOME\", \"CODE_INTEL_CACHE_DIR\", \"XDG_CACHE_HOME\","),
        "{toml}"
    );
    // Without it `codex exec` refuses every call to the server (approval policy "never").
    assert!(
        toml.contains("default_tools_approval_mode = \"approve\""),
        "{toml}"
    );
    assert!(toml.contains(&format!("command = \"{} hook codex\"", bin.display())));
    // Two PreToolUse groups: file edits (apply_patch) and shell commands (Bash).
    for matcher in ["apply_patch", "Bash"] {
        assert!(
            toml.contains(&format!("[[hooks.PreToolUse]]\nmatcher = \"{matcher}\"\n")),
            "{toml}"
        );
    }
    let out = stdout(&out);
    // `codex mcp add` would register the server without the key's variables and the
    // tool approval that .codex/config.toml carries: not suggested.
    assert!(!out.contains("codex mcp add"), "{out}");
    assert!(
        out.contains("run `codex` here once and trust the project"),
        "{out}"
    );
    assert!(out.contains(&format!(
        "claude mcp add --scope local code-intel -- {} serve",
        bin.display()
    )));
}

#[test]
fn existing_client_configuration_is_merged_and_a_rerun_changes_nothing() {
    let dir = temp_dir("merge");
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    std::fs::write(
        dir.join(".mcp.json"),
        r#"{"mcpServers": {"other": {"command": "other-server"}}, "x": 1}"#,
    )
    .unwrap();
    let user_hook = r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "my-guard"}]}]}, "model": "opus"}"#;
    std::fs::write(dir.join(".claude/settings.json"), user_hook).unwrap();
    std::fs::write(
        dir.join(".claude/settings.local.json"),
        r#"{"enabledMcpjsonServers": ["other"]}"#,
    )
    .unwrap();
    std::fs::create_dir_all(dir.join(".codex")).unwrap();
    std::fs::write(dir.join(".codex/config.toml"), "model = \"o3\"\n").unwrap();

    let first = init(&dir, &[]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let mcp = json(&dir, ".mcp.json");
    assert_eq!(mcp["mcpServers"]["other"]["command"], "other-server");
    assert_eq!(mcp["x"], 1);
    let ours = &mcp["mcpServers"]["code-intel"];
    assert_eq!(ours["type"], "stdio");
    assert_eq!(ours["command"], binary().to_str().unwrap());
    assert_eq!(ours["args"], serde_json::json!(["serve"]));

    let settings = json(&dir, ".claude/settings.json");
    assert_eq!(settings["model"], "opus");
    let pre = settings["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre[0]["hooks"][0]["command"], "my-guard");
    assert_eq!(pre[1]["matcher"], "Edit|Write|MultiEdit|NotebookEdit");
    let hook = format!("{} hook claude", binary().display());
    assert_eq!(pre[1]["hooks"][0]["command"], hook.as_str());
    // The user's own Bash guard stays; ours is a group of its own beside it.
    assert_eq!(pre.len(), 3, "{pre:?}");
    assert_eq!(pre[2]["matcher"], "Bash");
    assert_eq!(pre[2]["hooks"][0]["command"], hook.as_str());
    let post = settings["hooks"]["PostToolUse"].as_array().unwrap();
    assert_eq!(post[0]["matcher"], "Read|Grep|Glob");
    assert_eq!(
        json(&dir, ".claude/settings.local.json")["enabledMcpjsonServers"],
        serde_json::json!(["other", "code-intel"])
    );
    let toml = read(&dir, ".codex/config.toml");
    assert!(
        toml.starts_with("model = \"o3\"\n\n# >>> code-intel"),
        "{toml}"
    );

    let before = snapshot(&dir);
    let second = init(&dir, &[]);
    assert!(second.status.success());
    let out = stdout(&second);
    for line in out.lines().filter(|l| l.starts_with("  .")) {
        assert!(line.ends_with("unchanged"), "{line}\n{out}");
    }
    assert_eq!(
        snapshot(&dir),
        before,
        "a second init must not change a byte"
    );
}

#[test]
fn a_rerun_adds_the_shell_matcher_to_an_older_install() {
    let dir = temp_dir("older");
    assert!(init(&dir, &[]).status.success());
    // An install from before the Bash matcher: only the edit and read groups.
    let path = dir.join(".claude/settings.json");
    let mut settings = json(&dir, ".claude/settings.json");
    let pre = settings["hooks"]["PreToolUse"].as_array_mut().unwrap();
    pre.retain(|g| g["matcher"] != "Bash");
    assert_eq!(pre.len(), 1);
    std::fs::write(&path, serde_json::to_string_pretty(&settings).unwrap()).unwrap();

    assert!(init(&dir, &[]).status.success());
    let settings = json(&dir, ".claude/settings.json");
    let pre = settings["hooks"]["PreToolUse"].as_array().unwrap();
    let matchers: Vec<&str> = pre.iter().map(|g| g["matcher"].as_str().unwrap()).collect();
    assert_eq!(matchers, ["Edit|Write|MultiEdit|NotebookEdit", "Bash"]);
    let hook = format!("{} hook claude", binary().display());
    assert_eq!(pre[1]["hooks"][0]["command"], hook.as_str());
    // And once there, a rerun changes nothing.
    let before = snapshot(&dir);
    assert!(init(&dir, &[]).status.success());
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn an_edited_prompt_is_kept_unless_forced() {
    let dir = temp_dir("edited");
    assert!(init(&dir, &[]).status.success());
    let path = ".code-intel/verifiers/tests.md";
    std::fs::write(dir.join(path), "# Our own verifier\n").unwrap();

    let out = stdout(&init(&dir, &[]));
    assert!(
        status_of(&out, path).starts_with("kept (edited by you"),
        "{out}"
    );
    assert_eq!(read(&dir, path), "# Our own verifier\n");
    assert_eq!(
        status_of(&out, ".code-intel/verifiers/code.md"),
        "unchanged"
    );

    let out = stdout(&init(&dir, &["--force"]));
    assert_eq!(status_of(&out, path), "updated", "{out}");
    assert!(read(&dir, path).starts_with("# Verifier: run the project's tests"));
}

#[test]
fn a_broken_mcp_json_is_refused_with_its_position_and_left_untouched() {
    let dir = temp_dir("broken");
    let broken = "{\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\",}\n  }\n}\n";
    std::fs::write(dir.join(".mcp.json"), broken).unwrap();
    let out = init(&dir, &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(".mcp.json:3:"), "{err}");
    assert_eq!(read(&dir, ".mcp.json"), broken);
    assert!(
        !dir.join(".code-intel").exists(),
        "nothing is written when one file is refused"
    );
}

#[test]
fn project_rules_come_from_claude_md() {
    let dir = temp_dir("rules");
    std::fs::write(
        dir.join("CLAUDE.md"),
        "# Project\n\nSome prose.\n\n- Run `make test` before committing.\n- Never edit generated files.\n",
    )
    .unwrap();
    assert!(init(&dir, &[]).status.success());
    let context = read(&dir, ".code-intel/context.yml");
    assert!(
        context.contains(
            "- rule: \"Run `make test` before committing.\"\n    source: \"CLAUDE.md:5\""
        ),
        "{context}"
    );
    assert!(context.contains("source: \"CLAUDE.md:6\""), "{context}");
    assert!(!context.contains("Some prose"), "{context}");
    assert!(context.contains("document_globs:"), "{context}");
}

#[test]
fn locale_ja_writes_japanese_prompts() {
    let dir = temp_dir("ja");
    assert!(init(&dir, &["--locale", "ja"]).status.success());
    assert!(read(&dir, ".code-intel/task_planning.md").starts_with("# タスクの計画"));
    assert!(read(&dir, ".code-intel/user_escalation.md").contains("ユーザー"));
    assert!(read(&dir, ".code-intel/config.yml").contains("locale: ja"));
    // The flags are explained in the chosen locale.
    assert!(read(&dir, ".claude/commands/code.md").contains("探索(Steps 5-11)"));
    // The command and the skill are Japanese through and through: every line of prose (not
    // a code block, a table row of names, or a comment marker) has Japanese in it.
    for file in [".claude/commands/code.md", ".codex/skills/code/SKILL.md"] {
        let text = read(&dir, file);
        let japanese = |l: &str| {
            l.chars().any(|c| {
                ('\u{3040}'..='\u{30ff}').contains(&c) || ('\u{4e00}'..='\u{9fff}').contains(&c)
            })
        };
        let english: Vec<&str> = text
            .lines()
            .filter(|l| {
                l.split_whitespace()
                    .filter(|w| w.len() > 3 && w.chars().all(|c| c.is_ascii_alphabetic()))
                    .count()
                    >= 3
            })
            .filter(|l| !japanese(l))
            .collect();
        assert!(english.is_empty(), "{file} has English prose: {english:#?}");
    }
}

#[test]
fn locale_en_writes_english_commands() {
    let dir = temp_dir("en");
    assert!(init(&dir, &[]).status.success());
    let text = read(&dir, ".claude/commands/code.md");
    assert!(text.contains("## 1. Read the input"), "{text}");
    assert!(!text.contains("入力"), "{text}");
}

#[test]
fn init_outside_a_git_repository_says_what_the_first_session_needs() {
    let dir = temp_dir("no-git");
    let out = init(&dir, &[]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("is not inside a git repository; run `git init`")
            && stderr.contains("`start_session` refuses"),
        "{stderr}"
    );
    // In a repository with a first commit, nothing to say.
    let repo = temp_dir("git");
    crate::support::git_repo(&repo, &[("README.md", "# demo\n")]);
    let out = init(&repo, &[]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    // The index `index` writes is git-ignored from the start: only init's own files, the
    // project's to commit, show as new.
    let index = crate::support::code_intel()
        .args(["index", "--root"])
        .arg(&*repo)
        .output()
        .unwrap();
    assert!(
        index.status.success(),
        "{}",
        String::from_utf8_lossy(&index.stderr)
    );
    let status = crate::sealed::command("git")
        .args(["status", "--porcelain", "--untracked-files=all"])
        .current_dir(&*repo)
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    for machine_local in ["symbols.idx", "index.lock", ".code-intel/.gitignore"] {
        assert!(!status.contains(machine_local), "{status}");
    }
    assert!(status.contains(".code-intel/config.yml"), "{status}");
}
