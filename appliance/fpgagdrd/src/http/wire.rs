//! Answers the accept loop writes itself, on the wire, as problem+json.
//!
//! Owns: [`answer`] (an [`Refusal`] as a whole HTTP/1.1 response with
//! `Connection: close`), [`hyper_answer`] (finding hyper's own bodiless answer to a
//! request that did not parse, in what hyper hands the socket) and [`protocol_error`]
//! (the problem that replaces it, named from hyper's status and the head's first
//! bytes). Must not: hold state; `server.rs` decides when these apply.
//!
//! Why hyper's answer is found in its writes: hyper 1.x answers a request head that
//! does not parse (`400`, `414`, `431`; `proto/h1/role.rs`, `Server::on_error`) by
//! queueing a bare head (`content-length: 0`) without calling the service, then closes
//! the connection; it has no hook to shape that answer. It does so only between
//! requests, so it is the last thing written on the connection and its bytes are the
//! end of a write; the service itself never answers those statuses without a problem
//! body, so a write ending in such a head while no request is in flight is hyper's.

use axum::http::StatusCode;

use super::refusal::{PROBLEM, ProblemType, Refusal};

/// Most header fields a request head may carry (hyper's `max_headers`).
pub const MAX_HEAD_FIELDS: usize = 100;
/// Most bytes a request head may take, request line included (hyper's
/// `max_header_size`).
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Bytes of a request head kept to name what in it did not parse.
pub const HEAD_KEPT: usize = 1024;

/// `e` as a whole HTTP/1.1 response: status line, `Content-Type: application/problem+json`,
/// `X-Content-Type-Options: nosniff`, `retry-after` when given, `Content-Length`,
/// `Connection: close`, and the problem body.
pub fn answer(e: &Refusal, retry_after_s: Option<u64>) -> Vec<u8> {
    let status = e.status();
    let body = serde_json::to_string(&e.problem()).expect("a problem serialises");
    let retry = retry_after_s
        .map(|s| format!("retry-after: {s}\r\n"))
        .unwrap_or_default();
    format!(
        "HTTP/1.1 {} {}\r\ncontent-type: {PROBLEM}\r\n{retry}x-content-type-options: nosniff\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    )
    .into_bytes()
}

/// Where hyper's own answer to an unparsable head starts in `buf` (what hyper asks the
/// socket to write), and its status: `Some` only when `buf` ends with a complete bare
/// response head (`HTTP/1.x 400|414|431`, `content-length: 0`, no other fields than
/// `date` and `connection`).
pub fn hyper_answer(buf: &[u8]) -> Option<(usize, StatusCode)> {
    if !buf.ends_with(b"\r\n\r\n") {
        return None;
    }
    // A bare head is short; look for its status line in the last bytes only.
    let from = buf.len().saturating_sub(256);
    let start = from + rfind(&buf[from..], b"HTTP/1.")?;
    let mut fields = [httparse::EMPTY_HEADER; 4];
    let mut resp = httparse::Response::new(&mut fields);
    match resp.parse(&buf[start..]) {
        Ok(httparse::Status::Complete(n)) if start + n == buf.len() => {}
        _ => return None,
    }
    let status = StatusCode::from_u16(resp.code?).ok()?;
    if !matches!(status.as_u16(), 400 | 414 | 431) {
        return None;
    }
    let mut bare = false;
    for f in resp.headers.iter() {
        if f.name.eq_ignore_ascii_case("content-length") {
            bare = f.value == b"0";
        } else if !f.name.eq_ignore_ascii_case("date") && !f.name.eq_ignore_ascii_case("connection")
        {
            return None;
        }
    }
    bare.then_some((start, status))
}

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

/// The problem for hyper's `status` answer to a head that began with `head` (at most
/// [`HEAD_KEPT`] bytes; the start of the unparsable head when it was read after the
/// last request, possibly earlier requests on the connection otherwise).
pub fn protocol_error(status: StatusCode, head: &[u8]) -> Refusal {
    match status {
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => Refusal::HeaderSize(format!(
            "rule header-size: the request head is over {MAX_HEAD_BYTES} bytes or \
             {MAX_HEAD_FIELDS} header fields"
        )),
        StatusCode::URI_TOO_LONG => Refusal::UriSize(
            "rule uri-size: the request target is longer than this server reads".into(),
        ),
        _ => syntax_error(head),
    }
}

fn syntax_error(head: &[u8]) -> Refusal {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEAD_FIELDS];
    let mut req = httparse::Request::new(&mut fields);
    let why = match req.parse(head) {
        Err(httparse::Error::Version) => {
            if let Some(v) = version_token(head)
                && shaped_like_a_version(v)
            {
                return Refusal::HttpVersion(format!(
                    "rule http-version: {} is not served here: send HTTP/1.1 (or HTTP/1.0)",
                    String::from_utf8_lossy(v)
                ));
            }
            "the HTTP version is not of the form HTTP/1.1".to_string()
        }
        Err(httparse::Error::Token) => {
            "the request line's method or target holds a character that is not allowed (invalid token)"
                .to_string()
        }
        Err(httparse::Error::HeaderName) => "a header field's name is malformed (invalid header name)".into(),
        Err(httparse::Error::HeaderValue) => {
            "a header field's value holds a character that is not allowed (invalid header value)"
                .into()
        }
        Err(e) => format!("{e}"),
        // What broke is past the bytes kept, or in what the fields say (two
        // Content-Length values, a Transfer-Encoding that is not chunked last).
        Ok(_) => "a header field is malformed, or Content-Length and Transfer-Encoding do not \
                  frame a body"
            .into(),
    };
    Refusal::RequestSyntax(format!(
        "rule request-syntax: the request head does not parse as HTTP/1.1 (RFC 9112): {why}"
    ))
}

