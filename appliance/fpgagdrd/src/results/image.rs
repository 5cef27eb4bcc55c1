//! A frame as an image: the header is parsed, the pixels (mono8 or rgb8, row by row at
//! the header's stride) are optionally scaled to fit a side and encoded as PNG (the
//! `image` crate). Used by the frame view (`api/frames.rs`) and the frame keeper
//! (`keep.rs`).
//!
//! Owns: [`render`]. Must not: touch a ring entry (it reads a copy).

use fpgagdr::frame::{FrameHeader, HEADER_LEN, PixelFormat};

/// The frame in `bytes` (header and payload, as C2H moved it) as PNG, scaled to fit
/// `max_side` × `max_side` pixels when given (never enlarged). Errors: the header does
/// not parse, or the payload is shorter than the header says.
pub fn render(bytes: &[u8], max_side: Option<u32>) -> Result<(FrameHeader, Vec<u8>), String> {
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
    let img = match max_side {
        Some(side) if h.width.max(h.height) > side => img.thumbnail(side, side),
        _ => img,
    };
    let mut png = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .map_err(|e| e.to_string())?;
    Ok((h, png))
}
