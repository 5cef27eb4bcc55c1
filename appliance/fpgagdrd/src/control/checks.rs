//! Every rule a config must pass besides the rules of its document, the same for every
//! caller (boot, REST, the command line).
//!
//! Owns: [`document`] (the keep-the-password rule, then the document's rules again, and
//! the document read back as a start reads it), [`judge`] (the alert rules' sensors
//! against this board, the MQTT broker's CA file, the config's files, the model's
//! labels against the alert rules' classes, and the pipeline built when asked), and
//! [`Build`]. Must not: apply anything (`mod.rs` does).

use fpgagdr_telemetry::sampler::Sample;

use super::error::ControlError;
use crate::cards::CardChoice;
use crate::config::{AlertRule, AlertsConfig, Config, SourceKind, Unusable, alerts};
use crate::files::{self, Kind, Policy};
use crate::pipeline::{Prepared, prepare};

/// What [`judge`] builds besides checking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Build {
    /// The pipeline (files read, model loaded, ring pinned): the classes are checked
    /// against the model's labels.
    Pipeline,
    /// No pipeline: the files are found and opened, the classes checked against the
    /// labels file.
    LabelsOnly,
    /// Neither (a change of `outputs.mqtt` alone).
    Nothing,
}

/// `sent` (a document as a client sent it) with the write-only secrets of `saved` kept
/// where it has none, checked again by every rule of the document, then written and
/// read back as the service reads its file at start: a change whose result a start
/// would refuse is refused now.
pub fn document(sent: Config, saved: &Config) -> Result<Config, ControlError> {
    let new = sent.keep_secrets(saved)?;
    let bytes = serde_json::to_vec_pretty(&new).expect("config serialises");
    match Config::from_json(&bytes) {
        Ok(back) if back == new => Ok(new),
        Ok(_) => Err(ControlError::Internal(
            "the config would read back otherwise at the next start; nothing changed".into(),
        )),
        Err(e) => Err(ControlError::Config(e)),
    }
}

/// Whether `new` differs from `base` in `outputs.mqtt` alone.
pub fn mqtt_only(base: &Config, new: &Config) -> bool {
    let mut same = base.raw().clone();
    same.outputs.mqtt = new.outputs.mqtt.clone();
    same == *new.raw()
}

/// Whether a rule of `alerts` names a sensor (a thermal zone, a power rail or the total
/// power): [`judge`] needs a telemetry sample then.
pub fn needs_sensors(alerts: &AlertsConfig) -> bool {
    alerts
        .rules
        .values()
        .any(|r| matches!(r, AlertRule::Temperature { .. } | AlertRule::Power { .. }))
}

/// Every rule `new` must pass besides its document's; `base` is the config already
/// applied with (its rules are not judged again: a sensor that went away does not block
/// an unrelated change), `None` when nothing is. Returns the pipeline when `build` asks
/// for one.
///
/// Errors name the field at fault and the rule: `alert-sensor`, `path-confined` (and
/// the other file rules), `mqtt-tls`, `alert-classes`, and whatever building the
/// pipeline refuses. Blocks on the file system (and, building, on the model): call it
/// off the async workers.
pub fn judge(
    new: &Config,
    base: Option<&Config>,
    build: Build,
    card: &CardChoice,
    files: &Policy,
    sample: Option<&Sample>,
) -> Result<Option<Prepared>, Unusable> {
    sensors(new, base, sample)?;
    if base.is_none_or(|b| b.outputs.mqtt != new.outputs.mqtt) {
        crate::results::sinks::mqtt::check_tls(&new.outputs.mqtt, &files.roots)
            .map_err(|message| Unusable::at("/outputs/mqtt/ca_file", message))?;
    }
    match build {
        Build::Nothing => Ok(None),
        Build::LabelsOnly => {
            let labels = found_files(new, files)?;
            classes(&new.outputs.alerts, &labels)?;
            Ok(None)
        }
        Build::Pipeline => {
            let prepared = prepare(new, card, files)?;
            classes(&new.outputs.alerts, prepared.labels())?;
            Ok(Some(prepared))
        }
    }
}

/// Alert rules name thermal zones and INA3221 rails: `sample` (the telemetry's latest)
/// says which this board has. Only the rules `new` adds or alters over `base` are
/// judged.
fn sensors(new: &Config, base: Option<&Config>, sample: Option<&Sample>) -> Result<(), Unusable> {
    let touched = AlertsConfig {
        rules: new
            .outputs
            .alerts
            .rules
            .iter()
            .filter(|(name, rule)| {
                base.is_none_or(|b| b.outputs.alerts.rules.get(*name) != Some(*rule))
            })
            .map(|(name, rule)| (name.clone(), rule.clone()))
            .collect(),
        ..Default::default()
    };
    let (zones, rails, power): (Vec<String>, Vec<String>, bool) = sample
        .map(|s| {
            (
                s.zones.iter().map(|z| z.name.clone()).collect(),
                s.rails.iter().map(|r| r.name.clone()).collect(),
                s.power.is_some(),
            )
        })
        .unwrap_or_default();
    match alerts::unknown_sensors(&touched, &zones, &rails, power)
        .into_iter()
        .next()
    {
        Some((field, why)) => Err(Unusable {
            field: Some(field.into()),
            message: format!("rule alert-sensor: {why}"),
        }),
        None => Ok(()),
    }
}

/// Alert rules name classes by label: only the model's labels can say which exist.
fn classes(alerts: &AlertsConfig, labels: &[String]) -> Result<(), Unusable> {
    match alerts::unknown_classes(alerts, labels).into_iter().next() {
        Some((field, label)) => Err(Unusable {
            field: Some(field.into()),
            message: format!("rule alert-classes: {label:?} is not one of the model's labels"),
        }),
        None => Ok(()),
    }
}

/// The files `new` names, found where they may lie and opened as the pipeline opens
/// them (no model loaded); returns the labels file's display labels.
fn found_files(new: &Config, files: &Policy) -> Result<Vec<String>, Unusable> {
    let roots = &files.roots;
    let model = roots
        .confine(&new.model.path, Kind::Model)
        .map_err(|e| Unusable::at("/model/path", e))?;
    files::open_regular(&model, files.max_model_bytes, "an ONNX model")
        .map_err(|e| Unusable::at("/model/path", e))?;
    let labels_given = new
        .model
        .labels
        .clone()
        .unwrap_or_else(|| new.model.path.with_extension("labels.txt"));
    let labels = roots
        .confine(&labels_given, Kind::Model)
        .map_err(|e| Unusable::at("/model/labels", e))?;
    let text = files::read_regular(&labels, files::MAX_LABELS_BYTES, "a labels file")
        .map_err(|e| Unusable::at("/model/labels", e))?;
    if new.source.kind == SourceKind::Replay {
        roots
            .confine(&new.source.path, Kind::Frames)
            .map_err(|e| Unusable::at("/source/path", e))?;
    }
    Ok(fpgagdr_infer::display_labels(&String::from_utf8_lossy(
        &text,
    )))
}
