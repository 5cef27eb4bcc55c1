//! `fpgagdrd --mark-good-after-health`: the one-shot that judges a boot once the
//! appliance had its chance to come up. Run by `fpgagdr-mark-good.service` after
//! `fpgagdrd.service` on every boot; NVIDIA's `nv_update_verifier.service` (`nvbootctrl
//! verify`, which confirms the boot to the bootloader) is ordered after it and needs it
//! to succeed (a drop-in of the layer's `fpgagdr-mark-good` recipe).
//!
//! Owns: [`decide`] (the whole decision, a pure function of [`Facts`]), [`run`] (gathers
//! the facts, acts on the decision, writes the [`crate::boot::Report`] the OTA status
//! shows),
//! [`probe`] (one health probe).
//!
//! | facts | decision | exit |
//! |---|---|---|
//! | this installation was judged good before (stamp) | confirm | 0 |
//! | this installation was judged bad before (stamp) | withhold: not confirmed | 1 |
//! | RAUC not reachable (after bounded retries), slot installed by an update | withhold | 1 |
//! | RAUC not reachable, factory boot (no installation marker) | confirm: the same image is in both slots | 0 |
//! | rootfs A/B not armed (`nvbootctrl -t rootfs get-number-slots` is not 2) | confirm: no other slot | 0 |
//! | RAUC did not say which slot is booted, after an update | withhold | 1 |
//! | healthy | `Mark("good", "booted")` | 0 |
//! | unhealthy, factory boot | confirm: a factory image is never marked bad | 0 |
//! | unhealthy, installed by an update, other slot known good | `Mark("bad", "booted")`, then reboot | 1 |
//! | unhealthy, installed by an update, other slot marked bad | confirm: nothing better to go back to | 0 |
//! | unhealthy, installed by an update, other slot's state unknown | withhold | 1 |
//!
//! Healthy means `/api/v1/status` answers with a pipeline `running` or `stopped` and, when
//! the installation marker says the appliance had a card when the update was installed
//! (`card=present`, written by the bundle's hook), the card's control node
//! (`/dev/fpgagdr0`, the fpgagdr module's) is there: an update that breaks the module
//! must not pass because the service falls back to its simulated card.
//!
//! Exit status (what `nv_update_verifier.service` depends on): 0 when the boot may be
//! confirmed to the bootloader; 1 when it must not be: after marking the booted slot bad
//! (a reboot is then requested), when that mark failed, when the boot cannot be judged,
//! or when it was judged bad before. Only a successful `Mark bad` requests a reboot; in
//! every other case the boot just stays unconfirmed, and the bootloader's rootfs retry
//! counter (three boots) takes the device back to the other slot: no reboot loop.
//!
//! The installation marker (`<spool>/installation`, [`MARKER`]) is written into the new
//! slot by the bundle's `slot-post-install` hook; a slot without one holds the image it
//! was flashed with. A verdict is taken once per installation: a stamp ([`STAMP`]) with
//! the booted slot, the marker's id and the verdict (`good`/`bad`); a later boot of the
//! same installation goes by it (a transient fault later never rolls back a confirmed
//! update, and a slot judged bad that comes up again is neither confirmed nor rebooted).
//!
//! Before judging, the boot chain's firmware is looked at ([`crate::boot::after_boot`]):
//! the result of a bootloader capsule the installation staged, and the record of each
//! chain's firmware version that the next installation's hook reads.
//!
//! Environment (defaults are the device's): `FPGAGDR_NVBOOTCTRL` (the `nvbootctrl` to
//! ask whether A/B is armed), `FPGAGDR_REBOOT_COMMAND` (run by `sh -c` after a successful
//! `Mark bad`; default `systemctl --no-block reboot`), `FPGAGDR_CARD_NODE` (default
//! `/dev/fpgagdr0`), and those of [`crate::boot`].
//! Must not: mark anything without having reached RAUC, mark bad a factory boot or a
//! slot whose fallback is not known good, let a boot it could not judge be confirmed, or
//! reboot without a successful `Mark bad`.

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

/// The card's control node the module creates when it found the card.
pub const CARD_NODE: &str = "/dev/fpgagdr0";

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

/// The appliance's health verdict (from [`probe`] and the card check, repeated until a
/// deadline).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// `/api/v1/status` answered with a pipeline `running` or `stopped`, and the card is
    /// there when it has to be.
    Healthy,
    /// What was seen last.
    Unhealthy(String),
}

/// An earlier verdict on the same installation (the stamp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judged {
    /// Marked good: the boot was confirmed.
    Good,
    /// Marked bad.
    Bad,
}

