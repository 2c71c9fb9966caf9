//! Session checkpoints on disk: one file per session under `.code-intel/sessions/`,
//! written atomically (temp file, fsync, rename, fsync of the directory), versioned,
//! capped in size, and sealed with a keyed hash whose key lives outside the repository.
//!
//! The seal is what lets the server and the write hook trust a checkpoint: an agent can
//! edit any file in the repository, but without the key it cannot produce a checkpoint
//! the server accepts, so it cannot advance a session by editing files. A tampered,
//! truncated or foreign checkpoint is refused with a reason, never trusted.

use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use sha2::Sha256;

use super::session_record::{RECORD_VERSION, SessionRecord};
use crate::codeintel::store::atomic_write;
use crate::environment::Environment;
use crate::machine::Instance;

/// Where sessions live, relative to the repository root.
pub(crate) const SESSIONS_DIR: &str = ".code-intel/sessions";
/// The file naming the session in progress (see [`Pointer`]).
pub(crate) const CURRENT_FILE: &str = "current.json";
/// The most bytes a checkpoint may take; larger records are reduced ([`reduce`]).
pub const MAX_CHECKPOINT_BYTES: usize = 256 * 1024;

// The budget of a checkpoint, enforced where the input arrives so that a record fits
// without reduction: the request (kept twice: as the session's request and as the
// instance's `params.request`) at most 1/4, the seen paths 1/4, the explored files 1/8;
// the remaining 3/8 (96 KiB) hold the tasks, summaries, tool history, the user's dirty
// files and the write gate. Sizes are counted as JSON text (quotes, escapes, a separator).

/// The longest request (JSON text) a session keeps.
pub(crate) const MAX_REQUEST_BYTES: usize = MAX_CHECKPOINT_BYTES / 8;
/// The most bytes (JSON text) of seen paths a record keeps (see `core::note_success`).
pub(crate) const SEEN_PATHS_BUDGET: usize = MAX_CHECKPOINT_BYTES / 4;
/// The most bytes (JSON text) of explored files a record keeps.
pub const EXPLORED_BUDGET: usize = MAX_CHECKPOINT_BYTES / 8;
/// The longest path (bytes) an agent may name as explored.
pub(crate) const MAX_PATH_BYTES: usize = 1024;

/// How many bytes `text` takes in a JSON array of strings: quotes, escapes, a comma.
pub(crate) fn json_text_len(text: &str) -> usize {
    let escaped: usize = text
        .chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf8(),
        })
        .sum();
    escaped + 3
}

/// [`json_text_len`] of every path.
pub(crate) fn paths_len<'a>(paths: impl IntoIterator<Item = &'a String>) -> usize {
    paths.into_iter().map(|p| json_text_len(p)).sum()
}
/// The environment variable that moves the key directory (tests, unusual homes).
pub(crate) const STATE_DIR_ENV: &str = "CODE_INTEL_STATE_DIR";

const FORMAT: &str = "code-intel-checkpoint";
const KEY_FILE: &str = "checkpoint.key";

/// Why a checkpoint could not be read or written. `key()` is stable for clients.
#[derive(Debug)]
pub enum CheckpointError {
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// The file is not a checkpoint (bad JSON, wrong format marker).
    Corrupt { path: PathBuf, reason: String },
    /// Written by another version of the server.
    Version { path: PathBuf, found: u32 },
    /// The seal does not match: edited by hand, from another repository, or sealed with
    /// another key.
    Tampered { path: PathBuf },
    /// Even after reduction the record exceeds [`MAX_CHECKPOINT_BYTES`].
    TooLarge { bytes: usize },
    /// No key directory could be found (no `$HOME`, no `$XDG_STATE_HOME`).
    NoKeyDir,
}

