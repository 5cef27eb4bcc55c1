//! The OpenAPI document, generated: paths, parameters, statuses and bodies from the
//! handlers' `#[utoipa::path]` annotations and the types they answer with; the config
//! document's schema from the same JSON Schema `GET /api/v1/config/schema` serves.
//!
//! Owns: [`document`] and the handlers of `/openapi.json` and `/api/v1/openapi.json`,
//! and the refusals that come from the layers around the handlers rather than from a
//! handler (Host/Origin, connection and stream limits, the rate of changes, body
//! timeouts: `add_refusals`). Must not: describe anything by hand that a type or a
//! handler already says.

use std::borrow::Cow;

use axum::Json;
use serde_json::Value;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::openapi::{ObjectBuilder, RefOr, Schema};
use utoipa::{Modify, OpenApi};

use super::error::Problem;
use super::{alerts, config, frames, live, ota, pipeline, prometheus, results, system, telemetry};
use crate::board::Snapshot;
use crate::config::Config;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "fpgagdrd",
        description = "REST API of the fpgagdr capture-to-inference appliance. Errors are RFC 9457 problem details (application/problem+json) whose type names the rule broken (urn:fpgagdr:problem:<rule>). Requests that change something (PUT/PATCH /api/v1/config, POST /api/v1/pipeline/*, POST /api/v1/ota/*) need `Authorization: Bearer <token>` (401 problem `auth-token` without it); reading needs none."
    ),
    paths(
        pipeline::status, pipeline::start, pipeline::stop, pipeline::latest,
        pipeline::pipeline_history,
        config::get_config, config::put_config, config::patch_config, config::config_schema,
        config::config_files,
        telemetry::telemetry_latest, telemetry::telemetry_history,
        system::system,
        ota::status, ota::upload, ota::install,
        live::stream,
        results::results_page, results::result_by_key, results::results_stream, frames::latest_frame,
        alerts::kept_frames, alerts::kept_frame,
        prometheus::metrics,
        openapi, openapi_v1,
    ),
    components(schemas(Problem, Snapshot, crate::results::ResultRecord, crate::results::AlertRecord,
        crate::results::ConditionAlertRecord, results::StreamDropped)),
    modifiers(&TokenScheme),
    tags(
        (name = "pipeline", description = "Status, start and stop, results"),
        (name = "config", description = "The config document: read, replace, patch, schema"),
        (name = "telemetry", description = "Power, temperature and load"),
        (name = "live", description = "Server-Sent Events for the dashboard"),
        (name = "results", description = "Every frame's result: the results log and the per-frame stream"),
        (name = "alerts", description = "Frames whose result matched an alert rule (outputs.alerts)"),
        (name = "system", description = "Versions and uptimes"),
        (name = "ota", description = "Over-the-air updates through RAUC"),
        (name = "metrics", description = "Prometheus"),
        (name = "openapi", description = "This document"),
    )
)]
struct ApiDoc;

/// Adds the `token` security scheme the mutating paths name.
struct TokenScheme;

impl Modify for TokenScheme {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        let mut http = Http::new(HttpAuthScheme::Bearer);
        http.description = Some(
            "The API token: FPGAGDR_TOKEN, --token-file, or the file `token` beside the config file (generated and printed once on first start).".into(),
        );
        components.add_security_scheme("token", SecurityScheme::Http(http));
    }
}

/// [`Config`] is described by its JSON Schema ([`Config::schema`], from schemars, where
/// the ranges are written once): the generated document refers to `Config` and
/// [`document`] puts that schema there, so there is a single description of it.
impl utoipa::PartialSchema for Config {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new().into()
    }
}

impl utoipa::ToSchema for Config {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Config")
    }
}

/// The whole document (OpenAPI 3.1), as served.
pub fn document() -> Value {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).expect("the document serialises");
    let schema = Config::schema();
    if let Some(schemas) = doc.pointer_mut("/components/schemas") {
        let mut config = schema.clone();
        if let Some(c) = config.as_object_mut() {
            c.remove("$defs");
            c.remove("$schema");
        }
        schemas["Config"] = config;
        if let Some(defs) = schema.get("$defs").and_then(Value::as_object) {
            for (k, v) in defs {
                schemas[k] = v.clone();
            }
        }
    }
    add_refusals(&mut doc);
    add_sse_events(&mut doc);
    // schemars refers to "#/$defs/X"; in OpenAPI the definitions live under components.
    let text = doc.to_string().replace("#/$defs/", "#/components/schemas/");
    serde_json::from_str(&text).expect("still valid JSON")
}

