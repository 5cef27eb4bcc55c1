//! The pipeline's side of the results room: a bounded channel the inference thread
//! hands every frame's result into without ever waiting.
//!
//! Owns: [`Outlet`] (lives in the pipeline's `Shared`; the room connects to it once),
//! [`Tap`] (one per pipeline run: the run's facts, its alert rules compiled against its
//! labels, the sender, and the frame keeper's sender), [`RunInfo`], [`RawResult`] (a
//! `Copy` record: no allocation per frame on the frame path).
//! Must not: block, allocate per frame, or know what happens to a result after it.
//! Next hop: `results/mod.rs` (the room's thread receives, labels and fans out).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};

use super::alerts::Matcher;
use super::keep::KeepSender;
use super::raw::{RawResult, RunInfo};
use crate::config::AlertsConfig;

/// Results the channel between the inference thread and the room holds. At the
/// simulated card's top rate (~6 600 frames/s) this is ~0.6 s of results: the room only
/// falls that far behind when its disk stalls.
pub const CHANNEL_CAPACITY: usize = 4096;

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
    /// The card of the latest run's tap (condition alerts name it).
    card: Mutex<String>,
    /// `outputs.alerts` as a run starting now takes it.
    alerts: Mutex<AlertsConfig>,
    /// The frame keeper, while `outputs.alerts.keep_frames` is on.
    keeper: Mutex<Option<KeepSender>>,
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

    /// Sets the alert rules and the frame keeper later runs take (a running pipeline
    /// keeps its own until it is restarted: a config change restarts it).
    pub fn set_alerts(&self, alerts: &AlertsConfig, keeper: Option<KeepSender>) {
        *self.alerts.lock().expect("outlet poisoned") = alerts.clone();
        *self.keeper.lock().expect("outlet poisoned") = keeper;
    }

    /// The card of the latest run (empty before the first).
    pub fn card(&self) -> String {
        self.card.lock().expect("outlet poisoned").clone()
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
        let rules = Matcher::new(&self.alerts.lock().expect("outlet poisoned"), &labels);
        if !rules.unknown.is_empty() {
            tracing::warn!(
                "alert rules name classes the model does not have (they never match): {:?}",
                rules.unknown
            );
        }
        card.clone_into(&mut self.card.lock().expect("outlet poisoned"));
        let keep = if rules.is_empty() {
            None
        } else {
            self.keeper.lock().expect("outlet poisoned").clone()
        };
        Some(Tap {
            tx,
            run: Arc::new(RunInfo {
                run,
                labels,
                card,
                channel,
                rules,
            }),
            keep,
            outlet: self.clone(),
        })
    }
}

/// One run's sender: [`Tap::send`] never waits.
#[derive(Debug)]
pub struct Tap {
    tx: SyncSender<Message>,
    run: Arc<RunInfo>,
    keep: Option<KeepSender>,
    outlet: Arc<Outlet>,
}

impl Tap {
    /// The run this tap belongs to.
    pub fn run(&self) -> &RunInfo {
        &self.run
    }

    /// The alert rules `top` (a result's best classes) matches, as a mask for
    /// [`RawResult::alerts`]; 0 without rules. No allocation.
    pub fn matches(&self, top: &[(u32, f32)]) -> u32 {
        if self.run.rules.is_empty() {
            0
        } else {
            self.run.rules.matches(top)
        }
    }

    /// Whether this run keeps the frames that match a rule: the inference thread then
    /// holds each frame's entry until its result is known, and offers the matching
    /// ones to [`Tap::keep_frame`].
    pub fn keeps_frames(&self) -> bool {
        self.keep.is_some()
    }

    /// Offers the frame of `r` (which matched a rule) to the frame keeper: when the
    /// keeper has room, a buffer of `r.bytes` is filled by `fill` (a copy out of the
    /// entry the caller still holds; `false` = the copy failed) and handed over; when it
    /// has none, nothing is copied and the frame is counted as skipped. Never blocks.
    pub fn keep_frame(&self, r: &RawResult, fill: impl FnOnce(&mut [u8]) -> bool) {
        if let Some(k) = &self.keep {
            k.keep(&self.run, r, fill);
        }
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
