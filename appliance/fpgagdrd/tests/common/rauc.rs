//! A throw-away RAUC for the OTA tests: Debian's real `rauc service` on a private D-Bus
//! bus, two file-backed slots, keys made by `images/rauc/make-dev-keys.sh`, bundles
//! built and signed on demand, the layer's boot-control backend and the `nvbootctrl`
//! test double (`images/rauc/test/nvbootctrl-test-double`) standing in for the Jetson's
//! bootloader. Used by `tests/ota.rs` and `tests/ota_hooks.rs`.
//!
//! RAUC mounts bundles (loop devices), so this needs root, `rauc`, `dbus-daemon` and
//! `mksquashfs` ([`rauc_ready`] says when they are missing).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use serde_json::{Value, json};

use super::{Reply, Service, wait_for};

pub(crate) const COMPATIBLE: &str = "fpgagdr-ci-test";
pub(crate) const SLOT_BYTES: u64 = 4 * 1024 * 1024;
pub(crate) const GUID: &str = "781e084c-a330-417c-b678-38e696380cb9";

pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
pub(crate) fn backend() -> PathBuf {
    repo().join("meta-fpgagdr/recipes-core/rauc/files/rauc-nvbootctrl-backend.sh")
}
pub(crate) fn test_double() -> PathBuf {
    repo().join("images/rauc/test/nvbootctrl-test-double")
}

/// Writes `DIR/bus.conf`, a `dbus-daemon` config for a private bus on `DIR/bus` that
/// lets everyone own and call everything; returns the bus address.
pub(crate) fn private_bus_conf(dir: &Path) -> String {
    let bus = format!("unix:path={}/bus", dir.display());
    std::fs::write(
        dir.join("bus.conf"),
        format!(
            "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\" \
             \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n\
             <busconfig><type>session</type><listen>{bus}</listen>\
             <policy context=\"default\"><allow own=\"*\"/><allow send_destination=\"*\"/>\
             <allow receive_sender=\"*\"/></policy></busconfig>\n"
        ),
    )
    .unwrap();
    bus
}

pub(crate) fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Why the RAUC tests cannot run here, if they cannot.
pub(crate) fn missing() -> Option<String> {
    let uid = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Some("not root (RAUC mounts bundles on loop devices)".into());
    }
    ["rauc", "dbus-daemon", "mksquashfs", "openssl"]
        .iter()
        .find(|c| !have(c))
        .map(|c| format!("{c} is not installed (apt-get install rauc dbus squashfs-tools openssl)"))
}

/// `true` when the test may go on; prints why it is skipped otherwise (or fails when
/// `FPGAGDR_REQUIRE_RAUC=1`).
pub(crate) fn rauc_ready(test: &str) -> bool {
    ready_unless(test, missing())
}

/// `true` when `missing` is `None`; otherwise prints why `test` is skipped and gives
/// `false`, or fails when `FPGAGDR_REQUIRE_RAUC=1` (CI).
pub(crate) fn ready_unless(test: &str, missing: Option<String>) -> bool {
    match missing {
        None => true,
        Some(why) => {
            assert!(
                std::env::var_os("FPGAGDR_REQUIRE_RAUC").is_none(),
                "{test}: FPGAGDR_REQUIRE_RAUC is set but {why}"
            );
            eprintln!("skipped: {test}: {why}");
            false
        }
    }
}

/// Keys for the whole test run: `good` is the keyring RAUC trusts, `other` a second CA
/// whose signer RAUC must refuse.
pub(crate) struct Keys {
    _dir: tempfile::TempDir,
    pub(crate) good: PathBuf,
    pub(crate) other: PathBuf,
}

pub(crate) fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let script = repo().join("images/rauc/make-dev-keys.sh");
        for name in ["good", "other"] {
            let out = Command::new(&script)
                .arg(dir.path().join(name))
                .output()
                .expect("run make-dev-keys.sh");
            assert!(out.status.success(), "make-dev-keys.sh: {out:?}");
        }
        Keys {
            good: dir.path().join("good"),
            other: dir.path().join("other"),
            _dir: dir,
        }
    })
}

/// A private bus with RAUC on it, two file-backed slots and the test double's state.
pub(crate) struct Rauc {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) bus: String,
    dbus: Child,
    rauc: Child,
}

