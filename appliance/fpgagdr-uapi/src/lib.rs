//! # fpgagdr-uapi — the kernel module's ioctl ABI, mirrored in Rust
//!
//! The ABI is defined in exactly one place, the C header
//! `kmod/include/uapi/linux/fpgagdr.h`; this crate repeats it for Rust and
//! `tests/header.rs` compiles that header with the system C compiler and checks that
//! every structure size, every field offset, every constant and every ioctl number here
//! equals the C side. When the header changes, that test fails until this crate follows.
//!
//! ## What is here
//! - The argument structures, `#[repr(C)]` with the header's names and explicit padding:
//!   [`fpgagdr_status`] (168 bytes), [`fpgagdr_pin`] (48), [`fpgagdr_unpin`] (16),
//!   [`fpgagdr_transfer`] (64), [`fpgagdr_abort`] (16), [`fpgagdr_wait_frame`] (64),
//!   [`fpgagdr_frame_info`] (72). Each has a `new()` that sets
//!   `abi_version` to [`FPGAGDR_ABI_VERSION`] and every other field to zero (and
//!   `dmabuf_fd` to −1 for a pin), which is what the module requires of unused fields.
//! - The constants: ABI version, ioctl type byte, limits, capability bits, and the values
//!   of the header's enums (platform, memory kind, direction) as `u32` constants.
//! - The seven request numbers ([`FPGAGDR_IOC_GET_STATUS`] …), computed as Linux's
//!   `_IOWR(type, nr, struct)` does, and one thin wrapper per ioctl in [`ioctl`] ([`ioctl::get_status`],
//!   [`ioctl::pin`], [`ioctl::unpin`], [`ioctl::transfer`], [`ioctl::abort`],
//!   [`ioctl::wait_frame`], [`ioctl::frame_info`]) over `nix`'s ioctl macros.
//! - [`ERRNO_TABLE`]: the header's error table (errno, the ioctls that return it, and
//!   the rule), in the header's order; the test checks it against the header's text.
//!
//! Nothing here interprets the values; the `fpgagdr` library's kernel back-end does.
//!
//! ```
//! use fpgagdr_uapi::*;
//!
//! let req = fpgagdr_transfer { direction: FPGAGDR_DIR_C2H, length: 4096, timeout_ms: 100,
//!                              ..fpgagdr_transfer::new() };
//! assert_eq!(req.abi_version, FPGAGDR_ABI_VERSION);
//! assert_eq!(FPGAGDR_IOC_TRANSFER, 0xc040_e703);
//! assert_eq!(std::mem::size_of::<fpgagdr_transfer>(), 64);
//! ```
#![deny(missing_docs)]
// The structures keep the header's names so that one grep finds both sides.
#![allow(non_camel_case_types)]

pub mod ioctl;

use std::mem::size_of;

pub use nix::errno::Errno;

// ---------------------------------------------------------------------------------------
// Constants
// ---------------------------------------------------------------------------------------

/// ABI version every structure's `abi_version` must carry; the module bumps it on any
/// incompatible change of a structure or a rule.
pub const FPGAGDR_ABI_VERSION: u32 = 3;

/// The ioctl type byte (the "magic" of `_IOWR`).
pub const FPGAGDR_IOC_MAGIC: u32 = 0xE7;

/// Largest `timeout_ms` TRANSFER accepts, in milliseconds (60 s). Zero is refused too.
pub const FPGAGDR_TIMEOUT_MAX_MS: u32 = 60_000;

/// Largest `length` PIN accepts, in bytes (64 GiB).
pub const FPGAGDR_PIN_MAX_BYTES: u64 = 64 << 30;

/// Number of live pins one open file of the control node may hold.
pub const FPGAGDR_MAX_PINS_PER_FILE: u32 = 4096;

/// Frame-done events one open file's queue holds; a full queue drops its oldest event
/// and counts it (`overflows` of [`fpgagdr_wait_frame`], `queue_overflows` of
/// [`fpgagdr_frame_info`]).
pub const FPGAGDR_EVENT_QUEUE_LEN: u32 = 64;

/// Most frame slots a card may declare (docs/card-protocol.md).
pub const FPGAGDR_MAX_SLOTS: u32 = 1024;

/// Bytes of the frame header every frame starts with (docs/frames.md).
pub const FPGAGDR_FRAME_HEADER_LEN: u32 = 64;

/// ABORT flag: wake the calling file's WAIT_FRAME callers (they fail with `ECANCELED`)
/// instead of stopping an engine; `direction` and `channel` must be 0.
pub const FPGAGDR_ABORT_WAITS: u32 = 1 << 0;

/// WAIT_FRAME flag: do not wait; `EAGAIN` when no event is queued.
pub const FPGAGDR_WAIT_NOWAIT: u32 = 1 << 0;

/// Pin method (PIN's `method`): never returned; the value of a request.
pub const FPGAGDR_PIN_METHOD_NONE: u32 = 0;
/// Pin method: `pin_user_pages(FOLL_LONGTERM)` and the DMA API (host memory).
pub const FPGAGDR_PIN_METHOD_HOST: u32 = 1;
/// Pin method: `dma_buf_map_attachment()` as a static importer.
pub const FPGAGDR_PIN_METHOD_DMABUF: u32 = 2;
/// Pin method: `nvidia_p2p_get_pages()` with a free callback (MIG, vGPU, old drivers).
pub const FPGAGDR_PIN_METHOD_NV_P2P: u32 = 3;
/// Pin method: `nvidia_p2p` persistent pages, no free callback.
pub const FPGAGDR_PIN_METHOD_NV_P2P_PERSISTENT: u32 = 4;

