//! `/metrics` in the Prometheus text exposition format (version 0.0.4).
//!
//! Owns: [`render`]. Names follow `fpgagdr_<name>_<unit>[_total]` in base units (seconds,
//! bytes). Stage latencies are summaries (quantiles 0.5, 0.99, 1) over the service's life,
//! and histograms with fixed buckets ([`BUCKETS_S`], `fpgagdr_stage_duration_seconds`: p99
//! over any window and across devices), both from the cumulative HDR histograms; drops are
//! labelled by reason. The format is small and fixed, so it is written here rather than
//! through a metrics registry: the source of truth is our atomics and histograms, read once
//! per scrape.

use std::fmt::Write;

use crate::board::TelemetryBody;
use crate::metrics::{Stage, Totals};
use crate::pipeline::{BatchReason, Shared, State};
use crate::results::OutputsStatus;

/// Renders every metric; `telemetry` (the frame board's) adds the power, thermal, load
/// and energy-per-frame gauges (a series whose source is unavailable is absent, never a
/// sentinel value).
pub fn render(
    shared: &Shared,
    simulated: bool,
    uptime_s: f64,
    telemetry: Option<&TelemetryBody>,
    outputs: Option<&OutputsStatus>,
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
        "frames_missed_total",
        "Frames the card completed that no frame-done event reported (coalesced).",
        c.frames_missed,
    );
    counter(
        "event_queue_overflows_total",
        "Frames whose frame-done event the kernel's event queue dropped (full).",
        c.event_queue_overflows,
    );
    counter(
        "frames_overrun_total",
        "Captured frames the card had overwritten in their slot before the C2H read them.",
        c.frames_overrun,
    );
    counter(
        "sequence_errors_total",
        "Captured frames whose header sequence was earlier than the one announced.",
        c.sequence_errors,
    );
    counter(
        "chain_cache_hits_total",
        "C2H transfers that replayed their ring entry's descriptor chain.",
        c.chain_cache_hits,
    );
    counter(
        "chain_cache_misses_total",
        "C2H transfers that built (or rebuilt) their descriptor chain.",
        c.chain_cache_misses,
    );
    counter(
        "inference_batches_total",
        "Model runs (each on a batch of frames).",
        c.batches_run,
    );
    if let Some(rate) = c.chain_cache_hit_rate() {
        let _ = writeln!(
            out,
            "# HELP fpgagdr_chain_cache_hit_ratio Chain-cache hits over all C2H transfers into the frame ring.\n# TYPE fpgagdr_chain_cache_hit_ratio gauge\nfpgagdr_chain_cache_hit_ratio {rate}"
        );
    }
    let _ = writeln!(
        out,
        "# HELP fpgagdr_inference_batch_size Mean frames per model run over the last quarter second.\n# TYPE fpgagdr_inference_batch_size gauge\nfpgagdr_inference_batch_size {}\n# HELP fpgagdr_inference_max_batch Largest frames per model run of the pipeline.\n# TYPE fpgagdr_inference_max_batch gauge\nfpgagdr_inference_max_batch {}",
        shared.batch.mean(),
        shared.batch.max()
    );
    batching_and_gpu_memory(&mut out, shared);
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
    let _ = writeln!(
        out,
        "# HELP fpgagdr_stage_duration_seconds Per-stage latency of the frame path since start, as buckets (p99 over any window and across devices: histogram_quantile over rate of the buckets).\n# TYPE fpgagdr_stage_duration_seconds histogram"
    );
    let buckets = shared
        .totals
        .lock()
        .map(|t| histograms(&t))
        .unwrap_or_default();
    out.push_str(&buckets);
    // Drops by reason: back-pressure (drop-oldest) and failed checks are both in
    // frames_dropped; overruns and sequence errors are dropped at capture.
    let _ = writeln!(
        out,
        "# HELP fpgagdr_frames_dropped_by_reason_total Frames dropped, by reason.\n# TYPE fpgagdr_frames_dropped_by_reason_total counter"
    );
    for (reason, v) in [
        (
            "back_pressure",
            c.frames_dropped.saturating_sub(c.checksum_errors),
        ),
        ("checksum", c.checksum_errors),
        ("overrun", c.frames_overrun),
        ("sequence", c.sequence_errors),
    ] {
        let _ = writeln!(
            out,
            "fpgagdr_frames_dropped_by_reason_total{{reason=\"{reason}\"}} {v}"
        );
    }
    if let Some(o) = outputs {
        let _ = writeln!(
            out,
            "# HELP fpgagdr_results_total Results the pipeline handed to the results room.\n# TYPE fpgagdr_results_total counter\nfpgagdr_results_total {}",
            o.results
        );
        let _ = writeln!(
            out,
            "# HELP fpgagdr_results_dropped_total Results that did not reach an output, by reason (room_full: the room fell behind; mqtt_offline: broker away at QoS 0; mqtt_queue_full: the MQTT queue was full, or a settings change made it shorter than what waited; mqtt_disabled: waiting for the broker when MQTT was turned off; stream_slow_client: a stream client fell behind). Every count grows for the life of the service.\n# TYPE fpgagdr_results_dropped_total counter"
        );
        let d = &o.dropped;
        for (reason, v) in [
            ("room_full", d.room_full),
            ("mqtt_offline", d.mqtt_offline),
            ("mqtt_queue_full", d.mqtt_queue_full),
            ("mqtt_disabled", d.mqtt_disabled),
            ("stream_slow_client", d.stream_slow_client),
        ] {
            let _ = writeln!(
                out,
                "fpgagdr_results_dropped_total{{reason=\"{reason}\"}} {v}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP fpgagdr_results_mqtt_delivered_total Results written to the broker (QoS 0) or acknowledged by it (QoS 1), since the service started.\n# TYPE fpgagdr_results_mqtt_delivered_total counter\nfpgagdr_results_mqtt_delivered_total {}",
            o.mqtt.delivered
        );
        let _ = writeln!(
            out,
            "# HELP fpgagdr_results_mqtt_queue_depth Results waiting for the MQTT broker now (queued, not yet written or acknowledged).\n# TYPE fpgagdr_results_mqtt_queue_depth gauge\nfpgagdr_results_mqtt_queue_depth {}",
            o.mqtt.queue_depth
        );
        let _ = writeln!(
            out,
            "# HELP fpgagdr_results_mqtt_connected 1 while connected to the MQTT broker.\n# TYPE fpgagdr_results_mqtt_connected gauge\nfpgagdr_results_mqtt_connected {}",
            u8::from(o.mqtt.state == "connected")
        );
        let _ = writeln!(
            out,
            "# HELP fpgagdr_results_log_bytes Bytes the results log holds on disk.\n# TYPE fpgagdr_results_log_bytes gauge\nfpgagdr_results_log_bytes {}",
            o.log.bytes
        );
        let _ = writeln!(
            out,
            "# HELP fpgagdr_alerts_total Alerts (results that matched a rule of outputs.alerts.rules), by rule.\n# TYPE fpgagdr_alerts_total counter"
        );
        for (rule, n) in &o.alerts.fired {
            // Rule names are A-Z a-z 0-9 _ - (config rule alert-name): no escaping needed.
            let _ = writeln!(out, "fpgagdr_alerts_total{{rule=\"{rule}\"}} {n}");
        }
        let f = &o.alerts.frames;
        let _ = writeln!(
            out,
            "# HELP fpgagdr_alert_frames_kept Frames kept because their result matched an alert rule.\n# TYPE fpgagdr_alert_frames_kept gauge\nfpgagdr_alert_frames_kept {}\n# HELP fpgagdr_alert_frames_kept_bytes Bytes the kept frames take on disk.\n# TYPE fpgagdr_alert_frames_kept_bytes gauge\nfpgagdr_alert_frames_kept_bytes {}\n# HELP fpgagdr_alert_frames_skipped_total Matching frames not kept: the keeper was busy.\n# TYPE fpgagdr_alert_frames_skipped_total counter\nfpgagdr_alert_frames_skipped_total {}",
            f.frames, f.bytes, f.skipped
        );
    }
    if let Some(t) = telemetry {
        out.push_str(&telemetry_gauges(t));
    }
    out
}

