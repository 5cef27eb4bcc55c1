//! What the HTTP edge refuses before a handler runs, and the problem document
//! (RFC 9457) every refusal of the service is written as.
//!
//! Owns: [`ProblemType`] (what makes a refusal one problem type, and its body), [`Refusal`] (each variant one problem type: its status, rule and title, and
//! the headers it asks for), [`Full`] (which counted limit was full), [`Problem`] (the
//! `application/problem+json` body) and [`PROBLEM`]. Must not: know a handler's
//! refusals (`api/error.rs` has those, and renders these through the same path).

use axum::http::StatusCode;
use serde::Serialize;

use crate::config::FieldError;

/// Media type of every error body (RFC 9457).
pub const PROBLEM: &str = "application/problem+json";

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

/// Why the HTTP edge refused a request (or a connection) before a handler ran. Each
/// variant is one problem type: [`Refusal::rule`] is its stable name and
/// [`Refusal::status`] its HTTP status.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
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
    /// 400 `host-header`: an HTTP/1.1 request without a `Host` header, or with more
    /// than one (RFC 9112 §3.2).
    #[error("{0}")]
    HostHeader(String),
    /// 421 `host`: the `Host` header (or an absolute-form request target) names a host
    /// this service does not answer for (DNS rebinding).
    #[error("{0}")]
    Host(String),
    /// 403 `origin`: the `Origin` header names a page this service does not answer.
    #[error("{0}")]
    Origin(String),
}

/// One list of refusals whose every variant is one RFC 9457 problem type: the edge's
/// ([`Refusal`]) and the handlers' (`api/error.rs`). An implementation gives each
/// variant's status, rule and title ([`ProblemType::kind`]) and the fields it names;
/// the accessors and the body are written once, here.
pub trait ProblemType: std::fmt::Display {
    /// `(HTTP status, stable rule name, title)` of this refusal's problem type.
    fn kind(&self) -> (StatusCode, &'static str, &'static str);

    /// The fields the problem names (`errors[]`); none unless a variant says.
    fn errors(&self) -> Vec<FieldError> {
        Vec::new()
    }

    /// The HTTP status.
    fn status(&self) -> StatusCode {
        self.kind().0
    }

    /// The stable rule name, the last part of the problem type.
    fn rule(&self) -> &'static str {
        self.kind().1
    }

    /// The problem type's title.
    fn title(&self) -> &'static str {
        self.kind().2
    }

    /// The RFC 9457 body: type `urn:fpgagdr:problem:<rule>`, the detail this
    /// refusal's message.
    fn problem(&self) -> Problem {
        Problem {
            kind: format!("urn:fpgagdr:problem:{}", self.rule()),
            title: self.title().into(),
            status: self.status().as_u16(),
            detail: self.to_string(),
            errors: self.errors(),
        }
    }
}

impl ProblemType for Refusal {
    fn kind(&self) -> (StatusCode, &'static str, &'static str) {
        use StatusCode as S;
        match self {
            Refusal::AuthToken { .. } => (S::UNAUTHORIZED, "auth-token", "API token required"),
            Refusal::BodySize(_) => (S::PAYLOAD_TOO_LARGE, "body-size", "Request body too large"),
            Refusal::Body(_) => (S::BAD_REQUEST, "body", "Request body unreadable"),
            Refusal::ContentType { .. } => (
                S::UNSUPPORTED_MEDIA_TYPE,
                "content-type",
                "Unsupported content type",
            ),
            Refusal::JsonSyntax(_) => (S::BAD_REQUEST, "json-syntax", "Malformed JSON"),
            Refusal::BodyTimeout(_) => {
                (S::REQUEST_TIMEOUT, "body-timeout", "Request body too slow")
            }
            Refusal::RateLimit { .. } => (S::TOO_MANY_REQUESTS, "rate-limit", "Too many changes"),
            Refusal::ConnectionLimit { .. } => (
                S::SERVICE_UNAVAILABLE,
                "connection-limit",
                "Too many connections",
            ),
            Refusal::StreamLimit { .. } => (
                S::SERVICE_UNAVAILABLE,
                "stream-limit",
                "Too many live streams",
            ),
            Refusal::RequestSyntax(_) => (S::BAD_REQUEST, "request-syntax", "Malformed request"),
            Refusal::HeaderSize(_) => (
                S::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "header-size",
                "Request head too large",
            ),
            Refusal::UriSize(_) => (S::URI_TOO_LONG, "uri-size", "Request target too long"),
            Refusal::HttpVersion(_) => (
                S::HTTP_VERSION_NOT_SUPPORTED,
                "http-version",
                "HTTP version not supported",
            ),
            Refusal::HeaderTimeout(_) => (
                S::REQUEST_TIMEOUT,
                "header-timeout",
                "Request head too slow",
            ),
            Refusal::HostHeader(_) => (
                S::BAD_REQUEST,
                "host-header",
                "Host header missing or repeated",
            ),
            Refusal::Host(_) => (S::MISDIRECTED_REQUEST, "host", "Host not served here"),
            Refusal::Origin(_) => (S::FORBIDDEN, "origin", "Origin not allowed"),
        }
    }
}

impl Refusal {
    /// `Retry-After` this refusal carries, s.
    pub fn retry_after_s(&self) -> Option<u64> {
        match self {
            Refusal::RateLimit { retry_after_s }
            | Refusal::ConnectionLimit { retry_after_s, .. }
            | Refusal::StreamLimit { retry_after_s, .. } => Some(*retry_after_s),
            _ => None,
        }
    }

    /// Whether the connection cannot carry another request after this answer
    /// (`Connection: close`): the body was not read, or the head did not parse. (A
    /// change refused for its token is answered before its body is read: hyper then
    /// closes the connection, and a client that was not told so may send its next
    /// request on it.)
    pub fn closes(&self) -> bool {
        matches!(
            self,
            Refusal::AuthToken { .. }
                | Refusal::RateLimit { .. }
                | Refusal::BodySize(_)
                | Refusal::BodyTimeout(_)
                | Refusal::RequestSyntax(_)
                | Refusal::HeaderSize(_)
                | Refusal::UriSize(_)
                | Refusal::HttpVersion(_)
                | Refusal::HeaderTimeout(_)
                | Refusal::HostHeader(_)
        )
    }
}
