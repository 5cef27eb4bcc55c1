//! Telemetry through the running service: an Orin NX fixture sysfs tree behind
//! `--sysfs-root`, read at 20 Hz while real frames flow; the REST view, the history, the
//! energy per frame and the Prometheus series are checked against the fixture's values.

mod common;

use std::path::Path;

use common::{Service, parse_prometheus, promtool_clean, replay, wait_for};
use serde_json::Value;

fn put(root: &Path, rel: &str, value: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, format!("{value}\n")).unwrap();
}

const HWMON: &str = "sys/bus/i2c/drivers/ina3221/1-0040/hwmon/hwmon2";

/// Orin NX / Orin Nano: one INA3221 with the input rail on channel 1 (values on the
/// chip's 8 mV / 8 mA steps), a readable and an unreadable thermal zone.
fn orin_nx(root: &Path) {
    for (n, (label, mv, ma)) in [
        ("VDD_IN", 4992, 1480),
        ("VDD_CPU_GPU_CV", 4992, 384),
        ("VDD_SOC", 4992, 400),
    ]
    .into_iter()
    .enumerate()
    {
        let n = n + 1;
        put(root, &format!("{HWMON}/in{n}_label"), label);
        put(root, &format!("{HWMON}/in{n}_input"), &mv.to_string());
        put(root, &format!("{HWMON}/curr{n}_input"), &ma.to_string());
    }
    put(root, "sys/class/thermal/thermal_zone0/type", "cpu-thermal");
    put(root, "sys/class/thermal/thermal_zone0/temp", "51250");
    put(root, "sys/class/thermal/thermal_zone1/type", "tj-thermal");
}

