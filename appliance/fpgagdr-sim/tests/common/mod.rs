//! Helpers shared by the integration tests: simulated cards, pinned buffers filled with
//! a known pattern, and an assertion that an error names its rule and the values that
//! broke it. Every test crate uses a different subset, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::time::Duration;

use fpgagdr::{Card, DmaMemory, Error, PinnedBuffer};
use fpgagdr_sim::{LinkPreset, SimConfig};

/// A timeout no simulated transfer of these tests comes near.
pub(crate) const GENEROUS: Duration = Duration::from_secs(5);
/// 1 KiB, 1 MiB, 1 GiB.
pub(crate) const KIB: u64 = 1 << 10;
pub(crate) const MIB: u64 = 1 << 20;
pub(crate) const GIB: u64 = 1 << 30;

/// A simulated card with default channels and 2 GiB of card memory.
pub(crate) fn sim(preset: LinkPreset) -> Card {
    fpgagdr_sim::open_sim(SimConfig {
        preset,
        ..SimConfig::default()
    })
}

/// Host memory of `len` bytes with the card's pin alignment, pinned.
pub(crate) fn pinned(card: &Card, len: u64) -> PinnedBuffer {
    let align = card.status().alignment as usize;
    let mem = DmaMemory::host(len as usize, align).expect("host memory");
    card.pin(mem).expect("pin")
}

/// Host memory holding `bytes` (its length rounded up to the alignment), then pinned:
/// the CPU writes a buffer before pinning it, the card owns the writes afterwards.
pub(crate) fn pinned_with(card: &Card, bytes: &[u8]) -> PinnedBuffer {
    let align = card.status().alignment as usize;
    let len = bytes.len().div_ceil(align).max(1) * align;
    let mut mem = DmaMemory::host(len, align).expect("host memory");
    mem.as_mut_slice().expect("host memory is addressable")[..bytes.len()].copy_from_slice(bytes);
    card.pin(mem).expect("pin")
}

/// The bytes of a pinned host buffer.
#[allow(unsafe_code)]
pub(crate) fn bytes(buf: &PinnedBuffer) -> &[u8] {
    // SAFETY: the tests read a buffer only after their transfers into it returned, and
    // no other thread transfers into it meanwhile.
    unsafe { buf.host_bytes() }.expect("host memory is addressable")
}

/// `len` bytes that differ per `seed` and have no short period (so a shifted or
/// misrouted copy cannot compare equal by accident).
pub(crate) fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            // xorshift64*
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

/// Asserts that `e` broke `rule` and that its message names every one of `values`.
#[track_caller]
pub(crate) fn assert_rule(e: &Error, rule: &str, values: &[&str]) {
    assert_eq!(e.rule(), rule, "wrong rule for: {e}");
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!("rule {rule}: ")),
        "message does not start with its rule: {msg}"
    );
    for v in values {
        assert!(msg.contains(v), "message does not name {v:?}: {msg}");
    }
}

/// Index of the first differing byte, for a readable failure instead of a 1 MiB dump.
#[track_caller]
pub(crate) fn assert_same(got: &[u8], want: &[u8], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        panic!(
            "{what}: first difference at byte {i}: got {:#04x}, want {:#04x}",
            got[i], want[i]
        );
    }
}
