//! The explicit GPU Direct calls: pin caller memory once, read C2H into it and write
//! H2C from it by handle, unpin.

use fpgagdr::{DmaMemory, MemoryKind};

use crate::api::{check_out, check_ptr, no_flags, read_in, timeout, transfer_result, write_out};
use crate::handles::{self, CardEntry};
use crate::rules::{Fail, call};
use crate::types::*;

/// Turns the caller's memory description into memory the library can pin.
///
/// # Safety
/// The memory is the caller's, allocated and of the kind it says until it is unpinned
/// (the contract of `fpgagdr_pin_buffer`).
#[allow(unsafe_code)]
pub(crate) unsafe fn caller_memory(m: &fpgagdr_memory) -> Result<DmaMemory, Fail> {
    let kind = match m.kind {
        FPGAGDR_MEMORY_HOST => MemoryKind::Host,
        FPGAGDR_MEMORY_CUDA_DEVICE => MemoryKind::CudaDevice,
        FPGAGDR_MEMORY_CUDA_HOST => MemoryKind::CudaHost,
        k => {
            return Err(Fail::rule(
                "argument-valid",
                format_args!("memory kind {k} is not an FPGAGDR_MEMORY_*"),
            ));
        }
    };
    let len = usize::try_from(m.length_bytes).map_err(|_| {
        Fail::rule(
            "pin-size",
            format_args!(
                "length {} does not fit this machine's address space",
                m.length_bytes
            ),
        )
    })?;
    if m.addr == 0 {
        return Err(Fail::null("memory addr"));
    }
    // SAFETY: the caller's contract (see above).
    Ok(unsafe { DmaMemory::borrowed(m.addr, len, kind) }?)
}

/// Pins the caller's memory `*memory` once for DMA by `card` and writes its handle into
/// `*buffer_out`. Pin at start-up and reuse the handle for every transfer ("pin once, use
/// many", as the reference report's driver does: docs/bench.md).
///
/// WARNING: the memory must stay allocated until `fpgagdr_unpin_buffer` (or
/// `fpgagdr_close`) returns: free it after, never before.
///
/// Returns 0; `-EINVAL` (rules `alignment`: address or length not a multiple of the
/// card's `alignment_bytes`; `length-nonzero`; `argument-valid`: unknown kind;
/// `flags`); `-EOPNOTSUPP` (rule `capability`: the module lacks the back-end for this
/// kind of memory); `-EFAULT` (NULL, or rule `user-memory`: host memory not mapped);
/// `-EMSGSIZE`; `-EBADF`; `-E2BIG` (rule `pin-size`); `-ENOSPC` (rule `pin-limit`);
/// `-ENOMEM`; `-EIO` (rule `dma-mapping`).
/// Thread safety: any thread, concurrently with every call on the card.
///
/// # Safety
/// `memory` is NULL or points to a readable `struct fpgagdr_memory` that describes
/// memory of its kind, allocated until unpinned and not touched by the program while a
/// transfer into or out of it runs; `buffer_out` is NULL or writable.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgagdr_pin_buffer(
    card: *const fpgagdr_card,
    memory: *const fpgagdr_memory,
    flags: u64,
    buffer_out: *mut fpgagdr_buffer,
) -> i32 {
    call(|| {
        let entry = handles::card(card)?;
        // SAFETY: the function's contract.
        let m = unsafe { read_in(memory, "fpgagdr_memory") }?;
        check_ptr(buffer_out, "buffer_out")?;
        no_flags("fpgagdr_pin_buffer", flags)?;
        // SAFETY: the function's contract on the memory `m` describes.
        let mem = unsafe { caller_memory(&m) }?;
        let buf = entry.add_buffer(entry.card.pin(mem)?);
        // SAFETY: checked non-NULL; writable by the function's contract.
        unsafe { buffer_out.write_unaligned(buf) };
        Ok(())
    })
}

/// Unpins `buffer`; the handle is invalid afterwards (`-ENOENT` if used). The memory
/// is the caller's again (free it now, not before).
///
/// Returns 0, `-EBADF`, `-ENOENT` (rule `handle-valid`: never issued by this card, or
/// already unpinned), the back-end's unpin errors.
/// Thread safety: any thread. Do not unpin a buffer while a transfer on it runs on
/// another thread: that transfer completes, and the unpin takes effect when it
/// returns (the memory must stay allocated until then).
///
/// # Safety
/// None beyond the types: handles are looked up.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgagdr_unpin_buffer(
    card: *const fpgagdr_card,
    buffer: fpgagdr_buffer,
) -> i32 {
    call(|| handles::card(card)?.remove_buffer(buffer))
}

