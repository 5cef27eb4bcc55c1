//! The pipeline's endpoints: `GET /api/v1/status`, `POST /api/v1/pipeline/start`,
//! `POST /api/v1/pipeline/stop`, `GET /api/v1/results/latest`,
//! `GET /api/v1/pipeline/history`.
//!
//! Owns: [`StatusBody`] and its parts (what `/status` and the start/stop answers carry,
//! and what `/system` repeats). The history comes from the frame board, the same
//! snapshots the stream sends; the latest result from the results room, the same object
//! the stream's newest snapshot carries. Must not: hold a lock across an await
//! other than the config store's (start, stop and config changes are serialised by it).

use axum::Json;
use axum::extract::State;
use fpgagdr::{Capabilities, MemoryKind, PinMethod, Platform};
use serde::Serialize;
use utoipa::ToSchema;

use super::error::{ApiError, PROBLEM, Problem};
use super::state::AppState;
use crate::board::PipelineHistoryBody;
use crate::metrics::CounterValues;
use crate::results::LatestResult;

/// `GET /api/v1/status`: the card, the frame ring, the pipeline and its counters.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StatusBody {
    /// The card.
    pub card: CardInfo,
    /// The frame ring's memory.
    pub memory: MemoryInfo,
    /// The pipeline.
    pub pipeline: PipelineStatus,
    /// Frame counters since the service started.
    pub counters: CounterValues,
    /// Service uptime, s (the pipeline's is `pipeline.running_s`).
    pub uptime_s: f64,
    /// Where every frame's result goes: the results log, MQTT, the per-frame stream,
    /// and the results dropped on the way, by reason.
    pub outputs: crate::results::OutputsStatus,
}

/// The card: its identity always; its limits once a pipeline was prepared on it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CardInfo {
    /// `sim` (the simulated card) or `device` (a control node of the kernel module; its
    /// `simulated` is still true when the module's test-only software card is behind it).
    pub kind: &'static str,
    /// The card's name (the control node before the card was opened).
    pub name: String,
    /// True for the simulated card.
    pub simulated: bool,
    /// Why this card: the `--card` argument, and for `auto` what it found.
    pub selected: String,
    /// Platform (`tegra`, `desktop`, `sim`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
    /// GPU page size, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_size_bytes: Option<u64>,
    /// Pin alignment, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alignment_bytes: Option<u64>,
    /// C2H channels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub c2h_channels: Option<u32>,
    /// H2C channels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub h2c_channels: Option<u32>,
    /// Card memory, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub card_memory_bytes: Option<u64>,
    /// What the card can do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Capabilities>,
}

/// Where the frame ring lives (`kind` null before one was allocated).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MemoryInfo {
    /// `host`, `cuda_device` or `cuda_host`; null before a ring was allocated.
    pub kind: Option<MemoryKind>,
    /// Why that memory.
    pub detail: String,
    /// Which data path the frames take (the reference report's A, B or C: docs/bench.md) and how.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_path: Option<&'static str>,
    /// Ring entries: k × the card's frame slots.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ring_entries: Option<usize>,
    /// N: the card's frame slots (entry i always meets slot i mod N).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub card_slots: Option<usize>,
    /// Chain-cache hits over all C2H transfers into the ring, 0..1 (see the counters
    /// `chain_cache_hits` / `chain_cache_misses`); absent before the first transfer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chain_cache_hit_rate: Option<f64>,
    /// Bytes per entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry_bytes: Option<usize>,
    /// How the ring's entries are pinned and why (`card.pin_method`), as runs of
    /// consecutive entries pinned alike, entry 0 first; empty before a ring was
    /// allocated.
    pub pins: Vec<RingPins>,
    /// GPU memory the frame ring and the model take (null before a pipeline was
    /// prepared).
    pub gpu: Option<GpuMemoryStatus>,
}

/// GPU memory the pipeline takes, bytes (`/metrics`: `fpgagdr_gpu_memory_bytes`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GpuMemoryStatus {
    /// The frame ring's entries in GPU memory (page-locked memory the GPU maps, on an
    /// integrated GPU), bytes; 0 when the ring is host memory.
    pub ring_bytes: u64,
    /// The model with its runtime's arena, workspaces and CUDA graphs, and the
    /// preprocessing buffers: the device's used memory after the warm-up less before the
    /// model was loaded, less the ring, bytes; null until the model has warmed up, and on
    /// the CPU path.
    pub model_bytes: Option<u64>,
    /// The whole device's used memory (every process) after the warm-up, bytes.
    pub device_used_bytes: Option<u64>,
    /// The device's memory, bytes.
    pub device_total_bytes: Option<u64>,
    /// What these are, or why there are none (the CPU path).
    pub detail: String,
}

