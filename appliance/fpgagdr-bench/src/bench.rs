//! The card and GPU a run measures, and the three data paths of the reference report (§3.2).
//!
//! Owns: [`Bench`] (the open card, what GPU is here, channel and timeout), the paths
//! [`PathKind`] A / B / C and their [`Runner`]s, and the memory helpers.
//!
//! * **A** — card → host memory: `read`/`write` on a channel node
//!   ([`fpgagdr::Card::read_c2h_to_host`] / [`fpgagdr::Card::write_h2c_from_host`]).
//! * **B** — card → page-locked host memory → GPU: path A into `cuMemHostAlloc` staging
//!   plus a real `cuMemcpyHtoD` into device
//!   memory (reads), or `cuMemcpyDtoH` then path A (writes), timed together. Needs a
//!   GPU.
//! * **C** — card → pinned GPU memory directly ([`fpgagdr::Card::read_c2h`] /
//!   [`fpgagdr::Card::write_h2c`] on a buffer pinned once). Needs a GPU.
//!
//! Without a GPU, B and C are *not available* (with the reason), never replaced by
//! something else under their name. Measurements that are about the card rather than the
//! GPU (multi-buffer, address sweep, the functional suite) use pinned frame-ring memory:
//! GPU memory when there is a GPU (that is path C), otherwise pinned host memory, and
//! they say which ([`PinnedMemory`]).
//!
//! Every latency is wall-clock time around the whole operation as a program sees it
//! (`Instant` before the call, after it returns), in µs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{CudaSlice, CudaStream};
use fpgagdr::{Card, CardStatus, DmaMemory, GpuMemory, MemoryKind, PinnedBuffer, Platform};
use fpgagdr_sim::{LinkPreset, SimConfig};

use crate::error::{BenchError, Context, Result};
use crate::reference::RefPlatform;
use crate::units::fmt_size;

/// The three data paths of the reference report (§3.2).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub(crate) enum PathKind {
    /// Card → host memory (CPU DMA only).
    A,
    /// Card → host memory → GPU (the traditional full path, with a real copy).
    B,
    /// Card → pinned GPU memory (GPUDirect).
    C,
}

impl PathKind {
    /// All three, in table order.
    pub(crate) const ALL: [PathKind; 3] = [PathKind::A, PathKind::B, PathKind::C];

    /// Upper-case letter.
    pub(crate) fn letter(self) -> &'static str {
        match self {
            PathKind::A => "A",
            PathKind::B => "B",
            PathKind::C => "C",
        }
    }

    /// Lower-case letter, for CSV column names.
    pub(crate) fn lower(self) -> &'static str {
        match self {
            PathKind::A => "a",
            PathKind::B => "b",
            PathKind::C => "c",
        }
    }

    /// What the path does, for report headings.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            PathKind::A => "card → host memory (CPU DMA only)",
            PathKind::B => "card → page-locked host memory → GPU (host-to-device copy)",
            PathKind::C => "card → pinned GPU memory (GPUDirect)",
        }
    }
}

/// Transfer direction as the reference report's tables name it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Dir {
    /// C2H: card to memory.
    Read,
    /// H2C: memory to card.
    Write,
}

impl Dir {
    /// Both, read first (the reference report's "Read / Write" order).
    pub(crate) const BOTH: [Dir; 2] = [Dir::Read, Dir::Write];

    /// Picks this direction's entry of a reference table's `[read, write]` pair.
    pub(crate) fn pick(self, pair: [f64; 2]) -> f64 {
        match self {
            Dir::Read => pair[0],
            Dir::Write => pair[1],
        }
    }

    /// `read` / `write`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Dir::Read => "read",
            Dir::Write => "write",
        }
    }
}

