//! `fpgagdr-bench` against the real kernel module: run inside the QEMU guest by
//! `kmod/qemu/run.sh` (plain pass, the module with its TEST-ONLY software card and test
//! sensor), with `FPGAGDR_DEVICE` naming the control node and the tool itself copied to
//! the guest's `/bin` (`FPGAGDR_QEMU_TOOLS`). Elsewhere each test prints why it is
//! skipped and passes.
//!
//! What it shows: the subcommands a user runs (`quick`, `sizes`, `multibuf`, `capture`)
//! work through the kernel back-end; the card is reported as the module's test engine
//! (simulated: no hardware), the link as the module reports it (QEMU's `edu` is
//! conventional PCI: its own link "not reported"; the path's link is the root port's,
//! which `run.sh` sets and names in `FPGAGDR_EXPECT_PATH=GTS:LANES`, and every GB/s is a
//! share of that link's limit); `--json | head -1` ends cleanly.

use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// The tests share the card (quick counts pins and checks every channel), so they take
/// turns.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The control node and the tool, or `None` after printing why the test is skipped.
fn target() -> Option<(String, String)> {
    let Some(dev) = std::env::var_os("FPGAGDR_DEVICE") else {
        eprintln!(
            "skipped: FPGAGDR_DEVICE is not set (this suite runs in the QEMU guest: kmod/qemu/run.sh)"
        );
        return None;
    };
    // In the guest the tool is /bin/fpgagdr-bench; on the build host, cargo's.
    let guest = std::path::Path::new("/bin/fpgagdr-bench");
    let bin = if guest.exists() {
        guest.to_string_lossy().into_owned()
    } else {
        env!("CARGO_BIN_EXE_fpgagdr-bench").to_string()
    };
    Some((dev.to_string_lossy().into_owned(), bin))
}

/// The path link the guest's root port was set to, from `FPGAGDR_EXPECT_PATH=GTS:LANES`
/// (`kmod/qemu/run.sh`), as (generation, lanes); `None` when the variable is absent (a
/// machine whose path is not known in advance).
fn expected_path() -> Option<(u32, u32)> {
    let text = std::env::var("FPGAGDR_EXPECT_PATH").ok()?;
    let (gts, lanes) = text
        .split_once(':')
        .unwrap_or_else(|| panic!("FPGAGDR_EXPECT_PATH={text}: not GTS:LANES"));
    let generation = ["2.5", "5", "8", "16", "32", "64"]
        .iter()
        .position(|g| *g == gts)
        .unwrap_or_else(|| panic!("FPGAGDR_EXPECT_PATH={text}: no such speed"))
        as u32
        + 1;
    Some((generation, lanes.parse().expect("lanes")))
}

fn run(bin: &str, dev: &str, args: &[&str]) -> Output {
    Command::new(bin)
        .args(["--card", dev, "--no-gpu"])
        .args(args)
        .output()
        .expect("the tool runs")
}

