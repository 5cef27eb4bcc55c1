//! The `fpgagdr-bench` binary run as a user runs it, on the simulated card: every
//! subcommand's table, JSON, report (Markdown, JSON, SVG) and the soak's CSV, and the
//! consistency of their numbers (GB/s = bytes / mean latency, ratios from the same runs,
//! statistics from the samples, CSV rows = samples). Speed is never asserted.
//!
//! These tests run where CI runs: no GPU, no FPGA. Tests that must see paths B and C as
//! not available pass `--no-gpu`, so they hold on a GPU machine too; the others accept
//! either and check what the document says.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_fpgagdr-bench");

fn bench(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("the binary runs")
}

/// Runs and expects exit status 0; returns stdout.
#[track_caller]
fn ok(args: &[&str]) -> String {
    let out = bench(args);
    let stdout = String::from_utf8(out.stdout).expect("UTF-8");
    assert!(
        out.status.success(),
        "{args:?} exited with {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[track_caller]
fn json(args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.push("--json");
    serde_json::from_str(&ok(&a)).expect("stdout is one JSON document")
}

#[track_caller]
fn close(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0),
        "{what}: {a} != {b}"
    );
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Checks a `latency` summary against its `samples_us` and `gbps` against bytes / mean.
#[track_caller]
fn check_cell(cell: &Value, bytes: u64, iterations: usize) {
    let samples: Vec<f64> = cell["samples_us"]
        .as_array()
        .expect("samples")
        .iter()
        .map(f)
        .collect();
    assert_eq!(samples.len(), iterations, "{cell}");
    let lat = &cell["latency"];
    assert_eq!(lat["n"], iterations);
    let mean = samples.iter().sum::<f64>() / samples.len() as f64;
    close(f(&lat["mean_us"]), mean, "mean = mean of samples");
    close(
        f(&lat["min_us"]),
        samples.iter().copied().fold(f64::INFINITY, f64::min),
        "min",
    );
    close(
        f(&lat["max_us"]),
        samples.iter().copied().fold(0.0, f64::max),
        "max",
    );
    assert!(f(&lat["p99_us"]) <= f(&lat["max_us"]) && f(&lat["p99_us"]) >= f(&lat["min_us"]));
    close(
        f(&cell["gbps"]),
        bytes as f64 / mean / 1e3,
        "GB/s = bytes / mean latency",
    );
}

/// Parses an SVG as XML; returns every text node and the number of polylines.
#[track_caller]
fn svg(path: &Path) -> (Vec<String>, usize) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc = roxmltree::Document::parse(&text)
        .unwrap_or_else(|e| panic!("{} is not XML: {e}", path.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let texts = doc
        .descendants()
        .filter(|n| n.is_text())
        .filter_map(|n| n.text())
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect();
    let lines = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "polyline")
        .count();
    (texts, lines)
}

/// Asserts that the SVG holds exactly the expected series among the candidates.
#[track_caller]
fn svg_series(path: &Path, present: &[&str], absent: &[&str]) {
    let (texts, lines) = svg(path);
    for s in present {
        assert!(
            texts.iter().any(|t| t == s),
            "{}: no series {s:?} in {texts:?}",
            path.display()
        );
    }
    for s in absent {
        assert!(
            !texts.iter().any(|t| t == s),
            "{}: unexpected series {s:?}",
            path.display()
        );
    }
    // One line per series plus its legend sample.
    assert!(
        lines >= present.len(),
        "{}: {lines} polylines",
        path.display()
    );
}

/// The report's JSON file is the document `--json` printed (same result).
#[track_caller]
fn report_matches(dir: &Path, name: &str, doc: &Value) {
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{name}.json"))).unwrap())
            .unwrap();
    assert_eq!(file["result"], doc["result"]);
    assert_eq!(file["subcommand"], name);
    let md = std::fs::read_to_string(dir.join(format!("{name}.md"))).unwrap();
    assert!(md.starts_with(&format!("# fpgagdr-bench {name}")), "{md}");
    assert!(md.contains("SIMULATED CARD"), "{md}");
}

#[test]
fn quick_passes_all_15_checks_on_the_simulated_card() {
    let out = ok(&["quick", "--card", "sim"]);
    assert_eq!(out.matches(" PASS ").count(), 15, "{out}");
    assert!(!out.contains("FAIL"), "{out}");
    assert!(out.contains("15 of 15 checks passed"), "{out}");
    assert!(out.contains("SIMULATED CARD"), "{out}");

    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let doc = json(&[
        "quick",
        "--link",
        "desktop-gen3x8",
        "--report",
        d,
        "--compare",
        "reference",
    ]);
    assert_eq!(doc["passed"], true);
    let checks = doc["result"]["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 15);
    for (i, c) in checks.iter().enumerate() {
        assert_eq!(c["n"], i + 1);
        assert_eq!(c["pass"], true, "{c}");
    }
    assert_eq!(doc["card"]["link"], "x86-gen3x8");
    assert_eq!(doc["card"]["status"]["alignment"], 65536);
    // The 1 MiB read's figures are consistent with each other.
    let v = &checks[2]["values"];
    close(
        f(&v["read_gbps"]),
        (1 << 20) as f64 / f(&v["read_us"]) / 1e3,
        "check 3 GB/s",
    );
    // The desktop reference platform (§4.5.1) is compared, ratio = ours / reference.
    let cmp = &doc["compare"];
    assert_eq!(cmp["platform"], "desktop");
    let pin = cmp["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "pin 1 MiB")
        .unwrap();
    assert_eq!(pin["reference"], 45.0);
    close(f(&pin["ratio"]), f(&pin["ours"]) / 45.0, "pin ratio");
    report_matches(dir.path(), "quick", &doc);
}

#[test]
fn sizes_without_gpu_reports_b_and_c_as_not_available() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let args = [
        "sizes",
        "--no-gpu",
        "--sizes",
        "4K,64K,1M",
        "--iterations",
        "4",
        "--warmup",
        "1",
        "--report",
        d,
        "--compare",
        // The name before the rename, kept as a hidden alias of `reference`.
        "seed",
    ];
    let doc = json(&args);
    assert_eq!(doc["gpu"]["available"], false);
    let r = &doc["result"];
    let cells = r["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 3 * 3 * 2, "sizes × paths × directions");
    for c in cells {
        let bytes = c["size_bytes"].as_u64().unwrap();
        match c["path"].as_str().unwrap() {
            "A" => {
                assert_eq!(c["available"], true);
                check_cell(c, bytes, 4);
            }
            _ => {
                assert_eq!(c["available"], false, "{c}");
                assert!(c["reason"].as_str().unwrap().contains("no GPU"), "{c}");
                assert!(
                    c.get("latency").is_none() && c.get("gbps").is_none(),
                    "never faked: {c}"
                );
            }
        }
    }
    for s in r["speedups"].as_array().unwrap() {
        assert!(s["c_over_a"].is_null() && s["c_over_b"].is_null(), "{s}");
    }
    // --compare reference on the Orin preset: §4.1's figures, ours / reference per cell.
    let cmp = &doc["compare"];
    assert_eq!(cmp["platform"], "orin");
    assert!(
        cmp["platform_name"]
            .as_str()
            .unwrap()
            .contains("Jetson Orin")
    );
    let rows = cmp["rows"].as_array().unwrap();
    let row = |m: &str| {
        rows.iter()
            .find(|r| r["metric"] == m)
            .unwrap_or_else(|| panic!("no row {m}"))
    };
    let a = row("A read 4 KiB mean");
    assert_eq!(a["reference"], 82.6);
    let ours_a = cells
        .iter()
        .find(|c| c["path"] == "A" && c["dir"] == "read" && c["size_bytes"] == 4096)
        .unwrap();
    close(
        f(&a["ours"]),
        f(&ours_a["latency"]["mean_us"]),
        "compare uses the same run",
    );
    close(
        f(&a["ratio"]),
        f(&a["ours"]) / 82.6,
        "ratio = ours / reference",
    );
    let bw = row("A write 1 MiB bandwidth");
    assert_eq!(bw["reference"], 1.82);
    assert!(row("C read 4 KiB mean")["ours"].is_null());
    assert_eq!(row("C read 4 KiB mean")["reference"], 54.4);
    assert!(row("B write 1 MiB mean")["ratio"].is_null());

    report_matches(dir.path(), "sizes", &doc);
    let md = std::fs::read_to_string(dir.path().join("sizes.md")).unwrap();
    assert!(
        md.contains(
            "path B: card → page-locked host memory → GPU (host-to-device copy) — not available: no GPU"
        ),
        "{md}"
    );
    assert!(md.contains("![SIMULATED card — Mean latency vs transfer size](sizes-latency.svg)"));
    assert!(md.contains("| A read 4 KiB mean | µs |"), "{md}");
    let series = ["A read", "A write"];
    let missing = ["B read", "B write", "C read", "C write"];
    svg_series(&dir.path().join("sizes-latency.svg"), &series, &missing);
    svg_series(&dir.path().join("sizes-bandwidth.svg"), &series, &missing);

    // The table says the same.
    let table = ok(&args[..8]);
    assert!(
        table.contains("GPU: none — paths B and C not available"),
        "{table}"
    );
    // Rows are "<n> <unit> <path> <dir> <figures…>".
    let na_rows = |path: &str| {
        table
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|t| t.len() == 12 && t[2] == path && t[3..].iter().skip(1).all(|c| *c == "n/a"))
            .count()
    };
    let (b_rows, c_rows) = (na_rows("B"), na_rows("C"));
    assert_eq!((b_rows, c_rows), (6, 6), "{table}");
    assert!(table.contains("path C: card → pinned GPU memory (GPUDirect) — not available: no GPU"));
}

#[test]
fn sizes_speedups_come_from_the_same_cells() {
    // Without --no-gpu: on a GPU machine B and C run, and the speed-ups must be the
    // ratios of the cells' means; without one they are null.
    let doc = json(&[
        "sizes",
        "--link",
        "off",
        "--sizes",
        "4K,1M",
        "--iterations",
        "3",
        "--warmup",
        "0",
    ]);
    let r = &doc["result"];
    let gpu = doc["gpu"]["available"].as_bool().unwrap();
    let mean = |p: &str, dir: &str, size: u64| {
        r["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["path"] == p && c["dir"] == dir && c["size_bytes"] == size)
            .and_then(|c| c["latency"]["mean_us"].as_f64())
    };
    for s in r["speedups"].as_array().unwrap() {
        let (dir, size) = (
            s["dir"].as_str().unwrap(),
            s["size_bytes"].as_u64().unwrap(),
        );
        if gpu {
            let c = mean("C", dir, size).unwrap();
            close(f(&s["c_over_a"]), mean("A", dir, size).unwrap() / c, "C/A");
            close(f(&s["c_over_b"]), mean("B", dir, size).unwrap() / c, "C/B");
        } else {
            assert!(s["c_over_a"].is_null() && mean("C", dir, size).is_none());
        }
    }
    for c in r["cells"].as_array().unwrap() {
        if c["available"] == true {
            check_cell(c, c["size_bytes"].as_u64().unwrap(), 3);
        }
    }
}

#[test]
fn compat_without_gpu_has_cpu_mode_only() {
    let doc = json(&[
        "compat",
        "--no-gpu",
        "--sizes",
        "4K,256K",
        "--iterations",
        "3",
        "--compare",
        "reference",
    ]);
    let r = &doc["result"];
    for c in r["cells"].as_array().unwrap() {
        match c["mode"].as_str().unwrap() {
            "cpu" => check_cell(c, c["size_bytes"].as_u64().unwrap(), 3),
            "gpu_pinned" => assert_eq!(c["available"], false),
            m => panic!("mode {m}"),
        }
    }
    assert!(
        r["speedups"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["speedup"].is_null())
    );
    // §4.2 prints Write / Read: the 256 KB CPU write is 198.2 µs.
    let rows = doc["compare"]["rows"].as_array().unwrap();
    assert!(
        rows.iter()
            .any(|x| x["metric"] == "CPU write 256 KiB" && x["reference"] == 198.2)
    );
}

#[test]
fn multibuf_ratio_and_rates_come_from_the_same_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let doc = json(&[
        "multibuf",
        "--iterations",
        "20",
        "--warmup",
        "2",
        "--report",
        d,
    ]);
    let r = &doc["result"];
    let frame = r["frame_bytes"].as_u64().unwrap();
    assert_eq!(frame, 1 << 20);
    assert_eq!(r["multi"]["buffers"], 4);
    assert_eq!(r["single"]["buffers"], 1);
    // Nearest-rank median, computed here from the samples the document carries.
    let median = |v: &[f64]| {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        s[(s.len() as f64 * 0.5).ceil() as usize - 1]
    };
    let samples = |run: &serde_json::Value| -> Vec<f64> {
        run["samples_us"]
            .as_array()
            .unwrap()
            .iter()
            .map(f)
            .collect()
    };
    for run in [&r["multi"], &r["single"]] {
        check_cell(run, frame, 20);
        close(
            f(&run["fps"]),
            1e6 / median(&samples(run)),
            "frames/s = 10^6 / median",
        );
    }
    // The ratio is the median of the per-pair ratios of the interleaved runs (single
    // latency ÷ ring latency = ring frames/s ÷ single frames/s), with an interval
    // around it and a verdict.
    let (single, ring) = (samples(&r["single"]), samples(&r["multi"]));
    let pairs: Vec<f64> = single.iter().zip(&ring).map(|(s, m)| s / m).collect();
    let ratio = &r["ratio"];
    close(f(&ratio["median"]), median(&pairs), "ratio");
    assert_eq!(ratio["pairs"], 20);
    assert!(
        f(&ratio["ci_low"]) <= f(&ratio["median"]) && f(&ratio["median"]) <= f(&ratio["ci_high"])
    );
    let verdict = ratio["verdict"].as_str().unwrap();
    assert!(["steady", "noisy"].contains(&verdict), "{verdict}");
    let gpu = doc["gpu"]["available"].as_bool().unwrap();
    assert_eq!(r["memory"]["path"], if gpu { "C" } else { "pinned-host" });
    report_matches(dir.path(), "multibuf", &doc);
    svg_series(
        &dir.path().join("multibuf-latency.svg"),
        &["ring of 4", "single buffer"],
        &[],
    );
    let table = ok(&["multibuf", "--iterations", "10", "--warmup", "0"]);
    assert!(table.contains("ratio (ring ÷ single frames/s)"), "{table}");
}

#[test]
fn sweep_covers_the_card_and_judges_it_on_the_per_address_medians() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let doc = json(&[
        "sweep",
        "--link",
        "off",
        "--size",
        "1M",
        "--step",
        "256M",
        "--iterations",
        "2",
        "--report",
        d,
    ]);
    let r = &doc["result"];
    let points = r["points"].as_array().unwrap();
    assert_eq!(points.len(), 8, "0 … 1792 MiB in 256 MiB steps");
    assert_eq!(points[7]["card_addr"], 7u64 * 256 * 1024 * 1024);
    for dir_name in ["read", "write"] {
        let means: Vec<f64> = points.iter().map(|p| f(&p[dir_name]["mean_us"])).collect();
        let m = means.iter().sum::<f64>() / 8.0;
        let sd = (means.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 8.0).sqrt();
        let s = &r[dir_name];
        close(f(&s["mean_us"]), m, "mean of means");
        close(f(&s["std_us"]), sd, "std dev of means");
        close(f(&s["gbps"]), (1 << 20) as f64 / m / 1e3, "GB/s");
        let key = format!("{dir_name}_robust");
        let medians: Vec<f64> = points.iter().map(|p| f(&p[&key]["p50"])).collect();
        close(
            f(&s["max_us"]),
            medians.iter().copied().fold(0.0, f64::max),
            "highest median",
        );
        let mm = medians.iter().sum::<f64>() / 8.0;
        let msd = (medians.iter().map(|x| (x - mm).powi(2)).sum::<f64>() / 8.0).sqrt();
        close(f(&s["median_std_us"]), msd, "std dev of medians");
        close(
            f(&s["min_us"]),
            medians.iter().copied().fold(f64::INFINITY, f64::min),
            "lowest median",
        );
        // The noise pools every transfer of every address: 8 x 2.
        assert_eq!(s["noise"]["n"], 16, "{s}");
        let verdict = s["noise"]["verdict"].as_str().unwrap();
        assert!(["steady", "noisy"].contains(&verdict), "{verdict}");
        if verdict == "noisy" {
            assert!(s["hot_spot"].is_null(), "a hot spot named from noise: {s}");
        }
    }
    let md = std::fs::read_to_string(dir.path().join("sweep.md")).unwrap();
    assert!(
        md.contains("hot spot") && md.contains("noise p10–p90"),
        "{md}"
    );
    report_matches(dir.path(), "sweep", &doc);
    svg_series(
        &dir.path().join("sweep-latency.svg"),
        &["read median", "write median"],
        &[],
    );
}

/// An INA3221 under the hwmon driver, as L4T R35+ shows it: VDD_IN 5 V × 3.6 A = 18 W.
fn ina3221_fixture(root: &Path) {
    let h = root.join("sys/bus/i2c/drivers/ina3221/1-0040/hwmon/hwmon3");
    std::fs::create_dir_all(&h).unwrap();
    for (name, value) in [
        ("in1_label", "VDD_IN"),
        ("in1_input", "5000"),
        ("curr1_input", "3600"),
        ("in2_label", "VDD_CPU_GPU_CV"),
        ("in2_input", "5000"),
        ("curr2_input", "1000"),
        ("in3_label", "NC"),
    ] {
        std::fs::write(h.join(name), format!("{value}\n")).unwrap();
    }
}

#[test]
fn soak_writes_one_csv_row_per_sample_with_power_and_a_consistent_summary() {
    let dir = tempfile::tempdir().unwrap();
    let sysfs = tempfile::tempdir().unwrap();
    ina3221_fixture(sysfs.path());
    let d = dir.path().to_str().unwrap();
    let doc = json(&[
        "soak",
        "--no-gpu",
        "--duration",
        "3s",
        "--every",
        "500ms",
        "--size",
        "1M",
        "--iterations",
        "2",
        "--sysfs-root",
        sysfs.path().to_str().unwrap(),
        "--report",
        d,
    ]);
    let r = &doc["result"];
    let samples = r["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 6, "⌈3 s / 500 ms⌉ samples");

    // The CSV: header = documented columns, one row per sample, same figures.
    let csv_path = dir.path().join("soak.csv");
    assert_eq!(r["csv"], csv_path.to_str().unwrap());
    let mut rd = csv::Reader::from_path(&csv_path).unwrap();
    let header: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    let cols: Vec<String> = r["csv_columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().into())
        .collect();
    assert_eq!(header, cols);
    for c in [
        "sample",
        "t_s",
        "card_addr",
        "a_read_mean_us",
        "c_write_gbps",
        "errors",
        "power_board_w",
        "power_VDD_IN_w",
        "power_VDD_CPU_GPU_CV_w",
        "card",
        "simulated",
        "link",
        "software",
    ] {
        assert!(header.iter().any(|h| h == c), "no column {c}: {header:?}");
    }
    let rows: Vec<csv::StringRecord> = rd.records().map(|x| x.unwrap()).collect();
    assert_eq!(rows.len(), samples.len(), "CSV rows = samples");
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    // Every row says what was measured: the card, SIMULATED, the link, the tool.
    for row in &rows {
        assert!(row[col("card")].starts_with("SimCard"), "{row:?}");
        assert_eq!(&row[col("simulated")], "SIMULATED");
        assert!(row[col("link")].contains("Gen3 (8 GT/s) x4"), "{row:?}");
        assert!(
            row[col("software")].starts_with("fpgagdr-bench "),
            "{row:?}"
        );
    }
    // Six samples are too few for a drift: none is reported, and the reason is.
    for t in r["trends"].as_array().unwrap() {
        assert!(t["drift_pct"].is_null(), "{t}");
        assert!(
            t["drift_note"].as_str().unwrap().contains("not computed"),
            "{t}"
        );
    }
    for (row, s) in rows.iter().zip(samples) {
        assert_eq!(row[col("sample")], s["sample"].to_string());
        assert_eq!(row[col("card_addr")], s["card_addr"].to_string());
        let a = s["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["path"] == "A" && c["dir"] == "read")
            .unwrap();
        let csv_mean: f64 = row[col("a_read_mean_us")].parse().unwrap();
        assert!((csv_mean - f(&a["mean_us"])).abs() < 0.001);
        close(
            f(&a["gbps"]),
            (1 << 20) as f64 / f(&a["mean_us"]) / 1e3,
            "sample GB/s",
        );
        assert_eq!(
            &row[col("c_read_mean_us")],
            "",
            "path C not available: empty, not faked"
        );
        assert_eq!(&row[col("power_board_w")], "18.000");
        assert_eq!(&row[col("power_VDD_CPU_GPU_CV_w")], "5.000");
    }
    // Successive samples walk the card in 64 MiB steps.
    assert_eq!(samples[1]["card_addr"], 64u64 << 20);

    // The summary is the statistics of the sample means.
    let means: Vec<f64> = samples
        .iter()
        .map(|s| {
            f(&s["cells"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["path"] == "A" && c["dir"] == "read")
                .unwrap()["mean_us"])
        })
        .collect();
    let t = r["trends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["path"] == "A" && t["dir"] == "read")
        .unwrap();
    let m = means.iter().sum::<f64>() / 6.0;
    close(f(&t["mean_us"]), m, "trend mean");
    close(
        f(&t["thirds_us"][0]),
        (means[0] + means[1]) / 2.0,
        "first third",
    );
    close(
        f(&t["thirds_us"][2]),
        (means[4] + means[5]) / 2.0,
        "last third",
    );
    let (lo, hi) = (
        means.iter().copied().fold(f64::INFINITY, f64::min),
        means.iter().copied().fold(0.0, f64::max),
    );
    close(f(&t["jitter_us"]), hi - lo, "jitter = max - min");
    let mut sorted = means.clone();
    sorted.sort_by(f64::total_cmp);
    close(
        f(&t["robust"]["p50"]),
        sorted[2],
        "median (nearest rank) of 6",
    );
    assert_eq!(t["robust"]["verdict"], "too_few", "6 samples: {t}");
    close(f(&t["relative_pct"]), (hi - lo) / (2.0 * m) * 100.0, "± %");
    assert!(
        r["trends"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["path"] == "A"),
        "only path A ran"
    );
    let p = &r["power"];
    close(f(&p["mean_w"]), 18.0, "board power = VDD_IN");
    assert_eq!(p["samples"], 6);

    report_matches(dir.path(), "soak", &doc);
    let files: Vec<&str> = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert!(files.iter().any(|x| x.ends_with("soak.csv")));
    svg_series(
        &dir.path().join("soak-latency.svg"),
        &["A read", "A write"],
        &["C read", "B read"],
    );
    svg_series(
        &dir.path().join("soak-power.svg"),
        &["board total", "VDD_IN", "VDD_CPU_GPU_CV"],
        &[],
    );
}

#[test]
fn soak_without_ina3221_has_empty_power_and_no_power_plot() {
    let dir = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let csv_path = dir.path().join("run.csv");
    let out = ok(&[
        "soak",
        "--link",
        "off",
        "--duration",
        "1s",
        "--every",
        "250ms",
        "--size",
        "64K",
        "--iterations",
        "1",
        "--sysfs-root",
        empty.path().to_str().unwrap(),
        "--csv",
        csv_path.to_str().unwrap(),
        "--report",
        dir.path().to_str().unwrap(),
    ]);
    assert!(out.contains("no INA3221 power"), "{out}");
    assert!(out.contains("4 rows, one per sample"), "{out}");
    let mut rd = csv::Reader::from_path(&csv_path).unwrap();
    let pcol = rd
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "power_board_w")
        .unwrap();
    let rows: Vec<csv::StringRecord> = rd.records().map(|x| x.unwrap()).collect();
    assert_eq!(rows.len(), 4);
    assert!(rows.iter().all(|r| r[pcol].is_empty()));
    assert!(dir.path().join("soak-latency.svg").exists());
    assert!(!dir.path().join("soak-power.svg").exists());
    assert!(
        !dir.path().join("soak.csv").exists(),
        "--csv names the file"
    );
}

#[test]
fn argument_and_card_errors_are_named() {
    let out = bench(&["quick", "--card", "/dev/fpgagdr4242"]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/dev/fpgagdr4242") && err.contains("card-present"),
        "{err}"
    );

    let out = bench(&["quick", "--card", "/dev/fpgagdr4242", "--link", "off"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--link applies to the simulated card only")
    );

    let out = bench(&["sizes", "--sizes", "4X"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown unit"));
}

#[test]
fn capture_fills_a_k_by_n_ring_and_builds_each_chain_once() {
    let doc = json(&[
        "--link", "off", "capture", "--frames", "120", "--width", "64", "--height", "48",
    ]);
    let r = &doc["result"];
    assert_eq!(r["frames"], 120, "{r}");
    assert_eq!(
        (&r["slots"], &r["ring_entries"]),
        (&json!(4), &json!(8)),
        "{r}"
    );
    assert_eq!(r["missed"], 0, "{r}");
    assert_eq!((&r["torn"], &r["unchecked"]), (&json!(0), &json!(0)), "{r}");
    // The simulated sensor's 4 slots x k = 2: each of the 8 entries builds its chain on
    // the first lap, every later frame replays it.
    assert_eq!(
        (&r["chain_cache"]["misses"], &r["chain_cache"]["hits"]),
        (&json!(8), &json!(112)),
        "{r}"
    );
    let lat = &r["irq_to_dma_done"];
    assert!(f(&lat["p50_us"]) >= f(&r["dma"]["p50_us"]), "{r}");
    assert!(f(&r["fps"]) > 0.0, "{r}");
}

#[test]
fn capture_counts_the_frames_the_card_tore_during_their_c2h() {
    // The simulated card's test fault: every fifth C2H is torn (the slot rewritten
    // during the copy); the frame read's check says so and capture counts each.
    let doc = json(&[
        "--link",
        "off",
        "capture",
        "--frames",
        "40",
        "--width",
        "64",
        "--height",
        "48",
        "--sim-torn-every",
        "5",
    ]);
    let r = &doc["result"];
    assert_eq!(r["frames"], 40, "{r}");
    assert_eq!((&r["torn"], &r["unchecked"]), (&json!(8), &json!(0)), "{r}");
}

#[test]
fn json_into_a_closed_pipe_ends_cleanly() {
    // `fpgagdr-bench --json sizes … | head -1`: the reader goes away after one line of a
    // document larger than a pipe's buffer; the tool must not panic on EPIPE.
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut child = Command::new(BIN)
        .args([
            "--json",
            "--link",
            "off",
            "sizes",
            "--sizes",
            "4K",
            "--iterations",
            "20000",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "{\n");
    // The reader is dropped here: the pipe is closed under the writer.
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

#[test]
fn the_link_and_its_share_are_in_every_document() {
    let doc = json(&["sizes", "--sizes", "1M", "--iterations", "12", "--no-gpu"]);
    let pcie = &doc["card"]["pcie"];
    // The Orin preset states Gen3 x4, MPS 256, MRRS 512, marked simulated.
    assert_eq!(pcie["reported"]["gen_current"], 3);
    assert_eq!(pcie["reported"]["width_current"], 4);
    assert_eq!(pcie["reported"]["simulated"], true);
    let summary = pcie["summary"].as_str().unwrap();
    assert!(
        summary.contains("Gen3 (8 GT/s) x4") && summary.ends_with("[SIMULATED]"),
        "{summary}"
    );
    // 8 GT/s × 4 × 128/130 / 8 × 256 / (256 + 24 + 4)
    let limit = 8.0 * 4.0 * 128.0 / 130.0 / 8.0 * 256.0 / 284.0;
    close(f(&pcie["c2h_limit_gbps"]), limit, "C2H limit");
    for c in doc["result"]["cells"].as_array().unwrap() {
        if c["available"] == true {
            let want = f(&c["gbps"])
                / f(&pcie[if c["dir"] == "read" {
                    "c2h_limit_gbps"
                } else {
                    "h2c_limit_gbps"
                }])
                * 100.0;
            close(f(&c["link_share_pct"]), want, "share of the link");
        }
    }
    // No link model: no link stated, no share.
    let off = json(&[
        "sizes",
        "--sizes",
        "4K",
        "--iterations",
        "12",
        "--no-gpu",
        "--link",
        "off",
    ]);
    assert!(off["card"]["pcie"]["reported"].is_null());
    assert!(off["result"]["cells"][0]["link_share_pct"].is_null());
    let table = ok(&["quick"]);
    assert!(
        table.contains("link: Gen3 (8 GT/s) x4, MPS 256 B, MRRS 512 B"),
        "{table}"
    );
    // The presets model no path above the card: its own link is the limit.
    assert_eq!(pcie["reported"]["gen_path"], 0);
    assert_eq!(pcie["limit_from"], "card");
    assert!(table.contains("\npath: not reported"), "{table}");
    assert!(
        table
            .contains("\nlimit: C2H 3.55 GB/s, H2C 3.60 GB/s of payload, from the card's own link"),
        "{table}"
    );
}

#[test]
fn reports_of_the_simulated_card_say_so_in_titles_and_ticks_read_as_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    ok(&[
        "multibuf",
        "--iterations",
        "12",
        "--warmup",
        "0",
        "--report",
        d,
    ]);
    let (texts, _) = svg(&dir.path().join("multibuf-latency.svg"));
    assert!(
        texts.iter().any(|t| t.starts_with("SIMULATED card — ")),
        "{texts:?}"
    );
    // x ticks are iterations: "0", "2", … never "0.0"
    assert!(!texts.iter().any(|t| t.ends_with(".0")), "{texts:?}");
    let md = std::fs::read_to_string(dir.path().join("multibuf.md")).unwrap();
    assert!(
        md.starts_with("# fpgagdr-bench multibuf — SIMULATED"),
        "{md}"
    );
}

#[test]
fn ctrl_c_ends_a_run_cleanly_with_what_was_measured() {
    use std::process::Stdio;
    let child = Command::new(BIN)
        .args(["--json", "--link", "off", "multibuf", "--frame", "64K"])
        .args(["--iterations", "100000000", "--warmup", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    std::thread::sleep(std::time::Duration::from_secs(3));
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("the document is written");
    let r = &doc["result"];
    assert_eq!(r["interrupted"], true, "{r}");
    let pairs = r["iterations"].as_u64().unwrap();
    assert!(pairs < 100_000_000, "{pairs}");
    assert_eq!(
        r["single"]["samples_us"].as_array().map_or(0, Vec::len) as u64,
        pairs
    );
}

#[test]
fn quick_json_and_soak_off_a_terminal_print_no_bar() {
    // stderr is a pipe here: no bar, and soak no longer prints a line per sample.
    for args in [
        &["--json", "quick"][..],
        &["soak", "--no-gpu", "--size", "64K", "--iterations", "2"],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut a = args.to_vec();
        if a[0] == "soak" {
            a.extend(["--duration", "1s", "--every", "500ms", "--report"]);
            a.push(dir.path().to_str().unwrap());
        }
        let out = bench(&a);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{a:?}: {stderr}");
        assert!(
            !stderr.contains("=>") && !stderr.contains("left)"),
            "{stderr}"
        );
        assert!(!stderr.contains("sample 1/"), "{stderr}");
    }
}

#[test]
fn ctrl_c_ends_a_soak_in_the_wait_between_samples() {
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(BIN)
        .args([
            "--json", "--link", "off", "soak", "--no-gpu", "--size", "64K",
        ])
        .args(["--iterations", "2", "--duration", "10m", "--every", "5m"])
        .args(["--report", dir.path().to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    std::thread::sleep(std::time::Duration::from_secs(3));
    let t0 = std::time::Instant::now();
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // Not a speed assertion: without the fix the wait is the rest of the 5 min period.
    assert!(
        t0.elapsed().as_secs() < 120,
        "Ctrl-C waited for the next sample"
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("the document is written");
    let r = &doc["result"];
    assert_eq!(r["interrupted"], true, "{r}");
    assert_eq!(r["samples"].as_array().map(Vec::len), Some(1), "{r}");
}
