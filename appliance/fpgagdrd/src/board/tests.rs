//! The board's rules without a service: events consistent within themselves, the
//! replay bounded in span and bytes, resume without a snapshot twice, and the
//! scripts' views drawn from the same snapshots.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::snapshot::point;
use super::*;
use crate::metrics::Quantiles;
use fpgagdr_telemetry::sampler::{Power, Sample};

/// The latest result's JSON as the results room hands it over (its shape is the
/// results room's to test: the board carries it as it is).
fn result(seq: u64) -> Arc<str> {
    serde_json::json!({
        "v": 2, "run": 1_764_626_754_123u64, "seq": seq,
        "frame": {"width": 451, "height": 300, "format": "rgb8", "bytes": 405_964},
        "checksum": "ok",
        "top": (0..5).map(|i| serde_json::json!({
            "index": 281 + i,
            "label": format!("class number {i}, a label of a realistic length"),
            "score": 0.5 / (i + 1) as f32,
        })).collect::<Vec<_>>(),
        "latency_us": {"dma": 367.1, "end_to_end": 9101.5},
    })
    .to_string()
    .into()
}

fn sample(t: f64) -> Arc<Sample> {
    Arc::new(Sample {
        t,
        power: Some(Power {
            watts: 7.38816,
            source: "ina3221",
            covers: "the module's input rail VDD_IN".into(),
        }),
        cpu_pct: Some(12.5),
        ..Sample::default()
    })
}

/// A snapshot at `t` with a result `seq` and every stage measured.
fn snap(t: f64, seq: u64) -> Snapshot {
    let q = Quantiles {
        p50: 367.1034,
        p99: 410.879,
        max: 512.0,
        count: 30,
    };
    let latency_us: BTreeMap<&'static str, Quantiles> = crate::metrics::Stage::ALL
        .iter()
        .map(|s| (s.as_str(), q))
        .collect();
    let s = sample(t - 0.05);
    let (telemetry, _, _) = point(&s, 30.0);
    Snapshot {
        t,
        generation: 7,
        state: "running",
        running_s: Some(t - 1000.0),
        fps: 30.007746,
        gbps: 0.0179824554,
        counters: CounterValues {
            frames_inferred: seq,
            frames_captured: seq + 2,
            bytes_captured: seq * 405_932,
            ..CounterValues::default()
        },
        latency_us,
        telemetry: Some(telemetry),
        latest: Some(result(seq)),
        sample: Some(s),
    }
}

/// A board fed `n` snapshots 100 ms apart from t = 1000 s.
fn board(n: usize) -> Board {
    let b = Board::new(Duration::from_millis(100));
    for i in 0..n {
        b.push(snap(1000.0 + i as f64 * 0.1, 3 * i as u64));
    }
    b
}

fn batch(e: &Event) -> Vec<Value> {
    let v: Value = serde_json::from_str(&e.json).expect("event data is JSON");
    v["batch"].as_array().expect("a batch").clone()
}

#[test]
fn each_event_is_complete_in_its_newest_snapshot() {
    let b = Board::new(Duration::from_millis(100));
    let (_, mut rx) = b.subscribe(None);
    for i in 0..3 {
        b.push(snap(1000.0 + i as f64 * 0.1, 10 + i));
    }
    let e = rx.try_recv().expect("one event per three snapshots");
    let batch = batch(&e);
    assert_eq!(batch.len(), BATCH);
    for s in &batch[..2] {
        assert!(s.get("latest").is_none(), "{s}");
        assert!(s.get("telemetry_sample").is_none(), "{s}");
        assert!(s["telemetry"]["power_w"].is_number(), "{s}");
    }
    let newest = &batch[2];
    // The result is the newest snapshot's, complete: heading, frame and top-5 together.
    assert_eq!(newest["latest"]["seq"], 12);
    assert_eq!(newest["latest"]["frame"]["width"], 451);
    assert_eq!(newest["latest"]["top"].as_array().unwrap().len(), 5);
    assert_eq!(newest["telemetry_sample"]["power"]["watts"], 7.38816);
    // Rounded to what a chart shows, no binary tails.
    assert_eq!(newest["fps"], 30.01);
    assert_eq!(newest["gbps"], 0.017982);
    assert_eq!(newest["latency_us"]["dma"]["p50"], 367.1);
    assert_eq!(newest["t"], 1000.2);
    assert_eq!(newest["generation"], 7);
    assert_eq!(newest["telemetry"]["energy_per_frame_mj"], 246.3);
    assert_eq!(newest["telemetry"]["frames_per_joule"], 4.061);
}

#[test]
fn a_short_resume_gets_the_missed_events_as_they_were_sent() {
    let b = Board::new(Duration::from_millis(100));
    let (_, mut rx) = b.subscribe(None);
    for i in 0..30 {
        b.push(snap(1000.0 + i as f64 * 0.1, i));
    }
    let sent: Vec<Event> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    assert_eq!(sent.len(), 10);
    let (replay, _) = b.subscribe(Some(sent[6].id));
    let ids: Vec<u64> = replay.iter().map(|e| e.id).collect();
    assert_eq!(ids, [sent[7].id, sent[8].id, sent[9].id]);
    for (r, s) in replay.iter().zip(&sent[7..]) {
        assert_eq!(r.json, s.json, "byte for byte");
    }
    let (none, _) = b.subscribe(Some(sent[9].id));
    assert!(none.is_empty(), "nothing missed, nothing replayed");
}

