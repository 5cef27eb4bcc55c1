//! The layer's real bundle hooks (`meta-fpgagdr/recipes-core/bundles/files/
//! fpgagdr-bundle-hooks.sh`, what `fpgagdr-bundle` ships) run by the real RAUC into ext4
//! slots that RAUC mounts: `install-check`, then `slot-post-install` carrying the
//! appliance's settings and state from the running system into the new slot and staging
//! the bootloader capsule; and an installation whose carry-over cannot complete fails
//! with the primary slot left alone.
//!
//! The running system is a directory (`FPGAGDR_CARRY_FROM`), the ESP another
//! (`FPGAGDR_ESP_DIR`), the UEFI variables a third, and `nvbootctrl` the test double of
//! `tests/common/rauc.rs`. Needs root, `rauc`, `dbus-daemon`, `mksquashfs` and
//! `mkfs.ext4`; skipped with the reason otherwise (a failure under `FPGAGDR_REQUIRE_RAUC=1`).

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::rauc::{
    COMPATIBLE, NOBODY, Rauc, have, install, keys, rauc_ready, ready_unless, repo, sha256_hex,
    upload, wait_ota,
};

/// Owner of `/etc/fpgagdr` in the new image: the `fpgagdr` user of another build.
const NEW_UID: u32 = 4242;
/// Owner of the running system's files: the `fpgagdr` user of this build.
const OLD_UID: u32 = 1234;
/// Size of the new image's ext4 file system, bytes (the slots are 4 MiB).
const IMAGE_BYTES: u64 = 3 * 1024 * 1024;
/// The bootloader capsule the bundle carries.
const CAPSULE: &[u8] = b"test capsule: stands in for meta-tegra's tegra-bl.cap";
/// The L4TLauncher of the bundle's release.
const LAUNCHER: &[u8] = b"test launcher: stands in for meta-tegra's BOOTAA64.efi";
/// The bundle's bootloader version (its `fpgagdr-boot.conf`): L4T 36.6.0.
const BUNDLE_FW: &str = "0x00240600";
const GLOBAL_GUID: &str = "8be4df61-93ca-11d2-aa0d-00e098032b8c";
/// The admin password the site set at the first login (a crypt hash).
const SITE_HASH: &str = "$6$site0salt$Q2hhbmdlZEJ5VGhlU2l0ZUF0Rmlyc3RMb2dpbg";
/// The image's initial admin password hash (expired: last change 0).
const INITIAL_HASH: &str = "$6$fpgagdr0initial$txLIuiA0auBsDbJtmFw";

fn hooks() -> PathBuf {
    repo().join("meta-fpgagdr/recipes-core/bundles/files/fpgagdr-bundle-hooks.sh")
}

fn ready(test: &str) -> bool {
    rauc_ready(test)
        && ready_unless(
            test,
            (!have("mkfs.ext4"))
                .then(|| "mkfs.ext4 is missing (apt-get install e2fsprogs)".to_string()),
        )
}

fn write(path: &Path, body: &[u8], mode: u32, uid: u32) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    std::os::unix::fs::chown(path, Some(uid), Some(uid)).unwrap();
}

/// The running system's settings and state (what an appliance in the field has).
fn running_system(root: &Path) {
    write(
        &root.join("etc/fpgagdr/config.json"),
        br#"{"source": {"fps": 25}}"#,
        0o600,
        OLD_UID,
    );
    write(
        &root.join("etc/fpgagdr/token"),
        b"site-token-0123456789abcdef\n",
        0o600,
        OLD_UID,
    );
    std::os::unix::fs::chown(root.join("etc/fpgagdr"), Some(OLD_UID), Some(OLD_UID)).unwrap();
    write(
        &root.join("var/lib/fpgagdr/state/history.bin"),
        &[7u8; 4096],
        0o640,
        OLD_UID,
    );
    std::fs::set_permissions(
        root.join("var/lib/fpgagdr/state"),
        std::fs::Permissions::from_mode(0o750),
    )
    .unwrap();
    write(
        &root.join("var/lib/fpgagdr/ota/pending.raucb"),
        &[1u8; 65536],
        0o600,
        OLD_UID,
    );
    write(
        &root.join("var/lib/fpgagdr/ota/mark-good.stamp"),
        b"A factory\n",
        0o600,
        OLD_UID,
    );
    write(
        &root.join("etc/default/fpgagdrd"),
        b"FPGAGDRD_LISTEN=0.0.0.0:9090\n",
        0o644,
        0,
    );
    write(
        &root.join("etc/machine-id"),
        b"0123456789abcdef0123456789abcdef\n",
        0o444,
        0,
    );
    write(
        &root.join("etc/ssh/ssh_host_ed25519_key"),
        b"private host key\n",
        0o600,
        0,
    );
    write(
        &root.join("etc/ssh/ssh_host_ed25519_key.pub"),
        b"public host key\n",
        0o644,
        0,
    );
    write(
        &root.join("etc/rauc-hawkbit-updater/config.conf"),
        b"[client]\nhawkbit_server = hawkbit.example:8080\n",
        0o600,
        0,
    );
    // The admin user: its password changed at the first login, a key added at flash time.
    write(
        &root.join("etc/passwd"),
        format!(
            "root:x:0:0:root:/home/root:/bin/sh\nadmin:x:{OLD_UID}:{OLD_UID}::/home/admin:/bin/sh\n"
        )
        .as_bytes(),
        0o644,
        0,
    );
    write(
        &root.join("etc/shadow"),
        format!("root:*:19000:0:99999:7:::\nadmin:{SITE_HASH}:20400:0:99999:7:::\n").as_bytes(),
        0o400,
        0,
    );
    write(
        &root.join("home/admin/.ssh/authorized_keys"),
        b"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAISiteKey me@laptop\n",
        0o600,
        OLD_UID,
    );
    let wants = root.join("etc/systemd/system/multi-user.target.wants");
    std::fs::create_dir_all(&wants).unwrap();
    std::os::unix::fs::symlink(
        "/usr/lib/systemd/system/rauc-hawkbit-updater.service",
        wants.join("rauc-hawkbit-updater.service"),
    )
    .unwrap();
}

