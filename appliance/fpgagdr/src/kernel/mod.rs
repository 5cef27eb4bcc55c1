//! The kernel back-end: a real card through the fpgagdr kernel module's ioctls.
//!
//! Owns: [`KernelCard`] (a [`Backend`] over `/dev/fpgagdrN` and its channel nodes),
//! [`KernelCounters`], and (in `convert.rs`) the conversions between the library's types
//! and the ABI of `kmod/include/uapi/linux/fpgagdr.h`, mirrored by `fpgagdr-uapi`.
//! Must not: repeat the checks [`Card`](crate::Card) makes for every back-end; it checks
//! only what the module adds (its memory kinds, transfer alignment and 60 s timeout
//! limit) and which handles this card issued.
//! Neighbours: `card.rs` (the [`Backend`] seam), `sim/` (the other back-end, whose
//! semantics this one mirrors).
//!
//! ## How the library's calls map to the module
//!
//! | library | module |
//! |---|---|
//! | [`Card::open_path`](crate::Card::open_path) | `open("/dev/fpgagdrN", O_RDWR)`, `FPGAGDR_IOC_GET_STATUS` |
//! | [`Backend::pin`] | `FPGAGDR_IOC_PIN`: [`MemoryKind::Host`](crate::MemoryKind::Host) and [`MemoryKind::CudaHost`](crate::MemoryKind::CudaHost) as `FPGAGDR_MEM_HOST`, [`MemoryKind::CudaDevice`](crate::MemoryKind::CudaDevice) as `FPGAGDR_MEM_NV_P2P`, or as `FPGAGDR_MEM_DMABUF` (offset 0, the exported fd) when the memory exported a dma-buf ([`PinMethod::DmaBuf`](crate::PinMethod::DmaBuf)) |
//! | [`Backend::unpin`] | `FPGAGDR_IOC_UNPIN` |
//! | [`Backend::transfer`] | `FPGAGDR_IOC_TRANSFER`, timeout rounded up to whole ms (1..=60000) |
//! | [`Backend::host_read`] / [`Backend::host_write`] | `pread` / `pwrite` on `/dev/fpgagdrN_c2h_K` / `_h2c_K`, file offset = card address |
//! | [`KernelCard::abort`] | `FPGAGDR_IOC_ABORT` |
//! | [`KernelCard::counters`] | `FPGAGDR_IOC_GET_STATUS` |
//! | [`Backend::frame_trigger`] ([`KernelTrigger`]) | `FPGAGDR_IOC_FRAME_INFO` once, then `FPGAGDR_IOC_WAIT_FRAME` per frame |
//! | [`KernelCard::frame_info`] | `FPGAGDR_IOC_FRAME_INFO` |
//!
//! ## Errors
//!
//! Each errno of the header's table becomes one error naming a rule:
//!
//! | errno | error (rule) |
//! |---|---|
//! | ENOTTY | [`Error::Kernel`] (`abi`); at open: [`Error::NoCard`] (`card-present`), "not an fpgagdr control node" |
//! | EFAULT | [`Error::Kernel`] (`user-memory`) |
//! | EPROTO | [`Error::Kernel`] (`abi-version`), naming both versions |
//! | EINVAL | [`Error::Kernel`] (`argument-valid`) |
//! | EBADF | [`Error::Kernel`] (`file-descriptor`) |
//! | EOPNOTSUPP | [`Error::Unsupported`] (`capability`) |
//! | E2BIG | [`Error::Kernel`] (`pin-size`) |
//! | EOVERFLOW | PIN: [`Error::Kernel`] (`pin-size`); TRANSFER: [`Error::BufferBounds`] |
//! | ERANGE | [`Error::CardBounds`] |
//! | ECHRNG | [`Error::ChannelRange`] |
//! | ENOENT | [`Error::UnknownHandle`] (`handle-valid`) |
//! | EALREADY | [`Error::Kernel`] (`handle-valid`), "already unpinned" |
//! | ENOSPC | [`Error::Kernel`] (`pin-limit`) |
//! | ENOMEM | [`Error::Alloc`] (`memory`), naming `RLIMIT_MEMLOCK` |
//! | EBUSY | TRANSFER: [`Error::Kernel`] (`handle-busy`); ABORT: [`Error::Kernel`] (`engine-busy`) |
//! | ESTALE | [`Error::Kernel`] (`gpu-memory-freed`) |
//! | ETIMEDOUT | [`Error::Timeout`] |
//! | EINTR | [`Error::Kernel`] (`interrupted`), TRANSFER and PIN |
//! | ECANCELED | [`Error::Kernel`] (`aborted`) |
//! | EIO | TRANSFER, ABORT: [`Error::Kernel`] (`engine`); PIN: [`Error::Kernel`] (`dma-mapping`); WAIT_FRAME: [`Error::Kernel`] (`card-gone`) |
//! | ENODEV | [`Error::NoCard`] (`card-present`), "the card was removed" |
//!
//! Opening the node: ENOENT is "no such device node", EACCES/EPERM says to add the user
//! to the `fpgagdr` group, both as [`Error::NoCard`].

