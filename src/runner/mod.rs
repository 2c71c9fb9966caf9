//! The AgentRunner host: a planner LLM driving a worker agent through the task contract.
//! So far this holds what the runner implements ([`registry`]); the runner itself builds
//! on `session::Driver`.

pub mod registry;
