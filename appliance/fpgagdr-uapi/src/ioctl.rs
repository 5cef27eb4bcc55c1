//! The seven ioctls as functions: `nix`'s macros make the raw calls with our request
//! numbers (checked against the header by `tests/header.rs`), and each public wrapper
//! takes a borrowed descriptor and an exclusive reference to its argument.
//!
//! Every wrapper is `unsafe` for one shared reason: the request number means fpgagdr only
//! on an fpgagdr control node, and another driver may give the same number another
//! meaning. PIN and TRANSFER add the DMA contract on memory (see each function).

use std::os::fd::{AsRawFd, BorrowedFd};

use crate::{
    fpgagdr_abort, fpgagdr_frame_info, fpgagdr_pin, fpgagdr_status, fpgagdr_transfer,
    fpgagdr_unpin, fpgagdr_wait_frame,
};

/// The raw calls `nix` defines (`unsafe fn`s around ioctl(2)); private, so only the
/// documented wrappers below are reachable.
mod raw {
    use crate::{
        FPGAGDR_IOC_ABORT, FPGAGDR_IOC_FRAME_INFO, FPGAGDR_IOC_GET_STATUS, FPGAGDR_IOC_PIN,
        FPGAGDR_IOC_TRANSFER, FPGAGDR_IOC_UNPIN, FPGAGDR_IOC_WAIT_FRAME, fpgagdr_abort,
        fpgagdr_frame_info, fpgagdr_pin, fpgagdr_status, fpgagdr_transfer, fpgagdr_unpin,
        fpgagdr_wait_frame,
    };

    nix::ioctl_readwrite_bad!(raw_get_status, FPGAGDR_IOC_GET_STATUS, fpgagdr_status);
    nix::ioctl_readwrite_bad!(raw_pin, FPGAGDR_IOC_PIN, fpgagdr_pin);
    nix::ioctl_readwrite_bad!(raw_unpin, FPGAGDR_IOC_UNPIN, fpgagdr_unpin);
    nix::ioctl_readwrite_bad!(raw_transfer, FPGAGDR_IOC_TRANSFER, fpgagdr_transfer);
    nix::ioctl_readwrite_bad!(raw_abort, FPGAGDR_IOC_ABORT, fpgagdr_abort);
    nix::ioctl_readwrite_bad!(raw_wait_frame, FPGAGDR_IOC_WAIT_FRAME, fpgagdr_wait_frame);
    nix::ioctl_readwrite_bad!(raw_frame_info, FPGAGDR_IOC_FRAME_INFO, fpgagdr_frame_info);
}

/// `FPGAGDR_IOC_GET_STATUS`: fills `arg` with the card's status and counters.
///
/// `arg` must come from [`fpgagdr_status::new`] (version set, flags zero). Errors are the
/// header's errno values (`EPROTO` with the module's version in `arg.abi_version`,
/// `EINVAL`, `ENODEV`, …); `ENOTTY` when `fd` is not an fpgagdr control node.
///
/// # Safety
/// `fd` must be an open fpgagdr control node (`/dev/fpgagdrN`), or a file whose driver
/// does not implement this request number (it then answers `ENOTTY`).
#[allow(unsafe_code)]
pub unsafe fn get_status(fd: BorrowedFd<'_>, arg: &mut fpgagdr_status) -> nix::Result<()> {
    // SAFETY: `arg` is a live, exclusively borrowed struct of exactly the size encoded in
    // the request number, so the module reads and writes only inside it; the caller
    // vouches that `fd` gives the number this meaning.
    unsafe { raw::raw_get_status(fd.as_raw_fd(), arg) }.map(drop)
}

/// `FPGAGDR_IOC_PIN`: pins `[arg.addr, arg.addr + arg.length)` of memory of `arg.kind`
/// and writes the handle, segment count and page size into `arg`.
///
/// Errors: the header's errno values for PIN (`EINVAL`, `EFAULT`, `EOPNOTSUPP`, `E2BIG`,
/// `EOVERFLOW`, `ENOSPC`, `ENOMEM`, `ESTALE`, …).
///
/// # Safety
/// As [`get_status`] for `fd`. Besides, the memory must stay allocated until the handle
/// is unpinned (UNPIN returned, or `fd` closed): every later TRANSFER on the handle lets
/// the card read or write those bytes without Rust seeing it.
#[allow(unsafe_code)]
pub unsafe fn pin(fd: BorrowedFd<'_>, arg: &mut fpgagdr_pin) -> nix::Result<()> {
    // SAFETY: as in `get_status` for the argument; the memory named in it is the
    // caller's duty (see above).
    unsafe { raw::raw_pin(fd.as_raw_fd(), arg) }.map(drop)
}

