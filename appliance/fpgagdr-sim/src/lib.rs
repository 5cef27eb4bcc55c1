//! # fpgagdr-sim — the simulated card
#![deny(missing_docs)]

mod card;
mod source;

pub use card::*;
pub use source::{FrameSource, Replay, TestPattern};
