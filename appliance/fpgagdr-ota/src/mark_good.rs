//! `fpgagdrd --mark-good-after-health`: the one-shot that judges a boot once the
//! appliance had its chance to come up. Run by `fpgagdr-mark-good.service` after
//! `fpgagdrd.service` on every boot; NVIDIA's `nv_update_verifier.service` (`nvbootctrl
//! verify`, which confirms the boot to the bootloader) is ordered after it and needs it
//! to succeed (a drop-in of the layer's `fpgagdr-mark-good` recipe).
//!
//! Owns: [`decide`] (the whole decision, a pure function of [`Facts`]), [`run`] (gathers
//! the facts, acts on the decision), [`probe`] (one health probe).
//!
//! | facts | decision |
//! |---|---|
//! | RAUC not reachable (after bounded retries) | leave the boot alone |
//! | rootfs A/B not armed (`nvbootctrl -t rootfs get-number-slots` is not 2) | leave alone |
//! | healthy | `Mark("good", "booted")` |
//! | unhealthy, factory boot (no installation marker in the slot) | leave alone: the factory image is in both slots |
//! | unhealthy, installed by an update, other slot known good | `Mark("bad", "booted")`, then reboot |
//! | unhealthy, installed by an update, other slot bad or unknown | leave alone |
//!
//! Exit status (what `nv_update_verifier.service` depends on): 0 when the boot may be
//! confirmed to the bootloader (marked good, or left alone); 1 only after marking the
//! booted slot bad (a reboot is then requested), or when that mark failed: the boot
//! stays unconfirmed and UEFI's boot retries take the device back to the good slot.
//! Never reboots without a successful `Mark bad`.
//!
//! The installation marker (`<spool>/installation`, [`MARKER`]) is written into the new
//! slot by the bundle's `slot-post-install` hook; a slot without one holds the image it
//! was flashed with. A verdict is taken once per installation: a stamp ([`STAMP`]) with
//! the booted slot, the marker's id and the verdict (`good`/`bad`); a later boot of the
//! same installation finds it and does nothing (a transient fault later never rolls back
//! a confirmed update, and a slot marked bad that comes up again is not rebooted again).
//!
//! Environment (defaults are the device's): `FPGAGDR_NVBOOTCTRL` (the `nvbootctrl` to
//! ask whether A/B is armed), `FPGAGDR_REBOOT_COMMAND` (run by `sh -c` after a successful
//! `Mark bad`; default `systemctl --no-block reboot`).
//! Must not: mark anything without having reached RAUC, mark bad a factory boot or a
//! slot whose fallback is not known good, or reboot without a successful `Mark bad`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use super::rauc::{Bus, Rauc};

/// Pause between two health probes, and between two attempts to reach RAUC or to mark.
const PROBE_EVERY: Duration = Duration::from_secs(2);
/// How many times a `Mark` call is tried before giving up.
const MARK_ATTEMPTS: u32 = 3;
/// Name of the stamp file in the spool directory.
pub const STAMP: &str = "mark-good.stamp";
/// Name of the installation marker in the spool directory (written by the bundle's
/// `slot-post-install` hook into the slot it installed; lines `key=value`, `id=` unique
/// per installation).
pub const MARKER: &str = "installation";
/// Default of `--rauc-wait-s`: how long to keep trying to reach RAUC.
pub const DEFAULT_RAUC_WAIT: Duration = Duration::from_secs(60);
/// What requests the reboot after a successful `Mark bad`, unless
/// `FPGAGDR_REBOOT_COMMAND` says otherwise.
pub const REBOOT_COMMAND: &str = "systemctl --no-block reboot";

/// The other rootfs slot, as RAUC reports it (`boot-status` of `GetSlotStatus`, which
/// the boot-control backend reads from `nvbootctrl`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OtherSlot {
    /// Bootable (`normal`): somewhere to go back to.
    Good,
    /// Marked unbootable.
    Bad,
    /// Not known (the reason).
    Unknown(String),
}

/// The appliance's health verdict (from [`probe`], repeated until a deadline).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// `/api/v1/status` answered with a pipeline `running` or `stopped`.
    Healthy,
    /// What was seen last.
    Unhealthy(String),
}

/// Everything [`decide`] goes by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// RAUC answered on its bus (`Err`: why not, after the bounded retries).
    pub rauc: Result<(), String>,
    /// `nvbootctrl -t rootfs get-number-slots` reports 2: rootfs A/B is armed.
    pub ab_armed: bool,
    /// The booted slot's bootname (`A`, `B`), when RAUC said.
    pub booted: Option<String>,
    /// The other rootfs slot's state.
    pub other: OtherSlot,
    /// The booted slot's installation id (from [`MARKER`]); `None`: a factory boot (the
    /// slot holds the image it was flashed with).
    pub installation: Option<String>,
    /// The health verdict.
    pub health: Health,
}

