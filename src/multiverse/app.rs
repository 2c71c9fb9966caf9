//! `multiverse` itself, below its argument parsing: where a workspace lives and its
//! configuration, the operations every front end shares ([`Command`], run by
//! [`execute`] on the orchestrator: the command line without a daemon, the daemon for its
//! HTTP API and for a command line talking to it), the foreground scheduler of
//! `multiverse run`, and the daemon of `multiverse serve`.
//!
//! A workspace lives outside the project (default
//! `~/.multiverse/workspaces/<name>-<hash>`): the workers can write anywhere in the
//! project, and must not reach the orchestrator's state, journal or results.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::chat_log::ChatLog;
use super::chat_turn::{chat_turn, status_text};
use super::clock::{Clock, SystemClock};
use super::events::EventHub;
use super::http::{Api, HttpServer, Request, Response};
use super::model::{
    DEFAULT_POOL, ExecutionState, RunnerSettings, TaskDesign, TaskId, WorkspaceState,
};
use super::orchestrator::{Orchestrator, OrchestratorError, Settings};
use super::pools::Pools;
use super::store::{StoreError, Workspace, WorkspaceMeta, read_state};
use crate::runner::{Cancel, MetaConfig, Planner};

/// The workspace's own settings (`config.json`), written by `init`, edited by hand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The `agent-runner` to run (a path, or a name on PATH).
    #[serde(default = "default_agent_runner")]
    pub agent_runner: String,
    /// Arguments after the task file (`--unsafe-local` runs workers on this machine).
    #[serde(default)]
    pub agent_runner_args: Vec<String>,
    /// The `runner:` block every task file starts from (planner, worker, sandbox, loops).
    #[serde(default = "empty_object")]
    pub runner: Value,
    /// The chat's planner (`runner.meta`'s shape); the runner's planner when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planner: Option<Value>,
    #[serde(default)]
    pub pools: Pools,
    /// Overrides of the task lifecycle's params (`max_attempts`, `backoff_base_sec`, ...).
    #[serde(default)]
    pub lifecycle: Map<String, Value>,
    /// Seconds between a stop's TERM and its KILL.
    #[serde(default = "default_grace")]
    pub grace_sec: u64,
}

fn default_agent_runner() -> String {
    "agent-runner".to_string()
}

fn empty_object() -> Value {
    json!({})
}

fn default_grace() -> u64 {
    30
}

impl Default for Config {
    fn default() -> Config {
        Config {
            agent_runner: default_agent_runner(),
            agent_runner_args: Vec::new(),
            runner: empty_object(),
            planner: None,
            pools: Pools::default(),
            lifecycle: Map::new(),
            grace_sec: default_grace(),
        }
    }
}

const CONFIG_FILE: &str = "config.json";

/// Why a `multiverse` operation failed. `key()` is stable.
#[derive(Debug)]
pub enum AppError {
    Store(StoreError),
    Orchestrator(OrchestratorError),
    /// `config.json` is missing fields, has unknown ones, or does not parse.
    Config {
        path: PathBuf,
        message: String,
    },
    /// A workspace inside the project it plans for.
    WorkspaceInProject {
        workspace: PathBuf,
        project: PathBuf,
    },
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// A value on the command line or in a request.
    Usage(String),
    /// The chat's planner could not be set up.
    Planner(String),
    /// A daemon holds the workspace and could not be reached.
    Daemon(String),
    /// `config.json`'s `agent_runner` is not a program here.
    AgentRunnerMissing(String),
}

impl AppError {
    pub fn key(&self) -> &'static str {
        match self {
            AppError::Store(e) => e.key(),
            AppError::Orchestrator(e) => e.key(),
            AppError::Config { .. } => "config_invalid",
            AppError::WorkspaceInProject { .. } => "workspace_in_project",
            AppError::Io { .. } => "io",
            AppError::Usage(_) => "usage",
            AppError::Planner(_) => "planner_config",
            AppError::Daemon(_) => "daemon_unreachable",
            AppError::AgentRunnerMissing(_) => "agent_runner_missing",
        }
    }
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AppError::Store(e) => e.fmt(f),
            AppError::Orchestrator(e) => e.fmt(f),
            AppError::Config { path, message } => write!(f, "{}: {message}", path.display()),
            AppError::WorkspaceInProject { workspace, project } => write!(
                f,
                "the workspace {} is inside the project {}: workers could change its state; put it elsewhere",
                workspace.display(),
                project.display()
            ),
            AppError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            AppError::Usage(message) => f.write_str(message),
            AppError::Planner(message) => write!(f, "the chat's planner: {message}"),
            AppError::Daemon(message) => f.write_str(message),
            AppError::AgentRunnerMissing(program) => write!(
                f,
                "agent-runner {program:?} (config.json's agent_runner) is not a program here: install it (`cargo install --path .`) or set the path"
            ),
        }
    }
}

