//! The results endpoints (issue 20): `GET /api/v1/results` (the results log, paged by
//! key) and `GET /api/v1/results/stream` (every result as it is made, SSE).
//!
//! Owns: the query rules (`after=RUN:SEQ`, `limit`), the stream's per-client drops.
//! Must not: write the log or publish (the results room, `crate::results`, does).

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::extract::rejection::QueryRejection;
use axum::response::sse::{Event, KeepAlive, Sse};
use serde::{Deserialize, Serialize};
use tokio_stream::Stream;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;

use super::error::{ApiError, PROBLEM, Problem};
use super::state::{AppState, blocking};
use crate::results::ResultRecord;

/// Most results one page holds.
pub(super) const MAX_LIMIT: usize = 1000;
/// Results a page holds when `limit` is not given.
pub(super) const DEFAULT_LIMIT: usize = 100;

/// Query of `GET /api/v1/results`.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct ResultsQuery {
    /// Results after this key, `RUN:SEQ` (a page's `next`); the oldest kept when absent.
    pub(super) after: Option<String>,
    /// Results in the page, 1..=1000 (default 100).
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

fn parse_key(s: &str) -> Result<(u64, u64), ApiError> {
    let bad = || {
        ApiError::Query(format!(
            "rule results-after: after={s:?} is not a key RUN:SEQ (two whole numbers, as a page's `next` gives)"
        ))
    };
    let (run, seq) = s.split_once(':').ok_or_else(bad)?;
    Ok((
        run.trim().parse().map_err(|_| bad())?,
        seq.trim().parse().map_err(|_| bad())?,
    ))
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
    let after = q.after.as_deref().map(parse_key).transpose()?;
    let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::Query(format!(
            "rule results-limit: limit={limit} is outside 1..={MAX_LIMIT}"
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

/// Every frame's result as it is made: Server-Sent Events `result` (data: the result,
/// the same JSON as MQTT and the log, with `alerts` naming the rules it matched), and
/// `alert` (data: an AlertRecord) after it for each rule it matched, and `alert` (data: a
/// ConditionAlertRecord) when a condition rule fires or clears. A client that falls more than 1024 results
/// behind loses the oldest; it gets a `dropped` event (data `{"count": N}`) and the
/// loss is counted in status (`outputs.dropped.stream_slow_client`); other clients are
/// not slowed. Clients count against the stream limit (`--max-streams`).
#[utoipa::path(get, path = "/api/v1/results/stream", tag = "results",
    responses((status = 200,
        description = "Server-Sent Events: `result` (data: a ResultRecord) for every result from now on, `alert` (data: an AlertRecord) for each rule a result matched, or a ConditionAlertRecord when a condition rule (drop_rate, e2e_p99, temperature, power) fires or clears, `dropped` (data `{\"count\": N}`) where this client missed N; never ends by itself",
        body = String, content_type = "text/event-stream")))]
pub(super) async fn results_stream(
    State(s): State<AppState>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let results = s.results.clone();
    let closing = s.live.closing();
    let events = BroadcastStream::new(s.results.subscribe())
        .map(move |r| match r {
            Ok((event, json)) => Event::default().event(event).data(&*json),
            Err(BroadcastStreamRecvError::Lagged(n)) => {
                results.stream_dropped(n);
                Event::default()
                    .event("dropped")
                    .data(format!("{{\"count\":{n}}}"))
            }
        })
        .take_while(move |_| !*closing.borrow())
        .map(Ok);
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(10)))
}
