//! What a Jetson user checks first (the jetson-stats habit), besides rails and
//! temperatures: the power mode, whether `jetson_clocks` pinned the clocks, the memory
//! controller's clock and the memory the GPU holds. Each is optional and reported
//! absent on other machines.
//!
//! Sources (under the telemetry root):
//! * power mode (`nvpmodel`): `/var/lib/nvpmodel/status` (`pmode:0002`, what `nvpmodel`
//!   writes when it sets a mode) and `/etc/nvpmodel.conf` (`< POWER_MODEL ID=2
//!   NAME=MAXN_SUPER >` per mode, `< PM_CONFIG DEFAULT=2 >`); no status file means the
//!   configured default is in force (nvpmodel applies it at boot);
//! * EMC clock: `/sys/kernel/debug/bpmp/debug/clk/emc/{rate,max_rate}` (Hz; debugfs,
//!   readable by root only, otherwise reported absent with that reason);
//! * GPU memory: `NvMapMemUsed` in `/proc/meminfo` (kB; Tegra kernels add it: the
//!   memory the GPU and the other engines hold through nvmap, shared with the CPU);
//! * `jetson_clocks`: not a file but a judgement, as jetson-stats makes it: every
//!   online core's cpufreq minimum equals its maximum, the GPU's devfreq minimum equals
//!   its maximum, and the EMC runs at its maximum where that is readable.

use std::path::Path;

use crate::cpu::CpuCore;
use crate::devfreq::GpuLoad;
use crate::source::{SourceState, read_i64, read_str};

const NVP_STATUS: &str = "var/lib/nvpmodel/status";
const NVP_CONF: &str = "etc/nvpmodel.conf";
const EMC: &str = "sys/kernel/debug/bpmp/debug/clk/emc";
const MEMINFO: &str = "proc/meminfo";

/// The nvpmodel power mode in force.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PowerMode {
    /// Mode id (`nvpmodel -m ID`).
    pub id: u32,
    /// Its name in `/etc/nvpmodel.conf` (`15W`, `MAXN_SUPER`), when listed.
    pub name: Option<String>,
    /// Whether it is the configured default (`PM_CONFIG DEFAULT`).
    pub is_default: bool,
    /// Every mode the board offers, `(id, name)` in file order.
    pub modes: Vec<(u32, String)>,
}

/// The memory controller (EMC) clock.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Emc {
    /// Current clock, Hz.
    pub freq_hz: i64,
    /// Highest clock allowed now, Hz.
    pub max_freq_hz: Option<i64>,
}

/// Whether `jetson_clocks` holds the clocks at their maximum, and on what evidence.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ClockMode {
    /// True when every clock checked is pinned at its maximum.
    pub jetson_clocks: bool,
    /// What was checked, or the first clock found free to scale.
    pub detail: String,
}

/// `(modes, default id)` of an nvpmodel.conf.
fn parse_conf(text: &str) -> (Vec<(u32, String)>, Option<u32>) {
    let mut modes = Vec::new();
    let mut default = None;
    for line in text.lines() {
        let l = line.trim();
        let Some(body) = l.strip_prefix('<').and_then(|b| b.strip_suffix('>')) else {
            continue;
        };
        let mut words = body.split_whitespace();
        match words.next() {
            Some("POWER_MODEL") => {
                let (mut id, mut name) = (None, None);
                for w in words {
                    if let Some(v) = w.strip_prefix("ID=") {
                        id = v.parse().ok();
                    } else if let Some(v) = w.strip_prefix("NAME=") {
                        name = Some(v.to_string());
                    }
                }
                if let (Some(id), Some(name)) = (id, name) {
                    modes.push((id, name));
                }
            }
            Some("PM_CONFIG") => {
                default = words
                    .find_map(|w| w.strip_prefix("DEFAULT="))
                    .and_then(|v| v.parse().ok());
            }
            _ => {}
        }
    }
    (modes, default)
}

