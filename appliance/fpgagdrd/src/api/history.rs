//! The pipeline's chart history: the frame rate, throughput and per-stage latency of
//! the last 60 s, kept at the sampling rate so a dashboard that opens (or reloads)
//! mid-run draws its fps and latency charts at once (`GET /api/v1/pipeline/history`).
//!
//! Owns: [`PipelineHistory`] (a ring of compact rows, written by the sampler in
//! `live.rs`, read by the handler) and its JSON. Neighbours: `live.rs` pushes a row per
//! [`Snapshot`]; `webui/js/api.js` (`getPipelineHistory`) reads it.
//!
//! JSON, columns of equal length, oldest first:
//! `{"period_s": 0.1, "t": [unix s], "fps": [frames/s], "gbps": [GB/s],
//!   "latency_us": {"<stage>": {"p50": [µs|null], "p99": [...], "max": [...]}}}`.
//! A stage appears when any row has samples of it; `null` marks a row whose window had
//! none. Figures are rounded to what a chart shows (t to 1 ms, fps to 0.01, GB/s to
//! 10 kB/s, latencies to 0.1 µs), which keeps 60 s at 10 Hz near 60 kB.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;
use utoipa::ToSchema;

use crate::metrics::{STAGES, Snapshot, Stage};

/// `GET /api/v1/pipeline/history`: columns of equal length, oldest first (see the module
/// doc); `null` where a row had no value.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PipelineHistoryBody {
    /// Seconds between two rows.
    pub period_s: f64,
    /// Unix time of each row, s (to 1 ms).
    pub t: Vec<Option<f64>>,
    /// Frames inferred per second (to 0.01).
    pub fps: Vec<Option<f64>>,
    /// GB/s captured (to 10 kB/s).
    pub gbps: Vec<Option<f64>>,
    /// Per stage that had samples: its p50, p99 and max columns, µs (to 0.1 µs).
    pub latency_us: BTreeMap<&'static str, StageColumns>,
}

/// One stage's latency columns, µs.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StageColumns {
    /// Median of each row's window.
    pub p50: Vec<Option<f64>>,
    /// 99th percentile.
    pub p99: Vec<Option<f64>>,
    /// Maximum.
    pub max: Vec<Option<f64>>,
}

/// Rows kept: 60 s at the sampler's 100 ms ([`super::live::SAMPLE_EVERY`]).
pub const ROWS: usize = 600;

/// One sample, compact: p50 / p99 / max per stage, in [`Stage::ALL`] order.
#[derive(Debug, Clone, Copy)]
struct Row {
    t: f64,
    fps: f64,
    gbps: f64,
    latency: [Option<[f64; 3]>; STAGES],
}

/// The last [`ROWS`] samples of the pipeline's rates and latencies.
#[derive(Debug)]
pub struct PipelineHistory {
    rows: VecDeque<Row>,
}

impl Default for PipelineHistory {
    fn default() -> Self {
        PipelineHistory {
            rows: VecDeque::with_capacity(ROWS),
        }
    }
}

/// `v` rounded to `step` (a power of ten), or `None` (JSON `null`) when not finite.
fn num(v: f64, step: f64) -> Option<f64> {
    // Printed with the step's decimal digits and read back: rounding by arithmetic
    // would leave binary tails (0.30000000000000004) in the JSON.
    let digits = (-step.log10()).ceil().max(0.0) as usize;
    format!("{v:.digits$}")
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
}

impl PipelineHistory {
    /// Appends the rates and latencies of `s`, dropping the oldest row beyond [`ROWS`].
    pub fn push(&mut self, s: &Snapshot) {
        let mut latency = [None; STAGES];
        for (slot, stage) in latency.iter_mut().zip(Stage::ALL) {
            *slot = s
                .latency_us
                .get(stage.as_str())
                .filter(|q| q.count > 0)
                .map(|q| [q.p50, q.p99, q.max]);
        }
        if self.rows.len() >= ROWS {
            self.rows.pop_front();
        }
        self.rows.push_back(Row {
            t: s.t,
            fps: s.fps,
            gbps: s.gbps,
            latency,
        });
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.rows.len()
    }

    /// The document described in the module doc.
    pub fn body(&self, period_s: f64) -> PipelineHistoryBody {
        let col = |f: &dyn Fn(&Row) -> Option<f64>| self.rows.iter().map(f).collect::<Vec<_>>();
        let mut latency = BTreeMap::new();
        for (i, stage) in Stage::ALL.iter().enumerate() {
            if self.rows.iter().all(|r| r.latency[i].is_none()) {
                continue;
            }
            let q = |k: usize| col(&|r| r.latency[i].and_then(|v| num(v[k], 0.1)));
            latency.insert(
                stage.as_str(),
                StageColumns {
                    p50: q(0),
                    p99: q(1),
                    max: q(2),
                },
            );
        }
        PipelineHistoryBody {
            period_s,
            t: col(&|r| num(r.t, 0.001)),
            fps: col(&|r| num(r.fps, 0.01)),
            gbps: col(&|r| num(r.gbps, 0.00001)),
            latency_us: latency,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{CounterValues, Quantiles};
    use serde_json::json;

    fn snap(t: f64, dma_count: u64) -> Snapshot {
        let mut latency_us = std::collections::BTreeMap::new();
        latency_us.insert(
            "dma",
            Quantiles {
                p50: 367.1034,
                p99: 410.879,
                max: 512.0,
                count: dma_count,
            },
        );
        Snapshot {
            t,
            state: "running",
            fps: 30.007746,
            gbps: 0.0179824554,
            counters: CounterValues::default(),
            latency_us,
            latest: None,
            telemetry: None,
        }
    }

    #[test]
    fn columns_line_up_with_nulls_for_empty_windows_and_rounded_figures() {
        let mut h = PipelineHistory::default();
        h.push(&snap(1796111327.7507787, 30));
        h.push(&snap(1796111327.8507787, 0));
        let v = serde_json::to_value(h.body(0.1)).unwrap();
        assert_eq!(v["t"], json!([1796111327.751, 1796111327.851]));
        assert_eq!(v["fps"], json!([30.01, 30.01]));
        assert_eq!(v["gbps"], json!([0.01798, 0.01798]));
        assert_eq!(v["latency_us"]["dma"]["p50"], json!([367.1, null]));
        assert_eq!(v["latency_us"]["dma"]["max"], json!([512.0, null]));
        let stages: Vec<&String> = v["latency_us"].as_object().unwrap().keys().collect();
        assert_eq!(stages, ["dma"], "stages never measured are left out");
    }

    #[test]
    fn keeps_the_newest_60_seconds() {
        let mut h = PipelineHistory::default();
        for i in 0..(ROWS + 5) {
            h.push(&snap(i as f64 * 0.1, 1));
        }
        assert_eq!(h.len(), ROWS);
        let v = serde_json::to_value(h.body(0.1)).unwrap();
        assert_eq!(v["t"][0], json!(0.5), "the 5 oldest rows are gone");
        assert_eq!(v["t"].as_array().unwrap().len(), ROWS);
    }
}
