//! `soak`: the long stability run (reference report §4.4, §4.5.5): one sample every `--every` for
//! `--duration`, each sample `--iterations` transfers of `--size` per available path and
//! direction at the next card address of the 64 MiB-step sweep, plus the board's power
//! from the INA3221 rails when the machine has them.
//!
//! Every sample is one CSV row, written and flushed before the next sample starts, so a
//! run that dies after 11 hours keeps 11 hours of data. The run takes exactly
//! ⌈duration / every⌉ samples, the k-th scheduled at `start + k·every` (a sample that
//! starts late says so in `late_ms`). A transfer error does not end the run: it is
//! counted in the row (`errors`, `error`) and the cell stays empty.
//!
//! While it runs, a progress bar counts the samples with the last sample's figures as its
//! message (hidden off a terminal and with `--json`); the CSV is the per-sample record.
//! Ctrl-C, also during the wait between samples, ends the run and summarises the
//! samples taken (`interrupted` in the JSON, a note in the table).
//!
//! CSV columns (one row per sample; times µs, bandwidth GB/s = size / mean, power W):
//!
//! | column | meaning |
//! |---|---|
//! | `sample` | 0-based sample number |
//! | `t_s` | seconds since the run started when the sample began (monotonic clock) |
//! | `unix_s` | wall-clock time of the sample, UNIX seconds |
//! | `late_ms` | how far behind its schedule the sample started, ms |
//! | `card_addr` | card address of the sample's transfers, bytes |
//! | `size_bytes`, `iterations` | transfer size and transfers per path and direction |
//! | `{a,b,c}_{read,write}_{mean,min,max}_us` | latency of path A/B/C; empty when the path is not available |
//! | `{a,b,c}_{read,write}_gbps` | size / mean latency |
//! | `errors`, `error` | failed transfers in the sample and the first error's message |
//! | `power_board_w` | the board's total by its power tree (`fpgagdr_telemetry::board_total`); empty without INA3221 |
//! | `power_<RAIL>_w` | each INA3221 rail found when the run started (e.g. `power_VDD_IN_w`) |

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use fpgagdr_telemetry::{SourceState, Sysfs};

use crate::bench::{Bench, Dir, PathKind, Runner};
use crate::error::{BenchError, Result};
use crate::plot::{Plot, Series};
use crate::reference::{Compare, RefData};
use crate::report::{Outcome, OutputOptions, Section, Table, create_dir};
use crate::sizes::{PathInfo, fig, gb};
use crate::stats::{Robust, Summary, gbps, mean};
use crate::sweep::addresses;
use crate::units::{MIB, fmt_addr, fmt_duration, fmt_size, parse_duration, parse_size, ratio, us};

/// Arguments of `soak`.
#[derive(Debug, clap::Args)]
pub(crate) struct SoakArgs {
    /// How long to run (`12h`, `2m`, `30s`, `500ms`).
    #[arg(long, default_value = "12h", value_parser = parse_duration)]
    pub(crate) duration: Duration,
    /// Period between samples.
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    pub(crate) every: Duration,
    /// Transfer size.
    #[arg(long, default_value = "4M", value_parser = parse_size)]
    pub(crate) size: u64,
    /// Transfers per path and direction in each sample.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) iterations: u32,
    /// Card-address step between samples (the sweep wraps at the card's end).
    #[arg(long, default_value = "64M", value_parser = parse_size)]
    pub(crate) step: u64,
    /// CSV file (default: DIR/soak.csv with --report, else ./fpgagdr-soak-UNIXTIME.csv).
    #[arg(long)]
    pub(crate) csv: Option<PathBuf>,
    /// Root that the INA3221 sysfs paths are read under (`/`; a fixture tree in tests).
    #[arg(long, default_value = "/")]
    pub(crate) sysfs_root: PathBuf,
}

/// One path and direction in one sample.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct SoakCell {
    /// Path.
    pub(crate) path: PathKind,
    /// Direction.
    pub(crate) dir: Dir,
    /// Mean latency, µs.
    pub(crate) mean_us: f64,
    /// Fastest transfer, µs.
    pub(crate) min_us: f64,
    /// Slowest transfer, µs.
    pub(crate) max_us: f64,
    /// size / mean, GB/s.
    pub(crate) gbps: f64,
}

