//! Benchmark of AgentRunner's own cost per task loop: a task runs through the task
//! contract, the runner host, the mock planner (prompts rendered, replies extracted and
//! schema-checked) and the run records (git snapshots of a small repository), with a
//! sandbox whose commands take no time. The test command always fails, so the task loops
//! until its budget runs out; the time per loop is everything but the fakes.
//!
//! Run with `cargo bench --bench runner`. The goal (issue 11) is < 5 ms per loop.
//!
//! Then the cost of one command in the worker's sandbox, the same command (`true`) run
//! through a real Docker container (`docker exec` under the pid-recording wrapper) and on
//! the host (`--unsafe-local`), with their ratio. The image is `AGENT_RUNNER_BENCH_IMAGE`,
//! or the busybox image the real-Docker tests build; without a daemon that part says so.
//! Last, the test command's extra cost: it runs in a fresh container each time.
#![allow(clippy::print_stdout)]

use std::cell::Cell;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

use code_intel::runner::Cancel;
use code_intel::runner::Events;
use code_intel::runner::Planner;
use code_intel::runner::Target;
use code_intel::runner::app;
use code_intel::runner::task;
use code_intel::runner::{Captured, Ending, Output};
use code_intel::runner::{RunnerHost, Setup};
use code_intel::runner::{Sandbox, SandboxError};
use code_intel::source::Sources;

/// Loops per task; the task ends INCOMPLETE when they run out.
const LOOPS: u32 = 50;
const TASKS: usize = 10;

/// A sandbox whose commands finish at once: the worker "succeeds", the test fails. The
/// time spent inside it is added to `time_inside`, to subtract.
struct InstantSandbox {
    time_inside: Rc<Cell<Duration>>,
}

impl Sandbox for InstantSandbox {
    fn start(&mut self, _: &Cancel) -> Result<(), SandboxError> {
        Ok(())
    }

    fn exec(
        &mut self,
        argv: &[String],
        _: &[(String, String)],
        _: Option<Vec<u8>>,
        _: Option<Duration>,
        _: &Cancel,
    ) -> Result<Output, SandboxError> {
        let start = Instant::now();
        let is_test = argv.get(1).is_some_and(|a| a == "-c");
        let output = Output {
            ending: Ending::Exited(if is_test { 1 } else { 0 }),
            stdout: Captured::default(),
            stderr: Captured::default(),
            duration: Duration::ZERO,
        };
        self.time_inside
            .set(self.time_inside.get() + start.elapsed());
        Ok(output)
    }

    fn exec_fresh(
        &mut self,
        argv: &[String],
        timeout: Option<Duration>,
        cancel: &Cancel,
    ) -> Result<Output, SandboxError> {
        self.exec(argv, &[], None, timeout, cancel)
    }

    fn stop(&mut self) -> Result<(), SandboxError> {
        Ok(())
    }

    fn workdir(&self) -> String {
        "/workspace/project".into()
    }

    fn describe(&self) -> String {
        "an instant fake".into()
    }

    fn environment(&self) -> String {
        "an instant fake".into()
    }
}

fn git_repo(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let repo = git2::Repository::init(dir).unwrap();
    for i in 0..20 {
        std::fs::write(dir.join(format!("f{i}.txt")), format!("{i}\n")).unwrap();
    }
    let mut index = repo.index().unwrap();
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let who = git2::Signature::now("b", "b@example.com").unwrap();
    repo.commit(Some("HEAD"), &who, &who, "init", &tree, &[])
        .unwrap();
}

