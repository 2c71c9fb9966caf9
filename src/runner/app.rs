//! `agent-runner`: read a task, run it through the task contract with the runner host,
//! and say how it ended ([`Ended`], whose exit code is 0 complete, 1 failed, 3
//! incomplete, 4 needs a human, 130 cancelled) or why it could not run ([`RunError`], exit 2 for usage or
//! an invalid task). Every exit after the task started runs the contract's `finally`
//! actions, so the note is written and the sandbox released. Nothing here writes to the
//! terminal: the binary (`src/bin/agent-runner.rs`) renders warnings, errors and the
//! progress stream it hands over.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Map, Value, json};

use super::cancel::Cancel;
use super::confine::HideError;
use super::events::{Events, Progress};
use super::host::{HostEnv, RunnerHost, Setup};
use super::preflight::Target;
use super::provider::{ModelNameError, check_model_name};
use super::report::Status;
use super::sandbox::{DockerOptions, DockerSandbox, LocalSandbox, Sandbox, SandboxError};
use super::sandbox_policy::HostFacts;
use super::task::{self, Task};
use crate::contract::model::{Outcome, StateKind};
use crate::contract::{self, Contract};
use crate::diagnostic::{Diagnostic, render};
use crate::environment::Environment;
use crate::session::{Driver, NoCheckpoints, StartFailure, Stop};
use crate::source::Sources;

/// The task contract, compiled into the binary.
pub const TASK_CONTRACT: &str = include_str!("../../contracts/agent_runner_task.yml");

/// Exit code for usage errors and invalid task files.
pub const EXIT_USAGE: i32 = 2;

/// Log and progress format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// What the command line asked for.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The task file; `None` reads stdin.
    pub task: Option<PathBuf>,
    pub meta_model: Option<String>,
    pub result_file: Option<PathBuf>,
    pub log_format: LogFormat,
    pub events: Option<PathBuf>,
    /// Run the worker on this machine instead of in Docker.
    pub unsafe_local: bool,
    /// The task run's trace id, when the caller made one (the binary does, so its own
    /// log lines carry it too); `None` makes one.
    pub trace_id: Option<String>,
    /// Labels the run's containers `agent-runner.run=VALUE` (`--run-label`).
    pub run_label: Option<String>,
    /// Paths hidden from every command the worker side runs (`--hide`, with
    /// `unsafe_local` only).
    pub hide: Vec<PathBuf>,
    /// The environment the docker CLI runs in (`DockerOptions::env`); the binary gives its
    /// own.
    pub env: Environment,
}

/// A task file read and checked, with the warnings its checks found (the binary shows
/// them before the task runs).
#[derive(Debug)]
pub struct LoadedTask {
    pub task: Task,
    pub warnings: Vec<Diagnostic>,
    /// The task file's text, for rendering the warnings.
    pub sources: Sources,
}

/// How a task that started ended: its status and the process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended {
    pub status: Status,
    /// 0 complete, 1 failed, 3 incomplete, 4 needs a human, 130 cancelled (see
    /// [`Status::exit_code`]); 1
    /// when the flow stopped outside the contract (an action failed, the engine refused).
    pub exit_code: i32,
}