mod convert;
mod frames;

pub use frames::{FrameInfo, KernelTrigger};

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::os::fd::{AsFd, AsRawFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use fpgagdr_uapi::{self as uapi, Errno};
use nix::sys::uio;

use crate::backend::{Backend, PinnedRegion};
use crate::dma::{
    ChainCache, Direction, FrameRef, FrameTransfer, Handle, Transfer, TransferRequest,
};
use crate::error::{Error, Result};
use crate::memory::{DmaRegion, check_inside};
use crate::status::CardStatus;
use crate::sys::HostAlloc;
use convert::{Call, Limits};

/// Where the module publishes the bound of each `read`/`write` step on a channel node.
const RW_TIMEOUT_PARAM: &str = "/sys/module/fpgagdr/parameters/rw_timeout_ms";
/// The module's value when the parameter is 0 or cannot be read (10 s).
const RW_TIMEOUT_DEFAULT_MS: u64 = 10_000;

/// The module's counters (GET_STATUS; also in `/sys/kernel/debug/fpgagdr/fpgagdrN/counters`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct KernelCounters {
    /// Pins live on this card, all processes together.
    pub pins: u64,
    /// Pins made since the module was loaded.
    pub pins_total: u64,
    /// Transfers that replayed the descriptor chain built for the same handle, direction,
    /// offset, card address and length (the frame-ring case).
    pub cache_hits: u64,
    /// Transfers that built (or rebuilt) their descriptor chain.
    pub cache_misses: u64,
    /// Transfers completed, by ioctl and by `read`/`write` on channel nodes.
    pub transfers: u64,
    /// Bytes those transfers moved.
    pub transfer_bytes: u64,
    /// Transfers that timed out.
    pub timeouts: u64,
    /// Engine stops: timeouts, signals, ABORT, UNPIN, NVIDIA free callback.
    pub aborts: u64,
    /// Transfers the engine reported an error for.
    pub errors: u64,
}

/// A card driven by the fpgagdr kernel module: the control node `/dev/fpgagdrN` (ioctls)
/// and, for the CPU path, its channel nodes `/dev/fpgagdrN_c2h_K` / `_h2c_K`.
///
/// Open it with [`Card::open`](crate::Card::open) / [`Card::open_path`](crate::Card::open_path),
/// or [`KernelCard::open`] plus [`Card::from_backend`](crate::Card::from_backend) to keep
/// the [`KernelCard`] for [`KernelCard::abort`] and [`KernelCard::counters`].
///
/// Pins belong to the open control node: dropping the card closes it, and the module then
/// unpins whatever is still pinned (every [`PinnedBuffer`](crate::PinnedBuffer) holds the
/// card, so that happens after the last buffer is gone).
#[derive(Debug)]
pub struct KernelCard {
    path: PathBuf,
    ctl: File,
    status: CardStatus,
    limits: Limits,
    /// Handles this card issued, with the region each one pins.
    pins: Mutex<HashMap<u32, DmaRegion>>,
    /// Channel nodes, opened on first use.
    c2h: Vec<OnceLock<File>>,
    h2c: Vec<OnceLock<File>>,
}

