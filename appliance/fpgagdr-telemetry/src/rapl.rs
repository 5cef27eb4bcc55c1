//! CPU package power from RAPL energy counters (Linux powercap:
//! `/sys/class/powercap/intel-rapl:N/{name,energy_uj,max_energy_range_uj}`; AMD CPUs
//! use the same interface). Power is the energy difference over time between two
//! samples; the counter wraps at `max_energy_range_uj`. Since Linux 5.10 `energy_uj` is
//! readable by root only, which shows as a source error naming the file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::source::{SourceState, entries, read_i64, read_str};

const POWERCAP: &str = "sys/class/powercap";

/// One CPU package's power over the last sampling interval.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RaplPackage {
    /// Zone name (`package-0`).
    pub name: String,
    /// Average power since the previous sample, W.
    pub power_w: f64,
}

/// Remembers the last energy reading of each package zone.
#[derive(Debug)]
pub struct RaplMeter {
    dir: PathBuf,
    last: HashMap<PathBuf, (u64, Instant)>,
}

impl RaplMeter {
    /// A meter over the powercap tree under `root`.
    pub fn new(root: &Path) -> Self {
        RaplMeter {
            dir: root.join(POWERCAP),
            last: HashMap::new(),
        }
    }

    /// Power of each package since the previous call (none on the first call).
    pub fn sample(&mut self) -> (Vec<RaplPackage>, SourceState) {
        self.sample_at(Instant::now())
    }

    /// As [`Self::sample`], at time `now` (for tests).
    pub fn sample_at(&mut self, now: Instant) -> (Vec<RaplPackage>, SourceState) {
        // Package zones only (`intel-rapl:0`), not their sub-zones (`intel-rapl:0:0`).
        let zones: Vec<PathBuf> = entries(&self.dir, "intel-rapl:")
            .into_iter()
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().matches(':').count() == 1)
            })
            .collect();
        if zones.is_empty() {
            return (
                Vec::new(),
                SourceState::Absent(format!("no /{POWERCAP}/intel-rapl:*")),
            );
        }
        let mut out = Vec::new();
        let mut problems = Vec::new();
        for zone in zones {
            let name = read_str(&zone.join("name")).unwrap_or_else(|| "package".into());
            let (Some(e), Some(range)) = (
                read_i64(&zone.join("energy_uj")),
                read_i64(&zone.join("max_energy_range_uj")),
            ) else {
                problems.push(format!(
                    "{}: energy_uj unreadable (root only since Linux 5.10)",
                    zone.display()
                ));
                continue;
            };
            let (e, range) = (e as u64, range as u64);
            if let Some((e0, t0)) = self.last.insert(zone.clone(), (e, now)) {
                let dt = now.duration_since(t0).as_secs_f64();
                let de = if e >= e0 { e - e0 } else { e + range - e0 };
                if dt > 0.0 {
                    out.push(RaplPackage {
                        name,
                        power_w: de as f64 / 1e6 / dt,
                    });
                }
            }
        }
        let state = if problems.is_empty() {
            SourceState::Ok
        } else {
            SourceState::Error(problems.join("; "))
        };
        (out, state)
    }
}
