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

use std::sync::Arc;
use std::time::{Duration, Instant};

use fpgagdr::frame::HEADER_LEN;
use fpgagdr::{Error, FrameError, FrameHeader, FrameSlot, FrameTrigger, MemoryKind, Result};

use crate::card::SimCard;
use crate::source::{FrameSource, MAX_IDENTITY_LEN};

/// Frame slots the sensor cycles through in card memory.
pub const SENSOR_SLOTS: u64 = 4;
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
    period: Option<Duration>,
    base: u64,
    slot_stride: u64,
    seq: u64,
    next_at: Option<Instant>,
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
    /// A sensor writing `source`'s frames at `fps` frames per second (0 = as fast as the
    /// capture loop asks) into [`SENSOR_SLOTS`] slots from card address `base`, each slot
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
        let len = slot_stride * SENSOR_SLOTS;
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
        for slot in 0..SENSOR_SLOTS {
            slot_memory = card.map_frame_memory(base + slot * slot_stride, slot_stride)?;
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
            held: vec![None; SENSOR_SLOTS as usize],
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

    /// Writes frame `seq` into `slot` at `card_addr`; returns its header.
    fn write_frame(&mut self, seq: u64, slot: usize, card_addr: u64) -> Result<FrameHeader> {
        let timestamp_ns = self.epoch.elapsed().as_nanos() as u64;
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
        let next = seq + SENSOR_SLOTS;
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
        let slot = (seq % SENSOR_SLOTS) as usize;
        let card_addr = self.base + slot as u64 * self.slot_stride;
        let header = self.write_frame(seq, slot, card_addr)?;
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
