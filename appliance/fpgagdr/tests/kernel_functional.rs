//! The library's functional suite against the real kernel module: run inside the QEMU
//! guest by `kmod/qemu/run.sh` (the module with its test-only software card, which
//! executes the descriptor chains the driver builds), with `FPGAGDR_DEVICE` naming the
//! control node. Elsewhere each test prints why it is skipped and passes.
//!
//! The plan is the reference report's functional check (docs/bench.md), through
//! `fpgagdr::Card` and the kernel back-end: status, pin, C2H, H2C, unpin, data integrity
//! over every byte, a batch of 10 reads, the 2 GiB card-address sweep at 7 points, and
//! offsets near the end of card memory.

mod common;

use std::time::Duration;

use common::assert_rule;
use fpgagdr::{Card, DmaMemory, PinnedBuffer};

const TIMEOUT: Duration = Duration::from_secs(5);
const LEN: usize = 1 << 20;

/// Tests share the card's memory (the sweep and the end-of-memory test both write its
/// last bytes), so they take turns.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The card under test with this test's turn, or `None` after printing why the test is
/// skipped.
fn card() -> Option<(Card, std::sync::MutexGuard<'static, ()>)> {
    let Some(path) = std::env::var_os("FPGAGDR_DEVICE") else {
        eprintln!(
            "skipped: FPGAGDR_DEVICE is not set (this suite runs in the QEMU guest: kmod/qemu/run.sh)"
        );
        return None;
    };
    let turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let card = Card::open_path(&path).unwrap_or_else(|e| panic!("opening {path:?}: {e}"));
    Some((card, turn))
}

/// Host memory of `len` bytes filled with a pattern that differs per `seed` and per
/// 4-byte word, pinned on `card`.
fn pinned(card: &Card, len: usize, seed: u32) -> PinnedBuffer {
    let align = card.status().alignment as usize;
    let mut mem = DmaMemory::host(len, align).expect("host memory");
    for (i, w) in mem
        .as_mut_slice()
        .expect("host bytes")
        .chunks_exact_mut(4)
        .enumerate()
    {
        w.copy_from_slice(&(i as u32 ^ seed.wrapping_mul(0x9e37_79b9)).to_le_bytes());
    }
    card.pin(mem).expect("pin")
}

/// The pinned buffer's bytes.
fn bytes(buf: &PinnedBuffer) -> Vec<u8> {
    // SAFETY: this thread issued every transfer into `buf`, and each has returned.
    #[allow(unsafe_code)]
    unsafe { buf.host_bytes() }.expect("host memory").to_vec()
}

#[test]
fn status_names_the_module_card_and_its_limits() {
    let Some((card, _turn)) = card() else { return };
    let s = card.status();
    assert!(s.c2h_channels >= 1 && s.h2c_channels >= 1, "{s:?}");
    assert!(
        s.alignment.is_power_of_two() && s.alignment >= 4096,
        "{s:?}"
    );
    assert!(
        s.card_memory_bytes >= 2 << 30,
        "the sweep needs 2 GiB: {s:?}"
    );
}

#[test]
fn write_then_read_back_every_byte_then_unpin() {
    let Some((card, _turn)) = card() else { return };
    let src = pinned(&card, LEN, 1);
    let dst = pinned(&card, LEN, 2);
    let w = card
        .write_h2c(0, &src, 0x10_0000, LEN as u64, TIMEOUT)
        .expect("H2C");
    assert_eq!(w.bytes, LEN as u64);
    let r = card
        .read_c2h(0, &dst, 0x10_0000, LEN as u64, TIMEOUT)
        .expect("C2H");
    assert_eq!(r.bytes, LEN as u64);
    let (a, b) = (bytes(&src), bytes(&dst));
    let first_bad = a.iter().zip(&b).position(|(x, y)| x != y);
    assert_eq!(first_bad, None, "read back differs from what was written");
    let handle = dst.handle();
    dst.unpin().expect("unpin");
    // The handle is gone in the module too: a raw transfer on it is refused.
    let e = card
        .transfer_handle(fpgagdr::Direction::C2H, 0, handle, 0, 0, 4096, TIMEOUT)
        .unwrap_err();
    assert_rule(&e, "handle-valid", &[]);
}

