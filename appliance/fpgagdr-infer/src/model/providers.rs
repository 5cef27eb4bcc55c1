//! Which ONNX Runtime execution providers a session gets, in the order TensorRT, CUDA,
//! CPU, and why each one that was not used was not: the words status shows.
//!
//! Owns: [`Provider`], [`Precision`], [`TensorRtOptions`], [`register`] and the record
//! of what it did ([`Registered`]). Must not: load a model or run one (`mod.rs`).
//!
//! TensorRT is written, not run here (README, "What has run where"): its libraries cannot
//! be obtained on the machines this project is tested on. What is tested is the negative
//! path: the GPU build of ONNX Runtime has the TensorRT provider, loading it fails for want
//! of `libnvinfer`, the reason is kept, and CUDA runs.

use std::path::PathBuf;

use cudarc::driver::CudaStream;
use ort::ep::{ArbitrarilyConfigurableExecutionProvider, ExecutionProvider};
use ort::session::builder::SessionBuilder;
use serde::{Deserialize, Serialize};

/// Which ONNX Runtime execution provider runs the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// The fastest that loads: TensorRT (with CUDA for what TensorRT does not take), else
    /// CUDA, else the CPU; status says which ran and why the others did not.
    #[default]
    Auto,
    /// The CPU provider.
    Cpu,
    /// The CUDA provider; where CUDA cannot run, the model is refused, saying why.
    Cuda,
    /// The TensorRT provider (CUDA for the nodes it does not take); where TensorRT
    /// cannot run, the model is refused, saying why.
    Tensorrt,
}

/// The arithmetic the model runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// 32-bit floats (the model file as it is).
    #[default]
    Fp32,
    /// 16-bit floats on the GPU: TensorRT builds an fp16 engine from the model; the CUDA
    /// provider loads the model's fp16 copy (`<model>.fp16.onnx`, made by
    /// `models/make_fp16.py`). The CPU provider runs fp32 and status says so.
    Fp16,
}

impl Precision {
    /// `"fp32"` or `"fp16"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Fp16 => "fp16",
        }
    }
}

/// TensorRT settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorRtOptions {
    /// Where built engines (and the timing cache) are kept, so a restart does not build
    /// them again (minutes on an Orin).
    pub cache_dir: PathBuf,
    /// Run on this DLA core of an Orin (0 or 1) instead of the GPU; layers the DLA cannot
    /// run fall back to the GPU.
    pub dla_core: Option<u32>,
}

impl Default for TensorRtOptions {
    fn default() -> Self {
        TensorRtOptions {
            cache_dir: PathBuf::from("/var/lib/fpgagdr/tensorrt"),
            dla_core: None,
        }
    }
}

/// Which provider a session runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ran {
    /// TensorRT, with CUDA for the nodes it does not take.
    TensorRt,
    /// CUDA.
    Cuda,
    /// The CPU.
    Cpu,
}

/// What [`register`] did: the provider that will run, and a sentence per provider that
/// was tried and not used.
#[derive(Debug, Clone)]
pub(crate) struct Registered {
    pub(crate) ran: Ran,
    pub(crate) not_used: Vec<String>,
}

/// What a session needs to know to register providers.
pub(crate) struct Wanted<'a> {
    pub(crate) provider: Provider,
    pub(crate) precision: Precision,
    pub(crate) tensorrt: &'a TensorRtOptions,
    /// The model's engine folder ([`super::EngineCache`]); `None` where TensorRT cannot
    /// run.
    pub(crate) engine: Option<&'a super::EngineCache>,
    /// Input name, height, width and largest batch (TensorRT's optimisation profile).
    pub(crate) input: (&'a str, usize, usize, usize),
    /// Capture CUDA graphs (only when the input is bound in GPU memory).
    pub(crate) cuda_graph: bool,
    /// NHWC convolutions in the CUDA provider (`prefer_nhwc`).
    pub(crate) nhwc: bool,
    /// The stream to run on (the preprocessing stream), if any.
    pub(crate) stream: Option<&'a CudaStream>,
}

/// How the CUDA provider picks a convolution algorithm for each new input shape:
/// cuDNN's heuristic by default. ONNX Runtime's own default, `EXHAUSTIVE`, times every
/// algorithm the first time a shape is seen, and on the H200 that stalled the model for
/// 1–4 s on batch sizes met after warm-up (docs/benchmarks.md §8).
/// `FPGAGDR_CUDNN_SEARCH=exhaustive|heuristic|default` overrides it for measurements.
fn conv_search() -> ort::ep::cuda::ConvAlgorithmSearch {
    use ort::ep::cuda::ConvAlgorithmSearch as S;
    match std::env::var("FPGAGDR_CUDNN_SEARCH").as_deref() {
        Ok("exhaustive") => S::Exhaustive,
        Ok("default") => S::Default,
        _ => S::Heuristic,
    }
}

