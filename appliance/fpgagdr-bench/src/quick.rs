//! `quick`: the functional suite — 15 checks, each PASS or FAIL with its figure.
//!
//! Checks 1–10 are the reference report's list (§3.3, §4.5.1): status, pin (timed), C2H read, H2C
//! write, unpin (timed), data integrity over a 1 MiB pattern (every 32-bit word
//! compared), 10 × batch read, the 2 GiB card address space at 7 points, 6 stress
//! offsets, 6 boundary points. Checks 11–15 cover the rest of the API a capture program
//! uses: path A round trip, every DMA channel, the pin lifecycle (repeated pin/unpin, a
//! released handle refused), the argument rules, and the TransferMode buffer registry.
//!
//! Pinned buffers are frame memory: GPU memory with a GPU (the reference report's case),
//! pinned host memory without one (stated in the output). Data in GPU device memory is read
//! back by unpinning it and copying it to the host, so every comparison sees the bytes the
//! DMA wrote. A check that fails does not stop the others; the exit status is 1 if any
//! failed. A progress bar counts the checks (hidden off a terminal and with `--json`);
//! after Ctrl-C the checks not yet run are listed as FAIL "not run: interrupted".

use std::time::{Duration, Instant};

use fpgagdr::{Direction, DmaMemory, PinnedBuffer, TransferMode};

use crate::bench::{Bench, PinnedMemory};
use crate::reference::{Compare, RefData};
use crate::report::{Outcome, Section, Table};
use crate::stats::gbps;
use crate::units::{KIB, MIB, fmt_size};

/// One check's outcome.
#[derive(Debug, serde::Serialize)]
pub(crate) struct Check {
    /// 1..=15.
    pub(crate) n: u32,
    /// Short name.
    pub(crate) name: &'static str,
    /// PASS (true) or FAIL.
    pub(crate) pass: bool,
    /// The figure or the failure, for people.
    pub(crate) figure: String,
    /// Numeric figures by name, with the unit in the name (`pin_us`, `read_gbps`).
    pub(crate) values: serde_json::Map<String, serde_json::Value>,
}

/// The result of `quick`.
#[derive(Debug, serde::Serialize)]
pub(crate) struct QuickOutcome {
    /// The memory pinned buffers are.
    pub(crate) memory: PinnedMemory,
    /// The checks, in order.
    pub(crate) checks: Vec<Check>,
    /// Checks passed.
    pub(crate) passed: usize,
    /// Checks failed.
    pub(crate) failed: usize,
    /// Checks whose timed figure is noisy (the machine was busy): their PASS is about
    /// function, their figure cannot be quoted.
    pub(crate) noisy_figures: Vec<&'static str>,
}

/// Checks in the suite (the progress bar's length).
const CHECKS: u64 = 15;

/// Timed transfers behind checks 3 and 4's figures (after one untimed transfer).
pub(crate) const QUICK_TIMED: usize = 21;

type Figures = Vec<(&'static str, f64)>;
type CheckResult = Result<(String, Figures), String>;

/// Converts a library or tool error into a FAIL text.
fn f<T, E: std::fmt::Display>(r: Result<T, E>, what: &str) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e}"))
}

fn elapsed_us(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1e6
}

/// `len` bytes of 32-bit words from a xorshift generator seeded with `seed` (no short
/// period, so a shifted or misrouted copy does not compare equal by accident).
pub(crate) fn pattern(len: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9) | 1;
    let mut v = Vec::with_capacity(len + 4);
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(len);
    v
}

/// Compares every 32-bit word; returns the number compared or the first mismatch.
fn compare_words(got: &[u8], want: &[u8], what: &str) -> Result<usize, String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} bytes, expected {}",
            got.len(),
            want.len()
        ));
    }
    for (i, (g, w)) in got.chunks(4).zip(want.chunks(4)).enumerate() {
        if g != w {
            return Err(format!(
                "{what}: word {i} (byte {}) is {g:02x?}, expected {w:02x?}",
                i * 4
            ));
        }
    }
    Ok(got.len().div_ceil(4))
}

