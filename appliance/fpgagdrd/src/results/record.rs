//! The result payload (schema version [`SCHEMA_VERSION`]): one frame's result as MQTT,
//! the per-frame stream and the results log carry it (`docs/api.md`, "Results out").
//!
//! Owns: [`ResultRecord`] and its parts, and labelling a raw result into one.
//! Must not: know where a record goes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::outlet::{RawResult, RunInfo};
use crate::metrics::Stage;

/// Version of the result payload (`v` in every record, on MQTT, the stream and the
/// log). A change that removes or retypes a field raises it; added fields do not.
pub const SCHEMA_VERSION: u32 = 1;

/// One class of a result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TopClass {
    /// Class index in the model's output.
    pub index: u32,
    /// Display label.
    pub label: String,
    /// Probability, 0..=1.
    pub score: f32,
}

/// The frame a result is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RecordFrame {
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
    /// `mono8` or `rgb8`.
    pub format: String,
    /// Bytes moved by C2H, header included.
    pub bytes: u64,
}

/// One frame's result: the payload on MQTT, on `GET /api/v1/results/stream`, in the
/// results log and in `GET /api/v1/results` (schema version [`SCHEMA_VERSION`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ResultRecord {
    /// Payload schema version.
    pub v: u32,
    /// The pipeline run (Unix ms of its start; see `docs/api.md`): with `seq`, the key.
    pub run: u64,
    /// The frame's sequence number within the run.
    pub seq: u64,
    /// When the frame arrived (the card's frame-done interrupt where there is one, else
    /// the capture), Unix ns.
    pub arrived_unix_ns: u64,
    /// When the result was ready (wall clock), Unix ns.
    pub result_unix_ns: u64,
    /// The card's name.
    pub card: String,
    /// The C2H channel.
    pub channel: u32,
    /// The frame's geometry.
    pub frame: RecordFrame,
    /// `ok` (the payload CRC was checked and matched) or `unchecked`
    /// (`inference.verify_checksum` is off). A frame that fails is dropped, with no result.
    pub checksum: String,
    /// The best classes, best first (up to five).
    pub top: Vec<TopClass>,
    /// Per-stage latency of this frame, µs (`d2h` only where the frame took that hop).
    pub latency_us: BTreeMap<String, f64>,
}

impl ResultRecord {
    /// Labels and shapes a raw result of `run`.
    pub fn new(run: &RunInfo, r: &RawResult) -> ResultRecord {
        ResultRecord {
            v: SCHEMA_VERSION,
            run: run.run,
            seq: r.seq,
            arrived_unix_ns: r.arrived_unix_ns,
            result_unix_ns: r.result_unix_ns,
            card: run.card.clone(),
            channel: run.channel,
            frame: RecordFrame {
                width: r.width,
                height: r.height,
                format: r.format.to_string(),
                bytes: r.bytes,
            },
            checksum: if r.checksum_checked {
                "ok"
            } else {
                "unchecked"
            }
            .to_string(),
            top: r
                .top
                .iter()
                .filter(|(_, s)| s.is_finite())
                .map(|&(index, score)| TopClass {
                    index,
                    label: run
                        .labels
                        .get(index as usize)
                        .cloned()
                        .unwrap_or_else(|| "?".into()),
                    score,
                })
                .collect(),
            latency_us: r
                .stages
                .iter()
                .filter(|(s, _)| *s != Stage::D2h || r.d2h)
                .map(|(s, ns)| (s.as_str().to_string(), *ns as f64 / 1000.0))
                .collect(),
        }
    }
}
