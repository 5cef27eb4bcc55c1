//! The inference thread: takes the oldest ready frame and every frame ready behind it,
//! up to the batch limit, waiting at most the batch wait for more (`inference.max_batch`
//! and `inference.batch_wait_us`, or the limit and wait `batching.rs` chooses as frames
//! arrive);
//! checks and preprocesses them where they lie and runs the model once on the batch
//! (`fpgagdr_infer::FramePrep`: CUDA kernels and the model on the GPU for a GPU ring,
//! the CPU otherwise); releases the ring entries; and records every frame's stages,
//! result and drop on its own.
//!
//! Two ways to run a batch, status says which (`pipeline.batch.ahead`):
//! * one at a time (`RingPrep::finish`): the CPU path, and a GPU whose model cannot
//!   queue batches ahead;
//! * queued ahead (`RingPrep::submit` / `collect`) where `FramePrep::queues_ahead`:
//!   batch k+1 is gathered, checked and preprocessed (on a second stream) while batch k
//!   runs, so the GPU never waits for this thread between batches. At most two batches
//!   are in flight, each batch's entries held until it is collected; while one is in
//!   flight only frames ready now start the next, and with none ready the batch in
//!   flight is collected first, so a result never waits for a frame to come. The ring
//!   then holds three batches (two in flight, one being gathered: `mod.rs`).
//!
//! Next hop: `metrics.rs` (histograms and the latest result, published every
//! [`PUBLISH_EVERY`] for the frame board).
//! An entry preprocessed on the CPU is released as soon as its tensor is built, before
//! the model runs (capture gets it back one model run earlier); one read by the GPU
//! kernels stays taken until the batch's results are in. Entries are held and read only
//! through the ring's tokens (`fpgagdr::ring`), so this thread holds no `unsafe`.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use fpgagdr::frame::FrameHeader;
use fpgagdr::ring::Held;
use fpgagdr::{FrameMeta, FrameRing};

use fpgagdr_infer::{
    BatchCosts, BatchTimes, Classification, FrameOutcome, FramePrep, Model, PrepError, RingPrep,
    TOP_K,
};

use super::batching::{BatchWait, Choice};
use super::shared::{Shared, Thread, now_ns};
use crate::metrics::{Counters, FrameInfo, FrameResult, Published, STAGES, Stage, StageRecorder};
use crate::results::{RawResult, Tap};

/// How often the thread publishes its window and latest result.
pub(crate) const PUBLISH_EVERY: Duration = Duration::from_millis(250);

/// How often the inference thread copies a frame for the frame view.
pub(crate) const FRAME_COPY_EVERY: Duration = Duration::from_secs(1);

/// Inference settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InferParams {
    pub(crate) verify_checksum: bool,
    /// Longest wait for a batch to fill once its first frame is taken; `None`: chosen
    /// as frames arrive (`batching.rs`).
    pub(crate) batch_wait: Option<Duration>,
    /// The predicted latency a chosen wait aims within (`inference.latency_target_us`).
    pub(crate) latency_target: Duration,
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

/// A frame of a batch.
#[derive(Debug)]
struct Taken<'r> {
    index: usize,
    meta: FrameMeta,
    t_take: u64,
    /// Its entry, while this thread keeps it (to copy a frame that matches an alert
    /// rule once its result is known); `None` once released, or while the batch reads
    /// it.
    held: Option<Held<'r>>,
}

/// What the thread keeps between batches to record their frames.
struct Books<'s> {
    shared: &'s Shared,
    params: InferParams,
    tap: Option<Tap>,
    keep_frames: bool,
    recorder: StageRecorder,
    latest: Option<Latest>,
    /// Frames and model runs since the last publish (the batch size in use).
    window: (u64, u64),
}

