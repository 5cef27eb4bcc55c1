//! Where TensorRT's built engines are kept: one folder per model (its SHA-256) and per
//! ONNX Runtime and TensorRT release, so an engine is built once per model and runtime
//! and never loaded by a runtime it was not built with; and the engine build in
//! progress, which the service reports to systemd while it lasts (a first build takes
//! minutes on an Orin, longer than a service's start is otherwise allowed).
//!
//! Owns: [`EngineCache`] (the folder for one model, whether it holds an engine),
//! [`EngineBuild`] and [`engine_build`] (the build in progress, process-wide).
//! Must not: touch the engines themselves: ONNX Runtime's TensorRT provider writes and
//! reads them (`trt_engine_cache_enable`, `trt_engine_cache_path`), and the timing cache
//! (`trt_timing_cache_enable`, `trt_timing_cache_path`, shared by every model of one
//! runtime).
//!
//! ONNX Runtime's documentation of the TensorRT provider asks for the engine and profile
//! caches to be cleared when the model, the ONNX Runtime version, the TensorRT version or
//! the hardware changes. The model and the two versions are in the folder's path
//! (`<root>/<model sha256>/ort<version>-trt<version>/`); the GPU is in the engine files'
//! own names (`..._sm87.engine`). A folder of an older runtime for the same model is
//! removed when a new one is made. The root is the service's state directory
//! (`/var/lib/fpgagdr/tensorrt` on the image), which an OTA update carries into the new
//! slot: an update that keeps the model and the runtime keeps its engines; one that
//! changes either builds anew (docs/ota.md, *What an update keeps*).
//!
//! TensorRT is written, not run here: no machine this project is tested on has it. What
//! is tested: the folder per digest and runtime, the "cached" test, the build record.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use sha2::{Digest, Sha256};

/// The engine folder of one model for this ONNX Runtime and TensorRT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineCache {
    /// The cache's root (`inference.tensorrt.cache_dir`); TensorRT's timing cache is here.
    pub root: PathBuf,
    /// `<root>/<digest>/<runtime>`: ONNX Runtime's `trt_engine_cache_path`.
    pub dir: PathBuf,
    /// Lower-case hex SHA-256 of the model file's bytes.
    pub digest: String,
    /// `ort<ONNX Runtime version>-trt<TensorRT version>`.
    pub runtime: String,
    /// Whether the folder holds an engine (`*.engine`) already.
    pub cached: bool,
}

impl EngineCache {
    /// The folder for the model `bytes` under `root`, for `runtime` (`ort<build>-trt<version>`).
    /// Nothing is created.
    pub fn new(root: &Path, bytes: &[u8], runtime: &str) -> EngineCache {
        let digest = Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>();
        let dir = root.join(&digest).join(runtime);
        let cached = std::fs::read_dir(&dir).is_ok_and(|d| {
            d.filter_map(Result::ok)
                .any(|e| e.path().extension().is_some_and(|x| x == "engine"))
        });
        EngineCache {
            root: root.to_path_buf(),
            dir,
            digest,
            runtime: runtime.to_string(),
            cached,
        }
    }

