//! # fpgagdr — the user-space library
//!
//! Moves frames from an FPGA card with a Xilinx XDMA core into memory the GPU can use,
//! pinned once and reused for every transfer. This crate is what capture code links
//! against; the `fpgagdrd` service is built on it.
//!
//! ## Main types
//! - [`Card`]: an open card (`Card::open(0)` for `/dev/fpgagdr0`, driven by
//!   [`KernelCard`] over the kernel module's ioctls; `fpgagdr_sim::open_sim` for the
//!   simulated card, or any [`Backend`] through [`Card::from_backend`]).
//!   [`Card::status`] gives the platform, pin alignment, channel counts and capabilities.
//! - [`DmaMemory`]: memory to pin — CUDA memory when a CUDA driver loads, otherwise
//!   page-aligned host memory ([`DmaMemory::for_frames`] picks and says which).
//! - [`PinnedBuffer`]: memory pinned by [`Card::pin`]; unpins on drop.
//! - Transfers: [`Card::read_c2h`] / [`Card::write_h2c`] (channel, buffer, card address,
//!   length, timeout) return a [`Transfer`] (bytes and time taken).
//! - The frame read: [`Card::read_frame`] copies the slot of a frame the trigger
//!   announced and returns a [`FrameTransfer`] with the card protocol's torn-frame
//!   verdict ([`FrameCheck`]: a torn copy is an overrun, not a checksum error).
//! - The legacy path: [`Card::set_transfer_mode`], [`Card::register_buffer`] and the
//!   memory-mapped calls [`Card::mm_read_c2h`] / [`Card::mm_write_h2c`], which route to a
//!   registered pinned buffer by address lookup in [`TransferMode::GpuPinned`].
//! - [`FrameTrigger`]: how capture learns a frame is in card memory; frames carry a
//!   [`FrameHeader`] with sequence number and CRC ([`frame`]).
//! - [`FrameRing`]: pinned entries handed between a capture thread and a reader without
//!   a lock; an entry's bytes are read only through the token that holds it
//!   ([`ring::Filling`], [`ring::Held`]), which is what makes reading them safe.
//! - [`heap`]: the C heap's tuning for a process that rebuilds large pipelines.
//!
//! The simulated card, its sensor and the frame sources live in `fpgagdr-sim`; this
//! crate names no back-end but its own kernel one (`open.rs`), and [`Backend`] is the
//! seam. Modules, one way down: `ring` → `card`/`transfer`/`open` → `buffer`/`legacy` →
//! `backend` → `memory` → `sys`; `dma`, `status`, `frame`, `trigger` and `error` are
//! words every module may use.
//!
//! Every rule a call can break is an [`Error`] variant whose message names the rule
//! ([`Error::rule`]).
//!
//! ```no_run
//! use std::time::Duration;
//! use fpgagdr::{Card, DmaMemory};
//!
//! let card = Card::open(0)?; // /dev/fpgagdr0 (fpgagdr-sim's docs run this on SimCard)
//! let st = card.status();
//! let buf = card.pin(DmaMemory::host(64 * 1024, st.alignment as usize)?)?;
//! let e = card.read_c2h(9, &buf, 0, 4096, Duration::from_millis(10)).unwrap_err();
//! assert_eq!(e.rule(), "channel-range");
//! # Ok::<(), fpgagdr::Error>(())
//! ```
#![deny(missing_docs)]

mod backend;
mod buffer;
mod card;
mod dma;
mod error;
pub mod frame;
pub mod heap;
pub mod kernel;
mod legacy;
mod memory;
mod open;
mod pinmethod;
pub mod ring;
mod status;
mod sys;
mod transfer;
mod trigger;

pub use backend::{Backend, PinnedRegion, RegionAccess};
pub use buffer::PinnedBuffer;
pub use card::Card;
pub use dma::{
    ChainCache, Direction, FrameCheck, FrameRef, FrameTransfer, Handle, Transfer, TransferRequest,
};
pub use error::{Error, RULES, Result};
pub use frame::{FrameError, FrameHeader, PixelFormat};
pub use kernel::{FrameInfo, KernelCard, KernelCounters, KernelTrigger};
pub use legacy::TransferMode;
pub use memory::{
    DmaMemory, DmaRegion, GpuMemory, MemoryKind, check_inside, cuda_context, frame_ring_kind,
    gpu_memory,
};
pub use pinmethod::{GpuFacts, PinChoice, PinMethod, PinPlan, plan_pin};
pub use ring::{FrameMeta, FrameRing, WhenFull};
pub use status::{Capabilities, CardStatus, PciAddress, PcieLink, Platform};
pub use trigger::{FrameSlot, FrameTrigger};
