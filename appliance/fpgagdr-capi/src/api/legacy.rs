//! The legacy memory-mapped calls (the `DMA_MM_ReadC2H` style of the
//! reference report's vendor library, docs/bench.md): one
//! read/write call with the caller's buffer address, routed by a per-card mode.
//! `FPGAGDR_TRANSFER_MODE_CPU` (the default) moves bytes through host memory at the
//! address; after `fpgagdr_register_buffer` and
//! `fpgagdr_set_transfer_mode(FPGAGDR_TRANSFER_MODE_GPU_PINNED)` (the reference report's two added
//! lines) the same calls DMA into the registered GPU buffer containing the address.

use std::ffi::c_void;

use fpgagdr::TransferMode;

use crate::api::gpudirect::caller_memory;
use crate::api::{check_out, check_ptr, no_flags, read_in, timeout, transfer_result, write_out};
use crate::handles;
use crate::rules::{Fail, call};
use crate::types::*;

/// Pins the caller's memory `*memory` and registers it for the legacy calls' address
/// lookup (the reference report's `SetGPUBuffer`). Several buffers may be registered (a frame
/// ring); each legacy call goes to the one that contains its whole range.
///
/// WARNING: the memory must stay allocated until `fpgagdr_release_buffer` (or
/// `fpgagdr_close`) returns.
///
/// Returns 0; `-EEXIST` (rule `no-overlap`: it overlaps a registered buffer; nothing
/// stays pinned); and the errors of `fpgagdr_pin_buffer`.
/// Thread safety: any thread; concurrent legacy calls on the card see the buffer
/// registered or not, never half.
///
/// # Safety
/// As `fpgagdr_pin_buffer`'s `memory`.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgagdr_register_buffer(
    card: *const fpgagdr_card,
    memory: *const fpgagdr_memory,
    flags: u64,
) -> i32 {
    call(|| {
        let entry = handles::card(card)?;
        // SAFETY: the function's contract.
        let m = unsafe { read_in(memory, "fpgagdr_memory") }?;
        no_flags("fpgagdr_register_buffer", flags)?;
        // SAFETY: the function's contract on the memory `m` describes.
        let mem = unsafe { caller_memory(&m) }?;
        let pinned = entry.card.pin(mem)?;
        entry.card.register_buffer(pinned)?;
        Ok(())
    })
}

/// Unregisters and unpins the registered buffer that starts at `addr` (the reference report's
/// `ReleaseGPUBuffer`). The memory is the caller's again afterwards.
///
/// Returns 0, `-ENXIO` (rule `registered-buffer`: no registered buffer starts there),
/// `-EBADF`, `-EINVAL` (rule `flags`), the back-end's unpin errors.
/// Thread safety: any thread; a legacy call running on another thread into this buffer
/// finishes first (the release waits for it).
///
/// # Safety
/// None: `addr` is only compared.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgagdr_release_buffer(
    card: *const fpgagdr_card,
    addr: *const c_void,
    flags: u64,
) -> i32 {
    call(|| {
        let entry = handles::card(card)?;
        no_flags("fpgagdr_release_buffer", flags)?;
        let buf = entry.card.release_buffer(addr as u64)?;
        buf.unpin()?;
        Ok(())
    })
}

/// Switches how `fpgagdr_mm_read_c2h` / `fpgagdr_mm_write_h2c` route on this card
/// (the reference report's `SetTransferMode`): `FPGAGDR_TRANSFER_MODE_CPU` or
/// `FPGAGDR_TRANSFER_MODE_GPU_PINNED`. The mode is per card, not per thread.
///
/// Returns 0, `-EINVAL` (rules `argument-valid`: unknown mode; `flags`), `-EBADF`.
/// Thread safety: any thread; a legacy call already running keeps the route it took,
/// calls that start after it returns take the new one.
///
/// # Safety
/// None beyond the types.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgagdr_set_transfer_mode(
    card: *const fpgagdr_card,
    mode: u32,
    flags: u64,
) -> i32 {
    call(|| {
        let entry = handles::card(card)?;
        no_flags("fpgagdr_set_transfer_mode", flags)?;
        let mode = match mode {
            FPGAGDR_TRANSFER_MODE_CPU => TransferMode::Cpu,
            FPGAGDR_TRANSFER_MODE_GPU_PINNED => TransferMode::GpuPinned,
            m => {
                return Err(Fail::rule(
                    "argument-valid",
                    format_args!("transfer mode {m} is not an FPGAGDR_TRANSFER_MODE_*"),
                ));
            }
        };
        entry.card.set_transfer_mode(mode);
        Ok(())
    })
}

