//! The results log: every result as one JSON line, in files rotated by size under a
//! cap on their total, keyed by (run, seq).
//!
//! Owns: [`LogSink`] (the log as an output of the results room), [`LogWriter`] (the
//! room's thread appends; rotation and the cap), [`read`] (paging by key, for
//! `GET /api/v1/results`), the file names.
//! Must not: block the pipeline (only the room's thread writes).
//!
//! Layout: `results-<run>-<seq>.jsonl` (both zero-padded to 20 digits, so the names
//! sort by key), named after the first result in it; the newest is the one written.
//! Each file holds at most a eighth of the cap (at least [`MIN_FILE_BYTES`]); when a
//! result would overflow it a new file starts, and the oldest files are deleted until
//! all of them together hold at most the cap. A line cut short by a crash is skipped by
//! [`read`] (and the next append starts on a new line).

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::super::record::ResultRecord;
use super::super::{LogStatus, OutputsStatus, Sink};

/// Smallest size a log file is allowed to grow to before the next starts, bytes.
pub const MIN_FILE_BYTES: u64 = 4096;
/// Default cap on the log's files together, bytes (64 MiB: ~200 000 results).
pub const DEFAULT_MAX_BYTES: u64 = 64 << 20;
/// Smallest cap accepted, bytes.
pub const MIN_MAX_BYTES: u64 = 64 << 10;

/// A result's key: (run, seq).
pub type Key = (u64, u64);

fn file_name(key: Key) -> String {
    format!("results-{:020}-{:020}.jsonl", key.0, key.1)
}

fn parse_name(name: &str) -> Option<Key> {
    let rest = name.strip_prefix("results-")?.strip_suffix(".jsonl")?;
    let (run, seq) = rest.split_once('-')?;
    Some((run.parse().ok()?, seq.parse().ok()?))
}

/// The log's files, oldest first: (first key, path, bytes).
fn list(dir: &Path) -> std::io::Result<Vec<(Key, PathBuf, u64)>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name();
        let Some(key) = name.to_str().and_then(parse_name) else {
            continue;
        };
        match e.metadata() {
            Ok(m) if m.is_file() => out.push((key, e.path(), m.len())),
            _ => {}
        }
    }
    out.sort();
    Ok(out)
}

/// Appends results; owned by the room's thread.
#[derive(Debug)]
pub struct LogWriter {
    dir: PathBuf,
    max_bytes: u64,
    file_max: u64,
    /// The files before the current one: (path, bytes), oldest first.
    older: std::collections::VecDeque<(PathBuf, u64)>,
    current: Option<(BufWriter<File>, PathBuf, u64)>,
}

impl LogWriter {
    /// Opens (creating) the log in `dir` with a cap of `max_bytes` (at least
    /// [`MIN_MAX_BYTES`]); appends to its newest file when that has room.
    pub fn open(dir: &Path, max_bytes: u64) -> std::io::Result<LogWriter> {
        std::fs::create_dir_all(dir)?;
        let max_bytes = max_bytes.max(MIN_MAX_BYTES);
        let file_max = (max_bytes / 8).max(MIN_FILE_BYTES);
        let mut files = list(dir)?;
        let mut current = None;
        if let Some((_, path, len)) = files.last().cloned()
            && len < file_max
        {
            files.pop();
            let mut f = OpenOptions::new().read(true).append(true).open(&path)?;
            let mut len = len;
            if len > 0 {
                // A line cut short by a crash: the next result starts on its own line.
                let mut last = [0u8];
                f.seek(SeekFrom::Start(len - 1))?;
                f.read_exact(&mut last)?;
                if last[0] != b'\n' {
                    f.write_all(b"\n")?;
                    len += 1;
                }
            }
            current = Some((BufWriter::new(f), path, len));
        }
        let mut w = LogWriter {
            dir: dir.to_path_buf(),
            max_bytes,
            file_max,
            older: files.into_iter().map(|(_, p, l)| (p, l)).collect(),
            current,
        };
        w.enforce_cap()?;
        Ok(w)
    }

