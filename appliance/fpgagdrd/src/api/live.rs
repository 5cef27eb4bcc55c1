//! Live numbers for the dashboard: a sampler that turns counters and the published
//! window into [`Snapshot`]s 10 times a second, and the SSE endpoint that sends them in
//! batches about 4 times a second.
//!
//! Owns: [`Live`] (the broadcast of batches), [`spawn_sampler`], [`stream`].
//! Neighbours: reads `metrics.rs` / `pipeline::Shared`; `webui/js/stream.js` consumes.

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

use crate::metrics::{CounterValues, LatestBrief, Snapshot};
use crate::pipeline::Shared;
use crate::telemetry::Telemetry;

/// Sampling period of snapshots.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(100);
/// Snapshots per SSE event.
pub const BATCH: usize = 3;

/// One SSE event: its id and the JSON `{"batch":[...]}`.
#[derive(Debug, Clone)]
pub struct Batch {
    /// Increasing event id.
    pub id: u64,
    /// Serialized batch.
    pub json: Arc<str>,
}

/// The live feed: subscribers get every batch from now on.
#[derive(Debug, Clone)]
pub struct Live {
    tx: broadcast::Sender<Batch>,
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
            closing: tokio::sync::watch::channel(false).0,
        }
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
        let mut id = 0u64;
        loop {
            tick.tick().await;
            batch.push(snapshot(&shared, &telemetry, &mut history));
            if batch.len() >= BATCH {
                id += 1;
                let json = serde_json::json!({ "batch": batch }).to_string();
                batch.clear();
                // No subscriber is fine: the batch is simply not sent.
                let _ = live.tx.send(Batch {
                    id,
                    json: json.into(),
                });
            }
        }
    });
}

/// `GET /api/v1/stream`: Server-Sent Events, event `snapshot`, data `{"batch":[...]}`.
pub async fn stream(
    State(live): State<Live>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let rx = BroadcastStream::new(live.tx.subscribe());
    let closing = live.closing.subscribe();
    let events = rx
        .filter_map(|b| b.ok())
        .take_while(move |_| !*closing.borrow())
        .map(|b| {
            Ok(Event::default()
                .event("snapshot")
                .id(b.id.to_string())
                .data(&*b.json))
        });
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(10)))
}