impl GpuMemoryStatus {
    fn of(info: &crate::pipeline::PipelineInfo) -> Self {
        match info.gpu_memory {
            Some(g) => GpuMemoryStatus {
                ring_bytes: g.ring_bytes,
                model_bytes: g.model_bytes,
                device_used_bytes: g.device_used_bytes,
                device_total_bytes: g.device_total_bytes,
                detail: if g.model_bytes.is_some() {
                    "the ring's allocations; the model's share measured with cuMemGetInfo \
                     around its load and warm-up"
                        .into()
                } else {
                    "the ring's allocations; the model's share once it has warmed up".into()
                },
            },
            None => GpuMemoryStatus {
                ring_bytes: 0,
                model_bytes: None,
                device_used_bytes: None,
                device_total_bytes: None,
                detail: "none: the frame ring is host memory and the model runs on the CPU".into(),
            },
        }
    }
}

/// Ring entries `first_entry .. first_entry + entries` pinned the same way.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RingPins {
    /// The first entry of the run (0-based).
    pub first_entry: usize,
    /// How many entries the run holds (≥ 1).
    pub entries: usize,
    /// `host` (host pages, `pin_user_pages`), `nvidia_p2p` or `dma_buf`.
    pub method: PinMethod,
    /// Why, e.g. `"dma_buf: CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED=0, fell back to
    /// nvidia_p2p"`.
    pub reason: String,
}

/// Per-entry pin methods and reasons, entry 0 first, as runs of equal ones.
fn pin_runs(pins: &[(PinMethod, String)]) -> Vec<RingPins> {
    let mut runs: Vec<RingPins> = Vec::new();
    for (i, (method, reason)) in pins.iter().enumerate() {
        match runs.last_mut() {
            Some(r) if r.method == *method && r.reason == *reason => r.entries += 1,
            _ => runs.push(RingPins {
                first_entry: i,
                entries: 1,
                method: *method,
                reason: reason.clone(),
            }),
        }
    }
    runs
}

/// The pipeline's state and what it runs (null before a pipeline was prepared).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PipelineStatus {
    /// `running`, `stopped` or `failed`.
    pub state: &'static str,
    /// Why it failed or could not start.
    pub error: Option<String>,
    /// Model file name.
    pub model: Option<String>,
    /// Where frames are checked and preprocessed, and why.
    pub preprocess: Option<String>,
    /// Which ONNX Runtime execution provider runs the model, and why.
    pub inference: Option<String>,
    /// Batch size: the largest a model run takes, and the mean over the last quarter
    /// second (null before a pipeline was prepared).
    pub batch: Option<BatchStatus>,
    /// The frame source.
    pub source: Option<String>,
    /// The pipeline generation these facts belong to: changes on every start, stop,
    /// failure and config change, as in every stream snapshot.
    pub generation: u64,
    /// How long this pipeline has run, s; null unless running.
    pub running_s: Option<f64>,
}

/// The batch size in use.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BatchStatus {
    /// Largest frames per model run (`inference.max_batch`, or the one chosen).
    pub max: u64,
    /// Mean frames per model run over the last quarter second (0 when idle).
    pub mean: f64,
    /// The longest wait for a batch to fill in use now, µs: `inference.batch_wait_us`,
    /// or the wait chosen as frames arrive.
    pub wait_us: f64,
    /// The batch the chosen wait aims at: the smallest that keeps up with the frames'
    /// arrival rate with a 25 % margin (else 10 %) within the latency target, or, when
    /// none is within it, the smallest that keeps up; null for a fixed wait.
    pub aim: Option<u64>,
    /// The most frames a batch takes now: for a chosen wait the largest batch within
    /// the latency target (`max` when the target cannot be met); `max` for a fixed wait.
    pub limit: u64,
    /// `inference.latency_target_us` the chosen wait aims within, µs; null for a fixed
    /// wait.
    pub latency_target_us: Option<f64>,
    /// The aimed batch's predicted latency, µs: its wait plus the model's measured time
    /// for it (the measured end-to-end adds DMA, preprocessing and scheduling); null
    /// for a fixed wait.
    pub predicted_us: Option<f64>,
    /// Why the chosen limit and wait: `no_arrivals`, `within_target`,
    /// `within_target_thin_margin`, `target_unmet` or `no_batch_keeps_up`; null for a
    /// fixed wait.
    pub reason: Option<&'static str>,
    /// The reason in words, with its figures; null for a fixed wait.
    pub reason_detail: Option<String>,
    /// The mean gap between frame arrivals the chosen wait sees, µs; null for a fixed
    /// wait or before two frames arrived.
    pub arrival_gap_us: Option<f64>,
    /// How the wait is set, with the model's measured time per batch size.
    pub wait_detail: String,
    /// True when batch k+1 is gathered, checked and preprocessed while batch k runs (two
    /// batches in flight); false: one batch at a time.
    pub ahead: bool,
    /// C2H channels capture uses.
    pub c2h_channels: u32,
}

