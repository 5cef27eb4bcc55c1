//! The files a config names (model, labels, replay frames, the MQTT broker's CA), as
//! the service may read them (issue 18).
//!
//! Owns: [`Roots`] (where such files may lie: the data directory, and for models,
//! frames and CA files the `--model-root` / `--frames-root` / `--cert-root`
//! directories), [`Roots::confine`] (a
//! path from the config → the real file, or a refusal that says nothing about what is
//! outside), the names shown for them (relative to their root, never absolute),
//! [`open_regular`] / [`read_regular`] (regular files only, bounded in size, never
//! blocking on a FIFO or a device), [`with_deadline`] (reading off the caller's
//! thread, within a time limit), and [`FileError`]. Must not: interpret a file (the
//! model, labels and images are `fpgagdr-infer`'s and `fpgagdr-sim`'s).
//!
//! Confinement: a relative path is taken from the data directory; the path, with `.`
//! and `..` resolved as written, must lie in the data directory or one of the kind's
//! roots, and so must the file it resolves to (symbolic links followed, compared with
//! the roots' own real paths): a link inside a root to a file outside them is outside.
//! A path outside gets `rule path-confined`, whether or not anything is there; only
//! inside a root does an error say a file is missing. The file is then opened by its
//! resolved path; files of a replay folder are opened without following links.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::time::Duration;

/// Largest labels file, bytes (ImageNet's 1000 labels take 22 kB).
pub const MAX_LABELS_BYTES: u64 = 4 * 1024 * 1024;
/// Largest image file of a replay, bytes (an 8192 × 8192 colour PPM is 192 MiB).
pub const MAX_FRAME_FILE_BYTES: u64 = 256 * 1024 * 1024;
/// Largest CA file (PEM) for TLS, bytes (Debian's whole CA bundle is about 220 kB).
pub const MAX_CA_BYTES: u64 = 1024 * 1024;
/// Default of `--max-model-bytes`: largest ONNX model, bytes.
pub const DEFAULT_MAX_MODEL_BYTES: u64 = 512 * 1024 * 1024;
/// Default of `--file-timeout-s`: how long reading a config's files may take.
pub const DEFAULT_FILE_TIMEOUT: Duration = Duration::from_secs(30);
/// Reading threads that ran out of time and still hang (a stuck file system) before
/// further reads are refused instead of starting more.
pub const MAX_STUCK_READERS: usize = 4;

/// The data directory relative paths are resolved against: `$FPGAGDR_DATA_DIR`, else
/// `/usr/share/fpgagdr` (where the image installs the default model and frames).
pub fn data_dir() -> PathBuf {
    std::env::var_os("FPGAGDR_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/share/fpgagdr"))
}

/// What kind of file a path names: it decides the roots it may lie in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An ONNX model or its labels: the data directory or a `--model-root`.
    Model,
    /// Replay frames (a file or a directory): the data directory or a `--frames-root`.
    Frames,
    /// A CA file for TLS (`outputs.mqtt.ca_file`): the data directory or a `--cert-root`.
    Cert,
}

/// Why a file named by the config cannot be used. Every message names its rule; none
/// says anything about a path outside the roots.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// The path lies outside the data directory and the kind's roots.
    #[error(
        "rule path-confined: {given:?} is outside the data directory{roots}; name a file \
         there (a relative path is taken from the data directory)"
    )]
    Confined {
        /// The path as the config gives it.
        given: String,
        /// The roots besides the data directory, in words (`""` when none).
        roots: String,
    },
    /// Nothing is there (inside a root).
    #[error("rule file-missing: {0}: no such file or directory")]
    Missing(String),
    /// Not a regular file (a FIFO, a device, a directory where a file belongs).
    #[error("rule file-type: {shown} is {what}, not a regular file")]
    Type {
        /// The file's shown name.
        shown: String,
        /// What it is.
        what: &'static str,
    },
    /// Larger than the limit for its kind.
    #[error("rule file-size: {shown} is {bytes} bytes, over the limit of {limit} bytes for {what}")]
    Size {
        /// The file's shown name.
        shown: String,
        /// Its size.
        bytes: u64,
        /// The limit.
        limit: u64,
        /// What kind of file.
        what: &'static str,
    },
    /// Opening or reading failed.
    #[error("rule file-read: {shown}: {reason}")]
    Read {
        /// The file's shown name.
        shown: String,
        /// The system's reason.
        reason: String,
    },
    /// Reading took longer than the limit (a stuck file system).
    #[error(
        "rule file-timeout: reading the config's files took longer than {secs} s \
         (--file-timeout-s); the file system may be stuck"
    )]
    Timeout {
        /// The limit, s.
        secs: f64,
    },
    /// Earlier reads still hang.
    #[error(
        "rule file-timeout: {0} earlier reads of the config's files still hang; \
         the file system is stuck"
    )]
    Stuck(usize),
}

