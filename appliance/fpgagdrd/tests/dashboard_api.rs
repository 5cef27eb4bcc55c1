//! What the dashboard's pages rely on, through the real binary: the API token on every
//! mutating request (refused without it, nothing changed), the token generated on first
//! start, SSE resume after `Last-Event-ID`, the chart history a page loads on open
//! (`GET /api/v1/pipeline/history`), and `GET /api/v1/system`.

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{PATIENCE, Service, TOKEN, replay};
use serde_json::Value;

#[test]
fn mutating_requests_need_the_token_and_change_nothing_without_it() {
    let text = "{\"autostart\": false}\n";
    let svc = Service::start_with_file(Some(text));
    let before = svc.get("/api/v1/config");
    let etag = before.header("etag").to_string();
    let patch = br#"{"ring": {"entries": 8}}"#;
    let wrong = format!("Bearer {TOKEN}x");
    for auth in [None, Some(wrong.as_str()), Some("Basic dXNlcjpwYXNz")] {
        let headers: Vec<(&str, &str)> = auth.map(|a| ("authorization", a)).into_iter().collect();
        for (method, path, body) in [
            ("PATCH", "/api/v1/config", Some(&patch[..])),
            ("PUT", "/api/v1/config", Some(&patch[..])),
            ("POST", "/api/v1/pipeline/start", None),
            ("POST", "/api/v1/pipeline/stop", None),
        ] {
            let mut h = headers.clone();
            if body.is_some() {
                h.push(("content-type", "application/json"));
            }
            let r = svc.request_as(method, path, body, &h);
            let p = r.problem(401, "auth-token");
            assert!(
                p["detail"].as_str().unwrap().contains("rule auth-token"),
                "{p}"
            );
            assert_eq!(r.header("www-authenticate"), "Bearer realm=\"fpgagdr\"");
        }
    }
    // Nothing changed: config, ETag, file, pipeline.
    let after = svc.get("/api/v1/config");
    assert_eq!(
        (after.body.as_str(), after.header("etag")),
        (before.body.as_str(), etag.as_str())
    );
    assert_eq!(std::fs::read_to_string(&svc.config_path).unwrap(), text);
    assert_eq!(svc.status()["pipeline"]["state"], "stopped");
    // Reading stays open.
    for path in [
        "/api/v1/status",
        "/api/v1/config/schema",
        "/api/v1/system",
        "/metrics",
        "/",
    ] {
        assert_eq!(svc.get(path).status, 200, "GET {path}");
    }
    // The right token works (any case of "Bearer").
    let ok = format!("bearer {TOKEN}");
    let r = svc.request_as(
        "PATCH",
        "/api/v1/config",
        Some(patch),
        &[
            ("authorization", &ok),
            ("content-type", "application/json"),
            ("if-match", &etag),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["ring"]["entries"], 8);
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(&svc.config_path).unwrap()).unwrap();
    assert_eq!(saved["ring"]["entries"], 8);
}

