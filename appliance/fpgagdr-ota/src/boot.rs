//! The boot chain's firmware (Jetson QSPI bootloaders and UEFI), as an update sees it:
//! which firmware version runs, which version each of the two boot chains holds, and
//! what became of a bootloader capsule an update staged.
//!
//! Owns: [`Report`] (what mark-good found on a boot, which the OTA status shows),
//! [`Firmware`] (the running firmware from the UEFI System Resource Table, ESRT),
//! [`Chains`] (the record of each chain's firmware version on the EFI system partition),
//! [`Pending`] (the capsule an installation staged) and [`after_boot`] (what mark-good
//! does with them once per boot: read the capsule's result, keep the record true).
//! Must not: stage or withdraw a capsule (the bundle hooks and the boot-control backend
//! do, in the layer's `fpgagdr-bundle-hooks.sh` and `rauc-nvbootctrl-backend.sh`), or
//! trust a record over what the firmware itself reports.
//!
//! On L4T R36 with rootfs A/B (docs/ota.md, *Bootloader capsule*) the rootfs slot follows
//! the boot chain: slot A boots with chain A, slot B with chain B. UEFI applies a capsule
//! on disk (`EFI/UpdateCapsule/TEGRA_BL.Cap` on the ESP, `OsIndications` bit 2) to the
//! chain that is not running and boots it. Whether a capsule is needed depends on the
//! chain it would write: the running firmware's version is in the ESRT
//! (`/sys/firmware/efi/esrt/entries/entry<N>/fw_version`, the capsule's `--fw-version`,
//! meta-tegra's `TEGRA_UEFI_FW_VERSION`: 0xBBBBMMmm of the L4T version, 36.5.0 =
//! 0x00240500), the other chain's is known only from this record. Files on the ESP
//! (`EFI/fpgagdr/`), which both slots share and no update replaces:
//!
//! | file | written by | lines |
//! |---|---|---|
//! | `boot-chains` | mark-good (a healthy boot: its chain; a first boot of the flashed image: both), the install hook (drops the chain a capsule is about to rewrite) | `A=0x00240500`, `B=0x00240500` |
//! | `capsule-pending` | the install hook when it stages a capsule | `target=B`, `version=0x00240600`, `id=<installation id>` |
//!
//! Environment (tests; the device's paths otherwise): `FPGAGDR_ESRT_DIR` (default
//! `/sys/firmware/efi/esrt`), `FPGAGDR_ESP_DIR` (default `/boot/efi`, where meta-tegra's
//! `esp.mount` mounts the ESP).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Name of the report of the last boot's verdict in the spool (JSON, [`Report`]), which
/// the OTA status shows.
pub const REPORT: &str = "boot-report.json";
/// What mark-good (`crate::mark_good::run`) found on this boot: its verdict, the
/// capsule's result and the chains' record, for the OTA status (`boot_check`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Report {
    /// The booted slot (`A`, `B`), when known.
    pub slot: Option<String>,
    /// The installation's id; `null` for a factory boot.
    pub installation: Option<String>,
    /// `marked-good`, `marked-bad`, `mark-failed`, `confirmed` or `not-confirmed`.
    pub verdict: String,
    /// Why, in words.
    pub reason: String,
    /// Whether the boot was let through to the bootloader's confirmation.
    pub confirmed: bool,
    /// The result of a bootloader capsule the installation staged, read on this boot.
    pub capsule: Option<CapsuleResult>,
    /// The firmware version recorded per boot chain after this boot (`A`, `B`:
    /// `0x00240500`), where known: the record on the ESP, which the service itself may
    /// not be allowed to read.
    #[serde(default)]
    pub chains: std::collections::BTreeMap<String, String>,
    /// Unix time of the verdict, seconds.
    pub at_unix_s: f64,
}

/// The report mark-good wrote on this boot into `spool`, if any.
pub fn report(spool: &Path) -> Option<Report> {
    serde_json::from_str(&std::fs::read_to_string(spool.join(REPORT)).ok()?).ok()
}

