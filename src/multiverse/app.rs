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

use super::api::{DAEMON_FILE, DaemonApi, Job, Opener, Work, call};
use super::chat_log::ChatLog;
use super::chat_turn::{
    AskedTurn, Begun, TurnSettings, begin_turn, chat_turn, finish_turn, status_text,
};
use super::clock::{Clock, SystemClock};
use super::events::EventHub;
use super::http::{Api, HttpServer};
use super::ide::IdeSource;
use super::model::{
    DEFAULT_POOL, ExecutionState, RunnerSettings, TaskDesign, TaskId, WorkspaceState,
};
use super::orchestrator::{Orchestrator, OrchestratorError, Settings};
use super::pools::{Pools, summaries};
use super::recent::{self, RecentWorkspace};
use super::settings::{self, ConnectionTest, LlmSettings, SettingsError, SettingsUpdate};
use super::store::{StoreError, Workspace, WorkspaceMeta, read_state};
use crate::environment::Environment;
use crate::runner::{Cancel, MetaConfig, Planner};

// The task views and the daemon's whereabouts live with the API; the command line uses
// them from here too.
pub use super::api::{DaemonInfo, daemon, openapi, task_list, task_show};
pub use super::attempts::{NoteError, attempt_log, attempt_note, attempt_result};

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
    /// The workspace's language (`en`, `ja`): chat replies, and the IDE's. A message
    /// written in Japanese is answered in Japanese whatever this says.
    #[serde(default = "default_locale")]
    pub locale: String,
    /// Start execution when a chat's patch created tasks (`false`: they wait for
    /// `start`).
    #[serde(default = "default_autopilot")]
    pub autopilot: bool,
}

fn default_autopilot() -> bool {
    true
}

impl Config {
    /// What the chat turns of this workspace are run with.
    pub fn turn_settings(&self) -> TurnSettings<'_> {
        TurnSettings {
            locale: &self.locale,
            autopilot: self.autopilot,
        }
    }
}

/// The languages a workspace may be in: the chat turn contract's
/// (`contracts/multiverse_chat.yml`, a test keeps them equal).
pub const LOCALES: &[&str] = &["en", "ja"];

