//! The model's input bound where preprocessing left it in GPU memory, on the
//! preprocessing stream, with one CUDA graph per batch size in use.
//!
//! Owns: [`DeviceRunner`]: per run size an ONNX Runtime I/O binding (input: a view of the
//! caller's tensor buffer; output: a device tensor of its own), the run options that
//! name its graph (`gpu_graph_id`) and skip ONNX Runtime's own device synchronisation,
//! and the softmax top-5 of each frame computed where the logits lie
//! ([`crate::gpu::GpuTopK`], on the same stream), so only 5 classes a frame come back to
//! the host; where its kernel cannot be compiled, the whole logits come back to a
//! page-locked host buffer and the host ranks them. Must not: choose providers
//! (`providers.rs`) or read labels (`mod.rs`).
//!
//! A captured graph replays fixed addresses, so each run size keeps its binding for the
//! life of the runner. With graphs, a batch of n frames runs as the next size of the
//! graph ladder 1, 2, 3, 4, 6, 8, 12, 16, 24, … (the powers of two and 1.5 times them,
//! [`graph_ladder`]) or as the largest batch, so at most 2 log2(max batch) + 1 graphs
//! are captured (12 up to 64) and less than a third of a run is padding; the padding
//! slots hold stale tensors whose results are not read. Without graphs a batch runs at
//! its own size.

use std::ffi::CString;
use std::sync::Arc;

use cudarc::driver::{CudaStream, PinnedHostSlice};

use crate::gpu::GpuTopK;

use super::rank::{Top, top_k_rows};
use ort::AsPointer;
use ort::memory::{AllocationDevice, Allocator, AllocatorType, MemoryInfo, MemoryType};
use ort::session::{IoBinding, RunOptions, Session};
use ort::value::{Shape, Tensor, TensorRefMut};

/// One run size's binding.
struct Bucket {
    binding: IoBinding,
    /// The ONNX Runtime value over the caller's tensor buffer, bound as the input; kept
    /// alive while bound.
    _input: TensorRefMut<'static, f32>,
    /// Device address of the bound output tensor (the binding holds the tensor).
    output: u64,
    options: RunOptions,
}

/// A model run that takes longer than this to queue is logged (see [`DeviceRunner::run`]).
const SLOW_RUN: std::time::Duration = std::time::Duration::from_millis(50);

/// See the module documentation.
pub(crate) struct DeviceRunner {
    stream: Arc<CudaStream>,
    info: MemoryInfo<'static>,
    allocator: Allocator,
    graphs: bool,
    /// Every batch runs as the largest (one graph): see [`DeviceRunner::new`].
    max_only: bool,
    classes: usize,
    buckets: Vec<Option<Bucket>>,
    input_addr: u64,
    /// The graph id the next binding gets: ONNX Runtime keeps a captured graph per id
    /// for the session's life, so a binding to another address must not reuse one.
    next_graph: u64,
    logits: PinnedHostSlice<f32>,
    /// The top-5 on the GPU, one per result slot (two batches can be in flight:
    /// [`Self::queue_ranked`]), or `None` (NVRTC missing): the host ranks the logits.
    topk: Option<[GpuTopK; 2]>,
}

impl DeviceRunner {
    /// A runner for `session` (on a GPU provider running on `stream`), `classes` outputs
    /// per frame, batches of up to `max_batch`. With `max_only` (and graphs), every batch
    /// runs padded to `max_batch`, so one graph is captured: with the fp16 model, ONNX
    /// Runtime 1.31.1's CUDA provider hit an illegal address on the H200 when graphs of
    /// several batch sizes were captured one after another (fp32 ran them all).
    pub(crate) fn new(
        session: &Session,
        stream: Arc<CudaStream>,
        graphs: bool,
        max_only: bool,
        classes: usize,
        max_batch: usize,
    ) -> Result<Self, String> {
        let info = MemoryInfo::new(
            AllocationDevice::CUDA,
            0,
            AllocatorType::Device,
            MemoryType::Default,
        )
        .map_err(|e| e.to_string())?;
        let allocator = Allocator::new(session, info.clone()).map_err(|e| e.to_string())?;
        #[allow(unsafe_code)]
        // SAFETY: page-locked host memory, written only by copies on `stream` that `run`
        // waits for before it reads.
        let logits = unsafe { stream.context().alloc_pinned::<f32>(max_batch * classes) }
            .map_err(|e| e.to_string())?;
        let topk = match GpuTopK::on_stream(&stream, max_batch).and_then(|a| Ok([a.sibling()?, a]))
        {
            Ok(t) => Some(t),
            Err(e) => {
                tracing::warn!("the top-5 runs on the host: its GPU kernel is not available: {e}");
                None
            }
        };
        Ok(DeviceRunner {
            stream,
            info,
            allocator,
            graphs,
            max_only,
            classes,
            buckets: (0..=max_batch).map(|_| None).collect(),
            input_addr: 0,
            next_graph: 1,
            logits,
            topk,
        })
    }

    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The size a batch of `n` runs as.
    fn run_size(&self, n: usize) -> usize {
        let max = self.buckets.len() - 1;
        if self.graphs && self.max_only {
            max
        } else if self.graphs {
            graph_size(max, n)
        } else {
            n
        }
    }

