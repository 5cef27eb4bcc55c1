//! Frames → a batch of model input tensors, where the frames lie, and the model run on
//! the batch: the step of the inference thread between taking ring entries and releasing
//! them.
//!
//! Owns: [`FramePrep`] (allocated once for a batch of up to `max_batch` frames), the
//! per-frame outcome [`FrameOutcome`] and the batch's times [`BatchTimes`].
//!
//! * On the GPU, when the ring is CUDA memory (device memory, or GPU-mapped host memory
//!   on Tegra) and the kernels compile: [`FramePrep::push`] only notes where the frame
//!   lies; [`FramePrep::finish`] queues on one stream the header check of every frame of
//!   the batch, their payload CRCs and their tensors (`gpu/`), one copy of the batch's
//!   header and CRC records to page-locked host memory, and the model, which ONNX
//!   Runtime's CUDA (or TensorRT) provider runs on the same stream reading the tensors
//!   where the kernels left them; the host waits once, then checks each header and CRC.
//!   No device-to-host copy per frame: the `d2h` stage is gone from the frame path. (For
//!   a model on the CPU provider the batch's tensors are copied to the host once: that
//!   copy is the `d2h` stage.)
//!   [`FramePrep::submit`] and [`FramePrep::collect`] split [`FramePrep::finish`] so that
//!   a caller can build and submit batch k+1 while batch k runs: its check and
//!   preprocessing then run on a second stream beside the model (`prep/ahead.rs`).
//! * Otherwise on the CPU: [`FramePrep::push`] checks and preprocesses the frame at once
//!   (reading host memory in place, or after copying the whole frame device-to-host: the
//!   `d2h` stage), so its ring entry can go back at once.
//!
//! Must not: touch the queue. Reads ring entries that the card writes: every `unsafe`
//! here passes on or relies on the caller's promise that no C2H into an entry runs while
//! this module may read it ([`Pushed`] says until when).

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{CudaStream, DevicePtr, PinnedHostSlice};
use fpgagdr::frame::{FrameHeader, HEADER_LEN};
use fpgagdr::{MemoryKind, PinnedBuffer};

mod ahead;
mod outcome;

use crate::gpu::RESULT_WORDS;
use crate::gpu::{EventTimer, GpuCrc32, GpuError, GpuPreprocessor, cuda};
use crate::model::{BatchCosts, Model, TOP_K, Top};
use crate::preprocess::{FrameView, Preprocessor};
use ahead::Ahead;
pub use outcome::{BatchTimes, FrameOutcome, PrepError};
use outcome::{empty_outcome, outcomes_from, us_to_ns};

/// What [`FramePrep::push`] did with a frame's ring entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// The frame was read and turned into a tensor: its entry may be released now.
    Read,
    /// The frame is read by [`FramePrep::finish`]: its entry must stay out of C2H until
    /// that returns.
    Pending,
}

/// Where preprocessing runs, with its buffers (allocated once).
#[derive(Debug)]
pub enum FramePrep {
    /// CPU preprocessing.
    Cpu(Box<CpuPrep>),
    /// CUDA kernels on the model's stream.
    Gpu(Box<GpuPrep>),
}

/// The CPU side of [`FramePrep`].
#[derive(Debug)]
pub struct CpuPrep {
    pre: Preprocessor,
    tensor: Vec<f32>,
    staging: Vec<u8>,
    max_batch: usize,
    n: usize,
    tops: Vec<Top>,
    outcomes: Vec<FrameOutcome>,
}