impl KernelCard {
    /// Opens the control node at `path` (e.g. `/dev/fpgagdr0`) and reads the card's
    /// status once.
    ///
    /// Errors: [`Error::NoCard`] when the node is missing ("no such device node"), not
    /// accessible (the message says to add the user to the `fpgagdr` group), has no card
    /// behind it, or is not an fpgagdr control node; [`Error::Kernel`] with rule
    /// `abi-version` when the module speaks another ABI version than this library.
    pub fn open(path: impl AsRef<Path>) -> Result<KernelCard> {
        let path = path.as_ref().to_path_buf();
        let ctl = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| convert::open_error(&path, &e))?;
        let raw = read_status(&ctl)
            .map_err(|(errno, version)| convert::status_error(&path, errno, version))?;
        let version = module_version();
        let (status, limits) = convert::card_status(&path, &raw, version.as_deref());
        tracing::debug!(
            "opened {}: {} (xfer_align {}, len_granularity {}, mem_kinds {:#x})",
            path.display(),
            status.name,
            limits.xfer_align,
            limits.len_granularity,
            limits.mem_kinds
        );
        let cells = |n: u32| (0..n).map(|_| OnceLock::new()).collect();
        Ok(KernelCard {
            c2h: cells(status.c2h_channels),
            h2c: cells(status.h2c_channels),
            path,
            ctl,
            status,
            limits,
            pins: Mutex::new(HashMap::new()),
        })
    }

    /// The control node's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The module's counters, read now. Errors: the module's (e.g. [`Error::NoCard`] when
    /// the card was removed).
    pub fn counters(&self) -> Result<KernelCounters> {
        let s = read_status(&self.ctl).map_err(|(errno, module_version)| {
            self.error(&Call::Status { module_version }, errno)
        })?;
        Ok(KernelCounters {
            pins: s.pins,
            pins_total: s.pins_total,
            cache_hits: s.cache_hits,
            cache_misses: s.cache_misses,
            transfers: s.transfers,
            transfer_bytes: s.transfer_bytes,
            timeouts: s.timeouts,
            aborts: s.aborts,
            errors: s.errors,
        })
    }

    /// The card's frame protocol (slot geometry, user interrupt) and the module's
    /// frame-event counters, read now.
    ///
    /// Errors: [`Error::Kernel`] with rule `card-protocol` when the card does not speak
    /// the protocol of `docs/card-protocol.md` (the message names which part); the
    /// module's errors.
    pub fn frame_info(&self) -> Result<FrameInfo> {
        frames::frame_info(&self.ctl, &self.path, &self.status)
    }

    /// A frame trigger of this card (see [`KernelTrigger`]), on a duplicate of the
    /// control node: the same open file, its pins and its event queue.
    ///
    /// Errors: as [`KernelCard::frame_info`]; duplicating the descriptor can fail
    /// ([`Error::NoCard`]).
    pub fn trigger(&self) -> Result<KernelTrigger> {
        let ctl = self.ctl.try_clone().map_err(|e| Error::NoCard {
            path: self.path.clone(),
            reason: format!("cannot duplicate the control node's descriptor: {e}"),
        })?;
        KernelTrigger::new(ctl, self.path.clone(), self.status.clone())
    }

    /// Stops this card handle's transfer on one engine (that transfer fails with rule
    /// `aborted`), or resets an idle engine left in an error state (after rule `engine`).
    /// A transfer of another open file is not touched: rule `engine-busy`.
    ///
    /// Errors: [`Error::ChannelRange`]; the module's errors.
    pub fn abort(&self, dir: Direction, channel: u32) -> Result<()> {
        let count = self.channel_count(dir);
        if channel >= count {
            return Err(Error::ChannelRange {
                dir,
                channel,
                count,
            });
        }
        let mut req = uapi::fpgagdr_abort {
            direction: convert::direction(dir),
            channel,
            ..uapi::fpgagdr_abort::new()
        };
        #[allow(unsafe_code)]
        // SAFETY: `ctl` is the fpgagdr control node this card opened (GET_STATUS
        // answered on it); `req` is a live, exclusively borrowed request.
        let r = unsafe { uapi::ioctl::abort(self.ctl.as_fd(), &mut req) };
        r.map_err(|errno| self.error(&Call::Abort { dir, channel }, errno))
    }

    fn error(&self, call: &Call<'_>, errno: Errno) -> Error {
        let e = convert::kernel_error(call, errno, &self.path, &self.status);
        tracing::debug!("{}: {errno:?}: {e}", self.path.display());
        e
    }

    fn channel_count(&self, dir: Direction) -> u32 {
        match dir {
            Direction::C2H => self.status.c2h_channels,
            Direction::H2C => self.status.h2c_channels,
        }
    }

    /// The channel node of `dir`/`channel`, opened on first use.
    fn channel(&self, dir: Direction, channel: u32) -> Result<&File> {
        let cells = match dir {
            Direction::C2H => &self.c2h,
            Direction::H2C => &self.h2c,
        };
        let Some(cell) = cells.get(channel as usize) else {
            return Err(Error::ChannelRange {
                dir,
                channel,
                count: cells.len() as u32,
            });
        };
        if let Some(file) = cell.get() {
            return Ok(file);
        }
        let node = channel_node(&self.path, dir, channel);
        let file = match dir {
            Direction::C2H => OpenOptions::new().read(true).open(&node),
            Direction::H2C => OpenOptions::new().write(true).open(&node),
        }
        .map_err(|e| convert::open_error(&node, &e))?;
        // Another thread may have opened it meanwhile; either file will do.
        let _ = cell.set(file);
        Ok(cell.get().expect("set above"))
    }

    /// The error of a channel-node call, with the module's `rw_timeout_ms` as the timeout
    /// those calls wait under.
    fn rw_error(
        &self,
        dir: Direction,
        channel: u32,
        card_addr: u64,
        len: u64,
        errno: Errno,
    ) -> Error {
        let call = Call::Rw {
            dir,
            channel,
            card_addr,
            len,
            timeout: rw_timeout(),
        };
        self.error(&call, errno)
    }

    /// `read`s (C2H) or `write`s (H2C) all of `buf` at `card_addr`, looping over short
    /// counts (the module returns what it moved before an error; the next call reports
    /// the error).
    fn rw_all(&self, dir: Direction, channel: u32, card_addr: u64, buf: RwBuf<'_>) -> Result<()> {
        let file = self.channel(dir, channel)?;
        let len = buf.len();
        let mut buf = buf;
        let mut done = 0usize;
        while done < len {
            let at = card_addr + done as u64;
            // `check_rw` bounded card_addr + len by i64::MAX.
            let offset = at as i64;
            let r = match &mut buf {
                RwBuf::Read(dst) => uio::pread(file, &mut dst[done..], offset),
                RwBuf::Write(src) => uio::pwrite(file, &src[done..], offset),
            };
            match r {
                Ok(0) => {
                    return Err(Error::Kernel {
                        rule: "engine",
                        op: convert::rw_op(dir),
                        errno: Errno::EIO as i32,
                        detail: format!(
                            "{dir} channel {channel} moved {done} of {len} bytes at card \
                             address {card_addr:#x}, then nothing"
                        ),
                    });
                }
                Ok(n) => done += n,
                Err(errno) => {
                    return Err(self.rw_error(dir, channel, at, (len - done) as u64, errno));
                }
            }
        }
        Ok(())
    }

    /// A buffer aligned as the channel nodes want (`xfer_align`), for callers whose slice
    /// is not.
    fn bounce(&self, len: usize) -> Result<HostAlloc> {
        let align = (self.limits.xfer_align as usize)
            .next_power_of_two()
            .max(4096);
        HostAlloc::new(len, align).map_err(|reason| Error::Alloc {
            len: len as u64,
            kind: "bounce buffer",
            reason,
        })
    }

    /// One TRANSFER; with `frame`, a C2H of that frame's slot with the module's
    /// torn-frame check. Returns the transfer and the module's `frame_check` (0 without
    /// `frame`).
    fn run_transfer(
        &self,
        req: &TransferRequest,
        frame: Option<FrameRef>,
    ) -> Result<(Transfer, u32)> {
        let unknown = Error::UnknownHandle {
            handle: req.handle.0,
        };
        let raw = u32::try_from(req.handle.0).map_err(|_| unknown)?;
        let region = self
            .pins
            .lock()
            .expect("pin table poisoned")
            .get(&raw)
            .copied()
            .ok_or(Error::UnknownHandle {
                handle: req.handle.0,
            })?;
        check_inside(&region, req.offset, req.len)?;
        let mut t = convert::transfer_request(req, raw, &self.limits, frame)?;
        let start = Instant::now();
        #[allow(unsafe_code)]
        // SAFETY: `ctl` is this card's control node; `t` is a live, exclusively borrowed
        // request. The DMA touches only the pinned region of `raw`, which `Backend::pin`'s
        // contract keeps allocated and free of Rust references while transfers may write it.
        let r = unsafe { uapi::ioctl::transfer(self.ctl.as_fd(), &mut t) };
        let wall = start.elapsed();
        r.map_err(|errno| {
            let call = Call::Transfer {
                req,
                buffer_len: region.len,
            };
            self.error(&call, errno)
        })?;
        if t.bytes != req.len {
            return Err(Error::Kernel {
                rule: "engine",
                op: "TRANSFER",
                errno: Errno::EIO as i32,
                detail: format!(
                    "the {} transfer on channel {} reported success but moved {} of {} bytes",
                    req.dir, req.channel, t.bytes, req.len
                ),
            });
        }
        let transfer = Transfer {
            bytes: t.bytes,
            // The engine's own time when the module measured it, else the ioctl's.
            elapsed: if t.duration_ns > 0 {
                Duration::from_nanos(t.duration_ns)
            } else {
                wall
            },
        };
        Ok((transfer, t.frame_check))
    }

    fn aligned(&self, addr: *const u8) -> bool {
        (addr as u64).is_multiple_of(self.limits.xfer_align)
    }
}

