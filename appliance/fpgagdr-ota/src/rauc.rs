//! RAUC's D-Bus API (`de.pengutronix.rauc.Installer` at `/`), as far as the service uses
//! it: install, inspect, mark, slot status, and the properties and signal that report
//! progress.
//!
//! Owns: [`Bus`] (which bus), [`Rauc`] (a connection and its proxy), [`to_json`].
//! Must not: hold state between calls (that is `ota/mod.rs`). Methods newer than RAUC
//! 1.8 (the oldest supported: Debian 12's) are used only when introspection shows them
//! ([`Rauc::features`]); 1.8 has `InstallBundle`, `Info`, `Mark`, `GetSlotStatus`,
//! `GetPrimary`, the properties `Operation`, `Progress`, `LastError`, `Compatible`,
//! `BootSlot`, and the signal `Completed`.

use std::collections::HashMap;

use serde_json::{Map, Value as Json, json};
use zbus::proxy::CacheProperties;
use zbus::zvariant::{OwnedValue, Value};

/// RAUC's well-known bus name.
pub const SERVICE: &str = "de.pengutronix.rauc";
/// The installer interface.
pub const INTERFACE: &str = "de.pengutronix.rauc.Installer";
/// The object that carries it.
pub const PATH: &str = "/";
/// Methods that a RAUC newer than 1.8 may have; reported and used when present.
pub const OPTIONAL_METHODS: [&str; 2] = ["InspectBundle", "GetArtifactStatus"];

/// Which D-Bus bus RAUC is looked for on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bus {
    /// The system bus (`DBUS_SYSTEM_BUS_ADDRESS`, else the standard socket): the device.
    System,
    /// The session bus (`DBUS_SESSION_BUS_ADDRESS`).
    Session,
    /// A bus address such as `unix:path=/tmp/test/bus` (tests).
    Address(String),
}

impl std::str::FromStr for Bus {
    type Err = String;
    fn from_str(s: &str) -> Result<Bus, String> {
        match s {
            "system" => Ok(Bus::System),
            "session" => Ok(Bus::Session),
            a if a.contains(':') && a.contains('=') => Ok(Bus::Address(a.to_string())),
            other => Err(format!(
                "{other:?}: expected system, session or a D-Bus address such as unix:path=/run/bus"
            )),
        }
    }
}

impl std::fmt::Display for Bus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bus::System => f.write_str("the system bus"),
            Bus::Session => f.write_str("the session bus"),
            Bus::Address(a) => write!(f, "bus {a}"),
        }
    }
}

/// A connection to RAUC.
#[derive(Debug, Clone)]
pub struct Rauc {
    conn: zbus::Connection,
    proxy: zbus::Proxy<'static>,
}

/// Progress as RAUC reports it: percentage, message, nesting depth.
pub type Progress = (i32, String, i32);

impl Rauc {
    /// Connects to `bus` and checks that RAUC is there (owns its name, or can be
    /// started by D-Bus activation). The error is a sentence for the user.
    pub async fn connect(bus: &Bus) -> Result<Rauc, String> {
        let builder = match bus {
            Bus::System => zbus::connection::Builder::system(),
            Bus::Session => zbus::connection::Builder::session(),
            Bus::Address(a) => zbus::connection::Builder::address(a.as_str()),
        }
        .map_err(|e| format!("cannot connect to {bus}: {e}"))?;
        let conn = builder
            .method_timeout(std::time::Duration::from_secs(60))
            .build()
            .await
            .map_err(|e| format!("cannot connect to {bus}: {e}"))?;
        let dbus = zbus::fdo::DBusProxy::new(&conn)
            .await
            .map_err(|e| format!("{bus}: {e}"))?;
        let name = zbus::names::BusName::try_from(SERVICE).expect("valid bus name");
        let owned = dbus.name_has_owner(name).await.unwrap_or(false);
        if !owned {
            let activatable = dbus
                .list_activatable_names()
                .await
                .map(|names| names.iter().any(|n| n.as_str() == SERVICE))
                .unwrap_or(false);
            if !activatable {
                return Err(format!(
                    "RAUC ({SERVICE}) is not on {bus}: is the rauc service installed and running?"
                ));
            }
        }
        let proxy = zbus::proxy::Builder::new(&conn)
            .destination(SERVICE)
            .and_then(|b| b.path(PATH))
            .and_then(|b| b.interface(INTERFACE))
            .map_err(|e| e.to_string())?
            .cache_properties(CacheProperties::No)
            .build()
            .await
            .map_err(|e| format!("RAUC on {bus}: {e}"))?;
        Ok(Rauc { conn, proxy })
    }

