//! AgentRunner: a planner LLM driving a worker CLI agent through the task contract
//! (`contracts/agent_runner_task.yml`) on the shared session driver. [`app`] is the
//! `agent-runner` command, [`host`] performs the contract's actions with the [`task`],
//! the planner ([`protocol`], [`provider`]), the worker in its [`sandbox`] ([`worker`],
//! [`run_record`], [`preflight`]) and the Task Note ([`report`]).

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
pub mod run_record;
pub mod sandbox;
pub mod task;
pub mod time;
pub mod worker;
