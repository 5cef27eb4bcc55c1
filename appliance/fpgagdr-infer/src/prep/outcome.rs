//! What the step between ring entries and results gives back: a frame's outcome, a
//! batch's times, why a frame or a batch failed, and the outcomes of a batch checked on
//! the GPU built from its result records.
//!
//! Owns: [`PrepError`], [`FrameOutcome`], [`BatchTimes`], `outcomes_from`. Must not:
//! launch work (`mod.rs`, `ahead.rs`).

use fpgagdr::frame::{FrameError, FrameHeader, HEADER_LEN};

use crate::gpu::{GpuError, RESULT_CRC, RESULT_WORDS};
use crate::model::{ModelError, TOP_K, Top};

/// Why a frame or a batch produced no result.
#[derive(Debug, thiserror::Error)]
pub enum PrepError {
    /// The frame itself is bad (header, geometry, CRC): count it and go on.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// The path broke (a CUDA error): the pipeline stops.
    #[error("{0}")]
    Path(String),
    /// The model failed: the pipeline stops.
    #[error(transparent)]
    Model(#[from] ModelError),
}

impl From<GpuError> for PrepError {
    fn from(e: GpuError) -> Self {
        PrepError::Path(e.to_string())
    }
}

/// One frame's result.
#[derive(Debug)]
pub struct FrameOutcome {
    /// The frame's header, or why the frame was rejected (header or payload CRC).
    pub header: Result<FrameHeader, FrameError>,
    /// Best classes (meaningful when `header` is `Ok`).
    pub top: Top,
    /// Device-to-host copy time attributed to this frame, ns (CPU preprocessing of a
    /// frame in device memory; or the batch's tensor copy for a model on the CPU).
    pub d2h_ns: Option<u64>,
    /// Check and preprocessing time, ns (the batch's kernels on the GPU; this frame's
    /// own on the CPU).
    pub preprocess_ns: u64,
}

/// Times of one [`FramePrep::finish`](crate::FramePrep::finish) or `collect`.
#[derive(Debug, Clone, Copy, Default)]
pub struct BatchTimes {
    /// The model run (on the GPU path: from queueing it to the results being in host
    /// memory), ns.
    pub inference_ns: u64,
}

pub(crate) fn empty_outcome() -> FrameOutcome {
    FrameOutcome {
        header: Err(FrameError::Geometry("no frame".into())),
        top: [(0, 0.0); TOP_K],
        d2h_ns: None,
        preprocess_ns: 0,
    }
}

/// Frame i's outcome from its result record (`records[i * RESULT_WORDS ..]`: the header
/// the GPU read, its payload CRC), its received length (`frames[i].1`) and top-5, for
/// every frame of `frames`.
pub(crate) fn outcomes_from(
    records: &[u32],
    frames: &[(u64, u64)],
    tops: &[Top],
    verify: bool,
    preprocess_ns: u64,
    d2h_ns: Option<u64>,
    outcomes: &mut [FrameOutcome],
) {
    for (i, (&(_, len), top)) in frames.iter().zip(tops).enumerate() {
        let rec = &records[i * RESULT_WORDS..(i + 1) * RESULT_WORDS];
        let mut bytes = [0u8; HEADER_LEN];
        for (b, w) in bytes.chunks_exact_mut(4).zip(&rec[..16]) {
            b.copy_from_slice(&w.to_le_bytes());
        }
        let header = FrameHeader::parse(&bytes, len as usize).and_then(|h| {
            if verify {
                h.verify_crc(rec[RESULT_CRC])?;
            }
            Ok(h)
        });
        outcomes[i] = FrameOutcome {
            header,
            top: *top,
            d2h_ns,
            preprocess_ns,
        };
    }
}

pub(crate) fn us_to_ns(us: f64) -> u64 {
    (us * 1000.0).round() as u64
}
