//! Pure conversions between the library's types and the kernel ABI: a filled
//! `fpgagdr_status` into [`CardStatus`], the PIN and TRANSFER requests, timeouts, and every
//! errno of the header's table into an [`Error`]. No system call happens here, so all of
//! it is tested without the module.

use std::io;
use std::path::Path;
use std::time::Duration;

use fpgagdr_uapi::{
    Errno, FPGAGDR_ABI_VERSION, FPGAGDR_CAP_IRQ, FPGAGDR_CAP_POLL, FPGAGDR_CAP_STREAM,
    FPGAGDR_CAP_TEST_ENGINE, FPGAGDR_DIR_C2H, FPGAGDR_DIR_H2C, FPGAGDR_FRAME_CHECK_TORN,
    FPGAGDR_FRAME_CHECK_UNCHECKED, FPGAGDR_FRAME_CHECK_WHOLE, FPGAGDR_LINK_PATH_DEV_UNKNOWN,
    FPGAGDR_MAX_PINS_PER_FILE, FPGAGDR_MEM_DMABUF, FPGAGDR_MEM_HOST, FPGAGDR_MEM_NV_P2P,
    FPGAGDR_PIN_MAX_BYTES, FPGAGDR_PLATFORM_NONE, FPGAGDR_PLATFORM_ORIN, FPGAGDR_PLATFORM_THOR,
    FPGAGDR_PLATFORM_X86_DGPU, FPGAGDR_TIMEOUT_MAX_MS, FPGAGDR_XFER_FRAME, fpgagdr_pin,
    fpgagdr_status, fpgagdr_transfer,
};

use crate::dma::{Direction, FrameCheck, FrameRef, TransferRequest};
use crate::error::{Error, Result};
use crate::memory::{DmaRegion, MemoryKind};
use crate::status::{Capabilities, CardStatus, Platform};

/// What the back-end needs from GET_STATUS besides [`CardStatus`]: the module's own
/// values, checked before each call so the caller gets a precise error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Bit `1 << kind` per built-in memory kind.
    pub(crate) mem_kinds: u32,
    /// TRANSFER `offset` / `card_addr` (and channel-node buffer address) alignment, bytes.
    pub(crate) xfer_align: u64,
    /// TRANSFER `length` granularity, bytes.
    pub(crate) len_granularity: u64,
}

/// `"orin"`, `"thor"`, `"x86-dgpu"`, `"none"`, as `docs/kernel-module.md` names them.
pub(crate) fn platform_name(platform: u32) -> String {
    match platform {
        FPGAGDR_PLATFORM_NONE => "none".into(),
        FPGAGDR_PLATFORM_ORIN => "orin".into(),
        FPGAGDR_PLATFORM_THOR => "thor".into(),
        FPGAGDR_PLATFORM_X86_DGPU => "x86-dgpu".into(),
        other => format!("unknown ({other})"),
    }
}

/// The module's status as the library's [`CardStatus`], plus the [`Limits`] kept by the
/// back-end.
///
/// Mapping: platform `orin` or `thor` → [`Platform::Tegra`], anything else (`x86-dgpu`,
/// `none`, a value this library does not know: not a Tegra) → [`Platform::Desktop`]; `alignment` = `pin_align`; `card_size` 0
/// ("unknown") → `u64::MAX`, so that only wrap-around is checked, as in the module;
/// `gpu_direct` when GPU memory can be pinned (a Tegra's host path for `cuMemHostAlloc`
/// memory, or the `nvidia_p2p` back-end built in); `host_dma` when the card has a
/// channel; `interrupts` from `FPGAGDR_CAP_IRQ`; `simulated` when the engines are the
/// module's test-only software engine (no hardware). `module_version` (the module's
/// `MODULE_VERSION`, from sysfs) goes into the name beside the ABI version when known.
pub(crate) fn card_status(
    path: &Path,
    s: &fpgagdr_status,
    module_version: Option<&str>,
) -> (CardStatus, Limits) {
    let tegra = matches!(s.platform, FPGAGDR_PLATFORM_ORIN | FPGAGDR_PLATFORM_THOR);
    let platform = if tegra {
        Platform::Tegra
    } else {
        Platform::Desktop
    };
    let nv_p2p = s.mem_kinds & (1 << FPGAGDR_MEM_NV_P2P) != 0;
    let test_engine = s.caps & FPGAGDR_CAP_TEST_ENGINE != 0;
    let completion = if s.caps & FPGAGDR_CAP_IRQ != 0 {
        "interrupts"
    } else if s.caps & FPGAGDR_CAP_POLL != 0 {
        "polling"
    } else {
        "completion mode unknown"
    };
    let version = module_version.map_or(String::new(), |v| format!(", fpgagdr.ko {v}"));
    let mut name = format!(
        "fpgagdr card at {} (kernel module ABI {}{version}, platform {}, {} C2H + {} H2C channels, {})",
        path.display(),
        s.abi_version,
        platform_name(s.platform),
        s.c2h_channels,
        s.h2c_channels,
        completion,
    );
    if s.caps & FPGAGDR_CAP_STREAM != 0 {
        name.push_str(", AXI-Stream engines");
    }
    if test_engine {
        name.push_str(", test engine: no hardware");
    }
    let status = CardStatus {
        name,
        platform,
        simulated: test_engine,
        gpu_page_size: u64::from(s.gpu_page_size),
        alignment: u64::from(s.pin_align.max(1)),
        c2h_channels: s.c2h_channels,
        h2c_channels: s.h2c_channels,
        card_memory_bytes: if s.card_size == 0 {
            u64::MAX
        } else {
            s.card_size
        },
        capabilities: Capabilities {
            gpu_direct: tegra || nv_p2p,
            host_dma: s.c2h_channels + s.h2c_channels > 0,
            interrupts: s.caps & FPGAGDR_CAP_IRQ != 0,
        },
    };
    let limits = Limits {
        mem_kinds: s.mem_kinds,
        xfer_align: u64::from(s.xfer_align.max(1)),
        len_granularity: u64::from(s.len_granularity.max(1)),
    };
    (status, limits)
}

/// GET_STATUS's link fields as a [`crate::PcieLink`]; `None` when every one is 0 (the
/// function has no PCIe capability and no link above it is known). `simulated` when the
/// engines are the module's test-only software engine: the link then is the QEMU
/// guest's, not a card's.
///
/// The path (`link_path_*`): generation and width as the module gives them, 0 when
/// `link_path_gen` is 0 (unknown: `link_path_width` and `link_path_dev` then mean
/// nothing, even if an odd module set them); the limiting device unpacked from
/// `link_path_dev` unless it is [`FPGAGDR_LINK_PATH_DEV_UNKNOWN`].
pub(crate) fn pcie_link(s: &fpgagdr_status) -> Option<crate::PcieLink> {
    let path_known = s.link_path_gen != 0;
    let link = crate::PcieLink {
        gen_path: s.link_path_gen,
        width_path: if path_known { s.link_path_width } else { 0 },
        path_limited_by: (path_known && s.link_path_dev != FPGAGDR_LINK_PATH_DEV_UNKNOWN)
            .then(|| crate::PciAddress::from_packed(s.link_path_dev)),
        gen_current: s.link_gen,
        width_current: s.link_width,
        gen_capable: s.link_cap_gen,
        width_capable: s.link_cap_width,
        max_payload: s.link_max_payload,
        max_read_req: s.link_max_read_req,
        simulated: s.caps & FPGAGDR_CAP_TEST_ENGINE != 0,
    };
    let known = [
        link.gen_current,
        link.width_current,
        link.gen_capable,
        link.width_capable,
        link.max_payload,
        link.max_read_req,
        link.gen_path,
    ];
    known.iter().any(|&v| v != 0).then_some(link)
}

