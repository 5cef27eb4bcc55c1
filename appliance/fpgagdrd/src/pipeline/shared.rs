//! What the pipeline threads share with the rest of the service, and the clock they
//! stamp with.
//!
//! Owns: [`Shared`] (counters, published window and latest result, totals, heartbeats,
//! state, fault, generation and when the running pipeline started, the batch in use, GPU
//! memory), [`GpuMemoryUse`], [`State`],
//! [`PipelineNow`], [`Thread`], [`Heartbeats`], [`now_ns`]. Must not: start or stop
//! anything (`mod.rs`'s `Supervisor` does). Read by the frame board (`board/`), `api/`
//! and `notify.rs`.

use std::sync::Mutex;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::board::{PipelineReading, Source};
use crate::metrics::{Counters, Published, Totals};
use crate::results::Outlet;
use std::sync::Arc;

/// Nanoseconds of the service's monotonic clock (since first use).
pub fn now_ns() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// GPU memory the pipeline takes (`GET /api/v1/status` `memory.gpu`, `/metrics`
/// `fpgagdr_gpu_memory_bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuMemoryUse {
    /// The frame ring's entries: entries × entry bytes, allocated in GPU memory (or, on
    /// an integrated GPU, page-locked memory the GPU maps), bytes.
    pub ring_bytes: u64,
    /// The model with everything it runs with (ONNX Runtime's arena, cuDNN workspaces,
    /// CUDA graphs) and the preprocessing buffers: the device's used memory after the
    /// warm-up less before the model was loaded, less the ring, bytes; `None` until the
    /// model has warmed up. Another process allocating on the same GPU meanwhile would
    /// be counted too.
    pub model_bytes: Option<u64>,
    /// The whole device's used memory (all processes) after the warm-up, bytes.
    pub device_used_bytes: Option<u64>,
    /// The device's memory, bytes.
    pub device_total_bytes: Option<u64>,
}

/// Pipeline state as the API shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Not running (never started, or stopped).
    Stopped,
    /// Frames flow.
    Running,
    /// Stopped by an error; [`Shared::fault`] says which.
    Failed,
}

impl State {
    /// `"stopped"`, `"running"`, `"failed"`.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Stopped => "stopped",
            State::Running => "running",
            State::Failed => "failed",
        }
    }
}

/// What the pipeline threads share with the HTTP side. Lives as long as the service.
#[derive(Debug)]
pub struct Shared {
    /// Frame counters.
    pub counters: Counters,
    /// Window quantiles and the latest result, replaced a few times a second.
    pub published: Mutex<Published>,
    /// Cumulative stage histograms.
    pub totals: Mutex<Totals>,
    /// When each pipeline thread last went round its loop.
    pub beats: Heartbeats,
    /// The batch size in use.
    pub batch: BatchSize,
    /// Where the inference thread hands every result (the results room connects).
    pub outlet: Arc<Outlet>,
    /// A copy of a recent frame (its header and pixels, as the card wrote them), taken
    /// by the inference thread about once a second from the entry it holds; the frame
    /// view (`GET /api/v1/frames/latest`) reads this copy, never a ring entry.
    pub frame_copy: Mutex<Option<Arc<Vec<u8>>>>,
    /// GPU memory the running (or last) pipeline takes, for `/metrics`; `None`: none
    /// (the CPU path) or no pipeline yet.
    pub gpu_memory: Mutex<Option<GpuMemoryUse>>,
    state: AtomicU8,
    fault: Mutex<Option<String>>,
    /// Changes on every start, stop, failure and config change (see
    /// [`PipelineNow::generation`]).
    generation: AtomicU64,
    /// [`now_ns`] when the running pipeline started; 0 when none runs.
    started_ns: AtomicU64,
}

impl Default for Shared {
    fn default() -> Self {
        // Generations of a later service run are above those of an earlier one.
        let epoch_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        Shared {
            counters: Counters::default(),
            published: Mutex::default(),
            totals: Mutex::default(),
            beats: Heartbeats::default(),
            batch: BatchSize::default(),
            outlet: Arc::default(),
            frame_copy: Mutex::default(),
            gpu_memory: Mutex::default(),
            state: AtomicU8::new(State::Stopped as u8),
            fault: Mutex::new(None),
            generation: AtomicU64::new(epoch_ms),
            started_ns: AtomicU64::new(0),
        }
    }
}

/// The pipeline as one reading: its state, its generation and how long it has run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PipelineNow {
    /// Running, stopped or failed.
    pub state: State,
    /// Grows by one on every start, stop, failure and config change (it starts at the
    /// service's start time in ms, so a later service run's are larger, unless the clock
    /// was set back): whoever shows the pipeline's facts re-reads them when it changes.
    pub generation: u64,
    /// How long the running pipeline has run; `None` unless running.
    pub running: Option<Duration>,
}