impl std::error::Error for AppError {}

impl From<StoreError> for AppError {
    fn from(e: StoreError) -> AppError {
        AppError::Store(e)
    }
}

impl From<OrchestratorError> for AppError {
    fn from(e: OrchestratorError) -> AppError {
        AppError::Orchestrator(e)
    }
}

/// The project a directory belongs to: its git work tree's root, else the directory.
pub fn project_root(dir: &Path) -> PathBuf {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    crate::git::WorkTree::discover(&dir)
        .ok()
        .and_then(|t| t.workdir().canonicalize().ok())
        .unwrap_or(dir)
}

/// The default workspace of a project: `~/.multiverse/workspaces/<name>-<hash>`.
pub fn default_workspace(project: &Path, home: &Path) -> PathBuf {
    use sha2::Digest as _;
    let hash = sha2::Sha256::digest(project.display().to_string().as_bytes());
    let short: String = hash.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let name: String = project
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "project".into())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    home.join(".multiverse")
        .join("workspaces")
        .join(format!("{name}-{short}"))
}

/// What `multiverse init` is told.
#[derive(Debug, Clone, Default)]
pub struct InitOptions {
    pub workspace: Option<PathBuf>,
    pub project: PathBuf,
    pub home: PathBuf,
    pub config: Config,
}