// The ring, the model and its preparation, their measured costs, the settings, the
// results tap and the two shared handles: each owned by this thread for its life.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    ring: Arc<FrameRing>,
    mut model: Model,
    prep: FramePrep,
    costs: BatchCosts,
    params: InferParams,
    tap: Option<Tap>,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
) {
    let ring: &FrameRing = &ring;
    ring.register_consumer();
    let mut prep = RingPrep::new(prep);
    let ahead = prep.queues_ahead(&model);
    let c = &shared.counters;
    let mut next_publish = Instant::now() + PUBLISH_EVERY;
    let mut next_copy = Instant::now();
    let max_batch = prep.max_batch();
    let mut wait = match params.batch_wait {
        Some(d) => BatchWait::Fixed(d),
        None => BatchWait::Chosen(Choice::new(costs, max_batch, params.latency_target)),
    };
    // Keeping the frames that match an alert rule: every entry stays taken until its
    // result is known (as a GPU-read one always does), so a matching frame can be
    // copied before it is let go.
    let keep_frames = tap.as_ref().is_some_and(Tap::keeps_frames);
    let mut books = Books {
        shared: &shared,
        params,
        tap,
        keep_frames,
        recorder: StageRecorder::default(),
        latest: None,
        window: (0, 0),
    };
    let mut batch: Vec<Taken> = Vec::with_capacity(max_batch);
    // Batches queued ahead, oldest first (their frames; the entries are in `prep`).
    let mut flying: VecDeque<Vec<Taken>> = VecDeque::with_capacity(2);
    // The entries a batch read, handed back by `finish` or `collect`.
    let mut back: Vec<Held> = Vec::with_capacity(max_batch);
    let fail = |why: String| {
        shared.fail(why);
        stop.store(true, Ordering::Relaxed);
    };
    'frames: loop {
        shared.beats.beat(Thread::Inference);
        if Instant::now() >= next_publish {
            let (frames, batches) = std::mem::take(&mut books.window);
            shared.batch.set_window(frames, batches);
            publish_wait(&shared, &wait);
            books.publish(&model);
            next_publish += PUBLISH_EVERY;
        }
        // With a batch in flight only frames ready now start the next one; with none
        // ready, the batch in flight is collected first.
        let first_wait = if prep.in_flight() > 0 {
            Duration::ZERO
        } else {
            PUBLISH_EVERY
        };
        let Some(first) = ring.take(&stop, first_wait) else {
            if prep.in_flight() > 0 {
                let mut done = flying.pop_front().unwrap_or_default();
                let collected = prep.collect(&mut model, &mut back);
                if !books.record(&mut done, collected, &mut back, &fail) {
                    break;
                }
                continue;
            }
            if stop.load(Ordering::Relaxed) {
                break;
            }
            continue;
        };
        // The batch: this frame, then every frame ready behind it up to the limit,
        // waiting for more only until the deadline.
        let (batch_wait, limit) = wait.wait_and_limit(max_batch);
        let deadline = Instant::now() + batch_wait;
        let mut next = Some(first);
        while let Some(held) = next {
            let (index, meta) = (held.index(), held.meta());
            let t_take = now_ns();
            wait.arrived(meta.seq, meta.t_arrived);
            if Instant::now() >= next_copy {
                next_copy = Instant::now() + FRAME_COPY_EVERY;
                copy_frame(&held, meta.bytes, &shared);
            }
            match prep.push(held, params.verify_checksum) {
                Ok(read) => {
                    // Read at once (the CPU path): the entry goes back now, unless its
                    // frame may be kept.
                    let held = read.filter(|_| keep_frames);
                    batch.push(Taken {
                        index,
                        meta,
                        t_take,
                        held,
                    });
                }
                Err((PrepError::Frame(e), _)) => {
                    Counters::bump(&c.checksum_errors);
                    Counters::bump(&c.frames_dropped);
                    tracing::debug!("frame {} rejected: {e}", meta.seq);
                }
                Err((e, _)) => {
                    fail(format!("frame preprocessing: {e}"));
                    break 'frames;
                }
            }
            if batch.len() >= limit {
                break;
            }
            next = ring.take(&stop, deadline.saturating_duration_since(Instant::now()));
        }
        if batch.is_empty() {
            continue;
        }
        if !ahead {
            let finished = prep.finish(&mut model, params.verify_checksum, &mut back);
            if !books.record(&mut batch, Some(finished), &mut back, &fail) {
                break;
            }
            continue;
        }
        if let Err(e) = prep.submit(&mut model, params.verify_checksum, &mut back) {
            back.clear();
            batch.clear();
            fail(match e {
                PrepError::Model(m) => m.to_string(),
                e => format!("frame preprocessing: {e}"),
            });
            break;
        }
        flying.push_back(std::mem::replace(&mut batch, Vec::with_capacity(max_batch)));
        if prep.in_flight() >= 2 {
            let mut done = flying.pop_front().unwrap_or_default();
            let collected = prep.collect(&mut model, &mut back);
            if !books.record(&mut done, collected, &mut back, &fail) {
                break;
            }
        }
    }
    // Batches still queued: their results are recorded (or dropped on a failure) and
    // their entries go back once the GPU has read them.
    while prep.in_flight() > 0 {
        let mut done = flying.pop_front().unwrap_or_default();
        let collected = prep.collect(&mut model, &mut back);
        // A failure here changes nothing: the pipeline is stopping.
        books.record(&mut done, collected, &mut back, &|_| {});
    }
    books.publish(&model);
}

