//! Why the control room did not make a change.
//!
//! Owns: [`ControlError`]. Must not: know HTTP (`api/error.rs` maps each variant to a
//! problem).

use crate::config::{ConfigError, Unusable};

/// Why a change, start or stop was not made. Nothing changed.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// The document breaks a rule of its own (schema, range, credentials).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The document cannot be applied on this system: the field at fault and the rule.
    #[error("{0}")]
    Apply(Unusable),
    /// The pipeline cannot start with the config in force.
    #[error("{0}")]
    PipelineStart(String),
    /// An earlier change is still being made.
    #[error("{message}")]
    Busy {
        /// What is still going on.
        message: String,
        /// When to try again, s.
        retry_after_s: u64,
    },
    /// The file could not be saved.
    #[error("{0}")]
    Save(String),
    /// Something that should not happen.
    #[error("{0}")]
    Internal(String),
}
