//! The frame path: a capture thread and an inference thread around a frame ring pinned
//! once at start (`docs/architecture.md`, "Follow one frame").
//!
//! Owns: [`prepare`] (config → card, frame trigger, model, pinned ring: everything that
//! can fail, done before anything running is touched), [`Supervisor`] (start, stop,
//! state), [`Shared`] (what the threads publish). Must not: run async code; the
//! threads are plain named `std::thread`s.
//! Neighbours: `capture.rs` → the ring (`fpgagdr::FrameRing`) → `infer.rs` (which drives
//! `fpgagdr-infer`, with the batch wait of `batching.rs`), `shared.rs` below them;
//! `config` gives the settings.

mod batching;
mod capture;
mod infer;
mod shared;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use fpgagdr::{
    CardStatus, DmaMemory, FrameRing, FrameTrigger, GpuFacts, MemoryKind, PinChoice, PinMethod,
    PinPlan, frame_ring_kind, plan_pin,
};
use fpgagdr_infer::{FramePrep, Model, ModelError, ModelOptions, TensorRtOptions};

use crate::cards::{CardChoice, Opened};
use crate::config::{Config, RingMemory, SourceKind, Unusable};
use crate::files::{self, FileError, Kind, Named, Policy};
pub use shared::{
    BatchChoice, BatchReason, BatchSize, GpuMemoryUse, Heartbeats, PipelineNow, Shared, State,
    Thread, now_ns,
};

/// Largest frame memory accepted, bytes (1 GiB): the ring (pinned) and the decoded
/// replay frames together (the one frame-memory rule: docs/api.md, limits); an Orin shares its DRAM
/// between CPU and GPU.
pub const MAX_RING_BYTES: u64 = 1 << 30;

/// The ring's bytes: `entries` entries of the longest frame, each rounded up to
/// `align`.
fn ring_bytes(entries: usize, max_frame_len: usize, align: usize) -> (usize, u64) {
    let entry_len = max_frame_len.div_ceil(align) * align;
    (entry_len, entry_len as u64 * entries as u64)
}

/// The memory rule: the ring and the decoded frames within [`MAX_RING_BYTES`].
fn memory_rule(
    entries: usize,
    entry_len: usize,
    ring: u64,
    decoded: u64,
) -> Result<(), PrepareError> {
    if ring.saturating_add(decoded) <= MAX_RING_BYTES {
        return Ok(());
    }
    let frames = if decoded > 0 {
        format!(" + {decoded} bytes of decoded replay frames")
    } else {
        String::new()
    };
    Err(fail(
        Some("/ring/entries"),
        format!(
            "rule ring-memory: {entries} entries x {entry_len} bytes (the largest frame) = {ring} bytes{frames} \
             exceeds the frame memory limit of {MAX_RING_BYTES} bytes; use fewer entries or fewer or smaller frames"
        ),
    ))
}

/// The config field a file's error belongs to.
fn file_fail(field: &'static str, e: FileError) -> PrepareError {
    fail(Some(field), e)
}

/// The model and labels bytes and the opened replay files of `config`, read within the
/// policy's time limit (off the caller's thread).
struct Loaded {
    model: (Vec<u8>, Named),
    labels: (Vec<u8>, Named),
    frames: Option<(Named, Vec<(String, std::fs::File)>)>,
}

