//! The simulated card at speed stays honest: frames written by rewriting only header and
//! identity bytes of a slot are byte for byte the frames a full render gives, with valid
//! CRCs and sequence numbers; four C2H channels at once deliver every frame once and
//! whole; and with a link preset the card is never faster than the link, whether one
//! channel or four share it.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{GENEROUS, assert_same, bytes};
use fpgagdr::frame::HEADER_LEN;
use fpgagdr::{Card, DmaMemory, FrameHeader, FrameTrigger, PinnedBuffer, PixelFormat};
use fpgagdr_sim::{FrameSource, LinkPreset, Replay, SimCard, SimConfig, SimSensor, TestPattern};

fn card_and_sim(preset: LinkPreset) -> (Card, Arc<SimCard>) {
    let sim = Arc::new(SimCard::new(SimConfig {
        preset,
        ..SimConfig::default()
    }));
    (Card::from_backend(sim.clone()), sim)
}

fn frame_buffer(card: &Card, len: usize) -> PinnedBuffer {
    let align = card.status().alignment as usize;
    let len = len.div_ceil(align) * align;
    card.pin(DmaMemory::host(len, align).unwrap()).unwrap()
}

/// Captures `frames` frames and compares each, byte for byte, with `reference`'s full
/// render of the same sequence number (the header's timestamp aside, which the sensor
/// sets); checks both CRCs and that timestamps rise. Returns the sensor's (full,
/// rewritten) counts.
fn compare_with_full_renders(
    sensor: &mut SimSensor,
    reference: &mut dyn FrameSource,
    card: &Card,
    frames: u64,
) -> (u64, u64) {
    let buf = frame_buffer(card, sensor.max_frame_len());
    let slots = u64::from(sensor.slots());
    let mut want = Vec::new();
    let mut last_ts = None;
    for seq in 0..frames {
        let slot = sensor.wait_frame(GENEROUS).unwrap();
        assert_eq!((slot.seq, slot.slot as u64), (seq, seq % slots));
        card.read_c2h(0, &buf, slot.card_addr, slot.len, GENEROUS)
            .unwrap();
        let got = &bytes(&buf)[..slot.len as usize];
        let h = FrameHeader::parse(got, got.len()).unwrap_or_else(|e| panic!("frame {seq}: {e}"));
        h.verify(&got[HEADER_LEN..])
            .unwrap_or_else(|e| panic!("frame {seq}: {e}"));
        let w = reference.render(seq, &mut want);
        assert_eq!(
            FrameHeader {
                timestamp_ns: 0,
                ..h
            },
            w,
            "frame {seq}: header"
        );
        assert_same(
            &got[HEADER_LEN..],
            &want[HEADER_LEN..],
            &format!("frame {seq}"),
        );
        assert!(
            last_ts.is_none_or(|t| h.timestamp_ns > t),
            "frame {seq}: timestamp {} not after {last_ts:?}",
            h.timestamp_ns
        );
        last_ts = Some(h.timestamp_ns);
    }
    sensor.writes()
}

#[test]
fn a_still_pattern_is_rewritten_in_place_and_equals_full_renders() {
    let (card, sim) = card_and_sim(LinkPreset::Off);
    let pattern = || TestPattern::new(PixelFormat::Mono8, 256, 64).unwrap();
    let mut sensor = SimSensor::new(sim, Box::new(pattern().with_step(u64::MAX)), 0.0, 0).unwrap();
    let mut reference = pattern().with_step(u64::MAX);
    let (full, rewritten) = compare_with_full_renders(&mut sensor, &mut reference, &card, 24);
    // One full write per slot; every later frame only rewrote header and identity.
    let slots = LinkPreset::Off.sensor_slots();
    assert_eq!((full, rewritten), (slots, 24 - slots));
}

#[test]
fn a_moving_pattern_is_rendered_whenever_its_slot_changes_picture() {
    let (card, sim) = card_and_sim(LinkPreset::Off);
    // RGB, 8 frames per move: frames 0-3 full, 4-7 rewritten (same picture), 8-11
    // full (the next), 12-15 rewritten, ...
    let pattern = || {
        TestPattern::new(PixelFormat::Rgb8, 97, 31)
            .unwrap()
            .with_step(8)
    };
    let mut sensor = SimSensor::new(sim.clone(), Box::new(pattern()), 0.0, 0).unwrap();
    let (full, rewritten) = compare_with_full_renders(&mut sensor, &mut pattern(), &card, 32);
    assert_eq!((full, rewritten), (16, 16));
    // The default pattern moves every frame: every frame is rendered in full.
    let p = || TestPattern::new(PixelFormat::Mono8, 64, 64).unwrap();
    let mut sensor = SimSensor::new(sim, Box::new(p()), 0.0, 8 << 20).unwrap();
    assert_eq!(
        compare_with_full_renders(&mut sensor, &mut p(), &card, 12),
        (12, 0)
    );
}

