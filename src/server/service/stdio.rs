//! The stdio transport: one JSON-RPC message per line on stdin and stdout, in front of
//! rmcp's service loop. rmcp's own stdio transport drops a line that is not JSON (or
//! nests deeper than serde's limit) and an over-long line without a word to the client,
//! which then waits for an answer forever. Here every such line is answered: `-32700
//! Parse error` for a line that is not JSON (with `id: null`, or the id of a request
//! that is only nested too deep, found by [`IdScan`]), `-32600 Invalid Request`
//! for JSON that is not a message (with its id when it has one) and for a line over
//! [`MAX_LINE_BYTES`], whose id is picked out while the line is skipped, never held.
//! The stream stays usable after each.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::sync::Mutex;

/// The longest line (one message) read. Far beyond any call the tools accept (their
/// arguments are bounded to [`crate::server::args::MAX_ARGUMENTS_BYTES`]).
pub(crate) const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// JSON-RPC's codes for input that is not a message.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;

/// Line-delimited JSON-RPC over a reader and a writer (stdin and stdout in the server).
pub(crate) struct LineTransport<R, W> {
    read: BufReader<R>,
    /// The line read so far; kept across cancelled reads (rmcp polls `receive` inside a
    /// `select!`, so a read may be dropped midway and resumed).
    line: Vec<u8>,
    /// Skipping the rest of an over-long line: where its id was found, if it was.
    skipping: Option<IdScan>,
    limit: usize,
    write: Arc<Mutex<W>>,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> LineTransport<R, W> {
    pub(crate) fn new(read: R, write: W) -> Self {
        LineTransport {
            read: BufReader::new(read),
            line: Vec::new(),
            skipping: None,
            limit: MAX_LINE_BYTES,
            write: Arc::new(Mutex::new(write)),
        }
    }
}

/// What one read of the input gave.
enum Read {
    /// A whole line is in `line`.
    Line,
    /// An over-long line ended; its id, if one was seen.
    Oversized(Value),
    Eof,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// Reads up to the next newline, never holding more than `limit` bytes. Cancel-safe:
    /// bytes are taken from the buffer only together with their copy into `line` (or
    /// the scan of a skipped line), with no await between.
    async fn read_line(&mut self) -> std::io::Result<Read> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                return Ok(Read::Eof);
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let chunk = &available[..take];
            if let Some(scan) = self.skipping.as_mut() {
                scan.feed(chunk);
            } else if self.line.len() + take > self.limit {
                let mut scan = IdScan::default();
                scan.feed(&self.line);
                scan.feed(chunk);
                self.line = Vec::new();
                self.skipping = Some(scan);
            } else {
                self.line.extend_from_slice(chunk);
            }
            self.read.consume(take);
            if newline.is_some() {
                return Ok(match self.skipping.take() {
                    Some(scan) => Read::Oversized(scan.id()),
                    None => Read::Line,
                });
            }
        }
    }

    /// Answers a line that is not a message. Written by a task of its own, so a
    /// cancelled `receive` never leaves half a reply on the output.
    fn answer(&self, id: Value, code: i64, message: String) {
        let reply = json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": code, "message": message},
        });
        let write = Arc::clone(&self.write);
        tokio::spawn(async move {
            if let Err(e) = write_line(&write, &reply).await {
                tracing::warn!("could not answer a malformed message: {e}");
            }
        });
    }
}

async fn write_line<W: AsyncWrite + Unpin>(
    write: &Mutex<W>,
    value: &impl serde::Serialize,
) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    let mut w = write.lock().await;
    w.write_all(&bytes).await?;
    w.flush().await
}

