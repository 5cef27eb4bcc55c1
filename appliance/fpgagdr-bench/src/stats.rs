//! Latency statistics over the transfers of one measurement.
//!
//! Owns: [`Summary`] (count, mean, min, max, p50, p99, standard deviation, all µs) and
//! the bandwidth rule used everywhere: GB/s = bytes / mean latency (10^9 bytes per
//! second), the same rule as the seed report's bandwidth tables (its 1 MB row is
//! 1 048 576 bytes / 521.2 µs = 2.01 GB/s).
//!
//! Percentiles are exact (nearest rank over every stored sample), not estimated: a
//! measurement here holds at most a few thousand samples.

/// Statistics of a set of latencies, all in µs.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Summary {
    /// Number of transfers.
    pub(crate) n: usize,
    /// Arithmetic mean, µs.
    pub(crate) mean_us: f64,
    /// Fastest transfer, µs.
    pub(crate) min_us: f64,
    /// Slowest transfer, µs.
    pub(crate) max_us: f64,
    /// Median (nearest rank), µs.
    pub(crate) p50_us: f64,
    /// 99th percentile (nearest rank: with fewer than 100 samples it is the maximum), µs.
    pub(crate) p99_us: f64,
    /// Population standard deviation, µs.
    pub(crate) std_us: f64,
}

impl Summary {
    /// Statistics of `samples_us`; `None` when empty.
    pub(crate) fn of(samples_us: &[f64]) -> Option<Summary> {
        if samples_us.is_empty() {
            return None;
        }
        let n = samples_us.len();
        let mut sorted = samples_us.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mean = sorted.iter().sum::<f64>() / n as f64;
        let var = sorted.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        Some(Summary {
            n,
            mean_us: mean,
            min_us: sorted[0],
            max_us: sorted[n - 1],
            p50_us: percentile(&sorted, 50.0),
            p99_us: percentile(&sorted, 99.0),
            std_us: var.sqrt(),
        })
    }

    /// GB/s for transfers of `bytes` at this mean latency.
    pub(crate) fn gbps(&self, bytes: u64) -> f64 {
        gbps(bytes, self.mean_us)
    }
}

/// GB/s (10^9 bytes/s) of `bytes` moved in `latency_us` µs.
pub(crate) fn gbps(bytes: u64, latency_us: f64) -> f64 {
    if latency_us > 0.0 {
        bytes as f64 / latency_us / 1e3
    } else {
        0.0
    }
}

/// Nearest-rank percentile of sorted data: the smallest value with at least `p` % of
/// the samples at or below it.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Mean of a slice; `None` when empty.
pub(crate) fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_samples() {
        let s = Summary::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!(s.n, 4);
        assert_eq!(s.mean_us, 2.5);
        assert_eq!((s.min_us, s.max_us), (1.0, 4.0));
        assert_eq!(s.p50_us, 2.0);
        assert_eq!(s.p99_us, 4.0);
        assert!((s.std_us - 1.25f64.sqrt()).abs() < 1e-12);
        assert!(Summary::of(&[]).is_none());
    }

    #[test]
    fn p99_of_a_thousand() {
        let v: Vec<f64> = (1..=1000).map(f64::from).collect();
        assert_eq!(Summary::of(&v).unwrap().p99_us, 990.0);
    }

    #[test]
    fn bandwidth_follows_the_seed_rule() {
        // Seed §4.1: 1 MB GPU Direct read, 521.2 µs -> 2.01 GB/s.
        assert!((gbps(1 << 20, 521.2) - 2.012).abs() < 0.001);
    }
}
