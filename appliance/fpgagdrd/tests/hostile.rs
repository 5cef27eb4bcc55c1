//! The real `fpgagdrd` binary against hostile and careless clients (issue 18): idle,
//! silent and slow connections, too many connections and streams, floods of changes,
//! files named by the config that are not what they say (a FIFO, a huge file, a model
//! declaring a 43 GB input, a replay folder too large to decode), paths outside the data
//! directory, foreign `Host` and `Origin` headers, and the small things around them.
//!
//! Each test names the defect it guards against; every one failed on the code before the
//! fix (the outputs are in the issue's closing note). Connections that must not count
//! against the test client's own per-client limits come from loopback addresses of other
//! /24 networks (127.0.N.1: a client is an IPv4 /24 by default), as a machine of another
//! site would.

mod common;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{PATIENCE, Service, TOKEN, data_dir, wait_for};
use serde_json::{Value, json};

/// The defaults of docs/api.md ("Limits") that these tests lean on.
const PER_CLIENT_CONNECTIONS: usize = 64;
const PER_CLIENT_STREAMS: usize = 16;

// --- helpers ---------------------------------------------------------------------------

/// A data directory of the test's own: the default model and its labels, the frame
/// `frames/chelsea.png`, and what the test adds. Files are hard-linked from the fetched
/// data directory where the file system allows, else copied (never symlinked: a link
/// out of the data directory is outside it).
struct DataDir {
    dir: tempfile::TempDir,
}

fn link_or_copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
    }
}

impl DataDir {
    fn new() -> DataDir {
        let dir = tempfile::tempdir().expect("temp dir");
        let src = data_dir();
        for rel in [
            "models/efficientnet-lite0.onnx",
            "models/efficientnet-lite0.labels.txt",
            "frames/chelsea.png",
        ] {
            link_or_copy(&src.join(rel), &dir.path().join(rel));
        }
        DataDir { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// `tests/data/NAME.onnx` and its labels, as `models/NAME.onnx`.
    fn add_test_model(&self, name: &str) {
        let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        for f in [format!("{name}.onnx"), format!("{name}.labels.txt")] {
            link_or_copy(&from.join(&f), &self.path(&format!("models/{f}")));
        }
    }

    /// Starts the service on this data directory with `config`.
    fn start(&self, config: &Value, args: &[&str]) -> Service {
        Service::start_env(
            Some(&config.to_string()),
            args,
            Some(TOKEN),
            &[("FPGAGDR_DATA_DIR", self.dir.path().as_os_str())],
        )
    }
}

/// Replays `frames/chelsea.png` (relative to the data directory), as the other tests'
/// `replay` does with an absolute path.
fn replay_relative() -> Value {
    json!({
        "source": {"kind": "replay", "path": "frames/chelsea.png", "fps": 50},
        "card": {"sim_link": "off"},
        "inference": {"threads": 1},
    })
}

/// A TCP connection to `to` from the loopback address `from` (127.0.0.x).
fn connect_from(from: Ipv4Addr, to: SocketAddr) -> TcpStream {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    s.bind(&SocketAddr::new(from.into(), 0).into())
        .unwrap_or_else(|e| panic!("bind {from}: {e}"));
    s.connect_timeout(&to.into(), PATIENCE)
        .unwrap_or_else(|e| panic!("connect {to} from {from}: {e}"));
    s.into()
}

/// One reply read off a raw connection.
#[derive(Debug)]
struct RawReply {
    status: u16,
    /// Header lines, names lower-cased.
    headers: Vec<(String, String)>,
    body: String,
}

impl RawReply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    #[track_caller]
    fn problem(&self, status: u16, rule: &str) -> Value {
        assert_eq!(self.status, status, "{self:?}");
        assert_eq!(
            self.header("content-type"),
            Some("application/problem+json"),
            "{self:?}"
        );
        let p: Value = serde_json::from_str(&self.body).expect("problem JSON");
        assert_eq!(p["type"], format!("urn:fpgagdr:problem:{rule}"), "{p}");
        p
    }
}

/// Reads one HTTP/1.1 reply (head, and a body of `Content-Length` bytes) within
/// `within`; `Err` says what came instead (EOF, a timeout, garbage). Bytes read past
/// that reply are dropped: use [`read_pipelined`] when more replies follow.
fn read_reply(s: &mut TcpStream, within: Duration) -> Result<RawReply, String> {
    read_pipelined(s, &mut Vec::new(), within)
}

/// Reads one reply like [`read_reply`], starting with the bytes in `pending` (left by
/// the previous call) and leaving there whatever came after this reply's body: the
/// server may write two pipelined replies in one segment.
fn read_pipelined(
    s: &mut TcpStream,
    pending: &mut Vec<u8>,
    within: Duration,
) -> Result<RawReply, String> {
    let deadline = Instant::now() + within;
    let mut buf = std::mem::take(pending);
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!(
                "no whole reply within {within:?}; got {:?}",
                String::from_utf8_lossy(&buf)
            ));
        }
        s.set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .unwrap();
        match s.read(&mut chunk) {
            Ok(0) => return Err(format!("EOF after {:?}", String::from_utf8_lossy(&buf))),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            // A signal, not the server: see `closed_within`.
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("{e} after {:?}", String::from_utf8_lossy(&buf))),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("not HTTP: {head:?}"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let declared: Option<usize> = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok());
    let len = declared.unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < len {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("body cut short: {head}"));
        }
        s.set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .unwrap();
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("reading the body: {e}")),
        }
    }
    if declared.is_some() && body.len() > len {
        *pending = body.split_off(len);
    }
    Ok(RawReply {
        status,
        headers,
        body: String::from_utf8_lossy(&body).to_string(),
    })
}

