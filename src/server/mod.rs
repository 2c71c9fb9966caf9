//! The code-intel host: the MCP server that runs the default contract for coding agents.
//! So far this holds what the server implements ([`registry`]); the server itself builds
//! on `session::Driver`.

pub mod evidence;
pub mod registry;
