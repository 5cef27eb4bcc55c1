//! One test (or more) per rule a call can break: each checks the error's stable rule
//! name ([`fpgagdr::Error::rule`]) and that the message names the values that broke it,
//! on the simulated card through the public API only.
//!
//! `unsafe` appears only to call the legacy `mm_*` functions, which are `unsafe fn`
//! because of their CPU mode; these tests call them in GPU-pinned mode, where they only
//! look the address up.
#![allow(unsafe_code)]

mod common;

use std::time::{Duration, Instant};

use common::{GENEROUS, GIB, KIB, MIB, assert_rule, bytes, pinned, pinned_with, sim};
use fpgagdr::{Direction, DmaMemory, DmaRegion, Error, Handle, MemoryKind, TransferMode};
use fpgagdr_sim::{LinkPreset, SimConfig};

const T: Duration = Duration::from_millis(500);

fn hex(v: u64) -> String {
    format!("{v:#x}")
}

// ---------------------------------------------------------------- alignment

/// Host memory of `len` bytes at a 4 KiB boundary that is not a 64 KiB boundary.
///
/// The allocator decides addresses, so ask with 4 KiB alignment until one lands off a
/// 64 KiB boundary, keeping the earlier ones alive so each try gets a new address.
fn page_aligned_not_gpu_page_aligned(len: usize) -> DmaMemory {
    let mut tried = Vec::new();
    for _ in 0..64 {
        let m = DmaMemory::host(len, 4096).unwrap();
        assert_eq!(m.addr() % 4096, 0);
        if !m.addr().is_multiple_of(65536) {
            return m;
        }
        tried.push(m);
    }
    panic!("64 allocations with 4 KiB alignment all landed on 64 KiB boundaries");
}

/// Host memory of `len` bytes whose address is not a multiple of 4 KiB.
fn not_page_aligned(len: usize) -> DmaMemory {
    let mut tried = Vec::new();
    for _ in 0..64 {
        let m = DmaMemory::host(len, 64).unwrap();
        if !m.addr().is_multiple_of(4096) {
            return m;
        }
        tried.push(m);
    }
    panic!("64 allocations with 64-byte alignment all landed on 4 KiB boundaries");
}

#[test]
fn alignment_4k_buffer_pins_on_orin_but_not_on_x86() {
    let orin = sim(LinkPreset::OrinGen3x4);
    let x86 = sim(LinkPreset::X86Gen3x8);
    assert_eq!(orin.status().alignment, 4096);
    assert_eq!(x86.status().alignment, 65536);

    let mem = page_aligned_not_gpu_page_aligned(64 * KIB as usize);
    let addr = mem.addr();
    let buf = orin
        .pin(mem)
        .expect("a 4 KiB-aligned buffer pins on the Orin preset");
    let mem = buf.unpin().unwrap();
    assert_eq!(mem.addr(), addr);

    let e = x86.pin(mem).unwrap_err();
    assert_rule(
        &e,
        "alignment",
        &["buffer address", &hex(addr), "65536 bytes", "desktop"],
    );
    assert!(matches!(
        e,
        Error::Alignment {
            value,
            required: 65536,
            ..
        } if value == addr
    ));
}

#[test]
fn alignment_address_off_a_4k_boundary_fails_on_orin() {
    let card = sim(LinkPreset::OrinGen3x4);
    let mem = not_page_aligned(8192);
    let addr = mem.addr();
    let e = card.pin(mem).unwrap_err();
    assert_rule(
        &e,
        "alignment",
        &["buffer address", &hex(addr), "4096 bytes", "tegra"],
    );
}

#[test]
fn alignment_odd_length_fails_on_orin() {
    let card = sim(LinkPreset::OrinGen3x4);
    // Aligned address, odd length.
    let e = card.pin(DmaMemory::host(4097, 4096).unwrap()).unwrap_err();
    assert_rule(
        &e,
        "alignment",
        &["buffer length", &hex(4097), "4096 bytes", "tegra"],
    );
}

#[test]
fn alignment_4k_length_fails_on_x86_and_pins_on_orin() {
    let x86 = sim(LinkPreset::X86Gen3x8);
    let e = x86.pin(DmaMemory::host(4096, 65536).unwrap()).unwrap_err();
    assert_rule(
        &e,
        "alignment",
        &["buffer length", &hex(4096), "65536 bytes", "desktop"],
    );
    let orin = sim(LinkPreset::OrinGen3x4);
    orin.pin(DmaMemory::host(4096, 65536).unwrap()).unwrap();
}

