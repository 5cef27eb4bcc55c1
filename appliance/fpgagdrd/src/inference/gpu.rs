//! GPU preprocessing: the CUDA version of `preprocess.rs`, compiled at run time with
//! NVRTC, reading a frame where it lies in GPU memory and writing the model's input
//! tensor in GPU memory.
//!
//! Owns: [`GpuPreprocessor`] and [`GpuError`]. The arithmetic is the CPU reference's
//! (centre crop of 87.5 % of the short side, rounded down; half-pixel-centre bilinear
//! taps clamped at the edges; `(x − 127) / 128`; RGB planes, NCHW; mono copied to all
//! three planes), in f32 where the CPU computes tap positions in f64: outputs agree within
//! [`TOLERANCE`]. Kernel time is measured with CUDA events.
//! Must not: run without a probe: the CUDA driver and NVRTC are loaded at run time, and
//! cudarc's loader panics when a library is missing, so [`GpuPreprocessor::new`] checks
//! both first and returns [`GpuError::Unavailable`].
//! The kernel launches are this crate's only `unsafe` besides the frame ring read in
//! `pipeline/infer.rs`; each states the bounds the kernel relies on.

use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg, sys,
};
use fpgagdr::PixelFormat;

use super::preprocess::{CROP_FRACTION, FrameView, MEAN, SCALE};

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

/// Why GPU preprocessing cannot run.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// No CUDA driver or no NVRTC library: a normal state on a machine without a GPU.
    #[error("rule gpu-available: {0}")]
    Unavailable(String),
    /// The CUDA driver or NVRTC reported an error.
    #[error("rule cuda: {0}")]
    Cuda(String),
    /// The frame does not fit the buffer it is said to be in.
    #[error("rule frame-geometry: {0}")]
    Geometry(String),
}

fn cuda(e: impl std::fmt::Display) -> GpuError {
    GpuError::Cuda(e.to_string())
}

/// GPU time of one preprocessing run, from CUDA events around the kernel, µs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuTiming {
    /// Kernel time, µs.
    pub kernel_us: f64,
}

/// Frame → input tensor on the GPU. Holds the compiled kernel, a stream, the output
/// tensor (device memory, 3 × H × W f32) and a staging buffer for frames that start in
/// host memory.
#[derive(Debug)]
pub struct GpuPreprocessor {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    func: CudaFunction,
    out: CudaSlice<f32>,
    out_w: usize,
    out_h: usize,
    staging: Option<CudaSlice<u8>>,
    last: Option<(PixelFormat, u32, u32, u32, u64, usize)>,
}

impl GpuPreprocessor {
    /// Compiles the kernel for a model input of `out_w` × `out_h` pixels, in the
    /// context the frame ring lives in.
    ///
    /// Errors: [`GpuError::Unavailable`] without a CUDA driver or NVRTC library.
    pub fn new(out_w: usize, out_h: usize) -> Result<Self, GpuError> {
        let ctx = fpgagdr::cuda_context().ok_or_else(|| match fpgagdr::gpu_memory() {
            fpgagdr::GpuMemory::Absent(why) => GpuError::Unavailable(why),
            fpgagdr::GpuMemory::Available(_) => GpuError::Unavailable("no CUDA context".into()),
        })?;
        #[allow(unsafe_code)]
        // SAFETY: only tries to dlopen the NVRTC library.
        let nvrtc = unsafe { cudarc::nvrtc::sys::is_culib_present() };
        if !nvrtc {
            return Err(GpuError::Unavailable(
                "no NVRTC library (libnvrtc.so) found".into(),
            ));
        }
        let ptx = cudarc::nvrtc::compile_ptx(KERNEL).map_err(cuda)?;
        let module = ctx.load_module(ptx).map_err(cuda)?;
        let func = module.load_function("fpgagdr_preprocess").map_err(cuda)?;
        let stream = ctx.new_stream().map_err(cuda)?;
        let out = stream.alloc_zeros::<f32>(3 * out_w * out_h).map_err(cuda)?;
        Ok(GpuPreprocessor {
            ctx,
            stream,
            func,
            out,
            out_w,
            out_h,
            staging: None,
            last: None,
        })
    }