pub(crate) fn power_mode(root: &Path) -> (Option<PowerMode>, SourceState) {
    let conf = read_str(&root.join(NVP_CONF));
    let status = read_str(&root.join(NVP_STATUS));
    let (modes, default) = conf.as_deref().map(parse_conf).unwrap_or_default();
    let from_status = status.as_deref().map(|s| {
        s.split_whitespace()
            .find_map(|w| w.strip_prefix("pmode:"))
            .and_then(|v| v.parse::<u32>().ok())
    });
    let id = match (from_status, default) {
        (Some(Some(id)), _) => id,
        (Some(None), _) => {
            return (
                None,
                SourceState::Error(format!(
                    "/{NVP_STATUS}: no pmode:N in {:?}",
                    status.unwrap_or_default()
                )),
            );
        }
        (None, Some(d)) => d,
        (None, None) if conf.is_some() => {
            return (
                None,
                SourceState::Error(format!(
                    "/{NVP_CONF}: no PM_CONFIG DEFAULT and no /{NVP_STATUS}"
                )),
            );
        }
        (None, None) => {
            return (
                None,
                SourceState::Absent(format!("no /{NVP_CONF} (not a Jetson)")),
            );
        }
    };
    let name = modes.iter().find(|(m, _)| *m == id).map(|(_, n)| n.clone());
    (
        Some(PowerMode {
            id,
            name,
            is_default: default == Some(id),
            modes,
        }),
        SourceState::Ok,
    )
}

pub(crate) fn emc(root: &Path) -> (Option<Emc>, SourceState) {
    let dir = root.join(EMC);
    let hz = |f: &str| read_i64(&dir.join(f));
    match hz("rate") {
        Some(freq_hz) => (
            Some(Emc {
                freq_hz,
                max_freq_hz: hz("max_rate"),
            }),
            SourceState::Ok,
        ),
        None if dir.join("rate").exists() => {
            (None, SourceState::Error(format!("/{EMC}/rate unreadable")))
        }
        None => (
            None,
            SourceState::Absent(format!(
                "no /{EMC}/rate (debugfs, readable by root on a Jetson)"
            )),
        ),
    }
}

pub(crate) fn gpu_memory(root: &Path) -> (Option<u64>, SourceState) {
    let Some(text) = read_str(&root.join(MEMINFO)) else {
        return (None, SourceState::Absent(format!("no /{MEMINFO}")));
    };
    let kb = text.lines().find_map(|l| {
        l.strip_prefix("NvMapMemUsed:")
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    });
    match kb {
        Some(kb) => (Some(kb * 1024), SourceState::Ok),
        None => (
            None,
            SourceState::Absent(format!(
                "no NvMapMemUsed in /{MEMINFO} (not a Tegra kernel)"
            )),
        ),
    }
}

/// The `jetson_clocks` judgement over what was read; `None` where no Jetson clock
/// (no GPU devfreq node) was found.
pub(crate) fn clock_mode(
    cores: &[CpuCore],
    gpu: Option<&GpuLoad>,
    emc: Option<&Emc>,
) -> Option<ClockMode> {
    let gpu = gpu?;
    let mut checked = Vec::new();
    for c in cores.iter().filter(|c| c.online) {
        if let (Some(min), Some(max)) = (c.min_freq_hz, c.max_freq_hz) {
            if min != max {
                return Some(ClockMode {
                    jetson_clocks: false,
                    detail: format!(
                        "cpu{} scales from {} to {} MHz",
                        c.cpu,
                        min / 1_000_000,
                        max / 1_000_000
                    ),
                });
            }
            checked.push(format!("cpu{}", c.cpu));
        }
    }
    if let (Some(min), Some(max)) = (gpu.min_freq_hz, gpu.max_freq_hz) {
        if min != max {
            return Some(ClockMode {
                jetson_clocks: false,
                detail: format!(
                    "GPU scales from {} to {} MHz",
                    min / 1_000_000,
                    max / 1_000_000
                ),
            });
        }
        checked.push("GPU".into());
    }
    if let Some(Emc {
        freq_hz,
        max_freq_hz: Some(max),
    }) = emc
    {
        if freq_hz != max {
            return Some(ClockMode {
                jetson_clocks: false,
                detail: format!("EMC at {} of {} MHz", freq_hz / 1_000_000, max / 1_000_000),
            });
        }
        checked.push("EMC".into());
    }
    if checked.is_empty() {
        return None;
    }
    Some(ClockMode {
        jetson_clocks: true,
        detail: format!("pinned at maximum: {}", checked.join(", ")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvpmodel_conf_lists_modes_and_the_default() {
        let (modes, default) = parse_conf(
            "# comment\n< POWER_MODEL ID=0 NAME=15W >\nCPU_ONLINE CORE_0 1\n< POWER_MODEL ID=1 NAME=25W >\n< PM_CONFIG DEFAULT=1 >\n",
        );
        assert_eq!(modes, [(0, "15W".to_string()), (1, "25W".to_string())]);
        assert_eq!(default, Some(1));
    }
}
