//! # fpgagdr-sim — the simulated card
//!
//! An XDMA card in software, for machines with no FPGA: [`SimCard`] is a
//! [`fpgagdr::Backend`] that holds 2 GiB of card memory sparsely, copies every byte for
//! real and, unless its link model is off, makes each transfer last as long as the
//! reference report (docs/bench.md) measured on the platform its [`LinkPreset`] names.
//! [`SimSensor`] plays the FPGA's capture logic (a [`fpgagdr::FrameTrigger`]), writing
//! frames from a [`FrameSource`] ([`TestPattern`], or [`Replay`] of real image files) into
//! card memory at a fixed rate. Everything here says it is simulated
//! (`CardStatus::simulated`).
//!
//! Modules, one way down: `sensor` → `card` → `card_memory`, `link`; `sensor` →
//! `source`. The crate depends on `fpgagdr` and nothing depends on it but the programs
//! that offer a simulated card (`fpgagdrd --card sim`, `fpgagdr-bench --card sim`).
//!
//! ```
//! use std::time::Duration;
//! use fpgagdr_sim::{LinkPreset, SimConfig};
//!
//! let card = fpgagdr_sim::open_sim(SimConfig { preset: LinkPreset::Off, ..SimConfig::default() });
//! let st = card.status();
//! assert!(st.simulated);
//! let e = card.write_h2c_from_host(0, st.card_memory_bytes, &[0; 16], Duration::from_millis(1));
//! assert_eq!(e.unwrap_err().rule(), "card-bounds");
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod card;
mod card_memory;
mod link;
mod sensor;
mod source;

pub use card::{SimCard, SimConfig, open_sim};
pub use link::{LinkModel, LinkPreset, PathCost};
pub use sensor::SimSensor;
pub use source::{
    FrameSource, IMAGE_EXTENSIONS, MAX_IDENTITY_LEN, MAX_IMAGE_SIDE, MAX_IMAGES, Replay,
    ReplayPlan, TestPattern, is_image_name,
};
