//! The capture thread: waits for the card's next frame, DMAs it (C2H) into a free
//! frame-ring entry, stamps the times, and hands the entry to inference.
//!
//! Next hop: `pipeline/infer.rs` through [`super::queue::FrameQueue`].
//! Per frame: one transfer call, atomics, no allocation, no lock of ours.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use fpgagdr::FrameTrigger;

use super::queue::FrameMeta;
use super::{Ring, Shared, now_ns};
use crate::metrics::Counters;

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
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let slot = match trigger.wait_frame(params.timeout) {
            Ok(slot) => slot,
            Err(e) => {
                Counters::bump(&c.transfer_errors);
                log_error("waiting for a frame", &e);
                continue;
            }
        };
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
                c.bytes_captured
                    .fetch_add(t.bytes, std::sync::atomic::Ordering::Relaxed);
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
