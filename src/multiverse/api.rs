//! The daemon's HTTP API (`multiverse serve`): its routes over the workspace (reads from
//! the state the daemon last saved, changes sent to the daemon's thread as [`Work`], events
//! from its hub), the bodies they take, their OpenAPI description, and where a running
//! daemon listens ([`DaemonInfo`], `daemon.json`) with the command line's client of it.
//! The door itself (token, host check, bounds) is `http`'s.
//!
//! This module does not know `app`: a command travels as the JSON of `app::Command` and
//! the daemon parses it, so `app` (which starts the daemon) can build this API without a
//! cycle between the two.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Sender, channel};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::attempts::{attempt_log, attempt_note, attempt_result};
use super::chat_log::ChatLog;
use super::events::EventHub;
use super::http::{Api, Request, Response};
use super::ide::IdeSource;
use super::model::{ExecutionState, TaskId, TaskRuntime, WorkspaceState};
use super::processes;
use super::recent;
use super::settings::{self, LlmSettings, SettingsUpdate};
use super::store::CachedReader;

/// The tasks in WBS order, one object each: id, title, state, node, pool,
/// dependencies, attempts, the blocked reason, the next retry's time and the last attempt
/// in brief.
pub fn task_list(state: &WorkspaceState) -> Vec<Value> {
    let parents = state.plan.parents();
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
                "priority": design.priority,
                "parent": parents.get(id).copied().flatten(),
                "milestone": design.milestone,
                "phase": design.phase,
                "dependencies": design.dependencies,
                "attempts": rt.map_or(0, |r| r.attempts.len()),
                "reason": rt.and_then(|r| r.blocked_reason.clone()),
                "next_retry_at_ms": rt.and_then(|r| r.next_retry_at_ms),
                "last_attempt": rt.and_then(TaskRuntime::last_attempt),
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

impl DaemonInfo {
    /// The URL of the IDE this daemon serves.
    pub fn ide_url(&self) -> String {
        format!("http://127.0.0.1:{}/ide/{}/", self.port, self.token)
    }
}

pub(crate) const DAEMON_FILE: &str = "daemon.json";

/// The running daemon of a workspace, if its file names a live process.
pub fn daemon(dir: &Path) -> Option<DaemonInfo> {
    let path = dir.join(DAEMON_FILE);
    let text = std::fs::read_to_string(&path).ok()?;
    let info: DaemonInfo = serde_json::from_str(&text).ok()?;
    // A daemon killed without cleaning up leaves its file; its pid may since belong to
    // another process, which started after the file was written (the daemon writes it
    // once it runs). Such a file is stale: no daemon.
    let written = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
    let reused = match (super::store::process_start_time(info.pid), written) {
        (Some(started), Some(written)) => started > written + Duration::from_secs(2),
        _ => false,
    };
    (super::store::process_alive(info.pid) && !reused).then_some(info)
}

/// The recent workspaces under `home`, most recent first, each with whether it still
/// exists (its `workspace.json`) and whether a daemon runs for it.
pub fn workspaces(home: &Path) -> Vec<Value> {
    recent::load(home)
        .into_iter()
        .map(|w| {
            let running = daemon(&w.path);
            json!({
                "path": w.path,
                "project": w.project,
                "name": w.name,
                "last_opened": w.last_opened,
                "exists": w.path.join("workspace.json").is_file(),
                "daemon": running.is_some(),
                "daemon_pid": running.map(|d| d.pid),
            })
        })
        .collect()
}

/// Why a call to the daemon gave no answer. `key()` is stable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DaemonError {
    /// It did not answer (gone, or the connection broke).
    Unreachable { pid: u32, message: String },
    /// Its answer could not be read, or is not JSON.
    BadAnswer(String),
    /// It refused: the status and its `{error: {key, message}}`.
    Refused {
        status: u16,
        key: String,
        message: String,
    },
}

