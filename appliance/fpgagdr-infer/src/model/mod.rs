//! The ONNX model: loading through ONNX Runtime (loaded at run time) on the fastest
//! execution provider that loads, running it on a batch of input tensors, and turning
//! each frame's logits into a top-5 with labels.
//!
//! Owns: [`Model`], [`ModelOptions`], [`ModelError`], [`Classification`]; `providers.rs`
//! (which provider, and why not the others), `device.rs` (the input bound where it lies
//! in GPU memory, one CUDA graph per batch size in use).
//! The ONNX Runtime library is found at `ORT_DYLIB_PATH` (the `ort` crate's own
//! variable), else `libonnxruntime.so` through the system loader.
//!
//! Batches: the model's first input dimension is the batch. A model whose batch is
//! dynamic (the default model: `models/dynamic_batch.py`) runs up to
//! [`Model::max_batch`] frames per call; one whose batch is fixed at 1 runs one.

mod costs;
mod device;
mod engine_cache;
mod providers;
mod rank;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use cudarc::driver::CudaStream;
use ort::environment::Environment;
use ort::session::{RunOptions, Session};
use ort::value::{TensorRef, ValueType};

pub use costs::BatchCosts;
pub use engine_cache::{EngineBuild, EngineCache, engine_build};
pub use providers::{Precision, Provider, Ran, TensorRtOptions};
pub use rank::{TOP_K, Top};

use device::DeviceRunner;
use providers::{Wanted, register, runtime_path};

/// Largest batch the service runs (the frame ring must hold twice the batch).
pub const MAX_BATCH: usize = 512;
/// Largest input side a model may declare, pixels: its input tensor (3 × H × W float32,
/// 192 MiB at the limit) and the preprocessing buffers are allocated from the declared
/// size, so it is checked before anything is (a model declaring 60000 × 60000 would
/// abort the service on allocation).
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
    /// The execution provider asked for cannot run here.
    #[error("rule execution-provider: {0}")]
    Provider(String),
    /// `precision: fp16` on the CUDA provider needs the model's fp16 copy.
    #[error("rule precision: {0}")]
    Precision(String),
    /// ONNX Runtime failed while running the model.
    #[error("rule inference: {0}")]
    Run(String),
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

/// How to load and run a model.
#[derive(Debug, Clone)]
pub struct ModelOptions {
    /// ONNX Runtime intra-op threads on the CPU provider (0 = its default).
    pub threads: usize,
    /// Execution provider(s) to try.
    pub provider: Provider,
    /// fp32 or fp16 (GPU providers).
    pub precision: Precision,
    /// Frames per model run: 0 = chosen from the provider and the GPU (1 on the CPU, where
    /// batching does not pay; on a GPU 64, 8 on an integrated one), never more than
    /// `batch_limit` nor what the model's batch dimension allows.
    pub max_batch: usize,
    /// Upper bound on the batch the caller can feed (the frame ring holds 2 × the batch).
    pub batch_limit: usize,
    /// Capture a CUDA graph per batch size when the input is bound in GPU memory.
    pub cuda_graph: bool,
    /// NHWC convolutions in the CUDA provider; `None`: `FPGAGDR_CUDA_NHWC` (0 or 1) if
    /// set, else for fp16 only (tensor cores).
    pub nhwc: Option<bool>,
    /// TensorRT settings.
    pub tensorrt: TensorRtOptions,
    /// The stream the preprocessing kernels run on: the model runs on it too, and takes
    /// its input where preprocessing left it in GPU memory ([`Model::takes_device_input`]).
    /// `None`: the input comes from host memory.
    pub stream: Option<Arc<CudaStream>>,
}

impl Default for ModelOptions {
    fn default() -> Self {
        ModelOptions {
            threads: 0,
            provider: Provider::Auto,
            precision: Precision::Fp32,
            max_batch: 0,
            batch_limit: MAX_BATCH,
            cuda_graph: true,
            nhwc: None,
            tensorrt: TensorRtOptions::default(),
            stream: None,
        }
    }
}

/// An image classifier: NCHW float32 input `[N, 3, H, W]`, output `[N, classes]`.
pub struct Model {
    session: Session,
    input: String,
    width: usize,
    height: usize,
    labels: Vec<String>,
    path: PathBuf,
    file: PathBuf,
    ran: Ran,
    precision: Precision,
    max_batch: usize,
    provider_note: String,
    host_run: RunOptions,
    device: Option<DeviceRunner>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("path", &self.file)
            .field("input", &(self.width, self.height))
            .field("max_batch", &self.max_batch)
            .field("provider", &self.provider_note)
            .finish()
    }
}