#[test]
fn replayed_images_are_rewritten_only_where_a_slot_shows_the_same_image() {
    let dir = tempfile::tempdir().unwrap();
    for (i, v) in [10u8, 80, 160].iter().enumerate() {
        image::GrayImage::from_fn(40, 30, |x, y| image::Luma([v.wrapping_add((x * y) as u8)]))
            .save(dir.path().join(format!("{i}.png")))
            .unwrap();
    }
    let (card, sim) = card_and_sim(LinkPreset::Off);
    // Two images: slot s always shows image s mod 2; after the first lap, rewrites only.
    let two = tempfile::tempdir().unwrap();
    for i in 0..2 {
        std::fs::copy(
            dir.path().join(format!("{i}.png")),
            two.path().join(format!("{i}.png")),
        )
        .unwrap();
    }
    let mut sensor = SimSensor::new(
        sim.clone(),
        Box::new(Replay::load(two.path()).unwrap()),
        0.0,
        0,
    )
    .unwrap();
    let mut reference = Replay::load(two.path()).unwrap();
    assert_eq!(
        compare_with_full_renders(&mut sensor, &mut reference, &card, 12),
        (
            LinkPreset::Off.sensor_slots(),
            12 - LinkPreset::Off.sensor_slots()
        )
    );
    // Three images: each slot's image changes every time: always written in full.
    let mut sensor = SimSensor::new(
        sim,
        Box::new(Replay::load(dir.path()).unwrap()),
        0.0,
        16 << 20,
    )
    .unwrap();
    let mut reference = Replay::load(dir.path()).unwrap();
    assert_eq!(
        compare_with_full_renders(&mut sensor, &mut reference, &card, 12),
        (12, 0)
    );
}

/// Runs `frames` frames through `channels` threads, each on its own C2H channel, the
/// sensor shared as the offer bench shares it (a slot is asked for again only once the
/// C2H of its previous frame is done). Each thread checks the frame it read (header,
/// CRCs, the sequence announced). Returns the sequence numbers seen and the time taken.
fn through_channels(
    preset: LinkPreset,
    channels: u32,
    frames: u64,
    pattern: TestPattern,
) -> (Vec<u64>, Duration) {
    let (card, sim) = card_and_sim(preset);
    let sensor = SimSensor::new(sim, Box::new(pattern), 0.0, 0).unwrap();
    let slots = u64::from(sensor.slots());
    let ring: Vec<PinnedBuffer> = (0..4 * channels)
        .map(|_| frame_buffer(&card, sensor.max_frame_len()))
        .collect();
    let sensor = Mutex::new(sensor);
    let done: Vec<AtomicU64> = (0..slots).map(|_| AtomicU64::new(0)).collect();
    let (tickets, asked) = (AtomicU64::new(0), AtomicU64::new(0));
    let seen = Mutex::new(Vec::new());
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for channel in 0..channels {
            let (card, ring, sensor, done, seen) = (&card, &ring, &sensor, &done, &seen);
            let (tickets, asked) = (&tickets, &asked);
            s.spawn(move || {
                loop {
                    // A ticket; the slot's previous frame read; the frames before asked.
                    let n = tickets.fetch_add(1, Ordering::Relaxed);
                    if n >= frames {
                        return;
                    }
                    while n >= slots
                        && done[(n % slots) as usize].load(Ordering::Acquire) <= n - slots
                    {
                        std::thread::yield_now();
                    }
                    while asked.load(Ordering::Acquire) != n {
                        std::thread::yield_now();
                    }
                    let slot = sensor.lock().unwrap().wait_frame(GENEROUS).unwrap();
                    asked.store(n + 1, Ordering::Release);
                    assert_eq!(slot.seq, n);
                    // Entries of seq mod ring: no two frames in flight share one.
                    let buf = &ring[(slot.seq % ring.len() as u64) as usize];
                    card.read_c2h(channel, buf, slot.card_addr, slot.len, GENEROUS)
                        .unwrap();
                    let got = &bytes(buf)[..slot.len as usize];
                    let h = FrameHeader::parse(got, got.len()).unwrap();
                    h.verify(&got[HEADER_LEN..])
                        .unwrap_or_else(|e| panic!("frame {}: {e}", slot.seq));
                    assert_eq!(h.seq, slot.seq, "channel {channel} read another frame");
                    let id =
                        u64::from_le_bytes(got[HEADER_LEN..HEADER_LEN + 8].try_into().unwrap());
                    assert_eq!(id, slot.seq);
                    done[slot.slot as usize].fetch_max(slot.seq + 1, Ordering::AcqRel);
                    seen.lock().unwrap().push(slot.seq);
                }
            });
        }
    });
    let took = t0.elapsed();
    let mut seen = seen.into_inner().unwrap();
    seen.sort_unstable();
    (seen, took)
}

