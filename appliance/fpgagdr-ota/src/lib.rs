//! Over-the-air updates through RAUC: the spool, the installation in progress, and what
//! `GET /api/v1/ota` and the `ota` events of the live stream report.
//!
//! Owns: [`Settings`] (bus, spool directory, size limit), [`Ota`] (the shared state and
//! the one-install-at-a-time rule), [`spawn_monitor`] (a task that follows RAUC's
//! `Progress`/`Operation`/`LastError` properties and `Completed` signal, reconnecting
//! when RAUC comes and goes). Must not: block the HTTP side on RAUC (every call has
//! zbus's method timeout) or make anything else depend on RAUC: without it, OTA is
//! reported `unavailable` with the reason and every other endpoint works.
//! Neighbours: `rauc.rs` (D-Bus calls), `spool.rs` (uploads), `mark_good.rs` (first-boot
//! health check); above it the service's `api/ota.rs` (HTTP) and the live stream, which
//! forwards [`Events`] as its `ota` event. This crate knows nothing of HTTP.
#![forbid(unsafe_code)]

pub mod boot;
pub mod mark_good;
pub mod rauc;
pub mod spool;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;
use tokio_stream::{Stream, StreamExt};

use rauc::{Bus, Rauc};

/// Default upper bound of an uploaded bundle, bytes (a compressed Orin rootfs image is
/// well below it; the limit protects the spool's file system).
pub const DEFAULT_MAX_BYTES: u64 = 8 * 1024 * 1024 * 1024;
/// Pause between two attempts to reach RAUC while it is not on the bus.
pub const RECONNECT_EVERY: Duration = Duration::from_secs(5);
/// Longest wait for the bus to answer while connecting (a bus whose policy drops the
/// replies would otherwise hold the monitor forever).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// Uploads received at once; a third waits for neither and is refused (409).
pub const MAX_UPLOADS: usize = 2;

/// OTA settings from the command line.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where RAUC is looked for.
    pub bus: Bus,
    /// Directory for uploaded bundles (must be readable by RAUC, which runs as root).
    pub spool: PathBuf,
    /// Largest bundle accepted, bytes.
    pub max_bytes: u64,
    /// Free space kept in the spool's file system beside a bundle, bytes.
    pub reserve_bytes: u64,
    /// Longest time an upload may send nothing.
    pub stall: Duration,
    /// RAUC's system.conf, for `rauc info` when RAUC's D-Bus answer gives no reason
    /// (`None`: RAUC's default, /etc/rauc/system.conf).
    pub rauc_conf: Option<PathBuf>,
}

impl Settings {
    /// Settings with the defaults for everything but where RAUC and the spool are.
    pub fn new(bus: Bus, spool: PathBuf) -> Settings {
        Settings {
            bus,
            spool,
            max_bytes: DEFAULT_MAX_BYTES,
            reserve_bytes: spool::RESERVE_BYTES,
            stall: spool::DEFAULT_STALL,
            rauc_conf: None,
        }
    }
}

/// `GET /api/v1/ota` (and the `ota` event of the live stream): RAUC's state, the update
/// in progress, the slots and the spooled bundle.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OtaStatus {
    /// Whether RAUC is reachable.
    pub available: bool,
    /// Why not, when it is not.
    pub reason: Option<String>,
    /// The D-Bus bus RAUC is looked for on.
    pub bus: String,
    /// `unavailable`, `installing` or `idle`.
    pub operation: &'static str,
    /// RAUC's progress of the installation running, if any.
    pub progress: Option<OtaProgress>,
    /// RAUC's `LastError`, if any.
    pub last_error: Option<String>,
    /// The last installation's outcome, if one ended since the service started.
    pub last_result: Option<Outcome>,
    /// This system's `compatible` (a bundle must match it).
    pub compatible: Option<String>,
    /// The slot the system booted from.
    pub booted_slot: Option<String>,
    /// The slot the bootloader boots next.
    pub primary_slot: Option<String>,
    /// RAUC's slot status (`GetSlotStatus`), one object per slot, as RAUC gives it.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub slots: Vec<Value>,
    /// The D-Bus methods this RAUC offers (e.g. `InspectBundle`).
    pub features: Vec<String>,
    /// The uploaded bundle waiting in the spool, if any.
    pub bundle: Option<spool::Spooled>,
    /// Largest bundle accepted, bytes.
    pub max_bundle_bytes: u64,
    /// How this boot was judged (`fpgagdrd --mark-good-after-health`), with the result of
    /// a bootloader capsule the last installation staged; `null` before it ran.
    pub boot_check: Option<boot::Report>,
    /// The running boot firmware, from the UEFI ESRT; `null` where there is none.
    pub bootloader: Option<Bootloader>,
}

