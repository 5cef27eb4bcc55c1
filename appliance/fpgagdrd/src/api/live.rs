//! Live numbers for the dashboard: a sampler that turns counters and the published
//! window into [`Snapshot`]s 10 times a second, and the SSE endpoint that sends them in
//! batches about 3 times a second; named events of other rooms (`ota`) on the same
//! stream.
//!
//! Owns: [`Live`] (the broadcast of batches, the ring of recent ones, and the chart
//! history of `history.rs` the sampler fills), [`spawn_sampler`], [`stream`].
//! Neighbours: reads `metrics.rs` / `pipeline::Shared`; `webui/js/stream.js` consumes.
//!
//! Resume: the last [`RESUME_BATCHES`] batches (about 60 s) stay in a ring. A client that
//! reconnects with `Last-Event-ID: N` (an `EventSource` sends it by itself), or opens
//! with `?last_event_id=N`, first gets the batches after `N` still in the ring, then the
//! live ones; no batch twice, none left out in between. Ids start at the service's start
//! time in milliseconds and go up by one per batch, so an id from before a restart is
//! below every id of the new run, and such a client gets the whole ring.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use tokio::sync::broadcast;
use tokio_stream::Stream;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::BroadcastStream;

use super::history::{PipelineHistory, PipelineHistoryBody};
use crate::metrics::{CounterValues, LatestBrief, Snapshot};
use crate::pipeline::Shared;
use fpgagdr_telemetry::sampler::Telemetry;

/// Sampling period of snapshots.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(100);
/// Snapshots per SSE event.
pub const BATCH: usize = 3;
/// Batches kept for clients that resume: 200 × 3 × 100 ms = 60 s.
pub const RESUME_BATCHES: usize = 200;

/// One SSE event: its id and the JSON `{"batch":[...]}`.
#[derive(Debug, Clone)]
pub struct Batch {
    /// Increasing event id.
    pub id: u64,
    /// Serialized batch.
    pub json: Arc<str>,
}

/// The live feed: subscribers get every batch from now on, and a resuming client the
/// recent ones it missed.
#[derive(Debug, Clone)]
pub struct Live {
    tx: broadcast::Sender<Batch>,
    /// Named events other than snapshots (`ota`): sent live only, without an id, so
    /// they neither take part in resume nor move a client's `Last-Event-ID`.
    named: broadcast::Sender<(&'static str, Arc<str>)>,
    /// Recent batches, oldest first. Pushing and sending happen under this lock, and so
    /// do subscribing and copying, so a resuming client sees each batch exactly once.
    recent: Arc<std::sync::Mutex<VecDeque<Batch>>>,
    /// Every snapshot's rates and latencies for the last 60 s (`GET /pipeline/history`).
    history: Arc<std::sync::Mutex<PipelineHistory>>,
    closing: tokio::sync::watch::Sender<bool>,
}

impl Live {
    /// Ends every open stream at its next batch (≤ 0.3 s): SSE streams never end by
    /// themselves, and a graceful HTTP shutdown waits for open connections.
    pub fn close(&self) {
        self.closing.send_replace(true);
    }

    /// A feed keeping up to 16 batches for slow readers (older ones are skipped).
    pub fn new() -> Self {
        Live {
            tx: broadcast::channel(16).0,
            named: broadcast::channel(64).0,
            recent: Arc::new(std::sync::Mutex::new(VecDeque::with_capacity(
                RESUME_BATCHES,
            ))),
            history: Arc::default(),
            closing: tokio::sync::watch::channel(false).0,
        }
    }

    /// Keeps `batch` in the ring and sends it to every subscriber.
    pub fn publish(&self, batch: Batch) {
        let mut recent = self.recent.lock().expect("live ring poisoned");
        if recent.len() >= RESUME_BATCHES {
            recent.pop_front();
        }
        recent.push_back(batch.clone());
        // No subscriber is fine: the batch is simply not sent.
        let _ = self.tx.send(batch);
    }

    /// Adds `s` to the chart history.
    pub fn record(&self, s: &Snapshot) {
        self.history.lock().expect("history poisoned").push(s);
    }

    /// `GET /api/v1/pipeline/history`'s document (see `history.rs`).
    pub fn history_body(&self) -> PipelineHistoryBody {
        self.history
            .lock()
            .expect("history poisoned")
            .body(SAMPLE_EVERY.as_secs_f64())
    }

    /// Sends a named event (`event: NAME`, `data: JSON`, no id) to every open stream.
    pub fn publish_event(&self, name: &'static str, json: Arc<str>) {
        let _ = self.named.send((name, json));
    }

