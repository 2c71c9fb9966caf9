//! Opening another workspace from the IDE's picker (`POST /api/workspaces/open`): the
//! path names a workspace, or a project whose workspace is found (the recent list, then
//! its default place) or else created with this workspace's settings; its daemon is
//! started unless one runs; the answer is where its IDE is. Nothing is deleted or moved.
//!
//! A token holder chooses the path, so the picker opens only what a workspace can be:
//! a project must be a git repository, and neither a system directory, nor a place
//! inside a workspace (its `runs/`, its journal), nor a directory holding a workspace; a
//! new workspace never inherits `--unsafe-local` (its workers run in Docker until the
//! owner says otherwise); and one daemon starts at most [`MAX_STARTED`] others.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::api::{DaemonInfo, OpenedWorkspace, Opener, daemon};
use super::app::{self, InitOptions};
use super::recent;

/// How long a started daemon may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// The most daemons one daemon's picker starts.
pub(crate) const MAX_STARTED: usize = 8;
/// Directories of the system that are never a project or a workspace.
const SYSTEM_DIRS: [&str; 12] = [
    "/", "/proc", "/sys", "/dev", "/etc", "/boot", "/usr", "/bin", "/sbin", "/lib", "/lib64",
    "/run",
];

/// Why a workspace could not be opened. `key()` is stable.
#[derive(Debug)]
pub enum OpenError {
    /// Not an absolute path.
    NotAbsolute(PathBuf),
    /// Nothing there.
    NotFound(PathBuf),
    /// A new workspace would be needed but there is no home to place it in.
    NoHome,
    /// Creating the project's workspace failed.
    Init(String),
    /// Its daemon did not start.
    Start { dir: PathBuf, detail: String },
    /// A project that is not in a git repository.
    NotARepository(PathBuf),
    /// A system directory, a place inside a workspace, or a directory holding one.
    Refused { path: PathBuf, why: &'static str },
    /// This daemon has started [`MAX_STARTED`] others already.
    TooManyDaemons,
    /// The caller's user could not read the daemon's `daemon.json` (or is not known).
    NotYours(PathBuf),
}

impl OpenError {
    pub fn key(&self) -> &'static str {
        match self {
            OpenError::NotAbsolute(_) => "workspaces.not_absolute",
            OpenError::NotFound(_) => "workspaces.not_found",
            OpenError::NoHome => "workspaces.no_home",
            OpenError::Init(_) => "workspaces.init_failed",
            OpenError::Start { .. } => "workspaces.start_failed",
            OpenError::NotARepository(_) => "workspaces.not_a_repository",
            OpenError::Refused { .. } => "workspaces.refused",
            OpenError::TooManyDaemons => "workspaces.too_many_daemons",
            OpenError::NotYours(_) => "workspaces.not_yours",
        }
    }

    /// The HTTP status it is answered with.
    pub fn status(&self) -> u16 {
        match self {
            OpenError::NotAbsolute(_) => 400,
            OpenError::NotFound(_) => 404,
            OpenError::NoHome
            | OpenError::Init(_)
            | OpenError::NotARepository(_)
            | OpenError::Refused { .. } => 422,
            OpenError::TooManyDaemons => 429,
            OpenError::NotYours(_) => 403,
            OpenError::Start { .. } => 500,
        }
    }
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::NotAbsolute(p) => write!(f, "{} is not an absolute path", p.display()),
            OpenError::NotFound(p) => write!(f, "{} does not exist", p.display()),
            OpenError::NoHome => write!(f, "no HOME to place a new workspace in"),
            OpenError::Init(e) => write!(f, "cannot create the project's workspace: {e}"),
            OpenError::Start { dir, detail } => {
                write!(f, "the daemon of {} did not start: {detail}", dir.display())
            }
            OpenError::NotARepository(p) => write!(
                f,
                "{} is not in a git repository: a project must be one (`git init` it first)",
                p.display()
            ),
            OpenError::Refused { path, why } => {
                write!(f, "{} cannot be opened: {why}", path.display())
            }
            OpenError::NotYours(dir) => write!(
                f,
                "the daemon of {} is not yours to open: its daemon.json is not readable by the user this request came from",
                dir.display()
            ),
            OpenError::TooManyDaemons => write!(
                f,
                "this daemon has started {MAX_STARTED} others already; open more with `multiverse ide` in their workspaces"
            ),
        }
    }
}

impl std::error::Error for OpenError {}

