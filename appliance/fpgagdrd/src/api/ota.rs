//! OTA endpoints: `GET /api/v1/ota`, `POST /api/v1/ota/bundles`, `POST /api/v1/ota/install`.
//!
//! Owns: the HTTP mapping of [`fpgagdr_ota`]: statuses and problem types. Must not:
//! decide anything about bundles (that is `fpgagdr-ota`). The API token is checked before these run
//! (`auth.rs`), so an upload without it is refused before one byte is read.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use fpgagdr_ota::{OtaStatus, UploadedBundle};

use super::error::{ApiError, PROBLEM, Problem};
use super::state::AppState;
use crate::http::body::{body_bytes, check_content_type, parse_body};

/// RAUC's state, the update in progress, the slots and the uploaded bundle.
#[utoipa::path(get, path = "/api/v1/ota", tag = "ota", operation_id = "ota_status",
    responses((status = 200, description = "OTA status", body = OtaStatus)))]
pub(super) async fn status(State(s): State<AppState>) -> Json<OtaStatus> {
    Json(s.ota.status())
}

/// Uploads an update bundle (the body, streamed to the spool under `--ota-max-bytes`);
/// RAUC checks its signature and `compatible` before it is kept.
#[utoipa::path(post, path = "/api/v1/ota/bundles", tag = "ota",
    security(("token" = [])),
    request_body(content = Vec<u8>, content_type = "application/octet-stream", description = "The RAUC bundle"),
    responses(
        (status = 201, description = "The bundle was kept; install it by its sha256", body = UploadedBundle),
        (status = 400, description = "The upload did not arrive whole (`ota-upload`)", body = Problem, content_type = PROBLEM),
        (status = 401, description = "No API token (`auth-token`)", body = Problem, content_type = PROBLEM),
        (status = 409, description = "An installation is running (`ota-busy`)", body = Problem, content_type = PROBLEM),
        (status = 413, description = "Over the size limit (`ota-bundle-size`)", body = Problem, content_type = PROBLEM),
        (status = 422, description = "RAUC refused the bundle (`ota-bundle`)", body = Problem, content_type = PROBLEM),
        (status = 500, description = "The spool could not be written (`internal`)", body = Problem, content_type = PROBLEM),
        (status = 503, description = "RAUC is not reachable (`ota-unavailable`)", body = Problem, content_type = PROBLEM),
        (status = 507, description = "Not enough free space in the spool (`ota-spool-space`)", body = Problem, content_type = PROBLEM),
    ))]
pub(super) async fn upload(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Result<Response, ApiError> {
    let announced = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let info = s.ota.upload(body.into_data_stream(), announced).await?;
    Ok((StatusCode::CREATED, Json(info)).into_response())
}

/// Body of `POST /api/v1/ota/install`.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct InstallRequest {
    /// SHA-256 of the uploaded bundle, as `POST /api/v1/ota/bundles` answered it.
    bundle: String,
}

/// Installs an uploaded bundle into the other slot; progress follows on `GET
/// /api/v1/ota` and the live stream's `ota` events.
#[utoipa::path(post, path = "/api/v1/ota/install", tag = "ota",
    security(("token" = [])),
    request_body(content = InstallRequest, content_type = "application/json"),
    responses(
        (status = 202, description = "Installation started; the OTA status", body = OtaStatus),
        (status = 400, description = "Malformed JSON (`json-syntax`) or an unreadable body (`body`)", body = Problem, content_type = PROBLEM),
        (status = 401, description = "No API token (`auth-token`)", body = Problem, content_type = PROBLEM),
        (status = 404, description = "No uploaded bundle with that sha256 (`ota-no-bundle`)", body = Problem, content_type = PROBLEM),
        (status = 409, description = "An installation is running (`ota-busy`)", body = Problem, content_type = PROBLEM),
        (status = 413, description = "Body over 64 KiB (`body-size`)", body = Problem, content_type = PROBLEM),
        (status = 415, description = "Not JSON (`content-type`)", body = Problem, content_type = PROBLEM),
        (status = 422, description = "Not `{\"bundle\": \"<sha256>\"}` (`ota-install-request`), or RAUC refused it (`ota-bundle`)", body = Problem, content_type = PROBLEM),
        (status = 503, description = "RAUC is not reachable (`ota-unavailable`)", body = Problem, content_type = PROBLEM),
    ))]
pub(super) async fn install(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ApiError> {
    check_content_type(&headers, "")?;
    let v = parse_body(&body_bytes(body)?)?;
    let req: InstallRequest =
        serde_json::from_value(v).map_err(|e| ApiError::OtaInstallRequest(e.to_string()))?;
    let status = s.ota.install(&req.bundle).await?;
    Ok((StatusCode::ACCEPTED, Json(status)).into_response())
}