/// `FPGAGDR_IOC_UNPIN`: releases `arg.handle`; a transfer in flight on it fails with
/// `ECANCELED`, and the call returns after the memory is released.
///
/// Errors: `ENOENT` (never issued by this file), `EALREADY` (already unpinned), and the
/// errors every ioctl shares.
///
/// # Safety
/// As [`get_status`] for `fd`.
#[allow(unsafe_code)]
pub unsafe fn unpin(fd: BorrowedFd<'_>, arg: &mut fpgagdr_unpin) -> nix::Result<()> {
    // SAFETY: as in `get_status`.
    unsafe { raw::raw_unpin(fd.as_raw_fd(), arg) }.map(drop)
}

/// `FPGAGDR_IOC_TRANSFER`: one DMA between the pinned buffer `arg.handle` and the card,
/// waiting at most `arg.timeout_ms`; writes `bytes` and `duration_ns` into `arg`.
///
/// Errors: the header's errno values for TRANSFER (`EINVAL`, `EOVERFLOW`, `ERANGE`,
/// `ECHRNG`, `ENOENT`, `EBUSY`, `ESTALE`, `ETIMEDOUT`, `EINTR`, `ECANCELED`, `EIO`, …).
///
/// # Safety
/// As [`get_status`] for `fd`. Besides, for C2H the card writes
/// `[offset, offset + length)` of the pinned memory during the call: no Rust reference
/// to those bytes may be alive meanwhile (for H2C, no `&mut`).
#[allow(unsafe_code)]
pub unsafe fn transfer(fd: BorrowedFd<'_>, arg: &mut fpgagdr_transfer) -> nix::Result<()> {
    // SAFETY: as in `get_status` for the argument; the pinned memory is the caller's
    // duty (see above).
    unsafe { raw::raw_transfer(fd.as_raw_fd(), arg) }.map(drop)
}

/// `FPGAGDR_IOC_ABORT`: stops the transfer in flight on one engine (it fails with
/// `ECANCELED`), or resets an idle engine's error state.
///
/// Errors: `ECHRNG` (no such channel), `EINVAL`, and the errors every ioctl shares.
///
/// # Safety
/// As [`get_status`] for `fd`.
#[allow(unsafe_code)]
pub unsafe fn abort(fd: BorrowedFd<'_>, arg: &mut fpgagdr_abort) -> nix::Result<()> {
    // SAFETY: as in `get_status`.
    unsafe { raw::raw_abort(fd.as_raw_fd(), arg) }.map(drop)
}

/// `FPGAGDR_IOC_WAIT_FRAME`: takes the oldest frame-done event queued for this open file
/// (subscribing the file on its first call), waiting at most `arg.timeout_ms`; writes
/// the event (`sequence`, `slot`, `length`, `arrival_ns`) and `missed`, `overflows`,
/// `queued` into `arg`.
///
/// Errors: `ETIMEDOUT` (no event in time), `EAGAIN` (with [`crate::FPGAGDR_WAIT_NOWAIT`],
/// queue empty), `EINTR`, `ECANCELED` (ABORT with [`crate::FPGAGDR_ABORT_WAITS`]),
/// `ENXIO` (the card does not speak the frame protocol), `EBADMSG` (the card broke it;
/// `arg` still holds the event as read), `EINVAL`, `ENODEV`, …
///
/// # Safety
/// As [`get_status`] for `fd`.
#[allow(unsafe_code)]
pub unsafe fn wait_frame(fd: BorrowedFd<'_>, arg: &mut fpgagdr_wait_frame) -> nix::Result<()> {
    // SAFETY: as in `get_status`.
    unsafe { raw::raw_wait_frame(fd.as_raw_fd(), arg) }.map(drop)
}

/// `FPGAGDR_IOC_FRAME_INFO`: whether the card speaks the frame protocol (`state`), its
/// slot geometry and the module's frame-event counters.
///
/// Errors: the errors every ioctl shares (`EPROTO`, `EINVAL`, `ENODEV`, …).
///
/// # Safety
/// As [`get_status`] for `fd`.
#[allow(unsafe_code)]
pub unsafe fn frame_info(fd: BorrowedFd<'_>, arg: &mut fpgagdr_frame_info) -> nix::Result<()> {
    // SAFETY: as in `get_status`.
    unsafe { raw::raw_frame_info(fd.as_raw_fd(), arg) }.map(drop)
}
