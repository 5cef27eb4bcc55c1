//! `compat`: the legacy TransferMode routes at the reference report's sizes (§4.2, §4.5.3):
//! CPU mode against GPU_PINNED mode, write and read, with the speed-up.
//!
//! What runs: in `TransferMode::Cpu` the library's `mm_read_c2h` / `mm_write_h2c` call
//! `read_c2h_to_host` / `write_h2c_from_host` on the caller's host memory, which is what
//! the CPU column times (path A). In `TransferMode::GpuPinned` they look the address up
//! among registered pinned buffers and call `read_c2h_at` / `write_h2c_at` on the one
//! that holds it, which is what the GPU_PINNED column times on a buffer pinned once
//! (path C; needs a GPU). The `mm_*` entry points themselves are `unsafe fn` (because of
//! their CPU mode) and this tool holds no `unsafe`, so it times the routes they take;
//! the registry lookup they add is about 15 ns (docs/benchmarks.md §1).

use crate::bench::{Bench, Dir, Measured, PathKind, cell_of, measure_interleaved};
use crate::error::Result;
use crate::plot::{Plot, Series};
use crate::reference::{Compare, RefData};
use crate::report::{Outcome, Section, Table};
use crate::sizes::fig;
use crate::stats::{PairedRatio, paired_cell};
use crate::units::{SizeList, fmt_size, size_list, us};

/// Arguments of `compat`.
#[derive(Debug, clap::Args)]
pub(crate) struct CompatArgs {
    /// Transfer sizes, comma-separated (the reference report's TransferMode table by default).
    #[arg(long, default_value = "4K,64K,256K,1M,4M,8M", value_parser = size_list)]
    pub(crate) sizes: SizeList,
    /// Timed transfers per cell.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) iterations: u32,
    /// Untimed transfers before each cell.
    #[arg(long, default_value_t = 2)]
    pub(crate) warmup: u32,
}

/// The two legacy modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Mode {
    /// `TransferMode::Cpu`: host memory (path A).
    Cpu,
    /// `TransferMode::GpuPinned`: a registered pinned GPU buffer (path C).
    GpuPinned,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Mode::Cpu => "CPU",
            Mode::GpuPinned => "GPU_PINNED",
        }
    }
}

/// One (size, mode, direction) cell.
#[derive(Debug, serde::Serialize)]
pub(crate) struct CompatCell {
    /// Transfer size, bytes.
    pub(crate) size_bytes: u64,
    /// Mode.
    pub(crate) mode: Mode,
    /// Direction.
    pub(crate) dir: Dir,
    /// The figures.
    #[serde(flatten)]
    pub(crate) measured: Measured,
}

/// Speed-up of GPU_PINNED over CPU at one size and direction.
#[derive(Debug, serde::Serialize)]
pub(crate) struct CompatSpeedup {
    /// Transfer size, bytes.
    pub(crate) size_bytes: u64,
    /// Direction.
    pub(crate) dir: Dir,
    /// mean(CPU) / mean(GPU_PINNED), the reference report's rule; `None` when GPU_PINNED is not
    /// available.
    pub(crate) speedup: Option<f64>,
    /// CPU_i / GPU_PINNED_i over the interleaved rounds: median, 95 % interval, verdict.
    pub(crate) paired: Option<PairedRatio>,
}

/// The result of `compat`.
#[derive(Debug, serde::Serialize)]
pub(crate) struct CompatOutcome {
    /// Timed transfers per cell.
    pub(crate) iterations: u32,
    /// The sizes, bytes.
    pub(crate) sizes: Vec<u64>,
    /// Every cell.
    pub(crate) cells: Vec<CompatCell>,
    /// Speed-ups.
    pub(crate) speedups: Vec<CompatSpeedup>,
}

/// Runs `compat`.
pub(crate) fn run(b: &Bench, a: &CompatArgs) -> Result<CompatOutcome> {
    let sizes = a.sizes.0.clone();
    let max = sizes.iter().copied().max().unwrap_or(4096);
    const MODES: [(Mode, PathKind); 2] = [(Mode::Cpu, PathKind::A), (Mode::GpuPinned, PathKind::C)];
    let mut runners = Vec::new();
    for (_, p) in MODES {
        runners.push(match b.availability(p) {
            Ok(()) => Ok(b.runner(p, max)?),
            Err(why) => Err(why),
        });
    }
    let mut cells = Vec::new();
    let mut speedups = Vec::new();
    let mut progress = crate::progress::Progress::new("compat", (sizes.len() * 2) as u64);
    for &size in &sizes {
        // The reference report's tables put Write before Read.
        let mut by_dir = Vec::new();
        for dir in [Dir::Write, Dir::Read] {
            progress.inc(1);
            let samples = if crate::progress::interrupted() {
                vec![Vec::new(); runners.len()]
            } else {
                let (w, n) = (a.warmup as usize, a.iterations as usize);
                measure_interleaved(&mut runners, dir, 0, size, w, n)?
            };
            let (speedup, paired) = crate::stats::speedup(&samples[0], &samples[1]);
            speedups.push(CompatSpeedup {
                size_bytes: size,
                dir,
                speedup,
                paired,
            });
            by_dir.push((dir, samples));
        }
        for (i, (mode, _)) in MODES.into_iter().enumerate() {
            for (dir, samples) in by_dir.iter_mut() {
                cells.push(CompatCell {
                    size_bytes: size,
                    mode,
                    dir: *dir,
                    measured: cell_of(&runners[i], size, std::mem::take(&mut samples[i])),
                });
            }
        }
    }
    Ok(CompatOutcome {
        iterations: a.iterations,
        sizes,
        cells,
        speedups,
    })
}

