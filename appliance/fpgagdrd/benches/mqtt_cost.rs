//! What publishing every result to MQTT costs the pipeline: frames/s with
//! MQTT at QoS 1 to a real local broker against no MQTT, and with the broker up against
//! the broker stopped. A benchmark, not a test: it prints figures and checks nothing
//! but that the service takes each change and that results reach the broker.
//!
//! ```sh
//! ORT_DYLIB_PATH=$PWD/.deps/onnxruntime/libonnxruntime.so FPGAGDR_DATA_DIR=$PWD/.deps/share \
//!   cargo bench -p fpgagdrd --bench mqtt_cost -- [--pairs 8] [--secs 10] [--warmup 3] [--outage-pairs 4]
//! ```
//!
//! It starts Debian's `mosquitto` on a free loopback port (anonymous, no persistence,
//! no subscriber: the broker acknowledges and discards) and the real `fpgagdrd` (this
//! build's binary, or `$FPGAGDRD_BIN`) replaying the default frames as fast as capture
//! asks (`source.fps` 0, simulated Orin link, the default model on the CPU).
//!
//! Part 1, the cost: `--pairs` pairs of phases, A with `outputs.mqtt` on (QoS 1, queue
//! 1000), B with it off, in counterbalanced order (A B, B A, A B, …: a phase that
//! always came first would carry any effect of its position, such as the end of the
//! previous phase, into the ratio). Each phase is one config change of
//! `outputs.mqtt.enabled`, which the running pipeline takes without a restart, so both
//! arms measure one and the same pipeline (pipelines started afresh differ from one
//! another by ±25 % here, which swamped the cost), `--warmup` s (in A, after the
//! connection), then `--secs` s measured: the pipeline's frames/s from its own counter
//! (`counters.frames_inferred`), in A the results the broker acknowledged per second
//! (`outputs.mqtt.delivered`), and the CPU time the service (all its threads) and the
//! broker took per inferred frame (`/proc/PID/stat`). Two figures, each the ratio A / B
//! of each pair, summarised as the geometric mean with a 95 % Student-t interval over
//! the pairs' log ratios (pairing cancels the drift of a shared machine that falls on
//! both phases of a pair alike): frames/s, which on a shared 2-core machine moves by
//! about ±10 % from run to run, and CPU per frame (service + broker), the resource MQTT
//! costs. And a third, with no ratio in it: MQTT's own CPU in the A phases, the
//! service's MQTT client thread (`fpgagdr-mqtt`, `/proc/PID/task/*/stat`) and the broker,
//! per result and as a share of all the CPU the service took per frame. The service's
//! threads take whatever CPU the two cores have (the model's pool waits by spinning), so
//! CPU per frame moves with frames/s; the third figure is the direct account.
//!
//! Part 2, the outage: MQTT on (QoS 1), `--outage-pairs` pairs of phases, the broker up
//! (connected, `--warmup` s after it came back so the resent queue is out) against the
//! broker stopped (SIGTERM; `--warmup` s after it went); same counters, the same
//! interval for the ratio stopped / up, and the results counted as dropped meanwhile.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Service, TOKEN};
use serde_json::{Value, json};

/// The bench's flags (`cargo bench -p fpgagdrd --bench mqtt_cost -- --flag V`).
#[derive(clap::Parser)]
struct Args {
    /// Interleaved pairs of runs, MQTT off and on.
    #[arg(long, default_value_t = 8)]
    pairs: usize,
    /// Seconds counted per run.
    #[arg(long, default_value_t = 10.0)]
    secs: f64,
    /// Seconds waited before counting.
    #[arg(long, default_value_t = 3.0)]
    warmup: f64,
    /// Pairs of phases, broker up and stopped.
    #[arg(long, default_value_t = 4)]
    outage_pairs: usize,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn args() -> Args {
    <Args as clap::Parser>::parse()
}

/// Debian's mosquitto on 127.0.0.1:`port`, anonymous, in memory only.
struct Broker {
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

impl Broker {
    fn new() -> Broker {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(
            dir.path().join("mosquitto.conf"),
            format!("listener {port} 127.0.0.1\nallow_anonymous true\n"),
        )
        .expect("write mosquitto.conf");
        Broker {
            dir,
            port,
            child: None,
        }
    }

