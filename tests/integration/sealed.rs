//! The tests' one door to the machine: every process a test starts, and every library
//! call that would look at the environment, goes through here, so a contributor's
//! installed model, caches, homes, git settings, locale and exported variables change no
//! result.
//!
//! - [`command`] starts a program with an environment built from nothing: `PATH` and
//!   `TMPDIR` (where programs and temp files are), a sealed `HOME` with its own `XDG_*`
//!   directories and git configuration (`GIT_CONFIG_GLOBAL`, `GIT_CONFIG_NOSYSTEM`),
//!   `LANG=C.UTF-8`, and nothing else: no `CODE_INTEL_*`, `MULTIVERSE_*`, `RUST_LOG`,
//!   `DOCKER_HOST` or key of the user's. A test adds what it means to set (`.env(...)`
//!   after this wins).
//! - [`environment`] is the same for the library's in-process calls (the server, semantic
//!   search, Multiverse's `open`): no variable at all, so only what a test passes counts.
//! - [`setup_command`] is the exception, on purpose and by name: installing the tests'
//!   helpers (`npm ci`, `pip`, `tests/model/fetch.sh`) needs the user's registry settings
//!   and proxies, and changes nothing a test asserts.
//!
//! The `tidy` test fails when a test starts a process any other way.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use code_intel::environment::Environment;

/// Variables kept from the test process: where programs are, and where temp files go (so
/// that a child's temp directory is the test's own `std::env::temp_dir()`).
const KEPT: [&str; 2] = ["PATH", "TMPDIR"];

/// The Docker daemon the tests use: the default socket, or this variable's value when a
/// contributor's daemon listens elsewhere (never the user's `DOCKER_HOST`, which may name
/// a remote machine).
const DOCKER_HOST_FOR_TESTS: &str = "CODE_INTEL_TEST_DOCKER_HOST";

/// The global git configuration of every child: an identity for the tests' own commits,
/// `main` for new repositories, and nothing that signs, runs hooks or rewrites.
const GITCONFIG: &str = "\
[user]
\tname = code-intel tests
\temail = tests@code-intel.invalid
[init]
\tdefaultBranch = main
[commit]
\tgpgsign = false
[tag]
\tgpgsign = false
";

/// `program` with the sealed environment (see the module's documentation).
pub(crate) fn command(program: impl AsRef<OsStr>) -> Command {
    let mut command = Command::new(program);
    seal(&mut command);
    command
}

/// Replaces `command`'s whole environment with the sealed one.
pub(crate) fn seal(command: &mut Command) -> &mut Command {
    command.env_clear().envs(child_environment().vars())
}

/// The environment of every child (see the module's documentation), as a value for the
/// library's own children (`DockerOptions::env`, `Target::Docker`).
pub(crate) fn child_environment() -> Environment {
    let mut env = Environment::empty();
    for name in KEPT {
        if let Some(value) = std::env::var_os(name) {
            env = env.with(name, value);
        }
    }
    if let Some(host) = std::env::var_os(DOCKER_HOST_FOR_TESTS).filter(|h| !h.is_empty()) {
        env = env.with("DOCKER_HOST", host);
    }
    let home = home();
    env.with("HOME", home)
        .with("XDG_CONFIG_HOME", home.join(".config"))
        .with("XDG_CACHE_HOME", home.join(".cache"))
        .with("XDG_STATE_HOME", home.join(".local/state"))
        .with("XDG_DATA_HOME", home.join(".local/share"))
        .with("GIT_CONFIG_GLOBAL", home.join(".gitconfig"))
        .with("GIT_CONFIG_NOSYSTEM", "1")
        .with("LANG", "C.UTF-8")
}

/// The environment the library's in-process calls get: none. A test that wants a model or
/// a home says so with [`Environment::with`].
pub(crate) fn environment() -> Environment {
    Environment::empty()
}

/// A command that installs the tests' helpers with the user's own environment (registry
/// settings, proxies, CA bundles); never the subject of an assertion.
pub(crate) fn setup_command(program: impl AsRef<OsStr>) -> Command {
    Command::new(program)
}

/// The sealed `HOME` of this test process: fresh for each run, under the target
/// directory, holding only [`GITCONFIG`]. Homes of earlier runs whose process is gone are
/// removed.
pub(crate) fn home() -> &'static Path {
    static HOME: OnceLock<PathBuf> = OnceLock::new();
    HOME.get_or_init(|| {
        let parent = Path::new(env!("CARGO_TARGET_TMPDIR"));
        remove_stale_homes(parent);
        let home = parent.join(format!("sealed-home-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&home);
        std::fs::create_dir_all(home.join(".config")).expect("the sealed home");
        std::fs::write(home.join(".gitconfig"), GITCONFIG).expect("the sealed git config");
        home
    })
}

fn remove_stale_homes(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("sealed-home-"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[test]
fn a_sealed_child_sees_none_of_the_users_variables() {
    // Whatever this process was started with (a lived-in home in `.ci/run`'s second
    // pass), the child sees only the sealed variables.
    let out = command("env").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut names: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_once('=').map(|(n, _)| n))
        .collect();
    names.sort_unstable();
    let mut allowed = vec![
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_NOSYSTEM",
        "HOME",
        "LANG",
        "XDG_CACHE_HOME",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
    ];
    allowed.extend(KEPT.iter().filter(|k| std::env::var_os(k).is_some()));
    if std::env::var_os(DOCKER_HOST_FOR_TESTS).is_some_and(|h| !h.is_empty()) {
        allowed.push("DOCKER_HOST");
    }
    // `env` itself may add `_` or `PWD` on some systems: neither comes from the user.
    names.retain(|n| !matches!(*n, "_" | "PWD" | "SHLVL"));
    allowed.sort_unstable();
    assert_eq!(names, allowed, "{text}");
    assert!(
        text.contains(&format!("HOME={}\n", home().display())),
        "{text}"
    );
}

#[test]
fn sealed_git_signs_nothing_runs_no_hook_and_names_main() {
    let dir = crate::support::TempDir::new("sealed-git");
    let git = |args: &[&str]| {
        let out = command("git")
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    git(&["init", "-q"]);
    std::fs::write(dir.path().join("a.txt"), "a").unwrap();
    git(&["add", "a.txt"]);
    git(&["commit", "-q", "-m", "one"]);
    assert_eq!(git(&["branch", "--show-current"]).trim(), "main");
    assert_eq!(
        git(&["config", "--show-origin", "user.email"]).trim(),
        format!(
            "file:{}\ttests@code-intel.invalid",
            home().join(".gitconfig").display()
        )
    );
}
