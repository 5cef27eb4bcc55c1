//! systemd service notifications (`sd_notify(3)`): `READY=1` once the API listens,
//! `WATCHDOG=1` while the service makes progress, a one-line `STATUS=` for
//! `systemctl status`, `STOPPING=1` when shutdown starts, and `EXTEND_TIMEOUT_USEC=`
//! while a TensorRT engine is built before the service is ready.
//!
//! Owns: [`Notifier`] and the watchdog task ([`Notifier::spawn_watchdog`]), the rule it
//! applies ([`verdict`]), and the start-timeout extension ([`Notifier::extend_start`]).
//! The protocol is one datagram on `$NOTIFY_SOCKET` (`sd-notify`'s message format); the
//! socket it is sent from is opened once at start (with every descriptor taken by
//! connections, a per-call `sd_notify` could not open one, and `WATCHDOG=1` stopped), so
//! a notification never needs a new descriptor.
//! Where `$NOTIFY_SOCKET` is unset (not started by systemd) nothing here does anything.
//! Must not: ping the watchdog for a running pipeline whose capture or inference thread
//! has stopped going round its loop; a hung thread, not only a dead process, gets the
//! service restarted (the unit's `WatchdogSec=` with `Restart=on-failure`).
//! Neighbours: reads `pipeline::Shared` (state, heartbeats, counters); `main.rs` calls it.

use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::sync::Arc;
use std::time::Duration;

use sd_notify::NotifyState;

use crate::pipeline::{Shared, State, Thread, now_ns};

/// Default for `--stall-limit-s`: how long a pipeline thread may go without a turn of
/// its loop before the service counts itself hung, seconds.
pub const DEFAULT_STALL_LIMIT_S: f64 = 30.0;

/// Pause between two `STATUS=` updates when systemd set no watchdog.
const STATUS_EVERY: Duration = Duration::from_secs(5);

/// How often the start timeout is extended while a TensorRT engine builds, and by how
/// much each time (systemd's `EXTEND_TIMEOUT_USEC`: the service must send again within
/// that time, so a build that hangs still times out).
pub const EXTEND_EVERY: Duration = Duration::from_secs(20);
/// See [`EXTEND_EVERY`].
pub const EXTEND_BY: Duration = Duration::from_secs(60);
/// The longest a TensorRT engine build may hold the service's start, by extensions of its
/// start timeout (an EfficientNet-sized model builds in minutes on an Orin, large ones in tens).
pub const DEFAULT_ENGINE_BUILD_LIMIT: Duration = Duration::from_secs(1800);

/// Why the watchdog is withheld: `thread` made no progress for `stalled_ns`, over
/// `limit_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    /// The thread that has gone longest without a turn of its loop.
    pub thread: Thread,
    /// Since its last turn, ns.
    pub stalled_ns: u64,
    /// The limit it passed, ns: `--stall-limit-s`, or twice `card.timeout_ms` when that
    /// is longer (a C2H transfer may legitimately take that long).
    pub limit_ns: u64,
}

impl std::fmt::Display for Stall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "hung: the {} thread made no progress for {:.1} s (limit {:.1} s, --stall-limit-s)",
            self.thread.as_str(),
            self.stalled_ns as f64 / 1e9,
            self.limit_ns as f64 / 1e9
        )
    }
}

/// The watchdog's rule. A pipeline that is stopped or failed is healthy for this
/// purpose (it stopped on purpose, or its error is on the dashboard, and a restart would
/// not mend the config that broke it). A running one is healthy while its stalest thread
/// (`oldest`: thread and ns since its last loop turn) is within `stall_limit`, or within
/// `floor_ns` (twice `card.timeout_ms`) when that is longer.
pub fn verdict(
    state: State,
    oldest: (Thread, u64),
    floor_ns: u64,
    stall_limit: Duration,
) -> Result<(), Stall> {
    let limit_ns = (stall_limit.as_nanos() as u64).max(floor_ns);
    match state {
        State::Running if oldest.1 > limit_ns => Err(Stall {
            thread: oldest.0,
            stalled_ns: oldest.1,
            limit_ns,
        }),
        _ => Ok(()),
    }
}

/// Where notifications go: the socket opened at start and systemd's address.
#[derive(Debug)]
struct Channel {
    socket: UnixDatagram,
    to: SocketAddr,
}

/// Sends notifications to systemd, or nothing when not run by it.
#[derive(Debug, Clone)]
pub struct Notifier {
    channel: Option<Arc<Channel>>,
    /// `WATCHDOG_USEC` when systemd set a watchdog for this process.
    watchdog: Option<Duration>,
}

/// systemd's notify address from `$NOTIFY_SOCKET`: a path, or `@name` for an abstract
/// socket (`sd_notify(3)`).
fn notify_address(value: &std::ffi::OsStr) -> std::io::Result<SocketAddr> {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::ffi::OsStrExt;
    match value.as_bytes().strip_prefix(b"@") {
        Some(name) => SocketAddr::from_abstract_name(name),
        None => SocketAddr::from_pathname(std::path::Path::new(value)),
    }
}