/// Which simulated link the user asked for (`--link`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LinkArg {
    /// Jetson Orin, FPGA on PCIe Gen3 x4 (the library's `orin-gen3x4`).
    #[value(alias = "orin-gen3x4")]
    Orin,
    /// x86 + discrete GPU, FPGA on PCIe Gen3 x8 (the library's `x86-gen3x8`).
    #[value(name = "desktop-gen3x8", alias = "x86-gen3x8", alias = "desktop")]
    DesktopGen3x8,
    /// No link model: only the real copy (the library's own cost).
    Off,
}

impl LinkArg {
    /// The library's preset.
    pub(crate) fn preset(self) -> LinkPreset {
        match self {
            LinkArg::Orin => LinkPreset::OrinGen3x4,
            LinkArg::DesktopGen3x8 => LinkPreset::X86Gen3x8,
            LinkArg::Off => LinkPreset::Off,
        }
    }
}

/// The card under test, as recorded in every report.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Target {
    /// What `--card` named: `sim` or a control node such as `/dev/fpgagdr0`.
    pub(crate) card: String,
    /// The simulated card's link preset (`orin-gen3x4`, `x86-gen3x8`, `off`); `None` for
    /// a real card.
    pub(crate) link: Option<&'static str>,
    /// The card's status as the library reports it.
    pub(crate) status: CardStatus,
    /// The PCIe link the card reported (kernel module: GET_STATUS; simulated card: its
    /// preset's stated link), read at open, with its payload limits and warnings.
    pub(crate) pcie: crate::link::LinkReport,
}

/// What GPU this run has, as recorded in every report.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct GpuInfo {
    /// Whether paths B and C can run.
    pub(crate) available: bool,
    /// The CUDA device's name, when there is one.
    pub(crate) name: Option<String>,
    /// Memory that paths C and the pinned measurements use (`cuda_device` on a discrete
    /// GPU, `cuda_host` on an integrated one, `host` without a GPU).
    pub(crate) memory: MemoryKind,
    /// Why: the platform's choice of memory, or why there is no GPU.
    pub(crate) note: String,
}

/// The memory a pinned-buffer measurement ran on, stated in its report.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct PinnedMemory {
    /// `"C"` when the buffers are GPU memory (then this is path C), `"pinned-host"`
    /// without a GPU.
    pub(crate) path: &'static str,
    /// Where the bytes live.
    pub(crate) memory: MemoryKind,
    /// One line for people.
    pub(crate) note: String,
}

struct Cuda {
    stream: Arc<CudaStream>,
    kind: MemoryKind,
}

/// An open card, the GPU (if any), and the transfer settings every subcommand shares.
pub(crate) struct Bench {
    /// The card.
    pub(crate) card: Card,
    /// Its description for reports.
    pub(crate) target: Target,
    /// The GPU for reports.
    pub(crate) gpu: GpuInfo,
    cuda: Option<Cuda>,
    /// DMA channel (engine) every transfer uses.
    pub(crate) channel: u32,
    /// Bound on each transfer's wait.
    pub(crate) timeout: Duration,
    /// The simulated card behind `card`, for a simulated sensor (`capture`).
    pub(crate) sim: Option<Arc<fpgagdr_sim::SimCard>>,
}

