//! Checks run before a task spends anything on the planner (the original checked after
//! `plan_task`, AR-M7): Docker answers, the worker image is present locally (never pulled
//! silently), the worker CLI's login exists, and in local mode the CLI is on `PATH` and
//! commands can be confined (`confine`: nothing runs unconfined).
//!
//! Every check is reported, passed or not, so the Task Note can show the whole picture.
//! The host environment (HOME, PATH, API keys) comes in through a lookup function so
//! tests need not touch the process environment.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::cancel::Cancel;
use super::confine::{CONFINEMENT_KEY, Confinement};
use super::images;
use super::process::{self, Spec};
// Callers find it here; it lives beside the spawn whose `PATH` search it mirrors.
pub(crate) use super::process::find_on_path;
use super::worker::{WorkerConfig, WorkerKind};
use crate::environment::Environment;

/// How long `docker version` and `docker image inspect` may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the worker will run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// In a container, through this docker CLI (`docker` or a path), run in `env` (see
    /// `DockerOptions::env`).
    Docker { program: String, env: Environment },
    /// On the host (`--unsafe-local`), hiding nothing but other processes: the checks
    /// try a confinement of their own.
    Local,
    /// On the host (`--unsafe-local`) under this confinement, the sandbox's own, which the
    /// checks settle for it.
    Confined(Arc<Confinement>),
}

/// One check and what it found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    pub name: String,
    pub ok: bool,
    pub detail: String,
}

/// Every check, in the order run.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct PreflightReport {
    pub checks: Vec<Check>,
}

impl PreflightReport {
    pub fn ok(&self) -> bool {
        self.checks.iter().all(|c| c.ok)
    }

    pub fn failures(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| !c.ok)
    }

    fn push(&mut self, name: &str, ok: bool, detail: String) {
        self.checks.push(Check {
            name: name.to_string(),
            ok,
            detail,
        });
    }
}

impl std::fmt::Display for PreflightReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for check in &self.checks {
            let mark = if check.ok { "ok" } else { "FAILED" };
            writeln!(f, "{mark:>6}  {}: {}", check.name, check.detail)?;
        }
        Ok(())
    }
}

