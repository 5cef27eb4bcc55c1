//! How the capture loop learns that a frame is waiting in card memory.
//!
//! Owns: [`FrameTrigger`] and [`FrameSlot`]. On the simulated card,
//! `fpgagdr_sim::SimSensor` implements it; on a real card, the kernel back-end's frame
//! trigger (the frame-done user interrupt, `docs/card-protocol.md`), handed out by
//! [`crate::Card::frame_trigger`].
//!
//! The card writes frames round-robin into N slots (slot = seq mod N,
//! `docs/card-protocol.md`), so a
//! frame ring of k × N entries can give every slot the same k entries and every entry
//! always the same card address: [`FrameTrigger::slots`] is N.

use std::time::{Duration, Instant};

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
    /// The card's reset epoch the frame belongs to (protocol 1.1's EPOCH register); 0 on
    /// a card without one (protocol 1.0) and on the simulated card. With `seq` it names
    /// the frame for the torn-frame check of [`crate::Card::read_frame`].
    pub epoch: u32,
    /// The card's frame slot the frame lies in: `seq mod` [`FrameTrigger::slots`].
    pub slot: u32,
    /// Frames the card produced since the previous [`FrameSlot`] this trigger returned
    /// that the host never took: overwritten in their slot before the host was told
    /// (overrun), or lost because the event queue was full. `seq` minus the previous
    /// `seq` minus one; 0 for the first frame after the trigger was made.
    pub missed: u64,
    /// Of [`FrameSlot::missed`], the frames whose event the kernel's event queue dropped
    /// because it was full (the rest were overwritten by the card: overrun).
    pub queue_overflow: u64,
    /// When the frame was complete in card memory, on this process's monotonic clock:
    /// the frame-done interrupt's arrival (`ktime_get_ns()` in the handler) on a real
    /// card, the moment the simulated sensor finished writing it on the simulated card.
    pub arrived: Instant,
}

/// Waits for the next frame the card has captured.
pub trait FrameTrigger: Send {
    /// Blocks until the next frame is in card memory, or `timeout` passes
    /// ([`crate::Error::NoFrame`], rule `timeout`).
    fn wait_frame(&mut self, timeout: Duration) -> Result<FrameSlot>;
    /// Upper bound of [`FrameSlot::len`], bytes, so ring entries can be sized once.
    fn max_frame_len(&self) -> usize;
    /// N: the card's frame slots, which the card fills round-robin (slot = seq mod N).
    fn slots(&self) -> u32;
    /// One line for status pages.
    fn describe(&self) -> String;
}