/// The module's memory kind for a region: host memory and `cuMemHostAlloc` memory are
/// user pages (`FPGAGDR_MEM_HOST`: on Orin this is the GPU path), CUDA device memory
/// goes through `nvidia_p2p` (`FPGAGDR_MEM_NV_P2P`, x86 with a discrete GPU).
pub(crate) fn mem_kind(kind: MemoryKind) -> u32 {
    match kind {
        MemoryKind::Host | MemoryKind::CudaHost => FPGAGDR_MEM_HOST,
        MemoryKind::CudaDevice => FPGAGDR_MEM_NV_P2P,
    }
}

/// What [`Error::Unsupported`] says when a memory kind cannot be pinned.
fn unsupported_what(kind: MemoryKind, refused: bool) -> &'static str {
    match (kind, refused) {
        (MemoryKind::Host, false) => "pinning host memory (the module lacks its host back-end)",
        (MemoryKind::CudaHost, false) => {
            "pinning cuMemHostAlloc memory (the module lacks its host back-end)"
        }
        (MemoryKind::CudaDevice, false) => {
            "pinning CUDA device memory (the module's nvidia_p2p back-end is not built in; \
             on Jetson use cuMemHostAlloc memory)"
        }
        (MemoryKind::Host, true) => "pinning this host memory (PIN answered EOPNOTSUPP)",
        (MemoryKind::CudaHost, true) => {
            "pinning this cuMemHostAlloc memory as host pages (PIN answered EOPNOTSUPP)"
        }
        (MemoryKind::CudaDevice, true) => {
            "pinning this CUDA device memory through nvidia_p2p (PIN answered EOPNOTSUPP)"
        }
    }
}

/// The PIN request for `region`. Errors: [`Error::ZeroLength`], [`Error::Unsupported`]
/// when the module lacks the back-end for the region's kind (GET_STATUS `mem_kinds`).
pub(crate) fn pin_request(region: &DmaRegion, limits: &Limits, card: &str) -> Result<fpgagdr_pin> {
    if region.len == 0 {
        return Err(Error::ZeroLength { what: "pin" });
    }
    let kind = mem_kind(region.kind);
    if limits.mem_kinds & (1 << kind) == 0 {
        return Err(Error::Unsupported {
            what: unsupported_what(region.kind, false),
            card: card.to_string(),
        });
    }
    Ok(fpgagdr_pin {
        kind,
        addr: region.addr,
        length: region.len,
        ..fpgagdr_pin::new()
    })
}

/// The PIN request for `region` through the dma-buf `dmabuf_fd` exported for it
/// (`FPGAGDR_MEM_DMABUF`: `addr` is the offset in the dma-buf, 0 here, `length` the
/// region's). Errors: [`Error::ZeroLength`], [`Error::Unsupported`] when the module
/// lacks its dma-buf back-end (GET_STATUS `mem_kinds`).
pub(crate) fn pin_request_dmabuf(
    region: &DmaRegion,
    dmabuf_fd: i32,
    limits: &Limits,
    card: &str,
) -> Result<fpgagdr_pin> {
    if region.len == 0 {
        return Err(Error::ZeroLength { what: "pin" });
    }
    if limits.mem_kinds & (1 << FPGAGDR_MEM_DMABUF) == 0 {
        return Err(Error::Unsupported {
            what: "pinning a CUDA dma-buf (the module's dma-buf back-end is not built in; \
                   set card.pin_method to nvidia_p2p or auto)",
            card: card.to_string(),
        });
    }
    Ok(fpgagdr_pin {
        kind: FPGAGDR_MEM_DMABUF,
        addr: 0,
        length: region.len,
        dmabuf_fd,
        ..fpgagdr_pin::new()
    })
}

/// The module's direction value.
pub(crate) fn direction(dir: Direction) -> u32 {
    match dir {
        Direction::C2H => FPGAGDR_DIR_C2H,
        Direction::H2C => FPGAGDR_DIR_H2C,
    }
}

/// A timeout in whole milliseconds, rounded up (so a sub-millisecond timeout waits 1 ms,
/// never zero). Errors: [`Error::ZeroTimeout`]; `timeout-range` ([`Error::Kernel`]) over
/// the module's `FPGAGDR_TIMEOUT_MAX_MS` (60 s).
pub(crate) fn timeout_ms(op: &'static str, timeout: Duration) -> Result<u32> {
    if timeout.is_zero() {
        return Err(Error::ZeroTimeout);
    }
    let ms = timeout.as_nanos().div_ceil(1_000_000);
    match u32::try_from(ms) {
        Ok(ms) if ms <= FPGAGDR_TIMEOUT_MAX_MS => Ok(ms),
        _ => Err(Error::Kernel {
            rule: "timeout-range",
            op,
            errno: Errno::EINVAL as i32,
            detail: format!(
                "a timeout of {timeout:?} is longer than the module's limit of \
                 {FPGAGDR_TIMEOUT_MAX_MS} ms (FPGAGDR_TIMEOUT_MAX_MS)"
            ),
        }),
    }
}

/// Checks one quantity against the module's transfer alignment.
fn check_aligned(
    op: &'static str,
    what: &str,
    value: u64,
    required: u64,
    field: &str,
) -> Result<()> {
    if value.is_multiple_of(required) {
        return Ok(());
    }
    Err(Error::Kernel {
        rule: "alignment",
        op,
        errno: Errno::EINVAL as i32,
        detail: format!(
            "{what} {value:#x} is not a multiple of {required} bytes (the engine's {field} \
             in GET_STATUS)"
        ),
    })
}

/// The TRANSFER request for `req` on the module's handle `handle`. Errors: `alignment`
/// (offset or card address not a multiple of `xfer_align`, length not a multiple of
/// `len_granularity`) and the errors of [`timeout_ms`].
/// The TRANSFER request for `req` on pin `handle`; with `frame`, a C2H of that frame's
/// slot that asks for the torn-frame check (`FPGAGDR_XFER_FRAME`, `frame_seq`,
/// `frame_epoch`). Errors: rule `alignment` (the module's `xfer_align`,
/// `len_granularity`), `timeout-range`, and `argument-valid` (the module's EINVAL) for a
/// frame check on an H2C.
pub(crate) fn transfer_request(
    req: &TransferRequest,
    handle: u32,
    limits: &Limits,
    frame: Option<FrameRef>,
) -> Result<fpgagdr_transfer> {
    const OP: &str = "TRANSFER";
    check_aligned(
        OP,
        "buffer offset",
        req.offset,
        limits.xfer_align,
        "xfer_align",
    )?;
    check_aligned(
        OP,
        "card address",
        req.card_addr,
        limits.xfer_align,
        "xfer_align",
    )?;
    check_aligned(
        OP,
        "length",
        req.len,
        limits.len_granularity,
        "len_granularity",
    )?;
    let t = fpgagdr_transfer {
        direction: direction(req.dir),
        channel: req.channel,
        handle,
        offset: req.offset,
        card_addr: req.card_addr,
        length: req.len,
        timeout_ms: timeout_ms(OP, req.timeout)?,
        ..fpgagdr_transfer::new()
    };
    match frame {
        None => Ok(t),
        Some(f) if req.dir == Direction::C2H => Ok(fpgagdr_transfer {
            flags: FPGAGDR_XFER_FRAME,
            frame_seq: f.seq,
            frame_epoch: f.epoch,
            ..t
        }),
        Some(_) => Err(Error::Kernel {
            rule: "argument-valid",
            op: OP,
            errno: Errno::EINVAL as i32,
            detail: "the torn-frame check is made on a C2H of a frame slot, not on an H2C".into(),
        }),
    }
}

