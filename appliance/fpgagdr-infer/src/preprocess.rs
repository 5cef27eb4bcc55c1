//! CPU preprocessing: a mono8/RGB8 frame of any size → the model's input tensor.
//!
//! Centre crop of 87.5 % of the short side (`side = short × 7 / 8`, offsets
//! `(w − side) / 2`, `(h − side) / 2`, integer division), then the crop resized to the
//! model's H×W with the **antialiased bilinear filter of Pillow** (`Image.resize(...,
//! BILINEAR)`, the reference `models/verify_model.py` uses): a triangle filter whose
//! support widens with the shrink factor, applied horizontally then vertically, each
//! pass in Pillow's fixed point (22 fraction bits) and rounded to 8 bits; then
//! `(x − 127) / 128`, RGB planes in NCHW order; a mono frame fills all three planes.
//! The arithmetic follows Pillow's `libImaging/Resample.c` (coefficients in f64 in the
//! same order, then the same integer sums), so the tensor equals Pillow's bit for bit on
//! x86-64; the bound is one grey level. The GPU kernel (`gpu/preprocess.rs`)
//! computes the same integers; this file is the reference it is tested against.

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

/// Fraction of the short side kept by the centre crop (7/8, computed in integers).
pub const CROP_FRACTION: f64 = 0.875;
/// Normalisation: `(x − MEAN) / SCALE`.
pub const MEAN: f32 = 127.0;
/// Normalisation scale.
pub const SCALE: f32 = 128.0;
/// Fraction bits of the filter coefficients (Pillow's `PRECISION_BITS` for 8-bit images:
/// 32 − 8 − 2).
pub const PRECISION_BITS: u32 = 22;

/// The centre crop of a `width × height` frame: `(left, top, side)` in pixels.
pub fn centre_crop(width: u32, height: u32) -> (u32, u32, u32) {
    let side = (width.min(height) as u64 * 7 / 8).max(1) as u32;
    ((width - side) / 2, (height - side) / 2, side)
}

/// One axis of the resize: for each output pixel, the first source pixel its filter
/// covers, how many it covers, and their weights in fixed point
/// ([`PRECISION_BITS`] fraction bits), `ksize` slots per output pixel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coefficients {
    /// Slots per output pixel (`ceil(support) × 2 + 1`).
    pub ksize: usize,
    /// `(first, count)` per output pixel, in crop coordinates.
    pub bounds: Vec<(u32, u32)>,
    /// `ksize` weights per output pixel; the first `count` are used.
    pub weights: Vec<i32>,
}

/// Pillow's `precompute_coeffs` + `normalize_coeffs_8bpc` for the bilinear filter:
/// `in_size` source pixels (the crop) onto `out_size` output pixels.
pub fn coefficients(in_size: u32, out_size: u32) -> Coefficients {
    let scale = in_size as f64 / out_size as f64;
    let filterscale = scale.max(1.0);
    let support = filterscale; // the bilinear filter's support is 1
    let ksize = support.ceil() as usize * 2 + 1;
    let ss = 1.0 / filterscale;
    let mut bounds = Vec::with_capacity(out_size as usize);
    let mut weights = vec![0i32; out_size as usize * ksize];
    let mut k = vec![0f64; ksize];
    for xx in 0..out_size as usize {
        let center = (xx as f64 + 0.5) * scale;
        // Pillow rounds with a C cast (towards zero).
        let xmin = ((center - support + 0.5) as i32).max(0);
        let xmax = ((center + support + 0.5) as i32).min(in_size as i32) - xmin;
        let mut ww = 0.0;
        for (x, kx) in k.iter_mut().enumerate().take(xmax.max(0) as usize) {
            let t = ((x as i32 + xmin) as f64 - center + 0.5) * ss;
            let w = bilinear(t);
            *kx = w;
            ww += w;
        }
        let row = &mut weights[xx * ksize..(xx + 1) * ksize];
        for (slot, kx) in row.iter_mut().zip(&k).take(xmax.max(0) as usize) {
            let w = if ww != 0.0 { kx / ww } else { *kx };
            let fixed = w * (1u32 << PRECISION_BITS) as f64;
            *slot = if w < 0.0 {
                (fixed - 0.5) as i32
            } else {
                (fixed + 0.5) as i32
            };
        }
        bounds.push((xmin as u32, xmax.max(0) as u32));
    }
    Coefficients {
        ksize,
        bounds,
        weights,
    }
}

