//! `GET /api/v1/system`: what the dashboard's system page shows — versions (image,
//! service, kernel, kernel module, model file and its SHA-256), the card, the pipeline,
//! the telemetry sources and uptimes.
//!
//! Owns: [`versions`] (reading the version files) and the model digest cache. Must not:
//! hash the model on an async worker (it is tens of MB; [`model_digest`] runs on
//! `spawn_blocking` and is cached by path, size and modification time).
//! Files are read under the `--sysfs-root` (`/` normally), so tests can lay a fixture:
//! `etc/fpgagdr-image-version`, `etc/os-release`, `sys/module/fpgagdr/version`,
//! `proc/sys/kernel/osrelease`, `proc/uptime`.
//! Neighbours: `mod.rs` (status JSON, state), `webui/js/views/system.js`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

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
pub fn versions(root: &Path) -> Value {
    let os = std::fs::read_to_string(root.join("etc/os-release"))
        .map(|t| os_release(&t))
        .unwrap_or_default();
    let get = |k: &str| os.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
    let image_file = read_trimmed(&root.join(IMAGE_VERSION_FILE))
        .and_then(|t| t.lines().next().map(str::to_string));
    let image = if let Some(v) = image_file {
        json!({"build": true, "version": v, "name": get("PRETTY_NAME"), "source": format!("/{IMAGE_VERSION_FILE}")})
    } else if get("ID").as_deref() == Some(IMAGE_OS_ID) {
        json!({"build": true,
               "version": get("VERSION_ID").or_else(|| get("BUILD_ID")).or_else(|| get("VERSION")),
               "name": get("PRETTY_NAME"), "source": "/etc/os-release"})
    } else {
        json!({"build": false, "detail": "not an image build", "os": get("PRETTY_NAME")})
    };
    let module_dir = root.join("sys/module/fpgagdr");
    let module = if module_dir.is_dir() {
        match read_trimmed(&module_dir.join("version")) {
            Some(v) => json!({"loaded": true, "version": v}),
            None => {
                json!({"loaded": true, "version": null, "detail": "loaded; it reports no version"})
            }
        }
    } else {
        json!({"loaded": false, "version": null, "detail": "not loaded"})
    };
    json!({
        "service": {"name": env!("CARGO_PKG_NAME"), "version": env!("CARGO_PKG_VERSION")},
        "image": image,
        "kernel": {"release": read_trimmed(&root.join("proc/sys/kernel/osrelease")), "arch": std::env::consts::ARCH},
        "module": module,
        "host_uptime_s": read_trimmed(&root.join("proc/uptime"))
            .and_then(|t| t.split_whitespace().next().and_then(|v| v.parse::<f64>().ok())),
    })
}

/// (path, size, mtime) → SHA-256 hex of the last model hashed.
type DigestCache = Option<(PathBuf, u64, SystemTime, String)>;
static DIGEST: Mutex<DigestCache> = Mutex::new(None);

/// Size and SHA-256 (hex) of the model file; blocking, cached until the file changes.
pub fn model_digest(path: &Path) -> Result<(u64, String), String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
    let key = (path.to_path_buf(), meta.len(), mtime);
    if let Some((p, len, t, hex)) = &*DIGEST.lock().expect("digest cache poisoned")
        && (p, *len, *t) == (&key.0, key.1, key.2)
    {
        return Ok((*len, hex.clone()));
    }
    let mut f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    *DIGEST.lock().expect("digest cache poisoned") = Some((key.0, key.1, key.2, hex.clone()));
    Ok((key.1, hex))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_and_module_versions_from_a_fixture_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let v = versions(root);
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
        let v = versions(root);
        assert_eq!(v["image"]["build"], true);
        assert_eq!(v["image"]["version"], "1.2.3");
        assert_eq!(v["image"]["name"], "fpgagdr appliance 1.2.3");
        assert_eq!(v["module"]["version"], "0.4.0");
        std::fs::write(root.join(IMAGE_VERSION_FILE), "2026.05.1\n").unwrap();
        assert_eq!(versions(root)["image"]["version"], "2026.05.1");
    }

    #[test]
    fn model_digest_is_sha256() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.onnx");
        std::fs::write(&p, b"abc").unwrap();
        let (len, hex) = model_digest(&p).unwrap();
        assert_eq!(len, 3);
        assert_eq!(
            hex,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(model_digest(&dir.path().join("none")).is_err());
    }
}
