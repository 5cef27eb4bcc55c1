//! Over-the-air updates against the real RAUC (Debian's `rauc`, 1.8 or newer) on a
//! private D-Bus bus, with file-backed slots, bundles built and signed here with
//! `openssl`-made keys (`images/rauc/make-dev-keys.sh`), the layer's boot-control
//! backend (`meta-fpgagdr/recipes-core/rauc/files/rauc-nvbootctrl-backend.sh`) and a
//! test double of `nvbootctrl` (`images/rauc/test/nvbootctrl-test-double`) standing in
//! for the Jetson's bootloader.
//!
//! RAUC mounts bundles (loop devices), so these tests need root, `rauc`, `dbus-daemon`
//! and `mksquashfs`. Without them a test prints `skipped: ...` and passes, unless
//! `FPGAGDR_REQUIRE_RAUC=1` (set by `images/rauc/test/run.sh`, which CI runs): then it
//! fails. The backend tests against the test double need only `sh`.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use common::rauc::{
    COMPATIBLE, GUID, NOBODY, Rauc, Verdict, backend, have, install, keys, ota, private_bus_conf,
    rauc_ready, sha256_hex, test_double, upload, wait_ota,
};
use common::{PATIENCE, Service, wait_for};
use serde_json::{Value, json};

/// Distinct, recognisable image bytes.
fn image(seed: u8) -> Vec<u8> {
    (0..3_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 ^ seed)
        .collect()
}

/// The `ota` events of the live stream, as they come.
fn ota_events(svc: &Service) -> mpsc::Receiver<Value> {
    let resp = svc
        .agent()
        .get(svc.url("/api/v1/stream"))
        .call()
        .expect("open the stream");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut event = String::new();
        for line in BufReader::new(resp.into_body().into_reader()).lines() {
            let Ok(line) = line else { break };
            if let Some(e) = line.strip_prefix("event: ") {
                event = e.to_string();
            } else if let Some(d) = line.strip_prefix("data: ")
                && event == "ota"
            {
                let Ok(v) = serde_json::from_str(d) else {
                    break;
                };
                if tx.send(v).is_err() {
                    break;
                }
            }
        }
    });
    rx
}