/// The triangle filter, support 1.
fn bilinear(x: f64) -> f64 {
    let x = x.abs();
    if x < 1.0 { 1.0 - x } else { 0.0 }
}

/// Pillow's `clip8`: a fixed-point sum → 0..=255.
#[inline]
fn clip8(sum: i32) -> u8 {
    (sum >> PRECISION_BITS).clamp(0, 255) as u8
}

/// The rounding term every fixed-point sum starts from.
const HALF: i32 = 1 << (PRECISION_BITS - 1);

/// Turns frames into input tensors; keeps its coefficient tables and intermediate rows
/// between frames of the same size, so steady-state preprocessing allocates nothing.
#[derive(Debug)]
pub struct Preprocessor {
    out_w: usize,
    out_h: usize,
    geometry: Option<(u32, u32)>,
    xs: Coefficients,
    ys: Coefficients,
    /// The horizontally resized rows the vertical pass reads (`rows × out_w × channels`).
    rows: Vec<u8>,
    /// The 8-bit output of the vertical pass (`out_h × out_w × channels`).
    pixels: Vec<u8>,
    /// One output row's fixed-point sums in the vertical pass.
    acc: Vec<i32>,
}

impl Preprocessor {
    /// A preprocessor for a model input of `out_w` × `out_h` pixels.
    pub fn new(out_w: usize, out_h: usize) -> Self {
        let empty = Coefficients {
            ksize: 0,
            bounds: Vec::new(),
            weights: Vec::new(),
        };
        Preprocessor {
            out_w,
            out_h,
            geometry: None,
            xs: empty.clone(),
            ys: empty,
            rows: Vec::new(),
            pixels: Vec::new(),
            acc: Vec::new(),
        }
    }

    /// Length of the output tensor, in f32 elements (3 × H × W).
    pub fn output_len(&self) -> usize {
        3 * self.out_w * self.out_h
    }