    /// Appends one result's JSON line (`json` holds no newline). Starts a new file
    /// when this one would grow past its share of the cap.
    pub fn append(&mut self, run: u64, seq: u64, json: &str) -> std::io::Result<()> {
        let len = json.len() as u64 + 1;
        let full = match &self.current {
            Some((_, _, size)) => *size > 0 && size + len > self.file_max,
            None => true,
        };
        if full {
            self.rotate((run, seq))?;
        }
        let (w, _, size) = self.current.as_mut().expect("a current file");
        w.write_all(json.as_bytes())?;
        w.write_all(b"\n")?;
        *size += len;
        Ok(())
    }

    fn rotate(&mut self, first: Key) -> std::io::Result<()> {
        if let Some((mut w, path, size)) = self.current.take() {
            w.flush()?;
            w.get_ref().sync_data()?;
            self.older.push_back((path, size));
        }
        let path = self.dir.join(file_name(first));
        let f = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(&path)?;
        let size = f.metadata()?.len();
        self.current = Some((BufWriter::new(f), path, size));
        self.enforce_cap()
    }

    /// Deletes the oldest files until the rest, with room for the current one to fill,
    /// fit the cap.
    fn enforce_cap(&mut self) -> std::io::Result<()> {
        let budget = self.max_bytes.saturating_sub(self.file_max);
        while self.older.iter().map(|(_, l)| l).sum::<u64>() > budget {
            let Some((path, _)) = self.older.pop_front() else {
                break;
            };
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Writes what is buffered and syncs it to the disk.
    pub fn flush(&mut self) -> std::io::Result<()> {
        if let Some((w, _, _)) = self.current.as_mut() {
            w.flush()?;
            w.get_ref().sync_data()?;
        }
        Ok(())
    }

    /// Bytes and files on disk (counting what is buffered).
    pub fn usage(&self) -> (u64, u64) {
        let older: u64 = self.older.iter().map(|(_, l)| l).sum();
        let cur = self.current.as_ref().map_or(0, |(_, _, s)| *s);
        (
            older + cur,
            self.older.len() as u64 + u64::from(self.current.is_some()),
        )
    }
}

/// The results log as an output of the room: appends every result's JSON line, and
/// writes out at each flush.
#[derive(Debug)]
pub struct LogSink {
    dir: PathBuf,
    /// Only the room's thread writes (status reads never wait for the disk).
    writer: Mutex<LogWriter>,
    logged: AtomicU64,
    errors: AtomicU64,
    /// Bytes, files and the last error, as of the last flush.
    status: Mutex<LogStatus>,
}

impl LogSink {
    /// Opens (creating) the log in `dir` with a cap of `max_bytes` (see
    /// [`LogWriter::open`]).
    pub fn open(dir: &Path, max_bytes: u64) -> std::io::Result<LogSink> {
        let writer = LogWriter::open(dir, max_bytes)?;
        Ok(LogSink {
            dir: dir.to_path_buf(),
            status: Mutex::new(LogStatus {
                max_bytes,
                ..LogStatus::default()
            }),
            writer: Mutex::new(writer),
            logged: AtomicU64::new(0),
            errors: AtomicU64::new(0),
        })
    }

    /// Where the log lies.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn failed(&self, e: std::io::Error) {
        if self.errors.fetch_add(1, Ordering::Relaxed) == 0 {
            tracing::warn!("results log: {e}");
        }
        self.status.lock().expect("log status poisoned").last_error = Some(e.to_string());
    }
}

impl Sink for LogSink {
    fn name(&self) -> &'static str {
        "log"
    }

