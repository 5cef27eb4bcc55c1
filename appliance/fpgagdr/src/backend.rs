//! The seam between the library and the hardware: what a card back-end does.
//!
//! Owns: the [`Backend`] trait and [`PinnedRegion`], the pinned memory as a back-end
//! sees it: its description, and checked copies for a back-end that moves bytes with the
//! CPU. The trait is safe to implement: a back-end never holds a raw pointer, and a
//! region's copies fail once [`crate::Card`] has released it, so a back-end that keeps a
//! region after `unpin` cannot reach freed memory.
//! Must not: name a concrete back-end. [`crate::KernelCard`] (the kernel module) is one,
//! `fpgagdr_sim::SimCard` (the simulated card, its own crate) another, and tests or new
//! hardware bring their own through [`crate::Card::from_backend`].

use std::fmt;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use crate::dma::{
    ChainCache, FrameCheck, FrameRef, FrameTransfer, Handle, Transfer, TransferRequest,
};
use crate::error::Result;
use crate::memory::{DmaMemory, DmaRegion, read_region, write_region};
use crate::pinmethod::PinMethod;
use crate::status::CardStatus;
use crate::trigger::FrameTrigger;

/// Memory pinned through [`crate::Card::pin`], as the back-end that pins it sees it.
///
/// [`PinnedRegion::region`] describes it (what a kernel back-end hands the module);
/// [`PinnedRegion::access`] lends checked copies in and out (what a back-end that moves
/// bytes with the CPU does for a transfer). The card releases the region after the
/// back-end's `unpin` has returned and before the memory is freed; from then on
/// `access` gives `None`, so a region kept by a back-end after `unpin` is harmless.
#[derive(Debug)]
pub struct PinnedRegion {
    region: DmaRegion,
    /// The dma-buf exported for the memory, as a descriptor number; open while the
    /// region is live (the memory owns it and outlives the region's release).
    dmabuf_fd: Option<i32>,
    method: PinMethod,
    /// `true` until released. Copies hold it for reading; `release` takes it for
    /// writing, so memory is never freed under a copy.
    live: RwLock<bool>,
}

impl PinnedRegion {
    /// A region for `memory`.
    ///
    /// # Safety
    /// `memory` (and the dma-buf it exported, if any) must stay allocated until [`PinnedRegion::release`]
    /// has returned, and no Rust reference may read or write it while a transfer may
    /// (between the back-end's `pin` and that release).
    #[allow(unsafe_code)]
    pub(crate) unsafe fn new(memory: &DmaMemory) -> Arc<Self> {
        Arc::new(PinnedRegion {
            region: memory.region(),
            dmabuf_fd: memory.dmabuf_fd().map(|fd| fd.as_raw_fd()),
            method: memory.pin_method(),
            live: RwLock::new(true),
        })
    }

    /// Address, length and kind of the pinned memory.
    pub fn region(&self) -> DmaRegion {
        self.region
    }

    /// How the memory is to be pinned ([`DmaMemory::pin_method`]).
    pub fn method(&self) -> PinMethod {
        self.method
    }

    /// The dma-buf exported for the memory when [`PinnedRegion::method`] is
    /// [`PinMethod::DmaBuf`]: what a kernel back-end hands the module (`dmabuf_fd`, with
    /// the offset 0 and the region's length). `None` once the region is released.
    pub fn dmabuf_fd(&self) -> Option<BorrowedFd<'_>> {
        let live = self.live.read().expect("pin lock poisoned");
        if !*live {
            return None;
        }
        #[allow(unsafe_code)]
        // SAFETY: the memory owns the descriptor and drops only after `release` (the
        // contract of `new`); the region is live, so it is still open. The borrow ends
        // with `self`, which a caller holds only inside `Backend::pin`, before release.
        self.dmabuf_fd
            .map(|fd| unsafe { BorrowedFd::borrow_raw(fd) })
    }

    /// Calls `f` with copy access to the memory, held for the whole call; `None` when the
    /// card has released the region (the pin is gone).
    pub fn access<R>(&self, f: impl FnOnce(RegionAccess<'_>) -> R) -> Option<R> {
        let live = self.live.read().expect("pin lock poisoned");
        live.then(|| {
            f(RegionAccess {
                region: &self.region,
            })
        })
    }

    /// Marks the region released, waiting for a copy still running. Called by the card
    /// after the back-end's `unpin`, before the memory is freed.
    pub(crate) fn release(&self) {
        *self.live.write().expect("pin lock poisoned") = false;
    }
}

/// Copies into and out of a live [`PinnedRegion`], lent by [`PinnedRegion::access`].
#[derive(Debug)]
pub struct RegionAccess<'a> {
    region: &'a DmaRegion,
}

