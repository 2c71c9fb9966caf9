//! The loopback HTTP server under `multiverse serve`: HTTP/1.1 on std's TCP with
//! `httparse`, one thread per connection (bounded), JSON in and out, and server-sent
//! events for the event stream. What it serves is an [`Api`]; this module only keeps the
//! door: it listens on 127.0.0.1 only, every request must carry the workspace's token
//! (`Authorization: Bearer`, or `?token=` on a GET, which an `EventSource` and a link
//! need, or in the path of the IDE's files, `/ide/TOKEN/...`, so that a page's relative
//! imports carry it), the `Host` must be the loopback address it listens on (a DNS-rebinding page
//! names another host), no CORS header is ever sent (another origin's page cannot read a
//! reply), and requests are bounded in header size, body size and time to arrive.
//!
//! A connection that has not shown the token cannot keep the owner out ([`Gate`]): the
//! whole request must arrive within [`REQUEST_DEADLINE`], however slowly it trickles in;
//! such connections have [`MAX_PENDING`] places of their own, and when they are all taken
//! the oldest is dropped for the newcomer, so a client that sends its request at once is
//! always read; only requests that showed the token take one of the [`MAX_ACTIVE`]
//! places an answer (or an event stream) is served in.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The largest request head (request line and headers).
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// The largest request body.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Requests that showed the token, served at once (event streams included); more get 503.
const MAX_ACTIVE: usize = 64;
/// Connections whose request has not arrived whole yet; past this the oldest is dropped.
const MAX_PENDING: usize = 32;
/// How long a client may take to send its whole request, head and body.
const REQUEST_DEADLINE: Duration = Duration::from_secs(10);
/// How often an idle event stream gets a comment line, so a dead client is noticed.
const HEARTBEAT: Duration = Duration::from_secs(15);

/// One request, as the [`Api`] sees it (after the token and host checks).
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub method: String,
    /// The path without the query, percent-decoded.
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The client's end and this server's end of the connection.
    pub ends: Option<(SocketAddr, SocketAddr)>,
}

impl Request {
    /// The user owning the client's socket (see [`super::peer`]); `None` when it cannot
    /// be told, which must count as nobody.
    pub fn caller_uid(&self) -> Option<u32> {
        let (peer, local) = self.ends?;
        super::peer::loopback_peer_uid(peer, local)
    }

    /// A query parameter's value.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (an empty body is `null`).
    pub fn json(&self) -> Result<Value, Response> {
        if self.body.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&self.body)
            .map_err(|e| Response::error(400, "bad_json", &format!("the body is not JSON: {e}")))
    }
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerEvent {
    /// The event's type (`task`, `run`, `backlog`, `chat`, ...).
    pub name: String,
    pub data: Value,
}

/// What the [`Api`] answers.
#[derive(Debug)]
pub enum Response {
    Json {
        status: u16,
        body: Value,
    },
    /// A stream of events until the sender is dropped or the client goes away.
    Events(Receiver<ServerEvent>),
    /// A file of the IDE, sent with the page's security policy.
    File {
        content_type: &'static str,
        body: Cow<'static, [u8]>,
    },
    /// `303 See Other` to a path on this server.
    Redirect(String),
}

impl Response {
    pub fn ok(body: Value) -> Response {
        Response::Json { status: 200, body }
    }

    /// An error reply: `{"error": {"key", "message"}}` with a stable key.
    pub fn error(status: u16, key: &str, message: &str) -> Response {
        Response::Json {
            status,
            body: json!({"error": {"key": key, "message": message}}),
        }
    }
}

/// What the server serves.
pub trait Api: Send + Sync {
    fn handle(&self, request: &Request) -> Response;
}

/// A bound server; [`HttpServer::run`] serves until [`HttpServer::stop`].
#[derive(Debug)]
pub struct HttpServer {
    listener: TcpListener,
    addr: SocketAddr,
    token: Arc<str>,
    stopping: Arc<AtomicBool>,
}

/// Why the server could not start.
#[derive(Debug)]
pub struct BindError {
    pub port: u16,
    pub error: std::io::Error,
}

impl std::fmt::Display for BindError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot listen on 127.0.0.1:{}: {}",
            self.port, self.error
        )
    }
}

impl std::error::Error for BindError {}

