//! INA3221 power monitors (TI INA3221: three channels of bus voltage and shunt current)
//! through either Linux driver a Jetson may run:
//!
//! * hwmon (L4T R35 and later): `/sys/bus/i2c/drivers/ina3221/<bus>-<addr>/hwmon/hwmon*/`,
//!   channel N = 1..3: `inN_label`, `inN_input` (bus voltage, mV), `currN_input` (mA),
//!   `shuntN_resistor` (µΩ), `currN_max` / `currN_crit` (warning / critical limits, mA),
//!   `inN_enable`; power is not provided and is computed here as V × I. `in4..in6` are
//!   shunt voltages and `in7` their sum: not rails. The `hwmon*` index changes between
//!   boots, so it is found each time (Linux `Documentation/hwmon/ina3221.rst`).
//! * IIO (L4T R32 and older, `ina3221x`): `/sys/bus/i2c/drivers/ina3221x/<bus>-<addr>/
//!   iio:device*/`, channel N = 0..2: `rail_name_N`, `in_voltageN_input` (mV),
//!   `in_currentN_input` (mA), `in_powerN_input` (mW).
//!
//! Channels labelled `NC` (not connected, on Orin boards) are not rails.

use std::path::Path;

use crate::source::{SourceState, entries, read_i64, read_str};

const HWMON_DRIVER: &str = "sys/bus/i2c/drivers/ina3221";
const IIO_DRIVER: &str = "sys/bus/i2c/drivers/ina3221x";

/// Which kernel driver a rail was read through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Driver {
    /// The mainline hwmon driver (L4T R35+).
    Hwmon,
    /// NVIDIA's IIO driver `ina3221x` (L4T R32 and older).
    Iio,
    /// The mainline hwmon driver `ina238` (TI INA238, one channel: a board's input, VIN,
    /// on Jetson AGX Thor's carrier board; see the `ina238` module).
    Ina238,
}

/// One power-monitor channel with a rail behind it: an INA3221 channel, or an INA238
/// (one channel, always 1).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Rail {
    /// The rail's label (e.g. `VDD_IN`, `VDD_GPU_SOC`, `VIN`).
    pub name: String,
    /// The chip's I²C device name, `<bus>-<address>` (e.g. `1-0040`); for an INA238
    /// without a `device` link, its hwmon node (`hwmon5`).
    pub chip: String,
    /// Channel on the chip, 1..3 (the IIO driver's 0..2 are shifted up by one; 1 on an
    /// INA238).
    pub channel: u8,
    /// Driver it was read through.
    pub driver: Driver,
    /// Bus voltage, mV.
    pub voltage_mv: f64,
    /// Current, mA.
    pub current_ma: f64,
    /// Power, mW: the IIO driver's or the INA238's reading (`power1_input`, µW / 1000),
    /// or voltage × current for the INA3221 on hwmon.
    pub power_mw: f64,
    /// Shunt resistor, µΩ (hwmon drivers only).
    pub shunt_uohm: Option<i64>,
    /// Warning current limit, mA (INA3221 on hwmon only).
    pub warn_ma: Option<i64>,
    /// Critical current limit, mA (INA3221 on hwmon only).
    pub crit_ma: Option<i64>,
}

/// Reads every rail of every INA3221 under `root`; the state says what was missing.
pub(crate) fn read(root: &Path) -> (Vec<Rail>, SourceState) {
    let mut rails = Vec::new();
    let mut problems = Vec::new();
    let hwmon_dir = root.join(HWMON_DRIVER);
    let iio_dir = root.join(IIO_DRIVER);
    if !hwmon_dir.is_dir() && !iio_dir.is_dir() {
        return (
            rails,
            SourceState::Absent(format!("no /{HWMON_DRIVER} or /{IIO_DRIVER}")),
        );
    }
    for chip in i2c_devices(&hwmon_dir) {
        let name = file_name(&chip);
        match entries(&chip.join("hwmon"), "hwmon").first() {
            Some(h) => read_hwmon(h, &name, &mut rails, &mut problems),
            None => problems.push(format!("{name}: no hwmon directory")),
        }
    }
    for chip in i2c_devices(&iio_dir) {
        let name = file_name(&chip);
        match entries(&chip, "iio:device").first() {
            Some(d) => read_iio(d, &name, &mut rails, &mut problems),
            None => problems.push(format!("{name}: no iio:device directory")),
        }
    }
    let state = if problems.is_empty() {
        SourceState::Ok
    } else {
        SourceState::Error(problems.join("; "))
    };
    (rails, state)
}

/// `<bus>-<addr>` entries of a driver directory (its other entries are bind/unbind etc.).
fn i2c_devices(dir: &Path) -> Vec<std::path::PathBuf> {
    entries(dir, "")
        .into_iter()
        .filter(|p| {
            let n = file_name(p);
            n.split_once('-').is_some_and(|(bus, addr)| {
                bus.chars().all(|c| c.is_ascii_digit())
                    && addr.len() == 4
                    && addr.chars().all(|c| c.is_ascii_hexdigit())
            })
        })
        .collect()
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn is_rail(label: &str) -> bool {
    !label.is_empty() && !label.eq_ignore_ascii_case("NC")
}

fn read_hwmon(dir: &Path, chip: &str, rails: &mut Vec<Rail>, problems: &mut Vec<String>) {
    for ch in 1..=3u8 {
        let at = |f: &str| dir.join(f.replace('N', &ch.to_string()));
        let Some(label) = read_str(&at("inN_label")) else {
            continue; // channel without a label: not wired up in the device tree
        };
        if !is_rail(&label) || read_i64(&at("inN_enable")) == Some(0) {
            continue;
        }
        match (read_i64(&at("inN_input")), read_i64(&at("currN_input"))) {
            (Some(mv), Some(ma)) => rails.push(Rail {
                name: label,
                chip: chip.to_string(),
                channel: ch,
                driver: Driver::Hwmon,
                voltage_mv: mv as f64,
                current_ma: ma as f64,
                power_mw: mv as f64 * ma as f64 / 1000.0,
                shunt_uohm: read_i64(&at("shuntN_resistor")),
                warn_ma: read_i64(&at("currN_max")),
                crit_ma: read_i64(&at("currN_crit")),
            }),
            _ => problems.push(format!(
                "{chip} {label}: in{ch}_input/curr{ch}_input unreadable"
            )),
        }
    }
}

fn read_iio(dir: &Path, chip: &str, rails: &mut Vec<Rail>, problems: &mut Vec<String>) {
    for ch in 0..=2u8 {
        let Some(label) = read_str(&dir.join(format!("rail_name_{ch}"))) else {
            continue;
        };
        if !is_rail(&label) {
            continue;
        }
        let at = |q: &str| read_i64(&dir.join(format!("in_{q}{ch}_input")));
        let (mv, ma, mw) = (at("voltage"), at("current"), at("power"));
        match (mv, ma, mw) {
            (Some(mv), Some(ma), Some(mw)) => rails.push(Rail {
                name: label,
                chip: chip.to_string(),
                channel: ch + 1,
                driver: Driver::Iio,
                voltage_mv: mv as f64,
                current_ma: ma as f64,
                power_mw: mw as f64,
                shunt_uohm: None,
                warn_ma: None,
                crit_ma: None,
            }),
            _ => problems.push(format!("{chip} {label}: in_*{ch}_input unreadable")),
        }
    }
}