/// The GPU side of [`FramePrep`]: the kernels, their stream and timers, the frames of the
/// batch being built, and page-locked host memory for the batch's result records (and
/// its tensors, for a model on the CPU provider).
#[derive(Debug)]
pub struct GpuPrep {
    stream: Arc<CudaStream>,
    crc: GpuCrc32,
    pre: GpuPreprocessor,
    frames: Vec<(u64, u64)>,
    max_frame: usize,
    results: PinnedHostSlice<u32>,
    tensor: Option<PinnedHostSlice<f32>>,
    t_kernels: EventTimer,
    t_tensor: EventTimer,
    tops: Vec<Top>,
    outcomes: Vec<FrameOutcome>,
    /// Batches queued ahead ([`FramePrep::submit`]), made on first use.
    ahead: Option<Box<Ahead>>,
    /// Model input size (for the lanes of `ahead`).
    input: (usize, usize),
}

impl FramePrep {
    /// Preprocessing for `model`'s input and batch, for a ring of `kind` memory whose
    /// entries are `entry_len` bytes: on the GPU when the ring is CUDA memory and the
    /// kernels compile (on the model's stream when it takes device input, else on one of
    /// their own), on the CPU otherwise. The second value says which and why, for status.
    pub fn new(kind: MemoryKind, entry_len: usize, model: &Model) -> (FramePrep, String) {
        let (w, h) = model.input_size();
        let max_batch = model.max_batch();
        if matches!(kind, MemoryKind::CudaDevice | MemoryKind::CudaHost) {
            match GpuPrep::new(w, h, max_batch, entry_len, model) {
                Ok(g) => {
                    let tensor = if model.queues_ahead() {
                        "the tensors stay in GPU memory and the model reads them there, on the \
                         same stream, and ranks each frame's top-5 there (no device-to-host \
                         copy per frame)"
                    } else if model.takes_device_input() {
                        "the tensors stay in GPU memory and the model reads them there, on the \
                         same stream (no device-to-host copy per frame)"
                    } else {
                        "the batch's tensors are copied to the host once for ONNX Runtime's CPU \
                         provider (the d2h stage)"
                    };
                    return (
                        FramePrep::Gpu(Box::new(g)),
                        format!(
                            "GPU: CUDA kernels (NVRTC) check each frame's header and CRC and \
                             build its tensor in GPU memory, a batch at a time; {tensor}"
                        ),
                    );
                }
                Err(e) => {
                    tracing::warn!("GPU preprocessing unavailable, using the CPU: {e}");
                    return (
                        FramePrep::cpu(w, h, max_batch),
                        format!(
                            "CPU: each frame is copied device-to-host first (the d2h stage); \
                             GPU preprocessing unavailable: {e}"
                        ),
                    );
                }
            }
        }
        (
            FramePrep::cpu(w, h, max_batch),
            "CPU, reading the frame in place".into(),
        )
    }

    fn cpu(w: usize, h: usize, max_batch: usize) -> FramePrep {
        let pre = Preprocessor::new(w, h);
        FramePrep::Cpu(Box::new(CpuPrep {
            tensor: vec![0f32; max_batch * pre.output_len()],
            pre,
            staging: Vec::new(),
            max_batch,
            n: 0,
            tops: vec![[(0, 0.0); TOP_K]; max_batch],
            outcomes: (0..max_batch).map(|_| empty_outcome()).collect(),
        }))
    }

    /// Frames one batch holds.
    pub fn max_batch(&self) -> usize {
        match self {
            FramePrep::Cpu(c) => c.max_batch,
            FramePrep::Gpu(g) => g.pre.max_batch(),
        }
    }

    /// Frames in the batch being built.
    pub fn len(&self) -> usize {
        match self {
            FramePrep::Cpu(c) => c.n,
            FramePrep::Gpu(g) => g.frames.len(),
        }
    }