impl CheckpointError {
    pub fn key(&self) -> &'static str {
        match self {
            CheckpointError::Io { .. } => "checkpoint.io",
            CheckpointError::Corrupt { .. } => "checkpoint.corrupt",
            CheckpointError::Version { .. } => "checkpoint.version",
            CheckpointError::Tampered { .. } => "checkpoint.tampered",
            CheckpointError::TooLarge { .. } => "checkpoint.too_large",
            CheckpointError::NoKeyDir => "checkpoint.no_key_dir",
        }
    }

    /// The values of the failure, for the contract's message of [`CheckpointError::key`]
    /// (`{path}`, `{reason}`, `{found}`, `{expected}`, `{bytes}`, `{limit}`).
    pub fn args(&self) -> Vec<(&'static str, serde_json::Value)> {
        use serde_json::json;
        let path = |p: &Path| json!(p.display().to_string());
        match self {
            CheckpointError::Io { path: p, error } => {
                vec![("path", path(p)), ("reason", json!(error.to_string()))]
            }
            CheckpointError::Corrupt { path: p, reason } => {
                vec![("path", path(p)), ("reason", json!(reason))]
            }
            CheckpointError::Version { path: p, found } => vec![
                ("path", path(p)),
                ("found", json!(found)),
                ("expected", json!(RECORD_VERSION)),
            ],
            CheckpointError::Tampered { path: p } => vec![("path", path(p))],
            CheckpointError::TooLarge { bytes } => vec![
                ("bytes", json!(bytes)),
                ("limit", json!(MAX_CHECKPOINT_BYTES)),
            ],
            CheckpointError::NoKeyDir => Vec::new(),
        }
    }

    fn io(path: &Path, error: std::io::Error) -> CheckpointError {
        CheckpointError::Io {
            path: path.to_path_buf(),
            error,
        }
    }
}

impl fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckpointError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            CheckpointError::Corrupt { path, reason } => write!(
                f,
                "{} is not a valid checkpoint ({reason}); remove it or run `start_session` with --clean",
                path.display()
            ),
            CheckpointError::Version { path, found } => write!(
                f,
                "{} was written by checkpoint format {found}, this server reads format {RECORD_VERSION}; finish that session with the matching version or start a new one with --clean",
                path.display()
            ),
            CheckpointError::Tampered { path } => write!(
                f,
                "{} does not match its seal: it was edited, copied from another repository or sealed with another key, so it is not trusted; start a new session with --clean",
                path.display()
            ),
            CheckpointError::TooLarge { bytes } => write!(
                f,
                "the session state takes {bytes} bytes even after dropping phase summaries (limit {MAX_CHECKPOINT_BYTES})"
            ),
            CheckpointError::NoKeyDir => write!(
                f,
                "no directory for the checkpoint key: set {STATE_DIR_ENV}, XDG_STATE_HOME or HOME"
            ),
        }
    }
}

impl std::error::Error for CheckpointError {}

/// The sealing key: 32 random bytes kept in the user's state directory, outside every
/// repository, created on first use.
#[derive(Clone)]
pub struct SealKey([u8; 32]);

impl fmt::Debug for SealKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SealKey(..)")
    }
}

impl SealKey {
    /// The directory the key lives in: `$CODE_INTEL_STATE_DIR`, else
    /// `$XDG_STATE_HOME/code-intel`, else `$HOME/.local/state/code-intel`.
    pub fn dir(env: &Environment) -> Result<PathBuf, CheckpointError> {
        if let Some(dir) = env.path(STATE_DIR_ENV) {
            return Ok(dir);
        }
        env.xdg_dir("XDG_STATE_HOME", ".local/state")
            .map(|dir| dir.join("code-intel"))
            .ok_or(CheckpointError::NoKeyDir)
    }