/// Runs the checks for `config` on `target`. HOME, PATH and API-key variables are read
/// through `host_env`.
pub fn preflight(
    config: &WorkerConfig,
    target: &Target,
    host_env: &dyn Fn(&str) -> Option<String>,
    cancel: &Cancel,
) -> PreflightReport {
    let mut report = PreflightReport::default();
    if let Err(e) = config.validate() {
        report.push("worker config", false, e.to_string());
    }
    match target {
        Target::Docker { program, env } => {
            docker_checks(config, program, env, cancel, &mut report);
        }
        Target::Local | Target::Confined(_) => {
            let own = Arc::new(Confinement::default());
            let confinement = match target {
                Target::Confined(confinement) => confinement,
                _ => &own,
            };
            // Nothing runs unconfined: said here, once, before anything is spent.
            match confinement.settle(cancel) {
                Ok(()) => report.push("confinement", true, confinement.describe()),
                Err(e) => report.push("confinement", false, format!("{e} [{CONFINEMENT_KEY}]")),
            }
            let cli = config.program();
            let found = if cli.contains('/') {
                let path = PathBuf::from(&cli);
                path.is_file().then_some(path)
            } else {
                find_on_path(&cli, host_env("PATH").as_deref())
            };
            match found {
                Some(path) => {
                    report.push("worker CLI", true, format!("{cli} is {}", path.display()))
                }
                None => report.push(
                    "worker CLI",
                    false,
                    format!(
                        "{}; install the {} CLI or run in Docker",
                        process::not_found(&cli, None),
                        config.kind.name()
                    ),
                ),
            }
        }
    }
    if config.kind == WorkerKind::Command {
        // A command worker brings its own login, if it needs one (`env`, its image).
        return report;
    }
    let home = host_env("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let auth = config.find_auth(home.as_deref(), host_env);
    let detail = if !auth.mounts.is_empty() || !auth.env_vars.is_empty() {
        let mut found: Vec<String> = auth
            .mounts
            .iter()
            .map(|m| {
                format!(
                    "{} (mounted read-only at {})",
                    m.host.display(),
                    m.container
                )
            })
            .collect();
        found.extend(auth.env_vars.iter().map(|v| format!("${v}")));
        format!("{} login: {}", config.kind.name(), found.join(", "))
    } else if let Some(caveat) = &auth.caveat {
        caveat.clone()
    } else {
        format!(
            "no {} login found; looked at {}; log in with `{}` on the host or set one of the variables",
            config.kind.name(),
            auth.searched.join(", "),
            config.kind.program()
        )
    };
    report.push("worker login", auth.found(), detail);
    report
}

fn docker_checks(
    config: &WorkerConfig,
    program: &str,
    env: &Environment,
    cancel: &Cancel,
    report: &mut PreflightReport,
) {
    let run = |args: &[&str]| {
        let mut spec = Spec::new(program, args.iter().copied());
        spec.base_env = Some(env.clone());
        spec.timeout = Some(CHECK_TIMEOUT);
        spec.grace = Duration::from_secs(1);
        process::run(&spec, cancel)
    };
    let docker_ok = match run(&["version", "--format", "{{.Server.Version}}"]) {
        Ok(out) if out.ending.success() => {
            let version = out.stdout.text().trim().to_string();
            report.push("docker", true, format!("Docker server {version}"));
            true
        }
        Ok(out) => {
            let why = first_line(&out.stderr.text())
                .unwrap_or_else(|| format!("exit {}", out.ending.code()));
            report.push(
                "docker",
                false,
                format!("`{program} version` failed: {why}; start the Docker daemon, or run with --unsafe-local"),
            );
            false
        }
        Err(e) => {
            report.push(
                "docker",
                false,
                format!("{e}; install Docker, or run with --unsafe-local"),
            );
            false
        }
    };
    let image = images::image_of(config);
    if !docker_ok {
        report.push(
            "image",
            false,
            format!("{image} not checked: Docker is not available"),
        );
        return;
    }
    let present = run(&["image", "inspect", "--format", "{{.Id}}", &image])
        .is_ok_and(|out| out.ending.success());
    if !present {
        let how = match images::for_kind(config.kind).filter(|i| i.tag() == image) {
            Some(own) => format!(
                "build it with `agent-runner image build {}` (where a registry is reachable)",
                own.name
            ),
            // A kind with no Dockerfile here (Cursor's CLI installs with its own script):
            // nobody publishes its default tag, so say what the image needs instead.
            None if config.docker_image.is_none() && config.kind != WorkerKind::Command => format!(
                "no image is built in for {}: make one that has `{}` on PATH and name it in `runner.worker.docker_image`",
                config.kind.name(),
                config.kind.program()
            ),
            None => format!("run `docker pull {image}` or build it"),
        };
        report.push(
            "image",
            false,
            format!(
                "{image} is not present locally; {how}. AgentRunner never pulls an image itself; the image must contain the `{}` CLI",
                config.program()
            ),
        );
        return;
    }
    report.push("image", true, format!("{image} is present locally"));
    cli_in_image(config, &image, &run, report);
}

/// The worker's CLI is in the image: `command -v` in a throwaway container of it, so a
/// task whose image lacks the CLI stops here instead of failing every worker run with 127.
fn cli_in_image(
    config: &WorkerConfig,
    image: &str,
    run: &dyn Fn(&[&str]) -> Result<process::Output, process::SpawnError>,
    report: &mut PreflightReport,
) {
    let program = config.program();
    if program.is_empty() || (program.contains('/') && !program.starts_with('/')) {
        // A relative path is resolved in the repository at run time: nothing to check yet.
        return;
    }
    let script = "command -v \"$1\" || { echo \"not found\" >&2; exit 127; }";
    let args = [
        "run",
        "--rm",
        "--pull=never",
        "--network",
        "none",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--entrypoint",
        "sh",
        image,
        "-c",
        script,
        "agent-runner-preflight",
        &program,
    ];
    match run(&args) {
        Ok(out) if out.ending.success() => {
            let found = first_line(&out.stdout.text()).unwrap_or_else(|| program.clone());
            report.push(
                "worker CLI",
                true,
                format!("`{program}` is {found} in {image}"),
            );
        }
        Ok(out) if out.ending == process::Ending::Exited(127) => report.push(
            "worker CLI",
            false,
            format!(
                "`{program}` is not in the image {image}; use an image that has it{}",
                images::for_kind(config.kind)
                    .map(|own| format!(" (`agent-runner image build {}` makes one)", own.name))
                    .unwrap_or_default()
            ),
        ),
        Ok(out) => report.push(
            "worker CLI",
            false,
            format!(
                "could not look for `{program}` in {image}: {}",
                first_line(&out.stderr.text())
                    .unwrap_or_else(|| format!("exit {}", out.ending.code()))
            ),
        ),
        Err(e) => report.push(
            "worker CLI",
            false,
            format!("could not look for `{program}` in {image}: {e}"),
        ),
    }
}

fn first_line(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_on_path_skips_non_executables() {
        assert!(find_on_path("sh", Some("/no/such/dir:/bin:/usr/bin")).is_some());
        assert!(find_on_path("sh", None).is_none());
        assert!(find_on_path("no-such-program-zz", Some("/bin")).is_none());
    }

    #[test]
    fn the_report_lists_every_check() {
        let mut report = PreflightReport::default();
        report.push("a", true, "fine".into());
        report.push("b", false, "broken".into());
        assert!(!report.ok());
        assert_eq!(report.failures().count(), 1);
        assert_eq!(report.to_string(), "    ok  a: fine\nFAILED  b: broken\n");
    }
}
