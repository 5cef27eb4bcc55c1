//! GPU preprocessing: the CUDA version of `preprocess.rs`, reading a frame where it lies
//! in GPU memory and writing the model's input tensor in GPU memory.
//!
//! Owns: [`GpuPreprocessor`]. The arithmetic is the CPU reference's (centre crop of
//! 87.5 % of the short side, rounded down; half-pixel-centre bilinear taps clamped at the
//! edges; `(x − 127) / 128`; RGB planes, NCHW; mono copied to all three planes), in f32
//! where the CPU computes tap positions in f64: outputs agree within [`TOLERANCE`].

// Kernel launches on device addresses: each `unsafe` states the bounds it relies on.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use fpgagdr::PixelFormat;

use super::kernels::{EventTimer, GpuError, GpuKernels, cuda};
use crate::preprocess::{CROP_FRACTION, FrameView, MEAN, SCALE};

/// Largest difference between GPU and CPU preprocessing of the same frame, in the
/// normalised units of the tensor (1/128 per grey level): 0.001 ≈ 0.13 grey levels.
pub const TOLERANCE: f32 = 1e-3;

const KERNEL: &str = r#"
extern "C" __global__ void fpgagdr_preprocess(
    const unsigned char* src, int width, int height, int stride, int bpp,
    float x0, float y0, float scale_x, float scale_y,
    float mean, float inv_scale, float* out, int out_w, int out_h)
{
    int ox = blockIdx.x * blockDim.x + threadIdx.x;
    int oy = blockIdx.y * blockDim.y + threadIdx.y;
    if (ox >= out_w || oy >= out_h) return;
    float sx = fminf(fmaxf(x0 + (ox + 0.5f) * scale_x - 0.5f, 0.0f), (float)(width - 1));
    float sy = fminf(fmaxf(y0 + (oy + 0.5f) * scale_y - 0.5f, 0.0f), (float)(height - 1));
    int xa = (int)floorf(sx), ya = (int)floorf(sy);
    int xb = min(xa + 1, width - 1), yb = min(ya + 1, height - 1);
    float wx = sx - xa, wy = sy - ya;
    const unsigned char* ra = src + (size_t)ya * stride;
    const unsigned char* rb = src + (size_t)yb * stride;
    int plane = out_w * out_h;
    for (int c = 0; c < 3; ++c) {
        int ch = bpp == 1 ? 0 : c;
        float top = ra[xa * bpp + ch] * (1.0f - wx) + ra[xb * bpp + ch] * wx;
        float bot = rb[xa * bpp + ch] * (1.0f - wx) + rb[xb * bpp + ch] * wx;
        out[c * plane + oy * out_w + ox] = (top * (1.0f - wy) + bot * wy - mean) * inv_scale;
    }
}
"#;

/// GPU time of one preprocessing run, from CUDA events around the kernel, µs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuTiming {
    /// Kernel time, µs.
    pub kernel_us: f64,
}

/// Frame → input tensor on the GPU. Holds the compiled kernel, the output tensor (device
/// memory, 3 × H × W f32), a pair of timing events and a staging buffer for frames that
/// start in host memory.
#[derive(Debug)]
pub struct GpuPreprocessor {
    kernels: GpuKernels,
    func: CudaFunction,
    timer: EventTimer,
    out: CudaSlice<f32>,
    out_w: usize,
    out_h: usize,
    staging: Option<CudaSlice<u8>>,
    last: Option<(PixelFormat, u32, u32, u32, u64, usize)>,
}

impl GpuPreprocessor {
    /// Compiles the kernel for a model input of `out_w` × `out_h` pixels, in the
    /// context the frame ring lives in, on a new stream.
    ///
    /// Errors: [`GpuError::Unavailable`] without a CUDA driver or NVRTC library;
    /// [`GpuError::Cuda`].
    pub fn new(out_w: usize, out_h: usize) -> Result<Self, GpuError> {
        Self::with_kernels(GpuKernels::compile(KERNEL)?, out_w, out_h)
    }

    /// As [`Self::new`], with the kernel running on `stream`.
    pub fn on_stream(
        stream: &Arc<CudaStream>,
        out_w: usize,
        out_h: usize,
    ) -> Result<Self, GpuError> {
        Self::with_kernels(GpuKernels::compile_on(stream, KERNEL)?, out_w, out_h)
    }

    fn with_kernels(kernels: GpuKernels, out_w: usize, out_h: usize) -> Result<Self, GpuError> {
        let func = kernels.function("fpgagdr_preprocess")?;
        let timer = EventTimer::new(&kernels)?;
        let out = kernels
            .stream
            .alloc_zeros::<f32>(3 * out_w * out_h)
            .map_err(cuda)?;
        Ok(GpuPreprocessor {
            kernels,
            func,
            timer,
            out,
            out_w,
            out_h,
            staging: None,
            last: None,
        })
    }

