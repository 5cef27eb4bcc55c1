//! The board's history as scripts read it: `GET /api/v1/pipeline/history` (the kept
//! snapshots' rates and latencies as columns) and `GET /api/v1/telemetry/history` (the
//! kept snapshots' telemetry points, or the last hour at one point per second). The
//! dashboard does not read these: it draws the stream's replay.
//!
//! Owns: [`PipelineHistoryBody`], [`TelemetryHistory`], `Coarse` (the hour of
//! per-second means the board keeps beside its minute of snapshots).
//! Pipeline history JSON, columns of equal length, oldest first:
//! `{"period_s": 0.1, "t": [unix s], "fps": [frames/s], "gbps": [GB/s],
//!   "latency_us": {"<stage>": {"p50": [µs|null], "p99": [...], "max": [...]}}}`.
//! A stage appears when any row has samples of it; `null` marks a row whose window had
//! none. Figures are rounded to what a chart shows (t to 1 ms, fps to 0.01, GB/s to
//! 10 kB/s, latencies to 0.1 µs).

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use serde::Serialize;
use utoipa::ToSchema;

use super::snapshot::{Snapshot, TelemetryPoint, round};
use crate::metrics::Stage;

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

fn num(v: f64, digits: i32) -> Option<f64> {
    v.is_finite().then(|| round(v, digits))
}

/// The pipeline history of `snapshots` (oldest first).
pub(super) fn pipeline<'a>(
    snapshots: impl Iterator<Item = &'a Snapshot>,
    period: Duration,
) -> PipelineHistoryBody {
    let rows: Vec<&Snapshot> = snapshots.collect();
    let col = |f: &dyn Fn(&Snapshot) -> Option<f64>| rows.iter().map(|s| f(s)).collect::<Vec<_>>();
    let mut latency = BTreeMap::new();
    for stage in Stage::ALL {
        let name = stage.as_str();
        let of = |s: &Snapshot| s.latency_us.get(name).filter(|q| q.count > 0).copied();
        if rows.iter().all(|s| of(s).is_none()) {
            continue;
        }
        latency.insert(
            name,
            StageColumns {
                p50: col(&|s| of(s).and_then(|q| num(q.p50, 1))),
                p99: col(&|s| of(s).and_then(|q| num(q.p99, 1))),
                max: col(&|s| of(s).and_then(|q| num(q.max, 1))),
            },
        );
    }
    PipelineHistoryBody {
        period_s: period.as_secs_f64(),
        t: col(&|s| num(s.t, 3)),
        fps: col(&|s| num(s.fps, 2)),
        gbps: col(&|s| num(s.gbps, 5)),
        latency_us: latency,
    }
}

/// A telemetry history point: the figures the power charts draw.
#[derive(Debug, Clone, Default, PartialEq, Serialize, ToSchema)]
pub struct TelemetryHistoryPoint {
    /// Unix time, s.
    pub t: f64,
    /// Power total, W.
    pub power_w: Option<f64>,
    /// Power per rail, mW, in [`TelemetryHistory::rails`] order.
    pub rails_mw: Vec<Option<f64>>,
    /// CPU load, %.
    pub cpu_pct: Option<f64>,
    /// GPU load, % (Jetson devfreq, else the busiest NVML GPU).
    pub gpu_pct: Option<f64>,
    /// Hottest thermal zone, °C.
    pub temp_max_c: Option<f64>,
    /// Frames inferred per second.
    pub fps: f64,
    /// Energy per frame, mJ.
    pub energy_per_frame_mj: Option<f64>,
}

/// `GET /api/v1/telemetry/history`.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct TelemetryHistory {
    /// Seconds between points.
    pub period_s: f64,
    /// Rail names, the order of every point's `rails_mw`.
    pub rails: Vec<String>,
    /// Oldest first.
    pub points: Vec<TelemetryHistoryPoint>,
}