/// What the model's first input dimension allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BatchDim {
    Dynamic,
    Fixed(usize),
}

impl Model {
    /// Loads `path` with its labels file (one label per line, class 0 first) as
    /// `options` say.
    ///
    /// Errors: [`ModelError::Runtime`], [`ModelError::File`], [`ModelError::Shape`]
    /// (including a failed trial run, and a batch dimension fixed at more than 1),
    /// [`ModelError::Labels`], [`ModelError::Provider`] when `options.provider` names a
    /// provider that cannot run, [`ModelError::Precision`] when fp16 on the CUDA provider
    /// finds no fp16 copy of the model.
    /// Reads both files whole and calls [`Model::from_memory`].
    pub fn load(path: &Path, labels: &Path, options: &ModelOptions) -> Result<Model, ModelError> {
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
        Model::from_memory(&bytes, path, Some(path), &text, labels, options)
    }

    /// Builds the model from `bytes` (an ONNX file's contents) and `labels` (a labels
    /// file's: one label per line, class 0 first) as `options` say. `path` and
    /// `labels_path` only name the files in messages and status ([`Model::name`]);
    /// `on_disk` is where the model lies, for its fp16 copy beside it (`None`: fp16 on
    /// the CUDA provider is refused). The declared input and output sizes are checked
    /// against [`MAX_INPUT_SIDE`] and [`MAX_CLASSES`] before anything is allocated for
    /// them.
    ///
    /// Errors: as [`Model::load`].
    pub fn from_memory(
        bytes: &[u8],
        path: &Path,
        on_disk: Option<&Path>,
        labels: &[u8],
        labels_path: &Path,
        options: &ModelOptions,
    ) -> Result<Model, ModelError> {
        let env = environment()?;
        let file_err = |p: &Path, reason: String| ModelError::File {
            path: p.to_path_buf(),
            reason,
        };
        // The input's name and size come from the file before a provider is chosen:
        // TensorRT's optimisation profile names them.
        let (input_name, height, width, batch_dim) = {
            let probe = Session::builder(&env)
                .and_then(|mut b| b.commit_from_memory(bytes))
                .map_err(|e| file_err(path, e.to_string()))?;
            input_shape(&probe, path)?
        };
        if let BatchDim::Fixed(n @ 2..) = batch_dim {
            {
                return Err(ModelError::Shape {
                    path: path.to_path_buf(),
                    reason: format!(
                        "its batch dimension is fixed at {n}; only a dynamic batch or 1 is \
                         supported (models/dynamic_batch.py makes it dynamic)"
                    ),
                });
            }
        }
        // TensorRT's optimisation profile covers the batch a GPU provider would run.
        let wanted_batch = resolve_batch(options, Ran::TensorRt, batch_dim);
        let device_input = options.stream.is_some();
        // TensorRT's engines: one folder per model and runtime. While an engine that is not
        // cached yet is built (the session and its trial run below), the build is on record
        // for the service to tell systemd and the status page.
        let engine = engine_folder(options, bytes);
        let build = engine
            .as_ref()
            .filter(|e| !e.cached)
            .map(engine_cache::BuildGuard::start);
        let started = std::time::Instant::now();
        let attempt = |graphs: bool, model: &[u8], file: &Path, precision: Precision| {
            build_session(
                &env,
                model,
                file,
                options,
                &Wanted {
                    provider: options.provider,
                    precision,
                    tensorrt: &options.tensorrt,
                    engine: engine.as_ref(),
                    input: (&input_name, height, width, wanted_batch),
                    cuda_graph: graphs,
                    nhwc: options
                        .nhwc
                        .or_else(nhwc_override)
                        .unwrap_or(precision == Precision::Fp16),
                    stream: options.stream.as_deref(),
                },
            )
        };
        let graphs_wanted = options.cuda_graph && device_input;
        // The fp32 file first (TensorRT lowers it to fp16 itself when asked).
        let asked = options.precision;
        let (mut session, registered, mut notes, graphs) =
            match attempt(graphs_wanted, bytes, path, asked) {
                Ok((s, r)) => (s, r, Vec::new(), graphs_wanted),
                // A graph needs every node on one GPU provider; a model that does not allow
                // it still runs, without graphs.
                Err(ModelError::File { reason, .. })
                    if graphs_wanted && reason.contains("graph") =>
                {
                    let (s, r) = attempt(false, bytes, path, asked)?;
                    (s, r, vec![format!("CUDA graphs not used: {reason}")], false)
                }
                Err(e) => return Err(e),
            };
        // fp16: TensorRT lowers the fp32 model itself; the CUDA provider needs the fp16
        // copy; the CPU runs fp32.
        let mut file = path.to_path_buf();
        let mut precision = options.precision;
        if precision == Precision::Fp16 {
            match registered.ran {
                Ran::TensorRt => {}
                Ran::Cpu => {
                    precision = Precision::Fp32;
                    notes.push("fp16 asked; the CPU provider runs fp32".into());
                }
                Ran::Cuda => {
                    let half = on_disk.map(fp16_path).unwrap_or_else(|| fp16_path(path));
                    if on_disk.is_none() || !half.is_file() {
                        return Err(ModelError::Precision(format!(
                            "fp16 on ONNX Runtime's CUDA provider needs the model's fp16 copy \
                             {} (models/make_fp16.py makes it), which does not exist",
                            half.display()
                        )));
                    }
                    let half_bytes =
                        std::fs::read(&half).map_err(|e| file_err(&half, e.to_string()))?;
                    let (s, _) = attempt(graphs, &half_bytes, &half, Precision::Fp16)?;
                    session = s;
                    file = half;
                }
            }
        }
        let (_, _, _, half_dim) = input_shape(&session, &file)?;
        if half_dim != batch_dim {
            return Err(ModelError::Shape {
                path: file,
                reason: format!(
                    "its batch dimension ({half_dim:?}) differs from {batch_dim:?} in {}",
                    path.display()
                ),
            });
        }
        let classes = output_classes(&session, &file)?;
        let labels = parse_labels(labels, labels_path, classes)?;
        let max_batch = resolve_batch(options, registered.ran, batch_dim);
        let mut host_run = RunOptions::new().map_err(|e| ModelError::Run(e.to_string()))?;
        host_run
            .set("gpu_graph_id", "-1")
            .map_err(|e| ModelError::Run(e.to_string()))?;
        let provider_note = describe(
            registered.ran,
            precision,
            graphs && registered.ran != Ran::Cpu,
            max_batch,
            batch_dim,
            engine.as_ref().filter(|_| registered.ran == Ran::TensorRt),
            &options.tensorrt,
            registered.not_used.iter().chain(&notes),
        );
        let mut model = Model {
            input: input_name,
            session,
            width,
            height,
            labels,
            path: path.to_path_buf(),
            file: file.clone(),
            ran: registered.ran,
            precision,
            max_batch,
            provider_note,
            host_run,
            device: None,
        };
        // A model can load and still fail when run (a bad Reshape, an output that is not
        // what its declaration says): one trial run on a grey frame finds out now, before
        // the model replaces a working one. It also warms ONNX Runtime up.
        let grey = vec![0f32; 3 * width * height];
        let mut top = [[(0u32, 0f32); TOP_K]; 1];
        model
            .classify_batch(&grey, 1, &mut top)
            .map_err(|e| ModelError::Shape {
                path: file.clone(),
                reason: format!("failed a trial run on a grey frame: {e}"),
            })?;
        if let (Some(e), Ran::TensorRt) = (&engine, registered.ran) {
            model.provider_note.push_str(&if e.cached {
                "; TensorRT engine loaded from the cache".to_string()
            } else {
                format!(
                    "; TensorRT engine built in {:.0} s (first run of this model on this runtime), \
                     cached for the next start",
                    started.elapsed().as_secs_f64()
                )
            });
        }
        drop(build);
        if let (Some(stream), true) = (&options.stream, registered.ran != Ran::Cpu) {
            model.device = Some(
                DeviceRunner::new(
                    &model.session,
                    stream.clone(),
                    graphs,
                    precision == Precision::Fp16 && !env_flag("FPGAGDR_FP16_GRAPH_PER_SIZE"),
                    classes,
                    max_batch,
                )
                .map_err(ModelError::Provider)?,
            );
        }
        Ok(model)
    }

