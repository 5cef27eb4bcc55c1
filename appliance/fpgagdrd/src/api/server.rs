//! The service's own accept loop over hyper (issue 18): `axum::serve` has no connection
//! limit and no way to time out a request head, so this loop owns the connections.
//!
//! Owns: [`serve`] (accept, admit or refuse, one task per connection), the registry of
//! open connections with what each is doing, the sweeper that closes connections that
//! sit idle, trickle a request head, or do not read their answers, and
//! [`fit_descriptors`] (the connection limit against `RLIMIT_NOFILE`). Must not: look
//! into requests (that is the router's job); every request gets the peer's
//! [`Client`] and `ConnectInfo` in its extensions.
//!
//! Admission: a client over `--max-client-connections` is refused; when all
//! `--max-connections` are open, the connection that has been idle longest (no request
//! in flight) is closed to make room, and only when none is idle is the new one
//! refused. A refused connection is accepted, answered `503` problem
//! `connection-limit` with `Retry-After`, and closed — never left waiting in the
//! backlog. The answer is written without waiting; at most [`REFUSALS`] refused
//! connections linger (to read what the client sent, so the answer is not lost to a
//! reset), the rest are closed at once.
//!
//! Timeouts, checked by the sweeper every [`SWEEP_EVERY`]: idle (no request and no byte
//! of one) longer than `--idle-timeout-s`; a request head begun and not finished within
//! `--header-timeout-s`; an answer the client has not read for `--send-timeout-s`.
//! Hyper's own header-read timeout (idle + header) backs them up.

use std::collections::HashMap;
use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, Semaphore, watch};
use tower_service::Service;

use super::error::{ApiError, Full};
use super::limits::{Client, Holding, Limits};

/// How often the sweeper looks at every connection.
pub const SWEEP_EVERY: Duration = Duration::from_millis(250);
/// Refused connections that may linger at once to read the client's request before
/// they close (the rest are closed at once).
pub const REFUSALS: usize = 32;
/// File descriptors kept for everything but connections: the listener, the model and
/// frame files, telemetry, D-Bus, the OTA spool, the notify socket, the runtime.
pub const FD_RESERVE: u64 = 96;
/// Fewest connections the service starts with.
pub const MIN_CONNECTIONS: usize = 16;

fn now_ns() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64 + 1
}

/// What one connection is doing; written by its task, read by the sweeper.
#[derive(Debug, Default)]
struct ConnState {
    /// Requests whose answer has not been sent whole (0 or 1 with HTTP/1.1).
    in_flight: AtomicU32,
    /// When it last became idle (accepted, or an answer finished), ns.
    idle_since: AtomicU64,
    /// When the first byte of a request head arrived while idle, ns; 0 when none.
    head_since: AtomicU64,
    /// Since when a write has waited for the client to read, ns; 0 when none waits.
    blocked_since: AtomicU64,
}

struct Entry {
    client: Client,
    state: Arc<ConnState>,
    close: Arc<Notify>,
}

#[derive(Default)]
struct Table {
    next: u64,
    conns: HashMap<u64, Entry>,
    per_client: HashMap<Client, usize>,
}

impl Table {
    fn remove(&mut self, id: u64) -> Option<Entry> {
        let e = self.conns.remove(&id)?;
        if let Some(n) = self.per_client.get_mut(&e.client) {
            *n -= 1;
            if *n == 0 {
                self.per_client.remove(&e.client);
            }
        }
        Some(e)
    }
}

/// The open connections.
#[derive(Clone)]
struct Registry {
    limits: Arc<Limits>,
    table: Arc<Mutex<Table>>,
    /// Signalled when the table empties (shutdown waits for it).
    emptied: Arc<Notify>,
}

/// A connection's place in the registry; dropping it frees the place.
struct Admitted {
    id: u64,
    state: Arc<ConnState>,
    close: Arc<Notify>,
    registry: Registry,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut t = self.registry.table.lock().expect("connections poisoned");
        t.remove(self.id);
        if t.conns.is_empty() {
            self.registry.emptied.notify_waiters();
        }
    }
}

impl Registry {
    /// A place for a connection from `client`, closing the longest-idle one when all are
    /// taken; `Err` names the limit when there is none.
    fn admit(&self, client: Client) -> Result<Admitted, Full> {
        let mut t = self.table.lock().expect("connections poisoned");
        if t.per_client.get(&client).copied().unwrap_or(0) >= self.limits.max_client_connections {
            return Err(Full::Client(self.limits.max_client_connections));
        }
        if t.conns.len() >= self.limits.max_connections {
            let victim = t
                .conns
                .iter()
                .filter(|(_, e)| e.state.in_flight.load(Ordering::Acquire) == 0)
                .min_by_key(|(_, e)| e.state.idle_since.load(Ordering::Relaxed))
                .map(|(id, _)| *id);
            match victim.and_then(|id| t.remove(id)) {
                Some(e) => e.close.notify_one(),
                None => return Err(Full::All(self.limits.max_connections)),
            }
        }
        t.next += 1;
        let id = t.next;
        let state = Arc::new(ConnState::default());
        state.idle_since.store(now_ns(), Ordering::Relaxed);
        let close = Arc::new(Notify::new());
        t.conns.insert(
            id,
            Entry {
                client,
                state: state.clone(),
                close: close.clone(),
            },
        );
        *t.per_client.entry(client).or_insert(0) += 1;
        Ok(Admitted {
            id,
            state,
            close,
            registry: self.clone(),
        })
    }

