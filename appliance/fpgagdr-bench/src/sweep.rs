//! `sweep`: the card-address sweep (reference report §4.4 / §4.5.5 "address-space consistency"):
//! transfers of `--size` at card addresses 0, 64 MiB, … up to the end of the card's
//! 2 GiB, read and write, `--iterations` at each. Whether the FPGA's DDR is equally fast
//! everywhere is judged on medians: the per-address medians, their lowest and highest,
//! the noise within an address (every transfer against its own address's median, pooled
//! over the addresses, so an address effect does not count as noise), and a hot spot
//! named only when the slowest address's median interval lies wholly above every other
//! address's. The reference report's figure, the standard deviation of the per-address means, is
//! kept beside them, and given only when the noise is not too wide (docs/bench.md,
//! *Statistics*).
//!
//! Buffers are pinned frame memory: GPU memory (path C) with a GPU, pinned host memory
//! without one (stated in the report).

use crate::bench::{Bench, Dir, PinnedMemory, time_read, time_write};
use crate::error::{BenchError, Result};
use crate::plot::{Plot, Series};
use crate::reference::{Compare, RefData};
use crate::report::{Outcome, Section, Table};
use crate::stats::{Robust, Summary, Verdict, mean};
use crate::units::{MIB, fmt_addr, fmt_size, parse_size, us};

/// Arguments of `sweep`.
#[derive(Debug, clap::Args)]
pub(crate) struct SweepArgs {
    /// Transfer size at each address.
    #[arg(long, default_value = "4M", value_parser = parse_size)]
    pub(crate) size: u64,
    /// Step between card addresses.
    #[arg(long, default_value = "64M", value_parser = parse_size)]
    pub(crate) step: u64,
    /// Card address space to cover, from 0 (default: the card's memory, 2 GiB when the
    /// module does not know it).
    #[arg(long, value_parser = parse_size)]
    pub(crate) span: Option<u64>,
    /// Timed transfers per address and direction.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) iterations: u32,
    /// Untimed transfers before the sweep.
    #[arg(long, default_value_t = 2)]
    pub(crate) warmup: u32,
}

/// One card address.
#[derive(Debug, serde::Serialize)]
pub(crate) struct Point {
    /// Card address, bytes.
    pub(crate) card_addr: u64,
    /// Read latency at this address, µs.
    pub(crate) read: Summary,
    /// Write latency at this address, µs.
    pub(crate) write: Summary,
    /// Read median with its 95 % interval.
    pub(crate) read_robust: Robust,
    /// Write median with its 95 % interval.
    pub(crate) write_robust: Robust,
}

impl Point {
    fn of(&self, dir: Dir) -> (&Summary, &Robust) {
        match dir {
            Dir::Read => (&self.read, &self.read_robust),
            Dir::Write => (&self.write, &self.write_robust),
        }
    }
}

/// How the addresses compare in one direction.
#[derive(Debug, serde::Serialize)]
pub(crate) struct Spread {
    /// Median of the per-address medians, µs.
    pub(crate) median_us: f64,
    /// Lowest per-address median, µs.
    pub(crate) min_us: f64,
    /// Highest per-address median, µs.
    pub(crate) max_us: f64,
    /// Address of the lowest median.
    pub(crate) min_addr: u64,
    /// Address of the highest median.
    pub(crate) max_addr: u64,
    /// Population standard deviation of the per-address medians, µs: the figure to read
    /// (a few slow transfers move the means' one, not this).
    pub(crate) median_std_us: f64,
    /// The noise within an address: every transfer ÷ its address's median, pooled over
    /// the addresses (median ≈ 1; `spread` = p90 − p10 of those ratios); its verdict
    /// decides whether the figures below can be quoted.
    pub(crate) noise: Robust,
    /// The slowest address, when its median's 95 % interval lies wholly above every
    /// other address's (never when the noise is too wide); `None`: no hot spot the
    /// samples can show.
    pub(crate) hot_spot: Option<u64>,
    /// Mean of the per-address means, µs (the reference report's rule).
    pub(crate) mean_us: f64,
    /// Population standard deviation of the per-address means, µs (the reference report's figure).
    pub(crate) std_us: f64,
    /// Transfer size ÷ mean, GB/s (the reference report's rule).
    pub(crate) gbps: f64,
}

