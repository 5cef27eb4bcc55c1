//! Counters and per-stage latency histograms of the frame path.
//!
//! Owns: [`Counters`] (atomics, bumped per frame), [`Stage`], [`StageRecorder`] (HDR
//! histograms owned by the inference thread, published a few times a second — never a
//! lock per frame), [`Published`] (the window and the latest [`FrameResult`], complete
//! with its frame). Units: latencies in µs (recorded in ns), throughput in frames/s
//! and GB/s (10^9 bytes/s).
//! Neighbours: written by `pipeline/` (follow one frame: `pipeline/infer.rs` records
//! its stages here and publishes its result), read by the frame board and `/metrics`.
//! Next hop: `board/mod.rs` (the frame board) reads [`Published`] and [`Counters`].

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use hdrhistogram::Histogram;
use serde::Serialize;

use fpgagdr_infer::Classification;

/// Frame-path counters; monotonic over the service's life (they survive pipeline
/// restarts, as Prometheus counters must).
#[derive(Debug, Default)]
pub struct Counters {
    /// Frames DMA'd into a ring entry.
    pub frames_captured: AtomicU64,
    /// Frames that went through the model.
    pub frames_inferred: AtomicU64,
    /// Frames dropped by back-pressure (drop-oldest), or lost to a failed check.
    pub frames_dropped: AtomicU64,
    /// Frames whose header or payload CRC did not match.
    pub checksum_errors: AtomicU64,
    /// Transfers that failed or timed out.
    pub transfer_errors: AtomicU64,
    /// Frames the card completed that no frame-done event reported (interrupts the card
    /// coalesced while one was pending: the gap in the events' sequence numbers), the
    /// event-queue overflow not included.
    pub frames_missed: AtomicU64,
    /// Frames whose frame-done event the kernel's per-file event queue dropped because
    /// it was full. produced = captured + missed + this, exactly (the count of
    /// docs/card-protocol.md, "The picture", with the module's queue overflow as a kind
    /// of missed frame).
    pub event_queue_overflows: AtomicU64,
    /// Captured frames the card had overwritten in their slot before (or while) the C2H
    /// read it: the torn-frame check after the C2H says the slot may have been rewritten
    /// during the copy, or the header carries a later sequence number than the
    /// frame-done event announced (docs/card-protocol.md, "overrun"). Dropped, never
    /// inferred, never a checksum error.
    pub frames_overrun: AtomicU64,
    /// Captured frames whose header carries an earlier sequence number than the event
    /// announced (the slot did not hold the frame the card said it did). Dropped.
    pub sequence_errors: AtomicU64,
    /// Waits for a frame that lasted the whole `card.timeout_ms` (the sensor is slower
    /// than the timeout, or stopped sending).
    pub frame_wait_timeouts: AtomicU64,
    /// Bytes moved by C2H into the ring.
    pub bytes_captured: AtomicU64,
    /// C2H transfers that replayed the ring entry's descriptor chain (the card's chain
    /// cache; on a real card the module's counter, which counts every open file's
    /// transfers), summed over the pipeline's runs.
    pub chain_cache_hits: AtomicU64,
    /// C2H transfers that built (or rebuilt) their descriptor chain: one per ring entry
    /// on the first lap, none after it when every entry meets the same slot.
    pub chain_cache_misses: AtomicU64,
    /// Model runs; `frames_inferred / batches_run` is the mean batch size.
    pub batches_run: AtomicU64,
}

impl Counters {
    /// Adds one to `c`.
    pub fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// Reads all counters.
    pub fn read(&self) -> CounterValues {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        CounterValues {
            frames_captured: r(&self.frames_captured),
            frames_inferred: r(&self.frames_inferred),
            frames_dropped: r(&self.frames_dropped),
            checksum_errors: r(&self.checksum_errors),
            transfer_errors: r(&self.transfer_errors),
            frames_missed: r(&self.frames_missed),
            event_queue_overflows: r(&self.event_queue_overflows),
            frames_overrun: r(&self.frames_overrun),
            sequence_errors: r(&self.sequence_errors),
            frame_wait_timeouts: r(&self.frame_wait_timeouts),
            bytes_captured: r(&self.bytes_captured),
            chain_cache_hits: r(&self.chain_cache_hits),
            chain_cache_misses: r(&self.chain_cache_misses),
            batches_run: r(&self.batches_run),
        }
    }
}

