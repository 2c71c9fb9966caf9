//! `--unsafe-local`'s confinement through the real `agent-runner` (issue 34: a workspace
//! "where no worker can reach it"): a worker script that tries to read, append to and
//! unmount a hidden directory (also from a nested user namespace), read a hidden file and
//! its parent's command line finds all of it refused while its work in the repository
//! succeeds; the same as an unprivileged user (uid 65534), or, where that user may not make
//! user namespaces, the fail-closed error; a machine without a working `unshare` runs
//! nothing; bad `--hide` paths are refused by key; and a timeout or the command's end
//! stops what it started even after `setsid`.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use code_intel::runner::{Cancel, Ending, LocalSandbox, Sandbox};
use serde_json::Value;

use crate::agent_runner_cli::task_dir;
use crate::runner_sandbox::write_script;
use crate::support::TempDir;

/// A line on the test's stderr: which case the machine allowed, how long it took.
fn say(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_agent-runner"))
}

const SECRET: &str = "the workspace's journal, not the worker's";
const TOKEN: &str = "{\"token\": \"daemon-secret-0123\"}";

/// A worker that tries everything a worker on this machine could to reach the hidden
/// directory `@DIR@` and file `@FILE@`, writes what happened to `probe.txt` in the
/// repository (its working directory), then does its work.
const PROBING_AGENT: &str = r#"#!/bin/sh
cat > /dev/null
d='@DIR@'
f='@FILE@'
{
  if umount "$d" 2>&1; then echo "umount: done"; else echo "umount: refused"; fi
  if unshare --user --map-root-user --mount sh -c 'umount "$1"; cat "$1/journal.jsonl"' sh "$d" 2>&1
  then echo "nested: read"; else echo "nested: refused"; fi
  if cat "$d/journal.jsonl" 2>&1; then echo "read: done"; else echo "read: refused"; fi
  if ls "$d" 2>&1; then echo "list: done"; else echo "list: refused"; fi
  if echo forged >> "$d/journal.jsonl"; then echo "append: done"; else echo "append: refused"; fi
  if cat "$f" 2>&1; then echo "file: read"; else echo "file: refused"; fi
  if echo forged >> "$f"; then echo "file append: done"; else echo "file append: refused"; fi
  echo "parent $PPID: $(tr '\0' ' ' < /proc/$PPID/cmdline)"
  for c in /proc/[0-9]*/cmdline; do echo "process: $(tr '\0' ' ' < "$c")"; done
} > probe.txt 2>&1
printf 'Hello, world!\n' > hello.txt
echo 'Wrote hello.txt.'
"#;

fn task(id: &str) -> String {
    format!(
        "version: 1\ntask:\n  id: {id}\n  title: Say hello\n  repo: repo\n  prd:\n    text: |\n      - hello.txt says hello\n  test:\n    command: 'grep -q Hello hello.txt'\n    timeout_sec: 30\nrunner:\n  max_loops: 3\n  meta: {{kind: mock}}\n  worker:\n    kind: command\n    command: [./agent.sh]\n    max_run_time_sec: 30\n"
    )
}

/// A task directory (see `task_dir`) with the probing agent, a hidden directory `ws/`
/// holding `journal.jsonl` and a hidden file `daemon.json` beside it: the directory and
/// the file.
fn probing_fixture(name: &str) -> (TempDir, PathBuf, PathBuf) {
    let dir = task_dir(name, "", &task(name));
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("journal.jsonl"), SECRET).unwrap();
    let token = dir.path().join("daemon.json");
    std::fs::write(&token, TOKEN).unwrap();
    let agent = PROBING_AGENT
        .replace("@DIR@", &ws.display().to_string())
        .replace("@FILE@", &token.display().to_string());
    write_script(&dir.path().join("agent.sh"), &agent);
    (dir, ws, token)
}

