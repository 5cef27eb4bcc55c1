//! How the capture loop learns that a frame is waiting in card memory.
//!
//! Owns: [`FrameTrigger`] and [`FrameSlot`]. On the simulated card,
//! [`crate::sim::SimSensor`] implements it; on a real card, the FPGA's frame-done user
//! interrupt (or a status register) will.

use std::time::Duration;

use crate::error::Result;

/// A frame the FPGA has finished writing into card memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameSlot {
    /// Card address of the frame's first byte (its header).
    pub card_addr: u64,
    /// Frame length in bytes, header included.
    pub len: u64,
    /// The sensor's sequence number of the frame.
    pub seq: u64,
}

/// Waits for the next frame the card has captured.
pub trait FrameTrigger: Send {
    /// Blocks until the next frame is in card memory, or `timeout` passes
    /// ([`crate::Error::Timeout`]).
    fn wait_frame(&mut self, timeout: Duration) -> Result<FrameSlot>;
    /// Upper bound of [`FrameSlot::len`], bytes, so ring entries can be sized once.
    fn max_frame_len(&self) -> usize;
    /// One line for status pages.
    fn describe(&self) -> String;
}