/// Declares the events of the two Server-Sent Event streams and the JSON schema of each
/// event's data, as `x-sse-events` on their 200 responses (OpenAPI 3.1 has no field for
/// the items of a stream): event name to `{"id": what the id is, "data": schema}`.
fn add_sse_events(doc: &mut Value) {
    let r = |name: &str| serde_json::json!({"$ref": format!("#/components/schemas/{name}")});
    let events = [
        (
            "/api/v1/results/stream",
            serde_json::json!({
                "result": {"id": "RUN:SEQ, the result's key", "data": r("ResultRecord")},
                "alert": {"data": {"oneOf": [r("AlertRecord"), r("ConditionAlertRecord")]}},
                "dropped": {"data": r("StreamDropped")},
            }),
        ),
        (
            "/api/v1/stream",
            serde_json::json!({
                "snapshot": {"id": "a whole number, the event's place in the stream",
                    "data": {"type": "object", "required": ["batch"],
                        "properties": {"batch": {"type": "array", "items": r("Snapshot")}}}},
                "ota": {"data": r("OtaStatus")},
            }),
        ),
    ];
    for (path, ev) in events {
        let pointer = format!("/paths/{}/get/responses/200", path.replace('/', "~1"));
        if let Some(ok) = doc.pointer_mut(&pointer).and_then(Value::as_object_mut) {
            ok.insert("x-sse-events".into(), ev);
        }
    }
}

/// A problem response described by `description`, with `Retry-After` when `retry`.
fn problem_response(description: &str, retry: bool) -> Value {
    let mut r = serde_json::json!({
        "description": description,
        "content": {super::error::PROBLEM: {"schema": {"$ref": "#/components/schemas/Problem"}}},
    });
    if retry {
        r["headers"] = serde_json::json!({"Retry-After": {
            "description": "Seconds to wait before trying again",
            "schema": {"type": "integer", "minimum": 1},
        }});
    }
    r
}

/// Adds to every operation the answers of the layers around the handlers:
/// 403 `origin`, 421 `host` and 503 `connection-limit` (and `stream-limit` on the
/// stream) everywhere; 429 `rate-limit` on every change; 408 on every change with a
/// body (`body-timeout`, or `ota-upload-stall` for an upload). A status a handler
/// already describes keeps its description.
fn add_refusals(doc: &mut Value) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for (method, op) in item.iter_mut() {
            let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) else {
                continue;
            };
            let mut add = |status: &str, r: Value| {
                responses.entry(status).or_insert(r);
            };
            add(
                "403",
                problem_response(
                    "The `Origin` header names a page this service does not answer (`origin`)",
                    false,
                ),
            );
            add(
                "421",
                problem_response(
                    "The `Host` header names a host this service does not answer for (`host`)",
                    false,
                ),
            );
            let unavailable = if path == "/api/v1/stream" {
                "Too many connections (`connection-limit`) or live streams (`stream-limit`), for this client or in all"
            } else {
                "Too many connections, for this client or in all (`connection-limit`)"
            };
            add("503", problem_response(unavailable, true));
            if method != "get" {
                add(
                    "429",
                    problem_response(
                        "This client sends changes faster than the limit (`rate-limit`)",
                        true,
                    ),
                );
            }
            if method != "get" && op_has_body(path, method) {
                let slow = if path == "/api/v1/ota/bundles" {
                    "No byte of the upload came for the stall limit (`ota-upload-stall`)"
                } else {
                    "The body did not arrive whole in time (`body-timeout`)"
                };
                add("408", problem_response(slow, false));
            }
        }
    }
}

/// Whether `method path` takes a request body.
fn op_has_body(path: &str, method: &str) -> bool {
    matches!(
        (method, path),
        ("put" | "patch", "/api/v1/config")
            | ("post", "/api/v1/ota/install" | "/api/v1/ota/bundles")
    )
}

/// This document.
#[utoipa::path(get, path = "/openapi.json", tag = "openapi",
    responses((status = 200, description = "The OpenAPI 3.1 document", body = Object)))]
pub(super) async fn openapi() -> Json<Value> {
    Json(document())
}

/// This document, under the API's prefix.
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "openapi",
    responses((status = 200, description = "The OpenAPI 3.1 document", body = Object)))]
pub(super) async fn openapi_v1() -> Json<Value> {
    Json(document())
}
