//! What every handler shares.
//!
//! Owns: [`AppState`] and `blocking` (blocking work off the async workers, a panic
//! answered 500). Must not: handle a request, or make a change (the control room does).

use std::sync::Arc;
use std::time::Instant;

use axum::extract::FromRef;
use fpgagdr_ota::Ota;
use fpgagdr_telemetry::sampler::Telemetry;

use super::error::ApiError;
use super::live::Live;
use crate::board::Board;
use crate::control::Control;
use crate::http::auth;
use crate::http::host::HostPolicy;
use crate::http::limits::{ChangeRate, Limits, Streams};
use crate::pipeline::{InfoSlot, Shared};

/// Everything the handlers share.
#[derive(Clone)]
pub struct AppState {
    /// The control room: the config in force, changes, start and stop.
    pub control: Control,
    /// The supervisor's facts about the pipeline, read without waiting for it.
    pub pipeline_info: InfoSlot,
    /// Counters, window, latest result.
    pub shared: Arc<Shared>,
    /// The results room: log, per-frame stream, MQTT.
    pub results: crate::results::Results,
    /// Why that card (`--card auto` says what it found).
    pub card_why: String,
    /// Live feed (SSE).
    pub live: Live,
    /// The frame board: snapshots, the latest result and telemetry, their history.
    pub board: Board,
    /// Service start.
    pub started: Instant,
    /// Power, thermal and load telemetry.
    pub telemetry: Arc<Telemetry>,
    /// The token mutating requests must carry.
    pub token: auth::Token,
    /// Root that sysfs, `/proc` and `/etc` files are read under (`/`; a fixture in tests).
    pub sysfs_root: std::path::PathBuf,
    /// Over-the-air updates (RAUC).
    pub ota: Ota,
    /// The HTTP limits (`docs/api.md`, "Limits").
    pub limits: Arc<Limits>,
    /// SSE stream places.
    pub streams: Streams,
    /// Per-client rate of changes.
    pub rate: ChangeRate,
    /// Which `Host`/`Origin` names are answered.
    pub hosts: HostPolicy,
}

impl FromRef<AppState> for Live {
    fn from_ref(s: &AppState) -> Live {
        s.live.clone()
    }
}

/// Runs blocking work (reading files, rendering a frame) off the async workers; a panic
/// there becomes a 500 problem.
pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))
}
