//! The frame board: one typed [`Snapshot`] of the data path ten times a second, the one
//! place the page, the stream and the scripts read the pipeline and telemetry from.
//!
//! Follow one frame: `pipeline/infer.rs` published its result and the stage windows
//! (`metrics.rs`); this room's sampler (every [`SAMPLE_EVERY`]) reads them with the
//! counters, the pipeline's state and generation, and the telemetry's latest sample,
//! and makes one [`Snapshot`]: rates over the last second, counters, stage windows,
//! the latest result complete with its frame, the telemetry point with energy per frame
//! (the one place frames/s meets power). Every three snapshots become one SSE event.
//! Next hop: `board/replay.rs` makes the events (and the bounded replay) that
//! `api/live.rs` sends.
//!
//! Owns: [`Board`] (the last 60 s of snapshots, the live events, the latest telemetry
//! body), [`Source`] (what the board reads of the pipeline; the pipeline implements it),
//! [`spawn`] (the sampler task, which also hands each snapshot to whoever watches it:
//! the results room's condition alert rules); below it `snapshot.rs` ([`Snapshot`],
//! [`TelemetryPoint`], [`TelemetryBody`] and their rounding), `history.rs` (the
//! scripts' views: `GET /pipeline/history` and `GET /telemetry/history`), `replay.rs`
//! (events and the bounded replay).
//! Must not: sit on the frame path (it reads what the threads published, a few locks
//! a tick), or read a telemetry source itself (the telemetry thread does).

mod history;
mod replay;
mod snapshot;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::broadcast;

use crate::metrics::{CounterValues, Published};
use fpgagdr_telemetry::sampler::Telemetry;
use snapshot::point;

pub use history::{
    COARSE_POINTS, PipelineHistoryBody, StageColumns, TelemetryHistory, TelemetryHistoryPoint,
};
pub use replay::{Event, REPLAY_GROUP, REPLAY_MAX_BYTES, REPLAY_SPAN, sse};
pub use snapshot::{Snapshot, TelemetryBody, TelemetryPoint};

/// Time between two snapshots.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(100);
/// Snapshots per live SSE event (about 3 events a second).
pub const BATCH: usize = 3;
/// Snapshots kept: 60 s at [`SAMPLE_EVERY`].
pub const KEEP: usize = 600;
/// Counter readings the rates are computed over (one second).
pub const RATE_SAMPLES: usize = 10;

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Snapshots published in SSE events, with the id of the event each went out in.
#[derive(Debug)]
struct Kept {
    /// Event id of the batch the snapshot was sent in.
    id: u64,
    snapshot: Arc<Snapshot>,
    /// The snapshot's JSON without the newest-only parts.
    row: Arc<str>,
}

#[derive(Debug, Default)]
struct Inner {
    /// The last [`KEEP`] snapshots that went out, oldest first.
    kept: VecDeque<Kept>,
    /// Snapshots taken since the last event.
    pending: Vec<(Arc<Snapshot>, Arc<str>)>,
    /// Id of the last event sent.
    last_id: u64,
    /// The latest `GET /telemetry` body.
    telemetry: Option<Arc<TelemetryBody>>,
    /// Per-second means of the telemetry, for `GET /telemetry/history?span=1h`.
    coarse: history::Coarse,
    /// The replay of a stream that opens without an id, made for the event `last_id`
    /// was then: the same for every stream that opens before the next event, so a page
    /// load of many streams makes it once.
    fresh_replay: Option<(u64, Vec<Event>)>,
}

/// The frame board, shared by the sampler task and the HTTP side (cheap to clone).
#[derive(Debug, Clone)]
pub struct Board {
    inner: Arc<Mutex<Inner>>,
    tx: broadcast::Sender<Event>,
    /// The telemetry's sampling period (the finest the telemetry history can be).
    telemetry_period: Duration,
}

