//! Where the worker runs: a long-lived Docker container per task, driven through the
//! `docker` CLI ([`DockerSandbox`]), or the host itself with `--unsafe-local`
//! ([`LocalSandbox`]: each command in namespaces of its own that hide the paths asked
//! for, other processes and the command's capabilities; see `confine`).
//!
//! The container is named and labelled so it can be found, and `stop` removes it (the
//! original left every container behind, AR-B9). A timeout or cancel kills the process
//! *inside* the container: killing the `docker exec` client alone leaves it running
//! (AR-B10). Environment values reach `docker exec` through the client's own environment,
//! never its argv (AR-M27).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::cancel::Cancel;
use super::confine::{self, ConfineError, Confinement, HideError};
use super::preflight::find_on_path;
use super::process::{self, Ending, Output, SpawnError, Spec};
use super::sandbox_policy::{CONTAINER_HOME, PolicyError, SandboxPolicy};
use super::worker::{AuthMount, WorkerConfig};
use crate::environment::Environment;

/// The repository's path inside the container.
pub(crate) const CONTAINER_WORKDIR: &str = "/workspace/project";
/// The label every AgentRunner container carries (`docker ps -f label=created-by=agent-runner`).
pub(crate) const CREATED_BY_LABEL: &str = "created-by=agent-runner";

/// The label key of a run's own label (`--run-label`).
pub const RUN_LABEL: &str = "agent-runner.run";
/// How long `docker run -d` and `docker rm -f` may take.
const DOCKER_COMMAND_TIMEOUT: Duration = Duration::from_secs(120);
/// How often a running exec checks its deadline and the cancel token.
const WATCH_POLL: Duration = Duration::from_millis(25);
/// After the in-container kill, how long the `docker exec` client gets to end on its own
/// (and hand over the last output) before it is stopped too.
const CLIENT_WAIT: Duration = Duration::from_secs(3);
/// Characters of a task id kept in a container name.
const NAME_TASK_CHARS: usize = 40;

/// Runs the worker's commands somewhere with the repository as the working directory.
pub trait Sandbox {
    /// Makes the sandbox ready. Calling it again on a running sandbox does nothing.
    fn start(&mut self, cancel: &Cancel) -> Result<(), SandboxError>;
    /// Runs `argv` in the repository with `env` added, `stdin` fed, until it ends, the
    /// `timeout` passes (ending `TimedOut`) or `cancel` fires (ending `Cancelled`); in the
    /// last two cases the command and everything it started are killed.
    fn exec(
        &mut self,
        argv: &[String],
        env: &[(String, String)],
        stdin: Option<Vec<u8>>,
        timeout: Option<Duration>,
        cancel: &Cancel,
    ) -> Result<Output, SandboxError>;
    /// Runs `argv` as [`Sandbox::exec`] does (no variables, no stdin), but in a fresh sandbox
    /// like this one that nothing the worker left outside the repository can reach: not
    /// its processes (this sandbox's are frozen meanwhile), its home, `/tmp` or logins.
    /// The test command runs this way: its verdict must not be the worker's to fake
    /// (a background process, a shim in `$HOME`, a doctored tool in `/tmp`).
    fn exec_fresh(
        &mut self,
        argv: &[String],
        timeout: Option<Duration>,
        cancel: &Cancel,
    ) -> Result<Output, SandboxError>;
    /// Releases everything the sandbox holds. Idempotent; safe after a failed start.
    fn stop(&mut self) -> Result<(), SandboxError>;
    /// The repository's path as the worker sees it.
    fn workdir(&self) -> String;
    /// One line for logs and the Task Note.
    fn describe(&self) -> String;
    /// Where commands run, for "could not run in ...": `the image NAME`, `this machine`.
    /// No default: a wrapper that forgot to forward it would name the wrong place.
    fn environment(&self) -> String;
}

/// A sandbox operation that failed.
#[derive(Debug)]
pub enum SandboxError {
    /// `exec` before `start`, or after `stop`.
    NotRunning { sandbox: String },
    /// `start` after `stop`: a stopped sandbox is not reused.
    Stopped { sandbox: String },
    /// `exec` with an empty argv.
    EmptyCommand,
    /// `runner.sandbox` cannot be applied on this host.
    Policy(PolicyError),
    /// The repository path does not exist, or cannot be mounted (`:` or `,` in it).
    BadRepo { path: PathBuf, reason: String },
    /// The docker CLI (or, locally, the command) could not be started at all.
    Spawn(SpawnError),
    /// A docker command ran and failed.
    Docker {
        action: &'static str,
        command: String,
        ending: Ending,
        stderr: String,
    },
    /// A `--hide` path cannot be hidden.
    Hide(HideError),
    /// `--unsafe-local` cannot confine commands here, so it runs none.
    Confinement(ConfineError),
}

