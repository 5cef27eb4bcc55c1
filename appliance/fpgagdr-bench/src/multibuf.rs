//! `multibuf`: a ring of N pinned buffers against one buffer (seed §4.3, §4.5.4), as an
//! image-capture loop: every iteration reads one frame (C2H) from the same card address,
//! into ring entry `i mod N` or into the single buffer.
//!
//! Frames/s = 10^6 / mean latency (µs); ratio = ring frames/s ÷ single frames/s (the
//! seed's "0.98x": 491.9 µs / 501.7 µs), computed from the same two runs.

use crate::bench::{Bench, Measured, PinnedMemory, time_read};
use crate::error::Result;
use crate::plot::{Plot, Series};
use crate::report::{Outcome, Section, Table};
use crate::seed::{Compare, MultibufColumn, SeedData};
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
    /// 10^6 / mean latency, frames/s.
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
    /// Timed frames per run.
    pub(crate) iterations: u32,
    /// The ring.
    pub(crate) multi: Run,
    /// One buffer.
    pub(crate) single: Run,
    /// multi.fps / single.fps.
    pub(crate) ratio: f64,
}

fn run_ring(b: &Bench, a: &MultibufArgs, n: u32) -> Result<Run> {
    let ring = (0..n)
        .map(|_| b.pin_frame_memory(a.frame))
        .collect::<Result<Vec<_>>>()?;
    for i in 0..a.warmup as usize {
        time_read(b, &ring[i % ring.len()], a.card_addr, a.frame)?;
    }
    let samples = (0..a.iterations as usize)
        .map(|i| time_read(b, &ring[i % ring.len()], a.card_addr, a.frame))
        .collect::<Result<Vec<f64>>>()?;
    let measured = Measured::from_samples(a.frame, samples);
    let fps = measured.mean().map_or(0.0, |m| 1e6 / m);
    Ok(Run {
        buffers: n,
        measured,
        fps,
    })
}

/// Runs `multibuf`: the ring first, then the single buffer (the seed's order).
pub(crate) fn run(b: &Bench, a: &MultibufArgs) -> Result<MultibufOutcome> {
    let multi = run_ring(b, a, a.buffers)?;
    let single = run_ring(b, a, 1)?;
    let ratio = multi.fps / single.fps;
    Ok(MultibufOutcome {
        memory: b.pinned_memory(),
        frame_bytes: a.frame,
        card_addr: a.card_addr,
        iterations: a.iterations,
        multi,
        single,
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
        let rows: [(&str, RowFn); 6] = [
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
            format!("{:.4}x", self.ratio),
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
                "card address {}; GB/s = bytes / mean latency; frames/s = 10^6 / mean µs",
                fmt_addr(self.card_addr)
            )),
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

    fn compare(&self, seed: &SeedData, cmp: &mut Compare) {
        if self.memory.path != "C" {
            cmp.note(format!(
                "multibuf not compared: the seed's figures are GPU buffers, ours ran on {}",
                self.memory.note
            ));
            return;
        }
        if self.frame_bytes != MIB || self.multi.buffers != 4 {
            cmp.note("multibuf not compared: the seed measured 4 buffers of 1 MiB");
            return;
        }
        let s = &seed.multibuf;
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
        cmp.row("ring ÷ single frames/s", "x", Some(self.ratio), s.ratio);
    }
}