impl Notifier {
    /// Reads `$NOTIFY_SOCKET`, `$WATCHDOG_USEC` and `$WATCHDOG_PID`
    /// (`sd_watchdog_enabled(3)`), and opens the socket every notification is sent from.
    pub fn from_env() -> Self {
        let channel = std::env::var_os("NOTIFY_SOCKET").and_then(|v| {
            let opened = notify_address(&v).and_then(|to| {
                // Non-blocking: the watchdog task runs on the HTTP runtime, and a
                // receiver that does not read (a full queue: net.unix.max_dgram_qlen
                // is 10 by default) must cost a dropped notification, never a
                // blocked worker thread (found by the load benchmark: the accept
                // loop stalled behind it).
                let socket = UnixDatagram::unbound()?;
                socket.set_nonblocking(true)?;
                Ok(Channel { socket, to })
            });
            match opened {
                Ok(c) => Some(Arc::new(c)),
                Err(e) => {
                    tracing::warn!("NOTIFY_SOCKET {v:?}: {e}; no notifications to systemd");
                    None
                }
            }
        });
        Notifier {
            channel,
            watchdog: sd_notify::watchdog_enabled().filter(|d| !d.is_zero()),
        }
    }

    fn send(&self, states: &[NotifyState]) {
        let Some(c) = &self.channel else {
            return;
        };
        let msg: String = states.iter().map(|s| format!("{s}\n")).collect();
        if let Err(e) = c.socket.send_to_addr(msg.as_bytes(), &c.to) {
            tracing::warn!("sd_notify: {e}");
        }
    }

    /// `READY=1` with `status`: the API listens and the pipeline was started (or its
    /// failure recorded). Orders units declared `After=fpgagdrd.service` (the mark-good
    /// check) behind this point.
    pub fn ready(&self, status: &str) {
        self.send(&[NotifyState::Ready, NotifyState::Status(status)]);
    }

    /// Until the returned guard is dropped (the pipeline prepared, before `READY=1`):
    /// every [`EXTEND_EVERY`], while `fpgagdr_infer::engine_build()` reports a TensorRT
    /// engine build, `EXTEND_TIMEOUT_USEC=` [`EXTEND_BY`] with a `STATUS=` naming the
    /// model and the time so far, for at most `limit` of building; after that the unit's
    /// `TimeoutStartSec=` runs out as it would. Nothing when not run by systemd.
    pub fn extend_start(&self, limit: Duration) -> Option<Extending> {
        self.channel.as_ref()?;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let this = self.clone();
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("fpgagdr-extend".into())
            .spawn(move || {
                let tick = Duration::from_millis(250);
                let mut next = std::time::Instant::now();
                while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                    if std::time::Instant::now() >= next {
                        next += EXTEND_EVERY;
                        if let Some(line) = extension(fpgagdr_infer::engine_build(), limit) {
                            let usec = u32::try_from(EXTEND_BY.as_micros()).unwrap_or(u32::MAX);
                            tracing::info!("{line}: start timeout extended by {EXTEND_BY:?}");
                            this.send(&[
                                NotifyState::ExtendTimeoutUsec(usec),
                                NotifyState::Status(&line),
                            ]);
                        }
                    }
                    std::thread::sleep(tick);
                }
            })
            .ok()?;
        Some(Extending {
            stop,
            thread: Some(thread),
        })
    }

    /// `STOPPING=1`: shutdown has started.
    pub fn stopping(&self) {
        self.send(&[NotifyState::Stopping, NotifyState::Status("stopping")]);
    }

    /// Starts the watchdog task on the current tokio runtime (so a runtime that stops
    /// running its timers stops the pings too). Every `WATCHDOG_USEC`/2 it applies
    /// [`verdict`] and sends `WATCHDOG=1` with a fresh `STATUS=`, or only the `STATUS=`
    /// naming the stalled thread; without a watchdog it refreshes `STATUS=` every 5 s.
    /// Does nothing (and returns `None`) when not run by systemd; abort the task before
    /// [`Notifier::stopping`].
    pub fn spawn_watchdog(
        &self,
        shared: Arc<Shared>,
        stall_limit: Duration,
    ) -> Option<tokio::task::JoinHandle<()>> {
        self.channel.as_ref()?;
        let every = self.watchdog.map_or(STATUS_EVERY, |d| d / 2);
        match self.watchdog {
            Some(w) => tracing::info!(
                "watchdog: WATCHDOG=1 every {every:?} (WatchdogSec {w:?}) while the pipeline's \
                 threads turn within {stall_limit:?}, or twice card.timeout_ms when longer"
            ),
            None => tracing::info!("systemd notifications on; no watchdog set (WatchdogSec)"),
        }
        let this = self.clone();
        Some(tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut last = (now_ns(), shared.counters.read().frames_inferred);
            let mut stalled = false;
            loop {
                tick.tick().await;
                let now = now_ns();
                let state = shared.state();
                let judged = verdict(
                    state,
                    shared.beats.oldest(now),
                    shared.beats.floor_ns(),
                    stall_limit,
                );
                let inferred = shared.counters.read().frames_inferred;
                let fps =
                    (inferred - last.1) as f64 * 1e9 / now.saturating_sub(last.0).max(1) as f64;
                last = (now, inferred);
                match judged {
                    Ok(()) => {
                        if stalled {
                            tracing::info!("watchdog: the pipeline makes progress again");
                            stalled = false;
                        }
                        let status = status_line(state, fps, shared.fault());
                        let ping = [NotifyState::Watchdog, NotifyState::Status(&status)];
                        this.send(if this.watchdog.is_some() {
                            &ping
                        } else {
                            &ping[1..]
                        });
                    }
                    Err(stall) => {
                        let status = stall.to_string();
                        if !stalled {
                            tracing::error!("watchdog: {status}; WATCHDOG=1 withheld");
                            stalled = true;
                        }
                        this.send(&[NotifyState::Status(&status)]);
                    }
                }
            }
        }))
    }
}