#[test]
fn alignment_off_preset_keeps_the_orin_rule() {
    let card = sim(LinkPreset::Off);
    assert_eq!(card.status().alignment, 4096);
    let e = card.pin(DmaMemory::host(6000, 4096).unwrap()).unwrap_err();
    assert_rule(&e, "alignment", &["buffer length", &hex(6000), "4096"]);
}

// ---------------------------------------------------------------- card-bounds

#[test]
fn card_bounds_end_past_2_gib() {
    let card = sim(LinkPreset::Off);
    let end = card.status().card_memory_bytes;
    assert_eq!(end, 2 * GIB);
    let buf = pinned(&card, 64 * KIB);

    let e = card.read_c2h(0, &buf, end - 4096, 8192, T).unwrap_err();
    assert_rule(
        &e,
        "card-bounds",
        &["card address 0x7ffff000", "length 8192", "2147483648 bytes"],
    );
    let e = card.write_h2c(0, &buf, end - 4096, 8192, T).unwrap_err();
    assert_rule(&e, "card-bounds", &["0x7ffff000", "8192", "2147483648"]);
    // The host (path A) calls obey the same rule.
    let e = card.read_c2h_to_host(0, end, &mut [0u8; 1], T).unwrap_err();
    assert_rule(&e, "card-bounds", &["0x80000000", "length 1", "2147483648"]);
    let e = card
        .write_h2c_from_host(0, end - 1, &[1, 2], T)
        .unwrap_err();
    assert_rule(&e, "card-bounds", &["0x7fffffff", "length 2"]);

    // Ending exactly at the end is fine.
    card.read_c2h(0, &buf, end - 4096, 4096, T).unwrap();
}

#[test]
fn card_bounds_overflow_of_the_card_address() {
    let card = sim(LinkPreset::Off);
    let buf = pinned(&card, 64 * KIB);
    let e = card.read_c2h(0, &buf, u64::MAX, 4096, T).unwrap_err();
    assert_rule(&e, "card-bounds", &["0xffffffffffffffff", "length 4096"]);
    let e = card
        .transfer_handle(Direction::H2C, 0, buf.handle(), 0, u64::MAX - 100, 4096, T)
        .unwrap_err();
    assert_rule(&e, "card-bounds", &[&hex(u64::MAX - 100), "4096"]);
}

// ---------------------------------------------------------------- length-nonzero

#[test]
fn length_nonzero_for_transfers_and_buffers() {
    let card = sim(LinkPreset::Off);
    let buf = pinned(&card, 64 * KIB);
    let must_be = ["transfer length must be greater than zero"];
    assert_rule(
        &card.read_c2h(0, &buf, 0, 0, T).unwrap_err(),
        "length-nonzero",
        &must_be,
    );
    assert_rule(
        &card.write_h2c(0, &buf, 0, 0, T).unwrap_err(),
        "length-nonzero",
        &must_be,
    );
    assert_rule(
        &card
            .transfer_handle(Direction::C2H, 0, buf.handle(), 0, 0, 0, T)
            .unwrap_err(),
        "length-nonzero",
        &must_be,
    );
    assert_rule(
        &card.read_c2h_to_host(0, 0, &mut [], T).unwrap_err(),
        "length-nonzero",
        &must_be,
    );
    assert_rule(
        &card.write_h2c_from_host(0, 0, &[], T).unwrap_err(),
        "length-nonzero",
        &must_be,
    );
    card.set_transfer_mode(TransferMode::GpuPinned);
    // SAFETY: GPU-pinned mode only looks the address up (and the length is zero).
    let e = unsafe { card.mm_read_c2h(0, buf.addr(), 0, 0, T) }.unwrap_err();
    assert_rule(&e, "length-nonzero", &must_be);
    assert_rule(
        &DmaMemory::host(0, 4096).unwrap_err(),
        "length-nonzero",
        &["buffer length must be greater than zero"],
    );
}

// ---------------------------------------------------------------- buffer-bounds

#[test]
fn buffer_bounds_offset_plus_length_past_the_buffer() {
    let card = sim(LinkPreset::Off);
    let buf = pinned(&card, 64 * KIB);
    let e = card
        .read_c2h_at(0, &buf, 60 * KIB, 0, 8 * KIB, T)
        .unwrap_err();
    assert_rule(
        &e,
        "buffer-bounds",
        &["offset 61440", "length 8192", "65536 bytes"],
    );
    let e = card.write_h2c(0, &buf, 0, 64 * KIB + 1, T).unwrap_err();
    assert_rule(&e, "buffer-bounds", &["offset 0", "length 65537", "65536"]);
    let e = card.read_c2h_at(0, &buf, u64::MAX, 0, 1, T).unwrap_err();
    assert_rule(&e, "buffer-bounds", &["offset 18446744073709551615"]);
    // Exactly to the end is fine.
    card.read_c2h_at(0, &buf, 60 * KIB, 0, 4 * KIB, T).unwrap();
}