/// One sample (one CSV row).
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct SoakSample {
    /// 0-based.
    pub(crate) sample: usize,
    /// Seconds since the start when the sample began.
    pub(crate) t_s: f64,
    /// Wall clock, UNIX seconds.
    pub(crate) unix_s: f64,
    /// Behind schedule, ms.
    pub(crate) late_ms: f64,
    /// Card address of the transfers.
    pub(crate) card_addr: u64,
    /// Measured cells.
    pub(crate) cells: Vec<SoakCell>,
    /// Failed transfers.
    pub(crate) errors: u32,
    /// The first failure's message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
    /// Board total power, W.
    pub(crate) power_board_w: Option<f64>,
    /// Power per INA3221 rail, W.
    pub(crate) rails_w: BTreeMap<String, f64>,
}

/// Trend and jitter of one path and direction over the run (statistics of the sample
/// means, as the reference report's tables are).
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Trend {
    /// Path.
    pub(crate) path: PathKind,
    /// Direction.
    pub(crate) dir: Dir,
    /// Samples that measured it.
    pub(crate) samples: usize,
    /// Median of the sample means with p10/p90, their spread, the median's 95 %
    /// interval and the verdict (steady, noisy, too few): the figures to read, which a
    /// few samples taken while the machine was busy do not move.
    pub(crate) robust: Robust,
    /// Mean of the sample means, µs.
    pub(crate) mean_us: f64,
    /// Lowest sample mean, µs.
    pub(crate) min_us: f64,
    /// Highest sample mean, µs.
    pub(crate) max_us: f64,
    /// max − min, µs.
    pub(crate) jitter_us: f64,
    /// ± jitter / (2 · mean), % (the reference report's "相对波动": 258.4 / (2 · 1785.1) = ±7.2 %).
    pub(crate) relative_pct: f64,
    /// size / mean, GB/s.
    pub(crate) gbps: f64,
    /// Mean of the first, middle and last third of the samples, µs.
    pub(crate) thirds_us: [Option<f64>; 3],
    /// (median of the last third − median of the first third) / the first, %; only with
    /// at least 30 samples per third and when the two medians' 95 % intervals do not
    /// overlap (`stats::drift_pct`), else `None` and `drift_note` says why.
    pub(crate) drift_pct: Option<f64>,
    /// Why there is a drift figure or not.
    pub(crate) drift_note: String,
}

/// Power over the run.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct PowerSummary {
    /// What the board total covers (from the power tree).
    pub(crate) covers: String,
    /// Samples with a reading.
    pub(crate) samples: usize,
    /// Mean, W.
    pub(crate) mean_w: f64,
    /// Minimum, W.
    pub(crate) min_w: f64,
    /// Maximum, W.
    pub(crate) max_w: f64,
    /// max − min, W.
    pub(crate) range_w: f64,
    /// Mean of each third, W.
    pub(crate) thirds_w: [Option<f64>; 3],
}

/// Speed-ups over the whole run: mean(A or B) / mean(C).
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct SoakSpeedup {
    /// Direction.
    pub(crate) dir: Dir,
    /// mean(A) / mean(C).
    pub(crate) c_over_a: Option<f64>,
    /// mean(B) / mean(C).
    pub(crate) c_over_b: Option<f64>,
}

/// The result of `soak`.
#[derive(Debug, serde::Serialize)]
pub(crate) struct SoakOutcome {
    /// Requested duration, s.
    pub(crate) duration_s: f64,
    /// Period, s.
    pub(crate) every_s: f64,
    /// Transfer size, bytes.
    pub(crate) size_bytes: u64,
    /// Transfers per path and direction per sample.
    pub(crate) iterations: u32,
    /// Card-address step, bytes.
    pub(crate) step_bytes: u64,
    /// Addresses in one sweep round.
    pub(crate) sweep_points: usize,
    /// Whether Ctrl-C ended the run early: the figures are of the samples taken.
    pub(crate) interrupted: bool,
    /// Which paths ran.
    pub(crate) paths: Vec<PathInfo>,
    /// The CSV file.
    pub(crate) csv: PathBuf,
    /// Its columns, in order.
    pub(crate) csv_columns: Vec<String>,
    /// Every sample.
    pub(crate) samples: Vec<SoakSample>,
    /// Samples that started late.
    pub(crate) late_samples: usize,
    /// Failed transfers over the run.
    pub(crate) errors: u32,
    /// Trend and jitter per path and direction.
    pub(crate) trends: Vec<Trend>,
    /// Speed-ups of C.
    pub(crate) speedups: Vec<SoakSpeedup>,
    /// Power, when the INA3221 rails are there.
    pub(crate) power: Option<PowerSummary>,
    /// Why there is no power, or which source it is.
    pub(crate) power_note: String,
}