/// The module's `frame_check` answer to a TRANSFER with `FPGAGDR_XFER_FRAME`. Errors:
/// rule `abi` for a value the ABI does not define (`FPGAGDR_FRAME_CHECK_NONE` included:
/// the module was asked).
pub(crate) fn frame_check(value: u32) -> Result<FrameCheck> {
    match value {
        FPGAGDR_FRAME_CHECK_WHOLE => Ok(FrameCheck::Whole),
        FPGAGDR_FRAME_CHECK_TORN => Ok(FrameCheck::Torn),
        FPGAGDR_FRAME_CHECK_UNCHECKED => Ok(FrameCheck::Unchecked),
        other => Err(Error::Kernel {
            rule: "abi",
            op: "TRANSFER",
            errno: 0,
            detail: format!(
                "the module answered the torn-frame check with {other}, which ABI \
                 {FPGAGDR_ABI_VERSION} does not define"
            ),
        }),
    }
}

/// The rules a `read`/`write` on a channel node checks before it moves a byte: card
/// address a multiple of `xfer_align`, length of `len_granularity`, and the card address
/// range a file offset (`i64`) can express. (The buffer's own address alignment is met by
/// a bounce buffer, see the back-end.)
pub(crate) fn check_rw(dir: Direction, card_addr: u64, len: u64, limits: &Limits) -> Result<()> {
    let op = rw_op(dir);
    check_aligned(
        op,
        "card address",
        card_addr,
        limits.xfer_align,
        "xfer_align",
    )?;
    check_aligned(op, "length", len, limits.len_granularity, "len_granularity")?;
    let max = i64::MAX as u64;
    if card_addr.checked_add(len).is_none_or(|end| end > max) {
        return Err(Error::CardBounds {
            card_addr,
            len,
            card_memory: max,
        });
    }
    Ok(())
}

/// `"read"` for a C2H channel node, `"write"` for H2C.
pub(crate) fn rw_op(dir: Direction) -> &'static str {
    match dir {
        Direction::C2H => "read",
        Direction::H2C => "write",
    }
}

/// The call an errno answered, with the values the error should name.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Call<'a> {
    /// GET_STATUS; `module_version` is what the module wrote back on EPROTO.
    Status { module_version: u32 },
    /// PIN of a region.
    Pin { region: &'a DmaRegion },
    /// UNPIN of a handle.
    Unpin { handle: u64 },
    /// TRANSFER on a pinned buffer of `buffer_len` bytes.
    Transfer {
        req: &'a TransferRequest,
        buffer_len: u64,
    },
    /// ABORT of one engine.
    Abort { dir: Direction, channel: u32 },
    /// WAIT_FRAME bounded by `timeout`.
    WaitFrame { timeout: Duration },
    /// FRAME_INFO.
    FrameInfo,
    /// ABORT with FPGAGDR_ABORT_WAITS (wakes this file's frame waits).
    WakeWaits,
    /// `read` (C2H) or `write` (H2C) on a channel node; `timeout` is the module's
    /// `rw_timeout_ms`, the bound those calls wait under.
    Rw {
        dir: Direction,
        channel: u32,
        card_addr: u64,
        len: u64,
        timeout: Duration,
    },
}

impl Call<'_> {
    fn op(&self) -> &'static str {
        match self {
            Call::Status { .. } => "GET_STATUS",
            Call::Pin { .. } => "PIN",
            Call::Unpin { .. } => "UNPIN",
            Call::Transfer { .. } => "TRANSFER",
            Call::Abort { .. } | Call::WakeWaits => "ABORT",
            Call::WaitFrame { .. } => "WAIT_FRAME",
            Call::FrameInfo => "FRAME_INFO",
            Call::Rw { dir, .. } => rw_op(*dir),
        }
    }

    /// What the request was, for messages: `"C2H transfer of 4096 bytes on channel 0
    /// (handle 3, offset 0x0, card address 0x1000)"`.
    fn describe(&self) -> String {
        match self {
            Call::Status { .. } => "the status request".into(),
            Call::Pin { region } => format!(
                "the pin of {} bytes of {} memory at {:#x}",
                region.len, region.kind, region.addr
            ),
            Call::Unpin { handle } => format!("the unpin of handle {handle}"),
            Call::Transfer { req, .. } => format!(
                "the {} transfer of {} bytes on channel {} (handle {}, offset {:#x}, card \
                 address {:#x}, timeout {:?})",
                req.dir, req.len, req.channel, req.handle, req.offset, req.card_addr, req.timeout
            ),
            Call::Abort { dir, channel } => format!("the abort of {dir} channel {channel}"),
            Call::WaitFrame { timeout } => format!("the wait for a frame (timeout {timeout:?})"),
            Call::FrameInfo => "the frame-protocol request".into(),
            Call::WakeWaits => "the wake-up of this file's frame waits".into(),
            Call::Rw {
                dir,
                channel,
                card_addr,
                len,
                ..
            } => format!(
                "the {dir} {} of {len} bytes on channel {channel} at card address {card_addr:#x}",
                rw_op(*dir)
            ),
        }
    }

    fn handle(&self) -> Option<u64> {
        match self {
            Call::Unpin { handle } => Some(*handle),
            Call::Transfer { req, .. } => Some(req.handle.0),
            _ => None,
        }
    }

    /// Direction, channel, length and card address of a data movement.
    fn movement(&self) -> Option<(Direction, u32, u64, u64)> {
        match self {
            Call::Transfer { req, .. } => Some((req.dir, req.channel, req.len, req.card_addr)),
            Call::Rw {
                dir,
                channel,
                card_addr,
                len,
                ..
            } => Some((*dir, *channel, *len, *card_addr)),
            _ => None,
        }
    }
}

