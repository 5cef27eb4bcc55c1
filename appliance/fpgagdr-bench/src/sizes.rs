//! `sizes`: latency and bandwidth of paths A, B and C at several transfer sizes, read and
//! write, and the speed-up of C over A and over B (reference report §4.1, §4.5.2).
//!
//! For each size and direction the three paths are measured interleaved
//! ([`measure_interleaved`]): `--warmup` untimed transfers each, then `--iterations` rounds
//! of one timed transfer per path (A B C, C B A, …) at the same card address. GB/s = bytes
//! / mean latency (the reference report's rule). The speed-up of C is the median of the
//! per-round ratios A_i / C_i (and B_i / C_i) with its 95 % interval, or the noisy verdict
//! ([`PairedRatio`]); the ratio of the cells' means, the reference report's rule, is kept
//! beside it.

use crate::bench::{Bench, Dir, Measured, PathKind, cell_of, measure_interleaved};
use crate::error::Result;
use crate::plot::{Plot, Series};
use crate::reference::{Compare, RefData};
use crate::report::{Outcome, Section, Table};
use crate::stats::{PairedRatio, paired_cell, speedup};
use crate::units::{SizeList, fmt_addr, fmt_size, parse_addr, size_list, us};

/// Arguments of `sizes`.
#[derive(Debug, clap::Args)]
pub(crate) struct SizesArgs {
    /// Transfer sizes, comma-separated; K, M, G are KiB, MiB, GiB.
    #[arg(long, default_value = "4K,64K,512K,1M,4M,8M", value_parser = size_list)]
    pub(crate) sizes: SizeList,
    /// Timed transfers per cell.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) iterations: u32,
    /// Untimed transfers before each cell.
    #[arg(long, default_value_t = 2)]
    pub(crate) warmup: u32,
    /// Card address of every transfer (`0x…` or a size such as 64M).
    #[arg(long, default_value = "0", value_parser = parse_addr)]
    pub(crate) card_addr: u64,
}

/// One path's availability here.
#[derive(Debug, serde::Serialize)]
pub(crate) struct PathInfo {
    /// The path.
    pub(crate) path: PathKind,
    /// What it does.
    pub(crate) description: &'static str,
    /// Whether it ran.
    pub(crate) available: bool,
    /// Why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
}

/// One (size, path, direction) cell.
#[derive(Debug, serde::Serialize)]
pub(crate) struct Cell {
    /// Transfer size, bytes.
    pub(crate) size_bytes: u64,
    /// Path.
    pub(crate) path: PathKind,
    /// Direction.
    pub(crate) dir: Dir,
    /// The figures.
    #[serde(flatten)]
    pub(crate) measured: Measured,
    /// GB/s as a percentage of the link's payload limit in this direction
    /// (`docs/bench.md`); `None` when the link is not reported.
    pub(crate) link_share_pct: Option<f64>,
}

/// Speed-ups at one size and direction (`None` where a path is not available).
#[derive(Debug, serde::Serialize)]
pub(crate) struct Speedup {
    /// Transfer size, bytes.
    pub(crate) size_bytes: u64,
    /// Direction.
    pub(crate) dir: Dir,
    /// mean(A) / mean(C), the reference report's rule.
    pub(crate) c_over_a: Option<f64>,
    /// mean(B) / mean(C), the reference report's rule.
    pub(crate) c_over_b: Option<f64>,
    /// A_i / C_i over the interleaved rounds: median, 95 % interval, verdict.
    pub(crate) c_over_a_paired: Option<PairedRatio>,
    /// B_i / C_i over the interleaved rounds.
    pub(crate) c_over_b_paired: Option<PairedRatio>,
}

impl Speedup {
    /// From the samples of paths A, B and C (in [`PathKind::ALL`]'s order) of one size
    /// and direction.
    fn of(size_bytes: u64, dir: Dir, samples: &[Vec<f64>]) -> Speedup {
        let (a, b, c) = (&samples[0], &samples[1], &samples[2]);
        let (c_over_a, c_over_a_paired) = speedup(a, c);
        let (c_over_b, c_over_b_paired) = speedup(b, c);
        Speedup {
            size_bytes,
            dir,
            c_over_a,
            c_over_b,
            c_over_a_paired,
            c_over_b_paired,
        }
    }
}

