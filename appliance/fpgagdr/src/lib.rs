//! # fpgagdr — the user-space library
//!
//! Moves frames from an FPGA card with a Xilinx XDMA core into memory the GPU can use,
//! pinned once and reused for every transfer. This crate is what capture code links
//! against; the `fpgagdrd` service is built on it.
//!
//! ## Main types
//! - [`Card`]: an open card (`Card::open(0)` for `/dev/fpgagdr0`, driven by
//!   [`KernelCard`] over the kernel module's ioctls; `Card::open_sim` for the simulated
//!   card). [`Card::status`] gives the platform, pin alignment, channel
//!   counts and capabilities.
//! - [`DmaMemory`]: memory to pin — CUDA memory when a CUDA driver loads, otherwise
//!   page-aligned host memory ([`DmaMemory::for_frames`] picks and says which).
//! - [`PinnedBuffer`]: memory pinned by [`Card::pin`]; unpins on drop.
//! - Transfers: [`Card::read_c2h`] / [`Card::write_h2c`] (channel, buffer, card address,
//!   length, timeout) return a [`Transfer`] (bytes and time taken).
//! - The legacy path: [`Card::set_transfer_mode`], [`Card::register_buffer`] and the
//!   memory-mapped calls [`Card::mm_read_c2h`] / [`Card::mm_write_h2c`], which route to a
//!   registered pinned buffer by address lookup in [`TransferMode::GpuPinned`].
//! - [`SimCard`] (a simulation of an XDMA card, calibrated against measured tables),
//!   [`SimSensor`] (its capture logic) and the frame sources [`TestPattern`] and
//!   [`Replay`]; frames carry a [`FrameHeader`] with sequence number and CRC.
//!
//! Every rule a call can break is an [`Error`] variant whose message names the rule
//! ([`Error::rule`]).
//!
//! ```
//! use std::time::Duration;
//! use fpgagdr::{Card, DmaMemory, SimConfig, LinkPreset};
//!
//! let card = Card::open_sim(SimConfig { preset: LinkPreset::Off, ..SimConfig::default() });
//! let st = card.status();
//! assert!(st.simulated);
//! let buf = card.pin(DmaMemory::host(64 * 1024, st.alignment as usize)?)?;
//! let e = card.read_c2h(9, &buf, 0, 4096, Duration::from_millis(10)).unwrap_err();
//! assert_eq!(e.rule(), "channel-range");
//! # Ok::<(), fpgagdr::Error>(())
//! ```
#![deny(missing_docs)]

mod buffer;
mod card;
mod error;
pub mod frame;
pub mod kernel;
mod memory;
mod sys;
mod transfer;
mod trigger;

pub use buffer::PinnedBuffer;
pub use card::{
    Backend, Capabilities, Card, CardStatus, Direction, Handle, Platform, Transfer, TransferRequest,
};
pub use error::{Error, Result};
pub use frame::{FrameError, FrameHeader, PixelFormat};
pub use kernel::{KernelCard, KernelCounters};
pub use memory::{
    DmaMemory, DmaRegion, GpuMemory, MemoryKind, cuda_context, frame_ring_kind, gpu_memory,
};
pub use transfer::TransferMode;
pub use trigger::{FrameSlot, FrameTrigger};
