//! How long the inference thread waits for a batch to fill: fixed
//! (`inference.batch_wait_us`), or chosen as frames arrive from the model's time per
//! batch size, measured when it warmed up.
//!
//! Owns: [`BatchWait`], [`Choice`]. Must not: take frames or time the model (`infer.rs`
//! does; the times come from `fpgagdr_infer::BatchCosts`).
//!
//! The chosen wait: frames arrive every `g`: the card's frame period, from the arrival
//! times and sequence numbers of the frames taken (time between two frames over the
//! sequence numbers between them, so frames missed or dropped on the way do not stretch
//! it), smoothed over about [`SMOOTHING`] frames taken: the time between takes and the
//! sequence steps between them are smoothed apart and divided, so a host that takes the
//! frames still in the card's slots in a burst sees the card's period, not its own
//! rhythm (a mean of per-take gaps would count the burst's near-zero gaps as much as the
//! long one before it, which spans the frames the card overwrote). The batch
//! aimed at is the smallest n whose model time keeps up with the arrivals with a margin,
//! n / cost(n) ≥ [`HEADROOM`] / g; the wait is the time its n − 1 further frames take
//! to arrive, (n − 1) · g. A frame then waits less than [`HEADROOM`] times one batch's
//! model time for its batch: n is the smallest that keeps up, so n − 1 does not,
//! (n − 1) · g < HEADROOM · cost(n − 1) ≤ HEADROOM · cost(n). When the model keeps up
//! with single frames the wait is 0 (no latency is added); when no batch size keeps up,
//! the aim is the largest batch and the wait is bounded by that batch's model time.
//! Frames already waiting in the ring join a batch at once in every case.

use std::time::Duration;

use fpgagdr_infer::BatchCosts;

/// The margin of throughput over the arrival rate that the aimed batch must have.
pub(crate) const HEADROOM: f64 = 1.25;
/// Frames over which the arrival gap is smoothed (an exponential mean).
pub(crate) const SMOOTHING: f64 = 64.0;

/// How the batch wait is set.
#[derive(Debug, Clone)]
pub(crate) enum BatchWait {
    /// `inference.batch_wait_us`.
    Fixed(Duration),
    /// Chosen as frames arrive.
    Chosen(Choice),
}

impl BatchWait {
    /// Notes the arrival of frame `seq` taken (ns of the service's clock, its
    /// `t_arrived`).
    pub(crate) fn arrived(&mut self, seq: u64, t_arrived: u64) {
        if let BatchWait::Chosen(c) = self {
            c.arrived(seq, t_arrived);
        }
    }

    /// The wait for the batch being built.
    pub(crate) fn wait(&self) -> Duration {
        match self {
            BatchWait::Fixed(d) => *d,
            BatchWait::Chosen(c) => c.aim().1,
        }
    }
}

/// The chosen wait's state: the model's costs and the arrival gap.
#[derive(Debug, Clone)]
pub(crate) struct Choice {
    costs: BatchCosts,
    max_batch: usize,
    /// Smoothed time between frames taken, ns, and smoothed sequence steps between
    /// them; `None` before two frames arrived.
    span: Option<(f64, f64)>,
    /// The card's period these give (time over steps), ns.
    gap_ns: Option<f64>,
    /// The last frame taken: (sequence number, arrival ns).
    last: Option<(u64, u64)>,
}

impl Choice {
    /// A choice among batches of 1 to `max_batch` frames with the model's `costs`.
    pub(crate) fn new(costs: BatchCosts, max_batch: usize) -> Self {
        Choice {
            costs,
            max_batch: max_batch.max(1),
            span: None,
            gap_ns: None,
            last: None,
        }
    }

    /// Notes the arrival (ns) of frame `seq`; a frame not after the last one in
    /// sequence or time (a new run of the card's numbers, a clock step) starts over from
    /// it.
    pub(crate) fn arrived(&mut self, seq: u64, t: u64) {
        if let Some((last_seq, last_t)) = self.last
            && seq > last_seq
            && t > last_t
        {
            let (dt, dseq) = ((t - last_t) as f64, (seq - last_seq) as f64);
            let (time, steps) = match self.span {
                None => (dt, dseq),
                Some((time, steps)) => (
                    time + (dt - time) / SMOOTHING,
                    steps + (dseq - steps) / SMOOTHING,
                ),
            };
            self.span = Some((time, steps));
            self.gap_ns = Some(time / steps);
        }
        self.last = Some((seq, t));
    }

    /// The smoothed gap between arrivals, if known.
    pub(crate) fn gap(&self) -> Option<Duration> {
        self.gap_ns.map(|g| Duration::from_nanos(g as u64))
    }

    /// The batch aimed at and the wait for it, for the arrival gap seen so far (a batch
    /// of 1 and no wait before two frames arrived).
    pub(crate) fn aim(&self) -> (usize, Duration) {
        let Some(gap) = self.gap_ns.filter(|g| *g > 0.0) else {
            return (1, Duration::ZERO);
        };
        let gap = Duration::from_nanos(gap as u64);
        aim(&self.costs, self.max_batch, gap)
    }
}