impl SandboxError {
    /// The error's stable key.
    pub fn key(&self) -> &'static str {
        match self {
            SandboxError::Hide(e) => e.key(),
            SandboxError::Confinement(_) => confine::CONFINEMENT_KEY,
            _ => "sandbox.unavailable",
        }
    }
}

impl std::fmt::Display for SandboxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SandboxError::NotRunning { sandbox } => {
                write!(f, "the sandbox {sandbox} is not running (start it first)")
            }
            SandboxError::Stopped { sandbox } => {
                write!(
                    f,
                    "the sandbox {sandbox} was stopped and cannot be started again"
                )
            }
            SandboxError::EmptyCommand => write!(f, "no command to run in the sandbox"),
            SandboxError::Policy(e) => write!(f, "{e}"),
            SandboxError::BadRepo { path, reason } => {
                write!(
                    f,
                    "the repository {} cannot be used: {reason}",
                    path.display()
                )
            }
            SandboxError::Spawn(e) => write!(f, "{e}"),
            SandboxError::Hide(e) => write!(f, "{e}"),
            SandboxError::Confinement(e) => write!(f, "{e}"),
            SandboxError::Docker {
                action,
                command,
                ending,
                stderr,
            } => {
                write!(f, "could not {action}: `{command}` ")?;
                match ending {
                    Ending::Exited(code) => write!(f, "exited with {code}")?,
                    Ending::Signalled(signal) => write!(f, "was killed by signal {signal}")?,
                    Ending::TimedOut => write!(f, "timed out")?,
                    Ending::Cancelled => write!(f, "was cancelled")?,
                }
                let stderr = stderr.trim();
                if !stderr.is_empty() {
                    write!(f, ": {stderr}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for SandboxError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SandboxError::Spawn(e) => Some(e),
            SandboxError::Hide(e) => Some(e),
            SandboxError::Confinement(e) => Some(e),
            _ => None,
        }
    }
}

