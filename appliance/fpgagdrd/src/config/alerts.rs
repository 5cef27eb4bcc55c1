//! `outputs.alerts`: alert rules on every frame's result, and keeping the frames that
//! match them.
//!
//! Owns: [`AlertsConfig`], [`AlertRule`], [`KeepFramesConfig`], their ranges and their
//! rules beyond serde (`check`). Must not: evaluate a rule (the results room does,
//! `results/alerts.rs`).
//!
//! Rules are a JSON object keyed by the rule's name (not an array), so an RFC 7396
//! merge patch adds, replaces (`{"rules": {"defect": {...}}}`) or removes
//! (`{"rules": {"defect": null}}`) one rule without restating the others.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::range::Range;

/// A broken rule: the field's JSON pointer, the rule's name, what was wrong (the
/// config turns it into its `FieldError`).
#[derive(Debug, Clone, PartialEq)]
pub struct RuleError {
    /// JSON pointer of the field.
    pub field: String,
    /// Rule name.
    pub rule: &'static str,
    /// What was wrong.
    pub message: String,
}

/// Most rules `outputs.alerts.rules` holds (a result carries the rules it matched as a
/// 32-bit mask).
pub const MAX_RULES: usize = 32;
/// Longest rule name, bytes.
pub const MAX_RULE_NAME: usize = 64;
/// Most classes one rule names.
pub const MAX_CLASSES: usize = 1000;

/// `outputs.alerts.rules.*.min_score` (a probability).
pub const MIN_SCORE: Range<f32> = Range {
    field: "/outputs/alerts/rules/*/min_score",
    min: 0.0,
    max: 1.0,
    allowed: "between 0 and 1 (a probability)",
};
/// `outputs.alerts.rules.*.window_s` of a `drop_rate` or `e2e_p99` rule, seconds.
pub const WINDOW_S: Range<u32> = Range {
    field: "/outputs/alerts/rules/*/window_s",
    min: 1,
    max: 600,
    allowed: "between 1 and 600 seconds",
};
/// `outputs.alerts.rules.*.max_ratio` of a `drop_rate` rule (frames dropped ÷ produced).
pub const MAX_RATIO: Range<f64> = Range {
    field: "/outputs/alerts/rules/*/max_ratio",
    min: 0.0,
    max: 1.0,
    allowed: "between 0 and 1 (frames dropped per frame produced)",
};
/// `outputs.alerts.rules.*.max_ms` of an `e2e_p99` rule, milliseconds.
pub const MAX_MS: Range<f64> = Range {
    field: "/outputs/alerts/rules/*/max_ms",
    min: 0.001,
    max: 60_000.0,
    allowed: "between 0.001 and 60000 ms",
};
/// `outputs.alerts.rules.*.max_c` of a `temperature` rule, °C (the kernel's thermal
/// zones report -273..; a board's trip points lie well inside this).
pub const MAX_C: Range<f64> = Range {
    field: "/outputs/alerts/rules/*/max_c",
    min: -40.0,
    max: 200.0,
    allowed: "between -40 and 200 °C",
};
/// `outputs.alerts.rules.*.max_w` of a `power` rule, watts.
pub const MAX_W: Range<f64> = Range {
    field: "/outputs/alerts/rules/*/max_w",
    min: 0.001,
    max: 10_000.0,
    allowed: "between 0.001 and 10000 W",
};
/// Longest thermal zone or rail name a rule may give, bytes.
pub const MAX_SENSOR_NAME: usize = 64;

/// `outputs.alerts.keep_frames.max_frames`.
pub const KEEP_MAX_FRAMES: Range<usize> = Range {
    field: "/outputs/alerts/keep_frames/max_frames",
    min: 1,
    max: 10_000,
    allowed: "between 1 and 10000 frames",
};
/// `outputs.alerts.keep_frames.max_bytes`, bytes (1 MiB to 16 GiB).
pub const KEEP_MAX_BYTES: Range<u64> = Range {
    field: "/outputs/alerts/keep_frames/max_bytes",
    min: 1 << 20,
    max: 16 << 30,
    allowed: "between 1048576 (1 MiB) and 17179869184 (16 GiB) bytes",
};

