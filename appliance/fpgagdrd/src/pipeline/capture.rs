//! The capture thread: waits for the card's next frame, DMAs it (C2H) into a free
//! frame-ring entry, stamps the times, and hands the entry to inference.
//!
//! Next hop: `pipeline/infer.rs` through [`super::queue::FrameQueue`].
//! Per frame: one transfer call, atomics, no allocation, no lock of ours.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use fpgagdr::FrameTrigger;

use super::queue::FrameMeta;
use super::ring::Ring;
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
    ring: Arc<Ring>,
    mut trigger: Box<dyn FrameTrigger>,
    params: CaptureParams,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
) {
    let queue = &ring.queue;
    queue.register_producer();
    let c = &shared.counters;
    let mut errors_logged = 0u32;
    let mut log_error = |what: &str, e: &dyn std::fmt::Display| {
        // The first few errors are logged in full; all are counted.
        if errors_logged < 5 {
            tracing::warn!("capture: {what}: {e}");
            errors_logged += 1;
        }
    };
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
            Err(e @ fpgagdr::Error::NoFrame { .. }) => {
                Counters::bump(&c.frame_wait_timeouts);
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
        let Some(claim) = queue.claim(&stop) else {
            break;
        };
        if claim.dropped.is_some() {
            Counters::bump(&c.frames_dropped);
        }
        let t_submit = now_ns();
        match ring.card.read_c2h(
            params.channel,
            &ring.buffers[claim.index],
            slot.card_addr,
            slot.len,
            params.timeout,
        ) {
            Ok(t) => {
                let t_done = now_ns();
                Counters::bump(&c.frames_captured);
                c.bytes_captured.fetch_add(t.bytes, Ordering::Relaxed);
                queue.publish(
                    claim.index,
                    FrameMeta {
                        seq: slot.seq,
                        bytes: t.bytes,
                        t_submit,
                        t_done,
                    },
                );
            }
            Err(e) => {
                queue.abandon(claim.index);
                Counters::bump(&c.transfer_errors);
                log_error("C2H transfer", &e);
            }
        }
    }
}

/// The feed of `Supervisor::start_inference_only`: fills every ring entry once from the
/// card (a frame wait and a C2H each, as `run` does), then hands each entry the
/// inference thread releases straight back as a new frame, bytes as they are, so the
/// inference stage runs on a ring that is always full. Counts only the first fills as
/// captured.
pub(crate) fn recycle(
    ring: Arc<Ring>,
    mut trigger: Box<dyn FrameTrigger>,
    params: CaptureParams,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
) {
    let queue = &ring.queue;
    queue.register_producer();
    let c = &shared.counters;
    // Bytes of the frame in each entry; 0 = not filled yet.
    let mut lens = vec![0u64; ring.buffers.len()];
    let mut seq = 0u64;
    while !stop.load(Ordering::Relaxed) {
        shared.beats.beat(Thread::Capture);
        let Some(claim) = queue.claim(&stop) else {
            break;
        };
        let index = claim.index;
        let t_submit = now_ns();
        if lens[index] == 0 {
            let filled = trigger.wait_frame(params.timeout).and_then(|slot| {
                ring.card.read_c2h(
                    params.channel,
                    &ring.buffers[index],
                    slot.card_addr,
                    slot.len,
                    params.timeout,
                )
            });
            match filled {
                Ok(t) => {
                    Counters::bump(&c.frames_captured);
                    c.bytes_captured.fetch_add(t.bytes, Ordering::Relaxed);
                    lens[index] = t.bytes;
                }
                Err(e) => {
                    queue.abandon(index);
                    shared.fail(format!("filling the frame ring: {e}"));
                    stop.store(true, Ordering::Relaxed);
                    return;
                }
            }
        }
        seq += 1;
        queue.publish(
            index,
            FrameMeta {
                seq,
                bytes: lens[index],
                t_submit,
                t_done: now_ns(),
            },
        );
    }
}
