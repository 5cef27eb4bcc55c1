//! The library's nvidia_p2p path (x86 with a discrete GPU) against the real kernel
//! module and the TEST DOUBLE of NVIDIA's `nvidia_p2p` API (`kmod/qemu/nvp2p/`,
//! `fpgagdr-test-nvp2p.ko`): run inside the QEMU guest's plain pass by
//! `kmod/qemu/run.sh`, with `FPGAGDR_DEVICE` naming the control node of the module
//! built with the nvidia_p2p back-end. Elsewhere each test prints why it is skipped and
//! passes.
//!
//! The guest has no GPU and no CUDA driver, so the "GPU memory" is the double's: an
//! allocation made through its debugfs `alloc` file (what `cudaMalloc` does), read and
//! written through its `mem` file at file offset = GPU address (what `cudaMemcpy` does),
//! freed through `free` (what `cudaFree` does, firing the free callback of every pin
//! that took one). The library reaches it as any caller-allocated CUDA device pointer:
//! [`DmaMemory::borrowed`] with [`MemoryKind::CudaDevice`], the entry point the C API's
//! pins use, then [`Card::pin`], [`Card::read_c2h`] and [`Card::write_h2c`]; and frames
//! from [`Card::frame_trigger`] (the module's frame-done interrupt and its TEST-ONLY
//! sensor) DMA'd straight into it, as the service's CUDA frame ring on x86 takes them.

mod common;

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::assert_rule;
use fpgagdr::frame::{FrameHeader, HEADER_LEN};
use fpgagdr::{Card, DmaMemory, MemoryKind, PinnedBuffer};

const TIMEOUT: Duration = Duration::from_secs(10);
/// The double's debugfs directory.
const DOUBLE: &str = "/sys/kernel/debug/fpgagdr-test-nvp2p";
/// The double's module parameter: 0 refuses persistent pins (as on a MIG-enabled GPU or
/// vGPU), so a pin takes a free callback.
const PERSISTENT: &str = "/sys/module/fpgagdr_test_nvp2p/parameters/persistent";
/// GPU addresses of this suite, apart from the C suite's (`t-nvp2p.c`, 0x7e00_0000_0000
/// and up); 64 KiB aligned as the double requires.
const GPU_BASE: u64 = 0x7f00_0000_0000;
const LEN: usize = 1 << 20;

/// The tests share the double's statistics and the module's pin counter.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The card under test with this test's turn, and the module's debugfs directory of
/// it, or `None` after printing why the test is skipped.
fn card() -> Option<(Card, PathBuf, std::sync::MutexGuard<'static, ()>)> {
    let Some(path) = std::env::var_os("FPGAGDR_DEVICE") else {
        eprintln!(
            "skipped: FPGAGDR_DEVICE is not set (this suite runs in the QEMU guest: kmod/qemu/run.sh)"
        );
        return None;
    };
    if !Path::new(DOUBLE).is_dir() {
        eprintln!(
            "skipped: no {DOUBLE} (the nvidia_p2p test double is loaded only in the QEMU guest's plain pass A)"
        );
        return None;
    }
    let turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let card = Card::open_path(&path).unwrap_or_else(|e| panic!("opening {path:?}: {e}"));
    let name = Path::new(&path).file_name().expect("a node name");
    let dbg = Path::new("/sys/kernel/debug/fpgagdr").join(name);
    Some((card, dbg, turn))
}

fn write_file(path: &str, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("writing {text:?} to {path}: {e}"));
}

/// `name value` lines of a debugfs file: the value of `name`.
fn counter(file: &Path, name: &str) -> i64 {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .find(|(k, _)| *k == name)
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {file:?}: {text}"))
}

/// An allocation of the double's GPU memory (`cudaMalloc`), freed on drop unless
/// [`GpuAlloc::free`] freed it already.
struct GpuAlloc {
    va: u64,
    len: u64,
    live: bool,
}

impl GpuAlloc {
    fn new(n: u64, len: usize) -> Self {
        let va = GPU_BASE + n * (16 << 20);
        write_file(&format!("{DOUBLE}/alloc"), &format!("{va:x} {len:x}"));
        GpuAlloc {
            va,
            len: len as u64,
            live: true,
        }
    }

    fn mem() -> File {
        OpenOptions::new()
            .read(true)
            .write(true)
            .open(format!("{DOUBLE}/mem"))
            .expect("the double's GPU memory file")
    }

    /// `cudaMemcpy` host to device.
    fn fill(&self, bytes: &[u8]) {
        Self::mem()
            .write_all_at(bytes, self.va)
            .expect("writing GPU memory");
    }

