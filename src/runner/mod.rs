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
//!   result JSON.
//! - `protocol` (requests, enveloped replies checked by `schemas/planner/*.json` and by
//!   meaning, prompts from `templates/planner/`, the `Planner` that asks again with the
//!   reason) over `provider` (OpenAI-compatible HTTP with `ureq`, the Codex and Claude CLIs,
//!   the mock and its script); `extract` finds the JSON object in any reply.
//! - `worker` (each CLI's command line and final message), `sandbox` (`DockerSandbox`
//!   through the docker CLI: a named, labelled container, `docker exec` under a wrapper
//!   that records the pid so a timeout or cancel kills the process inside the container;
//!   `LocalSandbox`), `preflight`, `worker_turn` (a worker turn with git snapshots before and
//!   after; the test command), all on `process` (a child in its own process group, bounded
//!   capture, deadline and cancel: TERM, grace, KILL). `cleanup` registers the live process
//!   groups and containers, for an exit that cannot wait for the finalizers (a second
//!   signal).

pub mod app;
pub mod cancel;
pub mod cleanup;
pub mod events;
pub mod extract;
pub mod host;
pub mod preflight;
pub mod process;
pub mod protocol;
pub mod provider;
pub mod registry;
pub mod report;
pub mod sandbox;
pub mod task;
pub mod time;
pub mod worker;
pub mod worker_turn;