/// Opens `path` (a workspace, or a project) from the daemon of `this`, starting daemons
/// with `exe` (the `multiverse` binary); with no `exe`, only a daemon that runs is opened.
///
/// Another daemon's token (in its URL) goes only to a `caller` (the user id owning the
/// client's socket) who could read it where it is kept, `daemon.json`, and a daemon is
/// started only for the user it would run as: a token for this daemon proves less (it may
/// have been shared, or shown in a screen).
pub fn open_workspace(
    path: &Path,
    this: &Path,
    home: Option<&Path>,
    exe: Option<&Path>,
    caller: Option<u32>,
) -> Result<OpenedWorkspace, OpenError> {
    if !path.is_absolute() {
        return Err(OpenError::NotAbsolute(path.to_path_buf()));
    }
    let path = path
        .canonicalize()
        .map_err(|_| OpenError::NotFound(path.to_path_buf()))?;
    refuse_place(&path)?;
    // Daemons (and the workspaces they need) are started only for the user they run as.
    let me = nix::unistd::geteuid().as_raw();
    let may_start = caller.is_some_and(|uid| uid == me || uid == 0);
    let exe = exe.filter(|_| may_start);
    let create = match exe {
        Some(_) => Ok(()),
        None if !may_start => Err(OpenError::NotYours(path.clone())),
        None => Err(OpenError::TooManyDaemons),
    };
    let dir = workspace_of(&path, this, home, create)?;
    if this.canonicalize().is_ok_and(|this| this == dir) {
        return Ok(OpenedWorkspace {
            dir,
            daemon: None,
            started: false,
        });
    }
    let not_yours = || OpenError::NotYours(dir.clone());
    let (info, started) = match (exe, daemon(&dir)) {
        (_, Some(info)) => {
            let file = dir.join(super::api::DAEMON_FILE);
            if !caller.is_some_and(|uid| super::peer::may_read(uid, &file)) {
                return Err(not_yours());
            }
            (info, false)
        }
        (Some(exe), None) => ensure_daemon(&dir, exe)?,
        (None, None) if !may_start => return Err(not_yours()),
        (None, None) => return Err(OpenError::TooManyDaemons),
    };
    Ok(OpenedWorkspace {
        dir,
        daemon: Some(info),
        started,
    })
}

/// The workspace `path` names: itself when it is one; for a project, the one the recent
/// list or the default place holds, else (when `create` is `Ok`) a new one made with
/// `this` workspace's settings: a workspace whose daemon may not be started is not made
/// either (`create`'s error says why).
fn workspace_of(
    path: &Path,
    this: &Path,
    home: Option<&Path>,
    create: Result<(), OpenError>,
) -> Result<PathBuf, OpenError> {
    if path.join("workspace.json").is_file() {
        return Ok(path.to_path_buf());
    }
    if !path.is_dir() {
        return Err(OpenError::NotFound(path.to_path_buf()));
    }
    if crate::git::WorkTree::discover(path).is_err() {
        return Err(OpenError::NotARepository(path.to_path_buf()));
    }
    let project = app::project_root(path);
    refuse_place(&project)?;
    let home = home.ok_or(OpenError::NoHome)?;
    // A project holding workspaces (a home, say) would put their state in its workers'
    // reach.
    let holds = |dir: &Path| dir.canonicalize().is_ok_and(|d| d.starts_with(&project));
    if holds(this) || holds(&home.join(".multiverse")) {
        return Err(OpenError::Refused {
            path: project,
            why: "it holds workspaces, which its workers could then change",
        });
    }
    let listed = recent::load(home)
        .into_iter()
        .find(|w| w.project == project && w.path.join("workspace.json").is_file());
    if let Some(listed) = listed {
        return Ok(listed.path);
    }
    let default = app::default_workspace(&project, home);
    if default.join("workspace.json").is_file() {
        return Ok(default);
    }
    create?;
    let mut config = app::load_config(this).map_err(|e| OpenError::Init(e.to_string()))?;
    // Running workers outside Docker is the owner's choice per workspace, never copied.
    config.agent_runner_args.retain(|a| a != "--unsafe-local");
    let (dir, _) = app::init(&InitOptions {
        workspace: None,
        project,
        home: home.to_path_buf(),
        config,
    })
    .map_err(|e| OpenError::Init(e.to_string()))?;
    Ok(dir)
}

