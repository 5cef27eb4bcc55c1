//! What every GPU stage shares: the CUDA context of the frame ring, one stream, a module
//! compiled at run time with NVRTC, CUDA event timing, and the error type.
//!
//! Owns: [`GpuError`], [`GpuKernels`], [`EventTimer`], the geometry record's size. Must
//! not: know a kernel's source; `checksum.rs` and `preprocess.rs` bring theirs.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaEvent, CudaFunction, CudaModule, CudaStream, sys};

/// Words (u32) of one frame's geometry record, which the header kernel writes and the CRC
/// and preprocessing kernels read: pixel address low, high, width, height, stride, bytes
/// per pixel, payload length, valid (1) or not (0).
pub(crate) const GEOM_WORDS: usize = 8;

/// Why GPU work cannot run.
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

pub(crate) fn cuda(e: impl std::fmt::Display) -> GpuError {
    GpuError::Cuda(e.to_string())
}

/// A CUDA context (the one the frame ring lives in), a stream, and a module compiled
/// from CUDA C source with NVRTC.
#[derive(Debug, Clone)]
pub struct GpuKernels {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    module: Arc<CudaModule>,
}

impl GpuKernels {
    /// Compiles `source` in the frame ring's context, on a new stream.
    ///
    /// Errors: [`GpuError::Unavailable`] without a CUDA driver or NVRTC library;
    /// [`GpuError::Cuda`] when compiling or loading fails.
    pub fn compile(source: &str) -> Result<Self, GpuError> {
        let ctx = fpgagdr::cuda_context().ok_or_else(|| match fpgagdr::gpu_memory() {
            fpgagdr::GpuMemory::Absent(why) => GpuError::Unavailable(why),
            fpgagdr::GpuMemory::Available(_) => GpuError::Unavailable("no CUDA context".into()),
        })?;
        let stream = ctx.new_stream().map_err(cuda)?;
        Self::compile_on(&stream, source)
    }

    /// Compiles `source` for use on an existing `stream` (so that kernels of several
    /// modules run in order on one stream).
    pub fn compile_on(stream: &Arc<CudaStream>, source: &str) -> Result<Self, GpuError> {
        #[allow(unsafe_code)]
        // SAFETY: only tries to dlopen the NVRTC library.
        let nvrtc = unsafe { cudarc::nvrtc::sys::is_culib_present() };
        if !nvrtc {
            return Err(GpuError::Unavailable(
                "no NVRTC library (libnvrtc.so) found".into(),
            ));
        }
        let ctx = stream.context().clone();
        let ptx = cudarc::nvrtc::compile_ptx(source).map_err(cuda)?;
        let module = ctx.load_module(ptx).map_err(cuda)?;
        Ok(GpuKernels {
            ctx,
            stream: stream.clone(),
            module,
        })
    }

    /// A kernel of the module by its `extern "C"` name.
    pub(crate) fn function(&self, name: &str) -> Result<CudaFunction, GpuError> {
        self.module.load_function(name).map_err(cuda)
    }

    /// The stream every kernel of this module runs on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }
}

/// A pair of CUDA events around work on one stream, created once and reused (no
/// allocation per frame): GPU time of that work, µs.
#[derive(Debug)]
pub struct EventTimer {
    start: CudaEvent,
    end: CudaEvent,
}

impl EventTimer {
    /// Two timing events in `kernels`' context.
    pub fn new(kernels: &GpuKernels) -> Result<Self, GpuError> {
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        Ok(EventTimer {
            start: kernels.ctx.new_event(flags).map_err(cuda)?,
            end: kernels.ctx.new_event(flags).map_err(cuda)?,
        })
    }

    /// Records the start event on `stream`.
    pub fn start(&self, stream: &CudaStream) -> Result<(), GpuError> {
        self.start.record(stream).map_err(cuda)
    }

    /// Records the end event on `stream`.
    pub fn stop(&self, stream: &CudaStream) -> Result<(), GpuError> {
        self.end.record(stream).map_err(cuda)
    }

    /// Waits for the end event; GPU time from start to end, µs (CUDA events resolve
    /// about 0.5 µs).
    pub fn elapsed_us(&self) -> Result<f64, GpuError> {
        let ms = self.start.elapsed_ms(&self.end).map_err(cuda)?;
        Ok(ms as f64 * 1000.0)
    }
}