/// The result of `sweep`.
#[derive(Debug, serde::Serialize)]
pub(crate) struct SweepOutcome {
    /// The memory the buffer is.
    pub(crate) memory: PinnedMemory,
    /// Transfer size, bytes.
    pub(crate) size_bytes: u64,
    /// Step, bytes.
    pub(crate) step_bytes: u64,
    /// Span covered, bytes.
    pub(crate) span_bytes: u64,
    /// Timed transfers per address and direction.
    pub(crate) iterations: u32,
    /// Every address.
    pub(crate) points: Vec<Point>,
    /// Spread of reads.
    pub(crate) read: Spread,
    /// Spread of writes.
    pub(crate) write: Spread,
}

/// The card addresses of a sweep: `0, step, 2·step, …` while a transfer of `size` fits
/// in `span`.
pub(crate) fn addresses(span: u64, step: u64, size: u64) -> Vec<u64> {
    (0..)
        .map(|i: u64| i * step)
        .take_while(|&a| a.checked_add(size).is_some_and(|end| end <= span))
        .collect()
}

/// Every sample ÷ the median of its own set: what is left of the noise once each
/// address's own level is taken out.
pub(crate) fn relative_to_median(samples: &[f64]) -> Vec<f64> {
    match Robust::of(samples) {
        Some(r) if r.p50 > 0.0 => samples.iter().map(|x| x / r.p50).collect(),
        _ => Vec::new(),
    }
}

/// The slowest of `(address, median interval)`, when its interval's low end is above
/// every other interval's high end.
pub(crate) fn hot_spot(points: &[(u64, &Robust)]) -> Option<u64> {
    let (slowest, r) = points.iter().max_by(|a, b| a.1.p50.total_cmp(&b.1.p50))?;
    let others_high = points
        .iter()
        .filter(|(addr, _)| addr != slowest)
        .map(|(_, o)| o.ci_high)
        .max_by(f64::total_cmp)?;
    (r.ci_low > others_high).then_some(*slowest)
}

fn spread(points: &[Point], dir: Dir, size: u64, relative: &[f64]) -> Spread {
    let medians: Vec<(u64, &Robust)> = points.iter().map(|p| (p.card_addr, p.of(dir).1)).collect();
    let means: Vec<f64> = points.iter().map(|p| p.of(dir).0.mean_us).collect();
    let p50s: Vec<f64> = medians.iter().map(|m| m.1.p50).collect();
    let min = medians
        .iter()
        .min_by(|a, b| a.1.p50.total_cmp(&b.1.p50))
        .expect("one");
    let max = medians
        .iter()
        .max_by(|a, b| a.1.p50.total_cmp(&b.1.p50))
        .expect("one");
    let noise = Robust::of(relative).unwrap_or_else(|| Robust::of(&[1.0]).expect("one"));
    let mean_us = mean(&means).unwrap_or(0.0);
    Spread {
        median_us: Robust::of(&p50s).expect("at least one address").p50,
        min_us: min.1.p50,
        max_us: max.1.p50,
        min_addr: min.0,
        max_addr: max.0,
        median_std_us: Summary::of(&p50s).expect("at least one address").std_us,
        hot_spot: (noise.verdict != Verdict::Noisy)
            .then(|| hot_spot(&medians))
            .flatten(),
        noise,
        mean_us,
        std_us: Summary::of(&means).expect("at least one address").std_us,
        gbps: crate::stats::gbps(size, mean_us),
    }
}

