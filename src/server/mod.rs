//! The code-intel host: the MCP server that runs the default contract for coding agents.
//!
//! [`registry`] is what it implements, [`tools`] declares each tool (and where its calls
//! go), [`core::Server`] decides every tool call, [`service`] speaks MCP over stdio,
//! [`host`] performs the contract's actions, [`checkpoint`] and [`session_lock`] keep
//! sessions durable and single, the top-level [`crate::git`] runs the task branches.
//! [`write_rule`] is the one rule of which writes a session allows and [`reads`] the
//! record of the files a client read itself: the server decides with them, and the
//! clients' hook ([`crate::client::hook`], which may use this module; never the reverse)
//! answers with them.

pub mod agreement;
pub mod args;
pub mod checkpoint;
pub mod code_tools;
pub mod core;
pub mod evidence;
pub mod host;
pub mod index_cache;
pub mod log;
pub mod paths;
pub mod reads;
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
pub mod write_rule;
