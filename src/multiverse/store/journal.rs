//! The append-only journal, `history/journal.jsonl`: one JSON entry per line, each one
//! mutation (its changes, applied all or none), numbered 1, 2, 3, ... and timestamped.
//!
//! An entry is appended and fsynced before the state files it produces are written, so
//! the journal is the truth. A crash mid-append leaves a last line without its newline: a
//! torn tail, which readers skip with a warning and the next writer cuts off before it
//! appends (so a new entry never glues onto half of an old one). Any other damage, a
//! complete line that does not parse, a line over the size limit, a gap in the numbers,
//! is an error naming the line: a crash cannot cause it, so nothing past it is trusted.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::change::Change;
use super::error::StoreError;

/// The longest journal line: one mutation (a plan patch creating a thousand tasks is
/// about a megabyte). A longer line is damage, not an entry.
pub const MAX_LINE_BYTES: u64 = 16 * 1024 * 1024;

/// One journal line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// 1, 2, 3, ...
    pub seq: u64,
    /// RFC 3339, when it was appended.
    pub at: String,
    pub changes: Vec<Change>,
    /// The chat turn whose patch this entry applies, with its reply: the reply is part of
    /// the entry, so a crash between the entry and the chat log loses no answer (the next
    /// writer finds it here and gives it to the session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<ChatReply>,
}

/// A chat turn's reply, journaled with the patch it applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatReply {
    /// The chat session.
    pub session: String,
    /// What the user said, as received: a resent message is recognised by it.
    pub message: String,
    /// The assistant's reply.
    pub reply: String,
    /// RFC 3339, when the user's message was received.
    pub at: String,
    /// The tasks the patch created.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created_tasks: Vec<String>,
}

/// Only the number of a line (and its chat reply, if any), for the entries a load
/// already has in its state files: serde skips the changes without building them.
#[derive(Deserialize)]
struct SeqOnly {
    seq: u64,
    #[serde(default)]
    chat: Option<ChatReply>,
}

/// What reading the journal found.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// The entries after the `after` the scan was asked for, in order.
    pub entries: Vec<Entry>,
    /// The last complete entry's number (0 for an empty journal).
    pub last_seq: u64,
    /// The bytes up to the end of the last complete line.
    pub valid_len: u64,
    /// A partial last line: its line number and length.
    pub torn: Option<(u64, u64)>,
    /// The newest entry that carries a chat reply: its number and the reply.
    pub last_chat: Option<(u64, ChatReply)>,
}

/// Reads the journal at `path` (a missing file is an empty journal), parsing in full only
/// the entries numbered above `after`.
pub(crate) fn scan(path: &Path, after: u64) -> Result<Scan, StoreError> {
    scan_lines(path, after, u64::MAX)
}

/// Damage that [`scan`] stops at: the line, the error, and how many lines follow it.
#[derive(Debug)]
pub(crate) struct Damage {
    pub error: StoreError,
    pub line: u64,
    /// Complete lines after the damaged one (entries nothing can vouch for).
    pub lines_after: u64,
}

/// [`scan`] that does not stop at damage in the middle: the entries before the damaged
/// line, fully parsed, and what the damage was (`multiverse check`).
pub(crate) fn scan_to_damage(path: &Path) -> Result<(Scan, Option<Damage>), StoreError> {
    let error = match scan(path, 0) {
        Ok(scan) => return Ok((scan, None)),
        Err(error) => error,
    };
    let Some(line) = error.line() else {
        return Err(error);
    };
    let before = scan_lines(path, 0, line - 1)?;
    let lines_after = count_lines_after(path, before.valid_len)?.saturating_sub(1);
    Ok((
        before,
        Some(Damage {
            error,
            line,
            lines_after,
        }),
    ))
}

/// The newlines in the file from byte `from` (the damaged line's own included).
fn count_lines_after(path: &Path, from: u64) -> Result<u64, StoreError> {
    use std::io::Seek as _;
    let mut file = File::open(path).map_err(StoreError::io(path))?;
    file.seek(std::io::SeekFrom::Start(from))
        .map_err(StoreError::io(path))?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut count = 0;
    loop {
        let buf = reader.fill_buf().map_err(StoreError::io(path))?;
        if buf.is_empty() {
            return Ok(count);
        }
        count += buf.iter().filter(|b| **b == b'\n').count() as u64;
        let n = buf.len();
        reader.consume(n);
    }
}

