//! The simulated FPGA capture logic: renders frames from a [`FrameSource`] into a ring
//! of frame slots in card memory at a fixed frame rate, and tells the capture loop
//! where each one is ([`FrameTrigger`]).
//!
//! Owns: [`SimSensor`]. Neighbours: `source.rs` (frame content), `card.rs` (card
//! memory through [`SimCard::fpga_write`]).
//!
//! Each slot's frame is written in full when the slot's picture changes; a frame that
//! shows the picture its slot already holds (the source says so: `FrameSource::picture`)
//! is written by rewriting the header (sequence number, timestamp, payload CRC, header
//! CRC) and the payload's identity bytes, 72 bytes for the test pattern instead of the
//! whole frame. The payload CRC is that of the payload as written: the CRC of the
//! unchanging rest of the payload is kept per slot and combined with the CRC of the new
//! identity bytes (CRC-32 is linear: `crc32fast::Hasher::combine`). The frame slots
//! live in page-locked card memory ([`SimCard::map_frame_memory`]).
//!
//! At a fixed frame rate the sensor runs free, as a camera does: frame k is complete at
//! `start + k / fps`, whether or not the host is ready. A host that asks late gets the
//! oldest frame still in its slot (its arrival is the moment it was complete, so the
//! wait shows as the pickup stage), then the next ones at once; a host more than
//! [`crate::LinkPreset::sensor_slots`] frames behind has missed the frames overwritten since
//! ([`FrameSlot::missed`]). So frames produced = frames the host took + frames missed,
//! exactly, and the rate offered is the rate asked for. A frame is written into its slot
//! when the host asks for it (the bytes, the timestamp included, are those it would have
//! had at its time); a slot's block lock keeps a C2H still reading the slot's earlier
//! frame whole.

use std::sync::Arc;
use std::time::{Duration, Instant};

use fpgagdr::frame::HEADER_LEN;
use fpgagdr::{Error, FrameError, FrameHeader, FrameSlot, FrameTrigger, MemoryKind, Result};

use crate::card::SimCard;
use crate::source::{FrameSource, MAX_IDENTITY_LEN};

const SLOT_ALIGN: u64 = 64 * 1024;

/// What a frame slot holds, for rewriting only what changes.
#[derive(Debug, Clone)]
struct Held {
    /// The source's picture key.
    picture: u64,
    /// The header last written there.
    header: FrameHeader,
    /// CRC state of the payload past the identity bytes.
    rest: crc32fast::Hasher,
}

/// A simulated image sensor behind the FPGA.
pub struct SimSensor {
    card: Arc<SimCard>,
    source: Box<dyn FrameSource>,
    /// Frames per second; `None`: as fast as the host asks.
    fps: Option<f64>,
    base: u64,
    slot_stride: u64,
    /// Frame slots in card memory: [`crate::LinkPreset::sensor_slots`] of the card's link.
    slots: u64,
    seq: u64,
    /// When frame 0 was complete (the first ask), at a fixed frame rate.
    start: Option<Instant>,
    scratch: Vec<u8>,
    /// Per slot, what it holds (None: nothing yet, or a source without picture keys).
    held: Vec<Option<Held>>,
    /// Identity bytes of the source (checked ≤ [`MAX_IDENTITY_LEN`]).
    identity_len: usize,
    /// The card's clock: frame timestamps are ns since the sensor started.
    epoch: Instant,
    /// Where the slots are held.
    slot_memory: MemoryKind,
    /// Frames written in full, and rewritten in place (header and identity only).
    rendered: u64,
    restamped: u64,
}

impl std::fmt::Debug for SimSensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimSensor")
            .field("source", &self.source.describe())
            .field("seq", &self.seq)
            .field("rendered", &self.rendered)
            .field("restamped", &self.restamped)
            .finish()
    }
}

