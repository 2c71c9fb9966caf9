//! The on-disk symbol index: a compact binary file that queries read in pieces.
//!
//! Records have fixed sizes and strings live in blobs, so a query reads the header, the
//! file table and the paths (to check freshness) in one read, then binary-searches the
//! sorted name directory and reads only the tags it returns, whatever the repository's
//! size. The index is derived data: deleting `.code-intel/symbols.idx` only costs a rebuild.
//!
//! Layout (all integers little-endian; a str is u32 offset + u32 length into a blob):
//! ```text
//! magic "CIIDX009" | u32 files | u32 tags | u32 names | u32 postings | u32 paths_len | u32 blob_len | u64 built_unix | u64 generation
//! chunks   × u64 checksum of each 4 KiB piece of each section below, section by section
//!                  (a section's last piece may be shorter; an empty section has none)
//! check    u64 checksum of everything above: the header and the chunk table
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
//! The file is untrusted: it may be truncated, damaged on disk, or of another version.
//! Opening checks the magic, the exact length, the header's checksum (which covers the
//! chunk table) and every piece of the file table and the paths, which every query reads
//! whole anyway. The other sections are checked lazily: a piece is checked the first time
//! anything is read from it, and remembered as checked for the life of the `Store`, so a
//! query reads and checks a few pieces, not the 20 MB of a large index. Any mismatch is
//! [`Error::IndexCorrupt`], at open or from the read that found it; nothing decoded from
//! an unchecked byte is ever returned. The checksum is [`checksum`] (xxHash64), which
//! catches damage, not deliberate edits (an editor can rewrite the checksums too).
//!
//! Every write goes to a temp file with a name no other writer uses, is fsynced and then
//! renamed over the target, so a reader opens either the old file or the new one, whole.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::error::Error;
use super::tags::Tag;

const MAGIC: &[u8; 8] = b"CIIDX009";
/// The magic, six counts, `built_unix` and `generation`; the chunk table follows.
const HEADER: usize = 8 + 6 * 4 + 8 + 8;
/// Sections are checked in pieces of this size: a query that reads a 16-byte record checks
/// (and reads) one piece, so small pieces keep a cold query cheap, at 8 bytes of chunk
/// table (read at open) per piece.
const CHUNK: usize = 4096;
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
    atomic_write(path, &index_bytes(files, built_unix, generation))
}

/// The bytes of an index file of `files`.
fn index_bytes(files: &[FileEntry], built_unix: u64, generation: u64) -> Vec<u8> {
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
    let counts = [
        to_u32(files.len()),
        tag_index,
        to_u32(names.len()),
        postings,
        to_u32(paths.len()),
        to_u32(blob.len()),
    ];
    let sections = [
        &file_bytes[..],
        &paths,
        &name_bytes,
        &posting_bytes,
        &tag_bytes,
        &blob,
    ];
    encode(counts, built_unix, generation, sections)
}

/// The bytes of an index file: the header, the chunk table and its checksum, then the
/// sections in order.
fn encode(counts: [u32; 6], built_unix: u64, generation: u64, sections: [&[u8]; 6]) -> Vec<u8> {
    let body: usize = sections.iter().map(|s| s.len()).sum();
    let pieces: usize = sections.iter().map(|s| s.len().div_ceil(CHUNK)).sum();
    let mut out = Vec::with_capacity(HEADER + pieces * 8 + 8 + body);
    out.extend_from_slice(MAGIC);
    for n in counts {
        out.extend_from_slice(&n.to_le_bytes());
    }
    out.extend_from_slice(&built_unix.to_le_bytes());
    out.extend_from_slice(&generation.to_le_bytes());
    for section in sections {
        for piece in section.chunks(CHUNK) {
            out.extend_from_slice(&checksum(piece).to_le_bytes());
        }
    }
    let check = checksum(&out);
    out.extend_from_slice(&check.to_le_bytes());
    for section in sections {
        out.extend_from_slice(section);
    }
    out
}

