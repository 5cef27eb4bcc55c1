//! The result payload (schema version [`SCHEMA_VERSION`]): one frame's result as MQTT,
//! the per-frame stream, the results log and `GET /api/v1/results/latest` carry it
//! (`docs/api.md`, "Results out"; what changed from version 1: `docs/decisions.md`,
//! "One results schema").
//!
//! Owns: [`ResultRecord`] and its parts, labelling a raw result into one, and
//! [`LatestResult`] (the record with the names `GET /api/v1/results/latest` used before
//! version 2, kept for one version).
//! Must not: know where a record goes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::alerts::Matcher;
use super::raw::{RawResult, RunInfo};
use crate::metrics::Stage;

/// Version of the result payload (`v` in every record, on MQTT, the stream, the log and
/// `GET /api/v1/results/latest`). A change that removes, renames or gives another
/// meaning to a field raises it; added fields do not. Version 2: `frame.bytes` is the
/// frame's own size (it was the DMA length), `frame.dma_bytes` added, and the latest
/// result joined the one schema.
pub const SCHEMA_VERSION: u32 = 2;

/// Version of the alert payload (`v` of [`AlertRecord`]); raised like the result
/// payload's.
pub const ALERT_SCHEMA_VERSION: u32 = 1;

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
    /// The frame's size, bytes: its 64-byte header and its pixels (width × height ×
    /// bytes per pixel; `docs/frames.md`). Before version 2 this was the DMA length.
    pub bytes: u64,
    /// Bytes the card-to-host DMA moved for it (the length of the card's frame slot it
    /// was read from, at least `bytes`); absent in version 1 records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dma_bytes: Option<u64>,
}

/// A frame's size as [`RecordFrame::bytes`] counts it: the header and the pixels.
pub fn frame_bytes(width: u32, height: u32, format: &str) -> u64 {
    let bpp: u64 = if format == "rgb8" { 3 } else { 1 };
    fpgagdr::frame::HEADER_LEN as u64 + u64::from(width) * u64::from(height) * bpp
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
    /// The alert rules (`outputs.alerts.rules`) this result matched, by name; absent
    /// when none (added in version 1: no version change).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alerts: Vec<String>,
}

impl ResultRecord {
    /// The result's key, (run, seq).
    pub fn key(&self) -> (u64, u64) {
        (self.run, self.seq)
    }
}

/// `GET /api/v1/results/latest` and the stream snapshots' `latest`: the newest
/// [`ResultRecord`], with the two names this answer had before version 2 kept for one
/// version (deprecated: `top5`, a copy of `top`, and `frame.checksum_ok`, true when
/// `checksum` is `ok`; both go with version 3).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct LatestResult {
    /// The result (schema version [`SCHEMA_VERSION`]).
    #[serde(flatten)]
    pub record: ResultRecord,
    /// Deprecated: the same as `top` (removed in version 3).
    #[schema(deprecated)]
    pub top5: Vec<TopClass>,
}

impl LatestResult {
    /// A record's JSON `json` (as every output carried it) with the deprecated names
    /// added (`top5` and `frame.checksum_ok`). Numbers are carried as written there, so
    /// a score reads the same here as in the log, on the stream and on MQTT.
    pub fn json(json: &str) -> String {
        let mut v: serde_json::Value = serde_json::from_str(json).expect("a record's JSON parses");
        let ok = v["checksum"] == "ok";
        if let Some(o) = v.as_object_mut() {
            let top = o.get("top").cloned().unwrap_or_default();
            o.insert("top5".into(), top);
        }
        if let Some(frame) = v.get_mut("frame").and_then(|f| f.as_object_mut()) {
            frame.insert("checksum_ok".into(), serde_json::Value::Bool(ok));
        }
        v.to_string()
    }
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
                bytes: frame_bytes(r.width, r.height, r.format),
                dma_bytes: Some(r.bytes),
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
            alerts: run
                .rules
                .names()
                .iter()
                .enumerate()
                .filter(|(bit, _)| r.alerts & (1 << bit) != 0)
                .map(|(_, name)| name.clone())
                .collect(),
        }
    }
}