    /// Length of the output tensor, f32 elements (3 × H × W).
    pub fn output_len(&self) -> usize {
        3 * self.out_w * self.out_h
    }

    /// Preprocesses a frame whose pixels are at device address `pixels` (a ring entry
    /// in CUDA device memory, past the frame header), `available` bytes long.
    ///
    /// Errors: [`GpuError::Geometry`] when `stride × (height − 1) + width × bpp` exceeds
    /// `available`; [`GpuError::Cuda`].
    #[allow(clippy::too_many_arguments)]
    pub fn run_device(
        &mut self,
        format: PixelFormat,
        width: u32,
        height: u32,
        stride: u32,
        pixels: u64,
        available: usize,
    ) -> Result<GpuTiming, GpuError> {
        let bpp = format.bytes_per_pixel();
        let need = stride as usize * (height as usize - 1) + width as usize * bpp;
        if width == 0 || height == 0 || (stride as usize) < width as usize * bpp || need > available
        {
            return Err(GpuError::Geometry(format!(
                "{width}x{height} {} frame with stride {stride} needs {need} bytes, {available} available",
                format.as_str()
            )));
        }
        self.last = Some((format, width, height, stride, pixels, available));
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
        let timing = sys::CUevent_flags::CU_EVENT_DEFAULT;
        let start = self.ctx.new_event(Some(timing)).map_err(cuda)?;
        let end = self.ctx.new_event(Some(timing)).map_err(cuda)?;
        start.record(&self.stream).map_err(cuda)?;
        let mut launch = self.stream.launch_builder(&self.func);
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
        #[allow(unsafe_code)]
        // SAFETY: the argument list matches the kernel's signature; every source read is
        // at (row ≤ height − 1) × stride + (column ≤ width − 1) × bpp + channel < `need`
        // ≤ `available` bytes from `pixels` (checked above), and every write is inside
        // `out`, which holds 3 × out_w × out_h floats (threads outside return early).
        unsafe { launch.launch(cfg) }.map_err(cuda)?;
        end.record(&self.stream).map_err(cuda)?;
        let ms = start.elapsed_ms(&end).map_err(cuda)?;
        Ok(GpuTiming {
            kernel_us: ms as f64 * 1000.0,
        })
    }

    /// Preprocesses a frame in host memory: copies it to a device staging buffer first
    /// (for tests, benchmarks, and frames that arrive in host memory).
    pub fn run_host(&mut self, frame: &FrameView<'_>) -> Result<GpuTiming, GpuError> {
        let len = frame.pixels.len();
        if self.staging.as_ref().is_none_or(|s| s.len() < len) {
            self.staging = Some(self.stream.alloc_zeros::<u8>(len.max(1)).map_err(cuda)?);
        }
        let staging = self.staging.as_mut().expect("allocated above");
        self.stream
            .memcpy_htod(frame.pixels, &mut staging.slice_mut(..len))
            .map_err(cuda)?;
        let ptr = {
            use cudarc::driver::DevicePtr;
            let (p, _sync) = staging.device_ptr(&self.stream);
            p
        };
        self.run_device(
            frame.format,
            frame.width,
            frame.height,
            frame.stride,
            ptr,
            len,
        )
    }

    /// Runs the kernel again on the frame of the last run (for timing the kernel alone).
    /// Errors: [`GpuError::Geometry`] when nothing has run yet.
    pub fn run_again(&mut self) -> Result<GpuTiming, GpuError> {
        let (format, w, h, stride, pixels, available) = self
            .last
            .ok_or_else(|| GpuError::Geometry("no frame has been preprocessed yet".into()))?;
        self.run_device(format, w, h, stride, pixels, available)
    }

    /// Copies the output tensor to host memory (`out.len()` = [`Self::output_len`]).
    pub fn tensor_to_host(&self, out: &mut [f32]) -> Result<(), GpuError> {
        self.stream.memcpy_dtoh(&self.out, out).map_err(cuda)?;
        self.stream.synchronize().map_err(cuda)
    }
}
