//! The reference report's published figures, and `--compare reference`.
//!
//! Owns: [`REFERENCE`], the one data table of every figure this tool compares against, and
//! [`Compare`] (ours beside the reference figure, with the ratio per cell and the platform
//! named). Must not: measure anything.
//!
//! Source: the reference report, the published test report of a production XDMA +
//! GPUDirect RDMA driver (what it is and which of its tables are compared: docs/bench.md,
//! "The reference report"), its §4 ("测试结果"). Each field cites its section. Sizes there
//! are binary ("1MB" is 1 048 576 bytes: its bandwidth rows are bytes / mean latency with
//! that size). Latency pairs are stored `[read, write]`; the report prints its
//! TransferMode tables (§4.2, §4.5.3) as Write / Read, and they are swapped into
//! `[read, write]` here.
//!
//! Ratios are ours ÷ reference for every metric: below 1 means a lower figure than the
//! reference's (faster for a latency, slower for a bandwidth).

/// A platform the reference report measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RefPlatform {
    /// Jetson Orin (§4.1–§4.4).
    Orin,
    /// x86 Xeon 8462Y + H100 PCIe (§4.5).
    Desktop,
}

/// One size of a latency table, µs, `[read, write]` per path.
#[derive(Debug)]
pub(crate) struct SizeRow {
    /// Transfer size, KiB.
    pub(crate) kib: u64,
    /// Path A (CPU DMA only), µs.
    pub(crate) a: [f64; 2],
    /// Path B (FPGA → CPU → GPU), µs.
    pub(crate) b: [f64; 2],
    /// Path C (GPU Direct), µs.
    pub(crate) c: [f64; 2],
}

/// One size of a bandwidth table, GB/s, `[read, write]` per path.
#[derive(Debug)]
pub(crate) struct BandwidthRow {
    /// Transfer size, KiB.
    pub(crate) kib: u64,
    /// Path A, GB/s.
    pub(crate) a: [f64; 2],
    /// Path B, GB/s.
    pub(crate) b: [f64; 2],
    /// Path C, GB/s.
    pub(crate) c: [f64; 2],
}

/// One size of a TransferMode table, µs, `[read, write]`.
#[derive(Debug)]
pub(crate) struct CompatRow {
    /// Transfer size, KiB.
    pub(crate) kib: u64,
    /// CPU mode, µs.
    pub(crate) cpu: [f64; 2],
    /// GPU_PINNED mode, µs.
    pub(crate) gpu: [f64; 2],
}

/// One column of a multi-buffer table.
#[derive(Debug)]
pub(crate) struct MultibufColumn {
    /// Mean latency, µs.
    pub(crate) mean_us: f64,
    /// Minimum latency, µs.
    pub(crate) min_us: f64,
    /// Maximum latency, µs.
    pub(crate) max_us: f64,
    /// Mean bandwidth, GB/s.
    pub(crate) gbps: f64,
    /// Equivalent frame rate, frames/s.
    pub(crate) fps: f64,
}

/// A multi-buffer comparison: 4 GPU buffers in rotation vs one, 100 × 1 MiB reads.
#[derive(Debug)]
pub(crate) struct Multibuf {
    /// Ring of 4 buffers.
    pub(crate) multi: MultibufColumn,
    /// One buffer.
    pub(crate) single: MultibufColumn,
    /// Multi ÷ single frame rate as printed.
    pub(crate) ratio: f64,
}

