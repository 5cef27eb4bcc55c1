//! How the inference thread forms batches: a fixed wait (`inference.batch_wait_us`,
//! batches up to `inference.max_batch`), or a batch limit and wait chosen as frames
//! arrive, from the model's time per batch size measured when it warmed up and the
//! latency target (`inference.latency_target_us`).
//!
//! Owns: [`BatchWait`], [`Choice`], [`aim`]. Must not: take frames or time the model
//! (`infer.rs` does; the times come from `fpgagdr_infer::BatchCosts`).
//!
//! The card's period `g`: from the arrival times and sequence numbers of the frames
//! taken (time between two frames over the sequence numbers between them, so frames
//! missed or dropped on the way do not stretch it), smoothed over about [`SMOOTHING`]
//! frames taken: the time between takes and the sequence steps between them are
//! smoothed apart and divided, so a host that takes the frames still in the card's slots
//! in a burst sees the card's period, not its own rhythm (a mean of per-take gaps would
//! count the burst's near-zero gaps as much as the long one before it, which spans the
//! frames the card overwrote).
//!
//! The choice, with `t(n)` the model's measured time for a batch of `n` and `L` the
//! target (docs/decisions.md, "A latency target for the chosen batches"):
//!
//! * A batch of `n` *keeps up* with margin `m` when its frames take longer to arrive
//!   than `m` model runs: `n · g ≥ m · t(n)`.
//! * Its *predicted latency* is what the batch's first frame waits: the other `n − 1`
//!   frames' arrival, then one model run, `(n − 1) · g + t(n)`. The measured end-to-end
//!   time adds the frame's own DMA, its preprocessing and the scheduling around them.
//! 1. The smallest `n` that keeps up with [`HEADROOM`] is aimed at when its predicted
//!    latency is within `L` (it is also the `n` of least predicted latency among those
//!    that keep up: both terms grow with `n`).
//! 2. Else the smallest `n` within `L` that keeps up with [`MIN_HEADROOM`]: a thinner
//!    margin buys the target (on a GPU the padded batch sizes make `t` jump: 16 frames
//!    may keep up by 23 % where the next size needs 30 frames and 8 ms).
//! 3. Else the target cannot be met; throughput first: the smallest `n` that keeps up
//!    (with [`HEADROOM`], else [`MIN_HEADROOM`]) is aimed at, or with none the largest
//!    batch (its wait bounded by its model time).
//!
//! The wait is the time the aimed batch's `n − 1` further frames take to arrive,
//! `(n − 1) · g`: 0 when the model keeps up with single frames. In 1 and 2 a batch takes
//! at most the largest `k ≥ n` whose predicted latency is still within `L` (the
//! *limit*): frames already waiting (a backlog after a stall, or a model slower live
//! than at warm-up) join a batch at once, up to sizes that keep the latency, so a thin
//! margin cannot turn into a backlog that only grows. In 3 the limit is
//! `inference.max_batch`: a backlog forms batches as large as the model allows.

use std::time::Duration;

use fpgagdr_infer::BatchCosts;

use super::shared::{BatchChoice, BatchReason};

/// The margin of throughput over the arrival rate that an aimed batch has, unless a
/// thinner one meets the latency target.
pub(crate) const HEADROOM: f64 = 1.25;
/// The least margin of throughput over the arrival rate a batch chosen for the latency
/// target may have.
pub(crate) const MIN_HEADROOM: f64 = 1.1;
/// Frames over which the arrival gap is smoothed (an exponential mean).
pub(crate) const SMOOTHING: f64 = 64.0;

/// How batches are formed.
#[derive(Debug, Clone)]
pub(crate) enum BatchWait {
    /// `inference.batch_wait_us`, batches up to the largest.
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

    /// The wait for the batch being built and the most frames it takes.
    pub(crate) fn wait_and_limit(&self, max_batch: usize) -> (Duration, usize) {
        match self {
            BatchWait::Fixed(d) => (*d, max_batch),
            BatchWait::Chosen(c) => {
                let a = c.aim();
                (a.wait, a.limit)
            }
        }
    }
}

/// The chosen wait's state: the model's costs, the target and the arrival gap.
#[derive(Debug, Clone)]
pub(crate) struct Choice {
    costs: BatchCosts,
    max_batch: usize,
    target: Duration,
    /// Smoothed time between frames taken, ns, and smoothed sequence steps between
    /// them; `None` before two frames arrived.
    span: Option<(f64, f64)>,
    /// The card's period these give (time over steps), ns.
    gap_ns: Option<f64>,
    /// The last frame taken: (sequence number, arrival ns).
    last: Option<(u64, u64)>,
}

