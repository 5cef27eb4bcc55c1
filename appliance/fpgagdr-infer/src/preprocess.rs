//! CPU preprocessing: a mono8/RGB8 frame of any size → the model's input tensor.
//!
//! Centre crop of 87.5 % of the short side (rounded down, offsets rounded down), bilinear resize to the model's H×W,
//! `(x − 127) / 128`, RGB planes in NCHW order; a mono frame fills all three planes.
//! This is the preprocessing of the TF Lite EfficientNet-Lite models (see
//! `models/README.md`). The GPU version (a CUDA kernel) must match it to a stated
//! tolerance; this file is the reference.

use fpgagdr::PixelFormat;

/// A frame in memory the CPU can read: pixels row by row, `stride` bytes apart.
#[derive(Debug, Clone, Copy)]
pub struct FrameView<'a> {
    /// Pixel layout.
    pub format: PixelFormat,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Bytes from one row to the next.
    pub stride: u32,
    /// The pixels (at least `stride × (height − 1) + width × bytes per pixel` bytes).
    pub pixels: &'a [u8],
}

/// One output coordinate's two source taps and the weight of the second.
#[derive(Debug, Clone, Copy)]
struct Tap {
    i0: usize,
    i1: usize,
    w1: f32,
}

/// Turns frames into input tensors; keeps its sampling tables between frames of the
/// same size, so steady-state preprocessing allocates nothing.
#[derive(Debug)]
pub struct Preprocessor {
    out_w: usize,
    out_h: usize,
    geometry: Option<(u32, u32)>,
    xs: Vec<Tap>,
    ys: Vec<Tap>,
}

/// Fraction of the short side kept by the centre crop.
pub const CROP_FRACTION: f64 = 0.875;
/// Normalisation: `(x − MEAN) / SCALE`.
pub const MEAN: f32 = 127.0;
/// Normalisation scale.
pub const SCALE: f32 = 128.0;

impl Preprocessor {
    /// A preprocessor for a model input of `out_w` × `out_h` pixels.
    pub fn new(out_w: usize, out_h: usize) -> Self {
        Preprocessor {
            out_w,
            out_h,
            geometry: None,
            xs: Vec::new(),
            ys: Vec::new(),
        }
    }

    /// Length of the output tensor, in f32 elements (3 × H × W).
    pub fn output_len(&self) -> usize {
        3 * self.out_w * self.out_h
    }

    /// Fills `out` (length [`Preprocessor::output_len`]) with the NCHW tensor of `frame`.
    pub fn run(&mut self, frame: &FrameView<'_>, out: &mut [f32]) {
        assert_eq!(out.len(), self.output_len(), "output tensor length");
        if self.geometry != Some((frame.width, frame.height)) {
            let (w, h) = (frame.width as f64, frame.height as f64);
            let crop = (w.min(h) * CROP_FRACTION).floor().max(1.0);
            self.xs = taps(
                ((w - crop) / 2.0).floor(),
                crop,
                self.out_w,
                frame.width as usize,
            );
            self.ys = taps(
                ((h - crop) / 2.0).floor(),
                crop,
                self.out_h,
                frame.height as usize,
            );
            self.geometry = Some((frame.width, frame.height));
        }
        let bpp = frame.format.bytes_per_pixel();
        let plane = self.out_w * self.out_h;
        let (r, rest) = out.split_at_mut(plane);
        let (g, b) = rest.split_at_mut(plane);
        let px = |x: usize, y: usize, c: usize| -> f32 {
            let ch = if bpp == 1 { 0 } else { c };
            frame.pixels[y * frame.stride as usize + x * bpp + ch] as f32
        };
        for (oy, ty) in self.ys.iter().enumerate() {
            for (ox, tx) in self.xs.iter().enumerate() {
                let i = oy * self.out_w + ox;
                for (c, dst) in [&mut r[i], &mut g[i], &mut b[i]].into_iter().enumerate() {
                    let top = px(tx.i0, ty.i0, c) * (1.0 - tx.w1) + px(tx.i1, ty.i0, c) * tx.w1;
                    let bot = px(tx.i0, ty.i1, c) * (1.0 - tx.w1) + px(tx.i1, ty.i1, c) * tx.w1;
                    *dst = ((top * (1.0 - ty.w1) + bot * ty.w1) - MEAN) / SCALE;
                }
            }
        }
    }
}