fn thirds(v: &[f64]) -> [Option<f64>; 3] {
    let n = v.len();
    [0, 1, 2].map(|j| mean(&v[j * n / 3..(j + 1) * n / 3]))
}

fn csv_err(path: &std::path::Path) -> impl Fn(csv::Error) -> BenchError + '_ {
    move |source| BenchError::Csv {
        path: path.to_path_buf(),
        source,
    }
}

/// Runs `soak`.
pub(crate) fn run(b: &Bench, a: &SoakArgs, opts: &OutputOptions) -> Result<SoakOutcome> {
    let span = b.card_span();
    let addrs = addresses(span, a.step, a.size);
    if addrs.is_empty() {
        return Err(BenchError::Usage(format!(
            "soak: a {} transfer does not fit in the card's {}",
            fmt_size(a.size),
            fmt_size(span)
        )));
    }
    let n_samples = (a.duration.as_secs_f64() / a.every.as_secs_f64())
        .ceil()
        .max(1.0) as usize;
    let csv_path = match (&a.csv, &opts.report) {
        (Some(p), _) => p.clone(),
        (None, Some(dir)) => {
            create_dir(dir)?;
            dir.join("soak.csv")
        }
        (None, None) => PathBuf::from(format!(
            "fpgagdr-soak-{}.csv",
            crate::units::unix_now() as u64
        )),
    };

    let mut paths = Vec::new();
    let mut runners: Vec<(PathKind, Runner<'_>)> = Vec::new();
    for p in PathKind::ALL {
        let avail = b.availability(p);
        paths.push(PathInfo {
            path: p,
            description: p.describe(),
            available: avail.is_ok(),
            reason: avail.clone().err(),
        });
        if avail.is_ok() {
            let mut r = b.runner(p, a.size)?;
            // One untimed transfer per direction: allocation and first-touch costs are
            // not the steady state the soak watches.
            for d in Dir::BOTH {
                r.once(d, addrs[0], a.size)?;
            }
            runners.push((p, r));
        }
    }

    let mut sysfs = Sysfs::new(&a.sysfs_root);
    let first = sysfs.sample();
    let rail_names: Vec<String> = first.rails.iter().map(|r| r.name.clone()).collect();
    let power_note = match (
        &first.board_total,
        first.sources.iter().find(|s| s.name == "ina3221"),
    ) {
        (Some(t), _) => format!("INA3221 board total: {}", t.covers),
        (None, Some(s)) => match &s.state {
            SourceState::Absent(why) | SourceState::Error(why) => {
                format!("no INA3221 power: {why}")
            }
            SourceState::Ok => "no INA3221 rails found".into(),
        },
        (None, None) => "no INA3221 power".into(),
    };

    let mut columns: Vec<String> = [
        "sample",
        "t_s",
        "unix_s",
        "late_ms",
        "card_addr",
        "size_bytes",
        "iterations",
    ]
    .map(String::from)
    .to_vec();
    for p in PathKind::ALL {
        for d in Dir::BOTH {
            for m in ["mean_us", "min_us", "max_us", "gbps"] {
                columns.push(format!("{}_{}_{m}", p.lower(), d.as_str()));
            }
        }
    }
    columns.extend(["errors", "error", "power_board_w"].map(String::from));
    columns.extend(rail_names.iter().map(|r| format!("power_{r}_w")));
    // What was measured, on every row so that a row read alone still says it: the card
    // (with its driver: kernel module ABI, or the simulated card), SIMULATED or not, the
    // link, and this tool's version.
    columns.extend(["card", "simulated", "link", "software"].map(String::from));
    let ident = [
        b.target.status.name.clone(),
        if b.target.status.simulated {
            "SIMULATED".to_string()
        } else {
            "no".to_string()
        },
        b.target.pcie.one_line(),
        format!("fpgagdr-bench {}", env!("CARGO_PKG_VERSION")),
    ];

    let mut w = csv::Writer::from_path(&csv_path).map_err(csv_err(&csv_path))?;
    w.write_record(&columns).map_err(csv_err(&csv_path))?;
    w.flush().map_err(|source| BenchError::Io {
        path: csv_path.clone(),
        source,
    })?;
    eprintln!(
        "soak: {n_samples} samples, one every {}, {} × {} per path and direction; CSV {}",
        fmt_duration(a.every),
        a.iterations,
        fmt_size(a.size),
        csv_path.display()
    );

    let start = Instant::now();
    let mut samples = Vec::with_capacity(n_samples);
    let mut progress = crate::progress::Progress::new("soak", n_samples as u64);
    for k in 0..n_samples {
        let scheduled = start + a.every.mul_f64(k as f64);
        // Wait for the sample's time in short slices, so that Ctrl-C during a long
        // `--every` ends the run now rather than after the wait.
        while !crate::progress::interrupted() {
            let now = Instant::now();
            if scheduled <= now {
                break;
            }
            std::thread::sleep((scheduled - now).min(Duration::from_millis(100)));
        }
        if crate::progress::interrupted() {
            eprintln!("soak: interrupted after {k} samples; summarising those");
            break;
        }
        let late_ms = Instant::now()
            .saturating_duration_since(scheduled)
            .as_secs_f64()
            * 1e3;
        let t_s = start.elapsed().as_secs_f64();
        let unix_s = crate::units::unix_now();
        let addr = addrs[k % addrs.len()];
        let mut cells = Vec::new();
        let mut errors = 0;
        let mut error = None;
        for (p, r) in runners.iter_mut() {
            for d in Dir::BOTH {
                let mut v = Vec::new();
                for _ in 0..a.iterations {
                    match r.once(d, addr, a.size) {
                        Ok(x) => v.push(x),
                        Err(e) => {
                            errors += 1;
                            error.get_or_insert_with(|| e.to_string());
                        }
                    }
                }
                if let Some(s) = Summary::of(&v) {
                    cells.push(SoakCell {
                        path: *p,
                        dir: d,
                        mean_us: s.mean_us,
                        min_us: s.min_us,
                        max_us: s.max_us,
                        gbps: s.gbps(a.size),
                    });
                }
            }
        }
        let power = sysfs.sample();
        let sample = SoakSample {
            sample: k,
            t_s,
            unix_s,
            late_ms,
            card_addr: addr,
            cells,
            errors,
            error,
            power_board_w: power.board_total.as_ref().map(|t| t.power_mw / 1e3),
            rails_w: power
                .rails
                .iter()
                .map(|r| (r.name.clone(), r.power_mw / 1e3))
                .collect(),
        };
        w.write_record(
            row(&sample, a, &rail_names)
                .into_iter()
                .chain(ident.clone()),
        )
        .map_err(csv_err(&csv_path))?;
        w.flush().map_err(|source| BenchError::Io {
            path: csv_path.clone(),
            source,
        })?;
        progress.message(last_sample(&sample));
        progress.inc(1);
        samples.push(sample);
    }
    progress.finish();
    drop(w);
    let interrupted = samples.len() < n_samples;
    Ok(summarise(
        a,
        paths,
        csv_path,
        columns,
        samples,
        power_note,
        addrs.len(),
    )
    .with_interrupted(interrupted))
}

fn num(v: Option<f64>) -> String {
    v.map_or_else(String::new, |x| format!("{x:.3}"))
}

fn row(s: &SoakSample, a: &SoakArgs, rails: &[String]) -> Vec<String> {
    let mut r = vec![
        s.sample.to_string(),
        format!("{:.3}", s.t_s),
        format!("{:.3}", s.unix_s),
        format!("{:.3}", s.late_ms),
        s.card_addr.to_string(),
        a.size.to_string(),
        a.iterations.to_string(),
    ];
    for p in PathKind::ALL {
        for d in Dir::BOTH {
            let c = s.cells.iter().find(|c| c.path == p && c.dir == d);
            r.push(num(c.map(|c| c.mean_us)));
            r.push(num(c.map(|c| c.min_us)));
            r.push(num(c.map(|c| c.max_us)));
            r.push(num(c.map(|c| c.gbps)));
        }
    }
    r.push(s.errors.to_string());
    r.push(s.error.clone().unwrap_or_default());
    r.push(num(s.power_board_w));
    for name in rails {
        r.push(num(s.rails_w.get(name).copied()));
    }
    r
}

/// The bar's message: the last sample's figures (the CSV row holds them all).
fn last_sample(s: &SoakSample) -> String {
    let mut line = format!(
        "last at {:.1} s, card address {}:",
        s.t_s,
        fmt_addr(s.card_addr)
    );
    for c in &s.cells {
        line.push_str(&format!(
            " {} {} {:.1} µs",
            c.path.letter(),
            c.dir.as_str(),
            c.mean_us
        ));
    }
    if let Some(p) = s.power_board_w {
        line.push_str(&format!(", board {p:.2} W"));
    }
    if s.errors > 0 {
        line.push_str(&format!(", {} errors", s.errors));
    }
    line
}

fn summarise(
    a: &SoakArgs,
    paths: Vec<PathInfo>,
    csv: PathBuf,
    csv_columns: Vec<String>,
    samples: Vec<SoakSample>,
    power_note: String,
    sweep_points: usize,
) -> SoakOutcome {
    let mut trends = Vec::new();
    for p in PathKind::ALL {
        for d in Dir::BOTH {
            let v: Vec<f64> = samples
                .iter()
                .filter_map(|s| s.cells.iter().find(|c| c.path == p && c.dir == d))
                .map(|c| c.mean_us)
                .collect();
            let (Some(s), Some(robust)) = (Summary::of(&v), Robust::of(&v)) else {
                continue;
            };
            let th = thirds(&v);
            trends.push(Trend {
                path: p,
                dir: d,
                samples: v.len(),
                robust,
                mean_us: s.mean_us,
                min_us: s.min_us,
                max_us: s.max_us,
                jitter_us: s.max_us - s.min_us,
                relative_pct: (s.max_us - s.min_us) / (2.0 * s.mean_us) * 100.0,
                gbps: gbps(a.size, s.mean_us),
                thirds_us: th,
                drift_pct: crate::stats::drift_pct(&v).ok().flatten(),
                drift_note: match crate::stats::drift_pct(&v) {
                    Ok(Some(_)) => "medians of the first and last third differ".into(),
                    Ok(None) => "none: the medians' 95 % intervals overlap".into(),
                    Err(why) => why,
                },
            });
        }
    }
    let t = |p: PathKind, d: Dir| {
        trends
            .iter()
            .find(|t| t.path == p && t.dir == d)
            .map(|t| t.mean_us)
    };
    let speedups = Dir::BOTH
        .map(|d| SoakSpeedup {
            dir: d,
            c_over_a: t(PathKind::C, d).zip(t(PathKind::A, d)).map(|(c, a)| a / c),
            c_over_b: t(PathKind::C, d).zip(t(PathKind::B, d)).map(|(c, b)| b / c),
        })
        .to_vec();
    let pw: Vec<f64> = samples.iter().filter_map(|s| s.power_board_w).collect();
    let power = Summary::of(&pw).map(|s| PowerSummary {
        covers: power_note.clone(),
        samples: pw.len(),
        mean_w: s.mean_us,
        min_w: s.min_us,
        max_w: s.max_us,
        range_w: s.max_us - s.min_us,
        thirds_w: thirds(&pw),
    });
    SoakOutcome {
        duration_s: a.duration.as_secs_f64(),
        every_s: a.every.as_secs_f64(),
        size_bytes: a.size,
        iterations: a.iterations,
        step_bytes: a.step,
        sweep_points,
        paths,
        csv,
        csv_columns,
        late_samples: samples.iter().filter(|s| s.late_ms > 1000.0).count(),
        interrupted: false,
        errors: samples.iter().map(|s| s.errors).sum(),
        samples,
        trends,
        speedups,
        power,
        power_note,
    }
}

impl SoakOutcome {
    /// Marks a run that Ctrl-C ended before its last sample.
    fn with_interrupted(mut self, interrupted: bool) -> SoakOutcome {
        self.interrupted = interrupted;
        self
    }

    /// Time axis unit for plots: hours, minutes or seconds.
    fn time_axis(&self) -> (&'static str, f64) {
        if self.duration_s >= 7200.0 {
            ("h", 3600.0)
        } else if self.duration_s >= 120.0 {
            ("min", 60.0)
        } else {
            ("s", 1.0)
        }
    }
}

impl Outcome for SoakOutcome {
    fn name(&self) -> &'static str {
        "soak"
    }

    fn sections(&self) -> Vec<Section> {
        let mut t = Table::new(&[
            "path",
            "dir",
            "samples",
            "median µs",
            "p10–p90 µs",
            "spread",
            "mean µs",
            "min µs",
            "max µs",
            "jitter µs",
            "± %",
            "GB/s",
            "first third µs",
            "middle third µs",
            "last third µs",
            "drift %",
        ]);
        for tr in &self.trends {
            t.row(vec![
                tr.path.letter().into(),
                tr.dir.as_str().into(),
                tr.samples.to_string(),
                us(tr.robust.p50),
                format!("{}–{}", us(tr.robust.p10), us(tr.robust.p90)),
                format!("{:.2} {}", tr.robust.spread, tr.robust.verdict.as_str()),
                us(tr.mean_us),
                us(tr.min_us),
                us(tr.max_us),
                us(tr.jitter_us),
                format!("{:.1}", tr.relative_pct),
                gb(tr.gbps),
                fig(tr.thirds_us[0], us),
                fig(tr.thirds_us[1], us),
                fig(tr.thirds_us[2], us),
                fig(tr.drift_pct, |v| format!("{v:+.2}")),
            ]);
        }
        let mut perf = Section::new(
            format!(
                "soak: {} samples over {}, one every {}, {} × {} per path and direction",
                self.samples.len(),
                fmt_duration(Duration::from_secs_f64(self.duration_s)),
                fmt_duration(Duration::from_secs_f64(self.every_s)),
                self.iterations,
                fmt_size(self.size_bytes)
            ),
            t,
        )
        .note(format!(
            "card addresses: {} points {} apart, one per sample, wrapping (0 – {})",
            self.sweep_points,
            fmt_size(self.step_bytes),
            fmt_addr(self.step_bytes * (self.sweep_points as u64 - 1))
        ))
        .note("statistics of the per-sample means; median, p10–p90 and spread = (p90 − p10) / p50 with the verdict of docs/bench.md (Statistics): the figures to read; jitter = max − min (the reference report's, which one busy sample sets); ± % = jitter / (2 · mean); drift = median of the last third vs the first, only from ≥ 30 samples per third and when their 95 % intervals do not overlap (else n/a, see the JSON's drift_note)")
        .note(format!(
            "{} transfer errors, {} samples started over 1 s late",
            self.errors, self.late_samples
        ));
        if self.interrupted {
            perf = perf.note(format!(
                "interrupted (Ctrl-C) after {} samples: figures are of those",
                self.samples.len()
            ));
        }
        for p in &self.paths {
            if let Some(r) = &p.reason {
                perf = perf.note(format!("path {}: not available — {r}", p.path.letter()));
            }
        }
        let mut sp = Table::new(&["dir", "C/A", "C/B"]);
        for s in &self.speedups {
            sp.row(vec![
                s.dir.as_str().into(),
                fig(s.c_over_a, ratio),
                fig(s.c_over_b, ratio),
            ]);
        }
        let sp = Section::new("speed-up of C over the run (mean latency ratio)", sp);
        let mut pw = Table::new(&[
            "mean W",
            "min W",
            "max W",
            "range W",
            "first third W",
            "middle third W",
            "last third W",
        ]);
        if let Some(p) = &self.power {
            pw.row(vec![
                format!("{:.2}", p.mean_w),
                format!("{:.2}", p.min_w),
                format!("{:.2}", p.max_w),
                format!("{:.2}", p.range_w),
                fig(p.thirds_w[0], |v| format!("{v:.2}")),
                fig(p.thirds_w[1], |v| format!("{v:.2}")),
                fig(p.thirds_w[2], |v| format!("{v:.2}")),
            ]);
        }
        let mut power = Section::new("board power", pw).note(self.power_note.clone());
        if self.power.is_none() {
            power.table = None;
        }
        let csv = Section {
            title: "CSV".into(),
            notes: vec![
                format!(
                    "{} ({} rows, one per sample)",
                    self.csv.display(),
                    self.samples.len()
                ),
                format!("columns: {}", self.csv_columns.join(", ")),
            ],
            table: None,
        };
        vec![perf, sp, power, csv]
    }

    fn plots(&self) -> Vec<Plot> {
        let (unit, div) = self.time_axis();
        let mut lat = Vec::new();
        for p in PathKind::ALL {
            for d in Dir::BOTH {
                let points: Vec<(f64, f64)> = self
                    .samples
                    .iter()
                    .filter_map(|s| {
                        s.cells
                            .iter()
                            .find(|c| c.path == p && c.dir == d)
                            .map(|c| (s.t_s / div, c.mean_us))
                    })
                    .collect();
                if !points.is_empty() {
                    lat.push(Series {
                        name: format!("{} {}", p.letter(), d.as_str()),
                        points,
                    });
                }
            }
        }
        let mut plots = vec![Plot {
            file: "soak-latency.svg".into(),
            title: format!(
                "Soak: mean {} latency per sample",
                fmt_size(self.size_bytes)
            ),
            x_label: format!("time since start, {unit}"),
            y_label: "mean latency, µs".into(),
            x_log: false,
            y_log: false,
            series: lat,
        }];
        if self.power.is_some() {
            let mut series = vec![Series {
                name: "board total".into(),
                points: self
                    .samples
                    .iter()
                    .filter_map(|s| s.power_board_w.map(|w| (s.t_s / div, w)))
                    .collect(),
            }];
            let names: std::collections::BTreeSet<&String> =
                self.samples.iter().flat_map(|s| s.rails_w.keys()).collect();
            for n in names {
                series.push(Series {
                    name: n.clone(),
                    points: self
                        .samples
                        .iter()
                        .filter_map(|s| s.rails_w.get(n).map(|w| (s.t_s / div, *w)))
                        .collect(),
                });
            }
            plots.push(Plot {
                file: "soak-power.svg".into(),
                title: "Soak: INA3221 power per sample".into(),
                x_label: format!("time since start, {unit}"),
                y_label: "power, W".into(),
                x_log: false,
                y_log: false,
                series,
            });
        }
        plots
    }

    fn compare(&self, reference: &RefData, cmp: &mut Compare) {
        if self.size_bytes != 4 * MIB {
            cmp.note("soak not compared: the reference report's soak used 4 MiB transfers");
            return;
        }
        cmp.note(format!(
            "the reference report's soak: 12 h, 72 samples; ours: {} over {} samples",
            fmt_duration(Duration::from_secs_f64(self.duration_s)),
            self.samples.len()
        ));
        let s = &reference.soak;
        let tr = |p: PathKind, d: Dir| self.trends.iter().find(|t| t.path == p && t.dir == d);
        for (i, p) in PathKind::ALL.into_iter().enumerate() {
            for d in Dir::BOTH {
                let t = tr(p, d);
                cmp.row(
                    format!("{} {} mean", p.letter(), d.as_str()),
                    "µs",
                    t.map(|t| t.mean_us),
                    d.pick(s.mean_us[i]),
                );
                cmp.row(
                    format!("{} {} bandwidth", p.letter(), d.as_str()),
                    "GB/s",
                    t.map(|t| t.gbps),
                    d.pick(s.gbps[i]),
                );
            }
        }
        for d in Dir::BOTH {
            let t = tr(PathKind::C, d);
            cmp.row(
                format!("C {} lowest sample", d.as_str()),
                "µs",
                t.map(|t| t.min_us),
                d.pick(s.c_min_us),
            );
            cmp.row(
                format!("C {} highest sample", d.as_str()),
                "µs",
                t.map(|t| t.max_us),
                d.pick(s.c_max_us),
            );
            for (j, name) in ["first", "middle", "last"].iter().enumerate() {
                cmp.row(
                    format!("C {} {name} third", d.as_str()),
                    "µs",
                    t.and_then(|t| t.thirds_us[j]),
                    d.pick(s.c_thirds_us[j]),
                );
            }
        }
        if let Some([m, lo, hi]) = s.power_w {
            let p = self.power.as_ref();
            cmp.row("board power mean", "W", p.map(|p| p.mean_w), m);
            cmp.row("board power min", "W", p.map(|p| p.min_w), lo);
            cmp.row("board power max", "W", p.map(|p| p.max_w), hi);
        }
        if let Some(th) = s.power_thirds_w {
            for (j, name) in ["first", "middle", "last"].iter().enumerate() {
                cmp.row(
                    format!("board power {name} third"),
                    "W",
                    self.power.as_ref().and_then(|p| p.thirds_w[j]),
                    th[j],
                );
            }
        }
    }

    fn extra_files(&self) -> Vec<PathBuf> {
        vec![self.csv.clone()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thirds_split_by_sample_index() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        assert_eq!(thirds(&v), [Some(1.5), Some(3.5), Some(5.5)]);
        assert_eq!(thirds(&[1.0]), [None, None, Some(1.0)]);
    }
}
