//! Results out, on the real binary with the real model and frames: the
//! results log and `GET /api/v1/results`, the per-frame stream, and MQTT against
//! Debian's real `mosquitto` (started by each test on a free loopback port; `./test.sh`
//! installs it): every result in order with the content the log holds, the broker
//! restarted mid-run, the broker down at start, a wrong password; alerts on their own
//! topic (the rest of alerts: `alerts.rs`).

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Service, promtool_clean, replay, wait_for};
use serde_json::{Value, json};

/// A free loopback TCP port (bound, then released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn need(cmd: &str) -> PathBuf {
    for dir in ["/usr/sbin", "/usr/bin", "/sbin", "/bin"] {
        let p = Path::new(dir).join(cmd);
        if p.is_file() {
            return p;
        }
    }
    panic!("{cmd} is not installed: apt-get install mosquitto mosquitto-clients (./test.sh does)");
}

/// Debian's mosquitto on 127.0.0.1:`port`, persistent (a restart keeps sessions and
/// their queued messages), optionally with a password file.
struct Broker {
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

impl Broker {
    fn new(port: u16, users: &[(&str, &str)]) -> Broker {
        let dir = tempfile::tempdir().unwrap();
        // Started as root, mosquitto drops to its own user: it must be able to write
        // its sessions (persistence) here.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let mut conf = format!(
            "listener {port} 127.0.0.1\npersistence true\npersistence_location {}/\nlog_dest file {}/log\n",
            dir.path().display(),
            dir.path().display()
        );
        if users.is_empty() {
            conf.push_str("allow_anonymous true\n");
        } else {
            let pw = dir.path().join("passwd");
            for (i, (u, p)) in users.iter().enumerate() {
                let mut c = Command::new(need("mosquitto_passwd"));
                if i == 0 {
                    c.arg("-c");
                }
                let st = c.arg("-b").arg(&pw).arg(u).arg(p).status().unwrap();
                assert!(st.success(), "mosquitto_passwd");
            }
            conf.push_str(&format!(
                "allow_anonymous false\npassword_file {}\n",
                pw.display()
            ));
        }
        std::fs::write(dir.path().join("mosquitto.conf"), conf).unwrap();
        Broker {
            dir,
            port,
            child: None,
        }
    }