/// Frame protocol state ([`fpgagdr_frame_info::state`]): the card speaks it.
pub const FPGAGDR_FRAMES_OK: u32 = 0;
/// Frame protocol state: no user register block (no XDMA user BAR, or under 4 KiB).
pub const FPGAGDR_FRAMES_NO_USER_BAR: u32 = 1;
/// Frame protocol state: the identification register is not `"FGDR"` (0x52444746).
pub const FPGAGDR_FRAMES_BAD_MAGIC: u32 = 2;
/// Frame protocol state: the protocol's major version is not 1.
pub const FPGAGDR_FRAMES_BAD_VERSION: u32 = 3;
/// Frame protocol state: slot count 0 or above [`FPGAGDR_MAX_SLOTS`].
pub const FPGAGDR_FRAMES_NO_SLOTS: u32 = 4;
/// Frame protocol state: slot size smaller than the 64-byte frame header.
pub const FPGAGDR_FRAMES_SLOT_TOO_SMALL: u32 = 5;
/// Frame protocol state: slot base or slot size not a multiple of 4096.
pub const FPGAGDR_FRAMES_SLOT_MISALIGNED: u32 = 6;
/// Frame protocol state: slot base + count × size wraps or passes `card_size`.
pub const FPGAGDR_FRAMES_SLOTS_PAST_CARD: u32 = 7;
/// Frame protocol state: the frame-done user interrupt number is not 0..15.
pub const FPGAGDR_FRAMES_BAD_IRQ: u32 = 8;

/// Platform value: a generic Linux host; only host-memory back-ends.
pub const FPGAGDR_PLATFORM_NONE: u32 = 0;
/// Platform value: NVIDIA Jetson Orin (Tegra, memory shared by CPU and GPU).
pub const FPGAGDR_PLATFORM_ORIN: u32 = 1;
/// Platform value: an x86 host with a discrete GPU (the `nvidia_p2p` back-end is built).
pub const FPGAGDR_PLATFORM_X86_DGPU: u32 = 2;
/// Platform value: NVIDIA Jetson Thor (Tegra264, memory shared by CPU and GPU; no
/// `nvidia_p2p`, host pins only). Values are only ever added: an unknown one is a
/// generic host.
pub const FPGAGDR_PLATFORM_THOR: u32 = 3;

/// Memory kind: user memory (malloc, mmap, `cudaHostAlloc` on Orin), pinned long-term
/// with the kernel's user-page pinning and mapped with the DMA API.
pub const FPGAGDR_MEM_HOST: u32 = 0;
/// Memory kind: CUDA device memory (`cudaMalloc`), pinned through `nvidia_p2p`.
pub const FPGAGDR_MEM_NV_P2P: u32 = 1;
/// Memory kind: a dma-buf (e.g. exported by CUDA); `dmabuf_fd` names it and `addr` is
/// the byte offset inside it.
pub const FPGAGDR_MEM_DMABUF: u32 = 2;

/// Direction value: card to host, into the pinned buffer.
pub const FPGAGDR_DIR_C2H: u32 = 0;
/// Direction value: host to card, from the pinned buffer.
pub const FPGAGDR_DIR_H2C: u32 = 1;

/// [`fpgagdr_status::link_path_dev`] when the limiting device's PCI domain does not fit
/// in 16 bits (Linux numbers synthetic domains, e.g. Intel VMD's, from 0x10000) or is
/// 0xffff.
pub const FPGAGDR_LINK_PATH_DEV_UNKNOWN: u32 = 0xffff_ffff;

/// Capability bit of [`fpgagdr_status::caps`]: completion is signalled by interrupt.
pub const FPGAGDR_CAP_IRQ: u32 = 1 << 0;
/// Capability bit: completion is found by polling.
pub const FPGAGDR_CAP_POLL: u32 = 1 << 1;
/// Capability bit: `nvidia_p2p` offers persistent pins (no free callback needed).
pub const FPGAGDR_CAP_NV_PERSISTENT: u32 = 1 << 2;
/// Capability bit: the engines are the test-only software engine (no hardware).
pub const FPGAGDR_CAP_TEST_ENGINE: u32 = 1 << 3;
/// Capability bit: the engines are AXI-Stream engines (card addresses mean nothing).
pub const FPGAGDR_CAP_STREAM: u32 = 1 << 4;

// ---------------------------------------------------------------------------------------
// Structures
// ---------------------------------------------------------------------------------------

