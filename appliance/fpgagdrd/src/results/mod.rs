//! The results room (issue 20): every frame's result, delivered.
//!
//! Owns: the room's thread (`fpgagdr-results`), which receives every result the
//! inference thread hands over through [`Outlet`] (bounded, never waited on), gives it
//! its labels and its JSON form ([`ResultRecord`], payload schema version
//! [`SCHEMA_VERSION`], `docs/api.md` "Results out"), and fans it out: the on-disk log
//! (`log.rs`), the per-frame stream (a bounded broadcast the HTTP side subscribes to),
//! and MQTT (`mqtt.rs`). [`Results`] is the handle the HTTP side holds: status, the
//! stream, reconfiguring MQTT.
//! Must not: sit on the frame path (the pipeline only ever calls [`Tap::send`]), or read
//! the pipeline's state (it receives; it never looks).
//! Neighbours: `pipeline/infer.rs` sends; `api/results.rs` reads the log and the stream;
//! `config.rs` gives `outputs.mqtt`.

pub mod log;
pub mod mqtt;
pub mod outlet;
pub mod record;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::config::MqttConfig;
pub use outlet::{Outlet, RawResult, RunInfo, Tap};
pub use record::{RecordFrame, ResultRecord, SCHEMA_VERSION, TopClass};

/// Results the per-frame stream keeps for a slow client before that client starts
/// losing results (counted for it: its `dropped` events).
pub const STREAM_BACKLOG: usize = 1024;

/// The log is flushed at least this often (a crash loses at most this much).
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// Counters of the room (monotonic over the service's life).
#[derive(Debug, Default)]
struct RoomCounters {
    received: AtomicU64,
    logged: AtomicU64,
    log_errors: AtomicU64,
    stream_dropped: AtomicU64,
}

/// Results dropped, by reason (`/metrics` labels them the same way).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ResultDrops {
    /// The channel from the pipeline to the room was full.
    pub room_full: u64,
    /// MQTT: the broker was away (QoS 0 results are not kept for it).
    pub mqtt_offline: u64,
    /// MQTT: the publish queue (`outputs.mqtt.queue`) was full.
    pub mqtt_queue_full: u64,
    /// Per-frame stream: results a slow client missed (all clients together).
    pub stream_slow_client: u64,
}

/// The results log's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct LogStatus {
    /// Results written.
    pub written: u64,
    /// Writes that failed (the last one's error is `last_error`).
    pub errors: u64,
    /// Bytes on disk now (all files).
    pub bytes: u64,
    /// Files on disk now.
    pub files: u64,
    /// The cap on `bytes` (`--results-log-max-bytes`).
    pub max_bytes: u64,
    /// The last write error, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// What the results room reports (`outputs` in `GET /api/v1/status`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct OutputsStatus {
    /// Payload schema version.
    pub schema_version: u32,
    /// Results the pipeline handed to the room.
    pub results: u64,
    /// Results dropped, by reason.
    pub dropped: ResultDrops,
    /// The results log.
    pub log: LogStatus,
    /// MQTT.
    pub mqtt: mqtt::MqttStatus,
    /// Clients of `GET /api/v1/results/stream` now.
    pub stream_clients: u64,
}

/// Where and how large the results log is.
#[derive(Debug, Clone)]
pub struct LogSettings {
    /// Its directory (`results` under the state directory).
    pub dir: PathBuf,
    /// Cap on all its files together, bytes.
    pub max_bytes: u64,
}

struct Inner {
    outlet: Arc<Outlet>,
    counters: RoomCounters,
    stream: tokio::sync::broadcast::Sender<Arc<str>>,
    mqtt: Mutex<Option<mqtt::Publisher>>,
    mqtt_config: Mutex<MqttConfig>,
    log: Mutex<LogStatus>,
    log_dir: PathBuf,
}

/// The handle on the results room (cheap to clone).
#[derive(Clone)]
pub struct Results {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Results {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Results")
            .field("log_dir", &self.inner.log_dir)
            .finish_non_exhaustive()
    }
}

impl Results {
    /// Connects to `outlet`, opens the log and starts the room's thread, publishing
    /// to MQTT as `mqtt` says. Errors: the log's directory cannot be made or read.
    pub fn start(
        outlet: Arc<Outlet>,
        log: LogSettings,
        mqtt: &MqttConfig,
    ) -> std::io::Result<Results> {
        let writer = log::LogWriter::open(&log.dir, log.max_bytes)?;
        let (stream, _) = tokio::sync::broadcast::channel(STREAM_BACKLOG);
        let rx = outlet.connect();
        let results = Results {
            inner: Arc::new(Inner {
                outlet,
                counters: RoomCounters::default(),
                stream,
                mqtt: Mutex::new(None),
                mqtt_config: Mutex::new(MqttConfig::default()),
                log: Mutex::new(LogStatus {
                    max_bytes: log.max_bytes,
                    ..LogStatus::default()
                }),
                log_dir: log.dir,
            }),
        };
        results.configure_mqtt(mqtt);
        let room = results.clone();
        std::thread::Builder::new()
            .name("fpgagdr-results".into())
            .spawn(move || room.run(rx, writer))?;
        Ok(results)
    }

