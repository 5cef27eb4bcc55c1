//! Link presets of the simulated card: how long a transfer takes on the platforms the
//! reference report measured (docs/bench.md, "The reference report").
//!
//! Owns: [`LinkPreset`], [`LinkModel`], [`PathCost`]. Must not: move bytes.
//!
//! Each figure is a weighted least-squares fit (weights 1/latency², so every size counts
//! by its relative error) of `latency = setup + bytes / bandwidth` to the six sizes
//! (4 KiB … 8 MiB) of the reference report's latency tables: §4.1 (Jetson Orin,
//! FPGA on PCIe Gen3 x4) and §4.5.2 (x86 + H100, FPGA on PCIe Gen3 x8), columns
//! "CPU DMA only" (path A) and "GPU Direct" (path C), read and write. The fit, its
//! residuals and the script are in `docs/simcard-calibration.md`.

use std::time::Duration;

use fpgagdr::{Direction, Platform};

/// Cost of one transfer on one path and direction: a fixed set-up time plus the bytes
/// at a sustained bandwidth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathCost {
    /// Per-transfer set-up time (descriptor fetch, doorbell, completion), µs.
    pub setup_us: f64,
    /// Sustained bandwidth, GB/s (10^9 bytes per second).
    pub gbps: f64,
}

impl PathCost {
    /// Modelled duration of a transfer of `bytes`.
    pub fn duration(&self, bytes: u64) -> Duration {
        Duration::from_secs_f64(self.setup_us * 1e-6 + bytes as f64 / (self.gbps * 1e9))
    }
}

/// Costs for both paths and directions of one platform.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkModel {
    /// Card → pinned GPU buffer (path C), read.
    pub gpu_c2h: PathCost,
    /// Pinned GPU buffer → card (path C), write.
    pub gpu_h2c: PathCost,
    /// Card → host memory (path A), read.
    pub host_c2h: PathCost,
    /// Host memory → card (path A), write.
    pub host_h2c: PathCost,
}

impl LinkModel {
    /// The cost of a transfer in `dir`, to GPU-pinned memory (`gpu`) or host memory.
    pub fn cost(&self, dir: Direction, gpu: bool) -> PathCost {
        match (dir, gpu) {
            (Direction::C2H, true) => self.gpu_c2h,
            (Direction::H2C, true) => self.gpu_h2c,
            (Direction::C2H, false) => self.host_c2h,
            (Direction::H2C, false) => self.host_h2c,
        }
    }
}

/// Which platform the simulated card pretends to sit on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum LinkPreset {
    /// Jetson Orin with the FPGA on PCIe Gen3 x4 (reference report §4.1); 4 KiB pin alignment.
    #[default]
    OrinGen3x4,
    /// x86 + discrete GPU with the FPGA on PCIe Gen3 x8 (reference report §4.5.2); 64 KiB
    /// GPU pages.
    X86Gen3x8,
    /// No link model: transfers take only the time of the copy (for measuring the
    /// library's own overhead). Keeps the Orin alignment rules.
    Off,
}