#[test]
fn a_token_is_generated_on_first_start_printed_once_and_saved_0600() {
    let svc = Service::start_opts(Some("{\"autostart\": false}"), &[], None);
    let file = svc.config_path.parent().unwrap().join("token");
    let printed: Vec<&String> = svc
        .stdout_head
        .iter()
        .filter(|l| l.starts_with("fpgagdrd: API token"))
        .collect();
    assert_eq!(printed.len(), 1, "{:?}", svc.stdout_head);
    assert_eq!(
        printed[0],
        &format!(
            "fpgagdrd: API token (saved to {}): {}",
            file.display(),
            svc.token
        )
    );
    assert_eq!(svc.token.len(), 64, "{}", svc.token);
    assert!(svc.token.bytes().all(|b| b.is_ascii_hexdigit()));
    let meta = std::fs::metadata(&file).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), svc.token);
    let r = svc.request(
        "PATCH",
        "/api/v1/config",
        Some(br#"{"ring": {"entries": 6}}"#),
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    svc.request_as("POST", "/api/v1/pipeline/stop", None, &[])
        .problem(401, "auth-token");
}

/// One SSE event as read off the wire.
#[derive(Debug, Default)]
struct Event {
    event: String,
    id: Option<u64>,
    data: String,
}

/// Reads events from an open stream until `n` `snapshot` events arrived. Other events
/// (`ota` state changes) carry no id by design and are not part of the resumable feed.
fn read_events(lines: &mut impl Iterator<Item = std::io::Result<String>>, n: usize) -> Vec<Event> {
    let deadline = Instant::now() + PATIENCE;
    let mut out = Vec::new();
    let mut cur = Event::default();
    while out.len() < n {
        assert!(Instant::now() < deadline, "stream too slow: {out:?}");
        let line = lines.next().expect("stream ended").expect("readable");
        if line.is_empty() {
            let ev = std::mem::take(&mut cur);
            if !ev.data.is_empty() && ev.event == "snapshot" {
                out.push(ev);
            }
        } else if let Some(v) = line.strip_prefix("event:") {
            cur.event = v.trim().to_string();
        } else if let Some(v) = line.strip_prefix("id:") {
            cur.id = Some(v.trim().parse().expect("numeric id"));
        } else if let Some(v) = line.strip_prefix("data:") {
            cur.data.push_str(v.trim_start());
        }
    }
    out
}

fn open_stream(
    svc: &Service,
    path: &str,
    last_id: Option<u64>,
) -> impl Iterator<Item = std::io::Result<String>> + use<> {
    let mut req = svc.agent().get(svc.url(path));
    if let Some(id) = last_id {
        req = req.header("last-event-id", id.to_string());
    }
    let resp = req.call().expect("GET stream");
    assert_eq!(resp.status().as_u16(), 200);
    BufReader::new(resp.into_body().into_reader()).lines()
}

fn ids(events: &[Event]) -> Vec<u64> {
    events
        .iter()
        .map(|e| e.id.expect("every event has an id"))
        .collect()
}

#[test]
fn the_stream_resumes_after_last_event_id_with_consecutive_ids() {
    let svc = Service::start(&replay("chelsea.png"));
    let mut first = open_stream(&svc, "/api/v1/stream", None);
    let seen = ids(&read_events(&mut first, 3));
    assert!(seen.windows(2).all(|w| w[1] == w[0] + 1), "{seen:?}");
    drop(first);
    let last = *seen.last().unwrap();
    // Miss a few batches (about 3 a second).
    std::thread::sleep(Duration::from_millis(1500));
    let mut resumed = open_stream(&svc, "/api/v1/stream", Some(last));
    let events = read_events(&mut resumed, 8);
    let got = ids(&events);
    let want: Vec<u64> = (last + 1..=last + 8).collect();
    assert_eq!(
        got, want,
        "the gap is filled first, then live, no id twice or missing"
    );
    for e in &events {
        let v: Value = serde_json::from_str(&e.data).unwrap();
        assert_eq!(v["batch"].as_array().map(Vec::len), Some(3), "{v}");
    }
    // The query form (a fresh EventSource cannot send the header).
    let mut by_query = open_stream(&svc, &format!("/api/v1/stream?last_event_id={last}"), None);
    assert_eq!(ids(&read_events(&mut by_query, 3)), want[..3]);
    // An id from before a restart (below every id of this run) gets the whole ring:
    // more batches than went by since it was opened, starting before `last`.
    let mut old = open_stream(&svc, "/api/v1/stream", Some(1));
    let replay = ids(&read_events(&mut old, 4));
    assert!(replay[0] < last, "{replay:?} vs {last}");
    assert!(replay.windows(2).all(|w| w[1] == w[0] + 1), "{replay:?}");
    // Without an id the stream opens with the bounded replay of the last minute (a page
    // draws it at once), so it starts before `last` too, and goes on without a hole.
    let mut fresh = open_stream(&svc, "/api/v1/stream", None);
    let replay = ids(&read_events(&mut fresh, 2));
    assert!(replay[0] <= last, "{replay:?} vs {last}");
}

/// The events of a stream opened at unix time `t0`, read until one sampled a second
/// after it: `(bytes of data, oldest snapshot t, newest snapshot t)` of each.
fn events_until_live(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    t0: f64,
) -> Vec<(usize, f64, f64)> {
    let mut out = Vec::new();
    loop {
        let e = read_events(lines, 1).pop().unwrap();
        let v: Value = serde_json::from_str(&e.data).unwrap();
        let t: Vec<f64> = v["batch"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["t"].as_f64().unwrap())
            .collect();
        let (first, last) = (t[0], *t.last().unwrap());
        out.push((e.data.len(), first, last));
        if last > t0 + 1.0 {
            return out;
        }
    }
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The replay's bound (docs/api.md, "Bounded replay"): at most the last 60 s, at most this
/// many bytes of event data (`board/replay.rs`'s `REPLAY_MAX_BYTES`).
const REPLAY_MAX_BYTES: usize = 192 * 1024;

#[test]
fn a_stream_opened_without_an_id_or_with_id_0_gets_the_bounded_replay() {
    // Thirty INA3221 rails make every snapshot large, so 25 s of them are far more than
    // the bound: the replay has to thin them, not send the ring (`Last-Event-ID:
    // 0` once returned 600 kB in one go) and not cut the minute short.
    let dir = tempfile::tempdir().unwrap();
    for chip in 0..10 {
        let hwmon = format!(
            "sys/bus/i2c/drivers/ina3221/1-{:04x}/hwmon/hwmon{chip}",
            0x40 + chip
        );
        for n in 1..=3 {
            let name = format!("VDD_FIXTURE_RAIL_{chip}_{n}");
            put(dir.path(), &format!("{hwmon}/in{n}_label"), &name);
            put(dir.path(), &format!("{hwmon}/in{n}_input"), "4992");
            put(
                dir.path(),
                &format!("{hwmon}/curr{n}_input"),
                &format!("{}", 8 * (chip * 3 + n)),
            );
        }
    }
    let config = serde_json::to_string(&replay("chelsea.png")).unwrap();
    let svc = Service::start_with_args(
        Some(&config),
        &["--sysfs-root", dir.path().to_str().unwrap()],
    );
    let start = unix_now();
    // 25 s of snapshots (longer than `wait_for`'s patience: polled here).
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let h = svc.get_json("/api/v1/pipeline/history");
        let rows = h["t"].as_array().map_or(0, Vec::len);
        if rows >= 250 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{rows} rows of history after 120 s"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    // `Last-Event-ID: 0` first, then a page opening (no id).
    for last_id in [Some(0), None] {
        let t0 = unix_now();
        let mut lines = open_stream(&svc, "/api/v1/stream", last_id);
        let events = events_until_live(&mut lines, t0);
        // Sent before the stream opened: the replay. A live event sent after it holds
        // snapshots of the last 0.3 s; one whose oldest snapshot is that recent may be
        // either, and is left out (a few kB at most).
        let replay: Vec<_> = events.iter().filter(|e| e.1 < t0 - 0.6).collect();
        let bytes: usize = replay.iter().map(|e| e.0).sum();
        let oldest = replay.iter().map(|e| e.1).fold(t0, f64::min);
        let newest = replay.iter().map(|e| e.2).fold(t0 - 3600.0, f64::max);
        let what = format!(
            "Last-Event-ID {last_id:?}: {} replay events, {bytes} bytes, from {:.1} s to {:.1} s before the stream opened (the service ran {:.1} s)",
            replay.len(),
            t0 - oldest,
            t0 - newest,
            t0 - start
        );
        eprintln!("{what}");
        assert!(bytes <= REPLAY_MAX_BYTES, "{what}");
        assert!(
            t0 - oldest >= 20.0 && t0 - oldest <= 61.0,
            "the minute, thinned: {what}"
        );
        assert!(t0 - newest < 1.5, "up to now: {what}");
    }
}

#[test]
fn a_start_that_cannot_listen_generates_no_token() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fpgagdrd"))
        .args(["--listen", &addr, "--config"])
        .arg(dir.path().join("config.json"))
        .env_remove("FPGAGDR_TOKEN")
        .env("ORT_DYLIB_PATH", common::ort_library())
        .env("FPGAGDR_DATA_DIR", common::data_dir())
        .output()
        .expect("run fpgagdrd");
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("listening on {addr}")), "{err}");
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("API token"),
        "{out:?}"
    );
    assert!(
        !dir.path().join("token").exists(),
        "the token's one showing was spent on a start that failed"
    );
}

