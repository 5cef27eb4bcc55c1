//! Golden responses: every endpoint of the HTTP surface, asked the same questions as the
//! binary that was current before the crates were split, must answer with the
//! same status, the same headers that clients rely on, and a body of the same shape.
//!
//! The fixture `tests/golden/responses.json` was recorded from that binary with
//! `FPGAGDR_GOLDEN=record cargo test -p fpgagdrd --test golden`; without the variable the
//! test replays every request against the current binary and fails listing each
//! difference (request, what was recorded, what came back). Volatile values (times,
//! counts, ids, temperatures) are not compared: a body is reduced to its shape (the type
//! of every value, the keys of every object), and a problem keeps its `type`, `status`,
//! `title` and `errors[].field/rule`. A `null` on either side matches any value (fields
//! that are null until something happened), and an empty array matches any array.
//! Differences that are intended are listed in `docs/architecture.md` ("Golden
//! responses") and in [`INTENDED`] below, each with its reason.

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use common::{Reply, Service, replay};
use serde_json::{Map, Value, json};

/// Headers whose values clients rely on; `etag` is recorded as present or absent.
const HEADERS: &[&str] = &[
    "content-type",
    "cache-control",
    "content-security-policy",
    "x-content-type-options",
    "www-authenticate",
    "allow",
    "location",
];