impl Choice {
    /// A choice among batches of 1 to `max_batch` frames with the model's `costs`,
    /// aiming at a predicted latency within `target`.
    pub(crate) fn new(costs: BatchCosts, max_batch: usize, target: Duration) -> Self {
        Choice {
            costs,
            max_batch: max_batch.max(1),
            target,
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

    /// The choice for the arrival gap seen so far: before two frames arrived, batches of
    /// what is ready (no wait) up to the largest.
    pub(crate) fn aim(&self) -> BatchChoice {
        match self.gap().filter(|g| !g.is_zero()) {
            Some(gap) => aim(&self.costs, self.max_batch, gap, self.target),
            None => BatchChoice {
                aim: 1,
                limit: self.max_batch,
                wait: Duration::ZERO,
                gap: None,
                model: self.costs.cost(1),
                predicted: self.costs.cost(1),
                target: self.target,
                reason: BatchReason::NoArrivals,
                padded_to: padded_to(&self.costs),
            },
        }
    }
}

/// The batch limit and wait when frames arrive every `gap`, for a predicted latency
/// within `target` (module documentation).
pub(crate) fn aim(
    costs: &BatchCosts,
    max_batch: usize,
    gap: Duration,
    target: Duration,
) -> BatchChoice {
    let max_batch = max_batch.max(1);
    let keeps_up =
        |n: usize, m: f64| n as f64 * gap.as_secs_f64() >= m * costs.cost(n).as_secs_f64();
    let predicted = |n: usize| gap * (n as u32 - 1) + costs.cost(n);
    let choice = |n: usize, limit: usize, wait: Duration, reason| BatchChoice {
        aim: n,
        limit,
        wait,
        gap: Some(gap),
        model: costs.cost(n),
        predicted: wait + costs.cost(n),
        target,
        reason,
        padded_to: padded_to(costs),
    };
    let first = (1..=max_batch).find(|&n| keeps_up(n, HEADROOM));
    // The largest batch from n up whose predicted latency is within the target (the
    // prediction grows with the batch: the fill does, and a larger batch never runs
    // faster).
    let limit = |n: usize| {
        (n..=max_batch)
            .take_while(|&k| predicted(k) <= target)
            .last()
            .unwrap_or(n)
    };
    if let Some(n) = first.filter(|&n| predicted(n) <= target) {
        return choice(n, limit(n), gap * (n as u32 - 1), BatchReason::WithinTarget);
    }
    if let Some(n) = (1..=max_batch).find(|&n| keeps_up(n, MIN_HEADROOM) && predicted(n) <= target)
    {
        return choice(
            n,
            limit(n),
            gap * (n as u32 - 1),
            BatchReason::WithinTargetThinMargin,
        );
    }
    match first.or_else(|| (1..=max_batch).find(|&n| keeps_up(n, MIN_HEADROOM))) {
        Some(n) => choice(n, max_batch, gap * (n as u32 - 1), BatchReason::TargetUnmet),
        None => {
            let wait = (gap * (max_batch as u32 - 1)).min(costs.cost(max_batch));
            choice(max_batch, max_batch, wait, BatchReason::NoBatchKeepsUp)
        }
    }
}

/// The one size every batch runs as, when the costs hold one padded size.
fn padded_to(costs: &BatchCosts) -> Option<usize> {
    match costs.points() {
        [(n, _)] if costs.padded() => Some(*n),
        _ => None,
    }
}

/// The choice in words (written here, beside the margins it names).
impl BatchChoice {
    /// One sentence for status pages: the choice, its figures and why.
    pub fn describe(&self) -> String {
        let ms = |d: Duration| format!("{:.2} ms", d.as_secs_f64() * 1e3);
        let (aim, limit) = (self.aim, self.limit);
        let frames = |n: usize| format!("{n} frame{}", if n == 1 { "" } else { "s" });
        let batches = format!(
            "batches of {} (up to {limit} from frames already waiting): {} to fill + {} of \
             model = {} predicted",
            frames(aim),
            ms(self.wait),
            ms(self.model),
            ms(self.predicted)
        );
        let target = ms(self.target);
        let keep = self.gap.map_or(String::new(), |g| {
            let margin = aim as f64 * g.as_secs_f64() / self.model.as_secs_f64().max(1e-9);
            format!(
                "{} arrive in {} ({:.0} µs apart), {margin:.2}× their model time",
                frames(aim),
                ms(g * aim as u32),
                g.as_secs_f64() * 1e6
            )
        });
        match self.reason {
            BatchReason::NoArrivals => {
                format!("no arrival rate yet: frames run as they are ready, up to {limit} a batch")
            }
            BatchReason::WithinTarget => {
                format!("{batches}, within the {target} target; {keep}")
            }
            BatchReason::WithinTargetThinMargin => format!(
                "{batches}, within the {target} target with a thin margin: {keep} (the \
                 smallest batch keeping up by {HEADROOM} would miss the target)"
            ),
            BatchReason::TargetUnmet => format!(
                "the {target} latency target cannot be met: keeping up at this rate needs \
                 {batches}; {keep}; a backlog runs in batches up to {limit}{}",
                self.padded_to.map_or(String::new(), |n| format!(
                    "; every batch runs as {} (one CUDA graph of that size), so a smaller \
                     inference.max_batch makes each run shorter",
                    frames(n)
                ))
            ),
            BatchReason::NoBatchKeepsUp => format!(
                "no batch up to {} keeps up with the arrivals (frames will be dropped or \
                 missed), so the {target} latency target cannot be met: {batches}",
                frames(limit)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(v: u64) -> Duration {
        Duration::from_micros(v)
    }

    const TARGET: Duration = Duration::from_millis(5);

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

    /// The fp16 model on the same H100 with one CUDA graph of 64 (every batch padded to
    /// it): ≈ 4.3 ms a run whatever the batch (15,000 frames/s at 64, §12.0).
    fn h100_fp16_one_graph() -> BatchCosts {
        BatchCosts::new(vec![(64, us(4_300))], true)
    }

    #[test]
    fn at_the_gen3x8_rate_on_the_h100_batches_of_8_to_16_keep_within_5_ms() {
        // 6,661 frames/s: 150 µs apart. The smallest batch that keeps up by 25 %, 30
        // frames padded to 32, predicts 29 × 150 µs + 3.55 ms = 7.9 ms. 8 frames keep up
        // by 1.2 / 1.0 and predict 7 × 150 µs + 1.0 ms; a backlog may form batches up to
        // 16 (15 × 150 µs + 1.95 ms = 4.2 ms), never 17 (padded to 32: 6.0 + 3.55 ms).
        let c = aim(&h100_fp32(), 64, us(150), TARGET);
        assert_eq!((c.aim, c.limit, c.wait), (8, 16, us(150 * 7)));
        assert_eq!(c.reason, BatchReason::WithinTargetThinMargin);
        assert_eq!(c.predicted, us(1_050 + 1_000));
        assert!(c.describe().contains("within"), "{}", c.describe());
        // With a looser target the margin wins: 30 frames, 7.9 ms.
        let c = aim(&h100_fp32(), 64, us(150), Duration::from_millis(8));
        assert_eq!(
            (c.aim, c.limit, c.reason),
            (30, 30, BatchReason::WithinTarget)
        );
    }

    #[test]
    fn a_faster_card_needs_larger_batches_and_status_says_the_target_is_unmet() {
        // 8,000 frames/s (125 µs): 16 frames no longer keep up even by 10 %; 32 do (by
        // 4.0 / 3.55 = 1.13) but predict 31 × 125 µs + 3.55 ms = 7.4 ms.
        let c = aim(&h100_fp32(), 64, us(125), TARGET);
        assert_eq!(c.aim, 32);
        assert_eq!(
            c.limit, 64,
            "throughput first: a backlog runs in batches up to 64"
        );
        assert_eq!(c.wait, us(125 * 31));
        assert_eq!(c.reason, BatchReason::TargetUnmet);
        assert!(c.predicted > TARGET);
        assert!(c.describe().contains("cannot be met"), "{}", c.describe());
    }

    #[test]
    fn one_graph_of_64_cannot_meet_5_ms_at_the_gen3x8_rate() {
        // Every batch costs 4.3 ms: keeping up needs 36 frames (5.25 ms to arrive).
        let c = aim(&h100_fp16_one_graph(), 64, us(150), TARGET);
        assert_eq!(
            (c.aim, c.limit, c.reason),
            (36, 64, BatchReason::TargetUnmet)
        );
        assert_eq!(c.predicted, us(35 * 150 + 4_300));
        assert_eq!(c.padded_to, Some(64));
        let text = c.describe();
        assert!(text.contains("36") && text.contains("5.00 ms"), "{text}");
        assert!(
            text.contains("every batch runs as 64 frames") && text.contains("max_batch"),
            "the way out is named: {text}"
        );
        // Per-size costs say nothing of padding.
        let c = aim(&h100_fp32(), 64, us(125), TARGET);
        assert_eq!((c.reason, c.padded_to), (BatchReason::TargetUnmet, None));
        assert!(!c.describe().contains("one CUDA graph"), "{}", c.describe());
    }

    #[test]
    fn a_model_faster_than_the_arrivals_runs_each_frame_at_once() {
        // 1,000 frames/s: one frame per ms, the model takes 0.445 ms.
        let c = aim(&gpu_like(), 64, us(1_000), TARGET);
        // A backlog may run as 5 (4 ms to arrive, 0.9 ms padded to 8), not 6.
        assert_eq!((c.aim, c.limit, c.wait), (1, 5, Duration::ZERO));
        assert_eq!(c.reason, BatchReason::WithinTarget);
    }

    #[test]
    fn the_smallest_batch_that_keeps_up_with_margin_is_aimed_at() {
        // 6,661 frames/s: 150 µs apart. 4 frames in 560 µs arrive in 600 µs: no margin;
        // 8 frames in 900 µs arrive in 1,200 µs: 1.33 > 1.25.
        let c = aim(&gpu_like(), 64, us(150), TARGET);
        assert_eq!((c.aim, c.limit, c.wait), (8, 16, us(150 * 7)));
        assert!(
            c.wait < gpu_like().cost(8).mul_f64(HEADROOM),
            "a frame waits less than HEADROOM x one batch's run"
        );
    }

    #[test]
    fn when_no_batch_keeps_up_the_largest_is_aimed_at_and_the_wait_bounded() {
        let c = aim(&gpu_like(), 64, us(50), TARGET);
        assert_eq!((c.aim, c.limit), (64, 64));
        assert_eq!(c.wait, us(50 * 63).min(us(7_000)));
        assert_eq!(c.reason, BatchReason::NoBatchKeepsUp);
        let c = aim(&gpu_like(), 4, us(50), TARGET);
        assert_eq!((c.aim, c.limit, c.wait), (4, 4, us(150)));
    }

    #[test]
    fn a_model_slower_than_the_target_is_said_to_miss_it() {
        // The CPU: 7 ms a frame, 30 frames/s. One frame keeps up; the target cannot be
        // met by any batch.
        let cpu = BatchCosts::new(vec![(1, us(7_000)), (4, us(28_000))], false);
        let c = aim(&cpu, 1, us(33_333), TARGET);
        assert_eq!((c.aim, c.limit, c.wait), (1, 1, Duration::ZERO));
        assert_eq!(c.reason, BatchReason::TargetUnmet);
        assert!(c.describe().contains("7.00 ms"), "{}", c.describe());
    }

    #[test]
    fn the_gap_is_smoothed_over_arrivals_and_ignores_disorder() {
        let mut c = Choice::new(gpu_like(), 64, TARGET);
        let first = c.aim();
        assert_eq!(
            (first.aim, first.limit, first.wait),
            (1, 64, Duration::ZERO)
        );
        assert_eq!(first.reason, BatchReason::NoArrivals, "nothing arrived yet");
        // Every third frame taken (the others missed or dropped): the card's period.
        for k in 0..1_000u64 {
            c.arrived(3 * k, 3 * k * 150_000);
        }
        assert_eq!(c.gap(), Some(us(150)));
        c.arrived(5, 10); // a new run of sequence numbers: starts over, no sample
        assert_eq!(c.gap(), Some(us(150)));
        c.arrived(6, 150_010);
        assert_eq!(c.gap(), Some(us(150)));
        assert_eq!(c.aim().aim, 8);
        let mut w = BatchWait::Chosen(c);
        assert_eq!(w.wait_and_limit(64), (us(1_050), 16));
        w.arrived(7, 300_010);
        let mut f = BatchWait::Fixed(us(7));
        f.arrived(1, 5);
        assert_eq!(f.wait_and_limit(64), (us(7), 64));
    }

    #[test]
    fn frames_taken_in_bursts_give_the_cards_period_not_the_bursts() {
        // A host slower than the card: every 40 ms it takes the 4 frames still in the
        // card's slots at once (10 µs apart), the 12 before them overwritten. The card's
        // period is 2.5 ms (16 frames in 40 ms), whatever the host's rhythm.
        let mut c = Choice::new(gpu_like(), 64, TARGET);
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
