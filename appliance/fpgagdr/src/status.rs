//! A card's identity and limits, as read once at open.
//!
//! Owns: [`CardStatus`], [`Platform`], [`Capabilities`], [`PcieLink`], [`PciAddress`].
//! Must not: know any back-end;
//! each back-end fills a [`CardStatus`] for [`crate::Card`] to check transfers against.

/// The platform a card sits on; it decides the pin alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Platform {
    /// Jetson (Tegra, unified memory): 4 KiB pin alignment.
    Tegra,
    /// x86 (or arm64 server) with a discrete GPU: 64 KiB GPU pages.
    Desktop,
    /// The simulated card (`fpgagdr_sim::SimCard`); it applies the alignment of the platform its
    /// link preset models.
    Sim,
}

impl Platform {
    /// Lower-case name: `"tegra"`, `"desktop"`, `"sim"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Tegra => "tegra",
            Platform::Desktop => "desktop",
            Platform::Sim => "sim",
        }
    }
}

/// What a card can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Capabilities {
    /// DMA straight into pinned GPU memory (path C).
    pub gpu_direct: bool,
    /// DMA into ordinary host memory (path A; `read`/`write` on the channel nodes).
    pub host_dma: bool,
    /// Completion by interrupt (otherwise by polling).
    pub interrupts: bool,
}

/// A card's identity and limits, read once at open.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CardStatus {
    /// Human-readable identity, e.g. `"SimCard (simulated XDMA card), link preset orin-gen3x4"`.
    pub name: String,
    /// Platform; [`Platform::Sim`] for the simulated card.
    pub platform: Platform,
    /// True for the simulated card (`fpgagdr_sim::SimCard`): no hardware is involved.
    pub simulated: bool,
    /// GPU page size in bytes (4096 on Tegra, 65536 on a discrete GPU).
    pub gpu_page_size: u64,
    /// Required alignment of a pinned buffer's address and length, in bytes.
    pub alignment: u64,
    /// Number of C2H channels (engines), at most 4 on XDMA (PG195).
    pub c2h_channels: u32,
    /// Number of H2C channels (engines), at most 4 on XDMA (PG195).
    pub h2c_channels: u32,
    /// Size of the card's memory (card address space), bytes. `u64::MAX` when the kernel
    /// module does not know it (its `card_size` parameter is 0): then only wrap-around is
    /// checked.
    pub card_memory_bytes: u64,
    /// What the card can do.
    pub capabilities: Capabilities,
}

/// A PCI function's address, `DDDD:BB:DD.F` as Linux writes it (`lspci -D`, sysfs):
/// domain (PCI segment), bus, device 0..=31, function 0..=7. Serialized as that text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct PciAddress {
    /// Domain (PCI segment group), 0..=0xfffe as the module reports it.
    pub domain: u16,
    /// Bus number.
    pub bus: u8,
    /// Device number, 0..=31.
    pub device: u8,
    /// Function number, 0..=7.
    pub function: u8,
}

impl PciAddress {
    /// The address in the kernel module's packing (`link_path_dev`): `(domain << 16) |
    /// (bus << 8) | devfn`, devfn = `device << 3 | function`.
    pub fn from_packed(packed: u32) -> PciAddress {
        let devfn = (packed & 0xff) as u8;
        PciAddress {
            domain: (packed >> 16) as u16,
            bus: (packed >> 8) as u8,
            device: devfn >> 3,
            function: devfn & 7,
        }
    }
}

impl std::fmt::Display for PciAddress {
    /// `0000:00:01.0`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}.{:x}",
            self.domain, self.bus, self.device, self.function
        )
    }
}

impl From<PciAddress> for String {
    fn from(a: PciAddress) -> String {
        a.to_string()
    }
}

impl TryFrom<String> for PciAddress {
    type Error = String;