/// The new version's root file system as an ext4 image (`mkfs.ext4 -d`, no mount).
fn new_rootfs(dir: &Path) -> PathBuf {
    let tree = new_rootfs_tree(dir);
    let img = dir.join("rootfs.ext4");
    let out = Command::new("mkfs.ext4")
        .args(["-q", "-F", "-b", "1024", "-O", "^has_journal", "-d"])
        .arg(&tree)
        .arg(&img)
        .arg(format!("{}k", IMAGE_BYTES / 1024))
        .output()
        .expect("run mkfs.ext4");
    assert!(out.status.success(), "mkfs.ext4: {out:?}");
    img
}

/// The new version's root file system as a directory tree, `DIR/new-rootfs`.
fn new_rootfs_tree(dir: &Path) -> PathBuf {
    let tree = dir.join("new-rootfs");
    write(&tree.join("etc/fpgagdr-release"), b"2.0\n", 0o644, 0);
    write(
        &tree.join("etc/default/fpgagdrd"),
        b"FPGAGDRD_LISTEN=0.0.0.0:8080\n",
        0o644,
        0,
    );
    write(&tree.join("etc/machine-id"), b"", 0o444, 0);
    // The new image's admin user (another uid), with the initial, expired password.
    write(
        &tree.join("etc/passwd"),
        format!(
            "root:x:0:0:root:/home/root:/bin/sh\nfpgagdr:x:999:999::/var/lib/fpgagdr:/sbin/nologin\n\
             admin:x:{NEW_UID}:{NEW_UID}::/home/admin:/bin/sh\n"
        )
        .as_bytes(),
        0o644,
        0,
    );
    write(
        &tree.join("etc/shadow"),
        format!("root:*:0:0:99999:7:::\nfpgagdr:!:0::::::\nadmin:{INITIAL_HASH}:0:0:99999:7:::\n")
            .as_bytes(),
        0o400,
        0,
    );
    std::fs::create_dir_all(tree.join("home/admin")).unwrap();
    std::os::unix::fs::chown(tree.join("home/admin"), Some(NEW_UID), Some(NEW_UID)).unwrap();
    std::fs::create_dir_all(tree.join("etc/fpgagdr")).unwrap();
    std::fs::set_permissions(
        tree.join("etc/fpgagdr"),
        std::fs::Permissions::from_mode(0o750),
    )
    .unwrap();
    std::os::unix::fs::chown(tree.join("etc/fpgagdr"), Some(NEW_UID), Some(NEW_UID)).unwrap();
    tree
}

/// A signed bundle with the new rootfs, the layer's hooks and a capsule, for this
/// system's compatible.
fn bundle(env: &Rauc) -> PathBuf {
    bundle_for(env, "hooks", COMPATIBLE, true)
}

