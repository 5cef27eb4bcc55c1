//! The control room: the one path a config takes to be made, checked and applied, for
//! boot, REST and the command line, and the start and stop of the pipeline.
//!
//! Owns: [`Control`] (the config in force and its file, the pipeline's supervisor, the
//! one-at-a-time rule of changes; [`Control::boot`], [`Control::apply`],
//! [`Control::start`], [`Control::stop`]), [`check_file`] (`fpgagdrd --check-config`),
//! `error.rs` ([`ControlError`]); `checks.rs` (every rule besides the document's),
//! `changes.rs` ([`Changes`]). Must not: answer HTTP (`api/` maps a [`ControlError`]
//! to a problem), or sit on the frame path.
//!
//! A change is checked by every rule (the document's after the keep-the-password rule,
//! then the system's: sensors, the CA file, the files, the model's classes), its
//! pipeline built, the file saved, then the outputs and the pipeline swapped, in that
//! order: any failure leaves everything as it was. A config file that breaks a rule of
//! the system at start boots the service with nothing of it applied and the rule named
//! in the pipeline's status (`docs/decisions.md`, "One apply path").

pub mod changes;
pub mod checks;
mod error;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fpgagdr_telemetry::sampler::{Sample, Telemetry};

use crate::cards::CardChoice;
use crate::config::{Config, ConfigStore, Unusable};
use crate::files::Policy;
use crate::pipeline::{InfoSlot, Shared, State, Supervisor};
use crate::results::Results;
pub use changes::{Changes, blocking};
use checks::Build;
pub use error::ControlError;

/// How long [`Control::boot`] waits for the telemetry's sensors when an alert rule
/// names one.
pub const SENSOR_WAIT: Duration = Duration::from_secs(2);
/// How long a stop waits for the results room to hand the run's last results to the
/// outputs: the channel holds at most `results::outlet::CHANNEL_CAPACITY` (4,096)
/// results, which the room hands out in well under a second unless a disk stalls.
pub const DRAIN_WITHIN: Duration = Duration::from_secs(5);

struct Inner {
    store: ConfigStore,
    supervisor: Mutex<Supervisor>,
    info: InfoSlot,
    shared: Arc<Shared>,
    results: Results,
    telemetry: Arc<Telemetry>,
    card: CardChoice,
    files: Arc<Policy>,
    changes: Changes,
    /// Whether the config in force was applied (false after a start that refused it).
    applied: AtomicBool,
}

/// The control room (cheap to clone).
#[derive(Clone)]
pub struct Control {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Control {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Control")
            .field("config", &self.inner.store.path())
            .finish_non_exhaustive()
    }
}

/// What [`Control::new`] takes charge of.
pub struct Parts {
    /// The config file, read (its document rules passed).
    pub store: ConfigStore,
    /// What the pipeline threads share.
    pub shared: Arc<Shared>,
    /// The results room.
    pub results: Results,
    /// The telemetry (the alert rules' sensors are judged against its latest sample).
    pub telemetry: Arc<Telemetry>,
    /// The card.
    pub card: CardChoice,
    /// Where a config's files may lie, and how they are read.
    pub files: Arc<Policy>,
    /// `--change-timeout-s`.
    pub change_timeout: Duration,
}

impl Control {
    /// A control room for `parts`, nothing applied yet ([`Control::boot`] applies the
    /// file's config).
    pub fn new(parts: Parts) -> Control {
        let supervisor = Supervisor::new(parts.shared.clone());
        let info = supervisor.info_slot();
        Control {
            inner: Arc::new(Inner {
                store: parts.store,
                supervisor: Mutex::new(supervisor),
                info,
                shared: parts.shared,
                results: parts.results,
                telemetry: parts.telemetry,
                card: parts.card,
                files: parts.files,
                changes: Changes::new(parts.change_timeout),
                applied: AtomicBool::new(false),
            }),
        }
    }

    /// The config in force (never waits for a change being made).
    pub fn config(&self) -> Arc<Config> {
        self.inner.store.current()
    }

    /// The config file.
    pub fn config_path(&self) -> &Path {
        self.inner.store.path()
    }

    /// The supervisor's facts about the pipeline, read without waiting for it.
    pub fn info_slot(&self) -> InfoSlot {
        self.inner.info.clone()
    }

    /// The card.
    pub fn card(&self) -> &CardChoice {
        &self.inner.card
    }

    /// Where a config's files may lie, and how they are read.
    pub fn files(&self) -> &Arc<Policy> {
        &self.inner.files
    }

    /// How long a change may wait for its turn and for its pipeline.
    pub fn change_timeout(&self) -> Duration {
        self.inner.changes.wait()
    }

    fn sample(&self) -> Option<Arc<Sample>> {
        self.inner.telemetry.latest()
    }

    fn judge(
        &self,
        new: &Config,
        base: Option<&Config>,
        build: Build,
    ) -> Result<Option<crate::pipeline::Prepared>, Unusable> {
        let judged = checks::judge(
            new,
            base,
            build,
            &self.inner.card,
            &self.inner.files,
            self.sample().as_deref(),
        );
        if judged.is_err() && build == Build::Pipeline {
            fpgagdr::heap::release_freed();
        }
        judged
    }