#[test]
fn pipeline_history_has_aligned_columns_of_the_running_pipeline() {
    let svc = Service::start(&replay("chelsea.png"));
    svc.wait_frames_above(20);
    let h = common::wait_for("a second of pipeline history", || {
        let h = svc.get_json("/api/v1/pipeline/history");
        match h["t"].as_array() {
            Some(t) if t.len() >= 10 => Ok(h),
            _ => Err(h.to_string()),
        }
    });
    assert_eq!(h["period_s"], 0.1, "{h}");
    let col = |v: &Value| -> Vec<Option<f64>> {
        v.as_array()
            .unwrap_or_else(|| panic!("not a column: {v}"))
            .iter()
            .map(Value::as_f64)
            .collect()
    };
    let t = col(&h["t"]);
    let n = t.len();
    assert!(t.windows(2).all(|w| w[0] < w[1]), "t rises: {t:?}");
    assert!(
        t.iter().all(|x| x.is_some_and(|x| x > 1.0e9)),
        "unix seconds: {t:?}"
    );
    for key in ["fps", "gbps"] {
        let c = col(&h[key]);
        assert_eq!(c.len(), n, "{key}");
        assert!(
            c.iter().all(|x| x.is_some_and(|x| x >= 0.0)),
            "{key}: {c:?}"
        );
    }
    assert!(
        col(&h["fps"]).iter().any(|x| x.unwrap() > 0.0),
        "frames flow"
    );
    for stage in ["dma", "preprocess", "inference", "end_to_end"] {
        let q = &h["latency_us"][stage];
        let (p50, p99, max) = (col(&q["p50"]), col(&q["p99"]), col(&q["max"]));
        assert!(
            p50.len() == n && p99.len() == n && max.len() == n,
            "{stage}"
        );
        let mut seen = 0;
        for i in 0..n {
            match (p50[i], p99[i], max[i]) {
                (Some(a), Some(b), Some(c)) => {
                    assert!(0.0 < a && a <= b && b <= c, "{stage} row {i}: {a} {b} {c}");
                    seen += 1;
                }
                (None, None, None) => {}
                other => panic!("{stage} row {i}: a partial row {other:?}"),
            }
        }
        assert!(seen > 0, "{stage}: no measured row in {n}");
    }
}

