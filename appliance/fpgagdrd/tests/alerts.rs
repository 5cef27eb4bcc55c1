//! Alert rules and kept frames, on the real binary with the real model and
//! frames: a class rule marks every result it matches in the log and on the results
//! stream, fires `alert` events and a counter per rule (status and `/metrics`); bad
//! rules are refused naming the rule broken with nothing applied; the frames of
//! matching results are kept as PNG within their count and byte bounds, the oldest
//! deleted first, listed and fetched over the API. Condition rules (`drop_rate`,
//! `e2e_p99`, `temperature`, `power`) fire once when their condition becomes true and
//! clear once when it ends, on the same path (stream, counter, status); temperature
//! and power read a fake sysfs tree (a test double for the INA3221 and thermal zones
//! this machine lacks). (MQTT's alert topic is tested against the real broker in
//! `results.rs`.)

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use common::{FakeSysfs, Service, alert_events, parse_prometheus, replay, wait_for};
use serde_json::{Value, json};

/// The top-5 labels the replayed cat gets (best first).
fn top_labels(svc: &Service) -> Vec<String> {
    let r = svc.wait_result("a result", |r| {
        r["top5"].as_array().is_some_and(|a| a.len() == 5)
    });
    r["top5"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["label"].as_str().unwrap().to_string())
        .collect()
}

fn patch(svc: &Service, body: &Value) -> common::Reply {
    svc.request(
        "PATCH",
        "/api/v1/config",
        Some(body.to_string().as_bytes()),
        &[("content-type", "application/merge-patch+json")],
    )
}

/// Rules: `hit` matches the cat's best class at any score; `miss` asks its fifth class
/// for a score of 1, which a softmax's fifth never has.
fn rules(labels: &[String]) -> Value {
    json!({
        "hit": {"kind": "class", "classes": [labels[0]], "min_score": 0.0},
        "miss": {"kind": "class", "classes": [labels[4]], "min_score": 1.0},
    })
}