    /// Loads the key, creating it when there is none yet.
    pub fn load_or_create(env: &Environment) -> Result<SealKey, CheckpointError> {
        let dir = SealKey::dir(env)?;
        let path = dir.join(KEY_FILE);
        if let Some(key) = SealKey::read(&path)? {
            return Ok(key);
        }
        std::fs::create_dir_all(&dir).map_err(|e| CheckpointError::io(&dir, e))?;
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| {
            CheckpointError::io(&path, std::io::Error::other(format!("no randomness: {e}")))
        })?;
        // `create_new` so that two servers starting at once agree on one key: the loser
        // reads the winner's.
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode_private()
            .open(&path)
            .and_then(|mut f| {
                f.write_all(hex(&bytes).as_bytes())?;
                f.sync_all()
            });
        match created {
            Ok(()) => Ok(SealKey(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => SealKey::read(&path)?
                .ok_or_else(|| CheckpointError::Corrupt {
                    path: path.clone(),
                    reason: "the key file is being written by another process".into(),
                }),
            Err(e) => Err(CheckpointError::io(&path, e)),
        }
    }

    /// Loads the key if it exists (the write hook never creates one: no key means no
    /// checkpoint could have been sealed).
    pub fn load(env: &Environment) -> Result<Option<SealKey>, CheckpointError> {
        SealKey::read(&SealKey::dir(env)?.join(KEY_FILE))
    }

    fn read(path: &Path) -> Result<Option<SealKey>, CheckpointError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(CheckpointError::io(path, e)),
        };
        let bytes = unhex(text.trim())
            .filter(|b| b.len() == 32)
            .ok_or_else(|| CheckpointError::Corrupt {
                path: path.to_path_buf(),
                reason: "the key file does not hold 64 hex digits".into(),
            })?;
        let mut key = [0u8; 32];
        key.copy_from_slice(&bytes);
        Ok(Some(SealKey(key)))
    }

    /// A key for tests and tools that must not touch the user's state directory.
    pub fn from_bytes(bytes: [u8; 32]) -> SealKey {
        SealKey(bytes)
    }

    fn seal(&self, root: &Path, record: &str) -> String {
        // The seal covers the repository's path too, so a checkpoint copied into another
        // repository is refused there.
        self.seal_parts(
            FORMAT,
            &[root.as_os_str().as_encoded_bytes(), record.as_bytes()],
        )
    }

    fn verify(&self, root: &Path, record: &str, seal: &str) -> bool {
        self.verify_parts(
            FORMAT,
            &[root.as_os_str().as_encoded_bytes(), record.as_bytes()],
            seal,
        )
    }

    /// The keyed hash (HMAC-SHA256, hex) of `parts` under `domain`: the domain, then each
    /// part after a zero byte. Every seal of the crate is made here, so a seal made for
    /// one purpose (a checkpoint, a line of a `.reads` file) never verifies for another.
    pub fn seal_parts(&self, domain: &str, parts: &[&[u8]]) -> String {
        hex(&self.mac(domain, parts).finalize().into_bytes())
    }

    /// Whether `seal` is [`SealKey::seal_parts`] of the same domain and parts
    /// (compared in constant time).
    pub fn verify_parts(&self, domain: &str, parts: &[&[u8]], seal: &str) -> bool {
        let Some(given) = unhex(seal) else {
            return false;
        };
        self.mac(domain, parts).verify_slice(&given).is_ok()
    }

    fn mac(&self, domain: &str, parts: &[&[u8]]) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(domain.as_bytes());
        for part in parts {
            mac.update(&[0]);
            mac.update(part);
        }
        mac
    }
}

/// Opening the key file readable by its owner only, where the platform has modes.
trait PrivateMode {
    fn mode_private(&mut self) -> &mut Self;
}

impl PrivateMode for std::fs::OpenOptions {
    #[cfg(unix)]
    fn mode_private(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt as _;
        self.mode(0o600)
    }
    #[cfg(not(unix))]
    fn mode_private(&mut self) -> &mut Self {
        self
    }
}

#[derive(Serialize)]
struct FileOut<'a> {
    format: &'a str,
    version: u32,
    seal: &'a str,
    record: &'a RawValue,
}

#[derive(Deserialize)]
struct FileIn<'a> {
    format: String,
    version: u32,
    seal: String,
    #[serde(borrow)]
    record: &'a RawValue,
}

/// The checkpoints of one repository.
#[derive(Debug, Clone)]
pub struct Checkpoints {
    /// The canonical repository root.
    root: PathBuf,
    key: SealKey,
}

impl Checkpoints {
    pub fn new(root: &Path, key: SealKey) -> Checkpoints {
        Checkpoints {
            root: root.to_path_buf(),
            key,
        }
    }

    pub fn dir(&self) -> PathBuf {
        self.root.join(SESSIONS_DIR)
    }