/// Escapes a label value (backslash, double quote, newline).
/// The batch wait in use, and the GPU memory the ring and the model take (absent on the
/// CPU path and before a pipeline ran).
fn batching_and_gpu_memory(out: &mut String, shared: &Shared) {
    let wait = shared.batch.wait().as_secs_f64();
    let _ = writeln!(
        out,
        "# HELP fpgagdr_inference_batch_wait_seconds Longest wait for a batch to fill in use now (inference.batch_wait_us, or chosen from the model's measured time per batch size).\n# TYPE fpgagdr_inference_batch_wait_seconds gauge\nfpgagdr_inference_batch_wait_seconds {wait}"
    );
    if let Some(c) = shared.batch.choice() {
        gauge(
            out,
            "inference_batch_limit",
            "Most frames a batch takes now, chosen for the latency target (inference.max_batch when it cannot be met).",
            &[(String::new(), c.limit as f64)],
        );
        gauge(
            out,
            "inference_batch_predicted_latency_seconds",
            "The chosen batch's predicted latency: its wait plus the model's measured time for it.",
            &[(String::new(), c.predicted.as_secs_f64())],
        );
        gauge(
            out,
            "inference_latency_target_seconds",
            "inference.latency_target_us: the predicted latency the chosen batches aim within.",
            &[(String::new(), c.target.as_secs_f64())],
        );
        let reasons: Vec<(String, f64)> = BatchReason::ALL
            .iter()
            .map(|r| {
                (
                    format!("{{reason=\"{}\"}}", r.as_str()),
                    f64::from(u8::from(*r == c.reason)),
                )
            })
            .collect();
        gauge(
            out,
            "inference_batch_choice",
            "Why the batch limit and wait are what they are: 1 for the reason in force (target_unmet and no_batch_keeps_up: the latency target cannot be met).",
            &reasons,
        );
    }
    let gpu = *shared.gpu_memory.lock().expect("gpu memory poisoned");
    let mut values = Vec::new();
    if let Some(g) = gpu {
        values.push(("{use=\"ring\"}".to_string(), g.ring_bytes as f64));
        if let Some(m) = g.model_bytes {
            values.push(("{use=\"model\"}".to_string(), m as f64));
        }
    }
    gauge(
        out,
        "gpu_memory_bytes",
        "GPU memory the pipeline takes: the frame ring's allocations, and the model with its runtime's arena, workspaces and graphs and the preprocessing buffers (measured around its load and warm-up).",
        &values,
    );
}

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

