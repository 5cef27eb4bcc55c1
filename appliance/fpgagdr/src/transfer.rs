//! The legacy-compatible transfer path: one memory-mapped read/write call whose route
//! is chosen by a mode switch, so existing capture code moves to GPU-pinned DMA with no
//! change to its calls.
//!
//! Owns: [`TransferMode`], the registry of buffers for address lookup, and
//! `Card::{set_transfer_mode, register_buffer, release_buffer, mm_read_c2h, mm_write_h2c}`.
//! Must not: check transfer rules itself; it calls `Card`'s checked paths.
//!
//! Modelled on the production driver's `SetGPUBuffer` / `SetTransferMode` /
//! `DMA_MM_ReadC2H` (seed 000, §6.3), with two differences: several buffers are
//! registered and found by address, and an address outside them is an error naming the
//! rule instead of a silent CPU fallback.

use std::sync::RwLock;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use crate::buffer::PinnedBuffer;
use crate::card::{Card, Direction, Transfer};
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

impl Card {
    /// Switches how [`Card::mm_read_c2h`] / [`Card::mm_write_h2c`] route.
    pub fn set_transfer_mode(&self, mode: TransferMode) {
        self.legacy().mode.store(mode as u8, Ordering::Release);
    }

    /// The current route of the legacy calls.
    pub fn transfer_mode(&self) -> TransferMode {
        match self.legacy().mode.load(Ordering::Acquire) {
            0 => TransferMode::Cpu,
            _ => TransferMode::GpuPinned,
        }
    }

    /// Registers a pinned buffer for address lookup; returns its start address, which
    /// is what legacy callers pass.
    ///
    /// Errors: [`Error::UnknownHandle`] when another card pinned it; [`Error::Overlap`]
    /// when it overlaps a registered buffer (the buffer is then dropped, and so unpinned).
    pub fn register_buffer(&self, buf: PinnedBuffer) -> Result<u64> {
        self.check_owner(&buf)?;
        let region = buf.memory().region();
        let mut list = self
            .legacy()
            .buffers
            .write()
            .expect("legacy registry poisoned");
        if let Some(other) = list
            .iter()
            .map(|b| b.memory().region())
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

    /// Removes the registered buffer that starts at `addr` and gives it back (drop it
    /// to unpin). Errors: [`Error::NotRegistered`].
    pub fn release_buffer(&self, addr: u64) -> Result<PinnedBuffer> {
        let mut list = self
            .legacy()
            .buffers
            .write()
            .expect("legacy registry poisoned");
        match list.iter().position(|b| b.addr() == addr) {
            Some(i) => Ok(list.remove(i)),
            None => Err(Error::NotRegistered { addr, len: 0 }),
        }
    }

    /// Number of registered buffers.
    pub fn registered_buffers(&self) -> usize {
        self.legacy()
            .buffers
            .read()
            .expect("legacy registry poisoned")
            .len()
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
        let list = self
            .legacy()
            .buffers
            .read()
            .expect("legacy registry poisoned");
        // Sorted by address: the candidate is the last buffer starting at or below addr.
        let at = list.partition_point(|b| b.addr() <= addr);
        let buf = at
            .checked_sub(1)
            .map(|i| &list[i])
            .filter(|b| b.memory().region().contains(addr, len))
            .ok_or(Error::NotRegistered { addr, len })?;
        let offset = addr - buf.addr();
        match dir {
            Direction::C2H => self.read_c2h_at(channel, buf, offset, card_addr, len, timeout),
            Direction::H2C => self.write_h2c_at(channel, buf, offset, card_addr, len, timeout),
        }
    }
}
