//! What one client, and all clients together, may take of the service: connections,
//! SSE streams, the rate of changes, and how long a connection may sit idle or send a
//! request slowly (issue 18). Every limit has a default and a command-line flag
//! (`docs/api.md`, "Limits").
//!
//! Owns: [`Limits`] (the settings), [`Client`] (who a peer is, for per-client limits),
//! [`Slots`] (counted places per client and in all, handed out as RAII [`Slot`]s: the
//! SSE streams use them through [`stream_slot`]; the connection registry in
//! `server.rs` keeps its own), [`Holding`] (an answer's body that keeps such a place
//! until it has been sent), and [`ChangeRate`] with its middleware [`change_rate`],
//! which answers 429 to a client sending changes faster than the limit (governor's
//! GCRA, keyed by client). Must not: read requests beyond their method and the peer's
//! address.
//! Neighbours: `server.rs` (the accept loop) puts the peer's [`Client`] into every
//! request's extensions; `api/mod.rs` layers [`ChangeRate`] and the stream slots.

use std::collections::HashMap;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, DefaultClock};
use governor::{Quota, RateLimiter};

use super::refusal::{Full, Refusal};

/// The service's limits. [`Limits::default`] holds the documented defaults.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Connections open at once, all clients together (`--max-connections`). When all
    /// are taken, the connection idle longest is closed to make room; when none is
    /// idle, the new one is answered 503.
    pub max_connections: usize,
    /// Connections open at once from one client (`--max-client-connections`); over it:
    /// 503. A client is an IPv4 address or an IPv6 /64.
    pub max_client_connections: usize,
    /// SSE streams open at once, all clients together (`--max-streams`); over it: 503.
    pub max_streams: usize,
    /// SSE streams open at once from one client (`--max-client-streams`); over it: 503.
    pub max_client_streams: usize,
    /// How long a connection may wait with no request and no byte of one
    /// (`--idle-timeout-s`): after accept and between keep-alive requests.
    pub idle_timeout: Duration,
    /// How long a request's head may take from its first byte to its end
    /// (`--header-timeout-s`).
    pub header_timeout: Duration,
    /// How long a request body of the JSON endpoints may take to arrive whole
    /// (`--body-timeout-s`); over it: 408.
    pub body_timeout: Duration,
    /// How long an answer may wait for the client to read it (`--send-timeout-s`): a
    /// connection whose writes make no progress this long is closed.
    pub send_timeout: Duration,
    /// Changes (requests other than `GET`/`HEAD`/`OPTIONS`) per second from one client,
    /// sustained (`--change-rate`); over it: 429.
    pub change_rate: u32,
    /// Changes one client may send in a burst above the rate (`--change-burst`).
    pub change_burst: u32,
    /// `Retry-After` of a 503 for connections and streams, s.
    pub retry_after_s: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 1024,
            max_client_connections: 64,
            max_streams: 128,
            max_client_streams: 16,
            idle_timeout: Duration::from_secs(15),
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            send_timeout: Duration::from_secs(60),
            change_rate: 10,
            change_burst: 30,
            retry_after_s: 5,
        }
    }
}

/// Who sent a request, for the per-client limits: the IPv4 address, or the /64 an
/// IPv6 address lies in (one host can hold a whole /64). IPv4-mapped IPv6 addresses are
/// their IPv4 address. `Client::LOCAL` stands in where no socket is (a router driven
/// directly by tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Client(IpAddr);

impl Client {
    /// The client of requests that did not come through a socket.
    pub const LOCAL: Client = Client(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));

    /// The client `ip` belongs to.
    pub fn of(ip: IpAddr) -> Client {
        match ip.to_canonical() {
            IpAddr::V6(v6) => {
                let s = v6.segments();
                Client(IpAddr::V6(std::net::Ipv6Addr::new(
                    s[0], s[1], s[2], s[3], 0, 0, 0, 0,
                )))
            }
            v4 => Client(v4),
        }
    }

    /// The client of `req` (put there by the accept loop), or [`Client::LOCAL`].
    pub fn of_request<B>(req: &axum::http::Request<B>) -> Client {
        req.extensions()
            .get::<Client>()
            .copied()
            .unwrap_or(Client::LOCAL)
    }
}

impl std::fmt::Display for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            IpAddr::V6(v6) => write!(f, "{v6}/64"),
            v4 => write!(f, "{v4}"),
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_client: HashMap<Client, usize>,
}

/// Counted places: at most `max` in all and `per_client` for one client. Cheap to
/// clone (shared).
#[derive(Debug, Clone)]
pub struct Slots {
    max: usize,
    per_client: usize,
    counts: Arc<Mutex<Counts>>,
}

/// A place taken from [`Slots`]; dropping it gives it back.
#[derive(Debug)]
pub struct Slot {
    client: Client,
    counts: Arc<Mutex<Counts>>,
}

impl Slots {
    /// `max` places in all, `per_client` for one client.
    pub fn new(max: usize, per_client: usize) -> Slots {
        Slots {
            max,
            per_client,
            counts: Arc::default(),
        }
    }

    /// A place for `client`, or why there is none.
    pub fn take(&self, client: Client) -> Result<Slot, Full> {
        let mut c = self.counts.lock().expect("slots poisoned");
        let mine = c.per_client.get(&client).copied().unwrap_or(0);
        if mine >= self.per_client {
            return Err(Full::Client(self.per_client));
        }
        if c.total >= self.max {
            return Err(Full::All(self.max));
        }
        c.total += 1;
        *c.per_client.entry(client).or_insert(0) += 1;
        Ok(Slot {
            client,
            counts: self.counts.clone(),
        })
    }