    /// The connection (for signal streams).
    pub fn connection(&self) -> &zbus::Connection {
        &self.conn
    }

    /// The installer proxy (for signal streams).
    pub fn proxy(&self) -> &zbus::Proxy<'static> {
        &self.proxy
    }

    /// Which of [`OPTIONAL_METHODS`] this RAUC has (from its introspection data).
    pub async fn features(&self) -> Vec<String> {
        let xml = match zbus::fdo::IntrospectableProxy::builder(&self.conn)
            .destination(SERVICE)
            .and_then(|b| b.path(PATH))
        {
            Ok(b) => match b.build().await {
                Ok(p) => p.introspect().await.unwrap_or_default(),
                Err(_) => String::new(),
            },
            Err(_) => String::new(),
        };
        OPTIONAL_METHODS
            .iter()
            .filter(|m| xml.contains(&format!("<method name=\"{m}\"")))
            .map(|m| m.to_string())
            .collect()
    }

    /// A string property (`Operation`, `LastError`, `Compatible`, `BootSlot`).
    pub async fn string(&self, name: &str) -> Result<String, String> {
        self.proxy
            .get_property::<String>(name)
            .await
            .map_err(|e| message(&e))
    }

    /// The `Progress` property.
    pub async fn progress(&self) -> Result<Progress, String> {
        self.proxy
            .get_property::<Progress>("Progress")
            .await
            .map_err(|e| message(&e))
    }

    /// `GetPrimary`: the slot the bootloader boots next.
    pub async fn primary(&self) -> Result<String, String> {
        self.proxy
            .call::<_, _, String>("GetPrimary", &())
            .await
            .map_err(|e| message(&e))
    }

    /// `GetSlotStatus`, as JSON objects with the slot name under `name`.
    pub async fn slots(&self) -> Result<Vec<Json>, String> {
        let raw: Vec<(String, HashMap<String, OwnedValue>)> = self
            .proxy
            .call("GetSlotStatus", &())
            .await
            .map_err(|e| message(&e))?;
        let mut out: Vec<Json> = raw
            .into_iter()
            .map(|(name, dict)| {
                let mut m: Map<String, Json> =
                    dict.iter().map(|(k, v)| (k.clone(), to_json(v))).collect();
                m.insert("name".into(), Json::String(name));
                Json::Object(m)
            })
            .collect();
        out.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        Ok(out)
    }

    /// `InstallBundle(path, {})`: starts an installation; RAUC reports its end with
    /// the `Completed` signal.
    pub async fn install(&self, bundle: &str) -> Result<(), String> {
        let args: HashMap<&str, Value<'_>> = HashMap::new();
        self.proxy
            .call::<_, _, ()>("InstallBundle", &(bundle, args))
            .await
            .map_err(|e| message(&e))
    }

    /// Checks a bundle's signature against the keyring and reads its manifest:
    /// `InspectBundle` where this RAUC has it, else `Info`. Returns
    /// `{"compatible", "version"}` (and more where `InspectBundle` gives it).
    pub async fn inspect(&self, bundle: &str, features: &[String]) -> Result<Json, String> {
        if features.iter().any(|f| f == "InspectBundle") {
            let args: HashMap<&str, Value<'_>> = HashMap::new();
            let info: HashMap<String, OwnedValue> = self
                .proxy
                .call("InspectBundle", &(bundle, args))
                .await
                .map_err(|e| message(&e))?;
            let update = info.get("update").map(|v| to_json(v)).unwrap_or(Json::Null);
            return Ok(json!({
                "compatible": update.get("compatible").cloned().unwrap_or(Json::Null),
                "version": update.get("version").cloned().unwrap_or(Json::Null),
                "description": update.get("description").cloned().unwrap_or(Json::Null),
                "build": update.get("build").cloned().unwrap_or(Json::Null),
            }));
        }
        let (compatible, version): (String, String) = self
            .proxy
            .call("Info", &(bundle,))
            .await
            .map_err(|e| message(&e))?;
        Ok(json!({"compatible": compatible, "version": version}))
    }

    /// `Mark(state, slot)`: `state` is `good`, `bad` or `active`; `slot` is `booted`,
    /// `other` or a slot name. Returns RAUC's message.
    pub async fn mark(&self, state: &str, slot: &str) -> Result<String, String> {
        let (_, msg): (String, String) = self
            .proxy
            .call("Mark", &(state, slot))
            .await
            .map_err(|e| message(&e))?;
        Ok(msg)
    }
}