/// Argument of [`FPGAGDR_IOC_GET_STATUS`]: what the module and card are, their limits,
/// and counters. 168 bytes. Marks: **\[in\]** user space fills it, **\[out\]** the module
/// fills it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct fpgagdr_status {
    /// \[in/out\] Must be [`FPGAGDR_ABI_VERSION`]; on `EPROTO` the module writes its own
    /// version here (and nothing else).
    pub abi_version: u32,
    /// \[in\] Must be 0.
    pub flags: u32,
    /// \[out\] One of the `FPGAGDR_PLATFORM_*` values.
    pub platform: u32,
    /// \[out\] `FPGAGDR_CAP_*` bits.
    pub caps: u32,
    /// \[out\] Bit `1 << kind` is set for each `FPGAGDR_MEM_*` kind whose back-end is built
    /// into the module.
    pub mem_kinds: u32,
    /// \[out\] The `FPGAGDR_MEM_*` kind the platform's GPU buffers use.
    pub default_kind: u32,
    /// \[out\] GPU memory page size in bytes: 64 KiB on an x86 discrete GPU, the kernel's
    /// page size on Orin and without a GPU.
    pub gpu_page_size: u32,
    /// \[out\] A pin's `addr` and `length` must be multiples of this many bytes.
    pub pin_align: u32,
    /// \[out\] A transfer's `offset` and `card_addr` must be multiples of this many bytes.
    pub xfer_align: u32,
    /// \[out\] A transfer's `length` must be a multiple of this many bytes.
    pub len_granularity: u32,
    /// \[out\] Number of H2C channels (engines), 0 to 4.
    pub h2c_channels: u32,
    /// \[out\] Number of C2H channels (engines), 0 to 4.
    pub c2h_channels: u32,
    /// \[out\] Most bytes one descriptor moves; longer contiguous runs are split.
    pub desc_max_bytes: u32,
    /// \[out\] The device whose link is `link_path_gen` × `link_path_width`, in the
    /// card's PCI domain (the card itself or a bridge above it): `(domain << 16) | (bus
    /// << 8) | devfn`; [`FPGAGDR_LINK_PATH_DEV_UNKNOWN`] when the domain does not fit;
    /// meaningless when `link_path_gen` is 0. Was `pad0` (zero) before this field.
    pub link_path_dev: u32,
    /// \[out\] Bytes of card address space TRANSFER checks against; 0 means unknown (then
    /// only wrap-around is checked).
    pub card_size: u64,
    /// \[out\] Pins live on this card, all files together.
    pub pins: u64,
    /// \[out\] Pins made since the module was loaded.
    pub pins_total: u64,
    /// \[out\] Transfers that replayed the descriptor chain already built for the same
    /// handle, direction, offset, card address and length.
    pub cache_hits: u64,
    /// \[out\] Transfers that had to build (or rebuild) their descriptor chain.
    pub cache_misses: u64,
    /// \[out\] Transfers completed successfully, by ioctl and by read/write.
    pub transfers: u64,
    /// \[out\] Bytes moved by those transfers.
    pub transfer_bytes: u64,
    /// \[out\] Transfers that timed out.
    pub timeouts: u64,
    /// \[out\] Engine stops: timeouts, signals, ABORT, UNPIN and the NVIDIA free callback.
    pub aborts: u64,
    /// \[out\] Transfers for which the engine reported an error.
    pub errors: u64,
    /// \[out\] Negotiated PCIe generation (1 = 2.5 GT/s … 6 = 64 GT/s); 0 when the card
    /// is not on a PCIe link the module can read.
    pub link_gen: u32,
    /// \[out\] Negotiated link width in lanes (x1 = 1); 0 when unknown.
    pub link_width: u32,
    /// \[out\] Max_Payload_Size in bytes (PCIe Device Control); 0 when unknown.
    pub link_max_payload: u32,
    /// \[out\] Max_Read_Request_Size in bytes (PCIe Device Control); 0 when unknown.
    pub link_max_read_req: u32,
    /// \[out\] Highest generation the card supports (Link Capabilities' Max Link
    /// Speed, numbered as `link_gen`); 0 when unknown (no PCIe capability, or a module
    /// older than this field, which left it zero as reserved).
    pub link_cap_gen: u32,
    /// \[out\] Widest link the card supports in lanes (Link Capabilities' Maximum
    /// Link Width); 0 when unknown.
    pub link_cap_width: u32,
    /// \[out\] Generation of the narrowest link between the card and the root complex
    /// (numbered as `link_gen`), as the kernel's `pcie_bandwidth_available()` finds it:
    /// Link Status of the card and of every bridge above it, the least bandwidth wins (a
    /// tie goes to the device further up). Never carries more than the card's own link;
    /// less when a switch or root port above trained narrower or slower. 0 when no link
    /// on the path is known (or a module older than this field). Was `reserved[0]`.
    pub link_path_gen: u32,
    /// \[out\] That link's width in lanes; 0 when unknown.
    pub link_path_width: u32,
}

/// Argument of [`FPGAGDR_IOC_PIN`]: pin and map a buffer once, get a handle. 48 bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct fpgagdr_pin {
    /// \[in/out\] Must be [`FPGAGDR_ABI_VERSION`]; the module's version on `EPROTO`.
    pub abi_version: u32,
    /// \[in\] One of the `FPGAGDR_MEM_*` values.
    pub kind: u32,
    /// \[in\] The buffer's user virtual address (HOST, NV_P2P), or the byte offset inside
    /// the dma-buf (DMABUF); a multiple of `pin_align`.
    pub addr: u64,
    /// \[in\] Length in bytes; nonzero, a multiple of `pin_align`, at most
    /// [`FPGAGDR_PIN_MAX_BYTES`].
    pub length: u64,
    /// \[in\] The dma-buf file descriptor for DMABUF; −1 for every other kind.
    pub dmabuf_fd: i32,
    /// \[in\] Must be 0.
    pub flags: u32,
    /// \[out\] Nonzero handle, meaningful only on the open file that pinned it. Must be 0
    /// on input.
    pub handle: u32,
    /// \[out\] Number of DMA-contiguous segments the buffer maps to. Must be 0 on input.
    pub segments: u32,
    /// \[out\] Page size of the pinned memory in bytes (4 KiB host pages, 64 KiB GPU
    /// pages); the card never gets bytes outside `[addr, addr + length)`, even ones that
    /// share a page with the buffer. Must be 0 on input.
    pub page_size: u32,
    /// \[out\] How the module pinned it: one of the `FPGAGDR_PIN_METHOD_*` values. Must be
    /// 0 on input.
    pub method: u32,
}