impl SimSensor {
    /// A sensor writing `source`'s frames at `fps` frames per second, free-running (module
    /// documentation; 0 = as fast as the capture loop asks) into the card's link's
    /// [`crate::LinkPreset::sensor_slots`] slots from card address `base`, each slot
    /// held in page-locked card memory where CUDA is present
    /// ([`SimCard::map_frame_memory`]).
    ///
    /// Errors: [`Error::CardBounds`] when the slots do not fit in card memory;
    /// [`FrameError::Source`] for a negative or non-finite `fps`, or a source that
    /// claims more than `MAX_IDENTITY_LEN` identity bytes or as many as its payload;
    /// [`Error::Alloc`] when the slots' memory cannot be had.
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
        let slots = card.config().preset.sensor_slots();
        let len = slot_stride * slots;
        let card_memory = card.config().card_memory_bytes;
        if base.checked_add(len).is_none_or(|end| end > card_memory) {
            return Err(Error::CardBounds {
                card_addr: base,
                len,
                card_memory,
            });
        }
        let identity_len = source.identity_len();
        if identity_len > MAX_IDENTITY_LEN || identity_len + HEADER_LEN >= source.max_frame_len() {
            return Err(FrameError::Source(format!(
                "{}: {identity_len} identity bytes (at most {MAX_IDENTITY_LEN}, and fewer than the payload)",
                source.describe()
            ))
            .into());
        }
        let mut slot_memory = MemoryKind::Host;
        for slot in 0..slots {
            slot_memory = card.map_frame_memory(base + slot * slot_stride, slot_stride)?;
        }
        Ok(SimSensor {
            card,
            source,
            fps: (fps > 0.0).then_some(fps),
            base,
            slot_stride,
            slots,
            seq: 0,
            start: None,
            scratch: Vec::new(),
            held: vec![None; slots as usize],
            identity_len,
            epoch: Instant::now(),
            slot_memory,
            rendered: 0,
            restamped: 0,
        })
    }

    /// Frames written in full so far, and frames written by rewriting header and
    /// identity bytes of a slot that held their picture.
    pub fn writes(&self) -> (u64, u64) {
        (self.rendered, self.restamped)
    }

    /// Where the frame slots are held: [`MemoryKind::CudaHost`] (page-locked, the fast
    /// path into CUDA device memory) or [`MemoryKind::Host`].
    pub fn slot_memory(&self) -> MemoryKind {
        self.slot_memory
    }

    /// Writes frame `seq`, complete at `at`, into `slot` at `card_addr`; returns its
    /// header.
    fn write_frame(
        &mut self,
        seq: u64,
        slot: usize,
        card_addr: u64,
        at: Instant,
    ) -> Result<FrameHeader> {
        let timestamp_ns = at.saturating_duration_since(self.epoch).as_nanos() as u64;
        let picture = self.source.picture(seq);
        let id = self.identity_len;
        if let (Some(held), Some(p)) = (&self.held[slot], picture)
            && held.picture == p
        {
            // The slot shows this picture: rewrite header and identity bytes only.
            let mut bytes = [0u8; HEADER_LEN + MAX_IDENTITY_LEN];
            self.source
                .identity(seq, &mut bytes[HEADER_LEN..HEADER_LEN + id]);
            let mut crc = crc32fast::Hasher::new();
            crc.update(&bytes[HEADER_LEN..HEADER_LEN + id]);
            crc.combine(&held.rest);
            let header = FrameHeader {
                seq,
                timestamp_ns,
                payload_crc: crc.finalize(),
                ..held.header
            };
            bytes[..HEADER_LEN].copy_from_slice(&header.encode());
            self.card.fpga_write(card_addr, &bytes[..HEADER_LEN + id])?;
            self.held[slot] = Some(Held {
                header,
                ..held.clone()
            });
            self.restamped += 1;
            return Ok(header);
        }
        let mut header = self.source.render(seq, &mut self.scratch);
        header.timestamp_ns = timestamp_ns;
        self.scratch[..HEADER_LEN].copy_from_slice(&header.encode());
        self.card.fpga_write(card_addr, &self.scratch)?;
        self.rendered += 1;
        // Keep what rewriting the slot's next frame needs, if it will show this picture.
        let next = seq + self.slots;
        self.held[slot] = match picture {
            Some(p) if self.source.picture(next) == Some(p) => {
                let mut rest = crc32fast::Hasher::new();
                rest.update(&self.scratch[HEADER_LEN + id..header.frame_len()]);
                Some(Held {
                    picture: p,
                    header,
                    rest,
                })
            }
            _ => None,
        };
        Ok(header)
    }
}