impl DaemonError {
    pub fn key(&self) -> &str {
        match self {
            DaemonError::Unreachable { .. } | DaemonError::BadAnswer(_) => "daemon_unreachable",
            DaemonError::Refused { key, .. } => key,
        }
    }
}

impl std::fmt::Display for DaemonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DaemonError::Unreachable { pid, message } => {
                write!(f, "the daemon (pid {pid}) did not answer: {message}")
            }
            DaemonError::BadAnswer(message) => write!(f, "the daemon's answer: {message}"),
            DaemonError::Refused { message, .. } => f.write_str(message),
        }
    }
}

impl std::error::Error for DaemonError {}

/// Calls the workspace's daemon: `method` on `path` with `body` as JSON and its token.
pub fn call(
    info: &DaemonInfo,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> Result<Value, DaemonError> {
    let url = format!("http://127.0.0.1:{}{path}", info.port);
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(1200)))
        .build()
        .new_agent();
    let authorization = format!("Bearer {}", info.token);
    let sent = match method {
        "GET" => agent
            .get(&url)
            .header("Authorization", &authorization)
            .call(),
        _ => {
            let bytes = serde_json::to_vec(body.unwrap_or(&Value::Null)).unwrap_or_default();
            let request = match method {
                "PUT" => agent.put(&url),
                _ => agent.post(&url),
            };
            request
                .header("Authorization", &authorization)
                .header("Content-Type", "application/json")
                .send(&bytes[..])
        }
    };
    let mut reply = sent.map_err(|e| DaemonError::Unreachable {
        pid: info.pid,
        message: e.to_string(),
    })?;
    let status = reply.status().as_u16();
    let text = reply
        .body_mut()
        .with_config()
        .limit(64 * 1024 * 1024)
        .read_to_string()
        .map_err(|e| DaemonError::BadAnswer(format!("it could not be read: {e}")))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| DaemonError::BadAnswer(format!("it is not JSON: {e}")))?;
    if status >= 400 {
        let field = |name: &str, default: &str| {
            value["error"][name].as_str().unwrap_or(default).to_string()
        };
        return Err(DaemonError::Refused {
            status,
            key: field("key", "refused"),
            message: field("message", "refused"),
        });
    }
    Ok(value)
}

/// Chat sessions listed by `GET /api/chat`, newest first.
const MAX_SESSIONS_LISTED: usize = 200;

/// A refusal from the daemon's thread: HTTP status, stable key, message.
pub(crate) type Refusal = (u16, String, String);

/// What the daemon's thread is asked to do.
#[derive(Debug)]
pub(crate) enum Work {
    /// An `app::Command` as JSON (`{op, ...}`), parsed and run by the daemon.
    Command(Value),
    /// The chat planner's block in effect (`runner.meta`'s shape), after this change
    /// when there is one (validated, saved to `config.json`, used from the next turn).
    Planner(Option<SettingsUpdate>),
    /// Each pool with its limit and counts (the daemon holds the lifecycle they are read
    /// through).
    Pools,
    /// The daemon itself and the chat turns whose planner it waits for.
    Processes,
    /// The workspace: where, for which project, its language.
    Workspace,
}

/// A workspace the IDE's picker opened: where it is and where its daemon listens (none:
/// it is this daemon's own).
#[derive(Debug, Clone)]
pub struct OpenedWorkspace {
    pub dir: PathBuf,
    pub daemon: Option<DaemonInfo>,
    /// Its daemon was started for this request.
    pub started: bool,
}

/// Opens a workspace (or a project's) for the IDE's picker, for the caller whose user id is
/// given (`None`: not known). Given by `app`, which knows how workspaces are found and
/// made; it runs on the request's thread.
pub type Opener = Box<dyn Fn(&Path, Option<u32>) -> Result<OpenedWorkspace, Refusal> + Send + Sync>;

/// A request for the daemon's thread, and where its answer goes.
pub(crate) type Job = (Work, Sender<Result<Value, Refusal>>);