/// Stops [`Notifier::extend_start`] when dropped.
#[derive(Debug)]
pub struct Extending {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Extending {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The rule of [`Notifier::extend_start`]: the `STATUS=` line to send with an extension
/// while `build` lasts and has lasted less than `limit`; `None` otherwise.
pub fn extension(build: Option<fpgagdr_infer::EngineBuild>, limit: Duration) -> Option<String> {
    let b = build?;
    let so_far = b.since.elapsed();
    (so_far < limit).then(|| {
        format!(
            "building the TensorRT engine of model sha256 {} ({:.0} s so far, at most {:.0} s; \
             cached in {} for the next start)",
            b.model,
            so_far.as_secs_f64(),
            limit.as_secs_f64(),
            b.dir.display()
        )
    })
}

/// The `STATUS=` line of a healthy service: pipeline state and frames/s, or its fault.
fn status_line(state: State, fps: f64, fault: Option<String>) -> String {
    match (state, fault) {
        (State::Running, _) => format!("pipeline running, {fps:.0} frames/s inferred"),
        (State::Failed, Some(why)) => format!("pipeline failed: {why}"),
        (s, _) => format!("pipeline {}", s.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn a_running_pipeline_is_hung_past_the_limit_and_not_before() {
        let limit = Duration::from_secs(30);
        assert_eq!(
            verdict(State::Running, (Thread::Inference, 30 * S), 2 * S, limit),
            Ok(())
        );
        let stall = verdict(
            State::Running,
            (Thread::Inference, 30 * S + 1),
            2 * S,
            limit,
        )
        .expect_err("past the limit");
        assert_eq!(stall.thread, Thread::Inference);
        assert_eq!(stall.limit_ns, 30 * S);
        assert!(stall.to_string().contains("inference thread"), "{stall}");
    }

    #[test]
    fn a_long_card_timeout_raises_the_limit() {
        // card.timeout_ms = 60 000: a C2H may take 60 s, so 2 x 60 s is not a hang.
        let limit = Duration::from_secs(30);
        let floor = 120 * S;
        assert_eq!(
            verdict(State::Running, (Thread::Capture, 100 * S), floor, limit),
            Ok(())
        );
        let stall = verdict(State::Running, (Thread::Capture, 121 * S), floor, limit)
            .expect_err("past the floor");
        assert_eq!(stall.limit_ns, floor);
    }

    #[test]
    fn stopped_and_failed_pipelines_are_not_hangs() {
        for state in [State::Stopped, State::Failed] {
            assert_eq!(
                verdict(
                    state,
                    (Thread::Capture, 3600 * S),
                    0,
                    Duration::from_secs(1)
                ),
                Ok(()),
                "{state:?}"
            );
        }
    }

    #[test]
    fn the_start_is_extended_while_an_engine_builds_and_only_within_the_limit() {
        let build = |ago: u64| fpgagdr_infer::EngineBuild {
            model: "0123456789ab".into(),
            dir: "/var/lib/fpgagdr/tensorrt/x".into(),
            since: std::time::Instant::now() - Duration::from_secs(ago),
        };
        let limit = Duration::from_secs(1800);
        let line = extension(Some(build(120)), limit).expect("building");
        assert!(line.contains("TensorRT engine"), "{line}");
        assert!(line.contains("0123456789ab"), "{line}");
        assert!(line.contains("120 s so far"), "{line}");
        assert_eq!(extension(Some(build(1800)), limit), None, "past the limit");
        assert_eq!(extension(None, limit), None, "nothing builds");
    }

    #[test]
    fn status_lines_say_state_rate_and_fault() {
        assert_eq!(
            status_line(State::Running, 279.6, None),
            "pipeline running, 280 frames/s inferred"
        );
        assert_eq!(
            status_line(State::Failed, 0.0, Some("rule model-input".into())),
            "pipeline failed: rule model-input"
        );
        assert_eq!(status_line(State::Stopped, 0.0, None), "pipeline stopped");
    }
}