#[test]
fn a_class_rule_marks_results_fires_alerts_and_counts_them() {
    let svc = Service::start(&replay("chelsea.png"));
    let labels = top_labels(&svc);
    let r = patch(
        &svc,
        &json!({"outputs": {"alerts": {"rules": rules(&labels)}}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let s = svc.status();
    assert_eq!(
        s["outputs"]["alerts"]["fired"],
        json!({"hit": 0, "miss": 0}),
        "{s}"
    );

    // The stream: each result of the new run names `hit`, and an `alert` event for it
    // follows it.
    let resp = svc
        .agent()
        .get(&svc.url("/api/v1/results/stream"))
        .call()
        .unwrap();
    let mut body = BufReader::new(resp.into_body().into_reader());
    let (mut event, mut line) = (String::new(), String::new());
    let mut results: Vec<Value> = Vec::new();
    let mut alerts: Vec<Value> = Vec::new();
    while alerts.len() < 10 {
        line.clear();
        body.read_line(&mut line).unwrap();
        if let Some(e) = line.strip_prefix("event:") {
            event = e.trim().to_string();
        } else if let Some(data) = line.strip_prefix("data:") {
            let v: Value = serde_json::from_str(data.trim()).unwrap();
            match event.as_str() {
                "result" => results.push(v),
                "alert" => {
                    let last = results.last().expect("an alert follows its result");
                    assert_eq!((&v["run"], &v["seq"]), (&last["run"], &last["seq"]), "{v}");
                    alerts.push(v);
                }
                other => panic!("unexpected event {other}: {v}"),
            }
        }
    }
    // (A result of the run before the change may still be on its way: the new run's.)
    let run = alerts[0]["run"].clone();
    let results: Vec<&Value> = results.iter().filter(|r| r["run"] == run).collect();
    for r in &results {
        assert_eq!(
            r["alerts"],
            json!(["hit"]),
            "every cat frame matches hit: {r}"
        );
    }
    for a in &alerts {
        assert_eq!(a["v"], 1);
        assert_eq!(a["rule"], "hit");
        assert_eq!(a["kind"], "class");
        assert_eq!(a["classes"][0]["label"], labels[0].as_str(), "{a}");
        assert_eq!(a["classes"].as_array().unwrap().len(), 1, "{a}");
    }
    assert_eq!(
        results.len(),
        alerts.len(),
        "one alert per result (miss never fires)"
    );

    // The log holds the same marks.
    let page = wait_for("the run's results in the log", || {
        let p = svc.get_json(&format!("/api/v1/results?after={run}:0&limit=5"));
        (p["results"].as_array().unwrap().len() == 5)
            .then_some(p.clone())
            .ok_or(p.to_string())
    });
    for r in page["results"].as_array().unwrap() {
        assert_eq!(r["alerts"], json!(["hit"]), "{r}");
    }

    // Counted per rule in status and in /metrics.
    let fired = svc.status()["outputs"]["alerts"]["fired"].clone();
    assert!(fired["hit"].as_u64().unwrap() >= 10, "{fired}");
    assert_eq!(fired["miss"], 0, "{fired}");
    let metrics = svc.get("/metrics");
    let samples = parse_prometheus(&metrics.body);
    let hit = samples
        .iter()
        .find(|s| {
            s.name == "fpgagdr_alerts_total"
                && s.labels.get("rule").map(String::as_str) == Some("hit")
        })
        .unwrap_or_else(|| panic!("fpgagdr_alerts_total{{rule=\"hit\"}} in {}", metrics.body));
    assert!(hit.value >= 10.0, "{}", hit.value);
    assert!(
        samples.iter().any(|s| s.name == "fpgagdr_alerts_total"
            && s.labels.get("rule").map(String::as_str) == Some("miss")
            && s.value == 0.0),
        "{}",
        metrics.body
    );

    // Removing a rule with a merge patch leaves the other.
    let r = patch(
        &svc,
        &json!({"outputs": {"alerts": {"rules": {"miss": null}}}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let cfg = svc.get_json("/api/v1/config");
    let names: Vec<&String> = cfg["outputs"]["alerts"]["rules"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(names, ["hit"]);
}

#[test]
fn bad_alert_rules_name_the_rule_broken_and_change_nothing() {
    let svc = Service::start(&replay("chelsea.png"));
    let labels = top_labels(&svc);
    let before = svc.get("/api/v1/config");
    let cases = [
        (
            json!({"bad name": {"kind": "class", "classes": [labels[0]], "min_score": 0.5}}),
            "/outputs/alerts/rules/bad name",
            "alert-name",
        ),
        (
            json!({"x": {"kind": "class", "classes": [labels[0]], "min_score": 1.5}}),
            "/outputs/alerts/rules/x/min_score",
            "range",
        ),
        (
            json!({"x": {"kind": "class", "classes": [], "min_score": 0.5}}),
            "/outputs/alerts/rules/x/classes",
            "alert-classes",
        ),
        (
            json!({"x": {"kind": "class", "classes": [labels[0], labels[0]], "min_score": 0.5}}),
            "/outputs/alerts/rules/x/classes/1",
            "alert-classes",
        ),
    ];
    for (rules, field, rule) in cases {
        let r = patch(&svc, &json!({"outputs": {"alerts": {"rules": rules}}}));
        r.problem(422, "config-range");
        assert!(
            r.field_errors()
                .contains(&(field.to_string(), rule.to_string())),
            "{field} {rule}: {}",
            r.body
        );
    }
    // Condition rules: windows and thresholds in range, sensor names not blank.
    let cases = [
        (
            json!({"x": {"kind": "drop_rate", "window_s": 0, "max_ratio": 0.1}}),
            "/outputs/alerts/rules/x/window_s",
            "range",
        ),
        (
            json!({"x": {"kind": "e2e_p99", "window_s": 601, "max_ms": 5.0}}),
            "/outputs/alerts/rules/x/window_s",
            "range",
        ),
        (
            json!({"x": {"kind": "drop_rate", "window_s": 5, "max_ratio": -0.1}}),
            "/outputs/alerts/rules/x/max_ratio",
            "range",
        ),
        (
            json!({"x": {"kind": "e2e_p99", "window_s": 5, "max_ms": 0.0}}),
            "/outputs/alerts/rules/x/max_ms",
            "range",
        ),
        (
            json!({"x": {"kind": "temperature", "max_c": 500.0}}),
            "/outputs/alerts/rules/x/max_c",
            "range",
        ),
        (
            json!({"x": {"kind": "power", "max_w": -1.0}}),
            "/outputs/alerts/rules/x/max_w",
            "range",
        ),
        (
            json!({"x": {"kind": "temperature", "zone": " ", "max_c": 80.0}}),
            "/outputs/alerts/rules/x/zone",
            "alert-sensor",
        ),
    ];
    for (rules, field, rule) in cases {
        let r = patch(&svc, &json!({"outputs": {"alerts": {"rules": rules}}}));
        r.problem(422, "config-range");
        assert!(
            r.field_errors()
                .contains(&(field.to_string(), rule.to_string())),
            "{field} {rule}: {}",
            r.body
        );
    }
    // A zone or rail this board does not have: only the telemetry can say.
    for (rules, field) in [
        (
            json!({"x": {"kind": "temperature", "zone": "no-such-zone", "max_c": 80.0}}),
            "/outputs/alerts/rules/x/zone",
        ),
        (
            json!({"x": {"kind": "power", "rail": "VDD_NOWHERE", "max_w": 10.0}}),
            "/outputs/alerts/rules/x/rail",
        ),
    ] {
        let r = patch(&svc, &json!({"outputs": {"alerts": {"rules": rules}}}));
        let p = r.problem(422, "config-apply");
        assert!(
            p["detail"].as_str().unwrap().contains("rule alert-sensor"),
            "{p}"
        );
        assert_eq!(r.field_errors(), [(field.to_string(), "apply".to_string())]);
    }
    // An unknown kind, a missing threshold, or a field a kind does not have: the
    // schema's rule.
    for rules in [
        json!({"x": {"kind": "weather", "classes": [labels[0]], "min_score": 0.5}}),
        json!({"x": {"kind": "class", "classes": [labels[0]], "min_score": 0.5, "colour": 1}}),
        json!({"x": {"kind": "e2e_p99", "window_s": 5}}),
        json!({"x": {"kind": "drop_rate", "window_s": 5, "max_ratio": 0.1, "zone": "a"}}),
    ] {
        let r = patch(&svc, &json!({"outputs": {"alerts": {"rules": rules}}}));
        r.problem(422, "config-schema");
    }
    // A class the model does not have: only the model can say; the rule is named.
    let r = patch(
        &svc,
        &json!({"outputs": {"alerts": {"rules": {"x": {"kind": "class", "classes": [labels[0], "unicorn"], "min_score": 0.5}}}}}),
    );
    let p = r.problem(422, "config-apply");
    assert!(
        p["detail"].as_str().unwrap().contains("rule alert-classes"),
        "{p}"
    );
    assert_eq!(
        r.field_errors(),
        [(
            "/outputs/alerts/rules/x/classes/1".to_string(),
            "apply".to_string()
        )]
    );
    // Nothing applied: the same document (and ETag), the pipeline running.
    let after = svc.get("/api/v1/config");
    assert_eq!(after.body, before.body);
    assert_eq!(after.header("etag"), before.header("etag"));
    assert_eq!(svc.status()["pipeline"]["state"], "running");
}

/// `alert-frames` beside the service's config file (no `$STATE_DIRECTORY` in tests).
fn frames_dir(svc: &Service) -> PathBuf {
    svc.config_path.parent().unwrap().join("alert-frames")
}

fn on_disk(svc: &Service) -> (usize, u64) {
    let mut pngs = 0;
    let mut bytes = 0;
    for e in std::fs::read_dir(frames_dir(svc)).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().into_string().unwrap();
        if name.ends_with(".png") {
            pngs += 1;
        }
        bytes += e.metadata().unwrap().len();
    }
    (pngs, bytes)
}

fn keys(list: &Value) -> Vec<(u64, u64)> {
    list["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["run"].as_u64().unwrap(), f["seq"].as_u64().unwrap()))
        .collect()
}

#[test]
fn kept_frames_hold_their_bounds_and_rotate_the_oldest_out() {
    let mut c = replay("chelsea.png");
    c["source"]["fps"] = json!(20);
    let svc = Service::start(&c);
    let labels = top_labels(&svc);
    let r = patch(
        &svc,
        &json!({"outputs": {"alerts": {
            "rules": rules(&labels),
            "keep_frames": {"enabled": true, "max_frames": 3},
        }}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // The first frames kept...
    let first = wait_for("a kept frame", || {
        let l = svc.get_json("/api/v1/alerts/frames");
        (!l["frames"].as_array().unwrap().is_empty())
            .then_some(l.clone())
            .ok_or(l.to_string())
    });
    let oldest = keys(&first)[0];
    // ...are rotated out once more than three were written.
    let list = wait_for("rotation", || {
        let l = svc.get_json("/api/v1/alerts/frames");
        (l["status"]["written"].as_u64().unwrap() >= 8
            && l["status"]["rotated"].as_u64().unwrap() >= 5)
            .then_some(l.clone())
            .ok_or(l.to_string())
    });
    let kept = keys(&list);
    assert!(kept.len() <= 3, "{list}");
    assert!(
        kept.windows(2).all(|w| w[0] < w[1]),
        "oldest first: {kept:?}"
    );
    assert!(
        kept.iter().all(|k| *k > oldest),
        "the oldest went first: {kept:?} vs {oldest:?}"
    );
    for f in list["frames"].as_array().unwrap() {
        assert_eq!(f["rules"], json!(["hit"]), "{f}");
    }
    let (pngs, _) = on_disk(&svc);
    assert!(pngs <= 3, "{pngs} PNG files on disk");
    let gone = svc.get(&format!("/api/v1/alerts/frames/{}/{}", oldest.0, oldest.1));
    gone.problem(404, "no-kept-frame");

    // A kept frame is the whole frame the card moved, pixel for pixel.
    let newest = *kept.last().unwrap();
    let resp = wait_for("a kept frame's PNG", || {
        let r = svc
            .agent()
            .get(&svc.url(&format!("/api/v1/alerts/frames/{}/{}", newest.0, newest.1)))
            .call()
            .map_err(|e| e.to_string())?;
        (r.status() == 200)
            .then_some(r)
            .ok_or("not 200".to_string())
    });
    assert_eq!(resp.headers()["content-type"], "image/png");
    let png = resp.into_body().read_to_vec().unwrap();
    let shown = image::load_from_memory(&png).unwrap().to_rgb8();
    let source = image::open(common::frame("chelsea.png")).unwrap().to_rgb8();
    assert!(shown == source, "the kept frame is the replayed frame");
    svc.get("/api/v1/alerts/frames/x/1").problem(400, "query");

    // The byte bound: 1 MiB holds only a few of these frames; it holds on disk too.
    let r = patch(
        &svc,
        &json!({"outputs": {"alerts": {"keep_frames": {"max_frames": 1000, "max_bytes": 1048576}}}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let written = svc.get_json("/api/v1/alerts/frames")["status"]["written"]
        .as_u64()
        .unwrap();
    let frame_bytes = list["frames"][0]["bytes"].as_u64().unwrap();
    let enough = written + (1 << 20) / frame_bytes + 3;
    let s = wait_for("the byte bound reached", || {
        let l = svc.get_json("/api/v1/alerts/frames");
        (l["status"]["written"].as_u64().unwrap() >= enough)
            .then_some(l["status"].clone())
            .ok_or(l["status"].to_string())
    });
    assert!(s["bytes"].as_u64().unwrap() <= 1 << 20, "{s}");
    assert!(
        s["frames"].as_u64().unwrap() > 3,
        "more than the old count bound: {s}"
    );
    let (_, disk) = on_disk(&svc);
    // The keeper may be writing one more (its temporary file) as we look.
    assert!(disk <= (1 << 20) + 2 * frame_bytes, "{disk} bytes on disk");
    assert_eq!(
        svc.status()["outputs"]["alerts"]["frames"]["max_bytes"],
        1048576
    );
}

/// Waits until `events` holds an alert of `rule` in `state`; returns it.
fn wait_alert(events: &std::sync::Mutex<Vec<Value>>, rule: &str, state: &str) -> Value {
    wait_for(&format!("alert {rule} {state}"), || {
        let e = events.lock().unwrap();
        e.iter()
            .find(|a| a["rule"] == rule && a["state"] == state)
            .cloned()
            .ok_or_else(|| format!("{e:?}"))
    })
}

/// The alerts of `rule` in `events`, as their states in order.
fn states(events: &std::sync::Mutex<Vec<Value>>, rule: &str) -> Vec<String> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter(|a| a["rule"] == rule)
        .map(|a| a["state"].as_str().unwrap_or("?").to_string())
        .collect()
}

fn fired(svc: &Service, rule: &str) -> u64 {
    svc.status()["outputs"]["alerts"]["fired"][rule]
        .as_u64()
        .unwrap_or_else(|| panic!("no count for {rule}: {}", svc.status()))
}

fn alerts_total(svc: &Service, rule: &str) -> f64 {
    let metrics = svc.get("/metrics");
    parse_prometheus(&metrics.body)
        .iter()
        .find(|s| {
            s.name == "fpgagdr_alerts_total"
                && s.labels.get("rule").map(String::as_str) == Some(rule)
        })
        .unwrap_or_else(|| panic!("fpgagdr_alerts_total{{rule={rule:?}}} in {}", metrics.body))
        .value
}

#[test]
fn a_drop_rate_rule_fires_once_while_frames_are_dropped_and_clears_after() {
    // The replay faster than one CPU thread classifies: the ring drops the oldest.
    let mut c = replay("chelsea.png");
    c["source"]["fps"] = json!(1000);
    let svc = Service::start(&c);
    wait_for("frames dropped", || {
        let s = svc.status();
        (s["counters"]["frames_dropped"].as_u64().unwrap_or(0) > 0)
            .then_some(())
            .ok_or(s["counters"].to_string())
    });
    let events = alert_events(&svc);
    let r = patch(
        &svc,
        &json!({"outputs": {"alerts": {"rules": {
            "drops": {"kind": "drop_rate", "window_s": 2, "max_ratio": 0.2},
            "never": {"kind": "drop_rate", "window_s": 2, "max_ratio": 1.0},
        }}}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let a = wait_alert(&events, "drops", "firing");
    assert_eq!(a["v"], 1, "{a}");
    assert_eq!(a["kind"], "drop_rate", "{a}");
    assert_eq!(a["unit"], "ratio", "{a}");
    assert_eq!(a["window_s"], 2, "{a}");
    assert_eq!(a["threshold"], 0.2, "{a}");
    assert!(a["value"].as_f64().unwrap() > 0.2, "{a}");
    assert!(a["card"].as_str().unwrap().contains("simulated"), "{a}");
    assert_eq!(
        svc.status()["outputs"]["alerts"]["firing"],
        json!(["drops"])
    );
    // A sustained condition is one alert: three more windows, still one.
    std::thread::sleep(std::time::Duration::from_secs(6));
    assert_eq!(states(&events, "drops"), ["firing"]);
    assert_eq!(fired(&svc, "drops"), 1);
    assert_eq!(alerts_total(&svc, "drops"), 1.0);
    assert_eq!(fired(&svc, "never"), 0);
    assert!(states(&events, "never").is_empty());

    // A rate the model keeps up with: the window empties of drops, one clear (not
    // counted as a firing).
    let r = patch(&svc, &json!({"source": {"fps": 5}}));
    assert_eq!(r.status, 200, "{}", r.body);
    let a = wait_alert(&events, "drops", "cleared");
    assert!(
        a["value"].as_f64().unwrap() <= a["clear_at"].as_f64().unwrap(),
        "{a}"
    );
    assert_eq!(states(&events, "drops"), ["firing", "cleared"]);
    assert_eq!(fired(&svc, "drops"), 1);
    assert_eq!(svc.status()["outputs"]["alerts"]["firing"], json!([]));
}

#[test]
fn an_e2e_p99_rule_fires_over_a_tiny_threshold_and_not_over_a_huge_one() {
    let svc = Service::start(&replay("chelsea.png"));
    svc.wait_frames_above(0);
    let events = alert_events(&svc);
    let r = patch(
        &svc,
        &json!({"outputs": {"alerts": {"rules": {
            "tiny": {"kind": "e2e_p99", "window_s": 1, "max_ms": 0.001},
            "huge": {"kind": "e2e_p99", "window_s": 1, "max_ms": 60000.0},
        }}}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let a = wait_alert(&events, "tiny", "firing");
    assert_eq!(a["kind"], "e2e_p99", "{a}");
    assert_eq!(a["unit"], "ms", "{a}");
    assert_eq!(a["threshold"], 0.001, "{a}");
    // The model alone takes well over a microsecond.
    let v = a["value"].as_f64().unwrap();
    assert!(v > 0.001, "{a}");
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert_eq!(states(&events, "tiny"), ["firing"], "once per episode");
    assert!(states(&events, "huge").is_empty());
    assert_eq!(fired(&svc, "tiny"), 1);
    assert_eq!(fired(&svc, "huge"), 0);
    assert_eq!(alerts_total(&svc, "huge"), 0.0);
    assert_eq!(svc.status()["outputs"]["alerts"]["firing"], json!(["tiny"]));
}

#[test]
fn temperature_and_power_rules_fire_from_the_fake_sysfs_and_clear() {
    let fake = FakeSysfs::orin_nx();
    let config = serde_json::to_string(&replay("chelsea.png")).unwrap();
    let svc = Service::start_with_args(
        Some(&config),
        &["--sysfs-root", fake.root(), "--telemetry-hz", "20"],
    );
    wait_for("the fake sysfs's zone in the telemetry", || {
        let t = svc.get("/api/v1/telemetry");
        (t.status == 200 && t.json()["zones"][0]["name"] == "cpu-thermal")
            .then_some(())
            .ok_or(t.body)
    });
    let events = alert_events(&svc);
    let r = patch(
        &svc,
        &json!({"outputs": {"alerts": {"rules": {
            "cpu_hot": {"kind": "temperature", "zone": "cpu-thermal", "max_c": 60.0},
            "hottest": {"kind": "temperature", "max_c": 60.0},
            "vdd_in": {"kind": "power", "rail": "VDD_IN", "max_w": 8.0},
            "total": {"kind": "power", "max_w": 8.0},
        }}}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // 51.25 °C and 7.388 W: below both; nothing fires.
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(events.lock().unwrap().is_empty(), "{:?}", events.lock());

    // Hot, and VDD_IN at 2 A (9.984 W): all four fire, with the value measured.
    fake.set_celsius(70.0);
    fake.set_vdd_in_ma(2000);
    for rule in ["cpu_hot", "hottest"] {
        let a = wait_alert(&events, rule, "firing");
        assert_eq!(
            (
                &a["kind"],
                &a["value"],
                &a["threshold"],
                &a["unit"],
                &a["source"]
            ),
            (
                &json!("temperature"),
                &json!(70.0),
                &json!(60.0),
                &json!("C"),
                &json!("cpu-thermal")
            ),
            "{a}"
        );
        assert_eq!(a["clear_at"], 58.0, "{a}");
        assert!(a.get("window_s").is_none(), "{a}");
    }
    for (rule, source) in [("vdd_in", "VDD_IN"), ("total", "total")] {
        let a = wait_alert(&events, rule, "firing");
        assert_eq!(a["kind"], "power", "{a}");
        assert_eq!(a["unit"], "W", "{a}");
        assert_eq!(a["source"], source, "{a}");
        assert!((a["value"].as_f64().unwrap() - 9.984).abs() < 1e-6, "{a}");
    }
    // Still hot, and then inside the hysteresis (59 °C: above 58): no new alert.
    std::thread::sleep(std::time::Duration::from_secs(1));
    fake.set_celsius(59.0);
    std::thread::sleep(std::time::Duration::from_secs(1));
    assert_eq!(states(&events, "cpu_hot"), ["firing"]);
    assert_eq!(fired(&svc, "cpu_hot"), 1);
    let mut firing: Vec<String> =
        serde_json::from_value(svc.status()["outputs"]["alerts"]["firing"].clone()).unwrap();
    firing.sort();
    assert_eq!(firing, ["cpu_hot", "hottest", "total", "vdd_in"]);

    // Cool and back to 1.48 A: each clears once.
    fake.set_celsius(50.0);
    fake.set_vdd_in_ma(1480);
    for rule in ["cpu_hot", "hottest", "vdd_in", "total"] {
        wait_alert(&events, rule, "cleared");
    }
    assert_eq!(svc.status()["outputs"]["alerts"]["firing"], json!([]));
    // A second episode is a second alert.
    fake.set_celsius(75.0);
    wait_for("the second episode", || {
        let s = states(&events, "cpu_hot");
        (s == ["firing", "cleared", "firing"])
            .then_some(())
            .ok_or(format!("{s:?}"))
    });
    assert_eq!(fired(&svc, "cpu_hot"), 2);
    assert_eq!(alerts_total(&svc, "cpu_hot"), 2.0);
    assert_eq!(fired(&svc, "vdd_in"), 1);
}