/// The daemon's HTTP API: reads come from the state the daemon last published, commands
/// go to the daemon's thread, events stream from its hub.
pub(crate) struct DaemonApi {
    jobs: Sender<Job>,
    dir: PathBuf,
    events: Arc<EventHub>,
    /// Where the recent workspaces are listed (`$HOME`); none: an empty list.
    home: Option<PathBuf>,
    /// The saved state, read again only when the journal changed.
    reader: CachedReader,
    /// Where the IDE's files come from.
    ide: IdeSource,
    opener: Opener,
}

impl DaemonApi {
    pub(crate) fn new(
        jobs: Sender<Job>,
        dir: PathBuf,
        events: Arc<EventHub>,
        home: Option<PathBuf>,
        ide: IdeSource,
        opener: Opener,
    ) -> DaemonApi {
        DaemonApi {
            jobs,
            reader: CachedReader::new(&dir),
            dir,
            events,
            home,
            ide,
            opener,
        }
    }

    /// Runs `work` on the daemon's thread and answers with its result.
    fn ask(&self, work: Work) -> Response {
        self.answer(work)
            .map_or_else(|refusal| refusal, Response::ok)
    }

    /// Runs `work` on the daemon's thread; its value, or the refusal as a reply.
    fn answer(&self, work: Work) -> Result<Value, Response> {
        let stopping = || Response::error(503, "stopping", "the daemon is stopping");
        let (tx, rx) = channel();
        if self.jobs.send((work, tx)).is_err() {
            return Err(stopping());
        }
        match rx.recv() {
            Ok(Ok(value)) => Ok(value),
            Ok(Err((status, key, message))) => Err(Response::error(status, &key, &message)),
            Err(_) => Err(stopping()),
        }
    }

    /// The chat planner's settings, after `update` when given.
    fn settings(&self, update: Option<SettingsUpdate>) -> Result<Response, Response> {
        let block = self.answer(Work::Planner(update))?;
        LlmSettings::of(&block)
            .map(|shown| Response::ok(json!(shown)))
            .map_err(|e| Response::error(500, e.key(), &e.to_string()))
    }

    /// A connection test of the settings in effect, or of `candidate` laid over them
    /// (nothing saved). Runs on this request's thread: the daemon goes on meanwhile.
    fn test(&self, candidate: Option<SettingsUpdate>) -> Result<Response, Response> {
        let saved = self.answer(Work::Planner(None))?;
        settings::connection_test(&saved, candidate.as_ref(), &self.dir.join("chat"))
            .map(|tested| Response::ok(json!(tested)))
            .map_err(|e| Response::error(400, e.key(), &e.to_string()))
    }

    /// The process view: the daemon and its planners (from its thread), the attempts in
    /// flight (the saved state) and their containers (Docker, asked on this thread).
    fn processes(&self) -> Result<Response, Response> {
        let mut view = self.answer(Work::Processes)?;
        let state = self.state()?;
        view["workers"] = json!(processes::workers(&state));
        view["containers"] = json!(processes::containers("docker", &self.dir.join("runs")));
        Ok(Response::ok(view))
    }

    /// Takes a workspace off the recent list (nothing on disk is touched).
    fn forget(&self, body: &ForgetBody) -> Response {
        let Some(home) = &self.home else {
            return Response::error(404, "workspaces.not_listed", "no HOME: no recent list");
        };
        match recent::forget(home, &body.path) {
            Ok(true) => Response::ok(json!({"forgotten": body.path})),
            Ok(false) => Response::error(
                404,
                "workspaces.not_listed",
                &format!("{} is not on the recent list", body.path.display()),
            ),
            Err(e) => Response::error(500, "io", &e.to_string()),
        }
    }

