//! `multibuf`: a ring of N pinned buffers against one buffer (reference report §4.3, §4.5.4), as an
//! image-capture loop: every iteration reads one frame (C2H) from the same card address,
//! into ring entry `i mod N` or into the single buffer.
//!
//! The two are interleaved frame by frame (single, ring, single, ring …) so that the
//! machine's other work falls on both alike. Frames/s = 10^6 / median latency (µs);
//! ratio = ring frames/s ÷ single frames/s (the reference report's "0.98x": 491.9 µs / 501.7 µs) as
//! the median of the per-pair ratios with its 95 % interval, or "noisy — rerun on an
//! idle machine" when the interval or either side's spread is too wide.

use crate::bench::{Bench, Measured, PinnedMemory, time_read};
use crate::error::Result;
use crate::plot::{Plot, Series};
use crate::reference::{Compare, MultibufColumn, RefData};
use crate::report::{Outcome, Section, Table};
use crate::sizes::{fig, gb};
use crate::units::{MIB, fmt_addr, fmt_size, parse_addr, parse_size, us};

/// Arguments of `multibuf`.
#[derive(Debug, clap::Args)]
pub(crate) struct MultibufArgs {
    /// Buffers in the ring.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub(crate) buffers: u32,
    /// Frame size (K, M are KiB, MiB).
    #[arg(long, default_value = "1M", value_parser = parse_size)]
    pub(crate) frame: u64,
    /// Timed frames per run.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) iterations: u32,
    /// Untimed frames before each run.
    #[arg(long, default_value_t = 4)]
    pub(crate) warmup: u32,
    /// Card address frames are read from.
    #[arg(long, default_value = "0", value_parser = parse_addr)]
    pub(crate) card_addr: u64,
}

/// Formats one figure of a run.
type RowFn = fn(&Run) -> String;

/// One run (ring or single).
#[derive(Debug, serde::Serialize)]
pub(crate) struct Run {
    /// Buffers used.
    pub(crate) buffers: u32,
    /// Latency statistics and every frame's latency.
    #[serde(flatten)]
    pub(crate) measured: Measured,
    /// Median, spread, interval and verdict of the latencies.
    pub(crate) median: Option<crate::stats::Robust>,
    /// 10^6 / median latency, frames/s.
    pub(crate) fps: f64,
}

/// The result of `multibuf`.
#[derive(Debug, serde::Serialize)]
pub(crate) struct MultibufOutcome {
    /// The memory the buffers are (GPU memory: path C; pinned host memory without GPU).
    pub(crate) memory: PinnedMemory,
    /// Frame size, bytes.
    pub(crate) frame_bytes: u64,
    /// Card address of every frame.
    pub(crate) card_addr: u64,
    /// Timed pairs (one frame into the single buffer, one into the ring).
    pub(crate) iterations: u32,
    /// The ring.
    pub(crate) multi: Run,
    /// One buffer.
    pub(crate) single: Run,
    /// Ring frames/s ÷ single frames/s: the median of the per-pair ratios, its interval
    /// and verdict; `None` when no pair was measured.
    pub(crate) ratio: Option<crate::stats::PairedRatio>,
    /// Ctrl-C ended the run early; the figures are of the pairs measured.
    pub(crate) interrupted: bool,
}

fn run_of(n: u32, frame: u64, samples: Vec<f64>) -> Run {
    let measured = Measured::from_samples(frame, samples);
    let median = crate::stats::Robust::of(&measured.samples_us);
    let fps = median.map_or(0.0, |m| 1e6 / m.p50);
    Run {
        buffers: n,
        measured,
        median,
        fps,
    }
}

/// Runs `multibuf`: the single buffer and the ring interleaved frame by frame (A B A B …),
/// so that whatever else the machine does falls on both alike; the ratio is the median of
/// the per-pair ratios with its 95 % interval.
pub(crate) fn run(b: &Bench, a: &MultibufArgs) -> Result<MultibufOutcome> {
    let ring = (0..a.buffers)
        .map(|_| b.pin_frame_memory(a.frame))
        .collect::<Result<Vec<_>>>()?;
    let single = b.pin_frame_memory(a.frame)?;
    for i in 0..a.warmup as usize {
        time_read(b, &single, a.card_addr, a.frame)?;
        time_read(b, &ring[i % ring.len()], a.card_addr, a.frame)?;
    }
    let mut progress = crate::progress::Progress::new("multibuf", u64::from(a.iterations));
    let (mut s_us, mut r_us) = (Vec::new(), Vec::new());
    for i in 0..a.iterations as usize {
        if crate::progress::interrupted() {
            break;
        }
        s_us.push(time_read(b, &single, a.card_addr, a.frame)?);
        r_us.push(time_read(b, &ring[i % ring.len()], a.card_addr, a.frame)?);
        progress.inc(1);
    }
    progress.finish();
    // ring frames/s ÷ single frames/s per pair = single latency ÷ ring latency
    let ratio = crate::stats::PairedRatio::of(&s_us, &r_us);
    let pairs = s_us.len() as u32;
    Ok(MultibufOutcome {
        memory: b.pinned_memory(),
        frame_bytes: a.frame,
        card_addr: a.card_addr,
        iterations: pairs,
        interrupted: pairs < a.iterations,
        multi: run_of(a.buffers, a.frame, r_us),
        single: run_of(1, a.frame, s_us),
        ratio,
    })
}

