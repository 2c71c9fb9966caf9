//! Where the semantic index keeps its files under `.code-intel/semantic/`, and the hex
//! form of content hashes in them.

use std::path::PathBuf;

use crate::codeintel::root::Root;

/// Where the lexical index lives, relative to the root.
pub(crate) const LEXICAL_DIR: &str = ".code-intel/semantic/lexical";

/// The files of the semantic index of one root.
pub(crate) struct Layout {
    pub(crate) dir: PathBuf,
    pub(crate) catalog: PathBuf,
    pub(crate) lexical: PathBuf,
    pub(crate) vectors: PathBuf,
    /// The Map of agreements.
    pub(crate) map: PathBuf,
    /// Held while files are chunked and the catalog and lexical index written.
    pub(crate) lock: PathBuf,
    /// Held while vectors are appended or compacted: embedding may take minutes, and the
    /// files can be re-chunked meanwhile.
    pub(crate) vectors_lock: PathBuf,
}

impl Layout {
    pub(crate) fn of(root: &Root) -> Layout {
        let dir = root.path().join(".code-intel/semantic");
        Layout {
            catalog: dir.join("catalog.json"),
            lexical: root.path().join(LEXICAL_DIR),
            vectors: dir.join("vectors.bin"),
            map: dir.join("map.json"),
            lock: dir.join("sync.lock"),
            vectors_lock: dir.join("vectors.lock"),
            dir,
        }
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

pub(crate) fn unhex(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in text.as_bytes().chunks_exact(2).enumerate() {
        let s = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(s, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_round_trip_through_hex() {
        let h = [0xabu8; 32];
        assert_eq!(unhex(&hex(&h)), Some(h));
        assert_eq!(unhex("zz"), None);
    }
}