    /// `cudaMemcpy` device to host.
    fn bytes(&self) -> Vec<u8> {
        let mut out = vec![0; self.len as usize];
        Self::mem()
            .read_exact_at(&mut out, self.va)
            .expect("reading GPU memory");
        out
    }

    /// What the library pins: the GPU address as a caller-allocated CUDA device pointer.
    fn memory(&self) -> DmaMemory {
        #[allow(unsafe_code)]
        // SAFETY: the double's allocation stays until `free` (called by the tests only
        // after the pinned buffer is gone, or to revoke it on purpose: the module then
        // stops every DMA into it), and the CPU never touches it through this value.
        unsafe { DmaMemory::borrowed(self.va, self.len as usize, MemoryKind::CudaDevice) }
            .expect("a borrowed CUDA device region")
    }

    /// `cudaFree`: fires the free callback of every pin that took one.
    fn free(&mut self) {
        write_file(
            &format!("{DOUBLE}/free"),
            &format!("{:x} {:x}", self.va, self.len),
        );
        self.live = false;
    }
}

impl Drop for GpuAlloc {
    fn drop(&mut self) {
        if self.live {
            let _ = std::fs::write(
                format!("{DOUBLE}/free"),
                format!("{:x} {:x}", self.va, self.len),
            );
        }
    }
}

/// Bytes that differ per `seed` and per 4-byte word.
fn pattern(len: usize, seed: u32) -> Vec<u8> {
    (0..len / 4)
        .flat_map(|i| (i as u32 ^ seed.wrapping_mul(0x9e37_79b9)).to_le_bytes())
        .collect()
}

fn host_pinned(card: &Card, bytes: &[u8]) -> PinnedBuffer {
    let align = card.status().alignment as usize;
    let mut mem = DmaMemory::host(bytes.len(), align).expect("host memory");
    mem.as_mut_slice()
        .expect("host bytes")
        .copy_from_slice(bytes);
    card.pin(mem).expect("pin host memory")
}

fn host_bytes(buf: &PinnedBuffer) -> Vec<u8> {
    #[allow(unsafe_code)]
    // SAFETY: this thread issued every transfer into `buf`, and each has returned.
    unsafe { buf.host_bytes() }.expect("host memory").to_vec()
}

#[track_caller]
fn assert_same(got: &[u8], want: &[u8], what: &str) {
    let first_bad = got.iter().zip(want).position(|(x, y)| x != y);
    assert_eq!(first_bad, None, "{what}: the bytes differ");
    assert_eq!(got.len(), want.len(), "{what}");
}

/// Nothing left pinned in the module, and nothing left mapped in the double: no page
/// table, no DMA mapping, no DMA into freed GPU memory, no misuse of its API.
fn assert_all_released(dbg: &Path) {
    assert_eq!(
        counter(&dbg.join("counters"), "pins"),
        0,
        "the module's pins"
    );
    let stats = Path::new(DOUBLE).join("stats");
    for name in ["tables", "mappings", "freed_written", "misuse"] {
        assert_eq!(counter(&stats, name), 0, "the double's {name}");
    }
}

#[test]
fn c2h_and_h2c_through_pinned_gpu_memory() {
    let Some((card, dbg, _turn)) = card() else {
        return;
    };
    assert!(card.status().capabilities.gpu_direct, "{:?}", card.status());
    let gpu = GpuAlloc::new(1, LEN);
    let card_addr = 0x60_0000u64;

    // C2H into GPU memory: the card's bytes (put there by an H2C from host memory)
    // land in the double's GPU pages.
    let want = pattern(LEN, 61);
    let src = host_pinned(&card, &want);
    card.write_h2c(0, &src, card_addr, LEN as u64, TIMEOUT)
        .expect("H2C from host memory");
    gpu.fill(&pattern(LEN, 62));
    let pinned = card.pin(gpu.memory()).expect("pin GPU memory (nvidia_p2p)");
    assert_eq!(pinned.kind(), MemoryKind::CudaDevice);
    let r = card
        .read_c2h(0, &pinned, card_addr, LEN as u64, TIMEOUT)
        .expect("C2H into GPU memory");
    assert_eq!(r.bytes, LEN as u64);
    assert_same(&gpu.bytes(), &want, "card -> GPU");

    // H2C out of GPU memory: what the "GPU" holds reaches the card, read back to host.
    let want = pattern(LEN, 63);
    gpu.fill(&want);
    card.write_h2c(0, &pinned, card_addr, LEN as u64, TIMEOUT)
        .expect("H2C from GPU memory");
    let dst = host_pinned(&card, &pattern(LEN, 64));
    card.read_c2h(0, &dst, card_addr, LEN as u64, TIMEOUT)
        .expect("C2H into host memory");
    assert_same(&host_bytes(&dst), &want, "GPU -> card -> host");

    pinned.unpin().expect("unpin GPU memory");
    drop((src, dst));
    drop(gpu);
    assert_all_released(&dbg);
}