/// Unpins `buf` and copies `len` bytes from `offset` to the host (a device-to-host copy
/// for GPU memory); gives the memory back for re-pinning.
fn read_back(buf: PinnedBuffer, offset: u64, len: u64) -> Result<(Vec<u8>, DmaMemory), String> {
    let mem = f(buf.unpin(), "unpin")?;
    let mut v = vec![0u8; len as usize];
    f(mem.copy_to_host(offset, &mut v), "copy to host")?;
    Ok((v, mem))
}

struct Ctx<'a> {
    b: &'a Bench,
    /// Card addresses of the scratch areas used by the checks (inside the first 1 GiB).
    span: u64,
}

impl Ctx<'_> {
    fn pin(&self, len: u64) -> Result<PinnedBuffer, String> {
        f(self.b.pin_frame_memory(len), "pin")
    }

    fn host_write(&self, addr: u64, data: &[u8]) -> Result<f64, String> {
        let b = self.b;
        let t0 = Instant::now();
        f(
            b.card.write_h2c_from_host(b.channel, addr, data, b.timeout),
            &format!(
                "path A write of {} at {addr:#x}",
                fmt_size(data.len() as u64)
            ),
        )?;
        Ok(elapsed_us(t0))
    }

    fn host_read(&self, addr: u64, len: u64) -> Result<(Vec<u8>, f64), String> {
        let b = self.b;
        let mut v = vec![0u8; len as usize];
        let t0 = Instant::now();
        f(
            b.card.read_c2h_to_host(b.channel, addr, &mut v, b.timeout),
            &format!("path A read of {} at {addr:#x}", fmt_size(len)),
        )?;
        Ok((v, elapsed_us(t0)))
    }

    fn read(&self, buf: &PinnedBuffer, off: u64, addr: u64, len: u64) -> Result<f64, String> {
        let b = self.b;
        let t0 = Instant::now();
        f(
            b.card
                .read_c2h_at(b.channel, buf, off, addr, len, b.timeout),
            &format!("C2H of {} at {addr:#x}", fmt_size(len)),
        )?;
        Ok(elapsed_us(t0))
    }

    fn write(&self, buf: &PinnedBuffer, off: u64, addr: u64, len: u64) -> Result<f64, String> {
        let b = self.b;
        let t0 = Instant::now();
        f(
            b.card
                .write_h2c_at(b.channel, buf, off, addr, len, b.timeout),
            &format!("H2C of {} at {addr:#x}", fmt_size(len)),
        )?;
        Ok(elapsed_us(t0))
    }
}

// Scratch card addresses (all below 1 GiB except the sweep and boundary checks, which
// go to the end of the card's memory).
const A_READ: u64 = 0x0100_0000; // 16 MiB: checks 3, 4
const A_INTEGRITY_SRC: u64 = 0x0200_0000;
const A_INTEGRITY_DST: u64 = 0x0300_0000;
const A_BATCH: u64 = 0x0400_0000; // 64 MiB, 10 MiB long
const A_PATH_A: u64 = 0x0600_0000;
const A_CHANNELS: u64 = 0x0700_0000;

