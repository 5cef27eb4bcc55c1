//! The frame wait: blocks until the card's frame trigger reports a frame in card
//! memory. The simulated card's trigger is its sensor; the kernel module's is the
//! library's `KernelTrigger` (the module's `WAIT_FRAME`), taken at open. A card without
//! one (`FPGAGDR_CAP_FRAME_TRIGGER` clear) answers the error the library gave at open:
//! rule `card-protocol` when its bitstream does not speak `docs/card-protocol.md`. The
//! frame read: the C2H of a frame's slot with the torn-frame check after it.

use crate::api::{check_out, check_ptr, no_flags, read_in, timeout, transfer_result, write_out};
use crate::handles;
use crate::rules::call;
use crate::types::*;

/// Waits at most `timeout_ns` for the next frame the card captures and writes where it
/// is into `*frame_out` (card address, length, sequence number, epoch). Read it with
/// `fpgagdr_read_frame` (with the torn-frame check), or `fpgagdr_read_c2h` or the legacy
/// read (without), into a pinned ring entry.
///
/// Returns 0; `-ETIMEDOUT` (rule `timeout`: no frame in time); `-EINVAL` (rules
/// `timeout-nonzero`, `timeout-range` (over 60 s on the kernel module), `flags`);
/// `-ENXIO` (rule `card-protocol`: the card does not speak the frame protocol, see
/// `FPGAGDR_CAP_FRAME_TRIGGER`; the message names the part at fault); `-EBADMSG`
/// (rules `frame-sequence`, `frame-slot`, `frame-length`: the card broke the protocol;
/// the event is skipped, the next call goes on); `-EINTR` (rule `interrupted`: a
/// signal); `-ENODEV` (the card was removed); `-EFAULT`; `-EMSGSIZE`; `-EBADF`.
/// Thread safety: any thread; waits on one card are serialised (each frame goes to
/// exactly one waiter), and run concurrently with transfers.
///
/// # Safety
/// `frame_out` is NULL or points to a writable `struct fpgagdr_frame`.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgagdr_wait_frame(
    card: *const fpgagdr_card,
    timeout_ns: u64,
    flags: u64,
    frame_out: *mut fpgagdr_frame,
) -> i32 {
    call(|| {
        let entry = handles::card(card)?;
        // SAFETY: the function's contract.
        unsafe { check_out(frame_out, "fpgagdr_frame", false) }?;
        no_flags("fpgagdr_wait_frame", flags)?;
        if timeout_ns == 0 {
            return Err(fpgagdr::Error::ZeroTimeout.into());
        }
        let slot = entry.trigger()?.wait_frame(timeout(timeout_ns))?;
        let f = fpgagdr_frame {
            struct_size_bytes: size_of::<fpgagdr_frame>() as u32,
            epoch: slot.epoch,
            card_addr: slot.card_addr,
            length_bytes: slot.len,
            sequence: slot.seq,
        };
        // SAFETY: checked above.
        unsafe { write_out(frame_out, f) };
        Ok(())
    })
}

/// Writes the largest frame the card's trigger can report, in bytes (header
/// included), into `*max_frame_bytes_out`: the size of one ring entry.
///
/// Returns 0, `-EFAULT`, `-EBADF`, `-ENXIO` (rule `card-protocol`: no frame trigger,
/// as `fpgagdr_wait_frame`).
/// Thread safety: any thread; waits for a running `fpgagdr_wait_frame` on the card.
///
/// # Safety
/// `max_frame_bytes_out` is NULL or writable.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgagdr_get_max_frame_bytes(
    card: *const fpgagdr_card,
    max_frame_bytes_out: *mut u64,
) -> i32 {
    call(|| {
        let entry = handles::card(card)?;
        check_ptr(max_frame_bytes_out, "max_frame_bytes_out")?;
        let n = entry.trigger()?.max_frame_len() as u64;
        // SAFETY: checked non-NULL; writable by the function's contract.
        unsafe { max_frame_bytes_out.write_unaligned(n) };
        Ok(())
    })
}

/// C2H of the frame `*frame` (as `fpgagdr_wait_frame` wrote it): `length_bytes` (at
/// least the frame's `length_bytes`, at most its slot) from the frame's card address
/// into the pinned `buffer` at offset 0, on C2H channel `channel`, then card protocol
/// 1.1's torn-frame check (docs/card-protocol.md): on the kernel module the card's
/// LIVE_SEQ_LO read after the DMA says whether the slot may have been rewritten during
/// the copy. Writes the verdict into `*frame_check_out`: `FPGAGDR_FRAME_CHECK_WHOLE`,
/// `_TORN` (the bytes are not the frame: count an overrun, drop it, also when checksums
/// are not verified) or `_UNCHECKED` (a protocol 1.0 card: the header is the only
/// check); bytes and time into `*result_out` (may be NULL).
///
/// Returns 0; the errors of `fpgagdr_read_c2h`; `-EINVAL` (rule `argument-valid`) when
/// the module finds the range outside the frame's slot; `-EFAULT` (rule
/// `null-pointer`) for a NULL `frame` or `frame_check_out`; `-EMSGSIZE` (rule
/// `struct-size`).
/// Thread safety: as `fpgagdr_read_c2h`.
///
/// # Safety
/// `frame` points to a readable `struct fpgagdr_frame`; `frame_check_out` is NULL or
/// writable; `result_out` is NULL or points to a writable `struct
/// fpgagdr_transfer_result`.
#[allow(unsafe_code, clippy::too_many_arguments)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgagdr_read_frame(
    card: *const fpgagdr_card,
    channel: u32,
    buffer: fpgagdr_buffer,
    frame: *const fpgagdr_frame,
    length_bytes: u64,
    timeout_ns: u64,
    flags: u64,
    frame_check_out: *mut u32,
    result_out: *mut fpgagdr_transfer_result,
) -> i32 {
    call(|| {
        let entry = handles::card(card)?;
        // SAFETY: the function's contract.
        let f = unsafe { read_in(frame, "fpgagdr_frame") }?;
        check_ptr(frame_check_out, "frame_check_out")?;
        // SAFETY: the function's contract.
        unsafe { check_out(result_out, "fpgagdr_transfer_result", true) }?;
        no_flags("fpgagdr_read_frame", flags)?;
        let buf = entry.buffer(buffer)?;
        let frame = fpgagdr::FrameRef {
            seq: f.sequence,
            epoch: f.epoch,
        };
        let r = entry.card.read_frame_ref(
            channel,
            &buf,
            f.card_addr,
            frame,
            length_bytes,
            timeout(timeout_ns),
        )?;
        let check = match r.check {
            fpgagdr::FrameCheck::Whole => FPGAGDR_FRAME_CHECK_WHOLE,
            fpgagdr::FrameCheck::Torn => FPGAGDR_FRAME_CHECK_TORN,
            fpgagdr::FrameCheck::Unchecked => FPGAGDR_FRAME_CHECK_UNCHECKED,
        };
        // SAFETY: checked non-NULL; writable by the function's contract.
        unsafe { frame_check_out.write_unaligned(check) };
        // SAFETY: checked above.
        unsafe { write_out(result_out, transfer_result(r.transfer)) };
        Ok(())
    })
}
