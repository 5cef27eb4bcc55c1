//! The results room (issue 20): every frame's result, delivered.
//!
//! Owns: the room's thread (`fpgagdr-results`), which receives every result the
//! inference thread hands over through [`Outlet`] (bounded, never waited on), gives it
//! its labels and its JSON form ([`ResultRecord`], payload schema version
//! [`SCHEMA_VERSION`], `docs/api.md` "Results out"), and fans it out: the on-disk log
//! (`log.rs`), the per-frame stream (a bounded broadcast the HTTP side subscribes to),
//! and MQTT (`mqtt.rs`). A result that matched an alert rule (`alerts.rs`, checked by
//! the inference thread through its tap) is marked in that JSON and also becomes one
//! alert per rule: an `alert` event on the stream, a message on MQTT's alert topic, a
//! count per rule; its frame goes to the frame keeper (`keep.rs`) when that is on.
//! [`Results`] is the handle the HTTP side holds: status, the stream, the kept
//! frames, reconfiguring MQTT and the alerts.
//! Must not: sit on the frame path (the pipeline only ever calls [`Tap::send`]), or read
//! the pipeline's state (it receives; it never looks).
//! Neighbours: `pipeline/infer.rs` sends; `api/results.rs` reads the log and the stream;
//! `config.rs` gives `outputs.mqtt` and `outputs.alerts`.

pub mod alerts;
pub mod conditions;
pub mod image;
pub mod keep;
pub mod log;
pub mod mqtt;
pub mod outlet;
pub mod raw;
pub mod record;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::config::{AlertsConfig, MqttConfig};
use crate::files::Policy;
pub use conditions::Reading;
pub use keep::{KeepStatus, KeptFrame};
pub use outlet::{Outlet, Tap};
pub use raw::{RawResult, RunInfo};
pub use record::{
    AlertRecord, ConditionAlertRecord, RecordFrame, ResultRecord, SCHEMA_VERSION, TopClass,
};

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

/// The alerts' state (`outputs.alerts` in `GET /api/v1/status`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct AlertsStatus {
    /// Alerts since the service started, by rule name (a rule since removed keeps its
    /// count; a rule configured now and not yet fired shows 0).
    pub fired: BTreeMap<String, u64>,
    /// The condition rules (`drop_rate`, `e2e_p99`, `temperature`, `power`) firing now:
    /// fired and not yet cleared.
    pub firing: Vec<String>,
    /// The kept frames.
    pub frames: KeepStatus,
}

/// One item of the per-frame stream: the SSE event name and its JSON.
pub type StreamItem = (&'static str, Arc<str>);

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
    /// Alerts.
    pub alerts: AlertsStatus,
}

/// Where and how large the results log is.
#[derive(Debug, Clone)]
pub struct LogSettings {
    /// Its directory (`results` under the state directory).
    pub dir: PathBuf,
    /// Cap on all its files together, bytes.
    pub max_bytes: u64,
    /// The kept frames' directory (`alert-frames` under the state directory).
    pub frames_dir: PathBuf,
}

