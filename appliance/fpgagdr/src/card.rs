//! Opening a card, its status, and the rules every transfer obeys.
//!
//! Owns: [`Card`], [`CardStatus`], the [`Backend`] seam, and the argument checks that
//! are the same on every back-end (channel range, zero length, card bounds, buffer
//! bounds, alignment, zero timeout). Back-ends only check what they alone know
//! (whether a handle is live) and move bytes.
//! Must not: allocate DMA memory (`memory.rs`), route legacy calls (`transfer.rs`), or
//! name a concrete back-end (`open.rs` does, `backend.rs` is the seam).
//! Neighbours: `buffer.rs` (a pin is a [`PinnedBuffer`]), `legacy.rs` (the registry of
//! the legacy path).
//!
//! Follow one frame: [`Card::read_c2h`] has the back-end (the kernel module through
//! `kernel/mod.rs`, or the simulator's `SimCard`) move it into a pinned ring entry.
//! Next hop: the service's capture thread (`fpgagdrd/src/pipeline/capture.rs`).

use std::sync::Arc;
use std::time::Duration;

use crate::backend::{Backend, PinnedRegion};
use crate::buffer::PinnedBuffer;
use crate::dma::{
    ChainCache, Direction, FrameRef, FrameTransfer, Handle, Transfer, TransferRequest,
};
use crate::error::{Error, Result};
use crate::legacy::Legacy;
use crate::memory::{DmaMemory, check_inside};
use crate::status::{CardStatus, Platform};
use crate::trigger::FrameSlot;

/// An open card: status, pinning, transfers, and the legacy-compatible path.
///
/// ```no_run
/// use std::time::Duration;
/// use fpgagdr::{Card, DmaMemory};
///
/// let card = Card::open(0)?; // fpgagdr-sim's docs run this on the simulated card
/// let align = card.status().alignment as usize;
/// let buf = card.pin(DmaMemory::host(1 << 20, align)?)?;          // pin once
/// card.write_h2c_from_host(0, 0x1000, &[0xab; 4096], Duration::from_millis(100))?;
/// let t = card.read_c2h(0, &buf, 0x1000, 4096, Duration::from_millis(100))?;
/// assert_eq!(t.bytes, 4096);
/// // SAFETY: no C2H into `buf` runs while the slice lives.
/// assert_eq!(unsafe { buf.host_bytes() }.unwrap()[..4096], [0xab; 4096]);
/// # Ok::<(), fpgagdr::Error>(())
/// ```
#[derive(Debug)]
pub struct Card {
    backend: Arc<dyn Backend>,
    status: CardStatus,
    legacy: Legacy,
}

impl Card {
    /// Wraps any back-end (the seam for new hardware and for tests).
    pub fn from_backend(backend: Arc<dyn Backend>) -> Card {
        let status = backend.status();
        Card {
            backend,
            status,
            legacy: Legacy::default(),
        }
    }

    /// The card's identity and limits.
    pub fn status(&self) -> &CardStatus {
        &self.status
    }

    /// The descriptor-chain cache's counters (see [`ChainCache`]), if the back-end keeps
    /// them: the kernel module's (read now, one `GET_STATUS`), or the simulated card's.
    pub fn chain_cache(&self) -> Option<ChainCache> {
        self.backend.chain_cache()
    }

    /// The card's PCIe link as the back-end reports it now (kernel module: GET_STATUS;
    /// simulated card: the link its preset states, marked simulated); `None` when the
    /// back-end cannot report one.
    pub fn link(&self) -> Option<crate::PcieLink> {
        self.backend.link()
    }

    /// The card's frame trigger: waits for the card's frame-done events
    /// (`docs/card-protocol.md`). Errors: [`Error::Unsupported`] (rule `capability`) on a
    /// back-end without one (the simulated card's frames come from
    /// `fpgagdr_sim::SimSensor`); the back-end's errors.
    pub fn frame_trigger(&self) -> Result<Box<dyn crate::FrameTrigger>> {
        self.backend.frame_trigger()
    }

