//! `GET /api/v1/system`: what the dashboard's system page shows — versions (image,
//! service, kernel, kernel module, model file and its SHA-256), the card, the pipeline,
//! the telemetry sources and uptimes.
//!
//! Owns: [`SystemBody`] and its parts, [`versions`] (reading the version files), the
//! handler, and the model digest cache. Must not:
//! hash the model on an async worker (it is tens of MB; [`model_digest`] runs on
//! `spawn_blocking`, within the file time limit, and is cached by path, size and
//! modification time). The model is read as the pipeline reads it (`crate::files`:
//! confined, a regular file, bounded), and shown relative to its root.
//! Files are read under the `--sysfs-root` (`/` normally), so tests can lay a fixture:
//! `etc/fpgagdr-image-version`, `etc/os-release`, `sys/module/fpgagdr/version`,
//! `proc/sys/kernel/osrelease`, `proc/uptime`.
//! Neighbours: `mod.rs` (status JSON, state), `webui/js/views/system.js`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use axum::Json;
use axum::extract::State;
use fpgagdr_telemetry::Source;
use serde::Serialize;
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use super::error::{ApiError, PROBLEM, Problem};
use super::pipeline::{CardInfo, MemoryInfo, PipelineStatus, status_body};
use super::state::{AppState, blocking};
use crate::files::{self, Kind, Named};

/// `GET /api/v1/system`: versions, the model file, the card, the pipeline, the telemetry
/// sources and uptimes.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SystemBody {
    /// This service.
    pub service: ServiceVersion,
    /// The appliance image, when this is one.
    pub image: ImageInfo,
    /// The running kernel.
    pub kernel: KernelInfo,
    /// The fpgagdr kernel module.
    pub module: ModuleInfo,
    /// Host uptime, s (`/proc/uptime`).
    pub host_uptime_s: Option<f64>,
    /// The model file in the config, its size and SHA-256.
    pub model: ModelFile,
    /// As in `GET /api/v1/status`.
    pub card: CardInfo,
    /// As in `GET /api/v1/status`.
    pub memory: MemoryInfo,
    /// As in `GET /api/v1/status`.
    pub pipeline: PipelineStatus,
    /// Service uptime, s.
    pub uptime_s: f64,
    /// Each telemetry source's state in the latest sample (empty before the first).
    pub telemetry_sources: Vec<Source>,
}

/// The versions [`versions`] reads.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Versions {
    /// This service.
    pub service: ServiceVersion,
    /// The appliance image, when this is one.
    pub image: ImageInfo,
    /// The running kernel.
    pub kernel: KernelInfo,
    /// The fpgagdr kernel module.
    pub module: ModuleInfo,
    /// Host uptime, s (`/proc/uptime`).
    pub host_uptime_s: Option<f64>,
}

/// This service's name and version.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ServiceVersion {
    /// `fpgagdrd`.
    pub name: &'static str,
    /// Its version.
    pub version: &'static str,
}

/// The image: an appliance build (its version, and where that was read) or not.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(untagged)]
pub enum ImageInfo {
    /// An appliance image.
    Build {
        /// Always true.
        build: bool,
        /// The image version.
        version: Option<String>,
        /// `PRETTY_NAME` of os-release.
        name: Option<String>,
        /// The file the version came from.
        source: String,
    },
    /// Not an appliance image (a development machine).
    Other {
        /// Always false.
        build: bool,
        /// `not an image build`.
        detail: &'static str,
        /// `PRETTY_NAME` of os-release.
        os: Option<String>,
    },
}

/// The running kernel.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct KernelInfo {
    /// `uname -r`.
    pub release: Option<String>,
    /// CPU architecture of this build (`x86_64`, `aarch64`).
    pub arch: &'static str,
}

/// The fpgagdr kernel module.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ModuleInfo {
    /// Whether it is loaded.
    pub loaded: bool,
    /// Its version, when it reports one.
    pub version: Option<String>,
    /// Why there is no version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<&'static str>,
}