/// What mark-good does about a boot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// `Mark("good", "booted")`.
    MarkGood,
    /// `Mark("bad", "booted")`, then reboot (only if the mark succeeded).
    MarkBad,
    /// Nothing: the reason, for the log.
    Leave(String),
}

/// The decision for one boot (table in the module docs). Pure: no I/O.
pub fn decide(f: &Facts) -> Decision {
    if let Err(e) = &f.rauc {
        return Decision::Leave(format!(
            "RAUC is not reachable ({e}): the boot is not judged"
        ));
    }
    if !f.ab_armed {
        return Decision::Leave(
            "rootfs A/B is not armed on this device (nvbootctrl does not report two rootfs \
             slots): there is no other slot to go back to, the boot is not judged"
                .into(),
        );
    }
    let Some(booted) = &f.booted else {
        return Decision::Leave("RAUC did not say which slot is booted: not judged".into());
    };
    let why = match &f.health {
        Health::Healthy => return Decision::MarkGood,
        Health::Unhealthy(why) => why,
    };
    if f.installation.is_none() {
        return Decision::Leave(format!(
            "not healthy ({why}), but slot {booted} is a factory boot (it holds the image it \
             was flashed with, as the other slot does): a factory image is never marked bad"
        ));
    }
    match &f.other {
        OtherSlot::Good => Decision::MarkBad,
        OtherSlot::Bad => Decision::Leave(format!(
            "not healthy ({why}), but the other slot is not known good (it is marked bad): \
             staying on slot {booted}"
        )),
        OtherSlot::Unknown(u) => Decision::Leave(format!(
            "not healthy ({why}), but the other slot is not known good ({u}): staying on slot \
             {booted}"
        )),
    }
}

/// One health probe: `Ok` when the service at `addr` answers `/api/v1/status` with a
/// pipeline that is `running` or `stopped`; otherwise what was seen.
pub fn probe(addr: SocketAddr) -> Result<(), String> {
    let timeout = Duration::from_secs(5);
    let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("{addr}: {e}"))?;
    s.set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    write!(
        s,
        "GET /api/v1/status HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut reply = String::new();
    s.read_to_string(&mut reply).map_err(|e| e.to_string())?;
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        return Err(format!(
            "status answered {}",
            head.lines().next().unwrap_or("")
        ));
    }
    let v: serde_json::Value = serde_json::from_str(body).map_err(|e| e.to_string())?;
    match v["pipeline"]["state"].as_str() {
        Some("running" | "stopped") => Ok(()),
        other => Err(format!(
            "pipeline {} ({})",
            other.unwrap_or("?"),
            v["pipeline"]["error"].as_str().unwrap_or("")
        )),
    }
}

/// The installation id in `spool`'s [`MARKER`] (its `id=` line, else its whole text);
/// `None` when there is no marker (a factory boot).
pub fn installation(spool: &Path) -> Option<String> {
    let text = std::fs::read_to_string(spool.join(MARKER)).ok()?;
    let id = text
        .lines()
        .find_map(|l| l.strip_prefix("id="))
        .unwrap_or(text.trim());
    Some(id.trim().to_string())
}

/// Whether `nvbootctrl -t rootfs get-number-slots` (`FPGAGDR_NVBOOTCTRL`) reports 2.
fn ab_armed() -> bool {
    let nvbootctrl = std::env::var("FPGAGDR_NVBOOTCTRL").unwrap_or_else(|_| "nvbootctrl".into());
    std::process::Command::new(nvbootctrl)
        .args(["-t", "rootfs", "get-number-slots"])
        .stderr(std::process::Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == "2")
}

/// Connects to RAUC on `bus`, trying every [`PROBE_EVERY`] for at most `wait`; each
/// failed attempt is logged.
fn connect(runtime: &tokio::runtime::Runtime, bus: &Bus, wait: Duration) -> Result<Rauc, String> {
    let start = Instant::now();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let tried = runtime.block_on(async {
            tokio::time::timeout(super::CONNECT_TIMEOUT, Rauc::connect(bus)).await
        });
        let e = match tried {
            Ok(Ok(rauc)) => return Ok(rauc),
            Ok(Err(e)) => e,
            Err(_) => format!("{bus} did not answer within {:?}", super::CONNECT_TIMEOUT),
        };
        if start.elapsed() + PROBE_EVERY > wait {
            return Err(format!(
                "gave up after {attempt} attempt(s) in {:.0} s: {e}",
                start.elapsed().as_secs_f64()
            ));
        }
        println!("fpgagdrd: RAUC not reachable (attempt {attempt}): {e}; trying again");
        std::thread::sleep(PROBE_EVERY);
    }
}