/// Argument of [`FPGAGDR_IOC_UNPIN`]: release a pin (cancelling a transfer in flight on
/// it). 16 bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct fpgagdr_unpin {
    /// \[in/out\] Must be [`FPGAGDR_ABI_VERSION`]; the module's version on `EPROTO`.
    pub abi_version: u32,
    /// \[in\] A handle PIN returned on this open file.
    pub handle: u32,
    /// \[in\] Must be 0.
    pub flags: u32,
    /// \[in\] Must be 0 (padding).
    pub pad0: u32,
}

/// Argument of [`FPGAGDR_IOC_TRANSFER`]: one DMA between a pinned buffer and the card.
/// 64 bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct fpgagdr_transfer {
    /// \[in/out\] Must be [`FPGAGDR_ABI_VERSION`]; the module's version on `EPROTO`.
    pub abi_version: u32,
    /// \[in\] [`FPGAGDR_DIR_C2H`] or [`FPGAGDR_DIR_H2C`].
    pub direction: u32,
    /// \[in\] Engine index within `direction`.
    pub channel: u32,
    /// \[in\] A handle PIN returned on this open file.
    pub handle: u32,
    /// \[in\] Byte offset into the pinned buffer; a multiple of `xfer_align`.
    pub offset: u64,
    /// \[in\] Card (AXI) address in bytes; a multiple of `xfer_align`.
    pub card_addr: u64,
    /// \[in\] Bytes to move; nonzero, a multiple of `len_granularity`.
    pub length: u64,
    /// \[in\] Bound on the wait, in milliseconds: 1 to [`FPGAGDR_TIMEOUT_MAX_MS`].
    pub timeout_ms: u32,
    /// \[in\] Must be 0.
    pub flags: u32,
    /// \[out\] Bytes moved: `length` on success, 0 on error. Must be 0 on input.
    pub bytes: u64,
    /// \[out\] Nanoseconds from engine start to completion. Must be 0 on input.
    pub duration_ns: u64,
}

/// Argument of [`FPGAGDR_IOC_ABORT`]: stop the calling file's transfer on one engine
/// (that transfer fails with `ECANCELED`; another file's transfer is not touched:
/// `EBUSY`); on an idle engine it stops the engine and clears its status, which
/// recovers an engine left in an error state. With [`FPGAGDR_ABORT_WAITS`] in `flags`
/// no engine is touched: the file's WAIT_FRAME callers return `ECANCELED`. 16 bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct fpgagdr_abort {
    /// \[in/out\] Must be [`FPGAGDR_ABI_VERSION`]; the module's version on `EPROTO`.
    pub abi_version: u32,
    /// \[in\] [`FPGAGDR_DIR_C2H`] or [`FPGAGDR_DIR_H2C`].
    pub direction: u32,
    /// \[in\] Engine index within `direction`.
    pub channel: u32,
    /// \[in\] 0 or [`FPGAGDR_ABORT_WAITS`] (then `direction` and `channel` must be 0).
    pub flags: u32,
}

/// Argument of [`FPGAGDR_IOC_WAIT_FRAME`]: take the oldest frame-done event queued for
/// this open file, waiting at most `timeout_ms`. 64 bytes.
///
/// A file subscribes with its first WAIT_FRAME (or `poll()`); from then on each
/// frame-done interrupt queues one event for it, at most [`FPGAGDR_EVENT_QUEUE_LEN`]
/// (a full queue drops its oldest event and counts it in `overflows`). While any file is subscribed
/// the module asks the card to capture (docs/card-protocol.md, `CONTROL.CAPTURE`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct fpgagdr_wait_frame {
    /// \[in/out\] Must be [`FPGAGDR_ABI_VERSION`]; the module's version on `EPROTO`.
    pub abi_version: u32,
    /// \[in\] Bound on the wait, in milliseconds: 1 to [`FPGAGDR_TIMEOUT_MAX_MS`].
    pub timeout_ms: u32,
    /// \[in\] 0 or [`FPGAGDR_WAIT_NOWAIT`].
    pub flags: u32,
    /// \[out\] The slot the frame is in: `sequence mod slot_count`.
    pub slot: u32,
    /// \[out\] The card's frame sequence number (0 = the first frame since the card's
    /// reset, +1 per frame the card completed).
    pub sequence: u64,
    /// \[out\] Bytes of the frame in its slot, 64-byte header included.
    pub length: u32,
    /// \[out\] Zero (padding).
    pub pad0: u32,
    /// \[out\] `ktime_get_ns()` (CLOCK_MONOTONIC, ns) in the interrupt handler that took
    /// the event: the frame's arrival time.
    pub arrival_ns: u64,
    /// \[out\] Frames the card completed between the previous event given to this file
    /// and this one (the sequence gap; 0 for the first event after subscribing),
    /// `overflows` included.
    pub missed: u64,
    /// \[out\] Of `missed`, the events this file's full queue dropped (it drops its
    /// oldest).
    pub overflows: u64,
    /// \[out\] Events still queued for this file after this one.
    pub queued: u64,
}