    /// Applies `outputs.mqtt`: a changed setting replaces the client (the old one
    /// says `offline` on its status topic and disconnects); an unchanged one is left.
    pub fn configure_mqtt(&self, config: &MqttConfig) {
        let mut current = self.inner.mqtt_config.lock().expect("mqtt config poisoned");
        let mut publisher = self.inner.mqtt.lock().expect("mqtt poisoned");
        if *current == *config && (publisher.is_some() || !config.enabled) {
            return;
        }
        if let Some(old) = publisher.take() {
            old.shut_down();
        }
        if config.enabled {
            *publisher = Some(mqtt::Publisher::start(config.clone()));
        }
        *current = config.clone();
    }

    /// Where the log lies.
    pub fn log_dir(&self) -> &std::path::Path {
        &self.inner.log_dir
    }

    /// A receiver of every result's JSON from now on (the per-frame stream).
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Arc<str>> {
        self.inner.stream.subscribe()
    }

    /// Counts `n` results a slow stream client missed.
    pub fn stream_dropped(&self, n: u64) {
        self.inner
            .counters
            .stream_dropped
            .fetch_add(n, Ordering::Relaxed);
    }

    /// The room's state now.
    pub fn status(&self) -> OutputsStatus {
        let c = &self.inner.counters;
        let mqtt = self
            .inner
            .mqtt
            .lock()
            .expect("mqtt poisoned")
            .as_ref()
            .map(mqtt::Publisher::status)
            .unwrap_or_default();
        let mut log = self.inner.log.lock().expect("log status poisoned").clone();
        log.written = c.logged.load(Ordering::Relaxed);
        log.errors = c.log_errors.load(Ordering::Relaxed);
        OutputsStatus {
            schema_version: SCHEMA_VERSION,
            results: c.received.load(Ordering::Relaxed),
            dropped: ResultDrops {
                room_full: self.inner.outlet.drops.room_full.load(Ordering::Relaxed),
                mqtt_offline: mqtt.dropped_offline,
                mqtt_queue_full: mqtt.dropped_queue_full,
                stream_slow_client: c.stream_dropped.load(Ordering::Relaxed),
            },
            log,
            stream_clients: self.inner.stream.receiver_count() as u64,
            mqtt,
        }
    }

    /// The room's loop: receive, label, log, stream, publish; flush the log at least
    /// every [`FLUSH_EVERY`]. Ends when the outlet is dropped.
    fn run(self, rx: Receiver<outlet::Message>, mut writer: log::LogWriter) {
        let c = &self.inner.counters;
        let mut last_flush = Instant::now();
        loop {
            // A quiet quarter second flushes too: readers of the log see a quiet
            // pipeline's last results at once.
            let mut idle = false;
            match rx.recv_timeout(FLUSH_EVERY / 4) {
                Ok((run, raw)) => {
                    c.received.fetch_add(1, Ordering::Relaxed);
                    let record = ResultRecord::new(&run, &raw);
                    let json = serde_json::to_string(&record).expect("record serialises");
                    match writer.append(record.run, record.seq, &json) {
                        Ok(()) => {
                            c.logged.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => self.log_failed(e),
                    }
                    let json: Arc<str> = json.into();
                    // No receiver is not an error: nobody watches.
                    let _ = self.inner.stream.send(json.clone());
                    if let Some(p) = self.inner.mqtt.lock().expect("mqtt poisoned").as_ref() {
                        p.publish(json);
                    }
                }
                Err(RecvTimeoutError::Timeout) => idle = true,
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if idle || last_flush.elapsed() >= FLUSH_EVERY {
                if let Err(e) = writer.flush() {
                    self.log_failed(e);
                }
                last_flush = Instant::now();
                let (bytes, files) = writer.usage();
                let mut s = self.inner.log.lock().expect("log status poisoned");
                s.bytes = bytes;
                s.files = files;
            }
        }
        let _ = writer.flush();
    }

    fn log_failed(&self, e: std::io::Error) {
        let c = &self.inner.counters;
        if c.log_errors.fetch_add(1, Ordering::Relaxed) == 0 {
            tracing::warn!("results log: {e}");
        }
        self.inner
            .log
            .lock()
            .expect("log status poisoned")
            .last_error = Some(e.to_string());
    }
}
