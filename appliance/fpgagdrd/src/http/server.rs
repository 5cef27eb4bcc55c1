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
//!
//! Protocol errors as problems: a head cut off by the header timeout is answered
//! `408` problem `header-timeout` before the close (when nothing else is waiting to be
//! written); hyper's own bodiless answer to a head that does not parse (`400`, `431`,
//! `414`) is replaced on its way to the socket by the problem `wire.rs` names
//! (`request-syntax`, `http-version` as `505`, `header-size`, `uri-size`), see
//! `Tracked`. An idle connection closed by the sweeper gets no answer (it asked for
//! nothing), nor does one whose client does not read.

use std::collections::HashMap;
use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
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

use super::limits::{Client, Holding, Limits, WriteWait, now_ns};
use super::refusal::{Full, Refusal};
use super::wire;

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

/// What one connection is doing; written by its task, read by the sweeper.
#[derive(Debug, Default)]
struct ConnState {
    /// Requests whose answer has not been sent whole (0 or 1 with HTTP/1.1).
    in_flight: AtomicU32,
    /// When it last became idle (accepted, or an answer finished), ns.
    idle_since: AtomicU64,
    /// When the first byte of a request head arrived while idle, ns; 0 when none.
    head_since: AtomicU64,
    /// Since when a write has waited for the client to read, ns; 0 when none waits
    /// (shared with the requests, for the live streams' places: `limits.rs`).
    blocked_since: WriteWait,
    /// Set by the sweeper when it closes the connection for a head past the header
    /// timeout (the connection then answers `408`).
    head_timed_out: AtomicBool,
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
                    let late = over(head, l.header_timeout);
                    if idle && late {
                        s.head_timed_out.store(true, Ordering::Relaxed);
                    }
                    late
                } else {
                    over(s.idle_since.load(Ordering::Relaxed), l.idle_timeout)
                };
                (idle && waited_out)
                    || over(s.blocked_since.0.load(Ordering::Relaxed), l.send_timeout)
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
/// waits for the client, and answering a head that does not parse with a problem.
///
/// Hyper answers such a head itself (`400`, `414`, `431`, no body) without calling the
/// service and then closes; those bytes pass through here. A write made while no
/// request is in flight whose bytes end with such a bare head ([`wire::hyper_answer`])
/// is hyper's: what precedes the head (the end of an earlier answer) goes out as it
/// is, then the problem [`wire::protocol_error`] names from the status and the first
/// [`wire::HEAD_KEPT`] bytes of the head goes out instead of the head, and hyper is
/// told its head was written.
struct Tracked {
    inner: TcpStream,
    state: Arc<ConnState>,
    /// The first bytes of the request head being read (cleared when one begins).
    head: Vec<u8>,
    /// The problem written in place of hyper's bare answer, and how much of it is out.
    answer: Option<(Vec<u8>, usize)>,
}

impl Tracked {
    fn new(inner: TcpStream, state: Arc<ConnState>) -> Tracked {
        Tracked {
            inner,
            state,
            head: Vec::new(),
            answer: None,
        }
    }

    /// Writes what is left of the problem answer; `Ready(Ok(()))` once all of it is out.
    fn poll_answer(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some((bytes, done)) = self.answer.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        while *done < bytes.len() {
            let r = Pin::new(&mut self.inner).poll_write(cx, &bytes[*done..]);
            let b = &self.state.blocked_since.0;
            match r {
                Poll::Pending => {
                    if b.load(Ordering::Relaxed) == 0 {
                        b.store(now_ns(), Ordering::Relaxed);
                    }
                    return Poll::Pending;
                }
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => *done += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            }
            b.store(0, Ordering::Relaxed);
        }
        Poll::Ready(Ok(()))
    }

    /// `Some` when `buf` is (or ends with) hyper's own bare answer: the poll result to
    /// give hyper for `buf`. `None`: write `buf` as it is.
    fn poll_replace(
        &mut self,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Option<Poll<io::Result<usize>>> {
        if self.answer.is_none() {
            if self.state.in_flight.load(Ordering::Acquire) != 0 {
                return None;
            }
            let (start, status) = wire::hyper_answer(buf)?;
            if start > 0 {
                // The end of an earlier answer first; hyper hands over the rest again.
                let r = Pin::new(&mut self.inner).poll_write(cx, &buf[..start]);
                self.note_write(&r);
                return Some(r);
            }
            let problem = wire::protocol_error(status, &self.head);
            tracing::debug!("a request head did not parse: {problem}");
            self.answer = Some((wire::answer(&problem, None), 0));
        }
        Some(match self.poll_answer(cx) {
            Poll::Ready(Ok(())) => Poll::Ready(Ok(buf.len())),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        })
    }
}

impl AsyncRead for Tracked {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            let s = &this.state;
            if s.in_flight.load(Ordering::Acquire) == 0 {
                if s.head_since.load(Ordering::Relaxed) == 0 {
                    s.head_since.store(now_ns(), Ordering::Relaxed);
                    this.head.clear();
                }
                // The first bytes of the head, to name what in it did not parse.
                let room = wire::HEAD_KEPT.saturating_sub(this.head.len());
                let new = &buf.filled()[before..];
                this.head.extend_from_slice(&new[..new.len().min(room)]);
            }
        }
        r
    }
}

