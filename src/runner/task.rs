//! Task files: what a user gives `agent-runner` (a PRD, a repository, a test command, the
//! planner and worker to use), read strictly with positions like a contract, defaults
//! applied as documented, and resolved into a [`Task`] the runner can trust.
//!
//! The original read task YAML loosely (unknown keys ignored) yet refused `version: "1"`,
//! which is exactly what its own orchestrator wrote (AR-B1): here a quoted version is a
//! warning, an unknown key is an error at its line and column, and the JSON Schema in
//! `schemas/task.schema.json` (generated from these types) lets editors check files.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::provider::{MetaConfig, check_model_name};
use super::sandbox_policy::SandboxSpec;
use super::tooling::ToolingConfig;
use super::worker::{WorkerConfig, WorkerConfigError};
use crate::diagnostic::{Diagnostic, Severity};
use crate::source::{FileId, Sources};
use crate::yaml::Node;

/// The committed task schema (a test keeps it equal to [`generated_schema`]).
const TASK_SCHEMA: &str = include_str!("../../schemas/task.schema.json");
/// Where a finding about a task file sends the reader for the allowed keys.
const REFERENCE: &str = "`schemas/task.schema.json` or docs/agent-runner.md";
/// The help of a model name that is refused.
const MODEL_HELP: &str = "give the model's name as its provider spells it (`gpt-5.2`, `sonnet`): no leading `-`, no spaces";
/// The loop budget when the task does not set one (the original's documented default).
pub const DEFAULT_MAX_LOOPS: u32 = 10;
/// A PRD file larger than this is refused rather than sent to a planner.
pub const MAX_PRD_BYTES: u64 = 1024 * 1024;
/// A task file larger than this is refused before it is parsed.
pub const MAX_TASK_BYTES: u64 = 1024 * 1024;
/// More attempts after a refused planner reply, by default.
pub const DEFAULT_PLANNER_RETRIES: u32 = 2;
/// More attempts of a planner call whose provider failed in a way that may pass.
pub const DEFAULT_PROVIDER_RETRIES: u32 = 1;

/// A task file as written.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "AgentRunner task")]
pub struct TaskFile {
    /// Editor hint; ignored.
    #[serde(rename = "$schema", default)]
    pub schema: Option<String>,
    /// The task format version: `1`. A quoted `"1"` is accepted with a warning.
    pub version: Version,
    pub task: TaskSpec,
    #[serde(default)]
    pub runner: RunnerSpec,
}

/// `1`, or the string `"1"` that the original orchestrator wrote (AR-B1).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Version {
    Number(#[schemars(range(max = u32::MAX))] u32),
    Text(String),
}

/// What to do.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    /// A stable id (letters, digits, `.`, `_`, `-`); names the Task Note and the sandbox.
    /// Generated from the time when missing.
    #[serde(default)]
    pub id: Option<String>,
    /// A one-line title; defaults to the id.
    #[serde(default)]
    pub title: Option<String>,
    /// The repository the worker changes, relative to the task file's directory (or the
    /// current directory for a task read from stdin). Default `.`.
    #[serde(default)]
    pub repo: Option<String>,
    /// A longer description, shown to the planner with the PRD.
    #[serde(default)]
    pub description: Option<String>,
    /// The product requirements: inline text or a file.
    pub prd: PrdSpec,
    /// The command that decides whether the work is done, run inside the sandbox.
    #[serde(default)]
    pub test: Option<TestSpec>,
    /// Hints for the implementation, passed to the planner.
    #[serde(default)]
    pub suggested_impl: Option<SuggestedImpl>,
    /// Ids of tasks this one depends on (for orchestrators; not used by the runner).
    #[serde(default)]
    pub dependencies: Vec<String>,
    /// Position in a work breakdown (for orchestrators).
    #[serde(default)]
    #[schemars(range(max = u32::MAX))]
    pub wbs_level: Option<u32>,
    /// The project phase this task belongs to (for orchestrators).
    #[serde(default)]
    pub phase_name: Option<String>,
}

