//! `runner.tooling` at the boundary: the shape of the original's tooling golden loads, a
//! misspelt camelCase key is refused at its line, and a task run through the binary whose
//! first planner candidate is rate limited (a loopback OpenAI-compatible server answering
//! 429) falls back to the next candidate, completes, and records the fallback; the worker
//! candidate's `env` reaches the worker. A worker run that a stand-in Codex CLI (first on
//! PATH) fails with a rate limit moves the next run to another Codex candidate (never to
//! the Claude one, which would need another image), unless the worker is forced.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use code_intel::runner::Options;
use code_intel::runner::app::load_task;
use serde_json::Value;

use crate::runner_sandbox::write_script;
use crate::support::{Seen, TempDir, read_request, repo, write_response};

fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_agent-runner"))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A loopback chat API that answers every request with HTTP 429, and counts them.
fn rate_limited_server() -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            if let Some(request) = read_request(Duration::from_secs(10), &stream) {
                record.lock().unwrap().push(request);
            }
            let body = r#"{"error": {"message": "Rate limit reached for gpt-limited", "type": "requests"}}"#;
            let _ = write_response(&stream, 429, &[("Retry-After", "1".into())], body);
        }
    });
    (base_url, seen)
}

#[test]
fn the_originals_tooling_golden_shape_loads() {
    let path = repo().join("tests/fixtures/agent-runner/task_yaml_with_tooling.golden");
    let loaded = load_task(&Options {
        task: Some(path),
        ..Options::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let tooling = loaded.task.tooling.expect("runner.tooling is kept");
    let (name, profile) = tooling.profile().unwrap();
    assert_eq!(name, "balanced");
    let meta = profile.meta.as_ref().unwrap();
    assert_eq!(
        (meta.cooldown_sec, meta.fallback_on_rate_limit),
        (120, true)
    );
    assert_eq!(
        meta.candidates[1].cli_path.as_deref(),
        Some("/usr/local/bin/claude")
    );
    let worker = profile.worker.as_ref().unwrap();
    assert_eq!(worker.candidates[0].flags, ["--search"]);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[test]
fn tooling_keys_are_checked_with_positions() {
    let dir = TempDir::new("tooling-bad-keys");
    let text = "version: 1\ntask:\n  prd: {text: x}\nrunner:\n  tooling:\n    activeProfile: fast\n    profiles:\n      balanced:\n        meta:\n          cooldownSecs: 5\n          candidates: [{tool: mock}]\n";
    std::fs::write(dir.path().join("task.yaml"), text).unwrap();
    let o = crate::sealed::command(binary())
        .arg("task.yaml")
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("cooldownSecs") && err.contains(":10:"),
        "{err}"
    );
    // With the key spelt right, the unknown profile is the finding, at its line.
    std::fs::write(
        dir.path().join("task.yaml"),
        text.replace("cooldownSecs", "cooldownSec"),
    )
    .unwrap();
    let o = crate::sealed::command(binary())
        .arg("task.yaml")
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("`activeProfile` \"fast\" is not a profile")
            && err.contains(":6:")
            && err.contains("name one of: balanced"),
        "{err}"
    );
}

#[test]
fn a_rate_limited_planner_candidate_falls_back_and_the_task_completes() {
    let (base_url, seen) = rate_limited_server();
    let dir = TempDir::new("tooling-fallback");
    crate::support::git_repo(&dir.path().join("repo"), &[("README.md", "# repo\n")]);
    write_script(
        &dir.path().join("agent.sh"),
        // The greeting comes from the worker candidate's `env`.
        "#!/bin/sh\ncat > /dev/null\nprintf '%s, world!\\n' \"$GREETING\" > hello.txt\necho 'Wrote hello.txt.'\n",
    );
    let task = format!(
        "version: 1
task:
  id: tooled
  title: Say hello
  repo: repo
  prd:
    text: |
      - hello.txt says hello
  test:
    command: 'grep -q Hello hello.txt'
    timeout_sec: 30
runner:
  max_loops: 3
  worker:
    kind: command
    command: [./agent.sh]
    max_run_time_sec: 30
  tooling:
    activeProfile: balanced
    profiles:
      balanced:
        meta:
          strategy: weighted
          fallbackOnRateLimit: true
          cooldownSec: 600
          candidates:
            - tool: openai-chat
              model: gpt-limited
              weight: 1000
              toolSpecific: {{base_url: '{base_url}', api_key_env: TOOLING_TEST_KEY, max_retries: 0, timeout_sec: 10}}
            - tool: mock
              weight: 1
        worker:
          candidates:
            - tool: command
              env: {{GREETING: Hello}}
"
    );
    std::fs::write(dir.path().join("task.yaml"), task).unwrap();
    let o = crate::sealed::command(binary())
        .args([
            "task.yaml",
            "--unsafe-local",
            "--result-file",
            "result.json",
        ])
        .current_dir(dir.path())
        .env("TOOLING_TEST_KEY", "test-key")
        // The draw is seeded: with weights 1000:1 this seed takes the limited candidate
        // first (the test would see no 429 otherwise and fail below).
        .env("AGENT_RUNNER_TOOLING_SEED", "1")
        .env_remove("OPENAI_API_KEY")
        .env_remove("AGENT_RUNNER_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("result.json")).unwrap())
            .unwrap();
    assert_eq!(result["status"], "complete", "{result}");
    // One request reached the limited API; its cooldown kept every later call away.
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0].body["model"], "gpt-limited");
    assert_eq!(
        requests[0].authorization.as_deref(),
        Some("Bearer test-key")
    );
    let note =
        std::fs::read_to_string(dir.path().join("repo/.agent-runner/task-tooled.md")).unwrap();
    assert!(
        note.contains("-plan_task.json) (attempt 1")
            && note.contains("HTTP 429")
            && note.contains("via plan: openai-chat gpt-limited (weighted)"),
        "{note}"
    );
    assert!(
        note.contains("via plan: mock (fallback after openai-chat gpt-limited was rate limited)"),
        "{note}"
    );
    assert!(
        note.contains("- tooling: worker: command (weighted)"),
        "the worker's choice is in the timeline: {note}"
    );
    assert!(
        note.contains("via meta: mock (weighted)"),
        "later calls draw among the candidates still usable: {note}"
    );
}