    /// Fills `out` (length [`Preprocessor::output_len`]) with the NCHW tensor of `frame`.
    pub fn run(&mut self, frame: &FrameView<'_>, out: &mut [f32]) {
        assert_eq!(out.len(), self.output_len(), "output tensor length");
        let (left, top, side) = centre_crop(frame.width, frame.height);
        if self.geometry != Some((frame.width, frame.height)) {
            self.xs = coefficients(side, self.out_w as u32);
            self.ys = coefficients(side, self.out_h as u32);
            self.geometry = Some((frame.width, frame.height));
        }
        let bpp = frame.format.bytes_per_pixel();
        let (out_w, out_h) = (self.out_w, self.out_h);
        // The rows the vertical pass reads: from the first tap of output row 0 to the
        // last tap of the last output row (crop coordinates).
        let first = self.ys.bounds[0].0 as usize;
        let last = self.ys.bounds.iter().map(|&(a, n)| (a + n) as usize).max();
        let n_rows = last.unwrap_or(first).saturating_sub(first);
        self.rows.resize(n_rows * out_w * bpp, 0);
        // Horizontal pass over those rows of the crop, each row once.
        let (xs, side) = (&self.xs, side as usize);
        for (r, dst) in self.rows.chunks_exact_mut(out_w * bpp).enumerate() {
            let y = top as usize + first + r;
            let start = y * frame.stride as usize + left as usize * bpp;
            let row = &frame.pixels[start..start + side * bpp];
            horizontal(row, bpp, xs, dst);
        }
        // Vertical pass: each output row sums its taps' rows.
        let line = out_w * bpp;
        self.pixels.resize(out_h * line, 0);
        self.acc.resize(line, HALF);
        let acc = &mut self.acc;
        let ks = self.ys.ksize;
        for (oy, &(ymin, count)) in self.ys.bounds.iter().enumerate() {
            acc.fill(HALF);
            let k = &self.ys.weights[oy * ks..oy * ks + count as usize];
            for (j, &w) in k.iter().enumerate() {
                let r = ymin as usize - first + j;
                for (a, &p) in acc.iter_mut().zip(&self.rows[r * line..(r + 1) * line]) {
                    *a += p as i32 * w;
                }
            }
            for (d, &a) in self.pixels[oy * line..(oy + 1) * line]
                .iter_mut()
                .zip(acc.iter())
            {
                *d = clip8(a);
            }
        }
        // Normalise into NCHW planes; a mono frame's plane is computed once and copied.
        let plane = out_w * out_h;
        let (first_plane, rest) = out.split_at_mut(plane);
        if bpp == 1 {
            for (dst, &p) in first_plane.iter_mut().zip(&self.pixels) {
                *dst = normalise(p);
            }
            let (g, b) = rest.split_at_mut(plane);
            g.copy_from_slice(first_plane);
            b.copy_from_slice(first_plane);
        } else {
            let (g, b) = rest.split_at_mut(plane);
            for (((r, g), b), p) in first_plane
                .iter_mut()
                .zip(g.iter_mut())
                .zip(b.iter_mut())
                .zip(self.pixels.chunks_exact(3))
            {
                *r = normalise(p[0]);
                *g = normalise(p[1]);
                *b = normalise(p[2]);
            }
        }
    }
}

/// `(x − MEAN) / SCALE` for one 8-bit sample.
#[inline]
fn normalise(p: u8) -> f32 {
    (p as f32 - MEAN) / SCALE
}

/// The horizontal pass over one row of the crop (`row`: `side × bpp` bytes) into `dst`
/// (`out_w × bpp` bytes), dispatching to a loop with the tap count fixed at compile time
/// for the filter sizes of the frames the appliance sees (3 … 21 slots: shrinks up to
/// 10×), where the compiler unrolls and vectorises the multiply-accumulate.
fn horizontal(row: &[u8], bpp: usize, xs: &Coefficients, dst: &mut [u8]) {
    macro_rules! fixed {
        ($($k:literal)*) => {
            match (bpp, xs.ksize) {
                $((1, $k) => horizontal_fixed::<1, $k>(row, xs, dst),)*
                $((3, $k) => horizontal_fixed::<3, $k>(row, xs, dst),)*
                _ => {
                    let slots = xs.weights.chunks_exact(xs.ksize);
                    for ((&bounds, w), d) in xs.bounds.iter().zip(slots).zip(dst.chunks_exact_mut(bpp)) {
                        tap_sums(row, bpp, bounds, w, d);
                    }
                }
            }
        };
    }
    fixed!(3 5 7 9 11 13 15 17 19 21);
}

/// [`horizontal`] for `BPP` bytes per pixel and `K` slots per output pixel. Slots past an
/// output pixel's tap count weigh 0 (see [`coefficients`]), so summing all `K` of them
/// gives the same integer; only outputs whose `K` slots would run past the crop's right
/// edge sum their own taps alone.
fn horizontal_fixed<const BPP: usize, const K: usize>(
    row: &[u8],
    xs: &Coefficients,
    dst: &mut [u8],
) {
    let side = row.len() / BPP;
    let out = dst.chunks_exact_mut(BPP);
    let weights = xs.weights.chunks_exact(K);
    for ((&bounds, w), d) in xs.bounds.iter().zip(weights).zip(out) {
        let x = bounds.0 as usize;
        if x + K > side {
            tap_sums(row, BPP, bounds, w, d);
            continue;
        }
        let w: &[i32; K] = w.try_into().expect("K weights");
        let mut s = [HALF; BPP];
        for (px, &wk) in row[x * BPP..(x + K) * BPP].chunks_exact(BPP).zip(w) {
            for (sc, &p) in s.iter_mut().zip(px) {
                *sc += p as i32 * wk;
            }
        }
        for (dc, sc) in d.iter_mut().zip(s) {
            *dc = clip8(sc);
        }
    }
}

