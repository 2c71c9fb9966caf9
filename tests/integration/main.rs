//! The one integration-test binary: each module tests one feature at its boundary.

mod agent_runner;
mod agent_runner_cli;
mod answer_sizes;
mod claude_code;
mod cli;
mod codeintel;
mod codex;
mod default_flow;
mod driver;
mod evidence;
mod generated;
mod git_branches;
mod guard_table;
mod history;
mod hook;
mod index_concurrency;
mod init;
mod kill_anywhere;
mod layering;
mod lint_fixtures;
mod matrix;
mod mcp_server;
mod properties;
mod runner_planner;
mod runner_sandbox;
mod rust_source;
mod saving;
mod semantic;
mod server_index;
mod server_registry;
#[cfg(unix)]
mod skipped;
mod support;
mod tidy;
