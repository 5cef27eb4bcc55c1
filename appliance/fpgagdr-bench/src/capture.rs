//! `capture`: frames from the card's frame trigger (the frame-done interrupt on a real
//! card, `SimSensor` on the simulated one), each DMA'd (C2H) into a frame ring of
//! k × N pinned entries where entry i always meets card slot i mod N, as the service
//! captures them (docs/architecture.md; slot = seq mod N: docs/card-protocol.md).
//!
//! Reports the frame rate, the latency from the frame's arrival (the interrupt's
//! `ktime_get_ns()`, or the simulated sensor's write) to its DMA done, the frames the
//! card produced that the host never took (missed, of them event-queue overflow), the
//! frames the card rewrote during their C2H (torn: card protocol 1.1's check after the
//! DMA, docs/card-protocol.md), and the descriptor-chain cache's hits over the run. Interrupt-to-result (through the
//! model) is the service's `end_to_end` stage (`/metrics`); this tool has no model.

use std::time::{Duration, Instant};

use fpgagdr::{ChainCache, FrameCheck, FrameTrigger};
use fpgagdr_sim::{SimSensor, TestPattern};

use crate::bench::{Bench, PinnedMemory};
use crate::error::{BenchError, Context, Result};
use crate::reference::{Compare, RefData};
use crate::report::{Outcome, Section, Table};
use crate::stats::Summary;
use crate::units::{fmt_size, us};

/// Arguments of `capture`.
#[derive(Debug, clap::Args)]
pub(crate) struct CaptureArgs {
    /// Frames to capture.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) frames: u32,
    /// k: ring entries per card slot (the ring has k × N entries).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub(crate) laps: u32,
    /// Simulated card only: the test sensor's frame rate (0 = as fast as capture asks).
    #[arg(long, default_value_t = 0.0)]
    pub(crate) fps: f64,
    /// Simulated card only: frame width, pixels (RGB8).
    #[arg(long, default_value_t = 640)]
    pub(crate) width: u32,
    /// Simulated card only: frame height, pixels.
    #[arg(long, default_value_t = 480)]
    pub(crate) height: u32,
    /// Frame waits in a row that may time out before the run is given up.
    #[arg(long, default_value_t = 20)]
    pub(crate) max_timeouts: u32,
    /// Simulated card only, a test fault: every this many C2Hs one is torn (the card
    /// rewrites the slot during the copy), to see the torn count work; 0 = never.
    #[arg(long, default_value_t = 0)]
    pub(crate) sim_torn_every: u64,
}

/// The result of `capture`.
#[derive(Debug, serde::Serialize)]
pub(crate) struct CaptureOutcome {
    /// Where the ring lives.
    pub(crate) memory: PinnedMemory,
    /// The trigger (the card's frame protocol, or the simulated sensor).
    pub(crate) trigger: String,
    /// N: the card's frame slots.
    pub(crate) slots: u32,
    /// Ring entries (k × N).
    pub(crate) ring_entries: u32,
    /// Frames DMA'd.
    pub(crate) frames: u64,
    /// Bytes DMA'd.
    pub(crate) bytes: u64,
    /// Frames per second over the run (first arrival to last DMA done).
    pub(crate) fps: f64,
    /// Frame arrival (interrupt) → C2H done, µs.
    pub(crate) irq_to_dma_done: Option<Summary>,
    /// The C2H alone, µs.
    pub(crate) dma: Option<Summary>,
    /// Frames the card produced that no event reported, event-queue overflow included.
    pub(crate) missed: u64,
    /// Of `missed`, frames whose event the module's full queue dropped.
    pub(crate) queue_overflow: u64,
    /// Frame waits that timed out.
    pub(crate) timeouts: u64,
    /// Frames whose C2H the card's torn-frame check found overwritten during the copy
    /// (an overrun: the bytes are not the frame).
    pub(crate) torn: u64,
    /// Frames the check could not judge (a protocol 1.0 card: the header's sequence is
    /// the only check).
    pub(crate) unchecked: u64,
    /// The chain cache over the run (card-wide counters on a real card).
    pub(crate) chain_cache: Option<ChainCache>,
}

fn trigger(b: &Bench, a: &CaptureArgs) -> Result<Box<dyn FrameTrigger>> {
    match &b.sim {
        Some(sim) => {
            let source = TestPattern::new(fpgagdr::PixelFormat::Rgb8, a.width, a.height)
                .map_err(|e| BenchError::Usage(format!("--width/--height: {e}")))?;
            let s = SimSensor::new(sim.clone(), Box::new(source), a.fps, 0)
                .ctx(|| "the simulated sensor".to_string())?;
            Ok(Box::new(s))
        }
        None => b
            .card
            .frame_trigger()
            .ctx(|| format!("the frame trigger of {}", b.target.card)),
    }
}