/// The error for `errno` answered by `call` on the card at `path` with `card` status.
///
/// One [`Error`] per rule of the header's table, most of them [`Error::Kernel`] with the
/// errno in the message; where the module's rule is one the library already names, its
/// variant: `EOPNOTSUPP` → [`Error::Unsupported`], `EOVERFLOW` on TRANSFER →
/// [`Error::BufferBounds`], `ERANGE` → [`Error::CardBounds`], `ECHRNG` →
/// [`Error::ChannelRange`], `ENOENT` → [`Error::UnknownHandle`], `ENOMEM` →
/// [`Error::Alloc`], `ETIMEDOUT` → [`Error::Timeout`], `ENODEV` → [`Error::NoCard`].
pub(crate) fn kernel_error(call: &Call<'_>, errno: Errno, path: &Path, card: &CardStatus) -> Error {
    let op = call.op();
    let kernel = |rule: &'static str, detail: String| Error::Kernel {
        rule,
        op,
        errno: errno as i32,
        detail,
    };
    let what = call.describe();
    let handle = call.handle().unwrap_or(0);
    match errno {
        Errno::ENOTTY => kernel(
            "abi",
            format!(
                "{} does not know this request: it is not an fpgagdr control node, or its \
                 module speaks another ABI than this library (version {FPGAGDR_ABI_VERSION})",
                path.display()
            ),
        ),
        Errno::EFAULT => kernel(
            "user-memory",
            match call {
                Call::Pin { .. } | Call::Rw { .. } => {
                    format!("{what}: the range is not user memory the module can pin")
                }
                _ => format!("{what}: the module could not copy the argument (a library bug)"),
            },
        ),
        Errno::EPROTO => kernel(
            "abi-version",
            match call {
                Call::Status { module_version } => format!(
                    "this library speaks fpgagdr ABI {FPGAGDR_ABI_VERSION}, the module at {} \
                     speaks ABI {module_version}: install a library and module of one release",
                    path.display()
                ),
                _ => format!(
                    "this library speaks fpgagdr ABI {FPGAGDR_ABI_VERSION}, the module another"
                ),
            },
        ),
        Errno::EINVAL => kernel(
            "argument-valid",
            format!(
                "the module refused {what}: a nonzero flag, pad or reserved field, an unknown \
                 kind or direction, a zero length, a value not aligned as GET_STATUS says, or \
                 a timeout outside 1..={FPGAGDR_TIMEOUT_MAX_MS} ms"
            ),
        ),
        Errno::EBADF => kernel(
            "file-descriptor",
            match call {
                Call::Rw { .. } => format!(
                    "{what}: the channel node was opened for the other direction (a library bug)"
                ),
                _ => format!("{what}: the dma-buf file descriptor is not an open file"),
            },
        ),
        Errno::EOPNOTSUPP => Error::Unsupported {
            what: match call {
                Call::Pin { region } => unsupported_what(region.kind, true),
                _ => "this request (EOPNOTSUPP)",
            },
            card: card.name.clone(),
        },
        Errno::E2BIG => kernel(
            "pin-size",
            format!(
                "{what}: longer than the {FPGAGDR_PIN_MAX_BYTES} bytes (64 GiB) the module \
                 pins at once (FPGAGDR_PIN_MAX_BYTES)"
            ),
        ),
        Errno::EOVERFLOW => match call {
            Call::Transfer { req, buffer_len } => Error::BufferBounds {
                offset: req.offset,
                len: req.len,
                buffer_len: *buffer_len,
            },
            _ => kernel(
                "pin-size",
                format!("{what}: address + length wraps around the address space"),
            ),
        },
        Errno::ERANGE => match call.movement() {
            Some((_, _, len, card_addr)) => Error::CardBounds {
                card_addr,
                len,
                card_memory: card.card_memory_bytes,
            },
            None => kernel("card-bounds", format!("{what}: card address out of range")),
        },
        Errno::ECHRNG => match call {
            Call::Transfer { req, .. } => channel_range(req.dir, req.channel, card),
            Call::Abort { dir, channel } | Call::Rw { dir, channel, .. } => {
                channel_range(*dir, *channel, card)
            }
            _ => kernel("channel-range", format!("{what}: no such channel")),
        },
        Errno::ENOENT => Error::UnknownHandle { handle },
        Errno::EALREADY => kernel(
            "handle-valid",
            format!("handle {handle} was already unpinned on this file (a double unpin)"),
        ),
        Errno::ENOSPC => kernel(
            "pin-limit",
            format!(
                "{what}: this open card already holds {FPGAGDR_MAX_PINS_PER_FILE} live pins \
                 (FPGAGDR_MAX_PINS_PER_FILE); unpin buffers or open the card again"
            ),
        ),
        Errno::ENOMEM => Error::Alloc {
            len: match call {
                Call::Pin { region } => region.len,
                _ => call.movement().map_or(0, |m| m.2),
            },
            kind: "pinned",
            reason: format!(
                "{op} answered ENOMEM: the kernel is out of memory, or pinning would exceed \
                 RLIMIT_MEMLOCK (raise it: `ulimit -l`, systemd LimitMEMLOCK=)"
            ),
        },
        Errno::EBUSY => match call {
            Call::Abort { .. } => kernel(
                "engine-busy",
                format!(
                    "{what}: a transfer of another open file holds the engine; ABORT stops \
                     only this card handle's own transfers"
                ),
            ),
            _ => kernel(
                "handle-busy",
                format!(
                    "{what}: another transfer on handle {handle} is in flight (one transfer \
                     per pinned buffer at a time)"
                ),
            ),
        },
        Errno::ESTALE => kernel(
            "gpu-memory-freed",
            match call {
                Call::Pin { .. } => format!("{what}: the GPU memory was freed while pinning it"),
                _ => format!(
                    "{what}: the GPU memory behind handle {handle} was freed (cudaFree, or its \
                     process exited) while pinned; unpin the buffer"
                ),
            },
        ),
        Errno::ETIMEDOUT => match (call.movement(), call) {
            (_, Call::Transfer { req, .. }) => Error::Timeout {
                dir: req.dir,
                len: req.len,
                timeout: req.timeout,
            },
            (
                Some((dir, _, len, _)),
                Call::Rw {
                    timeout: rw_timeout,
                    ..
                },
            ) => Error::Timeout {
                dir,
                len,
                timeout: *rw_timeout,
            },
            (_, Call::WaitFrame { timeout }) => Error::NoFrame { timeout: *timeout },
            _ => kernel("timeout", format!("{what} timed out")),
        },
        Errno::EINTR => kernel(
            "interrupted",
            match call {
                Call::Pin { .. } => format!("{what}: a fatal signal arrived while pinning"),
                Call::WaitFrame { .. } => {
                    format!("{what}: a signal arrived while waiting (no event was taken)")
                }
                _ => format!(
                    "{what}: a signal arrived while waiting; the engine was stopped and the \
                     transfer did not complete (retry it)"
                ),
            },
        ),
        Errno::ECANCELED => kernel(
            "aborted",
            match call {
                Call::WaitFrame { .. } => format!(
                    "{what} was ended by ABORT with FPGAGDR_ABORT_WAITS on the same open file \
                     (queued events stay queued)"
                ),
                _ => format!(
                    "{what} was stopped (or given up while waiting for its engine) by ABORT, by \
                     unpinning its buffer, or because its GPU memory was freed"
                ),
            },
        ),
        Errno::ENXIO => kernel(
            "card-protocol",
            format!(
                "{what}: the card does not speak the frame protocol of docs/card-protocol.md \
                 (FRAME_INFO says which part: user register block, magic, version, slots)"
            ),
        ),
        Errno::EAGAIN => kernel(
            "no-frame-queued",
            format!("{what}: no frame-done event is queued (FPGAGDR_WAIT_NOWAIT)"),
        ),
        Errno::EBADMSG => kernel(
            "frame-event",
            format!(
                "{what}: the card broke the frame protocol (a sequence not increasing, a slot \
                 other than sequence mod slot count, a length under the header or past the slot)"
            ),
        ),
        Errno::EIO => match call {
            Call::WaitFrame { .. } => kernel(
                "card-gone",
                format!(
                    "{what}: no frame-done event was queued and the card reads all ones: it \
                     is gone from the bus or its link is down (a PCIe error being \
                     recovered); capture resumes by itself when it answers again (the \
                     kernel log says when)"
                ),
            ),
            Call::Pin { .. } => kernel(
                "dma-mapping",
                format!(
                    "{what}: the back-end or the kernel's DMA API failed to pin or map the \
                     memory (the kernel log says how)"
                ),
            ),
            _ => kernel(
                "engine",
                format!(
                    "{what}: the engine reported an error (descriptor, read or write error, \
                     magic mismatch), was not seen stopped in time (the card then stops \
                     mastering the bus until it is), or a PCIe error ended the run; \
                     KernelCard::abort resets an engine left in an error state"
                ),
            ),
        },
        Errno::ENODEV => Error::NoCard {
            path: path.to_path_buf(),
            reason: format!("the card was removed ({op} answered ENODEV)"),
        },
        other => kernel("kernel", format!("{what}: {}", other.desc())),
    }
}

