//! Multiverse: the orchestrator above AgentRunner. A workspace holds a plan of many tasks
//! with dependencies; each task's lifecycle is a session of `contracts/multiverse_task.yml`
//! on the shared engine; the scheduler runs ready tasks through `agent-runner`, retries
//! failures and files what keeps failing into a backlog; a chat with a planner LLM changes
//! the plan with typed `plan_patch`es. `multiverse` (src/bin/multiverse.rs) is its command.
//!
//! ## The parts
//!
//! - `api`: the daemon's HTTP API: its routes (reads from the saved state, changes sent
//!   to the daemon's thread), their bodies and OpenAPI document, where a daemon listens
//!   (`daemon.json`) and the command line's client of it.
//! - `open`: the IDE's picker opening another workspace (or a project's, made when it has
//!   none) and starting its daemon; `peer`: the user owning a loopback client's socket,
//!   so another daemon's token goes only to a caller who could read its `daemon.json`.
//! - `attempts`: an attempt's Task Note, result JSON and log, read bounded from the
//!   workspace's own `runs/` only.
//! - `settings`: the chat planner's settings (provider, model, the key's variable name,
//!   base URL) in `config.json`'s `planner` block, validated whole, and their connection
//!   test through the runner's providers. `recent`: the recent workspaces
//!   (`~/.multiverse/workspaces.json`), bounded, a corrupt file read as empty.
//! - `http`: the loopback HTTP server under `multiverse serve` (token, host check, bounded
//!   requests, JSON, the IDE's files with their security policy, and server-sent events)
//!   around an `Api`. `ide`: the IDE's files (`ide/`, embedded by `build.rs`, or read from
//!   `MULTIVERSE_IDE_DIR` while working on them).
//! - `model`: the workspace's data (plan, WBS, task runtime, attempts, backlog, execution
//!   state), plain values with no IO.
//! - `lifecycle`: a task's session of the lifecycle contract
//!   (`contracts/multiverse_task.yml`) as pure functions: events in, the new instance and
//!   the effects to perform (node status, retry time by the backoff params, backlog item)
//!   or a refusal out; `registry` is the host registry those effects are checked against.
//! - `processes`: what runs for a workspace (attempts in flight, their containers by
//!   their run label), for the process view.
//! - `pools`: each pool's concurrency and the order ready tasks start in (priority, then
//!   FIFO by the time they became ready).
//! - `app`: the `multiverse` command below its arguments: the workspace's place (outside
//!   the project) and `config.json`, the [`Command`]s every front end shares and their
//!   [`app::execute`], `run` in the foreground, the `serve` daemon and the command line's
//!   client of it.
//! - `chat`: a chat turn's planner call (`plan_patch` through the runner's planner, the
//!   caller's check in the retry loop), its request bounded; the session's messages.
//!   `chat_log`: the sessions on disk (`chat/<session>.jsonl`, synced, a torn line cut).
//!   `chat_flow`: the chat turn contract (`contracts/multiverse_chat.yml`) as pure
//!   functions, and `chat_turn`, the turn that drives it (the planner's patch checked,
//!   then applied with its questions when the contract asks).
//! - `clock`: wall time behind a trait (a manual clock in tests); `events`: the event
//!   fan-out to the HTTP stream and the command line, dropping a subscriber that stalls.
//! - `control`: the chat's control words (stop, pause, resume, status; English and
//!   Japanese), which the chat turn contract handles without the planner.
//! - `executor`: one attempt: the task file for `agent-runner`, its process (output to
//!   files in `runs/<task>/<n>/`), its stop (TERM, grace, KILL and the task's containers
//!   removed) and its end read from the exit code and result JSON.
//! - `plan`: the plan's invariants as typed findings (`Plan::check`: WBS placement,
//!   parents, own ancestors, unknown and cyclic dependencies), and the walks over it
//!   (dependents, topological order, the WBS depth first, a subtree, parents); linear and
//!   iterative.
//! - `patch`: the planner's `plan_patch` (strict types, its JSON Schema in
//!   `schemas/multiverse/plan_patch.schema.json`) and `apply`, a pure function giving the
//!   new plan and a summary, or every reason it cannot apply; never half a patch.
//! - `store`: the workspace on disk: the journal of typed changes (appended and synced
//!   first, a torn tail dropped), one atomic state file per area folded from it, one
//!   writer by an OS lock that names its pid, lock-free readers, rebuild, recovery data.

