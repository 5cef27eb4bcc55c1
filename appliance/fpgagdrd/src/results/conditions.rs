//! Alert rules on a condition rather than on one result: `drop_rate`,
//! `e2e_p99`, `temperature` and `power`, evaluated on what the frame board reads every
//! tick, once per episode.
//!
//! Owns: [`Conditions`] (the rules, their firing state, and the one-second readings of
//! the windowed rules), [`Reading`] (what the board hands over each tick: cumulative
//! counters, the cumulative end-to-end histogram, the telemetry's latest sample) and
//! [`Change`] (a rule that fired or cleared).
//! Must not: read the pipeline or telemetry itself (the board hands a reading over),
//! or deliver anything (the room does, `mod.rs`, through the class rules' path).
//!
//! The policy (`docs/api.md`, "Alerts"): a rule *fires* once when its value goes above
//! its threshold and *clears* once when the value falls to [`clear_level`] (5 % below
//! the threshold; 2 °C below for temperature) — so a value hovering at the threshold
//! does not flap, and a sustained condition is one alert, not one per tick. A value
//! that cannot be measured (no frame in the window, a sensor that did not read)
//! changes nothing.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use fpgagdr_telemetry::sampler::Sample;
use hdrhistogram::Histogram;

use crate::config::{AlertRule, AlertsConfig};

/// How often a windowed rule's reading is kept (its window's resolution).
pub const KEEP_EVERY: Duration = Duration::from_secs(1);

/// Step of the grid the end-to-end p99 is read on: each bound is this much above the
/// one before (a reported p99 is the upper edge of its bin, at most 5 % high).
const GRID_STEP: f64 = 1.05;
/// The grid's first bound, ns.
const GRID_MIN_NS: f64 = 1_000.0;
/// The grid's last bound, ns (the stage histograms' top).
const GRID_MAX_NS: f64 = 60e9;

/// What the frame board read at one tick (monotonic counters: over the service's life).
#[derive(Debug, Clone, Copy)]
pub struct Reading<'a> {
    /// When it was read.
    pub at: Instant,
    /// Frames dropped, every reason together.
    pub dropped: u64,
    /// Frames produced (captured, and those the card completed that no event reported).
    pub produced: u64,
    /// The cumulative end-to-end latency histogram, ns.
    pub e2e: Option<&'a Histogram<u64>>,
    /// The telemetry's latest sample.
    pub sample: Option<&'a Sample>,
}

/// A rule that fired or cleared.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The rule's name.
    pub rule: String,
    /// Its kind (`drop_rate`, `e2e_p99`, `temperature`, `power`).
    pub kind: &'static str,
    /// `true`: it fired; `false`: it cleared.
    pub firing: bool,
    /// The measured value, in `unit`.
    pub value: f64,
    /// The rule's threshold, in `unit`.
    pub threshold: f64,
    /// The value at or below which it clears, in `unit`.
    pub clear_at: f64,
    /// `ratio`, `ms`, `C` or `W`.
    pub unit: &'static str,
    /// The window, seconds (`drop_rate`, `e2e_p99`).
    pub window_s: Option<u32>,
    /// The zone or rail measured (the hottest zone's name; `total` for the total power).
    pub source: Option<String>,
}

/// One kept reading of the windowed rules.
#[derive(Debug, Clone)]
struct Point {
    at: Instant,
    dropped: u64,
    produced: u64,
    /// End-to-end samples so far.
    e2e_total: u64,
    /// End-to-end samples at or below each grid bound so far.
    e2e_le: Vec<u64>,
}

#[derive(Debug, Clone)]
struct Watched {
    name: String,
    rule: AlertRule,
    firing: bool,
}

/// The condition rules of `outputs.alerts` and their state.
#[derive(Debug, Default)]
pub struct Conditions {
    rules: Vec<Watched>,
    /// The end-to-end grid's bounds, ns, ascending (empty without an `e2e_p99` rule);
    /// each `e2e_p99` rule's threshold is one of them, so "p99 above the threshold" is
    /// read exactly (to the histogram's 3 significant digits).
    grid: Vec<u64>,
    /// Readings, oldest first, one per [`KEEP_EVERY`], reaching one past the longest
    /// window.
    points: VecDeque<Point>,
    longest: Duration,
}

/// The value at or below which a rule that fired clears: 5 % below its threshold, 2 °C
/// below for temperature.
pub fn clear_level(rule: &AlertRule) -> f64 {
    match rule {
        AlertRule::Temperature { max_c, .. } => max_c - 2.0,
        AlertRule::DropRate { max_ratio, .. } => max_ratio * 0.95,
        AlertRule::E2eP99 { max_ms, .. } => max_ms * 0.95,
        AlertRule::Power { max_w, .. } => max_w * 0.95,
        AlertRule::Class { .. } => f64::NAN,
    }
}

