//! How a frame ring's memory is pinned: the method, the choice a user makes, and the
//! platform's default.
//!
//! Owns: [`MemoryKind`] (where a buffer's bytes live), [`PinMethod`] (what the kernel module is asked to do: `pin_user_pages` on host
//! pages, `nvidia_p2p_get_pages`, or a dma-buf import), [`PinChoice`] (the config value
//! `card.pin_method`), [`GpuFacts`] (what the CUDA driver says about device 0) and
//! [`plan_pin`], the one rule that turns a choice and the facts into a [`PinPlan`]
//! (memory kind, method, and the reason shown in status).
//! Must not: allocate or pin (`memory.rs` allocates to a plan, the back-ends pin).
//! Neighbours: `sys.rs` below (the attribute queries), `memory.rs` above (allocates to
//! a plan).
//!
//! The defaults follow NVIDIA's deprecation of `nvidia_p2p` (CUDA 13.0, removal planned
//! for CUDA 14.0) and its GPUDirect RDMA guide for Jetson Thor ("use Linux upstream
//! kernel APIs"): on an integrated GPU (Orin, Thor) the default is host pages
//! (`cuMemHostAlloc` memory pinned with `pin_user_pages`, no NVIDIA symbol), with
//! `nvidia_p2p` only as an explicit fallback for older L4T; on a discrete GPU
//! `nvidia_p2p` stays the default and dma-buf is a choice until it has run end to end
//! on hardware.

use std::fmt;

use crate::sys::{self, CudaProbe};

/// Where the bytes of a DMA buffer live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum MemoryKind {
    /// Ordinary page-aligned host memory (no CUDA driver, or CPU-path buffers).
    Host,
    /// Device memory of a discrete GPU (`cuMemAlloc`); not addressable by the CPU.
    CudaDevice,
    /// Page-locked, device-mapped host memory (`cuMemHostAlloc`), what Tegra's
    /// unified-memory pinning path needs.
    CudaHost,
}

impl MemoryKind {
    /// Short name: `"host"`, `"cuda_device"`, `"cuda_host"`.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryKind::Host => "host",
            MemoryKind::CudaDevice => "cuda_device",
            MemoryKind::CudaHost => "cuda_host",
        }
    }

    /// Whether the CPU can read the bytes in place (no device-to-host copy needed).
    pub fn host_accessible(self) -> bool {
        !matches!(self, MemoryKind::CudaDevice)
    }
}

impl fmt::Display for MemoryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the kernel module pins a buffer (the method PIN is asked for).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum PinMethod {
    /// Host pages: `pin_user_pages(FOLL_LONGTERM)` and the DMA API (`FPGAGDR_MEM_HOST`);
    /// plain host memory, or `cuMemHostAlloc` memory.
    Host,
    /// `nvidia_p2p_get_pages` on CUDA device memory (`FPGAGDR_MEM_NV_P2P`).
    NvidiaP2p,
    /// A dma-buf exported by CUDA (`cuMemGetHandleForAddressRange`), imported by the
    /// module (`FPGAGDR_MEM_DMABUF`).
    DmaBuf,
}

impl PinMethod {
    /// Short name: `"host"`, `"nvidia_p2p"`, `"dma_buf"`.
    pub fn as_str(self) -> &'static str {
        match self {
            PinMethod::Host => "host",
            PinMethod::NvidiaP2p => "nvidia_p2p",
            PinMethod::DmaBuf => "dma_buf",
        }
    }
}

impl fmt::Display for PinMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The pin method a user asks for (`card.pin_method` in the service's config).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum PinChoice {
    /// The platform's default: `host` on an integrated GPU (Orin, Thor), `nvidia_p2p`
    /// on a discrete GPU, `host` without CUDA.
    #[default]
    Auto,
    /// `nvidia_p2p` on CUDA device memory (deprecated by NVIDIA from CUDA 13.0; the
    /// fallback for older L4T on Jetson).
    NvidiaP2p,
    /// A CUDA dma-buf when `CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED` is set, otherwise
    /// `nvidia_p2p` (discrete) or `host` (integrated), with the reason in status.
    DmaBuf,
    /// Host pages (`cuMemHostAlloc` memory where CUDA is, plain host memory otherwise).
    Host,
}

