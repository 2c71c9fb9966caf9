//! The command line: argument definitions and dispatch. The only module that prints.
//!
//! Argument definitions (clap) and dispatch. `cli::lint` finds `*.yml`/`*.yaml` files
//! (following links, each directory once), reads each as bytes, loads and lints it against
//! every known host (`lint::load_bytes_and_lint`), renders the findings and prints a
//! one-line summary on stderr. A path that cannot be read or decoded (`lint::decode`: not
//! UTF-8, found at its first bad byte) is a `file-unreadable` finding for that path, so one
//! bad file neither hides the others nor leaves an output format incomplete. Commands
//! return `Result<ExitCode, CliError>`; `cli::error` is the one place typed errors become
//! text and exit status: 0 clean, 1 findings at or above `--deny` (or an invalid contract
//! for `graph`/`matrix`), 2 usage or IO errors (for `lint`: a file not read, or a directory
//! with no contract file, after printing the findings).
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod error;
mod init;
mod lint;
mod loading;
mod model;
mod out;
mod root;
mod semantic;
mod show;
mod test;
mod tools;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::analysis::{diagram, matrix};
use crate::contract::flags;
use crate::contract::{self, Contract};
use crate::diagnostic::render::Format;
use crate::environment::Environment;
use crate::source::Sources;
use error::CliError;
use out::{err, errln, out, outln};