/// The model file of the config in force.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ModelFile {
    /// Its path relative to the data directory (`models/x.onnx`) or to the
    /// `--model-root` it lies in (`model-root/x.onnx`); never absolute.
    pub path: String,
    /// Size, bytes (null when unreadable).
    pub bytes: Option<u64>,
    /// Hex SHA-256 (null when unreadable).
    pub sha256: Option<String>,
    /// Why it could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Versions (image, service, kernel, module, model file and its SHA-256), the card, the
/// pipeline, the telemetry sources and uptimes.
#[utoipa::path(get, path = "/api/v1/system", tag = "system",
    responses(
        (status = 200, description = "What the system page shows", body = SystemBody),
        (status = 500, description = "Hashing the model failed unexpectedly (`internal`)", body = Problem, content_type = PROBLEM),
    ))]
pub(super) async fn system(State(s): State<AppState>) -> Result<Json<SystemBody>, ApiError> {
    let root = s.sysfs_root.clone();
    let given = s.control.config().model.path.clone();
    let files = s.control.files().clone();
    let (v, (path, digest)) = blocking(move || {
        let digest = match files.roots.confine(&given, Kind::Model) {
            Ok(named) => {
                let (limit, timeout) = (files.max_model_bytes, files.timeout);
                let shown = named.shown.clone();
                let digest = files::with_deadline(timeout, move || Ok(model_digest(&named, limit)))
                    .map_err(|e| e.to_string())
                    .and_then(|d| d);
                (shown, digest)
            }
            Err(e) => (given.display().to_string(), Err(e.to_string())),
        };
        (versions(&root), digest)
    })
    .await?;
    let model = match digest {
        Ok((bytes, sha256)) => ModelFile {
            path,
            bytes: Some(bytes),
            sha256: Some(sha256),
            error: None,
        },
        Err(e) => ModelFile {
            path,
            bytes: None,
            sha256: None,
            error: Some(e),
        },
    };
    let st = status_body(&s);
    Ok(Json(SystemBody {
        service: v.service,
        image: v.image,
        kernel: v.kernel,
        module: v.module,
        host_uptime_s: v.host_uptime_s,
        model,
        card: st.card,
        memory: st.memory,
        pipeline: st.pipeline,
        uptime_s: st.uptime_s,
        telemetry_sources: s
            .telemetry
            .latest()
            .map(|t| t.sources.clone())
            .unwrap_or_default(),
    }))
}

/// The image version file the appliance image writes (first line: the version).
pub const IMAGE_VERSION_FILE: &str = "etc/fpgagdr-image-version";
/// The `ID` an appliance image's `os-release` carries.
pub const IMAGE_OS_ID: &str = "fpgagdr";

fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// `KEY=value` pairs of an `os-release` file, quotes removed.
fn os_release(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| {
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(v);
            (k.trim().to_string(), v.to_string())
        })
        .collect()
}

/// The image, kernel and module versions read under `root`.
pub fn versions(root: &Path) -> Versions {
    let os = std::fs::read_to_string(root.join("etc/os-release"))
        .map(|t| os_release(&t))
        .unwrap_or_default();
    let get = |k: &str| os.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
    let image_file = read_trimmed(&root.join(IMAGE_VERSION_FILE))
        .and_then(|t| t.lines().next().map(str::to_string));
    let image = if let Some(v) = image_file {
        ImageInfo::Build {
            build: true,
            version: Some(v),
            name: get("PRETTY_NAME"),
            source: format!("/{IMAGE_VERSION_FILE}"),
        }
    } else if get("ID").as_deref() == Some(IMAGE_OS_ID) {
        ImageInfo::Build {
            build: true,
            version: get("VERSION_ID")
                .or_else(|| get("BUILD_ID"))
                .or_else(|| get("VERSION")),
            name: get("PRETTY_NAME"),
            source: "/etc/os-release".into(),
        }
    } else {
        ImageInfo::Other {
            build: false,
            detail: "not an image build",
            os: get("PRETTY_NAME"),
        }
    };
    let module_dir = root.join("sys/module/fpgagdr");
    let module = if module_dir.is_dir() {
        match read_trimmed(&module_dir.join("version")) {
            Some(v) => ModuleInfo {
                loaded: true,
                version: Some(v),
                detail: None,
            },
            None => ModuleInfo {
                loaded: true,
                version: None,
                detail: Some("loaded; it reports no version"),
            },
        }
    } else {
        ModuleInfo {
            loaded: false,
            version: None,
            detail: Some("not loaded"),
        }
    };
    Versions {
        service: ServiceVersion {
            name: env!("CARGO_PKG_NAME"),
            version: env!("CARGO_PKG_VERSION"),
        },
        image,
        kernel: KernelInfo {
            release: read_trimmed(&root.join("proc/sys/kernel/osrelease")),
            arch: std::env::consts::ARCH,
        },
        module,
        host_uptime_s: read_trimmed(&root.join("proc/uptime")).and_then(|t| {
            t.split_whitespace()
                .next()
                .and_then(|v| v.parse::<f64>().ok())
        }),
    }
}