impl From<SpawnError> for SandboxError {
    fn from(e: SpawnError) -> SandboxError {
        SandboxError::Spawn(e)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    New,
    Running,
    Stopped,
}

/// The absolute, existing repository path.
fn repo_path(repo: &Path) -> Result<PathBuf, SandboxError> {
    let bad = |reason: String| SandboxError::BadRepo {
        path: repo.to_path_buf(),
        reason,
    };
    let path = repo.canonicalize().map_err(|e| bad(e.to_string()))?;
    if !path.is_dir() {
        return Err(bad("not a directory".to_string()));
    }
    Ok(path)
}

/// A docker container name for a task: `agent-runner-<task id>-<random>`, the id cut to
/// docker's alphabet (`[a-zA-Z0-9][a-zA-Z0-9_.-]*`) and a few dozen characters, so two
/// runs of one task never collide (AR-M6) and no id can make it invalid (AR-M29).
pub(crate) fn container_name(task_id: &str) -> String {
    let mut id: String = task_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_.-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .take(NAME_TASK_CHARS)
        .collect();
    if id.trim_matches(['-', '_', '.']).is_empty() {
        id = "task".to_string();
    }
    format!("agent-runner-{id}-{}", unique_suffix())
}

/// Eight hex digits from the OS's random source; the clock and the process id when that
/// fails, which is unique enough for a name.
fn unique_suffix() -> String {
    let mut bytes = [0u8; 4];
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        bytes = (nanos ^ std::process::id().rotate_left(16)).to_be_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// How to build a [`DockerSandbox`].
#[derive(Debug, Clone)]
pub struct DockerOptions {
    /// The docker CLI: `docker`, or a path (tests put a fake one here).
    pub program: String,
    pub task_id: String,
    /// Labels the containers `agent-runner.run=VALUE` too, when the caller gave one
    /// (`--run-label`): task ids repeat across workspaces, so a caller that must find or
    /// remove exactly this run's containers asks by this label.
    pub run_label: Option<String>,
    /// The repository on the host, mounted read-write at [`CONTAINER_WORKDIR`].
    pub repo: PathBuf,
    pub image: String,
    /// Logins mounted read-only; only the chosen worker's (AR-M28).
    pub mounts: Vec<AuthMount>,
    /// Between TERM and KILL when a command must be stopped.
    pub grace: Duration,
    /// Limits, network and user of the container.
    pub policy: SandboxPolicy,
    /// The environment the docker CLI runs in, and nothing else: where the daemon is
    /// (`DOCKER_HOST`, `DOCKER_CONTEXT`, the config under `HOME`), `PATH`, and the values
    /// of the variables a task forwards by name (AR-M27). The binary gives its own.
    pub env: Environment,
}

impl DockerOptions {
    /// The options for a task's worker: its image and its login mounts, found under
    /// `home` and through `host_env`, under `policy`, with the docker CLI run in `env`.
    pub fn for_worker(
        config: &WorkerConfig,
        task_id: &str,
        repo: &Path,
        home: Option<&Path>,
        host_env: &dyn Fn(&str) -> Option<String>,
        policy: SandboxPolicy,
        env: Environment,
    ) -> DockerOptions {
        DockerOptions {
            program: "docker".to_string(),
            task_id: task_id.to_string(),
            run_label: None,
            repo: repo.to_path_buf(),
            image: super::images::image_of(config),
            mounts: config.find_auth(home, host_env).mounts,
            grace: Duration::from_secs(5),
            policy,
            env,
        }
    }
}

/// A long-lived container per task, driven through the docker CLI.
#[derive(Debug)]
pub struct DockerSandbox {
    options: DockerOptions,
    repo: PathBuf,
    name: String,
    state: State,
    /// `docker run` was tried, so a container may exist and `stop` must remove it.
    created: bool,
    /// Numbers the pid files of execs.
    execs: u64,
}

/// Runs the command, recording the wrapper's pid (`$$`, the root of what the command
/// starts) in a file inside the container so a timeout can kill that tree there.
/// Arguments: the pid file, then the command.
/// A wrapper that cannot record its pid refuses to run the command (exit 126): a command
/// nobody could stop must not start.
const EXEC_WRAPPER: &str = r#"f=$1; shift
echo $$ > "$f" || { echo "agent-runner: cannot write $f; not running the command" >&2; exit 126; }
"$@"
s=$?
rm -f "$f"
echo $s > "$f.exit"
exit $s"#;

/// Kills the process tree whose root is in the pid file `$1`: stops it (so it cannot
/// fork away), sends TERM, waits up to `$2` seconds, then KILLs what is left. Exits 3
/// when the pid file is gone but the command did not finish (the runner then kills the
/// whole container: failing closed). The tree is
/// read from `/proc` (PPid), which every Linux container has; no `ps`, `pkill` or
/// `setsid` is needed in the image.
const KILL_SCRIPT: &str = r#"f=$1; g=$2
i=0
while [ ! -s "$f" ] && [ $i -lt 20 ]; do sleep 0.1 2>/dev/null || sleep 1; i=$((i+1)); done
if [ ! -s "$f" ]; then
  # Finished on its own just now, or the pid file was removed (an agent that cleaned
  # /tmp): then what it started cannot be found, and the runner stops the container.
  [ -e "$f.exit" ] && exit 0
  exit 3
fi
root=$(cat "$f")
rm -f "$f"
collect() {
  all=
  for d in /proc/[0-9]*; do
    pp=
    { while read -r k v rest; do if [ "$k" = PPid: ]; then pp=$v; break; fi; done < "$d/status"; } 2>/dev/null
    [ -n "$pp" ] && all="$all ${d#/proc/}:$pp"
  done
  tree=$root; frontier=$root
  while [ -n "$frontier" ]; do
    next=
    for e in $all; do
      for q in $frontier; do
        if [ "${e#*:}" = "$q" ]; then
          case " $tree $next " in *" ${e%%:*} "*) ;; *) next="$next ${e%%:*}";; esac
        fi
      done
    done
    tree="$tree$next"; frontier=$next
  done
}
alive() {
  [ -r "/proc/$1/status" ] || return 1
  { while read -r k v rest; do if [ "$k" = State: ]; then [ "$v" != Z ]; return; fi; done < "/proc/$1/status"; } 2>/dev/null
  return 1
}
collect; pids=$tree
kill -STOP $pids 2>/dev/null
collect
for p in $tree; do case " $pids " in *" $p "*) ;; *) pids="$pids $p";; esac; done
kill -STOP $pids 2>/dev/null
kill -TERM $pids 2>/dev/null
kill -CONT $pids 2>/dev/null
i=0
while [ $i -lt $((g*10)) ]; do
  left=
  for p in $pids; do alive "$p" && left=1; done
  [ -z "$left" ] && exit 0
  sleep 0.1 2>/dev/null || sleep 1
  i=$((i+1))