#[derive(Debug, Parser)]
#[command(
    name = "code-intel",
    version,
    about = "A contract-driven flow engine that makes coding agents understand a codebase before they change it"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check contract files: YAML syntax, then the contract schema, then meaning.
    ///
    /// A file that cannot be read or is not UTF-8 is a `file-unreadable` finding and the
    /// other files are still checked. A one-line summary goes to stderr.
    ///
    /// Exit status: 0 clean; 1 findings (at or above --deny); 2 usage or IO error: a file
    /// could not be read, or a directory holds no contract file (the findings are still
    /// printed, in a valid document for every --format).
    Lint {
        /// Contract files or directories to search for *.yml / *.yaml; default: the project's
        /// .code-intel/phase_contract.yml if present, else the built-in contract.
        paths: Vec<PathBuf>,
        #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
        format: OutputFormat,
        /// The lowest severity that makes the exit status 1.
        #[arg(long, value_enum, default_value_t = DenyLevel::Warning)]
        deny: DenyLevel,
    },
    /// Draw the flow as a diagram, optionally as it is under a set of flags.
    Graph {
        #[command(flatten)]
        source: ContractSource,
        /// Flags as a user would type them, e.g. "--fast -ni"; only what can run is drawn.
        #[arg(long, allow_hyphen_values = true)]
        flags: Option<String>,
        /// Draw only what can run for this intent, one the contract declares (with the
        /// flags of --flags, or none given). Without --intent and --flags every state is
        /// drawn; --flags alone uses the contract's default intent.
        #[arg(long)]
        intent: Option<String>,
        #[arg(long, value_enum, default_value_t = GraphFormat::Mermaid)]
        format: GraphFormat,
    },
    /// Print the effective contract after overlays: per state the instruction as rendered
    /// for the flags, the tools, the payload expected and the transitions, per counter
    /// the limit in force, each with where it is written (built-in or overlay file:line).
    Show {
        #[command(flatten)]
        source: ContractSource,
        #[command(flatten)]
        session: SessionSource,
        /// The locale of the instructions; default: the contract's first.
        #[arg(long)]
        locale: Option<String>,
        /// Only this state.
        state: Option<String>,
        /// Leave out the states that cannot run under these flags and intent.
        #[arg(long)]
        only_running: bool,
    },
    /// Print the phase × flag matrix computed from the contract.
    Matrix {
        #[command(flatten)]
        source: ContractSource,
        #[arg(long, value_enum, default_value_t = MatrixFormat::Markdown)]
        format: MatrixFormat,
    },
    /// Print the JSON Schema of contract files (or, with --scenarios, of scenario files).
    Schema {
        /// The schema of scenario files (`code-intel test`) instead.
        #[arg(long)]
        scenarios: bool,
    },
    /// Search a shortest payload sequence to each state by running the contract (payloads
    /// generated from the schemas and guards) and print them as a scenario file to start
    /// tests from; states no generated sequence reaches are listed at the top.
    Paths {
        #[command(flatten)]
        source: ContractSource,
        #[command(flatten)]
        session: SessionSource,
        /// Host facts as a JSON object; default: each declared fact's smallest value.
        #[arg(long)]
        facts: Option<String>,
    },
    /// Turn a session the MCP server recorded into a scenario file (printed), whose steps
    /// expect what the server decided then; with --check, also run it against the
    /// contract as it is now.
    Replay {
        /// The decision log; default: .code-intel/logs/decisions.jsonl.
        #[arg(long, default_value = ".code-intel/logs/decisions.jsonl")]
        log: PathBuf,
        /// The session id; default: the last session the log saw start.
        #[arg(long)]
        session: Option<String>,
        /// Run the replayed scenario against the repository's contract and report where
        /// it now decides differently (exit 1).
        #[arg(long)]
        check: bool,
    },
    /// Run scenario files (*.scenarios.yml): sessions driven step by step through a
    /// contract, each step's state, message, refusal or finish checked.
    ///
    /// Exit status: 0 every scenario passed, 1 a scenario failed or a file could not be
    /// run, 2 no scenario file found or IO error.
    Test {
        /// Scenario files or directories to search for *.scenarios.yml; default: `.`.
        paths: Vec<PathBuf>,
        /// Also print, per contract, the transitions and counter limit redirects no
        /// scenario exercised.
        #[arg(long)]
        coverage: bool,
    },
    /// Search file contents (literal by default; --regex), gitignore-aware, in parallel.
    Search(tools::SearchArgs),
    /// List files whose paths match globs.
    Files(tools::FilesArgs),
    /// Find where a symbol is defined (tree-sitter index).
    Defs(tools::NameArgs),
    /// Find where a symbol is used: calls, subclasses, imports, types, decorators, reads, each
    /// with its kind and how far its file says it is this symbol (text search as the fallback).
    Refs(tools::NameArgs),
    /// A file's outline, or with --line the function containing that line.
    Symbols(tools::FileArgs),
    /// Classes, functions, imports and nesting of a file or directory.
    Structure(tools::PathArgs),
    /// What a change to files or symbols may affect, and a risk summary.
    Impact(tools::ImpactArgs),
    /// Build or update the symbol index and the semantic index under .code-intel/ and
    /// print what they did (embedding chunks needs a model: see docs/semantic-model.md).
    Index(tools::IndexArgs),
    /// Search by meaning: chunks of code and docs ranked by their words (BM25) and, with a
    /// model, by embedding similarity, fused; syncs the semantic index first when it is stale.
    Semantic(semantic::SemanticArgs),
    /// Measure semantic search on labelled queries: recall@k and MRR for the word
    /// ranking, the vector ranking and the fused one (benches/django_queries.yml).
    SemanticEval(semantic::EvalArgs),
    /// Ask in plain words; the question is routed to one of the tools above.
    Query(tools::QueryArgs),
    /// The embedding model semantic search ranks by meaning with: `install` it into the
    /// user's cache (one command, no setting), see its `status`, `list` the models.
    Model {
        #[command(subcommand)]
        command: model::ModelCommand,
    },
    /// Run the MCP stdio server for coding agents (Claude Code, Codex) in a repository.
    ///
    /// stdout is the MCP transport; logs go to stderr (`CODE_INTEL_LOG=debug` for more).
    Serve {
        /// The repository to serve; every path a client gives is confined to it.
        #[arg(long, default_value = ".")]
        root: PathBuf,
        /// A contract file instead of the repository's `.code-intel/phase_contract.yml`
        /// (or the built-in contract).
        #[arg(long)]
        contract: Option<PathBuf>,
    },
    /// The write hook Claude Code and Codex run around file tools (registered by `init`).
    ///
    /// Reads the hook JSON on stdin. Before a write it prints a deny answer when the
    /// session in progress does not allow the write, and nothing when it does; after a
    /// read (Claude Code) it records the files read. Always exits 0.
    Hook {
        /// The client that runs the hook.
        #[arg(value_enum)]
        client: HookClient,
    },
    /// Set a repository up for Claude Code and Codex: .code-intel/ prompts, the /code
    /// command and skill generated from the contract, MCP registration and hooks.
    Init {
        /// The repository to set up.
        #[arg(default_value = ".")]
        path: PathBuf,
        /// The language of the prompt files and of the flow's messages.
        #[arg(long, value_enum, default_value_t = InitLocale::En)]
        locale: InitLocale,
        /// How clients start code-intel: a command on PATH or a path to the binary.
        #[arg(long, default_value = "code-intel")]
        command: String,
        /// Overwrite generated files even when they were edited since init wrote them.
        #[arg(long)]
        force: bool,
        /// Also run `code-intel model install` when no embedding model is found, so
        /// semantic search ranks by meaning and not only by words.
        #[arg(long)]
        install_model: bool,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum HookClient {
    Claude,
    Codex,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum InitLocale {
    En,
    Ja,
}

#[derive(Debug, clap::Args)]
struct ContractSource {
    /// A contract file; default: the project's .code-intel/phase_contract.yml overlaying
    /// the built-in contract, or the built-in contract alone.
    #[arg(long)]
    contract: Option<PathBuf>,
}

/// The flags and intent a session would start with (`show`, `paths`).
#[derive(Debug, clap::Args)]
struct SessionSource {
    /// Flags as a user would type them, e.g. "--quick -ni".
    #[arg(long, allow_hyphen_values = true, default_value = "")]
    flags: String,
    /// The intent; default: the contract's default intent.
    #[arg(long)]
    intent: Option<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum OutputFormat {
    Human,
    Json,
    Sarif,
    Github,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DenyLevel {
    Warning,
    Error,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum GraphFormat {
    Mermaid,
    Dot,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum MatrixFormat {
    Markdown,
    Json,
}

/// Runs a command; errors are printed to stderr and become the exit status.
pub fn run(cli: Cli) -> ExitCode {
    match dispatch(cli) {
        Ok(code) => code,
        Err(CliError::InvalidContract { rendered }) => {
            err!("{rendered}");
            ExitCode::from(1)
        }
        Err(e) => {
            errln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

fn dispatch(cli: Cli) -> Result<ExitCode, CliError> {
    match cli.command {
        Command::Lint {
            paths,
            format,
            deny,
        } => {
            let format = match format {
                OutputFormat::Human => Format::Human,
                OutputFormat::Json => Format::Json,
                OutputFormat::Sarif => Format::Sarif,
                OutputFormat::Github => Format::Github,
            };
            Ok(lint::run(&paths, format, deny == DenyLevel::Error))
        }
        Command::Graph {
            source,
            flags: flag_text,
            intent,
            format,
        } => graph(&source, flag_text, intent, format),
        Command::Matrix { source, format } => matrix(&source, format),
        Command::Show {
            source,
            session:
                SessionSource {
                    flags: flag_text,
                    intent,
                },
            locale,
            state,
            only_running,
        } => {
            let (contract, sources) = load_contract_with_sources(&source)?;
            show::run(
                &contract,
                &sources,
                &flag_text,
                intent.as_deref(),
                locale.as_deref(),
                state.as_deref(),
                only_running,
            )
        }
        Command::Search(a) => Ok(tools::search(&a)),
        Command::Files(a) => Ok(tools::files(&a)),
        Command::Defs(a) => Ok(tools::defs(&a)),
        Command::Refs(a) => Ok(tools::refs(&a)),
        Command::Symbols(a) => Ok(tools::symbols(&a)),
        Command::Structure(a) => Ok(tools::structure(&a)),
        Command::Impact(a) => Ok(tools::impact(&a)),
        Command::Index(a) => Ok(tools::index(&a)),
        Command::Semantic(a) => Ok(semantic::semantic(&a)),
        Command::SemanticEval(a) => Ok(semantic::eval(&a)),
        Command::Query(a) => Ok(tools::ask(&a)),
        Command::Model { command } => Ok(model::run(&command)),
        Command::Serve { root, contract } => serve(&root, contract),
        Command::Hook { client } => Ok(hook(client)),
        Command::Init {
            path,
            locale,
            command,
            force,
            install_model,
        } => init::run(
            &crate::client::init::Options {
                root: path,
                locale: match locale {
                    InitLocale::En => "en",
                    InitLocale::Ja => "ja",
                }
                .to_string(),
                command,
                force,
            },
            install_model,
        ),
        Command::Schema { scenarios } => {
            if scenarios {
                out!(
                    "{}",
                    crate::scenario::generated_schema().map_err(CliError::Encode)?
                );
            } else {
                out!(
                    "{}",
                    contract::generated_schema().map_err(CliError::Encode)?
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Test { paths, coverage } => test::run(&paths, coverage),
        Command::Paths {
            source,
            session:
                SessionSource {
                    flags: flag_text,
                    intent,
                },
            facts,
        } => paths(&source, &flag_text, intent.as_deref(), facts),
        Command::Replay {
            log,
            session,
            check,
        } => replay(&log, session.as_deref(), check),
    }
}

/// `graph`: the flow as a diagram, as it is under the flags given (an intent alone draws
/// it under no flags).
fn graph(
    source: &ContractSource,
    flag_text: Option<String>,
    intent: Option<String>,
    format: GraphFormat,
) -> Result<ExitCode, CliError> {
    let contract = load_contract(source)?;
    if let Some(intent) = &intent
        && !contract.intents.contains(intent)
    {
        return Err(CliError::UnknownIntent {
            intent: intent.clone(),
            known: contract.intents.clone(),
        });
    }
    // An intent alone draws the flow for it with no flags given, rather than
    // being ignored: only a diagram under some flag set depends on the intent.
    let flag_text = flag_text.or_else(|| intent.as_ref().map(|_| String::new()));
    let intent = intent.unwrap_or_else(|| contract.default_intent.clone());
    let flag_set = flag_text
        .as_deref()
        .map(|t| flags::parse(&contract, t))
        .transpose()
        .map_err(CliError::Flags)?;
    let format = match format {
        GraphFormat::Mermaid => diagram::Format::Mermaid,
        GraphFormat::Dot => diagram::Format::Dot,
    };
    out!(
        "{}",
        diagram::render(&contract, flag_set.as_ref(), &intent, format)
    );
    Ok(ExitCode::SUCCESS)
}

/// `matrix`: the phase × flag matrix of the contract, as Markdown or JSON.
fn matrix(source: &ContractSource, format: MatrixFormat) -> Result<ExitCode, CliError> {
    let contract = load_contract(source)?;
    let m = matrix::compute(&contract).map_err(CliError::Matrix)?;
    match format {
        MatrixFormat::Markdown => out!("{}", matrix::to_markdown(&contract, &m)),
        MatrixFormat::Json => {
            outln!(
                "{}",
                serde_json::to_string_pretty(&m).map_err(CliError::Encode)?
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `paths`: a shortest payload sequence to each state, printed as a scenario file.
fn paths(
    source: &ContractSource,
    flag_text: &str,
    intent: Option<&str>,
    facts: Option<String>,
) -> Result<ExitCode, CliError> {
    let contract = load_contract(source)?;
    let facts = match facts {
        None => None,
        Some(text) => match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(serde_json::Value::Object(map)) => Some(map),
            _ => {
                return Err(CliError::Usage(format!(
                    "--facts must be a JSON object, not {text}"
                )));
            }
        },
    };
    let paths = crate::scenario::shortest(&contract, flag_text, intent, facts)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let named = source
        .contract
        .as_ref()
        .map_or("builtin".to_string(), |p| p.display().to_string());
    out!("{}", crate::scenario::to_scenarios(&paths, &named));
    Ok(ExitCode::SUCCESS)
}

/// `replay`: a session the server recorded as a scenario file, run against the
/// repository's contract as it is now with `--check`.
fn replay(log: &Path, session: Option<&str>, check: bool) -> Result<ExitCode, CliError> {
    let text = std::fs::read_to_string(log).map_err(|e| CliError::read(log, e))?;
    let project = Path::new(contract::PROJECT_CONTRACT).is_file();
    let named = if project {
        format!("../{}", contract::PROJECT_CONTRACT)
    } else {
        "builtin".to_string()
    };
    let scenario = crate::scenario::from_log(&text, session, &named)
        .map_err(|e| CliError::Usage(format!("{}: {e}", log.display())))?;
    out!("{scenario}");
    if !check {
        return Ok(ExitCode::SUCCESS);
    }
    let contract = load_contract(&ContractSource { contract: None })?;
    test::check_text(&contract, &scenario)
}

/// `hook`: one hook call, stdin to stdout. Exits 0 whatever happens: a client lets a
/// write through when a hook fails with another status, so every failure is a deny answer
/// (`client::hook` turns errors and panics into one), and a closed stdout is ignored.
fn hook(client: HookClient) -> ExitCode {
    use crate::client::hook::{self, Client};
    use std::io::{Read as _, Write as _};
    /// More hook input than any tool call sends; past it the write is refused.
    const MAX_INPUT: u64 = 64 * 1024 * 1024;
    let client = match client {
        HookClient::Claude => Client::Claude,
        HookClient::Codex => Client::Codex,
    };
    let mut stdin = Vec::new();
    let read = std::io::stdin()
        .lock()
        .take(MAX_INPUT + 1)
        .read_to_end(&mut stdin);
    let cwd = std::env::current_dir().ok();
    let env = Environment::of_process();
    let output = match read {
        // An unreadable or oversized input goes in as garbage and comes out as a deny.
        Err(_) => hook::run(client, b"", cwd.as_deref(), &env),
        Ok(n) if n as u64 > MAX_INPUT => hook::run(client, b"", cwd.as_deref(), &env),
        Ok(_) => hook::run(client, &stdin, cwd.as_deref(), &env),
    };
    if let Some(text) = output.stderr {
        errln!("{text}");
    }
    if let Some(text) = output.stdout {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{text}").and_then(|()| out.flush());
    }
    ExitCode::SUCCESS
}

/// `serve`: loads the repository's contract, then runs the MCP server until the client
/// disconnects.
fn serve(root: &Path, contract_file: Option<PathBuf>) -> Result<ExitCode, CliError> {
    let env = Environment::of_process();
    let level = match env.var("CODE_INTEL_LOG") {
        Some("debug") => tracing::Level::DEBUG,
        Some("trace") => tracing::Level::TRACE,
        Some("warn") => tracing::Level::WARN,
        Some("error") => tracing::Level::ERROR,
        _ => tracing::Level::INFO,
    };
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_max_level(level)
        .try_init();
    // Only the code-intel server's registry: a contract for another host is refused as
    // it loads, with its diagnostics.
    let (contract, _) = loading::load_contract_and_sources(
        root,
        contract_file.as_deref(),
        &[crate::server::registry::registry()],
    )?;
    let key = crate::server::checkpoint::SealKey::load_or_create(&env).map_err(CliError::Key)?;
    let server =
        crate::server::core::Server::new(root, contract, key, &env).map_err(CliError::Server)?;
    tracing::info!("serving {}", server.root().display());
    crate::server::service::serve_stdio(server).map_err(CliError::Serve)?;
    Ok(ExitCode::SUCCESS)
}

/// Loads and lints the contract named by `source` (the project's, or the built-in one);
/// a contract with errors is a [`CliError::InvalidContract`] with its diagnostics.
fn load_contract(source: &ContractSource) -> Result<Contract, CliError> {
    loading::load_contract_and_sources(
        Path::new("."),
        source.contract.as_deref(),
        &crate::hosts::all(),
    )
    .map(|(contract, _)| contract)
}

/// [`load_contract`], keeping the sources, whose names say where each span comes from.
fn load_contract_with_sources(source: &ContractSource) -> Result<(Contract, Sources), CliError> {
    loading::load_contract_and_sources(
        Path::new("."),
        source.contract.as_deref(),
        &crate::hosts::all(),
    )
}
