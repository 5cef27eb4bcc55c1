//! The frame board's types: [`Snapshot`] (the board at one instant), [`TelemetryPoint`]
//! (energy per frame beside the power), [`TelemetryBody`] (`GET /telemetry`), and how
//! they are written: every figure rounded to what a chart shows, so the stream and its
//! replay stay small (a number's binary tail is dropped, never its meaning).
//!
//! Owns: those types, `round`, `point`. Used by `mod.rs` (the sampler), `replay.rs`
//! and `history.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Serialize, Serializer};

use crate::metrics::{CounterValues, Quantiles};
use fpgagdr_telemetry::sampler::Sample;

/// One sample of the energy-relevant telemetry, as the board charts it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct TelemetryPoint {
    /// Unix time of the telemetry sample, s.
    #[serde(serialize_with = "ms")]
    pub t: f64,
    /// Total power, W (to 1 mW); null without a power source.
    #[serde(serialize_with = "opt3")]
    pub power_w: Option<f64>,
    /// Power of each INA3221 rail, mW (to 0.1 mW), by rail name in the board's order.
    #[serde(serialize_with = "rails_map")]
    #[schema(value_type = std::collections::HashMap<String, f64>)]
    pub rails_mw: Vec<(String, f64)>,
    /// All CPUs' load, % (to 0.1).
    #[serde(serialize_with = "opt1")]
    pub cpu_pct: Option<f64>,
    /// GPU load, % (Jetson devfreq, else the busiest NVML GPU; to 0.1).
    #[serde(serialize_with = "opt1")]
    pub gpu_pct: Option<f64>,
    /// Hottest thermal zone, °C (to 0.01); null without a readable zone.
    #[serde(serialize_with = "opt2")]
    pub temp_max_c: Option<f64>,
    /// Energy per inferred frame over the last second, mJ (4 significant digits); null
    /// when no frame or no power.
    #[serde(serialize_with = "sig4")]
    pub energy_per_frame_mj: Option<f64>,
    /// Its inverse, inferred frames per joule (4 significant digits).
    #[serde(serialize_with = "sig4")]
    pub frames_per_joule: Option<f64>,
}

/// The board at one instant. Every field is read in one tick, so a snapshot never mixes
/// two moments: its result, its counters and its state belong together.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Snapshot {
    /// Unix time, s (to 1 ms).
    #[serde(serialize_with = "ms")]
    pub t: f64,
    /// The pipeline generation: grows by one on every start, stop, failure and config
    /// change (it starts at the service's start time in ms). A page re-reads
    /// `GET /status` when it changes, and takes a snapshot of a generation older than a
    /// Start/Stop reply's as sampled before that action.
    pub generation: u64,
    /// `running`, `stopped` or `failed`.
    pub state: &'static str,
    /// How long this pipeline has been running, s (to 0.1); null while stopped or failed.
    #[serde(serialize_with = "opt1")]
    pub running_s: Option<f64>,
    /// Frames inferred per second over the last second (to 0.01).
    #[serde(serialize_with = "dec2")]
    pub fps: f64,
    /// GB/s moved by C2H over the last second (to 1 kB/s).
    #[serde(serialize_with = "dec6")]
    pub gbps: f64,
    /// Counters at this instant (monotonic over the service's life).
    #[serde(flatten)]
    pub counters: CounterValues,
    /// Per-stage latency over the sliding window (about 1 s), µs; a stage without a
    /// sample in the window is left out.
    #[serde(serialize_with = "stages")]
    pub latency_us: BTreeMap<&'static str, Quantiles>,
    /// The latest telemetry point with energy per frame; null before the first sample.
    pub telemetry: Option<TelemetryPoint>,
    /// The latest result as JSON, the body of `GET /api/v1/results/latest` (the results
    /// room's payload: [`LatestResults`](super::LatestResults)); sent with the newest
    /// snapshot of each event only: see `replay.rs`.
    #[serde(skip)]
    pub latest: Option<Arc<str>>,
    /// The full telemetry sample this snapshot's point comes from (sent with the newest
    /// snapshot of each event only).
    #[serde(skip)]
    pub sample: Option<Arc<Sample>>,
}

