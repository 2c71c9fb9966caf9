//! What a scan finds: the files a command writes ([`Write`], [`WriteKind`]), the writes
//! it can only describe ([`Described`], worded by the contract's messages of the keys in
//! [`DESCRIPTIONS`]), and why a command could not be read.

/// What a command writes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// Files (or, for `mkdir`, directories) the command writes, as written in it:
    /// relative to the client's working directory, or absolute.
    pub writes: Vec<Write>,
    /// Writes whose files cannot be named, each described.
    pub opaque: Vec<Described>,
    /// Writes of files the program chooses itself (a formatter or a fixer over the
    /// project, a code generator), each described: refused where no write is allowed,
    /// left to the check of the tree during implementation.
    pub broad: Vec<Described>,
    /// Why the command could not be read, if it could not.
    pub unparsed: Option<Described>,
}

impl Scan {
    /// Whether the command writes nothing the scanner can see, and was read whole.
    pub fn is_read_only(&self) -> bool {
        self.writes.is_empty()
            && self.opaque.is_empty()
            && self.broad.is_empty()
            && self.unparsed.is_none()
    }
}

/// A write the scanner describes rather than names: which kind (the key of the contract's
/// message that words it, [`DESCRIPTIONS`]) and the words of the command it is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Described {
    pub key: &'static str,
    pub what: String,
}

impl Described {
    pub(super) fn new(key: &'static str, what: impl Into<String>) -> Described {
        Described {
            key,
            what: what.into(),
        }
    }

    /// The English wording (`{what}` to fill in), for a checkpoint written without the
    /// contract's.
    pub fn english(&self) -> &'static str {
        DESCRIPTIONS
            .iter()
            .find(|(k, _)| *k == self.key)
            .map_or("{what}", |(_, text)| text)
    }
}

impl std::fmt::Display for Described {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.english().replace("{what}", &self.what))
    }
}

/// Every kind of described write, with its English wording: the contract's messages of
/// these keys word them in the session's locale.
pub const DESCRIPTIONS: [(&str, &str); 14] = [
    (
        "hook.writes.run_by_other",
        "`{what}` run by another command, on files it chooses",
    ),
    (
        "hook.writes.from_input",
        "`{what}` writes files its input names",
    ),
    (
        "hook.writes.archive",
        "`{what}` writes the files of the archive",
    ),
    (
        "hook.writes.find_delete",
        "`{what}` removes the files it finds",
    ),
    (
        "hook.writes.other_repository",
        "`{what}` with --git-dir or --work-tree reaches another repository",
    ),
    (
        "hook.writes.git",
        "`{what}` changes the repository or the working tree (branches, commits, the index and the configuration are the server's)",
    ),
    (
        "hook.writes.unnamed",
        "`{what}`: the hook cannot tell which file that is",
    ),
    (
        "hook.writes.after_cd",
        "`{what}` after a `cd` the hook cannot follow",
    ),
    (
        "hook.writes.formatter",
        "`{what}` rewrites the files it chooses",
    ),
    // Why a command could not be read.
    (
        "hook.unreadable.too_long",
        "the command takes {what} bytes, more than the hook reads",
    ),
    (
        "hook.unreadable.too_deep",
        "the command nests deeper than {what} levels",
    ),
    (
        "hook.unreadable.shells_too_deep",
        "shells nested deeper than {what} levels are not read",
    ),
    ("hook.unreadable.no_target", "`{what}` has no target"),
    ("hook.unreadable.not_closed", "`{what}` is not closed"),
];

/// One path a command writes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Write {
    pub path: String,
    pub kind: WriteKind,
}

/// How a command writes a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum WriteKind {
    File,
    /// A directory it creates (`mkdir`): allowed where an explored file lies under it.
    Dir,
    /// Brought back to its content in HEAD (`git checkout [HEAD] -- FILES`, `git restore
    /// FILES`): allowed where the session's accepted tree has nothing uncommitted there,
    /// so that nothing git cannot bring back is lost.
    FromHead,
    /// Removed (`rm`, `rmdir`, `unlink`): a write of the path, unless the hook finds it
    /// new ([`WriteKind::RemoveNew`]).
    Remove,
    /// A removal of a path HEAD does not hold, which the hook set from a [`WriteKind::Remove`]
    /// after looking at HEAD: with nothing of the accepted tree there, it is what appeared
    /// since the server last accepted the tree (a test run's cache), and removing it brings
    /// the tree back, as the server's refusals ask.
    RemoveNew,
}
