//! The results endpoints: `GET /api/v1/results` (the results log, paged by key),
//! `GET /api/v1/results/{run}/{seq}` (one result by key) and
//! `GET /api/v1/results/stream` (every result as it is made, SSE, resumable by key).
//!
//! Owns: the query rules (`after=RUN:SEQ`, `limit`), the stream's event ids (`RUN:SEQ`,
//! a result's key) and its resume (`Last-Event-ID` or `?after=`: the results after that
//! key, from the log and the room's recent results, then live), the stream's per-client
//! drops. Must not: write the log or publish (the results room, `crate::results`, does).

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use tokio_stream::Stream;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;

use super::error::{ApiError, PROBLEM, Problem};
use super::state::{AppState, blocking};
use crate::results::{ResultRecord, StreamItem};

/// Most results one page holds.
pub(super) const MAX_LIMIT: usize = 1000;
/// Results a page holds when `limit` is not given.
pub(super) const DEFAULT_LIMIT: usize = 100;
/// Most results a resuming stream client is sent before the live ones.
pub(super) const RESUME_MAX: usize = 4096;

/// Query of `GET /api/v1/results`.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct ResultsQuery {
    /// Results after this key, `RUN:SEQ` (a page's `next`); the oldest kept when absent.
    #[param(pattern = "^[0-9]{1,19}:[0-9]{1,19}$", example = "1764626754123:4711")]
    pub(super) after: Option<String>,
    /// Results in the page, 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub(super) limit: Option<usize>,
}

/// A page of the results log.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct ResultsPage {
    /// Results in (run, seq) order.
    pub(super) results: Vec<ResultRecord>,
    /// The key to ask `after=` for the next page (the last result's), or `null` when
    /// the page is empty.
    pub(super) next: Option<String>,
    /// Whether more results follow this page now.
    pub(super) more: bool,
}

/// `dropped` event of `GET /api/v1/results/stream`: results this client did not get.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct StreamDropped {
    /// Results missed; null when not counted (a resume further behind than 4096
    /// results: page the rest from `GET /api/v1/results?after=` `after`).
    pub(super) count: Option<u64>,
    /// With `count` null: the key after which results were not sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) after: Option<String>,
}

fn parse_key(s: &str) -> Option<(u64, u64)> {
    let (run, seq) = s.split_once(':')?;
    Some((run.trim().parse().ok()?, seq.trim().parse().ok()?))
}

fn key_or_problem(s: &str) -> Result<(u64, u64), ApiError> {
    parse_key(s).ok_or_else(|| {
        ApiError::Query(format!(
            "rule results-after: after={s:?} is not a key RUN:SEQ (two whole numbers, as a page's next gives)"
        ))
    })
}

/// Results from the log (`docs/api.md`, "Results out"), in (run, seq) order: up to
/// `limit` after the key `after`. The log keeps the newest results within its cap.
#[utoipa::path(get, path = "/api/v1/results", tag = "results",
    params(ResultsQuery),
    responses(
        (status = 200, description = "A page of the results log", body = ResultsPage),
        (status = 400, description = "A bad `after` or `limit` (`query`)", body = Problem, content_type = PROBLEM),
        (status = 500, description = "The log could not be read (`internal`)", body = Problem, content_type = PROBLEM),
    ))]
pub(super) async fn results_page(
    State(s): State<AppState>,
    query: Result<axum::extract::Query<ResultsQuery>, QueryRejection>,
) -> Result<Json<ResultsPage>, ApiError> {
    let q = query.map_err(|e| ApiError::Query(e.body_text()))?.0;
    let after = q.after.as_deref().map(key_or_problem).transpose()?;
    let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::Query(format!(
            "rule results-limit: limit={limit} is outside 1 to {MAX_LIMIT}"
        )));
    }
    let dir = s.results.log_dir().to_path_buf();
    let (results, more) = blocking(move || crate::results::sinks::log::read(&dir, after, limit))
        .await?
        .map_err(|e| ApiError::Internal(format!("reading the results log: {e}")))?;
    let next = results.last().map(|r| format!("{}:{}", r.run, r.seq));
    Ok(Json(ResultsPage {
        results,
        next,
        more,
    }))
}