/// The boot firmware as the OTA status shows it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Bootloader {
    /// The running firmware's version (`0x00240500` for L4T 36.5.0).
    pub version: String,
    /// The lowest version a capsule may bring (no downgrade below it).
    pub lowest_supported: String,
    /// The last capsule version the firmware tried, and its status (0: success).
    pub last_attempt_version: String,
    /// UEFI `LAST_ATTEMPT_STATUS` of that attempt (0: success).
    pub last_attempt_status: u32,
    /// The firmware version recorded per boot chain (`A`, `B`), where known (as
    /// mark-good found it on this boot).
    pub chains: std::collections::BTreeMap<String, String>,
}

/// RAUC's progress: percentage, message and nesting depth.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OtaProgress {
    /// Percent done.
    pub percent: i32,
    /// What RAUC is doing.
    pub message: String,
    /// Nesting depth of the step.
    pub depth: i32,
}

/// `POST /api/v1/ota/bundles`: the bundle that arrived and what RAUC read from it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UploadedBundle {
    /// Lower-case hex SHA-256, the bundle's id for `POST /api/v1/ota/install`.
    pub sha256: String,
    /// Size, bytes.
    pub bytes: u64,
    /// The bundle's `compatible`.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub compatible: Value,
    /// The bundle's version.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub version: Value,
    /// What RAUC's `InspectBundle` (or `Info`) said about it.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub manifest: Value,
}

/// The last installation's outcome.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Outcome {
    /// `true` when RAUC reported success (`Completed` 0).
    pub ok: bool,
    /// RAUC's `LastError` when it failed.
    pub error: Option<String>,
    /// SHA-256 of the bundle, when this service started the installation.
    pub bundle: Option<String>,
    /// Unix time of the end, seconds.
    pub finished_unix_s: f64,
}

/// What is known about RAUC and the update in progress.
#[derive(Debug, Clone, Default)]
struct Known {
    /// `None` while connected; otherwise why OTA is unavailable.
    unavailable: Option<String>,
    operation: String,
    progress: Option<rauc::Progress>,
    last_error: String,
    compatible: String,
    boot_slot: String,
    primary: Option<String>,
    slots: Vec<Value>,
    features: Vec<String>,
    /// SHA-256 of the bundle this service asked RAUC to install, until `Completed`.
    installing: Option<String>,
    /// RAUC's `GetSlotStatus` when that installation began: what an installation whose
    /// `Completed` never came is judged against ([`unfinished_outcome`]).
    slots_before: Vec<Value>,
    last_result: Option<Outcome>,
}

/// Shared OTA state: cheap to clone.
#[derive(Clone)]
pub struct Ota {
    settings: Arc<Settings>,
    known: Arc<Mutex<Known>>,
    rauc: Arc<tokio::sync::RwLock<Option<Rauc>>>,
    /// Serialises install requests and the end of uploads (an upload must not replace
    /// the bundle an install is about to read). Never held while a body arrives.
    gate: Arc<tokio::sync::Mutex<()>>,
    /// Places for uploads being received ([`MAX_UPLOADS`]).
    uploads: Arc<tokio::sync::Semaphore>,
    events: Events,
}

