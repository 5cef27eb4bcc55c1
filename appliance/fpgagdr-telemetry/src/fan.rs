//! Fans, from hwmon (`/sys/class/hwmon/hwmonN/`): a node with a `pwm1` attribute drives a
//! fan (duty 0..=255, the hwmon sysfs ABI; on Jetson Orin the `pwm-fan` driver, node
//! name `pwmfan`); a node with `rpm` (Jetson's tachometer driver) or `fan1_input`
//! (hwmon's standard) measures one. Jetson splits the two across nodes, so when there
//! is exactly one PWM fan and one tachometer-only node they are read as one fan, as
//! jetson-stats does.

use std::path::{Path, PathBuf};

use crate::source::{SourceState, entries, read_i64, read_str};

const HWMON: &str = "sys/class/hwmon";

/// One fan.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Fan {
    /// The hwmon node's `name` (`pwmfan`), or the node's directory name.
    pub name: String,
    /// PWM duty, % (`pwm1` / 255); `None` for a tachometer alone.
    pub pwm_pct: Option<f64>,
    /// Measured speed, revolutions per minute, where a tachometer reads it.
    pub rpm: Option<u64>,
}

fn rpm_of(dir: &Path) -> Option<u64> {
    ["rpm", "fan1_input"]
        .iter()
        .find_map(|f| read_i64(&dir.join(f)))
        .and_then(|v| u64::try_from(v).ok())
}

pub(crate) fn read(root: &Path) -> (Vec<Fan>, SourceState) {
    let nodes = entries(&root.join(HWMON), "hwmon");
    let name = |d: &PathBuf| {
        read_str(&d.join("name")).unwrap_or_else(|| {
            d.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
    };
    let mut fans = Vec::new();
    let mut tachs = Vec::new();
    let mut unreadable = Vec::new();
    for d in &nodes {
        if d.join("pwm1").exists() {
            match read_i64(&d.join("pwm1")) {
                Some(pwm) => fans.push(Fan {
                    name: name(d),
                    pwm_pct: Some(pwm.clamp(0, 255) as f64 * 100.0 / 255.0),
                    rpm: rpm_of(d),
                }),
                None => unreadable.push(name(d)),
            }
        } else if let Some(rpm) = rpm_of(d) {
            tachs.push(Fan {
                name: name(d),
                pwm_pct: None,
                rpm: Some(rpm),
            });
        }
    }
    if fans.len() == 1 && fans[0].rpm.is_none() && tachs.len() == 1 {
        fans[0].rpm = tachs.pop().and_then(|t| t.rpm);
    }
    fans.extend(tachs);
    let state = if !unreadable.is_empty() {
        SourceState::Error(format!("pwm1 unreadable: {}", unreadable.join(", ")))
    } else if fans.is_empty() {
        SourceState::Absent(format!("no fan under /{HWMON} (pwm1, rpm or fan1_input)"))
    } else {
        SourceState::Ok
    };
    (fans, state)
}
