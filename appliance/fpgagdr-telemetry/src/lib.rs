//! Telemetry for the appliance: the INA3221 power rails of a Jetson (both kernel drivers),
//! the board total that follows the board's power tree, RAPL package power on x86 hosts,
//! thermal zones and the Jetson GPU's devfreq load, all read from sysfs under a root
//! that tests point at fixture trees.
//!
//! Owns: [`Sysfs`] (one sample of every sysfs source, never failing: a missing or
//! unreadable source or channel is reported absent with its reason), [`Host`] (CPU and
//! memory load through sysinfo, discrete GPUs through NVML), the per-source modules. Must not: keep a thread or a history; the service's sampler does that.
//! Units are in every field name (mV, mA, mW, W, °C as millidegrees in sysfs).

mod devfreq;
mod host;
mod ina3221;
mod power_tree;
mod rapl;
mod thermal;
pub mod sampler;

use std::path::{Path, PathBuf};

pub use devfreq::GpuLoad;
pub use host::{Host, HostSample, NvmlGpu};
pub use ina3221::{Driver, Rail};
pub use power_tree::{BoardTotal, TotalRule, board_total};
pub use rapl::{RaplMeter, RaplPackage};
pub use thermal::Zone;

/// Whether a source gave data in the last sample, and why not.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "state", content = "detail", rename_all = "snake_case")]
pub enum SourceState {
    /// Read this sample.
    Ok,
    /// Not present on this machine (a normal state); the string says what was looked for.
    Absent(String),
    /// Present but unreadable; the string is the error.
    Error(String),
}

/// One source's state, by name (`ina3221`, `rapl`, `thermal`, `devfreq`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Source {
    /// Source name.
    pub name: &'static str,
    /// Its state.
    #[serde(flatten)]
    pub state: SourceState,
}

/// Everything one pass over sysfs found.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SysfsSample {
    /// INA3221 rails (channels labelled `NC` are not rails and are left out).
    pub rails: Vec<Rail>,
    /// The board's total, by its power tree (`None` without rails).
    pub board_total: Option<BoardTotal>,
    /// CPU package power from RAPL, one entry per package (needs two samples).
    pub rapl: Vec<RaplPackage>,
    /// Thermal zones that could be read.
    pub zones: Vec<Zone>,
    /// The Jetson GPU's load and frequency from devfreq.
    pub gpu_load: Option<GpuLoad>,
    /// Per-source state.
    pub sources: Vec<Source>,
}

/// Reads the sysfs sources under a root (`/` on a real machine).
#[derive(Debug)]
pub struct Sysfs {
    root: PathBuf,
    rapl: RaplMeter,
}

impl Sysfs {
    /// Sources under `root` (`/` on a real machine, a fixture tree in tests).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        Sysfs {
            rapl: RaplMeter::new(&root),
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
        let (rails, state) = ina3221::read(&self.root);
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
        s
    }
}

/// Reads a sysfs attribute as a trimmed string; `None` when missing or unreadable.
pub(crate) fn read_str(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Reads a sysfs attribute holding one integer.
pub(crate) fn read_i64(path: &Path) -> Option<i64> {
    read_str(path)?.parse().ok()
}

/// Sorted entries of `dir` whose names start with `prefix` (empty when `dir` is missing).
pub(crate) fn entries(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path())
        .collect();
    v.sort();
    v
}