/// One output pixel `d` (`bpp` bytes) of the horizontal pass over its own taps
/// (`bounds`: first tap and count; `w`: its weight slots), any bytes per pixel: the
/// general case, and the crop's right edge.
fn tap_sums(row: &[u8], bpp: usize, bounds: (u32, u32), w: &[i32], d: &mut [u8]) {
    let (xmin, count) = (bounds.0 as usize, bounds.1 as usize);
    let src = &row[xmin * bpp..(xmin + count) * bpp];
    for (c, dc) in d.iter_mut().enumerate() {
        let mut s = HALF;
        for (px, &wk) in src.chunks_exact(bpp).zip(&w[..count]) {
            s += px[c] as i32 * wk;
        }
        *dc = clip8(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The resize written plainly, tap by tap over each output's own taps, every
    /// channel and plane computed on its own (the code before the fixed-size loops):
    /// what the fast paths must equal bit for bit.
    fn plain_resize(frame: &FrameView<'_>, out_w: usize, out_h: usize) -> Vec<f32> {
        let (left, top, side) = centre_crop(frame.width, frame.height);
        let (xs, ys) = (
            coefficients(side, out_w as u32),
            coefficients(side, out_h as u32),
        );
        let bpp = frame.format.bytes_per_pixel();
        let sum = |taps: &mut dyn Iterator<Item = (u8, i32)>| {
            clip8(taps.fold(HALF, |s, (p, w)| s + p as i32 * w))
        };
        let mut out = vec![0f32; 3 * out_w * out_h];
        for c in 0..3 {
            let ch = if bpp == 1 { 0 } else { c };
            for oy in 0..out_h {
                for ox in 0..out_w {
                    let (ymin, ny) = ys.bounds[oy];
                    let (xmin, nx) = xs.bounds[ox];
                    let v = sum(&mut (0..ny as usize).map(|j| {
                        let y = top as usize + ymin as usize + j;
                        let h = sum(&mut (0..nx as usize).map(|i| {
                            let x = left as usize + xmin as usize + i;
                            let p = frame.pixels[y * frame.stride as usize + x * bpp + ch];
                            (p, xs.weights[ox * xs.ksize + i])
                        }));
                        (h, ys.weights[oy * ys.ksize + j])
                    }));
                    out[(c * out_h + oy) * out_w + ox] = (v as f32 - MEAN) / SCALE;
                }
            }
        }
        out
    }

    #[test]
    fn the_fast_paths_equal_the_plain_tap_sums_bit_for_bit() {
        // Filter sizes from 3 slots (an enlargement) through the fixed loops (5, 9, 11,
        // 19) to the general loop (33 slots), odd widths, stride padding, mono and RGB.
        for (format, w, h, pad, out_w, out_h) in [
            (PixelFormat::Mono8, 50u32, 40u32, 0u32, 224usize, 224usize),
            (PixelFormat::Mono8, 640, 480, 0, 224, 224),
            (PixelFormat::Mono8, 1024, 1024, 0, 224, 224),
            (PixelFormat::Mono8, 1021, 777, 5, 224, 160),
            (PixelFormat::Rgb8, 1920, 1080, 3, 224, 224),
            (PixelFormat::Rgb8, 333, 1000, 0, 31, 45),
            (PixelFormat::Rgb8, 3840, 2160, 0, 224, 224),
            (PixelFormat::Mono8, 1200, 1200, 0, 30, 30),
        ] {
            let bpp = format.bytes_per_pixel() as u32;
            let stride = w * bpp + pad;
            let pixels: Vec<u8> = (0..(stride * h) as usize)
                .map(|i| ((i * 2_654_435_761) >> 13) as u8)
                .collect();
            let f = FrameView {
                format,
                width: w,
                height: h,
                stride,
                pixels: &pixels,
            };
            let mut p = Preprocessor::new(out_w, out_h);
            let mut out = vec![0f32; p.output_len()];
            p.run(&f, &mut out);
            let want = plain_resize(&f, out_w, out_h);
            let differ = out
                .iter()
                .zip(&want)
                .filter(|(a, b)| a.to_bits() != b.to_bits());
            assert_eq!(
                differ.count(),
                0,
                "{w}x{h} {} → {out_w}x{out_h}",
                format.as_str()
            );
        }
    }

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
        // crop (43 px wide from x = 28) sees only white, and the filter reads nothing
        // outside the crop.
        let pixels: Vec<u8> = (0..50)
            .flat_map(|_| (0..100).map(|x| if (28..71).contains(&x) { 255 } else { 0 }))
            .collect();
        let f = FrameView {
            format: PixelFormat::Mono8,
            width: 100,
            height: 50,
            stride: 100,
            pixels: &pixels,
        };
        assert_eq!(centre_crop(100, 50), (28, 3, 43));
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

    #[test]
    fn coefficients_sum_to_one_and_widen_with_the_shrink() {
        // Same size: one tap of weight 1 (plus a zero), like Pillow.
        let same = coefficients(224, 224);
        assert_eq!(same.ksize, 3);
        assert_eq!(same.bounds[10], (10, 2));
        assert_eq!(&same.weights[30..32], &[1 << PRECISION_BITS, 0]);
        // A 4.22x shrink (1080p's crop of 945 px onto 224): support 4.22 px each side.
        let shrink = coefficients(945, 224);
        assert_eq!(shrink.ksize, 11);
        for (o, &(first, count)) in shrink.bounds.iter().enumerate() {
            // At the crop's edges the support is cut off (Pillow clips it to the image).
            let fewest = if o == 0 || o == 223 { 5 } else { 8 };
            assert!((fewest..=10).contains(&count), "output {o}: {count} taps");
            assert!(first + count <= 945);
            let sum: i64 = shrink.weights[o * 11..o * 11 + count as usize]
                .iter()
                .map(|&w| w as i64)
                .sum();
            assert!(
                (sum - (1 << PRECISION_BITS)).abs() <= count as i64,
                "{o}: {sum}"
            );
        }
    }

    #[test]
    fn a_one_pixel_line_is_spread_over_the_filter_support() {
        // Antialiasing: a bright column one source pixel wide still shows after a 4x
        // shrink (a two-tap bilinear would miss it or pass it whole).
        let (w, h) = (1024u32, 1024u32);
        let mut pixels = vec![0u8; (w * h) as usize];
        let (left, _, _) = centre_crop(w, h);
        let x = left as usize + 450;
        for y in 0..h as usize {
            pixels[y * w as usize + x] = 255;
        }
        let f = FrameView {
            format: PixelFormat::Mono8,
            width: w,
            height: h,
            stride: w,
            pixels: &pixels,
        };
        let mut p = Preprocessor::new(224, 224);
        let mut out = vec![0f32; p.output_len()];
        p.run(&f, &mut out);
        let row: Vec<f32> = out[100 * 224..101 * 224].to_vec();
        let lit: Vec<usize> = (0..224).filter(|&i| row[i] > -0.99).collect();
        assert!(
            (2..=3).contains(&lit.len()),
            "columns lit: {lit:?} {:?}",
            &row[110..116]
        );
        let peak = row.iter().cloned().fold(f32::MIN, f32::max);
        assert!(
            peak < 0.0,
            "the line is averaged down, not kept whole: {peak}"
        );
    }
}
