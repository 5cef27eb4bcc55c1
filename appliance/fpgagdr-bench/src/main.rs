//! `fpgagdr-bench`: the validation and benchmark tool a user runs on their own card.
//!
//! It runs the test plan of the reference report (a production driver's, §3–§4;
//! docs/bench.md) against the `fpgagdr` library: the 15-check functional suite (`quick`),
//! latency and bandwidth of the three data paths at six sizes (`sizes`), the legacy
//! TransferMode routes (`compat`), a ring of buffers against one (`multibuf`), the 2 GiB
//! card-address sweep (`sweep`) and the long soak with power samples (`soak`). Every
//! subcommand prints a table, `--json` prints a JSON document instead, `--report DIR`
//! writes Markdown, JSON and SVG plots, and `--compare reference` sets the reference
//! report's published figures beside ours.
//!
//! Cards: `--card sim` (the simulated card, `--link orin|desktop-gen3x8|off`) or a
//! control node of the kernel module (`--card /dev/fpgagdr0`). Paths B and C need a
//! GPU; without one they are reported as not available.
//!
//! Exit status: 0 success; 1 a functional check failed (`quick`); 2 bad arguments (or
//! arguments that do not fit the card); 3 the run could not complete (card missing,
//! transfer error, report not writable).
//!
//! User guide: `docs/bench.md`.
#![forbid(unsafe_code)]

mod bench;
mod capture;
mod compat;
mod error;
mod link;
mod multibuf;
mod plot;
mod progress;
mod quick;
mod reference;
mod report;
mod sizes;
mod soak;
mod stats;
mod sweep;
mod units;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use bench::{Bench, LinkArg};
use reference::RefPlatform;
use report::{OutputOptions, emit};

/// Validate an fpgagdr card and measure it the way the reference report did (quick functional
/// suite, sizes, TransferMode compatibility, multi-buffer, address sweep, soak).
#[derive(Debug, Parser)]
#[command(name = "fpgagdr-bench", version, about, long_about = None)]
struct Cli {
    /// `sim` for the simulated card, or a control node such as /dev/fpgagdr0.
    #[arg(long, global = true, default_value = "sim")]
    card: String,
    /// Link preset of the simulated card (default orin).
    #[arg(long, global = true, value_enum)]
    link: Option<LinkArg>,
    /// Print one JSON document on stdout instead of the tables.
    #[arg(long, global = true)]
    json: bool,
    /// Write DIR/SUBCOMMAND.md, DIR/SUBCOMMAND.json and SVG plots (DIR is created if missing).
    #[arg(long, global = true, value_name = "DIR")]
    report: Option<PathBuf>,
    /// Set the published figures of a reference beside ours (`reference`: the reference
    /// report, docs/bench.md).
    #[arg(long, global = true, value_enum)]
    compare: Option<CompareWith>,
    /// Reference platform to compare with; default: the card's (Orin preset or Tegra → orin,
    /// x86 preset or desktop → desktop).
    #[arg(long, global = true, value_enum, alias = "seed-platform")]
    reference_platform: Option<RefPlatform>,
    /// Behave as if no GPU were present (paths B and C not available).
    #[arg(long, global = true)]
    no_gpu: bool,
    /// DMA channel (engine) for every transfer.
    #[arg(long, global = true, default_value_t = 0)]
    channel: u32,
    /// Per-transfer timeout, ms.
    #[arg(long, global = true, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    timeout_ms: u64,
    #[command(subcommand)]
    command: Command,
}

/// What `--compare` can compare with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum CompareWith {
    /// The reference report's published figures (§4).
    // `seed`: the name before the rename, a hidden alias so scripts keep working.
    #[value(alias = "seed")]
    Reference,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The functional suite: 15 checks, each PASS/FAIL with its figure; exit 1 on any FAIL.
    Quick,
    /// Latency and bandwidth of paths A, B, C at several sizes, read and write.
    Sizes(sizes::SizesArgs),
    /// The legacy TransferMode routes: CPU mode vs GPU_PINNED mode at the reference report's sizes.
    Compat(compat::CompatArgs),
    /// A ring of N pinned buffers vs one buffer, 1 MiB frames.
    Multibuf(multibuf::MultibufArgs),
    /// Card addresses 0 to 2 GiB in 64 MiB steps: latency per address and its spread.
    Sweep(sweep::SweepArgs),
    /// Samples at a fixed period, written to a CSV as it goes, with power; trend summary.
    Soak(soak::SoakArgs),
    /// Frames from the card's frame trigger into a k x N ring: frame rate,
    /// interrupt-to-DMA-done latency, missed frames, chain-cache hits.
    Capture(capture::CaptureArgs),
}

fn run(cli: Cli) -> error::Result<i32> {
    progress::set_quiet(cli.json);
    progress::install_ctrl_c();
    let b = Bench::open(
        &cli.card,
        cli.link,
        cli.no_gpu,
        cli.channel,
        Duration::from_millis(cli.timeout_ms),
    )?;
    let opts = OutputOptions {
        json: cli.json,
        report: cli.report.clone(),
        compare: cli.compare == Some(CompareWith::Reference),
        reference_platform: cli.reference_platform,
        command: std::env::args().collect::<Vec<_>>().join(" "),
    };
    match &cli.command {
        Command::Quick => emit(&b, &opts, &quick::run(&b)),
        Command::Sizes(a) => emit(&b, &opts, &sizes::run(&b, a)?),
        Command::Compat(a) => emit(&b, &opts, &compat::run(&b, a)?),
        Command::Multibuf(a) => emit(&b, &opts, &multibuf::run(&b, a)?),
        Command::Sweep(a) => emit(&b, &opts, &sweep::run(&b, a)?),
        Command::Soak(a) => emit(&b, &opts, &soak::run(&b, a, &opts)?),
        Command::Capture(a) => emit(&b, &opts, &capture::run(&b, a)?),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            eprintln!("fpgagdr-bench: {e}");
            ExitCode::from(match e {
                error::BenchError::Usage(_) => 2,
                _ => 3,
            })
        }
    }
}