    /// Closes the connections past a timeout.
    fn sweep(&self) {
        let now = now_ns();
        let l = &self.limits;
        // A connection may note a time after `now` was read (it does not take the
        // lock): saturating, so that counts as no time (it used to overflow, panic
        // with the lock held in a debug build and wrap to "over" in a release one).
        let over = |since: u64, limit: Duration| {
            since != 0 && now.saturating_sub(since) > limit.as_nanos() as u64
        };
        let mut t = self.table.lock().expect("connections poisoned");
        let due: Vec<u64> = t
            .conns
            .iter()
            .filter(|(_, e)| {
                let s = &e.state;
                let idle = s.in_flight.load(Ordering::Acquire) == 0;
                let head = s.head_since.load(Ordering::Relaxed);
                // Between requests: a head begun is held to the header timeout, no
                // head at all to the idle timeout.
                let waited_out = if head != 0 {
                    over(head, l.header_timeout)
                } else {
                    over(s.idle_since.load(Ordering::Relaxed), l.idle_timeout)
                };
                (idle && waited_out)
                    || over(s.blocked_since.load(Ordering::Relaxed), l.send_timeout)
            })
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            if let Some(e) = t.remove(id) {
                e.close.notify_one();
            }
        }
        if t.conns.is_empty() {
            self.emptied.notify_waiters();
        }
    }

    fn open(&self) -> usize {
        self.table.lock().expect("connections poisoned").conns.len()
    }
}

/// A request in flight on a connection; dropped when its answer has been sent whole
/// (or abandoned), which makes the connection idle again.
struct InFlight(Arc<ConnState>);

impl InFlight {
    fn begin(state: &Arc<ConnState>) -> InFlight {
        state.head_since.store(0, Ordering::Relaxed);
        state.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(state.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.idle_since.store(now_ns(), Ordering::Relaxed);
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The socket, noting for the sweeper when a request head starts and when a write
/// waits for the client.
struct Tracked {
    inner: TcpStream,
    state: Arc<ConnState>,
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            let s = &self.state;
            if s.in_flight.load(Ordering::Acquire) == 0 && s.head_since.load(Ordering::Relaxed) == 0
            {
                s.head_since.store(now_ns(), Ordering::Relaxed);
            }
        }
        r
    }
}

impl Tracked {
    fn note_write<T>(&self, r: &Poll<io::Result<T>>) {
        let b = &self.state.blocked_since;
        match r {
            Poll::Pending => {
                if b.load(Ordering::Relaxed) == 0 {
                    b.store(now_ns(), Ordering::Relaxed);
                }
            }
            Poll::Ready(_) => b.store(0, Ordering::Relaxed),
        }
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.note_write(&r);
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.note_write(&r);
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// What [`serve`] reports of its connections (for logs and the load benchmark).
#[derive(Clone)]
pub struct ServerHandle {
    registry: Registry,
}

impl std::fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerHandle")
            .field("open_connections", &self.open_connections())
            .finish()
    }
}

impl ServerHandle {
    /// Connections open now.
    pub fn open_connections(&self) -> usize {
        self.registry.open()
    }
}

/// Fits [`Limits::max_connections`] to the file descriptors the process may open:
/// raises the soft `RLIMIT_NOFILE` to the hard one, then lowers the connection limit
/// when the descriptors would not cover it, [`REFUSALS`] and [`FD_RESERVE`]. Returns
/// the soft limit in force. Errors (a sentence naming `rule fd-limit`) when fewer than
/// [`MIN_CONNECTIONS`] would remain.
pub fn fit_descriptors(limits: &mut Limits) -> Result<u64, String> {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) =
        getrlimit(Resource::RLIMIT_NOFILE).map_err(|e| format!("reading RLIMIT_NOFILE: {e}"))?;
    let soft = if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        hard
    } else {
        soft
    };
    let spare = soft.saturating_sub(FD_RESERVE + REFUSALS as u64);
    if spare < MIN_CONNECTIONS as u64 {
        return Err(format!(
            "rule fd-limit: RLIMIT_NOFILE is {soft}: it leaves room for {spare} connections \
             (at least {MIN_CONNECTIONS}; {} descriptors are kept for the rest); raise LimitNOFILE",
            FD_RESERVE + REFUSALS as u64
        ));
    }
    if (limits.max_connections as u64) > spare {
        tracing::warn!(
            "--max-connections {} does not fit RLIMIT_NOFILE {soft}: using {spare}",
            limits.max_connections
        );
        limits.max_connections = spare as usize;
    }
    Ok(soft)
}