/// Runs the 15 checks. Never fails as a whole: a check that cannot run is a FAIL.
pub(crate) fn run(b: &Bench) -> QuickOutcome {
    let cx = Ctx {
        b,
        span: b.card_span(),
    };
    let mut checks = Vec::new();
    let mut progress = crate::progress::Progress::new("quick", CHECKS);
    // Runs one check, or after Ctrl-C records it as not run (a FAIL: it was not shown
    // to work), so the document still lists all 15.
    let mut add = |name: &'static str, check: &mut dyn FnMut() -> CheckResult| {
        let n = checks.len() as u32 + 1;
        progress.message(name.to_string());
        let r = if crate::progress::interrupted() {
            Err("not run: interrupted (Ctrl-C) before this check".to_string())
        } else {
            check()
        };
        progress.inc(1);
        let (pass, figure, vals) = match r {
            Ok((fig, vals)) => (true, fig, vals),
            Err(e) => (false, e, Vec::new()),
        };
        let values = vals
            .into_iter()
            .map(|(k, v)| (k.to_string(), serde_json::json!(v)))
            .collect();
        checks.push(Check {
            n,
            name,
            pass,
            figure,
            values,
        });
    };

    add("status", &mut || status(&cx));
    // Checks 2–5 share one buffer: pin, read, write, unpin.
    let mut pinned: Option<PinnedBuffer> = None;
    add("pin", &mut || {
        let m = f(
            match b.pinned_memory().memory {
                fpgagdr::MemoryKind::Host => DmaMemory::host(MIB as usize, b.alignment() as usize),
                kind => DmaMemory::cuda(MIB as usize, kind),
            },
            "allocating 1 MiB",
        )?;
        let t0 = Instant::now();
        let buf = f(b.card.pin(m), "pin of 1 MiB")?;
        let us = elapsed_us(t0);
        let kind = buf.kind();
        pinned = Some(buf);
        Ok((
            format!("1 MiB of {kind} memory pinned in {us:.1} µs"),
            vec![("pin_us", us)],
        ))
    });
    // Checks 3 and 4 time QUICK_TIMED transfers after one untimed one (which pays
    // one-time costs: staging allocation, first touch of card memory) and report the
    // median with p10–p90 and the verdict; a noisy spread replaces the figure with
    // "noisy — rerun on an idle machine" (the check itself is about the transfer
    // working, so it still passes).
    let one =
        |r: Result<Vec<f64>, String>, dir: &str, key_us: &'static str, key_g: &'static str| {
            r.map(|v| {
            let m = crate::stats::Robust::of(&v).expect("QUICK_TIMED > 0 samples");
            let g = gbps(MIB, m.p50);
            let fig = format!(
                "1 MiB {dir}: median {:.1} µs (p10–p90 {:.1}–{:.1}), {g:.2} GB/s over {} transfers",
                m.p50, m.p10, m.p90, m.n
            );
            let fig = match m.verdict {
                crate::stats::Verdict::Steady => fig,
                v => format!("{} — {fig}", v.as_str()),
            };
            (fig, vec![(key_us, m.p50), (key_g, g), ("spread", m.spread)])
        })
        };
    let timed = |f: &dyn Fn() -> Result<f64, String>| -> Result<Vec<f64>, String> {
        f()?;
        (0..QUICK_TIMED).map(|_| f()).collect()
    };
    add("C2H read", &mut || match &pinned {
        Some(buf) => one(
            timed(&|| cx.read(buf, 0, A_READ, MIB)),
            "read",
            "read_us",
            "read_gbps",
        ),
        None => Err("no pinned buffer (pin failed)".into()),
    });
    add("H2C write", &mut || match &pinned {
        Some(buf) => one(
            timed(&|| cx.write(buf, 0, A_READ, MIB)),
            "write",
            "write_us",
            "write_gbps",
        ),
        None => Err("no pinned buffer (pin failed)".into()),
    });
    add("unpin", &mut || match pinned.take() {
        Some(buf) => {
            let t0 = Instant::now();
            f(buf.unpin(), "unpin").map(|_| {
                let us = elapsed_us(t0);
                (format!("unpinned in {us:.1} µs"), vec![("unpin_us", us)])
            })
        }
        None => Err("no pinned buffer (pin failed)".into()),
    });
    add("data integrity 1 MiB", &mut || integrity(&cx));
    add("10x batch read", &mut || batch(&cx));
    add("2 GiB address space, 7 points", &mut || address_points(&cx));
    add("2 GiB stress, 6 offsets", &mut || stress(&cx));
    add("2 GiB boundary, 6 points", &mut || boundary(&cx));
    add("path A round trip", &mut || path_a(&cx));
    add("every channel", &mut || channels(&cx));
    add("pin lifecycle", &mut || lifecycle(&cx));
    add("argument rules", &mut || rules(&cx));
    add("TransferMode registry", &mut || registry(&cx));

    progress.finish();
    let passed = checks.iter().filter(|c| c.pass).count();
    let noisy_figures = checks
        .iter()
        .filter(|c| c.figure.starts_with(crate::stats::Verdict::Noisy.as_str()))
        .map(|c| c.name)
        .collect();
    QuickOutcome {
        noisy_figures,
        memory: b.pinned_memory(),
        failed: checks.len() - passed,
        passed,
        checks,
    }
}

