//! MQTT over TLS, on the real binary with the real model and frames, against
//! Debian's real `mosquitto` with a TLS listener on a free loopback port. The CA and
//! the broker's certificate are made by the test with Debian's `openssl` (`./test.sh`
//! installs both): every result arrives over TLS with the content the results log
//! holds; a CA that did not sign the broker's certificate is refused with an error in
//! status naming `rule mqtt-tls`, the pipeline running on and every result counted;
//! a CA file outside the data directory and every `--cert-root` is refused when set.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Service, replay, wait_for};
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
    panic!(
        "{cmd} is not installed: apt-get install mosquitto mosquitto-clients openssl (./test.sh does)"
    );
}

/// Runs Debian's `openssl` in `dir`; panics with its output when it fails.
fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new(need("openssl"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA in `dir`: `<name>.key` and its self-signed certificate `<name>.pem`
/// (P-256, basicConstraints CA:TRUE from OpenSSL's defaults for `req -x509`).
fn make_ca(dir: &Path, name: &str) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &format!("/CN=fpgagdr test {name}"),
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.pem"),
        ],
    );
}

/// The broker's key `server.key` and certificate `server.pem` in `dir`, signed by the
/// CA `ca` there, for 127.0.0.1 and localhost.
fn make_server_cert(dir: &Path, ca: &str) {
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ],
    );
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=critical,CA:FALSE\n\
         keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            &format!("{ca}.pem"),
            "-CAkey",
            &format!("{ca}.key"),
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "server.ext",
            "-out",
            "server.pem",
        ],
    );
}

/// Debian's mosquitto with one TLS listener on 127.0.0.1:`port`, its certificate in
/// `certs` (server.pem, server.key, signed by `ca.pem`), anonymous clients allowed.
struct TlsBroker {
    dir: tempfile::TempDir,
    child: Child,
}

impl TlsBroker {
    fn start(port: u16, certs: &Path) -> TlsBroker {
        let dir = tempfile::tempdir().unwrap();
        // Started as root, mosquitto drops to its own user: it must read its key and
        // write its log here.
        use std::os::unix::fs::PermissionsExt;
        for d in [dir.path(), certs] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
        }
        for f in ["ca.pem", "server.pem", "server.key"] {
            std::fs::set_permissions(certs.join(f), std::fs::Permissions::from_mode(0o644))
                .unwrap();
        }
        let conf = format!(
            "listener {port} 127.0.0.1\ncafile {c}/ca.pem\ncertfile {c}/server.pem\n\
             keyfile {c}/server.key\nallow_anonymous true\nlog_dest file {d}/log\n",
            c = certs.display(),
            d = dir.path().display()
        );
        std::fs::write(dir.path().join("mosquitto.conf"), conf).unwrap();
        let child = Command::new(need("mosquitto"))
            .arg("-c")
            .arg(dir.path().join("mosquitto.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for("mosquitto to listen", || {
            std::net::TcpStream::connect(("127.0.0.1", port))
                .map(drop)
                .map_err(|e| e.to_string())
        });
        TlsBroker { dir, child }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }
}

