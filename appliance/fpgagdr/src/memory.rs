//! DMA-able memory for frame rings and pinned buffers.
//!
//! Owns: [`DmaMemory`] (an allocation of one [`MemoryKind`], which `pinmethod.rs` defines
//! because a pin plan names it), [`DmaRegion`] (the plain
//! description a back-end pins), the copy helpers a back-end uses to move bytes in and
//! out of a pinned region, and [`gpu_memory`] (what this process can allocate).
//! Must not: pin, or know about cards; `card.rs` and the back-ends do that.
//! Neighbours: `sys.rs` below (raw allocation and copies), `buffer.rs` above (pinning).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use crate::error::{Error, Result};
pub use crate::pinmethod::MemoryKind;
use crate::pinmethod::{self, PinMethod, PinPlan};
use crate::sys::{self, CudaAlloc, CudaProbe, HostAlloc};

/// What GPU memory this process can allocate, probed once (see `sys::cuda`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuMemory {
    /// A CUDA driver loaded and device 0 has a context; the string names the device.
    Available(String),
    /// No CUDA; the string says why (shown in status and logs).
    Absent(String),
}

/// Probes the CUDA driver (once per process) and reports what it found.
pub fn gpu_memory() -> GpuMemory {
    match sys::cuda() {
        CudaProbe::Ready(ctx) => GpuMemory::Available(
            ctx.name()
                .unwrap_or_else(|e| format!("CUDA device 0 (name unavailable: {e})")),
        ),
        CudaProbe::Absent(why) => GpuMemory::Absent(why.clone()),
    }
}

/// The frame-ring memory this platform wants, and why: `CudaHost` (`cuMemHostAlloc`,
/// page-locked and GPU-mapped: what Tegra's pinning path pins; docs/kernel-module.md,
/// "Pin methods by platform") on an integrated GPU, `CudaDevice` on a discrete one, `Host`
/// without CUDA.
pub fn frame_ring_kind() -> (MemoryKind, String) {
    match sys::cuda() {
        CudaProbe::Ready(ctx) => {
            let name = ctx.name().unwrap_or_else(|_| "CUDA device 0".into());
            match sys::cuda_integrated(ctx) {
                Ok(true) => (
                    MemoryKind::CudaHost,
                    format!(
                        "{name} is integrated (Tegra): page-locked host memory from cuMemHostAlloc"
                    ),
                ),
                Ok(false) => (MemoryKind::CudaDevice, format!("{name} is a discrete GPU")),
                Err(e) => (
                    MemoryKind::CudaDevice,
                    format!("{name}: integrated-GPU query failed ({e}); using device memory"),
                ),
            }
        }
        CudaProbe::Absent(why) => (MemoryKind::Host, why.clone()),
    }
}

/// The CUDA context this process's DMA memory lives in (device 0), if a driver loaded.
/// GPU stages (preprocessing kernels) must use this context to touch ring entries.
pub fn cuda_context() -> Option<std::sync::Arc<cudarc::driver::CudaContext>> {
    match sys::cuda() {
        CudaProbe::Ready(ctx) => Some(ctx.clone()),
        CudaProbe::Absent(_) => None,
    }
}

/// The description of a DMA buffer that a back-end pins and copies into: start address
/// in the owner's address space (host VA or CUDA device pointer), length in bytes, kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaRegion {
    /// Start address (host virtual address, or CUDA device pointer for `CudaDevice`).
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
    /// Where the bytes live.
    pub kind: MemoryKind,
}

impl DmaRegion {
    /// Whether `addr .. addr + len` lies inside this region.
    pub fn contains(&self, addr: u64, len: u64) -> bool {
        addr >= self.addr
            && addr
                .checked_add(len)
                .is_some_and(|end| end <= self.addr + self.len)
    }

    /// Whether the two regions share at least one byte.
    pub fn overlaps(&self, other: &DmaRegion) -> bool {
        self.addr < other.addr + other.len && other.addr < self.addr + self.len
    }
}

#[derive(Debug)]
enum Backing {
    Host(HostAlloc),
    Cuda(CudaAlloc),
    /// Memory the caller allocated and frees (the C API's pins): never freed here.
    Borrowed {
        addr: u64,
        len: usize,
    },
}