impl PinChoice {
    /// Name as in the config: `"auto"`, `"nvidia_p2p"`, `"dma_buf"`, `"host"`.
    pub fn as_str(self) -> &'static str {
        match self {
            PinChoice::Auto => "auto",
            PinChoice::NvidiaP2p => "nvidia_p2p",
            PinChoice::DmaBuf => "dma_buf",
            PinChoice::Host => "host",
        }
    }
}

impl fmt::Display for PinChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the CUDA driver says about device 0, as [`plan_pin`] needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuFacts {
    /// No CUDA driver or no device; the string says why.
    NoCuda(String),
    /// A CUDA device 0.
    Cuda {
        /// The device's name (`cuDeviceGetName`).
        name: String,
        /// `CU_DEVICE_ATTRIBUTE_INTEGRATED` ≠ 0: the GPU shares memory with the CPU
        /// (Jetson Orin, Thor).
        integrated: bool,
        /// `CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED`, or the query's error.
        dma_buf_supported: Result<i32, String>,
    },
}

impl GpuFacts {
    /// Asks the CUDA driver (probed once per process; `FPGAGDR_NO_CUDA=1` says none).
    pub fn probe() -> GpuFacts {
        match sys::cuda() {
            CudaProbe::Absent(why) => GpuFacts::NoCuda(why.clone()),
            CudaProbe::Ready(ctx) => GpuFacts::Cuda {
                name: ctx.name().unwrap_or_else(|_| "CUDA device 0".into()),
                integrated: sys::cuda_integrated(ctx).unwrap_or(false),
                dma_buf_supported: sys::cuda_dma_buf_supported(ctx),
            },
        }
    }
}

/// The outcome of [`plan_pin`]: which memory to allocate, how to pin it, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinPlan {
    /// The memory to allocate.
    pub memory: MemoryKind,
    /// How to pin it.
    pub method: PinMethod,
    /// Why, in words, for status and logs (e.g. `"dma_buf:
    /// CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED=0, fell back to nvidia_p2p"`).
    pub reason: String,
}

