//! `SimCard`: a software model of an XDMA card, for machines with no FPGA.
//!
//! Owns: [`SimCard`] (a [`Backend`]), [`SimConfig`], [`open_sim`]. The simulated sensor
//! that plays the FPGA's capture logic is `sensor.rs`. The card holds 2 GiB of card
//! memory sparsely, copies bytes for real (so integrity checks mean something), and,
//! unless the link model is off, makes each transfer last as long as the reference report
//! (docs/bench.md) measured on the platform its [`LinkPreset`] names.
//!
//! DMA engines: each channel is one engine, its transfers serialised, as on the XDMA
//! (PG195); channels run side by side, one caller thread each. The link is shared: a
//! transfer's bytes cross it only while no other transfer's of the same direction do,
//! so several channels together never beat the link's bandwidth (`finish`). A C2H into
//! CUDA device memory from the sensor's frame slots, which lie in page-locked memory
//! ([`SimCard::map_frame_memory`]), is one copy by the GPU's copy engine straight from
//! there: the engine the simulated card has for device rings (docs/decisions.md).
//! Fault knob: [`SimCard::simulate_torn_frames`] (a frame read's torn-frame check).
//! Must not: be mistaken for hardware: its status says `simulated: true` and its name
//! says "simulated".

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fpgagdr::frame::HEADER_LEN;
use fpgagdr::{
    Backend, Capabilities, Card, CardStatus, ChainCache, Direction, DmaMemory, Error, FrameCheck,
    FrameRef, FrameTransfer, GpuMemory, Handle, MemoryKind, PinnedRegion, Platform, Result,
    Transfer, TransferRequest, check_inside, gpu_memory,
};

use crate::card_memory::{self, CardMemory};
use crate::link::LinkPreset;

/// Settings of a simulated card.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimConfig {
    /// Which measured platform the transfer times follow.
    pub preset: LinkPreset,
    /// Card memory, bytes (a multiple of 64 KiB). Default 2 GiB, as the reference report's card.
    pub card_memory_bytes: u64,
    /// C2H channels (1..=4). Default 4, the XDMA maximum (PG195).
    pub c2h_channels: u32,
    /// H2C channels (1..=4). Default 4.
    pub h2c_channels: u32,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            preset: LinkPreset::default(),
            card_memory_bytes: 2 << 30,
            c2h_channels: 4,
            h2c_channels: 4,
        }
    }
}

/// One DMA engine: transfers on a channel are serialised, as on the hardware.
#[derive(Debug, Default)]
struct Engine {
    /// Staging for H2C, and for C2H into CUDA memory when no CUDA context exists.
    staging: Vec<u8>,
    /// Page-locked staging for C2H into and H2C out of CUDA device memory: the simulated
    /// card's path B (card → host → GPU), the fastest host-device copy there is.
    pinned: Option<DmaMemory>,
}

impl Engine {
    /// A page-locked staging buffer of at least `len` bytes, grown as needed.
    fn pinned_staging(&mut self, len: usize) -> Result<&mut [u8]> {
        if self.pinned.as_ref().is_none_or(|p| p.len() < len) {
            if let GpuMemory::Absent(_) = gpu_memory() {
                return Err(Error::Cuda(
                    "CUDA device memory without a CUDA context".into(),
                ));
            }
            self.pinned = None; // free the old one first
            let alloc = DmaMemory::cuda(len, MemoryKind::CudaHost).map_err(|e| match e {
                Error::Alloc { len, reason, .. } => Error::Alloc {
                    len,
                    kind: "pinned host staging",
                    reason,
                },
                other => other,
            })?;
            self.pinned = Some(alloc);
        }
        let all = self
            .pinned
            .as_mut()
            .and_then(DmaMemory::as_mut_slice)
            .expect("page-locked host memory is addressable");
        Ok(&mut all[..len])
    }
}

