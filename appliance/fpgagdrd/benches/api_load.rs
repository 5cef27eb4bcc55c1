//! API and SSE under load while the pipeline runs, on loopback: what the pipeline loses
//! and how fast the API answers. A benchmark, not a test: it prints figures and checks
//! nothing but that requests succeed.
//!
//! ```sh
//! ORT_DYLIB_PATH=$PWD/.deps/onnxruntime/libonnxruntime.so FPGAGDR_DATA_DIR=$PWD/.deps/share \
//!   cargo bench -p fpgagdrd --bench api_load -- [--rate 300] [--secs 10] [--sse 4]
//! ```
//!
//! It starts the real `fpgagdrd` (this build's binary, or `$FPGAGDRD_BIN`) on a free port, replaying the
//! default frames as fast as capture asks (`source.fps` 0, simulated Orin link), and then:
//! after a warm-up of `--secs` with frames flowing, alternates five phases of `--secs`
//! each — idle, load, idle, load, idle — so that a drift of the pipeline's rate (ONNX
//! Runtime warming up, the CPU's clock) shows instead of passing for the load's effect:
//! * idle: the pipeline's frames/s with no client but the counter reads;
//! * load: `--rate` requests/s spread over worker threads, each paced open-loop (a
//!   request's latency counts from its scheduled time, so a client that falls behind is
//!   not hidden: no coordinated omission), cycling through the dashboard's GETs, plus
//!   `--sse` streams read continuously, each reconnecting every 2 s with `Last-Event-ID`.
//!
//! It prints frames/s for each phase and the latency p50/p99/max per endpoint and in all
//! over both load phases (HDR histograms, 3 significant digits).

mod common;