done
kill -KILL $pids 2>/dev/null
exit 0"#;

impl DockerSandbox {
    pub fn new(mut options: DockerOptions) -> Result<DockerSandbox, SandboxError> {
        let repo = repo_path(&options.repo)?;
        // Found once on the host's PATH: a worker `env` that sets PATH is handed to the
        // docker client's environment (AR-M27) and must not change which docker runs.
        let search = crate::environment::program_path();
        let search = search.as_deref().and_then(std::ffi::OsStr::to_str);
        if let Some(path) = find_on_path(&options.program, search) {
            options.program = path.display().to_string();
        }
        for path in std::iter::once(&repo).chain(options.mounts.iter().map(|m| &m.host)) {
            // `-v` splits on ':'; refusing here beats a confusing docker error later.
            if path.to_string_lossy().contains(':') {
                return Err(SandboxError::BadRepo {
                    path: path.clone(),
                    reason: "a path with ':' cannot be bind-mounted with docker -v".to_string(),
                });
            }
        }
        Ok(DockerSandbox {
            name: container_name(&options.task_id),
            options,
            repo,
            state: State::New,
            created: false,
            execs: 0,
        })
    }

    /// The container's name (unique per sandbox).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs one docker CLI command to its end, its timeout or `cancel` (the finalizer
    /// passes a fresh token: it must run even after the task was cancelled).
    fn docker(
        &self,
        action: &'static str,
        args: Vec<String>,
        cancel: &Cancel,
    ) -> Result<Output, SandboxError> {
        let mut spec = Spec::new(self.options.program.clone(), args);
        spec.base_env = Some(self.options.env.clone());
        spec.timeout = Some(DOCKER_COMMAND_TIMEOUT);
        spec.grace = Duration::from_secs(2);
        let out = process::run(&spec, cancel)?;
        if !out.ending.success() {
            return Err(SandboxError::Docker {
                action,
                command: spec.display(),
                ending: out.ending,
                stderr: out.stderr.tail_text(2000),
            });
        }
        Ok(out)
    }

    /// Kills, inside the container, the tree recorded in `pid_file`.
    fn kill_inside(&self, pid_file: &str) {
        let grace = self.options.grace.as_secs().max(1).to_string();
        let args = [
            "exec",
            self.name.as_str(),
            "sh",
            "-c",
            KILL_SCRIPT,
            "agent-runner-kill",
            pid_file,
            grace.as_str(),
        ];
        let mut spec = Spec::new(self.options.program.clone(), args);
        spec.base_env = Some(self.options.env.clone());
        spec.timeout = Some(self.options.grace + Duration::from_secs(30));
        match process::run(&spec, &Cancel::new()) {
            Ok(out) if out.ending.success() => {
                tracing::info!(container = %self.name, "killed the command inside the container");
            }
            Ok(out) => {
                tracing::warn!(
                    container = %self.name,
                    ending = ?out.ending,
                    stderr = %out.stderr.tail_text(500),
                    "the in-container kill could not find the command; stopping the container"
                );
                self.kill_container();
            }
            Err(e) => {
                tracing::warn!(container = %self.name, error = %e, "could not run the in-container kill; stopping the container");
                self.kill_container();
            }
        }
    }

    /// Fails closed when the command inside could not be stopped on its own: the whole
    /// container is killed (later execs in this task then fail, and say so), and `stop`
    /// still removes it.
    fn kill_container(&self) {
        let mut spec = Spec::new(self.options.program.clone(), ["kill", self.name.as_str()]);
        spec.base_env = Some(self.options.env.clone());
        spec.timeout = Some(DOCKER_COMMAND_TIMEOUT);
        match process::run(&spec, &Cancel::new()) {
            Ok(out) if out.ending.success() => {
                tracing::warn!(container = %self.name, "killed the container");
            }
            Ok(out) => tracing::error!(
                container = %self.name,
                stderr = %out.stderr.tail_text(500),
                "could not kill the container"
            ),
            Err(e) => {
                tracing::error!(container = %self.name, error = %e, "could not kill the container")
            }
        }
    }
}

