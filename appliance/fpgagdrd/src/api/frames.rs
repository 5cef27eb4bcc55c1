//! `GET /api/v1/frames/latest`: a downscaled PNG of a recent frame (issue 20).
//!
//! Owns: serving the inference thread's frame copy (`Shared::frame_copy`, taken about
//! once a second from the entry it held) as an image scaled to fit [`MAX_SIDE`]
//! (`results::image::render`). Must not: touch a ring entry.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, PROBLEM, Problem};
use super::state::{AppState, blocking};

/// Longest side of the view, pixels (a frame smaller than that is shown as it is).
pub(super) const MAX_SIDE: u32 = 480;

/// A recent frame as PNG, scaled to fit 480 × 480 pixels (the copy the inference thread
/// took within the last second or so; its sequence number in `X-Frame-Seq`).
#[utoipa::path(get, path = "/api/v1/frames/latest", tag = "results",
    responses(
        (status = 200, description = "The frame, PNG", content_type = "image/png", body = Vec<u8>,
            headers(("X-Frame-Seq" = u64, description = "The frame's sequence number"))),
        (status = 404, description = "No frame captured yet (`no-frame`)", body = Problem, content_type = PROBLEM),
        (status = 500, description = "The copy could not be rendered (`internal`)", body = Problem, content_type = PROBLEM),
    ))]
pub(super) async fn latest_frame(State(s): State<AppState>) -> Result<Response, ApiError> {
    let copy = s
        .shared
        .frame_copy
        .lock()
        .expect("frame copy poisoned")
        .clone()
        .ok_or(ApiError::NoFrame)?;
    let (h, png) = blocking(move || crate::results::image::render(&copy, Some(MAX_SIDE)))
        .await?
        .map_err(|e| ApiError::Internal(format!("the frame view: {e}")))?;
    Ok((
        [
            (header::CONTENT_TYPE, "image/png".to_string()),
            (header::CACHE_CONTROL, "no-store".to_string()),
            (
                header::HeaderName::from_static("x-frame-seq"),
                h.seq.to_string(),
            ),
        ],
        png,
    )
        .into_response())
}
