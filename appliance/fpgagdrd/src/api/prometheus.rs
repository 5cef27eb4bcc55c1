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
use fpgagdr_telemetry::sampler::Sample;

/// Renders every metric; `telemetry` adds the power, thermal and load gauges (a series
/// whose source is unavailable is absent, never a sentinel value).
pub fn render(
    shared: &Shared,
    simulated: bool,
    uptime_s: f64,
    telemetry: Option<&Sample>,
) -> String {
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
    counter(
        "inference_batches_total",
        "Model runs (each on a batch of frames).",
        c.batches_run,
    );
    let _ = writeln!(
        out,
        "# HELP fpgagdr_inference_batch_size Mean frames per model run over the last quarter second.\n# TYPE fpgagdr_inference_batch_size gauge\nfpgagdr_inference_batch_size {}\n# HELP fpgagdr_inference_max_batch Largest frames per model run of the pipeline.\n# TYPE fpgagdr_inference_max_batch gauge\nfpgagdr_inference_max_batch {}",
        shared.batch.mean(),
        shared.batch.max()
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
    if let Some(t) = telemetry {
        out.push_str(&telemetry_gauges(t));
    }
    out
}

/// Escapes a label value (backslash, double quote, newline).
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// One gauge family: HELP/TYPE once, then one line per `(labels, value)`; nothing at
/// all when there are no values.
fn gauge(out: &mut String, name: &str, help: &str, values: &[(String, f64)]) {
    if values.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "# HELP fpgagdr_{name} {help}\n# TYPE fpgagdr_{name} gauge"
    );
    for (labels, v) in values {
        let _ = writeln!(out, "fpgagdr_{name}{labels} {v}");
    }
}

fn telemetry_gauges(t: &Sample) -> String {
    let mut out = String::new();
    let rail = |r: &fpgagdr_telemetry::Rail| {
        format!(
            "{{rail=\"{}\",chip=\"{}\"}}",
            label(&r.name),
            label(&r.chip)
        )
    };
    let one = |v: Option<f64>| v.map(|v| vec![(String::new(), v)]).unwrap_or_default();
    gauge(
        &mut out,
        "rail_power_milliwatts",
        "INA3221 rail power (bus voltage x current).",
        &t.rails
            .iter()
            .map(|r| (rail(r), r.power_mw))
            .collect::<Vec<_>>(),
    );
    gauge(
        &mut out,
        "rail_voltage_millivolts",
        "INA3221 rail bus voltage.",
        &t.rails
            .iter()
            .map(|r| (rail(r), r.voltage_mv))
            .collect::<Vec<_>>(),
    );
    gauge(
        &mut out,
        "rail_current_milliamperes",
        "INA3221 rail current.",
        &t.rails
            .iter()
            .map(|r| (rail(r), r.current_ma))
            .collect::<Vec<_>>(),
    );
    gauge(
        &mut out,
        "power_watts",
        "Total power by the board's power tree (Jetson) or RAPL + NVML (x86); see /api/v1/telemetry for what it covers.",
        &t.power
            .as_ref()
            .map(|p| vec![(format!("{{source=\"{}\"}}", p.source), p.watts)])
            .unwrap_or_default(),
    );
    gauge(
        &mut out,
        "cpu_package_power_watts",
        "RAPL CPU package power.",
        &t.rapl
            .iter()
            .map(|p| (format!("{{package=\"{}\"}}", label(&p.name)), p.power_w))
            .collect::<Vec<_>>(),
    );
    gauge(
        &mut out,
        "gpu_power_watts",
        "NVML GPU board power.",
        &t.gpus
            .iter()
            .filter_map(|g| g.power_w.map(|w| (format!("{{gpu=\"{}\"}}", g.index), w)))
            .collect::<Vec<_>>(),
    );
    gauge(
        &mut out,
        "gpu_utilization_ratio",
        "GPU busy share (Jetson devfreq load, or NVML), 0..1.",
        &t.gpu_load
            .as_ref()
            .and_then(|g| g.load_pct)
            .map(|p| vec![("{gpu=\"soc\"}".to_string(), p / 100.0)])
            .unwrap_or_else(|| {
                t.gpus
                    .iter()
                    .filter_map(|g| {
                        g.load_pct
                            .map(|p| (format!("{{gpu=\"{}\"}}", g.index), p / 100.0))
                    })
                    .collect()
            }),
    );
    gauge(
        &mut out,
        "gpu_frequency_hertz",
        "Jetson GPU clock (devfreq).",
        &one(t
            .gpu_load
            .as_ref()
            .and_then(|g| g.freq_hz)
            .map(|f| f as f64)),
    );
    gauge(
        &mut out,
        "thermal_zone_celsius",
        "Thermal zone temperature.",
        &t.zones
            .iter()
            .map(|z| (format!("{{zone=\"{}\"}}", label(&z.name)), z.celsius))
            .collect::<Vec<_>>(),
    );
    gauge(
        &mut out,
        "cpu_utilization_ratio",
        "All CPUs' busy share, 0..1.",
        &one(t.cpu_pct.map(|p| p / 100.0)),
    );
    gauge(
        &mut out,
        "memory_used_bytes",
        "Memory in use.",
        &one(t.mem_used_bytes.map(|b| b as f64)),
    );
    gauge(
        &mut out,
        "energy_per_frame_joules",
        "Energy per inferred frame over the last second.",
        &one(t.energy_per_frame_mj.map(|mj| mj / 1000.0)),
    );
    gauge(
        &mut out,
        "frames_per_joule",
        "Inferred frames per joule over the last second.",
        &one(t.frames_per_joule),
    );
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

/// Prometheus text format (0.0.4): frame counters, per-stage latency summaries, power,
/// temperature and load, in base units.
#[utoipa::path(get, path = "/metrics", tag = "metrics",
    responses((status = 200, description = "Prometheus text exposition format 0.0.4",
        body = String, content_type = "text/plain; version=0.0.4; charset=utf-8")))]
pub(super) async fn metrics(
    axum::extract::State(s): axum::extract::State<super::state::AppState>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let simulated = s.card == crate::config::CardChoice::Sim;
    let latest = s.telemetry.latest();
    let body = render(
        &s.shared,
        simulated,
        s.started.elapsed().as_secs_f64(),
        latest.as_deref(),
    );
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response()
}
