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

use super::model_name::{ModelNameError, check_model_name};
use super::protocol::response::WorkerCall;

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
    /// Cursor's agent CLI (`cursor-agent -p`, headless).
    CursorCli,
    /// Any other agent CLI: `command` (program and arguments) gets the prompt on stdin
    /// and works in the repository (the current directory).
    Command,
}

/// The `runner.worker` block of the task YAML.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkerConfig {
    /// The coding-agent CLI: `codex-cli` (default), `claude-code`, `gemini-cli`,
    /// `cursor-cli`, or `command`.
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

/// The Codex worker's model when neither the task nor the planner names one. The
/// original's code at its last public commit (`agenttools/codex.go`) used
/// `gpt-5.1-codex`; only its later, unverifiable design notes say `gpt-5.2-codex`, so the
/// verified value is kept (a task or the planner can name any other).
pub(crate) const DEFAULT_CODEX_MODEL: &str = "gpt-5.1-codex";
/// The Codex worker's reasoning effort when nobody says (the original's `medium`).
pub(crate) const DEFAULT_REASONING_EFFORT: &str = "medium";
/// Codex's config key for the effort. The original passed `-c reasoning_effort=...`, a
/// key Codex does not read (its config reference names `model_reasoning_effort`), so its
/// effort never took effect.
const CODEX_EFFORT_KEY: &str = "model_reasoning_effort";
/// The longest planner-chosen model name or environment value accepted.
const MAX_PLANNER_VALUE_CHARS: usize = 200;

/// One request to the worker: what to do, and what the planner chose for this run among
/// what the kind's allow-list admits ([`Invocation::admit`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Invocation {
    pub prompt: String,
    pub model: Option<String>,
    /// Codex only, normalised (`minimal`, `low`, `medium` or `high`).
    pub reasoning_effort: Option<String>,
    /// Planner flags that passed the kind's allow-list, after the task's own.
    pub flags: Vec<String>,
    /// Planner environment that passed the kind's allow-list; the task's `env` wins.
    pub env: BTreeMap<String, String>,
    /// What the planner asked for and did not get (or got changed), one sentence each,
    /// for the run record and the Task Note.
    pub refused: Vec<String>,
}

/// What a planner-chosen flag may be followed by.
#[derive(Debug, Clone, Copy)]
enum FlagValue {
    /// A switch: nothing.
    None,
    /// A whole number.
    Number,
    /// `KEY=VALUE` with KEY one of these and VALUE a lower-case word.
    Config(&'static [&'static str]),
}

/// Flags the planner may add per kind: ones that change how much the agent says or
/// thinks, never what it may touch (no sandbox, approval, directory, tool or config-file
/// flag).
fn planner_flags(kind: WorkerKind) -> &'static [(&'static str, FlagValue)] {
    const CODEX_KEYS: &[&str] = &["model_reasoning_summary", "model_verbosity"];
    match kind {
        WorkerKind::CodexCli => &[
            ("-c", FlagValue::Config(CODEX_KEYS)),
            ("--config", FlagValue::Config(CODEX_KEYS)),
        ],
        WorkerKind::ClaudeCode => &[
            ("--max-turns", FlagValue::Number),
            ("--verbose", FlagValue::None),
        ],
        WorkerKind::GeminiCli => &[("--debug", FlagValue::None), ("-d", FlagValue::None)],
        WorkerKind::CursorCli => &[],
        // The command's arguments are the task's; the planner adds none.
        WorkerKind::Command => &[],
    }
}

/// Environment names the planner may set per kind: logging and limits of the CLI itself.
/// Never `PATH`, `LD_*`, `HOME` or a login variable (none is on a list).
fn planner_env(kind: WorkerKind) -> &'static [&'static str] {
    match kind {
        WorkerKind::CodexCli => &["NO_COLOR", "RUST_BACKTRACE", "RUST_LOG"],
        WorkerKind::ClaudeCode => &[
            "BASH_DEFAULT_TIMEOUT_MS",
            "BASH_MAX_TIMEOUT_MS",
            "DISABLE_TELEMETRY",
            "MAX_THINKING_TOKENS",
            "NO_COLOR",
        ],
        WorkerKind::GeminiCli => &["DEBUG", "NO_COLOR"],
        WorkerKind::CursorCli => &["NO_COLOR"],
        WorkerKind::Command => &[],
    }
}