/// Answers a refused connection 503 `connection-limit` (without waiting on the client)
/// and closes it; lingers a moment to read the request when a [`REFUSALS`] place is free.
fn refuse(mut stream: TcpStream, full: Full, retry_after_s: u64, lingering: &Arc<Semaphore>) {
    let problem = ApiError::ConnectionLimit {
        full,
        retry_after_s,
    }
    .problem();
    let body = serde_json::to_string(&problem).expect("a problem serialises");
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: {}\r\nretry-after: {retry_after_s}\r\n\
         x-content-type-options: nosniff\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        super::error::PROBLEM,
        body.len()
    );
    let Ok(place) = lingering.clone().try_acquire_owned() else {
        let _ = stream.try_write(answer.as_bytes());
        return;
    };
    tokio::spawn(async move {
        let _place = place;
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            if stream.write_all(answer.as_bytes()).await.is_ok() {
                let _ = stream.shutdown().await;
                let mut sink = [0u8; 4096];
                let mut read = 0;
                while read < 64 * 1024 {
                    match stream.read(&mut sink).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => read += n,
                    }
                }
            }
        })
        .await;
    });
}

/// Serves `app` on `listener` under `limits` until `stop` turns true, then waits for
/// the open connections to finish (the caller bounds that wait). The returned handle
/// is given before the first accept.
pub fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    stop: watch::Receiver<bool>,
) -> (ServerHandle, impl Future<Output = ()> + Send) {
    let registry = Registry {
        limits: Arc::new(limits),
        table: Arc::default(),
        emptied: Arc::new(Notify::new()),
    };
    let handle = ServerHandle {
        registry: registry.clone(),
    };
    let run = accept_loop(listener, app, registry, stop);
    (handle, run)
}

async fn accept_loop(
    listener: TcpListener,
    app: Router,
    registry: Registry,
    mut stop: watch::Receiver<bool>,
) {
    let lingering = Arc::new(Semaphore::new(REFUSALS));
    let sweeper = {
        let registry = registry.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(SWEEP_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                registry.sweep();
            }
        })
    };
    let mut last_warning: Option<Instant> = None;
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = stopped(&mut stop) => break,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of descriptors or memory for a moment (fit_descriptors keeps room,
                // but other processes share the system's): back off instead of spinning.
                if last_warning.is_none_or(|t| t.elapsed() > Duration::from_secs(10)) {
                    tracing::warn!("accepting a connection: {e}");
                    last_warning = Some(Instant::now());
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let client = Client::of(peer.ip());
        match registry.admit(client) {
            Ok(place) => {
                let _ = stream.set_nodelay(true);
                tokio::spawn(connection(
                    stream,
                    peer,
                    client,
                    place,
                    app.clone(),
                    registry.limits.clone(),
                    stop.clone(),
                ));
            }
            Err(full) => {
                tracing::debug!("refused a connection from {client}: {full}");
                refuse(stream, full, registry.limits.retry_after_s, &lingering);
            }
        }
    }
    drop(listener);
    // Open connections end their current answer and close (stop is seen by each);
    // the caller bounds this wait.
    loop {
        let emptied = registry.emptied.notified();
        if registry.open() == 0 {
            break;
        }
        let _ = tokio::time::timeout(Duration::from_millis(100), emptied).await;
    }
    sweeper.abort();
}

/// Resolves once `stop` turns true (or its sender is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    client: Client,
    place: Admitted,
    app: Router,
    limits: Arc<Limits>,
    mut stop: watch::Receiver<bool>,
) {
    let state = place.state.clone();
    let io = TokioIo::new(Tracked {
        inner: stream,
        state: state.clone(),
    });
    let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        let busy = InFlight::begin(&state);
        req.extensions_mut().insert(client);
        req.extensions_mut().insert(ConnectInfo(peer));
        let mut app = app.clone();
        async move {
            let resp = match app.call(req.map(Body::new)).await {
                Ok(r) => r,
                Err(never) => match never {},
            };
            Ok::<_, Infallible>(resp.map(|b| Holding::body(b, busy)))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .keep_alive(true)
        .header_read_timeout(limits.idle_timeout + limits.header_timeout);
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => {
            if let Err(e) = r {
                tracing::debug!("connection from {peer}: {e}");
            }
        }
        () = place.close.notified() => {}
        () = stopped(&mut stop) => {
            conn.as_mut().graceful_shutdown();
            tokio::select! {
                _ = conn.as_mut() => {}
                () = place.close.notified() => {}
            }
        }
    }
}
