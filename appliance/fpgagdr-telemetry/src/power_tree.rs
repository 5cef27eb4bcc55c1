//! The board's total power from its power-monitor rails, following the board's power
//! tree instead of summing every rail (which counts an input rail and its parts twice).
//!
//! Rules, first match wins (rail names from NVIDIA's Jetson power-monitoring docs):
//! 0. An INA238 reads the board's input, `VIN` (Jetson AGX Thor developer kit: on the
//!    carrier board, before module and carrier; written, not run on a Thor): it is the
//!    total, module and carrier board included; the INA3221 rails are its parts.
//! 1. An input rail exists — `VDD_IN` (Orin NX / Orin Nano, Xavier NX) or `POM_5V_IN`
//!    (Nano, TX1/TX2): it is the module's total; the other rails are its parts.
//! 2. Jetson AGX Orin (`VDD_GPU_SOC`, `VDD_CPU_CV`, `VIN_SYS_5V0`, `VDDQ_VDD2_1V8AO`):
//!    no input rail is monitored; the module's rails are separate supplies and their sum
//!    is the module's power (the carrier board is not included).
//! 3. Jetson AGX Xavier (`GPU`, `CPU`, `SOC`, `CV`, `VDDRQ`, `SYS5V`): likewise the sum.
//! 4. Anything else: the sum of all rails, marked as an unknown board (it may count a
//!    rail and its parts twice).

use crate::ina238::VIN;
use crate::ina3221::{Driver, Rail};

/// How a total was formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum TotalRule {
    /// The board's input measured by an INA238 (`VIN`) is the total (rule 0).
    BoardInput,
    /// An input rail is the total (rule 1).
    InputRail,
    /// A known board without an input rail: the sum of its module rails (rules 2, 3).
    KnownSum,
    /// An unknown board: the sum of all rails (rule 4).
    UnknownSum,
}

/// The board's total power and what it covers.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BoardTotal {
    /// Total power, mW.
    pub power_mw: f64,
    /// The rule that formed it.
    pub rule: TotalRule,
    /// The rails it counts (one for an input rail).
    pub rails: Vec<String>,
    /// What it covers, for people (e.g. "module input (VDD_IN); carrier board not included").
    pub covers: String,
}

const INPUT_RAILS: [&str; 2] = ["VDD_IN", "POM_5V_IN"];
const AGX_ORIN: [&str; 4] = [
    "VDD_GPU_SOC",
    "VDD_CPU_CV",
    "VIN_SYS_5V0",
    "VDDQ_VDD2_1V8AO",
];
const AGX_XAVIER: [&str; 6] = ["GPU", "CPU", "SOC", "CV", "VDDRQ", "SYS5V"];

/// The total of `rails` by the rules above; `None` without rails.
pub fn board_total(rails: &[Rail]) -> Option<BoardTotal> {
    if rails.is_empty() {
        return None;
    }
    if let Some(vin) = rails
        .iter()
        .find(|r| r.driver == Driver::Ina238 && r.name == VIN)
    {
        return Some(BoardTotal {
            power_mw: vin.power_mw,
            rule: TotalRule::BoardInput,
            rails: vec![vin.name.clone()],
            covers: format!(
                "board input ({}, INA238 {}): module and carrier board included; the other rails are parts of it",
                vin.name, vin.chip
            ),
        });
    }
    if let Some(input) = rails
        .iter()
        .find(|r| INPUT_RAILS.contains(&r.name.as_str()))
    {
        return Some(BoardTotal {
            power_mw: input.power_mw,
            rule: TotalRule::InputRail,
            rails: vec![input.name.clone()],
            covers: format!(
                "module input ({}): the other rails are parts of it; carrier board not included",
                input.name
            ),
        });
    }
    let names: Vec<&str> = rails.iter().map(|r| r.name.as_str()).collect();
    let known = [
        ("Jetson AGX Orin", &AGX_ORIN[..]),
        ("Jetson AGX Xavier", &AGX_XAVIER[..]),
    ]
    .into_iter()
    .find(|(_, set)| names.iter().all(|n| set.contains(n)) && !names.is_empty());
    let sum = rails.iter().map(|r| r.power_mw).sum();
    let rails_list = names.iter().map(|n| n.to_string()).collect();
    Some(match known {
        Some((board, _)) => BoardTotal {
            power_mw: sum,
            rule: TotalRule::KnownSum,
            rails: rails_list,
            covers: format!(
                "{board}: sum of the module's rails (no input rail is monitored); carrier board not included"
            ),
        },
        None => BoardTotal {
            power_mw: sum,
            rule: TotalRule::UnknownSum,
            rails: rails_list,
            covers:
                "sum of all rails of an unrecognised board: may count a rail and its parts twice"
                    .into(),
        },
    })
}