/// The batch wait, and for a chosen one the limit and why, for status and `/metrics`.
fn publish_wait(shared: &Shared, wait: &BatchWait) {
    match wait {
        BatchWait::Fixed(d) => shared.batch.set_wait(*d, None),
        BatchWait::Chosen(c) => {
            let choice = c.aim();
            shared.batch.set_wait(choice.wait, Some(choice));
        }
    }
}

impl<'r> Books<'_> {
    /// Records a batch's frames from its outcomes (`finished`: `None` for a batch that
    /// was never queued), hands the entries it read (`back`) to the frames that keep
    /// theirs or lets them go, and counts the model run. False when the batch failed
    /// (`fail` was told why).
    fn record(
        &mut self,
        batch: &mut Vec<Taken<'r>>,
        finished: Option<Result<(&[FrameOutcome], BatchTimes), PrepError>>,
        back: &mut Vec<Held<'r>>,
        fail: &dyn Fn(String),
    ) -> bool {
        let t_inf = now_ns();
        if self.keep_frames {
            for h in back.drain(..) {
                if let Some(t) = batch
                    .iter_mut()
                    .find(|t| t.index == h.index() && t.held.is_none())
                {
                    t.held = Some(h);
                }
            }
        } else {
            back.clear();
        }
        let (outcomes, times) = match finished {
            Some(Ok(v)) => v,
            Some(Err(e)) => {
                batch.clear();
                fail(match e {
                    PrepError::Model(m) => m.to_string(),
                    e => format!("frame preprocessing: {e}"),
                });
                return false;
            }
            None => {
                batch.clear();
                return true;
            }
        };
        let c = &self.shared.counters;
        let params = self.params;
        Counters::bump(&c.batches_run);
        // The wall clock of the results (one reading per batch; a frame's arrival is
        // placed on it by its monotonic age).
        let wall_ns = unix_ns();
        self.window.1 += 1;
        self.window.0 += batch.len() as u64;
        for (taken, out) in batch.iter().zip(outcomes) {
            let header = match &out.header {
                Ok(h) => *h,
                Err(e) => {
                    Counters::bump(&c.checksum_errors);
                    Counters::bump(&c.frames_dropped);
                    tracing::debug!("frame {} rejected: {e}", taken.meta.seq);
                    continue;
                }
            };
            Counters::bump(&c.frames_inferred);
            let meta = taken.meta;
            let stages = [
                (Stage::Pickup, meta.t_submit.saturating_sub(meta.t_arrived)),
                (Stage::Dma, meta.t_done - meta.t_submit),
                (Stage::Queue, taken.t_take.saturating_sub(meta.t_done)),
                (Stage::D2h, out.d2h_ns.unwrap_or(0)),
                (Stage::Preprocess, out.preprocess_ns),
                (Stage::Inference, times.inference_ns),
                (Stage::EndToEnd, t_inf.saturating_sub(meta.t_arrived)),
            ];
            for (stage, ns) in stages {
                if stage != Stage::D2h || out.d2h_ns.is_some() {
                    self.recorder.record(stage, ns);
                }
            }
            if let Some(tap) = &self.tap {
                let r = RawResult {
                    seq: header.seq,
                    arrived_unix_ns: wall_ns.saturating_sub(t_inf.saturating_sub(meta.t_arrived)),
                    result_unix_ns: wall_ns,
                    width: header.width,
                    height: header.height,
                    format: header.format.as_str(),
                    bytes: meta.bytes,
                    checksum_checked: params.verify_checksum,
                    top: out.top,
                    stages,
                    d2h: out.d2h_ns.is_some(),
                    alerts: tap.matches(&out.top),
                };
                if r.alerts != 0
                    && let Some(held) = &taken.held
                {
                    tap.keep_frame(&r, |copy| held.copy_to_host(0, copy).is_ok());
                }
                tap.send(r);
            }
            self.latest = Some(Latest {
                header,
                bytes: meta.bytes,
                checked: params.verify_checksum,
                top: out.top,
                stages,
            });
        }
        // Every entry of the batch goes back.
        batch.clear();
        true
    }

    fn publish(&mut self, model: &Model) {
        publish(self.shared, model, &mut self.recorder, self.latest);
    }
}

/// Copies the frame in `held` (`bytes` long) for the frame view; a failed copy is
/// skipped.
fn copy_frame(held: &Held, bytes: u64, shared: &Shared) {
    let mut copy = vec![0u8; bytes as usize];
    if held.copy_to_host(0, &mut copy).is_ok() {
        *shared.frame_copy.lock().expect("frame copy poisoned") = Some(Arc::new(copy));
    }
}

/// Now on the wall clock, Unix ns (0 before 1970).
fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
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
