//! The capture thread: waits for the card's next frame, DMAs it (C2H) into a free
//! frame-ring entry, stamps the times, and hands the entry to inference. With
//! `card.channels` above 1, one thread per C2H channel does this (each channel is a DMA
//! engine of its own, PG195): each in turn takes the trigger's next frame (under its
//! lock, where the frame wait, its timeout and the frame's place in the order are
//! decided) and asks for a frame again only once the C2H of the one it held has
//! finished; the C2Hs of different channels overlap; frames are handed to inference in
//! the order they were taken, so the ring still reads them in capture order.
//!
//! The frame of card slot s goes into a ring entry i with i mod N = s, so each entry
//! always meets the same card address and the module replays its descriptor chain.
//! An entry reads its slot up to the longest frame it has met there (the slot's tail
//! past a shorter frame is the same slot's card memory, and the entry holds the longest
//! frame), so frames whose length changes (the demo's replay of photos of different
//! sizes) still replay the chain after the longest has passed once, instead of building
//! one per frame.
//! Frames the trigger reports missed (the gap in sequence numbers) are counted here, as
//! missed or as event-queue overflow; so is overrun: the C2H is a frame read
//! (`fpgagdr::Card::read_frame`) whose torn-frame check says the card may have rewritten
//! the slot during the copy (docs/card-protocol.md, "Torn frames"; on the kernel module,
//! TRANSFER with `FPGAGDR_XFER_FRAME`), or the header, read right after the C2H, carries
//! a later sequence than the event announced. A torn frame is an overrun whatever its
//! bytes: never a checksum error, and counted also when checksums are not verified
//! (a protocol 1.0 card has no check: its header is the only one). So frames produced =
//! captured + missed + event-queue overflow, exactly, on any number of channels.
//! Next hop: the frame ring (`fpgagdr::FrameRing`, in the library), which hands the
//! entry to `pipeline/infer.rs`.
//! Per frame: one transfer call, atomics, the trigger's lock (uncontended on one
//! channel), no allocation.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fpgagdr::{FrameCheck, FrameMeta, FrameRing, FrameSlot, FrameTransfer, FrameTrigger};

use super::shared::{Shared, Thread, now_ns};
use crate::metrics::Counters;

/// Longest single wait on the frame trigger, so a stop is seen promptly.
const WAIT_SLICE: Duration = Duration::from_millis(50);

/// Capture settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CaptureParams {
    /// The first C2H channel.
    pub(crate) channel: u32,
    /// C2H channels used, `channel` up (1 to 4).
    pub(crate) channels: u32,
    pub(crate) timeout: Duration,
}

/// The trigger and what is decided under its lock.
struct Taking {
    trigger: Box<dyn FrameTrigger>,
    /// Since when the frame wait has gone unanswered (the timeout is counted once the
    /// whole `card.timeout_ms` has passed, whichever channel's thread waited).
    wait_started: Instant,
    /// The next frame's place in the order frames are handed to inference.
    next_turn: u64,
}

/// What the channel threads share.
struct Capture<'a> {
    ring: &'a FrameRing,
    shared: &'a Shared,
    stop: &'a AtomicBool,
    params: CaptureParams,
    taking: Mutex<Taking>,
    /// The place in the order of the next frame to be handed to inference.
    turn: AtomicU64,
    /// What each entry was last read from (card address, length read; `u64::MAX`: none
    /// yet): an entry that meets another card address must build a new descriptor chain
    /// (should never happen after the first lap); a longer frame than any before in its
    /// slot builds one too. An entry is claimed by one thread at a time.
    keys: Vec<[AtomicU64; 2]>,
    errors_logged: AtomicU32,
    chains: ChainCount,
}

