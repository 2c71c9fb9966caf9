//! A small reader of zip files (wheels): the central directory, and stored or deflated
//! entries read one at a time into memory. A wheel is untrusted input until its sha256 is
//! checked (and a `dir` source's file may be anything), so every offset and length is
//! checked against the file, and what an entry may inflate to is capped by the caller: a
//! zip bomb stops at the cap, never fills the memory or the disk.
//!
//! Not supported, and said so: zip64, encryption, split archives, methods other than
//! stored (0) and deflate (8). Wheels use none of them.

use std::io::{Read, Seek, SeekFrom};

/// The end-of-central-directory record's signature and fixed size.
const EOCD_SIGNATURE: u32 = 0x0605_4b50;
const EOCD_SIZE: u64 = 22;
/// The largest comment after the record, so the farthest back it can start.
const MAX_COMMENT: u64 = 65_535;
const CENTRAL_SIGNATURE: u32 = 0x0201_4b50;
const CENTRAL_SIZE: usize = 46;
const LOCAL_SIGNATURE: u32 = 0x0403_4b50;
const LOCAL_SIZE: usize = 30;
/// More entries than any wheel has (onnxruntime's has 353): a bound on the memory the
/// directory takes.
const MAX_ENTRIES: usize = 100_000;

/// Why an archive or an entry cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ZipError {
    /// The bytes are not a zip file, or a record points outside it.
    Malformed(String),
    /// A zip feature this reader does not handle.
    Unsupported(String),
    /// No entry of this name.
    Missing(String),
    /// The entry would inflate past the caller's cap.
    TooLarge { name: String, limit: u64 },
    /// The entry's data does not match its recorded size or CRC.
    Corrupt { name: String, reason: String },
    /// The file could not be read.
    Io(String),
}

impl std::fmt::Display for ZipError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ZipError::Malformed(why) => write!(f, "not a zip file: {why}"),
            ZipError::Unsupported(what) => write!(f, "unsupported zip feature: {what}"),
            ZipError::Missing(name) => write!(f, "no member {name}"),
            ZipError::TooLarge { name, limit } => {
                write!(f, "member {name} would inflate past {limit} bytes")
            }
            ZipError::Corrupt { name, reason } => write!(f, "member {name} is corrupt: {reason}"),
            ZipError::Io(e) => write!(f, "read error: {e}"),
        }
    }
}

impl std::error::Error for ZipError {}

fn io(e: std::io::Error) -> ZipError {
    ZipError::Io(e.to_string())
}

/// One entry of the central directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) name: String,
    method: u16,
    crc: u32,
    compressed: u64,
    pub(crate) size: u64,
    /// Where its local header starts.
    local: u64,
}

