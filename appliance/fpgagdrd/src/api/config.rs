//! The config endpoints: `GET`/`PUT`/`PATCH /api/v1/config`, `GET /api/v1/config/schema`,
//! `GET /api/v1/config/files` (the frames and models a form can offer).
//!
//! Owns: reading the document a client sends and its preconditions (`If-Match`).
//! Must not: judge or apply a config (the control room, `crate::control`, does: the
//! same path as the boot's and the command line's).

use axum::Json;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::error::{ApiError, PROBLEM, Problem};
use super::state::{AppState, blocking};
use crate::config::{Config, OfferedFiles, offered_files};
use crate::http::body::{body_bytes, check_content_type, parse_body};

fn with_etag(config: &Config) -> Response {
    // Write-only secrets (the MQTT password) never leave the service.
    let mut r = Json(config.shown()).into_response();
    if let Ok(v) = HeaderValue::from_str(&config.etag()) {
        r.headers_mut().insert(header::ETAG, v);
    }
    r
}

/// The config in force, with its ETag.
#[utoipa::path(get, path = "/api/v1/config", tag = "config",
    responses((status = 200, description = "The config in force", body = Config,
        headers(("ETag" = String, description = "Strong ETag of this document, for If-Match")))))]
pub(super) async fn get_config(State(s): State<AppState>) -> Response {
    with_etag(&s.control.config())
}

/// The config document's JSON Schema (every range and default).
#[utoipa::path(get, path = "/api/v1/config/schema", tag = "config",
    responses((status = 200, description = "JSON Schema of the config document", body = Object)))]
pub(super) async fn config_schema() -> Json<Value> {
    Json(Config::schema())
}

/// The frames and models the data directory holds, as `source.path` and `model.path`
/// take them (relative to the data directory; at most 500 each).
#[utoipa::path(get, path = "/api/v1/config/files", tag = "config",
    responses((status = 200, description = "What the data directory offers", body = OfferedFiles)))]
pub(super) async fn config_files() -> Result<Json<OfferedFiles>, ApiError> {
    // Directory reads: off the async workers.
    Ok(Json(blocking(offered_files).await?))
}

/// Checks `If-Match` against the current ETag (absent or `*` passes).
fn check_if_match(headers: &HeaderMap, current: &Config) -> Result<(), ApiError> {
    let Some(v) = headers.get(header::IF_MATCH) else {
        return Ok(());
    };
    let v = v.to_str().unwrap_or("");
    let etag = current.etag();
    if v.trim() == "*" || v.split(',').any(|t| t.trim() == etag) {
        Ok(())
    } else {
        Err(ApiError::IfMatch {
            sent: v.to_string(),
            current: etag,
        })
    }
}

/// Replaces the whole config; fields left out take their defaults. Applied live: a
/// running (or failed) pipeline is rebuilt with it, then the file is saved.
#[utoipa::path(put, path = "/api/v1/config", tag = "config",
    security(("token" = [])),
    params(("If-Match" = Option<String>, Header, description = "Refuse unless the config's ETag is this one")),
    request_body(content = Config, content_type = "application/json"),
    responses(
        (status = 200, description = "The config now in force", body = Config,
            headers(("ETag" = String, description = "Strong ETag of the new document"))),
        (status = 400, description = "Malformed JSON (`json-syntax`) or an unreadable body (`body`)", body = Problem, content_type = PROBLEM),
        (status = 401, description = "No API token (`auth-token`)", body = Problem, content_type = PROBLEM),
        (status = 412, description = "If-Match does not match (`if-match`)", body = Problem, content_type = PROBLEM),
        (status = 413, description = "Body over 64 KiB (`body-size`)", body = Problem, content_type = PROBLEM),
        (status = 415, description = "Not JSON (`content-type`)", body = Problem, content_type = PROBLEM),
        (status = 422, description = "Breaks the schema (`config-schema`), a range (`config-range`), or cannot be applied (`config-apply`); `errors[]` names each field", body = Problem, content_type = PROBLEM),
        (status = 500, description = "The file could not be saved (`internal`); nothing changed", body = Problem, content_type = PROBLEM),
    ))]
pub(super) async fn put_config(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<axum::body::Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    check_content_type(&headers, "")?;
    let new = Config::from_value(parse_body(&body_bytes(body)?)?)?;
    // A document read with GET has no secrets: the control room keeps the saved ones.
    let applied = s
        .control
        .apply(|cur| {
            check_if_match(&headers, cur)?;
            Ok::<_, ApiError>(new)
        })
        .await?;
    Ok(with_etag(&applied))
}

/// Changes the fields the RFC 7396 merge patch names (`null` resets one to its default).
#[utoipa::path(patch, path = "/api/v1/config", tag = "config",
    security(("token" = [])),
    params(("If-Match" = Option<String>, Header, description = "Refuse unless the config's ETag is this one")),
    request_body(content = Object, description = "A merge patch: any part of the config document",
        content_type = "application/merge-patch+json"),
    responses(
        (status = 200, description = "The config now in force", body = Config,
            headers(("ETag" = String, description = "Strong ETag of the new document"))),
        (status = 400, description = "Malformed JSON (`json-syntax`) or an unreadable body (`body`)", body = Problem, content_type = PROBLEM),
        (status = 401, description = "No API token (`auth-token`)", body = Problem, content_type = PROBLEM),
        (status = 412, description = "If-Match does not match (`if-match`)", body = Problem, content_type = PROBLEM),
        (status = 413, description = "Body over 64 KiB (`body-size`)", body = Problem, content_type = PROBLEM),
        (status = 415, description = "Neither JSON nor a merge patch (`content-type`)", body = Problem, content_type = PROBLEM),
        (status = 422, description = "The result breaks the schema (`config-schema`), a range (`config-range`), or cannot be applied (`config-apply`)", body = Problem, content_type = PROBLEM),
        (status = 500, description = "The file could not be saved (`internal`); nothing changed", body = Problem, content_type = PROBLEM),
    ))]
pub(super) async fn patch_config(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<axum::body::Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    check_content_type(&headers, "application/merge-patch+json")?;
    let patch = parse_body(&body_bytes(body)?)?;
    let applied = s
        .control
        .apply(|cur| {
            check_if_match(&headers, cur)?;
            Ok::<_, ApiError>(cur.merge_patch(&patch)?)
        })
        .await?;
    Ok(with_etag(&applied))
}