/// The 12-hour soak: 72 samples, 4 MiB, card addresses 0 … 2 GiB.
#[derive(Debug)]
pub(crate) struct Soak {
    /// Mean latency per path (A, B, C), `[read, write]`, µs.
    pub(crate) mean_us: [[f64; 2]; 3],
    /// Mean bandwidth per path (A, B, C), `[read, write]`, GB/s.
    pub(crate) gbps: [[f64; 2]; 3],
    /// Path C minimum sample, `[read, write]`, µs.
    pub(crate) c_min_us: [f64; 2],
    /// Path C maximum sample, `[read, write]`, µs.
    pub(crate) c_max_us: [f64; 2],
    /// Path C mean per third (0–4 h, 4–8 h, 8–12 h), `[read, write]`, µs.
    pub(crate) c_thirds_us: [[f64; 2]; 3],
    /// Board power per third, W (Orin only: the x86 run had no INA3221).
    pub(crate) power_thirds_w: Option<[f64; 3]>,
    /// Board power mean, min, max, W (Orin only).
    pub(crate) power_w: Option<[f64; 3]>,
    /// Standard deviation of GPU Direct latency over the 64 MiB-step address sweep, µs.
    pub(crate) sweep_std_us: f64,
}

/// The functional suite's figures.
#[derive(Debug)]
pub(crate) struct Quick {
    /// Pin time, µs.
    pub(crate) pin_us: f64,
    /// Unpin time, µs.
    pub(crate) unpin_us: f64,
    /// 1 MiB C2H read into GPU memory: µs and GB/s (x86 only).
    pub(crate) read_1m: Option<(f64, f64)>,
    /// 1 MiB H2C write from GPU memory: µs and GB/s (x86 only).
    pub(crate) write_1m: Option<(f64, f64)>,
    /// 10 × 1 MiB batch read: µs and GB/s (x86 only).
    pub(crate) batch_10m: Option<(f64, f64)>,
}

/// Everything the reference report published for one platform.
#[derive(Debug)]
pub(crate) struct RefData {
    /// Which platform.
    pub(crate) platform: RefPlatform,
    /// The platform as the reference report describes it.
    pub(crate) name: &'static str,
    /// The sections these figures come from.
    pub(crate) sections: &'static str,
    /// Multi-size latency, µs (§4.1 / §4.5.2).
    pub(crate) latency: [SizeRow; 6],
    /// Multi-size bandwidth, GB/s (§4.1 / §4.5.2).
    pub(crate) bandwidth: [BandwidthRow; 4],
    /// TransferMode compatibility, µs (§4.2 / §4.5.3).
    pub(crate) compat: [CompatRow; 6],
    /// Multi-buffer vs single buffer (§4.3 / §4.5.4).
    pub(crate) multibuf: Multibuf,
    /// 12-hour soak (§4.4 / §4.5.5).
    pub(crate) soak: Soak,
    /// Functional suite figures (§4.5.1; Orin's pin/unpin from §4.5.6).
    pub(crate) quick: Quick,
}

const fn row(kib: u64, a: [f64; 2], b: [f64; 2], c: [f64; 2]) -> SizeRow {
    SizeRow { kib, a, b, c }
}
const fn bw(kib: u64, a: [f64; 2], b: [f64; 2], c: [f64; 2]) -> BandwidthRow {
    BandwidthRow { kib, a, b, c }
}
/// Takes the reference report's Write / Read order and stores `[read, write]`.
const fn compat_wr(kib: u64, cpu_wr: [f64; 2], gpu_wr: [f64; 2]) -> CompatRow {
    CompatRow {
        kib,
        cpu: [cpu_wr[1], cpu_wr[0]],
        gpu: [gpu_wr[1], gpu_wr[0]],
    }
}
const fn mb(mean_us: f64, min_us: f64, max_us: f64, gbps: f64, fps: f64) -> MultibufColumn {
    MultibufColumn {
        mean_us,
        min_us,
        max_us,
        gbps,
        fps,
    }
}

