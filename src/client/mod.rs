//! How code-intel plugs into the coding agents' clients (Claude Code, Codex): the files
//! [`init`] writes into a repository (the MCP server's registration, the hooks, the
//! prompts, the `/code` command and Codex skill, the personal files kept out of git), and
//! the [`hook`] process a client starts before each write and after each read.
//!
//! Neither is the MCP server: `init` runs once from the CLI, and `hook` is a cold process
//! per tool call. The hook uses what the server keeps (its checkpoints, path rules,
//! registry and write rule, [`crate::server::write_rule`]) so that it enforces exactly
//! what the server decided; the server never uses this module (the `layering` test).

pub(crate) mod hook;
pub(crate) mod init;
