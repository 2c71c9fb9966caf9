//! The state files: one per area (`design/plan.json`, `state/runtime.json`,
//! `backlog/backlog.json`, `state/execution.json`), each `{"seq": N, "data": ...}` with
//! the number of the last journal entry it holds, written atomically (temp, fsync, rename,
//! fsync of the directory) so a reader without the lock sees a whole file, old or new.
//!
//! They are a cache of the journal's fold: a file that is missing or cannot be read is
//! rebuilt from the journal (with a warning), one that is behind has the rest folded in.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::change::Area;
use super::error::StoreError;
use super::layout::area_file;
use crate::multiverse::model::WorkspaceState;

#[derive(Serialize)]
struct Out<'a, T> {
    seq: u64,
    data: &'a T,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct In<T> {
    seq: u64,
    data: T,
}

/// The state files as found: the state and, per area ([`Area::index`]), the last entry
/// each holds (0 for a file missing or unreadable).
#[derive(Debug, Default)]
pub(crate) struct Saved {
    pub state: WorkspaceState,
    pub seqs: [u64; 4],
}

impl Saved {
    /// The entry every area holds: the fold of the journal up to here is in all of them.
    pub(crate) fn min_seq(&self) -> u64 {
        self.seqs.iter().copied().min().unwrap_or(0)
    }
}

/// Reads every area's file of the workspace at `dir`.
pub(crate) fn read(dir: &Path) -> Result<Saved, StoreError> {
    let mut saved = Saved::default();
    for area in Area::ALL {
        let seq = match area {
            Area::Plan => read_area(dir, area, &mut saved.state.plan)?,
            Area::Runtime => read_area(dir, area, &mut saved.state.runtime)?,
            Area::Backlog => read_area(dir, area, &mut saved.state.backlog)?,
            Area::Execution => read_area(dir, area, &mut saved.state.execution)?,
        };
        saved.seqs[area.index()] = seq;
    }
    // The newest entry any file holds: an area no entry touched since keeps an older
    // number, and a file missing or unreadable has none.
    saved.state.seq = saved.seqs.iter().copied().max().unwrap_or(0);
    Ok(saved)
}

fn read_area<T: DeserializeOwned>(dir: &Path, area: Area, into: &mut T) -> Result<u64, StoreError> {
    let path = dir.join(area_file(area));
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(StoreError::io(path)(e)),
    };
    match serde_json::from_slice::<In<T>>(&bytes) {
        Ok(found) => {
            *into = found.data;
            Ok(found.seq)
        }
        Err(e) => {
            // Atomic writes cannot leave a half file; this is damage from outside. The
            // journal holds everything the file did.
            tracing::warn!(
                path = %path.display(),
                error = %e,
                "unreadable state file; rebuilding it from the journal"
            );
            Ok(0)
        }
    }
}

/// One area's file as `check` reads it: nothing is rebuilt or said in the log.
pub(crate) enum One {
    Missing,
    Unreadable(String),
    /// The file's area in an otherwise empty state, and the entry it holds.
    Read(Saved1),
}

pub(crate) struct Saved1 {
    pub state: WorkspaceState,
    pub seq: u64,
}

pub(crate) fn read_one(dir: &Path, area: Area) -> Result<One, StoreError> {
    let path = dir.join(area_file(area));
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(One::Missing),
        Err(e) => return Err(StoreError::io(path)(e)),
    };
    let mut state = WorkspaceState::default();
    let parsed = match area {
        Area::Plan => parse(&bytes, &mut state.plan),
        Area::Runtime => parse(&bytes, &mut state.runtime),
        Area::Backlog => parse(&bytes, &mut state.backlog),
        Area::Execution => parse(&bytes, &mut state.execution),
    };
    Ok(match parsed {
        Ok(seq) => One::Read(Saved1 { state, seq }),
        Err(e) => One::Unreadable(e.to_string()),
    })
}

fn parse<T: DeserializeOwned>(bytes: &[u8], into: &mut T) -> Result<u64, serde_json::Error> {
    let found = serde_json::from_slice::<In<T>>(bytes)?;
    *into = found.data;
    Ok(found.seq)
}

/// Whether two states hold the same value of `area`.
pub(crate) fn same_area(area: Area, a: &WorkspaceState, b: &WorkspaceState) -> bool {
    match area {
        Area::Plan => a.plan == b.plan,
        Area::Runtime => a.runtime == b.runtime,
        Area::Backlog => a.backlog == b.backlog,
        Area::Execution => a.execution == b.execution,
    }
}

/// Writes one area's file as of entry `seq`.
pub(crate) fn write(dir: &Path, area: Area, state: &WorkspaceState) -> Result<(), StoreError> {
    let seq = state.seq;
    let bytes = match area {
        Area::Plan => encode(seq, &state.plan),
        Area::Runtime => encode(seq, &state.runtime),
        Area::Backlog => encode(seq, &state.backlog),
        Area::Execution => encode(seq, &state.execution),
    }?;
    let path = dir.join(area_file(area));
    crate::codeintel::store::atomic_write(&path, &bytes).map_err(StoreError::io(path))
}

fn encode<T: Serialize>(seq: u64, data: &T) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec_pretty(&Out { seq, data }).map_err(StoreError::Encode)
}
