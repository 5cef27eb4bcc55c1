//! `/metrics` in the Prometheus text exposition format (version 0.0.4).
//!
//! Owns: [`render`]. Names follow `fpgagdr_<name>_<unit>[_total]` in base units
//! (seconds, bytes). Stage latencies are summaries (quantiles 0.5, 0.99, 1) over the
//! service's life, from the cumulative HDR histograms. The format is small and fixed,
//! so it is written here rather than through a metrics registry: the source of truth
//! is our atomics and histograms, read once per scrape.

use std::fmt::Write;

use crate::metrics::{Stage, Totals};
use crate::pipeline::{Shared, State};

/// Renders every metric.
pub fn render(shared: &Shared, simulated: bool, uptime_s: f64) -> String {
    let c = shared.counters.read();
    let mut out = String::with_capacity(4096);
    let mut counter = |name: &str, help: &str, v: u64| {
        let _ = writeln!(
            out,
            "# HELP fpgagdr_{name} {help}\n# TYPE fpgagdr_{name} counter\nfpgagdr_{name} {v}"
        );
    };
    counter(
        "frames_captured_total",
        "Frames moved by C2H DMA into the frame ring.",
        c.frames_captured,
    );
    counter(
        "frames_inferred_total",
        "Frames that went through the model.",
        c.frames_inferred,
    );
    counter(
        "frames_dropped_total",
        "Frames dropped by back-pressure or a failed frame check.",
        c.frames_dropped,
    );
    counter(
        "checksum_errors_total",
        "Frames whose header or payload CRC did not match.",
        c.checksum_errors,
    );
    counter(
        "transfer_errors_total",
        "Transfers that failed or timed out.",
        c.transfer_errors,
    );
    counter(
        "frame_wait_timeouts_total",
        "Waits for a frame that lasted the whole card.timeout_ms.",
        c.frame_wait_timeouts,
    );
    counter(
        "captured_bytes_total",
        "Bytes moved by C2H DMA into the frame ring.",
        c.bytes_captured,
    );
    let state = shared.state();
    let _ = writeln!(
        out,
        "# HELP fpgagdr_pipeline_state Pipeline state (1 for the current one).\n# TYPE fpgagdr_pipeline_state gauge"
    );
    for s in [State::Stopped, State::Running, State::Failed] {
        let _ = writeln!(
            out,
            "fpgagdr_pipeline_state{{state=\"{}\"}} {}",
            s.as_str(),
            (s == state) as u8
        );
    }
    let _ = writeln!(
        out,
        "# HELP fpgagdr_card_simulated 1 when the card is the simulated card.\n# TYPE fpgagdr_card_simulated gauge\nfpgagdr_card_simulated {}",
        simulated as u8
    );
    let _ = writeln!(
        out,
        "# HELP fpgagdr_uptime_seconds Seconds since the service started.\n# TYPE fpgagdr_uptime_seconds gauge\nfpgagdr_uptime_seconds {uptime_s:.3}"
    );
    let _ = writeln!(
        out,
        "# HELP fpgagdr_stage_latency_seconds Per-stage latency of the frame path since start.\n# TYPE fpgagdr_stage_latency_seconds summary"
    );
    let totals = shared
        .totals
        .lock()
        .map(|t| summaries(&t))
        .unwrap_or_default();
    out.push_str(&totals);
    out
}

fn summaries(t: &Totals) -> String {
    let mut out = String::new();
    for (i, stage) in Stage::ALL.iter().enumerate() {
        let h = &t.stages[i];
        let s = stage.as_str();
        for q in [0.5, 0.99, 1.0] {
            let v = if h.is_empty() {
                0.0
            } else {
                h.value_at_quantile(q) as f64 / 1e9
            };
            let _ = writeln!(
                out,
                "fpgagdr_stage_latency_seconds{{stage=\"{s}\",quantile=\"{q}\"}} {v:e}"
            );
        }
        let sum = 0.0
            + h.iter_recorded()
                .map(|v| v.value_iterated_to() as f64 * v.count_at_value() as f64)
                .sum::<f64>()
                / 1e9;
        let _ = writeln!(
            out,
            "fpgagdr_stage_latency_seconds_sum{{stage=\"{s}\"}} {sum:e}"
        );
        let _ = writeln!(
            out,
            "fpgagdr_stage_latency_seconds_count{{stage=\"{s}\"}} {}",
            h.len()
        );
    }
    out
}