/// Where the ESRT is, `FPGAGDR_ESRT_DIR` or the kernel's.
pub fn esrt_dir() -> PathBuf {
    std::env::var_os("FPGAGDR_ESRT_DIR").map_or_else(|| "/sys/firmware/efi/esrt".into(), Into::into)
}

/// Where the EFI system partition is mounted, `FPGAGDR_ESP_DIR` or `/boot/efi`.
pub fn esp_dir() -> PathBuf {
    std::env::var_os("FPGAGDR_ESP_DIR").map_or_else(|| "/boot/efi".into(), Into::into)
}

/// The running system firmware, from its ESRT entry (UEFI 2.x, EFI System Resource
/// Table; Linux `Documentation/ABI/testing/sysfs-firmware-efi-esrt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Firmware {
    /// `fw_version`: the version running (the capsule's `--fw-version`).
    pub version: u32,
    /// `lowest_supported_fw_version`: capsules below it are refused (meta-tegra's
    /// `TEGRA_UEFI_LOWEST_SUPPORTED_VERSION`, by default the running L4T release: no
    /// bootloader downgrade).
    pub lowest_supported: u32,
    /// `last_attempt_version`: the capsule version last tried.
    pub last_attempt_version: u32,
    /// `last_attempt_status`: 0 success, else the UEFI
    /// `LAST_ATTEMPT_STATUS_*` code of the failure.
    pub last_attempt_status: u32,
}

/// Reads the system firmware's ESRT entry under `esrt` (`entries/entry*`, the first
/// whose `fw_type` is 1, system firmware; else the first). `None` without an ESRT (not
/// UEFI, or a firmware that publishes none).
pub fn firmware(esrt: &Path) -> Option<Firmware> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(esrt.join("entries"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    let num = |dir: &Path, name: &str| -> Option<u32> {
        let t = std::fs::read_to_string(dir.join(name)).ok()?;
        let t = t.trim();
        match t.strip_prefix("0x") {
            Some(h) => u32::from_str_radix(h, 16).ok(),
            None => t.parse().ok(),
        }
    };
    let dir = entries
        .iter()
        .find(|d| num(d, "fw_type") == Some(1))
        .or_else(|| entries.first())?;
    Some(Firmware {
        version: num(dir, "fw_version")?,
        lowest_supported: num(dir, "lowest_supported_fw_version").unwrap_or(0),
        last_attempt_version: num(dir, "last_attempt_version").unwrap_or(0),
        last_attempt_status: num(dir, "last_attempt_status").unwrap_or(0),
    })
}

/// `0x00240500` for 0x00240500: the form the layer, meta-tegra and the record use.
pub fn hex(version: u32) -> String {
    format!("0x{version:08x}")
}

fn parse_hex(v: &str) -> Option<u32> {
    u32::from_str_radix(v.trim().strip_prefix("0x")?, 16).ok()
}

/// The record of each boot chain's firmware version (`EFI/fpgagdr/boot-chains` on the
/// ESP): chain (`A`, `B`) to version; a chain not in it is not known.
pub type Chains = BTreeMap<String, u32>;

fn record_dir(esp: &Path) -> PathBuf {
    esp.join("EFI/fpgagdr")
}

/// Reads the record (empty when there is none).
pub fn chains(esp: &Path) -> Chains {
    std::fs::read_to_string(record_dir(esp).join("boot-chains"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once('=')?;
            Some((k.trim().to_string(), parse_hex(v)?))
        })
        .collect()
}

/// Writes the record (a temporary file renamed into place).
pub fn write_chains(esp: &Path, chains: &Chains) -> std::io::Result<()> {
    let dir = record_dir(esp);
    std::fs::create_dir_all(&dir)?;
    let text: String = chains
        .iter()
        .map(|(k, v)| format!("{k}={}\n", hex(*v)))
        .collect();
    let tmp = dir.join("boot-chains.tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(tmp, dir.join("boot-chains"))
}

/// The capsule an installation staged (`EFI/fpgagdr/capsule-pending`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// The chain (and rootfs slot) the firmware is to update and boot: `A` or `B`.
    pub target: String,
    /// The capsule's firmware version.
    pub version: u32,
    /// The installation that staged it.
    pub id: String,
}

/// Reads the pending capsule, if the hook left one.
pub fn pending(esp: &Path) -> Option<Pending> {
    let text = std::fs::read_to_string(record_dir(esp).join("capsule-pending")).ok()?;
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
            .map(str::trim)
    };
    Some(Pending {
        target: get("target")?.to_string(),
        version: parse_hex(get("version")?)?,
        id: get("id").unwrap_or("").to_string(),
    })
}

