//! The frame ring: entries pinned once, the lock-free hand-off of each entry between the
//! thread that fills it (C2H) and the thread that reads it, and the only ways to read
//! an entry's bytes.
//!
//! Owns: [`FrameRing`], its entry states, [`WhenFull`], [`FrameMeta`], and the two
//! tokens an entry is handed over as: [`Filling`] (the producer's: an entry claimed for
//! a C2H) and [`Held`] (the consumer's: a filled entry taken for reading). Must not:
//! know what a frame means beyond its header (inference is `fpgagdr-infer`'s).
//!
//! Each entry has one atomic word holding its state and the sequence number of the
//! frame in it:
//!
//! ```text
//!   Free --claim--> Filling --publish--> Ready --take--> InUse
//!    ^                 |  (abandon)        |               |
//!    +-----------------+                   | drop-oldest:  |
//!    +--------------- release -------------|- claim steals-+
//! ```
//!
//! Why reading an entry through a token is safe (the proof the `unsafe` blocks below
//! rely on): a C2H writes an entry only through [`Filling::read_c2h`] or
//! [`Filling::read_frame`], and a `Filling` exists only for an entry in state Filling; a
//! [`Held`] exists only for an entry in state InUse. Every change of state is a compare-and-swap from the state the taker
//! expects, claim only ever moves Free or Ready entries and take only Ready ones, so one
//! entry is never Filling and InUse at once, and at most one token of each exists for
//! it. The entries' buffers are private to the ring: nothing else can start a C2H into
//! one. A token gives its entry back when it is consumed or dropped.
//!
//! The ring has k × N entries for a card with N frame slots (k ≥ 2), and the frame of
//! slot s only ever goes into an entry i with i mod N = s: every entry then always meets
//! the same card address and length, so the descriptor chain the kernel module built for
//! it on the first lap is replayed on every later one (docs/architecture.md, "Follow one
//! frame"). The consumer always takes the Ready entry with the lowest sequence number,
//! so frames are read in capture order; with several producers (one thread per C2H
//! channel) that holds because they publish in sequence order (the service's capture
//! threads take turns). Under [`WhenFull::DropOldest`] a producer with
//! no Free entry for its slot steals the oldest Ready one of that slot (a
//! compare-and-swap, so it never races the consumer taking the same entry); the claim
//! says which frame it overwrote. Per-frame timestamps travel in atomics beside the
//! state word, written before the state's Release store and read after the Acquire
//! load. Waiting sides park with a short timeout and are unparked by the other side, so
//! a stop request is seen within milliseconds.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::Thread;
use std::time::Duration;

use crate::buffer::PinnedBuffer;
use crate::card::Card;
use crate::dma::{FrameTransfer, Transfer};
use crate::error::Result;
use crate::frame::{FrameHeader, HEADER_LEN};
use crate::trigger::FrameSlot;

/// What capture does when every ring entry is full or in use.
// (The doc lines are the service's config schema's words: `ring.when_full`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum WhenFull {
    /// Reuse the entry of the oldest frame not yet inferred; it is counted as dropped.
    /// Latency stays bounded; throughput follows the sensor.
    #[default]
    DropOldest,
    /// Wait for inference to release an entry. Nothing is dropped in the ring; the
    /// sensor's frames wait in card memory instead.
    Wait,
}

const FREE: u64 = 0;
const FILLING: u64 = 1;
const READY: u64 = 2;
const IN_USE: u64 = 3;
const PARK: Duration = Duration::from_millis(2);

fn word(state: u64, seq: u64) -> u64 {
    (seq << 2) | state
}

/// Timestamps and size of the frame in an entry (ns of the caller's monotonic clock).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameMeta {
    /// Sensor sequence number.
    pub seq: u64,
    /// Bytes moved by the C2H (header included).
    pub bytes: u64,
    /// The frame was complete in card memory (the frame-done interrupt's arrival).
    pub t_arrived: u64,
    /// C2H submitted.
    pub t_submit: u64,
    /// C2H completed (the entry became Ready).
    pub t_done: u64,
}

#[derive(Debug, Default)]
struct Entry {
    state: AtomicU64,
    bytes: AtomicU64,
    t_arrived: AtomicU64,
    t_submit: AtomicU64,
    t_done: AtomicU64,
}

