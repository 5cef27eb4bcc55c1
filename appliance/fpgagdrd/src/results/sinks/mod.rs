//! The outputs of the results room, one file each, every one a [`super::Sink`]: the
//! results log (`log.rs`), the per-frame stream the HTTP side subscribes to
//! (`stream.rs`) and MQTT (`mqtt.rs`). `Results::start` lists them.

pub mod log;
pub mod mqtt;
pub mod stream;