/// A root directory: as given, and as resolved.
#[derive(Debug, Clone)]
struct Root {
    given: PathBuf,
    real: PathBuf,
    /// How a path in it is shown: `""` for the data directory, else `model-root/`,
    /// `frames-root-2/`, ...
    label: String,
}

impl Root {
    fn new(given: &Path, label: String) -> Root {
        Root {
            given: lexical(given).unwrap_or_else(|| given.to_path_buf()),
            real: std::fs::canonicalize(given).unwrap_or_else(|_| given.to_path_buf()),
            label,
        }
    }

    /// `path` (resolved lexically) relative to this root, if it lies in it (as the root
    /// was given or as it resolves).
    fn relative<'p>(&self, path: &'p Path) -> Option<&'p Path> {
        path.strip_prefix(&self.real)
            .or_else(|_| path.strip_prefix(&self.given))
            .ok()
    }

    fn show(&self, rel: &Path) -> String {
        let rel = if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        };
        format!("{}{}", self.label, rel.display())
    }
}

/// A file a config names, confined: where it really is, and how it is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// The resolved path (no `..`, no symbolic link).
    pub path: PathBuf,
    /// Its name relative to its root (`models/x.onnx`, `model-root/x.onnx`).
    pub shown: String,
}

/// Where the files a config names may lie.
#[derive(Debug, Clone)]
pub struct Roots {
    data: Root,
    models: Vec<Root>,
    frames: Vec<Root>,
    certs: Vec<Root>,
}

fn labelled(roots: &[PathBuf], kind: &str) -> Vec<Root> {
    roots
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let label = if i == 0 {
                format!("{kind}/")
            } else {
                format!("{kind}-{}/", i + 1)
            };
            Root::new(r, label)
        })
        .collect()
}

impl Roots {
    /// The data directory `data` (relative paths resolve there), and the extra roots of
    /// models (and their labels) and frames.
    pub fn new(data: &Path, models: &[PathBuf], frames: &[PathBuf]) -> Roots {
        Roots {
            data: Root::new(data, String::new()),
            models: labelled(models, "model-root"),
            frames: labelled(frames, "frames-root"),
            certs: Vec::new(),
        }
    }

    /// These roots, and `certs` as the extra roots of CA files (`--cert-root`).
    pub fn with_cert_roots(mut self, certs: &[PathBuf]) -> Roots {
        self.certs = labelled(certs, "cert-root");
        self
    }

    fn of(&self, kind: Kind) -> impl Iterator<Item = &Root> {
        std::iter::once(&self.data).chain(match kind {
            Kind::Model => self.models.iter(),
            Kind::Frames => self.frames.iter(),
            Kind::Cert => self.certs.iter(),
        })
    }

    fn refusal(&self, given: &Path, kind: Kind) -> FileError {
        let roots = match kind {
            Kind::Model if !self.models.is_empty() => " and every --model-root",
            Kind::Frames if !self.frames.is_empty() => " and every --frames-root",
            Kind::Cert if !self.certs.is_empty() => " and every --cert-root",
            _ => "",
        };
        FileError::Confined {
            given: given.display().to_string(),
            roots: roots.into(),
        }
    }

