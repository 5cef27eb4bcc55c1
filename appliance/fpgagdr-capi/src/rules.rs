//! Rules and errnos: every rule the library or this C API can report, the errno a C
//! caller gets for it, and the calling thread's last error message.
//!
//! Owns: [`RULE_ERRNOS`], `Fail` (an errno with a message naming the rule) and the
//! thread-local last message. Must not: know cards or buffers (`handles.rs`).
//!
//! Each rule maps to one errno; several rules may share one (the message, which starts
//! with `rule <name>: `, tells them apart). Where the kernel module's ABI has an errno
//! for the rule, it is that errno (`kmod/include/uapi/linux/fpgagdr.h`), so a C caller
//! sees what a raw ioctl would have answered.

use std::cell::RefCell;

use libc::{
    E2BIG, EAGAIN, EBADF, EBADMSG, EBUSY, ECANCELED, ECHRNG, EEXIST, EFAULT, EINTR, EINVAL, EIO,
    EMSGSIZE, ENODEV, ENOENT, ENOMEM, ENOSPC, ENOTRECOVERABLE, ENOTTY, ENXIO, EOPNOTSUPP,
    EOVERFLOW, EPROTO, ERANGE, ESTALE, ETIMEDOUT,
};

/// The rules only this C API reports (the library's are `fpgagdr::RULES`).
pub const CAPI_RULES: &[&str] = &[
    "card-handle",
    "null-pointer",
    "struct-size",
    "flags",
    "internal",
];

/// Every rule's errno (positive; functions return it negated). The library's rules
/// (`fpgagdr::RULES`) first, then this API's own ([`CAPI_RULES`]); a test checks that
/// both lists are covered exactly.
pub const RULE_ERRNOS: &[(&str, i32)] = &[
    ("alignment", EINVAL),
    ("card-bounds", ERANGE),
    ("buffer-bounds", EOVERFLOW),
    ("length-nonzero", EINVAL),
    ("handle-valid", ENOENT),
    ("channel-range", ECHRNG),
    ("timeout", ETIMEDOUT),
    ("timeout-nonzero", EINVAL),
    ("no-overlap", EEXIST),
    ("registered-buffer", ENXIO),
    ("capability", EOPNOTSUPP),
    ("card-present", ENODEV),
    ("memory", ENOMEM),
    ("cuda", EIO),
    ("frame", EBADMSG),
    ("abi", ENOTTY),
    ("abi-version", EPROTO),
    ("user-memory", EFAULT),
    ("argument-valid", EINVAL),
    ("file-descriptor", EBADF),
    ("pin-size", E2BIG),
    ("pin-limit", ENOSPC),
    ("handle-busy", EBUSY),
    ("engine-busy", EBUSY),
    ("gpu-memory-freed", ESTALE),
    ("interrupted", EINTR),
    ("aborted", ECANCELED),
    ("engine", EIO),
    ("dma-mapping", EIO),
    ("timeout-range", EINVAL),
    // The card's frame protocol (docs/card-protocol.md), as the module reports them.
    ("card-protocol", ENXIO),
    ("no-frame-queued", EAGAIN),
    ("frame-event", EBADMSG),
    ("frame-sequence", EBADMSG),
    ("frame-slot", EBADMSG),
    ("frame-length", EBADMSG),
    ("card-gone", EIO),
    ("kernel", EIO),
    // This API's own rules.
    ("card-handle", EBADF),
    ("null-pointer", EFAULT),
    ("struct-size", EMSGSIZE),
    ("flags", EINVAL),
    ("internal", ENOTRECOVERABLE),
];

/// The errno of `rule`; `EIO` for a name not in [`RULE_ERRNOS`] (a test keeps that
/// from happening).
pub fn errno_of(rule: &str) -> i32 {
    RULE_ERRNOS
        .iter()
        .find(|(r, _)| *r == rule)
        .map_or(EIO, |(_, e)| *e)
}

/// A failed call: the errno it returns (positive) and the message naming the rule.
#[derive(Debug, Clone)]
pub(crate) struct Fail {
    pub(crate) errno: i32,
    pub(crate) message: String,
}

impl Fail {
    /// A failure of `rule` (one of [`RULE_ERRNOS`]) with `detail`.
    pub(crate) fn rule(rule: &'static str, detail: impl std::fmt::Display) -> Fail {
        Fail {
            errno: errno_of(rule),
            message: format!("rule {rule}: {detail}"),
        }
    }

    /// A required pointer argument was NULL.
    pub(crate) fn null(what: &str) -> Fail {
        Fail::rule("null-pointer", format_args!("{what} is NULL"))
    }

    /// Nonzero `flags` where this version defines none.
    pub(crate) fn flags(function: &str, flags: u64) -> Fail {
        Fail::rule(
            "flags",
            format_args!("{function}: flags {flags:#x} must be 0 (this version defines none)"),
        )
    }
}

impl From<fpgagdr::Error> for Fail {
    fn from(e: fpgagdr::Error) -> Fail {
        Fail {
            errno: errno_of(e.rule()),
            message: e.to_string(),
        }
    }
}

thread_local! {
    static LAST: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Records `fail` as this thread's last error and returns its negated errno.
pub(crate) fn record(fail: Fail) -> i32 {
    LAST.with(|l| *l.borrow_mut() = fail.message);
    -fail.errno
}

/// This thread's last error message ("" when no call failed on it).
pub(crate) fn last_message() -> String {
    LAST.with(|l| l.borrow().clone())
}

/// Runs one API call: 0 on success, the negated errno of its failure otherwise, with
/// the message kept for `fpgagdr_last_error`. A panic (a bug) becomes rule `internal`,
/// never an unwind into C.
pub(crate) fn call(f: impl FnOnce() -> Result<(), Fail>) -> i32 {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(())) => 0,
        Ok(Err(fail)) => record(fail),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            record(Fail::rule(
                "internal",
                format_args!("a bug in libfpgagdr: {what}"),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each rule of the library and of this API has exactly one errno, and the table
    /// names no other rule.
    #[test]
    fn every_rule_has_one_errno() {
        let all: Vec<&str> = fpgagdr::RULES.iter().chain(CAPI_RULES).copied().collect();
        for rule in &all {
            let n = RULE_ERRNOS.iter().filter(|(r, _)| r == rule).count();
            assert_eq!(n, 1, "rule {rule} has {n} errnos in RULE_ERRNOS");
        }
        for (rule, _) in RULE_ERRNOS {
            assert!(all.contains(rule), "RULE_ERRNOS names unknown rule {rule}");
        }
    }
}