/// What RAUC 1.8 answers over D-Bus when its `Info` method refuses a bundle: no reason
/// (it logs the reason instead).
pub const REASONLESS_INFO: &str = "rauc info error";
/// How long `rauc info` may take when it is asked for a reason.
pub const CLI_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// RAUC's reason for refusing `bundle`, given its D-Bus error `e`: `e` itself, or, when
/// that is RAUC 1.8's reason-less [`REASONLESS_INFO`], what RAUC's own command line
/// (`rauc [--conf=CONF] info BUNDLE`, run within [`CLI_TIMEOUT`]) says: the last line it
/// writes that is not one of its progress messages. The verdict stays the daemon's;
/// only the words come from the command line.
pub async fn refusal_reason(e: &str, bundle: &str, conf: Option<&std::path::Path>) -> String {
    if e.trim() != REASONLESS_INFO {
        return e.to_string();
    }
    let mut cmd = tokio::process::Command::new("rauc");
    if let Some(c) = conf {
        cmd.arg(format!("--conf={}", c.display()));
    }
    cmd.arg("info")
        .arg(bundle)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let out = match tokio::time::timeout(CLI_TIMEOUT, cmd.output()).await {
        Ok(Ok(out)) => out,
        Ok(Err(err)) => {
            return format!("{e} (no reason over D-Bus, and `rauc info` could not run: {err})");
        }
        Err(_) => return format!("{e} (no reason over D-Bus; `rauc info` did not answer)"),
    };
    let said = String::from_utf8_lossy(&out.stderr);
    let reason = said
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("rauc-Message") && !l.starts_with("(rauc:"));
    match (out.status.success(), reason) {
        (false, Some(r)) => r.chars().take(500).collect(),
        _ => format!("{e} (RAUC gave no reason; its log has it)"),
    }
}

/// RAUC's own error text without zbus's wrapping (`org.gtk.GDBus.UnmappedGError...`).
fn message(e: &zbus::Error) -> String {
    match e {
        zbus::Error::MethodError(_, Some(text), _) => text.clone(),
        other => other.to_string(),
    }
}

/// A D-Bus value as JSON: numbers, strings and booleans as themselves, arrays as arrays,
/// dictionaries as objects (keys as text), structures as arrays, variants unwrapped.
pub fn to_json(v: &Value<'_>) -> Json {
    match v {
        Value::U8(n) => json!(n),
        Value::Bool(b) => json!(b),
        Value::I16(n) => json!(n),
        Value::U16(n) => json!(n),
        Value::I32(n) => json!(n),
        Value::U32(n) => json!(n),
        Value::I64(n) => json!(n),
        Value::U64(n) => json!(n),
        Value::F64(n) => json!(n),
        Value::Str(s) => json!(s.as_str()),
        Value::Signature(s) => json!(s.to_string()),
        Value::ObjectPath(p) => json!(p.as_str()),
        Value::Value(inner) => to_json(inner),
        Value::Array(a) => Json::Array(a.iter().map(to_json).collect()),
        Value::Dict(d) => Json::Object(
            d.iter()
                .map(|(k, v)| {
                    let key = match to_json(k) {
                        Json::String(s) => s,
                        other => other.to_string(),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
        Value::Structure(s) => Json::Array(s.fields().iter().map(to_json).collect()),
        #[allow(unreachable_patterns)]
        _ => Json::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_choices_parse() {
        assert_eq!("system".parse::<Bus>(), Ok(Bus::System));
        assert_eq!(
            "unix:path=/tmp/b".parse::<Bus>(),
            Ok(Bus::Address("unix:path=/tmp/b".into()))
        );
        assert!("nonsense".parse::<Bus>().is_err());
    }

    #[test]
    fn values_become_json() {
        let mut d = HashMap::new();
        d.insert("state", Value::from("booted"));
        d.insert("size", Value::from(4096u64));
        let v = Value::from(d);
        let j = to_json(&v);
        assert_eq!(j["state"], "booted");
        assert_eq!(j["size"], 4096);
    }
}
