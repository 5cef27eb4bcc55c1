//! OTA endpoints: `GET /api/v1/ota`, `POST /api/v1/ota/bundles`, `POST /api/v1/ota/install`.
//!
//! Owns: the HTTP mapping of [`fpgagdr_ota`]: statuses and problem types. Must not:
//! decide anything about bundles (that is `fpgagdr-ota`). The API token is checked before these run
//! (`auth.rs`), so an upload without it is refused before one byte is read.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use fpgagdr_ota::OtaError;
use fpgagdr_ota::spool::SpoolError;

use super::body::{body_bytes, check_content_type, parse_body};
use super::error::Problem;
use super::state::AppState;

impl From<OtaError> for Problem {
    fn from(e: OtaError) -> Problem {
        let detail = e.to_string();
        let (status, rule, title) = match &e {
            OtaError::Unavailable(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "ota-unavailable",
                "Updates are unavailable",
            ),
            OtaError::Busy(_) => (
                StatusCode::CONFLICT,
                "ota-busy",
                "An update is already being installed",
            ),
            OtaError::NoBundle(_) => (
                StatusCode::NOT_FOUND,
                "ota-no-bundle",
                "No such uploaded bundle",
            ),
            OtaError::Refused(_) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "ota-bundle",
                "The update bundle was refused",
            ),
            OtaError::Spool(SpoolError::TooLarge { .. }) => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "ota-bundle-size",
                "The update bundle is too large",
            ),
            OtaError::Spool(SpoolError::NoSpace { .. }) => (
                StatusCode::INSUFFICIENT_STORAGE,
                "ota-spool-space",
                "Not enough free space for the update bundle",
            ),
            OtaError::Spool(SpoolError::Incomplete(_) | SpoolError::Empty) => (
                StatusCode::BAD_REQUEST,
                "ota-upload",
                "The upload did not arrive whole",
            ),
            _ => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "Internal error",
            ),
        };
        Problem::new(status, rule, title, detail)
    }
}

/// `GET /api/v1/ota`.
pub(super) async fn status(State(s): State<AppState>) -> Json<Value> {
    Json(s.ota.status())
}

/// `POST /api/v1/ota/bundles`: the body is the bundle (`application/octet-stream`).
pub(super) async fn upload(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Result<Response, Problem> {
    let announced = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let info = s.ota.upload(body.into_data_stream(), announced).await?;
    Ok((StatusCode::CREATED, Json(info)).into_response())
}

/// Body of `POST /api/v1/ota/install`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct InstallRequest {
    /// SHA-256 of the uploaded bundle, as `POST /api/v1/ota/bundles` answered it.
    bundle: String,
}

/// `POST /api/v1/ota/install` `{"bundle": "<sha256>"}`: 202 and the OTA status.
pub(super) async fn install(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, Problem> {
    check_content_type(&headers, "")?;
    let v = parse_body(&body_bytes(body)?)?;
    let req: InstallRequest = serde_json::from_value(v).map_err(|e| {
        Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "ota-install-request",
            "Install request malformed",
            format!("expected {{\"bundle\": \"<sha256 of an uploaded bundle>\"}}: {e}"),
        )
    })?;
    let status = s.ota.install(&req.bundle).await?;
    Ok((StatusCode::ACCEPTED, Json(status)).into_response())
}