/// Creates a workspace for the project; returns its directory.
pub fn init(options: &InitOptions) -> Result<(PathBuf, WorkspaceMeta), AppError> {
    let project = project_root(&options.project);
    let dir = options
        .workspace
        .clone()
        .unwrap_or_else(|| default_workspace(&project, &options.home));
    let absolute = absolute(&dir);
    refuse_inside(&absolute, &project)?;
    // Made, then resolved whole: a link to a directory inside the project is inside it.
    std::fs::create_dir_all(&absolute).map_err(|error| AppError::Io {
        path: absolute.clone(),
        error,
    })?;
    let resolved = absolute.canonicalize().map_err(|error| AppError::Io {
        path: absolute.clone(),
        error,
    })?;
    refuse_inside(&resolved, &project)?;
    let name = project.file_name().map_or_else(
        || "project".to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let workspace = Workspace::init(&resolved, &project, &name)?;
    let meta = workspace.meta().clone();
    save_config(&resolved, &options.config)?;
    Ok((resolved, meta))
}

/// A workspace inside the project it plans for is refused: the project's workers could
/// change its state, journal and results.
fn refuse_inside(workspace: &Path, project: &Path) -> Result<(), AppError> {
    if workspace.starts_with(project) {
        return Err(AppError::WorkspaceInProject {
            workspace: workspace.to_path_buf(),
            project: project.to_path_buf(),
        });
    }
    Ok(())
}

fn absolute(path: &Path) -> PathBuf {
    if let Some(parent) = path.parent()
        && let Ok(parent) = parent.canonicalize()
        && let Some(name) = path.file_name()
    {
        return parent.join(name);
    }
    std::env::current_dir()
        .map(|cwd| cwd.join(path))
        .unwrap_or_else(|_| path.to_path_buf())
}

pub fn load_config(dir: &Path) -> Result<Config, AppError> {
    let path = dir.join(CONFIG_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
        Err(error) => return Err(AppError::Io { path, error }),
    };
    serde_json::from_str(&text).map_err(|e| AppError::Config {
        path,
        message: e.to_string(),
    })
}

pub fn save_config(dir: &Path, config: &Config) -> Result<(), AppError> {
    let path = dir.join(CONFIG_FILE);
    let mut text = serde_json::to_string_pretty(config).map_err(|e| AppError::Config {
        path: path.clone(),
        message: e.to_string(),
    })?;
    text.push('\n');
    crate::codeintel::store::atomic_write(&path, text.as_bytes())
        .map_err(|error| AppError::Io { path, error })
}

/// Opens the workspace as its writer, with its orchestrator recovered.
pub fn open(dir: &Path, events: Arc<EventHub>) -> Result<(Orchestrator, Config), AppError> {
    // Attempts run in the project: every path handed to them must be absolute.
    let dir = &dir.canonicalize().map_err(|error| AppError::Io {
        path: dir.to_path_buf(),
        error,
    })?;
    let config = load_config(dir)?;
    // Said once, here, rather than as three failed attempts of every task.
    let program = PathBuf::from(&config.agent_runner);
    let found = if config.agent_runner.contains('/') {
        program.is_file()
    } else {
        crate::runner::preflight::find_on_path(
            &config.agent_runner,
            std::env::var("PATH").ok().as_deref(),
        )
        .is_some()
    };
    if !found {
        return Err(AppError::AgentRunnerMissing(config.agent_runner.clone()));
    }
    let store = Workspace::open(dir)?;
    let project = store.meta().project_root.clone();
    // Also when opened: a workspace moved or linked into its project since `init`.
    refuse_inside(
        dir,
        &project.canonicalize().unwrap_or_else(|_| project.clone()),
    )?;
    let settings = Settings {
        program: PathBuf::from(&config.agent_runner),
        extra_args: config.agent_runner_args.clone(),
        project_root: project,
        runs_dir: dir.join("runs"),
        runner_defaults: config.runner.clone(),
        pools: config.pools.clone(),
        lifecycle_params: config.lifecycle.clone(),
        grace: Duration::from_secs(config.grace_sec),
    };
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let mut orchestrator = Orchestrator::new(store, settings, clock, events)?;
    orchestrator.recover()?;
    Ok((orchestrator, config))
}

/// An operation on a workspace, the same from the command line and over HTTP.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Command {
    AddTask {
        id: String,
        title: String,
        #[serde(default)]
        description: String,
        #[serde(default)]
        criteria: Vec<String>,
        #[serde(default)]
        depends_on: Vec<String>,
        #[serde(default)]
        parent: Option<String>,
        #[serde(default)]
        pool: Option<String>,
        #[serde(default)]
        priority: i32,
        #[serde(default)]
        test: Option<String>,
    },
    Cancel {
        id: String,
    },
    Retry {
        id: String,
    },
    Chat {
        message: String,
        #[serde(default)]
        session: Option<String>,
    },
    Execution {
        state: ExecutionState,
    },
    Resolve {
        item: String,
        #[serde(default)]
        note: String,
        #[serde(default)]
        retry: bool,
    },
    Status,
}

fn task_id(text: &str) -> Result<TaskId, AppError> {
    TaskId::parse(text).map_err(|e| AppError::Usage(e.to_string()))
}

/// Runs `command` on the orchestrator; the answer is JSON.
pub fn execute(
    orchestrator: &mut Orchestrator,
    config: &Config,
    chat_dir: &Path,
    command: Command,
) -> Result<Value, AppError> {
    match command {
        Command::AddTask {
            id,
            title,
            description,
            criteria,
            depends_on,
            parent,
            pool,
            priority,
            test,
        } => {
            let now = orchestrator.clock().rfc3339();
            let design = TaskDesign {
                id: task_id(&id)?,
                title,
                description,
                acceptance_criteria: criteria,
                suggested_impl: None,
                dependencies: depends_on
                    .iter()
                    .map(|d| task_id(d))
                    .collect::<Result<_, _>>()?,
                milestone: None,
                phase: None,
                pool: pool.unwrap_or_else(|| DEFAULT_POOL.to_string()),
                priority,
                runner: RunnerSettings {
                    test_command: test,
                    ..RunnerSettings::default()
                },
                created_at: now.clone(),
                updated_at: now,
                created_by: "user".into(),
            };
            let parent = parent.as_deref().map(task_id).transpose()?;
            let id = orchestrator.add_task(design, parent.as_ref())?;
            Ok(json!({"added": id}))
        }
        Command::Cancel { id } => {
            orchestrator.cancel(&task_id(&id)?)?;
            Ok(json!({"cancelled": id}))
        }
        Command::Retry { id } => {
            orchestrator.retry(&task_id(&id)?)?;
            Ok(json!({"retried": id}))
        }
        Command::Chat { message, session } => {
            let mut planner = chat_planner(config, chat_dir)?;
            let log = ChatLog::new(chat_dir);
            let outcome = chat_turn(
                orchestrator,
                &mut planner,
                &log,
                session.as_deref(),
                &message,
                &Cancel::new(),
            )
            .map_err(|e| AppError::Usage(e.to_string()))?;
            serde_json::to_value(outcome).map_err(|e| AppError::Usage(e.to_string()))
        }
        Command::Execution { state } => {
            orchestrator.set_execution(state)?;
            Ok(json!({"execution": state}))
        }
        Command::Resolve { item, note, retry } => {
            orchestrator.resolve_backlog(&item, &note, retry)?;
            Ok(json!({"resolved": item}))
        }
        Command::Status => Ok(json!({"status": status_text(orchestrator),
                                     "execution": orchestrator.state().execution,
                                     "states": orchestrator.outcome_counts()})),
    }
}