#[test]
fn buffer_bounds_checked_by_the_back_end_for_raw_handles() {
    // The raw-handle call has no buffer to measure; the back-end checks its pin.
    let card = sim(LinkPreset::Off);
    let buf = pinned(&card, 64 * KIB);
    let e = card
        .transfer_handle(Direction::C2H, 0, buf.handle(), 64 * KIB, 0, 1, T)
        .unwrap_err();
    assert_rule(
        &e,
        "buffer-bounds",
        &["offset 65536", "length 1", "65536 bytes"],
    );
    let e = card
        .transfer_handle(Direction::H2C, 0, buf.handle(), u64::MAX - 1, 0, 4, T)
        .unwrap_err();
    assert_rule(&e, "buffer-bounds", &["offset 18446744073709551614"]);
}

// ---------------------------------------------------------------- handle-valid

#[test]
fn handle_valid_after_unpin() {
    let card = sim(LinkPreset::Off);
    let buf = pinned(&card, 64 * KIB);
    let h = buf.handle();
    card.transfer_handle(Direction::C2H, 0, h, 0, 0, 4096, T)
        .expect("the handle works while pinned");
    let _memory = buf.unpin().unwrap();
    for dir in [Direction::C2H, Direction::H2C] {
        let e = card.transfer_handle(dir, 0, h, 0, 0, 4096, T).unwrap_err();
        assert_rule(&e, "handle-valid", &[&format!("handle {h}"), "released"]);
    }
    // Unpinning twice through the back-end names the handle too.
    let e = card.backend().unpin(h).unwrap_err();
    assert_rule(&e, "handle-valid", &[&format!("handle {h}")]);
}

#[test]
fn handle_valid_never_issued() {
    let card = sim(LinkPreset::Off);
    let _buf = pinned(&card, 64 * KIB);
    for raw in [0, 0xdead_beef, u64::MAX] {
        let e = card
            .transfer_handle(Direction::C2H, 0, Handle(raw), 0, 0, 4096, T)
            .unwrap_err();
        assert_rule(&e, "handle-valid", &[&format!("handle {raw} ")]);
    }
}

#[test]
fn handle_valid_buffer_pinned_by_another_card() {
    // Each card numbers its pins from 1, so the same handle value names a different
    // buffer on each card. A buffer must only be used on the card that pinned it.
    let a = sim(LinkPreset::Off);
    let b = sim(LinkPreset::Off);
    let on_b = pinned(&b, 4 * KIB);
    let on_a = pinned(&a, 8 * KIB);
    assert_eq!(on_a.handle(), on_b.handle(), "test premise: equal handles");
    b.write_h2c_from_host(0, 0, &[0x5a; 4096], T).unwrap();

    let e = b.read_c2h(0, &on_a, 0, 4096, T).unwrap_err();
    assert_rule(&e, "handle-valid", &[&format!("handle {}", on_a.handle())]);
    let e = b.write_h2c(0, &on_a, 0, 4096, T).unwrap_err();
    assert_rule(&e, "handle-valid", &[]);
    assert!(bytes(&on_a).iter().all(|&x| x == 0));
    assert!(
        bytes(&on_b).iter().all(|&x| x == 0),
        "card b wrote its own buffer with the same handle number"
    );
    let e = b.register_buffer(on_a).unwrap_err();
    assert_rule(&e, "handle-valid", &[]);
    assert_eq!(b.registered_buffers(), 0);
}

// ---------------------------------------------------------------- channel-range

#[test]
fn channel_range_c2h_and_h2c_from_status() {
    let card = sim(LinkPreset::Off);
    let st = card.status().clone();
    assert_eq!((st.c2h_channels, st.h2c_channels), (4, 4));
    let buf = pinned(&card, 64 * KIB);
    for ch in 0..st.c2h_channels {
        card.read_c2h(ch, &buf, 0, 4096, T).unwrap();
    }
    for ch in 0..st.h2c_channels {
        card.write_h2c(ch, &buf, 0, 4096, T).unwrap();
    }
    let e = card
        .read_c2h(st.c2h_channels, &buf, 0, 4096, T)
        .unwrap_err();
    assert_rule(&e, "channel-range", &["C2H channel 4", "the card has 4"]);
    let e = card
        .write_h2c(st.h2c_channels, &buf, 0, 4096, T)
        .unwrap_err();
    assert_rule(&e, "channel-range", &["H2C channel 4", "the card has 4"]);
    let e = card
        .transfer_handle(Direction::C2H, u32::MAX, buf.handle(), 0, 0, 1, T)
        .unwrap_err();
    assert_rule(&e, "channel-range", &["C2H channel 4294967295"]);
}

