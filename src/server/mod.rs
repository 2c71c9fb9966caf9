//! The code-intel host: the MCP server that runs the default contract for coding agents.
//! So far this holds what the server implements ([`registry`]) and the project setup
//! that registers it with clients ([`init`]); the server itself builds on `session::Driver`.

pub mod init;
pub mod registry;