    /// Opens a workspace (or a project's) for the IDE: `{dir, url, started}`, the URL
    /// `./` (relative to the IDE's page) when it is this one.
    fn open(&self, body: &ForgetBody, caller: Option<u32>) -> Response {
        match (self.opener)(&body.path, caller) {
            Ok(opened) => Response::ok(json!({
                "dir": opened.dir,
                "url": opened.daemon.as_ref().map_or_else(|| "./".to_string(), DaemonInfo::ide_url),
                "started": opened.started,
            })),
            Err((status, key, message)) => Response::error(status, &key, &message),
        }
    }

    /// Runs the command `{op, ...fields}` on the daemon's thread.
    fn run(&self, op: &str, fields: Value) -> Response {
        let mut command = if fields.is_object() {
            fields
        } else {
            json!({})
        };
        command["op"] = json!(op);
        self.ask(Work::Command(command))
    }

    fn state(&self) -> Result<Arc<WorkspaceState>, Response> {
        self.reader
            .read()
            .map_err(|e| Response::error(500, e.key(), &e.to_string()))
    }

    /// One of an attempt's files (`note`: its Task Note as Markdown, `result`: its result
    /// JSON, `log`: its events and stderr), read from its run directory in this workspace.
    fn attempt(&self, task: &str, attempt: &str, what: &str) -> Response {
        let (Ok(id), Ok(number)) = (TaskId::parse(task), attempt.parse::<u32>()) else {
            return Response::error(404, "unknown_attempt", "no such attempt");
        };
        let state = match self.state() {
            Ok(state) => state,
            Err(refusal) => return refusal,
        };
        let read = match what {
            "note" => attempt_note(&self.dir, &state, &id, Some(number))
                .map(|(n, text)| (n, json!({"markdown": text}))),
            "result" => attempt_result(&self.dir, &state, &id, Some(number))
                .map(|(n, result)| (n, json!({"result": result}))),
            _ => attempt_log(&self.dir, &state, &id, Some(number)),
        };
        match read {
            Ok((number, mut shown)) => {
                shown["task"] = json!(id);
                shown["attempt"] = json!(number);
                Response::ok(shown)
            }
            Err(e) => Response::error(404, e.key(), &e.to_string()),
        }
    }

    fn body<T: serde::de::DeserializeOwned>(request: &Request) -> Result<T, Response> {
        let value = request.json()?;
        let value = if value.is_null() { json!({}) } else { value };
        serde_json::from_value(value)
            .map_err(|e| Response::error(400, "bad_request", &e.to_string()))
    }
}

