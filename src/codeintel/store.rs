//! The on-disk symbol index: a compact binary file that queries read in pieces.
//!
//! Records have fixed sizes and strings live in blobs, so a query reads the header, the
//! file table and the paths (to check freshness) in one read, then binary-searches the
//! sorted name directory and reads only the tags it returns, whatever the repository's
//! size. The index is derived data: deleting `.code-intel/symbols.idx` only costs a rebuild.
//!
//! Layout (all integers little-endian; a str is u32 offset + u32 length into a blob):
//! ```text
//! magic "CIIDX008" | u32 files | u32 tags | u32 names | u32 postings | u32 paths_len | u32 blob_len | u64 built_unix | u64 generation
//! files    × FILE (path str in paths, u64 size, u64 mtime_ns, [u8;32] sha256, lang str, u32 first_tag, u32 tag_count)
//! paths    the bytes of every file path
//! names    × NAME (name str, u32 first_posting, u32 posting_count), sorted by name bytes
//! postings × u32 tag index, grouped by name, definitions first
//! tags     × TAG  (name str, kind str, scope str, signature str (definitions only),
//!                  u32 line, u32 column, u32 end_line, u32 file, u32 is_def, u32 start_line)
//! blob     the bytes of every other str
//! ```
//!
//! `generation` pairs the two layers: a main index has its own, a delta the generation of
//! the main index it applies to (see `index::read_snapshot`).
//!
//! Every write goes to a temp file with a name no other writer uses, is fsynced and then
//! renamed over the target, so a reader opens either the old file or the new one, whole.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::error::Error;
use super::tags::Tag;

const MAGIC: &[u8; 8] = b"CIIDX008";
const HEADER: usize = 8 + 6 * 4 + 8 + 8;
const FILE_REC: usize = 8 + 8 + 8 + 32 + 8 + 4 + 4;
const TAG_REC: usize = 4 * 8 + 6 * 4;
const NAME_REC: usize = 8 + 4 + 4;

/// One indexed file, in memory.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FileEntry {
    /// Root-relative path with `/` separators.
    pub(crate) path: String,
    pub(crate) size: u64,
    pub(crate) mtime_ns: u64,
    pub(crate) hash: [u8; 32],
    pub(crate) language: String,
    pub(crate) tags: Vec<Tag>,
}

