//! Alert rules (`outputs.alerts`) compiled against one run's labels, and the alert
//! payload.
//!
//! Owns: [`Matcher`] (class rules as sorted class indices: checking a result is a few
//! comparisons, no allocation, so the inference thread can ask before it lets a frame
//! go). The alert payload is `record.rs`'s `AlertRecord`.
//! Rules on a condition rather than a result (`drop_rate`, `e2e_p99`, `temperature`,
//! `power`) are `conditions.rs`'s.
//! Must not: deliver anything (the room does, `mod.rs`), or know the frame.

use crate::config::{AlertRule, AlertsConfig};

/// One class rule, compiled.
#[derive(Debug, Clone, PartialEq)]
struct ClassRule {
    /// Class indices the rule names that the model has, sorted.
    classes: Vec<u32>,
    min_score: f32,
}

/// The rules of `outputs.alerts` for one run: bit `i` of a match mask is rule
/// `names()[i]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Matcher {
    names: Vec<String>,
    rules: Vec<ClassRule>,
    /// Labels no rule could find in the model (kept for the log; they never match).
    pub unknown: Vec<String>,
}

impl Matcher {
    /// Compiles `config`'s rules against `labels` (the model's, class 0 first), in the
    /// rules' name order (at most 32: the config's check holds that).
    pub fn new(config: &AlertsConfig, labels: &[String]) -> Matcher {
        let mut m = Matcher::default();
        for (name, rule) in config.rules.iter().take(32) {
            // Conditions on the pipeline and telemetry are `conditions.rs`'s.
            let AlertRule::Class { classes, min_score } = rule else {
                continue;
            };
            let mut idx = Vec::with_capacity(classes.len());
            for c in classes {
                match labels.iter().position(|l| l == c) {
                    Some(i) => idx.push(i as u32),
                    None => m.unknown.push(c.clone()),
                }
            }
            idx.sort_unstable();
            m.names.push(name.clone());
            m.rules.push(ClassRule {
                classes: idx,
                min_score: *min_score,
            });
        }
        m
    }

    /// Whether there is any rule.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rules' names, by bit.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The rules `top` (class index, probability; NaN = an empty slot) matches, as a
    /// mask (bit i = rule i). No allocation.
    pub fn matches(&self, top: &[(u32, f32)]) -> u32 {
        let mut mask = 0u32;
        for (bit, rule) in self.rules.iter().enumerate() {
            let hit = top.iter().any(|&(index, score)| {
                score >= rule.min_score && rule.classes.binary_search(&index).is_ok()
            });
            if hit {
                mask |= 1 << bit;
            }
        }
        mask
    }

    /// Whether class `index` with `score` makes rule `bit` match.
    pub fn rule_matches(&self, bit: usize, index: u32, score: f32) -> bool {
        self.rules.get(bit).is_some_and(|rule| {
            score >= rule.min_score && rule.classes.binary_search(&index).is_ok()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(rules: serde_json::Value) -> AlertsConfig {
        serde_json::from_value(serde_json::json!({ "rules": rules })).unwrap()
    }

    #[test]
    fn a_class_rule_matches_its_classes_at_or_above_the_score() {
        let labels: Vec<String> = ["cat", "dog", "car"].map(String::from).to_vec();
        let m = Matcher::new(
            &config(serde_json::json!({
                "animals": {"kind": "class", "classes": ["dog", "cat"], "min_score": 0.5},
                "vehicles": {"kind": "class", "classes": ["car", "boat"], "min_score": 0.2},
            })),
            &labels,
        );
        assert_eq!(m.names(), ["animals", "vehicles"]);
        assert_eq!(m.unknown, ["boat"]);
        let nan = f32::NAN;
        assert_eq!(m.matches(&[(1, 0.5), (2, 0.1), (0, nan)]), 0b01);
        assert_eq!(m.matches(&[(1, 0.49), (2, 0.2)]), 0b10);
        assert_eq!(m.matches(&[(0, 0.9), (2, 0.3)]), 0b11);
        assert_eq!(m.matches(&[(0, nan), (1, nan)]), 0);
    }
}