/// Argument of [`FPGAGDR_IOC_FRAME_INFO`]: whether the card speaks the frame protocol,
/// its slot geometry, and the module's frame-event counters. 72 bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct fpgagdr_frame_info {
    /// \[in/out\] Must be [`FPGAGDR_ABI_VERSION`]; the module's version on `EPROTO`.
    pub abi_version: u32,
    /// \[in\] Must be 0.
    pub flags: u32,
    /// \[out\] One of the `FPGAGDR_FRAMES_*` values: [`FPGAGDR_FRAMES_OK`], or the rule the
    /// card's user register block broke when the card was bound.
    pub state: u32,
    /// \[out\] The card's protocol version register: major in bits 31:16, minor in 15:0.
    pub proto_version: u32,
    /// \[out\] Frame slots N on the card; the frame of sequence s is in slot s mod N.
    pub slot_count: u32,
    /// \[out\] Bytes per slot.
    pub slot_size: u32,
    /// \[out\] The XDMA user interrupt (bit of `usr_irq_req`, 0..15) of frame-done.
    pub user_irq: u32,
    /// \[out\] Zero (padding).
    pub pad0: u32,
    /// \[out\] Card (AXI) address of slot 0; slot i starts at `slot_base + i * slot_size`.
    pub slot_base: u64,
    /// \[out\] Frame-done events the module took from the card (all files).
    pub events: u64,
    /// \[out\] Frames the card completed that no interrupt reported (sequence gaps seen
    /// by the interrupt handler).
    pub missed: u64,
    /// \[out\] Events dropped because an open file's queue was full (all files).
    pub queue_overflows: u64,
    /// \[out\] Events refused for breaking the frame protocol.
    pub protocol_errors: u64,
}

impl fpgagdr_status {
    /// A request: `abi_version` = [`FPGAGDR_ABI_VERSION`], everything else zero.
    pub const fn new() -> Self {
        fpgagdr_status {
            abi_version: FPGAGDR_ABI_VERSION,
            flags: 0,
            platform: 0,
            caps: 0,
            mem_kinds: 0,
            default_kind: 0,
            gpu_page_size: 0,
            pin_align: 0,
            xfer_align: 0,
            len_granularity: 0,
            h2c_channels: 0,
            c2h_channels: 0,
            desc_max_bytes: 0,
            link_path_dev: 0,
            card_size: 0,
            pins: 0,
            pins_total: 0,
            cache_hits: 0,
            cache_misses: 0,
            transfers: 0,
            transfer_bytes: 0,
            timeouts: 0,
            aborts: 0,
            errors: 0,
            link_gen: 0,
            link_width: 0,
            link_max_payload: 0,
            link_max_read_req: 0,
            link_cap_gen: 0,
            link_cap_width: 0,
            link_path_gen: 0,
            link_path_width: 0,
        }
    }
}

impl fpgagdr_pin {
    /// A request: `abi_version` = [`FPGAGDR_ABI_VERSION`], `dmabuf_fd` = −1, everything
    /// else zero (kind [`FPGAGDR_MEM_HOST`]).
    pub const fn new() -> Self {
        fpgagdr_pin {
            abi_version: FPGAGDR_ABI_VERSION,
            kind: FPGAGDR_MEM_HOST,
            addr: 0,
            length: 0,
            dmabuf_fd: -1,
            flags: 0,
            handle: 0,
            segments: 0,
            page_size: 0,
            method: FPGAGDR_PIN_METHOD_NONE,
        }
    }
}

impl fpgagdr_unpin {
    /// A request: `abi_version` = [`FPGAGDR_ABI_VERSION`], everything else zero.
    pub const fn new() -> Self {
        fpgagdr_unpin {
            abi_version: FPGAGDR_ABI_VERSION,
            handle: 0,
            flags: 0,
            pad0: 0,
        }
    }
}

impl fpgagdr_transfer {
    /// A request: `abi_version` = [`FPGAGDR_ABI_VERSION`], everything else zero
    /// (direction C2H; a zero `timeout_ms` and `length` must still be filled in).
    pub const fn new() -> Self {
        fpgagdr_transfer {
            abi_version: FPGAGDR_ABI_VERSION,
            direction: FPGAGDR_DIR_C2H,
            channel: 0,
            handle: 0,
            offset: 0,
            card_addr: 0,
            length: 0,
            timeout_ms: 0,
            flags: 0,
            bytes: 0,
            duration_ns: 0,
        }
    }
}

impl fpgagdr_abort {
    /// A request: `abi_version` = [`FPGAGDR_ABI_VERSION`], everything else zero.
    pub const fn new() -> Self {
        fpgagdr_abort {
            abi_version: FPGAGDR_ABI_VERSION,
            direction: FPGAGDR_DIR_C2H,
            channel: 0,
            flags: 0,
        }
    }
}

impl fpgagdr_wait_frame {
    /// A request: `abi_version` = [`FPGAGDR_ABI_VERSION`], everything else zero (a zero
    /// `timeout_ms` must still be filled in).
    pub const fn new() -> Self {
        fpgagdr_wait_frame {
            abi_version: FPGAGDR_ABI_VERSION,
            timeout_ms: 0,
            flags: 0,
            slot: 0,
            sequence: 0,
            length: 0,
            pad0: 0,
            arrival_ns: 0,
            missed: 0,
            overflows: 0,
            queued: 0,
        }
    }
}

