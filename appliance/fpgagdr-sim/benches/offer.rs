//! What the simulated card can offer: frames/s of 1 MiB frames (a 1024×1024 mono8 test
//! pattern, 64-byte header) from the simulated sensor, each copied whole (C2H) into a
//! frame ring of the memory the service would use (CUDA device memory on a discrete GPU,
//! page-locked memory on an integrated one, host memory without CUDA), on 1 to 4 C2H
//! channels at once, with the link model off or paced by a preset.
//!
//! One thread per channel; each takes a ticket (the next sequence number), waits until
//! the C2H of the frame its slot held before has finished (the host's side of the slot
//! protocol: a slot is not asked for again until it was read, so no frame is overwritten
//! while it is read) and until the frames before its own were asked for, takes the
//! sensor's frame (the sensor behind a mutex, as one capture thread would hold it) and
//! copies it into ring entry `seq mod ring` on its own channel. Waits yield the core. At
//! the end the last `ring` frames are read back and checked: header, header CRC, payload
//! CRC, sequence numbers and timestamps in order.
//!
//! ```text
//! cargo bench -p fpgagdr-sim --bench offer
//! FPGAGDR_OFFER_CASES=off:4:still,x86-gen3x8:1:still FPGAGDR_OFFER_SECS=3 \
//!   cargo bench -p fpgagdr-sim --bench offer
//! ```
//! Settings (environment): `FPGAGDR_OFFER_CASES`, comma-separated `link:channels:step`
//! (`link` = `off`, `x86-gen3x8` or `orin-gen3x4`; `step` = frames per one-pixel move of
//! the pattern, or `still`: every frame of a slot shows the same picture, so the sensor
//! rewrites 72 bytes a frame; step 1 renders every frame in full); `FPGAGDR_OFFER_SECS`
//! (timed seconds per case, 3); `FPGAGDR_OFFER_RING` (ring entries, a multiple of 4, 16).
//! Prints one Markdown row per case. Figures: docs/benchmarks.md.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fpgagdr::frame::HEADER_LEN;
use fpgagdr::{Card, DmaMemory, FrameHeader, FrameTrigger, PinnedBuffer, PixelFormat};
use fpgagdr_sim::{LinkPreset, SimCard, SimConfig, SimSensor, TestPattern};

const T: Duration = Duration::from_secs(5);

