//! The card's PCIe link and the most payload it can carry, the yardstick every
//! throughput figure is set against.
//!
//! Owns: [`LinkReport`] (the link as negotiated and as capable, its warnings, its
//! payload limits per direction) and the one formula behind them, [`payload_limit_gbps`].
//! `docs/bench.md` (*The link and its payload limit*) writes the formula out with its
//! sources; the numbers here follow it term by term.
//!
//! Sources: PCIe Base Specification r6.0 §4.2.2 (8b/10b at 2.5 and 5 GT/s), §4.2.2.3
//! (128b/130b at 8–32 GT/s, the 4-byte STP token carrying the sequence number),
//! §4.2.3 (64 GT/s FLIT mode: 256-byte flits, 236 bytes of TLP), §2.2 (3DW/4DW TLP
//! headers), §3.6 (LCRC, DLLPs); Xilinx WP350 *Understanding Performance of PCI Express
//! Systems* (the per-TLP overhead worked the same way: 20 bytes with a 3DW header, 24
//! with a 4DW header at Gen1/2).

use fpgagdr::PcieLink;

/// Bytes of a DLLP on the wire (6 bytes + 2 of framing at 8b/10b; 8 bytes at 128b/130b).
pub(crate) const DLLP_BYTES: f64 = 8.0;
/// DLLPs (Ack and UpdateFC) we count per TLP of payload: one of each every four TLPs.
/// An assumption, not a rule of the specification (receivers coalesce Acks and credit
/// updates as they see fit); at MPS 128 it moves the limit by under 4 %.
pub(crate) const DLLPS_PER_TLP: f64 = 0.5;

/// Raw signalling rate of a generation, GT/s per lane (Link Status' speed encoding: 1 =
/// 2.5 GT/s … 6 = 64 GT/s); `None` for 0 or an encoding this tool does not know.
pub(crate) fn gt_per_s(generation: u32) -> Option<f64> {
    Some(match generation {
        1 => 2.5,
        2 => 5.0,
        3 => 8.0,
        4 => 16.0,
        5 => 32.0,
        6 => 64.0,
        _ => return None,
    })
}

/// Share of the raw bit rate that carries link-layer bytes: 8b/10b (Gen1, Gen2), 128b/130b
/// (Gen3–5), 1 for Gen6's PAM4 FLIT mode (its framing is inside the flit, see
/// [`tlp_overhead_bytes`]).
pub(crate) fn encoding_efficiency(generation: u32) -> f64 {
    match generation {
        1 | 2 => 8.0 / 10.0,
        3..=5 => 128.0 / 130.0,
        _ => 1.0,
    }
}

/// The two kinds of data TLP a DMA engine's payload rides in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tlp {
    /// Memory Write with a 4DW header (64-bit address): C2H, the card writes host or GPU
    /// memory; payload up to Max_Payload_Size.
    Write,
    /// Completion with Data, 3DW header: H2C, the card reads and the root port completes;
    /// payload up to min(Max_Payload_Size, Max_Read_Request_Size).
    Completion,
}

/// Bytes on the wire around one TLP's payload: header (16 for a 4DW Memory Write, 12 for a
/// 3DW Completion), sequence number (2), LCRC (4), framing (STP + END at 8b/10b = 2; the
/// 4-byte STP token at 128b/130b, which holds the sequence number, so the same 24 / 20);
/// in FLIT mode only the header (sequence, CRC and FEC are the flit's, counted by
/// [`flit_efficiency`]).
pub(crate) fn tlp_overhead_bytes(generation: u32, tlp: Tlp) -> f64 {
    let header = match tlp {
        Tlp::Write => 16.0,
        Tlp::Completion => 12.0,
    };
    if generation >= 6 {
        header
    } else {
        header + 2.0 + 4.0 + 2.0
    }
}

/// Share of a flit that carries TLP bytes: 236 of 256 in Gen6 FLIT mode, 1 otherwise.
pub(crate) fn flit_efficiency(generation: u32) -> f64 {
    if generation >= 6 { 236.0 / 256.0 } else { 1.0 }
}

