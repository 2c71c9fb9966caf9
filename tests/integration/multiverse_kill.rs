//! `kill -9` of a working Multiverse daemon at random moments loses nothing it
//! acknowledged: a client adds tasks, asks for tasks by chat and switches execution on and
//! off while its attempts run, the daemon is killed with SIGKILL after a random delay and
//! started again, 60 times by default. Every task whose add was answered is in the plan;
//! every chat turn that was answered has its tasks in the plan and its reply in its
//! session; the execution state is the last one set (or the one in flight at the kill);
//! and `multiverse check` finds the state files equal to the journal's fold. The seed is
//! printed; `CODE_INTEL_KILL_SEED` replays one and `CODE_INTEL_MV_KILLS` sets how many.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{TempDir, mv};

fn multiverse() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_multiverse"))
}

/// A tiny xorshift: the delays need to be random, not good.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// What the daemon acknowledged: tasks added, chat turns answered (session, reply, the
/// tasks created), execution states set (with those sent since whose answers were lost).
#[derive(Default)]
struct Acknowledged {
    tasks: Vec<String>,
    turns: Vec<(String, String, Vec<String>)>,
    execution: Option<String>,
    /// The states of execution changes sent since the last acknowledged one, whose
    /// answers were lost: any of them may have landed.
    execution_unanswered: Vec<String>,
}

fn call(port: u16, token: &str, method: &str, path: &str, body: Option<Value>) -> Option<Value> {
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(20)))
        .build()
        .new_agent();
    let url = format!("http://127.0.0.1:{port}{path}");
    let auth = format!("Bearer {token}");
    let sent = match body {
        Some(body) => agent
            .post(&url)
            .header("Authorization", &auth)
            .header("Content-Type", "application/json")
            .send(&serde_json::to_vec(&body).unwrap()[..]),
        None => agent.get(&url).header("Authorization", &auth).call(),
    };
    let mut reply = sent.ok()?;
    let status = reply.status().as_u16();
    let text = reply.body_mut().read_to_string().ok()?;
    assert!(
        status == 200 || status == 503,
        "{method} {path}: {status} {text}"
    );
    (status == 200).then(|| serde_json::from_str(&text).unwrap())
}

/// The client's work until `stop`: each operation recorded once it was answered.
fn client(
    port: u16,
    token: String,
    round: u64,
    stop: Arc<AtomicBool>,
    ack: Arc<Mutex<Acknowledged>>,
) {
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        match n % 4 {
            0 | 1 => {
                let id = format!("k{round}-{n}");
                let body = json!({"id": id, "title": format!("task {id}")});
                if call(port, &token, "POST", "/api/tasks", Some(body)).is_some() {
                    ack.lock().unwrap().tasks.push(id);
                }
            }
            2 => {
                let message = format!("- chat {round}-{n}");
                let body = json!({"message": message});
                // A turn that creates tasks starts execution (autopilot).
                ack.lock()
                    .unwrap()
                    .execution_unanswered
                    .push("RUNNING".into());
                if let Some(turn) = call(port, &token, "POST", "/api/chat", Some(body)) {
                    let created: Vec<String> = turn["patch"]["created"]
                        .as_array()
                        .map(|c| {
                            c.iter()
                                .map(|t| t["id"].as_str().unwrap().to_string())
                                .collect()
                        })
                        .unwrap_or_default();
                    let session = turn["session"].as_str().unwrap().to_string();
                    let reply = turn["reply"].as_str().unwrap().to_string();
                    let mut ack = ack.lock().unwrap();
                    if turn["autopilot"] == true {
                        ack.execution = Some("RUNNING".into());
                        ack.execution_unanswered.clear();
                    } else {
                        ack.execution_unanswered.pop();
                    }
                    ack.turns.push((session, reply, created));
                }
            }
            _ => {
                let state = if n % 8 == 3 { "PAUSED" } else { "RUNNING" };
                ack.lock()
                    .unwrap()
                    .execution_unanswered
                    .push(state.to_string());
                let body = json!({"state": state});
                if call(port, &token, "POST", "/api/execution", Some(body)).is_some() {
                    let mut ack = ack.lock().unwrap();
                    ack.execution = Some(state.to_string());
                    ack.execution_unanswered.clear();
                }
            }
        }
    }
}