/// The chat's planner: `config.planner`, else the runner block's `meta`.
fn chat_planner(config: &Config, base: &Path) -> Result<Planner, AppError> {
    let meta = config
        .planner
        .clone()
        .or_else(|| config.runner.get("meta").cloned())
        .unwrap_or_else(|| json!({}));
    let meta: MetaConfig =
        serde_json::from_value(meta).map_err(|e| AppError::Planner(e.to_string()))?;
    Planner::from_config(&meta, base, None, 2).map_err(|e| AppError::Planner(e.to_string()))
}

/// How `multiverse run` ended.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// Tasks by lifecycle state.
    pub states: std::collections::BTreeMap<String, usize>,
    pub all_succeeded: bool,
    pub interrupted: bool,
}

/// `multiverse run`: execution on, the scheduler in the foreground until the plan
/// settles (everything done, or only what needs a person left) or `cancel` fires (then
/// running tasks are stopped and waited for).
pub fn run_foreground(
    orchestrator: &mut Orchestrator,
    cancel: &Cancel,
) -> Result<RunSummary, AppError> {
    orchestrator.set_execution(ExecutionState::Running)?;
    let mut stopping = false;
    loop {
        if cancel.is_cancelled() && !stopping {
            stopping = true;
            orchestrator.set_execution(ExecutionState::Idle)?;
        }
        let next = orchestrator.tick()?;
        if orchestrator.running().is_empty() && (stopping || orchestrator.is_settled()) {
            break;
        }
        if orchestrator.running().is_empty() && next.is_none() {
            break;
        }
        let wait = next
            .unwrap_or(Duration::from_millis(200))
            .min(Duration::from_millis(200));
        orchestrator.wait_for_end(wait)?;
    }
    if !stopping {
        orchestrator.set_execution(ExecutionState::Idle)?;
    }
    Ok(RunSummary {
        states: orchestrator.outcome_counts(),
        all_succeeded: orchestrator.all_succeeded(),
        interrupted: stopping,
    })
}

/// The state as it is saved, read without the writer's lock (for `list` and `show`
/// while a daemon runs).
pub fn read(dir: &Path) -> Result<WorkspaceState, AppError> {
    Ok(read_state(dir)?)
}

/// The tasks in WBS order, one object each: id, title, state, node, pool,
/// dependencies, attempts, the blocked reason and the next retry's time.
pub fn task_list(state: &WorkspaceState) -> Vec<Value> {
    state
        .plan
        .wbs_order()
        .into_iter()
        .filter_map(|id| {
            let design = state.plan.tasks.get(id)?;
            let rt = state.runtime.get(id);
            Some(json!({
                "id": id,
                "title": design.title,
                "state": rt.map(|r| r.lifecycle.state.clone()),
                "node": rt.map(|r| r.node),
                "pool": design.pool,
                "dependencies": design.dependencies,
                "attempts": rt.map_or(0, |r| r.attempts.len()),
                "reason": rt.and_then(|r| r.blocked_reason.clone()),
                "next_retry_at_ms": rt.and_then(|r| r.next_retry_at_ms),
            }))
        })
        .collect()
}

