//! # fpgagdrd — the appliance service, as a library
//!
//! The binary (`main.rs`) only parses the command line and wires these rooms together;
//! tests drive them directly (for example `api::router(...)` without a socket).
//!
//! Follow one frame: `pipeline/capture.rs` (C2H into a ring entry) →
//! `pipeline/queue.rs` (lock-free hand-off) → `pipeline/infer.rs` (preprocess and model
//! through `fpgagdr-infer`, release) → `metrics.rs` (histograms, counters, the latest
//! result) → `board/mod.rs` (the frame board: one snapshot ten times a second) →
//! `api/live.rs` (SSE, bounded replay then live) → `webui/js/stream.js`
//! (`docs/architecture.md` has the whole path).
//!
//! The service is the top of the crate graph: it wires `fpgagdr` (the card),
//! `fpgagdr-sim` (`--card sim`), `fpgagdr-infer`, `fpgagdr-telemetry` (the sampler) and
//! `fpgagdr-ota` together; none of them knows the service. Its own rooms, one way down:
//! `api` → `board`, `pipeline`, `config`, `files`, `heap`, `metrics`, `assets`; `board` →
//! `pipeline`, `metrics`; `notify` → `pipeline`; `pipeline` → `config`, `files`, `heap`,
//! `metrics`.
#![deny(missing_docs)]
// Ring entries are read through the library's tokens (fpgagdr::ring), the C heap is tuned
// through fpgagdr::heap: the service itself holds no `unsafe`.
#![forbid(unsafe_code)]

pub mod api;
pub mod board;
pub mod cards;
pub mod config;
pub mod control;
pub mod files;
pub mod http;
pub mod metrics;
pub mod notify;
pub mod pipeline;
pub mod results;
