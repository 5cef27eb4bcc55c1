//! The pipeline's maximum frame rate at 1 MiB frames with the link model off.
//!
//! Runs the real pipeline (SimCard with `sim_link: off`, a 1024×1024 mono8 test pattern
//! produced as fast as capture asks, the default EfficientNet-Lite0 model on ONNX
//! Runtime's CPU provider) for a fixed time under each back-pressure mode and prints
//! frames/s captured and inferred, GB/s and drops, then p50 / p99 / max of every stage,
//! as Markdown. Where a CUDA driver loads the ring is GPU memory and the frames are
//! checked and preprocessed by CUDA kernels (the header says so).
//!
//! ```text
//! appliance/scripts/fetch-deps.sh
//! ORT_DYLIB_PATH=$PWD/.deps/onnxruntime/libonnxruntime.so FPGAGDR_DATA_DIR=$PWD/.deps/share \
//!   cargo bench -p fpgagdrd --bench pipeline_fps            # FPGAGDR_BENCH_SECS=10 by default
//! ```
//! Under drop-oldest, capture never waits, so "captured/s" is the capture side's own
//! ceiling (DMA + hand-off) and "inferred/s" the model's; under wait both equal the
//! slower side.

use std::sync::Arc;
use std::time::{Duration, Instant};

use fpgagdr::PixelFormat;
use fpgagdr_sim::LinkPreset;
use fpgagdrd::config::{CardChoice, RawConfig, SourceKind};
use fpgagdrd::metrics::Stage;
use fpgagdrd::pipeline::queue::WhenFull;
use fpgagdrd::pipeline::{Shared, Supervisor, prepare};

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("pipeline_fps: bench");
        return;
    }
    let secs: u64 = std::env::var("FPGAGDR_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    for when_full in [WhenFull::DropOldest, WhenFull::Wait] {
        let mut config = RawConfig::default();
        config.source.kind = SourceKind::TestPattern;
        config.source.width = 1024;
        config.source.height = 1024;
        config.source.format = PixelFormat::Mono8;
        config.source.fps = 0.0;
        config.card.sim_link = LinkPreset::Off;
        config.ring.when_full = when_full;
        let config = config.check().expect("a valid config");
        let prepared = prepare(&config, &CardChoice::Sim, &fpgagdrd::files::Policy::in_data_dir()).unwrap_or_else(|e| {
            panic!("{e} (run appliance/scripts/fetch-deps.sh and set ORT_DYLIB_PATH / FPGAGDR_DATA_DIR)")
        });
        let shared = Arc::new(Shared::default());
        let mut sup = Supervisor::new(shared.clone());
        sup.start(prepared);
        let info = sup.info().map_or(String::new(), |i| {
            format!(
                "frame ring in {} ({}); preprocessing: {}",
                i.memory.as_str(),
                i.memory_detail,
                i.preprocess
            )
        });
        std::thread::sleep(Duration::from_secs(2)); // warm-up
        let c0 = shared.counters.read();
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_secs(secs));
        let c1 = shared.counters.read();
        let dt = t0.elapsed().as_secs_f64();
        std::thread::sleep(Duration::from_millis(300)); // one more publish of the window
        sup.stop();
        let wf = serde_json::to_value(when_full).unwrap();
        println!("\n### when_full = {}\n\n{info}\n", wf.as_str().unwrap());
        println!(
            "captured {:.0} frames/s, inferred {:.1} frames/s, {:.3} GB/s C2H, {} dropped, {} checksum errors\n",
            (c1.frames_captured - c0.frames_captured) as f64 / dt,
            (c1.frames_inferred - c0.frames_inferred) as f64 / dt,
            (c1.bytes_captured - c0.bytes_captured) as f64 / dt / 1e9,
            c1.frames_dropped - c0.frames_dropped,
            c1.checksum_errors,
        );
        println!("| stage | p50 µs | p99 µs | max µs | frames |");
        println!("|---|---|---|---|---|");
        let totals = shared.totals.lock().unwrap();
        for (stage, h) in Stage::ALL.iter().zip(&totals.stages) {
            if h.is_empty() {
                continue;
            }
            println!(
                "| {} | {:.1} | {:.1} | {:.1} | {} |",
                stage.as_str(),
                h.value_at_quantile(0.5) as f64 / 1e3,
                h.value_at_quantile(0.99) as f64 / 1e3,
                h.max() as f64 / 1e3,
                h.len()
            );
        }
        assert_eq!(c1.checksum_errors, 0, "frames were damaged on the way");
    }
}