/// `{path}`: the body of `forget` and `open`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ForgetBody {
    path: PathBuf,
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
            ("GET", ["ide", file @ ..]) => Ok(match self.ide.file(&file.join("/")) {
                Some(found) => Response::File {
                    content_type: found.content_type,
                    body: found.body,
                },
                None => Response::error(404, "not_found", "no such file in the IDE"),
            }),
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
            (
                "GET",
                [
                    "api",
                    "tasks",
                    id,
                    "attempts",
                    n,
                    what @ ("note" | "result" | "log"),
                ],
            ) => Ok(self.attempt(id, n, what)),
            ("GET", ["api", "execution"]) => self
                .state()
                .map(|s| Response::ok(json!({"state": s.execution}))),
            ("POST", ["api", "tasks"]) => Self::body::<Map<String, Value>>(request)
                .map(|fields| self.run("add_task", Value::Object(fields))),
            ("POST", ["api", "tasks", id, "cancel"]) => Ok(self.run("cancel", json!({"id": id}))),
            ("POST", ["api", "tasks", id, "retry"]) => Ok(self.run("retry", json!({"id": id}))),
            ("GET", ["api", "backlog"]) => self
                .state()
                .map(|s| Response::ok(json!(s.backlog.values().collect::<Vec<_>>()))),
            ("POST", ["api", "backlog", item, "resolve"]) => Self::body::<ResolveBody>(request)
                .map(|b| {
                    self.run(
                        "resolve",
                        json!({"item": item, "note": b.note, "retry": b.retry}),
                    )
                }),
            ("POST", ["api", "chat"]) => Self::body::<ChatBody>(request)
                .map(|b| self.run("chat", json!({"message": b.message, "session": b.session}))),
            ("GET", ["api", "chat"]) => Ok(
                match ChatLog::new(&self.dir.join("chat")).sessions(MAX_SESSIONS_LISTED) {
                    Ok(sessions) => Response::ok(json!(sessions)),
                    Err(e) => Response::error(500, e.key(), &e.to_string()),
                },
            ),
            ("GET", ["api", "pools"]) => Ok(self.ask(Work::Pools)),
            ("GET", ["api", "processes"]) => self.processes(),
            ("GET", ["api", "workspace"]) => Ok(self.ask(Work::Workspace)),
            ("GET", ["api", "chat", session]) => {
                Ok(match ChatLog::new(&self.dir.join("chat")).read(session) {
                    Ok(messages) => Response::ok(json!(messages)),
                    Err(e) => Response::error(400, e.key(), &e.to_string()),
                })
            }
            ("POST", ["api", "execution"]) => Self::body::<ExecutionBody>(request)
                .map(|b| self.run("execution", json!({"state": b.state}))),
            ("GET", ["api", "settings"]) => self.settings(None),
            ("PUT", ["api", "settings"]) => {
                Self::body::<SettingsUpdate>(request).and_then(|u| self.settings(Some(u)))
            }
            ("POST", ["api", "settings", "test"]) => {
                // No body (or `null`): the settings in effect.
                let candidate = request.json().and_then(|v| match v {
                    Value::Null => Ok(None),
                    v => serde_json::from_value::<SettingsUpdate>(v)
                        .map(Some)
                        .map_err(|e| Response::error(400, "bad_request", &e.to_string())),
                });
                candidate.and_then(|c| self.test(c))
            }
            ("GET", ["api", "workspaces"]) => Ok(Response::ok(json!(
                self.home.as_deref().map(workspaces).unwrap_or_default()
            ))),
            ("POST", ["api", "workspaces", "forget"]) => {
                Self::body::<ForgetBody>(request).map(|b| self.forget(&b))
            }
            ("POST", ["api", "workspaces", "open"]) => {
                Self::body::<ForgetBody>(request).map(|b| self.open(&b, request.caller_uid()))
            }
            // Any `app::Command`; the daemon parses it (400 `bad_request` when it is none).
            ("POST", ["api", "command"]) => Self::body::<Map<String, Value>>(request)
                .map(|c| self.ask(Work::Command(Value::Object(c)))),
            _ => Ok(Response::error(
                404,
                "not_found",
                &format!("no route {} {}", request.method, request.path),
            )),
        };
        outcome.unwrap_or_else(|refusal| refusal)
    }
}

/// The body of `PUT /api/settings` and `POST /api/settings/test`.
fn settings_schema() -> Value {
    json!({"type": "object", "required": ["provider", "model"], "additionalProperties": false,
           "properties": {
               "provider": {"enum": ["openai-chat", "codex-cli", "claude-code", "mock"]},
               "model": {"type": "string", "minLength": 1},
               "api_key_env": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*_API_KEY$", "description": "openai-chat: the NAME of the variable holding the key, ending in _API_KEY"},
               "base_url": {"type": "string", "description": "openai-chat: http:// or https://"},
               "api_key": {"type": "string", "description": "POST /api/settings/test only: the key itself, typed for this one test of a base URL or key variable other than the saved ones (never saved; a PUT carrying it is refused with settings.key_not_stored)"}}})
}

/// The API's description (OpenAPI 3.1), served at `/api/openapi.json`.
pub fn openapi() -> Value {
    let mut document = core_openapi();
    // Built in two parts: one `json!` this long exceeds the macro's recursion limit.
    if let Some(paths) = document["paths"].as_object_mut() {
        paths.extend(ide_paths());
    }
    document
}