/// Why `agent-runner` stopped without running the task (or, for [`RunError::Refused`],
/// as it started it). [`RunError::exit_code`] is the process's exit code.
#[derive(Debug)]
pub enum RunError {
    /// The task file could not be read.
    ReadTask {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Standard input could not be read.
    ReadStdin(std::io::Error),
    /// The task file (`name`) is over [`task::MAX_TASK_BYTES`]: `size` bytes by its
    /// metadata, or `None` when a bounded read found more than the limit (stdin, or a file
    /// that grew while it was read).
    TooLarge { name: String, size: Option<u64> },
    /// The task file (`name`) is not UTF-8.
    NotUtf8 { name: String },
    /// The task file has errors: its findings, over its text in `sources`.
    InvalidTask {
        sources: Sources,
        findings: Vec<Diagnostic>,
    },
    /// The task contract compiled into the binary does not load.
    TaskContract(TaskContractError),
    /// The `--events` file could not be created.
    EventsFile {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The sandbox could not be set up.
    Sandbox(SandboxError),
    /// The task contract refused to start the task (a param it does not accept).
    Refused(StartFailure),
    /// `--meta-model` is not a model name a planner CLI can take.
    MetaModel(ModelNameError),
}

impl RunError {
    /// 2 for usage errors and invalid task files, 1 for a broken built-in contract.
    pub fn exit_code(&self) -> i32 {
        match self {
            RunError::TaskContract(_) => 1,
            _ => EXIT_USAGE,
        }
    }

    /// The error's stable key, for scripts and the `[key]` the binary prints after it.
    pub fn key(&self) -> &'static str {
        match self {
            RunError::ReadTask { .. } => "task.unreadable",
            RunError::ReadStdin(_) => "task.stdin_unreadable",
            RunError::TooLarge { .. } => "task.too_large",
            RunError::NotUtf8 { .. } => "task.not_utf8",
            RunError::InvalidTask { .. } => "task.invalid",
            RunError::TaskContract(_) => "task_contract.invalid",
            RunError::EventsFile { .. } => "events.unwritable",
            RunError::Sandbox(e) => e.key(),
            RunError::Refused(_) => "task_contract.refused",
            RunError::MetaModel(e) => e.key(),
        }
    }
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::ReadTask { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())
            }
            RunError::ReadStdin(e) => write!(f, "cannot read the task from stdin: {e}"),
            RunError::TooLarge {
                name,
                size: Some(size),
            } => write!(
                f,
                "{name} is {size} bytes, over the {}-byte limit of a task file; it was not read",
                task::MAX_TASK_BYTES
            ),
            RunError::TooLarge { name, size: None } => write!(
                f,
                "{name} holds more than the {}-byte limit of a task file; reading stopped there",
                task::MAX_TASK_BYTES
            ),
            RunError::NotUtf8 { name } => write!(f, "{name} is not UTF-8 text"),
            RunError::InvalidTask { sources, findings } => {
                f.write_str(&render::human(sources, findings))
            }
            RunError::TaskContract(e) => e.fmt(f),
            RunError::EventsFile { path, source } => {
                write!(f, "cannot write events to {}: {source}", path.display())
            }
            RunError::Sandbox(e) => e.fmt(f),
            RunError::Refused(e) => write!(f, "the task contract refused the task: {e}"),
            RunError::MetaModel(e) => write!(f, "--meta-model: {e}"),
        }
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunError::ReadTask { source, .. } | RunError::EventsFile { source, .. } => Some(source),
            RunError::ReadStdin(e) => Some(e),
            RunError::TaskContract(e) => Some(e),
            RunError::Sandbox(e) => Some(e),
            RunError::Refused(e) => Some(e),
            RunError::MetaModel(e) => Some(e),
            RunError::TooLarge { .. } | RunError::NotUtf8 { .. } | RunError::InvalidTask { .. } => {
                None
            }
        }
    }
}

/// The built-in task contract does not load: its findings, over its text in `sources`.
#[derive(Debug)]
pub struct TaskContractError {
    pub sources: Sources,
    pub findings: Vec<Diagnostic>,
}

impl std::fmt::Display for TaskContractError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the built-in task contract does not load:\n{}",
            render::human(&self.sources, &self.findings)
        )
    }
}

impl std::error::Error for TaskContractError {}

/// Runs a loaded task (see [`load_task`]): its progress lines go to `progress` when given.
/// `cancel` is set by the signal handler.
pub fn run(
    loaded: LoadedTask,
    options: &Options,
    cancel: &Cancel,
    progress: Option<Progress>,
) -> Result<Ended, RunError> {
    let LoadedTask { task, .. } = loaded;
    // Every log line of the run carries the trace id, as its events, note and result do:
    // in JSON logs as `span.trace_id` (the innermost span's fields).
    let trace_id = options
        .trace_id
        .clone()
        .unwrap_or_else(super::artifacts::new_trace_id);
    // At ERROR level, so the span is there at every log level.
    let _entered = tracing::error_span!("task", task_id = %task.id, trace_id = %trace_id).entered();
    let contract = task_contract().map_err(RunError::TaskContract)?;
    let events = match &options.events {
        None => Events::new(progress, None),
        Some(path) => match std::fs::File::create(path) {
            Ok(f) => Events::new(progress, Some(f)),
            Err(source) => {
                return Err(RunError::EventsFile {
                    path: path.clone(),
                    source,
                });
            }
        },
    };
    let events = events.with_trace_id(&trace_id);
    // The variables a task forwards to its worker, and the keys its tools name: secrets
    // read by name when they are used.
    let host_env: HostEnv = Box::new(crate::environment::secret);
    // `runner.tooling` may choose the worker, so it comes before the sandbox.
    let mut task = task;
    let tooling = super::tooling_setup::setup(
        &mut task,
        options.meta_model.as_deref(),
        crate::environment::secret,
    );
    let (sandbox, target) = sandbox_for(&task, options, &*host_env);
    let sandbox = sandbox.map_err(RunError::Sandbox)?;
    let params = params_for(&task);
    let mut host = RunnerHost::new(Setup {
        task,
        planner: tooling.planner,
        sandbox,
        target,
        host_env,
        cancel: cancel.clone(),
        events,
        result_file: options.result_file.clone(),
        outcomes: terminal_outcomes(&contract),
    });
    if let Some(line) = tooling.line {
        host.record(line);
    }
    if let Some(worker) = tooling.worker {
        host.set_worker_tooling(worker);
    }
    execute(&contract, &mut host, &params, cancel)
}

