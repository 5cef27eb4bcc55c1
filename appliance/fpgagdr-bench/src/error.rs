//! The tool's errors: each names what failed and the value involved.

use std::path::PathBuf;

/// Why a subcommand could not run (a failed functional check is not an error: it is a
/// FAIL line and exit status 1).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum BenchError {
    /// The library refused or the card failed; the message names the rule.
    #[error("{context}: {source}")]
    Card {
        /// What the tool was doing (e.g. "path C read of 4 KiB at 0x00000000").
        context: String,
        /// The library's error.
        source: fpgagdr::Error,
    },
    /// A CUDA driver call for path B failed.
    #[error("CUDA: {0}")]
    Cuda(String),
    /// A file of the report or the CSV could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The soak CSV could not be written.
    #[error("CSV {path}: {source}")]
    Csv {
        /// The CSV file.
        path: PathBuf,
        /// The error.
        source: csv::Error,
    },
    /// A plot could not be drawn.
    #[error("plot {path}: {message}")]
    Plot {
        /// The SVG file.
        path: PathBuf,
        /// What plotters said.
        message: String,
    },
    /// The arguments do not fit this card (e.g. `--link` with a real card).
    #[error("{0}")]
    Usage(String),
}

/// Shorthand for the tool's results.
pub(crate) type Result<T> = std::result::Result<T, BenchError>;

/// Adds what the tool was doing to a library error.
pub(crate) trait Context<T> {
    /// Wraps the error with `context`, built only on failure.
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T>;
}

impl<T> Context<T> for fpgagdr::Result<T> {
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| BenchError::Card {
            context: context(),
            source,
        })
    }
}