impl CompatOutcome {
    fn mean(&self, size: u64, mode: Mode, dir: Dir) -> Option<f64> {
        self.cells
            .iter()
            .find(|c| c.size_bytes == size && c.mode == mode && c.dir == dir)
            .and_then(|c| c.measured.mean())
    }

    fn paired(&self, size: u64, dir: Dir) -> Option<&PairedRatio> {
        self.speedups
            .iter()
            .find(|s| s.size_bytes == size && s.dir == dir)
            .and_then(|s| s.paired.as_ref())
    }
}

impl Outcome for CompatOutcome {
    fn name(&self) -> &'static str {
        "compat"
    }

    fn sections(&self) -> Vec<Section> {
        let mut t = Table::new(&[
            "size",
            "CPU write µs",
            "CPU read µs",
            "GPU_PINNED write µs",
            "GPU_PINNED read µs",
            "speed-up write",
            "speed-up read",
        ]);
        for &s in &self.sizes {
            t.row(vec![
                fmt_size(s),
                fig(self.mean(s, Mode::Cpu, Dir::Write), us),
                fig(self.mean(s, Mode::Cpu, Dir::Read), us),
                fig(self.mean(s, Mode::GpuPinned, Dir::Write), us),
                fig(self.mean(s, Mode::GpuPinned, Dir::Read), us),
                paired_cell(self.paired(s, Dir::Write)),
                paired_cell(self.paired(s, Dir::Read)),
            ]);
        }
        let mut sec = Section::new("TransferMode: CPU mode vs GPU_PINNED mode (mean latency)", t)
            .note(format!(
                "{} rounds of one timed transfer per mode, interleaved (CPU, GPU_PINNED, then the other way round); speed-up = median over the rounds of CPU_i / GPU_PINNED_i with its 95 % interval, or the noisy verdict; the ratio of the means (the reference report's rule) is in the JSON",
                self.iterations
            ))
            .note("CPU = the route of mm_* in TransferMode::Cpu (read_c2h_to_host / write_h2c_from_host, path A); GPU_PINNED = the route in TransferMode::GpuPinned (read_c2h_at / write_h2c_at on a pinned GPU buffer, path C)");
        if let Some(r) = self
            .cells
            .iter()
            .find(|c| c.mode == Mode::GpuPinned)
            .and_then(|c| c.measured.reason.clone())
        {
            sec = sec.note(format!("GPU_PINNED: not available — {r}"));
        }
        vec![sec]
    }

    fn plots(&self) -> Vec<Plot> {
        let mut series = Vec::new();
        for mode in [Mode::Cpu, Mode::GpuPinned] {
            for dir in [Dir::Write, Dir::Read] {
                let points: Vec<(f64, f64)> = self
                    .sizes
                    .iter()
                    .filter_map(|&s| self.mean(s, mode, dir).map(|m| (s as f64 / 1024.0, m)))
                    .collect();
                if !points.is_empty() {
                    series.push(Series {
                        name: format!("{} {}", mode.label(), dir.as_str()),
                        points,
                    });
                }
            }
        }
        vec![Plot {
            file: "compat-latency.svg".into(),
            title: "TransferMode: mean latency vs size".into(),
            x_label: "transfer size, KiB (log)".into(),
            y_label: "mean latency, µs (log)".into(),
            x_log: true,
            y_log: true,
            series,
        }]
    }

    fn compare(&self, reference: &RefData, cmp: &mut Compare) {
        for &s in &self.sizes {
            let Some(r) = reference.compat_at(s) else {
                continue;
            };
            for dir in [Dir::Write, Dir::Read] {
                cmp.row(
                    format!("CPU {} {}", dir.as_str(), fmt_size(s)),
                    "µs",
                    self.mean(s, Mode::Cpu, dir),
                    dir.pick(r.cpu),
                );
                cmp.row(
                    format!("GPU_PINNED {} {}", dir.as_str(), fmt_size(s)),
                    "µs",
                    self.mean(s, Mode::GpuPinned, dir),
                    dir.pick(r.gpu),
                );
            }
        }
    }
}