/// Starts the task and sees it to an end: a terminal state, or (a cancel, a failed
/// action, an engine refusal) the cancel path or the finalizers run by hand. (`run`
/// builds the host from a task file; benchmarks build their own.)
pub fn execute(
    contract: &Contract,
    host: &mut RunnerHost,
    params: &Map<String, Value>,
    cancel: &Cancel,
) -> Result<Ended, RunError> {
    let driver = Driver::new(contract);
    let mut store = NoCheckpoints;
    let turn = driver
        .start(host, &mut store, "", None, None, params)
        .map_err(RunError::Refused)?;
    let turn = match turn.stop {
        Stop::Finished(_) => turn,
        _ if cancel.is_cancelled() => driver.cancel(host, &mut store, turn.instance),
        stop => {
            host.abandon(describe(&stop));
            driver.finalize(host, &turn.instance);
            let ended = finish(host);
            return Ok(Ended {
                exit_code: if ended.exit_code == 0 {
                    1
                } else {
                    ended.exit_code
                },
                ..ended
            });
        }
    };
    if !matches!(turn.stop, Stop::Finished(_)) {
        // The cancel path itself was refused (a contract without one): finalize by hand.
        host.abandon(describe(&turn.stop));
        driver.finalize(host, &turn.instance);
    }
    Ok(finish(host))
}

/// How the task ended once the finalizers ran, with the closing progress line.
fn finish(host: &mut RunnerHost) -> Ended {
    let (status, note, write_error) = match host.finished() {
        Some(f) => (
            f.status,
            f.note.as_ref().map(|p| p.display().to_string()),
            f.write_error.clone(),
        ),
        // The note action did not run (a contract without it): the task still failed.
        None => (
            Status::Failed,
            None,
            Some("no Task Note was written".into()),
        ),
    };
    if let Some(e) = write_error {
        tracing::error!(error = %e, "could not write the task's record");
    }
    host.events()
        .finished(status.as_str(), status.exit_code(), note.as_deref());
    Ended {
        status,
        exit_code: status.exit_code(),
    }
}

fn describe(stop: &Stop) -> String {
    match stop {
        Stop::ActionFailed(f) => f.message.text.clone(),
        Stop::Refused(r) => r.message.text.clone(),
        Stop::EngineLoop { limit } => format!("the flow ran {limit} steps without ending"),
        Stop::CheckpointFailed(e) => format!("could not save the task's state: {e}"),
        Stop::WrongContract { expected, found } => {
            format!("the task belongs to `{found}`, not `{expected}`")
        }
        Stop::Waiting => "the task contract waits for input, which a runner cannot give".into(),
        Stop::Finished(_) => "finished".into(),
    }
}