/// Sampling taps for `n` outputs covering `len` source pixels from `start` (half-pixel
/// centres, edges clamped to the source's `limit`).
fn taps(start: f64, len: f64, n: usize, limit: usize) -> Vec<Tap> {
    let scale = len / n as f64;
    (0..n)
        .map(|o| {
            let s = (start + (o as f64 + 0.5) * scale - 0.5).clamp(0.0, (limit - 1) as f64);
            let i0 = s.floor() as usize;
            let i1 = (i0 + 1).min(limit - 1);
            Tap {
                i0,
                i1,
                w1: (s - i0 as f64) as f32,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_grey_frame_gives_flat_planes() {
        let pixels = vec![127u8 + 64; 640 * 480];
        let f = FrameView {
            format: PixelFormat::Mono8,
            width: 640,
            height: 480,
            stride: 640,
            pixels: &pixels,
        };
        let mut p = Preprocessor::new(224, 224);
        let mut out = vec![0f32; p.output_len()];
        p.run(&f, &mut out);
        assert!(out.iter().all(|&v| (v - 0.5).abs() < 1e-6));
    }

    #[test]
    fn rgb_channels_land_in_their_planes() {
        let mut pixels = Vec::new();
        for _ in 0..50 * 40 {
            pixels.extend_from_slice(&[255, 127, 0]);
        }
        let f = FrameView {
            format: PixelFormat::Rgb8,
            width: 50,
            height: 40,
            stride: 150,
            pixels: &pixels,
        };
        let mut p = Preprocessor::new(8, 8);
        let mut out = vec![0f32; p.output_len()];
        p.run(&f, &mut out);
        assert!(out[..64].iter().all(|&v| (v - 1.0).abs() < 1e-6));
        assert!(out[64..128].iter().all(|&v| v.abs() < 1e-6));
        assert!(out[128..].iter().all(|&v| (v + 127.0 / 128.0).abs() < 1e-6));
    }

    #[test]
    fn crop_keeps_the_centre() {
        // A 100x50 frame whose left and right quarters are black and centre white: the
        // crop (44 px wide, centred) sees only white.
        let pixels: Vec<u8> = (0..50)
            .flat_map(|_| (0..100).map(|x| if (28..72).contains(&x) { 255 } else { 0 }))
            .collect();
        let f = FrameView {
            format: PixelFormat::Mono8,
            width: 100,
            height: 50,
            stride: 100,
            pixels: &pixels,
        };
        let mut p = Preprocessor::new(16, 16);
        let mut out = vec![0f32; p.output_len()];
        p.run(&f, &mut out);
        assert!(
            out.iter().all(|&v| (v - 1.0).abs() < 1e-6),
            "{:?}",
            &out[..16]
        );
    }

    #[test]
    fn stride_padding_is_skipped() {
        let mut pixels = vec![0u8; 12 * 10];
        for y in 0..10 {
            for x in 0..10 {
                pixels[y * 12 + x] = 200;
            }
        }
        let f = FrameView {
            format: PixelFormat::Mono8,
            width: 10,
            height: 10,
            stride: 12,
            pixels: &pixels,
        };
        let mut p = Preprocessor::new(4, 4);
        let mut out = vec![0f32; p.output_len()];
        p.run(&f, &mut out);
        assert!(
            out.iter()
                .all(|&v| (v - (200.0 - 127.0) / 128.0).abs() < 1e-6)
        );
    }
}
