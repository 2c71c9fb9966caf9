//! The guard language: small boolean conditions over session data, for transitions,
//! checks, counter limits and action arguments.
//!
//! [`parse`] builds an [`ast::Expr`]; [`check`] resolves names and types against a
//! [`check::TypeEnv`]; [`eval`] runs it without ever panicking. The grammar and its limits
//! are in `docs/guard-language.md`.

pub(crate) mod ast;
pub mod check;
pub mod eval;
mod parser;
pub mod types;

pub use ast::{Expr, SyntaxError};

/// Parses a guard expression.
pub fn parse(text: &str) -> Result<Expr, SyntaxError> {
    parser::parse(text)
}
