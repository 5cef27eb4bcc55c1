//! The step between ring entries and results (`FramePrep`: header check, payload CRC,
//! preprocessing and the model) on a batch of 1 MiB frames in GPU memory, two ways:
//! `finish` (each batch checked, preprocessed and run, then waited for, as the service's
//! inference thread drives it now) and `ahead` (batch k+1 pushed and submitted while
//! batch k runs: its check and preprocessing on a second stream beside the model,
//! `FramePrep::submit` / `collect`). Beside the model alone (`--bench engine`), this says
//! what overlapping the preprocessing with the model buys, without the service's queue
//! and bookkeeping (which `cargo bench -p fpgagdrd --bench infer_stage` includes).
//!
//! The frames: a 1024×1024 mono8 test pattern, written once into 2 × batch ring entries
//! of CUDA device memory through the simulated card (a real C2H each, distinct sequence
//! numbers); each batch reads `batch` of them in turn. Every outcome's header and CRC
//! must check.
//!
//! ```text
//! ORT_DYLIB_PATH=<GPU ONNX Runtime>/libonnxruntime.so FPGAGDR_DATA_DIR=$PWD/.deps/share \
//!   cargo bench -p fpgagdr-infer --bench overlap
//! ```
//! Settings (environment): `FPGAGDR_OVERLAP_CASES` (comma-separated
//! `precision:batch`, default `fp32:32,fp32:256,fp16:32,fp16:256`), `FPGAGDR_BENCH_SECS`
//! (seconds per mode, 3). Prints one Markdown row per case and mode.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fpgagdr::{Card, DmaMemory, FrameTrigger, MemoryKind, PinnedBuffer, PixelFormat};
use fpgagdr_infer::{FramePrep, Model, ModelOptions, Precision, Provider, Pushed, TensorRtOptions};
use fpgagdr_sim::{LinkPreset, SimCard, SimConfig, SimSensor, TestPattern};

fn env<V: std::str::FromStr>(name: &str, default: V) -> V {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Pushes `batch` entries from `ring`, starting at entry `*at`, into `prep`.
fn push_batch(
    prep: &mut FramePrep,
    ring: &[PinnedBuffer],
    lens: &[usize],
    at: &mut usize,
    batch: usize,
) {
    for _ in 0..batch {
        let i = *at % ring.len();
        *at += 1;
        #[allow(unsafe_code)]
        // SAFETY: no C2H into the ring runs once it is filled (before any push).
        let pushed = unsafe { prep.push(&ring[i], lens[i], true) }.expect("push");
        assert_eq!(
            pushed,
            Pushed::Pending,
            "the GPU path reads entries in finish"
        );
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("overlap: bench");
        return;
    }
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("warn"))
        .with_writer(std::io::stderr)
        .init();
    let Some(ctx) = fpgagdr::cuda_context() else {
        println!("skipped: no CUDA driver here ({:?})", fpgagdr::gpu_memory());
        return;
    };
    let secs: f64 = env("FPGAGDR_BENCH_SECS", 3.0);
    let cases = std::env::var("FPGAGDR_OVERLAP_CASES")
        .unwrap_or_else(|_| "fp32:32,fp32:256,fp16:32,fp16:256".into());
    let data = PathBuf::from(std::env::var_os("FPGAGDR_DATA_DIR").expect("FPGAGDR_DATA_DIR"));
    let (model_path, labels) = (
        data.join("models/efficientnet-lite0.onnx"),
        data.join("models/efficientnet-lite0.labels.txt"),
    );
    println!("device: {}", ctx.name().unwrap_or_default());
    println!("| precision | batch | mode | frames/s | batches | frames rejected |");
    println!("|---|---|---|---|---|---|");
    for case in cases.split(',') {
        let (precision, batch) = case.split_once(':').expect("precision:batch");
        let batch: usize = batch.parse().expect("batch");
        let precision = if precision == "fp16" {
            Precision::Fp16
        } else {
            Precision::Fp32
        };
        // The ring: 2 × batch entries of device memory, each filled once by a C2H.
        let sim = Arc::new(SimCard::new(SimConfig {
            preset: LinkPreset::Off,
            ..SimConfig::default()
        }));
        let card = Card::from_backend(sim.clone());
        let pattern = TestPattern::new(PixelFormat::Mono8, 1024, 1024).expect("pattern");
        let mut sensor = SimSensor::new(sim, Box::new(pattern), 0.0, 0).expect("sensor");
        let align = card.status().alignment as usize;
        let entry = sensor.max_frame_len().div_ceil(align) * align;
        let t = Duration::from_secs(1);
        let mut lens = Vec::new();
        let ring: Vec<PinnedBuffer> = (0..2 * batch)
            .map(|_| {
                let buf = card
                    .pin(DmaMemory::cuda(entry, MemoryKind::CudaDevice).expect("device memory"))
                    .expect("pin");
                let slot = sensor.wait_frame(t).expect("frame");
                card.read_c2h(0, &buf, slot.card_addr, slot.len, t)
                    .expect("C2H");
                lens.push(slot.len as usize);
                buf
            })
            .collect();
        let stream = ctx.new_stream().expect("stream");
        let options = ModelOptions {
            provider: Provider::Auto,
            precision,
            max_batch: batch,
            batch_limit: batch,
            tensorrt: TensorRtOptions {
                cache_dir: std::env::temp_dir().join("fpgagdr-overlap-bench-trt"),
                dla_core: None,
            },
            stream: Some(stream),
            ..ModelOptions::default()
        };
        let mut model = Model::load(&model_path, &labels, &options).expect("model");
        let (mut prep, how) = FramePrep::new(MemoryKind::CudaDevice, entry, &model);
        eprintln!("{case}: {how}; {}", model.provider());
        prep.warm_up(&mut model).expect("warm-up");
        if !prep.queues_ahead(&model) {
            println!("| {case} | | not run: batches cannot be queued ahead here | | | |");
            continue;
        }
        prep.prepare_ahead(&model).expect("lanes");
        let name = precision.as_str();
        for mode in ["finish", "ahead"] {
            let mut at = 0usize;
            let (mut frames, mut batches, mut rejected) = (0usize, 0usize, 0usize);
            let mut count = |outcomes: &[fpgagdr_infer::FrameOutcome]| {
                rejected += outcomes.iter().filter(|o| o.header.is_err()).count();
                outcomes.len()
            };
            // Half a second of warm-up, then the timed part.
            let mut t0 = Instant::now();
            let mut warm = true;
            loop {
                if warm && t0.elapsed() > Duration::from_millis(500) {
                    warm = false;
                    t0 = Instant::now();
                    (frames, batches) = (0, 0);
                }
                if !warm && t0.elapsed() > Duration::from_secs_f64(secs) {
                    break;
                }
                push_batch(&mut prep, &ring, &lens, &mut at, batch);
                if mode == "finish" {
                    let (outcomes, _) = prep.finish(&mut model, true).expect("finish");
                    frames += count(outcomes);
                    batches += 1;
                } else {
                    prep.submit(&mut model, true).expect("submit");
                    if prep.in_flight() == 2 {
                        let (outcomes, _) = prep
                            .collect(&mut model)
                            .expect("in flight")
                            .expect("collect");
                        frames += count(outcomes);
                        batches += 1;
                    }
                }
            }
            let fps = frames as f64 / t0.elapsed().as_secs_f64();
            while let Some(done) = prep.collect(&mut model) {
                done.expect("collect");
            }
            println!("| {name} | {batch} | {mode} | **{fps:.0}** | {batches} | {rejected} |");
            assert_eq!(rejected, 0, "{case} {mode}: frames failed their check");
        }
    }
}