/// The batch to aim at and the wait for it when frames arrive every `gap` (module
/// documentation).
pub(crate) fn aim(costs: &BatchCosts, max_batch: usize, gap: Duration) -> (usize, Duration) {
    let keeps_up =
        |n: usize| n as f64 * gap.as_secs_f64() >= HEADROOM * costs.cost(n).as_secs_f64();
    match (1..=max_batch).find(|&n| keeps_up(n)) {
        Some(n) => (n, gap * (n as u32 - 1)),
        None => {
            let wait = (gap * (max_batch as u32 - 1)).min(costs.cost(max_batch));
            (max_batch, wait)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(v: u64) -> Duration {
        Duration::from_micros(v)
    }

    /// A model like EfficientNet-Lite0 fp32 on one H100 (docs/benchmarks.md): 445 µs for
    /// one frame, graphs of powers of two.
    fn gpu_like() -> BatchCosts {
        BatchCosts::new(
            vec![
                (1, us(445)),
                (2, us(470)),
                (4, us(560)),
                (8, us(900)),
                (16, us(1_700)),
                (32, us(3_700)),
                (64, us(7_000)),
            ],
            true,
        )
    }

    /// EfficientNet-Lite0 fp32 on one H100 as its warm-up timed it in the card-rate run
    /// of docs/benchmarks.md §12.0 (aim 30 and a 4,352 µs wait at 150 µs between
    /// frames: 32 frames in ≈ 3.55 ms, 16 in just over 1.92 ms).
    fn h100_fp32() -> BatchCosts {
        BatchCosts::new(
            vec![
                (1, us(445)),
                (2, us(480)),
                (4, us(600)),
                (8, us(1_000)),
                (16, us(1_950)),
                (32, us(3_550)),
                (64, us(6_900)),
            ],
            true,
        )
    }

    #[test]
    fn at_the_gen3x8_rate_on_the_h100_a_batch_of_16_keeps_within_5_ms() {
        // 6,661 frames/s: 150 µs apart. 16 frames fill in 2.25 ms and run in 1.95 ms.
        let (n, wait) = aim(&h100_fp32(), 64, us(150));
        assert_eq!((n, wait), (16, us(150 * 15)));
    }

    #[test]
    fn a_model_faster_than_the_arrivals_runs_each_frame_at_once() {
        // 1,000 frames/s: one frame per ms, the model takes 0.445 ms.
        assert_eq!(aim(&gpu_like(), 64, us(1_000)), (1, Duration::ZERO));
    }

    #[test]
    fn the_smallest_batch_that_keeps_up_with_margin_is_aimed_at() {
        // 6,661 frames/s: 150 µs apart. 4 frames in 560 µs arrive in 600 µs: no margin;
        // 8 frames in 900 µs arrive in 1,200 µs: 1.33 > 1.25.
        let (n, wait) = aim(&gpu_like(), 64, us(150));
        assert_eq!(n, 8);
        assert_eq!(wait, us(150 * 7));
        assert!(
            wait < gpu_like().cost(n).mul_f64(HEADROOM),
            "a frame waits less than HEADROOM x one batch's run"
        );
    }

    #[test]
    fn when_no_batch_keeps_up_the_largest_is_aimed_at_and_the_wait_bounded() {
        let (n, wait) = aim(&gpu_like(), 64, us(50));
        assert_eq!(n, 64);
        assert_eq!(wait, us(50 * 63).min(us(7_000)));
        let (n, wait) = aim(&gpu_like(), 4, us(50));
        assert_eq!((n, wait), (4, us(150)));
    }

    #[test]
    fn the_gap_is_smoothed_over_arrivals_and_ignores_disorder() {
        let mut c = Choice::new(gpu_like(), 64);
        assert_eq!(c.aim(), (1, Duration::ZERO), "nothing arrived yet");
        // Every third frame taken (the others missed or dropped): the card's period.
        for k in 0..1_000u64 {
            c.arrived(3 * k, 3 * k * 150_000);
        }
        assert_eq!(c.gap(), Some(us(150)));
        c.arrived(5, 10); // a new run of sequence numbers: starts over, no sample
        assert_eq!(c.gap(), Some(us(150)));
        c.arrived(6, 150_010);
        assert_eq!(c.gap(), Some(us(150)));
        assert_eq!(c.aim().0, 8);
        let mut w = BatchWait::Chosen(c);
        assert_eq!(w.wait(), us(1_050));
        w.arrived(7, 300_010);
        let mut f = BatchWait::Fixed(us(7));
        f.arrived(1, 5);
        assert_eq!(f.wait(), us(7));
    }

    #[test]
    fn frames_taken_in_bursts_give_the_cards_period_not_the_bursts() {
        // A host slower than the card: every 40 ms it takes the 4 frames still in the
        // card's slots at once (10 µs apart), the 12 before them overwritten. The card's
        // period is 2.5 ms (16 frames in 40 ms), whatever the host's rhythm.
        let mut c = Choice::new(gpu_like(), 64);
        let (mut seq, mut t) = (0u64, 0u64);
        for _ in 0..200 {
            seq += 13;
            t += 40_000_000 - 30_000;
            c.arrived(seq, t);
            for _ in 0..3 {
                seq += 1;
                t += 10_000;
                c.arrived(seq, t);
            }
        }
        let gap = c.gap().unwrap().as_secs_f64() * 1e6;
        assert!(
            (2_450.0..2_550.0).contains(&gap),
            "gap {gap} µs, want 2,500"
        );
    }
}