/// Whether the ONNX Runtime loaded has the TensorRT execution provider.
pub(crate) fn tensorrt_available() -> bool {
    matches!(ort::ep::TensorRT::is_available(), Ok(true))
}

/// `name` = `1` → `Some(true)`, `0` → `Some(false)`, else `None`: the measurement
/// switches of the CUDA provider's options (docs/benchmarks.md), never set in service.
pub(crate) fn env_bool(name: &str) -> Option<bool> {
    match std::env::var(name).ok()?.as_str() {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    }
}

/// The ONNX Runtime library path the service loads.
pub(crate) fn runtime_path() -> String {
    std::env::var("ORT_DYLIB_PATH").unwrap_or_else(|_| "libonnxruntime.so".into())
}

/// Registers TensorRT, then CUDA, on `builder` as `wanted` asks; the CPU provider is
/// always there. Errors (the message for `rule execution-provider`) only when
/// `wanted.provider` names a provider that cannot run.
pub(crate) fn register(
    builder: &mut SessionBuilder,
    wanted: &Wanted<'_>,
) -> Result<Registered, String> {
    let mut not_used = Vec::new();
    if wanted.provider == Provider::Cpu {
        return Ok(Registered {
            ran: Ran::Cpu,
            not_used: vec!["GPU providers not tried (inference.provider is cpu)".into()],
        });
    }
    if let fpgagdr::GpuMemory::Absent(why) = fpgagdr::gpu_memory() {
        let why = format!("no CUDA: {why}");
        return match wanted.provider {
            Provider::Auto => Ok(Registered {
                ran: Ran::Cpu,
                not_used: vec![format!("TensorRT and CUDA not used: {why}")],
            }),
            _ => Err(why),
        };
    }
    let mut tried_trt = false;
    if matches!(wanted.provider, Provider::Auto | Provider::Tensorrt) {
        tried_trt = true;
        match register_tensorrt(builder, wanted) {
            Ok(()) => {
                // CUDA takes the nodes TensorRT does not; its failure is not TensorRT's.
                // One provider captures the CUDA graph: TensorRT's (ONNX Runtime allows
                // graph capture on one provider only).
                if let Err(why) = register_cuda(builder, wanted, false) {
                    not_used.push(format!("CUDA (for nodes TensorRT does not take): {why}"));
                }
                return Ok(Registered {
                    ran: Ran::TensorRt,
                    not_used,
                });
            }
            Err(why) if wanted.provider == Provider::Tensorrt => return Err(why),
            Err(why) => not_used.push(format!("TensorRT not used: {why}")),
        }
    }
    match register_cuda(builder, wanted, wanted.cuda_graph) {
        Ok(()) => Ok(Registered {
            ran: Ran::Cuda,
            not_used,
        }),
        Err(why) if wanted.provider == Provider::Cuda => Err(why),
        Err(why) => {
            if !tried_trt {
                not_used.push("TensorRT not tried".into());
            }
            not_used.push(format!("CUDA not used: {why}"));
            Ok(Registered {
                ran: Ran::Cpu,
                not_used,
            })
        }
    }
}

/// The raw stream handle ONNX Runtime takes (`user_compute_stream`).
fn stream_ptr(stream: &CudaStream) -> *mut () {
    stream.cu_stream() as *mut ()
}

/// ONNX Runtime's TensorRT provider options (`OrtTensorRTProviderOptionsV2` keys, as
/// documented with the provider) for `w`, engines kept in `engine`: the engine cache per
/// model and runtime, the timing cache (kernel timings, per GPU and TensorRT, shared by
/// every model) at the cache's root, fp16 when asked, the optimisation profile of the
/// input (batch 1 to the largest batch), CUDA graphs, the DLA core. The compute stream is
/// set apart (a raw pointer).
pub(crate) fn tensorrt_options(
    w: &Wanted<'_>,
    engine: &super::EngineCache,
) -> Vec<(&'static str, String)> {
    let (name, h, wd, max) = w.input;
    let on = |b: bool| if b { "1" } else { "0" }.to_string();
    let mut o = vec![
        ("device_id", "0".to_string()),
        ("trt_engine_cache_enable", on(true)),
        (
            "trt_engine_cache_path",
            engine.dir.to_string_lossy().into_owned(),
        ),
        ("trt_timing_cache_enable", on(true)),
        (
            "trt_timing_cache_path",
            engine.root.to_string_lossy().into_owned(),
        ),
        ("trt_fp16_enable", on(w.precision == Precision::Fp16)),
        ("trt_profile_min_shapes", format!("{name}:1x3x{h}x{wd}")),
        ("trt_profile_opt_shapes", format!("{name}:{max}x3x{h}x{wd}")),
        ("trt_profile_max_shapes", format!("{name}:{max}x3x{h}x{wd}")),
        ("trt_cuda_graph_enable", on(w.cuda_graph)),
    ];
    if let Some(core) = w.tensorrt.dla_core {
        o.push(("trt_dla_enable", on(true)));
        o.push(("trt_dla_core", core.to_string()));
    }
    o
}

