//! One pass over every sysfs source.
//!
//! Owns: [`Sysfs`], [`SysfsSample`]. Must not: fail or block: a missing or unreadable
//! source is reported in `sources` and the others go on.

use std::path::{Path, PathBuf};

use crate::devfreq::GpuLoad;
use crate::ina3221::Rail;
use crate::power_tree::{BoardTotal, board_total};
use crate::rapl::{RaplMeter, RaplPackage};
use crate::source::Source;
use crate::thermal::Zone;
use crate::{devfreq, ina3221, thermal};

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
