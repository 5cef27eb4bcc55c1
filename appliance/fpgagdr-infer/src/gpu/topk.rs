//! The model's results where they lie: softmax and the best five classes of every row of
//! the logits in GPU memory, so that a batch brings back 5 (class, probability) pairs a
//! frame instead of its whole logits, and the host spends no time on them.
//!
//! Owns: [`GpuTopK`] and its kernel `fpgagdr_topk`: one warp per row; the row's maximum
//! and the sum of `exp(logit − max)` by warp reductions; each lane keeps the best five
//! of the logits it read, ranked by logit then lowest class (the order of the host's
//! `top_k`, whose ranking by probability is the same), and five warp-wide rounds take the
//! best head of all lanes. Probability = `expf(logit − max) / sum`, single precision as on
//! the host (the sum is added in another order: the last bit may differ).

// Kernel launches on device addresses: each `unsafe` states the bounds it relies on.

use std::sync::Arc;

use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, LaunchConfig, PinnedHostSlice, PushKernelArg,
};

use super::kernels::{GpuError, GpuKernels, cuda};

/// Classes kept per row (the service's `TOP_K`).
pub const TOPK_K: usize = 5;
/// Rows (warps) per block.
const ROWS_PER_BLOCK: u32 = 4;

const KERNEL: &str = r#"
#define K 5
/* NVRTC has no <math.h>: minus infinity by its bits. */
#define FG_NEG_INF __int_as_float(0xff800000)
__device__ int fg_better(float v, int i, float w, int j) {
    return v > w || (v == w && i < j);
}

/* rows x classes floats at logits; out[row * 2K + 2k] = class, [.. + 1] = probability
   bits, best first; a slot with no class holds class 0xffffffff. */
extern "C" __global__ void fpgagdr_topk(const float* logits, int rows, int classes,
    unsigned int* out)
{
    int lane = threadIdx.x & 31;
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;
    const float* l = logits + (size_t)row * classes;
    float m = FG_NEG_INF;
    for (int i = lane; i < classes; i += 32) m = fmaxf(m, l[i]);
    for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float s = 0.0f;
    for (int i = lane; i < classes; i += 32) s += expf(l[i] - m);
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    float tv[K];
    int ti[K];
    for (int k = 0; k < K; ++k) { tv[k] = FG_NEG_INF; ti[k] = 0x7fffffff; }
    for (int i = lane; i < classes; i += 32) {
        float v = l[i];
        if (!fg_better(v, i, tv[K - 1], ti[K - 1])) continue;
        int at = K - 1;
        while (at > 0 && fg_better(v, i, tv[at - 1], ti[at - 1])) {
            tv[at] = tv[at - 1]; ti[at] = ti[at - 1]; --at;
        }
        tv[at] = v; ti[at] = i;
    }
    int head = 0;
    for (int k = 0; k < K; ++k) {
        float v = head < K ? tv[head] : FG_NEG_INF;
        int i = head < K ? ti[head] : 0x7fffffff;
        float bv = v;
        int bi = i;
        for (int o = 16; o; o >>= 1) {
            float ov = __shfl_xor_sync(0xffffffffu, bv, o);
            int oi = __shfl_xor_sync(0xffffffffu, bi, o);
            if (fg_better(ov, oi, bv, bi)) { bv = ov; bi = oi; }
        }
        if (head < K && i == bi && i != 0x7fffffff) ++head;
        if (lane == 0) {
            unsigned int* r = out + (size_t)row * 2 * K + 2 * k;
            if (bi == 0x7fffffff) {
                r[0] = 0xffffffffu; r[1] = __float_as_uint(FG_NEG_INF);
            } else {
                r[0] = (unsigned int)bi; r[1] = __float_as_uint(expf(bv - m) / s);
            }
        }
    }
}
"#;

/// Softmax top-5 of rows of logits in GPU memory, on one stream, with its result buffers
/// (device and page-locked host) allocated once for up to `max_rows` rows.
#[derive(Debug)]
pub struct GpuTopK {
    kernels: GpuKernels,
    topk_fn: CudaFunction,
    out: CudaSlice<u32>,
    host: PinnedHostSlice<u32>,
    max_rows: usize,
}

