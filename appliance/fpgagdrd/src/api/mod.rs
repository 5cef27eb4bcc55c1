//! The REST API, the live stream, Prometheus `/metrics`, the OpenAPI document and the
//! dashboard's files: which path goes to which handler, and the handlers.
//!
//! Owns: [`router`] (the routes, and in front of every handler, outermost first:
//! `X-Content-Type-Options: nosniff`, gzip, then the HTTP edge's checks, `crate::http`:
//! `Host`/`Origin`, the rate of changes, the API token, the body read whole); the
//! handlers by concern (`pipeline.rs`, `config.rs`, `results.rs`, `alerts.rs`,
//! `frames.rs`, `telemetry.rs`, `system.rs`, `ota.rs`, `live.rs`, `prometheus.rs`,
//! `openapi.rs`, `assets.rs`); `state.rs` ([`AppState`]); `error.rs` ([`error::ApiError`]
//! and the rendering of every problem). Must not: sit on the frame path, make or apply a
//! config (the control room, `crate::control`, does), or read the pipeline and telemetry
//! but through the frame board (`crate::board`).

mod alerts;
pub mod assets;
mod config;
pub mod error;
mod frames;
pub mod live;
pub mod openapi;
pub mod ota;
mod pipeline;
pub mod prometheus;
mod results;
mod state;
pub mod system;
mod telemetry;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, header};
use axum::middleware::from_fn_with_state;
use axum::routing::{get, post};

use crate::http::{MAX_BODY, auth, body, host, limits};
use error::ApiError;

pub use openapi::document as openapi_document;
pub use pipeline::{CardInfo, MemoryInfo, PipelineStatus, StatusBody};
pub use state::AppState;

/// The whole HTTP surface.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/api/v1/status", get(pipeline::status))
        .route(
            "/api/v1/config",
            get(config::get_config)
                .put(config::put_config)
                .patch(config::patch_config),
        )
        .route("/api/v1/config/schema", get(config::config_schema))
        .route("/api/v1/config/files", get(config::config_files))
        .route("/api/v1/pipeline/start", post(pipeline::start))
        .route("/api/v1/pipeline/stop", post(pipeline::stop))
        .route("/api/v1/results/latest", get(pipeline::latest))
        .route("/api/v1/results", get(results::results_page))
        .route("/api/v1/frames/latest", get(frames::latest_frame))
        .route("/api/v1/alerts/frames", get(alerts::kept_frames))
        .route("/api/v1/alerts/frames/{run}/{seq}", get(alerts::kept_frame))
        .route(
            "/api/v1/results/stream",
            get(results::results_stream).layer(from_fn_with_state(
                state.streams.clone(),
                limits::stream_slot,
            )),
        )
        .route(
            "/api/v1/stream",
            get(live::stream).layer(from_fn_with_state(
                state.streams.clone(),
                limits::stream_slot,
            )),
        )
        .route("/api/v1/telemetry", get(telemetry::telemetry_latest))
        .route(
            "/api/v1/telemetry/history",
            get(telemetry::telemetry_history),
        )
        .route("/api/v1/pipeline/history", get(pipeline::pipeline_history))
        .route("/api/v1/system", get(system::system))
        .route("/api/v1/ota", get(ota::status))
        .route(
            "/api/v1/ota/bundles",
            // Bundles are streamed to disk under their own limit (`--ota-max-bytes`).
            post(ota::upload).layer(DefaultBodyLimit::disable()),
        )
        .route("/api/v1/ota/install", post(ota::install))
        .route("/metrics", get(prometheus::metrics))
        .route("/openapi.json", get(openapi::openapi))
        .route("/api/v1/openapi.json", get(openapi::openapi_v1))
        .merge(assets::routes())
        .fallback(|| async { ApiError::NoRoute("no such resource".into()) })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(from_fn_with_state(
            state.limits.body_timeout,
            body::whole_body,
        ))
        .layer(from_fn_with_state(state.token.clone(), auth::require))
        .layer(from_fn_with_state(state.rate.clone(), limits::change_rate))
        .layer(from_fn_with_state(state.hosts.clone(), host::check))
        // gzip where the client asks for it: the dashboard's files and the histories it
        // loads on open shrink about 3x and 10x. tower-http's default predicate leaves
        // the SSE stream (text/event-stream), images and bodies under 32 bytes alone.
        .layer(tower_http::compression::CompressionLayer::new())
        .layer(
            tower_http::set_header::SetResponseHeaderLayer::if_not_present(
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        )
        .with_state(state)
}