/// The status as `/status` shows it now (never waiting for a start or stop).
pub(super) fn status_body(s: &AppState) -> StatusBody {
    let info = s
        .pipeline_info
        .lock()
        .expect("pipeline info poisoned")
        .clone();
    let card = match &info {
        Some(i) => CardInfo {
            kind: s.control.card().backend().kind,
            name: i.card.name.clone(),
            simulated: i.card.simulated,
            selected: s.card_why.clone(),
            platform: Some(i.card.platform),
            page_size_bytes: Some(i.card.gpu_page_size),
            alignment_bytes: Some(i.card.alignment),
            c2h_channels: Some(i.card.c2h_channels),
            h2c_channels: Some(i.card.h2c_channels),
            card_memory_bytes: Some(i.card.card_memory_bytes),
            capabilities: Some(i.card.capabilities),
        },
        None => {
            let backend = s.control.card().backend();
            CardInfo {
                kind: backend.kind,
                name: s.control.card().name(),
                simulated: backend.simulated,
                selected: s.card_why.clone(),
                platform: None,
                page_size_bytes: None,
                alignment_bytes: None,
                c2h_channels: None,
                h2c_channels: None,
                card_memory_bytes: None,
                capabilities: None,
            }
        }
    };
    let memory = match &info {
        Some(i) => MemoryInfo {
            kind: Some(i.memory),
            detail: i.memory_detail.clone(),
            data_path: Some(i.data_path),
            ring_entries: Some(i.ring.0),
            card_slots: Some(i.slots),
            chain_cache_hit_rate: s.shared.counters.read().chain_cache_hit_rate(),
            entry_bytes: Some(i.ring.1),
            pins: pin_runs(&i.pins),
            gpu: Some(GpuMemoryStatus::of(i)),
        },
        None => MemoryInfo {
            kind: None,
            detail: "no frame ring allocated yet".into(),
            data_path: None,
            ring_entries: None,
            card_slots: None,
            chain_cache_hit_rate: None,
            entry_bytes: None,
            pins: Vec::new(),
            gpu: None,
        },
    };
    let shared = &s.shared;
    let now = shared.pipeline();
    StatusBody {
        card,
        memory,
        pipeline: PipelineStatus {
            state: now.state.as_str(),
            error: shared.fault(),
            model: info.as_ref().map(|i| i.model.clone()),
            preprocess: info.as_ref().map(|i| i.preprocess.clone()),
            inference: info.as_ref().map(|i| i.inference.clone()),
            batch: info.as_ref().map(|i| {
                let choice = shared.batch.choice();
                let us = |d: std::time::Duration| d.as_secs_f64() * 1e6;
                BatchStatus {
                    max: i.max_batch as u64,
                    mean: shared.batch.mean(),
                    wait_us: us(shared.batch.wait()),
                    aim: choice.map(|c| c.aim as u64),
                    limit: choice.map_or(i.max_batch, |c| c.limit) as u64,
                    latency_target_us: choice.map(|c| us(c.target)),
                    predicted_us: choice.map(|c| us(c.predicted)),
                    reason: choice.map(|c| c.reason.as_str()),
                    reason_detail: choice.map(|c| c.describe()),
                    arrival_gap_us: choice.and_then(|c| c.gap).map(us),
                    wait_detail: i.batching.clone(),
                    ahead: i.ahead,
                    c2h_channels: i.channels,
                }
            }),
            source: info.as_ref().map(|i| i.source.clone()),
            generation: now.generation,
            running_s: now.running.map(|d| d.as_secs_f64()),
        },
        counters: shared.counters.read(),
        uptime_s: s.started.elapsed().as_secs_f64(),
        outputs: s.results.status(),
    }
}