impl Outcome for MultibufOutcome {
    fn name(&self) -> &'static str {
        "multibuf"
    }

    fn sections(&self) -> Vec<Section> {
        let mut t = Table::new(&[
            "metric",
            &format!("ring of {}", self.multi.buffers),
            "single buffer",
        ]);
        let rows: [(&str, RowFn); 8] = [
            ("median latency µs", |r| fig(r.median.map(|m| m.p50), us)),
            ("spread (p90 − p10) / p50", |r| {
                r.median.map_or("n/a".into(), |m| {
                    format!("{:.2} ({})", m.spread, m.verdict.as_str())
                })
            }),
            ("mean latency µs", |r| fig(r.measured.mean(), us)),
            ("min latency µs", |r| {
                fig(r.measured.latency.map(|l| l.min_us), us)
            }),
            ("max latency µs", |r| {
                fig(r.measured.latency.map(|l| l.max_us), us)
            }),
            ("p99 latency µs", |r| {
                fig(r.measured.latency.map(|l| l.p99_us), us)
            }),
            ("bandwidth GB/s", |r| fig(r.measured.gbps, gb)),
            ("frames/s", |r| format!("{:.0}", r.fps)),
        ];
        for (name, f) in rows {
            t.row(vec![name.into(), f(&self.multi), f(&self.single)]);
        }
        t.row(vec![
            "ratio (ring ÷ single frames/s)".into(),
            self.ratio.map_or("n/a".into(), |r| r.text()),
            "—".into(),
        ]);
        vec![
            Section::new(
                format!(
                    "{} buffers in rotation vs one buffer, {} frames (C2H), {} iterations",
                    self.multi.buffers,
                    fmt_size(self.frame_bytes),
                    self.iterations
                ),
                t,
            )
            .note(format!("memory: {}", self.memory.note))
            .note(format!(
                "card address {}; single and ring interleaved frame by frame (A B A B …); \
                 GB/s = bytes / mean latency; frames/s = 10^6 / median µs; ratio = median of \
                 the per-pair ratios, 95 % interval from order statistics",
                fmt_addr(self.card_addr)
            ))
            .note(if self.interrupted {
                format!(
                    "interrupted (Ctrl-C) after {} pairs: figures are of those",
                    self.iterations
                )
            } else {
                String::new()
            }),
        ]
    }

    fn plots(&self) -> Vec<Plot> {
        let pts = |r: &Run| {
            r.measured
                .samples_us
                .iter()
                .enumerate()
                .map(|(i, &v)| (i as f64, v))
                .collect()
        };
        vec![Plot {
            file: "multibuf-latency.svg".into(),
            title: "Frame latency per iteration: ring vs single buffer".into(),
            x_label: "iteration".into(),
            y_label: "latency, µs".into(),
            x_log: false,
            y_log: false,
            series: vec![
                Series {
                    name: format!("ring of {}", self.multi.buffers),
                    points: pts(&self.multi),
                },
                Series {
                    name: "single buffer".into(),
                    points: pts(&self.single),
                },
            ],
        }]
    }

    fn compare(&self, reference: &RefData, cmp: &mut Compare) {
        if self.memory.path != "C" {
            cmp.note(format!(
                "multibuf not compared: the reference report's figures are GPU buffers, ours ran on {}",
                self.memory.note
            ));
            return;
        }
        if self.frame_bytes != MIB || self.multi.buffers != 4 {
            cmp.note("multibuf not compared: the reference report measured 4 buffers of 1 MiB");
            return;
        }
        let s = &reference.multibuf;
        let mut add = |label: &str, r: &Run, c: &MultibufColumn| {
            let lat = r.measured.latency;
            cmp.row(
                format!("{label} mean"),
                "µs",
                lat.map(|l| l.mean_us),
                c.mean_us,
            );
            cmp.row(
                format!("{label} min"),
                "µs",
                lat.map(|l| l.min_us),
                c.min_us,
            );
            cmp.row(
                format!("{label} max"),
                "µs",
                lat.map(|l| l.max_us),
                c.max_us,
            );
            cmp.row(
                format!("{label} bandwidth"),
                "GB/s",
                r.measured.gbps,
                c.gbps,
            );
            cmp.row(
                format!("{label} frame rate"),
                "frames/s",
                Some(r.fps),
                c.fps,
            );
        };
        add("ring of 4", &self.multi, &s.multi);
        add("single", &self.single, &s.single);
        let steady = self
            .ratio
            .filter(|r| r.verdict == crate::stats::Verdict::Steady)
            .map(|r| r.median);
        cmp.row("ring ÷ single frames/s", "x", steady, s.ratio);
    }
}