/// The reference report's figures, both platforms. Every number below is copied from the
/// section named in its comment; nothing is derived.
pub(crate) const REFERENCE: [RefData; 2] = [
    RefData {
        platform: RefPlatform::Orin,
        name: "Jetson Orin (Tegra, integrated Ampere GPU, cudaHostAlloc memory), FPGA on PCIe Gen3 x4 (§2.1; §4.5.6 says Gen2 x4)",
        sections: "§4.1–§4.4, pin/unpin from §4.5.6",
        // §4.1 latency table (Read / Write, µs): CPU DMA only, FPGA→CPU→GPU, GPU Direct.
        latency: [
            row(4, [82.6, 58.4], [232.8, 86.2], [54.4, 45.4]),
            row(64, [87.8, 80.4], [122.4, 195.2], [70.2, 74.4]),
            row(512, [341.8, 301.6], [635.2, 740.2], [292.0, 243.4]),
            row(1024, [638.4, 574.6], [1016.0, 1219.2], [521.2, 412.6]),
            row(4096, [2398.0, 2102.8], [3417.6, 3522.2], [1773.6, 1487.0]),
            row(8192, [4888.2, 4250.0], [6564.8, 6507.6], [3557.4, 2951.2]),
        ],
        // §4.1 bandwidth table (Read / Write, GB/s).
        bandwidth: [
            bw(512, [1.53, 1.74], [0.83, 0.71], [1.80, 2.15]),
            bw(1024, [1.64, 1.82], [1.03, 0.86], [2.01, 2.54]),
            bw(4096, [1.75, 1.99], [1.23, 1.19], [2.36, 2.82]),
            bw(8192, [1.72, 1.97], [1.28, 1.29], [2.36, 2.84]),
        ],
        // §4.2 TransferMode table (printed Write / Read, µs): CPU mode, GPU_PINNED mode.
        compat: [
            compat_wr(4, [79.6, 65.4], [57.8, 51.8]),
            compat_wr(64, [140.4, 123.2], [69.8, 75.0]),
            compat_wr(256, [198.2, 210.6], [141.4, 155.2]),
            compat_wr(1024, [607.0, 677.8], [417.2, 487.6]),
            compat_wr(4096, [2183.2, 2516.2], [1491.8, 1781.4]),
            compat_wr(8192, [4279.4, 4977.4], [2954.4, 3541.0]),
        ],
        // §4.3: 4-frame rotation vs single buffer, 100 iterations, 1 MB frames.
        multibuf: Multibuf {
            multi: mb(501.7, 460.0, 1124.0, 2.09, 1993.0),
            single: mb(491.9, 455.0, 660.0, 2.13, 2033.0),
            ratio: 0.98,
        },
        // §4.4: 12 h, 72 samples, 4 MB; thirds and power from its trend table; address
        // sweep standard deviation from "地址空间一致性".
        soak: Soak {
            mean_us: [[2711.9, 2276.2], [3518.3, 3701.2], [1785.1, 1489.0]],
            gbps: [[1.55, 1.84], [1.19, 1.13], [2.35, 2.82]],
            c_min_us: [1749.6, 1461.2],
            c_max_us: [2008.0, 1554.6],
            c_thirds_us: [[1782.0, 1483.0], [1784.0, 1490.0], [1786.0, 1488.0]],
            power_thirds_w: Some([18.38, 18.65, 18.78]),
            power_w: Some([18.57, 18.23, 18.91]),
            sweep_std_us: 15.0,
        },
        // §4.5.6 platform summary: Orin pin ~53 µs, unpin ~17 µs (no 1 MB figures for Orin).
        quick: Quick {
            pin_us: 53.0,
            unpin_us: 17.0,
            read_1m: None,
            write_1m: None,
            batch_10m: None,
        },
    },
    RefData {
        platform: RefPlatform::Desktop,
        name: "x86 Intel Xeon Platinum 8462Y + NVIDIA H100 PCIe (cudaMalloc memory), FPGA on PCIe Gen3 x8 (§2.1)",
        sections: "§4.5.1–§4.5.5",
        // §4.5.2 latency table (Read / Write, µs).
        latency: [
            row(4, [15.2, 13.2], [29.8, 37.6], [12.8, 13.4]),
            row(64, [22.2, 21.8], [33.0, 36.8], [20.4, 22.0]),
            row(512, [94.2, 93.6], [118.8, 146.2], [82.2, 86.0]),
            row(1024, [175.0, 176.4], [220.8, 270.0], [152.2, 159.2]),
            row(4096, [672.8, 664.8], [912.0, 924.0], [574.8, 600.8]),
            row(8192, [1330.2, 1332.0], [1739.4, 1784.2], [1138.8, 1191.8]),
        ],
        // §4.5.2 bandwidth table (Read / Write, GB/s), "GPU Direct Handle" column for C.
        bandwidth: [
            bw(512, [5.57, 5.60], [4.41, 3.59], [6.38, 6.10]),
            bw(1024, [5.99, 5.94], [4.75, 3.88], [6.89, 6.59]),
            bw(4096, [6.23, 6.31], [4.60, 4.54], [7.30, 6.98]),
            bw(8192, [6.31, 6.30], [4.82, 4.70], [7.37, 7.04]),
        ],
        // §4.5.3 TransferMode table (printed Write / Read, µs).
        compat: [
            compat_wr(4, [13.2, 13.2], [12.2, 10.6]),
            compat_wr(64, [21.8, 21.2], [20.0, 18.4]),
            compat_wr(256, [52.2, 51.6], [47.4, 45.0]),
            compat_wr(1024, [174.0, 173.0], [157.6, 151.8]),
            compat_wr(4096, [661.4, 655.8], [596.6, 571.2]),
            compat_wr(8192, [1307.4, 1295.8], [1183.0, 1133.2]),
        ],
        // §4.5.4: 4-frame rotation vs single buffer, 100 iterations, 1 MB frames.
        multibuf: Multibuf {
            multi: mb(150.1, 149.0, 159.0, 6.985, 6661.0),
            single: mb(150.2, 149.0, 159.0, 6.981, 6658.0),
            ratio: 1.0005,
        },
        // §4.5.5: 12 h, 72 samples, 4 MB; no INA3221 on this machine.
        soak: Soak {
            mean_us: [[948.4, 869.8], [1671.6, 1967.1], [601.0, 620.4]],
            gbps: [[4.42, 4.82], [2.51, 2.13], [6.98, 6.76]],
            c_min_us: [596.8, 615.8],
            c_max_us: [711.2, 736.8],
            c_thirds_us: [[598.8, 617.6], [600.2, 619.8], [601.0, 621.2]],
            power_thirds_w: None,
            power_w: None,
            sweep_std_us: 8.0,
        },
        // §4.5.1 API functional check: Pin 45.0 µs, 1 MB ReadC2H 160.0 µs 6.55 GB/s,
        // WriteH2C 164.0 µs 6.39 GB/s, Unpin 17.0 µs, 10×ReadC2H 10 MB 1503.0 µs 6.98 GB/s.
        quick: Quick {
            pin_us: 45.0,
            unpin_us: 17.0,
            read_1m: Some((160.0, 6.55)),
            write_1m: Some((164.0, 6.39)),
            batch_10m: Some((1503.0, 6.98)),
        },
    },
];