fn status(cx: &Ctx<'_>) -> CheckResult {
    let st = &cx.b.target.status;
    let mut problems = Vec::new();
    if st.c2h_channels == 0 || st.h2c_channels == 0 {
        problems.push("no C2H or no H2C channel");
    }
    if !st.alignment.is_power_of_two() {
        problems.push("alignment is not a power of two");
    }
    if !(st.capabilities.gpu_direct || st.capabilities.host_dma) {
        problems.push("neither GPU Direct nor host DMA");
    }
    if st.card_memory_bytes == 0 {
        problems.push("no card memory");
    }
    let mem = match st.card_memory_bytes {
        u64::MAX => "unknown (module parameter card_size is 0)".to_string(),
        n => fmt_size(n),
    };
    let fig = format!(
        "platform {}{}, alignment {} B, {} C2H / {} H2C channels, card memory {mem}, gpu_direct {}, host_dma {}",
        st.platform.as_str(),
        if st.simulated { " (simulated)" } else { "" },
        st.alignment,
        st.c2h_channels,
        st.h2c_channels,
        st.capabilities.gpu_direct,
        st.capabilities.host_dma
    );
    if problems.is_empty() {
        Ok((
            fig,
            vec![
                ("alignment_bytes", st.alignment as f64),
                ("c2h_channels", st.c2h_channels as f64),
                ("h2c_channels", st.h2c_channels as f64),
            ],
        ))
    } else {
        Err(format!("{}: {fig}", problems.join(", ")))
    }
}

fn integrity(cx: &Ctx<'_>) -> CheckResult {
    let data = pattern(MIB as usize, 1);
    cx.host_write(A_INTEGRITY_SRC, &data)?;
    let g = cx.pin(MIB)?;
    cx.read(&g, 0, A_INTEGRITY_SRC, MIB)?; // card → pinned memory
    cx.write(&g, 0, A_INTEGRITY_DST, MIB)?; // pinned memory → card
    let (back, _) = cx.host_read(A_INTEGRITY_DST, MIB)?;
    let w1 = compare_words(&back, &data, "card → pinned → card")?;
    let (inbuf, _) = read_back(g, 0, MIB)?;
    let w2 = compare_words(&inbuf, &data, "card → pinned memory")?;
    Ok((
        format!(
            "{w2} int32 words matched in pinned memory and {w1} after writing them back to the card"
        ),
        vec![("words_compared", (w1 + w2) as f64)],
    ))
}

fn batch(cx: &Ctx<'_>) -> CheckResult {
    let n = 10u64;
    let data = pattern((n * MIB) as usize, 10);
    cx.host_write(A_BATCH, &data)?;
    let g = cx.pin(n * MIB)?;
    let t0 = Instant::now();
    for i in 0..n {
        cx.read(&g, i * MIB, A_BATCH + i * MIB, MIB)?;
    }
    let us = elapsed_us(t0);
    let (back, _) = read_back(g, 0, n * MIB)?;
    compare_words(&back, &data, "10 MiB batch")?;
    let gb = gbps(n * MIB, us);
    Ok((
        format!("10 × 1 MiB = 10 MiB in {us:.1} µs, {gb:.2} GB/s, data matches"),
        vec![("batch_us", us), ("batch_gbps", gb)],
    ))
}

