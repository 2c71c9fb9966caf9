//! The on-disk symbol index: a compact binary file read without deserialising it.
//!
//! Records have fixed sizes and strings live in one blob, so a query reads the file,
//! binary-searches the sorted name directory and decodes only the tags it returns. The
//! index is derived data: deleting `.code-intel/symbols.idx` only costs a rebuild.
//!
//! Layout (all integers little-endian):
//! ```text
//! magic "CIIDX002" | u32 files | u32 tags | u32 names | u32 postings | u32 blob_len | u64 built_unix
//! files    × FILE (path str, u64 size, u64 mtime_ns, [u8;32] sha256, lang str, u32 first_tag, u32 tag_count)
//! tags     × TAG  (name str, kind str, scope str, signature str, u32 line, u32 column, u32 end_line, u32 file, u32 is_def)
//! names    × NAME (name str, u32 first_posting, u32 posting_count), sorted by name bytes
//! postings × u32 tag index, grouped by name, definitions first
//! blob     the bytes of every str (a str is u32 offset + u32 length into the blob)
//! ```

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use super::tags::Tag;

const MAGIC: &[u8; 8] = b"CIIDX002";
const HEADER: usize = 8 + 5 * 4 + 8;
const FILE_REC: usize = 8 + 8 + 8 + 32 + 8 + 4 + 4;
const TAG_REC: usize = 4 * 8 + 5 * 4;
const NAME_REC: usize = 8 + 4 + 4;

/// One indexed file, in memory.
#[derive(Debug, Clone, PartialEq)]
pub struct FileEntry {
    /// Root-relative path with `/` separators.
    pub path: String,
    pub size: u64,
    pub mtime_ns: u64,
    pub hash: [u8; 32],
    pub language: String,
    pub tags: Vec<Tag>,
}