/// The original's normalisation of a Codex reasoning effort: `xhigh`, `extra_high` and
/// `very_high` become `high`, an unknown value `medium`.
pub(crate) fn normalize_effort(effort: &str) -> &'static str {
    match effort.trim().to_ascii_lowercase().as_str() {
        "minimal" => "minimal",
        "low" => "low",
        "medium" => "medium",
        "high" | "xhigh" | "extra_high" | "very_high" => "high",
        _ => DEFAULT_REASONING_EFFORT,
    }
}

/// A model name a CLI can take as one argument: no leading `-` (it would be read as a
/// flag), no spaces or shell-looking characters.
fn is_model_name(model: &str) -> bool {
    let mut chars = model.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && model.chars().count() <= MAX_PLANNER_VALUE_CHARS
        && chars.all(|c| c.is_ascii_alphanumeric() || "._:/@-".contains(c))
}

impl Invocation {
    /// The planner's `worker_call` as far as `kind` admits it: the prompt; the model, the
    /// reasoning effort (Codex), flags and environment through the kind's allow-lists.
    /// Everything else it asked for (its own program, directory, kind, mode, stdin,
    /// sampling) is the task's to decide: each refusal is named in `refused`, nothing is
    /// dropped silently and nothing refused reaches the worker (the original passed the
    /// whole call on, so the planner could choose the program and its environment).
    pub fn admit(kind: WorkerKind, call: &WorkerCall) -> Invocation {
        let mut refused = Vec::new();
        let model = call
            .model
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty());
        let model = match model {
            Some(m) if kind == WorkerKind::Command => {
                refused.push(format!(
                    "worker_call.model {m:?} refused: a kind: command worker has no model flag"
                ));
                None
            }
            Some(m) if !is_model_name(m) => {
                refused.push(format!(
                    "worker_call.model {m:?} refused: not a model name (letters, digits and ._:/@-, not starting with -)"
                ));
                None
            }
            m => m.map(str::to_string),
        };
        let reasoning_effort = match call.reasoning_effort.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(effort) if kind == WorkerKind::CodexCli => {
                let normal = normalize_effort(effort);
                if normal != effort {
                    refused.push(format!(
                        "worker_call.reasoning_effort {effort:?} changed to {normal:?} (Codex takes minimal, low, medium or high)"
                    ));
                }
                Some(normal.to_string())
            }
            Some(effort) => {
                refused.push(format!(
                    "worker_call.reasoning_effort {effort:?} refused: only the codex-cli worker takes one, this is {}",
                    kind.name()
                ));
                None
            }
        };
        let flags = admit_flags(kind, &call.flags, &mut refused);
        let mut env = BTreeMap::new();
        for (key, value) in &call.env {
            if !planner_env(kind).contains(&key.as_str()) {
                refused.push(format!(
                    "worker_call.env.{key} refused: not on the {} allow-list ({})",
                    kind.name(),
                    list_or_none(planner_env(kind).iter().copied())
                ));
            } else if value.starts_with("env:")
                || value.chars().count() > MAX_PLANNER_VALUE_CHARS
                || value.chars().any(char::is_control)
            {
                refused.push(format!(
                    "worker_call.env.{key} refused: a plain value of at most {MAX_PLANNER_VALUE_CHARS} characters is expected (host variables are the task's to pass)"
                ));
            } else {
                env.insert(key.clone(), value.clone());
            }
        }
        for (field, why) in call.task_only_fields() {
            refused.push(format!("worker_call.{field} refused: {why}"));
        }
        Invocation {
            prompt: call.prompt.clone(),
            model,
            reasoning_effort,
            flags,
            env,
            refused,
        }
    }
}

fn list_or_none<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let items: Vec<&str> = items.collect();
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}

