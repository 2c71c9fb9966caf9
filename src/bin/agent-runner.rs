//! The `agent-runner` binary: parses arguments, installs logging and the signal handler,
//! hands over to `code_intel::runner::app`, and is the one place that writes to the
//! terminal: the task file's warnings, the progress lines (text mode) and why the task
//! could not run, all on stderr.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use code_intel::diagnostic::render;
use code_intel::runner::Cancel;
use code_intel::runner::Progress;
use code_intel::runner::{LogFormat, Options, RunError, app, images, new_trace_id};

/// Runs a task: a planner LLM plans acceptance criteria and decides, a coding agent CLI
/// works in a Docker sandbox, the test command decides, and a Task Note records it all.
///
/// Exit codes: 0 complete, 1 failed, 2 usage or invalid task, 3 incomplete (loops
/// exhausted), 4 needs a human (the planner asked a question), 130 cancelled.
///
/// `agent-runner image build KIND` builds a worker image (`agent-runner image --help`).
#[derive(Debug, Parser)]
#[command(name = "agent-runner", version)]
struct Args {
    /// The task file (YAML); read from stdin when absent.
    task: Option<PathBuf>,
    /// The planner model, over the task's `runner.meta.model`.
    #[arg(long)]
    meta_model: Option<String>,
    /// Also write the result as JSON to this file.
    #[arg(long)]
    result_file: Option<PathBuf>,
    /// `text`: one progress line per state change and action on stderr, warnings only
    /// as logs; `json`: logs as JSON lines on stderr, no progress lines.
    #[arg(long, value_enum, default_value = "text")]
    log_format: Format,
    /// Write every state change and action as JSON lines to this file.
    #[arg(long)]
    events: Option<PathBuf>,
    /// Run the worker on this machine, in the repository, without Docker: each command
    /// in mount and PID namespaces of its own (no other process visible), without
    /// capabilities; the network and the user's other files are not confined.
    #[arg(long)]
    unsafe_local: bool,
    /// With --unsafe-local, hide PATH (an absolute, existing directory or file, neither
    /// holding the repository nor inside it) from every command the worker side runs;
    /// may be given more than once.
    #[arg(long = "hide", value_name = "PATH")]
    hide: Vec<PathBuf>,
    /// Label this run's containers `agent-runner.run=VALUE` as well as
    /// `agent-runner.task=<id>`, so a caller can find and remove exactly them (task ids
    /// repeat across callers).
    #[arg(long, value_name = "VALUE")]
    run_label: Option<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Json,
}

/// `agent-runner image build KIND`: builds a worker image (the base, then the kind's CLI
/// on it) from the Dockerfiles built into this binary (`docker/` in the source).
#[derive(Debug, Parser)]
#[command(name = "agent-runner image", version)]
struct ImageArgs {
    #[command(subcommand)]
    command: ImageCommand,
}

#[derive(Debug, clap::Subcommand)]
enum ImageCommand {
    /// Build the worker image of KIND (`codex`, `claude`, `gemini`), tagged as the task
    /// files' default for that kind. Needs a registry for the base image and npm.
    Build {
        /// `codex`, `claude` or `gemini` (or the kind as in task files: `codex-cli`, ...).
        kind: String,
        /// The worker image's tag instead of the default (`agent-runner-codex:<version>`).
        #[arg(long)]
        tag: Option<String>,
        /// The image the base starts from (default `node:22-bookworm-slim`): any image with
        /// Node.js 20 or later and apt, e.g. a mirror.
        #[arg(long)]
        base_image: Option<String>,
        /// `KEY=VALUE` for the base, e.g. `EXTRA_PACKAGES="openjdk-17-jdk maven"`.
        #[arg(long = "build-arg")]
        build_args: Vec<String>,
        /// A PEM certificate the image trusts besides the system's (a proxy that inspects
        /// TLS); may be given more than once.
        #[arg(long = "ca-cert")]
        ca_certs: Vec<PathBuf>,
        /// Build every layer again.
        #[arg(long)]
        no_cache: bool,
        /// Print the Dockerfiles and the docker commands instead of running them.
        #[arg(long)]
        print: bool,
    },
    /// List the worker images: kind, tag, pinned CLI version.
    List,
}

