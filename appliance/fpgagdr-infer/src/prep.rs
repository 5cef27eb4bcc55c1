//! Frame → model input tensor, where the frame lies: the step of the inference thread
//! between taking a ring entry and releasing it.
//!
//! Owns: [`FramePrep`]: on the GPU when the ring is CUDA memory (device memory, or
//! GPU-mapped host memory on Tegra) and the kernels compile (header copied to the host, 64 B; payload CRC and preprocessing by CUDA
//! kernels reading the ring entry in place; the tensor left in GPU memory for ONNX
//! Runtime's CUDA provider, or copied to pinned host memory for its CPU provider),
//! otherwise on the CPU (reading host memory in place, or
//! after copying the whole frame device-to-host). Every device-to-host copy is timed and
//! reported as the `d2h` stage; GPU stages are timed with CUDA events.
//! Must not: touch the queue; the caller releases the entry after [`FramePrep::run`].
//! Reads ring entries that the card writes: every `unsafe` here passes on or relies on
//! the caller's promise that no C2H into the entry runs meanwhile.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{CudaStream, PinnedHostSlice};
use fpgagdr::frame::{FrameError, FrameHeader, HEADER_LEN};
use fpgagdr::{MemoryKind, PinnedBuffer};

use crate::gpu::{EventTimer, GpuCrc32, GpuError, GpuPreprocessor, cuda};
use crate::preprocess::{FrameView, Preprocessor};

/// A frame checked and turned into a tensor.
#[derive(Debug, Clone, Copy)]
pub struct Prepped {
    /// The frame's parsed header.
    pub header: FrameHeader,
    /// Time spent copying device → host, ns; `None` when nothing was copied.
    pub d2h_ns: Option<u64>,
    /// Checksum and preprocessing time, ns.
    pub preprocess_ns: u64,
}

/// Where the tensor [`FramePrep::run`] built lies; borrowed from the [`FramePrep`], so it
/// stays as written until the next run. [`crate::Model::classify_tensor`] takes either.
#[derive(Debug, Clone, Copy)]
pub enum Tensor<'a> {
    /// In host memory.
    Host(&'a [f32]),
    /// In CUDA device memory (3 × H × W f32), the writing stream synchronised.
    Device(DeviceTensor<'a>),
}

/// A tensor [`FramePrep::run`] left in CUDA device memory. Only this crate makes one, and
/// only once the stream that wrote it is synchronised; the borrow keeps the next run
/// from rewriting it while it is in use.
#[derive(Debug, Clone, Copy)]
pub struct DeviceTensor<'a> {
    addr: u64,
    _prep: PhantomData<&'a GpuPrep>,
}

impl DeviceTensor<'_> {
    /// Device address of the first float.
    pub fn addr(&self) -> u64 {
        self.addr
    }
}

/// Why a frame produced no tensor.
#[derive(Debug, thiserror::Error)]
pub enum PrepError {
    /// The frame itself is bad (header, geometry, CRC): count it and go on.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// The path broke (a CUDA error): the pipeline stops.
    #[error("{0}")]
    Path(String),
}

impl From<GpuError> for PrepError {
    fn from(e: GpuError) -> Self {
        PrepError::Path(e.to_string())
    }
}

/// Where preprocessing runs, with its buffers (allocated once).
#[derive(Debug)]
pub enum FramePrep {
    /// CPU preprocessing; `staging` holds frames copied from device memory.
    Cpu {
        /// Crop, resize, normalise and lay out.
        pre: Preprocessor,
        /// The tensor `pre` writes (3 × H × W f32).
        tensor: Vec<f32>,
        /// Frames copied out of device memory, when the ring is not host-addressable.
        staging: Vec<u8>,
    },
    /// CUDA kernels on one stream, three event pairs, pinned host memory for the tensor.
    Gpu(Box<GpuPrep>),
}

/// The GPU side of [`FramePrep`]: the kernels, their stream and timers, and the tensor's
/// pinned host copy (for a model on the CPU provider).
#[derive(Debug)]
pub struct GpuPrep {
    stream: Arc<CudaStream>,
    crc: GpuCrc32,
    pre: GpuPreprocessor,
    header: [u8; HEADER_LEN],
    tensor: PinnedHostSlice<f32>,
    device_input: bool,
    t_header: EventTimer,
    t_kernels: EventTimer,
    t_tensor: EventTimer,
}