fn put(root: &Path, rel: &str, value: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, format!("{value}\n")).unwrap();
}

#[test]
fn system_reports_versions_card_and_model_digest() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = serde_json::to_string(&replay("chelsea.png")).unwrap();
    let svc = Service::start_with_args(Some(&config), &["--sysfs-root", root.to_str().unwrap()]);
    let s = svc.get_json("/api/v1/system");
    assert_eq!(s["service"]["name"], "fpgagdrd", "{s}");
    assert_eq!(s["service"]["version"], env!("CARGO_PKG_VERSION"), "{s}");
    assert_eq!(s["image"]["build"], false, "{s}");
    assert_eq!(s["image"]["detail"], "not an image build", "{s}");
    assert_eq!(s["module"]["loaded"], false, "{s}");
    assert_eq!(s["module"]["detail"], "not loaded", "{s}");
    assert_eq!(s["card"]["simulated"], true, "{s}");
    assert!(s["uptime_s"].as_f64().is_some(), "{s}");
    let sha = s["model"]["sha256"].as_str().expect("model sha256");
    assert_eq!(sha.len(), 64, "{s}");
    assert!(
        s["model"]["bytes"].as_u64().is_some_and(|b| b > 1_000_000),
        "{s}"
    );

    put(root, "sys/module/fpgagdr/version", "0.3.1");
    put(root, "etc/fpgagdr-image-version", "2026.05.0");
    put(root, "proc/sys/kernel/osrelease", "6.1.0-fixture");
    let s = svc.get_json("/api/v1/system");
    assert_eq!(s["module"]["version"], "0.3.1", "{s}");
    assert_eq!(s["image"]["build"], true, "{s}");
    assert_eq!(s["image"]["version"], "2026.05.0", "{s}");
    assert_eq!(s["kernel"]["release"], "6.1.0-fixture", "{s}");
    assert_eq!(s["model"]["sha256"], sha, "{s}");
}
