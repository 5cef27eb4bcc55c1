//! Reading a request body: size, content type, JSON syntax, each refused as a problem.
//!
//! Owns: `body_bytes`, `check_content_type`, `parse_body`. Must not: know what the body
//! means (the handlers do).

use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode, header};
use serde_json::Value;

use super::error::ApiError;

/// Largest request body accepted, bytes (config documents are a few hundred bytes).
pub const MAX_BODY: usize = 64 * 1024;

/// The request body, or a problem in place of axum's plain-text rejection (413 over
/// [`MAX_BODY`]), so that every API error stays problem+json.
pub(super) fn body_bytes(
    body: Result<axum::body::Bytes, BytesRejection>,
) -> Result<axum::body::Bytes, ApiError> {
    body.map_err(|e| {
        let detail = format!("{} (at most {MAX_BODY} bytes)", e.body_text());
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::BodySize(detail)
        } else {
            ApiError::Body(detail)
        }
    })
}

/// Refuses a body whose `Content-Type` is present and not JSON (415); `also` is a second
/// accepted type (`""` for none). Absent is accepted, so `curl --data-binary
/// @config.json -H …` mistakes are the only ones caught.
pub(super) fn check_content_type(headers: &HeaderMap, also: &'static str) -> Result<(), ApiError> {
    let Some(ct) = headers.get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let mime = ct
        .to_str()
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if mime == "application/json" || mime == also {
        return Ok(());
    }
    Err(ApiError::ContentType {
        sent: mime,
        accepted: also,
    })
}

/// The body as JSON. Errors: [`ApiError::JsonSyntax`].
pub(super) fn parse_body(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError::JsonSyntax(e.to_string()))
}