/// The installation the booted slot came from (its marker).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installation {
    /// The marker's `id=`, unique per installation.
    pub id: String,
    /// The marker's `card=`: whether the appliance had a card (the module's control
    /// node) when the update was installed; `None` for a marker without the line.
    pub had_card: Option<bool>,
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
    /// The booted slot's installation (from [`MARKER`]); `None`: a factory boot (the
    /// slot holds the image it was flashed with).
    pub installation: Option<Installation>,
    /// An earlier verdict on this installation (or factory image), from [`STAMP`].
    pub judged: Option<Judged>,
    /// The health verdict.
    pub health: Health,
}

/// What mark-good does about a boot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// `Mark("good", "booted")`; the boot may be confirmed.
    MarkGood,
    /// `Mark("bad", "booted")`, then reboot (only if the mark succeeded); not confirmed.
    MarkBad,
    /// Nothing to mark; the boot may be confirmed (exit 0). The reason, for the log.
    Confirm(String),
    /// Nothing to mark, and the boot must not be confirmed (exit 1, no reboot): it could
    /// not be judged, or was judged bad before. The reason.
    Withhold(String),
}

/// The decision for one boot (table in the module docs). Pure: no I/O.
pub fn decide(f: &Facts) -> Decision {
    match f.judged {
        Some(Judged::Good) => return Decision::Confirm("confirmed before".into()),
        Some(Judged::Bad) => {
            return Decision::Withhold(
                "this installation was judged bad on an earlier boot and came up again: not \
                 confirmed, no reboot (the bootloader's boot retries take the device back)"
                    .into(),
            );
        }
        None => {}
    }
    if let Err(e) = &f.rauc {
        return match f.installation {
            Some(_) => Decision::Withhold(format!(
                "RAUC is not reachable ({e}) on a slot an update installed: the boot is not \
                 judged, and not confirmed (an update that breaks RAUC could neither update \
                 nor roll back); the bootloader's boot retries take the device back"
            )),
            None => Decision::Confirm(format!(
                "RAUC is not reachable ({e}), on a factory boot: the image it was flashed with \
                 is in both slots, there is nothing to go back to; the boot is not judged"
            )),
        };
    }
    if !f.ab_armed {
        return Decision::Confirm(
            "rootfs A/B is not armed on this device (nvbootctrl does not report two rootfs \
             slots): there is no other slot to go back to, the boot is not judged"
                .into(),
        );
    }
    let Some(booted) = &f.booted else {
        let why = "RAUC did not say which slot is booted";
        return match f.installation {
            Some(_) => Decision::Withhold(format!("{why}: not judged, not confirmed")),
            None => Decision::Confirm(format!("{why}, on a factory boot: not judged")),
        };
    };
    let why = match &f.health {
        Health::Healthy => return Decision::MarkGood,
        Health::Unhealthy(why) => why,
    };
    if f.installation.is_none() {
        return Decision::Confirm(format!(
            "not healthy ({why}), but slot {booted} is a factory boot (it holds the image it \
             was flashed with, as the other slot does): a factory image is never marked bad"
        ));
    }
    match &f.other {
        OtherSlot::Good => Decision::MarkBad,
        OtherSlot::Bad => Decision::Confirm(format!(
            "not healthy ({why}), but the other slot is not known good (it is marked bad): \
             staying on slot {booted}, there is nothing better to go back to"
        )),
        OtherSlot::Unknown(u) => Decision::Withhold(format!(
            "not healthy ({why}), and the other slot is not known good ({u}): not marked, \
             not confirmed; the bootloader's boot retries decide"
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

/// The installation in `spool`'s [`MARKER`] (its `id=` line, else its whole text; its
/// `card=present|absent` line); `None` when there is no marker (a factory boot).
pub fn installation(spool: &Path) -> Option<Installation> {
    let text = std::fs::read_to_string(spool.join(MARKER)).ok()?;
    let id = text
        .lines()
        .find_map(|l| l.strip_prefix("id="))
        .unwrap_or(text.trim());
    let had_card = text
        .lines()
        .find_map(|l| l.strip_prefix("card="))
        .and_then(|c| match c.trim() {
            "present" => Some(true),
            "absent" => Some(false),
            _ => None,
        });
    Some(Installation {
        id: id.trim().to_string(),
        had_card,
    })
}

/// The earlier verdict in `spool`'s [`STAMP`] (`<slot> <installation id|factory>
/// <good|bad>`) for the installation `key` (its id, or `factory`).
pub fn judged(spool: &Path, key: &str) -> Option<Judged> {
    let text = std::fs::read_to_string(spool.join(STAMP)).ok()?;
    let mut words = text.split_whitespace();
    let (_slot, id, verdict) = (words.next()?, words.next()?, words.next()?);
    if id != key {
        return None;
    }
    match verdict {
        "good" => Some(Judged::Good),
        "bad" => Some(Judged::Bad),
        _ => None,
    }
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

/// Whether the card's control node (`FPGAGDR_CARD_NODE`, default [`CARD_NODE`]) exists.
fn card_present() -> bool {
    std::env::var_os("FPGAGDR_CARD_NODE")
        .map_or_else(|| CARD_NODE.into(), std::path::PathBuf::from)
        .exists()
}

/// The appliance's health, probed every [`PROBE_EVERY`] until `deadline`: the service at
/// `addr` (see [`probe`]) and, when `need_card`, the card's control node.
fn health(addr: SocketAddr, need_card: bool, timeout: Duration) -> Health {
    let deadline = Instant::now() + timeout;
    loop {
        let seen = probe(addr).and_then(|()| {
            if need_card && !card_present() {
                Err(format!(
                    "the appliance had a card when this update was installed, and this slot \
                     does not see it ({} is missing: the fpgagdr module did not load, or does \
                     not find the card)",
                    std::env::var("FPGAGDR_CARD_NODE").unwrap_or_else(|_| CARD_NODE.into())
                ))
            } else {
                Ok(())
            }
        });
        match seen {
            Ok(()) => return Health::Healthy,
            Err(e) if Instant::now() >= deadline => {
                return Health::Unhealthy(format!("after {timeout:?}: {e}"));
            }
            Err(_) => std::thread::sleep(PROBE_EVERY),
        }
    }
}

/// Judges this boot (see the module docs): gathers the [`Facts`] (RAUC on `bus`, tried
/// for at most `rauc_wait`; the health of the service at `listen`, waited for at most
/// `timeout`; the marker and the stamp in `spool`), [`decide`]s and acts, and writes the
/// [`crate::boot::Report`]. `Err` (exit status 1) whenever the boot must not be confirmed: after
/// marking the booted slot bad, or failing to, and when it was not judged or was judged
/// bad before.
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
    // Reachable means answering: RAUC that D-Bus can activate but that fails to start (a
    // system.conf it cannot read) is out of reach too.
    let (rauc, booted, other) = match rauc {
        Ok(r) => match slots(&runtime, &r) {
            Ok((booted, other)) => (Ok(r), booted, other),
            Err(e) => {
                let e = format!("{bus} names it, but it does not answer (GetSlotStatus: {e})");
                (Err(e.clone()), None, OtherSlot::Unknown(e))
            }
        },
        Err(e) => (Err(e.clone()), None, OtherSlot::Unknown(e)),
    };
    let installation = installation(spool);
    let key = installation
        .as_ref()
        .map_or_else(|| "factory".to_string(), |i| i.id.clone());
    let judged = judged(spool, &key);
    // The boot chain's firmware first: a capsule's result is read once, whatever the
    // verdict.
    let (capsule, notes) = crate::boot::after_boot(
        &crate::boot::esp_dir(),
        &crate::boot::esrt_dir(),
        booted.as_deref(),
        installation.is_none(),
    );
    for n in &notes {
        println!("fpgagdrd: {n}");
    }
    if let Some(c) = &capsule {
        println!(
            "fpgagdrd: bootloader capsule {} for chain {}: {} ({})",
            c.version,
            c.target,
            if c.ok { "applied" } else { "NOT applied" },
            c.detail
        );
    }
    // Health is only probed when it decides something.
    let need_health = judged.is_none() && rauc.is_ok() && ab_armed && booted.is_some();
    let health = if need_health {
        let need_card = installation.as_ref().and_then(|i| i.had_card) == Some(true);
        health(addr, need_card, timeout)
    } else {
        Health::Unhealthy("not probed".into())
    };
    let facts = Facts {
        rauc: rauc.as_ref().map(|_| ()).map_err(Clone::clone),
        ab_armed,
        booted: booted.clone(),
        other,
        installation: installation.clone(),
        judged,
        health,
    };
    let slot = booted.clone().unwrap_or_else(|| "?".into());
    let stamp = spool.join(STAMP);
    // A stamp that cannot be written only means the next boot judges again.
    let write_stamp = |result: &str| {
        if let Err(e) = std::fs::create_dir_all(spool)
            .and_then(|()| std::fs::write(&stamp, format!("{slot} {key} {result}\n")))
        {
            println!("fpgagdrd: cannot write {}: {e}", stamp.display());
        }
    };
    let write_report = |verdict: &str, reason: &str, confirmed: bool| {
        let r = crate::boot::Report {
            slot: booted.clone(),
            installation: installation.as_ref().map(|i| i.id.clone()),
            verdict: verdict.into(),
            reason: reason.into(),
            confirmed,
            capsule: capsule.clone(),
            chains: crate::boot::chains(&crate::boot::esp_dir())
                .into_iter()
                .map(|(k, v)| (k, crate::boot::hex(v)))
                .collect(),
            at_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
        };
        let json = serde_json::to_string_pretty(&r).expect("the report serialises");
        let tmp = spool.join(format!("{}.tmp", crate::boot::REPORT));
        if let Err(e) = std::fs::create_dir_all(spool)
            .and_then(|()| std::fs::write(&tmp, json))
            .and_then(|()| std::fs::rename(&tmp, spool.join(crate::boot::REPORT)))
        {
            println!(
                "fpgagdrd: cannot write {}: {e}",
                spool.join(crate::boot::REPORT).display()
            );
        }
    };
    match (decide(&facts), rauc) {
        (Decision::Confirm(why), _) => {
            match facts.judged {
                Some(_) => println!("fpgagdrd: slot {slot} ({key}) was {why}"),
                None => println!("fpgagdrd: {why}"),
            }
            write_report("confirmed", &why, true);
            Ok(())
        }
        (Decision::Withhold(why), _) => {
            write_report("not-confirmed", &why, false);
            Err(format!("slot {slot} ({key}): {why}"))
        }
        (Decision::MarkGood, Ok(r)) => {
            match mark(&runtime, &r, "good") {
                Ok(msg) => {
                    write_stamp("good");
                    let why = format!("healthy; slot {slot} marked good ({msg})");
                    println!("fpgagdrd: {why}");
                    write_report("marked-good", &why, true);
                }
                Err(e) => {
                    // Healthy: the boot is confirmed to the bootloader all the same; RAUC's
                    // own record is tried again on the next boot.
                    let why = format!(
                        "healthy, but slot {slot} could not be marked good ({e}); the next boot tries again"
                    );
                    println!("fpgagdrd: {why}");
                    write_report("mark-failed", &why, true);
                }
            }
            Ok(())
        }
        (Decision::MarkBad, Ok(r)) => {
            let Health::Unhealthy(why) = &facts.health else {
                unreachable!("MarkBad is decided only when unhealthy")
            };
            let msg = match mark(&runtime, &r, "bad") {
                Ok(msg) => msg,
                Err(e) => {
                    let said = format!(
                        "not healthy ({why}); marking slot {slot} bad failed ({e}): no reboot; the boot \
                         stays unconfirmed, so the bootloader goes back to the other slot after its boot retries"
                    );
                    write_report("mark-failed", &said, false);
                    return Err(said);
                }
            };
            write_stamp("bad");
            let command =
                std::env::var("FPGAGDR_REBOOT_COMMAND").unwrap_or_else(|_| REBOOT_COMMAND.into());
            let said = format!("not healthy ({why}); slot {slot} marked bad ({msg})");
            write_report("marked-bad", &said, false);
            let rebooting = std::process::Command::new("sh")
                .args(["-c", &command])
                .status()
                .map_err(|e| e.to_string())
                .and_then(|s| s.success().then_some(()).ok_or(s.to_string()));
            Err(match rebooting {
                Ok(()) => format!("{said}; rebooting into the other slot"),
                Err(e) => format!(
                    "{said}, but the reboot could not be requested ({command}: {e}): reboot by hand"
                ),
            })
        }
        (_, Err(_)) => unreachable!("decide marks nothing without RAUC"),
    }
}

/// The booted slot's bootname and the other rootfs slot's state, from RAUC; `Err` when
/// RAUC does not answer `GetSlotStatus`.
fn slots(
    runtime: &tokio::runtime::Runtime,
    rauc: &Rauc,
) -> Result<(Option<String>, OtherSlot), String> {
    let slots = runtime.block_on(rauc.slots())?;
    let (booted, other) = rootfs_slots(&slots);
    // RAUC's BootSlot property names the bootname on a device and a root device
    // elsewhere (RAUC 1.13 with a root=PARTUUID kernel line): the slot list first.
    let booted = booted.or_else(|| {
        runtime
            .block_on(rauc.string("BootSlot"))
            .ok()
            .filter(|b| !b.is_empty())
    });
    Ok((booted, other))
}

/// The booted rootfs slot's bootname and the other rootfs slot's state, from RAUC's
/// `GetSlotStatus` (child slots, such as a slot's kernel partition, are left out: RAUC
/// reports them booted with their parent).
fn rootfs_slots(slots: &[serde_json::Value]) -> (Option<String>, OtherSlot) {
    let rootfs = || slots.iter().filter(|s| s["class"] == "rootfs");
    let booted = rootfs()
        .find(|s| s["state"] == "booted")
        .and_then(|s| s["bootname"].as_str())
        .map(str::to_string);
    let other = match rootfs().find(|s| s["state"] != "booted") {
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
            installation: Some(Installation {
                id: "5d1f0c2e".into(),
                had_card: None,
            }),
            judged: None,
            health: Health::Unhealthy("pipeline failed".into()),
        }
    }

    fn confirms(f: &Facts, saying: &str) {
        match decide(f) {
            Decision::Confirm(why) => assert!(why.contains(saying), "{why}"),
            d => panic!("{d:?} for {f:?}"),
        }
    }

    fn withholds(f: &Facts, saying: &str) {
        match decide(f) {
            Decision::Withhold(why) => assert!(why.contains(saying), "{why}"),
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
            confirms(&f, "factory");
        }
    }

    #[test]
    fn without_ab_armed_nothing_is_judged() {
        let mut f = facts();
        f.ab_armed = false;
        confirms(&f, "not armed");
        f.health = Health::Healthy;
        confirms(&f, "not armed");
    }

    #[test]
    fn an_update_without_rauc_is_not_confirmed_a_factory_boot_is() {
        let mut f = facts();
        f.rauc = Err("gave up after 30 attempts".into());
        withholds(&f, "RAUC is not reachable");
        f.health = Health::Healthy;
        withholds(&f, "RAUC is not reachable");
        f.installation = None;
        confirms(&f, "factory");
    }

    #[test]
    fn bad_is_marked_only_when_the_other_slot_is_known_good() {
        let mut f = facts();
        f.other = OtherSlot::Bad;
        confirms(&f, "nothing better to go back to");
        f.other = OtherSlot::Unknown("no boot status".into());
        withholds(&f, "not known good");
        f.other = OtherSlot::Good;
        f.booted = None;
        withholds(&f, "booted");
    }

    #[test]
    fn an_earlier_verdict_stands_whatever_this_boot_looks_like() {
        let mut f = facts();
        f.judged = Some(Judged::Bad);
        for health in [Health::Healthy, Health::Unhealthy("x".into())] {
            f.health = health;
            withholds(&f, "judged bad");
        }
        f.rauc = Err("away".into());
        withholds(&f, "judged bad");
        f.judged = Some(Judged::Good);
        confirms(&f, "confirmed before");
    }

    #[test]
    fn the_installation_and_its_card_come_from_the_marker() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(installation(dir.path()), None);
        std::fs::write(dir.path().join(MARKER), "slot=rootfs.1\nid=abc-123\n").unwrap();
        assert_eq!(
            installation(dir.path()),
            Some(Installation {
                id: "abc-123".into(),
                had_card: None
            })
        );
        std::fs::write(
            dir.path().join(MARKER),
            "id=abc-123\ncard=present\nslot=rootfs.1\n",
        )
        .unwrap();
        assert_eq!(installation(dir.path()).unwrap().had_card, Some(true));
        std::fs::write(dir.path().join(MARKER), "id=abc-123\ncard=absent\n").unwrap();
        assert_eq!(installation(dir.path()).unwrap().had_card, Some(false));
    }

    #[test]
    fn the_booted_rootfs_slot_is_read_from_the_slot_list_children_left_out() {
        let slot = |name: &str, class: &str, state: &str, boot: Option<&str>, status: &str| {
            let mut s = serde_json::json!({"name": name, "class": class, "state": state,
                                           "boot-status": status});
            if let Some(b) = boot {
                s["bootname"] = b.into();
            }
            s
        };
        let list = [
            slot("dtb.1", "dtb", "booted", None, "good"),
            slot("kernel.1", "kernel", "booted", None, "good"),
            slot("rootfs.0", "rootfs", "inactive", Some("A"), "bad"),
            slot("rootfs.1", "rootfs", "booted", Some("B"), "good"),
        ];
        assert_eq!(rootfs_slots(&list), (Some("B".into()), OtherSlot::Bad));
    }

    #[test]
    fn the_stamp_counts_for_its_own_installation_only() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(judged(dir.path(), "abc"), None);
        std::fs::write(dir.path().join(STAMP), "B abc bad\n").unwrap();
        assert_eq!(judged(dir.path(), "abc"), Some(Judged::Bad));
        assert_eq!(judged(dir.path(), "other"), None);
        std::fs::write(dir.path().join(STAMP), "A factory good\n").unwrap();
        assert_eq!(judged(dir.path(), "factory"), Some(Judged::Good));
    }
}