/// Runs `sweep`.
pub(crate) fn run(b: &Bench, a: &SweepArgs) -> Result<SweepOutcome> {
    let span = a.span.unwrap_or_else(|| b.card_span()).min(b.card_span());
    let addrs = addresses(span, a.step, a.size);
    if addrs.is_empty() {
        return Err(BenchError::Usage(format!(
            "sweep: a {} transfer does not fit in a span of {}",
            fmt_size(a.size),
            fmt_size(span)
        )));
    }
    let buf = b.pin_frame_memory(a.size)?;
    for _ in 0..a.warmup {
        time_read(b, &buf, 0, a.size)?;
    }
    let mut points = Vec::new();
    let (mut rel_r, mut rel_w) = (Vec::new(), Vec::new());
    let mut progress = crate::progress::Progress::new("sweep", addrs.len() as u64);
    for &addr in &addrs {
        if crate::progress::interrupted() {
            // Ctrl-C: the points measured so far are the result.
            break;
        }
        progress.inc(1);
        // One untimed write and read here first: a first touch (the simulated card's
        // sparse memory, a page an IOMMU maps on first use) is not the DDR's speed.
        time_write(b, &buf, addr, a.size)?;
        time_read(b, &buf, addr, a.size)?;
        let n = a.iterations as usize;
        let w: Vec<f64> = (0..n)
            .map(|_| time_write(b, &buf, addr, a.size))
            .collect::<Result<_>>()?;
        let r: Vec<f64> = (0..n)
            .map(|_| time_read(b, &buf, addr, a.size))
            .collect::<Result<_>>()?;
        rel_r.extend(relative_to_median(&r));
        rel_w.extend(relative_to_median(&w));
        points.push(Point {
            card_addr: addr,
            read: Summary::of(&r).expect("n ≥ 1"),
            write: Summary::of(&w).expect("n ≥ 1"),
            read_robust: Robust::of(&r).expect("n ≥ 1"),
            write_robust: Robust::of(&w).expect("n ≥ 1"),
        });
    }
    Ok(SweepOutcome {
        memory: b.pinned_memory(),
        size_bytes: a.size,
        step_bytes: a.step,
        span_bytes: span,
        iterations: a.iterations,
        read: spread(&points, Dir::Read, a.size, &rel_r),
        write: spread(&points, Dir::Write, a.size, &rel_w),
        points,
    })
}

