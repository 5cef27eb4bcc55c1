//! The only `unsafe` code of the library: aligned host allocations, raw copies into
//! memory that a pin registry vouches for, and the CUDA driver calls.
//!
//! Owns: [`HostAlloc`], [`CudaAlloc`], the raw copy helpers and the CUDA probe.
//! Must not: decide policy (which memory to use, what a transfer may touch); that is
//! `memory.rs` and the back-ends. Every `unsafe` block states why it is sound.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

use cudarc::driver::{CudaContext, result, sys as cu};

/// A zeroed host allocation with a chosen alignment (page or GPU-page aligned), freed on
/// drop. Length and alignment are in bytes; alignment is a power of two.
#[derive(Debug)]
pub(crate) struct HostAlloc {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: HostAlloc owns its allocation exclusively, like a Box<[u8]>; moving it between
// threads or sharing `&HostAlloc` (which only hands out `&[u8]`) is as safe as for a Box.
#[allow(unsafe_code)]
unsafe impl Send for HostAlloc {}
// SAFETY: see the `Send` impl; shared access only reads.
#[allow(unsafe_code)]
unsafe impl Sync for HostAlloc {}

impl HostAlloc {
    /// Allocates `len` zeroed bytes aligned to `align`. `len` must be non-zero.
    #[allow(unsafe_code)]
    pub(crate) fn new(len: usize, align: usize) -> Result<Self, String> {
        let layout = Layout::from_size_align(len, align).map_err(|e| e.to_string())?;
        if len == 0 {
            return Err("zero-length allocation".into());
        }
        // SAFETY: the layout has a non-zero size (checked above).
        let raw = unsafe { alloc_zeroed(layout) };
        NonNull::new(raw)
            .map(|ptr| HostAlloc { ptr, layout })
            .ok_or_else(|| "the allocator returned null".into())
    }

    pub(crate) fn addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    pub(crate) fn len(&self) -> usize {
        self.layout.size()
    }

    #[allow(unsafe_code)]
    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for `len` initialised (zeroed) bytes for as long as self
        // lives. While the buffer is pinned the card may also write these bytes (a C2H
        // DMA); callers must not hold this slice across a C2H into the same bytes, which
        // is why `PinnedBuffer::host_bytes` is an `unsafe fn` (unpinned memory is only
        // reachable through `&DmaMemory`, where no DMA can reach it).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.layout.size()) }
    }

    #[allow(unsafe_code)]
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl Drop for HostAlloc {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: ptr came from `alloc_zeroed` with exactly this layout.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// Copies `src` to host address `addr`.
///
/// # Safety
/// `addr .. addr + src.len()` must be a live, writable host allocation that no Rust
/// reference aliases during the call. The pin registries keep the allocation live: they
/// hold the pin's lock for the copy, and a `PinnedBuffer` unpins (taking that lock)
/// before its memory is freed. Not aliasing is the caller's duty: no slice of these
/// bytes may be read during a C2H into them (see `HostAlloc::as_slice`).
#[allow(unsafe_code)]
pub(crate) unsafe fn copy_to_host_addr(addr: u64, src: &[u8]) {
    // SAFETY: the caller's contract above.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), addr as *mut u8, src.len()) }
}

/// Copies from host address `addr` into `dst`.
///
/// # Safety
/// `addr .. addr + dst.len()` must be a live, readable host allocation with no writer
/// during the call (same registry guarantee as [`copy_to_host_addr`]).
#[allow(unsafe_code)]
pub(crate) unsafe fn copy_from_host_addr(addr: u64, dst: &mut [u8]) {
    // SAFETY: the caller's contract above.
    unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, dst.as_mut_ptr(), dst.len()) }
}

/// What the CUDA probe found, decided once per process.
#[derive(Debug, Clone)]
pub(crate) enum CudaProbe {
    /// A driver loaded and device 0 has a context.
    Ready(Arc<CudaContext>),
    /// No usable driver; the reason is shown in status and logs.
    Absent(String),
}

