//! The spool: where an uploaded bundle waits for its installation.
//!
//! Owns: [`receive`] (stream a request body to disk with a size limit, free-space
//! checks before and while it is written, a stall timeout, and SHA-256), [`Spooled`],
//! and the layout of the directory: at most one bundle, `<sha256>.raucb`, plus
//! `.upload-*.raucb` files while uploads run (removed on any error, and at start).
//! Must not: talk to RAUC (that is `ota/mod.rs`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;
use tokio_stream::{Stream, StreamExt};

/// Default free space kept beyond the bundle itself, bytes: the appliance's logs and
/// config must still fit after an upload (`--ota-spool-reserve-bytes`).
pub const RESERVE_BYTES: u64 = 64 * 1024 * 1024;
/// Default of how long an upload may send nothing before it is cut off
/// (`--upload-stall-s`).
pub const DEFAULT_STALL: Duration = Duration::from_secs(30);
/// File name suffix of a spooled bundle.
pub const SUFFIX: &str = ".raucb";
const PARTIAL_PREFIX: &str = ".upload-";
/// Bytes written between two looks at the free space of an upload in progress.
const SPACE_CHECK_EVERY: u64 = 1024 * 1024;

/// What an upload is held to.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// Largest bundle, bytes (`--ota-max-bytes`).
    pub limit: u64,
    /// Free space that must remain beside the bundle, bytes.
    pub reserve: u64,
    /// Longest time without a byte of the body.
    pub stall: Duration,
}

/// A bundle that arrived whole.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Spooled {
    /// Lower-case hex SHA-256 of the file; also its id in the API.
    pub sha256: String,
    /// Size, bytes.
    pub bytes: u64,
    /// Where it lies.
    #[serde(skip)]
    pub path: PathBuf,
}

/// Why an upload was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpoolError {
    /// Over the size limit (`bytes` is how much was announced or received).
    #[error("the bundle is larger than the limit of {limit} bytes ({bytes} bytes or more)")]
    TooLarge {
        /// Announced or received so far.
        bytes: u64,
        /// `--ota-max-bytes`.
        limit: u64,
    },
    /// Not enough free space in the spool directory.
    #[error(
        "not enough free space for the bundle: {needed} bytes needed (the bundle, or what \
         arrived of it, and a {reserve}-byte reserve), {free} free"
    )]
    NoSpace {
        /// Bundle (or what arrived so far) + reserve.
        needed: u64,
        /// Free bytes for this user.
        free: u64,
        /// The reserve kept.
        reserve: u64,
    },
    /// No byte arrived for the stall limit.
    #[error(
        "rule upload-stall: no byte of the upload arrived for {} s ({bytes} bytes had); \
         nothing is kept",
        stall.as_secs_f64()
    )]
    Stalled {
        /// How long the body may be silent.
        stall: Duration,
        /// Bytes received before it stalled.
        bytes: u64,
    },
    /// The body ended early or could not be read.
    #[error("the upload did not arrive whole: {0}")]
    Incomplete(String),
    /// Empty body.
    #[error("the upload is empty")]
    Empty,
    /// The disk said no.
    #[error("writing the bundle to {0}")]
    Io(String),
}

/// Free bytes for an unprivileged writer in `dir`.
pub fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    let s = nix::sys::statvfs::statvfs(dir).map_err(std::io::Error::from)?;
    #[allow(clippy::unnecessary_cast)] // the field types differ between targets
    Ok(s.blocks_available() as u64 * s.fragment_size() as u64)
}

/// Creates `dir` and removes what an interrupted upload left there.
pub fn prepare(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for e in std::fs::read_dir(dir)?.flatten() {
        if e.file_name().to_string_lossy().starts_with(PARTIAL_PREFIX) {
            let _ = std::fs::remove_file(e.path());
        }
    }
    Ok(())
}

/// The name of an upload in progress: `.upload-<nonce>.raucb` (RAUC checks only files
/// named `*.raucb`; [`current`] never takes it for the spooled bundle).
fn partial_name() -> Result<String, SpoolError> {
    let mut nonce = [0u8; 8];
    getrandom::fill(&mut nonce).map_err(|e| SpoolError::Io(e.to_string()))?;
    let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{PARTIAL_PREFIX}{nonce}{SUFFIX}"))
}

/// The bundle in the spool, if there is one.
pub fn current(dir: &Path) -> Option<Spooled> {
    let entries = std::fs::read_dir(dir).ok()?;
    entries.flatten().find_map(|e| {
        let name = e.file_name().to_string_lossy().to_string();
        let sha = name.strip_suffix(SUFFIX)?;
        (sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit())).then(|| Spooled {
            sha256: sha.to_string(),
            bytes: e.metadata().map(|m| m.len()).unwrap_or(0),
            path: e.path(),
        })
    })
}

