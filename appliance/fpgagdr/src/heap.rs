//! The C heap (glibc `malloc`) that ONNX Runtime, the image decoders and the frame ring
//! share with the rest of a capture process (a service that rebuilds its pipeline saw
//! its RSS climb from about 110 MB to 550 MB over 100 config changes and stay there;
//! docs/benchmarks.md §9.1).
//!
//! The cause: each config change builds a new pipeline (an ONNX Runtime session with its
//! weights and arena, decoded frames, the ring) and drops the old one. glibc keeps what
//! was freed: its dynamic mmap threshold rises to the largest block freed (up to
//! 32 MiB), so later large blocks (weights, frames) come from the heap instead of fresh
//! mappings, and freed heap memory is returned to the system only from the top of each
//! arena. `malloc_trim(0)` on a running service gave back 150 MB of 270.
//!
//! Owns: [`tune`] (fixes the mmap threshold at start, so large blocks are mapped and
//! unmapped on their own) and [`release_freed`] (returns freed heap pages to the
//! system, called when a pipeline has been dropped). Must not: be called on the frame
//! path. Both do nothing where the C library is not glibc.

/// Blocks from this size up are mapped on their own (and unmapped when freed): glibc's
/// default before its dynamic threshold moves it, bytes.
pub const MMAP_THRESHOLD: i32 = 128 * 1024;

/// Fixes glibc's mmap threshold at [`MMAP_THRESHOLD`] (setting it turns the dynamic
/// threshold off). Call once, before the pipeline is built.
#[allow(unsafe_code)]
pub fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only changes the allocator's parameters; M_MMAP_THRESHOLD with
        // a value below its maximum (32 MiB on 64-bit) is documented (mallopt(3)).
        let ok = unsafe { nix::libc::mallopt(nix::libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) };
        if ok != 1 {
            tracing::warn!("mallopt(M_MMAP_THRESHOLD) failed");
        }
    }
}

/// Returns the heap pages freed so far to the system (`malloc_trim(0)`, every arena).
/// Takes a few milliseconds on a heap of hundreds of MB; call it after a pipeline was
/// dropped, never on the frame path.
#[allow(unsafe_code)]
pub fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim has no preconditions; it only walks the allocator's own lists
    // under their locks and gives free pages back (malloc_trim(3)).
    unsafe {
        nix::libc::malloc_trim(0);
    }
}