#[test]
fn when_every_planner_candidate_is_rate_limited_the_call_fails_naming_them() {
    use code_intel::runner::{
        Cancel, MetaConfig, PlanTaskRequest, Planner, PlannerError, Selector, SplitMix64,
        ToolingConfig,
    };
    let (base_url, seen) = rate_limited_server();
    // The key variable only has to be set: HOME always is.
    let specific =
        serde_json::json!({"base_url": base_url, "api_key_env": "HOME", "max_retries": 0});
    let config: ToolingConfig = serde_json::from_value(serde_json::json!({
        "profiles": {"only": {"meta": {"cooldownSec": 60, "candidates": [
            {"tool": "openai-chat", "model": "a", "toolSpecific": specific},
            {"tool": "openai-chat", "model": "b", "toolSpecific": specific}]}}}}))
    .unwrap();
    let selector = Selector::new(
        &config,
        SplitMix64::new(5),
        Box::new(std::time::Instant::now),
        Box::new(|_, _| Ok(())),
    );
    let mut planner =
        Planner::tooled(selector, &MetaConfig::default(), Path::new("."), None, 2).unwrap();
    let request = PlanTaskRequest {
        task_id: "t".into(),
        title: "t".into(),
        prd: "- it works".into(),
        suggested_impl: None,
        test_command: None,
    };
    let call = planner.plan_task(&request, &Cancel::new());
    let Err(PlannerError::Tooling { message, .. }) = &call.result else {
        panic!("{:?}", call.result);
    };
    assert!(
        message.contains(
            "was rate limited (the planner API answered HTTP 429 (1 attempts): Rate limit reached"
        ) && message.contains("no `plan` candidate can be used now")
            && message.contains("openai-chat a is cooling down after a rate limit (60s left)")
            && message.contains("openai-chat b is cooling down after a rate limit (60s left)"),
        "{message}"
    );
    // Each candidate was asked once (a rate limit is not a protocol retry) and recorded.
    assert_eq!(seen.lock().unwrap().len(), 2);
    assert_eq!(call.exchanges.len(), 2);
    assert!(
        call.exchanges
            .iter()
            .all(|e| e.attempt == 1 && e.choice.is_some())
    );
}

