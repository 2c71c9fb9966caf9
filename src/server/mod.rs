//! The code-intel host: the MCP server that runs the default contract for coding agents.
//!
//! [`registry`] is what it implements, [`tools`] declares each tool (and where its calls
//! go), [`core::Server`] decides every tool call, [`service`] speaks MCP over stdio,
//! [`host`] performs the contract's actions, [`checkpoint`] and [`session_lock`] keep
//! sessions durable and single, [`git`] runs the task branches, [`init`] sets a
//! repository up for the clients, [`hook`] is the clients' write hook.

pub mod agreement;
pub mod args;
pub mod checkpoint;
pub mod code_tools;
pub mod core;
pub mod evidence;
pub mod hook;
pub mod host;
pub mod index_cache;
pub mod init;
pub mod log;
pub mod paths;
pub mod record;
pub mod recorder;
pub mod registry;
pub mod reply;
pub mod semantic_tools;
pub mod service;
pub mod session_lock;
pub mod tools;
pub mod watch;
pub mod words;
pub mod worktree;