impl Outcome for SweepOutcome {
    fn name(&self) -> &'static str {
        "sweep"
    }

    fn sections(&self) -> Vec<Section> {
        let mut t = Table::new(&[
            "card address",
            "read p50 µs",
            "read min–max µs",
            "read mean µs",
            "write p50 µs",
            "write min–max µs",
            "write mean µs",
        ]);
        for p in &self.points {
            t.row(vec![
                fmt_addr(p.card_addr),
                us(p.read_robust.p50),
                format!("{}–{}", us(p.read.min_us), us(p.read.max_us)),
                us(p.read.mean_us),
                us(p.write_robust.p50),
                format!("{}–{}", us(p.write.min_us), us(p.write.max_us)),
                us(p.write.mean_us),
            ]);
        }
        let per_addr = Section::new(
            format!(
                "{} transfers at {} card addresses, {} apart, 0 – {}",
                fmt_size(self.size_bytes),
                self.points.len(),
                fmt_size(self.step_bytes),
                fmt_size(self.span_bytes)
            ),
            t,
        )
        .note(format!("memory: {}", self.memory.note))
        .note(format!(
            "{} timed transfers per address and direction",
            self.iterations
        ));
        let mut s = Table::new(&[
            "dir",
            "median µs",
            "lowest µs (at)",
            "highest µs (at)",
            "noise p10–p90",
            "hot spot",
            "std dev of medians µs",
            "std dev of means µs",
            "GB/s",
        ]);
        for (dir, sp) in [(Dir::Read, &self.read), (Dir::Write, &self.write)] {
            let noisy = sp.noise.verdict == Verdict::Noisy;
            s.row(vec![
                dir.as_str().into(),
                us(sp.median_us),
                format!("{} ({} MiB)", us(sp.min_us), sp.min_addr / MIB),
                format!("{} ({} MiB)", us(sp.max_us), sp.max_addr / MIB),
                format!(
                    "±{:.0} % ({})",
                    sp.noise.spread * 50.0,
                    sp.noise.verdict.as_str()
                ),
                match (noisy, sp.hot_spot) {
                    (true, _) => "not judged".into(),
                    (false, Some(a)) => format!("{} MiB", a / MIB),
                    (false, None) => "none".into(),
                },
                if noisy {
                    Verdict::Noisy.as_str().into()
                } else {
                    us(sp.median_std_us)
                },
                if noisy { "—".into() } else { us(sp.std_us) },
                format!("{:.2}", sp.gbps),
            ]);
        }
        let summary = Section::new("how the card addresses compare", s)
            .note("median, lowest, highest: of the per-address medians")
            .note(
                "noise: each transfer against its own address's median, pooled over the \
                 addresses (half the p10–p90 width); too wide, and neither the hot spot \
                 nor the standard deviation is given",
            )
            .note(
                "hot spot: the slowest address, named only when its median's 95 % \
                 interval lies wholly above every other address's",
            )
            .note(
                "std dev (population) of the per-address medians, the figure to read; of \
                 the means, the reference report's figure, which one slow transfer can inflate",
            );
        vec![per_addr, summary]
    }

    fn plots(&self) -> Vec<Plot> {
        let series = |dir: Dir| Series {
            name: format!("{} median", dir.as_str()),
            points: self
                .points
                .iter()
                .map(|p| (p.card_addr as f64 / MIB as f64, p.of(dir).1.p50))
                .collect(),
        };
        vec![Plot {
            file: "sweep-latency.svg".into(),
            title: format!("{} latency vs card address", fmt_size(self.size_bytes)),
            x_label: "card address, MiB".into(),
            y_label: "median latency, µs".into(),
            x_log: false,
            y_log: false,
            series: vec![series(Dir::Read), series(Dir::Write)],
        }]
    }

    fn compare(&self, reference: &RefData, cmp: &mut Compare) {
        if self.memory.path != "C" {
            cmp.note(format!(
                "sweep not compared: the reference report's sweep is GPU Direct (path C), ours ran on {}",
                self.memory.note
            ));
            return;
        }
        if self.size_bytes != 4 * MIB {
            cmp.note("sweep not compared: the reference report swept 4 MiB transfers");
            return;
        }
        if self.read.noise.verdict == Verdict::Noisy || self.write.noise.verdict == Verdict::Noisy {
            cmp.note(format!("sweep not compared: {}", Verdict::Noisy.as_str()));
            return;
        }
        // The reference report gives one standard deviation for its GPU Direct sweep (of means, as
        // its tables are), and the sweep's means in its soak table (C, 4 MiB over
        // 0–2 GiB).
        cmp.row(
            "C read std dev over addresses",
            "µs",
            Some(self.read.std_us),
            reference.soak.sweep_std_us,
        );
        for (dir, sp) in [(Dir::Read, &self.read), (Dir::Write, &self.write)] {
            cmp.row(
                format!("C {} 4 MiB mean over addresses", dir.as_str()),
                "µs",
                Some(sp.mean_us),
                dir.pick(reference.soak.mean_us[2]),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::GIB;

    #[test]
    fn the_reference_sweep_has_32_points() {
        let a = addresses(2 * GIB, 64 * MIB, 4 * MIB);
        assert_eq!(a.len(), 32);
        assert_eq!(*a.last().unwrap(), 1984 * MIB);
        assert!(addresses(MIB, 64 * MIB, 4 * MIB).is_empty());
    }

    fn robust(v: &[f64]) -> Robust {
        Robust::of(v).unwrap()
    }

    #[test]
    fn a_hot_spot_is_named_only_when_its_interval_clears_every_other() {
        let even = robust(&[100.0, 101.0, 99.0, 100.0, 102.0]);
        let also = robust(&[100.0, 98.0, 101.0, 100.0, 99.0]);
        let hot = robust(&[130.0, 131.0, 129.0, 132.0, 130.0]);
        assert_eq!(hot_spot(&[(0, &even), (64, &hot), (128, &also)]), Some(64));
        // One slow transfer elsewhere reaches into the slow address's interval.
        let outlier = robust(&[100.0, 140.0, 99.0, 101.0, 100.0]);
        assert_eq!(hot_spot(&[(0, &outlier), (64, &hot), (128, &also)]), None);
        // A median a little above the rest, within everyone's noise: no hot spot.
        let close = robust(&[101.0, 103.0, 100.0, 102.0, 104.0]);
        assert_eq!(hot_spot(&[(0, &even), (64, &close), (128, &also)]), None);
        assert_eq!(hot_spot(&[(0, &even)]), None, "one address is no hot spot");
    }

    #[test]
    fn noise_is_measured_within_each_address() {
        // Two addresses 30 % apart, each steady: the pooled noise stays small.
        let mut rel = relative_to_median(&[100.0, 101.0, 99.0, 100.0, 100.0]);
        rel.extend(relative_to_median(&[130.0, 131.0, 129.0, 130.0, 130.0]));
        let r = robust(&rel);
        assert!(r.spread < 0.05, "{r:?}");
        assert_eq!(r.verdict, Verdict::Steady);
        // A fifth of the transfers slowed 4x by a busy machine: noisy.
        let mut rel = Vec::new();
        for _ in 0..4 {
            rel.extend(relative_to_median(&[100.0, 100.0, 400.0, 101.0, 99.0]));
        }
        assert_eq!(robust(&rel).verdict, Verdict::Noisy);
    }
}
