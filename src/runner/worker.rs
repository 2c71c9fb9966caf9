//! The worker: which coding-agent CLI does the coding (the `runner.worker` block of the
//! task YAML), the exact command line each CLI gets, the environment it runs with, where
//! its login lives, and how its final message is read back from what it printed.
//!
//! Nothing here runs a process; the sandbox does that. The argv builders are pure so their
//! output can be pinned by golden tests (each flag once: the original doubled them, AR-M5).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `max_run_time_sec` when the task does not say.
pub(crate) const DEFAULT_MAX_RUN_TIME_SEC: u64 = 1800;
/// The longest summary kept from a worker's final message, in characters.
pub(crate) const SUMMARY_CHARS: usize = 4000;
/// The worker's home inside the container (a tmpfs the sandbox makes for the run user).
pub(crate) use super::sandbox_policy::CONTAINER_HOME;

/// Which coding-agent CLI does the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum WorkerKind {
    /// OpenAI Codex CLI (`codex exec`).
    #[default]
    CodexCli,
    /// Anthropic Claude Code (`claude -p`).
    ClaudeCode,
    /// Google Gemini CLI (`gemini`, headless).
    GeminiCli,
    /// Any other agent CLI: `command` (program and arguments) gets the prompt on stdin
    /// and works in the repository (the current directory).
    Command,
}

/// The `runner.worker` block of the task YAML.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkerConfig {
    /// The coding-agent CLI: `codex-cli` (default), `claude-code` or `gemini-cli`.
    #[serde(default)]
    pub kind: WorkerKind,
    /// The model the worker uses; the CLI's own default when absent. The planner may
    /// override it for one run.
    #[serde(default)]
    pub model: Option<String>,
    /// The Docker image the worker runs in; a default per kind when absent. The image must
    /// contain the worker's CLI (AgentRunner does not install it).
    #[serde(default)]
    pub docker_image: Option<String>,
    /// Wall-clock limit of one worker run, in seconds (at least 1; default 1800).
    #[serde(default = "default_max_run_time_sec")]
    #[schemars(range(min = 1))]
    pub max_run_time_sec: u64,
    /// The worker's login file or directory on the host, absolute or relative to `$HOME`;
    /// replaces the default place (`~/.codex/auth.json`, `~/.claude/.credentials.json`,
    /// `~/.gemini`). It is mounted read-only into the sandbox.
    #[serde(default)]
    pub auth_path: Option<String>,
    /// Environment of the worker: `KEY: value`, where a value `env:HOSTVAR` is read from
    /// the host's environment when the worker runs. Values never appear on a command line.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Extra command-line flags for the worker CLI, after the ones AgentRunner sets.
    #[serde(default)]
    pub flags: Vec<String>,
    /// For `kind: command`: the program and its arguments. A relative program path
    /// (`./agents/fix.sh`) is relative to the task file's directory.
    #[serde(default)]
    pub command: Vec<String>,
}

fn default_max_run_time_sec() -> u64 {
    DEFAULT_MAX_RUN_TIME_SEC
}

impl Default for WorkerConfig {
    fn default() -> WorkerConfig {
        WorkerConfig {
            kind: WorkerKind::default(),
            model: None,
            docker_image: None,
            max_run_time_sec: DEFAULT_MAX_RUN_TIME_SEC,
            auth_path: None,
            env: BTreeMap::new(),
            flags: Vec::new(),
            command: Vec::new(),
        }
    }
}

/// One request to the worker: what to do, and the planner's model choice for this run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Invocation {
    pub prompt: String,
    pub model: Option<String>,
}

/// A worker block that cannot be run as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerConfigError {
    /// `max_run_time_sec: 0`.
    ZeroRunTime,
    /// `model: ""`.
    EmptyModel,
    /// `env: {"MY-KEY": x}`: not a name a shell or `docker exec -e` accepts.
    BadEnvName { key: String },
    /// `env: {TOKEN: "env:"}`.
    EmptyHostVar { key: String },
    /// `env: {TOKEN: "env:MY_TOKEN"}` while the host has no `MY_TOKEN`.
    MissingHostVar { key: String, var: String },
    /// `flags: [""]`.
    EmptyFlag,
    /// `kind: command` without a `command`, or a `command` for another kind.
    Command { kind: WorkerKind },
}