/// Probes for the CUDA driver once and creates a context on device 0.
///
/// `cudarc`'s dynamic loading panics when `libcuda` is missing, so the library is probed
/// first (see `/work/shared/notes/gpu-machine.md`). `FPGAGDR_NO_CUDA=1` skips the probe.
#[allow(unsafe_code)]
pub(crate) fn cuda() -> &'static CudaProbe {
    static PROBE: OnceLock<CudaProbe> = OnceLock::new();
    PROBE.get_or_init(|| {
        if std::env::var_os("FPGAGDR_NO_CUDA").is_some_and(|v| v == "1") {
            return CudaProbe::Absent("disabled by FPGAGDR_NO_CUDA=1".into());
        }
        // SAFETY: `is_culib_present` only tries to dlopen the driver library.
        if !unsafe { cu::is_culib_present() } {
            return CudaProbe::Absent("no CUDA driver library (libcuda.so) found".into());
        }
        match CudaContext::new(0) {
            Ok(ctx) => CudaProbe::Ready(ctx),
            Err(e) => CudaProbe::Absent(format!("CUDA driver present but no device 0: {e}")),
        }
    })
}

/// Alignment of every CUDA allocation here: 64 KiB, the GPU page that `nvidia_p2p` pins
/// (and a multiple of Tegra's 4 KiB). `cuMemAlloc` sub-allocates small requests at
/// 512 B granularity, so allocations are padded and the address rounded up.
pub(crate) const CUDA_ALIGN: usize = 64 << 10;

/// Device memory from `cuMemAlloc`, or page-locked host memory from `cuMemHostAlloc`
/// (the allocation Tegra's pinning path needs), aligned to [`CUDA_ALIGN`], freed on drop.
#[derive(Debug)]
pub(crate) struct CudaAlloc {
    ctx: Arc<CudaContext>,
    /// What the driver returned (freed in Drop).
    base: u64,
    /// `base` rounded up to [`CUDA_ALIGN`]; `ptr + len` rounded up to [`CUDA_ALIGN`]
    /// stays inside the allocation.
    ptr: u64,
    /// The address kernels use: `ptr` for device memory; for page-locked host memory
    /// the device-side mapping of `ptr` (`cuMemHostGetDevicePointer`).
    device_ptr: u64,
    len: usize,
    host: bool,
}

impl CudaAlloc {
    /// Allocates `len` bytes of device memory (`host == false`) or page-locked,
    /// device-mapped host memory (`host == true`).
    #[allow(unsafe_code)]
    pub(crate) fn new(ctx: &Arc<CudaContext>, len: usize, host: bool) -> Result<Self, String> {
        ctx.bind_to_thread().map_err(|e| e.to_string())?;
        // Room to round the address up to CUDA_ALIGN and the length too (a dma-buf
        // export covers whole 64 KiB units: `DmaMemory::export_dmabuf`).
        let padded = len
            .checked_next_multiple_of(CUDA_ALIGN)
            .and_then(|l| l.checked_add(CUDA_ALIGN))
            .ok_or_else(|| format!("{len} bytes plus alignment overflows"))?;
        let base = if host {
            // SAFETY: a context is bound; the pointer is freed with free_host in Drop.
            let p = unsafe { result::malloc_host(padded, cu::CU_MEMHOSTALLOC_DEVICEMAP) }
                .map_err(|e| e.to_string())?;
            p as u64
        } else {
            // SAFETY: a context is bound; the pointer is freed with free_sync in Drop.
            unsafe { result::malloc_sync(padded) }.map_err(|e| e.to_string())?
        };
        let ptr = base.next_multiple_of(CUDA_ALIGN as u64);
        let mut device_ptr = ptr;
        if host {
            // SAFETY: `ptr .. ptr + len` lies inside the `len + CUDA_ALIGN` bytes just
            // allocated at `base` and nothing else refers to them yet. Zeroing them makes
            // every later read of initialised memory (`host_slice`), as for `HostAlloc`.
            unsafe { std::ptr::write_bytes(ptr as *mut u8, 0, len) };
            // SAFETY: `ptr` lies in memory just allocated with CU_MEMHOSTALLOC_DEVICEMAP
            // in the bound context; the call only writes `device_ptr`.
            let r = unsafe {
                cu::cuMemHostGetDevicePointer_v2(&mut device_ptr, ptr as *mut std::ffi::c_void, 0)
            };
            if r != cu::CUresult::CUDA_SUCCESS {
                // SAFETY: base came from malloc_host above and is freed once, here.
                let _ = unsafe { result::free_host(base as *mut std::ffi::c_void) };
                return Err(format!("cuMemHostGetDevicePointer: {r:?}"));
            }
        }
        Ok(CudaAlloc {
            ctx: ctx.clone(),
            base,
            ptr,
            device_ptr,
            len,
            host,
        })
    }