/// Intended differences from the recording: (request name, JSON pointer into the
/// recorded entry, why). A `*` segment of the pointer matches any one segment. The
/// split changed no answer; later changes added fields (below) and changed no status,
/// header, problem or recorded field of the REST answers; one reshaped the stream's
/// telemetry point, one added the nosniff header and the schema's refusal of empty
/// paths and of rates between 0 and 0.01.
const INTENDED: &[(&str, &str, &str)] = &[
    (
        "status",
        "/body/shape/object/pipeline/object/generation",
        GEN,
    ),
    (
        "status",
        "/body/shape/object/pipeline/object/running_s",
        GEN,
    ),
    (
        "system",
        "/body/shape/object/pipeline/object/generation",
        GEN,
    ),
    (
        "system",
        "/body/shape/object/pipeline/object/running_s",
        GEN,
    ),
    ("stop", "/body/shape/object/pipeline/object/generation", GEN),
    ("stop", "/body/shape/object/pipeline/object/running_s", GEN),
    (
        "status-stopped",
        "/body/shape/object/pipeline/object/generation",
        GEN,
    ),
    (
        "status-stopped",
        "/body/shape/object/pipeline/object/running_s",
        GEN,
    ),
    (
        "start",
        "/body/shape/object/pipeline/object/generation",
        GEN,
    ),
    ("start", "/body/shape/object/pipeline/object/running_s", GEN),
    (
        "status-never-started",
        "/body/shape/object/pipeline/object/generation",
        GEN,
    ),
    (
        "status-never-started",
        "/body/shape/object/pipeline/object/running_s",
        GEN,
    ),
    (
        "start-ok-from-idle",
        "/body/shape/object/pipeline/object/generation",
        GEN,
    ),
    (
        "start-ok-from-idle",
        "/body/shape/object/pipeline/object/running_s",
        GEN,
    ),
    ("config-schema", "/body/shape/object/x-order", FORM),
    (
        "config-schema",
        "/body/shape/object/properties/object/*/object/title",
        FORM,
    ),
    (
        "config-schema",
        "/body/shape/object/$defs/object/*/object/x-order",
        FORM,
    ),
    (
        "config-schema",
        "/body/shape/object/$defs/object/*/object/properties/object/*/object/title",
        FORM,
    ),
    (
        "config-schema",
        "/body/shape/object/$defs/object/*/object/properties/object/*/object/x-applies-when",
        FORM,
    ),
    (
        "config-schema",
        "/body/shape/object/$defs/object/*/object/properties/object/*/object/x-offer",
        FORM,
    ),
    (
        "config-schema",
        "/body/shape/object/$defs/object/*/object/properties/object/*/object/x-allowed",
        "each range in the words the service refuses a value with, for the form to state",
    ),
    ("telemetry", "/body/shape/object/clocks", JETSON),
    ("telemetry", "/body/shape/object/cpu_cores", JETSON),
    ("telemetry", "/body/shape/object/emc", JETSON),
    ("telemetry", "/body/shape/object/fans", JETSON),
    ("telemetry", "/body/shape/object/gpu_mem_used_bytes", JETSON),
    ("telemetry", "/body/shape/object/power_mode", JETSON),
    ("openapi", "/body/operations", FILES),
    ("openapi-v1", "/body/operations", FILES),
    (
        "stream",
        "/body/shape/object/batch/array/object/generation",
        GEN,
    ),
    (
        "stream",
        "/body/shape/object/batch/array/object/running_s",
        GEN,
    ),
    (
        "stream",
        "/body/shape/object/batch/array/object/telemetry_sample",
        SAMPLE,
    ),
    (
        "stream",
        "/body/shape/object/batch/array/object/telemetry/object/fps",
        POINT,
    ),
    (
        "stream",
        "/body/shape/object/batch/array/object/telemetry/object/rails_mw",
        POINT,
    ),
    (
        "stream",
        "/body/shape/object/batch/array/object/telemetry/object/frames_per_joule",
        POINT,
    ),
    (
        "*",
        "/body/shape/object/card/object/selected",
        "why this card (--card auto)",
    ),
    (
        "*",
        "/body/shape/object/memory/object/card_slots",
        "the ring is k x N entries",
    ),
    (
        "*",
        "/body/shape/object/memory/object/chain_cache_hit_rate",
        "pin once, chain once",
    ),
    (
        "*",
        "/body/shape/object/counters/object/chain_cache_hits",
        "chain cache",
    ),
    (
        "*",
        "/body/shape/object/counters/object/chain_cache_misses",
        "chain cache",
    ),
    (
        "*",
        "/body/shape/object/counters/object/frames_missed",
        "frames no event reported",
    ),
    (
        "*",
        "/body/shape/object/counters/object/event_queue_overflows",
        "the module's queue was full",
    ),
    (
        "*",
        "/body/shape/object/counters/object/frames_overrun",
        "slots overwritten before the C2H",
    ),
    (
        "*",
        "/body/shape/object/counters/object/sequence_errors",
        "a slot held another frame",
    ),
    (
        "*",
        "/body/shape/object/batch/array/object/chain_cache_hits",
        "the same counters in snapshots",
    ),
    (
        "*",
        "/body/shape/object/batch/array/object/chain_cache_misses",
        "the same counters in snapshots",
    ),
    (
        "*",
        "/body/shape/object/batch/array/object/frames_missed",
        "the same counters in snapshots",
    ),
    (
        "*",
        "/body/shape/object/batch/array/object/event_queue_overflows",
        "the same counters in snapshots",
    ),
    (
        "*",
        "/body/shape/object/batch/array/object/frames_overrun",
        "the same counters in snapshots",
    ),
    (
        "*",
        "/body/shape/object/batch/array/object/sequence_errors",
        "the same counters in snapshots",
    ),
    (
        "*",
        "/body/shape/object/latency_us/object/pickup",
        "stage arrival -> C2H submit",
    ),
    (
        "metrics",
        "/body/metric_families",
        "chain cache, missed, overflow, overrun, sequence families added (none removed)",
    ),
    (
        "*",
        "/headers/x-content-type-options",
        "every answer says X-Content-Type-Options: nosniff",
    ),
    (
        "config-schema",
        "/body/shape/object/$defs/object/ModelConfig/object/properties/object/labels/object/minLength",
        "the schema refuses the empty path the service refuses",
    ),
    (
        "config-schema",
        "/body/shape/object/$defs/object/ModelConfig/object/properties/object/path/object/minLength",
        "the schema refuses the empty path the service refuses",
    ),
    (
        "config-schema",
        "/body/shape/object/$defs/object/SourceConfig/object/properties/object/path/object/minLength",
        "the schema refuses the empty path the service refuses",
    ),
    (
        "config-schema",
        "/body/shape/object/$defs/object/SourceConfig/object/properties/object/fps/object/not",
        "the schema refuses a rate between 0 and 0.01, as the service does",
    ),
    // The whole path at the card's rate: batching under live arrival, several C2H
    // channels, GPU memory (fields added; the batch wait may be null = chosen).
    ("*", "/body/shape/object/memory/object/gpu", CARD_RATE),
    (
        "*",
        "/body/shape/object/pipeline/object/batch/object/ahead",
        CARD_RATE,
    ),
    (
        "*",
        "/body/shape/object/pipeline/object/batch/object/aim",
        CARD_RATE,
    ),
    (
        "*",
        "/body/shape/object/pipeline/object/batch/object/arrival_gap_us",
        CARD_RATE,
    ),
    (
        "*",
        "/body/shape/object/pipeline/object/batch/object/c2h_channels",
        CARD_RATE,
    ),
    (
        "*",
        "/body/shape/object/pipeline/object/batch/object/wait_detail",
        CARD_RATE,
    ),
    (
        "*",
        "/body/shape/object/pipeline/object/batch/object/wait_us",
        CARD_RATE,
    ),
    ("*", "/body/shape/object/card/object/channels", CARD_RATE),
    (
        "config-schema",
        "/body/shape/object/$defs/object/CardConfig/object/properties/object/channels",
        CARD_RATE,
    ),
    (
        "config-schema",
        "/body/shape/object/$defs/object/InferenceConfig/object/properties/object/batch_wait_us/object/type",
        CARD_RATE,
    ),
    (
        "config-schema",
        "/body/shape/object/properties/object/card/object/default/object/channels",
        CARD_RATE,
    ),
    // A latency target for the chosen batches: the config field and the choice in status.
    (
        "*",
        "/body/shape/object/inference/object/latency_target_us",
        LATENCY,
    ),
    (
        "config-schema",
        "/body/shape/object/$defs/object/InferenceConfig/object/properties/object/latency_target_us",
        LATENCY,
    ),
    (
        "config-schema",
        "/body/shape/object/properties/object/inference/object/default/object/latency_target_us",
        LATENCY,
    ),
    (
        "*",
        "/body/shape/object/pipeline/object/batch/object/latency_target_us",
        LATENCY,
    ),
    (
        "*",
        "/body/shape/object/pipeline/object/batch/object/limit",
        LATENCY,
    ),
    (
        "*",
        "/body/shape/object/pipeline/object/batch/object/predicted_us",
        LATENCY,
    ),
    (
        "*",
        "/body/shape/object/pipeline/object/batch/object/reason",
        LATENCY,
    ),
    (
        "*",
        "/body/shape/object/pipeline/object/batch/object/reason_detail",
        LATENCY,
    ),
    // Results out.
    ("*", "/body/shape/object/outputs", RESULTS),
    (
        "config-schema",
        "/body/shape/object/$defs/object/MqttConfig",
        RESULTS,
    ),
    (
        "config-schema",
        "/body/shape/object/$defs/object/OutputsConfig",
        RESULTS,
    ),
    (
        "config-schema",
        "/body/shape/object/properties/object/outputs",
        RESULTS,
    ),
    (
        "config-schema",
        "/body/shape/object/$defs/object/AlertRule",
        ALERTS,
    ),
    (
        "config-schema",
        "/body/shape/object/$defs/object/AlertsConfig",
        ALERTS,
    ),
    (
        "config-schema",
        "/body/shape/object/$defs/object/KeepFramesConfig",
        ALERTS,
    ),
    ("ota", "/body/shape/object/boot_check", BOOT_CHECK),
    ("ota", "/body/shape/object/bootloader", BOOT_CHECK),
];
const BOOT_CHECK: &str = "the OTA status says how mark-good judged this boot (boot_check) and which \
                          boot firmware runs (bootloader); both null where they are not known";