fn register_tensorrt(builder: &mut SessionBuilder, w: &Wanted<'_>) -> Result<(), String> {
    match ort::ep::TensorRT::is_available() {
        Ok(true) => {}
        Ok(false) => {
            return Err(format!(
                "the ONNX Runtime at {} has no TensorRT execution provider",
                runtime_path()
            ));
        }
        Err(e) => return Err(e.to_string()),
    }
    let Some(engine) = w.engine else {
        return Err("no engine folder for this model".into());
    };
    if let Err(e) = engine.prepare() {
        return Err(format!(
            "its engine cache {} cannot be created: {e}",
            engine.dir.display()
        ));
    }
    let mut trt = ort::ep::TensorRT::default();
    for (key, value) in tensorrt_options(w, engine) {
        trt = trt.with_arbitrary_config(key, value);
    }
    if let Some(s) = w.stream {
        #[allow(unsafe_code)]
        // SAFETY: the stream is the preprocessing stream, which the `Model` holds (an
        // `Arc`) for as long as its session lives.
        let with_stream = unsafe { trt.with_compute_stream(stream_ptr(s)) };
        trt = with_stream;
    }
    trt.register(builder)
        .map_err(|e| format!("the TensorRT execution provider failed to start: {e}"))
}

fn register_cuda(builder: &mut SessionBuilder, w: &Wanted<'_>, graph: bool) -> Result<(), String> {
    match ort::ep::CUDA::is_available() {
        Ok(true) => {}
        Ok(false) => {
            return Err(format!(
                "the ONNX Runtime at {} has no CUDA execution provider",
                runtime_path()
            ));
        }
        Err(e) => return Err(e.to_string()),
    }
    let mut cuda = ort::ep::CUDA::default()
        .with_device_id(0)
        .with_cuda_graph(graph)
        .with_prefer_nhwc(w.nhwc)
        .with_conv_algorithm_search(conv_search());
    // Switches for measuring the provider's options (docs/benchmarks.md); unset, ONNX
    // Runtime's defaults stand.
    if let Some(on) = env_bool("FPGAGDR_CUDNN_MAX_WORKSPACE") {
        cuda = cuda.with_conv_max_workspace(on);
    }
    if let Some(on) = env_bool("FPGAGDR_CUDA_TF32") {
        cuda = cuda.with_tf32(on);
    }
    if let Some(on) = env_bool("FPGAGDR_CUDA_FUSE_CONV_BIAS") {
        cuda = cuda.with_fuse_conv_bias(on);
    }
    if let Some(s) = w.stream {
        #[allow(unsafe_code)]
        // SAFETY: as in `register_tensorrt`: the model holds the stream.
        let with_stream = unsafe { cuda.with_compute_stream(stream_ptr(s)) };
        cuda = with_stream;
    }
    cuda.register(builder)
        .map_err(|e| format!("the CUDA execution provider failed to start: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensorrt_gets_the_model_s_engine_folder_and_the_shared_timing_cache() {
        let root = tempfile::tempdir().unwrap();
        let engine = super::super::EngineCache::new(root.path(), b"model", "ort-x-trt10.3.0");
        let trt = TensorRtOptions {
            cache_dir: root.path().to_path_buf(),
            dla_core: Some(1),
        };
        let w = Wanted {
            provider: Provider::Auto,
            precision: Precision::Fp16,
            tensorrt: &trt,
            engine: Some(&engine),
            input: ("images", 224, 224, 8),
            cuda_graph: false,
            nhwc: false,
            stream: None,
        };
        let o: std::collections::BTreeMap<_, _> =
            tensorrt_options(&w, &engine).into_iter().collect();
        assert_eq!(o["trt_engine_cache_enable"], "1");
        assert_eq!(o["trt_engine_cache_path"], engine.dir.to_string_lossy());
        assert!(o["trt_engine_cache_path"].contains(&engine.digest));
        assert_eq!(o["trt_timing_cache_enable"], "1");
        assert_eq!(o["trt_timing_cache_path"], root.path().to_string_lossy());
        assert_eq!(o["trt_fp16_enable"], "1");
        assert_eq!(o["trt_profile_min_shapes"], "images:1x3x224x224");
        assert_eq!(o["trt_profile_max_shapes"], "images:8x3x224x224");
        assert_eq!(o["trt_dla_core"], "1");
        // Every key is one of ONNX Runtime's TensorRT provider options.
        for k in o.keys() {
            assert!(k == &"device_id" || k.starts_with("trt_"), "{k}");
        }
    }
}
