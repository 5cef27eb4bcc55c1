//! The results room: every frame's result, delivered to every output.
//!
//! Owns: the room's thread (`fpgagdr-results`), which receives every result the
//! inference thread hands over through [`Outlet`] (bounded, never waited on), gives it
//! its labels and its JSON form once ([`ResultRecord`], payload schema version
//! [`SCHEMA_VERSION`], `docs/api.md` "Results out"), and hands both to every output:
//! the list of [`Sink`]s (`sink.rs`; the results log, the per-frame stream and MQTT in
//! `sinks/`). A result that matched an alert rule (`alerts.rs`, checked by the inference
//! thread through its tap) is marked in that JSON and also becomes one alert per rule,
//! counted per rule and handed to every sink; its frame goes to the frame keeper
//! (`keep.rs`) when that is on. Rules on a condition (`conditions.rs`) are fed the
//! frame board's snapshots ([`Results::observe_board`]). The room remembers the last
//! results it handed out (`recent.rs`): the latest result (the frame board reads it,
//! [`crate::board::LatestResults`]), the frame view (a frame copy beside its own result)
//! and the tail a resuming stream client missed. [`Results`] is the handle the
//! rest holds: status (`status.rs`), the stream, the log, the kept frames, and
//! reconfiguring the outputs and the alerts.
//! Must not: sit on the frame path (the pipeline only ever calls [`Tap::send`]), or read
//! the pipeline's state (it receives; it never looks).

pub mod alerts;
pub mod conditions;
pub mod image;
pub mod keep;
pub mod outlet;
pub mod raw;
pub mod recent;
pub mod record;
pub mod sink;
pub mod sinks;
pub mod status;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::board::Snapshot;
use crate::config::{AlertsConfig, OutputsConfig};
use crate::files::Policy;
use crate::metrics::{Stage, Totals};
pub use conditions::Reading;
pub use keep::{KeepStatus, KeptFrame};
pub use outlet::{Outlet, Tap};
pub use raw::{RawResult, RunInfo};
pub use recent::{Entry, FrameView};
pub use record::{
    AlertRecord, ConditionAlertRecord, LatestResult, RecordFrame, ResultRecord, SCHEMA_VERSION,
    TopClass,
};
pub use sink::Sink;
pub use sinks::stream::StreamItem;
pub use status::{AlertsStatus, LogStatus, MqttStatus, OutputsStatus, ResultDrops};

/// The log is flushed at least this often (a crash loses at most this much).
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// Counters of the room (monotonic over the service's life).
#[derive(Debug, Default)]
struct RoomCounters {
    /// Results every output has been handed (counted once the last sink returned).
    received: AtomicU64,
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
    keeper: keep::Keeper,
    fired: Mutex<BTreeMap<String, u64>>,
    /// The condition rules and their state (evaluated on the board's snapshots).
    conditions: Mutex<conditions::Conditions>,
    /// Every output, in the order they are handed each result.
    sinks: Vec<Arc<dyn Sink>>,
    /// The two outputs the HTTP side reads from: the log (paged) and the stream.
    log: Arc<sinks::log::LogSink>,
    stream: Arc<sinks::stream::StreamSink>,
    /// The last results handed out, the latest one and the frame view.
    recent: recent::Recent,
}

/// The handle on the results room (cheap to clone).
#[derive(Clone)]
pub struct Results {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Results {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Results")
            .field("log_dir", &self.inner.log.dir())
            .finish_non_exhaustive()
    }
}

impl Results {
    /// Connects to `outlet`, opens the log and the kept frames, and starts the room's
    /// thread with its outputs: the results log, the per-frame stream and MQTT (off
    /// until [`Results::configure`]; its CA file confined and read as `files` says).
    /// Errors: the log's or the frames' directory cannot be made or read.
    pub fn start(
        outlet: Arc<Outlet>,
        log: LogSettings,
        files: Arc<Policy>,
    ) -> std::io::Result<Results> {
        Results::start_with(outlet, log, files, Vec::new())
    }

