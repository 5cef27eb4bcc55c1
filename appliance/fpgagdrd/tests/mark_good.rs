//! `fpgagdrd --mark-good-after-health` where it cannot judge: RAUC out of reach, or a
//! slot judged bad before. No RAUC runs here (the bus address leads nowhere); the real
//! binary, a spool in a temporary folder, and a test double of the reboot command (a
//! file touched) are all there is. What it is about: a boot that was not judged, or
//! was judged bad, is never confirmed to the bootloader (exit status non-zero, which
//! keeps `nv_update_verifier.service` from running `nvbootctrl verify`), and nothing
//! reboots (no loop: the bootloader's retry counter takes the device back).
//! The same with RAUC on a bus: `tests/ota.rs`, section 9.

use std::path::Path;
use std::process::Command;

/// What one run did: exit status 0, its output, and whether it requested a reboot.
struct Run {
    ok: bool,
    said: String,
    rebooted: bool,
}

/// Runs the real binary with `spool` as the OTA spool, RAUC looked for on a socket
/// that does not exist (tried for 1 s), the appliance's API nowhere (health: 1 s).
fn mark_good(dir: &Path, spool: &Path) -> Run {
    let flag = dir.join("reboot-requested");
    let _ = std::fs::remove_file(&flag);
    let out = Command::new(env!("CARGO_BIN_EXE_fpgagdrd"))
        .args(["--mark-good-after-health", "--listen", "127.0.0.1:9"])
        .arg("--rauc-bus")
        .arg(format!("unix:path={}", dir.join("no-such-bus").display()))
        .args(["--rauc-wait-s", "1", "--health-timeout-s", "1"])
        .arg("--ota-spool")
        .arg(spool)
        // Not a device: nvbootctrl is not there (A/B cannot be asked), the card's node
        // neither.
        .env("FPGAGDR_NVBOOTCTRL", dir.join("no-nvbootctrl"))
        .env("FPGAGDR_CARD_NODE", dir.join("no-fpgagdr0"))
        .env("FPGAGDR_ESP_DIR", dir.join("no-esp"))
        .env("FPGAGDR_ESRT_DIR", dir.join("no-esrt"))
        .env(
            "FPGAGDR_REBOOT_COMMAND",
            format!("touch {}", flag.display()),
        )
        .output()
        .expect("run --mark-good-after-health");
    Run {
        ok: out.status.success(),
        said: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        rebooted: flag.exists(),
    }
}

fn installed(spool: &Path) {
    std::fs::create_dir_all(spool).unwrap();
    std::fs::write(
        spool.join("installation"),
        "id=7c1e-test\nslot=rootfs.1\ninstalled=2026-12-01T00:00:00Z\n",
    )
    .unwrap();
}

#[test]
fn an_update_whose_slot_cannot_reach_rauc_is_not_confirmed() {
    // An update that broke RAUC or D-Bus (a bad system.conf): confirming it would leave
    // a device that can neither update nor roll back.
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    installed(&spool);
    let r = mark_good(dir.path(), &spool);
    assert!(
        !r.ok,
        "an update not judged (RAUC out of reach) was let through to nvbootctrl verify: {}",
        r.said
    );
    assert!(r.said.contains("RAUC is not reachable"), "{}", r.said);
    assert!(!r.rebooted, "no reboot without a Mark bad: {}", r.said);
    // The next boot of the same slot: the same answer, still no reboot (no loop).
    let r = mark_good(dir.path(), &spool);
    assert!(!r.ok && !r.rebooted, "{}", r.said);
}

#[test]
fn a_slot_judged_bad_that_comes_up_again_is_not_confirmed() {
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    installed(&spool);
    // mark-good's stamp of an earlier boot of this installation: judged bad.
    std::fs::write(spool.join("mark-good.stamp"), "B 7c1e-test bad\n").unwrap();
    let r = mark_good(dir.path(), &spool);
    assert!(
        !r.ok,
        "a slot judged bad was let through to nvbootctrl verify: {}",
        r.said
    );
    assert!(r.said.contains("judged bad"), "{}", r.said);
    assert!(!r.rebooted, "no second reboot (no loop): {}", r.said);
}

#[test]
fn a_confirmed_update_stays_confirmed_when_rauc_is_away_later() {
    // Judged good once: a later fault (RAUC out of reach on a later boot) never takes
    // the confirmation back.
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    installed(&spool);
    std::fs::write(spool.join("mark-good.stamp"), "B 7c1e-test good\n").unwrap();
    let r = mark_good(dir.path(), &spool);
    assert!(r.ok, "{}", r.said);
    assert!(r.said.contains("confirmed before"), "{}", r.said);
    assert!(!r.rebooted, "{}", r.said);
}

#[test]
fn a_factory_boot_without_rauc_is_left_alone_and_may_be_confirmed() {
    // The image it was flashed with is in both slots: there is nothing to go back to.
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let r = mark_good(dir.path(), &spool);
    assert!(r.ok, "{}", r.said);
    assert!(r.said.contains("factory"), "{}", r.said);
    assert!(!r.rebooted, "{}", r.said);
}