impl fpgagdr_frame_info {
    /// A request: `abi_version` = [`FPGAGDR_ABI_VERSION`], everything else zero.
    pub const fn new() -> Self {
        fpgagdr_frame_info {
            abi_version: FPGAGDR_ABI_VERSION,
            flags: 0,
            state: 0,
            proto_version: 0,
            slot_count: 0,
            slot_size: 0,
            user_irq: 0,
            pad0: 0,
            slot_base: 0,
            events: 0,
            missed: 0,
            queue_overflows: 0,
            protocol_errors: 0,
        }
    }
}

/// `Default` is `new()`: a request with the ABI version set, never an all-zero struct
/// (which the module would refuse with `EPROTO`).
macro_rules! default_is_new {
    ($($ty:ident),*) => {$(
        impl Default for $ty {
            fn default() -> Self {
                Self::new()
            }
        }
    )*};
}
default_is_new!(
    fpgagdr_status,
    fpgagdr_pin,
    fpgagdr_unpin,
    fpgagdr_transfer,
    fpgagdr_abort,
    fpgagdr_wait_frame,
    fpgagdr_frame_info
);

// The header promises these sizes (and a multiple of 8, so 32- and 64-bit user space
// agree); a field added without its padding stops the build here.
const _: () = assert!(size_of::<fpgagdr_status>() == 168);
const _: () = assert!(size_of::<fpgagdr_pin>() == 48);
const _: () = assert!(size_of::<fpgagdr_unpin>() == 16);
const _: () = assert!(size_of::<fpgagdr_transfer>() == 64);
const _: () = assert!(size_of::<fpgagdr_abort>() == 16);
const _: () = assert!(size_of::<fpgagdr_wait_frame>() == 64);
const _: () = assert!(size_of::<fpgagdr_frame_info>() == 72);

// ---------------------------------------------------------------------------------------
// ioctl numbers
// ---------------------------------------------------------------------------------------

/// Linux's generic ioctl encoding (x86, arm64, riscv): `dir << 30 | size << 16 |
/// type << 8 | nr`, with `dir` = read | write = 3 for `_IOWR`.
const fn iowr(nr: u32, size: usize) -> u32 {
    const IOC_WRITE: u32 = 1;
    const IOC_READ: u32 = 2;
    // _IOC_SIZEBITS is 14.
    assert!(
        size < 1 << 14,
        "ioctl argument too large for the size field"
    );
    ((IOC_READ | IOC_WRITE) << 30) | ((size as u32) << 16) | (FPGAGDR_IOC_MAGIC << 8) | nr
}

/// `_IOWR(0xE7, 0x00, struct fpgagdr_status)` = `0xc0a8e700`.
pub const FPGAGDR_IOC_GET_STATUS: u32 = iowr(0x00, size_of::<fpgagdr_status>());
/// `_IOWR(0xE7, 0x01, struct fpgagdr_pin)` = `0xc030e701`.
pub const FPGAGDR_IOC_PIN: u32 = iowr(0x01, size_of::<fpgagdr_pin>());
/// `_IOWR(0xE7, 0x02, struct fpgagdr_unpin)` = `0xc010e702`.
pub const FPGAGDR_IOC_UNPIN: u32 = iowr(0x02, size_of::<fpgagdr_unpin>());
/// `_IOWR(0xE7, 0x03, struct fpgagdr_transfer)` = `0xc040e703`.
pub const FPGAGDR_IOC_TRANSFER: u32 = iowr(0x03, size_of::<fpgagdr_transfer>());
/// `_IOWR(0xE7, 0x04, struct fpgagdr_abort)` = `0xc010e704`.
pub const FPGAGDR_IOC_ABORT: u32 = iowr(0x04, size_of::<fpgagdr_abort>());
/// `_IOWR(0xE7, 0x05, struct fpgagdr_wait_frame)` = `0xc040e705`.
pub const FPGAGDR_IOC_WAIT_FRAME: u32 = iowr(0x05, size_of::<fpgagdr_wait_frame>());
/// `_IOWR(0xE7, 0x06, struct fpgagdr_frame_info)` = `0xc048e706`.
pub const FPGAGDR_IOC_FRAME_INFO: u32 = iowr(0x06, size_of::<fpgagdr_frame_info>());

// ---------------------------------------------------------------------------------------
// The error table
// ---------------------------------------------------------------------------------------

/// One row of the header's error table: an errno, the ioctls that return it, and the
/// rule it reports. When several rules are broken the first row in [`ERRNO_TABLE`]
/// order wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrnoRule {
    /// The error number.
    pub errno: Errno,
    /// Its C name, as the header spells it (`"ENOTTY"`).
    pub name: &'static str,
    /// The header's "ioctl" column: `"any"` or ioctl names without the prefix
    /// (`"PIN"`, `"TRANSFER"`, …), one entry per line of the table.
    pub ioctls: &'static [&'static str],
    /// The rule, in short.
    pub rule: &'static str,
}