/// `outputs.alerts`: rules a result is checked against; each match is an alert
/// (`docs/api.md`, "Alerts").
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
#[schemars(extend("x-order" = ["rules", "keep_frames"]))]
pub struct AlertsConfig {
    /// Alert rules by name (a name is 1 to 64 letters, digits, _ or -; at most 32
    /// rules), as JSON: for example {"cats": {"kind": "class", "classes": ["tabby"],
    /// "min_score": 0.6}}. Kinds: class, drop_rate, e2e_p99, temperature, power
    /// (docs/api.md, Alerts).
    #[schemars(title = "Rules")]
    pub rules: BTreeMap<String, AlertRule>,
    /// Keep the frames whose result matches a rule, on disk under the state directory.
    #[schemars(title = "Keep matching frames")]
    pub keep_frames: KeepFramesConfig,
}

/// One alert rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AlertRule {
    /// A result's top-5 holds one of `classes` (labels, as the model's labels file
    /// writes them) with a score of at least `min_score`. Every matching frame is an
    /// alert.
    Class {
        /// Class labels (1 to 1000, each one of the model's labels).
        classes: Vec<String>,
        /// Lowest score that matches, 0 to 1.
        min_score: f32,
    },
    /// Frames dropped ÷ frames produced over the last `window_s` seconds is above
    /// `max_ratio`. Dropped counts every reason the pipeline counts (back-pressure,
    /// checksum, overrun, sequence, frames the card completed that no event reported);
    /// produced = captured + those the events missed. Fires once per episode
    /// (`docs/api.md`, "Alerts").
    #[serde(rename = "drop_rate")]
    DropRate {
        /// Window, seconds, 1 to 600.
        window_s: u32,
        /// Highest ratio that does not fire, 0 to 1.
        max_ratio: f64,
    },
    /// The end-to-end latency's (frame-done interrupt → result) 99th percentile over
    /// the last `window_s` seconds is above `max_ms`. Fires once per episode.
    #[serde(rename = "e2e_p99")]
    E2eP99 {
        /// Window, seconds, 1 to 600.
        window_s: u32,
        /// Highest p99 that does not fire, ms, 0.001 to 60000.
        max_ms: f64,
    },
    /// A thermal zone (`zone`, its kernel `type`; absent = the hottest zone) is above
    /// `max_c`. Fires once per episode.
    #[serde(rename = "temperature")]
    Temperature {
        /// Thermal zone name (`GET /api/v1/telemetry`'s `zones[].name`); absent = the
        /// hottest.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        zone: Option<String>,
        /// Highest temperature that does not fire, °C, from -40 to 200.
        max_c: f64,
    },
    /// An INA3221 rail (`rail`; absent = the board's total power) draws more than
    /// `max_w`. Fires once per episode.
    #[serde(rename = "power")]
    Power {
        /// INA3221 rail name (`GET /api/v1/telemetry`'s `rails[].name`); absent = the
        /// total (`power.watts`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rail: Option<String>,
        /// Highest power that does not fire, W, 0.001 to 10000.
        max_w: f64,
    },
}

impl AlertRule {
    /// The kind's name, as `kind` writes it.
    pub fn kind(&self) -> &'static str {
        match self {
            AlertRule::Class { .. } => "class",
            AlertRule::DropRate { .. } => "drop_rate",
            AlertRule::E2eP99 { .. } => "e2e_p99",
            AlertRule::Temperature { .. } => "temperature",
            AlertRule::Power { .. } => "power",
        }
    }
}

/// `outputs.alerts.keep_frames`: the frames whose result matched a rule, as PNG, kept
/// within both bounds (the oldest go first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
#[schemars(extend("x-order" = ["enabled", "max_frames", "max_bytes"]))]
pub struct KeepFramesConfig {
    /// Keep the frames that match a rule.
    #[schemars(title = "Keep frames")]
    pub enabled: bool,
    /// The most frames kept (the oldest go first).
    #[schemars(title = "Most frames")]
    #[schemars(range(min = KEEP_MAX_FRAMES.min, max = KEEP_MAX_FRAMES.max))]
    #[schemars(extend("x-allowed" = KEEP_MAX_FRAMES.allowed))]
    pub max_frames: usize,
    /// The most bytes the kept frames take on disk, in bytes (1 MiB to 16 GiB).
    #[schemars(title = "Most bytes")]
    #[schemars(range(min = KEEP_MAX_BYTES.min, max = KEEP_MAX_BYTES.max))]
    #[schemars(extend("x-allowed" = KEEP_MAX_BYTES.allowed))]
    pub max_bytes: u64,
}

impl Default for KeepFramesConfig {
    fn default() -> Self {
        KeepFramesConfig {
            enabled: false,
            max_frames: 100,
            max_bytes: 256 << 20,
        }
    }
}

