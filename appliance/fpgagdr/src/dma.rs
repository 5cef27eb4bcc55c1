//! The plain words of a DMA: direction, pin handle, one request and its result.
//!
//! Owns: [`Direction`], [`Handle`], [`TransferRequest`], [`Transfer`], and the words of a
//! frame copy: [`FrameRef`], [`FrameCheck`], [`FrameTransfer`]. Must not: check or
//! move anything; these are values that `card.rs`, `backend.rs` and the back-ends pass
//! around. Neighbours: none below (std and serde only), so every module may use them.

use std::fmt;
use std::time::Duration;

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

/// One DMA between a pinned buffer and card memory, validated by [`crate::Card`].
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

/// The frame a C2H copies out of its card slot, as the frame trigger announced it: what
/// the back-end needs to make card protocol 1.1's torn-frame check after the copy
/// (docs/card-protocol.md, "Torn frames").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FrameRef {
    /// The frame's sequence number ([`crate::FrameSlot::seq`]).
    pub seq: u64,
    /// The card's reset epoch the frame belongs to ([`crate::FrameSlot::epoch`]; 0 on a
    /// card without one).
    pub epoch: u32,
}

/// The back-end's verdict on a frame copy ([`crate::Card::read_frame`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FrameCheck {
    /// The card had not started the frame that rewrites the slot when the copy ended:
    /// the copy holds the frame whole (the kernel module's `FPGAGDR_FRAME_CHECK_WHOLE`).
    Whole,
    /// The card may have rewritten the slot during the copy (its live sequence passed
    /// `seq + slot count − 1`), the frame is of an epoch the card has left, or the card
    /// reads all ones (gone): the copy is not the frame. Count it as an overrun, never as
    /// a checksum error (docs/card-protocol.md; `FPGAGDR_FRAME_CHECK_TORN`).
    Torn,
    /// No check could be made: a protocol 1.0 card (no `LIVE_SEQ_LO`), or a back-end that
    /// cannot make it. The header's sequence number is the only check
    /// (`FPGAGDR_FRAME_CHECK_UNCHECKED`).
    Unchecked,
}

/// A frame copy: the transfer and the back-end's [`FrameCheck`] of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameTransfer {
    /// Bytes moved and time taken.
    pub transfer: Transfer,
    /// Whether the copy holds the frame whole.
    pub check: FrameCheck,
}

/// The descriptor-chain cache's counters: a transfer that repeats the handle,
/// direction, buffer offset, card address and length of the previous transfer on that
/// pinned buffer replays its chain (a hit); any other builds one (a miss). On the kernel
/// back-end these are the module's counters for the whole card (`GET_STATUS`
/// `cache_hits` / `cache_misses`); the simulated card keeps the same count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ChainCache {
    /// Transfers that replayed a chain already built.
    pub hits: u64,
    /// Transfers that built (or rebuilt) their chain.
    pub misses: u64,
}

impl ChainCache {
    /// The counts since `earlier` (a reading of the same card taken before).
    pub fn since(self, earlier: ChainCache) -> ChainCache {
        ChainCache {
            hits: self.hits.saturating_sub(earlier.hits),
            misses: self.misses.saturating_sub(earlier.misses),
        }
    }

    /// hits / (hits + misses), 0..=1; `None` before the first transfer.
    pub fn hit_rate(self) -> Option<f64> {
        let n = self.hits + self.misses;
        (n > 0).then(|| self.hits as f64 / n as f64)
    }
}
