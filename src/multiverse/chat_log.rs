//! The chat's sessions on disk: `chat/<session>.jsonl`, one message per line, appended and
//! synced before the reply is given. A message is not state (nothing is folded from it),
//! so it is not a journal entry; a torn last line (a crash mid-append) is ignored on read
//! and cut off before the next append, like the journal's.

use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::chat::ChatMessage;

/// A session's file larger than this is not read whole: only its end.
const MAX_READ_BYTES: u64 = 4 * 1024 * 1024;
/// The longest session id.
const MAX_SESSION_CHARS: usize = 64;

/// Why a chat session could not be read or written.
#[derive(Debug)]
pub enum ChatLogError {
    BadSession(String),
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

impl ChatLogError {
    pub fn key(&self) -> &'static str {
        match self {
            ChatLogError::BadSession(_) => "bad_session",
            ChatLogError::Io { .. } => "chat_io",
        }
    }
}

impl std::fmt::Display for ChatLogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChatLogError::BadSession(id) => write!(
                f,
                "{id:?} is not a chat session id (1 to {MAX_SESSION_CHARS} letters, digits, '-' or '_')"
            ),
            ChatLogError::Io { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl std::error::Error for ChatLogError {}

/// The chat directory of a workspace.
#[derive(Debug, Clone)]
pub struct ChatLog {
    dir: PathBuf,
}

impl ChatLog {
    pub fn new(dir: &Path) -> ChatLog {
        ChatLog {
            dir: dir.to_path_buf(),
        }
    }

    fn path(&self, session: &str) -> Result<PathBuf, ChatLogError> {
        let ok = !session.is_empty()
            && session.chars().count() <= MAX_SESSION_CHARS
            && session
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !ok {
            return Err(ChatLogError::BadSession(session.to_string()));
        }
        Ok(self.dir.join(format!("{session}.jsonl")))
    }

    /// A new session id: the time and a random suffix.
    pub fn new_session(&self, compact_time: &str) -> String {
        let mut bytes = [0u8; 3];
        let _ = getrandom::fill(&mut bytes);
        let suffix: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let time: String = compact_time
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        format!("s{time}-{suffix}")
    }

    /// Appends `message` to the session (created if new) and syncs it.
    pub fn append(&self, session: &str, message: &ChatMessage) -> Result<(), ChatLogError> {
        let path = self.path(session)?;
        let io = |error| ChatLogError::Io {
            path: path.clone(),
            error,
        };
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)
            .map_err(io)?;
        // A torn last line from a crash is cut off, so this line starts clean.
        let len = file.metadata().map_err(io)?.len();
        if len > 0 {
            file.seek(SeekFrom::Start(len - 1)).map_err(io)?;
            let mut last = [0u8; 1];
            file.read_exact(&mut last).map_err(io)?;
            if last[0] != b'\n' {
                let text = std::fs::read(&path).map_err(io)?;
                let keep = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
                file.set_len(keep as u64).map_err(io)?;
            }
        }
        let mut line = serde_json::to_vec(message).map_err(|e| io(std::io::Error::other(e)))?;
        line.push(b'\n');
        file.write_all(&line).map_err(io)?;
        file.sync_data().map_err(io)
    }

    /// The session's messages, oldest first (a torn or damaged line skipped, said in the
    /// log); a session never written has none.
    pub fn read(&self, session: &str) -> Result<Vec<ChatMessage>, ChatLogError> {
        let path = self.path(session)?;
        let io = |error| ChatLogError::Io {
            path: path.clone(),
            error,
        };
        let mut file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(e)),
        };
        let len = file.metadata().map_err(io)?.len();
        if len > MAX_READ_BYTES {
            file.seek(SeekFrom::Start(len - MAX_READ_BYTES))
                .map_err(io)?;
        }
        let mut text = Vec::new();
        file.read_to_end(&mut text).map_err(io)?;
        let mut lines: Vec<&[u8]> = text.split(|b| *b == b'\n').collect();
        if len > MAX_READ_BYTES && !lines.is_empty() {
            lines.remove(0);
        }
        let mut messages = Vec::new();
        for line in lines.into_iter().filter(|l| !l.is_empty()) {
            match serde_json::from_slice(line) {
                Ok(message) => messages.push(message),
                Err(e) => tracing::warn!(session, error = %e, "skipped a damaged chat line"),
            }
        }
        Ok(messages)
    }

    /// The sessions, newest first (their ids start with the time they began), at most
    /// `limit`: each with its first message (a title, cut to 120 characters) and the size
    /// of its file. Only the first line of each file is read, so a long history costs
    /// nothing here. Files that are not sessions are ignored.
    pub fn sessions(&self, limit: usize) -> Result<Vec<SessionSummary>, ChatLogError> {
        let io = |error| ChatLogError::Io {
            path: self.dir.clone(),
            error,
        };
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(e)),
        };
        let mut ids: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let id = name.strip_suffix(".jsonl")?.to_string();
                self.path(&id).is_ok().then_some(id)
            })
            .collect();
        ids.sort_unstable_by(|a, b| b.cmp(a));
        ids.truncate(limit);
        let mut sessions = Vec::with_capacity(ids.len());
        for id in ids {
            let path = self.dir.join(format!("{id}.jsonl"));
            let Ok(file) = std::fs::File::open(&path) else {
                continue;
            };
            let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
            let mut first = String::new();
            let _ = std::io::BufRead::read_line(
                &mut std::io::BufReader::new(file.take(MAX_FIRST_LINE_BYTES)),
                &mut first,
            );
            let first: Option<ChatMessage> = serde_json::from_str(first.trim_end()).ok();
            sessions.push(SessionSummary {
                session: id,
                title: first
                    .as_ref()
                    .map(|m| m.content.chars().take(120).collect())
                    .unwrap_or_default(),
                started_at: first.map(|m| m.at),
                bytes,
            });
        }
        Ok(sessions)
    }
}