/// xxHash64 (seed 0) of `bytes`, written here rather than taken from a crate: a fast
/// 64-bit checksum (four independent lanes over u64 words, several GB/s) that catches
/// damage to an index file. It is not a defence against deliberate edits.
pub(crate) fn checksum(bytes: &[u8]) -> u64 {
    const P1: u64 = 0x9E37_79B1_85EB_CA87;
    const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
    const P3: u64 = 0x1656_67B1_9E37_79F9;
    const P4: u64 = 0x85EB_CA77_C2B2_AE63;
    const P5: u64 = 0x27D4_EB2F_1656_67C5;
    fn round(acc: u64, word: u64) -> u64 {
        acc.wrapping_add(word.wrapping_mul(P2))
            .rotate_left(31)
            .wrapping_mul(P1)
    }
    // Only ever given 8 bytes (from `chunks_exact(8)`), so this compiles to one load.
    fn word(b: &[u8]) -> u64 {
        <[u8; 8]>::try_from(b).map_or(0, u64::from_le_bytes)
    }
    let mut stripes = bytes.chunks_exact(32);
    let mut h = if bytes.len() >= 32 {
        let mut v = [P1.wrapping_add(P2), P2, 0, P1.wrapping_neg()];
        for stripe in &mut stripes {
            for (lane, w) in v.iter_mut().zip(stripe.chunks_exact(8)) {
                *lane = round(*lane, word(w));
            }
        }
        let mut h = v[0]
            .rotate_left(1)
            .wrapping_add(v[1].rotate_left(7))
            .wrapping_add(v[2].rotate_left(12))
            .wrapping_add(v[3].rotate_left(18));
        for lane in v {
            h = (h ^ round(0, lane)).wrapping_mul(P1).wrapping_add(P4);
        }
        h
    } else {
        P5
    };
    h = h.wrapping_add(bytes.len() as u64);
    let mut words = stripes.remainder().chunks_exact(8);
    for w in &mut words {
        h = (h ^ round(0, word(w)))
            .rotate_left(27)
            .wrapping_mul(P1)
            .wrapping_add(P4);
    }
    let mut rest = words.remainder();
    if let Some((four, tail)) = rest.split_first_chunk::<4>() {
        h = (h ^ u64::from(u32::from_le_bytes(*four)).wrapping_mul(P1))
            .rotate_left(23)
            .wrapping_mul(P2)
            .wrapping_add(P3);
        rest = tail;
    }
    for &b in rest {
        h = (h ^ u64::from(b).wrapping_mul(P5))
            .rotate_left(11)
            .wrapping_mul(P1);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(P2);
    h ^= h >> 29;
    h = h.wrapping_mul(P3);
    h ^ (h >> 32)
}

/// Writes `bytes` to `path` so that a crash leaves either the old or the new file.
///
/// The temp file's name is unique to this write (process id, a process-wide counter and
/// the time), so two writers, in one process or in two, never write the same temp file;
/// `create_new` makes a collision an error rather than a shared file. Callers hold the
/// index lock, so a temp file found while holding it belongs to a dead writer
/// ([`is_temp`]). Under `.code-intel/` no directory on the way may be a symlink
/// ([`super::state_dir::check_path`]); the rename replaces a symlink at `path` itself.
pub(crate) fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_and_rename(path, bytes)?;
    if let Some(dir) = path.parent() {
        sync_dir(dir);
    }
    Ok(())
}

/// [`atomic_write`] but the directory's fsync, for a writer of many files that syncs each
/// directory once after its batch ([`sync_dir`]): the file's bytes are on disk and it
/// appears whole or not at all, but its name is durable only once the directory is synced.
pub(crate) fn write_and_rename(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // Under `.code-intel/`, never through a planted symlink (see `state_dir`).
    super::state_dir::check_path(path)?;
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
    written
}

/// Makes the names in `dir` durable (fsync of the directory); a directory that cannot be
/// opened or synced is left as it is, as before.
pub(crate) fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
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

impl Source {
    /// `len` bytes at `offset`, or an error when there are fewer.
    fn read(&self, offset: u64, len: usize) -> std::io::Result<Cow<'_, [u8]>> {
        match self {
            Source::Memory(bytes) => usize::try_from(offset)
                .ok()
                .and_then(|start| bytes.get(start..start.checked_add(len)?))
                .map(Cow::Borrowed)
                .ok_or_else(|| std::io::ErrorKind::UnexpectedEof.into()),
            Source::File(file) => {
                use std::os::unix::fs::FileExt;
                let mut buf = vec![0u8; len];
                file.read_exact_at(&mut buf, offset)?;
                Ok(Cow::Owned(buf))
            }
        }
    }
}

