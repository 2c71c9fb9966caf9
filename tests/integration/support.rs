//! Shared helpers: loading contracts, paths of the repository, and reading a request in a
//! loopback HTTP server.

use std::path::{Path, PathBuf};

use code_intel::contract::Contract;
use code_intel::diagnostic::render;
use code_intel::source::Sources;

/// The repository root (where Cargo.toml is).
pub(crate) fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The library sources of the workspace: `src/` and each crate's `crates/<name>/src/`. A
/// crate's modules keep the names they have in `code_intel` (which re-exports them), so
/// the layering and the tidy checks read them as one tree.
pub(crate) fn source_roots() -> Vec<PathBuf> {
    let mut roots = vec![repo().join("src")];
    let mut crates: Vec<PathBuf> = std::fs::read_dir(repo().join("crates"))
        .map(|d| d.map(|e| e.unwrap().path().join("src")).collect())
        .unwrap_or_default();
    crates.sort();
    roots.extend(crates.into_iter().filter(|p| p.is_dir()));
    roots
}

/// `file` relative to the source root that holds it (see [`source_roots`]).
pub(crate) fn in_source_root(file: &Path) -> Option<PathBuf> {
    source_roots()
        .into_iter()
        .find_map(|root| file.strip_prefix(&root).ok().map(Path::to_path_buf))
}

/// Loads a contract from a repository-relative path and fails the test with the rendered
/// diagnostics when it has errors.
pub(crate) fn load(path: &str) -> Contract {
    let text = std::fs::read_to_string(repo().join(path)).unwrap();
    let mut sources = Sources::default();
    let id = sources.add(path, text);
    let loaded = code_intel::lint::load_and_lint(&mut sources, id, &code_intel::hosts::all());
    let diagnostics = loaded.diagnostics.clone();
    match loaded.ok() {
        Ok(c) => c,
        Err(_) => panic!(
            "{path} does not load:\n{}",
            render::human(&sources, &diagnostics)
        ),
    }
}

/// The built-in default contract.
pub(crate) fn default_contract() -> Contract {
    load("contracts/phase_contract.yml")
}

/// The path of the built `code-intel` binary.
pub(crate) fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_code-intel"))
}

/// `code-intel` as the tests run it: sealed from the machine ([`crate::sealed`]), so a
/// model a developer installed into `~/.cache` does not turn a test's lexical answers into
/// ranked ones. A test that wants the model sets the model's variables.
pub(crate) fn code_intel() -> std::process::Command {
    crate::sealed::command(binary())
}

use code_intel::machine::{Accepted, Effect, Instance, Rejection};
use code_intel::session;
use code_intel::session::{ActionFailure, Host, NoCheckpoints, Stop};
use serde_json::{Map, Value};

/// The host's part in flow tests: fixed facts, and effects that always succeed.
struct AlwaysSucceeds<'a> {
    facts: &'a Map<String, Value>,
    performed: &'a mut Vec<String>,
}

impl Host for AlwaysSucceeds<'_> {
    fn perform(&mut self, effect: &Effect) -> Result<Value, ActionFailure> {
        self.performed.push(effect.action.clone());
        Ok(Value::Null)
    }

    fn facts(&mut self) -> Map<String, Value> {
        self.facts.clone()
    }
}

/// A session driven by a test through the library's session driver.
pub(crate) struct Driver {
    pub contract: Contract,
    pub instance: Instance,
    pub facts: Map<String, Value>,
    /// Every effect the accepted steps emitted, by action name.
    pub effects: Vec<String>,
}