/// An open zip file: its directory, read once; entries read on demand.
pub(crate) struct Archive<R> {
    reader: R,
    len: u64,
    entries: Vec<Entry>,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl<R: Read + Seek> Archive<R> {
    /// Reads the central directory.
    pub(crate) fn open(mut reader: R) -> Result<Archive<R>, ZipError> {
        let len = reader.seek(SeekFrom::End(0)).map_err(io)?;
        if len < EOCD_SIZE {
            return Err(ZipError::Malformed(format!("{len} bytes")));
        }
        // The record is the last thing in the file but for its comment: search back for it.
        let tail_len = len.min(EOCD_SIZE + MAX_COMMENT);
        let mut tail = vec![0u8; tail_len as usize];
        reader.seek(SeekFrom::Start(len - tail_len)).map_err(io)?;
        reader.read_exact(&mut tail).map_err(io)?;
        let at = (0..=tail.len() - EOCD_SIZE as usize)
            .rev()
            .find(|&i| {
                u32_at(&tail, i) == EOCD_SIGNATURE
                    && i + EOCD_SIZE as usize + u16_at(&tail, i + 20) as usize == tail.len()
            })
            .ok_or_else(|| ZipError::Malformed("no end of central directory record".into()))?;
        let eocd = &tail[at..];
        if u16_at(eocd, 4) != 0 || u16_at(eocd, 6) != 0 || u16_at(eocd, 8) != u16_at(eocd, 10) {
            return Err(ZipError::Unsupported("a split archive".into()));
        }
        let count = u16_at(eocd, 10);
        let dir_size = u64::from(u32_at(eocd, 12));
        let dir_offset = u64::from(u32_at(eocd, 16));
        if count == u16::MAX || dir_size == u64::from(u32::MAX) || dir_offset == u64::from(u32::MAX)
        {
            return Err(ZipError::Unsupported("zip64".into()));
        }
        let eocd_offset = len - tail_len + at as u64;
        if dir_offset
            .checked_add(dir_size)
            .is_none_or(|end| end > eocd_offset)
        {
            return Err(ZipError::Malformed(
                "the central directory lies outside the file".into(),
            ));
        }
        let mut dir = vec![0u8; dir_size as usize];
        reader.seek(SeekFrom::Start(dir_offset)).map_err(io)?;
        reader.read_exact(&mut dir).map_err(io)?;
        let entries = parse_directory(&dir, usize::from(count), dir_offset)?;
        Ok(Archive {
            reader,
            len,
            entries,
        })
    }

    #[cfg(test)]
    pub(crate) fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The bytes of the entry called `name`, refused when it would be larger than `limit`.
    pub(crate) fn read(&mut self, name: &str, limit: u64) -> Result<Vec<u8>, ZipError> {
        let entry = self
            .entries
            .iter()
            .find(|e| e.name == name)
            .cloned()
            .ok_or_else(|| ZipError::Missing(name.to_string()))?;
        if entry.size > limit {
            return Err(ZipError::TooLarge {
                name: entry.name,
                limit,
            });
        }
        let mut local = [0u8; LOCAL_SIZE];
        if entry.local + LOCAL_SIZE as u64 > self.len {
            return Err(ZipError::Malformed(format!(
                "{name}: its header lies outside the file"
            )));
        }
        self.reader.seek(SeekFrom::Start(entry.local)).map_err(io)?;
        self.reader.read_exact(&mut local).map_err(io)?;
        if u32_at(&local, 0) != LOCAL_SIGNATURE {
            return Err(ZipError::Malformed(format!("{name}: no local header")));
        }
        let start = entry.local
            + LOCAL_SIZE as u64
            + u64::from(u16_at(&local, 26))
            + u64::from(u16_at(&local, 28));
        if start
            .checked_add(entry.compressed)
            .is_none_or(|end| end > self.len)
        {
            return Err(ZipError::Malformed(format!(
                "{name}: its data runs past the end of the file"
            )));
        }
        let mut data = vec![0u8; entry.compressed as usize];
        self.reader.seek(SeekFrom::Start(start)).map_err(io)?;
        self.reader.read_exact(&mut data).map_err(io)?;
        let corrupt = |reason: String| ZipError::Corrupt {
            name: name.to_string(),
            reason,
        };
        let bytes = match entry.method {
            0 => data,
            8 => {
                // Inflating stops at the declared size (itself within the caller's limit),
                // whatever the stream says.
                let cap = usize::try_from(entry.size).unwrap_or(usize::MAX);
                miniz_oxide::inflate::decompress_to_vec_with_limit(&data, cap).map_err(|e| {
                    if matches!(e.status, miniz_oxide::inflate::TINFLStatus::HasMoreOutput) {
                        corrupt(format!(
                            "it inflates past its recorded {} bytes",
                            entry.size
                        ))
                    } else {
                        corrupt(e.to_string())
                    }
                })?
            }
            other => {
                return Err(ZipError::Unsupported(format!(
                    "{name}: compression method {other}"
                )));
            }
        };
        if bytes.len() as u64 != entry.size {
            return Err(corrupt(format!(
                "{} bytes, its directory entry says {}",
                bytes.len(),
                entry.size
            )));
        }
        if crc32fast::hash(&bytes) != entry.crc {
            return Err(corrupt("CRC mismatch".into()));
        }
        Ok(bytes)
    }
}

fn parse_directory(dir: &[u8], count: usize, dir_offset: u64) -> Result<Vec<Entry>, ZipError> {
    if count > MAX_ENTRIES {
        return Err(ZipError::Unsupported(format!("{count} entries")));
    }
    let mut entries = Vec::with_capacity(count);
    let mut at = 0usize;
    for _ in 0..count {
        let fixed = dir
            .get(at..at + CENTRAL_SIZE)
            .ok_or_else(|| ZipError::Malformed("the central directory is truncated".into()))?;
        if u32_at(fixed, 0) != CENTRAL_SIGNATURE {
            return Err(ZipError::Malformed("a bad central directory entry".into()));
        }
        let flags = u16_at(fixed, 8);
        let method = u16_at(fixed, 10);
        let crc = u32_at(fixed, 16);
        let compressed = u32_at(fixed, 20);
        let size = u32_at(fixed, 24);
        let name_len = usize::from(u16_at(fixed, 28));
        let extra_len = usize::from(u16_at(fixed, 30));
        let comment_len = usize::from(u16_at(fixed, 32));
        let local = u32_at(fixed, 42);
        let name = dir
            .get(at + CENTRAL_SIZE..at + CENTRAL_SIZE + name_len)
            .ok_or_else(|| ZipError::Malformed("the central directory is truncated".into()))?;
        let name = String::from_utf8_lossy(name).into_owned();
        if flags & 1 != 0 {
            return Err(ZipError::Unsupported(format!("{name}: encryption")));
        }
        if compressed == u32::MAX || size == u32::MAX || local == u32::MAX {
            return Err(ZipError::Unsupported(format!("{name}: zip64")));
        }
        if u64::from(local) >= dir_offset {
            return Err(ZipError::Malformed(format!(
                "{name}: its header is not before the central directory"
            )));
        }
        entries.push(Entry {
            name,
            method,
            crc,
            compressed: u64::from(compressed),
            size: u64::from(size),
            local: u64::from(local),
        });
        at += CENTRAL_SIZE + name_len + extra_len + comment_len;
    }
    Ok(entries)
}

/// Writes zip files for tests: stored or deflated entries, optionally lying about sizes.
#[cfg(test)]
pub(crate) mod testing {
    /// An entry to write: its name, its bytes, and whether to deflate them.
    pub(crate) struct Item<'a> {
        pub(crate) name: &'a str,
        pub(crate) data: &'a [u8],
        pub(crate) deflate: bool,
        /// Recorded in place of the real size when set (a lying header).
        pub(crate) claimed_size: Option<u32>,
    }

