//! What one client, and all clients together, may take of the service: connections,
//! live streams, the rate of changes, and how long a connection may sit idle or send a
//! request slowly. Every limit has a default and a command-line flag (`docs/api.md`,
//! "Limits").
//!
//! Owns: [`Limits`] (the settings), [`Client`] (who a peer is for the per-client limits:
//! its IPv4 /24 or IPv6 /64 by default, as one site's machines), [`Slots`] (the live
//! streams' places per client and in all, handed out as [`Slot`]s; when all are taken a
//! new stream takes the place of the one slowest to read: [`stream_slot`]; the
//! connection registry in `server.rs` keeps its own), [`Holding`] (an answer's body that
//! keeps something until it has been sent), [`WriteWait`] (since when a write to a
//! connection has waited for its client), and [`ChangeRate`] with its middleware
//! [`change_rate`] (429 to a client sending changes faster than the limit: governor's
//! GCRA, keyed by client). Must not: read requests beyond their method and the peer's
//! address.
//! Neighbours: `server.rs` (the accept loop) puts the peer's [`Client`] and its
//! connection's [`WriteWait`] into every request's extensions; `api/mod.rs` layers
//! [`ChangeRate`] and the stream slots.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::num::NonZeroU32;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

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
    /// 503. A client is an IPv4 /24 and an IPv6 /64 by default ([`Limits::client_v4_prefix`]).
    pub max_client_connections: usize,
    /// SSE streams open at once, all clients together (`--max-streams`). When all are
    /// taken, a new one takes the place of the stream slowest to read; 503 only when no
    /// place can be had (a limit of 0).
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
    /// Leading bits of an IPv4 address that make one client for the per-client limits
    /// (`--client-prefix-v4`, 0..=32; 24: one site's /24).
    pub client_v4_prefix: u8,
    /// Leading bits of an IPv6 address that make one client (`--client-prefix-v6`,
    /// 0..=128; 64: one host can hold a whole /64).
    pub client_v6_prefix: u8,
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
            client_v4_prefix: 24,
            client_v6_prefix: 64,
        }
    }
}

impl Limits {
    /// The client `ip` belongs to under these limits' prefixes.
    pub fn client(&self, ip: IpAddr) -> Client {
        Client::of(ip, self.client_v4_prefix, self.client_v6_prefix)
    }
}

/// Who sent a request, for the per-client limits: the network its address lies in (the
/// IPv4 /24 and the IPv6 /64 by default: the machines of one site, one host's /64).
/// IPv4-mapped IPv6 addresses are their IPv4 address. `Client::LOCAL` stands in where
/// no socket is (a router driven directly by tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Client {
    net: IpAddr,
    prefix: u8,
}

impl Client {
    /// The client of requests that did not come through a socket.
    pub const LOCAL: Client = Client {
        net: IpAddr::V4(Ipv4Addr::LOCALHOST),
        prefix: 32,
    };

    /// The client `ip` belongs to: its first `v4` bits (IPv4) or `v6` bits (IPv6).
    pub fn of(ip: IpAddr, v4: u8, v6: u8) -> Client {
        match ip.to_canonical() {
            IpAddr::V4(a) => {
                let prefix = v4.min(32);
                let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
                Client {
                    net: IpAddr::V4(Ipv4Addr::from(u32::from(a) & mask)),
                    prefix,
                }
            }
            IpAddr::V6(a) => {
                let prefix = v6.min(128);
                let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
                Client {
                    net: IpAddr::V6(Ipv6Addr::from(u128::from(a) & mask)),
                    prefix,
                }
            }
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
        match (self.net, self.prefix) {
            (IpAddr::V4(a), 32) => write!(f, "{a}"),
            (IpAddr::V6(a), 128) => write!(f, "{a}"),
            (net, prefix) => write!(f, "{net}/{prefix}"),
        }
    }
}

/// Nanoseconds of the HTTP edge's monotonic clock (since first use, never 0).
pub fn now_ns() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64 + 1
}

/// Since when a write to a connection has waited for its client to read ([`now_ns`]),
/// 0 while none waits; kept by the accept loop, put into every request's extensions.
#[derive(Debug, Clone, Default)]
pub struct WriteWait(pub Arc<AtomicU64>);

impl WriteWait {
    /// How long the write waiting now has waited (zero when none waits).
    pub fn waited(&self, now: u64) -> Duration {
        match self.0.load(Ordering::Relaxed) {
            0 => Duration::ZERO,
            since => Duration::from_nanos(now.saturating_sub(since)),
        }
    }
}

/// A wait shorter than this is a write in progress, not a slow reader.
pub const SLOW_READER: Duration = Duration::from_millis(250);

/// A stream's place, as the table sees it.
#[derive(Debug)]
struct Place {
    client: Client,
    /// When the place was taken, [`now_ns`].
    opened: u64,
    writes: WriteWait,
    eviction: Arc<Eviction>,
}

