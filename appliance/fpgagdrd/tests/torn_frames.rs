//! Torn frames (docs/card-protocol.md, "Torn frames"): a frame whose slot the card
//! rewrote while the C2H read it is counted as an overrun and dropped, never as a
//! checksum error, and it is not silent when checksums are not verified. The simulated
//! card's torn-frame fault (`--sim-card-torn-every`) tears every n-th C2H the way a real
//! card's writer would (payload bytes of the next frame, the announced frame's header)
//! and reports it as the kernel module's check does; the service runs as shipped.

mod common;

use serde_json::{Value, json};

use common::Service;

/// Every this many C2Hs one is torn.
const EVERY: u64 = 5;

/// Runs the service on the simulated card with torn frames until it has inferred a
/// hundred frames, stops the pipeline (its threads joined: the counters are final) and
/// returns the counters.
fn counters_with_torn_frames(verify_checksum: bool) -> Value {
    let config = json!({
        "source": {"kind": "test_pattern", "width": 64, "height": 64, "format": "mono8", "fps": 0},
        "card": {"sim_link": "off"},
        "inference": {"threads": 1, "verify_checksum": verify_checksum},
        // Nothing dropped in the ring: every frame that is not torn reaches the model.
        "ring": {"when_full": "wait"},
    });
    let text = serde_json::to_string_pretty(&config).unwrap();
    let every = EVERY.to_string();
    let svc = Service::start_with_args(Some(&text), &["--sim-card-torn-every", &every]);
    svc.wait_frames_above(100);
    let r = svc.request("POST", "/api/v1/pipeline/stop", None, &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    let c = svc.status()["counters"].clone();
    let log = svc.log();
    assert!(
        log.contains("simulated card: every 5 C2H is torn"),
        "the test fault is said in the log: {log}"
    );
    c
}

fn n(c: &Value, name: &str) -> u64 {
    c[name]
        .as_u64()
        .unwrap_or_else(|| panic!("{name} is a number: {c}"))
}

/// Exact: every fifth captured frame was torn and is an overrun; no checksum error, no
/// sequence error; the drop count the alert rules use holds each torn frame once.
fn check(c: &Value) {
    let captured = n(c, "frames_captured");
    assert_eq!(n(c, "frames_overrun"), captured / EVERY, "{c}");
    assert_eq!(n(c, "checksum_errors"), 0, "{c}");
    assert_eq!(n(c, "sequence_errors"), 0, "{c}");
    assert_eq!(n(c, "transfer_errors"), 0, "{c}");
    // Nothing is dropped in the ring (`wait`), so every captured frame was inferred, is
    // an overrun, or was still in the ring (at most its 8 entries) when the pipeline
    // stopped.
    assert_eq!(n(c, "frames_dropped"), 0, "{c}");
    let accounted = n(c, "frames_inferred") + n(c, "frames_overrun");
    assert!(accounted <= captured && captured - accounted <= 8, "{c}");
}

#[test]
fn torn_frames_count_as_overruns_not_checksum_errors() {
    check(&counters_with_torn_frames(true));
}

#[test]
fn torn_frames_are_not_silent_without_checksums() {
    check(&counters_with_torn_frames(false));
}