impl HttpServer {
    /// Listens on 127.0.0.1:`port` (0: any free port).
    pub fn bind(port: u16, token: &str) -> Result<HttpServer, BindError> {
        let listener =
            TcpListener::bind(("127.0.0.1", port)).map_err(|error| BindError { port, error })?;
        let addr = listener
            .local_addr()
            .map_err(|error| BindError { port, error })?;
        Ok(HttpServer {
            listener,
            addr,
            token: token.into(),
            stopping: Arc::new(AtomicBool::new(false)),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A handle that stops [`Self::run`] from another thread.
    pub fn stopper(&self) -> Stopper {
        Stopper {
            addr: self.addr,
            stopping: self.stopping.clone(),
        }
    }

    /// Accepts connections until stopped, each served on its own thread.
    pub fn run(&self, api: Arc<dyn Api>) {
        let gate = Arc::new(Gate::default());
        for stream in self.listener.incoming() {
            if self.stopping.load(Ordering::SeqCst) {
                break;
            }
            let Ok(stream) = stream else { continue };
            let Some(id) = gate.admit(&stream) else {
                continue;
            };
            let api = api.clone();
            let token = self.token.clone();
            let addr = self.addr;
            let gate_of_thread = gate.clone();
            let stopping = self.stopping.clone();
            let spawned = std::thread::Builder::new()
                .name("multiverse-http".into())
                .spawn(move || {
                    serve(stream, &*api, &token, addr, &stopping, &gate_of_thread, id);
                });
            if let Err(e) = spawned {
                gate.leave(id);
                tracing::warn!(error = %e, "could not start a connection thread");
            }
        }
    }
}

/// Who may hold a connection: [`MAX_PENDING`] places for requests still arriving (the
/// oldest dropped for a newcomer), [`MAX_ACTIVE`] for requests that showed the token.
#[derive(Debug, Default)]
struct Gate {
    /// Connections whose request is still arriving, oldest first, with a handle to drop
    /// each.
    pending: Mutex<VecDeque<(u64, TcpStream)>>,
    next: AtomicU64,
    active: AtomicUsize,
}

impl Gate {
    /// Gives `stream` a pending place, dropping the oldest pending connection when all
    /// are taken; `None` when the stream cannot be tracked (it is then closed).
    fn admit(&self, stream: &TcpStream) -> Option<u64> {
        let handle = stream.try_clone().ok()?;
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        while pending.len() >= MAX_PENDING {
            if let Some((_, oldest)) = pending.pop_front() {
                // Its thread's next read fails and it ends; it never showed the token.
                let _ = oldest.shutdown(Shutdown::Both);
            }
        }
        pending.push_back((id, handle));
        Some(id)
    }

    /// The request of `id` arrived (or failed): its pending place is free.
    fn leave(&self, id: u64) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        pending.retain(|(i, _)| *i != id);
    }

    /// A place to serve a request that showed the token, or `None` when all are taken.
    fn serve_slot(&self) -> Option<ActiveSlot<'_>> {
        if self.active.fetch_add(1, Ordering::SeqCst) >= MAX_ACTIVE {
            self.active.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(ActiveSlot(&self.active))
    }
}

/// A taken [`MAX_ACTIVE`] place, given back on drop.
struct ActiveSlot<'a>(&'a AtomicUsize);

impl Drop for ActiveSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A stream read against one deadline: each read waits only for what is left of it, so a
/// client that sends a byte now and then cannot make a request last.
struct Deadlined {
    stream: TcpStream,
    until: Instant,
}

impl Read for Deadlined {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf)
    }
}

/// Stops a running [`HttpServer`].
#[derive(Debug, Clone)]
pub struct Stopper {
    addr: SocketAddr,
    stopping: Arc<AtomicBool>,
}

impl Stopper {
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which then sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
    }
}

/// Serves one connection: one request (the connection is closed after the reply). It
/// holds its pending place until the request has arrived, and a serving place only once
/// it showed the token.
fn serve(
    stream: TcpStream,
    api: &dyn Api,
    token: &str,
    addr: SocketAddr,
    stopping: &AtomicBool,
    gate: &Gate,
    id: u64,
) {
    let mut writer = match stream.try_clone() {
        Ok(w) => w,
        Err(_) => {
            gate.leave(id);
            return;
        }
    };
    let ends = stream.peer_addr().ok().map(|peer| (peer, addr));
    let read = read_request(stream, token, addr);
    gate.leave(id);
    let request = match read {
        Ok(request) => Request { ends, ..request },
        Err(refusal) => {
            let _ = write_reply(&mut writer, &refusal);
            return;
        }
    };
    let Some(_slot) = gate.serve_slot() else {
        let _ = write_reply(
            &mut writer,
            &Response::error(503, "busy", "too many requests at once"),
        );
        return;
    };
    tracing::debug!(method = %request.method, path = %request.path, "http request");
    match api.handle(&request) {
        Response::Events(events) => stream_events(&mut writer, &events, stopping),
        reply => {
            let _ = write_reply(&mut writer, &reply);
        }
    }
}