impl DockerSandbox {
    /// Freezes (`docker pause`) or thaws the container's processes. A container that is no
    /// longer running (killed after a failed in-container kill) has nothing to freeze.
    fn set_frozen(&self, frozen: bool, cancel: &Cancel) -> Result<(), SandboxError> {
        let (verb, action) = if frozen {
            ("pause", "freeze the worker's container")
        } else {
            ("unpause", "thaw the worker's container")
        };
        match self.docker(action, vec![verb.to_string(), self.name.clone()], cancel) {
            Ok(_) => Ok(()),
            Err(SandboxError::Docker { stderr, .. })
                if stderr.to_ascii_lowercase().contains("is not running") =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// The run user's home: `HOME`, a tmpfs it owns at [`CONTAINER_HOME`], and one for each
    /// directory between it and a login file mounted inside it, so the CLI can write its
    /// state beside the read-only login (a bind mount's missing parents would be root's).
    /// Git is told the mounted repository is safe whoever owns it (git refuses a repository
    /// owned by another user, which the repository is when the worker runs as root).
    fn home_args(&self) -> Vec<String> {
        let (uid, gid) = self.options.policy.ids();
        let tmpfs = |dir: &str| format!("{dir}:rw,exec,nosuid,uid={uid},gid={gid},mode=0700");
        let mut dirs = vec![CONTAINER_HOME.to_string()];
        for mount in &self.options.mounts {
            let Some(rest) = mount.container.strip_prefix(&format!("{CONTAINER_HOME}/")) else {
                continue;
            };
            let mut dir = CONTAINER_HOME.to_string();
            let parts: Vec<&str> = rest.split('/').collect();
            for part in &parts[..parts.len().saturating_sub(1)] {
                dir = format!("{dir}/{part}");
                if !dirs.contains(&dir) {
                    dirs.push(dir.clone());
                }
            }
        }
        // IS_SANDBOX tells the agent CLIs they are in one: Claude Code refuses
        // `--dangerously-skip-permissions` to root otherwise (a task that asks for
        // `user: root`, or a runner started by root).
        let mut args = vec![
            "-e".to_string(),
            format!("HOME={CONTAINER_HOME}"),
            "-e".into(),
            "IS_SANDBOX=1".into(),
        ];
        for dir in dirs {
            args.push("--tmpfs".into());
            args.push(tmpfs(&dir));
        }
        args.extend(
            [
                "-e",
                "GIT_CONFIG_COUNT=1",
                "-e",
                "GIT_CONFIG_KEY_0=safe.directory",
                "-e",
            ]
            .map(String::from),
        );
        args.push(format!("GIT_CONFIG_VALUE_0={CONTAINER_WORKDIR}"));
        args
    }

    /// Gives the run user a name in the image's `/etc/passwd` when it has none: tools
    /// that ask who they are (`whoami`, Node's `os.userInfo()`, ssh, git's identity
    /// fallback) fail for a uid without one. Best effort: an image whose `/etc/passwd`
    /// cannot be written still runs.
    fn add_user_entry(&self, cancel: &Cancel) {
        let (uid, gid) = self.options.policy.ids();
        if uid == 0 {
            return;
        }
        let script = format!(
            "grep -q '^[^:]*:[^:]*:{uid}:' /etc/passwd 2>/dev/null ||\n\
             echo 'agent:x:{uid}:{gid}:agent-runner worker:{CONTAINER_HOME}:/bin/sh' >> /etc/passwd"
        );
        let args = vec![
            "exec".to_string(),
            "-u".into(),
            "0".into(),
            self.name.clone(),
            "sh".into(),
            "-c".into(),
            script,
        ];
        if let Err(e) = self.docker("name the run user in /etc/passwd", args, cancel) {
            tracing::warn!(container = %self.name, error = %e, "the worker's uid has no name in the image");
        }
    }
}

impl Sandbox for DockerSandbox {
    fn start(&mut self, cancel: &Cancel) -> Result<(), SandboxError> {
        match self.state {
            State::Running => return Ok(()),
            State::Stopped => {
                return Err(SandboxError::Stopped {
                    sandbox: self.describe(),
                });
            }
            State::New => {}
        }
        if cancel.is_cancelled() {
            return Err(SandboxError::Docker {
                action: "start the container",
                command: "docker run".to_string(),
                ending: Ending::Cancelled,
                stderr: String::new(),
            });
        }
        let task: String = self
            .options
            .task_id
            .chars()
            .filter(|c| !c.is_control())
            .collect();
        let mut args: Vec<String> = [
            "run",
            "-d",
            // tini as PID 1 reaps what the worker leaves behind (the kill checks for zombies).
            "--init",
            // Preflight checked the image is here; a task never downloads one behind the
            // user's back.
            "--pull=never",
            "--name",
            &self.name,
            "--label",
            CREATED_BY_LABEL,
            "--label",
            &format!("agent-runner.task={task}"),
            "-v",
            &format!("{}:{CONTAINER_WORKDIR}", self.repo.display()),
            "-w",
            CONTAINER_WORKDIR,
        ]
        .iter()
        .map(|s| (*s).to_string())
        .collect();
        if let Some(label) = &self.options.run_label {
            let label: String = label.chars().filter(|c| !c.is_control()).collect();
            args.extend(["--label".to_string(), format!("{RUN_LABEL}={label}")]);
        }
        args.extend(self.options.policy.docker_run_args());
        args.extend(self.home_args());
        for mount in &self.options.mounts {
            args.push("-v".to_string());
            args.push(format!("{}:{}:ro", mount.host.display(), mount.container));
        }
        args.extend([
            self.options.image.clone(),
            "sleep".into(),
            "infinity".into(),
        ]);
        // From here on a container may exist, so `stop` must remove it (AR-B8), and so must
        // an exit that skips the finalizers (a second signal).
        self.created = true;
        super::cleanup::track_container(&self.options.program, &self.name);
        self.docker("start the container", args, cancel)?;
        self.state = State::Running;
        self.add_user_entry(cancel);
        tracing::info!(
            container = %self.name,
            image = %self.options.image,
            policy = %self.options.policy.describe(),
            "started the sandbox container"
        );
        Ok(())
    }

    fn exec(
        &mut self,
        argv: &[String],
        env: &[(String, String)],
        stdin: Option<Vec<u8>>,
        timeout: Option<Duration>,
        cancel: &Cancel,
    ) -> Result<Output, SandboxError> {
        if argv.is_empty() {
            return Err(SandboxError::EmptyCommand);
        }
        if self.state != State::Running {
            return Err(SandboxError::NotRunning {
                sandbox: self.describe(),
            });
        }
        self.execs += 1;
        let pid_file = format!("/tmp/agent-runner-{}-{}.pid", self.name, self.execs);
        let mut args = vec!["exec".to_string()];
        if stdin.is_some() {
            args.push("-i".to_string());
        }
        for (key, _) in env {
            // `-e KEY` makes the client take the value from its own environment (AR-M27).
            args.push("-e".to_string());
            args.push(key.clone());
        }
        args.extend([
            self.name.clone(),
            "sh".into(),
            "-c".into(),
            EXEC_WRAPPER.into(),
            "agent-runner-exec".into(),
            pid_file.clone(),
        ]);
        args.extend(argv.iter().cloned());
        let mut spec = Spec::new(self.options.program.clone(), args);
        spec.base_env = Some(self.options.env.clone());
        spec.env = env.to_vec();
        spec.stdin = stdin;
        // The deadline and the cancel are watched here, not by `process::run`: they must
        // kill the command inside the container first (AR-B10).
        spec.timeout = None;
        spec.grace = Duration::from_secs(2);

        let this = &*self;
        let done = Cancel::new();
        let client = Cancel::new();
        let started = Instant::now();
        let (result, stopped_by_us) = std::thread::scope(|scope| {
            let watcher = scope.spawn(|| {
                let deadline = timeout.map(|t| started + t);
                loop {
                    if done.is_cancelled() {
                        return None;
                    }
                    if let Some(reason) = process::stop_reason(cancel, deadline) {
                        tracing::info!(container = %this.name, ?reason, "stopping the command inside the container");
                        this.kill_inside(&pid_file);
                        if !done.sleep(CLIENT_WAIT) {
                            client.cancel();
                        }
                        return Some(reason);
                    }
                    done.sleep(WATCH_POLL);
                }
            });
            let result = process::run(&spec, &client);
            done.cancel();
            let stopped = watcher.join().unwrap_or(None);
            (result, stopped)
        });
        let mut output = result?;
        if let Some(reason) = stopped_by_us {
            output.ending = reason;
        }
        output.duration = started.elapsed();
        Ok(output)
    }

    fn exec_fresh(
        &mut self,
        argv: &[String],
        timeout: Option<Duration>,
        cancel: &Cancel,
    ) -> Result<Output, SandboxError> {
        if self.state != State::Running {
            return Err(SandboxError::NotRunning {
                sandbox: self.describe(),
            });
        }
        // Same image, policy and repository; no logins (a test needs none) and a new
        // name, so a new home and /tmp.
        let mut options = self.options.clone();
        options.mounts.clear();
        let mut fresh = DockerSandbox::new(options)?;
        // Frozen first: a worker's background process must not change the repository
        // while the tests read it. Fails closed: tests do not run beside a live worker.
        self.set_frozen(true, cancel)?;
        let result = fresh
            .start(cancel)
            .and_then(|()| fresh.exec(argv, &[], None, timeout, cancel));
        let removed = fresh.stop();
        // Thawed whatever happened (with a token of its own: even after a cancel), so the
        // next worker run and the finalizers find the container as it was.
        let thawed = self.set_frozen(false, &Cancel::new());
        let output = result?;
        removed?;
        thawed?;
        Ok(output)
    }

    fn stop(&mut self) -> Result<(), SandboxError> {
        self.state = State::Stopped;
        if !self.created {
            return Ok(());
        }
        let args = vec!["rm".to_string(), "-f".to_string(), self.name.clone()];
        match self.docker("remove the container", args, &Cancel::new()) {
            Ok(_) => {}
            // Already gone (or never created by a failed run): nothing left to release.
            Err(SandboxError::Docker { stderr, .. })
                if stderr.to_ascii_lowercase().contains("no such container") => {}
            Err(e) => return Err(e),
        }
        self.created = false;
        super::cleanup::untrack_container(&self.name);
        tracing::info!(container = %self.name, "removed the sandbox container");
        Ok(())
    }

    fn workdir(&self) -> String {
        CONTAINER_WORKDIR.to_string()
    }

    fn environment(&self) -> String {
        format!("the image {}", self.options.image)
    }

    fn describe(&self) -> String {
        format!(
            "docker container {} (image {}, {} mounted at {CONTAINER_WORKDIR})",
            self.name,
            self.options.image,
            self.repo.display()
        )
    }
}

impl Drop for DockerSandbox {
    /// A sandbox dropped without `stop` (an early return, a panic) still removes its
    /// container.
    fn drop(&mut self) {
        if self.created
            && let Err(e) = self.stop()
        {
            tracing::warn!(container = %self.name, error = %e, "could not remove the sandbox container");
        }
    }
}

/// `--unsafe-local`: commands run on the host, in the repository, each in mount and PID
/// namespaces of its own, without capabilities, with the hidden paths covered
/// ([`Confinement`]); when that cannot be done, nothing runs.
#[derive(Debug)]
pub struct LocalSandbox {
    repo: PathBuf,
    state: State,
    grace: Duration,
    confinement: Arc<Confinement>,
}

impl LocalSandbox {
    /// A sandbox in `repo` that hides nothing but other processes.
    pub fn new(repo: &Path) -> Result<LocalSandbox, SandboxError> {
        Ok(LocalSandbox {
            repo: repo_path(repo)?,
            state: State::New,
            grace: Duration::from_secs(5),
            confinement: Arc::new(Confinement::default()),
        })
    }

    /// Hides `paths` (absolute, existing directories or files, neither holding the
    /// repository nor inside it) from every command.
    pub fn hiding(mut self, paths: &[PathBuf]) -> Result<LocalSandbox, SandboxError> {
        let hidden = confine::hidden_paths(paths, &self.repo).map_err(SandboxError::Hide)?;
        self.confinement = Arc::new(Confinement::new(hidden));
        Ok(self)
    }

    /// Between TERM and KILL when a command must be stopped.
    pub fn with_grace(mut self, grace: Duration) -> LocalSandbox {
        self.grace = grace;
        self
    }

    /// The confinement, shared with the preflight, which checks it first.
    pub fn confinement(&self) -> Arc<Confinement> {
        Arc::clone(&self.confinement)
    }
}

impl Sandbox for LocalSandbox {
    fn start(&mut self, cancel: &Cancel) -> Result<(), SandboxError> {
        match self.state {
            State::Stopped => Err(SandboxError::Stopped {
                sandbox: self.describe(),
            }),
            State::Running => Ok(()),
            State::New => {
                // Said once by the preflight; checked here too, as nothing runs unconfined.
                self.confinement
                    .settle(cancel)
                    .map_err(SandboxError::Confinement)?;
                self.state = State::Running;
                tracing::warn!(repo = %self.repo.display(), confinement = %self.confinement.describe(), "the worker runs on the host (--unsafe-local)");
                Ok(())
            }
        }
    }

    fn exec(
        &mut self,
        argv: &[String],
        env: &[(String, String)],
        stdin: Option<Vec<u8>>,
        timeout: Option<Duration>,
        cancel: &Cancel,
    ) -> Result<Output, SandboxError> {
        let Some((program, args)) = argv.split_first() else {
            return Err(SandboxError::EmptyCommand);
        };
        if self.state != State::Running {
            return Err(SandboxError::NotRunning {
                sandbox: self.describe(),
            });
        }
        let mut spec = Spec::new(program.clone(), args.iter().cloned());
        spec.env = env.to_vec();
        spec.cwd = Some(self.repo.clone());
        spec.stdin = stdin;
        spec.timeout = timeout;
        spec.grace = self.grace;
        // A program that cannot start is said as such, not as the wrapper's exit.
        confine::check_program(&spec)?;
        let confined = self
            .confinement
            .wrap(&spec, cancel)
            .map_err(SandboxError::Confinement)?;
        let output = process::run(&confined, cancel)?;
        if let Some(e) = confine::setup_failure(&output) {
            return Err(SandboxError::Confinement(e));
        }
        if let Some(e) = confine::exec_failure(&spec, &output) {
            return Err(SandboxError::Spawn(e));
        }
        Ok(output)
    }

    /// Every command runs in namespaces of its own, so the test command does not see the
    /// worker's processes (they ended with its run); its home and `/tmp` are the same
    /// directories on this machine, which only Docker keeps apart.
    fn exec_fresh(
        &mut self,
        argv: &[String],
        timeout: Option<Duration>,
        cancel: &Cancel,
    ) -> Result<Output, SandboxError> {
        self.exec(argv, &[], None, timeout, cancel)
    }

    fn stop(&mut self) -> Result<(), SandboxError> {
        if self.state != State::Stopped {
            tracing::info!(repo = %self.repo.display(), "local sandbox stopped");
        }
        self.state = State::Stopped;
        Ok(())
    }

    fn workdir(&self) -> String {
        self.repo.display().to_string()
    }

    fn describe(&self) -> String {
        format!(
            "the host, in {} ({})",
            self.repo.display(),
            self.confinement.describe()
        )
    }

    fn environment(&self) -> String {
        "this machine".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_names_are_valid_unique_and_never_panic() {
        let valid = |name: &str| {
            name.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric())
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
        };
        for id in [
            "",
            "a",
            "task 1/β",
            "日本語のタスク",
            "-",
            &"x".repeat(500),
            "\0\n",
        ] {
            let a = container_name(id);
            let b = container_name(id);
            assert!(valid(&a), "{a}");
            assert_ne!(a, b);
            assert!(a.len() <= "agent-runner--".len() + NAME_TASK_CHARS + 8);
        }
        assert!(container_name("TASK-1.a_b").starts_with("agent-runner-TASK-1.a_b-"));
        assert!(container_name("").starts_with("agent-runner-task-"));
    }

    #[test]
    fn local_exec_needs_a_start_and_stop_is_idempotent() {
        let mut sandbox = LocalSandbox::new(&std::env::temp_dir()).unwrap();
        let argv = vec!["true".to_string()];
        let cancel = Cancel::new();
        assert!(matches!(
            sandbox.exec(&argv, &[], None, None, &cancel),
            Err(SandboxError::NotRunning { .. })
        ));
        sandbox.start(&cancel).unwrap();
        sandbox.start(&cancel).unwrap();
        let out = sandbox.exec(&argv, &[], None, None, &cancel).unwrap();
        assert_eq!(out.ending, Ending::Exited(0));
        assert!(matches!(
            sandbox.exec(&[], &[], None, None, &cancel),
            Err(SandboxError::EmptyCommand)
        ));
        sandbox.stop().unwrap();
        sandbox.stop().unwrap();
        assert!(sandbox.start(&cancel).is_err());
    }

    #[test]
    fn a_missing_repo_is_an_error_naming_it() {
        let err = LocalSandbox::new(Path::new("/no/such/repo-here")).unwrap_err();
        assert!(err.to_string().contains("/no/such/repo-here"), "{err}");
    }
}