fn telemetry_gauges(body: &TelemetryBody) -> String {
    let t = &*body.sample;
    let mut out = String::new();
    let rail = |r: &fpgagdr_telemetry::Rail| {
        format!(
            "{{rail=\"{}\",chip=\"{}\"}}",
            label(&r.name),
            label(&r.chip)
        )
    };
    let one = |v: Option<f64>| v.map(|v| vec![(String::new(), v)]).unwrap_or_default();
    // Prometheus wants base units (watts, volts, amperes). The milli-unit names of
    // earlier releases stay one more release, marked deprecated in their help
    // (docs/api.md, "Prometheus"; docs/decisions.md, "Metrics in base units").
    let rails = |f: &dyn Fn(&fpgagdr_telemetry::Rail) -> f64| {
        t.rails.iter().map(|r| (rail(r), f(r))).collect::<Vec<_>>()
    };
    gauge(
        &mut out,
        "rail_power_watts",
        "Power monitor rail power (bus voltage x current), watts.",
        &rails(&|r| r.power_mw / 1000.0),
    );
    gauge(
        &mut out,
        "rail_voltage_volts",
        "Power monitor rail bus voltage, volts.",
        &rails(&|r| r.voltage_mv / 1000.0),
    );
    gauge(
        &mut out,
        "rail_current_amperes",
        "Power monitor rail current, amperes.",
        &rails(&|r| r.current_ma / 1000.0),
    );
    for (old, new, f) in [
        (
            "rail_power_milliwatts",
            "rail_power_watts",
            (|r: &fpgagdr_telemetry::Rail| r.power_mw) as fn(&fpgagdr_telemetry::Rail) -> f64,
        ),
        ("rail_voltage_millivolts", "rail_voltage_volts", |r| {
            r.voltage_mv
        }),
        ("rail_current_milliamperes", "rail_current_amperes", |r| {
            r.current_ma
        }),
    ] {
        gauge(
            &mut out,
            old,
            &format!("Deprecated, removed in the next release: fpgagdr_{new} x 1000."),
            &rails(&f),
        );
    }
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
        "cpu_core_frequency_hertz",
        "Clock of each online CPU core (cpufreq scaling_cur_freq).",
        &t.cpu_cores
            .iter()
            .filter_map(|c| {
                c.freq_hz
                    .map(|f| (format!("{{cpu=\"{}\"}}", c.cpu), f as f64))
            })
            .collect::<Vec<_>>(),
    );
    gauge(
        &mut out,
        "cpu_core_utilization_ratio",
        "Busy share of each online CPU core since the previous sample, 0..1.",
        &t.cpu_cores
            .iter()
            .filter_map(|c| {
                c.load_pct
                    .map(|p| (format!("{{cpu=\"{}\"}}", c.cpu), p / 100.0))
            })
            .collect::<Vec<_>>(),
    );
    gauge(
        &mut out,
        "fan_duty_ratio",
        "Fan PWM duty, 0..1.",
        &t.fans
            .iter()
            .filter_map(|f| {
                f.pwm_pct
                    .map(|p| (format!("{{fan=\"{}\"}}", label(&f.name)), p / 100.0))
            })
            .collect::<Vec<_>>(),
    );
    gauge(
        &mut out,
        "fan_speed_rpm",
        "Fan speed from its tachometer, revolutions per minute.",
        &t.fans
            .iter()
            .filter_map(|f| {
                f.rpm
                    .map(|r| (format!("{{fan=\"{}\"}}", label(&f.name)), r as f64))
            })
            .collect::<Vec<_>>(),
    );
    gauge(
        &mut out,
        "emc_frequency_hertz",
        "Jetson memory controller (EMC) clock (BPMP debugfs).",
        &one(t.emc.as_ref().map(|e| e.freq_hz as f64)),
    );
    gauge(
        &mut out,
        "gpu_memory_used_bytes",
        "GPU memory in use: nvmap on a Jetson (gpu=\"soc\"), NVML on a discrete GPU.",
        &t.gpu_mem_used_bytes
            .map(|b| vec![("{gpu=\"soc\"}".to_string(), b as f64)])
            .unwrap_or_else(|| {
                t.gpus
                    .iter()
                    .filter_map(|g| {
                        g.mem_used_bytes
                            .map(|b| (format!("{{gpu=\"{}\"}}", g.index), b as f64))
                    })
                    .collect()
            }),
    );
    gauge(
        &mut out,
        "power_mode_info",
        "The Jetson nvpmodel power mode in force (value 1; id and name as labels).",
        &t.power_mode
            .as_ref()
            .map(|m| {
                vec![(
                    format!(
                        "{{id=\"{}\",name=\"{}\"}}",
                        m.id,
                        label(m.name.as_deref().unwrap_or(""))
                    ),
                    1.0,
                )]
            })
            .unwrap_or_default(),
    );
    gauge(
        &mut out,
        "jetson_clocks",
        "1 when jetson_clocks holds CPU, GPU and EMC clocks at their maximum, else 0.",
        &one(t
            .clocks
            .as_ref()
            .map(|c| f64::from(u8::from(c.jetson_clocks)))),
    );
    gauge(
        &mut out,
        "energy_per_frame_joules",
        "Energy per inferred frame over the last second.",
        &one(body.energy_per_frame_mj.map(|mj| mj / 1000.0)),
    );
    gauge(
        &mut out,
        "frames_per_joule",
        "Inferred frames per joule over the last second.",
        &one(body.frames_per_joule),
    );
    out
}

