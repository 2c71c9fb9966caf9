//! code-intel: a declarative state-machine framework driven by contract files, the hosts
//! that run it, and the tools around it.
//!
//! The flow (phases, transitions, flags, payload schemas, messages, loop limits) is data in
//! a YAML contract. [`contract`] loads and resolves it, [`guard`] is its condition
//! language, [`machine`] is the pure interpreter and [`session`] the loop every host
//! shares; [`lint`], [`analysis`] and [`scenario`] check and explain a contract. The hosts
//! are [`server`] (the MCP server, with [`codeintel`] and [`semantic`] for code
//! intelligence, [`git`] for task branches and [`client`] for the coding agents' clients)
//! and [`runner`] (AgentRunner), with [`multiverse`] above it (the orchestrator of many
//! tasks); [`hosts`] lists their registries; [`cli`] is the command
//! line. See `docs/ARCHITECTURE.md`.
//!
//! This file is the crate's surface. The top-level modules are public (but `config` and
//! `yaml`, used only inside), and each exposes at its root (`pub use`) what the binaries, the
//! benches and the integration tests use; the modules inside them are `pub(crate)` unless a
//! caller outside needs the module itself. The `unreachable_pub` lint (denied in CI through
//! clippy's `-D warnings`) keeps every other item `pub(crate)`.

pub mod cli;
pub mod client;
pub mod codeintel;
pub(crate) mod config;
pub mod environment;
pub mod git;
pub mod hosts;
pub(crate) mod http_retry;
pub mod multiverse;
pub mod runner;
pub mod semantic;
pub mod server;
pub mod shell;

// The contract engine, its own crate (`crates/engine`), under the names the rest of this
// crate and its users have always used.
pub use engine::analysis;
pub use engine::contract;
pub use engine::diagnostic;
pub use engine::guard;
pub use engine::lint;
pub use engine::machine;
pub use engine::scenario;
pub use engine::session;
pub use engine::source;
pub(crate) use engine::yaml;
