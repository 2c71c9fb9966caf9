//! The workspace store: a Multiverse workspace on disk that never loses state.
//!
//! The truth is the journal (`history/journal.jsonl`): every mutation is one entry of typed
//! [`Change`]s carrying their resulting values, appended and fsynced before anything else
//! happens. The state files (one per [`Area`]) are its fold, written atomically after it and
//! loaded at open; entries they miss are folded in, and [`rebuild_state`] folds the whole
//! journal from empty, equal to what was saved. One process writes (an OS file lock that
//! names its holder's pid); anyone reads without the lock.
//!
//! - `layout`: the directories and files of a workspace, `workspace.json`.
//! - `change`: [`Change`], its [`Area`] and its (total) fold.
//! - `journal`: the entries, the append with its undo, the scan that skips a torn tail and
//!   names a damaged line.
//! - `state_files`: one atomic JSON file per area, with the entry it holds.
//! - `lock`: the writer lock and [`process_alive`].
//! - `workspace`: [`Workspace`] (init, open, mutate, rebuild, recovery data) and the
//!   lock-free readers.
//! - `check`: `multiverse check` and `--repair`: the journal against the state files.
//! - `error`: [`StoreError`] with stable keys, [`MutateError`].

pub(crate) mod change;
pub(crate) mod check;
pub(crate) mod error;
pub(crate) mod journal;
pub(crate) mod layout;
pub(crate) mod lock;
pub(crate) mod state_files;
pub(crate) mod workspace;

#[cfg(test)]
mod tests;

pub use change::{Area, Change};
pub use check::{CheckReport, RepairReport, check, repair, verify};
pub use error::{Finding, Holder, MutateError, StoreError};
pub(crate) use journal::ChatReply;
pub use journal::{Entry, MAX_LINE_BYTES};
pub use layout::{LAYOUT_VERSION, WorkspaceMeta};
pub use lock::{process_alive, process_start_time, set_role as set_writer_role};
pub use workspace::{
    CachedReader, DEFAULT_SAVE_EVERY, InFlight, Workspace, in_flight, read_state, rebuild_state,
    saved_state,
};
