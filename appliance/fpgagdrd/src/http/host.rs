//! Which names the service answers for (issue 18, DESIGN §10 "Host check"): a page on
//! another site that makes its name resolve to the appliance (DNS rebinding) sends its
//! own name as `Host`, and is refused; a page of another site sends its `Origin`, and
//! is refused.
//!
//! Owns: [`HostPolicy`] and [`check`], the middleware. Allowed without configuration,
//! so that a freshly flashed device is never refused: IP literals (v4, `[v6]`),
//! `localhost`, the machine's host name and `<hostname>.local` (mDNS), case-insensitive,
//! any port, a trailing dot ignored. More names with `--allow-host NAME` (repeatable;
//! `*` allows any). A request without `Host` (HTTP/1.0) passes; an `Origin` of `null`
//! does not.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::refusal::Refusal;

/// The names allowed beside the defaults.
#[derive(Debug, Clone, Default)]
pub struct HostPolicy {
    extra: Arc<Vec<String>>,
}

impl HostPolicy {
    /// The defaults and `extra` (names as given to `--allow-host`; `*` allows any).
    pub fn new(extra: &[String]) -> HostPolicy {
        HostPolicy {
            extra: Arc::new(extra.iter().map(|h| normal(h)).collect()),
        }
    }

    /// Whether `authority` (a `Host` value: a name or address, maybe with `:port`) is
    /// one this service answers for; `hostname` is the machine's.
    pub fn allows(&self, authority: &str, hostname: &str) -> bool {
        let Some(name) = host_part(authority) else {
            return false;
        };
        if name.parse::<Ipv4Addr>().is_ok()
            || name
                .strip_prefix('[')
                .and_then(|n| n.strip_suffix(']'))
                .is_some_and(|n| n.parse::<Ipv6Addr>().is_ok())
        {
            return true;
        }
        let name = normal(name);
        let hostname = normal(hostname);
        name == "localhost"
            || (!hostname.is_empty() && (name == hostname || name == format!("{hostname}.local")))
            || self.extra.iter().any(|e| e == "*" || *e == name)
    }
}

/// Lower case, without a trailing dot.
fn normal(name: &str) -> String {
    name.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// The name or address of an authority, without its port (`[v6]` keeps its brackets).
fn host_part(authority: &str) -> Option<&str> {
    let a = authority.trim();
    if a.is_empty() || a.contains(['/', '@', ' ']) {
        return None;
    }
    if a.starts_with('[') {
        let end = a.find(']')?;
        let rest = &a[end + 1..];
        return (rest.is_empty() || rest.strip_prefix(':').is_some_and(is_port))
            .then_some(&a[..=end]);
    }
    match a.rsplit_once(':') {
        Some((name, port)) if is_port(port) => Some(name),
        Some(_) => None,
        None => Some(a),
    }
}

fn is_port(p: &str) -> bool {
    !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit())
}

/// The machine's host name now (it may change while the service runs).
fn hostname() -> String {
    nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Middleware: 421 `host` for a `Host` this service does not answer for, 403 `origin`
/// for an `Origin` whose host it does not answer for (or `null`); both before anything
/// else is looked at.
pub async fn check(State(policy): State<HostPolicy>, req: Request, next: Next) -> Response {
    let name = hostname();
    if let Some(host) = req.headers().get(header::HOST) {
        let host = host.to_str().unwrap_or("");
        if !policy.allows(host, &name) {
            return Refusal::Host(format!(
                "rule host: this service does not answer for {host:?}; use its address, \
                 localhost, {name} or {name}.local, or add the name with --allow-host"
            ))
            .into_response();
        }
    }
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let authority = origin
            .split_once("://")
            .map(|(_, rest)| rest.trim_end_matches('/'))
            .unwrap_or("");
        if !policy.allows(authority, &name) {
            return Refusal::Origin(format!(
                "rule origin: requests from pages of {origin:?} are not answered; open the \
                 dashboard from the appliance itself"
            ))
            .into_response();
        }
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_policy_takes_addresses_localhost_and_the_host_name() {
        let p = HostPolicy::default();
        for ok in [
            "10.1.2.3",
            "10.1.2.3:8080",
            "[::1]",
            "[fe80::1]:80",
            "localhost",
            "LocalHost:8080",
            "jetson",
            "Jetson.local.",
            "jetson.local:8080",
        ] {
            assert!(p.allows(ok, "jetson"), "{ok}");
        }
        for bad in [
            "evil.example",
            "jetson.evil.example",
            "localhost.evil.example",
            "10.1.2.3.evil.example",
            "jetson:port",
            "[::1",
            "",
            "user@jetson",
        ] {
            assert!(!p.allows(bad, "jetson"), "{bad}");
        }
        // No host name known: only addresses and localhost.
        assert!(!p.allows(".local", ""));
    }

    #[test]
    fn more_names_are_configured() {
        let p = HostPolicy::new(&["Appliance.Example.org".into()]);
        assert!(p.allows("appliance.example.org:8080", "jetson"));
        assert!(!p.allows("other.example.org", "jetson"));
        assert!(HostPolicy::new(&["*".into()]).allows("anything.example", "jetson"));
    }
}