/// The frame ring: a card, the entries it pinned once, and their states.
#[derive(Debug)]
pub struct FrameRing {
    card: Card,
    buffers: Vec<PinnedBuffer>,
    entries: Vec<Entry>,
    slots: usize,
    when_full: WhenFull,
    /// The producer threads (one per C2H channel in use), unparked when an entry is
    /// freed.
    producers: [OnceLock<Thread>; MAX_PRODUCERS],
    consumer: OnceLock<Thread>,
}

/// Most producer threads a ring wakes: one per C2H channel, and an XDMA has at most four
/// (PG195).
pub const MAX_PRODUCERS: usize = 4;

impl FrameRing {
    /// A ring over `buffers` (pinned by `card`, one per entry) for a card with `slots`
    /// frame slots.
    ///
    /// # Panics
    /// Unless `buffers.len()` = k × `slots` with k ≥ 2 (so a slot always has an entry the
    /// consumer does not hold).
    pub fn new(card: Card, buffers: Vec<PinnedBuffer>, slots: usize, when_full: WhenFull) -> Self {
        let n = buffers.len();
        assert!(
            slots >= 1 && n >= 2 * slots && n.is_multiple_of(slots),
            "a frame ring has k x N entries, k >= 2"
        );
        FrameRing {
            card,
            buffers,
            entries: (0..n).map(|_| Entry::default()).collect(),
            slots,
            when_full,
            producers: Default::default(),
            consumer: OnceLock::new(),
        }
    }

    /// The card the entries are pinned by (its status, its chain-cache counters).
    pub fn card(&self) -> &Card {
        &self.card
    }

    /// Entries in the ring.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the ring has no entry (never: a ring has at least two).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Registers the calling thread as a producer (unparked when an entry is freed). Up
    /// to [`MAX_PRODUCERS`] threads (one per C2H channel) may register; a further one is
    /// not woken by releases and sees a freed entry on its next park timeout (2 ms).
    pub fn register_producer(&self) {
        let me = std::thread::current();
        for p in &self.producers {
            match p.get() {
                Some(t) if t.id() == me.id() => return,
                Some(_) => {}
                None => {
                    if p.set(me.clone()).is_ok() {
                        return;
                    }
                }
            }
        }
    }

    /// Unparks every registered producer.
    fn wake_producers(&self) {
        for t in self.producers.iter().map_while(OnceLock::get) {
            t.unpark();
        }
    }

    /// Registers the calling thread as the consumer (unparked when a frame is ready).
    pub fn register_consumer(&self) {
        let _ = self.consumer.set(std::thread::current());
    }

    /// The entries card slot `slot` may fill: `slot`, `slot + N`, `slot + 2N`, ...
    fn of_slot(&self, slot: usize) -> impl Iterator<Item = (usize, &Entry)> {
        self.entries
            .iter()
            .enumerate()
            .skip(slot % self.slots)
            .step_by(self.slots)
    }

    /// Producer: claims an entry for the frame of card slot `slot` (one whose index is
    /// `slot` mod N), waiting for one under [`WhenFull::Wait`]. `None` once `stop` is
    /// set.
    pub fn claim(&self, slot: usize, stop: &AtomicBool) -> Option<Filling<'_>> {
        loop {
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            for (index, e) in self.of_slot(slot) {
                let s = e.state.load(Ordering::Acquire);
                if s & 3 == FREE
                    && e.state
                        .compare_exchange(s, word(FILLING, 0), Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                {
                    return Some(Filling::new(self, index, None));
                }
            }
            if self.when_full == WhenFull::DropOldest
                && let Some((index, s)) = Self::oldest(self.of_slot(slot))
            {
                if self.entries[index]
                    .state
                    .compare_exchange(s, word(FILLING, 0), Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    return Some(Filling::new(self, index, Some(s >> 2)));
                }
                continue;
            }
            std::thread::park_timeout(PARK);
        }
    }

