//! A buffer pinned once for DMA.
//!
//! Owns: [`PinnedBuffer`], which holds the memory and its pin handle and unpins before
//! the memory is freed. Must not: validate transfers (`card.rs`).

use std::sync::Arc;

use crate::backend::{Backend, PinnedRegion};
use crate::dma::Handle;
use crate::error::Result;
use crate::memory::{DmaMemory, DmaRegion, MemoryKind};
use crate::pinmethod::PinMethod;

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

    /// How the memory is pinned ([`DmaMemory::pin_method`]): host pages, `nvidia_p2p`,
    /// or the dma-buf CUDA exported for it.
    pub fn pin_method(&self) -> PinMethod {
        self.memory().pin_method()
    }

    /// Why it is pinned that way, in words for status ([`DmaMemory::pin_reason`]).
    pub fn pin_reason(&self) -> String {
        self.memory().pin_reason()
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

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;
    use std::time::Duration;

    use super::*;
    use crate::dma::{Transfer, TransferRequest};
    use crate::status::{Capabilities, CardStatus, Platform};
    use crate::{Card, Error};

    /// A back-end that records what each pin handed it: the method and where the
    /// dma-buf descriptor points. No hardware is stood in for: the point is what the
    /// library hands a back-end and when it closes the descriptor.
    #[derive(Debug, Default)]
    struct RecordsPins {
        seen: Mutex<Vec<(PinMethod, Option<PathBuf>)>>,
    }

    impl Backend for RecordsPins {
        fn status(&self) -> CardStatus {
            CardStatus {
                name: "pin-recording test back-end".into(),
                platform: Platform::Desktop,
                simulated: true,
                gpu_page_size: 65536,
                alignment: 65536,
                c2h_channels: 1,
                h2c_channels: 1,
                card_memory_bytes: 1 << 20,
                capabilities: Capabilities {
                    gpu_direct: true,
                    host_dma: false,
                    interrupts: false,
                },
            }
        }
        fn pin(&self, region: Arc<PinnedRegion>) -> Result<Handle> {
            let target = region
                .dmabuf_fd()
                .map(|fd| link(&format!("/proc/self/fd/{}", fd.as_raw_fd())));
            let mut seen = self.seen.lock().unwrap();
            seen.push((region.method(), target));
            Ok(Handle(seen.len() as u64))
        }
        fn unpin(&self, _handle: Handle) -> Result<()> {
            Ok(())
        }
        fn transfer(&self, _req: &TransferRequest) -> Result<Transfer> {
            unreachable!("no transfers in these tests")
        }
        fn host_read(&self, _: u32, _: u64, _: &mut [u8], _: Duration) -> Result<Transfer> {
            Err(Error::ZeroTimeout)
        }
        fn host_write(&self, _: u32, _: u64, _: &[u8], _: Duration) -> Result<Transfer> {
            Err(Error::ZeroTimeout)
        }
    }

    fn link(p: &str) -> PathBuf {
        std::fs::read_link(p).unwrap_or_default()
    }

    /// How many of this process's descriptors (`/proc/self/fd`) are open on `path`.
    fn open_on(path: &Path) -> usize {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|t| t == path)
            .count()
    }

    /// A file standing in for the dma-buf a GPU exports (no GPU here): what matters is
    /// that the library owns the descriptor, hands it to the back-end at pin, and closes
    /// it when the buffer goes.
    fn gpu_dmabuf_double() -> (OwnedFd, tempfile::TempPath) {
        let path = tempfile::Builder::new()
            .prefix("gpu-dmabuf-double-")
            .tempfile()
            .unwrap()
            .into_temp_path();
        let fd = OwnedFd::from(File::open(&path).unwrap());
        (fd, path)
    }

    #[test]
    fn the_dmabuf_goes_to_the_back_end_at_pin_and_is_closed_when_the_buffer_goes() {
        let backend = Arc::new(RecordsPins::default());
        let card = Card::from_backend(backend.clone());
        let (fd, path) = gpu_dmabuf_double();
        let path = path.canonicalize().unwrap();
        let mem = DmaMemory::host(1 << 16, 1 << 16)
            .unwrap()
            .with_dmabuf_double(fd, 1 << 16);
        assert_eq!(open_on(&path), 1);
        let buf = card.pin(mem).unwrap();
        assert_eq!(buf.pin_method(), PinMethod::DmaBuf);
        assert!(buf.pin_reason().contains("dma_buf"), "{}", buf.pin_reason());
        drop(buf);
        assert_eq!(open_on(&path), 0, "the dma-buf outlived its pinned buffer");

        // Unpinning hands the memory back with its export; dropping it closes the fd.
        let (fd, path2) = gpu_dmabuf_double();
        let path2 = path2.canonicalize().unwrap();
        let mem = DmaMemory::host(1 << 16, 1 << 16)
            .unwrap()
            .with_dmabuf_double(fd, 1 << 16);
        let mem = card.pin(mem).unwrap().unpin().unwrap();
        assert_eq!(mem.dmabuf_size(), Some(1 << 16));
        assert_eq!(open_on(&path2), 1);
        drop(mem);
        assert_eq!(open_on(&path2), 0);

        // Memory without an export hands the back-end no descriptor.
        let plain = card
            .pin(DmaMemory::host(1 << 16, 1 << 16).unwrap())
            .unwrap();
        assert_eq!(plain.pin_method(), PinMethod::Host);
        assert_eq!(plain.pin_reason(), "host memory: host");
        drop(plain);
        let seen = backend.seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 3);
        assert_eq!(seen[0], (PinMethod::DmaBuf, Some(path)));
        assert_eq!(seen[1], (PinMethod::DmaBuf, Some(path2)));
        assert_eq!(seen[2], (PinMethod::Host, None));
    }
}
