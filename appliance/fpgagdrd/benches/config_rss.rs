//! The service's resident memory across config changes (it once climbed from
//! about 110 MB to 550 MB over 100 changes and stayed there). A benchmark, not a test: it
//! prints figures and checks nothing but that every change is accepted.
//!
//! ```sh
//! ORT_DYLIB_PATH=$PWD/.deps/onnxruntime/libonnxruntime.so FPGAGDR_DATA_DIR=$PWD/.deps/share \
//!   cargo bench -p fpgagdrd --bench config_rss -- [--changes 100]
//! ```
//!
//! It starts the real `fpgagdrd` (this build's binary, or `$FPGAGDRD_BIN`) with the default
//! config (replay of the default frames at 30 frames/s, simulated Orin link), and applies
//! `--changes` config changes, each of which builds a new pipeline (model, frames, ring)
//! and replaces the running one: `ring.entries` alternates between 4 and 5. After each
//! change it reads `VmRSS` from `/proc/PID/status` (the change's reply has come, so the
//! old pipeline is gone). It prints RSS after the first change and every tenth, the
//! largest, and the last as a share of the first.

mod common;

use common::{Service, TOKEN};
use std::time::Duration;

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("the service's /proc status")
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS")
}

/// The bench's flags (`cargo bench -p fpgagdrd --bench config_rss -- --changes N`).
#[derive(clap::Parser)]
struct Args {
    /// Config changes made, each rebuilding the pipeline.
    #[arg(long, default_value_t = 100)]
    changes: usize,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn start() -> Service {
    let dir = tempfile::tempdir().expect("temp dir");
    common::start(dir, "{}", |_| {})
}

fn main() {
    let changes = <Args as clap::Parser>::parse().changes;
    let svc = start();
    let pid = svc.child.id();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into();
    std::thread::sleep(Duration::from_secs(3));
    let start_rss = rss_kib(pid);
    let mut rows = Vec::new();
    for i in 1..=changes {
        let entries = 4 + i % 2;
        let mut r = agent
            .patch(format!("{}/api/v1/config", svc.base))
            .header("authorization", &format!("Bearer {TOKEN}"))
            .header("content-type", "application/json")
            // Each change is paced like a person at the dashboard, and slower than the
            // service's rate limit for changes (docs/api.md, Limits).
            .send(format!(r#"{{"ring": {{"entries": {entries}}}}}"#))
            .expect("PATCH /api/v1/config");
        let status = r.status().as_u16();
        let body = r.body_mut().read_to_string().unwrap_or_default();
        assert_eq!(status, 200, "change {i}: {body}");
        rows.push((i, rss_kib(pid)));
        std::thread::sleep(Duration::from_millis(150));
    }
    let first = rows[0].1;
    let (max_at, max) = rows.iter().copied().max_by_key(|r| r.1).unwrap();
    let last = rows.last().unwrap().1;
    println!(
        "config_rss: {changes} changes; RSS before the first {:.1} MiB",
        start_rss as f64 / 1024.0
    );
    println!("| after change | RSS MiB |");
    println!("|---|---|");
    for (i, kib) in rows.iter().filter(|(i, _)| *i == 1 || i % 10 == 0) {
        println!("| {i} | {:.1} |", *kib as f64 / 1024.0);
    }
    println!(
        "largest {:.1} MiB (after change {max_at}); last {:.1} MiB = {:+.1} % of the first change's",
        max as f64 / 1024.0,
        last as f64 / 1024.0,
        (last as f64 / first as f64 - 1.0) * 100.0
    );
}
