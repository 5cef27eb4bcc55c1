//! The pipeline's maximum frame rate at 1 MiB frames with the link model off, and the
//! simulated card's own ceiling beside it.
//!
//! Runs the real pipeline (SimCard with `sim_link: off`, a 1024×1024 mono8 test pattern
//! produced as fast as capture asks, the default EfficientNet-Lite0 model on the ONNX
//! Runtime that `ORT_DYLIB_PATH` names) for a fixed time under each back-pressure mode and
//! prints frames/s captured and inferred, GB/s, drops and the batch size in use, then
//! p50 / p99 / max of every stage, as Markdown. Where a CUDA driver loads the ring is GPU
//! memory and the frames are checked and preprocessed by CUDA kernels (the header says
//! so). First it measures the simulator's ceiling: one thread rendering a frame and
//! copying it into a ring entry (C2H) as fast as it can, no inference: the pipeline
//! cannot capture faster than that.
//!
//! ```text
//! appliance/scripts/fetch-deps.sh
//! ORT_DYLIB_PATH=$PWD/.deps/onnxruntime/libonnxruntime.so FPGAGDR_DATA_DIR=$PWD/.deps/share \
//!   cargo bench -p fpgagdrd --bench pipeline_fps
//! ```
//! Settings (environment): `FPGAGDR_BENCH_SECS` (10), `FPGAGDR_BENCH_MODES`
//! (`drop_oldest,wait`), `FPGAGDR_BENCH_BATCH` (`inference.max_batch`, 0 = auto),
//! `FPGAGDR_BENCH_RING` (`ring.entries`; default 4, at least twice the batch),
//! `FPGAGDR_BENCH_PRECISION` (`fp32`), `FPGAGDR_BENCH_FPS` (`source.fps`, 0 = as fast
//! as capture asks), `FPGAGDR_BENCH_WAIT_US` (`inference.batch_wait_us`; unset: chosen
//! as frames arrive), `FPGAGDR_BENCH_TARGET_US` (`inference.latency_target_us`; unset:
//! the default), `FPGAGDR_BENCH_LINK` (`card.sim_link`, `off`),
//! `FPGAGDR_BENCH_CHANNELS` (`card.channels`, 1), `FPGAGDR_BENCH_CEILING` (1: measure
//! the simulator's ceiling first; 0: skip).
//! Under drop-oldest, capture never waits, so "captured/s" is the capture side's own
//! ceiling (DMA + hand-off) and "inferred/s" the model's; under wait both equal the
//! slower side. At a fixed `source.fps` the simulated sensor runs free: frames it
//! produced that capture did not take in time are counted as missed, so "offered" is
//! the sensor's rate and every frame offered is captured, missed or dropped. The stage
//! table covers the timed seconds only (the warm-up's samples are taken out).

use std::sync::Arc;
use std::time::{Duration, Instant};

