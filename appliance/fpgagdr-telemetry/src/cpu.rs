//! Per-core CPU figures, as jetson-stats shows them: whether each core is online, its
//! load since the previous sample, its clock and its clock limits.
//!
//! Sources (all under the telemetry root, so a fixture tree stands in for a board):
//! `/sys/devices/system/cpu/cpuN/online` (`0`/`1`; cpu0 often has none: always online),
//! `/sys/devices/system/cpu/cpuN/cpufreq/{scaling_cur_freq,scaling_min_freq,
//! scaling_max_freq}` (kHz, cpufreq's sysfs ABI), `scaling_governor`, and the `cpuN`
//! lines of `/proc/stat` (jiffies per state, proc(5)): load = busy jiffies / all jiffies
//! between two samples, busy = everything but `idle` and `iowait`.
//!
//! The host-wide CPU load and memory stay with `sysinfo` (`host.rs`); this module reads
//! the per-core detail under the root because sysinfo reads only the live `/proc` and
//! `/sys`, which a fixture tree cannot replace.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::source::{SourceState, entries, read_i64, read_str};

const CPUS: &str = "sys/devices/system/cpu";
const PROC_STAT: &str = "proc/stat";

/// One CPU core.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CpuCore {
    /// Core number (`N` of `cpuN`).
    pub cpu: u32,
    /// Whether the core is online (a Jetson power mode switches cores off).
    pub online: bool,
    /// Busy share since the previous sample, % (`None` on the first sample, or offline).
    pub load_pct: Option<f64>,
    /// Current clock, Hz (`scaling_cur_freq`).
    pub freq_hz: Option<u64>,
    /// Lowest clock the governor may pick, Hz (`scaling_min_freq`).
    pub min_freq_hz: Option<u64>,
    /// Highest clock the governor may pick, Hz (`scaling_max_freq`).
    pub max_freq_hz: Option<u64>,
    /// cpufreq governor (`schedutil`, `performance`, ...).
    pub governor: Option<String>,
}

/// Remembers each core's jiffies, for the load between two samples.
#[derive(Debug)]
pub struct CpuMeter {
    root: PathBuf,
    last: HashMap<u32, (u64, u64)>,
}

/// `(busy, total)` jiffies of each `cpuN` line of `/proc/stat`.
fn jiffies(stat: &str) -> HashMap<u32, (u64, u64)> {
    let mut out = HashMap::new();
    for line in stat.lines() {
        let mut fields = line.split_whitespace();
        let Some(n) = fields
            .next()
            .and_then(|name| name.strip_prefix("cpu"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        // user nice system idle iowait irq softirq steal (guest time is inside user).
        let v: Vec<u64> = fields.take(8).filter_map(|f| f.parse().ok()).collect();
        if v.len() < 4 {
            continue;
        }
        let total: u64 = v.iter().sum();
        let idle = v[3] + v.get(4).copied().unwrap_or(0);
        out.insert(n, (total - idle, total));
    }
    out
}

fn khz(path: &Path) -> Option<u64> {
    read_i64(path)
        .and_then(|v| u64::try_from(v).ok())
        .map(|k| k * 1000)
}

impl CpuMeter {
    /// A meter over the CPUs under `root`.
    pub fn new(root: &Path) -> Self {
        CpuMeter {
            root: root.to_path_buf(),
            last: HashMap::new(),
        }
    }

    /// Every core, in number order; the state is `cpufreq`'s.
    pub fn sample(&mut self) -> (Vec<CpuCore>, SourceState) {
        let dir = self.root.join(CPUS);
        let mut cores: Vec<(u32, PathBuf)> = entries(&dir, "cpu")
            .into_iter()
            .filter_map(|p| {
                let n = p.file_name()?.to_str()?.strip_prefix("cpu")?.parse().ok()?;
                Some((n, p))
            })
            .collect();
        cores.sort_by_key(|(n, _)| *n);
        if cores.is_empty() {
            return (Vec::new(), SourceState::Absent(format!("no /{CPUS}/cpu*")));
        }
        let now = std::fs::read_to_string(self.root.join(PROC_STAT))
            .map(|s| jiffies(&s))
            .unwrap_or_default();
        let mut out = Vec::with_capacity(cores.len());
        let mut no_freq = Vec::new();
        for (n, p) in cores {
            let online = read_i64(&p.join("online")).is_none_or(|v| v == 1);
            let f = p.join("cpufreq");
            let load_pct = match (online, now.get(&n), self.last.get(&n)) {
                (true, Some(&(b1, t1)), Some(&(b0, t0))) if t1 > t0 => {
                    Some(b1.saturating_sub(b0) as f64 * 100.0 / (t1 - t0) as f64)
                }
                _ => None,
            };
            let core = CpuCore {
                cpu: n,
                online,
                load_pct,
                freq_hz: online.then(|| khz(&f.join("scaling_cur_freq"))).flatten(),
                min_freq_hz: khz(&f.join("scaling_min_freq")),
                max_freq_hz: khz(&f.join("scaling_max_freq")),
                governor: read_str(&f.join("scaling_governor")),
            };
            if online && core.freq_hz.is_none() {
                no_freq.push(format!("cpu{n}"));
            }
            out.push(core);
        }
        self.last = now;
        let state = if no_freq.len() == out.iter().filter(|c| c.online).count() {
            SourceState::Absent(format!("no readable /{CPUS}/cpu*/cpufreq/scaling_cur_freq"))
        } else if no_freq.is_empty() {
            SourceState::Ok
        } else {
            SourceState::Error(format!("clock unreadable: {}", no_freq.join(", ")))
        };
        (out, state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_lines_give_busy_and_total_per_core() {
        let j = jiffies(
            "cpu  10 0 10 80 0 0 0 0 0 0\ncpu0 5 0 5 40 10 0 0 0 0 0\ncpu1 1 2 3 4\nintr 1 2\n",
        );
        assert_eq!(j.len(), 2, "the all-CPU line is not a core");
        assert_eq!(j[&0], (10, 60), "idle and iowait are not busy");
        assert_eq!(j[&1], (6, 10));
    }
}