/// Sends `request` (a whole request head, with `\r\n` line ends) on a new connection from
/// 127.0.0.1 and reads the reply.
fn raw(svc: &Service, request: &str) -> RawReply {
    let mut s = TcpStream::connect(svc.addr()).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    read_reply(&mut s, PATIENCE).unwrap_or_else(|e| panic!("{request:?}: {e}"))
}

/// Whether the server closed `s` within `within` (EOF, a reset, or a reply followed by
/// EOF); `false` when it was still open at the end.
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    let mut b = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        s.set_read_timeout(Some(left)).unwrap();
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            // With a receive timeout set, a signal to this process (the tests start and
            // reap processes) ends the read with EINTR (signal(7)): not a close.
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false;
            }
            Err(_) => return true,
        }
    }
}

/// The machine's host name, as the service sees it.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .expect("host name")
        .trim()
        .to_string()
}

// --- connections -----------------------------------------------------------------------

/// Defect: about 1,100 idle TCP connections exhausted the service's file descriptors;
/// the API stopped answering and `sd_notify` could not open its socket, so `WATCHDOG=1`
/// stopped. Here the service runs with 256 descriptors and 400 idle connections come.
#[test]
fn idle_connections_exhaust_no_descriptor_the_api_answers_and_the_watchdog_keeps_coming() {
    let dir = tempfile::tempdir().unwrap();
    let sock_path = dir.path().join("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let svc = Service::start_wrapped(
        &["prlimit", "--nofile=256:256", "--"],
        Some(r#"{"autostart": false}"#),
        &[],
        Some(TOKEN),
        &[
            ("NOTIFY_SOCKET", sock_path.as_os_str()),
            // WATCHDOG=1 every 0.25 s.
            ("WATCHDOG_USEC", "500000".as_ref()),
        ],
    );
    let watchdogs_within = |within: Duration| {
        let deadline = Instant::now() + within;
        let mut n = 0;
        let mut buf = [0u8; 4096];
        while Instant::now() < deadline {
            if let Ok(len) = sock.recv(&mut buf)
                && String::from_utf8_lossy(&buf[..len])
                    .lines()
                    .any(|l| l == "WATCHDOG=1")
            {
                n += 1;
            }
        }
        n
    };
    assert!(watchdogs_within(Duration::from_secs(2)) > 0, "no watchdog");

    // 400 idle connections from 8 other machines, 50 each.
    let mut idle = Vec::new();
    for i in 0..400u32 {
        let from = Ipv4Addr::new(127, 0, 2 + (i / 50) as u8, 1);
        idle.push(connect_from(from, svc.addr()));
    }
    let pings = watchdogs_within(Duration::from_secs(3));
    assert!(
        pings >= 4,
        "{pings} WATCHDOG=1 in 3 s with 400 idle connections open (expected one every 0.25 s); log:\n{}",
        svc.log()
    );
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let r = agent.get(svc.url("/api/v1/status")).call();
    assert!(
        r.as_ref().is_ok_and(|r| r.status() == 200),
        "status with 400 idle connections open: {:?}; log:\n{}",
        r.map(|r| r.status()),
        svc.log()
    );
    drop(idle);
}

/// Defect: a connection that sends nothing was kept open forever.
#[test]
fn a_silent_connection_is_closed() {
    let svc = Service::start_with_file(Some(r#"{"autostart": false}"#));
    let mut s = connect_from(Ipv4Addr::new(127, 0, 5, 1), svc.addr());
    assert!(
        closed_within(&mut s, PATIENCE),
        "a connection that sent nothing was still open after {PATIENCE:?}"
    );
}

/// Defect: a request head sent a byte at a time kept its connection forever (slowloris).
#[test]
fn a_request_head_trickled_byte_by_byte_is_cut_off() {
    let svc = Service::start_with_file(Some(r#"{"autostart": false}"#));
    let mut s = connect_from(Ipv4Addr::new(127, 0, 6, 1), svc.addr());
    s.write_all(b"GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    let mut cut = false;
    while Instant::now() < deadline {
        if s.write_all(b"a").is_err() || closed_within(&mut s, Duration::from_millis(500)) {
            cut = true;
            break;
        }
    }
    assert!(
        cut,
        "a head trickled for {PATIENCE:?} still held its connection"
    );
}

/// An answer hyper or the accept loop gives before any handler runs (a request that
/// does not parse, a head too large or too slow), on a fresh connection from `from`:
/// the problem it must be, `Connection: close`, and the close after it.
#[track_caller]
fn protocol_problem(
    svc: &Service,
    from: Ipv4Addr,
    request: &[u8],
    status: u16,
    rule: &str,
) -> Value {
    let mut s = connect_from(from, svc.addr());
    s.write_all(request).unwrap();
    let r = read_reply(&mut s, PATIENCE)
        .unwrap_or_else(|e| panic!("{:?}: {e}", String::from_utf8_lossy(request)));
    let p = r.problem(status, rule);
    assert_eq!(p["status"], status, "{p}");
    assert!(
        p["detail"]
            .as_str()
            .unwrap_or("")
            .contains(&format!("rule {rule}")),
        "the detail names the rule: {p}"
    );
    assert_eq!(r.header("connection"), Some("close"), "{r:?}");
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"), "{r:?}");
    assert!(closed_within(&mut s, PATIENCE), "still open after {r:?}");
    p
}

/// Defect: a request line or header field that does not parse got hyper's bodiless
/// `400`, not a problem naming the rule.
#[test]
fn a_malformed_request_line_or_header_is_answered_with_a_problem() {
    let svc = Service::start_with_file(Some(r#"{"autostart": false}"#));
    let from = Ipv4Addr::new(127, 0, 20, 1);
    let p = protocol_problem(
        &svc,
        from,
        b"G(T /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        400,
        "request-syntax",
    );
    assert!(p["detail"].as_str().unwrap().contains("token"), "{p}");
    let p = protocol_problem(
        &svc,
        from,
        b"GET /api/v1/status HTTP/1.1\r\nHost 127.0.0.1\r\n\r\n",
        400,
        "request-syntax",
    );
    assert!(p["detail"].as_str().unwrap().contains("header"), "{p}");
    // On a connection after a good request, too (pipelined in one write).
    let mut s = connect_from(from, svc.addr());
    s.write_all(
        b"GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /\x01 HTTP/1.1\r\n\r\n",
    )
    .unwrap();
    let mut pending = Vec::new();
    let first = read_pipelined(&mut s, &mut pending, PATIENCE).unwrap();
    assert_eq!(first.status, 200, "{first:?}");
    let r =
        read_pipelined(&mut s, &mut pending, PATIENCE).expect("an answer to the second request");
    r.problem(400, "request-syntax");
    assert_eq!(r.header("connection"), Some("close"), "{r:?}");
}

/// Defect: a head over the header limits got hyper's bodiless `431`.
#[test]
fn an_oversized_header_block_is_answered_431_with_a_problem() {
    let svc = Service::start_with_file(Some(r#"{"autostart": false}"#));
    let mut head = String::from("GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    for i in 0..150 {
        head.push_str(&format!("X-Filler-{i}: {i}\r\n"));
    }
    head.push_str("\r\n");
    protocol_problem(
        &svc,
        Ipv4Addr::new(127, 0, 21, 1),
        head.as_bytes(),
        431,
        "header-size",
    );
}

/// Defect: an HTTP version other than 1.0 and 1.1 got hyper's bodiless `400`; it is
/// `505` (RFC 9110 §15.6.6) with a problem saying which versions are served.
#[test]
fn an_unsupported_http_version_is_answered_505_with_a_problem() {
    let svc = Service::start_with_file(Some(r#"{"autostart": false}"#));
    let p = protocol_problem(
        &svc,
        Ipv4Addr::new(127, 0, 22, 1),
        b"GET /api/v1/status HTTP/2.0\r\nHost: 127.0.0.1\r\n\r\n",
        505,
        "http-version",
    );
    assert!(p["detail"].as_str().unwrap().contains("HTTP/2.0"), "{p}");
    // A version that is not even shaped like one is a syntax error.
    protocol_problem(
        &svc,
        Ipv4Addr::new(127, 0, 22, 1),
        b"GET /api/v1/status HTTX/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        400,
        "request-syntax",
    );
}

/// Defect: a request head not finished within the header timeout was closed without a
/// word; it is answered `408` problem `header-timeout` before the close.
#[test]
fn a_head_trickled_past_the_header_timeout_is_answered_408() {
    let svc = Service::start_with_args(
        Some(r#"{"autostart": false}"#),
        &["--header-timeout-s", "1"],
    );
    let mut s = connect_from(Ipv4Addr::new(127, 0, 23, 1), svc.addr());
    s.write_all(b"GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .unwrap();
    // A byte every 0.2 s: never idle, never done.
    let started = Instant::now();
    let mut reply = None;
    while started.elapsed() < PATIENCE {
        if s.write_all(b"a").is_err() {
            break;
        }
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        if s.peek(&mut [0u8; 1]).is_ok_and(|n| n > 0) {
            reply = Some(read_reply(&mut s, PATIENCE).expect("a whole answer"));
            break;
        }
    }
    let r =
        reply.unwrap_or_else(|| panic!("no answer to a head trickled for {:?}", started.elapsed()));
    let p = r.problem(408, "header-timeout");
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("rule header-timeout"),
        "{p}"
    );
    assert_eq!(r.header("connection"), Some("close"), "{r:?}");
    assert!(closed_within(&mut s, PATIENCE), "still open after {r:?}");
}

/// Defect: a body announced by `Content-Length` and then not sent held the request (and
/// with `PUT /api/v1/config`, the config) forever.
#[test]
fn a_body_that_stops_coming_is_answered_408() {
    let svc = Service::start_with_file(Some(r#"{"autostart": false}"#));
    let mut s = connect_from(Ipv4Addr::new(127, 0, 7, 1), svc.addr());
    write!(
        s,
        "PUT /api/v1/config HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"ring\": "
    )
    .unwrap();
    let r = read_reply(&mut s, PATIENCE).expect("an answer to a stalled body");
    r.problem(408, "body-timeout");
    // Nothing changed, and the API answers.
    assert_eq!(svc.get_json("/api/v1/config")["ring"]["entries"], 4);
}

/// Defect: a huge `Content-Length` with no body waited instead of answering 413.
#[test]
fn a_huge_content_length_is_refused_at_once() {
    let svc = Service::start_with_file(Some(r#"{"autostart": false}"#));
    let mut s = TcpStream::connect(svc.addr()).unwrap();
    write!(
        s,
        "PUT /api/v1/config HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: 1000000000000\r\n\r\n"
    )
    .unwrap();
    // Well before any read timeout: the answer needs no byte of the body.
    let r = read_reply(&mut s, Duration::from_secs(5)).expect("an answer without the body");
    let p = r.problem(413, "body-size");
    assert!(p["detail"].as_str().unwrap().contains("65536"), "{p}");
}

/// Defect: no connection limit. Over the per-client limit, a connection gets 503 with
/// `Retry-After` (never a hang); other clients are served.
#[test]
fn connections_over_the_per_client_limit_get_503_with_retry_after() {
    let svc = Service::start_with_file(Some(r#"{"autostart": false}"#));
    let from = Ipv4Addr::new(127, 0, 8, 1);
    let mut held: Vec<TcpStream> = (0..PER_CLIENT_CONNECTIONS)
        .map(|_| connect_from(from, svc.addr()))
        .collect();
    // Each of them may still make requests.
    write!(
        held[0],
        "GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    )
    .unwrap();
    assert_eq!(read_reply(&mut held[0], PATIENCE).unwrap().status, 200);
    let mut over = connect_from(from, svc.addr());
    let _ = write!(
        over,
        "GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    );
    let r = read_reply(&mut over, PATIENCE).expect("an answer over the limit");
    r.problem(503, "connection-limit");
    let retry: u64 = r.header("retry-after").unwrap_or("").parse().unwrap_or(0);
    assert!(retry >= 1, "Retry-After: {:?}", r.header("retry-after"));
    assert!(
        closed_within(&mut over, PATIENCE),
        "the refused one is closed"
    );
    // Another client is served meanwhile.
    assert_eq!(svc.get("/api/v1/status").status, 200);
}

/// Defect: SSE streams were unbounded. Over the per-client stream limit: 503 with
/// `Retry-After`.
#[test]
fn streams_over_the_limit_get_503_with_retry_after() {
    let svc = Service::start_with_file(Some(r#"{"autostart": false}"#));
    let from = Ipv4Addr::new(127, 0, 9, 1);
    let open = || {
        let mut s = connect_from(from, svc.addr());
        write!(s, "GET /api/v1/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        s
    };
    let head = |s: &mut TcpStream| {
        // An SSE reply has no Content-Length: its head is what is read.
        read_reply(s, PATIENCE).expect("a reply head")
    };
    let mut streams = Vec::new();
    for _ in 0..PER_CLIENT_STREAMS {
        let mut s = open();
        let r = head(&mut s);
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(r.header("content-type"), Some("text/event-stream"));
        streams.push(s);
    }
    let mut s = open();
    let r = head(&mut s);
    r.problem(503, "stream-limit");
    assert!(
        r.header("retry-after")
            .and_then(|v| v.parse::<u64>().ok())
            .is_some_and(|v| v >= 1),
        "{r:?}"
    );
    // One stream closed: a new one is let in.
    drop(streams.pop());
    wait_for("a stream slot to come free", || {
        let mut s = open();
        match head(&mut s) {
            r if r.status == 200 => Ok(()),
            r => Err(format!("{r:?}")),
        }
    });
}

/// Defect: eight client addresses × 16 streams held all 128 live-stream places, and
/// every new dashboard then got `503 stream-limit` for as long as they read. Now a
/// client is its /24 (the machines of one site share its 16), and when every place is
/// taken a new stream takes the place of the stream slowest to read, else (all read)
/// of the client holding the most places, its oldest. (Which is slowest is the unit
/// test `when_all_are_taken_the_slowest_reader_gives_its_place`'s: on loopback the
/// service's send buffer holds minutes of a silent client's stream.)
#[test]
fn stream_places_are_per_site_and_a_newcomer_takes_a_place_when_all_are_taken() {
    let svc = Service::start_with_args(
        Some(r#"{"autostart": false}"#),
        &["--max-streams", "6", "--max-client-streams", "2"],
    );
    let open = |from: Ipv4Addr| {
        let mut s = connect_from(from, svc.addr());
        write!(s, "GET /api/v1/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        let r = read_reply(&mut s, PATIENCE).expect("a reply head");
        (s, r)
    };
    // Two addresses of one /24 are one client: the third stream of the site is refused.
    let (oldest, r) = open(Ipv4Addr::new(127, 0, 30, 1));
    assert_eq!(r.status, 200, "{r:?}");
    let (second, r) = open(Ipv4Addr::new(127, 0, 30, 2));
    assert_eq!(r.status, 200, "{r:?}");
    let (_, r) = open(Ipv4Addr::new(127, 0, 30, 3));
    r.problem(503, "stream-limit");
    assert!(r.body.contains("this client already holds its 2"), "{r:?}");
    // Every place taken: 2 (site 30) + 1 + 1 + 1 + 1.
    let mut reading = vec![second];
    for net in [31u8, 32, 34, 35] {
        let (s, r) = open(Ipv4Addr::new(127, 0, net, 1));
        assert_eq!(r.status, 200, "{r:?}");
        reading.push(s);
    }
    for s in &mut reading {
        s.set_nonblocking(true).unwrap();
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let got: Vec<_> = (0..reading.len())
        .map(|_| std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0)))
        .collect();
    let reader = {
        let (stop, got) = (stop.clone(), got.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for (s, n) in reading.iter_mut().zip(&got) {
                    if let Ok(k) = s.read(&mut buf) {
                        n.fetch_add(k as u64, std::sync::atomic::Ordering::Relaxed);
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            reading
        })
    };
    // A dashboard of another site gets a place: the one site 30 held longest.
    let (_newcomer, r) = open(Ipv4Addr::new(127, 0, 33, 1));
    assert_eq!(r.status, 200, "{r:?}");
    let mut oldest = oldest;
    oldest
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    let mut tail: Vec<u8> = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match oldest.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                tail.extend_from_slice(&buf[..n]);
                let keep = tail.len().saturating_sub(16);
                tail.drain(..keep);
                // The chunked body's last chunk: the stream ended.
                if tail.ends_with(b"\r\n0\r\n\r\n") {
                    break;
                }
            }
            Err(_) if Instant::now() < deadline => {}
            Err(e) => panic!("the stream that gave its place did not end: {e}"),
        }
    }
    // The others go on.
    let before: Vec<u64> = got
        .iter()
        .map(|n| n.load(std::sync::atomic::Ordering::Relaxed))
        .collect();
    wait_for("every other stream to get more", || {
        let stuck: Vec<usize> = got
            .iter()
            .zip(&before)
            .enumerate()
            .filter(|(_, (n, b))| n.load(std::sync::atomic::Ordering::Relaxed) <= **b)
            .map(|(i, _)| i)
            .collect();
        stuck.is_empty().then_some(()).ok_or(format!("{stuck:?}"))
    });
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    drop(reader.join().unwrap());
    assert!(
        svc.log()
            .contains("live stream of 127.0.30.0/24 (waited 0.0 s to read) gives its place"),
        "{}",
        svc.log()
    );
}

/// Defect: no rate limit on mutating requests. A burst past the limit gets 429 with
/// `Retry-After`; reading is never limited.
#[test]
fn mutating_requests_past_the_rate_limit_get_429() {
    let svc = Service::start_with_file(Some(r#"{"autostart": false}"#));
    let mut limited = Vec::new();
    for _ in 0..80 {
        let r = svc.request("PATCH", "/api/v1/config", Some(b"{}"), &[]);
        if r.status == 429 {
            limited.push(r);
        } else {
            assert_eq!(r.status, 200, "{}", r.body);
        }
    }
    assert!(!limited.is_empty(), "80 PATCHes in a burst, none limited");
    for r in &limited {
        r.problem(429, "rate-limit");
        assert!(
            r.header("retry-after").parse::<u64>().is_ok_and(|v| v >= 1),
            "{:?}",
            r.headers
        );
    }
    assert_eq!(svc.get("/api/v1/config").status, 200);
}

// --- files -----------------------------------------------------------------------------

/// Defect: a labels file that is a FIFO (or a device) hung the request forever, holding
/// the config lock (every later config read waited), and left the process deaf to
/// SIGTERM; a huge one was read whole.
#[test]
fn a_fifo_or_a_huge_file_as_labels_is_refused_and_nothing_hangs() {
    let data = DataDir::new();
    let fifo = data.path("models/fifo.labels.txt");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let big = std::fs::File::create(data.path("models/big.labels.txt")).unwrap();
    big.set_len(300 << 20).unwrap(); // sparse: 300 MiB of NUL, one "line"
    let mut svc = data.start(&json!({"autostart": false}), &[]);

    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(20)))
        .build()
        .into();
    let patch = |labels: &str| {
        agent
            .patch(svc.url("/api/v1/config"))
            .header("authorization", &format!("Bearer {TOKEN}"))
            .header("content-type", "application/json")
            .send(json!({"model": {"labels": labels}}).to_string())
            .map(|mut r| {
                (
                    r.status().as_u16(),
                    r.body_mut().read_to_string().unwrap_or_default(),
                )
            })
            .map_err(|e| e.to_string())
    };
    let (status, body) = patch("models/fifo.labels.txt").expect("an answer for a FIFO");
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("rule file-type"), "{body}");
    assert_eq!(svc.get("/api/v1/config").status, 200);
    let (status, body) = patch("models/big.labels.txt").expect("an answer for a huge file");
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("rule file-size"), "{body}");
    assert!(svc.terminate().is_some(), "SIGTERM did not end the service");
}

/// Defect: a valid ONNX model whose declared input is 60000 x 60000 aborted the whole
/// service when its trial frame was allocated.
#[test]
fn a_model_declaring_a_huge_input_is_refused_before_anything_is_allocated() {
    let data = DataDir::new();
    data.add_test_model("huge-input");
    let svc = data.start(&replay_relative(), &[]);
    let n = svc.wait_frames_above(0);
    let r = svc.request(
        "PATCH",
        "/api/v1/config",
        Some(br#"{"model": {"path": "models/huge-input.onnx"}}"#),
        &[],
    );
    let p = r.problem(422, "config-apply");
    let detail = p["detail"].as_str().unwrap();
    assert!(
        detail.contains("rule model-shape") && detail.contains("60000"),
        "{p}"
    );
    assert_eq!(svc.status()["pipeline"]["state"], "running");
    svc.wait_frames_above(n);
}

/// Defect: a replay folder of large images was decoded whole into memory although the
/// ring-size rule counted only the ring. Here the ring alone (60 entries of a 16 MiB
/// frame, 960 MiB) fits the 1 GiB rule; with the five decoded frames it does not.
#[test]
fn decoded_replay_frames_count_against_the_memory_rule() {
    let data = DataDir::new();
    let dir = data.path("frames/big");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..5u8 {
        // Binary PGM: 4096 x 4096 grey = 16 MiB decoded.
        let mut f = std::fs::File::create(dir.join(format!("{i}.pgm"))).unwrap();
        write!(f, "P5\n4096 4096\n255\n").unwrap();
        f.write_all(&vec![i * 40; 4096 * 4096]).unwrap();
    }
    let svc = data.start(&json!({"autostart": false}), &[]);
    let r = svc.request(
        "PATCH",
        "/api/v1/config",
        Some(br#"{"source": {"kind": "replay", "path": "frames/big"}, "ring": {"entries": 60}}"#),
        &[],
    );
    let p = r.problem(422, "config-apply");
    let detail = p["detail"].as_str().unwrap();
    assert!(
        detail.contains("rule ring-memory") && detail.contains("decoded"),
        "{p}"
    );
    // Fewer entries fit: the rule counts both, and nothing else refuses the folder.
    let r = svc.request(
        "PATCH",
        "/api/v1/config",
        Some(br#"{"source": {"kind": "replay", "path": "frames/big"}, "ring": {"entries": 8}}"#),
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.body);
}

// --- paths -----------------------------------------------------------------------------

/// Defect: `..` and absolute paths were opened, so any readable file could be probed:
/// the errors told whether it existed and how many lines it had.
#[test]
fn paths_outside_the_data_directory_are_refused_without_saying_what_is_there() {
    let svc = Service::start(&common::replay("chelsea.png"));
    let refused = |field: &str, value: &str| -> String {
        let (section, key) = field.trim_start_matches('/').split_once('/').unwrap();
        let body = json!({ section: { key: value } }).to_string();
        let r = svc.request("PATCH", "/api/v1/config", Some(body.as_bytes()), &[]);
        r.problem(422, "config-apply");
        assert_eq!(
            r.field_errors(),
            [(field.to_string(), "apply".to_string())],
            "{}",
            r.body
        );
        let detail = r.json()["detail"].as_str().unwrap().to_string();
        assert!(detail.contains("rule path-confined"), "{detail}");
        assert!(!detail.contains("lines"), "{detail}");
        detail.replace(value, "<path>")
    };
    let passwd = refused("/model/labels", "/etc/passwd");
    let absent = refused("/model/labels", "/etc/fpgagdr-no-such-file");
    assert_eq!(
        passwd, absent,
        "the answer tells an existing file from none"
    );
    let up = refused("/model/labels", "../../../../../../../../etc/passwd");
    assert_eq!(up, passwd);
    refused("/model/path", "/etc/passwd");
    refused("/source/path", "/etc");
    refused("/source/path", "../../../../../../../../etc");
    assert_eq!(svc.status()["pipeline"]["state"], "running");
}

/// Defect: a symbolic link inside the data directory to a file outside it was followed:
/// a 1000-line file outside was accepted as the labels (and its lines served, without a
/// token, in every result), and a link to a root-only file told its line count. Now the
/// file a link leads to must lie in an allowed directory too (`path-confined`).
#[test]
fn a_link_inside_the_data_directory_to_a_file_outside_is_refused() {
    let data = DataDir::new();
    let outside = tempfile::tempdir().unwrap();
    let lines: String = (0..1000).map(|i| format!("outside {i}\n")).collect();
    std::fs::write(outside.path().join("labels.txt"), lines).unwrap();
    for (link, to) in [
        (
            "models/outside.labels.txt",
            outside.path().join("labels.txt"),
        ),
        ("models/passwd.labels.txt", PathBuf::from("/etc/passwd")),
    ] {
        std::os::unix::fs::symlink(&to, data.path(link)).unwrap();
    }
    let svc = data.start(&json!({"autostart": false}), &[]);
    for link in ["models/outside.labels.txt", "models/passwd.labels.txt"] {
        let body = json!({"model": {"labels": link}}).to_string();
        let r = svc.request("PATCH", "/api/v1/config", Some(body.as_bytes()), &[]);
        r.problem(422, "config-apply");
        assert_eq!(
            r.field_errors(),
            [("/model/labels".to_string(), "apply".to_string())],
            "{}",
            r.body
        );
        let detail = r.json()["detail"].as_str().unwrap().to_string();
        assert!(detail.contains("rule path-confined"), "{link}: {detail}");
        assert!(!detail.contains("lines"), "{link}: {detail}");
    }
    // A link to a file inside the data directory is the operator's, and followed.
    std::os::unix::fs::symlink(
        data.path("models/efficientnet-lite0.labels.txt"),
        data.path("models/again.labels.txt"),
    )
    .unwrap();
    let r = svc.request(
        "PATCH",
        "/api/v1/config",
        Some(br#"{"model": {"labels": "models/again.labels.txt"}}"#),
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.body);
}

/// Defect: the unauthenticated GETs showed absolute paths (the data directory, the
/// model's location).
#[test]
fn unauthenticated_gets_show_paths_relative_to_the_data_directory() {
    let svc = Service::start(&common::replay("chelsea.png"));
    svc.wait_result("a result", |_| true);
    let dir = data_dir();
    let dir = dir.to_str().unwrap();
    let system = svc.get_json("/api/v1/system");
    assert_eq!(
        system["model"]["path"], "models/efficientnet-lite0.onnx",
        "{system}"
    );
    for path in [
        "/api/v1/status",
        "/api/v1/system",
        "/api/v1/config",
        "/api/v1/results/latest",
    ] {
        let r = svc.get(path);
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        assert!(!r.body.contains(dir), "{path} shows {dir}: {}", r.body);
    }
}

// --- headers ---------------------------------------------------------------------------

/// Defect: no `Host`/`Origin` check (a DNS-rebinding page could read every GET) and no
/// `X-Content-Type-Options: nosniff` on API answers.
#[test]
fn foreign_hosts_and_origins_are_refused_and_every_answer_says_nosniff() {
    let svc = Service::start_with_file(Some(r#"{"autostart": false}"#));
    let port = svc.addr().port();
    let get = |host: &str, extra: &str| {
        raw(
            &svc,
            &format!(
                "GET /api/v1/status HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n"
            ),
        )
    };
    // DESIGN §10's default policy: IP literals, localhost, the host name and its .local
    // name (a freshly flashed device is reached by one of them).
    let name = hostname();
    for host in [
        format!("127.0.0.1:{port}"),
        "127.0.0.1".to_string(),
        format!("[::1]:{port}"),
        format!("localhost:{port}"),
        format!("LOCALHOST:{port}"),
        format!("{name}:{port}"),
        format!("{name}.local:{port}"),
        format!("{name}.local.:{port}"),
        "192.168.1.20".to_string(),
    ] {
        let r = get(&host, "");
        assert_eq!(r.status, 200, "Host {host}: {r:?}");
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"), "{r:?}");
    }
    for host in [
        "evil.example".to_string(),
        format!("evil.example:{port}"),
        format!("{name}.evil.example"),
        format!("localhost.evil.example:{port}"),
    ] {
        get(&host, "").problem(421, "host");
    }
    let r = get(
        &format!("127.0.0.1:{port}"),
        "Origin: http://evil.example\r\n",
    );
    r.problem(403, "origin");
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    let r = get(
        &format!("127.0.0.1:{port}"),
        &format!("Origin: http://127.0.0.1:{port}\r\n"),
    );
    assert_eq!(r.status, 200, "{r:?}");
    // Every kind of answer carries nosniff.
    for path in ["/metrics", "/api/v1/nothing", "/", "/openapi.json"] {
        let r = raw(
            &svc,
            &format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
        );
        assert_eq!(
            r.header("x-content-type-options"),
            Some("nosniff"),
            "{path}: {r:?}"
        );
    }

    // More names are configured.
    let svc = Service::start_with_args(
        Some(r#"{"autostart": false}"#),
        &["--allow-host", "appliance.example.org"],
    );
    let r = raw(
        &svc,
        "GET /api/v1/status HTTP/1.1\r\nHost: appliance.example.org\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200, "{r:?}");
}

/// Defects: an HTTP/1.1 request with no `Host`, or with two, was served (RFC 9112 §3.2:
/// 400); an absolute-form target (`GET http://evil.example/ HTTP/1.1`, which names the
/// host in place of `Host`, RFC 9112 §3.2.2) was served whatever host it named; and the
/// port of `Origin` was not looked at, so a page of another service on the appliance's
/// own address (another port: another origin) was answered.
#[test]
fn a_missing_or_second_host_an_absolute_target_and_origin_s_port_are_checked() {
    let svc = Service::start_with_file(Some(r#"{"autostart": false}"#));
    let port = svc.addr().port();
    let head = |lines: &str| raw(&svc, &format!("{lines}Connection: close\r\n\r\n"));
    head("GET /api/v1/status HTTP/1.1\r\n").problem(400, "host-header");
    head("GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: 127.0.0.1\r\n")
        .problem(400, "host-header");
    // HTTP/1.0 has no Host to require.
    let r = head("GET /api/v1/status HTTP/1.0\r\n");
    assert_eq!(r.status, 200, "{r:?}");
    // The absolute-form target's host is the one asked for, whatever Host says.
    head("GET http://evil.example/api/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .problem(421, "host");
    let r = head(&format!(
        "GET http://127.0.0.1:{port}/api/v1/status HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
    ));
    assert_eq!(r.status, 200, "{r:?}");
    // An Origin of another port is another origin.
    let origin = |o: &str| {
        head(&format!(
            "GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: {o}\r\n"
        ))
    };
    origin(&format!("http://127.0.0.1:{}", port.wrapping_add(1))).problem(403, "origin");
    origin("http://127.0.0.1").problem(403, "origin");
    let r = origin(&format!("http://127.0.0.1:{port}"));
    assert_eq!(r.status, 200, "{r:?}");
    // Behind a proxy on the default port, Host and Origin carry none.
    let r = head("GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://127.0.0.1\r\n");
    assert_eq!(r.status, 200, "{r:?}");
    let r =
        head("GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://127.0.0.1:443\r\n");
    assert_eq!(r.status, 200, "{r:?}");
    head("GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://127.0.0.1:8080\r\n")
        .problem(403, "origin");
}

// --- config ----------------------------------------------------------------------------

/// Defect: readers of the config waited behind a change in progress (and behind queued
/// writers) for seconds.
#[test]
fn config_readers_do_not_wait_for_a_change_in_progress() {
    let data = DataDir::new();
    // A change that takes a while: the model loads and 40 frames are decoded.
    for i in 0..40 {
        link_or_copy(
            &data.path("frames/chelsea.png"),
            &data.path(&format!("frames/many/{i:02}.png")),
        );
    }
    let svc = data.start(
        &json!({"autostart": false, "inference": {"threads": 1}}),
        &[],
    );
    let before = svc.get("/api/v1/config").header("etag").to_string();
    std::thread::scope(|s| {
        let change = s.spawn(|| {
            svc.request(
                "PATCH",
                "/api/v1/config",
                Some(br#"{"source": {"path": "frames/many"}}"#),
                &[],
            )
        });
        // Meanwhile the config in force (the old one) is read without waiting.
        std::thread::sleep(Duration::from_millis(300));
        // Each read sees the old config or, once the change is made, the new one (the
        // change is made before its answer reaches this client, so a read may see it
        // while `change` still waits for that answer); never anything in between.
        let mut reads = 0;
        let mut seen = Vec::new();
        while !change.is_finished() {
            let during = svc.get("/api/v1/config");
            assert_eq!(during.status, 200);
            let etag = during.header("etag").to_string();
            if etag == before {
                reads += 1;
            }
            seen.push(etag);
            assert_eq!(svc.get("/api/v1/status").status, 200);
        }
        let r = change.join().unwrap();
        assert_eq!(r.status, 200, "{}", r.body);
        let after = r.header("etag").to_string();
        assert_ne!(after, before);
        assert!(
            seen.iter().all(|e| *e == before || *e == after),
            "a read saw neither the old nor the new config: {seen:?} (old {before}, new {after})"
        );
        assert!(
            reads > 0,
            "no read of the config finished while the change was in progress"
        );
    });
}

/// Defect: an empty `XDG_STATE_HOME` put the state (config, token) in the working
/// directory.
#[test]
fn an_empty_xdg_state_home_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let (home, cwd) = (dir.path().join("home"), dir.path().join("cwd"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_fpgagdrd"))
        .args(["--listen", "127.0.0.1:0"])
        .current_dir(&cwd)
        .env("HOME", &home)
        .env("XDG_STATE_HOME", "")
        .env_remove("FPGAGDR_TOKEN")
        .env("ORT_DYLIB_PATH", common::ort_library())
        .env("FPGAGDR_DATA_DIR", data_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let deadline = Instant::now() + PATIENCE;
    while !line.contains("dashboard at") && Instant::now() < deadline {
        line.clear();
        if std::io::BufRead::read_line(&mut out, &mut line).unwrap_or(0) == 0 {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let in_cwd: Vec<_> = std::fs::read_dir(&cwd)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(
        in_cwd.is_empty(),
        "state written to the working directory: {in_cwd:?}"
    );
    assert!(
        home.join(".local/state/fpgagdr/token").is_file(),
        "no token under $HOME/.local/state/fpgagdr"
    );
}

/// Defect: a temporary config file left by a crash mid-save stayed beside the config.
#[test]
fn a_temporary_config_file_left_by_a_crash_is_removed_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let left = dir.path().join(".fpgagdr-config-Ab12Cd.tmp");
    std::fs::write(&left, "{\"autost").unwrap();
    let svc = Service::start_in(
        dir,
        &[],
        Some(r#"{"autostart": false}"#),
        &[],
        Some(TOKEN),
        &[],
    );
    assert_eq!(svc.get_json("/api/v1/config")["autostart"], false);
    assert!(!left.exists(), "{} is still there", left.display());
}

// --- the document ----------------------------------------------------------------------

/// Defect: the OpenAPI document missed statuses the server answers and allowed values
/// it refuses.
#[test]
fn the_openapi_document_lists_every_refusal_and_the_rules_of_values() {
    let svc = Service::start_with_file(Some(r#"{"autostart": false}"#));
    let doc = svc.get_json("/openapi.json");
    let statuses = |path: &str, method: &str| -> Vec<String> {
        doc["paths"][path][method]["responses"]
            .as_object()
            .unwrap_or_else(|| panic!("{method} {path} is not in the document"))
            .keys()
            .cloned()
            .collect()
    };
    let has = |path: &str, method: &str, want: &[&str]| {
        let got = statuses(path, method);
        for w in want {
            assert!(
                got.iter().any(|g| g == w),
                "{method} {path}: {w} missing from {got:?}"
            );
        }
    };
    for (path, method) in [
        ("/api/v1/config", "put"),
        ("/api/v1/config", "patch"),
        ("/api/v1/ota/install", "post"),
    ] {
        has(path, method, &["400", "408", "413", "415", "429"]);
    }
    has(
        "/api/v1/ota/bundles",
        "post",
        &["400", "408", "413", "429", "507"],
    );
    has("/api/v1/pipeline/start", "post", &["429"]);
    has("/api/v1/stream", "get", &["503"]);
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, _) in item.as_object().unwrap() {
            has(path, method, &["403", "421", "503"]);
        }
    }
    // The config's values: a rate between 0 and 0.01 and an empty path are refused.
    let schema = svc.get_json("/api/v1/config/schema");
    let defs = &schema["$defs"];
    let fps = defs["SourceConfig"]["properties"]["fps"].to_string();
    assert!(fps.contains("0.01"), "source.fps allows (0, 0.01): {fps}");
    assert_eq!(defs["SourceConfig"]["properties"]["path"]["minLength"], 1);
    assert_eq!(defs["ModelConfig"]["properties"]["path"]["minLength"], 1);
}
