//! The safe face of [`FramePrep::push`] for frames in a [`fpgagdr::FrameRing`]: the
//! frame's entry comes as the ring's consumer token ([`Held`]), whose life is the proof
//! `push` asks for (no C2H into the entry while it lives).
//!
//! Owns: [`RingPrep`]. An entry read at once (the CPU path) is handed back to the caller
//! with its token; one the batch reads later (the GPU path) is kept here until
//! [`RingPrep::finish`] returned, then handed back. Must not: release an entry itself
//! (the caller decides when: it may keep a frame to copy it) or know the ring's states.

use fpgagdr::ring::Held;

use crate::model::Model;
use crate::prep::{BatchTimes, FrameOutcome, FramePrep, PrepError, Pushed};

/// A [`FramePrep`] fed with ring entries held by their tokens.
#[derive(Debug)]
pub struct RingPrep<'r> {
    prep: FramePrep,
    /// Entries pushed as [`Pushed::Pending`]: read by `finish`, kept until it returned.
    kept: Vec<Held<'r>>,
}

impl<'r> RingPrep<'r> {
    /// `prep` (built for the ring's memory and the model; warmed up), fed by tokens.
    pub fn new(prep: FramePrep) -> Self {
        let kept = Vec::with_capacity(prep.max_batch());
        RingPrep { prep, kept }
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
}
