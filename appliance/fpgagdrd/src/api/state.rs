//! What every handler shares.
//!
//! Owns: [`AppState`], `blocking` (pipeline work off the async workers), and
//! [`Changes`] (the one-at-a-time rule of config changes, start and stop, with its
//! bounded waits). Must not: handle a request.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::FromRef;
use fpgagdr_ota::Ota;
use fpgagdr_telemetry::sampler::Telemetry;

use super::error::ApiError;
use super::live::Live;
use crate::board::Board;
use crate::cards::CardChoice;
use crate::config::ConfigStore;
use crate::files::Policy;
use crate::http::auth;
use crate::http::host::HostPolicy;
use crate::http::limits::{ChangeRate, Limits, Streams};
use crate::pipeline::{InfoSlot, Shared, Supervisor};

/// Everything the handlers share.
#[derive(Clone)]
pub struct AppState {
    /// Pipeline threads (std mutex: only locked inside `spawn_blocking`).
    pub supervisor: Arc<Mutex<Supervisor>>,
    /// The supervisor's facts about the pipeline, read without waiting for it.
    pub pipeline_info: InfoSlot,
    /// Config in force (read without waiting for a change in progress) and its file.
    pub config: Arc<ConfigStore>,
    /// Serialises config changes, start and stop.
    pub changes: Changes,
    /// Where the files a config names may lie, and how they are read.
    pub files: Arc<Policy>,
    /// Counters, window, latest result.
    pub shared: Arc<Shared>,
    /// The results room: log, per-frame stream, MQTT.
    pub results: crate::results::Results,
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

/// The one-at-a-time rule of changes (config, start, stop): a change waits its turn at
/// most `wait`, and one whose pipeline took longer than that to build is left to finish
/// on its own while later changes are refused (503 `change-busy`) until it has.
#[derive(Debug, Clone)]
pub struct Changes {
    lock: Arc<tokio::sync::Mutex<()>>,
    /// Builds abandoned after their time ran out and still running.
    abandoned: Arc<std::sync::atomic::AtomicUsize>,
    wait: std::time::Duration,
}

impl Changes {
    /// Changes that wait at most `wait` for their turn and for their pipeline.
    pub fn new(wait: std::time::Duration) -> Changes {
        Changes {
            lock: Arc::default(),
            abandoned: Arc::default(),
            wait,
        }
    }

    /// How long a change may wait for its turn, and for its pipeline to be built.
    pub fn wait(&self) -> std::time::Duration {
        self.wait
    }

    /// This change's turn, or 503 `change-busy` when an abandoned build still runs or
    /// the turn did not come within [`Changes::wait`].
    pub(super) async fn turn(&self) -> Result<tokio::sync::MutexGuard<'_, ()>, ApiError> {
        let busy = |message: String| ApiError::ChangeBusy {
            message,
            retry_after_s: 5,
        };
        let guard = tokio::time::timeout(self.wait, self.lock.lock())
            .await
            .map_err(|_| {
                busy(format!(
                    "rule change-busy: another change did not finish within {} s (--change-timeout-s); retry later",
                    self.wait.as_secs()
                ))
            })?;
        let running = self.abandoned.load(std::sync::atomic::Ordering::Acquire);
        if running > 0 {
            return Err(busy(
                "rule change-busy: a pipeline whose build ran out of time (--change-timeout-s) is still being built; retry later"
                    .into(),
            ));
        }
        Ok(guard)
    }

    /// Runs `f` (a pipeline build) off the async workers within [`Changes::wait`];
    /// when it takes longer, the change is answered with `timed_out` and `f` finishes on
    /// its own, counted as abandoned until then (its result is dropped).
    pub(super) async fn build<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
        timed_out: impl FnOnce() -> ApiError,
    ) -> Result<T, ApiError> {
        use std::sync::atomic::{AtomicU8, Ordering};
        // 0: running; 1: its result was taken; 2: given up on (it drops the result).
        let fate = Arc::new(AtomicU8::new(0));
        let (mine, abandoned) = (fate.clone(), self.abandoned.clone());
        let mut task = tokio::task::spawn_blocking(move || {
            let out = f();
            if mine
                .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                Some(out)
            } else {
                drop(out);
                fpgagdr::heap::release_freed();
                abandoned.fetch_sub(1, Ordering::AcqRel);
                None
            }
        });
        let joined = match tokio::time::timeout(self.wait, &mut task).await {
            Ok(joined) => joined,
            Err(_) => {
                self.abandoned.fetch_add(1, Ordering::AcqRel);
                if fate
                    .compare_exchange(0, 2, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    return Err(timed_out());
                }
                // It finished just now: its result is ours after all.
                self.abandoned.fetch_sub(1, Ordering::AcqRel);
                task.await
            }
        };
        match joined {
            Ok(Some(out)) => Ok(out),
            Ok(None) => Err(timed_out()),
            Err(e) => Err(ApiError::Internal(e.to_string())),
        }
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