impl std::fmt::Display for WorkerConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkerConfigError::ZeroRunTime => {
                write!(f, "runner.worker.max_run_time_sec must be at least 1")
            }
            WorkerConfigError::EmptyModel => write!(f, "runner.worker.model is empty"),
            WorkerConfigError::BadEnvName { key } => write!(
                f,
                "runner.worker.env key {key:?} is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)"
            ),
            WorkerConfigError::EmptyHostVar { key } => write!(
                f,
                "runner.worker.env.{key} is \"env:\" without a host variable name"
            ),
            WorkerConfigError::MissingHostVar { key, var } => write!(
                f,
                "runner.worker.env.{key} reads the host variable {var}, which is not set"
            ),
            WorkerConfigError::EmptyFlag => write!(f, "runner.worker.flags holds an empty flag"),
            WorkerConfigError::Command {
                kind: WorkerKind::Command,
            } => write!(
                f,
                "runner.worker.kind is command, but runner.worker.command names no program"
            ),
            WorkerConfigError::Command { kind } => write!(
                f,
                "runner.worker.command is only for kind: command; {} runs its own CLI",
                kind.name()
            ),
        }
    }
}

impl std::error::Error for WorkerConfigError {}

fn is_env_name(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Where a login for the worker was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthMount {
    pub host: PathBuf,
    /// Where it is mounted (read-only) inside the sandbox.
    pub container: String,
}

/// The worker's login as found on the host: files to mount and API-key variables that are
/// set (passed on to the worker by name).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Auth {
    pub mounts: Vec<AuthMount>,
    pub env_vars: Vec<String>,
    /// Every place looked at, for the preflight message when nothing was found.
    pub searched: Vec<String>,
    /// A login that exists but may not work inside a container (said in the preflight).
    pub caveat: Option<String>,
}

impl Auth {
    pub fn found(&self) -> bool {
        !self.mounts.is_empty() || !self.env_vars.is_empty() || self.caveat.is_some()
    }
}

impl WorkerKind {
    /// The kind as written in the task YAML.
    pub fn name(self) -> &'static str {
        match self {
            WorkerKind::CodexCli => "codex-cli",
            WorkerKind::ClaudeCode => "claude-code",
            WorkerKind::GeminiCli => "gemini-cli",
            WorkerKind::Command => "command",
        }
    }

    /// The CLI's program name.
    pub fn program(self) -> &'static str {
        match self {
            WorkerKind::CodexCli => "codex",
            WorkerKind::ClaudeCode => "claude",
            WorkerKind::GeminiCli => "gemini",
            WorkerKind::Command => "the worker command",
        }
    }

    /// Host variables that log the CLI in on their own; passed to the worker by name.
    pub fn auth_env_vars(self) -> &'static [&'static str] {
        match self {
            WorkerKind::CodexCli => &["CODEX_API_KEY", "OPENAI_API_KEY"],
            WorkerKind::ClaudeCode => &["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"],
            WorkerKind::GeminiCli => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
            WorkerKind::Command => &[],
        }
    }

    /// The CLI's config directory, relative to a home directory.
    fn config_dir(self) -> &'static str {
        match self {
            WorkerKind::CodexCli => ".codex",
            WorkerKind::ClaudeCode => ".claude",
            WorkerKind::GeminiCli => ".gemini",
            WorkerKind::Command => ".agent-runner",
        }
    }

    /// The login file inside the config directory; `None` when the whole directory is the
    /// login (Gemini keeps several files there).
    fn auth_file(self) -> Option<&'static str> {
        match self {
            WorkerKind::CodexCli => Some("auth.json"),
            WorkerKind::ClaudeCode => Some(".credentials.json"),
            WorkerKind::GeminiCli | WorkerKind::Command => None,
        }
    }

    /// Flags AgentRunner always passes, for dropping a user flag that repeats one (AR-M5).
    fn fixed_flags(self) -> &'static [&'static str] {
        match self {
            WorkerKind::CodexCli => &[
                "exec",
                "--json",
                "--dangerously-bypass-approvals-and-sandbox",
                "--skip-git-repo-check",
            ],
            WorkerKind::ClaudeCode => &["-p", "--print", "--dangerously-skip-permissions"],
            WorkerKind::GeminiCli => &["--yolo", "-y"],
            WorkerKind::Command => &[],
        }
    }
}