/// Adds the rails of `p` to `names` (first seen first) and returns its rail powers in
/// that order.
fn rails_in_order(names: &mut Vec<String>, p: &TelemetryPoint) -> Vec<Option<f64>> {
    for (n, _) in &p.rails_mw {
        if !names.contains(n) {
            names.push(n.clone());
        }
    }
    names
        .iter()
        .map(|n| p.rails_mw.iter().find(|(m, _)| m == n).map(|(_, mw)| *mw))
        .collect()
}

fn history_point(names: &mut Vec<String>, p: &TelemetryPoint, fps: f64) -> TelemetryHistoryPoint {
    TelemetryHistoryPoint {
        t: p.t,
        power_w: p.power_w,
        rails_mw: rails_in_order(names, p),
        cpu_pct: p.cpu_pct,
        gpu_pct: p.gpu_pct,
        temp_max_c: p.temp_max_c,
        fps,
        energy_per_frame_mj: p.energy_per_frame_mj,
    }
}

/// The telemetry points of `snapshots` (each telemetry sample once, oldest first).
pub(super) fn telemetry_fine<'a>(
    snapshots: impl Iterator<Item = &'a Snapshot>,
    period: Duration,
) -> TelemetryHistory {
    let mut rails = Vec::new();
    let mut points: Vec<TelemetryHistoryPoint> = Vec::new();
    for s in snapshots {
        let Some(p) = &s.telemetry else { continue };
        if points.last().is_some_and(|last| last.t >= p.t) {
            continue; // the same sample as the previous snapshot's
        }
        points.push(history_point(&mut rails, p, s.fps));
    }
    let n = rails.len();
    for p in &mut points {
        p.rails_mw.resize(n, None);
    }
    TelemetryHistory {
        period_s: period.as_secs_f64(),
        rails,
        points,
    }
}

/// Points of the 1 Hz history (one hour).
pub const COARSE_POINTS: usize = 3600;

/// The last hour at one point per second, each the mean of that second's points.
#[derive(Debug, Default)]
pub(super) struct Coarse {
    last_t: f64,
    rails: Vec<String>,
    points: VecDeque<TelemetryHistoryPoint>,
    second: Vec<TelemetryHistoryPoint>,
}

impl Coarse {
    /// Adds the point of one snapshot (a sample seen before is skipped).
    pub(super) fn push(&mut self, p: &TelemetryPoint, fps: f64) {
        if p.t <= self.last_t {
            return;
        }
        self.last_t = p.t;
        let point = history_point(&mut self.rails, p, fps);
        if self
            .second
            .first()
            .is_some_and(|f| point.t.floor() > f.t.floor())
        {
            let mean = mean_point(&self.second);
            self.second.clear();
            if self.points.len() >= COARSE_POINTS {
                self.points.pop_front();
            }
            self.points.push_back(mean);
        }
        self.second.push(point);
    }

    pub(super) fn body(&self) -> TelemetryHistory {
        let n = self.rails.len();
        TelemetryHistory {
            period_s: 1.0,
            rails: self.rails.clone(),
            points: self
                .points
                .iter()
                .map(|p| {
                    let mut p = p.clone();
                    p.rails_mw.resize(n, None);
                    p
                })
                .collect(),
        }
    }
}

/// The mean of a second's points (each field over the points that have it).
fn mean_point(points: &[TelemetryHistoryPoint]) -> TelemetryHistoryPoint {
    let mean = |f: &dyn Fn(&TelemetryHistoryPoint) -> Option<f64>| {
        let v: Vec<f64> = points.iter().filter_map(f).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let rails = points.iter().map(|p| p.rails_mw.len()).max().unwrap_or(0);
    TelemetryHistoryPoint {
        t: points[0].t.floor(),
        power_w: mean(&|p| p.power_w),
        rails_mw: (0..rails)
            .map(|i| mean(&|p| p.rails_mw.get(i).copied().flatten()))
            .collect(),
        cpu_pct: mean(&|p| p.cpu_pct),
        gpu_pct: mean(&|p| p.gpu_pct),
        temp_max_c: mean(&|p| p.temp_max_c),
        fps: mean(&|p| Some(p.fps)).unwrap_or(0.0),
        energy_per_frame_mj: mean(&|p| p.energy_per_frame_mj),
    }
}