impl Drop for Rauc {
    fn drop(&mut self) {
        for c in [&mut self.rauc, &mut self.dbus] {
            let _ = c.kill();
            let _ = c.wait();
        }
        if std::thread::panicking() {
            eprintln!(
                "--- rauc service log ---\n{}",
                std::fs::read_to_string(self.dir.path().join("rauc.log")).unwrap_or_default()
            );
        }
        // A bundle RAUC still had mounted when it was killed.
        let _ = Command::new("umount")
            .args(["-R", "-l"])
            .arg(self.dir.path().join("mnt/bundle"))
            .stderr(Stdio::null())
            .status();
    }
}

impl Rauc {
    /// Starts `dbus-daemon` and `rauc service` (booted from slot A); `ab` is whether the
    /// test double reports rootfs A/B redundancy.
    pub(crate) fn start(ab: bool) -> Rauc {
        Self::start_with(ab, "raw")
    }

    /// As [`Rauc::start`], with slots of RAUC type `slot_type` (`raw`, or `ext4`: RAUC
    /// then mounts the written slot for `slot-post-install` hooks). Also made: `running/`,
    /// the running system's root for the bundle hooks (`FPGAGDR_CARRY_FROM`), and `esp/`,
    /// the mounted ESP (`FPGAGDR_ESP_DIR`).
    pub(crate) fn start_with(ab: bool, slot_type: &str) -> Rauc {
        let dir = tempfile::tempdir().expect("temp dir");
        let d = dir.path();
        for sub in ["slots", "mnt", "efivars", "spool", "running", "esp"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        for slot in ["A", "B"] {
            let f = std::fs::File::create(d.join(format!("slots/{slot}.img"))).unwrap();
            f.set_len(SLOT_BYTES).unwrap();
        }
        // Slot A holds the running system: recognisable bytes the tests check stay put.
        std::fs::write(d.join("slots/A.img"), vec![0xA5u8; SLOT_BYTES as usize]).unwrap();
        std::fs::write(
            d.join("nvbootctrl.state"),
            format!("ab={}\ncurrent=0\nactive=0\n", u8::from(ab)),
        )
        .unwrap();
        let conf = format!(
            "[system]\ncompatible={COMPATIBLE}\nbootloader=custom\nmountprefix={d}/mnt\n\
             statusfile={d}/status.raucs\n\n[keyring]\npath={keys}/ca.cert.pem\n\
             check-purpose=codesign\n\n[handlers]\nbootloader-custom-backend={backend}\n\n\
             [slot.rootfs.0]\ndevice={d}/slots/A.img\ntype={slot_type}\nbootname=A\n\n\
             [slot.rootfs.1]\ndevice={d}/slots/B.img\ntype={slot_type}\nbootname=B\n",
            d = d.display(),
            keys = keys().good.display(),
            backend = backend().display(),
        );
        std::fs::write(d.join("system.conf"), conf).unwrap();
        let bus = private_bus_conf(d);
        let dbus = Command::new("dbus-daemon")
            .arg(format!("--config-file={}/bus.conf", d.display()))
            .arg("--nofork")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn dbus-daemon");
        wait_for("the private bus socket", || {
            d.join("bus")
                .exists()
                .then_some(())
                .ok_or_else(|| "no socket".into())
        });
        let rauc = Self::spawn_rauc(d, &bus, "A");
        let env = Rauc {
            dir,
            bus,
            dbus,
            rauc,
        };
        env.wait_rauc();
        env
    }

    /// `rauc service` on `bus`, booted from `boot_slot`, its log appended to `rauc.log`.
    fn spawn_rauc(d: &Path, bus: &str, boot_slot: &str) -> Child {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(d.join("rauc.log"))
            .unwrap();
        Self::rauc_command(d, bus)
            .arg("service")
            .arg(format!("--override-boot-slot={boot_slot}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn rauc service")
    }

    fn wait_rauc(&self) {
        wait_for("RAUC on the private bus", || {
            let out = Self::rauc_command(self.dir.path(), &self.bus)
                .arg("status")
                .output()
                .map_err(|e| e.to_string())?;
            out.status
                .success()
                .then_some(())
                .ok_or_else(|| String::from_utf8_lossy(&out.stderr).to_string())
        });
    }

    /// Kills `rauc service` with SIGKILL (a crash, the OOM killer, `systemctl kill`),
    /// unmounts what it left mounted, and starts it again, booted from `boot_slot`.
    pub(crate) fn restart_rauc(&mut self, boot_slot: &str) {
        let _ = self.rauc.kill();
        let _ = self.rauc.wait();
        let _ = Command::new("umount")
            .args(["-R", "-l"])
            .arg(self.dir.path().join("mnt/bundle"))
            .stderr(Stdio::null())
            .status();
        self.rauc = Self::spawn_rauc(self.dir.path(), &self.bus, boot_slot);
        self.wait_rauc();
    }

    /// `rauc` with this environment's config, bus and test double.
    pub(crate) fn rauc_command(d: &Path, bus: &str) -> Command {
        let mut c = Command::new("rauc");
        c.arg(format!("--conf={}/system.conf", d.display()))
            .env("DBUS_STARTER_BUS_TYPE", "session")
            .env("DBUS_SESSION_BUS_ADDRESS", bus)
            .env("FPGAGDR_NVBOOTCTRL", test_double())
            .env("FPGAGDR_EFIVARS_DIR", d.join("efivars"))
            .env("NVBOOTCTRL_TEST_STATE", d.join("nvbootctrl.state"))
            .env("FPGAGDR_CARRY_FROM", d.join("running"))
            .env("FPGAGDR_ESP_DIR", d.join("esp"))
            // The firmware's ESRT of this test (the bundle hooks read it), never the host's.
            .env("FPGAGDR_ESRT_DIR", d.join("esrt"));
        c
    }

    pub(crate) fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    pub(crate) fn slot(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.path(&format!("slots/{name}.img"))).unwrap()
    }

    /// The test double's state file.
    pub(crate) fn bootctrl(&self) -> String {
        std::fs::read_to_string(self.path("nvbootctrl.state")).unwrap()
    }

    /// The commands the backend gave the test double.
    pub(crate) fn bootctrl_log(&self) -> String {
        std::fs::read_to_string(self.path("nvbootctrl.state.log")).unwrap_or_default()
    }

    /// Builds a signed bundle whose rootfs image is `image`; `gate`: a post-install
    /// hook that holds the installation until [`Rauc::open_gate`].
    pub(crate) fn bundle(
        &self,
        name: &str,
        compatible: &str,
        signer: &Path,
        image: &[u8],
        gate: bool,
    ) -> PathBuf {
        let src = self.path(&format!("{name}.d"));
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("rootfs.img"), image).unwrap();
        let mut manifest = format!(
            "[update]\ncompatible={compatible}\nversion=2.0-{name}\n\n[bundle]\nformat=plain\n\n"
        );
        if gate {
            let hook = format!(
                "#!/bin/sh\n# Holds the installation (at most 120 s) until the test opens the gate.\n\
                 if [ \"$1\" = slot-post-install ]; then\n  i=0\n  while [ ! -e {g} ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done\n\
                 fi\nexit 0\n",
                g = self.path("gate").display()
            );
            std::fs::write(src.join("hook.sh"), hook).unwrap();
            Command::new("chmod")
                .arg("+x")
                .arg(src.join("hook.sh"))
                .status()
                .unwrap();
            manifest.push_str("[hooks]\nfilename=hook.sh\n\n[image.rootfs]\nfilename=rootfs.img\nhooks=post-install\n");
        } else {
            manifest.push_str("[image.rootfs]\nfilename=rootfs.img\n");
        }
        std::fs::write(src.join("manifest.raucm"), manifest).unwrap();
        self.sign(name, &src, signer)
    }