    /// Model input width and height in pixels.
    pub fn input_size(&self) -> (usize, usize) {
        (self.width, self.height)
    }

    /// Largest number of frames one run takes.
    pub fn max_batch(&self) -> usize {
        self.max_batch
    }

    /// Which provider runs the model.
    pub fn ran(&self) -> Ran {
        self.ran
    }

    /// The arithmetic in use (fp16 asked on the CPU runs fp32).
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// File name of the model (as configured), for status pages.
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// True when the model runs on a GPU provider and takes its input from GPU memory on
    /// the preprocessing stream ([`Self::classify_batch_device`]).
    pub fn takes_device_input(&self) -> bool {
        self.device.is_some()
    }

    /// The CUDA stream the model runs on when it takes device input.
    pub fn stream(&self) -> Option<&Arc<CudaStream>> {
        self.device.as_ref().map(DeviceRunner::stream)
    }

    /// Which execution provider runs the model, why the others do not, precision, batch
    /// and graphs, for status pages.
    pub fn provider(&self) -> &str {
        &self.provider_note
    }

    /// Runs the model on one NCHW tensor (length 3 × H × W) and writes the top
    /// [`TOP_K`] (index, probability) pairs, best first, into `top`.
    pub fn classify(&mut self, input: &[f32], top: &mut Top) -> Result<(), ModelError> {
        self.classify_batch(input, 1, std::slice::from_mut(top))
    }