impl WorkerConfig {
    /// Checks what serde cannot: a positive run time, a non-empty model and flags, and
    /// environment names `docker exec -e` accepts.
    pub fn validate(&self) -> Result<(), WorkerConfigError> {
        if self.max_run_time_sec == 0 {
            return Err(WorkerConfigError::ZeroRunTime);
        }
        if self.model.as_deref().is_some_and(|m| m.trim().is_empty()) {
            return Err(WorkerConfigError::EmptyModel);
        }
        if self.flags.iter().any(String::is_empty) {
            return Err(WorkerConfigError::EmptyFlag);
        }
        let has_command = self.command.first().is_some_and(|p| !p.trim().is_empty());
        if has_command != (self.kind == WorkerKind::Command) {
            return Err(WorkerConfigError::Command { kind: self.kind });
        }
        for (key, value) in &self.env {
            if !is_env_name(key) {
                return Err(WorkerConfigError::BadEnvName { key: key.clone() });
            }
            if value.strip_prefix("env:").is_some_and(str::is_empty) {
                return Err(WorkerConfigError::EmptyHostVar { key: key.clone() });
            }
        }
        Ok(())
    }

    pub fn max_run_time(&self) -> Duration {
        Duration::from_secs(self.max_run_time_sec.max(1))
    }

    /// The program the worker runs (for preflight and messages).
    pub fn program(&self) -> String {
        match self.kind {
            WorkerKind::Command => self.command.first().cloned().unwrap_or_default(),
            kind => kind.program().to_string(),
        }
    }

    /// The worker's command line; the prompt goes to stdin (`Invocation::prompt`), so it
    /// is neither limited by the argv size nor visible in `ps`.
    pub fn argv(&self, invocation: &Invocation, workdir: &str) -> Vec<String> {
        let model = invocation
            .model
            .as_deref()
            .or(self.model.as_deref())
            .filter(|m| !m.trim().is_empty());
        let mut argv: Vec<String> = Vec::new();
        let mut push = |items: &[&str]| argv.extend(items.iter().map(|s| (*s).to_string()));
        match self.kind {
            WorkerKind::CodexCli => {
                push(&[
                    "codex",
                    "exec",
                    "--json",
                    "--dangerously-bypass-approvals-and-sandbox",
                    "--skip-git-repo-check",
                    "-C",
                    workdir,
                ]);
                if let Some(model) = model {
                    push(&["-m", model]);
                }
            }
            WorkerKind::ClaudeCode => {
                push(&[
                    "claude",
                    "-p",
                    "--output-format",
                    "json",
                    "--dangerously-skip-permissions",
                ]);
                if let Some(model) = model {
                    push(&["--model", model]);
                }
            }
            WorkerKind::GeminiCli => {
                // No `-p`: the Gemini CLI runs headless when stdin is not a terminal and
                // reads the prompt from it; `-p TEXT` would only be appended to it.
                push(&["gemini", "--output-format", "json", "--yolo"]);
                if let Some(model) = model {
                    push(&["-m", model]);
                }
            }
            // Its own arguments as written; a model choice has no flag to go to.
            WorkerKind::Command => argv.extend(self.command.iter().cloned()),
        }
        let fixed = self.kind.fixed_flags();
        for flag in &self.flags {
            if fixed.contains(&flag.as_str()) {
                tracing::warn!(
                    flag,
                    kind = self.kind.name(),
                    "dropping a worker flag AgentRunner already passes"
                );
                continue;
            }
            argv.push(flag.clone());
        }
        if self.kind == WorkerKind::CodexCli {
            // `-` makes `codex exec` read the prompt from stdin.
            argv.push("-".to_string());
        }
        argv
    }

