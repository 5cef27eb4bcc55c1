//! The C types and constants of `fpgagdr.h`: what cbindgen turns into the header.
//!
//! Owns: the `#[repr(C)]` structs (each begins with `struct_size_bytes`, which the
//! caller sets to `sizeof` the struct it was compiled with), the opaque card type, the
//! one-member buffer handle and the `#define`d constants. No enums and no bit-fields:
//! kinds and modes are `uint32_t` with constants, capabilities a `uint32_t` of
//! `FPGAGDR_CAP_*` bits. Must not: hold logic (`api/`).
#![allow(non_camel_case_types)]

use std::ffi::c_char;

/// Library version, major: a change that breaks a caller (never planned: the API grows
/// by new functions).
pub const FPGAGDR_LIB_VERSION_MAJOR: u32 = 1;
/// Library version, minor: new functions or flags.
pub const FPGAGDR_LIB_VERSION_MINOR: u32 = 0;
/// Library version, patch: fixes.
pub const FPGAGDR_LIB_VERSION_PATCH: u32 = 0;
/// The kernel module ABI version this library speaks (`FPGAGDR_ABI_VERSION` of
/// `<linux/fpgagdr.h>`); opening a node of a module with another version fails with
/// `-EPROTO` (rule `abi-version`). The header's `#define` is written by `build.rs` from
/// that header (cbindgen cannot follow the path); `tests/header.rs` checks both agree.
pub const FPGAGDR_MODULE_ABI_VERSION: u32 = fpgagdr_uapi::FPGAGDR_ABI_VERSION;

/// `struct fpgagdr_memory.kind`: ordinary host memory (e.g. `posix_memalign`).
pub const FPGAGDR_MEMORY_HOST: u32 = 0;
/// `struct fpgagdr_memory.kind`: CUDA device memory (`cudaMalloc`, `cuMemAlloc`).
pub const FPGAGDR_MEMORY_CUDA_DEVICE: u32 = 1;
/// `struct fpgagdr_memory.kind`: page-locked, device-mapped host memory
/// (`cudaHostAlloc`, `cuMemHostAlloc`): what Jetson (Tegra) pins.
pub const FPGAGDR_MEMORY_CUDA_HOST: u32 = 2;

/// `struct fpgagdr_card_status.platform`: Jetson (Tegra), 4 KiB pin alignment.
pub const FPGAGDR_PLATFORM_TEGRA: u32 = 1;
/// `struct fpgagdr_card_status.platform`: a discrete GPU, 64 KiB GPU pages.
pub const FPGAGDR_PLATFORM_DESKTOP: u32 = 2;
/// `struct fpgagdr_card_status.platform`: the simulated card (no hardware).
pub const FPGAGDR_PLATFORM_SIM: u32 = 3;

/// `struct fpgagdr_card_status.capabilities` bit: DMA into pinned GPU memory.
pub const FPGAGDR_CAP_GPU_DIRECT: u32 = 1 << 0;
/// `struct fpgagdr_card_status.capabilities` bit: DMA into ordinary host memory (the
/// legacy calls in `FPGAGDR_TRANSFER_MODE_CPU`).
pub const FPGAGDR_CAP_HOST_DMA: u32 = 1 << 1;
/// `struct fpgagdr_card_status.capabilities` bit: completion by interrupt.
pub const FPGAGDR_CAP_INTERRUPTS: u32 = 1 << 2;
/// `struct fpgagdr_card_status.capabilities` bit: the card has a frame trigger
/// (`fpgagdr_wait_frame` works).
pub const FPGAGDR_CAP_FRAME_TRIGGER: u32 = 1 << 3;

/// `fpgagdr_read_frame`'s verdict: the card had not started rewriting the frame's slot
/// when the copy ended: the copy holds the frame whole.
pub const FPGAGDR_FRAME_CHECK_WHOLE: u32 = 1;
/// `fpgagdr_read_frame`'s verdict: the card may have rewritten the slot during the copy
/// (or left the frame's epoch, or reads all ones): the bytes are not the frame; count it
/// as an overrun, not as a checksum error (docs/card-protocol.md, "Torn frames").
pub const FPGAGDR_FRAME_CHECK_TORN: u32 = 2;
/// `fpgagdr_read_frame`'s verdict: no check could be made (a protocol 1.0 card): the
/// frame header's sequence number is the only check.
pub const FPGAGDR_FRAME_CHECK_UNCHECKED: u32 = 3;

