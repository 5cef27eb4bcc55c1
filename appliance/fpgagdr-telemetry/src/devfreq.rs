//! The Jetson GPU's load and clock from devfreq: `/sys/class/devfreq/<gpu>/cur_freq`,
//! `min_freq` and `max_freq` (Hz) and the GPU device's `load` attribute (per-mille busy over the last period) at
//! `/sys/class/devfreq/<gpu>/device/load`. The GPU's devfreq node is named after its
//! platform device: `17000000.ga10b` (Orin, L4T R35), `17000000.gpu` (Orin, L4T R36), `17000000.gv11b` (Xavier), `57000000.gpu`
//! (Nano, TX1), `17000000.gp10b` (TX2).

use std::path::Path;

use crate::source::{SourceState, entries, read_i64};

const DEVFREQ: &str = "sys/class/devfreq";
const GPU_SUFFIXES: [&str; 5] = [".ga10b", ".gv11b", ".gp10b", ".gm20b", ".gpu"];

/// GPU load and clock.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GpuLoad {
    /// The devfreq node's name.
    pub device: String,
    /// Busy share over the driver's last period, % (the sysfs value is per-mille).
    pub load_pct: Option<f64>,
    /// Current clock, Hz.
    pub freq_hz: Option<i64>,
    /// Lowest clock the devfreq governor may pick, Hz (`min_freq`).
    pub min_freq_hz: Option<i64>,
    /// Highest clock the devfreq governor may pick, Hz (`max_freq`; the power mode caps
    /// it).
    pub max_freq_hz: Option<i64>,
}

pub(crate) fn read(root: &Path) -> (Option<GpuLoad>, SourceState) {
    let gpu = entries(&root.join(DEVFREQ), "").into_iter().find(|p| {
        p.file_name().is_some_and(|n| {
            GPU_SUFFIXES
                .iter()
                .any(|s| n.to_string_lossy().ends_with(s))
        })
    });
    let Some(dir) = gpu else {
        return (
            None,
            SourceState::Absent(format!("no Jetson GPU under /{DEVFREQ}")),
        );
    };
    let load = GpuLoad {
        device: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        load_pct: read_i64(&dir.join("device/load")).map(|pm| pm as f64 / 10.0),
        freq_hz: read_i64(&dir.join("cur_freq")),
        min_freq_hz: read_i64(&dir.join("min_freq")),
        max_freq_hz: read_i64(&dir.join("max_freq")),
    };
    let state = if load.load_pct.is_none() && load.freq_hz.is_none() {
        SourceState::Error(format!("{}: load and cur_freq unreadable", dir.display()))
    } else {
        SourceState::Ok
    };
    (Some(load), state)
}
