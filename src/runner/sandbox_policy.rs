//! What the worker's container may use and who it runs as: `runner.sandbox` as written
//! ([`SandboxSpec`]) and resolved against this host ([`SandboxPolicy`]), turned into
//! `docker run` options. docs/agent-runner.md "Sandbox policy" says what a worker can and
//! cannot do under each setting.
//!
//! The original started the container as root with no limit of any kind (AR-M28): a
//! worker that fork-bombed or ate memory took the host down, and every file it wrote into
//! the mounted repository was root's. Here every container has a memory, CPU and process
//! limit, no capabilities, `no-new-privileges`, and runs as the invoking user unless the
//! task asks for root.

use schemars::JsonSchema;
use serde::Deserialize;

/// The home directory of the worker inside the container: a tmpfs owned by the run user,
/// whatever the image's users are, so a CLI can keep its state there.
pub(crate) const CONTAINER_HOME: &str = "/home/agent";
/// The memory limit when the task sets none: half the host's memory, at most this.
const DEFAULT_MEMORY_CAP: u64 = 8 << 30;
/// The CPU limit when the task sets none: the host's cores, at most this many.
const DEFAULT_CPUS_CAP: f64 = 4.0;
/// Processes and threads (the cgroup's pids limit counts both) when the task sets none.
pub(crate) const DEFAULT_PIDS: u32 = 4096;
/// Docker's own floor for `--memory`.
const MIN_MEMORY: u64 = 6 << 20;
/// Capabilities a task may add back: Docker's default set. Anything else (SYS_ADMIN,
/// NET_ADMIN, ...) would open the sandbox and is refused.
const ADDABLE_CAPS: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "NET_RAW",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// `runner.sandbox` in the task file: limits and identity of the worker's container.
/// Ignored with `--unsafe-local`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxSpec {
    /// Memory limit, swap included: bytes, or a number with `k`, `m` or `g` (`"4g"`).
    /// Default: half the host's memory, at most 8g.
    #[serde(default)]
    pub memory: Option<Size>,
    /// CPU limit in cores (`1.5`). Default: the host's cores, at most 4; more than the
    /// host has is lowered to what it has.
    #[serde(default)]
    #[schemars(range(min = 0.01, max = 1024.0))]
    pub cpus: Option<f64>,
    /// Processes and threads the container may hold at once (default 4096).
    #[serde(default)]
    #[schemars(range(min = 16, max = 4_194_304))]
    pub pids: Option<u32>,
    /// `bridge` (default: the worker reaches its model API), `none` (no network at all),
    /// or the name of a Docker network you made. `host` is refused.
    #[serde(default)]
    pub network: Option<String>,
    /// Who the worker runs as: `host` (default: your uid and gid, so the files it writes
    /// are yours), `root`, or `UID:GID`.
    #[serde(default)]
    pub user: Option<String>,
    /// Capabilities given back (all are dropped): names from Docker's default set, e.g.
    /// `[CHOWN, SETUID, SETGID, DAC_OVERRIDE, FOWNER]` for `apt-get` as root.
    #[serde(default)]
    pub cap_add: Vec<String>,
}

/// A size: bytes, or a string with a unit.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Size {
    Bytes(u64),
    Text(String),
}

/// Who the worker runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunAs {
    /// uid and gid (the invoking user's, or the task's `UID:GID`).
    User {
        uid: u32,
        gid: u32,
    },
    Root,
}

/// The container's network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Network {
    Bridge,
    None,
    Named(String),
}

/// `runner.sandbox` resolved: every limit set.
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxPolicy {
    pub memory_bytes: u64,
    pub cpus: f64,
    pub pids: u32,
    pub network: Network,
    pub run_as: RunAs,
    pub cap_add: Vec<String>,
}

/// A `runner.sandbox` value that cannot be used; the text names the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    /// The key under `runner.sandbox`.
    pub key: &'static str,
    pub message: String,
    pub help: String,
}

impl std::fmt::Display for PolicyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`runner.sandbox.{}`: {}", self.key, self.message)
    }
}

impl std::error::Error for PolicyError {}

