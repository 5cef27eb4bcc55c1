//! Opening a card by index or path: the one place that names the back-ends this crate
//! has (the kernel module's, [`KernelCard`]).
//!
//! Owns: [`Card::open`], [`Card::open_path`]. Must not: check transfers (`card.rs`).
//! The simulated card lives in the `fpgagdr-sim` crate, which opens itself
//! (`fpgagdr_sim::open_sim`).

use std::path::Path;
use std::sync::Arc;

use crate::card::Card;
use crate::error::Result;
use crate::kernel::KernelCard;

impl Card {
    /// Opens card `index`: the kernel module's node `/dev/fpgagdr<index>`, driven by
    /// [`KernelCard`].
    ///
    /// Errors: as [`Card::open_path`].
    pub fn open(index: u32) -> Result<Card> {
        Self::open_path(format!("/dev/fpgagdr{index}"))
    }

    /// Opens a control node such as `/dev/fpgagdr0` of the kernel module
    /// ([`KernelCard`]).
    ///
    /// Errors: [`crate::Error::NoCard`] when the node does not exist ("no such device node"),
    /// may not be opened (the message says to add the user to the `fpgagdr` group), has
    /// no card behind it, or is not an fpgagdr control node; [`crate::Error::Kernel`] (rule
    /// `abi-version`) when the module speaks another ABI version than this library.
    pub fn open_path(path: impl AsRef<Path>) -> Result<Card> {
        Ok(Self::from_backend(Arc::new(KernelCard::open(
            path.as_ref(),
        )?)))
    }
}
