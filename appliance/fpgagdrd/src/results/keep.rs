//! The frame keeper: the frames whose result matched an alert rule, as PNG files under
//! the state directory, within a count and a byte bound (`outputs.alerts.keep_frames`).
//!
//! Owns: [`Keeper`] (its thread `fpgagdr-keep`, which encodes and writes; the index of
//! what is kept; the bounds; its status), [`KeepSender`] (the inference thread's side:
//! at most [`KEEP_IN_FLIGHT`] frames copied and not yet written, more are skipped and
//! counted, so a storm of matches costs the frame path nothing but a comparison),
//! [`KeptFrame`] (one kept frame, as `GET /api/v1/alerts/frames` lists it).
//! Must not: hold a ring entry (it receives a copy the inference thread made while it
//! held the entry), or block the sender.
//!
//! Layout: `<run>-<seq>.png` (the whole frame, not scaled) and `<run>-<seq>.json` (its
//! result, with the rules it matched), both numbers zero-padded to 20 digits so the
//! names sort by key. After each write the oldest frames are deleted until at most
//! `max_frames` remain and they take at most `max_bytes` (both files counted); a
//! lowered bound applies at once. Files are written under a temporary name and renamed,
//! so a crash leaves no half frame under a listed name.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::raw::{RawResult, RunInfo};
use super::record::ResultRecord;
use crate::config::KeepFramesConfig;

/// Frames copied by the inference thread and not yet written; a match while this many
/// wait is skipped (counted as `skipped`).
pub const KEEP_IN_FLIGHT: usize = 4;

/// A result's key: (run, seq).
pub type Key = (u64, u64);

/// One kept frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct KeptFrame {
    /// The result's run.
    pub run: u64,
    /// The result's sequence number.
    pub seq: u64,
    /// The rules it matched.
    pub rules: Vec<String>,
    /// When the result was ready, Unix ns.
    pub result_unix_ns: u64,
    /// Bytes on disk (the PNG and its result).
    pub bytes: u64,
}

/// What the keeper reports (`outputs.alerts.frames` in `GET /api/v1/status`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct KeepStatus {
    /// Whether `outputs.alerts.keep_frames.enabled` is on.
    pub enabled: bool,
    /// Frames kept now.
    pub frames: u64,
    /// Bytes they take now.
    pub bytes: u64,
    /// The bound on `frames`.
    pub max_frames: u64,
    /// The bound on `bytes`.
    pub max_bytes: u64,
    /// Frames written since the service started.
    pub written: u64,
    /// Frames deleted to hold the bounds since the service started.
    pub rotated: u64,
    /// Matching frames not kept because [`KEEP_IN_FLIGHT`] frames were waiting.
    pub skipped: u64,
    /// Frames that could not be copied, encoded or written.
    pub errors: u64,
    /// The last error, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// A frame on its way to the keeper.
struct Kept {
    run: Arc<RunInfo>,
    result: RawResult,
    frame: Vec<u8>,
}

enum Msg {
    Frame(Box<Kept>),
    /// The bounds changed: delete down to them.
    Prune,
}

#[derive(Debug, Default)]
struct Counters {
    written: AtomicU64,
    rotated: AtomicU64,
    skipped: AtomicU64,
    errors: AtomicU64,
}

/// The inference thread's end of the keeper (cheap to clone).
#[derive(Debug, Clone)]
pub struct KeepSender {
    tx: SyncSender<Msg>,
    in_flight: Arc<AtomicUsize>,
    counters: Arc<Counters>,
}

impl std::fmt::Debug for Msg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Msg::Frame(k) => write!(f, "Frame({}:{})", k.run.run, k.result.seq),
            Msg::Prune => f.write_str("Prune"),
        }
    }
}