#[test]
fn four_channels_deliver_every_frame_once_and_whole() {
    let pattern = TestPattern::new(PixelFormat::Mono8, 512, 128)
        .unwrap()
        .with_step(u64::MAX);
    let (seen, _) = through_channels(LinkPreset::Off, 4, 400, pattern);
    assert_eq!(seen, (0..400).collect::<Vec<_>>());
}

#[test]
fn the_link_paces_one_channel_and_four_channels_share_it() {
    // x86 Gen3 x8: 1 MiB + 64 B takes 12.08 µs of set-up and 140.2 µs of data.
    let bytes = (1024 * 1024 + HEADER_LEN) as u64;
    let cost = LinkPreset::X86Gen3x8
        .model()
        .unwrap()
        .cost(fpgagdr::Direction::C2H, true);
    let one = cost.duration(bytes);
    let data = one - cost.duration(0);
    let pattern = || {
        TestPattern::new(PixelFormat::Mono8, 1024, 1024)
            .unwrap()
            .with_step(u64::MAX)
    };
    // One channel, back to back: at least set-up + data per frame.
    let (seen, took) = through_channels(LinkPreset::X86Gen3x8, 1, 24, pattern());
    assert_eq!(seen.len(), 24);
    assert!(took >= one * 24, "{took:?} for 24 frames, {one:?} each");
    // Four channels: set-up overlaps, but the data of all of them crosses one link.
    let (seen, took) = through_channels(LinkPreset::X86Gen3x8, 4, 48, pattern());
    assert_eq!(seen, (0..48).collect::<Vec<_>>());
    assert!(
        took >= data * 48,
        "{took:?} for 48 frames, {data:?} of data each"
    );
}

#[test]
fn each_transfer_lasts_at_least_its_modelled_time() {
    let (card, _) = card_and_sim(LinkPreset::OrinGen3x4);
    let cost = LinkPreset::OrinGen3x4
        .model()
        .unwrap()
        .cost(fpgagdr::Direction::C2H, true);
    let buf = frame_buffer(&card, 256 * 1024);
    for len in [4096u64, 65536, 256 * 1024] {
        let t = card.read_c2h(1, &buf, 0, len, GENEROUS).unwrap();
        assert!(
            t.elapsed >= cost.duration(len),
            "{len} bytes in {:?}",
            t.elapsed
        );
    }
}

#[test]
fn frame_slots_are_held_together_and_nothing_else_is() {
    let (_card, sim) = card_and_sim(LinkPreset::Off);
    let before = sim.resident_bytes();
    let pattern = TestPattern::new(PixelFormat::Mono8, 1024, 1024).unwrap();
    let sensor = SimSensor::new(sim.clone(), Box::new(pattern), 0.0, 0).unwrap();
    // Four slots of 1 MiB + 64 KiB (the header rounded up to the slot alignment).
    assert_eq!(
        sim.resident_bytes() - before,
        LinkPreset::Off.sensor_slots() * (1024 * 1024 + 64 * 1024)
    );
    assert!(matches!(
        sensor.slot_memory(),
        fpgagdr::MemoryKind::Host | fpgagdr::MemoryKind::CudaHost
    ));
    let e = sim
        .map_frame_memory(sim.config().card_memory_bytes, 4096)
        .unwrap_err();
    assert_eq!(e.rule(), "card-bounds");
}
