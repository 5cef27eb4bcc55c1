//! The hand-off between the capture thread (one producer) and the inference thread
//! (one consumer) over the N entries of the frame ring, with no lock.
//! Next hop of a frame: `pipeline/infer.rs` takes the entry.
//!
//! Owns: [`FrameQueue`] and [`WhenFull`]. Each ring entry has one atomic word holding
//! its state and the sequence number of the frame in it:
//!
//! ```text
//!   Free --capture claims--> Filling --DMA done, publish--> Ready --inference takes--> InUse
//!    ^                          |  (DMA failed: abandon)       |                          |
//!    +--------------------------+                              | drop-oldest: capture     |
//!    +----------------------- release -------------------------|-- steals it (Filling) ---+
//! ```
//!
//! The ring has k × N entries for a card with N frame slots, and the frame of slot s
//! only ever goes into an entry i with i mod N = s (DESIGN §10, "pin once, chain once"):
//! every entry then always meets the same card address and length, so the descriptor
//! chain the kernel module built for it on the first lap is replayed on every later one.
//! The consumer always takes the Ready entry with the lowest sequence number, so frames
//! are inferred in capture order. Under [`WhenFull::DropOldest`] a producer with no Free
//! entry for its slot steals the oldest Ready one of that slot (a compare-and-swap, so it never races the
//! consumer taking the same entry) and the drop is counted by the caller. Per-frame
//! timestamps travel in atomics beside the state word, written before the state's
//! Release store and read after the Acquire load.
//! Waiting sides park with a short timeout and are unparked by the other side, so a
//! stop request is seen within milliseconds.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::Thread;
use std::time::Duration;

/// What capture does when every ring entry is full or in use.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
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

/// Timestamps and size of the frame in an entry (ns of the service's monotonic clock).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameMeta {
    /// Sensor sequence number.
    pub seq: u64,
    /// Bytes DMA'd.
    pub bytes: u64,
    /// The frame was complete in card memory (the frame-done interrupt's arrival).
    pub t_arrived: u64,
    /// DMA submitted.
    pub t_submit: u64,
    /// DMA completed (the entry became Ready).
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

/// Lock-free single-producer / single-consumer hand-off over ring entries.
#[derive(Debug)]
pub struct FrameQueue {
    entries: Vec<Entry>,
    slots: usize,
    when_full: WhenFull,
    producer: OnceLock<Thread>,
    consumer: OnceLock<Thread>,
}

/// A ring entry claimed by the producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// Entry index.
    pub index: usize,
    /// Sequence number of a Ready frame that was overwritten to make room, if any.
    pub dropped: Option<u64>,
}

impl FrameQueue {
    /// A queue over `entries` ring entries for a card with `slots` frame slots:
    /// `entries` = k × `slots` with k ≥ 2 (so a slot always has an entry that is not
    /// the one inference holds).
    pub fn new(entries: usize, slots: usize, when_full: WhenFull) -> Self {
        assert!(
            slots >= 1 && entries >= 2 * slots && entries.is_multiple_of(slots),
            "a frame ring has k x N entries, k >= 2"
        );
        FrameQueue {
            entries: (0..entries).map(|_| Entry::default()).collect(),
            slots,
            when_full,
            producer: OnceLock::new(),
            consumer: OnceLock::new(),
        }
    }

    /// Registers the calling thread as the producer (for unparking).
    pub fn register_producer(&self) {
        let _ = self.producer.set(std::thread::current());
    }

    /// Registers the calling thread as the consumer (for unparking).
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