/// What became of a staged capsule, as the boot after it found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CapsuleResult {
    /// `true` when the firmware booted the target chain with the capsule's version.
    pub ok: bool,
    /// The chain the capsule was for.
    pub target: String,
    /// The capsule's version (`0x00240600`).
    pub version: String,
    /// What was seen: the chain booted, the firmware version, the ESRT's last attempt.
    pub detail: String,
}

/// Once per boot, before the boot is judged (mark-good): the result of a capsule the
/// last installation staged, if any (then the pending file is removed), and the record
/// kept true: the chain booted holds the firmware the ESRT reports; a capsule that did
/// not land leaves its target chain unknown (a capsule interrupted part way may have
/// left it half written: the next update stages the capsule again). On a factory boot
/// (`first_boot`: the slot holds the image it was flashed with) with no record at all,
/// both chains hold the running firmware (flashing writes both).
///
/// `booted` is the booted slot's bootname (`A`/`B`); nothing is done without it, or
/// without an ESRT, or without the ESP (each is said in the returned notes).
pub fn after_boot(
    esp: &Path,
    esrt: &Path,
    booted: Option<&str>,
    first_boot: bool,
) -> (Option<CapsuleResult>, Vec<String>) {
    let mut notes = Vec::new();
    if !esp.is_dir() {
        notes.push(format!(
            "no EFI system partition at {}: bootloader versions not recorded",
            esp.display()
        ));
        return (None, notes);
    }
    let fw = firmware(esrt);
    let Some(booted) = booted else {
        notes.push("booted slot not known: bootloader versions not recorded".into());
        return (None, notes);
    };
    let mut record = chains(esp);
    let mut result = None;
    if let Some(p) = pending(esp) {
        let (ok, detail) = match fw {
            None => (
                false,
                "no ESRT: the firmware's version cannot be read".to_string(),
            ),
            Some(f) if p.target == booted && f.version == p.version => (
                true,
                format!(
                    "chain {booted} booted with firmware {} (ESRT last attempt {} status {})",
                    hex(f.version),
                    hex(f.last_attempt_version),
                    f.last_attempt_status
                ),
            ),
            Some(f) => (
                false,
                format!(
                    "chain {booted} booted with firmware {}, not chain {} with {} (ESRT last \
                     attempt {} status {}): the capsule did not land; the firmware stayed \
                     where it was",
                    hex(f.version),
                    p.target,
                    hex(p.version),
                    hex(f.last_attempt_version),
                    f.last_attempt_status
                ),
            ),
        };
        if !ok {
            record.remove(&p.target);
        }
        result = Some(CapsuleResult {
            ok,
            target: p.target.clone(),
            version: hex(p.version),
            detail,
        });
        let _ = std::fs::remove_file(record_dir(esp).join("capsule-pending"));
    }
    match fw {
        Some(f) => {
            if first_boot && record.is_empty() {
                for chain in ["A", "B"] {
                    record.insert(chain.into(), f.version);
                }
                notes.push(format!(
                    "first boot of the flashed image: both boot chains recorded at firmware {}",
                    hex(f.version)
                ));
            } else {
                record.insert(booted.to_string(), f.version);
            }
        }
        None => notes.push(format!(
            "no ESRT at {}: the running firmware's version is not known",
            esrt.display()
        )),
    }
    if let Err(e) = write_chains(esp, &record) {
        notes.push(format!("cannot record the boot chains on the ESP: {e}"));
    }
    (result, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esrt(dir: &Path, version: u32, last: u32, status: u32) {
        let e = dir.join("entries/entry0");
        std::fs::create_dir_all(&e).unwrap();
        for (k, v) in [
            ("fw_type", 1),
            ("fw_version", version),
            ("lowest_supported_fw_version", 0x0024_0500),
            ("last_attempt_version", last),
            ("last_attempt_status", status),
        ] {
            std::fs::write(e.join(k), format!("{v}\n")).unwrap();
        }
    }

    fn stage(esp: &Path, target: &str, version: &str) {
        std::fs::create_dir_all(esp.join("EFI/fpgagdr")).unwrap();
        std::fs::write(
            esp.join("EFI/fpgagdr/capsule-pending"),
            format!("target={target}\nversion={version}\nid=abc\n"),
        )
        .unwrap();
    }

    #[test]
    fn the_esrt_is_read_in_decimal_as_the_kernel_writes_it() {
        let d = tempfile::tempdir().unwrap();
        esrt(d.path(), 0x0024_0500, 0x0024_0500, 0);
        let f = firmware(d.path()).unwrap();
        assert_eq!(hex(f.version), "0x00240500");
        assert_eq!(f.lowest_supported, 0x0024_0500);
        assert_eq!(firmware(&d.path().join("none")), None);
    }

    #[test]
    fn a_first_boot_records_both_chains_and_later_boots_their_own() {
        let (esp, es) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        esrt(es.path(), 0x0024_0500, 0, 0);
        let (r, _) = after_boot(esp.path(), es.path(), Some("A"), true);
        assert_eq!(r, None);
        assert_eq!(
            chains(esp.path()),
            Chains::from([("A".into(), 0x0024_0500), ("B".into(), 0x0024_0500)])
        );
        // A later first boot (the other slot's factory image) does not overwrite B's.
        let mut c = chains(esp.path());
        c.insert("B".into(), 0x0024_0600);
        write_chains(esp.path(), &c).unwrap();
        after_boot(esp.path(), es.path(), Some("A"), true);
        assert_eq!(chains(esp.path())["B"], 0x0024_0600);
    }

    #[test]
    fn a_capsule_that_landed_is_reported_and_recorded() {
        let (esp, es) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        esrt(es.path(), 0x0024_0600, 0x0024_0600, 0);
        stage(esp.path(), "B", "0x00240600");
        let (r, _) = after_boot(esp.path(), es.path(), Some("B"), false);
        let r = r.unwrap();
        assert!(r.ok, "{r:?}");
        assert_eq!(chains(esp.path())["B"], 0x0024_0600);
        assert_eq!(pending(esp.path()), None, "read once");
        let (again, _) = after_boot(esp.path(), es.path(), Some("B"), false);
        assert_eq!(again, None);
    }

    #[test]
    fn a_capsule_that_did_not_land_leaves_its_chain_unknown() {
        let (esp, es) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        esrt(es.path(), 0x0024_0500, 0x0024_0600, 6);
        write_chains(
            esp.path(),
            &Chains::from([("A".into(), 0x0024_0500), ("B".into(), 0x0024_0500)]),
        )
        .unwrap();
        stage(esp.path(), "B", "0x00240600");
        let (r, _) = after_boot(esp.path(), es.path(), Some("A"), false);
        let r = r.unwrap();
        assert!(!r.ok);
        assert!(r.detail.contains("did not land"), "{}", r.detail);
        assert!(r.detail.contains("status 6"), "{}", r.detail);
        assert_eq!(
            chains(esp.path()),
            Chains::from([("A".into(), 0x0024_0500)]),
            "B may be half written: not known any more"
        );
    }
}
