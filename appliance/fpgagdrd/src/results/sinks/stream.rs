//! The per-frame stream: every result and alert as it is made, to the clients of
//! `GET /api/v1/results/stream` (a bounded tokio broadcast: a slow client misses
//! results, counted for it, and is never waited for).
//!
//! Owns: [`StreamSink`], [`StreamItem`], [`STREAM_BACKLOG`]. Must not: know HTTP (the
//! handler, `api/results.rs`, subscribes and writes SSE).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::super::record::ResultRecord;
use super::super::{OutputsStatus, Sink};

/// Results the per-frame stream keeps for a slow client before that client starts
/// losing results (counted for it: its `dropped` events).
pub const STREAM_BACKLOG: usize = 1024;

/// One item of the per-frame stream: the SSE event name and its JSON.
pub type StreamItem = (&'static str, Arc<str>);

/// The per-frame stream.
#[derive(Debug)]
pub struct StreamSink {
    tx: tokio::sync::broadcast::Sender<StreamItem>,
    /// Results slow clients missed (all clients together).
    dropped: AtomicU64,
}

impl Default for StreamSink {
    fn default() -> Self {
        StreamSink {
            tx: tokio::sync::broadcast::channel(STREAM_BACKLOG).0,
            dropped: AtomicU64::new(0),
        }
    }
}

impl StreamSink {
    /// A receiver of every result's JSON (`result`) and every alert (`alert`) from now
    /// on.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<StreamItem> {
        self.tx.subscribe()
    }

    /// Counts `n` results a slow client missed.
    pub fn missed(&self, n: u64) {
        self.dropped.fetch_add(n, Ordering::Relaxed);
    }
}

impl Sink for StreamSink {
    fn name(&self) -> &'static str {
        "stream"
    }

    fn result(&self, _: &ResultRecord, json: &Arc<str>) {
        // No receiver is not an error: nobody watches.
        let _ = self.tx.send(("result", json.clone()));
    }

    fn alert(&self, json: &Arc<str>) {
        let _ = self.tx.send(("alert", json.clone()));
    }

    fn status(&self, status: &mut OutputsStatus) {
        status.stream_clients = self.tx.receiver_count() as u64;
        status.dropped.stream_slow_client = self.dropped.load(Ordering::Relaxed);
    }
}