#[test]
fn a_batch_of_10_reads_each_lands_in_its_own_buffer() {
    let Some((card, _turn)) = card() else { return };
    let src = pinned(&card, LEN, 3);
    let base = 0x400_0000u64;
    card.write_h2c(0, &src, base, LEN as u64, TIMEOUT)
        .expect("H2C");
    let want = bytes(&src);
    let ring: Vec<PinnedBuffer> = (0..10).map(|i| pinned(&card, LEN, 100 + i)).collect();
    for buf in &ring {
        card.read_c2h(0, buf, base, LEN as u64, TIMEOUT)
            .expect("C2H");
    }
    for (i, buf) in ring.iter().enumerate() {
        assert!(bytes(buf) == want, "read {i} of 10 differs");
    }
}

#[test]
fn the_2_gib_card_address_sweep_at_7_points() {
    let Some((card, _turn)) = card() else { return };
    let len = 64 * 1024u64;
    let top = 2u64 << 30;
    let points = [
        0,
        256 << 20,
        512 << 20,
        1 << 30,
        3 << 29,
        7 << 28,
        top - len,
    ];
    // All written first, then all read: a mix-up of addresses shows as wrong data.
    let srcs: Vec<PinnedBuffer> = (0..points.len())
        .map(|i| pinned(&card, len as usize, 200 + i as u32))
        .collect();
    for (buf, &addr) in srcs.iter().zip(&points) {
        card.write_h2c(0, buf, addr, len, TIMEOUT)
            .unwrap_or_else(|e| panic!("H2C at {addr:#x}: {e}"));
    }
    let dst = pinned(&card, len as usize, 0);
    for (buf, &addr) in srcs.iter().zip(&points) {
        card.read_c2h(0, &dst, addr, len, TIMEOUT)
            .unwrap_or_else(|e| panic!("C2H at {addr:#x}: {e}"));
        assert!(bytes(&dst) == bytes(buf), "data at {addr:#x} differs");
    }
}

#[test]
fn offsets_near_the_end_of_card_memory() {
    let Some((card, _turn)) = card() else { return };
    let size = card.status().card_memory_bytes;
    let align = card.status().alignment;
    let buf = pinned(&card, 4 * align as usize, 9);
    let len = 4 * align;
    card.write_h2c(0, &buf, size - len, len, TIMEOUT)
        .expect("a transfer ending at the last byte");
    card.read_c2h(0, &buf, size - len, len, TIMEOUT)
        .expect("and back");
    let e = card
        .read_c2h(0, &buf, size - len + align, len, TIMEOUT)
        .unwrap_err();
    assert_rule(&e, "card-bounds", &[]);
    // The card still works after the refusal.
    card.read_c2h(0, &buf, 0, len, TIMEOUT)
        .expect("a transfer after a refused one");
}

/// The kernel back-end's frame trigger against the module's frame protocol and the
/// software card's test sensor: every event's slot is its sequence mod N, sequences
/// grow by one plus what was missed, the arrival is in the past, and the frame DMA'd
/// from the slot carries the sequence the event announced (unless the card already
/// overwrote it: then a later one).
#[test]
fn frame_trigger_events_match_their_slots() {
    let Some((card, _turn)) = card() else { return };
    let mut trig = card
        .frame_trigger()
        .expect("the software card speaks the frame protocol");
    let n = u64::from(trig.slots());
    assert!(n > 0 && trig.max_frame_len() >= fpgagdr::frame::HEADER_LEN);
    let buf = pinned(&card, trig.max_frame_len(), 9);
    let mut last: Option<u64> = None;
    let mut matched = 0;
    for _ in 0..40 {
        let f = trig
            .wait_frame(TIMEOUT)
            .expect("a frame within 5 s (sensor at its default rate)");
        assert_eq!(u64::from(f.slot), f.seq % n, "{f:?}");
        assert!(f.queue_overflow <= f.missed, "{f:?}");
        if let Some(p) = last {
            assert_eq!(f.seq, p + 1 + f.missed, "the gap is what was missed: {f:?}");
        }
        last = Some(f.seq);
        assert!(f.arrived <= std::time::Instant::now(), "{f:?}");
        card.read_c2h(0, &buf, f.card_addr, f.len, TIMEOUT)
            .expect("C2H of the slot");
        let head = bytes(&buf);
        let h = fpgagdr::FrameHeader::parse(&head, f.len as usize).expect("a frame header");
        assert!(
            h.seq >= f.seq,
            "the slot holds an older frame than announced: {f:?} {h:?}"
        );
        matched += u32::from(h.seq == f.seq);
    }
    assert!(matched > 0, "no frame read back as announced");
    let cache = card.chain_cache().expect("the module's counters");
    assert!(cache.hits + cache.misses > 0);
}