/// The error for a card whose frame protocol the module refused at bind time
/// (FRAME_INFO's `state`): rule `card-protocol`, the message naming the part at fault.
pub(crate) fn frames_state_error(info: &fpgagdr_uapi::fpgagdr_frame_info, path: &Path) -> Error {
    use fpgagdr_uapi as u;
    let what = match info.state {
        u::FPGAGDR_FRAMES_NO_USER_BAR => {
            "the card has no user register block (no XDMA user BAR, or one under 4 KiB)".into()
        }
        u::FPGAGDR_FRAMES_BAD_MAGIC => {
            "the identification register is not the protocol's magic \"FGDR\" (0x52444746): \
             the bitstream does not implement docs/card-protocol.md"
                .into()
        }
        u::FPGAGDR_FRAMES_BAD_VERSION => format!(
            "the card speaks protocol version {}.{}; this module speaks 1.x",
            info.proto_version >> 16,
            info.proto_version & 0xffff
        ),
        u::FPGAGDR_FRAMES_NO_SLOTS => format!(
            "the card declares {} frame slots (2 to {} allowed: with one the card would \
             rewrite the frame the host reads)",
            info.slot_count,
            u::FPGAGDR_MAX_SLOTS
        ),
        u::FPGAGDR_FRAMES_SLOT_TOO_SMALL => format!(
            "a slot of {} bytes is smaller than a frame's {}-byte header",
            info.slot_size,
            u::FPGAGDR_FRAME_HEADER_LEN
        ),
        u::FPGAGDR_FRAMES_SLOT_MISALIGNED => format!(
            "slot base {:#x} or slot size {} is not a multiple of 4096",
            info.slot_base, info.slot_size
        ),
        u::FPGAGDR_FRAMES_SLOTS_PAST_CARD => format!(
            "{} slots of {} bytes from {:#x} pass the end of card memory",
            info.slot_count, info.slot_size, info.slot_base
        ),
        u::FPGAGDR_FRAMES_BAD_IRQ => format!(
            "frame-done user interrupt {} is not one of XDMA's 0..15",
            info.user_irq
        ),
        other => format!("FRAME_INFO state {other}, which this library does not know"),
    };
    Error::Kernel {
        rule: "card-protocol",
        op: "FRAME_INFO",
        errno: Errno::ENXIO as i32,
        detail: format!("{}: {what}", path.display()),
    }
}

fn channel_range(dir: Direction, channel: u32, card: &CardStatus) -> Error {
    Error::ChannelRange {
        dir,
        channel,
        count: match dir {
            Direction::C2H => card.c2h_channels,
            Direction::H2C => card.h2c_channels,
        },
    }
}

/// The error for a node that could not be opened: [`Error::NoCard`] whose reason says
/// what to do (load the module; join the `fpgagdr` group).
pub(crate) fn open_error(path: &Path, err: &io::Error) -> Error {
    let errno = err.raw_os_error().map(Errno::from_raw);
    let reason = match errno {
        Some(Errno::ENOENT) => "no such device node (ENOENT): is the fpgagdr module loaded \
                                (`modprobe fpgagdr`) and the card present?"
            .to_string(),
        Some(Errno::EACCES | Errno::EPERM) => format!(
            "permission denied ({}): the fpgagdr nodes belong to the `fpgagdr` group; add this \
             user to it (`sudo usermod -aG fpgagdr $USER`, then log in again) and install the \
             udev rule kmod/udev/99-fpgagdr.rules",
            errno.map_or_else(String::new, |e| format!("{e:?}"))
        ),
        Some(e @ (Errno::ENODEV | Errno::ENXIO)) => format!(
            "the node exists but no card is behind it ({e:?}): the card was removed or the \
             module unloaded"
        ),
        _ => format!("cannot open it: {err}"),
    };
    Error::NoCard {
        path: path.to_path_buf(),
        reason,
    }
}