fn spool_files(env: &Rauc) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(env.path("spool"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    v.sort();
    v
}

/// Asserts that nothing was installed: slot B still empty, slot A as it was, the
/// bootloader not switched, slot B never marked unbootable.
#[track_caller]
fn assert_untouched(env: &Rauc) {
    assert!(env.slot("B").iter().all(|b| *b == 0), "slot B was written");
    assert!(
        env.slot("A").iter().all(|b| *b == 0xA5),
        "slot A was written"
    );
    assert!(env.bootctrl().contains("active=0"), "{}", env.bootctrl());
    assert!(
        !env.bootctrl_log().contains("set-slot-as-unbootable"),
        "{}",
        env.bootctrl_log()
    );
}

// 1 ------------------------------------------------------------------------------------

#[test]
fn a_good_bundle_installs_into_the_inactive_slot_and_switches_the_primary() {
    if !rauc_ready("good bundle") {
        return;
    }
    let env = Rauc::start(true);
    let svc = env.service();
    wait_ota(&svc, "OTA available", |v| v["available"] == true);
    let before = ota(&svc);
    assert_eq!(before["booted_slot"], "A", "{before}");
    assert_eq!(before["compatible"], COMPATIBLE, "{before}");
    assert_eq!(before["primary_slot"], "rootfs.0", "{before}");
    assert_eq!(
        before["slots"].as_array().map(Vec::len),
        Some(2),
        "{before}"
    );

    let img = image(1);
    let bundle = std::fs::read(env.bundle("good", COMPATIBLE, &keys().good, &img, false)).unwrap();
    let r = upload(&svc, &bundle);
    assert_eq!(r.status, 201, "{}", r.body);
    let up = r.json();
    assert_eq!(up["sha256"], sha256_hex(&bundle), "{up}");
    assert_eq!(up["bytes"], bundle.len(), "{up}");
    assert_eq!(up["compatible"], COMPATIBLE, "{up}");

    let events = ota_events(&svc);
    let r = install(&svc, up["sha256"].as_str().unwrap());
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(r.json()["operation"], "installing");

    // Progress, then the result, on the live stream.
    let mut percents = Vec::new();
    let done = loop {
        let e = events.recv_timeout(PATIENCE).expect("an ota event");
        if let Some(p) = e["progress"]["percent"].as_i64()
            && e["operation"] == "installing"
            && percents.last() != Some(&p)
        {
            percents.push(p);
        }
        if e["last_result"].is_object() {
            break e;
        }
    };
    assert_eq!(done["last_result"]["ok"], true, "{done}");
    assert_eq!(done["last_result"]["bundle"], up["sha256"], "{done}");
    assert!(percents.len() >= 3, "progress events: {percents:?}");
    assert!(percents.windows(2).all(|w| w[0] <= w[1]), "{percents:?}");

    let after = ota(&svc);
    assert_eq!(after["operation"], "idle", "{after}");
    assert_eq!(after["primary_slot"], "rootfs.1", "{after}");
    assert_eq!(after["booted_slot"], "A", "{after}");
    assert_eq!(
        &env.slot("B")[..img.len()],
        &img[..],
        "slot B holds the image"
    );
    assert!(env.slot("A").iter().all(|b| *b == 0xA5), "slot A untouched");
    let st = env.bootctrl();
    assert!(st.contains("active=1") && st.contains("current=0"), "{st}");
    // RAUC marked B unbootable during the install; set-primary made it bootable again.
    let log = env.bootctrl_log();
    assert!(log.contains("set-slot-as-unbootable 1"), "{log}");
    let efivar = std::fs::read(env.path(&format!("efivars/RootfsStatusSlotB-{GUID}"))).unwrap();
    assert_eq!(efivar[4], 0, "slot B status is normal");
    let b = &after["slots"].as_array().unwrap()[1];
    assert_eq!(b["boot-status"], "good", "{b}");
    assert_eq!(b["bundle.version"], "2.0-good", "{b}");
    // The spool's copy is removed once installed.
    assert!(spool_files(&env).iter().all(|f| !f.ends_with(".raucb")));

    // Mark-good on this (factory) boot: healthy service -> booted slot marked good, once.
    let listen = svc.base.trim_start_matches("http://").to_string();
    let v = mark_good(&env, &env.bus, &listen, "30");
    assert!(v.ok && v.said.contains("marked good"), "{}", v.said);
    let v = mark_good(&env, &env.bus, &listen, "30");
    assert!(v.ok && v.said.contains("confirmed before"), "{}", v.said);
}

// 2 ------------------------------------------------------------------------------------

#[test]
fn a_bundle_from_an_unknown_signer_is_refused_and_nothing_is_written() {
    if !rauc_ready("unknown signer") {
        return;
    }
    let env = Rauc::start(true);
    let svc = env.service();
    wait_ota(&svc, "OTA available", |v| v["available"] == true);
    let bundle =
        std::fs::read(env.bundle("foreign", COMPATIBLE, &keys().other, &image(2), false)).unwrap();
    let p = upload(&svc, &bundle).problem(422, "ota-bundle");
    // RAUC's own reason (once it was replaced by RAUC 1.8's reason-less "rauc info
    // error" of its D-Bus Info method).
    let detail = p["detail"].as_str().unwrap();
    assert!(detail.contains("RAUC refused"), "{p}");
    assert!(
        !detail.contains("rauc info error") && detail.contains("signature verification failed"),
        "{p}"
    );
    assert!(spool_files(&env).is_empty(), "{:?}", spool_files(&env));
    let r = install(&svc, &sha256_hex(&bundle));
    r.problem(404, "ota-no-bundle");
    assert_untouched(&env);
}

// 3 ------------------------------------------------------------------------------------

#[test]
fn a_bundle_for_another_compatible_is_refused() {
    if !rauc_ready("wrong compatible") {
        return;
    }
    let env = Rauc::start(true);
    let svc = env.service();
    wait_ota(&svc, "OTA available", |v| v["available"] == true);
    let path = env.bundle(
        "other",
        "someone-elses-board",
        &keys().good,
        &image(3),
        false,
    );
    let bundle = std::fs::read(&path).unwrap();
    let p = upload(&svc, &bundle).problem(422, "ota-bundle");
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("someone-elses-board"),
        "{p}"
    );
    assert!(spool_files(&env).is_empty());
    assert_untouched(&env);

    // RAUC refuses it too when asked directly (a bundle placed in the spool by hand).
    let sha = sha256_hex(&bundle);
    std::fs::copy(&path, env.path(&format!("spool/{sha}.raucb"))).unwrap();
    assert_eq!(install(&svc, &sha).status, 202);
    let v = wait_ota(&svc, "the refusal", |v| v["last_result"].is_object());
    assert_eq!(v["last_result"]["ok"], false, "{v}");
    let err = v["last_result"]["error"].as_str().unwrap_or("");
    assert!(err.contains("ompatible"), "{v}");
    assert_untouched(&env);
}

// 4 ------------------------------------------------------------------------------------