    /// Runs the model on `n` NCHW tensors laid one after another in host memory (`input`
    /// holds at least n × 3 × H × W floats) and writes frame i's top [`TOP_K`] into
    /// `tops[i]`.
    ///
    /// Errors: [`ModelError::Run`], including `n` of 0 or over [`Self::max_batch`], or
    /// buffers too short.
    pub fn classify_batch(
        &mut self,
        input: &[f32],
        n: usize,
        tops: &mut [Top],
    ) -> Result<(), ModelError> {
        let chw = 3 * self.height * self.width;
        self.check_batch(n, tops.len())?;
        if input.len() < n * chw {
            return Err(ModelError::Run(format!(
                "{} floats for a batch of {n} tensors of {chw}",
                input.len()
            )));
        }
        let shape = [n, 3, self.height, self.width];
        let tensor = TensorRef::from_array_view((shape, &input[..n * chw]))
            .map_err(|e| ModelError::Run(e.to_string()))?;
        let outputs = self
            .session
            .run_with_options(ort::inputs![self.input.as_str() => tensor], &self.host_run)
            .map_err(|e| ModelError::Run(e.to_string()))?;
        let (_, logits) = outputs[0]
            .try_extract_tensor::<f32>()
            .map_err(|e| ModelError::Run(e.to_string()))?;
        rank::top_k_rows(logits, n, tops).map_err(ModelError::Run)
    }

    fn check_batch(&self, n: usize, tops: usize) -> Result<(), ModelError> {
        if n == 0 || n > self.max_batch || tops < n {
            return Err(ModelError::Run(format!(
                "a batch of {n} frames ({tops} result slots): this model runs 1..={}",
                self.max_batch
            )));
        }
        Ok(())
    }

    /// As [`Self::classify_batch`], with the `n` tensors in CUDA device memory at
    /// `tensor` (device 0), written by work queued on the model's stream
    /// ([`Self::stream`]): ONNX Runtime reads them there after that work, with no host
    /// copy and no synchronisation in between; this returns once the results are in.
    ///
    /// Errors: [`ModelError::Provider`] when the model does not take device input;
    /// [`ModelError::Run`].
    ///
    /// # Safety
    /// `tensor` must point at `n` × 3 × H × W f32 of device memory of device 0's primary
    /// context that stays allocated, is written only by work queued on [`Self::stream`]
    /// before this call, and is not written again until this returns. Bindings are kept
    /// per address: the memory at `tensor` must also stay allocated as long as the model
    /// is used with that address (the caller's tensor buffer, allocated once).
    #[allow(unsafe_code)]
    pub unsafe fn classify_batch_device(
        &mut self,
        tensor: u64,
        n: usize,
        tops: &mut [Top],
    ) -> Result<(), ModelError> {
        self.check_batch(n, tops.len())?;
        let (input, chw) = (self.input.clone(), 3 * self.height * self.width);
        let device = self.device.as_mut().ok_or_else(|| {
            ModelError::Provider("the model does not take its input from GPU memory".into())
        })?;
        // SAFETY: the caller's contract, passed on.
        unsafe { device.run(&mut self.session, &input, tensor, chw, n, tops) }
            .map_err(ModelError::Run)
    }

