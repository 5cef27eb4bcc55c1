//! Thermal zones (`/sys/class/thermal/thermal_zone*/{type,temp}`, temp in millidegrees
//! Celsius). A zone whose temperature cannot be read is absent, never zero.

use std::path::Path;

use crate::source::{SourceState, entries, read_i64, read_str};

const THERMAL: &str = "sys/class/thermal";

/// One thermal zone's temperature.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Zone {
    /// The zone's type (e.g. `cpu-thermal`, `x86_pkg_temp`).
    pub name: String,
    /// Temperature, °C.
    pub celsius: f64,
}

pub(crate) fn read(root: &Path) -> (Vec<Zone>, SourceState) {
    let dirs = entries(&root.join(THERMAL), "thermal_zone");
    if dirs.is_empty() {
        return (
            Vec::new(),
            SourceState::Absent(format!("no /{THERMAL}/thermal_zone*")),
        );
    }
    let mut zones = Vec::new();
    let mut unreadable = Vec::new();
    for d in dirs {
        let name = read_str(&d.join("type")).unwrap_or_else(|| {
            d.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        match read_i64(&d.join("temp")) {
            Some(milli) => zones.push(Zone {
                name,
                celsius: milli as f64 / 1000.0,
            }),
            None => unreadable.push(name),
        }
    }
    let state = if unreadable.is_empty() {
        SourceState::Ok
    } else {
        SourceState::Error(format!("unreadable: {}", unreadable.join(", ")))
    };
    (zones, state)
}