    /// The back-end, for code that drives it directly (the simulated sensor).
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// Pins `memory` once; the returned buffer unpins when dropped.
    ///
    /// Errors: [`Error::Alignment`] when address or length is not a multiple of
    /// `status().alignment`; back-end errors.
    pub fn pin(&self, memory: DmaMemory) -> Result<PinnedBuffer> {
        let region = memory.region();
        let platform = self.alignment_platform();
        let required = self.status.alignment;
        if !region.addr.is_multiple_of(required) {
            return Err(Error::Alignment {
                what: "buffer address",
                value: region.addr,
                required,
                platform,
            });
        }
        if !region.len.is_multiple_of(required) {
            return Err(Error::Alignment {
                what: "buffer length",
                value: region.len,
                required,
                platform,
            });
        }
        #[allow(unsafe_code)]
        // SAFETY: `memory` moves into the returned `PinnedBuffer`, which hands its bytes
        // out only through `unsafe fn`s whose callers promise no C2H runs meanwhile, and
        // releases the region (after the back-end's unpin) before the memory is freed or
        // given back. If pinning fails, the region is released below before `memory`
        // drops.
        let pinned = unsafe { PinnedRegion::new(&memory) };
        match self.backend.pin(pinned.clone()) {
            Ok(handle) => Ok(PinnedBuffer::new(
                self.backend.clone(),
                handle,
                memory,
                pinned,
            )),
            Err(e) => {
                pinned.release();
                Err(e)
            }
        }
    }