/// One allocation of DMA-able memory; freed on drop.
///
/// Host memory is zeroed; CUDA memory is not initialised.
#[derive(Debug)]
pub struct DmaMemory {
    /// The dma-buf CUDA exported for this memory: closed on drop before `backing` is
    /// freed (fields drop in order), and after the pin that imported it is gone (a
    /// `PinnedBuffer` unpins before its memory drops).
    dmabuf: Option<DmaBufExport>,
    backing: Backing,
    kind: MemoryKind,
    /// Why this memory is pinned the way it is (set by [`DmaMemory::for_pin`]).
    pin_reason: Option<String>,
}

/// A dma-buf exported for a [`DmaMemory`]: the descriptor and its size in bytes.
#[derive(Debug)]
struct DmaBufExport {
    fd: OwnedFd,
    size: u64,
}

impl DmaMemory {
    /// Allocates `len` bytes of host memory aligned to `align` bytes (a power of two,
    /// at least the page size for DMA use).
    ///
    /// Errors: [`Error::ZeroLength`] for `len == 0`, [`Error::Alloc`] when the allocator
    /// refuses.
    pub fn host(len: usize, align: usize) -> Result<Self> {
        if len == 0 {
            return Err(Error::ZeroLength { what: "buffer" });
        }
        let alloc = HostAlloc::new(len, align).map_err(|reason| Error::Alloc {
            len: len as u64,
            kind: "host",
            reason,
        })?;
        Ok(DmaMemory {
            dmabuf: None,
            backing: Backing::Host(alloc),
            kind: MemoryKind::Host,
            pin_reason: None,
        })
    }

    /// Allocates `len` bytes of CUDA memory of `kind` (`CudaDevice` or `CudaHost`),
    /// aligned to 64 KiB (the GPU page `nvidia_p2p` pins; a multiple of every platform's
    /// pin alignment), whatever else the process has allocated.
    ///
    /// Errors: [`Error::Alloc`] when no CUDA driver is present or the driver refuses.
    pub fn cuda(len: usize, kind: MemoryKind) -> Result<Self> {
        let fail = |reason: String| Error::Alloc {
            len: len as u64,
            kind: "cuda",
            reason,
        };
        if len == 0 {
            return Err(Error::ZeroLength { what: "buffer" });
        }
        let ctx = match sys::cuda() {
            CudaProbe::Ready(ctx) => ctx,
            CudaProbe::Absent(why) => return Err(fail(why.clone())),
        };
        let host = match kind {
            MemoryKind::CudaDevice => false,
            MemoryKind::CudaHost => true,
            MemoryKind::Host => return Err(fail("host memory is not CUDA memory".into())),
        };
        let alloc = CudaAlloc::new(ctx, len, host).map_err(fail)?;
        Ok(DmaMemory {
            dmabuf: None,
            backing: Backing::Cuda(alloc),
            kind,
            pin_reason: None,
        })
    }

    /// Memory the caller allocated (a C program's `posix_memalign`, `cudaMalloc` or
    /// `cudaHostAlloc` buffer), described by its start address (host virtual address,
    /// or CUDA device pointer for [`MemoryKind::CudaDevice`]), length in bytes and kind.
    /// Dropping it frees nothing. The CPU never reads it through this value
    /// ([`DmaMemory::as_slice`] is `None`); back-ends reach it by address, as any pinned
    /// region.
    ///
    /// Errors: [`Error::ZeroLength`] for `len == 0`.
    ///
    /// # Safety
    /// `addr .. addr + len` must be memory of `kind` that stays allocated until the
    /// returned value (and the [`crate::PinnedBuffer`] it moves into) is dropped, and
    /// that the caller does not read or write while a transfer into or out of it runs.
    #[allow(unsafe_code)]
    pub unsafe fn borrowed(addr: u64, len: usize, kind: MemoryKind) -> Result<Self> {
        if len == 0 {
            return Err(Error::ZeroLength { what: "buffer" });
        }
        Ok(DmaMemory {
            dmabuf: None,
            backing: Backing::Borrowed { addr, len },
            kind,
            pin_reason: None,
        })
    }

    /// Frame-ring memory: CUDA memory of `gpu_kind` when a CUDA driver is present,
    /// otherwise page-aligned host memory. The returned kind says which was used.
    pub fn for_frames(len: usize, align: usize, gpu_kind: MemoryKind) -> Result<Self> {
        match gpu_memory() {
            GpuMemory::Available(_) if gpu_kind != MemoryKind::Host => Self::cuda(len, gpu_kind),
            _ => Self::host(len, align),
        }
    }