    /// The address CUDA kernels use for these bytes (see the field).
    pub(crate) fn device_addr(&self) -> u64 {
        self.device_ptr
    }

    pub(crate) fn addr(&self) -> u64 {
        self.ptr
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl CudaAlloc {
    /// The bytes of a page-locked host allocation (`host == true`); `None` for device
    /// memory.
    #[allow(unsafe_code)]
    pub(crate) fn host_slice_mut(&mut self) -> Option<&mut [u8]> {
        if !self.host {
            return None;
        }
        // SAFETY: `cuMemHostAlloc` returned `len + CUDA_ALIGN` bytes of host memory at
        // `base`, live until Drop, so `ptr .. ptr + len` lies inside it, zeroed in `new`;
        // `&mut self` makes this the only reference.
        Some(unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut u8, self.len) })
    }

    /// As [`Self::host_slice_mut`], shared. While the memory is pinned the card may
    /// write it (C2H); the same caveat as `HostAlloc::as_slice` applies.
    #[allow(unsafe_code)]
    pub(crate) fn host_slice(&self) -> Option<&[u8]> {
        if !self.host {
            return None;
        }
        // SAFETY: as in `host_slice_mut`; shared access only reads.
        Some(unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) })
    }
}

impl Drop for CudaAlloc {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_err() {
            return;
        }
        // SAFETY: base came from the matching allocation call in `new`, freed once.
        let r = unsafe {
            if self.host {
                result::free_host(self.base as *mut std::ffi::c_void)
            } else {
                result::free_sync(self.base)
            }
        };
        if let Err(e) = r {
            tracing::warn!("freeing CUDA memory at {:#x}: {e}", self.ptr);
        }
    }
}

/// True when CUDA device 0 is integrated with the CPU (Tegra: Jetson Orin), where the
/// frame ring must be `cuMemHostAlloc` memory for the kernel's user-page pinning.
pub(crate) fn cuda_integrated(ctx: &CudaContext) -> Result<bool, String> {
    ctx.attribute(cu::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_INTEGRATED)
        .map(|v| v != 0)
        .map_err(|e| e.to_string())
}

/// `CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED` of `ctx`'s device: 1 when
/// `cuMemGetHandleForAddressRange` can export its memory as a dma-buf (CUDA 11.7+, a
/// driver and kernel with dma-buf support), 0 otherwise.
pub(crate) fn cuda_dma_buf_supported(ctx: &CudaContext) -> Result<i32, String> {
    ctx.attribute(cu::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)
        .map_err(|e| e.to_string())
}

