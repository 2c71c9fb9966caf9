//! The guard language: small boolean conditions over session data, for transitions,
//! checks, counter limits and action arguments.
//!
//! [`parse`] builds an [`ast::Expr`]; [`check`] resolves names and types against a
//! [`check::TypeEnv`]; [`eval`] runs it without ever panicking. The grammar and its limits
//! are in `docs/guard-language.md`.

pub(crate) mod ast;
pub(crate) mod check;
pub(crate) mod eval;
mod parser;
pub(crate) mod types;

// The surface: what the binaries, benches and integration tests use from this module.
pub use check::CheckErrorKind;
pub use check::TypeEnv;
pub use check::check_condition;
pub use eval::Context;
pub use eval::eval;
pub use types::Ty;

pub use ast::{Expr, SyntaxError};

/// Parses a guard expression.
pub fn parse(text: &str) -> Result<Expr, SyntaxError> {
    parser::parse(text)
}
