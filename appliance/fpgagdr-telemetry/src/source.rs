//! The words every source uses: its state in a sample, and the sysfs reads.
//!
//! Owns: [`SourceState`], [`Source`], and the helpers that read sysfs attributes
//! (`read_str`, `read_i64`, `entries`). Must not: know a source; each source module
//! uses these.

use std::path::{Path, PathBuf};

/// Whether a source gave data in the last sample, and why not.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "state", content = "detail", rename_all = "snake_case")]
pub enum SourceState {
    /// Read this sample.
    Ok,
    /// Not present on this machine (a normal state); the string says what was looked for.
    Absent(String),
    /// Present but unreadable; the string is the error.
    Error(String),
}

/// One source's state, by name (`ina3221`, `rapl`, `thermal`, `devfreq`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Source {
    /// Source name.
    pub name: &'static str,
    /// Its state.
    #[serde(flatten)]
    pub state: SourceState,
}

/// Reads a sysfs attribute as a trimmed string; `None` when missing or unreadable.
pub(crate) fn read_str(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Reads a sysfs attribute holding one integer.
pub(crate) fn read_i64(path: &Path) -> Option<i64> {
    read_str(path)?.parse().ok()
}

/// Sorted entries of `dir` whose names start with `prefix` (empty when `dir` is missing).
pub(crate) fn entries(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path())
        .collect();
    v.sort();
    v
}