/// Opens a simulated card with `config`: a [`Card`] driven by [`SimCard`].
///
/// ```
/// use std::time::Duration;
/// use fpgagdr::DmaMemory;
/// use fpgagdr_sim::{LinkPreset, SimConfig};
///
/// let card = fpgagdr_sim::open_sim(SimConfig { preset: LinkPreset::Off, ..SimConfig::default() });
/// let st = card.status();
/// assert!(st.simulated);
/// let buf = card.pin(DmaMemory::host(64 * 1024, st.alignment as usize)?)?;
/// card.write_h2c_from_host(0, 0x1000, &[0xab; 4096], Duration::from_millis(100))?;
/// let t = card.read_c2h(0, &buf, 0x1000, 4096, Duration::from_millis(100))?;
/// assert_eq!(t.bytes, 4096);
/// // SAFETY: no C2H into `buf` runs while the slice lives.
/// assert_eq!(unsafe { buf.host_bytes() }.unwrap()[..4096], [0xab; 4096]);
/// let e = card.read_c2h(9, &buf, 0, 4096, Duration::from_millis(10)).unwrap_err();
/// assert_eq!(e.rule(), "channel-range");
/// # Ok::<(), fpgagdr::Error>(())
/// ```
pub fn open_sim(config: SimConfig) -> Card {
    Card::from_backend(Arc::new(SimCard::new(config)))
}

/// The simulated XDMA card. Clearly a simulation: see [`CardStatus::simulated`].
#[derive(Debug)]
pub struct SimCard {
    config: SimConfig,
    memory: CardMemory,
    pins: Mutex<HashMap<u64, Arc<PinnedRegion>>>,
    next_handle: AtomicU64,
    c2h: Vec<Mutex<Engine>>,
    h2c: Vec<Mutex<Engine>>,
    /// The module's descriptor-chain cache, kept the same way: per pin, the key of the
    /// chain built last (direction, offset, card address, length).
    chains: Mutex<HashMap<u64, ChainKey>>,
    chain_hits: AtomicU64,
    chain_misses: AtomicU64,
    /// Per direction (C2H, H2C), when the link is free again: the end of the data phase
    /// of the last transfer reserved on it.
    link_busy: [Mutex<Option<Instant>>; 2],
    /// The torn-frame fault ([`SimCard::simulate_torn_frames`]): every this many C2Hs
    /// into a pinned buffer, one is torn; 0 = never.
    torn_every: AtomicU64,
    /// C2Hs into pinned buffers so far (what `torn_every` counts).
    c2h_copies: AtomicU64,
}

/// What a cached descriptor chain was built for (the module's key, `fpgagdr-desc.c`).
type ChainKey = (Direction, u64, u64, u64);

impl SimCard {
    /// A simulated card with `config`. Channel counts are clamped to 1..=4 and the
    /// memory size rounded down to 64 KiB.
    pub fn new(config: SimConfig) -> Self {
        let clamp = |n: u32| n.clamp(1, 4);
        let config = SimConfig {
            c2h_channels: clamp(config.c2h_channels),
            h2c_channels: clamp(config.h2c_channels),
            card_memory_bytes: (config.card_memory_bytes / card_memory::CHUNK).max(1)
                * card_memory::CHUNK,
            ..config
        };
        let engines = |n| (0..n).map(|_| Mutex::new(Engine::default())).collect();
        SimCard {
            config,
            memory: CardMemory::new(config.card_memory_bytes),
            pins: Mutex::new(HashMap::new()),
            next_handle: AtomicU64::new(1),
            c2h: engines(config.c2h_channels),
            h2c: engines(config.h2c_channels),
            chains: Mutex::new(HashMap::new()),
            chain_hits: AtomicU64::new(0),
            chain_misses: AtomicU64::new(0),
            link_busy: [Mutex::new(None), Mutex::new(None)],
            torn_every: AtomicU64::new(0),
            c2h_copies: AtomicU64::new(0),
        }
    }

    /// Fault knob of the simulated card: from now on every `every`-th C2H into a pinned
    /// buffer (1 = each one, 0 = none again) is torn, as on a card whose frame writer
    /// rewrote the slot while the DMA read it (docs/card-protocol.md, "Torn frames"):
    /// the first up to 64 payload bytes the copy brought (right after the 64-byte frame
    /// header, the first bytes a rewrite touches, since the writer puts the payload first
    /// and the header last) are not the frame's, so its payload CRC fails; the header
    /// still names the announced frame. A frame read ([`fpgagdr::Card::read_frame`])
    /// reports it [`FrameCheck::Torn`], as the kernel module's check would; a plain C2H
    /// gets the torn bytes with no word. The count starts at the first C2H after this
    /// call.
    pub fn simulate_torn_frames(&self, every: u64) {
        self.c2h_copies.store(0, Ordering::Relaxed);
        self.torn_every.store(every, Ordering::Relaxed);
    }

