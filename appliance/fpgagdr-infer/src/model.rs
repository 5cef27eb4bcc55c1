//! The ONNX model: loading through ONNX Runtime (loaded at run time), running it on
//! one input tensor, and turning logits into a top-5 with labels.
//!
//! The ONNX Runtime library is found at `ORT_DYLIB_PATH` (the `ort` crate's own
//! variable), else `libonnxruntime.so` through the system loader. [`Provider`] picks
//! ONNX Runtime's CUDA execution provider when the loaded library has it and a CUDA
//! driver is present (then [`Model::classify_device`] takes the input tensor where it
//! lies in GPU memory), its CPU provider otherwise.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::prep::Tensor;

use ort::environment::Environment;
use ort::ep::ExecutionProvider;
use ort::memory::{AllocationDevice, AllocatorType, MemoryInfo, MemoryType};
use ort::session::Session;
use ort::value::{Shape, TensorRef, TensorRefMut, ValueType};
use serde::{Deserialize, Serialize};

/// Which ONNX Runtime execution provider runs the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// CUDA when the loaded ONNX Runtime has its CUDA provider and a CUDA driver is
    /// present, the CPU otherwise (the reason is shown in status).
    #[default]
    Auto,
    /// The CPU provider.
    Cpu,
    /// The CUDA provider, or the model is refused (`rule execution-provider`).
    Cuda,
}

/// Results kept per frame.
pub const TOP_K: usize = 5;
/// Largest input side a model may declare, pixels: its input tensor (3 × H × W float32,
/// 192 MiB at the limit) and the preprocessing buffers are allocated from the declared
/// size, so it is checked before anything is (issue 18: a model declaring 60000 × 60000
/// aborted the service on allocation).
pub const MAX_INPUT_SIDE: usize = 4096;
/// Most classes a model may declare (ImageNet-21k has 21 843).
pub const MAX_CLASSES: usize = 100_000;

/// Why a model cannot be used. Messages name the file and the rule.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// ONNX Runtime could not be loaded.
    #[error(
        "rule onnx-runtime: cannot load ONNX Runtime from {path}: {reason} (set ORT_DYLIB_PATH)"
    )]
    Runtime {
        /// Library path tried.
        path: String,
        /// Loader's reason.
        reason: String,
    },
    /// The model file is missing or ONNX Runtime rejected it.
    #[error("rule model-file: cannot load model {path}: {reason}")]
    File {
        /// Model path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The model's inputs or outputs are not an image classifier's.
    #[error("rule model-shape: model {path}: {reason}")]
    Shape {
        /// Model path.
        path: PathBuf,
        /// Which expectation failed.
        reason: String,
    },
    /// The labels file is missing or does not match the model's classes.
    #[error("rule model-labels: labels {path}: {reason}")]
    Labels {
        /// Labels path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The CUDA execution provider was asked for and cannot run here.
    #[error("rule execution-provider: {0}")]
    Provider(String),
    /// ONNX Runtime failed while running the model.
    #[error("rule inference: {0}")]
    Run(String),
}

/// The ONNX Runtime library path the service will load.
fn runtime_path() -> String {
    std::env::var("ORT_DYLIB_PATH").unwrap_or_else(|_| "libonnxruntime.so".into())
}

fn environment() -> Result<Environment, ModelError> {
    static ENV: OnceLock<Result<Environment, String>> = OnceLock::new();
    let path = runtime_path();
    ENV.get_or_init(|| {
        ort::init_from(&path)
            .map_err(|e| e.to_string())?
            .with_name("fpgagdrd")
            .build()
            .map_err(|e| e.to_string())
    })
    .clone()
    .map_err(|reason| ModelError::Runtime { path, reason })
}

/// One classification: class index, display label, probability (softmax of logits).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Classification {
    /// Class index in the model's output.
    pub index: u32,
    /// Display label (the labels file's line up to its first comma).
    pub label: String,
    /// Probability, 0..=1.
    pub score: f32,
}

/// An image classifier: NCHW float32 input `[1, 3, H, W]`, output `[1, classes]`.
pub struct Model {
    session: Session,
    input: String,
    width: usize,
    height: usize,
    labels: Vec<String>,
    path: PathBuf,
    cuda_input: Option<MemoryInfo<'static>>,
    provider_note: String,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("path", &self.path)
            .field("input", &(self.width, self.height))
            .finish()
    }
}