    /// The key this store seals with (the server checks the `.reads` files with it).
    pub fn key(&self) -> &SealKey {
        &self.key
    }

    pub fn path_of(&self, id: &str) -> PathBuf {
        self.dir().join(format!("{id}.json"))
    }

    /// Writes the record, reduced first when it is too large ([`reduce`]). The record
    /// passed in is left as it is; a reduced copy is returned so the caller can adopt
    /// what is on disk.
    pub fn save(&self, record: &SessionRecord) -> Result<Option<SessionRecord>, CheckpointError> {
        let path = self.path_of(&record.id);
        let (text, reduced) = self.encode(record)?;
        atomic_write(&path, text.as_bytes()).map_err(|e| CheckpointError::io(&path, e))?;
        // An unfinished session is the one in progress: the pointer names it, written
        // again if something removed it (the write hook finds the session through it).
        if !record.finished()
            && self.current().ok().flatten().as_deref() != Some(record.id.as_str())
        {
            self.point_at(
                &record.id,
                record
                    .write_gate
                    .texts
                    .get(crate::server::write_rule::UNREADABLE)
                    .cloned(),
            )?;
        }
        Ok(reduced)
    }

    /// Writes the record and returns it as it is on disk (reduced when it was too large):
    /// the record a caller adopts once the write succeeded, never before.
    pub fn save_owned(&self, record: SessionRecord) -> Result<SessionRecord, CheckpointError> {
        Ok(self.save(&record)?.unwrap_or(record))
    }

    fn encode(
        &self,
        record: &SessionRecord,
    ) -> Result<(String, Option<SessionRecord>), CheckpointError> {
        let mut current = std::borrow::Cow::Borrowed(record);
        for step in 0.. {
            let text = self.encode_exact(&current)?;
            if text.len() <= MAX_CHECKPOINT_BYTES {
                let reduced = match current {
                    std::borrow::Cow::Owned(r) => Some(r),
                    std::borrow::Cow::Borrowed(_) => None,
                };
                return Ok((text, reduced));
            }
            match reduce(&current, step) {
                Some(smaller) => current = std::borrow::Cow::Owned(smaller),
                None => return Err(CheckpointError::TooLarge { bytes: text.len() }),
            }
        }
        unreachable!("the loop returns")
    }

    fn encode_exact(&self, record: &SessionRecord) -> Result<String, CheckpointError> {
        let body = serde_json::to_string(record).map_err(|e| CheckpointError::Corrupt {
            path: self.path_of(&record.id),
            reason: e.to_string(),
        })?;
        let raw = RawValue::from_string(body).map_err(|e| CheckpointError::Corrupt {
            path: self.path_of(&record.id),
            reason: e.to_string(),
        })?;
        let seal = self.key.seal(&self.root, raw.get());
        serde_json::to_string(&FileOut {
            format: FORMAT,
            version: RECORD_VERSION,
            seal: &seal,
            record: &raw,
        })
        .map_err(|e| CheckpointError::Corrupt {
            path: self.path_of(&record.id),
            reason: e.to_string(),
        })
    }

