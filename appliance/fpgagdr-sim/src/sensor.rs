//! The simulated FPGA capture logic: renders frames from a [`FrameSource`] into a ring
//! of frame slots in card memory at a fixed frame rate, and tells the capture loop
//! where each one is ([`FrameTrigger`]).
//!
//! Owns: [`SimSensor`]. Neighbours: `source.rs` (frame content), `card.rs` (card
//! memory through [`SimCard::fpga_write`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use fpgagdr::{Error, FrameError, FrameSlot, FrameTrigger, Result};

use crate::card::SimCard;
use crate::source::FrameSource;

/// Frame slots the sensor cycles through in card memory.
pub const SENSOR_SLOTS: u64 = 4;
const SLOT_ALIGN: u64 = 64 * 1024;

/// A simulated image sensor behind the FPGA.
pub struct SimSensor {
    card: Arc<SimCard>,
    source: Box<dyn FrameSource>,
    period: Option<Duration>,
    base: u64,
    slot_stride: u64,
    seq: u64,
    next_at: Option<Instant>,
    scratch: Vec<u8>,
}

impl std::fmt::Debug for SimSensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimSensor")
            .field("source", &self.source.describe())
            .field("seq", &self.seq)
            .finish()
    }
}

impl SimSensor {
    /// A sensor writing `source`'s frames at `fps` frames per second (0 = as fast as the
    /// capture loop asks) into [`SENSOR_SLOTS`] slots from card address `base`.
    ///
    /// Errors: [`Error::CardBounds`] when the slots do not fit in card memory;
    /// [`FrameError::Source`] for a negative or non-finite `fps`.
    pub fn new(
        card: Arc<SimCard>,
        source: Box<dyn FrameSource>,
        fps: f64,
        base: u64,
    ) -> Result<Self> {
        if !fps.is_finite() || fps < 0.0 {
            return Err(FrameError::Source(format!(
                "frame rate {fps} must be a finite number >= 0"
            ))
            .into());
        }
        let slot_stride = (source.max_frame_len() as u64).div_ceil(SLOT_ALIGN) * SLOT_ALIGN;
        let len = slot_stride * SENSOR_SLOTS;
        let card_memory = card.config().card_memory_bytes;
        if base.checked_add(len).is_none_or(|end| end > card_memory) {
            return Err(Error::CardBounds {
                card_addr: base,
                len,
                card_memory,
            });
        }
        let period = (fps > 0.0).then(|| Duration::from_secs_f64(1.0 / fps));
        Ok(SimSensor {
            card,
            source,
            period,
            base,
            slot_stride,
            seq: 0,
            next_at: None,
            scratch: Vec::new(),
        })
    }
}

impl FrameTrigger for SimSensor {
    fn wait_frame(&mut self, timeout: Duration) -> Result<FrameSlot> {
        if let Some(period) = self.period {
            let now = Instant::now();
            let due = *self.next_at.get_or_insert(now);
            if due > now + timeout {
                std::thread::sleep(timeout);
                return Err(Error::NoFrame { timeout });
            }
            if due > now {
                std::thread::sleep(due - now);
            }
            // A sensor does not catch up on frames it was not asked for: if the loop fell
            // a whole period behind, the next frame is one period from now.
            let next = due + period;
            self.next_at = Some(if next < Instant::now() {
                Instant::now() + period
            } else {
                next
            });
        }
        let seq = self.seq;
        self.seq += 1;
        let header = self.source.render(seq, &mut self.scratch);
        let card_addr = self.base + (seq % SENSOR_SLOTS) * self.slot_stride;
        self.card.fpga_write(card_addr, &self.scratch)?;
        Ok(FrameSlot {
            card_addr,
            len: header.frame_len() as u64,
            seq,
            slot: (seq % SENSOR_SLOTS) as u32,
            // The simulated sensor renders a frame when asked: it never overwrites one
            // the host has not taken.
            missed: 0,
            queue_overflow: 0,
            arrived: Instant::now(),
        })
    }

    fn max_frame_len(&self) -> usize {
        self.source.max_frame_len()
    }

    fn slots(&self) -> u32 {
        SENSOR_SLOTS as u32
    }

    fn describe(&self) -> String {
        self.source.describe()
    }
}
