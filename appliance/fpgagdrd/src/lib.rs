//! # fpgagdrd — the appliance service, as a library
//!
//! The binary (`main.rs`) only parses the command line and wires these rooms together;
//! tests drive them directly (for example `api::router(...)` without a socket).
//!
//! Follow one frame: `pipeline/capture.rs` (C2H into a ring entry) →
//! `pipeline/queue.rs` (lock-free hand-off) → `pipeline/infer.rs` (preprocess, model,
//! release) → `metrics.rs` (histograms, counters) → `api/live.rs` (SSE batches) →
//! `webui/js/stream.js`.
#![deny(missing_docs)]

pub mod api;
pub mod assets;
pub mod config;
pub mod metrics;
pub mod notify;
pub mod pipeline;