impl Bench {
    /// Opens `card` (`sim` or a control node), with `link` for the simulated card, and
    /// probes the GPU unless `no_gpu`.
    ///
    /// Errors: [`BenchError::Usage`] for `--link` with a real card; the library's
    /// errors opening the card (the message names the node and the rule).
    pub(crate) fn open(
        card: &str,
        link: Option<LinkArg>,
        no_gpu: bool,
        channel: u32,
        timeout: Duration,
    ) -> Result<Bench> {
        let mut sim = None;
        let (card_obj, link_name) = if card == "sim" {
            let preset = link.map(LinkArg::preset).unwrap_or_default();
            let s = Arc::new(fpgagdr_sim::SimCard::new(SimConfig {
                preset,
                ..SimConfig::default()
            }));
            sim = Some(s.clone());
            (Card::from_backend(s), Some(preset.as_str()))
        } else {
            if link.is_some() {
                return Err(BenchError::Usage(format!(
                    "--link applies to the simulated card only (`--card sim`), not to {card}"
                )));
            }
            (
                Card::open_path(card).ctx(|| format!("opening {card}"))?,
                None,
            )
        };
        let status = card_obj.status().clone();
        if channel >= status.c2h_channels.min(status.h2c_channels) {
            return Err(BenchError::Usage(format!(
                "--channel {channel}: the card has {} C2H and {} H2C channels",
                status.c2h_channels, status.h2c_channels
            )));
        }
        let (gpu, cuda) = probe_gpu(no_gpu);
        let pcie = crate::link::LinkReport::of(card_obj.link());
        Ok(Bench {
            card: card_obj,
            target: Target {
                card: card.to_string(),
                link: link_name,
                pcie,
                status,
            },
            gpu,
            cuda,
            channel,
            timeout,
            sim,
        })
    }

    /// The card's pin alignment, bytes.
    pub(crate) fn alignment(&self) -> u64 {
        self.target.status.alignment.max(1)
    }

    /// `len` rounded up to the pin alignment.
    pub(crate) fn round_up(&self, len: u64) -> u64 {
        len.div_ceil(self.alignment()) * self.alignment()
    }

    /// The card address space the sweeps cover: the card's memory, or 2 GiB (the reference report's
    /// card) when the module does not know its size.
    pub(crate) fn card_span(&self) -> u64 {
        match self.target.status.card_memory_bytes {
            u64::MAX => 2 << 30,
            n => n,
        }
    }

    /// One line naming the card, for table headings.
    pub(crate) fn card_line(&self) -> String {
        let st = &self.target.status;
        let sim = if st.simulated {
            " — SIMULATED CARD"
        } else {
            ""
        };
        format!("card: {} ({}){sim}", st.name, self.target.card)
    }

    /// One line naming the PCIe link, for table headings; `[SIMULATED]` when stated by the
    /// simulated card.
    pub(crate) fn link_line(&self) -> String {
        format!("link: {}", self.target.pcie.summary)
    }

    /// One line naming the GPU, for table headings.
    pub(crate) fn gpu_line(&self) -> String {
        match &self.gpu.name {
            Some(n) if self.gpu.available => {
                format!("GPU: {n}, memory {} ({})", self.gpu.memory, self.gpu.note)
            }
            _ => format!(
                "GPU: none — paths B and C not available ({})",
                self.gpu.note
            ),
        }
    }

    /// The reference report's platform that matches this card, if any: the Orin preset or a
    /// Tegra card → Jetson Orin; the x86 preset or a desktop card → x86 + H100.
    pub(crate) fn reference_platform(&self) -> Option<RefPlatform> {
        match (self.target.link, self.target.status.platform) {
            (Some("orin-gen3x4"), _) | (None, Platform::Tegra) => Some(RefPlatform::Orin),
            (Some("x86-gen3x8"), _) | (None, Platform::Desktop) => Some(RefPlatform::Desktop),
            _ => None,
        }
    }

    /// `Ok` when `path` can run here, else why not.
    pub(crate) fn availability(&self, path: PathKind) -> std::result::Result<(), String> {
        match path {
            PathKind::A if !self.target.status.capabilities.host_dma => {
                Err("the card has no host DMA (capability host_dma is false)".into())
            }
            PathKind::A => Ok(()),
            PathKind::B | PathKind::C if self.cuda.is_none() => {
                Err(format!("no GPU: {}", self.gpu.note))
            }
            PathKind::C if !self.target.status.capabilities.gpu_direct => {
                Err("the card has no GPUDirect (capability gpu_direct is false)".into())
            }
            PathKind::B | PathKind::C => Ok(()),
        }
    }