    /// Parses `DDDD:BB:DD.F` (hexadecimal, as [`Display`](std::fmt::Display) writes it).
    /// Errors: a message naming the text and the form it must have.
    fn try_from(text: String) -> Result<PciAddress, String> {
        let bad = || format!("{text:?} is not a PCI address of the form DDDD:BB:DD.F (hex)");
        let (dbd, function) = text.rsplit_once('.').ok_or_else(bad)?;
        let mut parts = dbd.split(':');
        let (Some(domain), Some(bus), Some(device), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let hex8 = |s: &str| u8::from_str_radix(s, 16).map_err(|_| bad());
        let addr = PciAddress {
            domain: u16::from_str_radix(domain, 16).map_err(|_| bad())?,
            bus: hex8(bus)?,
            device: hex8(device)?,
            function: hex8(function)?,
        };
        if addr.device > 31 || addr.function > 7 {
            return Err(bad());
        }
        Ok(addr)
    }
}

/// A card's PCIe link as its function reports it: as negotiated (Link Status, Device
/// Control) and as capable (Link Capabilities), and the narrowest link on its path to the
/// root complex. Generations are numbered as the registers' speed fields (PCIe Base
/// Specification r6.0 §7.5.3.6–7.5.3.8): 1 = 2.5 GT/s … 6 = 64 GT/s. A zero in any field
/// means "not reported" (the function has no PCIe capability, or the module predates the
/// field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PcieLink {
    /// Negotiated generation (Current Link Speed), 1..=6; 0 unknown.
    pub gen_current: u32,
    /// Negotiated width in lanes (Negotiated Link Width); 0 unknown.
    pub width_current: u32,
    /// Highest generation the card supports (Max Link Speed); 0 unknown.
    pub gen_capable: u32,
    /// Widest link the card supports in lanes (Maximum Link Width); 0 unknown.
    pub width_capable: u32,
    /// Max_Payload_Size in bytes (Device Control), 128..=4096; 0 unknown.
    pub max_payload: u32,
    /// Max_Read_Request_Size in bytes (Device Control), 128..=4096; 0 unknown.
    pub max_read_req: u32,
    /// Generation of the narrowest link between the card and the root complex (Linux's
    /// `pcie_bandwidth_available()`: the card's own link and every upstream bridge's, the
    /// least bandwidth wins); 0 unknown. The card's own link is on the path, so this
    /// never carries more than it; it carries less when a switch or root port above the
    /// card trained narrower or slower.
    #[serde(default)]
    pub gen_path: u32,
    /// Width of that link in lanes; 0 unknown.
    #[serde(default)]
    pub width_path: u32,
    /// The device whose Link Status gave that link (the card itself, or a bridge above
    /// it; on a tie the one further up); `None` when unknown.
    #[serde(default)]
    pub path_limited_by: Option<PciAddress>,
    /// True when no hardware stands behind these figures: the simulated card states the
    /// link its preset models.
    pub simulated: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_addresses_unpack_print_and_parse() {
        // 0000:00:1c.4 — a typical x86 root port: devfn 0xe4 = device 0x1c, function 4.
        let a = PciAddress::from_packed(0x0000_00e4);
        assert_eq!((a.domain, a.bus, a.device, a.function), (0, 0, 0x1c, 4));
        assert_eq!(a.to_string(), "0000:00:1c.4");
        // Orin's C5 root port in domain 5, a switch port at bus 0x0a, device 2.
        assert_eq!(
            PciAddress::from_packed(0x0005_0000).to_string(),
            "0005:00:00.0"
        );
        assert_eq!(
            PciAddress::from_packed(0xfffe_0a10).to_string(),
            "fffe:0a:02.0"
        );
        for text in ["0000:00:1c.4", "0005:00:00.0", "fffe:0a:02.0"] {
            let back = PciAddress::try_from(text.to_string()).unwrap();
            assert_eq!(back.to_string(), text);
        }
        for bad in [
            "",
            "00:1c.4",
            "0000:00:1c",
            "0000:00:20.0",
            "0000:00:1c.8",
            "x:00:00.0",
        ] {
            let e = PciAddress::try_from(bad.to_string()).unwrap_err();
            assert!(e.contains("DDDD:BB:DD.F"), "{e}");
        }
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(json, "\"0000:00:1c.4\"");
        assert_eq!(serde_json::from_str::<PciAddress>(&json).unwrap(), a);
    }
}