/// The result of `sizes`.
#[derive(Debug, serde::Serialize)]
pub(crate) struct SizesOutcome {
    /// Timed transfers per cell.
    pub(crate) iterations: u32,
    /// Untimed transfers before each cell.
    pub(crate) warmup: u32,
    /// Card address of every transfer.
    pub(crate) card_addr: u64,
    /// The sizes, bytes.
    pub(crate) sizes: Vec<u64>,
    /// Which paths ran.
    pub(crate) paths: Vec<PathInfo>,
    /// Every cell, size-major, then path, then direction.
    pub(crate) cells: Vec<Cell>,
    /// Speed-ups per size and direction.
    pub(crate) speedups: Vec<Speedup>,
}

/// Runs `sizes`.
pub(crate) fn run(b: &Bench, a: &SizesArgs) -> Result<SizesOutcome> {
    let sizes = a.sizes.0.clone();
    let max = sizes.iter().copied().max().unwrap_or(4096);
    let (warmup, iterations) = (a.warmup as usize, a.iterations as usize);
    let mut runners = Vec::new();
    let mut paths = Vec::new();
    for p in PathKind::ALL {
        let avail = b.availability(p);
        paths.push(PathInfo {
            path: p,
            description: p.describe(),
            available: avail.is_ok(),
            reason: avail.clone().err(),
        });
        runners.push(match avail {
            Ok(()) => Ok(b.runner(p, max)?),
            Err(why) => Err(why),
        });
    }
    let mut cells = Vec::new();
    let mut speedups = Vec::new();
    let total = (sizes.len() * Dir::BOTH.len()) as u64;
    let mut progress = crate::progress::Progress::new("sizes", total);
    for &size in &sizes {
        let mut by_dir = Vec::new();
        for dir in Dir::BOTH {
            progress.message(format!(
                "{} {}, paths A B C interleaved",
                fmt_size(size),
                dir.as_str()
            ));
            let samples = if crate::progress::interrupted() {
                vec![Vec::new(); runners.len()]
            } else {
                measure_interleaved(&mut runners, dir, a.card_addr, size, warmup, iterations)?
            };
            progress.inc(1);
            speedups.push(Speedup::of(size, dir, &samples));
            by_dir.push((dir, samples));
        }
        // Cells size-major, then path, then direction.
        for (i, p) in PathKind::ALL.into_iter().enumerate() {
            for (dir, samples) in by_dir.iter_mut() {
                let measured = cell_of(&runners[i], size, std::mem::take(&mut samples[i]));
                let link_share_pct = measured
                    .gbps
                    .and_then(|g| b.target.pcie.share_pct(tlp_of(*dir), g));
                cells.push(Cell {
                    size_bytes: size,
                    path: p,
                    dir: *dir,
                    measured,
                    link_share_pct,
                });
            }
        }
    }
    Ok(SizesOutcome {
        iterations: a.iterations,
        warmup: a.warmup,
        card_addr: a.card_addr,
        sizes,
        paths,
        cells,
        speedups,
    })
}

impl SizesOutcome {
    fn cell(&self, size: u64, p: PathKind, dir: Dir) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.size_bytes == size && c.path == p && c.dir == dir)
    }
}

/// The TLPs a direction's payload rides in: C2H (read) as the card's Memory Writes, H2C
/// (write) as the root's Completions to the card's reads.
fn tlp_of(dir: Dir) -> crate::link::Tlp {
    match dir {
        Dir::Read => crate::link::Tlp::Write,
        Dir::Write => crate::link::Tlp::Completion,
    }
}

/// A figure or `n/a`.
pub(crate) fn fig(v: Option<f64>, f: fn(f64) -> String) -> String {
    v.map_or_else(|| "n/a".to_string(), f)
}

/// GB/s with two decimals.
pub(crate) fn gb(v: f64) -> String {
    format!("{v:.2}")
}

