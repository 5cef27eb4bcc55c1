//! GPU test: the library's discrete-GPU path exports its CUDA frame-ring memory as a
//! dma-buf (`cuMemGetHandleForAddressRange`) when `CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED`
//! is set, and falls back to `nvidia_p2p` (with the reason) when it is not. The kernel
//! module is not loaded on the GPU machine, so this tests what user space can: the
//! export, that the fd is a dma-buf (`/proc/self/fdinfo/<fd>` has `exp_name:`), its
//! size, that it is closed with the memory (counting `/proc/self/fd`), and the
//! fallback. It prints the figures (attribute values, `exp_name`, sizes) for the docs.
//!
//! One test function, so that nothing else in this process opens or closes descriptors
//! while it counts them. Without a CUDA driver it prints why it is skipped and passes.
//!
//! On a GPU machine without Rust: build here with
//! `cargo test -p fpgagdr --test gpu_dmabuf --no-run`, copy the binary there and run it
//! with `--nocapture`.

use std::io::{Seek, SeekFrom};

use cudarc::driver::sys::CUdevice_attribute;
use fpgagdr::{DmaMemory, GpuFacts, MemoryKind, PinChoice, PinMethod, plan_pin};

/// 64 KiB: what the library rounds a dma-buf export to (a multiple of every Linux page
/// size; CUDA requires host-page alignment of the range).
const EXPORT_UNIT: u64 = 64 << 10;

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// The `key:` line of `/proc/self/fdinfo/<fd>`, without the key.
fn fdinfo(fd: i32, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_string()))
}

#[test]
fn the_cuda_ring_exports_a_dma_buf_or_falls_back_to_nvidia_p2p() {
    use std::os::fd::AsRawFd;

    let facts = GpuFacts::probe();
    let GpuFacts::Cuda {
        name,
        integrated,
        dma_buf_supported,
    } = &facts
    else {
        eprintln!("skipped: no GPU here ({facts:?})");
        return;
    };
    let ctx = fpgagdr::cuda_context().expect("a CUDA context where the probe found one");
    let integrated_attr = ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_INTEGRATED);
    println!("device: {name}");
    println!("CU_DEVICE_ATTRIBUTE_INTEGRATED = {integrated_attr:?}");
    println!("CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = {dma_buf_supported:?}");

    let auto = plan_pin(PinChoice::Auto, &facts);
    println!("auto: {} / {} ({})", auto.memory, auto.method, auto.reason);
    if *integrated {
        assert_eq!(auto.method, PinMethod::Host);
    } else {
        assert_eq!(auto.method, PinMethod::NvidiaP2p);
    }

    // Not a multiple of 64 KiB, so that the rounding shows.
    let len = (3 << 20) + 4096;
    let want_size = (len as u64).next_multiple_of(EXPORT_UNIT);
    let plan = plan_pin(PinChoice::DmaBuf, &facts);
    println!(
        "dma_buf: {} / {} ({})",
        plan.memory, plan.method, plan.reason
    );
    if *dma_buf_supported == Ok(1) {
        assert_eq!(plan.method, PinMethod::DmaBuf);
        let before = open_fds();
        let mem = DmaMemory::for_pin(len, 65536, &plan).expect("CUDA memory");
        assert_eq!(mem.kind(), MemoryKind::CudaDevice);
        assert_eq!(
            mem.pin_method(),
            PinMethod::DmaBuf,
            "the export failed: {}",
            mem.pin_reason()
        );
        assert_eq!(open_fds(), before + 1, "one descriptor for the export");
        let fd = mem.dmabuf_fd().unwrap();
        let raw = fd.as_raw_fd();
        let exp_name = fdinfo(raw, "exp_name:");
        let info_size = fdinfo(raw, "size:");
        let link = std::fs::read_link(format!("/proc/self/fd/{raw}")).unwrap_or_default();
        let mut file = std::fs::File::from(fd.try_clone_to_owned().unwrap());
        let st_size = file.metadata().map(|m| m.len());
        let end = file.seek(SeekFrom::End(0));
        drop(file);
        println!(
            "export of {len} B at {:#x}: fd -> {}, exp_name: {exp_name:?}, fdinfo size: \
             {info_size:?}, fstat st_size: {st_size:?}, lseek(SEEK_END): {end:?}, \
             library size: {:?}",
            mem.addr(),
            link.display(),
            mem.dmabuf_size()
        );
        assert!(
            exp_name.as_deref().is_some_and(|n| !n.is_empty()),
            "fdinfo has no exp_name: the fd is not a dma-buf"
        );
        assert_eq!(mem.dmabuf_size(), Some(want_size));
        assert_eq!(info_size, Some(want_size.to_string()));
        assert_eq!(end.unwrap(), want_size);
        drop(mem);
        assert_eq!(open_fds(), before, "the dma-buf fd outlived its memory");
    } else {
        println!("the export is not tried: the attribute is not 1");
        assert_eq!(
            plan.method,
            if *integrated {
                PinMethod::Host
            } else {
                PinMethod::NvidiaP2p
            }
        );
    }

    // The attribute forced to 0: the plan, and memory allocated to it, fall back to
    // nvidia_p2p (host pages on an integrated GPU) and say why.
    let forced = GpuFacts::Cuda {
        name: name.clone(),
        integrated: *integrated,
        dma_buf_supported: Ok(0),
    };
    let plan = plan_pin(PinChoice::DmaBuf, &forced);
    let fallback = if *integrated { "host" } else { "nvidia_p2p" };
    assert_eq!(
        plan.reason,
        format!("dma_buf: CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED=0, fell back to {fallback}")
    );
    let before = open_fds();
    let mem = DmaMemory::for_pin(len, 65536, &plan).expect("CUDA memory");
    assert_eq!(mem.pin_method().as_str(), fallback);
    assert!(mem.dmabuf_fd().is_none());
    assert_eq!(mem.pin_reason(), plan.reason);
    println!(
        "forced CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED=0: {} memory, pinned by {} ({})",
        mem.kind(),
        mem.pin_method(),
        mem.pin_reason()
    );
    drop(mem);
    assert_eq!(open_fds(), before);
}
