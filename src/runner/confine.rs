//! What `--unsafe-local` confines every command to ([`Confinement`]): fresh mount and PID
//! namespaces made by util-linux's `unshare`, in which each hidden path (`--hide`) is
//! covered (a directory by an empty, read-only tmpfs of mode 000, a file by a read-only,
//! `nodev` bind of `/dev/null`, which cannot be opened at all), `/proc` is the namespace's
//! own (no other process, the runner included, is visible), and the command runs through
//! `setpriv` without capabilities and with `no_new_privs`, so it cannot unmount what covers
//! the paths. As root the namespaces are made directly; otherwise (or when that is refused)
//! inside a user namespace, with the command in a nested one as its own uid again, so the
//! mounts are not its to undo. The namespace's first process is a shell that mounts, runs
//! the command in the foreground and exits with its status; when it ends, the kernel kills
//! whatever else the command left in the namespace. Paths and arguments are positional
//! parameters of that shell, never part of its script.
//!
//! It fails closed: [`Confinement::settle`] tries each way once with a probe command that
//! checks, from inside, that the hidden paths cannot be read, no capability is left,
//! `no_new_privs` is set and `/proc` shows only the namespace; when no way holds, nothing
//! runs ([`ConfineError`], key [`CONFINEMENT_KEY`]).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use super::cancel::Cancel;
use super::process::{self, Ending, Output, SpawnError, Spec, find_on_path};

/// The key of a machine where commands cannot be confined.
pub(crate) const CONFINEMENT_KEY: &str = "sandbox.confinement_unavailable";

/// The exit code of the namespace's shell when it could not hide a path (the command did
/// not run), with a [`MARKER`] line on stderr.
const SETUP_FAILED: i32 = 125;
/// How the shell and the probe start the lines they write.
const MARKER: &str = "agent-runner-confine: ";
/// How long the probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// The namespace's first process. Arguments: `mount`, the number of files, the files, the
/// number of directories, the directories, then the command (with `setpriv` before it).
/// The command runs in the foreground (not `exec`), so it is not the namespace's init: it
/// gets signals as any process does, and its end ends the namespace.
const SCRIPT: &str = r#"m=$1; shift
n=$1; shift
while [ "$n" -gt 0 ]; do
  "$m" --bind -o ro,nosuid,nodev,noexec /dev/null "$1" ||
    { echo "agent-runner-confine: could not hide the file $1" >&2; exit 125; }
  shift; n=$((n - 1))
done
n=$1; shift
while [ "$n" -gt 0 ]; do
  "$m" -t tmpfs -o ro,nosuid,nodev,noexec,size=4k,mode=000 tmpfs "$1" ||
    { echo "agent-runner-confine: could not hide the directory $1" >&2; exit 125; }
  shift; n=$((n - 1))
done
"$@"
s=$?
exit "$s""#;

/// The probe, run confined as a command is. Arguments: the number of files, the files,
/// the number of directories, the directories.
const PROBE: &str = r#"say() { echo "agent-runner-confine: $*" >&2; exit 1; }
n=$1; shift
while [ "$n" -gt 0 ]; do
  if (: < "$1") 2>/dev/null; then say "the file $1 can still be read"; fi
  shift; n=$((n - 1))
done
n=$1; shift
while [ "$n" -gt 0 ]; do
  if (cd "$1") 2>/dev/null; then say "the directory $1 can still be entered"; fi
  shift; n=$((n - 1))
done
nnp=
while read -r key value rest; do
  case $key in
    NoNewPrivs:) nnp=$value;;
    CapEff:) case $value in *[!0]*) say "the command keeps capabilities ($value)";; esac;;
  esac
done < /proc/self/status
[ "$nnp" = 1 ] || say "no_new_privs is not set"
count=0
for p in /proc/[0-9]*; do count=$((count + 1)); done
[ "$count" -le 3 ] || say "/proc shows $count processes, not only the namespace's"
exit 0"#;

/// A path hidden from the commands, canonical.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Hidden {
    Dir(PathBuf),
    File(PathBuf),
}

impl Hidden {
    pub(crate) fn path(&self) -> &Path {
        match self {
            Hidden::Dir(path) | Hidden::File(path) => path,
        }
    }
}

/// A `--hide` path that cannot be hidden. `key()` is stable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HideError {
    /// `--hide` without `--unsafe-local`: in Docker the worker sees only the repository.
    NeedsUnsafeLocal,
    NotAbsolute(PathBuf),
    /// It does not exist (or cannot be resolved).
    NotFound {
        path: PathBuf,
        reason: String,
    },
    /// Neither a directory nor a regular file (a device, a socket, a FIFO).
    NotFileOrDirectory(PathBuf),
    /// It is the repository, holds it, or lies inside it: the worker must reach the
    /// repository, and a path inside it is the worker's anyway.
    OverlapsRepository {
        path: PathBuf,
        repo: PathBuf,
    },
}

