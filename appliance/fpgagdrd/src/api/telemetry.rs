//! The telemetry endpoints: `GET /api/v1/telemetry`, `GET /api/v1/telemetry/history`.
//!
//! Owns: the HTTP mapping of the frame board's telemetry (its latest sample with the
//! board's energy per frame, and the history it keeps). Must not: read a source (the
//! telemetry thread does, never the async workers).

use crate::board::{TelemetryBody, TelemetryHistory};
use axum::Json;
use axum::extract::State;
use axum::extract::rejection::QueryRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, PROBLEM, Problem};
use super::state::AppState;

/// The latest full sample: power (INA3221 rails and board total, or RAPL and NVML),
/// temperatures, loads, the Jetson figures, each source's state, and the frame board's
/// frame rate and energy per frame over the same second.
#[utoipa::path(get, path = "/api/v1/telemetry", tag = "telemetry",
    responses(
        (status = 200, description = "The latest sample", body = TelemetryBody),
        (status = 204, description = "No sample yet (the sampler has not run once)"),
    ))]
pub(super) async fn telemetry_latest(State(s): State<AppState>) -> Response {
    match s.board.telemetry() {
        Some(t) => Json(&*t).into_response(),
        None => StatusCode::NO_CONTENT.into_response(),
    }
}

/// Query of `GET /api/v1/telemetry/history`.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct HistoryQuery {
    /// `60s` (full rate, default) or `1h` (one point per second, each the mean of that
    /// second's samples).
    #[param(pattern = "^(60s|1h)$")]
    span: Option<String>,
}

/// The charted figures of the last 60 s (each telemetry sample the frame board's
/// snapshots carried: at most 10 a second), or of the last hour at 1 Hz.
#[utoipa::path(get, path = "/api/v1/telemetry/history", tag = "telemetry",
    params(HistoryQuery),
    responses(
        (status = 200, description = "Points, oldest first", body = TelemetryHistory),
        (status = 400, description = "A query other than `span` (`query`), or a span other than 60s or 1h (`history-span`)", body = Problem, content_type = PROBLEM),
    ))]
pub(super) async fn telemetry_history(
    State(s): State<AppState>,
    query: Result<axum::extract::Query<HistoryQuery>, QueryRejection>,
) -> Result<Json<TelemetryHistory>, ApiError> {
    let span = query.map_err(|e| ApiError::Query(e.body_text()))?.0.span;
    let coarse = match span.as_deref() {
        None | Some("60s") => false,
        Some("1h") => true,
        Some(other) => return Err(ApiError::HistorySpan(other.to_string())),
    };
    Ok(Json(s.board.telemetry_history(coarse)))
}