    /// The memory pinned-buffer measurements use here.
    pub(crate) fn pinned_memory(&self) -> PinnedMemory {
        match &self.cuda {
            Some(c) => PinnedMemory {
                path: "C",
                memory: c.kind,
                note: format!("pinned GPU memory ({}): path C", c.kind),
            },
            None => PinnedMemory {
                path: "pinned-host",
                memory: MemoryKind::Host,
                note: "pinned host memory: no GPU, so this is not path C (same pin/transfer calls)"
                    .into(),
            },
        }
    }

    /// Allocates `len` bytes (rounded up to the alignment) of the memory
    /// [`Bench::pinned_memory`] names, and pins it.
    pub(crate) fn pin_frame_memory(&self, len: u64) -> Result<PinnedBuffer> {
        let len = self.round_up(len);
        let mem = match &self.cuda {
            Some(c) => DmaMemory::cuda(len as usize, c.kind),
            None => DmaMemory::host(len as usize, self.alignment() as usize),
        }
        .ctx(|| format!("allocating {} of frame memory", fmt_size(len)))?;
        self.card
            .pin(mem)
            .ctx(|| format!("pinning {}", fmt_size(len)))
    }

    /// A runner for `path` able to move up to `max_len` bytes.
    ///
    /// Errors: [`BenchError::Usage`] when the path is not available here (callers check
    /// [`Bench::availability`] first); allocation and pin errors.
    pub(crate) fn runner(&self, path: PathKind, max_len: u64) -> Result<Runner<'_>> {
        self.availability(path).map_err(BenchError::Usage)?;
        let inner = match path {
            PathKind::A => Inner::A {
                host: vec![0x5a; max_len as usize],
            },
            PathKind::B => {
                let cuda = self.cuda.as_ref().expect("available");
                let dev = cuda
                    .stream
                    .alloc_zeros::<u8>(max_len as usize)
                    .map_err(|e| {
                        BenchError::Cuda(format!("allocating {}: {e}", fmt_size(max_len)))
                    })?;
                // Page-locked staging (cuMemHostAlloc): the traditional path at its best,
                // so C is compared with the fastest B, not a pageable copy.
                let mut host = DmaMemory::cuda(max_len as usize, MemoryKind::CudaHost)
                    .ctx(|| format!("page-locked staging of {}", fmt_size(max_len)))?;
                host.as_mut_slice()
                    .expect("CudaHost memory is host-addressable")
                    .fill(0x5a);
                Inner::B {
                    host,
                    dev,
                    stream: cuda.stream.clone(),
                }
            }
            PathKind::C => Inner::C {
                buf: self.pin_frame_memory(max_len)?,
            },
        };
        Ok(Runner { bench: self, inner })
    }
}

fn probe_gpu(no_gpu: bool) -> (GpuInfo, Option<Cuda>) {
    let absent = |note: String| {
        (
            GpuInfo {
                available: false,
                name: None,
                memory: MemoryKind::Host,
                note,
            },
            None,
        )
    };
    if no_gpu {
        return absent("--no-gpu was given".into());
    }
    match (fpgagdr::gpu_memory(), fpgagdr::cuda_context()) {
        (GpuMemory::Available(name), Some(ctx)) => {
            let (kind, why) = fpgagdr::frame_ring_kind();
            if kind == MemoryKind::Host {
                return absent(why);
            }
            let info = GpuInfo {
                available: true,
                name: Some(name),
                memory: kind,
                note: why,
            };
            (
                info,
                Some(Cuda {
                    stream: ctx.default_stream(),
                    kind,
                }),
            )
        }
        (GpuMemory::Absent(why), _) => absent(why),
        (GpuMemory::Available(name), None) => absent(format!("{name}: no CUDA context")),
    }
}

enum Inner {
    A {
        host: Vec<u8>,
    },
    B {
        host: DmaMemory,
        dev: CudaSlice<u8>,
        stream: Arc<CudaStream>,
    },
    C {
        buf: PinnedBuffer,
    },
}