/// Reads and checks one request, all of it within [`REQUEST_DEADLINE`]; a refusal is
/// the reply to send.
fn read_request(stream: TcpStream, token: &str, addr: SocketAddr) -> Result<Request, Response> {
    let mut reader = BufReader::new(Deadlined {
        stream,
        until: Instant::now() + REQUEST_DEADLINE,
    });
    let mut head = Vec::new();
    // The head ends at the first empty line; it is read line by line up to its budget.
    loop {
        let mut line = Vec::new();
        let n = (&mut reader)
            .take((MAX_HEAD_BYTES + 1 - head.len().min(MAX_HEAD_BYTES)) as u64)
            .read_until(b'\n', &mut line)
            .map_err(|_| Response::error(408, "timeout", "the request did not arrive in time"))?;
        if n == 0 {
            return Err(Response::error(
                400,
                "bad_request",
                "the request ended early",
            ));
        }
        head.extend_from_slice(&line);
        if head.len() > MAX_HEAD_BYTES {
            return Err(Response::error(
                431,
                "head_too_large",
                "the request head is too large",
            ));
        }
        if line == b"\r\n" || line == b"\n" {
            break;
        }
    }
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut parsed = httparse::Request::new(&mut headers);
    match parsed.parse(&head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => {
            return Err(Response::error(
                400,
                "bad_request",
                "the request is not HTTP/1.1",
            ));
        }
    }
    let method = parsed.method.unwrap_or_default().to_string();
    let target = parsed.path.unwrap_or_default().to_string();
    let header = |name: &str| {
        parsed
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
    };
    let port = addr.port();
    let host_ok = header("host").is_some_and(|host| {
        [
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
        ]
        .contains(&host.to_ascii_lowercase())
    });
    if !host_ok {
        return Err(Response::error(
            403,
            "bad_host",
            "the Host header must be this server's loopback address",
        ));
    }
    let (path, query) = match target.split_once('?') {
        Some((path, query)) => (path.to_string(), parse_query(query)),
        None => (target.clone(), Vec::new()),
    };
    let path = percent_decode(&path);
    // The IDE's files carry the token as their first segment: `/ide/TOKEN/app.js`.
    let (path, in_path, bare) = match path.strip_prefix("/ide/") {
        Some(rest) if method == "GET" => match rest.split_once('/') {
            Some((given, file)) => (format!("/ide/{file}"), Some(given.to_string()), false),
            None => ("/ide/".to_string(), Some(rest.to_string()), true),
        },
        _ => (path, None, false),
    };
    let bearer = header("authorization")
        .and_then(|v| v.strip_prefix("Bearer ").map(|t| t.trim().to_string()));
    let from_query = (method == "GET")
        .then(|| {
            query
                .iter()
                .find(|(k, _)| k == "token")
                .map(|(_, v)| v.clone())
        })
        .flatten();
    let given = in_path.clone().or(bearer).or(from_query);
    if !given.is_some_and(|g| same(g.as_bytes(), token.as_bytes())) {
        return Err(Response::error(
            401,
            "unauthorized",
            "this workspace's token is required (Authorization: Bearer TOKEN)",
        ));
    }
    // The URL `serve` prints (`/?token=`) and a path without its last `/` lead to the IDE,
    // whose relative imports need the token in the path and the directory's `/`.
    if method == "GET" && (path == "/" || bare) {
        return Err(Response::Redirect(format!("/ide/{token}/")));
    }
    // Two lengths that disagree leave the body's end to whoever reads it: refused.
    let mut lengths = parsed
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("content-length"))
        .map(|h| String::from_utf8_lossy(h.value).trim().to_string());
    let length: usize = match lengths.next() {
        Some(v) => v
            .parse()
            .map_err(|_| Response::error(400, "bad_request", "Content-Length is not a number"))?,
        None => 0,
    };
    if lengths.any(|other| other.parse::<usize>().ok() != Some(length)) {
        return Err(Response::error(
            400,
            "bad_request",
            "the request has Content-Length headers that disagree",
        ));
    }
    if header("transfer-encoding").is_some() {
        return Err(Response::error(
            411,
            "length_required",
            "send the body with a Content-Length",
        ));
    }
    if length > MAX_BODY_BYTES {
        return Err(Response::error(
            413,
            "body_too_large",
            &format!("the body is {length} bytes, over the {MAX_BODY_BYTES}-byte limit"),
        ));
    }
    let mut body = vec![0; length];
    reader
        .read_exact(&mut body)
        .map_err(|_| Response::error(400, "bad_request", "the body ended early"))?;
    Ok(Request {
        method,
        path,
        query,
        body,
        ends: None,
    })
}

