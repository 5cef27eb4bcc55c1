//! Telemetry for the appliance: the INA3221 power rails of a Jetson (both kernel drivers),
//! the INA238 that measures a Jetson AGX Thor developer kit's input (VIN),
//! the board total that follows the board's power tree, RAPL package power on x86 hosts,
//! thermal zones, the Jetson GPU's devfreq load and clock, and what jetson-stats users
//! look at first (power mode, `jetson_clocks`, fans, per-core CPU, EMC clock, GPU
//! memory), all read from sysfs (and `/proc`, `/etc`, `/var/lib`) under a root that
//! tests point at fixture trees.
//!
//! Owns: [`Sysfs`] (one sample of every sysfs source, never failing: a missing or
//! unreadable source or channel is reported absent with its reason), [`Host`] (CPU and
//! memory load through sysinfo, discrete GPUs through NVML), the per-source modules, and
//! the sampler ([`sampler::Telemetry`]): a thread that reads them all at a fixed rate and
//! keeps the latest sample. It knows nothing of frames: energy per frame and the history
//! are the service's frame board (`fpgagdrd/src/board/`), which puts its frame rate
//! beside this power.
//! Modules, one way down: `sampler` → `sysfs`, `host` → the sources → `source`.
//! Units are in every field name (mV, mA, mW, W, °C as millidegrees in sysfs).
#![forbid(unsafe_code)]

mod cpu;
mod devfreq;
mod fan;
mod host;
mod ina238;
mod ina3221;
mod jetson;
mod power_tree;
mod rapl;
pub mod sampler;
mod source;
mod sysfs;
mod thermal;

pub use cpu::{CpuCore, CpuMeter};
pub use devfreq::GpuLoad;
pub use fan::Fan;
pub use host::{Host, HostSample, NvmlGpu};
pub use ina3221::{Driver, Rail};
pub use jetson::{ClockMode, Emc, PowerMode};
pub use power_tree::{BoardTotal, TotalRule, board_total};
pub use rapl::{RaplMeter, RaplPackage};
pub use source::{Source, SourceState};
pub use sysfs::{Sysfs, SysfsSample};
pub use thermal::Zone;