    /// The stream the kernel runs on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.kernels.stream
    }

    /// The compiled module, context and stream.
    pub fn kernels(&self) -> &GpuKernels {
        &self.kernels
    }

    /// Length of the output tensor, f32 elements (3 × H × W).
    pub fn output_len(&self) -> usize {
        3 * self.out_w * self.out_h
    }

    /// The output tensor in device memory, `[1, 3, H, W]` f32, valid once the stream has
    /// run the last preprocessing.
    pub fn tensor(&self) -> &CudaSlice<f32> {
        &self.out
    }

    /// Preprocesses a frame whose pixels are at device address `pixels`, `available`
    /// bytes long, and waits for it.
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
        self.timer.start(&self.kernels.stream)?;
        // SAFETY: the caller's contract above.
        unsafe { self.launch(format, width, height, stride, pixels, available) }?;
        self.timer.stop(&self.kernels.stream)?;
        Ok(GpuTiming {
            kernel_us: self.timer.elapsed_us()?,
        })
    }

    /// Queues the kernel on the stream without waiting (the frame path records its own
    /// events around it).
    ///
    /// Errors and safety: as [`Self::run_device`], except that the memory must stay
    /// valid until the stream has run the kernel, which this call does not wait for.
    #[allow(unsafe_code)]
    pub(crate) unsafe fn launch(
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
        let (w, h) = (width as f64, height as f64);
        let crop = (w.min(h) * CROP_FRACTION).floor().max(1.0);
        let (x0, y0) = (
            ((w - crop) / 2.0).floor() as f32,
            ((h - crop) / 2.0).floor() as f32,
        );
        let (scale_x, scale_y) = (
            (crop / self.out_w as f64) as f32,
            (crop / self.out_h as f64) as f32,
        );
        let (out_w, out_h) = (self.out_w as i32, self.out_h as i32);
        let (width, height, stride, bpp) = (width as i32, height as i32, stride as i32, bpp as i32);
        let inv_scale = 1.0 / SCALE;
        let cfg = LaunchConfig {
            grid_dim: (
                self.out_w.div_ceil(16) as u32,
                self.out_h.div_ceil(16) as u32,
                1,
            ),
            block_dim: (16, 16, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = self.kernels.stream.launch_builder(&self.func);
        launch
            .arg(&pixels)
            .arg(&width)
            .arg(&height)
            .arg(&stride)
            .arg(&bpp)
            .arg(&x0)
            .arg(&y0)
            .arg(&scale_x)
            .arg(&scale_y)
            .arg(&MEAN)
            .arg(&inv_scale)
            .arg(&mut self.out)
            .arg(&out_w)
            .arg(&out_h);
        // SAFETY: the argument list matches the kernel's signature; every source read is
        // at (row ≤ height − 1) × stride + (column ≤ width − 1) × bpp + channel < `need`
        // ≤ `available` bytes from `pixels` (checked above; the caller vouches for those
        // bytes), and every write is inside `out`, which holds 3 × out_w × out_h floats
        // (threads outside return early).
        unsafe { launch.launch(cfg) }.map_err(cuda)?;
        Ok(())
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
            use cudarc::driver::DevicePtr;
            let (p, _sync) = staging.device_ptr(&stream);
            p
        };
        let last = (
            frame.format,
            frame.width,
            frame.height,
            frame.stride,
            ptr,
            len,
        );
        // SAFETY: `ptr .. ptr + len` is the staging buffer this struct owns; it lives
        // until replaced by a larger one in a later `run_host`, after this one has waited.
        let timing = unsafe { self.run_device(last.0, last.1, last.2, last.3, last.4, last.5) }?;
        self.last = Some(last);
        Ok(timing)
    }

    /// Runs the kernel again on the frame of the last [`Self::run_host`] (for timing the
    /// kernel alone). Errors: [`GpuError::Geometry`] when nothing has run yet.
    #[allow(unsafe_code)]
    pub fn run_again(&mut self) -> Result<GpuTiming, GpuError> {
        let (format, w, h, stride, pixels, available) = self
            .last
            .ok_or_else(|| GpuError::Geometry("no frame has been preprocessed yet".into()))?;
        // SAFETY: `last` is only set by `run_host`: the frame is in the staging buffer
        // this struct owns, which only a later `run_host` replaces (and re-sets `last`).
        unsafe { self.run_device(format, w, h, stride, pixels, available) }
    }

    /// Copies the output tensor to host memory (`out.len()` = [`Self::output_len`]).
    pub fn tensor_to_host(&self, out: &mut [f32]) -> Result<(), GpuError> {
        let stream = &self.kernels.stream;
        stream.memcpy_dtoh(&self.out, out).map_err(cuda)?;
        stream.synchronize().map_err(cuda)
    }
}