/// Compares without stopping at the first difference, so timing does not reveal a prefix.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) => (percent_decode(k), percent_decode(v)),
            None => (percent_decode(pair), String::new()),
        })
        .collect()
}

/// `%XX` and `+` decoded; invalid escapes kept as they are.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                    }
                    None => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        303 => "See Other",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

/// What a page of the IDE may do: its own scripts, styles and connections only, no inline
/// script or style, no framing, no form posts, and Trusted Types required, so no string
/// ever becomes HTML (a Task Note is built from text nodes).
const PAGE_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'none'; \
form-action 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'";

/// Headers on every reply: nothing cached (paths carry the token), no type sniffing, no
/// referrer (it would carry the token), not embeddable elsewhere, no CORS header at all.
const COMMON_HEADERS: &str = "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\
Referrer-Policy: no-referrer\r\nCross-Origin-Resource-Policy: same-origin\r\n\
Cross-Origin-Opener-Policy: same-origin\r\nConnection: close\r\n";

/// Writes a JSON, file or redirect reply.
fn write_reply(stream: &mut TcpStream, response: &Response) -> std::io::Result<()> {
    let (status, content_type, body, extra): (u16, &str, Cow<'_, [u8]>, String) = match response {
        Response::Json { status, body } => (
            *status,
            "application/json",
            Cow::Owned(serde_json::to_vec(body).unwrap_or_else(|_| b"null".to_vec())),
            String::new(),
        ),
        Response::File { content_type, body } => (
            200,
            content_type,
            Cow::Borrowed(&**body),
            format!("Content-Security-Policy: {PAGE_POLICY}\r\n"),
        ),
        Response::Redirect(location) => (
            303,
            "text/plain; charset=utf-8",
            Cow::Borrowed(&b""[..]),
            // Ours, made of the token (hex) and a fixed path: no header injection.
            format!("Location: {location}\r\n"),
        ),
        Response::Events(_) => return Ok(()),
    };
    write!(
        stream,
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{COMMON_HEADERS}{extra}\r\n",
        reason(status),
        body.len()
    )?;
    stream.write_all(&body)?;
    stream.flush()
}

/// Writes events as `text/event-stream` until the channel closes, the client goes away
/// or the server stops.
fn stream_events(stream: &mut TcpStream, events: &Receiver<ServerEvent>, stopping: &AtomicBool) {
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n{COMMON_HEADERS}\r\n: connected\n\n"
    );
    if stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.flush())
        .is_err()
    {
        return;
    }
    loop {
        if stopping.load(Ordering::SeqCst) {
            return;
        }
        let chunk = match events.recv_timeout(HEARTBEAT) {
            Ok(event) => {
                let data = serde_json::to_string(&event.data).unwrap_or_else(|_| "null".into());
                // The name is ours; a newline in it would start another field.
                let name: String = event.name.chars().filter(|c| !c.is_control()).collect();
                format!("event: {name}\ndata: {data}\n\n")
            }
            Err(RecvTimeoutError::Timeout) => ": heartbeat\n\n".to_string(),
            Err(RecvTimeoutError::Disconnected) => return,
        };
        if stream
            .write_all(chunk.as_bytes())
            .and_then(|()| stream.flush())
            .is_err()
        {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_and_paths_are_percent_decoded() {
        assert_eq!(
            parse_query("a=1&b=x%20y&c=%E6%97%A5+z&d&e=%zz"),
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "x y".into()),
                ("c".into(), "日 z".into()),
                ("d".into(), String::new()),
                ("e".into(), "%zz".into()),
            ]
        );
        assert_eq!(percent_decode("/api/tasks/t%2D1"), "/api/tasks/t-1");
        assert_eq!(percent_decode("%"), "%");
        assert_eq!(percent_decode("%4"), "%4");
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"ab"));
    }
}
