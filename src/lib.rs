//! code-intel: a declarative state-machine framework driven by contract files, and the
//! tools around it.
//!
//! The flow (phases, transitions, flags, payload schemas, messages, loop limits) is data in
//! a YAML contract. [`contract`] loads and resolves it, [`guard`] is its condition
//! language, [`machine`] is the pure interpreter, [`lint`] and [`analysis`] check and
//! explain it, and [`cli`] is the command line. See `docs/ARCHITECTURE.md`.

pub mod analysis;
pub mod cli;
pub mod client;
pub mod codeintel;
pub mod config;
pub mod contract;
pub mod diagnostic;
pub mod git;
pub mod guard;
pub mod hosts;
pub mod lint;
pub mod machine;
pub mod runner;
pub mod scenario;
pub mod semantic;
pub mod server;
pub mod session;
pub mod shell;
pub mod source;
pub mod yaml;
