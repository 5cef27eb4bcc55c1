//! The board's SSE events: the live ones, and the bounded replay a stream starts with.
//!
//! An event's data is `{"batch": [snapshot, ...]}`, oldest first. Every snapshot
//! carries the chart figures (rates, counters, stage windows, the telemetry point); the
//! newest of each event also carries `latest` (the latest result, complete with its
//! frame) and `telemetry_sample` (the full telemetry sample: rails, zones, Jetson
//! figures, sources), so each event holds everything a page shows, from one instant.
//!
//! Replay: a stream that opens (a page loading) gets the kept snapshots of the last
//! [`REPLAY_SPAN`] first, then the live events; one that resumes (`Last-Event-ID: N`)
//! gets those sent after event `N`, within the same span. The replay never exceeds
//! [`REPLAY_MAX_BYTES`] of event data: when the snapshots would, every k-th is sent
//! (the newest always, k the smallest that fits), so the charts keep their whole
//! minute at a coarser step. Replay events group whole live events (up to
//! [`REPLAY_GROUP`] snapshots each) and carry the id of the last one they include, so
//! a client that drops mid-replay resumes where it was. Without thinning a resume
//! gets the very events it missed, byte for byte.
//!
//! Wire form: each event is rendered as SSE bytes once, when it is made ([`sse`]), and
//! every stream sends those same bytes ([`Event::sse`], shared, not copied): with a
//! thousand streams open, the per-stream work of an event is a reference count.
//!
//! Owns: [`Event`], [`event`], [`bounded`], [`sse`]. Next hop of a frame: `api/live.rs`
//! sends the events.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;

use super::snapshot::Snapshot;

/// The span a replay covers at most.
pub const REPLAY_SPAN: Duration = Duration::from_secs(60);
/// The most event data a replay sends, bytes.
pub const REPLAY_MAX_BYTES: usize = 192 * 1024;
/// Snapshots per replay event, at most about (whole live events are not split).
pub const REPLAY_GROUP: usize = 100;

/// One `snapshot` event: its id, its data, and both as SSE bytes.
#[derive(Debug, Clone)]
pub struct Event {
    /// Increasing event id.
    pub id: u64,
    /// `{"batch": [...]}`.
    pub json: Arc<str>,
    /// `event: snapshot`, `id: <id>`, `data: <json>` and the blank line that ends it:
    /// what a stream sends, rendered once for every stream.
    pub sse: Bytes,
}

impl Event {
    /// The `snapshot` event `id` with data `json`.
    pub fn new(id: u64, json: Arc<str>) -> Event {
        let sse = sse("snapshot", Some(id), &json);
        Event { id, json, sse }
    }
}

/// One Server-Sent Event in its wire form (WHATWG HTML, "Server-sent events"):
/// `event: <name>`, `id: <id>` when given, one `data:` line per line of `data`, then a
/// blank line. `name` must not hold a line break (it is a constant of the caller's).
pub fn sse(name: &str, id: Option<u64>, data: &str) -> Bytes {
    debug_assert!(
        !name.contains(['\r', '\n']),
        "an SSE event name is one line"
    );
    let mut out = String::with_capacity(data.len() + name.len() + 40);
    out.push_str("event: ");
    out.push_str(name);
    out.push('\n');
    if let Some(id) = id {
        out.push_str("id: ");
        out.push_str(&id.to_string());
        out.push('\n');
    }
    for line in data.split('\n') {
        out.push_str("data: ");
        out.push_str(line.strip_suffix('\r').unwrap_or(line));
        out.push('\n');
    }
    out.push('\n');
    Bytes::from(out)
}

/// `row` (a snapshot's JSON object) with the newest-only parts of `s` added: `latest`
/// (the result's JSON as the results room made it) and `telemetry_sample`.
fn complete(s: &Snapshot, row: &str) -> String {
    let sample = serde_json::to_string(&s.sample.as_deref()).expect("samples serialise");
    let head = row.strip_suffix('}').expect("a snapshot is a JSON object");
    format!(
        "{head},\"latest\":{},\"telemetry_sample\":{sample}}}",
        s.latest.as_deref().unwrap_or("null")
    )
}

/// The event of `snapshots` (oldest first, each with its row JSON).
pub(super) fn event<'a>(
    id: u64,
    snapshots: impl Iterator<Item = (&'a Snapshot, &'a str)>,
) -> Event {
    let all: Vec<_> = snapshots.collect();
    let mut json = String::from("{\"batch\":[");
    for (i, (s, row)) in all.iter().enumerate() {
        if i > 0 {
            json.push(',');
        }
        if i + 1 == all.len() {
            json.push_str(&complete(s, row));
        } else {
            json.push_str(row);
        }
    }
    json.push_str("]}");
    Event::new(id, json.into())
}

/// Groups `picked` (id, snapshot, row; oldest first) into replay events of about
/// `size` snapshots (1: the live events as they were sent).
fn group(picked: &[(u64, &Snapshot, &str)], size: usize) -> Vec<Event> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < picked.len() {
        let mut end = (start + size).min(picked.len());
        // Do not split a live event: end after the last snapshot of the same id.
        while end < picked.len() && picked[end].0 == picked[end - 1].0 {
            end += 1;
        }
        let chunk = &picked[start..end];
        let id = chunk[chunk.len() - 1].0;
        out.push(event(id, chunk.iter().map(|(_, s, r)| (*s, *r))));
        start = end;
    }
    out
}

/// The replay for a client that saw event `after` (`None`: nothing yet), from `kept`
/// (every snapshot sent, oldest first, with the id of its event): at most
/// [`REPLAY_SPAN`] and [`REPLAY_MAX_BYTES`].
pub(super) fn bounded(kept: &[(u64, &Snapshot, &str)], after: Option<u64>) -> Vec<Event> {
    let Some(newest) = kept.last() else {
        return Vec::new();
    };
    let since = newest.1.t - REPLAY_SPAN.as_secs_f64();
    let wanted: Vec<(u64, &Snapshot, &str)> = kept
        .iter()
        .filter(|(id, s, _)| after.is_none_or(|a| *id > a) && s.t >= since)
        .copied()
        .collect();
    if wanted.is_empty() {
        return Vec::new();
    }
    // The missed events as they were sent, when they fit.
    let events = group(&wanted, 1);
    let bytes: usize = events.iter().map(|e| e.json.len()).sum();
    if bytes <= REPLAY_MAX_BYTES {
        return events;
    }
    let mut step = 1;
    loop {
        // Every step-th snapshot counted from the newest, which is always sent.
        let n = wanted.len();
        let picked: Vec<_> = wanted
            .iter()
            .enumerate()
            .filter(|(i, _)| (n - 1 - i).is_multiple_of(step))
            .map(|(_, k)| *k)
            .collect();
        let events = group(&picked, REPLAY_GROUP);
        let bytes: usize = events.iter().map(|e| e.json.len()).sum();
        if bytes <= REPLAY_MAX_BYTES || picked.len() == 1 {
            return events;
        }
        // The next step that could fit, at least one more.
        step = (step + 1).max((step * bytes).div_ceil(REPLAY_MAX_BYTES));
    }
}
