//! Batches queued ahead on the GPU path: the check and preprocessing of batch k+1 run on
//! a second stream while the model runs batch k on its own, so the GPU does not wait for
//! the host between batches, nor the model for preprocessing.
//!
//! Owns: [`Ahead`]: the second (preprocessing) stream, two lanes of preprocessing buffers
//! (tensors, geometry and result records, page-locked records on the host, timers), a
//! CRC launcher on that stream, and which lanes are in flight. Must not: touch the ring
//! or the queue (the caller keeps each batch's entries taken until it is collected).
//!
//! One batch, on lane b: on the preprocessing stream, the header, CRC and resample
//! kernels into lane b's tensors, the records' copy to the host, an event; on the
//! model's stream, a wait for that event, a copy of lane b's tensors into the tensors
//! the model is bound to (so its bindings and CUDA graphs stay those of one address),
//! the model and its top-5 into result slot b. Lanes alternate; at most two batches are
//! in flight, and a lane is used again only after its batch was collected, so nothing
//! is overwritten before it was read. cudarc orders the cross-stream uses of each
//! buffer too (its events on every `CudaSlice`).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{CudaEvent, CudaStream, DevicePtr, PinnedHostSlice, sys};
use fpgagdr::frame::HEADER_LEN;

use super::outcome::{BatchTimes, FrameOutcome, PrepError, empty_outcome, outcomes_from, us_to_ns};
use crate::gpu::{EventTimer, GpuCrc32, GpuError, GpuPreprocessor, RESULT_WORDS, cuda};
use crate::model::{Model, TOP_K, Top};

/// One set of preprocessing buffers and what its batch in flight needs when collected.
#[derive(Debug)]
struct Lane {
    pre: GpuPreprocessor,
    records: PinnedHostSlice<u32>,
    t_kernels: EventTimer,
    ready: CudaEvent,
    frames: Vec<(u64, u64)>,
    tops: Vec<Top>,
    outcomes: Vec<FrameOutcome>,
    verify: bool,
    queued_at: Instant,
}

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct Ahead {
    stream: Arc<CudaStream>,
    crc: GpuCrc32,
    lanes: [Lane; 2],
    /// Lanes in flight, oldest first.
    queued: VecDeque<usize>,
    next: usize,
    max_frame: usize,
}

impl Ahead {
    /// Lanes for batches of up to `max_batch` frames of at most `max_frame` bytes into
    /// `w` × `h` tensors, on a new stream of `model_stream`'s context.
    pub(crate) fn new(
        model_stream: &Arc<CudaStream>,
        w: usize,
        h: usize,
        max_batch: usize,
        max_frame: usize,
    ) -> Result<Self, GpuError> {
        let ctx = model_stream.context();
        let stream = ctx.new_stream().map_err(cuda)?;
        let lane = || -> Result<Lane, GpuError> {
            let pre = GpuPreprocessor::on_stream(&stream, w, h, max_batch, max_frame)?;
            #[allow(unsafe_code)]
            // SAFETY: page-locked host memory written only by copies on `stream`, read
            // after their event (`PinnedHostSlice::as_slice` waits for it).
            let records =
                unsafe { ctx.alloc_pinned::<u32>(max_batch * RESULT_WORDS) }.map_err(cuda)?;
            Ok(Lane {
                t_kernels: EventTimer::new(pre.kernels())?,
                ready: ctx
                    .new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
                    .map_err(cuda)?,
                pre,
                records,
                frames: Vec::with_capacity(max_batch),
                tops: vec![[(0, 0.0); TOP_K]; max_batch],
                outcomes: (0..max_batch).map(|_| empty_outcome()).collect(),
                verify: false,
                queued_at: Instant::now(),
            })
        };
        Ok(Ahead {
            crc: GpuCrc32::on_stream(&stream)?,
            lanes: [lane()?, lane()?],
            stream,
            queued: VecDeque::with_capacity(2),
            next: 0,
            max_frame,
        })
    }

    /// Batches submitted and not yet collected (0 to 2).
    pub(crate) fn in_flight(&self) -> usize {
        self.queued.len()
    }