/// What the host has, read once by the caller (tests pass their own).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostFacts {
    pub memory_bytes: Option<u64>,
    pub cores: usize,
    pub uid: u32,
    pub gid: u32,
}

impl HostFacts {
    /// This machine and this process.
    pub fn current() -> HostFacts {
        HostFacts {
            memory_bytes: host_memory(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            uid: nix::unistd::getuid().as_raw(),
            gid: nix::unistd::getgid().as_raw(),
        }
    }
}

/// `MemTotal` from `/proc/meminfo`.
fn host_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

impl SandboxSpec {
    /// Checks the values alone (at load time, with positions); [`SandboxSpec::resolve`]
    /// applies the host.
    pub fn check(&self) -> Result<(), PolicyError> {
        self.resolve(&HostFacts {
            memory_bytes: None,
            cores: 1024,
            uid: 0,
            gid: 0,
        })
        .map(|_| ())
    }

    /// The policy for a run on `host`.
    pub fn resolve(&self, host: &HostFacts) -> Result<SandboxPolicy, PolicyError> {
        let memory_bytes = match &self.memory {
            Some(size) => parse_size(size)?,
            None => host
                .memory_bytes
                .map_or(DEFAULT_MEMORY_CAP, |m| (m / 2).min(DEFAULT_MEMORY_CAP))
                .max(MIN_MEMORY),
        };
        let cores = host.cores.max(1) as f64;
        let cpus = match self.cpus {
            Some(c) if !(0.01..=1024.0).contains(&c) => {
                return Err(PolicyError {
                    key: "cpus",
                    message: format!("{c} cores is out of range"),
                    help: "give a number of cores from 0.01 up, such as 1 or 1.5".into(),
                });
            }
            Some(c) => c.min(cores),
            None => cores.min(DEFAULT_CPUS_CAP),
        };
        let network = match self.network.as_deref().map(str::trim) {
            None | Some("bridge") => Network::Bridge,
            Some("none") => Network::None,
            Some(name @ ("host" | "default")) => {
                return Err(PolicyError {
                    key: "network",
                    message: format!(
                        "`{name}` would share the host's network, loopback services included"
                    ),
                    help: "use `bridge`, `none`, or a network made with `docker network create`"
                        .into(),
                });
            }
            Some(name) if valid_network_name(name) => Network::Named(name.to_string()),
            Some(name) => {
                return Err(PolicyError {
                    key: "network",
                    message: format!("{name:?} is not a Docker network name"),
                    help:
                        "use `bridge`, `none`, or a network name (letters, digits, `_`, `.`, `-`)"
                            .into(),
                });
            }
        };
        let run_as = match self.user.as_deref().map(str::trim) {
            None | Some("host") => RunAs::User {
                uid: host.uid,
                gid: host.gid,
            },
            Some("root") => RunAs::Root,
            Some(text) => parse_uid_gid(text).ok_or_else(|| PolicyError {
                key: "user",
                message: format!("{text:?} is not `host`, `root` or `UID:GID`"),
                help: "write `user: host` (your uid and gid), `user: root`, or numbers such as `user: \"1000:1000\"`".into(),
            })?,
        };
        let mut cap_add = Vec::new();
        for cap in &self.cap_add {
            let name = cap.trim().to_ascii_uppercase();
            let name = name.strip_prefix("CAP_").unwrap_or(&name).to_string();
            if !ADDABLE_CAPS.contains(&name.as_str()) {
                return Err(PolicyError {
                    key: "cap_add",
                    message: format!("the capability {cap:?} cannot be given to a worker"),
                    help: format!("one of {}", ADDABLE_CAPS.join(", ")),
                });
            }
            if !cap_add.contains(&name) {
                cap_add.push(name);
            }
        }
        Ok(SandboxPolicy {
            memory_bytes,
            cpus,
            pids: self.pids.unwrap_or(DEFAULT_PIDS),
            network,
            run_as,
            cap_add,
        })
    }
}

fn valid_network_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name.len() <= 128
        && chars.all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
}

