//! The `multiverse` binary: parses arguments, finds the workspace, installs logging and
//! the signal handler, hands over to `code_intel::multiverse::app`, and is the one place
//! that writes to the terminal (answers on stdout, progress and errors on stderr).
//!
//! A separate binary from `agent-runner` because it is a different program with a
//! different life: a long-running orchestrator (and daemon) that starts `agent-runner`
//! processes, one per attempt, and must survive any of them crashing.

use code_intel::environment::Environment;
use std::borrow::Cow;
use std::io::IsTerminal as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use clap::{Parser, Subcommand};
use code_intel::multiverse::{
    AppError, Command, Config, ConnectionTest, EventHub, ExecutionState, InitOptions, LlmSettings,
    SettingsUpdate, TaskId, app, check_settings,
};
use code_intel::runner::{Cancel, MetaConfig, MetaKind};
use serde_json::{Value, json};

/// Multiverse: plans of many tasks with dependencies, run through agent-runner in
/// parallel, retried, with a backlog for what needs a person and planning by chat.
///
/// Exit codes: 0 done, 1 `run` ended with tasks that did not succeed or a `chat` turn
/// changed nothing (its planner failed), 2 usage or workspace errors, 130 interrupted.
/// Control characters in what is printed (titles, notes, replies) are shown as `\u00XX`.
#[derive(Debug, Parser)]
#[command(name = "multiverse", version)]
struct Args {
    /// The workspace directory (default: `$MULTIVERSE_WORKSPACE`, else
    /// `~/.multiverse/workspaces/<project>-<hash>` for the current project).
    #[arg(long, global = true)]
    workspace: Option<PathBuf>,
    /// Answers as JSON.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Create a workspace for PROJECT (default: the current directory's project).
    Init {
        project: Option<PathBuf>,
        /// The planner of tasks and of the chat (`mock`, `openai-chat`, `codex-cli`,
        /// `claude-code`).
        #[arg(long)]
        planner: Option<String>,
        /// The worker's kind (`codex-cli`, `claude-code`, `gemini-cli`, `cursor-cli`).
        #[arg(long, conflicts_with = "worker_command")]
        worker: Option<String>,
        /// A command as the worker (`kind: command`): the program, then its arguments.
        #[arg(long, num_args = 1.., value_name = "PROGRAM")]
        worker_command: Option<Vec<String>>,
        /// Run workers on this machine without Docker (agent-runner's --unsafe-local).
        #[arg(long)]
        unsafe_local: bool,
        /// The agent-runner program (default: `agent-runner` on PATH).
        #[arg(long)]
        agent_runner: Option<String>,
        /// The workspace's language: `en` (default) or `ja` (chat replies, the IDE).
        #[arg(long)]
        locale: Option<String>,
    },
    /// Tasks of the plan.
    #[command(subcommand)]
    Task(TaskCmd),
    /// Ask the planner to change the plan (or say stop, pause, resume, status).
    Chat {
        /// The message; a first line such as "- item" is the message, not an option.
        #[arg(allow_hyphen_values = true)]
        message: String,
        /// Continue this chat session.
        #[arg(long)]
        session: Option<String>,
    },
    /// Run the plan in the foreground until it is done or stopped (Ctrl-C stops).
    Run,
    /// Let ready tasks start (with a daemon: at once; otherwise at the next `run`).
    Start,
    /// Start nothing new; what runs goes on.
    Pause,
    /// Start ready tasks again.
    Resume,
    /// Cancel what runs and start nothing.
    Stop,
    /// The execution state and the tasks by state.
    Status,
    /// What needs a person: failures and questions.
    #[command(subcommand)]
    Backlog(BacklogCmd),
    /// The chat planner's settings: provider, model, the API key's variable, base URL.
    #[command(subcommand)]
    Settings(SettingsCmd),
    /// The recent workspaces (`~/.multiverse/workspaces.json`), most recent first.
    #[command(subcommand)]
    Workspaces(WorkspacesCmd),
    /// The URL of this workspace's IDE, its daemon started in the background (its log in
    /// the workspace's `serve.log`) unless one runs.
    Ide,
    /// Check the journal against the state files: each finding and what a repair would
    /// do (exit 1 when something was found).
    Check {
        /// Repair what was found (no daemon may run): the state files rewritten from the
        /// journal, a damaged journal cut back to its trusted entries; every replaced file
        /// kept beside it.
        #[arg(long)]
        repair: bool,
    },
    /// The scheduler, a loopback HTTP API and the IDE, with a token, until stopped.
    Serve {
        /// The port on 127.0.0.1 (0: any free one).
        #[arg(long, default_value_t = 0)]
        port: u16,
    },
}