    fn start(&mut self) {
        // Debian puts it in /usr/sbin, which a user's PATH may lack.
        let bin = ["/usr/sbin/mosquitto", "/usr/bin/mosquitto"]
            .into_iter()
            .find(|p| std::path::Path::new(p).is_file())
            .unwrap_or("mosquitto");
        let child = Command::new(bin)
            .arg("-c")
            .arg(self.dir.path().join("mosquitto.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("mosquitto (apt-get install mosquitto)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "mosquitto did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The broker's process id (0 when it is not running).
    fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

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

struct Client {
    agent: ureq::Agent,
    base: String,
}

impl Client {
    fn status(&self) -> Value {
        let mut r = self
            .agent
            .get(format!("{}/api/v1/status", self.base))
            .call()
            .expect("GET /api/v1/status");
        serde_json::from_str(&r.body_mut().read_to_string().unwrap_or_default())
            .expect("status is JSON")
    }

    fn patch(&self, body: &Value) {
        let mut r = self
            .agent
            .patch(format!("{}/api/v1/config", self.base))
            .header("authorization", &format!("Bearer {TOKEN}"))
            .header("content-type", "application/merge-patch+json")
            .send(body.to_string())
            .expect("PATCH /api/v1/config");
        let status = r.status().as_u16();
        let text = r.body_mut().read_to_string().unwrap_or_default();
        assert_eq!(status, 200, "PATCH {body}: {text}");
    }

    /// Waits (at most 120 s) until `ok` holds for the status.
    fn wait(&self, what: &str, ok: impl Fn(&Value) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let s = self.status();
            if ok(&s) {
                return;
            }
            assert!(Instant::now() < deadline, "waited for {what}: {s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Frames/s of the pipeline, MQTT results acknowledged/s and dropped, and the CPU
    /// ms per inferred frame of the processes `service` and `broker` (0: none), over
    /// `secs`.
    fn measure(&self, secs: f64, service: u32, broker: u32) -> Phase {
        let count = |s: &Value| {
            (
                s["counters"]["frames_inferred"].as_u64().unwrap_or(0),
                s["outputs"]["mqtt"]["delivered"].as_u64().unwrap_or(0),
                s["outputs"]["dropped"]["mqtt_offline"]
                    .as_u64()
                    .unwrap_or(0)
                    + s["outputs"]["dropped"]["mqtt_queue_full"]
                        .as_u64()
                        .unwrap_or(0),
            )
        };
        let cpu = |pid: u32| if pid == 0 { 0.0 } else { common::cpu_s(pid) };
        let mqtt = || common::thread_cpu_s(service, "fpgagdr-mqtt");
        let (c0, b0, m0) = (cpu(service), cpu(broker), mqtt());
        let (t0, a) = (Instant::now(), count(&self.status()));
        std::thread::sleep(Duration::from_secs_f64(secs));
        let (t1, b) = (Instant::now(), count(&self.status()));
        let (c1, b1, m1) = (cpu(service), cpu(broker), mqtt());
        let dt = (t1 - t0).as_secs_f64();
        let frames = b.0.saturating_sub(a.0).max(1) as f64;
        Phase {
            fps: b.0.saturating_sub(a.0) as f64 / dt,
            delivered_per_s: b.1.saturating_sub(a.1) as f64 / dt,
            dropped: b.2.saturating_sub(a.2),
            service_ms: (c1 - c0) * 1e3 / frames,
            broker_ms: (b1 - b0) * 1e3 / frames,
            mqtt_ms: (m1 - m0) * 1e3 / frames,
        }
    }
}

struct Phase {
    fps: f64,
    delivered_per_s: f64,
    dropped: u64,
    /// CPU ms of the service per inferred frame.
    service_ms: f64,
    /// CPU ms of the broker per inferred frame.
    broker_ms: f64,
    /// CPU ms of the service's MQTT client thread (`fpgagdr-mqtt`) per inferred frame.
    mqtt_ms: f64,
}

/// Two-sided 95 % Student-t quantile for `df` degrees of freedom.
fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    T.get(df.wrapping_sub(1)).copied().unwrap_or(1.96)
}

/// The ratios `num[i] / den[i]`: geometric mean and its 95 % interval (Student t over
/// the log ratios), as text.
fn ratio_text(num: &[f64], den: &[f64]) -> String {
    let logs: Vec<f64> = num
        .iter()
        .zip(den)
        .filter(|(n, d)| **n > 0.0 && **d > 0.0)
        .map(|(n, d)| (n / d).ln())
        .collect();
    let n = logs.len();
    if n < 2 {
        return format!("{n} usable pairs: no interval");
    }
    let mean = logs.iter().sum::<f64>() / n as f64;
    let var = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half = t975(n - 1) * (var / n as f64).sqrt();
    let mut sorted: Vec<f64> = logs.iter().map(|l| l.exp()).collect();
    sorted.sort_by(f64::total_cmp);
    format!(
        "{:.3}x (95 % interval {:.3}–{:.3}; pairs' ratios {:.3}–{:.3}; {n} pairs)",
        mean.exp(),
        (mean - half).exp(),
        (mean + half).exp(),
        sorted[0],
        sorted[n - 1]
    )
}

fn main() {
    let a = args();
    let mut broker = Broker::new();
    broker.start();
    let mqtt = json!({"enabled": false, "host": "127.0.0.1", "port": broker.port, "qos": 1,
                      "queue": 1000, "topic": "bench/results", "status_topic": "bench/status",
                      "client_id": "fpgagdr-bench"});
    let config = json!({"source": {"fps": 0}, "outputs": {"mqtt": mqtt}});
    let svc: Service = common::start(
        tempfile::tempdir().expect("temp dir"),
        &config.to_string(),
        |_| {},
    );
    let c = Client {
        agent: ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(120)))
            .build()
            .into(),
        base: svc.base.clone(),
    };
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("mqtt_cost: load average at start {}", load.trim());
    c.wait("the pipeline running", |s| {
        s["pipeline"]["state"] == "running"
    });

    // Part 1: QoS 1 (A) against no MQTT (B), interleaved in counterbalanced order.
    let pid = svc.child.id();
    println!(
        "| pair | order | MQTT QoS 1 frames/s | acknowledged/s | CPU ms/frame, service + broker | no MQTT frames/s | CPU ms/frame | frames/s ratio | CPU ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let (mut on, mut off) = (Vec::new(), Vec::new());
    let (mut on_cpu, mut off_cpu) = (Vec::new(), Vec::new());
    // MQTT's own CPU in each A phase: its client thread and the broker, per frame, and
    // that as a share of all the CPU the service took per frame.
    let mut own = Vec::new();
    for pair in 1..=a.pairs {
        let order = if pair % 2 == 1 {
            [true, false]
        } else {
            [false, true]
        };
        let (mut with, mut without) = (None, None);
        for enabled in order {
            c.patch(&json!({"outputs": {"mqtt": {"enabled": enabled}}}));
            c.wait("the pipeline running (and MQTT connected)", |s| {
                s["pipeline"]["state"] == "running"
                    && (!enabled || s["outputs"]["mqtt"]["state"] == "connected")
            });
            std::thread::sleep(Duration::from_secs_f64(a.warmup));
            let phase = c.measure(a.secs, pid, broker.pid());
            if enabled {
                with = Some(phase);
            } else {
                without = Some(phase);
            }
        }
        let (w, o) = (with.expect("the MQTT phase"), without.expect("the other"));
        let (w_cpu, o_cpu) = (w.service_ms + w.broker_ms, o.service_ms + o.broker_ms);
        println!(
            "| {pair} | {} | {:.2} | {:.2} | {:.2} + {:.3} | {:.2} | {:.2} + {:.3} | {:.3} | {:.3} |",
            if order[0] { "A B" } else { "B A" },
            w.fps,
            w.delivered_per_s,
            w.service_ms,
            w.broker_ms,
            o.fps,
            o.service_ms,
            o.broker_ms,
            w.fps / o.fps,
            w_cpu / o_cpu
        );
        assert!(w.delivered_per_s > 0.0, "results reached the broker");
        on.push(w.fps);
        off.push(o.fps);
        on_cpu.push(w_cpu);
        off_cpu.push(o_cpu);
        own.push((
            w.mqtt_ms + w.broker_ms,
            (w.mqtt_ms + w.broker_ms) / w.service_ms,
        ));
    }
    println!("frames/s, MQTT QoS 1 / no MQTT: {}", ratio_text(&on, &off));
    println!(
        "CPU per frame (service + broker), MQTT QoS 1 / no MQTT: {}",
        ratio_text(&on_cpu, &off_cpu)
    );
    let n = own.len().max(1) as f64;
    let (per_frame, share) = own
        .iter()
        .fold((0.0, 0.0), |(a, b), (f, s)| (a + f / n, b + s / n));
    let (lo, hi) = own.iter().fold((f64::MAX, 0f64), |(lo, hi), (_, s)| {
        (lo.min(*s), hi.max(*s))
    });
    println!(
        "MQTT's own CPU (the client thread fpgagdr-mqtt and the broker), QoS 1: {:.0} µs per \
         result, {:.2} % of the service's CPU per frame (pairs {:.2}–{:.2} %)",
        per_frame * 1e3,
        share * 100.0,
        lo * 100.0,
        hi * 100.0
    );

    // Part 2: the broker up against the broker stopped, MQTT on at QoS 1.
    c.patch(&json!({"outputs": {"mqtt": {"enabled": true}}}));
    println!(
        "| pair | broker up frames/s | acknowledged/s | broker stopped frames/s | dropped while stopped | ratio |"
    );
    println!("|---|---|---|---|---|---|");
    let (mut up, mut down) = (Vec::new(), Vec::new());
    for pair in 1..=a.outage_pairs {
        c.wait("MQTT connected", |s| {
            s["pipeline"]["state"] == "running" && s["outputs"]["mqtt"]["state"] == "connected"
        });
        std::thread::sleep(Duration::from_secs_f64(a.warmup));
        let u = c.measure(a.secs, pid, broker.pid());
        broker.stop();
        c.wait("the loss seen", |s| {
            s["outputs"]["mqtt"]["state"] != "connected"
        });
        std::thread::sleep(Duration::from_secs_f64(a.warmup));
        let d = c.measure(a.secs, pid, 0);
        broker.start();
        println!(
            "| {pair} | {:.2} | {:.2} | {:.2} | {} | {:.3} |",
            u.fps,
            u.delivered_per_s,
            d.fps,
            d.dropped,
            d.fps / u.fps
        );
        up.push(u.fps);
        down.push(d.fps);
    }
    println!(
        "frames/s, broker stopped / broker up: {}",
        ratio_text(&down, &up)
    );
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("mqtt_cost: load average at the end {}", load.trim());
}