/// The rails' names in a telemetry sample, in its order.
fn rail_names(t: &Value) -> Vec<&str> {
    t["rails"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect()
}

#[test]
fn rails_total_energy_per_frame_history_and_metrics() {
    let dir = tempfile::tempdir().unwrap();
    orin_nx(dir.path());
    let root = dir.path().to_str().unwrap();
    let config = serde_json::to_string(&replay("chelsea.png")).unwrap();
    let svc = Service::start_with_args(
        Some(&config),
        &["--sysfs-root", root, "--telemetry-hz", "20"],
    );
    svc.wait_frames_above(0);
    let t = wait_for("a telemetry sample with energy per frame", || {
        let r = svc.get("/api/v1/telemetry");
        let v: Value = if r.status == 200 {
            r.json()
        } else {
            Value::Null
        };
        if v["energy_per_frame_mj"].is_number() {
            Ok(v)
        } else {
            Err(r.body)
        }
    });
    let rails = rail_names(&t);
    assert_eq!(rails, ["VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC"], "{t}");
    let watts = 4992.0 * 1480.0 / 1e6; // VDD_IN is the total, not the sum
    assert_eq!(t["power"]["source"], "ina3221", "{t}");
    assert!(
        (t["power"]["watts"].as_f64().unwrap() - watts).abs() < 1e-9,
        "{t}"
    );
    assert_eq!(t["board_total"]["rule"], "input_rail", "{t}");
    let fps = t["fps"].as_f64().unwrap();
    let mj = t["energy_per_frame_mj"].as_f64().unwrap();
    assert!(fps > 0.0, "{t}");
    assert!(
        (mj * fps - watts * 1000.0).abs() < 1e-6 * watts * 1000.0,
        "{t}"
    );
    assert!(
        (t["frames_per_joule"].as_f64().unwrap() - fps / watts).abs() < 1e-9,
        "{t}"
    );
    // The unreadable zone is absent, not zero; the source says which.
    assert_eq!(t["zones"].as_array().unwrap().len(), 1, "{t}");
    assert_eq!(t["zones"][0]["celsius"], 51.25, "{t}");
    let sources = t["sources"].as_array().unwrap();
    let state = |name: &str| {
        sources
            .iter()
            .find(|s| s["name"] == name)
            .map(|s| s["state"].as_str().unwrap().to_string())
    };
    assert_eq!(state("ina3221").as_deref(), Some("ok"));
    assert_eq!(state("thermal").as_deref(), Some("error"));
    assert_eq!(state("rapl").as_deref(), Some("absent"));

    // A reading changes under a running sampler.
    put(dir.path(), &format!("{HWMON}/curr1_input"), "2000");
    wait_for("the new VDD_IN current", || {
        let v: Value = svc.get("/api/v1/telemetry").json();
        if v["rails"][0]["current_ma"] == 2000.0 {
            Ok(())
        } else {
            Err(v.to_string())
        }
    });

    let h: Value = wait_for("ten history points", || {
        let v: Value = svc.get("/api/v1/telemetry/history?span=60s").json();
        if v["points"].as_array().is_some_and(|p| p.len() >= 10) {
            Ok(v)
        } else {
            Err(v.to_string())
        }
    });
    // The history is the frame board's: each telemetry sample its snapshots carried, at
    // most one per 100 ms snapshot, so sampling at 20 Hz charts at 10 points a second.
    assert_eq!(h["period_s"], 0.1, "{h}");
    assert_eq!(h["rails"][0], "VDD_IN", "{h}");
    let points = h["points"].as_array().unwrap();
    let ts: Vec<f64> = points.iter().map(|p| p["t"].as_f64().unwrap()).collect();
    assert!(ts.windows(2).all(|w| w[0] < w[1]), "points in time order");
    let coarse: Value = wait_for("a 1 s history point", || {
        let v: Value = svc.get("/api/v1/telemetry/history?span=1h").json();
        if v["points"].as_array().is_some_and(|p| !p.is_empty()) {
            Ok(v)
        } else {
            Err(v.to_string())
        }
    });
    assert_eq!(coarse["period_s"], 1.0, "{coarse}");
    let bad = svc.get("/api/v1/telemetry/history?span=2d");
    bad.problem(400, "history-span");

    let metrics = parse_prometheus(&svc.get("/metrics").body);
    let gauge = |name: &str, label: Option<(&str, &str)>| {
        metrics
            .iter()
            .find(|s| {
                s.name == name
                    && label.is_none_or(|(k, v)| s.labels.get(k).map(String::as_str) == Some(v))
            })
            .map(|s| s.value)
    };
    // Base units (watts, volts, amperes).
    let near = |v: Option<f64>, want: f64| v.is_some_and(|v| (v - want).abs() < 1e-9);
    let w = gauge("fpgagdr_rail_power_watts", Some(("rail", "VDD_SOC")));
    assert!(near(w, 4.992 * 0.4), "{w:?}");
    let v = gauge("fpgagdr_rail_voltage_volts", Some(("chip", "1-0040")));
    assert!(near(v, 4.992), "{v:?}");
    // The milli-unit names of the release before, kept one more release.
    assert!(
        gauge("fpgagdr_rail_power_milliwatts", Some(("rail", "VDD_SOC")))
            == Some(4992.0 * 400.0 / 1000.0)
    );
    assert_eq!(
        gauge("fpgagdr_rail_voltage_millivolts", Some(("chip", "1-0040"))),
        Some(4992.0)
    );
    assert_eq!(
        gauge(
            "fpgagdr_thermal_zone_celsius",
            Some(("zone", "cpu-thermal"))
        ),
        Some(51.25)
    );
    assert!(gauge("fpgagdr_power_watts", Some(("source", "ina3221"))).is_some());
    assert!(gauge("fpgagdr_energy_per_frame_joules", None).is_some());
    // No RAPL and no NVML in the fixture: those series are absent, not zero.
    assert_eq!(gauge("fpgagdr_cpu_package_power_watts", None), None);
    assert_eq!(gauge("fpgagdr_gpu_power_watts", None), None);
    promtool_clean(&svc.get("/metrics").body);
}

/// Jetson AGX Thor developer kit (the telemetry crate's fixture tree, written, not run
/// on a Thor): the carrier board's INA238 `VIN` is the total in the telemetry and in
/// `/metrics`, in base units, beside the module's INA3221 rails; promtool finds the
/// families clean.
#[test]
fn thor_vin_from_the_ina238_in_telemetry_and_metrics() {
    let thor = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fpgagdr-telemetry/tests/fixtures/jetson-agx-thor");
    let config = serde_json::to_string(&replay("chelsea.png")).unwrap();
    let svc = Service::start_with_args(
        Some(&config),
        &[
            "--sysfs-root",
            thor.to_str().unwrap(),
            "--telemetry-hz",
            "20",
        ],
    );
    let t = wait_for("a telemetry sample", || {
        let r = svc.get("/api/v1/telemetry");
        if r.status == 200 {
            Ok(r.json())
        } else {
            Err(r.body)
        }
    });
    let rails = rail_names(&t);
    assert_eq!(
        rails,
        ["VIN", "VDD_GPU", "VDD_CPU_SOC_MSS", "VIN_SYS_5V0"],
        "{t}"
    );
    assert_eq!(t["rails"][0]["driver"], "ina238", "{t}");
    assert_eq!(t["power"]["source"], "ina238", "{t}");
    assert_eq!(
        t["power"]["watts"], 23.0,
        "VIN alone, not VIN + its parts: {t}"
    );
    assert_eq!(t["board_total"]["rule"], "board_input", "{t}");
    let metrics = parse_prometheus(&svc.get("/metrics").body);
    let value = |name: &str, k: &str, v: &str| {
        metrics
            .iter()
            .find(|s| s.name == name && s.labels.get(k).map(String::as_str) == Some(v))
            .map(|s| s.value)
    };
    assert_eq!(value("fpgagdr_rail_power_watts", "rail", "VIN"), Some(23.0));
    assert_eq!(
        value("fpgagdr_rail_voltage_volts", "chip", "2-0044"),
        Some(20.0)
    );
    assert_eq!(
        value("fpgagdr_rail_current_amperes", "rail", "VIN"),
        Some(1.15)
    );
    assert_eq!(value("fpgagdr_power_watts", "source", "ina238"), Some(23.0));
    promtool_clean(&svc.get("/metrics").body);
}
