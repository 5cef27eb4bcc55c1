//! The service holding many connections (issue 18): 10,000 idle TCP connections and
//! 1,000 live streams (SSE) open against the real binary while the pipeline runs. A
//! benchmark, not a test: it prints figures and checks nothing but that the connections
//! open and the requests succeed.
//!
//! ```sh
//! ORT_DYLIB_PATH=$PWD/.deps/onnxruntime/libonnxruntime.so FPGAGDR_DATA_DIR=$PWD/.deps/share \
//!   cargo bench -p fpgagdrd --bench conn_load -- [--idle 10000] [--sse 1000] [--secs 10] [--pairs 2]
//! ```
//!
//! It starts the real `fpgagdrd` (this build's binary, or `$FPGAGDRD_BIN`) replaying the
//! default frames as fast as capture asks (`source.fps` 0, simulated Orin link), with
//! its limits raised so that it holds them all (`--max-connections 12000 --max-streams
//! 1100 --idle-timeout-s 600`; the per-client limits stay at their defaults of 64
//! connections and 16 streams) and a watchdog (`NOTIFY_SOCKET` on a datagram socket of
//! this bench, `WATCHDOG_USEC` 2 s: one `WATCHDOG=1` a second). The idle connections come
//! from 127.1.x.y (64 per address), the streams from 127.2.0.x (16 per address), so the
//! per-client limits do not throttle the measuring client on 127.0.0.1. This process and
//! the service each raise `RLIMIT_NOFILE` to the hard limit.
//!
//! After a warm-up of `--secs`, it alternates `--pairs` times an idle phase (nothing open
//! but the measuring client) and a load phase (all connections and streams open, the
//! streams read continuously), and ends with an idle phase: paired, interleaved, so a
//! drift of the pipeline's rate shows instead of passing for the load's effect. Each
//! phase first opens (or closes) the connections, waits 2 s, then measures for `--secs`:
//! the pipeline's frames/s (its own counter), `GET /api/v1/status` latency from
//! 127.0.0.1 every 20 ms (HDR histogram), `WATCHDOG=1` datagrams received, the
//! service's CPU time over the phase (user + system, in cores: 1.0 is one core busy)
//! and its RSS and open descriptors (from `/proc`).

mod common;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::net::UnixDatagram;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::Service;
use hdrhistogram::Histogram;

/// The bench's flags (`cargo bench -p fpgagdrd --bench conn_load -- --flag V`).
#[derive(clap::Parser)]
struct Args {
    /// Idle connections held open.
    #[arg(long, default_value_t = 10_000)]
    idle: usize,
    /// Live SSE streams held open.
    #[arg(long, default_value_t = 1_000)]
    sse: usize,
    /// Seconds counted per run.
    #[arg(long, default_value_t = 10.0)]
    secs: f64,
    /// Interleaved pairs of runs, load off and on.
    #[arg(long, default_value_t = 2)]
    pairs: usize,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn args() -> Args {
    <Args as clap::Parser>::parse()
}

fn raise_nofile() -> u64 {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("getrlimit");
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard).expect("setrlimit");
    }
    hard
}

/// The service with limits sized for the load and `NOTIFY_SOCKET` at `notify`, and its
/// socket address.
fn start(dir: tempfile::TempDir, notify: &std::path::Path, a: &Args) -> (Service, SocketAddr) {
    let svc = common::start(dir, r#"{"source": {"fps": 0}}"#, |cmd| {
        cmd.args(["--max-connections", &(a.idle + a.sse + 1000).to_string()])
            .args(["--max-streams", &(a.sse + 100).to_string()])
            .args(["--idle-timeout-s", "600"])
            .env("NOTIFY_SOCKET", notify)
            .env("WATCHDOG_USEC", "2000000");
    });
    let addr = svc
        .base
        .trim_start_matches("http://")
        .parse()
        .expect("an address");
    (svc, addr)
}

fn connect_from(from: Ipv4Addr, to: SocketAddr) -> TcpStream {
    let s =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    s.bind(&SocketAddr::new(from.into(), 0).into())
        .unwrap_or_else(|e| panic!("bind {from}: {e}"));
    // Generous: this loop connects faster than a loaded service accepts, and SYNs
    // dropped on a full accept queue are retried after 1, 3, 7, 15 s.
    s.connect_timeout(&to.into(), Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("connect from {from}: {e}"));
    s.into()
}