/// The memory kind, pin method and reason for `choice` on a GPU described by `gpu`.
///
/// Never fails: a method the platform cannot give falls back (to `nvidia_p2p` on a
/// discrete GPU, to host pages on an integrated one or without CUDA) and the reason
/// says so.
pub fn plan_pin(choice: PinChoice, gpu: &GpuFacts) -> PinPlan {
    let plan = |memory, method, reason: String| PinPlan {
        memory,
        method,
        reason,
    };
    let (name, integrated, dma_buf) = match gpu {
        GpuFacts::NoCuda(why) => {
            let reason = match choice {
                PinChoice::Auto => format!("no CUDA ({why}): host memory, pinned as host pages"),
                PinChoice::Host => format!("configured: host memory, no CUDA ({why})"),
                PinChoice::NvidiaP2p | PinChoice::DmaBuf => {
                    format!("{choice}: no CUDA ({why}), fell back to host")
                }
            };
            return plan(MemoryKind::Host, PinMethod::Host, reason);
        }
        GpuFacts::Cuda {
            name,
            integrated,
            dma_buf_supported,
        } => (name, *integrated, dma_buf_supported),
    };
    // The platform's default, and what a refused dma-buf falls back to.
    let default = |reason: String| {
        if integrated {
            plan(MemoryKind::CudaHost, PinMethod::Host, reason)
        } else {
            plan(MemoryKind::CudaDevice, PinMethod::NvidiaP2p, reason)
        }
    };
    match choice {
        PinChoice::Auto if integrated => default(format!(
            "{name} is integrated (Tegra): cuMemHostAlloc memory pinned with \
             pin_user_pages, no NVIDIA symbol (the default; nvidia_p2p is deprecated from \
             CUDA 13.0)"
        )),
        PinChoice::Auto => default(format!(
            "{name} is a discrete GPU: nvidia_p2p (the default; dma_buf is offered as \
             card.pin_method)"
        )),
        PinChoice::Host => plan(
            MemoryKind::CudaHost,
            PinMethod::Host,
            format!(
                "configured: cuMemHostAlloc memory pinned as host pages{}",
                if integrated {
                    ""
                } else {
                    "; the GPU reads it over PCIe"
                }
            ),
        ),
        PinChoice::NvidiaP2p => plan(
            MemoryKind::CudaDevice,
            PinMethod::NvidiaP2p,
            if integrated {
                "configured: nvidia_p2p on cuMemAlloc memory (the explicit fallback for \
                 older L4T)"
                    .into()
            } else {
                "configured: nvidia_p2p on cuMemAlloc memory".into()
            },
        ),
        PinChoice::DmaBuf => {
            let fallback = if integrated { "host" } else { "nvidia_p2p" };
            match dma_buf {
                Ok(v) if *v != 0 => plan(
                    MemoryKind::CudaDevice,
                    PinMethod::DmaBuf,
                    format!("dma_buf: CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED={v}"),
                ),
                Ok(v) => default(format!(
                    "dma_buf: CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED={v}, fell back to {fallback}"
                )),
                Err(e) => default(format!(
                    "dma_buf: CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED unreadable ({e}), fell \
                     back to {fallback}"
                )),
            }
        }
    }
}

