//! Latency statistics over the transfers of one measurement.
//!
//! Owns: [`Summary`] (count, mean, min, max, p50, p99, standard deviation, all µs) and
//! the bandwidth rule used everywhere: GB/s = bytes / mean latency (10^9 bytes per
//! second), the same rule as the reference report's bandwidth tables (its 1 MB row is
//! 1 048 576 bytes / 521.2 µs = 2.01 GB/s).
//!
//! For verdicts: [`Robust`] (median, p10/p90, their relative spread, the median's
//! distribution-free 95 % interval, steady / noisy / too few), [`PairedRatio`] (ratios
//! from interleaved A B A B … runs with an interval) and [`drift_pct`] (soak drift only
//! from enough samples). The thresholds and why are `docs/bench.md` (*Statistics*).
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

/// Relative spread above which a set of samples is called noisy: (p90 − p10) / p50.
///
/// Chosen after the sample sets in `fixtures/samples.json` were recorded and frozen: the
/// clean sets (simulated card, tight middle, a few scheduler outliers in the maximum)
/// spread 0.02–0.25, the noisy ones (a fifth or more of the transfers slowed 3–6× by a
/// busy machine) 2.5 and more. 0.5 sits between, with margin on both sides; one
/// outlier in a hundred moves neither p10 nor p90, so it cannot make a clean run noisy.
pub(crate) const NOISY_SPREAD: f64 = 0.5;
/// Fewest samples a verdict is given on; fewer are reported as too few.
pub(crate) const MIN_SAMPLES: usize = 10;
/// Relative half-width of a paired ratio's 95 % interval above which the ratio is noisy.
pub(crate) const NOISY_RATIO_HALF_WIDTH: f64 = 0.05;

/// Whether a set of samples can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Verdict {
    /// Spread within [`NOISY_SPREAD`] and at least [`MIN_SAMPLES`] samples.
    Steady,
    /// Too wide a spread: "noisy — rerun on an idle machine".
    Noisy,
    /// Fewer than [`MIN_SAMPLES`] samples.
    TooFew,
}

impl Verdict {
    /// What a report prints.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Verdict::Steady => "steady",
            Verdict::Noisy => "noisy — rerun on an idle machine",
            Verdict::TooFew => "too few samples",
        }
    }
}

/// Median, its spread and a distribution-free 95 % interval, all µs (or the samples'
/// unit).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Robust {
    /// Samples.
    pub(crate) n: usize,
    /// Median (nearest rank).
    pub(crate) p50: f64,
    /// 10th and 90th percentiles.
    pub(crate) p10: f64,
    /// 90th percentile.
    pub(crate) p90: f64,
    /// (p90 − p10) / p50, the spread the verdict is judged on.
    pub(crate) spread: f64,
    /// 95 % interval of the median: order statistics n/2 ∓ 0.98·√n (binomial, no
    /// assumption about the distribution; Conover, *Practical Nonparametric Statistics*,
    /// §3.2).
    pub(crate) ci_low: f64,
    /// Upper end of that interval.
    pub(crate) ci_high: f64,
    /// Steady, noisy or too few.
    pub(crate) verdict: Verdict,
}

impl Robust {
    /// Of `samples`; `None` when empty.
    pub(crate) fn of(samples: &[f64]) -> Option<Robust> {
        if samples.is_empty() {
            return None;
        }
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let p50 = percentile(&s, 50.0);
        let (p10, p90) = (percentile(&s, 10.0), percentile(&s, 90.0));
        let spread = if p50 > 0.0 { (p90 - p10) / p50 } else { 0.0 };
        let (lo, hi) = median_ci_ranks(n);
        let verdict = if n < MIN_SAMPLES {
            Verdict::TooFew
        } else if spread > NOISY_SPREAD {
            Verdict::Noisy
        } else {
            Verdict::Steady
        };
        Some(Robust {
            n,
            p50,
            p10,
            p90,
            spread,
            ci_low: s[lo],
            ci_high: s[hi],
            verdict,
        })
    }
}

