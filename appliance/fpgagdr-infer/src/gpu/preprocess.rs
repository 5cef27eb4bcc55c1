//! GPU preprocessing: the CUDA version of `preprocess.rs`, reading frames where they lie
//! in GPU memory and writing a batch of input tensors in GPU memory, with no host round
//! trip per frame.
//!
//! Owns: [`GpuPreprocessor`] and its two kernels:
//! * `fpgagdr_headers`, one thread per frame of a batch: reads the frame's 64-byte header
//!   in the ring entry, checks it as `FrameHeader::parse` does (magic, header CRC, pixel
//!   format, geometry, frame length within the bytes received) and writes the frame's
//!   geometry (`GEOM_WORDS` words: pixel address, width, height, stride, bytes per pixel,
//!   payload length, valid) for the other kernels, and a copy of the header into the
//!   batch's result record (`RESULT_WORDS` words) that the host reads once per batch;
//! * `fpgagdr_preprocess`, one block per 16 × 16 output tile of every frame of the batch
//!   (grid z = frame): centre crop, then Pillow's antialiased bilinear resize computed
//!   exactly as the CPU reference does (the same f64 coefficients, the same 22-bit fixed
//!   point sums, horizontal then vertical, each rounded to 8 bits), `(x − 127) / 128`,
//!   RGB planes NCHW; mono copied to all three planes. The horizontal pass of each source
//!   row a tile needs runs once, into shared memory, and the vertical pass reads it
//!   there; the coefficients are computed one thread per tap, over the frame's own taps.
//!   (The per-pixel version recomputed each row's pass for every output row using it,
//!   and its coefficient loops ran on 16 threads: the `gpu` bench's 1080p RGB frame took
//!   21.8 µs p50 on the H200, now 15.4–16.7, with identical outputs; docs/benchmarks.md.) A frame whose header failed the
//!   check gets a zero tensor (its result is discarded by the host).
//!
//! Outputs agree with the CPU reference within [`TOLERANCE`] (in practice bit for bit).

// Kernel launches on device addresses: each `unsafe` states the bounds it relies on.

use std::sync::Arc;

use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PinnedHostSlice, PushKernelArg,
};
use fpgagdr::PixelFormat;
use fpgagdr::frame::HEADER_LEN;

use super::checksum::GpuCrc32;
use super::kernels::{EventTimer, GEOM_WORDS, GpuError, GpuKernels, cuda};
use crate::preprocess::{FrameView, MEAN, SCALE, centre_crop};

/// Largest difference between GPU and CPU preprocessing of the same frame, in the
/// normalised units of the tensor (1/128 per grey level): 0.001 ≈ 0.13 grey levels. Both
/// compute the same integers, so the observed difference is 0.
pub const TOLERANCE: f32 = 1e-3;

/// Words (u32) of one frame's result record: the 64-byte header (16 words), the payload
/// CRC the GPU computed, valid, two spare.
pub(crate) const RESULT_WORDS: usize = 20;
/// Word of the result record holding the GPU's payload CRC.
pub(crate) const RESULT_CRC: usize = 16;

const BLOCK: u32 = 16;

/// Source rows one 16-row output tile can need, for filters of at most `ksize_max` taps
/// (`ksize_max` ≥ 2 × ⌈scale⌉ + 1): output row o's filter covers source rows from
/// (o + 0.5) × scale − support + 0.5 to (o + 0.5) × scale + support + 0.5 (support =
/// max(scale, 1)), so 16 rows need at most 15 × scale + 2 × support + 2 ≤ 15 × ⌈scale⌉ +
/// `ksize_max` + 1; one more for the truncation of the first.
fn tile_rows(ksize_max: usize) -> usize {
    15 * (ksize_max.saturating_sub(1) / 2) + ksize_max + 2
}

const KERNEL: &str = r#"
#define FG_PRECISION 22
#define FG_HALF (1 << (FG_PRECISION - 1))

__device__ unsigned int fg_header_crc(const unsigned char* h) {
    unsigned int c = 0xffffffffu;
    for (int i = 0; i < 60; ++i) {
        c ^= h[i];
        for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0xedb88320u : (c >> 1);
    }
    return ~c;
}

__device__ unsigned int fg_u32(const unsigned char* p) {
    return p[0] | (p[1] << 8) | (p[2] << 16) | ((unsigned int)p[3] << 24);
}

