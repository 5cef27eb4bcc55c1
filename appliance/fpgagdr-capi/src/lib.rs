//! # libfpgagdr — the C ABI of the fpgagdr library
//!
//! The functions, structs and constants of `fpgagdr.h`, which cbindgen generates from
//! this crate at build time (`build.rs`; never hand-written, never committed;
//! `install.sh` installs it with `libfpgagdr.so`, `libfpgagdr.a` and `fpgagdr.pc`).
//!
//! The shape follows NVIDIA gdrcopy's `gdrapi.h` and mends its faults
//! (`docs/library.md`, "The C API"): an opaque card handle; a one-member struct for
//! buffer handles; every function returns 0 or a negative errno and writes results
//! through out-pointers; the failure's message, naming its rule, from
//! `fpgagdr_last_error`; units in names (`_bytes`, `_ns`, `_px`); no enums or
//! bit-fields in public structs; every struct begins with `struct_size_bytes`; growth by
//! new functions and `flags` (0 today), never by changing a signature; a thread-safety
//! note on every function.
//!
//! Modules, one way down: `api/` (the exported functions) → `handles` (open cards, pinned
//! buffers) → `rules` (errnos, last error); `types` (the C structs and constants) is
//! used by `api/` and `handles`.
#![deny(missing_docs)]

pub mod api;
mod handles;
pub mod rules;
pub mod types;

pub use rules::{CAPI_RULES, RULE_ERRNOS, errno_of};
pub use types::*;