impl LinkPreset {
    /// Name as in configs: `"orin-gen3x4"`, `"x86-gen3x8"`, `"off"`.
    pub fn as_str(self) -> &'static str {
        match self {
            LinkPreset::OrinGen3x4 => "orin-gen3x4",
            LinkPreset::X86Gen3x8 => "x86-gen3x8",
            LinkPreset::Off => "off",
        }
    }

    /// The platform whose pinning rules the simulated card applies.
    pub fn emulates(self) -> Platform {
        match self {
            LinkPreset::OrinGen3x4 | LinkPreset::Off => Platform::Tegra,
            LinkPreset::X86Gen3x8 => Platform::Desktop,
        }
    }

    /// The PCIe link this preset states (marked simulated): the reference report's Orin
    /// card on Gen3 x4 and its desktop card on Gen3 x8, both with MPS 256 and MRRS 512
    /// (the values Orin's root port and common x86 root ports set; the reference report does
    /// not state them); `None` for [`LinkPreset::Off`], which models no link. No path
    /// above the card is modelled: the path fields are 0 (unknown).
    pub fn pcie_link(self) -> Option<fpgagdr::PcieLink> {
        let link = |gen_, width| fpgagdr::PcieLink {
            gen_current: gen_,
            width_current: width,
            gen_capable: gen_,
            width_capable: width,
            max_payload: 256,
            max_read_req: 512,
            // The presets model the card's own link; no switch or narrower port above.
            gen_path: 0,
            width_path: 0,
            path_limited_by: None,
            simulated: true,
        };
        match self {
            LinkPreset::OrinGen3x4 => Some(link(3, 4)),
            LinkPreset::X86Gen3x8 => Some(link(3, 8)),
            LinkPreset::Off => None,
        }
    }

    /// Frame slots the simulated sensor cycles through in card memory on this link
    /// (`SLOT_COUNT` of docs/card-protocol.md): 16 on [`LinkPreset::X86Gen3x8`], 4
    /// otherwise. A free-running sensor keeps a frame only until the frame `slots`
    /// later overwrites it, so the slots bound how late the host may pick a frame up.
    /// At the Gen3 x8 card's 6,661 frames/s of 1 MiB (150 µs apart) 4 slots hold
    /// 600 µs, less than the pickup's p99 measured on H100 hosts (0.53–0.88 ms,
    /// docs/benchmarks.md §12.0); 16 hold 2.4 ms, as docs/card-protocol.md ("Sizing
    /// `SLOT_COUNT`") sizes such a card. At the Orin link's rate (about 2,000 frames/s
    /// of 1 MiB) 4 slots hold 2 ms. With the link model off there is no rate to
    /// size slots for; 4 are kept, so the tests of the library's own overhead keep
    /// small rings.
    pub fn sensor_slots(self) -> u64 {
        match self {
            LinkPreset::X86Gen3x8 => 16,
            LinkPreset::OrinGen3x4 | LinkPreset::Off => 4,
        }
    }

    /// The fitted costs, or `None` for [`LinkPreset::Off`].
    pub fn model(self) -> Option<LinkModel> {
        let c = |setup_us, gbps| PathCost { setup_us, gbps };
        match self {
            LinkPreset::OrinGen3x4 => Some(LinkModel {
                gpu_c2h: c(49.31, 2.347),
                gpu_h2c: c(46.16, 2.830),
                host_c2h: c(67.07, 1.849),
                host_h2c: c(53.58, 2.053),
            }),
            LinkPreset::X86Gen3x8 => Some(LinkModel {
                gpu_c2h: c(12.08, 7.482),
                gpu_h2c: c(12.82, 7.142),
                host_c2h: c(13.78, 6.493),
                host_h2c: c(12.31, 6.429),
            }),
            LinkPreset::Off => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference report's measured GPU Direct read latencies (µs) at 4 KiB … 8 MiB.
    const ORIN_C_READ: [f64; 6] = [54.4, 70.2, 292.0, 521.2, 1773.6, 3557.4];
    const X86_C_READ: [f64; 6] = [12.8, 20.4, 82.2, 152.2, 574.8, 1138.8];
    const SIZES_KIB: [u64; 6] = [4, 64, 512, 1024, 4096, 8192];

    fn worst_relative_error(preset: LinkPreset, seed: [f64; 6]) -> f64 {
        let m = preset.model().unwrap().cost(Direction::C2H, true);
        SIZES_KIB
            .iter()
            .zip(seed)
            .map(|(&kib, us)| (m.duration(kib * 1024).as_secs_f64() * 1e6 - us).abs() / us)
            .fold(0.0, f64::max)
    }

    #[test]
    fn presets_reproduce_the_reference_tables() {
        // Residuals of the fit as documented in docs/simcard-calibration.md.
        assert!(worst_relative_error(LinkPreset::OrinGen3x4, ORIN_C_READ) < 0.11);
        assert!(worst_relative_error(LinkPreset::X86Gen3x8, X86_C_READ) < 0.03);
    }

    #[test]
    fn gpu_direct_beats_host_dma_on_both_platforms() {
        for p in [LinkPreset::OrinGen3x4, LinkPreset::X86Gen3x8] {
            let m = p.model().unwrap();
            let mib = 1 << 20;
            assert!(
                m.cost(Direction::C2H, true).duration(mib)
                    < m.cost(Direction::C2H, false).duration(mib)
            );
        }
    }
}
