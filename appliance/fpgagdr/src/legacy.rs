//! The state of the legacy-compatible path: the mode switch and the buffers registered
//! for address lookup.
//!
//! Owns: [`TransferMode`] and `Legacy` (one per [`crate::Card`]). Must not: move bytes or
//! check transfer rules; `transfer.rs` routes a legacy call through the registry here
//! to `Card`'s checked paths.

use std::sync::RwLock;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::buffer::PinnedBuffer;
use crate::error::{Error, Result};

/// How the legacy `mm_*` calls route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TransferMode {
    /// DMA into the caller's host memory (path A), as `read`/`write` on a channel node.
    #[default]
    Cpu,
    /// DMA into the registered pinned buffer that contains the caller's address (path C).
    GpuPinned,
}

/// Per-card state of the legacy path: the mode and the registered buffers, sorted by
/// address.
#[derive(Debug, Default)]
pub(crate) struct Legacy {
    mode: AtomicU8,
    buffers: RwLock<Vec<PinnedBuffer>>,
}

impl Legacy {
    /// Switches how the legacy calls route.
    pub(crate) fn set_mode(&self, mode: TransferMode) {
        self.mode.store(mode as u8, Ordering::Release);
    }

    /// The current route.
    pub(crate) fn mode(&self) -> TransferMode {
        match self.mode.load(Ordering::Acquire) {
            0 => TransferMode::Cpu,
            _ => TransferMode::GpuPinned,
        }
    }

    /// Registers `buf` for address lookup; returns its start address.
    /// Errors: [`Error::Overlap`] (the buffer is then dropped, and so unpinned).
    pub(crate) fn register(&self, buf: PinnedBuffer) -> Result<u64> {
        let region = buf.region();
        let mut list = self.buffers.write().expect("legacy registry poisoned");
        if let Some(other) = list
            .iter()
            .map(PinnedBuffer::region)
            .find(|r| r.overlaps(&region))
        {
            return Err(Error::Overlap {
                addr: region.addr,
                len: region.len,
                other_addr: other.addr,
                other_len: other.len,
            });
        }
        let at = list.partition_point(|b| b.addr() < region.addr);
        list.insert(at, buf);
        Ok(region.addr)
    }

    /// Removes the buffer that starts at `addr`. Errors: [`Error::NotRegistered`].
    pub(crate) fn release(&self, addr: u64) -> Result<PinnedBuffer> {
        let mut list = self.buffers.write().expect("legacy registry poisoned");
        match list.iter().position(|b| b.addr() == addr) {
            Some(i) => Ok(list.remove(i)),
            None => Err(Error::NotRegistered { addr, len: 0 }),
        }
    }

    /// Number of registered buffers.
    pub(crate) fn len(&self) -> usize {
        self.buffers.read().expect("legacy registry poisoned").len()
    }

    /// Calls `f` with the registered buffer containing `addr .. addr + len` and the
    /// offset of `addr` in it, holding the registry for reading meanwhile.
    /// Errors: [`Error::NotRegistered`], or `f`'s.
    pub(crate) fn route<R>(
        &self,
        addr: u64,
        len: u64,
        f: impl FnOnce(&PinnedBuffer, u64) -> Result<R>,
    ) -> Result<R> {
        let list = self.buffers.read().expect("legacy registry poisoned");
        // Sorted by address: the candidate is the last buffer starting at or below addr.
        let at = list.partition_point(|b| b.addr() <= addr);
        let buf = at
            .checked_sub(1)
            .map(|i| &list[i])
            .filter(|b| b.region().contains(addr, len))
            .ok_or(Error::NotRegistered { addr, len })?;
        f(buf, addr - buf.addr())
    }
}