const RESULTS: &str = "the config's outputs.mqtt (the password write-only: never shown) and the status's outputs (results log, MQTT, per-frame stream, drops by reason)";
const CARD_RATE: &str = "batching under live arrival, C2H channels and GPU memory added";
const LATENCY: &str = "a latency target for the chosen batches (inference.latency_target_us) and the chosen limit, predicted latency and reason in status";
const ALERTS: &str = "alert rules (outputs.alerts.rules, keyed by name) and keeping the frames that match them (outputs.alerts.keep_frames)";
const GEN: &str = "the pipeline generation these facts belong to and the pipeline's own uptime (a page re-reads the status when a snapshot names another generation)";
const FORM: &str = "the config form's words, order, per-source fields and file lists come from the schema (title, x-order, x-applies-when, x-offer)";
const JETSON: &str = "what Jetson users look at first (per-core CPU, fans, nvpmodel power mode, jetson_clocks, EMC clock, GPU memory)";
const SAMPLE: &str = "the newest snapshot of each event carries the full telemetry sample (GET /telemetry's), so the page needs no poll";
const FILES: &str = "GET /api/v1/config/files, the frames and models a config form can offer";
const POINT: &str = "the stream's telemetry point names its rails (an object by rail name: an event is read without a second request) and has frames per joule; frames/s is the snapshot's own, computed once by the frame board";