/// Whether `name` may name a rule (it becomes a Prometheus label value, an MQTT
/// payload field and part of a file name).
pub fn valid_rule_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_RULE_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The rules of `outputs.alerts` beyond serde's: names, counts, ranges.
pub(super) fn check(a: &AlertsConfig, errs: &mut Vec<RuleError>) {
    let mut bad = |field: String, rule: &'static str, message: String| {
        errs.push(RuleError {
            field,
            rule,
            message,
        })
    };
    if a.rules.len() > MAX_RULES {
        bad(
            "/outputs/alerts/rules".into(),
            "alert-rules",
            format!("{} rules: at most {MAX_RULES} are allowed", a.rules.len()),
        );
    }
    for (name, rule) in &a.rules {
        let at = format!("/outputs/alerts/rules/{name}");
        if !valid_rule_name(name) {
            bad(
                at.clone(),
                "alert-name",
                format!(
                    "{name:?} is not a rule name: 1 to {MAX_RULE_NAME} characters of A-Z a-z 0-9 _ -"
                ),
            );
        }
        match rule {
            AlertRule::Class { classes, min_score } => {
                if !(min_score.is_finite() && MIN_SCORE.contains(*min_score)) {
                    bad(
                        format!("{at}/min_score"),
                        "range",
                        format!("{min_score} is out of range: must be {}", MIN_SCORE.allowed),
                    );
                }
                if classes.is_empty() || classes.len() > MAX_CLASSES {
                    bad(
                        format!("{at}/classes"),
                        "alert-classes",
                        format!(
                            "{} classes: a class rule names 1 to {MAX_CLASSES}",
                            classes.len()
                        ),
                    );
                }
                let mut seen = std::collections::BTreeSet::new();
                for (i, c) in classes.iter().enumerate() {
                    if c.trim().is_empty() || c.len() > 256 {
                        bad(
                            format!("{at}/classes/{i}"),
                            "alert-classes",
                            format!("{c:?} is not a class label (1 to 256 bytes, not blank)"),
                        );
                    } else if !seen.insert(c) {
                        bad(
                            format!("{at}/classes/{i}"),
                            "alert-classes",
                            format!("{c:?} is named twice"),
                        );
                    }
                }
            }
            AlertRule::DropRate {
                window_s,
                max_ratio,
            } => {
                window(&mut bad, &at, *window_s);
                threshold(&mut bad, &at, "max_ratio", *max_ratio, &MAX_RATIO);
            }
            AlertRule::E2eP99 { window_s, max_ms } => {
                window(&mut bad, &at, *window_s);
                threshold(&mut bad, &at, "max_ms", *max_ms, &MAX_MS);
            }
            AlertRule::Temperature { zone, max_c } => {
                sensor_name(&mut bad, &at, "zone", zone.as_deref());
                threshold(&mut bad, &at, "max_c", *max_c, &MAX_C);
            }
            AlertRule::Power { rail, max_w } => {
                sensor_name(&mut bad, &at, "rail", rail.as_deref());
                threshold(&mut bad, &at, "max_w", *max_w, &MAX_W);
            }
        }
    }
    let k = &a.keep_frames;
    if !KEEP_MAX_FRAMES.contains(k.max_frames) {
        bad(
            KEEP_MAX_FRAMES.field.into(),
            "range",
            format!(
                "{} is out of range: must be {}",
                k.max_frames, KEEP_MAX_FRAMES.allowed
            ),
        );
    }
    if !KEEP_MAX_BYTES.contains(k.max_bytes) {
        bad(
            KEEP_MAX_BYTES.field.into(),
            "range",
            format!(
                "{} is out of range: must be {}",
                k.max_bytes, KEEP_MAX_BYTES.allowed
            ),
        );
    }
}