impl Conditions {
    /// Takes `config`'s condition rules; a rule whose definition did not change keeps
    /// its state (a firing rule is not fired again by an unrelated change).
    pub fn configure(&mut self, config: &AlertsConfig) {
        let old = std::mem::take(&mut self.rules);
        for (name, rule) in &config.rules {
            if matches!(rule, AlertRule::Class { .. }) {
                continue;
            }
            let firing = old
                .iter()
                .any(|w| w.name == *name && w.rule == *rule && w.firing);
            self.rules.push(Watched {
                name: name.clone(),
                rule: rule.clone(),
                firing,
            });
        }
        let mut grid = Vec::new();
        let mut longest = 0;
        for w in &self.rules {
            match w.rule {
                AlertRule::E2eP99 { window_s, max_ms } => {
                    grid.push((max_ms * 1e6).round() as u64);
                    longest = longest.max(window_s);
                }
                AlertRule::DropRate { window_s, .. } => longest = longest.max(window_s),
                _ => {}
            }
        }
        if !grid.is_empty() {
            let mut b = GRID_MIN_NS;
            while b < GRID_MAX_NS {
                grid.push(b.round() as u64);
                b *= GRID_STEP;
            }
            grid.push(GRID_MAX_NS as u64);
            grid.sort_unstable();
            grid.dedup();
        }
        if grid != self.grid {
            self.points.clear();
        }
        self.grid = grid;
        self.longest = Duration::from_secs(longest.into());
    }

    /// The names of the rules firing now.
    pub fn firing(&self) -> Vec<String> {
        self.rules
            .iter()
            .filter(|w| w.firing)
            .map(|w| w.name.clone())
            .collect()
    }

    /// Whether there is any condition rule.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Evaluates every rule on `r`; returns the rules that fired or cleared.
    pub fn observe(&mut self, r: &Reading) -> Vec<Change> {
        if self.rules.is_empty() {
            return Vec::new();
        }
        let windowed = !self.longest.is_zero();
        let now = windowed.then(|| self.point(r));
        let mut out = Vec::new();
        for i in 0..self.rules.len() {
            let (value, source) = match self.rules[i].rule {
                AlertRule::DropRate { window_s, .. } => (
                    now.as_ref().and_then(|p| self.drop_ratio(p, window_s)),
                    None,
                ),
                AlertRule::E2eP99 { window_s, .. } => {
                    (now.as_ref().and_then(|p| self.p99_ms(p, window_s)), None)
                }
                AlertRule::Temperature { ref zone, .. } => temperature(r.sample, zone.as_deref()),
                AlertRule::Power { ref rail, .. } => power(r.sample, rail.as_deref()),
                AlertRule::Class { .. } => (None, None),
            };
            let Some(value) = value else { continue };
            let w = &mut self.rules[i];
            let (threshold, unit, window_s) = match w.rule {
                AlertRule::DropRate {
                    window_s,
                    max_ratio,
                } => (max_ratio, "ratio", Some(window_s)),
                AlertRule::E2eP99 { window_s, max_ms } => (max_ms, "ms", Some(window_s)),
                AlertRule::Temperature { max_c, .. } => (max_c, "C", None),
                AlertRule::Power { max_w, .. } => (max_w, "W", None),
                AlertRule::Class { .. } => continue,
            };
            let clear_at = clear_level(&w.rule);
            let changed = if w.firing {
                value <= clear_at
            } else {
                value > threshold
            };
            if changed {
                w.firing = !w.firing;
                out.push(Change {
                    rule: w.name.clone(),
                    kind: w.rule.kind(),
                    firing: w.firing,
                    value,
                    threshold,
                    clear_at,
                    unit,
                    window_s,
                    source,
                });
            }
        }
        if let Some(p) = now {
            self.keep(p);
        }
        out
    }

    /// The reading as a point (the grid's counts only when an `e2e_p99` rule exists).
    fn point(&self, r: &Reading) -> Point {
        let mut e2e_le = vec![0u64; self.grid.len()];
        let mut e2e_total = 0;
        if let Some(h) = r.e2e.filter(|_| !self.grid.is_empty()) {
            e2e_total = h.len();
            for v in h.iter_recorded() {
                // A histogram bucket counts at its lowest value: a threshold that is a
                // bucket's lowest value holds the samples recorded at it.
                let low = h.lowest_equivalent(v.value_iterated_to());
                let i = self.grid.partition_point(|b| *b < low);
                if let Some(bin) = e2e_le.get_mut(i) {
                    *bin += v.count_at_value();
                }
            }
            let mut sum = 0;
            for bin in &mut e2e_le {
                sum += *bin;
                *bin = sum;
            }
        }
        Point {
            at: r.at,
            dropped: r.dropped,
            produced: r.produced,
            e2e_total,
            e2e_le,
        }
    }