fn load_files(config: &Config, policy: &Policy) -> Result<Loaded, PrepareError> {
    let roots = &policy.roots;
    let model = roots
        .confine(&config.model.path, Kind::Model)
        .map_err(|e| file_fail("/model/path", e))?;
    let labels_given = config
        .model
        .labels
        .clone()
        .unwrap_or_else(|| config.model.path.with_extension("labels.txt"));
    let labels = roots
        .confine(&labels_given, Kind::Model)
        .map_err(|e| file_fail("/model/labels", e))?;
    let frames = match config.source.kind {
        SourceKind::Replay => Some(
            roots
                .confine(&config.source.path, Kind::Frames)
                .map_err(|e| file_fail("/source/path", e))?,
        ),
        SourceKind::TestPattern => None,
    };
    let (roots, max_model) = (roots.clone(), policy.max_model_bytes);
    files::with_deadline(policy.timeout, move || {
        Ok(read_files(model, labels, frames, &roots, max_model))
    })
    .map_err(|e| file_fail("/source/path", e))?
    .map_err(|(field, e): (&'static str, FileError)| file_fail(field, e))
}

/// What [`load_files`] reads on its thread; an error names its config field.
fn read_files(
    model: Named,
    labels: Named,
    frames: Option<Named>,
    roots: &files::Roots,
    max_model: u64,
) -> Result<Loaded, (&'static str, FileError)> {
    {
        let model_bytes = files::read_regular(&model, max_model, "an ONNX model")
            .map_err(|e| ("/model/path", e))?;
        let labels_bytes = files::read_regular(&labels, files::MAX_LABELS_BYTES, "a labels file")
            .map_err(|e| ("/model/labels", e))?;
        let frames = match frames {
            Some(named) => {
                let files = roots.frame_files(&named).map_err(|e| ("/source/path", e))?;
                Some((named, files))
            }
            None => None,
        };
        Ok(Loaded {
            model: (model_bytes, model),
            labels: (labels_bytes, labels),
            frames,
        })
    }
}

/// Facts about the running (or last prepared) pipeline, for `/status`.
#[derive(Debug, Clone)]
pub struct PipelineInfo {
    /// The card's status.
    pub card: CardStatus,
    /// Where the frame ring lives.
    pub memory: MemoryKind,
    /// Why that memory (e.g. "no CUDA driver found").
    pub memory_detail: String,
    /// How each ring entry is pinned and why, entry 0 first.
    pub pins: Vec<(PinMethod, String)>,
    /// Which of the reference report's data paths (docs/bench.md) the frames take (A, B or
    /// C) and how.
    pub data_path: &'static str,
    /// Model file name.
    pub model: String,
    /// Where frames are checked and preprocessed (GPU or CPU) and why.
    pub preprocess: String,
    /// Which ONNX Runtime execution provider runs the model, and why.
    pub inference: String,
    /// Largest number of frames one model run takes.
    pub max_batch: usize,
    /// Frame source description.
    pub source: String,
    /// Ring entries × bytes each.
    pub ring: (usize, usize),
    /// N: the card's frame slots; the ring has k × N entries.
    pub slots: usize,
    /// C2H channels capture uses (`card.channels`), from `card.channel` up.
    pub channels: u32,
    /// True when batch k+1 is gathered, checked and preprocessed while batch k runs (two
    /// batches in flight); false: one batch at a time.
    pub ahead: bool,
    /// How the batch wait is set, and the model's measured time per batch size once it
    /// has warmed up.
    pub batching: String,
    /// GPU memory the ring and the model take; `None` when the pipeline uses none (the
    /// CPU path).
    pub gpu_memory: Option<GpuMemoryUse>,
}

/// The device's (used, total) memory, bytes, from `cuMemGetInfo`; `None` without CUDA.
fn device_memory() -> Option<(u64, u64)> {
    let (free, total) = fpgagdr::cuda_context()?.mem_get_info().ok()?;
    Some(((total - free) as u64, total as u64))
}

/// The frame ring's entries when batches are queued ahead: room for three batches (two
/// in flight, one being gathered) and one free entry per card slot for capture, on top
/// of what `ring.entries` asks (a lower bound).
fn entries_for_ahead(wanted: usize, max_batch: usize, slots: usize) -> usize {
    wanted.max(3 * max_batch + slots)
}

/// Entries of the frame ring for `wanted` (`ring.entries`) on a card with `slots` frame
/// slots: the next multiple k × N of N at or above `wanted`, with k ≥ 2 (docs/decisions.md,
/// "Capture from the real card": the ring holds at least twice the inference batch of one,
/// and a slot always has an entry inference does not hold). `ring.entries` is thus a lower
/// bound, so one config fits cards of any slot count.
pub fn ring_entries(wanted: usize, slots: usize) -> usize {
    let slots = slots.max(1);
    wanted.div_ceil(slots).max(2) * slots
}

/// Everything a pipeline needs, built and checked before anything running is touched.
pub struct Prepared {
    ring: FrameRing,
    trigger: Box<dyn FrameTrigger>,
    model: Model,
    prep: FramePrep,
    capture: capture::CaptureParams,
    infer: infer::InferParams,
    /// The device's used memory before the model was loaded plus what the ring took,
    /// bytes (`None` without a GPU): the model's share is what the warm-up leaves above.
    gpu_base: Option<u64>,
    info: PipelineInfo,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("info", &self.info)
            .finish()
    }
}

impl Prepared {
    /// The model's display labels, class 0 first (what alert rules name).
    pub fn labels(&self) -> &[String] {
        self.model.labels()
    }
}

/// Why a pipeline could not be prepared; `field` names the config field at fault.
pub type PrepareError = Unusable;

fn fail(field: Option<&'static str>, e: impl std::fmt::Display) -> PrepareError {
    PrepareError {
        field: field.map(Into::into),
        message: e.to_string(),
    }
}

/// Where the frame ring goes for `wanted`, why, and which of the reference report's data
/// paths (docs/bench.md) frames take (A: card → host → GPU by the CPU; B: card → pinned
/// host → GPU copy; C: card → GPU memory).
///
/// The pin plan comes with it: `card.pin_method` (`pin`) decides the memory when
/// `ring.memory` is `auto`; an explicit `ring.memory` keeps its memory, pinned by that
/// memory's own method where the pin method would have wanted another (the reason says
/// so; the config's rule `pin-method-memory` refuses the plain contradictions).
fn ring_memory(
    wanted: RingMemory,
    pin: PinChoice,
    simulated: bool,
) -> Result<(PinPlan, String, &'static str), PrepareError> {
    let (platform, why) = frame_ring_kind();
    let plan = plan_pin(pin, &GpuFacts::probe());
    let kind = match wanted {
        RingMemory::Auto => plan.memory,
        RingMemory::Host => MemoryKind::Host,
        RingMemory::CudaDevice | RingMemory::CudaHost if platform == MemoryKind::Host => {
            return Err(fail(
                Some("/ring/memory"),
                format!("rule ring-memory-kind: a CUDA frame ring needs a CUDA driver ({why})"),
            ));
        }
        RingMemory::CudaDevice => MemoryKind::CudaDevice,
        RingMemory::CudaHost => MemoryKind::CudaHost,
    };
    let plan = if plan.memory == kind {
        plan
    } else {
        let method = match kind {
            MemoryKind::CudaDevice => PinMethod::NvidiaP2p,
            MemoryKind::CudaHost | MemoryKind::Host => PinMethod::Host,
        };
        PinPlan {
            memory: kind,
            method,
            reason: format!(
                "ring.memory {kind} is pinned by {method} (card.pin_method {pin} would give \
                 {}: {})",
                plan.memory, plan.reason
            ),
        }
    };
    let why = if wanted == RingMemory::Auto && pin != PinChoice::Auto {
        plan.reason.clone()
    } else if wanted == RingMemory::Auto {
        why
    } else {
        "configured in ring.memory".to_string()
    };
    Ok(match (kind, simulated) {
        (MemoryKind::CudaDevice, true) => (
            plan,
            format!(
                "CUDA device memory ({why}); the simulated card fills it through pinned host staging (path B), not GPUDirect"
            ),
            "B: simulated card -> pinned host staging -> GPU copy",
        ),
        (MemoryKind::CudaDevice, false) => (
            plan,
            format!("CUDA device memory ({why})"),
            "C: card -> GPU memory (GPUDirect)",
        ),
        (MemoryKind::CudaHost, true) => (
            plan,
            format!(
                "page-locked GPU-mapped host memory from cuMemHostAlloc ({why}); the simulated card writes it, the GPU reads it in place"
            ),
            "C on Orin: simulated card -> cuMemHostAlloc memory the GPU reads in place",
        ),
        (MemoryKind::CudaHost, false) => (
            plan,
            format!("page-locked GPU-mapped host memory from cuMemHostAlloc ({why})"),
            "C: card -> cuMemHostAlloc memory (Orin unified memory, GPUDirect)",
        ),
        (MemoryKind::Host, sim) => (
            plan,
            format!("page-aligned host memory ({why})"),
            if sim {
                "simulated card -> pinned host memory (no GPU)"
            } else {
                "card -> pinned host memory (no GPU)"
            },
        ),
    })
}

/// Builds a pipeline from `config`: reads its files as `policy` allows (confined,
/// bounded, within a time limit), opens the card, loads the frames and the model,
/// allocates and pins the ring. Slow (hundreds of ms: model load), never partial.
pub fn prepare(
    config: &Config,
    card_choice: &CardChoice,
    policy: &Policy,
) -> Result<Prepared, PrepareError> {
    let loaded = load_files(config, policy)?;
    let (model_bytes, model_file) = loaded.model;
    let (labels_bytes, labels_file) = loaded.labels;
    // The ring's memory decides where preprocessing runs; a CUDA ring gets one stream
    // that the kernels and the model share (the model reads the tensors where the
    // kernels left them, in order, with no synchronisation in between).
    let (plan, _, _) = ring_memory(
        config.ring.memory,
        config.card.pin_method,
        card_choice.backend().simulated,
    )?;
    let kind = plan.memory;
    // The device's used memory before the model: what the model takes is measured from
    // here (GpuMemoryUse::model_bytes).
    let used_before = match kind {
        MemoryKind::CudaDevice | MemoryKind::CudaHost => device_memory().map(|(u, _)| u),
        MemoryKind::Host => None,
    };
    let stream = match kind {
        MemoryKind::CudaDevice | MemoryKind::CudaHost => fpgagdr::cuda_context()
            .map(|ctx| ctx.new_stream())
            .transpose()
            .map_err(|e| {
                fail(
                    Some("/ring/memory"),
                    format!("rule cuda: a CUDA stream: {e}"),
                )
            })?,
        MemoryKind::Host => None,
    };
    let inf = &config.inference;
    let options = ModelOptions {
        threads: inf.threads,
        provider: inf.provider,
        precision: inf.precision,
        max_batch: inf.max_batch,
        batch_limit: (config.ring.entries / 2).max(1),
        cuda_graph: inf.cuda_graph,
        nhwc: None,
        tensorrt: TensorRtOptions {
            cache_dir: config.tensorrt_cache_dir(),
            dla_core: inf.tensorrt.dla_core,
        },
        stream,
    };
    let model = Model::from_memory(
        &model_bytes,
        std::path::Path::new(&model_file.shown),
        Some(&model_file.path),
        &labels_bytes,
        std::path::Path::new(&labels_file.shown),
        &options,
    )
    .map_err(|e| {
        let field = match e {
            ModelError::Labels { .. } => "/model/labels",
            ModelError::Runtime { .. } => "/model",
            ModelError::Provider(_) => "/inference/provider",
            ModelError::Precision(_) => "/inference/precision",
            _ => "/model/path",
        };
        fail(Some(field), e)
    })?;
    drop((model_bytes, labels_bytes));
    // The memory rule before a simulated card decodes its replay frames (the ring as it
    // will be: k x the card's frame slots).
    let rule = |slots: usize, max_frame_len: usize, align: usize, decoded: u64| {
        let entries = ring_entries(config.ring.entries, slots);
        let (entry_len, ring) = ring_bytes(entries, max_frame_len, align);
        memory_rule(entries, entry_len, ring, decoded)
    };
    let Opened {
        card,
        trigger,
        decoded,
    } = card_choice.open(config, loaded.frames, &rule)?;
    let status = card.status().clone();
    if config.card.channel >= status.c2h_channels {
        return Err(fail(
            Some("/card/channel"),
            format!(
                "rule channel-range: C2H channel {} does not exist (the card has {})",
                config.card.channel, status.c2h_channels
            ),
        ));
    }
    if config.card.channel + config.card.channels > status.c2h_channels {
        return Err(fail(
            Some("/card/channels"),
            format!(
                "rule channel-range: C2H channels {}..={} do not exist (the card has {})",
                config.card.channel,
                config.card.channel + config.card.channels - 1,
                status.c2h_channels
            ),
        ));
    }
    let align = status.alignment as usize;
    let slots = trigger.slots().max(1) as usize;
    // Batches queued ahead (a model that reads and ranks in GPU memory, on a CUDA ring)
    // hold three batches of entries.
    let ahead_possible = model.queues_ahead() && kind != MemoryKind::Host;
    let wanted = if ahead_possible {
        entries_for_ahead(config.ring.entries, model.max_batch(), slots)
    } else {
        config.ring.entries
    };
    let entries = ring_entries(wanted, slots);
    let (entry_len, ring) = ring_bytes(entries, trigger.max_frame_len(), align);
    memory_rule(entries, entry_len, ring, decoded)?;
    // The description follows the card as opened (a module's card may be simulated too).
    let (plan, detail, data_path) =
        ring_memory(config.ring.memory, config.card.pin_method, status.simulated)?;
    let ring_before = used_before.and_then(|_| device_memory()).map(|(u, _)| u);
    let mut buffers = Vec::with_capacity(entries);
    for _ in 0..entries {
        let mem = DmaMemory::for_pin(entry_len, align, &plan)
            .map_err(|e| fail(Some("/ring/entries"), e))?;
        buffers.push(card.pin(mem).map_err(|e| fail(Some("/ring/entries"), e))?);
    }
    let memory = buffers[0].kind();
    let pins = buffers
        .iter()
        .map(|b| (b.pin_method(), b.pin_reason()))
        .collect();
    let ring_after = ring_before.and_then(|_| device_memory()).map(|(u, _)| u);
    let (prep, preprocess) = FramePrep::new(memory, entry_len, &model);
    let ahead = prep.queues_ahead(&model);
    let preprocess = if ahead {
        format!(
            "{preprocess}; batches queued ahead: batch k+1 is gathered, checked and preprocessed \
             on a second stream while batch k runs (two in flight)"
        )
    } else {
        format!("{preprocess}; one batch at a time")
    };
    let ring_in_gpu = matches!(memory, MemoryKind::CudaDevice | MemoryKind::CudaHost);
    let gpu_memory = (ring_in_gpu || model.takes_device_input()).then_some(GpuMemoryUse {
        ring_bytes: if ring_in_gpu { ring } else { 0 },
        model_bytes: None,
        device_used_bytes: None,
        device_total_bytes: None,
    });
    // What the ring took of the device, to take it out of the model's share later.
    let ring_measured = match (ring_before, ring_after) {
        (Some(b), Some(a)) => Some(a.saturating_sub(b)),
        _ => None,
    };
    let batching = match config.inference.batch_wait_us {
        Some(us) => format!("fixed: inference.batch_wait_us {us} µs"),
        None => format!(
            "chosen as frames arrive from the model's time per batch size (measured when \
             it warms up) for a latency within inference.latency_target_us {} µs",
            config.inference.latency_target_us
        ),
    };
    let info = PipelineInfo {
        card: status,
        memory,
        memory_detail: detail,
        pins,
        data_path,
        model: model.name(),
        preprocess,
        inference: model.provider().to_string(),
        max_batch: model.max_batch(),
        source: trigger.describe(),
        ring: (entries, entry_len),
        slots,
        channels: config.card.channels,
        ahead,
        batching,
        gpu_memory,
    };
    if entries > ring_entries(config.ring.entries, slots) {
        tracing::info!(
            "frame ring: {entries} entries instead of ring.entries {} to hold three batches of \
             {} (two in flight, one being gathered) and a free entry per card slot",
            config.ring.entries,
            model.max_batch()
        );
    }
    tracing::info!(
        "pipeline prepared: {} ; frame ring {} x {} bytes ({} per each of the card's {} frame slots) in {} ; C2H channels {} ; source {} ; model {} on {} ; preprocessing on {}",
        info.card.name,
        info.ring.0,
        info.ring.1,
        info.ring.0 / info.slots,
        info.slots,
        info.memory_detail,
        info.channels,
        info.source,
        info.model,
        info.inference,
        info.preprocess
    );
    Ok(Prepared {
        ring: FrameRing::new(card, buffers, slots, config.ring.when_full),
        trigger,
        model,
        prep,
        capture: capture::CaptureParams {
            channel: config.card.channel,
            channels: config.card.channels,
            timeout: Duration::from_millis(config.card.timeout_ms),
        },
        infer: infer::InferParams {
            verify_checksum: config.inference.verify_checksum,
            batch_wait: config.inference.batch_wait_us.map(Duration::from_micros),
            latency_target: Duration::from_micros(config.inference.latency_target_us),
        },
        gpu_base: used_before.map(|b| b + ring_measured.unwrap_or(0)),
        info,
    })
}

/// What the inference thread's warm-up measured.
struct Warmed {
    /// The model's time per batch size, in words.
    costs: String,
    /// The device's (used, total) memory after the warm-up, bytes.
    device: Option<(u64, u64)>,
}

/// What fills the ring.
#[derive(Debug, Clone, Copy)]
enum Feed {
    /// The capture thread: the card's frames, one C2H each.
    Capture,
    /// Each entry filled once, then handed back as it is (the inference stage alone).
    Recycle,
}

struct Running {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

/// Where the [`Supervisor`] publishes the facts of the current (or last) pipeline, for
/// readers that must not wait for a start or stop in progress (`/status`).
pub type InfoSlot = Arc<std::sync::Mutex<Option<PipelineInfo>>>;

/// Starts and stops the pipeline threads. One per service.
pub struct Supervisor {
    shared: Arc<Shared>,
    running: Option<Running>,
    info: InfoSlot,
}

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor")
            .field("running", &self.running.is_some())
            .finish_non_exhaustive()
    }
}