enum RwBuf<'a> {
    Read(&'a mut [u8]),
    Write(&'a [u8]),
}

impl RwBuf<'_> {
    fn len(&self) -> usize {
        match self {
            RwBuf::Read(b) => b.len(),
            RwBuf::Write(b) => b.len(),
        }
    }
}

/// The loaded module's `MODULE_VERSION` (`/sys/module/fpgagdr/version`, readable by
/// anyone), or `None` where sysfs does not have it (an older module).
fn module_version() -> Option<String> {
    let v = std::fs::read_to_string("/sys/module/fpgagdr/version").ok()?;
    let v = v.trim();
    (!v.is_empty() && v.len() <= 64).then(|| v.to_string())
}

/// GET_STATUS on `ctl`; on error, the errno and what the module left in `abi_version`
/// (its own version on EPROTO).
fn read_status(ctl: &File) -> std::result::Result<uapi::fpgagdr_status, (Errno, u32)> {
    let mut st = uapi::fpgagdr_status::new();
    #[allow(unsafe_code)]
    // SAFETY: `st` is a live, exclusively borrowed fpgagdr_status of the size the request
    // number encodes. `ctl` was opened as a control node; if it is another file, its
    // driver either lacks the number (ENOTTY, the error reported) or is an fpgagdr node.
    let r = unsafe { uapi::ioctl::get_status(ctl.as_fd(), &mut st) };
    match r {
        Ok(()) if st.abi_version == uapi::FPGAGDR_ABI_VERSION => Ok(st),
        Ok(()) => Err((Errno::EPROTO, st.abi_version)),
        Err(errno) => Err((errno, st.abi_version)),
    }
}