/// Exports `size` bytes of device memory at `ptr` as a dma-buf file descriptor
/// (`cuMemGetHandleForAddressRange`, `CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD`). CUDA
/// requires `ptr` and `size` to be multiples of the host page size (CUDA Driver API,
/// "Memory Management": cuMemGetHandleForAddressRange); the caller rounds (to
/// [`CUDA_ALIGN`], a multiple of every Linux page size: 4, 16 and 64 KiB).
///
/// # Safety
/// `ptr .. ptr + size` must be device memory of `ctx` that stays allocated while the
/// returned descriptor (and any importer's reference to it) lives.
#[allow(unsafe_code)]
pub(crate) unsafe fn cuda_export_dmabuf(
    ctx: &CudaContext,
    ptr: u64,
    size: u64,
) -> Result<std::os::fd::OwnedFd, String> {
    use std::os::fd::FromRawFd;
    ctx.bind_to_thread().map_err(|e| e.to_string())?;
    let mut fd: std::ffi::c_int = -1;
    // SAFETY: a context is bound; the driver writes one `int` through the pointer, which
    // is a live local of that type; the range is the caller's contract.
    let r = unsafe {
        cu::cuMemGetHandleForAddressRange(
            (&mut fd as *mut std::ffi::c_int).cast(),
            ptr,
            size as usize,
            cu::CUmemRangeHandleType::CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
            0,
        )
    };
    if r != cu::CUresult::CUDA_SUCCESS {
        return Err(format!("cuMemGetHandleForAddressRange: {r:?}"));
    }
    if fd < 0 {
        return Err(format!("cuMemGetHandleForAddressRange returned fd {fd}"));
    }
    // SAFETY: the driver just created this descriptor for us; nothing else owns it.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// This thread's copy stream in `ctx`: a non-blocking stream made on the thread's first
/// copy and kept for its life. Copies go through it rather than the legacy default stream
/// so that copies of different threads (the simulated card's C2H channels, one thread
/// each) run side by side on the GPU's copy engines, and so that a copy never waits
/// behind kernels other code queued on a blocking stream: like a card's DMA engine, it
/// waits for nothing but itself (CUDA Driver API, "Stream synchronization behavior").
fn copy_stream(ctx: &Arc<CudaContext>) -> Result<Arc<cudarc::driver::CudaStream>, String> {
    thread_local! {
        static STREAM: std::cell::RefCell<Option<Arc<cudarc::driver::CudaStream>>> =
            const { std::cell::RefCell::new(None) };
    }
    STREAM.with(|s| {
        let mut s = s.borrow_mut();
        if let Some(stream) = s.as_ref().filter(|st| Arc::ptr_eq(st.context(), ctx)) {
            return Ok(stream.clone());
        }
        let stream = ctx.new_stream().map_err(|e| e.to_string())?;
        *s = Some(stream.clone());
        Ok(stream)
    })
}

/// Copies host bytes to device address `dst` on this thread's copy stream
/// ([`copy_stream`]: `cuMemcpyHtoDAsync`, then `cuStreamSynchronize`): returns once the
/// bytes are in device memory. From page-locked host memory this is one DMA by the
/// GPU's copy engine.
///
/// # Safety
/// `dst .. dst + src.len()` must be live device memory of `ctx` (the pin registry holds
/// the pin's lock for the copy, as for host memory).
#[allow(unsafe_code)]
pub(crate) unsafe fn cuda_htod(ctx: &Arc<CudaContext>, dst: u64, src: &[u8]) -> Result<(), String> {
    ctx.bind_to_thread().map_err(|e| e.to_string())?;
    let stream = copy_stream(ctx)?;
    // SAFETY: the caller's contract above; `src` stays borrowed until the stream is
    // synchronised below, so the copy never reads it after this returns.
    unsafe { result::memcpy_htod_async(dst, src, stream.cu_stream()) }
        .map_err(|e| e.to_string())?;
    stream.synchronize().map_err(|e| e.to_string())
}

/// Copies from device address `src` into host bytes on this thread's copy stream
/// (`cuMemcpyDtoHAsync`, then `cuStreamSynchronize`).
///
/// # Safety
/// `src .. src + dst.len()` must be live device memory of `ctx`.
#[allow(unsafe_code)]
pub(crate) unsafe fn cuda_dtoh(
    ctx: &Arc<CudaContext>,
    dst: &mut [u8],
    src: u64,
) -> Result<(), String> {
    ctx.bind_to_thread().map_err(|e| e.to_string())?;
    let stream = copy_stream(ctx)?;
    // SAFETY: the caller's contract above; `dst` stays borrowed until the stream is
    // synchronised below.
    unsafe { result::memcpy_dtoh_async(dst, src, stream.cu_stream()) }
        .map_err(|e| e.to_string())?;
    stream.synchronize().map_err(|e| e.to_string())
}
