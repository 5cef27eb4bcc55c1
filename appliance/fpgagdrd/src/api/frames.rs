//! `GET /api/v1/frames/latest`: the frame view, a downscaled PNG of a recent frame
//! beside its own result.
//!
//! Owns: serving the frame view: the results room pairs the inference thread's newest
//! frame copy (`Shared::frame_copy`, taken about once a second from the entry it held)
//! with that frame's own result (`results/recent.rs`), and this renders the copy as an
//! image scaled to fit [`MAX_SIDE`] (`results::image::render`), its key in
//! `X-Frame-Run` / `X-Frame-Seq` (`GET /api/v1/results/{run}/{seq}` is its result).
//! Must not: touch a ring entry; serve a copy whose result has not been made (it would
//! stand beside another frame's result).

use std::time::Duration;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, PROBLEM, Problem};
use super::state::{AppState, blocking};

/// Longest side of the view, pixels (a frame smaller than that is shown as it is).
pub(super) const MAX_SIDE: u32 = 480;
/// How long the view waits for the result of the first frame copy (taken before its
/// result is made) before it answers 404.
const PAIR_WAIT: Duration = Duration::from_secs(3);
/// How often it looks meanwhile.
const PAIR_POLL: Duration = Duration::from_millis(50);

/// The frame view as PNG, scaled to fit 480 × 480 pixels: the newest frame the
/// inference thread copied (about once a second) whose result has been made; its key in
/// `X-Frame-Run` and `X-Frame-Seq` (its result: `GET /api/v1/results/{run}/{seq}`).
#[utoipa::path(get, path = "/api/v1/frames/latest", tag = "results",
    responses(
        (status = 200, description = "The frame, PNG", content_type = "image/png", body = Vec<u8>,
            headers(("X-Frame-Run" = u64, description = "The run of the frame's result"),
                    ("X-Frame-Seq" = u64, description = "The frame's sequence number"))),
        (status = 404, description = "No frame copied with its result yet: no copy, or its result not made within 3 s (`no-frame`)", body = Problem, content_type = PROBLEM),
        (status = 500, description = "The copy could not be rendered (`internal`)", body = Problem, content_type = PROBLEM),
    ))]
pub(super) async fn latest_frame(State(s): State<AppState>) -> Result<Response, ApiError> {
    // The first copy is taken before its result is made: wait for that result (at most
    // PAIR_WAIT) rather than answer 404 while a frame is on its way.
    let mut waited = Duration::ZERO;
    let view = loop {
        let copy = s
            .shared
            .frame_copy
            .lock()
            .expect("frame copy poisoned")
            .clone();
        let has_copy = copy.is_some();
        match s.results.frame_view(copy) {
            Some(v) => break v,
            None if has_copy && waited < PAIR_WAIT => {
                tokio::time::sleep(PAIR_POLL).await;
                waited += PAIR_POLL;
            }
            None => return Err(ApiError::NoFrame),
        }
    };
    let (run, seq) = view.result.record.key();
    let frame = view.frame.clone();
    let (_, png) = blocking(move || crate::results::image::render(&frame, Some(MAX_SIDE)))
        .await?
        .map_err(|e| ApiError::Internal(format!("the frame view: {e}")))?;
    Ok((
        [
            (header::CONTENT_TYPE, "image/png".to_string()),
            (header::CACHE_CONTROL, "no-store".to_string()),
            (
                header::HeaderName::from_static("x-frame-run"),
                run.to_string(),
            ),
            (
                header::HeaderName::from_static("x-frame-seq"),
                seq.to_string(),
            ),
        ],
        png,
    )
        .into_response())
}