/// One result by its key: from the results room's memory of the last results, else
/// the log (a result is written to the log within a second).
#[utoipa::path(get, path = "/api/v1/results/{run}/{seq}", tag = "results",
    params(("run" = u64, Path, description = "The pipeline run (a result's `run`)"),
           ("seq" = u64, Path, description = "The frame's sequence number in that run")),
    responses(
        (status = 200, description = "The result", body = ResultRecord),
        (status = 400, description = "`run` or `seq` is not a whole number (`query`)", body = Problem, content_type = PROBLEM),
        (status = 404, description = "No result has that key: not made (a frame dropped before its result has none), or no longer in the log (`no-result`)", body = Problem, content_type = PROBLEM),
        (status = 500, description = "The log could not be read (`internal`)", body = Problem, content_type = PROBLEM),
    ))]
pub(super) async fn result_by_key(
    State(s): State<AppState>,
    key: Result<Path<(u64, u64)>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path((run, seq)) = key.map_err(|e| {
        ApiError::Query(format!(
            "rule results-key: {} (the path is /api/v1/results/RUN/SEQ, two whole numbers)",
            e.body_text()
        ))
    })?;
    let json: String = match s.results.recent_result(run, seq) {
        Some(e) => e.json.to_string(),
        None => {
            let dir = s.results.log_dir().to_path_buf();
            let after = if seq > 0 {
                Some((run, seq - 1))
            } else {
                run.checked_sub(1).map(|r| (r, u64::MAX))
            };
            let (found, _) = blocking(move || crate::results::sinks::log::read(&dir, after, 1))
                .await?
                .map_err(|e| ApiError::Internal(format!("reading the results log: {e}")))?;
            let r = found
                .into_iter()
                .find(|r| r.key() == (run, seq))
                .ok_or(ApiError::NoResult)?;
            serde_json::to_string(&r).expect("a record serialises")
        }
    };
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        json,
    )
        .into_response())
}

/// Query of `GET /api/v1/results/stream`.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct StreamQuery {
    /// Resume after this key, `RUN:SEQ` (an event's id), for a client that cannot send
    /// `Last-Event-ID` (a fresh `EventSource`); the header wins when both are given.
    #[param(pattern = "^[0-9]{1,19}:[0-9]{1,19}$", example = "1764626754123:4711")]
    pub(super) after: Option<String>,
}

/// One result event: `id: RUN:SEQ`, the record as data.
fn result_event(key: (u64, u64), json: &str) -> Event {
    Event::default()
        .event("result")
        .id(format!("{}:{}", key.0, key.1))
        .data(json)
}

/// Every frame's result as it is made: Server-Sent Events `result` (id `RUN:SEQ`, the
/// result's key; data: the result, the same JSON as MQTT and the log, with `alerts`
/// naming the rules it matched), and `alert` (no id; data: an AlertRecord) after it
/// for each rule it matched, and `alert` (data: a ConditionAlertRecord) when a
/// condition rule fires or clears. A client that comes back with `Last-Event-ID: RUN:SEQ`
/// (an `EventSource` sends it by itself) or `?after=RUN:SEQ` first gets the results
/// after that key (at most 4096, from the log and the room's memory; alerts are not
/// sent again), then the live ones, none twice. A client that falls more than 1024
/// results behind loses the oldest; it gets a `dropped` event (data `{"count": N}`) and
/// the loss is counted in status (`outputs.dropped.stream_slow_client`); other clients
/// are not slowed. Clients count against the stream limit (`--max-streams`).
#[utoipa::path(get, path = "/api/v1/results/stream", tag = "results",
    params(StreamQuery, ("Last-Event-ID" = Option<String>, Header, description = "Resume after this result's key, RUN:SEQ (an event's id)")),
    responses(
        (status = 200,
        description = "Server-Sent Events: `result` (id RUN:SEQ, data: a ResultRecord) for every result from now on (after a resume key, first the results after it), `alert` (no id, data: an AlertRecord) for each rule a result matched, or a ConditionAlertRecord when a condition rule (drop_rate, e2e_p99, temperature, power) fires or clears, `dropped` (no id, data: a StreamDropped) where this client missed results; never ends by itself.",
        body = String, content_type = "text/event-stream"),
        (status = 400, description = "`after` is not a key RUN:SEQ (`query`)", body = Problem, content_type = PROBLEM),
        (status = 500, description = "The log could not be read for a resume (`internal`)", body = Problem, content_type = PROBLEM),
    ))]