struct Inner {
    outlet: Arc<Outlet>,
    counters: RoomCounters,
    stream: tokio::sync::broadcast::Sender<StreamItem>,
    keeper: keep::Keeper,
    fired: Mutex<BTreeMap<String, u64>>,
    /// The condition rules and their state (evaluated on the board's readings).
    conditions: Mutex<conditions::Conditions>,
    mqtt: Mutex<Option<mqtt::Publisher>>,
    mqtt_config: Mutex<MqttConfig>,
    /// Where `outputs.mqtt.ca_file` may lie, and how it is read.
    files: Arc<Policy>,
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
    /// Connects to `outlet`, opens the log and the kept frames, and starts the room's
    /// thread, publishing to MQTT as `mqtt` says (its CA file confined and read as
    /// `files` says) and checking results against `alerts`. Errors: the log's or the
    /// frames' directory cannot be made or read.
    pub fn start(
        outlet: Arc<Outlet>,
        log: LogSettings,
        mqtt: &MqttConfig,
        alerts: &AlertsConfig,
        files: Arc<Policy>,
    ) -> std::io::Result<Results> {
        let writer = log::LogWriter::open(&log.dir, log.max_bytes)?;
        let keeper = keep::Keeper::start(log.frames_dir.clone())?;
        let (stream, _) = tokio::sync::broadcast::channel(STREAM_BACKLOG);
        let rx = outlet.connect();
        let results = Results {
            inner: Arc::new(Inner {
                outlet,
                counters: RoomCounters::default(),
                stream,
                keeper,
                fired: Mutex::default(),
                conditions: Mutex::default(),
                mqtt: Mutex::new(None),
                mqtt_config: Mutex::new(MqttConfig::default()),
                files,
                log: Mutex::new(LogStatus {
                    max_bytes: log.max_bytes,
                    ..LogStatus::default()
                }),
                log_dir: log.dir,
            }),
        };
        results.configure_mqtt(mqtt);
        results.configure_alerts(alerts);
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
            *publisher = Some(mqtt::Publisher::start(
                config.clone(),
                &self.inner.files.roots,
            ));
        }
        *current = config.clone();
    }

    /// Applies `outputs.alerts`: the rules and the frame keeper the next pipeline run
    /// takes (a config change restarts a running pipeline after this), and the
    /// keeper's bounds at once.
    pub fn configure_alerts(&self, config: &AlertsConfig) {
        let sender = self.inner.keeper.configure(&config.keep_frames);
        self.inner.outlet.set_alerts(config, sender);
        self.inner
            .conditions
            .lock()
            .expect("conditions poisoned")
            .configure(config);
        let mut fired = self.inner.fired.lock().expect("fired poisoned");
        for name in config.rules.keys() {
            fired.entry(name.clone()).or_insert(0);
        }
    }

    /// The frame keeper (list, fetch).
    pub fn keeper(&self) -> &keep::Keeper {
        &self.inner.keeper
    }

    /// Where the log lies.
    pub fn log_dir(&self) -> &std::path::Path {
        &self.inner.log_dir
    }

    /// A receiver of every result's JSON (`result`) and every alert (`alert`) from now
    /// on (the per-frame stream).
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<StreamItem> {
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
            alerts: AlertsStatus {
                fired: self.inner.fired.lock().expect("fired poisoned").clone(),
                firing: self
                    .inner
                    .conditions
                    .lock()
                    .expect("conditions poisoned")
                    .firing(),
                frames: self.inner.keeper.status(),
            },
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
                    let _ = self.inner.stream.send(("result", json.clone()));
                    let mqtt = self.inner.mqtt.lock().expect("mqtt poisoned");
                    if let Some(p) = mqtt.as_ref() {
                        p.publish(json);
                    }
                    if raw.alerts != 0 {
                        self.alert(&run, raw.alerts, &record, mqtt.as_ref());
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

    /// One alert per rule in `mask`: counted, on the stream, on MQTT's alert topic.
    fn alert(
        &self,
        run: &RunInfo,
        mask: u32,
        record: &ResultRecord,
        mqtt: Option<&mqtt::Publisher>,
    ) {
        for alert in AlertRecord::of(&run.rules, mask, record) {
            let json = serde_json::to_string(&alert).expect("alert serialises");
            self.deliver(&alert.rule, true, json.into(), mqtt);
        }
    }

    /// Evaluates the condition rules (`conditions.rs`) on what the frame board read
    /// this tick; each rule that fired or cleared is an alert, delivered as a class
    /// rule's is (a firing is counted; a clear is not). Never blocks on the network.
    pub fn observe(&self, reading: &Reading) {
        let changes = {
            let mut c = self.inner.conditions.lock().expect("conditions poisoned");
            if c.is_empty() {
                return;
            }
            c.observe(reading)
        };
        if changes.is_empty() {
            return;
        }
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let card = self.inner.outlet.card();
        let mqtt = self.inner.mqtt.lock().expect("mqtt poisoned");
        for change in &changes {
            let alert = ConditionAlertRecord::of(change, t, &card);
            tracing::info!(
                "alert {} {}: {} {} (threshold {})",
                alert.rule,
                alert.state,
                alert.value,
                alert.unit,
                alert.threshold
            );
            let json = serde_json::to_string(&alert).expect("alert serialises");
            self.deliver(&alert.rule, change.firing, json.into(), mqtt.as_ref());
        }
    }

    /// The one path every alert takes: counted per rule (when `count`: a firing), a
    /// message on MQTT's alert topic, an `alert` event on the results stream.
    fn deliver(&self, rule: &str, count: bool, json: Arc<str>, mqtt: Option<&mqtt::Publisher>) {
        if count {
            *self
                .inner
                .fired
                .lock()
                .expect("fired poisoned")
                .entry(rule.to_string())
                .or_insert(0) += 1;
        }
        if let Some(p) = mqtt {
            p.publish_alert(&json);
        }
        // No receiver is not an error: nobody watches.
        let _ = self.inner.stream.send(("alert", json));
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