impl Model {
    /// Loads `path` with its labels file (one label per line, class 0 first); reads
    /// both whole and calls [`Model::from_memory`].
    ///
    /// `threads` bounds ONNX Runtime's intra-op threads (0 = its default); `provider`
    /// picks the execution provider.
    ///
    /// Errors: [`ModelError::Runtime`], [`ModelError::File`], [`ModelError::Shape`]
    /// (including a failed trial run), [`ModelError::Labels`], and
    /// [`ModelError::Provider`] when `provider` is [`Provider::Cuda`] and CUDA cannot run.
    pub fn load(
        path: &Path,
        labels: &Path,
        threads: usize,
        provider: Provider,
    ) -> Result<Model, ModelError> {
        if !path.is_file() {
            let why = if path.exists() {
                "not a regular file"
            } else {
                "no such file"
            };
            return Err(ModelError::File {
                path: path.to_path_buf(),
                reason: why.into(),
            });
        }
        let bytes = std::fs::read(path).map_err(|e| ModelError::File {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        let text = std::fs::read(labels).map_err(|e| ModelError::Labels {
            path: labels.to_path_buf(),
            reason: e.to_string(),
        })?;
        Model::from_memory(&bytes, path, &text, labels, threads, provider)
    }

    /// Builds the model from `bytes` (an ONNX file's contents) and `labels` (a labels
    /// file's: one label per line, class 0 first). `path` and `labels_path` only name
    /// the files in messages and status ([`Model::name`]); nothing is read from them.
    /// The declared input and output sizes are checked against [`MAX_INPUT_SIDE`] and
    /// [`MAX_CLASSES`] before anything is allocated for them.
    ///
    /// Errors: as [`Model::load`].
    pub fn from_memory(
        bytes: &[u8],
        path: &Path,
        labels: &[u8],
        labels_path: &Path,
        threads: usize,
        provider: Provider,
    ) -> Result<Model, ModelError> {
        let env = environment()?;
        let file_err = |reason: String| ModelError::File {
            path: path.to_path_buf(),
            reason,
        };
        // ONNX Runtime's worker threads spin between runs by default; at a camera's
        // frame rate that burns the idle cores (and an Orin's power budget) for nothing.
        let mut builder = Session::builder(&env)
            .map_err(|e| file_err(e.to_string()))?
            .with_intra_op_spinning(false)
            .map_err(|e| file_err(e.to_string()))?
            .with_inter_op_spinning(false)
            .map_err(|e| file_err(e.to_string()))?;
        if threads > 0 {
            builder = builder
                .with_intra_threads(threads)
                .map_err(|e| file_err(e.to_string()))?;
        }
        let (on_cuda, provider_note) = match provider {
            Provider::Cpu => (false, "ONNX Runtime CPU provider (configured)".to_string()),
            Provider::Auto | Provider::Cuda => match register_cuda(&mut builder) {
                Ok(()) => (true, "ONNX Runtime CUDA provider on GPU 0".to_string()),
                Err(why) if provider == Provider::Cuda => return Err(ModelError::Provider(why)),
                Err(why) => (false, format!("ONNX Runtime CPU provider ({why})")),
            },
        };
        let session = builder
            .commit_from_memory(bytes)
            .map_err(|e| file_err(e.to_string()))?;
        let shape_err = |reason: String| ModelError::Shape {
            path: path.to_path_buf(),
            reason,
        };
        let [input] = session.inputs() else {
            return Err(shape_err(format!(
                "has {} inputs, expected 1",
                session.inputs().len()
            )));
        };
        let (width, height) = match input.dtype() {
            ValueType::Tensor { ty, shape, .. }
                if *ty == ort::value::TensorElementType::Float32
                    && shape.len() == 4
                    && shape[1] == 3
                    && shape[2] > 0
                    && shape[3] > 0 =>
            {
                if shape[2] as u64 > MAX_INPUT_SIDE as u64
                    || shape[3] as u64 > MAX_INPUT_SIDE as u64
                {
                    return Err(shape_err(format!(
                        "input {} is declared {shape:?}: over the limit of {MAX_INPUT_SIDE} x \
                         {MAX_INPUT_SIDE} pixels (nothing was allocated for it)",
                        input.name()
                    )));
                }
                (shape[3] as usize, shape[2] as usize)
            }
            other => {
                return Err(shape_err(format!(
                    "input {} is {other:?}, expected float32 [N,3,H,W]",
                    input.name()
                )));
            }
        };
        let classes = match session.outputs() {
            [out] => match out.dtype() {
                ValueType::Tensor { ty, shape, .. }
                    if ty == &ort::value::TensorElementType::Float32
                        && shape.len() == 2
                        && shape[1] > 0 =>
                {
                    if shape[1] as u64 > MAX_CLASSES as u64 {
                        return Err(shape_err(format!(
                            "output is declared {shape:?}: over the limit of {MAX_CLASSES} classes"
                        )));
                    }
                    shape[1] as usize
                }
                other => {
                    return Err(shape_err(format!(
                        "output is {other:?}, expected float32 [N, classes]"
                    )));
                }
            },
            outs => return Err(shape_err(format!("has {} outputs, expected 1", outs.len()))),
        };
        let labels = parse_labels(labels, labels_path, classes)?;
        let mut model = Model {
            input: input.name().to_string(),
            session,
            width,
            height,
            labels,
            path: path.to_path_buf(),
            cuda_input: None,
            provider_note,
        };
        // A model can load and still fail when run (a bad Reshape, an output that is not
        // what its declaration says): one trial run on a grey frame finds out now, before
        // the model replaces a working one. It also warms ONNX Runtime up.
        let grey = vec![0f32; 3 * width * height];
        let mut top = [(0u32, 0f32); TOP_K];
        model
            .classify(&grey, &mut top)
            .map_err(|e| ModelError::Shape {
                path: path.to_path_buf(),
                reason: format!("failed a trial run on a grey frame: {e}"),
            })?;
        if on_cuda {
            model.cuda_input = Some(
                MemoryInfo::new(
                    AllocationDevice::CUDA,
                    0,
                    AllocatorType::Device,
                    MemoryType::Default,
                )
                .map_err(|e| ModelError::Provider(e.to_string()))?,
            );
        }
        Ok(model)
    }

    /// Model input width and height in pixels.
    pub fn input_size(&self) -> (usize, usize) {
        (self.width, self.height)
    }

    /// File name of the model, for status pages.
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// Runs the model on one NCHW tensor (length 3 × H × W) and writes the top
    /// [`TOP_K`] (index, probability) pairs, best first, into `top`.
    pub fn classify(
        &mut self,
        input: &[f32],
        top: &mut [(u32, f32); TOP_K],
    ) -> Result<(), ModelError> {
        let shape = [1usize, 3, self.height, self.width];
        let tensor = TensorRef::from_array_view((shape, input))
            .map_err(|e| ModelError::Run(e.to_string()))?;
        self.run_top_k(tensor.into(), top)
    }

    /// Runs the session on one input value and writes the top [`TOP_K`] into `top`:
    /// the part [`Self::classify`] and [`Self::classify_device`] share.
    fn run_top_k(
        &mut self,
        input: ort::session::SessionInputValue<'_>,
        top: &mut [(u32, f32); TOP_K],
    ) -> Result<(), ModelError> {
        let outputs = self
            .session
            .run(ort::inputs![self.input.as_str() => input])
            .map_err(|e| ModelError::Run(e.to_string()))?;
        let (_, logits) = outputs[0]
            .try_extract_tensor::<f32>()
            .map_err(|e| ModelError::Run(e.to_string()))?;
        top_k(logits, top);
        Ok(())
    }

    /// True when the model runs on ONNX Runtime's CUDA provider and takes its input from
    /// GPU memory ([`Self::classify_device`]).
    pub fn takes_device_input(&self) -> bool {
        self.cuda_input.is_some()
    }

    /// Which execution provider runs the model, and why, for status pages.
    pub fn provider(&self) -> &str {
        &self.provider_note
    }

    /// As [`Self::classify`], with the input tensor in CUDA device memory at `tensor`
    /// (device 0): ONNX Runtime's CUDA provider reads it there, no host copy.
    ///
    /// Errors: [`ModelError::Provider`] when the model is not on the CUDA provider;
    /// [`ModelError::Run`].
    ///
    /// # Safety
    /// `tensor` must point at 3 × H × W f32 of device memory of device 0's primary
    /// context, fully written (the writing stream synchronised), and not written again
    /// until this returns.
    #[allow(unsafe_code)]
    pub unsafe fn classify_device(
        &mut self,
        tensor: u64,
        top: &mut [(u32, f32); TOP_K],
    ) -> Result<(), ModelError> {
        let info = self.cuda_input.as_ref().ok_or_else(|| {
            ModelError::Provider("the model does not run on the CUDA provider".into())
        })?;
        let shape = Shape::new([1i64, 3, self.height as i64, self.width as i64]);
        // SAFETY: the caller's contract: `tensor` holds the 3 × H × W floats `shape`
        // describes, in device memory `info` describes, and outlives this call, which
        // is as long as the tensor value lives.
        let input = unsafe {
            TensorRefMut::<f32>::from_raw(info.clone(), tensor as *mut std::ffi::c_void, shape)
        }
        .map_err(|e| ModelError::Run(e.to_string()))?;
        self.run_top_k(input.into(), top)
    }

    /// Runs the model on a tensor [`crate::FramePrep::run`] built, wherever it lies: on
    /// the host ([`Self::classify`]) or in device memory ([`Self::classify_device`],
    /// which is safe here because the tensor is prep's own, synchronised and borrowed).
    pub fn classify_tensor(
        &mut self,
        tensor: Tensor<'_>,
        top: &mut [(u32, f32); TOP_K],
    ) -> Result<(), ModelError> {
        match tensor {
            Tensor::Host(t) => self.classify(t, top),
            #[allow(unsafe_code)]
            // SAFETY: a `DeviceTensor` is made only by `FramePrep::run` from its own 3 × H
            // × W device tensor (H × W this model's input, as `FramePrep::new` was given),
            // after synchronising the stream that wrote it; the borrow it carries keeps the
            // next run from writing it before this returns.
            Tensor::Device(d) => unsafe { self.classify_device(d.addr(), top) },
        }
    }

    /// The display label of class `index`.
    pub fn label(&self, index: u32) -> &str {
        self.labels
            .get(index as usize)
            .map(String::as_str)
            .unwrap_or("?")
    }
}

/// Registers ONNX Runtime's CUDA provider on `builder`, or says why it cannot run.
fn register_cuda(builder: &mut ort::session::builder::SessionBuilder) -> Result<(), String> {
    if let fpgagdr::GpuMemory::Absent(why) = fpgagdr::gpu_memory() {
        return Err(format!("no CUDA: {why}"));
    }
    let cuda = ort::ep::CUDA::default().with_device_id(0);
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
    cuda.register(builder)
        .map_err(|e| format!("the CUDA execution provider failed to start: {e}"))
}

/// Softmax over `logits`, keeping the best [`TOP_K`] without allocating.
fn top_k(logits: &[f32], top: &mut [(u32, f32); TOP_K]) {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f32 = logits.iter().map(|&l| (l - max).exp()).sum();
    *top = [(0, f32::NEG_INFINITY); TOP_K];
    for (i, &l) in logits.iter().enumerate() {
        let p = (l - max).exp() / sum;
        if p > top[TOP_K - 1].1 {
            let mut at = TOP_K - 1;
            while at > 0 && top[at - 1].1 < p {
                top[at] = top[at - 1];
                at -= 1;
            }
            top[at] = (i as u32, p);
        }
    }
}

fn parse_labels(bytes: &[u8], path: &Path, classes: usize) -> Result<Vec<String>, ModelError> {
    let err = |reason: String| ModelError::Labels {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::str::from_utf8(bytes).map_err(|e| err(format!("not UTF-8 text: {e}")))?;
    let labels: Vec<String> = text
        .lines()
        .map(|l| l.split(',').next().unwrap_or("").trim().to_string())
        .collect();
    if labels.len() != classes {
        return Err(err(format!(
            "has {} lines, the model has {classes} classes",
            labels.len()
        )));
    }
    Ok(labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_orders_by_probability() {
        let logits = [0.0, 5.0, 1.0, 4.0, 3.0, 2.0, -1.0];
        let mut top = [(0, 0.0); TOP_K];
        top_k(&logits, &mut top);
        let idx: Vec<u32> = top.iter().map(|t| t.0).collect();
        assert_eq!(idx, [1, 3, 4, 5, 2]);
        assert!(top.windows(2).all(|w| w[0].1 >= w[1].1));
        let total: f32 = logits.iter().map(|l| (l - 5.0f32).exp()).sum();
        assert!((top[0].1 - 1.0 / total).abs() < 1e-6);
    }

    #[test]
    fn labels_must_match_the_class_count() {
        let p = Path::new("l.txt");
        let text = b"tench, Tinca tinca\ngoldfish\n";
        assert_eq!(parse_labels(text, p, 2).unwrap(), ["tench", "goldfish"]);
        let e = parse_labels(text, p, 3).unwrap_err().to_string();
        assert!(
            e.starts_with("rule model-labels") && e.contains("2 lines"),
            "{e}"
        );
    }
}
