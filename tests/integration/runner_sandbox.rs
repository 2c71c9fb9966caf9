//! AgentRunner's worker side at its boundary, offline: a fake `docker` (a shell script
//! that logs its argv and plays a container by running exec'd commands on the host, in a
//! session of their own as a container's processes would be) and scripted fake coding
//! agents in temporary git repositories. The recorded docker call sequences are golden;
//! the timeout and cancel tests check that the "in-container" process is really gone.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use code_intel::runner::Cancel;
use code_intel::runner::Ending;
use code_intel::runner::{
    DockerOptions, DockerSandbox, HostFacts, LocalSandbox, Sandbox, SandboxSpec,
};
use code_intel::runner::{Invocation, WorkerConfig, WorkerKind};
use code_intel::runner::{RunEnding, RunIds, WorkerTurn, run_test_command, run_worker};
use code_intel::runner::{Target, preflight};

use crate::support::TempDir;

pub(crate) fn write_script(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The fake docker CLI. Its state lives in `state/`: `log` (one record per call, args
/// separated by \x1f, records by \x1e), marker files `no-daemon`, `image-present` and
/// `fail-run`, and `containers/<name>/repo`.
const FAKE_DOCKER: &str = r#"#!/bin/sh
S='@STATE@'
us=$(printf '\037')
rec=
for a; do rec="$rec$a$us"; done
printf '%s\036' "$rec" >> "$S/log"
cmd=$1; shift
case "$cmd" in
version)
  if [ -e "$S/no-daemon" ]; then
    echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" >&2
    exit 1
  fi
  echo 27.3.1 ;;
image)
  for last; do :; done
  if [ ! -e "$S/image-present" ]; then echo "Error response from daemon: No such image: $last" >&2; exit 1; fi
  echo sha256:fake ;;
run)
  name=; repo=
  while [ $# -gt 0 ]; do
    case $1 in
      --name) name=$2; shift 2;;
      -v) case $2 in *:/workspace/project) repo=${2%:/workspace/project};; esac; shift 2;;
      --label|-w|-e|--memory|--memory-swap|--cpus|--pids-limit|--network|--security-opt|--cap-drop|--cap-add|--user|--tmpfs|--entrypoint) shift 2;;
      -*) shift;;
      *) break;;
    esac
  done
  if [ -e "$S/fail-run" ]; then echo "docker: Error response from daemon: Conflict." >&2; exit 125; fi
  mkdir -p "$S/containers/$name"
  printf '%s' "$repo" > "$S/containers/$name/repo"
  echo "0123456789abcdef" ;;