    pub(crate) fn write(items: &[Item<'_>]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut central = Vec::new();
        for item in items {
            let body = if item.deflate {
                miniz_oxide::deflate::compress_to_vec(item.data, 6)
            } else {
                item.data.to_vec()
            };
            let method: u16 = if item.deflate { 8 } else { 0 };
            let crc = crc32fast::hash(item.data);
            let size = item.claimed_size.unwrap_or(item.data.len() as u32);
            let offset = out.len() as u32;
            let header = |sig: u32, central: bool| {
                let mut h = Vec::new();
                h.extend(sig.to_le_bytes());
                if central {
                    h.extend(20u16.to_le_bytes());
                }
                h.extend(20u16.to_le_bytes());
                h.extend(0u16.to_le_bytes());
                h.extend(method.to_le_bytes());
                h.extend([0u8; 4]);
                h.extend(crc.to_le_bytes());
                h.extend((body.len() as u32).to_le_bytes());
                h.extend(size.to_le_bytes());
                h.extend((item.name.len() as u16).to_le_bytes());
                h.extend(0u16.to_le_bytes());
                if central {
                    h.extend([0u8; 10]);
                    h.extend(offset.to_le_bytes());
                }
                h.extend(item.name.as_bytes());
                h
            };
            let local = header(super::LOCAL_SIGNATURE, false);
            central.extend(header(super::CENTRAL_SIGNATURE, true));
            out.extend(local);
            out.extend(&body);
        }
        let dir_offset = out.len() as u32;
        let dir_size = central.len() as u32;
        out.extend(central);
        out.extend(super::EOCD_SIGNATURE.to_le_bytes());
        out.extend([0u8; 4]);
        out.extend((items.len() as u16).to_le_bytes());
        out.extend((items.len() as u16).to_le_bytes());
        out.extend(dir_size.to_le_bytes());
        out.extend(dir_offset.to_le_bytes());
        out.extend(0u16.to_le_bytes());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{Item, write};
    use super::*;
    use std::io::Cursor;

    fn item<'a>(name: &'a str, data: &'a [u8], deflate: bool) -> Item<'a> {
        Item {
            name,
            data,
            deflate,
            claimed_size: None,
        }
    }

    fn open(bytes: Vec<u8>) -> Result<Archive<Cursor<Vec<u8>>>, ZipError> {
        Archive::open(Cursor::new(bytes))
    }

    #[test]
    fn stored_and_deflated_entries_read_back() {
        let text = b"fn main() {}\n".repeat(200);
        let zip = write(&[
            item("a/stored.txt", b"hello", false),
            item("b/deflated.rs", &text, true),
        ]);
        let mut archive = open(zip).unwrap();
        let names: Vec<_> = archive.entries().iter().map(|e| e.name.clone()).collect();
        assert_eq!(names, ["a/stored.txt", "b/deflated.rs"]);
        assert_eq!(archive.read("a/stored.txt", 100).unwrap(), b"hello");
        assert_eq!(archive.read("b/deflated.rs", 1 << 20).unwrap(), text);
        assert_eq!(
            archive.read("c", 10).unwrap_err(),
            ZipError::Missing("c".into())
        );
    }

    #[test]
    fn a_truncated_file_is_malformed_not_a_panic() {
        let zip = write(&[item("x", &[7u8; 1000], true)]);
        for cut in [0, 10, 21, zip.len() / 2, zip.len() - 1] {
            let e = open(zip[..cut].to_vec()).err();
            assert!(
                matches!(e, Some(ZipError::Malformed(_))),
                "cut {cut}: {e:?}"
            );
        }
        // The directory intact but the data cut short: the entry's data is refused.
        let mut zip = write(&[item("x", &[7u8; 1000], false)]);
        let mut archive = open(zip.clone()).unwrap();
        assert!(archive.read("x", 1000).is_ok());
        zip.drain(40..60);
        assert!(open(zip).is_err());
    }

    #[test]
    fn a_bomb_stops_at_the_budget() {
        // 64 MiB of zeros deflate to about 64 KiB.
        let zeros = vec![0u8; 64 << 20];
        let zip = write(&[item("bomb", &zeros, true)]);
        assert!(zip.len() < 1 << 20);
        let mut archive = open(zip).unwrap();
        assert_eq!(
            archive.read("bomb", 1 << 20).unwrap_err(),
            ZipError::TooLarge {
                name: "bomb".into(),
                limit: 1 << 20
            }
        );
        // A header that understates the size does not get past the budget either:
        // inflating stops at the recorded size.
        let zip = write(&[Item {
            name: "liar",
            data: &zeros,
            deflate: true,
            claimed_size: Some(1000),
        }]);
        let mut archive = open(zip).unwrap();
        let e = archive.read("liar", 1 << 20).unwrap_err();
        assert!(matches!(e, ZipError::Corrupt { .. }), "{e:?}");
    }

    #[test]
    fn a_flipped_byte_fails_the_crc() {
        let mut zip = write(&[item("x", b"abcdefgh", false)]);
        let at = zip.windows(8).position(|w| w == b"abcdefgh").unwrap();
        zip[at] = b'z';
        let mut archive = open(zip).unwrap();
        assert_eq!(
            archive.read("x", 100).unwrap_err(),
            ZipError::Corrupt {
                name: "x".into(),
                reason: "CRC mismatch".into()
            }
        );
    }

    #[test]
    fn garbage_is_not_a_zip() {
        assert!(matches!(open(vec![0u8; 5000]), Err(ZipError::Malformed(_))));
        assert!(matches!(open(Vec::new()), Err(ZipError::Malformed(_))));
    }
}
