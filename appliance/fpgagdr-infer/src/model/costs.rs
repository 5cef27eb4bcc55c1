//! The model's time per batch size, measured when it warms up: what the service's
//! inference thread chooses its batch wait from.
//!
//! Owns: [`BatchCosts`]. Must not: time anything itself (`mod.rs` and `device.rs` run the
//! model; this only reads the table).

use std::time::Duration;

/// Model time per batch size, from a few measured sizes: the median of a few runs of
/// each (`median`), after the runs that warmed it up, from queueing the batch to its
/// results in host memory.
///
/// Where the model runs every batch padded to a measured size (CUDA graphs: the next
/// size of the graph ladder, or the largest batch), a batch costs what its padded size costs;
/// otherwise the cost is interpolated linearly between the measured sizes (and
/// extrapolated past the last two).
#[derive(Debug, Clone, PartialEq)]
pub struct BatchCosts {
    points: Vec<(usize, Duration)>,
    padded: bool,
}

impl BatchCosts {
    /// A table of measured `(frames, time)` points (any order; at least one), `padded`
    /// when a batch runs as the smallest measured size at or above it.
    ///
    /// # Panics
    /// When `points` is empty or holds a size of 0.
    pub fn new(mut points: Vec<(usize, Duration)>, padded: bool) -> Self {
        assert!(
            !points.is_empty() && points.iter().all(|&(n, _)| n > 0),
            "at least one measured batch size, none of 0 frames"
        );
        points.sort_by_key(|&(n, _)| n);
        points.dedup_by_key(|p| p.0);
        BatchCosts { points, padded }
    }

    /// The measured sizes and their times, smallest first.
    pub fn points(&self) -> &[(usize, Duration)] {
        &self.points
    }

    /// True when a batch runs as the next measured size (CUDA graphs).
    pub fn padded(&self) -> bool {
        self.padded
    }

    /// The model's time for a batch of `n` frames (`n` ≥ 1).
    pub fn cost(&self, n: usize) -> Duration {
        let n = n.max(1);
        let last = *self.points.last().expect("not empty");
        if self.padded {
            return self
                .points
                .iter()
                .find(|&&(m, _)| m >= n)
                .map_or(last.1, |p| p.1);
        }
        if let Some(&(_, t)) = self.points.iter().find(|&&(m, _)| m == n) {
            return t;
        }
        if self.points.len() == 1 {
            // One size measured: the time per frame of that size.
            return last.1.mul_f64(n as f64 / last.0 as f64);
        }
        // The two measured sizes around n (or the last two, past the end; the first two
        // before the start).
        let i = self
            .points
            .iter()
            .position(|&(m, _)| m > n)
            .unwrap_or(self.points.len() - 1)
            .max(1);
        let ((n0, t0), (n1, t1)) = (self.points[i - 1], self.points[i]);
        let slope = (t1.as_secs_f64() - t0.as_secs_f64()) / (n1 - n0) as f64;
        Duration::from_secs_f64((t0.as_secs_f64() + slope * (n as f64 - n0 as f64)).max(0.0))
    }

    /// One line for status pages: each measured size and its time.
    pub fn describe(&self) -> String {
        self.points
            .iter()
            .map(|(n, t)| format!("{n}: {:.0} µs", t.as_secs_f64() * 1e6))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The median of `runs` (sorted in place; the upper middle one of an even count):
/// a size's cost from several timed runs, so that one run slowed by something else
/// on the GPU or the host does not set it.
///
/// # Panics
/// With no runs.
pub(crate) fn median(runs: &mut [Duration]) -> Duration {
    assert!(!runs.is_empty(), "at least one timed run");
    runs.sort_unstable();
    runs[runs.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(v: u64) -> Duration {
        Duration::from_micros(v)
    }

    #[test]
    fn a_padded_batch_costs_what_its_padded_size_costs() {
        let c = BatchCosts::new(vec![(4, us(600)), (1, us(400)), (2, us(450))], true);
        assert_eq!(c.points()[0], (1, us(400)));
        assert_eq!(c.cost(1), us(400));
        assert_eq!(c.cost(3), us(600));
        assert_eq!(c.cost(4), us(600));
        assert_eq!(c.cost(9), us(600), "past the largest: the largest");
    }

    #[test]
    fn an_unpadded_batch_is_interpolated_between_measured_sizes() {
        let c = BatchCosts::new(vec![(1, us(9_000)), (4, us(30_000))], false);
        assert_eq!(c.cost(1), us(9_000));
        assert_eq!(c.cost(2), us(16_000));
        assert_eq!(c.cost(7), us(51_000), "extrapolated from the last two");
        let one = BatchCosts::new(vec![(2, us(1_000))], false);
        assert_eq!(one.cost(6), us(3_000));
        assert!(one.describe().contains("2: 1000 µs"));
    }

    #[test]
    fn a_size_costs_the_median_of_its_timed_runs_not_its_slowest() {
        let mut runs = [us(1_320), us(1_030), us(1_010), us(1_050), us(1_040)];
        assert_eq!(median(&mut runs), us(1_040));
        assert_eq!(median(&mut [us(7)]), us(7));
        assert_eq!(
            median(&mut [us(9), us(3)]),
            us(9),
            "upper middle of an even count"
        );
    }
}