    /// The worker's environment: API-key variables of its kind that the host has, the
    /// kind's fixed settings, then `env` (which wins), with `env:HOSTVAR` values read
    /// through `host_env`. Sorted by key.
    pub fn resolve_env(
        &self,
        host_env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Vec<(String, String)>, WorkerConfigError> {
        self.validate()?;
        let mut env = BTreeMap::new();
        for var in self.kind.auth_env_vars() {
            if let Some(value) = host_env(var).filter(|v| !v.is_empty()) {
                env.insert((*var).to_string(), value);
            }
        }
        if self.kind == WorkerKind::ClaudeCode {
            // Claude Code refuses --dangerously-skip-permissions as root unless it is told
            // it runs in a sandbox; the worker images run as root.
            env.insert("IS_SANDBOX".to_string(), "1".to_string());
        }
        for (key, value) in &self.env {
            let value = match value.strip_prefix("env:") {
                Some(var) => host_env(var).ok_or_else(|| WorkerConfigError::MissingHostVar {
                    key: key.clone(),
                    var: var.to_string(),
                })?,
                None => value.clone(),
            };
            env.insert(key.clone(), value);
        }
        Ok(env.into_iter().collect())
    }

    /// Where the worker's login is on this host: `auth_path` (absolute or under `home`)
    /// or the kind's default file, and which API-key variables are set. Only this kind's
    /// login is looked at, so only it is mounted (AR-M28).
    pub fn find_auth(
        &self,
        home: Option<&Path>,
        host_env: &dyn Fn(&str) -> Option<String>,
    ) -> Auth {
        let kind = self.kind;
        let container_dir = format!("{CONTAINER_HOME}/{}", kind.config_dir());
        let mut auth = Auth::default();
        let candidate = match (&self.auth_path, home) {
            (Some(path), _) if Path::new(path).is_absolute() => Some(PathBuf::from(path)),
            (Some(path), Some(home)) => Some(home.join(path.strip_prefix("~/").unwrap_or(path))),
            (Some(path), None) => {
                auth.searched
                    .push(format!("{path} (relative, but HOME is not set)"));
                None
            }
            (None, Some(home)) => Some(match kind.auth_file() {
                Some(file) => home.join(kind.config_dir()).join(file),
                None => home.join(kind.config_dir()),
            }),
            (None, None) => None,
        };
        if let Some(host) = candidate {
            auth.searched.push(host.display().to_string());
            let container = if host.is_dir() {
                Some(container_dir.clone())
            } else if host.is_file() {
                Some(match kind.auth_file() {
                    // The CLI looks for its own file name, whatever the host file is called.
                    Some(file) => format!("{container_dir}/{file}"),
                    None => format!(
                        "{container_dir}/{}",
                        host.file_name()
                            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
                    ),
                })
            } else {
                None
            };
            if let Some(container) = container {
                auth.mounts.push(AuthMount { host, container });
            }
        }
        if kind == WorkerKind::ClaudeCode
            && auth.mounts.is_empty()
            && self.auth_path.is_none()
            && let Some(home) = home
        {
            let state = home.join(".claude.json");
            auth.searched.push(state.display().to_string());
            if state.is_file() {
                // On macOS the credentials live in the keychain; ~/.claude.json alone is a
                // login state that may not carry into a Linux container.
                auth.caveat = Some(format!(
                    "found {} but no credentials file; the login may be in the OS keychain and not reach the sandbox",
                    state.display()
                ));
            }
        }
        for var in kind.auth_env_vars() {
            auth.searched.push(format!("${var}"));
            if host_env(var).is_some_and(|v| !v.is_empty()) {
                auth.env_vars.push((*var).to_string());
            }
        }
        auth
    }
}

/// The worker's final message, read from its stdout: Codex's last `agent_message` item,
/// Claude's `result`, Gemini's `response`; otherwise the last non-empty lines. At most
/// [`SUMMARY_CHARS`] characters, cut on a character boundary (AR-M2).
pub(crate) fn summary(kind: WorkerKind, stdout: &str) -> String {
    let found = match kind {
        WorkerKind::CodexCli => codex_message(stdout),
        WorkerKind::ClaudeCode => json_field(stdout, "result"),
        WorkerKind::GeminiCli => json_field(stdout, "response"),
        WorkerKind::Command => None,
    };
    // A user flag may have changed the output format; any known shape will do.
    let found = found
        .or_else(|| codex_message(stdout))
        .or_else(|| json_field(stdout, "result"))
        .or_else(|| json_field(stdout, "response"));
    match found {
        Some(text) => truncate_chars(text.trim(), SUMMARY_CHARS),
        None => last_lines(stdout, SUMMARY_CHARS),
    }
}

/// The first `max` characters of `text`, with a marker when something was cut.
pub(crate) fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}