    /// Signs the bundle directory `src` (its `manifest.raucm` and files) with `signer`'s
    /// key into `NAME.raucb`.
    pub(crate) fn sign(&self, name: &str, src: &Path, signer: &Path) -> PathBuf {
        let out_path = self.path(&format!("{name}.raucb"));
        let out = Command::new("rauc")
            .arg(format!("--cert={}/signing.cert.pem", signer.display()))
            .arg(format!("--key={}/signing.key.pem", signer.display()))
            .arg("bundle")
            .arg(src)
            .arg(&out_path)
            .output()
            .expect("run rauc bundle");
        assert!(out.status.success(), "rauc bundle: {out:?}");
        out_path
    }

    /// Simulates a reboot into slot `letter` (`A`/`B`): the test double's current and
    /// active slot become it, and RAUC starts again booted from it.
    pub(crate) fn boot_into(&mut self, letter: &str) {
        let n = if letter == "A" { 0 } else { 1 };
        let ab = u8::from(self.bootctrl().contains("ab=1"));
        std::fs::write(
            self.path("nvbootctrl.state"),
            format!("ab={ab}\ncurrent={n}\nactive={n}\n"),
        )
        .unwrap();
        self.restart_rauc(letter);
    }

    /// `true` when the test double holds slot `letter` (`A`/`B`) unbootable.
    pub(crate) fn unbootable(&self, letter: &str) -> bool {
        std::fs::read(self.path(&format!("efivars/RootfsStatusSlot{letter}-{GUID}")))
            .is_ok_and(|v| v[4] != 0)
    }