    /// The settings in force.
    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// The FPGA's own port into its DDR (the capture logic writing a frame). Not a DMA:
    /// it costs no link time. Errors: [`Error::CardBounds`].
    pub fn fpga_write(&self, card_addr: u64, bytes: &[u8]) -> Result<()> {
        self.check_bounds(card_addr, bytes.len() as u64)?;
        self.memory.write(card_addr, bytes);
        Ok(())
    }

    /// The FPGA's own port, reading. Errors: [`Error::CardBounds`].
    pub fn fpga_read(&self, card_addr: u64, dst: &mut [u8]) -> Result<()> {
        self.check_bounds(card_addr, dst.len() as u64)?;
        self.memory.read(card_addr, dst);
        Ok(())
    }

    /// Host bytes actually held for card memory (it is sparse).
    pub fn resident_bytes(&self) -> u64 {
        self.memory.resident_bytes()
    }

    /// Holds card memory `card_addr .. card_addr + len` (a frame slot) in one contiguous
    /// block of page-locked host memory (`cuMemHostAlloc`) when a CUDA driver is present,
    /// plain host memory otherwise; returns which. Nothing the range holds changes. A C2H
    /// of a range inside one page-locked block into CUDA device memory is then one DMA
    /// by the GPU's copy engine, with no staging copy. The simulated sensor maps each of
    /// its frame slots so. A range overlapping one mapped before is left as it is.
    ///
    /// Errors: [`Error::CardBounds`]; [`Error::Alloc`] when no memory can be had.
    pub fn map_frame_memory(&self, card_addr: u64, len: u64) -> Result<MemoryKind> {
        self.check_bounds(card_addr, len)?;
        if len == 0 {
            return Err(Error::ZeroLength {
                what: "frame memory",
            });
        }
        let chunk = card_memory::CHUNK;
        let start = card_addr / chunk * chunk;
        let end = (card_addr + len).div_ceil(chunk) * chunk;
        self.memory.map_dense(start, end - start)
    }

    fn check_bounds(&self, card_addr: u64, len: u64) -> Result<()> {
        let card_memory = self.memory.size();
        match card_addr.checked_add(len) {
            Some(end) if end <= card_memory => Ok(()),
            _ => Err(Error::CardBounds {
                card_addr,
                len,
                card_memory,
            }),
        }
    }

    fn engine(&self, dir: Direction, channel: u32) -> Result<&Mutex<Engine>> {
        let engines = match dir {
            Direction::C2H => &self.c2h,
            Direction::H2C => &self.h2c,
        };
        engines.get(channel as usize).ok_or(Error::ChannelRange {
            dir,
            channel,
            count: engines.len() as u32,
        })
    }