/// One alert: a result matched a rule. On MQTT's `outputs.mqtt.alert_topic` and as the
/// results stream's `alert` event (`docs/api.md`, "Alerts").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AlertRecord {
    /// Alert payload schema version.
    pub v: u32,
    /// The rule's name.
    pub rule: String,
    /// The rule's kind (`class`).
    pub kind: String,
    /// The result's run.
    pub run: u64,
    /// The result's sequence number.
    pub seq: u64,
    /// When the result was ready, Unix ns.
    pub result_unix_ns: u64,
    /// The card's name.
    pub card: String,
    /// The classes that matched (index, label, score), best first.
    pub classes: Vec<TopClass>,
}

impl AlertRecord {
    /// The alerts of `record` for the rules in `mask`, one per rule.
    pub fn of(matcher: &Matcher, mask: u32, record: &ResultRecord) -> Vec<AlertRecord> {
        (0..matcher.names().len())
            .filter(|bit| mask & (1 << bit) != 0)
            .map(|bit| AlertRecord {
                v: ALERT_SCHEMA_VERSION,
                rule: matcher.names()[bit].clone(),
                kind: "class".into(),
                run: record.run,
                seq: record.seq,
                result_unix_ns: record.result_unix_ns,
                card: record.card.clone(),
                classes: record
                    .top
                    .iter()
                    .filter(|c| matcher.rule_matches(bit, c.index, c.score))
                    .cloned()
                    .collect(),
            })
            .collect()
    }
}

/// One alert of a condition rule (`drop_rate`, `e2e_p99`, `temperature`, `power`): the
/// rule fired or cleared. On the same topic and stream event as [`AlertRecord`]
/// (`kind` tells them apart; `docs/api.md`, "Alerts"); version [`ALERT_SCHEMA_VERSION`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConditionAlertRecord {
    /// Alert payload schema version.
    pub v: u32,
    /// The rule's name.
    pub rule: String,
    /// The rule's kind: `drop_rate`, `e2e_p99`, `temperature` or `power`.
    pub kind: String,
    /// `firing` (the value went above the threshold) or `cleared` (it fell to
    /// `clear_at`). A rule fires once per episode.
    pub state: String,
    /// When it was measured (wall clock), Unix ns.
    pub t_unix_ns: u64,
    /// The card's name (of the latest pipeline run; empty before the first).
    pub card: String,
    /// The measured value, in `unit`.
    pub value: f64,
    /// The rule's threshold, in `unit`: it fires above it.
    pub threshold: f64,
    /// It clears at or below this, in `unit` (5 % below the threshold; 2 °C for
    /// temperature).
    pub clear_at: f64,
    /// `ratio` (dropped ÷ produced), `ms`, `C` or `W`.
    pub unit: String,
    /// The window the value is over, s (`drop_rate`, `e2e_p99`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_s: Option<u32>,
    /// The thermal zone or INA3221 rail measured (the hottest zone's name; `total` for
    /// the total power).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl ConditionAlertRecord {
    /// The payload of `change`, measured at `t_unix_ns` on `card`.
    pub fn of(change: &super::conditions::Change, t_unix_ns: u64, card: &str) -> Self {
        ConditionAlertRecord {
            v: ALERT_SCHEMA_VERSION,
            rule: change.rule.clone(),
            kind: change.kind.to_string(),
            state: if change.firing { "firing" } else { "cleared" }.to_string(),
            t_unix_ns,
            card: card.to_string(),
            value: change.value,
            threshold: change.threshold,
            clear_at: change.clear_at,
            unit: change.unit.to_string(),
            window_s: change.window_s,
            source: change.source.clone(),
        }
    }
}

/// A result of the simulated card for unit tests: `run`, `seq`, a mono8 frame `width`
/// wide and 16 rows high (its 64-byte header included in `frame.bytes`), checksum ok,
/// no classes, no alerts.
#[cfg(test)]
pub(crate) fn test_record(run: u64, seq: u64, width: u32) -> ResultRecord {
    ResultRecord {
        v: SCHEMA_VERSION,
        run,
        seq,
        arrived_unix_ns: 1,
        result_unix_ns: 2,
        card: "sim".into(),
        channel: 0,
        frame: RecordFrame {
            width,
            height: 16,
            format: "mono8".into(),
            bytes: 64 + u64::from(width) * 16,
            dma_bytes: None,
        },
        checksum: "ok".into(),
        top: vec![],
        latency_us: Default::default(),
        alerts: vec![],
    }
}
