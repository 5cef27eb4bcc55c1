//! `fpgagdr-bench` against the real kernel module: run inside the QEMU guest by
//! `kmod/qemu/run.sh` (plain pass, the module with its TEST-ONLY software card and test
//! sensor), with `FPGAGDR_DEVICE` naming the control node and the tool itself copied to
//! the guest's `/bin` (`FPGAGDR_QEMU_TOOLS`). Elsewhere each test prints why it is
//! skipped and passes.
//!
//! What it shows: the subcommands a user runs (`quick`, `sizes`, `multibuf`, `capture`)
//! work through the kernel back-end; the card is reported as the module's test engine
//! (simulated: no hardware), the link as the module reports it (QEMU's `edu` is
//! conventional PCI: "not reported", no share computed); `--json | head -1` ends cleanly.

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

fn run(bin: &str, dev: &str, args: &[&str]) -> Output {
    Command::new(bin)
        .args(["--card", dev, "--no-gpu"])
        .args(args)
        .output()
        .expect("the tool runs")
}

#[track_caller]
fn json(bin: &str, dev: &str, args: &[&str]) -> Value {
    let mut a = vec!["--json"];
    a.extend_from_slice(args);
    let out = run(bin, dev, &a);
    assert!(
        out.status.success(),
        "{args:?}: exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
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
    assert!(
        q["card"]["status"]["name"]
            .as_str()
            .unwrap()
            .contains("kernel module ABI"),
        "{q}"
    );
    // The link as the module reports it: edu has no PCIe capability.
    let pcie = &q["card"]["pcie"];
    assert!(pcie["reported"].is_null(), "{pcie}");
    assert!(
        pcie["summary"]
            .as_str()
            .unwrap()
            .starts_with("not reported"),
        "{pcie}"
    );

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
        assert!(c["link_share_pct"].is_null(), "no link, no share: {c}");
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