impl Outcome for SizesOutcome {
    fn name(&self) -> &'static str {
        "sizes"
    }

    fn sections(&self) -> Vec<Section> {
        let mut t = Table::new(&[
            "size", "path", "dir", "mean µs", "p50 µs", "min µs", "max µs", "p99 µs", "GB/s",
            "% link", "spread",
        ]);
        for c in &self.cells {
            let l = c.measured.latency;
            t.row(vec![
                fmt_size(c.size_bytes),
                c.path.letter().into(),
                c.dir.as_str().into(),
                fig(l.map(|l| l.mean_us), us),
                fig(l.map(|l| l.p50_us), us),
                fig(l.map(|l| l.min_us), us),
                fig(l.map(|l| l.max_us), us),
                fig(l.map(|l| l.p99_us), us),
                fig(c.measured.gbps, gb),
                fig(c.link_share_pct, |v| format!("{v:.0} %")),
                c.measured.robust.map_or("n/a".into(), |r| match r.verdict {
                    crate::stats::Verdict::Steady => format!("{:.2}", r.spread),
                    crate::stats::Verdict::Noisy => format!("{:.2} NOISY", r.spread),
                    crate::stats::Verdict::TooFew => format!("{:.2} few", r.spread),
                }),
            ]);
        }
        let noisy = self
            .cells
            .iter()
            .filter(|c| {
                c.measured
                    .robust
                    .is_some_and(|r| r.verdict == crate::stats::Verdict::Noisy)
            })
            .count();
        let mut s = Section::new("latency and bandwidth per size and path", t)
            .note(if noisy > 0 {
                format!(
                    "{noisy} cells NOISY (spread (p90 − p10) / p50 > {}): noisy — rerun on an idle machine before quoting them",
                    crate::stats::NOISY_SPREAD
                )
            } else {
                String::new()
            })
            .note(format!(
                "{} timed transfers per cell after {} warm-up, card address {}; GB/s = bytes / mean latency (10^9 B/s)",
                self.iterations,
                self.warmup,
                fmt_addr(self.card_addr)
            ));
        for p in &self.paths {
            s = s.note(match &p.reason {
                None => format!("path {}: {}", p.path.letter(), p.description),
                Some(r) => format!(
                    "path {}: {} — not available: {r}",
                    p.path.letter(),
                    p.description
                ),
            });
        }
        let mut sp = Table::new(&["size", "C/A read", "C/A write", "C/B read", "C/B write"]);
        for &size in &self.sizes {
            let get = |dir: Dir| {
                self.speedups
                    .iter()
                    .find(|x| x.size_bytes == size && x.dir == dir)
            };
            let (r, w) = (get(Dir::Read), get(Dir::Write));
            sp.row(vec![
                fmt_size(size),
                paired_cell(r.and_then(|x| x.c_over_a_paired.as_ref())),
                paired_cell(w.and_then(|x| x.c_over_a_paired.as_ref())),
                paired_cell(r.and_then(|x| x.c_over_b_paired.as_ref())),
                paired_cell(w.and_then(|x| x.c_over_b_paired.as_ref())),
            ]);
        }
        let sp = Section::new("speed-up of C (paired, interleaved transfers)", sp)
            .note("C/A = median over the rounds of A_i / C_i with its 95 % interval, C/B likewise; above 1 means C is faster; noisy — rerun on an idle machine instead of a figure when the pairs spread too wide; n/a where a path is not available")
            .note("the ratio of the cells' means (the reference report's rule) is in the JSON: c_over_a, c_over_b");
        vec![s, sp]
    }

    fn plots(&self) -> Vec<Plot> {
        let mut lat = Vec::new();
        let mut bw = Vec::new();
        for p in PathKind::ALL {
            for dir in Dir::BOTH {
                let cells: Vec<&Cell> = self
                    .cells
                    .iter()
                    .filter(|c| c.path == p && c.dir == dir && c.measured.available)
                    .collect();
                if cells.is_empty() {
                    continue;
                }
                let name = format!("{} {}", p.letter(), dir.as_str());
                let kib = |c: &Cell| c.size_bytes as f64 / 1024.0;
                lat.push(Series {
                    name: name.clone(),
                    points: cells
                        .iter()
                        .filter_map(|c| c.measured.mean().map(|m| (kib(c), m)))
                        .collect(),
                });
                bw.push(Series {
                    name,
                    points: cells
                        .iter()
                        .filter_map(|c| c.measured.gbps.map(|g| (kib(c), g)))
                        .collect(),
                });
            }
        }
        vec![
            Plot {
                file: "sizes-latency.svg".into(),
                title: "Mean latency vs transfer size".into(),
                x_label: "transfer size, KiB (log)".into(),
                y_label: "mean latency, µs (log)".into(),
                x_log: true,
                y_log: true,
                series: lat,
            },
            Plot {
                file: "sizes-bandwidth.svg".into(),
                title: "Bandwidth vs transfer size per path".into(),
                x_label: "transfer size, KiB (log)".into(),
                y_label: "bandwidth, GB/s (bytes / mean latency)".into(),
                x_log: true,
                y_log: false,
                series: bw,
            },
        ]
    }

    fn compare(&self, reference: &RefData, cmp: &mut Compare) {
        for &size in &self.sizes {
            let lat = reference.latency_at(size);
            let bwr = reference.bandwidth_at(size);
            for p in PathKind::ALL {
                for dir in Dir::BOTH {
                    let Some(c) = self.cell(size, p, dir) else {
                        continue;
                    };
                    let name = format!("{} {} {}", p.letter(), dir.as_str(), fmt_size(size));
                    if let Some(r) = lat {
                        let s = match p {
                            PathKind::A => r.a,
                            PathKind::B => r.b,
                            PathKind::C => r.c,
                        };
                        cmp.row(format!("{name} mean"), "µs", c.measured.mean(), dir.pick(s));
                    }
                    if let Some(r) = bwr {
                        let s = match p {
                            PathKind::A => r.a,
                            PathKind::B => r.b,
                            PathKind::C => r.c,
                        };
                        cmp.row(
                            format!("{name} bandwidth"),
                            "GB/s",
                            c.measured.gbps,
                            dir.pick(s),
                        );
                    }
                }
            }
        }
        if self
            .sizes
            .iter()
            .all(|&s| reference.latency_at(s).is_none())
        {
            cmp.note("none of these sizes is in the reference report's tables (4K, 64K, 512K, 1M, 4M, 8M)");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Verdict;

    #[test]
    fn speedups_pair_the_rounds_so_a_spike_on_one_path_does_not_move_them() {
        // C twice as fast as A in every round; round 3 of A slowed 10x by the machine.
        let a: Vec<f64> = (0..20)
            .map(|i| if i == 3 { 2000.0 } else { 200.0 })
            .collect();
        let c = vec![100.0; 20];
        let s = Speedup::of(1 << 20, Dir::Read, &[a, Vec::new(), c]);
        let p = s.c_over_a_paired.expect("pairs");
        assert_eq!((p.median, p.pairs, p.verdict), (2.0, 20, Verdict::Steady));
        // The reference report's ratio of means takes the spike in: (19·200 + 2000) / 2000.
        assert!((s.c_over_a.unwrap() - 2.9).abs() < 1e-9, "{s:?}");
        assert!(
            s.c_over_b.is_none() && s.c_over_b_paired.is_none(),
            "no B samples"
        );
    }

    #[test]
    fn pairs_that_disagree_give_the_noisy_verdict_not_a_ratio() {
        // Every other round C is 3x faster, else as fast: no ratio can be quoted.
        let a: Vec<f64> = (0..20)
            .map(|i| if i % 2 == 0 { 300.0 } else { 100.0 })
            .collect();
        let s = Speedup::of(4096, Dir::Write, &[a, Vec::new(), vec![100.0; 20]]);
        let p = s.c_over_a_paired.expect("pairs");
        assert_eq!(p.verdict, Verdict::Noisy);
        assert!(
            crate::stats::paired_cell(Some(&p)).starts_with("noisy — rerun on an idle machine"),
            "{}",
            crate::stats::paired_cell(Some(&p))
        );
    }
}
