//! The HTTP edge: connections, limits and the checks every request passes before a
//! handler sees it.
//!
//! Owns: `server.rs` (the service's accept loop over hyper: admission, timeouts, the
//! registry of open connections), `limits.rs` ([`Limits`], who a [`Client`] is, the
//! counted places of connections and live streams, the rate of changes), `wire.rs`
//! (answers written on the socket itself), `host.rs` (which `Host` and `Origin` are
//! answered), `auth.rs` (the API token), `body.rs` (reading a request body within its
//! size and time), and `refusal.rs` ([`Refusal`], what this room refuses, and
//! [`Problem`], the problem+json body of every refusal of the service).
//! Must not: know a route or a handler (`api/` does), or anything behind them. A
//! [`Refusal`] becomes an answer through `api/error.rs`, the one place problems are
//! rendered; the accept loop writes the few it answers itself on the wire (`wire.rs`).

pub mod auth;
pub mod body;
pub mod host;
pub mod limits;
pub mod refusal;
pub mod server;
pub mod wire;

pub use body::MAX_BODY;
pub use limits::{Client, Limits};
pub use refusal::{Full, PROBLEM, Problem, ProblemType, Refusal};