/// The sections of an index file, in file order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Files = 0,
    Paths = 1,
    Names = 2,
    Postings = 3,
    Tags = 4,
    Blob = 5,
}

const SECTIONS: [Section; 6] = [
    Section::Files,
    Section::Paths,
    Section::Names,
    Section::Postings,
    Section::Tags,
    Section::Blob,
];

impl Section {
    fn name(self) -> &'static str {
        match self {
            Section::Files => "file table",
            Section::Paths => "paths",
            Section::Names => "names",
            Section::Postings => "postings",
            Section::Tags => "tags",
            Section::Blob => "blob",
        }
    }
}

/// Where a section is in the file, and the position of its first piece's checksum in the
/// chunk table.
#[derive(Debug, Clone, Copy, Default)]
struct Extent {
    at: u64,
    len: u64,
    first_piece: usize,
}

/// An index file, decoded on demand, each piece checked against its checksum the first
/// time it is read.
pub(crate) struct Store {
    source: Source,
    path: PathBuf,
    /// The header, the chunk table and its checksum, the file table and the paths, always
    /// in memory and checked at open.
    head: Vec<u8>,
    files_at: usize,
    paths_at: usize,
    files: usize,
    tags: usize,
    names: usize,
    postings: usize,
    sections: [Extent; 6],
    /// The chunk table: the checksum of every piece, section by section.
    sums: Vec<u64>,
    /// One bit per piece: checked already. Atomic, because an `Index` (and so its stores)
    /// is shared between threads; two threads checking the same piece at once is harmless.
    checked: Vec<AtomicU64>,
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

fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

impl Store {
    /// Reads a whole index file into memory and checks all of it (for a fold, which
    /// decodes everything: one read instead of a `pread` per string).
    pub(crate) fn read(path: &Path) -> Result<Store, Error> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let len = bytes.len() as u64;
        let store = Store::new(Source::Memory(bytes), len, path)?;
        store.verify()?;
        Ok(store)
    }

    /// Opens an index file for queries: only the header, chunk table, file table and paths
    /// are read (and checked) now.
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
        let header = source
            .read(0, HEADER)
            .ok()
            .filter(|h| h.get(..8) == Some(&MAGIC[..]))
            .ok_or_else(|| corrupt("not a code-intel index (or an older format)".into()))?;
        let count = |at: usize| u64::from(le32(&header, at));
        let (files, tags, names, postings) = (count(8), count(12), count(16), count(20));
        let lens = [
            files * FILE_REC as u64,
            count(24),
            names * NAME_REC as u64,
            postings * 4,
            tags * TAG_REC as u64,
            count(28),
        ];
        let (built_unix, generation) = (le64(&header, 32), le64(&header, 40));
        drop(header);
        let pieces: u64 = lens.iter().map(|l| l.div_ceil(CHUNK as u64)).sum();
        let table_end = HEADER as u64 + pieces * 8;
        let body_at = table_end + 8;
        let expected = body_at + lens.iter().sum::<u64>();
        if expected != len {
            return Err(corrupt(format!(
                "truncated or corrupt ({len} bytes, expected {expected})"
            )));
        }
        let head_len = to_usize(body_at + lens[0] + lens[1]);
        let head = source
            .read(0, head_len)
            .map_err(|e| corrupt(format!("cannot read its first {head_len} bytes: {e}")))?
            .into_owned();
        let table_end = to_usize(table_end);
        let table = head.get(..table_end).unwrap_or(&[]);
        if checksum(table) != le64(&head, table_end) {
            return Err(corrupt(
                "its header or chunk table does not match its checksum".into(),
            ));
        }
        let sums: Vec<u64> = table
            .get(HEADER..)
            .unwrap_or(&[])
            .chunks_exact(8)
            .map(|c| le64(c, 0))
            .collect();
        let mut sections = [Extent::default(); 6];
        let (mut at, mut first_piece) = (body_at, 0);
        for (extent, len) in sections.iter_mut().zip(lens) {
            *extent = Extent {
                at,
                len,
                first_piece,
            };
            at += len;
            first_piece += to_usize(len.div_ceil(CHUNK as u64));
        }
        let store = Store {
            source,
            path: path.to_path_buf(),
            files_at: to_usize(body_at),
            paths_at: to_usize(body_at + lens[0]),
            head,
            files: to_usize(files),
            tags: to_usize(tags),
            names: to_usize(names),
            postings: to_usize(postings),
            sections,
            checked: (0..sums.len().div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
            sums,
            built_unix,
            generation,
        };
        // Every query reads the file table and the paths whole: check them now.
        for section in [Section::Files, Section::Paths] {
            let e = store.sections[section as usize];
            let bytes = store
                .head
                .get(to_usize(e.at)..to_usize(e.at + e.len))
                .unwrap_or(&[]);
            store.check(section, 0, bytes)?;
        }
        Ok(store)
    }