fn default_locale() -> String {
    "en".to_string()
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
            locale: default_locale(),
            autopilot: default_autopilot(),
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
    /// A change of the chat planner's settings was refused.
    Settings(SettingsError),
    /// `workspaces forget` of a path that is not on the recent list.
    NotListed(PathBuf),
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
            AppError::Settings(e) => e.key(),
            AppError::NotListed(_) => "workspaces.not_listed",
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
            AppError::Settings(e) => e.fmt(f),
            AppError::NotListed(path) => {
                write!(f, "{} is not on the recent workspaces list", path.display())
            }
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
    check_locale(&options.config.locale).map_err(AppError::Usage)?;
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
    make_private(&resolved)?;
    let name = project.file_name().map_or_else(
        || "project".to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let workspace = Workspace::init(&resolved, &project, &name)?;
    let meta = workspace.meta().clone();
    save_config(&resolved, &options.config)?;
    remember(&options.home, &resolved, &meta);
    Ok((resolved, meta))
}

/// Puts the workspace first on `home`'s recent list; a failure is only a warning (the
/// list is a convenience).
fn remember(home: &Path, dir: &Path, meta: &WorkspaceMeta) {
    let entry = RecentWorkspace {
        path: dir.to_path_buf(),
        project: meta.project_root.clone(),
        name: meta.name.clone(),
        last_opened: SystemClock.rfc3339(),
    };
    if let Err(e) = recent::record(home, entry) {
        tracing::warn!(file = %recent::recent_file(home).display(), error = %e, "the workspace could not be added to the recent list");
    }
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
    let config: Config = serde_json::from_str(&text).map_err(|e| AppError::Config {
        path: path.clone(),
        message: e.to_string(),
    })?;
    check_locale(&config.locale).map_err(|message| AppError::Config { path, message })?;
    Ok(config)
}

/// A workspace language this program speaks, or why not.
fn check_locale(locale: &str) -> Result<(), String> {
    if LOCALES.contains(&locale) {
        Ok(())
    } else {
        Err(format!(
            "locale {locale:?} is not one of {}",
            LOCALES.join(", ")
        ))
    }
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

/// Opens the workspace as its writer, with its orchestrator recovered, and names it in the
/// recent list under `env`'s `HOME` (none without one).
pub fn open(
    dir: &Path,
    events: Arc<EventHub>,
    env: &Environment,
) -> Result<(Orchestrator, Config), AppError> {
    // Attempts run in the project: every path handed to them must be absolute.
    let dir = &dir.canonicalize().map_err(|error| AppError::Io {
        path: dir.to_path_buf(),
        error,
    })?;
    let config = load_config(dir)?;
    // A workspace made by an older version may still be readable by others.
    make_private(dir)?;
    // Said once, here, rather than as three failed attempts of every task.
    let program = PathBuf::from(&config.agent_runner);
    let found = if config.agent_runner.contains('/') {
        program.is_file()
    } else {
        let path = crate::environment::program_path();
        let path = path.as_deref().and_then(std::ffi::OsStr::to_str);
        crate::runner::preflight::find_on_path(&config.agent_runner, path).is_some()
    };
    if !found {
        return Err(AppError::AgentRunnerMissing(config.agent_runner.clone()));
    }
    // Another command holding the workspace (twenty `task add` at once) is waited for.
    let store = Workspace::open_patiently(dir, WRITER_PATIENCE)?;
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
        locale: config.locale.clone(),
    };
    if let Some(home) = env.home() {
        remember(&home, dir, store.meta());
    }
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let mut orchestrator = Orchestrator::new(store, settings, clock, events)?;
    orchestrator.recover()?;
    // A turn whose patch was journaled before a crash kept its reply from the log.
    if let Err(e) = super::chat_turn::recover_reply(&orchestrator, &ChatLog::new(&dir.join("chat")))
    {
        tracing::warn!(error = %e, "could not give the last chat turn its reply");
    }
    Ok((orchestrator, config))
}

/// How long a command waits for another one that holds the workspace.
const WRITER_PATIENCE: Duration = Duration::from_secs(10);

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
                &config.turn_settings(),
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

/// The chat planner's block in effect (`runner.meta`'s shape), after `update` when given:
/// validated whole, then saved to `config.json` (atomically) and into `config`, so the
/// next chat turn uses it. A refused change writes nothing.
pub fn planner_settings(
    dir: &Path,
    config: &mut Config,
    update: Option<&SettingsUpdate>,
) -> Result<Value, AppError> {
    let current = settings::planner_block(config.planner.as_ref(), &config.runner);
    let Some(update) = update else {
        return Ok(current);
    };
    let block = settings::apply(&current, update).map_err(AppError::Settings)?;
    let mut changed = config.clone();
    changed.planner = Some(block.clone());
    save_config(dir, &changed)?;
    *config = changed;
    Ok(block)
}

/// `multiverse settings` without a daemon: the workspace's chat planner settings, after
/// `update` when given (written to its `config.json`).
pub fn settings_here(dir: &Path, update: Option<&SettingsUpdate>) -> Result<LlmSettings, AppError> {
    WorkspaceMeta::read(dir)?;
    let mut config = load_config(dir)?;
    let block = planner_settings(dir, &mut config, update)?;
    LlmSettings::of(&block).map_err(AppError::Settings)
}

/// `multiverse settings test` without a daemon: a connection test of the workspace's chat
/// planner, or of `candidate` laid over it (nothing saved).
pub fn test_settings_here(
    dir: &Path,
    candidate: Option<&SettingsUpdate>,
) -> Result<ConnectionTest, AppError> {
    WorkspaceMeta::read(dir)?;
    let config = load_config(dir)?;
    let saved = settings::planner_block(config.planner.as_ref(), &config.runner);
    settings::connection_test(&saved, candidate, &dir.join("chat")).map_err(AppError::Settings)
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
            // Interrupted, not cancelled: what ran is queued again for the next `run`.
            stopping = true;
            orchestrator.interrupt_all();
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
    // The foreground run is over: nothing starts until the next `run` or `start`.
    orchestrator.set_execution(ExecutionState::Idle)?;
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

/// Sends `command` to the workspace's daemon.
pub fn send(info: &DaemonInfo, command: &Command) -> Result<Value, AppError> {
    let body = serde_json::to_value(command).map_err(|e| AppError::Usage(e.to_string()))?;
    call(info, "POST", "/api/command", Some(&body)).map_err(|e| AppError::Daemon(e.to_string()))
}

/// `multiverse serve`: the scheduler and the HTTP API until `cancel`; the IDE's picker
/// opens workspaces with `opener` (`open::opener`). `env` gives the recent list's `HOME`
/// and `MULTIVERSE_IDE_DIR`. Returns when the running tasks have been stopped.
pub fn serve(
    dir: &Path,
    port: u16,
    opener: Opener,
    env: &Environment,
    cancel: &Cancel,
    on_ready: impl FnOnce(&str),
) -> Result<(), AppError> {
    let events = Arc::new(EventHub::new());
    // Damage is said before anything runs on it (`multiverse check --repair`).
    crate::multiverse::store::verify(dir)?;
    let (mut orchestrator, mut config) = open(dir, events.clone(), env)?;
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
    let home = env.home();
    let api: Arc<dyn Api> = Arc::new(DaemonApi::new(
        jobs_tx,
        dir.to_path_buf(),
        events.clone(),
        home.clone(),
        IdeSource::from_env(env),
        opener,
    ));
    let stopper = server.stopper();
    let http = std::thread::spawn(move || server.run(api));
    on_ready(&format!("http://127.0.0.1:{}/?token={token}", info.port));
    let chat_dir = dir.join("chat");
    let started_at = orchestrator.clock().rfc3339();
    let mut chats = ChatsInFlight::new(cancel.clone());
    let mut stopping = false;
    loop {
        if cancel.is_cancelled() && !stopping {
            // A graceful stop (an upgrade, a restart) is never worse than a crash: the
            // running attempts end interrupted and their tasks wait, queued, for the next
            // start; the execution state is kept, so a restarted daemon goes on.
            stopping = true;
            orchestrator.interrupt_all();
        }
        // A chat turn asked while stopping ends cancelled, with its reply kept.
        chats.finish(&mut orchestrator, &chat_dir);
        if stopping && orchestrator.running().is_empty() && chats.count == 0 {
            break;
        }
        let next = orchestrator.tick()?;
        while let Ok((work, reply)) = jobs_rx.try_recv() {
            let answer = match work {
                Work::Command(value) => match serde_json::from_value::<Command>(value) {
                    Ok(Command::Chat { message, session }) => {
                        chats.begin(
                            &mut orchestrator,
                            &config,
                            &chat_dir,
                            &message,
                            session.as_deref(),
                            reply,
                        );
                        continue;
                    }
                    Ok(command) => execute(&mut orchestrator, &config, &chat_dir, command)
                        .map_err(|e| (422, e.key().to_string(), e.to_string())),
                    Err(e) => Err((400, "bad_request".to_string(), e.to_string())),
                },
                Work::Workspace => Ok(json!({
                    "dir": dir, "name": orchestrator.store().meta().name,
                    "project_root": orchestrator.store().meta().project_root,
                    "created_at": orchestrator.store().meta().created_at,
                    "locale": config.locale,
                })),
                Work::Processes => Ok(json!({
                    "orchestrator": {"pid": std::process::id(), "started_at": started_at,
                                     "execution": orchestrator.state().execution},
                    "planners": chats.asking(),
                })),
                Work::Pools => Ok(json!(summaries(
                    &config.pools,
                    orchestrator.state(),
                    orchestrator.lifecycle()
                ))),
                Work::Planner(update) => planner_settings(dir, &mut config, update.as_ref())
                    .map_err(|e| {
                        let status = if matches!(e, AppError::Settings(_)) {
                            400
                        } else {
                            500
                        };
                        (status, e.key().to_string(), e.to_string())
                    }),
            };
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

/// Where a daemon's answer goes.
type Reply = Sender<Result<Value, super::api::Refusal>>;

/// The daemon's chat turns whose planner is being asked, each on its own thread, so the
/// scheduler goes on meanwhile (a planner may think for minutes). A turn begins and
/// finishes on the daemon's thread, where the plan is written.
struct ChatsInFlight {
    done_tx: Sender<(AskedTurn, Reply)>,
    done_rx: Receiver<(AskedTurn, Reply)>,
    /// Turns asked and not finished.
    count: usize,
    /// Their sessions, with when their planner was asked.
    asking: std::collections::BTreeMap<String, String>,
    /// The daemon's stop, which cancels what the planners are asked.
    cancel: Cancel,
}

impl ChatsInFlight {
    fn new(cancel: Cancel) -> ChatsInFlight {
        let (done_tx, done_rx) = channel();
        ChatsInFlight {
            done_tx,
            done_rx,
            count: 0,
            asking: std::collections::BTreeMap::new(),
            cancel,
        }
    }

    /// Begins a turn: answered at once (a control word, a refusal), or its planner asked
    /// on a new thread.
    fn begin(
        &mut self,
        orchestrator: &mut Orchestrator,
        config: &Config,
        chat_dir: &Path,
        message: &str,
        session: Option<&str>,
        reply: Reply,
    ) {
        let refuse = |e: &dyn std::fmt::Display, key: &str| (422, key.to_string(), e.to_string());
        let log = ChatLog::new(chat_dir);
        let pending = match begin_turn(
            orchestrator,
            &log,
            session,
            message,
            &config.turn_settings(),
        ) {
            Ok(Begun::Done(outcome)) => {
                let _ = reply.send(Ok(json!(outcome)));
                return;
            }
            Ok(Begun::Planning(pending)) => pending,
            Err(e) => {
                let _ = reply.send(Err(refuse(&e, e.key())));
                return;
            }
        };
        let mut planner = match chat_planner(config, chat_dir) {
            Ok(planner) => planner,
            Err(e) => {
                // The turn began: it ends as the planner's failure, kept in its session.
                let asked = pending.fail(&e.to_string());
                let answer = finish_turn(orchestrator, &log, asked)
                    .map(|outcome| json!(outcome))
                    .map_err(|e| refuse(&e, e.key()));
                let _ = reply.send(answer);
                return;
            }
        };
        let session = pending.session().to_string();
        let done = self.done_tx.clone();
        let cancel = self.cancel.clone();
        let spawned = std::thread::Builder::new()
            .name("multiverse-chat".into())
            .spawn(move || {
                let asked = pending.ask(&mut planner, &cancel);
                let _ = done.send((asked, reply));
            });
        match spawned {
            Ok(_) => {
                self.count += 1;
                self.asking.insert(session, orchestrator.clock().rfc3339());
            }
            Err(e) => tracing::error!(error = %e, "could not start a chat turn's thread"),
        }
    }

    /// The chat turns whose planner is being asked: `{session, since}`.
    fn asking(&self) -> Vec<Value> {
        self.asking
            .iter()
            .map(|(session, since)| json!({"session": session, "since": since}))
            .collect()
    }

    /// Finishes the turns whose planner answered.
    fn finish(&mut self, orchestrator: &mut Orchestrator, chat_dir: &Path) {
        let log = ChatLog::new(chat_dir);
        while let Ok((asked, reply)) = self.done_rx.try_recv() {
            self.count = self.count.saturating_sub(1);
            self.asking.remove(asked.session());
            let answer = finish_turn(orchestrator, &log, asked)
                .map(|outcome| json!(outcome))
                .map_err(|e| (422, e.key().to_string(), e.to_string()));
            let _ = reply.send(answer);
        }
    }
}

/// A workspace's directory is the owner's alone (0700): its journal, results, logs and
/// `daemon.json` are no one else's to read.
fn make_private(dir: &Path) -> Result<(), AppError> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(|error| {
        AppError::Io {
            path: dir.to_path_buf(),
            error,
        }
    })
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
