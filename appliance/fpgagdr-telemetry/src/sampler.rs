//! The telemetry sampler: a thread that reads power, thermal and load sources (this
//! crate's source modules) at a fixed rate, puts the pipeline's frame rate beside the power
//! to give energy per frame, and keeps a history for pages that open mid-run.
//!
//! Owns: [`Telemetry`] (latest sample + history, shared with the HTTP side),
//! [`spawn`], [`Sample`], [`Point`]. Must not: block the async runtime (sysfs and NVML
//! reads happen on this thread only) or stop when a source fails (a failing source is
//! reported in `sources`, the others go on).
//! History: the last 60 s at the full rate, and the last hour at 1 point per second
//! (each the mean of that second's samples).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::{BoardTotal, GpuLoad, Host, NvmlGpu, Rail, RaplPackage, Source, Sysfs, Zone};
use serde::Serialize;

/// Default sampling rate, Hz.
pub const DEFAULT_HZ: f64 = 10.0;
/// Accepted sampling rates, Hz.
pub const HZ_RANGE: std::ops::RangeInclusive<f64> = 0.5..=50.0;
/// Span of the full-rate history.
pub const FINE_SPAN: Duration = Duration::from_secs(60);
/// Points of the 1 Hz history (one hour).
pub const COARSE_POINTS: usize = 3600;

/// What the power figure covers and where it comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Power {
    /// Total power, W.
    pub watts: f64,
    /// `ina3221` (the board's rails) or `rapl+nvml` (x86 CPU packages and GPUs).
    pub source: &'static str,
    /// What the total includes and leaves out.
    pub covers: String,
}

/// One full telemetry sample (`GET /api/v1/telemetry`).
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Sample {
    /// Unix time, s.
    pub t: f64,
    /// Power total, when any power source is present.
    pub power: Option<Power>,
    /// INA3221 rails.
    pub rails: Vec<Rail>,
    /// The board total by its power tree (Jetson).
    pub board_total: Option<BoardTotal>,
    /// RAPL CPU packages (x86).
    pub rapl: Vec<RaplPackage>,
    /// NVIDIA GPUs through NVML.
    pub gpus: Vec<NvmlGpu>,
    /// Jetson GPU load from devfreq.
    pub gpu_load: Option<GpuLoad>,
    /// Thermal zones.
    pub zones: Vec<Zone>,
    /// All CPUs' load, %.
    pub cpu_pct: Option<f64>,
    /// Memory in use, bytes.
    pub mem_used_bytes: Option<u64>,
    /// Memory installed, bytes.
    pub mem_total_bytes: Option<u64>,
    /// Frames inferred per second over the last second.
    pub fps: f64,
    /// Energy per inferred frame over the last second, mJ (power and frames present).
    pub energy_per_frame_mj: Option<f64>,
    /// Inferred frames per joule over the last second.
    pub frames_per_joule: Option<f64>,
    /// Each source's state.
    pub sources: Vec<Source>,
}

/// A history point: the figures the dashboard charts.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Point {
    /// Unix time, s.
    pub t: f64,
    /// Power total, W.
    pub power_w: Option<f64>,
    /// Power per rail, mW, in [`History::rails`] order.
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

/// The history a page loads on open (`GET /api/v1/telemetry/history`).
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct History {
    /// Seconds between points.
    pub period_s: f64,
    /// Rail names, the order of every point's `rails_mw`.
    pub rails: Vec<String>,
    /// Oldest first.
    pub points: Vec<Point>,
}

#[derive(Debug, Default)]
struct Rings {
    rails: Vec<String>,
    fine: VecDeque<Point>,
    coarse: VecDeque<Point>,
    second: Vec<Point>,
}

/// Latest sample and history, shared between the sampler thread and the HTTP side.
#[derive(Debug)]
pub struct Telemetry {
    period: Duration,
    latest: Mutex<Option<Arc<Sample>>>,
    rings: Mutex<Rings>,
    stop: AtomicBool,
}

impl Telemetry {
    /// Empty telemetry sampled every `period`.
    pub fn new(period: Duration) -> Self {
        Telemetry {
            period,
            latest: Mutex::new(None),
            rings: Mutex::new(Rings::default()),
            stop: AtomicBool::new(false),
        }
    }