impl Driver {
    pub(crate) fn start(contract: Contract, flag_text: &str, intent: &str, facts: Value) -> Driver {
        let facts = facts.as_object().cloned().unwrap_or_default();
        let mut effects = Vec::new();
        let mut host = AlwaysSucceeds {
            facts: &facts,
            performed: &mut effects,
        };
        let turn = session::Driver::new(&contract)
            .start(
                &mut host,
                &mut NoCheckpoints,
                flag_text,
                Some(intent),
                None,
                // The user's request, which QUERY_FRAME quotes must come from.
                &serde_json::json!({"request": "please fix login"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            )
            .unwrap();
        assert!(
            matches!(turn.stop, Stop::Waiting | Stop::Finished(_)),
            "{:?}",
            turn.stop
        );
        let instance = turn.instance;
        Driver {
            contract,
            instance,
            facts,
            effects,
        }
    }

    pub(crate) fn state(&self) -> &str {
        &self.instance.state
    }

    /// Submits a payload; on success the new instance is committed.
    pub(crate) fn submit(&mut self, payload: Value, tools: &[&str]) -> Result<Accepted, Rejection> {
        let mut host = AlwaysSucceeds {
            facts: &self.facts,
            performed: &mut self.effects,
        };
        let tools_called = tools.iter().map(|t| (*t).to_string()).collect();
        let turn = session::Driver::new(&self.contract).submit(
            &mut host,
            &mut NoCheckpoints,
            self.instance.clone(),
            payload,
            tools_called,
        );
        match turn.stop {
            Stop::Refused(rejection) => Err(*rejection),
            Stop::Waiting | Stop::Finished(_) => {
                self.instance = turn.instance;
                Ok(turn.steps.into_iter().next().expect("an accepted step"))
            }
            other => panic!("the driver stopped with {other:?}"),
        }
    }

    /// Submits and requires acceptance into `expected`.
    pub(crate) fn ok(&mut self, payload: Value, tools: &[&str], expected: &str) -> Accepted {
        let from = self.state().to_string();
        match self.submit(payload, tools) {
            Ok(t) => {
                assert_eq!(t.to, expected, "from {from}");
                t
            }
            Err(r) => panic!(
                "{from}: rejected with {}: {}",
                r.message.key, r.message.text
            ),
        }
    }

    /// Submits and requires a rejection with `key`; checks the state did not move.
    pub(crate) fn rejected(&mut self, payload: Value, tools: &[&str], key: &str) -> Rejection {
        let before = self.instance.clone();
        match self.submit(payload, tools) {
            Ok(t) => panic!(
                "{}: accepted into {}, expected rejection {key}",
                before.state, t.to
            ),
            Err(r) => {
                assert_eq!(r.message.key, key, "{}: {}", before.state, r.message.text);
                assert_eq!(self.instance, before, "a rejection changed the instance");
                r
            }
        }
    }
}

/// Installs the npm packages of `tests/<name>` with `npm ci` unless `marker` (a path
/// under its `node_modules`) exists, as `.ci/run` does, so `cargo test` works on a fresh
/// clone. Once per test run and package; the error says what failed.
pub(crate) fn npm_package(name: &str, marker: &str) -> Result<PathBuf, String> {
    // The install is once per package; the answer is the caller's own marker (two tests
    // may ask one package for different files: Codex's launcher and its native binary).
    static INSTALLED: std::sync::Mutex<Vec<(String, Result<(), String>)>> =
        std::sync::Mutex::new(Vec::new());
    let mut installed = INSTALLED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = repo().join("tests").join(name);
    let target = dir.join("node_modules").join(marker);
    let found = |target: PathBuf| {
        if target.exists() {
            Ok(target)
        } else {
            Err(format!("tests/{name} has no {marker} after `npm ci`"))
        }
    };
    if let Some((_, result)) = installed.iter().find(|(n, _)| n == name) {
        return result.clone().and_then(|()| found(target));
    }
    if target.exists() {
        installed.push((name.to_string(), Ok(())));
        return Ok(target);
    }
    let result = match crate::sealed::setup_command("npm")
        .args(["ci", "--prefix"])
        .arg(&dir)
        .args(["--no-audit", "--no-fund", "--loglevel=error"])
        .output()
    {
        Err(e) => Err(format!("tests/{name} needs npm: {e}")),
        Ok(out) if !out.status.success() => Err(format!(
            "`npm ci --prefix tests/{name}` failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )),
        Ok(_) => Ok(()),
    };
    installed.push((name.to_string(), result.clone()));
    result.and_then(|()| found(target))
}

/// Makes `dir` a git repository on `main` with `files` (path, text) committed, and a
/// user name and email configured for later commits.
pub(crate) fn git_repo(dir: &std::path::Path, files: &[(&str, &str)]) {
    let repository =
        git2::Repository::init_opts(dir, git2::RepositoryInitOptions::new().initial_head("main"))
            .unwrap();
    for (path, text) in files {
        let abs = dir.join(path);
        std::fs::create_dir_all(abs.parent().unwrap()).unwrap();
        std::fs::write(abs, text).unwrap();
    }
    let mut index = repository.index().unwrap();
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .unwrap();
    index.write().unwrap();
    let tree = repository.find_tree(index.write_tree().unwrap()).unwrap();
    let who = git2::Signature::now("test", "test@example.com").unwrap();
    repository
        .commit(Some("HEAD"), &who, &who, "initial", &tree, &[])
        .unwrap();
    let mut config = repository.config().unwrap();
    config.set_str("user.name", "test").unwrap();
    config.set_str("user.email", "test@example.com").unwrap();
}

/// A temporary directory removed when the test ends, pass or fail.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    /// `code-intel-sandbox-{name}-{pid}` under the system temporary directory: created
    /// empty, canonicalized.
    pub(crate) fn new(name: &str) -> TempDir {
        let path =
            std::env::temp_dir().join(format!("code-intel-sandbox-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path.canonicalize().unwrap())
    }

    /// `leaf` under the system temporary directory, whatever was left there removed and
    /// nothing created: the caller makes the directory (or its contents).
    pub(crate) fn claim(leaf: &str) -> TempDir {
        TempDir::at(std::env::temp_dir().join(leaf))
    }

    /// As [`TempDir::claim`], for a path of the caller's (a sibling of another one).
    pub(crate) fn at(path: PathBuf) -> TempDir {
        let _ = std::fs::remove_dir_all(&path);
        TempDir(path)
    }

    /// As [`TempDir::claim`], with the directory created empty.
    pub(crate) fn create(leaf: &str) -> TempDir {
        let dir = TempDir::claim(leaf);
        std::fs::create_dir_all(&dir.0).unwrap();
        dir
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child process killed and reaped when dropped (the test fails or ends).
pub(crate) struct Reaped(pub(crate) std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A scripted model server on loopback (`tests/claude/model_server.py`,
/// `tests/codex/model_server.py`): it prints `PORT <n>` once it listens and records every
/// request in `record`; its stderr goes to `log`. Killed when dropped.
pub(crate) struct ModelServer {
    _child: Reaped,
    pub(crate) port: u16,
    pub(crate) log: PathBuf,
}

impl ModelServer {
    /// Starts `server` (a repository-relative Python script) on `script`; fails the test
    /// with the server's log when it does not report its port within 30 s.
    pub(crate) fn start(server: &str, script: &Path, record: &Path, log: &Path) -> ModelServer {
        ModelServer::start_at("127.0.0.1", server, script, record, log)
    }

    /// As [`ModelServer::start`], listening on `host` (an address of this machine: the
    /// Docker bridge's, for a client in a container).
    pub(crate) fn start_at(
        host: &str,
        server: &str,
        script: &Path,
        record: &Path,
        log: &Path,
    ) -> ModelServer {
        use std::io::{BufRead, BufReader};
        let stderr = std::fs::File::create(log).unwrap();
        let mut child = crate::sealed::command("python3")
            .arg(repo().join(server))
            .arg(script)
            .arg(record)
            .env("MODEL_SERVER_HOST", host)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("python3 is needed for the model server: {e}"));
        let stdout = child.stdout.take().unwrap();
        let child = Reaped(child);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .unwrap_or_default();
        let port = line
            .strip_prefix("PORT ")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| {
                panic!(
                    "the model server did not start (first line {line:?}):\n{}",
                    std::fs::read_to_string(log).unwrap_or_default()
                )
            });
        ModelServer {
            _child: child,
            port,
            log: log.to_path_buf(),
        }
    }

    /// Every request body the server recorded, in order (`{"method", "path", "body"}`).
    pub(crate) fn requests(record: &Path) -> Vec<Value> {
        std::fs::read_to_string(record)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .collect()
    }
}

/// `code-intel init DIR --command BIN`, the only client configuration the client tests
/// give, returning what it printed; fails the test with init's output when it fails.
pub(crate) fn init_for_clients(dir: &Path) -> String {
    let bin = binary();
    let init = code_intel()
        .arg("init")
        .arg(dir)
        .arg("--command")
        .arg(&bin)
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "code-intel init failed:\n{}{}",
        String::from_utf8_lossy(&init.stdout),
        String::from_utf8_lossy(&init.stderr)
    );
    String::from_utf8_lossy(&init.stdout).into_owned()
}

/// A git repository for a server's sessions, with a state directory holding a test
/// checkpoint key (`CODE_INTEL_STATE_DIR` for the binary), both under one temporary
/// directory removed on drop. `.code-intel/config.yml` turns the background semantic sync
/// off: it would write into the repository after the test removed it.
pub(crate) struct SessionRepo {
    pub(crate) root: PathBuf,
    pub(crate) state: PathBuf,
    key: [u8; 32],
    _base: TempDir,
}

impl SessionRepo {
    /// `leaf` names the temporary directory; `files` are committed with the config.
    pub(crate) fn new(leaf: &str, key: [u8; 32], files: &[(&str, &str)]) -> SessionRepo {
        let base = TempDir::claim(&format!("{leaf}-{}", std::process::id()));
        let root = base.join("repo");
        let state = base.join("state");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&state).unwrap();
        let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
        std::fs::write(state.join("checkpoint.key"), hex).unwrap();
        let mut all = files.to_vec();
        all.push((
            ".code-intel/config.yml",
            "semantic:\n  sync_on_start: false\n",
        ));
        git_repo(&root, &all);
        SessionRepo {
            root: root.canonicalize().unwrap(),
            state,
            key,
            _base: base,
        }
    }

    pub(crate) fn server(&self) -> TestServer {
        let key = code_intel::server::SealKey::from_bytes(self.key);
        TestServer(
            code_intel::server::Server::new(
                &self.root,
                default_contract(),
                key,
                &crate::sealed::environment(),
            )
            .unwrap(),
        )
    }
}

/// A server whose drop waits for its background index build: a build still running
/// when the test ends would write `.code-intel/` into the removed repository again.
pub(crate) struct TestServer(pub(crate) code_intel::server::Server);

impl std::ops::Deref for TestServer {
    type Target = code_intel::server::Server;

    fn deref(&self) -> &code_intel::server::Server {
        &self.0
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let start = std::time::Instant::now();
        while self.0.index_building().is_some() && start.elapsed().as_secs() < 60 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

/// What a loopback HTTP server in a test saw of one request.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) request_line: String,
    pub(crate) authorization: Option<String>,
    pub(crate) body: serde_json::Value,
}

/// A minimal HTTP/1.1 request reader for the tests' loopback servers: the head up to the
/// blank line, then a body of `Content-Length` bytes (JSON, else `null`).
pub(crate) fn read_request(
    timeout: std::time::Duration,
    mut stream: &std::net::TcpStream,
) -> Option<Seen> {
    use std::io::Read;
    stream.set_read_timeout(Some(timeout)).ok()?;
    let mut data = Vec::new();
    let mut buffer = [0u8; 8192];
    let head_end = loop {
        let n = stream.read(&mut buffer).ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buffer[..n]);
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).to_string();
    let header = |name: &str| {
        head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
    };
    let length: usize = header("content-length")?.parse().ok()?;
    while data.len() < head_end + length {
        let n = stream.read(&mut buffer).ok()?;
        if n == 0 {
            break;
        }
        data.extend_from_slice(&buffer[..n]);
    }
    let body = serde_json::from_slice(&data[head_end..(head_end + length).min(data.len())])
        .unwrap_or(serde_json::Value::Null);
    Some(Seen {
        request_line: head.lines().next().unwrap_or("").to_owned(),
        authorization: header("authorization"),
        body,
    })
}

/// Writes a reply of a tests' loopback HTTP server: the status, JSON content type, the
/// given headers, and the body; the connection closes after it.
pub(crate) fn write_response(
    mut stream: &std::net::TcpStream,
    status: u16,
    headers: &[(&str, String)],
    body: &str,
) -> std::io::Result<()> {
    use std::io::Write;
    let mut head = format!(
        "HTTP/1.1 {status} Scripted\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    stream.flush()
}

/// A stand-in `agent-runner` at `dir/agent-runner`: each attempt runs 0.2 s and writes a
/// complete result; with `log`, it appends `start <task id>` and `end <task id>` there.
pub(crate) fn quick_agent_runner(dir: &Path, log: Option<&Path>) -> PathBuf {
    let log = log.map_or_else(|| "/dev/null".to_string(), |l| l.display().to_string());
    let script = format!(
        r#"#!/bin/sh
task=$1; shift
result=
while [ $# -gt 0 ]; do
  case $1 in --result-file) result=$2; shift 2;; *) shift;; esac
done
id=$(sed -n 's/^ *"id": "\([^"]*\)",*$/\1/p' "$task" | head -1)
echo "start $id" >> '{log}'
sleep 0.2
printf '{{"status":"complete","exit_code":0,"summary":"done"}}' > "$result"
echo "end $id" >> '{log}'
"#
    );
    let path = dir.join("agent-runner");
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A child process sent SIGTERM and waited for when dropped (a daemon a test started
/// stops with the test, whatever way it ends).
pub(crate) struct Terminated(pub std::process::Child);

impl Drop for Terminated {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.0.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.0.wait();
    }
}

/// Where a `multiverse serve` listens, as its "serving URL" line says.
pub(crate) struct Served {
    /// `http://127.0.0.1:PORT/?token=TOKEN`.
    pub url: String,
    pub port: u16,
    pub token: String,
}

/// Waits (a minute at most) for the "serving URL" line on the piped stderr of a
/// `multiverse serve` child of the workspace `dir`, then drains the rest on a thread so
/// the daemon never blocks on a full pipe. The line names no token (stderr is no
/// terminal): the port and the token come from the workspace's `daemon.json`, as a client
/// finds them.
pub(crate) fn served(child: &mut std::process::Child, dir: &Path) -> Served {
    use std::io::{BufRead as _, BufReader};
    let mut reader = BufReader::new(child.stderr.take().expect("stderr piped"));
    let mut line = String::new();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !line.contains("serving http://127.0.0.1:") {
        line.clear();
        assert!(std::time::Instant::now() < until, "serve did not listen");
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "serve ended before it listened"
        );
    }
    std::thread::spawn(move || for _ in reader.lines() {});
    let info: Value =
        serde_json::from_slice(&std::fs::read(dir.join("daemon.json")).unwrap()).unwrap();
    let port = u16::try_from(info["port"].as_u64().unwrap()).unwrap();
    let token = info["token"].as_str().unwrap().to_string();
    assert!(
        line.contains(&format!("127.0.0.1:{port}/")) && !line.contains(&token),
        "the serving line names the port and never the token: {line}"
    );
    Served {
        url: format!("http://127.0.0.1:{port}/?token={token}"),
        port,
        token,
    }
}

/// `multiverse --workspace DIR/ws ARGS` with `HOME` at `dir` (the Multiverse tests' one
/// way to run the binary against their workspace).
pub(crate) fn mv(dir: &Path, args: &[&str]) -> std::process::Output {
    crate::sealed::command(env!("CARGO_BIN_EXE_multiverse"))
        .arg("--workspace")
        .arg(dir.join("ws"))
        .args(args)
        .env("HOME", dir)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// A finished command's status, stdout and stderr, for an assertion's message.
pub(crate) fn output_text(o: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
