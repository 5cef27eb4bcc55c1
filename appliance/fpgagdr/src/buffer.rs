//! A buffer pinned once for DMA.
//!
//! Owns: [`PinnedBuffer`], which holds the memory and its pin handle and unpins before
//! the memory is freed. Must not: validate transfers (`card.rs`).

use std::sync::Arc;

use crate::backend::{Backend, PinnedRegion};
use crate::dma::Handle;
use crate::error::Result;
use crate::memory::{DmaMemory, DmaRegion, MemoryKind};

/// Memory pinned for DMA by one card. Pin once at start, reuse for every transfer;
/// dropping it unpins (errors on drop are logged; call [`PinnedBuffer::unpin`] to see
/// them).
///
/// While pinned, the card writes the bytes behind Rust's back (a C2H DMA), so reading
/// them is `unsafe` ([`PinnedBuffer::host_bytes`], [`PinnedBuffer::copy_to_host`]): the
/// caller promises that no C2H into the buffer runs meanwhile, which is what a frame
/// ring's entry states are for. [`PinnedBuffer::unpin`] gives the memory back for safe
/// use.
#[derive(Debug)]
pub struct PinnedBuffer {
    backend: Arc<dyn Backend>,
    handle: Handle,
    /// The back-end's view of the memory, released after unpin, before the memory goes.
    pinned: Arc<PinnedRegion>,
    // `Option` only so that `unpin` can move the memory out; always `Some` otherwise.
    memory: Option<DmaMemory>,
}

impl PinnedBuffer {
    pub(crate) fn new(
        backend: Arc<dyn Backend>,
        handle: Handle,
        memory: DmaMemory,
        pinned: Arc<PinnedRegion>,
    ) -> Self {
        PinnedBuffer {
            backend,
            handle,
            pinned,
            memory: Some(memory),
        }
    }

    /// Whether `backend` pinned this buffer: its handle means nothing to another card.
    pub(crate) fn pinned_by(&self, backend: &Arc<dyn Backend>) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.backend), Arc::as_ptr(backend))
    }

    /// The pin handle (for the raw-handle API and the C API).
    pub fn handle(&self) -> Handle {
        self.handle
    }

    /// The address a CUDA kernel reads the buffer at (see [`DmaMemory::device_addr`]);
    /// `None` for plain host memory.
    pub fn device_addr(&self) -> Option<u64> {
        self.memory().device_addr()
    }

    /// Start address of the pinned memory (host VA or CUDA device pointer).
    pub fn addr(&self) -> u64 {
        self.memory().addr()
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.memory().len()
    }

    /// Always false: pinned buffers are never empty.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Where the bytes live.
    pub fn kind(&self) -> MemoryKind {
        self.memory().kind()
    }

    /// The pinned memory's description (address, length, kind).
    pub fn region(&self) -> DmaRegion {
        self.memory().region()
    }

    /// The bytes, in place, when the CPU can address them (host memory; `None` for CUDA
    /// device memory).
    ///
    /// # Safety
    /// No C2H transfer into this buffer may run while the returned slice lives (the card
    /// would write bytes that Rust assumes unchanging).
    #[allow(unsafe_code)]
    pub unsafe fn host_bytes(&self) -> Option<&[u8]> {
        self.memory().as_slice()
    }

    /// Copies `dst.len()` bytes from `offset` into host memory (a device-to-host copy
    /// for CUDA device memory). Errors: [`crate::Error::BufferBounds`],
    /// [`crate::Error::Cuda`].
    ///
    /// # Safety
    /// No C2H transfer into this buffer may run during the copy.
    #[allow(unsafe_code)]
    pub unsafe fn copy_to_host(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        self.memory().copy_to_host(offset, dst)
    }

    pub(crate) fn memory(&self) -> &DmaMemory {
        self.memory.as_ref().expect("memory is present until unpin")
    }

    /// Unpins and returns the memory; reports the back-end's error, if any.
    pub fn unpin(mut self) -> Result<DmaMemory> {
        let memory = self.memory.take().expect("memory is present until unpin");
        let unpinned = self.backend.unpin(self.handle);
        self.pinned.release();
        unpinned?;
        Ok(memory)
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        if self.memory.is_some() {
            if let Err(e) = self.backend.unpin(self.handle) {
                tracing::warn!("unpin of handle {} on drop: {e}", self.handle);
            }
            // Before `memory` (a field) is freed, after this function.
            self.pinned.release();
        }
    }
}
