//! What changed under the repository since the last look, from the kernel (inotify on
//! Linux), so the symbol index is refreshed only when something changed instead of
//! stat'ing every indexed file before each answer.
//!
//! The events are read without blocking when a tool asks (`Watch::drain`), not by a
//! background thread: the kernel queues an event inside the write system call, so a
//! file saved before a tool call is always seen by that call. Where watching is not
//! possible (another OS, no inotify, the watch limit reached, a queue overflow) the
//! caller falls back to checking every file: [`Drained::Unknown`] says so.

use std::collections::BTreeSet;
use std::path::Path;

use crate::codeintel::root::Root;

/// What happened since the last drain.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Drained {
    /// Nothing that could change the index.
    #[default]
    Nothing,
    /// Only these root-relative files were written.
    Modified(BTreeSet<String>),
    /// Files or directories appeared, disappeared or moved: the tree must be walked.
    Structure,
    /// The watcher cannot tell (not watching, or events were lost): check everything.
    Unknown,
}

impl Drained {
    fn add(&mut self, other: Drained) {
        *self = match (std::mem::take(self), other) {
            (Drained::Unknown, _) | (_, Drained::Unknown) => Drained::Unknown,
            (Drained::Structure, _) | (_, Drained::Structure) => Drained::Structure,
            (Drained::Modified(mut a), Drained::Modified(b)) => {
                a.extend(b);
                Drained::Modified(a)
            }
            (Drained::Nothing, x) | (x, Drained::Nothing) => x,
        };
    }
}

/// Why the tree is not (or no longer) watched; the server then checks files itself.
#[cfg(target_os = "linux")]
#[derive(Debug)]
enum WatchError {
    /// inotify could not be set up.
    Init(std::io::Error),
    /// The directories to watch could not be listed.
    Walk(crate::codeintel::error::Error),
    /// A directory could not be watched (the system's watch limit, say).
    Add {
        dir: std::path::PathBuf,
        source: std::io::Error,
    },
}

#[cfg(target_os = "linux")]
impl std::fmt::Display for WatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WatchError::Init(e) => write!(f, "inotify: {e}"),
            WatchError::Walk(e) => e.fmt(f),
            WatchError::Add { dir, source } => {
                write!(f, "cannot watch {}: {source}", dir.display())
            }
        }
    }
}

#[cfg(target_os = "linux")]
impl std::error::Error for WatchError {}

/// A file watcher over the repository's (non-ignored, non-hidden) directories.
pub(crate) struct Watch {
    #[cfg(target_os = "linux")]
    inner: Option<linux::Inner>,
}

impl Watch {
    /// Starts watching every directory the index walk visits; `None` when the platform
    /// or the system's limits do not allow it (the caller then polls).
    pub(crate) fn start(root: &Root) -> Option<Watch> {
        #[cfg(target_os = "linux")]
        {
            match linux::Inner::start(root) {
                Ok(inner) => Some(Watch { inner: Some(inner) }),
                Err(e) => {
                    tracing::info!("not watching files ({e}); checking them before each answer");
                    None
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = root;
            None
        }
    }

    /// What changed since the last call. After a failure to watch, it answers
    /// [`Drained::Unknown`] forever (check everything).
    pub(crate) fn drain(&mut self, root: &Root) -> Drained {
        #[cfg(target_os = "linux")]
        {
            let Some(inner) = self.inner.as_mut() else {
                return Drained::Unknown;
            };
            let (drained, still_watching) = inner.drain(root);
            if !still_watching {
                // A directory could not be watched: events no longer cover the tree, so
                // from now on every answer checks the files itself.
                self.inner = None;
            }
            drained
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = root;
            Drained::Unknown
        }
    }
}

/// Whether a changed path can matter to the index: hidden names (`.git`, `.code-intel`,
/// editor swap files) are never walked, so never indexed.
fn relevant(name: &Path) -> bool {
    !name
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with('.'))
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::{BTreeSet, HashMap};
    use std::path::PathBuf;

    use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};

    use crate::codeintel::languages;
    use crate::codeintel::root::Root;
    use crate::codeintel::search::walk_dirs_under;
    use crate::server::watch::{Drained, WatchError, relevant};

