//! The legacy-compatible transfer path: one memory-mapped read/write call whose route
//! is chosen by a mode switch, so existing capture code moves to GPU-pinned DMA with no
//! change to its calls.
//!
//! Owns: `Card::{set_transfer_mode, register_buffer, release_buffer, mm_read_c2h,
//! mm_write_h2c}`. Must not: check transfer rules itself (it calls `Card`'s checked
//! paths) or keep state (the mode and the registered buffers are `legacy.rs`'s).
//!
//! Modelled on the production driver's `SetGPUBuffer` / `SetTransferMode` /
//! `DMA_MM_ReadC2H` (the reference report's §6.3, docs/bench.md), with two differences:
//! several buffers are registered and found by address, and an address outside them is an
//! error naming the rule instead of a silent CPU fallback.

use std::time::Duration;

use crate::buffer::PinnedBuffer;
use crate::card::Card;
use crate::dma::{Direction, Transfer};
use crate::error::{Error, Result};
use crate::legacy::TransferMode;

impl Card {
    /// Switches how [`Card::mm_read_c2h`] / [`Card::mm_write_h2c`] route.
    pub fn set_transfer_mode(&self, mode: TransferMode) {
        self.legacy().set_mode(mode);
    }

    /// The current route of the legacy calls.
    pub fn transfer_mode(&self) -> TransferMode {
        self.legacy().mode()
    }

    /// Registers a pinned buffer for address lookup; returns its start address, which
    /// is what legacy callers pass.
    ///
    /// Errors: [`Error::UnknownHandle`] when another card pinned it; [`Error::Overlap`]
    /// when it overlaps a registered buffer (the buffer is then dropped, and so unpinned).
    pub fn register_buffer(&self, buf: PinnedBuffer) -> Result<u64> {
        self.check_owner(&buf)?;
        self.legacy().register(buf)
    }

    /// Removes the registered buffer that starts at `addr` and gives it back (drop it
    /// to unpin). Errors: [`Error::NotRegistered`].
    pub fn release_buffer(&self, addr: u64) -> Result<PinnedBuffer> {
        self.legacy().release(addr)
    }

    /// Number of registered buffers.
    pub fn registered_buffers(&self) -> usize {
        self.legacy().len()
    }

    /// Legacy read: `len` bytes from `card_addr` to the caller's buffer at `addr`.
    ///
    /// In [`TransferMode::GpuPinned`] the registered buffer containing
    /// `addr .. addr + len` receives the bytes (path C); `addr` may be a CUDA device
    /// pointer. In [`TransferMode::Cpu`] the bytes go to host memory at `addr` (path A).
    ///
    /// Errors: every rule of [`Card::read_c2h`]; [`Error::NotRegistered`] in GPU-pinned
    /// mode when no registered buffer contains the range.
    ///
    /// # Safety
    /// In `Cpu` mode, `addr .. addr + len` must be host memory valid for writes and not
    /// accessed by anyone else during the call. In `GpuPinned` mode the call is always
    /// safe (the address is only looked up).
    #[allow(unsafe_code)]
    pub unsafe fn mm_read_c2h(
        &self,
        channel: u32,
        addr: u64,
        card_addr: u64,
        len: u64,
        timeout: Duration,
    ) -> Result<Transfer> {
        if len == 0 {
            return Err(Error::ZeroLength { what: "transfer" });
        }
        match self.transfer_mode() {
            TransferMode::GpuPinned => {
                self.routed(Direction::C2H, channel, addr, card_addr, len, timeout)
            }
            TransferMode::Cpu => {
                // SAFETY: the caller's contract for Cpu mode.
                let dst = unsafe { std::slice::from_raw_parts_mut(addr as *mut u8, len as usize) };
                self.read_c2h_to_host(channel, card_addr, dst, timeout)
            }
        }
    }

    /// Legacy write: `len` bytes from the caller's buffer at `addr` to `card_addr`.
    /// Routing and errors as [`Card::mm_read_c2h`].
    ///
    /// # Safety
    /// In `Cpu` mode, `addr .. addr + len` must be host memory valid for reads and not
    /// written by anyone else during the call.
    #[allow(unsafe_code)]
    pub unsafe fn mm_write_h2c(
        &self,
        channel: u32,
        addr: u64,
        card_addr: u64,
        len: u64,
        timeout: Duration,
    ) -> Result<Transfer> {
        if len == 0 {
            return Err(Error::ZeroLength { what: "transfer" });
        }
        match self.transfer_mode() {
            TransferMode::GpuPinned => {
                self.routed(Direction::H2C, channel, addr, card_addr, len, timeout)
            }
            TransferMode::Cpu => {
                // SAFETY: the caller's contract for Cpu mode.
                let src = unsafe { std::slice::from_raw_parts(addr as *const u8, len as usize) };
                self.write_h2c_from_host(channel, card_addr, src, timeout)
            }
        }
    }

    fn routed(
        &self,
        dir: Direction,
        channel: u32,
        addr: u64,
        card_addr: u64,
        len: u64,
        timeout: Duration,
    ) -> Result<Transfer> {
        self.legacy().route(addr, len, |buf, offset| match dir {
            Direction::C2H => self.read_c2h_at(channel, buf, offset, card_addr, len, timeout),
            Direction::H2C => self.write_h2c_at(channel, buf, offset, card_addr, len, timeout),
        })
    }
}