/// The frame a free-running sensor hands a host that asks at `now` for frame `next`:
/// `(frame, frames missed before it)`. Frame k is complete at `k / fps` s after the
/// start (`since_start`, s, is now); a slot holds a frame until the frame
/// `slots` later overwrites it, so frames older than the last `slots`
/// complete ones are gone. A frame not yet complete is the one handed (after a wait).
fn due_frame(next: u64, since_start: f64, fps: f64, slots: u64) -> (u64, u64) {
    let latest = (since_start * fps).floor() as u64;
    let oldest_kept = (latest + 1).saturating_sub(slots);
    if next < oldest_kept {
        (oldest_kept, oldest_kept - next)
    } else {
        (next, 0)
    }
}

impl FrameTrigger for SimSensor {
    fn wait_frame(&mut self, timeout: Duration) -> Result<FrameSlot> {
        let (seq, missed, arrived) = match self.fps {
            Some(fps) => {
                let now = Instant::now();
                let start = *self.start.get_or_insert(now);
                let (seq, missed) = due_frame(
                    self.seq,
                    now.duration_since(start).as_secs_f64(),
                    fps,
                    self.slots,
                );
                let due = start + Duration::from_secs_f64(seq as f64 / fps);
                if due > now + timeout {
                    std::thread::sleep(timeout);
                    return Err(Error::NoFrame { timeout });
                }
                if due > now {
                    std::thread::sleep(due - now);
                }
                (seq, missed, due)
            }
            None => (self.seq, 0, Instant::now()),
        };
        self.seq = seq + 1;
        let slot = (seq % self.slots) as usize;
        let card_addr = self.base + slot as u64 * self.slot_stride;
        let header = self.write_frame(seq, slot, card_addr, arrived)?;
        Ok(FrameSlot {
            card_addr,
            len: header.frame_len() as u64,
            seq,
            // The simulated card has no reset epoch (as a protocol 1.0 card).
            epoch: 0,
            slot: slot as u32,
            // Frames overwritten in their slot before the host asked (a free-running
            // sensor), none when the sensor renders as the host asks (fps 0).
            missed,
            queue_overflow: 0,
            // At a fixed rate, when the frame was complete; else once it is written.
            arrived: if self.fps.is_some() {
                arrived
            } else {
                Instant::now()
            },
        })
    }

    fn max_frame_len(&self) -> usize {
        self.source.max_frame_len()
    }

    fn slots(&self) -> u32 {
        self.slots as u32
    }

    fn describe(&self) -> String {
        self.source.describe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_host_gets_the_oldest_frame_still_in_its_slot_and_misses_the_rest() {
        // 1000 frames/s: frame k is complete at k ms.
        assert_eq!(due_frame(0, 0.0, 1000.0, 4), (0, 0));
        // Early: the next frame is handed (after a wait).
        assert_eq!(due_frame(5, 0.0032, 1000.0, 4), (5, 0));
        // Frames 3..=6 complete, all four still in their slots: the oldest, none missed.
        assert_eq!(due_frame(3, 0.0065, 1000.0, 4), (3, 0));
        // Frames 0..=9 complete: 6..=9 are kept, 3, 4 and 5 were overwritten.
        assert_eq!(due_frame(3, 0.0099, 1000.0, 4), (6, 3));
        // Exactly on the due time of frame 7: 4..=7 kept.
        assert_eq!(due_frame(4, 0.007, 1000.0, 4), (4, 0));
        // 16 slots (the Gen3 x8 card): frames 0..=19 complete, 4..=19 kept; a host 17
        // frames behind misses 1 where 4 slots would have lost 13.
        assert_eq!(due_frame(3, 0.0199, 1000.0, 16), (4, 1));
        assert_eq!(due_frame(3, 0.0199, 1000.0, 4), (16, 13));
    }
}