/// `fpgagdr_set_transfer_mode`: the legacy calls DMA into the caller's host memory
/// (the default).
pub const FPGAGDR_TRANSFER_MODE_CPU: u32 = 0;
/// `fpgagdr_set_transfer_mode`: the legacy calls DMA into the registered GPU buffer
/// that contains the caller's address.
pub const FPGAGDR_TRANSFER_MODE_GPU_PINNED: u32 = 1;

/// `struct fpgagdr_sim_config.link_preset`: Jetson Orin, PCIe Gen3 x4 (reference
/// report §4.1, docs/bench.md); 4 KiB pin alignment.
pub const FPGAGDR_SIM_LINK_ORIN_GEN3X4: u32 = 0;
/// `struct fpgagdr_sim_config.link_preset`: x86 + discrete GPU, PCIe Gen3 x8
/// (reference report §4.5.2); 64 KiB pin alignment.
pub const FPGAGDR_SIM_LINK_X86_GEN3X8: u32 = 1;
/// `struct fpgagdr_sim_config.link_preset`: no link model (only the copy's time);
/// Orin's alignment.
pub const FPGAGDR_SIM_LINK_OFF: u32 = 2;

/// Bytes of `struct fpgagdr_card_status.name`, NUL included.
pub const FPGAGDR_NAME_BYTES: usize = 128;
/// Bytes of `struct fpgagdr_rule.name`, NUL included.
pub const FPGAGDR_RULE_NAME_BYTES: usize = 32;

/// An open card. Opaque: only a pointer to it is ever handled, and it is never
/// dereferenced (the library looks it up), so a bad or closed one is an error
/// (`-EBADF`, rule `card-handle`), not a crash.
pub struct fpgagdr_card {
    _opaque: [u8; 0],
}

/// A pinned buffer of one card (`fpgagdr_pin_buffer`). A struct of one member so that
/// it cannot be mixed up with an integer; 0 is never a valid handle.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct fpgagdr_buffer {
    /// The handle's value; meaningless to the caller.
    pub id: u64,
}

/// Versions: the library's and the kernel module ABI's it speaks.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct fpgagdr_version {
    /// `sizeof(struct fpgagdr_version)`, set by the caller.
    pub struct_size_bytes: u32,
    /// `FPGAGDR_LIB_VERSION_MAJOR` of the library that is loaded.
    pub lib_major: u32,
    /// `FPGAGDR_LIB_VERSION_MINOR` of the library that is loaded.
    pub lib_minor: u32,
    /// `FPGAGDR_LIB_VERSION_PATCH` of the library that is loaded.
    pub lib_patch: u32,
    /// `FPGAGDR_MODULE_ABI_VERSION`: the kernel module ABI the library speaks.
    pub module_abi_version: u32,
    /// Zero.
    pub reserved: u32,
}

/// A card's identity and limits (`fpgagdr_get_status`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct fpgagdr_card_status {
    /// `sizeof(struct fpgagdr_card_status)`, set by the caller.
    pub struct_size_bytes: u32,
    /// `FPGAGDR_PLATFORM_*`.
    pub platform: u32,
    /// 1 when no hardware is involved: the simulated card of `fpgagdr_open_sim`, or the
    /// kernel module running its test engine (a software card); else 0.
    pub simulated: u32,
    /// C2H channels (engines), at most 4 on XDMA (PG195).
    pub c2h_channels: u32,
    /// H2C channels (engines), at most 4 on XDMA (PG195).
    pub h2c_channels: u32,
    /// `FPGAGDR_CAP_*` bits.
    pub capabilities: u32,
    /// GPU page size: 4096 on Tegra, 65536 on a discrete GPU.
    pub gpu_page_size_bytes: u64,
    /// Required alignment of a pinned buffer's address and length.
    pub alignment_bytes: u64,
    /// Card memory (card address space); `UINT64_MAX` when the module does not know it.
    pub card_memory_bytes: u64,
    /// The module ABI version the card answered with (equal to
    /// `FPGAGDR_MODULE_ABI_VERSION`, or open would have failed); 0 for the simulated
    /// card of `fpgagdr_open_sim` (`FPGAGDR_PLATFORM_SIM`).
    pub module_abi_version: u32,
    /// Zero.
    pub reserved: u32,
    /// Human-readable identity, NUL-terminated (truncated to fit).
    pub name: [c_char; FPGAGDR_NAME_BYTES],
}