/* frames[2z] = device address of frame z (its header), frames[2z+1] = bytes received.
   Writes geom[z*8 ..] and result[z*20 ..] (header copy, valid). */
extern "C" __global__ void fpgagdr_headers(const unsigned long long* frames, int n,
    unsigned int* geom, unsigned int* result)
{
    int z = blockIdx.x * blockDim.x + threadIdx.x;
    if (z >= n) return;
    const unsigned char* h = (const unsigned char*)frames[2 * z];
    unsigned long long received = frames[2 * z + 1];
    unsigned int* g = geom + z * 8;
    unsigned int* r = result + z * 20;
    unsigned int valid = 0, width = 0, height = 0, stride = 0, bpp = 0, payload = 0;
    if (received >= 64) {
        for (int i = 0; i < 16; ++i) r[i] = fg_u32(h + 4 * i);
        const char magic[8] = {'F', 'G', 'D', 'R', 'F', 'R', 'M', '1'};
        int ok = 1;
        for (int i = 0; i < 8; ++i) ok &= h[i] == (unsigned char)magic[i];
        ok &= fg_header_crc(h) == fg_u32(h + 60);
        unsigned int code = h[12] | (h[13] << 8);
        bpp = code == 1 ? 1 : code == 2 ? 3 : 0;
        width = fg_u32(h + 16); height = fg_u32(h + 20);
        stride = fg_u32(h + 24); payload = fg_u32(h + 28);
        ok &= bpp != 0 && width != 0 && height != 0;
        ok &= (unsigned long long)stride >= (unsigned long long)width * bpp;
        ok &= (unsigned long long)payload == (unsigned long long)stride * height;
        ok &= 64ull + payload <= received;
        valid = ok;
    } else {
        for (int i = 0; i < 16; ++i) r[i] = 0;
    }
    unsigned long long pix = frames[2 * z] + 64;
    g[0] = (unsigned int)pix; g[1] = (unsigned int)(pix >> 32);
    g[2] = width; g[3] = height; g[4] = stride; g[5] = bpp;
    g[6] = valid ? payload : 0; g[7] = valid;
    r[16] = 0; r[17] = valid; r[18] = 0; r[19] = 0;
}

__device__ double fg_bilinear(double x) {
    if (x < 0.0) x = -x;
    if (x < 1.0) return 1.0 - x;
    return 0.0;
}

/* Pillow's precompute_coeffs + normalize_coeffs_8bpc, one tap at a time: for output o of
   in_size -> out_size, the fixed-point weight of source pixel first + x (normalised by the
   sum of all the output's taps). Writes k[x] when
   x < count; returns count, or -1 when the filter needs more than ksize_max taps. */