#[test]
fn a_truncated_or_corrupted_upload_is_refused_and_nothing_is_installed() {
    if !rauc_ready("truncated or corrupted") {
        return;
    }
    let env = Rauc::start(true);
    let svc = env.service();
    wait_ota(&svc, "OTA available", |v| v["available"] == true);
    let bundle =
        std::fs::read(env.bundle("good", COMPATIBLE, &keys().good, &image(4), false)).unwrap();

    let truncated = &bundle[..bundle.len() - 4096];
    upload(&svc, truncated).problem(422, "ota-bundle");
    let mut corrupted = bundle.clone();
    let mid = corrupted.len() / 2;
    corrupted[mid] ^= 0xff;
    upload(&svc, &corrupted).problem(422, "ota-bundle");
    assert!(spool_files(&env).is_empty(), "{:?}", spool_files(&env));

    // The connection drops mid-upload: the partial file is removed, nothing is spooled.
    let addr = svc.base.trim_start_matches("http://").to_string();
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        s,
        "POST /api/v1/ota/bundles HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        svc.token,
        bundle.len()
    )
    .unwrap();
    s.write_all(&bundle[..bundle.len() / 2]).unwrap();
    wait_for("the partial upload in the spool", || {
        (!spool_files(&env).is_empty())
            .then_some(())
            .ok_or_else(|| "nothing yet".into())
    });
    drop(s);
    wait_for("the partial upload removed", || {
        let f = spool_files(&env);
        f.is_empty().then_some(()).ok_or_else(|| format!("{f:?}"))
    });
    install(&svc, &sha256_hex(&bundle)).problem(404, "ota-no-bundle");
    assert_untouched(&env);
    assert_eq!(ota(&svc)["operation"], "idle");
}

// 5 ------------------------------------------------------------------------------------