    fn result(&self, record: &ResultRecord, json: &Arc<str>) {
        let appended = self
            .writer
            .lock()
            .expect("log writer poisoned")
            .append(record.run, record.seq, json);
        match appended {
            Ok(()) => {
                self.logged.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => self.failed(e),
        }
    }

    fn flush(&self) {
        let mut w = self.writer.lock().expect("log writer poisoned");
        if let Err(e) = w.flush() {
            self.failed(e);
        }
        let (bytes, files) = w.usage();
        let mut s = self.status.lock().expect("log status poisoned");
        s.bytes = bytes;
        s.files = files;
    }

    fn status(&self, status: &mut OutputsStatus) {
        let mut log = self.status.lock().expect("log status poisoned").clone();
        log.written = self.logged.load(Ordering::Relaxed);
        log.errors = self.errors.load(Ordering::Relaxed);
        status.log = log;
    }
}

/// A page of the log: up to `limit` results with keys above `after` (from the oldest
/// kept when `None`), in key order, and whether more follow.
///
/// Errors: the directory cannot be read. A file deleted by rotation while it is read is
/// skipped; a line that does not parse (cut short by a crash) is skipped.
pub fn read(
    dir: &Path,
    after: Option<Key>,
    limit: usize,
) -> std::io::Result<(Vec<ResultRecord>, bool)> {
    let files = match list(dir) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    // The first file that can hold a key above `after`: the last whose first key is at
    // or below it (every later file starts above it).
    let start = match after {
        Some(a) => files.iter().rposition(|(k, _, _)| *k <= a).unwrap_or(0),
        None => 0,
    };
    let mut out = Vec::new();
    for (_, path, _) in &files[start..] {
        let f = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for line in BufReader::new(f).lines() {
            let Ok(line) = line else { break };
            let Ok(r) = serde_json::from_str::<ResultRecord>(&line) else {
                continue;
            };
            if after.is_some_and(|a| (r.run, r.seq) <= a) {
                continue;
            }
            if out.len() == limit {
                return Ok((out, true));
            }
            out.push(r);
        }
    }
    Ok((out, false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::record::test_record;

    fn record(run: u64, seq: u64) -> String {
        serde_json::to_string(&test_record(run, seq, 16)).unwrap()
    }

    #[test]
    fn rotation_keeps_the_cap_and_paging_follows_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let cap = MIN_MAX_BYTES;
        let mut w = LogWriter::open(dir.path(), cap).unwrap();
        let line = record(7, 0).len() as u64 + 1;
        // Four times the cap's worth of results, over two runs.
        let n = 4 * cap / line;
        for seq in 0..n {
            w.append(7, seq, &record(7, seq)).unwrap();
        }
        for seq in 0..10 {
            w.append(9, seq, &record(9, seq)).unwrap();
        }
        w.flush().unwrap();
        let on_disk: u64 = list(dir.path()).unwrap().iter().map(|f| f.2).sum();
        assert!(on_disk <= cap, "{on_disk} bytes on disk, cap {cap}");
        assert_eq!(w.usage().0, on_disk);
        assert!(list(dir.path()).unwrap().len() > 2, "rotated");
        // The oldest results are gone; paging from the start gives the oldest kept,
        // in order, with no gap up to the second run.
        let (all, _) = read(dir.path(), None, usize::MAX).unwrap();
        let first = all[0].seq;
        assert!(first > 0, "the oldest results were deleted");
        let keys: Vec<Key> = all.iter().map(|r| (r.run, r.seq)).collect();
        let want: Vec<Key> = (first..n)
            .map(|s| (7, s))
            .chain((0..10).map(|s| (9, s)))
            .collect();
        assert_eq!(keys, want);
        // after= and limit=.
        let (page, more) = read(dir.path(), Some((7, n - 2)), 3).unwrap();
        let keys: Vec<Key> = page.iter().map(|r| (r.run, r.seq)).collect();
        assert_eq!(keys, vec![(7, n - 1), (9, 0), (9, 1)]);
        assert!(more);
        let (page, more) = read(dir.path(), Some((9, 8)), 3).unwrap();
        assert_eq!(page.len(), 1);
        assert!(!more);
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_appending_resumes_after_it() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut w = LogWriter::open(dir.path(), MIN_MAX_BYTES).unwrap();
            w.append(1, 0, &record(1, 0)).unwrap();
            w.flush().unwrap();
        }
        // A crash mid-line.
        let (_, path, _) = list(dir.path()).unwrap().pop().unwrap();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&record(1, 1).as_bytes()[..20]).unwrap();
        drop(f);
        let mut w = LogWriter::open(dir.path(), MIN_MAX_BYTES).unwrap();
        w.append(1, 2, &record(1, 2)).unwrap();
        w.flush().unwrap();
        let (all, _) = read(dir.path(), None, 10).unwrap();
        let seqs: Vec<u64> = all.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, vec![0, 2]);
    }
}