fn main() -> ExitCode {
    // `image` is a command of its own; a task file named `image` is `./image`.
    if std::env::args_os().nth(1).is_some_and(|a| a == "image") {
        return image_command();
    }
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(e) => {
            let _ = e.print();
            let code = if e.use_stderr() { app::EXIT_USAGE } else { 0 };
            return exit(code);
        }
    };
    if args.task.is_none() && std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        // Reading a task from a terminal would wait silently for YAML nobody is typing.
        let usage = <Args as clap::CommandFactory>::command().render_usage();
        let _ = writeln!(
            std::io::stderr(),
            "error: no task file given, and stdin is a terminal\n\n{usage}\n\nGive a task file, or pipe one in (`agent-runner < task.yaml`); `--help` for more."
        );
        return exit(app::EXIT_USAGE);
    }
    let format = match args.log_format {
        Format::Text => LogFormat::Text,
        Format::Json => LogFormat::Json,
    };
    init_logs(format);
    // One id for this run in every log line (this span), event, the note and the result.
    let trace_id = new_trace_id();
    // (At ERROR level, so it is there at every log level.)
    let _run = tracing::error_span!("agent_runner", trace_id = %trace_id).entered();
    let cancel = Cancel::new();
    if let Err(e) = app::handle_signals(&cancel) {
        tracing::warn!(error = %e, "signals will not cancel the task cleanly");
    }
    let options = Options {
        task: args.task,
        meta_model: args.meta_model,
        result_file: args.result_file,
        log_format: format,
        events: args.events,
        unsafe_local: args.unsafe_local,
        trace_id: Some(trace_id),
        run_label: args.run_label,
        hide: args.hide,
        env: code_intel::environment::Environment::of_process(),
    };
    let loaded = match app::load_task(&options) {
        Ok(loaded) => loaded,
        Err(e) => return failed(&e),
    };
    if !loaded.warnings.is_empty() {
        say(&render::human(&loaded.sources, &loaded.warnings));
    }
    let progress = (format == LogFormat::Text).then(|| Box::new(std::io::stderr()) as Progress);
    match app::run(loaded, &options, &cancel, progress) {
        Ok(ended) => exit(ended.exit_code),
        Err(e) => failed(&e),
    }
}

/// Says why the task did not run and gives its exit code. The task file's findings are
/// shown as rendered (each with its code); every other error as an `agent-runner:` line
/// ending in its stable key (`[task.too_large]`).
fn failed(e: &RunError) -> ExitCode {
    match e {
        RunError::InvalidTask { .. } => say(&e.to_string()),
        _ => {
            let text = e.to_string();
            say(&format!(
                "agent-runner: {} [{}]\n",
                text.trim_end_matches('\n'),
                e.key()
            ));
        }
    }
    exit(e.exit_code())
}

