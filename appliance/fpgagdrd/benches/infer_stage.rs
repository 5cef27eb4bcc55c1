//! The inference stage alone — header check, CRC, preprocessing, batching and the model —
//! fed from a frame ring that is always full of 1 MiB frames already in (GPU) memory, so
//! that neither the simulated card nor capture is what is measured.
//!
//! Each ring entry is filled once through the simulated card (a real C2H of a 1024×1024
//! mono8 test pattern), then every entry the inference thread releases is handed
//! straight back as a new frame (`Supervisor::start_inference_only`). Prints, per case,
//! the inferred frames/s, the mean batch, and p50 / p99 / max of the preprocess,
//! inference and end-to-end stages, as one Markdown table row.
//!
//! ```text
//! FPGAGDR_STAGE_CASES=fp32:1,fp32:32,fp16:256 cargo bench -p fpgagdrd --bench infer_stage
//! ```
//! Settings (environment): `FPGAGDR_STAGE_CASES` (comma-separated `precision:batch`;
//! default `fp32:1,fp32:8`), `FPGAGDR_BENCH_SECS` (measured seconds per case, 5),
//! `FPGAGDR_STAGE_GRAPHS` (1: CUDA graphs, the default; 0: none). The ring holds twice
//! the batch (at least 8 entries). Needs `ORT_DYLIB_PATH` and `FPGAGDR_DATA_DIR` as the
//! pipeline does.

use std::sync::Arc;
use std::time::{Duration, Instant};

use fpgagdr::PixelFormat;
use fpgagdr::WhenFull;
use fpgagdr_sim::LinkPreset;
use fpgagdrd::cards::CardChoice;
use fpgagdrd::config::{RawConfig, SourceKind};
use fpgagdrd::metrics::Stage;
use fpgagdrd::pipeline::{Shared, Supervisor, prepare};

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("infer_stage: bench");
        return;
    }
    // Warnings from the library and the model (a slow model run, say) on stderr.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("warn"))
        .with_writer(std::io::stderr)
        .init();
    let secs: u64 = std::env::var("FPGAGDR_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let cases = std::env::var("FPGAGDR_STAGE_CASES").unwrap_or_else(|_| "fp32:1,fp32:8".into());
    let graphs = std::env::var("FPGAGDR_STAGE_GRAPHS").map_or(true, |v| v != "0");
    println!(
        "| precision | batch | graphs | inferred frames/s | mean batch | preprocess p50 / p99 µs | inference p50 / p99 / max µs | end-to-end p50 / p99 µs | warm-up s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for case in cases.split(',') {
        let (precision, batch) = case
            .split_once(':')
            .unwrap_or_else(|| panic!("FPGAGDR_STAGE_CASES: {case}: expected precision:batch"));
        let batch: usize = batch.parse().expect("batch");
        let mut config = RawConfig::default();
        config.source.kind = SourceKind::TestPattern;
        config.source.width = 1024;
        config.source.height = 1024;
        config.source.format = PixelFormat::Mono8;
        config.source.fps = 0.0;
        config.card.sim_link = LinkPreset::Off;
        config.ring.when_full = WhenFull::Wait;
        config.ring.entries = (2 * batch).max(8);
        config.inference.max_batch = batch;
        config.inference.cuda_graph = graphs;
        config.inference.precision = serde_json::from_value(serde_json::json!(precision))
            .unwrap_or_else(|e| panic!("{case}: {e}"));
        let config = config.check().expect("a valid config");
        let prepared = match prepare(
            &config,
            &CardChoice::sim(),
            &fpgagdrd::files::Policy::in_data_dir(),
        ) {
            Ok(p) => p,
            Err(e) => {
                println!("| {precision} | {batch} | {graphs} | not run: {e} | | | | | |");
                continue;
            }
        };
        let shared = Arc::new(Shared::default());
        let mut sup = Supervisor::new(shared.clone());
        let t_warm = Instant::now();
        sup.start_inference_only(prepared);
        let warm = t_warm.elapsed().as_secs_f64();
        if let Some(i) = sup.info() {
            eprintln!("{case}: {} ; {}", i.preprocess, i.inference);
        }
        std::thread::sleep(Duration::from_secs(2));
        // Stage histograms from here on only.
        *shared.totals.lock().unwrap() = Default::default();
        let c0 = shared.counters.read();
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_secs(secs));
        let c1 = shared.counters.read();
        let dt = t0.elapsed().as_secs_f64();
        std::thread::sleep(Duration::from_millis(300));
        let fault = shared.fault();
        sup.stop();
        if let Some(f) = fault {
            println!("| {precision} | {batch} | {graphs} | FAILED: {f} | | | | | |");
            continue;
        }
        let inferred = c1.frames_inferred - c0.frames_inferred;
        let batches = (c1.batches_run - c0.batches_run).max(1);
        let totals = shared.totals.lock().unwrap();
        let q = |stage: Stage, p: f64| {
            let i = Stage::ALL.iter().position(|s| *s == stage).unwrap();
            let h = &totals.stages[i];
            if p >= 1.0 {
                h.max() as f64 / 1e3
            } else {
                h.value_at_quantile(p) as f64 / 1e3
            }
        };
        println!(
            "| {precision} | {batch} | {graphs} | {:.0} | {:.1} | {:.1} / {:.1} | {:.1} / {:.1} / {:.1} | {:.1} / {:.1} | {warm:.1} |",
            inferred as f64 / dt,
            inferred as f64 / batches as f64,
            q(Stage::Preprocess, 0.5),
            q(Stage::Preprocess, 0.99),
            q(Stage::Inference, 0.5),
            q(Stage::Inference, 0.99),
            q(Stage::Inference, 1.0),
            q(Stage::EndToEnd, 0.5),
            q(Stage::EndToEnd, 0.99),
        );
        assert_eq!(c1.checksum_errors, 0, "{case}: frames failed their check");
    }
}