impl FramePrep {
    /// GPU preprocessing for a ring of `kind` CUDA memory (device, or GPU-mapped host
    /// memory on Tegra) when the kernels
    /// compile, CPU preprocessing otherwise; the second value says which, for status.
    /// `device_input`: the model reads its input from GPU memory (ONNX Runtime's CUDA
    /// provider), so a GPU-built tensor stays there.
    pub fn new(kind: MemoryKind, w: usize, h: usize, device_input: bool) -> (FramePrep, String) {
        if matches!(kind, MemoryKind::CudaDevice | MemoryKind::CudaHost) {
            match GpuPrep::new(w, h, device_input) {
                Ok(g) => {
                    let tensor = if device_input {
                        "the tensor stays in GPU memory for ONNX Runtime's CUDA provider \
                         (only the 64 B header is copied to the host: the d2h stage)"
                    } else {
                        "the tensor is copied to the host for ONNX Runtime's CPU provider \
                         (the d2h stage, with the 64 B header)"
                    };
                    return (
                        FramePrep::Gpu(Box::new(g)),
                        format!(
                            "GPU: CUDA kernels (NVRTC) check the CRC and build the tensor in \
                             GPU memory; {tensor}"
                        ),
                    );
                }
                Err(e) => {
                    tracing::warn!("GPU preprocessing unavailable, using the CPU: {e}");
                    return (
                        FramePrep::cpu(w, h),
                        format!(
                            "CPU: each frame is copied device-to-host first (the d2h stage); \
                             GPU preprocessing unavailable: {e}"
                        ),
                    );
                }
            }
        }
        (
            FramePrep::cpu(w, h),
            "CPU, reading the frame in place".into(),
        )
    }

    fn cpu(w: usize, h: usize) -> FramePrep {
        let pre = Preprocessor::new(w, h);
        FramePrep::Cpu {
            tensor: vec![0f32; pre.output_len()],
            pre,
            staging: Vec::new(),
        }
    }

    /// Checks the frame of `len` bytes at the start of `buffer` (header; payload CRC when
    /// `verify`) and builds the model's input tensor, returned with the stage times.
    ///
    /// Errors: [`PrepError::Frame`] for a bad frame; [`PrepError::Path`] for a CUDA
    /// failure.
    ///
    /// # Safety
    /// No C2H into `buffer[..len]` may run until this returns (the ring entry is InUse).
    #[allow(unsafe_code)]
    pub unsafe fn run(
        &mut self,
        buffer: &PinnedBuffer,
        len: usize,
        verify: bool,
    ) -> Result<(Prepped, Tensor<'_>), PrepError> {
        match self {
            FramePrep::Cpu {
                pre,
                tensor,
                staging,
            } => {
                // SAFETY: the caller's contract, passed on.
                unsafe { run_cpu(pre, tensor, staging, buffer, len, verify) }
                    .map(|(p, t)| (p, Tensor::Host(t)))
            }
            // SAFETY: the caller's contract, passed on.
            FramePrep::Gpu(g) => unsafe { g.run(buffer, len, verify) },
        }
    }
}

/// # Safety
/// As [`FramePrep::run`].
#[allow(unsafe_code)]
unsafe fn run_cpu<'t>(
    pre: &mut Preprocessor,
    tensor: &'t mut [f32],
    staging: &mut Vec<u8>,
    buffer: &PinnedBuffer,
    len: usize,
    verify: bool,
) -> Result<(Prepped, &'t [f32]), PrepError> {
    let t0 = Instant::now();
    // SAFETY: the caller's contract: no C2H writes these bytes while we read them.
    let bytes: &[u8] = match unsafe { buffer.host_bytes() } {
        Some(s) => &s[..len],
        None => {
            staging.resize(len, 0);
            // SAFETY: as above.
            unsafe { buffer.copy_to_host(0, staging) }
                .map_err(|e| PrepError::Path(format!("device-to-host copy of a frame: {e}")))?;
            staging
        }
    };
    let t1 = Instant::now();
    let header = FrameHeader::parse(bytes, len)?;
    let payload = &bytes[HEADER_LEN..header.frame_len()];
    if verify {
        header.verify(payload)?;
    }
    let view = FrameView {
        format: header.format,
        width: header.width,
        height: header.height,
        stride: header.stride,
        pixels: payload,
    };
    pre.run(&view, tensor);
    let prepped = Prepped {
        header,
        d2h_ns: (!buffer.kind().host_accessible()).then_some(ns(t1 - t0)),
        preprocess_ns: ns(t1.elapsed()),
    };
    Ok((prepped, tensor))
}