/// One transfer by handle, after checking every output.
///
/// # Safety
/// `result_out` is NULL or points to a writable `struct fpgagdr_transfer_result`.
#[allow(unsafe_code, clippy::too_many_arguments)]
unsafe fn by_handle(
    function: &str,
    dir: fpgagdr::Direction,
    card: *const fpgagdr_card,
    channel: u32,
    buffer: fpgagdr_buffer,
    buffer_offset_bytes: u64,
    card_addr: u64,
    length_bytes: u64,
    timeout_ns: u64,
    flags: u64,
    result_out: *mut fpgagdr_transfer_result,
) -> Result<(), Fail> {
    let entry: std::sync::Arc<CardEntry> = handles::card(card)?;
    // SAFETY: the caller's contract.
    unsafe { check_out(result_out, "fpgagdr_transfer_result", true) }?;
    no_flags(function, flags)?;
    let buf = entry.buffer(buffer)?;
    let t = match dir {
        fpgagdr::Direction::C2H => entry.card.read_c2h_at(
            channel,
            &buf,
            buffer_offset_bytes,
            card_addr,
            length_bytes,
            timeout(timeout_ns),
        ),
        fpgagdr::Direction::H2C => entry.card.write_h2c_at(
            channel,
            &buf,
            buffer_offset_bytes,
            card_addr,
            length_bytes,
            timeout(timeout_ns),
        ),
    }?;
    // SAFETY: checked above.
    unsafe { write_out(result_out, transfer_result(t)) };
    Ok(())
}

/// C2H: DMA of `length_bytes` from card address `card_addr` into the pinned `buffer` at
/// `buffer_offset_bytes`, on C2H channel `channel`, waiting at most `timeout_ns`.
/// Writes bytes and time into `*result_out` (may be NULL).
///
/// Returns 0; `-ECHRNG` (rule `channel-range`); `-EINVAL` (rules `length-nonzero`,
/// `timeout-nonzero`, `alignment` (the engine's), `timeout-range` (over 60 s on the
/// module), `flags`); `-ERANGE` (rule `card-bounds`); `-EOVERFLOW` (rule
/// `buffer-bounds`); `-ENOENT` (rule `handle-valid`); `-ETIMEDOUT` (rule `timeout`: the
/// engine was stopped, the channel is usable); `-EBUSY` (rule `handle-busy`); `-EIO`
/// (rule `engine`); `-ESTALE`; `-EINTR`; `-ECANCELED`; `-EBADF`; `-EFAULT`; `-EMSGSIZE`.
/// Thread safety: any thread. Transfers on different channels run in parallel;
/// transfers on one channel are serialised. Do not read the buffer's bytes while a C2H
/// into them runs.
///
/// # Safety
/// `result_out` is NULL or points to a writable `struct fpgagdr_transfer_result`.
#[allow(unsafe_code, clippy::too_many_arguments)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgagdr_read_c2h(
    card: *const fpgagdr_card,
    channel: u32,
    buffer: fpgagdr_buffer,
    buffer_offset_bytes: u64,
    card_addr: u64,
    length_bytes: u64,
    timeout_ns: u64,
    flags: u64,
    result_out: *mut fpgagdr_transfer_result,
) -> i32 {
    call(|| {
        // SAFETY: the function's contract.
        unsafe {
            by_handle(
                "fpgagdr_read_c2h",
                fpgagdr::Direction::C2H,
                card,
                channel,
                buffer,
                buffer_offset_bytes,
                card_addr,
                length_bytes,
                timeout_ns,
                flags,
                result_out,
            )
        }
    })
}

/// H2C: DMA of `length_bytes` from the pinned `buffer` at `buffer_offset_bytes` to card
/// address `card_addr`, on H2C channel `channel`. Errors as `fpgagdr_read_c2h`.
/// Thread safety: as `fpgagdr_read_c2h`; do not write the buffer's bytes while an H2C
/// from them runs.
///
/// # Safety
/// `result_out` is NULL or points to a writable `struct fpgagdr_transfer_result`.
#[allow(unsafe_code, clippy::too_many_arguments)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgagdr_write_h2c(
    card: *const fpgagdr_card,
    channel: u32,
    buffer: fpgagdr_buffer,
    buffer_offset_bytes: u64,
    card_addr: u64,
    length_bytes: u64,
    timeout_ns: u64,
    flags: u64,
    result_out: *mut fpgagdr_transfer_result,
) -> i32 {
    call(|| {
        // SAFETY: the function's contract.
        unsafe {
            by_handle(
                "fpgagdr_write_h2c",
                fpgagdr::Direction::H2C,
                card,
                channel,
                buffer,
                buffer_offset_bytes,
                card_addr,
                length_bytes,
                timeout_ns,
                flags,
                result_out,
            )
        }
    })
}
