//! The service end to end (docs/testing.md: the simulated card): the real `fpgagdrd` binary on
//! the simulated card, with real frames and the real model, driven over HTTP.
//!
//! Each test starts its own service on a free port with its own config file (see
//! `common::Service`). Needs ONNX Runtime and the data directory from
//! `appliance/scripts/fetch-deps.sh` (`ORT_DYLIB_PATH`, `FPGAGDR_DATA_DIR`, or their
//! defaults under `.deps/`); without them every test fails and says so.
//! Every wait is a bounded poll; nothing here measures speed.

mod common;

use std::collections::BTreeSet;
use std::io::BufRead;
use std::time::{Duration, Instant};

use common::{PATIENCE, Service, frame, parse_prometheus, replay, run_to_exit, wait_for};
use serde_json::{Value, json};

/// ImageNet classes that are domestic cats (what `chelsea.png` shows).
const CATS: [&str; 5] = [
    "tiger cat",
    "Egyptian cat",
    "tabby",
    "Persian cat",
    "Siamese cat",
];

fn labels(result: &Value) -> Vec<&str> {
    result["top5"]
        .as_array()
        .expect("top5 is an array")
        .iter()
        .map(|c| c["label"].as_str().expect("label is a string"))
        .collect()
}

/// Checks the shape every result has: five classes, best first, probabilities.
fn check_top5(result: &Value) {
    let top5 = result["top5"].as_array().expect("top5 is an array");
    assert_eq!(top5.len(), 5, "{result}");
    let scores: Vec<f64> = top5
        .iter()
        .map(|c| c["score"].as_f64().expect("score is a number"))
        .collect();
    assert!(scores.iter().all(|s| (0.0..=1.0).contains(s)), "{scores:?}");
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    assert!(
        top5.iter().all(|c| c["index"].as_u64().is_some()),
        "{result}"
    );
}

/// Checks a replayed result against the image file it came from.
fn check_geometry(result: &Value, image: &str) {
    let (w, h) = image::image_dimensions(frame(image)).expect("read image size");
    let f = &result["frame"];
    assert_eq!(
        (f["width"].as_u64(), f["height"].as_u64()),
        (Some(w.into()), Some(h.into())),
        "{result}"
    );
    assert_eq!(f["format"], "rgb8", "{result}");
    assert_eq!(f["checksum_ok"], true, "{result}");
    let payload = u64::from(w) * u64::from(h) * 3;
    assert!(f["bytes"].as_u64().is_some_and(|b| b > payload), "{result}");
}

/// PATCHes `body` and checks that it is refused as `config-apply`, blaming `field`, with
/// `detail` in the problem's detail; returns the problem.
fn refused_apply(svc: &Service, body: &str, field: &str, detail: &str) -> Value {
    let r = svc.request("PATCH", "/api/v1/config", Some(body.as_bytes()), &[]);
    let p = r.problem(422, "config-apply");
    assert_eq!(r.field_errors(), [(field.into(), "apply".into())], "{p}");
    assert!(
        p["detail"].as_str().unwrap().contains(detail),
        "{body}: {p}"
    );
    p
}

#[test]
fn frames_flow_through_the_simulated_card() {
    let svc = Service::start(&replay("chelsea.png"));
    let s = svc.status();
    let card = &s["card"];
    assert_eq!(card["simulated"], true, "{s}");
    assert_eq!(card["kind"], "sim", "{s}");
    assert!(
        card["name"].as_str().is_some_and(|n| n.contains("SimCard")),
        "{s}"
    );
    assert_eq!(s["pipeline"]["state"], "running", "{s}");
    assert_eq!(s["pipeline"]["error"], Value::Null, "{s}");
    assert_eq!(s["pipeline"]["model"], "efficientnet-lite0.onnx", "{s}");
    assert!(
        s["pipeline"]["source"]
            .as_str()
            .is_some_and(|d| d.contains("chelsea.png")),
        "{s}"
    );

    // Where the ring lives follows the CUDA probe, and the detail says why.
    let memory = &s["memory"];
    let detail = memory["detail"].as_str().unwrap_or("");
    let path = memory["data_path"].as_str().unwrap_or("");
    match memory["kind"].as_str() {
        Some("host") => {
            assert!(detail.starts_with("page-aligned host memory"), "{s}");
            assert!(path.starts_with("simulated card"), "{s}");
            // No GPU: the CPU does everything, and status says where and why.
            assert_eq!(
                s["pipeline"]["preprocess"], "CPU, reading the frame in place; one batch at a time",
                "{s}"
            );
            let inference = s["pipeline"]["inference"].as_str().unwrap_or("");
            assert!(inference.starts_with("ONNX Runtime CPU provider"), "{s}");
            // On the CPU the chosen batch is 1 (a larger one is no faster there).
            assert_eq!(s["pipeline"]["batch"]["max"], 1, "{s}");
            assert!(inference.contains("batches of up to 1"), "{s}");
        }
        Some("cuda_device") => {
            // Honest about the CPU hop: the simulated card is path B, not GPUDirect.
            assert!(
                detail.starts_with("CUDA device memory") && detail.contains("path B"),
                "{s}"
            );
            assert!(path.starts_with("B:"), "{s}");
        }
        Some("cuda_host") => {
            // An integrated GPU (Orin): the ring is cuMemHostAlloc memory.
            assert!(detail.contains("cuMemHostAlloc"), "{s}");
            assert!(path.starts_with("C on Orin"), "{s}");
        }
        _ => panic!("unexpected frame memory: {s}"),
    }
    // `ring.entries` (4) is a lower bound: the ring has k × N entries, k ≥ 2, N = the
    // card's slots.
    assert_eq!(memory["ring_entries"], ring_entries_for(4, &s), "{s}");
    let align = card["alignment_bytes"].as_u64().expect("alignment");
    let entry = memory["entry_bytes"].as_u64().expect("entry_bytes");
    assert!(entry > 451 * 300 * 3 && entry.is_multiple_of(align), "{s}");

    let first = svc.wait_frames_above(0);
    svc.wait_frames_above(first);
    let c = &svc.status()["counters"];
    assert!(
        c["frames_captured"].as_u64() >= c["frames_inferred"].as_u64(),
        "{c}"
    );
    assert!(c["bytes_captured"].as_u64().is_some_and(|b| b > 0), "{c}");
    assert_eq!(c["checksum_errors"], 0, "{c}");
}