    /// Creates the folder, and removes the folders of other runtimes for the same model
    /// (their engines cannot be loaded by this one). Errors: the folder cannot be made.
    pub fn prepare(&self) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        if let Ok(others) = std::fs::read_dir(self.root.join(&self.digest)) {
            for e in others.filter_map(Result::ok) {
                if e.file_name() != self.runtime.as_str() && e.path().is_dir() {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        Ok(())
    }

    /// The digest's first 12 hex digits, for messages.
    pub fn short(&self) -> &str {
        &self.digest[..12]
    }
}

/// ONNX Runtime's build, from its build information (`ort::info()`, e.g. "ORT Build
/// Info: git-branch=rel-1.31.1, git-commit-id=26250ae, ..."): `rel-1.31.1-26250ae`, else
/// the first 12 hex digits of the text's SHA-256.
pub(crate) fn ort_build(info: &str) -> String {
    let field = |k: &str| {
        info.split([',', ' '])
            .find_map(|w| w.strip_prefix(k))
            .filter(|v| {
                !v.is_empty()
                    && v.chars()
                        .all(|c| c.is_ascii_alphanumeric() || ".-_".contains(c))
            })
    };
    match (field("git-branch="), field("git-commit-id=")) {
        (Some(b), Some(c)) => format!("{b}-{c}"),
        _ => Sha256::digest(info.as_bytes())[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    }
}

/// `ort<ort>-trt<trt>`; a TensorRT that cannot be asked is `unknown`.
pub(crate) fn runtime_key(ort: &str, trt: Option<u32>) -> String {
    let trt = trt.map_or_else(
        || "unknown".to_string(),
        |v| format!("{}.{}.{}", v / 10000, v / 100 % 100, v % 100),
    );
    format!("ort{ort}-trt{trt}")
}

/// TensorRT's version as `getInferLibVersion()` of `libnvinfer` reports it (MAJOR ×
/// 10000 + MINOR × 100 + PATCH, NvInferVersion.h), from the first of
/// `libnvinfer.so.10`, `.11`, `.9`, `.8` the dynamic loader finds; `None` when none
/// loads. Written, not run: there is no TensorRT on the machines this is tested on.
pub(crate) fn tensorrt_version() -> Option<u32> {
    for soname in [
        "libnvinfer.so.10",
        "libnvinfer.so.11",
        "libnvinfer.so.9",
        "libnvinfer.so.8",
    ] {
        #[allow(unsafe_code)]
        // SAFETY: loading TensorRT runs its initialisers, as ONNX Runtime's TensorRT
        // provider does when it loads it; the symbol is `int32_t getInferLibVersion(void)`
        // (extern "C", NvInferRuntimeBase.h), called with no arguments while the library
        // is held.
        let version = unsafe {
            let Ok(lib) = libloading::Library::new(soname) else {
                continue;
            };
            let Ok(f) = lib.get::<unsafe extern "C" fn() -> i32>(b"getInferLibVersion\0") else {
                continue;
            };
            f()
        };
        if let Ok(v) = u32::try_from(version) {
            return Some(v);
        }
    }
    None
}

/// A TensorRT engine build in progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineBuild {
    /// The model's SHA-256, first 12 hex digits.
    pub model: String,
    /// Where the engine will be kept.
    pub dir: PathBuf,
    /// Since when.
    pub since: Instant,
}

static BUILD: Mutex<Option<EngineBuild>> = Mutex::new(None);

/// The engine build in progress in this process, if any: while a model whose engine is
/// not cached is loaded with the TensorRT provider (the session made and its first run,
/// which is when TensorRT builds).
pub fn engine_build() -> Option<EngineBuild> {
    BUILD.lock().map_or(None, |b| b.clone())
}

/// Records a build for as long as it lives.
pub(crate) struct BuildGuard(());

impl BuildGuard {
    pub(crate) fn start(cache: &EngineCache) -> BuildGuard {
        if let Ok(mut b) = BUILD.lock() {
            *b = Some(EngineBuild {
                model: cache.short().to_string(),
                dir: cache.dir.clone(),
                since: Instant::now(),
            });
        }
        BuildGuard(())
    }
}

impl Drop for BuildGuard {
    fn drop(&mut self) {
        if let Ok(mut b) = BUILD.lock() {
            *b = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_folder_per_model_digest_and_runtime() {
        let root = tempfile::tempdir().unwrap();
        let a = EngineCache::new(root.path(), b"model a", "ort1.31.1-trt10.3.0");
        let b = EngineCache::new(root.path(), b"model b", "ort1.31.1-trt10.3.0");
        assert_ne!(a.dir, b.dir);
        assert_eq!(a.digest.len(), 64);
        // sha256("model a")
        assert!(a.dir.starts_with(root.path().join(&a.digest)));
        assert!(a.dir.ends_with("ort1.31.1-trt10.3.0"));
        assert!(!a.cached);
        a.prepare().unwrap();
        std::fs::write(a.dir.join("TensorrtExecutionProvider_x_sm87.engine"), b"e").unwrap();
        assert!(EngineCache::new(root.path(), b"model a", "ort1.31.1-trt10.3.0").cached);
        assert!(!EngineCache::new(root.path(), b"model b", "ort1.31.1-trt10.3.0").cached);
    }

    #[test]
    fn a_new_runtime_builds_anew_and_drops_the_old_runtimes_engines() {
        let root = tempfile::tempdir().unwrap();
        let old = EngineCache::new(root.path(), b"m", "ort1.31.1-trt10.3.0");
        old.prepare().unwrap();
        std::fs::write(old.dir.join("e.engine"), b"e").unwrap();
        let new = EngineCache::new(root.path(), b"m", "ort1.31.1-trt10.16.2");
        assert!(
            !new.cached,
            "an engine of TensorRT 10.3 is not one for 10.16"
        );
        new.prepare().unwrap();
        assert!(!old.dir.exists());
        assert!(new.dir.is_dir());
    }

    #[test]
    fn the_onnx_runtime_build_comes_from_its_build_information() {
        assert_eq!(
            ort_build(
                "ORT Build Info: git-branch=rel-1.31.1, git-commit-id=26250ae, build type=Release"
            ),
            "rel-1.31.1-26250ae"
        );
        let odd = ort_build("something else");
        assert_eq!(odd.len(), 12);
        assert_ne!(odd, ort_build("something else, too"));
    }

    #[test]
    fn the_runtime_key_spells_both_versions() {
        assert_eq!(runtime_key("1.31.1", Some(100_302)), "ort1.31.1-trt10.3.2");
        assert_eq!(runtime_key("1.31.1", None), "ort1.31.1-trtunknown");
    }

    #[test]
    fn a_build_is_recorded_while_it_lasts() {
        let root = tempfile::tempdir().unwrap();
        let c = EngineCache::new(root.path(), b"m", "k");
        {
            let _g = BuildGuard::start(&c);
            let b = engine_build().expect("recorded");
            assert_eq!(b.model, c.short());
        }
        assert_eq!(engine_build(), None);
    }

    #[test]
    fn no_tensorrt_here_is_no_version() {
        // The machines this runs on have no libnvinfer; where one has, this is its version.
        if let Some(v) = tensorrt_version() {
            assert!(v >= 80_000, "{v}");
        }
    }
}