#[test]
fn every_stream_sends_the_bytes_rendered_once_per_event() {
    let b = Board::new(Duration::from_millis(100));
    let (_, mut rx1) = b.subscribe(None);
    let (_, mut rx2) = b.subscribe(None);
    for i in 0..3 {
        b.push(snap(1000.0 + i as f64 * 0.1, i));
    }
    let (e1, e2) = (rx1.try_recv().unwrap(), rx2.try_recv().unwrap());
    // One rendering, shared: the same bytes, not a copy.
    assert_eq!(e1.sse.as_ptr(), e2.sse.as_ptr());
    let wire = String::from_utf8(e1.sse.to_vec()).unwrap();
    assert_eq!(
        wire,
        format!("event: snapshot\nid: {}\ndata: {}\n\n", e1.id, e1.json)
    );
    // Streams opening before the next event share one replay; after it, a new one
    // that includes it.
    let (r1, _) = b.subscribe(None);
    let (r2, _) = b.subscribe(None);
    assert_eq!(r1.len(), 1);
    assert!(Arc::ptr_eq(&r1[0].json, &r2[0].json));
    for i in 3..6 {
        b.push(snap(1000.0 + i as f64 * 0.1, i));
    }
    let (r3, _) = b.subscribe(None);
    assert_eq!(r3.len(), 2, "the new event is in the replay");
    assert!(!Arc::ptr_eq(&r3[0].json, &r1[0].json));
    // A resume is its own.
    let (after, _) = b.subscribe(Some(e1.id));
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].json, r3[1].json);
}

#[test]
fn an_open_or_an_old_id_gets_at_most_a_minute_in_bounded_bytes() {
    // 2 minutes of snapshots: the board keeps one.
    let b = board(1200);
    let (whole, _) = b.subscribe(None);
    let (from_zero, _) = b.subscribe(Some(0));
    let bytes = |events: &[Event]| events.iter().map(|e| e.json.len()).sum::<usize>();
    for replay in [&whole, &from_zero] {
        assert!(
            bytes(replay) <= REPLAY_MAX_BYTES,
            "{} bytes replayed",
            bytes(replay)
        );
        let snaps: Vec<Value> = replay.iter().flat_map(batch).collect();
        let ts: Vec<f64> = snaps.iter().map(|s| s["t"].as_f64().unwrap()).collect();
        let (first, last) = (ts[0], *ts.last().unwrap());
        assert_eq!(last, 1119.9, "the newest snapshot is always sent");
        assert!(
            last - first <= 60.0 && last - first > 55.0,
            "{first}..{last}"
        );
        assert!(ts.windows(2).all(|w| w[0] < w[1]), "in time order");
        // Thinned evenly: the whole minute at one step.
        let steps: std::collections::BTreeSet<u64> = ts
            .windows(2)
            .map(|w| ((w[1] - w[0]) * 10.0).round() as u64)
            .collect();
        assert_eq!(steps.len(), 1, "steps of {steps:?} × 100 ms");
        // Every event complete in its newest snapshot, ids rising.
        for e in replay.iter() {
            let last = batch(e).pop().unwrap();
            assert!(last["latest"]["frame"].is_object(), "{last}");
        }
        assert!(replay.windows(2).all(|w| w[0].id < w[1].id));
    }
    assert_eq!(
        whole.last().unwrap().id,
        from_zero.last().unwrap().id,
        "the replay ends at the newest event: a resume goes on from there"
    );
    let (none, _) = b.subscribe(Some(whole.last().unwrap().id));
    assert!(none.is_empty());
}

#[test]
fn scripts_read_the_same_snapshots() {
    let b = board(30);
    let h = serde_json::to_value(b.pipeline_history()).unwrap();
    assert_eq!(h["period_s"], 0.1);
    assert_eq!(h["t"].as_array().unwrap().len(), 30);
    assert_eq!(h["fps"][0], 30.01);
    assert_eq!(h["latency_us"]["queue"]["p50"][0], 367.1);
    let t = serde_json::to_value(b.telemetry_history(false)).unwrap();
    assert_eq!(t["points"].as_array().unwrap().len(), 30);
    assert_eq!(t["points"][0]["power_w"], 7.38816);
    let latest: Value =
        serde_json::from_str(b.latest().unwrap().latest.as_deref().unwrap()).unwrap();
    assert_eq!(latest["seq"], 87);
}

#[test]
fn the_hour_is_kept_at_one_mean_point_per_second() {
    let b = Board::new(Duration::from_millis(100));
    // 70 s at 10 Hz: power 1 W in even seconds, 3 W in odd ones.
    for i in 0..700 {
        let t = 1000.0 + i as f64 / 10.0;
        let mut s = snap(t + 0.05, i);
        let w = if (t.floor() as i64) % 2 == 0 {
            1.0
        } else {
            3.0
        };
        if let Some(p) = &mut s.telemetry {
            p.t = t;
            p.power_w = Some(w);
        }
        b.push(s);
    }
    let coarse = b.telemetry_history(true);
    assert_eq!(coarse.period_s, 1.0);
    assert_eq!(coarse.points.len(), 69, "69 whole seconds closed");
    assert_eq!(coarse.points[0].t, 1000.0);
    assert_eq!(coarse.points[0].power_w, Some(1.0));
    assert_eq!(coarse.points[1].power_w, Some(3.0));
}
