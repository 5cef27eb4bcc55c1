//! Frames from the simulated sensor through the card into a pinned buffer: the
//! [`TestPattern`] arrives with the right sequence numbers and valid checksums, and
//! [`Replay`] of real PNG files survives the card → pinned buffer path byte for byte.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{GENEROUS, MIB, assert_same, bytes};
use fpgagdr::frame::HEADER_LEN;
use fpgagdr::{Card, DmaMemory, FrameCheck, FrameHeader, FrameTrigger, PinnedBuffer, PixelFormat};
use fpgagdr_sim::{LinkPreset, Replay, SimCard, SimConfig, SimSensor, TestPattern};

/// A simulated card shared by the sensor (the FPGA's side) and a [`Card`] (the host's).
fn card_and_sim(preset: LinkPreset) -> (Card, Arc<SimCard>) {
    let sim = Arc::new(SimCard::new(SimConfig {
        preset,
        ..SimConfig::default()
    }));
    (Card::from_backend(sim.clone()), sim)
}

/// A pinned buffer big enough for any frame of `trigger`.
fn frame_buffer(card: &Card, trigger: &dyn FrameTrigger) -> PinnedBuffer {
    let align = card.status().alignment as usize;
    let len = trigger.max_frame_len().div_ceil(align) * align;
    card.pin(DmaMemory::host(len, align).unwrap()).unwrap()
}

/// Waits for a frame, reads it by C2H into `buf`, and returns the parsed, checked header
/// and the frame's bytes.
fn capture<'a>(
    card: &Card,
    trigger: &mut dyn FrameTrigger,
    buf: &'a PinnedBuffer,
) -> (FrameHeader, &'a [u8]) {
    let slot = trigger.wait_frame(GENEROUS).unwrap();
    let t = card
        .read_c2h(0, buf, slot.card_addr, slot.len, GENEROUS)
        .unwrap();
    assert_eq!(t.bytes, slot.len);
    let frame = &bytes(buf)[..slot.len as usize];
    let h = FrameHeader::parse(frame, frame.len())
        .unwrap_or_else(|e| panic!("frame {}: {e}", slot.seq));
    h.verify(&frame[HEADER_LEN..])
        .unwrap_or_else(|e| panic!("frame {}: {e}", slot.seq));
    assert_eq!(h.seq, slot.seq);
    assert_eq!(h.frame_len() as u64, slot.len);
    (h, frame)
}

#[test]
fn test_pattern_frames_arrive_in_order_with_valid_checksums() {
    let (card, sim) = card_and_sim(LinkPreset::OrinGen3x4);
    let pattern = TestPattern::new(PixelFormat::Rgb8, 320, 240).unwrap();
    let base = 512 * MIB;
    let mut sensor = SimSensor::new(sim, Box::new(pattern), 0.0, base).unwrap();
    assert!(sensor.describe().contains("320x240 rgb8"));
    let buf = frame_buffer(&card, &sensor);

    for seq in 0..2 * u64::from(sensor.slots()) + 1 {
        let (h, frame) = capture(&card, &mut sensor, &buf);
        assert_eq!(h.seq, seq);
        assert_eq!(
            (h.format, h.width, h.height, h.stride),
            (PixelFormat::Rgb8, 320, 240, 960)
        );
        // The pattern also writes the sequence number into the first payload bytes.
        let in_payload = u64::from_le_bytes(frame[HEADER_LEN..HEADER_LEN + 8].try_into().unwrap());
        assert_eq!(in_payload, seq);
    }
}

#[test]
fn sensor_slots_are_distinct_and_inside_card_memory() {
    // The Gen3 x8 card keeps 16 frames (docs/card-protocol.md, "Sizing SLOT_COUNT"),
    // the others 4.
    for (preset, slots) in [(LinkPreset::Off, 4), (LinkPreset::X86Gen3x8, 16)] {
        let (_card, sim) = card_and_sim(preset);
        let pattern = TestPattern::new(PixelFormat::Mono8, 1000, 100).unwrap();
        let base = 64 * MIB;
        let mut sensor = SimSensor::new(sim, Box::new(pattern), 0.0, base).unwrap();
        assert_eq!(u64::from(sensor.slots()), slots, "{preset:?}");
        assert_eq!(preset.sensor_slots(), slots, "{preset:?}");
        let addrs: Vec<u64> = (0..slots * 2)
            .map(|_| sensor.wait_frame(GENEROUS).unwrap().card_addr)
            .collect();
        let n = slots as usize;
        let first: std::collections::BTreeSet<_> = addrs[..n].iter().collect();
        assert_eq!(first.len(), n, "{preset:?}: {addrs:x?}");
        assert_eq!(addrs[..n], addrs[n..], "{preset:?}");
        assert!(addrs.iter().all(|&a| a >= base && a % (64 * 1024) == 0));
    }
}