/// One of `text` and `path`; given both, the text wins and the path is ignored with a
/// warning (as in the original).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrdSpec {
    #[serde(default)]
    pub text: Option<String>,
    /// A file relative to the task file's directory.
    #[serde(default)]
    pub path: Option<String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TestSpec {
    /// Run with `sh -c` in the sandbox.
    pub command: String,
    /// The directory to run it in, relative to the repository. Default: the repository.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Seconds the command may take (default 900).
    #[serde(default)]
    #[schemars(range(min = 1, max = u32::MAX))]
    pub timeout_sec: Option<u32>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct SuggestedImpl {
    #[serde(default)]
    pub language: Option<String>,
    #[serde(default)]
    pub file_paths: Vec<String>,
    #[serde(default)]
    pub constraints: Vec<String>,
}

/// How to run it.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunnerSpec {
    /// Planner decisions that send the task back to work before it ends INCOMPLETE
    /// (default 10).
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub max_loops: Option<u32>,
    /// More attempts after a planner reply that does not follow the protocol, asked again
    /// with the reason (default 2).
    #[serde(default)]
    #[schemars(range(max = 10))]
    pub planner_retries: Option<u32>,
    /// More attempts of a planner call whose provider failed in a way that may pass: a
    /// timeout, a dropped connection, HTTP 429 or 5xx, a CLI that crashed (default 1; the
    /// HTTP planner also retries within one attempt, `runner.meta.max_retries`).
    #[serde(default)]
    #[schemars(range(max = 10))]
    pub provider_retries: Option<u32>,
    /// The planner (meta) LLM.
    #[serde(default)]
    pub meta: MetaConfig,
    /// The coding agent CLI and its image.
    #[serde(default)]
    pub worker: WorkerConfig,
    /// The worker container's limits and user (docs/agent-runner.md "Sandbox policy").
    #[serde(default)]
    pub sandbox: SandboxSpec,
    /// The original's tooling selection: weighted planner and worker candidates per
    /// category, rate-limit cooldown and fallback, a force mode (docs/agent-runner.md
    /// "Tooling selection"). Absent: `meta` and `worker` as written.
    #[serde(default)]
    pub tooling: Option<ToolingConfig>,
}

/// A task ready to run: defaults applied, paths absolute.
#[derive(Debug, Clone)]
pub struct Task {
    pub id: String,
    pub title: String,
    pub description: Option<String>,
    pub repo: PathBuf,
    pub prd: Prd,
    pub test: Option<TestSpec>,
    pub suggested_impl: Option<SuggestedImpl>,
    pub max_loops: u32,
    pub planner_retries: u32,
    pub provider_retries: u32,
    pub meta: MetaConfig,
    pub worker: WorkerConfig,
    /// `runner.sandbox`, checked; resolved against the host when the container starts.
    pub sandbox: SandboxSpec,
    /// `runner.tooling`, checked.
    pub tooling: Option<ToolingConfig>,
    /// The directory relative paths of the task file are read from.
    pub base_dir: PathBuf,
}

impl Task {
    /// For a worker run on the host (`--unsafe-local`): a relative program path in
    /// `runner.worker.command` (`./agents/fix.sh`) is made relative to the task file's
    /// directory, not to wherever the runner was started. In a container the command is
    /// left as written, so the container resolves it: a path against the repository mount
    /// (the working directory, `/workspace/project`), a bare name on the image's `PATH`; a
    /// host path would not exist there.
    pub fn resolve_command_on_host(&mut self) {
        if let Some(program) = self.worker.command.first_mut()
            && program.contains('/')
            && Path::new(program.as_str()).is_relative()
        {
            // Without its `.` parts: `dir/agents/fix.sh`, not `dir/./agents/fix.sh`.
            let relative: PathBuf = Path::new(program.as_str())
                .components()
                .filter(|c| !matches!(c, std::path::Component::CurDir))
                .collect();
            *program = self.base_dir.join(relative).display().to_string();
        }
    }
}

/// Where the PRD comes from.
#[derive(Debug, Clone)]
pub enum Prd {
    Text(String),
    File(PathBuf),
}

impl Prd {
    /// The PRD's text; a file is read now, within [`MAX_PRD_BYTES`].
    pub fn read(&self) -> Result<String, PrdError> {
        match self {
            Prd::Text(text) => Ok(text.clone()),
            Prd::File(path) => {
                use std::io::Read as _;
                let cannot = |source: std::io::Error| PrdError::Read {
                    path: path.clone(),
                    source,
                };
                let file = std::fs::File::open(path).map_err(cannot)?;
                // A FIFO or a device would block or never end; only a file's bytes are a PRD.
                if !file.metadata().map_err(cannot)?.is_file() {
                    return Err(PrdError::NotAFile { path: path.clone() });
                }
                let mut bytes = Vec::new();
                file.take(MAX_PRD_BYTES + 1)
                    .read_to_end(&mut bytes)
                    .map_err(cannot)?;
                if bytes.len() as u64 > MAX_PRD_BYTES {
                    return Err(PrdError::TooLarge { path: path.clone() });
                }
                String::from_utf8(bytes).map_err(|_| PrdError::NotUtf8 { path: path.clone() })
            }
        }
    }
}

/// Why a PRD file could not be read.
#[derive(Debug)]
pub enum PrdError {
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A FIFO, a device or a directory.
    NotAFile {
        path: PathBuf,
    },
    /// Over [`MAX_PRD_BYTES`].
    TooLarge {
        path: PathBuf,
    },
    NotUtf8 {
        path: PathBuf,
    },
}