    /// Counts a transfer as the module's chain cache would: a hit when it repeats the
    /// key of the chain its pin built last, else a miss (and the key is replaced).
    fn count_chain(&self, req: &TransferRequest) {
        let key = (req.dir, req.offset, req.card_addr, req.len);
        let hit = self
            .chains
            .lock()
            .expect("chain cache poisoned")
            .insert(req.handle.0, key)
            == Some(key);
        let counter = if hit {
            &self.chain_hits
        } else {
            &self.chain_misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    fn pin_entry(&self, handle: Handle) -> Result<Arc<PinnedRegion>> {
        self.pins
            .lock()
            .expect("pin registry poisoned")
            .get(&handle.0)
            .cloned()
            .ok_or(Error::UnknownHandle { handle: handle.0 })
    }

    /// One transfer on the model (the back-end's `transfer`); for a C2H also whether the
    /// torn-frame fault tore it.
    fn copy(&self, req: &TransferRequest) -> Result<(Transfer, bool)> {
        let pin = self.pin_entry(req.handle)?;
        let region = pin.region();
        check_inside(&region, req.offset, req.len)?;
        self.check_bounds(req.card_addr, req.len)?;
        let mut engine = self
            .engine(req.dir, req.channel)?
            .lock()
            .expect("engine poisoned");
        self.count_chain(req);
        let start = Instant::now();
        let len = req.len as usize;
        let copied = pin.access(|mem| match req.dir {
            Direction::C2H if region.kind.host_accessible() => {
                let mut result = Ok(());
                self.memory.read_with(req.card_addr, len, |at, bytes| {
                    if result.is_ok() {
                        result = mem.write(req.offset + at as u64, bytes);
                    }
                });
                result
            }
            // Into CUDA device memory: straight from page-locked card memory (a frame
            // slot) when the range lies in it, one DMA by the GPU's copy engine; else
            // through the channel's page-locked staging buffer.
            Direction::C2H => self
                .memory
                .with_page_locked(req.card_addr, len, |src| mem.write(req.offset, src))
                .unwrap_or_else(|| {
                    let staging = engine.pinned_staging(len)?;
                    self.memory.read(req.card_addr, staging);
                    mem.write(req.offset, staging)
                }),
            // Out of CUDA device memory through the page-locked staging too (path B's
            // device-to-host copy at its best), from host memory through a plain buffer.
            Direction::H2C if !region.kind.host_accessible() => {
                let staging = engine.pinned_staging(len)?;
                mem.read(req.offset, staging)?;
                self.memory.write(req.card_addr, staging);
                Ok(())
            }
            Direction::H2C => {
                engine.staging.resize(len, 0);
                mem.read(req.offset, &mut engine.staging)?;
                self.memory.write(req.card_addr, &engine.staging);
                Ok(())
            }
        });
        copied.ok_or(Error::UnknownHandle {
            handle: req.handle.0,
        })??;
        let torn = req.dir == Direction::C2H && self.tear(&pin, req)?;
        Ok((
            self.finish(start, req.dir, true, req.len, req.timeout)?,
            torn,
        ))
    }

    /// The torn-frame fault after a C2H into `pin`: whether this copy is one to tear
    /// ([`SimCard::simulate_torn_frames`]) and, if so, its first up to 64 payload bytes
    /// inverted where the copy put them.
    fn tear(&self, pin: &PinnedRegion, req: &TransferRequest) -> Result<bool> {
        let every = self.torn_every.load(Ordering::Relaxed);
        let n = self.c2h_copies.fetch_add(1, Ordering::Relaxed) + 1;
        if every == 0 || !n.is_multiple_of(every) {
            return Ok(false);
        }
        let from = HEADER_LEN as u64;
        let len = req.len.saturating_sub(from).min(64) as usize;
        let mut bytes = [0u8; 64];
        let bytes = &mut bytes[..len];
        pin.access(|mem| {
            mem.read(req.offset + from, bytes)?;
            bytes.iter_mut().for_each(|b| *b = !*b);
            mem.write(req.offset + from, bytes)
        })
        .ok_or(Error::UnknownHandle {
            handle: req.handle.0,
        })??;
        Ok(true)
    }

    /// Holds the transfer until the link model says it is done, bounded by `timeout`.
    ///
    /// A transfer that started at `start` sets up for the model's set-up time, then its
    /// bytes cross the link at the model's bandwidth once the link is free of the bytes
    /// of earlier transfers of the same direction on any channel: set-up overlaps other
    /// channels' data, data does not. One channel used back to back therefore takes
    /// exactly set-up + bytes / bandwidth per transfer (the reference report's latency), and
    /// several channels together reach at most the bandwidth.
    fn finish(
        &self,
        start: Instant,
        dir: Direction,
        gpu: bool,
        len: u64,
        timeout: Duration,
    ) -> Result<Transfer> {
        if let Some(model) = self.config.preset.model() {
            let cost = model.cost(dir, gpu);
            let setup = cost.duration(0);
            let data = cost.duration(len).saturating_sub(setup);
            let end = {
                let i = match dir {
                    Direction::C2H => 0,
                    Direction::H2C => 1,
                };
                let mut busy = self.link_busy[i].lock().expect("link lock poisoned");
                let begin = busy.map_or(start + setup, |b| b.max(start + setup));
                let end = begin + data;
                if end.duration_since(start) > timeout {
                    None
                } else {
                    *busy = Some(end);
                    Some(end)
                }
            };
            match end {
                Some(end) => wait_until(end),
                None => {
                    wait_until(start + timeout);
                    return Err(Error::Timeout { dir, len, timeout });
                }
            }
        }
        Ok(Transfer {
            bytes: len,
            elapsed: start.elapsed(),
        })
    }
}

/// Sleeps most of the way, then spins, so modelled times of tens of µs stay accurate.
fn wait_until(deadline: Instant) {
    const SPIN: Duration = Duration::from_micros(150);
    loop {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        let left = deadline - now;
        if left > SPIN {
            std::thread::sleep(left - SPIN);
        } else {
            std::hint::spin_loop();
        }
    }
}

impl Backend for SimCard {
    fn status(&self) -> CardStatus {
        let emulates = self.config.preset.emulates();
        let page = if emulates == Platform::Tegra {
            4096
        } else {
            65536
        };
        CardStatus {
            name: format!(
                "SimCard (simulated XDMA card), link preset {}",
                self.config.preset.as_str()
            ),
            platform: Platform::Sim,
            simulated: true,
            gpu_page_size: page,
            alignment: page,
            c2h_channels: self.config.c2h_channels,
            h2c_channels: self.config.h2c_channels,
            card_memory_bytes: self.memory.size(),
            capabilities: Capabilities {
                gpu_direct: true,
                host_dma: true,
                interrupts: false,
            },
        }
    }

    fn pin(&self, pinned: Arc<PinnedRegion>) -> Result<Handle> {
        if pinned.region().len == 0 {
            return Err(Error::ZeroLength { what: "pin" });
        }
        let handle = self.next_handle.fetch_add(1, Ordering::Relaxed);
        self.pins
            .lock()
            .expect("pin registry poisoned")
            .insert(handle, pinned);
        Ok(Handle(handle))
    }

    fn unpin(&self, handle: Handle) -> Result<()> {
        self.chains
            .lock()
            .expect("chain cache poisoned")
            .remove(&handle.0);
        // A transfer still copying into this pin holds its region; the card releases the
        // region after this returns, waiting for that copy, before the memory goes.
        self.pins
            .lock()
            .expect("pin registry poisoned")
            .remove(&handle.0)
            .map(drop)
            .ok_or(Error::UnknownHandle { handle: handle.0 })
    }

    fn transfer(&self, req: &TransferRequest) -> Result<Transfer> {
        self.copy(req).map(|(t, _)| t)
    }

    /// The copy, then the torn-frame fault's verdict: [`FrameCheck::Torn`] when this copy
    /// was torn ([`SimCard::simulate_torn_frames`]), else [`FrameCheck::Whole`] (the
    /// simulated sensor writes a slot only while no C2H reads it).
    fn transfer_frame(&self, req: &TransferRequest, _frame: FrameRef) -> Result<FrameTransfer> {
        let (transfer, torn) = self.copy(req)?;
        Ok(FrameTransfer {
            transfer,
            check: if torn {
                FrameCheck::Torn
            } else {
                FrameCheck::Whole
            },
        })
    }

    fn link(&self) -> Option<fpgagdr::PcieLink> {
        self.config.preset.pcie_link()
    }

    fn chain_cache(&self) -> Option<ChainCache> {
        Some(ChainCache {
            hits: self.chain_hits.load(Ordering::Relaxed),
            misses: self.chain_misses.load(Ordering::Relaxed),
        })
    }

    fn host_read(
        &self,
        channel: u32,
        card_addr: u64,
        dst: &mut [u8],
        timeout: Duration,
    ) -> Result<Transfer> {
        self.check_bounds(card_addr, dst.len() as u64)?;
        let _engine = self
            .engine(Direction::C2H, channel)?
            .lock()
            .expect("engine poisoned");
        let start = Instant::now();
        self.memory.read(card_addr, dst);
        self.finish(start, Direction::C2H, false, dst.len() as u64, timeout)
    }

    fn host_write(
        &self,
        channel: u32,
        card_addr: u64,
        src: &[u8],
        timeout: Duration,
    ) -> Result<Transfer> {
        self.check_bounds(card_addr, src.len() as u64)?;
        let _engine = self
            .engine(Direction::H2C, channel)?
            .lock()
            .expect("engine poisoned");
        let start = Instant::now();
        self.memory.write(card_addr, src);
        self.finish(start, Direction::H2C, false, src.len() as u64, timeout)
    }
}
