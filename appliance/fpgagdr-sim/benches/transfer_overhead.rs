//! The library's own per-transfer cost, measured on `SimCard` with the link model off
//! (`LinkPreset::Off`): what remains is argument checks, the pin lookup, engine and pin
//! locks and the copy of the bytes, i.e. the software on the frame path minus the DMA.
//!
//! Groups:
//! - `c2h_pinned`: `Card::read_c2h` into a pinned host buffer at 4 KiB, 64 KiB, 1 MiB;
//! - `mm_read_c2h_gpu_pinned`: the legacy `Card::mm_read_c2h` in
//!   `TransferMode::GpuPinned`, routed by address lookup among 4 registered buffers;
//! - `validation_failure`: calls refused by the checks alone (no back-end work).
//!
//! Run: `cargo bench -p fpgagdr --bench transfer_overhead` (about a minute on 2 cores).
//! Throughput is in bytes per second of the copy, a ceiling for the library, not a link
//! figure; the modelled link times are in `src/sim/link.rs`.
#![allow(unsafe_code)] // only to call the legacy `unsafe fn mm_read_c2h`, see below

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use fpgagdr::{Card, DmaMemory, PinnedBuffer, TransferMode};
use fpgagdr_sim::{LinkPreset, SimConfig};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const SIZES: [u64; 3] = [4 * KIB, 64 * KIB, MIB];
const TIMEOUT: Duration = Duration::from_secs(1);

fn label(bytes: u64) -> String {
    if bytes >= MIB {
        format!("{}MiB", bytes / MIB)
    } else {
        format!("{}KiB", bytes / KIB)
    }
}

/// A simulated card with the link model off, its first MiB of card memory written (so
/// reads copy real chunks, not the zero page of unwritten memory).
fn card() -> Card {
    let card = fpgagdr_sim::open_sim(SimConfig {
        preset: LinkPreset::Off,
        ..SimConfig::default()
    });
    let data: Vec<u8> = (0..MIB).map(|i| (i % 251) as u8).collect();
    card.write_h2c_from_host(0, 0, &data, TIMEOUT)
        .expect("fill card memory");
    card
}

fn pinned(card: &Card, len: u64) -> PinnedBuffer {
    let align = card.status().alignment as usize;
    card.pin(DmaMemory::host(len as usize, align).expect("host memory"))
        .expect("pin")
}

fn c2h_pinned(c: &mut Criterion) {
    let card = card();
    let buf = pinned(&card, MIB);
    let mut g = c.benchmark_group("c2h_pinned");
    for size in SIZES {
        g.throughput(Throughput::Bytes(size));
        g.bench_with_input(BenchmarkId::from_parameter(label(size)), &size, |b, &n| {
            b.iter(|| card.read_c2h(0, &buf, 0, black_box(n), TIMEOUT).unwrap())
        });
    }
    g.finish();
}

fn mm_read_c2h_gpu_pinned(c: &mut Criterion) {
    let card = card();
    let mut addrs: Vec<u64> = (0..4)
        .map(|_| card.register_buffer(pinned(&card, MIB)).expect("register"))
        .collect();
    addrs.sort_unstable();
    card.set_transfer_mode(TransferMode::GpuPinned);
    // The third buffer by address: the lookup has to pass others on either side.
    let target = addrs[2];
    let mut g = c.benchmark_group("mm_read_c2h_gpu_pinned");
    for size in SIZES {
        g.throughput(Throughput::Bytes(size));
        g.bench_with_input(BenchmarkId::from_parameter(label(size)), &size, |b, &n| {
            b.iter(|| {
                // SAFETY: GpuPinned mode only looks the address up among registered
                // buffers; it never dereferences it.
                unsafe { card.mm_read_c2h(0, black_box(target), 0, black_box(n), TIMEOUT) }.unwrap()
            })
        });
    }
    g.finish();
}

fn validation_failure(c: &mut Criterion) {
    let card = card();
    let buf = pinned(&card, MIB);
    let end = card.status().card_memory_bytes;
    let mut g = c.benchmark_group("validation_failure");
    // Refused by the first check.
    g.bench_function("channel_range", |b| {
        b.iter(|| {
            card.read_c2h(black_box(99), &buf, 0, 4 * KIB, TIMEOUT)
                .unwrap_err()
        })
    });
    // Refused after buffer, channel and length checks pass: every check runs.
    g.bench_function("card_bounds", |b| {
        b.iter(|| {
            card.read_c2h(0, &buf, black_box(end), 4 * KIB, TIMEOUT)
                .unwrap_err()
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(50);
    targets = c2h_pinned, mm_read_c2h_gpu_pinned, validation_failure
}
criterion_main!(benches);