/// Buffers for one path, allocated (and for C pinned) once; [`Runner::once`] times one
/// transfer.
pub(crate) struct Runner<'a> {
    bench: &'a Bench,
    inner: Inner,
}

impl Runner<'_> {
    /// One transfer of `len` bytes at `card_addr` in `dir`; returns its latency in µs.
    pub(crate) fn once(&mut self, dir: Dir, card_addr: u64, len: u64) -> Result<f64> {
        let b = self.bench;
        let (ch, to) = (b.channel, b.timeout);
        let n = len as usize;
        let what = |p: &'static str| {
            move || {
                format!(
                    "path {p} {} of {} at {card_addr:#x}",
                    dir.as_str(),
                    fmt_size(len)
                )
            }
        };
        let t0 = Instant::now();
        match (&mut self.inner, dir) {
            (Inner::A { host }, Dir::Read) => {
                b.card
                    .read_c2h_to_host(ch, card_addr, &mut host[..n], to)
                    .ctx(what("A"))?;
            }
            (Inner::A { host }, Dir::Write) => {
                b.card
                    .write_h2c_from_host(ch, card_addr, &host[..n], to)
                    .ctx(what("A"))?;
            }
            (Inner::B { host, dev, stream }, Dir::Read) => {
                let host = host.as_mut_slice().expect("page-locked staging");
                b.card
                    .read_c2h_to_host(ch, card_addr, &mut host[..n], to)
                    .ctx(what("B"))?;
                stream
                    .memcpy_htod(&host[..n], dev)
                    .and_then(|()| stream.synchronize())
                    .map_err(|e| {
                        BenchError::Cuda(format!("host-to-device copy of {}: {e}", fmt_size(len)))
                    })?;
            }
            (Inner::B { host, dev, stream }, Dir::Write) => {
                let host = host.as_mut_slice().expect("page-locked staging");
                stream
                    .memcpy_dtoh(&dev.slice(0..n), &mut host[..n])
                    .and_then(|()| stream.synchronize())
                    .map_err(|e| {
                        BenchError::Cuda(format!("device-to-host copy of {}: {e}", fmt_size(len)))
                    })?;
                b.card
                    .write_h2c_from_host(ch, card_addr, &host[..n], to)
                    .ctx(what("B"))?;
            }
            (Inner::C { buf }, Dir::Read) => {
                b.card
                    .read_c2h(ch, buf, card_addr, len, to)
                    .ctx(what("C"))?;
            }
            (Inner::C { buf }, Dir::Write) => {
                b.card
                    .write_h2c(ch, buf, card_addr, len, to)
                    .ctx(what("C"))?;
            }
        }
        Ok(t0.elapsed().as_secs_f64() * 1e6)
    }

    /// `warmup` untimed transfers, then `iterations` timed ones; latencies in µs.
    pub(crate) fn measure(
        &mut self,
        dir: Dir,
        card_addr: u64,
        len: u64,
        warmup: usize,
        iterations: usize,
    ) -> Result<Vec<f64>> {
        for _ in 0..warmup {
            self.once(dir, card_addr, len)?;
        }
        (0..iterations)
            .map(|_| self.once(dir, card_addr, len))
            .collect()
    }
}

/// Times a pinned-buffer C2H read into `buf` (any pinned memory), µs.
pub(crate) fn time_read(b: &Bench, buf: &PinnedBuffer, card_addr: u64, len: u64) -> Result<f64> {
    let t0 = Instant::now();
    b.card
        .read_c2h(b.channel, buf, card_addr, len, b.timeout)
        .ctx(|| format!("read of {} at {card_addr:#x}", fmt_size(len)))?;
    Ok(t0.elapsed().as_secs_f64() * 1e6)
}