fn command(dir: &Path, args: &[&str]) -> Command {
    let mut command = crate::sealed::command(binary());
    command
        .args(args)
        .current_dir(dir)
        .env("HOME", dir.join("home"))
        .stdin(Stdio::null());
    command
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn result(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("result.json")).unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// The run completed; everything the agent tried against the hidden paths was refused
/// and left them as they were; its parent and every process it saw are the namespace's.
fn assert_confined(dir: &Path, ws: &Path, token: &Path, o: &Output) {
    assert_eq!(o.status.code(), Some(0), "{}", text(o));
    assert_eq!(result(dir)["status"], "complete");
    let probe = std::fs::read_to_string(dir.join("repo/probe.txt")).unwrap();
    for refused in [
        "umount: refused",
        "nested: refused",
        "read: refused",
        "list: refused",
        "append: refused",
        "file: refused",
        "file append: refused",
    ] {
        assert!(probe.contains(refused), "{refused}:\n{probe}");
    }
    assert!(
        !probe.contains(SECRET) && !probe.contains("daemon-secret"),
        "{probe}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("journal.jsonl")).unwrap(),
        SECRET
    );
    assert_eq!(std::fs::read_to_string(token).unwrap(), TOKEN);
    // Not the runner's command line (`--result-file`, the run's files), not any process
    // outside the namespace.
    let parent = probe.lines().find(|l| l.starts_with("parent ")).unwrap();
    assert!(!parent.contains("--result-file"), "{parent}");
    let processes: Vec<&str> = probe
        .lines()
        .filter(|l| l.starts_with("process: "))
        .collect();
    assert!(
        processes.len() <= 6
            && !processes
                .iter()
                .any(|p| p.contains("--result-file") || p.contains("cargo")),
        "{processes:#?}"
    );
    // The work in the repository was done.
    assert!(dir.join("repo/hello.txt").is_file());
}

#[test]
fn an_unsafe_local_worker_cannot_reach_hidden_paths_its_parent_or_the_mounts() {
    let (dir, ws, token) = probing_fixture("confine-root");
    let started = Instant::now();
    let o = command(
        dir.path(),
        &[
            "task.yaml",
            "--unsafe-local",
            "--hide",
            ws.to_str().unwrap(),
            "--hide",
            token.to_str().unwrap(),
            "--result-file",
            "result.json",
        ],
    )
    .output()
    .unwrap();
    assert_confined(dir.path(), &ws, &token, &o);
    say(&format!("a confined task took {:?}", started.elapsed()));
}

/// Gives `path` and everything under it to `uid`:`gid`.
fn chown_all(path: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(gid)).unwrap();
    if path.is_dir() && !path.is_symlink() {
        for entry in std::fs::read_dir(path).unwrap() {
            chown_all(&entry.unwrap().path(), uid, gid);
        }
    }
}

#[test]
fn an_unprivileged_worker_is_confined_through_user_namespaces_or_runs_nothing() {
    const NOBODY: u32 = 65534;
    if !nix::unistd::geteuid().is_root() {
        // Then every other test here already runs the user-namespace way.
        say("not root: the other confinement tests run as this user already");
        return;
    }
    let (dir, ws, token) = probing_fixture("confine-nobody");
    chown_all(dir.path(), NOBODY, NOBODY);
    // Whether this machine lets an unprivileged user make the namespaces at all, asked of
    // the kernel directly, decides which outcome is right.
    let allowed = crate::sealed::command("unshare")
        .args([
            "--user",
            "--map-root-user",
            "--mount",
            "--pid",
            "--fork",
            "true",
        ])
        .uid(NOBODY)
        .gid(NOBODY)
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success());
    let o = command(
        dir.path(),
        &[
            "task.yaml",
            "--unsafe-local",
            "--hide",
            ws.to_str().unwrap(),
            "--hide",
            token.to_str().unwrap(),
            "--result-file",
            "result.json",
        ],
    )
    .uid(NOBODY)
    .gid(NOBODY)
    .output()
    .unwrap();
    if allowed {
        say(&format!(
            "uid {NOBODY} may make user namespaces here: its worker must be confined"
        ));
        assert_confined(dir.path(), &ws, &token, &o);
        // The worker ran as that user, not as root.
        let meta = std::fs::metadata(dir.path().join("repo/hello.txt")).unwrap();
        assert_eq!(std::os::unix::fs::MetadataExt::uid(&meta), NOBODY);
    } else {
        say(&format!(
            "uid {NOBODY} may not make user namespaces here: nothing may run"
        ));
        assert_fails_closed(dir.path(), &o);
    }
}

/// The task failed before any worker ran, saying why with the key and the way out.
fn assert_fails_closed(dir: &Path, o: &Output) {
    assert_eq!(o.status.code(), Some(1), "{}", text(o));
    let result = result(dir);
    assert_eq!(result["status"], "failed", "{result}");
    let summary = result["summary"].as_str().unwrap_or_default();
    assert!(
        summary.contains("sandbox.confinement_unavailable") && summary.contains("Docker"),
        "{summary}"
    );
    assert!(
        result["runs"].as_array().is_none_or(Vec::is_empty),
        "{result}"
    );
    assert!(!dir.join("repo/probe.txt").exists() && !dir.join("repo/hello.txt").exists());
}

