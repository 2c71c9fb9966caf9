//! AgentRunner: a planner LLM driving a worker CLI agent through the task contract
//! (`contracts/agent_runner_task.yml`) on the shared session driver. [`app`] is the
//! `agent-runner` command, [`host`] performs the contract's actions with the [`task`],
//! the planner ([`protocol`], [`provider`]), the worker in its [`sandbox`] ([`worker`],
//! [`worker_turn`], [`preflight`]) and the Task Note ([`report`]).
//!
//! ## The parts
//!
//! - `app`: `agent-runner` itself. Reads the task (`task`: strict serde types with a
//!   generated schema, checked with positions by `contract::schema_findings`), builds the
//!   planner and the sandbox, runs the task contract through `session::Driver` with the
//!   runner host, and maps the end to an exit code: a terminal state's outcome, or, when the
//!   driver stopped elsewhere (an action failed, a cancel), the cancel path or
//!   `Driver::finalize` by hand, so `finally` runs on every exit. `handle_signals`: the first
//!   SIGINT/SIGTERM sets the `cancel::Cancel` token, a second exits.
//! - `host`: `RunnerHost` performs the contract's actions and keeps the evidence between
//!   them (criteria, runs, the last test, verdicts, planner exchanges) so each planner
//!   request carries it. `Host::stepped` feeds the progress lines and the `--events` file
//!   (`events`). `report` renders the Task Note from `templates/agent-runner/` and the
//!   result JSON; `artifacts` keeps the run record beside it (`.agent-runner/task-ID/`:
//!   every planner exchange, each worker run's prompt and bounded full output, the test
//!   output, secrets redacted), moves an earlier run's aside, and makes the trace id that
//!   ties a run's logs, events, note and result together. `ending` says why a task that
//!   did not complete ended (the planner's reason or verdict, the tests' failure, the
//!   worker's exit), which is the result's summary, never a transition's message.
//! - `protocol` (requests, enveloped replies checked by `schemas/planner/*.json` and by
//!   meaning, prompts from `templates/planner/`, the `Planner` that asks again with the
//!   reason) over `provider` (OpenAI-compatible HTTP with `ureq`, the Codex and Claude CLIs,
//!   the mock and its script); `extract` finds the JSON object in any reply; `model_name`
//!   checks a model before it reaches a command line. `tooling`
//!   (`runner.tooling`): the weighted, seeded choice of a planner provider per call and of
//!   the worker, with rate-limit cooldowns, fallback and a force mode; `tooling_setup`
//!   applies it to a task (the worker's choice, the per-call planner).
//! - `worker` (each CLI's command line and final message), `sandbox` (`DockerSandbox`
//!   through the docker CLI: a named, labelled container under the `sandbox_policy`
//!   (limits, network, the invoking user), `docker exec` under a wrapper that records the
//!   pid so a timeout or cancel kills the process inside the container; `LocalSandbox`,
//!   whose every command `confine` runs in mount and PID namespaces of its own, without
//!   capabilities, the `--hide` paths covered, or not at all),
//!   `images` (the worker images' Dockerfiles and builds), `preflight`, `worker_turn` (a worker turn with git snapshots before and
//!   after; the test command), all on `process` (a child in its own process group, bounded
//!   capture, deadline and cancel: TERM, grace, KILL). `cleanup` registers the live process
//!   groups and containers, for an exit that cannot wait for the finalizers (a second
//!   signal).

pub mod app;
pub(crate) mod artifacts;
pub(crate) mod cancel;
pub(crate) mod cleanup;
pub(crate) mod confine;
pub(crate) mod ending;
pub(crate) mod events;
pub(crate) mod extract;
pub(crate) mod host;
pub mod images;
pub(crate) mod model_name;
pub(crate) mod preflight;
pub(crate) mod process;
pub mod protocol;
pub mod provider;
pub(crate) mod registry;
pub(crate) mod report;
pub(crate) mod sandbox;
pub(crate) mod sandbox_policy;
pub mod task;
pub(crate) mod time;
pub(crate) mod tooling;
pub(crate) mod tooling_setup;
pub(crate) mod worker;
pub(crate) mod worker_turn;

// The surface: what the binaries, benches and integration tests use from this module.
pub use app::LogFormat;
pub use app::Options;
pub use app::RunError;
pub use artifacts::new_trace_id;
pub use cancel::Cancel;
pub use events::Events;
pub use events::Progress;
pub use host::RunnerHost;
pub use host::Setup;
pub use preflight::PreflightReport;
pub use preflight::Target;
pub use preflight::preflight;
pub use process::Captured;
pub use process::Ending;
pub use process::Output;
pub use protocol::Action;
pub use protocol::CompletionAssessmentRequest;
pub use protocol::Criterion;
pub use protocol::CriterionState;
pub use protocol::NextActionRequest;
pub use protocol::PlanTaskRequest;
pub use protocol::Planner;
pub use protocol::PlannerError;
pub use protocol::PlannerOptions;
pub use protocol::Protocol;
pub use protocol::RunEvidence;
pub use protocol::Status;
pub use protocol::TestEvidence;
pub use provider::Message;
pub use provider::MetaConfig;
pub use provider::MetaKind;
pub use provider::Prompt;
pub use provider::Provider;
pub use provider::ProviderError;
pub use provider::Role;
pub use provider::http::HttpProvider;
pub use sandbox::DockerOptions;
pub use sandbox::DockerSandbox;
pub use sandbox::LocalSandbox;
pub use sandbox::RUN_LABEL;
pub use sandbox::Sandbox;
pub use sandbox::SandboxError;
pub use sandbox_policy::HostFacts;
pub use sandbox_policy::SandboxPolicy;
pub use sandbox_policy::SandboxSpec;
pub use task::generated_schema as task_schema;
pub use tooling::Availability;
pub use tooling::Category as ToolingCategory;
pub use tooling::Choice as ToolingChoice;
pub use tooling::Selector;
pub use tooling::SplitMix64;
pub use tooling::ToolingConfig;
pub use worker::Invocation;
pub use worker::WorkerConfig;
pub use worker::WorkerKind;
pub use worker_turn::RunEnding;
pub use worker_turn::RunIds;
pub use worker_turn::WorkerTurn;
pub use worker_turn::run_test_command;
pub use worker_turn::run_worker;