/// `GET /api/v1/telemetry`: the latest full sample, and the board's frame rate and energy
/// per frame over the same second.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TelemetryBody {
    /// The telemetry thread's sample.
    #[serde(flatten)]
    #[schema(value_type = Sample)]
    pub sample: Arc<Sample>,
    /// Frames inferred per second over the last second (the board's rate).
    pub fps: f64,
    /// Energy per inferred frame over that second, mJ (power and frames present).
    pub energy_per_frame_mj: Option<f64>,
    /// Inferred frames per joule over that second.
    pub frames_per_joule: Option<f64>,
}

pub(super) fn round(v: f64, digits: i32) -> f64 {
    // Division by a power of ten (not multiplication by its inverse) gives the double
    // nearest to the decimal, which prints without a binary tail.
    let p = 10f64.powi(digits);
    (v * p).round() / p
}

fn num<S: Serializer>(v: f64, digits: i32, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() {
        s.serialize_f64(round(v, digits))
    } else {
        s.serialize_none()
    }
}

fn ms<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    num(*v, 3, s)
}
fn dec2<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    num(*v, 2, s)
}
fn dec6<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    num(*v, 6, s)
}
fn opt<S: Serializer>(v: &Option<f64>, digits: i32, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => num(*v, digits, s),
        None => s.serialize_none(),
    }
}
fn opt1<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    opt(v, 1, s)
}
fn opt2<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    opt(v, 2, s)
}
fn opt3<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    opt(v, 3, s)
}

/// `v` to 4 significant digits.
fn sig4<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) if *v != 0.0 && v.is_finite() => {
            let digits = 3 - v.abs().log10().floor() as i32;
            num(*v, digits, s)
        }
        other => opt(other, 0, s),
    }
}

fn rails_map<S: Serializer>(v: &[(String, f64)], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(v.len()))?;
    for (name, mw) in v {
        m.serialize_entry(name, &round(*mw, 1))?;
    }
    m.end()
}

fn stages<S: Serializer>(v: &BTreeMap<&'static str, Quantiles>, s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Q {
        p50: f64,
        p99: f64,
        max: f64,
        count: u64,
    }
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(v.len()))?;
    for (stage, q) in v {
        m.serialize_entry(
            stage,
            &Q {
                p50: round(q.p50, 1),
                p99: round(q.p99, 1),
                max: round(q.max, 1),
                count: q.count,
            },
        )?;
    }
    m.end()
}

/// The telemetry point of `sample`, with energy per frame at `fps` (frames/s); also
/// the unrounded energy per frame (mJ) and frames per joule.
pub(super) fn point(sample: &Sample, fps: f64) -> (TelemetryPoint, Option<f64>, Option<f64>) {
    let watts = sample.power.as_ref().map(|p| p.watts);
    let (energy, fpj) = match watts {
        Some(w) if fps > 0.0 && w > 0.0 => (Some(w * 1000.0 / fps), Some(fps / w)),
        _ => (None, None),
    };
    let gpu_pct = sample
        .gpu_load
        .as_ref()
        .and_then(|g| g.load_pct)
        .or_else(|| {
            sample
                .gpus
                .iter()
                .filter_map(|g| g.load_pct)
                .reduce(f64::max)
        });
    (
        TelemetryPoint {
            t: sample.t,
            power_w: watts,
            rails_mw: sample
                .rails
                .iter()
                .map(|r| (r.name.clone(), r.power_mw))
                .collect(),
            cpu_pct: sample.cpu_pct,
            gpu_pct,
            temp_max_c: sample.zones.iter().map(|z| z.celsius).reduce(f64::max),
            energy_per_frame_mj: energy,
            frames_per_joule: fpj,
        },
        energy,
        fpj,
    )
}
