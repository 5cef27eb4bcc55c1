//! What the results room and its outputs report: `outputs` of `GET /api/v1/status`, read
//! by `/metrics` too.
//!
//! Owns: [`OutputsStatus`] and its parts. Must not: count anything itself (the room and
//! each sink fill these in when asked).

use std::collections::BTreeMap;

use serde::Serialize;

use super::keep::KeepStatus;

/// What the results room reports (`outputs` in `GET /api/v1/status`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct OutputsStatus {
    /// Payload schema version.
    pub schema_version: u32,
    /// Results the pipeline handed to the room.
    pub results: u64,
    /// Results dropped, by reason.
    pub dropped: ResultDrops,
    /// The results log.
    pub log: LogStatus,
    /// MQTT.
    pub mqtt: MqttStatus,
    /// Clients of `GET /api/v1/results/stream` now.
    pub stream_clients: u64,
    /// Alerts.
    pub alerts: AlertsStatus,
}

/// Results dropped, by reason (`/metrics` labels them the same way).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ResultDrops {
    /// The channel from the pipeline to the room was full.
    pub room_full: u64,
    /// MQTT: the broker was away (QoS 0 results are not kept for it).
    pub mqtt_offline: u64,
    /// MQTT: the publish queue (`outputs.mqtt.queue`) was full.
    pub mqtt_queue_full: u64,
    /// Per-frame stream: results a slow client missed (all clients together).
    pub stream_slow_client: u64,
}

/// The results log's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct LogStatus {
    /// Results written.
    pub written: u64,
    /// Writes that failed (the last one's error is `last_error`).
    pub errors: u64,
    /// Bytes on disk now (all files).
    pub bytes: u64,
    /// Files on disk now.
    pub files: u64,
    /// The cap on `bytes` (`--results-log-max-bytes`).
    pub max_bytes: u64,
    /// The last write error, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// What `GET /api/v1/status` says about MQTT (`outputs.mqtt`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct MqttStatus {
    /// Whether `outputs.mqtt.enabled` is on.
    pub enabled: bool,
    /// `disabled`, `connecting`, `connected` or `error` (then `last_error` says why;
    /// the client keeps retrying with back-off).
    pub state: String,
    /// `host:port` of the broker.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub broker: String,
    /// The results topic.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub topic: String,
    /// The QoS results are published with.
    pub qos: u8,
    /// The last connection error, in words (kept until the next CONNACK).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Successful connections (CONNACKs) since this configuration applied.
    pub connects: u64,
    /// Results handed to the client's queue.
    pub queued: u64,
    /// Results written to the broker (QoS 0) or acknowledged by it (QoS 1).
    pub delivered: u64,
    /// Results dropped because the broker was away (QoS 0), or because these settings
    /// cannot connect at all (the CA file cannot be used: `last_error` says why).
    pub dropped_offline: u64,
    /// Results dropped because the queue was full.
    pub dropped_queue_full: u64,
    /// Alerts queued on `outputs.mqtt.alert_topic`.
    pub alerts_queued: u64,
    /// Alerts dropped (broker away at QoS 0, or the queue full).
    pub alerts_dropped: u64,
}

/// The alerts' state (`outputs.alerts` in `GET /api/v1/status`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct AlertsStatus {
    /// Alerts since the service started, by rule name (a rule since removed keeps its
    /// count; a rule configured now and not yet fired shows 0).
    pub fired: BTreeMap<String, u64>,
    /// The condition rules (`drop_rate`, `e2e_p99`, `temperature`, `power`) firing now:
    /// fired and not yet cleared.
    pub firing: Vec<String>,
    /// The kept frames.
    pub frames: KeepStatus,
}