/// The card, the frame ring, the pipeline and its counters.
#[utoipa::path(get, path = "/api/v1/status", tag = "pipeline", operation_id = "status",
    responses((status = 200, description = "Status", body = StatusBody)))]
pub(super) async fn status(State(s): State<AppState>) -> Json<StatusBody> {
    Json(status_body(&s))
}

/// Starts the pipeline with the config in force (nothing happens when it runs).
#[utoipa::path(post, path = "/api/v1/pipeline/start", tag = "pipeline",
    security(("token" = [])),
    responses(
        (status = 200, description = "Status after the start", body = StatusBody),
        (status = 401, description = "No API token (`auth-token`)", body = Problem, content_type = PROBLEM),
        (status = 422, description = "The pipeline cannot start (`pipeline-start`)", body = Problem, content_type = PROBLEM),
        (status = 503, description = "A change is still in progress (`change-busy`)", body = Problem, content_type = PROBLEM),
    ))]
pub(super) async fn start(State(s): State<AppState>) -> Result<Json<StatusBody>, ApiError> {
    s.control.start().await?;
    Ok(Json(status_body(&s)))
}

/// Stops the pipeline (a failed one becomes stopped: stopping acknowledges the failure).
/// It answers once the pipeline's threads have ended and every result of the run has
/// been handed to the outputs (the log, the live stream, the MQTT queue), so a change
/// made right after (MQTT turned off, say) finds no result of the run still on its way
/// (it waits at most 5 s for that; past it, it answers anyway and logs a warning).
#[utoipa::path(post, path = "/api/v1/pipeline/stop", tag = "pipeline",
    security(("token" = [])),
    responses(
        (status = 200, description = "Status after the stop", body = StatusBody),
        (status = 401, description = "No API token (`auth-token`)", body = Problem, content_type = PROBLEM),
        (status = 503, description = "A change is still in progress (`change-busy`)", body = Problem, content_type = PROBLEM),
    ))]
pub(super) async fn stop(State(s): State<AppState>) -> Result<Json<StatusBody>, ApiError> {
    s.control.stop().await?;
    Ok(Json(status_body(&s)))
}

/// The newest result, in the one results schema (the payload of MQTT, the log and the
/// results stream, version 2), with the names this answer had before version 2 kept for
/// one version (`top5`, `frame.checksum_ok`: deprecated). The same object the stream's
/// newest snapshot carries as `latest`.
#[utoipa::path(get, path = "/api/v1/results/latest", tag = "results",
    responses(
        (status = 200, description = "The newest result", body = LatestResult),
        (status = 404, description = "No frame inferred yet (`no-result`)", body = Problem, content_type = PROBLEM),
    ))]
pub(super) async fn latest(
    State(s): State<AppState>,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    let json = s.results.latest_json().ok_or(ApiError::NoResult)?;
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        json.to_string(),
    )
        .into_response())
}

/// Frames/s, GB/s and per-stage latency of the frame board's last 60 s, one row per
/// snapshot, as columns (see `board/history.rs`).
#[utoipa::path(get, path = "/api/v1/pipeline/history", tag = "pipeline",
    responses((status = 200, description = "The chart history", body = PipelineHistoryBody)))]
pub(super) async fn pipeline_history(State(s): State<AppState>) -> Json<PipelineHistoryBody> {
    Json(s.board.pipeline_history())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_are_reported_as_runs_of_equal_entries() {
        let p2p = (PinMethod::NvidiaP2p, "fell back".to_string());
        let dmabuf = (PinMethod::DmaBuf, "attribute 1".to_string());
        let pins = [dmabuf.clone(), dmabuf.clone(), p2p.clone(), dmabuf.clone()];
        let runs: Vec<_> = pin_runs(&pins)
            .into_iter()
            .map(|r| (r.first_entry, r.entries, r.method))
            .collect();
        assert_eq!(
            runs,
            [
                (0, 2, PinMethod::DmaBuf),
                (2, 1, PinMethod::NvidiaP2p),
                (3, 1, PinMethod::DmaBuf)
            ]
        );
        assert!(pin_runs(&[]).is_empty());
    }
}