#[test]
fn a_second_install_while_one_runs_is_refused_with_409_and_the_first_completes() {
    if !rauc_ready("second install") {
        return;
    }
    let env = Rauc::start(true);
    let svc = env.service();
    wait_ota(&svc, "OTA available", |v| v["available"] == true);
    let img = image(5);
    let bundle = std::fs::read(env.bundle("gated", COMPATIBLE, &keys().good, &img, true)).unwrap();
    let sha = upload(&svc, &bundle).json()["sha256"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(install(&svc, &sha).status, 202);
    wait_ota(&svc, "the hook holding the install", |v| {
        v["operation"] == "installing"
            && v["progress"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("rootfs"))
    });
    let p = install(&svc, &sha).problem(409, "ota-busy");
    assert!(
        p["detail"].as_str().unwrap().contains("already running"),
        "{p}"
    );
    upload(&svc, &bundle).problem(409, "ota-busy");
    env.open_gate();
    let v = wait_ota(&svc, "the first install's result", |v| {
        v["last_result"].is_object()
    });
    assert_eq!(v["last_result"]["ok"], true, "{v}");
    assert_eq!(v["primary_slot"], "rootfs.1", "{v}");
    assert_eq!(&env.slot("B")[..img.len()], &img[..]);
}

// 6 ------------------------------------------------------------------------------------

#[test]
fn the_service_killed_during_an_install_reports_it_correctly_after_restart() {
    if !rauc_ready("killed during install") {
        return;
    }
    let env = Rauc::start(true);
    let img = image(6);
    let bundle = std::fs::read(env.bundle("gated", COMPATIBLE, &keys().good, &img, true)).unwrap();
    {
        let svc = env.service();
        wait_ota(&svc, "OTA available", |v| v["available"] == true);
        let sha = upload(&svc, &bundle).json()["sha256"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(install(&svc, &sha).status, 202);
        wait_ota(&svc, "the install under way", |v| {
            v["progress"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("rootfs"))
        });
        // Dropping the guard kills the service (SIGKILL) mid-install.
    }
    let svc = env.service();
    let v = wait_ota(&svc, "OTA available again", |v| v["available"] == true);
    assert_eq!(v["operation"], "installing", "{v}");
    assert_eq!(v["booted_slot"], "A", "{v}");
    // RAUC does not answer GetPrimary while it installs: unknown, never the new slot.
    assert_ne!(v["primary_slot"], "rootfs.1", "{v}");
    assert!(env.bootctrl().contains("active=0"), "{}", env.bootctrl());
    assert!(env.slot("A").iter().all(|b| *b == 0xA5), "slot A untouched");
    install(&svc, &sha256_hex(&bundle)).problem(409, "ota-busy");
    env.open_gate();
    let v = wait_ota(&svc, "the result seen by the new service", |v| {
        v["last_result"].is_object()
    });
    assert_eq!(v["last_result"]["ok"], true, "{v}");
    assert_eq!(v["last_result"]["bundle"], Value::Null, "{v}");
    assert_eq!(v["booted_slot"], "A", "{v}");
    assert_eq!(v["primary_slot"], "rootfs.1", "{v}");
    assert!(env.slot("A").iter().all(|b| *b == 0xA5), "slot A untouched");
}

#[test]
fn rauc_killed_during_an_install_and_restarted_is_reported_as_a_failed_install() {
    // RAUC (not the service) dies mid-install and comes back: it never sends Completed,
    // and its LastError is empty because it is a new process. The primary slot never
    // changed, so the service must report a failure and keep the bundle.
    if !rauc_ready("RAUC killed during install") {
        return;
    }
    let mut env = Rauc::start(true);
    let svc = env.service();
    wait_ota(&svc, "OTA available", |v| v["available"] == true);
    let img = image(8);
    let bundle = std::fs::read(env.bundle("gated", COMPATIBLE, &keys().good, &img, true)).unwrap();
    let sha = upload(&svc, &bundle).json()["sha256"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(install(&svc, &sha).status, 202);
    wait_ota(&svc, "the install under way", |v| {
        v["progress"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("rootfs"))
    });
    env.restart_rauc("A");
    env.open_gate(); // the orphaned hook of the killed RAUC may end now
    let v = wait_ota(&svc, "the outcome once RAUC is back", |v| {
        v["available"] == true && v["last_result"].is_object()
    });
    assert_eq!(v["last_result"]["ok"], false, "a false success: {v}");
    let err = v["last_result"]["error"].as_str().unwrap_or("");
    assert!(
        err.contains("rootfs.0"),
        "the error names the primary slot: {v}"
    );
    assert_eq!(v["operation"], "idle", "{v}");
    assert_eq!(v["primary_slot"], "rootfs.0", "{v}");
    assert!(env.bootctrl().contains("active=0"), "{}", env.bootctrl());
    assert!(env.slot("A").iter().all(|b| *b == 0xA5), "slot A untouched");
    // The bundle is kept, and installing it again works.
    assert_eq!(spool_files(&env), vec![format!("{sha}.raucb")]);
    assert_eq!(install(&svc, &sha).status, 202);
    let v = wait_ota(&svc, "the second install's result", |v| {
        v["last_result"]["ok"] == true
    });
    assert_eq!(v["primary_slot"], "rootfs.1", "{v}");
    assert_eq!(&env.slot("B")[..img.len()], &img[..]);
}

// 7 ------------------------------------------------------------------------------------

/// The backend against the test double, in a fresh fake device.
struct Device {
    dir: tempfile::TempDir,
}

impl Device {
    fn new(state: &str) -> Device {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("efivars")).unwrap();
        std::fs::write(dir.path().join("state"), state).unwrap();
        Device { dir }
    }
    fn run(&self, program: &Path, args: &[&str]) -> (bool, String, String) {
        let out = Command::new(program)
            .args(args)
            .env("FPGAGDR_NVBOOTCTRL", test_double())
            .env("FPGAGDR_EFIVARS_DIR", self.dir.path().join("efivars"))
            .env("NVBOOTCTRL_TEST_STATE", self.dir.path().join("state"))
            .output()
            .expect("run");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    }
    fn backend(&self, args: &[&str]) -> (bool, String, String) {
        self.run(&backend(), args)
    }
    fn state(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("state")).unwrap()
    }
}

#[test]
fn the_backend_drives_nvbootctrl_and_handles_the_set_primary_trap() {
    let dev = Device::new("ab=1\ncurrent=0\nactive=0\n");
    assert_eq!(
        dev.backend(&["get-current"]),
        (true, "A".into(), String::new())
    );
    assert_eq!(dev.backend(&["get-primary"]).1, "A");
    assert_eq!(dev.backend(&["get-state", "B"]).1, "good");
    // What RAUC does during an install: mark the target bad ...
    assert!(dev.backend(&["set-state", "B", "bad"]).0);
    assert_eq!(dev.backend(&["get-state", "B"]).1, "bad");
    // ... the trap, shown on the test double: switching alone leaves B unbootable.
    let trap = Device::new("ab=1\ncurrent=0\nactive=0\n");
    assert!(
        trap.run(
            &test_double(),
            &["-t", "rootfs", "set-slot-as-unbootable", "1"]
        )
        .0
    );
    assert!(
        trap.run(
            &test_double(),
            &["-t", "rootfs", "set-active-boot-slot", "1"]
        )
        .0
    );
    assert!(
        trap.run(&test_double(), &["-t", "rootfs", "dump-slots-info"])
            .1
            .contains("status: unbootable")
    );
    // ... then set-primary: B becomes bootable again and active.
    let (ok, _, err) = dev.backend(&["set-primary", "B"]);
    assert!(ok, "{err}");
    assert_eq!(dev.backend(&["get-state", "B"]).1, "good");
    assert_eq!(dev.backend(&["get-primary"]).1, "B");
    assert!(dev.state().contains("active=1"), "{}", dev.state());
    assert_eq!(
        dev.backend(&["get-current"]).1,
        "A",
        "still running A until reboot"
    );
    // set-state good after a fallback restores a slot; unknown arguments are errors.
    assert!(dev.backend(&["set-state", "A", "bad"]).0);
    assert!(dev.backend(&["set-state", "A", "good"]).0);
    assert_eq!(dev.backend(&["get-state", "A"]).1, "good");
    assert!(!dev.backend(&["set-primary", "C"]).0);
    assert!(!dev.backend(&["set-state", "A", "maybe"]).0);
    assert!(!dev.backend(&["frobnicate"]).0);
}

#[test]
fn the_backend_fails_closed_and_refuses_without_rootfs_ab() {
    // A/B disabled: every command refuses, naming the reason; nothing changes.
    let dev = Device::new("ab=0\ncurrent=0\nactive=0\n");
    for args in [
        &["get-current"][..],
        &["get-primary"],
        &["get-state", "B"],
        &["set-state", "B", "bad"],
        &["set-primary", "B"],
    ] {
        let (ok, out, err) = dev.backend(args);
        assert!(!ok, "{args:?} succeeded: {out}");
        assert!(
            err.contains("A/B redundancy is not enabled"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(dev.state(), "ab=0\ncurrent=0\nactive=0\n");
    assert!(
        std::fs::read_dir(dev.dir.path().join("efivars"))
            .unwrap()
            .next()
            .is_none()
    );
    // The current slot cannot be read: no guess.
    let dev = Device::new("ab=1\ncurrent=\nactive=0\n");
    let (ok, out, err) = dev.backend(&["get-current"]);
    assert!(!ok && out.is_empty(), "{out}");
    assert!(err.contains("expected 0/1"), "{err}");
    // nvbootctrl missing altogether.
    let out = Command::new(backend())
        .arg("get-current")
        .env("FPGAGDR_NVBOOTCTRL", "/nonexistent/nvbootctrl")
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn rauc_refuses_to_install_when_rootfs_ab_is_disabled() {
    if !rauc_ready("A/B disabled") {
        return;
    }
    let env = Rauc::start(false);
    let path = env.bundle("good", COMPATIBLE, &keys().good, &image(7), false);
    let out = Rauc::rauc_command(env.dir.path(), &env.bus)
        .arg("install")
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    assert!(env.slot("B").iter().all(|b| *b == 0), "slot B was written");
    assert!(env.bootctrl().contains("active=0"));
    let log = std::fs::read_to_string(env.path("rauc.log")).unwrap_or_default();
    assert!(log.contains("A/B redundancy is not enabled"), "{log}");
}

// 9 ------------------------------------------------------------------------------------

/// Runs the real `fpgagdrd --mark-good-after-health` against `env`'s RAUC (see
/// [`Rauc::mark_good`]) with the spool of the test.
fn mark_good(env: &Rauc, bus: &str, listen: &str, timeout_s: &str) -> Verdict {
    env.mark_good(bus, listen, timeout_s, &env.path("spool"))
}

/// Simulates the boot into slot B after an update ([`Rauc::boot_into`]); B's spool
/// holds the installation marker the bundle's post-install hook writes when
/// `installed` (false: a factory image).
fn boot_into_b(env: &mut Rauc, installed: bool) {
    env.boot_into("B");
    if installed {
        std::fs::write(
            env.path("spool/installation"),
            "id=5d1f0c2e-test\nslot=rootfs.1\ninstalled=2026-12-01T00:00:00Z\n",
        )
        .unwrap();
    }
}

#[test]
fn mark_good_never_judges_a_factory_boot_as_failed() {
    // The factory image is in both slots: marking it bad here would mark the other bad
    // on the next boot too, and the bootloader would fall to the recovery kernel.
    if !rauc_ready("mark-good factory boot") {
        return;
    }
    let env = Rauc::start(true);
    let v = mark_good(&env, &env.bus, NOBODY, "1");
    assert!(
        v.ok,
        "an unhealthy factory boot failed the unit: {}",
        v.said
    );
    assert!(!v.rebooted, "{}", v.said);
    assert!(v.said.contains("factory"), "{}", v.said);
    assert!(!env.unbootable("A"), "slot A marked bad: {}", v.said);
    assert!(!env.bootctrl_log().contains("set-slot-as-unbootable"));
    // Healthy: confirmed (once).
    let svc = env.service();
    let listen = svc.base.trim_start_matches("http://").to_string();
    let v = mark_good(&env, &env.bus, &listen, "30");
    assert!(v.ok && v.said.contains("marked good"), "{}", v.said);
}

#[test]
fn mark_good_leaves_a_device_without_rootfs_ab_alone() {
    // Flashed without the A/B layout: Mark is refused by the backend; that must neither
    // fail the unit nor reboot, healthy or not.
    if !rauc_ready("mark-good without A/B") {
        return;
    }
    let env = Rauc::start(false);
    let svc = env.service();
    let listen = svc.base.trim_start_matches("http://").to_string();
    for (addr, timeout) in [(listen.as_str(), "30"), (NOBODY, "1")] {
        let v = mark_good(&env, &env.bus, addr, timeout);
        assert!(v.ok, "{addr}: {}", v.said);
        assert!(!v.rebooted, "{addr}: {}", v.said);
        assert!(v.said.contains("A/B"), "{addr}: {}", v.said);
    }
}

#[test]
fn mark_good_with_rauc_unreachable_confirms_only_a_factory_boot_and_never_reboots() {
    if !rauc_ready("mark-good without RAUC") {
        return;
    }
    let env = Rauc::start(true);
    let nowhere = format!("unix:path={}", env.path("no-such-bus").display());
    let v = mark_good(&env, &nowhere, NOBODY, "1");
    assert!(v.ok, "{}", v.said);
    assert!(!v.rebooted, "{}", v.said);
    assert!(v.said.contains("RAUC"), "{}", v.said);
    assert!(
        v.said.contains("attempt"),
        "the retries are logged: {}",
        v.said
    );
    assert!(!env.bootctrl_log().contains("set-slot-as-unbootable"));
    // A slot an update installed, RAUC out of reach (an update that broke RAUC or its
    // D-Bus policy): not judged, so not confirmed; still no reboot.
    let mut env = Rauc::start(true);
    boot_into_b(&mut env, true);
    let v = mark_good(&env, &nowhere, NOBODY, "1");
    assert!(!v.ok, "an update not judged was let through: {}", v.said);
    assert!(!v.rebooted, "{}", v.said);
    assert!(v.said.contains("RAUC is not reachable"), "{}", v.said);
    assert!(!env.unbootable("B"), "{}", v.said);
}

#[test]
fn an_update_that_loses_the_card_is_marked_bad() {
    // The appliance had a card when the update was installed (the hook's card=present);
    // the new slot's service is healthy on its simulated card, but the module's node is
    // gone: the update broke the module.
    if !rauc_ready("mark-good, card lost") {
        return;
    }
    let mut env = Rauc::start(true);
    boot_into_b(&mut env, true);
    let marker = env.path("spool/installation");
    let with_card = format!(
        "{}card=present\n",
        std::fs::read_to_string(&marker).unwrap()
    );
    std::fs::write(&marker, with_card).unwrap();
    let svc = env.service();
    let listen = svc.base.trim_start_matches("http://").to_string();
    let v = mark_good(&env, &env.bus, &listen, "3");
    assert!(v.said.contains("does not see it"), "{}", v.said);
    assert!(env.unbootable("B"), "B not marked bad: {}", v.said);
    assert!(v.rebooted && !v.ok, "{}", v.said);
    // The card there (the module's node): the same update is healthy.
    let mut env = Rauc::start(true);
    boot_into_b(&mut env, true);
    let marker = env.path("spool/installation");
    let with_card = format!(
        "{}card=present\n",
        std::fs::read_to_string(&marker).unwrap()
    );
    std::fs::write(&marker, with_card).unwrap();
    std::fs::write(env.path("dev-fpgagdr0"), "").unwrap();
    let svc = env.service();
    let listen = svc.base.trim_start_matches("http://").to_string();
    let v = mark_good(&env, &env.bus, &listen, "30");
    assert!(v.ok && v.said.contains("marked good"), "{}", v.said);
}

#[test]
fn an_unhealthy_update_is_marked_bad_and_rebooted_only_when_the_other_slot_is_good() {
    if !rauc_ready("mark-good after an update") {
        return;
    }
    // Slot A (the one the update came from) is good: B is marked bad, then the reboot.
    let mut env = Rauc::start(true);
    boot_into_b(&mut env, true);
    let v = mark_good(&env, &env.bus, NOBODY, "1");
    assert!(env.unbootable("B"), "B not marked bad: {}", v.said);
    assert!(v.rebooted, "no reboot after Mark bad: {}", v.said);
    assert!(!v.ok, "the boot must not be confirmed: {}", v.said);
    assert!(!env.unbootable("A"));
    // Should B come up again all the same (A failing in turn), it is not judged again:
    // no second reboot, no loop.
    let v = mark_good(&env, &env.bus, NOBODY, "1");
    assert!(v.said.contains("judged bad"), "{}", v.said);
    assert!(!v.ok, "a slot judged bad must not be confirmed: {}", v.said);
    assert!(!v.rebooted, "{}", v.said);

    // Slot A is bad too (an earlier update that failed): B stays, nothing is marked,
    // no reboot; the boot may be confirmed.
    let mut env = Rauc::start(true);
    let dbl = Command::new(test_double())
        .args(["-t", "rootfs", "set-slot-as-unbootable", "0"])
        .env("FPGAGDR_EFIVARS_DIR", env.path("efivars"))
        .env("NVBOOTCTRL_TEST_STATE", env.path("nvbootctrl.state"))
        .status()
        .unwrap();
    assert!(dbl.success());
    boot_into_b(&mut env, true);
    let v = mark_good(&env, &env.bus, NOBODY, "1");
    assert!(v.ok, "{}", v.said);
    assert!(!v.rebooted, "{}", v.said);
    assert!(!env.unbootable("B"), "B marked bad with A bad: {}", v.said);
    assert!(v.said.contains("not known good"), "{}", v.said);

    // Healthy after an update: marked good once; the next boot finds it confirmed.
    let mut env = Rauc::start(true);
    boot_into_b(&mut env, true);
    let svc = env.service();
    let listen = svc.base.trim_start_matches("http://").to_string();
    let v = mark_good(&env, &env.bus, &listen, "30");
    assert!(v.ok && v.said.contains("marked good"), "{}", v.said);
    assert!(!v.rebooted);
    let v = mark_good(&env, &env.bus, &listen, "30");
    assert!(v.ok && v.said.contains("confirmed before"), "{}", v.said);
}

// 8 ------------------------------------------------------------------------------------

#[test]
fn without_rauc_on_the_bus_ota_is_unavailable_and_everything_else_works() {
    let dir = tempfile::tempdir().unwrap();
    let bus = format!("unix:path={}/no-bus-here", dir.path().display());
    let spool = dir.path().join("spool");
    let mut config = common::replay("chelsea.png");
    config["autostart"] = json!(true);
    let svc = Service::start_with_args(
        Some(&config.to_string()),
        &["--rauc-bus", &bus, "--ota-spool", spool.to_str().unwrap()],
    );
    let v = wait_ota(&svc, "OTA reported unavailable", |v| {
        v["reason"]
            .as_str()
            .is_some_and(|r| r.contains("cannot connect"))
    });
    assert_eq!(v["available"], false, "{v}");
    assert_eq!(v["operation"], "unavailable", "{v}");
    assert!(
        v["reason"].as_str().unwrap().contains("cannot connect"),
        "{v}"
    );
    // Mutations still need the token first; then they say why they cannot run.
    svc.request_as("POST", "/api/v1/ota/bundles", Some(b"x"), &[])
        .problem(401, "auth-token");
    upload(&svc, b"not a bundle").problem(503, "ota-unavailable");
    install(&svc, "00").problem(503, "ota-unavailable");
    assert!(
        std::fs::read_dir(&spool).unwrap().next().is_none(),
        "nothing spooled"
    );
    // Everything else: the pipeline runs, config changes apply, the rest answers.
    svc.wait_frames_above(2);
    let r = svc.request(
        "PATCH",
        "/api/v1/config",
        Some(br#"{"inference": {"threads": 2}}"#),
        &[("content-type", "application/merge-patch+json")],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    for path in ["/api/v1/status", "/api/v1/system", "/metrics", "/"] {
        assert_eq!(svc.get(path).status, 200, "{path}");
    }
    let doc = svc.get_json("/openapi.json");
    for route in ["/api/v1/ota", "/api/v1/ota/bundles", "/api/v1/ota/install"] {
        assert!(
            doc["paths"].get(route).is_some(),
            "{route} missing from the OpenAPI document"
        );
    }
}

#[test]
fn a_bus_without_rauc_on_it_is_reported_as_such() {
    if !have("dbus-daemon") {
        eprintln!("skipped: bus without RAUC: dbus-daemon is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bus = private_bus_conf(dir.path());
    // Killed when the test ends, passed or failed.
    struct Daemon(Child);
    impl Drop for Daemon {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _dbus = Daemon(
        Command::new("dbus-daemon")
            .arg(format!("--config-file={}/bus.conf", dir.path().display()))
            .arg("--nofork")
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for("the bus socket", || {
        dir.path()
            .join("bus")
            .exists()
            .then_some(())
            .ok_or_else(|| "none".into())
    });
    let spool = dir.path().join("spool");
    let svc = Service::start_with_args(
        Some(r#"{"autostart": false}"#),
        &["--rauc-bus", &bus, "--ota-spool", spool.to_str().unwrap()],
    );
    let v = wait_ota(&svc, "OTA reported unavailable", |v| {
        v["reason"]
            .as_str()
            .is_some_and(|r| r.contains("is not on"))
    });
    assert_eq!(v["available"], false, "{v}");
}

// 10 ------------------------------------------------------------------------

/// Headers and `Content-Length` of an upload of `len` bytes, on a new connection.
fn upload_head(svc: &Service, len: Option<usize>) -> std::net::TcpStream {
    let addr = svc.base.trim_start_matches("http://").to_string();
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    let length = match len {
        Some(n) => format!("Content-Length: {n}"),
        None => "Transfer-Encoding: chunked".to_string(),
    };
    write!(
        s,
        "POST /api/v1/ota/bundles HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/octet-stream\r\n{length}\r\n\r\n",
        svc.token
    )
    .unwrap();
    s
}

/// The status line and the body of the reply on `s` (read until the server closes, or
/// for at most `within`). A read interrupted by a signal is retried: with a receive
/// timeout set, Linux does not restart it (signal(7)), and the other tests of this
/// binary start and reap processes all the time; taking that `EINTR` for the end of
/// the reply read as a connection closed without one.
fn reply_of(s: &mut std::net::TcpStream, within: std::time::Duration) -> String {
    use std::io::Read;
    let deadline = std::time::Instant::now() + within;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            break;
        }
        s.set_read_timeout(Some(left)).unwrap();
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&out);
                if text.contains("\r\n\r\n") && text.trim_end().ends_with('}') {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    String::from_utf8_lossy(&out).to_string()
}

/// Defect: a bundle upload that sent its `Content-Length` and then stalled
/// blocked every other upload and install until the client went away. Now another
/// client uploads and installs meanwhile, and the stalled upload is answered 408 after
/// the stall limit (30 s by default), its partial file removed.
#[test]
fn a_stalled_upload_holds_up_no_other_upload_or_install_and_is_cut_off() {
    if !rauc_ready("stalled upload") {
        return;
    }
    let env = Rauc::start(true);
    let svc = env.service();
    wait_ota(&svc, "OTA available", |v| v["available"] == true);
    let bundle =
        std::fs::read(env.bundle("good", COMPATIBLE, &keys().good, &image(10), false)).unwrap();
    let mut slow = upload_head(&svc, Some(bundle.len()));
    slow.write_all(&bundle[..bundle.len() / 3]).unwrap();
    wait_for("the stalled upload's partial file", || {
        spool_files(&env)
            .iter()
            .any(|f| f.starts_with(".upload-"))
            .then_some(())
            .ok_or_else(|| format!("{:?}", spool_files(&env)))
    });
    let started = std::time::Instant::now();
    let r = upload(&svc, &bundle);
    assert_eq!(r.status, 201, "an upload while another stalls: {}", r.body);
    let sha = r.json()["sha256"].as_str().unwrap().to_string();
    assert_eq!(install(&svc, &sha).status, 202);
    let v = wait_ota(&svc, "the install's result", |v| {
        v["last_result"].is_object()
    });
    assert_eq!(v["last_result"]["ok"], true, "{v}");
    let reply = reply_of(&mut slow, PATIENCE * 2);
    assert!(
        reply.starts_with("HTTP/1.1 408") && reply.contains("urn:fpgagdr:problem:ota-upload-stall"),
        "after {:?}: {reply:?}",
        started.elapsed()
    );
    wait_for("the stalled upload's partial file removed", || {
        let f = spool_files(&env);
        (!f.iter().any(|f| f.starts_with(".upload-")))
            .then_some(())
            .ok_or_else(|| format!("{f:?}"))
    });
}

/// Defect: a chunked upload (no `Content-Length`) skipped the free-space
/// check. Here the spool's reserve is set so that 32 MiB more fill it: a chunked upload
/// of 256 MiB is refused with 507 once it would eat into the reserve, and nothing stays.
#[test]
fn a_chunked_upload_is_held_to_the_free_space_too() {
    if !rauc_ready("chunked upload and free space") {
        return;
    }
    let env = Rauc::start(true);
    let spool = env.path("spool");
    let st = nix::sys::statvfs::statvfs(&spool).unwrap();
    #[allow(clippy::unnecessary_cast)]
    let free = st.blocks_available() as u64 * st.fragment_size() as u64;
    let reserve = (free - (32 << 20)).to_string();
    let svc = env.service_with(&["--ota-spool-reserve-bytes", &reserve]);
    wait_ota(&svc, "OTA available", |v| v["available"] == true);
    let mut s = upload_head(&svc, None);
    let mut writer = s.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        let chunk = vec![0x5au8; 1 << 20];
        for _ in 0..256 {
            if write!(writer, "{:x}\r\n", chunk.len()).is_err()
                || writer.write_all(&chunk).is_err()
                || writer.write_all(b"\r\n").is_err()
            {
                return false;
            }
        }
        let _ = writer.write_all(b"0\r\n\r\n");
        true
    });
    let reply = reply_of(&mut s, PATIENCE);
    assert!(
        reply.starts_with("HTTP/1.1 507") && reply.contains("urn:fpgagdr:problem:ota-spool-space"),
        "{reply:?}"
    );
    drop(s);
    let _ = sender.join();
    wait_for("nothing left in the spool", || {
        let f = spool_files(&env);
        f.is_empty().then_some(()).ok_or_else(|| format!("{f:?}"))
    });
}