    /// True when the batch being built holds no frame.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds the frame of `len` bytes at the start of `buffer` to the batch (checking
    /// the payload CRC when `verify`).
    ///
    /// Errors: [`PrepError::Frame`] for a frame found bad now (the CPU path; the entry
    /// may be released); [`PrepError::Path`] for a CUDA failure or a full batch.
    ///
    /// # Safety
    /// No C2H into `buffer[..len]` may run until this returns, and, when it returns
    /// [`Pushed::Pending`], until [`Self::finish`] returns.
    #[allow(unsafe_code)]
    pub unsafe fn push(
        &mut self,
        buffer: &PinnedBuffer,
        len: usize,
        verify: bool,
    ) -> Result<Pushed, PrepError> {
        match self {
            // SAFETY: the caller's contract, passed on.
            FramePrep::Cpu(c) => unsafe { c.push(buffer, len, verify) },
            FramePrep::Gpu(g) => g.push(buffer, len),
        }
    }

    /// Runs the batch built by [`Self::push`]: (on the GPU) checks and preprocesses its
    /// frames, then runs `model` on it; returns one outcome per frame pushed (in push
    /// order, rejected ones included on the GPU path) and the batch's times. The batch
    /// is empty again afterwards.
    ///
    /// Errors: [`PrepError::Path`] (CUDA) and [`PrepError::Model`] stop the pipeline.
    pub fn finish(
        &mut self,
        model: &mut Model,
        verify: bool,
    ) -> Result<(&[FrameOutcome], BatchTimes), PrepError> {
        match self {
            FramePrep::Cpu(c) => c.finish(model),
            FramePrep::Gpu(g) => g.finish(model, verify),
        }
    }

    /// True when batches can be queued ahead with [`Self::submit`] and [`Self::collect`]:
    /// GPU preprocessing, and a model that takes device input and ranks its results on
    /// the GPU ([`Model::queues_ahead`]). Otherwise use [`Self::finish`].
    pub fn queues_ahead(&self, model: &Model) -> bool {
        matches!(self, FramePrep::Gpu(_)) && model.queues_ahead()
    }

    /// Batches submitted and not yet collected (0 to 2).
    pub fn in_flight(&self) -> usize {
        match self {
            FramePrep::Gpu(g) => g.ahead.as_ref().map_or(0, |a| a.in_flight()),
            FramePrep::Cpu(_) => 0,
        }
    }

    /// Makes the second stream and the two lanes of buffers [`Self::submit`] uses (two
    /// more batches of input tensors in GPU memory); done by the first submit otherwise.
    ///
    /// Errors: [`PrepError::Path`] when batches cannot be queued ahead
    /// ([`Self::queues_ahead`]) or for a CUDA failure.
    pub fn prepare_ahead(&mut self, model: &Model) -> Result<(), PrepError> {
        if !self.queues_ahead(model) {
            return Err(PrepError::Path(
                "batches are queued ahead only with GPU preprocessing and a model that reads \
                 and ranks in GPU memory"
                    .into(),
            ));
        }
        let FramePrep::Gpu(g) = self else {
            unreachable!("queues_ahead is true only for the GPU path")
        };
        if g.ahead.is_none() {
            let (w, h) = g.input;
            g.ahead = Some(Box::new(Ahead::new(
                &g.stream,
                w,
                h,
                g.pre.max_batch(),
                g.max_frame,
            )?));
        }
        Ok(())
    }

    /// Starts the batch built by [`Self::push`] and returns at once: its check and
    /// preprocessing are queued on a second stream, the model on its own after them
    /// (module documentation). The batch's entries stay [`Pushed::Pending`] until
    /// [`Self::collect`] has returned its outcomes. At most two batches are in flight; a
    /// new batch can be pushed meanwhile. An empty batch is not submitted.
    ///
    /// Errors: [`PrepError::Path`] when batches cannot be queued ahead, with two in
    /// flight, or for a CUDA failure; [`PrepError::Model`].
    pub fn submit(&mut self, model: &mut Model, verify: bool) -> Result<(), PrepError> {
        self.prepare_ahead(model)?;
        let FramePrep::Gpu(g) = self else {
            unreachable!("prepare_ahead succeeds only for the GPU path")
        };
        if g.frames.is_empty() {
            return Ok(());
        }
        let ahead = g.ahead.as_mut().expect("made by prepare_ahead");
        #[allow(unsafe_code)]
        // SAFETY: `push` clipped each frame to its pinned ring entry, which the caller
        // keeps out of C2H until `collect` returns this batch (the promise `push` asked
        // for with `Pushed::Pending`).
        let submitted = unsafe { ahead.submit(&mut g.frames, &mut g.pre, model, verify) };
        // A failed submit loses the batch: its entries go back with the caller's error
        // handling, as after a failed `finish`, once nothing queued reads them.
        g.frames.clear();
        if submitted.is_err() {
            ahead.settle();
            let _ = g.stream.synchronize();
        }
        submitted
    }