    /// Places taken now.
    pub fn taken(&self) -> usize {
        self.counts.lock().expect("slots poisoned").total
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut c = self.counts.lock().expect("slots poisoned");
        c.total -= 1;
        if let Some(n) = c.per_client.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                c.per_client.remove(&self.client);
            }
        }
    }
}

/// An answer's body that holds something (a request in flight, a stream's place) until
/// it has been sent whole or dropped.
pub struct Holding<T> {
    inner: Body,
    _held: T,
}

impl<T: Send + Unpin + 'static> Holding<T> {
    /// `inner`, holding `held` until it is done.
    pub fn body(inner: Body, held: T) -> Body {
        Body::new(Holding { inner, _held: held })
    }
}

impl<T: Unpin> http_body::Body for Holding<T> {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The SSE streams' places and the `Retry-After` of a refusal.
#[derive(Debug, Clone)]
pub struct Streams {
    /// `--max-streams`, `--max-client-streams`.
    pub slots: Slots,
    /// `Retry-After` of a 503, s.
    pub retry_after_s: u64,
}

impl Streams {
    /// The places `limits` allows.
    pub fn new(limits: &Limits) -> Streams {
        Streams {
            slots: Slots::new(limits.max_streams, limits.max_client_streams),
            retry_after_s: limits.retry_after_s,
        }
    }
}

/// Middleware around the SSE endpoint: a place for the client's stream, kept until the
/// stream ends, or 503 `stream-limit` with `Retry-After`.
pub async fn stream_slot(State(streams): State<Streams>, req: Request, next: Next) -> Response {
    match streams.slots.take(Client::of_request(&req)) {
        Ok(slot) => next.run(req).await.map(|b| Holding::body(b, slot)),
        Err(full) => Refusal::StreamLimit {
            full,
            retry_after_s: streams.retry_after_s,
        }
        .into_response(),
    }
}

type Keyed = RateLimiter<
    Client,
    governor::state::keyed::DefaultKeyedStateStore<Client>,
    DefaultClock,
    governor::middleware::NoOpMiddleware,
>;

/// The per-client rate of changes (GCRA, governor): [`Limits::change_rate`] per
/// second sustained, [`Limits::change_burst`] at once.
#[derive(Clone)]
pub struct ChangeRate {
    limiter: Arc<Keyed>,
    clock: DefaultClock,
}

impl std::fmt::Debug for ChangeRate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChangeRate").finish_non_exhaustive()
    }
}

impl ChangeRate {
    /// The limiter for `limits` (a rate or burst of 0 counts as 1).
    pub fn new(limits: &Limits) -> ChangeRate {
        let one = NonZeroU32::MIN;
        let quota = Quota::per_second(NonZeroU32::new(limits.change_rate).unwrap_or(one))
            .allow_burst(NonZeroU32::new(limits.change_burst).unwrap_or(one));
        let clock = DefaultClock::default();
        ChangeRate {
            limiter: Arc::new(RateLimiter::dashmap_with_clock(quota, clock.clone())),
            clock,
        }
    }

    /// `Ok` when `client` may make a change now; else how long until it may.
    pub fn check(&self, client: Client) -> Result<(), Duration> {
        self.limiter
            .check_key(&client)
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }

    /// Forgets clients whose bucket is full again (bounded memory; called now and then).
    pub fn forget_idle(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }
}

/// Middleware: a change (not `GET`/`HEAD`/`OPTIONS`) over the client's rate gets 429
/// `rate-limit` with `Retry-After`, before anything else is looked at (token, body).
pub async fn change_rate(State(rate): State<ChangeRate>, req: Request, next: Next) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return next.run(req).await;
    }
    match rate.check(Client::of_request(&req)) {
        Ok(()) => next.run(req).await,
        Err(wait) => Refusal::RateLimit {
            retry_after_s: wait.as_secs_f64().ceil().max(1.0) as u64,
        }
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ipv6_client_is_its_slash_64_and_a_mapped_ipv4_is_the_ipv4() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(Client::of(a), Client::of(b));
        assert_ne!(Client::of(a), Client::of(c));
        assert_eq!(Client::of(a).to_string(), "2001:db8:1:2::/64");
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(Client::of(mapped), Client::of("192.0.2.7".parse().unwrap()));
    }

    #[test]
    fn slots_count_per_client_and_in_all_and_come_back_when_dropped() {
        let s = Slots::new(3, 2);
        let a = Client::of("10.0.0.1".parse().unwrap());
        let b = Client::of("10.0.0.2".parse().unwrap());
        let a1 = s.take(a).unwrap();
        let _a2 = s.take(a).unwrap();
        assert_eq!(s.take(a).unwrap_err(), Full::Client(2));
        let _b1 = s.take(b).unwrap();
        assert_eq!(s.take(b).unwrap_err(), Full::All(3));
        drop(a1);
        assert_eq!(s.taken(), 2);
        let _b2 = s.take(b).unwrap();
    }

    #[test]
    fn changes_past_the_burst_wait_for_the_rate() {
        let limits = Limits {
            change_rate: 2,
            change_burst: 3,
            ..Limits::default()
        };
        let r = ChangeRate::new(&limits);
        let a = Client::of("10.0.0.1".parse().unwrap());
        for _ in 0..3 {
            r.check(a).unwrap();
        }
        let wait = r.check(a).unwrap_err();
        assert!(wait <= Duration::from_millis(500), "{wait:?}");
        // Another client has its own bucket.
        r.check(Client::of("10.0.0.2".parse().unwrap())).unwrap();
    }
}