impl Supervisor {
    /// A supervisor with nothing running.
    pub fn new(shared: Arc<Shared>) -> Self {
        Supervisor {
            shared,
            running: None,
            info: InfoSlot::default(),
        }
    }

    /// Facts about the current (or last) pipeline.
    pub fn info(&self) -> Option<PipelineInfo> {
        self.info.lock().expect("pipeline info poisoned").clone()
    }

    /// Where those facts are published, for readers that must not wait for this
    /// supervisor.
    pub fn info_slot(&self) -> InfoSlot {
        self.info.clone()
    }

    /// Stops what runs (if anything) and starts `prepared`: first the inference thread,
    /// which warms the model up (every batch size it will run, so CUDA graphs are
    /// captured while no other thread of the service uses the GPU), then, once that has
    /// succeeded, the capture thread. A warm-up that fails leaves the pipeline failed,
    /// with the reason.
    ///
    /// The warm-up runs on the inference thread itself because ONNX Runtime's CUDA
    /// provider keeps its captured graphs per thread: graphs captured on this thread
    /// were never replayed by the inference thread, which captured each size again on
    /// its first batches and stalled 0.1–4 s per size change (docs/benchmarks.md §8).
    pub fn start(&mut self, prepared: Prepared) {
        self.start_fed(prepared, Feed::Capture);
    }