    /// The file `given` names (relative: from the data directory), if, with `.` and
    /// `..` resolved as written, it lies in the data directory or one of `kind`'s roots,
    /// and the file it resolves to (links followed) does too. The returned path is the
    /// resolved one.
    ///
    /// Errors: [`FileError::Confined`] for a path outside, or a link to outside
    /// (whatever is there), [`FileError::Missing`] for nothing there inside a root.
    pub fn confine(&self, given: &Path, kind: Kind) -> Result<Named, FileError> {
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.data.given.join(given)
        };
        let Some(path) = lexical(&joined) else {
            return Err(self.refusal(given, kind));
        };
        let Some(shown) = self
            .of(kind)
            .find_map(|r| r.relative(&path).map(|rel| r.show(rel)))
        else {
            return Err(self.refusal(given, kind));
        };
        match std::fs::canonicalize(&path) {
            // A link inside a root leads where it leads: the real path must be inside
            // one of the roots (as they really are) too.
            Ok(real) if self.of(kind).any(|r| real.starts_with(&r.real)) => {
                Ok(Named { path: real, shown })
            }
            Ok(_) => Err(self.refusal(given, kind)),
            Err(_) => Err(FileError::Missing(shown)),
        }
    }

    /// The image files of the replay source `named` (a file, or the image files directly
    /// in a directory, in name order, at most [`fpgagdr_sim::MAX_IMAGES`] + 1 so that
    /// the caller can refuse too many), each opened with [`open_regular`] (a link in a
    /// folder is refused, not followed).
    pub fn frame_files(&self, named: &Named) -> Result<Vec<(String, std::fs::File)>, FileError> {
        let read_err = |reason: std::io::Error| FileError::Read {
            shown: named.shown.clone(),
            reason: reason.to_string(),
        };
        let meta = std::fs::metadata(&named.path).map_err(read_err)?;
        let paths = if meta.is_dir() {
            let mut paths = Vec::new();
            for e in std::fs::read_dir(&named.path).map_err(read_err)? {
                let p = e.map_err(read_err)?.path();
                if fpgagdr_sim::is_image_name(&p) {
                    if paths.len() > fpgagdr_sim::MAX_IMAGES {
                        break;
                    }
                    paths.push(p);
                }
            }
            paths.sort();
            paths
        } else {
            vec![named.path.clone()]
        };
        paths
            .iter()
            .take(fpgagdr_sim::MAX_IMAGES + 1)
            .map(|p| {
                // A file of the folder is opened where it is, a link in its place refused
                // (open_regular: O_NOFOLLOW).
                let file = if meta.is_dir() {
                    Named {
                        path: p.clone(),
                        shown: Path::new(&named.shown)
                            .join(p.file_name().unwrap_or_default())
                            .display()
                            .to_string(),
                    }
                } else {
                    named.clone()
                };
                let (f, _) = open_regular(&file, MAX_FRAME_FILE_BYTES, "an image file")?;
                Ok((file.shown, f))
            })
            .collect()
    }
}

/// `path` with `.` and `..` resolved lexically (`None` when `..` climbs above `/`).
fn lexical(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                if !out.pop() || out.as_os_str().is_empty() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    Some(out)
}

/// Opens `file` for reading if it is a regular file of at most `limit` bytes, without
/// blocking (a FIFO or device is refused, never opened for a read that waits) and
/// without following a link put in its place since it was resolved. Returns the file
/// and its size.
pub fn open_regular(
    file: &Named,
    limit: u64,
    what: &'static str,
) -> Result<(std::fs::File, u64), FileError> {
    use nix::fcntl::OFlag;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NONBLOCK | OFlag::O_NOFOLLOW | OFlag::O_NOCTTY).bits())
        .open(&file.path)
        .map_err(|e| FileError::Read {
            shown: file.shown.clone(),
            reason: e.to_string(),
        })?;
    let meta = f.metadata().map_err(|e| FileError::Read {
        shown: file.shown.clone(),
        reason: e.to_string(),
    })?;
    let t = meta.file_type();
    if !t.is_file() {
        let what = if t.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a FIFO"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else if t.is_socket() {
            "a socket"
        } else {
            "something else"
        };
        return Err(FileError::Type {
            shown: file.shown.clone(),
            what,
        });
    }
    if meta.len() > limit {
        return Err(FileError::Size {
            shown: file.shown.clone(),
            bytes: meta.len(),
            limit,
            what,
        });
    }
    Ok((f, meta.len()))
}

/// The contents of `file`, a regular file of at most `limit` bytes ([`open_regular`]);
/// a file that grows past the limit while it is read is refused too.
pub fn read_regular(file: &Named, limit: u64, what: &'static str) -> Result<Vec<u8>, FileError> {
    use std::io::Read;
    let (f, len) = open_regular(file, limit, what)?;
    let mut bytes = Vec::with_capacity(len as usize);
    f.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| FileError::Read {
            shown: file.shown.clone(),
            reason: e.to_string(),
        })?;
    if bytes.len() as u64 > limit {
        return Err(FileError::Size {
            shown: file.shown.clone(),
            bytes: bytes.len() as u64,
            limit,
            what,
        });
    }
    Ok(bytes)
}