/// The planner's flags that `kind`'s allow-list admits, with their values checked; every
/// other token is named in `refused`.
fn admit_flags(kind: WorkerKind, flags: &[String], refused: &mut Vec<String>) -> Vec<String> {
    let allowed = planner_flags(kind);
    let mut admitted = Vec::new();
    let mut tokens = flags.iter();
    while let Some(flag) = tokens.next() {
        let Some((_, value)) = allowed.iter().find(|(f, _)| *f == flag.as_str()) else {
            refused.push(format!(
                "worker_call.flags {flag:?} refused: not on the {} allow-list ({})",
                kind.name(),
                list_or_none(allowed.iter().map(|(f, _)| *f))
            ));
            continue;
        };
        let ok = match value {
            FlagValue::None => {
                admitted.push(flag.clone());
                continue;
            }
            FlagValue::Number => tokens
                .next()
                .filter(|v| !v.is_empty() && v.len() <= 9 && v.chars().all(|c| c.is_ascii_digit())),
            FlagValue::Config(keys) => tokens.next().filter(|v| {
                v.split_once('=').is_some_and(|(k, val)| {
                    keys.contains(&k)
                        && !val.is_empty()
                        && val.len() <= 32
                        && val.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                })
            }),
        };
        match ok {
            Some(v) => admitted.extend([flag.clone(), v.clone()]),
            None => refused.push(format!(
                "worker_call.flags {flag:?} refused: its value is missing or not allowed ({})",
                match value {
                    FlagValue::Number => "a whole number".to_string(),
                    FlagValue::Config(keys) =>
                        format!("KEY=value with KEY one of {}", keys.join(", ")),
                    FlagValue::None => String::new(),
                }
            )),
        }
    }
    admitted
}

/// A worker block that cannot be run as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerConfigError {
    /// `max_run_time_sec: 0`.
    ZeroRunTime,
    /// `model: ""`.
    EmptyModel,
    /// `model: --dangerously-skip-permissions`: a model the CLI would read as an option
    /// (or one with whitespace or a control character).
    BadModel(ModelNameError),
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
            WorkerConfigError::BadModel(e) => write!(f, "runner.worker.model: {e}"),
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
            WorkerKind::CursorCli => "cursor-cli",
            WorkerKind::Command => "command",
        }
    }

    /// The CLI's program name.
    pub fn program(self) -> &'static str {
        match self {
            WorkerKind::CodexCli => "codex",
            WorkerKind::ClaudeCode => "claude",
            WorkerKind::GeminiCli => "gemini",
            WorkerKind::CursorCli => "cursor-agent",
            WorkerKind::Command => "the worker command",
        }
    }

    /// Host variables that log the CLI in on their own; passed to the worker by name.
    pub fn auth_env_vars(self) -> &'static [&'static str] {
        match self {
            WorkerKind::CodexCli => &["CODEX_API_KEY", "OPENAI_API_KEY"],
            WorkerKind::ClaudeCode => &["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"],
            WorkerKind::GeminiCli => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
            WorkerKind::CursorCli => &["CURSOR_API_KEY"],
            WorkerKind::Command => &[],
        }
    }

    /// The CLI's config directory, relative to a home directory.
    fn config_dir(self) -> &'static str {
        match self {
            WorkerKind::CodexCli => ".codex",
            WorkerKind::ClaudeCode => ".claude",
            WorkerKind::GeminiCli => ".gemini",
            // `cursor-agent login` keeps its login and CLI config there.
            WorkerKind::CursorCli => ".cursor",
            WorkerKind::Command => ".agent-runner",
        }
    }

    /// The login file inside the config directory; `None` when the whole directory is the
    /// login (Gemini keeps several files there).
    fn auth_file(self) -> Option<&'static str> {
        match self {
            WorkerKind::CodexCli => Some("auth.json"),
            WorkerKind::ClaudeCode => Some(".credentials.json"),
            WorkerKind::GeminiCli | WorkerKind::CursorCli | WorkerKind::Command => None,
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
            WorkerKind::CursorCli => &["-p", "--print", "--force", "-f", "--yolo", "--trust"],
            WorkerKind::Command => &[],
        }
    }
}