#[test]
fn sensor_refuses_slots_past_card_memory_and_times_out_between_frames() {
    let (_card, sim) = card_and_sim(LinkPreset::Off);
    let pattern = || Box::new(TestPattern::new(PixelFormat::Mono8, 64, 64).unwrap());
    let end = sim.config().card_memory_bytes;
    let e = SimSensor::new(sim.clone(), pattern(), 0.0, end - 64 * 1024).unwrap_err();
    common::assert_rule(&e, "card-bounds", &["0x7fff0000"]);

    // 10 fps: the first frame is due at once, the next 100 ms later.
    let mut sensor = SimSensor::new(sim, pattern(), 10.0, 0).unwrap();
    assert_eq!(sensor.wait_frame(GENEROUS).unwrap().seq, 0);
    let e = sensor.wait_frame(Duration::from_millis(5)).unwrap_err();
    assert_eq!(e.rule(), "timeout", "{e}");
    assert_eq!(sensor.wait_frame(GENEROUS).unwrap().seq, 1);
}

#[test]
fn a_free_running_sensor_counts_every_frame_it_produced() {
    // 2000 frames/s, frame k complete at k × 500 µs. The host takes frames and now and
    // then sleeps 10 ms (20 frames' time): each frame handed is the one after the last,
    // plus the frames missed in between (overwritten: the sensor keeps the last
    // `slots`), and its timestamp is its completion time on the card's clock.
    let (card, sim) = card_and_sim(LinkPreset::Off);
    let pattern = TestPattern::new(PixelFormat::Mono8, 64, 64).unwrap();
    let mut sensor = SimSensor::new(sim, Box::new(pattern), 2000.0, 0).unwrap();
    let slots = u64::from(sensor.slots());
    let buf = frame_buffer(&card, &sensor);
    let (mut taken, mut missed, mut sleeps) = (0u64, 0u64, 0u64);
    let mut last: Option<(u64, u64)> = None;
    for i in 0..60 {
        let slot = sensor.wait_frame(GENEROUS).unwrap();
        assert!(slot.arrived <= std::time::Instant::now());
        let t = card
            .read_c2h(0, &buf, slot.card_addr, slot.len, GENEROUS)
            .unwrap();
        let frame = &bytes(&buf)[..t.bytes as usize];
        let h = FrameHeader::parse(frame, frame.len()).unwrap();
        h.verify(&frame[HEADER_LEN..]).unwrap();
        assert_eq!(h.seq, slot.seq);
        match last {
            None => assert_eq!((slot.seq, slot.missed), (0, 0)),
            Some((seq, ts)) => {
                assert_eq!(slot.seq, seq + 1 + slot.missed, "frame {i}");
                let apart = h.timestamp_ns - ts;
                let want = (slot.seq - seq) * 500_000;
                assert!(apart.abs_diff(want) <= 1_000, "{apart} ns for {want}");
            }
        }
        (taken, missed) = (taken + 1, missed + slot.missed);
        last = Some((slot.seq, h.timestamp_ns));
        if i % 10 == 9 && i < 59 {
            std::thread::sleep(Duration::from_millis(10));
            sleeps += 1;
        }
    }
    // Produced = taken + missed, exactly; each sleep let 20 frames complete, of which
    // at most `slots` were still there.
    assert_eq!(last.unwrap().0 + 1, taken + missed);
    assert!(missed >= sleeps * (20 - slots), "{missed} missed");
}

