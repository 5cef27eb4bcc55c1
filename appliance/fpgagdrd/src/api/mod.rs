//! The HTTP side: REST under `/api/v1`, SSE, Prometheus `/metrics`, the OpenAPI
//! document and the dashboard assets.
//!
//! Owns: [`router`]: which path goes to which handler. The handlers live by concern
//! (`pipeline.rs`, `config.rs`, `telemetry.rs`, `system.rs`, `ota.rs`, `live.rs`,
//! `prometheus.rs`, `openapi.rs`); below them `state.rs` ([`AppState`]), `body.rs`
//! (reading a body) and `error.rs` ([`ApiError`], problem+json). Everything that
//! reads the running pipeline or the telemetry reads the frame board (`crate::board`).
//! Must not: sit on the frame path.
//! Slow or blocking work (preparing a pipeline, joining its threads) runs on
//! `spawn_blocking`; config changes are serialised by one async mutex, and a change is
//! made current only after the new pipeline was built and the file was saved, so a bad
//! request leaves the running pipeline and the file as they were.
//! In front of every handler, outermost first (issue 18): `X-Content-Type-Options:
//! nosniff` on every answer, gzip, the `Host`/`Origin` check (`host.rs`), the rate of
//! changes per client (`limits.rs`), the API token for every request that is not
//! `GET`/`HEAD` (`auth.rs`), and the body read whole within its size and time limits
//! (`body.rs`; uploads stream instead). Connections themselves are admitted, timed and
//! closed by `server.rs`, the service's accept loop, which puts each request's client
//! into its extensions.
//! Neighbours: `auth.rs` (token), `error.rs` (problem+json), `live.rs` (SSE),
//! `prometheus.rs`, `system.rs` (versions), `ota.rs` (updates), `crate::assets`.

mod alerts;
pub mod auth;
mod body;
mod config;
pub mod error;
mod frames;
pub mod host;
pub mod limits;
pub mod live;
pub mod openapi;
pub mod ota;
mod pipeline;
pub mod prometheus;
mod results;
pub mod server;
mod state;
pub mod system;
mod telemetry;
pub mod wire;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, header};
use axum::middleware::from_fn_with_state;
use axum::routing::{get, post};

use error::ApiError;

pub use body::MAX_BODY;
pub use openapi::document as openapi_document;
pub use pipeline::{CardInfo, MemoryInfo, PipelineStatus, StatusBody};
pub use state::{AppState, Changes};

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
        .merge(crate::assets::routes())
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