fn window(bad: &mut impl FnMut(String, &'static str, String), at: &str, v: u32) {
    if !WINDOW_S.contains(v) {
        bad(
            format!("{at}/window_s"),
            "range",
            format!("{v} is out of range: must be {}", WINDOW_S.allowed),
        );
    }
}

fn threshold(
    bad: &mut impl FnMut(String, &'static str, String),
    at: &str,
    name: &str,
    v: f64,
    bound: &Range<f64>,
) {
    if !(v.is_finite() && bound.contains(v)) {
        bad(
            format!("{at}/{name}"),
            "range",
            format!("{v} is out of range: must be {}", bound.allowed),
        );
    }
}

fn sensor_name(
    bad: &mut impl FnMut(String, &'static str, String),
    at: &str,
    field: &str,
    name: Option<&str>,
) {
    if let Some(n) = name
        && (n.trim().is_empty() || n.len() > MAX_SENSOR_NAME)
    {
        bad(
            format!("{at}/{field}"),
            "alert-sensor",
            format!("{n:?} is not a {field} name (1 to {MAX_SENSOR_NAME} bytes, not blank)"),
        );
    }
}

/// Every sensor the rules name that the board does not report, as (JSON pointer, the
/// broken rule in words), for the error of a config change: a `temperature` rule's
/// `zone` not among `zones` (or no readable zone at all for the hottest), a `power`
/// rule's `rail` not among `rails` (or no power source at all for the total). `zones`
/// and `rails` are the names in the telemetry's latest sample; `power` whether it has
/// a total.
pub fn unknown_sensors(
    a: &AlertsConfig,
    zones: &[String],
    rails: &[String],
    power: bool,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, rule) in &a.rules {
        let at = format!("/outputs/alerts/rules/{name}");
        match rule {
            AlertRule::Temperature { zone: Some(z), .. } if !zones.contains(z) => out.push((
                format!("{at}/zone"),
                format!("{z:?} is not a thermal zone of this board (zones: {zones:?})"),
            )),
            AlertRule::Temperature { zone: None, .. } if zones.is_empty() => out.push((
                at,
                "this board reports no readable thermal zone".to_string(),
            )),
            AlertRule::Power { rail: Some(r), .. } if !rails.contains(r) => out.push((
                format!("{at}/rail"),
                format!("{r:?} is not a power-monitor rail (INA3221, INA238) of this board (rails: {rails:?})"),
            )),
            AlertRule::Power { rail: None, .. } if !power => out.push((
                at,
                "this board reports no total power (no INA3221, INA238, RAPL or NVML source)".to_string(),
            )),
            _ => {}
        }
    }
    out
}

/// Whether the JSON pointer `at` is an array the document allows (a class rule's
/// `classes`; the document has no other array).
pub(super) fn array_allowed(at: &str) -> bool {
    at.strip_prefix("/outputs/alerts/rules/")
        .and_then(|rest| rest.strip_suffix("/classes"))
        .is_some_and(|name| !name.contains('/'))
}

/// Every class label the rules name that `labels` (the model's) does not hold, as
/// (JSON pointer, label), for the error of a config change.
pub fn unknown_classes(a: &AlertsConfig, labels: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, rule) in &a.rules {
        // Only a class rule names classes.
        if let AlertRule::Class { classes, .. } = rule {
            for (i, c) in classes.iter().enumerate() {
                if !labels.iter().any(|l| l == c) {
                    out.push((
                        format!("/outputs/alerts/rules/{name}/classes/{i}"),
                        c.clone(),
                    ));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_class_rules_classes_may_be_an_array() {
        assert!(array_allowed("/outputs/alerts/rules/defect/classes"));
        assert!(!array_allowed("/outputs/alerts/rules/classes"));
        assert!(!array_allowed("/outputs/alerts/rules/a/b/classes"));
        assert!(!array_allowed("/outputs/mqtt/classes"));
    }

    #[test]
    fn rule_names_are_safe_as_labels_and_file_names() {
        assert!(valid_rule_name("defect_1-b"));
        for bad in ["", "a b", "a\"b", "ä", "a/b", &"x".repeat(65)] {
            assert!(!valid_rule_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn every_broken_rule_is_named() {
        let a: AlertsConfig = serde_json::from_value(serde_json::json!({
            "rules": {
                "ok": {"kind": "class", "classes": ["cat"], "min_score": 0.5},
                "bad name": {"kind": "class", "classes": ["cat"], "min_score": 0.5},
                "nan": {"kind": "class", "classes": ["cat", "cat", " "], "min_score": -0.1},
            },
            "keep_frames": {"max_frames": 0, "max_bytes": 1},
        }))
        .unwrap();
        let mut errs = Vec::new();
        check(&a, &mut errs);
        let got: Vec<(&str, &str)> = errs.iter().map(|e| (e.field.as_str(), e.rule)).collect();
        assert_eq!(
            got,
            [
                ("/outputs/alerts/rules/bad name", "alert-name"),
                ("/outputs/alerts/rules/nan/min_score", "range"),
                ("/outputs/alerts/rules/nan/classes/1", "alert-classes"),
                ("/outputs/alerts/rules/nan/classes/2", "alert-classes"),
                ("/outputs/alerts/keep_frames/max_frames", "range"),
                ("/outputs/alerts/keep_frames/max_bytes", "range"),
            ]
        );
        assert_eq!(
            unknown_classes(&a, &["dog".into()])
                .first()
                .map(|(f, _)| f.as_str()),
            Some("/outputs/alerts/rules/bad name/classes/0")
        );
    }
}