#[test]
fn a_free_callback_arrives_as_gpu_memory_freed_and_leaves_nothing_pinned() {
    let Some((card, dbg, _turn)) = card() else {
        return;
    };
    // As on a MIG-enabled GPU: persistent pins refused, the pin takes a free callback.
    write_file(PERSISTENT, "0");
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = std::fs::write(PERSISTENT, "1");
        }
    }
    let _restore = Restore;
    let callbacks = counter(&Path::new(DOUBLE).join("stats"), "callbacks");
    let mut gpu = GpuAlloc::new(2, LEN);
    let pinned = card
        .pin(gpu.memory())
        .expect("pin GPU memory (callback pin)");
    card.read_c2h(0, &pinned, 0, LEN as u64, TIMEOUT)
        .expect("C2H before the free");

    // cudaFree while pinned: NVIDIA's free callback revokes the pin.
    gpu.free();
    assert_eq!(
        counter(&Path::new(DOUBLE).join("stats"), "callbacks"),
        callbacks + 1,
        "the double fired no free callback"
    );
    let e = card
        .read_c2h(0, &pinned, 0, LEN as u64, TIMEOUT)
        .expect_err("a C2H into freed GPU memory");
    assert_rule(&e, "gpu-memory-freed", &["freed", "unpin"]);
    let e = card
        .write_h2c(0, &pinned, 0, LEN as u64, TIMEOUT)
        .expect_err("an H2C out of freed GPU memory");
    assert_rule(&e, "gpu-memory-freed", &["freed"]);
    // The documented way out: unpin, which succeeds; then nothing is left pinned.
    pinned.unpin().expect("unpin after the free callback");
    assert_all_released(&dbg);
}

/// The capture path on the nvidia_p2p back-end: frames announced by the card's
/// frame-done interrupt ([`Card::frame_trigger`], the module's TEST-ONLY sensor in the
/// guest) and DMA'd (C2H) from their slot straight into pinned GPU memory, one GPU
/// allocation per card slot pinned once, as the service's CUDA frame ring does on x86
/// (the service itself cannot allocate CUDA memory in the guest). Each frame is checked
/// in the double's GPU pages: header, the announced sequence, payload CRC.
#[test]
fn frames_from_the_frame_trigger_land_whole_in_pinned_gpu_memory() {
    let Some((card, dbg, _turn)) = card() else {
        return;
    };
    let mut trigger = card
        .frame_trigger()
        .expect("the module's frame trigger (the test sensor speaks the frame protocol)");
    let slots = trigger.slots() as usize;
    let room = trigger.max_frame_len().next_multiple_of(64 << 10);
    assert!(
        room <= 16 << 20,
        "a slot of {room} bytes: past this suite's GPU address spacing"
    );
    let gpus: Vec<GpuAlloc> = (0..slots)
        .map(|i| GpuAlloc::new(3 + i as u64, room))
        .collect();
    let pins: Vec<PinnedBuffer> = gpus
        .iter()
        .map(|g| card.pin(g.memory()).expect("pin GPU memory (nvidia_p2p)"))
        .collect();
    let (mut whole, mut overwritten) = (0, 0);
    for _ in 0..2 * slots {
        let f = trigger
            .wait_frame(TIMEOUT)
            .expect("a frame from the test sensor");
        let entry = f.slot as usize;
        let r = card
            .read_c2h(0, &pins[entry], f.card_addr, f.len, TIMEOUT)
            .expect("C2H of the frame's slot into GPU memory");
        assert!(
            r.bytes >= f.len,
            "{} bytes moved of a {}-byte frame",
            r.bytes,
            f.len
        );
        let bytes = gpus[entry].bytes();
        let h = FrameHeader::parse(&bytes, f.len as usize)
            .unwrap_or_else(|e| panic!("frame {} in GPU memory: {e}", f.seq));
        if h.seq > f.seq {
            overwritten += 1; // the sensor wrote the slot again before the read: overrun
            continue;
        }
        assert_eq!(
            h.seq, f.seq,
            "slot {} announced frame {} but holds another",
            f.slot, f.seq
        );
        let payload = &bytes[HEADER_LEN..HEADER_LEN + h.payload_len as usize];
        h.verify(payload)
            .unwrap_or_else(|e| panic!("frame {}'s payload in GPU memory: {e}", f.seq));
        whole += 1;
    }
    assert!(
        whole >= slots,
        "{whole} whole frames of {} ({overwritten} overwritten before the read)",
        2 * slots
    );
    drop(pins);
    drop(gpus);
    drop(trigger);
    assert_all_released(&dbg);
}
