//! The inference thread: takes the oldest ready frame, checks and preprocesses it where
//! it lies (`fpgagdr_infer::FramePrep`: CUDA kernels for a GPU ring, the CPU otherwise; every
//! device-to-host copy counted), releases the ring entry, runs the model, and records
//! every stage.
//!
//! Next hop: `metrics.rs` (histograms and the latest result, published every
//! [`PUBLISH_EVERY`] for the frame board).
//! The entry is released as soon as the input tensor is built, before the model runs,
//! so capture gets it back one model-run earlier than DESIGN §3's sketch.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use fpgagdr::frame::FrameHeader;

use fpgagdr_infer::{Classification, FramePrep, Model, PrepError, TOP_K};

use super::ring::Ring;
use super::shared::{Shared, Thread, now_ns};
use crate::metrics::{Counters, FrameInfo, FrameResult, Published, STAGES, Stage, StageRecorder};

/// How often the thread publishes its window and latest result.
pub(crate) const PUBLISH_EVERY: Duration = Duration::from_millis(250);

/// Inference settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InferParams {
    pub(crate) verify_checksum: bool,
}

/// The latest result in raw form (no allocation per frame); labelled at publish time.
#[derive(Debug, Clone, Copy)]
struct Latest {
    header: FrameHeader,
    bytes: u64,
    checked: bool,
    top: [(u32, f32); TOP_K],
    stages: [(Stage, u64); STAGES],
}

pub(crate) fn run(
    ring: Arc<Ring>,
    mut model: Model,
    mut prep: FramePrep,
    params: InferParams,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
) {
    let queue = &ring.queue;
    queue.register_consumer();
    let c = &shared.counters;
    let mut recorder = StageRecorder::default();
    let mut latest: Option<Latest> = None;
    let mut next_publish = Instant::now() + PUBLISH_EVERY;
    let mut top = [(0u32, 0f32); TOP_K];
    loop {
        shared.beats.beat(Thread::Inference);
        if Instant::now() >= next_publish {
            publish(&shared, &model, &mut recorder, latest);
            next_publish += PUBLISH_EVERY;
        }
        let Some((k, meta)) = queue.take(&stop, PUBLISH_EVERY) else {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            continue;
        };
        let t_take = now_ns();
        // SAFETY: entry k is InUse. Capture claims only Free entries, or under
        // drop-oldest a Ready one, never an InUse one, so no C2H into this buffer runs
        // until `queue.release(k)` below, which comes after `prep.run` has returned (the
        // tensor it hands back lives in prep's own buffers).
        #[allow(unsafe_code)]
        let prepared = unsafe {
            prep.run(
                &ring.buffers[k],
                meta.bytes as usize,
                params.verify_checksum,
            )
        };
        queue.release(k);
        let (p, tensor) = match prepared {
            Ok(v) => v,
            Err(PrepError::Frame(e)) => {
                Counters::bump(&c.checksum_errors);
                Counters::bump(&c.frames_dropped);
                tracing::debug!("frame {} rejected: {e}", meta.seq);
                continue;
            }
            Err(PrepError::Path(why)) => {
                shared.fail(format!("frame preprocessing: {why}"));
                stop.store(true, Ordering::Relaxed);
                break;
            }
        };
        let t_pre = now_ns();
        let classified = model.classify_tensor(tensor, &mut top);
        if let Err(e) = classified {
            shared.fail(e.to_string());
            stop.store(true, Ordering::Relaxed);
            break;
        }
        let t_inf = now_ns();
        Counters::bump(&c.frames_inferred);
        let stages = [
            (Stage::Pickup, meta.t_submit.saturating_sub(meta.t_arrived)),
            (Stage::Dma, meta.t_done - meta.t_submit),
            (Stage::Queue, t_take - meta.t_done),
            (Stage::D2h, p.d2h_ns.unwrap_or(0)),
            (Stage::Preprocess, p.preprocess_ns),
            (Stage::Inference, t_inf - t_pre),
            (Stage::EndToEnd, t_inf.saturating_sub(meta.t_arrived)),
        ];
        for (stage, ns) in stages {
            if stage != Stage::D2h || p.d2h_ns.is_some() {
                recorder.record(stage, ns);
            }
        }
        latest = Some(Latest {
            header: p.header,
            bytes: meta.bytes,
            checked: params.verify_checksum,
            top,
            stages,
        });
    }
    publish(&shared, &model, &mut recorder, latest);
}

fn publish(shared: &Shared, model: &Model, recorder: &mut StageRecorder, latest: Option<Latest>) {
    let window = recorder.rotate(&shared.totals);
    let latest = latest.map(|l| {
        Arc::new(FrameResult {
            seq: l.header.seq,
            frame: FrameInfo {
                width: l.header.width,
                height: l.header.height,
                format: l.header.format.as_str(),
                bytes: l.bytes,
                checksum_ok: l.checked,
            },
            top5: l
                .top
                .iter()
                // Fewer than five classes, or NaN logits, leave slots unfilled.
                .filter(|(_, score)| score.is_finite())
                .map(|&(index, score)| Classification {
                    index,
                    label: model.label(index).to_string(),
                    score,
                })
                .collect(),
            latency_us: l
                .stages
                .iter()
                .filter(|(s, ns)| *s != Stage::D2h || *ns > 0)
                .map(|(s, ns)| (s.as_str(), *ns as f64 / 1000.0))
                .collect::<BTreeMap<_, _>>(),
        })
    });
    let mut p = shared.published.lock().expect("published poisoned");
    *p = Published {
        window: Some(window),
        latest: latest.or_else(|| p.latest.take()),
    };
}
