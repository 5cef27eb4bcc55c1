//! Counters and per-stage latency histograms of the frame path.
//!
//! Owns: [`Counters`] (atomics, bumped per frame), [`Stage`], [`StageRecorder`] (HDR
//! histograms owned by the inference thread, published a few times a second — never a
//! lock per frame), [`Published`] (what the HTTP side reads) and [`Snapshot`] (one
//! sample for the dashboard). Units: latencies in µs (recorded in ns), throughput in
//! frames/s and GB/s (10^9 bytes/s).
//! Neighbours: written by `pipeline/`, read by `api/`.

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
    /// Waits for a frame that lasted the whole `card.timeout_ms` (the sensor is slower
    /// than the timeout, or stopped sending).
    pub frame_wait_timeouts: AtomicU64,
    /// Bytes moved by C2H into the ring.
    pub bytes_captured: AtomicU64,
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
            frame_wait_timeouts: r(&self.frame_wait_timeouts),
            bytes_captured: r(&self.bytes_captured),
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
    /// See [`Counters::frame_wait_timeouts`].
    pub frame_wait_timeouts: u64,
    /// See [`Counters::bytes_captured`].
    pub bytes_captured: u64,
    /// See [`Counters::batches_run`].
    pub batches_run: u64,
}

/// Stages of the frame path whose latency is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
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
    /// DMA submit → result ready.
    EndToEnd,
}

impl Stage {
    /// All stages, in path order.
    pub const ALL: [Stage; 6] = [
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
pub type StageQuantiles = [(Stage, Quantiles); 6];

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

/// What the inference thread publishes for the HTTP side.
#[derive(Debug, Clone, Default)]
pub struct Published {
    /// Quantiles over the sliding window.
    pub window: Option<StageQuantiles>,
    /// The most recent result.
    pub latest: Option<FrameResult>,
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
    slices: Vec<[Histogram<u64>; 6]>,
    current: usize,
    merged: [Histogram<u64>; 6],
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
        let mut out = [(Stage::Dma, Quantiles::default()); 6];
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
            for i in 0..6 {
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
    pub stages: [Histogram<u64>; 6],
}

impl Default for Totals {
    fn default() -> Self {
        Totals {
            stages: std::array::from_fn(|_| histogram()),
        }
    }
}

/// One dashboard sample.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Snapshot {
    /// Unix time, seconds.
    pub t: f64,
    /// `"running"`, `"stopped"` or `"failed"`.
    pub state: &'static str,
    /// Frames inferred per second since the previous sample.
    pub fps: f64,
    /// GB/s captured by DMA since the previous sample.
    pub gbps: f64,
    /// Counters at this instant.
    #[serde(flatten)]
    pub counters: CounterValues,
    /// Stage quantiles over the sliding window, µs.
    pub latency_us: std::collections::BTreeMap<&'static str, Quantiles>,
    /// Latest result (sequence number and top-5), if any.
    pub latest: Option<LatestBrief>,
    /// Latest telemetry point (power, loads, temperature, energy per frame), if any.
    pub telemetry: Option<fpgagdr_telemetry::sampler::Point>,
}

/// The part of the latest result carried in every snapshot.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct LatestBrief {
    /// Sensor sequence number.
    pub seq: u64,
    /// Best five classes.
    pub top5: Vec<Classification>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_forgets_old_samples_and_totals_keep_them() {
        let totals = Mutex::new(Totals::default());
        let mut r = StageRecorder::default();
        for _ in 0..100 {
            r.record(Stage::Dma, 500_000);
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
