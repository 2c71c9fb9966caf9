//! The files a session's client opened with its own read tools (Claude Code's `Read`,
//! `Grep`, `Glob`), recorded by the post-tool-use hook so that the server accepts them as
//! explored, as it accepts the paths its own tools showed.
//!
//! One JSON line per file in `.code-intel/sessions/<session id>.reads`:
//! `{"path", "tool", "at", "seal"}`. The seal is the checkpoint key's keyed hash over the
//! session id and the path, so a line an agent appends by hand (it can write any file in
//! the repository, but it has no key) is ignored, as is a line copied from another
//! session.
//!
//! The hook (`client::hook`) appends ([`append`]) and the server reads ([`read_paths`]);
//! the file is the server's session state, sealed with its checkpoint key, so both halves
//! live here.

use std::collections::BTreeSet;
use std::io::{Read as _, Write as _};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::server::checkpoint::{SealKey, reads_path, valid_id};

/// The seal's domain: a read line's seal never verifies as anything else's.
const DOMAIN: &str = "code-intel-read";
/// The most of a `.reads` file that is read; lines past it are ignored.
const MAX_READS_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Serialize)]
struct LineOut<'a> {
    path: &'a str,
    tool: &'a str,
    at: u64,
    seal: &'a str,
}

/// A line as read back (owned: a path with a quote or backslash is escaped in JSON).
#[derive(Deserialize)]
struct LineIn {
    path: String,
    seal: String,
}

fn seal(key: &SealKey, session_id: &str, path: &str) -> String {
    key.seal_parts(DOMAIN, &[session_id.as_bytes(), path.as_bytes()])
}

/// Appends one sealed line per root-relative path, in one write.
pub(crate) fn append(
    root: &Path,
    session_id: &str,
    key: &SealKey,
    tool: &str,
    paths: &[String],
    at: u64,
) -> std::io::Result<()> {
    if !valid_id(session_id) {
        return Err(std::io::Error::other(format!(
            "{session_id:?} is not a session id"
        )));
    }
    let mut text = String::new();
    for path in paths {
        let seal = seal(key, session_id, path);
        let line = serde_json::to_string(&LineOut {
            path,
            tool,
            at,
            seal: &seal,
        })
        .map_err(std::io::Error::other)?;
        text.push_str(&line);
        text.push('\n');
    }
    if text.is_empty() {
        return Ok(());
    }
    let mut file = crate::codeintel::state_dir::open_in_place(
        &reads_path(root, session_id),
        std::fs::OpenOptions::new().append(true).create(true),
    )?;
    file.write_all(text.as_bytes())
}

/// The paths of the valid lines of a session's `.reads` file; forged, foreign and
/// malformed lines are skipped. No file, no paths.
pub(crate) fn read_paths(root: &Path, session_id: &str, key: &SealKey) -> BTreeSet<String> {
    let mut paths = BTreeSet::new();
    if !valid_id(session_id) {
        return paths;
    }
    let Ok(file) = std::fs::File::open(reads_path(root, session_id)) else {
        return paths;
    };
    let mut bytes = Vec::new();
    if file.take(MAX_READS_BYTES).read_to_end(&mut bytes).is_err() {
        return paths;
    }
    for line in bytes.split(|b| *b == b'\n') {
        let Ok(line) = serde_json::from_slice::<LineIn>(line) else {
            continue;
        };
        if key.verify_parts(
            DOMAIN,
            &[session_id.as_bytes(), line.path.as_bytes()],
            &line.seal,
        ) {
            paths.insert(line.path);
        }
    }
    paths
}
