//! The workspace a writer holds: created by [`Workspace::init`], opened by
//! [`Workspace::open`], changed only by [`Workspace::mutate`] (journal first, then memory,
//! then the state files), and readable by anyone with [`read_state`] without the lock.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::change::{Area, Change};
use super::error::{MutateError, StoreError};
use super::journal::{self, ChatReply, Entry, Journal, Scan};
use super::layout::{DIRS, JOURNAL_FILE, LAYOUT_VERSION, META_FILE, WorkspaceMeta};
use super::lock::{self, WriterLock};
use super::state_files::{self, Saved};
use crate::multiverse::clock::{Clock, SystemClock};
use crate::multiverse::model::{TaskId, WorkspaceState};

/// An area file is rewritten once it is this many entries behind the journal even if
/// nothing changed in it, so a load never folds more than about this many entries
/// (entries for other areas are counted but not parsed).
const MAX_LAG: u64 = 256;

/// The state files are brought up to date after this many entries by default. Rewriting
/// `state/runtime.json` of a 1,000-task plan after every entry costs more than the entry's
/// append and sync (measured in a release build: 5.6 ms per entry saving each time, 0.4 ms
/// saving every 16th); the journal holds every entry in between and a load folds them in.
pub const DEFAULT_SAVE_EVERY: u32 = 16;

/// The open workspace, held by its one writer (the lock is released when it is dropped).
pub struct Workspace {
    dir: PathBuf,
    meta: WorkspaceMeta,
    state: WorkspaceState,
    journal: Journal,
    /// The entry each area's file holds.
    file_seqs: [u64; 4],
    /// Areas with changes their files do not have yet.
    dirty: [bool; 4],
    /// Entries since the state files were last brought up to date.
    unsaved: u32,
    /// The newest entry with a chat reply, and the reply.
    last_chat: Option<(u64, ChatReply)>,
    save_every: u32,
    clock: Arc<dyn Clock>,
    // Last, so it is released after `Drop` has saved the state.
    _lock: WriterLock,
}

impl std::fmt::Debug for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspace")
            .field("dir", &self.dir)
            .field("seq", &self.state.seq)
            .finish_non_exhaustive()
    }
}

/// An attempt that was running when the last writer stopped: its latest attempt has no
/// `finished_at`. The scheduler checks the process ([`super::process_alive`]) and, when it
/// is gone, submits `interrupted`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlight {
    pub task: TaskId,
    pub attempt: u32,
    /// `None` when the attempt was journaled but its process id never was (a crash
    /// between the two): no process of it can be found, so it is as good as gone.
    pub pid: Option<u32>,
}

impl Workspace {
    /// Creates the workspace at `dir` (the directory may exist, but not hold a workspace)
    /// for the project at `project_root`, and opens it as its writer.
    pub fn init(dir: &Path, project_root: &Path, name: &str) -> Result<Workspace, StoreError> {
        if dir.join(META_FILE).exists() {
            return Err(StoreError::AlreadyAWorkspace {
                dir: dir.to_path_buf(),
            });
        }
        for sub in DIRS {
            let path = dir.join(sub);
            std::fs::create_dir_all(&path).map_err(StoreError::io(path))?;
        }
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let lock = WriterLock::acquire(&lock::lock_path(dir), clock.rfc3339())?;
        // Two inits at once: the second to get the lock finds the first's workspace.
        if dir.join(META_FILE).exists() {
            return Err(StoreError::AlreadyAWorkspace {
                dir: dir.to_path_buf(),
            });
        }
        let meta = WorkspaceMeta {
            version: LAYOUT_VERSION,
            project_root: project_root.to_path_buf(),
            name: name.to_string(),
            created_at: clock.rfc3339(),
        };
        let mut workspace = Workspace::load_locked(dir, meta.clone(), lock, clock)?;
        // Every state file exists before `workspace.json` says this is a workspace, so an
        // init a crash interrupted is simply run again.
        workspace.dirty = [true; 4];
        workspace.save_state()?;
        let text = serde_json::to_vec_pretty(&meta).map_err(StoreError::Encode)?;
        let path = dir.join(META_FILE);
        crate::codeintel::store::atomic_write(&path, &text).map_err(StoreError::io(path))?;
        Ok(workspace)
    }

    /// Opens the workspace at `dir` as its writer: takes the lock (or says who holds it),
    /// drops a torn journal tail, loads the state files and folds in the entries they miss.
    pub fn open(dir: &Path) -> Result<Workspace, StoreError> {
        Workspace::open_patiently(dir, std::time::Duration::ZERO)
    }

    /// [`Workspace::open`], waiting up to `patience` for a writer that holds the workspace
    /// for one command (never for a `run` or a daemon, which are named at once).
    pub fn open_patiently(
        dir: &Path,
        patience: std::time::Duration,
    ) -> Result<Workspace, StoreError> {
        let meta = WorkspaceMeta::read(dir)?;
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let lock = WriterLock::acquire_patiently(&lock::lock_path(dir), clock.rfc3339(), patience)?;
        let mut workspace = Workspace::load_locked(dir, meta, lock, clock)?;
        // Bring files that are behind up to date now, not at the first change.
        if workspace.dirty.contains(&true)
            && let Err(e) = workspace.save_state()
        {
            tracing::warn!(error = %e, "could not update the state files; the journal holds the state");
        }
        Ok(workspace)
    }

