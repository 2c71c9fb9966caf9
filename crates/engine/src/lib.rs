//! The contract engine: everything a contract is and does, with no host, no IO beyond
//! reading the files it is given, and no knowledge of any program that runs it.
//!
//! [`source`] and [`diagnostic`] carry files and findings (line:col, stable codes);
//! [`yaml`] reads YAML with positions; [`guard`] is the condition language; [`contract`]
//! loads and resolves a contract against the hosts' registries it is handed; [`machine`]
//! is the pure interpreter and [`session`] the loop every host shares; [`analysis`],
//! [`lint`] and [`scenario`] check and explain a contract. The programs' crates (the
//! code-intel server, AgentRunner, Multiverse) build on it; it builds on none of them.

pub mod analysis;
pub mod contract;
pub mod diagnostic;
pub mod guard;
pub mod lint;
pub mod machine;
pub mod scenario;
pub mod session;
pub mod source;
pub mod yaml;