    /// The latest sample, if one has been taken.
    pub fn latest(&self) -> Option<Arc<Sample>> {
        self.latest.lock().expect("telemetry poisoned").clone()
    }

    /// The latest history point (carried in every live snapshot).
    pub fn latest_point(&self) -> Option<Point> {
        self.rings
            .lock()
            .expect("telemetry poisoned")
            .fine
            .back()
            .cloned()
    }

    /// The history: `coarse == false` gives the last 60 s at the full rate, `true` the
    /// last hour at 1 point per second.
    pub fn history(&self, coarse: bool) -> History {
        let r = self.rings.lock().expect("telemetry poisoned");
        let (period_s, points) = if coarse {
            (1.0, &r.coarse)
        } else {
            (self.period.as_secs_f64(), &r.fine)
        };
        History {
            period_s,
            rails: r.rails.clone(),
            points: points.iter().cloned().collect(),
        }
    }

    /// Asks the sampler thread to end (it does within one period).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    fn record(&self, sample: Sample) {
        let mut r = self.rings.lock().expect("telemetry poisoned");
        let names: Vec<String> = sample.rails.iter().map(|x| x.name.clone()).collect();
        for n in &names {
            if !r.rails.contains(n) {
                r.rails.push(n.clone());
            }
        }
        let rails_mw = r
            .rails
            .iter()
            .map(|n| {
                sample
                    .rails
                    .iter()
                    .find(|x| &x.name == n)
                    .map(|x| x.power_mw)
            })
            .collect();
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
        let point = Point {
            t: sample.t,
            power_w: sample.power.as_ref().map(|p| p.watts),
            rails_mw,
            cpu_pct: sample.cpu_pct,
            gpu_pct,
            temp_max_c: sample.zones.iter().map(|z| z.celsius).reduce(f64::max),
            fps: sample.fps,
            energy_per_frame_mj: sample.energy_per_frame_mj,
        };
        let fine_len = (FINE_SPAN.as_secs_f64() / self.period.as_secs_f64()).ceil() as usize;
        if r.fine.len() >= fine_len {
            r.fine.pop_front();
        }
        r.fine.push_back(point.clone());
        if r.second
            .first()
            .is_some_and(|p| point.t.floor() > p.t.floor())
        {
            let mean = mean_point(&r.second);
            r.second.clear();
            if r.coarse.len() >= COARSE_POINTS {
                r.coarse.pop_front();
            }
            r.coarse.push_back(mean);
        }
        r.second.push(point);
        drop(r);
        *self.latest.lock().expect("telemetry poisoned") = Some(Arc::new(sample));
    }
}