/// The most payload a link can carry in one direction, GB/s (10^9 bytes/s):
///
/// `GT/s × width × encoding / 8 × flit × P / (P + overhead + DLLPs)`, where P is the
/// payload per TLP (MPS for writes, min(MPS, MRRS) for completions) and DLLPs =
/// [`DLLP_BYTES`] × [`DLLPS_PER_TLP`] (none in FLIT mode). `None` when the generation,
/// width or payload size is unknown (0).
pub(crate) fn payload_limit_gbps(
    generation: u32,
    width: u32,
    max_payload: u32,
    max_read_req: u32,
    tlp: Tlp,
) -> Option<f64> {
    let gts = gt_per_s(generation)?;
    if width == 0 || max_payload == 0 {
        return None;
    }
    let payload = match tlp {
        Tlp::Write => max_payload,
        Tlp::Completion if max_read_req == 0 => max_payload,
        Tlp::Completion => max_payload.min(max_read_req),
    } as f64;
    let dllp = if generation >= 6 {
        0.0
    } else {
        DLLP_BYTES * DLLPS_PER_TLP
    };
    let wire_gbps = gts * f64::from(width) * encoding_efficiency(generation) / 8.0;
    let tlp_share = payload / (payload + tlp_overhead_bytes(generation, tlp) + dllp);
    Some(wire_gbps * flit_efficiency(generation) * tlp_share)
}

/// `Gen3 x4 (8 GT/s)`; `unknown` parts say so.
pub(crate) fn describe(generation: u32, width: u32) -> String {
    let g = match gt_per_s(generation) {
        Some(gts) => format!("Gen{generation} ({gts} GT/s)"),
        None if generation == 0 => "Gen unknown".to_string(),
        None => format!("Gen? (speed code {generation})"),
    };
    let w = if width == 0 {
        "x?".to_string()
    } else {
        format!("x{width}")
    };
    format!("{g} {w}")
}

/// Max_Payload_Size assumed when the card reports none (a function without a PCIe
/// capability behind a bridge whose link is known): 128 B, Device Control's reset value
/// and the size every PCIe function supports (PCIe r6.0 §7.5.3.4). The smallest, so the
/// limit is the lowest the link can have and a share of it the highest.
pub(crate) const ASSUMED_MPS: u32 = 128;
/// Max_Read_Request_Size assumed then: 512 B, Device Control's reset value (§7.5.3.4).
pub(crate) const ASSUMED_MRRS: u32 = 512;

/// Which link the payload limits (and so every share) are computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum LimitFrom {
    /// The card's own negotiated link (the path is no narrower, or is not reported).
    Card,
    /// The narrowest link on the path to the root complex, narrower than the card's own
    /// (or the card reports none of its own).
    Path,
}

/// The link as every report states it.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct LinkReport {
    /// The registers' figures as the card (module or simulated card) reported them;
    /// `None` when it reported none.
    pub(crate) reported: Option<PcieLink>,
    /// One line for the card's own link: `Gen3 (8 GT/s) x4, MPS 256 B, MRRS 512 B
    /// (capable Gen3 (8 GT/s) x4)`, or why there is none.
    pub(crate) summary: String,
    /// One line for the narrowest link between the card and the root complex: `Gen3 (8
    /// GT/s) x4, narrowest at 0000:00:01.0`, or why there is none.
    pub(crate) path_summary: String,
    /// The link the limits are computed from; `None` when neither is known.
    pub(crate) limit_from: Option<LimitFrom>,
    /// True when the limits use [`ASSUMED_MPS`] and [`ASSUMED_MRRS`] because the card
    /// reported no payload sizes.
    pub(crate) payload_assumed: bool,
    /// One line: the limits per direction and where they come from, or why there are none.
    pub(crate) limit_summary: String,
    /// Payload limit of C2H (Memory Writes), GB/s; `None` when no link is known.
    pub(crate) c2h_limit_gbps: Option<f64>,
    /// Payload limit of H2C (read completions), GB/s; `None` when no link is known.
    pub(crate) h2c_limit_gbps: Option<f64>,
    /// Warnings: trained below capability (speed or width), a path narrower than the
    /// card, a simulated link.
    pub(crate) warnings: Vec<String>,
}

const NOT_REPORTED: &str = "not reported (the card's function has no PCIe capability, or \
                            the back-end cannot read it)";