/// `/dev/fpgagdr0` → `/dev/fpgagdr0_c2h_1`.
fn channel_node(ctl: &Path, dir: Direction, channel: u32) -> PathBuf {
    let mut s = OsString::from(ctl.as_os_str());
    s.push(match dir {
        Direction::C2H => format!("_c2h_{channel}"),
        Direction::H2C => format!("_h2c_{channel}"),
    });
    PathBuf::from(s)
}

/// The bound of each channel-node step: the module's `rw_timeout_ms` parameter.
fn rw_timeout() -> Duration {
    let ms = std::fs::read_to_string(RW_TIMEOUT_PARAM)
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .filter(|&ms| ms > 0)
        .unwrap_or(RW_TIMEOUT_DEFAULT_MS);
    Duration::from_millis(ms)
}

impl Backend for KernelCard {
    fn status(&self) -> CardStatus {
        self.status.clone()
    }

    fn pin(&self, pinned: Arc<PinnedRegion>) -> Result<Handle> {
        // From here on the card reads and writes the region during TRANSFER; the memory
        // stays allocated until `unpin` returns (`Backend::pin`).
        let region = pinned.region();
        let mut req = match pinned.dmabuf_fd() {
            Some(fd) => convert::pin_request_dmabuf(
                &region,
                fd.as_raw_fd(),
                &self.limits,
                &self.status.name,
            )?,
            None => convert::pin_request(&region, &self.limits, &self.status.name)?,
        };
        #[allow(unsafe_code)]
        // SAFETY: `ctl` is this card's control node; `req` is a live, exclusively
        // borrowed request. The memory it names stays allocated until `unpin` returns,
        // and no Rust reference touches it while a transfer may: `Backend::pin`'s
        // guarantee, upheld by `Card::pin` and `PinnedBuffer`.
        let r = unsafe { uapi::ioctl::pin(self.ctl.as_fd(), &mut req) };
        r.map_err(|errno| self.error(&Call::Pin { region: &region }, errno))?;
        tracing::debug!(
            "pinned {} bytes of {} memory at {:#x} by {}: handle {}, {} segments, {} B pages",
            region.len,
            region.kind,
            region.addr,
            pinned.method(),
            req.handle,
            req.segments,
            req.page_size
        );
        self.pins
            .lock()
            .expect("pin table poisoned")
            .insert(req.handle, region);
        Ok(Handle(u64::from(req.handle)))
    }