/// Whether the difference `d` (`POINTER: ...`) is the intended `pattern`'s.
fn intended_pointer(pattern: &str, d: &str) -> bool {
    let Some((pointer, _)) = d.split_once(": ") else {
        return false;
    };
    let want: Vec<&str> = pattern.split('/').collect();
    let got: Vec<&str> = pointer.split('/').collect();
    want.len() == got.len() && want.iter().zip(&got).all(|(w, g)| *w == "*" || w == g)
}

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/responses.json")
}

/// The type of every value, the keys of every object.
fn shape(v: &Value) -> Value {
    match v {
        Value::Null => json!("null"),
        Value::Bool(_) => json!("boolean"),
        Value::Number(_) => json!("number"),
        Value::String(_) => json!("string"),
        Value::Array(items) => {
            let mut merged = Value::Null;
            for item in items {
                merged = merge(merged, shape(item));
            }
            if items.is_empty() {
                json!("array")
            } else {
                json!({ "array": merged })
            }
        }
        Value::Object(m) => {
            let keys: Map<String, Value> = m.iter().map(|(k, v)| (k.clone(), shape(v))).collect();
            json!({ "object": keys })
        }
    }
}

/// Union of two shapes of array elements (objects: union of keys).
fn merge(a: Value, b: Value) -> Value {
    match (a, b) {
        (Value::Null, b) => b,
        (a, Value::Null) => a,
        (Value::Object(mut a), Value::Object(b)) => {
            if let (Some(Value::Object(ak)), Some(Value::Object(bk))) =
                (a.get_mut("object"), b.get("object"))
            {
                for (k, v) in bk {
                    let merged = merge(ak.remove(k).unwrap_or(Value::Null), v.clone());
                    ak.insert(k.clone(), merged);
                }
            }
            Value::Object(a)
        }
        (a, _) => a,
    }
}

/// One answer, reduced to what must stay the same.
fn record(reply: &Reply) -> Value {
    let mut headers = Map::new();
    for h in HEADERS {
        let v = reply.header(h);
        if !v.is_empty() {
            headers.insert((*h).into(), json!(v));
        }
    }
    headers.insert("etag".into(), json!(!reply.header("etag").is_empty()));
    let ct = reply.header("content-type");
    let body = if ct.starts_with("application/problem+json") {
        let p = reply.json();
        let errors: Vec<Value> = p["errors"]
            .as_array()
            .map(|a| a.iter().map(|e| json!([e["field"], e["rule"]])).collect())
            .unwrap_or_default();
        json!({
            "problem": {"type": p["type"], "status": p["status"], "title": p["title"], "errors": errors},
            "shape": shape(&p),
        })
    } else if ct.starts_with("application/json") {
        let v = reply.json();
        if v.get("openapi").is_some() {
            json!({ "operations": operations(&v) })
        } else {
            json!({ "shape": shape(&v) })
        }
    } else if ct.starts_with("text/plain; version=0.0.4") {
        let families: BTreeSet<&str> = reply
            .body
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        json!({ "metric_families": families })
    } else if reply.body.is_empty() {
        json!("empty")
    } else {
        json!("text")
    };
    json!({ "status": reply.status, "headers": headers, "body": body })
}

