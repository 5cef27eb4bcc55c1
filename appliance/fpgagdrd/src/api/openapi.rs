//! The OpenAPI document, generated: paths, parameters, statuses and bodies from the
//! handlers' `#[utoipa::path]` annotations and the types they answer with; the config
//! document's schema from the same JSON Schema `GET /api/v1/config/schema` serves.
//!
//! Owns: [`document`] and the handlers of `/openapi.json` and `/api/v1/openapi.json`.
//! Must not: describe anything by hand that a type or a handler already says.

use std::borrow::Cow;

use axum::Json;
use serde_json::Value;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::openapi::{ObjectBuilder, RefOr, Schema};
use utoipa::{Modify, OpenApi};

use super::error::Problem;
use super::{config, live, ota, pipeline, prometheus, system, telemetry};
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
        prometheus::metrics,
        openapi, openapi_v1,
    ),
    components(schemas(Problem, Snapshot)),
    modifiers(&TokenScheme),
    tags(
        (name = "pipeline", description = "Status, start and stop, results"),
        (name = "config", description = "The config document: read, replace, patch, schema"),
        (name = "telemetry", description = "Power, temperature and load"),
        (name = "live", description = "Server-Sent Events for the dashboard"),
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
    // schemars refers to "#/$defs/X"; in OpenAPI the definitions live under components.
    let text = doc.to_string().replace("#/$defs/", "#/components/schemas/");
    serde_json::from_str(&text).expect("still valid JSON")
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