/// The most of a session's first line read for its title.
const MAX_FIRST_LINE_BYTES: u64 = 64 * 1024;

/// A chat session as listed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SessionSummary {
    pub session: String,
    /// Its first message, cut.
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// The size of its file.
    pub bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multiverse::chat::ChatRole;

    fn message(text: &str) -> ChatMessage {
        ChatMessage {
            role: ChatRole::User,
            content: text.into(),
            at: "2026-11-27T00:00:00.000Z".into(),
            created_tasks: vec![],
            patch_seq: None,
        }
    }

    #[test]
    fn sessions_are_listed_newest_first_with_their_first_message() {
        let dir = std::env::temp_dir().join(format!("mv-chat-sessions-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let log = ChatLog::new(&dir);
        assert_eq!(log.sessions(10).unwrap(), vec![]);
        log.append("s20261127T010000-aa", &message("first"))
            .unwrap();
        log.append("s20261127T020000-bb", &message("second"))
            .unwrap();
        log.append("s20261127T020000-bb", &message("again"))
            .unwrap();
        std::fs::write(dir.join("notes.txt"), "not a session").unwrap();
        std::fs::write(dir.join("bad name.jsonl"), "{}").unwrap();
        let sessions = log.sessions(10).unwrap();
        let ids: Vec<&str> = sessions.iter().map(|s| s.session.as_str()).collect();
        assert_eq!(ids, ["s20261127T020000-bb", "s20261127T010000-aa"]);
        assert_eq!(sessions[0].title, "second");
        assert_eq!(log.sessions(1).unwrap().len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn messages_round_trip_and_a_torn_line_is_dropped_and_cut() {
        let dir = std::env::temp_dir().join(format!("mv-chat-{}", std::process::id()));
        let log = ChatLog::new(&dir);
        let session = log.new_session("20261127-010203");
        assert!(session.starts_with("s20261127-010203-"), "{session}");
        log.append(&session, &message("one")).unwrap();
        // A crash mid-append leaves half a line.
        let path = dir.join(format!("{session}.jsonl"));
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"{\"role\":\"user\",\"cont").unwrap();
        drop(file);
        assert_eq!(log.read(&session).unwrap().len(), 1);
        log.append(&session, &message("two")).unwrap();
        let read = log.read(&session).unwrap();
        let texts: Vec<&str> = read.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["one", "two"]);
        assert!(log.read("never-written").unwrap().is_empty());
        for bad in ["../x", "a/b", "", "a b"] {
            assert!(
                matches!(log.read(bad), Err(ChatLogError::BadSession(_))),
                "{bad}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