    /// Producer: claims an entry to fill with the frame of card slot `slot` (one whose
    /// index is `slot` mod N). Returns `None` once `stop` is set.
    pub fn claim(&self, slot: usize, stop: &AtomicBool) -> Option<Claim> {
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
                    return Some(Claim {
                        index,
                        dropped: None,
                    });
                }
            }
            if self.when_full == WhenFull::DropOldest
                && let Some((index, s)) = Self::oldest(self.of_slot(slot))
            {
                {
                    let e = &self.entries[index];
                    if e.state
                        .compare_exchange(s, word(FILLING, 0), Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                    {
                        return Some(Claim {
                            index,
                            dropped: Some(s >> 2),
                        });
                    }
                    continue;
                }
            }
            std::thread::park_timeout(PARK);
        }
    }

    /// Producer: the DMA into `index` completed; hand the frame to the consumer.
    pub fn publish(&self, index: usize, meta: FrameMeta) {
        let e = &self.entries[index];
        e.bytes.store(meta.bytes, Ordering::Relaxed);
        e.t_arrived.store(meta.t_arrived, Ordering::Relaxed);
        e.t_submit.store(meta.t_submit, Ordering::Relaxed);
        e.t_done.store(meta.t_done, Ordering::Relaxed);
        e.state.store(word(READY, meta.seq), Ordering::Release);
        if let Some(t) = self.consumer.get() {
            t.unpark();
        }
    }

    /// Producer: the DMA into `index` failed; the entry is free again.
    pub fn abandon(&self, index: usize) {
        self.entries[index]
            .state
            .store(word(FREE, 0), Ordering::Release);
    }

    /// Consumer: takes the oldest Ready frame, waiting for one. `None` once `stop` is
    /// set, or after `max_wait` with nothing ready (so the caller can do periodic work).
    pub fn take(&self, stop: &AtomicBool, max_wait: Duration) -> Option<(usize, FrameMeta)> {
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
                    return Some((index, meta));
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

    /// Consumer: done with entry `index`; capture may reuse it.
    pub fn release(&self, index: usize) {
        self.entries[index]
            .state
            .store(word(FREE, 0), Ordering::Release);
        if let Some(t) = self.producer.get() {
            t.unpark();
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn meta(seq: u64) -> FrameMeta {
        FrameMeta {
            seq,
            bytes: 10,
            t_arrived: 0,
            t_submit: 1,
            t_done: 2,
        }
    }

    #[test]
    fn frames_come_out_in_capture_order() {
        let q = FrameQueue::new(4, 1, WhenFull::Wait);
        let stop = AtomicBool::new(false);
        for seq in [5, 6, 7] {
            let c = q.claim(0, &stop).unwrap();
            q.publish(c.index, meta(seq));
        }
        let got: Vec<u64> = (0..3)
            .map(|_| {
                let (i, m) = q.take(&stop, PARK).unwrap();
                q.release(i);
                m.seq
            })
            .collect();
        assert_eq!(got, [5, 6, 7]);
        assert!(q.take(&stop, Duration::from_millis(1)).is_none());
    }

    #[test]
    fn drop_oldest_steals_the_oldest_ready_entry() {
        let q = FrameQueue::new(2, 1, WhenFull::DropOldest);
        let stop = AtomicBool::new(false);
        for seq in 0..2 {
            let c = q.claim(0, &stop).unwrap();
            assert_eq!(c.dropped, None);
            q.publish(c.index, meta(seq));
        }
        let c = q.claim(0, &stop).unwrap();
        assert_eq!(c.dropped, Some(0));
        q.publish(c.index, meta(2));
        let (_, m) = q.take(&stop, PARK).unwrap();
        assert_eq!(m.seq, 1);
    }

    #[test]
    fn wait_mode_blocks_until_release_or_stop() {
        let q = Arc::new(FrameQueue::new(2, 1, WhenFull::Wait));
        let stop = Arc::new(AtomicBool::new(false));
        for seq in 0..2 {
            let c = q.claim(0, &stop).unwrap();
            q.publish(c.index, meta(seq));
        }
        let (q2, s2) = (q.clone(), stop.clone());
        let producer = std::thread::spawn(move || {
            q2.register_producer();
            q2.claim(0, &s2)
        });
        let (i, _) = q.take(&stop, PARK).unwrap();
        q.release(i);
        let claim = producer.join().unwrap().unwrap();
        assert_eq!((claim.index, claim.dropped), (i, None));
        stop.store(true, Ordering::Relaxed);
        assert!(q.claim(0, &stop).is_none());
    }

    #[test]
    fn a_slot_only_ever_meets_its_own_entries() {
        // 3 slots x k = 2: slot s fills entries s and s + 3, whatever else is free.
        let q = FrameQueue::new(6, 3, WhenFull::DropOldest);
        let stop = AtomicBool::new(false);
        let mut dropped = 0;
        for seq in 0..60u64 {
            let slot = (seq % 3) as usize;
            let c = q.claim(slot, &stop).unwrap();
            assert_eq!(
                c.index % 3,
                slot,
                "frame {seq} of slot {slot} went to entry {}",
                c.index
            );
            dropped += c.dropped.is_some() as u64;
            q.publish(c.index, meta(seq));
            if seq % 4 == 0 {
                let (i, m) = q.take(&stop, PARK).unwrap();
                assert_eq!(i % 3, (m.seq % 3) as usize);
                q.release(i);
            }
        }
        assert!(dropped > 0, "drop-oldest stole within the slot");
    }

    #[test]
    fn drop_oldest_steals_only_within_the_slot() {
        let q = FrameQueue::new(4, 2, WhenFull::DropOldest);
        let stop = AtomicBool::new(false);
        // slot 0 fills entries 0 and 2, slot 1 fills entry 1; entry 3 stays free.
        for (seq, slot) in [(0, 0), (1, 1), (2, 0)] {
            let c = q.claim(slot, &stop).unwrap();
            q.publish(c.index, meta(seq));
        }
        let c = q.claim(0, &stop).unwrap();
        assert_eq!(
            (c.index, c.dropped),
            (0, Some(0)),
            "the oldest of slot 0, not free entry 3"
        );
    }

    #[test]
    fn concurrent_producer_and_consumer_lose_nothing_in_wait_mode() {
        for _ in 0..5 {
            wait_mode_round();
        }
    }

    fn wait_mode_round() {
        let q = Arc::new(FrameQueue::new(3, 1, WhenFull::Wait));
        let stop = Arc::new(AtomicBool::new(false));
        let (qp, sp) = (q.clone(), stop.clone());
        let n = 20_000u64;
        let producer = std::thread::spawn(move || {
            qp.register_producer();
            for seq in 0..n {
                let c = qp.claim(0, &sp).unwrap();
                qp.publish(c.index, meta(seq));
            }
        });
        q.register_consumer();
        let mut next = 0;
        while next < n {
            if let Some((i, m)) = q.take(&stop, Duration::from_secs(5)) {
                assert_eq!(m.seq, next);
                next += 1;
                q.release(i);
            }
        }
        producer.join().unwrap();
    }

    #[test]
    fn concurrent_drop_oldest_keeps_order_and_accounts_every_frame() {
        let q = Arc::new(FrameQueue::new(3, 1, WhenFull::DropOldest));
        let stop = Arc::new(AtomicBool::new(false));
        let (qp, sp) = (q.clone(), stop.clone());
        let n = 20_000u64;
        let producer = std::thread::spawn(move || {
            let mut dropped = 0;
            for seq in 0..n {
                let c = qp.claim(0, &sp).unwrap();
                dropped += c.dropped.is_some() as u64;
                qp.publish(c.index, meta(seq));
            }
            dropped
        });
        let mut taken = 0u64;
        let mut last = None;
        loop {
            match q.take(&stop, Duration::from_millis(200)) {
                Some((i, m)) => {
                    assert!(last.is_none_or(|l| m.seq > l), "order");
                    last = Some(m.seq);
                    taken += 1;
                    q.release(i);
                }
                None if producer.is_finished() => break,
                None => {}
            }
        }
        let dropped = producer.join().unwrap();
        assert_eq!(taken + dropped, n);
    }
}