impl HideError {
    pub fn key(&self) -> &'static str {
        match self {
            HideError::NeedsUnsafeLocal => "hide.needs_unsafe_local",
            HideError::NotAbsolute(_) => "hide.not_absolute",
            HideError::NotFound { .. } => "hide.not_found",
            HideError::NotFileOrDirectory(_) => "hide.not_file_or_directory",
            HideError::OverlapsRepository { .. } => "hide.overlaps_repository",
        }
    }
}

impl std::fmt::Display for HideError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HideError::NeedsUnsafeLocal => write!(
                f,
                "--hide applies to --unsafe-local only: in Docker the worker sees nothing of this machine but the repository"
            ),
            HideError::NotAbsolute(path) => {
                write!(f, "--hide {}: not an absolute path", path.display())
            }
            HideError::NotFound { path, reason } => {
                write!(f, "--hide {}: {reason}", path.display())
            }
            HideError::NotFileOrDirectory(path) => write!(
                f,
                "--hide {}: neither a directory nor a regular file",
                path.display()
            ),
            HideError::OverlapsRepository { path, repo } if repo.starts_with(path) => write!(
                f,
                "--hide {}: it holds the repository {}, which the worker must reach",
                path.display(),
                repo.display()
            ),
            HideError::OverlapsRepository { path, repo } => write!(
                f,
                "--hide {}: it is inside the repository {}, which is the worker's to change",
                path.display(),
                repo.display()
            ),
        }
    }
}

impl std::error::Error for HideError {}

/// The paths to hide, canonical, checked against the (canonical) repository: each
/// absolute, existing, a directory or a regular file, neither holding the repository nor
/// inside it. A path inside another one hidden is dropped (the outer one covers it).
pub(crate) fn hidden_paths(paths: &[PathBuf], repo: &Path) -> Result<Vec<Hidden>, HideError> {
    let mut hidden: Vec<Hidden> = Vec::new();
    for path in paths {
        if !path.is_absolute() {
            return Err(HideError::NotAbsolute(path.clone()));
        }
        let canonical = path.canonicalize().map_err(|e| HideError::NotFound {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        if repo.starts_with(&canonical) || canonical.starts_with(repo) {
            return Err(HideError::OverlapsRepository {
                path: canonical,
                repo: repo.to_path_buf(),
            });
        }
        let metadata = canonical.metadata().map_err(|e| HideError::NotFound {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        let entry = if metadata.is_dir() {
            Hidden::Dir(canonical)
        } else if metadata.is_file() {
            Hidden::File(canonical)
        } else {
            return Err(HideError::NotFileOrDirectory(canonical));
        };
        if !hidden.contains(&entry) {
            hidden.push(entry);
        }
    }
    let dirs: Vec<PathBuf> = hidden
        .iter()
        .filter_map(|h| match h {
            Hidden::Dir(path) => Some(path.clone()),
            Hidden::File(_) => None,
        })
        .collect();
    hidden.retain(|h| {
        !dirs
            .iter()
            .any(|dir| h.path() != dir && h.path().starts_with(dir))
    });
    Ok(hidden)
}

/// Commands cannot be confined on this machine: what was tried and why it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfineError {
    pub reason: String,
}

impl std::fmt::Display for ConfineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "--unsafe-local cannot confine commands on this machine ({}), and runs none unconfined; \
             it needs util-linux's `unshare` and `setpriv` and the right to make mount and PID \
             namespaces (as root, or through user namespaces); run in Docker instead (without --unsafe-local)",
            self.reason
        )
    }
}

impl std::error::Error for ConfineError {}

/// How the namespaces are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// As root: mount and PID namespaces, the command without capabilities.
    Direct,
    /// Inside a user namespace (root there, to mount), the command in a nested one as
    /// `uid`/`gid`, which has no power over the mounts.
    UserNamespace { uid: u32, gid: u32 },
}

impl Mode {
    fn describe(self) -> &'static str {
        match self {
            Mode::Direct => "as root",
            Mode::UserNamespace { .. } => "in a user namespace",
        }
    }
}

/// The programs the confinement runs, found on `PATH` once.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Programs {
    unshare: PathBuf,
    setpriv: PathBuf,
    mount: PathBuf,
    sh: PathBuf,
}

