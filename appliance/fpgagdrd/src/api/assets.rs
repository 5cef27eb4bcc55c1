//! The dashboard, embedded in the binary (no network, no CDN): the files listed in
//! `webui/assets.txt`, served at their paths, `/` = `index.html`.
//!
//! Owns: [`routes`]. Every asset carries a strict Content-Security-Policy (scripts and
//! styles only from this origin, no inline code).

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::error::ApiError;

include!(concat!(env!("OUT_DIR"), "/assets.rs"));

/// CSP of every dashboard file.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'";

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") | Some("mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("json") => "application/json",
        _ => "text/plain; charset=utf-8",
    }
}

fn serve(path: &str) -> Response {
    match ASSETS.iter().find(|(p, _)| *p == path) {
        Some((p, bytes)) => {
            let mut r = (StatusCode::OK, *bytes).into_response();
            let h = r.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(content_type(p)),
            );
            h.insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CSP),
            );
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            h.insert(
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            );
            r
        }
        None if path.starts_with("api/") => {
            ApiError::NoRoute(format!("no API resource /{path}")).into_response()
        }
        None => ApiError::NoAsset(format!("no dashboard file /{path}")).into_response(),
    }
}

/// `/` and every embedded file.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(|| async { serve("index.html") }))
        .route(
            "/{*path}",
            get(|Path(path): Path<String>| async move { serve(&path) }),
        )
}

/// Number of embedded files (for logs).
pub fn count() -> usize {
    ASSETS.len()
}