    fn alignment_platform(&self) -> &'static str {
        match (self.status.platform, self.status.alignment) {
            (Platform::Tegra, _) => "tegra",
            (Platform::Desktop, _) => "desktop",
            // The simulated card names the platform its link preset emulates.
            (Platform::Sim, 4096) => "tegra",
            (Platform::Sim, _) => "desktop",
        }
    }

    /// C2H: reads `len` bytes at `card_addr` into `buf` at offset 0.
    pub fn read_c2h(
        &self,
        channel: u32,
        buf: &PinnedBuffer,
        card_addr: u64,
        len: u64,
        timeout: Duration,
    ) -> Result<Transfer> {
        self.read_c2h_at(channel, buf, 0, card_addr, len, timeout)
    }

    /// C2H of the frame `slot` announced: `len` bytes from `slot.card_addr` into `buf` at
    /// offset 0, then card protocol 1.1's torn-frame check (docs/card-protocol.md,
    /// "Torn frames"): the back-end asks whether the card may have rewritten the slot
    /// during the copy. On the kernel module (ABI 4) this is TRANSFER with
    /// `FPGAGDR_XFER_FRAME`, `slot.seq` and `slot.epoch`; the module reads the card's
    /// `LIVE_SEQ_LO` after the run. `len` may exceed `slot.len` (up to the slot's size)
    /// so that an entry repeats its descriptor chain.
    ///
    /// Returns the transfer and the verdict: [`crate::FrameCheck::Torn`] means the
    /// bytes are not the frame (count an overrun, never a checksum error);
    /// [`crate::FrameCheck::Unchecked`] on a protocol 1.0 card or a back-end without the
    /// check. Errors: every rule of [`Card::read_c2h`]; on the kernel module, rule
    /// `invalid-argument` when the range lies outside the frame's slot.
    pub fn read_frame(
        &self,
        channel: u32,
        buf: &PinnedBuffer,
        slot: &FrameSlot,
        len: u64,
        timeout: Duration,
    ) -> Result<FrameTransfer> {
        let frame = FrameRef {
            seq: slot.seq,
            epoch: slot.epoch,
        };
        self.read_frame_ref(channel, buf, slot.card_addr, frame, len, timeout)
    }

    /// [`Card::read_frame`] for a caller that keeps the frame's card address, sequence
    /// and epoch itself rather than the trigger's [`FrameSlot`] (the C API): the same
    /// C2H, check, verdict and errors.
    pub fn read_frame_ref(
        &self,
        channel: u32,
        buf: &PinnedBuffer,
        card_addr: u64,
        frame: FrameRef,
        len: u64,
        timeout: Duration,
    ) -> Result<FrameTransfer> {
        self.check_buffer(buf, 0, len)?;
        self.check_common(Direction::C2H, channel, card_addr, len, timeout)?;
        let req = TransferRequest {
            dir: Direction::C2H,
            channel,
            handle: buf.handle(),
            offset: 0,
            card_addr,
            len,
            timeout,
        };
        self.backend.transfer_frame(&req, frame)
    }

    /// C2H into `buf` at `offset`.
    pub fn read_c2h_at(
        &self,
        channel: u32,
        buf: &PinnedBuffer,
        offset: u64,
        card_addr: u64,
        len: u64,
        timeout: Duration,
    ) -> Result<Transfer> {
        self.check_buffer(buf, offset, len)?;
        self.transfer_handle(
            Direction::C2H,
            channel,
            buf.handle(),
            offset,
            card_addr,
            len,
            timeout,
        )
    }

    /// H2C: writes `len` bytes from `buf` (offset 0) to `card_addr`.
    pub fn write_h2c(
        &self,
        channel: u32,
        buf: &PinnedBuffer,
        card_addr: u64,
        len: u64,
        timeout: Duration,
    ) -> Result<Transfer> {
        self.write_h2c_at(channel, buf, 0, card_addr, len, timeout)
    }

    /// H2C from `buf` at `offset`.
    pub fn write_h2c_at(
        &self,
        channel: u32,
        buf: &PinnedBuffer,
        offset: u64,
        card_addr: u64,
        len: u64,
        timeout: Duration,
    ) -> Result<Transfer> {
        self.check_buffer(buf, offset, len)?;
        self.transfer_handle(
            Direction::H2C,
            channel,
            buf.handle(),
            offset,
            card_addr,
            len,
            timeout,
        )
    }

    /// A transfer by raw handle, for callers that keep handles themselves (the C API).
    ///
    /// Errors: every rule of [`Card::read_c2h`], plus [`Error::UnknownHandle`] when the
    /// handle was never issued or has been released.
    #[allow(clippy::too_many_arguments)]
    pub fn transfer_handle(
        &self,
        dir: Direction,
        channel: u32,
        handle: Handle,
        offset: u64,
        card_addr: u64,
        len: u64,
        timeout: Duration,
    ) -> Result<Transfer> {
        self.check_common(dir, channel, card_addr, len, timeout)?;
        let req = TransferRequest {
            dir,
            channel,
            handle,
            offset,
            card_addr,
            len,
            timeout,
        };
        self.backend.transfer(&req)
    }

    /// Path A read: C2H into ordinary host memory (`read` on a channel node).
    pub fn read_c2h_to_host(
        &self,
        channel: u32,
        card_addr: u64,
        dst: &mut [u8],
        timeout: Duration,
    ) -> Result<Transfer> {
        self.check_common(
            Direction::C2H,
            channel,
            card_addr,
            dst.len() as u64,
            timeout,
        )?;
        self.backend.host_read(channel, card_addr, dst, timeout)
    }

    /// Path A write: H2C from ordinary host memory (`write` on a channel node).
    pub fn write_h2c_from_host(
        &self,
        channel: u32,
        card_addr: u64,
        src: &[u8],
        timeout: Duration,
    ) -> Result<Transfer> {
        self.check_common(
            Direction::H2C,
            channel,
            card_addr,
            src.len() as u64,
            timeout,
        )?;
        self.backend.host_write(channel, card_addr, src, timeout)
    }

    pub(crate) fn legacy(&self) -> &Legacy {
        &self.legacy
    }

    fn check_buffer(&self, buf: &PinnedBuffer, offset: u64, len: u64) -> Result<()> {
        self.check_owner(buf)?;
        check_inside(&buf.region(), offset, len)
    }

    /// A buffer pinned by another card carries that card's handle, which may name a
    /// different buffer here: refuse it rather than move bytes into the wrong memory.
    pub(crate) fn check_owner(&self, buf: &PinnedBuffer) -> Result<()> {
        if buf.pinned_by(&self.backend) {
            Ok(())
        } else {
            Err(Error::UnknownHandle {
                handle: buf.handle().0,
            })
        }
    }

    fn check_common(
        &self,
        dir: Direction,
        channel: u32,
        card_addr: u64,
        len: u64,
        timeout: Duration,
    ) -> Result<()> {
        let count = match dir {
            Direction::C2H => self.status.c2h_channels,
            Direction::H2C => self.status.h2c_channels,
        };
        if channel >= count {
            return Err(Error::ChannelRange {
                dir,
                channel,
                count,
            });
        }
        if len == 0 {
            return Err(Error::ZeroLength { what: "transfer" });
        }
        let card_memory = self.status.card_memory_bytes;
        if card_addr
            .checked_add(len)
            .is_none_or(|end| end > card_memory)
        {
            return Err(Error::CardBounds {
                card_addr,
                len,
                card_memory,
            });
        }
        if timeout.is_zero() {
            return Err(Error::ZeroTimeout);
        }
        Ok(())
    }
}