    /// As [`Self::start`], but the inference stage alone is measured: each ring entry is
    /// filled once through the card (a real C2H), then, instead of capture, a thread
    /// hands every entry the inference thread releases straight back as a new frame,
    /// its bytes as they are. A benchmark mode (what the inference stage does when
    /// capture is not the limit: `benches/infer_stage.rs`); no config reaches it.
    pub fn start_inference_only(&mut self, prepared: Prepared) {
        self.start_fed(prepared, Feed::Recycle);
    }

    fn start_fed(&mut self, prepared: Prepared, feed: Feed) {
        // `gpu_base` was measured while the run being replaced still held its model and
        // ring; what stopping it gives back is taken off, so that the new model's share
        // (measured after its warm-up) is its own and not its size less the old one's.
        // Measured only when a run is replaced: the device's use is every process's, so
        // what another one frees meanwhile would count too (as would the replaced run's
        // growth since the base was read; both are small beside a model).
        let before_stop = self
            .running
            .as_ref()
            .and(prepared.gpu_base)
            .and_then(|_| device_memory());
        self.stop();
        let freed = before_stop
            .and_then(|(before, _)| device_memory().map(|(after, _)| before.saturating_sub(after)))
            .unwrap_or(0);
        let prepared = Prepared {
            gpu_base: prepared.gpu_base.map(|b| b.saturating_sub(freed)),
            ..prepared
        };
        let Prepared {
            ring,
            trigger,
            mut model,
            mut prep,
            capture,
            infer,
            gpu_base,
            info,
        } = prepared;
        self.shared.batch.set_max(info.max_batch);
        // This run's results go to the results room (when one is connected).
        let tap = self.shared.outlet.tap(
            model.labels().to_vec(),
            info.card.name.clone(),
            capture.channel,
        );
        *self.shared.gpu_memory.lock().expect("gpu memory poisoned") = info.gpu_memory;
        *self.info.lock().expect("pipeline info poisoned") = Some(info);
        let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.into())
                .spawn(f)
                .expect("spawn pipeline thread")
        };
        let ring = Arc::new(ring);
        let stop = Arc::new(AtomicBool::new(false));
        // The inference thread warms up, says how that went, then waits for the go (sent
        // once the state below is set and capture runs; dropped to call it off).
        let (warmed_tx, warmed_rx) = std::sync::mpsc::sync_channel::<Result<Warmed, String>>(1);
        let (go_tx, go_rx) = std::sync::mpsc::sync_channel::<()>(1);
        let (r, s, st) = (ring.clone(), self.shared.clone(), stop.clone());
        let t_infer = spawn(
            "fpgagdr-infer",
            Box::new(move || {
                let (costs, warmed) = match prep.warm_up(&mut model) {
                    Ok(costs) => {
                        let w = Warmed {
                            costs: costs.describe(),
                            device: gpu_base.and_then(|_| device_memory()),
                        };
                        (Some(costs), Ok(w))
                    }
                    Err(e) => (None, Err(e.to_string())),
                };
                let ok = warmed.is_ok();
                if warmed_tx.send(warmed).is_err() || !ok || go_rx.recv().is_err() {
                    return;
                }
                let costs = costs.expect("warmed up");
                infer::run(r, model, prep, costs, infer, tap, s, st)
            }),
        );
        let warmed = warmed_rx
            .recv()
            .unwrap_or_else(|_| Err("the inference thread ended during warm-up".into()));
        let warmed = match warmed {
            Ok(w) => w,
            Err(e) => {
                drop(go_tx);
                let _ = t_infer.join();
                self.shared.fail(format!("model warm-up: {e}"));
                return;
            }
        };
        // What the warm-up measured: the model's time per batch size, its GPU memory.
        if let Some(info) = self.info.lock().expect("pipeline info poisoned").as_mut() {
            info.batching = format!(
                "{}; the model's measured time per batch size: {}",
                info.batching, warmed.costs
            );
            if let (Some(g), Some((used, total)), Some(base)) =
                (info.gpu_memory.as_mut(), warmed.device, gpu_base)
            {
                g.model_bytes = Some(used.saturating_sub(base));
                g.device_used_bytes = Some(used);
                g.device_total_bytes = Some(total);
            }
            *self.shared.gpu_memory.lock().expect("gpu memory poisoned") = info.gpu_memory;
        }
        self.shared.clear_fault();
        // Marks before the state: the watchdog judges a running pipeline by them.
        self.shared.beats.reset(2 * capture.timeout);
        self.shared.mark_started();
        self.shared.set_state(State::Running);
        self.shared.next_generation();
        let (r, s, st) = (ring, self.shared.clone(), stop.clone());
        let t_capture = match feed {
            Feed::Capture => spawn(
                "fpgagdr-capture",
                Box::new(move || capture::run(r, trigger, capture, s, st)),
            ),
            Feed::Recycle => spawn(
                "fpgagdr-recycle",
                Box::new(move || capture::recycle(r, trigger, capture, s, st)),
            ),
        };
        // The inference thread is parked on the go until now, so it cannot have ended;
        // if it somehow has, it runs nothing and the watchdog's beats say so.
        let _ = go_tx.send(());
        self.running = Some(Running {
            stop,
            threads: vec![t_capture, t_infer],
        });
    }

    /// Keeps the facts of a pipeline prepared for a config saved while stopped, so the
    /// status shows what a start would run, and starts a new generation; the prepared
    /// pipeline itself is released (a start prepares it again).
    pub fn adopt(&mut self, prepared: Prepared) {
        *self.info.lock().expect("pipeline info poisoned") = Some(prepared.info);
        self.shared.next_generation();
    }

    /// Records that a start failed (the pipeline is left stopped-failed).
    pub fn start_failed(&mut self, why: String) {
        self.stop();
        self.shared.fail(why);
    }

    /// Stops the threads and waits for them (bounded by one frame's work).
    /// A failed pipeline becomes stopped (its error is cleared): stopping is how a
    /// user acknowledges the failure.
    pub fn stop(&mut self) {
        let mut panicked = false;
        let was = self.shared.state();
        if let Some(r) = self.running.take() {
            r.stop.store(true, Ordering::Relaxed);
            for t in r.threads {
                t.thread().unpark();
                panicked |= t.join().is_err();
            }
            // The threads dropped the model, the frames and the ring: give the freed
            // heap back (fpgagdr::heap says why).
            fpgagdr::heap::release_freed();
        }
        // The latency window describes a running pipeline; the latest result stays.
        self.shared
            .published
            .lock()
            .expect("published poisoned")
            .window = None;
        self.shared.mark_stopped();
        if panicked {
            self.shared.fail("a pipeline thread panicked".into());
        } else {
            self.shared.clear_fault();
            self.shared.set_state(State::Stopped);
            if was != State::Stopped {
                self.shared.next_generation();
            }
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.stop();
    }
}
