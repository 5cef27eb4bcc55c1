//! The HTTP side: REST under `/api/v1`, SSE, Prometheus `/metrics`, the OpenAPI
//! document and the dashboard assets.
//!
//! Owns: [`AppState`], [`router`] and the REST handlers. Must not: sit on the frame path.
//! Slow or blocking work (preparing a pipeline, joining its threads) runs on
//! `spawn_blocking`; config changes are serialised by one async mutex, and a change is
//! made current only after the new pipeline was built and the file was saved, so a bad
//! request leaves the running pipeline and the file as they were.
//! Every request that is not `GET`/`HEAD` passes `auth.rs` first (the API token).
//! Neighbours: `auth.rs` (token), `error.rs` (problem+json), `live.rs` (SSE),
//! `prometheus.rs`, `system.rs` (versions), `ota.rs` (updates), `crate::assets`.

pub mod auth;
mod body;
pub mod error;
pub mod history;
pub mod live;
pub mod ota;
pub mod prometheus;
mod state;
pub mod system;

use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::config::{CardChoice, Config};
use crate::pipeline::{State as PipelineState, prepare};
use body::{body_bytes, check_content_type, parse_body};
use error::Problem;
pub use state::AppState;

pub use body::MAX_BODY;

/// The whole HTTP surface.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/api/v1/status", get(status))
        .route(
            "/api/v1/config",
            get(get_config).put(put_config).patch(patch_config),
        )
        .route("/api/v1/config/schema", get(config_schema))
        .route("/api/v1/pipeline/start", post(start))
        .route("/api/v1/pipeline/stop", post(stop))
        .route("/api/v1/results/latest", get(latest))
        .route("/api/v1/stream", get(live::stream))
        .route("/api/v1/telemetry", get(telemetry_latest))
        .route("/api/v1/telemetry/history", get(telemetry_history))
        .route("/api/v1/pipeline/history", get(pipeline_history))
        .route("/api/v1/system", get(system))
        .route("/api/v1/ota", get(ota::status))
        .route(
            "/api/v1/ota/bundles",
            // Bundles are streamed to disk under their own limit (`--ota-max-bytes`).
            post(ota::upload).layer(DefaultBodyLimit::disable()),
        )
        .route("/api/v1/ota/install", post(ota::install))
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(openapi))
        .route("/api/v1/openapi.json", get(openapi))
        .merge(crate::assets::routes())
        .fallback(|| async { Problem::not_found("route", "no such resource") })
        .method_not_allowed_fallback(|| async {
            Problem::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method",
                "Method not allowed",
                "this resource does not take that method",
            )
        })
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(
            state.token.clone(),
            auth::require,
        ))
        // gzip where the client asks for it: the dashboard's files and the histories it
        // loads on open shrink about 3x and 10x. tower-http's default predicate leaves
        // the SSE stream (text/event-stream), images and bodies under 32 bytes alone.
        .layer(tower_http::compression::CompressionLayer::new())
        .with_state(state)
}

/// Runs blocking pipeline work (building a pipeline, joining its threads) off the async
/// workers; a panic there becomes a 500 problem.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, Problem> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Problem::internal(e.to_string()))
}

async fn status_json(s: &AppState) -> Value {
    let shared = s.shared.clone();
    let sup = s.supervisor.clone();
    let info = blocking(move || sup.lock().expect("supervisor poisoned").info().cloned())
        .await
        .ok()
        .flatten();
    let c = shared.counters.read();
    let card = match &info {
        Some(i) => json!({
            "kind": if i.card.simulated { "sim" } else { "device" },
            "name": i.card.name,
            "simulated": i.card.simulated,
            "platform": i.card.platform,
            "page_size_bytes": i.card.gpu_page_size,
            "alignment_bytes": i.card.alignment,
            "c2h_channels": i.card.c2h_channels,
            "h2c_channels": i.card.h2c_channels,
            "card_memory_bytes": i.card.card_memory_bytes,
            "capabilities": i.card.capabilities,
        }),
        None => match &s.card {
            CardChoice::Sim => {
                json!({"kind": "sim", "name": "SimCard (simulated XDMA card)", "simulated": true})
            }
            CardChoice::Device(p) => json!({"kind": "device", "name": p, "simulated": false}),
        },
    };
    let memory = match &info {
        Some(i) => {
            json!({"kind": i.memory, "detail": i.memory_detail, "data_path": i.data_path, "ring_entries": i.ring.0, "entry_bytes": i.ring.1})
        }
        None => json!({"kind": null, "detail": "no frame ring allocated yet"}),
    };
    json!({
        "card": card,
        "memory": memory,
        "pipeline": {
            "state": shared.state().as_str(),
            "error": shared.fault(),
            "model": info.as_ref().map(|i| i.model.clone()),
            "preprocess": info.as_ref().map(|i| i.preprocess.clone()),
            "inference": info.as_ref().map(|i| i.inference.clone()),
            "source": info.as_ref().map(|i| i.source.clone()),
        },
        "counters": c,
        "uptime_s": s.started.elapsed().as_secs_f64(),
    })
}

