//! What every handler shares.
//!
//! Owns: [`AppState`], and `blocking` (pipeline work off the async workers). Must not:
//! handle a request.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::FromRef;
use fpgagdr_ota::Ota;
use fpgagdr_telemetry::sampler::Telemetry;

use super::auth;
use super::error::ApiError;
use super::live::Live;
use crate::board::Board;
use crate::config::{CardChoice, ConfigStore};
use crate::pipeline::{Shared, Supervisor};

/// Everything the handlers share.
#[derive(Clone)]
pub struct AppState {
    /// Pipeline threads (std mutex: only locked inside `spawn_blocking`).
    pub supervisor: Arc<Mutex<Supervisor>>,
    /// Config in force; the async mutex serialises changes.
    pub config: Arc<tokio::sync::Mutex<ConfigStore>>,
    /// Counters, window, latest result.
    pub shared: Arc<Shared>,
    /// Which card.
    pub card: CardChoice,
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
}

impl FromRef<AppState> for Live {
    fn from_ref(s: &AppState) -> Live {
        s.live.clone()
    }
}

/// Runs blocking pipeline work (building a pipeline, joining its threads) off the async
/// workers; a panic there becomes a 500 problem.
pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))
}