/// [`scan`] of the first `max_lines` lines only.
fn scan_lines(path: &Path, after: u64, max_lines: u64) -> Result<Scan, StoreError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Scan::default()),
        Err(e) => return Err(StoreError::io(path)(e)),
    };
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut scan = Scan::default();
    let mut line = Vec::new();
    let mut number = 0u64;
    loop {
        line.clear();
        if number == max_lines {
            break;
        }
        number += 1;
        // One byte over the limit tells a line at the limit from a longer one.
        let read = (&mut reader)
            .take(MAX_LINE_BYTES + 2)
            .read_until(b'\n', &mut line)
            .map_err(StoreError::io(path))?;
        if read == 0 {
            break;
        }
        if line.last() != Some(&b'\n') {
            if line.len() as u64 > MAX_LINE_BYTES {
                return Err(too_long(path, number));
            }
            // End of file without a newline: the append that wrote it never finished.
            scan.torn = Some((number, line.len() as u64));
            break;
        }
        line.pop();
        if line.len() as u64 > MAX_LINE_BYTES {
            return Err(too_long(path, number));
        }
        let corrupt = |e: serde_json::Error| StoreError::JournalCorrupt {
            path: path.to_path_buf(),
            line: number,
            reason: e.to_string(),
        };
        let seq = if scan.last_seq >= after {
            let entry: Entry = serde_json::from_slice(&line).map_err(corrupt)?;
            let seq = entry.seq;
            check_seq(path, number, scan.last_seq, seq)?;
            if let Some(chat) = &entry.chat {
                scan.last_chat = Some((seq, chat.clone()));
            }
            scan.entries.push(entry);
            seq
        } else {
            let only = serde_json::from_slice::<SeqOnly>(&line).map_err(corrupt)?;
            check_seq(path, number, scan.last_seq, only.seq)?;
            if let Some(chat) = only.chat {
                scan.last_chat = Some((only.seq, chat));
            }
            only.seq
        };
        scan.last_seq = seq;
        scan.valid_len += read as u64;
    }
    Ok(scan)
}

fn too_long(path: &Path, line: u64) -> StoreError {
    StoreError::JournalLineTooLong {
        path: path.to_path_buf(),
        line,
        limit: MAX_LINE_BYTES,
    }
}

fn check_seq(path: &Path, line: u64, last: u64, found: u64) -> Result<(), StoreError> {
    if found == last + 1 {
        return Ok(());
    }
    Err(StoreError::JournalSequence {
        path: path.to_path_buf(),
        line,
        expected: last + 1,
        found,
    })
}

/// Copies the torn tail of the journal at `path` (from byte `from`) to a file of its own
/// beside it, `journal.jsonl.torn-<line>-<time>`, synced; returns its path.
pub(crate) fn keep_torn_tail(path: &Path, from: u64, line: u64) -> Result<PathBuf, StoreError> {
    use std::io::Seek as _;
    let mut file = File::open(path).map_err(StoreError::io(path))?;
    file.seek(std::io::SeekFrom::Start(from))
        .map_err(StoreError::io(path))?;
    let mut tail = Vec::new();
    // A torn tail is shorter than a line may be; more is damage `scan` already refused.
    (&mut file)
        .take(MAX_LINE_BYTES + 1)
        .read_to_end(&mut tail)
        .map_err(StoreError::io(path))?;
    let kept = aside(path, &format!("torn-{line}"));
    crate::codeintel::store::atomic_write(&kept, &tail).map_err(StoreError::io(&kept))?;
    Ok(kept)
}

/// A name beside `path` for a copy kept aside: `<name>.<what>-<unix time in ms>`.
pub(crate) fn aside(path: &Path, what: &str) -> PathBuf {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!("{name}.{what}-{millis}"))
}

/// The journal open for appending, by the one writer.
#[derive(Debug)]
pub(crate) struct Journal {
    path: PathBuf,
    file: File,
    /// The bytes of complete entries: where the next one starts.
    len: u64,
    poisoned: bool,
}

