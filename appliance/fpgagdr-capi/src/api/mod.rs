//! The exported functions, by concern: `info` (version, rules, last error), `card`
//! (open, status, close), `gpudirect` (pin, read C2H, write H2C, unpin), `legacy` (the
//! memory-mapped calls routed into registered buffers), `frame` (the frame wait).
//!
//! Every function returns 0 or a negative errno, writes results through out-pointers
//! (checked before anything changes, so a failed call changed nothing), and keeps the
//! failure's message for `fpgagdr_last_error`. The helpers here read and write the
//! caller's structs after checking `struct_size_bytes`.

pub mod card;
pub mod frame;
pub mod gpudirect;
pub mod info;
pub mod legacy;

use std::time::Duration;

use crate::rules::Fail;

/// The caller's `struct_size_bytes` must be this library's size of `T`.
fn check_size<T>(size: u32, what: &str) -> Result<(), Fail> {
    let ours = size_of::<T>();
    if size as usize == ours {
        Ok(())
    } else {
        Err(Fail::rule(
            "struct-size",
            format_args!(
                "struct {what}: struct_size_bytes is {size}, this library's is {ours} (set \
                 it to sizeof(struct {what}); the program and the library come from \
                 different versions of fpgagdr.h)"
            ),
        ))
    }
}

/// Reads a struct the caller passes in, after checking its `struct_size_bytes`.
///
/// # Safety
/// `p` is NULL, or points to a readable struct of this API whose first member is its
/// `struct_size_bytes`, at least as large as that member says.
#[allow(unsafe_code)]
pub(crate) unsafe fn read_in<T: Copy>(p: *const T, what: &str) -> Result<T, Fail> {
    if p.is_null() {
        return Err(Fail::null(what));
    }
    // SAFETY: non-NULL, and every struct of this API begins with a `uint32_t` size that
    // the caller's contract makes readable.
    let size = unsafe { p.cast::<u32>().read_unaligned() };
    check_size::<T>(size, what)?;
    // SAFETY: the caller's struct is as large as it says, which is `size_of::<T>()`.
    Ok(unsafe { p.read_unaligned() })
}

/// Checks an out-struct's `struct_size_bytes` without writing it (so a call can check
/// all its outputs before it changes anything). NULL is allowed when `optional`.
///
/// # Safety
/// As [`read_in`].
#[allow(unsafe_code)]
pub(crate) unsafe fn check_out<T>(p: *mut T, what: &str, optional: bool) -> Result<(), Fail> {
    if p.is_null() {
        return if optional {
            Ok(())
        } else {
            Err(Fail::null(what))
        };
    }
    // SAFETY: non-NULL; the caller's contract makes the leading size readable.
    let size = unsafe { p.cast::<u32>().read_unaligned() };
    check_size::<T>(size, what)
}

/// Writes `value` to an out-struct that [`check_out`] accepted (nothing when NULL).
///
/// # Safety
/// `p` is NULL or was accepted by [`check_out`] and is writable for `size_of::<T>()`.
#[allow(unsafe_code)]
pub(crate) unsafe fn write_out<T>(p: *mut T, value: T) {
    if !p.is_null() {
        // SAFETY: the caller's contract; `read_unaligned`'s twin, no alignment assumed.
        unsafe { p.write_unaligned(value) }
    }
}

/// Checks a plain out-pointer (`uint32_t *`, `uint64_t *`, ...).
pub(crate) fn check_ptr<T>(p: *mut T, what: &str) -> Result<(), Fail> {
    if p.is_null() {
        Err(Fail::null(what))
    } else {
        Ok(())
    }
}

/// Rejects nonzero `flags` (this version defines none).
pub(crate) fn no_flags(function: &str, flags: u64) -> Result<(), Fail> {
    if flags == 0 {
        Ok(())
    } else {
        Err(Fail::flags(function, flags))
    }
}

/// A timeout in nanoseconds (the library refuses zero: rule `timeout-nonzero`).
pub(crate) fn timeout(ns: u64) -> Duration {
    Duration::from_nanos(ns)
}

/// The C form of a completed transfer.
pub(crate) fn transfer_result(t: fpgagdr::Transfer) -> crate::types::fpgagdr_transfer_result {
    crate::types::fpgagdr_transfer_result {
        struct_size_bytes: size_of::<crate::types::fpgagdr_transfer_result>() as u32,
        reserved: 0,
        bytes: t.bytes,
        elapsed_ns: u64::try_from(t.elapsed.as_nanos()).unwrap_or(u64::MAX),
    }
}