fn address_points(cx: &Ctx<'_>) -> CheckResult {
    let end = cx.span;
    let g = 1 << 30;
    let points = [
        0,
        256 * MIB,
        512 * MIB,
        g,
        g + 512 * MIB,
        end - 8 * MIB,
        end - 4 * KIB,
    ];
    let len_at = |p: u64| (end - p).min(MIB);
    // A different pattern per point, all written before any is read, so an address that
    // aliased another would show.
    let datas: Vec<Vec<u8>> = points
        .iter()
        .enumerate()
        .map(|(i, &p)| pattern(len_at(p) as usize, 20 + i as u32))
        .collect();
    for (p, d) in points.iter().zip(&datas) {
        cx.host_write(*p, d)?;
    }
    let buf = cx.pin(points.len() as u64 * MIB)?;
    for (i, &p) in points.iter().enumerate() {
        cx.read(&buf, i as u64 * MIB, p, len_at(p))?;
    }
    let (back, _) = read_back(buf, 0, points.len() as u64 * MIB)?;
    for (i, (&p, d)) in points.iter().zip(&datas).enumerate() {
        let off = i * MIB as usize;
        compare_words(
            &back[off..off + d.len()],
            d,
            &format!("card address {p:#x}"),
        )?;
    }
    Ok((
        format!(
            "7 points from 0 to {:#x}: data matches at every one",
            end - 4 * KIB
        ),
        vec![("points", 7.0)],
    ))
}

fn stress(cx: &Ctx<'_>) -> CheckResult {
    let end = cx.span;
    let len = 4 * MIB;
    // 4 MiB transfers straddling 64 MiB, 512 MiB, 1 GiB and 1.5 GiB, one near the end,
    // and one 4 KiB off every larger alignment.
    let offsets = [
        64 * MIB - 2 * MIB,
        512 * MIB - 2 * MIB,
        1024 * MIB - 2 * MIB,
        1536 * MIB - 2 * MIB,
        end - 64 * MIB - 2 * MIB,
        end / 2 + 4 * KIB + 128 * MIB,
    ];
    let rounds = 5;
    let buf = cx.pin(len)?;
    let mut worst: f64 = 0.0;
    let mut datas = Vec::new();
    for (i, &o) in offsets.iter().enumerate() {
        let d = pattern(len as usize, 40 + i as u32);
        cx.host_write(o, &d)?;
        // Back-to-back C2H / H2C of the same bytes between the card and pinned memory.
        for _ in 0..rounds {
            worst = worst.max(cx.read(&buf, 0, o, len)?);
            worst = worst.max(cx.write(&buf, 0, o, len)?);
        }
        datas.push(d);
    }
    for (&o, d) in offsets.iter().zip(&datas) {
        let (back, _) = cx.host_read(o, len)?;
        compare_words(&back, d, &format!("stress offset {o:#x}"))?;
    }
    Ok((
        format!(
            "6 offsets × {rounds} read+write rounds of 4 MiB, data intact, slowest {worst:.1} µs"
        ),
        vec![("slowest_us", worst)],
    ))
}