/// A reading of [`Counters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct CounterValues {
    /// See [`Counters::frames_captured`].
    pub frames_captured: u64,
    /// See [`Counters::frames_inferred`].
    pub frames_inferred: u64,
    /// See [`Counters::frames_dropped`].
    pub frames_dropped: u64,
    /// See [`Counters::checksum_errors`].
    pub checksum_errors: u64,
    /// See [`Counters::transfer_errors`].
    pub transfer_errors: u64,
    /// See [`Counters::frames_missed`].
    pub frames_missed: u64,
    /// See [`Counters::event_queue_overflows`].
    pub event_queue_overflows: u64,
    /// See [`Counters::frames_overrun`].
    pub frames_overrun: u64,
    /// See [`Counters::sequence_errors`].
    pub sequence_errors: u64,
    /// See [`Counters::frame_wait_timeouts`].
    pub frame_wait_timeouts: u64,
    /// See [`Counters::bytes_captured`].
    pub bytes_captured: u64,
    /// See [`Counters::batches_run`].
    pub batches_run: u64,
    /// See [`Counters::chain_cache_hits`].
    pub chain_cache_hits: u64,
    /// See [`Counters::chain_cache_misses`].
    pub chain_cache_misses: u64,
}

impl CounterValues {
    /// Chain-cache hits / (hits + misses), 0..=1; `None` before the first transfer.
    pub fn chain_cache_hit_rate(&self) -> Option<f64> {
        fpgagdr::ChainCache {
            hits: self.chain_cache_hits,
            misses: self.chain_cache_misses,
        }
        .hit_rate()
    }
}

/// Stages of the frame path whose latency is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Frame complete in card memory (the frame-done interrupt's arrival) → C2H
    /// submitted: how long the frame waited for the host.
    Pickup,
    /// C2H transfer of the frame into its ring entry: submit → completion.
    Dma,
    /// Ring entry ready → taken by the inference thread.
    Queue,
    /// Device-to-host copy, only when the ring is in GPU memory and inference runs on
    /// the CPU (a hop GPUDirect would not need; shown, never hidden).
    D2h,
    /// Frame → input tensor (on the GPU: the header check, CRC and tensors of the whole
    /// batch the frame was in).
    Preprocess,
    /// The model run of the batch the frame was in.
    Inference,
    /// Frame-done interrupt (the frame's arrival) → result ready: interrupt-to-result.
    EndToEnd,
}

/// Number of [`Stage`]s.
pub const STAGES: usize = Stage::ALL.len();

impl Stage {
    /// All stages, in path order.
    pub const ALL: [Stage; 7] = [
        Stage::Pickup,
        Stage::Dma,
        Stage::Queue,
        Stage::D2h,
        Stage::Preprocess,
        Stage::Inference,
        Stage::EndToEnd,
    ];

    /// Name used in JSON and Prometheus labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Pickup => "pickup",
            Stage::Dma => "dma",
            Stage::Queue => "queue",
            Stage::D2h => "d2h",
            Stage::Preprocess => "preprocess",
            Stage::Inference => "inference",
            Stage::EndToEnd => "end_to_end",
        }
    }
}

/// p50 / p99 / max of one stage over a window, µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Quantiles {
    /// Median, µs.
    pub p50: f64,
    /// 99th percentile, µs.
    pub p99: f64,
    /// Maximum, µs.
    pub max: f64,
    /// Samples in the window.
    pub count: u64,
}

/// Latency quantiles for every stage.
pub type StageQuantiles = [(Stage, Quantiles); STAGES];

/// The result of one frame, as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct FrameResult {
    /// Sensor sequence number.
    pub seq: u64,
    /// The frame's geometry and check.
    pub frame: FrameInfo,
    /// Best five classes.
    pub top5: Vec<Classification>,
    /// Per-stage latency of this frame, µs.
    pub latency_us: std::collections::BTreeMap<&'static str, f64>,
}