/// How the files of a config are found and read: the roots, the model's size limit and
/// the time limit of the reads.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Where they may lie.
    pub roots: Roots,
    /// `--max-model-bytes`.
    pub max_model_bytes: u64,
    /// `--file-timeout-s`.
    pub timeout: Duration,
}

impl Policy {
    /// The defaults, with `roots`.
    pub fn new(roots: Roots) -> Policy {
        Policy {
            roots,
            max_model_bytes: DEFAULT_MAX_MODEL_BYTES,
            timeout: DEFAULT_FILE_TIMEOUT,
        }
    }

    /// The defaults: files in the data directory ([`data_dir`]) only.
    pub fn in_data_dir() -> Policy {
        Policy::new(Roots::new(&data_dir(), &[], &[]))
    }
}

static STUCK: AtomicUsize = AtomicUsize::new(0);

/// Runs `read` (file reads) on a thread of its own and waits at most `timeout` for it.
/// A read that runs out of time is left to finish (or hang) on its own, its result
/// dropped; while [`MAX_STUCK_READERS`] such reads still hang, further ones are refused
/// at once.
///
/// Errors: [`FileError::Timeout`], [`FileError::Stuck`], or the read's own.
pub fn with_deadline<T: Send + 'static>(
    timeout: Duration,
    read: impl FnOnce() -> Result<T, FileError> + Send + 'static,
) -> Result<T, FileError> {
    let stuck = STUCK.load(Ordering::Acquire);
    if stuck >= MAX_STUCK_READERS {
        return Err(FileError::Stuck(stuck));
    }
    // 0: running; 1: its result was taken; 2: given up on.
    let fate = Arc::new(AtomicU8::new(0));
    let mine = fate.clone();
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let spawned = std::thread::Builder::new()
        .name("fpgagdr-files".into())
        .spawn(move || {
            let out = read();
            if mine
                .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                let _ = tx.send(out);
            } else {
                STUCK.fetch_sub(1, Ordering::AcqRel);
            }
        });
    if let Err(e) = spawned {
        return Err(FileError::Read {
            shown: "a reading thread".into(),
            reason: e.to_string(),
        });
    }
    match rx.recv_timeout(timeout) {
        Ok(out) => out,
        Err(_) => {
            STUCK.fetch_add(1, Ordering::AcqRel);
            if fate
                .compare_exchange(0, 2, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                tracing::warn!("reading the config's files took longer than {timeout:?}");
                return Err(FileError::Timeout {
                    secs: timeout.as_secs_f64(),
                });
            }
            // It finished just now.
            STUCK.fetch_sub(1, Ordering::AcqRel);
            rx.recv().unwrap_or(Err(FileError::Timeout {
                secs: timeout.as_secs_f64(),
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, Roots) {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir_all(data.join("models")).unwrap();
        std::fs::write(data.join("models/m.onnx"), b"onnx").unwrap();
        let extra = dir.path().join("extra");
        std::fs::create_dir_all(&extra).unwrap();
        std::fs::write(extra.join("x.onnx"), b"onnx").unwrap();
        std::fs::write(dir.path().join("secret"), b"1\n2\n3\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), data.join("models/link")).unwrap();
        let roots = Roots::new(&data, &[extra], &[]);
        (dir, roots)
    }

    #[test]
    fn paths_resolve_inside_the_roots_and_are_shown_relative() {
        let (dir, roots) = tree();
        let n = roots
            .confine(Path::new("models/m.onnx"), Kind::Model)
            .unwrap();
        assert_eq!(n.shown, "models/m.onnx");
        let abs = dir.path().join("data/models/./m.onnx");
        assert_eq!(roots.confine(&abs, Kind::Model).unwrap(), n);
        let x = roots
            .confine(&dir.path().join("extra/x.onnx"), Kind::Model)
            .unwrap();
        assert_eq!(x.shown, "model-root/x.onnx");
        // The model roots are not the frames'.
        assert!(matches!(
            roots.confine(&dir.path().join("extra/x.onnx"), Kind::Frames),
            Err(FileError::Confined { .. })
        ));
    }

    #[test]
    fn ca_files_lie_in_the_data_directory_or_a_cert_root_only() {
        let (dir, roots) = tree();
        let certs = dir.path().join("certs");
        std::fs::create_dir_all(&certs).unwrap();
        std::fs::write(certs.join("ca.pem"), b"pem").unwrap();
        let ca = certs.join("ca.pem");
        // Without --cert-root: outside; a model root is not a cert root.
        assert!(matches!(
            roots.confine(&ca, Kind::Cert),
            Err(FileError::Confined { .. })
        ));
        assert!(matches!(
            roots.confine(&dir.path().join("extra/x.onnx"), Kind::Cert),
            Err(FileError::Confined { .. })
        ));
        let roots = roots.with_cert_roots(std::slice::from_ref(&certs));
        assert_eq!(
            roots.confine(&ca, Kind::Cert).unwrap().shown,
            "cert-root/ca.pem"
        );
        let e = roots
            .confine(&certs.join("../secret"), Kind::Cert)
            .unwrap_err();
        assert!(e.to_string().contains("--cert-root"), "{e}");
        // The cert roots are not the models'.
        assert!(matches!(
            roots.confine(&ca, Kind::Model),
            Err(FileError::Confined { .. })
        ));
    }

    #[test]
    fn outside_is_refused_alike_whether_or_not_something_is_there() {
        let (dir, roots) = tree();
        let secret = dir.path().join("secret");
        for given in [
            secret.clone(),
            dir.path().join("nothing-here"),
            PathBuf::from("../secret"),
            PathBuf::from("../../../../../../../../secret"),
            PathBuf::from("models/../../secret"),
        ] {
            let e = roots.confine(&given, Kind::Model).unwrap_err();
            assert!(matches!(e, FileError::Confined { .. }), "{given:?}: {e}");
            assert!(
                e.to_string().starts_with("rule path-confined"),
                "{given:?}: {e}"
            );
        }
        // A link inside the data directory to a file outside the roots is outside;
        // one to a file inside a root is followed, shown by its name where it is.
        let e = roots
            .confine(Path::new("models/link"), Kind::Model)
            .unwrap_err();
        assert!(matches!(e, FileError::Confined { .. }), "{e}");
        assert!(!e.to_string().contains("secret"), "{e}");
        std::os::unix::fs::symlink(
            dir.path().join("extra/x.onnx"),
            dir.path().join("data/models/in"),
        )
        .unwrap();
        let link = roots.confine(Path::new("models/in"), Kind::Model).unwrap();
        assert_eq!(link.shown, "models/in");
        assert_eq!(
            link.path,
            std::fs::canonicalize(dir.path().join("extra/x.onnx")).unwrap()
        );
        // ... but only into a root of its own kind.
        assert!(matches!(
            roots.confine(Path::new("models/in"), Kind::Frames),
            Err(FileError::Confined { .. })
        ));
        let e = roots
            .confine(Path::new("models/none.onnx"), Kind::Model)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "rule file-missing: models/none.onnx: no such file or directory"
        );
    }

    #[test]
    fn only_regular_files_within_their_limit_are_read() {
        let (dir, roots) = tree();
        let m = roots
            .confine(Path::new("models/m.onnx"), Kind::Model)
            .unwrap();
        assert_eq!(read_regular(&m, 4, "a model").unwrap(), b"onnx");
        let e = read_regular(&m, 3, "a model").unwrap_err();
        assert!(e.to_string().starts_with("rule file-size"), "{e}");
        let d = Named {
            path: dir.path().join("data/models"),
            shown: "models".into(),
        };
        let e = read_regular(&d, 100, "a model").unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        let fifo = dir.path().join("data/fifo");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let f = Named {
            path: fifo,
            shown: "fifo".into(),
        };
        let e = read_regular(&f, 100, "labels").unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        let zero = Named {
            path: "/dev/zero".into(),
            shown: "zero".into(),
        };
        let e = read_regular(&zero, 100, "labels").unwrap_err();
        assert!(e.to_string().contains("a device"), "{e}");
    }

    #[test]
    fn a_read_past_its_deadline_is_given_up() {
        let e = with_deadline(Duration::from_millis(50), || {
            std::thread::sleep(Duration::from_millis(400));
            Ok(())
        })
        .unwrap_err();
        assert!(e.to_string().starts_with("rule file-timeout"), "{e}");
        assert_eq!(with_deadline(Duration::from_secs(5), || Ok(7)).unwrap(), 7);
    }
}