#[derive(Debug, Subcommand)]
enum TaskCmd {
    /// Add a task.
    Add {
        title: String,
        /// Its id (default: t1, t2, ...).
        #[arg(long)]
        id: Option<String>,
        #[arg(long, default_value = "")]
        description: String,
        /// An acceptance criterion (repeatable).
        #[arg(long = "criterion")]
        criteria: Vec<String>,
        /// A task that must succeed first (repeatable).
        #[arg(long = "depends-on")]
        depends_on: Vec<String>,
        #[arg(long)]
        parent: Option<String>,
        #[arg(long)]
        pool: Option<String>,
        #[arg(long, default_value_t = 0)]
        priority: i32,
        /// The test command that decides whether the work is done.
        #[arg(long)]
        test: Option<String>,
    },
    /// The tasks in WBS order with their state.
    List,
    /// A task's design, state and attempts.
    Show { id: String },
    /// An attempt's Task Note (Markdown; `--json`: with its task and number).
    Note {
        id: String,
        /// The attempt's number (default: the last one).
        #[arg(long)]
        attempt: Option<u32>,
    },
    /// Cancel a task (a running one is stopped); never retried.
    Cancel { id: String },
    /// Retry a failed or cancelled task with fresh attempts.
    Retry { id: String },
}

#[derive(Debug, Subcommand)]
enum BacklogCmd {
    List,
    /// Resolve an item (with `--retry`, retry its task).
    Resolve {
        item: String,
        #[arg(long, default_value = "")]
        note: String,
        #[arg(long)]
        retry: bool,
    },
}

#[derive(Debug, Subcommand)]
enum SettingsCmd {
    /// Show them. The key itself is never shown, only whether its variable is set.
    Show,
    /// Change them (checked whole before anything is written; used from the next chat
    /// turn). A flag left out keeps its value.
    Set {
        /// `openai-chat`, `codex-cli`, `claude-code` or `mock`.
        #[arg(long)]
        provider: Option<String>,
        #[arg(long)]
        model: Option<String>,
        /// openai-chat: the NAME of the environment variable that holds the API key.
        #[arg(long)]
        key_env: Option<String>,
        /// openai-chat: the API's base URL (`/chat/completions` is appended).
        #[arg(long)]
        base_url: Option<String>,
    },
    /// A real connection test (one small request, a CLI's `--version`); exit 1 when it
    /// fails.
    Test,
}

#[derive(Debug, Subcommand)]
enum WorkspacesCmd {
    /// Each with its project, when it was last opened, whether it still exists and
    /// whether a daemon runs for it.
    List,
    /// Take PATH off the list; nothing on disk is touched.
    Forget { path: PathBuf },
}

fn main() -> ExitCode {
    let args = Args::parse();
    // Logs on stderr, warnings by default; `MULTIVERSE_LOG=info` (or debug) for more.
    let level = match Environment::of_process().var("MULTIVERSE_LOG") {
        Some("error") => tracing::Level::ERROR,
        Some("info") => tracing::Level::INFO,
        Some("debug") => tracing::Level::DEBUG,
        Some("trace") => tracing::Level::TRACE,
        _ => tracing::Level::WARN,
    };
    // Colour only for a person at a terminal: a log file or a pipe gets plain text.
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
    match run(args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            errln(&format!("multiverse: {e} [{}]", e.key()));
            ExitCode::from(2)
        }
    }
}

fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{}", printable(text));
}

fn errln(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{}", printable(text));
}

/// `text` with every terminal control character but newline and tab (C0, DEL, C1: escape
/// sequences, a carriage return that overwrites a line, NUL) shown as `\u00XX`. Titles,
/// notes and replies come from planners and workers: none may move the cursor, retitle
/// the terminal or hide what is printed. The same form is a JSON escape of the same
/// character, so JSON output stays JSON.
fn printable(text: &str) -> Cow<'_, str> {
    let control = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(control) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| {
                if control(c) {
                    format!("\\u{:04x}", u32::from(c))
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}

fn home() -> PathBuf {
    Environment::of_process()
        .home()
        .unwrap_or_else(|| PathBuf::from("."))
}

fn workspace_dir(args: &Args) -> PathBuf {
    if let Some(dir) = &args.workspace {
        return dir.clone();
    }
    if let Some(dir) = Environment::of_process().path("MULTIVERSE_WORKSPACE") {
        return dir;
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    app::default_workspace(&app::project_root(&cwd), &home())
}

fn run(args: Args) -> Result<u8, AppError> {
    let dir = workspace_dir(&args);
    let json_out = args.json;
    code_intel::multiverse::set_writer_role(role(&args.command));
    match args.command {
        Cmd::Init {
            project,
            planner,
            worker,
            worker_command,
            unsafe_local,
            agent_runner,
            locale,
        } => init_command(
            args.workspace.clone(),
            project,
            InitFlags {
                planner,
                worker,
                worker_command,
                unsafe_local,
                agent_runner,
                locale,
            },
            json_out,
        ),
        Cmd::Task(TaskCmd::List) => {
            let state = app::read(&dir)?;
            if json_out {
                out(&serde_json::to_string_pretty(&app::task_list(&state)).unwrap_or_default());
            } else {
                for line in app::task_list(&state) {
                    out(&format!(
                        "{:<14} {:<11} {}{}",
                        line["id"].as_str().unwrap_or_default(),
                        line["state"].as_str().unwrap_or_default(),
                        line["title"].as_str().unwrap_or_default(),
                        line["reason"]
                            .as_str()
                            .map(|r| format!("  ({r})"))
                            .unwrap_or_default()
                    ));
                }
            }
            Ok(0)
        }
        Cmd::Task(TaskCmd::Show { id }) => {
            let state = app::read(&dir)?;
            let id = TaskId::parse(&id).map_err(|e| AppError::Usage(e.to_string()))?;
            let shown = app::task_show(&state, &id)
                .ok_or_else(|| AppError::Usage(format!("no task {id} in this workspace")))?;
            out(&serde_json::to_string_pretty(&shown).unwrap_or_default());
            Ok(0)
        }
        Cmd::Task(TaskCmd::Note { id, attempt }) => {
            let state = app::read(&dir)?;
            let id = TaskId::parse(&id).map_err(|e| AppError::Usage(e.to_string()))?;
            let (number, markdown) = app::attempt_note(&dir, &state, &id, attempt)
                .map_err(|e| AppError::Usage(e.to_string()))?;
            if json_out {
                let shown =
                    serde_json::json!({"task": id, "attempt": number, "markdown": markdown});
                out(&serde_json::to_string_pretty(&shown).unwrap_or_default());
            } else {
                out(markdown.trim_end());
            }
            Ok(0)
        }
        Cmd::Backlog(BacklogCmd::List) => {
            let state = app::read(&dir)?;
            let items: Vec<&code_intel::multiverse::BacklogItem> = state.backlog.values().collect();
            if json_out {
                out(&serde_json::to_string_pretty(&items).unwrap_or_default());
            } else {
                for item in items {
                    let done = if item.resolved_at.is_some() {
                        "resolved"
                    } else {
                        "open"
                    };
                    out(&format!(
                        "{:<24} {:?} {done}: {}",
                        item.id, item.kind, item.title
                    ));
                }
            }
            Ok(0)
        }
        Cmd::Run => {
            if let Some(info) = app::daemon(&dir) {
                return Err(AppError::Daemon(format!(
                    "a daemon (pid {}) runs this workspace already; use `multiverse start` to run the plan there",
                    info.pid
                )));
            }
            let events = Arc::new(EventHub::new());
            let progress = events.subscribe();
            // Progress on stderr: a line per event, or with --json a JSON line each.
            let printer = std::thread::spawn(move || {
                for event in progress {
                    if json_out {
                        errln(&json!({"event": event.name, "data": event.data}).to_string());
                    } else {
                        let line = progress_line(&event.name, &event.data);
                        if !line.is_empty() {
                            errln(&line);
                        }
                    }
                }
            });
            code_intel::multiverse::verify_workspace(&dir)?;
            let (mut orchestrator, _config) = app::open(&dir, events, &Environment::of_process())?;
            let cancel = Cancel::new();
            handle_signals(&cancel);
            let summary = app::run_foreground(&mut orchestrator, &cancel)?;
            // The hub goes with the orchestrator: the printer ends once it printed the
            // last events (the tasks' last states), not cut off by the exit.
            drop(orchestrator);
            let _ = printer.join();
            if json_out {
                out(&serde_json::to_string_pretty(&summary).unwrap_or_default());
            } else {
                let states: Vec<String> = summary
                    .states
                    .iter()
                    .map(|(s, n)| format!("{n} {s}"))
                    .collect();
                out(&format!("tasks: {}", states.join(", ")));
            }
            Ok(if summary.interrupted {
                130
            } else if summary.all_succeeded {
                0
            } else {
                1
            })
        }
        Cmd::Check { repair } => check_command(&dir, repair, json_out),
        Cmd::Serve { port } => serve_command(&dir, port),
        Cmd::Ide => ide_command(&dir, json_out),
        Cmd::Settings(command) => settings_command(&dir, command, json_out),
        Cmd::Workspaces(command) => workspaces_command(command, json_out),
        other => send_command(&dir, other, json_out),
    }
}

/// What this process is when it holds a workspace: another writer is told, and waits for
/// a one-command holder (see `store::lock`).
fn role(command: &Cmd) -> &'static str {
    match command {
        Cmd::Run => "run",
        Cmd::Serve { .. } => "serve",
        Cmd::Init { .. } => "init",
        Cmd::Task(TaskCmd::Add { .. }) => "task add",
        Cmd::Task(TaskCmd::Cancel { .. }) => "task cancel",
        Cmd::Task(TaskCmd::Retry { .. }) => "task retry",
        Cmd::Task(_) => "task",
        Cmd::Chat { .. } => "chat",
        Cmd::Start => "start",
        Cmd::Pause => "pause",
        Cmd::Resume => "resume",
        Cmd::Stop => "stop",
        Cmd::Status => "status",
        Cmd::Backlog(_) => "backlog",
        Cmd::Settings(_) => "settings",
        Cmd::Workspaces(_) => "workspaces",
        Cmd::Ide => "ide",
        Cmd::Check { .. } => "check",
    }
}

/// `multiverse check [--repair]`.
fn check_command(dir: &Path, repair: bool, json_out: bool) -> Result<u8, AppError> {
    use code_intel::multiverse::{check_workspace, repair_workspace};
    if !repair {
        let report = check_workspace(dir)?;
        if json_out {
            out(&serde_json::to_string_pretty(&report).unwrap_or_default());
        } else if report.findings.is_empty() {
            out(&format!(
                "ok: {} journal entries; the state files are their fold",
                report.entries
            ));
        } else {
            print_findings(&report.findings, "repair");
            out("run `multiverse check --repair` to repair (stop the daemon first)");
        }
        return Ok(u8::from(!report.findings.is_empty()));
    }
    let repaired = repair_workspace(dir)?;
    let after = check_workspace(dir)?;
    if json_out {
        out(
            &serde_json::to_string_pretty(&json!({"repaired": repaired, "after": after}))
                .unwrap_or_default(),
        );
    } else {
        if repaired.repaired.is_empty() {
            out("nothing to repair");
        }
        print_findings(&repaired.repaired, "repaired");
        for kept in &repaired.kept {
            out(&format!("kept {}", kept.display()));
        }
        if after.findings.is_empty() {
            out(&format!("ok: {} journal entries", after.entries));
        } else {
            print_findings(&after.findings, "still");
        }
    }
    Ok(u8::from(!after.findings.is_empty()))
}

fn print_findings(findings: &[code_intel::multiverse::Finding], verb: &str) {
    for finding in findings {
        let line = finding.line.map(|l| format!(":{l}")).unwrap_or_default();
        out(&format!(
            "{}{line}: {} [{}]\n  {verb}: {}",
            finding.file, finding.problem, finding.key, finding.repair
        ));
    }
}

/// `multiverse serve`: the daemon until a signal; its picker opens other workspaces.
fn serve_command(dir: &Path, port: u16) -> Result<u8, AppError> {
    let cancel = Cancel::new();
    handle_signals(&cancel);
    let env = Environment::of_process();
    let opener = code_intel::multiverse::opener(dir.to_path_buf(), env.home());
    app::serve(dir, port, opener, &env, &cancel, |url| {
        // The token goes to a person's terminal only: a daemon started in the background
        // writes this line into a log file, and no file but daemon.json (0600) may hold it.
        if std::io::stderr().is_terminal() {
            errln(&format!("multiverse: serving {url}"));
        } else {
            let bare = url.split_once("?token=").map_or(url, |(bare, _)| bare);
            errln(&format!(
                "multiverse: serving {bare} (the token is in {}, which only you can read; `multiverse ide` prints the whole URL)",
                dir.join("daemon.json").display()
            ));
        }
    })?;
    Ok(130)
}

/// `multiverse ide`: the URL of the workspace's IDE, its daemon started unless one runs.
fn ide_command(dir: &Path, json_out: bool) -> Result<u8, AppError> {
    let exe = code_intel::multiverse::current_exe().map_err(|error| AppError::Io {
        path: PathBuf::from("/proc/self/exe"),
        error,
    })?;
    let (info, started) = match code_intel::multiverse::ensure_daemon(dir, &exe) {
        Ok(found) => found,
        Err(e) => {
            errln(&format!("multiverse: {e} [{}]", e.key()));
            return Ok(2);
        }
    };
    let url = info.ide_url();
    if json_out {
        out(&json!({"url": url, "pid": info.pid, "started": started}).to_string());
    } else {
        if started {
            errln(&format!("multiverse: started a daemon (pid {})", info.pid));
        }
        out(&url);
    }
    Ok(0)
}

/// `multiverse settings`: through the daemon when one runs (it holds the settings the
/// chat uses), else on the workspace's `config.json`.
fn settings_command(dir: &Path, command: SettingsCmd, json_out: bool) -> Result<u8, AppError> {
    let daemon = app::daemon(dir);
    let ask = |method: &str, path: &str, body: Option<&Value>| -> Result<Value, AppError> {
        let info = daemon
            .as_ref()
            .ok_or_else(|| AppError::Daemon("no daemon".into()))?;
        code_intel::multiverse::call_daemon(info, method, path, body)
            .map_err(|e| AppError::Daemon(format!("{e} [{}]", e.key())))
    };
    let current = || -> Result<LlmSettings, AppError> {
        match &daemon {
            Some(_) => serde_json::from_value(ask("GET", "/api/settings", None)?)
                .map_err(|e| AppError::Daemon(format!("the daemon's settings: {e}"))),
            None => app::settings_here(dir, None),
        }
    };
    match command {
        SettingsCmd::Show => {
            print_settings(&current()?, json_out);
            Ok(0)
        }
        SettingsCmd::Set {
            provider,
            model,
            key_env,
            base_url,
        } => {
            let (provider, model) = match (provider, model) {
                (Some(provider), Some(model)) => (provider, model),
                (Some(provider), None) if provider != current()?.provider => {
                    // Another provider without a model: that provider's default.
                    let model = serde_json::from_value::<MetaKind>(json!(provider))
                        .map(|kind| {
                            MetaConfig {
                                kind,
                                ..MetaConfig::default()
                            }
                            .model(None)
                        })
                        .unwrap_or_default();
                    (provider, model)
                }
                (provider, model) => {
                    let now = current()?;
                    (provider.unwrap_or(now.provider), model.unwrap_or(now.model))
                }
            };
            let update = SettingsUpdate {
                provider,
                model,
                api_key_env: key_env,
                base_url,
                api_key: None,
            };
            // Checked here too, so a refusal keeps its key when a daemon would refuse it.
            check_settings(&update).map_err(AppError::Settings)?;
            let shown = match &daemon {
                Some(_) => {
                    let body = serde_json::to_value(&update).unwrap_or_default();
                    serde_json::from_value(ask("PUT", "/api/settings", Some(&body))?)
                        .map_err(|e| AppError::Daemon(format!("the daemon's settings: {e}")))?
                }
                None => app::settings_here(dir, Some(&update))?,
            };
            print_settings(&shown, json_out);
            Ok(0)
        }
        SettingsCmd::Test => {
            let report: ConnectionTest = match &daemon {
                Some(_) => serde_json::from_value(ask("POST", "/api/settings/test", None)?)
                    .map_err(|e| AppError::Daemon(format!("the daemon's test: {e}")))?,
                None => app::test_settings_here(dir, None)?,
            };
            if json_out {
                out(&serde_json::to_string_pretty(&report).unwrap_or_default());
            } else {
                match &report.error {
                    None => out(&format!(
                        "ok: {} {} in {} ms ({})",
                        report.provider, report.model, report.latency_ms, report.detail
                    )),
                    Some(e) => out(&format!(
                        "failed: {} {} after {} ms: {} [{}]",
                        report.provider, report.model, report.latency_ms, e.message, e.key
                    )),
                }
            }
            Ok(if report.ok { 0 } else { 1 })
        }
    }
}

fn print_settings(settings: &LlmSettings, json_out: bool) {
    if json_out {
        out(&serde_json::to_string_pretty(settings).unwrap_or_default());
        return;
    }
    out(&format!("provider {}", settings.provider));
    out(&format!("model {}", settings.model));
    if let Some(variable) = &settings.api_key_env {
        let set = if settings.api_key_set {
            "set"
        } else {
            "not set"
        };
        out(&format!("api_key_env {variable} ({set})"));
    }
    if let Some(url) = &settings.base_url {
        out(&format!("base_url {url}"));
    }
    if let Some(command) = &settings.command {
        out(&format!("command {command}"));
    }
}

/// `multiverse workspaces`: the recent list under `$HOME`.
fn workspaces_command(command: WorkspacesCmd, json_out: bool) -> Result<u8, AppError> {
    let home = home();
    match command {
        WorkspacesCmd::List => {
            let list = code_intel::multiverse::workspaces(&home);
            if json_out {
                out(&serde_json::to_string_pretty(&list).unwrap_or_default());
            } else {
                for w in list {
                    let mut marks = String::new();
                    if w["exists"] != true {
                        marks.push_str("  (gone)");
                    }
                    if let Some(pid) = w["daemon_pid"].as_u64() {
                        marks.push_str(&format!("  (daemon pid {pid})"));
                    }
                    out(&format!(
                        "{}  {}  {}  {}{marks}",
                        w["last_opened"].as_str().unwrap_or_default(),
                        w["name"].as_str().unwrap_or_default(),
                        w["path"].as_str().unwrap_or_default(),
                        w["project"].as_str().unwrap_or_default(),
                    ));
                }
            }
            Ok(0)
        }
        WorkspacesCmd::Forget { path } => {
            // As listed: absolute (a relative path is the user's, from here).
            let path = if path.is_absolute() {
                path
            } else {
                std::env::current_dir().map_or(path.clone(), |cwd| cwd.join(&path))
            };
            let forgotten =
                code_intel::multiverse::forget_workspace(&home, &path).map_err(|error| {
                    AppError::Io {
                        path: code_intel::multiverse::recent_file(&home),
                        error,
                    }
                })?;
            if !forgotten {
                return Err(AppError::NotListed(path));
            }
            if json_out {
                out(&json!({"forgotten": path}).to_string());
            } else {
                out(&format!(
                    "forgot {} (nothing on disk was touched)",
                    path.display()
                ));
            }
            Ok(0)
        }
    }
}

/// A command that changes the workspace: sent to its daemon when one runs, else run here
/// as the workspace's writer.
fn send_command(dir: &Path, other: Cmd, json_out: bool) -> Result<u8, AppError> {
    let dir = dir.to_path_buf();

    let command = match other {
        Cmd::Task(TaskCmd::Add {
            title,
            id,
            description,
            criteria,
            depends_on,
            parent,
            pool,
            priority,
            test,
        }) => {
            let id = match id {
                Some(id) => id,
                None => next_id(&app::read(&dir)?),
            };
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
            }
        }
        Cmd::Task(TaskCmd::Cancel { id }) => Command::Cancel { id },
        Cmd::Task(TaskCmd::Retry { id }) => Command::Retry { id },
        Cmd::Chat { message, session } => Command::Chat { message, session },
        Cmd::Start | Cmd::Resume => Command::Execution {
            state: ExecutionState::Running,
        },
        Cmd::Pause => Command::Execution {
            state: ExecutionState::Paused,
        },
        Cmd::Stop => Command::Execution {
            state: ExecutionState::Idle,
        },
        Cmd::Status => Command::Status,
        Cmd::Backlog(BacklogCmd::Resolve { item, note, retry }) => {
            Command::Resolve { item, note, retry }
        }
        _ => return Err(AppError::Usage("unreachable command".into())),
    };
    // A chat turn the planner could not answer changed nothing: a failure to a script.
    let chat = matches!(command, Command::Chat { .. });
    let answer = match app::daemon(&dir) {
        Some(info) => app::send(&info, &command)?,
        None => {
            let (mut orchestrator, config) =
                app::open(&dir, Arc::new(EventHub::new()), &Environment::of_process())?;
            app::execute(&mut orchestrator, &config, &dir.join("chat"), command)?
        }
    };
    if json_out {
        out(&serde_json::to_string_pretty(&answer).unwrap_or_default());
    } else if let Some(reply) = answer["reply"].as_str() {
        out(reply);
    } else if let Some(status) = answer["status"].as_str() {
        out(status);
    } else if let Some(object) = answer.as_object() {
        for (key, value) in object {
            out(&format!(
                "{key} {}",
                value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_string)
            ));
        }
    }
    Ok(if chat && answer["error"].is_string() {
        1
    } else {
        0
    })
}