/// Where [`Ota`] sends its status (the JSON of [`Ota::status`]) after every change: the
/// service forwards it as the `ota` event of the live stream.
pub type Events = Arc<dyn Fn(Arc<str>) + Send + Sync>;

impl std::fmt::Debug for Ota {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ota")
            .field("settings", &self.settings)
            .finish()
    }
}

/// Why an OTA request was refused: the API maps each to a problem.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtaError {
    /// RAUC is not reachable.
    #[error("OTA is unavailable: {0}")]
    Unavailable(String),
    /// An installation is running.
    #[error("an installation is already running ({0}); wait for it to finish")]
    Busy(String),
    /// No such bundle in the spool.
    #[error("no uploaded bundle with SHA-256 {0}: upload it first (POST /api/v1/ota/bundles)")]
    NoBundle(String),
    /// RAUC refused the bundle (signature, format, compatible).
    #[error("{0}")]
    Refused(String),
    /// The upload itself failed.
    #[error(transparent)]
    Spool(#[from] spool::SpoolError),
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

impl Ota {
    /// State for `settings`; OTA is `unavailable` until the monitor reached RAUC. Every
    /// change is sent to `events` as the JSON of [`Ota::status`].
    pub fn new(settings: Settings, events: Events) -> Ota {
        if let Err(e) = spool::prepare(&settings.spool) {
            tracing::warn!("OTA spool {}: {e}", settings.spool.display());
        }
        let known = Known {
            unavailable: Some(format!("not connected to RAUC on {} yet", settings.bus)),
            ..Known::default()
        };
        Ota {
            settings: Arc::new(settings),
            known: Arc::new(Mutex::new(known)),
            rauc: Arc::new(tokio::sync::RwLock::new(None)),
            gate: Arc::new(tokio::sync::Mutex::new(())),
            uploads: Arc::new(tokio::sync::Semaphore::new(MAX_UPLOADS)),
            events,
        }
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    fn known(&self) -> std::sync::MutexGuard<'_, Known> {
        self.known.lock().expect("OTA state poisoned")
    }

    fn publish(&self) {
        let json = serde_json::to_string(&self.status()).expect("OTA status serialises");
        (self.events)(json.into());
    }

    /// `GET /api/v1/ota`.
    pub fn status(&self) -> OtaStatus {
        let boot_check = boot::report(&self.settings.spool);
        let k = self.known();
        let bundle = spool::current(&self.settings.spool);
        let busy = k.installing.is_some() || k.operation == "installing";
        let text = |t: &String| (!t.is_empty()).then(|| t.clone());
        OtaStatus {
            available: k.unavailable.is_none(),
            reason: k.unavailable.clone(),
            bus: self.settings.bus.to_string(),
            operation: if k.unavailable.is_some() {
                "unavailable"
            } else if busy {
                "installing"
            } else {
                "idle"
            },
            progress: k.progress.as_ref().map(|(p, m, d)| OtaProgress {
                percent: *p,
                message: m.clone(),
                depth: *d,
            }),
            last_error: text(&k.last_error),
            last_result: k.last_result.clone(),
            compatible: text(&k.compatible),
            booted_slot: text(&k.boot_slot),
            primary_slot: k.primary.clone(),
            slots: k.slots.clone(),
            features: k.features.clone(),
            bundle,
            max_bundle_bytes: self.settings.max_bytes,
            bootloader: boot::firmware(&boot::esrt_dir()).map(|f| Bootloader {
                version: boot::hex(f.version),
                lowest_supported: boot::hex(f.lowest_supported),
                last_attempt_version: boot::hex(f.last_attempt_version),
                last_attempt_status: f.last_attempt_status,
                chains: boot_check
                    .as_ref()
                    .map(|r| r.chains.clone())
                    .unwrap_or_default(),
            }),
            boot_check,
        }
    }

    async fn connected(&self) -> Result<Rauc, OtaError> {
        match self.rauc.read().await.clone() {
            Some(r) => Ok(r),
            None => Err(OtaError::Unavailable(
                self.known()
                    .unavailable
                    .clone()
                    .unwrap_or_else(|| "not connected".into()),
            )),
        }
    }

    fn busy_reason(&self) -> Option<String> {
        let k = self.known();
        if k.installing.is_some() || k.operation == "installing" {
            Some(match &k.progress {
                Some((p, m, _)) => format!("{p}%: {m}"),
                None => "installing".into(),
            })
        } else {
            None
        }
    }

    /// `POST /api/v1/ota/bundles`: spools the body, then has RAUC check its signature
    /// and manifest; a bundle RAUC refuses, or one for another `compatible`, is deleted.
    /// The body is received without holding anything another upload or an install
    /// waits for (at most [`MAX_UPLOADS`] at once); only its end (RAUC's check, the
    /// rename) takes turns with installs.
    pub async fn upload<E: std::fmt::Display>(
        &self,
        body: impl Stream<Item = Result<Bytes, E>> + Unpin,
        announced: Option<u64>,
    ) -> Result<UploadedBundle, OtaError> {
        let rauc = self.connected().await?;
        if let Some(why) = self.busy_reason() {
            return Err(OtaError::Busy(why));
        }
        let _place = self.uploads.clone().try_acquire_owned().map_err(|_| {
            OtaError::Busy(format!(
                "{MAX_UPLOADS} uploads are being received; wait for one to end"
            ))
        })?;
        let s = &self.settings;
        let rules = spool::Rules {
            limit: s.max_bytes,
            reserve: s.reserve_bytes,
            stall: s.stall,
        };
        let received = spool::receive(&s.spool, body, announced, rules).await?;
        let _gate = self.gate.lock().await;
        let discard = |why: OtaError| {
            let _ = std::fs::remove_file(&received.path);
            Err(why)
        };
        if let Some(why) = self.busy_reason() {
            return discard(OtaError::Busy(why));
        }
        let features = self.known().features.clone();
        let path = received.path.to_string_lossy().to_string();
        let info = match rauc.inspect(&path, &features).await {
            Ok(i) => i,
            Err(e) => {
                let why = rauc::refusal_reason(&e, &path, s.rauc_conf.as_deref()).await;
                return discard(OtaError::Refused(format!("RAUC refused the bundle: {why}")));
            }
        };
        let system = self.known().compatible.clone();
        if info["compatible"].as_str() != Some(system.as_str()) {
            return discard(OtaError::Refused(format!(
                "the bundle is for {} but this system is {system:?}",
                info["compatible"]
            )));
        }
        let spooled = match spool::keep(&s.spool, received.clone()) {
            Ok(k) => k,
            Err(e) => return discard(OtaError::Spool(e)),
        };
        spool::remove_others(&s.spool, Some(&spooled.path));
        tracing::info!(
            "OTA: bundle {} ({} bytes, version {}) uploaded",
            spooled.sha256,
            spooled.bytes,
            info["version"]
        );
        self.publish();
        Ok(UploadedBundle {
            sha256: spooled.sha256,
            bytes: spooled.bytes,
            compatible: info["compatible"].clone(),
            version: info["version"].clone(),
            manifest: info,
        })
    }

    /// `POST /api/v1/ota/install`: starts installing the spooled bundle `sha256`.
    pub async fn install(&self, sha256: &str) -> Result<OtaStatus, OtaError> {
        let rauc = self.connected().await?;
        let _gate = self.gate.lock().await;
        if let Some(why) = self.busy_reason() {
            return Err(OtaError::Busy(why));
        }
        // RAUC may be installing for someone else (hawkBit, a shell).
        let op = rauc.string("Operation").await.unwrap_or_default();
        if op != "idle" && !op.is_empty() {
            return Err(OtaError::Busy(format!("RAUC reports operation {op:?}")));
        }
        let bundle = spool::current(&self.settings.spool)
            .filter(|b| b.sha256 == sha256.to_ascii_lowercase())
            .ok_or_else(|| OtaError::NoBundle(sha256.to_string()))?;
        // The slots as they are now: if RAUC restarts before it reports the end, the
        // outcome is read from what changed (RAUC answers while idle).
        let slots_before = rauc.slots().await.unwrap_or_default();
        {
            // A stale progress (of the upload's check) must not show as this install's.
            let mut k = self.known();
            k.installing = Some(bundle.sha256.clone());
            k.slots_before = slots_before;
            k.progress = None;
        }
        if let Err(e) = rauc.install(&bundle.path.to_string_lossy()).await {
            self.known().installing = None;
            let busy = e.contains("Already processing") || e.contains("busy");
            return Err(if busy {
                OtaError::Busy(e)
            } else {
                OtaError::Refused(format!("RAUC refused to install: {e}"))
            });
        }
        tracing::info!("OTA: installing bundle {}", bundle.sha256);
        self.publish();
        Ok(self.status())
    }

    /// Reads everything RAUC reports into the state.
    async fn refresh(&self, rauc: &Rauc) {
        let operation = rauc.string("Operation").await.unwrap_or_default();
        let progress = rauc.progress().await.ok();
        let last_error = rauc.string("LastError").await.unwrap_or_default();
        let compatible = rauc.string("Compatible").await.unwrap_or_default();
        let boot_slot = rauc.string("BootSlot").await.unwrap_or_default();
        // RAUC answers neither while it installs: the previous values stay.
        let primary = rauc.primary().await.ok();
        let slots = rauc.slots().await.ok();
        let mut k = self.known();
        k.operation = operation;
        k.progress = progress.filter(|p| !(p.0 == 0 && p.1.is_empty()));
        k.last_error = last_error;
        k.compatible = compatible;
        k.boot_slot = boot_slot;
        if primary.is_some() {
            k.primary = primary;
        }
        if let Some(slots) = slots {
            k.slots = slots;
        }
    }

    /// The end of an installation (`Completed` with RAUC's result code).
    async fn completed(&self, rauc: &Rauc, code: i32) {
        self.refresh(rauc).await;
        let error = {
            let k = self.known();
            (code != 0).then(|| {
                if k.last_error.is_empty() {
                    format!("RAUC reported result {code}")
                } else {
                    k.last_error.clone()
                }
            })
        };
        self.finish(error);
    }

    /// Records the end of the installation this service started (`error`: `None` when
    /// it succeeded) and deletes the spooled bundle only when it did.
    fn finish(&self, error: Option<String>) {
        let (bundle, outcome) = {
            let mut k = self.known();
            let bundle = k.installing.take();
            k.slots_before.clear();
            let outcome = Outcome {
                ok: error.is_none(),
                error,
                bundle: bundle.clone(),
                finished_unix_s: unix_now(),
            };
            k.last_result = Some(outcome.clone());
            (bundle, outcome)
        };
        match &outcome.error {
            None => {
                tracing::info!("OTA: installation finished; reboot to run the new slot");
                // Installed: the spool's copy is no longer needed.
                if let Some(b) = bundle.and_then(|_| spool::current(&self.settings.spool)) {
                    let _ = std::fs::remove_file(b.path);
                }
            }
            Some(e) => tracing::warn!("OTA: installation failed: {e}"),
        }
        self.publish();
    }

    fn set_unavailable(&self, why: String) {
        let changed = {
            let mut k = self.known();
            let changed = k.unavailable.as_deref() != Some(why.as_str());
            k.unavailable = Some(why);
            k.operation.clear();
            k.progress = None;
            changed
        };
        if changed {
            self.publish();
        }
    }
}

/// Judges an installation whose end RAUC never reported (`Completed` did not come: RAUC
/// was restarted, or the bus connection dropped). `before` and `slots` are RAUC's
/// `GetSlotStatus` from when the installation began and from now, `primary` its
/// `GetPrimary` now, `last_error` its `LastError` now (empty after a restart).
///
/// `Ok` only when RAUC now boots next a slot that is not the booted one, marks it good,
/// and that slot's `installed.timestamp` changed since the installation began: the
/// installation was written and activated. Otherwise the error says what RAUC reports,
/// naming the primary slot (nothing changes at the next boot when it is the booted one).
pub(crate) fn unfinished_outcome(
    before: &[Value],
    primary: Option<&str>,
    slots: &[Value],
    last_error: &str,
) -> Result<(), String> {
    let slot = |list: &[Value], name: &str| list.iter().find(|s| s["name"] == name).cloned();
    let lost = "RAUC stopped before it reported the end of the installation";
    let why = if last_error.is_empty() {
        String::new()
    } else {
        format!(" (RAUC's last error: {last_error})")
    };
    let Some(primary) = primary else {
        return Err(format!(
            "{lost}, and the slot it boots next is unknown: install the bundle again{why}"
        ));
    };
    let now = slot(slots, primary).unwrap_or(Value::Null);
    if now["state"] == "booted" {
        return Err(format!(
            "{lost}; the primary slot is still {primary}, the running one: the installation \
             did not complete and nothing changes at the next boot{why}"
        ));
    }
    let installed = |s: &Value| s["installed.timestamp"].as_str().map(str::to_string);
    let was = slot(before, primary).and_then(|s| installed(&s));
    match installed(&now) {
        Some(t) if Some(&t) != was.as_ref() && now["boot-status"] == "good" => Ok(()),
        _ => Err(format!(
            "{lost}; the primary slot is {primary}, but it was not installed by this \
             installation or is not marked good: install the bundle again{why}"
        )),
    }
}

/// Starts the task that connects to RAUC and follows it. While RAUC is not on the bus it
/// retries every [`RECONNECT_EVERY`]; OTA is reported unavailable meanwhile.
pub fn spawn_monitor(ota: Ota) {
    tokio::spawn(async move {
        loop {
            let connect = tokio::time::timeout(CONNECT_TIMEOUT, Rauc::connect(&ota.settings.bus));
            let connected = connect.await.unwrap_or_else(|_| {
                Err(format!(
                    "{} did not answer within {CONNECT_TIMEOUT:?}",
                    ota.settings.bus
                ))
            });
            match connected {
                Ok(rauc) => {
                    if let Err(e) = follow(&ota, rauc).await {
                        tracing::warn!("OTA: lost RAUC: {e}");
                        ota.set_unavailable(e);
                    }
                }
                Err(e) => {
                    let first = ota.rauc.read().await.is_none()
                        && ota.known().unavailable.as_deref() != Some(e.as_str());
                    if first {
                        tracing::info!("OTA unavailable: {e}");
                    }
                    ota.set_unavailable(e);
                }
            }
            *ota.rauc.write().await = None;
            tokio::time::sleep(RECONNECT_EVERY).await;
        }
    });
}

/// Follows one connection until RAUC leaves the bus; returns why it ended.
async fn follow(ota: &Ota, rauc: Rauc) -> Result<(), String> {
    let props = zbus::fdo::PropertiesProxy::builder(rauc.connection())
        .destination(rauc::SERVICE)
        .and_then(|b| b.path(rauc::PATH))
        .map_err(|e| e.to_string())?
        .build()
        .await
        .map_err(|e| e.to_string())?;
    let mut changes = props
        .receive_properties_changed()
        .await
        .map_err(|e| e.to_string())?;
    let mut completed = rauc
        .proxy()
        .receive_signal("Completed")
        .await
        .map_err(|e| e.to_string())?;
    let mut owner = rauc
        .proxy()
        .receive_owner_changed()
        .await
        .map_err(|e| e.to_string())?;
    let features = rauc.features().await;
    *ota.rauc.write().await = Some(rauc.clone());
    ota.refresh(&rauc).await;
    let was_installing = {
        let mut k = ota.known();
        k.unavailable = None;
        k.features = features;
        // Started by this service before a reconnect, and finished meanwhile.
        k.installing.is_some() && k.operation == "idle"
    };
    let (compatible, boot_slot) = {
        let k = ota.known();
        (k.compatible.clone(), k.boot_slot.clone())
    };
    tracing::info!(
        "OTA: RAUC on {} (compatible {compatible:?}, booted slot {boot_slot:?})",
        ota.settings.bus
    );
    if was_installing {
        // Its Completed signal was missed (RAUC restarted, or the bus dropped): judge by
        // the slots, never by an empty LastError (a restarted RAUC has none).
        let verdict = {
            let k = ota.known();
            unfinished_outcome(
                &k.slots_before,
                k.primary.as_deref(),
                &k.slots,
                &k.last_error,
            )
        };
        match &verdict {
            Ok(()) => tracing::info!("OTA: RAUC came back; the installation had completed"),
            Err(e) => tracing::warn!("OTA: RAUC came back; {e}"),
        }
        ota.finish(verdict.err());
    }
    ota.publish();
    loop {
        tokio::select! {
            change = changes.next() => {
                let Some(change) = change else { return Err("the bus connection closed".into()) };
                if let Ok(args) = change.args() {
                    let mut k = ota.known();
                    for (name, value) in args.changed_properties() {
                        match (*name, rauc::to_json(value)) {
                            ("Operation", Value::String(s)) => k.operation = s,
                            ("LastError", Value::String(s)) => k.last_error = s,
                            ("Progress", Value::Array(a)) if a.len() == 3 => {
                                k.progress = Some((
                                    a[0].as_i64().unwrap_or(0) as i32,
                                    a[1].as_str().unwrap_or("").to_string(),
                                    a[2].as_i64().unwrap_or(0) as i32,
                                ));
                            }
                            _ => {}
                        }
                    }
                }
                ota.publish();
            }
            signal = completed.next() => {
                let Some(msg) = signal else { return Err("the bus connection closed".into()) };
                let code: i32 = msg.body().deserialize().unwrap_or(-1);
                ota.completed(&rauc, code).await;
            }
            new_owner = owner.next() => {
                match new_owner {
                    Some(Some(_)) => { ota.refresh(&rauc).await; ota.publish(); }
                    _ => return Err(format!("RAUC ({}) left {}", rauc::SERVICE, ota.settings.bus)),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn slot(name: &str, state: &str, boot: &str, installed: Option<&str>) -> Value {
        let mut v = json!({"name": name, "state": state, "boot-status": boot});
        if let Some(t) = installed {
            v["installed.timestamp"] = json!(t);
        }
        v
    }

    #[test]
    fn an_unfinished_install_is_a_success_only_when_the_new_slot_was_written_and_activated() {
        let before = [
            slot("rootfs.0", "booted", "good", None),
            slot("rootfs.1", "inactive", "good", Some("2026-01-01T00:00:00Z")),
        ];
        // RAUC killed mid-install: B marked bad at the start, the primary still A.
        let killed = [
            slot("rootfs.0", "booted", "good", None),
            slot("rootfs.1", "inactive", "bad", Some("2026-01-01T00:00:00Z")),
        ];
        let e = unfinished_outcome(&before, Some("rootfs.0"), &killed, "").unwrap_err();
        assert!(e.contains("still rootfs.0"), "{e}");
        // B already primary from an earlier install, the second one killed: not written.
        let e = unfinished_outcome(&before, Some("rootfs.1"), &killed, "").unwrap_err();
        assert!(e.contains("not installed by this installation"), "{e}");
        // Written, activated, good: the end was only not heard.
        let done = [
            slot("rootfs.0", "booted", "good", None),
            slot("rootfs.1", "active", "good", Some("2026-02-02T00:00:00Z")),
        ];
        assert_eq!(
            unfinished_outcome(&before, Some("rootfs.1"), &done, ""),
            Ok(())
        );
        // Unknown primary, and RAUC's own error passed on.
        let e = unfinished_outcome(&before, None, &done, "write failed").unwrap_err();
        assert!(e.contains("unknown") && e.contains("write failed"), "{e}");
    }
}