impl std::fmt::Display for PrdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PrdError::Read { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())
            }
            PrdError::NotAFile { path } => write!(f, "{} is not a regular file", path.display()),
            PrdError::TooLarge { path } => write!(
                f,
                "{} is over the {MAX_PRD_BYTES}-byte limit",
                path.display()
            ),
            PrdError::NotUtf8 { path } => write!(f, "{} is not UTF-8 text", path.display()),
        }
    }
}

impl std::error::Error for PrdError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PrdError::Read { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The JSON Schema of task files, generated from [`TaskFile`].
pub fn generated_schema() -> Result<String, serde_json::Error> {
    let schema = schemars::schema_for!(TaskFile);
    let mut text = serde_json::to_string_pretty(&schema)?;
    text.push('\n');
    Ok(text)
}

fn validator() -> Option<&'static (Value, jsonschema::Validator)> {
    static VALIDATOR: OnceLock<Option<(Value, jsonschema::Validator)>> = OnceLock::new();
    VALIDATOR
        .get_or_init(|| {
            let schema: Value = serde_json::from_str(TASK_SCHEMA).ok()?;
            let validator = jsonschema::validator_for(&schema).ok()?;
            Some((schema, validator))
        })
        .as_ref()
}

/// Reads the task file `file` (already in `sources`): YAML with positions, the schema,
/// then the checks the schema cannot express. `base_dir` is where relative paths start.
/// `Ok` carries the task and any warnings; `Err` every problem found.
pub fn load(
    sources: &Sources,
    file: FileId,
    base_dir: &Path,
) -> Result<(Task, Vec<Diagnostic>), Vec<Diagnostic>> {
    let text = sources.get(file).map_or("", |f| f.text.as_str());
    // Nothing at all (an empty file, or `agent-runner < /dev/null`) is no YAML document:
    // said as such rather than as "null is not of type object".
    if text.trim().is_empty() {
        return Err(vec![
            Diagnostic::new("schema-violation", "the task file is empty", None).with_help(
                "a task file has `version: 1` and a `task:` block with a `prd`; see docs/agent-runner.md",
            ),
        ]);
    }
    let (node, mut findings) = crate::yaml::parse(file, text).map_err(|d| vec![d])?;
    let Some((schema, validator)) = validator() else {
        return Err(vec![Diagnostic::new(
            "schema-violation",
            "internal error: the built-in task schema does not compile",
            None,
        )]);
    };
    findings.extend(crate::contract::schema_findings(
        &node, validator, schema, REFERENCE,
    ));
    if crate::diagnostic::has_errors(&findings) {
        return Err(findings);
    }
    let raw: TaskFile = serde_json::from_value(node.to_json()).map_err(|e| {
        vec![Diagnostic::new(
            "schema-violation",
            format!("internal error: the schema accepted a file serde rejects: {e}"),
            Some(node.span),
        )]
    })?;
    let task = resolve(raw, &node, base_dir, &mut findings);
    if crate::diagnostic::has_errors(&findings) {
        return Err(findings);
    }
    Ok((task, findings))
}