/// `GET /api/v1/system`: versions, card, pipeline, telemetry sources, uptimes.
async fn system(State(s): State<AppState>) -> Result<Json<Value>, Problem> {
    let root = s.sysfs_root.clone();
    let model_path = s.config.lock().await.current().model_path();
    let (mut v, model) = blocking(move || {
        let digest = system::model_digest(&model_path);
        (system::versions(&root), (model_path, digest))
    })
    .await?;
    let (path, digest) = model;
    v["model"] = match digest {
        Ok((bytes, sha256)) => json!({"path": path, "bytes": bytes, "sha256": sha256}),
        Err(e) => json!({"path": path, "bytes": null, "sha256": null, "error": e}),
    };
    let st = status_json(&s).await;
    for k in ["card", "memory", "pipeline", "uptime_s"] {
        v[k] = st[k].clone();
    }
    v["telemetry_sources"] = s
        .telemetry
        .latest()
        .map(|t| serde_json::to_value(&t.sources).unwrap_or(Value::Null))
        .unwrap_or_else(|| json!([]));
    Ok(Json(v))
}

async fn status(State(s): State<AppState>) -> Json<Value> {
    Json(status_json(&s).await)
}

fn with_etag(config: &Config) -> Response {
    let mut r = Json(config).into_response();
    if let Ok(v) = HeaderValue::from_str(&config.etag()) {
        r.headers_mut().insert(header::ETAG, v);
    }
    r
}

async fn get_config(State(s): State<AppState>) -> Response {
    with_etag(s.config.lock().await.current())
}

async fn config_schema() -> Json<Value> {
    Json(Config::schema())
}

/// Checks `If-Match` against the current ETag (absent or `*` passes).
fn check_if_match(headers: &HeaderMap, current: &Config) -> Result<(), Problem> {
    let Some(v) = headers.get(header::IF_MATCH) else {
        return Ok(());
    };
    let v = v.to_str().unwrap_or("");
    let etag = current.etag();
    if v.trim() == "*" || v.split(',').any(|t| t.trim() == etag) {
        Ok(())
    } else {
        Err(Problem::new(
            StatusCode::PRECONDITION_FAILED,
            "if-match",
            "Config changed since you read it",
            format!(
                "If-Match {v} does not match the current ETag {etag}; GET the config and retry"
            ),
        ))
    }
}

async fn put_config(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<axum::body::Bytes, BytesRejection>,
) -> Result<Response, Problem> {
    check_content_type(&headers, "")?;
    let new = Config::from_value(parse_body(&body_bytes(body)?)?)?;
    apply_config(&s, &headers, |_| Ok(new)).await
}

async fn patch_config(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<axum::body::Bytes, BytesRejection>,
) -> Result<Response, Problem> {
    check_content_type(&headers, "application/merge-patch+json")?;
    let patch = parse_body(&body_bytes(body)?)?;
    apply_config(&s, &headers, |cur| {
        cur.merge_patch(&patch).map_err(Problem::from)
    })
    .await
}

/// Validates, builds the new pipeline, saves, then swaps — in that order, so any
/// failure leaves everything as it was.
async fn apply_config(
    s: &AppState,
    headers: &HeaderMap,
    make: impl FnOnce(&Config) -> Result<Config, Problem>,
) -> Result<Response, Problem> {
    let mut store = s.config.lock().await;
    check_if_match(headers, store.current())?;
    let new = make(store.current())?;
    if &new == store.current() {
        return Ok(with_etag(&new));
    }
    let (sup, card, cfg) = (s.supervisor.clone(), s.card.clone(), new.clone());
    // A running pipeline is replaced; a failed one is started, since the change may be
    // the fix; a stopped one stays stopped.
    let restart = s.shared.state() != PipelineState::Stopped;
    let prepared = blocking(move || prepare(&cfg, &card)).await?.map_err(|e| {
        let mut p = Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "config-apply",
            "Config cannot be applied",
            e.message.clone(),
        );
        if let Some(field) = e.field {
            p.errors.push(crate::config::FieldError {
                field: field.into(),
                rule: "apply",
                message: e.message,
            });
        }
        p
    })?;
    store.save(new.clone()).map_err(|e| {
        Problem::internal(format!(
            "saving {}: {e}; nothing changed",
            store.path().display()
        ))
    })?;
    if restart {
        blocking(move || sup.lock().expect("supervisor poisoned").start(prepared)).await?;
    }
    tracing::info!("config changed and saved to {}", store.path().display());
    Ok(with_etag(&new))
}