/// The routes added for the IDE: its files, an attempt's log, the picker's open.
fn ide_paths() -> Map<String, Value> {
    let body = json!({"content": {"application/json": {"schema": {"type": "object", "required": ["path"],
        "additionalProperties": false, "properties": {"path": {"type": "string"}}}}}});
    let paths = json!({
            "/api/tasks/{id}/attempts/{n}/log": {"get": {"summary": "The attempt's log: {task, attempt, events (agent-runner's events.jsonl, its last MiB, a line that is not JSON as {text}), events_cut, stderr (its last 64 KiB), stderr_cut}. 404 no_log before it started."}},
            "/api/workspaces/open": {"post": {"summary": "Open a workspace for the IDE: {path} names a workspace directory, or a project, whose workspace is found (the recent list, then its default place) or created with this workspace's settings. Its daemon is started unless one runs. Answers {dir, url, started}; url is `./` (relative to the IDE's page) for this workspace. A project must be a git repository; system directories, places inside a workspace and projects holding workspaces are refused; a new workspace never inherits --unsafe-local; one daemon starts at most 8 others. Refusals: workspaces.not_absolute, workspaces.not_found, workspaces.no_home, workspaces.init_failed, workspaces.start_failed, workspaces.not_a_repository, workspaces.refused, workspaces.too_many_daemons (429).",
                "requestBody": body}},
            "/ide/{token}/{file}": {"get": {"summary": "The IDE's files (index.html when no file). `/?token=TOKEN` answers 303 to `/ide/TOKEN/`. Sent with a Content-Security-Policy (own scripts and styles only, no inline code, Trusted Types required, no framing)."}}
    });
    paths.as_object().cloned().unwrap_or_default()
}