    /// Reads and verifies one session's checkpoint; `Ok(None)` when there is none.
    pub fn load(&self, id: &str) -> Result<Option<SessionRecord>, CheckpointError> {
        if !valid_id(id) {
            return Err(CheckpointError::Corrupt {
                path: self.dir().join(id),
                reason: "not a session id".into(),
            });
        }
        let path = self.path_of(id);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(CheckpointError::io(&path, e)),
        };
        self.decode(&path, &bytes).map(Some)
    }

    fn decode(&self, path: &Path, bytes: &[u8]) -> Result<SessionRecord, CheckpointError> {
        let corrupt = |reason: String| CheckpointError::Corrupt {
            path: path.to_path_buf(),
            reason,
        };
        if bytes.len() > MAX_CHECKPOINT_BYTES * 2 {
            return Err(corrupt(format!(
                "{} bytes is far over the limit",
                bytes.len()
            )));
        }
        let file: FileIn<'_> = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
        if file.format != FORMAT {
            return Err(corrupt(format!("format marker {:?}", file.format)));
        }
        if file.version != RECORD_VERSION {
            return Err(CheckpointError::Version {
                path: path.to_path_buf(),
                found: file.version,
            });
        }
        if !self.key.verify(&self.root, file.record.get(), &file.seal) {
            return Err(CheckpointError::Tampered {
                path: path.to_path_buf(),
            });
        }
        let record: SessionRecord =
            serde_json::from_str(file.record.get()).map_err(|e| corrupt(e.to_string()))?;
        if record.version != RECORD_VERSION {
            return Err(CheckpointError::Version {
                path: path.to_path_buf(),
                found: record.version,
            });
        }
        if path.file_stem().and_then(|s| s.to_str()) != Some(record.id.as_str()) {
            return Err(corrupt("the file name and the session id differ".into()));
        }
        Ok(record)
    }

    /// Deletes a session's checkpoint (a finished or cleaned session), and the reads its
    /// client's hook recorded.
    pub fn remove(&self, id: &str) -> Result<(), CheckpointError> {
        if valid_id(id) {
            let _ = std::fs::remove_file(reads_path(&self.root, id));
        }
        let path = self.path_of(id);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(CheckpointError::io(&path, e)),
        }
    }

    /// The session in progress, as named by `current.json` (not sealed: it only points at
    /// a sealed checkpoint, and a wrong pointer leads to a refused checkpoint).
    pub fn current(&self) -> Result<Option<String>, CheckpointError> {
        let path = self.dir().join(CURRENT_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(CheckpointError::io(&path, e)),
        };
        let pointer: Pointer =
            serde_json::from_str(&text).map_err(|e| CheckpointError::Corrupt {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        if !valid_id(&pointer.session) {
            return Err(CheckpointError::Corrupt {
                path,
                reason: "not a session id".into(),
            });
        }
        Ok(Some(pointer.session))
    }

    /// Names `id` as the session in progress, or clears the pointer.
    pub fn set_current(&self, id: Option<&str>) -> Result<(), CheckpointError> {
        let path = self.dir().join(CURRENT_FILE);
        match id {
            Some(id) => self.point_at(id, None),
            None => match std::fs::remove_file(&path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(CheckpointError::io(&path, e)),
            },
        }
    }

    /// Names `id` as the session in progress, with the write hook's refusal for when its
    /// checkpoint cannot be read, in the session's locale (the one text the hook needs
    /// before it has a trusted record; it only words a refusal, so it need not be sealed).
    fn point_at(&self, id: &str, refusal: Option<String>) -> Result<(), CheckpointError> {
        let path = self.dir().join(CURRENT_FILE);
        let text = serde_json::to_string(&Pointer {
            session: id.to_string(),
            refusal,
        })
        .map_err(|e| CheckpointError::Corrupt {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        atomic_write(&path, text.as_bytes()).map_err(|e| CheckpointError::io(&path, e))
    }

    /// Removes the temp files that writes killed midway left in the sessions directory
    /// (`<file>.tmp-<pid>-<counter>-<nanos>`, [`atomic_write`]'s naming) whose writer no
    /// longer runs: checkpoints are written by the serving process itself, so the temp of
    /// a dead process is never renamed into place. Returns the names removed.
    pub fn remove_stale_temps(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.dir()) else {
            return Vec::new();
        };
        let mut removed = Vec::new();
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = temp_writer(&name) else {
                continue;
            };
            let age = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok());
            if !writer_alive(pid, age) && std::fs::remove_file(entry.path()).is_ok() {
                removed.push(name);
            }
        }
        removed.sort();
        removed
    }

    /// Every checkpoint file's session id (for `--clean`).
    pub fn all_ids(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.dir()) else {
            return Vec::new();
        };
        let mut ids: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let id = name.strip_suffix(".json")?.to_string();
                valid_id(&id).then_some(id)
            })
            .collect();
        ids.sort();
        ids
    }
}

#[derive(Serialize, Deserialize)]
struct Pointer {
    session: String,
    /// `hook.session_unreadable` in the session's locale (see [`Checkpoints::point_at`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    refusal: Option<String>,
}