/// A signed bundle `NAME.raucb` laid out as `fpgagdr-bundle` builds it: the new rootfs
/// (ext4), the layer's hook script declared for `install-check` and the rootfs slot's
/// `post-install`, for `compatible`, with the bootloader capsule when `capsule`.
fn bundle_for(env: &Rauc, name: &str, compatible: &str, capsule: bool) -> PathBuf {
    let src = env.path(&format!("{name}-bundle.d"));
    std::fs::create_dir_all(&src).unwrap();
    let work = env.path(&format!("{name}-rootfs"));
    std::fs::create_dir_all(&work).unwrap();
    std::fs::rename(new_rootfs(&work), src.join("rootfs.ext4")).unwrap();
    std::fs::copy(hooks(), src.join("hooks.sh")).unwrap();
    std::fs::set_permissions(src.join("hooks.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    if capsule {
        boot_chain_files(&src);
    }
    std::fs::write(
        src.join("manifest.raucm"),
        format!(
            "[update]\ncompatible={compatible}\nversion=2.0-{name}\n\n[bundle]\nformat=plain\n\n\
             [hooks]\nfilename=hooks.sh\nhooks=install-check\n\n\
             [image.rootfs]\nfilename=rootfs.ext4\nhooks=post-install\n"
        ),
    )
    .unwrap();
    env.sign(name, &src, &keys().good)
}

/// The boot chain a bundle carries, as `fpgagdr-bundle` puts it there: the capsule, the
/// L4TLauncher and their version.
fn boot_chain_files(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("tegra-bl.cap"), CAPSULE).unwrap();
    std::fs::write(dir.join("BOOTAA64.efi"), LAUNCHER).unwrap();
    std::fs::write(
        dir.join("fpgagdr-boot.conf"),
        format!("bootloader_version={BUNDLE_FW}\nl4t_version=36.6.0\n"),
    )
    .unwrap();
}

/// The running firmware's ESRT entry under `esrt` (decimal, as the kernel writes it).
fn esrt(esrt: &Path, version: u32, lowest: u32) {
    let e = esrt.join("entries/entry0");
    std::fs::create_dir_all(&e).unwrap();
    for (k, v) in [
        ("fw_type", 1),
        ("fw_version", version),
        ("lowest_supported_fw_version", lowest),
        ("last_attempt_version", 0),
        ("last_attempt_status", 0),
    ] {
        std::fs::write(e.join(k), format!("{v}\n")).unwrap();
    }
}

fn rauc_install(env: &Rauc, bundle: &Path) -> std::process::Output {
    Rauc::rauc_command(env.dir.path(), &env.bus)
        .arg("install")
        .arg(bundle)
        .output()
        .expect("run rauc install")
}

/// A root file system to inspect.
struct Root(PathBuf);

impl Root {
    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.0.join(rel)).unwrap_or_else(|e| panic!("/{rel}: {e}"))
    }

    /// (mode bits, uid, gid) of `rel`.
    fn meta(&self, rel: &str) -> (u32, u32, u32) {
        let m =
            std::fs::symlink_metadata(self.0.join(rel)).unwrap_or_else(|e| panic!("/{rel}: {e}"));
        (m.mode() & 0o7777, m.uid(), m.gid())
    }
}

/// Slot B mounted read-only for inspection; unmounted on drop.
struct Mounted(Root);

impl Mounted {
    fn slot_b(env: &Rauc) -> Mounted {
        let at = env.path("inspect");
        std::fs::create_dir_all(&at).unwrap();
        let out = Command::new("mount")
            .args(["-o", "loop,ro"])
            .arg(env.path("slots/B.img"))
            .arg(&at)
            .output()
            .expect("run mount");
        assert!(out.status.success(), "mount slot B: {out:?}");
        Mounted(Root(at))
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0.0).status();
    }
}