impl WorkerConfig {
    /// Checks what serde cannot: a positive run time, a model a CLI takes as a value
    /// (not empty, no leading `-`, no whitespace), non-empty flags, and environment names
    /// `docker exec -e` accepts.
    pub fn validate(&self) -> Result<(), WorkerConfigError> {
        if self.max_run_time_sec == 0 {
            return Err(WorkerConfigError::ZeroRunTime);
        }
        if let Some(model) = &self.model {
            if model.trim().is_empty() {
                return Err(WorkerConfigError::EmptyModel);
            }
            check_model_name(model).map_err(WorkerConfigError::BadModel)?;
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
    /// is neither limited by the argv size nor visible in `ps` (except for Cursor's CLI,
    /// which takes it only as its last argument). The task's flags come after
    /// AgentRunner's, the planner's admitted flags after the task's.
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
                    // One argument: the value cannot be taken for an option (see
                    // `check_model_name`, which refuses a model starting with `-` anyway).
                    &format!("--model={}", model.unwrap_or(DEFAULT_CODEX_MODEL)),
                ]);
                // The planner's effort, else the default unless the task's flags set one.
                let effort = invocation.reasoning_effort.as_deref().or_else(|| {
                    (!self.flags.iter().any(|f| {
                        f.starts_with(&format!("{CODEX_EFFORT_KEY}="))
                            || f.starts_with("reasoning_effort=")
                    }))
                    .then_some(DEFAULT_REASONING_EFFORT)
                });
                if let Some(effort) = effort {
                    push(&["-c", &format!("{CODEX_EFFORT_KEY}={effort}")]);
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
                    push(&[&format!("--model={model}")]);
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
            WorkerKind::CursorCli => {
                // `--force` runs its tool calls without asking, as the other kinds' bypass
                // flags do (the sandbox is the boundary); `--trust` skips the prompt to trust
                // the directory, which a fresh container's repository always raises.
                push(&[
                    "cursor-agent",
                    "-p",
                    "--output-format",
                    "json",
                    "--force",
                    "--trust",
                ]);
                if let Some(model) = model {
                    push(&["--model", model]);
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
        argv.extend(invocation.flags.iter().cloned());
        match self.kind {
            // `-` makes `codex exec` read the prompt from stdin.
            WorkerKind::CodexCli => argv.push("-".to_string()),
            // Cursor's CLI reads no prompt from stdin in print mode; `--` keeps a prompt
            // that starts with `-` from being read as a flag.
            WorkerKind::CursorCli => {
                argv.push("--".to_string());
                argv.push(invocation.prompt.clone());
            }
            _ => {}
        }
        argv
    }

    /// The worker's environment: API-key variables of its kind that the host has, the
    /// kind's fixed settings, the planner's admitted `planner` variables, then `env`
    /// (which wins), with `env:HOSTVAR` values read through `host_env`. Sorted by key.
    pub fn resolve_env(
        &self,
        planner: &BTreeMap<String, String>,
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
        // Admitted names are never login variables, so this cannot replace a key.
        env.extend(planner.iter().map(|(k, v)| (k.clone(), v.clone())));
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
/// Claude's and Cursor's `result`, Gemini's `response`; otherwise the last non-empty lines. At most
/// [`SUMMARY_CHARS`] characters, cut on a character boundary (AR-M2).
pub(crate) fn summary(kind: WorkerKind, stdout: &str) -> String {
    let found = match kind {
        WorkerKind::CodexCli => codex_message(stdout),
        WorkerKind::ClaudeCode => json_field(stdout, "result"),
        WorkerKind::GeminiCli => json_field(stdout, "response"),
        // `cursor-agent --output-format json` prints Claude Code's result envelope.
        WorkerKind::CursorCli => json_field(stdout, "result"),
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
            ..Invocation::default()
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
        // The original's defaults when neither the task nor the planner says.
        assert_eq!(
            joined(&c, None),
            "codex exec --json --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check -C /workspace/project --model=gpt-5.1-codex -c model_reasoning_effort=medium -"
        );
        // A task that sets the effort in its flags gets no default beside it.
        c.model = Some("gpt-5.2-codex".into());
        c.flags = vec!["-c".into(), "model_reasoning_effort=high".into()];
        assert_eq!(
            joined(&c, None),
            "codex exec --json --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check -C /workspace/project --model=gpt-5.2-codex -c model_reasoning_effort=high -"
        );
        // The planner's per-run model wins over the configured one.
        assert!(joined(&c, Some("o3")).contains("--model=o3 -c"));
        // The planner's effort and admitted flags, after the task's flags.
        let call = WorkerCall {
            prompt: "p".into(),
            reasoning_effort: Some("xhigh".into()),
            flags: vec!["-c".into(), "model_verbosity=low".into()],
            ..WorkerCall::default()
        };
        let argv = config(WorkerKind::CodexCli)
            .argv(&Invocation::admit(WorkerKind::CodexCli, &call), "/w")
            .join(" ");
        assert!(
            argv.ends_with(
                "--model=gpt-5.1-codex -c model_reasoning_effort=high -c model_verbosity=low -"
            ),
            "{argv}"
        );
    }

    #[test]
    fn cursor_argv_golden() {
        let mut c = config(WorkerKind::CursorCli);
        assert_eq!(
            joined(&c, None),
            "cursor-agent -p --output-format json --force --trust -- fix it"
        );
        c.flags = vec!["--force".into(), "--approve-mcps".into()];
        assert_eq!(
            joined(&c, Some("sonnet-4")),
            "cursor-agent -p --output-format json --force --trust --model sonnet-4 --approve-mcps -- fix it"
        );
    }

    #[test]
    fn the_planner_gets_only_what_the_kind_allows_and_every_refusal_is_named() {
        let mut env = BTreeMap::new();
        for key in [
            "NO_COLOR",
            "PATH",
            "LD_PRELOAD",
            "HOME",
            "OPENAI_API_KEY",
            "RUST_LOG",
        ] {
            env.insert(key.to_string(), "1".to_string());
        }
        env.insert("RUST_LOG".into(), "env:OPENAI_API_KEY".into());
        let call = WorkerCall {
            prompt: "fix it".into(),
            model: Some("-rf".into()),
            reasoning_effort: Some("very_high".into()),
            flags: vec![
                "--dangerously-bypass-approvals-and-sandbox".into(),
                "-c".into(),
                "sandbox_mode=danger-full-access".into(),
                "--config".into(),
                "model_reasoning_summary=concise".into(),
                "--add-dir".into(),
                "/".into(),
            ],
            env,
            cli_path: Some(serde_json::json!("/tmp/evil")),
            workdir: Some(serde_json::json!("/")),
            worker_type: Some(serde_json::json!("claude-code")),
            use_stdin: Some(serde_json::json!(false)),
            mode: Some(serde_json::json!("exec")),
            temperature: Some(serde_json::json!(0.2)),
            max_tokens: Some(serde_json::json!(100)),
            tool_specific: Some(serde_json::json!({"x": 1})),
        };
        let inv = Invocation::admit(WorkerKind::CodexCli, &call);
        assert_eq!(inv.model, None);
        assert_eq!(inv.reasoning_effort.as_deref(), Some("high"));
        assert_eq!(
            inv.flags,
            vec!["--config", "model_reasoning_summary=concise"]
        );
        assert_eq!(
            inv.env.keys().collect::<Vec<_>>(),
            vec!["NO_COLOR"],
            "{:?}",
            inv.refused
        );
        let refused = inv.refused.join("\n");
        for named in [
            "worker_call.model \"-rf\"",
            "reasoning_effort \"very_high\" changed to \"high\"",
            "\"--dangerously-bypass-approvals-and-sandbox\"",
            "flags \"-c\" refused",
            "\"--add-dir\"",
            "\"/\"",
            "env.PATH",
            "env.LD_PRELOAD",
            "env.HOME",
            "env.OPENAI_API_KEY",
            "env.RUST_LOG",
            "cli_path",
            "workdir",
            "worker_type",
            "use_stdin",
            "mode",
            "temperature",
            "max_tokens",
            "tool_specific",
        ] {
            assert!(refused.contains(named), "{named} not named in:\n{refused}");
        }
        let argv = config(WorkerKind::CodexCli).argv(&inv, "/w");
        for leaked in [
            "/tmp/evil",
            "-rf",
            "sandbox_mode=danger-full-access",
            "--add-dir",
        ] {
            assert!(!argv.iter().any(|a| a == leaked), "{leaked} in {argv:?}");
        }
        let env = config(WorkerKind::CodexCli)
            .resolve_env(&inv.env, &|_| None)
            .unwrap();
        assert_eq!(env, vec![("NO_COLOR".to_string(), "1".to_string())]);

        // Claude: --max-turns with a number; no effort; a command worker admits nothing.
        let call = WorkerCall {
            prompt: "p".into(),
            model: Some("opus".into()),
            reasoning_effort: Some("high".into()),
            flags: vec![
                "--max-turns".into(),
                "12".into(),
                "--max-turns".into(),
                "x".into(),
            ],
            ..WorkerCall::default()
        };
        let inv = Invocation::admit(WorkerKind::ClaudeCode, &call);
        assert_eq!(inv.flags, vec!["--max-turns", "12"]);
        assert_eq!(inv.model.as_deref(), Some("opus"));
        assert_eq!(inv.reasoning_effort, None);
        assert_eq!(inv.refused.len(), 2, "{:?}", inv.refused);
        let inv = Invocation::admit(WorkerKind::Command, &call);
        assert!(inv.model.is_none() && inv.flags.is_empty(), "{inv:?}");
        assert_eq!(inv.refused.len(), 6, "{:?}", inv.refused);
        // The task's env wins over the planner's.
        let mut c = config(WorkerKind::CodexCli);
        c.env.insert("NO_COLOR".into(), "task".into());
        let planner = BTreeMap::from([("NO_COLOR".to_string(), "planner".to_string())]);
        assert_eq!(
            c.resolve_env(&planner, &|_| None).unwrap(),
            vec![("NO_COLOR".to_string(), "task".to_string())]
        );
    }

    #[test]
    fn reasoning_effort_is_normalised_as_the_original() {
        for (given, want) in [
            ("xhigh", "high"),
            ("extra_high", "high"),
            ("very_high", "high"),
            ("HIGH", "high"),
            ("low", "low"),
            ("minimal", "minimal"),
            ("turbo", "medium"),
        ] {
            assert_eq!(normalize_effort(given), want, "{given}");
        }
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
            "claude -p --output-format json --dangerously-skip-permissions --model=sonnet --max-turns 40"
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
            WorkerKind::CursorCli,
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
                .is_ok()
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
        let none = BTreeMap::new();
        let env = c.resolve_env(&none, &host).unwrap();
        assert_eq!(
            env,
            vec![
                ("MODE".to_string(), "fast".to_string()),
                ("OPENAI_API_KEY".to_string(), "sk".to_string()),
                ("TOKEN".to_string(), "s3cret".to_string()),
            ]
        );
        let err = c.resolve_env(&none, &|_| None).unwrap_err();
        assert!(err.to_string().contains("HOST_TOKEN"), "{err}");
        c.env.insert("BAD-NAME".into(), "x".into());
        assert!(matches!(
            c.resolve_env(&none, &host),
            Err(WorkerConfigError::BadEnvName { .. })
        ));
        let claude = config(WorkerKind::ClaudeCode)
            .resolve_env(&none, &|_| None)
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
        let cursor = r#"{"type":"result","subtype":"success","is_error":false,"duration_ms":9,"result":"Renamed it."}"#;
        assert_eq!(summary(WorkerKind::CursorCli, cursor), "Renamed it.");
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
        std::fs::create_dir_all(home.join(".cursor")).unwrap();
        let cursor = config(WorkerKind::CursorCli).find_auth(Some(&home), &none);
        assert_eq!(cursor.mounts[0].container, "/home/agent/.cursor");
        let key = |k: &str| (k == "CURSOR_API_KEY").then(|| "k".to_string());
        let cursor = config(WorkerKind::CursorCli).find_auth(None, &key);
        assert_eq!(cursor.env_vars, vec!["CURSOR_API_KEY"]);
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
