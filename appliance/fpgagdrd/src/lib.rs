//! # fpgagdrd — the appliance service, as a library
//!
//! The binary (`main.rs`) only parses the command line and wires these rooms together;
//! tests drive them directly (for example `api::router(...)` without a socket). The
//! rooms, one way down (the order `Cargo.toml` declares and `./test.sh` checks):
//! `http`/`api` → `control`/`notify` → `pipeline` → `results` → `board`/`metrics` →
//! `cards` → `config` → `files`. `docs/architecture.md` has each room's concern and
//! one frame followed from the capture thread to the page.
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