/// 0-based ranks bounding the median's 95 % interval in `n` sorted samples.
fn median_ci_ranks(n: usize) -> (usize, usize) {
    let half = 0.98 * (n as f64).sqrt();
    let mid = n as f64 / 2.0;
    let lo = (mid - half).floor().max(0.0) as usize;
    let hi = ((mid + half).ceil() as usize).min(n - 1);
    (lo.min(n - 1), hi)
}

/// A ratio from paired, interleaved runs (A B A B …): the median of the per-pair ratios
/// b_i / a_i with its 95 % interval, and whether it can be quoted.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct PairedRatio {
    /// Pairs.
    pub(crate) pairs: usize,
    /// Median of the per-pair ratios.
    pub(crate) median: f64,
    /// Lower end of its 95 % interval.
    pub(crate) ci_low: f64,
    /// Upper end.
    pub(crate) ci_high: f64,
    /// Noisy when the per-pair ratios spread more than [`NOISY_SPREAD`] (the rule of
    /// single sets, applied to the ratios: pairing cancels what falls on both sides alike)
    /// or the interval's half-width exceeds [`NOISY_RATIO_HALF_WIDTH`] of the median; too
    /// few under [`MIN_SAMPLES`] pairs.
    pub(crate) verdict: Verdict,
}

impl PairedRatio {
    /// `num[i] / den[i]` over the pairs; `None` without a pair with a positive
    /// denominator.
    pub(crate) fn of(num: &[f64], den: &[f64]) -> Option<PairedRatio> {
        let r: Vec<f64> = num
            .iter()
            .zip(den)
            .filter(|(_, d)| **d > 0.0)
            .map(|(n, d)| n / d)
            .collect();
        let rr = Robust::of(&r)?;
        let half = (rr.ci_high - rr.ci_low) / 2.0;
        let verdict = if rr.n < MIN_SAMPLES {
            Verdict::TooFew
        } else if rr.verdict == Verdict::Noisy || half > NOISY_RATIO_HALF_WIDTH * rr.p50.abs() {
            Verdict::Noisy
        } else {
            Verdict::Steady
        };
        Some(PairedRatio {
            pairs: rr.n,
            median: rr.p50,
            ci_low: rr.ci_low,
            ci_high: rr.ci_high,
            verdict,
        })
    }

    /// `0.998x [0.995, 1.001]`, or the verdict instead of a figure when it is not steady.
    pub(crate) fn text(&self) -> String {
        match self.verdict {
            Verdict::Steady => format!(
                "{:.3}x (95 % interval {:.3}–{:.3}, {} pairs)",
                self.median, self.ci_low, self.ci_high, self.pairs
            ),
            v => format!(
                "{} (median {:.3}x, interval {:.3}–{:.3}, {} pairs)",
                v.as_str(),
                self.median,
                self.ci_low,
                self.ci_high,
                self.pairs
            ),
        }
    }
}

/// How much faster `fast` is than `slow`, from their interleaved samples (µs, the i-th
/// of each a pair): the ratio of the means (the reference report's rule) and the paired ratio
/// `slow_i / fast_i`; `None` where a side has no samples.
pub(crate) fn speedup(slow: &[f64], fast: &[f64]) -> (Option<f64>, Option<PairedRatio>) {
    let of_means = mean(fast).zip(mean(slow)).map(|(f, s)| s / f);
    (of_means, PairedRatio::of(slow, fast))
}

/// The ratio of paired samples as a table cell: `1.234x [1.200–1.250]` when steady, the
/// verdict with the median in brackets otherwise; `n/a` without a pair.
pub(crate) fn paired_cell(r: Option<&PairedRatio>) -> String {
    match r {
        None => "n/a".into(),
        Some(r) if r.verdict == Verdict::Steady => {
            format!("{:.3}x [{:.3}–{:.3}]", r.median, r.ci_low, r.ci_high)
        }
        Some(r) => format!("{} ({:.3}x)", r.verdict.as_str(), r.median),
    }
}

/// Fewest samples in each window before a soak's drift is computed.
pub(crate) const DRIFT_MIN_PER_WINDOW: usize = 30;