    /// Consumer: takes the oldest Ready frame, waiting for one. `None` once `stop` is
    /// set, or after `max_wait` with nothing ready (so the caller can do periodic work).
    pub fn take(&self, stop: &AtomicBool, max_wait: Duration) -> Option<Held<'_>> {
        let deadline = std::time::Instant::now() + max_wait;
        loop {
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            // One scan is not a snapshot: an older frame can be published into an entry
            // the scan already passed, and a newer one into an entry it has yet to read.
            // But every frame older than a Ready one was published before it, so once a
            // first scan has seen a Ready frame, a second scan sees all older ones.
            if self.oldest_ready().is_some()
                && let Some((index, s)) = self.oldest_ready()
            {
                let e = &self.entries[index];
                if e.state
                    .compare_exchange(s, word(IN_USE, s >> 2), Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    let meta = FrameMeta {
                        seq: s >> 2,
                        bytes: e.bytes.load(Ordering::Relaxed),
                        t_arrived: e.t_arrived.load(Ordering::Relaxed),
                        t_submit: e.t_submit.load(Ordering::Relaxed),
                        t_done: e.t_done.load(Ordering::Relaxed),
                    };
                    return Some(Held {
                        ring: self,
                        index,
                        meta,
                    });
                }
                continue;
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                return None;
            }
            std::thread::park_timeout(PARK.min(deadline - now));
        }
    }

    fn set_free(&self, index: usize) {
        self.entries[index]
            .state
            .store(word(FREE, 0), Ordering::Release);
    }

    fn oldest_ready(&self) -> Option<(usize, u64)> {
        Self::oldest(self.entries.iter().enumerate())
    }

    fn oldest<'a>(entries: impl Iterator<Item = (usize, &'a Entry)>) -> Option<(usize, u64)> {
        entries
            .map(|(i, e)| (i, e.state.load(Ordering::Acquire)))
            .filter(|(_, s)| s & 3 == READY)
            .min_by_key(|(_, s)| s >> 2)
    }
}

/// The producer's token for an entry in state Filling: the C2H into it, a look at the
/// header it brought, then [`Filling::publish`]. Dropped without publishing, the entry is
/// free again (an abandoned frame).
#[derive(Debug)]
pub struct Filling<'r> {
    ring: &'r FrameRing,
    index: usize,
    dropped: Option<u64>,
}

impl<'r> Filling<'r> {
    fn new(ring: &'r FrameRing, index: usize, dropped: Option<u64>) -> Self {
        Filling {
            ring,
            index,
            dropped,
        }
    }

    /// The entry's index.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The sequence number of a Ready frame this claim overwrote (drop-oldest), if any.
    pub fn dropped(&self) -> Option<u64> {
        self.dropped
    }

    /// The entry's length, bytes.
    pub fn entry_len(&self) -> usize {
        self.ring.buffers[self.index].len()
    }

    /// C2H of `len` bytes from `card_addr` on `channel` into this entry (see
    /// [`Card::read_c2h`]: its rules and errors).
    pub fn read_c2h(
        &self,
        channel: u32,
        card_addr: u64,
        len: u64,
        timeout: Duration,
    ) -> Result<Transfer> {
        self.ring.card.read_c2h(
            channel,
            &self.ring.buffers[self.index],
            card_addr,
            len,
            timeout,
        )
    }

    /// C2H of the frame `slot` announced into this entry, `len` bytes (at least
    /// `slot.len`), with the back-end's torn-frame check (see [`Card::read_frame`]: its
    /// verdict, rules and errors).
    pub fn read_frame(
        &self,
        channel: u32,
        slot: &FrameSlot,
        len: u64,
        timeout: Duration,
    ) -> Result<FrameTransfer> {
        self.ring
            .card
            .read_frame(channel, &self.ring.buffers[self.index], slot, len, timeout)
    }

    /// The header of the frame this entry holds (`len` bytes were moved into it), or
    /// `None` when it does not parse or cannot be read. One 64-byte read: a memory copy
    /// for host memory, a device-to-host copy for CUDA device memory.
    pub fn header(&self, len: u64) -> Option<FrameHeader> {
        let mut hdr = [0u8; HEADER_LEN];
        #[allow(unsafe_code)]
        // SAFETY: this entry is Filling and this token is its only one (module docs): the
        // only C2H into it is this token's own `read_c2h` or `read_frame`, which has
        // returned (they take `&self` and this call does too, on the one thread that owns
        // the token).
        let read = unsafe { self.ring.buffers[self.index].copy_to_host(0, &mut hdr) };
        read.ok()?;
        FrameHeader::parse(&hdr, len as usize).ok()
    }

    /// Hands the frame to the consumer (the entry becomes Ready).
    pub fn publish(self, meta: FrameMeta) {
        let e = &self.ring.entries[self.index];
        e.bytes.store(meta.bytes, Ordering::Relaxed);
        e.t_arrived.store(meta.t_arrived, Ordering::Relaxed);
        e.t_submit.store(meta.t_submit, Ordering::Relaxed);
        e.t_done.store(meta.t_done, Ordering::Relaxed);
        e.state.store(word(READY, meta.seq), Ordering::Release);
        let ring = self.ring;
        std::mem::forget(self);
        if let Some(t) = ring.consumer.get() {
            t.unpark();
        }
    }