/// The third token of the request line, if the line has one.
fn version_token(head: &[u8]) -> Option<&[u8]> {
    let line = head.split(|&b| b == b'\n').next()?;
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line.split(|&b| b == b' ').filter(|t| !t.is_empty()).nth(2)
}

/// `HTTP/<digit>.<digit>` or `HTTP/<digit>` (RFC 9112 §2.3).
fn shaped_like_a_version(v: &[u8]) -> bool {
    match v.strip_prefix(b"HTTP/") {
        Some([a]) => a.is_ascii_digit(),
        Some([a, b'.', b]) => a.is_ascii_digit() && b.is_ascii_digit(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hyper_s_bare_answer_is_found_at_the_end_only() {
        let bare = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\ndate: Wed, 02 Dec 2026 01:00:00 GMT\r\n\r\n";
        assert_eq!(hyper_answer(bare), Some((0, StatusCode::BAD_REQUEST)));
        let mut after = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}".to_vec();
        let at = after.len();
        after.extend_from_slice(bare);
        assert_eq!(hyper_answer(&after), Some((at, StatusCode::BAD_REQUEST)));
        // A problem of the service's own has a body; a 200 is not hyper's.
        assert_eq!(hyper_answer(&after[..at]), None);
        let ok = b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(hyper_answer(ok), None);
        let other = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nx-a: b\r\n\r\n";
        assert_eq!(hyper_answer(other), None);
    }

    #[test]
    fn a_head_names_what_in_it_did_not_parse() {
        let e = protocol_error(StatusCode::BAD_REQUEST, b"GET / HTTP/2.0\r\nHost: a\r\n");
        assert_eq!((e.status().as_u16(), e.rule()), (505, "http-version"));
        assert!(e.to_string().contains("HTTP/2.0"), "{e}");
        let e = protocol_error(StatusCode::BAD_REQUEST, b"GET / HTTX/1.1\r\n");
        assert_eq!(e.rule(), "request-syntax");
        let e = protocol_error(StatusCode::BAD_REQUEST, b"GET / HTTP/1.1\r\nHost a\r\n\r\n");
        assert!(e.to_string().contains("header name"), "{e}");
        let e = protocol_error(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, b"");
        assert_eq!((e.status().as_u16(), e.rule()), (431, "header-size"));
    }

    #[test]
    fn an_answer_is_whole_and_closes() {
        let a = answer(
            &Refusal::HeaderTimeout("rule header-timeout: x".into()),
            None,
        );
        let a = String::from_utf8(a).unwrap();
        assert!(a.starts_with("HTTP/1.1 408 Request Timeout\r\n"), "{a}");
        assert!(a.contains("\r\nconnection: close\r\n"), "{a}");
        let (head, body) = a.split_once("\r\n\r\n").unwrap();
        assert!(
            head.contains(&format!("content-length: {}", body.len())),
            "{a}"
        );
    }
}