    /// Waits for the oldest batch submitted and returns its outcomes (in push order,
    /// rejected frames included) and times; its entries may be released after. `None`
    /// when no batch is in flight.
    ///
    /// Errors: [`PrepError::Path`] (CUDA) and [`PrepError::Model`] stop the pipeline.
    pub fn collect(
        &mut self,
        model: &mut Model,
    ) -> Option<Result<(&[FrameOutcome], BatchTimes), PrepError>> {
        match self {
            FramePrep::Gpu(g) => g.ahead.as_mut()?.collect(model),
            FramePrep::Cpu(_) => None,
        }
    }

    /// Runs the model on every batch size it will use, on the batch tensor buffer, so
    /// that convolution algorithms are chosen and CUDA graphs captured before frames flow
    /// (and while no other thread of the process uses the GPU), makes the buffers of
    /// batches queued ahead where they will be used ([`Self::prepare_ahead`]), and
    /// returns the model's time per batch size ([`BatchCosts`]: on the GPU the median of
    /// the timed rounds after the warm-up, [`Model::warm_up_device`];
    /// [`Model::measure_host`] for a model on host tensors).
    ///
    /// Errors: [`PrepError::Model`], and [`PrepError::Path`] for a CUDA failure.
    pub fn warm_up(&mut self, model: &mut Model) -> Result<BatchCosts, PrepError> {
        if self.queues_ahead(model) {
            self.prepare_ahead(model)?;
        }
        if let FramePrep::Gpu(g) = self
            && model.takes_device_input()
        {
            let addr = g.tensor_addr();
            #[allow(unsafe_code)]
            // SAFETY: `addr` is this preprocessor's batch tensor buffer (max_batch
            // tensors, device memory allocated once, written only by kernels on the
            // model's stream), which lives as long as `self`; the model keeps bindings to
            // it, and is used with no other buffer (`finish` passes the same one).
            if let Some(costs) = unsafe { model.warm_up_device(addr) }? {
                return Ok(costs);
            }
        }
        Ok(model.measure_host()?)
    }

    /// Waits until no kernel of this preprocessing reads a ring entry any more (both of
    /// its streams idle): what a caller does before it lets entries go after an error.
    /// Nothing on the CPU path.
    pub fn settle(&self) {
        if let FramePrep::Gpu(g) = self {
            let _ = g.stream.synchronize();
            if let Some(a) = &g.ahead {
                a.settle();
            }
        }
    }
}

