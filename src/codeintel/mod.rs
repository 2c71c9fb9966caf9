//! Code-intelligence tools: text search, files, symbols, references, structure and impact, as a library the CLI and the MCP server call.
//!
//! Every path a client gives goes through [`root::Root`]; every list is a bounded
//! [`page::Page`]; nothing here prints.

pub mod budget;
pub mod error;
pub mod gitignore;
pub mod impact;
pub mod index;
pub(crate) mod languages;
pub(crate) mod lock;
pub mod page;
pub(crate) mod qualified;
pub mod query;
pub(crate) mod references;
pub mod refresh;
pub(crate) mod retag;
pub mod root;
pub mod search;
pub mod state_dir;
pub(crate) mod store;
pub mod symbols;
pub(crate) mod tags;
pub(crate) mod wire;