/// The write hook's refusal for an unreadable session, as the pointer of the session in
/// progress at `root` words it (`None` without a pointer, or one that does not say).
pub(crate) fn pointer_refusal(root: &Path) -> Option<String> {
    let path = root.join(SESSIONS_DIR).join(CURRENT_FILE);
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str::<Pointer>(&text).ok()?.refusal
}

/// Where the write hook records the files a session's client read with its own tools
/// (`server::reads`): `.code-intel/sessions/<id>.reads`, one sealed JSON line each.
pub(crate) fn reads_path(root: &Path, id: &str) -> PathBuf {
    root.join(SESSIONS_DIR).join(format!("{id}.reads"))
}

/// The writer's process id when `name` is a temp file of [`atomic_write`]:
/// `<file>.tmp-<pid>-<counter>-<nanos>`.
fn temp_writer(name: &str) -> Option<u32> {
    let (file, tail) = name.rsplit_once(".tmp-")?;
    let mut parts = tail.split('-');
    let pid = parts.next()?.parse().ok()?;
    let rest: Vec<&str> = parts.collect();
    let digits = |s: &&str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (!file.is_empty() && rest.len() == 2 && rest.iter().all(digits)).then_some(pid)
}

/// Whether the process `pid` that began a write may still finish it. This process's
/// own writes are alive; elsewhere Linux answers through `/proc`; other systems only
/// through the temp's age (a write takes milliseconds, so ten minutes is long dead).
fn writer_alive(pid: u32, age: Option<std::time::Duration>) -> bool {
    if pid == std::process::id() {
        return true;
    }
    if cfg!(target_os = "linux") && Path::new("/proc/self").exists() {
        return Path::new("/proc").join(pid.to_string()).exists();
    }
    age.is_none_or(|a| a < std::time::Duration::from_secs(600))
}

/// Session ids are 32 lowercase hex digits; anything else never reaches the file system.
pub(crate) fn valid_id(id: &str) -> bool {
    id.len() == 32
        && id
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// A new unguessable session id.
pub(crate) fn new_session_id() -> Result<String, CheckpointError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| CheckpointError::Io {
        path: PathBuf::from("<random>"),
        error: std::io::Error::other(format!("no randomness: {e}")),
    })?;
    Ok(hex(&bytes))
}