impl Capture<'_> {
    fn log_error(&self, what: &str, e: &dyn std::fmt::Display) {
        // The first few errors are logged in full; all are counted.
        if self.errors_logged.fetch_add(1, Ordering::Relaxed) < 5 {
            tracing::warn!("capture: {what}: {e}");
        }
    }

    /// The trigger's next frame and its place in the order, waiting one slice at most;
    /// `None` when none came in it (a timeout is counted once the whole timeout passed).
    fn next_frame(&self) -> Option<(FrameSlot, u64)> {
        let c = &self.shared.counters;
        let mut t = self.taking.lock().expect("frame trigger poisoned");
        // Wait in short slices so a stop request is seen within one slice, whatever the
        // configured timeout; a timeout is counted once the whole timeout has passed.
        let timeout = self.params.timeout;
        let slice = WAIT_SLICE
            .min(timeout.saturating_sub(t.wait_started.elapsed()))
            .max(Duration::from_micros(1));
        match t.trigger.wait_frame(slice) {
            Ok(slot) => {
                t.wait_started = Instant::now();
                let turn = t.next_turn;
                t.next_turn += 1;
                Some((slot, turn))
            }
            Err(fpgagdr::Error::NoFrame { .. }) if t.wait_started.elapsed() < timeout => None,
            Err(fpgagdr::Error::NoFrame { .. }) => {
                Counters::bump(&c.frame_wait_timeouts);
                // The trigger's error names the last slice; the user set card.timeout_ms.
                let e = fpgagdr::Error::NoFrame { timeout };
                self.log_error("waiting for a frame", &format!("{e} (card.timeout_ms)"));
                t.wait_started = Instant::now();
                None
            }
            Err(e) => {
                Counters::bump(&c.transfer_errors);
                self.log_error("waiting for a frame", &e);
                t.wait_started = Instant::now();
                None
            }
        }
    }

    /// Waits until frame `turn` may be handed over (every frame taken before it was);
    /// false when a stop came first.
    fn wait_turn(&self, turn: u64) -> bool {
        let mut spins = 0u32;
        while self.turn.load(Ordering::Acquire) != turn {
            if self.stop.load(Ordering::Relaxed) {
                return false;
            }
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        true
    }

    /// One C2H channel's loop.
    fn channel(&self, channel: u32) {
        let (ring, c) = (self.ring, &self.shared.counters);
        ring.register_producer();
        let mut chains = self.chains.clone();
        while !self.stop.load(Ordering::Relaxed) {
            self.shared.beats.beat(Thread::Capture);
            let Some((slot, turn)) = self.next_frame() else {
                continue;
            };
            // On this process's clock: now, less how long ago the frame arrived.
            let t_arrived = now_ns().saturating_sub(slot.arrived.elapsed().as_nanos() as u64);
            let overflow = slot.queue_overflow.min(slot.missed);
            c.frames_missed
                .fetch_add(slot.missed - overflow, Ordering::Relaxed);
            c.event_queue_overflows
                .fetch_add(overflow, Ordering::Relaxed);
            let Some(claim) = ring.claim(slot.slot as usize, self.stop) else {
                break;
            };
            if claim.dropped().is_some() {
                Counters::bump(&c.frames_dropped);
            }
            let index = claim.index();
            let key = &self.keys[index];
            let last = match key[0].load(Ordering::Relaxed) {
                u64::MAX => None,
                addr => Some((addr, key[1].load(Ordering::Relaxed))),
            };
            let len = read_len(last, slot.card_addr, slot.len);
            if let Some((addr, _)) = last.filter(|&(addr, _)| addr != slot.card_addr) {
                self.log_error(
                    "frame ring",
                    &format!(
                        "entry {index} was read from {addr:#x} and now from {:#x} (slot {}): its descriptor chain is rebuilt",
                        slot.card_addr, slot.slot
                    ),
                );
            }
            key[0].store(slot.card_addr, Ordering::Relaxed);
            key[1].store(len, Ordering::Relaxed);
            let t_submit = now_ns();
            let filled = match claim.read_frame(channel, &slot, len, self.params.timeout) {
                Ok(FrameTransfer { transfer: t, check }) => {
                    let t_done = now_ns();
                    Counters::bump(&c.frames_captured);
                    c.bytes_captured.fetch_add(t.bytes, Ordering::Relaxed);
                    chains.update(ring.card(), c, false);
                    if check == FrameCheck::Torn {
                        // The card may have rewritten the slot while the C2H read it (the
                        // torn-frame check after the copy): overrun, whatever the bytes,
                        // so the header is not read.
                        Counters::bump(&c.frames_overrun);
                        None
                    } else {
                        match claim.header(len).map(|h| h.seq) {
                            Some(seq) if seq > slot.seq => {
                                // The card wrote a later frame into the slot before (or while)
                                // the C2H read it: overrun.
                                Counters::bump(&c.frames_overrun);
                                None
                            }
                            Some(seq) if seq < slot.seq => {
                                Counters::bump(&c.sequence_errors);
                                self.log_error(
                                    "frame check",
                                    &format!(
                                        "slot {} announced frame {} but holds frame {seq}",
                                        slot.slot, slot.seq
                                    ),
                                );
                                None
                            }
                            // The frame, or a header the inference thread rejects and counts.
                            _ => Some(FrameMeta {
                                seq: slot.seq,
                                bytes: t.bytes,
                                t_arrived,
                                t_submit,
                                t_done,
                            }),
                        }
                    }
                }
                Err(e) => {
                    Counters::bump(&c.transfer_errors);
                    self.log_error("C2H transfer", &e);
                    None
                }
            };
            // Handed over in the order taken (at once on one channel).
            if !self.wait_turn(turn) {
                break;
            }
            match filled {
                Some(meta) => claim.publish(meta),
                None => claim.abandon(),
            }
            self.turn.store(turn + 1, Ordering::Release);
        }
        chains.update(ring.card(), c, true);
    }
}