/// How a line that rmcp could not take as a message is answered: `None` for one that
/// needs no answer (a notification or a response of the client's).
fn refusal(line: &[u8], error: &serde_json::Error) -> Option<(Value, i64, String)> {
    use serde_json::error::Category;
    if matches!(error.classify(), Category::Syntax | Category::Eof) {
        // Not JSON, or nested deeper than serde reads. The id is `null` unless the
        // top-level object still shows one (a request whose params nest too deep), so
        // its client can match the answer to its call rather than wait.
        let mut scan = IdScan::default();
        scan.feed(line);
        return Some((scan.id(), PARSE_ERROR, format!("Parse error: {error}")));
    }
    let value: Value = serde_json::from_slice(line).ok()?;
    let has = |key: &str| value.get(key).is_some();
    if !has("id") && has("method") || !has("method") && (has("result") || has("error")) {
        // A notification is never answered; nor is a response to one of our requests.
        tracing::debug!("ignored an unreadable notification or response: {error}");
        return None;
    }
    let id = match value.get("id") {
        Some(id @ (Value::Number(_) | Value::String(_))) => id.clone(),
        _ => Value::Null,
    };
    Some((id, INVALID_REQUEST, format!("Invalid Request: {error}")))
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = Arc::clone(&self.write);
        async move { write_line(&write, &item).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                Ok(Read::Line) => {}
                Ok(Read::Oversized(id)) => {
                    tracing::warn!(
                        "refused a message of more than {} bytes (one line)",
                        self.limit
                    );
                    self.answer(
                        id,
                        INVALID_REQUEST,
                        format!(
                            "Invalid Request: the message is longer than {} bytes, the most this server reads in one line",
                            self.limit
                        ),
                    );
                    continue;
                }
                Ok(Read::Eof) => return None,
                Err(e) => {
                    tracing::error!("cannot read the MCP input: {e}");
                    return None;
                }
            }
            let line = std::mem::take(&mut self.line);
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice(text) {
                Ok(message) => return Some(message),
                Err(e) => {
                    if let Some((id, code, message)) = refusal(text, &e) {
                        tracing::debug!("answered a malformed message: {message}");
                        self.answer(id, code, message);
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.lock().await.flush().await
    }
}

/// Finds the top-level `"id"` of a JSON object streamed through it, holding only the
/// id's own bytes: how an over-long line still gets an answer its client can match.
#[derive(Default)]
struct IdScan {
    /// Nesting depth outside strings: 1 is inside the top-level object.
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The bytes of the string being read at depth 1, while it may be a key (short).
    key: Option<Vec<u8>>,
    /// The last depth-1 string read, when it was short.
    last_key: Option<Vec<u8>>,
    /// Reading the value after `"id":`.
    capturing: bool,
    value: Vec<u8>,
    id: Option<Value>,
}

/// The longest id kept; a longer one is answered as `null`.
const MAX_ID_BYTES: usize = 256;

impl IdScan {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.id.is_some() {
                return;
            }
            self.byte(b);
        }
    }

    fn byte(&mut self, b: u8) {
        if self.capturing {
            let ends = !self.in_string
                && !self.value.is_empty()
                && (matches!(b, b',' | b'}') || b.is_ascii_whitespace());
            if ends {
                self.finish();
            } else if !(self.value.is_empty() && b.is_ascii_whitespace()) {
                self.value.push(b);
                if self.value.len() > MAX_ID_BYTES {
                    self.capturing = false;
                }
            }
        }
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.capturing {
                    self.finish();
                }
                self.last_key = self.key.take();
                return;
            }
            if let Some(key) = self.key.as_mut() {
                key.push(b);
                if key.len() > 8 {
                    self.key = None;
                }
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                self.key = (self.depth == 1 && !self.capturing).then(Vec::new);
            }
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b':' if self.depth == 1 => {
                self.capturing = self.last_key.take().as_deref() == Some(b"id");
                self.value.clear();
            }
            b',' if self.depth == 1 => self.last_key = None,
            _ => {}
        }
    }

    fn finish(&mut self) {
        self.capturing = false;
        self.id = serde_json::from_slice::<Value>(&self.value)
            .ok()
            .filter(|v| v.is_number() || v.is_string());
    }

    fn id(self) -> Value {
        self.id.unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str) -> Value {
        let mut s = IdScan::default();
        // Fed in small pieces, as a stream arrives.
        for chunk in text.as_bytes().chunks(3) {
            s.feed(chunk);
        }
        s.id()
    }

    #[test]
    fn the_top_level_id_is_found_wherever_it_stands() {
        assert_eq!(scan(r#"{"jsonrpc":"2.0","id":7,"method":"x"}"#), json!(7));
        assert_eq!(
            scan(r#"{"method":"x","params":{"id":1,"a":"\"id\":3"},"id":"abc"}"#),
            json!("abc")
        );
        assert_eq!(scan(r#"{ "id" : 12 }"#), json!(12));
        assert_eq!(scan(r#"{"params":{"id":5}}"#), Value::Null);
        assert_eq!(scan(r#"{"ids":5,"x":"id"}"#), Value::Null);
        assert_eq!(scan(r#"{"id":{"a":1}}"#), Value::Null);
        assert_eq!(scan(r#"{"id":[1]}"#), Value::Null);
        assert_eq!(scan("not json"), Value::Null);
    }

    #[test]
    fn malformed_lines_are_classified() {
        let error = |text: &str| {
            serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text.as_bytes()).unwrap_err()
        };
        let answer = |text: &str| refusal(text.as_bytes(), &error(text));
        assert_eq!(
            answer("{not json").map(|a| (a.0, a.1)),
            Some((Value::Null, PARSE_ERROR))
        );
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(
            answer(&deep).map(|a| (a.0, a.1)),
            Some((Value::Null, PARSE_ERROR))
        );
        let deep_request = format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{}1{}}}"#,
            r#"{"a":"#.repeat(130),
            "}".repeat(130)
        );
        assert_eq!(
            answer(&deep_request).map(|a| (a.0, a.1)),
            Some((json!(3), PARSE_ERROR))
        );
        assert_eq!(
            answer(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":5}"#)
                .map(|a| (a.0, a.1)),
            Some((json!(4), INVALID_REQUEST))
        );
        assert_eq!(
            answer(r#"{"jsonrpc":"2.0","method":"notifications/bogus","params":5}"#),
            None
        );
    }
}