#[test]
fn without_a_working_unshare_nothing_runs_unconfined() {
    let (dir, ws, _) = probing_fixture("confine-refused");
    // An `unshare` first on PATH that is refused, as where namespaces are not allowed.
    let fake = dir.path().join("fake-bin");
    write_script(
        &fake.join("unshare"),
        "#!/bin/sh\necho 'unshare: unshare failed: Operation not permitted' >&2\nexit 1\n",
    );
    let path = format!(
        "{}:{}",
        fake.display(),
        crate::sealed::child_environment()
            .var("PATH")
            .unwrap_or_default()
    );
    let o = command(
        dir.path(),
        &[
            "task.yaml",
            "--unsafe-local",
            "--hide",
            ws.to_str().unwrap(),
            "--result-file",
            "result.json",
        ],
    )
    .env("PATH", path)
    .output()
    .unwrap();
    assert_fails_closed(dir.path(), &o);
    let summary = result(dir.path())["summary"].to_string();
    assert!(summary.contains("Operation not permitted"), "{summary}");
    assert_eq!(
        std::fs::read_to_string(ws.join("journal.jsonl")).unwrap(),
        SECRET
    );
}

#[test]
fn a_hide_path_that_cannot_be_hidden_is_refused_by_key() {
    let (dir, ws, _) = probing_fixture("confine-bad-hide");
    let repo = dir.path().join("repo");
    let cases: [(Vec<&str>, &str); 5] = [
        (vec!["--unsafe-local", "--hide", "ws"], "hide.not_absolute"),
        (
            vec!["--unsafe-local", "--hide", dir.path().to_str().unwrap()],
            "hide.overlaps_repository",
        ),
        (
            vec!["--unsafe-local", "--hide", repo.to_str().unwrap()],
            "hide.overlaps_repository",
        ),
        (
            vec!["--unsafe-local", "--hide", "/no/such/dir"],
            "hide.not_found",
        ),
        (
            vec!["--hide", ws.to_str().unwrap()],
            "hide.needs_unsafe_local",
        ),
    ];
    for (args, key) in cases {
        let mut all = vec!["task.yaml"];
        all.extend(args.iter().copied());
        let o = command(dir.path(), &all).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.trim_end().ends_with(&format!("[{key}]")),
            "{args:?}: {err}"
        );
    }
    assert!(!repo.join("probe.txt").exists());
}

#[test]
fn what_a_local_command_starts_ends_with_it_even_after_setsid() {
    let dir = TempDir::new("confine-setsid");
    let repo = dir.path().join("repo");
    crate::support::git_repo(&repo, &[("README.md", "# repo\n")]);
    let mut sandbox = LocalSandbox::new(&repo)
        .unwrap()
        .with_grace(Duration::from_millis(200));
    let cancel = Cancel::new();
    sandbox.start(&cancel).unwrap();
    let sh = |script: String| vec!["sh".to_string(), "-c".to_string(), script];
    // A timeout: the command's process group is stopped, and a process that left it
    // (`setsid`) goes with the namespace.
    let timed = dir.path().join("after-timeout");
    let out = sandbox
        .exec(
            &sh(format!(
                "setsid sh -c 'sleep 1; touch {}' & sleep 30",
                timed.display()
            )),
            &[],
            None,
            Some(Duration::from_millis(300)),
            &cancel,
        )
        .unwrap();
    assert_eq!(out.ending, Ending::TimedOut);
    // A command that ends on its own leaves nothing behind either.
    let left = dir.path().join("left-behind");
    let out = sandbox
        .exec(
            &sh(format!(
                "setsid sh -c 'sleep 1; touch {}' &",
                left.display()
            )),
            &[],
            None,
            None,
            &cancel,
        )
        .unwrap();
    assert_eq!(out.ending, Ending::Exited(0));
    std::thread::sleep(Duration::from_millis(1800));
    assert!(!timed.exists(), "a setsid process outlived the timeout");
    assert!(!left.exists(), "a setsid process outlived its command");
    // A program that cannot start is still said as such, not as the wrapper's exit.
    let e = sandbox
        .exec(
            &["./no-such-agent.sh".to_string()],
            &[],
            None,
            None,
            &cancel,
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("there is no file `./no-such-agent.sh`"), "{e}");
    write_script(&repo.join("orphan.sh"), "#!/no/such/interpreter\n");
    let e = sandbox
        .exec(&["./orphan.sh".to_string()], &[], None, None, &cancel)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the interpreter on its `#!` line does not exist"),
        "{e}"
    );
    sandbox.stop().unwrap();
}