impl Tracked {
    fn note_write<T>(&self, r: &Poll<io::Result<T>>) {
        let b = &self.state.blocked_since.0;
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
        if let Some(r) = self.poll_replace(cx, buf) {
            return r;
        }
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.note_write(&r);
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        // Hyper's bare answer comes while no request is in flight and ends with an
        // empty line: only then is it worth flattening the slices to look.
        let last = bufs.iter().rev().find(|b| !b.is_empty());
        if self.answer.is_some()
            || (self.state.in_flight.load(Ordering::Acquire) == 0
                && last.is_some_and(|b| b.ends_with(b"\r\n\r\n")))
        {
            let flat: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
            if let Some(r) = self.poll_replace(cx, &flat) {
                return r;
            }
        }
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

/// Writes `answer` and closes `stream`. With a [`REFUSALS`] place free it waits (at most
/// 1 s) for the answer to go out and reads what the client still sends, so that the
/// close does not reset the connection before the client read the answer; without one
/// it writes what the socket takes at once and closes.
async fn answer_and_close(mut stream: TcpStream, answer: Vec<u8>, lingering: &Arc<Semaphore>) {
    let Ok(_place) = lingering.clone().try_acquire_owned() else {
        let _ = stream.try_write(&answer);
        return;
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        if stream.write_all(&answer).await.is_ok() {
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
}

/// Answers a refused connection 503 `connection-limit` (without waiting on the client)
/// and closes it ([`answer_and_close`], on a task of its own).
fn refuse(stream: TcpStream, full: Full, retry_after_s: u64, lingering: &Arc<Semaphore>) {
    let answer = wire::answer(
        &Refusal::ConnectionLimit {
            full,
            retry_after_s,
        },
        Some(retry_after_s),
    );
    let lingering = lingering.clone();
    tokio::spawn(async move { answer_and_close(stream, answer, &lingering).await });
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
        let client = registry.limits.client(peer.ip());
        match registry.admit(client) {
            Ok(place) => {
                let _ = stream.set_nodelay(true);
                tokio::spawn(connection(
                    stream,
                    peer,
                    client,
                    place,
                    app.clone(),
                    stop.clone(),
                    lingering.clone(),
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
    mut stop: watch::Receiver<bool>,
    lingering: Arc<Semaphore>,
) {
    let limits = place.registry.limits.clone();
    let state = place.state.clone();
    let io = TokioIo::new(Tracked::new(stream, state.clone()));
    let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        let busy = InFlight::begin(&state);
        req.extensions_mut().insert(client);
        req.extensions_mut().insert(state.blocked_since.clone());
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
        .header_read_timeout(limits.idle_timeout + limits.header_timeout)
        .max_headers(wire::MAX_HEAD_FIELDS)
        .max_header_size(wire::MAX_HEAD_BYTES);
    let mut conn = builder.serve_connection(io, service);
    let mut head_late = false;
    tokio::select! {
        r = &mut conn => {
            if let Err(e) = r {
                tracing::debug!("connection from {peer}: {e}");
                // Hyper's own header-read timeout, when it comes before the sweeper's.
                head_late = e.is_timeout();
            }
        }
        () = place.close.notified() => {}
        () = stopped(&mut stop) => {
            Pin::new(&mut conn).graceful_shutdown();
            tokio::select! {
                _ = &mut conn => {}
                () = place.close.notified() => {}
            }
        }
    }
    let state = place.state.clone();
    head_late |= state.head_timed_out.load(Ordering::Relaxed);
    // A head begun and cut off by the header timeout is told why, unless an earlier
    // answer is still waiting for the client to read it (the 408 would land inside it).
    if head_late
        && state.head_since.load(Ordering::Relaxed) != 0
        && state.in_flight.load(Ordering::Acquire) == 0
        && state.blocked_since.0.load(Ordering::Relaxed) == 0
    {
        let stream = conn.into_parts().io.into_inner().inner;
        let answer = wire::answer(
            &Refusal::HeaderTimeout(format!(
                "rule header-timeout: the request head did not arrive whole within {} s \
                 (--header-timeout-s)",
                limits.header_timeout.as_secs_f64()
            )),
            None,
        );
        drop(place);
        answer_and_close(stream, answer, &lingering).await;
    }
}