/// Runs `capture`.
pub(crate) fn run(b: &Bench, a: &CaptureArgs) -> Result<CaptureOutcome> {
    if a.sim_torn_every > 0 {
        let sim = b.sim.as_ref().ok_or_else(|| {
            BenchError::Usage(format!(
                "--sim-torn-every is a fault of the simulated card (`--card sim`), not of {}",
                b.target.card
            ))
        })?;
        sim.simulate_torn_frames(a.sim_torn_every);
    }
    let mut trig = trigger(b, a)?;
    let slots = trig.slots().max(1);
    let entries = slots * a.laps;
    let entry_len = b.round_up(trig.max_frame_len() as u64);
    let ring = (0..entries)
        .map(|_| b.pin_frame_memory(entry_len))
        .collect::<Result<Vec<_>>>()?;
    let cache0 = b.card.chain_cache();
    let wait = b.timeout.min(Duration::from_secs(60));
    let mut lap = vec![0u32; slots as usize];
    let (mut irq_dma, mut dma) = (Vec::new(), Vec::new());
    let (mut frames, mut bytes, mut missed, mut overflow, mut timeouts) = (0u64, 0, 0, 0, 0);
    let (mut torn, mut unchecked) = (0u64, 0u64);
    let mut in_a_row = 0;
    let mut first: Option<Instant> = None;
    let mut last_done = Instant::now();
    let mut progress = crate::progress::Progress::new("capture", u64::from(a.frames));
    while frames < u64::from(a.frames) {
        if crate::progress::interrupted() {
            // Ctrl-C: the frames captured so far are the result.
            break;
        }
        let slot = match trig.wait_frame(wait) {
            Ok(s) => s,
            Err(fpgagdr::Error::NoFrame { .. }) => {
                timeouts += 1;
                in_a_row += 1;
                if in_a_row >= a.max_timeouts {
                    return Err(BenchError::Usage(format!(
                        "no frame for {in_a_row} waits of {wait:?} in a row: is the sensor running?"
                    )));
                }
                continue;
            }
            Err(e) => return Err(e).ctx(|| "waiting for a frame".to_string()),
        };
        in_a_row = 0;
        first.get_or_insert(slot.arrived);
        missed += slot.missed;
        overflow += slot.queue_overflow;
        let s = slot.slot % slots;
        let entry = (s + slots * (lap[s as usize] % a.laps)) as usize;
        lap[s as usize] += 1;
        let t0 = Instant::now();
        let read = b
            .card
            .read_frame(b.channel, &ring[entry], &slot, slot.len, b.timeout)
            .ctx(|| format!("C2H of frame {} from slot {}", slot.seq, slot.slot))?;
        match read.check {
            FrameCheck::Whole => {}
            FrameCheck::Torn => torn += 1,
            FrameCheck::Unchecked => unchecked += 1,
        }
        last_done = Instant::now();
        dma.push((last_done - t0).as_secs_f64() * 1e6);
        irq_dma.push((last_done - slot.arrived).as_secs_f64() * 1e6);
        frames += 1;
        progress.inc(1);
        bytes += slot.len;
    }
    let span = first.map_or(0.0, |f| (last_done - f).as_secs_f64());
    Ok(CaptureOutcome {
        memory: b.pinned_memory(),
        trigger: trig.describe(),
        slots,
        ring_entries: entries,
        frames,
        bytes,
        fps: if span > 0.0 {
            frames as f64 / span
        } else {
            0.0
        },
        irq_to_dma_done: Summary::of(&irq_dma),
        dma: Summary::of(&dma),
        missed,
        queue_overflow: overflow,
        timeouts,
        torn,
        unchecked,
        chain_cache: cache0.zip(b.card.chain_cache()).map(|(a, z)| z.since(a)),
    })
}

impl Outcome for CaptureOutcome {
    fn name(&self) -> &'static str {
        "capture"
    }

    fn sections(&self) -> Vec<Section> {
        let mut t = Table::new(&["metric", "value"]);
        let lat = |s: &Option<Summary>| {
            s.map_or("—".to_string(), |s| {
                format!(
                    "p50 {}  p99 {}  max {}",
                    us(s.p50_us),
                    us(s.p99_us),
                    us(s.max_us)
                )
            })
        };
        t.row(vec!["frames".into(), self.frames.to_string()]);
        t.row(vec!["frames/s".into(), format!("{:.1}", self.fps)]);
        t.row(vec![
            "interrupt → DMA done µs".into(),
            lat(&self.irq_to_dma_done),
        ]);
        t.row(vec!["DMA alone µs".into(), lat(&self.dma)]);
        t.row(vec![
            "missed (of them event-queue overflow)".into(),
            format!("{} ({})", self.missed, self.queue_overflow),
        ]);
        t.row(vec![
            "frame-wait timeouts".into(),
            self.timeouts.to_string(),
        ]);
        t.row(vec![
            "torn: rewritten during the C2H (not checked)".into(),
            format!("{} ({})", self.torn, self.unchecked),
        ]);
        t.row(vec![
            "chain cache hits / misses".into(),
            self.chain_cache.map_or("—".into(), |c| {
                format!(
                    "{} / {} ({:.2} %)",
                    c.hits,
                    c.misses,
                    100.0 * c.hit_rate().unwrap_or(0.0)
                )
            }),
        ]);
        vec![
            Section::new(
                format!(
                    "capture: {} frames into a ring of {} entries ({} per each of {} slots), {}",
                    self.frames,
                    self.ring_entries,
                    self.ring_entries / self.slots.max(1),
                    self.slots,
                    fmt_size(self.bytes)
                ),
                t,
            )
            .note(format!("trigger: {}", self.trigger))
            .note(format!("memory: {}", self.memory.note))
            .note(
                "interrupt-to-result through the model: the service's end_to_end stage (/metrics)",
            ),
        ]
    }

    fn compare(&self, _reference: &RefData, cmp: &mut Compare) {
        cmp.note(
            "capture not compared: the reference report has no frame-trigger figures".to_string(),
        );
    }
}
