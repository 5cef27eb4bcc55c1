//! The host's CPU and memory load (through `sysinfo`) and discrete GPUs' power, load and
//! temperature (through NVML, `nvml-wrapper`, which loads `libnvidia-ml.so.1` at run
//! time: a machine without the NVIDIA driver simply has no NVML source).

use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::TemperatureSensor;
use sysinfo::{CpuRefreshKind, MemoryRefreshKind, RefreshKind, System};

use crate::source::{Source, SourceState};

/// One NVIDIA GPU as NVML sees it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NvmlGpu {
    /// NVML device index.
    pub index: u32,
    /// Product name.
    pub name: String,
    /// Board power draw, W (`nvmlDeviceGetPowerUsage`, mW in NVML).
    pub power_w: Option<f64>,
    /// GPU busy share over NVML's last sample period, %.
    pub load_pct: Option<f64>,
    /// GPU core temperature, °C.
    pub celsius: Option<f64>,
    /// GPU memory in use, bytes (`nvmlDeviceGetMemoryInfo`).
    pub mem_used_bytes: Option<u64>,
    /// GPU memory installed, bytes.
    pub mem_total_bytes: Option<u64>,
}

/// CPU, memory and NVML GPUs.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct HostSample {
    /// All CPUs' busy share since the previous sample, %.
    pub cpu_pct: Option<f64>,
    /// Memory in use, bytes.
    pub mem_used_bytes: Option<u64>,
    /// Memory installed, bytes.
    pub mem_total_bytes: Option<u64>,
    /// NVIDIA GPUs through NVML.
    pub gpus: Vec<NvmlGpu>,
    /// Source states: `cpu`, `nvml`.
    pub sources: Vec<Source>,
}

/// Keeps sysinfo's state (CPU load needs two readings) and the NVML handle.
pub struct Host {
    sys: Result<System, String>,
    nvml: Result<Nvml, String>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("nvml", &self.nvml.as_ref().map(|_| "loaded"))
            .finish()
    }
}

impl Default for Host {
    fn default() -> Self {
        Self::new()
    }
}

impl Host {
    /// Starts sysinfo and tries to load NVML (its absence is a normal state).
    pub fn new() -> Self {
        let sys = System::new_with_specifics(
            RefreshKind::nothing()
                .with_cpu(CpuRefreshKind::nothing().with_usage())
                .with_memory(MemoryRefreshKind::nothing().with_ram()),
        )
        .map_err(|e| format!("sysinfo: {e}"));
        let nvml = Nvml::init().map_err(|e| format!("NVML not loaded: {e}"));
        Host { sys, nvml }
    }

    /// One sample; the first CPU figure covers the time since [`Host::new`].
    pub fn sample(&mut self) -> HostSample {
        let mut s = HostSample::default();
        let state = match &mut self.sys {
            Ok(sys) => {
                sys.refresh_cpu_usage();
                sys.refresh_memory();
                s.cpu_pct = Some(sys.global_cpu_usage() as f64);
                s.mem_used_bytes = Some(sys.used_memory());
                s.mem_total_bytes = Some(sys.total_memory());
                SourceState::Ok
            }
            Err(why) => SourceState::Error(why.clone()),
        };
        s.sources.push(Source { name: "cpu", state });
        let state = match &self.nvml {
            Err(why) => SourceState::Absent(why.clone()),
            Ok(nvml) => match nvml.device_count() {
                Err(e) => SourceState::Error(e.to_string()),
                Ok(n) => {
                    for index in 0..n {
                        let Ok(d) = nvml.device_by_index(index) else {
                            continue;
                        };
                        let mem = d.memory_info().ok();
                        s.gpus.push(NvmlGpu {
                            index,
                            name: d.name().unwrap_or_default(),
                            power_w: d.power_usage().ok().map(|mw| mw as f64 / 1000.0),
                            load_pct: d.utilization_rates().ok().map(|u| u.gpu as f64),
                            celsius: d.temperature(TemperatureSensor::Gpu).ok().map(|c| c as f64),
                            mem_used_bytes: mem.as_ref().map(|m| m.used),
                            mem_total_bytes: mem.as_ref().map(|m| m.total),
                        });
                    }
                    SourceState::Ok
                }
            },
        };
        s.sources.push(Source {
            name: "nvml",
            state,
        });
        s
    }
}