    /// Applies the config file's document at start, by the rules a `PUT` of it passes:
    /// the outputs configured and, with `autostart`, the pipeline built and started
    /// (without it, everything but the pipeline is checked; a start builds it). A rule
    /// it breaks leaves nothing of it applied: the pipeline is failed with the rule
    /// named, the outputs off. Blocking (call it before serving).
    pub fn boot(&self) {
        let config = self.config();
        if checks::needs_sensors(&config.outputs.alerts) {
            wait_for_sensors(&self.inner.telemetry);
        }
        let build = if config.autostart {
            Build::Pipeline
        } else {
            Build::LabelsOnly
        };
        let mut sup = self.inner.supervisor.lock().expect("supervisor poisoned");
        match self.judge(&config, None, build) {
            Ok(prepared) => {
                self.inner.results.configure(&config.outputs);
                if let Some(p) = prepared {
                    sup.start(p);
                }
                self.inner.applied.store(true, Ordering::Release);
            }
            Err(e) => {
                let why = format!(
                    "config file {}: {e}; nothing of it is applied (PUT or PATCH /api/v1/config applies a fixed one)",
                    self.config_path().display()
                );
                tracing::error!("{why}");
                sup.start_failed(why);
            }
        }
    }

    /// Makes a config from the one in force with `make` (a whole document, or a merge
    /// patch of the current one; `make` also judges preconditions such as `If-Match`),
    /// and applies it: checked by every rule, its pipeline built, the file saved, then
    /// the outputs and the pipeline swapped. A running (or failed) pipeline is replaced;
    /// a stopped one stays stopped (the built one's facts show in status). A document
    /// equal to the one in force changes nothing, unless that one was not applied (a
    /// start refused it): it is applied again. Returns the config now in force.
    ///
    /// Errors: `make`'s; [`ControlError::Busy`], [`ControlError::Config`],
    /// [`ControlError::Apply`], [`ControlError::Save`]. Nothing changed.
    pub async fn apply<E: From<ControlError>>(
        &self,
        make: impl FnOnce(&Config) -> Result<Config, E>,
    ) -> Result<Arc<Config>, E> {
        let turn = self.inner.changes.turn().await?;
        let current = self.config();
        let new = checks::document(make(&current)?, &current)?;
        let applied = self.inner.applied.load(Ordering::Acquire);
        if applied && new == *current {
            return Ok(current);
        }
        let base = applied.then(|| (*current).clone());
        // A change to `outputs.mqtt` alone is the results room's: the new client takes
        // over from the pipeline that runs, so capture goes on and no frame is lost to
        // it. (Alert rules are compiled into a run when it starts: a change to them
        // restarts.)
        if applied && checks::mqtt_only(&current, &new) {
            let (c, n) = (self.clone(), new.clone());
            blocking(move || c.judge(&n, base.as_ref(), Build::Nothing))
                .await?
                .map_err(ControlError::Apply)?;
            self.save(&new)?;
            self.inner.results.configure_sinks(&new.outputs);
            self.inner.store.set_current(new);
            drop(turn);
            tracing::info!(
                "config changed (outputs.mqtt only: the pipeline goes on) and saved to {}",
                self.config_path().display()
            );
            return Ok(self.config());
        }
        // A running pipeline is replaced; a failed one is started, since the change may
        // be the fix; a stopped one stays stopped.
        let restart = self.inner.shared.state() != State::Stopped;
        let wait = self.inner.changes.wait();
        let (c, n) = (self.clone(), new.clone());
        let prepared = self
            .inner
            .changes
            .build(
                move || c.judge(&n, base.as_ref(), Build::Pipeline),
                move || {
                    ControlError::Apply(Unusable::unplaced(format!(
                        "rule change-timeout: building the pipeline for this config took longer \
                         than {} s (--change-timeout-s); nothing changed",
                        wait.as_secs()
                    )))
                },
            )
            .await?
            .map_err(|mut e| {
                if e.message.starts_with("rule alert-") {
                    e.message.push_str("; nothing changed");
                }
                ControlError::Apply(e)
            })?
            .expect("a pipeline was built");
        if let Err(e) = self.save(&new) {
            drop(prepared);
            return Err(e.into());
        }
        // The run about to start takes the new rules.
        self.inner.results.configure_alerts(&new.outputs.alerts);
        // Either way a new generation: a page showing the pipeline's facts re-reads them.
        let c = self.clone();
        blocking(move || {
            let mut sup = c.inner.supervisor.lock().expect("supervisor poisoned");
            if restart {
                sup.start(prepared);
                drop(sup);
                // The replaced run's last results reach the outputs it ran with.
                c.drain_results();
            } else {
                sup.adopt(prepared);
                fpgagdr::heap::release_freed();
            }
        })
        .await?;
        // Readers see the new config once its pipeline runs.
        self.inner.results.configure_sinks(&new.outputs);
        self.inner.store.set_current(new);
        self.inner.applied.store(true, Ordering::Release);
        drop(turn);
        tracing::info!(
            "config changed and saved to {}",
            self.config_path().display()
        );
        Ok(self.config())
    }