async fn start(State(s): State<AppState>) -> Result<Json<Value>, Problem> {
    // Holding the config lock serialises start, stop and config changes.
    let store = s.config.lock().await;
    if s.shared.state() != PipelineState::Running {
        let config = store.current().clone();
        let (sup, card) = (s.supervisor.clone(), s.card.clone());
        let result = blocking(move || {
            let prepared = prepare(&config, &card);
            let mut sup = sup.lock().expect("supervisor poisoned");
            match prepared {
                Ok(p) => {
                    sup.start(p);
                    Ok(())
                }
                Err(e) => {
                    sup.start_failed(e.message.clone());
                    Err(e)
                }
            }
        })
        .await?;
        if let Err(e) = result {
            return Err(Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "pipeline-start",
                "Pipeline cannot start",
                e.message,
            ));
        }
    }
    drop(store);
    Ok(Json(status_json(&s).await))
}

async fn stop(State(s): State<AppState>) -> Result<Json<Value>, Problem> {
    let store = s.config.lock().await;
    let sup = s.supervisor.clone();
    blocking(move || sup.lock().expect("supervisor poisoned").stop()).await?;
    drop(store);
    Ok(Json(status_json(&s).await))
}

async fn latest(State(s): State<AppState>) -> Result<Response, Problem> {
    let latest = s
        .shared
        .published
        .lock()
        .expect("published poisoned")
        .latest
        .clone();
    match latest {
        Some(r) => Ok(Json(r).into_response()),
        None => Err(Problem::not_found(
            "no-result",
            "no frame has been inferred yet",
        )),
    }
}

/// `GET /api/v1/telemetry`: the latest full sample (204 before the first one).
async fn telemetry_latest(State(s): State<AppState>) -> Response {
    match s.telemetry.latest() {
        Some(t) => Json(&*t).into_response(),
        None => StatusCode::NO_CONTENT.into_response(),
    }
}

/// `GET /api/v1/pipeline/history`: frames/s, GB/s and per-stage latency of the last
/// 60 s at the sampling rate, as columns (see `history.rs`).
async fn pipeline_history(State(s): State<AppState>) -> Response {
    Json(s.live.history_json()).into_response()
}

/// Query of `GET /api/v1/telemetry/history`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct HistoryQuery {
    /// `60s` (full rate, default) or `1h` (1 point per second).
    span: Option<String>,
}

/// `GET /api/v1/telemetry/history?span=60s|1h`.
async fn telemetry_history(
    State(s): State<AppState>,
    query: Result<axum::extract::Query<HistoryQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let span = match query {
        Ok(q) => q.0.span,
        Err(e) => {
            return Problem::new(StatusCode::BAD_REQUEST, "query", "Bad query", e.body_text())
                .into_response();
        }
    };
    let coarse = match span.as_deref() {
        None | Some("60s") => false,
        Some("1h") => true,
        Some(other) => {
            return Problem::new(
                StatusCode::BAD_REQUEST,
                "history-span",
                "Bad history span",
                format!("rule history-span: span must be 60s or 1h, not {other:?}"),
            )
            .into_response();
        }
    };
    Json(s.telemetry.history(coarse)).into_response()
}

async fn metrics(State(s): State<AppState>) -> Response {
    let simulated = s.card == CardChoice::Sim;
    let latest = s.telemetry.latest();
    let body = prometheus::render(
        &s.shared,
        simulated,
        s.started.elapsed().as_secs_f64(),
        latest.as_deref(),
    );
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response()
}

/// The OpenAPI document (hand-written in `openapi.json`), with the config schema
/// generated from the code.
pub fn openapi_document() -> Value {
    let mut doc: Value =
        serde_json::from_str(include_str!("openapi.json")).expect("openapi.json is valid JSON");
    let schema = Config::schema();
    if let Some(schemas) = doc.pointer_mut("/components/schemas") {
        schemas["Config"] = schema.clone();
        if let Some(defs) = schema.get("$defs").and_then(Value::as_object) {
            for (k, v) in defs {
                schemas[k] = v.clone();
            }
        }
    }
    // schemars refers to "#/$defs/X"; in OpenAPI the definitions live under components.
    let text = doc.to_string().replace("#/$defs/", "#/components/schemas/");
    serde_json::from_str(&text).expect("still valid JSON")
}

async fn openapi() -> Json<Value> {
    Json(openapi_document())
}