    fn load_locked(
        dir: &Path,
        meta: WorkspaceMeta,
        lock: WriterLock,
        clock: Arc<dyn Clock>,
    ) -> Result<Workspace, StoreError> {
        let (state, mut scan, saved_seqs, dirty) = load(dir)?;
        let journal = Journal::open(&dir.join(JOURNAL_FILE), &scan)?;
        Ok(Workspace {
            dir: dir.to_path_buf(),
            meta,
            state,
            journal,
            file_seqs: saved_seqs,
            dirty,
            unsaved: 0,
            last_chat: scan.last_chat.take(),
            save_every: DEFAULT_SAVE_EVERY,
            clock,
            _lock: lock,
        })
    }

    /// Times the journal's entries with `clock` (tests use a manual one).
    pub fn set_clock(&mut self, clock: Arc<dyn Clock>) {
        self.clock = clock;
    }

    /// Writes the state files after every `n`th mutation (at least 1; by default
    /// [`DEFAULT_SAVE_EVERY`]), and when the writer is dropped. Nothing is lost in between:
    /// the journal holds every entry, and a load folds in what the files miss.
    pub fn set_save_every(&mut self, n: u32) {
        self.save_every = n.max(1);
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn meta(&self) -> &WorkspaceMeta {
        &self.meta
    }

    /// The state: always the fold of the journal on disk, never ahead of it.
    pub fn state(&self) -> &WorkspaceState {
        &self.state
    }

    pub fn journal_path(&self) -> &Path {
        self.journal.path()
    }

    /// Changes the workspace: `decide` reads the state and returns the changes (or refuses
    /// with its own error); they are journaled as one entry (synced), then folded into
    /// memory, then written to the state files (every [`Workspace::set_save_every`]
    /// entries). Returns the entry's number (the state's
    /// `seq + 1` as `decide` saw it), or the state's `seq` when there was nothing to change.
    ///
    /// A refusal or a failed append changes nothing, in memory or on disk. The fold cannot
    /// fail, so memory is never ahead of the journal; a failed state-file write is only
    /// logged: the entry is durable and the file is written again later.
    pub fn mutate<E>(
        &mut self,
        decide: impl FnOnce(&WorkspaceState) -> Result<Vec<Change>, E>,
    ) -> Result<u64, MutateError<E>> {
        let changes = decide(&self.state).map_err(MutateError::Rejected)?;
        self.append(changes, None).map_err(MutateError::Store)
    }

    /// [`Workspace::apply`] of a chat turn's patch, journaled with the turn's reply (see
    /// [`Workspace::last_chat`]). The entry is written even when the patch changes
    /// nothing, so the reply is kept all the same.
    pub fn apply_chat(&mut self, changes: Vec<Change>, chat: ChatReply) -> Result<u64, StoreError> {
        self.append(changes, Some(chat))
    }

    /// The newest entry that applied a chat turn's patch, and that turn's reply.
    pub fn last_chat(&self) -> Option<(u64, &ChatReply)> {
        self.last_chat.as_ref().map(|(seq, chat)| (*seq, chat))
    }

    fn append(&mut self, changes: Vec<Change>, chat: Option<ChatReply>) -> Result<u64, StoreError> {
        if changes.is_empty() && chat.is_none() {
            return Ok(self.state.seq);
        }
        let entry = Entry {
            seq: self.state.seq + 1,
            at: self.clock.rfc3339(),
            changes,
            chat,
        };
        self.journal.append(&entry)?;
        if let Some(chat) = &entry.chat {
            self.last_chat = Some((entry.seq, chat.clone()));
        }
        for change in entry.changes {
            self.dirty[change.area().index()] = true;
            change.apply(&mut self.state);
        }
        self.state.seq = entry.seq;
        self.unsaved += 1;
        if self.unsaved >= self.save_every
            && let Err(e) = self.save_state()
        {
            tracing::warn!(error = %e, "could not write a state file; the journal holds the change");
        }
        Ok(entry.seq)
    }

    /// [`Workspace::mutate`] with changes already decided.
    pub fn apply(&mut self, changes: Vec<Change>) -> Result<u64, StoreError> {
        self.append(changes, None)
    }

    /// Writes the state files that are behind the journal.
    pub fn save_state(&mut self) -> Result<(), StoreError> {
        let seq = self.state.seq;
        for area in Area::ALL {
            let i = area.index();
            if self.dirty[i] || seq.saturating_sub(self.file_seqs[i]) > MAX_LAG {
                state_files::write(&self.dir, area, &self.state)?;
                self.file_seqs[i] = seq;
                self.dirty[i] = false;
            }
        }
        self.unsaved = 0;
        Ok(())
    }

    /// The state folded from an empty one through the whole journal: what the state files
    /// must equal, and how damaged ones are rebuilt.
    pub fn rebuild(&self) -> Result<WorkspaceState, StoreError> {
        rebuild_state(&self.dir)
    }

    /// Rewrites every state file from [`Workspace::rebuild`] and adopts it.
    pub fn repair(&mut self) -> Result<(), StoreError> {
        self.state = self.rebuild()?;
        self.dirty = [true; 4];
        self.save_state()
    }

    /// The tasks whose latest attempt has not finished: running when the last writer
    /// stopped, unless their process is still alive.
    pub fn attempts_in_flight(&self) -> Vec<InFlight> {
        in_flight(&self.state)
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        if self.dirty.contains(&true) {
            let _ = self.save_state();
        }
    }
}

/// [`Workspace::attempts_in_flight`] of any state (a reader's, too).
pub fn in_flight(state: &WorkspaceState) -> Vec<InFlight> {
    state
        .runtime
        .iter()
        .filter_map(|(task, runtime)| {
            let last = runtime.attempts.last()?;
            last.finished_at.is_none().then(|| InFlight {
                task: task.clone(),
                attempt: last.number,
                pid: last.pid,
            })
        })
        .collect()
}

/// The state files plus the journal entries they miss, the journal's scan, the entry each
/// file holds and which areas had entries folded in.
fn load(dir: &Path) -> Result<(WorkspaceState, Scan, [u64; 4], [bool; 4]), StoreError> {
    let saved = state_files::read(dir)?;
    let min_seq = saved.min_seq();
    let Saved { mut state, seqs } = saved;
    let journal_path = dir.join(JOURNAL_FILE);
    let mut scan = journal::scan(&journal_path, min_seq)?;
    for area in Area::ALL {
        let state_seq = seqs[area.index()];
        if state_seq > scan.last_seq {
            return Err(StoreError::StateAheadOfJournal {
                path: dir.join(super::layout::area_file(area)),
                state_seq,
                journal_seq: scan.last_seq,
            });
        }
    }
    let mut dirty = [false; 4];
    for entry in std::mem::take(&mut scan.entries) {
        for change in entry.changes {
            let i = change.area().index();
            // Each area takes only the entries its file does not hold yet.
            if entry.seq > seqs[i] {
                dirty[i] = true;
                change.apply(&mut state);
            }
        }
    }
    if let Some((line, bytes)) = scan.torn {
        tracing::warn!(
            path = %journal_path.display(),
            line,
            bytes,
            "ignoring a torn journal line (an append a crash interrupted)"
        );
    }
    state.seq = scan.last_seq;
    Ok((state, scan, seqs, dirty))
}

/// The workspace's state as a reader sees it, without the lock: the state files plus the
/// journal entries they miss (a torn tail ignored, nothing written).
pub fn read_state(dir: &Path) -> Result<WorkspaceState, StoreError> {
    WorkspaceMeta::read(dir)?;
    load(dir).map(|(state, ..)| state)
}

/// The state folded from an empty one through the whole journal of the workspace at `dir`.
pub fn rebuild_state(dir: &Path) -> Result<WorkspaceState, StoreError> {
    let scan = journal::scan(&dir.join(JOURNAL_FILE), 0)?;
    let mut state = WorkspaceState::default();
    for entry in scan.entries {
        for change in entry.changes {
            change.apply(&mut state);
        }
    }
    state.seq = scan.last_seq;
    Ok(state)
}

/// The state files alone, as saved (no journal folded in); `seq` is the newest entry any
/// of them holds. After a writer saved, it equals [`rebuild_state`].
pub fn saved_state(dir: &Path) -> Result<WorkspaceState, StoreError> {
    state_files::read(dir).map(|saved| saved.state)
}

/// A reader that keeps the state it last read and reads again only when the journal
/// changed. Every change is appended to the journal before anything else is written, so
/// the same journal (file, length and modification time) means the same state; a stat
/// answers most reads (the API's, while a page loads, asks several at once).
#[derive(Debug)]
pub struct CachedReader {
    dir: PathBuf,
    last: std::sync::Mutex<Option<(JournalMark, Arc<WorkspaceState>)>>,
}

/// What identifies a journal's contents without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct JournalMark {
    inode: u64,
    length: u64,
    modified: Option<std::time::SystemTime>,
}

impl CachedReader {
    pub fn new(dir: &Path) -> CachedReader {
        CachedReader {
            dir: dir.to_path_buf(),
            last: std::sync::Mutex::new(None),
        }
    }

    /// The state as [`read_state`] gives it, read again only when the journal changed.
    pub fn read(&self) -> Result<Arc<WorkspaceState>, StoreError> {
        use std::os::unix::fs::MetadataExt as _;
        let mark = std::fs::metadata(self.dir.join(JOURNAL_FILE))
            .ok()
            .map(|m| JournalMark {
                inode: m.ino(),
                length: m.len(),
                modified: m.modified().ok(),
            });
        // Readers that arrive together wait for the first one's read and share it.
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if let (Some(mark), Some((seen, state))) = (mark, last.as_ref())
            && mark == *seen
        {
            return Ok(state.clone());
        }
        let state = Arc::new(read_state(&self.dir)?);
        *last = mark.map(|mark| (mark, state.clone()));
        Ok(state)
    }
}