    pub(super) struct Inner {
        inotify: Inotify,
        dirs: HashMap<WatchDescriptor, PathBuf>,
        buffer: Vec<u8>,
    }

    fn mask() -> WatchMask {
        WatchMask::MODIFY
            | WatchMask::CLOSE_WRITE
            | WatchMask::CREATE
            | WatchMask::DELETE
            | WatchMask::MOVED_FROM
            | WatchMask::MOVED_TO
            | WatchMask::DELETE_SELF
            | WatchMask::MOVE_SELF
            | WatchMask::ONLYDIR
    }

    impl Inner {
        pub(super) fn start(root: &Root) -> Result<Inner, WatchError> {
            let inotify = Inotify::init().map_err(WatchError::Init)?;
            let mut inner = Inner {
                inotify,
                dirs: HashMap::new(),
                buffer: vec![0; 64 * 1024],
            };
            inner.watch_tree(root, root.path())?;
            Ok(inner)
        }

        /// Watches `dir` and every directory under it.
        fn watch_tree(&mut self, root: &Root, dir: &std::path::Path) -> Result<(), WatchError> {
            let dirs = walk_dirs_under(root, dir).map_err(WatchError::Walk)?;
            for d in dirs {
                let wd =
                    self.inotify
                        .watches()
                        .add(&d, mask())
                        .map_err(|source| WatchError::Add {
                            dir: d.clone(),
                            source,
                        })?;
                self.dirs.insert(wd, d);
            }
            Ok(())
        }

        /// The changes, and whether the whole tree is still watched.
        pub(super) fn drain(&mut self, root: &Root) -> (Drained, bool) {
            let mut drained = Drained::Nothing;
            let mut overflowed = false;
            loop {
                let mut new_dirs = Vec::new();
                let mut seen_any = false;
                let events = match self.inotify.read_events(&mut self.buffer) {
                    Ok(events) => events,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => {
                        tracing::warn!("reading file events failed: {e}");
                        return (Drained::Unknown, false);
                    }
                };
                for event in events {
                    seen_any = true;
                    if event.mask.contains(EventMask::Q_OVERFLOW) {
                        overflowed = true;
                        drained.add(Drained::Unknown);
                        continue;
                    }
                    let Some(dir) = self.dirs.get(&event.wd) else {
                        continue;
                    };
                    if event.mask.intersects(
                        EventMask::DELETE_SELF | EventMask::MOVE_SELF | EventMask::IGNORED,
                    ) {
                        drained.add(Drained::Structure);
                        continue;
                    }
                    let Some(name) = event.name else {
                        continue;
                    };
                    let path = dir.join(name);
                    if !relevant(&path) {
                        continue;
                    }
                    let is_dir = event.mask.contains(EventMask::ISDIR);
                    if event
                        .mask
                        .intersects(EventMask::CREATE | EventMask::MOVED_TO)
                        && is_dir
                    {
                        new_dirs.push(path);
                        drained.add(Drained::Structure);
                    } else if event.mask.intersects(
                        EventMask::CREATE
                            | EventMask::DELETE
                            | EventMask::MOVED_FROM
                            | EventMask::MOVED_TO,
                    ) {
                        if is_dir || languages::for_path(&path).is_some() {
                            drained.add(Drained::Structure);
                        }
                    } else if languages::for_path(&path).is_some() {
                        drained.add(Drained::Modified(BTreeSet::from([root.relative(&path)])));
                    }
                }
                for dir in new_dirs {
                    // Files created in it before the watch was added are found by the walk
                    // that `Structure` asks for.
                    if let Err(e) = self.watch_tree(root, &dir) {
                        tracing::info!("{e}; checking files before each answer from now on");
                        return (Drained::Unknown, false);
                    }
                }
                if !seen_any {
                    break;
                }
            }
            if overflowed {
                // Events were lost, directories created meanwhile among them: watch the
                // whole tree again (existing watches are kept as they are).
                if let Err(e) = self.watch_tree(root, root.path()) {
                    tracing::info!("{e}; checking files before each answer from now on");
                    return (Drained::Unknown, false);
                }
            }
            (drained, true)
        }
    }
}