/// The reduction applied to a record over the size limit, one step at a time: first the
/// engine's own ([`Instance::reduce_summaries`]: the phase summaries cut, then only the
/// last 10, then none), then the seen paths not also explored. Tasks, counters, explored
/// files and the branch are never reduced: enforcement depends on them.
fn reduce(record: &SessionRecord, step: usize) -> Option<SessionRecord> {
    let mut r = record.clone();
    match step.checked_sub(Instance::SUMMARY_REDUCTIONS) {
        None => r.instance.reduce_summaries(step),
        Some(0) => {
            let explored = r.host.explored.clone();
            r.host.seen_paths.retain(|p| explored.contains(p));
        }
        Some(_) => return None,
    }
    Some(r)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A temporary directory removed when the test ends, pass or fail.
    struct TempDir(std::path::PathBuf);

    impl std::ops::Deref for TempDir {
        type Target = std::path::Path;

        fn deref(&self) -> &std::path::Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn hex_round_trips() {
        assert_eq!(unhex(&hex(&[0, 1, 254, 255])), Some(vec![0, 1, 254, 255]));
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex("zz"), None);
    }

    #[test]
    fn ids_are_checked_before_touching_files() {
        assert!(valid_id(&"a".repeat(32)));
        assert!(!valid_id("../../etc/passwd"));
        assert!(!valid_id(&"A".repeat(32)));
        assert!(new_session_id().is_ok_and(|id| valid_id(&id)));
    }

    fn record(id: &str) -> SessionRecord {
        use crate::contract::flags::FlagSet;
        SessionRecord {
            version: RECORD_VERSION,
            id: id.to_string(),
            created_at: 1,
            updated_at: 1,
            request: "fix it".into(),
            flag_text: String::new(),
            instance: crate::machine::Instance {
                contract: "c".into(),
                state: "S".into(),
                flags: FlagSet::default(),
                intent: "I".into(),
                locale: "en".into(),
                params: Default::default(),
                counters: Default::default(),
                tasks: Vec::new(),
                vars: Default::default(),
                summaries: Vec::new(),
                steps_taken: 0,
            },
            compaction_count: 0,
            tools_called: Vec::new(),
            tool_history: Default::default(),
            host: Default::default(),
            outcome: None,
            write_gate: Default::default(),
        }
    }

    fn store(name: &str) -> (TempDir, Checkpoints) {
        let dir = std::env::temp_dir().join(format!("ci-checkpoint-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let dir = TempDir(dir);
        let store = Checkpoints::new(&dir, SealKey::from_bytes([3; 32]));
        (dir, store)
    }

    #[test]
    fn a_saved_record_loads_back_and_an_edited_one_is_refused() {
        let (dir, store) = store("roundtrip");
        let id = "0123456789abcdef0123456789abcdef";
        let r = record(id);
        assert!(store.save(&r).unwrap().is_none());
        assert_eq!(store.load(id).unwrap(), Some(r));
        let path = store.path_of(id);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("fix it", "fix that")).unwrap();
        assert!(matches!(
            store.load(id),
            Err(CheckpointError::Tampered { .. })
        ));
        std::fs::write(&path, "{not json").unwrap();
        assert!(matches!(
            store.load(id),
            Err(CheckpointError::Corrupt { .. })
        ));
        std::fs::write(
            &path,
            text.replace("\"version\":1,\"seal\"", "\"version\":99,\"seal\""),
        )
        .unwrap();
        assert!(matches!(
            store.load(id),
            Err(CheckpointError::Version { found: 99, .. })
        ));
        // Another repository (root) with the same key refuses the file.
        let other = Checkpoints::new(&dir.join("elsewhere"), SealKey::from_bytes([3; 32]));
        std::fs::create_dir_all(other.dir()).unwrap();
        std::fs::write(other.path_of(id), &text).unwrap();
        assert!(matches!(
            other.load(id),
            Err(CheckpointError::Tampered { .. })
        ));
        assert!(store.load("../../etc/passwd").is_err());
    }

    #[test]
    fn an_oversized_record_is_reduced_in_the_documented_order() {
        let (_dir, store) = store("reduce");
        let id = "fedcba9876543210fedcba9876543210";
        let mut r = record(id);
        // Even cut to 100 characters, 3000 summaries are over the limit: only the last 10
        // are kept, cut.
        for i in 0..3000 {
            r.instance.summaries.push(crate::machine::Summary {
                key: format!("step_{i:04}"),
                text: "x".repeat(500),
            });
        }
        r.host.explored.insert("kept.py".into());
        let reduced = store.save(&r).unwrap().expect("reduced");
        assert_eq!(reduced.instance.summaries.len(), 10);
        assert_eq!(reduced.instance.summaries[9].key, "step_2999");
        assert!(
            reduced
                .instance
                .summaries
                .iter()
                .all(|s| s.text.chars().count() <= 103)
        );
        assert!(reduced.host.explored.contains("kept.py"));
        assert!(
            std::fs::metadata(store.path_of(id)).unwrap().len() as usize <= MAX_CHECKPOINT_BYTES
        );
        assert_eq!(store.load(id).unwrap(), Some(reduced));
        // Nothing left to drop: refused, and the last good checkpoint stays.
        let mut huge = record(id);
        huge.request = "y".repeat(MAX_CHECKPOINT_BYTES + 1);
        assert!(matches!(
            store.save(&huge),
            Err(CheckpointError::TooLarge { .. })
        ));
        assert!(store.load(id).unwrap().is_some());
    }

    #[test]
    fn seals_depend_on_key_root_and_content() {
        let key = SealKey::from_bytes([7; 32]);
        let seal = key.seal(Path::new("/repo"), "{}");
        assert!(key.verify(Path::new("/repo"), "{}", &seal));
        assert!(!key.verify(Path::new("/other"), "{}", &seal));
        assert!(!key.verify(Path::new("/repo"), "{ }", &seal));
        assert!(!SealKey::from_bytes([8; 32]).verify(Path::new("/repo"), "{}", &seal));
    }
}