/// The error for a GET_STATUS that failed while opening: not an fpgagdr node (ENOTTY) is
/// [`Error::NoCard`]; the rest as [`kernel_error`] says.
pub(crate) fn status_error(path: &Path, errno: Errno, module_version: u32) -> Error {
    if errno == Errno::ENOTTY {
        return Error::NoCard {
            path: path.to_path_buf(),
            reason: "it is not an fpgagdr control node (GET_STATUS answered ENOTTY)".into(),
        };
    }
    let placeholder = CardStatus {
        name: path.display().to_string(),
        platform: Platform::Desktop,
        simulated: false,
        gpu_page_size: 0,
        alignment: 1,
        c2h_channels: 0,
        h2c_channels: 0,
        card_memory_bytes: 0,
        capabilities: Capabilities {
            gpu_direct: false,
            host_dma: false,
            interrupts: false,
        },
    };
    kernel_error(&Call::Status { module_version }, errno, path, &placeholder)
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::PathBuf;

    use fpgagdr_uapi::{ERRNO_TABLE, FPGAGDR_CAP_NV_PERSISTENT, FPGAGDR_MEM_DMABUF};

    use super::*;
    use crate::dma::Handle;

    const PATH: &str = "/dev/fpgagdr0";

    /// What the module on an x86 desktop with a discrete GPU would report.
    fn x86_status() -> fpgagdr_status {
        fpgagdr_status {
            platform: FPGAGDR_PLATFORM_X86_DGPU,
            caps: FPGAGDR_CAP_IRQ | FPGAGDR_CAP_NV_PERSISTENT,
            mem_kinds: 1 << FPGAGDR_MEM_HOST | 1 << FPGAGDR_MEM_NV_P2P | 1 << FPGAGDR_MEM_DMABUF,
            default_kind: FPGAGDR_MEM_NV_P2P,
            gpu_page_size: 65536,
            pin_align: 4096,
            xfer_align: 64,
            len_granularity: 64,
            h2c_channels: 2,
            c2h_channels: 4,
            desc_max_bytes: 1 << 20,
            card_size: 2 << 30,
            pins: 3,
            ..fpgagdr_status::new()
        }
    }

    fn limits() -> Limits {
        card_status(Path::new(PATH), &x86_status(), None).1
    }

    fn card() -> CardStatus {
        card_status(Path::new(PATH), &x86_status(), None).0
    }

    fn request() -> TransferRequest {
        TransferRequest {
            dir: Direction::C2H,
            channel: 3,
            handle: Handle(7),
            offset: 0x1_0000,
            card_addr: 0x1_2345_6780,
            len: 1 << 20,
            timeout: Duration::from_micros(2500),
        }
    }

    #[test]
    fn link_fields_convert_and_all_zero_is_no_link() {
        assert_eq!(
            pcie_link(&x86_status()),
            None,
            "no PCIe capability: no link"
        );
        let s = fpgagdr_status {
            link_gen: 2,
            link_width: 4,
            link_cap_gen: 3,
            link_cap_width: 8,
            link_max_payload: 256,
            link_max_read_req: 512,
            ..x86_status()
        };
        let l = pcie_link(&s).unwrap();
        assert_eq!((l.gen_current, l.width_current), (2, 4));
        assert_eq!((l.gen_capable, l.width_capable), (3, 8));
        assert_eq!((l.max_payload, l.max_read_req), (256, 512));
        assert!(!l.simulated);
        let te = fpgagdr_status {
            caps: FPGAGDR_CAP_TEST_ENGINE,
            ..s
        };
        assert!(
            pcie_link(&te).unwrap().simulated,
            "test engine: no hardware"
        );
        // No path from a module older than the path fields (they were zero).
        assert_eq!((l.gen_path, l.width_path, l.path_limited_by), (0, 0, None));
    }

    /// The path fields against values packed as the module packs them (`(domain << 16)
    /// | (bus << 8) | devfn`), every generation and the widths Link Status can hold.
    #[test]
    fn path_link_fields_decode() {
        for link_path_gen in 1..=6u32 {
            for link_path_width in [1u32, 2, 4, 8, 12, 16, 32] {
                // 0000:00:01.0, the QEMU root port, limits a conventional-PCI card.
                let s = fpgagdr_status {
                    link_path_gen,
                    link_path_width,
                    link_path_dev: 0x0000_0008,
                    ..x86_status()
                };
                let l = pcie_link(&s).expect("a known path is a link to report");
                assert_eq!((l.gen_path, l.width_path), (link_path_gen, link_path_width));
                assert_eq!(
                    (l.gen_current, l.width_current),
                    (0, 0),
                    "the card's own: none"
                );
                assert_eq!(l.path_limited_by.unwrap().to_string(), "0000:00:01.0");
            }
        }
        // A switch's downstream port in domain 5: 0005:0a:1f.7 (devfn 0xff).
        let s = fpgagdr_status {
            link_gen: 3,
            link_width: 8,
            link_path_gen: 3,
            link_path_width: 4,
            link_path_dev: 0x0005_0aff,
            ..x86_status()
        };
        let l = pcie_link(&s).unwrap();
        let a = l.path_limited_by.unwrap();
        assert_eq!((a.domain, a.bus, a.device, a.function), (5, 0x0a, 31, 7));
        assert_eq!(a.to_string(), "0005:0a:1f.7");
        // A domain the module cannot pack: the link without its device.
        let vmd = fpgagdr_status {
            link_path_dev: FPGAGDR_LINK_PATH_DEV_UNKNOWN,
            ..s
        };
        let l = pcie_link(&vmd).unwrap();
        assert_eq!((l.gen_path, l.width_path, l.path_limited_by), (3, 4, None));
        // Generation 0 is "unknown": width and device are not believed.
        let unknown = fpgagdr_status {
            link_path_gen: 0,
            link_path_width: 4,
            link_path_dev: 0x8,
            ..x86_status()
        };
        assert_eq!(pcie_link(&unknown), None, "nothing known: no link");
    }

    #[test]
    fn x86_status_converts() {
        let (st, lim) = card_status(Path::new(PATH), &x86_status(), None);
        assert_eq!(st.platform, Platform::Desktop);
        assert!(!st.simulated);
        assert_eq!(st.gpu_page_size, 65536);
        assert_eq!(st.alignment, 4096, "alignment is the module's pin_align");
        assert_eq!((st.c2h_channels, st.h2c_channels), (4, 2));
        assert_eq!(st.card_memory_bytes, 2 << 30);
        assert_eq!(
            st.capabilities,
            Capabilities {
                gpu_direct: true,
                host_dma: true,
                interrupts: true
            }
        );
        for part in [
            PATH,
            &format!("ABI {FPGAGDR_ABI_VERSION}"),
            "x86-dgpu",
            "4 C2H + 2 H2C",
            "interrupts",
        ] {
            assert!(st.name.contains(part), "{part:?} missing in {}", st.name);
        }
        assert_eq!(
            lim,
            Limits {
                mem_kinds: 0b111,
                xfer_align: 64,
                len_granularity: 64
            }
        );
    }

    #[test]
    fn orin_and_hostonly_statuses_convert() {
        let orin = fpgagdr_status {
            platform: FPGAGDR_PLATFORM_ORIN,
            caps: FPGAGDR_CAP_POLL,
            mem_kinds: 1 << FPGAGDR_MEM_HOST | 1 << FPGAGDR_MEM_DMABUF,
            gpu_page_size: 4096,
            card_size: 0,
            ..x86_status()
        };
        let (named, _) = card_status(Path::new(PATH), &orin, Some("0.1.0"));
        assert!(
            named.name.contains(&format!(
                "(kernel module ABI {FPGAGDR_ABI_VERSION}, fpgagdr.ko 0.1.0, platform orin,"
            )),
            "{}",
            named.name
        );
        let (st, _) = card_status(Path::new(PATH), &orin, None);
        assert_eq!(st.platform, Platform::Tegra);
        assert_eq!(st.gpu_page_size, 4096);
        assert!(
            st.capabilities.gpu_direct,
            "cuMemHostAlloc memory through host pins"
        );
        assert!(!st.capabilities.interrupts);
        assert!(st.name.contains("polling"), "{}", st.name);
        assert_eq!(
            st.card_memory_bytes,
            u64::MAX,
            "unknown size: only wrap is checked"
        );

        // A generic host running the test engine: no GPU path, simulated, no channels.
        let none = fpgagdr_status {
            platform: FPGAGDR_PLATFORM_NONE,
            caps: FPGAGDR_CAP_TEST_ENGINE | FPGAGDR_CAP_STREAM,
            mem_kinds: 1 << FPGAGDR_MEM_HOST,
            c2h_channels: 0,
            h2c_channels: 0,
            xfer_align: 0,
            ..x86_status()
        };
        let (st, lim) = card_status(Path::new(PATH), &none, None);
        assert_eq!(st.platform, Platform::Desktop);
        assert!(st.simulated);
        assert!(!st.capabilities.gpu_direct && !st.capabilities.host_dma);
        assert!(st.name.contains("platform none"), "{}", st.name);
        assert!(st.name.contains("test engine: no hardware"), "{}", st.name);
        assert!(st.name.contains("AXI-Stream"), "{}", st.name);
        assert_eq!(lim.xfer_align, 1, "a zero alignment means none");
        assert_eq!(platform_name(9), "unknown (9)");
    }

    #[test]
    fn thor_is_a_tegra_whose_gpu_memory_is_pinned_by_host_pins() {
        // Thor: no nvidia_p2p back-end, host pins of cuMemHostAlloc memory are the GPU
        // path, as on Orin.
        let thor = fpgagdr_status {
            platform: FPGAGDR_PLATFORM_THOR,
            mem_kinds: 1 << FPGAGDR_MEM_HOST | 1 << FPGAGDR_MEM_DMABUF,
            default_kind: FPGAGDR_MEM_HOST,
            gpu_page_size: 4096,
            ..x86_status()
        };
        let (st, lim) = card_status(Path::new(PATH), &thor, None);
        assert_eq!(st.platform, Platform::Tegra);
        assert!(st.capabilities.gpu_direct, "{st:?}");
        assert_eq!(lim.mem_kinds & (1 << FPGAGDR_MEM_NV_P2P), 0);
        assert!(st.name.contains("platform thor"), "{}", st.name);
        // A value this library does not know yet is a generic host, not an error.
        let later = fpgagdr_status {
            platform: 7,
            mem_kinds: 1 << FPGAGDR_MEM_HOST,
            ..x86_status()
        };
        let (st, _) = card_status(Path::new(PATH), &later, None);
        assert_eq!(st.platform, Platform::Desktop);
        assert!(!st.capabilities.gpu_direct);
        assert!(st.name.contains("platform unknown (7)"), "{}", st.name);
    }

    #[test]
    fn memory_kinds_map_to_the_modules_kinds() {
        assert_eq!(mem_kind(MemoryKind::Host), FPGAGDR_MEM_HOST);
        assert_eq!(mem_kind(MemoryKind::CudaHost), FPGAGDR_MEM_HOST);
        assert_eq!(mem_kind(MemoryKind::CudaDevice), FPGAGDR_MEM_NV_P2P);
    }

    #[test]
    fn dmabuf_pin_requests_name_the_fd_at_offset_zero() {
        let region = DmaRegion {
            addr: 0x7f00_0001_0000,
            len: 3 << 20,
            kind: MemoryKind::CudaDevice,
        };
        let p = pin_request_dmabuf(&region, 17, &limits(), "card").unwrap();
        assert_eq!(
            p,
            fpgagdr_pin {
                kind: FPGAGDR_MEM_DMABUF,
                addr: 0,
                length: 3 << 20,
                dmabuf_fd: 17,
                ..fpgagdr_pin::new()
            }
        );
        let no_dmabuf = Limits {
            mem_kinds: (1 << FPGAGDR_MEM_HOST) | (1 << FPGAGDR_MEM_NV_P2P),
            ..limits()
        };
        let e = pin_request_dmabuf(&region, 17, &no_dmabuf, "the x86 card").unwrap_err();
        assert_eq!(e.rule(), "capability");
        assert!(
            e.to_string().contains("dma-buf") && e.to_string().contains("the x86 card"),
            "{e}"
        );
        let empty = DmaRegion { len: 0, ..region };
        assert_eq!(
            pin_request_dmabuf(&empty, 17, &limits(), "c")
                .unwrap_err()
                .rule(),
            "length-nonzero"
        );
    }

    #[test]
    fn pin_request_fields() {
        let region = DmaRegion {
            addr: 0x7f00_0001_0000,
            len: 3 << 20,
            kind: MemoryKind::CudaDevice,
        };
        let p = pin_request(&region, &limits(), "card").unwrap();
        assert_eq!(
            p,
            fpgagdr_pin {
                abi_version: FPGAGDR_ABI_VERSION,
                kind: FPGAGDR_MEM_NV_P2P,
                addr: 0x7f00_0001_0000,
                length: 3 << 20,
                dmabuf_fd: -1,
                flags: 0,
                handle: 0,
                segments: 0,
                page_size: 0,
                method: 0,
            }
        );
        let host = DmaRegion {
            kind: MemoryKind::CudaHost,
            ..region
        };
        assert_eq!(
            pin_request(&host, &limits(), "card").unwrap().kind,
            FPGAGDR_MEM_HOST
        );
        // Orin's module has no nvidia_p2p back-end: device memory is refused up front.
        let orin = Limits {
            mem_kinds: 1 << FPGAGDR_MEM_HOST,
            ..limits()
        };
        let e = pin_request(&region, &orin, "the Orin card").unwrap_err();
        assert_eq!(e.rule(), "capability");
        assert!(e.to_string().contains("nvidia_p2p") && e.to_string().contains("the Orin card"));
        let empty = DmaRegion { len: 0, ..region };
        assert_eq!(
            pin_request(&empty, &limits(), "c").unwrap_err().rule(),
            "length-nonzero"
        );
    }

    #[test]
    fn transfer_request_fields() {
        let t = transfer_request(&request(), 7, &limits(), None).unwrap();
        assert_eq!(
            t,
            fpgagdr_transfer {
                abi_version: FPGAGDR_ABI_VERSION,
                direction: FPGAGDR_DIR_C2H,
                channel: 3,
                handle: 7,
                offset: 0x1_0000,
                card_addr: 0x1_2345_6780,
                length: 1 << 20,
                timeout_ms: 3,
                flags: 0,
                bytes: 0,
                duration_ns: 0,
                frame_seq: 0,
                frame_epoch: 0,
                frame_check: 0,
            }
        );
        let h2c = TransferRequest {
            dir: Direction::H2C,
            ..request()
        };
        assert_eq!(
            transfer_request(&h2c, 7, &limits(), None)
                .unwrap()
                .direction,
            FPGAGDR_DIR_H2C
        );
    }

    #[test]
    fn a_frame_read_asks_the_module_for_the_torn_frame_check() {
        let frame = FrameRef {
            seq: 0x1_0000_0005,
            epoch: 9,
        };
        let t = transfer_request(&request(), 7, &limits(), Some(frame)).unwrap();
        assert_eq!(
            (t.flags, t.frame_seq, t.frame_epoch, t.frame_check),
            (FPGAGDR_XFER_FRAME, 0x1_0000_0005, 9, 0)
        );
        assert_eq!(
            t,
            fpgagdr_transfer {
                flags: FPGAGDR_XFER_FRAME,
                frame_seq: 0x1_0000_0005,
                frame_epoch: 9,
                ..transfer_request(&request(), 7, &limits(), None).unwrap()
            }
        );
        let h2c = TransferRequest {
            dir: Direction::H2C,
            ..request()
        };
        let e = transfer_request(&h2c, 7, &limits(), Some(frame)).unwrap_err();
        assert_eq!(e.rule(), "argument-valid", "{e}");
        assert_eq!(
            frame_check(FPGAGDR_FRAME_CHECK_WHOLE).unwrap(),
            FrameCheck::Whole
        );
        assert_eq!(
            frame_check(FPGAGDR_FRAME_CHECK_TORN).unwrap(),
            FrameCheck::Torn
        );
        assert_eq!(
            frame_check(FPGAGDR_FRAME_CHECK_UNCHECKED).unwrap(),
            FrameCheck::Unchecked
        );
        for bad in [0, 4, u32::MAX] {
            let e = frame_check(bad).unwrap_err();
            assert_eq!(e.rule(), "abi", "{e}");
            assert!(e.to_string().contains(&format!(" {bad},")), "{e}");
        }
    }

    #[test]
    fn transfer_request_checks_the_modules_alignment() {
        for (req, what) in [
            (
                TransferRequest {
                    offset: 0x1_0001,
                    ..request()
                },
                "buffer offset 0x10001",
            ),
            (
                TransferRequest {
                    card_addr: 0x20,
                    ..request()
                },
                "card address 0x20",
            ),
            (
                TransferRequest {
                    len: 100,
                    ..request()
                },
                "length 0x64",
            ),
        ] {
            let e = transfer_request(&req, 7, &limits(), None).unwrap_err();
            assert_eq!(e.rule(), "alignment", "{e}");
            let msg = e.to_string();
            assert!(msg.contains(what) && msg.contains("EINVAL"), "{msg}");
        }
        assert!(check_rw(Direction::C2H, 0x40, 0x80, &limits()).is_ok());
        let e = check_rw(Direction::H2C, 0x41, 0x80, &limits()).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("rule alignment: write failed with EINVAL"),
            "{e}"
        );
        let e = check_rw(Direction::C2H, u64::MAX - 63, 64, &limits()).unwrap_err();
        assert_eq!(e.rule(), "card-bounds");
    }

    #[test]
    fn timeouts_round_up_and_stay_in_the_modules_range() {
        assert_eq!(timeout_ms("T", Duration::from_nanos(1)).unwrap(), 1);
        assert_eq!(timeout_ms("T", Duration::from_millis(100)).unwrap(), 100);
        assert_eq!(
            timeout_ms("T", Duration::from_micros(100_001)).unwrap(),
            101
        );
        assert_eq!(timeout_ms("T", Duration::from_secs(60)).unwrap(), 60_000);
        assert_eq!(
            timeout_ms("T", Duration::ZERO).unwrap_err().rule(),
            "timeout-nonzero"
        );
        let e = timeout_ms("TRANSFER", Duration::from_millis(60_001)).unwrap_err();
        assert_eq!(e.rule(), "timeout-range");
        assert!(e.to_string().contains("60000 ms"), "{e}");
        let e = timeout_ms("TRANSFER", Duration::MAX).unwrap_err();
        assert_eq!(e.rule(), "timeout-range");
    }

    /// The call each ioctl of the header's table stands for ("any": a transfer).
    fn call_for<'a>(ioctl: &str, region: &'a DmaRegion, req: &'a TransferRequest) -> Call<'a> {
        match ioctl.split(',').next().unwrap() {
            "PIN" => Call::Pin { region },
            "UNPIN" => Call::Unpin { handle: 7 },
            "ABORT" => Call::Abort {
                dir: Direction::H2C,
                channel: 5,
            },
            "WAIT_FRAME" => Call::WaitFrame {
                timeout: Duration::from_millis(50),
            },
            _ => Call::Transfer {
                req,
                buffer_len: 1 << 20,
            },
        }
    }

    /// Every errno of the header's table becomes its own error: a distinct message that
    /// starts with its rule; the rules are the ones the table below expects.
    #[test]
    fn every_errno_of_the_header_maps_to_a_distinct_rule_naming_error() {
        // The rule per errno, one entry per ioctl line of the header's table.
        let expected: BTreeMap<&str, &[&str]> = [
            ("ENOTTY", &["abi"][..]),
            ("EFAULT", &["user-memory", "user-memory"]),
            ("EPROTO", &["abi-version"]),
            ("EINVAL", &["argument-valid"]),
            ("EBADF", &["file-descriptor"]),
            ("EOPNOTSUPP", &["capability"]),
            ("E2BIG", &["pin-size"]),
            ("EOVERFLOW", &["pin-size", "buffer-bounds"]),
            ("ERANGE", &["card-bounds"]),
            ("ECHRNG", &["channel-range"]),
            ("ENOENT", &["handle-valid"]),
            ("EALREADY", &["handle-valid"]),
            ("ENOSPC", &["pin-limit"]),
            ("ENOMEM", &["memory"]),
            ("EBUSY", &["handle-busy", "engine-busy"]),
            ("ESTALE", &["gpu-memory-freed", "gpu-memory-freed"]),
            ("ETIMEDOUT", &["timeout", "timeout"]),
            ("EINTR", &["interrupted", "interrupted", "interrupted"]),
            ("ECANCELED", &["aborted", "aborted"]),
            ("EIO", &["engine", "dma-mapping", "card-gone"]),
            ("ENXIO", &["card-protocol"]),
            ("EAGAIN", &["no-frame-queued"]),
            ("EBADMSG", &["frame-event"]),
            ("ENODEV", &["card-present"]),
        ]
        .into();
        let region = DmaRegion {
            addr: 0x10_0000,
            len: 64 << 30,
            kind: MemoryKind::Host,
        };
        let req = request();
        let path = PathBuf::from(PATH);
        let mut messages = BTreeSet::new();
        let mut seen = BTreeSet::new();
        for row in ERRNO_TABLE {
            // Every ioctl the table lists the errno for.
            assert_eq!(row.ioctls.len(), expected[row.name].len(), "{}", row.name);
            for (ioctl, rule) in row.ioctls.iter().zip(expected[row.name]) {
                let call = call_for(ioctl, &region, &req);
                let e = kernel_error(&call, row.errno, &path, &card());
                let msg = e.to_string();
                assert_eq!(e.rule(), *rule, "{} on {ioctl}: {msg}", row.name);
                assert!(
                    crate::RULES.contains(rule),
                    "rule {rule} missing from fpgagdr::RULES"
                );
                assert!(
                    msg.starts_with(&format!("rule {}: ", e.rule())),
                    "{} on {ioctl}: {msg}",
                    row.name
                );
                if matches!(
                    e,
                    Error::Kernel { .. } | Error::NoCard { .. } | Error::Alloc { .. }
                ) {
                    assert!(msg.contains(row.name), "{} not named: {msg}", row.name);
                }
                if ioctl == &row.ioctls[0] {
                    assert!(messages.insert(msg.clone()), "two errnos give {msg}");
                }
            }
            seen.insert(row.name);
        }
        assert_eq!(
            seen.len(),
            expected.len(),
            "the test covers the whole table"
        );
        assert_eq!(messages.len(), ERRNO_TABLE.len());
    }

    #[test]
    fn mapped_errors_carry_the_request_values() {
        let region = DmaRegion {
            addr: 0x10_0000,
            len: 1 << 20,
            kind: MemoryKind::Host,
        };
        let req = request();
        let path = Path::new(PATH);
        let xfer = Call::Transfer {
            req: &req,
            buffer_len: 1 << 20,
        };
        match kernel_error(&xfer, Errno::ETIMEDOUT, path, &card()) {
            Error::Timeout { dir, len, timeout } => {
                assert_eq!((dir, len, timeout), (req.dir, req.len, req.timeout))
            }
            e => panic!("{e}"),
        }
        match kernel_error(&xfer, Errno::ERANGE, path, &card()) {
            Error::CardBounds {
                card_addr,
                len,
                card_memory,
            } => assert_eq!(
                (card_addr, len, card_memory),
                (req.card_addr, req.len, 2 << 30)
            ),
            e => panic!("{e}"),
        }
        match kernel_error(&xfer, Errno::EOVERFLOW, path, &card()) {
            Error::BufferBounds { buffer_len, .. } => assert_eq!(buffer_len, 1 << 20),
            e => panic!("{e}"),
        }
        match kernel_error(&xfer, Errno::ECHRNG, path, &card()) {
            Error::ChannelRange { count, .. } => assert_eq!(count, 4),
            e => panic!("{e}"),
        }
        match kernel_error(&xfer, Errno::ENOENT, path, &card()) {
            Error::UnknownHandle { handle } => assert_eq!(handle, 7),
            e => panic!("{e}"),
        }
        let msg = kernel_error(&xfer, Errno::EIO, path, &card()).to_string();
        for part in ["EIO", "C2H", "channel 3", "0x123456780", "1048576 bytes"] {
            assert!(msg.contains(part), "{part}: {msg}");
        }
        let pin = Call::Pin { region: &region };
        let e = kernel_error(&pin, Errno::ENOMEM, path, &card());
        assert!(e.to_string().contains("RLIMIT_MEMLOCK"), "{e}");
        let e = kernel_error(&pin, Errno::EOPNOTSUPP, path, &card());
        assert!(
            e.to_string().contains("EOPNOTSUPP") && e.to_string().contains(PATH),
            "{e}"
        );
        let rw = Call::Rw {
            dir: Direction::H2C,
            channel: 1,
            card_addr: 0x40,
            len: 4096,
            timeout: Duration::from_secs(10),
        };
        match kernel_error(&rw, Errno::ETIMEDOUT, path, &card()) {
            Error::Timeout { dir, timeout, .. } => {
                assert_eq!((dir, timeout), (Direction::H2C, Duration::from_secs(10)))
            }
            e => panic!("{e}"),
        }
        let e = kernel_error(&rw, Errno::EPERM, path, &card());
        assert_eq!(e.rule(), "kernel");
        assert!(e.to_string().contains("write failed with EPERM"), "{e}");
    }

    #[test]
    fn status_errors_at_open() {
        let path = Path::new("/tmp/not-a-card");
        let e = status_error(path, Errno::ENOTTY, 1);
        assert_eq!(e.rule(), "card-present");
        assert!(e.to_string().contains("not an fpgagdr control node"), "{e}");
        let e = status_error(path, Errno::EPROTO, 1);
        assert_eq!(e.rule(), "abi-version");
        let msg = e.to_string();
        assert!(
            msg.contains("ABI 1") && msg.contains(&format!("ABI {FPGAGDR_ABI_VERSION}")),
            "{msg}"
        );
    }

    #[test]
    fn open_errors_say_what_to_do() {
        let path = Path::new("/dev/fpgagdr3");
        let e = open_error(path, &io::Error::from_raw_os_error(Errno::ENOENT as i32));
        assert_eq!(e.rule(), "card-present");
        let msg = e.to_string();
        assert!(
            msg.contains("/dev/fpgagdr3") && msg.contains("no such device node"),
            "{msg}"
        );
        for errno in [Errno::EACCES, Errno::EPERM] {
            let e = open_error(path, &io::Error::from_raw_os_error(errno as i32));
            let msg = e.to_string();
            assert!(
                msg.contains("`fpgagdr` group") && msg.contains("usermod"),
                "{msg}"
            );
            assert!(msg.contains(&format!("{errno:?}")), "{msg}");
        }
        let e = open_error(path, &io::Error::from_raw_os_error(Errno::ENXIO as i32));
        assert!(e.to_string().contains("no card is behind it"), "{e}");
        let e = open_error(path, &io::Error::from_raw_os_error(Errno::EISDIR as i32));
        assert!(e.to_string().contains("cannot open it"), "{e}");
    }
}
