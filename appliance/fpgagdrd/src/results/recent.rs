//! What the results room remembers of the results it handed out: the last [`RECENT`]
//! results (their records and JSON, in key order), the newest one as
//! `GET /api/v1/results/latest` shows it, and the frame view: a frame copy paired with
//! its own result.
//!
//! Owns: [`Recent`], [`FrameView`]. Used by the room's thread (it records every result
//! after the sinks had it) and the HTTP side (the latest result, the frame view, one
//! result by key, and a results stream that resumes after a key).
//! Must not: hold a ring entry (the frame copy is the pipeline's copy, taken while the
//! inference thread held the entry), or make the room's thread wait (one short lock per
//! result).
//!
//! Why a pairing: the inference thread copies a frame for the view about once a second,
//! when it takes the frame, before the frame has a result; the latest result moves on
//! with every frame. Showing the newest copy beside the newest result showed one frame's
//! picture under another frame's classes. The view is therefore the newest copy whose own
//! result (same run, same sequence number, same geometry) has been made; until the next
//! copy has its result, the previous pair stays.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use fpgagdr::frame::FrameHeader;

use super::record::{LatestResult, ResultRecord};

/// Results remembered (about 0.6 s at the simulated card's top rate, minutes at a
/// camera's): enough to pair the frame copy with its result and to resume a stream
/// client that was away briefly; the log holds the rest.
pub const RECENT: usize = 4096;

/// One remembered result.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The record.
    pub record: Arc<ResultRecord>,
    /// Its JSON, as every output carried it.
    pub json: Arc<str>,
}

/// A frame copy and the result of that very frame.
#[derive(Debug, Clone)]
pub struct FrameView {
    /// The frame as the card moved it (header and pixels).
    pub frame: Arc<Vec<u8>>,
    /// Its result.
    pub result: Entry,
}

#[derive(Debug, Default)]
struct Latest {
    key: Option<(u64, u64)>,
    json: Option<Arc<str>>,
}

/// The room's memory of recent results.
#[derive(Debug, Default)]
pub struct Recent {
    ring: Mutex<VecDeque<Entry>>,
    latest: Mutex<Latest>,
    view: Mutex<Option<FrameView>>,
}

impl Recent {
    /// Remembers a result (the room's thread, after every sink had it).
    pub fn record(&self, record: ResultRecord, json: Arc<str>) {
        let mut ring = self.ring.lock().expect("recent poisoned");
        if ring.len() >= RECENT {
            ring.pop_front();
        }
        ring.push_back(Entry {
            record: Arc::new(record),
            json,
        });
    }

    /// The newest result as `GET /api/v1/results/latest` answers it (with the names
    /// kept for one version: [`LatestResult`]), made once per result asked for.
    pub fn latest_json(&self) -> Option<Arc<str>> {
        let newest = self
            .ring
            .lock()
            .expect("recent poisoned")
            .back()
            .map(|e| (e.record.key(), e.json.clone()))?;
        let mut latest = self.latest.lock().expect("latest poisoned");
        if latest.key != Some(newest.0) {
            latest.key = Some(newest.0);
            latest.json = Some(LatestResult::json(&newest.1).into());
        }
        latest.json.clone()
    }

    /// The result with key (`run`, `seq`), if it is remembered (or is the frame view's).
    pub fn get(&self, run: u64, seq: u64) -> Option<Entry> {
        if let Some(v) = self.view.lock().expect("view poisoned").as_ref()
            && v.result.record.key() == (run, seq)
        {
            return Some(v.result.clone());
        }
        let ring = self.ring.lock().expect("recent poisoned");
        ring.binary_search_by_key(&(run, seq), |e| e.record.key())
            .ok()
            .map(|i| ring[i].clone())
    }

    /// The remembered results with keys above `after`, oldest first, and the key of the
    /// oldest one remembered (a resuming client whose key is older than that missed
    /// results that only the log still has).
    pub fn after(&self, after: (u64, u64)) -> (Vec<Entry>, Option<(u64, u64)>) {
        let ring = self.ring.lock().expect("recent poisoned");
        let start = ring.partition_point(|e| e.record.key() <= after);
        (
            ring.range(start..).cloned().collect(),
            ring.front().map(|e| e.record.key()),
        )
    }

