//! systemd notifications of the real `fpgagdrd` binary, received on a real `AF_UNIX`
//! datagram socket given to it as `$NOTIFY_SOCKET` (the same protocol systemd's
//! `Type=notify` and `WatchdogSec=` speak; no systemd runs here): `READY=1` once it
//! listens, `WATCHDOG=1` while its pipeline makes progress, withheld while a model run
//! keeps the inference thread from its loop past `--stall-limit-s`, `STOPPING=1` on
//! SIGTERM.

mod common;

use std::os::unix::net::UnixDatagram;
use std::time::{Duration, Instant};

use common::{PATIENCE, Service, TOKEN, frame};
use serde_json::json;

/// The test's end of `$NOTIFY_SOCKET`.
struct Manager {
    socket: UnixDatagram,
    /// Every datagram received so far, in order.
    seen: Vec<String>,
}

impl Manager {
    fn bind(path: &std::path::Path) -> Manager {
        let socket = UnixDatagram::bind(path).expect("bind the notify socket");
        socket
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        Manager {
            socket,
            seen: Vec::new(),
        }
    }

    /// Receives datagrams until one satisfies `accept` (bounded by [`PATIENCE`]).
    fn until(&mut self, what: &str, accept: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        let mut buf = [0u8; 4096];
        loop {
            assert!(
                Instant::now() < deadline,
                "no notification {what} within {PATIENCE:?}; received: {:#?}",
                self.seen
            );
            let Ok(n) = self.socket.recv(&mut buf) else {
                continue;
            };
            let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
            self.seen.push(msg.clone());
            if accept(&msg) {
                return msg;
            }
        }
    }
}

/// One datagram into `buf` (its length), or `None` once the socket's receive timeout
/// (200 ms) passes with none. A receive interrupted by a signal is retried: with a
/// receive timeout set, Linux does not restart it (signal(7)), and the tests of this
/// binary start and reap processes; taking that `EINTR` for "nothing came" would end a
/// drain early or pass a "nothing arrives" check without waiting.
fn recv_or_quiet(socket: &UnixDatagram, buf: &mut [u8]) -> Option<usize> {
    use std::io::ErrorKind;
    loop {
        match socket.recv(buf) {
            Ok(n) => return Some(n),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return None;
            }
            Err(e) => panic!("receiving on the notify socket: {e}"),
        }
    }
}

fn has(msg: &str, line: &str) -> bool {
    msg.lines().any(|l| l == line)
}

fn status(msg: &str) -> &str {
    msg.lines()
        .find_map(|l| l.strip_prefix("STATUS="))
        .unwrap_or("")
}

#[test]
fn ready_watchdog_withheld_while_a_model_run_stalls_and_stopping() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("notify.sock");
    let mut manager = Manager::bind(&sock);
    let slow = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/slow.onnx");
    // A model run of seconds (tests/data/make_bad_models.py) against a stall limit of
    // 0.5 s; card.timeout_ms = 100 keeps the limit's floor (2 x timeout) below that.
    let config = json!({
        "source": {"kind": "replay", "path": frame("chelsea.png"), "fps": 50},
        "card": {"sim_link": "off", "timeout_ms": 100},
        "inference": {"threads": 1},
        "model": {"path": slow},
    });
    let mut svc = Service::start_env(
        Some(&config.to_string()),
        &["--stall-limit-s", "0.5"],
        Some(TOKEN),
        &[
            ("NOTIFY_SOCKET", sock.as_os_str()),
            // Pings every 0.2 s (WATCHDOG_USEC / 2).
            ("WATCHDOG_USEC", "400000".as_ref()),
        ],
    );

    let ready = manager.until("READY=1", |m| has(m, "READY=1"));
    assert_eq!(
        status(&ready),
        format!("serving {}/, pipeline running", svc.base),
        "READY=1 names the bound address: {ready:?}"
    );

    let hung = manager.until("STATUS naming the stalled inference thread", |m| {
        status(m).contains("the inference thread made no progress")
    });
    assert!(!has(&hung, "WATCHDOG=1"), "a hung service pings: {hung:?}");
    assert_eq!(svc.status()["pipeline"]["state"], "running");

    // Back to the default model: the pipeline turns its loop again and pings resume.
    let r = svc.request(
        "PATCH",
        "/api/v1/config",
        Some(br#"{"model": {"path": "models/efficientnet-lite0.onnx"}}"#),
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // Counters survive the restart: wait for frames of the default model.
    svc.wait_frames_above(svc.frames_inferred());
    manager.seen.clear();
    // Datagrams sent before the swap may still be queued; three pings of the running
    // pipeline must come (each ping carries the pipeline's state in STATUS=).
    for _ in 0..3 {
        manager.until("WATCHDOG=1 of the running pipeline", |m| {
            has(m, "WATCHDOG=1") && status(m).starts_with("pipeline running, ")
        });
    }

    let exit = svc
        .terminate()
        .expect("fpgagdrd still running after SIGTERM");
    assert!(exit.success(), "{exit:?}");
    manager.until("STOPPING=1", |m| has(m, "STOPPING=1"));
    // Nothing after STOPPING: no ping, no "running" status for systemctl to show.
    let mut buf = [0u8; 512];
    while let Some(n) = recv_or_quiet(&manager.socket, &mut buf) {
        let m = String::from_utf8_lossy(&buf[..n]).into_owned();
        assert!(!has(&m, "WATCHDOG=1"), "a ping after STOPPING: {m:?}");
    }
}

#[test]
fn without_a_watchdog_it_never_pings_and_without_a_socket_it_sends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("notify.sock");
    let mut manager = Manager::bind(&sock);
    let config = common::replay("chelsea.png").to_string();
    // systemd sets WATCHDOG_PID to the main process; another pid's watchdog is not ours.
    let svc = Service::start_env(
        Some(&config),
        &[],
        Some(TOKEN),
        &[
            ("NOTIFY_SOCKET", sock.as_os_str()),
            ("WATCHDOG_USEC", "400000".as_ref()),
            ("WATCHDOG_PID", "1".as_ref()),
        ],
    );
    manager.until("READY=1", |m| has(m, "READY=1"));
    svc.wait_frames_above(0);
    // STATUS= is refreshed every 5 s without a watchdog; one refresh, and no ping in it.
    let refresh = manager.until("a STATUS refresh", |m| {
        status(m).starts_with("pipeline running")
    });
    assert!(!has(&refresh, "WATCHDOG=1"), "{refresh:?}");
    assert!(
        manager.seen.iter().all(|m| !has(m, "WATCHDOG=1")),
        "{:#?}",
        manager.seen
    );
    drop(svc);
    while recv_or_quiet(&manager.socket, &mut [0u8; 512]).is_some() {}

    // No $NOTIFY_SOCKET: not run by systemd, so not a word, and it serves as ever.
    let svc = Service::start_env(
        Some(&config),
        &[],
        Some(TOKEN),
        &[("WATCHDOG_USEC", "400000".as_ref())],
    );
    svc.wait_frames_above(0);
    let mut buf = [0u8; 512];
    assert!(
        recv_or_quiet(&manager.socket, &mut buf).is_none(),
        "a datagram arrived with no NOTIFY_SOCKET set"
    );
}