#[test]
fn chelsea_is_a_cat() {
    let svc = Service::start(&replay("chelsea.png"));
    let r = svc.wait_result("a result", |_| true);
    check_top5(&r);
    check_geometry(&r, "chelsea.png");
    let top = labels(&r);
    assert!(top.iter().any(|l| CATS.contains(l)), "no cat in {top:?}");
    // Python onnxruntime says "tiger cat" (then Egyptian cat, tabby); our CPU
    // preprocessing differs slightly, so any cat at the top is right.
    assert!(CATS.contains(&top[0]), "top-1 is not a cat: {top:?}");
    let latency = r["latency_us"].as_object().expect("latency_us");
    for stage in ["dma", "queue", "preprocess", "inference", "end_to_end"] {
        assert!(
            latency[stage].as_f64().is_some_and(|v| v >= 0.0),
            "{stage}: {r}"
        );
    }
}

#[test]
fn coffee_is_espresso() {
    let svc = Service::start(&replay("coffee.png"));
    let r = svc.wait_result("a result", |_| true);
    check_top5(&r);
    check_geometry(&r, "coffee.png");
    assert_eq!(labels(&r)[0], "espresso", "{r}");
}

#[test]
fn test_pattern_checksums_survive_the_path() {
    let svc = Service::start(&json!({
        "source": {"kind": "test_pattern", "width": 256, "height": 128, "format": "rgb8", "fps": 100},
        "card": {"sim_link": "off"},
        "inference": {"threads": 1},
    }));
    let n = svc.wait_frames_above(20);
    let r = svc.wait_result("a result", |_| true);
    let f = &r["frame"];
    assert_eq!(
        (&f["width"], &f["height"], &f["format"]),
        (&json!(256), &json!(128), &json!("rgb8")),
        "{r}"
    );
    assert_eq!(f["checksum_ok"], true, "{r}");
    check_top5(&r);
    let c = &svc.status()["counters"];
    assert!(c["frames_inferred"].as_u64().is_some_and(|m| m >= n), "{c}");
    assert_eq!(c["checksum_errors"], 0, "{c}");
}

/// The one run of `memory.pins` that covers every ring entry: (method, reason).
fn one_pin_run(s: &Value) -> (String, String) {
    let pins = s["memory"]["pins"].as_array().expect("memory.pins");
    assert_eq!(pins.len(), 1, "every entry pinned alike: {s}");
    assert_eq!(pins[0]["first_entry"], 0, "{s}");
    assert_eq!(pins[0]["entries"], s["memory"]["ring_entries"], "{s}");
    (
        pins[0]["method"].as_str().unwrap_or("").to_string(),
        pins[0]["reason"].as_str().unwrap_or("").to_string(),
    )
}