    /// The frame view for the pipeline's newest frame copy `copy`: the copy and its own
    /// result when that result has been made (it becomes the view), else the previous
    /// view (a copy and its result too), else `None`. The copy is matched to the newest
    /// remembered result of the same sequence number and geometry.
    pub fn frame_view(&self, copy: Option<Arc<Vec<u8>>>) -> Option<FrameView> {
        let mut view = self.view.lock().expect("view poisoned");
        if let Some(copy) = copy
            && !view.as_ref().is_some_and(|v| Arc::ptr_eq(&v.frame, &copy))
            && let Ok(h) = FrameHeader::parse(&copy, copy.len())
        {
            let ring = self.ring.lock().expect("recent poisoned");
            // Newest run first: the copy is the pipeline's newest, so its result is of
            // the newest run that has one of its number (a stopped pipeline's last copy
            // stays paired after a new run started).
            if let Some(e) = ring.iter().rev().find(|e| {
                let f = &e.record.frame;
                e.record.seq == h.seq
                    && f.width == h.width
                    && f.height == h.height
                    && f.format == h.format.as_str()
            }) {
                *view = Some(FrameView {
                    frame: copy.clone(),
                    result: e.clone(),
                });
            }
        }
        view.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::record::{RecordFrame, SCHEMA_VERSION, test_record};
    use fpgagdr::frame::PixelFormat;

    fn record(run: u64, seq: u64, width: u32) -> ResultRecord {
        ResultRecord {
            frame: RecordFrame {
                dma_bytes: Some(4096),
                ..test_record(run, seq, width).frame
            },
            ..test_record(run, seq, width)
        }
    }

    fn frame(seq: u64, width: u32) -> Arc<Vec<u8>> {
        let payload = vec![7u8; width as usize * 16];
        let h = FrameHeader::packed(PixelFormat::Mono8, width, 16, seq, &payload);
        let mut f = h.encode().to_vec();
        f.extend_from_slice(&payload);
        Arc::new(f)
    }

    fn add(r: &Recent, run: u64, seq: u64, width: u32) {
        let rec = record(run, seq, width);
        let json = serde_json::to_string(&rec).unwrap();
        r.record(rec, json.into());
    }

    #[test]
    fn the_frame_view_is_a_copy_beside_its_own_result_never_a_newer_one() {
        let r = Recent::default();
        add(&r, 5, 40, 16);
        add(&r, 5, 41, 16);
        // A copy taken before its result was made: no view yet (not frame 41's).
        assert!(r.frame_view(Some(frame(43, 16))).is_none());
        add(&r, 5, 42, 16);
        add(&r, 5, 43, 16);
        add(&r, 5, 44, 16);
        let v = r
            .frame_view(Some(frame(43, 16)))
            .expect("43 has its result now");
        assert_eq!(v.result.record.key(), (5, 43));
        // The next copy without its result yet: the previous pair stays, whole.
        let v = r.frame_view(Some(frame(45, 16))).unwrap();
        assert_eq!(v.result.record.key(), (5, 43));
        assert_eq!(FrameHeader::parse(&v.frame, v.frame.len()).unwrap().seq, 43);
        // A copy of another geometry than the result of its number (a stale copy of an
        // earlier run) is never paired.
        add(&r, 6, 45, 32);
        let v = r.frame_view(Some(frame(45, 16))).unwrap();
        assert_eq!(v.result.record.key(), (5, 43));
        assert_eq!(r.get(5, 43).unwrap().record.seq, 43);
    }

    #[test]
    fn remembers_the_newest_results_in_key_order_and_resumes_after_a_key() {
        let r = Recent::default();
        for seq in 0..(RECENT as u64 + 10) {
            add(&r, 1, seq, 16);
        }
        add(&r, 2, 0, 16);
        let (after, oldest) = r.after((1, RECENT as u64 + 7));
        let keys: Vec<_> = after.iter().map(|e| e.record.key()).collect();
        assert_eq!(
            keys,
            vec![(1, RECENT as u64 + 8), (1, RECENT as u64 + 9), (2, 0)]
        );
        assert_eq!(oldest, Some((1, 11)), "the oldest are forgotten");
        assert!(r.get(1, 3).is_none());
        let latest: serde_json::Value = serde_json::from_str(&r.latest_json().unwrap()).unwrap();
        assert_eq!(
            (latest["run"].as_u64(), latest["seq"].as_u64()),
            (Some(2), Some(0))
        );
        assert_eq!(
            latest["top5"], latest["top"],
            "the old name, kept one version"
        );
        assert_eq!(latest["frame"]["checksum_ok"], true);
        assert_eq!(latest["v"], SCHEMA_VERSION);
    }
}