/// Each 64 idle connections come from a /24 of their own (a client is an IPv4 /24 by
/// default): the `k`-th 64 from 127.(1 + k / 250).(k % 250).1.
fn idle_addr(i: usize) -> Ipv4Addr {
    let k = i / 64;
    Ipv4Addr::new(127, 1 + (k / 250) as u8, (k % 250) as u8, 1)
}

/// The load: idle connections, and streams read by one thread each group.
struct Held {
    idle: Vec<TcpStream>,
    stop: Arc<AtomicBool>,
    readers: Vec<std::thread::JoinHandle<()>>,
    bytes: Arc<AtomicU64>,
}

fn open_load(addr: SocketAddr, a: &Args) -> Held {
    let idle: Vec<TcpStream> = (0..a.idle)
        .map(|i| connect_from(idle_addr(i), addr))
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let bytes = Arc::new(AtomicU64::new(0));
    // Streams: 16 per client (a /24 each); each reader thread polls its group
    // non-blocking.
    let mut streams = Vec::new();
    for i in 0..a.sse {
        let from = Ipv4Addr::new(127, 200, (i / 16) as u8, 1);
        let mut s = connect_from(from, addr);
        write!(
            s,
            "GET /api/v1/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"
        )
        .expect("stream request");
        s.set_nonblocking(true).expect("non-blocking");
        streams.push(s);
    }
    let groups = 4;
    let per = streams.len().div_ceil(groups).max(1);
    let mut readers = Vec::new();
    let mut rest = streams;
    while !rest.is_empty() {
        let group: Vec<TcpStream> = rest.drain(..per.min(rest.len())).collect();
        let (stop, bytes) = (stop.clone(), bytes.clone());
        readers.push(std::thread::spawn(move || {
            let mut group = group;
            let mut buf = vec![0u8; 64 * 1024];
            let mut heads_ok = vec![false; group.len()];
            while !stop.load(Ordering::Relaxed) {
                let mut any = false;
                for (k, s) in group.iter_mut().enumerate() {
                    match s.read(&mut buf) {
                        Ok(0) => panic!("a stream was closed by the service"),
                        Ok(n) => {
                            if !heads_ok[k] {
                                let head = String::from_utf8_lossy(&buf[..n.min(16)]);
                                assert!(head.starts_with("HTTP/1.1 200"), "stream refused: {head}");
                                heads_ok[k] = true;
                            }
                            bytes.fetch_add(n as u64, Ordering::Relaxed);
                            any = true;
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(e) => panic!("reading a stream: {e}"),
                    }
                }
                if !any {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }));
    }
    Held {
        idle,
        stop,
        readers,
        bytes,
    }
}

fn close_load(h: Held) -> u64 {
    h.stop.store(true, Ordering::Relaxed);
    for r in h.readers {
        r.join().expect("a stream reader");
    }
    drop(h.idle);
    h.bytes.load(Ordering::Relaxed)
}

fn proc_status(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// One GET on a kept-alive connection from 127.0.0.1; the body's `frames_inferred`.
struct Client {
    conn: TcpStream,
}

impl Client {
    fn new(addr: SocketAddr) -> Client {
        let conn = TcpStream::connect(addr).expect("connect");
        conn.set_nodelay(true).expect("nodelay");
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        Client { conn }
    }

    fn status(&mut self) -> u64 {
        write!(
            self.conn,
            "GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        )
        .expect("write");
        let mut buf = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        loop {
            let n = self.conn.read(&mut chunk).expect("read status");
            assert!(n > 0, "status connection closed");
            buf.extend_from_slice(&chunk[..n]);
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..i]).to_ascii_lowercase();
                assert!(head.starts_with("http/1.1 200"), "{head}");
                let len: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .expect("content-length");
                if buf.len() >= i + 4 + len {
                    let v: serde_json::Value =
                        serde_json::from_slice(&buf[i + 4..i + 4 + len]).expect("status JSON");
                    return v["counters"]["frames_inferred"].as_u64().expect("count");
                }
            }
        }
    }
}

struct Phase {
    name: &'static str,
    fps: f64,
    lat: Histogram<u64>,
    watchdogs: usize,
    /// Service CPU time over the phase per second of it (cores busy).
    cores: f64,
    rss_max_kib: u64,
    fds_max: usize,
}

fn measure(
    name: &'static str,
    svc: &Service,
    addr: SocketAddr,
    notify: &UnixDatagram,
    secs: f64,
) -> Phase {
    let pid = svc.child.id();
    let mut client = Client::new(addr);
    // Drain watchdog pings from before the phase.
    notify.set_nonblocking(true).expect("non-blocking");
    let mut buf = [0u8; 4096];
    while notify.recv(&mut buf).is_ok() {}
    let mut lat = Histogram::new_with_bounds(1, 60_000_000, 3).expect("bounds");
    let (mut rss_max_kib, mut fds_max, mut watchdogs) = (0, 0, 0);
    let n0 = client.status();
    let cpu0 = common::cpu_s(pid);
    let t0 = Instant::now();
    let end = t0 + Duration::from_secs_f64(secs);
    let mut next = t0;
    let mut n1 = n0;
    while Instant::now() < end {
        // Open loop: latency counts from the scheduled time.
        let now = Instant::now();
        if now < next {
            std::thread::sleep(next - now);
        }
        n1 = client.status();
        lat.saturating_record(next.elapsed().as_micros() as u64);
        next += Duration::from_millis(20);
        while let Ok(len) = notify.recv(&mut buf) {
            if String::from_utf8_lossy(&buf[..len])
                .lines()
                .any(|l| l == "WATCHDOG=1")
            {
                watchdogs += 1;
            }
        }
        rss_max_kib = rss_max_kib.max(proc_status(pid, "VmRSS:"));
        fds_max = fds_max.max(open_fds(pid));
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let fps = (n1 - n0) as f64 / elapsed;
    Phase {
        name,
        fps,
        lat,
        watchdogs,
        cores: (common::cpu_s(pid) - cpu0) / elapsed,
        rss_max_kib,
        fds_max,
    }
}

fn ms(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1000.0
}

fn main() {
    let a = args();
    let hard = raise_nofile();
    assert!(
        hard as usize > a.idle + a.sse + 256,
        "RLIMIT_NOFILE's hard limit {hard} is too low for {} connections",
        a.idle + a.sse
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let notify_path = dir.path().join("notify.sock");
    let notify = UnixDatagram::bind(&notify_path).expect("notify socket");
    let (svc, addr) = start(dir, &notify_path, &a);
    println!(
        "conn_load: {} idle connections + {} live streams, phases of {} s, {} pairs",
        a.idle, a.sse, a.secs, a.pairs
    );
    let warm = measure("warm-up", &svc, addr, &notify, a.secs);
    // A pipeline that failed (model or frames not found) would make every phase read
    // 0 frames/s and every pair NaN: refuse to report figures that measure nothing.
    assert!(
        warm.fps > 0.0,
        "the pipeline inferred no frame during the warm-up (see the service's log above: \
         is FPGAGDR_DATA_DIR's models/ reachable?); no figures to report"
    );
    let mut phases = Vec::new();
    let mut stream_bytes = 0;
    let mut open_s = Vec::new();
    for _ in 0..a.pairs {
        phases.push(measure("idle", &svc, addr, &notify, a.secs));
        let t = Instant::now();
        let held = open_load(addr, &a);
        open_s.push(t.elapsed().as_secs_f64());
        std::thread::sleep(Duration::from_secs(2));
        phases.push(measure("load", &svc, addr, &notify, a.secs));
        stream_bytes += close_load(held);
        std::thread::sleep(Duration::from_secs(2));
    }
    phases.push(measure("idle", &svc, addr, &notify, a.secs));
    println!(
        "| phase | frames/s | status p50 ms | p99 ms | max ms | WATCHDOG=1 | service CPU (cores) | RSS max MiB | fds max |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for p in &phases {
        println!(
            "| {} | {:.1} | {:.2} | {:.2} | {:.2} | {} | {:.2} | {:.1} | {} |",
            p.name,
            p.fps,
            ms(&p.lat, 0.5),
            ms(&p.lat, 0.99),
            ms(&p.lat, 1.0),
            p.watchdogs,
            p.cores,
            p.rss_max_kib as f64 / 1024.0,
            p.fds_max
        );
    }
    // Each load phase against the mean of the idle phases around it.
    for (k, i) in (1..phases.len()).step_by(2).enumerate() {
        let idle = (phases[i - 1].fps + phases[i + 1].fps) / 2.0;
        println!(
            "pair {}: load {:.1} frames/s vs idle around it {:.1}: {:+.2} %",
            k + 1,
            phases[i].fps,
            idle,
            (phases[i].fps / idle - 1.0) * 100.0
        );
    }
    println!(
        "opening the connections took {:?} s; streams delivered {:.1} MiB in all",
        open_s.iter().map(|s| format!("{s:.1}")).collect::<Vec<_>>(),
        stream_bytes as f64 / (1 << 20) as f64
    );
}