    /// Frame-ring memory allocated as `plan` says ([`crate::plan_pin`]): `plan.memory`
    /// (host memory of alignment `align` for [`MemoryKind::Host`], CUDA memory otherwise)
    /// and, for [`PinMethod::DmaBuf`], a dma-buf exported for it
    /// ([`DmaMemory::export_dmabuf`]). When the export fails the memory is kept and
    /// pinned through `nvidia_p2p`; [`DmaMemory::pin_reason`] says so.
    ///
    /// Errors: as [`DmaMemory::host`] and [`DmaMemory::cuda`].
    pub fn for_pin(len: usize, align: usize, plan: &PinPlan) -> Result<Self> {
        let mut mem = match plan.memory {
            MemoryKind::Host => Self::host(len, align)?,
            kind => Self::cuda(len, kind)?,
        };
        let mut reason = plan.reason.clone();
        if plan.method == PinMethod::DmaBuf
            && let Err(e) = mem.export_dmabuf()
        {
            tracing::warn!("dma-buf export of {len} bytes failed: {e}");
            reason = pinmethod::export_failed(plan, &e.to_string()).reason;
        }
        mem.pin_reason = Some(reason);
        Ok(mem)
    }

    /// Exports this CUDA device memory as a dma-buf (`cuMemGetHandleForAddressRange`,
    /// `CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD`), kept until the memory drops; from then on
    /// [`DmaMemory::pin_method`] is [`PinMethod::DmaBuf`] and a kernel card pins it by
    /// importing the dma-buf. Returns the dma-buf's size in bytes: the length rounded up
    /// to 64 KiB (CUDA wants a multiple of the host page size; 64 KiB is one of every
    /// Linux page size, and the allocation is padded to hold it).
    ///
    /// Errors: [`Error::Unsupported`] (rule `capability`) for memory that is not CUDA
    /// device memory this library allocated; [`Error::Cuda`] when the driver refuses
    /// (e.g. `CUDA_ERROR_NOT_SUPPORTED` where `CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED` is
    /// 0).
    pub fn export_dmabuf(&mut self) -> Result<u64> {
        if let Some(d) = &self.dmabuf {
            return Ok(d.size);
        }
        let Backing::Cuda(alloc) = &self.backing else {
            return Err(Error::Unsupported {
                what: "exporting memory the library did not allocate from CUDA as a dma-buf",
                card: "CUDA".into(),
            });
        };
        if self.kind != MemoryKind::CudaDevice {
            return Err(Error::Unsupported {
                what: "exporting page-locked host memory as a dma-buf (pin it as host pages)",
                card: "CUDA".into(),
            });
        }
        let CudaProbe::Ready(ctx) = sys::cuda() else {
            return Err(Error::Cuda("device memory without a CUDA context".into()));
        };
        let size = (alloc.len() as u64).next_multiple_of(sys::CUDA_ALIGN as u64);
        #[allow(unsafe_code)]
        // SAFETY: `alloc.addr() .. + size` lies inside the allocation, which `CudaAlloc`
        // pads to hold `len` rounded up to CUDA_ALIGN from its aligned address, and which
        // `self` owns; the descriptor
        // is kept in `self` and closed before the allocation is freed (field order).
        let fd =
            unsafe { sys::cuda_export_dmabuf(ctx, alloc.addr(), size) }.map_err(Error::Cuda)?;
        self.dmabuf = Some(DmaBufExport { fd, size });
        Ok(size)
    }

    /// This memory with `fd` standing in for the dma-buf a GPU would export (tests on
    /// machines without a GPU).
    #[cfg(test)]
    pub(crate) fn with_dmabuf_double(mut self, fd: OwnedFd, size: u64) -> Self {
        self.dmabuf = Some(DmaBufExport { fd, size });
        self.pin_reason = Some("dma_buf: a test double of a GPU's export".into());
        self
    }