/// The last non-empty lines of `text`, at most `max` characters of them.
fn last_lines(text: &str, max: usize) -> String {
    let mut lines: Vec<&str> = Vec::new();
    let mut chars = 0;
    for line in text
        .lines()
        .rev()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
    {
        let count = line.chars().count() + 1;
        if chars + count > max {
            if lines.is_empty() {
                let skip = line.chars().count().saturating_sub(max);
                return line.chars().skip(skip).collect();
            }
            break;
        }
        chars += count;
        lines.push(line);
    }
    lines.reverse();
    lines.join("\n")
}

/// The last agent message of a Codex `exec --json` stream: the current
/// `{"type":"item.completed","item":{"type":"agent_message","text":…}}` and the older
/// `{"msg":{"type":"agent_message","message":…}}`.
fn codex_message(stdout: &str) -> Option<String> {
    stdout.lines().rev().find_map(|line| {
        let line = line.trim();
        if !line.starts_with('{') {
            return None;
        }
        let event: Value = serde_json::from_str(line).ok()?;
        if event.get("type").and_then(Value::as_str) == Some("item.completed") {
            let item = event.get("item")?;
            if item.get("type").and_then(Value::as_str) == Some("agent_message") {
                return item.get("text").and_then(Value::as_str).map(str::to_string);
            }
            return None;
        }
        let msg = event.get("msg")?;
        if msg.get("type").and_then(Value::as_str) == Some("agent_message") {
            return msg
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        None
    })
}

/// A string field of the JSON object the CLI printed: the whole output, the last line
/// holding it (a stream), or the object starting at the first line that opens one (a CLI
/// may print a notice before its JSON).
fn json_field(stdout: &str, field: &str) -> Option<String> {
    let of = |value: &Value| value.get(field).and_then(Value::as_str).map(str::to_string);
    if let Ok(value) = serde_json::from_str::<Value>(stdout.trim()) {
        return of(&value);
    }
    if let Some(text) = stdout
        .lines()
        .rev()
        .filter(|l| l.trim_start().starts_with('{'))
        .find_map(|l| {
            serde_json::from_str::<Value>(l.trim())
                .ok()
                .as_ref()
                .and_then(of)
        })
    {
        return Some(text);
    }
    let mut offset = 0;
    for line in stdout.split_inclusive('\n') {
        if line.trim_start().starts_with('{') {
            let mut values =
                serde_json::Deserializer::from_str(&stdout[offset..]).into_iter::<Value>();
            if let Some(Ok(value)) = values.next() {
                return of(&value);
            }
            return None;
        }
        offset += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A temporary directory removed when the test ends, pass or fail.
    struct TempDir(std::path::PathBuf);

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn config(kind: WorkerKind) -> WorkerConfig {
        WorkerConfig {
            kind,
            ..WorkerConfig::default()
        }
    }

    fn invocation(model: Option<&str>) -> Invocation {
        Invocation {
            prompt: "fix it".to_string(),
            model: model.map(str::to_string),
        }
    }

    fn joined(config: &WorkerConfig, model: Option<&str>) -> String {
        config
            .argv(&invocation(model), "/workspace/project")
            .join(" ")
    }

    #[test]
    fn codex_argv_golden() {
        let mut c = config(WorkerKind::CodexCli);
        assert_eq!(
            joined(&c, None),
            "codex exec --json --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check -C /workspace/project -"
        );
        c.model = Some("gpt-5.1-codex".into());
        c.flags = vec!["-c".into(), "reasoning_effort=high".into()];
        assert_eq!(
            joined(&c, None),
            "codex exec --json --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check -C /workspace/project -m gpt-5.1-codex -c reasoning_effort=high -"
        );
        // The planner's per-run model wins over the configured one.
        assert!(joined(&c, Some("o3")).contains("-m o3 -c"));
    }

    #[test]
    fn claude_argv_golden() {
        let mut c = config(WorkerKind::ClaudeCode);
        assert_eq!(
            joined(&c, None),
            "claude -p --output-format json --dangerously-skip-permissions"
        );
        c.flags = vec!["--max-turns".into(), "40".into()];
        assert_eq!(
            joined(&c, Some("sonnet")),
            "claude -p --output-format json --dangerously-skip-permissions --model sonnet --max-turns 40"
        );
    }

    #[test]
    fn gemini_argv_golden() {
        let mut c = config(WorkerKind::GeminiCli);
        assert_eq!(joined(&c, None), "gemini --output-format json --yolo");
        c.model = Some("gemini-2.5-pro".into());
        c.flags = vec!["--include-directories".into(), "../lib".into()];
        assert_eq!(
            joined(&c, None),
            "gemini --output-format json --yolo -m gemini-2.5-pro --include-directories ../lib"
        );
    }

    #[test]
    fn m5_flags_appear_once() {
        for kind in [
            WorkerKind::CodexCli,
            WorkerKind::ClaudeCode,
            WorkerKind::GeminiCli,
        ] {
            let mut c = config(kind);
            c.flags = vec![
                "--verbose".into(),
                "--json".into(),
                "--yolo".into(),
                "-p".into(),
            ];
            c.flags
                .extend(kind.fixed_flags().iter().map(|f| (*f).to_string()));
            let argv = c.argv(&invocation(Some("m")), "/w");
            for flag in ["--verbose", "--json", "--yolo", "-p", "-m", "--model"] {
                let count = argv.iter().filter(|a| *a == flag).count();
                assert!(count <= 1, "{flag} appears {count} times in {argv:?}");
            }
            assert_eq!(argv.iter().filter(|a| *a == "--verbose").count(), 1);
        }
    }

    #[test]
    fn the_yaml_block_parses_with_defaults_and_rejects_unknowns() {
        let c: WorkerConfig = serde_json::from_value(serde_json::json!({})).unwrap();
        assert_eq!(c, WorkerConfig::default());
        let c: WorkerConfig = serde_json::from_value(serde_json::json!({
            "kind": "claude-code", "model": "opus", "max_run_time_sec": 60,
            "env": {"A": "1"}, "flags": ["--x"]
        }))
        .unwrap();
        assert_eq!(c.kind, WorkerKind::ClaudeCode);
        assert_eq!(c.max_run_time(), Duration::from_secs(60));
        assert!(
            serde_json::from_value::<WorkerConfig>(serde_json::json!({"kind": "cursor-cli"}))
                .is_err()
        );
        assert!(serde_json::from_value::<WorkerConfig>(serde_json::json!({"timeout": 3})).is_err());
    }

    #[test]
    fn env_reads_host_variables_and_rejects_bad_names() {
        let mut c = config(WorkerKind::CodexCli);
        c.env.insert("TOKEN".into(), "env:HOST_TOKEN".into());
        c.env.insert("MODE".into(), "fast".into());
        let host = |k: &str| match k {
            "HOST_TOKEN" => Some("s3cret".to_string()),
            "OPENAI_API_KEY" => Some("sk".to_string()),
            _ => None,
        };
        let env = c.resolve_env(&host).unwrap();
        assert_eq!(
            env,
            vec![
                ("MODE".to_string(), "fast".to_string()),
                ("OPENAI_API_KEY".to_string(), "sk".to_string()),
                ("TOKEN".to_string(), "s3cret".to_string()),
            ]
        );
        let err = c.resolve_env(&|_| None).unwrap_err();
        assert!(err.to_string().contains("HOST_TOKEN"), "{err}");
        c.env.insert("BAD-NAME".into(), "x".into());
        assert!(matches!(
            c.resolve_env(&host),
            Err(WorkerConfigError::BadEnvName { .. })
        ));
        let claude = config(WorkerKind::ClaudeCode)
            .resolve_env(&|_| None)
            .unwrap();
        assert_eq!(claude, vec![("IS_SANDBOX".to_string(), "1".to_string())]);
    }

    #[test]
    fn codex_summary_is_the_last_agent_message() {
        let stream = [
            r#"{"type":"thread.started","thread_id":"t"}"#,
            r#"{"type":"item.completed","item":{"id":"0","type":"agent_message","text":"first"}}"#,
            r#"{"type":"item.completed","item":{"id":"1","type":"command_execution","command":"ls"}}"#,
            r#"{"type":"item.completed","item":{"id":"2","type":"agent_message","text":"Fixed the bug."}}"#,
            r#"{"type":"turn.completed","usage":{}}"#,
        ]
        .join("\n");
        assert_eq!(summary(WorkerKind::CodexCli, &stream), "Fixed the bug.");
        let old = r#"{"msg":{"type":"agent_message","message":"old style"}}"#;
        assert_eq!(summary(WorkerKind::CodexCli, old), "old style");
    }

    #[test]
    fn claude_and_gemini_summaries_read_their_json() {
        let claude =
            r#"{"type":"result","subtype":"success","is_error":false,"result":"Done: 2 files."}"#;
        assert_eq!(summary(WorkerKind::ClaudeCode, claude), "Done: 2 files.");
        let gemini = "Loaded cached credentials.\n{\n  \"response\": \"Added the test.\",\n  \"stats\": {}\n}\n";
        assert_eq!(summary(WorkerKind::GeminiCli, gemini), "Added the test.");
    }

    #[test]
    fn without_json_the_summary_is_the_last_lines_bounded_by_chars() {
        assert_eq!(summary(WorkerKind::CodexCli, "a\n\nb\nc\n\n"), "a\nb\nc");
        let long = "日本語".repeat(3000);
        let s = summary(WorkerKind::ClaudeCode, &long);
        assert_eq!(s.chars().count(), SUMMARY_CHARS);
        let message = format!(r#"{{"type":"result","result":"{long}"}}"#);
        let s = summary(WorkerKind::ClaudeCode, &message);
        assert_eq!(s.chars().count(), SUMMARY_CHARS + 1);
        assert!(s.ends_with('…'));
        assert_eq!(summary(WorkerKind::GeminiCli, ""), "");
    }

    #[test]
    fn auth_is_found_only_for_the_chosen_kind() {
        let home =
            std::env::temp_dir().join(format!("code-intel-worker-auth-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&home);
        let _home = TempDir(home.clone());
        std::fs::create_dir_all(home.join(".codex")).unwrap();
        std::fs::create_dir_all(home.join(".gemini")).unwrap();
        std::fs::write(home.join(".codex/auth.json"), "{}").unwrap();
        let none = |_: &str| None;
        let codex = config(WorkerKind::CodexCli).find_auth(Some(&home), &none);
        assert_eq!(codex.mounts.len(), 1);
        assert_eq!(codex.mounts[0].container, "/home/agent/.codex/auth.json");
        let claude = config(WorkerKind::ClaudeCode).find_auth(Some(&home), &none);
        assert!(!claude.found(), "{claude:?}");
        let gemini = config(WorkerKind::GeminiCli).find_auth(Some(&home), &none);
        assert_eq!(gemini.mounts[0].container, "/home/agent/.gemini");
        let mut custom = config(WorkerKind::ClaudeCode);
        custom.auth_path = Some("~/.codex/auth.json".into());
        let found = custom.find_auth(Some(&home), &none);
        assert_eq!(
            found.mounts[0].container,
            "/home/agent/.claude/.credentials.json"
        );
        let _ = std::fs::remove_dir_all(&home);
    }
}