/// The batch size in use: the largest a model run takes, the mean over the inference
/// thread's last publish window (a quarter of a second), the batch wait in use, and for
/// a chosen one what was chosen and why (`pipeline/batching.rs`).
#[derive(Debug, Default)]
pub struct BatchSize {
    max: AtomicU64,
    mean_milli: AtomicU64,
    wait_ns: AtomicU64,
    /// The chosen limit and wait; `None` for a fixed wait.
    choice: Mutex<Option<BatchChoice>>,
}

impl BatchSize {
    /// Largest frames per model run of the running (or last) pipeline; 0 before one ran.
    pub fn max(&self) -> u64 {
        self.max.load(Ordering::Relaxed)
    }

    /// Mean frames per model run over the last publish window; 0 when none ran in it.
    pub fn mean(&self) -> f64 {
        self.mean_milli.load(Ordering::Relaxed) as f64 / 1000.0
    }

    pub(super) fn set_max(&self, max: usize) {
        self.max.store(max as u64, Ordering::Relaxed);
    }

    /// Records the window's frames and model runs.
    pub(super) fn set_window(&self, frames: u64, batches: u64) {
        let milli = (frames * 1000).checked_div(batches).unwrap_or(0);
        self.mean_milli.store(milli, Ordering::Relaxed);
    }

    /// The longest wait for a batch to fill in use now.
    pub fn wait(&self) -> Duration {
        Duration::from_nanos(self.wait_ns.load(Ordering::Relaxed))
    }

    /// What the chosen wait settled on; `None` for a fixed `inference.batch_wait_us`.
    pub fn choice(&self) -> Option<BatchChoice> {
        *self.choice.lock().expect("batch choice poisoned")
    }

    /// Records the wait in use, and for a chosen one the choice.
    pub(super) fn set_wait(&self, wait: Duration, choice: Option<BatchChoice>) {
        self.wait_ns
            .store(wait.as_nanos() as u64, Ordering::Relaxed);
        *self.choice.lock().expect("batch choice poisoned") = choice;
    }
}

/// Why the chosen batch limit and wait are what they are (`pipeline/batching.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchReason {
    /// Fewer than two frames arrived: what is ready runs at once.
    NoArrivals,
    /// The smallest batch that keeps up with the arrivals with a 25 % margin has a
    /// predicted latency within the target.
    WithinTarget,
    /// No batch keeping up by 25 % is within the target; the smallest that keeps up by
    /// 10 % and is within it was taken.
    WithinTargetThinMargin,
    /// No batch that keeps up is within the target: keeping up comes first (batches up
    /// to the largest).
    TargetUnmet,
    /// No batch up to the largest keeps up with the arrivals: frames will be dropped or
    /// missed.
    NoBatchKeepsUp,
}

impl BatchReason {
    /// `no_arrivals`, `within_target`, `within_target_thin_margin`, `target_unmet`,
    /// `no_batch_keeps_up` (status and `/metrics`).
    pub fn as_str(self) -> &'static str {
        match self {
            BatchReason::NoArrivals => "no_arrivals",
            BatchReason::WithinTarget => "within_target",
            BatchReason::WithinTargetThinMargin => "within_target_thin_margin",
            BatchReason::TargetUnmet => "target_unmet",
            BatchReason::NoBatchKeepsUp => "no_batch_keeps_up",
        }
    }

    /// Every reason, in [`Self::as_str`]'s order.
    pub const ALL: [BatchReason; 5] = [
        BatchReason::NoArrivals,
        BatchReason::WithinTarget,
        BatchReason::WithinTargetThinMargin,
        BatchReason::TargetUnmet,
        BatchReason::NoBatchKeepsUp,
    ];
}

/// The batch limit and wait chosen from the arrival gap, the model's measured time per
/// batch size and the latency target (`pipeline/batching.rs`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchChoice {
    /// The batch the wait aims at, frames.
    pub aim: usize,
    /// The most frames a batch takes (at least `aim`; `inference.max_batch` when the
    /// target cannot be met).
    pub limit: usize,
    /// The longest wait for the batch to fill once its first frame is taken.
    pub wait: Duration,
    /// The card's smoothed frame period it was chosen for; `None` before two frames
    /// arrived.
    pub gap: Option<Duration>,
    /// The model's measured time for the aimed batch.
    pub model: Duration,
    /// The aimed batch's predicted latency: its wait plus its model time.
    pub predicted: Duration,
    /// `inference.latency_target_us`.
    pub target: Duration,
    /// Why.
    pub reason: BatchReason,
    /// `Some(n)` when every batch runs padded to `n` frames (one CUDA graph, as the fp16
    /// model on the CUDA provider does), so its model time does not shrink with the batch.
    pub padded_to: Option<usize>,
}

