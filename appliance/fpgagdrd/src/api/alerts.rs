//! The kept frames of alerts: `GET /api/v1/alerts/frames` (the list) and
//! `GET /api/v1/alerts/frames/{run}/{seq}` (one, PNG).
//!
//! Owns: those handlers. Must not: write or delete a kept frame (the frame keeper,
//! `crate::results::keep`, does).

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::error::{ApiError, PROBLEM, Problem};
use super::state::{AppState, blocking};
use crate::results::{KeepStatus, KeptFrame};

/// The kept frames.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct KeptFrames {
    /// Kept frames, oldest first (by run, then seq).
    pub(super) frames: Vec<KeptFrame>,
    /// The keeper's state and bounds.
    pub(super) status: KeepStatus,
}

/// The frames kept because their result matched an alert rule
/// (`outputs.alerts.keep_frames`), oldest first; each is fetched as PNG from
/// `/api/v1/alerts/frames/{run}/{seq}`.
#[utoipa::path(get, path = "/api/v1/alerts/frames", tag = "alerts",
    responses((status = 200, description = "The kept frames", body = KeptFrames)))]
pub(super) async fn kept_frames(State(s): State<AppState>) -> Json<KeptFrames> {
    let keeper = s.results.keeper();
    Json(KeptFrames {
        frames: keeper.list(),
        status: keeper.status(),
    })
}

/// One kept frame as PNG, whole (not scaled).
#[utoipa::path(get, path = "/api/v1/alerts/frames/{run}/{seq}", tag = "alerts",
    params(("run" = u64, Path, description = "The result's run"),
           ("seq" = u64, Path, description = "The result's sequence number")),
    responses(
        (status = 200, description = "The frame, PNG", content_type = "image/png", body = Vec<u8>),
        (status = 400, description = "`run` or `seq` is not a whole number (`query`)", body = Problem, content_type = PROBLEM),
        (status = 404, description = "No kept frame has that key (`no-kept-frame`)", body = Problem, content_type = PROBLEM),
    ))]
pub(super) async fn kept_frame(
    State(s): State<AppState>,
    key: Result<Path<(u64, u64)>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path((run, seq)) = key.map_err(|e| {
        ApiError::Query(format!(
            "rule alert-frame-key: {} (the path is /api/v1/alerts/frames/RUN/SEQ, two whole numbers)",
            e.body_text()
        ))
    })?;
    let gone = || {
        ApiError::NoKeptFrame(format!(
            "no kept frame {run}:{seq} (never kept, or rotated out)"
        ))
    };
    let path = s.results.keeper().png_path((run, seq)).ok_or_else(gone)?;
    // Rotated out between the look-up and the read: the same answer.
    let png = blocking(move || std::fs::read(path))
        .await?
        .map_err(|_| gone())?;
    Ok((
        [
            (header::CONTENT_TYPE, "image/png"),
            (header::CACHE_CONTROL, "max-age=3600"),
        ],
        png,
    )
        .into_response())
}