    /// Keeps `p` when the newest kept point is [`KEEP_EVERY`] old; forgets points the
    /// longest window no longer reaches (one older than it stays: the window's start).
    fn keep(&mut self, p: Point) {
        if self
            .points
            .back()
            .is_none_or(|b| p.at.duration_since(b.at) >= KEEP_EVERY)
        {
            self.points.push_back(p);
        }
        let newest = self.points.back().map(|b| b.at);
        while let (Some(newest), Some(second)) = (newest, self.points.get(1)) {
            if newest.duration_since(second.at) >= self.longest {
                self.points.pop_front();
            } else {
                break;
            }
        }
    }

    /// The window's start for `now`: the newest point at least `window_s` old, else
    /// the oldest once it is [`KEEP_EVERY`] old (a window not yet full is read over
    /// what there is, never over less than a second: a rule just configured does not
    /// judge a tenth of a second).
    fn base(&self, now: &Point, window_s: u32) -> Option<&Point> {
        let w = Duration::from_secs(window_s.into());
        self.points
            .iter()
            .rev()
            .find(|p| now.at.duration_since(p.at) >= w)
            .or(self
                .points
                .front()
                .filter(|p| now.at.duration_since(p.at) >= KEEP_EVERY))
    }

    fn drop_ratio(&self, now: &Point, window_s: u32) -> Option<f64> {
        let base = self.base(now, window_s)?;
        let produced = now.produced.saturating_sub(base.produced);
        let dropped = now.dropped.saturating_sub(base.dropped);
        (produced > 0).then(|| (dropped as f64 / produced as f64).min(1.0))
    }

    /// The window's p99, ms: the upper edge of the grid bin the 99th percentile (nearest
    /// rank) falls in.
    fn p99_ms(&self, now: &Point, window_s: u32) -> Option<f64> {
        let base = self.base(now, window_s)?;
        if base.e2e_le.len() != now.e2e_le.len() {
            return None;
        }
        let n = now.e2e_total.saturating_sub(base.e2e_total);
        if n == 0 {
            return None;
        }
        let rank = (n as f64 * 0.99).ceil() as u64;
        let i = (0..self.grid.len())
            .find(|&i| now.e2e_le[i].saturating_sub(base.e2e_le[i]) >= rank)
            .unwrap_or(self.grid.len() - 1);
        Some(self.grid[i] as f64 / 1e6)
    }
}

/// The temperature `zone` reads (absent: the hottest zone), °C, and the zone's name.
fn temperature(sample: Option<&Sample>, zone: Option<&str>) -> (Option<f64>, Option<String>) {
    let Some(s) = sample else {
        return (None, None);
    };
    let z = match zone {
        Some(name) => s.zones.iter().find(|z| z.name == name),
        None => s
            .zones
            .iter()
            .filter(|z| z.celsius.is_finite())
            .max_by(|a, b| a.celsius.total_cmp(&b.celsius)),
    };
    match z {
        Some(z) if z.celsius.is_finite() => (Some(z.celsius), Some(z.name.clone())),
        _ => (None, None),
    }
}