/// The header's error table, in its order (earlier rows win).
pub const ERRNO_TABLE: &[ErrnoRule] = &[
    ErrnoRule {
        errno: Errno::ENOTTY,
        name: "ENOTTY",
        ioctls: &["any"],
        rule: "unknown ioctl number",
    },
    ErrnoRule {
        errno: Errno::EFAULT,
        name: "EFAULT",
        ioctls: &["any", "PIN"],
        rule: "the argument cannot be copied; PIN of HOST memory: the range is not mapped \
               user memory",
    },
    ErrnoRule {
        errno: Errno::EPROTO,
        name: "EPROTO",
        ioctls: &["any"],
        rule: "abi_version differs from FPGAGDR_ABI_VERSION; the module's version is \
               written back to abi_version",
    },
    ErrnoRule {
        errno: Errno::EINVAL,
        name: "EINVAL",
        ioctls: &["any"],
        rule: "unknown flag bits; nonzero pad or reserved field; unknown kind or \
               direction; ABORT with FPGAGDR_ABORT_WAITS and a nonzero direction or channel; \
               zero length; misaligned address, length, offset or card address; timeout_ms 0 \
               or over FPGAGDR_TIMEOUT_MAX_MS",
    },
    ErrnoRule {
        errno: Errno::EBADF,
        name: "EBADF",
        ioctls: &["PIN"],
        rule: "DMABUF: dmabuf_fd is not an open dma-buf",
    },
    ErrnoRule {
        errno: Errno::EOPNOTSUPP,
        name: "EOPNOTSUPP",
        ioctls: &["PIN"],
        rule: "the memory kind's back-end is not built in, or it refuses the memory \
               (NV_P2P: not CUDA device memory, e.g. host memory; DMABUF: the exporter \
               refuses the card)",
    },
    ErrnoRule {
        errno: Errno::E2BIG,
        name: "E2BIG",
        ioctls: &["PIN"],
        rule: "length over FPGAGDR_PIN_MAX_BYTES",
    },
    ErrnoRule {
        errno: Errno::EOVERFLOW,
        name: "EOVERFLOW",
        ioctls: &["PIN", "TRANSFER"],
        rule: "PIN: addr + length wraps; TRANSFER: offset + length wraps or passes the end \
               of the pinned buffer",
    },
    ErrnoRule {
        errno: Errno::ERANGE,
        name: "ERANGE",
        ioctls: &["TRANSFER"],
        rule: "card_addr + length wraps or passes card_size",
    },
    ErrnoRule {
        errno: Errno::ECHRNG,
        name: "ECHRNG",
        ioctls: &["TRANSFER,ABORT"],
        rule: "channel at or above the direction's channel count",
    },
    ErrnoRule {
        errno: Errno::ENOENT,
        name: "ENOENT",
        ioctls: &["UNPIN,TRANSFER"],
        rule: "handle never issued by this file (TRANSFER: or already unpinned)",
    },
    ErrnoRule {
        errno: Errno::EALREADY,
        name: "EALREADY",
        ioctls: &["UNPIN"],
        rule: "handle already unpinned by this file",
    },
    ErrnoRule {
        errno: Errno::ENOSPC,
        name: "ENOSPC",
        ioctls: &["PIN"],
        rule: "FPGAGDR_MAX_PINS_PER_FILE pins are live on this file",
    },
    ErrnoRule {
        errno: Errno::ENOMEM,
        name: "ENOMEM",
        ioctls: &["PIN"],
        rule: "out of memory, or RLIMIT_MEMLOCK exceeded",
    },
    ErrnoRule {
        errno: Errno::EBUSY,
        name: "EBUSY",
        ioctls: &["TRANSFER", "ABORT"],
        rule: "TRANSFER: another transfer on the same handle is in flight; ABORT: a \
               transfer of another open file holds the engine (it is not touched)",
    },
    ErrnoRule {
        errno: Errno::ESTALE,
        name: "ESTALE",
        ioctls: &["TRANSFER", "PIN"],
        rule: "TRANSFER: the GPU memory behind the handle was freed (NVIDIA free callback), \
               unpin it; PIN: NV_P2P memory freed while pinning",
    },
    ErrnoRule {
        errno: Errno::ETIMEDOUT,
        name: "ETIMEDOUT",
        ioctls: &["TRANSFER", "WAIT_FRAME"],
        rule: "TRANSFER: not complete within timeout_ms, the engine was stopped and is \
               ready; WAIT_FRAME: no frame-done event within timeout_ms",
    },
    ErrnoRule {
        errno: Errno::EINTR,
        name: "EINTR",
        ioctls: &["TRANSFER", "PIN", "WAIT_FRAME"],
        rule: "TRANSFER: a signal arrived while waiting; the engine was stopped; not \
               restarted; PIN: a fatal signal arrived while pinning; WAIT_FRAME: a signal \
               arrived while waiting",
    },
    ErrnoRule {
        errno: Errno::ECANCELED,
        name: "ECANCELED",
        ioctls: &["TRANSFER", "WAIT_FRAME"],
        rule: "TRANSFER: stopped, or given up while waiting for its engine, by ABORT from \
               the same open file, by UNPIN of its handle or by the NVIDIA free callback; \
               WAIT_FRAME: woken by ABORT with FPGAGDR_ABORT_WAITS from the same open file",
    },
    ErrnoRule {
        errno: Errno::EIO,
        name: "EIO",
        ioctls: &["TRANSFER,ABORT", "PIN", "WAIT_FRAME"],
        rule: "TRANSFER, ABORT: the engine reported an error (descriptor, read or write \
               error, magic mismatch), was not seen stopped within the stop budget (the \
               card then stops mastering the bus until it is), or a PCIe error (AER) ended \
               the run; PIN: the back-end or the DMA API failed to pin or map the memory; \
               WAIT_FRAME: no event queued and the card reads all ones (gone from the bus, \
               or its link down); capture resumes when it answers again",
    },
    ErrnoRule {
        errno: Errno::ENXIO,
        name: "ENXIO",
        ioctls: &["WAIT_FRAME"],
        rule: "the card does not speak the frame protocol (FRAME_INFO's state names the \
               rule: no user BAR, magic, version, slot geometry, user interrupt)",
    },
    ErrnoRule {
        errno: Errno::EAGAIN,
        name: "EAGAIN",
        ioctls: &["WAIT_FRAME"],
        rule: "FPGAGDR_WAIT_NOWAIT and no event is queued",
    },
    ErrnoRule {
        errno: Errno::EBADMSG,
        name: "EBADMSG",
        ioctls: &["WAIT_FRAME"],
        rule: "the card broke the frame protocol: sequence not increasing, slot not \
               sequence mod slot_count, length under the 64-byte header or over slot_size; \
               the event is returned as read and counted in protocol_errors",
    },
    ErrnoRule {
        errno: Errno::ENODEV,
        name: "ENODEV",
        ioctls: &["any"],
        rule: "the card was removed (or the system is shutting down); UNPIN still \
               answers 0",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers computed here agree with nix's own `_IOWR`, which knows every
    /// architecture's encoding.
    #[test]
    fn request_numbers_match_nix() {
        use nix::request_code_readwrite as iowr_nix;
        let magic = FPGAGDR_IOC_MAGIC as u8;
        let cases = [
            (
                FPGAGDR_IOC_GET_STATUS,
                iowr_nix!(magic, 0, size_of::<fpgagdr_status>()),
            ),
            (
                FPGAGDR_IOC_PIN,
                iowr_nix!(magic, 1, size_of::<fpgagdr_pin>()),
            ),
            (
                FPGAGDR_IOC_UNPIN,
                iowr_nix!(magic, 2, size_of::<fpgagdr_unpin>()),
            ),
            (
                FPGAGDR_IOC_TRANSFER,
                iowr_nix!(magic, 3, size_of::<fpgagdr_transfer>()),
            ),
            (
                FPGAGDR_IOC_ABORT,
                iowr_nix!(magic, 4, size_of::<fpgagdr_abort>()),
            ),
            (
                FPGAGDR_IOC_WAIT_FRAME,
                iowr_nix!(magic, 5, size_of::<fpgagdr_wait_frame>()),
            ),
            (
                FPGAGDR_IOC_FRAME_INFO,
                iowr_nix!(magic, 6, size_of::<fpgagdr_frame_info>()),
            ),
        ];
        for (ours, theirs) in cases {
            // c_ulong on glibc, c_int on musl: compare in nix's type.
            assert_eq!(ours as nix::sys::ioctl::ioctl_num_type, theirs, "{ours:#x}");
        }
        // The numbers docs/kernel-module.md quotes.
        assert_eq!(FPGAGDR_IOC_GET_STATUS, 0xc0a8_e700);
        assert_eq!(FPGAGDR_IOC_PIN, 0xc030_e701);
        assert_eq!(FPGAGDR_IOC_UNPIN, 0xc010_e702);
        assert_eq!(FPGAGDR_IOC_TRANSFER, 0xc040_e703);
        assert_eq!(FPGAGDR_IOC_ABORT, 0xc010_e704);
        assert_eq!(FPGAGDR_IOC_WAIT_FRAME, 0xc040_e705);
        assert_eq!(FPGAGDR_IOC_FRAME_INFO, 0xc048_e706);
    }

    #[test]
    fn new_requests_carry_the_version_and_zeroes() {
        assert_eq!(fpgagdr_status::new().abi_version, FPGAGDR_ABI_VERSION);
        let st = fpgagdr_status::new();
        assert_eq!(
            (st.link_path_gen, st.link_path_width, st.link_path_dev),
            (0, 0, 0)
        );
        assert_eq!(fpgagdr_wait_frame::new().abi_version, FPGAGDR_ABI_VERSION);
        assert_eq!(fpgagdr_frame_info::new().abi_version, FPGAGDR_ABI_VERSION);
        let p = fpgagdr_pin::new();
        assert_eq!(
            (p.abi_version, p.dmabuf_fd, p.handle),
            (FPGAGDR_ABI_VERSION, -1, 0)
        );
        let t = fpgagdr_transfer::new();
        assert_eq!(
            (t.abi_version, t.bytes, t.duration_ns),
            (FPGAGDR_ABI_VERSION, 0, 0)
        );
        assert_eq!(fpgagdr_unpin::new().abi_version, FPGAGDR_ABI_VERSION);
        assert_eq!(fpgagdr_abort::new().abi_version, FPGAGDR_ABI_VERSION);
    }

    #[test]
    fn errno_table_names_match_the_numbers() {
        for row in ERRNO_TABLE {
            assert_eq!(format!("{:?}", row.errno), row.name);
        }
        let mut names: Vec<_> = ERRNO_TABLE.iter().map(|r| r.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ERRNO_TABLE.len(), "one row per errno");
    }
}