/// Memory to pin (`fpgagdr_pin_buffer`, `fpgagdr_register_buffer`): allocated and
/// freed by the caller, who frees it only after unpinning.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct fpgagdr_memory {
    /// `sizeof(struct fpgagdr_memory)`, set by the caller.
    pub struct_size_bytes: u32,
    /// `FPGAGDR_MEMORY_*`.
    pub kind: u32,
    /// Start: a host pointer, or a CUDA device pointer for `FPGAGDR_MEMORY_CUDA_DEVICE`.
    /// A multiple of the card's `alignment_bytes`.
    pub addr: u64,
    /// Length; a multiple of the card's `alignment_bytes`.
    pub length_bytes: u64,
}

/// A completed transfer.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct fpgagdr_transfer_result {
    /// `sizeof(struct fpgagdr_transfer_result)`, set by the caller.
    pub struct_size_bytes: u32,
    /// Zero.
    pub reserved: u32,
    /// Bytes moved.
    pub bytes: u64,
    /// Time from submission to completion (monotonic clock).
    pub elapsed_ns: u64,
}

/// A frame the FPGA finished writing into card memory (`fpgagdr_wait_frame`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct fpgagdr_frame {
    /// `sizeof(struct fpgagdr_frame)`, set by the caller.
    pub struct_size_bytes: u32,
    /// The card's reset epoch the frame belongs to (card protocol 1.1's EPOCH); 0 on a
    /// card without one (protocol 1.0) and on the simulated card. With `sequence` it
    /// names the frame for `fpgagdr_read_frame`'s torn-frame check.
    pub epoch: u32,
    /// Card address of the frame's first byte (its header).
    pub card_addr: u64,
    /// Frame length, header included.
    pub length_bytes: u64,
    /// The sensor's sequence number of the frame.
    pub sequence: u64,
}

/// Settings of a simulated card (`fpgagdr_open_sim`). Zero fields take the default.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct fpgagdr_sim_config {
    /// `sizeof(struct fpgagdr_sim_config)`, set by the caller.
    pub struct_size_bytes: u32,
    /// `FPGAGDR_SIM_LINK_*`.
    pub link_preset: u32,
    /// Card memory, a multiple of 64 KiB; 0: 2 GiB.
    pub card_memory_bytes: u64,
    /// C2H channels, 1..4; 0: 4.
    pub c2h_channels: u32,
    /// H2C channels, 1..4; 0: 4.
    pub h2c_channels: u32,
    /// Test pattern width in pixels (8-bit grey); 0: 640.
    pub frame_width_px: u32,
    /// Test pattern height in pixels; 0: 480.
    pub frame_height_px: u32,
    /// Time between frames of the simulated sensor; 0: as fast as frames are asked for.
    pub frame_period_ns: u64,
    /// Card address of the sensor's 4 frame slots (64 KiB aligned).
    pub frame_base_card_addr: u64,
}

/// One rule of the library's rule list and its errno (`fpgagdr_get_rule`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct fpgagdr_rule {
    /// `sizeof(struct fpgagdr_rule)`, set by the caller.
    pub struct_size_bytes: u32,
    /// The errno (positive) the functions return negated when the rule is broken.
    pub errno_value: i32,
    /// The rule's name as messages give it (`rule <name>: ...`), NUL-terminated.
    pub name: [c_char; FPGAGDR_RULE_NAME_BYTES],
}

/// Copies `s` into a fixed C string field, truncated to leave room for the NUL.
pub(crate) fn c_string<const N: usize>(s: &str) -> [c_char; N] {
    let mut out: [c_char; N] = [0; N];
    for (o, b) in out.iter_mut().zip(s.bytes().take(N - 1)) {
        *o = b as c_char;
    }
    out
}