/// A `--ca-cert` file's text, read only within [`images::MAX_CA_CERT_BYTES`]: a larger file
/// is refused by its size unread, and the read stops one byte past the limit, so a file that
/// grows meanwhile is not read whole either.
fn read_ca_cert(path: &Path) -> Result<String, String> {
    use std::io::Read as _;
    let limit = images::MAX_CA_CERT_BYTES;
    let cannot = |e: std::io::Error| format!("cannot read {}: {e}", path.display());
    let file = std::fs::File::open(path).map_err(cannot)?;
    let size = file.metadata().map_err(cannot)?.len();
    if size > limit {
        return Err(format!(
            "{} is {size} bytes, over the {limit}-byte limit of a --ca-cert file",
            path.display()
        ));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > limit {
        return Err(format!(
            "{} holds more than the {limit}-byte limit of a --ca-cert file",
            path.display()
        ));
    }
    String::from_utf8(bytes).map_err(|_| format!("{} is not UTF-8 text", path.display()))
}

/// Writes `text` to stderr; a closed stderr loses it (the exit code still tells).
fn say(text: &str) {
    let _ = std::io::stderr().write_all(text.as_bytes());
}

fn exit(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// Logs go to stderr: warnings and errors in text mode (progress lines say the rest),
/// everything from info up as JSON lines in JSON mode. `AGENT_RUNNER_LOG` sets the level.
fn init_logs(format: LogFormat) {
    let env = code_intel::environment::Environment::of_process();
    let level = match env.var("AGENT_RUNNER_LOG") {
        Some("trace") => tracing::Level::TRACE,
        Some("debug") => tracing::Level::DEBUG,
        Some("info") => tracing::Level::INFO,
        Some("error") => tracing::Level::ERROR,
        Some("warn") => tracing::Level::WARN,
        _ if format == LogFormat::Json => tracing::Level::INFO,
        _ => tracing::Level::WARN,
    };
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_max_level(level);
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

fn image_command() -> ExitCode {
    let args = match ImageArgs::try_parse_from(std::env::args_os().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            let _ = e.print();
            return exit(if e.use_stderr() { app::EXIT_USAGE } else { 0 });
        }
    };
    match args.command {
        ImageCommand::List => {
            let mut out = String::new();
            for image in images::all() {
                out.push_str(&format!(
                    "{:<8} {:<12} {}\n",
                    image.name,
                    image.kind.name(),
                    image.tag()
                ));
            }
            let _ = std::io::stdout().write_all(out.as_bytes());
            exit(0)
        }
        ImageCommand::Build {
            kind,
            tag,
            base_image,
            build_args,
            ca_certs,
            no_cache,
            print,
        } => {
            let Some(image) = images::by_name(&kind) else {
                let known: Vec<&str> = images::all().iter().map(|i| i.name).collect();
                say(&format!(
                    "agent-runner: no worker image for `{kind}`; one of {} (a `command` worker names its own image)\n",
                    known.join(", ")
                ));
                return exit(app::EXIT_USAGE);
            };
            let mut pems = Vec::new();
            for path in &ca_certs {
                match read_ca_cert(path) {
                    Ok(pem) if pem.contains("-----BEGIN CERTIFICATE-----") => pems.push(pem),
                    Ok(_) => {
                        say(&format!(
                            "agent-runner: {} holds no PEM certificate\n",
                            path.display()
                        ));
                        return exit(app::EXIT_USAGE);
                    }
                    Err(e) => {
                        say(&format!("agent-runner: {e}\n"));
                        return exit(app::EXIT_USAGE);
                    }
                }
            }
            let options = images::BuildOptions {
                tag,
                base_image,
                build_args,
                ca_certs: pems,
                no_cache,
            };
            let plan = match images::build_plan(image, &options) {
                Ok(plan) => plan,
                Err(e) => {
                    say(&format!("agent-runner: {e}\n"));
                    return exit(app::EXIT_USAGE);
                }
            };
            for step in &plan {
                let line = format!(
                    "docker {} <<'EOF'\n{}EOF\n",
                    step.args.join(" "),
                    step.dockerfile
                );
                if print {
                    let _ = std::io::stdout().write_all(line.as_bytes());
                    continue;
                }
                say(&format!("agent-runner: building {}\n", step.tag));
                if let Err(e) = docker_build(step) {
                    say(&format!(
                        "agent-runner: could not build {}: {e}\n",
                        step.tag
                    ));
                    return exit(1);
                }
            }
            if !print {
                say(&format!(
                    "agent-runner: built {}; tasks with `kind: {}` use it by default\n",
                    plan.last().map_or("", |s| s.tag.as_str()),
                    image.kind.name()
                ));
            }
            exit(0)
        }
    }
}

/// Runs one `docker build`, its Dockerfile on stdin and its progress on this terminal.
fn docker_build(step: &images::BuildStep) -> Result<(), String> {
    use std::process::{Command, Stdio};
    let mut child = Command::new("docker")
        .args(&step.args)
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|e| format!("docker: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(step.dockerfile.as_bytes())
            .map_err(|e| format!("docker build's stdin: {e}"))?;
    }
    let status = child.wait().map_err(|e| format!("docker: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("docker build {status}"))
    }
}