    /// True when batches in GPU memory can be queued ahead
    /// ([`Self::queue_batch_device`]): the model takes device input and ranks its results
    /// on the GPU.
    pub fn queues_ahead(&self) -> bool {
        self.device.as_ref().is_some_and(DeviceRunner::ranks_on_gpu)
    }

    /// As [`Self::classify_batch_device`], but returns once the run is queued: the
    /// results come back into result slot `slot` (0 or 1), read with
    /// [`Self::batch_results`]. Two batches may be in flight, one per slot; a slot's
    /// results must be read before the slot is used again.
    ///
    /// Errors: [`ModelError::Provider`] when the model cannot queue ahead
    /// ([`Self::queues_ahead`]); [`ModelError::Run`], also for a slot other than 0 or 1.
    ///
    /// # Safety
    /// As [`Self::classify_batch_device`], except that the tensors at `tensor` may be
    /// written again by work queued on [`Self::stream`] after this call (it runs after
    /// the model has read them).
    #[allow(unsafe_code)]
    pub unsafe fn queue_batch_device(
        &mut self,
        tensor: u64,
        n: usize,
        slot: usize,
    ) -> Result<(), ModelError> {
        self.check_batch(n, n)?;
        if slot > 1 {
            return Err(ModelError::Run(format!("result slot {slot}: 0 or 1")));
        }
        let (input, chw) = (self.input.clone(), 3 * self.height * self.width);
        let device = self
            .device
            .as_mut()
            .filter(|d| d.ranks_on_gpu())
            .ok_or_else(|| ModelError::Provider("the model cannot queue batches ahead".into()))?;
        // SAFETY: the caller's contract, passed on.
        unsafe { device.queue_ranked(&mut self.session, &input, tensor, chw, n, slot) }
            .map_err(ModelError::Run)
    }

    /// Waits for the batch of `n` frames queued into result slot `slot` by
    /// [`Self::queue_batch_device`] and writes frame i's top [`TOP_K`] into `tops[i]`.
    ///
    /// Errors: [`ModelError::Provider`], [`ModelError::Run`] as there.
    pub fn batch_results(
        &mut self,
        slot: usize,
        n: usize,
        tops: &mut [Top],
    ) -> Result<(), ModelError> {
        self.check_batch(n, tops.len())?;
        let device = self
            .device
            .as_ref()
            .filter(|d| d.ranks_on_gpu())
            .ok_or_else(|| ModelError::Provider("the model cannot queue batches ahead".into()))?;
        if slot > 1 {
            return Err(ModelError::Run(format!("result slot {slot}: 0 or 1")));
        }
        device.ranked(slot, n, tops).map_err(ModelError::Run)
    }

    /// The model alone on `n` tensors in GPU memory at `tensor`, as
    /// [`Self::classify_batch_device`] runs it (same session, binding, CUDA graph and
    /// stream) but with no result read: queued on [`Self::stream`], waited for when
    /// `wait`. What the `engine` benchmark times: the model's own speed, beside the
    /// inference stage's.
    ///
    /// Errors: as [`Self::classify_batch_device`].
    ///
    /// # Safety
    /// As [`Self::classify_batch_device`].
    #[allow(unsafe_code)]
    pub unsafe fn run_model_only(
        &mut self,
        tensor: u64,
        n: usize,
        wait: bool,
    ) -> Result<(), ModelError> {
        self.check_batch(n, n)?;
        let (input, chw) = (self.input.clone(), 3 * self.height * self.width);
        let device = self.device.as_mut().ok_or_else(|| {
            ModelError::Provider("the model does not take its input from GPU memory".into())
        })?;
        // SAFETY: the caller's contract, passed on.
        unsafe { device.run_only(&mut self.session, &input, tensor, chw, n, wait) }
            .map_err(ModelError::Run)
    }

    /// Waits for all work queued on the model's stream (after
    /// [`Self::run_model_only`] without waiting). Nothing without device input.
    ///
    /// Errors: [`ModelError::Run`] for a CUDA error.
    pub fn synchronize(&self) -> Result<(), ModelError> {
        self.device
            .as_ref()
            .map_or(Ok(()), |d| d.synchronize().map_err(ModelError::Run))
    }