    /// Runs the real `fpgagdrd --mark-good-after-health` against this RAUC on `bus`,
    /// probing the service at `listen` for `timeout_s`, with the OTA spool `spool`, the
    /// nvbootctrl test double, and a TEST DOUBLE of the reboot command (it only records
    /// that it was called; `systemctl reboot` on the device).
    pub(crate) fn mark_good(
        &self,
        bus: &str,
        listen: &str,
        timeout_s: &str,
        spool: &Path,
    ) -> Verdict {
        let flag = self.path("reboot-requested");
        let _ = std::fs::remove_file(&flag);
        let out = Command::new(env!("CARGO_BIN_EXE_fpgagdrd"))
            .args(["--mark-good-after-health", "--listen", listen])
            .args(["--rauc-bus", bus, "--health-timeout-s", timeout_s])
            .args(["--rauc-wait-s", "3"])
            .arg("--ota-spool")
            .arg(spool)
            .env("FPGAGDR_NVBOOTCTRL", test_double())
            .env("FPGAGDR_EFIVARS_DIR", self.path("efivars"))
            .env("NVBOOTCTRL_TEST_STATE", self.path("nvbootctrl.state"))
            // The card's node, the ESP and the ESRT of this test, never the host's.
            .env("FPGAGDR_CARD_NODE", self.path("dev-fpgagdr0"))
            .env("FPGAGDR_ESP_DIR", self.path("esp"))
            .env("FPGAGDR_ESRT_DIR", self.path("esrt"))
            .env(
                "FPGAGDR_REBOOT_COMMAND",
                format!("touch {}", flag.display()),
            )
            .output()
            .expect("run --mark-good-after-health");
        Verdict {
            ok: out.status.success(),
            said: format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
            rebooted: flag.exists(),
        }
    }

    pub(crate) fn open_gate(&self) {
        std::fs::write(self.path("gate"), "").unwrap();
    }

    /// Starts fpgagdrd on this bus, pipeline off.
    pub(crate) fn service(&self) -> Service {
        self.service_with(&[])
    }

    /// As [`Rauc::service`], with more command-line arguments.
    pub(crate) fn service_with(&self, extra: &[&str]) -> Service {
        let spool = self.path("spool");
        let mut args = vec![
            "--rauc-bus",
            &self.bus,
            "--ota-spool",
            spool.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        // RAUC 1.8 gives no reason over D-Bus when it refuses a bundle; the service asks
        // its command line, which needs this RAUC's system.conf.
        let conf = self.path("system.conf");
        Service::start_env(
            Some(r#"{"autostart": false}"#),
            &args,
            Some(super::TOKEN),
            &[("FPGAGDR_RAUC_CONF", conf.as_os_str())],
        )
    }
}

/// What one run of `fpgagdrd --mark-good-after-health` did.
pub(crate) struct Verdict {
    /// Exit status 0 (the boot may be confirmed to the bootloader).
    pub(crate) ok: bool,
    /// Its stdout and stderr.
    pub(crate) said: String,
    /// The reboot test double was called.
    pub(crate) rebooted: bool,
}

/// An address where no service answers: the appliance is not healthy.
pub(crate) const NOBODY: &str = "127.0.0.1:9";

/// `POST /api/v1/ota/bundles` with `bundle` as the body.
pub(crate) fn upload(svc: &Service, bundle: &[u8]) -> Reply {
    svc.request(
        "POST",
        "/api/v1/ota/bundles",
        Some(bundle),
        &[("content-type", "application/octet-stream")],
    )
}

/// `POST /api/v1/ota/install` for the spooled bundle `sha`.
pub(crate) fn install(svc: &Service, sha: &str) -> Reply {
    svc.request(
        "POST",
        "/api/v1/ota/install",
        Some(json!({"bundle": sha}).to_string().as_bytes()),
        &[],
    )
}

/// `GET /api/v1/ota`.
pub(crate) fn ota(svc: &Service) -> Value {
    svc.get_json("/api/v1/ota")
}

/// Polls `GET /api/v1/ota` until `accept` holds (bounded by [`super::PATIENCE`]).
pub(crate) fn wait_ota(svc: &Service, what: &str, accept: impl Fn(&Value) -> bool) -> Value {
    wait_for(what, || {
        let v = ota(svc);
        if accept(&v) {
            Ok(v)
        } else {
            Err(v.to_string())
        }
    })
}

/// Lower-case hex SHA-256 of `data` (the spool's name for a bundle).
pub(crate) fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