use std::io::{BufRead, BufReader, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::Service;
use hdrhistogram::Histogram;

/// The GETs the dashboard and a scraper make, cycled by every worker.
const ENDPOINTS: [&str; 7] = [
    "/api/v1/status",
    "/api/v1/telemetry",
    "/metrics",
    "/api/v1/config",
    "/api/v1/results/latest",
    "/api/v1/system",
    "/api/v1/telemetry/history?span=60s",
];
const WORKERS: usize = 8;

struct Args {
    rate: f64,
    secs: f64,
    sse: usize,
}

fn args() -> Args {
    let mut a = Args {
        rate: 300.0,
        secs: 10.0,
        sse: 4,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().expect("a value after the flag");
        match k.as_str() {
            "--rate" => a.rate = v().parse().expect("--rate REQ_PER_S"),
            "--secs" => a.secs = v().parse().expect("--secs SECONDS"),
            "--sse" => a.sse = v().parse().expect("--sse STREAMS"),
            _ => {} // cargo bench passes --bench
        }
    }
    a
}

fn start() -> Service {
    let dir = tempfile::tempdir().expect("temp dir");
    common::start(dir, r#"{"source": {"fps": 0}}"#, |_| {})
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into()
}

fn frames_inferred(a: &ureq::Agent, base: &str) -> u64 {
    let v: serde_json::Value = a
        .get(format!("{base}/api/v1/status"))
        .call()
        .expect("GET status")
        .body_mut()
        .read_json()
        .expect("status JSON");
    v["counters"]["frames_inferred"].as_u64().expect("count")
}

/// Frames/s over `secs`, from the service's own counter.
fn fps_over(a: &ureq::Agent, base: &str, secs: f64) -> f64 {
    let (n0, t0) = (frames_inferred(a, base), Instant::now());
    std::thread::sleep(Duration::from_secs_f64(secs));
    let (n1, t1) = (frames_inferred(a, base), Instant::now());
    (n1 - n0) as f64 / (t1 - t0).as_secs_f64()
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("bounds")
}

fn us(h: &Histogram<u64>, q: f64) -> String {
    let v = h.value_at_quantile(q) as f64;
    if v >= 1000.0 {
        format!("{:.2} ms", v / 1000.0)
    } else {
        format!("{v:.0} µs")
    }
}

/// What one load phase measured.
struct Load {
    fps: f64,
    per: Vec<Histogram<u64>>,
    secs: f64,
    errors: u64,
    sse_events: u64,
}

fn load_phase(svc: &Arc<Service>, a: &Args) -> Load {
    let client = agent();
    let stop = Arc::new(AtomicBool::new(false));
    let errors = Arc::new(AtomicU64::new(0));
    let sse_events = Arc::new(AtomicU64::new(0));
    let mut sse = Vec::new();
    for _ in 0..a.sse {
        let (svc, stop, events, errors) = (
            svc.clone(),
            stop.clone(),
            sse_events.clone(),
            errors.clone(),
        );
        sse.push(std::thread::spawn(move || {
            let ag = agent();
            let mut last: Option<String> = None;
            while !stop.load(Ordering::Relaxed) {
                let mut req = ag.get(format!("{}/api/v1/stream", svc.base));
                if let Some(id) = &last {
                    req = req.header("last-event-id", id);
                }
                let Ok(resp) = req.call() else {
                    errors.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                let until = Instant::now() + Duration::from_secs(2);
                let mut lines = BufReader::new(resp.into_body().into_reader()).lines();
                while Instant::now() < until && !stop.load(Ordering::Relaxed) {
                    match lines.next() {
                        Some(Ok(l)) if l.starts_with("id:") => {
                            last = Some(l[3..].trim().to_string());
                            events.fetch_add(1, Ordering::Relaxed);
                        }
                        Some(Ok(_)) => {}
                        _ => break,
                    }
                }
            }
        }));
    }
    let per_worker = Duration::from_secs_f64(WORKERS as f64 / a.rate);
    let load_start = Instant::now();
    let n0 = frames_inferred(&client, &svc.base);
    let mut workers = Vec::new();
    for w in 0..WORKERS {
        let (svc, errors) = (svc.clone(), errors.clone());
        let secs = a.secs;
        workers.push(std::thread::spawn(move || {
            let ag = agent();
            let mut hs: Vec<Histogram<u64>> = ENDPOINTS.iter().map(|_| histogram()).collect();
            // Workers start staggered so the requests spread evenly over each period.
            let start = load_start + per_worker.mul_f64(w as f64 / WORKERS as f64);
            let mut i = 0u32;
            loop {
                let due = start + per_worker * i;
                if due.duration_since(load_start).as_secs_f64() >= secs {
                    break;
                }
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
                let e = (w + i as usize) % ENDPOINTS.len();
                match ag.get(format!("{}{}", svc.base, ENDPOINTS[e])).call() {
                    Ok(mut r) if r.status().as_u16() < 400 => {
                        let mut sink = Vec::new();
                        let _ = r.body_mut().as_reader().read_to_end(&mut sink);
                        let took = Instant::now().duration_since(due).as_micros() as u64;
                        hs[e].saturating_record(took.max(1));
                    }
                    _ => {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
                i += 1;
            }
            hs
        }));
    }
    let mut per: Vec<Histogram<u64>> = ENDPOINTS.iter().map(|_| histogram()).collect();
    for w in workers {
        for (i, h) in w.join().expect("worker").into_iter().enumerate() {
            per[i].add(&h).expect("same bounds");
        }
    }
    let n1 = frames_inferred(&client, &svc.base);
    let secs = load_start.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    for s in sse {
        s.join().expect("sse reader");
    }
    Load {
        fps: (n1 - n0) as f64 / secs,
        per,
        secs,
        errors: errors.load(Ordering::Relaxed),
        sse_events: sse_events.load(Ordering::Relaxed),
    }
}

fn main() {
    let a = args();
    let svc = Arc::new(start());
    let client = agent();
    // Warm up: model loaded, ring full, ONNX Runtime's threads and arena settled.
    while frames_inferred(&client, &svc.base) < 30 {
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs_f64(a.secs));
    let mut idle = vec![fps_over(&client, &svc.base, a.secs)];
    let mut loads = Vec::new();
    for _ in 0..2 {
        loads.push(load_phase(&svc, &a));
        idle.push(fps_over(&client, &svc.base, a.secs));
    }

    let mut per: Vec<Histogram<u64>> = ENDPOINTS.iter().map(|_| histogram()).collect();
    for l in &loads {
        for (i, h) in l.per.iter().enumerate() {
            per[i].add(h).expect("same bounds");
        }
    }
    let mut all = histogram();
    for h in &per {
        all.add(h).expect("same bounds");
    }
    let secs: f64 = loads.iter().map(|l| l.secs).sum();
    let idle_mean = idle.iter().sum::<f64>() / idle.len() as f64;
    let load_mean = loads.iter().map(|l| l.fps).sum::<f64>() / loads.len() as f64;
    let list = |v: &[f64]| {
        v.iter()
            .map(|f| format!("{f:.1}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "api_load: {} GETs in {secs:.1} s ({:.0} req/s, {WORKERS} workers, open-loop) + {} SSE streams ({} events), {} errors",
        all.len(),
        all.len() as f64 / secs,
        a.sse,
        loads.iter().map(|l| l.sse_events).sum::<u64>(),
        loads.iter().map(|l| l.errors).sum::<u64>()
    );
    println!(
        "pipeline frames/s: idle {} (mean {idle_mean:.1}); under load {} (mean {load_mean:.1}); {:+.1} % under load",
        list(&idle),
        list(&loads.iter().map(|l| l.fps).collect::<Vec<_>>()),
        (load_mean / idle_mean - 1.0) * 100.0
    );
    println!("| endpoint | requests | p50 | p99 | max |");
    println!("|---|---|---|---|---|");
    for (e, h) in ENDPOINTS.iter().zip(&per) {
        println!(
            "| `{e}` | {} | {} | {} | {} |",
            h.len(),
            us(h, 0.5),
            us(h, 0.99),
            us(h, 1.0)
        );
    }
    println!(
        "| all | {} | {} | {} | {} |",
        all.len(),
        us(&all, 0.5),
        us(&all, 0.99),
        us(&all, 1.0)
    );
}
