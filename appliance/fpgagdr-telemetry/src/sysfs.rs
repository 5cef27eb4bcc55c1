//! One pass over every sysfs source.
//!
//! Owns: [`Sysfs`], [`SysfsSample`]. Must not: fail or block: a missing or unreadable
//! source is reported in `sources` and the others go on.

use std::path::{Path, PathBuf};

use crate::cpu::{CpuCore, CpuMeter};
use crate::devfreq::GpuLoad;
use crate::fan::Fan;
use crate::ina3221::Rail;
use crate::jetson::{ClockMode, Emc, PowerMode};
use crate::power_tree::{BoardTotal, board_total};
use crate::rapl::{RaplMeter, RaplPackage};
use crate::source::Source;
use crate::thermal::Zone;
use crate::{devfreq, fan, ina238, ina3221, jetson, thermal};

/// Everything one pass over sysfs found.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SysfsSample {
    /// Power-monitor rails: INA238 inputs first, then INA3221 rails (channels labelled
    /// `NC` are not rails and are left out).
    pub rails: Vec<Rail>,
    /// The board's total, by its power tree (`None` without rails).
    pub board_total: Option<BoardTotal>,
    /// CPU package power from RAPL, one entry per package (needs two samples).
    pub rapl: Vec<RaplPackage>,
    /// Thermal zones that could be read.
    pub zones: Vec<Zone>,
    /// The Jetson GPU's load and frequency from devfreq.
    pub gpu_load: Option<GpuLoad>,
    /// Every CPU core: online, load, clock and its limits.
    pub cpu_cores: Vec<CpuCore>,
    /// Fans (PWM duty, tachometer).
    pub fans: Vec<Fan>,
    /// The Jetson power mode (nvpmodel).
    pub power_mode: Option<PowerMode>,
    /// Whether `jetson_clocks` pinned the clocks (Jetson only).
    pub clocks: Option<ClockMode>,
    /// The memory controller's clock (Jetson, debugfs).
    pub emc: Option<Emc>,
    /// Memory the GPU holds through nvmap (Jetson), bytes.
    pub gpu_mem_used_bytes: Option<u64>,
    /// Per-source state.
    pub sources: Vec<Source>,
}

/// Reads the sysfs sources under a root (`/` on a real machine).
#[derive(Debug)]
pub struct Sysfs {
    root: PathBuf,
    rapl: RaplMeter,
    cpus: CpuMeter,
}

impl Sysfs {
    /// Sources under `root` (`/` on a real machine, a fixture tree in tests).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        Sysfs {
            rapl: RaplMeter::new(&root),
            cpus: CpuMeter::new(&root),
            root,
        }
    }

    /// The root paths are resolved against.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// One sample of every source; never fails, never blocks on a missing file
    /// (sysfs attribute reads of a present device return at once).
    pub fn sample(&mut self) -> SysfsSample {
        let mut s = SysfsSample::default();
        let (mut rails, ina238_state) = ina238::read(&self.root);
        let (ina3221_rails, state) = ina3221::read(&self.root);
        rails.extend(ina3221_rails);
        s.board_total = board_total(&rails);
        s.rails = rails;
        s.sources.push(Source {
            name: "ina3221",
            state,
        });
        let (rapl, state) = self.rapl.sample();
        s.rapl = rapl;
        s.sources.push(Source {
            name: "rapl",
            state,
        });
        let (zones, state) = thermal::read(&self.root);
        s.zones = zones;
        s.sources.push(Source {
            name: "thermal",
            state,
        });
        let (gpu, state) = devfreq::read(&self.root);
        s.gpu_load = gpu;
        s.sources.push(Source {
            name: "devfreq",
            state,
        });
        let (cores, state) = self.cpus.sample();
        s.cpu_cores = cores;
        s.sources.push(Source {
            name: "cpufreq",
            state,
        });
        let (fans, state) = fan::read(&self.root);
        s.fans = fans;
        s.sources.push(Source { name: "fan", state });
        let (mode, state) = jetson::power_mode(&self.root);
        s.power_mode = mode;
        s.sources.push(Source {
            name: "nvpmodel",
            state,
        });
        let (emc, state) = jetson::emc(&self.root);
        s.emc = emc;
        s.sources.push(Source { name: "emc", state });
        let (mem, state) = jetson::gpu_memory(&self.root);
        s.gpu_mem_used_bytes = mem;
        s.sources.push(Source {
            name: "nvmap",
            state,
        });
        // Last, so the earlier sources keep their places in `sources`.
        s.sources.push(Source {
            name: "ina238",
            state: ina238_state,
        });
        s.clocks = jetson::clock_mode(&s.cpu_cores, s.gpu_load.as_ref(), s.emc.as_ref());
        s
    }
}