/// How a place taken from a stream reaches its body.
#[derive(Debug, Default)]
struct Eviction {
    evicted: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Eviction {
    fn evict(&self) {
        self.evicted.store(true, Ordering::Release);
        if let Some(w) = self.waker.lock().expect("eviction poisoned").take() {
            w.wake();
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    next: u64,
    places: HashMap<u64, Place>,
    per_client: HashMap<Client, usize>,
}

impl Counts {
    fn remove(&mut self, id: u64) -> Option<Place> {
        let p = self.places.remove(&id)?;
        if let Some(n) = self.per_client.get_mut(&p.client) {
            *n -= 1;
            if *n == 0 {
                self.per_client.remove(&p.client);
            }
        }
        Some(p)
    }

    /// The place to give up for a new stream: the one whose client has waited longest
    /// to read what was written to it (a wait under [`SLOW_READER`] counts as none),
    /// then the one of the client holding the most places, then the oldest.
    fn victim(&self, now: u64) -> Option<u64> {
        self.places
            .iter()
            .max_by_key(|(id, p)| {
                let waited = p.writes.waited(now);
                let slow = if waited >= SLOW_READER {
                    waited
                } else {
                    Duration::ZERO
                };
                (
                    slow,
                    self.per_client[&p.client],
                    Reverse(p.opened),
                    Reverse(**id),
                )
            })
            .map(|(id, _)| *id)
    }
}

/// Counted places: at most `max` in all and `per_client` for one client; when all are
/// taken, a new one takes the place of the slowest reader's (see [`Slots::take`]).
/// Cheap to clone (shared).
#[derive(Debug, Clone)]
pub struct Slots {
    max: usize,
    per_client: usize,
    counts: Arc<Mutex<Counts>>,
}

/// A place taken from [`Slots`]; dropping it gives it back (unless it was taken away).
#[derive(Debug)]
pub struct Slot {
    id: u64,
    counts: Arc<Mutex<Counts>>,
    eviction: Arc<Eviction>,
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

    /// A place for `client`, whose connection's writes wait as `writes` says. Refused
    /// when `client` holds its `per_client` already; when all `max` are taken, the
    /// place of the stream slowest to read (then of the client holding most, then the
    /// oldest) is taken away from it (its body ends) and given to this one.
    pub fn take(&self, client: Client, writes: WriteWait) -> Result<Slot, Full> {
        self.take_at(client, writes, now_ns())
    }

    /// [`Slots::take`] at `now` ([`now_ns`]).
    fn take_at(&self, client: Client, writes: WriteWait, now: u64) -> Result<Slot, Full> {
        let mut c = self.counts.lock().expect("slots poisoned");
        let mine = c.per_client.get(&client).copied().unwrap_or(0);
        if mine >= self.per_client {
            return Err(Full::Client(self.per_client));
        }
        if c.places.len() >= self.max {
            let victim = c.victim(now).and_then(|id| c.remove(id));
            match victim {
                Some(p) => {
                    tracing::info!(
                        "live stream of {} (waited {:.1} s to read) gives its place to one of {client}",
                        p.client,
                        p.writes.waited(now).as_secs_f64()
                    );
                    p.eviction.evict();
                }
                None => return Err(Full::All(self.max)),
            }
        }
        c.next += 1;
        let id = c.next;
        let eviction = Arc::new(Eviction::default());
        c.places.insert(
            id,
            Place {
                client,
                opened: now,
                writes,
                eviction: eviction.clone(),
            },
        );
        *c.per_client.entry(client).or_insert(0) += 1;
        Ok(Slot {
            id,
            counts: self.counts.clone(),
            eviction,
        })
    }

    /// Places taken now.
    pub fn taken(&self) -> usize {
        self.counts.lock().expect("slots poisoned").places.len()
    }
}

impl Slot {
    /// Whether its place was taken away for another stream.
    pub fn evicted(&self) -> bool {
        self.eviction.evicted.load(Ordering::Acquire)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.counts.lock().expect("slots poisoned").remove(self.id);
    }
}

/// A live stream's body: the stream, ending when its place is taken away for another.
pub struct Streamed {
    inner: Body,
    slot: Slot,
}

impl Streamed {
    /// `inner`, in `slot`.
    pub fn body(inner: Body, slot: Slot) -> Body {
        Body::new(Streamed { inner, slot })
    }
}

impl http_body::Body for Streamed {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        if self.slot.evicted() {
            return Poll::Ready(None);
        }
        {
            let mut w = self.slot.eviction.waker.lock().expect("eviction poisoned");
            if !w.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *w = Some(cx.waker().clone());
            }
        }
        // Evicted between the check and the waker: the wake went nowhere, so look again.
        if self.slot.evicted() {
            return Poll::Ready(None);
        }
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.slot.evicted() || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
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

/// Middleware around the SSE endpoints: a place for the client's stream, kept until the
/// stream ends or its place is taken by a newer one when all are taken (the slowest
/// reader's), or 503 `stream-limit` with `Retry-After` when the client holds its own
/// limit.
pub async fn stream_slot(State(streams): State<Streams>, req: Request, next: Next) -> Response {
    let writes = req
        .extensions()
        .get::<WriteWait>()
        .cloned()
        .unwrap_or_default();
    match streams.slots.take(Client::of_request(&req), writes) {
        Ok(slot) => next.run(req).await.map(|b| Streamed::body(b, slot)),
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

    fn client(ip: &str) -> Client {
        Limits::default().client(ip.parse().unwrap())
    }

    #[test]
    fn a_client_is_its_ipv4_slash_24_or_ipv6_slash_64_and_a_mapped_ipv4_is_the_ipv4() {
        assert_eq!(
            client("2001:db8:1:2:aaaa::1"),
            client("2001:db8:1:2:bbbb::9")
        );
        assert_ne!(client("2001:db8:1:2:aaaa::1"), client("2001:db8:1:3::1"));
        assert_eq!(
            client("2001:db8:1:2:aaaa::1").to_string(),
            "2001:db8:1:2::/64"
        );
        assert_eq!(client("10.1.2.3"), client("10.1.2.200"));
        assert_ne!(client("10.1.2.3"), client("10.1.3.3"));
        assert_eq!(client("10.1.2.3").to_string(), "10.1.2.0/24");
        assert_eq!(client("::ffff:192.0.2.7"), client("192.0.2.99"));
        // Configurable: one address per client, one /48 per client.
        let a = |ip: &str| Client::of(ip.parse().unwrap(), 32, 48);
        assert_ne!(a("10.1.2.3"), a("10.1.2.4"));
        assert_eq!(a("10.1.2.3").to_string(), "10.1.2.3");
        assert_eq!(a("2001:db8:1:2::1"), a("2001:db8:1:3::1"));
        assert_eq!(
            Client::of("10.1.2.3".parse().unwrap(), 0, 0).to_string(),
            "0.0.0.0/0"
        );
    }

    /// The clock's reading in these tests: a minute after it started.
    const NOW: u64 = 60_000_000_000;

    /// A connection whose writes have waited `ms` at [`NOW`] (0: none waits).
    fn waiting(ms: u64) -> WriteWait {
        let w = WriteWait::default();
        if ms > 0 {
            w.0.store(NOW - ms * 1_000_000, Ordering::Relaxed);
        }
        w
    }

    #[test]
    fn slots_count_per_client_and_in_all_and_come_back_when_dropped() {
        let s = Slots::new(3, 2);
        let (a, b) = (client("10.0.0.1"), client("10.0.1.1"));
        let a1 = s.take(a, waiting(0)).unwrap();
        let _a2 = s.take(a, waiting(0)).unwrap();
        // Another address of the same /24 is the same client.
        assert_eq!(
            s.take(client("10.0.0.2"), waiting(0)).unwrap_err(),
            Full::Client(2)
        );
        let _b1 = s.take(b, waiting(0)).unwrap();
        drop(a1);
        assert_eq!(s.taken(), 2);
        let _b2 = s.take(b, waiting(0)).unwrap();
        assert_eq!(s.taken(), 3);
        assert_eq!(
            Slots::new(0, 2).take(a, waiting(0)).unwrap_err(),
            Full::All(0)
        );
    }

    #[test]
    fn when_all_are_taken_the_slowest_reader_gives_its_place() {
        let s = Slots::new(4, 3);
        let (a, b, c) = (client("10.0.0.1"), client("10.0.1.1"), client("10.0.2.1"));
        let a1 = s.take_at(a, waiting(0), NOW).unwrap();
        let a2 = s.take_at(a, waiting(100), NOW).unwrap(); // a write in progress: not slow
        let b1 = s.take_at(b, waiting(3_000), NOW).unwrap(); // its client stopped reading
        let b2 = s.take_at(b, waiting(0), NOW).unwrap();
        let c1 = s.take_at(c, waiting(0), NOW).unwrap();
        assert!(b1.evicted(), "the slowest reader's stream goes first");
        assert!(!a1.evicted() && !a2.evicted() && !b2.evicted());
        assert_eq!(s.taken(), 4);
        // All reading: the client holding most gives its oldest.
        let _c2 = s.take_at(c, waiting(0), NOW).unwrap();
        assert!(a1.evicted(), "client a held two: its oldest goes");
        assert!(!a2.evicted() && !b2.evicted() && !c1.evicted());
        // An evicted slot dropped later gives back nothing twice.
        drop(b1);
        drop(a1);
        assert_eq!(s.taken(), 4);
    }

    #[test]
    fn changes_past_the_burst_wait_for_the_rate() {
        let limits = Limits {
            change_rate: 2,
            change_burst: 3,
            ..Limits::default()
        };
        let r = ChangeRate::new(&limits);
        let a = client("10.0.0.1");
        for _ in 0..3 {
            r.check(a).unwrap();
        }
        let wait = r.check(a).unwrap_err();
        assert!(wait <= Duration::from_millis(500), "{wait:?}");
        // Another client has its own bucket.
        r.check(client("10.0.1.1")).unwrap();
    }
}