impl KeepSender {
    /// See `Tap::keep_frame`.
    pub(super) fn keep(
        &self,
        run: &Arc<RunInfo>,
        r: &RawResult,
        fill: impl FnOnce(&mut [u8]) -> bool,
    ) {
        if self.in_flight.fetch_add(1, Ordering::AcqRel) >= KEEP_IN_FLIGHT {
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
            self.counters.skipped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let mut frame = vec![0u8; r.bytes as usize];
        if !fill(&mut frame) {
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
            self.counters.errors.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let msg = Msg::Frame(Box::new(Kept {
            run: run.clone(),
            result: *r,
            frame,
        }));
        if self.tx.try_send(msg).is_err() {
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
            self.counters.skipped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

struct Inner {
    dir: PathBuf,
    bounds: Mutex<KeepFramesConfig>,
    index: Mutex<VecDeque<KeptFrame>>,
    counters: Arc<Counters>,
    last_error: Mutex<Option<String>>,
    sender: KeepSender,
}

/// The handle on the frame keeper (cheap to clone).
#[derive(Clone)]
pub struct Keeper {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Keeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keeper")
            .field("dir", &self.inner.dir)
            .finish_non_exhaustive()
    }
}

fn stem(key: Key) -> String {
    format!("{:020}-{:020}", key.0, key.1)
}

fn parse_stem(name: &str) -> Option<Key> {
    let (run, seq) = name.strip_suffix(".png")?.split_once('-')?;
    if run.len() != 20 || seq.len() != 20 {
        return None;
    }
    Some((run.parse().ok()?, seq.parse().ok()?))
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

/// The frames kept in `dir`, oldest first (their results read back for the rules).
fn scan(dir: &Path) -> std::io::Result<VecDeque<KeptFrame>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let Some(key) = e.file_name().to_str().and_then(parse_stem) else {
            continue;
        };
        let json = dir.join(format!("{}.json", stem(key)));
        let record: Option<ResultRecord> = std::fs::read(&json)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        out.push(KeptFrame {
            run: key.0,
            seq: key.1,
            rules: record
                .as_ref()
                .map(|r| r.alerts.clone())
                .unwrap_or_default(),
            result_unix_ns: record.map(|r| r.result_unix_ns).unwrap_or(0),
            bytes: file_len(&e.path()) + file_len(&json),
        });
    }
    out.sort_by_key(|k| (k.run, k.seq));
    Ok(out.into())
}

/// Writes `bytes` to `path` through a temporary name in the same directory.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

impl Keeper {
    /// Opens (creating) `dir`, reads what is kept there, and starts the keeper's thread.
    /// Errors: the directory cannot be made or read, or the thread cannot start.
    pub fn start(dir: PathBuf) -> std::io::Result<Keeper> {
        std::fs::create_dir_all(&dir)?;
        let index = scan(&dir)?;
        let (tx, rx) = sync_channel(KEEP_IN_FLIGHT + 1);
        let counters = Arc::new(Counters::default());
        let keeper = Keeper {
            inner: Arc::new(Inner {
                dir,
                bounds: Mutex::new(KeepFramesConfig::default()),
                index: Mutex::new(index),
                counters: counters.clone(),
                last_error: Mutex::new(None),
                sender: KeepSender {
                    tx,
                    in_flight: Arc::new(AtomicUsize::new(0)),
                    counters,
                },
            }),
        };
        let k = keeper.clone();
        std::thread::Builder::new()
            .name("fpgagdr-keep".into())
            .spawn(move || k.run(rx))?;
        Ok(keeper)
    }

    /// Applies `outputs.alerts.keep_frames`: the bounds (a lowered one deletes the
    /// oldest frames at once), and the sender later runs use, or `None` while it is off.
    /// Frames already kept stay when it is turned off (within the bounds).
    pub fn configure(&self, c: &KeepFramesConfig) -> Option<KeepSender> {
        *self.inner.bounds.lock().expect("keep bounds poisoned") = c.clone();
        // The thread prunes; a full channel already holds work that prunes after it.
        let _ = self.inner.sender.tx.try_send(Msg::Prune);
        c.enabled.then(|| self.inner.sender.clone())
    }

    /// Where the frames lie.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The frames kept now, oldest first.
    pub fn list(&self) -> Vec<KeptFrame> {
        self.inner
            .index
            .lock()
            .expect("keep index poisoned")
            .iter()
            .cloned()
            .collect()
    }

    /// The path of kept frame `key`'s PNG, if it is kept.
    pub fn png_path(&self, key: Key) -> Option<PathBuf> {
        let kept = self
            .inner
            .index
            .lock()
            .expect("keep index poisoned")
            .iter()
            .any(|k| (k.run, k.seq) == key);
        kept.then(|| self.inner.dir.join(format!("{}.png", stem(key))))
    }

    /// The keeper's state now.
    pub fn status(&self) -> KeepStatus {
        let b = self
            .inner
            .bounds
            .lock()
            .expect("keep bounds poisoned")
            .clone();
        let (frames, bytes) = {
            let index = self.inner.index.lock().expect("keep index poisoned");
            (index.len() as u64, index.iter().map(|k| k.bytes).sum())
        };
        let c = &self.inner.counters;
        KeepStatus {
            enabled: b.enabled,
            frames,
            bytes,
            max_frames: b.max_frames as u64,
            max_bytes: b.max_bytes,
            written: c.written.load(Ordering::Relaxed),
            rotated: c.rotated.load(Ordering::Relaxed),
            skipped: c.skipped.load(Ordering::Relaxed),
            errors: c.errors.load(Ordering::Relaxed),
            last_error: self
                .inner
                .last_error
                .lock()
                .expect("keep error poisoned")
                .clone(),
        }
    }

    fn run(self, rx: Receiver<Msg>) {
        while let Ok(msg) = rx.recv() {
            if let Msg::Frame(k) = msg {
                let written = self.write(&k);
                self.inner.sender.in_flight.fetch_sub(1, Ordering::AcqRel);
                if let Err(e) = written {
                    if self.inner.counters.errors.fetch_add(1, Ordering::Relaxed) == 0 {
                        tracing::warn!("keeping an alert's frame: {e}");
                    }
                    *self.inner.last_error.lock().expect("keep error poisoned") = Some(e);
                }
            } else {
                self.prune();
            }
        }
    }

    fn write(&self, k: &Kept) -> Result<(), String> {
        let (_, png) = super::image::render(&k.frame, None)?;
        let record = ResultRecord::new(&k.run, &k.result);
        let json = serde_json::to_vec(&record).expect("record serialises");
        let key = (record.run, record.seq);
        let base = self.inner.dir.join(stem(key));
        let json_path = base.with_extension("json");
        write_atomic(&json_path, &json).map_err(|e| format!("{}: {e}", json_path.display()))?;
        let png_path = base.with_extension("png");
        write_atomic(&png_path, &png).map_err(|e| format!("{}: {e}", png_path.display()))?;
        let mut index = self.inner.index.lock().expect("keep index poisoned");
        // A key already kept (the same result again) is replaced, not counted twice.
        index.retain(|f| (f.run, f.seq) != key);
        index.push_back(KeptFrame {
            run: key.0,
            seq: key.1,
            rules: record.alerts,
            result_unix_ns: record.result_unix_ns,
            bytes: (json.len() + png.len()) as u64,
        });
        self.inner.counters.written.fetch_add(1, Ordering::Relaxed);
        // Under the same lock: nobody sees the index over its bounds.
        self.prune_locked(&mut index);
        Ok(())
    }

    /// Deletes the oldest frames until both bounds hold.
    fn prune(&self) {
        let mut index = self.inner.index.lock().expect("keep index poisoned");
        self.prune_locked(&mut index);
    }

    fn prune_locked(&self, index: &mut VecDeque<KeptFrame>) {
        let b = self
            .inner
            .bounds
            .lock()
            .expect("keep bounds poisoned")
            .clone();
        let mut bytes: u64 = index.iter().map(|k| k.bytes).sum();
        while index.len() > b.max_frames || (bytes > b.max_bytes && !index.is_empty()) {
            let Some(old) = index.pop_front() else { break };
            bytes -= old.bytes;
            let base = self.inner.dir.join(stem((old.run, old.seq)));
            for ext in ["png", "json"] {
                let _ = std::fs::remove_file(base.with_extension(ext));
            }
            self.inner.counters.rotated.fetch_add(1, Ordering::Relaxed);
        }
    }
}