/// One task: its design, state, node, attempts (each with its run directory and note).
pub fn task_show(state: &WorkspaceState, id: &TaskId) -> Option<Value> {
    let design = state.plan.tasks.get(id)?;
    let rt = state.runtime.get(id);
    Some(json!({
        "design": design,
        "state": rt.map(|r| r.lifecycle.state.clone()),
        "node": rt.map(|r| r.node),
        "reason": rt.and_then(|r| r.blocked_reason.clone()),
        "next_retry_at_ms": rt.and_then(|r| r.next_retry_at_ms),
        "attempts": rt.map(|r| r.attempts.clone()).unwrap_or_default(),
    }))
}

/// Where a running daemon listens: `daemon.json` in the workspace (owner-only).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DaemonInfo {
    pub pid: u32,
    pub port: u16,
    pub token: String,
}

const DAEMON_FILE: &str = "daemon.json";

/// The running daemon of a workspace, if its file names a live process.
pub fn daemon(dir: &Path) -> Option<DaemonInfo> {
    let text = std::fs::read_to_string(dir.join(DAEMON_FILE)).ok()?;
    let info: DaemonInfo = serde_json::from_str(&text).ok()?;
    super::store::process_alive(info.pid).then_some(info)
}

/// Sends `command` to the workspace's daemon.
pub fn send(info: &DaemonInfo, command: &Command) -> Result<Value, AppError> {
    let url = format!("http://127.0.0.1:{}/api/command", info.port);
    let body = serde_json::to_vec(command).map_err(|e| AppError::Usage(e.to_string()))?;
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(1200)))
        .build()
        .new_agent();
    let mut reply = agent
        .post(&url)
        .header("Authorization", &format!("Bearer {}", info.token))
        .header("Content-Type", "application/json")
        .send(&body[..])
        .map_err(|e| {
            AppError::Daemon(format!("the daemon (pid {}) did not answer: {e}", info.pid))
        })?;
    let status = reply.status().as_u16();
    let text = reply
        .body_mut()
        .with_config()
        .limit(64 * 1024 * 1024)
        .read_to_string()
        .map_err(|e| AppError::Daemon(format!("the daemon's answer could not be read: {e}")))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| AppError::Daemon(format!("the daemon's answer is not JSON: {e}")))?;
    if status >= 400 {
        let message = value["error"]["message"]
            .as_str()
            .unwrap_or("refused")
            .to_string();
        return Err(AppError::Daemon(message));
    }
    Ok(value)
}

/// A request for the daemon's thread, and where its answer goes.
type Job = (Command, Sender<Result<Value, (u16, String, String)>>);

/// The daemon's HTTP API: reads come from the state the daemon last published, commands
/// go to the daemon's thread, events stream from its hub.
struct DaemonApi {
    jobs: Sender<Job>,
    dir: PathBuf,
    events: Arc<EventHub>,
}

impl DaemonApi {
    /// Runs `command` on the daemon's thread and answers with its result.
    fn run(&self, command: Command) -> Response {
        let (tx, rx) = channel();
        if self.jobs.send((command, tx)).is_err() {
            return Response::error(503, "stopping", "the daemon is stopping");
        }
        match rx.recv() {
            Ok(Ok(value)) => Response::ok(value),
            Ok(Err((status, key, message))) => Response::error(status, &key, &message),
            Err(_) => Response::error(503, "stopping", "the daemon is stopping"),
        }
    }

    fn state(&self) -> Result<WorkspaceState, Response> {
        read(&self.dir).map_err(|e| Response::error(500, e.key(), &e.to_string()))
    }