#[test]
fn status_says_how_the_ring_is_pinned_and_why_for_each_pin_method() {
    // The default (auto): host pages without CUDA and on an integrated GPU, nvidia_p2p
    // on a discrete one.
    let svc = Service::start(&replay("chelsea.png"));
    let s = svc.status();
    let (method, reason) = one_pin_run(&s);
    let want = match s["memory"]["kind"].as_str() {
        Some("cuda_device") => "nvidia_p2p",
        Some("host" | "cuda_host") => "host",
        _ => panic!("unexpected frame memory: {s}"),
    };
    assert_eq!(method, want, "{s}");
    assert!(!reason.is_empty(), "{s}");

    // dma_buf: taken where CUDA says CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED=1, otherwise
    // the fallback and why.
    let r = svc.request(
        "PATCH",
        "/api/v1/config",
        Some(br#"{"card": {"pin_method": "dma_buf"}}"#),
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let s = svc.status();
    assert_eq!(s["pipeline"]["state"], "running", "{s}");
    let (method, reason) = one_pin_run(&s);
    match s["memory"]["kind"].as_str() {
        Some("host") => {
            assert_eq!(method, "host", "{s}");
            assert!(
                reason.starts_with("dma_buf: no CUDA (") && reason.ends_with("fell back to host"),
                "{s}"
            );
        }
        Some("cuda_device") if method == "dma_buf" => {
            assert_eq!(
                reason, "dma_buf: CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED=1",
                "{s}"
            );
        }
        Some("cuda_device") => {
            assert_eq!(method, "nvidia_p2p", "{s}");
            assert!(reason.contains("fell back to nvidia_p2p"), "{s}");
        }
        Some("cuda_host") => {
            assert_eq!(method, "host", "{s}");
            assert!(reason.contains("fell back to host"), "{s}");
        }
        _ => panic!("unexpected frame memory: {s}"),
    }
    println!("card.pin_method dma_buf: {method} ({reason})");

    // A pin method that contradicts ring.memory is refused, and nothing changes.
    let before = svc.get("/api/v1/config").json();
    let r = svc.request(
        "PATCH",
        "/api/v1/config",
        Some(br#"{"card": {"pin_method": "nvidia_p2p"}, "ring": {"memory": "host"}}"#),
        &[],
    );
    r.problem(422, "config-range");
    assert_eq!(
        r.field_errors(),
        [("/card/pin_method".into(), "pin-method-memory".into())]
    );
    assert_eq!(svc.get("/api/v1/config").json(), before);
}

#[test]
fn bad_requests_are_problems_and_change_nothing() {
    let text = "{\"autostart\": false}\n";
    let svc = Service::start_with_file(Some(text));
    let before = svc.get("/api/v1/config");
    assert_eq!(before.status, 200);
    assert_eq!(before.json()["autostart"], false);

    // Nothing inferred yet.
    let s = svc.status();
    assert_eq!(s["pipeline"]["state"], "stopped", "{s}");
    assert_eq!(s["memory"]["kind"], Value::Null, "{s}");
    svc.get("/api/v1/results/latest").problem(404, "no-result");

    // Unknown route under the API prefix, and a method a resource does not take.
    svc.get("/api/v1/nope").problem(404, "route");
    svc.request("POST", "/api/v1/status", None, &[])
        .problem(405, "method");

    let put = |body: &str| svc.request("PUT", "/api/v1/config", Some(body.as_bytes()), &[]);
    let patch = |body: &str| svc.request("PATCH", "/api/v1/config", Some(body.as_bytes()), &[]);

    put("{\"ring\": ").problem(400, "json-syntax");
    patch("{\"ring\": ").problem(400, "json-syntax");

    let r = put(r#"{"ring": {"entries": 4, "size": 9}}"#);
    r.problem(422, "config-schema");
    assert_eq!(
        r.field_errors(),
        [("/ring/size".into(), "unknown-field".into())]
    );

    let r = patch(r#"{"ring": {"entries": "four"}}"#);
    r.problem(422, "config-schema");
    assert_eq!(r.field_errors(), [("/ring/entries".into(), "type".into())]);

    let r = patch(r#"{"ring": {"when_full": "explode"}}"#);
    r.problem(422, "config-schema");
    assert_eq!(
        r.field_errors(),
        [("/ring/when_full".into(), "value".into())]
    );

    let r = patch("[1]");
    r.problem(422, "config-schema");
    assert_eq!(r.field_errors(), [(String::new(), "type".into())]);

    // Every broken range is listed, not just the first.
    let broken = r#"{"source": {"fps": 50000, "width": 8}, "card": {"channel": 9, "timeout_ms": 0},
                     "ring": {"entries": 1}, "inference": {"threads": 65}}"#;
    let want: BTreeSet<(String, String)> = [
        "/source/fps",
        "/source/width",
        "/card/channel",
        "/card/timeout_ms",
        "/ring/entries",
        "/inference/threads",
    ]
    .into_iter()
    .map(|f| (f.to_string(), "range".to_string()))
    .collect();
    for r in [put(broken), patch(broken)] {
        let p = r.problem(422, "config-range");
        let got: BTreeSet<_> = r.field_errors().into_iter().collect();
        assert_eq!(got, want, "{p}");
        assert_eq!(r.field_errors().len(), want.len(), "{p}");
    }

    // Over 64 KiB: refused before it is parsed.
    let huge = format!(r#"{{"model": {{"path": "{}"}}}}"#, "x".repeat(70 * 1024));
    let r = put(&huge);
    r.problem(413, "body-size");
    patch(&huge).problem(413, "body-size");

    let after = svc.get("/api/v1/config");
    assert_eq!(after.body, before.body);
    assert_eq!(after.header("etag"), before.header("etag"));
    assert_eq!(std::fs::read_to_string(&svc.config_path).unwrap(), text);
}

#[test]
fn a_config_that_cannot_be_applied_leaves_the_pipeline_running() {
    let svc = Service::start(&replay("chelsea.png"));
    let file_before = std::fs::read(&svc.config_path).unwrap();
    let before = svc.get("/api/v1/config");
    let n = svc.wait_frames_above(0);

    refused_apply(
        &svc,
        r#"{"model": {"path": "/nonexistent.onnx"}}"#,
        "/model/path",
        "/nonexistent.onnx",
    );

    let after = svc.get("/api/v1/config");
    assert_eq!(after.body, before.body);
    assert_eq!(after.header("etag"), before.header("etag"));
    assert_eq!(std::fs::read(&svc.config_path).unwrap(), file_before);
    let s = svc.status();
    assert_eq!(s["pipeline"]["state"], "running", "{s}");
    assert_eq!(s["pipeline"]["model"], "efficientnet-lite0.onnx", "{s}");
    let m = svc.wait_frames_above(n);
    svc.wait_frames_above(m);
}

#[test]
fn cuda_provider_and_cuda_ring_are_refused_where_cuda_cannot_run() {
    let svc = Service::start(&replay("chelsea.png"));
    if svc.status()["memory"]["kind"] != "host" {
        eprintln!("skipped: a CUDA driver is present here; gpu.rs covers this machine");
        return;
    }
    let before = svc.get("/api/v1/config");
    refused_apply(
        &svc,
        r#"{"inference": {"provider": "cuda"}}"#,
        "/inference/provider",
        "rule execution-provider: no CUDA",
    );
    for kind in ["cuda_device", "cuda_host"] {
        refused_apply(
            &svc,
            &format!(r#"{{"ring": {{"memory": "{kind}"}}}}"#),
            "/ring/memory",
            "rule ring-memory-kind: a CUDA frame ring needs a CUDA driver",
        );
    }
    assert_eq!(svc.get("/api/v1/config").body, before.body);
    assert_eq!(svc.status()["pipeline"]["state"], "running");
    // An unknown provider is a schema error, not an apply error.
    let r = svc.request(
        "PATCH",
        "/api/v1/config",
        Some(br#"{"inference": {"provider": "tpu"}}"#),
        &[],
    );
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(r.body.contains("/inference/provider"), "{}", r.body);
}

#[test]
fn unreadable_frames_are_refused_and_the_pipeline_keeps_running() {
    let svc = Service::start(&replay("chelsea.png"));
    let file_before = std::fs::read(&svc.config_path).unwrap();
    let n = svc.wait_frames_above(0);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("frame-000.png"),
        b"\x89PNG\r\n\x1a\n not really",
    )
    .unwrap();
    let empty = tempfile::tempdir().unwrap();
    for (path, expect) in [
        (dir.path(), "frame-000.png"),
        (empty.path(), "holds no image"),
    ] {
        let body = json!({"source": {"path": path}}).to_string();
        refused_apply(&svc, &body, "/source/path", expect);
    }
    assert_eq!(std::fs::read(&svc.config_path).unwrap(), file_before);
    let s = svc.status();
    assert_eq!(s["pipeline"]["state"], "running", "{s}");
    assert!(
        s["pipeline"]["source"]
            .as_str()
            .unwrap()
            .contains("chelsea.png"),
        "{s}"
    );
    svc.wait_frames_above(n);
}

#[test]
fn valid_patch_honours_if_match_and_is_persisted() {
    let svc = Service::start(&replay("chelsea.png"));
    let r = svc.get("/api/v1/config");
    let etag = r.header("etag").to_string();
    assert!(
        etag.starts_with('"') && etag.ends_with('"') && etag.len() > 2,
        "{etag}"
    );
    let stale = if etag == "\"deadbeef\"" {
        "\"cafef00d\""
    } else {
        "\"deadbeef\""
    };

    let body: &[u8] = br#"{"ring": {"entries": 6}}"#;
    let r = svc.request(
        "PATCH",
        "/api/v1/config",
        Some(body),
        &[("if-match", stale)],
    );
    r.problem(412, "if-match");
    assert_eq!(svc.get("/api/v1/config").header("etag"), etag);

    let r = svc.request(
        "PATCH",
        "/api/v1/config",
        Some(body),
        &[("if-match", &etag)],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let new_etag = r.header("etag").to_string();
    assert!(
        !new_etag.is_empty() && new_etag != etag,
        "{etag} -> {new_etag}"
    );
    let config = r.json();
    assert_eq!(config["ring"]["entries"], 6, "{config}");
    assert_eq!(
        // Stored relative to the data directory (the document anyone may read
        // does not show where that is).
        config["source"]["path"],
        json!("frames/chelsea.png"),
        "{config}"
    );

    // The old ETag no longer matches.
    svc.request(
        "PATCH",
        "/api/v1/config",
        Some(body),
        &[("if-match", &etag)],
    )
    .problem(412, "if-match");

    let got = svc.get("/api/v1/config");
    assert_eq!(got.header("etag"), new_etag);
    assert_eq!(got.json(), config);
    let on_disk: Value =
        serde_json::from_slice(&std::fs::read(&svc.config_path).unwrap()).expect("file is JSON");
    assert_eq!(on_disk, config);

    // Applied live: the pipeline runs on a ring of at least 6 entries (k x the card's
    // frame slots, k >= 2).
    let s = svc.status();
    assert_eq!(s["memory"]["ring_entries"], ring_entries_for(6, &s), "{s}");
    assert_eq!(s["pipeline"]["state"], "running", "{s}");
    let n = s["counters"]["frames_inferred"].as_u64().unwrap();
    svc.wait_frames_above(n);
}

#[test]
fn stop_and_start() {
    let svc = Service::start(&replay("chelsea.png"));
    svc.wait_frames_above(0);

    let r = svc.request("POST", "/api/v1/pipeline/stop", None, &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    let s = r.json();
    assert_eq!(s["pipeline"]["state"], "stopped", "{s}");
    // The threads were joined before the answer: nothing moves any more.
    let stopped = s["counters"].clone();
    std::thread::sleep(Duration::from_millis(400));
    let s = svc.status();
    assert_eq!(s["pipeline"]["state"], "stopped", "{s}");
    assert_eq!(s["counters"], stopped, "{s}");
    let metrics = svc.get("/metrics").body;
    assert!(
        metrics.contains("fpgagdr_pipeline_state{state=\"stopped\"} 1"),
        "{metrics}"
    );

    // Stopping twice is fine.
    assert_eq!(
        svc.request("POST", "/api/v1/pipeline/stop", None, &[])
            .status,
        200
    );

    let r = svc.request("POST", "/api/v1/pipeline/start", None, &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["pipeline"]["state"], "running", "{}", r.body);
    svc.wait_frames_above(stopped["frames_inferred"].as_u64().unwrap());
    // Starting what runs changes nothing.
    let r = svc.request("POST", "/api/v1/pipeline/start", None, &[]);
    assert_eq!(r.json()["pipeline"]["state"], "running", "{}", r.body);
}

#[test]
fn a_missing_model_at_startup_leaves_the_api_up() {
    let mut config = replay("chelsea.png");
    config["model"] = json!({"path": "models/nonexistent.onnx"});
    let svc = Service::start(&config);
    let s = svc.status();
    assert_eq!(s["pipeline"]["state"], "failed", "{s}");
    let error = s["pipeline"]["error"].as_str().unwrap_or("");
    assert!(
        error.contains("file-missing") && error.contains("models/nonexistent.onnx"),
        "{s}"
    );

    let p = svc
        .request("POST", "/api/v1/pipeline/start", None, &[])
        .problem(422, "pipeline-start");
    assert!(
        p["detail"].as_str().unwrap().contains("/nonexistent.onnx"),
        "{p}"
    );

    // Fixing the config starts the failed pipeline: the change is the fix.
    let r = svc.request(
        "PATCH",
        "/api/v1/config",
        Some(br#"{"model": {"path": "models/efficientnet-lite0.onnx"}}"#),
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let s = svc.status();
    assert_eq!(s["pipeline"]["state"], "running", "{s}");
    assert_eq!(s["pipeline"]["error"], Value::Null, "{s}");
    svc.wait_frames_above(0);
    // Start on a running pipeline is a no-op.
    let r = svc.request("POST", "/api/v1/pipeline/start", None, &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["pipeline"]["state"], "running");
}

fn test_model(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    p.to_str().unwrap().to_string()
}

#[test]
fn models_that_load_but_cannot_serve_are_refused() {
    let svc = Service::start(&replay("chelsea.png"));
    let n = svc.wait_frames_above(0);
    for (model, expect) in [
        ("int-output.onnx", "expected float32"),
        ("reshape-fails.onnx", "trial run"),
    ] {
        let body = json!({"model": {"path": test_model(model)}}).to_string();
        refused_apply(&svc, &body, "/model/path", expect);
    }
    let s = svc.status();
    assert_eq!(s["pipeline"]["state"], "running", "{s}");
    assert_eq!(s["pipeline"]["model"], "efficientnet-lite0.onnx", "{s}");
    svc.wait_frames_above(n);
}

/// A user's model whose batch dimension is fixed at 1 serves one frame per run, even
/// with a larger `inference.max_batch`; status and /metrics say so.
#[test]
fn a_fixed_batch_model_runs_one_frame_at_a_time() {
    let svc = Service::start(&replay("chelsea.png"));
    svc.wait_frames_above(0);
    let body = json!({
        "model": {"path": test_model("fixed-batch.onnx"),
                  "labels": test_model("fixed-batch.labels.txt")},
        "inference": {"max_batch": 2, "provider": "cpu"},
    })
    .to_string();
    let r = svc.request("PATCH", "/api/v1/config", Some(body.as_bytes()), &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    let s = wait_for("the fixed-batch model running", || {
        let s = svc.status();
        if s["pipeline"]["model"] == "fixed-batch.onnx" && s["pipeline"]["state"] == "running" {
            Ok(s)
        } else {
            Err(s.to_string())
        }
    });
    assert_eq!(s["pipeline"]["batch"]["max"], 1, "{s}");
    let inference = s["pipeline"]["inference"].as_str().unwrap_or("");
    assert!(inference.contains("fixed at 1"), "{s}");
    // The new model's results replace the old one's at the next publish.
    wait_for("a result of the fixed-batch model", || {
        let r = svc.get("/api/v1/results/latest").json();
        let label = r["top5"][0]["label"].as_str().unwrap_or("");
        if ["red", "green", "blue"].contains(&label) {
            Ok(())
        } else {
            Err(r.to_string())
        }
    });
    let metrics = svc.get("/metrics").body;
    assert!(
        metrics.contains("fpgagdr_inference_max_batch 1"),
        "{metrics}"
    );
    let c = &svc.status()["counters"];
    assert!(c["batches_run"].as_u64() > Some(0), "{c}");
}

#[test]
fn limits_content_type_and_shape_are_enforced() {
    let svc = Service::start(&replay("chelsea.png"));
    let before = std::fs::read(&svc.config_path).unwrap();
    let patch = |body: &str, headers: &[(&str, &str)]| {
        svc.request("PATCH", "/api/v1/config", Some(body.as_bytes()), headers)
    };
    // 64 entries of an 8192x8192 rgb8 frame would pin 12 GiB.
    refused_apply(
        &svc,
        r#"{"source": {"kind": "test_pattern", "width": 8192, "height": 8192, "format": "rgb8"},
            "ring": {"entries": 64}}"#,
        "/ring/entries",
        "ring-memory",
    );
    // A frame rate too slow to express as a period.
    let r = patch(r#"{"source": {"fps": 1e-30}}"#, &[]);
    r.problem(422, "config-range");
    assert_eq!(r.field_errors(), [("/source/fps".into(), "range".into())]);
    // Arrays are not objects, even though serde would take them positionally.
    let r = svc.request("PUT", "/api/v1/config", Some(br#"[true, ["replay"]]"#), &[]);
    r.problem(422, "config-schema");
    let r = patch(r#"{"card": [1, 1000, "off"]}"#, &[]);
    r.problem(422, "config-schema");
    assert_eq!(r.field_errors(), [("/card".into(), "type".into())]);
    // Not JSON by its own account.
    patch(
        r#"{"ring": {"entries": 5}}"#,
        &[("content-type", "text/plain")],
    )
    .problem(415, "content-type");
    let r = patch(
        r#"{"ring": {"entries": 5}}"#,
        &[("content-type", "application/merge-patch+json")],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_ne!(std::fs::read(&svc.config_path).unwrap(), before);
}

#[test]
fn a_slow_sensor_is_not_an_error_and_stop_does_not_wait_for_it() {
    // One frame every 500 ms with a 100 ms timeout: waits time out, transfers do not fail.
    let mut config = replay("chelsea.png");
    config["source"]["fps"] = json!(2);
    config["card"] = json!({"timeout_ms": 100});
    let svc = Service::start(&config);
    wait_for("frame_wait_timeouts to count", || {
        let c = svc.status()["counters"].clone();
        if c["frame_wait_timeouts"].as_u64() > Some(0) && c["frames_inferred"].as_u64() > Some(0) {
            Ok(c)
        } else {
            Err(c.to_string())
        }
    });
    assert_eq!(svc.status()["counters"]["transfer_errors"], 0);
    // The warning names the configured timeout, not the capture thread's wait slice.
    let log = svc.log();
    let warned: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("no frame arrived within"))
        .collect();
    assert!(
        !warned.is_empty()
            && warned
                .iter()
                .all(|l| l.contains("within 100ms (card.timeout_ms)")),
        "the frame-wait warning must name card.timeout_ms (100ms): {warned:?}"
    );
    // One frame every 50 s with a 60 s timeout: stop must not wait for the sensor (the
    // client's own 30 s timeout would fail this request if it did).
    let r = svc.request(
        "PATCH",
        "/api/v1/config",
        Some(br#"{"source": {"fps": 0.02}, "card": {"timeout_ms": 60000}}"#),
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = svc.request("POST", "/api/v1/pipeline/stop", None, &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["pipeline"]["state"], "stopped");
}

#[test]
fn a_bad_config_file_stops_startup_naming_field_and_rule() {
    let cases: [(&str, &[&str]); 4] = [
        (
            r#"{"ring": {"entries": 1}}"#,
            &["/ring/entries", "out of range"],
        ),
        (r#"{"ring": {"size": 3}}"#, &["/ring/size", "unknown field"]),
        (
            r#"{"card": {"timeout_ms": 0}, "source": {"fps": -1}}"#,
            &["/card/timeout_ms", "/source/fps", "out of range"],
        ),
        ("{\"ring\": ", &["malformed JSON"]),
    ];
    for (text, needles) in cases {
        let (status, stdout, stderr) = run_to_exit(text);
        assert!(!status.success(), "{text}: exited {status}");
        assert!(!stdout.contains("dashboard at"), "{text}: {stdout}");
        assert!(stderr.contains("config.json"), "{text}: {stderr}");
        for n in needles {
            assert!(stderr.contains(n), "{text}: {n:?} not in {stderr}");
        }
    }
}

/// One Server-Sent Event.
#[derive(Debug, Default)]
struct SseEvent {
    event: String,
    id: Option<u64>,
    data: String,
}

#[test]
fn sigterm_ends_the_service_even_with_a_dashboard_stream_open() {
    let mut svc = Service::start(&replay("chelsea.png"));
    let resp = svc
        .agent()
        .get(svc.url("/api/v1/stream"))
        .call()
        .expect("GET /api/v1/stream");
    let mut lines = std::io::BufReader::new(resp.into_body().into_reader()).lines();
    let first = lines.next().expect("a first line").expect("readable");
    assert!(
        first.starts_with("event:") || first.starts_with(':'),
        "{first}"
    );
    let status = svc
        .terminate()
        .expect("fpgagdrd still running after SIGTERM");
    assert!(status.success(), "{status:?}");
}

#[test]
fn stream_sends_batches_of_snapshots() {
    let svc = Service::start(&replay("chelsea.png"));
    let resp = svc
        .agent()
        .get(svc.url("/api/v1/stream"))
        .call()
        .expect("GET /api/v1/stream");
    assert_eq!(resp.status().as_u16(), 200);
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok());
    assert!(
        ct.is_some_and(|c| c.starts_with("text/event-stream")),
        "{ct:?}"
    );
    let mut lines = std::io::BufReader::new(resp.into_body().into_reader()).lines();

    let stages = ["dma", "preprocess", "inference", "end_to_end"];
    let deadline = Instant::now() + PATIENCE;
    let mut events = Vec::new();
    let mut current = SseEvent::default();
    let mut complete = false;
    while !(complete && events.len() >= 3) {
        assert!(Instant::now() < deadline, "stream too short: {events:?}");
        let line = lines
            .next()
            .expect("stream ended")
            .expect("read the stream");
        if line.is_empty() {
            let ev = std::mem::take(&mut current);
            if ev.data.is_empty() {
                continue;
            }
            let data: Value = serde_json::from_str(&ev.data).expect("data is JSON");
            if ev.event == "ota" {
                // OTA state changes share the stream but are not part of the resumable
                // snapshot feed: no id by design. RAUC is absent here, so they say so.
                assert!(ev.id.is_none(), "ota events carry no id: {ev:?}");
                assert!(data["available"].is_boolean(), "{data}");
                continue;
            }
            complete |= data["batch"].as_array().is_some_and(|b| {
                b.iter().any(|s| {
                    s["frames_inferred"].as_u64() > Some(0)
                        && stages.iter().all(|st| s["latency_us"].get(st).is_some())
                })
            });
            events.push(ev);
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((&line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "" => {} // comment (keep-alive)
            "event" => current.event = value.to_string(),
            "id" => current.id = Some(value.parse().expect("numeric id")),
            "data" => {
                if !current.data.is_empty() {
                    current.data.push('\n');
                }
                current.data.push_str(value);
            }
            other => panic!("unexpected SSE field {other:?} in {line:?}"),
        }
    }

    let ids: Vec<u64> = events
        .iter()
        .map(|e| e.id.expect("every event has an id"))
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids {ids:?}");
    let mut last_inferred = 0;
    for ev in &events {
        assert_eq!(ev.event, "snapshot", "{ev:?}");
        let v: Value = serde_json::from_str(&ev.data).unwrap();
        let batch = v["batch"].as_array().expect("{\"batch\": [...]}");
        assert!(!batch.is_empty(), "{v}");
        for s in batch {
            assert!(s["t"].as_f64().is_some_and(|t| t > 1.0e9), "{s}");
            assert!(
                ["running", "stopped", "failed"].contains(&s["state"].as_str().unwrap_or("")),
                "{s}"
            );
            assert!(s["fps"].as_f64().is_some_and(|f| f >= 0.0), "{s}");
            assert!(s["gbps"].as_f64().is_some_and(|g| g >= 0.0), "{s}");
            let n = s["frames_inferred"].as_u64().expect("frames_inferred");
            assert!(n >= last_inferred, "counters go backwards: {s}");
            last_inferred = n;
            for (stage, q) in s["latency_us"].as_object().expect("latency_us") {
                let (p50, p99, max) = (q["p50"].as_f64(), q["p99"].as_f64(), q["max"].as_f64());
                assert!(p50.is_some() && p50 <= p99 && p99 <= max, "{stage}: {q}");
            }
        }
    }
}

#[test]
fn metrics_openapi_and_dashboard() {
    let svc = Service::start(&replay("chelsea.png"));
    svc.wait_frames_above(0);
    // Cumulative histograms reach /metrics at the inference thread's next publish.
    let samples = wait_for("a stage latency in /metrics", || {
        let r = svc.get("/metrics");
        assert_eq!(r.status, 200);
        assert!(
            r.header("content-type")
                .starts_with("text/plain; version=0.0.4"),
            "{r:?}"
        );
        let samples = parse_prometheus(&r.body);
        let count = samples
            .iter()
            .find(|s| {
                s.name == "fpgagdr_stage_latency_seconds_count" && s.labels["stage"] == "inference"
            })
            .map(|s| s.value);
        if count > Some(0.0) {
            Ok(samples)
        } else {
            Err(r.body)
        }
    });
    let find = |name: &str, labels: &[(&str, &str)]| {
        samples
            .iter()
            .find(|s| {
                s.name == name
                    && labels
                        .iter()
                        .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .unwrap_or_else(|| panic!("no {name}{labels:?} in {samples:?}"))
            .value
    };
    assert!(find("fpgagdr_frames_inferred_total", &[]) >= 1.0);
    assert_eq!(find("fpgagdr_card_simulated", &[]), 1.0);
    assert_eq!(find("fpgagdr_pipeline_state", &[("state", "running")]), 1.0);
    assert_eq!(find("fpgagdr_checksum_errors_total", &[]), 0.0);
    let p99 = find(
        "fpgagdr_stage_latency_seconds",
        &[("stage", "inference"), ("quantile", "0.99")],
    );
    assert!(p99 > 0.0 && p99 < 60.0, "inference p99 {p99} s");

    // The OpenAPI document names every route the router serves, and every path it
    // names is served.
    let doc = svc.get_json("/openapi.json");
    assert!(
        doc["openapi"]
            .as_str()
            .is_some_and(|v| v.starts_with("3.1.")),
        "{}",
        doc["openapi"]
    );
    assert_eq!(svc.get_json("/api/v1/openapi.json"), doc);
    let paths = doc["paths"].as_object().expect("paths");
    for route in [
        "/api/v1/status",
        "/api/v1/config",
        "/api/v1/config/schema",
        "/api/v1/pipeline/start",
        "/api/v1/pipeline/stop",
        "/api/v1/results/latest",
        "/api/v1/stream",
        "/metrics",
    ] {
        assert!(
            paths.contains_key(route),
            "{route} missing from the OpenAPI document"
        );
    }
    assert!(
        doc.pointer("/components/schemas/Config").is_some(),
        "no Config schema"
    );
    assert!(
        !doc.to_string().contains("#/$defs/"),
        "dangling schemars references"
    );
    // The frame board samples the pipeline every 100 ms, so the first result reaches
    // `/results/latest` up to one board tick after it reached `/metrics`.
    wait_for("the first result on the frame board", || {
        let r = svc.get("/api/v1/results/latest");
        if r.status == 200 { Ok(()) } else { Err(r.body) }
    });
    // The SSE streams never end and the frame view is an image (tests/results.rs reads
    // both); a templated path needs a key that exists (tests/alerts.rs fetches a kept
    // frame by its run and seq); every other documented path answers here.
    let skipped = [
        "/api/v1/stream",
        "/api/v1/results/stream",
        "/api/v1/frames/latest",
    ];
    let plain = |p: &&String| !skipped.contains(&p.as_str()) && !p.contains('{');
    for path in paths.keys().filter(plain) {
        let r = svc.get(path);
        // POST-only routes answer 405 to GET; none is unknown.
        assert!(
            r.status == 200 || r.status == 405,
            "GET {path}: {} {}",
            r.status,
            r.body
        );
    }
    let schema = svc.get_json("/api/v1/config/schema");
    for field in ["autostart", "source", "card", "ring", "model", "inference"] {
        assert!(
            schema["properties"].get(field).is_some(),
            "{field} not in {schema}"
        );
    }

    let r = svc.get("/");
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").starts_with("text/html"), "{r:?}");
    assert!(
        r.header("content-security-policy")
            .contains("default-src 'self'"),
        "{r:?}"
    );
    assert!(r.body.to_ascii_lowercase().contains("<html"), "{}", r.body);
    let r = svc.get("/js/main.js");
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-type").starts_with("text/javascript"),
        "{r:?}"
    );
    assert!(!r.header("content-security-policy").is_empty(), "{r:?}");
    svc.get("/js/nope.js").problem(404, "asset");
}

/// Pin once, chain once (docs/decisions.md, "Capture from the real card"): the ring has k ×
/// N entries and entry i always meets card slot i mod N, so each entry's descriptor chain
/// is built once, on the first lap, and replayed for every later frame; every frame's
/// sequence number and CRC still match its slot (a cache keyed too loosely would score as
/// well).
#[test]
fn each_ring_entry_meets_one_slot_so_its_chain_is_built_once() {
    let svc = Service::start(&json!({
        "source": {"kind": "test_pattern", "width": 64, "height": 64, "format": "mono8", "fps": 0},
        "card": {"sim_link": "off"},
        "inference": {"threads": 1, "verify_checksum": true},
        "ring": {"entries": 3},
    }));
    let st = svc.status();
    let slots = st["memory"]["card_slots"].as_u64().expect("card_slots");
    let entries = st["memory"]["ring_entries"].as_u64().expect("ring_entries");
    assert_eq!(slots, 4, "the simulated sensor's slots: {st}");
    assert_eq!(
        entries, 8,
        "ring.entries 3 rounds up to k = 2 laps of 4 slots: {st}"
    );
    wait_for("a few hundred laps of the ring", || {
        let c = svc.status()["counters"].clone();
        match c["frames_captured"].as_u64() {
            Some(n) if n >= 200 * entries && c["frames_inferred"].as_u64() > Some(2) => Ok(()),
            _ => Err(c.to_string()),
        }
    });
    let r = svc.request("POST", "/api/v1/pipeline/stop", None, &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    let st = svc.status();
    let c = &st["counters"];
    let (hits, misses) = (
        c["chain_cache_hits"].as_u64().unwrap(),
        c["chain_cache_misses"].as_u64().unwrap(),
    );
    assert_eq!(
        Some(hits + misses),
        c["frames_captured"].as_u64(),
        "one C2H per captured frame: {c}"
    );
    assert!(
        misses <= entries,
        "each entry's chain is built once, on the first lap: {misses} misses for {entries} entries: {c}"
    );
    let rate = st["memory"]["chain_cache_hit_rate"].as_f64().unwrap();
    assert!(rate >= 0.99, "hit rate {rate}: {st}");
    assert_eq!(c["sequence_errors"], 0, "{c}");
    assert_eq!(c["checksum_errors"], 0, "{c}");
    let metrics = svc.get("/metrics").body;
    let ratio = parse_prometheus(&metrics)
        .into_iter()
        .find(|s| s.name == "fpgagdr_chain_cache_hit_ratio")
        .expect("fpgagdr_chain_cache_hit_ratio in /metrics");
    assert!(ratio.value >= 0.99, "{metrics}");
}

/// The demo's case (`./run.sh`): a replay of the five photos of `.deps/share/frames`,
/// each of another size, through the sensor's 4 slots, so a slot holds frames of
/// several lengths. Each ring entry still builds its chain only while it meets a longer
/// frame than before (it reads its slot up to the longest frame it has seen), so the
/// cache stays hot and nothing logs "descriptor chain is rebuilt"; every frame's
/// sequence number and CRC still check.
#[test]
fn photos_of_different_sizes_keep_the_chain_cache_hot() {
    let dir = frame("chelsea.png");
    let svc = Service::start(&json!({
        "source": {"kind": "replay", "path": dir.parent().unwrap(), "fps": 0},
        "card": {"sim_link": "off"},
        "inference": {"threads": 1, "verify_checksum": true},
        "ring": {"entries": 8},
    }));
    let st = svc.status();
    let entries = st["memory"]["ring_entries"].as_u64().expect("ring_entries");
    wait_for("a hundred laps of the ring", || {
        let c = svc.status()["counters"].clone();
        match c["frames_captured"].as_u64() {
            Some(n) if n >= 100 * entries && c["frames_inferred"].as_u64() > Some(5) => Ok(()),
            _ => Err(c.to_string()),
        }
    });
    let r = svc.request("POST", "/api/v1/pipeline/stop", None, &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    let st = svc.status();
    let c = &st["counters"];
    let misses = c["chain_cache_misses"].as_u64().unwrap();
    // At most one build per distinct frame length an entry meets (5 photos).
    assert!(
        misses <= 5 * entries,
        "{misses} chain builds for {entries} entries and 5 frame sizes: {c}"
    );
    let rate = st["memory"]["chain_cache_hit_rate"].as_f64().unwrap();
    assert!(rate >= 0.9, "hit rate {rate}: {st}");
    assert_eq!(c["sequence_errors"], 0, "{c}");
    assert_eq!(c["checksum_errors"], 0, "{c}");
    let log = svc.log();
    assert!(!log.contains("descriptor chain is rebuilt"), "{log}");
}

/// The frame ring a `ring.entries` of `wanted` gives on the card of status `s`: the next
/// multiple k × N of its slot count N at or above `wanted`, with k ≥ 2 (docs/decisions.md).
fn ring_entries_for(wanted: u64, s: &Value) -> u64 {
    let slots = s["memory"]["card_slots"].as_u64().expect("card_slots");
    wanted.div_ceil(slots).max(2) * slots
}

#[test]
fn batches_form_under_live_arrival_with_the_wait_chosen_from_the_model() {
    // 400 frames/s (2.5 ms apart) against a model that takes several ms a frame on the
    // CPU: no batch size keeps up, so the wait is chosen for the largest batch (4), and
    // batches of more than one frame form. No batch_wait_us is set.
    let svc = Service::start(&json!({
        "source": {"kind": "test_pattern", "width": 64, "height": 64, "format": "mono8", "fps": 400},
        "card": {"sim_link": "off"},
        "ring": {"entries": 16},
        "inference": {"threads": 1, "max_batch": 4},
    }));
    svc.wait_frames_above(12);
    let s = wait_for("a chosen wait and batches of more than one frame", || {
        let s = svc.status();
        let (b, c) = (&s["pipeline"]["batch"], &s["counters"]);
        let (frames, runs) = (
            c["frames_inferred"].as_f64().unwrap_or(0.0),
            c["batches_run"].as_f64().unwrap_or(0.0),
        );
        (b["aim"].as_u64().is_some_and(|a| a > 1)
            && b["wait_us"].as_f64().is_some_and(|w| w > 0.0)
            && runs > 0.0
            && frames / runs > 1.0)
            .then(|| s.clone())
            .ok_or(s.to_string())
    });
    let b = &s["pipeline"]["batch"];
    assert_eq!(b["max"], 4, "{b}");
    assert_eq!(
        b["ahead"], false,
        "the CPU path runs one batch at a time: {b}"
    );
    assert_eq!(b["c2h_channels"], 1, "{b}");
    let detail = b["wait_detail"].as_str().unwrap();
    assert!(
        detail.starts_with("chosen as frames arrive") && detail.contains("1: "),
        "the measured times are named: {detail}"
    );
    // 2.5 ms apart, whatever frames were dropped on the way (measured from sequence
    // numbers); generous bounds: the sensor's clock is the host's.
    let gap = b["arrival_gap_us"].as_f64().unwrap();
    assert!((1_500.0..4_000.0).contains(&gap), "{b}");
    // The choice and why: the default 5 ms target, a limit from the aim up to the
    // largest batch, the prediction and the reason in words.
    assert_eq!(b["latency_target_us"], 5_000.0, "{b}");
    let (aim, limit) = (b["aim"].as_u64().unwrap(), b["limit"].as_u64().unwrap());
    assert!(aim <= limit && limit <= 4, "{b}");
    assert!(b["predicted_us"].as_f64().is_some_and(|p| p > 0.0), "{b}");
    let reason = b["reason"].as_str().unwrap();
    assert!(
        [
            "within_target",
            "within_target_thin_margin",
            "target_unmet",
            "no_batch_keeps_up"
        ]
        .contains(&reason),
        "{b}"
    );
    assert!(
        b["reason_detail"]
            .as_str()
            .is_some_and(|d| d.contains("ms")),
        "{b}"
    );
    // The CPU path takes no GPU memory, and says so.
    let gpu = &s["memory"]["gpu"];
    assert_eq!(gpu["ring_bytes"], 0, "{gpu}");
    assert!(gpu["detail"].as_str().unwrap().starts_with("none"), "{gpu}");
    let metrics = svc.get("/metrics").body;
    let wait = parse_prometheus(&metrics)
        .into_iter()
        .find(|m| m.name == "fpgagdr_inference_batch_wait_seconds")
        .expect("the batch wait gauge");
    assert!(wait.value > 0.0, "{metrics}");
    let choice: Vec<_> = parse_prometheus(&metrics)
        .into_iter()
        .filter(|m| m.name == "fpgagdr_inference_batch_choice")
        .collect();
    assert_eq!(choice.len(), 5, "one line per reason: {metrics}");
    assert_eq!(
        choice.iter().filter(|m| m.value == 1.0).count(),
        1,
        "one reason in force: {metrics}"
    );
    for name in [
        "fpgagdr_inference_batch_limit",
        "fpgagdr_inference_batch_predicted_latency_seconds",
        "fpgagdr_inference_latency_target_seconds",
    ] {
        assert!(metrics.contains(name), "{name}: {metrics}");
    }
    assert!(
        !metrics.contains("fpgagdr_gpu_memory_bytes"),
        "no GPU memory on the CPU path"
    );
}

#[test]
fn two_c2h_channels_hand_frames_over_whole_and_count_what_the_sensor_produced() {
    // Two capture threads, one per C2H channel, take frames in turn; the sensor runs free
    // at 10,000 frames/s (the highest rate accepted) and capture waits for the ring
    // while the CPU model runs one frame at a time. That host is behind the sensor on
    // any machine, whatever its load: EfficientNet-Lite0 needs about 0.4 GFLOP a frame,
    // so one CPU thread would need 4 TFLOP/s to run 10,000 a second (this machine runs
    // about 140). Frames the host did not take in time are counted as missed; a frame
    // whose slot the sensor rewrote while a channel waited for a ring entry is counted
    // as overrun and never handed on; none reaches the model damaged or out of order,
    // and every frame the sensor produced is counted once.
    let svc = Service::start(&json!({
        "source": {"kind": "test_pattern", "width": 64, "height": 64, "format": "mono8", "fps": 10000},
        "card": {"sim_link": "off", "channel": 1, "channels": 2},
        "ring": {"when_full": "wait"},
        "inference": {"threads": 1, "max_batch": 1},
    }));
    svc.wait_frames_above(12);
    let c = wait_for("frames missed by a host slower than the sensor", || {
        let s = svc.status();
        let c = s["counters"].clone();
        (c["frames_missed"].as_u64().unwrap_or(0) > 0)
            .then_some(c.clone())
            .ok_or(c.to_string())
    });
    assert_eq!(svc.status()["pipeline"]["batch"]["c2h_channels"], 2);
    for zero in [
        "checksum_errors",
        "sequence_errors",
        "transfer_errors",
        "frames_dropped",
        "event_queue_overflows",
    ] {
        assert_eq!(c[zero], 0, "{zero}: {c}");
    }
    let n = |k: &str| c[k].as_u64().unwrap();
    // Each frame captured is inferred, waits in the ring or in the batch, or was overrun
    // (counted, not handed on).
    assert!(
        n("frames_inferred") + n("frames_overrun") <= n("frames_captured"),
        "{c}"
    );
    // Frames reach the model checked and in the order the sensor produced them: a later
    // latest result is a later frame.
    let r = svc.wait_result("a result", |_| true);
    assert_eq!(r["frame"]["checksum_ok"], true, "{r}");
    let seq = r["seq"].as_u64().unwrap();
    let later = svc.wait_result("a later result", |r| r["seq"].as_u64() != Some(seq));
    assert!(later["seq"].as_u64().unwrap() > seq, "{seq} then {later}");
    // A frame is counted (captured, and the frames before it missed) before its result
    // exists: the sensor's numbering from 0 is never ahead of the count.
    let after = svc.status()["counters"].clone();
    let produced = after["frames_captured"].as_u64().unwrap()
        + after["frames_missed"].as_u64().unwrap()
        + after["event_queue_overflows"].as_u64().unwrap();
    let newest = later["seq"].as_u64().unwrap();
    assert!(
        newest < produced,
        "frame {newest} inferred, {produced} counted: {after}"
    );
}

#[test]
fn c2h_channels_past_the_cards_are_refused_naming_the_field() {
    let svc = Service::start(&replay("chelsea.png"));
    let r = svc.request(
        "PATCH",
        "/api/v1/config",
        Some(br#"{"card": {"channel": 3, "channels": 2}}"#),
        &[],
    );
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(
        r.field_errors(),
        [("/card/channels".to_string(), "range".to_string())],
        "{}",
        r.body
    );
}