/// The task file at `path`, read only when it is within [`task::MAX_TASK_BYTES`]: a larger
/// file (by its metadata) is refused before a byte of it is read, and the read itself stops
/// one byte past the limit, so a file that grows meanwhile (or a device or FIFO whose size
/// says nothing) still costs at most the limit in memory.
fn read_task_file(path: &Path) -> Result<Vec<u8>, RunError> {
    let unreadable = |source| RunError::ReadTask {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(unreadable)?;
    let size = file.metadata().map_err(unreadable)?.len();
    if size > task::MAX_TASK_BYTES {
        return Err(RunError::TooLarge {
            name: path.display().to_string(),
            size: Some(size),
        });
    }
    let mut text = Vec::new();
    file.take(task::MAX_TASK_BYTES + 1)
        .read_to_end(&mut text)
        .map_err(unreadable)?;
    Ok(text)
}

/// Reads and checks the task file (or stdin), and the `--meta-model` override.
pub fn load_task(options: &Options) -> Result<LoadedTask, RunError> {
    if let Some(model) = &options.meta_model {
        check_model_name(model).map_err(RunError::MetaModel)?;
    }
    let (name, text, base_dir) = match &options.task {
        Some(path) => {
            let text = read_task_file(path)?;
            let dir = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
            (path.display().to_string(), text, dir)
        }
        None => {
            let mut text = Vec::new();
            std::io::stdin()
                .take(task::MAX_TASK_BYTES + 1)
                .read_to_end(&mut text)
                .map_err(RunError::ReadStdin)?;
            ("<stdin>".to_string(), text, PathBuf::from("."))
        }
    };
    if text.len() as u64 > task::MAX_TASK_BYTES {
        return Err(RunError::TooLarge { name, size: None });
    }
    let mut sources = Sources::default();
    let text = match String::from_utf8(text) {
        Ok(t) => t,
        Err(_) => return Err(RunError::NotUtf8 { name }),
    };
    let base_dir = std::fs::canonicalize(&base_dir).unwrap_or(base_dir);
    let file = sources.add(name, text);
    match task::load(&sources, file, &base_dir) {
        Ok((mut task, warnings)) => {
            if options.unsafe_local {
                task.resolve_command_on_host();
            }
            Ok(LoadedTask {
                task,
                warnings,
                sources,
            })
        }
        Err(findings) => Err(RunError::InvalidTask { sources, findings }),
    }
}

/// The task contract, loaded for the AgentRunner host.
pub fn task_contract() -> Result<Contract, TaskContractError> {
    let mut sources = Sources::default();
    let file = sources.add("contracts/agent_runner_task.yml", TASK_CONTRACT);
    let loaded = contract::load(&mut sources, file, &[super::registry::registry()]);
    loaded
        .ok()
        .map_err(|findings| TaskContractError { sources, findings })
}

/// The outcome of each terminal state of the contract, which the host maps to a status.
pub fn terminal_outcomes(contract: &Contract) -> BTreeMap<String, Outcome> {
    contract
        .states
        .iter()
        .filter(|s| s.kind == StateKind::Terminal)
        .filter_map(|s| Some((s.id.clone(), s.outcome?)))
        .collect()
}

/// The contract's params from the task.
pub fn params_for(task: &Task) -> Map<String, Value> {
    let mut params = Map::new();
    // The counters' limit is reached by the decision after the last allowed loop, so
    // `max_loops` worker runs all happen.
    params.insert("loop_limit".into(), json!(task.max_loops.saturating_add(1)));
    params.insert(
        "max_run_time_sec".into(),
        json!(task.worker.max_run_time_sec),
    );
    params.insert("provider_retries".into(), json!(task.provider_retries));
    if let Some(timeout) = task.test.as_ref().and_then(|t| t.timeout_sec) {
        params.insert("test_timeout_sec".into(), json!(timeout));
    }
    params
}

/// Docker unless `--unsafe-local`, which confines each command and hides `--hide`'s
/// paths from it.
fn sandbox_for(
    task: &Task,
    options: &Options,
    host_env: &dyn Fn(&str) -> Option<String>,
) -> (Result<Box<dyn Sandbox>, SandboxError>, Target) {
    if options.unsafe_local {
        let local = LocalSandbox::new(&task.repo).and_then(|s| s.hiding(&options.hide));
        return match local {
            Ok(local) => {
                let target = Target::Confined(local.confinement());
                (Ok(Box::new(local)), target)
            }
            Err(e) => (Err(e), Target::Local),
        };
    }
    if !options.hide.is_empty() {
        let program = "docker".to_string();
        let env = options.env.clone();
        return (
            Err(SandboxError::Hide(HideError::NeedsUnsafeLocal)),
            Target::Docker { program, env },
        );
    }
    let home = host_env("HOME").map(PathBuf::from);
    let policy = match task.sandbox.resolve(&HostFacts::current()) {
        Ok(policy) => policy,
        Err(e) => {
            let program = "docker".to_string();
            let env = options.env.clone();
            return (
                Err(SandboxError::Policy(e)),
                Target::Docker { program, env },
            );
        }
    };
    let mut docker = DockerOptions::for_worker(
        &task.worker,
        &task.id,
        &task.repo,
        home.as_deref(),
        host_env,
        policy,
        options.env.clone(),
    );
    docker.run_label.clone_from(&options.run_label);
    let program = docker.program.clone();
    let env = docker.env.clone();
    let sandbox = DockerSandbox::new(docker).map(|s| Box::new(s) as Box<dyn Sandbox>);
    (sandbox, Target::Docker { program, env })
}

/// Installs the SIGINT/SIGTERM handler: the first signal cancels the task (finalizers
/// still run, exit 130); a second one exits at once, after killing what the runner
/// started (`cleanup`).
pub fn handle_signals(cancel: &Cancel) -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    let cancel = cancel.clone();
    let count = Arc::new(AtomicUsize::new(0));
    // Its log lines belong to the run too (the caller's span: the trace id).
    let span = tracing::Span::current();
    std::thread::spawn(move || {
        let _entered = span.enter();
        for signal in signals.forever() {
            if count.fetch_add(1, Ordering::SeqCst) == 0 {
                tracing::warn!(signal, "cancelling the task; a second signal stops at once");
                cancel.cancel();
            } else {
                // No finalizers now, but nothing may outlive the runner: the children's
                // process groups and the task's container go first.
                super::cleanup::kill_everything();
                std::process::exit(130);
            }
        }
    });
    Ok(())
}
