//! The AgentRunner host: a planner LLM driving a worker agent through the task contract.
//! So far this holds what the runner implements ([`registry`]) and how a planner's reply
//! is read ([`extract`]); the runner itself builds on `session::Driver`.

pub mod cancel;
pub mod extract;
pub mod preflight;
pub mod process;
pub mod protocol;
pub mod provider;
pub mod registry;
pub mod report;
pub mod run_record;
pub mod sandbox;
pub mod time;
pub mod worker;
