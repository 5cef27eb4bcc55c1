//! The config endpoints: `GET`/`PUT`/`PATCH /api/v1/config`, `GET /api/v1/config/schema`,
//! `GET /api/v1/config/files` (the frames and models a form can offer).
//!
//! Owns: applying a change in the one order that leaves everything as it was on any
//! failure: check the document, build the new pipeline, save the file, then swap.
//! Must not: judge a document (`crate::config` does) or prepare a pipeline itself
//! (`crate::pipeline::prepare`).

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
use crate::pipeline::{PrepareError, State as PipelineState, prepare};

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
    with_etag(&s.config.current())
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
    // A document read with GET has no secrets: the saved ones stay.
    apply_config(&s, &headers, |cur| Ok(new.keep_secrets(cur))).await
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
    apply_config(&s, &headers, |cur| {
        Ok(cur.merge_patch(&patch)?.keep_secrets(cur))
    })
    .await
}

/// Writes `new` to the config file (atomically); a failure changes nothing.
fn save(s: &AppState, new: &Config) -> Result<(), ApiError> {
    s.config.write(new).map_err(|e| {
        ApiError::Internal(format!(
            "saving {}: {e}; nothing changed",
            s.config.path().display()
        ))
    })
}

/// Applies a change to `outputs.mqtt` alone, without a new pipeline: the broker's CA
/// file checked, the config saved, then the new client started in the results room.
/// Any failure leaves everything as it was.
fn apply_mqtt(s: &AppState, turn: impl Sized, new: Config) -> Result<Response, ApiError> {
    crate::results::sinks::mqtt::check_tls(&new.outputs.mqtt, &s.files.roots).map_err(
        |message| ApiError::ConfigApply {
            message,
            field: Some("/outputs/mqtt/ca_file".into()),
        },
    )?;
    save(s, &new)?;
    s.results.configure_sinks(&new.outputs);
    s.config.set_current(new.clone());
    drop(turn);
    tracing::info!(
        "config changed (outputs.mqtt only: the pipeline goes on) and saved to {}",
        s.config.path().display()
    );
    Ok(with_etag(&new))
}

/// Checks, builds the new pipeline, saves, then swaps — in that order, so any failure
/// leaves everything as it was. Readers of the config see the old one until the swap.
async fn apply_config(
    s: &AppState,
    headers: &HeaderMap,
    make: impl FnOnce(&Config) -> Result<Config, ApiError>,
) -> Result<Response, ApiError> {
    let turn = s.changes.turn().await?;
    let current = s.config.current();
    check_if_match(headers, &current)?;
    let new = make(&current)?;
    if new == *current {
        return Ok(with_etag(&new));
    }
    // Alert rules name thermal zones and INA3221 rails: the telemetry's latest sample
    // says which this board has. Only the rules this change adds or alters are checked
    // (a sensor that went away does not block an unrelated change).
    let touched = crate::config::AlertsConfig {
        rules: new
            .outputs
            .alerts
            .rules
            .iter()
            .filter(|(name, rule)| current.outputs.alerts.rules.get(*name) != Some(*rule))
            .map(|(name, rule)| (name.clone(), rule.clone()))
            .collect(),
        ..Default::default()
    };
    let sample = s.board.telemetry();
    let (zones, rails, power): (Vec<String>, Vec<String>, bool) = sample
        .as_ref()
        .map(|t| {
            (
                t.sample.zones.iter().map(|z| z.name.clone()).collect(),
                t.sample.rails.iter().map(|r| r.name.clone()).collect(),
                t.sample.power.is_some(),
            )
        })
        .unwrap_or_default();
    if let Some((field, why)) =
        crate::config::alerts::unknown_sensors(&touched, &zones, &rails, power)
            .into_iter()
            .next()
    {
        return Err(ApiError::ConfigApply {
            message: format!("rule alert-sensor: {why}; nothing changed"),
            field: Some(field.into()),
        });
    }
    // A change to `outputs.mqtt` alone is the results room's: the new client takes
    // over from the pipeline that runs, so capture goes on and no frame is lost to it.
    // (Alert rules are compiled into a run when it starts: a change to them restarts.)
    let mqtt_only = {
        let mut same = current.raw().clone();
        same.outputs.mqtt = new.outputs.mqtt.clone();
        same == *new.raw()
    };
    if mqtt_only {
        return apply_mqtt(s, turn, new);
    }
    let (sup, card, cfg, files) = (
        s.supervisor.clone(),
        s.card.clone(),
        new.clone(),
        s.files.clone(),
    );
    // A running pipeline is replaced; a failed one is started, since the change may be
    // the fix; a stopped one stays stopped.
    let restart = s.shared.state() != PipelineState::Stopped;
    let wait = s.changes.wait();
    let prepared = s
        .changes
        .build(
            move || {
                // The MQTT broker's CA file is read like the pipeline's files: a change
                // naming one that cannot be used is refused, nothing applied.
                let p = crate::results::sinks::mqtt::check_tls(&cfg.outputs.mqtt, &files.roots)
                    .map_err(|message| PrepareError {
                        field: Some("/outputs/mqtt/ca_file"),
                        message,
                    })
                    .and_then(|()| prepare(&cfg, &card, &files));
                if p.is_err() {
                    fpgagdr::heap::release_freed();
                }
                p
            },
            move || ApiError::ConfigApply {
                message: format!(
                    "rule change-timeout: building the pipeline for this config took longer \
                     than {} s (--change-timeout-s); nothing changed",
                    wait.as_secs()
                ),
                field: None,
            },
        )
        .await?
        .map_err(|e| ApiError::ConfigApply {
            message: e.message,
            field: e.field.map(Into::into),
        })?;
    // Alert rules name classes by label: only the model can say which exist.
    if let Some((field, label)) =
        crate::config::alerts::unknown_classes(&new.outputs.alerts, prepared.labels())
            .into_iter()
            .next()
    {
        drop(prepared);
        return Err(ApiError::ConfigApply {
            message: format!(
                "rule alert-classes: {label:?} is not one of the model's labels; nothing changed"
            ),
            field: Some(field.into()),
        });
    }
    if let Err(e) = save(s, &new) {
        drop(prepared);
        return Err(e);
    }
    // The run about to start takes the new rules.
    s.results.configure_alerts(&new.outputs.alerts);
    // Either way a new generation: a page showing the pipeline's facts re-reads them.
    if restart {
        blocking(move || sup.lock().expect("supervisor poisoned").start(prepared)).await?;
    } else {
        blocking(move || {
            sup.lock().expect("supervisor poisoned").adopt(prepared);
            fpgagdr::heap::release_freed();
        })
        .await?;
    }
    // Readers see the new config once its pipeline runs.
    s.results.configure_sinks(&new.outputs);
    s.config.set_current(new.clone());
    drop(turn);
    tracing::info!("config changed and saved to {}", s.config.path().display());
    Ok(with_etag(&new))
}