/// `init`'s flags that shape `config.json`.
struct InitFlags {
    planner: Option<String>,
    worker: Option<String>,
    worker_command: Option<Vec<String>>,
    unsafe_local: bool,
    agent_runner: Option<String>,
    locale: Option<String>,
}

fn init_command(
    workspace: Option<PathBuf>,
    project: Option<PathBuf>,
    flags: InitFlags,
    json_out: bool,
) -> Result<u8, AppError> {
    let InitFlags {
        planner,
        worker,
        worker_command,
        unsafe_local,
        agent_runner,
        locale,
    } = flags;

    let mut config = Config::default();
    if let Some(locale) = locale {
        config.locale = locale;
    }
    let mut runner = json!({});
    if let Some(kind) = planner {
        runner["meta"] = json!({"kind": kind});
    }
    if let Some(kind) = worker {
        runner["worker"] = json!({"kind": kind});
    }
    if let Some(command) = worker_command {
        let mut command = command;
        // A relative program is the user's, relative to where they typed it.
        if let Some(first) = command.first_mut()
            && (first.contains('/'))
            && !Path::new(first.as_str()).is_absolute()
            && let Ok(abs) = Path::new(first.as_str()).canonicalize()
        {
            *first = abs.display().to_string();
        }
        runner["worker"] = json!({"kind": "command", "command": command});
    }
    config.runner = runner;
    if unsafe_local {
        config.agent_runner_args.push("--unsafe-local".into());
    }
    if let Some(program) = agent_runner {
        // A path is the user's, relative to where they typed it (attempts run in the
        // project); a bare name is looked up on PATH when an attempt starts.
        config.agent_runner = if program.contains('/') {
            Path::new(&program)
                .canonicalize()
                .map_or(program, |p| p.display().to_string())
        } else {
            program
        };
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let options = InitOptions {
        workspace: workspace.or_else(|| Environment::of_process().path("MULTIVERSE_WORKSPACE")),
        project: project.unwrap_or(cwd),
        home: home(),
        config,
    };
    let (dir, meta) = app::init(&options)?;
    if json_out {
        out(&json!({"workspace": dir, "project": meta.project_root}).to_string());
    } else {
        out(&format!(
            "created workspace {} for {}",
            dir.display(),
            meta.project_root.display()
        ));
    }
    Ok(0)
}

/// `t<N>`, the first not taken.
fn next_id(state: &code_intel::multiverse::WorkspaceState) -> String {
    (1..)
        .map(|n| format!("t{n}"))
        .find(|id| TaskId::parse(id).is_ok_and(|id| !state.plan.tasks.contains_key(&id)))
        .unwrap_or_else(|| "t0".into())
}

/// One stderr line per event.
fn progress_line(name: &str, data: &Value) -> String {
    let task = data["task"].as_str().unwrap_or_default();
    match name {
        "task" if data["to"].is_string() => format!(
            "multiverse: {task}: {} -> {}{}",
            data["from"].as_str().unwrap_or_default(),
            data["to"].as_str().unwrap_or_default(),
            data["message"]
                .as_str()
                .map(|m| format!(" ({m})"))
                .unwrap_or_default()
        ),
        "attempt" if data["started"] == true => {
            format!("multiverse: {task}: attempt {} started", data["attempt"])
        }
        "attempt" => format!(
            "multiverse: {task}: attempt ended, exit {} ({})",
            data["exit_code"],
            data["summary"].as_str().unwrap_or_default()
        ),
        "backlog" if data["added"] == true => format!(
            "multiverse: backlog: {} ({})",
            data["item"]["title"].as_str().unwrap_or_default(),
            data["item"]["id"].as_str().unwrap_or_default()
        ),
        // Of a run's progress, only its state changes: its actions would drown the rest.
        "run" if data["event"]["event"] == "state" => format!(
            "multiverse: {task}: run {} -> {}",
            data["event"]["from"].as_str().unwrap_or_default(),
            data["event"]["to"].as_str().unwrap_or_default()
        ),
        "run" => String::new(),
        "execution" => format!(
            "multiverse: execution {}",
            data["state"].as_str().unwrap_or_default()
        ),
        _ => format!("multiverse: {name} {data}"),
    }
}

/// The first SIGINT/SIGTERM stops gracefully (running tasks get TERM, their containers
/// are removed by agent-runner); a second exits at once.
fn handle_signals(cancel: &Cancel) {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    let cancel = cancel.clone();
    let count = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for _ in signals.forever() {
            if count.fetch_add(1, Ordering::SeqCst) == 0 {
                errln(
                    "multiverse: stopping: running tasks are cancelled (a second signal exits at once)",
                );
                cancel.cancel();
            } else {
                std::process::exit(130);
            }
        }
    });
}
