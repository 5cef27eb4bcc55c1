//! Version, the rule list with each rule's errno, and the last error message.

use std::ffi::c_char;

use crate::api::{check_out, check_ptr, write_out};
use crate::rules::{Fail, RULE_ERRNOS, call, last_message};
use crate::types::{
    FPGAGDR_LIB_VERSION_MAJOR, FPGAGDR_LIB_VERSION_MINOR, FPGAGDR_LIB_VERSION_PATCH,
    FPGAGDR_MODULE_ABI_VERSION, c_string, fpgagdr_rule, fpgagdr_version,
};

/// Writes the version of the library that is loaded and the kernel module ABI version
/// it speaks into `*version_out` (set its `struct_size_bytes` first). Compare with the
/// `FPGAGDR_LIB_VERSION_*` the program was compiled with.
///
/// Returns 0, `-EFAULT` (NULL), `-EMSGSIZE` (rule `struct-size`).
/// Thread safety: any thread, any time, even before a card is open.
///
/// # Safety
/// `version_out` is NULL or points to a writable `struct fpgagdr_version`.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgagdr_get_version(version_out: *mut fpgagdr_version) -> i32 {
    call(|| {
        // SAFETY: the function's contract.
        unsafe { check_out(version_out, "fpgagdr_version", false) }?;
        let v = fpgagdr_version {
            struct_size_bytes: size_of::<fpgagdr_version>() as u32,
            lib_major: FPGAGDR_LIB_VERSION_MAJOR,
            lib_minor: FPGAGDR_LIB_VERSION_MINOR,
            lib_patch: FPGAGDR_LIB_VERSION_PATCH,
            module_abi_version: FPGAGDR_MODULE_ABI_VERSION,
            reserved: 0,
        };
        // SAFETY: checked above.
        unsafe { write_out(version_out, v) };
        Ok(())
    })
}

/// Writes the number of rules the library can report into `*count_out`
/// (`fpgagdr_get_rule` reads them).
///
/// Returns 0, `-EFAULT` (NULL).
/// Thread safety: any thread, any time.
///
/// # Safety
/// `count_out` is NULL or writable.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgagdr_get_rule_count(count_out: *mut u32) -> i32 {
    call(|| {
        check_ptr(count_out, "count_out")?;
        // SAFETY: non-NULL and writable by the function's contract.
        unsafe { count_out.write_unaligned(RULE_ERRNOS.len() as u32) };
        Ok(())
    })
}

/// Writes rule `index` (0 .. count - 1) of the library's rule list, with the errno its
/// functions return (negated) when the rule is broken, into `*rule_out`. The list is
/// the library's own (every rule of the Rust library and of this API), so a program or
/// test can print or check it without a copy.
///
/// Returns 0, `-EFAULT`, `-EMSGSIZE`, `-EINVAL` (rule `argument-valid`: index out of
/// range).
/// Thread safety: any thread, any time.
///
/// # Safety
/// `rule_out` is NULL or points to a writable `struct fpgagdr_rule`.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgagdr_get_rule(index: u32, rule_out: *mut fpgagdr_rule) -> i32 {
    call(|| {
        // SAFETY: the function's contract.
        unsafe { check_out(rule_out, "fpgagdr_rule", false) }?;
        let (name, errno) = RULE_ERRNOS.get(index as usize).ok_or_else(|| {
            Fail::rule(
                "argument-valid",
                format_args!("rule index {index} is not below {}", RULE_ERRNOS.len()),
            )
        })?;
        let r = fpgagdr_rule {
            struct_size_bytes: size_of::<fpgagdr_rule>() as u32,
            errno_value: *errno,
            name: c_string(name),
        };
        // SAFETY: checked above.
        unsafe { write_out(rule_out, r) };
        Ok(())
    })
}

/// Copies the message of the last call that failed on this thread (`"rule <name>:
/// ..."`, naming the rule and the offending values; `""` if none failed) into
/// `buf`, NUL-terminated and truncated to `buf_bytes`.
///
/// Returns 0, `-EFAULT` (NULL `buf` or `buf_bytes` 0).
/// Thread safety: any thread; each thread has its own last message.
///
/// # Safety
/// `buf` is NULL or writable for `buf_bytes` bytes.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgagdr_last_error(buf: *mut c_char, buf_bytes: u64) -> i32 {
    let message = last_message();
    call(|| {
        if buf.is_null() || buf_bytes == 0 {
            return Err(Fail::null("buf (or buf_bytes 0)"));
        }
        let n = message.len().min(buf_bytes as usize - 1);
        // SAFETY: `buf` is writable for `buf_bytes` > `n` bytes (the function's contract).
        unsafe {
            std::ptr::copy_nonoverlapping(message.as_ptr(), buf.cast::<u8>(), n);
            buf.add(n).write(0);
        }
        Ok(())
    })
}