impl Programs {
    fn find() -> Result<Programs, ConfineError> {
        let search = crate::environment::program_path();
        let search = search.as_deref().and_then(std::ffi::OsStr::to_str);
        let find = |name: &str| {
            find_on_path(name, search).ok_or_else(|| ConfineError {
                reason: format!("`{name}` was not found on PATH"),
            })
        };
        Ok(Programs {
            unshare: find("unshare")?,
            setpriv: find("setpriv")?,
            mount: find("mount")?,
            sh: find("sh")?,
        })
    }
}

/// A way that worked: the programs and the mode.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Setup {
    programs: Programs,
    mode: Mode,
}

/// The confinement of a local sandbox's commands (see the module's documentation). Its
/// way is found once, by [`Confinement::settle`], and shared by the preflight and the
/// sandbox.
#[derive(Debug, Default)]
pub struct Confinement {
    hidden: Vec<Hidden>,
    settled: Mutex<Option<Result<Setup, ConfineError>>>,
}

impl PartialEq for Confinement {
    fn eq(&self, other: &Confinement) -> bool {
        self.hidden == other.hidden
    }
}

impl Eq for Confinement {}

impl Confinement {
    pub(crate) fn new(hidden: Vec<Hidden>) -> Confinement {
        Confinement {
            hidden,
            settled: Mutex::new(None),
        }
    }

    /// Finds the way commands are confined here, once (a cancelled attempt is not kept):
    /// as root directly, then through user namespaces, each checked by the probe.
    pub(crate) fn settle(&self, cancel: &Cancel) -> Result<(), ConfineError> {
        self.setup(cancel).map(|_| ())
    }

    fn setup(&self, cancel: &Cancel) -> Result<Setup, ConfineError> {
        let mut settled = self.settled.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(done) = &*settled {
            return done.clone();
        }
        let result = self.find_setup(cancel);
        if !cancel.is_cancelled() {
            *settled = Some(result.clone());
        }
        result
    }

    fn find_setup(&self, cancel: &Cancel) -> Result<Setup, ConfineError> {
        let programs = Programs::find()?;
        let uid = nix::unistd::geteuid();
        let gid = nix::unistd::getegid();
        let mut modes = Vec::new();
        if uid.is_root() {
            modes.push(Mode::Direct);
        }
        modes.push(Mode::UserNamespace {
            uid: uid.as_raw(),
            gid: gid.as_raw(),
        });
        let mut failures = Vec::new();
        for mode in modes {
            let setup = Setup {
                programs: programs.clone(),
                mode,
            };
            match self.probe(&setup, cancel) {
                Ok(()) => {
                    tracing::debug!(mode = mode.describe(), "commands are confined");
                    return Ok(setup);
                }
                Err(_) if cancel.is_cancelled() => {
                    return Err(ConfineError {
                        reason: "the task was cancelled while it was being checked".into(),
                    });
                }
                Err(why) => failures.push(format!("{}: {why}", mode.describe())),
            }
        }
        Err(ConfineError {
            reason: failures.join("; "),
        })
    }

    /// Runs the probe confined by `setup`: `Ok` when it found everything hidden.
    fn probe(&self, setup: &Setup, cancel: &Cancel) -> Result<(), String> {
        let mut args = vec![
            "-c".to_string(),
            PROBE.to_string(),
            "agent-runner-probe".into(),
        ];
        args.extend(self.path_args());
        let mut spec = Spec::new(setup.programs.sh.display().to_string(), args);
        spec.cwd = Some(PathBuf::from("/"));
        spec.timeout = Some(PROBE_TIMEOUT);
        spec.grace = Duration::from_secs(1);
        let wrapped = self.wrap_with(setup, &spec);
        match process::run(&wrapped, cancel) {
            Ok(out) if out.ending.success() => Ok(()),
            Ok(out) => Err(last_lines(&out).unwrap_or_else(|| match out.ending {
                Ending::TimedOut => "the probe timed out".to_string(),
                Ending::Cancelled => "cancelled".to_string(),
                ending => format!("the probe exited {}", ending.code()),
            })),
            Err(e) => Err(e.to_string()),
        }
    }

    /// `spec` confined: the same environment, directory, input and limits, its command
    /// run inside the namespaces. Settles the way first when that was not done.
    pub(crate) fn wrap(&self, spec: &Spec, cancel: &Cancel) -> Result<Spec, ConfineError> {
        let setup = self.setup(cancel)?;
        Ok(self.wrap_with(&setup, spec))
    }