pub(crate) mod api;
pub mod app;
pub(crate) mod attempts;
pub(crate) mod chat;
pub(crate) mod chat_flow;
pub(crate) mod chat_log;
pub(crate) mod chat_turn;
pub(crate) mod clock;
pub(crate) mod control;
pub(crate) mod events;
pub(crate) mod executor;
pub(crate) mod http;
pub(crate) mod ide;
pub(crate) mod lifecycle;
pub(crate) mod model;
pub(crate) mod open;
pub(crate) mod orchestrator;
pub(crate) mod patch;
pub(crate) mod peer;
pub(crate) mod plan;
pub(crate) mod pools;
pub(crate) mod processes;
pub(crate) mod recent;
pub(crate) mod registry;
pub(crate) mod settings;
pub(crate) mod store;

pub use api::{
    DaemonError, DaemonInfo, OpenedWorkspace, Opener, call as call_daemon, daemon, workspaces,
};
pub use app::{AppError, Command, Config, InitOptions, RunSummary};
pub use attempts::{NoteError, attempt_log, attempt_note, attempt_result};
pub use chat::{
    ChatMessage, ChatRole, MAX_HISTORY, MAX_MESSAGE_CHARS, MAX_TASKS_SHOWN, TaskLine,
    ask as ask_plan_patch, request as chat_request,
};
pub use chat_flow::{CHAT_TURN_CONTRACT, ChatEffect, ChatEvent, ChatFlow, ChatStep, PlanStatus};
pub use chat_log::{ChatLog, ChatLogError, SessionSummary};
pub use chat_turn::{
    AskedTurn, Begun, PendingTurn, TurnError, TurnOutcome, TurnSettings, begin_turn, chat_turn,
    finish_turn, message_locale, plan_status, status_text,
};
pub use clock::{Clock, ManualClock, SystemClock};
pub use control::{Control, control_word};
pub use events::EventHub;
pub use executor::{
    AttemptEnd, LaunchError, RunRequest, RunningAttempt, launch, remove_run_containers, task_file,
};
pub use http::{
    Api, BindError, HttpServer, MAX_BODY_BYTES, Request, Response, ServerEvent, Stopper,
};
pub use ide::{IDE_DIR_VARIABLE, IdeFile, IdeSource, embedded_files as ide_files};
pub use lifecycle::{
    Lifecycle, LifecycleContractError, LifecycleStartError, PolicyError, Refusal, RetryPolicy,
    Submitted, TASK_LIFECYCLE_CONTRACT, TaskEffect, TaskEvent, Transition, backoff,
};
pub use model::{
    Attempt, BacklogItem, BacklogKind, DEFAULT_POOL, ExecutionState, MAX_TASK_ID_CHARS, NodeStatus,
    Plan, RunnerSettings, SuggestedImpl, TaskDesign, TaskId, TaskIdError, TaskRuntime, Wbs,
    WorkspaceState,
};
pub use open::{OpenError, current_exe, ensure_daemon, open_workspace, opener};
pub use orchestrator::{Orchestrator, OrchestratorError, Settings};
pub use patch::{
    Conflict, Create, Created, Delete, DetailedQuestion, ImplHints, InvalidPatchReply, Location,
    MAX_CONFLICTS, MAX_ITEM_CHARS, MAX_ITEMS, MAX_OPERATIONS, MAX_PLAN_TASKS, MAX_QUESTIONS,
    MAX_TEMP_ID_CHARS, MAX_TEXT_CHARS, MAX_TITLE_CHARS, Move, Operation, PLAN_PATCH_VERSION,
    PatchContext, PatchError, PatchErrors, PatchProblem, PatchSummary, PlanPatch, PlannedConflict,
    PlannedQuestion, Position, Question, RemovedDependency, Update, apply as apply_patch,
    generated_plan_patch_schema, plan_patch_schema,
};
pub use plan::{MAX_CYCLES_REPORTED, PlanFinding};
pub use pools::{PoolSummary, Pools, ReadyTask, UnknownPool, pick, summaries as pool_summaries};
pub use processes::{
    ContainerProcess, Containers, WorkerProcess, containers as process_containers,
    workers as process_workers,
};
pub use recent::{MAX_RECENT, RecentWorkspace, forget as forget_workspace, recent_file};
pub use settings::{
    ConnectionTest, LlmSettings, SettingsError, SettingsUpdate, TEST_TIMEOUT, TestFailure,
    check as check_settings, valid_variable_name,
};
pub use store::{
    Area, CachedReader, Change, DEFAULT_SAVE_EVERY, Entry, Holder, InFlight, LAYOUT_VERSION,
    MAX_LINE_BYTES, MutateError, StoreError, Workspace, WorkspaceMeta, in_flight, process_alive,
    process_start_time, read_state, rebuild_state, saved_state, set_writer_role,
};
pub use store::{
    CheckReport, Finding, RepairReport, check as check_workspace, repair as repair_workspace,
    verify as verify_workspace,
};