/// Writes `files` as an index file, atomically: a temp file, fsync, then rename.
pub(crate) fn write(
    path: &Path,
    files: &[FileEntry],
    built_unix: u64,
    generation: u64,
) -> std::io::Result<()> {
    let mut blob: Vec<u8> = Vec::new();
    let mut interned: HashMap<String, (u32, u32)> = HashMap::new();
    let mut intern = |s: &str| -> (u32, u32) {
        if let Some(r) = interned.get(s) {
            return *r;
        }
        let r = (to_u32(blob.len()), to_u32(s.len()));
        blob.extend_from_slice(s.as_bytes());
        interned.insert(s.to_string(), r);
        r
    };
    let mut paths: Vec<u8> = Vec::new();
    let mut file_bytes = Vec::with_capacity(files.len() * FILE_REC);
    let mut tag_bytes = Vec::new();
    let mut by_name: HashMap<&str, Vec<(bool, u32)>> = HashMap::new();
    let mut tag_index: u32 = 0;
    for (file_index, f) in files.iter().enumerate() {
        put_str(&mut file_bytes, to_u32(paths.len()), to_u32(f.path.len()));
        paths.extend_from_slice(f.path.as_bytes());
        file_bytes.extend_from_slice(&f.size.to_le_bytes());
        file_bytes.extend_from_slice(&f.mtime_ns.to_le_bytes());
        file_bytes.extend_from_slice(&f.hash);
        let (lo, ll) = intern(&f.language);
        put_str(&mut file_bytes, lo, ll);
        file_bytes.extend_from_slice(&tag_index.to_le_bytes());
        file_bytes.extend_from_slice(&to_u32(f.tags.len()).to_le_bytes());
        for t in &f.tags {
            // References keep no signature: it is their source line, read back for the few
            // a query returns (see `symbols::fill_reference_lines`).
            let signature = if t.is_definition {
                t.signature.as_str()
            } else {
                ""
            };
            for s in [
                t.name.as_str(),
                t.kind.as_str(),
                t.scope.as_deref().unwrap_or(""),
                signature,
            ] {
                let (o, l) = intern(s);
                put_str(&mut tag_bytes, o, l);
            }
            for n in [
                t.line,
                t.column,
                t.end_line,
                to_u32(file_index),
                u32::from(t.is_definition),
                t.start_line,
            ] {
                tag_bytes.extend_from_slice(&n.to_le_bytes());
            }
            by_name
                .entry(t.name.as_str())
                .or_default()
                .push((t.is_definition, tag_index));
            tag_index += 1;
        }
    }
    let mut names: Vec<(&str, Vec<(bool, u32)>)> = by_name.into_iter().collect();
    names.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut name_bytes = Vec::with_capacity(names.len() * NAME_REC);
    let mut posting_bytes = Vec::new();
    let mut postings: u32 = 0;
    for (name, mut list) in names.iter().cloned() {
        // Definitions first, then in file order.
        list.sort_by_key(|(def, idx)| (!def, *idx));
        let (o, l) = intern(name);
        put_str(&mut name_bytes, o, l);
        name_bytes.extend_from_slice(&postings.to_le_bytes());
        name_bytes.extend_from_slice(&to_u32(list.len()).to_le_bytes());
        for (_, idx) in &list {
            posting_bytes.extend_from_slice(&idx.to_le_bytes());
        }
        postings += to_u32(list.len());
    }
    let mut out = Vec::with_capacity(
        HEADER
            + file_bytes.len()
            + paths.len()
            + tag_bytes.len()
            + name_bytes.len()
            + posting_bytes.len()
            + blob.len(),
    );
    out.extend_from_slice(MAGIC);
    for n in [
        to_u32(files.len()),
        tag_index,
        to_u32(names.len()),
        postings,
        to_u32(paths.len()),
        to_u32(blob.len()),
    ] {
        out.extend_from_slice(&n.to_le_bytes());
    }
    out.extend_from_slice(&built_unix.to_le_bytes());
    out.extend_from_slice(&generation.to_le_bytes());
    out.extend_from_slice(&file_bytes);
    out.extend_from_slice(&paths);
    out.extend_from_slice(&name_bytes);
    out.extend_from_slice(&posting_bytes);
    out.extend_from_slice(&tag_bytes);
    out.extend_from_slice(&blob);
    atomic_write(path, &out)
}

/// Writes `bytes` to `path` so that a crash leaves either the old or the new file.
///
/// The temp file's name is unique to this write (process id, a process-wide counter and
/// the time), so two writers, in one process or in two, never write the same temp file;
/// `create_new` makes a collision an error rather than a shared file. Callers hold the
/// index lock, so a temp file found while holding it belongs to a dead writer
/// ([`is_temp`]).
pub(crate) fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = temp_path(path);
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    if let Some(dir) = path.parent()
        && let Ok(d) = std::fs::File::open(dir)
    {
        let _ = d.sync_all();
    }
    Ok(())
}

/// `symbols.idx` → `symbols.idx.tmp-<pid>-<counter>-<nanos>`.
fn temp_path(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!("{name}.tmp-{}-{n}-{nanos}", std::process::id()))
}