impl Drop for TlsBroker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `mosquitto_sub` over TLS (checking the broker against `ca`) on `topic`, QoS 1,
/// collecting payloads.
struct Subscriber {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Subscriber {
    fn start(port: u16, ca: &Path, topic: &str) -> Subscriber {
        let mut child = Command::new(need("mosquitto_sub"))
            .args(["-h", "localhost", "-p", &port.to_string(), "-t", topic])
            .arg("--cafile")
            .arg(ca)
            .args(["-q", "1", "-i", "fpgagdr-tls-sub"])
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
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn mqtt_status(svc: &Service) -> Value {
    svc.status()["outputs"]["mqtt"].clone()
}

fn key(r: &Value) -> (u64, u64) {
    (r["run"].as_u64().unwrap(), r["seq"].as_u64().unwrap())
}

/// `outputs.results` once the results room has taken everything the stopped pipeline
/// made (two readings a little apart agree).
fn settled_results(svc: &Service) -> u64 {
    wait_for("the results room to settle", || {
        let a = svc.status()["outputs"]["results"].as_u64().unwrap();
        std::thread::sleep(Duration::from_millis(500));
        let b = svc.status()["outputs"]["results"].as_u64().unwrap();
        (a == b).then_some(b).ok_or(format!("{a} then {b}"))
    })
}

/// Every result of run `run` in the results log.
fn logged(svc: &Service, run: u64) -> Vec<Value> {
    let mut out = Vec::new();
    let mut after = format!("{}:0", run - 1);
    loop {
        let page = svc.get_json(&format!("/api/v1/results?after={after}&limit=1000"));
        let rs = page["results"].as_array().unwrap().clone();
        out.extend(rs.iter().filter(|r| r["run"] == json!(run)).cloned());
        if !page["more"].as_bool().unwrap() || rs.is_empty() {
            return out;
        }
        after = page["next"].as_str().unwrap().to_string();
    }
}

fn patch(svc: &Service, body: Value) -> common::Reply {
    svc.request(
        "PATCH",
        "/api/v1/config",
        Some(body.to_string().as_bytes()),
        &[],
    )
}

#[test]
fn mqtt_over_tls_delivers_every_result_and_a_wrong_ca_is_refused_and_counted() {
    // The broker's CA (`ca`), a CA that signed nothing of the broker's (`other-ca`);
    // both lie in the service's --cert-root.
    let certs = tempfile::tempdir().unwrap();
    make_ca(certs.path(), "ca");
    make_ca(certs.path(), "other-ca");
    make_server_cert(certs.path(), "ca");
    let port = free_port();
    let broker = TlsBroker::start(port, certs.path());
    let sub = Subscriber::start(port, &certs.path().join("ca.pem"), "tls/results");
    std::thread::sleep(Duration::from_millis(300));

    let mut config = replay("chelsea.png");
    config["source"]["fps"] = json!(30);
    config["outputs"] = json!({"mqtt": {
        "enabled": true, "host": "127.0.0.1", "port": port, "qos": 1, "tls": true,
        "ca_file": certs.path().join("ca.pem"),
        "topic": "tls/results", "status_topic": "tls/status", "client_id": "fpgagdr-tls",
    }});
    let cert_root = certs.path().to_str().unwrap();
    let svc = Service::start_with_args(
        Some(&serde_json::to_string_pretty(&config).unwrap()),
        &["--cert-root", cert_root],
    );
    wait_for("MQTT connected over TLS", || {
        let m = mqtt_status(&svc);
        (m["state"] == "connected")
            .then_some(())
            .ok_or(format!("{m}; broker log:\n{}", broker.log()))
    });
    svc.wait_frames_above(20);
    let r = svc.request("POST", "/api/v1/pipeline/stop", None, &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    settled_results(&svc);

    // Every result of the run arrived over TLS, as the log holds it.
    let run = svc.get_json("/api/v1/results?limit=1")["results"][0]["run"]
        .as_u64()
        .unwrap();
    let log = logged(&svc, run);
    assert!(log.len() > 20, "{} results logged", log.len());
    let got = wait_for("every logged result over TLS", || {
        let got: Vec<Value> = sub
            .lines()
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let keys: BTreeSet<(u64, u64)> = got.iter().map(key).collect();
        let missing = log.iter().filter(|r| !keys.contains(&key(r))).count();
        (missing == 0)
            .then_some(got)
            .ok_or(format!("{missing} of {} missing", log.len()))
    });
    let by_key: BTreeMap<_, _> = log.iter().map(|r| (key(r), r)).collect();
    for m in &got {
        assert_eq!(
            Some(&m),
            by_key.get(&key(m)),
            "the payload is the logged result"
        );
    }
    let m = mqtt_status(&svc);
    assert_eq!(m["delivered"], json!(log.len()), "{m}");
    let received = sub.lines().len();

    // A CA file outside the data directory and every --cert-root: refused, nothing
    // changed (the broker's own CA, copied elsewhere, so only the place is wrong).
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::copy(certs.path().join("ca.pem"), elsewhere.path().join("ca.pem")).unwrap();
    let before = svc.get("/api/v1/config").header("etag").to_string();
    let r = patch(
        &svc,
        json!({"outputs": {"mqtt": {"ca_file": elsewhere.path().join("ca.pem")}}}),
    );
    let p = r.problem(422, "config-apply");
    assert!(
        p["detail"]
            .as_str()
            .is_some_and(|d| d.contains("rule path-confined")),
        "{p}"
    );
    assert!(
        r.field_errors()
            .iter()
            .any(|(f, _)| f == "/outputs/mqtt/ca_file"),
        "{p}"
    );
    assert_eq!(svc.get("/api/v1/config").header("etag"), before);
    assert_eq!(mqtt_status(&svc)["state"], "connected");

    // A CA that did not sign the broker's certificate: the TLS handshake is refused,
    // status says so naming the rule; results are kept (QoS 1) up to the queue, the
    // rest counted as dropped, none delivered, none lost without a count.
    let r = patch(
        &svc,
        json!({"outputs": {"mqtt": {"ca_file": certs.path().join("other-ca.pem"), "queue": 10}}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let m = wait_for("the TLS refusal in status", || {
        let m = mqtt_status(&svc);
        (m["state"] == "error"
            && m["last_error"]
                .as_str()
                .is_some_and(|e| e.contains("rule mqtt-tls")))
        .then_some(m.clone())
        .ok_or(m.to_string())
    });
    eprintln!("wrong CA: {}", m["last_error"]);
    // Counters count since the service started (a settings change resets none): what
    // this phase did is the difference from here.
    let start = settled_results(&svc);
    let before = mqtt_status(&svc);
    let dropped_before = svc.status()["outputs"]["dropped"].clone();
    let r = svc.request("POST", "/api/v1/pipeline/start", None, &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    wait_for("results made while the broker is refused", || {
        let n = svc.status()["outputs"]["results"].as_u64().unwrap();
        (n >= start + 30)
            .then_some(())
            .ok_or(format!("{} so far", n - start))
    });
    assert_eq!(svc.status()["pipeline"]["state"], "running");
    let r = svc.request("POST", "/api/v1/pipeline/stop", None, &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    let made = settled_results(&svc) - start;
    let grew = |m: &Value, k: &str| m[k].as_u64().unwrap() - before[k].as_u64().unwrap();
    let m = wait_for("every result queued or counted as dropped", || {
        let m = mqtt_status(&svc);
        let counted = ["queued_total", "dropped_offline", "dropped_queue_full"]
            .iter()
            .map(|k| grew(&m, k))
            .sum::<u64>();
        (counted == made)
            .then_some(m.clone())
            .ok_or(format!("{counted} of {made} accounted: {m}"))
    });
    assert_eq!(grew(&m, "delivered"), 0, "{m}");
    assert_eq!(grew(&m, "connects"), 0, "{m}");
    assert_eq!(m["queue_max"], 10, "{m}");
    assert!(
        m["queue_depth"].as_u64().unwrap() <= 10,
        "at most the queue waits: {m}"
    );
    assert_eq!(
        m["queue_depth"].as_u64().unwrap(),
        before["queue_depth"].as_u64().unwrap() + grew(&m, "queued_total"),
        "what was queued waits: {m}"
    );
    let dropped = &svc.status()["outputs"]["dropped"];
    let d = |k: &str| dropped[k].as_u64().unwrap() - dropped_before[k].as_u64().unwrap();
    assert_eq!(
        d("mqtt_queue_full") + d("mqtt_offline"),
        made - grew(&m, "queued_total"),
        "{dropped}"
    );
    assert_eq!(sub.lines().len(), received, "nothing reached the broker");
    assert_eq!(
        mqtt_status(&svc)["state"],
        "error",
        "still refused, still saying why"
    );
}
