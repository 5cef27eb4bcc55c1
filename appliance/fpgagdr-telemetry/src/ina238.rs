//! INA238 power monitors (TI INA238: one channel of bus voltage, shunt voltage, current,
//! power and die temperature; datasheet <https://www.ti.com/lit/gpn/ina238>) through
//! Linux's hwmon driver `ina238`. The Jetson AGX Thor developer kit's carrier board
//! measures the kit's whole input, VIN, with one (written, not run on a Thor).
//!
//! A node is found by its hwmon `name`, `ina238`, among `/sys/class/hwmon/hwmon*/` (the
//! index changes between boots). Attributes (Linux `Documentation/hwmon/ina238.rst`):
//! `in1_input` bus voltage (mV), `curr1_input` current (mA), `power1_input` power as the
//! chip computes it (µW), `shunt_resistor` (µΩ); `in0_input` is the shunt voltage, not a
//! rail. The driver gives no channel label: the rail's name is the node's `label`
//! attribute where the device tree sets one (hwmon core,
//! `Documentation/ABI/testing/sysfs-class-hwmon`), else `VIN` for a lone INA238 (what
//! `tegrastats` calls Thor's), else `INA238 <bus>-<addr>`.

use std::path::Path;

use crate::ina3221::{Driver, Rail};
use crate::source::{SourceState, entries, read_i64, read_str};

const HWMON: &str = "sys/class/hwmon";
/// The hwmon `name` of the kernel's `ina238` driver.
const NAME: &str = "ina238";
/// The name of an unlabelled lone INA238: the board's input.
pub(crate) const VIN: &str = "VIN";

/// Reads every INA238 under `root`; the state says what was missing.
pub(crate) fn read(root: &Path) -> (Vec<Rail>, SourceState) {
    let nodes: Vec<_> = entries(&root.join(HWMON), "hwmon")
        .into_iter()
        .filter(|d| read_str(&d.join("name")).as_deref() == Some(NAME))
        .collect();
    if nodes.is_empty() {
        return (
            Vec::new(),
            SourceState::Absent(format!("no /{HWMON}/hwmon*/name reading {NAME}")),
        );
    }
    let lone = nodes.len() == 1;
    let mut rails = Vec::new();
    let mut problems = Vec::new();
    for dir in nodes {
        // `device` links to the I²C client, `<bus>-<addr>`; else the node's own name.
        let chip = std::fs::read_link(dir.join("device"))
            .ok()
            .as_deref()
            .unwrap_or(&dir)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = read_str(&dir.join("label"))
            .filter(|l| !l.is_empty())
            .unwrap_or_else(|| {
                if lone {
                    VIN.to_string()
                } else {
                    format!("INA238 {chip}")
                }
            });
        let at = |f: &str| read_i64(&dir.join(f));
        match (at("in1_input"), at("curr1_input"), at("power1_input")) {
            (Some(mv), Some(ma), Some(uw)) => rails.push(Rail {
                name,
                chip,
                channel: 1,
                driver: Driver::Ina238,
                voltage_mv: mv as f64,
                current_ma: ma as f64,
                power_mw: uw as f64 / 1000.0,
                shunt_uohm: at("shunt_resistor"),
                warn_ma: None,
                crit_ma: None,
            }),
            _ => problems.push(format!(
                "{chip} {name}: in1_input/curr1_input/power1_input unreadable"
            )),
        }
    }
    let state = if problems.is_empty() {
        SourceState::Ok
    } else {
        SourceState::Error(problems.join("; "))
    };
    (rails, state)
}
