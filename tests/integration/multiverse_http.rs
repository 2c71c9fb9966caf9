//! `multiverse serve`'s HTTP door over real TCP: the token on every request, the loopback
//! `Host` only, no CORS header, bounded bodies, JSON errors with stable keys, and a
//! server-sent event stream.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use code_intel::multiverse::{Api, HttpServer, Request, Response, ServerEvent};
use serde_json::{Value, json};

const TOKEN: &str = "s3cret-token";

/// Echoes the request; `/events` streams what the test sends.
struct Echo {
    subscribers: Mutex<Vec<Sender<ServerEvent>>>,
}

impl Api for Echo {
    fn handle(&self, request: &Request) -> Response {
        if request.path == "/events" {
            let (tx, rx) = channel();
            self.subscribers.lock().unwrap().push(tx);
            return Response::Events(rx);
        }
        match request.json() {
            Ok(body) => Response::ok(json!({
                "method": request.method, "path": request.path,
                "q": request.param("q"), "body": body,
            })),
            Err(refusal) => refusal,
        }
    }
}

fn start() -> (SocketAddr, Arc<Echo>, code_intel::multiverse::Stopper) {
    let server = HttpServer::bind(0, TOKEN).unwrap();
    let addr = server.addr();
    assert!(addr.ip().is_loopback());
    let api = Arc::new(Echo {
        subscribers: Mutex::new(Vec::new()),
    });
    let stopper = server.stopper();
    let served: Arc<dyn Api> = api.clone();
    std::thread::spawn(move || server.run(served));
    (addr, api, stopper)
}

/// Sends `head` (without the final blank line) and `body`; returns status, headers, body.
fn send(addr: SocketAddr, head: &str, body: &[u8]) -> (u16, String, Value) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let head = format!("{head}Content-Length: {}\r\n\r\n", body.len());
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let (headers, body) = text.split_once("\r\n\r\n").unwrap();
    let status = headers[9..12].parse().unwrap();
    (
        status,
        headers.to_string(),
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

fn get(addr: SocketAddr, target: &str, extra: &str) -> (u16, String, Value) {
    send(
        addr,
        &format!(
            "GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n{extra}",
            addr.port()
        ),
        b"",
    )
}

#[test]
fn every_request_needs_the_token_and_the_loopback_host() {
    let (addr, _, stopper) = start();
    let bearer = format!("Authorization: Bearer {TOKEN}\r\n");
    let (status, headers, body) = get(addr, "/api/x?q=a%20b", &bearer);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["q"], "a b");
    assert!(
        !headers.to_ascii_lowercase().contains("access-control"),
        "{headers}"
    );

    let (status, _, body) = get(addr, "/api/x", "");
    assert_eq!(
        (status, body["error"]["key"].clone()),
        (401, json!("unauthorized"))
    );
    let (status, _, _) = get(addr, "/api/x", "Authorization: Bearer s3cret-tokem\r\n");
    assert_eq!(status, 401);
    // A GET may carry it in the query (an EventSource, a link); a POST may not.
    let (status, _, _) = get(addr, &format!("/api/x?token={TOKEN}"), "");
    assert_eq!(status, 200);
    let post = format!(
        "POST /api/x?token={TOKEN} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n",
        addr.port()
    );
    assert_eq!(send(addr, &post, b"{}").0, 401);
    // A page on another name that resolves here (DNS rebinding) is refused.
    let rebound = format!(
        "GET /api/x HTTP/1.1\r\nHost: evil.example:{}\r\n{bearer}",
        addr.port()
    );
    let (status, _, body) = send(addr, &rebound, b"");
    assert_eq!(
        (status, body["error"]["key"].clone()),
        (403, json!("bad_host"))
    );
    stopper.stop();
}

#[test]
fn bodies_are_bounded_and_bad_json_is_named() {
    let (addr, _, stopper) = start();
    let post = format!(
        "POST /api/x HTTP/1.1\r\nHost: localhost:{}\r\nAuthorization: Bearer {TOKEN}\r\n",
        addr.port()
    );
    let (status, _, body) = send(addr, &post, br#"{"a": [1, 2]}"#);
    assert_eq!(status, 200);
    assert_eq!(body["body"]["a"][1], 2);
    let (status, _, body) = send(addr, &post, b"{not json");
    assert_eq!(
        (status, body["error"]["key"].clone()),
        (400, json!("bad_json"))
    );
    // Refused on the announced length, before any of the body is read.
    let big = format!(
        "POST /api/x HTTP/1.1\r\nHost: localhost:{}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 99999999\r\n\r\n",
        addr.port()
    );
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(big.as_bytes()).unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    // A head that never ends is cut at its budget.
    let mut stream = TcpStream::connect(addr).unwrap();
    let long = format!("GET / HTTP/1.1\r\nX: {}\r\n", "a".repeat(20_000));
    let _ = stream.write_all(long.as_bytes());
    let mut text = String::new();
    let _ = stream.read_to_string(&mut text);
    assert!(text.starts_with("HTTP/1.1 431"), "{text}");
    // Two lengths that disagree leave the body's end unclear: refused (issue 34). The
    // same length twice is one length.
    let (status, _, body) = send(addr, &format!("{post}Content-Length: 5\r\n"), b"{}");
    assert_eq!(
        (status, body["error"]["key"].clone()),
        (400, json!("bad_request")),
        "{body}"
    );
    let (status, _, _) = send(addr, &format!("{post}Content-Length: 2\r\n"), b"{}");
    assert_eq!(status, 200);
    // A request trickled in a byte at a time is cut at its deadline, not kept for ever.
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let started = std::time::Instant::now();
    let mut ended = false;
    for _ in 0..60 {
        if stream.write_all(b"X").is_err() {
            ended = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(
        ended || stream.read(&mut [0; 64]).is_ok_and(|n| n > 0),
        "still open after {:?}",
        started.elapsed()
    );
    stopper.stop();
}

#[test]
fn events_stream_as_server_sent_events() {
    let (addr, api, stopper) = start();
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "GET /events?token={TOKEN} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n",
        addr.port()
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.starts_with("HTTP/1.1 200"), "{line}");
    let mut seen = String::new();
    while !seen.contains(": connected") {
        line.clear();
        reader.read_line(&mut line).unwrap();
        seen.push_str(&line);
    }
    assert!(seen.contains("text/event-stream"), "{seen}");
    let tx = api.subscribers.lock().unwrap()[0].clone();
    tx.send(ServerEvent {
        name: "task\nevil".into(),
        data: json!({"id": "t1", "state": "RUNNING"}),
    })
    .unwrap();
    let mut event = String::new();
    // The blank line that ends the `: connected` comment comes first.
    while !event.trim_start().ends_with("\n\n") {
        line.clear();
        reader.read_line(&mut line).unwrap();
        event.push_str(&line);
    }
    assert_eq!(
        event.trim_start(),
        "event: taskevil\ndata: {\"id\":\"t1\",\"state\":\"RUNNING\"}\n\n"
    );
    stopper.stop();
}