#[test]
fn replayed_png_files_survive_the_card_to_pinned_buffer_path() {
    let dir = tempfile::tempdir().unwrap();
    // Names sort in play order; odd sizes so rows do not line up with anything.
    let grey = image::GrayImage::from_fn(97, 31, |x, y| image::Luma([(x * 7 + y * 13) as u8]));
    let colour = image::RgbImage::from_fn(64, 48, |x, y| {
        image::Rgb([(x * 3) as u8, (y * 5) as u8, (x ^ y) as u8])
    });
    let tiny = image::GrayImage::from_fn(3, 5, |x, y| image::Luma([(200 + x + y) as u8]));
    grey.save(dir.path().join("00-grey.png")).unwrap();
    colour.save(dir.path().join("01-colour.png")).unwrap();
    tiny.save(dir.path().join("02-tiny.png")).unwrap();
    std::fs::write(dir.path().join("README.txt"), "not an image").unwrap();
    let expected: [(PixelFormat, u32, u32, Vec<u8>); 3] = [
        (PixelFormat::Mono8, 97, 31, grey.into_raw()),
        (PixelFormat::Rgb8, 64, 48, colour.into_raw()),
        (PixelFormat::Mono8, 3, 5, tiny.into_raw()),
    ];

    let replay = Replay::load(dir.path()).unwrap();
    assert_eq!(replay.len(), 3);
    let (card, sim) = card_and_sim(LinkPreset::X86Gen3x8);
    let mut sensor = SimSensor::new(sim, Box::new(replay), 0.0, 0).unwrap();
    assert!(
        sensor.describe().contains("3 frames"),
        "{}",
        sensor.describe()
    );
    let buf = frame_buffer(&card, &sensor);

    // Twice round the sequence: it loops.
    for seq in 0..6u64 {
        let (h, frame) = capture(&card, &mut sensor, &buf);
        let (format, width, height, pixels) = &expected[(seq % 3) as usize];
        assert_eq!(
            (h.seq, h.format, h.width, h.height),
            (seq, *format, *width, *height)
        );
        assert_same(
            &frame[HEADER_LEN..],
            pixels,
            &format!("replayed frame {seq}"),
        );
    }
}

/// The simulated card's torn-frame fault, as the library's frame read sees it: every
/// third C2H is torn (its first payload bytes are not the frame's, the header still
/// names the announced frame); `read_frame` says `Torn` for exactly those copies and
/// `Whole` for the rest, whose checksums hold. A plain C2H gets the same torn bytes with
/// no word: only the payload CRC would notice, and only when it is checked.
#[test]
fn torn_frames_are_reported_by_the_frame_read_not_found_by_the_checksum() {
    let (card, sim) = card_and_sim(LinkPreset::Off);
    let pattern = TestPattern::new(PixelFormat::Mono8, 64, 64).unwrap();
    let mut sensor = SimSensor::new(sim.clone(), Box::new(pattern), 0.0, 0).unwrap();
    let buf = frame_buffer(&card, &sensor);
    sim.simulate_torn_frames(3);
    let (mut torn, mut whole) = (Vec::new(), 0);
    for _ in 0..12 {
        let slot = sensor.wait_frame(GENEROUS).unwrap();
        assert_eq!(slot.epoch, 0, "the simulated card has no reset epoch");
        let r = card.read_frame(0, &buf, &slot, slot.len, GENEROUS).unwrap();
        assert_eq!(r.transfer.bytes, slot.len);
        let frame = &bytes(&buf)[..slot.len as usize];
        let h = FrameHeader::parse(frame, frame.len()).unwrap();
        assert_eq!(
            h.seq, slot.seq,
            "a torn copy's header is the announced frame's"
        );
        let crc = h.verify(&frame[HEADER_LEN..]);
        match r.check {
            FrameCheck::Torn => {
                assert!(crc.is_err(), "frame {}: torn bytes", slot.seq);
                torn.push(slot.seq);
            }
            FrameCheck::Whole => {
                crc.unwrap_or_else(|e| panic!("frame {}: {e}", slot.seq));
                whole += 1;
            }
            FrameCheck::Unchecked => panic!("the simulated card checks every frame read"),
        }
    }
    assert_eq!(torn, [2, 5, 8, 11], "every third copy");
    assert_eq!(whole, 8);
    // A plain C2H (no frame named) is torn alike, silently.
    sim.simulate_torn_frames(1);
    let slot = sensor.wait_frame(GENEROUS).unwrap();
    card.read_c2h(0, &buf, slot.card_addr, slot.len, GENEROUS)
        .unwrap();
    let frame = &bytes(&buf)[..slot.len as usize];
    let h = FrameHeader::parse(frame, frame.len()).unwrap();
    assert_eq!(h.seq, slot.seq);
    let e = h.verify(&frame[HEADER_LEN..]).unwrap_err();
    assert!(e.to_string().starts_with("rule frame-checksum"), "{e}");
    // Off again: whole.
    sim.simulate_torn_frames(0);
    let slot = sensor.wait_frame(GENEROUS).unwrap();
    let r = card.read_frame(0, &buf, &slot, slot.len, GENEROUS).unwrap();
    assert_eq!(r.check, FrameCheck::Whole);
}