exec)
  user=
  while [ $# -gt 0 ]; do
    case $1 in
      -i) shift;;
      -e|-w) shift 2;;
      -u) user=$2; shift 2;;
      *) break;;
    esac
  done
  name=$1; shift
  if [ ! -d "$S/containers/$name" ]; then echo "Error response from daemon: No such container: $name" >&2; exit 1; fi
  # As root: the runner's setup of the image (a passwd entry), which must not touch this host.
  [ "$user" = 0 ] && exit 0
  repo=$(cat "$S/containers/$name/repo")
  # The container's paths on this host: the repository, and /tmp (the runner's pid files)
  # in the fake's state, so no test leaves files in the host's /tmp.
  mkdir -p "$S/tmp"
  for a; do shift; case $a in /workspace/project*) a="$repo${a#/workspace/project}";; /tmp/*) a="$S/tmp/${a#/tmp/}";; esac; set -- "$@" "$a"; done
  cd "$repo" || exit 126
  # A container's processes are not the docker client's children: killing the client
  # must not reach them, so they get a session of their own.
  exec setsid -w "$@" ;;
pause|unpause)
  for last; do :; done
  if [ ! -d "$S/containers/$last" ]; then echo "Error response from daemon: No such container: $last" >&2; exit 1; fi
  if [ "$cmd" = pause ]; then touch "$S/containers/$last/paused"; else rm -f "$S/containers/$last/paused"; fi ;;
kill)
  for last; do :; done
  if [ ! -d "$S/containers/$last" ]; then echo "Error response from daemon: No such container: $last" >&2; exit 1; fi
  touch "$S/containers/$last/killed" ;;
rm)
  for last; do :; done
  if [ ! -d "$S/containers/$last" ]; then echo "Error response from daemon: No such container: $last" >&2; exit 1; fi
  rm -rf "$S/containers/$last" ;;
*)
  echo "fake docker: unsupported command $cmd" >&2; exit 1 ;;
esac
"#;

pub(crate) struct FakeDocker {
    pub(crate) program: PathBuf,
    state: PathBuf,
}

impl FakeDocker {
    pub(crate) fn new(dir: &Path) -> FakeDocker {
        let state = dir.join("docker-state");
        std::fs::create_dir_all(state.join("containers")).unwrap();
        let program = dir.join("bin/docker");
        write_script(
            &program,
            &FAKE_DOCKER.replace("@STATE@", &state.display().to_string()),
        );
        FakeDocker { program, state }
    }

    pub(crate) fn mark(&self, marker: &str) {
        std::fs::write(self.state.join(marker), "").unwrap();
    }

    pub(crate) fn calls(&self) -> Vec<Vec<String>> {
        let log = std::fs::read_to_string(self.state.join("log")).unwrap_or_default();
        log.split('\x1e')
            .filter(|r| !r.is_empty())
            .map(|r| {
                r.split('\x1f')
                    .filter(|a| !a.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .collect()
    }

    fn raw_log(&self) -> String {
        std::fs::read_to_string(self.state.join("log")).unwrap_or_default()
    }

    /// The calls with the unique and host-specific parts replaced by placeholders.
    pub(crate) fn sequence(&self, name: &str, repo: &Path) -> Vec<String> {
        let repo = repo.display().to_string();
        self.calls()
            .iter()
            .map(|call| {
                call.iter()
                    .map(|a| {
                        if a == name {
                            "<name>".to_string()
                        } else if a.starts_with("agent-runner-TASK-9-b-") {
                            // Another container of the task: the test command's fresh one.
                            "<fresh>".to_string()
                        } else if a.contains('\n') {
                            "<script>".to_string()
                        } else if a.starts_with("/tmp/agent-runner-") && a.ends_with(".pid") {
                            "<pidfile>".to_string()
                        } else {
                            a.replace(&repo, "<repo>")
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    fn options(&self, repo: &Path) -> DockerOptions {
        DockerOptions {
            program: self.program.display().to_string(),
            task_id: "TASK 9/b".to_string(),
            run_label: None,
            repo: repo.to_path_buf(),
            image: "agent-runner-codex:test".to_string(),
            mounts: Vec::new(),
            grace: Duration::from_secs(1),
            policy: SandboxSpec::default()
                .resolve(&HostFacts {
                    memory_bytes: Some(16 << 30),
                    cores: 2,
                    uid: 1000,
                    gid: 1000,
                })
                .unwrap(),
            env: crate::sealed::child_environment(),
        }
    }

    pub(crate) fn container_exists(&self, name: &str) -> bool {
        self.state.join("containers").join(name).exists()
    }
}

/// A temporary git repository with one commit: `hello.txt`, `notes.txt` and
/// `untouched.txt`, with `notes.txt` and `untouched.txt` then made dirty.
fn git_repo(dir: &Path) -> PathBuf {
    let repo_dir = dir.join("repo");
    std::fs::create_dir_all(repo_dir.join("sub")).unwrap();
    let repo = git2::Repository::init(&repo_dir).unwrap();
    for (file, text) in [
        ("hello.txt", "hello\n"),
        ("notes.txt", "notes\n"),
        ("untouched.txt", "same\n"),
        ("sub/keep.txt", "k\n"),
    ] {
        std::fs::write(repo_dir.join(file), text).unwrap();
    }
    let mut index = repo.index().unwrap();
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let who = git2::Signature::now("test", "test@example.com").unwrap();
    repo.commit(Some("HEAD"), &who, &who, "initial", &tree, &[])
        .unwrap();
    // Dirty before the worker runs: one it changes again, one it leaves alone.
    std::fs::write(repo_dir.join("notes.txt"), "notes\nmine\n").unwrap();
    std::fs::write(repo_dir.join("untouched.txt"), "same\nmine\n").unwrap();
    repo_dir
}

/// A fake Codex CLI: records its argv and prompt outside the repository, edits
/// `hello.txt` and `notes.txt`, adds `added.txt`, prints a Codex `exec --json` stream,
/// and exits with `$FAKE_EXIT`.
const FAKE_CODEX: &str = r#"#!/bin/sh
printf '%s\n' "$@" > "$FAKE_RECORD.args"
cat > "$FAKE_RECORD.prompt"
echo "fixed" >> hello.txt
echo "again" >> notes.txt
echo "new" > added.txt
echo '{"type":"thread.started","thread_id":"t-1"}'
echo '{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Looking at hello.txt."}}'
echo '{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"ls","exit_code":0}}'
echo '{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Fixed hello.txt and added added.txt."}}'
echo '{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":5}}'
echo "codex: done" >&2
exit "${FAKE_EXIT:-0}"
"#;

/// A worker config whose CLI is the fake `codex` in `bin`.
fn fake_codex_config(dir: &Path, exit: i32) -> WorkerConfig {
    let bin = dir.join("agent-bin");
    write_script(&bin.join("codex"), FAKE_CODEX);
    let mut config = WorkerConfig::default();
    config.env.insert(
        "PATH".to_string(),
        format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display()),
    );
    config.env.insert(
        "FAKE_RECORD".to_string(),
        dir.join("record").display().to_string(),
    );
    config.env.insert("FAKE_EXIT".to_string(), exit.to_string());
    config.max_run_time_sec = 60;
    config
}

fn no_host_env(_: &str) -> Option<String> {
    None
}

fn invocation() -> Invocation {
    Invocation {
        prompt: "Fix hello.txt".to_string(),
        ..Invocation::default()
    }
}

/// Whether a process is running (a zombie counts as gone).
fn alive(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{}/status", pid.trim())) {
        Ok(status) => !status
            .lines()
            .any(|l| l.starts_with("State:") && l.contains('Z')),
        Err(_) => false,
    }
}

/// Waits up to a few seconds for a file a script writes.
fn read_when_there(path: &Path) -> String {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && !text.trim().is_empty()
        {
            return text.trim().to_string();
        }
        assert!(Instant::now() < until, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn argv(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_string()).collect()
}

const RUN_LINE: &str = "run -d --init --pull=never --name <name> --label created-by=agent-runner --label agent-runner.task=TASK 9/b -v <repo>:/workspace/project -w /workspace/project \
    --memory 8589934592 --memory-swap 8589934592 --cpus 2 --pids-limit 4096 --network bridge --security-opt no-new-privileges --cap-drop ALL --user 1000:1000 \
    -e HOME=/home/agent -e IS_SANDBOX=1 --tmpfs /home/agent:rw,exec,nosuid,uid=1000,gid=1000,mode=0700 \
    -e GIT_CONFIG_COUNT=1 -e GIT_CONFIG_KEY_0=safe.directory -e GIT_CONFIG_VALUE_0=/workspace/project \
    agent-runner-codex:test sleep infinity";
/// After the start: the run user gets a name in the image's /etc/passwd.
const PASSWD_LINE: &str = "exec -u 0 <name> sh -c <script>";

#[test]
fn b9_container_is_named_labelled_and_removed() {
    let dir = TempDir::new("b9");
    let docker = FakeDocker::new(dir.path());
    let repo = git_repo(dir.path());
    let config = fake_codex_config(dir.path(), 0);
    let mut sandbox = DockerSandbox::new(docker.options(&repo)).unwrap();
    let name = sandbox.name().to_string();
    assert!(name.starts_with("agent-runner-TASK-9-b-"), "{name}");
    let cancel = Cancel::new();
    sandbox.start(&cancel).unwrap();
    assert!(docker.container_exists(&name));

    let mut ids = RunIds::new();
    let turn = WorkerTurn {
        config: &config,
        invocation: &invocation(),
        repo: &repo,
        host_env: &no_host_env,
    };
    let run = run_worker(&mut sandbox, &turn, &mut ids, &cancel);
    assert_eq!(run.error, None);
    assert_eq!(run.exit_code, Some(0));
    assert_eq!(run.summary, "Fixed hello.txt and added added.txt.");
    assert_eq!(run.files_changed, ["added.txt", "hello.txt", "notes.txt"]);
    let test = run_test_command(&mut sandbox, "grep -q fixed hello.txt", None, None, &cancel);
    assert!(test.passed(), "{test:?}");
    assert_eq!(test.cwd, "/workspace/project");
    sandbox.stop().unwrap();
    assert!(
        !docker.container_exists(&name),
        "the container was not removed"
    );

    assert_eq!(
        docker.sequence(&name, &repo),
        vec![
            RUN_LINE.to_string(),
            PASSWD_LINE.to_string(),
            "exec -i -e FAKE_EXIT -e FAKE_RECORD -e PATH <name> sh -c <script> agent-runner-exec <pidfile> codex exec --json --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check -C /workspace/project --model=gpt-5.1-codex -c model_reasoning_effort=medium -".to_string(),
            // The test command runs in a fresh container with the worker's frozen.
            "pause <name>".to_string(),
            RUN_LINE.replace("<name>", "<fresh>"),
            PASSWD_LINE.replace("<name>", "<fresh>"),
            "exec <fresh> sh -c <script> agent-runner-exec <pidfile> sh -c <script> agent-runner-test /workspace/project grep -q fixed hello.txt".to_string(),
            "rm -f <fresh>".to_string(),
            "unpause <name>".to_string(),
            "rm -f <name>".to_string(),
        ]
    );
    // The prompt went through stdin, not the argv.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("record.prompt")).unwrap(),
        "Fix hello.txt"
    );
}

#[test]
fn b8_stop_after_an_error_still_removes_the_container() {
    let dir = TempDir::new("b8");
    let docker = FakeDocker::new(dir.path());
    let repo = git_repo(dir.path());
    let cancel = Cancel::new();

    // An exec that fails because the container went away behind our back.
    let mut sandbox = DockerSandbox::new(docker.options(&repo)).unwrap();
    let name = sandbox.name().to_string();
    sandbox.start(&cancel).unwrap();
    let out = sandbox
        .exec(&argv(&["sh", "-c", "exit 0"]), &[], None, None, &cancel)
        .unwrap();
    assert_eq!(out.ending, Ending::Exited(0));
    std::fs::remove_dir_all(docker.state.join("containers").join(&name)).unwrap();
    let out = sandbox
        .exec(&argv(&["true"]), &[], None, None, &cancel)
        .unwrap();
    assert_eq!(out.ending, Ending::Exited(1));
    assert!(out.stderr.text().contains("No such container"));
    // The finalizer still runs its `rm -f`, and "no such container" is not a failure.
    sandbox.stop().unwrap();
    assert_eq!(
        docker.sequence(&name, &repo)[2..],
        [
            "exec <name> sh -c <script> agent-runner-exec <pidfile> sh -c exit 0",
            "exec <name> sh -c <script> agent-runner-exec <pidfile> true",
            "rm -f <name>",
        ]
    );

    // A `docker run` that fails may still have created the container: stop removes it.
    let docker = FakeDocker::new(&dir.path().join("second"));
    docker.mark("fail-run");
    let mut sandbox = DockerSandbox::new(docker.options(&repo)).unwrap();
    let name = sandbox.name().to_string();
    let err = sandbox.start(&cancel).unwrap_err();
    assert!(
        err.to_string().contains("could not start the container"),
        "{err}"
    );
    assert!(err.to_string().contains("Conflict"), "{err}");
    let err = sandbox
        .exec(&argv(&["true"]), &[], None, None, &cancel)
        .unwrap_err();
    assert!(err.to_string().contains("not running"), "{err}");
    sandbox.stop().unwrap();
    assert_eq!(docker.sequence(&name, &repo), [RUN_LINE, "rm -f <name>"]);

    // Dropped without `stop` (an early return or a panic): removed all the same.
    let docker = FakeDocker::new(&dir.path().join("third"));
    let mut sandbox = DockerSandbox::new(docker.options(&repo)).unwrap();
    let name = sandbox.name().to_string();
    sandbox.start(&cancel).unwrap();
    drop(sandbox);
    assert!(!docker.container_exists(&name));
    assert_eq!(
        docker.sequence(&name, &repo),
        [RUN_LINE, PASSWD_LINE, "rm -f <name>"]
    );
}

/// Runs a fake agent that sleeps forever (with a child of its own) in the fake container
/// until `stop` ends it, and checks both processes are gone afterwards.
fn assert_killed_inside(
    dir: &TempDir,
    script: &str,
    stop: impl FnOnce(&Cancel) -> Option<Duration>,
    expected: Ending,
) {
    let docker = FakeDocker::new(dir.path());
    let repo = git_repo(dir.path());
    let mut sandbox = DockerSandbox::new(docker.options(&repo)).unwrap();
    let name = sandbox.name().to_string();
    let cancel = Cancel::new();
    sandbox.start(&cancel).unwrap();
    let agent_pid = dir.path().join("agent.pid");
    let child_pid = dir.path().join("child.pid");
    let script = script
        .replace("@AGENT@", &agent_pid.display().to_string())
        .replace("@CHILD@", &child_pid.display().to_string());
    let timeout = stop(&cancel);
    let started = Instant::now();
    let out = sandbox
        .exec(&argv(&["sh", "-c", &script]), &[], None, timeout, &cancel)
        .unwrap();
    let took = started.elapsed();
    assert_eq!(out.ending, expected);
    assert!(took < Duration::from_secs(15), "the exec took {took:?}");
    let agent = read_when_there(&agent_pid);
    let child = read_when_there(&child_pid);
    // The kill has finished before exec returns; allow the kernel a moment to reap.
    let until = Instant::now() + Duration::from_secs(5);
    while (alive(&agent) || alive(&child)) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survivors: Vec<&String> = [&agent, &child].into_iter().filter(|p| alive(p)).collect();
    for pid in &survivors {
        // Not left behind when this test fails.
        let _ = crate::sealed::command("kill")
            .args(["-KILL", pid.as_str()])
            .status();
    }
    assert!(
        survivors.is_empty(),
        "{survivors:?} (agent {agent}, its child {child}) survived inside the sandbox"
    );
    sandbox.stop().unwrap();
    assert_eq!(
        docker.sequence(&name, &repo)[2..],
        [
            "exec <name> sh -c <script> agent-runner-exec <pidfile> sh -c <script>".to_string(),
            "exec <name> sh -c <script> agent-runner-kill <pidfile> 1".to_string(),
            "rm -f <name>".to_string(),
        ]
    );
}

const SLEEPY_AGENT: &str = "echo $$ > @AGENT@\nsleep 120 &\necho $! > @CHILD@\nwait";

#[test]
fn b10_timeout_kills_the_process_inside_the_sandbox() {
    let dir = TempDir::new("b10");
    assert_killed_inside(
        &dir,
        SLEEPY_AGENT,
        |_| Some(Duration::from_millis(300)),
        Ending::TimedOut,
    );
}

#[test]
fn b10_an_agent_ignoring_term_is_killed_after_the_grace() {
    let dir = TempDir::new("b10-trap");
    let script = format!("trap '' TERM\n{SLEEPY_AGENT}");
    assert_killed_inside(
        &dir,
        &script,
        |_| Some(Duration::from_millis(300)),
        Ending::TimedOut,
    );
}

#[test]
fn a_cancel_mid_exec_kills_the_process_inside_the_sandbox() {
    let dir = TempDir::new("cancel");
    assert_killed_inside(
        &dir,
        SLEEPY_AGENT,
        |cancel| {
            let trigger = cancel.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                trigger.cancel();
            });
            None
        },
        Ending::Cancelled,
    );
}

#[test]
fn stop_twice_removes_once() {
    let dir = TempDir::new("stop-twice");
    let docker = FakeDocker::new(dir.path());
    let repo = git_repo(dir.path());
    let mut sandbox = DockerSandbox::new(docker.options(&repo)).unwrap();
    let name = sandbox.name().to_string();
    sandbox.start(&Cancel::new()).unwrap();
    sandbox.start(&Cancel::new()).unwrap();
    sandbox.stop().unwrap();
    sandbox.stop().unwrap();
    assert!(sandbox.start(&Cancel::new()).is_err());
    drop(sandbox);
    assert_eq!(
        docker.sequence(&name, &repo),
        [RUN_LINE, PASSWD_LINE, "rm -f <name>"]
    );

    // Never started: nothing to remove, no docker call at all.
    let mut sandbox = DockerSandbox::new(docker.options(&repo)).unwrap();
    sandbox.stop().unwrap();
    drop(sandbox);
    assert_eq!(docker.calls().len(), 3);
}

#[test]
fn m27_env_values_are_not_in_any_argv() {
    let dir = TempDir::new("m27");
    let docker = FakeDocker::new(dir.path());
    let repo = git_repo(dir.path());
    let mut sandbox = DockerSandbox::new(docker.options(&repo)).unwrap();
    let cancel = Cancel::new();
    sandbox.start(&cancel).unwrap();
    let secret = "hunter2-very-secret-value";
    let seen = dir.path().join("seen");
    let script = format!("printf %s \"$SECRET_TOKEN\" > {}", seen.display());
    let out = sandbox
        .exec(
            &argv(&["sh", "-c", &script]),
            &[("SECRET_TOKEN".to_string(), secret.to_string())],
            None,
            None,
            &cancel,
        )
        .unwrap();
    assert_eq!(out.ending, Ending::Exited(0));
    assert_eq!(std::fs::read_to_string(&seen).unwrap(), secret);
    sandbox.stop().unwrap();
    let log = docker.raw_log();
    assert!(
        !log.contains(secret),
        "an env value reached the docker argv"
    );
    assert!(
        docker.calls()[2]
            .windows(2)
            .any(|w| w == ["-e", "SECRET_TOKEN"])
    );
}

#[test]
fn a_missing_docker_is_an_error_not_a_panic() {
    let dir = TempDir::new("no-docker");
    let repo = git_repo(dir.path());
    let mut options = FakeDocker::new(dir.path()).options(&repo);
    options.program = dir.path().join("no/such/docker").display().to_string();
    let mut sandbox = DockerSandbox::new(options).unwrap();
    let err = sandbox.start(&Cancel::new()).unwrap_err();
    assert!(err.to_string().contains("no/such/docker"), "{err}");
    // The finalizer tries its `rm -f`, fails to run docker, and says so.
    assert!(sandbox.stop().is_err());
}

#[test]
fn a_local_worker_run_is_recorded_with_its_changes() {
    let dir = TempDir::new("local-run");
    let repo = git_repo(dir.path());
    let config = fake_codex_config(dir.path(), 0);
    let mut sandbox = LocalSandbox::new(&repo).unwrap();
    let cancel = Cancel::new();
    sandbox.start(&cancel).unwrap();
    let mut ids = RunIds::new();
    let turn = WorkerTurn {
        config: &config,
        invocation: &invocation(),
        repo: &repo,
        host_env: &no_host_env,
    };
    let run = run_worker(&mut sandbox, &turn, &mut ids, &cancel);
    assert_eq!(run.error, None, "{run:?}");
    assert_eq!(run.id, "run-1");
    assert_eq!(run.exit_code, Some(0));
    assert_eq!(run.ending, RunEnding::Exited);
    assert_eq!(run.summary, "Fixed hello.txt and added added.txt.");
    // notes.txt was dirty before and changed again; untouched.txt was dirty and was not.
    assert_eq!(run.files_changed, ["added.txt", "hello.txt", "notes.txt"]);
    assert!(run.diff_stat.contains("hello.txt"), "{}", run.diff_stat);
    assert!(
        run.diff_stat.contains("3 files changed"),
        "{}",
        run.diff_stat
    );
    assert!(run.stdout_tail.contains("turn.completed"));
    assert_eq!(run.stderr_tail, "codex: done\n");
    assert!(run.started_at.ends_with('Z') && run.finished_at >= run.started_at);
    let args = std::fs::read_to_string(dir.path().join("record.args")).unwrap();
    assert_eq!(
        args.lines().collect::<Vec<_>>(),
        [
            "exec",
            "--json",
            "--dangerously-bypass-approvals-and-sandbox",
            "--skip-git-repo-check",
            "-C",
            &repo.display().to_string(),
            "--model=gpt-5.1-codex",
            "-c",
            "model_reasoning_effort=medium",
            "-"
        ]
    );
    let json = serde_json::to_value(&run).unwrap();
    assert_eq!(json["ending"], "exited");

    // A second run that fails: exit 2, still a record, a fresh id.
    let failing = fake_codex_config(dir.path(), 2);
    let turn = WorkerTurn {
        config: &failing,
        ..turn
    };
    let run = run_worker(&mut sandbox, &turn, &mut ids, &cancel);
    assert_eq!(run.id, "run-2");
    assert_eq!(run.exit_code, Some(2));
    assert_eq!(run.ending, RunEnding::Exited);
    assert_eq!(run.error, None);
    assert_eq!(run.files_changed, ["hello.txt", "notes.txt"]);
    sandbox.stop().unwrap();
}

#[test]
fn a_worker_that_cannot_start_is_a_run_with_an_error() {
    let dir = TempDir::new("no-cli");
    let repo = git_repo(dir.path());
    let mut config = WorkerConfig::default();
    config.env.insert(
        "PATH".to_string(),
        dir.path().join("empty").display().to_string(),
    );
    let mut sandbox = LocalSandbox::new(&repo).unwrap();
    let cancel = Cancel::new();
    sandbox.start(&cancel).unwrap();
    let turn = WorkerTurn {
        config: &config,
        invocation: &invocation(),
        repo: &repo,
        host_env: &no_host_env,
    };
    let run = run_worker(&mut sandbox, &turn, &mut RunIds::new(), &cancel);
    assert_eq!(run.exit_code, None);
    assert_eq!(run.ending, RunEnding::NotStarted);
    let error = run.error.unwrap();
    assert!(
        error.contains("could not run the worker") && error.contains("codex"),
        "{error}"
    );
    assert!(run.files_changed.is_empty());

    // A host variable the config reads but the host lacks: said, nothing run.
    let mut unset = config.clone();
    unset
        .env
        .insert("TOKEN".to_string(), "env:NOT_SET_ANYWHERE".to_string());
    let turn = WorkerTurn {
        config: &unset,
        ..turn
    };
    let run = run_worker(&mut sandbox, &turn, &mut RunIds::new(), &cancel);
    assert!(run.error.unwrap().contains("NOT_SET_ANYWHERE"));
}

#[test]
fn the_test_command_runs_inside_the_sandbox() {
    let dir = TempDir::new("test-command");
    let repo = git_repo(dir.path());
    let mut sandbox = LocalSandbox::new(&repo).unwrap();
    let cancel = Cancel::new();
    sandbox.start(&cancel).unwrap();
    let pass = run_test_command(
        &mut sandbox,
        "test -f hello.txt && echo passing",
        None,
        None,
        &cancel,
    );
    assert!(pass.passed(), "{pass:?}");
    assert_eq!(pass.output_tail, "passing\n");
    assert_eq!(pass.cwd, repo.display().to_string());

    let fail = run_test_command(
        &mut sandbox,
        "ls keep.txt; echo failing >&2; exit 3",
        Some("sub"),
        None,
        &cancel,
    );
    assert!(!fail.passed());
    assert_eq!(fail.exit_code, Some(3));
    assert_eq!(fail.output_tail, "keep.txt\nfailing\n");
    assert!(fail.cwd.ends_with("/sub"));

    let slow = run_test_command(
        &mut sandbox,
        "sleep 30",
        None,
        Some(Duration::from_millis(100)),
        &cancel,
    );
    assert_eq!(slow.ending, RunEnding::TimedOut);
    assert_eq!(slow.exit_code, Some(124));

    let outside = run_test_command(&mut sandbox, "true", Some("../.."), None, &cancel);
    assert_eq!(outside.ending, RunEnding::NotStarted);
    assert!(outside.error.unwrap().contains("leaves the repository"));
}

fn host_env(vars: &[(&str, &Path)]) -> impl Fn(&str) -> Option<String> + use<> {
    let vars: BTreeMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_string(), v.display().to_string()))
        .collect();
    move |key| vars.get(key).cloned()
}

#[test]
fn preflight_reports_docker_image_and_login() {
    let dir = TempDir::new("preflight");
    let docker = FakeDocker::new(dir.path());
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let config = WorkerConfig::default();
    let env = host_env(&[("HOME", &home)]);
    let target = Target::Docker {
        program: docker.program.display().to_string(),
        env: crate::sealed::child_environment(),
    };
    let cancel = Cancel::new();
    let detail = |report: &code_intel::runner::PreflightReport, name: &str| {
        let check = report.checks.iter().find(|c| c.name == name).unwrap();
        (check.ok, check.detail.clone())
    };

    // Missing docker altogether.
    let missing = Target::Docker {
        program: dir.path().join("no/docker").display().to_string(),
        env: crate::sealed::child_environment(),
    };
    let report = preflight(&config, &missing, &env, &cancel);
    assert!(!report.ok());
    let (ok, text) = detail(&report, "docker");
    assert!(
        !ok && text.contains("no/docker") && text.contains("--unsafe-local"),
        "{text}"
    );
    assert!(detail(&report, "image").1.contains("not checked"));

    // A daemon that does not answer.
    docker.mark("no-daemon");
    let report = preflight(&config, &target, &env, &cancel);
    let (ok, text) = detail(&report, "docker");
    assert!(
        !ok && text.contains("Cannot connect to the Docker daemon"),
        "{text}"
    );
    std::fs::remove_file(docker.state.join("no-daemon")).unwrap();

    // The image is missing, and so is the login.
    let report = preflight(&config, &target, &env, &cancel);
    assert!(detail(&report, "docker").0);
    let (ok, text) = detail(&report, "image");
    assert!(!ok);
    assert!(
        text.contains("agent-runner-codex:")
            && text.contains("build it with `agent-runner image build codex`"),
        "{text}"
    );
    // An image of the user's own: pull or build it.
    let own = WorkerConfig {
        docker_image: Some("registry.example/team/codex:7".into()),
        ..WorkerConfig::default()
    };
    let (_, text) = detail(&preflight(&own, &target, &env, &cancel), "image");
    assert!(
        text.contains("docker pull registry.example/team/codex:7"),
        "{text}"
    );
    // A kind with no Dockerfile here: what its image needs, not a pull of a tag nobody
    // publishes.
    let cursor = WorkerConfig {
        kind: WorkerKind::CursorCli,
        ..WorkerConfig::default()
    };
    let (_, text) = detail(&preflight(&cursor, &target, &env, &cancel), "image");
    assert!(
        text.contains("no image is built in for cursor-cli")
            && text.contains("`cursor-agent` on PATH")
            && !text.contains("docker pull"),
        "{text}"
    );
    let (ok, text) = detail(&report, "worker login");
    assert!(
        !ok && text.contains(".codex/auth.json") && text.contains("$CODEX_API_KEY"),
        "{text}"
    );

    // Everything present.
    docker.mark("image-present");
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    std::fs::write(home.join(".codex/auth.json"), "{}").unwrap();
    let report = preflight(&config, &target, &env, &cancel);
    assert!(report.ok(), "{report}");
    assert!(
        detail(&report, "worker login")
            .1
            .contains("/home/agent/.codex/auth.json")
    );
    assert!(detail(&report, "worker CLI").0, "{report}");
    let calls = docker.calls();
    let image = code_intel::runner::images::default_image(WorkerKind::CodexCli);
    assert_eq!(
        calls[calls.len() - 3..],
        [
            argv(&["version", "--format", "{{.Server.Version}}"]),
            argv(&["image", "inspect", "--format", "{{.Id}}", &image]),
            // The CLI is looked for in a throwaway container of the image.
            argv(&[
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
                &image,
                "-c",
                "command -v \"$1\" || { echo \"not found\" >&2; exit 127; }",
                "agent-runner-preflight",
                "codex"
            ]),
        ]
    );

    // An API key instead of a login file, for Claude Code.
    let claude = WorkerConfig {
        kind: WorkerKind::ClaudeCode,
        ..WorkerConfig::default()
    };
    let key = PathBuf::from("sk-ant-x");
    let env = host_env(&[("HOME", &home), ("ANTHROPIC_API_KEY", &key)]);
    let report = preflight(&claude, &target, &env, &cancel);
    assert!(detail(&report, "worker login").0, "{report}");
}

#[test]
fn preflight_in_local_mode_looks_for_the_cli_on_path() {
    let dir = TempDir::new("preflight-local");
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    let bin = dir.path().join("bin");
    write_script(&bin.join("gemini"), "#!/bin/sh\nexit 0\n");
    let config = WorkerConfig {
        kind: WorkerKind::GeminiCli,
        ..WorkerConfig::default()
    };
    let cancel = Cancel::new();
    let report = preflight(
        &config,
        &Target::Local,
        &host_env(&[("HOME", &home), ("PATH", &bin)]),
        &cancel,
    );
    assert!(report.ok(), "{report}");
    assert_eq!(
        report
            .checks
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        ["confinement", "worker CLI", "worker login"]
    );
    let empty = dir.path().join("empty");
    let report = preflight(
        &config,
        &Target::Local,
        &host_env(&[("HOME", &home), ("PATH", &empty)]),
        &cancel,
    );
    assert!(!report.ok());
    assert!(
        report
            .to_string()
            .contains("`gemini` was not found on PATH"),
        "{report}"
    );
}

#[test]
fn b10_an_agent_that_removes_its_pid_file_gets_its_container_killed() {
    // The kill cannot find the command: the runner fails closed and kills the whole
    // container rather than leave the agent running.
    let dir = TempDir::new("b10-nopid");
    let docker = FakeDocker::new(dir.path());
    let repo = git_repo(dir.path());
    let mut sandbox = DockerSandbox::new(docker.options(&repo)).unwrap();
    let name = sandbox.name().to_string();
    let cancel = Cancel::new();
    sandbox.start(&cancel).unwrap();
    let agent_pid = dir.path().join("agent.pid");
    // The fake keeps the container's /tmp in its state directory.
    let script = format!(
        "rm -f {}/agent-runner-{name}-*.pid; echo $$ > {}; exec sleep 120",
        docker.state.join("tmp").display(),
        agent_pid.display()
    );
    let out = sandbox
        .exec(
            &argv(&["sh", "-c", &script]),
            &[],
            None,
            Some(Duration::from_millis(300)),
            &cancel,
        )
        .unwrap();
    assert_eq!(out.ending, Ending::TimedOut);
    let calls = docker.sequence(&name, &repo);
    assert!(calls.iter().any(|c| c == "kill <name>"), "{calls:?}");
    // The fake's "container" cannot be killed as a whole; the test stops its agent.
    let pid = read_when_there(&agent_pid);
    let _ = crate::sealed::command("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
    sandbox.stop().unwrap();
}