    /// The dma-buf exported for this memory, if any (see [`DmaMemory::export_dmabuf`]).
    pub fn dmabuf_fd(&self) -> Option<BorrowedFd<'_>> {
        self.dmabuf.as_ref().map(|d| d.fd.as_fd())
    }

    /// The size of that dma-buf in bytes, if any.
    pub fn dmabuf_size(&self) -> Option<u64> {
        self.dmabuf.as_ref().map(|d| d.size)
    }

    /// How a kernel card pins this memory: [`PinMethod::DmaBuf`] when a dma-buf was
    /// exported, [`PinMethod::NvidiaP2p`] for other CUDA device memory,
    /// [`PinMethod::Host`] for host and page-locked host memory.
    pub fn pin_method(&self) -> PinMethod {
        match (self.dmabuf.is_some(), self.kind) {
            (true, _) => PinMethod::DmaBuf,
            (false, MemoryKind::CudaDevice) => PinMethod::NvidiaP2p,
            (false, _) => PinMethod::Host,
        }
    }

    /// Why this memory is pinned with [`DmaMemory::pin_method`]: the plan's reason for
    /// memory from [`DmaMemory::for_pin`], otherwise the memory kind's only method.
    pub fn pin_reason(&self) -> String {
        match &self.pin_reason {
            Some(r) => r.clone(),
            None => format!("{} memory: {}", self.kind, self.pin_method()),
        }
    }

    /// The address a CUDA kernel reads these bytes at: the device pointer for
    /// `CudaDevice`, the GPU mapping of page-locked host memory for `CudaHost`; `None` for
    /// plain host memory (not mapped for the GPU).
    pub fn device_addr(&self) -> Option<u64> {
        match &self.backing {
            Backing::Cuda(a) => Some(a.device_addr()),
            Backing::Host(_) | Backing::Borrowed { .. } => None,
        }
    }

    /// Where the bytes live.
    pub fn kind(&self) -> MemoryKind {
        self.kind
    }

    /// Start address (host VA or CUDA device pointer).
    pub fn addr(&self) -> u64 {
        match &self.backing {
            Backing::Host(h) => h.addr(),
            Backing::Cuda(c) => c.addr(),
            Backing::Borrowed { addr, .. } => *addr,
        }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        match &self.backing {
            Backing::Host(h) => h.len(),
            Backing::Cuda(c) => c.len(),
            Backing::Borrowed { len, .. } => *len,
        }
    }

    /// Always false: a `DmaMemory` is never empty.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The plain description a back-end pins.
    pub fn region(&self) -> DmaRegion {
        DmaRegion {
            addr: self.addr(),
            len: self.len() as u64,
            kind: self.kind,
        }
    }

    /// The bytes, when the CPU can address them in place (host memory, and
    /// page-locked `CudaHost` memory); `None` for CUDA device memory and for borrowed
    /// memory ([`DmaMemory::borrowed`]: its owner reads it).
    pub fn as_slice(&self) -> Option<&[u8]> {
        match &self.backing {
            Backing::Host(h) => Some(h.as_slice()),
            Backing::Cuda(c) => c.host_slice(),
            Backing::Borrowed { .. } => None,
        }
    }

    /// Copies `dst.len()` bytes from `offset` into host memory: a plain copy for host
    /// memory, a device-to-host copy (`cuMemcpyDtoH`) for CUDA device memory.
    ///
    /// Call it only while no DMA writes the same bytes (the frame ring's entry states
    /// guarantee this). Errors: [`Error::BufferBounds`], [`Error::Cuda`].
    pub fn copy_to_host(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        #[allow(unsafe_code)]
        // SAFETY: `self` owns the allocation for the whole call (borrowed memory: the
        // contract of `DmaMemory::borrowed` keeps it allocated). Safe code reaches a
        // `DmaMemory` only while it is not pinned (a `PinnedBuffer` hands its memory out
        // through `unsafe fn`s whose callers promise no C2H runs), so nothing writes it.
        unsafe {
            read_region(&self.region(), offset, dst)
        }
    }

    /// The bytes, mutable, when the CPU can address them in place (host memory, and
    /// page-locked `CudaHost` memory: a path B staging buffer); `None` for CUDA device
    /// memory.
    pub fn as_mut_slice(&mut self) -> Option<&mut [u8]> {
        match &mut self.backing {
            Backing::Host(h) => Some(h.as_mut_slice()),
            Backing::Cuda(c) => c.host_slice_mut(),
            Backing::Borrowed { .. } => None,
        }
    }
}