#[test]
fn channel_range_follows_the_configured_counts() {
    let card = fpgagdr_sim::open_sim(SimConfig {
        preset: LinkPreset::Off,
        c2h_channels: 2,
        h2c_channels: 1,
        ..SimConfig::default()
    });
    let st = card.status();
    assert_eq!((st.c2h_channels, st.h2c_channels), (2, 1));
    let e = card.read_c2h_to_host(2, 0, &mut [0u8; 16], T).unwrap_err();
    assert_rule(&e, "channel-range", &["C2H channel 2", "the card has 2"]);
    let e = card.write_h2c_from_host(1, 0, &[0u8; 16], T).unwrap_err();
    assert_rule(&e, "channel-range", &["H2C channel 1", "the card has 1"]);
    card.read_c2h_to_host(1, 0, &mut [0u8; 16], T).unwrap();
    card.write_h2c_from_host(0, 0, &[0u8; 16], T).unwrap();
}

// ---------------------------------------------------------------- timeout

#[test]
fn timeout_8_mib_on_orin_within_1_ms_fails_then_the_channel_works() {
    let card = sim(LinkPreset::OrinGen3x4);
    let len = 8 * MIB;
    let data = common::pattern(len as usize, 8);
    card.write_h2c_from_host(0, 0, &data, GENEROUS).unwrap();
    let buf = pinned(&card, len);

    let start = Instant::now();
    let e = card
        .read_c2h(2, &buf, 0, len, Duration::from_millis(1))
        .unwrap_err();
    assert!(start.elapsed() >= Duration::from_millis(1), "gave up early");
    assert_rule(
        &e,
        "timeout",
        &[
            "C2H transfer of 8388608 bytes",
            "within 1ms",
            "the engine was aborted and the channel is usable",
        ],
    );

    // Same channel, generous timeout: the modelled ≈ 3.6 ms transfer completes.
    let t = card.read_c2h(2, &buf, 0, len, GENEROUS).unwrap();
    assert_eq!(t.bytes, len);
    assert!(t.elapsed >= Duration::from_millis(3), "{:?}", t.elapsed);
    common::assert_same(bytes(&buf), &data, "8 MiB after a timed-out attempt");
}

#[test]
fn timeout_h2c_and_host_path() {
    let card = sim(LinkPreset::OrinGen3x4);
    let buf = pinned(&card, 8 * MIB);
    let e = card
        .write_h2c(1, &buf, 0, 8 * MIB, Duration::from_millis(1))
        .unwrap_err();
    assert_rule(&e, "timeout", &["H2C transfer of 8388608 bytes", "1ms"]);
    card.write_h2c(1, &buf, 0, 8 * MIB, GENEROUS).unwrap();

    let mut host = vec![0u8; 8 * MIB as usize];
    let e = card
        .read_c2h_to_host(3, 0, &mut host, Duration::from_micros(500))
        .unwrap_err();
    assert_rule(&e, "timeout", &["C2H transfer of 8388608 bytes", "500µs"]);
    card.read_c2h_to_host(3, 0, &mut host, GENEROUS).unwrap();
}

#[test]
fn timeout_nonzero() {
    let card = sim(LinkPreset::Off);
    let buf = pinned(&card, 64 * KIB);
    let z = Duration::ZERO;
    let must_be = ["timeout must be greater than zero"];
    for e in [
        card.read_c2h(0, &buf, 0, 4096, z).unwrap_err(),
        card.write_h2c(0, &buf, 0, 4096, z).unwrap_err(),
        card.read_c2h_to_host(0, 0, &mut [0u8; 4], z).unwrap_err(),
        card.write_h2c_from_host(0, 0, &[0u8; 4], z).unwrap_err(),
        card.transfer_handle(Direction::C2H, 0, buf.handle(), 0, 0, 4096, z)
            .unwrap_err(),
    ] {
        assert_rule(&e, "timeout-nonzero", &must_be);
    }
}

// ---------------------------------------------------------------- no-overlap