fn main() {
    let dir = std::env::temp_dir().join(format!("code-intel-bench-runner-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    git_repo(&dir.join("repo"));
    let text = format!(
        "version: 1\ntask:\n  id: bench\n  repo: repo\n  prd:\n    text: |\n      - the tests pass\n      - the code is tidy\n  test: {{command: make test}}\nrunner:\n  max_loops: {LOOPS}\n  meta: {{kind: mock}}\n  worker: {{kind: command, command: [sh]}}\n"
    );
    let mut sources = Sources::default();
    let file = sources.add("bench.yaml", text);
    let (task, _) = task::load(&sources, file, &dir).expect("the bench task loads");
    let contract = app::task_contract().expect("the task contract loads");
    let params = app::params_for(&task);

    let mut per_loop = Vec::new();
    let mut fakes = Duration::ZERO;
    for _ in 0..TASKS {
        let planner = Planner::from_config(&task.meta, &task.base_dir, None, task.planner_retries);
        let cancel = Cancel::new();
        let time_inside = Rc::new(Cell::new(Duration::ZERO));
        let mut host = RunnerHost::new(Setup {
            task: task.clone(),
            planner,
            sandbox: Box::new(InstantSandbox {
                time_inside: Rc::clone(&time_inside),
            }),
            target: Target::Local,
            host_env: Box::new(|name| std::env::var(name).ok()),
            cancel: cancel.clone(),
            events: Events::new(None, None),
            result_file: None,
            outcomes: app::terminal_outcomes(&contract),
        });
        let start = Instant::now();
        let code = app::execute(&contract, &mut host, &params, &cancel)
            .expect("the task contract starts the bench task")
            .exit_code;
        let elapsed = start.elapsed();
        assert_eq!(code, 3, "the bench task ends INCOMPLETE");
        fakes += time_inside.get();
        per_loop.push(elapsed.saturating_sub(time_inside.get()) / LOOPS);
    }
    let _ = std::fs::remove_dir_all(&dir);
    per_loop.sort_unstable();
    let p50 = per_loop[per_loop.len() / 2];
    let max = per_loop[per_loop.len() - 1];
    println!(
        "agent-runner loop overhead over {TASKS} tasks of {LOOPS} loops (mock planner, instant sandbox): p50 {:.3} ms, max {:.3} ms per loop (goal < 5 ms); time inside the fakes {:.3} ms in all",
        p50.as_secs_f64() * 1e3,
        max.as_secs_f64() * 1e3,
        fakes.as_secs_f64() * 1e3
    );
    exec_overhead();
}

/// Execs of `true` per sandbox.
const EXECS: u32 = 40;

/// The mean time of one `true` through `sandbox`, after one warm-up exec.
fn time_execs(sandbox: &mut dyn Sandbox) -> Result<Duration, SandboxError> {
    let cancel = Cancel::new();
    sandbox.start(&cancel)?;
    let argv = vec!["true".to_string()];
    sandbox.exec(&argv, &[], None, None, &cancel)?;
    let start = Instant::now();
    for _ in 0..EXECS {
        let out = sandbox.exec(&argv, &[], None, None, &cancel)?;
        assert_eq!(out.ending, Ending::Exited(0));
    }
    let mean = start.elapsed() / EXECS;
    sandbox.stop()?;
    Ok(mean)
}

/// Fresh-sandbox runs of `true` timed (each starts and removes a container).
const FRESH_EXECS: u32 = 5;

/// The mean time of one `true` through `exec_fresh` (the test command's way: a fresh
/// sandbox, the worker's frozen meanwhile).
fn time_fresh(sandbox: &mut dyn Sandbox) -> Result<Duration, SandboxError> {
    let cancel = Cancel::new();
    sandbox.start(&cancel)?;
    let argv = vec!["true".to_string()];
    let start = Instant::now();
    for _ in 0..FRESH_EXECS {
        let out = sandbox.exec_fresh(&argv, None, &cancel)?;
        assert_eq!(out.ending, Ending::Exited(0));
    }
    let mean = start.elapsed() / FRESH_EXECS;
    sandbox.stop()?;
    Ok(mean)
}

/// The image to time `docker exec` in: the variable's, or the tests' busybox image.
fn bench_image() -> Option<String> {
    if let Ok(image) = std::env::var("AGENT_RUNNER_BENCH_IMAGE") {
        return Some(image);
    }
    let out = std::process::Command::new("docker")
        .args([
            "images",
            "--format",
            "{{.Repository}}:{{.Tag}}",
            "code-intel-test/busybox",
        ])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .map(str::to_string)
}

fn exec_overhead() {
    use code_intel::runner::{DockerOptions, DockerSandbox, HostFacts, LocalSandbox, SandboxSpec};
    let dir = std::env::temp_dir().join(format!("code-intel-bench-exec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let local = LocalSandbox::new(&dir).and_then(|mut s| time_execs(&mut s));
    let Some(image) = bench_image() else {
        println!(
            "sandbox exec: no Docker image to time (set AGENT_RUNNER_BENCH_IMAGE, or run `cargo test --test integration runner_docker` once)"
        );
        let _ = std::fs::remove_dir_all(&dir);
        return;
    };
    let policy = SandboxSpec::default()
        .resolve(&HostFacts::current())
        .expect("the default sandbox policy");
    let options = DockerOptions {
        program: "docker".into(),
        task_id: "bench".into(),
        run_label: None,
        repo: dir.clone(),
        image: image.clone(),
        mounts: Vec::new(),
        grace: Duration::from_secs(1),
        policy,
        // A benchmark is an entry point: the docker CLI runs as the person running it.
        env: code_intel::environment::Environment::of_process(),
    };
    let docker = DockerSandbox::new(options.clone()).and_then(|mut s| time_execs(&mut s));
    let fresh = DockerSandbox::new(options).and_then(|mut s| time_fresh(&mut s));
    let _ = std::fs::remove_dir_all(&dir);
    match &fresh {
        Ok(fresh) => println!(
            "test command in a fresh container (pause the worker's, run, remove, unpause), mean of {FRESH_EXECS}: {:.0} ms",
            fresh.as_secs_f64() * 1e3
        ),
        Err(e) => println!("test command in a fresh container: not timed ({e})"),
    }
    match (local, docker) {
        (Ok(local), Ok(docker)) => println!(
            "sandbox exec of `true`, mean of {EXECS}: docker exec in {image} {:.1} ms, local {:.2} ms, ratio {:.0}x: a worker run or test command costs {:.0} ms more in Docker",
            docker.as_secs_f64() * 1e3,
            local.as_secs_f64() * 1e3,
            docker.as_secs_f64() / local.as_secs_f64().max(1e-9),
            (docker.saturating_sub(local)).as_secs_f64() * 1e3
        ),
        (local, docker) => println!(
            "sandbox exec: not timed (local: {:?}, docker: {:?})",
            local.err().map(|e| e.to_string()),
            docker.err().map(|e| e.to_string())
        ),
    }
}