/// `METHOD path` of every operation of an OpenAPI document, sorted.
fn operations(doc: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(paths) = doc["paths"].as_object() {
        for (path, item) in paths {
            for m in ["get", "put", "post", "patch", "delete", "head"] {
                if item.get(m).is_some() {
                    out.push(format!("{} {path}", m.to_uppercase()));
                }
            }
        }
    }
    out.sort();
    out
}

/// The first snapshot event of the SSE stream: status, headers, event name and shape.
fn first_stream_event(svc: &Service) -> Value {
    let addr = svc.base.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "GET /api/v1/stream HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n"
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let mut status_line = String::new();
    r.read_line(&mut status_line).unwrap();
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let mut headers = Map::new();
    loop {
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            let k = k.trim().to_ascii_lowercase();
            if HEADERS.contains(&k.as_str()) {
                headers.insert(k, json!(v.trim()));
            }
        }
    }
    headers.insert("etag".into(), json!(false));
    let (mut event, mut id, mut data) = (String::new(), false, Value::Null);
    for line in r.by_ref().lines() {
        let line = line.expect("read the stream");
        if let Some(e) = line.strip_prefix("event: ") {
            event = e.to_string();
        } else if line.starts_with("id: ") {
            id = true;
        } else if let Some(d) = line.strip_prefix("data: ") {
            data = serde_json::from_str(d).expect("data is JSON");
        }
        if event == "snapshot" && !data.is_null() {
            break;
        }
    }
    json!({
        "status": status,
        "headers": headers,
        "body": {"event": event, "id": id, "shape": shape(&data)},
    })
}