    fn unpin(&self, handle: Handle) -> Result<()> {
        // Only handles this card issued go to the module: another card's handle number
        // may name one of ours there.
        let known = u32::try_from(handle.0).ok().filter(|h| {
            self.pins
                .lock()
                .expect("pin table poisoned")
                .remove(h)
                .is_some()
        });
        let Some(raw) = known else {
            return Err(Error::UnknownHandle { handle: handle.0 });
        };
        let mut req = uapi::fpgagdr_unpin {
            handle: raw,
            ..uapi::fpgagdr_unpin::new()
        };
        #[allow(unsafe_code)]
        // SAFETY: `ctl` is this card's control node; `req` is a live, exclusively
        // borrowed request.
        let r = unsafe { uapi::ioctl::unpin(self.ctl.as_fd(), &mut req) };
        r.map_err(|errno| self.error(&Call::Unpin { handle: handle.0 }, errno))
    }

    fn transfer(&self, req: &TransferRequest) -> Result<Transfer> {
        self.run_transfer(req, None).map(|(t, _)| t)
    }

    /// TRANSFER with `FPGAGDR_XFER_FRAME`: the module reads the card's `LIVE_SEQ_LO`
    /// after the run and answers whether the slot may have been rewritten meanwhile.
    /// This library speaks ABI 4 only (a module of ABI 3 refuses every request with
    /// EPROTO, rule `abi-version`), so the check is always asked for; a protocol 1.0
    /// card answers [`crate::FrameCheck::Unchecked`].
    fn transfer_frame(&self, req: &TransferRequest, frame: FrameRef) -> Result<FrameTransfer> {
        let (transfer, check) = self.run_transfer(req, Some(frame))?;
        Ok(FrameTransfer {
            transfer,
            check: convert::frame_check(check)?,
        })
    }