/// Times a pinned-buffer H2C write from `buf`, µs.
pub(crate) fn time_write(b: &Bench, buf: &PinnedBuffer, card_addr: u64, len: u64) -> Result<f64> {
    let t0 = Instant::now();
    b.card
        .write_h2c(b.channel, buf, card_addr, len, b.timeout)
        .ctx(|| format!("write of {} at {card_addr:#x}", fmt_size(len)))?;
    Ok(t0.elapsed().as_secs_f64() * 1e6)
}

/// One measured cell: its statistics, or why it could not be measured here.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Measured {
    /// Whether the cell was measured.
    pub(crate) available: bool,
    /// Why not, when it was not (e.g. "no GPU: …").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
    /// Latency statistics, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) latency: Option<crate::stats::Summary>,
    /// Median, p10/p90, spread, the median's 95 % interval and the verdict (steady,
    /// noisy, too few).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) robust: Option<crate::stats::Robust>,
    /// Bytes ÷ mean latency, GB/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) gbps: Option<f64>,
    /// Every timed transfer, µs, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) samples_us: Vec<f64>,
}

impl Measured {
    /// A cell that could not be measured, and why.
    pub(crate) fn unavailable(reason: impl Into<String>) -> Measured {
        Measured {
            available: false,
            reason: Some(reason.into()),
            latency: None,
            robust: None,
            gbps: None,
            samples_us: Vec::new(),
        }
    }

    /// A cell from its samples (µs) of `bytes`-long transfers.
    pub(crate) fn from_samples(bytes: u64, samples_us: Vec<f64>) -> Measured {
        let latency = crate::stats::Summary::of(&samples_us);
        Measured {
            available: true,
            reason: None,
            gbps: latency.map(|l| l.gbps(bytes)),
            latency,
            robust: crate::stats::Robust::of(&samples_us),
            samples_us,
        }
    }

    /// Mean latency, µs, when measured.
    pub(crate) fn mean(&self) -> Option<f64> {
        self.latency.map(|l| l.mean_us)
    }
}

/// Measures one size and direction on several paths at once, interleaved: each available
/// path's `warmup` untimed transfers, then `iterations` rounds in which every available
/// path makes one timed transfer, in the order A B C, then C B A, and so on. Whatever
/// else the machine does meanwhile falls on every path alike, and the i-th samples of
/// two paths form a pair ([`crate::stats::PairedRatio`]). Returns each runner's samples,
/// µs, in order: empty for a path that is not available, and fewer than `iterations`
/// after a Ctrl-C (the rounds measured so far).
pub(crate) fn measure_interleaved(
    runners: &mut [std::result::Result<Runner<'_>, String>],
    dir: Dir,
    card_addr: u64,
    len: u64,
    warmup: usize,
    iterations: usize,
) -> Result<Vec<Vec<f64>>> {
    let mut samples = vec![Vec::with_capacity(iterations); runners.len()];
    for r in runners.iter_mut().flatten() {
        r.measure(dir, card_addr, len, warmup, 0)?;
    }
    for round in 0..iterations {
        if crate::progress::interrupted() {
            break;
        }
        for k in 0..runners.len() {
            let i = if round % 2 == 0 {
                k
            } else {
                runners.len() - 1 - k
            };
            if let Ok(r) = &mut runners[i] {
                samples[i].push(r.once(dir, card_addr, len)?);
            }
        }
    }
    Ok(samples)
}

/// The cell of one runner's samples from [`measure_interleaved`]: why not when the path
/// is not available, or when a Ctrl-C came before its first sample.
pub(crate) fn cell_of(
    runner: &std::result::Result<Runner<'_>, String>,
    len: u64,
    samples: Vec<f64>,
) -> Measured {
    match runner {
        Err(reason) => Measured::unavailable(reason.as_str()),
        Ok(_) if samples.is_empty() => {
            Measured::unavailable("interrupted (Ctrl-C) before this cell")
        }
        Ok(_) => Measured::from_samples(len, samples),
    }
}
