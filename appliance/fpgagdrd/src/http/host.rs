//! Which names the service answers for: a page on another site that makes its name
//! resolve to the appliance (DNS rebinding) sends its own name as `Host`, and is
//! refused; a page of another origin sends its `Origin`, and is refused.
//!
//! Owns: [`HostPolicy`] and [`check`], the middleware. Allowed without configuration,
//! so that a freshly flashed device is never refused: IP literals (v4, `[v6]`),
//! `localhost`, the machine's host name and `<hostname>.local` (mDNS), case-insensitive,
//! any port, a trailing dot ignored. More names with `--allow-host NAME` (repeatable;
//! `*` allows any). The name asked for is an absolute-form request target's
//! (`GET http://name/...`, RFC 9112 §3.2.2), else `Host`'s; an HTTP/1.1 request carries
//! exactly one `Host` (RFC 9112 §3.2; HTTP/1.0 may carry none). An `Origin` is allowed
//! when its host is and its port is the one asked for (RFC 6454: another port is
//! another origin; no port on either side is the scheme's default); `null` is not.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{Version, header};
use axum::middleware::Next;
use axum::response::Response;

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

/// The port of an authority as written (`None` without one).
fn port_of(authority: &str) -> Option<u16> {
    let a = authority.trim();
    let tail = match a.strip_prefix('[') {
        Some(v6) => v6.split_once(']')?.1,
        None => a.rfind(':').map_or("", |i| &a[i..]),
    };
    tail.strip_prefix(':')?.parse().ok()
}

/// Whether an `Origin` of `scheme` and `authority` is at the port asked for (`asked`:
/// the port the request's authority names, `None` when it names none, i.e. the default
/// port of the scheme the client used): the same port, or none on either side (an
/// origin's explicit default port counts as none).
fn same_port(scheme: &str, authority: &str, asked: Option<u16>) -> bool {
    let default = match scheme {
        "http" | "ws" => Some(80),
        "https" | "wss" => Some(443),
        _ => None,
    };
    let given = port_of(authority);
    match asked {
        Some(p) => given.or(default) == Some(p),
        None => given.is_none() || given == default,
    }
}

/// Middleware: 400 `host-header` for an HTTP/1.1 request without exactly one `Host`,
/// 421 `host` for a name (absolute-form target, else `Host`) this service does not answer
/// for, 403 `origin` for an `Origin` whose host it does not answer for or whose port is
/// not the one asked for (or `null`); all before anything else is looked at.
pub async fn check(
    State(policy): State<HostPolicy>,
    req: Request,
    next: Next,
) -> Result<Response, Refusal> {
    let name = hostname();
    let hosts = req.headers().get_all(header::HOST).iter().count();
    if hosts > 1 {
        return Err(Refusal::HostHeader(format!(
            "rule host-header: the request carries {hosts} Host headers; it must carry one \
             (RFC 9112 §3.2)"
        )));
    }
    if hosts == 0 && req.version() >= Version::HTTP_11 && req.uri().authority().is_none() {
        return Err(Refusal::HostHeader(
            "rule host-header: an HTTP/1.1 request must carry a Host header (RFC 9112 §3.2)".into(),
        ));
    }
    // An absolute-form target names the host asked for; Host is then ignored.
    let (asked, from) = match req.uri().authority() {
        Some(a) => (Some(a.as_str().to_string()), "the request target"),
        None => (
            req.headers()
                .get(header::HOST)
                .map(|h| h.to_str().unwrap_or("").to_string()),
            "Host",
        ),
    };
    if let Some(host) = &asked
        && !policy.allows(host, &name)
    {
        return Err(Refusal::Host(format!(
            "rule host: this service does not answer for {host:?} ({from}); use its \
             address, localhost, {name} or {name}.local, or add the name with --allow-host"
        )));
    }
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let (scheme, authority) = origin
            .split_once("://")
            .map(|(s, rest)| (s, rest.trim_end_matches('/')))
            .unwrap_or(("", ""));
        let port_ok = asked
            .as_deref()
            .is_none_or(|a| same_port(&scheme.to_ascii_lowercase(), authority, port_of(a)));
        if !policy.allows(authority, &name) || !port_ok {
            return Err(Refusal::Origin(format!(
                "rule origin: requests from pages of {origin:?} are not answered; open the \
                 dashboard from the appliance itself"
            )));
        }
    }
    Ok(next.run(req).await)
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
    fn an_origin_is_at_the_port_asked_for() {
        assert_eq!(port_of("10.0.0.1:8080"), Some(8080));
        assert_eq!(port_of("[fe80::1]:80"), Some(80));
        assert_eq!(port_of("[fe80::1]"), None);
        assert_eq!(port_of("jetson"), None);
        assert!(same_port("http", "10.0.0.1:8080", Some(8080)));
        assert!(!same_port("http", "10.0.0.1:8081", Some(8080)));
        assert!(!same_port("http", "10.0.0.1", Some(8080)));
        assert!(same_port("http", "10.0.0.1", Some(80)));
        assert!(same_port("http", "10.0.0.1", None));
        assert!(same_port("https", "10.0.0.1:443", None));
        assert!(!same_port("http", "10.0.0.1:8080", None));
    }

    #[test]
    fn more_names_are_configured() {
        let p = HostPolicy::new(&["Appliance.Example.org".into()]);
        assert!(p.allows("appliance.example.org:8080", "jetson"));
        assert!(!p.allows("other.example.org", "jetson"));
        assert!(HostPolicy::new(&["*".into()]).allows("anything.example", "jetson"));
    }
}