/// (path, size, mtime) → SHA-256 hex of the last model hashed.
type DigestCache = Option<(PathBuf, u64, SystemTime, String)>;
static DIGEST: Mutex<DigestCache> = Mutex::new(None);

/// Size and SHA-256 (hex) of the model file `named` (a regular file of at most `limit`
/// bytes); blocking, cached until the file changes. The error names the rule.
pub fn model_digest(named: &Named, limit: u64) -> Result<(u64, String), String> {
    let (mut f, len) =
        files::open_regular(named, limit, "an ONNX model").map_err(|e| e.to_string())?;
    let meta = f.metadata().map_err(|e| format!("{}: {e}", named.shown))?;
    let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
    let key = (named.path.clone(), len, mtime);
    if let Some((p, l, t, hex)) = &*DIGEST.lock().expect("digest cache poisoned")
        && (p, *l, *t) == (&key.0, key.1, key.2)
    {
        return Ok((*l, hex.clone()));
    }
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut read = 0u64;
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| format!("{}: {e}", named.shown))?;
        if n == 0 {
            break;
        }
        read += n as u64;
        if read > limit {
            return Err(format!(
                "{}: grew past {limit} bytes while read",
                named.shown
            ));
        }
        h.update(&buf[..n]);
    }
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    *DIGEST.lock().expect("digest cache poisoned") = Some((key.0, read, key.2, hex.clone()));
    Ok((read, hex))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_and_module_versions_from_a_fixture_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let v = serde_json::to_value(versions(root)).unwrap();
        assert_eq!(v["image"]["build"], false);
        assert_eq!(v["image"]["detail"], "not an image build");
        assert_eq!(v["module"]["detail"], "not loaded");
        std::fs::create_dir_all(root.join("etc")).unwrap();
        std::fs::write(
            root.join("etc/os-release"),
            "ID=fpgagdr\nVERSION_ID=\"1.2.3\"\nPRETTY_NAME=\"fpgagdr appliance 1.2.3\"\n",
        )
        .unwrap();
        std::fs::create_dir_all(root.join("sys/module/fpgagdr")).unwrap();
        std::fs::write(root.join("sys/module/fpgagdr/version"), "0.4.0\n").unwrap();
        let v = serde_json::to_value(versions(root)).unwrap();
        assert_eq!(v["image"]["build"], true);
        assert_eq!(v["image"]["version"], "1.2.3");
        assert_eq!(v["image"]["name"], "fpgagdr appliance 1.2.3");
        assert_eq!(v["module"]["version"], "0.4.0");
        std::fs::write(root.join(IMAGE_VERSION_FILE), "2026.05.1\n").unwrap();
        let v = serde_json::to_value(versions(root)).unwrap();
        assert_eq!(v["image"]["version"], "2026.05.1");
    }

    #[test]
    fn model_digest_is_sha256() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.onnx");
        std::fs::write(&p, b"abc").unwrap();
        let named = |path: PathBuf| Named {
            path,
            shown: "m.onnx".into(),
        };
        let (len, hex) = model_digest(&named(p.clone()), 100).unwrap();
        assert_eq!(len, 3);
        assert_eq!(
            hex,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(model_digest(&named(dir.path().join("none")), 100).is_err());
        assert!(
            model_digest(&named(p), 2)
                .unwrap_err()
                .contains("rule file-size")
        );
    }
}
