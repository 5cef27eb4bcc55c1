//! The model alone: the same ONNX file through the same ONNX Runtime, session options,
//! execution provider, stream, input binding and CUDA graphs as the service's inference
//! stage (`Model` as `fpgagdrd` loads it), on a batch of input tensors already in GPU
//! memory, with no frame checked, preprocessed or ranked: the ceiling the inference
//! stage (`cargo bench -p fpgagdrd --bench infer_stage`) is measured against.
//!
//! Two figures per case: one run at a time (queue the run, wait for the stream: what a
//! stage that waits for each batch's results can reach at best) and back to back (eight
//! runs queued, one wait: the GPU never idle between runs, how the PyTorch anchor
//! `appliance/scripts/torch-anchor.py` times its graph replays).
//!
//! ```text
//! ORT_DYLIB_PATH=<GPU ONNX Runtime>/libonnxruntime.so FPGAGDR_DATA_DIR=$PWD/.deps/share \
//!   cargo bench -p fpgagdr-infer --bench engine
//! ```
//! Settings (environment): `FPGAGDR_ENGINE_CASES` (comma-separated `precision:batch`,
//! default `fp32:1,fp32:8,fp32:32,fp32:256,fp16:1,fp16:8,fp16:32,fp16:256`),
//! `FPGAGDR_BENCH_SECS` (seconds per figure, 3), `FPGAGDR_STAGE_GRAPHS` (0: no CUDA
//! graphs), and the CUDA provider's measurement switches (`FPGAGDR_CUDA_NHWC`,
//! `FPGAGDR_CUDNN_SEARCH`, `FPGAGDR_CUDNN_MAX_WORKSPACE`, `FPGAGDR_CUDA_TF32`,
//! `FPGAGDR_CUDA_FUSE_CONV_BIAS`, `FPGAGDR_FP16_GRAPH_PER_SIZE`; docs/benchmarks.md).
//! Prints one Markdown row per case; without a CUDA driver or a GPU ONNX Runtime it says
//! why and exits 0.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use cudarc::driver::DevicePtr;
use fpgagdr_infer::{Model, ModelError, ModelOptions, Precision, Provider, Ran, TensorRtOptions};

fn env<V: std::str::FromStr>(name: &str, default: V) -> V {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("engine: bench");
        return;
    }
    tracing_subscriber_init();
    let Some(ctx) = fpgagdr::cuda_context() else {
        println!("skipped: no CUDA driver here ({:?})", fpgagdr::gpu_memory());
        return;
    };
    let secs: f64 = env("FPGAGDR_BENCH_SECS", 3.0);
    let graphs = std::env::var("FPGAGDR_STAGE_GRAPHS").map_or(true, |v| v != "0");
    let cases = std::env::var("FPGAGDR_ENGINE_CASES")
        .unwrap_or_else(|_| "fp32:1,fp32:8,fp32:32,fp32:256,fp16:1,fp16:8,fp16:32,fp16:256".into());
    let data = PathBuf::from(
        std::env::var_os("FPGAGDR_DATA_DIR").expect("FPGAGDR_DATA_DIR (the folder of models/)"),
    );
    let (model_path, labels) = (
        data.join("models/efficientnet-lite0.onnx"),
        data.join("models/efficientnet-lite0.labels.txt"),
    );
    let trt_cache = std::env::temp_dir().join("fpgagdr-engine-bench-trt");
    println!("device: {}", ctx.name().unwrap_or_default());
    println!(
        "| precision | batch | graphs | one run at a time, frames/s | run p50 / p99 µs | back to back, frames/s | warm-up s |"
    );
    println!("|---|---|---|---|---|---|---|");
    for case in cases.split(',') {
        let (precision, batch) = case
            .split_once(':')
            .unwrap_or_else(|| panic!("FPGAGDR_ENGINE_CASES: {case}: expected precision:batch"));
        let batch: usize = batch.parse().expect("batch");
        let precision = match precision {
            "fp32" => Precision::Fp32,
            "fp16" => Precision::Fp16,
            p => panic!("{case}: precision {p}"),
        };
        let stream = ctx.new_stream().expect("stream");
        // As the service sets them (fpgagdrd's `prepare`): its ring holds twice the
        // batch, so the batch limit is the batch.
        let options = ModelOptions {
            provider: Provider::Auto,
            precision,
            max_batch: batch,
            batch_limit: batch,
            cuda_graph: graphs,
            tensorrt: TensorRtOptions {
                cache_dir: trt_cache.clone(),
                dla_core: None,
            },
            stream: Some(stream.clone()),
            ..ModelOptions::default()
        };
        let name = precision.as_str();
        let mut model = match Model::load(&model_path, &labels, &options) {
            Ok(m) if m.ran() != Ran::Cpu && m.takes_device_input() => m,
            Ok(m) => {
                println!(
                    "| {name} | {batch} | {graphs} | not run: the model runs on the CPU ({}) | | | |",
                    m.provider()
                );
                continue;
            }
            Err(e @ ModelError::Provider(_)) => {
                println!("| {name} | {batch} | {graphs} | not run: {e} | | | |");
                continue;
            }
            Err(e) => panic!("{case}: {e}"),
        };
        eprintln!("{case}: {}", model.provider());
        let (w, h) = model.input_size();
        let chw = 3 * w * h;
        // A batch of tensors in GPU memory: a ramp of values in the normalised range.
        let host: Vec<f32> = (0..batch * chw)
            .map(|i| ((i % 251) as f32 - 125.0) / 128.0)
            .collect();
        let input = stream.clone_htod(&host).expect("input tensors");
        let addr = {
            let (addr, _sync) = input.device_ptr(&stream);
            addr
        };
        let t_warm = Instant::now();
        #[allow(unsafe_code)]
        // SAFETY: `input` holds `batch` tensors of device memory that outlives the model's
        // use of it (both live until the end of this case; the model is dropped first);
        // nothing writes it after the copy above, which `clone_htod` queued on this
        // stream, the model's.
        unsafe { model.warm_up_device(addr) }.expect("warm-up");
        let warm = t_warm.elapsed().as_secs_f64();
        // One run at a time.
        let mut runs = Vec::new();
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs_f64(secs) {
            let t = Instant::now();
            #[allow(unsafe_code)]
            // SAFETY: as for the warm-up.
            unsafe { model.run_model_only(addr, batch, true) }.expect("run");
            runs.push(t.elapsed().as_secs_f64() * 1e6);
        }
        let one = runs.len() as f64 * batch as f64 / t0.elapsed().as_secs_f64();
        runs.sort_by(f64::total_cmp);
        let q = |p: f64| runs[((runs.len() - 1) as f64 * p).round() as usize];
        // Back to back: eight runs queued, one wait.
        let mut n = 0usize;
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs_f64(secs) {
            for _ in 0..8 {
                #[allow(unsafe_code)]
                // SAFETY: as for the warm-up; the runs only read `input`.
                unsafe { model.run_model_only(addr, batch, false) }.expect("run");
            }
            model.synchronize().expect("synchronize");
            n += 8;
        }
        let b2b = n as f64 * batch as f64 / t0.elapsed().as_secs_f64();
        println!(
            "| {name} | {batch} | {graphs} | **{one:.0}** | {:.1} / {:.1} | **{b2b:.0}** | {warm:.1} |",
            q(0.5),
            q(0.99)
        );
        drop(model);
        drop(input);
    }
}

/// Warnings from the model (a slow run, say) on stderr.
fn tracing_subscriber_init() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("warn"))
        .with_writer(std::io::stderr)
        .init();
}
