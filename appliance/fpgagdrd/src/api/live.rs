//! `GET /api/v1/stream`: the frame board's events as Server-Sent Events, and named
//! events of other rooms (`ota`) on the same stream.
//!
//! Follow one frame: the board (`board/mod.rs`) made its snapshot into an event; this
//! handler sends the stream's bounded replay first (the last minute, or what a resuming
//! client missed: `board/replay.rs`), then every live event.
//! Next hop: `webui/js/stream.js` (the page's one `EventSource`).
//!
//! Owns: [`Live`] (the board, the named events, closing every stream at shutdown),
//! [`stream`]. Resume: a client that reconnects with `Last-Event-ID: N` (an
//! `EventSource` sends it by itself), or opens with `?last_event_id=N`, gets the
//! snapshots sent after event `N` (within the bounded replay), then the live ones; a
//! client without an id gets the bounded replay of the last minute. Ids start at the
//! service's start time in milliseconds and go up by one per live event, so an id from
//! before a restart is below every id of the new run.
//!
//! Fan-out: every event goes out in the SSE bytes the board rendered once
//! ([`crate::board::Event::sse`]; named events are rendered once in
//! [`Live::publish_event`]); a stream clones a reference to them and writes them, so a
//! thousand streams cost one rendering per event, not a thousand. A stream that falls
//! more than the channel's 16 events behind skips what it missed (it is not waited
//! for), and one whose client stops reading is closed by the accept loop's send
//! timeout. A comment line (`:`) goes out after 10 s without an event, so proxies do
//! not take a quiet stream for a dead one.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::broadcast;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::BroadcastStream;

use crate::board::{self, Board};

/// Time without an event after which a stream sends a comment line.
pub const KEEP_ALIVE: Duration = Duration::from_secs(10);

/// The live feed: the frame board's events and other rooms' named events.
#[derive(Debug, Clone)]
pub struct Live {
    board: Board,
    /// Named events other than snapshots (`ota`), in their SSE bytes: sent live only,
    /// without an id, so they neither take part in resume nor move a client's
    /// `Last-Event-ID`.
    named: broadcast::Sender<Bytes>,
    closing: tokio::sync::watch::Sender<bool>,
}

impl Live {
    /// A feed over `board`.
    pub fn new(board: Board) -> Self {
        Live {
            board,
            named: broadcast::channel(64).0,
            closing: tokio::sync::watch::channel(false).0,
        }
    }

    /// Ends every open stream at its next event (≤ 0.3 s): SSE streams never end by
    /// themselves, and a graceful HTTP shutdown waits for open connections.
    pub fn close(&self) {
        self.closing.send_replace(true);
    }

    /// Turns true when the service is stopping (every stream ends at its next event).
    pub fn closing(&self) -> tokio::sync::watch::Receiver<bool> {
        self.closing.subscribe()
    }

    /// Sends a named event (`event: NAME`, `data: JSON`, no id) to every open stream.
    pub fn publish_event(&self, name: &'static str, json: Arc<str>) {
        let _ = self.named.send(board::sse(name, None, &json));
    }
}

/// Query of `GET /api/v1/stream`.
#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StreamQuery {
    /// Resume after this id, for a client that cannot send `Last-Event-ID` (a fresh
    /// `EventSource`); the header wins when both are present.
    pub last_event_id: Option<u64>,
}

/// `GET /api/v1/stream`: Server-Sent Events, event `snapshot`, data `{"batch":[...]}`:
/// first the bounded replay (at most the last 60 s and 192 KiB of snapshots; after
/// `Last-Event-ID` or `?last_event_id=` when given), then live. An id that is not a
/// number is ignored (the client gets the replay of the last minute).
#[utoipa::path(get, path = "/api/v1/stream", tag = "live",
    params(StreamQuery, ("Last-Event-ID" = Option<u64>, Header, description = "Resume after this event id")),
    responses((status = 200,
        description = "Server-Sent Events: `snapshot` events (id, data `{\"batch\": [Snapshot, ...]}`: first a replay of at most the last 60 s in at most 192 KiB, then about 3 events a second; the newest snapshot of each event also carries `latest` and `telemetry_sample`) and `ota` events (no id, data: the OTA status); never ends by itself",
        body = String, content_type = "text/event-stream")))]
pub async fn stream(
    State(live): State<Live>,
    headers: axum::http::HeaderMap,
    query: Result<axum::extract::Query<StreamQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let header_id = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let after = header_id.or(query.ok().and_then(|q| q.0.last_event_id));
    let (replay, rx) = live.board.subscribe(after);
    let named = BroadcastStream::new(live.named.subscribe()).filter_map(|e| e.ok());
    let closing = live.closing.subscribe();
    let events = tokio_stream::iter(replay)
        .chain(BroadcastStream::new(rx).filter_map(|b| b.ok()))
        .map(|b| b.sse)
        .merge(named)
        // A pause of KEEP_ALIVE yields an `Elapsed` (the stream goes on): a comment.
        .timeout_repeating(tokio::time::interval_at(
            tokio::time::Instant::now() + KEEP_ALIVE,
            KEEP_ALIVE,
        ))
        .map(|e| e.unwrap_or_else(|_| Bytes::from_static(b":\n\n")))
        .take_while(move |_| !*closing.borrow())
        .map(Ok::<_, Infallible>);
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        Body::from_stream(events),
    )
        .into_response()
}