pub(super) async fn results_stream(
    State(s): State<AppState>,
    headers: HeaderMap,
    query: Result<axum::extract::Query<StreamQuery>, QueryRejection>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let q = query.map_err(|e| ApiError::Query(e.body_text()))?.0;
    let asked = q.after.as_deref().map(key_or_problem).transpose()?;
    // A Last-Event-ID that is not a key (another stream's id) is ignored.
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(parse_key)
        .or(asked);
    // Subscribed first: nothing made while the replay is read is missed.
    let rx = s.results.subscribe();
    let mut replay: Vec<Event> = Vec::new();
    let mut last = after;
    if let Some(after) = after {
        let (recent, oldest) = s.results.recent_after(after);
        if oldest.is_none_or(|o| o > after) {
            // Results between the key and the oldest remembered one: from the log.
            let dir = s.results.log_dir().to_path_buf();
            let (logged, more) =
                blocking(move || crate::results::sinks::log::read(&dir, Some(after), RESUME_MAX))
                    .await?
                    .map_err(|e| ApiError::Internal(format!("reading the results log: {e}")))?;
            let first_recent = recent.first().map(|e| e.record.key());
            for r in logged
                .iter()
                .filter(|r| first_recent.is_none_or(|f| r.key() < f))
            {
                let json = serde_json::to_string(r).expect("a record serialises");
                replay.push(result_event(r.key(), &json));
                last = Some(r.key());
            }
            if more
                && let Some(l) = last
                && first_recent.is_some_and(|f| l < f)
            {
                let gap = StreamDropped {
                    count: None,
                    after: Some(format!("{}:{}", l.0, l.1)),
                };
                replay.push(
                    Event::default()
                        .event("dropped")
                        .data(serde_json::to_string(&gap).expect("serialises")),
                );
            }
        }
        for e in recent.iter().take(RESUME_MAX.saturating_sub(replay.len())) {
            replay.push(result_event(e.record.key(), &e.json));
            last = Some(e.record.key());
        }
    }
    let results = s.results.clone();
    let closing = s.live.closing();
    let live = BroadcastStream::new(rx).filter_map(move |r| match r {
        Ok(StreamItem {
            key: Some(key),
            json,
            ..
        }) => {
            // Sent in the replay already.
            if last.is_some_and(|l| key <= l) {
                None
            } else {
                Some(result_event(key, &json))
            }
        }
        Ok(StreamItem { event, json, .. }) => Some(Event::default().event(event).data(&*json)),
        Err(BroadcastStreamRecvError::Lagged(n)) => {
            results.stream_dropped(n);
            let d = StreamDropped {
                count: Some(n),
                after: None,
            };
            Some(
                Event::default()
                    .event("dropped")
                    .data(serde_json::to_string(&d).expect("serialises")),
            )
        }
    });
    let events = tokio_stream::iter(replay)
        .chain(live)
        .take_while(move |_| !*closing.borrow())
        .map(Ok);
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(10))))
}