    /// Runs every batch size the device path will use three times (`WARM_UP_RUNS`) on the
    /// tensors at `tensor` (whatever they hold), so that convolution algorithms are
    /// chosen and CUDA graphs captured now, while no other thread of this process uses
    /// the GPU (ONNX Runtime captures in CUDA's global capture mode), then times
    /// `TIMED_ROUNDS` rounds of one run of every size. Does nothing without device input.
    ///
    /// Returns the model's time for each of those sizes: the median of its timed runs,
    /// from queueing to the results in host memory ([`BatchCosts`]); `None` without
    /// device input. The warm-up runs are not timed (the last of them captures the
    /// graph, which the frame path never pays), and the timed runs go round the sizes
    /// rather than size after size, so that a slow spell of the GPU or the host spreads
    /// over every size's runs instead of raising one size's median.
    ///
    /// # Safety
    /// As [`Self::classify_batch_device`] with n = [`Self::max_batch`].
    #[allow(unsafe_code)]
    pub unsafe fn warm_up_device(&mut self, tensor: u64) -> Result<Option<BatchCosts>, ModelError> {
        let (sizes, padded) = match &self.device {
            Some(d) => (d.run_sizes(self.max_batch), d.pads_batches()),
            None => return Ok(None),
        };
        let mut tops = vec![[(0u32, 0f32); TOP_K]; self.max_batch];
        for &n in &sizes {
            for _ in 0..WARM_UP_RUNS {
                // SAFETY: the caller's contract, for n ≤ max_batch tensors.
                unsafe { self.classify_batch_device(tensor, n, &mut tops) }?;
            }
        }
        let mut took = vec![[std::time::Duration::ZERO; TIMED_ROUNDS]; sizes.len()];
        for round in 0..TIMED_ROUNDS {
            for (runs, &n) in took.iter_mut().zip(&sizes) {
                let t0 = std::time::Instant::now();
                // SAFETY: as above.
                unsafe { self.classify_batch_device(tensor, n, &mut tops) }?;
                runs[round] = t0.elapsed();
            }
        }
        let points = sizes
            .iter()
            .zip(&mut took)
            .map(|(&n, runs)| (n, costs::median(runs)))
            .collect();
        Ok(Some(BatchCosts::new(points, padded)))
    }

    /// The model's time per batch size on host tensors ([`Self::classify_batch`], all
    /// zeros): sizes 1 and up to 4 measured once each (one untimed run first), the rest
    /// interpolated linearly (on the CPU a batch costs about its frames' time).
    ///
    /// Errors: [`ModelError::Run`].
    pub fn measure_host(&mut self) -> Result<BatchCosts, ModelError> {
        let chw = 3 * self.width * self.height;
        let sizes: Vec<usize> = [1, self.max_batch.min(4)].into_iter().collect();
        let input = vec![0f32; sizes[1] * chw];
        let mut tops = vec![[(0u32, 0f32); TOP_K]; sizes[1]];
        self.classify_batch(&input, 1, &mut tops)?;
        let mut points = Vec::with_capacity(2);
        for n in sizes {
            let t0 = std::time::Instant::now();
            self.classify_batch(&input, n, &mut tops)?;
            points.push((n, t0.elapsed()));
        }
        Ok(BatchCosts::new(points, false))
    }

    /// The display labels, class 0 first (one per line of the labels file).
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// The display label of class `index`.
    pub fn label(&self, index: u32) -> &str {
        self.labels
            .get(index as usize)
            .map(String::as_str)
            .unwrap_or("?")
    }
}

/// Runs of each batch size before frames flow. ONNX Runtime's CUDA provider runs a graph
/// id twice without a graph (for its memory allocations) and captures it on the third
/// run; a run that changes the input shape without a graph costs 0.1–0.7 s in fp32 and
/// 3–7 s in fp16 on the H200 (ONNX Runtime 1.31.1, cuDNN 9; docs/benchmarks.md §8), so
/// every size must be captured here, not on its first partial batch in the frame path.
const WARM_UP_RUNS: usize = 3;

/// Rounds of timed runs after the warm-up (one run of every size a round); the median
/// of a size's runs is its cost. One timed run per size was not enough: on an H100 the
/// run that captured the graph of 8 frames was timed at 1.32 ms where the model alone
/// ran 8 frames in 1.03 ms p50, which moved the chosen batch from 8 to 15; and five
/// runs of one size after another read 8 frames at 1.17 to 1.53 ms in three starts on
/// one machine (docs/benchmarks.md §12.0). Rounds spread a slow spell over every size;
/// they did not narrow the spread between starts (12 frames read at 1.57 to 1.83 ms in
/// four). Nine rounds of the twelve sizes up to 64 frames add about 0.25 s to the fp32
/// warm-up there.
const TIMED_ROUNDS: usize = 9;