fn boundary(cx: &Ctx<'_>) -> CheckResult {
    let b = cx.b;
    let end = cx.span;
    let known = b.target.status.card_memory_bytes != u64::MAX;
    let buf = cx.pin(MIB)?;
    // Three transfers that end at the last byte of card memory: must succeed.
    let inside = [
        (end - 4 * KIB, 4 * KIB),
        (end - 64 * KIB, 64 * KIB),
        (end - MIB, MIB),
    ];
    for (i, &(addr, len)) in inside.iter().enumerate() {
        let d = pattern(len as usize, 60 + i as u32);
        cx.host_write(addr, &d)?;
        cx.read(&buf, 0, addr, len)?;
        cx.write(&buf, 0, addr, len)?;
        let (back, _) = cx.host_read(addr, len)?;
        compare_words(
            &back,
            &d,
            &format!("{} ending at the card's end", fmt_size(len)),
        )?;
    }
    // Three that end past it (or wrap): must be refused with rule card-bounds.
    let mut outside = vec![(u64::MAX - 4 * KIB + 1, 8 * KIB)];
    if known {
        outside.insert(0, (end, 4 * KIB));
        outside.insert(1, (end - 4 * KIB, 8 * KIB));
    }
    for &(addr, len) in &outside {
        let len = len.min(MIB);
        match b.card.read_c2h(b.channel, &buf, addr, len, b.timeout) {
            Err(e) if e.rule() == "card-bounds" => {}
            Err(e) => {
                return Err(format!(
                    "{len} bytes at {addr:#x}: refused with rule {} instead of card-bounds: {e}",
                    e.rule()
                ));
            }
            Ok(_) => {
                return Err(format!(
                    "{len} bytes at {addr:#x} past the card's end was accepted"
                ));
            }
        }
    }
    let note = if known {
        ""
    } else {
        " (card size unknown to the module: only wrap-around checked outside)"
    };
    Ok((
        format!(
            "3 transfers ending at the last byte ({:#x}) intact, {} past the end refused with card-bounds{note}",
            end - 1,
            outside.len()
        ),
        vec![("points", (inside.len() + outside.len()) as f64)],
    ))
}

fn path_a(cx: &Ctx<'_>) -> CheckResult {
    let d = pattern(MIB as usize, 70);
    let w = cx.host_write(A_PATH_A, &d)?;
    let (back, r) = cx.host_read(A_PATH_A, MIB)?;
    let words = compare_words(&back, &d, "path A round trip")?;
    Ok((
        format!(
            "1 MiB host memory → card in {w:.1} µs, card → host memory in {r:.1} µs, {words} words match"
        ),
        vec![("write_us", w), ("read_us", r)],
    ))
}

fn channels(cx: &Ctx<'_>) -> CheckResult {
    let b = cx.b;
    let st = &b.target.status;
    let len = 64 * KIB;
    let n = st.c2h_channels.max(st.h2c_channels) as u64;
    let buf = cx.pin(n * len)?;
    let mut datas = Vec::new();
    // C2H on every channel into its own slice of the buffer.
    for ch in 0..st.c2h_channels {
        let addr = A_CHANNELS + ch as u64 * len;
        let d = pattern(len as usize, 80 + ch);
        cx.host_write(addr, &d)?;
        f(
            b.card
                .read_c2h_at(ch, &buf, ch as u64 * len, addr, len, b.timeout),
            &format!("C2H on channel {ch}"),
        )?;
        datas.push(d);
    }
    // H2C on every channel from slice (ch mod C2H count) to a second area.
    let out = A_CHANNELS + 16 * MIB;
    for ch in 0..st.h2c_channels {
        let src = (ch % st.c2h_channels) as u64;
        f(
            b.card
                .write_h2c_at(ch, &buf, src * len, out + ch as u64 * len, len, b.timeout),
            &format!("H2C on channel {ch}"),
        )?;
    }
    for ch in 0..st.h2c_channels {
        let (back, _) = cx.host_read(out + ch as u64 * len, len)?;
        let want = &datas[(ch % st.c2h_channels) as usize];
        compare_words(&back, want, &format!("H2C channel {ch}"))?;
    }
    let (inbuf, _) = read_back(buf, 0, st.c2h_channels as u64 * len)?;
    for (ch, d) in datas.iter().enumerate() {
        let off = ch * len as usize;
        compare_words(
            &inbuf[off..off + len as usize],
            d,
            &format!("C2H channel {ch}"),
        )?;
    }
    Ok((
        format!(
            "{} C2H and {} H2C channels each moved 64 KiB, data matches",
            st.c2h_channels, st.h2c_channels
        ),
        vec![
            ("c2h_channels", st.c2h_channels as f64),
            ("h2c_channels", st.h2c_channels as f64),
        ],
    ))
}