/// Writes `files` as an index file, atomically: a temp file, fsync, then rename.
pub fn write(path: &Path, files: &[FileEntry], built_unix: u64) -> std::io::Result<()> {
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
    let mut file_bytes = Vec::with_capacity(files.len() * FILE_REC);
    let mut tag_bytes = Vec::new();
    let mut by_name: HashMap<&str, Vec<(bool, u32)>> = HashMap::new();
    let mut tag_index: u32 = 0;
    for (file_index, f) in files.iter().enumerate() {
        let (po, pl) = intern(&f.path);
        let (lo, ll) = intern(&f.language);
        put_str(&mut file_bytes, po, pl);
        file_bytes.extend_from_slice(&f.size.to_le_bytes());
        file_bytes.extend_from_slice(&f.mtime_ns.to_le_bytes());
        file_bytes.extend_from_slice(&f.hash);
        put_str(&mut file_bytes, lo, ll);
        file_bytes.extend_from_slice(&tag_index.to_le_bytes());
        file_bytes.extend_from_slice(&to_u32(f.tags.len()).to_le_bytes());
        for t in &f.tags {
            for s in [
                t.name.as_str(),
                t.kind.as_str(),
                t.scope.as_deref().unwrap_or(""),
                t.signature.as_str(),
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
        to_u32(blob.len()),
    ] {
        out.extend_from_slice(&n.to_le_bytes());
    }
    out.extend_from_slice(&built_unix.to_le_bytes());
    out.extend_from_slice(&file_bytes);
    out.extend_from_slice(&tag_bytes);
    out.extend_from_slice(&name_bytes);
    out.extend_from_slice(&posting_bytes);
    out.extend_from_slice(&blob);
    atomic_write(path, &out)
}

/// Writes `bytes` to `path` so that a crash leaves either the old or the new file.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent()
        && let Ok(d) = std::fs::File::open(dir)
    {
        let _ = d.sync_all();
    }
    Ok(())
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn put_str(out: &mut Vec<u8>, offset: u32, len: u32) {
    out.extend_from_slice(&offset.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
}

/// A loaded index file, decoded on demand.
pub struct Store {
    bytes: Vec<u8>,
    files: usize,
    tags: usize,
    names: usize,
    postings: usize,
    pub built_unix: u64,
}

/// A tag read from the store, with its file's index.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredTag {
    pub tag: Tag,
    pub file: usize,
}

impl Store {
    /// Reads and checks an index file. Any inconsistency is an error (the caller rebuilds).
    pub fn read(path: &Path) -> Result<Store, String> {
        let bytes =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Store::from_bytes(bytes)
    }

    pub fn from_bytes(bytes: Vec<u8>) -> Result<Store, String> {
        if bytes.len() < HEADER || &bytes[..8] != MAGIC {
            return Err("not a code-intel index (or an older format)".into());
        }
        let u = |at: usize| {
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) as usize
        };
        let (files, tags, names, postings, blob) = (u(8), u(12), u(16), u(20), u(24));
        let built_unix = u64::from_le_bytes(bytes[28..36].try_into().map_err(|_| "bad header")?);
        let expected =
            HEADER + files * FILE_REC + tags * TAG_REC + names * NAME_REC + postings * 4 + blob;
        if bytes.len() != expected {
            return Err(format!(
                "index is truncated or corrupt ({} bytes, expected {expected})",
                bytes.len()
            ));
        }
        Ok(Store {
            bytes,
            files,
            tags,
            names,
            postings,
            built_unix,
        })
    }

    fn u32_at(&self, at: usize) -> u32 {
        u32::from_le_bytes([
            self.bytes[at],
            self.bytes[at + 1],
            self.bytes[at + 2],
            self.bytes[at + 3],
        ])
    }

    fn u64_at(&self, at: usize) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.bytes[at..at + 8]);
        u64::from_le_bytes(b)
    }

    fn blob_start(&self) -> usize {
        HEADER
            + self.files * FILE_REC
            + self.tags * TAG_REC
            + self.names * NAME_REC
            + self.postings * 4
    }

    fn str_at(&self, at: usize) -> &str {
        let (o, l) = (self.u32_at(at) as usize, self.u32_at(at + 4) as usize);
        let start = self.blob_start() + o;
        self.bytes
            .get(start..start + l)
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or("")
    }

    pub fn file_count(&self) -> usize {
        self.files
    }

    pub fn tag_count(&self) -> usize {
        self.tags
    }

    fn file_rec(&self, i: usize) -> usize {
        HEADER + i * FILE_REC
    }

    pub fn file_path(&self, i: usize) -> &str {
        self.str_at(self.file_rec(i))
    }

    /// `(size, mtime_ns, sha256)` of file `i` when it was indexed.
    pub fn file_stamp(&self, i: usize) -> (u64, u64, [u8; 32]) {
        let at = self.file_rec(i);
        let mut hash = [0u8; 32];
        hash.copy_from_slice(&self.bytes[at + 24..at + 56]);
        (self.u64_at(at + 8), self.u64_at(at + 16), hash)
    }

    pub fn file_language(&self, i: usize) -> &str {
        self.str_at(self.file_rec(i) + 56)
    }

    pub fn file_tags(&self, i: usize) -> Vec<Tag> {
        let at = self.file_rec(i) + 64;
        let (first, count) = (self.u32_at(at) as usize, self.u32_at(at + 4) as usize);
        (first..first + count)
            .filter(|t| *t < self.tags)
            .map(|t| self.tag(t).tag)
            .collect()
    }

    pub fn tag(&self, t: usize) -> StoredTag {
        let at = HEADER + self.files * FILE_REC + t * TAG_REC;
        let scope = self.str_at(at + 16);
        StoredTag {
            tag: Tag {
                name: self.str_at(at).to_string(),
                kind: self.str_at(at + 8).to_string(),
                scope: (!scope.is_empty()).then(|| scope.to_string()),
                signature: self.str_at(at + 24).to_string(),
                line: self.u32_at(at + 32),
                column: self.u32_at(at + 36),
                end_line: self.u32_at(at + 40),
                is_definition: self.u32_at(at + 48) != 0,
            },
            file: self.u32_at(at + 44) as usize,
        }
    }

    /// The tag indices for `name` (definitions first), by binary search.
    pub fn lookup(&self, name: &str) -> Vec<usize> {
        let base = HEADER + self.files * FILE_REC + self.tags * TAG_REC;
        let (mut lo, mut hi) = (0usize, self.names);
        while lo < hi {
            let mid = usize::midpoint(lo, hi);
            let at = base + mid * NAME_REC;
            match self.str_at(at).as_bytes().cmp(name.as_bytes()) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    let (first, count) =
                        (self.u32_at(at + 8) as usize, self.u32_at(at + 12) as usize);
                    let postings = base + self.names * NAME_REC;
                    return (first..first + count)
                        .filter(|p| *p < self.postings)
                        .map(|p| self.u32_at(postings + p * 4) as usize)
                        .filter(|t| *t < self.tags)
                        .collect();
                }
            }
        }
        Vec::new()
    }

    /// Every file, decoded, for an incremental update.
    pub fn entries(&self) -> Vec<FileEntry> {
        (0..self.files)
            .map(|i| {
                let (size, mtime_ns, hash) = self.file_stamp(i);
                FileEntry {
                    path: self.file_path(i).to_string(),
                    size,
                    mtime_ns,
                    hash,
                    language: self.file_language(i).to_string(),
                    tags: self.file_tags(i),
                }
            })
            .collect()
    }
}