/// Removes every spooled bundle except `keep` (uploads in progress stay).
pub fn remove_others(dir: &Path, keep: Option<&Path>) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().to_string();
            if name.ends_with(SUFFIX)
                && !name.starts_with(PARTIAL_PREFIX)
                && Some(p.as_path()) != keep
            {
                let _ = std::fs::remove_file(&p);
            }
        }
    }
}

/// Streams `body` into a new partial file (`.upload-*.raucb`) in `dir`: refuses up
/// front when `announced` (Content-Length) is over `rules.limit` or over the free space
/// less the reserve; stops as soon as more than the limit arrived, when the free space
/// would fall under the reserve (checked every MiB: a chunked body announces nothing),
/// or when no byte came for `rules.stall`; hashes while writing, fsyncs. The caller
/// renames the partial file ([`Spooled::path`]) or removes it. On any error the partial
/// file is removed.
pub async fn receive<E: std::fmt::Display>(
    dir: &Path,
    body: impl Stream<Item = Result<Bytes, E>> + Unpin,
    announced: Option<u64>,
    rules: Rules,
) -> Result<Spooled, SpoolError> {
    if let Some(n) = announced.filter(|n| *n > rules.limit) {
        return Err(SpoolError::TooLarge {
            bytes: n,
            limit: rules.limit,
        });
    }
    let needed = announced.unwrap_or(0).saturating_add(rules.reserve);
    let free = free_bytes(dir).map_err(|e| SpoolError::Io(format!("{}: {e}", dir.display())))?;
    if free < needed {
        return Err(SpoolError::NoSpace {
            needed,
            free,
            reserve: rules.reserve,
        });
    }
    let partial = dir.join(partial_name()?);
    let result = write_partial(&partial, body, rules, dir).await;
    let (sha256, bytes) = match result {
        Ok(v) => v,
        Err(e) => {
            let _ = tokio::fs::remove_file(&partial).await;
            return Err(e);
        }
    };
    if let Some(n) = announced.filter(|n| *n != bytes) {
        let _ = tokio::fs::remove_file(&partial).await;
        return Err(SpoolError::Incomplete(format!(
            "{bytes} bytes arrived, Content-Length said {n}"
        )));
    }
    Ok(Spooled {
        sha256,
        bytes,
        path: partial,
    })
}

/// Gives a received upload its final name `<sha256>.raucb` in `dir`.
pub fn keep(dir: &Path, received: Spooled) -> Result<Spooled, SpoolError> {
    let path = dir.join(format!("{}{SUFFIX}", received.sha256));
    std::fs::rename(&received.path, &path)
        .map_err(|e| SpoolError::Io(format!("{}: {e}", path.display())))?;
    Ok(Spooled { path, ..received })
}

async fn write_partial<E: std::fmt::Display>(
    partial: &Path,
    mut stream: impl Stream<Item = Result<Bytes, E>> + Unpin,
    rules: Rules,
    dir: &Path,
) -> Result<(String, u64), SpoolError> {
    let io = |e: std::io::Error| SpoolError::Io(format!("{}: {e}", partial.display()));
    let mut file = tokio::fs::File::create(partial).await.map_err(io)?;
    let mut hasher = Sha256::new();
    let mut bytes: u64 = 0;
    let mut next_check = SPACE_CHECK_EVERY;
    let no_space = |bytes: u64| {
        let free = free_bytes(dir).unwrap_or(0);
        (free < rules.reserve).then_some(SpoolError::NoSpace {
            needed: bytes.saturating_add(rules.reserve),
            free,
            reserve: rules.reserve,
        })
    };
    loop {
        let chunk = match tokio::time::timeout(rules.stall, stream.next()).await {
            Err(_) => {
                return Err(SpoolError::Stalled {
                    stall: rules.stall,
                    bytes,
                });
            }
            Ok(None) => break,
            Ok(Some(chunk)) => chunk.map_err(|e| SpoolError::Incomplete(e.to_string()))?,
        };
        bytes += chunk.len() as u64;
        if bytes > rules.limit {
            return Err(SpoolError::TooLarge {
                bytes,
                limit: rules.limit,
            });
        }
        hasher.update(&chunk);
        if let Err(e) = file.write_all(&chunk).await {
            // ENOSPC mid-way (the disk filled meanwhile).
            return Err(no_space(bytes).unwrap_or_else(|| io(e)));
        }
        if bytes >= next_check {
            next_check = bytes + SPACE_CHECK_EVERY;
            if let Some(e) = no_space(bytes) {
                return Err(e);
            }
        }
    }
    if bytes == 0 {
        return Err(SpoolError::Empty);
    }
    file.sync_all().await.map_err(io)?;
    let digest = hasher.finalize();
    Ok((digest.iter().map(|b| format!("{b:02x}")).collect(), bytes))
}
