//! One frame's result as the inference thread hands it over ([`RawResult`], a `Copy`
//! record: no allocation per frame) and the facts of its run ([`RunInfo`]).
//!
//! Owns: those two types. Must not: know where a result goes.

use fpgagdr_infer::TOP_K;

use super::alerts::Matcher;
use crate::metrics::{STAGES, Stage};

/// The facts of one pipeline run that every result of it shares.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInfo {
    /// The run's key: Unix time of its start in ms, raised to one above the previous
    /// run's when the clock did not move on (so (run, seq) orders every result of the
    /// service's life, and of later lives too: the log's key).
    pub run: u64,
    /// The model's display labels, class 0 first.
    pub labels: Vec<String>,
    /// The card's name (`CardStatus::name`).
    pub card: String,
    /// The C2H channel the frames arrive on.
    pub channel: u32,
    /// The alert rules in force when the run started, against its labels.
    pub rules: Matcher,
}

/// One frame's result as the inference thread hands it over (labels, JSON and times in
/// words are made by the room).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RawResult {
    /// The frame's sequence number (restarts with each run).
    pub seq: u64,
    /// When the frame arrived (the frame-done interrupt, else the capture), Unix ns.
    pub arrived_unix_ns: u64,
    /// When its result was ready, Unix ns.
    pub result_unix_ns: u64,
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
    /// `"mono8"` or `"rgb8"`.
    pub format: &'static str,
    /// Bytes moved by C2H (header included).
    pub bytes: u64,
    /// Whether the payload CRC was checked (and matched: a frame that fails is dropped
    /// before it has a result).
    pub checksum_checked: bool,
    /// Best classes: (index, probability 0..=1); a NaN score marks an unfilled slot.
    pub top: [(u32, f32); TOP_K],
    /// Per-stage latency, ns; [`Stage::D2h`] only where `d2h` is true.
    pub stages: [(Stage, u64); STAGES],
    /// Whether the frame took the device-to-host hop.
    pub d2h: bool,
    /// The alert rules it matched (`Tap::matches`; bit i = `RunInfo::rules`' rule i).
    pub alerts: u32,
}