/// Writes the card's current `FPGAGDR_TRANSFER_MODE_*` into `*mode_out`.
///
/// Returns 0, `-EFAULT`, `-EBADF`.
/// Thread safety: any thread.
///
/// # Safety
/// `mode_out` is NULL or writable.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgagdr_get_transfer_mode(
    card: *const fpgagdr_card,
    mode_out: *mut u32,
) -> i32 {
    call(|| {
        let entry = handles::card(card)?;
        check_ptr(mode_out, "mode_out")?;
        let mode = match entry.card.transfer_mode() {
            TransferMode::Cpu => FPGAGDR_TRANSFER_MODE_CPU,
            TransferMode::GpuPinned => FPGAGDR_TRANSFER_MODE_GPU_PINNED,
        };
        // SAFETY: checked non-NULL; writable by the function's contract.
        unsafe { mode_out.write_unaligned(mode) };
        Ok(())
    })
}

/// One legacy call after its checks.
///
/// # Safety
/// The contract of `fpgagdr_mm_read_c2h` / `fpgagdr_mm_write_h2c`.
#[allow(unsafe_code, clippy::too_many_arguments)]
unsafe fn mm(
    function: &str,
    dir: fpgagdr::Direction,
    card: *const fpgagdr_card,
    channel: u32,
    addr: u64,
    card_addr: u64,
    length_bytes: u64,
    timeout_ns: u64,
    flags: u64,
    result_out: *mut fpgagdr_transfer_result,
) -> Result<(), Fail> {
    let entry = handles::card(card)?;
    // SAFETY: the caller's contract.
    unsafe { check_out(result_out, "fpgagdr_transfer_result", true) }?;
    no_flags(function, flags)?;
    let card = &entry.card;
    if addr == 0 && card.transfer_mode() == TransferMode::Cpu {
        return Err(Fail::null("addr"));
    }
    let t = match dir {
        // SAFETY: in CPU mode the caller's contract makes `addr` valid host memory for
        // `length_bytes`; in GPU-pinned mode it is only looked up.
        fpgagdr::Direction::C2H => unsafe {
            card.mm_read_c2h(channel, addr, card_addr, length_bytes, timeout(timeout_ns))
        },
        // SAFETY: as above, for reads.
        fpgagdr::Direction::H2C => unsafe {
            card.mm_write_h2c(channel, addr, card_addr, length_bytes, timeout(timeout_ns))
        },
    }?;
    // SAFETY: checked above.
    unsafe { write_out(result_out, transfer_result(t)) };
    Ok(())
}

/// Legacy read: `length_bytes` from card address `card_addr` to the caller's buffer at
/// `addr`, on C2H channel `channel`. In `FPGAGDR_TRANSFER_MODE_GPU_PINNED` the
/// registered buffer containing `addr .. addr + length_bytes` receives the bytes by
/// DMA (`addr` may be a CUDA device pointer); in `FPGAGDR_TRANSFER_MODE_CPU` host
/// memory at `addr` does. Writes bytes and time into `*result_out` (may be NULL).
///
/// Returns 0; `-ENXIO` (rule `registered-buffer`: GPU-pinned mode and no registered
/// buffer contains the range: never a silent CPU fallback); `-EFAULT` (NULL `addr` in
/// CPU mode); and the errors of `fpgagdr_read_c2h`.
/// Thread safety: any thread; as `fpgagdr_read_c2h`. The mode is the card's: switching
/// it on one thread changes the route of every thread's next call.
///
/// # Safety
/// In CPU mode, `addr` is writable host memory for `length_bytes` that nothing else
/// touches during the call. In GPU-pinned mode, none (the address is only looked up).
/// `result_out` is NULL or writable.
#[allow(unsafe_code, clippy::too_many_arguments)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgagdr_mm_read_c2h(
    card: *const fpgagdr_card,
    channel: u32,
    addr: *mut c_void,
    card_addr: u64,
    length_bytes: u64,
    timeout_ns: u64,
    flags: u64,
    result_out: *mut fpgagdr_transfer_result,
) -> i32 {
    call(|| {
        // SAFETY: the function's contract.
        unsafe {
            mm(
                "fpgagdr_mm_read_c2h",
                fpgagdr::Direction::C2H,
                card,
                channel,
                addr as u64,
                card_addr,
                length_bytes,
                timeout_ns,
                flags,
                result_out,
            )
        }
    })
}

/// Legacy write: `length_bytes` from the caller's buffer at `addr` to card address
/// `card_addr`, on H2C channel `channel`. Routing and errors as
/// `fpgagdr_mm_read_c2h`.
/// Thread safety: as `fpgagdr_mm_read_c2h`.
///
/// # Safety
/// In CPU mode, `addr` is readable host memory for `length_bytes` that nothing writes
/// during the call. `result_out` is NULL or writable.
#[allow(unsafe_code, clippy::too_many_arguments)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgagdr_mm_write_h2c(
    card: *const fpgagdr_card,
    channel: u32,
    addr: *const c_void,
    card_addr: u64,
    length_bytes: u64,
    timeout_ns: u64,
    flags: u64,
    result_out: *mut fpgagdr_transfer_result,
) -> i32 {
    call(|| {
        // SAFETY: the function's contract.
        unsafe {
            mm(
                "fpgagdr_mm_write_h2c",
                fpgagdr::Direction::H2C,
                card,
                channel,
                addr as u64,
                card_addr,
                length_bytes,
                timeout_ns,
                flags,
                result_out,
            )
        }
    })
}