/// The power `rail` draws (absent: the total), W, and the rail's name (`total`).
fn power(sample: Option<&Sample>, rail: Option<&str>) -> (Option<f64>, Option<String>) {
    let Some(s) = sample else {
        return (None, None);
    };
    let w = match rail {
        Some(name) => s
            .rails
            .iter()
            .find(|r| r.name == name)
            .map(|r| r.power_mw / 1000.0),
        None => s.power.as_ref().map(|p| p.watts),
    };
    match w {
        Some(w) if w.is_finite() => (Some(w), Some(rail.unwrap_or("total").to_string())),
        _ => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conditions(rules: serde_json::Value) -> Conditions {
        let config: AlertsConfig =
            serde_json::from_value(serde_json::json!({ "rules": rules })).unwrap();
        let mut c = Conditions::default();
        c.configure(&config);
        c
    }

    fn reading(at: Instant, dropped: u64, produced: u64) -> Reading<'static> {
        Reading {
            at,
            dropped,
            produced,
            e2e: None,
            sample: None,
        }
    }

    #[test]
    fn a_drop_rate_rule_fires_once_per_episode_over_its_window() {
        let mut c = conditions(serde_json::json!({
            "drops": {"kind": "drop_rate", "window_s": 10, "max_ratio": 0.1},
        }));
        let t0 = Instant::now();
        let s = |n: u64| t0 + Duration::from_secs(n);
        // 100 frames a second, none dropped, for 20 s.
        for i in 0..=20 {
            assert!(c.observe(&reading(s(i), 0, 100 * i)).is_empty());
        }
        // Then 50 % dropped: over a 10-s window the ratio passes 0.1 after ~2 s.
        let mut fired = Vec::new();
        for i in 21..=40 {
            let d = 50 * (i - 20);
            fired.extend(c.observe(&reading(s(i), d, 100 * i)));
        }
        assert_eq!(fired.len(), 1, "{fired:?}");
        assert!(fired[0].firing && fired[0].value > 0.1, "{fired:?}");
        assert_eq!(fired[0].window_s, Some(10));
        assert_eq!(c.firing(), ["drops"]);
        // Drops stop: the window empties of them; one clear, at or below 0.095.
        let mut cleared = Vec::new();
        for i in 41..=60 {
            cleared.extend(c.observe(&reading(s(i), 1000, 100 * i)));
        }
        assert_eq!(cleared.len(), 1, "{cleared:?}");
        assert!(
            !cleared[0].firing && cleared[0].value <= 0.095,
            "{cleared:?}"
        );
        assert!(c.firing().is_empty());
        // No frames at all: no value, no change.
        assert!(c.observe(&reading(s(61), 1000, 6000)).is_empty());
    }

    #[test]
    fn an_e2e_p99_rule_reads_the_window_not_the_service_life() {
        let mut c = conditions(serde_json::json!({
            "slow": {"kind": "e2e_p99", "window_s": 5, "max_ms": 10.0},
        }));
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
        let t0 = Instant::now();
        let at = |secs: u64, h: &Histogram<u64>, c: &mut Conditions| {
            c.observe(&Reading {
                at: t0 + Duration::from_secs(secs),
                dropped: 0,
                produced: 0,
                e2e: Some(h),
                sample: None,
            })
        };
        // A long fast past: 1 ms.
        for s in 0..20 {
            h.record_n(1_000_000, 1000).unwrap();
            assert!(at(s, &h, &mut c).is_empty());
        }
        // Now 2 % of the frames take 50 ms: the window's p99 is 50 ms (the life's is not).
        let mut got = Vec::new();
        for s in 20..30 {
            h.record_n(1_000_000, 980).unwrap();
            h.record_n(50_000_000, 20).unwrap();
            got.extend(at(s, &h, &mut c));
        }
        assert_eq!(got.len(), 1, "{got:?}");
        let v = got[0].value;
        assert!((50.0..=52.5).contains(&v), "{v}");
        // Back to fast: cleared once the window holds no slow frame.
        let mut got = Vec::new();
        for s in 30..40 {
            h.record_n(1_000_000, 1000).unwrap();
            got.extend(at(s, &h, &mut c));
        }
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(!got[0].firing && got[0].value <= 9.5, "{got:?}");
    }

    #[test]
    fn a_threshold_inside_the_grid_is_read_exactly() {
        // 1.5 % of the frames at 10.01 ms, the rest at 10.0 ms: p99 is above a 10-ms
        // threshold (a grid of 5 % bins alone could not tell).
        let mut c = conditions(serde_json::json!({
            "slow": {"kind": "e2e_p99", "window_s": 1, "max_ms": 10.0},
        }));
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
        let t0 = Instant::now();
        fn r(t0: Instant, s: u64, h: &Histogram<u64>) -> Reading<'_> {
            Reading {
                at: t0 + Duration::from_secs(s),
                dropped: 0,
                produced: 0,
                e2e: Some(h),
                sample: None,
            }
        }
        assert!(c.observe(&r(t0, 0, &h)).is_empty());
        h.record_n(10_000_000, 985).unwrap();
        assert!(c.observe(&r(t0, 1, &h)).is_empty(), "all at the threshold");
        h.record_n(10_000_000, 985).unwrap();
        h.record_n(10_020_000, 15).unwrap();
        assert_eq!(c.observe(&r(t0, 2, &h)).len(), 1);
    }

    #[test]
    fn an_unchanged_rule_keeps_its_state_through_a_config_change() {
        let rules = serde_json::json!({
            "drops": {"kind": "drop_rate", "window_s": 1, "max_ratio": 0.0},
        });
        let mut c = conditions(rules.clone());
        let t0 = Instant::now();
        c.observe(&reading(t0, 0, 0));
        let got = c.observe(&reading(t0 + Duration::from_secs(1), 1, 10));
        assert_eq!(got.len(), 1);
        let mut more = rules.clone();
        more["hot"] = serde_json::json!({"kind": "temperature", "max_c": 80.0});
        c.configure(&serde_json::from_value(serde_json::json!({ "rules": more })).unwrap());
        assert_eq!(c.firing(), ["drops"]);
        more["drops"]["max_ratio"] = serde_json::json!(0.5);
        c.configure(&serde_json::from_value(serde_json::json!({ "rules": more })).unwrap());
        assert!(c.firing().is_empty(), "a changed rule starts again");
    }
}