impl GpuTopK {
    /// Compiles the kernel for use on `stream`, buffers for `max_rows` rows.
    ///
    /// Errors: [`GpuError::Unavailable`] without NVRTC; [`GpuError::Cuda`].
    pub fn on_stream(stream: &Arc<CudaStream>, max_rows: usize) -> Result<Self, GpuError> {
        let kernels = GpuKernels::compile_on(stream, KERNEL)?;
        let max_rows = max_rows.max(1);
        let out = stream
            .alloc_zeros::<u32>(max_rows * 2 * TOPK_K)
            .map_err(cuda)?;
        #[allow(unsafe_code)]
        // SAFETY: page-locked host memory written only by copies on `stream`, read after
        // the stream is synchronised (`Self::read`).
        let host =
            unsafe { kernels.ctx.alloc_pinned::<u32>(max_rows * 2 * TOPK_K) }.map_err(cuda)?;
        Ok(GpuTopK {
            topk_fn: kernels.function("fpgagdr_topk")?,
            kernels,
            out,
            host,
            max_rows,
        })
    }

    /// Another top-5 on the same stream with buffers of its own (the kernel compiled
    /// once).
    ///
    /// Errors: [`GpuError::Cuda`].
    pub fn sibling(&self) -> Result<Self, GpuError> {
        let stream = &self.kernels.stream;
        let n = self.max_rows * 2 * TOPK_K;
        #[allow(unsafe_code)]
        // SAFETY: as in `on_stream`.
        let host = unsafe { self.kernels.ctx.alloc_pinned::<u32>(n) }.map_err(cuda)?;
        Ok(GpuTopK {
            kernels: self.kernels.clone(),
            topk_fn: self.topk_fn.clone(),
            out: stream.alloc_zeros::<u32>(n).map_err(cuda)?,
            host,
            max_rows: self.max_rows,
        })
    }

    /// Queues, on the stream, the top-5 of `rows` rows of `classes` floats at device
    /// address `logits` and the copy of the results to page-locked host memory; read them
    /// with [`Self::read`] once the stream is synchronised.
    ///
    /// Errors: [`GpuError::Geometry`] for 0 or more than `max_rows` rows, or no class;
    /// [`GpuError::Cuda`].
    ///
    /// # Safety
    /// `logits` must hold `rows × classes` f32 of device memory of the stream's context,
    /// written by work queued on this stream before this call, and stay allocated and
    /// unwritten until the stream has been synchronised.
    #[allow(unsafe_code)]
    pub unsafe fn launch(
        &mut self,
        logits: u64,
        rows: usize,
        classes: usize,
    ) -> Result<(), GpuError> {
        if rows == 0 || rows > self.max_rows || classes == 0 || classes > i32::MAX as usize {
            return Err(GpuError::Geometry(format!(
                "top-{TOPK_K} of {rows} rows of {classes} classes: 1..={} rows",
                self.max_rows
            )));
        }
        let stream = self.kernels.stream.clone();
        let (rows_i, classes_i) = (rows as i32, classes as i32);
        let cfg = LaunchConfig {
            grid_dim: ((rows as u32).div_ceil(ROWS_PER_BLOCK), 1, 1),
            block_dim: (32 * ROWS_PER_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = stream.launch_builder(&self.topk_fn);
        launch
            .arg(&logits)
            .arg(&rows_i)
            .arg(&classes_i)
            .arg(&mut self.out);
        // SAFETY: the kernel reads rows × classes floats at `logits` (the caller's
        // contract) and writes rows × 10 words of `out`, which holds max_rows × 10.
        unsafe { launch.launch(cfg) }.map_err(cuda)?;
        let n = rows * 2 * TOPK_K;
        stream
            .memcpy_dtoh(&self.out.slice(..n), &mut self.host)
            .map_err(cuda)?;
        Ok(())
    }

    /// Row `i`'s best five (class, probability), best first, of the last launch; a slot
    /// with no class is `(0, −∞)` (as the host's top-5 leaves it). Waits for the copy
    /// of the last launch's results (its CUDA event), not for the whole stream.
    pub fn read(&self, i: usize) -> Result<[(u32, f32); TOPK_K], GpuError> {
        let all = self.host.as_slice().map_err(cuda)?;
        let r = &all[i * 2 * TOPK_K..(i + 1) * 2 * TOPK_K];
        Ok(std::array::from_fn(|k| match r[2 * k] {
            u32::MAX => (0, f32::NEG_INFINITY),
            class => (class, f32::from_bits(r[2 * k + 1])),
        }))
    }
}
