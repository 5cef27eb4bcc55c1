//! The capture thread: waits for the card's next frame, DMAs it (C2H) into a free
//! frame-ring entry, stamps the times, and hands the entry to inference.
//!
//! The frame of card slot s goes into a ring entry i with i mod N = s, so each entry
//! always meets the same card address and the module replays its descriptor chain.
//! An entry reads its slot up to the longest frame it has met there (the slot's tail
//! past a shorter frame is the same slot's card memory, and the entry holds the longest
//! frame), so frames whose length changes (the demo's replay of photos of different
//! sizes) still replay the chain after the longest has passed once, instead of building
//! one per frame.
//! Frames the trigger reports missed (the gap in sequence numbers) are counted here, as
//! missed or as event-queue overflow; so is overrun (the header, read right after the
//! C2H, carries a later sequence than the event announced).
//! Next hop: the frame ring (`fpgagdr::FrameRing`, in the library), which hands the
//! entry to `pipeline/infer.rs`.
//! Per frame: one transfer call, atomics, no allocation, no lock of ours.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use fpgagdr::{FrameMeta, FrameRing, FrameTrigger};

use super::shared::{Shared, Thread, now_ns};
use crate::metrics::Counters;

/// Longest single wait on the frame trigger, so a stop is seen promptly.
const WAIT_SLICE: Duration = Duration::from_millis(50);

/// Capture settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CaptureParams {
    pub(crate) channel: u32,
    pub(crate) timeout: Duration,
}

pub(crate) fn run(
    ring: Arc<FrameRing>,
    mut trigger: Box<dyn FrameTrigger>,
    params: CaptureParams,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
) {
    ring.register_producer();
    let c = &shared.counters;
    let mut errors_logged = 0u32;
    let mut log_error = |what: &str, e: &dyn std::fmt::Display| {
        // The first few errors are logged in full; all are counted.
        if errors_logged < 5 {
            tracing::warn!("capture: {what}: {e}");
            errors_logged += 1;
        }
    };
    let mut chains = ChainCount::start(ring.card(), c);
    // What each entry was last read from (card address, length read): an entry that
    // meets another card address must build a new descriptor chain (should never happen
    // after the first lap); a longer frame than any before in its slot builds one too.
    let mut keys: Vec<Option<(u64, u64)>> = vec![None; ring.len()];
    let mut wait_started = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        shared.beats.beat(Thread::Capture);
        // Wait in short slices so a stop request is seen within one slice, whatever the
        // configured timeout; a timeout is counted once the whole timeout has passed.
        let waited = wait_started.elapsed();
        let slice = WAIT_SLICE
            .min(params.timeout.saturating_sub(waited))
            .max(Duration::from_micros(1));
        let slot = match trigger.wait_frame(slice) {
            Ok(slot) => slot,
            Err(fpgagdr::Error::NoFrame { .. }) if wait_started.elapsed() < params.timeout => {
                continue;
            }
            Err(fpgagdr::Error::NoFrame { .. }) => {
                Counters::bump(&c.frame_wait_timeouts);
                // The trigger's error names the last slice; the user set card.timeout_ms.
                let e = fpgagdr::Error::NoFrame {
                    timeout: params.timeout,
                };
                log_error("waiting for a frame", &format!("{e} (card.timeout_ms)"));
                wait_started = Instant::now();
                continue;
            }
            Err(e) => {
                Counters::bump(&c.transfer_errors);
                log_error("waiting for a frame", &e);
                wait_started = Instant::now();
                continue;
            }
        };
        wait_started = Instant::now();
        // On this process's clock: now, less how long ago the frame arrived.
        let t_arrived = now_ns().saturating_sub(slot.arrived.elapsed().as_nanos() as u64);
        let overflow = slot.queue_overflow.min(slot.missed);
        c.frames_missed
            .fetch_add(slot.missed - overflow, Ordering::Relaxed);
        c.event_queue_overflows
            .fetch_add(overflow, Ordering::Relaxed);
        let Some(claim) = ring.claim(slot.slot as usize, &stop) else {
            break;
        };
        if claim.dropped().is_some() {
            Counters::bump(&c.frames_dropped);
        }
        let index = claim.index();
        let len = read_len(keys[index], slot.card_addr, slot.len);
        if let Some((addr, _)) = keys[index].filter(|&(addr, _)| addr != slot.card_addr) {
            log_error(
                "frame ring",
                &format!(
                    "entry {index} was read from {addr:#x} and now from {:#x} (slot {}): its descriptor chain is rebuilt",
                    slot.card_addr, slot.slot
                ),
            );
        }
        keys[index] = Some((slot.card_addr, len));
        let t_submit = now_ns();
        match claim.read_c2h(params.channel, slot.card_addr, len, params.timeout) {
            Ok(t) => {
                let t_done = now_ns();
                Counters::bump(&c.frames_captured);
                c.bytes_captured.fetch_add(t.bytes, Ordering::Relaxed);
                chains.update(ring.card(), c, false);
                match claim.header(len).map(|h| h.seq) {
                    Some(seq) if seq > slot.seq => {
                        // The card wrote a later frame into the slot before (or while)
                        // the C2H read it: overrun.
                        claim.abandon();
                        Counters::bump(&c.frames_overrun);
                        continue;
                    }
                    Some(seq) if seq < slot.seq => {
                        claim.abandon();
                        Counters::bump(&c.sequence_errors);
                        log_error(
                            "frame check",
                            &format!(
                                "slot {} announced frame {} but holds frame {seq}",
                                slot.slot, slot.seq
                            ),
                        );
                        continue;
                    }
                    // The frame, or a header the inference thread rejects and counts.
                    _ => {}
                }
                claim.publish(FrameMeta {
                    seq: slot.seq,
                    bytes: t.bytes,
                    t_arrived,
                    t_submit,
                    t_done,
                });
            }
            Err(e) => {
                claim.abandon();
                Counters::bump(&c.transfer_errors);
                log_error("C2H transfer", &e);
            }
        }
    }
    chains.update(ring.card(), c, true);
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
/// the totals of earlier runs plus the card's counts since this run started.
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
