//! RFC 9457 problem details: every API error is `application/problem+json`.
//!
//! Owns: [`ApiError`], the one list of everything the HTTP side refuses, each variant
//! with its status, problem type (`urn:fpgagdr:problem:<rule>`), title and the fields it
//! names; and [`Problem`], the body those become. Handlers return `Result<_, ApiError>`;
//! no handler builds a problem from free-form strings. A 5xx is logged here with its
//! cause, once, as it leaves.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use fpgagdr_ota::OtaError;
use fpgagdr_ota::spool::SpoolError;
use serde::Serialize;

use crate::config::{ConfigError, FieldError};

/// Media type of every error body (RFC 9457).
pub const PROBLEM: &str = "application/problem+json";

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
    /// 401 `auth-token`: a request that changes something without the API token;
    /// `presented` when an `Authorization` header was there but carried another token.
    #[error(
        "rule auth-token: {}",
        if *presented {
            "the Authorization header does not carry the API token"
        } else {
            "this request changes the appliance and needs `Authorization: Bearer <token>` (the token is printed on first start and saved beside the config file)"
        }
    )]
    AuthToken {
        /// Whether the request had an `Authorization` header at all.
        presented: bool,
    },
    /// 412 `if-match`: the config changed since the client read it.
    #[error("If-Match {sent} does not match the current ETag {current}; GET the config and retry")]
    IfMatch {
        /// The `If-Match` the client sent.
        sent: String,
        /// The current ETag.
        current: String,
    },
    /// 413 `body-size`: the body is over the limit (the message names it).
    #[error("{0}")]
    BodySize(String),
    /// 400 `body`: the body could not be read.
    #[error("{0}")]
    Body(String),
    /// 415 `content-type`: a body that is not JSON.
    #[error(
        "Content-Type {sent:?} is not accepted: send application/json{}",
        if accepted.is_empty() { String::new() } else { format!(" or {accepted}") }
    )]
    ContentType {
        /// The media type sent, lower case.
        sent: String,
        /// A second accepted type besides `application/json` (`""` for none).
        accepted: &'static str,
    },
    /// 400 `json-syntax`: the body is not JSON.
    #[error("malformed JSON: {0}")]
    JsonSyntax(String),
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
    /// 408 `body-timeout`: the request body did not arrive whole in time.
    #[error("{0}")]
    BodyTimeout(String),
    /// 429 `rate-limit`: this client sends changes faster than the limit.
    #[error(
        "rule rate-limit: this client sends changes faster than the limit (--change-rate per second, bursts of --change-burst); retry in {retry_after_s} s"
    )]
    RateLimit {
        /// Seconds until a change is accepted again (`Retry-After`).
        retry_after_s: u64,
    },
    /// 503 `connection-limit`: no connection free for this client (written by the
    /// accept loop, `server.rs`).
    #[error(
        "rule connection-limit: no connection is free: {full} (--max-connections, --max-client-connections); retry in {retry_after_s} s"
    )]
    ConnectionLimit {
        /// Which limit.
        full: Full,
        /// `Retry-After`, s.
        retry_after_s: u64,
    },
    /// 503 `stream-limit`: no SSE stream free for this client.
    #[error(
        "rule stream-limit: no live stream is free: {full} (--max-streams, --max-client-streams); retry in {retry_after_s} s"
    )]
    StreamLimit {
        /// Which limit.
        full: Full,
        /// `Retry-After`, s.
        retry_after_s: u64,
    },
    /// 503 `change-busy`: an earlier change is still being built, or waiting for one
    /// took too long.
    #[error("{message}")]
    ChangeBusy {
        /// What is still going on.
        message: String,
        /// `Retry-After`, s.
        retry_after_s: u64,
    },
    /// 400 `request-syntax`: the request line or a header field does not parse as
    /// HTTP/1.1 (RFC 9112), or its framing headers contradict each other; answered by
    /// the accept loop (`wire.rs`) in place of hyper's bodiless `400`.
    #[error("{0}")]
    RequestSyntax(String),
    /// 431 `header-size`: the request head is over the size or field-count limit.
    #[error("{0}")]
    HeaderSize(String),
    /// 414 `uri-size`: the request target is longer than the server reads.
    #[error("{0}")]
    UriSize(String),
    /// 505 `http-version`: a well-formed HTTP version other than 1.0 and 1.1.
    #[error("{0}")]
    HttpVersion(String),
    /// 408 `header-timeout`: a request head begun and not finished in time
    /// (`--header-timeout-s`); written by the accept loop before it closes.
    #[error("{0}")]
    HeaderTimeout(String),
    /// 421 `host`: the `Host` header names a host this service does not answer for
    /// (DNS rebinding).
    #[error("{0}")]
    Host(String),
    /// 403 `origin`: the `Origin` header names a page this service does not answer.
    #[error("{0}")]
    Origin(String),
    /// 500 `internal`: something that should not happen; the detail says what.
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.kind().0
    }

    /// The stable rule name, the last part of the problem type.
    pub fn rule(&self) -> &'static str {
        self.kind().1
    }

    /// The problem type's title.
    pub fn title(&self) -> &'static str {
        self.kind().2
    }

    fn kind(&self) -> (StatusCode, &'static str, &'static str) {
        use StatusCode as S;
        match self {
            ApiError::NoRoute(_) => (S::NOT_FOUND, "route", "Not found"),
            ApiError::NoAsset(_) => (S::NOT_FOUND, "asset", "Not found"),
            ApiError::NoResult => (S::NOT_FOUND, "no-result", "Not found"),
            ApiError::NoFrame => (S::NOT_FOUND, "no-frame", "Not found"),
            ApiError::NoKeptFrame(_) => (S::NOT_FOUND, "no-kept-frame", "Not found"),
            ApiError::MethodNotAllowed => (S::METHOD_NOT_ALLOWED, "method", "Method not allowed"),
            ApiError::AuthToken { .. } => (S::UNAUTHORIZED, "auth-token", "API token required"),
            ApiError::IfMatch { .. } => (
                S::PRECONDITION_FAILED,
                "if-match",
                "Config changed since you read it",
            ),
            ApiError::BodySize(_) => (S::PAYLOAD_TOO_LARGE, "body-size", "Request body too large"),
            ApiError::Body(_) => (S::BAD_REQUEST, "body", "Request body unreadable"),
            ApiError::ContentType { .. } => (
                S::UNSUPPORTED_MEDIA_TYPE,
                "content-type",
                "Unsupported content type",
            ),
            ApiError::JsonSyntax(_) => (S::BAD_REQUEST, "json-syntax", "Malformed JSON"),
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
            ApiError::BodyTimeout(_) => {
                (S::REQUEST_TIMEOUT, "body-timeout", "Request body too slow")
            }
            ApiError::RateLimit { .. } => (S::TOO_MANY_REQUESTS, "rate-limit", "Too many changes"),
            ApiError::ConnectionLimit { .. } => (
                S::SERVICE_UNAVAILABLE,
                "connection-limit",
                "Too many connections",
            ),
            ApiError::StreamLimit { .. } => (
                S::SERVICE_UNAVAILABLE,
                "stream-limit",
                "Too many live streams",
            ),
            ApiError::ChangeBusy { .. } => (
                S::SERVICE_UNAVAILABLE,
                "change-busy",
                "A change is still in progress",
            ),
            ApiError::RequestSyntax(_) => (S::BAD_REQUEST, "request-syntax", "Malformed request"),
            ApiError::HeaderSize(_) => (
                S::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "header-size",
                "Request head too large",
            ),
            ApiError::UriSize(_) => (S::URI_TOO_LONG, "uri-size", "Request target too long"),
            ApiError::HttpVersion(_) => (
                S::HTTP_VERSION_NOT_SUPPORTED,
                "http-version",
                "HTTP version not supported",
            ),
            ApiError::HeaderTimeout(_) => (
                S::REQUEST_TIMEOUT,
                "header-timeout",
                "Request head too slow",
            ),
            ApiError::Host(_) => (S::MISDIRECTED_REQUEST, "host", "Host not served here"),
            ApiError::Origin(_) => (S::FORBIDDEN, "origin", "Origin not allowed"),
            ApiError::Internal(_) => (S::INTERNAL_SERVER_ERROR, "internal", "Internal error"),
        }
    }

    /// The fields the problem names (`errors[]`): every broken rule of a config
    /// document, or the field a config could not be applied for.
    pub fn errors(&self) -> Vec<FieldError> {
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

    /// The RFC 9457 body.
    pub fn problem(&self) -> Problem {
        Problem {
            kind: format!("urn:fpgagdr:problem:{}", self.rule()),
            title: self.title().into(),
            status: self.status().as_u16(),
            detail: self.to_string(),
            errors: self.errors(),
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

/// An RFC 9457 problem: the body of every error response.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Problem {
    /// URI naming the problem type, `urn:fpgagdr:problem:<rule>`.
    #[serde(rename = "type")]
    #[schema(example = "urn:fpgagdr:problem:config-range")]
    pub kind: String,
    /// Short summary of the problem type.
    pub title: String,
    /// HTTP status.
    pub status: u16,
    /// What happened in this case, naming the rule and the offending values.
    pub detail: String,
    /// Field errors, for config documents (absent when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldError>,
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
        match self {
            ApiError::AuthToken { .. } => {
                h.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"fpgagdr\""),
                );
            }
            ApiError::RateLimit { retry_after_s } => {
                h.insert(header::RETRY_AFTER, HeaderValue::from(retry_after_s));
                // Answered before the body was read: the connection cannot carry another
                // request, and a client must not reuse it.
                h.insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            ApiError::BodySize(_)
            | ApiError::BodyTimeout(_)
            | ApiError::RequestSyntax(_)
            | ApiError::HeaderSize(_)
            | ApiError::UriSize(_)
            | ApiError::HttpVersion(_)
            | ApiError::HeaderTimeout(_) => {
                h.insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            ApiError::ConnectionLimit { retry_after_s, .. }
            | ApiError::StreamLimit { retry_after_s, .. }
            | ApiError::ChangeBusy { retry_after_s, .. } => {
                h.insert(header::RETRY_AFTER, HeaderValue::from(retry_after_s));
            }
            _ => {}
        }
        resp
    }
}

/// Why a counted place (a connection, a live stream; `limits.rs`) was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// Every place is taken (the limit of all clients).
    All(usize),
    /// This client holds its limit.
    Client(usize),
}

impl std::fmt::Display for Full {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Full::All(n) => write!(f, "all {n} are taken"),
            Full::Client(n) => write!(f, "this client already holds its {n}"),
        }
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
        let r = ApiError::AuthToken { presented: false }.into_response();
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