__device__ int fg_coeff_one(int in_size, int out_size, int o, int ksize_max, int x, int* k,
    int* first) {
    double scale = (double)in_size / out_size;
    double filterscale = scale < 1.0 ? 1.0 : scale;
    double support = filterscale;
    int ksize = (int)ceil(support) * 2 + 1;
    if (ksize > ksize_max) return -1;
    double center = (o + 0.5) * scale;
    double ss = 1.0 / filterscale;
    int xmin = (int)(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = (int)(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    *first = xmin;
    if (x >= xmax) return xmax;
    double ww = 0.0;
    for (int i = 0; i < xmax; ++i) ww += fg_bilinear((i + xmin - center + 0.5) * ss);
    double w = fg_bilinear((x + xmin - center + 0.5) * ss);
    if (ww != 0.0) w /= ww;
    k[x] = w < 0.0 ? (int)(-0.5 + w * 4194304.0) : (int)(0.5 + w * 4194304.0);
    return xmax;
}

__device__ int fg_clip8(int s) {
    int v = s >> FG_PRECISION;
    return v < 0 ? 0 : (v > 255 ? 255 : v);
}

/* Two passes per 16 x 16 output tile: the horizontal pass of every source row the tile
   needs, once, into shared memory (8-bit, as Pillow keeps its intermediate image), then
   the vertical pass from there. grid (ceil(out_w/16), ceil(out_h/16), n), block (16, 16);
   dynamic shared memory: 2 * 16 * ksize_max + 64 ints, then rows_max * 48 bytes. */
extern "C" __global__ void fpgagdr_preprocess(const unsigned int* geom, int ksize_max,
    int rows_max, float mean, float inv_scale, float* out, int out_w, int out_h)
{
    extern __shared__ int sh[];
    int* kx = sh;
    int* ky = sh + 16 * ksize_max;
    int* bx = ky + 16 * ksize_max; /* [16] first, [16] count */
    int* by = bx + 32;
    unsigned char* hs = (unsigned char*)(by + 32); /* [rows][16][3] */
    int z = blockIdx.z;
    const unsigned int* g = geom + z * 8;
    int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    int ox0 = blockIdx.x * 16, oy0 = blockIdx.y * 16;
    int plane = out_w * out_h;
    float* o = out + (size_t)z * 3 * plane;
    unsigned int width = g[2], height = g[3], stride = g[4], bpp = g[5], valid = g[7];
    unsigned int side = (unsigned int)(((unsigned long long)min(width, height) * 7) / 8);
    if (side < 1) side = 1;
    if (valid) {
        /* One thread per (output column or row, tap): 16 columns then 16 rows, over this
           frame's taps (kf), not the buffer's bound (ksize_max: up to 65 for 64 MiB). */
        double sx = (double)side / out_w, sy = (double)side / out_h;
        double smax = sx > sy ? sx : sy;
        int kf = (int)ceil(smax < 1.0 ? 1.0 : smax) * 2 + 1;
        if (kf > ksize_max) kf = ksize_max;
        for (int t = tid; t < 32 * kf; t += 256) {
            int yaxis = t >= 16 * kf, u = yaxis ? t - 16 * kf : t;
            int c = u / kf, x = u - c * kf;
            int o0 = yaxis ? oy0 : ox0, osz = yaxis ? out_h : out_w;
            int* k = (yaxis ? ky : kx) + c * ksize_max;
            int* b = yaxis ? by : bx;
            int f = 0, n = -1;
            if (o0 + c < osz)
                n = fg_coeff_one(side, osz, o0 + c, ksize_max, x, k, &f);
            if (x == 0) {
                b[c] = f; b[16 + c] = n;
            }
        }
    }
    __syncthreads();
    /* Source rows by[0] .. last of the tile; a tile whose filters do not fit is invalid. */
    int ylast = min(15, out_h - 1 - oy0);
    int rows = by[16 + ylast] < 0 ? -1 : by[ylast] + by[16 + ylast] - by[0];
    int ok = valid && rows >= 0 && rows <= rows_max && by[16] >= 0 && bx[16] >= 0;
    unsigned long long pix = (unsigned long long)g[0] | ((unsigned long long)g[1] << 32);
    unsigned int left = (width - side) / 2, top = (height - side) / 2;
    if (ok) {
        const unsigned char* base = (const unsigned char*)pix
            + (size_t)(top + by[0]) * stride + (size_t)left * bpp;
        for (int t = tid; t < rows * 16; t += 256) {
            int r = t >> 4, c = t & 15;
            int nx = bx[16 + c];
            if (nx < 0) continue;
            const unsigned char* row = base + (size_t)r * stride + (size_t)bx[c] * bpp;
            const int* wx = kx + c * ksize_max;
            unsigned char* h = hs + t * 3;
            int s0 = FG_HALF, s1 = FG_HALF, s2 = FG_HALF;
            if (bpp == 1) {
                for (int x = 0; x < nx; ++x) s0 += row[x] * wx[x];
                h[0] = (unsigned char)fg_clip8(s0);
            } else {
                for (int x = 0; x < nx; ++x) {
                    const unsigned char* p = row + 3 * x;
                    int w = wx[x];
                    s0 += p[0] * w; s1 += p[1] * w; s2 += p[2] * w;
                }
                h[0] = (unsigned char)fg_clip8(s0);
                h[1] = (unsigned char)fg_clip8(s1);
                h[2] = (unsigned char)fg_clip8(s2);
            }
        }
    }
    __syncthreads();
    int ox = ox0 + tx, oy = oy0 + ty;
    if (ox >= out_w || oy >= out_h) return;
    int i = oy * out_w + ox;
    int nx = ok ? bx[16 + tx] : -1, ny = ok ? by[16 + ty] : -1;
    if (nx < 0 || ny < 0) {
        o[i] = 0.0f; o[plane + i] = 0.0f; o[2 * plane + i] = 0.0f;
        return;
    }
    const int* wy = ky + ty * ksize_max;
    const unsigned char* h = hs + ((by[ty] - by[0]) * 16 + tx) * 3;
    int v0 = FG_HALF, v1 = FG_HALF, v2 = FG_HALF;
    if (bpp == 1) {
        for (int j = 0; j < ny; ++j) v0 += h[j * 48] * wy[j];
    } else {
        for (int j = 0; j < ny; ++j) {
            const unsigned char* p = h + j * 48;
            int w = wy[j];
            v0 += p[0] * w; v1 += p[1] * w; v2 += p[2] * w;
        }
    }
    float r = ((float)fg_clip8(v0) - mean) * inv_scale;
    if (bpp == 1) {
        o[i] = r; o[plane + i] = r; o[2 * plane + i] = r;
    } else {
        o[i] = r;
        o[plane + i] = ((float)fg_clip8(v1) - mean) * inv_scale;
        o[2 * plane + i] = ((float)fg_clip8(v2) - mean) * inv_scale;
    }
}
"#;

/// GPU time of one preprocessing run, from CUDA events around the kernel, µs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuTiming {
    /// Kernel time, µs.
    pub kernel_us: f64,
}

/// Frames → input tensors on the GPU, a batch at a time. Holds the compiled kernels, the
/// batch's output tensor (device memory, `max_batch × 3 × H × W` f32), the frame table
/// and its pinned host staging, the geometry and result records, a pair of timing
/// events and a staging buffer for frames that start in host memory.
#[derive(Debug)]
pub struct GpuPreprocessor {
    kernels: GpuKernels,
    headers_fn: CudaFunction,
    resample_fn: CudaFunction,
    timer: EventTimer,
    out: CudaSlice<f32>,
    out_w: usize,
    out_h: usize,
    max_batch: usize,
    ksize_max: usize,
    frames_host: PinnedHostSlice<u64>,
    frames: CudaSlice<u64>,
    geom: CudaSlice<u32>,
    results: CudaSlice<u32>,
    staging: Option<CudaSlice<u8>>,
    last: Option<(PixelFormat, u32, u32, u32, usize)>,
}

/// Taps per output pixel the resample kernel must hold for frames of at most
/// `max_payload` bytes (the crop side is at most 7/8 of √max_payload), at least 3.
fn ksize_for(max_payload: usize, out_w: usize, out_h: usize) -> usize {
    let side = ((max_payload as f64).sqrt() * 7.0 / 8.0).ceil() as usize;
    let out_min = out_w.min(out_h).max(1);
    (side.div_ceil(out_min) * 2 + 1).max(3)
}

impl GpuPreprocessor {
    /// Compiles the kernels for a model input of `out_w` × `out_h` pixels, in the
    /// context the frame ring lives in, on a new stream; one frame per batch, frames of
    /// up to 64 MiB.
    ///
    /// Errors: [`GpuError::Unavailable`] without a CUDA driver or NVRTC library;
    /// [`GpuError::Cuda`].
    pub fn new(out_w: usize, out_h: usize) -> Result<Self, GpuError> {
        Self::with_kernels(GpuKernels::compile(KERNEL)?, out_w, out_h, 1, 64 << 20)
    }

    /// As [`Self::new`], with the kernels running on `stream`, batches of up to
    /// `max_batch` frames, each at most `max_frame` bytes (header included: the ring
    /// entry's length).
    pub fn on_stream(
        stream: &Arc<CudaStream>,
        out_w: usize,
        out_h: usize,
        max_batch: usize,
        max_frame: usize,
    ) -> Result<Self, GpuError> {
        Self::with_kernels(
            GpuKernels::compile_on(stream, KERNEL)?,
            out_w,
            out_h,
            max_batch,
            max_frame,
        )
    }

    fn with_kernels(
        kernels: GpuKernels,
        out_w: usize,
        out_h: usize,
        max_batch: usize,
        max_frame: usize,
    ) -> Result<Self, GpuError> {
        let max_batch = max_batch.max(1);
        let s = &kernels.stream;
        #[allow(unsafe_code)]
        // SAFETY: page-locked host memory written by the CPU and read only by copies on
        // `stream` that the batch waits for before it is written again.
        let frames_host =
            unsafe { kernels.ctx.alloc_pinned::<u64>(2 * max_batch) }.map_err(cuda)?;
        Ok(GpuPreprocessor {
            headers_fn: kernels.function("fpgagdr_headers")?,
            resample_fn: kernels.function("fpgagdr_preprocess")?,
            timer: EventTimer::new(&kernels)?,
            out: s
                .alloc_zeros::<f32>(max_batch * 3 * out_w * out_h)
                .map_err(cuda)?,
            frames: s.alloc_zeros::<u64>(2 * max_batch).map_err(cuda)?,
            geom: s.alloc_zeros::<u32>(max_batch * GEOM_WORDS).map_err(cuda)?,
            results: s
                .alloc_zeros::<u32>(max_batch * RESULT_WORDS)
                .map_err(cuda)?,
            frames_host,
            out_w,
            out_h,
            max_batch,
            ksize_max: ksize_for(max_frame.saturating_sub(HEADER_LEN), out_w, out_h),
            staging: None,
            last: None,
            kernels,
        })
    }

    /// The stream the kernels run on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.kernels.stream
    }

    /// The compiled module, context and stream.
    pub fn kernels(&self) -> &GpuKernels {
        &self.kernels
    }

    /// Length of one frame's tensor, f32 elements (3 × H × W).
    pub fn output_len(&self) -> usize {
        3 * self.out_w * self.out_h
    }

    /// Frames per batch this preprocessor holds tensors for.
    pub fn max_batch(&self) -> usize {
        self.max_batch
    }

    /// The batch's tensors in device memory, `[max_batch, 3, H, W]` f32; frame i's are
    /// valid once the stream has run the batch that held it.
    pub fn tensor(&self) -> &CudaSlice<f32> {
        &self.out
    }

    /// As [`Self::tensor`], to write (the copy of a batch queued ahead into the tensors
    /// the model is bound to).
    pub(crate) fn tensor_mut(&mut self) -> &mut CudaSlice<f32> {
        &mut self.out
    }

    /// The frames' result records (`RESULT_WORDS` u32 each).
    pub(crate) fn results(&self) -> &CudaSlice<u32> {
        &self.results
    }

    /// Queues the payload CRCs of frames `0..n` (whose headers
    /// [`Self::launch_headers`] checked) into their result records.
    ///
    /// # Safety
    /// As [`Self::launch_headers`]; `max_payload` ≥ every received length − 64.
    #[allow(unsafe_code)]
    pub(crate) unsafe fn launch_crcs(
        &mut self,
        crc: &mut GpuCrc32,
        n: usize,
        max_payload: usize,
    ) -> Result<(), GpuError> {
        // SAFETY: the header kernel gave a payload length only to a frame it checked:
        // payload ≤ received − 64 ≤ max_payload, inside memory the caller vouches for;
        // other records have length 0.
        unsafe {
            crc.launch_batch(
                &self.geom,
                n,
                max_payload,
                &mut self.results,
                RESULT_CRC,
                RESULT_WORDS,
            )
        }
    }

    /// Queues the header check of a batch: `frames[i]` = (device address of frame i's
    /// header, bytes received). Fills the geometry and result records of frames
    /// `0..frames.len()`; nothing waits.
    ///
    /// Errors: [`GpuError::Geometry`] for more than [`Self::max_batch`] frames;
    /// [`GpuError::Cuda`].
    ///
    /// # Safety
    /// Each `(addr, len)` must be device memory (or device-mapped host memory) of this
    /// context, `len ≥` what the frame's header may claim is checked by the kernel, that
    /// stays allocated and unwritten until the stream has run this batch's kernels.
    #[allow(unsafe_code)]
    pub(crate) unsafe fn launch_headers(&mut self, frames: &[(u64, u64)]) -> Result<(), GpuError> {
        let n = frames.len();
        if n == 0 || n > self.max_batch {
            return Err(GpuError::Geometry(format!(
                "a batch of {n} frames: this preprocessor holds 1..={}",
                self.max_batch
            )));
        }
        let stream = self.kernels.stream.clone();
        {
            let host = self.frames_host.as_mut_slice().map_err(cuda)?;
            for (i, &(addr, len)) in frames.iter().enumerate() {
                host[2 * i] = addr;
                host[2 * i + 1] = len;
            }
        }
        stream
            .memcpy_htod(&self.frames_host, &mut self.frames)
            .map_err(cuda)?;
        let n_i = n as i32;
        let cfg = LaunchConfig {
            grid_dim: ((n as u32).div_ceil(32), 1, 1),
            block_dim: (32, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = stream.launch_builder(&self.headers_fn);
        launch
            .arg(&self.frames)
            .arg(&n_i)
            .arg(&mut self.geom)
            .arg(&mut self.results);
        // SAFETY: the arguments match the kernel's signature; thread z < n reads 64 bytes
        // of frame z only when it received ≥ 64 (the caller vouches for them) and writes
        // geom[z·8 .. +8] and results[z·20 .. +20], inside buffers of max_batch ≥ n
        // records.
        unsafe { launch.launch(cfg) }.map_err(cuda)?;
        Ok(())
    }

    /// Queues the resize of frames `0..n` of the batch whose headers
    /// [`Self::launch_headers`] checked (or whose geometry was written from the host).
    ///
    /// # Safety
    /// The pixels the geometry records point at must stay allocated and unwritten until
    /// the stream has run the kernel (the kernel reads only inside what a valid record
    /// describes).
    #[allow(unsafe_code)]
    pub(crate) unsafe fn launch_resample(&mut self, n: usize) -> Result<(), GpuError> {
        let (out_w, out_h) = (self.out_w as i32, self.out_h as i32);
        let ksize = self.ksize_max as i32;
        let rows_max = tile_rows(self.ksize_max) as i32;
        let inv_scale = 1.0 / SCALE;
        let cfg = LaunchConfig {
            grid_dim: (
                (self.out_w as u32).div_ceil(BLOCK),
                (self.out_h as u32).div_ceil(BLOCK),
                n as u32,
            ),
            block_dim: (BLOCK, BLOCK, 1),
            shared_mem_bytes: ((2 * BLOCK as usize * self.ksize_max + 64) * 4
                + tile_rows(self.ksize_max) * BLOCK as usize * 3)
                as u32,
        };
        let mut launch = self.kernels.stream.launch_builder(&self.resample_fn);
        launch
            .arg(&self.geom)
            .arg(&ksize)
            .arg(&rows_max)
            .arg(&MEAN)
            .arg(&inv_scale)
            .arg(&mut self.out)
            .arg(&out_w)
            .arg(&out_h);
        // SAFETY: the arguments match the kernel's signature; block z reads geom record
        // z < n ≤ max_batch; a valid record's reads stay inside its crop, rows top ..
        // top + side − 1 < height and columns left .. left + side − 1 < width, so below
        // stride × (height − 1) + width × bpp ≤ payload length (checked by the header
        // kernel or by `write_geometry`); coefficient writes stay inside the 2 × 16 ×
        // ksize_max + 64 shared ints (a frame needing more taps is marked invalid), the
        // horizontal pass's inside rows_max × 16 × 3 shared bytes (a tile needing more
        // rows is written as zeros); every tensor write is inside frame z's 3 × H × W
        // floats of `out`.
        unsafe { launch.launch(cfg) }.map_err(cuda)?;
        Ok(())
    }

    /// Writes frame 0's geometry from the host (a frame with no header: tests, benchmarks
    /// and frames that start in host memory). Errors: [`GpuError::Geometry`] when
    /// `stride × (height − 1) + width × bpp` exceeds `available`.
    fn write_geometry(
        &mut self,
        format: PixelFormat,
        width: u32,
        height: u32,
        stride: u32,
        pixels: u64,
        available: usize,
    ) -> Result<(), GpuError> {
        let bpp = format.bytes_per_pixel();
        let need = (stride as usize)
            .checked_mul((height as usize).saturating_sub(1))
            .and_then(|n| n.checked_add(width as usize * bpp));
        let fits = need.is_some_and(|n| n <= available);
        if width == 0 || height == 0 || (stride as usize) < width as usize * bpp || !fits {
            return Err(GpuError::Geometry(format!(
                "{width}x{height} {} frame with stride {stride} needs {} bytes, {available} available",
                format.as_str(),
                need.map_or("more than usize".to_string(), |n| n.to_string())
            )));
        }
        // This frame's filter may be wider than the buffer's bound assumed (a staging
        // buffer larger than the frames in it): size the kernel's tap tables for it.
        let (_, _, side) = centre_crop(width, height);
        let out_min = self.out_w.min(self.out_h).max(1);
        self.ksize_max = self
            .ksize_max
            .max((side as usize).div_ceil(out_min) * 2 + 1);
        let g: [u32; GEOM_WORDS] = [
            pixels as u32,
            (pixels >> 32) as u32,
            width,
            height,
            stride,
            bpp as u32,
            need.unwrap_or(0) as u32,
            1,
        ];
        self.kernels
            .stream
            .memcpy_htod(&g[..], &mut self.geom.slice_mut(..GEOM_WORDS))
            .map_err(cuda)
    }

    /// Preprocesses one frame whose pixels are at device address `pixels`, `available`
    /// bytes long, into the batch's first tensor, and waits for it.
    ///
    /// Errors: [`GpuError::Geometry`] when `stride × (height − 1) + width × bpp` exceeds
    /// `available`; [`GpuError::Cuda`].
    ///
    /// # Safety
    /// `pixels .. pixels + available` must be device memory (or device-mapped host
    /// memory) of this context that stays allocated, and that nothing writes, until the
    /// stream has finished the kernel (this call waits for it).
    #[allow(clippy::too_many_arguments)]
    #[allow(unsafe_code)]
    pub unsafe fn run_device(
        &mut self,
        format: PixelFormat,
        width: u32,
        height: u32,
        stride: u32,
        pixels: u64,
        available: usize,
    ) -> Result<GpuTiming, GpuError> {
        self.write_geometry(format, width, height, stride, pixels, available)?;
        let stream = self.kernels.stream.clone();
        self.timer.start(&stream)?;
        // SAFETY: the geometry just written was checked against `available` bytes, which
        // the caller vouches for until this call returns (it waits for the stream).
        unsafe { self.launch_resample(1) }?;
        self.timer.stop(&stream)?;
        Ok(GpuTiming {
            kernel_us: self.timer.elapsed_us()?,
        })
    }

    /// Preprocesses a frame in host memory: copies it to a device staging buffer first
    /// (for tests, benchmarks, and frames that arrive in host memory).
    #[allow(unsafe_code)]
    pub fn run_host(&mut self, frame: &FrameView<'_>) -> Result<GpuTiming, GpuError> {
        let len = frame.pixels.len();
        let stream = self.kernels.stream.clone();
        if self.staging.as_ref().is_none_or(|s| s.len() < len) {
            self.staging = Some(stream.alloc_zeros::<u8>(len.max(1)).map_err(cuda)?);
        }
        let staging = self.staging.as_mut().expect("allocated above");
        stream
            .memcpy_htod(frame.pixels, &mut staging.slice_mut(..len))
            .map_err(cuda)?;
        let ptr = {
            let (p, _sync) = staging.device_ptr(&stream);
            p
        };
        // SAFETY: `ptr .. ptr + len` is the staging buffer this struct owns; it lives
        // until replaced by a larger one in a later `run_host`, after this one has waited.
        let timing = unsafe {
            self.run_device(
                frame.format,
                frame.width,
                frame.height,
                frame.stride,
                ptr,
                len,
            )
        }?;
        self.last = Some((frame.format, frame.width, frame.height, frame.stride, len));
        Ok(timing)
    }

    /// Runs the kernel again on the frame of the last [`Self::run_host`] (for timing the
    /// kernel alone). Errors: [`GpuError::Geometry`] when nothing has run yet.
    #[allow(unsafe_code)]
    pub fn run_again(&mut self) -> Result<GpuTiming, GpuError> {
        let (format, width, height, stride, len) = self
            .last
            .ok_or_else(|| GpuError::Geometry("no frame has been preprocessed yet".into()))?;
        let stream = self.kernels.stream.clone();
        let staging = self.staging.as_ref().expect("set with `last`");
        let ptr = {
            let (p, _sync) = staging.device_ptr(&stream);
            p
        };
        // SAFETY: `last` is only set by `run_host`: the frame is in the staging buffer
        // this struct owns, which only a later `run_host` replaces (and re-sets `last`).
        unsafe { self.run_device(format, width, height, stride, ptr, len) }
    }

    /// Copies the first frame's tensor to host memory (`out.len()` =
    /// [`Self::output_len`]).
    pub fn tensor_to_host(&self, out: &mut [f32]) -> Result<(), GpuError> {
        let stream = &self.kernels.stream;
        stream
            .memcpy_dtoh(&self.out.slice(..self.output_len()), out)
            .map_err(cuda)?;
        stream.synchronize().map_err(cuda)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tap_bound_covers_every_frame_that_fits() {
        // A square mono frame filling the buffer has the largest crop.
        for (payload, out) in [(1usize << 20, 224usize), (3840 * 2160 * 3, 224), (64, 224)] {
            let side = ((payload as f64).sqrt() as u32) * 7 / 8;
            let c = crate::preprocess::coefficients(side.max(1), out as u32);
            assert!(
                c.ksize <= ksize_for(payload, out, out),
                "{payload}: {}",
                c.ksize
            );
        }
    }
}
