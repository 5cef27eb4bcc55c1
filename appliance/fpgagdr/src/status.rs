//! A card's identity and limits, as read once at open.
//!
//! Owns: [`CardStatus`], [`Platform`], [`Capabilities`]. Must not: know any back-end;
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

/// A card's PCIe link as its function reports it: as negotiated (Link Status, Device
/// Control) and as capable (Link Capabilities). Generations are numbered as the
/// registers' speed fields (PCIe Base Specification r6.0 §7.5.3.6–7.5.3.8): 1 =
/// 2.5 GT/s … 6 = 64 GT/s. A zero in any field means "not reported" (the function has
/// no PCIe capability, or the module predates the field).
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
    /// True when no hardware stands behind these figures: the simulated card states the
    /// link its preset models.
    pub simulated: bool,
}