impl Board {
    /// An empty board; event ids start at the service's start time in milliseconds, so
    /// the ids of a later run are above those of an earlier one.
    pub fn new(telemetry_period: Duration) -> Self {
        Board {
            inner: Arc::new(Mutex::new(Inner {
                last_id: (unix_now() * 1000.0) as u64,
                ..Inner::default()
            })),
            tx: broadcast::channel(16).0,
            telemetry_period,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().expect("board poisoned")
    }

    /// Adds a snapshot; every [`BATCH`] of them go out as one live event.
    pub fn push(&self, s: Snapshot) {
        let s = Arc::new(s);
        let row: Arc<str> = serde_json::to_string(&*s)
            .expect("snapshots serialise")
            .into();
        let mut inner = self.lock();
        if let Some(p) = &s.telemetry {
            inner.coarse.push(p, s.fps);
        }
        inner.pending.push((s, row));
        if inner.pending.len() < BATCH {
            return;
        }
        inner.last_id += 1;
        let id = inner.last_id;
        let batch: Vec<_> = inner.pending.drain(..).collect();
        let event = replay::event(id, batch.iter().map(|(s, r)| (&**s, &**r)));
        for (snapshot, row) in batch {
            if inner.kept.len() >= KEEP {
                inner.kept.pop_front();
            }
            inner.kept.push_back(Kept { id, snapshot, row });
        }
        // Sent under the lock: a subscriber that copies the kept snapshots under it
        // sees each snapshot exactly once, replayed or live. No subscriber is fine.
        let _ = self.tx.send(event);
    }

    /// Records the latest `GET /telemetry` body.
    fn set_telemetry(&self, body: Option<Arc<TelemetryBody>>) {
        self.lock().telemetry = body;
    }

    /// The bounded replay of the snapshots sent after event `after` (all kept ones when
    /// `None`: a page that opens the stream), and a subscription to the live events from
    /// then on, taken at one instant (see `replay.rs`).
    ///
    /// Streams that open without an id before the next event share one replay (its
    /// events are reference-counted).
    pub fn subscribe(&self, after: Option<u64>) -> (Vec<Event>, broadcast::Receiver<Event>) {
        let mut inner = self.lock();
        let rx = self.tx.subscribe();
        let last_id = inner.last_id;
        if after.is_none()
            && let Some((id, events)) = &inner.fresh_replay
            && *id == last_id
        {
            return (events.clone(), rx);
        }
        let kept: Vec<(u64, &Snapshot, &str)> = inner
            .kept
            .iter()
            .map(|k| (k.id, &*k.snapshot, &*k.row))
            .collect();
        let events = replay::bounded(&kept, after);
        if after.is_none() {
            inner.fresh_replay = Some((last_id, events.clone()));
        }
        (events, rx)
    }

    /// The newest snapshot sent, if any.
    pub fn latest(&self) -> Option<Arc<Snapshot>> {
        self.lock().kept.back().map(|k| k.snapshot.clone())
    }

    /// `GET /api/v1/telemetry`'s body (`None` before the first sample).
    pub fn telemetry(&self) -> Option<Arc<TelemetryBody>> {
        self.lock().telemetry.clone()
    }

    /// `GET /api/v1/pipeline/history`: the kept snapshots' rates and latencies.
    pub fn pipeline_history(&self) -> PipelineHistoryBody {
        let inner = self.lock();
        history::pipeline(inner.kept.iter().map(|k| &*k.snapshot), SAMPLE_EVERY)
    }

    /// `GET /api/v1/telemetry/history`: the kept snapshots' telemetry points (distinct
    /// samples, at most one per snapshot), or with `coarse` the last hour at one point
    /// per second.
    pub fn telemetry_history(&self, coarse: bool) -> TelemetryHistory {
        let inner = self.lock();
        if coarse {
            inner.coarse.body()
        } else {
            let period = self.telemetry_period.max(SAMPLE_EVERY);
            history::telemetry_fine(inner.kept.iter().map(|k| &*k.snapshot), period)
        }
    }
}

/// Rates over the last [`RATE_SAMPLES`] counter readings.
#[derive(Debug, Default)]
struct Rates {
    readings: VecDeque<(Instant, CounterValues)>,
}

impl Rates {
    /// Frames/s and GB/s from the oldest kept reading to `now`.
    fn push(&mut self, now: Instant, c: CounterValues) -> (f64, f64) {
        let rates = match self.readings.front() {
            Some((t, old)) => {
                let dt = (now - *t).as_secs_f64().max(1e-6);
                (
                    c.frames_inferred.saturating_sub(old.frames_inferred) as f64 / dt,
                    c.bytes_captured.saturating_sub(old.bytes_captured) as f64 / dt / 1e9,
                )
            }
            None => (0.0, 0.0),
        };
        if self.readings.len() >= RATE_SAMPLES {
            self.readings.pop_front();
        }
        self.readings.push_back((now, c));
        rates
    }
}

/// What the board reads of the pipeline each tick.
#[derive(Debug, Clone, Default)]
pub struct PipelineReading {
    /// The pipeline generation (see [`Snapshot::generation`]).
    pub generation: u64,
    /// `running`, `stopped` or `failed`.
    pub state: &'static str,
    /// How long the running pipeline has run.
    pub running: Option<Duration>,
    /// The frame counters.
    pub counters: CounterValues,
    /// The stage windows and the latest result, as last published.
    pub published: Published,
}

/// Where the board reads the pipeline from (implemented by the pipeline's shared
/// state): read once a tick, never waiting on the frame path.
pub trait Source: Send + Sync {
    /// The pipeline now.
    fn read(&self) -> PipelineReading;
}

/// Who watches the board: called with each snapshot, on the sampler task (must not
/// block).
pub type Watcher = Box<dyn Fn(&Snapshot) + Send + Sync>;

/// One tick: reads everything once and makes the snapshot.
fn take(
    source: &dyn Source,
    telemetry: &Telemetry,
    rates: &mut Rates,
) -> (Snapshot, Option<TelemetryBody>) {
    let now = Instant::now();
    let PipelineReading {
        generation,
        state,
        running,
        counters,
        published,
    } = source.read();
    let (fps, gbps) = rates.push(now, counters);
    let latency_us = published
        .window
        .map(|w| {
            w.iter()
                .filter(|(_, q)| q.count > 0)
                .map(|(s, q)| (s.as_str(), *q))
                .collect()
        })
        .unwrap_or_default();
    let sample = telemetry.latest();
    let (tpoint, body) = match &sample {
        Some(s) => {
            let (p, energy, fpj) = point(s, fps);
            let body = TelemetryBody {
                sample: s.clone(),
                fps,
                energy_per_frame_mj: energy,
                frames_per_joule: fpj,
            };
            (Some(p), Some(body))
        }
        None => (None, None),
    };
    let snapshot = Snapshot {
        t: unix_now(),
        generation,
        state,
        running_s: running.map(|d| d.as_secs_f64()),
        fps,
        gbps,
        counters,
        latency_us,
        telemetry: tpoint,
        latest: published.latest,
        sample,
    };
    (snapshot, body)
}

/// Starts the board's sampler task (on the async runtime: it only reads what the
/// threads published, never a device). Each snapshot also goes to every `watchers`.
pub fn spawn(
    source: Arc<dyn Source>,
    telemetry: Arc<Telemetry>,
    board: Board,
    watchers: Vec<Watcher>,
) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(SAMPLE_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut rates = Rates::default();
        loop {
            tick.tick().await;
            let (snapshot, body) = take(&*source, &telemetry, &mut rates);
            for w in &watchers {
                w(&snapshot);
            }
            board.set_telemetry(body.map(Arc::new));
            board.push(snapshot);
        }
    });
}

#[cfg(test)]
mod tests;