fn lifecycle(cx: &Ctx<'_>) -> CheckResult {
    let b = cx.b;
    let cycles = 20;
    let mut buf = cx.pin(MIB)?;
    let (mut pin_us, mut unpin_us) = (Vec::new(), Vec::new());
    let mut stale = buf.handle();
    for _ in 0..cycles {
        stale = buf.handle();
        let t0 = Instant::now();
        let mem = f(buf.unpin(), "unpin")?;
        unpin_us.push(elapsed_us(t0));
        let t0 = Instant::now();
        buf = f(b.card.pin(mem), "re-pin")?;
        pin_us.push(elapsed_us(t0));
    }
    // A handle released above must be refused, and the live one still works.
    match b
        .card
        .transfer_handle(Direction::C2H, b.channel, stale, 0, 0, 4 * KIB, b.timeout)
    {
        Err(e) if e.rule() == "handle-valid" => {}
        Err(e) => {
            return Err(format!(
                "released handle {stale} refused with rule {} instead of handle-valid: {e}",
                e.rule()
            ));
        }
        Ok(_) => return Err(format!("released handle {stale} was accepted")),
    }
    cx.read(&buf, 0, 0, 4 * KIB)?;
    drop(buf);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (p, u) = (mean(&pin_us), mean(&unpin_us));
    Ok((
        format!(
            "{cycles} unpin/pin cycles of 1 MiB: pin {p:.1} µs, unpin {u:.1} µs mean; a released handle is refused (handle-valid)"
        ),
        vec![("pin_mean_us", p), ("unpin_mean_us", u)],
    ))
}

fn rules(cx: &Ctx<'_>) -> CheckResult {
    let b = cx.b;
    let st = &b.target.status;
    let c = &b.card;
    let buf = cx.pin(64 * KIB)?;
    let t = b.timeout;
    let align = b.alignment() as usize;
    let cases: Vec<(&str, fpgagdr::Result<()>)> = vec![
        (
            "channel-range",
            c.read_c2h(st.c2h_channels, &buf, 0, 4096, t).map(|_| ()),
        ),
        (
            "card-bounds",
            c.read_c2h(b.channel, &buf, u64::MAX - 4095, 4096, t)
                .map(|_| ()),
        ),
        (
            "buffer-bounds",
            c.read_c2h(b.channel, &buf, 0, 128 * KIB, t).map(|_| ()),
        ),
        (
            "length-nonzero",
            c.read_c2h(b.channel, &buf, 0, 0, t).map(|_| ()),
        ),
        (
            "timeout-nonzero",
            c.read_c2h(b.channel, &buf, 0, 4096, Duration::ZERO)
                .map(|_| ()),
        ),
        (
            "alignment",
            DmaMemory::host(align / 2, align)
                .and_then(|m| c.pin(m))
                .map(|_| ()),
        ),
    ];
    let mut names = Vec::new();
    for (rule, r) in cases {
        match r {
            Err(e) if e.rule() == rule => names.push(rule),
            Err(e) => return Err(format!("expected rule {rule}, got {}: {e}", e.rule())),
            Ok(()) => return Err(format!("a call breaking rule {rule} was accepted")),
        }
    }
    Ok((
        format!(
            "6 of 6 bad calls refused with their rule: {}",
            names.join(", ")
        ),
        vec![("rules", names.len() as f64)],
    ))
}