/// Copies `src` into a pinned region at `offset`: what a back-end that moves bytes with
/// the CPU does for a C2H (the simulated card). Errors: [`Error::BufferBounds`] when
/// `offset + src.len()` reaches past the region (checked), [`Error::Cuda`].
///
/// # Safety
/// `region` must describe memory that stays allocated for the whole call and that no
/// Rust reference reads or writes meanwhile: a back-end calls this between
/// [`crate::Backend::pin`] and the end of the matching `unpin`, holding the pin's lock so
/// that `unpin` waits for the copy.
#[allow(unsafe_code)]
pub(crate) unsafe fn write_region(region: &DmaRegion, offset: u64, src: &[u8]) -> Result<()> {
    check_inside(region, offset, src.len() as u64)?;
    let addr = region.addr + offset;
    match region.kind {
        MemoryKind::Host | MemoryKind::CudaHost => {
            #[allow(unsafe_code)]
            // SAFETY: the range is inside the region (checked above), which the caller
            // keeps allocated and unaliased for the call (this function's contract).
            unsafe {
                sys::copy_to_host_addr(addr, src)
            };
            Ok(())
        }
        MemoryKind::CudaDevice => {
            let CudaProbe::Ready(ctx) = sys::cuda() else {
                return Err(Error::Cuda("device memory without a CUDA context".into()));
            };
            #[allow(unsafe_code)]
            // SAFETY: as above, for device memory of this process's context.
            unsafe { sys::cuda_htod(ctx, addr, src) }.map_err(Error::Cuda)
        }
    }
}

/// Copies from a pinned region at `offset` into `dst` (an H2C by the CPU); errors as
/// [`write_region`].
///
/// # Safety
/// As [`write_region`]: the region stays allocated for the call and nothing writes it.
#[allow(unsafe_code)]
pub(crate) unsafe fn read_region(region: &DmaRegion, offset: u64, dst: &mut [u8]) -> Result<()> {
    check_inside(region, offset, dst.len() as u64)?;
    let addr = region.addr + offset;
    match region.kind {
        MemoryKind::Host | MemoryKind::CudaHost => {
            #[allow(unsafe_code)]
            // SAFETY: the range is inside the region (checked above), which the caller
            // keeps allocated with no writer for the call (this function's contract).
            unsafe {
                sys::copy_from_host_addr(addr, dst)
            };
            Ok(())
        }
        MemoryKind::CudaDevice => {
            let CudaProbe::Ready(ctx) = sys::cuda() else {
                return Err(Error::Cuda("device memory without a CUDA context".into()));
            };
            #[allow(unsafe_code)]
            // SAFETY: as above, for device memory of this process's context.
            unsafe { sys::cuda_dtoh(ctx, dst, addr) }.map_err(Error::Cuda)
        }
    }
}

/// `offset .. offset + len` inside `region` (relative to its start), or
/// [`Error::BufferBounds`]: the one buffer-bounds rule of the library and its back-ends.
pub fn check_inside(region: &DmaRegion, offset: u64, len: u64) -> Result<()> {
    match offset.checked_add(len) {
        Some(end) if end <= region.len => Ok(()),
        _ => Err(Error::BufferBounds {
            offset,
            len,
            buffer_len: region.len,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_memory_is_aligned_and_zeroed() {
        let m = DmaMemory::host(3 * 4096, 65536).unwrap();
        assert_eq!(m.addr() % 65536, 0);
        assert_eq!(m.len(), 3 * 4096);
        assert!(m.as_slice().unwrap().iter().all(|&b| b == 0));
        assert_eq!(m.kind(), MemoryKind::Host);
    }

    #[test]
    fn zero_length_is_refused() {
        assert_eq!(
            DmaMemory::host(0, 4096).unwrap_err().rule(),
            "length-nonzero"
        );
    }

    #[test]
    fn region_contains_and_overlaps() {
        let r = DmaRegion {
            addr: 0x1000,
            len: 0x1000,
            kind: MemoryKind::Host,
        };
        assert!(r.contains(0x1000, 0x1000));
        assert!(!r.contains(0x1000, 0x1001));
        assert!(!r.contains(0xfff, 1));
        assert!(!r.contains(u64::MAX, 2));
        let s = DmaRegion {
            addr: 0x1fff,
            len: 1,
            kind: MemoryKind::Host,
        };
        assert!(r.overlaps(&s));
        let t = DmaRegion {
            addr: 0x2000,
            len: 1,
            kind: MemoryKind::Host,
        };
        assert!(!r.overlaps(&t));
    }

    #[test]
    fn region_copies_check_bounds() {
        let m = DmaMemory::host(4096, 4096).unwrap();
        let r = m.region();
        // SAFETY: `m` is alive and not borrowed during the copies.
        #[allow(unsafe_code)]
        unsafe {
            write_region(&r, 4000, &[7u8; 96]).unwrap();
            let mut back = [0u8; 96];
            read_region(&r, 4000, &mut back).unwrap();
            assert_eq!(back, [7u8; 96]);
            assert_eq!(
                write_region(&r, 4001, &[0u8; 96]).unwrap_err().rule(),
                "buffer-bounds"
            );
        }
    }
}
