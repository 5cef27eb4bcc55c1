//! The pipeline's side of the results room: a bounded channel the inference thread
//! hands every frame's result into without ever waiting.
//!
//! Owns: [`Outlet`] (lives in the pipeline's `Shared`; the room connects to it once),
//! [`Tap`] (one per pipeline run: the run's facts and the sender), [`RunInfo`],
//! [`RawResult`] (a `Copy` record: no allocation per frame on the frame path).
//! Must not: block, allocate per frame, or know what happens to a result after it.
//! Next hop: `results/mod.rs` (the room's thread receives, labels and fans out).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};

use fpgagdr_infer::TOP_K;

use crate::metrics::{STAGES, Stage};

/// Results the channel between the inference thread and the room holds. At the
/// simulated card's top rate (~6 600 frames/s) this is ~0.6 s of results: the room only
/// falls that far behind when its disk stalls.
pub const CHANNEL_CAPACITY: usize = 4096;

/// The facts of one pipeline run that every result of it shares.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInfo {
    /// The run's key: Unix time of its start in ms, raised to one above the previous
    /// run's when the clock did not move on (so (run, seq) orders every result of the
    /// service's life, and of later lives too: the log's key).
    pub run: u64,
    /// The model's display labels, class 0 first.
    pub labels: Vec<String>,
    /// The card's name (`CardStatus::name`).
    pub card: String,
    /// The C2H channel the frames arrive on.
    pub channel: u32,
}

/// One frame's result as the inference thread hands it over (labels, JSON and times in
/// words are made by the room).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RawResult {
    /// The frame's sequence number (restarts with each run).
    pub seq: u64,
    /// When the frame arrived (the frame-done interrupt, else the capture), Unix ns.
    pub arrived_unix_ns: u64,
    /// When its result was ready, Unix ns.
    pub result_unix_ns: u64,
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
    /// `"mono8"` or `"rgb8"`.
    pub format: &'static str,
    /// Bytes moved by C2H (header included).
    pub bytes: u64,
    /// Whether the payload CRC was checked (and matched: a frame that fails is dropped
    /// before it has a result).
    pub checksum_checked: bool,
    /// Best classes: (index, probability 0..=1); a NaN score marks an unfilled slot.
    pub top: [(u32, f32); TOP_K],
    /// Per-stage latency, ns; [`Stage::D2h`] only where `d2h` is true.
    pub stages: [(Stage, u64); STAGES],
    /// Whether the frame took the device-to-host hop.
    pub d2h: bool,
}

/// What travels on the channel: the run's facts (shared) and one result.
pub type Message = (Arc<RunInfo>, RawResult);

/// Why a result did not reach an output, as `/metrics` labels it.
#[derive(Debug, Default)]
pub struct OutletDrops {
    /// The channel to the room was full (the room fell behind).
    pub room_full: AtomicU64,
}

/// The pipeline's end of the results channel. One per service, in `Shared`.
#[derive(Debug, Default)]
pub struct Outlet {
    sender: Mutex<Option<SyncSender<Message>>>,
    last_run: AtomicU64,
    /// Results the channel refused.
    pub drops: OutletDrops,
    /// Results handed over.
    pub sent: AtomicU64,
}

impl Outlet {
    /// Opens the channel ([`CHANNEL_CAPACITY`] results) and returns its receiving end;
    /// a second call replaces the first channel.
    pub fn connect(&self) -> Receiver<Message> {
        let (tx, rx) = sync_channel(CHANNEL_CAPACITY);
        *self.sender.lock().expect("outlet poisoned") = Some(tx);
        rx
    }

    /// The tap of a run that starts now, or `None` when no room is connected (a
    /// benchmark or a test of the pipeline alone).
    pub fn tap(self: &Arc<Self>, labels: Vec<String>, card: String, channel: u32) -> Option<Tap> {
        let tx = self.sender.lock().expect("outlet poisoned").clone()?;
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let mut prev = self.last_run.load(Ordering::Relaxed);
        let run = loop {
            let run = now_ms.max(prev + 1);
            match self
                .last_run
                .compare_exchange(prev, run, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => break run,
                Err(p) => prev = p,
            }
        };
        Some(Tap {
            tx,
            run: Arc::new(RunInfo {
                run,
                labels,
                card,
                channel,
            }),
            outlet: self.clone(),
        })
    }
}

/// One run's sender: [`Tap::send`] never waits.
#[derive(Debug)]
pub struct Tap {
    tx: SyncSender<Message>,
    run: Arc<RunInfo>,
    outlet: Arc<Outlet>,
}

impl Tap {
    /// The run this tap belongs to.
    pub fn run(&self) -> &RunInfo {
        &self.run
    }

    /// Hands `r` to the room, or counts it as dropped (`room_full`) when the channel is
    /// full. Never blocks; no allocation.
    pub fn send(&self, r: RawResult) {
        match self.tx.try_send((self.run.clone(), r)) {
            Ok(()) => {
                self.outlet.sent.fetch_add(1, Ordering::Relaxed);
            }
            Err(TrySendError::Full(_)) => {
                self.outlet.drops.room_full.fetch_add(1, Ordering::Relaxed);
            }
            // The room is gone (the service is stopping): nothing to count.
            Err(TrySendError::Disconnected(_)) => {}
        }
    }
}