fn registry(cx: &Ctx<'_>) -> CheckResult {
    let c = &cx.b.card;
    let before = c.registered_buffers();
    c.set_transfer_mode(TransferMode::GpuPinned);
    let result = (|| {
        if c.transfer_mode() != TransferMode::GpuPinned {
            return Err("set_transfer_mode(GpuPinned) did not stick".to_string());
        }
        let mut addrs = Vec::new();
        for _ in 0..4 {
            let buf = cx.pin(MIB)?;
            addrs.push(f(c.register_buffer(buf), "register_buffer")?);
        }
        if c.registered_buffers() != before + 4 {
            return Err(format!(
                "{} buffers registered, expected {}",
                c.registered_buffers(),
                before + 4
            ));
        }
        // An address in no registered buffer is refused by name.
        match c.release_buffer(1) {
            Err(e) if e.rule() == "registered-buffer" => {}
            Err(e) => {
                return Err(format!(
                    "unknown address refused with rule {}: {e}",
                    e.rule()
                ));
            }
            Ok(_) => return Err("address 1 released a buffer".into()),
        }
        for a in &addrs {
            drop(f(c.release_buffer(*a), "release_buffer")?);
        }
        if c.registered_buffers() != before {
            return Err("buffers left registered after release".into());
        }
        Ok((
            "mode GpuPinned set; 4 pinned buffers registered and released by address; an unknown address refused (registered-buffer)".to_string(),
            vec![("registered", 4.0)],
        ))
    })();
    c.set_transfer_mode(TransferMode::Cpu);
    result
}

impl Outcome for QuickOutcome {
    fn name(&self) -> &'static str {
        "quick"
    }

    fn sections(&self) -> Vec<Section> {
        let mut t = Table::new(&["#", "check", "result", "figure"]);
        for c in &self.checks {
            t.row(vec![
                c.n.to_string(),
                c.name.into(),
                if c.pass { "PASS" } else { "FAIL" }.into(),
                c.figure.clone(),
            ]);
        }
        vec![
            Section::new("functional suite", t)
                .note(format!("memory: {}", self.memory.note))
                .note(format!(
                    "{} of {} checks passed{}",
                    self.passed,
                    self.checks.len(),
                    if self.failed > 0 { " — FAILED" } else { "" }
                ))
                .note(if self.noisy_figures.is_empty() {
                    String::new()
                } else {
                    format!(
                        "figures of {} are noisy — rerun on an idle machine before quoting them",
                        self.noisy_figures.join(", ")
                    )
                }),
        ]
    }

    fn compare(&self, reference: &RefData, cmp: &mut Compare) {
        let v = |n: u32, k: &str| {
            self.checks
                .iter()
                .find(|c| c.n == n)
                .and_then(|c| c.values.get(k))
                .and_then(|v| v.as_f64())
        };
        if self.memory.path != "C" {
            cmp.note(format!(
                "the reference report's functional figures are GPU memory; ours ran on {}",
                self.memory.note
            ));
        }
        let q = &reference.quick;
        cmp.row("pin 1 MiB", "µs", v(2, "pin_us"), q.pin_us);
        cmp.row("unpin", "µs", v(5, "unpin_us"), q.unpin_us);
        if let Some((us, g)) = q.read_1m {
            cmp.row("C2H read 1 MiB", "µs", v(3, "read_us"), us);
            cmp.row("C2H read 1 MiB", "GB/s", v(3, "read_gbps"), g);
        }
        if let Some((us, g)) = q.write_1m {
            cmp.row("H2C write 1 MiB", "µs", v(4, "write_us"), us);
            cmp.row("H2C write 1 MiB", "GB/s", v(4, "write_gbps"), g);
        }
        if let Some((us, g)) = q.batch_10m {
            cmp.row("10 × 1 MiB batch read", "µs", v(7, "batch_us"), us);
            cmp.row("10 × 1 MiB batch read", "GB/s", v(7, "batch_gbps"), g);
        }
    }

    fn passed(&self) -> bool {
        self.failed == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_differ_by_seed_and_have_no_short_period() {
        let a = pattern(4096, 1);
        assert_ne!(a, pattern(4096, 2));
        assert_ne!(a[..2048], a[2048..]);
        assert!(compare_words(&a, &a, "x").is_ok());
        let mut b = a.clone();
        b[4001] ^= 1;
        let e = compare_words(&b, &a, "x").unwrap_err();
        assert!(e.contains("word 1000"), "{e}");
    }
}
