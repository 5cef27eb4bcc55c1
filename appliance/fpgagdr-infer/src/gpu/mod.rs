//! The GPU side of inference: kernels compiled at run time with NVRTC that read a frame
//! where it lies in GPU memory: its payload CRC ([`GpuCrc32`]) and the model's input
//! tensors ([`GpuPreprocessor`], which also checks each frame's header), a batch of frames
//! at a time, all in GPU memory, timed with CUDA events.
//!
//! Owns: nothing but the names: `kernels.rs` holds [`GpuError`], [`GpuKernels`] (the
//! context, one stream, the compiled module) and [`EventTimer`]; `checksum.rs` and
//! `preprocess.rs` the frame kernels; `topk.rs` the model's softmax top-5 ([`GpuTopK`]).
//! Must not: run without a probe: the CUDA driver and NVRTC are loaded at run time, and
//! cudarc's loader panics when a library is missing, so [`GpuKernels::compile`] checks
//! both first and returns [`GpuError::Unavailable`].
//! Kernel launches are `unsafe`; each states the bounds the kernel relies on.

mod checksum;
mod kernels;
mod preprocess;
mod topk;

pub use checksum::{GpuCrc32, crc32_chunked, crc32_combine};
pub(crate) use kernels::cuda;
pub use kernels::{EventTimer, GpuError, GpuKernels};
pub use preprocess::{GpuPreprocessor, GpuTiming, TOLERANCE};
pub(crate) use preprocess::{RESULT_CRC, RESULT_WORDS};
pub use topk::{GpuTopK, TOPK_K};
