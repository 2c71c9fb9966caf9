//! The `code-intel` binary: parses arguments and hands over to `code_intel::cli`.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    code_intel::cli::run(code_intel::cli::Cli::parse())
}
