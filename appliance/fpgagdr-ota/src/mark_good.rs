//! `fpgagdrd --mark-good-after-health`: the one-shot that confirms a freshly installed
//! slot. Run by `fpgagdr-mark-good.service` after `fpgagdrd.service` on every boot.
//!
//! Owns: [`run`]. It waits until the service answers `GET /api/v1/status` with a pipeline
//! that is not `failed` (bounded), then calls RAUC's `Mark("good", "booted")`. When the
//! service stays unhealthy it calls `Mark("bad", "booted")` and fails, so that the unit's
//! `FailureAction=reboot` lets the bootloader fall back to the other slot.
//! A slot is judged once per installation: the booted slot's `installed.timestamp` (from
//! `GetSlotStatus`) is written to a stamp file after the verdict; a later boot of the same
//! installation finds it and does nothing (a transient fault later never rolls back).
//! Must not: mark anything without having reached RAUC, or mark bad a slot that was
//! already confirmed.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use super::rauc::{Bus, Rauc};

/// Pause between two health probes.
const PROBE_EVERY: Duration = Duration::from_secs(2);
/// Name of the stamp file in the spool directory.
pub const STAMP: &str = "mark-good.stamp";

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

/// Waits (at most `timeout`) for the service at `listen` to be healthy, then marks the
/// booted slot good (or bad) through RAUC on `bus`, once per installation.
pub fn run(listen: SocketAddr, bus: &Bus, spool: &Path, timeout: Duration) -> Result<(), String> {
    let mut addr = listen;
    if addr.ip().is_unspecified() {
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let rauc = runtime
        .block_on(async { tokio::time::timeout(super::CONNECT_TIMEOUT, Rauc::connect(bus)).await })
        .map_err(|_| format!("{bus} did not answer"))??;
    let booted = runtime.block_on(rauc.string("BootSlot"))?;
    let slots = runtime.block_on(rauc.slots())?;
    let installed = slots
        .iter()
        .find(|s| s["state"] == "booted")
        .and_then(|s| s["installed.timestamp"].as_str())
        .unwrap_or("factory")
        .to_string();
    let verdict = format!("{booted} {installed}");
    let stamp = spool.join(STAMP);
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == verdict) {
        println!("fpgagdrd: slot {booted} (installed {installed}) was confirmed before");
        return Ok(());
    }
    let deadline = Instant::now() + timeout;
    let health = loop {
        match probe(addr) {
            Ok(()) => break Ok(()),
            Err(e) if Instant::now() >= deadline => break Err(e),
            Err(_) => std::thread::sleep(PROBE_EVERY),
        }
    };
    let state = if health.is_ok() { "good" } else { "bad" };
    let msg = runtime.block_on(rauc.mark(state, "booted"))?;
    std::fs::create_dir_all(spool)
        .and_then(|()| std::fs::write(&stamp, format!("{verdict}\n")))
        .map_err(|e| format!("{}: {e}", stamp.display()))?;
    match health {
        Ok(()) => {
            println!("fpgagdrd: healthy; slot {booted} marked good ({msg})");
            Ok(())
        }
        Err(e) => Err(format!(
            "not healthy after {timeout:?} ({e}); slot {booted} marked bad ({msg})"
        )),
    }
}
