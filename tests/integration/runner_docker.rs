//! AgentRunner against a real Docker daemon: tasks run in real containers made from a
//! busybox image built offline (`docker import` of a root filesystem from Debian's
//! `busybox-static`), with the sandbox policy's limits checked in the daemon
//! (`docker inspect`) and inside the container (the kernel refuses the fork past the pids
//! limit). The fake-CLI golden tests (`runner_sandbox`) pin the command lines; these show
//! the daemon does what the lines ask.
//!
//! Needs a daemon: `.ci/run` installs `docker.io` and starts `dockerd`. Run as root with
//! no daemon answering, the suite installs (`apt-get`) and starts one itself, as other
//! tests install their npm and PyPI helpers; otherwise it fails and says what to run.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use code_intel::runner::{
    Cancel, DockerOptions, DockerSandbox, Ending, HostFacts, Sandbox, SandboxSpec,
};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

use crate::support::TempDir;

fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_agent-runner"))
}

/// The test image's tag, once the daemon answers and the image exists.
fn image() -> &'static str {
    static IMAGE: OnceLock<Result<String, String>> = OnceLock::new();
    match IMAGE.get_or_init(prepare) {
        Ok(tag) => tag,
        Err(e) => panic!("the real-Docker tests need a Docker daemon: {e}"),
    }
}

fn docker(args: &[&str]) -> Output {
    crate::sealed::command("docker")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("docker {args:?}: {e}"))
}