    fn start(&mut self) {
        assert!(self.child.is_none());
        let child = Command::new(need("mosquitto"))
            .arg("-c")
            .arg(self.dir.path().join("mosquitto.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let port = self.port;
        wait_for("mosquitto to listen", || {
            std::net::TcpStream::connect(("127.0.0.1", port))
                .map(drop)
                .map_err(|e| e.to_string())
        });
    }

    /// SIGTERM (mosquitto saves its sessions), then waits for it.
    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
            let _ = c.wait();
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `mosquitto_sub` on `topic` with a persistent session (QoS 1), collecting payloads.
struct Subscriber {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Subscriber {
    fn start(port: u16, topic: &str, id: &str) -> Subscriber {
        let mut child = Command::new(need("mosquitto_sub"))
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-t", topic])
            .args(["-q", "1", "-c", "-i", id])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let l = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                l.lock().unwrap().push(line);
            }
        });
        Subscriber { child, lines }
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// The first message received, as JSON (waits for it).
    fn first_json(&self, what: &str) -> Value {
        wait_for(what, || {
            self.lines()
                .first()
                .map(|l| serde_json::from_str(l).unwrap())
                .ok_or("none yet".to_string())
        })
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn mqtt_config(port: u16, qos: u8) -> Value {
    let mut c = replay("chelsea.png");
    c["source"]["fps"] = json!(30);
    c["outputs"] = json!({"mqtt": {
        "enabled": true, "host": "127.0.0.1", "port": port, "qos": qos,
        "topic": "test/results", "status_topic": "test/status", "client_id": "fpgagdr-test",
    }});
    c
}

/// [`logged`] once the log holds every result status says was written: the log is
/// flushed when the results room has been idle a quarter second (at least once a
/// second), so a read right after a stop may miss the last results.
fn logged_flushed(svc: &Service, run: u64) -> Vec<Value> {
    wait_for("the results log flushed", || {
        let written = svc.status()["outputs"]["log"]["written"]
            .as_u64()
            .unwrap_or(0);
        let log = logged(svc, run);
        (log.len() as u64 == written)
            .then(|| log.clone())
            .ok_or(format!("{} of {written} results in the log", log.len()))
    })
}

/// Every result of the log for `run` (all pages).
fn logged(svc: &Service, run: u64) -> Vec<Value> {
    let mut out = Vec::new();
    let mut after = format!("{run}:0");
    // The first frame of a run may be seq 0: start just below it.
    let first = svc.get_json(&format!("/api/v1/results?after={}:0&limit=1", run - 1));
    if let Some(r) = first["results"].as_array().and_then(|a| a.first())
        && r["run"] == json!(run)
    {
        out.push(r.clone());
        after = format!("{run}:{}", r["seq"]);
    }
    loop {
        let page = svc.get_json(&format!("/api/v1/results?after={after}&limit=1000"));
        let rs = page["results"].as_array().unwrap().clone();
        for r in &rs {
            if r["run"] == json!(run) {
                out.push(r.clone());
            }
        }
        if !page["more"].as_bool().unwrap() || rs.is_empty() {
            return out;
        }
        after = page["next"].as_str().unwrap().to_string();
    }
}

fn mqtt_status(svc: &Service) -> Value {
    svc.status()["outputs"]["mqtt"].clone()
}

fn key(r: &Value) -> (u64, u64) {
    (r["run"].as_u64().unwrap(), r["seq"].as_u64().unwrap())
}

#[test]
fn the_log_pages_by_key_and_matches_the_latest_result() {
    let svc = Service::start(&replay("chelsea.png"));
    svc.wait_frames_above(20);
    // Written out at least once a second: wait for the log to hold five.
    let page = wait_for("five results in the log", || {
        let p = svc.get_json("/api/v1/results?limit=5");
        (p["results"].as_array().map_or(0, Vec::len) == 5)
            .then_some(p.clone())
            .ok_or(p.to_string())
    });
    let rs = page["results"].as_array().unwrap();
    assert!(page["more"].as_bool().unwrap());
    let r = &rs[0];
    assert_eq!(r["v"], 2);
    assert_eq!(r["checksum"], "ok");
    assert_eq!(r["frame"]["width"], 451, "{r}");
    assert!(
        r["top"][0]["label"].as_str().unwrap().contains("cat"),
        "{r}"
    );
    assert!(r["latency_us"]["end_to_end"].as_f64().unwrap() > 0.0);
    assert!(r["arrived_unix_ns"].as_u64().unwrap() <= r["result_unix_ns"].as_u64().unwrap());
    // Consecutive pages: no gap, no repeat, in key order.
    let next = page["next"].as_str().unwrap();
    let page2 = svc.get_json(&format!("/api/v1/results?after={next}&limit=5"));
    let keys: Vec<_> = rs
        .iter()
        .chain(page2["results"].as_array().unwrap())
        .map(key)
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(keys, sorted, "keys in order, each once");
    // Two pages are the page of both (no gap at the seam: frames the pipeline dropped
    // have no result, so sequence numbers may skip).
    let first = keys[0];
    let both = svc.get_json(&format!(
        "/api/v1/results?after={}:{}&limit=9",
        first.0, first.1
    ));
    let both: Vec<_> = both["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(key)
        .collect();
    assert_eq!(both, keys[1..].to_vec());
    // The latest result is in the log with the same content.
    svc.request("POST", "/api/v1/pipeline/stop", None, &[]);
    let latest = svc.get_json("/api/v1/results/latest");
    let run = r["run"].as_u64().unwrap();
    let seq = latest["seq"].as_u64().unwrap();
    let found = wait_for("the latest result in the log", || {
        let p = svc.get_json(&format!("/api/v1/results?after={run}:{}&limit=1", seq - 1));
        p["results"]
            .get(0)
            .filter(|r| r["seq"] == json!(seq))
            .cloned()
            .ok_or(p.to_string())
    });
    assert_eq!(found["top"][0]["index"], latest["top5"][0]["index"]);
    assert_eq!(found["top"][0]["label"], latest["top5"][0]["label"]);
    // Fleet metrics: stage histograms in seconds, cumulative buckets ending at the
    // count; drops labelled by reason.
    let metrics = svc.get("/metrics").body;
    for stage in ["dma", "inference", "end_to_end"] {
        let mut last = 0u64;
        let mut buckets = 0;
        for line in metrics.lines().filter(|l| {
            l.starts_with(&format!(
                "fpgagdr_stage_duration_seconds_bucket{{stage=\"{stage}\""
            ))
        }) {
            let n: u64 = line.rsplit(' ').next().unwrap().parse().unwrap();
            assert!(n >= last, "cumulative: {line}");
            last = n;
            buckets += 1;
        }
        assert_eq!(buckets, 17, "{stage}: 16 bounds and +Inf");
        let count = metrics
            .lines()
            .find(|l| {
                l.starts_with(&format!(
                    "fpgagdr_stage_duration_seconds_count{{stage=\"{stage}\"}}"
                ))
            })
            .unwrap();
        assert!(
            count.ends_with(&format!(" {last}")),
            "{count} vs +Inf {last}"
        );
        assert!(last > 0, "{stage} has samples");
    }
    for reason in ["back_pressure", "checksum", "overrun", "sequence"] {
        assert!(
            metrics.contains(&format!(
                "fpgagdr_frames_dropped_by_reason_total{{reason=\"{reason}\"}}"
            )),
            "{reason}"
        );
    }
    for reason in [
        "room_full",
        "mqtt_offline",
        "mqtt_queue_full",
        "stream_slow_client",
    ] {
        assert!(
            metrics.contains(&format!(
                "fpgagdr_results_dropped_total{{reason=\"{reason}\"}}"
            )),
            "{reason}"
        );
    }
    // Bad queries name their rule.
    svc.get("/api/v1/results?after=12").problem(400, "query");
    svc.get("/api/v1/results?limit=0").problem(400, "query");
    svc.get("/api/v1/results?limit=1001").problem(400, "query");
    svc.get("/api/v1/results?limit=x").problem(400, "query");
}

#[test]
fn the_stream_sends_every_result() {
    let svc = Service::start(&replay("chelsea.png"));
    svc.wait_frames_above(1);
    let resp = svc
        .agent()
        .get(&svc.url("/api/v1/results/stream"))
        .call()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let mut body = BufReader::new(resp.into_body().into_reader());
    let mut seqs = Vec::new();
    let mut line = String::new();
    while seqs.len() < 10 {
        line.clear();
        body.read_line(&mut line).unwrap();
        if let Some(data) = line.strip_prefix("data:") {
            let r: Value = serde_json::from_str(data.trim()).unwrap();
            seqs.push(r["seq"].as_u64().unwrap());
        }
    }
    // Every result, in order: the log's results over the same span.
    assert!(seqs.windows(2).all(|w| w[1] > w[0]), "in order: {seqs:?}");
    // The log is written out at least once a second (docs/api.md), so the streamed
    // results reach it a little later.
    let run = wait_for("the first result in the log", || {
        let p = svc.get_json("/api/v1/results?limit=1");
        p["results"][0]["run"].as_u64().ok_or(p.to_string())
    });
    let page = wait_for("the streamed span in the log", || {
        let p = svc.get_json(&format!("/api/v1/results?after={run}:{}&limit=9", seqs[0]));
        (p["results"].as_array().unwrap().len() == 9)
            .then_some(p.clone())
            .ok_or(p.to_string())
    });
    let logged: Vec<u64> = page["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(
        logged,
        seqs[1..].to_vec(),
        "the stream has every logged result"
    );
    assert!(svc.status()["outputs"]["stream_clients"].as_u64().unwrap() >= 1);
}

#[test]
fn mqtt_delivers_every_result_in_order_across_a_broker_restart() {
    let port = free_port();
    let mut broker = Broker::new(port, &[]);
    broker.start();
    let sub = Subscriber::start(port, "test/results", "fpgagdr-test-sub");
    let status_sub = Subscriber::start(port, "test/status", "fpgagdr-test-status");
    std::thread::sleep(Duration::from_millis(300));
    let svc = Service::start(&mqtt_config(port, 1));
    wait_for("MQTT connected", || {
        let m = mqtt_status(&svc);
        (m["state"] == "connected")
            .then_some(())
            .ok_or(m.to_string())
    });
    svc.wait_frames_above(10);
    // The broker goes away mid-run and comes back.
    broker.stop();
    wait_for("the loss seen", || {
        let m = mqtt_status(&svc);
        (m["state"] != "connected")
            .then_some(())
            .ok_or(m.to_string())
    });
    // The pipeline runs on while the broker is away.
    let during = svc.frames_inferred();
    svc.wait_frames_above(during + 3);
    assert_eq!(svc.status()["pipeline"]["state"], "running");
    broker.start();
    wait_for("MQTT reconnected", || {
        let m = mqtt_status(&svc);
        (m["state"] == "connected" && m["connects"].as_u64() >= Some(2))
            .then_some(())
            .ok_or(m.to_string())
    });
    let after = svc.frames_inferred();
    svc.wait_frames_above(after + 10);
    svc.request("POST", "/api/v1/pipeline/stop", None, &[]);
    let status = svc.status();
    assert_eq!(status["outputs"]["dropped"]["room_full"], 0, "{status}");
    assert_eq!(
        status["outputs"]["dropped"]["mqtt_queue_full"], 0,
        "{status}"
    );
    let first_run = svc.get_json("/api/v1/results?limit=1")["results"][0]["run"]
        .as_u64()
        .unwrap();
    let log = logged_flushed(&svc, first_run);
    assert!(log.len() > 20, "{} results logged", log.len());
    let want: Vec<(u64, u64)> = log.iter().map(key).collect();
    let got = wait_for("every logged result on MQTT", || {
        let got: Vec<Value> = sub
            .lines()
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let keys: BTreeSet<(u64, u64)> = got.iter().map(key).collect();
        let missing: Vec<_> = want.iter().filter(|k| !keys.contains(k)).collect();
        if missing.is_empty() {
            Ok(got)
        } else {
            Err(format!(
                "{} of {} missing, first {:?}",
                missing.len(),
                want.len(),
                &missing[..missing.len().min(5)]
            ))
        }
    });
    // The right content: each message is the logged record.
    let by_key: std::collections::BTreeMap<_, _> = log.iter().map(|r| (key(r), r)).collect();
    for m in &got {
        if let Some(r) = by_key.get(&key(m)) {
            assert_eq!(&m, r, "the MQTT payload is the logged result");
        }
    }
    // In order outside the outage: the first delivery of each result, in key order,
    // except where the reconnect re-sent what was in flight.
    let mut seen = BTreeSet::new();
    let firsts: Vec<_> = got.iter().map(key).filter(|k| seen.insert(*k)).collect();
    let inversions = firsts.windows(2).filter(|w| w[1] < w[0]).count();
    assert!(inversions <= 1, "{inversions} inversions in {firsts:?}");
    // The retained status topic: online; after a clean stop of the service, offline.
    assert_eq!(
        status_sub.lines().last().map(String::as_str),
        Some("online")
    );
    drop(svc);
    drop(status_sub);
    let late = Subscriber::start(port, "test/status", "fpgagdr-test-late");
    wait_for("the retained status", || {
        let l = late.lines();
        (!l.is_empty())
            .then_some(())
            .ok_or("nothing yet".to_string())
    });
    drop(late);
}

#[test]
fn mqtt_broker_down_at_start_is_reported_and_joined_later() {
    let port = free_port();
    let svc = Service::start(&mqtt_config(port, 0));
    let m = wait_for("the connection error in status", || {
        let m = mqtt_status(&svc);
        (m["state"] == "error")
            .then_some(m.clone())
            .ok_or(m.to_string())
    });
    assert!(
        m["last_error"]
            .as_str()
            .unwrap()
            .contains("cannot reach the broker"),
        "{m}"
    );
    svc.wait_frames_above(10);
    wait_for("QoS 0 results dropped while away", || {
        let d = &svc.status()["outputs"]["dropped"];
        (d["mqtt_offline"].as_u64() > Some(0))
            .then_some(())
            .ok_or(d.to_string())
    });
    let mut broker = Broker::new(port, &[]);
    broker.start();
    let sub = Subscriber::start(port, "test/results", "fpgagdr-test-late-sub");
    wait_for("MQTT connected after the broker came up", || {
        let m = mqtt_status(&svc);
        (m["state"] == "connected")
            .then_some(())
            .ok_or(m.to_string())
    });
    wait_for("results arriving", || {
        (sub.lines().len() >= 5)
            .then_some(())
            .ok_or(format!("{} so far", sub.lines().len()))
    });
}

#[test]
fn mqtt_wrong_password_is_a_clear_error_and_the_password_stays_write_only() {
    let port = free_port();
    let mut broker = Broker::new(port, &[("fpgagdr", "right-password")]);
    broker.start();
    let mut config = mqtt_config(port, 1);
    config["outputs"]["mqtt"]["username"] = json!("fpgagdr");
    config["outputs"]["mqtt"]["password"] = json!("wrong-password");
    let svc = Service::start(&config);
    let m = wait_for("the refusal in status", || {
        let m = mqtt_status(&svc);
        (m["state"] == "error"
            && m["last_error"]
                .as_str()
                .is_some_and(|e| e.contains("mqtt-auth")))
        .then_some(m.clone())
        .ok_or(m.to_string())
    });
    assert!(
        m["last_error"].as_str().unwrap().contains("password"),
        "{m}"
    );
    svc.wait_frames_above(5);
    assert_eq!(svc.status()["pipeline"]["state"], "running");
    // Never shown.
    let shown = svc.get_json("/api/v1/config");
    assert!(
        shown["outputs"]["mqtt"].get("password").is_none(),
        "{shown}"
    );
    assert!(!svc.get("/api/v1/config").body.contains("wrong-password"));
    // The right password by merge patch: connected.
    let patch = json!({"outputs": {"mqtt": {"password": "right-password"}}});
    let r = svc.request(
        "PATCH",
        "/api/v1/config",
        Some(patch.to_string().as_bytes()),
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    wait_for("connected with the right password", || {
        let m = mqtt_status(&svc);
        (m["state"] == "connected")
            .then_some(())
            .ok_or(m.to_string())
    });
    // GET then PUT (with a changed topic: a new client) keeps the password.
    let mut doc = svc.get_json("/api/v1/config");
    doc["outputs"]["mqtt"]["topic"] = json!("test/results2");
    let r = svc.request(
        "PUT",
        "/api/v1/config",
        Some(doc.to_string().as_bytes()),
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    wait_for("connected again with the kept password", || {
        let m = mqtt_status(&svc);
        (m["state"] == "connected" && m["topic"] == "test/results2")
            .then_some(())
            .ok_or(m.to_string())
    });
    let saved = std::fs::read_to_string(svc.config_path.clone()).unwrap();
    assert!(
        saved.contains("right-password"),
        "the file keeps the secret"
    );
    // Bad MQTT settings name their rule; nothing changes.
    let bad = json!({"outputs": {"mqtt": {"topic": "a/+/b", "qos": 2}}});
    let r = svc.request(
        "PATCH",
        "/api/v1/config",
        Some(bad.to_string().as_bytes()),
        &[],
    );
    let p = r.problem(422, "config-range");
    let fields: Vec<_> = r.field_errors();
    assert!(
        fields.iter().any(|(f, _)| f == "/outputs/mqtt/topic"),
        "{p}"
    );
    assert!(fields.iter().any(|(f, _)| f == "/outputs/mqtt/qos"), "{p}");
}

#[test]
fn the_frame_view_is_the_frame_the_card_moved() {
    let svc = Service::start(&replay("chelsea.png"));
    svc.wait_frames_above(3);
    let resp = wait_for("a frame view", || {
        let resp = svc
            .agent()
            .get(&svc.url("/api/v1/frames/latest"))
            .call()
            .map_err(|e| e.to_string())?;
        (resp.status() == 200).then_some(resp).ok_or("404".into())
    });
    assert_eq!(resp.headers()["content-type"], "image/png");
    let seq = resp.headers()["x-frame-seq"].to_str().unwrap();
    assert!(seq.parse::<u64>().is_ok(), "{seq}");
    let png = resp.into_body().read_to_vec().unwrap();
    let shown = image::load_from_memory(&png).unwrap().to_rgb8();
    let source = image::open(common::frame("chelsea.png")).unwrap().to_rgb8();
    // 451 x 300 fits the view: shown as it is, pixel for pixel.
    assert_eq!(shown.dimensions(), source.dimensions());
    assert!(
        shown == source,
        "the view shows the replayed frame's pixels"
    );
}

#[test]
fn the_frame_view_scales_a_large_frame_down() {
    let mut c = replay("chelsea.png");
    c["source"] =
        json!({"kind": "test_pattern", "width": 1024, "height": 512, "format": "mono8", "fps": 20});
    let svc = Service::start(&c);
    svc.wait_frames_above(3);
    let resp = wait_for("a frame view", || {
        let resp = svc
            .agent()
            .get(&svc.url("/api/v1/frames/latest"))
            .call()
            .map_err(|e| e.to_string())?;
        (resp.status() == 200).then_some(resp).ok_or("404".into())
    });
    let png = resp.into_body().read_to_vec().unwrap();
    let shown = image::load_from_memory(&png).unwrap();
    assert_eq!((shown.width(), shown.height()), (480, 240));
}

#[test]
fn mqtt_publishes_each_alert_on_the_alert_topic() {
    let port = free_port();
    let mut broker = Broker::new(port, &[]);
    broker.start();
    let alerts = Subscriber::start(port, "test/alerts", "fpgagdr-test-alerts");
    let results = Subscriber::start(port, "test/results", "fpgagdr-test-results");
    std::thread::sleep(Duration::from_millis(300));
    let mut c = mqtt_config(port, 1);
    c["outputs"]["mqtt"]["alert_topic"] = json!("test/alerts");
    let svc = Service::start(&c);
    let latest = svc.wait_result("a result", |r| !r["top5"].as_array().unwrap().is_empty());
    let best = latest["top5"][0]["label"].as_str().unwrap().to_string();
    let patch = json!({"outputs": {"alerts": {"rules": {
        "cat": {"kind": "class", "classes": [best], "min_score": 0.0},
    }}}});
    let r = svc.request(
        "PATCH",
        "/api/v1/config",
        Some(patch.to_string().as_bytes()),
        &[("content-type", "application/merge-patch+json")],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let got: Vec<Value> = wait_for("alerts on MQTT", || {
        let l = alerts.lines();
        (l.len() >= 5)
            .then(|| l.iter().map(|m| serde_json::from_str(m).unwrap()).collect())
            .ok_or(format!("{} so far", l.len()))
    });
    for a in &got {
        assert_eq!(a["rule"], "cat", "{a}");
        assert_eq!(a["kind"], "class", "{a}");
        assert_eq!(a["classes"][0]["label"], best.as_str(), "{a}");
    }
    // Each alert's result went out on the results topic, marked.
    let want = key(&got[0]);
    let marked = wait_for("the alert's result on the results topic", || {
        results
            .lines()
            .iter()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|r| key(r) == want)
            .ok_or("not yet".to_string())
    });
    assert_eq!(marked["alerts"], json!(["cat"]), "{marked}");
    let m = mqtt_status(&svc);
    assert!(m["alerts_queued"].as_u64().unwrap() >= 5, "{m}");
    assert_eq!(m["alerts_dropped"], 0, "{m}");
}

#[test]
fn mqtt_carries_a_condition_alert_once_per_episode() {
    let port = free_port();
    let mut broker = Broker::new(port, &[]);
    broker.start();
    let alerts = Subscriber::start(port, "test/alerts", "fpgagdr-test-cond-alerts");
    std::thread::sleep(Duration::from_millis(300));
    // The thermal zone is a fake sysfs tree: a test double for hardware not here.
    let fake = common::FakeSysfs::orin_nx();
    let mut c = mqtt_config(port, 1);
    c["outputs"]["mqtt"]["alert_topic"] = json!("test/alerts");
    c["outputs"]["alerts"] = json!({"rules": {
        "hot": {"kind": "temperature", "zone": "cpu-thermal", "max_c": 60.0},
    }});
    let config = serde_json::to_string(&c).unwrap();
    let svc = Service::start_with_args(
        Some(&config),
        &["--sysfs-root", fake.root(), "--telemetry-hz", "20"],
    );
    svc.wait_frames_above(0);
    let parsed = || -> Vec<Value> {
        alerts
            .lines()
            .iter()
            .map(|m| serde_json::from_str(m).unwrap())
            .collect()
    };
    let states = |want: &[&str]| {
        wait_for(&format!("alerts {want:?} on MQTT"), || {
            let got: Vec<String> = parsed()
                .iter()
                .map(|a| a["state"].as_str().unwrap().to_string())
                .collect();
            (got == want).then_some(()).ok_or(format!("{got:?}"))
        })
    };
    // Hot for three seconds (60 samples at 20 Hz): one message.
    fake.set_celsius(72.5);
    states(&["firing"]);
    std::thread::sleep(Duration::from_secs(3));
    states(&["firing"]);
    let a = &parsed()[0];
    assert_eq!(a["rule"], "hot", "{a}");
    assert_eq!(a["kind"], "temperature", "{a}");
    assert_eq!(a["value"], 72.5, "{a}");
    assert_eq!(a["threshold"], 60.0, "{a}");
    // Cool: one clear; hot again: a second firing.
    fake.set_celsius(40.0);
    states(&["firing", "cleared"]);
    fake.set_celsius(65.0);
    states(&["firing", "cleared", "firing"]);
    let m = mqtt_status(&svc);
    assert_eq!(m["alerts_queued"], 3, "{m}");
    assert_eq!(m["alerts_dropped"], 0, "{m}");
    assert_eq!(svc.status()["outputs"]["alerts"]["fired"]["hot"], 2);
}

#[test]
fn a_change_to_outputs_mqtt_alone_keeps_the_pipeline_running() {
    let port = free_port();
    let mut broker = Broker::new(port, &[]);
    broker.start();
    let results = Subscriber::start(port, "test/results", "fpgagdr-test-results");
    let moved = Subscriber::start(port, "test/moved", "fpgagdr-test-moved");
    std::thread::sleep(Duration::from_millis(300));
    let svc = Service::start(&mqtt_config(port, 0));
    let first = results.first_json("a result on the first topic");
    let generation = svc.status()["pipeline"]["generation"].clone();
    let patch = |body: Value| {
        svc.request(
            "PATCH",
            "/api/v1/config",
            Some(body.to_string().as_bytes()),
            &[("content-type", "application/merge-patch+json")],
        )
    };
    // Another topic: the new client takes over, the run goes on (same generation, same
    // run, sequence numbers going on), and results arrive on the new topic.
    let r = patch(json!({"outputs": {"mqtt": {"topic": "test/moved", "qos": 1}}}));
    assert_eq!(r.status, 200, "{}", r.body);
    let on_moved = moved.first_json("a result on the new topic");
    assert_eq!(on_moved["run"], first["run"], "the same run: {on_moved}");
    assert!(
        on_moved["seq"].as_u64() > first["seq"].as_u64(),
        "{on_moved}"
    );
    let s = svc.status();
    assert_eq!(s["pipeline"]["generation"], generation, "no new pipeline");
    assert_eq!(s["pipeline"]["state"], "running");
    assert_eq!(s["outputs"]["mqtt"]["topic"], "test/moved");
    assert_eq!(s["outputs"]["mqtt"]["qos"], 1);
    // Any other field is a new pipeline, as before.
    let r = patch(json!({"source": {"fps": 25}}));
    assert_eq!(r.status, 200, "{}", r.body);
    let later = svc.status()["pipeline"]["generation"].clone();
    assert_ne!(later, generation, "a source change starts a new pipeline");
}

/// One Server-Sent Event as read off the wire.
#[derive(Debug, Default, Clone)]
struct Sse {
    event: String,
    id: Option<String>,
    data: String,
}

/// Reads SSE events from `body` until `until` says enough (comments skipped).
fn read_events(body: &mut impl BufRead, mut until: impl FnMut(&[Sse]) -> bool) -> Vec<Sse> {
    let mut out = Vec::new();
    let mut cur = Sse::default();
    let mut line = String::new();
    while !until(&out) {
        line.clear();
        assert!(body.read_line(&mut line).unwrap() > 0, "the stream ended");
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            if !cur.event.is_empty() || !cur.data.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        } else if let Some(v) = l.strip_prefix("event:") {
            cur.event = v.trim().to_string();
        } else if let Some(v) = l.strip_prefix("id:") {
            cur.id = Some(v.trim().to_string());
        } else if let Some(v) = l.strip_prefix("data:") {
            cur.data.push_str(v.strip_prefix(' ').unwrap_or(v));
        }
    }
    out
}

fn results_of(events: &[Sse]) -> Vec<(String, Value)> {
    events
        .iter()
        .filter(|e| e.event == "result")
        .map(|e| {
            (
                e.id.clone().expect("a result event has an id"),
                serde_json::from_str(&e.data).unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_frame_view_is_shown_with_its_own_result() {
    let mut c = replay("chelsea.png");
    c["source"]["fps"] = json!(30);
    let svc = Service::start(&c);
    svc.wait_frames_above(3);
    for _ in 0..3 {
        let resp = wait_for("a frame view", || {
            let resp = svc
                .agent()
                .get(&svc.url("/api/v1/frames/latest"))
                .call()
                .map_err(|e| e.to_string())?;
            (resp.status() == 200).then_some(resp).ok_or("404".into())
        });
        let header = |h: &str| -> u64 {
            resp.headers()
                .get(h)
                .unwrap_or_else(|| panic!("the frame view names its result: no {h}"))
                .to_str()
                .unwrap()
                .parse()
                .unwrap()
        };
        let (run, seq) = (header("x-frame-run"), header("x-frame-seq"));
        // The frame's own result, not the newest one: same key, same geometry.
        let r = svc.get_json(&format!("/api/v1/results/{run}/{seq}"));
        assert_eq!(key(&r), (run, seq), "{r}");
        let png = resp.into_body().read_to_vec().unwrap();
        let shown = image::load_from_memory(&png).unwrap();
        assert_eq!(
            (r["frame"]["width"].as_u64(), r["frame"]["height"].as_u64()),
            (Some(shown.width() as u64), Some(shown.height() as u64))
        );
        // Never ahead of the newest result (a copy is shown only once it has its result).
        let latest = svc.get_json("/api/v1/results/latest");
        assert!(key(&latest) >= (run, seq), "{latest} vs view {run}:{seq}");
        std::thread::sleep(Duration::from_millis(700));
    }
    svc.get("/api/v1/results/1/2").problem(404, "no-result");
    svc.get("/api/v1/results/x/2").problem(400, "query");
}

#[test]
fn latest_log_and_stream_carry_one_results_schema() {
    let svc = Service::start(&replay("chelsea.png"));
    assert_eq!(
        svc.status()["outputs"]["mqtt"]["state"],
        "disabled",
        "MQTT is off by default"
    );
    svc.wait_frames_above(5);
    let resp = svc
        .agent()
        .get(&svc.url("/api/v1/results/stream"))
        .call()
        .unwrap();
    let mut body = BufReader::new(resp.into_body().into_reader());
    let streamed = results_of(&read_events(&mut body, |e| {
        e.iter().filter(|e| e.event == "result").count() >= 3
    }));
    svc.request("POST", "/api/v1/pipeline/stop", None, &[]);
    let latest = svc.get_json("/api/v1/results/latest");
    let (run, seq) = key(&latest);
    let logged = wait_for("the latest result in the log", || {
        let p = svc.get_json(&format!("/api/v1/results?after={run}:{}&limit=1", seq - 1));
        p["results"]
            .get(0)
            .filter(|r| key(r) == (run, seq))
            .cloned()
            .ok_or(p.to_string())
    });
    // The latest result is the logged record, with the old names kept one version.
    let mut trimmed = latest.clone();
    let old_top5 = trimmed.as_object_mut().unwrap().remove("top5");
    let old_ok = trimmed["frame"]
        .as_object_mut()
        .unwrap()
        .remove("checksum_ok");
    assert_eq!(trimmed, logged, "latest = the logged record");
    assert_eq!(old_top5.as_ref(), Some(&logged["top"]), "deprecated top5");
    assert_eq!(old_ok, Some(json!(true)), "deprecated frame.checksum_ok");
    assert_eq!(logged["v"], 2);
    // frame.bytes is the frame's size: the 64-byte header and 451 x 300 RGB pixels;
    // the DMA moved the slot's length.
    assert_eq!(logged["frame"]["bytes"], 64 + 451 * 300 * 3, "{logged}");
    assert!(logged["frame"]["dma_bytes"].as_u64().unwrap() >= 64 + 451 * 300 * 3);
    // Each streamed result is the logged one, its id its key.
    for (id, r) in &streamed {
        assert_eq!(id, &format!("{}:{}", r["run"], r["seq"]));
        let l = svc.get_json(&format!("/api/v1/results/{}/{}", r["run"], r["seq"]));
        assert_eq!(&l, r, "the stream's record is the logged one");
    }
}

#[test]
fn the_results_stream_resumes_after_its_last_event_id() {
    let svc = Service::start(&replay("chelsea.png"));
    svc.wait_frames_above(3);
    let open = |headers: &[(&str, &str)], query: &str| {
        let mut req = svc
            .agent()
            .get(&svc.url(&format!("/api/v1/results/stream{query}")));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        BufReader::new(req.call().unwrap().into_body().into_reader())
    };
    let mut body = open(&[], "");
    let first = results_of(&read_events(&mut body, |e| e.len() >= 5));
    drop(body);
    let (last_id, _) = first.last().unwrap().clone();
    // Away for a second: the results made meanwhile come first, none twice, none left
    // out (the log has them all: compare).
    std::thread::sleep(Duration::from_millis(1200));
    for (headers, query) in [
        (vec![("Last-Event-ID", last_id.as_str())], String::new()),
        (vec![], format!("?after={last_id}")),
    ] {
        let mut body = open(&headers, &query);
        let resumed = results_of(&read_events(&mut body, |e| e.len() >= 40));
        let page = svc.get_json(&format!("/api/v1/results?after={last_id}&limit=20"));
        let want: Vec<String> = page["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| format!("{}:{}", r["run"], r["seq"]))
            .collect();
        let got: Vec<String> = resumed
            .iter()
            .take(want.len())
            .map(|(id, _)| id.clone())
            .collect();
        assert!(want.len() >= 20, "results made while away: {want:?}");
        assert_eq!(got, want, "resumed after {last_id} ({headers:?} {query})");
        let keys: Vec<(u64, u64)> = resumed.iter().map(|(_, r)| key(r)).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "none twice: {keys:?}");
    }
    svc.get("/api/v1/results/stream?after=12")
        .problem(400, "query");
}

/// Every MQTT counter in `m` (status `outputs.mqtt`) is at least the one in `before`.
fn never_less(before: &Value, m: &Value) {
    for k in [
        "connects",
        "queued_total",
        "delivered",
        "dropped_offline",
        "dropped_queue_full",
        "dropped_disabled",
        "alerts_queued",
        "alerts_dropped",
    ] {
        assert!(
            m[k].as_u64() >= before[k].as_u64(),
            "{k} went down: {} -> {}",
            before[k],
            m[k]
        );
    }
}

#[test]
fn mqtt_keeps_its_queue_and_counts_every_result_through_settings_changes() {
    let port = free_port();
    let dead = free_port();
    let mut broker = Broker::new(port, &[]);
    broker.start();
    let sub = Subscriber::start(port, "test/results", "fpgagdr-test-settings");
    std::thread::sleep(Duration::from_millis(300));
    let svc = Service::start(&mqtt_config(port, 1));
    let mut seen = mqtt_status(&svc);
    let mut status = |want: &str, accept: &dyn Fn(&Value) -> bool| -> Value {
        let m = wait_for(want, || {
            let m = mqtt_status(&svc);
            accept(&m).then_some(m.clone()).ok_or(m.to_string())
        });
        never_less(&seen, &m);
        seen = m.clone();
        m
    };
    let patch = |body: Value| {
        let r = svc.request(
            "PATCH",
            "/api/v1/config",
            Some(body.to_string().as_bytes()),
            &[("content-type", "application/merge-patch+json")],
        );
        assert_eq!(r.status, 200, "{}", r.body);
    };
    status("connected", &|m| m["state"] == "connected");
    svc.wait_frames_above(10);
    // A port where no broker listens: results wait in the queue (QoS 1).
    patch(json!({"outputs": {"mqtt": {"port": dead}}}));
    status("an error and results waiting", &|m| {
        m["state"] == "error" && m["queue_depth"].as_u64() >= Some(30)
    });
    // A shorter queue than what waits: the newest are dropped, counted.
    patch(json!({"outputs": {"mqtt": {"queue": 10}}}));
    let m = status("the queue cut to 10", &|m| m["queue_max"] == 10);
    assert!(m["queue_depth"].as_u64() <= Some(10), "{m}");
    assert!(m["dropped_queue_full"].as_u64() >= Some(20), "{m}");
    // The broker's port again: what waited is delivered.
    patch(json!({"outputs": {"mqtt": {"port": port, "queue": 1000}}}));
    status("reconnected and the queue empty", &|m| {
        m["state"] == "connected" && m["queue_depth"] == 0 && m["connects"].as_u64() >= Some(2)
    });
    svc.wait_frames_above(svc.frames_inferred() + 10);
    // Away again, stopped with results waiting, then MQTT turned off: they are counted.
    patch(json!({"outputs": {"mqtt": {"port": dead}}}));
    status("results waiting again", &|m| {
        m["queue_depth"].as_u64() >= Some(5)
    });
    svc.request("POST", "/api/v1/pipeline/stop", None, &[]);
    let waiting = status("the pipeline stopped", &|_| true)["queue_depth"]
        .as_u64()
        .unwrap();
    patch(json!({"outputs": {"mqtt": {"enabled": false}}}));
    let m = status("MQTT off", &|m| m["state"] == "disabled");
    assert_eq!(m["dropped_disabled"], waiting, "{m}");
    assert_eq!(m["queue_depth"], 0, "{m}");
    // Every result of the run was delivered or counted by reason, exactly.
    let run = svc.get_json("/api/v1/results?limit=1")["results"][0]["run"]
        .as_u64()
        .unwrap();
    let log = logged_flushed(&svc, run);
    let dropped = m["dropped_queue_full"].as_u64().unwrap()
        + m["dropped_offline"].as_u64().unwrap()
        + m["dropped_disabled"].as_u64().unwrap();
    // At least what the steps above waited for: 30 waiting, 10 more, 5 waiting again.
    assert!(log.len() >= 45, "{} results logged", log.len());
    let received: BTreeSet<(u64, u64)> = sub
        .lines()
        .iter()
        .map(|l| key(&serde_json::from_str(l).unwrap()))
        .collect();
    let missing: Vec<(u64, u64)> = log
        .iter()
        .map(key)
        .filter(|k| !received.contains(k))
        .collect();
    // Nothing lost uncounted. (A result in flight when the port changed, sent but not
    // yet acknowledged, may have reached the broker and still be counted when it is
    // discarded: counted, never lost; QoS 1 is at least once.)
    let missing = missing.len() as u64;
    assert!(
        missing <= dropped,
        "{missing} results neither on the broker nor counted, {dropped} counted: {m}"
    );
    // The service's own accounting is exact: every result of the run was queued for
    // MQTT, and every queued one is acknowledged by the broker or dropped by reason.
    assert_eq!(m["queued_total"], log.len() as u64, "{m}");
    assert_eq!(
        m["delivered"].as_u64().unwrap() + dropped,
        log.len() as u64,
        "delivered + dropped = queued: {m}"
    );
    assert_eq!(svc.status()["outputs"]["dropped"]["room_full"], 0);
    // The drops by reason in /metrics.
    let metrics = svc.get("/metrics").body;
    for (reason, n) in [
        ("mqtt_queue_full", m["dropped_queue_full"].as_u64().unwrap()),
        ("mqtt_disabled", waiting),
    ] {
        let line = format!("fpgagdr_results_dropped_total{{reason=\"{reason}\"}} {n}");
        assert!(metrics.contains(&line), "{line} not in /metrics");
    }
    promtool_clean(&metrics);
}

#[test]
fn the_openapi_document_declares_each_stream_event_and_its_data() {
    let svc = Service::start(&replay("chelsea.png"));
    let doc = svc.get_json("/openapi.json");
    let resolve = |r: &Value| -> Value {
        let name = r["$ref"]
            .as_str()
            .and_then(|s| s.strip_prefix("#/components/schemas/"))
            .unwrap_or_else(|| panic!("not a component ref: {r}"));
        let s = doc["components"]["schemas"][name].clone();
        assert!(s.is_object(), "{name} is not in the components");
        s
    };
    let events = &doc["paths"]["/api/v1/results/stream"]["get"]["responses"]["200"]["x-sse-events"];
    let result = resolve(&events["result"]["data"]);
    for r in events["alert"]["data"]["oneOf"].as_array().unwrap() {
        resolve(r);
    }
    resolve(&events["dropped"]["data"]);
    let live = &doc["paths"]["/api/v1/stream"]["get"]["responses"]["200"]["x-sse-events"];
    resolve(&live["snapshot"]["data"]["properties"]["batch"]["items"]);
    resolve(&live["ota"]["data"]);
    // The first result event's data is what the schema says: every required field
    // there, no field it does not name.
    svc.wait_frames_above(2);
    let resp = svc
        .agent()
        .get(&svc.url("/api/v1/results/stream"))
        .call()
        .unwrap();
    let mut body = BufReader::new(resp.into_body().into_reader());
    let (_, first) = results_of(&read_events(&mut body, |e| {
        e.iter().any(|e| e.event == "result")
    }))
    .remove(0);
    let props = result["properties"].as_object().unwrap();
    for k in first.as_object().unwrap().keys() {
        assert!(props.contains_key(k), "{k} is not in ResultRecord's schema");
    }
    for k in result["required"].as_array().unwrap() {
        assert!(
            first.get(k.as_str().unwrap()).is_some(),
            "{k} missing: {first}"
        );
    }
}