impl GpuPrep {
    #[allow(unsafe_code)]
    fn new(w: usize, h: usize, device_input: bool) -> Result<GpuPrep, GpuError> {
        let pre = GpuPreprocessor::new(w, h)?;
        let stream = pre.stream().clone();
        let crc = GpuCrc32::on_stream(&stream)?;
        let kernels = pre.kernels();
        let ctx = stream.context();
        // SAFETY: plain page-locked host memory (flags 0, not write-combined: the CPU
        // reads the tensor); it is written only by copies on `stream`, and read through
        // `as_slice`, which waits for them.
        let tensor =
            unsafe { ctx.alloc_pinned_with_flags::<f32>(pre.output_len(), 0) }.map_err(cuda)?;
        Ok(GpuPrep {
            t_header: EventTimer::new(kernels)?,
            t_kernels: EventTimer::new(kernels)?,
            t_tensor: EventTimer::new(kernels)?,
            stream,
            crc,
            pre,
            header: [0; HEADER_LEN],
            tensor,
            device_input,
        })
    }

    /// # Safety
    /// As [`FramePrep::run`].
    #[allow(unsafe_code)]
    unsafe fn run(
        &mut self,
        buffer: &PinnedBuffer,
        len: usize,
        verify: bool,
    ) -> Result<(Prepped, Tensor<'_>), PrepError> {
        let stream = self.stream.clone();
        let base = buffer.device_addr().ok_or_else(|| {
            PrepError::Path("GPU preprocessing of a ring entry the GPU cannot address".into())
        })?;
        if len < HEADER_LEN || len > buffer.len() {
            return Err(PrepError::Frame(FrameError::Geometry(format!(
                "{len} bytes received into a {} byte ring entry",
                buffer.len()
            ))));
        }
        self.t_header.start(&stream)?;
        // SAFETY: `base .. base + 64` lies in the pinned ring entry (len ≥ 64 checked
        // above), device memory of this context; `self.header` is a live host array, and
        // the stream is synchronised below before it is read.
        unsafe {
            cudarc::driver::result::memcpy_dtoh_async(
                &mut self.header[..],
                base,
                stream.cu_stream(),
            )
        }
        .map_err(cuda)?;
        self.t_header.stop(&stream)?;
        stream.synchronize().map_err(cuda)?;
        let header = FrameHeader::parse(&self.header, len)?;
        let (pixels, payload_len) = (base + HEADER_LEN as u64, header.frame_len() - HEADER_LEN);
        self.t_kernels.start(&stream)?;
        if verify {
            // SAFETY: `pixels .. pixels + payload_len` is the frame's payload inside the
            // ring entry (parse checked frame_len ≤ len ≤ the entry's length); the caller
            // keeps C2H off it until we return, and `crc.result()` below waits for the
            // stream.
            unsafe { self.crc.launch(pixels, payload_len) }?;
        }
        // SAFETY: as above; the kernel reads at most `payload_len` bytes from `pixels`.
        unsafe {
            self.pre.launch(
                header.format,
                header.width,
                header.height,
                header.stride,
                pixels,
                payload_len,
            )
        }
        .map_err(|e| match e {
            GpuError::Geometry(why) => PrepError::Frame(FrameError::Geometry(why)),
            e => e.into(),
        })?;
        self.t_kernels.stop(&stream)?;
        if !self.device_input {
            self.t_tensor.start(&stream)?;
            stream
                .memcpy_dtoh(self.pre.tensor(), &mut self.tensor)
                .map_err(cuda)?;
            self.t_tensor.stop(&stream)?;
        }
        let computed = if verify {
            Some(self.crc.result()?) // waits for the stream
        } else {
            stream.synchronize().map_err(cuda)?;
            None
        };
        let us_to_ns = |us: f64| (us * 1000.0).round() as u64;
        let tensor_us = if self.device_input {
            0.0
        } else {
            self.t_tensor.elapsed_us()?
        };
        let prepped = Prepped {
            header,
            d2h_ns: Some(us_to_ns(self.t_header.elapsed_us()? + tensor_us)),
            preprocess_ns: us_to_ns(self.t_kernels.elapsed_us()?),
        };
        if let Some(crc) = computed {
            header.verify_crc(crc)?;
        }
        if self.device_input {
            use cudarc::driver::DevicePtr;
            let (ptr, _sync) = self.pre.tensor().device_ptr(&stream);
            return Ok((
                prepped,
                Tensor::Device(DeviceTensor {
                    addr: ptr,
                    _prep: PhantomData,
                }),
            ));
        }
        let tensor = self.tensor.as_slice().map_err(cuda)?;
        Ok((prepped, Tensor::Host(tensor)))
    }
}

/// Whole nanoseconds of `d` (stage times are u64 ns, as the pipeline records them).
fn ns(d: Duration) -> u64 {
    d.as_nanos() as u64
}