    fn wrap_with(&self, setup: &Setup, spec: &Spec) -> Spec {
        let programs = &setup.programs;
        let mut args: Vec<String> = Vec::new();
        if let Mode::UserNamespace { .. } = setup.mode {
            args.extend(["--user", "--map-root-user"].map(String::from));
        }
        args.extend(
            [
                "--mount",
                "--pid",
                "--fork",
                "--kill-child",
                "--mount-proc",
                "--propagation",
                "private",
                "--",
            ]
            .map(String::from),
        );
        args.extend([
            programs.sh.display().to_string(),
            "-c".into(),
            SCRIPT.into(),
            "agent-runner-confine".into(),
            programs.mount.display().to_string(),
        ]);
        args.extend(self.path_args());
        if let Mode::UserNamespace { uid, gid } = setup.mode {
            args.extend([
                programs.unshare.display().to_string(),
                "--user".into(),
                format!("--map-user={uid}"),
                format!("--map-group={gid}"),
                "--".into(),
            ]);
        }
        args.extend([
            programs.setpriv.display().to_string(),
            "--no-new-privs".into(),
            "--inh-caps=-all".into(),
            "--bounding-set=-all".into(),
            "--".into(),
            spec.program.clone(),
        ]);
        args.extend(spec.args.iter().cloned());
        Spec {
            program: programs.unshare.display().to_string(),
            args,
            ..spec.clone()
        }
    }

    /// The number of hidden files, the files, the number of directories, the directories.
    fn path_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        for dirs in [false, true] {
            let paths: Vec<String> = self
                .hidden
                .iter()
                .filter(|h| matches!(h, Hidden::Dir(_)) == dirs)
                .map(|h| h.path().display().to_string())
                .collect();
            args.push(paths.len().to_string());
            args.extend(paths);
        }
        args
    }

    /// One line for logs and the Task Note.
    pub fn describe(&self) -> String {
        let settled = self.settled.lock().unwrap_or_else(|e| e.into_inner());
        let how = match &*settled {
            Some(Ok(setup)) => format!(" ({})", setup.mode.describe()),
            _ => String::new(),
        };
        let hidden = if self.hidden.is_empty() {
            "nothing hidden".to_string()
        } else {
            let paths: Vec<String> = self
                .hidden
                .iter()
                .map(|h| h.path().display().to_string())
                .collect();
            format!("hiding {}", paths.join(", "))
        };
        format!(
            "own mount and PID namespaces{how}, no capabilities, no_new_privs, {hidden}; the network and the rest of the user's files are not confined"
        )
    }
}

/// The last lines of a failed setup's stderr, for its reason.
fn last_lines(out: &Output) -> Option<String> {
    let text = out.stderr.text();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let start = lines.len().saturating_sub(2);
    let kept: Vec<String> = lines[start..]
        .iter()
        .map(|l| l.strip_prefix(MARKER).unwrap_or(l).to_string())
        .collect();
    (!kept.is_empty()).then(|| kept.join(" / "))
}

/// The namespace's shell could not hide a path, so the command did not run.
pub(crate) fn setup_failure(out: &Output) -> Option<ConfineError> {
    if out.ending != Ending::Exited(SETUP_FAILED) {
        return None;
    }
    let text = out.stderr.text();
    let last = text.lines().rev().find(|l| !l.trim().is_empty())?;
    last.starts_with(MARKER).then(|| ConfineError {
        reason: last_lines(out).unwrap_or_default(),
    })
}

/// Whether `spec`'s program can be started, judged on this side as a spawn would judge it
/// (a path against the working directory, a name on the command's `PATH`), so a program
/// that is missing or not executable is a [`SpawnError`] as it is unconfined.
pub(crate) fn check_program(spec: &Spec) -> Result<(), SpawnError> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = spec.program.contains('/').then(|| match &spec.cwd {
        Some(cwd) => cwd.join(&spec.program),
        None => PathBuf::from(&spec.program),
    });
    let fail = |kind: std::io::ErrorKind| {
        Err(SpawnError {
            program: spec.program.clone(),
            source: std::io::Error::from(kind),
            path: path.clone(),
        })
    };
    match &path {
        Some(file) => match file.metadata() {
            Err(_) => fail(std::io::ErrorKind::NotFound),
            Ok(m) if m.is_dir() || m.permissions().mode() & 0o111 == 0 => {
                fail(std::io::ErrorKind::PermissionDenied)
            }
            Ok(_) => Ok(()),
        },
        None => {
            let own = spec.env.iter().rev().find(|(k, _)| k == "PATH");
            let process_path = crate::environment::program_path();
            let search = match own {
                Some((_, value)) => Some(value.as_str()),
                None => process_path.as_deref().and_then(std::ffi::OsStr::to_str),
            };
            if spec.program.is_empty() || find_on_path(&spec.program, search).is_none() {
                return fail(std::io::ErrorKind::NotFound);
            }
            Ok(())
        }
    }
}