/// Upper bounds of the stage latency buckets, seconds (50 µs to 5 s: a frame's DMA on
/// the fastest card to a stalled model run).
pub const BUCKETS_S: [f64; 16] = [
    50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3,
    1.0, 2.5, 5.0,
];

/// Cumulative buckets of every stage, from the cumulative HDR histograms (a bucket's
/// count is exact to the histogram's 3 significant digits at its bound).
fn histograms(t: &Totals) -> String {
    let mut out = String::new();
    for (i, stage) in Stage::ALL.iter().enumerate() {
        let h = &t.stages[i];
        let s = stage.as_str();
        for le in BUCKETS_S {
            let ns = (le * 1e9) as u64;
            let n = if h.is_empty() {
                0
            } else {
                h.count_between(0, ns)
            };
            let _ = writeln!(
                out,
                "fpgagdr_stage_duration_seconds_bucket{{stage=\"{s}\",le=\"{le}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "fpgagdr_stage_duration_seconds_bucket{{stage=\"{s}\",le=\"+Inf\"}} {}",
            h.len()
        );
        let sum = h
            .iter_recorded()
            .map(|v| v.value_iterated_to() as f64 * v.count_at_value() as f64)
            .sum::<f64>()
            / 1e9;
        let _ = writeln!(
            out,
            "fpgagdr_stage_duration_seconds_sum{{stage=\"{s}\"}} {sum:e}"
        );
        let _ = writeln!(
            out,
            "fpgagdr_stage_duration_seconds_count{{stage=\"{s}\"}} {}",
            h.len()
        );
    }
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
    let simulated = s.control.card().backend().simulated;
    let latest = s.board.telemetry();
    let body = render(
        &s.shared,
        simulated,
        s.started.elapsed().as_secs_f64(),
        latest.as_deref(),
        Some(&s.results.status()),
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