/// Refuses a system directory and any place inside a workspace but the workspace itself.
fn refuse_place(path: &Path) -> Result<(), OpenError> {
    if SYSTEM_DIRS
        .iter()
        .any(|s| path == Path::new(s) || (*s != "/" && path.starts_with(s)))
    {
        return Err(OpenError::Refused {
            path: path.to_path_buf(),
            why: "it is a system directory",
        });
    }
    let inside = path
        .ancestors()
        .skip(1)
        .any(|a| a.join("workspace.json").is_file() && a.join("config.json").is_file());
    if inside {
        return Err(OpenError::Refused {
            path: path.to_path_buf(),
            why: "it lies inside a workspace",
        });
    }
    Ok(())
}

/// The daemon of the workspace `dir`, started with `exe` (the `multiverse` binary) unless
/// one runs; whether it was started.
pub fn ensure_daemon(dir: &Path, exe: &Path) -> Result<(DaemonInfo, bool), OpenError> {
    if !dir.join("workspace.json").is_file() {
        return Err(OpenError::NotFound(dir.join("workspace.json")));
    }
    match daemon(dir) {
        Some(info) => Ok((info, false)),
        None => Ok((start_daemon(dir, exe)?, true)),
    }
}

/// Starts `multiverse --workspace DIR serve` in its own process group (it outlives this
/// daemon), its log in `DIR/serve.log`, and waits until it listens.
fn start_daemon(dir: &Path, exe: &Path) -> Result<DaemonInfo, OpenError> {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    use std::os::unix::process::CommandExt as _;
    let failed = |detail: String| OpenError::Start {
        dir: dir.to_path_buf(),
        detail,
    };
    let log_path = dir.join("serve.log");
    // Private like the rest of the workspace (a log of an older version may be 0644).
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&log_path)
        .and_then(|log| {
            log.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            Ok(log)
        })
        .map_err(|e| failed(format!("cannot open {}: {e}", log_path.display())))?;
    let mut child = Command::new(exe)
        .arg("--workspace")
        .arg(dir)
        .arg("serve")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .process_group(0)
        .spawn()
        .map_err(|e| failed(format!("cannot run {}: {e}", exe.display())))?;
    let until = Instant::now() + START_TIMEOUT;
    loop {
        if let Some(info) = daemon(dir).filter(|info| info.pid == child.id()) {
            // Reaped when it ends, so it never lingers as a zombie of this daemon.
            std::thread::spawn(move || child.wait());
            return Ok(info);
        }
        if let Ok(Some(status)) = child.try_wait() {
            let said = last_error(&log_path)
                .map(|line| format!(": {line}"))
                .unwrap_or_default();
            return Err(failed(format!(
                "it ended ({status}){said}; see {}",
                log_path.display()
            )));
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            return Err(failed(format!(
                "it did not listen within {} s; see {}",
                START_TIMEOUT.as_secs(),
                log_path.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The last error a daemon's log says (the `multiverse: ...` line it printed as it ended),
/// read from the log's last 8 KiB.
fn last_error(log: &Path) -> Option<String> {
    use std::io::{Read as _, Seek as _};
    let mut file = std::fs::File::open(log).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(std::io::SeekFrom::Start(len.saturating_sub(8192)))
        .ok()?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail).ok()?;
    String::from_utf8_lossy(&tail)
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix("multiverse: ").map(str::to_string))
}

/// How the IDE's picker opens a workspace: [`open_workspace`] from this
/// daemon, starting others with this very binary.
pub fn opener(this: PathBuf, home: Option<PathBuf>) -> Opener {
    let started = std::sync::atomic::AtomicUsize::new(0);
    Box::new(move |path, caller| {
        let answer = |e: OpenError| (e.status(), e.key().to_string(), e.to_string());
        let exe = current_exe()
            .map_err(|e| (500, "workspaces.start_failed".to_string(), e.to_string()))?;
        // Opening one that runs, or this one, is still fine past the bound; starting one
        // is not.
        let may_start = started.load(std::sync::atomic::Ordering::SeqCst) < MAX_STARTED;
        let opened = open_workspace(
            path,
            &this,
            home.as_deref(),
            may_start.then_some(&*exe),
            caller,
        )
        .map_err(answer)?;
        if opened.started {
            started.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        Ok(opened)
    })
}

/// This binary, to start other daemons with. Linux names a binary replaced since it
/// started `PATH (deleted)` (a rebuild, an upgrade); the new one at `PATH` is meant.
pub fn current_exe() -> std::io::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let text = exe.to_string_lossy();
    match text.strip_suffix(" (deleted)") {
        Some(path) if Path::new(path).is_file() => Ok(PathBuf::from(path)),
        _ => Ok(exe),
    }
}
