//! `GET /api/v1/frames/latest`: a downscaled PNG of a recent frame (issue 20).
//!
//! Owns: turning the inference thread's frame copy (`Shared::frame_copy`, taken about
//! once a second from the entry it held) into an image: the header is parsed, the
//! pixels (mono8 or rgb8, row by row at the header's stride) are scaled to fit
//! [`MAX_SIDE`] and encoded as PNG (the `image` crate). Must not: touch a ring entry.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, PROBLEM, Problem};
use super::state::{AppState, blocking};
use fpgagdr::frame::{FrameHeader, HEADER_LEN, PixelFormat};

/// Longest side of the view, pixels (a frame smaller than that is shown as it is).
pub(super) const MAX_SIDE: u32 = 480;

/// The frame's pixels as an image scaled to fit [`MAX_SIDE`], PNG-encoded.
fn render(bytes: &[u8]) -> Result<(FrameHeader, Vec<u8>), String> {
    let h = FrameHeader::parse(bytes, bytes.len()).map_err(|e| e.to_string())?;
    let bpp = h.format.bytes_per_pixel();
    let row = h.width as usize * bpp;
    let payload = &bytes[HEADER_LEN..];
    let mut pixels = Vec::with_capacity(row * h.height as usize);
    for y in 0..h.height as usize {
        let start = y * h.stride as usize;
        let r = payload
            .get(start..start + row)
            .ok_or("the frame is shorter than its header says")?;
        pixels.extend_from_slice(r);
    }
    let img = match h.format {
        PixelFormat::Mono8 => image::GrayImage::from_raw(h.width, h.height, pixels)
            .map(image::DynamicImage::ImageLuma8),
        PixelFormat::Rgb8 => {
            image::RgbImage::from_raw(h.width, h.height, pixels).map(image::DynamicImage::ImageRgb8)
        }
    }
    .ok_or("pixels do not fill the frame")?;
    let img = if h.width.max(h.height) > MAX_SIDE {
        img.thumbnail(MAX_SIDE, MAX_SIDE)
    } else {
        img
    };
    let mut png = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .map_err(|e| e.to_string())?;
    Ok((h, png))
}

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
    let (h, png) = blocking(move || render(&copy))
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
