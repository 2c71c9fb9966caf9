//! Where a workspace keeps what: `workspace.json` (what it is), `design/` (the plan),
//! `state/` (task runtime, execution state), `backlog/` (the backlog), `history/` (the
//! journal, the truth), `chat/` (conversations), `runs/` (one directory per attempt, written
//! by the executor) and `writer.lock` (the one writer).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::change::Area;
use super::error::StoreError;

/// The layout this code writes and reads.
pub const LAYOUT_VERSION: u32 = 1;

pub(crate) const META_FILE: &str = "workspace.json";
pub(crate) const LOCK_FILE: &str = "writer.lock";
pub(crate) const JOURNAL_FILE: &str = "history/journal.jsonl";
/// The directories `init` creates.
pub(crate) const DIRS: [&str; 6] = ["design", "state", "history", "chat", "backlog", "runs"];

/// Each area's state file.
pub(crate) fn area_file(area: Area) -> &'static str {
    match area {
        Area::Plan => "design/plan.json",
        Area::Runtime => "state/runtime.json",
        Area::Backlog => "backlog/backlog.json",
        Area::Execution => "state/execution.json",
    }
}

/// `workspace.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceMeta {
    pub version: u32,
    /// The project the tasks work on.
    pub project_root: PathBuf,
    /// A name for people (the IDE's list of workspaces).
    pub name: String,
    /// RFC 3339.
    pub created_at: String,
}

impl WorkspaceMeta {
    /// Reads and checks `workspace.json` of the workspace at `dir`.
    pub(crate) fn read(dir: &Path) -> Result<WorkspaceMeta, StoreError> {
        let path = dir.join(META_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::NotAWorkspace {
                    dir: dir.to_path_buf(),
                });
            }
            Err(e) => return Err(StoreError::io(path)(e)),
        };
        // The version first, so a newer layout is named as such rather than as damage.
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| StoreError::BadMeta {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        let version = value.get("version").and_then(serde_json::Value::as_u64);
        if let Some(version) = version
            && version != u64::from(LAYOUT_VERSION)
        {
            return Err(StoreError::UnsupportedVersion {
                path,
                version: u32::try_from(version).unwrap_or(u32::MAX),
                supported: LAYOUT_VERSION,
            });
        }
        serde_json::from_value(value).map_err(|e| StoreError::BadMeta {
            path,
            reason: e.to_string(),
        })
    }
}
