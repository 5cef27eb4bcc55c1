//! RFC 9457 problem details: every API error is `application/problem+json`.
//!
//! Owns: [`ApiError`], the one list of everything the handlers refuse, each variant with
//! its status, problem type (`urn:fpgagdr:problem:<rule>`), title and the fields it
//! names, and the rendering of every problem of the service as an answer: the handlers'
//! and the HTTP edge's ([`Refusal`], `http/refusal.rs`, carried as [`ApiError::Http`]).
//! The body is `http::Problem`. Handlers return `Result<_, ApiError>`; no handler builds
//! a problem from free-form strings. A 5xx is logged here with its cause, once, as it
//! leaves.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use fpgagdr_ota::OtaError;
use fpgagdr_ota::spool::SpoolError;

use crate::config::{ConfigError, FieldError};
use crate::control::ControlError;
use crate::http::Refusal;
pub use crate::http::{PROBLEM, Problem, ProblemType};

/// Why a request was refused. Each variant is one problem type; [`ApiError::rule`] is
/// its stable name and [`ApiError::status`] its HTTP status.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// 404 `route`: no such API resource.
    #[error("{0}")]
    NoRoute(String),
    /// 404 `asset`: no such dashboard file.
    #[error("{0}")]
    NoAsset(String),
    /// 404 `no-result`: no frame has been inferred yet.
    #[error("no frame has been inferred yet")]
    NoResult,
    /// 404 `no-frame`: no frame has been captured for the frame view yet.
    #[error("no frame has been captured yet")]
    NoFrame,
    /// 404 `no-kept-frame`: no kept frame has that key (never kept, or rotated out).
    #[error("{0}")]
    NoKeptFrame(String),
    /// 405 `method`: the resource does not take that method.
    #[error("this resource does not take that method")]
    MethodNotAllowed,
    /// 412 `if-match`: the config changed since the client read it.
    #[error("If-Match {sent} does not match the current ETag {current}; GET the config and retry")]
    IfMatch {
        /// The `If-Match` the client sent.
        sent: String,
        /// The current ETag.
        current: String,
    },
    /// 400 `json-syntax`, or 422 `config-schema` / `config-range`: a config document that
    /// cannot be used; `errors[]` names each field.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// 422 `config-apply`: a valid config that cannot be applied (a model or frame file
    /// that does not load); `field` is the config field at fault.
    #[error("{message}")]
    ConfigApply {
        /// The rule and what broke it.
        message: String,
        /// JSON pointer of the field at fault, if one is.
        field: Option<std::borrow::Cow<'static, str>>,
    },
    /// 422 `pipeline-start`: the pipeline cannot start with the config in force.
    #[error("{0}")]
    PipelineStart(String),
    /// 400 `query`: a query string that does not parse.
    #[error("{0}")]
    Query(String),
    /// 400 `history-span`: `span` is neither `60s` nor `1h`.
    #[error("rule history-span: span must be 60s or 1h, not {0:?}")]
    HistorySpan(String),
    /// 422 `ota-install-request`: the install request is not `{"bundle": "<sha256>"}`.
    #[error("expected {{\"bundle\": \"<sha256 of an uploaded bundle>\"}}: {0}")]
    OtaInstallRequest(String),
    /// An OTA refusal: 503 `ota-unavailable`, 409 `ota-busy`, 404 `ota-no-bundle`, 422
    /// `ota-bundle`, 413 `ota-bundle-size`, 507 `ota-spool-space`, 400 `ota-upload`.
    #[error(transparent)]
    Ota(#[from] OtaError),
    /// 503 `change-busy`: an earlier change is still being built, or waiting for one
    /// took too long.
    #[error("{message}")]
    ChangeBusy {
        /// What is still going on.
        message: String,
        /// `Retry-After`, s.
        retry_after_s: u64,
    },
    /// 500 `internal`: something that should not happen; the detail says what.
    #[error("{0}")]
    Internal(String),
    /// A refusal of the HTTP edge (token, body, limits, host, the wire), as its own
    /// problem type.
    #[error(transparent)]
    Http(#[from] Refusal),
}

impl ProblemType for ApiError {
    fn kind(&self) -> (StatusCode, &'static str, &'static str) {
        use StatusCode as S;
        match self {
            ApiError::NoRoute(_) => (S::NOT_FOUND, "route", "Not found"),
            ApiError::NoAsset(_) => (S::NOT_FOUND, "asset", "Not found"),
            ApiError::NoResult => (S::NOT_FOUND, "no-result", "Not found"),
            ApiError::NoFrame => (S::NOT_FOUND, "no-frame", "Not found"),
            ApiError::NoKeptFrame(_) => (S::NOT_FOUND, "no-kept-frame", "Not found"),
            ApiError::MethodNotAllowed => (S::METHOD_NOT_ALLOWED, "method", "Method not allowed"),
            ApiError::IfMatch { .. } => (
                S::PRECONDITION_FAILED,
                "if-match",
                "Config changed since you read it",
            ),
            ApiError::Config(ConfigError::Parse(f)) if f.rule == "json-syntax" => {
                (S::BAD_REQUEST, "json-syntax", "Malformed JSON")
            }
            ApiError::Config(ConfigError::Parse(_)) => (
                S::UNPROCESSABLE_ENTITY,
                "config-schema",
                "Config does not match its schema",
            ),
            ApiError::Config(ConfigError::Invalid(_)) => (
                S::UNPROCESSABLE_ENTITY,
                "config-range",
                "Config value out of range",
            ),
            ApiError::ConfigApply { .. } => (
                S::UNPROCESSABLE_ENTITY,
                "config-apply",
                "Config cannot be applied",
            ),
            ApiError::PipelineStart(_) => (
                S::UNPROCESSABLE_ENTITY,
                "pipeline-start",
                "Pipeline cannot start",
            ),
            ApiError::Query(_) => (S::BAD_REQUEST, "query", "Bad query"),
            ApiError::HistorySpan(_) => (S::BAD_REQUEST, "history-span", "Bad history span"),
            ApiError::OtaInstallRequest(_) => (
                S::UNPROCESSABLE_ENTITY,
                "ota-install-request",
                "Install request malformed",
            ),
            ApiError::Ota(e) => ota_kind(e),
            ApiError::ChangeBusy { .. } => (
                S::SERVICE_UNAVAILABLE,
                "change-busy",
                "A change is still in progress",
            ),
            ApiError::Internal(_) => (S::INTERNAL_SERVER_ERROR, "internal", "Internal error"),
            ApiError::Http(r) => (r.status(), r.rule(), r.title()),
        }
    }

    /// Every broken rule of a config document, or the field a config could not be
    /// applied for.
    fn errors(&self) -> Vec<FieldError> {
        match self {
            ApiError::Config(e) => e.fields(),
            ApiError::ConfigApply {
                message,
                field: Some(field),
            } => vec![FieldError {
                field: field.to_string(),
                rule: "apply",
                message: message.clone(),
            }],
            _ => Vec::new(),
        }
    }
}

fn ota_kind(e: &OtaError) -> (StatusCode, &'static str, &'static str) {
    use StatusCode as S;
    match e {
        OtaError::Unavailable(_) => (
            S::SERVICE_UNAVAILABLE,
            "ota-unavailable",
            "Updates are unavailable",
        ),
        OtaError::Busy(_) => (
            S::CONFLICT,
            "ota-busy",
            "An update is already being installed",
        ),
        OtaError::NoBundle(_) => (S::NOT_FOUND, "ota-no-bundle", "No such uploaded bundle"),
        OtaError::Refused(_) => (
            S::UNPROCESSABLE_ENTITY,
            "ota-bundle",
            "The update bundle was refused",
        ),
        OtaError::Spool(SpoolError::TooLarge { .. }) => (
            S::PAYLOAD_TOO_LARGE,
            "ota-bundle-size",
            "The update bundle is too large",
        ),
        OtaError::Spool(SpoolError::NoSpace { .. }) => (
            S::INSUFFICIENT_STORAGE,
            "ota-spool-space",
            "Not enough free space for the update bundle",
        ),
        OtaError::Spool(SpoolError::Incomplete(_) | SpoolError::Empty) => (
            S::BAD_REQUEST,
            "ota-upload",
            "The upload did not arrive whole",
        ),
        OtaError::Spool(SpoolError::Stalled { .. }) => {
            (S::REQUEST_TIMEOUT, "ota-upload-stall", "The upload stalled")
        }
        _ => (S::INTERNAL_SERVER_ERROR, "internal", "Internal error"),
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::error!("{} {}: {self}", status.as_u16(), self.rule());
        }
        let mut resp = (status, axum::Json(self.problem())).into_response();
        let h = resp.headers_mut();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM));
        match &self {
            ApiError::Http(r) => {
                if matches!(r, Refusal::AuthToken { .. }) {
                    h.insert(
                        header::WWW_AUTHENTICATE,
                        HeaderValue::from_static("Bearer realm=\"fpgagdr\""),
                    );
                }
                if let Some(s) = r.retry_after_s() {
                    h.insert(header::RETRY_AFTER, HeaderValue::from(s));
                }
                // Answered before the body was read, or to a head that did not parse:
                // the connection cannot carry another request, and a client must not
                // reuse it.
                if r.closes() {
                    h.insert(header::CONNECTION, HeaderValue::from_static("close"));
                }
            }
            ApiError::ChangeBusy { retry_after_s, .. } => {
                h.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after_s));
            }
            _ => {}
        }
        resp
    }
}