/// Asks every question, in an order that makes each answer's state deterministic.
fn ask_all() -> Vec<(String, Value)> {
    let sysfs = tempfile::tempdir().expect("temp dir");
    let svc = Service::start_with_args(
        Some(&replay("chelsea.png").to_string()),
        &[
            "--sysfs-root",
            sysfs.path().to_str().unwrap(),
            "--rauc-bus",
            "unix:path=/nonexistent/fpgagdr-golden-bus",
            "--telemetry-hz",
            "10",
        ],
    );
    svc.wait_frames_above(2);
    svc.wait_result("a result", |_| true);
    common::wait_for("every stage in the chart history", || {
        let h = svc.get_json("/api/v1/pipeline/history");
        match h["latency_us"].as_object() {
            Some(m) if m.len() >= 5 => Ok(()),
            _ => Err(h["latency_us"].to_string()),
        }
    });
    common::wait_for("a telemetry sample", || {
        let r = svc.get("/api/v1/telemetry");
        if r.status == 200 {
            Ok(())
        } else {
            Err(r.status.to_string())
        }
    });
    let out: std::cell::RefCell<Vec<(String, Value)>> = Default::default();
    let ask = |name: &str, method: &str, path: &str, body: Option<&[u8]>, h: &[(&str, &str)]| {
        let reply = svc.request(method, path, body, h);
        out.borrow_mut().push((name.into(), record(&reply)));
        reply
    };
    let json_ct = [("content-type", "application/json")];
    ask("status", "GET", "/api/v1/status", None, &[]);
    let cfg = ask("config", "GET", "/api/v1/config", None, &[]);
    let etag = cfg.header("etag").to_string();
    ask("config-schema", "GET", "/api/v1/config/schema", None, &[]);
    ask("results-latest", "GET", "/api/v1/results/latest", None, &[]);
    ask("telemetry", "GET", "/api/v1/telemetry", None, &[]);
    ask(
        "telemetry-history",
        "GET",
        "/api/v1/telemetry/history",
        None,
        &[],
    );
    ask(
        "telemetry-history-60s",
        "GET",
        "/api/v1/telemetry/history?span=60s",
        None,
        &[],
    );
    ask(
        "telemetry-history-1h",
        "GET",
        "/api/v1/telemetry/history?span=1h",
        None,
        &[],
    );
    ask(
        "telemetry-history-bad-span",
        "GET",
        "/api/v1/telemetry/history?span=2d",
        None,
        &[],
    );
    ask(
        "telemetry-history-bad-query",
        "GET",
        "/api/v1/telemetry/history?x=1",
        None,
        &[],
    );
    ask(
        "pipeline-history",
        "GET",
        "/api/v1/pipeline/history",
        None,
        &[],
    );
    ask("system", "GET", "/api/v1/system", None, &[]);
    ask("ota", "GET", "/api/v1/ota", None, &[]);
    ask("metrics", "GET", "/metrics", None, &[]);
    ask("openapi", "GET", "/openapi.json", None, &[]);
    ask("openapi-v1", "GET", "/api/v1/openapi.json", None, &[]);
    ask("dashboard", "GET", "/", None, &[]);
    ask("dashboard-js", "GET", "/js/main.js", None, &[]);
    ask("dashboard-css", "GET", "/css/app.css", None, &[]);
    ask("no-asset", "GET", "/no-such-file.html", None, &[]);
    ask("no-route", "GET", "/api/v1/no-such-thing", None, &[]);
    ask(
        "method-not-allowed",
        "PUT",
        "/api/v1/status",
        Some(b"{}"),
        &[],
    );
    // Mutations refused before they change anything.
    let no_token = svc.request_as("PATCH", "/api/v1/config", Some(b"{}"), &json_ct);
    out.borrow_mut()
        .push(("no-token".into(), record(&no_token)));
    ask(
        "put-malformed",
        "PUT",
        "/api/v1/config",
        Some(b"{\"ring\": "),
        &[],
    );
    ask(
        "put-range",
        "PUT",
        "/api/v1/config",
        Some(br#"{"ring": {"entries": 1}, "card": {"timeout_ms": 0}}"#),
        &[],
    );
    ask(
        "put-unknown-field",
        "PUT",
        "/api/v1/config",
        Some(br#"{"ring": {"size": 1}}"#),
        &[],
    );
    ask(
        "put-type",
        "PUT",
        "/api/v1/config",
        Some(br#"{"ring": {"entries": "four"}}"#),
        &[],
    );
    ask("put-array", "PUT", "/api/v1/config", Some(b"[1]"), &[]);
    ask(
        "patch-not-object",
        "PATCH",
        "/api/v1/config",
        Some(b"[1]"),
        &[],
    );
    ask(
        "patch-enum",
        "PATCH",
        "/api/v1/config",
        Some(br#"{"ring": {"when_full": "explode"}}"#),
        &[],
    );
    ask(
        "patch-content-type",
        "PATCH",
        "/api/v1/config",
        Some(b"{}"),
        &[("content-type", "text/plain")],
    );
    ask(
        "patch-if-match",
        "PATCH",
        "/api/v1/config",
        Some(b"{}"),
        &[("if-match", "\"00000000\"")],
    );
    let big = vec![b' '; 70 * 1024];
    ask("put-too-large", "PUT", "/api/v1/config", Some(&big), &[]);
    ask(
        "patch-apply",
        "PATCH",
        "/api/v1/config",
        Some(br#"{"model": {"path": "/nonexistent/model.onnx"}}"#),
        &[],
    );
    ask(
        "ota-install-malformed",
        "POST",
        "/api/v1/ota/install",
        Some(br#"{"bundle": 1}"#),
        &[],
    );
    ask(
        "ota-install-unknown",
        "POST",
        "/api/v1/ota/install",
        Some(br#"{"bundle": "00"}"#),
        &[],
    );
    ask(
        "ota-upload",
        "POST",
        "/api/v1/ota/bundles",
        Some(b"not a bundle"),
        &[("content-type", "application/octet-stream")],
    );
    // Mutations that succeed; the document stays the same one (no restart between).
    ask(
        "patch-same",
        "PATCH",
        "/api/v1/config",
        Some(b"{}"),
        &[("if-match", &etag)],
    );
    ask(
        "put-same",
        "PUT",
        "/api/v1/config",
        Some(cfg.body.as_bytes()),
        &[],
    );
    ask("stop", "POST", "/api/v1/pipeline/stop", None, &[]);
    ask("status-stopped", "GET", "/api/v1/status", None, &[]);
    ask(
        "patch-while-stopped",
        "PATCH",
        "/api/v1/config",
        Some(br#"{"ring": {"entries": 6}}"#),
        &[],
    );
    ask("start", "POST", "/api/v1/pipeline/start", None, &[]);
    out.borrow_mut()
        .push(("stream".into(), first_stream_event(&svc)));
    drop(svc);
    let mut out = out.into_inner();

    // A service whose pipeline has not run: 404 for the latest result, 204 telemetry
    // is not deterministic (the sampler starts at once), so only the result is asked.
    let idle = Service::start_with_file(Some("{\"autostart\": false}"));
    let r = idle.get("/api/v1/results/latest");
    out.push(("results-latest-none".into(), record(&r)));
    let r = idle.get("/api/v1/status");
    out.push(("status-never-started".into(), record(&r)));
    let bad = idle.request("POST", "/api/v1/pipeline/start", None, &[]);
    out.push(("start-ok-from-idle".into(), record(&bad)));
    drop(idle);
    let broken = Service::start_with_file(Some(
        &json!({"autostart": false, "model": {"path": "/nonexistent/model.onnx"}}).to_string(),
    ));
    let r = broken.request("POST", "/api/v1/pipeline/start", None, &[]);
    out.push(("start-fails".into(), record(&r)));
    out
}

/// Where `actual` differs from `golden`, as `pointer: recorded → now` lines.
fn diff(at: &str, golden: &Value, actual: &Value, out: &mut Vec<String>) {
    match (golden, actual) {
        (Value::String(g), _) if g == "null" => {}
        (_, Value::String(a)) if a == "null" => {}
        (Value::String(g), Value::Object(a)) if g == "array" && a.contains_key("array") => {}
        (Value::Object(g), Value::String(a)) if a == "array" && g.contains_key("array") => {}
        (Value::Object(g), Value::Object(a)) => {
            for (k, gv) in g {
                let p = format!("{at}/{k}");
                match a.get(k) {
                    Some(av) => diff(&p, gv, av, out),
                    None => out.push(format!("{p}: recorded {gv}, now missing")),
                }
            }
            for (k, av) in a {
                if !g.contains_key(k) {
                    out.push(format!("{at}/{k}: not recorded, now {av}"));
                }
            }
        }
        (g, a) if g != a => out.push(format!("{at}: recorded {g}, now {a}")),
        _ => {}
    }
}

#[test]
fn every_endpoint_answers_as_recorded() {
    let answers = ask_all();
    if std::env::var("FPGAGDR_GOLDEN").as_deref() == Ok("record") {
        let doc: Map<String, Value> = answers.into_iter().collect();
        let text = serde_json::to_string_pretty(&Value::Object(doc)).unwrap() + "\n";
        std::fs::create_dir_all(fixture().parent().unwrap()).unwrap();
        std::fs::write(fixture(), text).unwrap();
        eprintln!("recorded {}", fixture().display());
        return;
    }
    let golden: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture()).expect("tests/golden/responses.json"),
    )
    .expect("fixture is JSON");
    let golden = golden.as_object().expect("fixture is an object");
    let mut problems = Vec::new();
    let asked: BTreeSet<&str> = answers.iter().map(|(n, _)| n.as_str()).collect();
    for name in golden.keys() {
        if !asked.contains(name.as_str()) {
            problems.push(format!("{name}: recorded, not asked any more"));
        }
    }
    for (name, actual) in &answers {
        let Some(recorded) = golden.get(name) else {
            problems.push(format!("{name}: asked, never recorded"));
            continue;
        };
        let mut found = Vec::new();
        diff("", recorded, actual, &mut found);
        for d in found {
            let intended = INTENDED
                .iter()
                .any(|(n, p, _)| (*n == "*" || n == name) && intended_pointer(p, &d));
            if !intended {
                problems.push(format!("{name} {d}"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} difference(s) from the golden responses:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