/// Geometry of a captured frame.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct FrameInfo {
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
    /// `"mono8"` or `"rgb8"`.
    pub format: &'static str,
    /// Frame bytes moved by DMA (header included).
    pub bytes: u64,
    /// Whether the payload CRC matched (false only when checking is off).
    pub checksum_ok: bool,
}

/// What the inference thread publishes for the frame board.
#[derive(Debug, Clone, Default)]
pub struct Published {
    /// Quantiles over the sliding window.
    pub window: Option<StageQuantiles>,
    /// The most recent result (shared: every snapshot until the next one carries it).
    pub latest: Option<std::sync::Arc<FrameResult>>,
}

const SIGFIG: u8 = 3;
const MAX_NS: u64 = 60_000_000_000;
/// Sub-windows in the sliding window.
const SLICES: usize = 4;

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NS, SIGFIG).expect("valid histogram bounds")
}

/// Per-stage histograms owned by the inference thread: a sliding window of
/// four sub-windows (rotated at each publish) and cumulative totals.
#[derive(Debug)]
pub struct StageRecorder {
    slices: Vec<[Histogram<u64>; STAGES]>,
    current: usize,
    merged: [Histogram<u64>; STAGES],
}

impl Default for StageRecorder {
    fn default() -> Self {
        let set = || std::array::from_fn(|_| histogram());
        StageRecorder {
            slices: (0..SLICES).map(|_| set()).collect(),
            current: 0,
            merged: set(),
        }
    }
}

impl StageRecorder {
    /// Records one sample of `stage`, in ns (clamped to the histogram's range).
    pub fn record(&mut self, stage: Stage, ns: u64) {
        let i = Stage::ALL
            .iter()
            .position(|s| *s == stage)
            .expect("known stage");
        self.slices[self.current][i].saturating_record(ns.clamp(1, MAX_NS));
    }

    /// Quantiles over the window, then starts a new sub-window. Also adds the finished
    /// sub-window into `totals` (cumulative, for `/metrics`).
    pub fn rotate(&mut self, totals: &Mutex<Totals>) -> StageQuantiles {
        let mut out = [(Stage::Dma, Quantiles::default()); STAGES];
        for (i, stage) in Stage::ALL.iter().enumerate() {
            let m = &mut self.merged[i];
            m.reset();
            for s in &self.slices {
                m.add(&s[i]).expect("same bounds");
            }
            let us = |ns: u64| ns as f64 / 1000.0;
            out[i] = (
                *stage,
                Quantiles {
                    p50: us(m.value_at_quantile(0.5)),
                    p99: us(m.value_at_quantile(0.99)),
                    max: us(m.max()),
                    count: m.len(),
                },
            );
        }
        if let Ok(mut t) = totals.lock() {
            for i in 0..STAGES {
                t.stages[i]
                    .add(&self.slices[self.current][i])
                    .expect("same bounds");
            }
        }
        self.current = (self.current + 1) % SLICES;
        for h in &mut self.slices[self.current] {
            h.reset();
        }
        out
    }
}

/// Cumulative per-stage histograms, for Prometheus summaries.
#[derive(Debug)]
pub struct Totals {
    /// One histogram per stage, in [`Stage::ALL`] order.
    pub stages: [Histogram<u64>; STAGES],
}

impl Default for Totals {
    fn default() -> Self {
        Totals {
            stages: std::array::from_fn(|_| histogram()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_forgets_old_samples_and_totals_keep_them() {
        let totals = Mutex::new(Totals::default());
        let mut r = StageRecorder::default();
        for _ in 0..100 {
            r.record(Stage::Pickup, 500_000);
        }
        let q = r.rotate(&totals);
        assert_eq!(q[0].1.count, 100);
        assert!((q[0].1.p50 - 500.0).abs() < 1.0, "{:?}", q[0]);
        for _ in 0..SLICES {
            r.rotate(&totals);
        }
        let q = r.rotate(&totals);
        assert_eq!(q[0].1.count, 0, "window forgot old samples");
        assert_eq!(totals.lock().unwrap().stages[0].len(), 100);
    }
}