/// `FPGAGDR_CUDA_NHWC=0|1`: overrides the CUDA provider's layout choice (NHWC with fp16,
/// NCHW with fp32) for measurements (docs/benchmarks.md).
fn nhwc_override() -> Option<bool> {
    providers::env_bool("FPGAGDR_CUDA_NHWC")
}

/// True when the environment variable `name` is `1` (measurement switches,
/// docs/benchmarks.md).
fn env_flag(name: &str) -> bool {
    providers::env_bool(name) == Some(true)
}

/// `<stem>.fp16.onnx` beside `<stem>.onnx`.
fn fp16_path(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!("{stem}.fp16.onnx"))
}

/// A session on `model` (the contents of `file`, which names it in messages) with the
/// providers `wanted` asks for.
fn build_session(
    env: &Environment,
    model: &[u8],
    file: &Path,
    options: &ModelOptions,
    wanted: &Wanted<'_>,
) -> Result<(Session, providers::Registered), ModelError> {
    let file_err = |reason: String| ModelError::File {
        path: file.to_path_buf(),
        reason,
    };
    // ONNX Runtime's worker threads spin between runs by default; at a camera's frame
    // rate that burns the idle cores (and an Orin's power budget) for nothing.
    let mut builder = Session::builder(env)
        .map_err(|e| file_err(e.to_string()))?
        .with_intra_op_spinning(false)
        .map_err(|e| file_err(e.to_string()))?
        .with_inter_op_spinning(false)
        .map_err(|e| file_err(e.to_string()))?;
    if options.threads > 0 {
        builder = builder
            .with_intra_threads(options.threads)
            .map_err(|e| file_err(e.to_string()))?;
    }
    let registered = register(&mut builder, wanted).map_err(ModelError::Provider)?;
    let session = builder
        .commit_from_memory(model)
        .map_err(|e| file_err(e.to_string()))?;
    Ok((session, registered))
}

/// The input's name, height, width and batch dimension; an image classifier's input is
/// float32 `[N, 3, H, W]`.
fn input_shape(
    session: &Session,
    path: &Path,
) -> Result<(String, usize, usize, BatchDim), ModelError> {
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
    match input.dtype() {
        ValueType::Tensor { ty, shape, .. }
            if *ty == ort::value::TensorElementType::Float32
                && shape.len() == 4
                && shape[1] == 3
                && shape[2] > 0
                && shape[3] > 0 =>
        {
            if shape[2] as u64 > MAX_INPUT_SIDE as u64 || shape[3] as u64 > MAX_INPUT_SIDE as u64 {
                return Err(shape_err(format!(
                    "input {} is declared {shape:?}: over the limit of {MAX_INPUT_SIDE} x \
                     {MAX_INPUT_SIDE} pixels (nothing was allocated for it)",
                    input.name()
                )));
            }
            let batch = if shape[0] > 0 {
                BatchDim::Fixed(shape[0] as usize)
            } else {
                BatchDim::Dynamic
            };
            Ok((
                input.name().to_string(),
                shape[2] as usize,
                shape[3] as usize,
                batch,
            ))
        }
        other => Err(shape_err(format!(
            "input {} is {other:?}, expected float32 [N,3,H,W]",
            input.name()
        ))),
    }
}

/// The number of classes; the output is float32 `[N, classes]`.
fn output_classes(session: &Session, path: &Path) -> Result<usize, ModelError> {
    let shape_err = |reason: String| ModelError::Shape {
        path: path.to_path_buf(),
        reason,
    };
    match session.outputs() {
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
                Ok(shape[1] as usize)
            }
            other => Err(shape_err(format!(
                "output is {other:?}, expected float32 [N, classes]"
            ))),
        },
        outs => Err(shape_err(format!("has {} outputs, expected 1", outs.len()))),
    }
}

/// The batch a model runs: what `options` ask (0 = chosen here), within what the model
/// and the caller allow.
fn resolve_batch(options: &ModelOptions, ran: Ran, dim: BatchDim) -> usize {
    let limit = match dim {
        BatchDim::Fixed(n) => n,
        BatchDim::Dynamic => options.batch_limit.clamp(1, MAX_BATCH),
    };
    let wanted = match (options.max_batch, ran) {
        (0, Ran::Cpu) => 1,
        (0, _) => {
            let integrated = fpgagdr::cuda_context()
                .and_then(|c| {
                    c.attribute(
                        cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_INTEGRATED,
                    )
                    .ok()
                })
                .is_some_and(|v| v != 0);
            if integrated { 8 } else { 64 }
        }
        (n, _) => n,
    };
    wanted.clamp(1, limit)
}