/// `register_buffer` refuses a buffer that overlaps a registered one. Through the public
/// API two overlapping buffers cannot exist: `Card::pin` consumes the `DmaMemory`, each
/// `DmaMemory` is its own allocation, and a buffer pinned by another card is refused
/// before the overlap check (rule handle-valid). So the check is defensive and cannot be
/// reached here; what is testable is (1) distinct buffers register side by side, and a
/// released region registers again (no stale entry), (2) the overlap predicate the
/// check uses, on the regions of real buffers, and (3) the error's rule and message.
#[test]
fn no_overlap_distinct_buffers_register_and_release_cleanly() {
    let card = sim(LinkPreset::Off);
    let a = pinned(&card, 64 * KIB);
    let b = pinned(&card, 128 * KIB);
    let (ra, rb) = (a.region(), b.region());
    assert!(!ra.overlaps(&rb) && !rb.overlaps(&ra));
    let addr_a = card.register_buffer(a).unwrap();
    let addr_b = card.register_buffer(b).unwrap();
    assert_eq!((addr_a, addr_b), (ra.addr, rb.addr));
    assert_eq!(card.registered_buffers(), 2);

    // Release and register the same region again.
    let a = card.release_buffer(addr_a).unwrap();
    assert_eq!(card.registered_buffers(), 1);
    assert_eq!(card.register_buffer(a).unwrap(), addr_a);
    assert_eq!(card.registered_buffers(), 2);
}

#[test]
fn no_overlap_predicate_on_real_regions() {
    let card = sim(LinkPreset::Off);
    let a = pinned(&card, 64 * KIB);
    let r = a.region();
    let at = |addr: u64, len: u64| DmaRegion {
        addr,
        len,
        kind: MemoryKind::Host,
    };
    assert!(r.overlaps(&r));
    assert!(r.overlaps(&at(r.addr + r.len - 1, 2)), "last byte shared");
    assert!(r.overlaps(&at(r.addr - 1, 2)), "first byte shared");
    assert!(r.overlaps(&at(r.addr + 4096, 1)), "inside");
    assert!(r.overlaps(&at(r.addr - 4096, r.len + 8192)), "around");
    assert!(!r.overlaps(&at(r.addr + r.len, 4096)), "adjacent above");
    assert!(!r.overlaps(&at(r.addr - 4096, 4096)), "adjacent below");
}

#[test]
fn no_overlap_error_names_both_buffers() {
    // Built by hand: the check cannot be reached through the public API (see above).
    let e = Error::Overlap {
        addr: 0x7f00_0000_1000,
        len: 65536,
        other_addr: 0x7f00_0000_0000,
        other_len: 8192,
    };
    assert_rule(
        &e,
        "no-overlap",
        &[
            "0x7f0000001000",
            "65536 bytes",
            "0x7f0000000000",
            "8192 bytes",
        ],
    );
}

// ---------------------------------------------------------------- registered-buffer

#[test]
fn registered_buffer_address_outside_every_registered_buffer() {
    let card = sim(LinkPreset::Off);
    card.set_transfer_mode(TransferMode::GpuPinned);
    let a = card.register_buffer(pinned(&card, 64 * KIB)).unwrap();
    let b = card.register_buffer(pinned(&card, 64 * KIB)).unwrap();
    let outside = pinned_with(&card, &[1; 4096]); // never registered
    let cases = [
        (a + 64 * KIB, 4096),     // just past a (unless b follows a: checked below)
        (a + 60 * KIB, 8192),     // straddles a's end
        (b + 32 * KIB, 64 * KIB), // straddles b's end
        (outside.addr(), 4096),   // a pinned but unregistered buffer
        (0, 1),
        (u64::MAX, 1),
    ];
    for (addr, len) in cases {
        if addr == b {
            continue; // the allocator placed b right after a
        }
        // SAFETY: GPU-pinned mode only looks the address up.
        let e = unsafe { card.mm_read_c2h(0, addr, 0, len, T) }.unwrap_err();
        assert_rule(
            &e,
            "registered-buffer",
            &[&format!("address {} + {len} bytes", hex(addr))],
        );
        // SAFETY: as above.
        let e = unsafe { card.mm_write_h2c(0, addr, 0, len, T) }.unwrap_err();
        assert_rule(&e, "registered-buffer", &[&hex(addr)]);
    }
    // Inside works, including a range ending exactly at a buffer's end.
    // SAFETY: as above.
    unsafe { card.mm_read_c2h(0, a + 60 * KIB, 0, 4 * KIB, T) }.unwrap();
    // Releasing by an address that is not a buffer's start is refused too.
    let e = card.release_buffer(a + 4096).unwrap_err();
    assert_rule(&e, "registered-buffer", &[&hex(a + 4096)]);
    assert_eq!(card.registered_buffers(), 2);
}