impl CpuPrep {
    /// # Safety
    /// As [`FramePrep::push`].
    #[allow(unsafe_code)]
    unsafe fn push(
        &mut self,
        buffer: &PinnedBuffer,
        len: usize,
        verify: bool,
    ) -> Result<Pushed, PrepError> {
        let slot = self.n;
        if slot >= self.max_batch {
            return Err(PrepError::Path(format!(
                "a batch holds {} frames; a frame was pushed into a full one",
                self.max_batch
            )));
        }
        let t0 = Instant::now();
        // SAFETY: the caller's contract: no C2H writes these bytes while we read them.
        let bytes: &[u8] = match unsafe { buffer.host_bytes() } {
            Some(s) => &s[..len],
            None => {
                self.staging.resize(len, 0);
                // SAFETY: as above.
                unsafe { buffer.copy_to_host(0, &mut self.staging) }
                    .map_err(|e| PrepError::Path(format!("device-to-host copy of a frame: {e}")))?;
                &self.staging
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
        let chw = self.pre.output_len();
        self.pre
            .run(&view, &mut self.tensor[slot * chw..(slot + 1) * chw]);
        self.outcomes[slot] = FrameOutcome {
            header: Ok(header),
            top: [(0, 0.0); TOP_K],
            d2h_ns: (!buffer.kind().host_accessible()).then_some(ns(t1 - t0)),
            preprocess_ns: ns(t1.elapsed()),
        };
        self.n += 1;
        Ok(Pushed::Read)
    }

    fn finish(&mut self, model: &mut Model) -> Result<(&[FrameOutcome], BatchTimes), PrepError> {
        let n = std::mem::take(&mut self.n);
        if n == 0 {
            return Ok((&[], BatchTimes::default()));
        }
        let t0 = Instant::now();
        model.classify_batch(&self.tensor, n, &mut self.tops[..n])?;
        let times = BatchTimes {
            inference_ns: ns(t0.elapsed()),
        };
        for (o, t) in self.outcomes.iter_mut().zip(&self.tops[..n]) {
            o.top = *t;
        }
        Ok((&self.outcomes[..n], times))
    }
}

impl GpuPrep {
    #[allow(unsafe_code)]
    fn new(
        w: usize,
        h: usize,
        max_batch: usize,
        entry_len: usize,
        model: &Model,
    ) -> Result<GpuPrep, GpuError> {
        let (pre, stream) = match model.stream() {
            Some(s) => (
                GpuPreprocessor::on_stream(s, w, h, max_batch, entry_len)?,
                s.clone(),
            ),
            None => {
                let ctx = fpgagdr::cuda_context()
                    .ok_or_else(|| GpuError::Unavailable("no CUDA context".into()))?;
                let s = ctx.new_stream().map_err(cuda)?;
                (
                    GpuPreprocessor::on_stream(&s, w, h, max_batch, entry_len)?,
                    s,
                )
            }
        };
        let crc = GpuCrc32::on_stream(&stream)?;
        let kernels = pre.kernels();
        let ctx = stream.context();
        // SAFETY: plain page-locked host memory, written only by copies on `stream` and
        // read after the stream is synchronised.
        let results = unsafe { ctx.alloc_pinned::<u32>(max_batch * RESULT_WORDS) }.map_err(cuda)?;
        let tensor = if model.takes_device_input() {
            None
        } else {
            // SAFETY: as above (flags 0, not write-combined: the CPU reads the tensors).
            Some(
                unsafe { ctx.alloc_pinned_with_flags::<f32>(max_batch * pre.output_len(), 0) }
                    .map_err(cuda)?,
            )
        };
        Ok(GpuPrep {
            t_kernels: EventTimer::new(kernels)?,
            t_tensor: EventTimer::new(kernels)?,
            frames: Vec::with_capacity(max_batch),
            tops: vec![[(0, 0.0); TOP_K]; max_batch],
            outcomes: (0..max_batch).map(|_| empty_outcome()).collect(),
            max_frame: entry_len,
            stream,
            crc,
            pre,
            results,
            tensor,
            ahead: None,
            input: (w, h),
        })
    }

    fn tensor_addr(&self) -> u64 {
        let (ptr, _sync) = self.pre.tensor().device_ptr(&self.stream);
        ptr
    }

    fn push(&mut self, buffer: &PinnedBuffer, len: usize) -> Result<Pushed, PrepError> {
        if self.frames.len() >= self.pre.max_batch() {
            return Err(PrepError::Path(format!(
                "a batch holds {} frames; a frame was pushed into a full one",
                self.pre.max_batch()
            )));
        }
        let base = buffer.device_addr().ok_or_else(|| {
            PrepError::Path("GPU preprocessing of a ring entry the GPU cannot address".into())
        })?;
        // The header kernel reads at most `len` bytes, which must lie in the entry.
        let len = len.min(buffer.len()) as u64;
        self.frames.push((base, len));
        Ok(Pushed::Pending)
    }

    fn finish(
        &mut self,
        model: &mut Model,
        verify: bool,
    ) -> Result<(&[FrameOutcome], BatchTimes), PrepError> {
        let n = self.frames.len();
        if n == 0 {
            return Ok((&[], BatchTimes::default()));
        }
        // The batch is over whatever happens: the caller releases its entries.
        let done = self.run_batch(model, verify, n);
        self.frames.clear();
        Ok((&self.outcomes[..n], done?))
    }

    /// Queues the kernels and the model for the `n` frames pushed, waits, and writes the
    /// outcomes.
    #[allow(unsafe_code)]
    fn run_batch(
        &mut self,
        model: &mut Model,
        verify: bool,
        n: usize,
    ) -> Result<BatchTimes, PrepError> {
        let stream = self.stream.clone();
        self.t_kernels.start(&stream)?;
        // SAFETY: each (address, length) lies in a pinned ring entry (`push` clipped the
        // length to the entry) that the caller keeps out of C2H until we return; the
        // stream is synchronised before this returns.
        unsafe { self.pre.launch_headers(&self.frames) }?;
        if verify {
            let max_payload = self.max_frame.saturating_sub(HEADER_LEN).max(1);
            // SAFETY: received lengths were clipped to the entry (`push`): payload ≤
            // entry − 64 = max_payload, inside the entries the caller vouches for.
            unsafe { self.pre.launch_crcs(&mut self.crc, n, max_payload) }?;
        }
        // SAFETY: as above; the resample kernel reads only inside what a valid geometry
        // record describes.
        unsafe { self.pre.launch_resample(n) }?;
        self.t_kernels.stop(&stream)?;
        stream
            .memcpy_dtoh(
                &self.pre.results().slice(..n * RESULT_WORDS),
                &mut self.results,
            )
            .map_err(cuda)?;
        let chw = self.pre.output_len();
        let tops = &mut self.tops[..n];
        let t0 = Instant::now();
        let mut d2h_ns = None;
        if model.takes_device_input() {
            let (addr, _sync) = self.pre.tensor().device_ptr(&stream);
            // SAFETY: `addr` is this preprocessor's batch tensor buffer, written by the
            // kernels just queued on the model's stream, allocated once for the life of
            // `self` (the model keeps bindings to it), and not written again until the
            // model returns (nothing else is queued meanwhile).
            unsafe { model.classify_batch_device(addr, n, tops) }?;
        } else {
            let host = self.tensor.as_mut().expect("allocated for a host model");
            self.t_tensor.start(&stream)?;
            stream
                .memcpy_dtoh(&self.pre.tensor().slice(..n * chw), host)
                .map_err(cuda)?;
            self.t_tensor.stop(&stream)?;
            stream.synchronize().map_err(cuda)?;
            d2h_ns = Some(us_to_ns(self.t_tensor.elapsed_us()?));
            let input = host.as_slice().map_err(cuda)?;
            model.classify_batch(&input[..n * chw], n, tops)?;
        }
        stream.synchronize().map_err(cuda)?;
        let times = BatchTimes {
            inference_ns: ns(t0.elapsed()),
        };
        let preprocess_ns = us_to_ns(self.t_kernels.elapsed_us()?);
        let records = self.results.as_slice().map_err(cuda)?;
        outcomes_from(
            records,
            &self.frames,
            &self.tops,
            verify,
            preprocess_ns,
            d2h_ns,
            &mut self.outcomes,
        );
        Ok(times)
    }
}

/// Whole nanoseconds of `d` (stage times are u64 ns, as the pipeline records them).
fn ns(d: Duration) -> u64 {
    d.as_nanos() as u64
}