#[test]
fn sixty_kills_of_a_working_daemon_lose_nothing_it_acknowledged() {
    let kills: u64 = std::env::var("CODE_INTEL_MV_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let seed: u64 = std::env::var("CODE_INTEL_KILL_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("multiverse kill test: seed {seed}, {kills} kills\n").as_bytes(),
    );
    let mut rng = Rng(seed);
    let tmp = TempDir::new("mv-kill");
    let dir = tmp.path();
    let project = dir.join("project");
    std::fs::create_dir_all(&project).unwrap();
    crate::support::git_repo(&project, &[("README.md", "# project\n")]);
    let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/agents/hello-agent.sh");
    let o = mv(
        dir,
        &[
            "init",
            project.to_str().unwrap(),
            "--planner",
            "mock",
            "--worker-command",
            agent.to_str().unwrap(),
            "--unsafe-local",
            "--agent-runner",
            env!("CARGO_BIN_EXE_agent-runner"),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let ack = Arc::new(Mutex::new(Acknowledged::default()));
    for round in 0..kills {
        let mut child = crate::sealed::command(multiverse())
            .args(["--workspace", dir.join("ws").to_str().unwrap(), "serve"])
            .env("HOME", dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let served = crate::support::served(&mut child, &dir.join("ws"));
        // What the last round acknowledged survived its kill.
        check_acknowledged(dir, served.port, &served.token, &ack.lock().unwrap(), round);
        let stop = Arc::new(AtomicBool::new(false));
        let worker = {
            let (stop, ack, token) = (stop.clone(), ack.clone(), served.token.clone());
            std::thread::spawn(move || client(served.port, token, round, stop, ack))
        };
        std::thread::sleep(Duration::from_millis(50 + rng.below(600)));
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        let _ = child.wait();
        stop.store(true, Ordering::SeqCst);
        worker.join().unwrap();
    }
    // The last kill too: the state as a reader finds it, then `check`.
    let ack = ack.lock().unwrap();
    let state: Vec<Value> =
        serde_json::from_slice(&mv(dir, &["--json", "task", "list"]).stdout).unwrap();
    for id in &ack.tasks {
        assert!(
            state.iter().any(|t| t["id"] == id.as_str()),
            "task {id} lost (seed {seed})"
        );
    }
    let o = mv(dir, &["check"]);
    assert_eq!(o.status.code(), Some(0), "seed {seed}: {o:?}");
    assert!(
        ack.tasks.len() as u64 >= kills / 2,
        "the client got little done: {} tasks",
        ack.tasks.len()
    );
    assert!(!ack.turns.is_empty(), "no chat turn was answered");
}

/// Every acknowledged change is in the restarted daemon's state and logs.
fn check_acknowledged(dir: &Path, port: u16, token: &str, ack: &Acknowledged, round: u64) {
    let tasks = call(port, token, "GET", "/api/tasks", None).expect("the task list");
    let ids: Vec<&str> = tasks
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    for id in &ack.tasks {
        assert!(
            ids.contains(&id.as_str()),
            "round {round}: task {id} was acknowledged and lost"
        );
    }
    for (session, reply, created) in &ack.turns {
        for id in created {
            assert!(
                ids.contains(&id.as_str()),
                "round {round}: chat task {id} lost"
            );
        }
        let log = std::fs::read_to_string(dir.join(format!("ws/chat/{session}.jsonl"))).unwrap();
        let kept = log
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|m| m["role"] == "assistant" && m["content"] == reply.as_str());
        assert!(
            kept,
            "round {round}: the reply of {session} was acknowledged and lost"
        );
    }
    if let Some(set) = &ack.execution {
        let status = call(port, token, "GET", "/api/execution", None).expect("the execution");
        let now = status["state"].as_str().unwrap_or_default();
        assert!(
            now == set || ack.execution_unanswered.iter().any(|s| s == now),
            "round {round}: execution is {now}, {set} was acknowledged ({status})"
        );
    }
}