/// Every route but the IDE's.
fn core_openapi() -> Value {
    json!({
        "openapi": "3.1.0",
        "info": {"title": "multiverse serve", "version": "1"},
        "components": {"securitySchemes": {"token": {"type": "http", "scheme": "bearer"}}},
        "security": [{"token": []}],
        "paths": {
            "/api/state": {"get": {"summary": "The workspace's state: plan, task runtimes (attempts), backlog, execution."}},
            "/api/command": {"post": {"summary": "Run a command: add_task, cancel, retry, chat, execution, resolve, status (body: {op, ...}).",
                "requestBody": {"content": {"application/json": {"schema": {"type": "object", "required": ["op"]}}}}}},
            "/api/tasks": {"get": {"summary": "The tasks in WBS order: id, title, state, node, pool, priority, parent, milestone, phase, dependencies, attempts, reason, next_retry_at_ms, last_attempt {number, status, exit_code, summary}."},
                           "post": {"summary": "Add a task: {id, title, description?, criteria?, depends_on?, parent?, pool?, priority?, test?}."}},
            "/api/tasks/{id}": {"get": {"summary": "A task: design, state, node, reason, next retry, attempts."}},
            "/api/tasks/{id}/cancel": {"post": {"summary": "Cancel the task (a running one is stopped); never retried."}},
            "/api/tasks/{id}/retry": {"post": {"summary": "Retry a failed or cancelled task with fresh attempts."}},
            "/api/tasks/{id}/attempts/{n}/result": {"get": {"summary": "The attempt's result JSON as agent-runner wrote it (status, exit code, each criterion's verdict, runs): {task, attempt, result}. 404 no_result while it runs."}},
            "/api/tasks/{id}/attempts/{n}/note": {"get": {"summary": "The attempt's Task Note: {task, attempt, markdown}."}},
            "/api/backlog": {"get": {"summary": "Backlog items, open and resolved."}},
            "/api/backlog/{item}/resolve": {"post": {"summary": "Resolve an item: {note?, retry?}."}},
            "/api/chat": {"post": {"summary": "One chat turn: {message, session?}; the reply, the patch's summary, questions, autopilot."},
                          "get": {"summary": "The chat sessions, newest first (at most 200): [{session, title (its first message, cut), started_at?, bytes}]."}},
            "/api/pools": {"get": {"summary": "Each pool: [{pool, limit, running, waiting, succeeded, failed, total}]."}},
            "/api/workspace": {"get": {"summary": "This workspace: {dir, name, project_root, created_at, locale (en | ja)}."}},
            "/api/processes": {"get": {"summary": "What runs: {orchestrator: {pid, started_at, execution}, planners: [{session, since}], workers: [{task, attempt, pid, started_at, run_dir}], containers: {listed: [{id, name, status, run_dir}], unavailable?}}."}},
            "/api/chat/{session}": {"get": {"summary": "A chat session's messages."}},
            "/api/execution": {"get": {"summary": "The execution state: {state: RUNNING | PAUSED | IDLE}."},
                               "post": {"summary": "Set execution: {state: RUNNING | PAUSED | IDLE}."}},
            "/api/events": {"get": {"summary": "Server-sent events: task (a state change with its message, node, reason, next retry and attempts), attempt, run (an attempt's agent-runner events as they come), backlog, chat, execution, plan. The token may be given as ?token= here."}},
            "/api/settings": {
                "get": {"summary": "The chat planner's settings: {provider, model, api_key_env, api_key_set, base_url, command}. The key itself is never returned, only whether its variable is set in the daemon's environment."},
                "put": {"summary": "Change them (validated whole, saved to config.json, used from the next chat turn); answers the new settings. Refusals: settings.unknown_provider, settings.empty_model, settings.model_too_long, settings.bad_model, settings.bad_key_variable, settings.bad_base_url, settings.not_for_provider, settings.key_not_stored.",
                        "requestBody": {"content": {"application/json": {"schema": settings_schema()}}}}},
            "/api/settings/test": {"post": {"summary": "A real connection test of the settings in effect, or of the body laid over them (nothing saved): openai-chat makes one small chat completion (no retry, 10 s at most), a CLI answers --version, the mock is built. Answers {ok, provider, model, latency_ms, detail, error?: {key, message}}; keys: connection.key_missing, connection.key_required (another base URL or variable than the saved ones, and no api_key typed), connection.auth_refused, connection.http_error, connection.unreachable, connection.timeout, connection.bad_response, connection.cli_missing, connection.cli_failed, connection.config.",
                "requestBody": {"required": false, "content": {"application/json": {"schema": settings_schema()}}}}},
            "/api/workspaces": {"get": {"summary": "The recent workspaces (~/.multiverse/workspaces.json), most recent first: [{path, project, name, last_opened, exists, daemon, daemon_pid}]."}},
            "/api/workspaces/forget": {"post": {"summary": "Take a workspace off the recent list; nothing on disk is touched. 404 workspaces.not_listed when it is not on it.",
                "requestBody": {"content": {"application/json": {"schema": {"type": "object", "required": ["path"], "additionalProperties": false,
                    "properties": {"path": {"type": "string"}}}}}}}},
            "/api/openapi.json": {"get": {"summary": "This document."}}
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_daemon_file_whose_pid_now_belongs_to_a_later_process_is_stale() {
        let dir = std::env::temp_dir().join(format!("mv-api-daemon-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(DAEMON_FILE);
        let write = |pid: u32, age: Duration| {
            let info = json!({"pid": pid, "port": 1, "token": "t"});
            std::fs::write(&path, info.to_string()).unwrap();
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(std::time::SystemTime::now() - age)
                .unwrap();
        };
        // This process started before a file written now: a daemon.
        write(std::process::id(), Duration::ZERO);
        assert!(daemon(&dir).is_some());
        // A process started after the file was written took the pid over: none.
        let mut later = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        write(later.id(), Duration::from_secs(3600));
        assert!(daemon(&dir).is_none());
        let _ = later.kill();
        let _ = later.wait();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
