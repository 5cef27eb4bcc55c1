//! `sweep`: the card-address sweep (seed §4.4 / §4.5.5 "address-space consistency"):
//! transfers of `--size` at card addresses 0, 64 MiB, … up to the end of the card's
//! 2 GiB, read and write, `--iterations` at each; the mean per address and the standard
//! deviation of those means show whether the FPGA's DDR is equally fast everywhere.
//!
//! Buffers are pinned frame memory: GPU memory (path C) with a GPU, pinned host memory
//! without one (stated in the report).

use crate::bench::{Bench, Dir, PinnedMemory, time_read, time_write};
use crate::error::{BenchError, Result};
use crate::plot::{Plot, Series};
use crate::report::{Outcome, Section, Table};
use crate::seed::{Compare, SeedData};
use crate::stats::{Summary, mean};
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
}

/// Spread of the per-address means in one direction.
#[derive(Debug, serde::Serialize)]
pub(crate) struct Spread {
    /// Mean of the per-address means, µs.
    pub(crate) mean_us: f64,
    /// Population standard deviation of the per-address means, µs.
    pub(crate) std_us: f64,
    /// Lowest per-address mean, µs.
    pub(crate) min_us: f64,
    /// Highest per-address mean, µs.
    pub(crate) max_us: f64,
    /// Address of the lowest mean.
    pub(crate) min_addr: u64,
    /// Address of the highest mean.
    pub(crate) max_addr: u64,
    /// Transfer size ÷ mean, GB/s.
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
    /// Spread of read means.
    pub(crate) read: Spread,
    /// Spread of write means.
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

fn spread(points: &[Point], dir: Dir, size: u64) -> Spread {
    let means: Vec<(u64, f64)> = points
        .iter()
        .map(|p| {
            let s = match dir {
                Dir::Read => &p.read,
                Dir::Write => &p.write,
            };
            (p.card_addr, s.mean_us)
        })
        .collect();
    let vals: Vec<f64> = means.iter().map(|m| m.1).collect();
    let s = Summary::of(&vals).expect("at least one address");
    let min = means
        .iter()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("one");
    let max = means
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .expect("one");
    Spread {
        mean_us: mean(&vals).unwrap_or(0.0),
        std_us: s.std_us,
        min_us: min.1,
        max_us: max.1,
        min_addr: min.0,
        max_addr: max.0,
        gbps: crate::stats::gbps(size, s.mean_us),
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
    let mut progress = crate::progress::Progress::new("sweep", addrs.len() as u64);
    for &addr in &addrs {
        if crate::progress::interrupted() {
            // Ctrl-C: the points measured so far are the result.
            break;
        }
        progress.inc(1);
        let n = a.iterations as usize;
        let w: Vec<f64> = (0..n)
            .map(|_| time_write(b, &buf, addr, a.size))
            .collect::<Result<_>>()?;
        let r: Vec<f64> = (0..n)
            .map(|_| time_read(b, &buf, addr, a.size))
            .collect::<Result<_>>()?;
        points.push(Point {
            card_addr: addr,
            read: Summary::of(&r).expect("n ≥ 1"),
            write: Summary::of(&w).expect("n ≥ 1"),
        });
    }
    Ok(SweepOutcome {
        memory: b.pinned_memory(),
        size_bytes: a.size,
        step_bytes: a.step,
        span_bytes: span,
        iterations: a.iterations,
        read: spread(&points, Dir::Read, a.size),
        write: spread(&points, Dir::Write, a.size),
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
            "read mean µs",
            "read min µs",
            "read max µs",
            "write mean µs",
            "write min µs",
            "write max µs",
        ]);
        for p in &self.points {
            t.row(vec![
                fmt_addr(p.card_addr),
                us(p.read.mean_us),
                us(p.read.min_us),
                us(p.read.max_us),
                us(p.write.mean_us),
                us(p.write.min_us),
                us(p.write.max_us),
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
            "mean µs",
            "std dev µs",
            "lowest µs (at)",
            "highest µs (at)",
            "GB/s",
        ]);
        for (dir, sp) in [(Dir::Read, &self.read), (Dir::Write, &self.write)] {
            s.row(vec![
                dir.as_str().into(),
                us(sp.mean_us),
                us(sp.std_us),
                format!("{} ({} MiB)", us(sp.min_us), sp.min_addr / MIB),
                format!("{} ({} MiB)", us(sp.max_us), sp.max_addr / MIB),
                format!("{:.2}", sp.gbps),
            ]);
        }
        let summary = Section::new("spread of the per-address means", s)
            .note("std dev = population standard deviation of the per-address mean latencies");
        vec![per_addr, summary]
    }

    fn plots(&self) -> Vec<Plot> {
        let series = |dir: Dir| Series {
            name: format!("{} mean", dir.as_str()),
            points: self
                .points
                .iter()
                .map(|p| {
                    let s = match dir {
                        Dir::Read => &p.read,
                        Dir::Write => &p.write,
                    };
                    (p.card_addr as f64 / MIB as f64, s.mean_us)
                })
                .collect(),
        };
        vec![Plot {
            file: "sweep-latency.svg".into(),
            title: format!("{} latency vs card address", fmt_size(self.size_bytes)),
            x_label: "card address, MiB".into(),
            y_label: "mean latency, µs".into(),
            x_log: false,
            y_log: false,
            series: vec![series(Dir::Read), series(Dir::Write)],
        }]
    }

    fn compare(&self, seed: &SeedData, cmp: &mut Compare) {
        if self.memory.path != "C" {
            cmp.note(format!(
                "sweep not compared: the seed's sweep is GPU Direct (path C), ours ran on {}",
                self.memory.note
            ));
            return;
        }
        if self.size_bytes != 4 * MIB {
            cmp.note("sweep not compared: the seed swept 4 MiB transfers");
            return;
        }
        // The seed gives one standard deviation for its GPU Direct sweep, and the
        // sweep's means in its soak table (C, 4 MiB over 0–2 GiB).
        cmp.row(
            "C read std dev over addresses",
            "µs",
            Some(self.read.std_us),
            seed.soak.sweep_std_us,
        );
        for (dir, sp) in [(Dir::Read, &self.read), (Dir::Write, &self.write)] {
            cmp.row(
                format!("C {} 4 MiB mean over addresses", dir.as_str()),
                "µs",
                Some(sp.mean_us),
                dir.pick(seed.soak.mean_us[2]),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::GIB;

    #[test]
    fn the_seeds_sweep_has_32_points() {
        let a = addresses(2 * GIB, 64 * MIB, 4 * MIB);
        assert_eq!(a.len(), 32);
        assert_eq!(*a.last().unwrap(), 1984 * MIB);
        assert!(addresses(MIB, 64 * MIB, 4 * MIB).is_empty());
    }
}
