//! RFC 9457 problem details: every API error is `application/problem+json`.
//!
//! Owns: [`Problem`]. Handlers return `Result<_, Problem>`; the body names the rule
//! broken and, for config errors, each field (`errors[]`, JSON pointers).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::config::{ConfigError, FieldError};

/// An error response.
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    /// URI naming the problem type, `urn:fpgagdr:problem:<rule>`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Short summary of the problem type.
    pub title: String,
    /// HTTP status.
    pub status: u16,
    /// What happened in this case.
    pub detail: String,
    /// Field errors, for config documents.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldError>,
}

impl Problem {
    /// A problem of `rule` with `status`.
    pub fn new(status: StatusCode, rule: &str, title: &str, detail: impl Into<String>) -> Self {
        Problem {
            kind: format!("urn:fpgagdr:problem:{rule}"),
            title: title.into(),
            status: status.as_u16(),
            detail: detail.into(),
            errors: Vec::new(),
        }
    }

    /// 404.
    pub fn not_found(rule: &str, detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, rule, "Not found", detail)
    }

    /// 500.
    pub fn internal(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "Internal error",
            detail,
        )
    }
}

impl From<ConfigError> for Problem {
    fn from(e: ConfigError) -> Self {
        let (status, rule, title) = match &e {
            ConfigError::Parse(f) if f.rule == "json-syntax" => {
                (StatusCode::BAD_REQUEST, "json-syntax", "Malformed JSON")
            }
            ConfigError::Parse(_) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "config-schema",
                "Config does not match its schema",
            ),
            ConfigError::Invalid(_) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "config-range",
                "Config value out of range",
            ),
        };
        let mut p = Problem::new(status, rule, title, e.to_string());
        p.errors = e.fields();
        p
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = (status, axum::Json(&self)).into_response();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        resp
    }
}