impl RefPlatform {
    /// The reference report's figures for this platform.
    pub(crate) fn data(self) -> &'static RefData {
        REFERENCE
            .iter()
            .find(|d| d.platform == self)
            .expect("both platforms are in the table")
    }
}

impl RefData {
    /// The latency row for `bytes`, if the reference report measured that size.
    pub(crate) fn latency_at(&self, bytes: u64) -> Option<&SizeRow> {
        self.latency.iter().find(|r| r.kib * 1024 == bytes)
    }

    /// The bandwidth row for `bytes`, if the reference report published one.
    pub(crate) fn bandwidth_at(&self, bytes: u64) -> Option<&BandwidthRow> {
        self.bandwidth.iter().find(|r| r.kib * 1024 == bytes)
    }

    /// The TransferMode row for `bytes`, if the reference report measured that size.
    pub(crate) fn compat_at(&self, bytes: u64) -> Option<&CompatRow> {
        self.compat.iter().find(|r| r.kib * 1024 == bytes)
    }
}

/// One compared cell: ours beside the reference report's, and ours ÷ reference.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct CompareRow {
    /// What is compared, e.g. "C read 4 KiB mean".
    pub(crate) metric: String,
    /// Unit of both figures: "µs", "GB/s", "frames/s", "W" or "x".
    pub(crate) unit: String,
    /// Our figure; `None` when we could not measure it here (e.g. path B without GPU).
    pub(crate) ours: Option<f64>,
    /// The reference report's published figure.
    pub(crate) reference: f64,
    /// `ours / reference`; `None` when ours is missing.
    pub(crate) ratio: Option<f64>,
}