impl LinkReport {
    /// The report of `link` (`None`: the card reported no link).
    pub(crate) fn of(link: Option<PcieLink>) -> LinkReport {
        let Some(l) = link else {
            return LinkReport {
                reported: None,
                summary: NOT_REPORTED.into(),
                path_summary: "not reported".into(),
                limit_from: None,
                payload_assumed: false,
                limit_summary: "none: no link is known, so no share of one is computed".into(),
                c2h_limit_gbps: None,
                h2c_limit_gbps: None,
                warnings: Vec::new(),
            };
        };
        let mut warnings = Vec::new();
        if l.gen_capable != 0 && l.gen_current != 0 && l.gen_current < l.gen_capable {
            warnings.push(format!(
                "link trained at Gen{} but the card is capable of Gen{}: check the slot, \
                 riser and BIOS link-speed setting",
                l.gen_current, l.gen_capable
            ));
        }
        if l.width_capable != 0 && l.width_current != 0 && l.width_current < l.width_capable {
            warnings.push(format!(
                "link trained at x{} but the card is capable of x{}: check the slot's \
                 electrical width and seating",
                l.width_current, l.width_capable
            ));
        }
        let size = |b: u32| {
            if b == 0 {
                "unknown".to_string()
            } else {
                format!("{b} B")
            }
        };
        let sim = if l.simulated { " [SIMULATED]" } else { "" };
        let own_known = l.gen_current != 0 || l.width_current != 0 || l.gen_capable != 0;
        let summary = if own_known {
            format!(
                "{}, MPS {}, MRRS {} (capable {}){sim}",
                describe(l.gen_current, l.width_current),
                size(l.max_payload),
                size(l.max_read_req),
                describe(l.gen_capable, l.width_capable),
            )
        } else {
            NOT_REPORTED.into()
        };
        let path_summary = if l.gen_path == 0 {
            "not reported (no link between the card and the root complex is known)".into()
        } else {
            let at = match l.path_limited_by {
                Some(a) => format!("narrowest at {a}"),
                None => "narrowest at a device whose address the module cannot give".into(),
            };
            format!("{}, {at}{sim}", describe(l.gen_path, l.width_path))
        };

        let payload_assumed = l.max_payload == 0;
        let (mps, mrrs) = if payload_assumed {
            (ASSUMED_MPS, ASSUMED_MRRS)
        } else {
            (l.max_payload, l.max_read_req)
        };
        let own = |t| payload_limit_gbps(l.gen_current, l.width_current, mps, mrrs, t);
        let path = |t| payload_limit_gbps(l.gen_path, l.width_path, mps, mrrs, t);
        // Both directions' limits scale with the link's bandwidth alike, so one
        // comparison (of the write limits) picks the narrower link for both.
        let limit_from = match (own(Tlp::Write), path(Tlp::Write)) {
            (Some(o), Some(p)) if p < o => Some(LimitFrom::Path),
            (Some(_), _) => Some(LimitFrom::Card),
            (None, Some(_)) => Some(LimitFrom::Path),
            (None, None) => None,
        };
        let lim = |t| match limit_from {
            Some(LimitFrom::Card) => own(t),
            Some(LimitFrom::Path) => path(t),
            None => None,
        };
        if let (Some(LimitFrom::Path), Some(o), Some(p)) =
            (limit_from, own(Tlp::Write), path(Tlp::Write))
        {
            let at = l
                .path_limited_by
                .map_or_else(|| "above the card".to_string(), |a| format!("at {a}"));
            warnings.push(format!(
                "the path limits the card: its own link is {} ({o:.2} GB/s of C2H payload) \
                 but the link {at} is {} ({p:.2} GB/s): a switch, riser or slot narrower or \
                 slower than the card; shares are of the path's limit",
                describe(l.gen_current, l.width_current),
                describe(l.gen_path, l.width_path),
            ));
        }
        if l.simulated {
            warnings.push(
                "SIMULATED link: stated by the simulated card (or the QEMU test card), \
                 not read from hardware"
                    .into(),
            );
        }
        let (c2h, h2c) = (lim(Tlp::Write), lim(Tlp::Completion));
        let limit_summary = match (limit_from, c2h, h2c) {
            (Some(from), Some(c), Some(h)) => {
                let which = match from {
                    LimitFrom::Card if l.gen_path != 0 => {
                        "the card's own link (the path is no narrower)"
                    }
                    LimitFrom::Card => "the card's own link",
                    LimitFrom::Path if own_known => "the path's link, narrower than the card's",
                    LimitFrom::Path => "the path's link (the card reports none of its own)",
                };
                let assumed = if payload_assumed {
                    format!(
                        " with MPS {ASSUMED_MPS} B and MRRS {ASSUMED_MRRS} B assumed (the \
                         card reports none; Device Control's reset values)"
                    )
                } else {
                    String::new()
                };
                format!("C2H {c:.2} GB/s, H2C {h:.2} GB/s of payload, from {which}{assumed}{sim}")
            }
            _ => "none: the link's generation or width is not known, so no share of it is \
                  computed"
                .into(),
        };
        LinkReport {
            reported: Some(l),
            summary,
            path_summary,
            limit_from,
            payload_assumed,
            limit_summary,
            c2h_limit_gbps: c2h,
            h2c_limit_gbps: h2c,
            warnings,
        }
    }