impl RegionAccess<'_> {
    /// Copies `src` into the region at `offset` (a C2H by the CPU). Errors:
    /// [`crate::Error::BufferBounds`], [`crate::Error::Cuda`] (device memory).
    pub fn write(&self, offset: u64, src: &[u8]) -> Result<()> {
        #[allow(unsafe_code)]
        // SAFETY: this access exists only inside `PinnedRegion::access`, which holds the
        // region's lock for reading and saw it live, so `release` has not returned and
        // the memory is allocated and free of Rust references (`PinnedRegion::new`).
        unsafe {
            write_region(self.region, offset, src)
        }
    }

    /// Copies from the region at `offset` into `dst` (an H2C by the CPU); errors as
    /// [`RegionAccess::write`].
    pub fn read(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        #[allow(unsafe_code)]
        // SAFETY: as in `write`: the region is live for the whole access.
        unsafe {
            read_region(self.region, offset, dst)
        }
    }
}

/// What a card back-end does. [`crate::Card`] validates arguments before calling it.
///
/// Implemented by [`crate::KernelCard`] (the kernel module's ioctls) and by
/// `fpgagdr_sim::SimCard` (the simulated card);
/// `Arc<dyn Backend>` is the seam between the library and the hardware.
pub trait Backend: Send + Sync + fmt::Debug {
    /// The card's identity and limits.
    fn status(&self) -> CardStatus;
    /// Pins `region` once for DMA and returns its handle.
    ///
    /// The memory stays allocated until this back-end's `unpin(handle)` has returned
    /// (with either result), and no Rust reference touches it while a transfer may:
    /// [`crate::Card::pin`] keeps it in the [`crate::PinnedBuffer`], which unpins, then
    /// releases the region, then frees the memory.
    fn pin(&self, region: Arc<PinnedRegion>) -> Result<Handle>;
    /// Releases a pin. Errors: [`crate::Error::UnknownHandle`].
    fn unpin(&self, handle: Handle) -> Result<()>;
    /// DMA between a pinned buffer and card memory (path C).
    /// Errors: [`crate::Error::UnknownHandle`], [`crate::Error::BufferBounds`], [`crate::Error::Timeout`].
    fn transfer(&self, req: &TransferRequest) -> Result<Transfer>;
    /// A C2H of frame `frame`'s slot (path C), then card protocol 1.1's torn-frame check
    /// (docs/card-protocol.md): whether the card may have rewritten the slot during the
    /// copy. [`crate::Card::read_frame`] calls it with a validated C2H request. Errors:
    /// those of [`Backend::transfer`]. The default makes no check: the transfer, then
    /// [`FrameCheck::Unchecked`] (the header's sequence number is the only check).
    fn transfer_frame(&self, req: &TransferRequest, frame: FrameRef) -> Result<FrameTransfer> {
        let _ = frame;
        self.transfer(req).map(|transfer| FrameTransfer {
            transfer,
            check: FrameCheck::Unchecked,
        })
    }
    /// C2H into ordinary host memory (path A, `read` on a channel node).
    fn host_read(
        &self,
        channel: u32,
        card_addr: u64,
        dst: &mut [u8],
        timeout: Duration,
    ) -> Result<Transfer>;
    /// H2C from ordinary host memory (path A, `write` on a channel node).
    fn host_write(
        &self,
        channel: u32,
        card_addr: u64,
        src: &[u8],
        timeout: Duration,
    ) -> Result<Transfer>;
    /// The descriptor-chain cache's counters, if this back-end keeps them.
    fn chain_cache(&self) -> Option<ChainCache> {
        None
    }
    /// The card's PCIe link, read now (a link can retrain while the card runs); `None`
    /// when this back-end cannot report one (the default).
    fn link(&self) -> Option<crate::PcieLink> {
        None
    }
    /// The card's frame trigger (the frame-done interrupt), if this back-end has one.
    /// Errors: [`crate::Error::Unsupported`] (rule `capability`) by default; the
    /// back-end's errors (a card without the frame protocol, the module's refusal).
    fn frame_trigger(&self) -> Result<Box<dyn FrameTrigger>> {
        Err(crate::Error::Unsupported {
            what: "frame trigger",
            card: self.status().name,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_released_region_lends_no_access() {
        let mem = DmaMemory::host(4096, 4096).unwrap();
        #[allow(unsafe_code)]
        // SAFETY: `mem` lives until after `release` below, and nothing borrows it meanwhile.
        let region = unsafe { PinnedRegion::new(&mem) };
        let kept = region.clone(); // what a back-end may keep after its unpin
        region.access(|m| m.write(8, &[7; 16])).unwrap().unwrap();
        let mut back = [0u8; 16];
        region.access(|m| m.read(8, &mut back)).unwrap().unwrap();
        assert_eq!(back, [7; 16]);
        let e = region
            .access(|m| m.write(4090, &[0; 16]))
            .unwrap()
            .unwrap_err();
        assert_eq!(e.rule(), "buffer-bounds");
        region.release();
        assert!(kept.access(|m| m.write(8, &[1; 16])).is_none());
        assert!(kept.access(|m| m.read(8, &mut back)).is_none());
        drop(mem);
    }
}