    /// The module's counters for the whole card (all open files), read with one
    /// `GET_STATUS`; `None` when it fails (the card was removed).
    fn frame_trigger(&self) -> Result<Box<dyn crate::FrameTrigger>> {
        Ok(Box::new(self.trigger()?))
    }

    /// GET_STATUS's link fields, read now; `None` when GET_STATUS fails or the function
    /// reports no link at all (no PCIe capability: QEMU's conventional-PCI `edu`).
    fn link(&self) -> Option<crate::PcieLink> {
        read_status(&self.ctl)
            .ok()
            .and_then(|s| convert::pcie_link(&s))
    }

    fn chain_cache(&self) -> Option<ChainCache> {
        self.counters().ok().map(|c| ChainCache {
            hits: c.cache_hits,
            misses: c.cache_misses,
        })
    }

    /// `pread` on the C2H channel node. The wait is bounded by the module's
    /// `rw_timeout_ms` per step (not by `timeout`, which the node cannot take).
    fn host_read(
        &self,
        channel: u32,
        card_addr: u64,
        dst: &mut [u8],
        _timeout: Duration,
    ) -> Result<Transfer> {
        let dir = Direction::C2H;
        let len = dst.len();
        convert::check_rw(dir, card_addr, len as u64, &self.limits)?;
        let start = Instant::now();
        if self.aligned(dst.as_ptr()) {
            self.rw_all(dir, channel, card_addr, RwBuf::Read(dst))?;
        } else {
            let mut bounce = self.bounce(len)?;
            self.rw_all(dir, channel, card_addr, RwBuf::Read(bounce.as_mut_slice()))?;
            dst.copy_from_slice(bounce.as_slice());
        }
        Ok(Transfer {
            bytes: len as u64,
            elapsed: start.elapsed(),
        })
    }

    /// `pwrite` on the H2C channel node; bounded like [`KernelCard::host_read`].
    fn host_write(
        &self,
        channel: u32,
        card_addr: u64,
        src: &[u8],
        _timeout: Duration,
    ) -> Result<Transfer> {
        let dir = Direction::H2C;
        let len = src.len();
        convert::check_rw(dir, card_addr, len as u64, &self.limits)?;
        let start = Instant::now();
        if self.aligned(src.as_ptr()) {
            self.rw_all(dir, channel, card_addr, RwBuf::Write(src))?;
        } else {
            let mut bounce = self.bounce(len)?;
            bounce.as_mut_slice().copy_from_slice(src);
            self.rw_all(dir, channel, card_addr, RwBuf::Write(bounce.as_slice()))?;
        }
        Ok(Transfer {
            bytes: len as u64,
            elapsed: start.elapsed(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_nodes_follow_the_control_node() {
        let ctl = Path::new("/dev/fpgagdr2");
        assert_eq!(
            channel_node(ctl, Direction::C2H, 1),
            Path::new("/dev/fpgagdr2_c2h_1")
        );
        assert_eq!(
            channel_node(ctl, Direction::H2C, 3),
            Path::new("/dev/fpgagdr2_h2c_3")
        );
    }

    #[test]
    fn rw_timeout_is_bounded() {
        let t = rw_timeout();
        assert!(t > Duration::ZERO && t <= Duration::from_secs(24 * 3600));
    }
}