    /// The payload limit of the TLPs a direction's payload rides in (C2H reads:
    /// [`Tlp::Write`]; H2C writes: [`Tlp::Completion`]), GB/s.
    pub(crate) fn limit_gbps(&self, tlp: Tlp) -> Option<f64> {
        match tlp {
            Tlp::Write => self.c2h_limit_gbps,
            Tlp::Completion => self.h2c_limit_gbps,
        }
    }

    /// `gbps` as a percentage of that limit; `None` without a limit.
    pub(crate) fn share_pct(&self, tlp: Tlp, gbps: f64) -> Option<f64> {
        self.limit_gbps(tlp)
            .filter(|&l| l > 0.0)
            .map(|l| 100.0 * gbps / l)
    }

    /// The card's link, the path's and the limit on one line (the soak CSV's `link`
    /// column): `<summary>; path <path_summary>; limit <limit_summary>`.
    pub(crate) fn one_line(&self) -> String {
        format!(
            "{}; path {}; limit {}",
            self.summary, self.path_summary, self.limit_summary
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WIDTHS: [u32; 7] = [1, 2, 4, 8, 12, 16, 32];
    const MPS: [u32; 6] = [128, 256, 512, 1024, 2048, 4096];

    /// GB/s per lane after encoding, written out by hand from the specification's rates.
    fn lane_gbps(generation: u32) -> f64 {
        match generation {
            1 => 0.25,                      // 2.5 GT/s × 8/10 / 8
            2 => 0.5,                       // 5 GT/s × 8/10 / 8
            3 => 8.0 * 128.0 / 130.0 / 8.0, // 0.984 615…
            4 => 16.0 * 128.0 / 130.0 / 8.0,
            5 => 32.0 * 128.0 / 130.0 / 8.0,
            6 => 8.0 * 236.0 / 256.0, // 64 GT/s / 8, 236 of 256 flit bytes
            _ => unreachable!(),
        }
    }

    #[test]
    fn every_generation_width_and_payload_size() {
        for generation in 1..=6u32 {
            for width in WIDTHS {
                for mps in MPS {
                    let (wr_ovh, cpl_ovh, dllp) = if generation == 6 {
                        (16.0, 12.0, 0.0)
                    } else {
                        (24.0, 20.0, 4.0)
                    };
                    let p = f64::from(mps);
                    let raw = lane_gbps(generation) * f64::from(width);
                    let want_w = raw * p / (p + wr_ovh + dllp);
                    let got_w =
                        payload_limit_gbps(generation, width, mps, 4096, Tlp::Write).unwrap();
                    assert!(
                        (got_w - want_w).abs() < 1e-9,
                        "Gen{generation} x{width} MPS {mps}: {got_w} vs {want_w}"
                    );
                    // Completions are capped by the read request size.
                    let mrrs = 512;
                    let pc = f64::from(mps.min(mrrs));
                    let want_c = raw * pc / (pc + cpl_ovh + dllp);
                    let got_c =
                        payload_limit_gbps(generation, width, mps, mrrs, Tlp::Completion).unwrap();
                    assert!((got_c - want_c).abs() < 1e-9);
                    assert!(got_w < raw && got_c < raw, "overhead always costs");
                }
            }
        }
    }

    #[test]
    fn known_figures() {
        // Gen3 x4, MPS 256: 3.938 GB/s after encoding × 256 / 284 = 3.550 GB/s.
        let g3x4 = payload_limit_gbps(3, 4, 256, 512, Tlp::Write).unwrap();
        assert!((g3x4 - 3.5499).abs() < 1e-3, "{g3x4}");
        // Gen1 x1, MPS 128: 250 MB/s × 128 / 156 = 205 MB/s (WP350's ~ 86 % less DLLPs).
        let g1x1 = payload_limit_gbps(1, 1, 128, 128, Tlp::Write).unwrap();
        assert!((g1x1 - 0.20513).abs() < 1e-4, "{g1x1}");
        // The reference report's 2.84 GB/s cannot fit Gen2 x4 (at most 2 GB/s after encoding).
        assert!(payload_limit_gbps(2, 4, 4096, 4096, Tlp::Completion).unwrap() < 2.0);
        assert!(g3x4 > 2.84);
    }

    #[test]
    fn unknown_parts_give_no_limit() {
        assert_eq!(payload_limit_gbps(0, 4, 256, 512, Tlp::Write), None);
        assert_eq!(payload_limit_gbps(7, 4, 256, 512, Tlp::Write), None);
        assert_eq!(payload_limit_gbps(3, 0, 256, 512, Tlp::Write), None);
        assert_eq!(payload_limit_gbps(3, 4, 0, 512, Tlp::Write), None);
        assert_eq!(describe(0, 0), "Gen unknown x?");
        assert_eq!(describe(4, 16), "Gen4 (16 GT/s) x16");
    }

    fn link(gc: u32, wc: u32, gm: u32, wm: u32) -> PcieLink {
        PcieLink {
            gen_current: gc,
            width_current: wc,
            gen_capable: gm,
            width_capable: wm,
            max_payload: 256,
            max_read_req: 512,
            gen_path: 0,
            width_path: 0,
            path_limited_by: None,
            simulated: false,
        }
    }

    fn addr(text: &str) -> fpgagdr::PciAddress {
        fpgagdr::PciAddress::try_from(text.to_string()).unwrap()
    }

    #[test]
    fn the_narrower_of_the_cards_link_and_the_paths_is_the_limit() {
        // A Gen3 x8 card behind a root port that trained x4: the path limits it.
        let behind = PcieLink {
            gen_path: 3,
            width_path: 4,
            path_limited_by: Some(addr("0000:00:01.0")),
            ..link(3, 8, 3, 8)
        };
        let r = LinkReport::of(Some(behind));
        assert_eq!(r.limit_from, Some(LimitFrom::Path));
        let g3x4 = payload_limit_gbps(3, 4, 256, 512, Tlp::Write).unwrap();
        assert_eq!(r.c2h_limit_gbps, Some(g3x4));
        assert_eq!(
            r.h2c_limit_gbps,
            payload_limit_gbps(3, 4, 256, 512, Tlp::Completion)
        );
        assert_eq!(
            r.path_summary,
            "Gen3 (8 GT/s) x4, narrowest at 0000:00:01.0"
        );
        assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
        let w = &r.warnings[0];
        for part in [
            "the path limits the card",
            "Gen3 (8 GT/s) x8",
            "at 0000:00:01.0",
        ] {
            assert!(w.contains(part), "{part}: {w}");
        }
        assert!(
            r.limit_summary.contains("narrower than the card's"),
            "{}",
            r.limit_summary
        );
        // The share is of the narrower link: 2.84 GB/s is 80 % of Gen3 x4, not 40 % of x8.
        let share = r.share_pct(Tlp::Write, 2.84).unwrap();
        assert!((share - 80.0).abs() < 0.1, "{share}");

        // A slower (not narrower) link above: Gen3 x4 card, Gen2 x4 switch port.
        let slow = PcieLink {
            gen_path: 2,
            width_path: 4,
            path_limited_by: Some(addr("0000:02:03.0")),
            ..link(3, 4, 3, 4)
        };
        let r = LinkReport::of(Some(slow));
        assert_eq!(r.limit_from, Some(LimitFrom::Path));
        assert!(
            r.warnings[0].contains("Gen2 (5 GT/s) x4"),
            "{:?}",
            r.warnings
        );

        // The card directly on its root port: the port reports the same link (the
        // kernel names the port on a tie); no warning, the card's own link is the limit.
        let direct = PcieLink {
            gen_path: 3,
            width_path: 4,
            path_limited_by: Some(addr("0000:00:1c.4")),
            ..link(3, 4, 3, 4)
        };
        let r = LinkReport::of(Some(direct));
        assert_eq!(r.limit_from, Some(LimitFrom::Card));
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert!(
            r.limit_summary.contains("the path is no narrower"),
            "{}",
            r.limit_summary
        );

        // No path reported (an older module, the simulated card): the card's own link.
        let r = LinkReport::of(Some(link(3, 4, 3, 4)));
        assert_eq!(r.limit_from, Some(LimitFrom::Card));
        assert!(
            r.path_summary.starts_with("not reported"),
            "{}",
            r.path_summary
        );
        assert_eq!(r.c2h_limit_gbps, Some(g3x4));
    }

    #[test]
    fn a_card_without_its_own_link_is_measured_against_the_path() {
        // QEMU's edu: conventional PCI (no link, no MPS) behind a Gen3 x4 root port.
        let edu = PcieLink {
            gen_path: 3,
            width_path: 4,
            path_limited_by: Some(addr("0000:00:02.0")),
            max_payload: 0,
            max_read_req: 0,
            simulated: true,
            ..link(0, 0, 0, 0)
        };
        let r = LinkReport::of(Some(edu));
        assert!(r.summary.starts_with("not reported"), "{}", r.summary);
        assert_eq!(
            r.path_summary,
            "Gen3 (8 GT/s) x4, narrowest at 0000:00:02.0 [SIMULATED]"
        );
        assert_eq!(r.limit_from, Some(LimitFrom::Path));
        assert!(r.payload_assumed);
        assert_eq!(
            r.c2h_limit_gbps,
            payload_limit_gbps(3, 4, ASSUMED_MPS, ASSUMED_MRRS, Tlp::Write)
        );
        // MPS 128: 3.938 × 128 ÷ 156 = 3.231 GB/s.
        assert!((r.c2h_limit_gbps.unwrap() - 3.2315).abs() < 1e-3);
        assert!(r.limit_summary.contains("MPS 128 B and MRRS 512 B assumed"));
        // Nothing but the simulated mark to warn about: no own link to be narrower than.
        assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
        assert!(r.warnings[0].starts_with("SIMULATED"));
        assert!(
            r.one_line().contains("; path Gen3 (8 GT/s) x4"),
            "{}",
            r.one_line()
        );

        // The path's device unknown (a domain the module cannot pack).
        let r = LinkReport::of(Some(PcieLink {
            path_limited_by: None,
            ..edu
        }));
        assert!(r.path_summary.contains("cannot give"), "{}", r.path_summary);
        assert_eq!(r.limit_from, Some(LimitFrom::Path));
    }

    #[test]
    fn downtrained_links_are_warned_about() {
        let ok = LinkReport::of(Some(link(3, 4, 3, 4)));
        assert!(ok.warnings.is_empty(), "{:?}", ok.warnings);
        assert_eq!(
            ok.summary,
            "Gen3 (8 GT/s) x4, MPS 256 B, MRRS 512 B (capable Gen3 (8 GT/s) x4)"
        );
        let slow = LinkReport::of(Some(link(1, 4, 3, 4)));
        assert!(
            slow.warnings[0].contains("trained at Gen1"),
            "{:?}",
            slow.warnings
        );
        let narrow = LinkReport::of(Some(link(3, 1, 3, 8)));
        assert!(narrow.warnings[0].contains("x1"), "{:?}", narrow.warnings);
        let none = LinkReport::of(None);
        assert!(none.c2h_limit_gbps.is_none() && none.summary.contains("not reported"));
        let sim = LinkReport::of(Some(PcieLink {
            simulated: true,
            ..link(3, 4, 3, 4)
        }));
        assert!(sim.summary.ends_with("[SIMULATED]"));
        let share = ok.share_pct(Tlp::Write, 2.84).unwrap();
        assert!((share - 80.0).abs() < 0.1, "{share}");
    }
}