    /// Queues the batch `frames` (taken, the vector left empty) as described in the
    /// module documentation; `bound` is the preprocessor whose tensors the model is bound
    /// to (on the model's stream).
    ///
    /// Errors: [`PrepError::Path`] with two batches in flight or for a CUDA failure;
    /// [`PrepError::Model`].
    ///
    /// # Safety
    /// Every (address, length) of `frames` lies in a ring entry the GPU can address that
    /// the caller keeps out of C2H until this batch is collected.
    #[allow(unsafe_code)]
    pub(crate) unsafe fn submit(
        &mut self,
        frames: &mut Vec<(u64, u64)>,
        bound: &mut GpuPreprocessor,
        model: &mut Model,
        verify: bool,
    ) -> Result<(), PrepError> {
        let n = frames.len();
        if self.queued.len() >= 2 {
            return Err(PrepError::Path(
                "two batches are in flight: collect one before submitting another".into(),
            ));
        }
        let b = self.next;
        let stream = self.stream.clone();
        let lane = &mut self.lanes[b];
        std::mem::swap(&mut lane.frames, frames);
        frames.clear();
        lane.t_kernels.start(&stream)?;
        // SAFETY: the caller's contract: each frame lies in an entry kept out of C2H
        // until collected, which is after this stream has run these kernels.
        unsafe { lane.pre.launch_headers(&lane.frames) }?;
        if verify {
            let max_payload = self.max_frame.saturating_sub(HEADER_LEN).max(1);
            // SAFETY: as in `GpuPrep::run_batch`: lengths were clipped to the entry.
            unsafe { lane.pre.launch_crcs(&mut self.crc, n, max_payload) }?;
        }
        // SAFETY: as above.
        unsafe { lane.pre.launch_resample(n) }?;
        lane.t_kernels.stop(&stream)?;
        stream
            .memcpy_dtoh(
                &lane.pre.results().slice(..n * RESULT_WORDS),
                &mut lane.records,
            )
            .map_err(cuda)?;
        lane.ready.record(&stream).map_err(cuda)?;
        let model_stream = model
            .stream()
            .cloned()
            .ok_or_else(|| PrepError::Path("the model has no stream".into()))?;
        model_stream.wait(&lane.ready).map_err(cuda)?;
        let chw = lane.pre.output_len();
        model_stream
            .memcpy_dtod(
                &lane.pre.tensor().slice(..n * chw),
                &mut bound.tensor_mut().slice_mut(..n * chw),
            )
            .map_err(cuda)?;
        let (addr, _sync) = bound.tensor().device_ptr(&model_stream);
        // SAFETY: `addr` is the bound preprocessor's tensor buffer (max_batch tensors of
        // device memory allocated once, living as long as the caller's `GpuPrep`), just
        // written by the copy queued on the model's stream; the next copy into it is
        // queued on the same stream, after this run.
        unsafe { model.queue_batch_device(addr, n, b) }?;
        lane.verify = verify;
        lane.queued_at = Instant::now();
        self.queued.push_back(b);
        self.next ^= 1;
        Ok(())
    }

    /// Waits for the oldest batch in flight and returns its outcomes (in push order) and
    /// times; `None` when none is in flight.
    ///
    /// Errors: [`PrepError::Path`] for a CUDA failure; [`PrepError::Model`].
    pub(crate) fn collect(
        &mut self,
        model: &mut Model,
    ) -> Option<Result<(&[FrameOutcome], BatchTimes), PrepError>> {
        let b = self.queued.pop_front()?;
        let lane = &mut self.lanes[b];
        let n = lane.frames.len();
        let done = (|| {
            model.batch_results(b, n, &mut lane.tops[..n])?;
            let times = BatchTimes {
                inference_ns: lane.queued_at.elapsed().as_nanos() as u64,
            };
            let preprocess_ns = us_to_ns(lane.t_kernels.elapsed_us()?);
            let records = lane.records.as_slice().map_err(cuda)?;
            outcomes_from(
                records,
                &lane.frames,
                &lane.tops,
                lane.verify,
                preprocess_ns,
                None,
                &mut lane.outcomes,
            );
            Ok(times)
        })();
        lane.frames.clear();
        Some(done.map(|times| (&lane.outcomes[..n], times)))
    }
}