    /// Writes `new` to the config file (atomically); a failure changes nothing.
    fn save(&self, new: &Config) -> Result<(), ControlError> {
        self.inner.store.write(new).map_err(|e| {
            ControlError::Save(format!(
                "saving {}: {e}; nothing changed",
                self.config_path().display()
            ))
        })
    }

    /// Starts the pipeline with the config in force (nothing happens when it runs): it
    /// is built and its classes judged, as a change's is; a config a start refused is
    /// judged whole and its outputs applied when it passes. A build that fails leaves
    /// the pipeline failed with the reason.
    ///
    /// Errors: [`ControlError::Busy`], [`ControlError::PipelineStart`].
    pub async fn start(&self) -> Result<(), ControlError> {
        // The turn serialises start, stop and config changes.
        let turn = self.inner.changes.turn().await?;
        if self.inner.shared.state() == State::Running {
            return Ok(());
        }
        let config = self.config();
        let applied = self.inner.applied.load(Ordering::Acquire);
        let wait = self.inner.changes.wait();
        let c = self.clone();
        let result = self
            .inner
            .changes
            .build(
                move || {
                    let base = applied.then_some(&*config);
                    let judged = c.judge(&config, base, Build::Pipeline);
                    let mut sup = c.inner.supervisor.lock().expect("supervisor poisoned");
                    match judged {
                        Ok(p) => {
                            if !applied {
                                c.inner.results.configure(&config.outputs);
                                c.inner.applied.store(true, Ordering::Release);
                            }
                            sup.start(p.expect("a pipeline was built"));
                            Ok(())
                        }
                        Err(e) => {
                            sup.start_failed(e.message.clone());
                            Err(e)
                        }
                    }
                },
                move || {
                    ControlError::PipelineStart(format!(
                        "rule change-timeout: building the pipeline took longer than {} s \
                         (--change-timeout-s)",
                        wait.as_secs()
                    ))
                },
            )
            .await?;
        drop(turn);
        result.map_err(|e| ControlError::PipelineStart(e.message))
    }

    /// Stops the pipeline (a failed one becomes stopped: stopping acknowledges the
    /// failure). Errors: [`ControlError::Busy`].
    pub async fn stop(&self) -> Result<(), ControlError> {
        let turn = self.inner.changes.turn().await?;
        let c = self.clone();
        blocking(move || c.shutdown()).await?;
        drop(turn);
        Ok(())
    }

    /// Stops the pipeline threads and waits for them, then for the results room to
    /// have handed every result of the run to every output (at most [`DRAIN_WITHIN`];
    /// blocking: at the end of the service, or off the async workers).
    pub fn shutdown(&self) {
        self.inner
            .supervisor
            .lock()
            .expect("supervisor poisoned")
            .stop();
        self.drain_results();
    }

    /// Waits for the results room to hand every result sent so far to every output (at
    /// most [`DRAIN_WITHIN`]; a warning past it). Blocking.
    fn drain_results(&self) {
        if !self.inner.results.drain(DRAIN_WITHIN) {
            tracing::warn!(
                "results still on their way to the outputs {} s after the pipeline stopped",
                DRAIN_WITHIN.as_secs()
            );
        }
    }
}

/// `fpgagdrd --check-config`: reads the config file at `path` as the service does at
/// start, and judges it by every rule a `PUT` of it passes on this machine (its sensors
/// against `telemetry`'s latest sample, the CA file, the files found and opened, the
/// alert rules' classes against the labels file) but building the pipeline (loading
/// the model, pinning the ring on the card), which only a start does. Returns what to
/// print; errors name the field and the rule.
pub fn check_file(
    path: &Path,
    card: &CardChoice,
    files: &Policy,
    telemetry: &Telemetry,
) -> Result<String, String> {
    let store = ConfigStore::read(path.to_path_buf()).map_err(|e| e.to_string())?;
    let config = store.current();
    if checks::needs_sensors(&config.outputs.alerts) {
        wait_for_sensors(telemetry);
    }
    checks::judge(
        &config,
        None,
        Build::LabelsOnly,
        card,
        files,
        telemetry.latest().as_deref(),
    )
    .map_err(|e| match &e.field {
        Some(f) => format!("config file {}: {f}: {e}", path.display()),
        None => format!("config file {}: {e}", path.display()),
    })?;
    Ok(format!(
        "config file {}: passes every rule (a start also loads the model and pins the frame ring)",
        path.display()
    ))
}

/// Waits (at most [`SENSOR_WAIT`]) until the telemetry says which sensors this board
/// has: a sample with the total power, or a second sample (the power of RAPL and NVML
/// is the difference of two).
fn wait_for_sensors(telemetry: &Telemetry) {
    let deadline = Instant::now() + SENSOR_WAIT;
    let mut first = None;
    while Instant::now() < deadline {
        match telemetry.latest() {
            Some(s) if s.power.is_some() => return,
            Some(s) => match first {
                None => first = Some(s.t),
                Some(t) if s.t > t => return,
                Some(_) => {}
            },
            None => {}
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