/// A pipeline thread, as [`Heartbeats`] names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Thread {
    /// `fpgagdr-capture`: frame wait and C2H.
    Capture,
    /// `fpgagdr-infer`: preprocessing and the model run.
    Inference,
}

impl Thread {
    /// `"capture"`, `"inference"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Thread::Capture => "capture",
            Thread::Inference => "inference",
        }
    }
}

/// Progress marks of the pipeline threads, for the service watchdog (`notify.rs`).
///
/// Each thread stores [`now_ns`] at the top of every loop turn (one relaxed store per
/// frame or per idle wait slice, no syscall: the clock is read through the vDSO). A
/// thread's longest legitimate gap between two marks is one bounded wait (a frame wait
/// slice, a C2H transfer of at most `card.timeout_ms`) or one model run; the pipeline
/// publishes the first bound as [`Heartbeats::floor_ns`] when it starts.
#[derive(Debug, Default)]
pub struct Heartbeats {
    capture_ns: AtomicU64,
    inference_ns: AtomicU64,
    floor_ns: AtomicU64,
}

impl Heartbeats {
    /// Marks that `thread` is making progress now.
    pub(crate) fn beat(&self, thread: Thread) {
        let slot = match thread {
            Thread::Capture => &self.capture_ns,
            Thread::Inference => &self.inference_ns,
        };
        slot.store(now_ns(), Ordering::Relaxed);
    }

    /// Fresh marks for a starting pipeline whose bounded waits last up to `floor`.
    pub(super) fn reset(&self, floor: Duration) {
        self.floor_ns
            .store(floor.as_nanos() as u64, Ordering::Relaxed);
        self.beat(Thread::Capture);
        self.beat(Thread::Inference);
    }

    /// The thread that has gone longest without a mark, and for how long, ns, as of
    /// `now` (a [`now_ns`] reading).
    pub fn oldest(&self, now: u64) -> (Thread, u64) {
        let age = |a: &AtomicU64| now.saturating_sub(a.load(Ordering::Relaxed));
        let (c, i) = (age(&self.capture_ns), age(&self.inference_ns));
        if c >= i {
            (Thread::Capture, c)
        } else {
            (Thread::Inference, i)
        }
    }

    /// Longest gap between two marks that a healthy pipeline can show on its bounded
    /// waits alone (twice `card.timeout_ms`), ns.
    pub fn floor_ns(&self) -> u64 {
        self.floor_ns.load(Ordering::Relaxed)
    }
}

impl Shared {
    /// Current state.
    pub fn state(&self) -> State {
        match self.state.load(Ordering::Acquire) {
            1 => State::Running,
            2 => State::Failed,
            _ => State::Stopped,
        }
    }

    /// The error that stopped the pipeline, or why it could not start.
    pub fn fault(&self) -> Option<String> {
        self.fault.lock().expect("fault poisoned").clone()
    }

    pub(super) fn set_state(&self, s: State) {
        self.state.store(s as u8, Ordering::Release);
    }

    /// Forgets the last fault (a new start, or a stop that acknowledges it).
    pub(super) fn clear_fault(&self) {
        *self.fault.lock().expect("fault poisoned") = None;
    }

    /// Marks the pipeline failed with `why` (a thread hit an error it cannot go past).
    pub fn fail(&self, why: String) {
        tracing::error!("pipeline failed: {why}");
        *self.fault.lock().expect("fault poisoned") = Some(why);
        self.started_ns.store(0, Ordering::Relaxed);
        self.set_state(State::Failed);
        self.next_generation();
    }

    /// Starts a new generation: the pipeline or its config changed.
    pub(crate) fn next_generation(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Records that a pipeline starts running now.
    pub(super) fn mark_started(&self) {
        self.started_ns.store(now_ns().max(1), Ordering::Relaxed);
    }

    /// Records that no pipeline runs.
    pub(super) fn mark_stopped(&self) {
        self.started_ns.store(0, Ordering::Relaxed);
    }

    /// State, generation and running time, read together.
    pub fn pipeline(&self) -> PipelineNow {
        let generation = self.generation.load(Ordering::Acquire);
        let state = self.state();
        let started = self.started_ns.load(Ordering::Relaxed);
        PipelineNow {
            state,
            generation,
            running: (state == State::Running && started > 0)
                .then(|| Duration::from_nanos(now_ns().saturating_sub(started))),
        }
    }
}

/// The frame board reads the pipeline through this: a few atomics and one short lock.
impl Source for Shared {
    fn read(&self) -> PipelineReading {
        let now = self.pipeline();
        PipelineReading {
            generation: now.generation,
            state: now.state.as_str(),
            running: now.running,
            counters: self.counters.read(),
            published: self.published.lock().expect("published poisoned").clone(),
        }
    }
}