/// Defaults, paths and the rules across fields.
fn resolve(raw: TaskFile, node: &Node, base_dir: &Path, findings: &mut Vec<Diagnostic>) -> Task {
    let at = |pointer: &str| Some(node.locate(pointer).1.span);
    match &raw.version {
        Version::Number(1) => {}
        Version::Text(text) if text.trim() == "1" => {
            let mut d = Diagnostic::new(
                "schema-violation",
                "`version` is the string \"1\"; read as the number 1",
                at("/version"),
            )
            .with_help("write `version: 1` without quotes");
            d.severity = Severity::Warning;
            findings.push(d);
        }
        other => findings.push(
            Diagnostic::new(
                "schema-violation",
                format!("task format version {other:?} is not supported"),
                at("/version"),
            )
            .with_help("this runner reads `version: 1`"),
        ),
    }
    let id = match raw.task.id.clone() {
        Some(id) => {
            if !valid_id(&id) {
                findings.push(
                    Diagnostic::new(
                        "schema-violation",
                        format!("task id `{id}` cannot name a file or a container"),
                        at("/task/id"),
                    )
                    .with_help("use letters, digits, `.`, `_` and `-`, starting with a letter or digit (at most 100)"),
                );
            }
            id
        }
        None => generated_id(),
    };
    let prd = match (&raw.task.prd.text, &raw.task.prd.path) {
        (Some(text), None) => Prd::Text(text.clone()),
        (None, Some(path)) => Prd::File(base_dir.join(path)),
        (Some(text), Some(path)) => {
            // The original read the text and ignored the path (its own test says so);
            // files written for it keep working, and the reader learns which one counts.
            let mut d = Diagnostic::new(
                "schema-violation",
                format!("`task.prd` has both `text` and `path`; the text is used and the path {path:?} is ignored"),
                at("/task/prd/path"),
            )
            .with_help("remove `path` (or `text`, to read the PRD from the file)");
            d.severity = Severity::Warning;
            findings.push(d);
            Prd::Text(text.clone())
        }
        (None, None) => {
            findings.push(
                Diagnostic::new(
                    "schema-violation",
                    "`task.prd` needs `text` or `path`",
                    at("/task/prd"),
                )
                .with_help("write the requirements inline (`text: |`) or name a file (`path:`)"),
            );
            Prd::Text(String::new())
        }
    };
    check_models_and_worker(&raw.runner, &at, findings);
    if let Err(e) = raw.runner.sandbox.check() {
        let pointer = format!("/runner/sandbox/{}", e.key);
        findings.push(
            Diagnostic::new("schema-violation", e.to_string(), at(&pointer)).with_help(e.help),
        );
    }
    if let Some(tooling) = &raw.runner.tooling {
        for finding in tooling.check(&raw.runner.worker) {
            let pointer = format!("/runner/tooling{}", finding.pointer);
            findings.push(
                Diagnostic::new("schema-violation", finding.message, at(&pointer))
                    .with_help(finding.help),
            );
        }
    }
    if let Some(cwd) = raw.task.test.as_ref().and_then(|t| t.cwd.as_deref()) {
        let path = Path::new(cwd);
        let escapes = path.is_absolute()
            || path
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir));
        if escapes {
            findings.push(
                Diagnostic::new(
                    "schema-violation",
                    format!("`task.test.cwd` {cwd:?} leaves the repository"),
                    at("/task/test/cwd"),
                )
                .with_help("give a directory inside the repository, relative to it"),
            );
        }
    }
    // A relative `runner.worker.command` stays as written here: where it points depends on
    // where the worker runs (`Task::resolve_command_on_host`).
    let worker = raw.runner.worker;
    let repo = base_dir.join(raw.task.repo.as_deref().unwrap_or("."));
    let repo = std::fs::canonicalize(&repo).unwrap_or(repo);
    Task {
        title: raw.task.title.clone().unwrap_or_else(|| id.clone()),
        id,
        description: raw.task.description,
        repo,
        prd,
        test: raw.task.test,
        suggested_impl: raw.task.suggested_impl,
        max_loops: raw.runner.max_loops.unwrap_or(DEFAULT_MAX_LOOPS),
        planner_retries: raw
            .runner
            .planner_retries
            .unwrap_or(DEFAULT_PLANNER_RETRIES),
        provider_retries: raw
            .runner
            .provider_retries
            .unwrap_or(DEFAULT_PROVIDER_RETRIES),
        meta: raw.runner.meta,
        worker,
        sandbox: raw.runner.sandbox,
        tooling: raw.runner.tooling,
        base_dir: base_dir.to_path_buf(),
    }
}

/// The models of `runner.meta` and `runner.worker` (a model reaches a CLI's command line,
/// the CLI planners' and every worker's, where one that starts with `-` would be read as an
/// option), and the rest of the worker block's checks.
fn check_models_and_worker(
    runner: &RunnerSpec,
    at: &dyn Fn(&str) -> Option<crate::source::Span>,
    findings: &mut Vec<Diagnostic>,
) {
    if let Some(model) = runner.meta.model.as_deref()
        && let Err(e) = check_model_name(model)
    {
        findings.push(
            Diagnostic::new(
                "schema-violation",
                format!("`runner.meta.model`: {e} ({})", e.key()),
                at("/runner/meta/model"),
            )
            .with_help(MODEL_HELP),
        );
    }
    match runner.worker.validate() {
        Ok(()) => {}
        Err(WorkerConfigError::BadModel(e)) => findings.push(
            Diagnostic::new(
                "schema-violation",
                format!("`runner.worker.model`: {e} ({})", e.key()),
                at("/runner/worker/model"),
            )
            .with_help(MODEL_HELP),
        ),
        Err(e) => findings.push(Diagnostic::new(
            "schema-violation",
            format!("`runner.worker`: {e}"),
            at("/runner/worker"),
        )),
    }
}

/// Ids name files (`.agent-runner/task-ID.md`) and containers, so they are kept to what
/// both allow.
pub fn valid_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && id.len() <= 100
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// `task-YYYYMMDD-HHMMSS-xxxx`: sortable, and unique enough for one machine.
fn generated_id() -> String {
    let now = super::time::now();
    let mut random = [0u8; 2];
    let _ = getrandom::fill(&mut random);
    format!("task-{}-{:02x}{:02x}", now.compact(), random[0], random[1])
}