/// The status sentence: the provider that runs, how, and why the others do not.
/// The TensorRT engine folder for the model `bytes`, when the TensorRT provider may run
/// it (`inference.provider` auto or tensorrt, and an ONNX Runtime built with it).
fn engine_folder(options: &ModelOptions, bytes: &[u8]) -> Option<EngineCache> {
    if !matches!(options.provider, Provider::Auto | Provider::Tensorrt)
        || !providers::tensorrt_available()
    {
        return None;
    }
    let runtime = engine_cache::runtime_key(
        &engine_cache::ort_build(ort::info()),
        engine_cache::tensorrt_version(),
    );
    Some(EngineCache::new(
        &options.tensorrt.cache_dir,
        bytes,
        &runtime,
    ))
}

#[allow(clippy::too_many_arguments)]
fn describe<'a>(
    ran: Ran,
    precision: Precision,
    graphs: bool,
    max_batch: usize,
    dim: BatchDim,
    engine: Option<&EngineCache>,
    trt: &TensorRtOptions,
    not_used: impl Iterator<Item = &'a String>,
) -> String {
    let mut s = match ran {
        Ran::TensorRt => format!(
            "ONNX Runtime TensorRT provider on GPU 0 ({}, engine cache {}{}), CUDA provider for \
             the nodes TensorRT does not take",
            precision.as_str(),
            engine.map_or_else(
                || trt.cache_dir.display().to_string(),
                |e| e.dir.display().to_string()
            ),
            trt.dla_core
                .map(|c| format!(", DLA core {c}"))
                .unwrap_or_default()
        ),
        Ran::Cuda => format!(
            "ONNX Runtime CUDA provider on GPU 0 ({})",
            precision.as_str()
        ),
        Ran::Cpu => format!("ONNX Runtime CPU provider ({})", precision.as_str()),
    };
    s.push_str(&format!("; batches of up to {max_batch}"));
    if dim == BatchDim::Fixed(1) {
        s.push_str(" (the model's batch dimension is fixed at 1)");
    }
    if graphs && precision == Precision::Fp16 && ran != Ran::Cpu {
        s.push_str(&format!(
            "; one CUDA graph, every batch padded to {max_batch} (fp16: one graph per batch \
             size faults in ONNX Runtime 1.31)"
        ));
    } else if graphs {
        s.push_str("; one CUDA graph per batch size");
    }
    for why in not_used {
        s.push_str("; ");
        s.push_str(why);
    }
    s
}

/// The display labels of a labels file's `text`, class 0 first: each line up to its
/// first comma, trimmed (`tabby, tabby cat` → `tabby`). What [`Model::labels`] holds and
/// alert rules name.
pub fn display_labels(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split(',').next().unwrap_or("").trim().to_string())
        .collect()
}

fn parse_labels(bytes: &[u8], path: &Path, classes: usize) -> Result<Vec<String>, ModelError> {
    let err = |reason: String| ModelError::Labels {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::str::from_utf8(bytes).map_err(|e| err(format!("not UTF-8 text: {e}")))?;
    let labels = display_labels(text);
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

    #[test]
    fn the_batch_is_what_the_model_and_the_ring_allow() {
        let o = |max_batch, batch_limit| ModelOptions {
            max_batch,
            batch_limit,
            ..ModelOptions::default()
        };
        assert_eq!(resolve_batch(&o(0, 16), Ran::Cpu, BatchDim::Dynamic), 1);
        assert_eq!(resolve_batch(&o(8, 16), Ran::Cpu, BatchDim::Dynamic), 8);
        assert_eq!(resolve_batch(&o(8, 2), Ran::Cuda, BatchDim::Dynamic), 2);
        assert_eq!(resolve_batch(&o(8, 16), Ran::Cuda, BatchDim::Fixed(1)), 1);
        assert_eq!(resolve_batch(&o(0, 2), Ran::Cuda, BatchDim::Dynamic), 2);
    }

    #[test]
    fn the_fp16_copy_sits_beside_the_model() {
        assert_eq!(
            fp16_path(Path::new("/d/models/efficientnet-lite0.onnx")),
            Path::new("/d/models/efficientnet-lite0.fp16.onnx")
        );
    }
}
