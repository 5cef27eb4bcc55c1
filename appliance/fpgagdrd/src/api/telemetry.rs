//! The telemetry endpoints: `GET /api/v1/telemetry`, `GET /api/v1/telemetry/history`.
//!
//! Owns: the HTTP mapping of [`fpgagdr_telemetry::sampler::Telemetry`]. Must not: read a
//! source (the sampler thread does, never the async workers).

use axum::Json;
use axum::extract::State;
use axum::extract::rejection::QueryRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use fpgagdr_telemetry::sampler::{History, Sample};

use super::error::{ApiError, PROBLEM, Problem};
use super::state::AppState;

/// The latest full sample: power (INA3221 rails and board total, or RAPL and NVML),
/// temperatures, loads, energy per frame, and each source's state.
#[utoipa::path(get, path = "/api/v1/telemetry", tag = "telemetry",
    responses(
        (status = 200, description = "The latest sample", body = Sample),
        (status = 204, description = "No sample yet (the sampler has not run once)"),
    ))]
pub(super) async fn telemetry_latest(State(s): State<AppState>) -> Response {
    match s.telemetry.latest() {
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

/// The charted figures of the last 60 s at the sampling rate, or of the last hour at
/// 1 Hz.
#[utoipa::path(get, path = "/api/v1/telemetry/history", tag = "telemetry",
    params(HistoryQuery),
    responses(
        (status = 200, description = "Points, oldest first", body = History),
        (status = 400, description = "A query other than `span` (`query`), or a span other than 60s or 1h (`history-span`)", body = Problem, content_type = PROBLEM),
    ))]
pub(super) async fn telemetry_history(
    State(s): State<AppState>,
    query: Result<axum::extract::Query<HistoryQuery>, QueryRejection>,
) -> Result<Json<History>, ApiError> {
    let span = query.map_err(|e| ApiError::Query(e.body_text()))?.0.span;
    let coarse = match span.as_deref() {
        None | Some("60s") => false,
        Some("1h") => true,
        Some(other) => return Err(ApiError::HistorySpan(other.to_string())),
    };
    Ok(Json(s.telemetry.history(coarse)))
}