    /// A subscription to batches published from now on, and the kept batches whose id
    /// is above `after` (none when `after` is `None`), taken at one instant.
    pub fn subscribe_after(&self, after: Option<u64>) -> (broadcast::Receiver<Batch>, Vec<Batch>) {
        let recent = self.recent.lock().expect("live ring poisoned");
        let rx = self.tx.subscribe();
        let backlog = match after {
            Some(n) => recent.iter().filter(|b| b.id > n).cloned().collect(),
            None => Vec::new(),
        };
        (rx, backlog)
    }
}

impl Default for Live {
    fn default() -> Self {
        Self::new()
    }
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The data of one `snapshot` event: `{"batch": [Snapshot, ...]}`, oldest first.
#[derive(Debug, serde::Serialize)]
struct BatchBody<'a> {
    batch: &'a [Snapshot],
}

/// Samples over which rates are computed (1 s at [`SAMPLE_EVERY`]).
pub const RATE_SAMPLES: usize = 10;

/// Takes one snapshot; `history` keeps the last [`RATE_SAMPLES`] counter readings, so
/// frames/s and GB/s are averaged over about one second.
pub fn snapshot(
    shared: &Shared,
    telemetry: &Telemetry,
    history: &mut VecDeque<(Instant, CounterValues)>,
) -> Snapshot {
    let now = Instant::now();
    let counters = shared.counters.read();
    let (fps, gbps) = match history.front() {
        Some((t, c)) => {
            let dt = (now - *t).as_secs_f64().max(1e-6);
            (
                counters.frames_inferred.saturating_sub(c.frames_inferred) as f64 / dt,
                counters.bytes_captured.saturating_sub(c.bytes_captured) as f64 / dt / 1e9,
            )
        }
        None => (0.0, 0.0),
    };
    if history.len() >= RATE_SAMPLES {
        history.pop_front();
    }
    history.push_back((now, counters));
    let published = shared.published.lock().expect("published poisoned").clone();
    let latency_us = published
        .window
        .map(|w| {
            w.iter()
                .filter(|(_, q)| q.count > 0)
                .map(|(s, q)| (s.as_str(), *q))
                .collect()
        })
        .unwrap_or_default();
    Snapshot {
        t: unix_now(),
        state: shared.state().as_str(),
        fps,
        gbps,
        counters,
        latency_us,
        latest: published.latest.map(|l| LatestBrief {
            seq: l.seq,
            top5: l.top5,
        }),
        telemetry: telemetry.latest_point(),
    }
}

/// Starts the sampler task. Rates are over one sampling period.
pub fn spawn_sampler(shared: Arc<Shared>, telemetry: Arc<Telemetry>, live: Live) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(SAMPLE_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut history = VecDeque::with_capacity(RATE_SAMPLES);
        let mut batch = Vec::with_capacity(BATCH);
        // Ids of a later run are above those of an earlier one (see the module doc).
        let mut id = (unix_now() * 1000.0) as u64;
        loop {
            tick.tick().await;
            let s = snapshot(&shared, &telemetry, &mut history);
            live.record(&s);
            batch.push(s);
            if batch.len() >= BATCH {
                id += 1;
                let json = serde_json::to_string(&BatchBody { batch: &batch })
                    .expect("snapshots serialise");
                batch.clear();
                live.publish(Batch {
                    id,
                    json: json.into(),
                });
            }
        }
    });
}

/// Query of `GET /api/v1/stream`.
#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StreamQuery {
    /// Resume after this id, for a client that cannot send `Last-Event-ID` (a fresh
    /// `EventSource`); the header wins when both are present.
    pub last_event_id: Option<u64>,
}

/// `GET /api/v1/stream`: Server-Sent Events, event `snapshot`, data `{"batch":[...]}`,
/// resumed after `Last-Event-ID` (or `?last_event_id=`) when given. An id that is not a
/// number is ignored (the stream starts live).
#[utoipa::path(get, path = "/api/v1/stream", tag = "live",
    params(StreamQuery, ("Last-Event-ID" = Option<u64>, Header, description = "Resume after this event id")),
    responses((status = 200,
        description = "Server-Sent Events: `snapshot` events (id, data `{\"batch\": [Snapshot, ...]}` about 3 times a second) and `ota` events (no id, data: the OTA status); never ends by itself",
        body = String, content_type = "text/event-stream")))]
pub async fn stream(
    State(live): State<Live>,
    headers: axum::http::HeaderMap,
    query: Result<axum::extract::Query<StreamQuery>, axum::extract::rejection::QueryRejection>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let header_id = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let after = header_id.or(query.ok().and_then(|q| q.0.last_event_id));
    let (rx, backlog) = live.subscribe_after(after);
    let named = BroadcastStream::new(live.named.subscribe())
        .filter_map(|e| e.ok())
        .map(|(name, json)| Event::default().event(name).data(&*json));
    let closing = live.closing.subscribe();
    let events = tokio_stream::iter(backlog)
        .chain(BroadcastStream::new(rx).filter_map(|b| b.ok()))
        .map(|b| {
            Event::default()
                .event("snapshot")
                .id(b.id.to_string())
                .data(&*b.json)
        })
        .merge(named)
        .take_while(move |_| !*closing.borrow())
        .map(Ok);
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(10)))
}