/// The mean of a second's points (each field over the points that have it).
fn mean_point(points: &[Point]) -> Point {
    let mean = |f: &dyn Fn(&Point) -> Option<f64>| {
        let v: Vec<f64> = points.iter().filter_map(f).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let rails = points.iter().map(|p| p.rails_mw.len()).max().unwrap_or(0);
    Point {
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

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The power total: the board's INA3221 total on a Jetson, else RAPL packages plus
/// NVML GPUs on an x86 host; `None` when the machine has no power source.
fn power_of(s: &Sample) -> Option<Power> {
    if let Some(t) = &s.board_total {
        return Some(Power {
            watts: t.power_mw / 1000.0,
            source: "ina3221",
            covers: t.covers.clone(),
        });
    }
    let cpu: Vec<f64> = s.rapl.iter().map(|p| p.power_w).collect();
    let gpu: Vec<f64> = s.gpus.iter().filter_map(|g| g.power_w).collect();
    if cpu.is_empty() && gpu.is_empty() {
        return None;
    }
    Some(Power {
        watts: cpu.iter().chain(&gpu).sum(),
        source: "rapl+nvml",
        covers: format!(
            "{} CPU package(s) (RAPL) + {} GPU board(s) (NVML); DRAM, disks, fans and the power supply not included",
            cpu.len(),
            gpu.len()
        ),
    })
}

/// Starts the sampler thread: every `period`, sysfs under `root` (`/` normally), the
/// host source, and `frames` (frames inferred so far, from the pipeline's counters: the
/// caller wires it, so this crate knows nothing of the pipeline).
pub fn spawn(
    root: PathBuf,
    period: Duration,
    frames: impl Fn() -> u64 + Send + 'static,
) -> Arc<Telemetry> {
    let telemetry = Arc::new(Telemetry::new(period));
    let t = telemetry.clone();
    std::thread::Builder::new()
        .name("fpgagdr-telemetry".into())
        .spawn(move || run(root, frames, &t))
        .expect("spawn telemetry thread");
    telemetry
}

fn run(root: PathBuf, frames_inferred: impl Fn() -> u64, t: &Telemetry) {
    let mut sysfs = Sysfs::new(root);
    let mut host = Host::new();
    let window = (1.0 / t.period.as_secs_f64()).round().max(1.0) as usize;
    let mut frames: VecDeque<(Instant, u64)> = VecDeque::with_capacity(window + 1);
    let mut next = Instant::now();
    while !t.stop.load(Ordering::Relaxed) {
        let fs = sysfs.sample();
        let hs = host.sample();
        let now = Instant::now();
        frames.push_back((now, frames_inferred()));
        if frames.len() > window + 1 {
            frames.pop_front();
        }
        let fps = match (frames.front(), frames.back()) {
            (Some((t0, f0)), Some((t1, f1))) if t1 > t0 => {
                f1.saturating_sub(*f0) as f64 / (*t1 - *t0).as_secs_f64()
            }
            _ => 0.0,
        };
        let mut s = Sample {
            t: unix_now(),
            rails: fs.rails,
            board_total: fs.board_total,
            rapl: fs.rapl,
            gpus: hs.gpus,
            gpu_load: fs.gpu_load,
            zones: fs.zones,
            cpu_pct: hs.cpu_pct,
            mem_used_bytes: hs.mem_used_bytes,
            mem_total_bytes: hs.mem_total_bytes,
            fps,
            sources: fs.sources.into_iter().chain(hs.sources).collect(),
            ..Sample::default()
        };
        s.power = power_of(&s);
        if let Some(p) = &s.power
            && fps > 0.0
            && p.watts > 0.0
        {
            s.energy_per_frame_mj = Some(p.watts * 1000.0 / fps);
            s.frames_per_joule = Some(fps / p.watts);
        }
        t.record(s);
        next += t.period;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            next = now; // fell behind (slow source): skip, do not burst
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_at(t: f64, watts: f64, fps: f64) -> Sample {
        Sample {
            t,
            power: Some(Power {
                watts,
                source: "ina3221",
                covers: String::new(),
            }),
            fps,
            ..Sample::default()
        }
    }

    #[test]
    fn history_keeps_60_s_fine_and_averages_whole_seconds() {
        let tel = Telemetry::new(Duration::from_millis(100));
        // 70 s at 10 Hz: power 1 W in even seconds, 3 W in odd ones.
        for i in 0..700 {
            let t = 1000.0 + i as f64 / 10.0;
            let w = if (t.floor() as i64) % 2 == 0 {
                1.0
            } else {
                3.0
            };
            tel.record(sample_at(t, w, 10.0));
        }
        let fine = tel.history(false);
        assert_eq!(fine.points.len(), 600);
        assert_eq!(fine.period_s, 0.1);
        assert_eq!(fine.points.last().unwrap().t, 1069.9);
        let coarse = tel.history(true);
        // 69 whole seconds closed (the 70th is still open).
        assert_eq!(coarse.points.len(), 69);
        assert_eq!(coarse.points[0].t, 1000.0);
        assert_eq!(coarse.points[0].power_w, Some(1.0));
        assert_eq!(coarse.points[1].power_w, Some(3.0));
    }

    #[test]
    fn x86_power_is_rapl_plus_nvml_and_says_so() {
        let s = Sample {
            rapl: vec![RaplPackage {
                name: "package-0".into(),
                power_w: 35.0,
            }],
            gpus: vec![NvmlGpu {
                index: 0,
                name: "GPU".into(),
                power_w: Some(80.5),
                load_pct: None,
                celsius: None,
            }],
            ..Sample::default()
        };
        let p = power_of(&s).unwrap();
        assert_eq!((p.watts, p.source), (115.5, "rapl+nvml"));
        assert!(p.covers.starts_with("1 CPU package(s) (RAPL) + 1 GPU"));
        assert_eq!(power_of(&Sample::default()), None);
    }
}