    /// Gives the entry up (the C2H failed, or the frame is not to be read).
    pub fn abandon(self) {
        // Drop frees it.
    }
}

impl Drop for Filling<'_> {
    fn drop(&mut self) {
        self.ring.set_free(self.index);
    }
}

/// The consumer's token for an entry in state InUse: no C2H writes the entry while it
/// lives. Released (the entry Free again, the producer unparked) when consumed by
/// [`Held::release`] or dropped.
#[derive(Debug)]
pub struct Held<'r> {
    ring: &'r FrameRing,
    index: usize,
    meta: FrameMeta,
}

impl Held<'_> {
    /// The entry's index.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The frame's sequence number, size and times.
    pub fn meta(&self) -> FrameMeta {
        self.meta
    }

    /// Copies `dst.len()` bytes of the entry from `offset` into `dst` (a memory copy for
    /// host memory, a device-to-host copy for CUDA device memory). Errors: the range is
    /// outside the entry, or the copy failed.
    pub fn copy_to_host(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        #[allow(unsafe_code)]
        // SAFETY: this entry is InUse and this token is its only one (module docs): no
        // C2H runs into it until the token is released.
        unsafe {
            self.ring.buffers[self.index].copy_to_host(offset, dst)
        }
    }

    /// The entry's pinned buffer, for a reader that reads it in place (a GPU kernel, a
    /// host slice).
    ///
    /// # Safety
    /// The caller starts no C2H into the returned buffer (the ring itself starts none
    /// while this token lives); reads through it are then free of C2H until the token is
    /// released.
    #[allow(unsafe_code)]
    pub unsafe fn buffer(&self) -> &PinnedBuffer {
        &self.ring.buffers[self.index]
    }

    /// Gives the entry back to the producer.
    pub fn release(self) {
        // Drop releases it.
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.ring.set_free(self.index);
        self.ring.wake_producers();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{Backend, PinnedRegion};
    use crate::dma::{Handle, TransferRequest};
    use crate::status::{Capabilities, CardStatus, Platform};
    use crate::{DmaMemory, Error};
    use std::sync::{Arc, Mutex};

    /// A test double of a card (no card here): a C2H writes the byte `card_addr as u8`
    /// everywhere it moves. These tests are about the entry states and who may read an
    /// entry, not about the copies.
    #[derive(Debug, Default)]
    struct CardDouble {
        pins: Mutex<Vec<Arc<PinnedRegion>>>,
    }

    impl Backend for CardDouble {
        fn status(&self) -> CardStatus {
            CardStatus {
                name: "frame-ring test double".into(),
                platform: Platform::Desktop,
                simulated: true,
                gpu_page_size: 4096,
                alignment: 4096,
                c2h_channels: 1,
                h2c_channels: 1,
                card_memory_bytes: 1 << 20,
                capabilities: Capabilities {
                    gpu_direct: false,
                    host_dma: true,
                    interrupts: false,
                },
            }
        }
        fn pin(&self, region: Arc<PinnedRegion>) -> Result<Handle> {
            let mut pins = self.pins.lock().unwrap();
            pins.push(region);
            Ok(Handle(pins.len() as u64))
        }
        fn unpin(&self, _: Handle) -> Result<()> {
            Ok(())
        }
        fn transfer(&self, req: &TransferRequest) -> Result<Transfer> {
            let region = self.pins.lock().unwrap()[req.handle.0 as usize - 1].clone();
            let bytes = vec![req.card_addr as u8; req.len as usize];
            region
                .access(|m| m.write(req.offset, &bytes))
                .ok_or(Error::ZeroTimeout)??;
            Ok(Transfer {
                bytes: req.len,
                elapsed: Duration::ZERO,
            })
        }
        fn host_read(&self, _: u32, _: u64, _: &mut [u8], _: Duration) -> Result<Transfer> {
            Err(Error::ZeroTimeout)
        }
        fn host_write(&self, _: u32, _: u64, _: &[u8], _: Duration) -> Result<Transfer> {
            Err(Error::ZeroTimeout)
        }
    }

    fn ring(entries: usize, slots: usize, when_full: WhenFull) -> FrameRing {
        let card = Card::from_backend(Arc::new(CardDouble::default()));
        let buffers = (0..entries)
            .map(|_| card.pin(DmaMemory::host(4096, 4096).unwrap()).unwrap())
            .collect();
        FrameRing::new(card, buffers, slots, when_full)
    }

    fn meta(seq: u64) -> FrameMeta {
        FrameMeta {
            seq,
            bytes: 10,
            t_arrived: 0,
            t_submit: 1,
            t_done: 2,
        }
    }

    fn fill(r: &FrameRing, slot: usize, seq: u64, stop: &AtomicBool) -> Option<u64> {
        let c = r.claim(slot, stop).unwrap();
        let dropped = c.dropped();
        c.publish(meta(seq));
        dropped
    }

    #[test]
    fn frames_come_out_in_capture_order() {
        let r = ring(4, 1, WhenFull::Wait);
        let stop = AtomicBool::new(false);
        for seq in [5, 6, 7] {
            fill(&r, 0, seq, &stop);
        }
        let got: Vec<u64> = (0..3)
            .map(|_| r.take(&stop, PARK).unwrap().meta().seq)
            .collect();
        assert_eq!(got, [5, 6, 7]);
        assert!(r.take(&stop, Duration::from_millis(1)).is_none());
    }

    #[test]
    fn drop_oldest_steals_the_oldest_ready_entry() {
        let r = ring(2, 1, WhenFull::DropOldest);
        let stop = AtomicBool::new(false);
        for seq in 0..2 {
            assert_eq!(fill(&r, 0, seq, &stop), None);
        }
        assert_eq!(fill(&r, 0, 2, &stop), Some(0));
        assert_eq!(r.take(&stop, PARK).unwrap().meta().seq, 1);
    }

    #[test]
    fn a_held_entry_is_never_claimed_and_comes_back_when_released() {
        let r = ring(2, 1, WhenFull::DropOldest);
        let stop = AtomicBool::new(false);
        fill(&r, 0, 0, &stop);
        let held = r.take(&stop, PARK).unwrap();
        // Drop-oldest steals Ready entries only: the held one is not touched.
        for seq in 1..5 {
            let c = r.claim(0, &stop).unwrap();
            assert_ne!(c.index(), held.index(), "frame {seq}");
            c.publish(meta(seq));
        }
        let index = held.index();
        held.release();
        let c = r.claim(0, &stop).unwrap();
        assert_eq!(c.index(), index, "the released entry is free");
    }

    #[test]
    fn an_abandoned_or_dropped_claim_frees_its_entry() {
        let r = ring(2, 1, WhenFull::Wait);
        let stop = AtomicBool::new(false);
        let c = r.claim(0, &stop).unwrap();
        let i = c.index();
        c.abandon();
        let c = r.claim(0, &stop).unwrap();
        assert_eq!(c.index(), i);
        drop(c);
        assert!(r.take(&stop, Duration::from_millis(1)).is_none());
        assert_eq!(r.claim(0, &stop).unwrap().index(), i);
    }

    #[test]
    fn a_token_reads_what_the_c2h_wrote() {
        let r = ring(2, 1, WhenFull::Wait);
        let stop = AtomicBool::new(false);
        let c = r.claim(0, &stop).unwrap();
        // The double writes 7s: a header that does not parse.
        c.read_c2h(0, 7, 128, Duration::from_millis(100)).unwrap();
        assert!(c.header(128).is_none());
        c.publish(meta(1));
        let h = r.take(&stop, PARK).unwrap();
        let mut bytes = [1u8; 16];
        h.copy_to_host(0, &mut bytes).unwrap();
        assert_eq!(bytes, [7u8; 16]);
        assert!(
            h.copy_to_host(4090, &mut bytes).is_err(),
            "outside the entry"
        );
    }

    #[test]
    fn wait_mode_blocks_until_release_or_stop() {
        let r = Arc::new(ring(2, 1, WhenFull::Wait));
        let stop = Arc::new(AtomicBool::new(false));
        for seq in 0..2 {
            fill(&r, 0, seq, &stop);
        }
        let (r2, s2) = (r.clone(), stop.clone());
        let producer = std::thread::spawn(move || {
            r2.register_producer();
            r2.claim(0, &s2).map(|c| (c.index(), c.dropped()))
        });
        let held = r.take(&stop, PARK).unwrap();
        let i = held.index();
        held.release();
        assert_eq!(producer.join().unwrap(), Some((i, None)));
        stop.store(true, Ordering::Relaxed);
        assert!(r.claim(0, &stop).is_none());
    }

    #[test]
    fn a_slot_only_ever_meets_its_own_entries() {
        // 3 slots x k = 2: slot s fills entries s and s + 3, whatever else is free.
        let r = ring(6, 3, WhenFull::DropOldest);
        let stop = AtomicBool::new(false);
        let mut dropped = 0;
        for seq in 0..60u64 {
            let slot = (seq % 3) as usize;
            let c = r.claim(slot, &stop).unwrap();
            assert_eq!(
                c.index() % 3,
                slot,
                "frame {seq} went to entry {}",
                c.index()
            );
            dropped += c.dropped().is_some() as u64;
            c.publish(meta(seq));
            if seq % 4 == 0 {
                let h = r.take(&stop, PARK).unwrap();
                assert_eq!(h.index() % 3, (h.meta().seq % 3) as usize);
            }
        }
        assert!(dropped > 0, "drop-oldest stole within the slot");
    }

    #[test]
    fn drop_oldest_steals_only_within_the_slot() {
        let r = ring(4, 2, WhenFull::DropOldest);
        let stop = AtomicBool::new(false);
        // slot 0 fills entries 0 and 2, slot 1 fills entry 1; entry 3 stays free.
        for (seq, slot) in [(0, 0), (1, 1), (2, 0)] {
            fill(&r, slot, seq, &stop);
        }
        let c = r.claim(0, &stop).unwrap();
        assert_eq!(
            (c.index(), c.dropped()),
            (0, Some(0)),
            "the oldest of slot 0, not free entry 3"
        );
    }

    #[test]
    fn concurrent_producer_and_consumer_lose_nothing_in_wait_mode() {
        for _ in 0..5 {
            let r = Arc::new(ring(3, 1, WhenFull::Wait));
            let stop = Arc::new(AtomicBool::new(false));
            let (rp, sp) = (r.clone(), stop.clone());
            let n = 20_000u64;
            let producer = std::thread::spawn(move || {
                rp.register_producer();
                for seq in 0..n {
                    rp.claim(0, &sp).unwrap().publish(meta(seq));
                }
            });
            r.register_consumer();
            let mut next = 0;
            while next < n {
                if let Some(h) = r.take(&stop, Duration::from_secs(5)) {
                    assert_eq!(h.meta().seq, next);
                    next += 1;
                }
            }
            producer.join().unwrap();
        }
    }

    #[test]
    fn several_producers_taking_turns_are_each_woken_and_lose_nothing() {
        // Four C2H channel threads over 2 slots x k = 2 in wait mode: each claims for its
        // frame's slot, publishes in sequence order, and parks while the ring is full
        // (so every one must be woken by releases).
        let r = Arc::new(ring(4, 2, WhenFull::Wait));
        let stop = Arc::new(AtomicBool::new(false));
        let (tickets, turn) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let n = 8_000u64;
        let producers: Vec<_> = (0..MAX_PRODUCERS)
            .map(|_| {
                let (rp, sp, tk, tu) = (r.clone(), stop.clone(), tickets.clone(), turn.clone());
                std::thread::spawn(move || {
                    rp.register_producer();
                    loop {
                        let seq = tk.fetch_add(1, Ordering::Relaxed);
                        if seq >= n {
                            return;
                        }
                        while tu.load(Ordering::Acquire) != seq {
                            std::thread::yield_now();
                        }
                        let c = rp.claim((seq % 2) as usize, &sp).unwrap();
                        c.publish(meta(seq));
                        tu.store(seq + 1, Ordering::Release);
                    }
                })
            })
            .collect();
        r.register_consumer();
        for next in 0..n {
            let h = r.take(&stop, Duration::from_secs(5)).expect("a frame");
            assert_eq!(h.meta().seq, next);
        }
        for p in producers {
            p.join().unwrap();
        }
    }

    #[test]
    fn concurrent_drop_oldest_keeps_order_and_accounts_every_frame() {
        let r = Arc::new(ring(3, 1, WhenFull::DropOldest));
        let stop = Arc::new(AtomicBool::new(false));
        let (rp, sp) = (r.clone(), stop.clone());
        let n = 20_000u64;
        let producer = std::thread::spawn(move || {
            let mut dropped = 0;
            for seq in 0..n {
                let c = rp.claim(0, &sp).unwrap();
                dropped += c.dropped().is_some() as u64;
                c.publish(meta(seq));
            }
            dropped
        });
        let mut taken = 0u64;
        let mut last = None;
        loop {
            match r.take(&stop, Duration::from_millis(200)) {
                Some(h) => {
                    let seq = h.meta().seq;
                    assert!(last.is_none_or(|l| seq > l), "order");
                    last = Some(seq);
                    taken += 1;
                }
                None if producer.is_finished() => break,
                None => {}
            }
        }
        let dropped = producer.join().unwrap();
        assert_eq!(taken + dropped, n);
    }
}