fn daemon_answers() -> bool {
    crate::sealed::command("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

fn on_path(program: &str) -> bool {
    crate::sealed::command("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Debian packages, installed when missing and this is root (a fresh machine of the CI's
/// kind); an update of the lists first when the install alone fails.
fn apt_install(packages: &[&str]) -> Result<(), String> {
    if !is_root() || !on_path("apt-get") {
        return Err(format!(
            "install {} (e.g. `sudo apt-get install {}`)",
            packages.join(", "),
            packages.join(" ")
        ));
    }
    let install = || {
        crate::sealed::command("apt-get")
            .args(["install", "-y", "-q", "--no-install-recommends"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(Stdio::null())
            .output()
    };
    let out = install().map_err(|e| format!("apt-get: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let _ = crate::sealed::command("apt-get")
        .args(["update", "-q"])
        .output();
    let out = install().map_err(|e| format!("apt-get: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "apt-get install {packages:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn prepare() -> Result<String, String> {
    if !daemon_answers() {
        if !on_path("dockerd") {
            apt_install(&["docker.io"])?;
        }
        if !is_root() {
            return Err("no daemon answers `docker version`; start one (`sudo dockerd &`)".into());
        }
        let log = std::fs::File::create(std::env::temp_dir().join("code-intel-dockerd.log"))
            .map_err(|e| e.to_string())?;
        // Detached: it serves the rest of the run (and later runs) like a system daemon.
        crate::sealed::command("setsid")
            .arg("dockerd")
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("dockerd: {e}"))?;
        let until = Instant::now() + Duration::from_secs(90);
        while !daemon_answers() {
            if Instant::now() > until {
                return Err(
                    "dockerd did not answer within 90 s (see /tmp/code-intel-dockerd.log)".into(),
                );
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
    let busybox = Path::new("/bin/busybox");
    if !busybox.exists() {
        apt_install(&["busybox-static"])?;
    }
    let bytes = std::fs::read(busybox).map_err(|e| format!("{}: {e}", busybox.display()))?;
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(&bytes);
    let tag = format!(
        "code-intel-test/busybox:{}",
        digest
            .iter()
            .take(6)
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    );
    if docker(&["image", "inspect", &tag]).status.success() {
        return Ok(tag);
    }
    build_image(&tag, busybox, &[])?;
    Ok(tag)
}

/// A root filesystem with busybox and its applets, a writable /tmp and a passwd file
/// with root only (the runner names the run user itself), imported as `tag`; `extra`
/// files (host path, path in the image) are copied in.
fn build_image(tag: &str, busybox: &Path, extra: &[(&Path, &str)]) -> Result<(), String> {
    let dir = TempDir::new("docker-rootfs");
    let root = dir.path().join("rootfs");
    for sub in ["bin", "tmp", "etc", "proc", "sys", "dev", "home"] {
        std::fs::create_dir_all(root.join(sub)).map_err(|e| e.to_string())?;
    }
    std::fs::copy(busybox, root.join("bin/busybox")).map_err(|e| e.to_string())?;
    let list = crate::sealed::command(busybox)
        .arg("--list")
        .output()
        .map_err(|e| e.to_string())?;
    for applet in String::from_utf8_lossy(&list.stdout).lines() {
        if applet != "busybox" && !applet.is_empty() {
            std::os::unix::fs::symlink("busybox", root.join("bin").join(applet))
                .map_err(|e| e.to_string())?;
        }
    }
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(root.join("tmp"), std::fs::Permissions::from_mode(0o1777))
        .map_err(|e| e.to_string())?;
    std::fs::write(root.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n")
        .map_err(|e| e.to_string())?;
    std::fs::write(root.join("etc/group"), "root:x:0:\n").map_err(|e| e.to_string())?;
    for (from, to) in extra {
        let to = root.join(to);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        std::fs::copy(from, &to).map_err(|e| format!("{}: {e}", from.display()))?;
    }
    let out = crate::sealed::command("sh")
        .args([
            "-c",
            "tar -C \"$1\" -c . | docker import -c 'ENV PATH=/bin' - \"$2\"",
            "import",
        ])
        .arg(&root)
        .arg(tag)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "docker import failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// The containers of task `id` that still exist, running or not.
fn containers_of(id: &str) -> Vec<String> {
    let out = docker(&[
        "ps",
        "-a",
        "-q",
        "--filter",
        &format!("label=agent-runner.task={id}"),
    ]);
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// A task in a temporary directory: `repo/` (a git repository with one commit) and
/// `task.yaml`, whose worker is a shell script run in the test image.
struct Fixture {
    dir: TempDir,
    id: String,
}

impl Fixture {
    /// `worker` is the script `sh -c` runs in the repository inside the container;
    /// `runner` is added to the `runner:` block (indented two spaces).
    fn new(name: &str, worker: &str, test: &str, runner: &str) -> Fixture {
        let dir = TempDir::new(&format!("docker-{name}"));
        let repo_dir = dir.path().join("repo");
        std::fs::create_dir_all(&repo_dir).unwrap();
        crate::support::git_repo(&repo_dir, &[("README.md", "# repo\n")]);
        // A unique id per run, so a container left by an earlier run cannot be mistaken
        // for this one's.
        let id = format!("dk-{name}-{}", std::process::id());
        let task = format!(
            "version: 1\ntask:\n  id: {id}\n  title: {name}\n  repo: repo\n  prd:\n    text: |\n      - the worker ran\n  test:\n    command: {test}\n    timeout_sec: 60\nrunner:\n  max_loops: 2\n  meta: {{kind: mock}}\n  worker:\n    kind: command\n    command: [sh, -c, {worker}]\n    docker_image: {image}\n    max_run_time_sec: 120\n{runner}",
            test = serde_json::to_string(test).unwrap(),
            worker = serde_json::to_string(worker).unwrap(),
            image = image(),
        );
        std::fs::write(dir.path().join("task.yaml"), task).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        Fixture { dir, id }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn command(&self) -> Command {
        let mut command = crate::sealed::command(binary());
        command
            .args(["task.yaml", "--result-file", "result.json"])
            .current_dir(self.path())
            .env("HOME", self.path().join("home"))
            .env_remove("AGENT_RUNNER_LOG")
            .stdin(Stdio::null());
        command
    }

    fn result(&self) -> Value {
        let text = std::fs::read_to_string(self.path().join("result.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    fn repo_file(&self, name: &str) -> PathBuf {
        self.path().join("repo").join(name)
    }

    /// Waits until the worker wrote `name` in the repository.
    fn wait_for(&self, name: &str, child: &mut Child) {
        let path = self.repo_file(name);
        let until = Instant::now() + Duration::from_secs(120);
        while !path.exists() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("agent-runner ended ({status}) before the worker wrote {name}");
            }
            assert!(Instant::now() < until, "the worker never wrote {name}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn text(o: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn a_task_completes_in_a_real_container_and_leaves_none() {
    let f = Fixture::new(
        "complete",
        "cat > /dev/null; echo hello > hello.txt; id -u > uid.txt; echo done",
        "grep -q hello hello.txt",
        "",
    );
    let o = f.command().output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let result = f.result();
    assert_eq!(result["status"], "complete", "{result}");
    assert_eq!(result["runs"][0]["exit_code"], 0);
    // The default user is the one who ran agent-runner: the file is theirs.
    use std::os::unix::fs::MetadataExt as _;
    let uid = nix::unistd::getuid().as_raw();
    assert_eq!(
        std::fs::read_to_string(f.repo_file("uid.txt"))
            .unwrap()
            .trim(),
        uid.to_string()
    );
    assert_eq!(
        std::fs::metadata(f.repo_file("hello.txt")).unwrap().uid(),
        uid
    );
    assert!(
        containers_of(&f.id).is_empty(),
        "a container was left behind"
    );
}

#[test]
fn files_the_worker_writes_belong_to_the_user_who_ran_it() {
    // As an ordinary user (uid 4243, in the docker group to reach the daemon), the files
    // the worker writes in the mounted repository are that user's, not root's.
    if !is_root() {
        // Not root: the test above already ran as an ordinary user.
        return;
    }
    let group = crate::sealed::command("getent")
        .args(["group", "docker"])
        .output()
        .unwrap();
    let docker_gid = String::from_utf8_lossy(&group.stdout)
        .split(':')
        .nth(2)
        .map(str::to_string)
        .expect("docker.io makes a `docker` group");
    let f = Fixture::new(
        "as-user",
        "cat > /dev/null; echo hello > hello.txt; id -u > uid.txt; ls -ld $HOME > home.txt",
        "grep -q hello hello.txt",
        "",
    );
    let chown = crate::sealed::command("chown")
        .args(["-R", "4243:4243"])
        .arg(f.path())
        .status()
        .unwrap();
    assert!(chown.success());
    let o = crate::sealed::command("setpriv")
        .args([
            "--reuid",
            "4243",
            "--regid",
            "4243",
            &format!("--groups={docker_gid}"),
            "--",
        ])
        .arg(binary())
        .args(["task.yaml", "--result-file", "result.json"])
        .current_dir(f.path())
        .env("HOME", f.path().join("home"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    use std::os::unix::fs::MetadataExt as _;
    for file in ["hello.txt", "uid.txt", ".agent-runner"] {
        let meta = std::fs::metadata(f.repo_file(file)).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (4243, 4243), "{file}");
    }
    assert_eq!(
        std::fs::read_to_string(f.repo_file("uid.txt"))
            .unwrap()
            .trim(),
        "4243"
    );
    // Its home is a directory of its own (a tmpfs), whatever users the image has.
    let home = std::fs::read_to_string(f.repo_file("home.txt")).unwrap();
    assert!(home.contains("/home/agent"), "{home}");
    assert!(home.starts_with("drwx------"), "{home}");
    assert!(containers_of(&f.id).is_empty());
}

/// A sandbox on the test image with `spec`, started.
fn started_sandbox(dir: &Path, spec: &str) -> DockerSandbox {
    let spec: SandboxSpec = serde_json::from_str(spec).unwrap();
    let policy = spec.resolve(&HostFacts::current()).unwrap();
    let options = DockerOptions {
        program: "docker".into(),
        task_id: format!("lib-{}", std::process::id()),
        run_label: Some(format!("{}/run", dir.display())),
        repo: dir.to_path_buf(),
        image: image().to_string(),
        mounts: Vec::new(),
        grace: Duration::from_secs(1),
        policy,
        env: crate::sealed::child_environment(),
    };
    let mut sandbox = DockerSandbox::new(options).unwrap();
    sandbox.start(&Cancel::new()).unwrap();
    sandbox
}

fn exec(sandbox: &mut DockerSandbox, script: &str) -> (Ending, String) {
    let argv = ["sh", "-c", script].map(String::from);
    let out = sandbox
        .exec(
            &argv,
            &[],
            None,
            Some(Duration::from_secs(60)),
            &Cancel::new(),
        )
        .unwrap();
    let text = format!("{}{}", out.stdout.text(), out.stderr.text());
    (out.ending, text)
}

#[test]
fn the_sandbox_policy_is_in_force_in_the_daemon_and_the_kernel() {
    let dir = TempDir::new("docker-limits");
    let mut sandbox = started_sandbox(
        dir.path(),
        r#"{"memory": "256m", "cpus": 0.5, "pids": 32, "network": "none", "user": "4321:4321"}"#,
    );
    let inspect = docker(&["inspect", sandbox.name()]);
    assert!(inspect.status.success(), "{}", text(&inspect));
    let info: Value = serde_json::from_slice(&inspect.stdout).unwrap();
    let host = &info[0]["HostConfig"];
    assert_eq!(host["Memory"], 256 << 20);
    assert_eq!(host["MemorySwap"], 256 << 20);
    assert_eq!(host["NanoCpus"], 500_000_000);
    assert_eq!(host["PidsLimit"], 32);
    assert_eq!(host["NetworkMode"], "none");
    assert_eq!(host["CapDrop"], serde_json::json!(["ALL"]));
    assert_eq!(
        host["SecurityOpt"],
        serde_json::json!(["no-new-privileges"])
    );
    assert_eq!(info[0]["Config"]["User"], "4321:4321");
    // The run's own label beside the task's: what Multiverse removes a run's containers by.
    let labels = &info[0]["Config"]["Labels"];
    assert_eq!(
        labels[code_intel::runner::RUN_LABEL],
        format!("{}/run", dir.path().display())
    );
    assert_eq!(
        labels["agent-runner.task"],
        format!("lib-{}", std::process::id())
    );

    // Inside: the user, no capability, no network but loopback, and the kernel refusing
    // the fork past the pids limit.
    let (ending, out) = exec(
        &mut sandbox,
        "id -u; id -un; grep CapEff /proc/self/status; ls /sys/class/net",
    );
    assert_eq!(ending, Ending::Exited(0), "{out}");
    assert!(out.starts_with("4321\nagent\n"), "{out}");
    assert!(out.contains("CapEff:\t0000000000000000"), "{out}");
    assert_eq!(out.lines().skip(3).collect::<Vec<_>>(), ["lo"], "{out}");
    // No setuid program can make the worker root again.
    let (_, out) = exec(&mut sandbox, "grep NoNewPrivs /proc/self/status");
    assert!(out.contains("NoNewPrivs:\t1"), "{out}");
    // A process that takes more memory than the limit is killed inside the container.
    let (_, out) = exec(
        &mut sandbox,
        "dd if=/dev/zero of=/dev/null bs=300M count=1 2>/dev/null; echo \"dd exit $?\"",
    );
    assert!(out.contains("dd exit 137"), "{out}");
    // Last, as it leaves the container full: 64 background processes under a limit of 32.
    let (ending, out) = exec(
        &mut sandbox,
        "for i in $(seq 64); do sleep 30 & done; echo all started",
    );
    assert_ne!(ending, Ending::Exited(0), "{out}");
    assert!(out.contains("can't fork"), "{out}");
    assert!(!out.contains("all started"), "{out}");
    sandbox.stop().unwrap();
    assert!(!docker(&["inspect", sandbox.name()]).status.success());
}

#[test]
fn a_timeout_kills_the_command_inside_the_container() {
    let dir = TempDir::new("docker-timeout");
    let mut sandbox = started_sandbox(dir.path(), "{}");
    let argv = ["sh", "-c", "sleep 300 & sleep 301; echo never"].map(String::from);
    let started = Instant::now();
    let out = sandbox
        .exec(
            &argv,
            &[],
            None,
            Some(Duration::from_secs(1)),
            &Cancel::new(),
        )
        .unwrap();
    assert_eq!(out.ending, Ending::TimedOut);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    // Both sleeps, the child in the background included, are gone; the container is not.
    let (ending, left) = exec(
        &mut sandbox,
        "for d in /proc/[0-9]*; do cat $d/cmdline 2>/dev/null | tr '\\0' ' '; echo; done",
    );
    assert_eq!(ending, Ending::Exited(0));
    assert!(!left.contains("sleep 30"), "left running: {left}");
    sandbox.stop().unwrap();
}

#[test]
fn sigterm_ends_with_130_and_leaves_no_container() {
    for signals in [1, 2] {
        let f = Fixture::new(
            &format!("sigterm{signals}"),
            "cat > /dev/null; touch started; sleep 300",
            "true",
            "",
        );
        let mut child = f.command().stderr(Stdio::piped()).spawn().unwrap();
        f.wait_for("started", &mut child);
        assert_eq!(containers_of(&f.id).len(), 1);
        for _ in 0..signals {
            kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
            std::thread::sleep(Duration::from_millis(100));
        }
        let o = child.wait_with_output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(130),
            "{signals} signal(s): {}",
            text(&o)
        );
        assert!(
            containers_of(&f.id).is_empty(),
            "{signals} signal(s) left a container"
        );
        if signals == 1 {
            assert_eq!(f.result()["status"], "cancelled");
        }
    }
}

#[test]
fn env_values_reach_the_worker_but_never_a_command_line() {
    let secret = "hunter2-real-docker-secret";
    let f = Fixture::new(
        "env",
        "cat > /dev/null; printf %s \"$SECRET_TOKEN\" | sha256sum > secret.sum; touch started; \
         while [ ! -e go ]; do sleep 0.1; done",
        "true",
        "",
    );
    // The env block goes under runner.worker.
    let task = std::fs::read_to_string(f.path().join("task.yaml")).unwrap();
    let task = task.replace(
        "    max_run_time_sec: 120\n",
        &format!("    max_run_time_sec: 120\n    env: {{SECRET_TOKEN: {secret}}}\n"),
    );
    std::fs::write(f.path().join("task.yaml"), task).unwrap();
    let mut child = f.command().stderr(Stdio::piped()).spawn().unwrap();
    f.wait_for("started", &mut child);
    let ids = containers_of(&f.id);
    assert_eq!(ids.len(), 1);
    let inspect = docker(&["inspect", &ids[0]]);
    assert!(inspect.status.success());
    let inspect = String::from_utf8_lossy(&inspect.stdout);
    assert!(!inspect.contains(secret), "the value is in docker inspect");
    // Nor on any host command line (the docker exec client's included).
    let ps = crate::sealed::command("ps")
        .args(["-eo", "args"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&ps.stdout).contains(secret));
    std::fs::write(f.repo_file("go"), "").unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    use sha2::Digest as _;
    let want: String = sha2::Sha256::digest(secret.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let got = std::fs::read_to_string(f.repo_file("secret.sum")).unwrap();
    assert!(
        got.starts_with(&want),
        "the worker saw another value: {got}"
    );
    let note =
        std::fs::read_to_string(f.repo_file(&format!(".agent-runner/task-{}.md", f.id))).unwrap();
    assert!(!note.contains(secret));
    assert!(!text(&o).contains(secret));
}

#[test]
fn a_test_command_the_image_lacks_fails_the_task_at_once() {
    let f = Fixture::new(
        "no-cargo",
        "cat > /dev/null; echo hello > hello.txt",
        "cargo test --quiet",
        "",
    );
    let o = f.command().output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let result = f.result();
    assert_eq!(result["status"], "failed", "{result}");
    // One worker run, not a loop per allowed return.
    assert_eq!(result["runs"].as_array().map(Vec::len), Some(1), "{result}");
    let summary = result["summary"].as_str().unwrap_or_default();
    let want = format!("The test command could not run in the image {}", image());
    assert!(summary.contains(&want), "{summary}");
    assert!(summary.contains("exit 127: not found"), "{summary}");
    assert!(summary.contains("cargo: not found"), "{summary}");
    assert!(containers_of(&f.id).is_empty());
}

#[test]
fn the_worker_cannot_fake_the_test_verdict_from_its_container() {
    // Three ways a worker could make a failing test pass without doing the work, each
    // from outside the repository: a file in /tmp, a file in its home, and a background
    // process that answers the test. The test command runs in a fresh container while
    // the worker's is frozen, so none reaches it: the task cannot complete.
    let worker = "cat > /dev/null; touch /tmp/pass \"$HOME/.pass\"; \
        (while :; do [ -e ping ] && echo ok > pong; sleep 0.1; done) > /dev/null 2>&1 & \
        echo started";
    let test = "rm -f pong; echo > ping; sleep 2; rm -f ping; ok=0; \
        if [ -e /tmp/pass ]; then echo tmp-reached; ok=1; fi; \
        if [ -e \"$HOME/.pass\" ]; then echo home-reached; ok=1; fi; \
        if [ -s pong ]; then echo process-reached; ok=1; fi; \
        [ $ok = 1 ]";
    let f = Fixture::new("fake-test", worker, test, "");
    let o = f.command().output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let result = f.result();
    assert_eq!(result["status"], "incomplete", "{result}");
    // The worker's container was thawed after each test: the second run worked too.
    let runs = result["runs"].as_array().cloned().unwrap_or_default();
    assert_eq!(runs.len(), 2, "{result}");
    assert!(runs.iter().all(|r| r["exit_code"] == 0), "{result}");
    let test_out = &result["validation"]["test"];
    assert_eq!(test_out["exit_code"], 1, "{result}");
    let tail = test_out["output_tail"].as_str().unwrap_or_default();
    for reached in ["tmp-reached", "home-reached", "process-reached"] {
        assert!(!tail.contains(reached), "{reached}: {result}");
    }
    assert!(
        containers_of(&f.id).is_empty(),
        "a container was left behind"
    );
}

#[test]
fn preflight_looks_for_the_worker_cli_in_the_image() {
    use code_intel::runner::{Target, WorkerConfig, WorkerKind, preflight};
    let target = Target::Docker {
        program: "docker".into(),
        env: crate::sealed::child_environment(),
    };
    let no_env = |_: &str| None;
    let codex = WorkerConfig {
        docker_image: Some(image().to_string()),
        ..WorkerConfig::default()
    };
    let report = preflight(&codex, &target, &no_env, &Cancel::new());
    let check = report
        .checks
        .iter()
        .find(|c| c.name == "worker CLI")
        .unwrap();
    assert!(!check.ok, "{report}");
    assert!(
        check.detail.contains("`codex` is not in the image")
            && check.detail.contains("agent-runner image build codex"),
        "{}",
        check.detail
    );
    let shell = WorkerConfig {
        kind: WorkerKind::Command,
        command: vec!["sh".into(), "-c".into(), "true".into()],
        docker_image: Some(image().to_string()),
        ..WorkerConfig::default()
    };
    let report = preflight(&shell, &target, &no_env, &Cancel::new());
    assert!(report.ok(), "{report}");
    let check = report
        .checks
        .iter()
        .find(|c| c.name == "worker CLI")
        .unwrap();
    assert!(
        check.ok && check.detail.starts_with("`sh` is "),
        "{}",
        check.detail
    );
}

/// The test image with the real Codex CLI (the static binary of `tests/codex`'s npm
/// package) at `/bin/codex`.
fn codex_image() -> &'static str {
    static IMAGE: OnceLock<Result<String, String>> = OnceLock::new();
    let made = IMAGE.get_or_init(|| {
        let base = image();
        let codex = crate::support::npm_package(
            "codex",
            "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
        )?;
        // The native binary, not the package's Node.js launcher of the same name.
        let mut head = [0u8; 4];
        std::io::Read::read_exact(
            &mut std::fs::File::open(&codex).map_err(|e| e.to_string())?,
            &mut head,
        )
        .map_err(|e| e.to_string())?;
        if &head != b"\x7fELF" {
            return Err(format!("{} is not an ELF binary", codex.display()));
        }
        let meta = std::fs::metadata(&codex).map_err(|e| e.to_string())?;
        // The busybox image's tag and the binary's size tell a stale image apart (as for
        // Claude Code below). Not its time: every fresh install of the npm package has a
        // new one, and each made another image of 300 MB that nothing removed.
        let tag = format!(
            "code-intel-test/codex:{}-{:x}",
            base.rsplit(':').next().unwrap_or("x"),
            meta.len()
        );
        if !docker(&["image", "inspect", &tag]).status.success() {
            build_image(&tag, Path::new("/bin/busybox"), &[(&codex, "bin/codex")])?;
        }
        Ok(tag)
    });
    match made {
        Ok(tag) => tag,
        Err(e) => panic!("the Codex test image: {e}"),
    }
}

/// The test image with the real Claude Code (the native binary of `tests/claude`'s npm
/// package) at `/bin/claude`, with the glibc libraries it links (`ldd`) at their paths
/// and bash (`bash-static`) for its Bash tool.
fn claude_image() -> &'static str {
    static IMAGE: OnceLock<Result<String, String>> = OnceLock::new();
    let made = IMAGE.get_or_init(|| {
        let base = image();
        let claude =
            crate::support::npm_package("claude", "@anthropic-ai/claude-code-linux-x64/claude")?;
        let ldd = crate::sealed::command("ldd")
            .arg(&claude)
            .output()
            .map_err(|e| format!("ldd: {e}"))?;
        // Claude Code's Bash tool wants bash, which busybox lacks: Debian's static one.
        let bash = Path::new("/bin/bash-static");
        if !bash.exists() {
            apt_install(&["bash-static"])?;
        }
        let mut files: Vec<(PathBuf, String)> = vec![
            (claude.clone(), "bin/claude".into()),
            (bash.to_path_buf(), "bin/bash".into()),
        ];
        for line in String::from_utf8_lossy(&ldd.stdout).lines() {
            // `libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)` or the interpreter,
            // `/lib64/ld-linux-x86-64.so.2 (0x...)`.
            let path = match line.split_once("=>") {
                Some((_, right)) => right.split_whitespace().next(),
                None => line
                    .split_whitespace()
                    .next()
                    .filter(|p| p.starts_with('/')),
            };
            if let Some(path) = path.filter(|p| p.starts_with('/')) {
                files.push((
                    PathBuf::from(path),
                    path.trim_start_matches('/').to_string(),
                ));
            }
        }
        let size = |p: &Path| {
            std::fs::metadata(p)
                .map(|m| m.len())
                .map_err(|e| e.to_string())
        };
        let tag = format!(
            "code-intel-test/claude:{}-{:x}-{:x}",
            base.rsplit(':').next().unwrap_or("x"),
            size(&claude)?,
            size(bash)?
        );
        if !docker(&["image", "inspect", &tag]).status.success() {
            let extra: Vec<(&Path, &str)> = files
                .iter()
                .map(|(from, to)| (from.as_path(), to.as_str()))
                .collect();
            build_image(&tag, Path::new("/bin/busybox"), &extra)?;
        }
        Ok(tag)
    });
    match made {
        Ok(tag) => tag,
        Err(e) => panic!("the Claude Code test image: {e}"),
    }
}

/// This machine's address on Docker's default bridge, which containers reach it by.
fn bridge_address() -> String {
    let out = crate::sealed::command("ip")
        .args(["-4", "-o", "addr", "show", "docker0"])
        .output()
        .expect("ip (iproute2)");
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .skip_while(|w| *w != "inet")
        .nth(1)
        .and_then(|cidr| cidr.split('/').next())
        .map(str::to_string)
        .unwrap_or_else(|| panic!("docker0 has no IPv4 address: {text}"))
}

/// A real agent CLI in a container completes the fixture's task against a scripted model
/// server (`server`, run on the Docker bridge with `turns`): the `runner.worker` block is
/// `worker(host, port)`, and `key` (a login variable) is set to a dummy the scripted model
/// ignores. Checks the run wrote hello.txt as the user and said so; returns the requests
/// the model saw.
fn a_real_cli_completes(
    f: &Fixture,
    server: &str,
    turns: Value,
    worker: &dyn Fn(&str, u16) -> String,
    key: &str,
) -> Vec<Value> {
    let script = f.path().join("script.json");
    std::fs::write(&script, serde_json::json!({ "turns": turns }).to_string()).unwrap();
    let record = f.path().join("record.jsonl");
    let host = bridge_address();
    let server = crate::support::ModelServer::start_at(
        &host,
        server,
        &script,
        &record,
        &f.path().join("server.log"),
    );
    let task = std::fs::read_to_string(f.path().join("task.yaml")).unwrap();
    let start = task.find("  worker:\n").unwrap();
    let task = format!("{}{}", &task[..start], worker(&host, server.port));
    std::fs::write(f.path().join("task.yaml"), task).unwrap();
    let o = f.command().env(key, "test-key-not-used").output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}\nmodel server:\n{}",
        text(&o),
        std::fs::read_to_string(&server.log).unwrap_or_default()
    );
    let result = f.result();
    assert_eq!(result["status"], "complete", "{result}");
    let run = &result["runs"][0];
    assert_eq!(run["exit_code"], 0, "{run}");
    assert_eq!(run["summary"], "Wrote hello.txt.", "{run}");
    assert_eq!(
        run["files_changed"],
        serde_json::json!(["hello.txt"]),
        "{run}"
    );
    assert_eq!(
        std::fs::read_to_string(f.repo_file("hello.txt")).unwrap(),
        "Hello, world!\n"
    );
    use std::os::unix::fs::MetadataExt as _;
    let uid = nix::unistd::getuid().as_raw();
    assert_eq!(
        std::fs::metadata(f.repo_file("hello.txt")).unwrap().uid(),
        uid
    );
    assert!(containers_of(&f.id).is_empty());
    let requests = crate::support::ModelServer::requests(&record);
    // The model saw the worker's prompt, made from the planner's criteria.
    assert!(
        requests
            .iter()
            .any(|r| r.to_string().contains("AC-1: the worker ran")),
        "the prompt never reached the model"
    );
    requests
}

#[test]
fn the_real_codex_cli_completes_a_task_in_a_container() {
    // Codex in the container talks to a scripted Responses API on the bridge: one shell
    // command that writes hello.txt, then its final message.
    let image = codex_image();
    let f = Fixture::new("codex", "unused", "grep -q 'Hello, world' hello.txt", "");
    let worker = |host: &str, port: u16| {
        let url = format!("http://{host}:{port}/v1");
        let flags: Vec<String> = [
            "model_provider=\"scripted\"".to_string(),
            "model_providers.scripted.name=\"scripted\"".into(),
            format!("model_providers.scripted.base_url=\"{url}\""),
            "model_providers.scripted.wire_api=\"responses\"".into(),
            "model_providers.scripted.request_max_retries=0".into(),
            "model_providers.scripted.stream_max_retries=0".into(),
            "check_for_update_on_startup=false".into(),
            "analytics.enabled=false".into(),
        ]
        .iter()
        .flat_map(|c| ["-c".to_string(), c.clone()])
        .collect();
        format!(
            "  worker:\n    kind: codex-cli\n    model: gpt-5.5\n    docker_image: {image}\n    max_run_time_sec: 120\n    flags: {}\n",
            serde_json::to_string(&flags).unwrap()
        )
    };
    let turns = serde_json::json!([
        {"function_call": {"name": "exec_command",
            "arguments": {"cmd": "printf 'Hello, world!\\n' > hello.txt"}}},
        {"text": "Wrote hello.txt."}
    ]);
    a_real_cli_completes(
        &f,
        "tests/codex/model_server.py",
        turns,
        &worker,
        "CODEX_API_KEY",
    );
}

#[test]
fn image_build_prints_builds_and_refuses_clearly() {
    let run = |args: &[&str]| {
        crate::sealed::command(binary())
            .arg("image")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    // --print: both Dockerfiles and the commands, the base first; nothing built.
    let o = run(&["build", "codex-cli", "--print", "--tag", "mine/codex:1"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let base = out
        .find("docker build --force-rm --tag agent-runner-base:")
        .expect("the base build");
    let worker = out
        .find("docker build --force-rm --tag mine/codex:1 --build-arg BASE=agent-runner-base:")
        .expect("the worker build");
    assert!(base < worker, "{out}");
    assert!(out.contains("@openai/codex@${CLI_VERSION}"), "{out}");
    let list = run(&["list"]);
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.contains("codex    codex-cli    agent-runner-codex:"),
        "{list}"
    );

    for (args, words) in [
        (
            &["build", "cobol"][..],
            "no worker image for `cobol`; one of codex, claude, gemini",
        ),
        (
            &["build", "codex", "--build-arg", "oops"],
            "--build-arg \"oops\" is not KEY=VALUE",
        ),
        (
            &["build", "codex", "--ca-cert", "/no/such.pem"],
            "cannot read /no/such.pem",
        ),
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(words),
            "{args:?}: {}",
            text(&o)
        );
    }

    // A real build that cannot succeed here (busybox has no apt-get) fails with the step
    // named and docker's own output on the terminal.
    let o = run(&[
        "build",
        "gemini",
        "--base-image",
        image(),
        "--tag",
        "code-intel-test/never:1",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("agent-runner: building agent-runner-base:"),
        "{err}"
    );
    assert!(
        err.contains("agent-runner: could not build agent-runner-base:"),
        "{err}"
    );
    assert!(
        !docker(&["image", "inspect", "code-intel-test/never:1"])
            .status
            .success()
    );
}

#[test]
fn the_real_claude_code_completes_a_task_in_a_container() {
    // Claude Code in the container talks to a scripted Messages API on the bridge: one
    // Bash call that writes hello.txt, then its final message. CI runs this as root, so
    // the container's user is root too: IS_SANDBOX lets Claude Code skip permissions.
    let image = claude_image();
    let f = Fixture::new("claude", "unused", "grep -q 'Hello, world' hello.txt", "");
    let worker = |host: &str, port: u16| {
        format!(
            "  worker:\n    kind: claude-code\n    model: claude-scripted\n    docker_image: {image}\n    max_run_time_sec: 120\n    env:\n      ANTHROPIC_BASE_URL: http://{host}:{port}\n      DISABLE_AUTOUPDATER: '1'\n      DISABLE_TELEMETRY: '1'\n      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1'\n"
        )
    };
    let turns = serde_json::json!([
        {"tool_use": {"name": "Bash",
            "input": {"command": "printf 'Hello, world!\\n' > hello.txt",
                      "description": "Write hello.txt"}}},
        {"text": "Wrote hello.txt."}
    ]);
    a_real_cli_completes(
        &f,
        "tests/claude/model_server.py",
        turns,
        &worker,
        "ANTHROPIC_API_KEY",
    );
}

#[test]
fn a_multiverse_plan_runs_its_tasks_in_real_containers() {
    // The orchestrator above agent-runner: a chat's plan of two tasks in order, each
    // attempt in its own container under the default sandbox policy, none left behind.
    let dir = TempDir::new("docker-multiverse");
    let repo = dir.path().join("project");
    std::fs::create_dir_all(&repo).unwrap();
    crate::support::git_repo(&repo, &[("README.md", "# project\n")]);
    let ws = dir.path().join("ws");
    let mv = |args: &[&str]| {
        crate::sealed::command(env!("CARGO_BIN_EXE_multiverse"))
            .arg("--workspace")
            .arg(&ws)
            .args(args)
            .env("HOME", dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let o = mv(&[
        "init",
        repo.to_str().unwrap(),
        "--planner",
        "mock",
        "--agent-runner",
        binary().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // The worker: a shell command in the test image, writing a file per run.
    let config_path = ws.join("config.json");
    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(&config_path).unwrap()).unwrap();
    config["runner"]["worker"] = serde_json::json!({
        "kind": "command",
        "command": ["sh", "-c", "cat > /dev/null; id -u >> ran-in-container.txt"],
        "docker_image": image(),
        "max_run_time_sec": 120,
    });
    std::fs::write(&config_path, serde_json::to_string_pretty(&config).unwrap()).unwrap();
    let o = mv(&["chat", "In order:\n- first step\n- second step"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = mv(&["run"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = mv(&["--json", "task", "list"]);
    let tasks: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(tasks.len(), 2);
    for task in &tasks {
        assert_eq!(task["state"], "SUCCEEDED", "{task}");
        let id = task["id"].as_str().unwrap();
        assert!(
            containers_of(id).is_empty(),
            "a container of {id} was left behind"
        );
    }
    // Two runs, each as the invoking user inside a container.
    let ran = std::fs::read_to_string(repo.join("ran-in-container.txt")).unwrap();
    let uid = nix::unistd::getuid().as_raw().to_string();
    assert_eq!(
        ran.lines().collect::<Vec<_>>(),
        [uid.as_str(), uid.as_str()]
    );
}

/// A workspace at `dir/NAME-ws` for a project `dir/NAME` with one task `t` whose worker
/// sleeps in a container of the test image; its `multiverse` command.
fn sleeping_workspace(dir: &Path, name: &str) -> impl Fn(&[&str]) -> Command {
    let repo = dir.join(name);
    std::fs::create_dir_all(&repo).unwrap();
    crate::support::git_repo(&repo, &[("README.md", "# project\n")]);
    let ws = dir.join(format!("{name}-ws"));
    let home = dir.to_path_buf();
    let mv = move |args: &[&str]| {
        let mut command = crate::sealed::command(env!("CARGO_BIN_EXE_multiverse"));
        command
            .arg("--workspace")
            .arg(&ws)
            .args(args)
            .env("HOME", &home)
            .stdin(Stdio::null());
        command
    };
    let o = mv(&["init", repo.to_str().unwrap(), "--planner", "mock"])
        .args(["--agent-runner", binary().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let config_path = dir.join(format!("{name}-ws/config.json"));
    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(&config_path).unwrap()).unwrap();
    config["runner"]["worker"] = serde_json::json!({
        "kind": "command",
        "command": ["sh", "-c", "cat > /dev/null; sleep 300"],
        "docker_image": image(),
        "max_run_time_sec": 600,
    });
    config["grace_sec"] = serde_json::json!(2);
    std::fs::write(&config_path, serde_json::to_string_pretty(&config).unwrap()).unwrap();
    let o = mv(&["task", "add", "sleep", "--id", "t"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    mv
}

/// The containers of task `t`: (id, run label).
fn containers_of_t() -> Vec<(String, String)> {
    let out = docker(&[
        "ps",
        "-a",
        "--filter",
        "label=agent-runner.task=t",
        "--format",
        "{{.ID}} {{.Label \"agent-runner.run\"}}",
    ]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(id, run)| (id.to_string(), run.to_string()))
        .collect()
}

/// `multiverse run` in a process group of its own, so the test can kill it with its
/// agent-runner as a machine crash would.
fn run_in_group(mut command: Command) -> Child {
    use std::os::unix::process::CommandExt as _;
    command
        .arg("run")
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_workspace_recovering_from_a_crash_removes_its_own_containers_not_anothers_of_the_same_task_id()
{
    let dir = TempDir::new("docker-mv-isolation");
    let one = sleeping_workspace(dir.path(), "one");
    let two = sleeping_workspace(dir.path(), "two");
    let under = |name: &str| format!("{}/{name}-ws/runs/", dir.path().display());
    let (one_runs, two_runs) = (under("one"), under("two"));
    let mut first = run_in_group(one(&[]));
    let mut second = run_in_group(two(&[]));
    let of = |runs: &str| -> Vec<String> {
        containers_of_t()
            .into_iter()
            .filter(|(_, run)| run.starts_with(runs))
            .map(|(id, _)| id)
            .collect()
    };
    wait_until("a container of each workspace", || {
        !of(&one_runs).is_empty() && !of(&two_runs).is_empty()
    });
    let (crashed, other) = (of(&one_runs), of(&two_runs));
    // The first workspace's orchestrator and agent-runner die at once; its container
    // stays, as after a crash of the machine's session.
    let group = |child: &Child| Pid::from_raw(-(child.id() as i32));
    kill(group(&first), Signal::SIGKILL).unwrap();
    first.wait().unwrap();
    assert_eq!(of(&one_runs), crashed, "the container outlived the crash");
    // The restart recovers the interrupted attempt: its container is removed, and only
    // its own, though the other workspace runs a task of the same id.
    let mut restarted = run_in_group(one(&[]));
    wait_until("the crashed attempt's container removed", || {
        !of(&one_runs).contains(&crashed[0])
    });
    let still: Vec<String> = of(&two_runs);
    for child in [&restarted, &second] {
        let _ = kill(group(child), Signal::SIGTERM);
    }
    let _ = restarted.wait();
    let _ = second.wait();
    for (id, _) in containers_of_t()
        .into_iter()
        .filter(|(_, run)| run.starts_with(&one_runs) || run.starts_with(&two_runs))
    {
        docker(&["rm", "-f", &id]);
    }
    assert_eq!(still, other, "the other workspace's container was removed");
}

#[test]
fn a_multiverse_task_cancelled_mid_run_ends_canceled_without_a_retry_or_a_container() {
    let dir = TempDir::new("docker-mv-cancel");
    let mv = sleeping_workspace(dir.path(), "cancel");
    let runs = format!("{}/cancel-ws/runs/", dir.path().display());
    // The daemon, so the command line can talk to it while the task runs.
    let mut daemon = {
        use std::os::unix::process::CommandExt as _;
        mv(&["serve"])
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    wait_until("the daemon", || {
        dir.path().join("cancel-ws/daemon.json").is_file()
    });
    let o = mv(&["start"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let mine = || -> Vec<String> {
        containers_of_t()
            .into_iter()
            .filter(|(_, run)| run.starts_with(&runs))
            .map(|(id, _)| id)
            .collect()
    };
    wait_until("the task's container", || !mine().is_empty());
    let o = mv(&["task", "cancel", "t"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let show = || -> Value {
        let o = mv(&["task", "show", "t"]).output().unwrap();
        serde_json::from_slice(&o.stdout).unwrap_or(Value::Null)
    };
    wait_until("the task cancelled", || show()["state"] == "CANCELED");
    let shown = show();
    let _ = kill(Pid::from_raw(-(daemon.id() as i32)), Signal::SIGTERM);
    let _ = daemon.wait();
    let left = mine();
    for id in &left {
        docker(&["rm", "-f", id]);
    }
    assert!(left.is_empty(), "containers left behind: {left:?}");
    let attempts = shown["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "no retry: {shown}");
    assert_eq!(attempts[0]["exit_code"], 130, "{shown}");
    let o = mv(&["--json", "backlog", "list"]).output().unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&o.stdout).unwrap(),
        serde_json::json!([]),
        "a cancel is not a failure"
    );
}