/// Runs `args` (a subcommand first) with `--json`, and `--report` into a scratch folder
/// whose Markdown report is then written to the console, between
/// `FPGAGDR-BENCH-REPORT-BEGIN <subcommand>` and `-END` lines: the guest's serial log
/// keeps what the tool printed (docs/benchmarks.md quotes it). Written to the process's
/// stdout directly, which the test harness does not capture. The tool's `WARNING:` lines
/// appear as `WARNING(bench):`, so that `run.sh`'s scan of the log for the kernel's
/// `WARNING:` does not take them for one.
#[track_caller]
fn json(bin: &str, dev: &str, args: &[&str]) -> Value {
    use std::io::Write;
    let dir = std::env::temp_dir().join("fpgagdr-bench-guest");
    let dir_s = dir.to_string_lossy().into_owned();
    let mut a = vec!["--json", "--report", &dir_s];
    a.extend_from_slice(args);
    let out = run(bin, dev, &a);
    assert!(
        out.status.success(),
        "{args:?}: exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(dir.join(format!("{}.md", args[0])))
        .expect("the Markdown report")
        .replace("WARNING:", "WARNING(bench):");
    let mut console = std::io::stdout().lock();
    let _ = write!(
        console,
        "FPGAGDR-BENCH-REPORT-BEGIN {0}\n{md}FPGAGDR-BENCH-REPORT-END {0}\n",
        args[0]
    );
    let _ = console.flush();
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

#[test]
fn every_subcommand_runs_through_the_module() {
    let Some((dev, bin)) = target() else { return };
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // quick: 15 checks pass, the card is the module's test engine.
    let q = json(&bin, &dev, &["quick"]);
    assert_eq!(q["passed"], true, "{q}");
    assert_eq!(
        q["card"]["status"]["simulated"], true,
        "test engine: no hardware"
    );
    let name = q["card"]["status"]["name"].as_str().unwrap();
    let version = format!(", fpgagdr.ko {}", env!("CARGO_PKG_VERSION"));
    assert!(
        name.contains("kernel module ABI") && name.contains(&version),
        "the driver and its version (MODULE_VERSION, from sysfs): {q}"
    );
    // The link as the module reports it: edu has no PCIe capability of its own; the
    // path's link is the root port's, exactly as run.sh set it.
    let pcie = &q["card"]["pcie"];
    assert!(
        pcie["summary"]
            .as_str()
            .unwrap()
            .starts_with("not reported"),
        "{pcie}"
    );
    let path = expected_path();
    if let Some((generation, width)) = path {
        let r = &pcie["reported"];
        assert_eq!(
            (&r["gen_path"], &r["width_path"]),
            (&Value::from(generation), &Value::from(width)),
            "{pcie}"
        );
        assert_eq!(
            (&r["gen_current"], &r["width_current"]),
            (&Value::from(0), &Value::from(0))
        );
        assert!(
            r["path_limited_by"].as_str().unwrap().starts_with("0000:"),
            "{r}"
        );
        assert_eq!(pcie["limit_from"], "path", "{pcie}");
        assert!(pcie["c2h_limit_gbps"].as_f64().unwrap() > 0.0, "{pcie}");
        // The text report prints the path and the limit it gives.
        let out = run(&bin, &dev, &["quick"]);
        let text = String::from_utf8_lossy(&out.stdout);
        let gts = ["2.5", "5", "8", "16", "32", "64"][generation as usize - 1];
        let want = format!("path: Gen{generation} ({gts} GT/s) x{width}, narrowest at 0000:");
        assert!(text.contains(&want), "{want:?} not in:\n{text}");
        assert!(text.contains("limit: C2H "), "{text}");
    }

    let s = json(
        &bin,
        &dev,
        &[
            "sizes",
            "--sizes",
            "4K,1M",
            "--iterations",
            "12",
            "--warmup",
            "1",
        ],
    );
    let cells = s["result"]["cells"].as_array().unwrap();
    let a: Vec<&Value> = cells.iter().filter(|c| c["path"] == "A").collect();
    assert_eq!(a.len(), 4, "{s}");
    for c in a {
        assert_eq!(c["available"], true, "{c}");
        assert_eq!(c["samples_us"].as_array().unwrap().len(), 12);
        if path.is_some() {
            // bytes ÷ mean latency as a share of the path's limit
            let gbps = c["gbps"].as_f64().unwrap();
            let limit = s["card"]["pcie"][if c["dir"] == "read" {
                "c2h_limit_gbps"
            } else {
                "h2c_limit_gbps"
            }]
            .as_f64()
            .unwrap();
            let share = c["link_share_pct"].as_f64().unwrap();
            assert!(
                (share - 100.0 * gbps / limit).abs() < 1e-6 * share.max(1.0),
                "{c}"
            );
        } else {
            assert!(c["link_share_pct"].is_null(), "no link, no share: {c}");
        }
    }

    let m = json(
        &bin,
        &dev,
        &["multibuf", "--iterations", "12", "--warmup", "1"],
    );
    let r = &m["result"]["ratio"];
    assert_eq!(r["pairs"], 12, "{m}");
    assert!(
        ["steady", "noisy"].contains(&r["verdict"].as_str().unwrap()),
        "{r}"
    );

    // capture: frames from the module's frame-done interrupt (the test sensor).
    let c = json(&bin, &dev, &["capture", "--frames", "40"]);
    let cr = &c["result"];
    assert_eq!(cr["frames"], 40, "{cr}");
    assert!(cr["fps"].as_f64().unwrap() > 0.0, "{cr}");
    // The test card speaks protocol 1.1: the module judged every frame read (whole or
    // torn, none unchecked).
    assert_eq!(cr["unchecked"], 0, "{cr}");
    assert!(cr["torn"].as_u64().is_some(), "{cr}");
}

#[test]
fn json_into_a_closed_pipe_ends_cleanly() {
    let Some((dev, bin)) = target() else { return };
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(&bin)
        .args([
            "--card", &dev, "--no-gpu", "--json", "sizes", "--sizes", "4K",
        ])
        .args(["--iterations", "8000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tool runs");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "{\n");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}
