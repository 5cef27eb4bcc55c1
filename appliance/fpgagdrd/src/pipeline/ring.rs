//! The frame ring as the two threads see it: the card, the entries pinned once, and the
//! queue that hands entries between them.
//!
//! Owns: `Ring`. Must not: move bytes (`capture.rs`) or read them (`infer.rs`).

use fpgagdr::{Card, PinnedBuffer};

use super::queue::FrameQueue;

/// The pinned frame ring and the card it belongs to.
#[derive(Debug)]
pub(crate) struct Ring {
    pub(super) card: Card,
    pub(super) buffers: Vec<PinnedBuffer>,
    pub(super) queue: FrameQueue,
}