fn parse_uid_gid(text: &str) -> Option<RunAs> {
    let (uid, gid) = text.split_once(':')?;
    let uid: u32 = uid.trim().parse().ok()?;
    let gid: u32 = gid.trim().parse().ok()?;
    Some(if uid == 0 {
        RunAs::Root
    } else {
        RunAs::User { uid, gid }
    })
}

/// Bytes, or `<integer><unit>` with `b`, `k`, `m`, `g` (binary, as Docker reads them).
fn parse_size(size: &Size) -> Result<u64, PolicyError> {
    let bad = |text: String| PolicyError {
        key: "memory",
        message: format!("{text} is not a memory size"),
        help: "give bytes or a number with k, m or g, such as \"512m\" or \"4g\"".into(),
    };
    let bytes = match size {
        Size::Bytes(b) => *b,
        Size::Text(text) => {
            let t = text.trim().to_ascii_lowercase();
            let t = t
                .strip_suffix("ib")
                .or_else(|| t.strip_suffix('b'))
                .unwrap_or(&t);
            let (digits, shift) = match t.char_indices().last() {
                Some((i, 'k')) => (&t[..i], 10),
                Some((i, 'm')) => (&t[..i], 20),
                Some((i, 'g')) => (&t[..i], 30),
                _ => (t, 0),
            };
            let n: u64 = digits
                .trim()
                .parse()
                .map_err(|_| bad(format!("{text:?}")))?;
            n.checked_mul(1 << shift)
                .ok_or_else(|| bad(format!("{text:?}")))?
        }
    };
    if bytes < MIN_MEMORY {
        return Err(PolicyError {
            key: "memory",
            message: format!("{bytes} bytes is below Docker's minimum of 6m"),
            help: "give at least \"6m\"; a coding agent needs a few gigabytes".into(),
        });
    }
    Ok(bytes)
}

impl SandboxPolicy {
    /// The `docker run` options that enforce the policy.
    pub fn docker_run_args(&self) -> Vec<String> {
        let mut args: Vec<String> = vec![
            "--memory".into(),
            self.memory_bytes.to_string(),
            // Equal to the memory limit: no swap on top of it.
            "--memory-swap".into(),
            self.memory_bytes.to_string(),
            "--cpus".into(),
            format_cpus(self.cpus),
            "--pids-limit".into(),
            self.pids.to_string(),
            "--network".into(),
            match &self.network {
                Network::Bridge => "bridge".into(),
                Network::None => "none".into(),
                Network::Named(name) => name.clone(),
            },
            "--security-opt".into(),
            "no-new-privileges".into(),
            "--cap-drop".into(),
            "ALL".into(),
        ];
        for cap in &self.cap_add {
            args.push("--cap-add".into());
            args.push(cap.clone());
        }
        let (uid, gid) = match self.run_as {
            RunAs::User { uid, gid } => (uid, gid),
            RunAs::Root => (0, 0),
        };
        args.push("--user".into());
        args.push(format!("{uid}:{gid}"));
        args
    }

    /// The run user's uid and gid.
    pub fn ids(&self) -> (u32, u32) {
        match self.run_as {
            RunAs::User { uid, gid } => (uid, gid),
            RunAs::Root => (0, 0),
        }
    }

    /// One line for logs and the Task Note.
    pub fn describe(&self) -> String {
        let network = match &self.network {
            Network::Bridge => "bridge".to_string(),
            Network::None => "none".to_string(),
            Network::Named(name) => name.clone(),
        };
        let user = match self.run_as {
            RunAs::User { uid, gid } => format!("{uid}:{gid}"),
            RunAs::Root => "root".to_string(),
        };
        format!(
            "memory {} MiB, {} CPUs, {} pids, network {network}, user {user}, capabilities {}",
            self.memory_bytes >> 20,
            format_cpus(self.cpus),
            self.pids,
            if self.cap_add.is_empty() {
                "none".to_string()
            } else {
                self.cap_add.join(",")
            }
        )
    }
}