pub(crate) fn run(
    ring: Arc<FrameRing>,
    trigger: Box<dyn FrameTrigger>,
    params: CaptureParams,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
) {
    let capture = Capture {
        ring: &ring,
        shared: &shared,
        stop: &stop,
        params,
        taking: Mutex::new(Taking {
            trigger,
            wait_started: Instant::now(),
            next_turn: 0,
        }),
        turn: AtomicU64::new(0),
        keys: (0..ring.len())
            .map(|_| [AtomicU64::new(u64::MAX), AtomicU64::new(0)])
            .collect(),
        errors_logged: AtomicU32::new(0),
        chains: ChainCount::start(ring.card(), &shared.counters),
    };
    let first = params.channel;
    if params.channels <= 1 {
        capture.channel(first);
        return;
    }
    std::thread::scope(|s| {
        for channel in first + 1..first + params.channels {
            let capture = &capture;
            std::thread::Builder::new()
                .name(format!("fpgagdr-c2h{channel}"))
                .spawn_scoped(s, move || capture.channel(channel))
                .expect("spawn a C2H channel thread");
        }
        capture.channel(first);
    });
}

/// How many bytes to read for a frame of `len` bytes at `card_addr` into an entry last
/// read `last` (card address, length): up to the longest frame the entry has met in
/// this slot, so the C2H repeats the entry's last one and the module replays its chain;
/// `len` itself for a new entry or another card address. The longer read stays inside
/// the slot (an earlier frame of that length fitted there) and the entry (it held it).
fn read_len(last: Option<(u64, u64)>, card_addr: u64, len: u64) -> u64 {
    match last {
        Some((addr, read)) if addr == card_addr => read.max(len),
        _ => len,
    }
}

/// How often the chain cache's counters are read from the card (one `GET_STATUS` on
/// the kernel back-end): every this many frames, and when capture stops.
const CHAIN_READ_EVERY: u32 = 16;

/// The card's chain-cache counters as this run sees them: the service's counters are
/// the totals of earlier runs plus the card's counts since this run started. Each
/// channel thread keeps a copy (the card's counters cover every channel).
#[derive(Clone)]
struct ChainCount {
    card_start: Option<fpgagdr::ChainCache>,
    before: fpgagdr::ChainCache,
    frames: u32,
}

impl ChainCount {
    fn start(card: &fpgagdr::Card, c: &Counters) -> Self {
        let v = c.read();
        ChainCount {
            card_start: card.chain_cache(),
            before: fpgagdr::ChainCache {
                hits: v.chain_cache_hits,
                misses: v.chain_cache_misses,
            },
            frames: 0,
        }
    }

    fn update(&mut self, card: &fpgagdr::Card, c: &Counters, now: bool) {
        self.frames += 1;
        if !now && !self.frames.is_multiple_of(CHAIN_READ_EVERY) {
            return;
        }
        let (Some(start), Some(card_now)) = (self.card_start, card.chain_cache()) else {
            return;
        };
        let run = card_now.since(start);
        c.chain_cache_hits
            .store(self.before.hits + run.hits, Ordering::Relaxed);
        c.chain_cache_misses
            .store(self.before.misses + run.misses, Ordering::Relaxed);
    }
}

/// The feed of `Supervisor::start_inference_only`: fills every ring entry once from the
/// card (a frame wait and a C2H each, as `run` does), then hands each entry the
/// inference thread releases straight back as a new frame, bytes as they are, so the
/// inference stage runs on a ring that is always full. Counts only the first fills as
/// captured.
pub(crate) fn recycle(
    ring: Arc<FrameRing>,
    mut trigger: Box<dyn FrameTrigger>,
    params: CaptureParams,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
) {
    ring.register_producer();
    let c = &shared.counters;
    // Bytes of the frame in each entry; 0 = not filled yet.
    let mut lens = vec![0u64; ring.len()];
    let mut seq = 0u64;
    // The entries in turn, slot by slot (the ring hands out an entry of a given card
    // slot); the inference thread releases them in the same order.
    let mut turn = 0usize;
    while !stop.load(Ordering::Relaxed) {
        shared.beats.beat(Thread::Capture);
        let Some(claim) = ring.claim(turn, &stop) else {
            break;
        };
        turn = turn.wrapping_add(1);
        let index = claim.index();
        let t_submit = now_ns();
        if lens[index] == 0 {
            let filled = trigger.wait_frame(params.timeout).and_then(|slot| {
                claim.read_c2h(params.channel, slot.card_addr, slot.len, params.timeout)
            });
            match filled {
                Ok(t) => {
                    Counters::bump(&c.frames_captured);
                    c.bytes_captured.fetch_add(t.bytes, Ordering::Relaxed);
                    lens[index] = t.bytes;
                }
                Err(e) => {
                    claim.abandon();
                    shared.fail(format!("filling the frame ring: {e}"));
                    stop.store(true, Ordering::Relaxed);
                    return;
                }
            }
        }
        seq += 1;
        claim.publish(FrameMeta {
            seq,
            bytes: lens[index],
            // No frame-done interrupt: the frame is "there" when its entry is.
            t_arrived: t_submit,
            t_submit,
            t_done: now_ns(),
        });
    }
}
