//! The spool: where an uploaded bundle waits for its installation.
//!
//! Owns: [`receive`] (stream a request body to disk with a size limit, a free-space
//! check and SHA-256), [`Spooled`], and the layout of the directory: at most one bundle,
//! `<sha256>.raucb`, plus `.upload-*` files while an upload runs (removed on any error,
//! and at start). Must not: talk to RAUC (that is `ota/mod.rs`).

use std::path::{Path, PathBuf};

use bytes::Bytes;
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;
use tokio_stream::{Stream, StreamExt};

/// Free space kept beyond the bundle itself, bytes: the appliance's logs and config must
/// still fit after an upload.
pub const RESERVE_BYTES: u64 = 64 * 1024 * 1024;
/// File name suffix of a spooled bundle.
pub const SUFFIX: &str = ".raucb";
const PARTIAL_PREFIX: &str = ".upload-";

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
        "not enough free space in {dir}: {needed} bytes needed (the bundle and a {RESERVE_BYTES}-byte reserve), {free} free"
    )]
    NoSpace {
        /// The spool directory.
        dir: String,
        /// Bundle + reserve.
        needed: u64,
        /// Free bytes for this user.
        free: u64,
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

/// Removes every spooled bundle except `keep`.
pub fn remove_others(dir: &Path, keep: Option<&Path>) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.to_string_lossy().ends_with(SUFFIX) && Some(p.as_path()) != keep {
                let _ = std::fs::remove_file(&p);
            }
        }
    }
}

/// Streams `body` into `dir`: refuses up front when `announced` (Content-Length) is over
/// `limit` or over the free space, stops as soon as more than `limit` bytes arrived,
/// hashes while writing, fsyncs, and only then gives the file its final name. On any
/// error the partial file is removed.
pub async fn receive<E: std::fmt::Display>(
    dir: &Path,
    body: impl Stream<Item = Result<Bytes, E>> + Unpin,
    announced: Option<u64>,
    limit: u64,
) -> Result<Spooled, SpoolError> {
    if let Some(n) = announced.filter(|n| *n > limit) {
        return Err(SpoolError::TooLarge { bytes: n, limit });
    }
    let needed = announced.unwrap_or(0).saturating_add(RESERVE_BYTES);
    let free = free_bytes(dir).map_err(|e| SpoolError::Io(format!("{}: {e}", dir.display())))?;
    if free < needed {
        return Err(SpoolError::NoSpace {
            dir: dir.display().to_string(),
            needed,
            free,
        });
    }
    let mut nonce = [0u8; 8];
    getrandom::fill(&mut nonce).map_err(|e| SpoolError::Io(e.to_string()))?;
    let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
    let partial = dir.join(format!("{PARTIAL_PREFIX}{nonce}"));
    let result = write_partial(&partial, body, limit, dir).await;
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
    let path = dir.join(format!("{sha256}{SUFFIX}"));
    tokio::fs::rename(&partial, &path)
        .await
        .map_err(|e| SpoolError::Io(format!("{}: {e}", path.display())))?;
    Ok(Spooled {
        sha256,
        bytes,
        path,
    })
}

async fn write_partial<E: std::fmt::Display>(
    partial: &Path,
    mut stream: impl Stream<Item = Result<Bytes, E>> + Unpin,
    limit: u64,
    dir: &Path,
) -> Result<(String, u64), SpoolError> {
    let io = |e: std::io::Error| SpoolError::Io(format!("{}: {e}", partial.display()));
    let mut file = tokio::fs::File::create(partial).await.map_err(io)?;
    let mut hasher = Sha256::new();
    let mut bytes: u64 = 0;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| SpoolError::Incomplete(e.to_string()))?;
        bytes += chunk.len() as u64;
        if bytes > limit {
            return Err(SpoolError::TooLarge { bytes, limit });
        }
        hasher.update(&chunk);
        if let Err(e) = file.write_all(&chunk).await {
            // ENOSPC mid-way (no Content-Length, or the disk filled meanwhile).
            let free = free_bytes(dir).unwrap_or(0);
            return Err(if free < chunk.len() as u64 {
                SpoolError::NoSpace {
                    dir: dir.display().to_string(),
                    needed: bytes,
                    free,
                }
            } else {
                io(e)
            });
        }
    }
    if bytes == 0 {
        return Err(SpoolError::Empty);
    }
    file.sync_all().await.map_err(io)?;
    let digest = hasher.finalize();
    Ok((digest.iter().map(|b| format!("{b:02x}")).collect(), bytes))
}