/// `--compare reference`: the platform compared against and every compared cell.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Compare {
    /// The reference platform, or `None` when no reference platform matches this card.
    pub(crate) platform: Option<RefPlatform>,
    /// The platform as the reference report describes it, or why nothing is compared.
    pub(crate) platform_name: String,
    /// The reference report's sections the figures come from.
    pub(crate) sections: String,
    /// How to read the ratio, and caveats of this comparison.
    pub(crate) notes: Vec<String>,
    /// The compared cells.
    pub(crate) rows: Vec<CompareRow>,
}

impl Compare {
    /// An empty comparison against `platform`.
    pub(crate) fn new(platform: Option<RefPlatform>, ours_sim: bool) -> Compare {
        let mut notes = vec!["ratio = ours ÷ reference: below 1 is a lower figure than the reference report's (faster for µs, slower for GB/s and frames/s)".to_string()];
        if ours_sim {
            notes.push("ours ran on the SIMULATED card, whose link model is fitted to these same reference tables (docs/simcard-calibration.md): ratios near 1 check the model, they do not measure hardware".into());
        }
        match platform {
            Some(p) => {
                let d = p.data();
                Compare {
                    platform: Some(p),
                    platform_name: d.name.to_string(),
                    sections: d.sections.to_string(),
                    notes,
                    rows: Vec::new(),
                }
            }
            None => {
                notes.push("no reference platform matches this card (link preset off?): pass --reference-platform orin|desktop to compare anyway".into());
                Compare {
                    platform: None,
                    platform_name: "none".into(),
                    sections: String::new(),
                    notes,
                    rows: Vec::new(),
                }
            }
        }
    }

    /// Adds a cell.
    pub(crate) fn row(
        &mut self,
        metric: impl Into<String>,
        unit: &str,
        ours: Option<f64>,
        reference: f64,
    ) {
        self.rows.push(CompareRow {
            metric: metric.into(),
            unit: unit.into(),
            ours,
            reference,
            ratio: ours.map(|o| o / reference),
        });
    }

    /// Adds a caveat.
    pub(crate) fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_bandwidth_rows_are_bytes_over_latency() {
        // The reference report's own consistency: its GB/s column is size / mean latency (±0.02 for
        // rounding), which is the rule this tool uses.
        for d in &REFERENCE {
            for bwr in &d.bandwidth {
                let lat = d.latency_at(bwr.kib * 1024).unwrap();
                for (lat_pair, bw_pair) in [(lat.a, bwr.a), (lat.b, bwr.b), (lat.c, bwr.c)] {
                    for i in 0..2 {
                        let g = (bwr.kib * 1024) as f64 / lat_pair[i] / 1e3;
                        assert!(
                            (g - bw_pair[i]).abs() < 0.03,
                            "{:?} {} KiB: {g} vs {}",
                            d.platform,
                            bwr.kib,
                            bw_pair[i]
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn compat_rows_are_stored_read_first() {
        // §4.2 4 KB: CPU "79.6 / 65.4" is Write / Read.
        let r = RefPlatform::Orin.data().compat_at(4096).unwrap();
        assert_eq!(r.cpu, [65.4, 79.6]);
    }
}