impl Journal {
    /// Opens the journal for appending after a [`scan`] of it, cutting off a torn tail
    /// first. Only the lock holder may call this.
    pub(crate) fn open(path: &Path, scan: &Scan) -> Result<Journal, StoreError> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(StoreError::io(path))?;
        // A journal this open created must not vanish in a crash after its first entry
        // was acknowledged: its name is made durable now.
        if let Some(dir) = path.parent() {
            crate::codeintel::store::sync_dir(dir);
        }
        if let Some((line, bytes)) = scan.torn {
            // Never acknowledged (an entry is acknowledged once its whole line is synced),
            // but kept: what was cut off can still be read.
            let kept = keep_torn_tail(path, scan.valid_len, line)?;
            tracing::warn!(
                path = %path.display(),
                line,
                bytes,
                kept = %kept.display(),
                "cut off a torn journal line (an append a crash interrupted); its bytes are kept"
            );
            file.set_len(scan.valid_len).map_err(StoreError::io(path))?;
            file.sync_all().map_err(StoreError::io(path))?;
        }
        Ok(Journal {
            path: path.to_path_buf(),
            file,
            len: scan.valid_len,
            poisoned: false,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one entry and syncs it; on failure the journal is as it was (the partial
    /// line cut off), or, when even that fails, this handle refuses further appends.
    pub(crate) fn append(&mut self, entry: &Entry) -> Result<(), StoreError> {
        if self.poisoned {
            return Err(StoreError::JournalPoisoned {
                path: self.path.clone(),
            });
        }
        let mut line = serde_json::to_vec(entry).map_err(StoreError::Encode)?;
        if line.len() as u64 > MAX_LINE_BYTES {
            return Err(StoreError::EntryTooLarge {
                bytes: line.len() as u64,
                limit: MAX_LINE_BYTES,
            });
        }
        line.push(b'\n');
        let written = self
            .file
            .write_all(&line)
            .and_then(|()| self.file.sync_data());
        if let Err(error) = written {
            let undone = self
                .file
                .set_len(self.len)
                .and_then(|()| self.file.sync_data());
            if undone.is_err() {
                self.poisoned = true;
            }
            return Err(StoreError::Io {
                path: self.path.clone(),
                error,
            });
        }
        self.len += line.len() as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multiverse::model::ExecutionState;

    fn entry(seq: u64) -> Entry {
        Entry {
            seq,
            at: "2026-11-27T00:00:00.000Z".into(),
            changes: vec![Change::ExecutionSet {
                execution: ExecutionState::Running,
            }],
            chat: None,
        }
    }

    #[test]
    fn a_torn_tail_is_skipped_then_cut_off_before_the_next_append() {
        let dir = tempdir();
        let path = dir.join("journal.jsonl");
        let mut journal = Journal::open(&path, &scan(&path, 0).unwrap()).unwrap();
        journal.append(&entry(1)).unwrap();
        journal.append(&entry(2)).unwrap();
        drop(journal);
        // A crash mid-append: half of entry 3, no newline.
        let full = std::fs::read(&path).unwrap();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"seq":3,"at":"2026"#).unwrap();
        drop(f);

        let found = scan(&path, 0).unwrap();
        assert_eq!(found.last_seq, 2);
        assert_eq!(found.entries.len(), 2);
        assert_eq!(found.torn, Some((3, 19)));
        assert_eq!(found.valid_len, full.len() as u64);

        let mut journal = Journal::open(&path, &found).unwrap();
        // What was cut off is kept beside the journal.
        let kept: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with("journal.jsonl.torn-3-"))
            .collect();
        assert_eq!(kept.len(), 1, "{kept:?}");
        assert_eq!(
            std::fs::read(dir.join(&kept[0])).unwrap(),
            br#"{"seq":3,"at":"2026"#
        );
        journal.append(&entry(3)).unwrap();
        let again = scan(&path, 0).unwrap();
        assert_eq!(again.torn, None);
        assert_eq!(again.entries, vec![entry(1), entry(2), entry(3)]);
    }

    #[test]
    fn damage_in_the_middle_names_its_line() {
        let dir = tempdir();
        let path = dir.join("journal.jsonl");
        let good = |seq| serde_json::to_string(&entry(seq)).unwrap();
        std::fs::write(&path, format!("{}\nnot json\n{}\n", good(1), good(2))).unwrap();
        let err = scan(&path, 0).unwrap_err();
        assert_eq!((err.key(), err.line()), ("journal.corrupt", Some(2)));
        assert!(err.to_string().contains("line 2"), "{err}");
        // Even where only the numbers are read.
        let err = scan(&path, 5).unwrap_err();
        assert_eq!(err.line(), Some(2));

        std::fs::write(&path, format!("{}\n{}\n", good(1), good(3))).unwrap();
        let err = scan(&path, 0).unwrap_err();
        assert_eq!((err.key(), err.line()), ("journal.sequence", Some(2)));

        // `multiverse check` reads up to the damage and counts what follows it.
        std::fs::write(
            &path,
            format!(
                "{}\n{}\nnot json\n{}\n{}\n",
                good(1),
                good(2),
                good(3),
                good(4)
            ),
        )
        .unwrap();
        let (before, damage) = scan_to_damage(&path).unwrap();
        assert_eq!(before.last_seq, 2);
        assert_eq!(before.entries.len(), 2);
        let damage = damage.unwrap();
        assert_eq!((damage.line, damage.lines_after), (3, 2));
        assert_eq!(damage.error.key(), "journal.corrupt");
        std::fs::write(&path, format!("{}\n", good(1))).unwrap();
        assert!(scan_to_damage(&path).unwrap().1.is_none());
    }

    #[test]
    fn only_entries_after_the_saved_ones_are_parsed_in_full() {
        let dir = tempdir();
        let path = dir.join("journal.jsonl");
        let mut journal = Journal::open(&path, &scan(&path, 0).unwrap()).unwrap();
        for seq in 1..=5 {
            journal.append(&entry(seq)).unwrap();
        }
        let found = scan(&path, 3).unwrap();
        assert_eq!(found.last_seq, 5);
        assert_eq!(
            found.entries.iter().map(|e| e.seq).collect::<Vec<_>>(),
            [4, 5]
        );
        assert_eq!(scan(&dir.join("missing"), 0).unwrap().last_seq, 0);
    }

    fn tempdir() -> PathBuf {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let dir =
            std::env::temp_dir().join(format!("code-intel-mv-journal-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