/// `setpriv` could not start the command (a missing `#!` interpreter, say): its only
/// output is its one line saying so, and its exit 126 or 127. The same [`SpawnError`] as
/// an unconfined spawn, so a run that never started is not read as the command's exit.
pub(crate) fn exec_failure(spec: &Spec, out: &Output) -> Option<SpawnError> {
    use nix::errno::Errno;
    if !matches!(out.ending, Ending::Exited(126 | 127)) || !out.stdout.is_empty() {
        return None;
    }
    let text = out.stderr.text();
    let reason = text
        .strip_prefix(&format!("setpriv: failed to execute {}: ", spec.program))?
        .strip_suffix('\n')?;
    let errno = [
        Errno::ENOENT,
        Errno::EACCES,
        Errno::ENOEXEC,
        Errno::ENOTDIR,
        Errno::ELOOP,
        Errno::ETXTBSY,
        Errno::E2BIG,
        Errno::ENAMETOOLONG,
        Errno::ENOMEM,
        Errno::EPERM,
        Errno::EISDIR,
    ]
    .into_iter()
    .find(|e| e.desc() == reason)?;
    Some(SpawnError {
        program: spec.program.clone(),
        source: std::io::Error::from_raw_os_error(errno as i32),
        path: spec.program.contains('/').then(|| match &spec.cwd {
            Some(cwd) => cwd.join(&spec.program),
            None => PathBuf::from(&spec.program),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("confine-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.canonicalize().unwrap()
    }

    #[test]
    fn hidden_paths_are_checked_against_the_repository() {
        let dir = temp("paths");
        let repo = dir.join("repo");
        let ws = dir.join("ws");
        std::fs::create_dir_all(repo.join("sub")).unwrap();
        std::fs::create_dir_all(ws.join("inner")).unwrap();
        std::fs::write(ws.join("file"), "x").unwrap();
        std::fs::write(dir.join("alone"), "x").unwrap();
        let key = |paths: &[PathBuf]| hidden_paths(paths, &repo).unwrap_err().key();
        assert_eq!(key(&[PathBuf::from("ws")]), "hide.not_absolute");
        assert_eq!(key(&[dir.join("missing")]), "hide.not_found");
        assert_eq!(key(std::slice::from_ref(&dir)), "hide.overlaps_repository");
        assert_eq!(key(std::slice::from_ref(&repo)), "hide.overlaps_repository");
        assert_eq!(key(&[repo.join("sub")]), "hide.overlaps_repository");
        assert_eq!(
            key(&[PathBuf::from("/dev/null")]),
            "hide.not_file_or_directory"
        );
        let err = hidden_paths(std::slice::from_ref(&dir), &repo)
            .unwrap_err()
            .to_string();
        assert!(err.contains("holds the repository"), "{err}");
        // Canonical, without duplicates or what another hidden directory covers.
        let hidden = hidden_paths(
            &[
                ws.join("inner/.."),
                ws.clone(),
                ws.join("file"),
                ws.join("inner"),
                dir.join("alone"),
            ],
            &repo,
        )
        .unwrap();
        assert_eq!(
            hidden,
            [Hidden::Dir(ws.clone()), Hidden::File(dir.join("alone"))]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_spawn_failure_behind_setpriv_is_read_back() {
        let mut spec = Spec::new("./missing.sh", Vec::<String>::new());
        spec.cwd = Some(PathBuf::from("/repo"));
        let out = |code: i32, stderr: &str| {
            let mut captured = process::Captured::default();
            captured.push(stderr.as_bytes());
            Output {
                ending: Ending::Exited(code),
                stdout: process::Captured::default(),
                stderr: captured,
                duration: Duration::ZERO,
            }
        };
        let line = "setpriv: failed to execute ./missing.sh: No such file or directory\n";
        let e = exec_failure(&spec, &out(127, line)).unwrap();
        assert_eq!(e.source.kind(), std::io::ErrorKind::NotFound);
        assert_eq!(e.path, Some(PathBuf::from("/repo/./missing.sh")));
        // The command's own exit 127 with other words is its own.
        assert!(exec_failure(&spec, &out(127, "sh: 1: cargo: not found\n")).is_none());
        assert!(exec_failure(&spec, &out(1, line)).is_none());
        let marker = "mount: /x: permission denied.\nagent-runner-confine: could not hide the directory /x\n";
        let e = setup_failure(&out(125, marker)).unwrap();
        assert!(e.reason.contains("could not hide the directory /x"), "{e}");
        assert!(setup_failure(&out(125, "its own words\n")).is_none());
    }
}
