//! Reading a request body: size, time, content type, JSON syntax, each refused as a
//! problem.
//!
//! Owns: [`whole_body`] (the middleware that reads every body but an upload's before the
//! handler runs: a `Content-Length` over [`MAX_BODY`] is answered 413 at once, a body
//! that does not arrive whole within `--body-timeout-s` 408), `body_bytes`,
//! `check_content_type`, `parse_body`. Must not: know what the body means (the handlers
//! do).

use std::time::Duration;

use axum::body::Body;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::refusal::Refusal;

/// Largest request body accepted, bytes (config documents are a few hundred bytes).
pub const MAX_BODY: usize = 64 * 1024;
/// The one path whose body is streamed, not read whole: bundle uploads.
pub const UPLOAD_PATH: &str = "/api/v1/ota/bundles";

/// The request's `Content-Length`, if it has a valid one.
pub fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
}

/// Middleware: reads the body whole before the handler, within `timeout` and
/// [`MAX_BODY`]. A `Content-Length` over the limit is refused before a byte is read
/// (413 `body-size`); a body still incomplete after `timeout` gets 408
/// `body-timeout`. Requests that carry no body (`GET`, `HEAD`, no length, not chunked)
/// pass untouched.
pub async fn whole_body(State(timeout): State<Duration>, req: Request, next: Next) -> Response {
    if req.uri().path() == UPLOAD_PATH {
        // Bundles stream to the spool under their own limits (fpgagdr-ota).
        return next.run(req).await;
    }
    let headers = req.headers();
    let length = content_length(headers);
    if let Some(n) = length.filter(|n| *n > MAX_BODY as u64) {
        return Refusal::BodySize(format!(
            "Content-Length {n} is over the limit of {MAX_BODY} bytes"
        ))
        .into_response();
    }
    let chunked = headers.contains_key(header::TRANSFER_ENCODING);
    if matches!(*req.method(), Method::GET | Method::HEAD) || (length.unwrap_or(0) == 0 && !chunked)
    {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let bytes = match tokio::time::timeout(timeout, axum::body::to_bytes(body, MAX_BODY)).await {
        Err(_) => {
            return Refusal::BodyTimeout(format!(
                "rule body-timeout: the request body did not arrive whole within {} s (--body-timeout-s)",
                timeout.as_secs_f64()
            ))
            .into_response();
        }
        Ok(Err(e)) => {
            let too_large = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>())
                || e.to_string().contains("length limit");
            return if too_large {
                Refusal::BodySize(format!("the body is over the limit of {MAX_BODY} bytes"))
            } else {
                Refusal::Body(format!("the body could not be read: {e}"))
            }
            .into_response();
        }
        Ok(Ok(b)) => b,
    };
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// The request body, or a problem in place of axum's plain-text rejection (413 over
/// [`MAX_BODY`]), so that every API error stays problem+json.
pub fn body_bytes(
    body: Result<axum::body::Bytes, BytesRejection>,
) -> Result<axum::body::Bytes, Refusal> {
    body.map_err(|e| {
        let detail = format!("{} (at most {MAX_BODY} bytes)", e.body_text());
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            Refusal::BodySize(detail)
        } else {
            Refusal::Body(detail)
        }
    })
}

/// Refuses a body whose `Content-Type` is present and not JSON (415); `also` is a second
/// accepted type (`""` for none). Absent is accepted, so `curl --data-binary
/// @config.json -H …` mistakes are the only ones caught.
pub fn check_content_type(headers: &HeaderMap, also: &'static str) -> Result<(), Refusal> {
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
    Err(Refusal::ContentType {
        sent: mime,
        accepted: also,
    })
}

/// The body as JSON. Errors: [`Refusal::JsonSyntax`].
pub fn parse_body(body: &[u8]) -> Result<Value, Refusal> {
    serde_json::from_slice(body).map_err(|e| Refusal::JsonSyntax(e.to_string()))
}