    fn corrupt(&self, reason: String) -> Error {
        Error::IndexCorrupt {
            path: self.path.clone(),
            reason,
        }
    }

    fn is_checked(&self, piece: usize) -> bool {
        self.checked
            .get(piece / 64)
            .is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (piece % 64)) != 0)
    }

    /// Checks the pieces of `section` that `bytes` holds, starting with piece `first`:
    /// `bytes` starts at a piece boundary and ends at one or at the section's end.
    fn check(&self, section: Section, first: usize, bytes: &[u8]) -> Result<(), Error> {
        let extent = self.sections[section as usize];
        for (k, piece) in bytes.chunks(CHUNK).enumerate() {
            let n = extent.first_piece + first + k;
            if self.is_checked(n) {
                continue;
            }
            if self.sums.get(n) != Some(&checksum(piece)) {
                let from = extent.at + ((first + k) * CHUNK) as u64;
                return Err(self.corrupt(format!(
                    "bytes {from}..{} (piece {} of its {}) do not match their checksum",
                    from + piece.len() as u64,
                    first + k,
                    section.name()
                )));
            }
            if let Some(w) = self.checked.get(n / 64) {
                w.fetch_or(1 << (n % 64), Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// `len` bytes at `offset` in `section`, checking the pieces they lie in that were not
    /// checked yet (reading those pieces whole).
    fn read_at(&self, section: Section, offset: u64, len: usize) -> Result<Vec<u8>, Error> {
        if len == 0 {
            return Ok(Vec::new());
        }
        let extent = self.sections[section as usize];
        let end = offset
            .checked_add(len as u64)
            .filter(|end| *end <= extent.len)
            .ok_or_else(|| {
                self.corrupt(format!(
                    "a record points past the end of its {}",
                    section.name()
                ))
            })?;
        let unreadable =
            |e: std::io::Error| self.corrupt(format!("cannot read its {}: {e}", section.name()));
        let chunk = CHUNK as u64;
        let (first, last) = (offset / chunk, (end - 1) / chunk);
        let piece = |k: u64| extent.first_piece + to_usize(k);
        if (first..=last).all(|k| self.is_checked(piece(k))) {
            let bytes = self
                .source
                .read(extent.at + offset, len)
                .map_err(unreadable)?;
            return Ok(bytes.into_owned());
        }
        let span_at = first * chunk;
        let span_end = ((last + 1) * chunk).min(extent.len);
        let span = self
            .source
            .read(extent.at + span_at, to_usize(span_end - span_at))
            .map_err(unreadable)?;
        self.check(section, to_usize(first), &span)?;
        let from = to_usize(offset - span_at);
        Ok(span.get(from..from + len).unwrap_or(&[]).to_vec())
    }

    /// Checks every piece of the file (for a fold, and for a repair that must know).
    pub(crate) fn verify(&self) -> Result<(), Error> {
        // A megabyte at a time: few reads, little memory.
        let span = (256 * CHUNK) as u64;
        for section in SECTIONS {
            let len = self.sections[section as usize].len;
            let mut at = 0;
            while at < len {
                self.read_at(section, at, to_usize(span.min(len - at)))?;
                at += span;
            }
        }
        Ok(())
    }

    /// A string of the blob, from its (offset, length) record at `rec[at..]`.
    fn blob_str(&self, rec: &[u8], at: usize) -> Result<String, Error> {
        let (o, l) = (u64::from(le32(rec, at)), le32(rec, at + 4) as usize);
        String::from_utf8(self.read_at(Section::Blob, o, l)?)
            .map_err(|_| self.corrupt("a string in its blob is not UTF-8".into()))
    }

    pub(crate) fn file_count(&self) -> usize {
        self.files
    }

    fn file_rec(&self, i: usize) -> &[u8] {
        let at = self.files_at + i * FILE_REC;
        self.head.get(at..at + FILE_REC).unwrap_or(&[])
    }

    pub(crate) fn file_path(&self, i: usize) -> &str {
        let rec = self.file_rec(i);
        let (o, l) = (le32(rec, 0) as usize, le32(rec, 4) as usize);
        let base = self.paths_at;
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

    pub(crate) fn file_language(&self, i: usize) -> Result<String, Error> {
        self.blob_str(self.file_rec(i), 56)
    }

    pub(crate) fn file_tags(&self, i: usize) -> Result<Vec<Tag>, Error> {
        let rec = self.file_rec(i);
        let (first, count) = (le32(rec, 64) as usize, le32(rec, 68) as usize);
        let count = count.min(self.tags.saturating_sub(first));
        let bytes = self.read_at(Section::Tags, (first * TAG_REC) as u64, count * TAG_REC)?;
        bytes
            .chunks_exact(TAG_REC)
            .map(|r| self.decode_tag(r).map(|t| t.tag))
            .collect()
    }

    fn decode_tag(&self, r: &[u8]) -> Result<StoredTag, Error> {
        let scope = self.blob_str(r, 16)?;
        Ok(StoredTag {
            tag: Tag {
                name: self.blob_str(r, 0)?,
                kind: self.blob_str(r, 8)?,
                scope: (!scope.is_empty()).then_some(scope),
                signature: self.blob_str(r, 24)?,
                line: le32(r, 32),
                column: le32(r, 36),
                end_line: le32(r, 40),
                is_definition: le32(r, 48) != 0,
                start_line: le32(r, 52),
                // The index stores definitions, which have none.
                qualifier: None,
            },
            file: le32(r, 44) as usize,
        })
    }

    /// The file index of tag `t` and whether it is a definition, in one read of the two
    /// fields (no strings).
    pub(crate) fn tag_file_and_kind(&self, t: usize) -> Result<(usize, bool), Error> {
        let r = self.read_at(Section::Tags, (t * TAG_REC) as u64 + 44, 8)?;
        Ok((le32(&r, 0) as usize, le32(&r, 4) != 0))
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
    pub(crate) fn is_definition(&self, t: usize) -> Result<bool, Error> {
        let r = self.read_at(Section::Tags, (t * TAG_REC) as u64 + 48, 4)?;
        Ok(le32(&r, 0) != 0)
    }

    pub(crate) fn tag(&self, t: usize) -> Result<StoredTag, Error> {
        let r = self.read_at(Section::Tags, (t * TAG_REC) as u64, TAG_REC)?;
        self.decode_tag(&r)
    }

    /// The tag indices for `name` (definitions first), by binary search.
    pub(crate) fn lookup(&self, name: &str) -> Result<Vec<usize>, Error> {
        let (mut lo, mut hi) = (0usize, self.names);
        while lo < hi {
            let mid = usize::midpoint(lo, hi);
            let rec = self.read_at(Section::Names, (mid * NAME_REC) as u64, NAME_REC)?;
            match self.blob_str(&rec, 0)?.as_bytes().cmp(name.as_bytes()) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    let (first, count) = (le32(&rec, 8) as usize, le32(&rec, 12) as usize);
                    let count = count.min(self.postings.saturating_sub(first));
                    let bytes = self.read_at(Section::Postings, (first * 4) as u64, count * 4)?;
                    return Ok(bytes
                        .chunks_exact(4)
                        .map(|c| le32(c, 0) as usize)
                        .filter(|t| *t < self.tags)
                        .collect());
                }
            }
        }
        Ok(Vec::new())
    }

    /// File `i`, decoded with its tags.
    pub(crate) fn entry(&self, i: usize) -> Result<FileEntry, Error> {
        let (size, mtime_ns, hash) = self.file_stamp(i);
        Ok(FileEntry {
            path: self.file_path(i).to_string(),
            size,
            mtime_ns,
            hash,
            language: self.file_language(i)?,
            tags: self.file_tags(i)?,
        })
    }

    /// Every file, decoded, for an incremental update.
    pub(crate) fn entries(&self) -> Result<Vec<FileEntry>, Error> {
        (0..self.files).map(|i| self.entry(i)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(name: &str, kind: &str, line: u32, is_definition: bool, scope: Option<&str>) -> Tag {
        Tag {
            name: name.to_string(),
            kind: kind.to_string(),
            is_definition,
            line,
            column: 4,
            end_line: line + 2,
            start_line: line,
            signature: if is_definition {
                format!("fn {name}()")
            } else {
                String::new()
            },
            scope: scope.map(str::to_string),
            qualifier: None,
        }
    }

    /// `files` files of `per_file` definitions each, every file also referring to the
    /// first definition of the next file.
    fn sample(files: usize, per_file: usize) -> Vec<FileEntry> {
        (0..files)
            .map(|f| {
                let mut tags: Vec<Tag> = (0..per_file)
                    .map(|k| {
                        let line = u32::try_from(k * 3 + 1).unwrap();
                        let scope = (k % 2 == 1).then_some("Outer");
                        tag(&format!("item_{f}_{k}"), "function", line, true, scope)
                    })
                    .collect();
                tags.push(tag(
                    &format!("item_{}_0", (f + 1) % files),
                    "call",
                    99,
                    false,
                    None,
                ));
                FileEntry {
                    path: format!("src/file_{f:03}.rs"),
                    size: 100 + f as u64,
                    mtime_ns: 1_700_000_000_000_000_000 + f as u64,
                    hash: [u8::try_from(f % 256).unwrap(); 32],
                    language: if f % 3 == 0 { "python" } else { "rust" }.to_string(),
                    tags,
                }
            })
            .collect()
    }

    fn memory(bytes: Vec<u8>) -> Result<Store, Error> {
        let len = bytes.len() as u64;
        Store::new(Source::Memory(bytes), len, Path::new("symbols.idx"))
    }

    /// Everything a query can read from a store, through every reader, each read kept
    /// apart: what was written, or an error.
    fn read_everything(store: &Store, names: &[String]) -> Vec<Result<String, Error>> {
        let mut out = Vec::new();
        for i in 0..store.file_count() {
            out.push(store.entry(i).map(|e| format!("{e:?}")));
        }
        for name in names {
            out.push(store.lookup(name).map(|t| format!("{t:?}")));
        }
        for t in 0..store.tags {
            out.push(store.tag(t).map(|t| format!("{t:?}")));
            out.push(store.is_definition(t).map(|d| format!("{d}")));
            out.push(store.tag_file_and_kind(t).map(|fk| format!("{fk:?}")));
        }
        out
    }

    fn names_of(files: &[FileEntry]) -> Vec<String> {
        let mut names: Vec<String> = files
            .iter()
            .flat_map(|f| f.tags.iter().map(|t| t.name.clone()))
            .collect();
        names.sort();
        names.dedup();
        names.push("not_a_name".into());
        names
    }

    #[test]
    fn the_checksum_is_xxhash64() {
        // Reference values from the xxHash library (XXH64, seed 0).
        let cases: [(&[u8], u64); 5] = [
            (b"", 0xEF46_DB37_51D8_E999),
            (b"a", 0xD24E_C4F1_A98C_6E5B),
            (b"abc", 0x44BC_2CF5_AD77_0999),
            (
                b"code-intel index checksum, 35 bytes",
                0x776A_30A3_B52C_EEF8,
            ),
            (&[0u8; 0], 0xEF46_DB37_51D8_E999),
        ];
        for (bytes, sum) in cases {
            assert_eq!(checksum(bytes), sum, "{bytes:?}");
        }
        let long: Vec<u8> = (0..3).flat_map(|_| 0..=255u8).collect();
        assert_eq!(checksum(&long), 0x8E03_C838_C596_036F);
    }

    #[test]
    fn a_store_reads_back_what_was_written() {
        let files = sample(40, 30);
        let store = memory(index_bytes(&files, 7, 9)).unwrap();
        assert_eq!((store.built_unix, store.generation), (7, 9));
        assert_eq!(store.entries().unwrap(), files);
        let t = store.lookup("item_3_0").unwrap();
        assert_eq!(t.len(), 2, "the definition and the reference from file 2");
        assert!(store.is_definition(t[0]).unwrap() && !store.is_definition(t[1]).unwrap());
        assert_eq!(store.tag(t[1]).unwrap().file, 2);
        assert!(store.lookup("not_a_name").unwrap().is_empty());
        store.verify().unwrap();
    }

    /// Three bytes overwritten anywhere in a small index: opening fails, or every read
    /// gives exactly what was written or an error, and reading everything finds it.
    #[test]
    fn damage_anywhere_is_found_by_the_first_read_of_its_piece() {
        let files = sample(6, 4);
        let names = names_of(&files);
        let good = index_bytes(&files, 1, 2);
        let expected: Vec<String> = read_everything(&memory(good.clone()).unwrap(), &names)
            .into_iter()
            .map(Result::unwrap)
            .collect();
        for at in 0..good.len() {
            let mut bad = good.clone();
            for b in bad.iter_mut().skip(at).take(3) {
                *b ^= 0x5A;
            }
            let store = match memory(bad) {
                Err(Error::IndexCorrupt { .. }) => continue,
                Err(e) => panic!("byte {at}: {e}"),
                Ok(store) => store,
            };
            let reads = read_everything(&store, &names);
            assert_eq!(reads.len(), expected.len(), "byte {at}");
            let mut found = false;
            for (read, want) in reads.iter().zip(&expected) {
                match read {
                    Ok(got) => assert_eq!(got, want, "byte {at}: a damaged read got through"),
                    Err(Error::IndexCorrupt { reason, .. }) => {
                        assert!(reason.contains("checksum"), "byte {at}: {reason}");
                        found = true;
                    }
                    Err(e) => panic!("byte {at}: {e}"),
                }
            }
            assert!(found, "byte {at}: damage went unnoticed");
            assert!(store.verify().is_err(), "byte {at}");
        }
    }

    /// A query checks the pieces it reads, not the whole file: damage in one piece of the
    /// tags fails the reads that touch it, and only those.
    #[test]
    fn only_the_pieces_a_query_reads_are_checked() {
        let files = sample(300, 10);
        let mut bytes = index_bytes(&files, 1, 2);
        let good = memory(bytes.clone()).unwrap();
        let tags = good.sections[Section::Tags as usize];
        assert!(tags.len > 20 * CHUNK as u64, "{tags:?}");
        // Piece 10 of the tags holds tags 731..804, which belong to files 66..73.
        let at = to_usize(tags.at) + 10 * CHUNK + 100;
        bytes[at] ^= 1;
        let store = memory(bytes).unwrap();
        let first = store.lookup("item_0_0").unwrap();
        assert_eq!(store.tag(first[0]).unwrap().tag.name, "item_0_0");
        let checked = (0..store.sums.len())
            .filter(|&n| store.is_checked(n))
            .count();
        // The file table and the paths (8 pieces), and a binary search's few.
        assert!(checked <= 24, "{checked} of {} pieces", store.sums.len());
        assert_eq!(store.entry(200).unwrap(), files[200]);
        let Err(Error::IndexCorrupt { reason, .. }) = store.entry(70) else {
            panic!("file 70's tags lie in the damaged piece");
        };
        assert!(reason.contains("piece 10 of its tags"), "{reason}");
        assert!(store.verify().is_err());
        assert!(good.verify().is_ok());
    }

    #[test]
    fn an_older_format_or_a_cut_file_is_refused_with_a_reason() {
        let mut bytes = index_bytes(&sample(3, 2), 1, 2);
        let cut = memory(bytes[..bytes.len() - 1].to_vec());
        assert!(
            matches!(cut, Err(Error::IndexCorrupt { reason, .. }) if reason.contains("truncated"))
        );
        bytes[..8].copy_from_slice(b"CIIDX008");
        let old = memory(bytes);
        assert!(
            matches!(old, Err(Error::IndexCorrupt { reason, .. }) if reason.contains("older format"))
        );
    }
}
