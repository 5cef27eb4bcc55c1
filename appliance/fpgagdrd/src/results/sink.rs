//! The seam between the results room and an output: what every output of every frame's
//! result (the log, the per-frame stream, MQTT, the next one) is asked to do.
//!
//! Owns: [`Sink`]. Must not: block the room's thread on the network (a sink that talks
//! to one queues and counts what it cannot queue; MQTT's client runs on its own thread).
//!
//! The room calls a sink on its own thread, in order: [`Sink::result`] for every result
//! (its record and the record's JSON, made once for all sinks), [`Sink::alert`] for every
//! alert, [`Sink::flush`] when the room is idle and at least once a second. The HTTP side
//! asks [`Sink::status`] (any thread, any time: it must not wait for the room's
//! thread), and the control room hands every changed `outputs` section to
//! [`Sink::reconfigure`]. `docs/architecture.md` ("Adding an output") shows a new one.

use std::sync::Arc;

use super::OutputsStatus;
use super::record::ResultRecord;
use crate::config::OutputsConfig;

/// One output of the results room.
pub trait Sink: Send + Sync + 'static {
    /// The output's name, for logs (`log`, `stream`, `mqtt`).
    fn name(&self) -> &'static str;

    /// One frame's result: `record`, and `json`, its serialised form (the payload every
    /// output carries, `docs/api.md` "Results out").
    fn result(&self, record: &ResultRecord, json: &Arc<str>);

    /// One alert's JSON (a class rule that matched a result, or a condition rule that
    /// fired or cleared). Nothing by default.
    fn alert(&self, _json: &Arc<str>) {}

    /// Writes out what is buffered (the room is idle, or a second has passed). Nothing
    /// by default.
    fn flush(&self) {}

    /// Applies a changed `outputs` section (its own part of it); a sink whose settings
    /// did not change goes on as it was. Nothing by default.
    fn reconfigure(&self, _outputs: &OutputsConfig) {}

    /// Writes its state and its counters (what it delivered, what it dropped and why)
    /// into `status`, `outputs` of `GET /api/v1/status` and `/metrics`.
    fn status(&self, status: &mut OutputsStatus);
}