/// Every path under `root`, relative, sorted.
fn tree(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            out.push(p.strip_prefix(root).unwrap().display().to_string());
            if e.file_type().unwrap().is_dir() {
                todo.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Asserts that `b`, the new slot's root, holds every item [`running_system`] carries
/// over (contents, modes, the new image's owner), not the OTA spool, and its own files.
#[track_caller]
fn assert_carried_over(b: &Root) {
    // The new image itself is there, and its own files stay where nothing replaced them.
    assert_eq!(b.read("etc/fpgagdr-release"), "2.0\n");
    // Config and token: the site's, with their modes, owned by the new image's user.
    assert_eq!(
        b.read("etc/fpgagdr/config.json"),
        r#"{"source": {"fps": 25}}"#
    );
    assert_eq!(b.read("etc/fpgagdr/token"), "site-token-0123456789abcdef\n");
    assert_eq!(b.meta("etc/fpgagdr/config.json"), (0o600, NEW_UID, NEW_UID));
    assert_eq!(b.meta("etc/fpgagdr/token"), (0o600, NEW_UID, NEW_UID));
    assert_eq!(b.meta("etc/fpgagdr"), (0o750, NEW_UID, NEW_UID));
    // State, without the OTA spool (the bundle itself, and this slot's mark-good stamp).
    assert_eq!(b.meta("var/lib/fpgagdr/state"), (0o750, NEW_UID, NEW_UID));
    assert_eq!(
        b.meta("var/lib/fpgagdr/state/history.bin"),
        (0o640, NEW_UID, NEW_UID)
    );
    assert_eq!(
        std::fs::read(b.0.join("var/lib/fpgagdr/state/history.bin")).unwrap(),
        [7u8; 4096]
    );
    // The new slot's spool holds only the installation marker for mark-good.
    let spool = tree(&b.0.join("var/lib/fpgagdr/ota"));
    assert_eq!(spool, ["installation"], "the OTA spool was carried over");
    let marker = b.read("var/lib/fpgagdr/ota/installation");
    let id = marker
        .lines()
        .find_map(|l| l.strip_prefix("id="))
        .unwrap_or("");
    assert_eq!(id.len(), 36, "a uuid per installation: {marker}");
    // Site settings and the device's identity.
    assert_eq!(
        b.read("etc/default/fpgagdrd"),
        "FPGAGDRD_LISTEN=0.0.0.0:9090\n"
    );
    assert_eq!(
        b.read("etc/machine-id"),
        "0123456789abcdef0123456789abcdef\n"
    );
    assert_eq!(b.read("etc/ssh/ssh_host_ed25519_key"), "private host key\n");
    assert_eq!(b.meta("etc/ssh/ssh_host_ed25519_key"), (0o600, 0, 0));
    assert_eq!(
        b.read("etc/ssh/ssh_host_ed25519_key.pub"),
        "public host key\n"
    );
    // Fleet updates stay configured and enabled.
    assert!(
        b.read("etc/rauc-hawkbit-updater/config.conf")
            .contains("hawkbit.example")
    );
    let link =
        b.0.join("etc/systemd/system/multi-user.target.wants/rauc-hawkbit-updater.service");
    assert_eq!(
        std::fs::read_link(link).unwrap(),
        Path::new("/usr/lib/systemd/system/rauc-hawkbit-updater.service")
    );
    // The admin user keeps its password (not expired again) and its SSH keys; everything
    // else of the new image's accounts stays the new image's.
    assert_eq!(
        b.read("etc/shadow"),
        format!("root:*:0:0:99999:7:::\nfpgagdr:!:0::::::\nadmin:{SITE_HASH}:20400:0:99999:7:::\n")
    );
    assert_eq!(b.meta("etc/shadow"), (0o400, 0, 0));
    assert!(
        b.read("etc/passwd")
            .contains(&format!("admin:x:{NEW_UID}:"))
    );
    assert_eq!(
        b.read("home/admin/.ssh/authorized_keys"),
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAISiteKey me@laptop\n"
    );
    assert_eq!(
        b.meta("home/admin/.ssh/authorized_keys"),
        (0o600, NEW_UID, NEW_UID)
    );
    assert_eq!(b.meta("home/admin/.ssh"), (0o700, NEW_UID, NEW_UID));
    let all = tree(&b.0);
    assert!(
        all.iter().all(|p| !p.contains("fpgagdr-new")),
        "temporary files left: {all:#?}"
    );
}

/// Asserts that the capsule is on the ESP and UEFI was asked to apply it
/// (`OsIndications`, bit 2: file capsule delivery).
#[track_caller]
fn assert_capsule_staged(esp: &Path, efivars: &Path) {
    assert_eq!(
        std::fs::read(esp.join("EFI/UpdateCapsule/TEGRA_BL.Cap")).unwrap(),
        CAPSULE
    );
    assert_eq!(
        std::fs::read(esp.join("EFI/BOOT/BOOTAA64.efi")).unwrap(),
        LAUNCHER,
        "the launcher of the capsule's release is on the ESP"
    );
    let pending = std::fs::read_to_string(esp.join("EFI/fpgagdr/capsule-pending")).unwrap();
    assert!(pending.contains("target=B\n"), "{pending}");
    assert!(
        pending.contains(&format!("version={BUNDLE_FW}\n")),
        "{pending}"
    );
    assert_eq!(
        std::fs::read(efivars.join(format!("OsIndications-{GLOBAL_GUID}"))).unwrap(),
        [7, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0]
    );
}

#[test]
fn an_update_carries_settings_and_state_into_the_new_slot_and_stages_the_capsule() {
    if !ready("carry-over") {
        return;
    }
    let env = Rauc::start_with(true, "ext4");
    running_system(&env.path("running"));
    let bundle = bundle(&env);
    let out = rauc_install(&env, &bundle);
    assert!(
        out.status.success(),
        "rauc install: {out:?}\n{}",
        std::fs::read_to_string(env.path("rauc.log")).unwrap_or_default()
    );
    assert_eq!(rauc_status(&env)["boot_primary"], "rootfs.1");

    assert_carried_over(&Mounted::slot_b(&env).0);
    assert_capsule_staged(&env.path("esp"), &env.path("efivars"));
    // The running system was only read.
    assert!(
        env.path("running/var/lib/fpgagdr/ota/pending.raucb")
            .exists()
    );
}

#[test]
fn an_update_whose_state_does_not_fit_fails_and_the_primary_stays() {
    if !ready("carry-over that cannot complete") {
        return;
    }
    let env = Rauc::start_with(true, "ext4");
    let running = env.path("running");
    running_system(&running);
    // More state than the new slot's 3 MiB file system holds.
    write(
        &running.join("var/lib/fpgagdr/state/recording.bin"),
        &vec![3u8; 6 * 1024 * 1024],
        0o640,
        OLD_UID,
    );
    let out = rauc_install(&env, &bundle(&env));
    assert!(!out.status.success(), "rauc install succeeded: {out:?}");
    let log = std::fs::read_to_string(env.path("rauc.log")).unwrap_or_default();
    assert!(
        log.contains("cannot carry /var/lib/fpgagdr/state into the new slot"),
        "{log}"
    );
    // Nothing switched, nothing staged: the half-written slot B is never booted.
    let st = env.bootctrl();
    assert!(st.contains("active=0") && st.contains("current=0"), "{st}");
    assert!(
        tree(&env.path("esp")).is_empty(),
        "{:?}",
        tree(&env.path("esp"))
    );
    let v = rauc_status(&env);
    assert_eq!(v["boot_primary"], "rootfs.0", "{v}");
}

/// `rauc status --detailed` as JSON.
fn rauc_status(env: &Rauc) -> serde_json::Value {
    let out = Rauc::rauc_command(env.dir.path(), &env.bus)
        .args(["status", "--detailed", "--output-format=json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "rauc status: {out:?}");
    serde_json::from_slice(&out.stdout).expect("rauc status json")
}

/// The value bytes of the fake `OsIndications` variable (after its 4 attribute bytes),
/// or `None` when it does not exist.
fn os_indications(env: &Rauc) -> Option<Vec<u8>> {
    std::fs::read(env.path(&format!("efivars/OsIndications-{GLOBAL_GUID}")))
        .ok()
        .map(|v| v[4..].to_vec())
}

#[test]
fn the_post_install_hook_works_with_busybox_as_on_the_image() {
    // The image's shell and tools are busybox (packagegroup-core-boot), not Debian's dash
    // and coreutils that RAUC uses above: run the hook with Debian's busybox applets alone.
    let root = Command::new("id").arg("-u").output().unwrap().stdout == b"0\n";
    if !ready_unless(
        "busybox hooks",
        (!root || !have("busybox")).then(|| "needs root (file owners) and busybox".to_string()),
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    running_system(&d.join("running"));
    let slot = new_rootfs_tree(d);
    boot_chain_files(&d.join("bundle"));
    for sub in ["esp", "efivars", "applets"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    let install = Command::new("busybox")
        .arg("--install")
        .arg("-s")
        .arg(d.join("applets"))
        .status()
        .unwrap();
    assert!(install.success());
    let out = Command::new(d.join("applets/sh"))
        .arg(hooks())
        .arg("slot-post-install")
        .env_clear()
        .env("PATH", d.join("applets"))
        .env("RAUC_SLOT_CLASS", "rootfs")
        .env("RAUC_SLOT_BOOTNAME", "B")
        .env("RAUC_SLOT_MOUNT_POINT", &slot)
        .env("RAUC_BUNDLE_MOUNT_POINT", d.join("bundle"))
        .env("FPGAGDR_CARRY_FROM", d.join("running"))
        .env("FPGAGDR_ESP_DIR", d.join("esp"))
        .env("FPGAGDR_EFIVARS_DIR", d.join("efivars"))
        .output()
        .unwrap();
    assert!(out.status.success(), "hook under busybox: {out:?}");
    assert_carried_over(&Root(slot));
    assert_capsule_staged(&d.join("esp"), &d.join("efivars"));

    // install-check: RAUC's rejection code and reason for another board; accepted for
    // this one (and the capsule staged above is withdrawn).
    std::fs::write(d.join("nvbootctrl.state"), "ab=1\ncurrent=0\nactive=0\n").unwrap();
    let check = |mf: &str| {
        Command::new(d.join("applets/sh"))
            .arg(hooks())
            .arg("install-check")
            .env_clear()
            .env("PATH", d.join("applets"))
            .env("RAUC_SYSTEM_COMPATIBLE", COMPATIBLE)
            .env("RAUC_MF_COMPATIBLE", mf)
            .env("FPGAGDR_ESP_DIR", d.join("esp"))
            .env("FPGAGDR_EFIVARS_DIR", d.join("efivars"))
            .env("FPGAGDR_NVBOOTCTRL", common::rauc::test_double())
            .env("NVBOOTCTRL_TEST_STATE", d.join("nvbootctrl.state"))
            .output()
            .unwrap()
    };
    let out = check("fpgagdr-jetson-agx-orin-devkit");
    assert_eq!(out.status.code(), Some(10), "{out:?}");
    let reason = String::from_utf8_lossy(&out.stderr);
    assert!(reason.contains("compatible mismatch"), "{reason}");
    let out = check(COMPATIBLE);
    assert!(out.status.success(), "{out:?}");
    let ind = std::fs::read(d.join(format!("efivars/OsIndications-{GLOBAL_GUID}"))).unwrap();
    assert_eq!(ind[4] & 4, 0, "the staged capsule was not withdrawn");
    assert!(!d.join("esp/EFI/UpdateCapsule/TEGRA_BL.Cap").exists());
    assert!(!d.join("esp/EFI/fpgagdr/capsule-pending").exists());
}

/// Asserts that an installation changed nothing: slot B never written, the boot chain
/// not switched, no slot marked unbootable, no capsule staged.
#[track_caller]
fn assert_nothing_installed(env: &Rauc) {
    let b = std::fs::read(env.path("slots/B.img")).unwrap();
    assert!(b.iter().all(|x| *x == 0), "slot B was written");
    let st = env.bootctrl();
    assert!(st.contains("active=0") && st.contains("current=0"), "{st}");
    let log = env.bootctrl_log();
    assert!(!log.contains("set-slot-as-unbootable"), "{log}");
    assert!(!log.contains("set-active-boot-slot"), "{log}");
    assert!(
        tree(&env.path("esp")).is_empty(),
        "{:?}",
        tree(&env.path("esp"))
    );
    assert!(
        !env.path(&format!("efivars/OsIndications-{GLOBAL_GUID}"))
            .exists()
    );
}

/// The compatible of the other Jetson the layer builds for: its bundle must never
/// install here.
const OTHER_BOARD: &str = "fpgagdr-jetson-agx-orin-devkit";

#[test]
fn a_bundle_for_another_board_is_refused_by_the_hook_through_rauc_install_and_the_api() {
    // RAUC runs a bundle's install-check hook *instead of* its own compatible check, so
    // the hook itself must compare them. The real bundle layout, the real hook.
    if !ready("wrong compatible, real hook") {
        return;
    }
    let env = Rauc::start_with(true, "ext4");
    running_system(&env.path("running"));
    let path = bundle_for(&env, "agx", OTHER_BOARD, true);

    // 1. `rauc install` (what a shell, hawkBit or a spooled file amounts to).
    let out = rauc_install(&env, &path);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "rauc install succeeded: {said}");
    assert!(
        said.contains(OTHER_BOARD) && said.contains(COMPATIBLE),
        "the refusal names both compatibles: {said}"
    );
    assert_nothing_installed(&env);

    // 2. Through the API: the upload check refuses it ...
    let svc = env.service();
    wait_ota(&svc, "OTA available", |v| v["available"] == true);
    let bytes = std::fs::read(&path).unwrap();
    let p = upload(&svc, &bytes).problem(422, "ota-bundle");
    assert!(
        p["detail"].as_str().unwrap_or("").contains(OTHER_BOARD),
        "{p}"
    );
    // ... and a bundle already in the spool (left by an earlier version, or copied there)
    // is refused by RAUC through the hook when installed.
    let sha = sha256_hex(&bytes);
    std::fs::copy(&path, env.path(&format!("spool/{sha}.raucb"))).unwrap();
    assert_eq!(install(&svc, &sha).status, 202);
    let v = wait_ota(&svc, "the refusal", |v| v["last_result"].is_object());
    assert_eq!(v["last_result"]["ok"], false, "{v}");
    let err = v["last_result"]["error"].as_str().unwrap_or("");
    assert!(err.contains(OTHER_BOARD), "{v}");
    assert_eq!(v["primary_slot"], "rootfs.0", "{v}");
    assert_nothing_installed(&env);
}

/// `RootfsStatusSlotB` as the test double keeps it: `true` when normal (bootable).
fn slot_b_bootable(env: &Rauc) -> bool {
    let var = env.path(&format!("efivars/RootfsStatusSlotB-{}", common::rauc::GUID));
    std::fs::read(var).map_or(true, |v| v[4] == 0)
}

#[test]
fn with_a_capsule_the_boot_chain_switch_is_left_to_the_firmware() {
    // On L4T R36 the rootfs slot follows the boot chain, and a staged capsule makes UEFI
    // update the other boot chain and switch to it; switching the chain by hand
    // (nvbootctrl set-active-boot-slot) before that would cancel the capsule update.
    if !ready("capsule: firmware switches") {
        return;
    }
    let env = Rauc::start_with(true, "ext4");
    running_system(&env.path("running"));
    let out = rauc_install(&env, &bundle(&env));
    assert!(out.status.success(), "rauc install: {out:?}");
    assert_capsule_staged(&env.path("esp"), &env.path("efivars"));
    let log = env.bootctrl_log();
    assert!(
        !log.contains("set-active-boot-slot"),
        "the boot chain was switched by hand before the capsule applied:\n{log}"
    );
    let st = env.bootctrl();
    assert!(st.contains("active=0"), "{st}");
    // RAUC marked B unbootable when it began; it must be bootable for UEFI to switch.
    assert!(slot_b_bootable(&env), "slot B left unbootable");
    // What boots next is the chain the capsule switches to.
    assert_eq!(rauc_status(&env)["boot_primary"], "rootfs.1");

    // A later installation without a capsule, before any reboot: the capsule staged by
    // the first is withdrawn (it belongs to another bundle) and the chain is switched.
    let out = rauc_install(&env, &bundle_for(&env, "nocap", COMPATIBLE, false));
    assert!(out.status.success(), "rauc install: {out:?}");
    let ind = os_indications(&env).expect("OsIndications");
    assert_eq!(ind[0] & 4, 0, "the first capsule is still staged: {ind:?}");
    assert!(env.bootctrl_log().contains("set-active-boot-slot 1"));
    assert!(env.bootctrl().contains("active=1"), "{}", env.bootctrl());
    assert!(!env.path("esp/EFI/UpdateCapsule/TEGRA_BL.Cap").exists());
}

#[test]
fn marking_the_booted_slot_active_withdraws_a_staged_capsule() {
    // `rauc status mark-active booted` after an update means "stay here": the capsule
    // would otherwise switch the boot chain at the next boot all the same.
    if !ready("capsule: mark-active booted") {
        return;
    }
    let env = Rauc::start_with(true, "ext4");
    running_system(&env.path("running"));
    assert!(rauc_install(&env, &bundle(&env)).status.success());
    assert_eq!(os_indications(&env).expect("OsIndications")[0] & 4, 4);
    let out = Rauc::rauc_command(env.dir.path(), &env.bus)
        .args(["status", "mark-active", "booted"])
        .output()
        .unwrap();
    assert!(out.status.success(), "mark-active booted: {out:?}");
    assert_eq!(os_indications(&env).expect("OsIndications")[0] & 4, 0);
    assert!(env.bootctrl().contains("active=0"), "{}", env.bootctrl());
    assert_eq!(rauc_status(&env)["boot_primary"], "rootfs.0");
}

#[test]
fn after_an_update_mark_good_judges_the_new_slot_by_the_marker_the_hook_wrote() {
    // The chain on one device: the real hook installs slot B and leaves its installation
    // marker there; after the "reboot" into B the real mark-good reads B's spool, finds
    // an update (not a factory boot), the service unhealthy and slot A good: B is marked
    // bad and the reboot requested.
    if !ready("hook marker -> mark-good") {
        return;
    }
    let mut env = Rauc::start_with(true, "ext4");
    running_system(&env.path("running"));
    let out = rauc_install(&env, &bundle_for(&env, "plain", COMPATIBLE, false));
    assert!(out.status.success(), "rauc install: {out:?}");
    env.boot_into("B");
    let root = env.path("slot-b");
    std::fs::create_dir_all(&root).unwrap();
    let m = Command::new("mount")
        .args(["-o", "loop"])
        .arg(env.path("slots/B.img"))
        .arg(&root)
        .status()
        .unwrap();
    assert!(m.success(), "mount slot B");
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _b = Unmount(root.clone());
    let v = env.mark_good(&env.bus, NOBODY, "1", &root.join("var/lib/fpgagdr/ota"));
    assert!(env.unbootable("B"), "B not marked bad: {}", v.said);
    assert!(v.rebooted && !v.ok, "{}", v.said);
    assert!(!env.unbootable("A"));
}

#[test]
fn a_capsule_after_a_switch_by_hand_puts_the_chain_back_for_the_firmware() {
    // A first update without a capsule switched the chain by hand (active B, still
    // running A); a second one, with a capsule, before any reboot: the firmware applies
    // a capsule only when the active chain is the current one, so the backend puts it
    // back and leaves the switch to the capsule update.
    if !ready("capsule after a switch by hand") {
        return;
    }
    let env = Rauc::start_with(true, "ext4");
    running_system(&env.path("running"));
    let out = rauc_install(&env, &bundle_for(&env, "nocap", COMPATIBLE, false));
    assert!(out.status.success(), "rauc install: {out:?}");
    assert!(env.bootctrl().contains("active=1"), "{}", env.bootctrl());
    let out = rauc_install(&env, &bundle(&env));
    assert!(out.status.success(), "rauc install: {out:?}");
    assert_capsule_staged(&env.path("esp"), &env.path("efivars"));
    let st = env.bootctrl();
    assert!(st.contains("active=0") && st.contains("current=0"), "{st}");
    assert!(slot_b_bootable(&env), "slot B left unbootable");
    assert_eq!(rauc_status(&env)["boot_primary"], "rootfs.1");
}

#[test]
fn the_capsule_is_staged_only_for_a_chain_without_its_version_and_never_as_a_downgrade() {
    if !ready("capsule: install if different") {
        return;
    }
    // Both chains hold the bundle's bootloader already (mark-good's record): the update
    // goes in like one without a capsule, the chain switched by the backend.
    let env = Rauc::start_with(true, "ext4");
    running_system(&env.path("running"));
    std::fs::create_dir_all(env.path("esp/EFI/fpgagdr")).unwrap();
    std::fs::write(
        env.path("esp/EFI/fpgagdr/boot-chains"),
        format!("A={BUNDLE_FW}\nB={BUNDLE_FW}\n"),
    )
    .unwrap();
    let out = rauc_install(&env, &bundle(&env));
    assert!(out.status.success(), "{out:?}");
    assert!(!env.path("esp/EFI/UpdateCapsule/TEGRA_BL.Cap").exists());
    assert!(!env.path("esp/EFI/fpgagdr/capsule-pending").exists());
    assert_eq!(os_indications(&env).map(|v| v[4] & 4).unwrap_or(0), 0);
    assert!(
        env.bootctrl_log().contains("set-active-boot-slot 1"),
        "without a capsule the backend switches the chain:\n{}",
        env.bootctrl_log()
    );

    // Chain B holds another version: staged, and B drops out of the record until the
    // firmware reports it.
    let env = Rauc::start_with(true, "ext4");
    running_system(&env.path("running"));
    std::fs::create_dir_all(env.path("esp/EFI/fpgagdr")).unwrap();
    std::fs::write(
        env.path("esp/EFI/fpgagdr/boot-chains"),
        format!("A={BUNDLE_FW}\nB=0x00240500\n"),
    )
    .unwrap();
    let out = rauc_install(&env, &bundle(&env));
    assert!(out.status.success(), "{out:?}");
    assert_capsule_staged(&env.path("esp"), &env.path("efivars"));
    let record = std::fs::read_to_string(env.path("esp/EFI/fpgagdr/boot-chains")).unwrap();
    assert_eq!(record, format!("A={BUNDLE_FW}\n"));

    // A firmware that accepts nothing below 36.7 (no downgrade): refused before anything
    // is written, with RAUC's rejection and the reason.
    let env = Rauc::start_with(true, "ext4");
    running_system(&env.path("running"));
    esrt(&env.path("esrt"), 0x0024_0700, 0x0024_0700);
    let out = rauc_install(&env, &bundle(&env));
    assert!(!out.status.success(), "a downgrade was installed: {out:?}");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(env.path("rauc.log")).unwrap_or_default()
    );
    assert!(said.contains("no bootloader downgrade"), "{said}");
    assert_nothing_installed(&env);
}

#[test]
fn the_installation_marker_records_whether_the_appliance_has_its_card() {
    if !ready("card recorded") {
        return;
    }
    for card in [false, true] {
        let env = Rauc::start_with(true, "ext4");
        running_system(&env.path("running"));
        if card {
            // The fpgagdr module's control node on the running system.
            std::fs::create_dir_all(env.path("running/dev")).unwrap();
            std::fs::write(env.path("running/dev/fpgagdr0"), "").unwrap();
        }
        let out = rauc_install(&env, &bundle_for(&env, "card", COMPATIBLE, false));
        assert!(out.status.success(), "{out:?}");
        let b = Mounted::slot_b(&env);
        let marker = b.0.read("var/lib/fpgagdr/ota/installation");
        let want = if card {
            "card=present\n"
        } else {
            "card=absent\n"
        };
        assert!(marker.contains(want), "{marker}");
    }
}