    /// As [`Results::start`], with `more` outputs after the service's own.
    fn start_with(
        outlet: Arc<Outlet>,
        log: LogSettings,
        files: Arc<Policy>,
        more: Vec<Arc<dyn Sink>>,
    ) -> std::io::Result<Results> {
        let log_sink = Arc::new(sinks::log::LogSink::open(&log.dir, log.max_bytes)?);
        let stream = Arc::new(sinks::stream::StreamSink::default());
        let mqtt = Arc::new(sinks::mqtt::MqttSink::new(files.roots.clone()));
        // Every output of every result; a new one is one more line here.
        let mut sinks: Vec<Arc<dyn Sink>> = vec![log_sink.clone(), stream.clone(), mqtt];
        sinks.extend(more);
        let keeper = keep::Keeper::start(log.frames_dir.clone())?;
        let rx = outlet.connect();
        let results = Results {
            inner: Arc::new(Inner {
                outlet,
                counters: RoomCounters::default(),
                keeper,
                fired: Mutex::default(),
                conditions: Mutex::default(),
                sinks,
                log: log_sink,
                stream,
                recent: recent::Recent::default(),
            }),
        };
        let room = results.clone();
        std::thread::Builder::new()
            .name("fpgagdr-results".into())
            .spawn(move || room.run(rx))?;
        Ok(results)
    }