/// What the control room refuses, as the problem a handler answers.
impl From<ControlError> for ApiError {
    fn from(e: ControlError) -> ApiError {
        match e {
            ControlError::Config(e) => ApiError::Config(e),
            ControlError::Apply(u) => ApiError::ConfigApply {
                message: u.message,
                field: u.field,
            },
            ControlError::PipelineStart(m) => ApiError::PipelineStart(m),
            ControlError::Busy {
                message,
                retry_after_s,
            } => ApiError::ChangeBusy {
                message,
                retry_after_s,
            },
            ControlError::Save(m) | ControlError::Internal(m) => ApiError::Internal(m),
        }
    }
}

/// The edge's refusals are answered as every other problem is.
impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        ApiError::Http(self).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_problem_names_its_rule_and_status() {
        let e = ApiError::IfMatch {
            sent: "\"1\"".into(),
            current: "\"2\"".into(),
        };
        let p = e.problem();
        assert_eq!(p.kind, "urn:fpgagdr:problem:if-match");
        assert_eq!(p.status, 412);
        assert!(p.detail.contains("\"2\""), "{}", p.detail);
        let e = ApiError::ConfigApply {
            message: "rule model: no such file".into(),
            field: Some("/model/path".into()),
        };
        assert_eq!(e.status(), StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(e.errors()[0].field, "/model/path");
        assert_eq!(e.errors()[0].rule, "apply");
        let e = ApiError::Ota(OtaError::Spool(SpoolError::Empty));
        assert_eq!((e.status().as_u16(), e.rule()), (400, "ota-upload"));
    }

    #[test]
    fn a_refused_token_says_how_to_authenticate() {
        let r = Refusal::AuthToken { presented: false }.into_response();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            r.headers()[header::WWW_AUTHENTICATE],
            "Bearer realm=\"fpgagdr\""
        );
        assert_eq!(
            r.headers()[header::CONTENT_TYPE],
            "application/problem+json"
        );
    }
}
