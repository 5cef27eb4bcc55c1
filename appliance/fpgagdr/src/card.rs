//! Opening a card, its status, and the rules every transfer obeys.
//!
//! Owns: [`Card`], [`CardStatus`], the [`Backend`] seam, and the argument checks that
//! are the same on every back-end (channel range, zero length, card bounds, buffer
//! bounds, alignment, zero timeout). Back-ends only check what they alone know
//! (whether a handle is live) and move bytes.
//! Must not: allocate DMA memory (`memory.rs`) or route legacy calls (`transfer.rs`).
//! Neighbours: `buffer.rs` (a pin is a [`PinnedBuffer`]), `sim/` (the simulated card).

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::buffer::PinnedBuffer;
use crate::error::{Error, Result};
use crate::kernel::KernelCard;
use crate::memory::{DmaMemory, DmaRegion, check_inside};
use crate::sim::{SimCard, SimConfig};
use crate::transfer::Legacy;

/// Transfer direction, named from the card's side as in PG195.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Direction {
    /// Card to host/GPU memory (a read from the card).
    C2H,
    /// Host/GPU memory to card (a write to the card).
    H2C,
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::C2H => "C2H",
            Direction::H2C => "H2C",
        })
    }
}

/// The platform a card sits on; it decides the pin alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Platform {
    /// Jetson (Tegra, unified memory): 4 KiB pin alignment.
    Tegra,
    /// x86 (or arm64 server) with a discrete GPU: 64 KiB GPU pages.
    Desktop,
    /// The simulated card ([`SimCard`]); it applies the alignment of the platform its
    /// link preset models.
    Sim,
}

impl Platform {
    /// Lower-case name: `"tegra"`, `"desktop"`, `"sim"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Tegra => "tegra",
            Platform::Desktop => "desktop",
            Platform::Sim => "sim",
        }
    }
}

/// What a card can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Capabilities {
    /// DMA straight into pinned GPU memory (path C).
    pub gpu_direct: bool,
    /// DMA into ordinary host memory (path A; `read`/`write` on the channel nodes).
    pub host_dma: bool,
    /// Completion by interrupt (otherwise by polling).
    pub interrupts: bool,
}

/// A card's identity and limits, read once at open.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CardStatus {
    /// Human-readable identity, e.g. `"SimCard (simulated XDMA card), link preset orin-gen3x4"`.
    pub name: String,
    /// Platform; [`Platform::Sim`] for the simulated card.
    pub platform: Platform,
    /// True for [`SimCard`]: no hardware is involved.
    pub simulated: bool,
    /// GPU page size in bytes (4096 on Tegra, 65536 on a discrete GPU).
    pub gpu_page_size: u64,
    /// Required alignment of a pinned buffer's address and length, in bytes.
    pub alignment: u64,
    /// Number of C2H channels (engines), at most 4 on XDMA (PG195).
    pub c2h_channels: u32,
    /// Number of H2C channels (engines), at most 4 on XDMA (PG195).
    pub h2c_channels: u32,
    /// Size of the card's memory (card address space), bytes. `u64::MAX` when the kernel
    /// module does not know it (its `card_size` parameter is 0): then only wrap-around is
    /// checked.
    pub card_memory_bytes: u64,
    /// What the card can do.
    pub capabilities: Capabilities,
}

/// An opaque pin handle issued by a back-end. Valid until unpinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Handle(pub u64);

impl fmt::Display for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A completed transfer: bytes moved and the time from submit to completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transfer {
    /// Bytes moved.
    pub bytes: u64,
    /// Time from submission to completion (monotonic clock).
    pub elapsed: Duration,
}

impl Transfer {
    /// Throughput in GB/s (10^9 bytes per second); 0 for a zero duration.
    pub fn gbps(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 {
            self.bytes as f64 / s / 1e9
        } else {
            0.0
        }
    }
}

/// One DMA between a pinned buffer and card memory, validated by [`Card`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransferRequest {
    /// Direction.
    pub dir: Direction,
    /// Channel (engine) index.
    pub channel: u32,
    /// Pin handle of the buffer.
    pub handle: Handle,
    /// Offset into the pinned buffer, bytes.
    pub offset: u64,
    /// Card address, bytes.
    pub card_addr: u64,
    /// Length, bytes (> 0).
    pub len: u64,
    /// Bound on the wait for completion (> 0).
    pub timeout: Duration,
}

/// What a card back-end does. [`Card`] validates arguments before calling it.
///
/// Implemented by [`SimCard`] and by [`KernelCard`] (the kernel module's ioctls);
/// `Arc<dyn Backend>` is the seam between the library and the hardware.
pub trait Backend: Send + Sync + fmt::Debug {
    /// The card's identity and limits.
    fn status(&self) -> CardStatus;
    /// Pins `region` once for DMA and returns its handle.
    ///
    /// # Safety
    /// From this call until `unpin(handle)` has returned (with either result), the
    /// region must stay allocated and must not be accessed through any Rust reference
    /// while a transfer may write it: every later [`Backend::transfer`] on the handle,
    /// which is a safe call, reads or writes those bytes. [`Card::pin`] guarantees this
    /// by keeping the memory in the [`PinnedBuffer`], which unpins before freeing it.
    #[allow(unsafe_code)]
    unsafe fn pin(&self, region: DmaRegion) -> Result<Handle>;
    /// Releases a pin. Errors: [`Error::UnknownHandle`].
    fn unpin(&self, handle: Handle) -> Result<()>;
    /// DMA between a pinned buffer and card memory (path C).
    /// Errors: [`Error::UnknownHandle`], [`Error::BufferBounds`], [`Error::Timeout`].
    fn transfer(&self, req: &TransferRequest) -> Result<Transfer>;
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
}

/// An open card: status, pinning, transfers, and the legacy-compatible path.
///
/// ```
/// use std::time::Duration;
/// use fpgagdr::{Card, DmaMemory, SimConfig};
///
/// let card = Card::open_sim(SimConfig::default());
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
    /// Opens card `index`: the kernel module's node `/dev/fpgagdr<index>`, driven by
    /// [`KernelCard`].
    ///
    /// Errors: as [`Card::open_path`].
    pub fn open(index: u32) -> Result<Card> {
        Self::open_path(format!("/dev/fpgagdr{index}"))
    }

    /// Opens a card by path: `"sim"` for [`SimCard`] with default settings, or a control
    /// node such as `/dev/fpgagdr0` of the kernel module ([`KernelCard`]).
    ///
    /// Errors: [`Error::NoCard`] when the node does not exist ("no such device node"),
    /// may not be opened (the message says to add the user to the `fpgagdr` group), has
    /// no card behind it, or is not an fpgagdr control node; [`Error::Kernel`] (rule
    /// `abi-version`) when the module speaks another ABI version than this library.
    pub fn open_path(path: impl AsRef<Path>) -> Result<Card> {
        let path = path.as_ref();
        if path == Path::new("sim") {
            return Ok(Self::open_sim(SimConfig::default()));
        }
        Ok(Self::from_backend(Arc::new(KernelCard::open(path)?)))
    }

    /// Opens a simulated card.
    pub fn open_sim(config: SimConfig) -> Card {
        Self::from_backend(Arc::new(SimCard::new(config)))
    }

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
        // SAFETY: `memory` moves into the returned `PinnedBuffer`, which hands out no
        // mutable access while pinned and unpins (on this back-end) before the memory
        // is freed or given back.
        let handle = unsafe { self.backend.pin(region) }?;
        Ok(PinnedBuffer::new(self.backend.clone(), handle, memory))
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