    /// Waits until every result handed over before the call has been given to every
    /// output, at most `within`; true when it has. Called once a run's threads are
    /// joined, this makes its stop final for the outputs too: a settings change right
    /// after (MQTT turned off, say) meets every result of that run already queued or
    /// counted, none still on the channel. Results of a run started meanwhile are not
    /// waited for (the count is taken once, at the call).
    pub fn drain(&self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        let sent = self.inner.outlet.sent.load(Ordering::Acquire);
        loop {
            if self.inner.counters.received.load(Ordering::Acquire) >= sent {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Applies `outputs`: every sink takes its part (a changed MQTT setting replaces
    /// the client; the old one says `offline` and disconnects), and the alerts
    /// ([`Results::configure_alerts`]).
    pub fn configure(&self, outputs: &OutputsConfig) {
        self.configure_alerts(&outputs.alerts);
        self.configure_sinks(outputs);
    }

    /// Applies `outputs` to the sinks alone (a change of the outputs that leaves the
    /// alert rules as they are, applied while a pipeline runs).
    pub fn configure_sinks(&self, outputs: &OutputsConfig) {
        for s in &self.inner.sinks {
            s.reconfigure(outputs);
        }
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

    /// Where the log lies (`sinks::log::read` pages it).
    pub fn log_dir(&self) -> &std::path::Path {
        self.inner.log.dir()
    }

    /// A receiver of every result's JSON (`result`) and every alert (`alert`) from now
    /// on (the per-frame stream).
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<StreamItem> {
        self.inner.stream.subscribe()
    }

    /// Counts `n` results a slow stream client missed.
    pub fn stream_dropped(&self, n: u64) {
        self.inner.stream.missed(n);
    }

    /// The remembered results with keys above `after`, oldest first, and the oldest key
    /// remembered (a stream client resuming after `after`; older ones are in the log).
    pub fn recent_after(&self, after: (u64, u64)) -> (Vec<Entry>, Option<(u64, u64)>) {
        self.inner.recent.after(after)
    }

    /// One result by key when the room still remembers it (the frame view's, or one of
    /// the last [`recent::RECENT`]); older ones are in the log.
    pub fn recent_result(&self, run: u64, seq: u64) -> Option<Entry> {
        self.inner.recent.get(run, seq)
    }

    /// The frame view given the pipeline's newest frame copy: a copy beside its own
    /// result (see `recent.rs`); `None` before the first copy has its result.
    pub fn frame_view(&self, copy: Option<Arc<Vec<u8>>>) -> Option<FrameView> {
        self.inner.recent.frame_view(copy)
    }

    /// The newest result as `GET /api/v1/results/latest` answers it.
    pub fn latest_json(&self) -> Option<Arc<str>> {
        self.inner.recent.latest_json()
    }

    /// The room's state now, with every sink's.
    pub fn status(&self) -> OutputsStatus {
        let mut status = OutputsStatus {
            schema_version: SCHEMA_VERSION,
            results: self.inner.counters.received.load(Ordering::Relaxed),
            dropped: ResultDrops {
                room_full: self.inner.outlet.drops.room_full.load(Ordering::Relaxed),
                ..ResultDrops::default()
            },
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
            ..OutputsStatus::default()
        };
        for s in &self.inner.sinks {
            s.status(&mut status);
        }
        status
    }

    /// The room's loop: receive, label, hand to every sink; flush them at least every
    /// [`FLUSH_EVERY`]. Ends when the outlet is dropped.
    fn run(self, rx: Receiver<outlet::Message>) {
        let c = &self.inner.counters;
        let mut last_flush = Instant::now();
        loop {
            // A quiet quarter second flushes too: readers of the log see a quiet
            // pipeline's last results at once.
            let mut idle = false;
            match rx.recv_timeout(FLUSH_EVERY / 4) {
                Ok((run, raw)) => {
                    let record = ResultRecord::new(&run, &raw);
                    let json: Arc<str> = serde_json::to_string(&record)
                        .expect("record serialises")
                        .into();
                    for s in &self.inner.sinks {
                        s.result(&record, &json);
                    }
                    if raw.alerts != 0 {
                        self.alert(&run, raw.alerts, &record);
                    }
                    self.inner.recent.record(record, json);
                    // Last: `drain` reads this as "every output has it".
                    c.received.fetch_add(1, Ordering::Release);
                }
                Err(RecvTimeoutError::Timeout) => idle = true,
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if idle || last_flush.elapsed() >= FLUSH_EVERY {
                for s in &self.inner.sinks {
                    s.flush();
                }
                last_flush = Instant::now();
            }
        }
        for s in &self.inner.sinks {
            s.flush();
        }
    }

    /// One alert per rule in `mask`: counted, and handed to every sink.
    fn alert(&self, run: &RunInfo, mask: u32, record: &ResultRecord) {
        for alert in AlertRecord::of(&run.rules, mask, record) {
            let json = serde_json::to_string(&alert).expect("alert serialises");
            self.deliver(&alert.rule, true, json.into());
        }
    }

    /// Hands the frame board's snapshot to the condition rules (`drop_rate`, `e2e_p99`,
    /// `temperature`, `power`): its counters, its telemetry sample, and `totals`' end-to-end
    /// histogram (the pipeline's cumulative one). Never blocks on the network.
    pub fn observe_board(&self, s: &Snapshot, totals: &Totals) {
        let c = &s.counters;
        // Every drop the pipeline counts: back-pressure and failed checks
        // (frames_dropped), overruns and sequence errors at capture, and the frames the
        // card completed that no event reported (missed, event-queue overflow: produced
        // but never captured).
        let dropped = c.frames_dropped
            + c.frames_overrun
            + c.sequence_errors
            + c.frames_missed
            + c.event_queue_overflows;
        let produced = c.frames_captured + c.frames_missed + c.event_queue_overflows;
        let e2e = Stage::ALL
            .iter()
            .position(|st| *st == Stage::EndToEnd)
            .expect("end_to_end is a stage");
        self.observe(&Reading {
            at: Instant::now(),
            dropped,
            produced,
            e2e: Some(&totals.stages[e2e]),
            sample: s.sample.as_deref(),
        });
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
            self.deliver(&alert.rule, change.firing, json.into());
        }
    }

    /// The one path every alert takes: counted per rule (when `count`: a firing), then
    /// handed to every sink (MQTT's alert topic, an `alert` event on the stream).
    fn deliver(&self, rule: &str, count: bool, json: Arc<str>) {
        if count {
            *self
                .inner
                .fired
                .lock()
                .expect("fired poisoned")
                .entry(rule.to_string())
                .or_insert(0) += 1;
        }
        for s in &self.inner.sinks {
            s.alert(&json);
        }
    }
}

impl crate::board::LatestResults for Results {
    fn latest_json(&self) -> Option<Arc<str>> {
        Results::latest_json(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::STAGES;

    /// An output of its own, as a new one would be: it counts what it is handed and
    /// reports it in the status.
    #[derive(Debug, Default)]
    struct Counting {
        results: AtomicU64,
        alerts: AtomicU64,
        reconfigured: AtomicU64,
    }

    impl Sink for Counting {
        fn name(&self) -> &'static str {
            "counting"
        }
        fn result(&self, record: &ResultRecord, json: &Arc<str>) {
            assert!(json.contains(&format!("\"seq\":{}", record.seq)), "{json}");
            self.results.fetch_add(1, Ordering::Relaxed);
        }
        fn alert(&self, json: &Arc<str>) {
            assert!(json.contains("\"rule\":\"cats\""), "{json}");
            self.alerts.fetch_add(1, Ordering::Relaxed);
        }
        fn reconfigure(&self, _: &OutputsConfig) {
            self.reconfigured.fetch_add(1, Ordering::Relaxed);
        }
        fn status(&self, status: &mut OutputsStatus) {
            status.stream_clients += 100;
        }
    }

    /// An output slower than the pipeline: 2 ms a result.
    #[derive(Debug, Default)]
    struct Slow {
        results: AtomicU64,
    }

    impl Sink for Slow {
        fn name(&self) -> &'static str {
            "slow"
        }
        fn result(&self, _: &ResultRecord, _: &Arc<str>) {
            std::thread::sleep(Duration::from_millis(2));
            self.results.fetch_add(1, Ordering::Relaxed);
        }
        fn alert(&self, _: &Arc<str>) {}
        fn reconfigure(&self, _: &OutputsConfig) {}
        fn status(&self, _: &mut OutputsStatus) {}
    }

    fn room(dir: &std::path::Path, outlet: &Arc<Outlet>, more: Vec<Arc<dyn Sink>>) -> Results {
        Results::start_with(
            outlet.clone(),
            LogSettings {
                dir: dir.join("results"),
                max_bytes: sinks::log::MIN_MAX_BYTES,
                frames_dir: dir.join("frames"),
            },
            Arc::new(Policy::new(crate::files::Roots::new(dir, &[], &[]))),
            more,
        )
        .unwrap()
    }

    #[test]
    fn drained_means_every_output_was_handed_every_result_sent() {
        let dir = tempfile::tempdir().unwrap();
        let outlet = Arc::new(Outlet::default());
        let slow = Arc::new(Slow::default());
        let results = room(dir.path(), &outlet, vec![slow.clone()]);
        let tap = outlet.tap(Vec::new(), "test".into(), 0).expect("connected");
        // 100 results in well under a millisecond; the room needs 200 ms for them.
        for seq in 0..100 {
            tap.send(raw(seq));
        }
        assert_eq!(outlet.sent.load(Ordering::Relaxed), 100);
        assert!(results.drain(Duration::from_secs(30)), "drained in time");
        assert_eq!(
            slow.results.load(Ordering::Relaxed),
            100,
            "every result handed"
        );
        assert_eq!(results.status().results, 100);
        // A drain that runs out of time says so.
        tap.send(raw(100));
        tap.send(raw(101));
        assert!(
            !results.drain(Duration::ZERO),
            "two results still on their way"
        );
        assert!(results.drain(Duration::from_secs(30)));
    }

    fn raw(seq: u64) -> RawResult {
        RawResult {
            seq,
            arrived_unix_ns: 1,
            result_unix_ns: 2,
            width: 16,
            height: 16,
            format: "mono8",
            bytes: 320,
            checksum_checked: true,
            top: [(0, 0.9), (1, 0.05), (2, 0.0), (3, 0.0), (4, 0.0)],
            stages: [(Stage::EndToEnd, 1); STAGES],
            d2h: false,
            alerts: 0,
        }
    }

    #[test]
    fn a_sink_of_its_own_is_handed_every_result_and_alert_and_reports_in_the_status() {
        let dir = tempfile::tempdir().unwrap();
        let outlet = Arc::new(Outlet::default());
        let counting = Arc::new(Counting::default());
        let results = room(dir.path(), &outlet, vec![counting.clone()]);
        let outputs: OutputsConfig = serde_json::from_value(serde_json::json!({
            "alerts": {"rules": {"cats": {"kind": "class", "classes": ["cat"], "min_score": 0.5}}}
        }))
        .unwrap();
        results.configure(&outputs);
        assert_eq!(counting.reconfigured.load(Ordering::Relaxed), 1);
        let labels = ["cat", "dog", "car", "boat", "kite"]
            .map(String::from)
            .to_vec();
        let tap = outlet
            .tap(labels, "test".into(), 0)
            .expect("the room is connected");
        for seq in 0..3 {
            let mut r = raw(seq);
            r.alerts = tap.matches(&r.top);
            tap.send(r);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while counting.results.load(Ordering::Relaxed) < 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(counting.results.load(Ordering::Relaxed), 3);
        assert_eq!(counting.alerts.load(Ordering::Relaxed), 3, "one per result");
        let status = results.status();
        assert_eq!(status.results, 3);
        assert_eq!(status.alerts.fired["cats"], 3);
        assert!(status.stream_clients >= 100, "the sink wrote its part");
    }
}