use fpgagdr::WhenFull;
use fpgagdr::{Card, DmaMemory, FrameTrigger, PixelFormat};
use fpgagdr_sim::{LinkPreset, SimCard, SimConfig, SimSensor, TestPattern};
use fpgagdrd::cards::CardChoice;
use fpgagdrd::config::{RawConfig, SourceKind};
use fpgagdrd::metrics::Stage;
use fpgagdrd::pipeline::{Shared, Supervisor, prepare};

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Frames/s of one thread rendering the test pattern and copying it into a ring entry
/// of the memory the pipeline would use, with no inference: the simulated card's
/// ceiling for one capture thread.
fn simulator_ceiling(secs: u64) -> (f64, String) {
    let sim = Arc::new(SimCard::new(SimConfig {
        preset: LinkPreset::Off,
        ..SimConfig::default()
    }));
    let card = Card::from_backend(sim.clone());
    let mut sensor = SimSensor::new(
        sim,
        Box::new(TestPattern::new(PixelFormat::Mono8, 1024, 1024).expect("pattern")),
        0.0,
        0,
    )
    .expect("sensor");
    let align = card.status().alignment as usize;
    let entry = sensor.max_frame_len().div_ceil(align) * align;
    let (kind, _) = fpgagdr::frame_ring_kind();
    let mem = DmaMemory::for_frames(entry, align, kind).expect("ring entry");
    let kind = mem.kind();
    let buf = card.pin(mem).expect("pin");
    let t = Duration::from_secs(1);
    let run = |until: Instant, sensor: &mut SimSensor| {
        let mut n = 0u64;
        while Instant::now() < until {
            let slot = sensor.wait_frame(t).expect("frame");
            card.read_c2h(0, &buf, slot.card_addr, slot.len, t)
                .expect("C2H");
            n += 1;
        }
        n
    };
    run(Instant::now() + Duration::from_secs(1), &mut sensor); // warm-up
    let t0 = Instant::now();
    let n = run(t0 + Duration::from_secs(secs), &mut sensor);
    (
        n as f64 / t0.elapsed().as_secs_f64(),
        kind.as_str().to_string(),
    )
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("pipeline_fps: bench");
        return;
    }
    // Warnings from the library and the model (a slow model run, say) on stderr.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("warn"))
        .with_writer(std::io::stderr)
        .init();
    let secs: u64 = env("FPGAGDR_BENCH_SECS", 10);
    let batch: usize = env("FPGAGDR_BENCH_BATCH", 0);
    let ring: usize = env("FPGAGDR_BENCH_RING", 4usize.max(2 * batch));
    let fps: f64 = env("FPGAGDR_BENCH_FPS", 0.0);
    let wait_us: Option<u64> = std::env::var("FPGAGDR_BENCH_WAIT_US")
        .ok()
        .and_then(|s| s.parse().ok());
    let target_us: Option<u64> = std::env::var("FPGAGDR_BENCH_TARGET_US")
        .ok()
        .and_then(|s| s.parse().ok());
    let link: LinkPreset = serde_json::from_value(serde_json::json!(env(
        "FPGAGDR_BENCH_LINK",
        "off".to_string()
    )))
    .unwrap_or_else(|e| panic!("FPGAGDR_BENCH_LINK: {e}"));
    let channels: u32 = env("FPGAGDR_BENCH_CHANNELS", 1);
    let precision: String = env("FPGAGDR_BENCH_PRECISION", "fp32".to_string());
    let modes: String = env("FPGAGDR_BENCH_MODES", "drop_oldest,wait".to_string());
    if env("FPGAGDR_BENCH_CEILING", 1u8) == 1 {
        let (ceiling, kind) = simulator_ceiling(secs.min(5));
        println!(
            "simulator ceiling: {ceiling:.0} frames/s (one thread: render a 1 MiB test pattern, \
             C2H into a {kind} ring entry, link model off, no inference)"
        );
    }
    for mode in modes.split(',') {
        let when_full: WhenFull = serde_json::from_value(serde_json::json!(mode))
            .unwrap_or_else(|e| panic!("FPGAGDR_BENCH_MODES: {mode}: {e}"));
        let mut config = RawConfig::default();
        config.source.kind = SourceKind::TestPattern;
        config.source.width = 1024;
        config.source.height = 1024;
        config.source.format = PixelFormat::Mono8;
        config.source.fps = fps;
        config.card.sim_link = link;
        config.card.channels = channels;
        config.ring.when_full = when_full;
        config.ring.entries = ring;
        config.inference.max_batch = batch;
        config.inference.batch_wait_us = wait_us;
        if let Some(t) = target_us {
            config.inference.latency_target_us = t;
        }
        config.inference.precision = serde_json::from_value(serde_json::json!(precision))
            .unwrap_or_else(|e| panic!("FPGAGDR_BENCH_PRECISION: {e}"));
        let config = config.check().expect("a valid config");
        let prepared = prepare(&config, &CardChoice::sim(), &fpgagdrd::files::Policy::in_data_dir()).unwrap_or_else(|e| {
            panic!("{e} (run appliance/scripts/fetch-deps.sh and set ORT_DYLIB_PATH / FPGAGDR_DATA_DIR)")
        });
        let shared = Arc::new(Shared::default());
        let mut sup = Supervisor::new(shared.clone());
        sup.start(prepared);
        let describe = |sup: &Supervisor| {
            sup.info().map_or(String::new(), |i| {
                format!(
                    "frame ring {} x {} B in {} ({}); C2H channels {}; link {}; source: {}; \
                     preprocessing: {}; inference: {}; batch wait: {}; GPU memory: {:?}",
                    i.ring.0,
                    i.ring.1,
                    i.memory.as_str(),
                    i.memory_detail,
                    i.channels,
                    link.as_str(),
                    i.source,
                    i.preprocess,
                    i.inference,
                    i.batching,
                    i.gpu_memory
                )
            })
        };
        std::thread::sleep(Duration::from_secs(2)); // warm-up
        // Every stage's samples so far (published every 250 ms), taken out below.
        let before = shared.totals.lock().unwrap().stages.clone();
        let c0 = shared.counters.read();
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_secs(secs));
        let c1 = shared.counters.read();
        let dt = t0.elapsed().as_secs_f64();
        let choice = shared.batch.choice();
        let wait = shared.batch.wait();
        std::thread::sleep(Duration::from_millis(300)); // one more publish of the window
        let fault = shared.fault();
        let info = describe(&sup);
        sup.stop();
        println!(
            "\n### when_full = {mode}, source.fps = {fps}, link {}, {channels} C2H channel(s), {precision}\n\n{info}\n",
            link.as_str()
        );
        if let Some(f) = fault {
            println!("FAILED: {f}\n");
        }
        let inferred = c1.frames_inferred - c0.frames_inferred;
        let batches = (c1.batches_run - c0.batches_run).max(1);
        let d = |f: fn(&fpgagdrd::metrics::CounterValues) -> u64| f(&c1) - f(&c0);
        let captured = d(|c| c.frames_captured);
        let missed = d(|c| c.frames_missed) + d(|c| c.event_queue_overflows);
        let lost = d(|c| c.frames_dropped) + d(|c| c.frames_overrun) + d(|c| c.sequence_errors);
        println!(
            "offered {:.0} frames/s (captured + missed), captured {:.0} frames/s, inferred {:.1} frames/s, \
             {:.3} GB/s C2H, {} missed, {} dropped (back-pressure, checks, overrun, sequence), \
             {} checksum errors, mean batch {:.2}, batch wait {:.0} µs (aim {:?}, limit {:?}, arrival gap {:?}; {})\n",
            (captured + missed) as f64 / dt,
            captured as f64 / dt,
            inferred as f64 / dt,
            d(|c| c.bytes_captured) as f64 / dt / 1e9,
            missed,
            lost,
            c1.checksum_errors,
            inferred as f64 / batches as f64,
            wait.as_secs_f64() * 1e6,
            choice.map(|c| c.aim),
            choice.map(|c| c.limit),
            choice.and_then(|c| c.gap),
            choice.map_or("fixed wait".to_string(), |c| format!(
                "{}: {}",
                c.reason.as_str(),
                c.describe()
            )),
        );
        println!("| stage | p50 µs | p99 µs | max µs | frames |");
        println!("|---|---|---|---|---|");
        let totals = shared.totals.lock().unwrap();
        for ((stage, h), h0) in Stage::ALL.iter().zip(&totals.stages).zip(&before) {
            let mut h = h.clone();
            // The timed seconds only (the counts recorded before them taken out).
            let _ = h.subtract(h0);
            let h = &h;
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
