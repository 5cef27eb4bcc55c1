//! The telemetry sampler: a thread that reads power, thermal, load and Jetson sources
//! (this crate's source modules) at a fixed rate and keeps the latest sample.
//!
//! Owns: [`Telemetry`] (the latest sample, shared with the service), [`spawn`],
//! [`Sample`]. Must not: block the async runtime (sysfs and NVML reads happen on this
//! thread only), stop when a source fails (a failing source is reported in `sources`,
//! the others go on), or know the pipeline: the service's frame board puts its frame
//! rate beside [`Sample::power`] for energy per frame, and keeps the history.
//! Next hop: the service's frame board (`fpgagdrd/src/board/mod.rs`) reads [`Telemetry::latest`] at each of its ticks.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::{
    BoardTotal, ClockMode, CpuCore, Emc, Fan, GpuLoad, Host, NvmlGpu, PowerMode, Rail, RaplPackage,
    Source, Sysfs, TotalRule, Zone,
};
use serde::Serialize;

/// Default sampling rate, Hz.
pub const DEFAULT_HZ: f64 = 10.0;
/// Accepted sampling rates, Hz.
pub const HZ_RANGE: std::ops::RangeInclusive<f64> = 0.5..=50.0;

/// What the power figure covers and where it comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Power {
    /// Total power, W.
    pub watts: f64,
    /// `ina238` (a board's input, VIN: Jetson AGX Thor's carrier board), `ina3221` (the
    /// board's rails) or `rapl+nvml` (x86 CPU packages and GPUs).
    pub source: &'static str,
    /// What the total includes and leaves out.
    pub covers: String,
}

/// One full telemetry sample (the body of `GET /api/v1/telemetry`, where the service
/// adds its frame rate and energy per frame).
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Sample {
    /// Unix time, s.
    pub t: f64,
    /// Power total, when any power source is present.
    pub power: Option<Power>,
    /// Power-monitor rails: INA238 inputs, then INA3221 rails.
    pub rails: Vec<Rail>,
    /// The board total by its power tree (Jetson).
    pub board_total: Option<BoardTotal>,
    /// RAPL CPU packages (x86).
    pub rapl: Vec<RaplPackage>,
    /// NVIDIA GPUs through NVML.
    pub gpus: Vec<NvmlGpu>,
    /// Jetson GPU load and clock from devfreq.
    pub gpu_load: Option<GpuLoad>,
    /// Thermal zones.
    pub zones: Vec<Zone>,
    /// All CPUs' load, %.
    pub cpu_pct: Option<f64>,
    /// Memory in use, bytes.
    pub mem_used_bytes: Option<u64>,
    /// Memory installed, bytes.
    pub mem_total_bytes: Option<u64>,
    /// Every CPU core: online, load, clock and its limits.
    pub cpu_cores: Vec<CpuCore>,
    /// Fans.
    pub fans: Vec<Fan>,
    /// The Jetson power mode (nvpmodel).
    pub power_mode: Option<PowerMode>,
    /// Whether `jetson_clocks` pinned the clocks (Jetson).
    pub clocks: Option<ClockMode>,
    /// The memory controller's clock (Jetson; debugfs, root only).
    pub emc: Option<Emc>,
    /// Memory the GPU holds through nvmap (Jetson), bytes.
    pub gpu_mem_used_bytes: Option<u64>,
    /// Each source's state.
    pub sources: Vec<Source>,
}

/// The latest sample, shared between the sampler thread and the service.
#[derive(Debug)]
pub struct Telemetry {
    period: Duration,
    latest: Mutex<Option<Arc<Sample>>>,
    stop: AtomicBool,
}

impl Telemetry {
    /// Empty telemetry sampled every `period`.
    pub fn new(period: Duration) -> Self {
        Telemetry {
            period,
            latest: Mutex::new(None),
            stop: AtomicBool::new(false),
        }
    }

    /// Time between two samples.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// The latest sample, if one has been taken.
    pub fn latest(&self) -> Option<Arc<Sample>> {
        self.latest.lock().expect("telemetry poisoned").clone()
    }

    /// Makes `sample` the latest (the sampler thread does; tests may).
    pub fn record(&self, sample: Sample) {
        *self.latest.lock().expect("telemetry poisoned") = Some(Arc::new(sample));
    }

    /// Asks the sampler thread to end (it does within one period).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The power total: the board's INA238 input or INA3221 total on a Jetson, else RAPL packages plus
/// NVML GPUs on an x86 host; `None` when the machine has no power source.
fn power_of(s: &Sample) -> Option<Power> {
    if let Some(t) = &s.board_total {
        return Some(Power {
            watts: t.power_mw / 1000.0,
            source: match t.rule {
                TotalRule::BoardInput => "ina238",
                _ => "ina3221",
            },
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

/// Starts the sampler thread: every `period`, sysfs under `root` (`/` normally) and the
/// host source.
pub fn spawn(root: PathBuf, period: Duration) -> Arc<Telemetry> {
    let telemetry = Arc::new(Telemetry::new(period));
    let t = telemetry.clone();
    std::thread::Builder::new()
        .name("fpgagdr-telemetry".into())
        .spawn(move || run(root, &t))
        .expect("spawn telemetry thread");
    telemetry
}

fn run(root: PathBuf, t: &Telemetry) {
    let mut sysfs = Sysfs::new(root);
    let mut host = Host::new();
    let mut next = Instant::now();
    while !t.stop.load(Ordering::Relaxed) {
        let fs = sysfs.sample();
        let hs = host.sample();
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
            cpu_cores: fs.cpu_cores,
            fans: fs.fans,
            power_mode: fs.power_mode,
            clocks: fs.clocks,
            emc: fs.emc,
            gpu_mem_used_bytes: fs.gpu_mem_used_bytes,
            sources: fs.sources.into_iter().chain(hs.sources).collect(),
            ..Sample::default()
        };
        s.power = power_of(&s);
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
                mem_used_bytes: None,
                mem_total_bytes: None,
            }],
            ..Sample::default()
        };
        let p = power_of(&s).unwrap();
        assert_eq!((p.watts, p.source), (115.5, "rapl+nvml"));
        assert!(p.covers.starts_with("1 CPU package(s) (RAPL) + 1 GPU"));
        assert_eq!(power_of(&Sample::default()), None);
    }
}