/// `Mark(state, "booted")`, tried [`MARK_ATTEMPTS`] times; each failure is logged.
fn mark(runtime: &tokio::runtime::Runtime, rauc: &Rauc, state: &str) -> Result<String, String> {
    let mut last = String::new();
    for attempt in 1..=MARK_ATTEMPTS {
        match runtime.block_on(rauc.mark(state, "booted")) {
            Ok(msg) => return Ok(msg),
            Err(e) => {
                println!(
                    "fpgagdrd: Mark({state}, booted) failed (attempt {attempt} of {MARK_ATTEMPTS}): {e}"
                );
                last = e;
            }
        }
        if attempt < MARK_ATTEMPTS {
            std::thread::sleep(PROBE_EVERY);
        }
    }
    Err(last)
}

/// Judges this boot (see the module docs): gathers the [`Facts`] (RAUC on `bus`, tried
/// for at most `rauc_wait`; the health of the service at `listen`, waited for at most
/// `timeout`; the marker and the stamp in `spool`), [`decide`]s and acts. `Err` (exit
/// status 1) only after marking the booted slot bad, or failing to.
pub fn run(
    listen: SocketAddr,
    bus: &Bus,
    spool: &Path,
    timeout: Duration,
    rauc_wait: Duration,
) -> Result<(), String> {
    let mut addr = listen;
    if addr.ip().is_unspecified() {
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let rauc = connect(&runtime, bus, rauc_wait);
    let ab_armed = ab_armed();
    let (booted, other) = match &rauc {
        Ok(r) => slots(&runtime, r),
        Err(e) => (None, OtherSlot::Unknown(e.clone())),
    };
    let installation = installation(spool);
    let stamp = spool.join(STAMP);
    // The stamp: "<booted slot> <installation id or factory> <good|bad>".
    let key = format!(
        "{} {}",
        booted.as_deref().unwrap_or("?"),
        installation.as_deref().unwrap_or("factory")
    );
    let before = std::fs::read_to_string(&stamp).unwrap_or_default();
    if let Some((judged, result)) = before.trim().rsplit_once(' ')
        && judged == key
        && rauc.is_ok()
    {
        match result {
            "good" => println!("fpgagdrd: slot {key} was confirmed before"),
            other => println!("fpgagdrd: slot {key} was judged before ({other})"),
        }
        return Ok(());
    }
    let deadline = Instant::now() + timeout;
    let health = loop {
        match probe(addr) {
            Ok(()) => break Health::Healthy,
            Err(e) if Instant::now() >= deadline => {
                break Health::Unhealthy(format!("after {timeout:?}: {e}"));
            }
            Err(_) => std::thread::sleep(PROBE_EVERY),
        }
    };
    let facts = Facts {
        rauc: rauc.as_ref().map(|_| ()).map_err(Clone::clone),
        ab_armed,
        booted: booted.clone(),
        other,
        installation,
        health,
    };
    let slot = booted.unwrap_or_else(|| "?".into());
    // A stamp that cannot be written only means the next boot judges again.
    let write_stamp = |result: &str| {
        if let Err(e) = std::fs::create_dir_all(spool)
            .and_then(|()| std::fs::write(&stamp, format!("{key} {result}\n")))
        {
            println!("fpgagdrd: cannot write {}: {e}", stamp.display());
        }
    };
    match (decide(&facts), rauc) {
        (Decision::Leave(why), _) => {
            println!("fpgagdrd: {why}");
            Ok(())
        }
        (Decision::MarkGood, Ok(r)) => {
            match mark(&runtime, &r, "good") {
                Ok(msg) => {
                    write_stamp("good");
                    println!("fpgagdrd: healthy; slot {slot} marked good ({msg})");
                }
                Err(e) => println!(
                    "fpgagdrd: healthy, but slot {slot} could not be marked good ({e}); the next boot tries again"
                ),
            }
            Ok(())
        }
        (Decision::MarkBad, Ok(r)) => {
            let Health::Unhealthy(why) = &facts.health else {
                unreachable!("MarkBad is decided only when unhealthy")
            };
            let msg = mark(&runtime, &r, "bad").map_err(|e| {
                format!(
                    "not healthy ({why}); marking slot {slot} bad failed ({e}): no reboot; the boot \
                     stays unconfirmed, so the bootloader goes back to the other slot after its boot retries"
                )
            })?;
            write_stamp("bad");
            let command =
                std::env::var("FPGAGDR_REBOOT_COMMAND").unwrap_or_else(|_| REBOOT_COMMAND.into());
            let rebooting = std::process::Command::new("sh")
                .args(["-c", &command])
                .status()
                .map_err(|e| e.to_string())
                .and_then(|s| s.success().then_some(()).ok_or(s.to_string()));
            Err(match rebooting {
                Ok(()) => format!(
                    "not healthy ({why}); slot {slot} marked bad ({msg}); rebooting into the other slot"
                ),
                Err(e) => format!(
                    "not healthy ({why}); slot {slot} marked bad ({msg}), but the reboot could not be \
                     requested ({command}: {e}): reboot by hand"
                ),
            })
        }
        (_, Err(_)) => unreachable!("decide leaves the boot alone without RAUC"),
    }
}

/// The booted slot's bootname and the other rootfs slot's state, from RAUC.
fn slots(runtime: &tokio::runtime::Runtime, rauc: &Rauc) -> (Option<String>, OtherSlot) {
    let booted = runtime
        .block_on(rauc.string("BootSlot"))
        .ok()
        .filter(|b| !b.is_empty());
    let other = match runtime.block_on(rauc.slots()) {
        Err(e) => OtherSlot::Unknown(format!("GetSlotStatus: {e}")),
        Ok(slots) => match slots
            .iter()
            .find(|s| s["class"] == "rootfs" && s["state"] != "booted")
        {
            None => OtherSlot::Unknown("RAUC lists no other rootfs slot".into()),
            Some(s) => match s["boot-status"].as_str() {
                Some("good") => OtherSlot::Good,
                Some("bad") => OtherSlot::Bad,
                other => OtherSlot::Unknown(format!(
                    "RAUC reports boot status {} for {}",
                    other.unwrap_or("none"),
                    s["name"]
                )),
            },
        },
    };
    (booted, other)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> Facts {
        Facts {
            rauc: Ok(()),
            ab_armed: true,
            booted: Some("B".into()),
            other: OtherSlot::Good,
            installation: Some("5d1f0c2e".into()),
            health: Health::Unhealthy("pipeline failed".into()),
        }
    }

    fn leaves(f: &Facts, saying: &str) {
        match decide(f) {
            Decision::Leave(why) => assert!(why.contains(saying), "{why}"),
            d => panic!("{d:?} for {f:?}"),
        }
    }

    #[test]
    fn an_unhealthy_update_with_a_good_other_slot_is_marked_bad() {
        assert_eq!(decide(&facts()), Decision::MarkBad);
    }

    #[test]
    fn healthy_is_marked_good_whether_installed_or_factory() {
        let mut f = facts();
        f.health = Health::Healthy;
        assert_eq!(decide(&f), Decision::MarkGood);
        f.installation = None;
        f.other = OtherSlot::Bad;
        assert_eq!(decide(&f), Decision::MarkGood);
    }

    #[test]
    fn a_factory_boot_is_never_marked_bad() {
        let mut f = facts();
        f.installation = None;
        for other in [
            OtherSlot::Good,
            OtherSlot::Bad,
            OtherSlot::Unknown("?".into()),
        ] {
            f.other = other;
            leaves(&f, "factory");
        }
    }

    #[test]
    fn without_ab_armed_nothing_is_judged() {
        let mut f = facts();
        f.ab_armed = false;
        leaves(&f, "not armed");
        f.health = Health::Healthy;
        leaves(&f, "not armed");
    }

    #[test]
    fn without_rauc_nothing_is_judged() {
        let mut f = facts();
        f.rauc = Err("gave up after 30 attempts".into());
        leaves(&f, "RAUC is not reachable");
        f.health = Health::Healthy;
        leaves(&f, "RAUC is not reachable");
    }

    #[test]
    fn bad_is_marked_only_when_the_other_slot_is_known_good() {
        let mut f = facts();
        f.other = OtherSlot::Bad;
        leaves(&f, "not known good");
        f.other = OtherSlot::Unknown("no boot status".into());
        leaves(&f, "not known good");
        f.other = OtherSlot::Good;
        f.booted = None;
        leaves(&f, "booted");
    }

    #[test]
    fn the_installation_id_comes_from_the_marker() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(installation(dir.path()), None);
        std::fs::write(dir.path().join(MARKER), "slot=rootfs.1\nid=abc-123\n").unwrap();
        assert_eq!(installation(dir.path()).as_deref(), Some("abc-123"));
    }
}
