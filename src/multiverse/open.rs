//! Opening another workspace from the IDE's picker (`POST /api/workspaces/open`): the
//! path names a workspace, or a project whose workspace is found (the recent list, then
//! its default place) or else created with this workspace's settings; its daemon is
//! started unless one runs; the answer is where its IDE is. Nothing is deleted or moved.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::api::{DaemonInfo, OpenedWorkspace, Opener, daemon};
use super::app::{self, InitOptions};
use super::recent;

/// How long a started daemon may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(20);

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
}

impl OpenError {
    pub fn key(&self) -> &'static str {
        match self {
            OpenError::NotAbsolute(_) => "workspaces.not_absolute",
            OpenError::NotFound(_) => "workspaces.not_found",
            OpenError::NoHome => "workspaces.no_home",
            OpenError::Init(_) => "workspaces.init_failed",
            OpenError::Start { .. } => "workspaces.start_failed",
        }
    }

    /// The HTTP status it is answered with.
    pub fn status(&self) -> u16 {
        match self {
            OpenError::NotAbsolute(_) => 400,
            OpenError::NotFound(_) => 404,
            OpenError::NoHome | OpenError::Init(_) => 422,
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
        }
    }
}

impl std::error::Error for OpenError {}

/// Opens `path` (a workspace, or a project) from the daemon of `this`, starting daemons
/// with `exe` (the `multiverse` binary).
pub fn open_workspace(
    path: &Path,
    this: &Path,
    home: Option<&Path>,
    exe: &Path,
) -> Result<OpenedWorkspace, OpenError> {
    if !path.is_absolute() {
        return Err(OpenError::NotAbsolute(path.to_path_buf()));
    }
    let path = path
        .canonicalize()
        .map_err(|_| OpenError::NotFound(path.to_path_buf()))?;
    let dir = workspace_of(&path, this, home)?;
    if this.canonicalize().is_ok_and(|this| this == dir) {
        return Ok(OpenedWorkspace {
            dir,
            daemon: None,
            started: false,
        });
    }
    let (info, started) = ensure_daemon(&dir, exe)?;
    Ok(OpenedWorkspace {
        dir,
        daemon: Some(info),
        started,
    })
}

/// The workspace `path` names: itself when it is one; for a project, the one the recent
/// list or the default place holds, else a new one made with `this` workspace's settings.
fn workspace_of(path: &Path, this: &Path, home: Option<&Path>) -> Result<PathBuf, OpenError> {
    if path.join("workspace.json").is_file() {
        return Ok(path.to_path_buf());
    }
    if !path.is_dir() {
        return Err(OpenError::NotFound(path.to_path_buf()));
    }
    let project = app::project_root(path);
    let home = home.ok_or(OpenError::NoHome)?;
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
    let config = app::load_config(this).map_err(|e| OpenError::Init(e.to_string()))?;
    let (dir, _) = app::init(&InitOptions {
        workspace: None,
        project,
        home: home.to_path_buf(),
        config,
    })
    .map_err(|e| OpenError::Init(e.to_string()))?;
    Ok(dir)
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
            return Err(failed(format!(
                "it ended ({status}); see {}",
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

/// How the IDE's picker opens a workspace: [`open_workspace`] from this
/// daemon, starting others with this very binary.
pub fn opener(this: PathBuf, home: Option<PathBuf>) -> Opener {
    Box::new(move |path| {
        let exe = current_exe()
            .map_err(|e| (500, "workspaces.start_failed".to_string(), e.to_string()))?;
        open_workspace(path, &this, home.as_deref(), &exe)
            .map_err(|e| (e.status(), e.key().to_string(), e.to_string()))
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