/// Whether a file name in `.code-intel/` is a temp file of an index write: today's
/// `symbols.idx.tmp-…` and the older `symbols.tmp<pid>`.
pub(crate) fn is_temp(name: &str) -> bool {
    name.starts_with("symbols.") && name.contains(".tmp")
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn put_str(out: &mut Vec<u8>, offset: u32, len: u32) {
    out.extend_from_slice(&offset.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
}

/// Where the bytes of an index come from: the whole file in memory (for updates), or the
/// open file read piece by piece (for queries).
enum Source {
    Memory(Vec<u8>),
    File(std::fs::File),
}

/// An index file, decoded on demand.
pub(crate) struct Store {
    source: Source,
    /// The header, the file table and the paths, always in memory.
    head: Vec<u8>,
    files: usize,
    tags: usize,
    names: usize,
    postings: usize,
    names_at: u64,
    postings_at: u64,
    tags_at: u64,
    blob_at: u64,
    pub(crate) built_unix: u64,
    /// Pairs a delta with its main index (see the module doc).
    pub(crate) generation: u64,
}

/// A tag read from the store, with its file's index.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StoredTag {
    pub(crate) tag: Tag,
    pub(crate) file: usize,
}

fn le32(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn le64(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8).map_or(0, |s| {
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        u64::from_le_bytes(a)
    })
}

impl Store {
    /// Reads a whole index file into memory (for a fold, which decodes everything: one
    /// read instead of a `pread` per string).
    pub(crate) fn read(path: &Path) -> Result<Store, Error> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let len = bytes.len() as u64;
        Store::new(Source::Memory(bytes), len, path)
    }

    /// Opens an index file for queries: only the header, file table and paths are read now.
    pub(crate) fn open(path: &Path) -> Result<Store, Error> {
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        Store::new(Source::File(file), len, path)
    }

    fn new(source: Source, len: u64, path: &Path) -> Result<Store, Error> {
        let corrupt = |reason: String| Error::IndexCorrupt {
            path: path.to_path_buf(),
            reason,
        };
        let mut store = Store {
            source,
            head: Vec::new(),
            files: 0,
            tags: 0,
            names: 0,
            postings: 0,
            names_at: 0,
            postings_at: 0,
            tags_at: 0,
            blob_at: 0,
            built_unix: 0,
            generation: 0,
        };
        let header = store.read_at(0, HEADER.min(usize::try_from(len).unwrap_or(0)));
        if header.len() < HEADER || &header[..8] != MAGIC {
            return Err(corrupt(
                "not a code-intel index (or an older format)".into(),
            ));
        }
        let (files, tags, names, postings, paths, blob) = (
            le32(&header, 8) as usize,
            le32(&header, 12) as usize,
            le32(&header, 16) as usize,
            le32(&header, 20) as usize,
            le32(&header, 24) as usize,
            le32(&header, 28) as u64,
        );
        store.built_unix = le64(&header, 32);
        store.generation = le64(&header, 40);
        let head_len = HEADER + files * FILE_REC + paths;
        store.names_at = head_len as u64;
        store.postings_at = store.names_at + (names * NAME_REC) as u64;
        store.tags_at = store.postings_at + (postings * 4) as u64;
        store.blob_at = store.tags_at + (tags * TAG_REC) as u64;
        if store.blob_at + blob != len {
            return Err(corrupt(format!(
                "truncated or corrupt ({len} bytes, expected {})",
                store.blob_at + blob
            )));
        }
        store.head = store.read_at(0, head_len);
        (store.files, store.tags, store.names, store.postings) = (files, tags, names, postings);
        Ok(store)
    }

    fn read_at(&self, offset: u64, len: usize) -> Vec<u8> {
        match &self.source {
            Source::Memory(bytes) => {
                let start = usize::try_from(offset).unwrap_or(usize::MAX);
                bytes
                    .get(start..start.saturating_add(len))
                    .map_or_else(Vec::new, <[u8]>::to_vec)
            }
            Source::File(file) => {
                use std::os::unix::fs::FileExt;
                let mut buf = vec![0u8; len];
                if file.read_exact_at(&mut buf, offset).is_ok() {
                    buf
                } else {
                    Vec::new()
                }
            }
        }
    }

    /// A string of the blob, from its (offset, length) record at `rec[at..]`.
    fn blob_str(&self, rec: &[u8], at: usize) -> String {
        let (o, l) = (u64::from(le32(rec, at)), le32(rec, at + 4) as usize);
        if l == 0 {
            return String::new();
        }
        String::from_utf8(self.read_at(self.blob_at + o, l)).unwrap_or_default()
    }

    pub(crate) fn file_count(&self) -> usize {
        self.files
    }

    fn file_rec(&self, i: usize) -> &[u8] {
        let at = HEADER + i * FILE_REC;
        self.head.get(at..at + FILE_REC).unwrap_or(&[])
    }

    pub(crate) fn file_path(&self, i: usize) -> &str {
        let rec = self.file_rec(i);
        let (o, l) = (le32(rec, 0) as usize, le32(rec, 4) as usize);
        let base = HEADER + self.files * FILE_REC;
        self.head
            .get(base + o..base + o + l)
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or("")
    }

    /// `(size, mtime_ns, sha256)` of file `i` when it was indexed.
    pub(crate) fn file_stamp(&self, i: usize) -> (u64, u64, [u8; 32]) {
        let rec = self.file_rec(i);
        let mut hash = [0u8; 32];
        if let Some(h) = rec.get(24..56) {
            hash.copy_from_slice(h);
        }
        (le64(rec, 8), le64(rec, 16), hash)
    }

    pub(crate) fn file_language(&self, i: usize) -> String {
        let rec = self.file_rec(i).to_vec();
        self.blob_str(&rec, 56)
    }

    pub(crate) fn file_tags(&self, i: usize) -> Vec<Tag> {
        let rec = self.file_rec(i);
        let (first, count) = (le32(rec, 64) as usize, le32(rec, 68) as usize);
        let count = count.min(self.tags.saturating_sub(first));
        let bytes = self.read_at(self.tags_at + (first * TAG_REC) as u64, count * TAG_REC);
        bytes
            .chunks_exact(TAG_REC)
            .map(|r| self.decode_tag(r).tag)
            .collect()
    }

    fn decode_tag(&self, r: &[u8]) -> StoredTag {
        let scope = self.blob_str(r, 16);
        StoredTag {
            tag: Tag {
                name: self.blob_str(r, 0),
                kind: self.blob_str(r, 8),
                scope: (!scope.is_empty()).then_some(scope),
                signature: self.blob_str(r, 24),
                line: le32(r, 32),
                column: le32(r, 36),
                end_line: le32(r, 40),
                is_definition: le32(r, 48) != 0,
                start_line: le32(r, 52),
                // The index stores definitions, which have none.
                qualifier: None,
            },
            file: le32(r, 44) as usize,
        }
    }

    /// The file index of tag `t` and whether it is a definition, in one read of the two
    /// fields (no strings).
    pub(crate) fn tag_file_and_kind(&self, t: usize) -> (usize, bool) {
        let r = self.read_at(self.tags_at + (t * TAG_REC) as u64 + 44, 8);
        (le32(&r, 0) as usize, le32(&r, 4) != 0)
    }

    /// The generation in the header of the index file at `path` now, reading only the
    /// header; None when it is missing or not an index.
    pub(crate) fn generation_at(path: &Path) -> Option<u64> {
        use std::io::Read;
        let mut header = [0u8; HEADER];
        std::fs::File::open(path)
            .ok()?
            .read_exact(&mut header)
            .ok()?;
        (&header[..8] == MAGIC).then(|| le64(&header, 40))
    }

    /// How many tags file `i` has.
    pub(crate) fn file_tag_count(&self, i: usize) -> usize {
        le32(self.file_rec(i), 68) as usize
    }

    /// Whether tag `t` is a definition, reading only its record (no strings).
    pub(crate) fn is_definition(&self, t: usize) -> bool {
        let r = self.read_at(self.tags_at + (t * TAG_REC) as u64 + 48, 4);
        le32(&r, 0) != 0
    }

    pub(crate) fn tag(&self, t: usize) -> StoredTag {
        let r = self.read_at(self.tags_at + (t * TAG_REC) as u64, TAG_REC);
        self.decode_tag(&r)
    }

    /// The tag indices for `name` (definitions first), by binary search.
    pub(crate) fn lookup(&self, name: &str) -> Vec<usize> {
        let (mut lo, mut hi) = (0usize, self.names);
        while lo < hi {
            let mid = usize::midpoint(lo, hi);
            let rec = self.read_at(self.names_at + (mid * NAME_REC) as u64, NAME_REC);
            match self.blob_str(&rec, 0).as_bytes().cmp(name.as_bytes()) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    let (first, count) = (le32(&rec, 8) as usize, le32(&rec, 12) as usize);
                    let count = count.min(self.postings.saturating_sub(first));
                    let bytes = self.read_at(self.postings_at + (first * 4) as u64, count * 4);
                    return bytes
                        .chunks_exact(4)
                        .map(|c| le32(c, 0) as usize)
                        .filter(|t| *t < self.tags)
                        .collect();
                }
            }
        }
        Vec::new()
    }

    /// File `i`, decoded with its tags.
    pub(crate) fn entry(&self, i: usize) -> FileEntry {
        let (size, mtime_ns, hash) = self.file_stamp(i);
        FileEntry {
            path: self.file_path(i).to_string(),
            size,
            mtime_ns,
            hash,
            language: self.file_language(i),
            tags: self.file_tags(i),
        }
    }

    /// Every file, decoded, for an incremental update.
    pub(crate) fn entries(&self) -> Vec<FileEntry> {
        (0..self.files).map(|i| self.entry(i)).collect()
    }
}