    /// An attempt's Task Note (Markdown), read from its run directory in this workspace.
    fn note(&self, task: &str, attempt: &str) -> Response {
        let Ok(id) = TaskId::parse(task) else {
            return Response::error(404, "unknown_task", "no such task");
        };
        let Ok(number) = attempt.parse::<usize>() else {
            return Response::error(404, "unknown_attempt", "no such attempt");
        };
        let state = match self.state() {
            Ok(state) => state,
            Err(refusal) => return refusal,
        };
        let Some(found) = state
            .runtime
            .get(&id)
            .and_then(|rt| rt.attempts.iter().find(|a| a.number as usize == number))
        else {
            return Response::error(404, "unknown_attempt", "no such attempt");
        };
        // The note is read from the workspace's own runs/<task>/<n>/ only, whatever the
        // state file says.
        let path = self
            .dir
            .join("runs")
            .join(id.as_str())
            .join(number.to_string())
            .join("note.md");
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                Response::ok(json!({"task": id, "attempt": found.number, "markdown": text}))
            }
            Err(_) => Response::error(404, "no_note", "this attempt left no Task Note"),
        }
    }

    fn body<T: serde::de::DeserializeOwned>(request: &Request) -> Result<T, Response> {
        let value = request.json()?;
        let value = if value.is_null() { json!({}) } else { value };
        serde_json::from_value(value)
            .map_err(|e| Response::error(400, "bad_request", &e.to_string()))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChatBody {
    message: String,
    #[serde(default)]
    session: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExecutionBody {
    state: ExecutionState,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResolveBody {
    #[serde(default)]
    note: String,
    #[serde(default)]
    retry: bool,
}

impl Api for DaemonApi {
    fn handle(&self, request: &Request) -> Response {
        let parts: Vec<&str> = request.path.trim_matches('/').split('/').collect();
        let outcome = match (request.method.as_str(), parts.as_slice()) {
            ("GET", ["api", "events"]) => Ok(Response::Events(self.events.subscribe())),
            ("GET", ["api", "state"]) => self
                .state()
                .map(|s| Response::ok(serde_json::to_value(s).unwrap_or(Value::Null))),
            ("GET", ["api", "openapi.json"]) => Ok(Response::ok(openapi())),
            ("GET", ["api", "tasks"]) => self.state().map(|s| Response::ok(json!(task_list(&s)))),
            ("GET", ["api", "tasks", id]) => self.state().map(|s| {
                match TaskId::parse(id).ok().and_then(|id| task_show(&s, &id)) {
                    Some(shown) => Response::ok(shown),
                    None => Response::error(404, "unknown_task", "no such task"),
                }
            }),
            ("GET", ["api", "tasks", id, "attempts", n, "note"]) => Ok(self.note(id, n)),
            ("POST", ["api", "tasks"]) => Self::body::<Value>(request).and_then(|mut v| {
                v["op"] = json!("add_task");
                serde_json::from_value::<Command>(v)
                    .map(|c| self.run(c))
                    .map_err(|e| Response::error(400, "bad_request", &e.to_string()))
            }),
            ("POST", ["api", "tasks", id, "cancel"]) => Ok(self.run(Command::Cancel {
                id: (*id).to_string(),
            })),
            ("POST", ["api", "tasks", id, "retry"]) => Ok(self.run(Command::Retry {
                id: (*id).to_string(),
            })),
            ("GET", ["api", "backlog"]) => self
                .state()
                .map(|s| Response::ok(json!(s.backlog.values().collect::<Vec<_>>()))),
            ("POST", ["api", "backlog", item, "resolve"]) => Self::body::<ResolveBody>(request)
                .map(|b| {
                    self.run(Command::Resolve {
                        item: (*item).to_string(),
                        note: b.note,
                        retry: b.retry,
                    })
                }),
            ("POST", ["api", "chat"]) => Self::body::<ChatBody>(request).map(|b| {
                self.run(Command::Chat {
                    message: b.message,
                    session: b.session,
                })
            }),
            ("GET", ["api", "chat", session]) => {
                Ok(match ChatLog::new(&self.dir.join("chat")).read(session) {
                    Ok(messages) => Response::ok(json!(messages)),
                    Err(e) => Response::error(400, e.key(), &e.to_string()),
                })
            }
            ("POST", ["api", "execution"]) => Self::body::<ExecutionBody>(request)
                .map(|b| self.run(Command::Execution { state: b.state })),
            ("POST", ["api", "command"]) => Self::body::<Command>(request).map(|c| self.run(c)),
            _ => Ok(Response::error(
                404,
                "not_found",
                &format!("no route {} {}", request.method, request.path),
            )),
        };
        outcome.unwrap_or_else(|refusal| refusal)
    }
}

/// The API's description (OpenAPI 3.1), served at `/api/openapi.json`.
pub fn openapi() -> Value {
    json!({
        "openapi": "3.1.0",
        "info": {"title": "multiverse serve", "version": "1"},
        "components": {"securitySchemes": {"token": {"type": "http", "scheme": "bearer"}}},
        "security": [{"token": []}],
        "paths": {
            "/api/state": {"get": {"summary": "The workspace's state: plan, task runtimes (attempts), backlog, execution."}},
            "/api/command": {"post": {"summary": "Run a command: add_task, cancel, retry, chat, execution, resolve, status (body: {op, ...}).",
                "requestBody": {"content": {"application/json": {"schema": {"type": "object", "required": ["op"]}}}}}},
            "/api/tasks": {"get": {"summary": "The tasks in WBS order: id, title, state, node, pool, dependencies, attempts, reason, next retry."},
                           "post": {"summary": "Add a task: {id, title, description?, criteria?, depends_on?, parent?, pool?, priority?, test?}."}},
            "/api/tasks/{id}": {"get": {"summary": "A task: design, state, node, reason, next retry, attempts."}},
            "/api/tasks/{id}/cancel": {"post": {"summary": "Cancel the task (a running one is stopped); never retried."}},
            "/api/tasks/{id}/retry": {"post": {"summary": "Retry a failed or cancelled task with fresh attempts."}},
            "/api/tasks/{id}/attempts/{n}/note": {"get": {"summary": "The attempt's Task Note: {task, attempt, markdown}."}},
            "/api/backlog": {"get": {"summary": "Backlog items, open and resolved."}},
            "/api/backlog/{item}/resolve": {"post": {"summary": "Resolve an item: {note?, retry?}."}},
            "/api/chat": {"post": {"summary": "One chat turn: {message, session?}; the reply, the patch's summary, questions, autopilot."}},
            "/api/chat/{session}": {"get": {"summary": "A chat session's messages."}},
            "/api/execution": {"post": {"summary": "Set execution: {state: RUNNING | PAUSED | IDLE}."}},
            "/api/events": {"get": {"summary": "Server-sent events: task, attempt, backlog, chat, execution, plan. The token may be given as ?token= here."}},
            "/api/openapi.json": {"get": {"summary": "This document."}}
        }
    })
}

/// `multiverse serve`: the scheduler and the HTTP API until `cancel`. Returns when the
/// running tasks have been stopped.
pub fn serve(
    dir: &Path,
    port: u16,
    cancel: &Cancel,
    on_ready: impl FnOnce(&str),
) -> Result<(), AppError> {
    let events = Arc::new(EventHub::new());
    let (mut orchestrator, config) = open(dir, events.clone())?;
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes)
        .map_err(|e| AppError::Usage(format!("no randomness for a token: {e}")))?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let server = HttpServer::bind(port, &token).map_err(|e| AppError::Usage(e.to_string()))?;
    let info = DaemonInfo {
        pid: std::process::id(),
        port: server.addr().port(),
        token: token.clone(),
    };
    let daemon_file = dir.join(DAEMON_FILE);
    write_private(
        &daemon_file,
        &serde_json::to_vec_pretty(&info).unwrap_or_default(),
    )?;
    let (jobs_tx, jobs_rx): (Sender<Job>, Receiver<Job>) = channel();
    let api: Arc<dyn Api> = Arc::new(DaemonApi {
        jobs: jobs_tx,
        dir: dir.to_path_buf(),
        events: events.clone(),
    });
    let stopper = server.stopper();
    let http = std::thread::spawn(move || server.run(api));
    on_ready(&format!("http://127.0.0.1:{}/?token={token}", info.port));
    let chat_dir = dir.join("chat");
    let mut stopping = false;
    loop {
        if cancel.is_cancelled() && !stopping {
            stopping = true;
            orchestrator.set_execution(ExecutionState::Idle)?;
        }
        if stopping && orchestrator.running().is_empty() {
            break;
        }
        let next = orchestrator.tick()?;
        while let Ok((command, reply)) = jobs_rx.try_recv() {
            let answer = execute(&mut orchestrator, &config, &chat_dir, command)
                .map_err(|e| (422, e.key().to_string(), e.to_string()));
            let _ = reply.send(answer);
            orchestrator.tick()?;
        }
        let wait = next
            .unwrap_or(Duration::from_millis(50))
            .min(Duration::from_millis(50));
        orchestrator.wait_for_end(wait)?;
    }
    stopper.stop();
    let _ = http.join();
    let _ = std::fs::remove_file(&daemon_file);
    Ok(())
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), AppError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let io = |error| AppError::Io {
        path: path.to_path_buf(),
        error,
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(io)?;
    std::io::Write::write_all(&mut file, bytes).map_err(io)?;
    file.sync_all().map_err(io)
}