/// The reason for falling back when the export itself failed although the attribute was
/// set (what [`crate::DmaMemory::for_pin`] records).
pub(crate) fn export_failed(plan: &PinPlan, why: &str) -> PinPlan {
    PinPlan {
        memory: MemoryKind::CudaDevice,
        method: PinMethod::NvidiaP2p,
        reason: format!(
            "{}; the export failed ({why}), fell back to nvidia_p2p",
            plan.reason
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn discrete(attr: Result<i32, String>) -> GpuFacts {
        GpuFacts::Cuda {
            name: "NVIDIA H200".into(),
            integrated: false,
            dma_buf_supported: attr,
        }
    }

    fn integrated(attr: Result<i32, String>) -> GpuFacts {
        GpuFacts::Cuda {
            name: "Orin".into(),
            integrated: true,
            dma_buf_supported: attr,
        }
    }

    fn plan(choice: PinChoice, gpu: &GpuFacts) -> (MemoryKind, PinMethod, String) {
        let p = plan_pin(choice, gpu);
        (p.memory, p.method, p.reason)
    }

    #[test]
    fn auto_is_host_pages_on_tegra_and_nvidia_p2p_on_a_discrete_gpu() {
        let (m, k, why) = plan(PinChoice::Auto, &integrated(Ok(0)));
        assert_eq!((m, k), (MemoryKind::CudaHost, PinMethod::Host));
        assert!(
            why.contains("integrated") && why.contains("pin_user_pages"),
            "{why}"
        );
        // Even where the integrated GPU offers dma-buf, auto stays on host pages.
        let (m, k, _) = plan(PinChoice::Auto, &integrated(Ok(1)));
        assert_eq!((m, k), (MemoryKind::CudaHost, PinMethod::Host));
        let (m, k, why) = plan(PinChoice::Auto, &discrete(Ok(1)));
        assert_eq!((m, k), (MemoryKind::CudaDevice, PinMethod::NvidiaP2p));
        assert!(why.contains("discrete") && why.contains("dma_buf"), "{why}");
        let (m, k, why) = plan(PinChoice::Auto, &GpuFacts::NoCuda("no libcuda".into()));
        assert_eq!((m, k), (MemoryKind::Host, PinMethod::Host));
        assert!(why.contains("no libcuda"), "{why}");
    }

    #[test]
    fn dma_buf_is_taken_when_the_attribute_is_set_and_falls_back_when_not() {
        let (m, k, why) = plan(PinChoice::DmaBuf, &discrete(Ok(1)));
        assert_eq!((m, k), (MemoryKind::CudaDevice, PinMethod::DmaBuf));
        assert_eq!(why, "dma_buf: CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED=1");
        let (m, k, why) = plan(PinChoice::DmaBuf, &discrete(Ok(0)));
        assert_eq!((m, k), (MemoryKind::CudaDevice, PinMethod::NvidiaP2p));
        assert_eq!(
            why,
            "dma_buf: CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED=0, fell back to nvidia_p2p"
        );
        let (_, k, why) = plan(
            PinChoice::DmaBuf,
            &discrete(Err("CUDA_ERROR_INVALID_VALUE".into())),
        );
        assert_eq!(k, PinMethod::NvidiaP2p);
        assert!(
            why.contains("CUDA_ERROR_INVALID_VALUE") && why.contains("fell back to nvidia_p2p"),
            "{why}"
        );
        // On Tegra the fallback is the platform's default, host pages.
        let (m, k, why) = plan(PinChoice::DmaBuf, &integrated(Ok(0)));
        assert_eq!((m, k), (MemoryKind::CudaHost, PinMethod::Host));
        assert_eq!(
            why,
            "dma_buf: CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED=0, fell back to host"
        );
        let (m, k, _) = plan(PinChoice::DmaBuf, &integrated(Ok(1)));
        assert_eq!((m, k), (MemoryKind::CudaDevice, PinMethod::DmaBuf));
    }

    #[test]
    fn explicit_choices_are_kept_where_cuda_is_and_fall_back_to_host_without_it() {
        let (m, k, why) = plan(PinChoice::NvidiaP2p, &integrated(Ok(0)));
        assert_eq!((m, k), (MemoryKind::CudaDevice, PinMethod::NvidiaP2p));
        assert!(
            why.contains("configured") && why.contains("older L4T"),
            "{why}"
        );
        let (m, k, _) = plan(PinChoice::NvidiaP2p, &discrete(Ok(1)));
        assert_eq!((m, k), (MemoryKind::CudaDevice, PinMethod::NvidiaP2p));
        let (m, k, why) = plan(PinChoice::Host, &discrete(Ok(1)));
        assert_eq!((m, k), (MemoryKind::CudaHost, PinMethod::Host));
        assert!(why.contains("cuMemHostAlloc"), "{why}");
        let none = GpuFacts::NoCuda("disabled by FPGAGDR_NO_CUDA=1".into());
        for choice in [PinChoice::NvidiaP2p, PinChoice::DmaBuf] {
            let (m, k, why) = plan(choice, &none);
            assert_eq!((m, k), (MemoryKind::Host, PinMethod::Host));
            assert_eq!(
                why,
                format!("{choice}: no CUDA (disabled by FPGAGDR_NO_CUDA=1), fell back to host")
            );
        }
        let (m, k, _) = plan(PinChoice::Host, &none);
        assert_eq!((m, k), (MemoryKind::Host, PinMethod::Host));
    }

    #[test]
    fn choices_read_and_print_as_in_the_config() {
        for c in [
            PinChoice::Auto,
            PinChoice::NvidiaP2p,
            PinChoice::DmaBuf,
            PinChoice::Host,
        ] {
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(json, format!("\"{c}\""));
            assert_eq!(serde_json::from_str::<PinChoice>(&json).unwrap(), c);
        }
        let e = serde_json::from_str::<PinChoice>("\"p2p\"")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown variant") && e.contains("dma_buf"),
            "{e}"
        );
    }
}
