//! The safe face of [`FramePrep::push`] for frames in a [`fpgagdr::FrameRing`]: the
//! frame's entry comes as the ring's consumer token ([`Held`]), whose life is the proof
//! `push` asks for (no C2H into the entry while it lives).
//!
//! Owns: [`RingPrep`]. An entry read at once (the CPU path) is handed back to the caller
//! with its token; one the batch reads later (the GPU path) is kept here until
//! [`RingPrep::finish`] returned, or, for a batch queued ahead ([`RingPrep::submit`]),
//! until [`RingPrep::collect`] returned its outcomes, then handed back. Must not: release
//! an entry itself (the caller decides when: it may keep a frame to copy it) or know the
//! ring's states.

use std::collections::VecDeque;

use fpgagdr::ring::Held;

use crate::model::Model;
use crate::prep::{BatchTimes, FrameOutcome, FramePrep, PrepError, Pushed};

/// A [`FramePrep`] fed with ring entries held by their tokens.
#[derive(Debug)]
pub struct RingPrep<'r> {
    prep: FramePrep,
    /// Entries pushed as [`Pushed::Pending`] into the batch being built: read by
    /// `finish`, or by a batch queued ahead, and kept until it returned.
    kept: Vec<Held<'r>>,
    /// The entries of each batch queued ahead and not yet collected, oldest first.
    in_flight: VecDeque<Vec<Held<'r>>>,
}

impl<'r> RingPrep<'r> {
    /// `prep` (built for the ring's memory and the model; warmed up), fed by tokens.
    pub fn new(prep: FramePrep) -> Self {
        let kept = Vec::with_capacity(prep.max_batch());
        RingPrep {
            prep,
            kept,
            in_flight: VecDeque::with_capacity(2),
        }
    }

    /// True when batches can be queued ahead ([`FramePrep::queues_ahead`]).
    pub fn queues_ahead(&self, model: &Model) -> bool {
        self.prep.queues_ahead(model)
    }

    /// Batches queued ahead and not yet collected (0 to 2).
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Frames pushed into the batch being built.
    pub fn len(&self) -> usize {
        self.prep.len()
    }

    /// True when the batch being built holds no frame.
    pub fn is_empty(&self) -> bool {
        self.prep.is_empty()
    }

    /// Largest batch (see [`FramePrep::max_batch`]).
    pub fn max_batch(&self) -> usize {
        self.prep.max_batch()
    }

    /// Adds the frame in `held`'s entry (its `meta().bytes` long) to the batch, checking
    /// its payload CRC when `verify`. `Ok(Some(held))`: the frame was read already, the
    /// token is the caller's again; `Ok(None)`: the batch reads it in
    /// [`RingPrep::finish`], which gives the token back. Errors as [`FramePrep::push`],
    /// with the token.
    pub fn push(
        &mut self,
        held: Held<'r>,
        verify: bool,
    ) -> Result<Option<Held<'r>>, (PrepError, Held<'r>)> {
        let len = held.meta().bytes as usize;
        #[allow(unsafe_code)]
        // SAFETY: `held` is the ring's one token for an InUse entry: the ring starts no
        // C2H into it while the token lives, and neither does this module (it only
        // reads). The token lives until this returns; when the frame is Pending it is
        // kept in `self.kept` until `finish` has returned.
        let pushed = unsafe { self.prep.push(held.buffer(), len, verify) };
        match pushed {
            Ok(Pushed::Read) => Ok(Some(held)),
            Ok(Pushed::Pending) => {
                self.kept.push(held);
                Ok(None)
            }
            Err(e) => Err((e, held)),
        }
    }

    /// Runs the batch (see [`FramePrep::finish`]) and hands the tokens of the entries it
    /// read to `back` (in push order), whatever the result: the batch no longer reads
    /// them.
    pub fn finish(
        &mut self,
        model: &mut Model,
        verify: bool,
        back: &mut Vec<Held<'r>>,
    ) -> Result<(&[FrameOutcome], BatchTimes), PrepError> {
        let out = self.prep.finish(model, verify);
        back.append(&mut self.kept);
        out
    }

    /// Queues the batch built by [`Self::push`] ahead (see [`FramePrep::submit`]) and
    /// keeps its entries until [`Self::collect`] returns it. On an error the entries,
    /// which nothing reads any more, go to `back`. An empty batch is not submitted.
    ///
    /// Errors: as [`FramePrep::submit`] (also with two batches in flight).
    pub fn submit(
        &mut self,
        model: &mut Model,
        verify: bool,
        back: &mut Vec<Held<'r>>,
    ) -> Result<(), PrepError> {
        if self.prep.is_empty() {
            return Ok(());
        }
        match self.prep.submit(model, verify) {
            Ok(()) => {
                let batch =
                    std::mem::replace(&mut self.kept, Vec::with_capacity(self.prep.max_batch()));
                self.in_flight.push_back(batch);
                Ok(())
            }
            Err(e) => {
                back.append(&mut self.kept);
                Err(e)
            }
        }
    }

    /// Waits for the oldest batch queued ahead, returns its outcomes (in push order) and
    /// times, and hands its entries to `back` whatever the result (nothing reads them any
    /// more). `None` when no batch is in flight.
    ///
    /// Errors: as [`FramePrep::collect`].
    pub fn collect(
        &mut self,
        model: &mut Model,
        back: &mut Vec<Held<'r>>,
    ) -> Option<Result<(&[FrameOutcome], BatchTimes), PrepError>> {
        let mut entries = self.in_flight.pop_front()?;
        if self.prep.in_flight() == 0 {
            // Tokens without a batch (cannot happen: each submit queued one): nothing
            // reads them once the streams are idle.
            self.prep.settle();
            back.append(&mut entries);
            return None;
        }
        let out = self.prep.collect(model);
        back.append(&mut entries);
        out
    }
}

impl Drop for RingPrep<'_> {
    fn drop(&mut self) {
        // Entries of batches still queued are released when their tokens drop below:
        // first let the GPU finish reading them.
        if !self.in_flight.is_empty() || !self.kept.is_empty() {
            self.prep.settle();
        }
    }
}