#[test]
fn a_cli_that_says_it_is_rate_limited_falls_back_under_force_mode() {
    use code_intel::runner::{
        Cancel, MetaConfig, PlanTaskRequest, Planner, Selector, SplitMix64, ToolingConfig,
    };
    let dir = TempDir::new("tooling-cli-limited");
    let codex = dir.path().join("codex");
    // A Codex CLI whose quota is spent: it exits 1 saying so on stderr.
    write_script(
        &codex,
        "#!/bin/sh\ncat > /dev/null\necho 'ERROR: 429 Too Many Requests: usage limit reached' >&2\nexit 1\n",
    );
    let config: ToolingConfig = serde_json::from_value(serde_json::json!({
        "profiles": {"only": {"meta": {"candidates": [
            {"tool": "codex-cli", "model": "gpt-5.2", "cliPath": codex.display().to_string()},
            {"tool": "mock", "weight": 0}]}}},
        "force": {"enabled": true}}))
    .unwrap();
    let selector = Selector::new(
        &config,
        SplitMix64::new(1),
        Box::new(std::time::Instant::now),
        Box::new(|_, _| Ok(())),
    );
    let mut planner =
        Planner::tooled(selector, &MetaConfig::default(), dir.path(), None, 2).unwrap();
    let request = PlanTaskRequest {
        task_id: "t".into(),
        title: "t".into(),
        prd: "- it works".into(),
        suggested_impl: None,
        test_command: None,
    };
    let call = planner.plan_task(&request, &Cancel::new());
    assert!(call.result.is_ok(), "{:?}", call.result);
    let choices: Vec<String> = call
        .exchanges
        .iter()
        .map(|e| e.choice.as_ref().unwrap().to_string())
        .collect();
    assert_eq!(
        choices,
        [
            "plan: codex-cli gpt-5.2 (forced)",
            "plan: mock (fallback after codex-cli gpt-5.2 was rate limited)"
        ]
    );
    assert!(
        call.exchanges[0]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("429 Too Many Requests")),
        "{:?}",
        call.exchanges[0]
    );
    // The next call does not go back to the cooling CLI; force takes the first usable one.
    let call = planner.plan_task(&request, &Cancel::new());
    assert_eq!(call.exchanges.len(), 1);
    assert_eq!(
        call.exchanges[0].choice.as_ref().unwrap().to_string(),
        "plan: mock (forced)"
    );
}

/// A stand-in Codex CLI: the model `gpt-limited` has no quota left (it fails the way
/// Codex does, on stderr, exit 1); any other model does the work. Each run appends its
/// model to `models.log` beside the repository.
const STAND_IN_CODEX: &str = r#"#!/bin/sh
cat > /dev/null
model=; dir=.
while [ $# -gt 0 ]; do
  case "$1" in
    -m|--model) model=$2; shift ;;
    --model=*) model=${1#--model=} ;;
    -C) dir=$2; shift ;;
  esac
  shift
done
echo "$model" >> "$dir/../models.log"
if [ "$model" = gpt-limited ]; then
  echo 'ERROR: exceeded retry limit, last status: 429 Too Many Requests' >&2
  exit 1
fi
printf 'Hello, world!\n' > "$dir/hello.txt"
printf '{"type":"item.completed","item":{"type":"agent_message","text":"Wrote hello.txt (%s, SPARE=%s)."}}\n' "$model" "$SPARE"
"#;

/// What a run of [`run_worker_fallback`] left.
struct FallbackRun {
    /// The fixture (removed when dropped).
    dir: TempDir,
    output: Output,
    result: Value,
    note: String,
    /// The model of each worker run, in order.
    models: Vec<String>,
}