fn env<V: std::str::FromStr>(name: &str, default: V) -> V {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

struct Case {
    preset: LinkPreset,
    channels: u32,
    step: u64,
}

fn parse(case: &str) -> Case {
    let mut it = case.split(':');
    let preset = match it.next() {
        Some("off") => LinkPreset::Off,
        Some("x86-gen3x8") => LinkPreset::X86Gen3x8,
        Some("orin-gen3x4") => LinkPreset::OrinGen3x4,
        other => panic!("FPGAGDR_OFFER_CASES: {case}: unknown link {other:?}"),
    };
    let channels = it.next().and_then(|c| c.parse().ok()).unwrap_or(1);
    let step = match it.next() {
        Some("still") | None => u64::MAX,
        Some(n) => n.parse().expect("step: a number or still"),
    };
    Case {
        preset,
        channels,
        step,
    }
}

/// The model's frames/s for `bytes` on `channels` channels (set-up overlaps, data shares
/// the link), or `None` with the link model off.
fn modelled(preset: LinkPreset, channels: u32, bytes: u64) -> Option<f64> {
    let cost = preset.model()?.cost(fpgagdr::Direction::C2H, true);
    let one = cost.duration(bytes).as_secs_f64();
    let data = one - cost.duration(0).as_secs_f64();
    Some((channels as f64 / one).min(1.0 / data))
}

fn run(case: &Case, secs: f64, ring_len: usize) -> String {
    // The sensor's slots on this link; the ring holds a whole number of them.
    let slots = case.preset.sensor_slots();
    let ring_len = ring_len.div_ceil(slots as usize).max(1) * slots as usize;
    let sim = Arc::new(SimCard::new(SimConfig {
        preset: case.preset,
        ..SimConfig::default()
    }));
    let card = Card::from_backend(sim.clone());
    let pattern = TestPattern::new(PixelFormat::Mono8, 1024, 1024)
        .expect("pattern")
        .with_step(case.step);
    let sensor = SimSensor::new(sim, Box::new(pattern), 0.0, 0).expect("sensor");
    let slot_memory = sensor.slot_memory();
    let align = card.status().alignment as usize;
    let entry = sensor.max_frame_len().div_ceil(align) * align;
    let (kind, _) = fpgagdr::frame_ring_kind();
    let ring: Vec<PinnedBuffer> = (0..ring_len)
        .map(|_| {
            let mem = DmaMemory::for_frames(entry, align, kind).expect("ring entry");
            card.pin(mem).expect("pin")
        })
        .collect();
    let ring_kind = ring[0].kind();
    let sensor = Mutex::new(sensor);
    // done[s] = 1 + the last seq of slot s whose C2H finished (0: none yet); tickets
    // handed out; frames asked of the sensor.
    let done: Vec<AtomicU64> = (0..slots).map(|_| AtomicU64::new(0)).collect();
    let (tickets, asked) = (AtomicU64::new(0), AtomicU64::new(0));
    let (count, stop, failed) = (
        AtomicU64::new(0),
        AtomicBool::new(false),
        AtomicBool::new(false),
    );
    let mut timed = (Duration::ZERO, 0u64);
    std::thread::scope(|s| {
        for channel in 0..case.channels {
            let (card, ring, sensor, done) = (&card, &ring, &sensor, &done);
            let (count, stop, failed) = (&count, &stop, &failed);
            let (tickets, asked) = (&tickets, &asked);
            s.spawn(move || {
                let wait = |ready: &dyn Fn() -> bool| {
                    while !ready() {
                        if stop.load(Ordering::Relaxed) {
                            return false;
                        }
                        std::thread::yield_now();
                    }
                    true
                };
                while !stop.load(Ordering::Relaxed) {
                    let n = tickets.fetch_add(1, Ordering::Relaxed);
                    // The slot's previous frame (n - slots) must be read before it is
                    // rewritten, and frames are asked for in order.
                    let slot_free = || {
                        n < slots || done[(n % slots) as usize].load(Ordering::Acquire) > n - slots
                    };
                    if !wait(&slot_free) || !wait(&|| asked.load(Ordering::Acquire) == n) {
                        return;
                    }
                    let slot = sensor.lock().unwrap().wait_frame(T).expect("frame");
                    asked.store(n + 1, Ordering::Release);
                    assert_eq!(slot.seq, n, "frames in ticket order");
                    let buf = &ring[(slot.seq % ring.len() as u64) as usize];
                    if let Err(e) = card.read_c2h(channel, buf, slot.card_addr, slot.len, T) {
                        eprintln!("C2H on channel {channel}: {e}");
                        failed.store(true, Ordering::Relaxed);
                        stop.store(true, Ordering::Relaxed);
                    }
                    done[slot.slot as usize].fetch_max(slot.seq + 1, Ordering::AcqRel);
                    count.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        // Half a second of warm-up, then the timed part.
        std::thread::sleep(Duration::from_millis(500));
        let (t0, c0) = (Instant::now(), count.load(Ordering::Relaxed));
        std::thread::sleep(Duration::from_secs_f64(secs));
        timed = (t0.elapsed(), count.load(Ordering::Relaxed) - c0);
        stop.store(true, Ordering::Relaxed);
    });
    let total = count.load(Ordering::Relaxed);
    let fps = timed.1 as f64 / timed.0.as_secs_f64();
    let sensor = sensor.into_inner().unwrap();
    let (rendered, restamped) = sensor.writes();
    let check = if failed.load(Ordering::Relaxed) {
        "C2H FAILED".to_string()
    } else {
        check_ring(&ring, total)
    };
    let bytes = (HEADER_LEN + 1024 * 1024) as u64;
    let model = modelled(case.preset, case.channels, bytes)
        .map_or("—".to_string(), |m| format!("{m:.0}"));
    let step = if case.step == u64::MAX {
        "still".to_string()
    } else {
        case.step.to_string()
    };
    format!(
        "| {} | {} | {step} | {} | {} | **{fps:.0}** | {:.2} | {model} | {rendered} / {restamped} | {check} |",
        case.preset.as_str(),
        case.channels,
        ring_kind.as_str(),
        slot_memory.as_str(),
        fps * bytes as f64 / 1e9,
    )
}

/// Reads back the last frames in the ring (`total` frames were written, frame `seq` in
/// entry `seq mod ring`) and checks each: header, both CRCs, sequence, timestamps rising.
fn check_ring(ring: &[PinnedBuffer], total: u64) -> String {
    let n = (ring.len() as u64).min(total);
    let mut last_ts = None;
    for seq in total - n..total {
        let buf = &ring[(seq % ring.len() as u64) as usize];
        let mut frame = vec![0u8; buf.len()];
        #[allow(unsafe_code)]
        // SAFETY: every channel thread has stopped: no C2H into the ring runs.
        let read = unsafe { buf.copy_to_host(0, &mut frame) };
        if let Err(e) = read {
            return format!("read-back failed: {e}");
        }
        let h = match FrameHeader::parse(&frame, frame.len()) {
            Ok(h) => h,
            Err(e) => return format!("frame {seq}: {e}"),
        };
        if let Err(e) = h.verify(&frame[HEADER_LEN..h.frame_len()]) {
            return format!("frame {seq}: {e}");
        }
        if h.seq != seq || u64::from_le_bytes(frame[64..72].try_into().unwrap()) != seq {
            return format!("entry of frame {seq} holds frame {}", h.seq);
        }
        if last_ts.is_some_and(|t| h.timestamp_ns <= t) {
            return format!("frame {seq}: timestamp not after the previous frame's");
        }
        last_ts = Some(h.timestamp_ns);
    }
    format!("last {n} frames valid")
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("offer: bench");
        return;
    }
    let secs: f64 = env("FPGAGDR_OFFER_SECS", 3.0);
    // Rounded up per case to a whole number of the sensor's slots on its link.
    let ring_len: usize = env("FPGAGDR_OFFER_RING", 16usize);
    let cases = std::env::var("FPGAGDR_OFFER_CASES").unwrap_or_else(|_| {
        "off:1:1,off:1:still,off:2:still,off:4:still,x86-gen3x8:1:still,x86-gen3x8:2:still,x86-gen3x8:4:still"
            .into()
    });
    let (kind, why) = fpgagdr::frame_ring_kind();
    println!(
        "frame ring: {} ({why}); {} cores; 1 MiB frames (1024x1024 mono8 + 64-byte header), ring of {ring_len} entries or more (a whole number of the sensor's slots), {secs} s per case\n",
        kind.as_str(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );
    println!(
        "| link | C2H channels | pattern step | ring memory | slot memory | frames/s | GB/s | model frames/s | full / rewritten frames | check |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for case in cases.split(',') {
        println!("{}", run(&parse(case), secs, ring_len));
    }
}