    /// True when a batch runs padded to one of [`Self::run_sizes`] (CUDA graphs).
    pub(crate) fn pads_batches(&self) -> bool {
        self.graphs
    }

    /// Every size [`Self::run`] can use up to `max_batch`, smallest first (all of them
    /// with graphs; without, the two ends, for warming up).
    pub(crate) fn run_sizes(&self, max_batch: usize) -> Vec<usize> {
        let mut sizes: Vec<usize> = if self.graphs && self.max_only {
            Vec::new()
        } else if self.graphs {
            graph_ladder(max_batch).collect()
        } else {
            vec![1]
        };
        sizes.push(max_batch);
        sizes.dedup();
        sizes
    }

    /// Runs `n` frames whose tensors start at `addr` and writes frame i's top-5 into
    /// `tops[i]`, after waiting for the stream.
    ///
    /// # Safety
    /// As `Model::classify_batch_device`: `addr` holds at least `run_size(n)` tensors
    /// of `chw` floats in device memory that stays allocated while bindings to it are
    /// kept (they are dropped when another address comes).
    #[allow(unsafe_code)]
    pub(crate) unsafe fn run(
        &mut self,
        session: &mut Session,
        input: &str,
        addr: u64,
        chw: usize,
        n: usize,
        tops: &mut [Top],
    ) -> Result<(), String> {
        if self.topk.is_some() {
            // SAFETY: the caller's contract, passed on.
            unsafe { self.queue_ranked(session, input, addr, chw, n, 0) }?;
            return self.ranked(0, n, tops);
        }
        // SAFETY: the caller's contract, passed on.
        let src = unsafe { self.queue(session, input, addr, chw, n) }?;
        let len = n * self.classes;
        let dst = &mut self.logits.as_mut_slice().map_err(|e| e.to_string())?[..len];
        // SAFETY: `src` is the bound output tensor (r ≥ n rows of `classes` floats) in
        // device memory ONNX Runtime wrote with work queued on this stream; `dst` is
        // page-locked host memory of `len` floats that nothing reads until the stream is
        // synchronised below.
        unsafe { cudarc::driver::result::memcpy_dtoh_async(dst, src, self.stream.cu_stream()) }
            .map_err(|e| e.to_string())?;
        self.stream.synchronize().map_err(|e| e.to_string())?;
        let logits = &self.logits.as_slice().map_err(|e| e.to_string())?[..len];
        top_k_rows(logits, n, tops)
    }

    /// True when the top-5 runs on the GPU, so batches can be queued ahead
    /// ([`Self::queue_ranked`]).
    pub(crate) fn ranks_on_gpu(&self) -> bool {
        self.topk.is_some()
    }

    /// Queues the run of `n` frames at `addr`, their top-5 on the GPU and its copy to
    /// result slot `slot` (0 or 1) of page-locked host memory, and returns at once; read
    /// it with [`Self::ranked`]. Two batches may be in flight, one per slot.
    ///
    /// # Safety
    /// As [`Self::run`]; and the tensors at `addr` are not written again before the run
    /// has read them (work queued on this stream after this call runs after it).
    #[allow(unsafe_code)]
    pub(crate) unsafe fn queue_ranked(
        &mut self,
        session: &mut Session,
        input: &str,
        addr: u64,
        chw: usize,
        n: usize,
        slot: usize,
    ) -> Result<(), String> {
        // SAFETY: the caller's contract, passed on.
        let src = unsafe { self.queue(session, input, addr, chw, n) }?;
        let classes = self.classes;
        let topk = self
            .topk
            .as_mut()
            .map(|t| &mut t[slot])
            .ok_or("the top-5 kernel is not available")?;
        // SAFETY: `src` is the bound output tensor (≥ n rows of `classes` floats) in
        // device memory the model writes with work queued on this stream; the next run
        // of this size, which rewrites it, is queued on the same stream after the
        // top-5 kernel.
        unsafe { topk.launch(src, n, classes) }.map_err(|e| e.to_string())
    }