/// Runs a Codex-worker task whose `runner.tooling` worker candidates are the limited
/// Codex model (drawn first), a Claude one and a spare Codex model, with `force` added
/// when given.
fn run_worker_fallback(name: &str, force: &str) -> FallbackRun {
    let dir = TempDir::new(name);
    crate::support::git_repo(&dir.path().join("repo"), &[("README.md", "# repo\n")]);
    write_script(&dir.path().join("bin/codex"), STAND_IN_CODEX);
    let task = format!(
        "version: 1
task:
  id: {name}
  title: Say hello
  repo: repo
  prd:
    text: |
      - hello.txt says hello
  test:
    command: 'grep -q Hello hello.txt'
    timeout_sec: 30
runner:
  max_loops: 3
  meta: {{kind: mock}}
  worker:
    kind: codex-cli
    max_run_time_sec: 30
  tooling:
    profiles:
      balanced:
        meta:
          candidates: [{{tool: mock}}]
        worker:
          cooldownSec: 600
          candidates:
            - {{tool: codex-cli, model: gpt-limited, weight: 1000}}
            - {{tool: claude-code, model: haiku, weight: 1}}
            - {{tool: codex-cli, model: gpt-spare, weight: 1, env: {{SPARE: yes}}}}
{force}"
    );
    std::fs::write(dir.path().join("task.yaml"), task).unwrap();
    let path = std::env::var("PATH").unwrap_or_default();
    let output = crate::sealed::command(binary())
        .args([
            "task.yaml",
            "--unsafe-local",
            "--result-file",
            "result.json",
        ])
        .current_dir(dir.path())
        .env(
            "PATH",
            format!("{}:{path}", dir.path().join("bin").display()),
        )
        // The worker's login, for preflight (the stand-in needs none).
        .env("CODEX_API_KEY", "stand-in-key")
        // With weights 1000:1:1 this seed draws the limited model first (the run below
        // would not be rate limited otherwise, and the test fails on the models).
        .env("AGENT_RUNNER_TOOLING_SEED", "1")
        .env_remove("AGENT_RUNNER_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let result = std::fs::read_to_string(dir.path().join("result.json"))
        .map(|text| serde_json::from_str(&text).unwrap())
        .unwrap_or_else(|e| panic!("no result ({e}): {}", stderr(&output)));
    let note = std::fs::read_to_string(
        dir.path()
            .join(format!("repo/.agent-runner/task-{name}.md")),
    )
    .unwrap();
    let models = std::fs::read_to_string(dir.path().join("models.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect();
    FallbackRun {
        dir,
        output,
        result,
        note,
        models,
    }
}

#[test]
fn a_rate_limited_worker_run_moves_the_next_run_to_a_candidate_of_the_same_image() {
    let FallbackRun {
        dir,
        output: o,
        result,
        note,
        models,
    } = run_worker_fallback("worker-fallback", "");
    assert_eq!(
        models,
        ["gpt-limited", "gpt-spare"],
        "the second run used the spare Codex model: {note}"
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(result["status"], "complete", "{result}");
    // Each run names its candidate, in the result and the note.
    assert_eq!(
        result["runs"][0]["candidate"],
        "codex-cli gpt-limited (weighted)"
    );
    assert_eq!(
        result["runs"][1]["candidate"],
        "codex-cli gpt-spare (fallback after codex-cli gpt-limited was rate limited)"
    );
    assert!(
        note.contains(
            "- Worker candidate: codex-cli gpt-spare (fallback after codex-cli gpt-limited was rate limited)"
        ),
        "{note}"
    );
    // The switch is in the timeline: which run, what it said, the candidate that takes
    // over, and the one skipped because it needs another image.
    assert!(
        note.contains("- tooling: worker: codex-cli gpt-limited (weighted)"),
        "{note}"
    );
    assert!(
        note.contains(
            "- tooling: run-1 with codex-cli gpt-limited was rate limited (ERROR: exceeded retry limit, last status: 429 Too Many Requests); the next runs use codex-cli gpt-spare (fallback after codex-cli gpt-limited was rate limited); skipped, as they need another sandbox: claude-code haiku needs another sandbox (claude-code in agent-runner-claude:"
        ),
        "{note}"
    );
    // The run record names the candidate too; the spare's `env` reached its run.
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(
            dir.path()
                .join("repo/.agent-runner/task-worker-fallback/runs/run-2/run.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        record["candidate"],
        "codex-cli gpt-spare (fallback after codex-cli gpt-limited was rate limited)"
    );
    assert!(
        record["env_names"]
            .as_array()
            .is_some_and(|names| names.iter().any(|n| n == "SPARE")),
        "{record}"
    );
    assert!(
        result["runs"][1]["summary"]
            .as_str()
            .is_some_and(|s| s.contains("gpt-spare, SPARE=yes")),
        "{result}"
    );
}

#[test]
fn a_forced_worker_is_not_switched_after_a_rate_limit() {
    let FallbackRun {
        output: o,
        result,
        note,
        models,
        ..
    } = run_worker_fallback("worker-forced", "    force: {enabled: true}\n");
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_ne!(result["status"], "complete", "{result}");
    assert_eq!(
        models, ["gpt-limited"; 3],
        "every run used the forced model: {note}"
    );
    assert!(
        note.contains("- tooling: worker: codex-cli gpt-limited (forced)"),
        "{note}"
    );
    assert!(
        note.contains(
            "- tooling: run-3 with codex-cli gpt-limited was rate limited (ERROR: exceeded retry limit, last status: 429 Too Many Requests); no fallback: the worker is forced (`force.enabled`), and a forced candidate is always used"
        ),
        "{note}"
    );
}