/// Drift over a soak: the median of the last third against the median of the first
/// third, %; only with [`DRIFT_MIN_PER_WINDOW`] samples in each third, and only called
/// a drift when the two medians' 95 % intervals do not overlap (else `Ok(None)`: no
/// drift the samples can show). `Err` says why no drift is computed.
pub(crate) fn drift_pct(samples: &[f64]) -> std::result::Result<Option<f64>, String> {
    let third = samples.len() / 3;
    if third < DRIFT_MIN_PER_WINDOW {
        return Err(format!(
            "not computed: {} samples, a drift needs {} (at least {} per third)",
            samples.len(),
            3 * DRIFT_MIN_PER_WINDOW,
            DRIFT_MIN_PER_WINDOW
        ));
    }
    let first = Robust::of(&samples[..third]).expect("non-empty");
    let last = Robust::of(&samples[samples.len() - third..]).expect("non-empty");
    let overlap = first.ci_low <= last.ci_high && last.ci_low <= first.ci_high;
    if overlap || first.p50 <= 0.0 {
        return Ok(None);
    }
    Ok(Some((last.p50 - first.p50) / first.p50 * 100.0))
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

    /// The sample sets recorded on the development machine and frozen before
    /// [`NOISY_SPREAD`] was chosen (`fixtures/samples.json`).
    fn fixtures() -> serde_json::Value {
        serde_json::from_str(include_str!("../fixtures/samples.json")).unwrap()
    }

    fn set(v: &serde_json::Value) -> Vec<f64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    }

    #[test]
    fn the_noisy_verdict_fires_on_the_recorded_noisy_sets_only() {
        let f = fixtures();
        for (name, v) in f["noisy"].as_object().unwrap() {
            let r = Robust::of(&set(v)).unwrap();
            assert_eq!(r.verdict, Verdict::Noisy, "{name}: {r:?}");
        }
        for (name, v) in f["clean"].as_object().unwrap() {
            let r = Robust::of(&set(v)).unwrap();
            assert_eq!(r.verdict, Verdict::Steady, "{name}: {r:?}");
        }
    }

    #[test]
    fn paired_ratios_of_the_recorded_pairs() {
        let f = fixtures();
        for (name, p) in f["pairs_noisy"].as_object().unwrap() {
            let r = PairedRatio::of(&set(&p["a"]), &set(&p["b"])).unwrap();
            assert_eq!(r.verdict, Verdict::Noisy, "{name}: {r:?}");
            assert!(r.text().starts_with("noisy — rerun on an idle machine"));
        }
        for (name, p) in f["pairs_clean"].as_object().unwrap() {
            let r = PairedRatio::of(&set(&p["a"]), &set(&p["b"])).unwrap();
            assert_eq!(r.verdict, Verdict::Steady, "{name}: {r:?}");
            assert!(r.ci_low <= r.median && r.median <= r.ci_high);
        }
    }

    #[test]
    fn median_interval_and_too_few() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let r = Robust::of(&v).unwrap();
        assert_eq!(r.p50, 50.0);
        // ranks 50 ∓ 9.8 → 40..60 (0-based) → values 41 and 61
        assert_eq!((r.ci_low, r.ci_high), (41.0, 61.0));
        assert_eq!(Robust::of(&v[..9]).unwrap().verdict, Verdict::TooFew);
        let one = Robust::of(&[5.0]).unwrap();
        assert_eq!((one.ci_low, one.ci_high), (5.0, 5.0));
    }

    #[test]
    fn drift_needs_enough_samples_and_separated_medians() {
        // The soak: four samples never give a drift.
        assert!(drift_pct(&[1.0, 2.0, 3.0, 4.0]).is_err());
        // Flat with noise: no drift.
        let flat: Vec<f64> = (0..120).map(|i| 100.0 + f64::from(i % 7)).collect();
        assert_eq!(drift_pct(&flat).unwrap(), None);
        // A real step from 100 to 110.
        let step: Vec<f64> = (0..120)
            .map(|i| if i < 60 { 100.0 } else { 110.0 } + f64::from(i % 3))
            .collect();
        let d = drift_pct(&step).unwrap().unwrap();
        assert!((d - 10.0).abs() < 0.5, "{d}");
    }

    #[test]
    fn bandwidth_follows_the_reference_rule() {
        // Reference report §4.1: 1 MB GPU Direct read, 521.2 µs -> 2.01 GB/s.
        assert!((gbps(1 << 20, 521.2) - 2.012).abs() < 0.001);
    }
}