    /// Waits for the batch queued into result slot `slot` and writes its frames' top-5
    /// into `tops[..n]`.
    pub(crate) fn ranked(&self, slot: usize, n: usize, tops: &mut [Top]) -> Result<(), String> {
        let topk = self
            .topk
            .as_ref()
            .map(|t| &t[slot])
            .ok_or("the top-5 kernel is not available")?;
        // `read` waits for the slot's copy to the host (its CUDA event).
        for (i, top) in tops[..n].iter_mut().enumerate() {
            *top = topk.read(i).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Queues the model alone on `n` frames whose tensors start at `addr`, reading no
    /// result; waits for the stream when `wait`. The model's own time (the `engine`
    /// benchmark of `fpgagdr-infer`).
    ///
    /// # Safety
    /// As [`Self::run`].
    #[allow(unsafe_code)]
    pub(crate) unsafe fn run_only(
        &mut self,
        session: &mut Session,
        input: &str,
        addr: u64,
        chw: usize,
        n: usize,
        wait: bool,
    ) -> Result<(), String> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.queue(session, input, addr, chw, n) }?;
        if wait {
            self.stream.synchronize().map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Queues the run of `n` frames at `addr` on the stream (binding it first if this
    /// run size has no binding yet); returns the device address of its output.
    ///
    /// # Safety
    /// As [`Self::run`].
    #[allow(unsafe_code)]
    unsafe fn queue(
        &mut self,
        session: &mut Session,
        input: &str,
        addr: u64,
        chw: usize,
        n: usize,
    ) -> Result<u64, String> {
        if addr != self.input_addr {
            // Bindings (and graphs) of the old address are of no use: forget them; new
            // bindings get new graph ids.
            self.buckets.iter_mut().for_each(|b| *b = None);
            self.input_addr = addr;
        }
        let r = self.run_size(n);
        if self.buckets[r].is_none() {
            // SAFETY: the caller's contract: `addr` holds r tensors for as long as the
            // binding is kept.
            self.buckets[r] = Some(unsafe { self.bind(session, input, addr, chw, r) }?);
        }
        let bucket = self.buckets[r].as_ref().expect("bound above");
        let t0 = std::time::Instant::now();
        drop(
            session
                .run_binding_with_options(&bucket.binding, &bucket.options)
                .map_err(|e| e.to_string())?,
        );
        let took = t0.elapsed();
        if took > SLOW_RUN {
            // Queuing a batch normally takes well under a millisecond (the work runs
            // on the stream); a long one is ONNX Runtime doing set-up work in the frame
            // path, which a user should see.
            let ms = took.as_secs_f64() * 1e3;
            tracing::warn!(
                frames = n,
                run_size = r,
                ms,
                "the model took {ms:.0} ms to queue a batch of {n} (run as {r})"
            );
        }
        Ok(bucket.output)
    }

    /// Waits for everything queued on the stream.
    pub(crate) fn synchronize(&self) -> Result<(), String> {
        self.stream.synchronize().map_err(|e| e.to_string())
    }

    /// A binding of `r` tensors at `addr` to the session's input, an output tensor of its
    /// own, and run options naming a graph id of its own.
    ///
    /// # Safety
    /// `addr` holds `r × chw` floats of device memory that outlive the binding.
    #[allow(unsafe_code)]
    unsafe fn bind(
        &mut self,
        session: &Session,
        input: &str,
        addr: u64,
        chw: usize,
        r: usize,
    ) -> Result<Bucket, String> {
        let err = |e: ort::Error| e.to_string();
        // The input's H and W come from the session; chw = 3 × H × W.
        let (h, w) = session_hw(session).unwrap_or((chw / 3, 1));
        let dims = [r as i64, 3, h as i64, w as i64];
        // SAFETY: `addr` holds r × chw floats of device memory described by `self.info`
        // (device 0), outliving the value (the caller's contract).
        let tensor = unsafe {
            TensorRefMut::<f32>::from_raw(
                self.info.clone(),
                addr as *mut std::ffi::c_void,
                Shape::new(dims),
            )
        }
        .map_err(err)?;
        let mut binding = session.create_binding().map_err(err)?;
        // `IoBinding::bind_input` copies a borrowed tensor first (to keep the data alive);
        // the whole point here is that ONNX Runtime reads the caller's buffer in place,
        // whose lifetime the caller guarantees, so bind through the C API.
        let name = CString::new(input).map_err(|e| e.to_string())?;
        // SAFETY: the binding and the value are live ONNX Runtime objects; the value stays
        // alive in the bucket as long as the binding does; the name is a C string.
        let status =
            unsafe { (ort::api().BindInput)(binding.ptr_mut(), name.as_ptr(), tensor.ptr()) };
        // SAFETY: a status returned by the C API, read and released once.
        unsafe { check(status) }?;
        let output = Tensor::<f32>::new(&self.allocator, [r, self.classes]).map_err(err)?;
        let out_addr = output.data_ptr() as u64;
        let out_name = session.outputs()[0].name().to_string();
        binding.bind_output(out_name, output).map_err(err)?;
        let mut options = RunOptions::new().map_err(err)?;
        let graph = if self.graphs {
            self.next_graph += 1;
            (self.next_graph - 1).to_string()
        } else {
            "-1".into()
        };
        options.set("gpu_graph_id", graph).map_err(err)?;
        // The caller waits for the stream once, after the logits are copied back.
        options.disable_device_sync().map_err(err)?;
        Ok(Bucket {
            binding,
            _input: tensor,
            output: out_addr,
            options,
        })
    }
}

/// The batch sizes below `max_batch` that get a CUDA graph of their own (`max_batch`
/// gets one too), smallest first: 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, … (each power
/// of two from 2, and 1.5 times it). With powers of two alone up to half of a run is
/// padding (9 frames run as 16); with this ladder less than a third (9 run as 12), for
/// 2 log2(max batch) + 1 graphs instead of log2(max batch) + 2. It matters because the batch
/// chooser aims at the smallest batch that keeps up within the latency target, and a
/// padded batch costs what its padded size costs (docs/decisions.md, "CUDA graphs, one
/// per batch size in use").
pub(crate) fn graph_ladder(max_batch: usize) -> impl Iterator<Item = usize> {
    std::iter::once(1)
        .chain((1..usize::BITS - 1).flat_map(|k| [1usize << k, 3usize << (k - 1)]))
        .take_while(move |&n| n < max_batch)
}

/// The size a batch of `n` frames runs as when each size of [`graph_ladder`] and
/// `max_batch` has a graph: the smallest of them that holds `n`.
fn graph_size(max_batch: usize, n: usize) -> usize {
    graph_ladder(max_batch)
        .find(|&r| r >= n)
        .unwrap_or(max_batch)
}

/// The session input's H and W.
fn session_hw(session: &Session) -> Option<(usize, usize)> {
    match session.inputs().first()?.dtype() {
        ort::value::ValueType::Tensor { shape, .. } if shape.len() == 4 => {
            Some((shape[2] as usize, shape[3] as usize))
        }
        _ => None,
    }
}

/// An ONNX Runtime status: `Ok` when null, else its message (the status is released).
///
/// # Safety
/// `status` is a status the C API just returned.
#[allow(unsafe_code)]
unsafe fn check(status: ort::sys::OrtStatusPtr) -> Result<(), String> {
    if status.0.is_null() {
        return Ok(());
    }
    // SAFETY: a non-null status from the C API: read its message, then release it once.
    let message = unsafe {
        let text = std::ffi::CStr::from_ptr((ort::api().GetErrorMessage)(status.0));
        let m = text.to_string_lossy().into_owned();
        (ort::api().ReleaseStatus)(status.0);
        m
    };
    Err(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn less_than_a_third_of_a_run_up_the_graph_ladder_is_padding() {
        let ladder: Vec<usize> = graph_ladder(64).collect();
        assert_eq!(ladder, [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48]);
        assert_eq!(
            graph_ladder(1).count(),
            0,
            "max batch 1: its own graph only"
        );
        assert_eq!(graph_ladder(5).collect::<Vec<_>>(), [1, 2, 3, 4]);
        for max in [1, 5, 16, 64, 100, 256] {
            for n in 1..=max {
                let r = graph_size(max, n);
                assert!(r >= n && r <= max, "{n} of {max} runs as {r}");
                assert!(3 * (r - n) < r, "{n} of {max} runs as {r}");
            }
        }
        assert_eq!(graph_size(64, 9), 12);
        assert_eq!(graph_size(64, 13), 16);
        assert_eq!(graph_size(64, 49), 64);
        assert_eq!(
            graph_size(100, 97),
            100,
            "past the ladder: the largest batch"
        );
    }
}