/// `2`, `1.5`, `0.25`: as short as exact.
fn format_cpus(cpus: f64) -> String {
    let text = format!("{cpus:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: HostFacts = HostFacts {
        memory_bytes: Some(24 << 30),
        cores: 2,
        uid: 1000,
        gid: 1001,
    };

    fn spec(yaml: &str) -> SandboxSpec {
        serde_json::from_value(serde_json::from_str(yaml).unwrap()).unwrap()
    }

    #[test]
    fn defaults_limit_everything_and_run_as_the_invoking_user() {
        let policy = SandboxSpec::default().resolve(&HOST).unwrap();
        assert_eq!(policy.memory_bytes, 8 << 30);
        assert_eq!(policy.cpus, 2.0);
        assert_eq!(policy.pids, DEFAULT_PIDS);
        assert_eq!(policy.network, Network::Bridge);
        assert_eq!(
            policy.run_as,
            RunAs::User {
                uid: 1000,
                gid: 1001
            }
        );
        assert_eq!(
            policy.docker_run_args().join(" "),
            "--memory 8589934592 --memory-swap 8589934592 --cpus 2 --pids-limit 4096 \
             --network bridge --security-opt no-new-privileges --cap-drop ALL --user 1000:1001"
        );
        let small = HostFacts {
            memory_bytes: Some(4 << 30),
            cores: 16,
            ..HOST
        };
        let policy = SandboxSpec::default().resolve(&small).unwrap();
        assert_eq!((policy.memory_bytes, policy.cpus), (2 << 30, 4.0));
    }

    #[test]
    fn overrides_are_read_and_bounded() {
        let policy = spec(
            r#"{"memory": "512m", "cpus": 1.5, "pids": 64, "network": "none",
                "user": "root", "cap_add": ["chown", "CAP_SETUID", "CHOWN"]}"#,
        )
        .resolve(&HOST)
        .unwrap();
        assert_eq!(policy.memory_bytes, 512 << 20);
        assert_eq!(policy.cpus, 1.5);
        assert_eq!(policy.run_as, RunAs::Root);
        assert_eq!(policy.cap_add, ["CHOWN", "SETUID"]);
        let args = policy.docker_run_args().join(" ");
        assert!(
            args.contains("--cpus 1.5 --pids-limit 64 --network none"),
            "{args}"
        );
        assert!(
            args.ends_with("--cap-add CHOWN --cap-add SETUID --user 0:0"),
            "{args}"
        );
        // More cores than the host has: what it has.
        assert_eq!(spec(r#"{"cpus": 64}"#).resolve(&HOST).unwrap().cpus, 2.0);
        assert_eq!(
            spec(r#"{"memory": 1073741824, "user": "1234:55", "network": "agents"}"#)
                .resolve(&HOST)
                .unwrap(),
            SandboxPolicy {
                memory_bytes: 1 << 30,
                cpus: 2.0,
                pids: DEFAULT_PIDS,
                network: Network::Named("agents".into()),
                run_as: RunAs::User { uid: 1234, gid: 55 },
                cap_add: vec![],
            }
        );
        assert_eq!(
            spec(r#"{"memory": "2GiB"}"#)
                .resolve(&HOST)
                .unwrap()
                .memory_bytes,
            2 << 30
        );
    }

    #[test]
    fn bad_values_name_their_key() {
        for (yaml, key, words) in [
            (r#"{"memory": "lots"}"#, "memory", "not a memory size"),
            (r#"{"memory": "1k"}"#, "memory", "below Docker's minimum"),
            (
                r#"{"memory": "99999999999g"}"#,
                "memory",
                "not a memory size",
            ),
            (r#"{"cpus": 0}"#, "cpus", "out of range"),
            (
                r#"{"network": "host"}"#,
                "network",
                "share the host's network",
            ),
            (
                r#"{"network": "a b"}"#,
                "network",
                "not a Docker network name",
            ),
            (
                r#"{"user": "alice"}"#,
                "user",
                "not `host`, `root` or `UID:GID`",
            ),
            (
                r#"{"cap_add": ["SYS_ADMIN"]}"#,
                "cap_add",
                "cannot be given",
            ),
        ] {
            let err = spec(yaml).check().unwrap_err();
            assert_eq!(err.key, key, "{yaml}");
            assert!(err.to_string().contains(words), "{yaml}: {err}");
        }
    }
}
